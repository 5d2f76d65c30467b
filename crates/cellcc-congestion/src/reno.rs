//! NewReno: Linux's default-fallback congestion control (`tcp_reno_*` in
//! `net/ipv4/tcp_cong.c`, Linux 6.x).
//!
//! Sources:
//! - RFC 5681 (TCP Congestion Control, 2009) §3.1: slow start and congestion avoidance.
//! - RFC 6582 (The NewReno Modification to TCP's Fast Recovery, 2012): the recovery
//!   half of "NewReno" lives in the TCP stack (SACK/RACK + PRR), not in this module.
//! - Linux `net/ipv4/tcp_cong.c` 6.x: `tcp_reno_cong_avoid`, `tcp_reno_ssthresh`,
//!   `tcp_reno_undo_cwnd`, with the helpers `tcp_slow_start` and `tcp_cong_avoid_ai`
//!   (here [`Sock::slow_start`] and [`Sock::cong_avoid_ai`]).
//!
//! Model: below ssthresh, cwnd grows by one packet per packet acked (doubling per RTT);
//! at or above it, by one packet per cwnd packets acked (+1 packet per RTT), with the
//! fractional part carried in `cwnd_cnt`. A congestion event halves cwnd.
//!
//! ```text
//!              cwnd >= ssthresh
//!   slow_start ----------------> cong_avoid
//!       ^                            |
//!       +---- RTO (cwnd := 1) -------+     fast recovery: ssthresh := cwnd/2,
//!                                           PRR in the stack, then cong_avoid
//! ```
//!
//! Differences from RFC 5681 (all inherited from Linux):
//! 1. ssthresh is half of cwnd, not half of FlightSize (RFC 5681 Eq. 4), floored at 2
//!    packets.
//! 2. Slow start counts every packet a (stretch) ACK covers; there is no RFC 3465 limit
//!    of 2 packets per ACK.
//! 3. cwnd grows only while the flow is cwnd-limited (`tcp_is_cwnd_limited`,
//!    in the spirit of RFC 7661).
//! 4. Congestion avoidance counts acked packets (`cwnd_cnt`) rather than bytes, and
//!    leftover packets of an ACK that crosses ssthresh feed congestion avoidance.
//! 5. A congestion event later found spurious is undone to `max(cwnd, prior_cwnd)`.
//!
//! Differences from Linux: none in the algorithm. Windows are in packets of `sock.mss`
//! bytes as in Linux; sequence numbers are not used.

use crate::{CongestionControl, Sock};

/// Smallest ssthresh after a congestion event, packets (`tcp_reno_ssthresh`: RFC 5681
/// Eq. 4 uses 2·SMSS so that fast retransmit can still work).
const MIN_SSTHRESH: u32 = 2;

/// Scenario parameters of NewReno: there are none. Kept as a type so that every scheme
/// is built the same way (`params` → config → controller) and unknown keys are rejected.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewRenoConfig {}

/// Which growth rule the last [`CongestionControl::cong_avoid`] call applied.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Phase {
    /// cwnd < ssthresh: +1 packet per packet acked.
    #[default]
    SlowStart,
    /// cwnd ≥ ssthresh: +1 packet per cwnd packets acked.
    CongAvoid,
}

/// Linux Reno. Stateless apart from the phase label; all window state is in [`Sock`].
#[derive(Clone, Debug, Default)]
pub struct NewReno {
    phase: Phase,
}

impl NewReno {
    /// A NewReno controller (no parameters).
    pub fn new() -> Self {
        NewReno::default()
    }

    /// Build from the (empty) scenario config.
    pub fn with_config(_config: NewRenoConfig) -> Self {
        NewReno::default()
    }
}

impl CongestionControl for NewReno {
    fn name(&self) -> &'static str {
        "newreno"
    }

    /// `tcp_reno_ssthresh`: half the window, at least 2 packets.
    fn ssthresh(&mut self, sock: &Sock) -> u32 {
        // RFC 5681 Eq. 4, with cwnd in place of FlightSize (Linux).
        (sock.cwnd >> 1).max(MIN_SSTHRESH)
    }

    /// `tcp_reno_cong_avoid`: slow start below ssthresh, then +1 packet per window.
    fn cong_avoid(&mut self, sock: &mut Sock, acked: u32) {
        if !sock.is_cwnd_limited() {
            return;
        }
        let mut acked = acked;
        if sock.in_slow_start() {
            self.phase = Phase::SlowStart;
            // RFC 5681 Eq. 2: cwnd += acked packets, capped at ssthresh.
            acked = sock.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        self.phase = Phase::CongAvoid;
        // RFC 5681 Eq. 3: cwnd += 1/cwnd per packet acked, as an integer counter.
        sock.cong_avoid_ai(sock.cwnd, acked);
    }

    // `undo_cwnd` is the trait's default, `tcp_reno_undo_cwnd`: max(cwnd, prior_cwnd).

    /// `"slow_start"` or `"cong_avoid"`: the rule used by the most recent `cong_avoid`
    /// call that was allowed to grow cwnd (`"slow_start"` before the first).
    fn phase(&self) -> &'static str {
        match self.phase {
            Phase::SlowStart => "slow_start",
            Phase::CongAvoid => "cong_avoid",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Driver;
    use crate::INFINITE_SSTHRESH;

    /// A cwnd-limited connection with the given window and threshold.
    fn flow(cwnd: u32, ssthresh: u32) -> Driver<NewReno> {
        Driver::started(NewReno::new(), |s| {
            s.cwnd = cwnd;
            s.ssthresh = ssthresh;
            s.is_cwnd_limited = true;
            s.max_packets_out = cwnd;
        })
    }

    /// Deliver `n` ACKs of one packet each.
    fn ack_each(d: &mut Driver<NewReno>, n: u32) {
        for _ in 0..n {
            d.ack(1, None);
        }
    }

    #[test]
    fn slow_start_doubles_up_to_ssthresh_then_avoids_congestion() {
        let mut d = flow(10, 20);
        assert_eq!(d.cc.phase(), "slow_start");
        // 10 single-packet ACKs: 10 -> 20 = ssthresh.
        ack_each(&mut d, 10);
        assert_eq!((d.sock.cwnd, d.sock.cwnd_cnt), (20, 0));
        assert_eq!(d.cc.phase(), "slow_start");
        // From here one packet per 20 acked.
        ack_each(&mut d, 19);
        assert_eq!((d.sock.cwnd, d.sock.cwnd_cnt), (20, 19));
        assert_eq!(d.cc.phase(), "cong_avoid");
        ack_each(&mut d, 1);
        assert_eq!((d.sock.cwnd, d.sock.cwnd_cnt), (21, 0));
    }

    #[test]
    fn ack_crossing_ssthresh_carries_leftover_into_congestion_avoidance() {
        let mut d = flow(18, 20);
        // A stretch ACK of 5: 18 + 2 reaches ssthresh, 3 packets left for CA at w = 20.
        d.ack(5, None);
        assert_eq!((d.sock.cwnd, d.sock.cwnd_cnt), (20, 3));
        // 17 more single ACKs complete the window of 20: +1.
        ack_each(&mut d, 17);
        assert_eq!((d.sock.cwnd, d.sock.cwnd_cnt), (21, 0));
    }

    #[test]
    fn one_packet_per_window_in_congestion_avoidance() {
        let mut d = flow(50, 10);
        // 50 + 51 + 52 acked packets are three full windows: +3.
        ack_each(&mut d, 50 + 51 + 52);
        assert_eq!((d.sock.cwnd, d.sock.cwnd_cnt), (53, 0));
        // A stretch ACK of 120 at w = 53: +2, remainder 14.
        d.ack(120, None);
        assert_eq!((d.sock.cwnd, d.sock.cwnd_cnt), (55, 14));
    }

    #[test]
    fn ssthresh_halves_with_floor_of_two() {
        let ssthresh = |cwnd| {
            let mut d = flow(cwnd, INFINITE_SSTHRESH);
            d.cc.ssthresh(&d.sock)
        };
        assert_eq!(ssthresh(100), 50);
        assert_eq!(ssthresh(101), 50);
        assert_eq!(ssthresh(5), 2);
        // 3 / 2 = 1 and 1 / 2 = 0 are both raised to the floor.
        assert_eq!(ssthresh(3), 2);
        assert_eq!(ssthresh(1), 2);
    }

    #[test]
    fn undo_restores_the_larger_of_cwnd_and_prior_cwnd() {
        let mut d = flow(50, 50);
        d.sock.prior_cwnd = 100;
        assert_eq!(d.cc.undo_cwnd(&d.sock), 100);
        d.sock.cwnd = 120;
        assert_eq!(d.cc.undo_cwnd(&d.sock), 120);
    }

    #[test]
    fn no_growth_when_not_cwnd_limited() {
        // Congestion avoidance, application-limited.
        let mut d = flow(30, 10);
        d.sock.is_cwnd_limited = false;
        ack_each(&mut d, 100);
        assert_eq!((d.sock.cwnd, d.sock.cwnd_cnt), (30, 0));
        // Slow start grows only while cwnd < 2 * max_packets_out: 30 < 2 * 15 is false.
        let mut d = flow(30, INFINITE_SSTHRESH);
        d.sock.max_packets_out = 15;
        ack_each(&mut d, 10);
        assert_eq!(d.sock.cwnd, 30);
        d.sock.max_packets_out = 16;
        ack_each(&mut d, 1);
        assert_eq!(d.sock.cwnd, 31);
    }

    fn parse(pairs: &[(&str, u32)]) -> Result<NewRenoConfig, serde::de::value::Error> {
        crate::testing::from_pairs(pairs)
    }

    #[test]
    fn config_is_empty_and_rejects_unknown_keys() {
        assert_eq!(parse(&[]).unwrap(), NewRenoConfig::default());
        assert_eq!(
            NewReno::with_config(NewRenoConfig::default()).name(),
            "newreno"
        );
        let err = parse(&[("beta", 1)]).unwrap_err().to_string();
        assert!(err.contains("unknown field `beta`"), "{err}");
    }
}
