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

use cellcc_congestion::{PacingStatus, Sock};
use cellcc_units::{Dur, Time, NS_PER_S};

/// Segments sent before pacing starts (`tp->data_segs_out >= 10`).
const UNPACED_INITIAL_SEGS: u64 = 10;
/// `sysctl_tcp_pacing_ss_ratio`, percent: pacing at 2× the current rate in slow start.
const PACING_SS_RATIO: u64 = 200;
/// `sysctl_tcp_pacing_ca_ratio`, percent: 1.2× in congestion avoidance.
const PACING_CA_RATIO: u64 = 120;

#[derive(Clone, Debug, Default)]
pub(crate) struct Pacer {
    /// Earliest departure time of the next packet (`tcp_wstamp_ns`).
    pub wstamp: Time,
    /// Data segments sent, including retransmissions (`data_segs_out`).
    pub data_segs_out: u64,
}

impl Pacer {
    /// `tcp_pacing_check`: true if pacing holds the next packet back at `now`.
    pub(crate) fn holds(&self, sock: &Sock, now: Time) -> bool {
        sock.pacing_status == PacingStatus::Needed && self.wstamp > now
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
    /// `tcp_update_skb_after_send`).
    pub(crate) fn on_send(&mut self, sock: &Sock, now: Time, len: u32) {
        let prior = self.wstamp;
        self.wstamp = self.wstamp.max(now);
        self.data_segs_out += 1;
        if sock.pacing_status == PacingStatus::None {
            return;
        }
        let rate = sock.pacing_rate;
        if rate != 0 && rate != u64::MAX && self.data_segs_out >= UNPACED_INITIAL_SEGS {
            let len_ns = len as u64 * NS_PER_S / rate;
            let credit = self.wstamp.saturating_since(prior).as_ns();
            let len_ns = len_ns - (len_ns / 2).min(credit);
            self.wstamp += Dur::from_ns(len_ns);
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
            p.on_send(&s, Time::ZERO, 1000);
        }
        assert!(!p.holds(&s, Time::ZERO));
        p.on_send(&s, Time::ZERO, 1000);
        assert_eq!(p.wstamp, Time::from_ms(1));
        assert!(p.holds(&s, Time::ZERO));
        p.on_send(&s, Time::from_ms(1), 1000);
        assert_eq!(p.wstamp, Time::from_ms(2));
        // After 10 ms idle, half the next gap is forgiven.
        p.on_send(&s, Time::from_ms(12), 1000);
        assert_eq!(p.wstamp, Time::from_us(12_500));
    }
}
