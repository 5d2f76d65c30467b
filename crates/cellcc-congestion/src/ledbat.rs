//! LEDBAT (RFC 6817) and LEDBAT++ (draft-irtf-iccrg-ledbat-plus-plus): less-than-best-
//! effort congestion control that keeps the queueing delay near a target.
//!
//! Sources: S. Shalunov, G. Hazel, J. Iyengar, M. Kuehlewind, "Low Extra Delay Background
//! Transport (LEDBAT)", RFC 6817 (December 2012), §2.4 (the controller), §2.4.1 (loss),
//! §2.4.2 (pseudocode: base-delay history, current-delay filter), §3.1 (one-way delay from
//! timestamps); P. Balasubramanian, O. Ertugay, D. Havey, "LEDBAT++: Congestion Control
//! for Background Traffic", draft-irtf-iccrg-ledbat-plus-plus-01 (August 2020), §3
//! (RTT instead of one-way delay, 60 ms target, reduced gain, multiplicative decrease,
//! modified slow start, periodic slowdowns). Reference code for RFC 6817 is libutp, a
//! user-space UDP transport; LEDBAT++ ships in the Windows TCP stack (closed). The
//! draft's constants are from our reading of the draft (algorithm notes §5.4 tag them
//! **\[recall\]**).
//!
//! # Model
//!
//! Each ACK yields a delay sample: the one-way delay (RFC 6817) or the RTT (LEDBAT++).
//! The base delay is the minimum over `base_history` one-minute buckets; the current
//! delay is the minimum of the last `current_filter` samples; their difference is the
//! queueing delay q. RFC 6817 moves cwnd by GAIN·(TARGET − q)/TARGET per window of
//! ACKed data, so it grows while q < TARGET and shrinks above it, holding q ≈ TARGET
//! when alone and giving way to any flow that pushes q above TARGET. A loss halves cwnd.
//!
//! LEDBAT++ grows by F/W per packet (F = 1/min(16, ⌈2·TARGET/base⌉), slower than Reno),
//! decreases multiplicatively above the target (−C·(q/TARGET − 1) per packet, at most half
//! the window per RTT), leaves slow start at q > 3/4·TARGET, and periodically drops to 2
//! packets for 2 RTTs so that every LEDBAT++ flow re-measures the base delay.
//!
//! # States (LEDBAT++; RFC 6817 is always in CONG_AVOID)
//!
//! ```text
//!  init              q > 3/4 target, loss,           2 RTTs later
//!   |  +------------+ or cwnd >= saved   +------------+ (first time), +----------+
//!   +->| SLOW_START |------------------->| CONG_AVOID |-------------->| SLOWDOWN |
//!      | W += F/ACK |                    +------------+  then 9x the  | W = 2 for|
//!      +------------+                          ^        last slowdown | 2 RTTs   |
//!            ^                                 |                      +----------+
//!            +---------------------------------+-----(slow start to saved W)-+
//! ```
//!
//! # Differences from RFC 6817 and the draft
//!
//! 1. **TCP port.** LEDBAT owns cwnd through `cong_control` in our Linux TCP model (the
//!    stack retransmits; no PRR). It does not pace (`PacingStatus::None`, as a Linux Reno
//!    without fq); `pacing_rate` is reported as 1.2·cwnd/srtt.
//! 2. **One-way delay** (RFC 6817 §3.1) = the ACK's TSval (receiver clock, 1 ms ticks)
//!    minus the send time, in the same ticks, of the newest (S)ACKed segment
//!    (`now − rs.rtt`): the segment whose arrival made the receiver send the ACK. The
//!    echoed TSecr would be the first segment of a delayed-ACK pair, one packet older.
//!    ACKs without an RTT sample give no delay sample. Resolution: one tick (1 ms),
//!    against a 100 ms target. Clock offset and skew cancel in q (both clocks here are
//!    exact; no skew correction, RFC 6817 §4.2).
//! 3. **LEDBAT++ delay** is the RTT sample `rs.rtt` (draft §3.1).
//! 4. **Units.** cwnd is in packets (fractional in state); bytes_acked·MSS/cwnd becomes
//!    packets_acked/cwnd. ALLOWED_INCREASE caps cwnd at prior in-flight + 1 packet.
//! 5. **Loss** halves cwnd (not below MIN_CWND) on entering Recovery or CWR, at most once
//!    per srtt (RFC 6817 §2.4.1). An RTO sets cwnd to 1 packet. Undo keeps cwnd.
//! 6. **RFC 6817 start** is INIT_CWND = 2 without slow start (the RFC's SHOULD; libutp
//!    differs).
//! 7. **LEDBAT++ slow start** grows W by F per packet acknowledged, exits when q exceeds
//!    3/4·TARGET, on loss, or (after a slowdown) at the saved window. The multiplicative
//!    decrease uses C = 1 per packet and is capped at 1/2 per packet (W/2 per RTT).
//!    Slowdowns: the first 2·srtt after the initial slow start; each freezes W = 2 for
//!    2·srtt, slow-starts back to the saved W, and schedules the next at 9× its own
//!    duration (≤ 10 % utilisation cost).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use cellcc_units::{Dur, Time, NS_PER_S};

use crate::{CaState, ConfigError, CongestionControl, PacingStatus, RateSample, Sock};

/// RFC 6817 §2.4.2: length of one base-delay bucket.
const BASE_BUCKET: Dur = Dur::from_secs(60);
/// LEDBAT++ draft §3.3: F = 1/min(GAIN_DIVISOR_MAX, ⌈2·TARGET/base⌉).
const GAIN_DIVISOR_MAX: f64 = 16.0;
/// LEDBAT++ draft §3.4: multiplicative-decrease constant C.
const DECREASE_C: f64 = 1.0;
/// LEDBAT++: at most this fraction of the window is removed per RTT (per packet here).
const DECREASE_CAP: f64 = 0.5;
/// LEDBAT++ draft §3.5: slow start ends when q exceeds this fraction of the target.
const SS_EXIT_FRACTION: f64 = 0.75;
/// LEDBAT++ draft §3.6: window during a slowdown, packets.
const SLOWDOWN_CWND: f64 = 2.0;
/// LEDBAT++ draft §3.6: slowdown length and the delay before the first one, in srtts.
const SLOWDOWN_RTTS: u64 = 2;
/// LEDBAT++ draft §3.6: the next slowdown starts 9× the last one's duration later.
const SLOWDOWN_INTERVAL_FACTOR: u64 = 9;
/// Pacing rate reported (not enforced), as Linux's congestion-avoidance ratio.
const REPORTED_PACING_RATIO: f64 = 1.2;

/// Which LEDBAT.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Variant {
    /// RFC 6817.
    Rfc6817,
    /// draft-irtf-iccrg-ledbat-plus-plus.
    Plusplus,
}

/// Parameters of [`Ledbat`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LedbatConfig {
    /// `"rfc6817"` (default) or `"plusplus"` (LEDBAT++; scheme `ledbat++` sets it).
    pub variant: Variant,
    /// TARGET, ms. 0 (default) picks the variant's: 100 (RFC 6817 §2.4.2, the maximum
    /// allowed) or 60 (LEDBAT++ §3.2).
    pub target_ms: f64,
    /// GAIN of RFC 6817 (default 1, the maximum allowed); LEDBAT++ derives its own F.
    pub gain: f64,
    /// BASE_HISTORY: one-minute base-delay buckets (RFC 6817: 10).
    pub base_history: u32,
    /// CURRENT_FILTER: samples in the current-delay minimum (RFC 6817 example: 4).
    pub current_filter: u32,
    /// INIT_CWND, packets (RFC 6817: 2; LEDBAT++ starts slow start from it).
    pub init_cwnd: u32,
    /// MIN_CWND, packets (RFC 6817: 2).
    pub min_cwnd: u32,
    /// ALLOWED_INCREASE, packets above the flight (RFC 6817: 1).
    pub allowed_increase: u32,
}

impl Default for LedbatConfig {
    fn default() -> Self {
        LedbatConfig {
            variant: Variant::Rfc6817,
            target_ms: 0.0,
            gain: 1.0,
            base_history: 10,
            current_filter: 4,
            init_cwnd: 2,
            min_cwnd: 2,
            allowed_increase: 1,
        }
    }
}

impl LedbatConfig {
    /// The LEDBAT++ defaults.
    pub fn plusplus() -> Self {
        LedbatConfig {
            variant: Variant::Plusplus,
            ..LedbatConfig::default()
        }
    }

    /// TARGET in use.
    pub fn target(&self) -> Dur {
        if self.target_ms > 0.0 {
            Dur::from_secs_f64(self.target_ms / 1000.0)
        } else {
            match self.variant {
                Variant::Rfc6817 => Dur::from_ms(100),
                Variant::Plusplus => Dur::from_ms(60),
            }
        }
    }

    /// Check every value; the error names the field and the accepted range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |field: &str, reason: String| Err(ConfigError::new("ledbat", field, reason));
        if !(self.target_ms.is_finite() && (0.0..=10_000.0).contains(&self.target_ms)) {
            return err(
                "target_ms",
                format!(
                    "{} is outside [0, 10000] ms (0: the variant's)",
                    self.target_ms
                ),
            );
        }
        if !(self.gain.is_finite() && self.gain > 0.0 && self.gain <= 1.0) {
            return err(
                "gain",
                format!("{} is outside (0, 1] (RFC 6817: GAIN ≤ 1)", self.gain),
            );
        }
        crate::config::check_ranges(
            "ledbat",
            [
                ("base_history", self.base_history, 1, 1000),
                ("current_filter", self.current_filter, 1, 1000),
                ("init_cwnd", self.init_cwnd, 1, 10_000),
                ("min_cwnd", self.min_cwnd, 1, 10_000),
                ("allowed_increase", self.allowed_increase, 1, 10_000),
            ],
        )
    }
}

/// LEDBAT's phase; every change goes through `Ledbat::transition`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Phase {
    /// LEDBAT++: W += F per packet until q > 3/4·TARGET, or, after a slowdown, until W
    /// reaches the saved window.
    SlowStart {
        /// After a slowdown: (the window saved when it started, packets; when it started).
        /// `None` for the initial slow start.
        resume: Option<(f64, Time)>,
    },
    /// The delay-based controller.
    CongAvoid,
    /// LEDBAT++: W = 2 until `until`, then slow start back to `saved`.
    Slowdown {
        /// When the slowdown started (the next interval is 9× its length, §3.6).
        start: Time,
        /// When the freeze at 2 packets ends (2 RTTs after `start`).
        until: Time,
        /// The window before the slowdown, packets: slow start's target afterwards.
        saved: f64,
    },
}

impl Phase {
    /// Label used in time series and by [`CongestionControl::phase`].
    pub fn name(self) -> &'static str {
        match self {
            Phase::SlowStart { .. } => "slow_start",
            Phase::CongAvoid => "cong_avoid",
            Phase::Slowdown { .. } => "slowdown",
        }
    }
}

/// RFC 6817 §2.4.2: cwnd after an ACK of `acked` packets with queueing delay `q`:
/// cwnd + GAIN·(TARGET − q)/TARGET·acked/cwnd, capped at `flight + allowed_increase`,
/// floored at `min_cwnd`.
pub fn rfc6817_cwnd(
    cwnd: f64,
    q: Dur,
    target: Dur,
    gain: f64,
    acked: u32,
    flight: u32,
    cfg: &LedbatConfig,
) -> f64 {
    let off_target = (target.as_secs_f64() - q.as_secs_f64()) / target.as_secs_f64();
    let next = cwnd + gain * off_target * f64::from(acked) / cwnd;
    let max_allowed = f64::from(flight + cfg.allowed_increase);
    next.min(max_allowed).max(f64::from(cfg.min_cwnd))
}

/// LEDBAT++ draft §3.3: F = 1/min(16, ⌈2·TARGET/base⌉).
pub fn plusplus_gain(target: Dur, base: Dur) -> f64 {
    let ratio = (2.0 * target.as_secs_f64() / base.as_secs_f64().max(1e-9)).ceil();
    1.0 / ratio.clamp(1.0, GAIN_DIVISOR_MAX)
}

/// LEDBAT++ draft §3.3–3.4: W += F/W per packet, minus C·(q/TARGET − 1) per packet
/// above the target (at most 1/2 per packet).
pub fn plusplus_cwnd(cwnd: f64, q: Dur, target: Dur, f: f64, acked: u32) -> f64 {
    let acked = f64::from(acked);
    let excess = q.as_secs_f64() / target.as_secs_f64() - 1.0;
    let decrease = if excess > 0.0 {
        (DECREASE_C * excess).min(DECREASE_CAP) * acked
    } else {
        0.0
    };
    cwnd + f * acked / cwnd - decrease
}

/// A LEDBAT controller. Build with [`Ledbat::new`]; the stack then calls `init`.
#[derive(Clone, Debug)]
pub struct Ledbat {
    config: LedbatConfig,
    phase: Phase,
    /// Congestion window, packets (fractional).
    cwnd: f64,
    /// RFC 6817 §2.4.2 `base_delays`: per-minute minima, newest last, ns.
    base_delays: VecDeque<i64>,
    /// The minute index of the newest bucket.
    last_rollover: u64,
    /// RFC 6817 §2.4.2 `current_delays`: the last samples, ns.
    current_delays: VecDeque<i64>,
    /// Last loss reduction (once per RTT).
    last_reduction: Option<Time>,
    /// LEDBAT++: when the next slowdown starts.
    next_slowdown: Option<Time>,
    /// Last queueing delay computed.
    queuing_delay: Dur,
    slowdowns: u64,
}

impl Default for Ledbat {
    fn default() -> Self {
        Ledbat::new(LedbatConfig::default())
    }
}

impl Ledbat {
    /// A controller with these parameters: RFC 6817 starts in congestion avoidance,
    /// LEDBAT++ in slow start.
    pub fn new(config: LedbatConfig) -> Self {
        let phase = match config.variant {
            Variant::Rfc6817 => Phase::CongAvoid,
            Variant::Plusplus => Phase::SlowStart { resume: None },
        };
        Ledbat {
            phase,
            cwnd: f64::from(config.init_cwnd),
            base_delays: VecDeque::new(),
            last_rollover: 0,
            current_delays: VecDeque::new(),
            last_reduction: None,
            next_slowdown: None,
            queuing_delay: Dur::ZERO,
            slowdowns: 0,
            config,
        }
    }

    /// The current phase.
    pub fn phase_state(&self) -> Phase {
        self.phase
    }
    /// Congestion window, packets (fractional).
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }
    /// The last queueing delay computed (current delay − base delay).
    pub fn queuing_delay(&self) -> Dur {
        self.queuing_delay
    }
    /// Slowdowns (LEDBAT++ §3.6) entered since `init`.
    pub fn slowdowns(&self) -> u64 {
        self.slowdowns
    }

    /// Every phase change goes through here; debug builds check the edge is legal.
    fn transition(&mut self, to: Phase) {
        use Phase::*;
        debug_assert!(
            self.config.variant == Variant::Plusplus
                && matches!(
                    (self.phase, to),
                    (SlowStart { .. }, CongAvoid)
                        | (CongAvoid, Slowdown { .. })
                        | (Slowdown { .. }, SlowStart { .. })
                        | (Slowdown { .. }, CongAvoid)
                ),
            "illegal LEDBAT transition {} -> {}",
            self.phase.name(),
            to.name()
        );
        self.phase = to;
    }

    /// The base delay, ns (RFC 6817 §2.4.2 `MIN(base_delays)`).
    fn base_delay(&self) -> Option<i64> {
        self.base_delays.iter().copied().min()
    }

    /// RFC 6817 §2.4.2 `update_base_delay` and `update_current_delay`.
    fn add_delay_sample(&mut self, now: Time, delay_ns: i64) {
        let minute = now.as_ns() / BASE_BUCKET.as_ns();
        match self.base_delays.back_mut() {
            Some(tail) if minute == self.last_rollover => *tail = (*tail).min(delay_ns),
            _ => {
                self.last_rollover = minute;
                self.base_delays.push_back(delay_ns);
                while self.base_delays.len() > self.config.base_history as usize {
                    self.base_delays.pop_front();
                }
            }
        }
        self.current_delays.push_back(delay_ns);
        while self.current_delays.len() > self.config.current_filter as usize {
            self.current_delays.pop_front();
        }
    }

    /// The delay sample of this ACK, ns: one-way (RFC 6817, difference 2) or RTT (++).
    fn delay_sample(&self, sock: &Sock, rs: &RateSample) -> Option<i64> {
        let rtt = rs.rtt?;
        match self.config.variant {
            Variant::Plusplus => Some(rtt.as_ns() as i64),
            Variant::Rfc6817 => {
                let tick = sock.ts_granularity.as_ns().max(1);
                let sent = sock.now.as_ns().saturating_sub(rtt.as_ns()) / tick;
                let owd_ticks = sock.rcv_tsval.wrapping_sub(sent as u32) as i32;
                Some(i64::from(owd_ticks) * tick as i64)
            }
        }
    }

    /// `cong_control`: the per-ACK recipe.
    fn on_ack(&mut self, sock: &mut Sock, rs: &RateSample) {
        if let Some(d) = self.delay_sample(sock, rs) {
            self.add_delay_sample(sock.now, d);
        }
        let (Some(base), Some(&current)) = (
            self.base_delay(),
            self.current_delays.iter().min(), // RFC 6817 §2.4.2 FILTER = MIN
        ) else {
            self.set_cwnd(sock);
            return;
        };
        // RFC 6817 §2.4.2: queuing_delay = FILTER(current_delays) − MIN(base_delays).
        self.queuing_delay = Dur::from_ns((current - base).max(0) as u64);
        if rs.acked_sacked > 0 {
            match self.config.variant {
                Variant::Rfc6817 => self.update_rfc6817(rs),
                Variant::Plusplus => {
                    self.update_plusplus(sock, rs, Dur::from_ns(base.max(1) as u64))
                }
            }
        }
        self.set_cwnd(sock);
    }

    fn update_rfc6817(&mut self, rs: &RateSample) {
        let target = self.config.target();
        // RFC 6817 §2.4.2: cwnd += GAIN·off_target·bytes_acked·MSS/cwnd, capped, floored.
        self.cwnd = rfc6817_cwnd(
            self.cwnd,
            self.queuing_delay,
            target,
            self.config.gain,
            rs.acked_sacked,
            rs.prior_in_flight,
            &self.config,
        );
    }

    fn update_plusplus(&mut self, sock: &Sock, rs: &RateSample, base: Dur) {
        let target = self.config.target();
        let f = plusplus_gain(target, base); // draft §3.3
        let q = self.queuing_delay;
        let srtt = if sock.srtt.is_zero() { base } else { sock.srtt };
        let min_cwnd = f64::from(self.config.min_cwnd);
        match self.phase {
            Phase::SlowStart { resume } => {
                self.cwnd += f * f64::from(rs.acked_sacked); // draft §3.5
                let reached = resume.is_some_and(|(w, _)| self.cwnd >= w);
                if q.as_secs_f64() > SS_EXIT_FRACTION * target.as_secs_f64() || reached {
                    self.leave_slow_start(sock.now, srtt);
                }
            }
            Phase::CongAvoid => {
                self.cwnd = plusplus_cwnd(self.cwnd, q, target, f, rs.acked_sacked).max(min_cwnd);
                if self.next_slowdown.is_some_and(|t| sock.now >= t) {
                    // draft §3.6: freeze at 2 packets for 2 RTTs.
                    let saved = self.cwnd;
                    self.transition(Phase::Slowdown {
                        start: sock.now,
                        until: sock.now + srtt * SLOWDOWN_RTTS,
                        saved,
                    });
                    self.slowdowns += 1;
                    self.cwnd = SLOWDOWN_CWND;
                }
            }
            Phase::Slowdown {
                start,
                until,
                saved,
            } => {
                if sock.now >= until {
                    self.transition(Phase::SlowStart {
                        resume: Some((saved, start)),
                    });
                }
            }
        }
        self.cwnd = self.cwnd.max(min_cwnd);
    }

    /// LEDBAT++: slow start ends; schedule the next slowdown (draft §3.6).
    fn leave_slow_start(&mut self, now: Time, srtt: Dur) {
        let slowdown_start = match self.phase {
            Phase::SlowStart {
                resume: Some((_, start)),
            } => Some(start),
            _ => None,
        };
        self.transition(Phase::CongAvoid);
        self.next_slowdown = Some(match slowdown_start {
            // 9× the duration of the slowdown that just ended (freeze + slow start).
            Some(start) => now + now.saturating_since(start) * SLOWDOWN_INTERVAL_FACTOR,
            // After the initial slow start: 2 RTTs later.
            None => now + srtt * SLOWDOWN_RTTS,
        });
    }

    fn set_cwnd(&mut self, sock: &mut Sock) {
        let cwnd = self.cwnd.ceil().min(f64::from(u32::MAX)) as u32;
        sock.cwnd = cwnd.clamp(1, sock.cwnd_clamp);
        let srtt = if sock.srtt.is_zero() {
            Dur::from_ms(100)
        } else {
            sock.srtt
        };
        let rate = REPORTED_PACING_RATIO * self.cwnd * f64::from(sock.mss) * NS_PER_S as f64
            / srtt.as_ns() as f64;
        sock.pacing_rate = (rate as u64).max(1);
    }

    /// RFC 6817 §2.4.1: halve cwnd on loss, at most once per RTT.
    fn on_loss(&mut self, sock: &Sock) {
        let rtt = if sock.srtt.is_zero() {
            Dur::from_ms(100)
        } else {
            sock.srtt
        };
        if self
            .last_reduction
            .is_some_and(|t| sock.now.saturating_since(t) < rtt)
        {
            return;
        }
        self.last_reduction = Some(sock.now);
        self.cwnd = (self.cwnd / 2.0).max(f64::from(self.config.min_cwnd));
        if matches!(self.phase, Phase::SlowStart { .. }) {
            self.leave_slow_start(sock.now, rtt);
        }
    }
}

impl CongestionControl for Ledbat {
    fn name(&self) -> &'static str {
        match self.config.variant {
            Variant::Rfc6817 => "ledbat",
            Variant::Plusplus => "ledbat++",
        }
    }

    fn init(&mut self, sock: &mut Sock) {
        *self = Ledbat::new(self.config.clone());
        sock.pacing_status = PacingStatus::None;
        self.set_cwnd(sock);
    }

    /// LEDBAT does not use ssthresh; the halving is made in `set_state`.
    fn ssthresh(&mut self, sock: &Sock) -> u32 {
        sock.ssthresh
    }

    fn cong_control(&mut self, sock: &mut Sock, rs: &RateSample) {
        self.on_ack(sock, rs);
    }

    fn owns_cwnd(&self) -> bool {
        true
    }

    /// Difference 5: Recovery or CWR halves cwnd; an RTO sets it to one packet.
    fn set_state(&mut self, sock: &mut Sock, new_state: CaState) {
        match new_state {
            CaState::Recovery | CaState::Cwr if new_state != sock.ca_state => {
                self.on_loss(sock);
                self.set_cwnd(sock);
            }
            CaState::Loss if sock.ca_state != CaState::Loss => {
                self.on_loss(sock);
                self.cwnd = 1.0;
            }
            _ => {}
        }
    }

    fn undo_cwnd(&mut self, sock: &Sock) -> u32 {
        sock.cwnd
    }

    fn phase(&self) -> &'static str {
        self.phase.name()
    }

    fn info(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("queuing_delay_ms", self.queuing_delay.as_ms_f64()),
            ("slowdowns", self.slowdowns as f64),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc6817_update_is_gain_off_target_over_cwnd() {
        let cfg = LedbatConfig::default();
        let t = Dur::from_ms(100);
        // q = 25 ms: off_target 0.75; 2 packets acked at cwnd 30: +1·0.75·2/30 = +0.05.
        let w = rfc6817_cwnd(30.0, Dur::from_ms(25), t, 1.0, 2, 40, &cfg);
        assert!((w - 30.05).abs() < 1e-12, "{w}");
        // q = 150 ms: off_target −0.5; one packet at cwnd 10: −0.05.
        let w = rfc6817_cwnd(10.0, Dur::from_ms(150), t, 1.0, 1, 10, &cfg);
        assert!((w - 9.95).abs() < 1e-12, "{w}");
        // ALLOWED_INCREASE: not above the flight + 1 packet.
        assert_eq!(rfc6817_cwnd(30.0, Dur::ZERO, t, 1.0, 30, 20, &cfg), 21.0);
        // MIN_CWND.
        assert_eq!(
            rfc6817_cwnd(2.0, Dur::from_secs(1), t, 1.0, 2, 2, &cfg),
            2.0
        );
        // A full window of ACKs at q = 0 adds GAIN = 1 packet per RTT.
        let mut w = 20.0;
        for _ in 0..20 {
            w = rfc6817_cwnd(w, Dur::ZERO, t, 1.0, 1, 100, &cfg);
        }
        assert!((w - 21.0).abs() < 0.03, "{w}");
    }

    #[test]
    fn plusplus_gain_and_decrease() {
        // base 20 ms, target 60 ms: ⌈120/20⌉ = 6 → F = 1/6.
        let f = plusplus_gain(Dur::from_ms(60), Dur::from_ms(20));
        assert!((f - 1.0 / 6.0).abs() < 1e-12);
        // base 2 ms: ⌈60⌉ capped at 16; base 200 ms: ⌈0.6⌉ = 1.
        assert_eq!(plusplus_gain(Dur::from_ms(60), Dur::from_ms(2)), 1.0 / 16.0);
        assert_eq!(plusplus_gain(Dur::from_ms(60), Dur::from_ms(200)), 1.0);
        // Below target: +F/W per packet: cwnd 10, 2 packets, F = 1/6 → +1/30.
        let w = plusplus_cwnd(10.0, Dur::from_ms(30), Dur::from_ms(60), f, 2);
        assert!((w - (10.0 + 1.0 / 30.0)).abs() < 1e-12);
        // q = 90 ms: 0.5 above target → −C·0.5 per packet (the cap).
        let w = plusplus_cwnd(40.0, Dur::from_ms(90), Dur::from_ms(60), f, 1);
        assert!((w - (40.0 + f / 40.0 - 0.5)).abs() < 1e-12);
        // q = 66 ms: −0.1 per packet, W·0.1 per RTT.
        let w = plusplus_cwnd(40.0, Dur::from_ms(66), Dur::from_ms(60), f, 1);
        assert!((w - (40.0 + f / 40.0 - 0.1)).abs() < 1e-9);
    }

    #[test]
    fn base_history_keeps_one_minimum_per_minute_for_ten_minutes() {
        let mut l = Ledbat::default();
        // Minute 0: 50 then 40 ms; minutes 1..=10: 60 ms each.
        l.add_delay_sample(Time::from_secs(1), 50_000_000);
        l.add_delay_sample(Time::from_secs(2), 40_000_000);
        assert_eq!(l.base_delays, [40_000_000]);
        for m in 1..=9u64 {
            l.add_delay_sample(Time::from_secs(60 * m + 1), 60_000_000);
        }
        assert_eq!(
            l.base_delay(),
            Some(40_000_000),
            "minute 0 is one of the last 10"
        );
        l.add_delay_sample(Time::from_secs(601), 60_000_000);
        assert_eq!(
            l.base_delay(),
            Some(60_000_000),
            "minute 0 left the history"
        );
        // The current filter is the last 4 samples.
        assert_eq!(l.current_delays.len(), 4);
    }

    fn ack(l: &mut Ledbat, sock: &mut Sock, rtt: Dur, owd_ms: u32) {
        sock.now += Dur::from_ms(1);
        sock.srtt = rtt;
        sock.rcv_tsval = (sock.now.as_ms() - rtt.as_ms()) as u32 + owd_ms;
        let rs = RateSample {
            rtt: Some(rtt),
            acked_sacked: 1,
            prior_in_flight: sock.cwnd,
            ..RateSample::default()
        };
        l.cong_control(sock, &rs);
    }

    #[test]
    fn one_way_delay_from_timestamps_drives_the_rfc_controller() {
        let mut l = Ledbat::default();
        let mut sock = Sock::new(1448, Time::from_secs(1));
        l.init(&mut sock);
        assert_eq!(sock.cwnd, 2);
        assert_eq!(sock.pacing_status, PacingStatus::None);
        for _ in 0..200 {
            ack(&mut l, &mut sock, Dur::from_ms(40), 20);
        }
        assert!(l.cwnd() > 5.0, "q = 0: grows, {}", l.cwnd());
        // OWD 20 → 170 ms: q = 150 ms > target: shrinks, whatever the RTT says.
        let before = l.cwnd();
        // The first 3 still see q = 0 through the 4-sample filter (+3/20), then
        // −0.5/20 per packet.
        for _ in 0..20 {
            ack(&mut l, &mut sock, Dur::from_ms(40), 170);
        }
        assert_eq!(l.queuing_delay(), Dur::from_ms(150));
        assert!(l.cwnd() < before, "{} vs {before}", l.cwnd());
        // Recovery halves once per RTT; an RTO leaves one packet.
        let w = l.cwnd();
        l.set_state(&mut sock, CaState::Recovery);
        assert!((l.cwnd() - (w / 2.0).max(2.0)).abs() < 1e-12);
        sock.ca_state = CaState::Open;
        l.set_state(&mut sock, CaState::Recovery);
        assert!(
            (l.cwnd() - (w / 2.0).max(2.0)).abs() < 1e-12,
            "once per RTT"
        );
        l.set_state(&mut sock, CaState::Loss);
        assert_eq!(l.cwnd(), 1.0);
    }

    #[test]
    fn plusplus_slow_start_exit_and_slowdown_cycle() {
        let mut l = Ledbat::new(LedbatConfig::plusplus());
        let mut sock = Sock::new(1448, Time::from_secs(1));
        l.init(&mut sock);
        assert_eq!(l.phase(), "slow_start");
        let base = Dur::from_ms(20);
        for _ in 0..30 {
            ack(&mut l, &mut sock, base, 10);
        }
        // F = 1/6 per packet: 2 + 30/6 = 7.
        assert!((l.cwnd() - 7.0).abs() < 1e-9, "{}", l.cwnd());
        // q = 50 ms > 3/4·60 = 45 ms: slow start ends.
        for _ in 0..4 {
            ack(&mut l, &mut sock, base + Dur::from_ms(50), 10);
        }
        assert_eq!(l.phase(), "cong_avoid");
        // 2 RTTs (srtt = 70 ms) later: the first slowdown, W = 2 for 2 RTTs.
        let mut n = 0;
        while l.phase() == "cong_avoid" {
            ack(&mut l, &mut sock, base, 10);
            n += 1;
        }
        assert_eq!(n, 140, "2·srtt = 140 ms");
        assert_eq!(l.phase(), "slowdown");
        let slowdown_start = sock.now;
        assert_eq!(l.cwnd(), 2.0);
        assert_eq!(l.slowdowns(), 1);
        for _ in 0..41 {
            ack(&mut l, &mut sock, base, 10);
        }
        assert_eq!(l.phase(), "slow_start");
        // Slow start back to the saved window, then the next slowdown is 9× later.
        let mut n = 0;
        while l.phase() == "slow_start" {
            ack(&mut l, &mut sock, base, 10);
            n += 1;
        }
        assert_eq!(l.phase(), "cong_avoid");
        assert!(n > 0);
        let took = sock.now - slowdown_start;
        let next = l.next_slowdown.unwrap();
        assert_eq!(next, sock.now + took * 9);
    }

    #[test]
    fn validate_names_the_field() {
        let c = LedbatConfig {
            gain: 2.0,
            ..LedbatConfig::default()
        };
        assert_eq!(c.validate().unwrap_err().field, "gain");
        assert_eq!(LedbatConfig::default().target(), Dur::from_ms(100));
        assert_eq!(LedbatConfig::plusplus().target(), Dur::from_ms(60));
    }
}
