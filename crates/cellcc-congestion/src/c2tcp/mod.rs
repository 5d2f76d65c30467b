//! C2TCP, Cellular Controlled Delay TCP, in both published versions, on top of a
//! loss-based base algorithm (CUBIC by default, or NewReno).
//!
//! Sources:
//! - S. Abbasloo, T. Li, Y. Xu, H. J. Chao, "Cellular Controlled Delay TCP (C2TCP)",
//!   IFIP Networking 2018 (scheme `c2tcp-ifip`; Algorithm 1, Eq. (1)).
//! - S. Abbasloo, Y. Xu, H. J. Chao, "C2TCP: A Flexible Cellular TCP to Meet Stringent
//!   Delay Requirements", IEEE JSAC 37(4), April 2019 (scheme `c2tcp`; Condition Detector
//!   Algorithm 1, Action Enforcer Algorithm 2 and Eq. (1), Tuner Algorithm 3, analysis
//!   Eq. (2)–(16)).
//! - The authors' Linux 4.13 patches as described in `specs/algorithms.md` §1.3–1.7 (v1
//!   for IFIP; v2.2 `tcp_cubic.c` hunk and user-space Tuner for JSAC), reproduced with
//!   `fidelity = "linux"`. No reference code was copied.
//!
//! Model. C2TCP leaves the base algorithm in charge (slow start, congestion avoidance,
//! loss recovery) and refines cwnd on every ACK that carries an RTT sample, like an AQM
//! moved into the sender. The Condition Detector ([`detector`]) compares each RTT with a
//! Setpoint: below it the network is Good and the Action Enforcer ([`enforcer`]) adds
//! Setpoint/rtt packets per RTT to cwnd; at or above it for a whole Interval the network
//! is Bad, and the enforcer acts as if an AQM had dropped a packet and the base had timed
//! out: ssthresh from the base, cwnd := 1; further back-offs follow every Interval/√N
//! while no RTT falls below the Setpoint (CoDel's control law). In the IFIP version the
//! Setpoint is an absolute Target and the Interval a separate constant. In the JSAC
//! version Setpoint = Interval = α·MINRTT (lifetime minimum RTT) and the Tuner
//! ([`tuner`]) moves α ∈ [1, 10] every 0.5 s so that the average RTT meets the
//! application's Target, which may change during the flow (`target_schedule`).
//!
//! ```text
//!                     rtt < Setpoint: cwnd += Setpoint/rtt per RTT
//!              +------------------------------------------------------+
//!              v                                                      |
//!          +------+  rtt >= Setpoint   +--------+  Interval with no   +-----+
//!   ACK -->| good |------------------->| normal |--------------------->| bad |--+
//!          +------+  next := now + IV  +--------+  rtt < Setpoint:    +-----+  |
//!              ^                         (IFIP: "waiting")  ssthresh := base,  |
//!              |                                            cwnd := 1, N += 1  |
//!              +------------- rtt < Setpoint -------------- every IV/√N -------+
//!
//!   JSAC only, every tuning cycle (0.5 s): Tuner moves α from avg RTT vs Target
//! ```
//!
//! Phase labels ([`CongestionControl::phase`]): `"good"`, `"normal"` (IFIP:
//! `"waiting"`) and `"bad"`, the condition after the last RTT sample.
//!
//! Differences from the papers (both fidelities):
//! 1. The base algorithm is a boxed [`CongestionControl`]; every hook is delegated to it
//!    and C2TCP acts at the end of `pkts_acked`, as the reference patch does, so the
//!    base's `cong_avoid` for the same ACK sees C2TCP's cwnd. ACKs without an RTT sample
//!    (Karn) are ignored, as CUBIC's `pkts_acked` ignores them.
//! 2. Eq. (1) is applied per packet acked, and the IFIP increase per RTT (see
//!    [`enforcer`] items 1–2).
//! 3. MINRTT is the lifetime minimum of the samples C2TCP sees (JSAC §III-B3 says "the
//!    global minimum RTT from the start of the session"); it never expires.
//! 4. The Tuner runs inside the controller on the first ACK after each cycle ends, from
//!    the RTT samples C2TCP sees (see [`tuner`]); Target 0 means 2 × MINRTT.
//! 5. JSAC Algorithm 1 sets Interval only on Good samples; before the first Good sample
//!    (only possible with α = 1, as the first sample defines MINRTT) Interval is the
//!    current Setpoint.
//! 6. Target-schedule times are relative to `init` (the connection start).
//! 7. With paper fidelity C2TCP detects and acts only in the Open and Disorder states:
//!    a back-off is an imaginary loss, and during CWR/Recovery/Loss the base is already
//!    handling a congestion episode (TCP reduces once per episode; PRR would overwrite
//!    cwnd anyway). MINRTT and the Tuner still take those samples. The papers do not
//!    discuss the interplay.
//!
//! Differences reproduced only with `fidelity = "linux"` (the reference patch):
//! 1. RTT, MINRTT, Setpoint and Interval are floored to whole ms before use; Good is
//!    `Setpoint_ms >= rtt_ms` (inclusive), so sub-ms RTTs always count as Good. For v1
//!    (IFIP) the same flooring and comparison are assumed (spec §1.5 lists no change).
//! 2. With base CUBIC, C2TCP does not run at all for 1 s (HZ jiffies) after every CUBIC
//!    epoch start (`epoch`): no increase, no back-off, no MINRTT or Tuner samples.
//!    NewReno has no epochs, so the gate does not apply to it (no reference exists).
//! 3. The increase goes per ACK through the shared `snd_cwnd_cnt` ([`enforcer`]).
//! 4. Back-off spacing uses CoDel's Newton step for 1/√N ([`detector`]).
//! 5. C2TCP also acts during CWR/Recovery/Loss, as the patch does: PRR overwrites cwnd
//!    on the same ACK and the new ssthresh stays. Guard (not in the kernel): PRR's
//!    `prior_cwnd` is raised to the cwnd the back-off found, because after a reset just
//!    before Recovery it is 1 and PRR would release ssthresh packets per packet
//!    delivered, a flight that only Linux's receive window bounds ([`enforcer`]).
//! 6. With the Tuner on, the kernel runs α = 2.00 until the Tuner's first update, and
//!    the Tuner starts from `alpha` (reference: kernel 200, Tuner 150); the Tuner update
//!    is the reference's multiplicative ×100 integer form ([`tuner`]).
//! 7. Not reproduced: the reference Tuner's side effect of enabling internal pacing
//!    (spec §1.7 item 8), the JSAC branch's per-cycle re-seeding of α, the v1 sysctls
//!    being global rather than per socket, and the 1.024 µs CoDel clock (µs here).

mod config;
pub mod detector;
pub mod enforcer;
mod epoch;
#[cfg(test)]
mod tests;
pub mod tuner;

pub use config::{Base, C2tcpConfig, C2tcpIfipConfig, Fidelity, MAX_ALPHA, MIN_ALPHA};
pub use detector::{Action, Condition};

use crate::cubic::Cubic;
use crate::reno::NewReno;
use crate::{AckSample, CaEvent, CaState, CongestionControl, Dur, Sock, Time};
use config::ms_to_dur;
use detector::Detector;
use enforcer::Enforcer;
use epoch::CubicEpoch;
use tuner::{Tuner, ALPHA_ONE};

/// α the reference kernel runs until the Tuner first writes one (`TCP_C2TCP_ALPHA_INIT`
/// = 200, i.e. 2.00).
const KERNEL_ALPHA_INIT_MILLI: u32 = 2 * ALPHA_ONE;
const NS_PER_US: u64 = 1_000;
const NS_PER_MS: u64 = 1_000_000;

/// The JSAC version's own state: α, MINRTT, the Tuner and the application's Target.
#[derive(Clone, Debug)]
struct Jsac {
    /// α the Condition Detector uses, thousandths.
    alpha_milli: u32,
    /// MINRTT (lifetime minimum; with Linux fidelity at µs resolution).
    min_rtt: Option<Dur>,
    /// JSAC Algorithm 1's `Interval`, set to the Setpoint on Good samples.
    interval: Option<Dur>,
    tuner: Option<Tuner>,
    /// The Tuner's initial α (thousandths) if the Tuner is on; `init` builds it.
    tuner_alpha_milli: Option<u32>,
    tuning_cycle: Dur,
    /// The application's Target now (zero: 2 × MINRTT).
    target: Dur,
    /// Target changes: (offset since `init`, Target), increasing offsets.
    schedule: Vec<(Dur, Dur)>,
    /// Schedule entries already applied.
    schedule_pos: usize,
    /// Connection start (`init`).
    start: Time,
}

/// Which version runs.
#[derive(Clone, Debug)]
enum Version {
    /// JSAC 2019: Setpoint = Interval = α·MINRTT, Tuner.
    Jsac(Box<Jsac>),
    /// IFIP 2018: absolute Target (the Setpoint) and Interval.
    Ifip { target: Dur, interval: Dur },
}

/// One RTT sample judged by the Condition Detector.
#[derive(Clone, Copy, Debug)]
struct Judgement {
    good: bool,
    /// Interval for a new episode or back-off.
    interval: Dur,
    /// Setpoint (JSAC) or Target (IFIP), for the increase.
    setpoint: Dur,
}

/// A C2TCP controller over a base loss-based algorithm.
#[derive(Debug)]
pub struct C2tcp {
    base: Box<dyn CongestionControl>,
    /// CUBIC's epoch, mirrored for the reference patch's 1-s gate (Linux fidelity with
    /// base CUBIC only).
    cubic_epoch: Option<CubicEpoch>,
    fidelity: Fidelity,
    version: Version,
    detector: Detector,
    enforcer: Enforcer,
    /// Bad-condition back-offs so far (Algorithm 2's `Cwnd ← 1`), reported by `info`.
    backoffs: u64,
}

fn build_base(base: Base, cubic: Option<crate::cubic::CubicConfig>) -> Box<dyn CongestionControl> {
    match base {
        Base::Cubic => Box::new(Cubic::new(cubic.unwrap_or_default())),
        Base::Newreno => Box::new(NewReno::new()),
    }
}

impl C2tcp {
    /// The JSAC 2019 version (scheme `c2tcp`).
    ///
    /// # Panics
    /// If `cfg` fails [`C2tcpConfig::validate`]; scenario values are validated when
    /// read, so only configs built in code can trip this.
    pub fn new(cfg: C2tcpConfig) -> Self {
        if let Err(e) = cfg.validate() {
            panic!("invalid C2TCP config: {e}");
        }
        let alpha_milli = cfg.alpha_milli();
        let detector_alpha = match (cfg.fidelity, cfg.tuner) {
            (Fidelity::Linux, true) => KERNEL_ALPHA_INIT_MILLI,
            _ => alpha_milli,
        };
        let jsac = Jsac {
            alpha_milli: detector_alpha,
            min_rtt: None,
            interval: None,
            tuner: None,
            tuner_alpha_milli: cfg.tuner.then_some(alpha_milli),
            tuning_cycle: ms_to_dur(cfg.tuning_cycle_ms),
            target: ms_to_dur(cfg.target_ms),
            schedule: cfg
                .target_schedule
                .iter()
                .map(|&[t_s, ms]| (Dur::from_secs_f64(t_s), ms_to_dur(ms)))
                .collect(),
            schedule_pos: 0,
            start: Time::ZERO,
        };
        C2tcp::with_version(
            cfg.base,
            cfg.cubic,
            cfg.fidelity,
            Version::Jsac(Box::new(jsac)),
        )
    }

    /// The IFIP Networking 2018 version (scheme `c2tcp-ifip`).
    ///
    /// # Panics
    /// If `cfg` fails [`C2tcpIfipConfig::validate`].
    pub fn ifip(cfg: C2tcpIfipConfig) -> Self {
        if let Err(e) = cfg.validate() {
            panic!("invalid C2TCP (IFIP) config: {e}");
        }
        let version = Version::Ifip {
            target: ms_to_dur(cfg.target_ms),
            interval: ms_to_dur(cfg.interval_ms),
        };
        C2tcp::with_version(cfg.base, cfg.cubic, cfg.fidelity, version)
    }

    fn with_version(
        base: Base,
        cubic: Option<crate::cubic::CubicConfig>,
        fidelity: Fidelity,
        version: Version,
    ) -> Self {
        let linux_cubic = fidelity == Fidelity::Linux && base == Base::Cubic;
        C2tcp {
            base: build_base(base, cubic),
            cubic_epoch: linux_cubic.then(CubicEpoch::default),
            fidelity,
            version,
            detector: Detector::new(fidelity),
            enforcer: Enforcer::default(),
            backoffs: 0,
        }
    }

    /// The condition after the last RTT sample.
    pub fn condition(&self) -> Condition {
        self.detector.condition()
    }

    /// α the Condition Detector uses now (JSAC only).
    pub fn alpha(&self) -> Option<f64> {
        match &self.version {
            Version::Jsac(j) => Some(f64::from(j.alpha_milli) / f64::from(ALPHA_ONE)),
            Version::Ifip { .. } => None,
        }
    }

    /// MINRTT (JSAC only), once a sample has been seen.
    pub fn min_rtt(&self) -> Option<Dur> {
        match &self.version {
            Version::Jsac(j) => j.min_rtt,
            Version::Ifip { .. } => None,
        }
    }

    /// The current Setpoint: α·MINRTT (JSAC, once MINRTT is known; whole ms with Linux
    /// fidelity) or the Target (IFIP).
    pub fn setpoint(&self) -> Option<Dur> {
        match &self.version {
            Version::Jsac(j) => j.min_rtt.map(|m| match self.fidelity {
                Fidelity::Paper => scale_alpha(m, j.alpha_milli),
                Fidelity::Linux => Dur::from_ms(linux_setpoint_ms(m, j.alpha_milli)),
            }),
            Version::Ifip { target, .. } => Some(*target),
        }
    }

    /// The application's Target now (JSAC only; zero means 2 × MINRTT).
    pub fn target(&self) -> Option<Dur> {
        match &self.version {
            Version::Jsac(j) => Some(j.target),
            Version::Ifip { .. } => None,
        }
    }

    /// The base algorithm (for its phase and name).
    pub fn base(&self) -> &dyn CongestionControl {
        self.base.as_ref()
    }

    /// Whether C2TCP is inside the reference patch's 1-s blackout after a CUBIC epoch
    /// start (always false with paper fidelity or base NewReno).
    pub fn in_blackout(&self, sock: &Sock) -> bool {
        self.cubic_epoch
            .as_ref()
            .is_some_and(|e| e.in_blackout(sock))
    }

    /// The schedule and Tuner, which run on every ACK whether or not it has an RTT
    /// sample (the Tuner is a separate process in the reference).
    fn run_tuner(&mut self, now: Time) {
        let Version::Jsac(j) = &mut self.version else {
            return;
        };
        let offset = now.saturating_since(j.start);
        while let Some(&(at, target)) = j.schedule.get(j.schedule_pos) {
            if at > offset {
                break;
            }
            j.target = target;
            j.schedule_pos += 1;
        }
        if let Some(tuner) = &mut j.tuner {
            if tuner.due(now) {
                if let Some(alpha) = tuner.tune(now, j.target, j.min_rtt) {
                    j.alpha_milli = alpha;
                }
            }
        }
    }

    /// Condition Detector inputs for one RTT sample (JSAC Algorithm 1 lines 5–10, or the
    /// IFIP comparison with Target); records the sample for MINRTT and the Tuner.
    fn judge(&mut self, rtt: Dur) -> Judgement {
        let fidelity = self.fidelity;
        match &mut self.version {
            Version::Jsac(j) => {
                let rtt = match fidelity {
                    Fidelity::Paper => rtt,
                    Fidelity::Linux => Dur::from_us(rtt.as_ns() / NS_PER_US),
                };
                // C2TCP JSAC Algorithm 1 lines 5–6: MINRTT = min(MINRTT, rtt).
                let min_rtt = j.min_rtt.map_or(rtt, |m| m.min(rtt));
                j.min_rtt = Some(min_rtt);
                if let Some(tuner) = &mut j.tuner {
                    tuner.record(rtt);
                }
                match fidelity {
                    Fidelity::Paper => {
                        // Line 8: Setpoint = α × MINRTT.
                        let setpoint = scale_alpha(min_rtt, j.alpha_milli);
                        let good = rtt < setpoint;
                        if good || j.interval.is_none() {
                            // Line 10: Interval = Setpoint.
                            j.interval = Some(setpoint);
                        }
                        Judgement {
                            good,
                            interval: j.interval.unwrap_or(setpoint),
                            setpoint,
                        }
                    }
                    Fidelity::Linux => {
                        let sp_ms = linux_setpoint_ms(min_rtt, j.alpha_milli);
                        let r_ms = rtt.as_ns() / NS_PER_MS;
                        // Reference patch: Interval = Setpoint, ms, inclusive comparison.
                        let setpoint = Dur::from_ms(sp_ms);
                        Judgement {
                            good: sp_ms >= r_ms,
                            interval: setpoint,
                            setpoint,
                        }
                    }
                }
            }
            Version::Ifip { target, interval } => match fidelity {
                // C2TCP IFIP Algorithm 1 line 5: rtt < Target.
                Fidelity::Paper => Judgement {
                    good: rtt < *target,
                    interval: *interval,
                    setpoint: *target,
                },
                Fidelity::Linux => Judgement {
                    good: target.as_ns() / NS_PER_MS >= rtt.as_ns() / NS_PER_MS,
                    interval: *interval,
                    setpoint: *target,
                },
            },
        }
    }

    /// Whether the detector and enforcer run on this ACK. With paper fidelity, only
    /// while the base's own window growth is in charge (Open, Disorder): a C2TCP
    /// back-off is an imaginary loss, and TCP reduces once per congestion episode
    /// (RFC 5681 §3.2, RFC 6675 §5), so one inside CWR/Recovery/Loss belongs to the
    /// episode already being handled (and PRR overwrites cwnd there anyway). With Linux
    /// fidelity always, as the reference patch does.
    fn may_act(&self, sock: &Sock) -> bool {
        self.fidelity == Fidelity::Linux
            || matches!(sock.ca_state, CaState::Open | CaState::Disorder)
    }

    /// C2TCP JSAC Algorithm 2 for one sample.
    fn enforce(
        &mut self,
        sock: &mut Sock,
        action: Action,
        judged: Judgement,
        rtt: Dur,
        acked: u32,
    ) {
        match action {
            Action::None => {}
            Action::Increase => match (self.fidelity, &self.version) {
                (Fidelity::Paper, _) => {
                    self.enforcer.increase(sock, judged.setpoint, rtt, acked);
                }
                (Fidelity::Linux, Version::Jsac(_)) => {
                    let r_ms = rtt.as_ns() / NS_PER_MS;
                    Enforcer::increase_linux(sock, judged.setpoint.as_ns() / NS_PER_MS, r_ms);
                }
                (Fidelity::Linux, Version::Ifip { .. }) => {
                    let r_ms = rtt.as_ns() / NS_PER_MS;
                    Enforcer::increase_linux_ifip(sock, judged.setpoint.as_ns() / NS_PER_MS, r_ms);
                }
            },
            Action::Backoff => {
                let linux = self.fidelity == Fidelity::Linux;
                self.enforcer.backoff(sock, self.base.as_mut(), linux);
                self.backoffs += 1;
                if let Some(epoch) = &mut self.cubic_epoch {
                    epoch.on_ssthresh();
                }
            }
        }
    }
}

/// `d × α`, α in thousandths.
fn scale_alpha(d: Dur, alpha_milli: u32) -> Dur {
    let ns = u128::from(d.as_ns()) * u128::from(alpha_milli) / u128::from(ALPHA_ONE);
    Dur::from_ns(u64::try_from(ns).unwrap_or(u64::MAX))
}

/// Reference patch: `SP_ms = ⌊⌊min_urtt/1000⌋ · alpha / 100⌋`, alpha the ×100 integer.
fn linux_setpoint_ms(min_rtt: Dur, alpha_milli: u32) -> u64 {
    let m_ms = min_rtt.as_ns() / NS_PER_MS;
    m_ms * u64::from(alpha_milli / 10) / 100
}

impl CongestionControl for C2tcp {
    fn name(&self) -> &'static str {
        match self.version {
            Version::Jsac(_) => "c2tcp",
            Version::Ifip { .. } => "c2tcp-ifip",
        }
    }

    fn init(&mut self, sock: &mut Sock) {
        self.base.init(sock);
        if let Some(epoch) = &mut self.cubic_epoch {
            epoch.reset();
        }
        self.detector = Detector::new(self.fidelity);
        self.enforcer = Enforcer::default();
        if let Version::Jsac(j) = &mut self.version {
            j.start = sock.now;
            j.min_rtt = None;
            j.interval = None;
            j.schedule_pos = 0;
            j.tuner = j
                .tuner_alpha_milli
                .map(|alpha| Tuner::new(j.tuning_cycle, self.fidelity, sock.now, alpha));
        }
    }

    fn ssthresh(&mut self, sock: &Sock) -> u32 {
        if let Some(epoch) = &mut self.cubic_epoch {
            epoch.on_ssthresh();
        }
        self.base.ssthresh(sock)
    }

    fn cong_avoid(&mut self, sock: &mut Sock, acked: u32) {
        if let Some(epoch) = &mut self.cubic_epoch {
            epoch.on_cong_avoid(sock, acked);
        }
        self.base.cong_avoid(sock, acked);
    }

    fn set_state(&mut self, sock: &mut Sock, new_state: CaState) {
        if let Some(epoch) = &mut self.cubic_epoch {
            epoch.on_set_state(new_state);
        }
        if new_state == CaState::Loss {
            self.enforcer.clear();
        }
        self.base.set_state(sock, new_state);
    }

    fn cwnd_event(&mut self, sock: &mut Sock, event: CaEvent) {
        if let Some(epoch) = &mut self.cubic_epoch {
            epoch.on_cwnd_event(sock, event);
        }
        self.base.cwnd_event(sock, event);
    }

    fn in_ack_event(&mut self, sock: &mut Sock, slow_path: bool) {
        self.base.in_ack_event(sock, slow_path);
    }

    /// The base's `pkts_acked`, then C2TCP's recipe: Target schedule and Tuner; for an
    /// ACK with an RTT sample outside the Linux blackout, judge the sample (MINRTT,
    /// Setpoint) → Condition Detector → Action Enforcer.
    fn pkts_acked(&mut self, sock: &mut Sock, sample: &AckSample) {
        self.base.pkts_acked(sock, sample);
        self.run_tuner(sock.now);
        let Some(rtt) = sample.rtt else { return };
        if self.in_blackout(sock) {
            return;
        }
        let judged = self.judge(rtt);
        if !self.may_act(sock) {
            return;
        }
        let action = self
            .detector
            .on_sample(sock.now, judged.good, judged.interval);
        self.enforce(sock, action, judged, rtt, sample.pkts_acked);
    }

    fn undo_cwnd(&mut self, sock: &Sock) -> u32 {
        self.base.undo_cwnd(sock)
    }

    /// `backoffs` (Bad-condition cwnd resets so far), and with the JSAC version `alpha`
    /// and `min_rtt_ms` (NaN before the first RTT sample).
    fn info(&self) -> Vec<(&'static str, f64)> {
        let mut info = vec![("backoffs", self.backoffs as f64)];
        if let Some(alpha) = self.alpha() {
            info.push(("alpha", alpha));
            let min_rtt = self.min_rtt().map_or(f64::NAN, |m| m.as_ns() as f64 / 1e6);
            info.push(("min_rtt_ms", min_rtt));
        }
        info
    }

    fn phase(&self) -> &'static str {
        match (self.detector.condition(), &self.version) {
            (Condition::Good, _) => "good",
            (Condition::Normal, Version::Jsac(_)) => "normal",
            (Condition::Normal, Version::Ifip { .. }) => "waiting",
            (Condition::Bad, _) => "bad",
        }
    }
}
