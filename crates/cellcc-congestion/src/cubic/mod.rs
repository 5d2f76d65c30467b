//! CUBIC with HyStart, as Linux 6.x runs it (`net/ipv4/tcp_cubic.c`).
//!
//! Sources:
//! - RFC 9438, "CUBIC for Fast and Long-Distance Networks" (August 2023), which
//!   obsoletes RFC 8312 (February 2018); equation numbers below are RFC 8312's.
//! - S. Ha, I. Rhee, L. Xu, "CUBIC: A New TCP-Friendly High-Speed TCP Variant",
//!   ACM SIGOPS Operating Systems Review 42(5), July 2008.
//! - S. Ha, I. Rhee, "Taming the elephants: New TCP slow start", Computer Networks
//!   55(9), 2011 (HyStart; see `hystart.rs`).
//! - Linux `net/ipv4/tcp_cubic.c`, 6.x, including µs HyStart clocks (5.7), the round
//!   minimum over all samples (5.8), and the January 2025 fix "tcp_cubic: fix incorrect
//!   HyStart round start detection" (also in the 6.1+ stable series), which tracks
//!   rounds below the low window.
//!
//! Model. After a reduction from window W_max, cwnd follows
//! `W(t) = C·(t − K)³ + W_max` (RFC 8312 Eq. 1), where t is the time since the reduction
//! and `K = ∛((W_max − cwnd)/C)` (RFC 8312 Eq. 2) is when the curve returns to W_max:
//! concave growth up to the plateau, convex probing beyond it. Each ACK moves cwnd
//! toward `W(t + min_rtt)` by `1/cnt` packets, `cnt = cwnd/(W − cwnd)`. A Reno estimate
//! W_est (AIMD with α = 3(1−β)/(1+β), RFC 8312 Eq. 4) bounds growth from below. A loss
//! sets `ssthresh = β·cwnd` and `W_max = cwnd` (less with fast convergence). Slow start
//! ends at the first loss or when HyStart sees the pipe fill.
//!
//! ```text
//!        init, RTO (set_state(Loss): full reset, W_max := 0)
//!          |
//!          v
//!   +------------+  HyStart exit: ssthresh := cwnd   +--------------------------------+
//!   | slow_start |---------------------------------->| congestion avoidance (epoch)   |
//!   +------------+  or loss: ssthresh := β·cwnd      |  concave: t < K                |
//!                                                    |  convex:  t >= K               |
//!                                                    |  reno_friendly: W_est > target |
//!                                                    +--------------------------------+
//!                                                       | loss: ssthresh := β·cwnd,
//!                                                       | W_max := cwnd, epoch ends;
//!                                                       v recovery (PRR) in the stack
//!                                                    next epoch starts at the next ACK
//! ```
//!
//! Differences from RFC 9438 (all inherited from Linux):
//! 1. The target is `W(t + delay_min)`: the minimum RTT rounded up to whole jiffies, not
//!    the current RTT, and t has jiffy resolution (`sock.hz`).
//! 2. The target is not clamped to `[cwnd, 1.5·cwnd]`; instead `cnt ≥ 2` caps growth at
//!    1.5× per RTT, and a target at or below cwnd still grows by one packet per 100
//!    windows. Before the first loss (W_max = 0) `cnt ≤ 20`, at least 5 % per RTT.
//! 3. W_est gains one packet per `⌊8(1+β)/(3(1−β))⌋/8 · cwnd` = 1.875·cwnd acked
//!    packets (α ≈ 0.533 rather than 0.529) and never switches to α = 1 once it passes
//!    the pre-loss window. Whenever W_est > cwnd, cwnd is steered toward it at
//!    `(W_est − cwnd)/cwnd` per ACK, rather than set to W_est when W_est > W_cubic(t).
//! 4. β = 717/1024 ≈ 0.7002 and C = 410/1024 ≈ 0.4004 instead of 0.7 and 0.4.
//! 5. ssthresh is `β·cwnd` with a floor of 2, not `β·flight_size`.
//! 6. Undo of a spurious reduction restores cwnd only (Reno's undo), not W_max and K.
//! 7. Slow start uses Linux's HyStart, not HyStart++ (RFC 9406).
//! 8. After idle (`CaEvent::TxStart`) the epoch is shifted by the idle time, so the curve
//!    does not jump ahead.
//!
//! Differences from Linux:
//! 1. Windows and sequence numbers count segments, not bytes; with fixed-size segments
//!    they carry the same information.
//! 2. Jiffies come from `sock.now` and the configurable `sock.hz` (`CONFIG_HZ`), as
//!    64-bit counters that never wrap; "no epoch" is `None` instead of
//!    `epoch_start == 0`, which in Linux also hides an epoch that began at jiffy 0.
//! 3. `cubic_root` uses our own table (`root.rs`); K can differ from the kernel's by a
//!    few 2^-10 s units (both are within 0.2 % of the exact root).
//! 4. (no difference: the idle time of `TxStart` is measured from `sock.lsndtime`, the
//!    last transmission, as in Linux.)
//! 5. `W_max·(1+β)/2` and `β·cwnd` are computed in 64 bits (Linux's 32-bit products wrap
//!    above 2.4 million packets), and the Reno-estimate step is floored at one packet
//!    (Linux loops forever when `cwnd·beta_scale < 8`, possible only with beta < 512).
//!    Elsewhere integer widths and wrapping follow Linux.
//! 6. Parameters are per connection and fixed for its lifetime, and validated when read
//!    from a scenario; Linux's module parameters are global and writable at run time.
//! 7. `sk_gso_max_size` is the constant 64 KiB; there is no TSO.

mod hystart;
mod root;
#[cfg(test)]
mod tests;

pub use hystart::{HystartExit, HYSTART_ACK_TRAIN, HYSTART_DELAY};

use serde::de::{Deserializer, Error as _};
use serde::Deserialize;

use crate::{AckSample, CaEvent, CaState, CongestionControl, Sock, Time};
use hystart::HyStart;
use root::cubic_root;

/// Fixed-point scale of `beta` (`BICTCP_BETA_SCALE`): β = beta / 1024.
const BETA_SCALE: u32 = 1024;
/// t and K are in units of 2^-BICTCP_HZ s (`BICTCP_HZ`): ~1 ms, finer than any jiffy.
const BICTCP_HZ: u32 = 10;
/// With cwnd unchanged, recompute the curve at most every HZ/32 jiffies (~31 ms).
const UPDATE_INTERVAL_DIVISOR: u64 = 32;
/// cnt = 100·cwnd when the target is at or below cwnd: one packet per 100 windows.
const CNT_AT_TARGET_FACTOR: u32 = 100;
/// Largest cnt before the first loss (W_max = 0): at least cwnd/20, 5 % per RTT.
const CNT_MAX_BEFORE_LOSS: u32 = 20;
/// Smallest cnt: at most one packet per two acked, cwnd ×1.5 per RTT (RFC 9438 §4.2).
const CNT_MIN: u32 = 2;
/// Smallest ssthresh after a reduction, packets (fast retransmit needs 2).
const MIN_SSTHRESH: u32 = 2;
/// Microseconds per second, for `usecs_to_jiffies`.
const US_PER_S: u64 = 1_000_000;

/// CUBIC's parameters, named and defaulted as Linux's `tcp_cubic` module parameters.
///
/// Read from a scenario's `params` table; missing keys take the defaults, unknown keys
/// and out-of-range values are errors naming the key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CubicConfig {
    /// Multiplicative decrease factor β, scaled by 1024 (717 ⇒ β ≈ 0.7002). 1..=1023.
    #[serde(deserialize_with = "de_beta")]
    pub beta: u32,
    /// Cubic scaling constant C, as `C = bic_scale · 10 / 1024` (41 ⇒ C ≈ 0.4004).
    /// 1..=65535.
    #[serde(deserialize_with = "de_bic_scale")]
    pub bic_scale: u32,
    /// Release bandwidth faster when a loss comes below the previous W_max
    /// (RFC 9438 §4.7).
    pub fast_convergence: bool,
    /// Never grow slower than the Reno estimate W_est (RFC 9438 §4.3).
    pub tcp_friendliness: bool,
    /// Leave slow start with HyStart before the first loss.
    pub hystart: bool,
    /// HyStart detectors, a bitmask as in Linux: [`HYSTART_ACK_TRAIN`] (1),
    /// [`HYSTART_DELAY`] (2), or both (3). 0..=3.
    #[serde(deserialize_with = "de_hystart_detect")]
    pub hystart_detect: u8,
    /// HyStart runs only while cwnd ≥ this many packets.
    pub hystart_low_window: u32,
    /// Largest ACK spacing, µs, that still extends an ACK train.
    pub hystart_ack_delta_us: u32,
    /// Initial ssthresh in packets when HyStart is off; 0 leaves the stack's value.
    pub initial_ssthresh: u32,
}

impl Default for CubicConfig {
    /// Linux 6.x defaults.
    fn default() -> Self {
        CubicConfig {
            beta: 717,
            bic_scale: 41,
            fast_convergence: true,
            tcp_friendliness: true,
            hystart: true,
            hystart_detect: HYSTART_ACK_TRAIN | HYSTART_DELAY,
            hystart_low_window: 16,
            hystart_ack_delta_us: 2000,
            initial_ssthresh: 0,
        }
    }
}

fn de_in_range<'de, D: Deserializer<'de>>(
    d: D,
    lo: u32,
    hi: u32,
    meaning: &str,
) -> Result<u32, D::Error> {
    let v = u32::deserialize(d)?;
    if (lo..=hi).contains(&v) {
        Ok(v)
    } else {
        Err(D::Error::custom(format!(
            "{v} is out of range {lo}..={hi} ({meaning})"
        )))
    }
}

fn de_beta<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    de_in_range(
        d,
        1,
        BETA_SCALE - 1,
        "β × 1024; Linux's default 717 is β ≈ 0.7",
    )
}

fn de_bic_scale<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    de_in_range(
        d,
        1,
        u32::from(u16::MAX),
        "C × 1024 / 10; Linux's default 41 is C ≈ 0.4",
    )
}

fn de_hystart_detect<'de, D: Deserializer<'de>>(d: D) -> Result<u8, D::Error> {
    de_in_range(d, 0, 3, "1 = ACK train, 2 = delay, 3 = both").map(|v| v as u8)
}

/// Constants derived from the parameters once (Linux computes them at module load).
#[derive(Clone, Copy, Debug)]
struct Derived {
    /// `beta_scale = 8·(1024 + beta) / 3 / (1024 − beta)` = 15 for beta 717: W_est gains
    /// one packet per `cwnd·beta_scale/8` acked, i.e. α = 3(1−β)/(1+β) per RTT.
    beta_scale: u32,
    /// `cube_rtt_scale = 10·bic_scale` = C·1024 (410 ⇒ C ≈ 0.4004).
    cube_rtt_scale: u32,
    /// `cube_factor = 2^(10 + 3·BICTCP_HZ) / cube_rtt_scale` = 1/C in 2^-30 s³ per packet,
    /// so that `K = ∛(cube_factor · (W_max − cwnd))` comes out in 2^-10 s.
    cube_factor: u64,
}

impl Derived {
    fn new(cfg: &CubicConfig) -> Self {
        let beta_scale = 8 * (BETA_SCALE + cfg.beta) / 3 / (BETA_SCALE - cfg.beta);
        let cube_rtt_scale = cfg.bic_scale * 10;
        let cube_factor = (1u64 << (10 + 3 * BICTCP_HZ)) / u64::from(cube_rtt_scale);
        Derived {
            beta_scale,
            cube_rtt_scale,
            cube_factor,
        }
    }
}

/// Where the last growth decision was made; with `w_est` and `target` it gives
/// [`CongestionControl::phase`]. Observation only: no decision reads it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Region {
    /// cwnd < ssthresh.
    #[default]
    SlowStart,
    /// t < K: climbing back toward W_max (RFC 9438 §4.4).
    Concave,
    /// t ≥ K: probing beyond W_max (RFC 9438 §4.5).
    Convex,
}

/// A CUBIC controller. Build with [`Cubic::new`]; the fields mirror Linux's
/// `struct bictcp` under the RFC's names.
#[derive(Clone, Debug)]
pub struct Cubic {
    cfg: CubicConfig,
    derived: Derived,
    /// `cnt`: packets to ack per +1 of cwnd.
    cnt: u32,
    /// `last_max_cwnd`: W_max, the window before the last reduction (after fast
    /// convergence); 0 before the first loss and after an RTO.
    w_max: u32,
    /// `last_cwnd`: cwnd at the last full recomputation.
    last_cwnd: u32,
    /// `last_time`: jiffy of the last full recomputation.
    last_time: u64,
    /// `bic_origin_point`: the plateau of the current curve, packets.
    origin_point: u32,
    /// `bic_K`: time from the epoch start to the plateau, 2^-10 s.
    k: u32,
    /// `delay_min`: smallest RTT sample, µs; 0 before the first.
    delay_min_us: u32,
    /// `epoch_start`: jiffy the current growth epoch began; `None` from a reduction until
    /// the next growth.
    epoch_start: Option<u64>,
    /// `ack_cnt`: packets acked in this epoch not yet credited to `w_est`.
    ack_cnt: u32,
    /// `tcp_cwnd`: W_est, the window an AIMD(α, β) flow would have now.
    w_est: u32,
    hystart: HyStart,
    /// The curve's target at the last full recomputation, packets (`bic_target`, kept
    /// for [`CongestionControl::phase`] only).
    target: u32,
    region: Region,
}

impl Cubic {
    /// A controller with `cfg`.
    ///
    /// # Panics
    /// If `beta` or `bic_scale` is outside the range documented on [`CubicConfig`].
    /// Scenario values are range-checked when read, so only configs built in code can
    /// trip this.
    pub fn new(cfg: CubicConfig) -> Self {
        assert!(
            (1..BETA_SCALE).contains(&cfg.beta),
            "beta must be in 1..=1023: beta_scale divides by 1024 - beta"
        );
        assert!(
            (1..=u32::from(u16::MAX)).contains(&cfg.bic_scale),
            "bic_scale must be in 1..=65535: cube_factor divides by 10 * bic_scale"
        );
        Cubic {
            cfg,
            derived: Derived::new(&cfg),
            cnt: 0,
            w_max: 0,
            last_cwnd: 0,
            last_time: 0,
            origin_point: 0,
            k: 0,
            delay_min_us: 0,
            epoch_start: None,
            ack_cnt: 0,
            w_est: 0,
            hystart: HyStart::default(),
            target: 0,
            region: Region::SlowStart,
        }
    }

    /// The parameters this controller runs with.
    pub fn config(&self) -> &CubicConfig {
        &self.cfg
    }

    /// The HyStart detector that ended the current slow start, if one did.
    pub fn hystart_exit(&self) -> Option<HystartExit> {
        self.hystart.found
    }

    /// `bictcp_reset`: forget the curve, the min RTT and HyStart's verdict. HyStart's
    /// round keeps going (Linux's reset stops short of those fields).
    fn reset(&mut self) {
        *self = Cubic {
            hystart: self.hystart.clone(),
            ..Cubic::new(self.cfg)
        };
        self.hystart.found = None;
    }

    /// `bictcp_update`: recompute `cnt` for the current cwnd, then apply the Reno bound
    /// and the growth cap.
    fn update(&mut self, sock: &Sock, acked: u32) {
        let cwnd = sock.cwnd;
        let now = sock.jiffies();
        self.ack_cnt = self.ack_cnt.wrapping_add(acked);

        if self.last_cwnd == cwnd
            && now.saturating_sub(self.last_time) <= u64::from(sock.hz) / UPDATE_INTERVAL_DIVISOR
        {
            return;
        }
        // The curve is evaluated at most once per jiffy; a reduction clears epoch_start
        // and so forces a fresh evaluation.
        if self.epoch_start.is_none() || now != self.last_time {
            self.last_cwnd = cwnd;
            self.last_time = now;
            if self.epoch_start.is_none() {
                self.start_epoch(cwnd, now, acked);
            }
            self.cnt = self.cubic_cnt(sock, cwnd, now);
        }
        if self.cfg.tcp_friendliness {
            self.apply_reno_bound(cwnd);
        }
        self.cnt = self.cnt.max(CNT_MIN);
    }

    /// A new epoch: fix the curve's origin and K for the window we grow from.
    fn start_epoch(&mut self, cwnd: u32, now: u64, acked: u32) {
        self.epoch_start = Some(now);
        self.ack_cnt = acked;
        // RFC 9438 §4.3: W_est starts at cwnd_epoch.
        self.w_est = cwnd;
        if self.w_max <= cwnd {
            // Already at or past the old maximum (or none yet): convex from here.
            self.k = 0;
            self.origin_point = cwnd;
        } else {
            // RFC 8312 Eq. 2: K = ∛((W_max − cwnd)/C), in 2^-10 s.
            let gap = u64::from(self.w_max - cwnd);
            self.k = cubic_root(self.derived.cube_factor.wrapping_mul(gap));
            self.origin_point = self.w_max;
        }
    }

    /// `cnt` from the cubic curve one min RTT ahead.
    fn cubic_cnt(&mut self, sock: &Sock, cwnd: u32, now: u64) -> u32 {
        let epoch_start = self
            .epoch_start
            .expect("update() starts an epoch before this");
        // t = now − epoch_start + delay_min, converted from jiffies to 2^-10 s.
        let ahead = usecs_to_jiffies(self.delay_min_us, sock.hz);
        let t_jiffies = now.saturating_sub(epoch_start) + ahead;
        let t = (t_jiffies << BICTCP_HZ) / u64::from(sock.hz);
        let k = u64::from(self.k);
        let below_origin = t < k;
        let offs = if below_origin { k - t } else { t - k };
        self.region = if below_origin {
            Region::Concave
        } else {
            Region::Convex
        };

        // RFC 8312 Eq. 1: |W(t) − W_max| = C·|t − K|³, with C = cube_rtt_scale / 2^10 and
        // t in 2^-10 s. The product wraps as in Linux once |t − K| passes ~340 s.
        let cube = u64::from(self.derived.cube_rtt_scale)
            .wrapping_mul(offs)
            .wrapping_mul(offs)
            .wrapping_mul(offs);
        let delta = (cube >> (10 + 3 * BICTCP_HZ)) as u32;
        let target = if below_origin {
            self.origin_point.wrapping_sub(delta)
        } else {
            self.origin_point.wrapping_add(delta)
        };
        self.target = target;

        // RFC 9438 §4.4/§4.5: cwnd += (target − cwnd)/cwnd per ACK.
        let mut cnt = if target > cwnd {
            cwnd / (target - cwnd)
        } else {
            cwnd.saturating_mul(CNT_AT_TARGET_FACTOR)
        };
        // No loss seen yet: the curve knows nothing about capacity; grow ≥ 5 % per RTT.
        if self.w_max == 0 {
            cnt = cnt.min(CNT_MAX_BEFORE_LOSS);
        }
        cnt
    }

    /// RFC 9438 §4.3: advance W_est and never grow slower than it.
    fn apply_reno_bound(&mut self, cwnd: u32) {
        // RFC 8312 Eq. 4: W_est += α per window acked, α = 3(1−β)/(1+β) = 8/beta_scale,
        // i.e. +1 per cwnd·beta_scale/8 acked packets.
        let per_packet = (cwnd.saturating_mul(self.derived.beta_scale) >> 3).max(1);
        if self.ack_cnt > per_packet {
            // As many whole steps as leave ack_cnt in 1..=per_packet.
            let steps = (self.ack_cnt - 1) / per_packet;
            self.ack_cnt -= steps * per_packet;
            self.w_est = self.w_est.wrapping_add(steps);
        }
        if self.w_est > cwnd {
            let max_cnt = cwnd / (self.w_est - cwnd);
            self.cnt = self.cnt.min(max_cnt);
        }
    }
}

/// `usecs_to_jiffies`: µs to jiffies, rounded up.
fn usecs_to_jiffies(us: u32, hz: u32) -> u64 {
    (u64::from(us) * u64::from(hz)).div_ceil(US_PER_S)
}

/// `cubictcp_cwnd_event(CA_EVENT_TX_START)`: shift a running epoch by the idle time since
/// the last transmission (`lsndtime`), at most to now. Also C2TCP's mirror of the epoch
/// (`c2tcp::epoch`).
pub(crate) fn shift_epoch_after_idle(epoch_start: &mut Option<u64>, sock: &Sock) {
    let Some(start) = *epoch_start else {
        return;
    };
    let now = sock.jiffies();
    let last_send = sock.dur_to_jiffies(sock.lsndtime.saturating_since(Time::ZERO));
    let idle = now.saturating_sub(last_send);
    if idle > 0 {
        *epoch_start = Some((start + idle).min(now));
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    /// `cubictcp_init`.
    fn init(&mut self, sock: &mut Sock) {
        self.reset();
        if self.cfg.hystart {
            self.hystart.start_round(sock);
        }
        if !self.cfg.hystart && self.cfg.initial_ssthresh != 0 {
            sock.ssthresh = self.cfg.initial_ssthresh;
        }
    }

    /// `cubictcp_recalc_ssthresh`: end the epoch, remember W_max, back off by β.
    fn ssthresh(&mut self, sock: &Sock) -> u32 {
        let cwnd = u64::from(sock.cwnd);
        let beta = u64::from(self.cfg.beta);
        let scale = u64::from(BETA_SCALE);
        self.epoch_start = None;
        self.w_max = if sock.cwnd < self.w_max && self.cfg.fast_convergence {
            // RFC 9438 §4.7: a loss below the last maximum: W_max = cwnd·(1 + β)/2.
            (cwnd * (scale + beta) / (2 * scale)) as u32
        } else {
            sock.cwnd
        };
        // RFC 9438 §4.6: ssthresh = β_cubic × window, with cwnd as the window (Linux).
        ((cwnd * beta / scale) as u32).max(MIN_SSTHRESH)
    }

    /// `cubictcp_cong_avoid`.
    fn cong_avoid(&mut self, sock: &mut Sock, acked: u32) {
        if !sock.is_cwnd_limited() {
            return;
        }
        let mut acked = acked;
        if sock.in_slow_start() {
            self.region = Region::SlowStart;
            acked = sock.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        self.update(sock, acked);
        sock.cong_avoid_ai(self.cnt, acked);
    }

    /// `cubictcp_state`: an RTO forgets everything, including HyStart's verdict.
    fn set_state(&mut self, sock: &mut Sock, new_state: CaState) {
        if new_state == CaState::Loss {
            self.reset();
            self.hystart.start_round(sock);
        }
    }

    /// `cubictcp_cwnd_event`: after idle, shift the epoch so the curve resumes where it
    /// stopped instead of jumping ahead by the idle time.
    fn cwnd_event(&mut self, sock: &mut Sock, event: CaEvent) {
        if event == CaEvent::TxStart {
            shift_epoch_after_idle(&mut self.epoch_start, sock);
        }
    }

    /// `cubictcp_acked`: track the min RTT and run HyStart.
    fn pkts_acked(&mut self, sock: &mut Sock, sample: &AckSample) {
        let Some(rtt) = sample.rtt else { return };
        // Samples right after a reduction carry the recovery's queue: skip them for 1 s.
        if let Some(epoch_start) = self.epoch_start {
            if sock.jiffies().saturating_sub(epoch_start) < u64::from(sock.hz) {
                return;
            }
        }
        let delay_us = rtt.as_us().clamp(1, u64::from(u32::MAX)) as u32;
        if self.delay_min_us == 0 || self.delay_min_us > delay_us {
            self.delay_min_us = delay_us;
        }
        if self.hystart.found.is_none() && sock.in_slow_start() && self.cfg.hystart {
            let exit = self
                .hystart
                .on_rtt_sample(sock, &self.cfg, self.delay_min_us, delay_us);
            if let Some(exit) = exit {
                self.hystart.found = Some(exit);
                sock.ssthresh = sock.cwnd;
            }
        }
    }

    // `undo_cwnd` is the trait's default, Reno's max(cwnd, prior_cwnd), as in Linux.

    /// The region of the most recent `cong_avoid` that could grow cwnd:
    /// `"slow_start"`; `"reno_friendly"` when W_est is above the curve's target
    /// (RFC 9438 §4.3, with Linux's target one min RTT ahead); otherwise `"concave"`
    /// (t < K) or `"convex"` (t ≥ K).
    fn phase(&self) -> &'static str {
        match self.region {
            Region::SlowStart => "slow_start",
            _ if self.cfg.tcp_friendliness && self.w_est > self.target => "reno_friendly",
            Region::Concave => "concave",
            Region::Convex => "convex",
        }
    }
}
