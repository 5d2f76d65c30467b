//! Long-term bandwidth sampling: token-bucket policer detection (`bbr_lt_bw_sampling`,
//! `bbr_lt_bw_interval_done`, `bbr_reset_lt_bw_sampling*`).
//!
//! Token-bucket policers are common on the Internet. A policed flow sees a burst at line
//! rate (while tokens last), then heavy loss at any rate above the token rate. BBR's
//! max filter would keep the burst's rate and keep losing packets, so BBR also measures
//! the long-term delivery rate over intervals of 4–16 rounds that start and end with a
//! loss. Two consecutive lossy intervals (≥ 20 % loss) with consistent rates (within
//! 1/8 or 4 kbit/s) mean "policed": BBR then uses their average, `lt_bw`, as its
//! bandwidth and paces at gain 1 for 48 rounds before sampling afresh.
//!
//! ```text
//! idle --first loss--> sampling --interval of 4..16 rounds ends on a loss,
//!                        ^   |      loss >= 20 %--> interval done
//!                        |   +-- app-limited or > 16 rounds: reset
//!                        +--- rates differ: keep this interval's rate, sample again
//!   rates consistent: use_bw (48 rounds in PROBE_BW) --> reset, new gain cycle
//! ```

use super::{saturate_u32, Bbr, Mode, BBR_SCALE, BBR_UNIT, BW_UNIT};
use crate::{RateSample, Sock};

/// Minimum rounds in a sampling interval (`bbr_lt_intvl_min_rtts`).
pub(super) const LT_INTVL_MIN_RTTS: u32 = 4;
/// Loss ratio above which an interval is lossy and may be policed, ×1/256: 50/256 ≈ 20 %
/// (`bbr_lt_loss_thresh`).
pub(super) const LT_LOSS_THRESH: u32 = 50;
/// Two intervals' rates within this ratio are consistent, ×1/256: 1/8 (`bbr_lt_bw_ratio`).
pub(super) const LT_BW_RATIO: u32 = BBR_UNIT / 8;
/// ... or within this many bytes per second: 4 kbit/s (`bbr_lt_bw_diff`).
pub(super) const LT_BW_DIFF_BYTES_PER_SEC: u32 = 4000 / 8;
/// Rounds to use `lt_bw` once a policer is detected (`bbr_lt_bw_max_rtts`).
pub(super) const LT_BW_MAX_RTTS: u32 = 48;

/// Long-term sampling state (`lt_*` fields of `struct bbr`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct LtBw {
    /// Taking long-term samples now (`lt_is_sampling`).
    pub(super) is_sampling: bool,
    /// Rounds in this interval, or rounds `bw` has been used (`lt_rtt_cnt`).
    pub(super) rtt_cnt: u32,
    /// A policer was detected: use `bw` as the bandwidth (`lt_use_bw`).
    pub(super) use_bw: bool,
    /// Long-term delivery rate, packets per µs << 24 (`lt_bw`).
    pub(super) bw: u32,
    /// `sock.delivered` at the interval start (`lt_last_delivered`).
    pub(super) last_delivered: u64,
    /// `sock.delivered_mstamp` at the interval start, ms (`lt_last_stamp`).
    pub(super) last_stamp_ms: u64,
    /// `sock.lost` at the interval start (`lt_last_lost`).
    pub(super) last_lost: u64,
}

impl Bbr {
    /// `bbr_reset_lt_bw_sampling_interval`: start a new interval now.
    fn reset_lt_bw_sampling_interval(&mut self, sock: &Sock) {
        self.lt.last_stamp_ms = sock.delivered_mstamp.as_us() / 1000;
        self.lt.last_delivered = sock.delivered;
        self.lt.last_lost = sock.lost;
        self.lt.rtt_cnt = 0;
    }

    /// `bbr_reset_lt_bw_sampling`: forget the long-term model completely.
    pub(super) fn reset_lt_bw_sampling(&mut self, sock: &Sock) {
        self.lt.bw = 0;
        self.lt.use_bw = false;
        self.lt.is_sampling = false;
        self.reset_lt_bw_sampling_interval(sock);
    }

    /// `bbr_lt_bw_interval_done`: an interval measured `bw`. If it agrees with the
    /// previous interval, we are policed at (about) that rate.
    fn lt_bw_interval_done(&mut self, sock: &Sock, bw: u32) {
        if self.lt.bw != 0 {
            let diff = bw.abs_diff(self.lt.bw);
            let ratio_ok = u64::from(diff) * u64::from(BBR_UNIT)
                <= u64::from(self.config.lt_bw_ratio) * u64::from(self.lt.bw);
            let diff_ok = self.rate_bytes_per_sec(sock.mss, u64::from(diff), BBR_UNIT)
                <= u64::from(self.config.lt_bw_diff_bytes_per_sec);
            if ratio_ok || diff_ok {
                // All criteria are met: estimate we are policed.
                self.lt.bw = ((u64::from(bw) + u64::from(self.lt.bw)) >> 1) as u32; // average of 2 intervals
                self.lt.use_bw = true;
                self.pacing_gain = BBR_UNIT; // try to avoid drops
                self.lt.rtt_cnt = 0;
                return;
            }
        }
        self.lt.bw = bw;
        self.reset_lt_bw_sampling_interval(sock);
    }

    /// `bbr_lt_bw_sampling`: per ACK (and on RTO, with a one-loss sample).
    pub(super) fn lt_bw_sampling(&mut self, sock: &Sock, rs: &RateSample) {
        if self.lt.use_bw {
            // Already using the long-term rate: for how many more rounds?
            if matches!(self.mode, Mode::ProbeBw { .. }) && self.round_start {
                self.lt.rtt_cnt += 1;
                if self.lt.rtt_cnt >= self.config.lt_bw_max_rtts {
                    self.reset_lt_bw_sampling(sock); // stop using lt_bw
                    self.reset_probe_bw_mode(sock); // restart gain cycling
                }
            }
            return;
        }

        // Wait for the first loss before sampling, so the policer has used up its
        // tokens and the samples show its steady rate rather than the initial burst.
        if !self.lt.is_sampling {
            if rs.losses == 0 {
                return;
            }
            self.reset_lt_bw_sampling_interval(sock);
            self.lt.is_sampling = true;
        }

        // Running out of data would under-estimate: start over.
        if rs.is_app_limited {
            self.reset_lt_bw_sampling(sock);
            return;
        }

        if self.round_start {
            self.lt.rtt_cnt += 1; // rounds in this interval
        }
        let min_rtts = self.config.lt_intvl_min_rtts;
        if self.lt.rtt_cnt < min_rtts {
            return; // the interval needs to be longer
        }
        if self.lt.rtt_cnt > min_rtts.saturating_mul(4) {
            self.reset_lt_bw_sampling(sock); // the interval is too long
            return;
        }

        // End the interval on a loss, when the tokens are likely exhausted; ending
        // earlier would under-estimate the policed rate.
        if rs.losses == 0 {
            return;
        }

        // Is lost / delivered >= lt_loss_thresh / 256? If not, wait.
        let lost = sock.lost.wrapping_sub(self.lt.last_lost);
        let delivered = sock.delivered.wrapping_sub(self.lt.last_delivered);
        if delivered == 0
            || u128::from(lost) << BBR_SCALE
                < u128::from(self.config.lt_loss_thresh) * u128::from(delivered)
        {
            return;
        }

        // Average delivery rate over the interval.
        let t_ms = (sock.delivered_mstamp.as_us() / 1000) as i64 - self.lt.last_stamp_ms as i64;
        if t_ms < 1 {
            return; // less than 1 ms: wait
        }
        if t_ms >= i64::from(u32::MAX / 1000) {
            self.reset_lt_bw_sampling(sock); // too long to multiply safely
            return;
        }
        let t_us = t_ms as u64 * 1000;
        let bw = saturate_u32(u128::from(delivered) * u128::from(BW_UNIT) / u128::from(t_us));
        self.lt_bw_interval_done(sock, bw);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CongestionControl, Time};

    /// A flow in PROBE_BW whose deliveries and losses are driven round by round.
    struct Policed {
        bbr: Bbr,
        sock: Sock,
        round: u64,
    }

    impl Policed {
        fn new() -> Self {
            let mut sock = Sock::new(1448, Time::ZERO);
            let mut bbr = Bbr::default();
            bbr.init(&mut sock);
            bbr.full_bw_reached = true;
            bbr.mode = Mode::ProbeBw {
                cycle_idx: 2,
                cycle_mstamp_us: 0,
            };
            Policed {
                bbr,
                sock,
                round: 0,
            }
        }

        /// One 40 ms round delivering `delivered` packets and losing `lost`; the
        /// round-ending ACK reports the losses.
        fn round(&mut self, delivered: u64, lost: u64) {
            self.round += 1;
            self.sock.now = Time::from_ms(40 * self.round);
            self.sock.delivered_mstamp = self.sock.now;
            self.sock.delivered += delivered;
            self.sock.lost += lost;
            self.bbr.round_start = true;
            let rs = RateSample {
                losses: lost as u32,
                ..RateSample::default()
            };
            self.bbr.lt_bw_sampling(&self.sock, &rs);
        }
    }

    #[test]
    fn two_consistent_lossy_intervals_engage_lt_bw_for_48_rounds() {
        let mut p = Policed::new();
        // 1000 packets/s delivered (40 per 40 ms round) with 25 % loss (10 / 40;
        // the threshold is 50 / 256 = 19.5 %).
        // Round 1: the first loss starts sampling at (40 ms, delivered 40, lost 10).
        p.round(40, 10);
        assert!(p.bbr.lt.is_sampling);
        assert_eq!(p.bbr.lt.rtt_cnt, 1);
        // Round 4: 4 rounds counted; 120 delivered and 30 lost in 120 ms since the
        // start: 30 × 256 = 7680 >= 50 × 120 = 6000, so the interval is lossy; bw =
        // 120 × 2^24 / 120 000 µs = 16 777 (0.001 packets/µs). First interval: kept.
        for _ in 2..=4 {
            p.round(40, 10);
        }
        assert_eq!(
            (p.bbr.lt.bw, p.bbr.lt.use_bw, p.bbr.lt.rtt_cnt),
            (16_777, false, 0)
        );
        // Rounds 5..8: the same rate again -> policed; lt_bw = the average = 16 777.
        for _ in 5..=8 {
            p.round(40, 10);
        }
        assert!(p.bbr.lt.use_bw);
        assert_eq!(p.bbr.bw(), 16_777);
        assert_eq!(p.bbr.pacing_gain, BBR_UNIT);
        // lt_bw is used for 48 rounds, then sampling restarts with a new gain cycle.
        for _ in 1..48 {
            p.round(40, 0);
        }
        assert!(p.bbr.lt.use_bw);
        p.round(40, 0);
        assert!(!p.bbr.lt.use_bw);
        assert_eq!((p.bbr.lt.bw, p.bbr.lt.is_sampling), (0, false));
    }

    #[test]
    fn inconsistent_rates_keep_sampling() {
        let mut p = Policed::new();
        p.round(40, 10);
        for _ in 2..=4 {
            p.round(40, 10);
        }
        assert_eq!(p.bbr.lt.bw, 16_777);
        // Next interval at 60 packets per round: 240 / 160 ms = 1500 packets/s =
        // 25 165 (× 2^24 / 10^6). |25 165 - 16 777| × 256 > 32 × 16 777 and the
        // difference is ~0.72 MB/s, far above 500 B/s: not consistent.
        for _ in 5..=8 {
            p.round(60, 15);
        }
        assert!(!p.bbr.lt.use_bw);
        assert_eq!(p.bbr.lt.bw, 25_165);
    }

    #[test]
    fn rates_within_one_eighth_are_consistent_and_averaged() {
        let mut p = Policed::new();
        p.round(40, 10);
        for _ in 2..=4 {
            p.round(40, 10);
        }
        // 44 per round: 176 / 160 ms = 1100 packets/s = 18 454; the difference 1677
        // × 256 = 429 312 <= 32 × 16 777 = 536 864: consistent. Average 17 615.
        for _ in 5..=8 {
            p.round(44, 11);
        }
        assert!(p.bbr.lt.use_bw);
        assert_eq!(p.bbr.lt.bw, (16_777 + 18_454) / 2);
    }

    #[test]
    fn low_loss_or_app_limited_intervals_never_engage() {
        let mut p = Policed::new();
        // 10 % loss: sampling starts but no interval is ever lossy enough, and after
        // 16 rounds the interval is abandoned.
        for _ in 0..40 {
            p.round(40, 4);
            assert!(!p.bbr.lt.use_bw);
        }
        assert!(p.bbr.lt.rtt_cnt <= 16);

        let mut p = Policed::new();
        p.round(40, 10);
        p.bbr.round_start = false;
        let rs = RateSample {
            is_app_limited: true,
            ..RateSample::default()
        };
        p.bbr.lt_bw_sampling(&p.sock, &rs);
        assert!(!p.bbr.lt.is_sampling);
    }
}
