//! RACK loss detection (RFC 8985 §6, Linux `net/ipv4/tcp_recovery.c`).
//!
//! Model. Every (S)ACKed segment records the send time of the most recently sent delivered
//! segment (`rack.mstamp`) and its RTT (`rack.rtt`). A segment sent before `rack.mstamp` is
//! lost once it is older than `rack.rtt + reo_wnd`. `reo_wnd = min_rtt/4 · steps` (at most
//! srtt), or 0 while no reordering has been seen and the connection is in Recovery/Loss or
//! has ≥ `reordering` segments SACKed. Segments not yet old enough arm the reordering timer.
//! After rounds with D-SACKs (once reordering was seen) `steps` grows, and stays for 16
//! recoveries.
//!
//! The walk uses the scoreboard's send-ordered queue with lazy deletion and stops at the
//! first segment sent after `rack.mstamp`, so detection is amortised O(1) per segment.
//!
//! Differences from Linux: times in ns with µs-truncated RTTs as `tcp_stamp_us_delta`;
//! the walk compacts stale entries instead of unlinking list nodes.

use cellcc_congestion::CaState;
use cellcc_units::{Dur, Time};

use super::rate::{sent_after, us_delta, RateAcc};
use super::scoreboard::ANY_RETRANS;
use super::sender::{ca_rank, TcpSender, TimerKind};

/// `TCP_RACK_RECOVERY_THRESH`: recoveries to keep an enlarged reordering window.
pub(crate) const RACK_RECOVERY_THRESH: u32 = 16;
/// `TCP_TIMEOUT_MIN`: ticks added to the RACK reordering timer.
const REO_TIMER_SLACK_TICKS: u64 = 2;

impl TcpSender {
    /// `tcp_rack_advance`: a segment sent at `xmit` was delivered.
    pub(crate) fn rack_advance(&mut self, flags: u8, end_seq: u64, xmit: Time) {
        let rtt = us_delta(self.sock.now, xmit);
        if flags & ANY_RETRANS != 0 && rtt < self.sock.min_rtt {
            // Ambiguous: the ACK may be for the original transmission.
            return;
        }
        self.rack.advanced = true;
        self.rack.rtt = rtt;
        let newer = match self.rack.mstamp {
            None => true,
            Some(m) => sent_after(xmit, m, end_seq, self.rack.end_seq),
        };
        if newer {
            self.rack.mstamp = Some(xmit);
            self.rack.end_seq = end_seq;
        }
    }

    /// `tcp_rack_reo_wnd`, µs.
    pub(crate) fn rack_reo_wnd(&self) -> u64 {
        if self.reord_seen == 0 {
            // No reordering seen: be aggressive in recovery or once dupthresh is met.
            if ca_rank(self.sock.ca_state) >= ca_rank(CaState::Recovery)
                || self.sock.sacked_out >= self.reordering
            {
                return 0;
            }
        }
        // min_rtt/4 settling delay, scaled up by D-SACK rounds, at most srtt.
        let min_rtt_us = self.sock.min_rtt.as_us();
        (min_rtt_us >> 2)
            .saturating_mul(self.rack.reo_wnd_steps as u64)
            .min(self.rtt.srtt_us())
    }

    /// `tcp_rack_skb_timeout`: µs until a segment sent at `sent_at` counts as lost.
    pub(crate) fn rack_skb_timeout(&self, sent_at: Time, reo_wnd_us: u64) -> i64 {
        self.rack.rtt.as_us() as i64 + reo_wnd_us as i64
            - us_delta(self.sock.now, sent_at).as_us() as i64
    }

    /// `tcp_rack_detect_loss`: walk outstanding segments in send order up to the most
    /// recently delivered one; mark the expired ones lost. Returns the longest time (µs)
    /// any of the others still needs before it can be declared lost (0 if none).
    pub(crate) fn rack_detect_loss(&mut self) -> u64 {
        let Some(rack_mstamp) = self.rack.mstamp else {
            return 0;
        };
        let reo_wnd = self.rack_reo_wnd();
        let mut timeout = 0u64;
        let mut q = std::mem::take(&mut self.sb.tsorted);
        let (mut r, mut w) = (0, 0);
        while r < q.len() {
            let (seq, xmits) = q[r];
            if !self.sb.is_live(seq, xmits) {
                r += 1;
                continue;
            }
            let sent_at = self.sb.seg(seq).sent_at;
            if !sent_after(rack_mstamp, sent_at, self.rack.end_seq, seq + 1) {
                break;
            }
            let remaining = self.rack_skb_timeout(sent_at, reo_wnd);
            if remaining <= 0 {
                self.sb.mark_lost(&mut self.sock, seq);
                r += 1;
                continue;
            }
            timeout = timeout.max(remaining as u64);
            q[w] = q[r];
            w += 1;
            r += 1;
        }
        // Entries between the kept ones and the stopping point are stale or now lost.
        q.drain(w..r);
        self.sb.tsorted = q;
        timeout
    }

    /// `tcp_rack_mark_lost`: run detection if new deliveries arrived; arm the reordering
    /// timer for segments not yet old enough. Returns whether the timer was armed.
    pub(crate) fn rack_mark_lost(&mut self) -> bool {
        if !self.rack.advanced {
            return false;
        }
        self.rack.advanced = false;
        let timeout = self.rack_detect_loss();
        if timeout == 0 {
            return false;
        }
        let when = self.ticks_ceil(Dur::from_us(timeout)) + self.tick() * REO_TIMER_SLACK_TICKS;
        self.reset_xmit_timer(TimerKind::Reo, when.min(self.rto), false);
        true
    }

    /// `tcp_rack_reo_timeout`: the reordering window passed; mark what expired, start
    /// recovery if something did, and fall back to the RTO.
    pub(crate) fn rack_reo_timeout(&mut self) {
        self.stats.reo_timeouts += 1;
        let prior_inflight = self.sock.packets_in_flight();
        let lost = self.sock.lost_out;
        self.rack_detect_loss();
        if prior_inflight != self.sock.packets_in_flight()
            && self.sock.ca_state != CaState::Recovery
        {
            self.enter_recovery();
            if !self.cc.owns_cwnd() {
                let newly_lost = self.sock.lost_out.saturating_sub(lost);
                self.cwnd_reduction(1, newly_lost, 0);
            }
        }
        if self.timer.pending != Some(TimerKind::Retrans) {
            self.rearm_rto();
        }
    }

    /// `tcp_rack_update_reo_wnd`: widen the reordering window after a round with
    /// D-SACKs; return to one step after `RACK_RECOVERY_THRESH` recoveries.
    pub(crate) fn rack_update_reo_wnd(&mut self, acc: &RateAcc) {
        if acc.prior_delivered == 0 {
            return;
        }
        // Disregard D-SACKs if a round trip has not passed since the last adjustment.
        if acc.prior_delivered < self.rack.last_delivered {
            self.rack.dsack_seen = false;
        }
        if self.rack.dsack_seen {
            self.rack.reo_wnd_steps = (self.rack.reo_wnd_steps + 1).min(0xff);
            self.rack.dsack_seen = false;
            self.rack.last_delivered = self.sock.delivered;
            self.rack.reo_wnd_persist = RACK_RECOVERY_THRESH;
        } else if self.rack.reo_wnd_persist == 0 {
            self.rack.reo_wnd_steps = 1;
        }
    }
}
