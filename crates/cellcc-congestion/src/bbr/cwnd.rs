//! cwnd from the model: BDP, quantization budget, loss recovery and the per-ACK update
//! (`bbr_bdp`, `bbr_quantization_budget`, `bbr_inflight`, `bbr_packets_in_net_at_edt`,
//! `bbr_set_cwnd_to_recover_or_restore`, `bbr_set_cwnd`).
//!
//! ```text
//! bdp(bw, gain) = ceil(bw * min_rtt * gain)                      (packets)
//! target        = bdp(bw, cwnd_gain) + extra_acked (pipe full) + 3 * tso_goal,
//!                 rounded up to even, + 2 in the first PROBE_BW phase
//! cwnd          = min(cwnd + acked, target) once the pipe is full, else grows by acked
//! ```

use super::{
    in_recovery_or_loss, saturate_u32, Bbr, Mode, BBR_SCALE, BBR_UNIT, BW_SCALE, BW_UNIT,
    TCP_INIT_CWND,
};
use crate::{CaState, RateSample, Sock, Time};

/// How `set_cwnd` continues after the loss-recovery adjustment.
enum Recovery {
    /// First round of fast recovery: packet conservation sets cwnd directly.
    Conserve(u32),
    /// Normal growth toward the target, starting from this cwnd.
    Grow(u32),
}

impl Bbr {
    /// `bbr_bdp`: `ceil(bw * min_rtt * gain)` in packets; [`TCP_INIT_CWND`] before any
    /// RTT sample. Rounding up avoids a feedback loop that shrinks the estimate.
    pub(super) fn bdp(&self, bw: u32, gain: u32) -> u32 {
        if self.min_rtt_us == u32::MAX {
            return TCP_INIT_CWND; // no valid RTT sample yet: be safe
        }
        let w = u128::from(bw) * u128::from(self.min_rtt_us);
        // Apply the gain, then remove the BW_SCALE shift rounding up (the kernel's
        // `(x + BW_UNIT - 1) / BW_UNIT`).
        saturate_u32(((w * u128::from(gain)) >> BBR_SCALE).div_ceil(u128::from(BW_UNIT)))
    }

    /// `bbr_quantization_budget`: room for full-sized TSO bursts at both ends (one in
    /// the qdisc, one in the TSO engine, one in the receiver's GRO/delayed ACK), an even
    /// cwnd for ACK-every-other-packet receivers, and +2 in the probing phase so that
    /// gain cycling raises inflight above the BDP even when the BDP is small.
    pub(super) fn quantization_budget(&self, sock: &Sock, cwnd: u32) -> u32 {
        let mut cwnd = cwnd.saturating_add(3 * self.tso_segs_goal(sock));
        cwnd = cwnd.saturating_add(1) & !1;
        if let Mode::ProbeBw { cycle_idx: 0, .. } = self.mode {
            cwnd = cwnd.saturating_add(2);
        }
        cwnd
    }

    /// `bbr_inflight`: the in-flight target for `bw` and `gain`.
    pub(super) fn inflight(&self, sock: &Sock, bw: u32, gain: u32) -> u32 {
        self.quantization_budget(sock, self.bdp(bw, gain))
    }

    /// `bbr_packets_in_net_at_edt`: of `inflight_now`, how many packets will still be
    /// in the network when the next packet leaves at its earliest departure time:
    /// `inflight_at_edt - (edt - now) * bw`, counting the departing burst when
    /// inflight is being raised.
    pub(super) fn packets_in_net_at_edt(&self, sock: &Sock, inflight_now: u32) -> u32 {
        let interval_us = earliest_departure(sock).saturating_since(sock.now).as_us();
        let interval_delivered = (u128::from(self.bw()) * u128::from(interval_us)) >> BW_SCALE;
        let mut inflight_at_edt = u128::from(inflight_now);
        if self.pacing_gain > BBR_UNIT {
            inflight_at_edt += u128::from(self.tso_segs_goal(sock)); // include the EDT burst
        }
        saturate_u32(inflight_at_edt.saturating_sub(interval_delivered))
    }

    /// `bbr_set_cwnd_to_recover_or_restore`: subtract losses; use packet conservation
    /// in the first round of fast recovery; restore the saved cwnd when recovery ends.
    fn recover_or_restore(&mut self, sock: &Sock, rs: &RateSample, acked: u32) -> Recovery {
        let prev_state = self.prev_ca_state;
        let state = sock.ca_state;
        let mut cwnd = sock.cwnd;

        // An ACK for P packets should release at most 2P: first deduct the losses here,
        // then slow-start toward the target in set_cwnd.
        if rs.losses > 0 {
            cwnd = cwnd.saturating_sub(rs.losses).max(1);
        }

        if state == CaState::Recovery && prev_state != CaState::Recovery {
            // First round of Recovery: packet conservation, and start a round now.
            self.packet_conservation = true;
            self.next_rtt_delivered = sock.delivered;
            // Cut cwnd left unused by the application, TSQ or TSO deferral.
            cwnd = sock.packets_in_flight() + acked;
        } else if in_recovery_or_loss(prev_state) && !in_recovery_or_loss(state) {
            // Leaving loss recovery: restore the cwnd saved when it began.
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;

        if self.packet_conservation {
            Recovery::Conserve(cwnd.max(sock.packets_in_flight() + acked))
        } else {
            Recovery::Grow(cwnd)
        }
    }

    /// `bbr_set_cwnd`: slow-start toward the target (when the bandwidth estimate grows
    /// or losses pulled cwnd below it), or snap down to it once the pipe is full.
    pub(super) fn set_cwnd(
        &mut self,
        sock: &mut Sock,
        rs: &RateSample,
        acked: u32,
        bw: u32,
        gain: u32,
    ) {
        let mut cwnd = sock.cwnd;

        // With nothing fully acked only the caps below apply.
        if acked > 0 {
            match self.recover_or_restore(sock, rs, acked) {
                Recovery::Conserve(c) => cwnd = c,
                Recovery::Grow(c) => {
                    cwnd = c;
                    // Extra room for data or ACKs seen to arrive aggregated.
                    let target = self
                        .bdp(bw, gain)
                        .saturating_add(self.ack_aggregation_cwnd());
                    let target = self.quantization_budget(sock, target);

                    if self.full_bw_reached {
                        // Only cut cwnd once the pipe has been filled.
                        cwnd = cwnd.saturating_add(acked).min(target);
                    } else if cwnd < target || sock.delivered < u64::from(TCP_INIT_CWND) {
                        cwnd = cwnd.saturating_add(acked);
                    }
                    cwnd = cwnd.max(self.config.cwnd_min_target);
                }
            }
        }

        sock.cwnd = cwnd.min(sock.cwnd_clamp); // global cap
        if let Mode::ProbeRtt { .. } = self.mode {
            // Drain the queue and refresh min_rtt.
            sock.cwnd = sock.cwnd.min(self.config.cwnd_min_target);
        }
    }
}

/// When the next packet may leave (`max(tcp_wstamp_ns, now)` in the kernel).
fn earliest_departure(sock: &Sock) -> Time {
    sock.wstamp.max(sock.now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CongestionControl;

    /// 10 Mbit/s at 1448-byte packets: 1.25e6 / 1448 = 863.26 packets/s
    /// = 0.000 863 26 packets/µs, × 2^24 = 14 483.1 -> 14 483.
    const BW_10_MBPS: u32 = 14_483;

    fn bbr_with(bw: u32, min_rtt_us: u32, pacing_rate: u64) -> (Bbr, Sock) {
        let mut sock = Sock::new(1448, Time::ZERO);
        let mut bbr = Bbr::default();
        bbr.init(&mut sock);
        bbr.bw.reset(0, bw);
        bbr.min_rtt_us = min_rtt_us;
        sock.pacing_rate = pacing_rate;
        (bbr, sock)
    }

    #[test]
    fn bdp_of_10_mbps_by_40_ms_is_34_5_packets_rounded_up() {
        let (bbr, _) = bbr_with(BW_10_MBPS, 40_000, 0);
        // Exact: 10e6 / 8 * 0.040 / 1448 = 34.53 packets.
        // Fixed point: 14 483 * 40 000 = 579 320 000; * 256 >> 8 unchanged;
        // (579 320 000 + 2^24 - 1) / 2^24 = ceil(34.53) = 35.
        assert_eq!(bbr.bdp(BW_10_MBPS, BBR_UNIT), 35);
        // cwnd_gain 2: ceil(69.06) = 70.
        assert_eq!(bbr.bdp(BW_10_MBPS, 2 * BBR_UNIT), 70);
        // No RTT sample yet: TCP_INIT_CWND.
        let (bbr, _) = bbr_with(BW_10_MBPS, u32::MAX, 0);
        assert_eq!(bbr.bdp(BW_10_MBPS, 2 * BBR_UNIT), 10);
    }

    #[test]
    fn quantization_budget_adds_three_tso_goals_rounds_to_even_and_probes() {
        // At 10 Mbit/s the pacing rate is ~1.24e6 B/s: >> 10 = 1210 bytes < 1 MSS, so
        // the TSO goal is the 2-segment minimum (rate >= 150 000 B/s): +6.
        let (mut bbr, sock) = bbr_with(BW_10_MBPS, 40_000, 1_237_500);
        assert_eq!(bbr.tso_segs_goal(&sock), 2);
        assert_eq!(bbr.quantization_budget(&sock, 70), 76);
        assert_eq!(bbr.quantization_budget(&sock, 71), 78); // 77 rounded up to even
        bbr.full_bw_reached = true;
        bbr.mode = Mode::ProbeBw {
            cycle_idx: 0,
            cycle_mstamp_us: 0,
        };
        assert_eq!(bbr.quantization_budget(&sock, 70), 78); // +2 in the 5/4 phase
        bbr.mode = Mode::ProbeBw {
            cycle_idx: 2,
            cycle_mstamp_us: 0,
        };
        assert_eq!(bbr.quantization_budget(&sock, 70), 76);
        // Below 1.2 Mbit/s (150 000 B/s) the goal is 1 segment: 70 + 3 = 73 -> 74.
        let (bbr, sock) = bbr_with(BW_10_MBPS, 40_000, 149_999);
        assert_eq!(bbr.quantization_budget(&sock, 70), 74);
    }

    /// `bbr_set_cwnd` as `bbr_main` calls it, with `acked = rs.acked_sacked`.
    fn set(bbr: &mut Bbr, sock: &mut Sock, rs: &RateSample, bw: u32, gain: u32) {
        bbr.set_cwnd(sock, rs, rs.acked_sacked, bw, gain);
    }

    fn acked(n: u32) -> RateSample {
        RateSample {
            acked_sacked: n,
            ..RateSample::default()
        }
    }

    #[test]
    fn full_pipe_cwnd_snaps_to_target_and_never_below_the_floor() {
        let (mut bbr, mut sock) = bbr_with(BW_10_MBPS, 40_000, 1_237_500);
        bbr.full_bw_reached = true;
        sock.cwnd = 200;
        sock.delivered = 1000;
        set(&mut bbr, &mut sock, &acked(1), BW_10_MBPS, 2 * BBR_UNIT);
        assert_eq!(sock.cwnd, 76); // 70 + 6, no extra_acked yet
                                   // A tiny bandwidth: target is 1 + 6 = 7 -> 8 (even) ... still above 4.
        set(&mut bbr, &mut sock, &acked(1), 1, 2 * BBR_UNIT);
        assert_eq!(sock.cwnd, 8);
        // Below 1.2 Mbit/s the TSO goal is 1: target = 1 + 3 -> 4 ... the floor.
        sock.pacing_rate = 1000;
        set(&mut bbr, &mut sock, &acked(1), 1, 2 * BBR_UNIT);
        assert_eq!(sock.cwnd, 4);
        // Nothing acked: cwnd is only capped.
        sock.cwnd = 3;
        set(&mut bbr, &mut sock, &acked(0), 1, 2 * BBR_UNIT);
        assert_eq!(sock.cwnd, 3);
        // The floor binds when losses pulled cwnd down: max(3 - 2, 1) + 1 = 2 -> 4.
        let rs = RateSample {
            acked_sacked: 1,
            losses: 2,
            ..RateSample::default()
        };
        bbr.set_cwnd(&mut sock, &rs, 1, 1, 2 * BBR_UNIT);
        assert_eq!(sock.cwnd, 4);
    }

    #[test]
    fn startup_grows_by_acked_while_below_target() {
        let (mut bbr, mut sock) = bbr_with(BW_10_MBPS, 40_000, 1_237_500);
        // STARTUP target at high_gain 739: ceil(34.53 * 739 / 256) = ceil(99.7) = 100,
        // + 6 = 106.
        sock.cwnd = 100;
        sock.delivered = 100;
        set(&mut bbr, &mut sock, &acked(3), BW_10_MBPS, 739);
        assert_eq!(sock.cwnd, 103);
        // Above the target it holds (no cut before the pipe is full).
        sock.cwnd = 300;
        set(&mut bbr, &mut sock, &acked(3), BW_10_MBPS, 739);
        assert_eq!(sock.cwnd, 300);
    }

    #[test]
    fn recovery_conserves_packets_for_a_round_then_restores_prior_cwnd() {
        let (mut bbr, mut sock) = bbr_with(BW_10_MBPS, 40_000, 1_237_500);
        bbr.full_bw_reached = true;
        sock.cwnd = 76;
        sock.delivered = 1000;
        // The stack enters Recovery: ssthresh() saves cwnd 76.
        assert_eq!(bbr.ssthresh(&sock), crate::INFINITE_SSTHRESH);
        assert_eq!(bbr.prior_cwnd, 76);
        sock.ca_state = CaState::Recovery;
        sock.packets_out = 60;
        let rs = RateSample {
            acked_sacked: 1,
            losses: 3,
            ..RateSample::default()
        };
        bbr.set_cwnd(&mut sock, &rs, 1, BW_10_MBPS, 2 * BBR_UNIT);
        // Conservation: cwnd = in flight + acked = 61 (losses 76 - 3 overridden).
        assert_eq!(sock.cwnd, 61);
        assert!(bbr.packet_conservation);
        assert_eq!(bbr.next_rtt_delivered, 1000);
        // Still in the first round: max(cwnd - losses, in flight + acked).
        sock.packets_out = 58;
        let rs = RateSample {
            acked_sacked: 2,
            losses: 1,
            ..RateSample::default()
        };
        bbr.set_cwnd(&mut sock, &rs, 2, BW_10_MBPS, 2 * BBR_UNIT);
        assert_eq!(sock.cwnd, 60);
        // A new round ends conservation: grow by acked up to the target.
        bbr.packet_conservation = false;
        bbr.set_cwnd(&mut sock, &acked(2), 2, BW_10_MBPS, 2 * BBR_UNIT);
        assert_eq!(sock.cwnd, 62);
        // Recovery ends: restore max(cwnd, prior_cwnd) = 76, then min(76 + 1, 76).
        sock.ca_state = CaState::Open;
        bbr.set_cwnd(&mut sock, &acked(1), 1, BW_10_MBPS, 2 * BBR_UNIT);
        assert_eq!(sock.cwnd, 76);
    }

    #[test]
    fn probe_rtt_caps_cwnd_at_four() {
        let (mut bbr, mut sock) = bbr_with(BW_10_MBPS, 40_000, 1_237_500);
        bbr.full_bw_reached = true;
        bbr.mode = Mode::ProbeRtt {
            done_stamp: None,
            round_done: false,
        };
        sock.cwnd = 76;
        set(&mut bbr, &mut sock, &acked(1), BW_10_MBPS, BBR_UNIT);
        assert_eq!(sock.cwnd, 4);
        set(&mut bbr, &mut sock, &acked(0), BW_10_MBPS, BBR_UNIT);
        assert_eq!(sock.cwnd, 4);
    }
}
