//! STARTUP: grow the sending rate like slow start, but paced, until the delivery rate
//! stops growing (`bbr_check_full_bw_reached`).
//!
//! The pipe is estimated full when the max-bw filter has not grown by 25 % in three
//! consecutive non-app-limited rounds. Three rounds because: one for receive-window
//! autotuning to grow the window, one to fill the larger window, and one to see the
//! higher delivery rate; transient cross traffic or radio noise may also clear.

use super::{Bbr, BBR_SCALE, BBR_UNIT};
use crate::RateSample;

/// STARTUP pacing and cwnd gain, ×1/256 (`bbr_high_gain`): 2/ln 2 ≈ 2.885 is the
/// smallest gain whose smoothly rising pacing rate doubles the delivery rate every
/// round, sending as many packets per round as unpaced slow start. `+ 1` rounds
/// 738.56 up to 739 (2.8867).
pub(super) const HIGH_GAIN: u32 = BBR_UNIT * 2885 / 1000 + 1;
/// A bandwidth increase of this ratio (1.25, ×1/256) means more may be available
/// (`bbr_full_bw_thresh`).
pub(super) const FULL_BW_THRESH: u32 = BBR_UNIT * 5 / 4;
/// Rounds without that increase after which the pipe is full (`bbr_full_bw_cnt`).
pub(super) const FULL_BW_CNT: u32 = 3;

impl Bbr {
    /// `bbr_check_full_bw_reached`: at each round start, compare the max bandwidth with
    /// the value at the last significant growth.
    pub(super) fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }

        let bw_thresh =
            (u64::from(self.full_bw) * u64::from(self.config.full_bw_thresh)) >> BBR_SCALE;
        if u64::from(self.max_bw()) >= bw_thresh {
            // Still growing: remember this level and start counting again.
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= self.config.full_bw_cnt;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(bbr: &mut Bbr, max_bw: u32) {
        bbr.bw.reset(0, max_bw);
        bbr.round_start = true;
        bbr.check_full_bw_reached(&RateSample::default());
    }

    #[test]
    fn three_rounds_below_25_percent_growth_fill_the_pipe() {
        let mut bbr = Bbr::default();
        // 1000 -> full_bw = 1000; 1250 = exactly 1.25x -> counts as growth.
        round(&mut bbr, 1000);
        round(&mut bbr, 1250);
        assert_eq!((bbr.full_bw, bbr.full_bw_cnt), (1250, 0));
        // Threshold now 1250 * 320 >> 8 = 1562: 1500 and 1560 are below it.
        round(&mut bbr, 1500);
        round(&mut bbr, 1560);
        assert_eq!(
            (bbr.full_bw, bbr.full_bw_cnt, bbr.full_bw_reached),
            (1250, 2, false)
        );
        round(&mut bbr, 1561);
        assert!(bbr.full_bw_reached);
        // Reached stays reached whatever the estimate does later.
        round(&mut bbr, 100_000);
        assert!(bbr.full_bw_reached);
        assert_eq!(bbr.full_bw, 1250);
    }

    #[test]
    fn only_round_starts_without_app_limits_count() {
        let mut bbr = Bbr::default();
        round(&mut bbr, 1000);
        bbr.round_start = false;
        for _ in 0..5 {
            bbr.check_full_bw_reached(&RateSample::default());
        }
        bbr.round_start = true;
        let app_limited = RateSample {
            is_app_limited: true,
            ..RateSample::default()
        };
        for _ in 0..5 {
            bbr.check_full_bw_reached(&app_limited);
        }
        assert_eq!(bbr.full_bw_cnt, 0);
    }
}
