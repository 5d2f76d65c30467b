//! Linux-faithful TCP endpoints: a SACK sender with RACK-TLP, PRR and RFC 6298 timers,
//! and a delayed-ACK receiver with SACK/D-SACK and timestamps.
//!
//! The model follows Linux 6.x (`net/ipv4/tcp_input.c`, `tcp_output.c`, `tcp_timer.c`,
//! `tcp_rate.c`, `tcp_recovery.c`) function by function; `docs/tcp-model.md` lists what is
//! modelled, the constants, and what is left out. Both endpoints are sans-I/O: the event
//! loop passes `now` in, takes segments and ACKs out, and asks each endpoint when it next
//! needs attention (`next_wakeup`).
//!
//! Sequence numbers count whole segments (see [`crate::packet`]). By default a flow starts
//! established at the `now` given to [`TcpSender::new`], with no RTT sample yet, so the
//! first retransmission timeout is `rto_init` (1 s) and the first tail-loss probe also
//! waits 1 s, as after a handshake whose RTT was not measured. With `[tcp] handshake` the
//! simulator runs the three-way handshake of [`handshake`] first and builds the sender
//! with [`TcpSender::after_handshake`].
//!
//! Driving a sender (what the simulator's loop does):
//! 1. after creating it, after every [`TcpSender::on_ack`] and after every
//!    [`TcpSender::on_timer`], call [`TcpSender::poll_transmit`] until it returns `None`;
//! 2. schedule a wake-up at [`TcpSender::next_wakeup`]; at that time call `on_timer` and
//!    then poll again.

mod chrono;
pub mod handshake;
mod input;
mod output;
mod pacing;
mod rack;
mod rate;
mod receiver;
mod recovery;
mod rtt;
mod scoreboard;
mod sender;
mod sockbuf;

#[cfg(test)]
mod tests;

pub use chrono::ChronoTimes;
pub use receiver::{ReceiverStats, RecvOutcome, TcpReceiver};
pub use rtt::RttEstimator;
pub use sender::{SenderStats, TcpSender};

use cellcc_congestion::CaState;
use cellcc_units::{Dur, Time};

/// The application feeding a sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum App {
    /// Always backlogged: there is always another full segment to send.
    Bulk,
    /// A finite flow of this many payload bytes, all written at the start; the last
    /// segment may be shorter than the MSS.
    Bytes(u64),
}

/// Sender parameters (Linux defaults).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SenderConfig {
    /// Payload bytes per full segment (`mss_cache`; 1448 on Ethernet with timestamps).
    pub mss: u32,
    /// Initial congestion window, packets (`TCP_INIT_CWND`).
    pub init_cwnd: u32,
    /// Kernel tick rate (`CONFIG_HZ`): timers are rounded up to whole ticks, and
    /// congestion controls read jiffies clocks at this rate.
    pub hz: u32,
    /// Lower bound of the RTO and of `rttvar` (`TCP_RTO_MIN`).
    pub rto_min: Dur,
    /// RTO before the first RTT sample (`TCP_TIMEOUT_INIT`).
    pub rto_init: Dur,
    /// Upper bound of the backed-off RTO (`TCP_RTO_MAX`).
    pub rto_max: Dur,
    /// RACK time-based loss detection (`tcp_recovery & TCP_RACK_LOSS_DETECTION`); when
    /// off, losses are inferred with the SACK duplicate threshold (RFC 6675 style).
    pub rack: bool,
    /// Tail loss probes (`tcp_early_retrans = 3`).
    pub tlp: bool,
    /// Tick of the TCP timestamp clock (`TCP_TS_HZ` = 1000).
    pub ts_granularity: Dur,
    /// Restart from a reduced cwnd after an idle period (`tcp_slow_start_after_idle`).
    pub slow_start_after_idle: bool,
    /// `tcp_wmem`: minimum, initial and maximum send buffer, bytes. The buffer starts at
    /// the initial value, grows with cwnd (`tcp_sndbuf_expand`) up to the maximum, and
    /// bounds the data queued (unsent plus unacknowledged, each segment with its skb
    /// overhead).
    pub wmem: [u64; 3],
    /// Open the connection with a three-way handshake ([`handshake`]) instead of starting
    /// established: the SYN, SYN-ACK and ACK cross the links, and the SYN-ACK's RTT seeds
    /// the estimator.
    pub handshake: bool,
}

impl Default for SenderConfig {
    fn default() -> Self {
        SenderConfig {
            mss: 1448,
            init_cwnd: 10,
            hz: 1000,
            rto_min: Dur::from_ms(200),
            rto_init: Dur::from_secs(1),
            rto_max: Dur::from_secs(120),
            rack: true,
            tlp: true,
            ts_granularity: Dur::from_ms(1),
            slow_start_after_idle: true,
            wmem: [4096, 16_384, 4_194_304],
            handshake: false,
        }
    }
}

/// Receiver parameters (Linux defaults).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ReceiverConfig {
    /// Minimum and initial delayed-ACK timeout (`TCP_DELACK_MIN` = `TCP_ATO_MIN` = HZ/25).
    pub delack_min: Dur,
    /// Immediate ACKs at the start of the connection and after a duplicate segment
    /// (`TCP_MAX_QUICKACKS`).
    pub max_quickacks: u32,
    /// Every segment is ACKed at once: the route's `quickack 1` (`RTAX_QUICKACK`, which
    /// sets `icsk_ack.dst_quick_ack`, so `tcp_in_quickack_mode` always holds).
    pub quickack_always: bool,
    /// Tick of the receiver's TCP timestamp clock.
    pub ts_granularity: Dur,
    /// `tcp_rmem`: minimum, initial and maximum receive buffer, bytes (Linux 6.18
    /// defaults; the maximum also sets the window scale).
    pub rmem: [u64; 3],
    /// Receive-buffer autotuning (`tcp_moderate_rcvbuf`, dynamic right-sizing).
    pub autotune: bool,
    /// The receiver's own MSS (`advmss`): window growth steps and rounding.
    pub advmss: u32,
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        ReceiverConfig {
            delack_min: Dur::from_ms(40),
            max_quickacks: 16,
            quickack_always: false,
            ts_granularity: Dur::from_ms(1),
            rmem: [4096, 131_072, 33_554_432],
            autotune: true,
            advmss: 1448,
        }
    }
}

/// Typed sender events for metrics and tests. Every method defaults to a no-op, and `()`
/// ignores everything.
pub trait SenderObserver {
    /// An RTT sample fed to the RTT estimator (never from a retransmitted segment, RFC 6298 §3).
    fn rtt_sample(&mut self, _now: Time, _rtt: Dur) {}
    /// Segment `seq` was sent again (fast, timeout or probe retransmission).
    fn retransmit(&mut self, _now: Time, _seq: u64) {}
    /// The congestion-avoidance state changed (`tcp_set_ca_state`).
    fn state_change(&mut self, _now: Time, _from: CaState, _to: CaState) {}
    /// The retransmission timer expired.
    fn rto(&mut self, _now: Time) {}
}

impl SenderObserver for () {}
