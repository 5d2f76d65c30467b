//! ACK-aggregation estimator (`bbr_update_ack_aggregation`, Linux ≥ 5.1).
//!
//! Wi-Fi, cellular and cable links, and receivers with delayed or stretched ACKs,
//! deliver ACKs in bursts. With cwnd at 2 × BDP a sender can stall waiting for a late
//! burst. BBR therefore measures how many more packets were acked in an "epoch" than
//! the bandwidth estimate predicts,
//!
//! ```text
//! expected    = bw * (delivered_mstamp - epoch_start)
//! extra_acked = min(acked_in_epoch - expected, cwnd)
//! ```
//!
//! restarting the epoch whenever the ACK rate falls back to (or below) the estimate,
//! keeps the max of `extra_acked` over the last 5–10 rounds (two 5-round halves), and
//! once the pipe is full adds `extra_acked_gain × that max`, capped at 100 ms of data,
//! to the cwnd target.

use super::{saturate_u32, valid_interval_us, Bbr, BBR_SCALE, BBR_UNIT, BW_UNIT};
use crate::{RateSample, Sock};

/// Gain on the aggregation term in cwnd, ×1/256 (`bbr_extra_acked_gain`): 1.0.
pub(super) const EXTRA_ACKED_GAIN: u32 = BBR_UNIT;
/// Rounds per half of the two-slot `extra_acked` window (`bbr_extra_acked_win_rtts`).
pub(super) const EXTRA_ACKED_WIN_RTTS: u32 = 5;
/// Restart an epoch that has acked this many packets, as it is likely stale
/// (`bbr_ack_epoch_acked_reset_thresh`).
pub(super) const ACK_EPOCH_ACKED_RESET_THRESH: u32 = 1 << 20;
/// Cap the aggregation term at this much time at the estimated bandwidth, µs
/// (`bbr_extra_acked_max_us`).
pub(super) const EXTRA_ACKED_MAX_US: u32 = 100 * 1000;

/// The kernel's 20-bit `ack_epoch_acked` field saturates here.
const EPOCH_ACKED_MAX: u32 = 0xF_FFFF;
/// The kernel's 5-bit `extra_acked_win_rtts` field saturates here.
const WIN_RTTS_MAX: u32 = 0x1F;

/// Estimator state (`ack_epoch_mstamp`, `ack_epoch_acked`, `extra_acked[2]`,
/// `extra_acked_win_rtts`, `extra_acked_win_idx`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct AckAggregation {
    /// Start of the current sampling epoch, µs (`ack_epoch_mstamp`).
    pub(super) epoch_mstamp_us: u64,
    /// Packets (S)ACKed in the epoch (`ack_epoch_acked`).
    pub(super) epoch_acked: u32,
    /// Max excess acked in each half of the window (`extra_acked[2]`, `u16` in the
    /// kernel; saturated at 65 535 here).
    pub(super) extra_acked: [u32; 2],
    /// Age of the current half, rounds (`extra_acked_win_rtts`).
    pub(super) win_rtts: u32,
    /// Current half (`extra_acked_win_idx`).
    pub(super) win_idx: usize,
}

impl AckAggregation {
    /// Fresh estimator whose first epoch starts at `now_us` (`bbr_init`).
    pub(super) fn new(now_us: u64) -> Self {
        AckAggregation {
            epoch_mstamp_us: now_us,
            ..AckAggregation::default()
        }
    }

    /// Start a new epoch at `now_us` (transmission restarting after idle).
    pub(super) fn restart_epoch(&mut self, now_us: u64) {
        self.epoch_mstamp_us = now_us;
        self.epoch_acked = 0;
    }

    /// Max excess acked over the last 5–10 rounds (`bbr_extra_acked`).
    pub(super) fn extra_acked(&self) -> u32 {
        self.extra_acked[0].max(self.extra_acked[1])
    }
}

impl Bbr {
    /// `bbr_update_ack_aggregation`.
    pub(super) fn update_ack_aggregation(&mut self, sock: &Sock, rs: &RateSample) {
        if self.config.extra_acked_gain == 0
            || rs.acked_sacked == 0
            || valid_interval_us(rs).is_none()
        {
            return;
        }

        let win_rtts_limit = self.config.extra_acked_win_rtts;
        let bw = self.bw();
        let a = &mut self.ack_aggr;
        if self.round_start {
            a.win_rtts = (a.win_rtts + 1).min(WIN_RTTS_MAX);
            if a.win_rtts >= win_rtts_limit {
                // Switch halves: the older half is forgotten.
                a.win_rtts = 0;
                a.win_idx ^= 1;
                a.extra_acked[a.win_idx] = 0;
            }
        }

        // Packets the bandwidth estimate predicts for the epoch so far.
        let epoch_us = sock
            .delivered_mstamp
            .as_us()
            .saturating_sub(a.epoch_mstamp_us);
        let epoch_us = u64::from(u32::try_from(epoch_us).unwrap_or(u32::MAX));
        let mut expected_acked =
            saturate_u32(u128::from(bw) * u128::from(epoch_us) / u128::from(BW_UNIT));

        // Restart the epoch if the ACK rate is at or below the estimate, or if the
        // epoch has acked so much that it is probably old.
        if a.epoch_acked <= expected_acked
            || a.epoch_acked.saturating_add(rs.acked_sacked)
                >= self.config.ack_epoch_acked_reset_thresh
        {
            a.epoch_acked = 0;
            a.epoch_mstamp_us = sock.delivered_mstamp.as_us();
            expected_acked = 0;
        }

        // Excess delivered beyond the estimate, at most one cwnd.
        a.epoch_acked = a
            .epoch_acked
            .saturating_add(rs.acked_sacked)
            .min(EPOCH_ACKED_MAX);
        let extra = a
            .epoch_acked
            .saturating_sub(expected_acked)
            .min(sock.cwnd)
            .min(u32::from(u16::MAX));
        if extra > a.extra_acked[a.win_idx] {
            a.extra_acked[a.win_idx] = extra;
        }
    }

    /// `bbr_ack_aggregation_cwnd`: the cwnd increment for aggregation, once the pipe is
    /// full.
    pub(super) fn ack_aggregation_cwnd(&self) -> u32 {
        if self.config.extra_acked_gain == 0 || !self.full_bw_reached {
            return 0;
        }
        let max_aggr_cwnd = u128::from(self.bw()) * u128::from(self.config.extra_acked_max_us)
            / u128::from(BW_UNIT);
        let aggr_cwnd = (u128::from(self.config.extra_acked_gain)
            * u128::from(self.ack_aggr.extra_acked()))
            >> BBR_SCALE;
        saturate_u32(aggr_cwnd.min(max_aggr_cwnd))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CongestionControl, Dur, Time};

    /// 1000 packets/s = 0.001 packets/µs = 16 777 in BW_UNIT (floor of 16 777.216).
    const BW_1000_PPS: u32 = 16_777;

    fn bbr_at(bw: u32) -> (Bbr, Sock) {
        let mut sock = Sock::new(1448, Time::ZERO);
        let mut bbr = Bbr::default();
        bbr.init(&mut sock);
        bbr.bw.reset(0, bw);
        bbr.full_bw_reached = true;
        sock.cwnd = 100;
        (bbr, sock)
    }

    fn ack(bbr: &mut Bbr, sock: &mut Sock, at_ms: u64, acked: u32) {
        sock.now = Time::from_ms(at_ms);
        sock.delivered_mstamp = sock.now;
        let rs = RateSample {
            acked_sacked: acked,
            delivered: u64::from(acked),
            interval: Some(Dur::from_ms(40)),
            ..RateSample::default()
        };
        bbr.update_ack_aggregation(sock, &rs);
    }

    #[test]
    fn a_burst_above_the_estimate_is_measured_as_extra_acked() {
        let (mut bbr, mut sock) = bbr_at(BW_1000_PPS);
        // t = 0: first ACK opens the epoch (0 acked <= 0 expected): extra = 2.
        ack(&mut bbr, &mut sock, 0, 2);
        assert_eq!(bbr.ack_aggr.extra_acked(), 2);
        // t = 10 ms: expected = 16 777 * 10 000 / 2^24 = 9.99 -> 9 packets; acked so far
        // 2 <= 9, so the epoch restarts here with this ACK's 20 packets: extra = 20.
        ack(&mut bbr, &mut sock, 10, 20);
        assert_eq!(bbr.ack_aggr.extra_acked(), 20);
        // t = 15 ms: expected over 5 ms = 4 (4.99 floored); 20 > 4 so the epoch goes on:
        // acked = 25, extra = 25 - 4 = 21.
        ack(&mut bbr, &mut sock, 15, 5);
        assert_eq!(bbr.ack_aggr.extra_acked(), 21);
        // Capped by cwnd.
        sock.cwnd = 10;
        ack(&mut bbr, &mut sock, 16, 30);
        assert_eq!(bbr.ack_aggr.extra_acked(), 21);
        assert_eq!(bbr.ack_aggr.extra_acked[bbr.ack_aggr.win_idx], 21);
    }

    #[test]
    fn the_max_is_kept_for_five_to_ten_rounds() {
        let (mut bbr, mut sock) = bbr_at(BW_1000_PPS);
        ack(&mut bbr, &mut sock, 0, 30);
        assert_eq!(bbr.ack_aggr.extra_acked(), 30);
        // Rounds 1..4 age the current half; round 5 switches to the other (empty) half,
        // but the max still sees the old one; round 10 switches back and clears it.
        let mut t = 0;
        for round in 1..=10 {
            bbr.round_start = true;
            t += 1000; // long gaps: every epoch restarts, extra = 1 each time
            ack(&mut bbr, &mut sock, t, 1);
            let expect = if round < 10 { 30 } else { 1 };
            assert_eq!(bbr.ack_aggr.extra_acked(), expect, "round {round}");
        }
    }

    #[test]
    fn the_cwnd_term_needs_a_full_pipe_and_is_capped_at_100_ms_of_data() {
        let (mut bbr, mut sock) = bbr_at(BW_1000_PPS);
        ack(&mut bbr, &mut sock, 0, 90);
        // 100 ms at 1000 packets/s = 16 777 * 100 000 / 2^24 = 99.99 -> 99 packets.
        sock.cwnd = 200;
        ack(&mut bbr, &mut sock, 0, 60);
        assert_eq!(bbr.ack_aggr.extra_acked(), 150);
        assert_eq!(bbr.ack_aggregation_cwnd(), 99);
        bbr.full_bw_reached = false;
        assert_eq!(bbr.ack_aggregation_cwnd(), 0);
    }
}
