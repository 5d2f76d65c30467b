//! César: cellular resource scheduling-aware congestion control.
//!
//! Source: J. Shin, G. Lee, J. Paek, S. Bahk, "César: Cellular Resource
//! Scheduling-Aware Congestion Control" (design §IV, Eq. 1–10; parameters α = 2,
//! β = 0.05, γ = 0.125 in §V-A). Reference code: the authors' Linux module
//! `tcp_cesar.c` (revision "equal condition", July 2024), known here only through the
//! description in the project's algorithm notes; none of it is reproduced.
//!
//! # Model
//!
//! A cellular base station serves a phone in bursts, and the phone returns the ACKs of
//! each burst together on its next uplink grant, so ACKs reach the sender in *sets* a
//! multiple of the *scheduling unit* (SU) apart. César estimates the SU from the ACK
//! inter-arrival gaps (`su.rs`), splits the ACK stream into sets and takes the last
//! packet of each set, the *anchor*, as the RTT and bandwidth sample least distorted by
//! scheduling (`sets.rs`). Once per set it updates a bandwidth EWMA, paces at
//! `α·ρ·BW_ewma`, and moves cwnd step-wise, comparing the anchor's RTT with the
//! previous anchor's rather than with a fixed RTT_min (`steps.rs`):
//!
//! ```text
//! per ACK   min RTT; gap -> SU histogram -> (every 250 gaps) pattern? SU
//! per set   BW_i = Delivered_i/RTT_i (1); BW_set; BW_ewma (2); pacing α·ρ·BW_ewma (3, 4)
//!           RTT_i >  RTT_{i-1}: cwnd -= FAST-like cut by CD_i + BR_i          (5–7)
//!           RTT_i <= RTT_{i-1}: cwnd += BW_ewma·SU·ρ·(fall toward RTT_min), (8–10)
//!                               less the cut for a bandwidth drop, never below cwnd
//! ```
//!
//! Without a scheduling pattern the bottleneck is not the cellular link and César runs
//! BBR (§IV-A). Start-up is BBR's STARTUP in every case, as in the module. The inner
//! [`Bbr`] runs on every ACK: on the real socket in PROBE and BBR, and on a scratch copy
//! in STEADY, so its model (max bandwidth, min RTT, rounds, gain cycle) stays current
//! and it takes over smoothly when César falls back.
//!
//! # States
//!
//! ```text
//!        init: inner BBR in STARTUP, SU estimation running
//!         |
//!         v        SU decision: no pattern
//!    +---------+ --------------------------------------> +-------+
//!    |  PROBE  |                                         |  BBR  |  BBR on the socket
//!    +---------+ --+                                     +-------+
//!     BBR on the   | pattern (paper: once BBR's pipe        |  ^
//!     socket       | is full; module: at once, or at        |  | SU decision:
//!                  | full pipe with SU 5 ms; fixed SU:      |  | no pattern
//!                  v at full pipe)                          |  |
//!              +--------+ <-- pattern (paper: pipe full) ---+  |
//!              | STEADY | -----------------------------------+
//!              +--------+  César sets cwnd and pacing; SU re-estimated every decision
//! ```
//!
//! Every state change goes through `Cesar::transition`. PROBE is never re-entered.
//!
//! # Differences from the paper
//!
//! 1. The SU rule is ours where the paper gives only the idea ("smallest least common
//!    multiple of the ACK interval pattern that frequently appears, not including
//!    those near 0 ms"): thresholds in `su.rs`. The SU is the mean gap of its line, so
//!    it is not limited to multiples of 0.5 ms; it can be below the true SU by the
//!    spread of a set (the gap runs from the last ACK of one set to the first of the
//!    next).
//! 2. Start-up (the paper has none) is BBR's STARTUP; STEADY starts once a pattern is
//!    found and BBR's pipe is full, at `cwnd = BW_ewma·RTT_min` (at least the floor) and
//!    `BW_ewma` = BBR's bandwidth, pacing `α·BW_ewma` until the first anchor. The first
//!    set only records RTT_{i−1}.
//! 3. A set also ends at an ACK more than one SU after the set's first ACK (the paper's
//!    rule) or after a gap of `SU − margin` (margin 1 ms, 0.5 ms for SU ≤ 3 ms, and at
//!    least SU/2); the set's duration for BW_set is the time between the two anchors.
//!    Without a previous set, `BW_set/BW_i` is taken as 1.
//! 4. `Delivered_i` is the rate sample's `delivered` (packets delivered between sending
//!    the anchor and its ACK). ACKs without a valid sample keep the last valid BW_i.
//! 5. `RTT_min` is the minimum RTT sample since `init` (never expires).
//! 6. cwnd follows `cwnd_i` as Linux's `cong_control` algorithms do:
//!    `min(cwnd + acked, cwnd_i)` on ACKs that acknowledge data, floored at
//!    `cwnd_min_target` (4), so a rise is limited to the packets acked (this matters
//!    only after an RTO). No loss response beyond the stack's (as in the module).
//! 7. Application-limited samples are used as they come (the paper does not say).
//! 8. Integer arithmetic: bandwidth in packets per µs << 24, cwnd in bytes, gains in
//!    Q32, times in ns.
//! 9. The paper's footnote 6 lists "0.2, 0.05 and 0.125" where the text says α = 2;
//!    α = 2 (also the module's default) is used.
//!
//! # Differences from the reference module
//!
//! With `fidelity = "module"` the SU decision rule, the set accounting, BW_i (the
//! per-ACK `tcp_rate.c` sample), the pacing/increase scaling by `(200 − g)/200`, the
//! capped BW_set/BW_i ratio, the EWMA update after the adjustment, the first adjustment
//! against RTT_{i−1} = 0, STEADY at once on a pattern or at full pipe, and the cwnd
//! growth rule (by `acked` while the pipe is not full) follow the module. In both
//! modes:
//! 1. **Division by zero** in the increase when RTT_{i−1} = RTT_min: the increase is 0.
//! 2. **Invalid rate samples** (no interval, nothing delivered) are skipped, never turned
//!    into a bandwidth; BW_i is the last valid sample.
//! 3. STEADY always starts initialised (module: the current cwnd, BW_ewma = BBR's
//!    bandwidth, pacing gain 1·α); the module starts it uninitialised when a decision
//!    (not the full pipe) switches to it, which can collapse cwnd and pace at
//!    5.8× BW_ewma.
//! 4. RTT_min starts empty, not at 100 ms (which stays wrong on paths over 100 ms).
//! 5. The fallback is Linux BBR v1 (`crate::bbr`: DRAIN, PROBE_BW gain cycling,
//!    PROBE_RTT, min-RTT expiry, loss response, full-pipe threshold 1.25 unless
//!    configured) instead of the module's reduced BBR, and its model is kept warm
//!    in STEADY instead of frozen.
//! 6. No per-ACK logging (`cesar_mode_outside`) and no histogram allocation: state is
//!    observed through [`Cesar::phase_kind`], the accessors and
//!    [`CongestionControl::info`] (SU decisions and time per state, `record.rs`).
//! 7. Gaps are measured in ns, not µs (`tcp_mstamp`), so bin edges can differ by < 1 µs.

mod config;
mod record;
mod sets;
mod steps;
mod su;

#[cfg(test)]
mod tests;

pub use config::{CesarConfig, Fidelity};
pub use steps::Step;
pub use su::Decision;

use crate::bbr::{Bbr, BW_SCALE};
use crate::{CaEvent, CaState, CongestionControl, Dur, RateSample, Sock};
use config::Gains;
use record::Record;
use sets::{AckObs, ModuleSets, PaperSets, SetTracker};
use steps::SetInput;
use su::{Rule, SuEstimator, INITIAL_SU};

/// µs per second, for pacing rates.
const USEC_PER_SEC: u128 = 1_000_000;
/// Packets delivered before the module's start-up growth rule stops ignoring the
/// target (`TCP_INIT_CWND`).
const MODULE_INIT_DELIVERED: u64 = 10;

/// César's state machine, each state carrying its data.
#[derive(Clone, Debug)]
enum State {
    /// No decision yet (or a pattern waiting for BBR's full pipe): BBR drives.
    Probe,
    /// A cellular pattern: César's step-wise control.
    Steady { step: Step, sets: SetTracker },
    /// No pattern: BBR drives.
    Bbr,
}

/// Which state César is in (for reports and tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// No decision yet, or a pattern waiting for BBR's full pipe: BBR drives.
    Probe,
    /// A cellular pattern was found: César's step-wise control drives.
    Steady,
    /// No pattern: BBR drives.
    Bbr,
}

impl Phase {
    /// Label used in time series and by [`CongestionControl::phase`].
    pub fn name(self) -> &'static str {
        match self {
            Phase::Probe => "probe",
            Phase::Steady => "steady",
            Phase::Bbr => "bbr",
        }
    }
}

/// A César controller. Build with [`Cesar::new`]; the stack then calls
/// [`CongestionControl::init`].
#[derive(Clone, Debug)]
pub struct Cesar {
    config: CesarConfig,
    gains: Gains,
    /// BBR for start-up and fallback (kept warm in STEADY).
    bbr: Bbr,
    state: State,
    /// Scheduling unit in use (fixed, estimated, or the 5 ms default).
    su: Dur,
    /// `None` with a fixed SU.
    estimator: Option<SuEstimator>,
    /// The latest SU decision.
    last_decision: Option<Decision>,
    /// Paper rule: a pattern was found and waits for BBR's full pipe.
    pending_pattern: bool,
    /// RTT_min: smallest RTT sample since `init`.
    min_rtt: Option<Dur>,
    /// Latest valid BW_i sample.
    last_bw: Option<u64>,
    /// Decisions and time per state, for [`CongestionControl::info`] only.
    record: Record,
}

impl Default for Cesar {
    fn default() -> Self {
        Cesar::new(CesarConfig::default())
    }
}

impl Cesar {
    /// A controller with these parameters. Any values are accepted (gains are clamped
    /// into range); [`CesarConfig::validate`] reports out-of-range values.
    pub fn new(config: CesarConfig) -> Self {
        let rule = match config.fidelity {
            Fidelity::Paper => Rule::Paper,
            Fidelity::Module => Rule::Module,
        };
        let fixed = config.fixed_su();
        Cesar {
            gains: Gains::from_config(&config),
            bbr: Bbr::new(config.bbr.clone()),
            state: State::Probe,
            su: fixed.unwrap_or(INITIAL_SU),
            estimator: fixed
                .is_none()
                .then(|| SuEstimator::new(rule, config.decision_gaps)),
            last_decision: None,
            pending_pattern: false,
            min_rtt: None,
            last_bw: None,
            record: Record::default(),
            config,
        }
    }

    /// The parameters this controller was built with.
    pub fn config(&self) -> &CesarConfig {
        &self.config
    }

    /// Current state.
    pub fn phase_kind(&self) -> Phase {
        match self.state {
            State::Probe => Phase::Probe,
            State::Steady { .. } => Phase::Steady,
            State::Bbr => Phase::Bbr,
        }
    }

    /// The scheduling unit in use.
    pub fn su(&self) -> Dur {
        self.su
    }

    /// The latest scheduling-unit decision (`None` before the first, or with a fixed SU).
    pub fn last_decision(&self) -> Option<Decision> {
        self.last_decision
    }

    /// RTT_min, `None` before the first RTT sample.
    pub fn min_rtt(&self) -> Option<Dur> {
        self.min_rtt
    }

    /// The step-wise state while in STEADY.
    pub fn step(&self) -> Option<&Step> {
        match &self.state {
            State::Steady { step, .. } => Some(step),
            _ => None,
        }
    }

    /// The inner BBR.
    pub fn bbr(&self) -> &Bbr {
        &self.bbr
    }

    /// Every state change goes through here. Debug builds check that it is one of
    /// PROBE → STEADY | BBR, STEADY → BBR, BBR → STEADY.
    fn transition(&mut self, to: State) {
        debug_assert!(
            matches!(
                (&self.state, &to),
                (State::Probe, State::Steady { .. } | State::Bbr)
                    | (State::Steady { .. }, State::Bbr)
                    | (State::Bbr, State::Steady { .. })
            ),
            "illegal César transition {:?} -> {:?}",
            self.phase_kind(),
            to
        );
        self.state = to;
    }

    /// Enter STEADY from the inner BBR's model (module header, paper difference 2).
    fn enter_steady(&mut self, sock: &Sock) {
        let bw = match u64::from(self.bbr.bw()) {
            0 => self.last_bw.unwrap_or(1),
            bw => bw,
        };
        let mss = u64::from(sock.mss);
        let floor = u64::from(self.config.cwnd_min_target) * mss;
        let cwnd_bytes = match self.config.fidelity {
            // The measured BDP: start without the queue STARTUP built.
            Fidelity::Paper => {
                let rtt_us = self.min_rtt.map_or(0, |r| r.as_us());
                let bdp = (u128::from(bw) * u128::from(rtt_us)).div_ceil(1 << BW_SCALE);
                u64::try_from(bdp).unwrap_or(u64::MAX).saturating_mul(mss)
            }
            // The module: the current window (`cwnd_est = cwnd · advmss`).
            Fidelity::Module => u64::from(sock.cwnd) * mss,
        };
        let sets = match self.config.fidelity {
            Fidelity::Paper => SetTracker::Paper(PaperSets::default()),
            Fidelity::Module => SetTracker::Module(ModuleSets::default()),
        };
        let step = Step::new(cwnd_bytes.max(floor), bw, &self.gains);
        self.pending_pattern = false;
        self.record.on_steady_entry();
        self.transition(State::Steady { step, sets });
    }

    /// Act on a scheduling-unit decision.
    fn on_decision(&mut self, d: Decision, sock: &Sock) {
        self.last_decision = Some(d);
        self.record.on_decision(d, sock.now);
        match d {
            Decision::Pattern(su) => {
                self.su = su;
                match (&self.state, self.config.fidelity) {
                    (State::Steady { .. }, _) => {}
                    (_, Fidelity::Module) => self.enter_steady(sock),
                    (_, Fidelity::Paper) => self.pending_pattern = true,
                }
            }
            Decision::NoPattern => {
                self.pending_pattern = false;
                if self.config.fidelity == Fidelity::Module {
                    self.su = INITIAL_SU;
                }
                if !matches!(self.state, State::Bbr) {
                    self.transition(State::Bbr);
                }
            }
            Decision::Unchanged => {}
        }
    }

    /// STEADY once BBR's pipe is full: a pending pattern (paper), a fixed SU, or the
    /// module's start-up exit before any decision.
    fn maybe_enter_steady(&mut self, sock: &Sock) {
        if matches!(self.state, State::Steady { .. }) || !self.bbr.full_bw_reached() {
            return;
        }
        // Still probing means no decision has ruled out a pattern yet.
        let probing = matches!(self.state, State::Probe);
        let module_startup_exit = probing && self.config.fidelity == Fidelity::Module;
        let fixed = probing && self.estimator.is_none();
        if self.pending_pattern || module_startup_exit || fixed {
            self.enter_steady(sock);
        }
    }

    /// Run a hook of the inner BBR: on the socket unless César owns it (STEADY), then
    /// on a scratch copy whose writes are dropped.
    fn with_bbr<R>(&mut self, sock: &mut Sock, f: impl FnOnce(&mut Bbr, &mut Sock) -> R) -> R {
        if matches!(self.state, State::Steady { .. }) {
            let mut scratch = sock.clone();
            f(&mut self.bbr, &mut scratch)
        } else {
            f(&mut self.bbr, sock)
        }
    }

    /// The per-ACK recipe: observe → estimate SU → BBR model → (STEADY) sets → cwnd
    /// and pacing.
    fn on_ack(&mut self, sock: &mut Sock, rs: &RateSample) {
        let obs = self.observe(sock, rs);
        if obs.is_some() {
            let decision = self.estimator.as_mut().and_then(|e| e.on_ack(sock.now));
            if let Some(d) = decision {
                self.on_decision(d, sock);
            }
        }
        self.with_bbr(sock, |bbr, s| bbr.cong_control(s, rs));
        self.maybe_enter_steady(sock);
        if matches!(self.state, State::Steady { .. }) {
            if let Some(obs) = obs {
                self.on_steady_ack(&obs, sock, rs);
            }
            self.set_pacing_rate(sock);
            self.set_cwnd(sock, rs.acked_sacked);
        }
        self.record.on_ack(sock.now, self.phase_kind());
    }

    /// RTT_min and this ACK's BW_i sample; `None` without an RTT sample (such ACKs
    /// take no part in SU estimation or sets, as in the module).
    fn observe(&mut self, sock: &Sock, rs: &RateSample) -> Option<AckObs> {
        let rtt = rs.rtt.filter(|r| !r.is_zero())?;
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        let bw = match self.config.fidelity {
            Fidelity::Paper => sets::bw_over_rtt(rs.delivered, rtt),
            Fidelity::Module => sets::bw_over_interval(rs.delivered, rs.interval),
        };
        if bw.is_some() {
            self.last_bw = bw;
        }
        Some(AckObs {
            now: sock.now,
            acked: rs.acked_sacked,
            rtt,
            bw,
        })
    }

    /// Feed one ACK to the set tracker; adjust once per closed set.
    fn on_steady_ack(&mut self, obs: &AckObs, sock: &Sock, rs: &RateSample) {
        let (su, gains, fidelity) = (self.su, self.gains, self.config.fidelity);
        let min_rtt = self.min_rtt.unwrap_or(obs.rtt);
        let State::Steady { step, sets } = &mut self.state else {
            return;
        };
        let Some(set) = sets.on_ack(obs, su) else {
            return;
        };
        let Some(bw) = set.bw else {
            return; // no valid bandwidth sample yet
        };
        let input = SetInput {
            rtt: set.rtt,
            min_rtt,
            bw,
            bw_set: set.bw_set(),
            su,
            mss: sock.mss,
            rs_interval: rs.interval,
        };
        match fidelity {
            Fidelity::Paper => step.on_set_paper(&gains, &input),
            Fidelity::Module => step.on_set_module(&gains, &input),
        }
        let floor = u64::from(self.config.cwnd_min_target) * u64::from(sock.mss);
        step.cwnd_bytes = step.cwnd_bytes.max(floor);
    }

    /// César Eq. (3): pace at `pacing_gain · BW_ewma`, in bytes per second.
    fn set_pacing_rate(&self, sock: &mut Sock) {
        let Some(step) = self.step() else { return };
        let rate = u128::from(step.pacing_bw()) * u128::from(sock.mss) * USEC_PER_SEC;
        let rate = u64::try_from(rate >> BW_SCALE).unwrap_or(u64::MAX);
        if rate > 0 {
            sock.pacing_rate = rate.min(sock.max_pacing_rate);
        }
    }

    /// Move cwnd toward `cwnd_i` (module header, paper difference 6).
    fn set_cwnd(&self, sock: &mut Sock, acked: u32) {
        let Some(step) = self.step() else { return };
        if acked == 0 {
            return;
        }
        let target = step.cwnd_bytes / u64::from(sock.mss.max(1));
        let target = u32::try_from(target).unwrap_or(u32::MAX);
        let grown = sock.cwnd.saturating_add(acked);
        let cwnd = if self.config.fidelity == Fidelity::Module && !self.bbr.full_bw_reached() {
            // The module before its pipe is full: grow by acked while below the target
            // or while fewer than 10 packets have been delivered.
            if sock.cwnd < target || sock.delivered < MODULE_INIT_DELIVERED {
                grown
            } else {
                sock.cwnd
            }
        } else {
            grown.min(target)
        };
        sock.cwnd = cwnd.max(self.config.cwnd_min_target).min(sock.cwnd_clamp);
    }
}

impl CongestionControl for Cesar {
    fn name(&self) -> &'static str {
        "cesar"
    }

    /// The inner BBR's (`bbr_min_tso_segs`, as the module's `.min_tso_segs`).
    fn min_tso_segs(&self, sock: &Sock) -> Option<u32> {
        self.bbr.min_tso_segs(sock)
    }

    /// Reset, start the inner BBR (ssthresh ∞, initial pacing rate) and ask for
    /// internal pacing.
    fn init(&mut self, sock: &mut Sock) {
        *self = Cesar::new(self.config.clone());
        self.bbr.init(sock);
        sock.pacing_status = crate::PacingStatus::Needed;
    }

    /// No reduction of its own (the module returns ∞); the inner BBR saves cwnd.
    fn ssthresh(&mut self, sock: &Sock) -> u32 {
        self.bbr.ssthresh(sock)
    }

    fn cong_control(&mut self, sock: &mut Sock, rs: &RateSample) {
        self.on_ack(sock, rs);
    }

    fn owns_cwnd(&self) -> bool {
        true
    }

    fn set_state(&mut self, sock: &mut Sock, new_state: CaState) {
        self.with_bbr(sock, |bbr, s| bbr.set_state(s, new_state));
    }

    fn cwnd_event(&mut self, sock: &mut Sock, event: CaEvent) {
        self.with_bbr(sock, |bbr, s| bbr.cwnd_event(s, event));
    }

    fn in_ack_event(&mut self, sock: &mut Sock, slow_path: bool) {
        self.with_bbr(sock, |bbr, s| bbr.in_ack_event(s, slow_path));
    }

    fn pkts_acked(&mut self, sock: &mut Sock, sample: &crate::AckSample) {
        self.with_bbr(sock, |bbr, s| bbr.pkts_acked(s, sample));
    }

    /// BBR's undo in PROBE and BBR; in STEADY the window is kept (as the module does).
    fn undo_cwnd(&mut self, sock: &Sock) -> u32 {
        let cwnd = self.bbr.undo_cwnd(sock);
        if matches!(self.state, State::Steady { .. }) {
            sock.cwnd
        } else {
            cwnd
        }
    }

    fn phase(&self) -> &'static str {
        self.phase_kind().name()
    }

    /// `su_ms` (the SU in use: fixed, the latest pattern decision's, or 5 ms after a
    /// module-rule fallback; NaN while estimating until a decision finds a pattern),
    /// `su_first_ms`, `su_min_ms`, `su_max_ms` (over the decisions that found a
    /// pattern; NaN without one), `su_decisions` and how many found a pattern
    /// (`pattern_decisions`), none (`no_pattern_decisions`) or kept the mode
    /// (`unchanged_decisions`, module rule), `first_decision_s`, `steady_entries`, and
    /// the time in each state up to the last ACK (`probe_s`, `steady_s`, `bbr_s`).
    fn info(&self) -> Vec<(&'static str, f64)> {
        self.record.values(self.su, self.estimator.is_some())
    }
}
