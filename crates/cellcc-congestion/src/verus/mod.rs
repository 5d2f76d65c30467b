//! Verus: a window chosen from a learned delay profile, steered by the delay trend of
//! short epochs.
//!
//! Source: Y. Zaki, T. Pötsch, J. Chen, L. Subramanian, C. Görg, "Adaptive Congestion
//! Control for Unpredictable Cellular Networks", ACM SIGCOMM 2015 (London, 17–21 August
//! 2015) — §3 (epochs, delay estimator, delay profile, loss handling, slow start).
//! Reference code: `yzaki/verus` (`src/verus_server.cpp`, `src/verus.hpp`; a copy in
//! `Soheil-ab/c2tcp`). The reference is a user-space UDP sender; this ports its mechanism
//! onto the simulator's TCP: the window W becomes cwnd, ACKs carry the delay samples,
//! TCP's loss detection (RACK, RTO) triggers the loss reaction.
//!
//! # Model
//!
//! Every epoch (5 ms) the sender takes the largest delay D_max seen in the epoch and
//! compares it with its smoothed value D̄_max. If D̄_max has grown beyond R·D_min it lowers
//! its delay target D_est by δ₂; else if D_max rose it lowers D_est by δ₁; otherwise it
//! raises D_est by δ₂ (§3.1, reference main loop). The window is the delay profile's
//! inverse at D_est: the largest W that produced at most D_est (§3.2). The profile is
//! learned from (window at send, delay) pairs and refitted every second. On loss, W
//! drops to β = 0.7 × the window the lost packet was sent with, D_est to the profile's
//! delay there, and W grows by 1/W per ACKed packet until packets sent after the
//! reduction come back (§3.3). The connection starts in slow start (W + 1 per ACKed
//! packet) until the first loss or a delay above 500 ms, and starts over in slow start
//! (new profile, new D_min) when D_est lies above the whole profile (reference
//! `calcDelayCurve` → `restartSlowStart`).
//!
//! # States
//!
//! ```text
//!  +------------+ loss, or delay > ss_exit  +-------------+ ACK of a packet sent  +--------+
//!  | SLOW_START | ------------------------> | LOSS_PHASE  | with window <= W      | NORMAL |
//!  | W += acked |  W = beta*W_sent,         | W += acked/W| --------------------> | epochs |
//!  +------------+  D_est = 0.75*R*D_min     +-------------+                       +--------+
//!        ^                                      ^                                  |  |
//!        |                                      +------------- loss ---------------+  |
//!        +------------ D_est above the whole profile: new profile, new D_min ---------+
//! ```
//!
//! # Differences from the paper and the reference code
//!
//! 1. **Transport.** TCP instead of UDP. Delay is the TCP RTT sample of the newest
//!    (S)ACKed packet; the window a packet was sent with is looked up in a history of W
//!    at its send time (now − RTT) instead of travelling in the packet header. TCP's
//!    ACK clock keeps W packets in flight; the reference's per-epoch send budget
//!    S = W + W_out·(2 − n)/(n − 1) is not needed and not used.
//! 2. **Loss detection** is TCP's (RACK-TLP, RTO) instead of sequence gaps older than
//!    150 ms; entering Recovery or Loss is the loss event. TCP's PRR is bypassed (Verus
//!    owns cwnd).
//! 3. **Delay profile fit.** Isotonic (monotone) regression with linear interpolation
//!    instead of a penalised spline. As in the reference, a D_est above the curve cannot
//!    be mapped and slow start restarts; the inverse is not extrapolated beyond the
//!    largest sampled window (the reference evaluates its spline up to
//!    `MAX_W_DELAY_CURVE`, i.e. its end polynomial's extrapolation). An earlier version
//!    extrapolated linearly, with at least D_min per largest-window packets: on drop-tail
//!    paths, where the delay stops growing once the buffer is full, that mapped D_est to
//!    ever larger windows (to `max_window` after an outage had raised D_min, below, and
//!    D_est with it: 94 % loss on TMobile-LTE-driving with a 150 KB buffer).
//! 4. **Loss phase.** The epoch rules are suspended during the loss phase (the reference
//!    keeps running them but has just set D_est to the profile's delay at the reduced W,
//!    so they start from the same point). The reference's "D_min += 10 ms when D_est is
//!    stuck at D_min with fewer than 2 packets in flight" is kept, with "at most
//!    `min_cwnd` in flight" as the TCP condition (cwnd never goes below it); without it
//!    W collapses to the floor on traces whose RTT rarely comes within R·D_min of the
//!    smallest sample. Its "stop sending this epoch" (`dMinStop`) is left out. The
//!    reference runs its epochs on a timer and sends in each, so after a timeout it
//!    raises D_min at most about twice before packets are in flight again; here the
//!    epochs of an ACK-less stretch run in a batch at the next ACK with that moment's
//!    in-flight count, which after an RTO is 0–1, so an outage raises D_min by 10 ms per
//!    epoch (the restart above then catches the D_est it drags up). Bumping only in
//!    epochs with a delay sample was tried: it lowered utilisation on
//!    TMobile-LTE-driving (1000 packets, 60 s) from 0.84 to 0.59, so the reference's
//!    rule is kept as it is.
//! 5. **Slow start** starts (and restarts) from TCP's initial window (10) instead of 1;
//!    its OS-buffer exit does not exist here.
//! 6. **Units.** Delays are integer nanoseconds ([`Dur`]) in state; the EWMAs use the
//!    reference's weights (7/8 for the profile, 0.2 on the old D̄_max).

mod config;
mod profile;
#[cfg(test)]
mod tests;

pub use config::VerusConfig;
pub use profile::Profile;

use std::collections::VecDeque;

use cellcc_units::{Dur, Time};

use crate::{CaState, CongestionControl, RateSample, Sock};

/// The old value's weight in D̄_max, tenths (reference `ewma(dMaxLast, dMax, 0.2)`).
const DMAX_KEEP_TENTHS: u64 = 2;
/// D_est after slow start, as a multiple of R·D_min (reference: "half of the allowed
/// maximum delay, for efficiency", 0.75·R·D_min).
const SS_EXIT_DEST_FACTOR: f64 = 0.75;
/// Send-time window history kept, beyond any RTT a cellular path shows.
const HISTORY_SPAN: Dur = Dur::from_secs(10);
/// Step by which D_min is raised when D_est is stuck at it with nothing in flight
/// (reference main loop: `dMin += 10`).
const D_MIN_BUMP: Dur = Dur::from_ms(10);
/// Minimum rise of D_max that counts as "rising" (reference `deltaDBar > 0.0001` ms).
const RISE_EPS: Dur = Dur::from_ns(100);

/// Verus' phase.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Phase {
    /// W + 1 per ACKed packet until a loss or a delay above `ss_exit_delay_ms`.
    SlowStart,
    /// After a loss: W + 1/W per ACKed packet until an ACK for a packet sent with a
    /// window no larger than W.
    Loss,
    /// Epoch-driven D_est and W from the profile.
    Normal,
}

/// The Verus sender.
#[derive(Debug)]
pub struct Verus {
    cfg: VerusConfig,
    epoch: Dur,
    delta1: Dur,
    delta2: Dur,
    phase: Phase,
    /// The window W, packets (fractional: the loss phase adds 1/W per packet).
    w: f64,
    /// The delay target D_est.
    d_est: Dur,
    /// Smallest delay seen (D_min).
    d_min: Option<Dur>,
    /// Smoothed epoch maximum D̄_max (`dMaxLast`); `None` before the first epoch.
    d_max_bar: Option<Dur>,
    /// Largest delay of the running epoch.
    epoch_max: Option<Dur>,
    /// End of the running epoch.
    epoch_end: Option<Time>,
    /// Last ACK with a delay sample.
    last_ack: Time,
    /// Next profile refit.
    refit_at: Option<Time>,
    profile: Profile,
    /// (time, W) at every change, for the window a packet was sent with.
    history: VecDeque<(Time, f64)>,
    /// Epochs run, for diagnostics.
    epochs: u64,
    /// Slow-start restarts (D_est beyond the profile), for diagnostics.
    restarts: u64,
    /// The initial window (TCP's), where a restarted slow start begins.
    init_w: f64,
}

impl Verus {
    /// A sender with these parameters (already validated).
    pub fn new(cfg: VerusConfig) -> Self {
        debug_assert!(cfg.validate().is_ok(), "validated by the caller");
        let ms = |v: f64| Dur::from_ns((v * 1e6).round() as u64);
        Verus {
            epoch: ms(cfg.epoch_ms),
            delta1: ms(cfg.delta1_ms),
            delta2: ms(cfg.delta2_ms),
            cfg,
            phase: Phase::SlowStart,
            w: 0.0,
            d_est: Dur::ZERO,
            d_min: None,
            d_max_bar: None,
            epoch_max: None,
            epoch_end: None,
            last_ack: Time::ZERO,
            refit_at: None,
            profile: Profile::default(),
            history: VecDeque::new(),
            epochs: 0,
            restarts: 0,
            init_w: 1.0,
        }
    }

    /// The current phase.
    pub fn state(&self) -> Phase {
        self.phase
    }

    /// The delay target D_est.
    pub fn d_est(&self) -> Dur {
        self.d_est
    }

    /// Every phase change goes through here.
    fn set_phase(&mut self, to: Phase) {
        debug_assert!(
            matches!(
                (self.phase, to),
                (Phase::SlowStart, Phase::Loss)
                    | (Phase::Loss, Phase::Normal)
                    | (Phase::Normal, Phase::Loss)
                    | (Phase::Loss, Phase::Loss)
                    | (Phase::Normal, Phase::SlowStart)
            ),
            "illegal Verus transition {:?} -> {to:?}",
            self.phase
        );
        self.phase = to;
    }

    fn ms(d: Dur) -> f64 {
        d.as_ns() as f64 / 1e6
    }

    fn d_min_ms(&self) -> f64 {
        self.d_min.map_or(1.0, Self::ms)
    }

    /// W when a packet sent at `t` left (the latest change at or before `t`).
    fn window_at(&self, t: Time) -> f64 {
        let i = self.history.partition_point(|&(at, _)| at <= t);
        match i {
            0 => self.history.front().map_or(self.w, |&(_, w)| w),
            _ => self.history[i - 1].1,
        }
    }

    fn record_w(&mut self, now: Time) {
        if self.history.back().is_none_or(|&(_, w)| w != self.w) {
            self.history.push_back((now, self.w));
        }
        // Keep one entry older than the span so lookups inside it stay exact.
        while self.history.len() > 2 && now.saturating_since(self.history[1].0) > HISTORY_SPAN {
            self.history.pop_front();
        }
    }

    /// One epoch's delay-estimator step (SIGCOMM 2015 §3.1; reference main loop).
    pub(crate) fn run_epoch(&mut self, end: Time, in_flight: u32) {
        self.epochs += 1;
        // D_max: the epoch's largest delay; with no ACK in the epoch, the time since
        // the last one, but not below the running D̄_max (reference `bufferingDelay`).
        let d_max = match self.epoch_max.take() {
            Some(d) => d,
            None => {
                let idle = end.saturating_since(self.last_ack);
                self.d_max_bar.map_or(idle, |b| b.max(idle))
            }
        };
        let bar = *self.d_max_bar.get_or_insert(d_max);
        let d_min = self.d_min.unwrap_or(d_max);
        if Self::ms(bar) > self.cfg.r * Self::ms(d_min) {
            // D̄_max/D_min > R: the queue is too long, back off by δ₂.
            self.d_est = d_min.max(self.d_est.saturating_sub(self.delta2));
            if self.d_est == d_min && in_flight <= self.cfg.min_cwnd {
                // Reference: stuck at D_min with (almost) nothing in flight, the delay
                // floor must be higher than D_min says: raise D_min by 10 ms. (The epochs
                // of an outage run in a batch at the next ACK, all with its in-flight
                // count, so after an RTO this can raise D_min, and D_est with it, by
                // 10 ms per 5 ms of outage; D_est then lies above the profile and slow
                // start restarts, below.)
                self.d_min = Some(d_min + D_MIN_BUMP);
            }
        } else if d_max > bar + RISE_EPS {
            // ΔD = D_max − D̄_max > 0: delay is rising, back off by δ₁.
            self.d_est = d_min.max(self.d_est.saturating_sub(self.delta1));
        } else {
            // Delay falling or flat: probe by δ₂.
            self.d_est += self.delta2;
        }
        // §3.2: W is the delay profile's inverse at D_est. A D_est above the whole fitted
        // curve cannot be mapped: the reference then restarts slow start
        // (`calcDelayCurve` returns −1000 → `restartSlowStart`).
        if self.profile.has_fit() {
            match self.profile.window_for(Self::ms(self.d_est)) {
                Some(w) => self.w = w.clamp(1.0, self.cfg.max_window as f64),
                None => {
                    self.restart_slow_start();
                    return;
                }
            }
        }
        // D̄_max ← 0.2·D̄_max + 0.8·D_max.
        self.d_max_bar = Some(Dur::from_ns(
            (DMAX_KEEP_TENTHS * bar.as_ns() + (10 - DMAX_KEEP_TENTHS) * d_max.as_ns()) / 10,
        ));
    }

    /// A loss (entering Recovery or Loss): W = β × the window the lost packet was sent
    /// with (at most the current W), D_est to the profile's delay there (§3.3).
    fn on_loss(&mut self, sock: &Sock) {
        let sent_at = Time(sock.now.as_ns().saturating_sub(sock.srtt.as_ns()));
        let w_lost = self.window_at(sent_at);
        self.w = (self.cfg.beta * w_lost).min(self.w).max(1.0);
        if self.phase == Phase::SlowStart {
            self.leave_slow_start(sock.now);
        } else if let Some(d) = self.profile.delay_at(self.w, self.d_min_ms()) {
            self.d_est = self.d_est.min(Dur::from_ns((d * 1e6) as u64));
        }
        self.set_phase(Phase::Loss);
    }

    /// Slow start ends: D_est = 0.75·R·D_min and a first profile fit.
    fn leave_slow_start(&mut self, now: Time) {
        let d_min = self.d_min_ms();
        self.d_est = Dur::from_ns((SS_EXIT_DEST_FACTOR * self.cfg.r * d_min * 1e6) as u64);
        self.profile.refit();
        self.refit_at = Some(now + Dur::from_ns((self.cfg.refit_ms * 1e6) as u64));
    }

    /// D_est cannot be mapped on the profile: start over in slow start with a new
    /// profile and a new D_min (reference `restartSlowStart`), from TCP's initial window
    /// (difference 5).
    fn restart_slow_start(&mut self) {
        self.restarts += 1;
        self.w = self.init_w.min(self.w).max(1.0);
        self.d_est = Dur::ZERO;
        self.d_min = None;
        self.d_max_bar = None;
        self.epoch_max = None;
        self.epoch_end = None;
        self.refit_at = None;
        self.profile = Profile::default();
        self.set_phase(Phase::SlowStart);
    }

    /// Per-ACK delay sample (reference `receiver_thread` + `updateUponReceivingPacket`).
    fn on_delay(&mut self, now: Time, rtt: Dur, acked: u32) {
        self.last_ack = now;
        self.d_min = Some(self.d_min.map_or(rtt, |m| m.min(rtt)));
        self.epoch_max = Some(self.epoch_max.map_or(rtt, |m| m.max(rtt)));
        let w_sent = self.window_at(Time(now.as_ns().saturating_sub(rtt.as_ns())));
        if self.phase == Phase::SlowStart && Self::ms(rtt) > self.cfg.ss_exit_delay_ms {
            self.w = (self.cfg.beta * w_sent).max(1.0);
            self.leave_slow_start(now);
            self.set_phase(Phase::Loss);
        }
        if self.phase == Phase::Loss && w_sent <= self.w {
            // Packets sent after the reduction are back: the loss phase is over.
            self.epoch_max = None;
            self.set_phase(Phase::Normal);
        }
        match self.phase {
            Phase::Loss => {
                // Congestion-avoidance-like growth, D_est follows the profile.
                self.w += acked as f64 / self.w.max(1.0);
                if let Some(d) = self.profile.delay_at(self.w, self.d_min_ms()) {
                    self.d_est = self.d_est.min(Dur::from_ns((d * 1e6) as u64));
                }
            }
            Phase::SlowStart | Phase::Normal => {
                let w = w_sent.round().max(1.0) as u32;
                self.profile.add(w, rtt, self.cfg.max_window);
                if self.phase == Phase::SlowStart {
                    self.w += acked as f64;
                }
            }
        }
    }
}

impl CongestionControl for Verus {
    fn name(&self) -> &'static str {
        "verus"
    }

    fn init(&mut self, sock: &mut Sock) {
        self.w = sock.cwnd as f64;
        self.init_w = self.w.max(1.0);
        self.record_w(sock.now);
    }

    /// Loss is handled in [`set_state`](Self::set_state); keep cwnd here.
    fn ssthresh(&mut self, sock: &Sock) -> u32 {
        sock.cwnd.max(self.cfg.min_cwnd)
    }

    fn owns_cwnd(&self) -> bool {
        true
    }

    fn set_state(&mut self, sock: &mut Sock, new_state: CaState) {
        let entering_loss = matches!(new_state, CaState::Recovery | CaState::Loss)
            && !matches!(sock.ca_state, CaState::Recovery | CaState::Loss);
        if entering_loss {
            self.on_loss(sock);
            self.record_w(sock.now);
        }
    }

    fn cong_control(&mut self, sock: &mut Sock, rs: &RateSample) {
        let now = sock.now;
        // 1. Close the epochs that ended before this ACK (their delays are in).
        if self.phase != Phase::SlowStart {
            let mut end = *self.epoch_end.get_or_insert(now + self.epoch);
            while end <= now {
                if self.phase == Phase::Normal {
                    self.run_epoch(end, sock.packets_in_flight());
                } else {
                    self.epoch_max = None;
                }
                end += self.epoch;
            }
            self.epoch_end = Some(end);
            if self.refit_at.is_some_and(|t| t <= now) {
                self.profile.refit();
                self.refit_at = Some(now + Dur::from_ns((self.cfg.refit_ms * 1e6) as u64));
            }
        }
        // 2. This ACK's delay sample.
        if let Some(rtt) = rs.rtt {
            self.on_delay(now, rtt, rs.acked_sacked.max(1));
        }
        // 3. cwnd = W.
        self.record_w(now);
        let w = self.w.round() as u32;
        sock.cwnd = w
            .clamp(self.cfg.min_cwnd, self.cfg.max_window)
            .min(sock.cwnd_clamp);
    }

    fn phase(&self) -> &'static str {
        match self.phase {
            Phase::SlowStart => "slow_start",
            Phase::Loss => "loss",
            Phase::Normal => "normal",
        }
    }

    fn info(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("d_est_ms", Self::ms(self.d_est)),
            ("d_min_ms", self.d_min.map_or(f64::NAN, Self::ms)),
            ("w", self.w),
            ("epochs", self.epochs as f64),
            ("restarts", self.restarts as f64),
        ]
    }
}
