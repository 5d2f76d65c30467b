//! ACK input: SACK scoreboard updates (`tcp_sacktag_write_queue`, `tcp_sacktag_one`,
//! `tcp_check_dsack`, `tcp_dsack_seen`), the cumulative ACK (`tcp_clean_rtx_queue`) and
//! the RTT sample (`tcp_ack_update_rtt`, `tcp_update_rtt_min`, `tcp_set_rto`), all from
//! `net/ipv4/tcp_input.c`.
//!
//! A SACK block only visits the segments it newly covers (the scoreboard keeps the
//! SACKed ranges); the cumulative ACK pops segments from the front of the scoreboard.
//! Differences from Linux: whole-segment sequence numbers (every segment is one packet);
//! no SACK reneging; a D-SACK's range is trusted if the sender retransmitted at least as
//! many segments as were ever D-SACKed (`tcp_dsack_seen`), without the window check.

use cellcc_congestion::AckSample;
use cellcc_units::{Dur, Time};

use super::handshake::Established;
use super::rate::us_delta;
use super::scoreboard::{ANY_RETRANS, LOST, RETRANS, SACKED};
use super::sender::{flag, AckState, Event, TcpSender};
use crate::packet::{AckSegment, MAX_SACK_BLOCKS};

/// `tcp_min_rtt_wlen`: window of the min-RTT filter, seconds.
const MIN_RTT_WLEN_S: u32 = 300;

impl TcpSender {
    /// `tcp_sacktag_write_queue`: apply the ACK's SACK blocks to the scoreboard.
    pub(crate) fn sacktag(&mut self, ack: &AckSegment, st: &mut AckState) {
        let blocks = ack.sack_blocks();
        // tcp_check_dsack: a first block below the cumulative ACK, or inside the second
        // block, reports a duplicate.
        let b0 = blocks[0];
        let mut dsack = false;
        if b0.start < ack.ack
            || (blocks.len() > 1 && b0.end <= blocks[1].end && b0.start >= blocks[1].start)
        {
            let dup = self.dsack_seen(b0.start, b0.end, st);
            if dup > 0 {
                dsack = true;
                // D-SACK for already forgotten data: count it against the undo budget.
                if let Some(marker) = self.undo_marker {
                    if self.undo_retrans > 0 && b0.end <= st.prior_snd_una && b0.end > marker {
                        self.undo_retrans = (self.undo_retrans - dup as i64).max(0);
                    }
                }
            }
        }
        // Valid blocks above the cumulative ACK, sorted by start.
        let mut list = [(0u64, 0u64, false); MAX_SACK_BLOCKS];
        let mut n = 0;
        for (i, b) in blocks.iter().enumerate() {
            if b.start >= b.end || b.end > self.sock.snd_nxt {
                continue; // tcp_is_sackblock_valid
            }
            let start = b.start.max(ack.ack);
            if start >= b.end {
                continue;
            }
            list[n] = (start, b.end, i == 0 && dsack);
            n += 1;
        }
        let list = &mut list[..n];
        list.sort_unstable_by_key(|b| b.0);
        let mut gaps = std::mem::take(&mut self.gap_scratch);
        for &(start, end, dup) in list.iter() {
            if dup {
                for seq in start..end {
                    self.sacktag_one(seq, true, st);
                }
            } else {
                gaps.clear();
                self.sb.unsacked_gaps(start, end, &mut gaps);
                for &(s, e) in &gaps {
                    for seq in s..e {
                        self.sacktag_one(seq, false, st);
                    }
                }
            }
            self.sb.add_sacked(start, end);
        }
        self.gap_scratch = gaps;
        if st.reord != u64::MAX {
            self.check_sack_reordering(st.reord);
        }
    }

    /// `tcp_dsack_seen`: returns the number of duplicate segments reported, or 0 for a
    /// dubious D-SACK.
    fn dsack_seen(&mut self, start: u64, end: u64, st: &mut AckState) -> u32 {
        if start >= end {
            return 0;
        }
        let dup = (end - start) as u32;
        if dup == 1 && self.tlp_high_seq == Some(end) {
            st.flag |= flag::DSACK_TLP;
        }
        self.dsack_dups += dup as u64;
        if self.dsack_dups > self.total_retrans {
            return 0; // the duplicates were not sent by us
        }
        // Widen RACK's reordering window only for D-SACKs that may come from reordering
        // (not from probes).
        if self.reord_seen > 0 && st.flag & flag::DSACK_TLP == 0 {
            self.rack.dsack_seen = true;
        }
        st.flag |= flag::DSACKING_ACK;
        // A spurious retransmission is delivered.
        st.sack_delivered += dup;
        self.stats.dsacks_received += 1;
        dup
    }

    /// `tcp_sacktag_one` plus `tcp_rate_skb_delivered` for one segment of a SACK block.
    fn sacktag_one(&mut self, seq: u64, dup: bool, st: &mut AckState) {
        let (flags, sent_at) = {
            let s = self.sb.seg(seq);
            (s.flags, s.sent_at)
        };
        // Account D-SACK for a retransmitted segment.
        if dup && flags & ANY_RETRANS != 0 {
            if let Some(marker) = self.undo_marker {
                if self.undo_retrans > 0 && seq + 1 > marker {
                    self.undo_retrans -= 1;
                }
            }
            if flags & SACKED != 0 && seq < st.reord {
                st.reord = seq;
            }
        }
        let mut new = flags;
        if flags & SACKED == 0 {
            self.rack_advance(flags, seq + 1, sent_at);
            if flags & RETRANS != 0 {
                // If not marked lost, the retransmission is believed still in flight.
                if flags & LOST != 0 {
                    new &= !(LOST | RETRANS);
                }
            } else {
                if flags & ANY_RETRANS == 0 {
                    // New SACK for a never-retransmitted segment in a hole: reordering.
                    if seq < self.highest_sack_seq() && seq < st.reord {
                        st.reord = seq;
                    }
                    if seq < self.high_seq {
                        st.flag |= flag::ORIG_SACK_ACKED;
                    }
                    st.first_sackt.get_or_insert(sent_at);
                    st.last_sackt = Some(sent_at);
                }
                new &= !LOST;
            }
            new |= SACKED;
            st.flag |= flag::DATA_SACKED;
            st.sack_delivered += 1;
            if let Some((hint, cnt)) = &mut self.lost_hint {
                if seq < *hint {
                    *cnt += 1;
                }
            }
        }
        if dup && new & RETRANS != 0 {
            // The retransmission was redundant: no longer in flight.
            new &= !RETRANS;
        }
        if new != flags {
            self.sb.set_flags(&mut self.sock, seq, new);
        }
        let seg = self.sb.seg_mut(seq);
        let sent_at = seg.sent_at;
        self.rate.skb_delivered(
            &mut st.acc,
            &mut seg.tx,
            sent_at,
            seq + 1,
            new & ANY_RETRANS != 0,
            new & SACKED != 0,
        );
        if new & SACKED != 0 && seq + 1 > self.sb.highest_sack_end {
            self.sb.highest_sack_end = seq + 1;
        }
    }

    /// `tcp_clean_rtx_queue`: remove cumulatively ACKed segments, take the RTT sample,
    /// re-arm timers and call `pkts_acked`.
    pub(crate) fn clean_rtx_queue(&mut self, ack: u64, st: &mut AckState) {
        let now = self.sock.now;
        let prior_sacked = self.sock.sacked_out;
        let mut first_ackt: Option<Time> = None;
        let mut last_ackt = Time::ZERO;
        let mut reord = u64::MAX;
        let mut pkts_acked = 0u32;
        let mut acked_bytes = 0u64;
        while self.sb.base() < ack {
            let seq = self.sb.base();
            let seg = self.sb.pop_front(&mut self.sock);
            let flags = seg.flags;
            if flags & ANY_RETRANS != 0 {
                st.flag |= flag::RETRANS_DATA_ACKED;
            } else if flags & SACKED == 0 {
                last_ackt = seg.sent_at;
                first_ackt.get_or_insert(seg.sent_at);
                reord = reord.min(seq);
                if seq < self.high_seq {
                    st.flag |= flag::ORIG_SACK_ACKED;
                }
            }
            if flags & SACKED == 0 {
                self.sock.delivered += 1;
                if !self.skb_spurious_retrans(flags, seg.sent_at) {
                    self.rack_advance(flags, seq + 1, seg.sent_at);
                }
            }
            let mut tx = seg.tx;
            self.rate.skb_delivered(
                &mut st.acc,
                &mut tx,
                seg.sent_at,
                seq + 1,
                flags & ANY_RETRANS != 0,
                false,
            );
            pkts_acked += 1;
            acked_bytes += self.seg_len(seq) as u64;
        }
        self.sock.packets_out = (self.sb.end() - self.sb.base()) as u32;
        self.sb.trim();
        if pkts_acked > 0 && self.sock.packets_out == 0 {
            self.chrono_rtx_queue_empty();
        }
        if pkts_acked > 0 {
            st.flag |= flag::DATA_ACKED;
            self.lost_hint = None;
            self.stats.bytes_acked += acked_bytes;
        }

        let mut seq_rtt = None;
        let mut ca_rtt = None;
        if let Some(first) = first_ackt {
            if st.flag & flag::RETRANS_DATA_ACKED == 0 {
                seq_rtt = Some(us_delta(now, first));
                ca_rtt = Some(us_delta(now, last_ackt));
                // Conservatively mark a delayed ACK: typically a lone runt segment over a
                // round trip to a receiver without out-of-order events.
                if pkts_acked == 1
                    && prior_sacked == 0
                    && acked_bytes < self.cfg.mss as u64
                    && st.acc.prior_delivered + 1 == self.sock.delivered
                    && st.flag & flag::CA_ALERT == 0
                {
                    st.flag |= flag::ACK_MAYBE_DELAYED;
                }
            }
        }
        let mut sack_rtt = None;
        if let Some(first) = st.first_sackt {
            sack_rtt = Some(us_delta(now, first));
            ca_rtt = st.last_sackt.map(|t| us_delta(now, t));
        }
        let rtt_update = self.ack_update_rtt(seq_rtt, sack_rtt, ca_rtt, st);

        if st.flag & flag::DATA_ACKED != 0 {
            st.flag |= flag::SET_XMIT_TIMER;
            // A non-retransmitted hole got filled: that is reordering.
            if reord < st.prior_fack {
                self.check_sack_reordering(reord);
            }
        } else if let (true, Some(sr), Some(head)) = (rtt_update, sack_rtt, self.sb.head()) {
            // Re-arm only if the SACKed data was sent before the head's last
            // transmission, or the RTO keeps extending during recovery.
            if sr > us_delta(now, head.sent_at) {
                st.flag |= flag::SET_XMIT_TIMER;
            }
        }

        let newly = (self.sock.delivered - st.prior_delivered) as u32;
        if newly > 0 {
            let sample = AckSample {
                pkts_acked: newly,
                rtt: st.ca_rtt,
                in_flight: st.prior_in_flight,
            };
            self.cc.pkts_acked(&mut self.sock, &sample);
        }
    }

    /// `tcp_skb_spurious_retrans`: a retransmitted segment ACKed by an ACK that echoes a
    /// timestamp from before its last transmission (the original got through).
    fn skb_spurious_retrans(&self, flags: u8, sent_at: Time) -> bool {
        flags & ANY_RETRANS != 0 && self.tsecr_before(self.ts_of(sent_at))
    }

    /// The TSval the sender put on a segment sent at `t`.
    pub(crate) fn ts_of(&self, t: Time) -> u32 {
        (t.as_ns() / self.cfg.ts_granularity.as_ns()) as u32
    }

    /// `tcp_tsopt_ecr_before`: the ACK's TSecr is before `when`.
    pub(crate) fn tsecr_before(&self, when: u32) -> bool {
        (self.rcv_tsecr.wrapping_sub(when) as i32) < 0
    }

    /// `tcp_ack_update_rtt`: choose the sample (cumulative ACK, else SACK, else the
    /// timestamp echo if the ACK advanced `snd_una`), update min_rtt, srtt and the RTO.
    fn ack_update_rtt(
        &mut self,
        seq_rtt: Option<Dur>,
        sack_rtt: Option<Dur>,
        ca_rtt: Option<Dur>,
        st: &mut AckState,
    ) -> bool {
        let mut seq_rtt = seq_rtt.or(sack_rtt);
        let mut ca_rtt = ca_rtt;
        if seq_rtt.is_none() && st.flag & flag::DATA_ACKED != 0 {
            // RTTM rule (RFC 7323 §4.1): use TSecr only if the ACK acknowledges new data.
            let delta = self.ts_now().wrapping_sub(self.rcv_tsecr);
            if delta < (i32::MAX as u32) / 1000 {
                let r =
                    Dur::from_us((self.cfg.ts_granularity.as_ns() * delta.max(1) as u64) / 1000);
                seq_rtt = Some(r);
                ca_rtt = Some(r);
            }
        }
        st.ca_rtt = ca_rtt;
        let Some(m) = seq_rtt else {
            return false;
        };
        self.update_rtt_min(ca_rtt.unwrap_or(m), st.flag);
        self.rtt
            .update(m.as_us(), self.sock.snd_una, self.sock.snd_nxt);
        self.sock.srtt = Dur::from_us(self.rtt.srtt_us());
        self.set_rto();
        // RFC 6298: reset the backoff only on a valid RTT measurement.
        self.backoff = 0;
        self.events.push(Event::Rtt(self.sock.now, m));
        true
    }

    /// `tcp_update_rtt_min`. As in Linux the filter holds `u32` µs and is timed by
    /// `tcp_jiffies32` (the low 32 bits of jiffies, compared with wrapping arithmetic)
    /// over `tcp_min_rtt_wlen · HZ` jiffies.
    fn update_rtt_min(&mut self, rtt: Dur, f: u32) {
        // Linux passes `u32 rtt_us`; 2^32 µs (71 min) is no real RTT, so saturate.
        let rtt_us = u32::try_from(rtt.as_us()).unwrap_or(u32::MAX);
        if f & flag::ACK_MAYBE_DELAYED != 0 && rtt_us > self.rtt_min.get() {
            // Delayed ACKs would make the filter overestimate once the minimum expires.
            return;
        }
        // jiffies_to_usecs(1): at most 10^6 µs since hz ≥ 1.
        let tick_us = u32::try_from(self.tick().as_us().max(1)).unwrap_or(u32::MAX);
        let wlen = MIN_RTT_WLEN_S.saturating_mul(self.cfg.hz);
        let jiffies32 = self.sock.jiffies() as u32; // tcp_jiffies32: truncation intended
        let v = if rtt_us == 0 { tick_us } else { rtt_us };
        self.rtt_min.running_min(wlen, jiffies32, v);
        self.sock.min_rtt = match self.rtt_min.get() {
            // The filter's "no sample" value (see `TcpSender::rtt_min`).
            u32::MAX => Dur::MAX,
            us => Dur::from_us(u64::from(us)),
        };
    }

    /// The SYN-ACK's part of `tcp_ack` (`tcp_ack_update_rtt`: min_rtt, srtt, RTO) and
    /// `tcp_init_transfer`'s cwnd rule: a SYN retransmitted more than once means cwnd 1.
    pub(crate) fn seed_from_handshake(&mut self, hs: &Established) {
        self.update_rtt_min(hs.rtt, 0);
        self.rtt
            .update(hs.rtt.as_us(), self.sock.snd_una, self.sock.snd_nxt);
        self.sock.srtt = Dur::from_us(self.rtt.srtt_us());
        self.set_rto();
        self.ts_recent = hs.ts_recent;
        self.snd_wnd = hs.snd_wnd;
        if hs.syn_retransmits > 1 {
            self.sock.cwnd = 1;
        }
    }

    /// `tcp_set_rto`: RTO = srtt + rttvar, rounded up to ticks, at most `rto_max`.
    fn set_rto(&mut self) {
        if let Some(us) = self.rtt.rto_us() {
            self.rto = self.ticks_ceil(Dur::from_us(us)).min(self.cfg.rto_max);
        }
    }
}
