//! Delivery-rate estimation, Linux `net/ipv4/tcp_rate.c` (as described in the IRTF ICCRG
//! delivery-rate-estimation draft, version 00).
//!
//! Model. Every transmission snapshots the connection's delivery state: `delivered` (total
//! segments delivered so far), `delivered_mstamp` (when that count last changed),
//! `first_tx_mstamp` (send time of the packet that started the current send phase) and
//! whether the flow is application-limited. When a packet is (S)ACKed, the snapshot of
//! the most recently sent packet among those newly delivered by the ACK becomes the start
//! of the sample: `rate = (delivered_now − delivered_then) / max(send phase, ACK phase)`.
//! Samples shorter than `min_rtt` are discarded.
//!
//! Differences from Linux:
//! 1. "Unset" timestamps are `Option`s instead of the value 0 (the simulation may start at
//!    time 0).
//! 2. Times are ns instants; intervals are truncated to whole µs as `tcp_stamp_us_delta`
//!    does. No ECN, so no `delivered_ce`.

use cellcc_congestion::{RateSample, Sock};
use cellcc_units::{Dur, Time};

/// The per-packet snapshot taken at transmission (`TCP_SKB_CB(skb)->tx`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TxSnapshot {
    /// `tx.first_tx_mstamp`.
    pub first_tx: Time,
    /// `tx.delivered_mstamp`; `None` once the packet was SACKed and counted.
    pub delivered_mstamp: Option<Time>,
    /// `tx.delivered`.
    pub delivered: u64,
    /// `tx.is_app_limited`.
    pub is_app_limited: bool,
}

/// Per-ACK accumulator: the fields of `struct rate_sample` filled while walking the
/// newly delivered packets.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RateAcc {
    pub prior_delivered: u64,
    pub prior_mstamp: Option<Time>,
    pub is_app_limited: bool,
    pub is_retrans: bool,
    pub last_end_seq: u64,
    /// Send phase of the sample (`interval_us` before `tcp_rate_gen`).
    pub snd_interval: Dur,
}

/// Connection-level rate state (`first_tx_mstamp`, `rate_delivered`, `rate_interval_us`,
/// `rate_app_limited`).
#[derive(Clone, Debug, Default)]
pub(crate) struct RateEstimator {
    pub first_tx_mstamp: Time,
    pub rate_delivered: u64,
    pub rate_interval: Dur,
    pub rate_app_limited: bool,
}

/// `tcp_stamp_us_delta`: whole microseconds from `t0` to `t1` (0 if negative).
pub(crate) fn us_delta(t1: Time, t0: Time) -> Dur {
    Dur::from_us(t1.saturating_since(t0).as_us())
}

/// `tcp_skb_sent_after`: was (t1, seq1) sent after (t2, seq2)? Ties in time are broken by
/// sequence.
pub(crate) fn sent_after(t1: Time, t2: Time, seq1: u64, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

impl RateEstimator {
    /// `tcp_rate_skb_sent`: snapshot for a packet sent at `now`. Call before
    /// `packets_out` counts the packet (for new data).
    pub(crate) fn skb_sent(&mut self, sock: &mut Sock, now: Time) -> TxSnapshot {
        if sock.packets_out == 0 {
            // Nothing in flight: any ACK from now on shows the network delivered
            // everything between now and then, so start the phases here.
            self.first_tx_mstamp = now;
            sock.delivered_mstamp = now;
        }
        TxSnapshot {
            first_tx: self.first_tx_mstamp,
            delivered_mstamp: Some(sock.delivered_mstamp),
            delivered: sock.delivered,
            is_app_limited: sock.app_limited != 0,
        }
    }

    /// `tcp_rate_skb_delivered`: a packet (sent at `sent_at`, ending at `end_seq`) was
    /// newly (S)ACKed. `sacked`: it was SACKed (not cumulatively ACKed), so its snapshot is
    /// consumed now and not used again when the cumulative ACK covers it.
    pub(crate) fn skb_delivered(
        &mut self,
        acc: &mut RateAcc,
        tx: &mut TxSnapshot,
        sent_at: Time,
        end_seq: u64,
        is_retrans: bool,
        sacked: bool,
    ) {
        let Some(delivered_mstamp) = tx.delivered_mstamp else {
            return;
        };
        // Linux tests `!rs->prior_delivered`, so a snapshot taken when nothing had been
        // delivered yet is always superseded; kept for fidelity.
        if acc.prior_delivered == 0
            || sent_after(sent_at, self.first_tx_mstamp, end_seq, acc.last_end_seq)
        {
            acc.prior_delivered = tx.delivered;
            acc.prior_mstamp = Some(delivered_mstamp);
            acc.is_app_limited = tx.is_app_limited;
            acc.is_retrans = is_retrans;
            acc.last_end_seq = end_seq;
            // Record the send time of the most recently ACKed packet, and the length of
            // this window's send phase.
            self.first_tx_mstamp = sent_at;
            acc.snd_interval = us_delta(self.first_tx_mstamp, tx.first_tx);
        }
        if sacked {
            tx.delivered_mstamp = None;
        }
    }

    /// `tcp_rate_gen`: build the ACK's rate sample. `delivered` and `lost` are the segments
    /// newly delivered and newly marked lost by this ACK.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn gen(
        &mut self,
        sock: &mut Sock,
        acc: &RateAcc,
        delivered: u32,
        lost: u32,
        prior_in_flight: u32,
        rtt: Option<Dur>,
        is_ack_delayed: bool,
    ) -> RateSample {
        // Clear app-limited once the bubble is ACKed and gone.
        if sock.app_limited != 0 && sock.delivered > sock.app_limited {
            sock.app_limited = 0;
        }
        if delivered > 0 {
            sock.delivered_mstamp = sock.now;
        }
        let mut rs = RateSample {
            prior_mstamp: acc.prior_mstamp.unwrap_or(Time::ZERO),
            prior_delivered: acc.prior_delivered,
            delivered: 0,
            interval: None,
            snd_interval: Dur::ZERO,
            rcv_interval: Dur::ZERO,
            rtt,
            losses: lost,
            acked_sacked: delivered,
            prior_in_flight,
            is_app_limited: acc.is_app_limited,
            is_retrans: acc.is_retrans,
            is_ack_delayed,
        };
        let Some(prior_mstamp) = acc.prior_mstamp else {
            // No timing information (nothing newly delivered carried a snapshot).
            return rs;
        };
        rs.delivered = sock.delivered - acc.prior_delivered;
        // Sending and ACKing are separate pipeline phases of a window; use the longer one
        // (ACK compression can make the send phase the longer).
        let snd = acc.snd_interval;
        let ack = us_delta(sock.now, prior_mstamp);
        let interval = snd.max(ack);
        rs.snd_interval = snd;
        rs.rcv_interval = ack;
        if interval < sock.min_rtt {
            // Normally interval ≥ min_rtt; shorter ones would overestimate the rate.
            return rs;
        }
        rs.interval = Some(interval);
        // Record the last non-app-limited sample, or the highest app-limited one.
        if !rs.is_app_limited
            || (rs.delivered as u128 * self.rate_interval.as_ns() as u128
                >= self.rate_delivered as u128 * interval.as_ns() as u128)
        {
            self.rate_delivered = rs.delivered;
            self.rate_interval = interval;
            self.rate_app_limited = rs.is_app_limited;
        }
        rs
    }

    /// `tcp_rate_check_app_limited`: if the sender has less than a segment of new data,
    /// is not cwnd-limited and has retransmitted every lost segment, mark the flow
    /// application-limited until everything now in flight is delivered.
    pub(crate) fn check_app_limited(sock: &mut Sock, has_unsent_data: bool) {
        let in_flight = sock.packets_in_flight();
        if !has_unsent_data && in_flight < sock.cwnd && sock.lost_out <= sock.retrans_out {
            sock.app_limited = (sock.delivered + in_flight as u64).max(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_spans_from_the_newest_acked_packets_snapshot() {
        let mut sock = Sock::new(1448, Time::ZERO);
        let mut r = RateEstimator::default();
        sock.min_rtt = Dur::from_ms(10);
        // Packet A sent at 0 with nothing in flight: phases start at 0.
        let mut a = r.skb_sent(&mut sock, Time::ZERO);
        sock.packets_out = 1;
        // 20 segments were delivered by t = 50 ms (from an earlier window).
        sock.delivered = 20;
        sock.delivered_mstamp = Time::from_ms(50);
        // Packet B sent at 60 ms.
        let mut b = r.skb_sent(&mut sock, Time::from_ms(60));
        assert_eq!(b.delivered, 20);
        assert_eq!(b.first_tx, Time::ZERO);
        // At 100 ms one ACK delivers A and B (and 8 more segments counted elsewhere).
        sock.now = Time::from_ms(100);
        let mut acc = RateAcc::default();
        r.skb_delivered(&mut acc, &mut a, Time::ZERO, 1, false, false);
        r.skb_delivered(&mut acc, &mut b, Time::from_ms(60), 2, false, false);
        sock.delivered = 30;
        let rs = r.gen(&mut sock, &acc, 10, 0, 2, None, false);
        // B is the newest: delivered 30 - 20 = 10 over max(send 60 ms, ack 50 ms).
        assert_eq!(rs.delivered, 10);
        assert_eq!(rs.snd_interval, Dur::from_ms(60));
        assert_eq!(rs.rcv_interval, Dur::from_ms(50));
        assert_eq!(rs.interval, Some(Dur::from_ms(60)));
        assert_eq!(sock.delivered_mstamp, Time::from_ms(100));
    }

    #[test]
    fn short_samples_are_invalid_and_app_limited_marks_clear() {
        let mut sock = Sock::new(1448, Time::ZERO);
        let mut r = RateEstimator::default();
        sock.min_rtt = Dur::from_ms(40);
        sock.cwnd = 10;
        RateEstimator::check_app_limited(&mut sock, false);
        assert_eq!(sock.app_limited, 1);
        let mut a = r.skb_sent(&mut sock, Time::ZERO);
        assert!(a.is_app_limited);
        sock.packets_out = 1;
        sock.now = Time::from_ms(30);
        let mut acc = RateAcc::default();
        r.skb_delivered(&mut acc, &mut a, Time::ZERO, 1, false, true);
        assert_eq!(a.delivered_mstamp, None);
        sock.delivered = 1;
        let rs = r.gen(&mut sock, &acc, 1, 0, 1, None, false);
        assert!(rs.is_app_limited);
        assert_eq!(rs.interval, None, "30 ms < min_rtt 40 ms");
        // The mark is cleared once delivered passes it.
        assert_eq!(sock.app_limited, 1);
        sock.delivered = 2;
        let rs = r.gen(&mut sock, &RateAcc::default(), 1, 0, 0, None, false);
        assert_eq!(rs.interval, None, "no snapshot, no timing");
        assert_eq!(sock.app_limited, 0);
    }
}
