//! TCP-Illinois, as Linux 6.x runs it (`net/ipv4/tcp_illinois.c`).
//!
//! Sources:
//! - S. Liu, T. Başar, R. Srikant, "TCP-Illinois: A loss- and delay-based congestion
//!   control algorithm for high-speed networks", Performance Evaluation 65(6–7), 2008,
//!   §3 (Eqs. for α = f1(d_a) and β = f2(d_a)).
//! - Linux `net/ipv4/tcp_illinois.c`, 6.x (`update_params`, `alpha`, `beta`,
//!   `tcp_illinois_cong_avoid`, `tcp_illinois_ssthresh`, `tcp_illinois_state`).
//!
//! Model. Loss decides *whether* to back off, queueing delay decides *how much*: AIMD
//! with an additive increase α ∈ [0.3, 10] packets per RTT and a multiplicative
//! decrease β ∈ [1/8, 1/2], both set once per RTT from the average queueing delay of the
//! last RTT, `d_a = avg RTT − base RTT`, relative to the largest seen,
//! `d_m = max RTT − base RTT`. Near-empty queues (`d_a ≤ d_m/100`) give α = 10 (after
//! `theta` such RTTs, once delay has been high); otherwise α falls as
//! `κ1/(κ2 + d_a)` toward 0.3 at `d_a = d_m`, so the window curve is concave near
//! congestion. β is 1/8 below `d_m/10`, 1/2 above `0.8·d_m`, linear between. Below
//! `win_thresh` packets it is Reno (α = 1, β = 1/2).
//!
//! ```text
//!   slow start (Reno) --loss--> congestion avoidance: cwnd += α/cwnd per ACK
//!                                 once per RTT:  d_a ≤ d_m/100 → α := 10 (after theta)
//!                                                else α := κ1/(κ2 + d_a) ∈ [0.3, 10]
//!                                                β := 1/8 | linear | 1/2
//!                               loss: ssthresh := (1 − β)·cwnd
//!                               RTO (Loss): α := 1, β := 1/2, counters reset
//! ```
//!
//! Differences from the paper (all inherited from Linux):
//! 1. α and β are fixed-point: α in 1/128 (α_min = 38/128 ≈ 0.297), β in 1/64.
//! 2. `d_m` is the maximum over the whole connection (never aged); the base RTT too.
//! 3. The "theta" rule: after delay was once above `d_m/100`, α returns to α_max only
//!    after `theta` = 5 consecutive low-delay RTTs (the paper's θ guard).
//! 4. Below `win_thresh` = 15 packets α = 1 and β = 1/2 (Reno) regardless of delay.
//! 5. RTT samples are clamped to `U32_MAX/α_max` µs (~3.36 s) so the fixed-point
//!    products cannot wrap.
//!
//! Differences from Linux:
//! 1. `cnt_rtt` and `acked` are 32-bit (Linux: 16-bit, wrapping after 65 535 samples or
//!    packets per ACK/RTT); products are computed in 64 bits.
//! 2. Windows and sequence numbers count segments.
//! 3. Parameters are per connection and validated.

#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

use crate::{AckSample, CaState, ConfigError, CongestionControl, Sock};

/// α is stored in units of 1/128 (`ALPHA_SHIFT` = 7).
const ALPHA_SHIFT: u32 = 7;
/// 1.0 in α units (`ALPHA_SCALE`).
const ALPHA_SCALE: u32 = 1 << ALPHA_SHIFT;
/// Smallest α, ≈ 0.3 packets/RTT (`ALPHA_MIN` = 3·128/10 = 38).
pub const ALPHA_MIN: u32 = (3 * ALPHA_SCALE) / 10;
/// Largest α, 10 packets/RTT (`ALPHA_MAX`).
pub const ALPHA_MAX: u32 = 10 * ALPHA_SCALE;
/// Reno's α = 1 (`ALPHA_BASE`), used below `win_thresh` and after an RTO.
const ALPHA_BASE: u32 = ALPHA_SCALE;
/// Largest RTT sample taken, µs (`RTT_MAX` = U32_MAX/ALPHA_MAX ≈ 3.36 s): keeps
/// `d_m·ALPHA_MAX` within 32 bits as in Linux.
const RTT_MAX_US: u32 = u32::MAX / ALPHA_MAX;
/// β is stored in units of 1/64 (`BETA_SHIFT` = 6).
const BETA_SHIFT: u32 = 6;
/// 1.0 in β units (`BETA_SCALE`).
const BETA_SCALE: u32 = 1 << BETA_SHIFT;
/// Smallest β, 1/8 (`BETA_MIN`).
pub const BETA_MIN: u32 = BETA_SCALE / 8;
/// Largest β, 1/2 (`BETA_MAX`), also Reno's (`BETA_BASE`).
pub const BETA_MAX: u32 = BETA_SCALE / 2;
/// "No RTT yet" for the base RTT (`0x7fffffff`).
const NO_RTT_US: u32 = 0x7fff_ffff;
/// Smallest ssthresh after a loss, packets.
const MIN_SSTHRESH: u32 = 2;

/// Illinois's parameters, named and defaulted as Linux's `tcp_illinois` module
/// parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IllinoisConfig {
    /// Below this cwnd (packets) behave as Reno: α = 1, β = 1/2 (`win_thresh`,
    /// default 15).
    pub win_thresh: u32,
    /// Consecutive low-delay RTTs before α returns to 10 (`theta`, default 5).
    pub theta: u32,
}

impl Default for IllinoisConfig {
    /// Linux 6.x defaults.
    fn default() -> Self {
        IllinoisConfig {
            win_thresh: 15,
            theta: 5,
        }
    }
}

impl IllinoisConfig {
    /// `theta` must fit Linux's 8-bit `rtt_low` counter.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.theta > u32::from(u8::MAX) {
            return Err(ConfigError {
                scheme: "illinois",
                field: "theta".into(),
                reason: format!(
                    "{} is above 255 (Linux counts low-delay RTTs in 8 bits)",
                    self.theta
                ),
            });
        }
        Ok(())
    }
}

/// Running statistics of the per-RTT α updates (observation only, for reports).
#[derive(Clone, Copy, Debug, Default)]
struct AlphaStats {
    /// Delay-based updates (cwnd ≥ win_thresh with samples).
    updates: u64,
    /// Of those, updates that set α = α_max.
    at_max: u64,
    /// Sum of α over those updates, 1/128 units.
    sum: u64,
    /// Smallest and largest α set by a delay-based update.
    min: Option<u32>,
    max: Option<u32>,
}

/// An Illinois controller; fields mirror Linux's `struct illinois`.
#[derive(Clone, Debug)]
pub struct Illinois {
    cfg: IllinoisConfig,
    /// `sum_rtt`: sum of this RTT's samples, µs.
    sum_rtt: u64,
    /// `cnt_rtt`: samples this RTT.
    cnt_rtt: u32,
    /// `base_rtt`: min of all samples, µs.
    base_rtt: u32,
    /// `max_rtt`: max of all samples, µs.
    max_rtt: u32,
    /// `end_seq`: the per-RTT update is due once `snd_una` passes this.
    end_seq: u64,
    /// `alpha`: additive increase, 1/128 packets per RTT.
    alpha: u32,
    /// `beta`: multiplicative decrease, 1/64.
    beta: u32,
    /// `acked`: packets acked by the current ACK (from `pkts_acked`).
    acked: u32,
    /// `rtt_above`: average delay has been above `d_m/100`.
    rtt_above: bool,
    /// `rtt_low`: consecutive RTTs with low delay since.
    rtt_low: u32,
    /// α = 1, β = 1/2 were set for Reno behaviour (below `win_thresh`, after an RTO),
    /// not from delay (observation only).
    reno_mode: bool,
    stats: AlphaStats,
}

impl Illinois {
    /// A controller with `cfg`; every value is safe to run.
    pub fn new(cfg: IllinoisConfig) -> Self {
        Illinois {
            cfg,
            sum_rtt: 0,
            cnt_rtt: 0,
            base_rtt: NO_RTT_US,
            max_rtt: 0,
            end_seq: 0,
            alpha: ALPHA_MAX,
            beta: BETA_MAX,
            acked: 0,
            rtt_above: false,
            rtt_low: 0,
            reno_mode: false,
            stats: AlphaStats::default(),
        }
    }

    /// The parameters this controller runs with.
    pub fn config(&self) -> &IllinoisConfig {
        &self.cfg
    }

    /// Current α, 1/128 packets per RTT.
    pub fn alpha(&self) -> u32 {
        self.alpha
    }

    /// Current β, 1/64.
    pub fn beta(&self) -> u32 {
        self.beta
    }

    /// `rtt_reset`: start the next RTT's average.
    fn rtt_reset(&mut self, sock: &Sock) {
        self.end_seq = sock.snd_nxt;
        self.cnt_rtt = 0;
        self.sum_rtt = 0;
    }

    /// `alpha()`: α from the average queueing delay `da` and the largest `dm`, µs.
    fn alpha_for(&mut self, da: u32, dm: u32) -> u32 {
        // Liu et al. 2008 §3: d1 = 0.01·d_m.
        let d1 = dm / 100;
        if da <= d1 {
            if !self.rtt_above {
                return ALPHA_MAX;
            }
            // Wait for theta low-delay RTTs before jumping back to α_max.
            self.rtt_low += 1;
            if self.rtt_low < self.cfg.theta {
                return self.alpha;
            }
            self.rtt_low = 0;
            self.rtt_above = false;
            return ALPHA_MAX;
        }
        self.rtt_above = true;
        // Liu et al. 2008 §3: α = κ1/(κ2 + d_a) with κ1 = (d_m − d1)·α_min·α_max/(α_max −
        // α_min) and κ2 = (d_m − d1)·α_min/(α_max − α_min) − d1; rearranged as in Linux.
        let dm = u64::from(dm - d1);
        let da = u64::from(da - d1);
        let amax = u64::from(ALPHA_MAX);
        let amin = u64::from(ALPHA_MIN);
        (dm * amax / (dm + da * (amax - amin) / amin)) as u32
    }

    /// `update_params`: once per RTT, set α and β from this RTT's delays.
    fn update_params(&mut self, sock: &Sock) {
        if sock.cwnd < self.cfg.win_thresh {
            self.alpha = ALPHA_BASE;
            self.beta = BETA_MAX;
            self.reno_mode = true;
        } else if self.cnt_rtt > 0 {
            self.reno_mode = false;
            let dm = self.max_rtt - self.base_rtt;
            let avg = (self.sum_rtt / u64::from(self.cnt_rtt)) as u32;
            let da = avg - self.base_rtt;
            self.alpha = self.alpha_for(da, dm);
            self.beta = beta_for(da, dm);
            self.stats.updates += 1;
            self.stats.at_max += u64::from(self.alpha == ALPHA_MAX);
            self.stats.sum += u64::from(self.alpha);
            self.stats.min = Some(self.stats.min.map_or(self.alpha, |m| m.min(self.alpha)));
            self.stats.max = Some(self.stats.max.map_or(self.alpha, |m| m.max(self.alpha)));
        }
        self.rtt_reset(sock);
    }
}

/// `beta()`: β from the average queueing delay `da` and the largest `dm`, µs.
fn beta_for(da: u32, dm: u32) -> u32 {
    // Liu et al. 2008 §3: d2 = 0.1·d_m, d3 = 0.8·d_m.
    let d2 = dm / 10;
    if da <= d2 {
        return BETA_MIN;
    }
    let d3 = (8 * u64::from(dm) / 10) as u32;
    if da >= d3 || d3 <= d2 {
        return BETA_MAX;
    }
    // Liu et al. 2008 §3: β = κ3 + κ4·d_a, the line through (d2, β_min) and (d3, β_max).
    let (d2, d3, da) = (i64::from(d2), i64::from(d3), i64::from(da));
    let (bmin, bmax) = (i64::from(BETA_MIN), i64::from(BETA_MAX));
    ((bmin * d3 - bmax * d2 + (bmax - bmin) * da) / (d3 - d2)) as u32
}

impl Default for Illinois {
    fn default() -> Self {
        Illinois::new(IllinoisConfig::default())
    }
}

impl CongestionControl for Illinois {
    fn name(&self) -> &'static str {
        "illinois"
    }

    /// `tcp_illinois_init`.
    fn init(&mut self, sock: &mut Sock) {
        *self = Illinois::new(self.cfg);
        self.rtt_reset(sock);
    }

    /// `tcp_illinois_ssthresh`: cwnd − β·cwnd, at least 2.
    fn ssthresh(&mut self, sock: &Sock) -> u32 {
        // Liu et al. 2008 §3: W ← W − β·W on loss.
        let cut = (u64::from(sock.cwnd) * u64::from(self.beta)) >> BETA_SHIFT;
        (sock.cwnd - cut as u32).max(MIN_SSTHRESH)
    }

    /// `tcp_illinois_cong_avoid`.
    fn cong_avoid(&mut self, sock: &mut Sock, acked: u32) {
        if sock.snd_una > self.end_seq {
            self.update_params(sock);
        }
        if !sock.is_cwnd_limited() {
            return;
        }
        if sock.in_slow_start() {
            sock.slow_start(acked);
            return;
        }
        // Liu et al. 2008 §3: W ← W + α/W per ACK, as an integer counter of packets
        // acked since the last increment (Linux counts `pkts_acked`'s value once, then 1
        // per call).
        sock.cwnd_cnt += self.acked;
        self.acked = 1;
        let delta = (u64::from(sock.cwnd_cnt) * u64::from(self.alpha)) >> ALPHA_SHIFT;
        if delta >= u64::from(sock.cwnd) {
            let add = (delta / u64::from(sock.cwnd)) as u32;
            sock.cwnd = sock.cwnd.saturating_add(add).min(sock.cwnd_clamp);
            sock.cwnd_cnt = 0;
        }
    }

    /// `tcp_illinois_acked`: this ACK's packet count and RTT sample.
    fn pkts_acked(&mut self, _sock: &mut Sock, sample: &AckSample) {
        self.acked = sample.pkts_acked;
        let Some(rtt) = sample.rtt else { return };
        let rtt_us = u32::try_from(rtt.as_us())
            .unwrap_or(u32::MAX)
            .min(RTT_MAX_US);
        self.base_rtt = self.base_rtt.min(rtt_us);
        self.max_rtt = self.max_rtt.max(rtt_us);
        self.cnt_rtt += 1;
        self.sum_rtt += u64::from(rtt_us);
    }

    /// `tcp_illinois_state`: an RTO resets α and β to Reno's.
    fn set_state(&mut self, sock: &mut Sock, new_state: CaState) {
        if new_state == CaState::Loss {
            self.alpha = ALPHA_BASE;
            self.beta = BETA_MAX;
            self.rtt_low = 0;
            self.rtt_above = false;
            self.reno_mode = true;
            self.rtt_reset(sock);
        }
    }

    // `undo_cwnd` is the trait's default, `tcp_reno_undo_cwnd`.

    /// `"reno"` (α = 1, β = 1/2: below `win_thresh` or after an RTO), `"alpha_max"`
    /// (α = 10: low delay, or no delay update yet) or `"adaptive"` (α from delay).
    fn phase(&self) -> &'static str {
        if self.reno_mode {
            "reno"
        } else if self.alpha == ALPHA_MAX {
            "alpha_max"
        } else {
            "adaptive"
        }
    }

    /// `alpha`, `beta` (current, as fractions), `base_rtt_ms`, `max_rtt_ms`, and over
    /// all delay-based per-RTT updates: `alpha_updates`, `alpha_mean`, `alpha_min_seen`,
    /// `alpha_max_seen`, `alpha_max_share` (share that set α = 10).
    fn info(&self) -> Vec<(&'static str, f64)> {
        let scale = f64::from(ALPHA_SCALE);
        let mut v = vec![
            ("alpha", f64::from(self.alpha) / scale),
            ("beta", f64::from(self.beta) / f64::from(BETA_SCALE)),
            ("alpha_updates", self.stats.updates as f64),
        ];
        if self.base_rtt != NO_RTT_US {
            v.push(("base_rtt_ms", f64::from(self.base_rtt) / 1000.0));
            v.push(("max_rtt_ms", f64::from(self.max_rtt) / 1000.0));
        }
        if self.stats.updates > 0 {
            let n = self.stats.updates as f64;
            v.push(("alpha_mean", self.stats.sum as f64 / n / scale));
            v.push(("alpha_max_share", self.stats.at_max as f64 / n));
        }
        if let (Some(lo), Some(hi)) = (self.stats.min, self.stats.max) {
            v.push(("alpha_min_seen", f64::from(lo) / scale));
            v.push(("alpha_max_seen", f64::from(hi) / scale));
        }
        v
    }
}
