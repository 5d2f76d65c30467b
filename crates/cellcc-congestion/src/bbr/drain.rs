//! DRAIN: pace below the estimate until the queue STARTUP built has left the
//! bottleneck (`bbr_check_drain`).
//!
//! STARTUP at 2.885× leaves up to ~1.885 BDP queued; pacing at 1/2.885 drains it in
//! about one round. DRAIN ends as soon as the packets in the network at the next
//! departure fit the BDP (plus the quantization budget).

use super::{Bbr, Mode, BBR_UNIT};
use crate::Sock;

/// DRAIN pacing gain, ×1/256 (`bbr_drain_gain`): the inverse of STARTUP's gain, to
/// drain its queue in one round. 256 * 1000 / 2885 = 88.7 -> 88 (0.344).
pub(super) const DRAIN_GAIN: u32 = BBR_UNIT * 1000 / 2885;

impl Bbr {
    /// `bbr_check_drain`: enter DRAIN once the pipe is full, and leave it for PROBE_BW
    /// once inflight is down to the BDP (possibly on the same ACK).
    pub(super) fn check_drain(&mut self, sock: &mut Sock) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.transition(Mode::Drain);
            // Reported through ssthresh, as the kernel does; BBR does not read it.
            sock.ssthresh = self.inflight(sock, self.max_bw(), BBR_UNIT);
        }
        if self.mode == Mode::Drain
            && self.packets_in_net_at_edt(sock, sock.packets_in_flight())
                <= self.inflight(sock, self.max_bw(), BBR_UNIT)
        {
            self.reset_probe_bw_mode(sock); // we estimate the queue is drained
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CongestionControl, Time};

    #[test]
    fn drain_holds_until_inflight_fits_the_bdp() {
        let mut sock = Sock::new(1448, Time::ZERO);
        let mut bbr = Bbr::default();
        bbr.init(&mut sock);
        // 10 Mbit/s, 40 ms: BDP 35, + 3 * 2 TSO segments = 41 -> 42 (even).
        bbr.bw.reset(0, 14_483);
        bbr.min_rtt_us = 40_000;
        sock.pacing_rate = 3_500_000;
        bbr.full_bw_reached = true;
        // The previous ACK's gain was STARTUP's: the departing TSO burst (2) counts.
        sock.packets_out = 41;
        bbr.check_drain(&mut sock);
        assert_eq!(bbr.mode, Mode::Drain);
        assert_eq!(sock.ssthresh, 42);
        bbr.update_gains();
        assert_eq!(bbr.pacing_gain, DRAIN_GAIN);
        // With the drain gain (< 1) nothing is added: 42 <= 42 ends DRAIN.
        sock.packets_out = 43;
        bbr.check_drain(&mut sock);
        assert_eq!(bbr.mode, Mode::Drain);
        sock.packets_out = 42;
        bbr.check_drain(&mut sock);
        assert!(matches!(bbr.mode, Mode::ProbeBw { .. }));
    }
}
