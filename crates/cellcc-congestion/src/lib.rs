//! Congestion-control algorithms behind one trait shaped like Linux's `tcp_congestion_ops`.
//!
//! The crate is sans-I/O: an algorithm never reads a clock, an RNG or the environment.
//! The TCP stack owns a [`Sock`] (the fields of `struct tcp_sock` that congestion controls
//! read or write), passes it to each hook with `now` already set, and applies what the
//! hook wrote back (`cwnd`, `ssthresh`, `pacing_rate`, ...).
//!
//! Hooks keep the kernel's names and call order (see [`CongestionControl`]) so that an
//! algorithm written here and its eBPF `struct_ops` port read line for line alike, and
//! the interplay of hooks (for example Cubic's `pkts_acked` before `cong_avoid`, or PRR
//! overriding `cong_avoid` in Recovery) is reproduced exactly.

pub mod bbr;
pub mod c2tcp;
pub mod cdg;
pub mod cesar;
pub mod config;
pub mod copa;
pub mod cubic;
pub mod feedback;
pub mod fixed;
pub mod illinois;
pub mod ledbat;
pub mod minmax;
pub mod proprate;
pub mod reno;
pub mod sock;
pub mod sprout;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod vegas;
pub mod verus;
pub mod vivace;
pub mod westwood;

pub use cellcc_units::{Bandwidth, Dur, Time};
pub use config::ConfigError;
pub use feedback::{ReceiverAgent, ReceiverFeedback};
pub use sock::{AckSample, CaEvent, CaState, PacingStatus, RateSample, Sock, INFINITE_SSTHRESH};

/// A congestion-control algorithm. One value per connection.
///
/// Call order per incoming ACK (Linux 6.x `tcp_ack`):
/// 0. [`on_receiver_feedback`](Self::on_receiver_feedback), only for schemes with a
///    [`receiver_agent`](Self::receiver_agent) (not a Linux hook)
/// 1. [`in_ack_event`](Self::in_ack_event)
/// 2. [`pkts_acked`](Self::pkts_acked) (from `tcp_clean_rtx_queue`, when packets were
///    newly acked or sacked)
/// 3. loss-recovery state machine, which may call [`ssthresh`](Self::ssthresh) and
///    [`set_state`](Self::set_state)
/// 4. either [`cong_control`](Self::cong_control) (if [`owns_cwnd`](Self::owns_cwnd)),
///    or PRR in CWR/Recovery, or [`cong_avoid`](Self::cong_avoid) when cwnd may be raised;
///    then the default pacing-rate update for algorithms that do not own cwnd.
///
/// Units: windows in packets (segments of `sock.mss` payload bytes), times as
/// [`Time`]/[`Dur`] (ns), rates in bytes per second as in `sk_pacing_rate`.
pub trait CongestionControl: std::fmt::Debug + Send {
    /// Short lowercase name as used in scenario files (`"cubic"`).
    fn name(&self) -> &'static str;

    /// `init`: the connection is established. May set `sock.pacing_status` to
    /// [`PacingStatus::Needed`] to turn on internal (EDT) pacing, and set an initial
    /// `sock.pacing_rate`.
    fn init(&mut self, _sock: &mut Sock) {}

    /// `ssthresh`: a congestion event (entering Recovery, CWR or Loss). Returns the new
    /// slow-start threshold in packets; the stack stores it in `sock.ssthresh`.
    fn ssthresh(&mut self, sock: &Sock) -> u32;

    /// `cong_avoid`: per ACK, when the algorithm does not own cwnd, the connection is in
    /// Open or Disorder state and `tcp_may_raise_cwnd` holds. `acked` = packets newly
    /// (S)ACKed by this ACK. Writes `sock.cwnd` (and `sock.cwnd_cnt`).
    ///
    /// Default: nothing. Linux requires a congestion control to provide `cong_avoid` or
    /// `cong_control` (`tcp_validate_congestion_control` in `tcp_cong.c`); here an
    /// algorithm either owns cwnd ([`owns_cwnd`](Self::owns_cwnd) and
    /// [`cong_control`](Self::cong_control)) and leaves this hook alone, or overrides it.
    /// Rust cannot see whether a default method was overridden, and a flag saying so
    /// could drift from the code, so the rule is checked by behaviour instead:
    /// `testing::check_cong_avoid_or_cong_control` (feature `testing`) acks one packet
    /// of a cwnd-limited flow in slow start and requires cwnd to grow, and the scheme
    /// registry's tests run it on every registered scheme.
    fn cong_avoid(&mut self, _sock: &mut Sock, _acked: u32) {}

    /// `cong_control`: per ACK, for algorithms that own cwnd and pacing
    /// ([`owns_cwnd`](Self::owns_cwnd) returns true); replaces PRR and `cong_avoid`.
    /// Receives Linux's per-ACK delivery-rate sample (`tcp_rate.c`).
    fn cong_control(&mut self, _sock: &mut Sock, _rs: &RateSample) {}

    /// Whether this algorithm implements `cong_control` (BBR, César); it then needs no
    /// `cong_avoid`.
    fn owns_cwnd(&self) -> bool {
        false
    }

    /// `set_state`: the congestion-avoidance state is about to change to `new_state`
    /// (`sock.ca_state` still holds the old state).
    fn set_state(&mut self, _sock: &mut Sock, _new_state: CaState) {}

    /// `cwnd_event`: a congestion-window event (transmission start after idle, loss
    /// timeout, end of CWR, ...).
    fn cwnd_event(&mut self, _sock: &mut Sock, _event: CaEvent) {}

    /// `in_ack_event`: an ACK arrived. `slow_path` is true for ACKs that carried SACK
    /// information or did not advance `snd_una` (Linux `CA_ACK_SLOWPATH`).
    fn in_ack_event(&mut self, _sock: &mut Sock, _slow_path: bool) {}

    /// `pkts_acked`: packets were newly acked or sacked; carries the RTT sample of the
    /// most recently sent newly acked packet (`ca_rtt`), if any.
    fn pkts_acked(&mut self, _sock: &mut Sock, _sample: &AckSample) {}

    /// `undo_cwnd`: a congestion event was found spurious; returns the cwnd to restore.
    /// Default: Reno's `max(cwnd, prior_cwnd)`.
    fn undo_cwnd(&mut self, sock: &Sock) -> u32 {
        sock.cwnd.max(sock.prior_cwnd)
    }

    /// `min_tso_segs`: the fewest segments the stack puts in one TSO/GSO burst
    /// (`tcp_tso_segs`); a paced sender sends its bursts whole at each pacing release.
    /// Default: `None`, the `tcp_min_tso_segs` sysctl (2).
    fn min_tso_segs(&self, _sock: &Sock) -> Option<u32> {
        None
    }

    /// A receiver-side agent for this connection, for schemes whose receiver models the
    /// link and feeds the result back (Sprout); see [`crate::feedback`]. Asked once, when
    /// the flow starts. Default: none, and ACKs carry no feedback.
    fn receiver_agent(&self) -> Option<Box<dyn ReceiverAgent>> {
        None
    }

    /// A valid ACK (not older than `snd_una`, not acknowledging unsent data) carried the
    /// agent's feedback. Called before [`in_ack_event`](Self::in_ack_event), with
    /// `sock.now` the ACK's arrival time. Only schemes with a receiver agent get it.
    fn on_receiver_feedback(&mut self, _sock: &mut Sock, _feedback: &ReceiverFeedback) {}

    /// A short label of the algorithm's internal phase (e.g. `"startup"`), reported in
    /// time series. Empty when the algorithm has no phases beyond the TCP state.
    fn phase(&self) -> &'static str {
        ""
    }

    /// Named internal estimates worth reporting at the end of a run (e.g. César's
    /// scheduling unit `("su_ms", 5.0)`), in the units their names say. Empty by default.
    fn info(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }
}
