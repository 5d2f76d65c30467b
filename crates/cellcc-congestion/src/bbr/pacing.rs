//! Pacing rate and TSO goal (`bbr_rate_bytes_per_sec`, `bbr_bw_to_pacing_rate`,
//! `bbr_init_pacing_rate_from_rtt`, `bbr_set_pacing_rate`, `bbr_min_tso_segs`,
//! `bbr_tso_segs_goal`).
//!
//! ```text
//! pacing_rate [bytes/s] = bw [pkt/µs << 24] * mss * gain / 256 * 10^6 * 99 / 100 >> 24
//! ```
//!
//! The multiplication order is the kernel's, so results match it to the byte.

use super::{saturate_u32, Bbr, BBR_SCALE, BW_SCALE, BW_UNIT};
use crate::Sock;

/// Pace this many percent below the estimate, to keep the bottleneck queue small on
/// average (`bbr_pacing_margin_percent`).
pub(super) const PACING_MARGIN_PERCENT: u32 = 1;
/// Below this pacing rate, bits/s, send single-segment TSO bursts (`bbr_min_tso_rate`).
pub(super) const MIN_TSO_RATE_BPS: u64 = 1_200_000;

/// µs per second (`USEC_PER_SEC`).
const USEC_PER_SEC: u64 = 1_000_000;
/// Initial RTT when there is no sample yet, µs (`USEC_PER_MSEC`: a nominal 1 ms).
const DEFAULT_RTT_US: u64 = 1000;
/// TSO bursts hold about 1 ms of data: `pacing_rate >> sk_pacing_shift` (default 10).
const PACING_SHIFT: u32 = 10;
/// Largest legacy GSO packet, bytes (`GSO_LEGACY_MAX_SIZE`).
const GSO_LEGACY_MAX_SIZE: u64 = 65_536;
/// Header room TCP reserves per skb, bytes (`MAX_TCP_HEADER` on x86-64 with the usual
/// distribution config: `L1_CACHE_ALIGN(128 + MAX_HEADER)` = 320).
const MAX_TCP_HEADER: u64 = 320;
/// The TSO goal's 7-bit cap (`0x7F`).
const MAX_TSO_SEGS_GOAL: u32 = 0x7F;

impl Bbr {
    /// `bbr_rate_bytes_per_sec`: `rate` (packets/µs << 24) × gain in bytes per second,
    /// minus the pacing margin.
    pub(super) fn rate_bytes_per_sec(&self, mss: u32, rate: u64, gain: u32) -> u64 {
        let margin = u64::from(100u32.saturating_sub(self.config.pacing_margin_percent));
        let mut rate = u128::from(rate);
        rate *= u128::from(mss);
        rate *= u128::from(gain);
        rate >>= BBR_SCALE;
        rate *= u128::from(USEC_PER_SEC / 100 * margin);
        u64::try_from(rate >> BW_SCALE).unwrap_or(u64::MAX)
    }

    /// `bbr_bw_to_pacing_rate`: bandwidth and gain to a pacing rate, capped by
    /// `sk_max_pacing_rate`.
    pub(super) fn bw_to_pacing_rate(&self, sock: &Sock, bw: u32, gain: u32) -> u64 {
        self.rate_bytes_per_sec(sock.mss, u64::from(bw), gain)
            .min(sock.max_pacing_rate)
    }

    /// `bbr_init_pacing_rate_from_rtt`: `high_gain × cwnd / srtt`, with a nominal 1 ms
    /// before any RTT sample.
    pub(super) fn init_pacing_rate_from_rtt(&mut self, sock: &mut Sock) {
        let rtt_us = if sock.srtt.is_zero() {
            DEFAULT_RTT_US
        } else {
            self.has_seen_rtt = true;
            sock.srtt.as_us().max(1)
        };
        let bw = saturate_u32(u128::from(sock.cwnd) * u128::from(BW_UNIT) / u128::from(rtt_us));
        sock.pacing_rate = self.bw_to_pacing_rate(sock, bw, self.config.high_gain);
    }

    /// `bbr_set_pacing_rate`: pace at `gain × bw`. Until the pipe is full the rate only
    /// rises, so a low early estimate cannot slow STARTUP down.
    pub(super) fn set_pacing_rate(&mut self, sock: &mut Sock, bw: u32, gain: u32) {
        let rate = self.bw_to_pacing_rate(sock, bw, gain);

        // The first RTT sample replaces the nominal 1 ms of the initial rate.
        if !self.has_seen_rtt && !sock.srtt.is_zero() {
            self.init_pacing_rate_from_rtt(sock);
        }
        if self.full_bw_reached || rate > sock.pacing_rate {
            sock.pacing_rate = rate;
        }
    }

    /// `bbr_min_tso_segs`: 1 segment below 1.2 Mbit/s, else 2.
    pub(super) fn min_tso_segs(&self, sock: &Sock) -> u32 {
        if sock.pacing_rate < self.config.min_tso_rate_bps >> 3 {
            1
        } else {
            2
        }
    }

    /// `bbr_tso_segs_goal`: the burst size the kernel's TSO autosizing would pick
    /// (~1 ms of data at the pacing rate, ignoring the driver's GSO limit).
    pub(super) fn tso_segs_goal(&self, sock: &Sock) -> u32 {
        let bytes =
            (sock.pacing_rate >> PACING_SHIFT).min(GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER);
        let segs = u32::try_from(bytes / u64::from(sock.mss.max(1))).unwrap_or(u32::MAX);
        segs.max(self.min_tso_segs(sock)).min(MAX_TSO_SEGS_GOAL)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CongestionControl, Dur, Time};

    /// 1000 packets/s: 0.001 packets/µs × 2^24 = 16 777.216 -> 16 777.
    const BW_1000_PPS: u32 = 16_777;

    fn fresh() -> (Bbr, Sock) {
        let mut sock = Sock::new(1448, Time::ZERO);
        let mut bbr = Bbr::default();
        bbr.init(&mut sock);
        (bbr, sock)
    }

    #[test]
    fn pacing_rate_of_1000_packets_per_second() {
        let (bbr, sock) = fresh();
        // Exact: 1000 × 1448 B × 0.99 = 1 433 520 B/s.
        // Fixed point: 16 777 × 1448 = 24 293 096; × 256 >> 8 = 24 293 096;
        // × 990 000 = 24 050 165 040 000; >> 24 = 1 433 501 (the floor of bw loses
        // 0.216 / 16 777.216 = 0.0013 %).
        assert_eq!(bbr.bw_to_pacing_rate(&sock, BW_1000_PPS, 256), 1_433_501);
        // STARTUP: 24 293 096 × 739 >> 8 = 70 127 335; × 990 000 >> 24 = 4 138 115
        // (exact 2.8867 × 1 433 520 = 4 138 169).
        assert_eq!(bbr.bw_to_pacing_rate(&sock, BW_1000_PPS, 739), 4_138_115);
    }

    #[test]
    fn max_pacing_rate_caps_the_rate() {
        let (bbr, mut sock) = fresh();
        sock.max_pacing_rate = 1_000_000;
        assert_eq!(bbr.bw_to_pacing_rate(&sock, BW_1000_PPS, 256), 1_000_000);
    }

    #[test]
    fn initial_rate_is_high_gain_times_cwnd_over_srtt_or_1_ms() {
        let (bbr, sock) = fresh();
        // No RTT: 10 packets per 1000 µs = 10 × 2^24 / 1000 = 167 772;
        // × 1448 × 739 >> 8, × 990 000 >> 24 = 41 381 651 B/s.
        assert_eq!(sock.pacing_rate, 41_381_651);
        assert!(!bbr.has_seen_rtt);
        assert_eq!(sock.pacing_status, crate::PacingStatus::Needed);

        // With srtt = 40 ms: 10 × 2^24 / 40 000 = 4194 -> 1 034 467 B/s.
        let mut sock = Sock::new(1448, Time::ZERO);
        sock.srtt = Dur::from_ms(40);
        let mut bbr = Bbr::default();
        bbr.init(&mut sock);
        assert_eq!(sock.pacing_rate, 1_034_467);
        assert!(bbr.has_seen_rtt);
    }

    #[test]
    fn before_the_pipe_is_full_the_rate_only_rises_and_the_first_rtt_resets_it() {
        let (mut bbr, mut sock) = fresh();
        // The first RTT sample (40 ms) replaces the 1 ms guess, even though it lowers
        // the rate: 41 381 651 -> 1 034 467.
        sock.srtt = Dur::from_ms(40);
        bbr.set_pacing_rate(&mut sock, 100, 739);
        assert_eq!(sock.pacing_rate, 1_034_467);
        // A higher model rate raises it ...
        bbr.set_pacing_rate(&mut sock, BW_1000_PPS, 739);
        assert_eq!(sock.pacing_rate, 4_138_115);
        // ... a lower one does not, until the pipe is full.
        bbr.set_pacing_rate(&mut sock, BW_1000_PPS, 256);
        assert_eq!(sock.pacing_rate, 4_138_115);
        bbr.full_bw_reached = true;
        bbr.set_pacing_rate(&mut sock, BW_1000_PPS, 256);
        assert_eq!(sock.pacing_rate, 1_433_501);
    }

    #[test]
    fn tso_goal_is_one_ms_of_data_between_the_kernel_limits() {
        let (bbr, mut sock) = fresh();
        // Below 1.2 Mbit/s = 150 000 B/s: 1 segment.
        sock.pacing_rate = 149_999;
        assert_eq!(bbr.tso_segs_goal(&sock), 1);
        // At 150 000 B/s: 146 B per ms, still less than a segment, so the minimum 2.
        sock.pacing_rate = 150_000;
        assert_eq!(bbr.tso_segs_goal(&sock), 2);
        // 100 Mbit/s = 12.5 MB/s: >> 10 = 12 207 B = 8 segments of 1448.
        sock.pacing_rate = 12_500_000;
        assert_eq!(bbr.tso_segs_goal(&sock), 8);
        // 10 Gbit/s: capped at (65 536 - 1 - 320) / 1448 = 45 segments.
        sock.pacing_rate = 1_250_000_000;
        assert_eq!(bbr.tso_segs_goal(&sock), 45);
        // Small MSS: the 127-segment cap.
        sock.mss = 100;
        assert_eq!(bbr.tso_segs_goal(&sock), 127);
    }
}
