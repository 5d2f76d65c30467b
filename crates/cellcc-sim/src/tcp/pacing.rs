//! Pacing: Linux's internal earliest-departure-time (EDT) pacing (`tcp_pacing_check`,
//! `tcp_update_skb_after_send` in `net/ipv4/tcp_output.c`) and the default pacing-rate
//! update for congestion controls that do not own cwnd (`tcp_update_pacing_rate` in
//! `net/ipv4/tcp_input.c`).
//!
//! Pacing is enforced only when the congestion control sets
//! `sock.pacing_status = PacingStatus::Needed` (BBR-like algorithms), as in Linux without
//! the fq qdisc; otherwise `pacing_rate` is computed for reporting and never delays a
//! packet.
//!
//! EDT model: `wstamp` (`tcp_wstamp_ns`) is the earliest departure time of the next
//! packet. A packet may leave when `wstamp <= now`; sending `len` payload bytes at rate `r`
//! pushes `wstamp` by `len/r`, minus up to half of that as credit for time the socket
//! spent idle (Linux's allowance for OS jitter). The first 10 data segments of a
//! connection are not paced (as the original fq did not pace them).
//!
//! TSO/GSO bursts: Linux paces skbs, not segments. `tcp_write_xmit` builds each skb of
//! up to `tcp_tso_segs` segments (about 1 ms of data at the pacing rate, at least the
//! congestion control's `min_tso_segs` or the sysctl's 2) and sends it whole when pacing
//! releases it; the device (here the emulator's TUN) puts its segments on the wire back
//! to back. The pacer therefore checks the release time only at the first segment of a
//! burst and lets the rest of the burst leave at the same instant; each segment still
//! pushes `wstamp` by its own length, and the idle credit is shared over the burst as
//! Linux applies it to the skb. Not modelled: TSO deferral (`tcp_tso_should_defer`),
//! which only concerns unpaced senders here, whose window releases segments together
//! anyway.

use cellcc_congestion::{PacingStatus, Sock};
use cellcc_units::{Dur, Time, NS_PER_S};

/// Segments sent before pacing starts (`tp->data_segs_out >= 10`).
const UNPACED_INITIAL_SEGS: u64 = 10;
/// `sysctl_tcp_pacing_ss_ratio`, percent: pacing at 2× the current rate in slow start.
const PACING_SS_RATIO: u64 = 200;
/// `sysctl_tcp_pacing_ca_ratio`, percent: 1.2× in congestion avoidance.
const PACING_CA_RATIO: u64 = 120;
/// `sk_pacing_shift`: a TSO burst holds about 2^-10 s (1 ms) of data at the pacing rate.
const PACING_SHIFT: u32 = 10;
/// `sysctl_tcp_tso_rtt_log`: short paths get bigger bursts, `gso_max_size >> (min_rtt_us
/// >> 9)` more bytes.
const TSO_RTT_LOG: u32 = 9;
/// `sk_gso_max_size` for IPv4 over a device with the legacy 64 KiB GSO limit, less the
/// header room TCP reserves (`GSO_LEGACY_MAX_SIZE - (MAX_TCP_HEADER + 1)`).
const GSO_MAX_BYTES: u64 = 65_536 - (320 + 1);
/// `sysctl_tcp_min_tso_segs`.
const MIN_TSO_SEGS: u32 = 2;

/// `tcp_tso_segs` (with `tcp_tso_autosize`): segments per TSO burst for `sock`'s pacing
/// rate and min RTT, at least `min_tso` (the congestion control's `min_tso_segs`, else
/// the sysctl's 2).
pub(crate) fn tso_segs(sock: &Sock, min_tso: Option<u32>) -> u32 {
    let mut bytes = sock.pacing_rate >> PACING_SHIFT;
    let min_rtt_us = if sock.min_rtt == Dur::MAX {
        u64::MAX // tcp_min_rtt before a sample: ~0U
    } else {
        sock.min_rtt.as_us()
    };
    let r = min_rtt_us >> TSO_RTT_LOG;
    if r < 32 {
        bytes += GSO_MAX_BYTES >> r;
    }
    let segs = bytes.min(GSO_MAX_BYTES) / u64::from(sock.mss.max(1));
    (segs as u32).max(min_tso.unwrap_or(MIN_TSO_SEGS)).max(1)
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Pacer {
    /// Earliest departure time of the next packet (`tcp_wstamp_ns`).
    pub wstamp: Time,
    /// Data segments sent, including retransmissions (`data_segs_out`).
    pub data_segs_out: u64,
    /// Segments of the current TSO burst still free to leave at `burst_at` without a
    /// pacing check.
    pub burst_left: u32,
    /// When the current burst left.
    pub burst_at: Time,
    /// Idle credit (ns) of the current burst not yet used.
    pub burst_credit: u64,
}

impl Pacer {
    /// `tcp_pacing_check`: true if pacing holds the next packet back at `now`.
    /// The rest of a TSO burst is never held.
    pub(crate) fn holds(&self, sock: &Sock, now: Time) -> bool {
        sock.pacing_status == PacingStatus::Needed && self.wstamp > now && !self.in_burst(now)
    }

    /// Whether a segment sent at `now` continues the current TSO burst.
    fn in_burst(&self, now: Time) -> bool {
        self.burst_left > 0 && self.burst_at == now
    }

    /// Whether a paced segment sent at `now` starts a TSO burst (and so needs its size).
    pub(crate) fn starts_burst(&self, sock: &Sock, now: Time) -> bool {
        sock.pacing_status != PacingStatus::None && !self.in_burst(now)
    }

    /// Release time of the next packet, if pacing is enforced and it is in the future.
    pub(crate) fn release_time(&self, sock: &Sock, now: Time) -> Option<Time> {
        self.holds(sock, now).then_some(self.wstamp)
    }

    /// `tcp_pacing_delay`: how far the departure schedule runs ahead of `now`.
    pub(crate) fn delay(&self, sock: &Sock, now: Time) -> Dur {
        if sock.pacing_status == PacingStatus::Needed {
            self.wstamp.saturating_since(now)
        } else {
            Dur::ZERO
        }
    }

    /// A data segment of `len` payload bytes leaves at `now` (`__tcp_transmit_skb` then
    /// `tcp_update_skb_after_send`); `burst` is the TSO burst size (`tcp_tso_segs`),
    /// read only when this segment starts a burst ([`Pacer::starts_burst`]).
    pub(crate) fn on_send(&mut self, sock: &Sock, now: Time, len: u32, burst: u32) {
        let prior = self.wstamp;
        self.wstamp = self.wstamp.max(now);
        self.data_segs_out += 1;
        if sock.pacing_status == PacingStatus::None {
            return;
        }
        if self.in_burst(now) {
            self.burst_left -= 1;
        } else {
            self.burst_left = burst.saturating_sub(1);
            self.burst_at = now;
            self.burst_credit = self.wstamp.saturating_since(prior).as_ns();
        }
        let rate = sock.pacing_rate;
        if rate != 0 && rate != u64::MAX && self.data_segs_out >= UNPACED_INITIAL_SEGS {
            let len_ns = len as u64 * NS_PER_S / rate;
            let forgiven = (len_ns / 2).min(self.burst_credit);
            self.burst_credit -= forgiven;
            self.wstamp += Dur::from_ns(len_ns - forgiven);
        }
    }
}

/// `tcp_update_pacing_rate`: `mss · ratio · max(cwnd, packets_out) / srtt`, with ratio
/// 200 % while `cwnd < ssthresh/2` and 120 % otherwise, capped at `max_pacing_rate`.
/// `srtt_us8` is Linux's `srtt_us` (×8); before any RTT sample Linux skips the division.
pub(crate) fn default_pacing_rate(sock: &Sock, srtt_us8: u64) -> u64 {
    // mss · (USEC_PER_SEC / 100) · 8: the ×8 cancels srtt's scaling, /100 the percent.
    let mut rate = sock.mss as u64 * ((1_000_000 / 100) << 3);
    rate *= if sock.cwnd < sock.ssthresh / 2 {
        PACING_SS_RATIO
    } else {
        PACING_CA_RATIO
    };
    rate *= sock.cwnd.max(sock.packets_out) as u64;
    // Without an RTT sample Linux leaves the rate undivided.
    rate.checked_div(srtt_us8)
        .unwrap_or(rate)
        .min(sock.max_pacing_rate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_rate_is_two_or_1_2_times_cwnd_per_srtt() {
        let mut s = Sock::new(1000, Time::ZERO);
        s.cwnd = 10;
        // srtt 100 ms: cwnd/srtt = 100 kB/s; slow start (ssthresh ∞) → 200 kB/s.
        assert_eq!(default_pacing_rate(&s, 100_000 << 3), 200_000);
        s.ssthresh = 10;
        assert_eq!(default_pacing_rate(&s, 100_000 << 3), 120_000);
    }

    #[test]
    fn edt_spaces_packets_after_the_first_ten() {
        let mut s = Sock::new(1000, Time::ZERO);
        s.pacing_status = PacingStatus::Needed;
        s.pacing_rate = 1_000_000; // 1 ms per 1000-byte segment
        let mut p = Pacer::default();
        for _ in 0..9 {
            p.on_send(&s, Time::ZERO, 1000, 1);
        }
        assert!(!p.holds(&s, Time::ZERO));
        p.on_send(&s, Time::ZERO, 1000, 1);
        assert_eq!(p.wstamp, Time::from_ms(1));
        assert!(p.holds(&s, Time::ZERO));
        p.on_send(&s, Time::from_ms(1), 1000, 1);
        assert_eq!(p.wstamp, Time::from_ms(2));
        // After 10 ms idle, half the next gap is forgiven.
        p.on_send(&s, Time::from_ms(12), 1000, 1);
        assert_eq!(p.wstamp, Time::from_us(12_500));
    }

    #[test]
    fn a_tso_burst_leaves_at_once_and_pays_for_all_its_segments() {
        let mut s = Sock::new(1000, Time::ZERO);
        s.pacing_status = PacingStatus::Needed;
        s.pacing_rate = 1_000_000;
        let mut p = Pacer {
            data_segs_out: 10,
            ..Pacer::default()
        };
        // A burst of 2: the second segment is not held although wstamp is ahead.
        p.on_send(&s, Time::ZERO, 1000, 2);
        assert!(!p.holds(&s, Time::ZERO));
        p.on_send(&s, Time::ZERO, 1000, 2);
        assert_eq!(p.wstamp, Time::from_ms(2));
        assert!(p.holds(&s, Time::ZERO));
        // After 10 ms idle the burst is forgiven half of its whole length (1 ms of 2),
        // as Linux forgives half of the skb's.
        p.on_send(&s, Time::from_ms(12), 1000, 2);
        p.on_send(&s, Time::from_ms(12), 1000, 2);
        assert_eq!(p.wstamp, Time::from_ms(13));
    }

    #[test]
    fn tso_segs_is_a_millisecond_of_data_and_at_least_the_minimum() {
        let mut s = Sock::new(1448, Time::ZERO);
        s.min_rtt = Dur::from_ms(40);
        s.pacing_rate = 3_000_000 / 8; // 3 Mbit/s: 366 bytes per ms
        assert_eq!(tso_segs(&s, None), 2, "the sysctl's minimum");
        assert_eq!(tso_segs(&s, Some(1)), 1, "BBR below 1.2 Mbit/s");
        s.pacing_rate = 100_000_000 / 8; // 12 207 bytes per ms
        assert_eq!(tso_segs(&s, Some(2)), 8);
        // Short paths add gso_max_size >> (min_rtt_us >> 9): 64 KiB at 300 µs.
        s.min_rtt = Dur::from_us(300);
        assert_eq!(tso_segs(&s, Some(2)), (65_536 - 321) / 1448);
    }
}
