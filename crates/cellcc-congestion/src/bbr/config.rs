//! BBR parameters: Linux `tcp_bbr.c`'s constants, made configurable.
//!
//! Every default is the kernel's value in the kernel's unit (gains scaled by
//! [`BBR_UNIT`] = 256, rates in bytes or bits per second as named), so a default
//! [`BbrConfig`] reproduces Linux 6.x BBR v1 and its numbers can be compared with the
//! kernel and the eBPF port one for one.

use serde::{Deserialize, Serialize};

use crate::ConfigError;

use super::{ack_aggregation, drain, lt_bw, pacing, probe_bw, probe_rtt, startup, BBR_UNIT};

/// Parameters of [`super::Bbr`]. Field names follow the kernel's `bbr_*` constants.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BbrConfig {
    /// Window of the max-bandwidth filter, in packet-timed rounds (`bbr_bw_rtts`,
    /// default `CYCLE_LEN + 2` = 10: a full gain cycle plus slack).
    pub bw_rtts: u32,
    /// Window of the min-RTT filter, seconds (`bbr_min_rtt_win_sec`, default 10).
    pub min_rtt_win_sec: u32,
    /// Minimum time at `cwnd_min_target` in PROBE_RTT, ms (`bbr_probe_rtt_mode_ms`,
    /// default 200). 0 disables PROBE_RTT, as in the kernel.
    pub probe_rtt_mode_ms: u32,
    /// Below this pacing rate the TSO goal is 1 segment instead of 2, bits/s
    /// (`bbr_min_tso_rate`, default 1.2 Mbit/s).
    pub min_tso_rate_bps: u64,
    /// Pace this many percent below the bandwidth estimate
    /// (`bbr_pacing_margin_percent`, default 1).
    pub pacing_margin_percent: u32,
    /// STARTUP pacing and cwnd gain, ×1/256 (`bbr_high_gain`, default
    /// `256 * 2885 / 1000 + 1` = 739 ≈ 2/ln 2).
    pub high_gain: u32,
    /// DRAIN pacing gain, ×1/256 (`bbr_drain_gain`, default `256 * 1000 / 2885` = 88
    /// ≈ 1/2.885).
    pub drain_gain: u32,
    /// PROBE_BW cwnd gain, ×1/256 (`bbr_cwnd_gain`, default 512 = 2.0).
    pub cwnd_gain: u32,
    /// cwnd floor, packets (`bbr_cwnd_min_target`, default 4); also the PROBE_RTT cwnd.
    pub cwnd_min_target: u32,
    /// Bandwidth growth that counts as "still growing" in STARTUP, ×1/256
    /// (`bbr_full_bw_thresh`, default 320 = 1.25).
    pub full_bw_thresh: u32,
    /// Rounds without that growth after which the pipe is full (`bbr_full_bw_cnt`,
    /// default 3).
    pub full_bw_cnt: u32,
    /// Minimum rounds in a long-term sampling interval (`bbr_lt_intvl_min_rtts`,
    /// default 4).
    pub lt_intvl_min_rtts: u32,
    /// Loss ratio above which an interval is "lossy", ×1/256 (`bbr_lt_loss_thresh`,
    /// default 50 ≈ 20 %).
    pub lt_loss_thresh: u32,
    /// Two intervals' bandwidths are consistent if they differ by at most this ratio,
    /// ×1/256 (`bbr_lt_bw_ratio`, default 32 = 1/8).
    pub lt_bw_ratio: u32,
    /// ... or by at most this many bytes per second (`bbr_lt_bw_diff`, default
    /// 4000 / 8 = 500, i.e. 4 kbit/s).
    pub lt_bw_diff_bytes_per_sec: u32,
    /// Rounds to use the long-term bandwidth once a policer is detected
    /// (`bbr_lt_bw_max_rtts`, default 48).
    pub lt_bw_max_rtts: u32,
    /// Gain applied to the ACK-aggregation estimate in the cwnd, ×1/256
    /// (`bbr_extra_acked_gain`, default 256 = 1.0; 0 disables the estimator).
    pub extra_acked_gain: u32,
    /// Length of each of the two halves of the `extra_acked` window, rounds
    /// (`bbr_extra_acked_win_rtts`, default 5: the max covers the last 5–10 rounds).
    pub extra_acked_win_rtts: u32,
    /// Packets acked in one aggregation epoch after which the epoch restarts
    /// (`bbr_ack_epoch_acked_reset_thresh`, default 2^20).
    pub ack_epoch_acked_reset_thresh: u32,
    /// Cap on the aggregation cwnd term, as µs of data at the estimated bandwidth
    /// (`bbr_extra_acked_max_us`, default 100 ms).
    pub extra_acked_max_us: u32,
    /// Seed of the stream that picks the starting phase of each PROBE_BW gain cycle.
    /// Linux draws `get_random_u32_below(7)` from the kernel RNG; this crate reads no
    /// RNG, so the simulator derives this seed from the flow's seed (same scenario and
    /// seed ⇒ same phases). Default 0.
    pub cycle_seed: u64,
}

impl Default for BbrConfig {
    fn default() -> Self {
        BbrConfig {
            bw_rtts: probe_bw::CYCLE_LEN as u32 + 2,
            min_rtt_win_sec: probe_rtt::MIN_RTT_WIN_SEC,
            probe_rtt_mode_ms: probe_rtt::PROBE_RTT_MODE_MS,
            min_tso_rate_bps: pacing::MIN_TSO_RATE_BPS,
            pacing_margin_percent: pacing::PACING_MARGIN_PERCENT,
            high_gain: startup::HIGH_GAIN,
            drain_gain: drain::DRAIN_GAIN,
            cwnd_gain: probe_bw::CWND_GAIN,
            cwnd_min_target: probe_rtt::CWND_MIN_TARGET,
            full_bw_thresh: startup::FULL_BW_THRESH,
            full_bw_cnt: startup::FULL_BW_CNT,
            lt_intvl_min_rtts: lt_bw::LT_INTVL_MIN_RTTS,
            lt_loss_thresh: lt_bw::LT_LOSS_THRESH,
            lt_bw_ratio: lt_bw::LT_BW_RATIO,
            lt_bw_diff_bytes_per_sec: lt_bw::LT_BW_DIFF_BYTES_PER_SEC,
            lt_bw_max_rtts: lt_bw::LT_BW_MAX_RTTS,
            extra_acked_gain: ack_aggregation::EXTRA_ACKED_GAIN,
            extra_acked_win_rtts: ack_aggregation::EXTRA_ACKED_WIN_RTTS,
            ack_epoch_acked_reset_thresh: ack_aggregation::ACK_EPOCH_ACKED_RESET_THRESH,
            extra_acked_max_us: ack_aggregation::EXTRA_ACKED_MAX_US,
            cycle_seed: 0,
        }
    }
}

/// Largest gain the kernel's 10-bit `pacing_gain`/`cwnd_gain` fields hold (≈ 4.0).
const MAX_GAIN: u32 = (1 << 10) - 1;
/// Largest round count the kernel's 7-bit `lt_rtt_cnt` field holds.
const MAX_LT_RTTS: u32 = (1 << 7) - 1;
/// Largest count the kernel's 2-bit `full_bw_cnt` field holds.
const MAX_FULL_BW_CNT: u32 = (1 << 2) - 1;
/// Largest window the kernel's 5-bit `extra_acked_win_rtts` field holds.
const MAX_EXTRA_ACKED_WIN_RTTS: u32 = (1 << 5) - 1;

impl BbrConfig {
    /// Check that every value fits the kernel's state (bitfield widths) and is
    /// meaningful, so that the same configuration runs unchanged in the eBPF port.
    /// The controller itself never panics on any value; this is for the scenario loader.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |field: &str, reason: String| Err(ConfigError::new("bbr", field, reason));
        for (field, gain) in [
            ("high_gain", self.high_gain),
            ("drain_gain", self.drain_gain),
            ("cwnd_gain", self.cwnd_gain),
        ] {
            if gain == 0 || gain > MAX_GAIN {
                return err(
                    field,
                    format!("{gain} is outside 1..={MAX_GAIN} (units of 1/{BBR_UNIT})"),
                );
            }
        }
        if self.bw_rtts == 0 {
            return err("bw_rtts", "must be at least 1 round".into());
        }
        if self.min_rtt_win_sec == 0 {
            return err("min_rtt_win_sec", "must be at least 1 s".into());
        }
        if self.pacing_margin_percent >= 100 {
            return err(
                "pacing_margin_percent",
                format!("{} must be below 100", self.pacing_margin_percent),
            );
        }
        if self.cwnd_min_target == 0 {
            return err("cwnd_min_target", "must be at least 1 packet".into());
        }
        if self.full_bw_cnt == 0 || self.full_bw_cnt > MAX_FULL_BW_CNT {
            return err(
                "full_bw_cnt",
                format!("{} is outside 1..={MAX_FULL_BW_CNT}", self.full_bw_cnt),
            );
        }
        if self.lt_intvl_min_rtts == 0 || 4 * self.lt_intvl_min_rtts > MAX_LT_RTTS {
            return err(
                "lt_intvl_min_rtts",
                format!(
                    "{} is outside 1..={} (4x must fit the 7-bit round counter)",
                    self.lt_intvl_min_rtts,
                    MAX_LT_RTTS / 4
                ),
            );
        }
        if self.lt_bw_max_rtts == 0 || self.lt_bw_max_rtts > MAX_LT_RTTS {
            return err(
                "lt_bw_max_rtts",
                format!("{} is outside 1..={MAX_LT_RTTS}", self.lt_bw_max_rtts),
            );
        }
        if self.extra_acked_win_rtts == 0 || self.extra_acked_win_rtts > MAX_EXTRA_ACKED_WIN_RTTS {
            return err(
                "extra_acked_win_rtts",
                format!(
                    "{} is outside 1..={MAX_EXTRA_ACKED_WIN_RTTS}",
                    self.extra_acked_win_rtts
                ),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::value::{Error as DeError, MapDeserializer};

    fn from_pairs(pairs: Vec<(&'static str, u64)>) -> Result<BbrConfig, DeError> {
        BbrConfig::deserialize(MapDeserializer::<_, DeError>::new(pairs.into_iter()))
    }

    #[test]
    fn defaults_are_the_kernel_constants() {
        let c = BbrConfig::default();
        assert_eq!(c.bw_rtts, 10);
        assert_eq!(c.min_rtt_win_sec, 10);
        assert_eq!(c.probe_rtt_mode_ms, 200);
        assert_eq!(c.min_tso_rate_bps, 1_200_000);
        assert_eq!(c.pacing_margin_percent, 1);
        // 256 * 2885 / 1000 = 738.56 -> 738, + 1 = 739 (2.8867 > 2/ln 2 = 2.8854).
        assert_eq!(c.high_gain, 739);
        // 256 * 1000 / 2885 = 88.73 -> 88 (0.34375).
        assert_eq!(c.drain_gain, 88);
        assert_eq!(c.cwnd_gain, 512);
        assert_eq!(c.cwnd_min_target, 4);
        assert_eq!(c.full_bw_thresh, 320);
        assert_eq!(c.full_bw_cnt, 3);
        assert_eq!(
            (c.lt_intvl_min_rtts, c.lt_loss_thresh, c.lt_bw_ratio),
            (4, 50, 32)
        );
        assert_eq!((c.lt_bw_diff_bytes_per_sec, c.lt_bw_max_rtts), (500, 48));
        assert_eq!((c.extra_acked_gain, c.extra_acked_win_rtts), (256, 5));
        assert_eq!(c.ack_epoch_acked_reset_thresh, 1 << 20);
        assert_eq!(c.extra_acked_max_us, 100_000);
        assert_eq!(c.validate(), Ok(()));
    }

    #[test]
    fn deserializes_partial_tables_and_rejects_unknown_keys() {
        let c = from_pairs(vec![("cwnd_gain", 640), ("cycle_seed", 7)]).unwrap();
        assert_eq!(c.cwnd_gain, 640);
        assert_eq!(c.cycle_seed, 7);
        assert_eq!(c.high_gain, 739);
        let e = from_pairs(vec![("cwnd_gian", 640)]).unwrap_err();
        assert!(e.to_string().contains("unknown field `cwnd_gian`"), "{e}");
    }

    #[test]
    fn validate_names_the_field_and_the_range() {
        let c = BbrConfig {
            high_gain: 2000,
            ..BbrConfig::default()
        };
        let e = c.validate().unwrap_err();
        assert_eq!(e.field, "high_gain");
        assert_eq!(
            e.to_string(),
            "bbr.high_gain: 2000 is outside 1..=1023 (units of 1/256)"
        );
        let c = BbrConfig {
            full_bw_cnt: 4,
            ..BbrConfig::default()
        };
        assert_eq!(c.validate().unwrap_err().field, "full_bw_cnt");
        let c = BbrConfig {
            pacing_margin_percent: 100,
            ..BbrConfig::default()
        };
        assert_eq!(c.validate().unwrap_err().field, "pacing_margin_percent");
    }
}
