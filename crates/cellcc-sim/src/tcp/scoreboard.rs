//! The sender's scoreboard: per-segment state of everything sent and not cumulatively
//! ACKed (Linux's retransmit queue with `TCP_SKB_CB(skb)->sacked`), the SACKed ranges, and
//! the send-time-ordered queue RACK walks (`tsorted_sent_queue`).
//!
//! Layout, chosen so that no per-ACK work scans the window:
//! * `segs` is a `VecDeque` indexed by `seq − base` (`base` = oldest unacked segment);
//!   cumulative ACKs pop from the front.
//! * `sacked` holds the SACKed sequence ranges (sorted, disjoint, merged), so a SACK block
//!   only visits the segments it newly covers.
//! * `tsorted` is pushed on every (re)transmission, hence sorted by send time. Entries
//!   are deleted lazily: an entry is live only while its segment is unacked, un-SACKed,
//!   not waiting for retransmission and not sent again since (`xmits` matches).
//! * `lost_pending` counts segments marked lost and not yet retransmitted, and
//!   `rexmit_hint` is a lower bound on their sequence numbers
//!   (`retransmit_skb_hint`).
//!
//! Counters (`sacked_out`, `lost_out`, `retrans_out`) live in [`Sock`] and are updated
//! by [`Scoreboard::set_flags`] / [`Scoreboard::pop_front`] from the flag change alone.

use std::collections::VecDeque;

use cellcc_congestion::Sock;
use cellcc_units::Time;

use super::rate::TxSnapshot;

/// `TCPCB_SACKED_ACKED`: the receiver holds this segment.
pub(crate) const SACKED: u8 = 1 << 0;
/// `TCPCB_SACKED_RETRANS`: a retransmission of this segment is in flight.
pub(crate) const RETRANS: u8 = 1 << 1;
/// `TCPCB_LOST`: presumed lost.
pub(crate) const LOST: u8 = 1 << 2;
/// `TCPCB_EVER_RETRANS`: sent more than once.
pub(crate) const EVER_RETRANS: u8 = 1 << 3;
/// `TCPCB_RETRANS` = SACKED_RETRANS | EVER_RETRANS.
pub(crate) const ANY_RETRANS: u8 = RETRANS | EVER_RETRANS;

/// One sent, not yet cumulatively ACKed segment.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Seg {
    /// Time of the latest transmission (`skb_mstamp`).
    pub sent_at: Time,
    /// Rate snapshot of the latest transmission.
    pub tx: TxSnapshot,
    /// Number of transmissions; identifies live `tsorted` entries.
    pub xmits: u32,
    /// `SACKED | RETRANS | LOST | EVER_RETRANS`.
    pub flags: u8,
}

#[derive(Debug, Default)]
pub(crate) struct Scoreboard {
    /// Sequence number of `segs[0]` (`snd_una` after the last cumulative ACK).
    base: u64,
    segs: VecDeque<Seg>,
    /// SACKed ranges `[start, end)`, sorted and merged.
    sacked: Vec<(u64, u64)>,
    /// `(seq, xmits)` in transmission order.
    pub tsorted: VecDeque<(u64, u32)>,
    /// Segments with LOST and neither RETRANS nor SACKED.
    pub lost_pending: u32,
    /// Every lost-pending segment has `seq >= rexmit_hint`.
    rexmit_hint: u64,
    /// One past the highest SACKed segment (`tcp_highest_sack_seq` while any is SACKed).
    pub highest_sack_end: u64,
}

impl Scoreboard {
    /// Oldest segment held (the scoreboard's `snd_una`).
    pub(crate) fn base(&self) -> u64 {
        self.base
    }

    /// One past the newest segment held (`snd_nxt`).
    pub(crate) fn end(&self) -> u64 {
        self.base + self.segs.len() as u64
    }

    pub(crate) fn seg(&self, seq: u64) -> &Seg {
        &self.segs[(seq - self.base) as usize]
    }

    pub(crate) fn seg_mut(&mut self, seq: u64) -> &mut Seg {
        &mut self.segs[(seq - self.base) as usize]
    }

    /// The oldest segment, if any.
    pub(crate) fn head(&self) -> Option<&Seg> {
        self.segs.front()
    }

    /// Append a newly sent segment (it becomes `end() - 1`).
    pub(crate) fn push_new(&mut self, seg: Seg) {
        let seq = self.end();
        self.tsorted.push_back((seq, seg.xmits));
        self.segs.push_back(seg);
    }

    /// Record a retransmission of `seq` at `now` (flags are changed separately).
    pub(crate) fn record_retransmit(&mut self, seq: u64, now: Time, tx: TxSnapshot) {
        let seg = self.seg_mut(seq);
        seg.sent_at = now;
        seg.tx = tx;
        seg.xmits += 1;
        let xmits = seg.xmits;
        self.tsorted.push_back((seq, xmits));
    }

    /// Whether a `tsorted` entry still stands for a segment RACK must consider.
    pub(crate) fn is_live(&self, seq: u64, xmits: u32) -> bool {
        if seq < self.base || seq >= self.end() {
            return false;
        }
        let s = self.seg(seq);
        // Skip ones already marked lost but not yet retransmitted (Linux removes them
        // from the list), and SACKed ones (Linux unlinks them when SACKed).
        s.xmits == xmits && s.flags & SACKED == 0 && !is_lost_pending(s.flags)
    }

    /// Change the flags of `seq`, keeping the `Sock` counters and the retransmission
    /// bookkeeping in step.
    pub(crate) fn set_flags(&mut self, sock: &mut Sock, seq: u64, new: u8) {
        let seg = self.seg_mut(seq);
        let old = seg.flags;
        seg.flags = new;
        apply_counts(sock, old, new);
        match (is_lost_pending(old), is_lost_pending(new)) {
            (false, true) => {
                self.lost_pending += 1;
                self.rexmit_hint = self.rexmit_hint.min(seq);
            }
            (true, false) => self.lost_pending -= 1,
            _ => {}
        }
    }

    /// `tcp_mark_skb_lost`: mark `seq` lost (or account a lost retransmission). Returns
    /// whether it counts as a new loss (`tp->lost`).
    pub(crate) fn mark_lost(&mut self, sock: &mut Sock, seq: u64) -> bool {
        let f = self.seg(seq).flags;
        if f & SACKED != 0 {
            return false;
        }
        if f & LOST != 0 {
            if f & RETRANS == 0 {
                return false;
            }
            // A retransmission that was lost again.
            self.set_flags(sock, seq, f & !RETRANS);
        } else {
            self.set_flags(sock, seq, f | LOST);
        }
        sock.lost += 1;
        true
    }

    /// Remove the oldest segment (cumulatively ACKed); counters are updated.
    pub(crate) fn pop_front(&mut self, sock: &mut Sock) -> Seg {
        let seg = self
            .segs
            .pop_front()
            .expect("pop_front on an empty scoreboard");
        apply_counts(sock, seg.flags, 0);
        if is_lost_pending(seg.flags) {
            self.lost_pending -= 1;
        }
        self.base += 1;
        seg
    }

    /// After a cumulative ACK: drop SACK ranges and hints below `base`.
    pub(crate) fn trim(&mut self) {
        let base = self.base;
        let k = self.sacked.partition_point(|r| r.1 <= base);
        self.sacked.drain(..k);
        if let Some(first) = self.sacked.first_mut() {
            first.0 = first.0.max(base);
        }
        self.rexmit_hint = self.rexmit_hint.max(base);
        if self.tsorted.len() > 2 * self.segs.len() + 64 {
            // Stale entries only accumulate if RACK never walks the queue (it is off, or
            // nothing is ever reordered); compact now and then to bound memory.
            let segs = &self.segs;
            self.tsorted.retain(|&(seq, xmits)| {
                seq >= base
                    && segs
                        .get((seq - base) as usize)
                        .is_some_and(|s| s.xmits == xmits)
            });
        }
    }

    /// Append to `out` the sub-ranges of `[start, end)` not yet SACKed.
    pub(crate) fn unsacked_gaps(&self, start: u64, end: u64, out: &mut Vec<(u64, u64)>) {
        let mut i = self.sacked.partition_point(|r| r.1 <= start);
        let mut cur = start;
        while i < self.sacked.len() && self.sacked[i].0 < end {
            let (s, e) = self.sacked[i];
            if s > cur {
                out.push((cur, s));
            }
            cur = cur.max(e);
            i += 1;
        }
        if cur < end {
            out.push((cur, end));
        }
    }

    /// Record `[start, end)` as SACKed (the segments' flags are set separately).
    pub(crate) fn add_sacked(&mut self, start: u64, end: u64) {
        let v = &mut self.sacked;
        let i = v.partition_point(|r| r.1 < start);
        let j = v.partition_point(|r| r.0 <= end);
        if i == j {
            v.insert(i, (start, end));
        } else {
            let s = start.min(v[i].0);
            let e = end.max(v[j - 1].1);
            v[i] = (s, e);
            v.drain(i + 1..j);
        }
    }

    /// Number of SACKed ranges (holes above `snd_una` are at most this many).
    #[cfg(test)]
    pub(crate) fn sacked_ranges(&self) -> &[(u64, u64)] {
        &self.sacked
    }

    /// Lowest segment marked lost and not yet retransmitted.
    pub(crate) fn next_lost(&mut self) -> Option<u64> {
        if self.lost_pending == 0 {
            return None;
        }
        let mut seq = self.rexmit_hint.max(self.base);
        while seq < self.end() {
            if is_lost_pending(self.seg(seq).flags) {
                self.rexmit_hint = seq;
                return Some(seq);
            }
            seq += 1;
        }
        debug_assert!(
            false,
            "lost_pending > 0 but no lost segment at or after the hint"
        );
        None
    }

    /// Iterate over all sequence numbers held (for the rare whole-window walks: RTO,
    /// undo).
    pub(crate) fn seqs(&self) -> std::ops::Range<u64> {
        self.base..self.end()
    }
}

/// LOST and not (RETRANS or SACKED): waiting for a retransmission.
pub(crate) fn is_lost_pending(flags: u8) -> bool {
    flags & LOST != 0 && flags & (RETRANS | SACKED) == 0
}

fn apply_counts(sock: &mut Sock, old: u8, new: u8) {
    fn delta(counter: &mut u32, old: u8, new: u8, bit: u8) {
        match (old & bit != 0, new & bit != 0) {
            (false, true) => *counter += 1,
            (true, false) => *counter -= 1,
            _ => {}
        }
    }
    delta(&mut sock.sacked_out, old, new, SACKED);
    delta(&mut sock.lost_out, old, new, LOST);
    delta(&mut sock.retrans_out, old, new, RETRANS);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg() -> Seg {
        Seg {
            sent_at: Time::ZERO,
            tx: TxSnapshot {
                first_tx: Time::ZERO,
                delivered_mstamp: Some(Time::ZERO),
                delivered: 0,
                is_app_limited: false,
            },
            xmits: 1,
            flags: 0,
        }
    }

    #[test]
    fn sack_ranges_merge_and_gaps_skip_known_spans() {
        let mut sb = Scoreboard::default();
        for _ in 0..100 {
            sb.push_new(seg());
        }
        sb.add_sacked(10, 20);
        sb.add_sacked(30, 40);
        let mut gaps = Vec::new();
        sb.unsacked_gaps(5, 45, &mut gaps);
        assert_eq!(gaps, vec![(5, 10), (20, 30), (40, 45)]);
        sb.add_sacked(20, 30); // adjacent on both sides: one range
        assert_eq!(sb.sacked_ranges(), &[(10, 40)]);
        sb.add_sacked(50, 60);
        sb.add_sacked(45, 55);
        assert_eq!(sb.sacked_ranges(), &[(10, 40), (45, 60)]);
        gaps.clear();
        sb.unsacked_gaps(12, 38, &mut gaps);
        assert!(gaps.is_empty());
    }

    #[test]
    fn flags_drive_counters_and_lost_queue() {
        let mut sock = Sock::new(1448, Time::ZERO);
        let mut sb = Scoreboard::default();
        for _ in 0..10 {
            sb.push_new(seg());
        }
        assert!(sb.mark_lost(&mut sock, 3));
        assert!(sb.mark_lost(&mut sock, 1));
        assert!(
            !sb.mark_lost(&mut sock, 1),
            "already lost, not retransmitted"
        );
        assert_eq!((sock.lost_out, sock.lost, sb.lost_pending), (2, 2, 1 + 1));
        assert_eq!(sb.next_lost(), Some(1));
        sb.set_flags(&mut sock, 1, LOST | RETRANS | EVER_RETRANS);
        assert_eq!((sock.retrans_out, sb.lost_pending), (1, 1));
        assert_eq!(sb.next_lost(), Some(3));
        // The retransmission of 1 is lost again: RETRANS cleared, counted as a new loss.
        assert!(sb.mark_lost(&mut sock, 1));
        assert_eq!((sock.retrans_out, sock.lost, sb.lost_pending), (0, 3, 2));
        assert_eq!(sb.next_lost(), Some(1));
        sb.set_flags(&mut sock, 5, SACKED);
        assert!(
            !sb.mark_lost(&mut sock, 5),
            "SACKed segments are never lost"
        );
        let s0 = sb.pop_front(&mut sock);
        assert_eq!(s0.flags, 0);
        let s1 = sb.pop_front(&mut sock);
        assert_eq!(s1.flags, LOST | EVER_RETRANS);
        assert_eq!((sock.lost_out, sb.lost_pending), (1, 1));
        assert_eq!(sb.base(), 2);
    }
}
