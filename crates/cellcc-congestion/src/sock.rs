//! The connection state congestion controls see, and Linux's shared window helpers.
//!
//! [`Sock`] mirrors the fields of Linux's `struct tcp_sock` (and `struct sock` for pacing)
//! that congestion-control modules read or write. Sequence numbers are in whole segments:
//! the simulator sends fixed-size segments, so segment counts and Linux's byte sequence
//! space carry the same information.

use cellcc_units::{Dur, Time};

/// `TCP_INFINITE_SSTHRESH` (`include/net/tcp.h`).
pub const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// Linux's congestion-avoidance states (`enum tcp_ca_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CaState {
    /// Nothing bad has been observed.
    Open,
    /// Duplicate ACKs or SACKs seen, not yet treated as loss.
    Disorder,
    /// cwnd reduction for ECN or local congestion.
    Cwr,
    /// Fast recovery after a loss detected by SACK/RACK.
    Recovery,
    /// Retransmission timeout: everything outstanding is presumed lost.
    Loss,
}

/// Events passed to [`crate::CongestionControl::cwnd_event`] (`enum tcp_ca_event`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CaEvent {
    /// First transmission when no packets are in flight.
    TxStart,
    /// Congestion window restart after idle.
    CwndRestart,
    /// End of congestion recovery (CWR or Recovery exited).
    CompleteCwr,
    /// Loss timeout.
    Loss,
    /// ECT set, but not CE marked.
    EcnNoCe,
    /// Received CE-marked IP packet.
    EcnIsCe,
}

/// Whether the stack paces transmissions (`sk_pacing_status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum PacingStatus {
    /// No pacing (Linux without the fq qdisc); `pacing_rate` is computed but not enforced.
    #[default]
    None,
    /// The congestion control asked for pacing: internal earliest-departure-time pacing.
    Needed,
}

/// Connection state visible to congestion controls (subset of `struct tcp_sock`).
#[derive(Clone, Debug)]
pub struct Sock {
    /// Current time (`tcp_mstamp`, here with ns resolution).
    pub now: Time,
    /// Kernel tick rate used for jiffies-resolution clocks (`CONFIG_HZ`).
    pub hz: u32,
    /// Payload bytes per full segment (`mss_cache`).
    pub mss: u32,
    /// Congestion window, packets (`snd_cwnd`).
    pub cwnd: u32,
    /// Slow-start threshold, packets (`snd_ssthresh`).
    pub ssthresh: u32,
    /// Linear-increase counter (`snd_cwnd_cnt`).
    pub cwnd_cnt: u32,
    /// Upper bound on cwnd (`snd_cwnd_clamp`).
    pub cwnd_clamp: u32,
    /// cwnd saved at the start of the last reduction (`prior_cwnd`).
    pub prior_cwnd: u32,
    /// ssthresh saved for undo (`prior_ssthresh`).
    pub prior_ssthresh: u32,
    /// Segments sent and not yet cumulatively acked (`packets_out`).
    pub packets_out: u32,
    /// Segments SACKed (`sacked_out`).
    pub sacked_out: u32,
    /// Segments marked lost (`lost_out`).
    pub lost_out: u32,
    /// Retransmitted segments in flight (`retrans_out`).
    pub retrans_out: u32,
    /// Total segments delivered (acked or sacked) so far (`delivered`).
    pub delivered: u64,
    /// When `delivered` last changed (`delivered_mstamp`).
    pub delivered_mstamp: Time,
    /// When the last data segment was sent (`lsndtime`).
    pub lsndtime: Time,
    /// Earliest departure time of the next paced packet (`tcp_wstamp_ns`); `now` or
    /// earlier when nothing is held back.
    pub wstamp: Time,
    /// Total segments marked lost so far (`lost`).
    pub lost: u64,
    /// Oldest unacknowledged segment (`snd_una`, in segments).
    pub snd_una: u64,
    /// Next new segment to send (`snd_nxt`, in segments).
    pub snd_nxt: u64,
    /// Smoothed RTT (`srtt_us >> 3`); zero before the first sample.
    pub srtt: Dur,
    /// Windowed minimum RTT (`tcp_min_rtt`); [`Dur::MAX`] before the first sample.
    pub min_rtt: Dur,
    /// Congestion-avoidance state (`icsk_ca_state`).
    pub ca_state: CaState,
    /// Whether the flow was limited by cwnd in the last window (`is_cwnd_limited`).
    pub is_cwnd_limited: bool,
    /// Largest `packets_out` in the last window (`max_packets_out`).
    pub max_packets_out: u32,
    /// Non-zero while application-limited: the `delivered` mark at which the app-limited
    /// phase ends (`app_limited`).
    pub app_limited: u64,
    /// Pacing rate in bytes per second (`sk_pacing_rate`).
    pub pacing_rate: u64,
    /// Maximum pacing rate (`sk_max_pacing_rate`).
    pub max_pacing_rate: u64,
    /// Whether pacing is enforced (`sk_pacing_status`).
    pub pacing_status: PacingStatus,
    /// Packets per TSO burst the stack would build (`tcp_tso_autosize`); 1 disables TSO
    /// modelling.
    pub tso_segs: u32,
    /// TSval of the last valid ACK, in the peer's timestamp ticks (`rx_opt.rcv_tsval`).
    /// The simulated receiver's clock ticks every `ts_granularity` from time zero.
    pub rcv_tsval: u32,
    /// TSecr of the last valid ACK: the echoed TSval of the segment that triggered it,
    /// in this sender's ticks (`rx_opt.rcv_tsecr`).
    pub rcv_tsecr: u32,
    /// Length of one timestamp tick on both ends (Linux: 1 ms, `TCP_TS_HZ`).
    pub ts_granularity: Dur,
    /// Set by a congestion control inside [`crate::CongestionControl::cong_avoid`] to
    /// reduce cwnd as Linux's `tcp_enter_cwr` does (CDG's delay-gradient backoff). The
    /// stack clears it as soon as the hook returns and, unless the connection is already
    /// in CWR, Recovery or Loss, enters CWR: `prior_cwnd := cwnd`,
    /// `ssthresh := ssthresh()`, then PRR down to ssthresh until `high_seq` is acked.
    pub cwr_request: bool,
}

impl Sock {
    /// A fresh connection: `TCP_INIT_CWND = 10`, ssthresh infinite, no RTT yet.
    pub fn new(mss: u32, now: Time) -> Self {
        Sock {
            now,
            hz: 1000,
            mss,
            cwnd: 10,
            ssthresh: INFINITE_SSTHRESH,
            cwnd_cnt: 0,
            cwnd_clamp: u32::MAX / 2,
            prior_cwnd: 0,
            prior_ssthresh: 0,
            packets_out: 0,
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            delivered: 0,
            delivered_mstamp: now,
            lsndtime: now,
            wstamp: now,
            lost: 0,
            snd_una: 0,
            snd_nxt: 0,
            srtt: Dur::ZERO,
            min_rtt: Dur::MAX,
            ca_state: CaState::Open,
            is_cwnd_limited: false,
            max_packets_out: 0,
            app_limited: 0,
            pacing_rate: 0,
            max_pacing_rate: u64::MAX,
            pacing_status: PacingStatus::None,
            tso_segs: 1,
            rcv_tsval: 0,
            rcv_tsecr: 0,
            ts_granularity: Dur::from_ms(1),
            cwr_request: false,
        }
    }

    /// `tcp_jiffies32`: `now` in kernel ticks.
    pub fn jiffies(&self) -> u64 {
        self.now.as_ns() / (1_000_000_000 / self.hz as u64)
    }

    /// Convert a duration to jiffies (floor).
    pub fn dur_to_jiffies(&self, d: Dur) -> u64 {
        d.as_ns() / (1_000_000_000 / self.hz as u64)
    }

    /// `tcp_packets_in_flight`: `packets_out - (sacked_out + lost_out) + retrans_out`.
    pub fn packets_in_flight(&self) -> u32 {
        (self.packets_out - (self.sacked_out + self.lost_out).min(self.packets_out))
            + self.retrans_out
    }

    /// `tcp_in_slow_start`: cwnd below ssthresh.
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// `tcp_is_cwnd_limited`: grow cwnd only if the flow used it (in slow start, while
    /// cwnd < 2 × the largest flight of the last window).
    pub fn is_cwnd_limited(&self) -> bool {
        if self.in_slow_start() {
            return self.cwnd < 2 * self.max_packets_out;
        }
        self.is_cwnd_limited
    }

    /// `tcp_current_ssthresh`: ssthresh during CWR/Recovery, else at least ¾·cwnd.
    pub fn current_ssthresh(&self) -> u32 {
        if matches!(self.ca_state, CaState::Cwr | CaState::Recovery) {
            self.ssthresh
        } else {
            self.ssthresh.max((self.cwnd >> 1) + (self.cwnd >> 2))
        }
    }

    /// `tcp_slow_start`: `cwnd = min(cwnd + acked, ssthresh)`; returns the `acked` left
    /// over once cwnd reached ssthresh (to be used by congestion avoidance).
    pub fn slow_start(&mut self, acked: u32) -> u32 {
        let cwnd = self.cwnd.saturating_add(acked).min(self.ssthresh);
        let left = acked - (cwnd - self.cwnd);
        self.cwnd = cwnd.min(self.cwnd_clamp);
        left
    }

    /// `tcp_cong_avoid_ai`: increase cwnd by `acked / w` packets, carrying the remainder
    /// in `cwnd_cnt`.
    pub fn cong_avoid_ai(&mut self, w: u32, acked: u32) {
        let w = w.max(1);
        // If credits accumulated at a higher w, apply them gently now.
        if self.cwnd_cnt >= w {
            self.cwnd_cnt = 0;
            self.cwnd += 1;
        }
        self.cwnd_cnt += acked;
        if self.cwnd_cnt >= w {
            let delta = self.cwnd_cnt / w;
            self.cwnd_cnt -= delta * w;
            self.cwnd += delta;
        }
        self.cwnd = self.cwnd.min(self.cwnd_clamp);
    }
}

/// Argument of [`crate::CongestionControl::pkts_acked`] (`struct ack_sample`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckSample {
    /// Packets newly acked or sacked by this ACK.
    pub pkts_acked: u32,
    /// RTT of the most recently sent newly acked, never retransmitted packet (`ca_rtt`).
    pub rtt: Option<Dur>,
    /// Packets in flight before this ACK was processed.
    pub in_flight: u32,
}

/// Linux's per-ACK delivery-rate sample (`struct rate_sample`, `net/ipv4/tcp_rate.c`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RateSample {
    /// Send time of the packet the sample starts from (`prior_mstamp`).
    pub prior_mstamp: Time,
    /// `delivered` when that packet was sent (`prior_delivered`).
    pub prior_delivered: u64,
    /// Packets delivered over `interval` (`delivered`).
    pub delivered: u64,
    /// Sampling interval (`interval_us`); `None` if the sample is invalid.
    pub interval: Option<Dur>,
    /// Send-side interval (`snd_interval_us`).
    pub snd_interval: Dur,
    /// ACK-side interval (`rcv_interval_us`).
    pub rcv_interval: Dur,
    /// RTT of the last (S)ACKed packet (`rtt_us`); `None` if no valid sample.
    pub rtt: Option<Dur>,
    /// Packets marked lost while processing this ACK (`losses`).
    pub losses: u32,
    /// Packets newly acked or sacked (`acked_sacked`).
    pub acked_sacked: u32,
    /// Packets in flight before this ACK (`prior_in_flight`).
    pub prior_in_flight: u32,
    /// The sample came from an application-limited period (`is_app_limited`).
    pub is_app_limited: bool,
    /// The sample's packet was a retransmission (`is_retrans`).
    pub is_retrans: bool,
    /// The ACK was likely delayed by the receiver (`is_ack_delayed`).
    pub is_ack_delayed: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sock(cwnd: u32, ssthresh: u32) -> Sock {
        let mut s = Sock::new(1448, Time::ZERO);
        s.cwnd = cwnd;
        s.ssthresh = ssthresh;
        s
    }

    #[test]
    fn slow_start_stops_at_ssthresh_and_returns_leftover() {
        let mut s = sock(10, 14);
        // 10 + 6 would be 16; capped at 14 with 2 acked left over.
        assert_eq!(s.slow_start(6), 2);
        assert_eq!(s.cwnd, 14);
        let mut s = sock(10, INFINITE_SSTHRESH);
        // Stretch ACKs count fully (no ABC cap of 2).
        assert_eq!(s.slow_start(8), 0);
        assert_eq!(s.cwnd, 18);
    }

    #[test]
    fn cong_avoid_ai_adds_one_packet_per_window() {
        let mut s = sock(20, 10);
        for _ in 0..19 {
            s.cong_avoid_ai(20, 1);
        }
        assert_eq!((s.cwnd, s.cwnd_cnt), (20, 19));
        s.cong_avoid_ai(20, 1);
        assert_eq!((s.cwnd, s.cwnd_cnt), (21, 0));
        // A stretch ACK of 45 at w = 21: +2, remainder 3.
        s.cong_avoid_ai(21, 45);
        assert_eq!((s.cwnd, s.cwnd_cnt), (23, 3));
        // Pending credit above w is applied first, as one packet.
        s.cwnd_cnt = 30;
        s.cong_avoid_ai(23, 1);
        assert_eq!((s.cwnd, s.cwnd_cnt), (24, 1));
    }

    #[test]
    fn in_flight_and_current_ssthresh() {
        let mut s = sock(40, 100);
        s.packets_out = 30;
        s.sacked_out = 5;
        s.lost_out = 3;
        s.retrans_out = 2;
        assert_eq!(s.packets_in_flight(), 24);
        assert_eq!(s.current_ssthresh(), 100);
        s.ssthresh = 10;
        assert_eq!(s.current_ssthresh(), 30);
        s.ca_state = CaState::Recovery;
        assert_eq!(s.current_ssthresh(), 10);
    }

    #[test]
    fn cwnd_limited_in_slow_start_uses_max_packets_out() {
        let mut s = sock(10, INFINITE_SSTHRESH);
        s.max_packets_out = 5;
        assert!(!s.is_cwnd_limited());
        s.max_packets_out = 6;
        assert!(s.is_cwnd_limited());
    }
}
