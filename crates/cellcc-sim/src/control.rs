//! Congestion control from outside the crate: schemes named by an import path, and
//! per-interval control (the model of CCP, Narayan et al., SIGCOMM 2018).
//!
//! A flow's `scheme` either names a built-in scheme ([`crate::schemes`]) or is an
//! *external* name of the form `module.path:Name`. External names are checked for their
//! form when the scenario loads; the algorithm behind one comes from an
//! [`ExternalSchemes`] factory handed to [`crate::Simulation::with_external`] (the Python
//! binding provides one that imports the class). A factory returns either
//!
//! - [`External::Cc`]: a [`CongestionControl`] driven per ACK through the Linux hooks like
//!   any built-in scheme, or
//! - [`External::Interval`]: per-interval control. A base scheme (a built-in one, or
//!   [`Held`]: a window and pacing rate set only from outside) runs per ACK; the
//!   simulator folds per-ACK measurements of the flow into an [`IntervalReport`] and, at
//!   every interval boundary, asks an [`IntervalPolicy`] for a [`Decision`] (new cwnd
//!   and/or pacing rate), applied at once. With no policy, the run stops at each
//!   boundary and [`crate::Simulation::step`] returns the report so the caller (a
//!   reinforcement-learning environment) decides ([`crate::Simulation::decide`]).
//!
//! Timing: boundaries of flow `i` fall at `start + k × interval` (or, per RTT, one
//! smoothed RTT after the previous boundary). A boundary runs before every other event
//! at the same nanosecond, so interval `k` holds exactly the ACKs that arrived in
//! `[t_k, t_{k+1})`. The decision takes effect at `t_{k+1}`: the sender may transmit at
//! that instant under the new window or rate.
//!
//! Differences from CCP's datapath (ccp-project/portus, libccp):
//! 1. The fold is fixed (the measurements of [`IntervalReport`]); CCP compiles a
//!    user-written fold program into the datapath.
//! 2. Reports are synchronous: the decision applies at the boundary itself, with no
//!    agent round trip (CCP's agent answers after an IPC delay).
//! 3. No ECN: the TCP model does not mark or echo CE (`docs/tcp-model.md`), so reports
//!    carry no ECN counts.

use cellcc_congestion::{CaState, CongestionControl, PacingStatus, RateSample, Sock};
use cellcc_units::{Dur, Time};

use crate::schemes::SchemeError;
use crate::tcp::TcpSender;

/// Whether a scheme name is external (`module:Name`) rather than built in.
pub fn is_external(name: &str) -> bool {
    name.contains(':')
}

/// Why an external name is malformed, if it is. The form is Python's import path:
/// dotted identifiers, a colon, then a dotted attribute path (`mypkg.cc:MyReno`).
pub fn check_external_name(name: &str) -> Result<(), String> {
    let (module, attr) = name.split_once(':').ok_or_else(|| {
        format!("{name:?} is not an import path: expected \"module.path:ClassName\"")
    })?;
    let dotted = |s: &str| {
        !s.is_empty()
            && s.split('.').all(|part| {
                let mut chars = part.chars();
                chars
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
    };
    if !dotted(module) || !dotted(attr) {
        return Err(format!(
            "{name:?} is not an import path: expected \"module.path:ClassName\" \
             (dotted identifiers on both sides of one colon)"
        ));
    }
    Ok(())
}

/// A built-in scheme is built once with its parameters; an external one (`module:Name`)
/// is checked for its form only.
pub(crate) fn check_scheme(
    scheme: &str,
    params: &toml::Table,
) -> Result<(), crate::schemes::SchemeError> {
    if is_external(scheme) {
        return check_external_name(scheme).map_err(|message| crate::schemes::SchemeError {
            key: "scheme".into(),
            message,
        });
    }
    crate::schemes::build(scheme, params, 0).map(drop)
}

/// Builds the algorithm behind an external scheme name, once per flow.
pub trait ExternalSchemes: Send {
    /// The controller of flow `flow` (its index among the run's flows), named `scheme`
    /// with the flow's `params`; `seed` is the flow's seed. Errors name the key relative
    /// to the flow (`scheme` or `params.<key>`).
    fn build(
        &mut self,
        flow: u32,
        scheme: &str,
        params: &toml::Table,
        seed: u64,
    ) -> Result<External, SchemeError>;
}

/// What an [`ExternalSchemes`] factory returns for one flow.
pub enum External {
    /// A congestion control driven per ACK.
    Cc(Box<dyn CongestionControl>),
    /// Per-interval control over a base scheme.
    Interval(IntervalControl),
}

/// Per-interval control of one flow.
pub struct IntervalControl {
    /// The scheme that runs per ACK between decisions.
    pub base: Box<dyn CongestionControl>,
    /// When boundaries fall.
    pub clock: IntervalClock,
    /// Who decides at a boundary; `None`: the caller of [`crate::Simulation::step`].
    pub policy: Option<Box<dyn IntervalPolicy>>,
}

/// When a flow's interval boundaries fall.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntervalClock {
    /// Every fixed duration from the flow's start.
    Every(Dur),
    /// One smoothed RTT after the previous boundary (at least [`MIN_INTERVAL`]); the
    /// given duration until the flow has an RTT sample.
    PerRtt(Dur),
}

/// The shortest interval a per-RTT clock uses (keeps a tiny RTT from flooding the
/// policy with empty reports).
pub const MIN_INTERVAL: Dur = Dur::from_ms(1);

impl IntervalClock {
    fn next(&self, now: Time, sock: &Sock) -> Time {
        match *self {
            IntervalClock::Every(d) => now + d,
            IntervalClock::PerRtt(first) if sock.srtt.is_zero() => now + first,
            IntervalClock::PerRtt(_) => now + sock.srtt.max(MIN_INTERVAL),
        }
    }
}

/// Decides a flow's window and rate once per interval.
pub trait IntervalPolicy: Send {
    /// The decision for the interval that starts now, given the one that just ended.
    fn decide(&mut self, report: &IntervalReport) -> Result<Decision, String>;
}

/// A policy's answer; `None` fields leave the value as it is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Decision {
    /// Congestion window, packets (at least 1; capped at `cwnd_clamp`).
    pub cwnd: Option<u32>,
    /// Pacing rate, bytes per second (`sk_pacing_rate`); turns internal pacing on.
    pub pacing_rate: Option<u64>,
}

/// What happened to a flow over one interval, and its state at the boundary.
///
/// Counts are differences of the sender's counters between two boundaries; RTT
/// statistics are over the RTT samples the sender fed its estimator in the interval
/// (RFC 6298 §3: never from a retransmitted segment), `None` when there was none.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IntervalReport {
    /// The flow's index among the run's flows.
    pub flow: u32,
    /// The boundary (end of the interval).
    pub t: Time,
    /// The interval's length.
    pub interval: Dur,
    /// ACKs received.
    pub acks: u64,
    /// Segments newly delivered, cumulatively ACKed or SACKed (`tp->delivered`).
    pub delivered_pkts: u64,
    /// Segments newly cumulatively ACKed (`snd_una` advance): in-order data the
    /// receiving application got (goodput). Lower than `delivered_pkts` while SACKed
    /// data waits behind a hole.
    pub acked_pkts: u64,
    /// Segments marked lost (`tp->lost`).
    pub lost_pkts: u64,
    /// Segments sent, retransmissions included.
    pub sent_pkts: u64,
    /// Retransmitted segments among them.
    pub retrans_pkts: u64,
    /// Payload bytes sent, retransmissions included.
    pub sent_bytes: u64,
    /// Payload bytes delivered (`delivered_pkts × mss`).
    pub delivered_bytes: u64,
    /// RTT samples taken.
    pub rtt_samples: u64,
    /// Smallest RTT sample of the interval.
    pub rtt_min: Option<Dur>,
    /// Mean of the interval's RTT samples (truncated to the nanosecond).
    pub rtt_mean: Option<Dur>,
    /// Largest RTT sample of the interval.
    pub rtt_max: Option<Dur>,
    /// The interval's first RTT sample (with `rtt_last`: Aurora's latency gradient).
    pub rtt_first: Option<Dur>,
    /// The interval's last RTT sample.
    pub rtt_last: Option<Dur>,
    /// State at the boundary: window, packets.
    pub cwnd: u32,
    /// Slow-start threshold at the boundary, packets.
    pub ssthresh: u32,
    /// Packets in flight (`tcp_packets_in_flight`).
    pub in_flight: u32,
    /// Bytes per second (`sk_pacing_rate`).
    pub pacing_rate: u64,
    /// Smoothed RTT; zero before the first sample.
    pub srtt: Dur,
    /// The connection's windowed minimum RTT; `None` before the first sample.
    pub min_rtt: Option<Dur>,
    /// Linux congestion-avoidance state at the boundary (Open, Disorder, CWR, Recovery, Loss).
    pub ca_state: CaState,
    /// Payload bytes per full segment.
    pub mss: u32,
}

/// Per-ACK measurements of one flow since the last boundary.
#[derive(Clone, Debug)]
pub(crate) struct IntervalFold {
    start: Time,
    acks: u64,
    delivered: u64,
    una: u64,
    lost: u64,
    sent: u64,
    retrans: u64,
    sent_bytes: u64,
    rtt_n: u64,
    rtt_sum_ns: u128,
    rtt_min: Dur,
    rtt_max: Dur,
    rtt_first: Option<Dur>,
    rtt_last: Option<Dur>,
}

impl IntervalFold {
    fn new(now: Time, s: &TcpSender) -> Self {
        let sock = s.sock();
        let st = s.stats();
        IntervalFold {
            start: now,
            acks: st.acks_received,
            delivered: sock.delivered,
            una: sock.snd_una,
            lost: sock.lost,
            sent: st.segments_sent,
            retrans: st.retransmissions,
            sent_bytes: st.bytes_sent,
            rtt_n: 0,
            rtt_sum_ns: 0,
            rtt_min: Dur::MAX,
            rtt_max: Dur::ZERO,
            rtt_first: None,
            rtt_last: None,
        }
    }

    /// One RTT sample (called by the simulator's sender observer).
    pub(crate) fn rtt(&mut self, rtt: Dur) {
        self.rtt_n += 1;
        self.rtt_sum_ns += u128::from(rtt.as_ns());
        self.rtt_min = self.rtt_min.min(rtt);
        self.rtt_max = self.rtt_max.max(rtt);
        self.rtt_first.get_or_insert(rtt);
        self.rtt_last = Some(rtt);
    }

    /// The report of the interval ending now; the fold restarts from here.
    fn close(&mut self, flow: u32, now: Time, s: &TcpSender) -> IntervalReport {
        let sock = s.sock();
        let st = s.stats();
        let delivered = sock.delivered - self.delivered;
        let some = self.rtt_n > 0;
        let report = IntervalReport {
            flow,
            t: now,
            interval: now.saturating_since(self.start),
            acks: st.acks_received - self.acks,
            delivered_pkts: delivered,
            acked_pkts: sock.snd_una - self.una,
            lost_pkts: sock.lost - self.lost,
            sent_pkts: st.segments_sent - self.sent,
            retrans_pkts: st.retransmissions - self.retrans,
            sent_bytes: st.bytes_sent - self.sent_bytes,
            delivered_bytes: delivered * u64::from(sock.mss),
            rtt_samples: self.rtt_n,
            rtt_min: some.then_some(self.rtt_min),
            rtt_mean: some.then(|| Dur::from_ns((self.rtt_sum_ns / u128::from(self.rtt_n)) as u64)),
            rtt_max: some.then_some(self.rtt_max),
            rtt_first: self.rtt_first,
            rtt_last: self.rtt_last,
            cwnd: sock.cwnd,
            ssthresh: sock.ssthresh,
            in_flight: sock.packets_in_flight(),
            pacing_rate: sock.pacing_rate,
            srtt: sock.srtt,
            min_rtt: (sock.min_rtt != Dur::MAX).then_some(sock.min_rtt),
            ca_state: sock.ca_state,
            mss: sock.mss,
        };
        *self = IntervalFold::new(now, s);
        report
    }
}

/// The per-interval state the simulator keeps for a flow under interval control.
pub(crate) struct FlowControl {
    pub(crate) clock: IntervalClock,
    pub(crate) policy: Option<Box<dyn IntervalPolicy>>,
    pub(crate) fold: Option<IntervalFold>,
}

impl FlowControl {
    pub(crate) fn new(clock: IntervalClock, policy: Option<Box<dyn IntervalPolicy>>) -> Self {
        FlowControl {
            clock,
            policy,
            fold: None,
        }
    }

    /// The flow started now: the first interval begins; returns its boundary.
    pub(crate) fn start(&mut self, now: Time, s: &TcpSender) -> Time {
        self.fold = Some(IntervalFold::new(now, s));
        self.clock.next(now, s.sock())
    }

    /// Close the interval ending now.
    pub(crate) fn close(&mut self, flow: u32, now: Time, s: &TcpSender) -> IntervalReport {
        self.fold
            .get_or_insert_with(|| IntervalFold::new(now, s))
            .close(flow, now, s)
    }

    /// The next boundary after the one at `now`.
    pub(crate) fn next(&self, now: Time, s: &TcpSender) -> Time {
        self.clock.next(now, s.sock())
    }
}

/// A decision that cannot be applied, or a policy that failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("flow {flow} at t = {t_s:.6} s: {message}")]
pub struct ControlError {
    /// The flow's index among the run's flows.
    pub flow: u32,
    /// Simulated time of the failure, seconds.
    pub t_s: f64,
    /// What went wrong.
    pub message: String,
}

impl Decision {
    /// Write the decision into the sender's connection state.
    pub(crate) fn apply(&self, now: Time, s: &mut TcpSender) -> Result<(), String> {
        if self.pacing_rate.is_some() && !s.cc().owns_cwnd() {
            return Err(format!(
                "a pacing rate needs a base scheme that owns cwnd and pacing (\"held\"); \
                 {:?} recomputes the pacing rate on every ACK",
                s.cc().name()
            ));
        }
        if self.cwnd == Some(0) {
            return Err("cwnd must be at least 1 packet".into());
        }
        if self.pacing_rate == Some(0) {
            return Err("pacing_rate must be positive".into());
        }
        s.set_window_and_rate(now, self.cwnd, self.pacing_rate);
        Ok(())
    }
}

/// Parameters of [`Held`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeldConfig {
    /// Initial window, packets.
    pub cwnd: u32,
    /// Initial pacing rate, bytes per second; `None`: no pacing until a decision sets
    /// one.
    pub pacing_rate: Option<u64>,
}

impl Default for HeldConfig {
    fn default() -> Self {
        HeldConfig {
            cwnd: 10,
            pacing_rate: None,
        }
    }
}

/// The base scheme of pure per-interval control: owns cwnd and pacing and never changes
/// them; only decisions do (CCP's datapath between two agent updates). Linux's loss
/// timeout still sets `cwnd = in_flight + 1` (`tcp_enter_loss` applies to every
/// congestion control), and that window stands until the next decision.
#[derive(Clone, Debug)]
pub struct Held {
    cfg: HeldConfig,
}

impl Held {
    /// The scheme name scenarios use for it.
    pub const NAME: &'static str = "held";

    /// A controller that holds `cfg`'s window and pacing rate until a decision changes them.
    pub fn new(cfg: HeldConfig) -> Self {
        Held { cfg }
    }
}

impl CongestionControl for Held {
    fn name(&self) -> &'static str {
        Held::NAME
    }

    fn init(&mut self, sock: &mut Sock) {
        sock.cwnd = self.cfg.cwnd.clamp(1, sock.cwnd_clamp);
        if let Some(rate) = self.cfg.pacing_rate {
            sock.pacing_status = PacingStatus::Needed;
            sock.pacing_rate = rate;
        }
    }

    fn ssthresh(&mut self, sock: &Sock) -> u32 {
        sock.cwnd.max(2)
    }

    fn cong_control(&mut self, _sock: &mut Sock, _rs: &RateSample) {}

    fn owns_cwnd(&self) -> bool {
        true
    }

    fn undo_cwnd(&mut self, sock: &Sock) -> u32 {
        sock.cwnd
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn external_names_have_the_import_path_form() {
        assert!(is_external("mypkg.cc:MyReno"));
        assert!(!is_external("cubic"));
        assert!(check_external_name("mypkg.cc:MyReno").is_ok());
        assert!(check_external_name("m:Outer.Inner").is_ok());
        assert!(check_external_name("_p1.q:_C").is_ok());
        for bad in [
            ":C", "m:", "m::C", "1m:C", "m.:C", "m:C.", "m-x:C", "m:C:D", "m :C",
        ] {
            let err = check_external_name(bad).unwrap_err();
            assert!(err.contains("import path"), "{bad}: {err}");
        }
    }

    #[test]
    fn per_rtt_clock_waits_for_a_sample_and_has_a_floor() {
        let mut sock = Sock::new(1448, Time::ZERO);
        let clock = IntervalClock::PerRtt(Dur::from_ms(100));
        let now = Time::ZERO + Dur::from_ms(5);
        assert_eq!(clock.next(now, &sock), now + Dur::from_ms(100));
        sock.srtt = Dur::from_ms(40);
        assert_eq!(clock.next(now, &sock), now + Dur::from_ms(40));
        sock.srtt = Dur::from_us(10);
        assert_eq!(clock.next(now, &sock), now + MIN_INTERVAL);
        let every = IntervalClock::Every(Dur::from_ms(20));
        assert_eq!(every.next(now, &sock), now + Dur::from_ms(20));
    }

    #[test]
    fn held_keeps_what_it_was_given() {
        let mut cc = Held::new(HeldConfig {
            cwnd: 7,
            pacing_rate: Some(125_000),
        });
        let mut sock = Sock::new(1448, Time::ZERO);
        cc.init(&mut sock);
        assert_eq!((sock.cwnd, sock.pacing_rate), (7, 125_000));
        assert_eq!(sock.pacing_status, PacingStatus::Needed);
        sock.cwnd = 30;
        cc.cong_control(&mut sock, &RateSample::default());
        assert_eq!(sock.cwnd, 30, "a decision's window is not undone");
        assert_eq!(cc.ssthresh(&sock), 30);
    }
}
