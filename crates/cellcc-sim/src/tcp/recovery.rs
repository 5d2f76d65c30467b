//! Loss recovery: Linux's `tcp_fastretrans_alert` state machine, undo, F-RTO (RFC 5682),
//! the timeout (`tcp_enter_loss`), PRR (RFC 6937) and the tail-loss-probe outcome
//! (RFC 8985 §7.4), from `net/ipv4/tcp_input.c`.
//!
//! ```text
//!            dupack/SACK                lost_out > 0 (RACK / dupthresh)
//!   Open ──────────────────► Disorder ─────────────────────────► Recovery
//!    ▲  ◄── nothing left out ──┘                                   │ snd_una ≥ high_seq:
//!    │                                                             │ cwnd = ssthresh,
//!    └─────────────────────────────────────────────────────────────┘ CompleteCwr
//!   any ── RTO ──► Loss ── snd_una ≥ high_seq (or undo) ──► Open
//!                  Loss ── a retransmission lost again (RACK) ──► Recovery
//!   Open ── probe repaired a loss ──► CWR ── at once ──► Open/Disorder
//!   Open/Disorder ── cc sets cwr_request (tcp_enter_cwr) ──► CWR ── ack > high_seq ──► Open
//! ```
//!
//! Loss marking: RACK (`rack.rs`) by default; with `rack = false` the classic SACK rule
//! marks holes with ≥ `reordering` SACKed segments above them (RFC 6675 `IsLost`).
//!
//! PRR-SSRB per ACK in CWR/Recovery (RFC 6937 §3.1, `tcp_cwnd_reduction`):
//! `pipe > ssthresh`: `sndcnt = ⌈ssthresh·prr_delivered/prior_cwnd⌉ − prr_out`; else
//! `sndcnt = min(ssthresh − pipe, max(prr_delivered − prr_out, newly_acked) [+1 if snd_una
//! advanced and nothing was newly lost])`; at least 1 before the first retransmission;
//! `cwnd = pipe + sndcnt`.
//!
//! Differences from Linux: no ECN (no CWR from ECE), no SACK reneging, no MTU probing,
//! SACK-only (no NewReno dupack counting).

use cellcc_congestion::{CaEvent, CaState, INFINITE_SSTHRESH};

use super::rack::RACK_RECOVERY_THRESH;
use super::scoreboard::{EVER_RETRANS, LOST, SACKED};
use super::sender::{
    ca_rank, flag, AckState, Rexmit, TcpSender, TCP_MAX_REORDERING, TCP_REORDERING,
};

impl TcpSender {
    /// `tcp_fastretrans_alert`: runs for "dubious" ACKs (duplicate, SACK/D-SACK, or any ACK
    /// outside Open): checks exits, undo, marks losses, enters Recovery.
    pub(crate) fn fastretrans_alert(&mut self, st: &mut AckState) {
        let mut do_lost =
            st.num_dupack > 0 || (st.flag & flag::DATA_SACKED != 0 && self.force_fast_retransmit());
        let mut fast_rexmit = false;

        // D. Exit conditions: the state ends when high_seq is ACKed.
        if self.sock.ca_state == CaState::Open {
            self.retrans_stamp = None;
        } else if self.sock.snd_una >= self.high_seq {
            match self.sock.ca_state {
                // CWR is held until something above high_seq is ACKed.
                CaState::Cwr if self.sock.snd_una != self.high_seq => {
                    self.end_cwnd_reduction();
                    self.set_ca_state(CaState::Open);
                }
                CaState::Recovery => {
                    self.try_undo_recovery();
                    self.end_cwnd_reduction();
                }
                _ => {}
            }
        }

        // E. Process the (possibly new) state.
        let mut fall_through = true;
        match self.sock.ca_state {
            CaState::Recovery => {
                fall_through = false;
                if st.flag & flag::SND_UNA_ADVANCED != 0
                    && self.try_undo_partial(st.prior_snd_una, &mut do_lost)
                {
                    return;
                }
                if self.try_undo_dsack() {
                    self.try_to_open();
                }
                self.identify_packet_loss(&mut st.flag);
                if self.sock.ca_state != CaState::Recovery {
                    if !self.time_to_recover() {
                        return;
                    }
                    // Undo reverted the state; loss is evident: start a new recovery.
                    self.enter_recovery();
                }
            }
            CaState::Loss => {
                self.process_loss(st);
                self.identify_packet_loss(&mut st.flag);
                if !(self.sock.ca_state == CaState::Open || st.flag & flag::LOST_RETRANS != 0) {
                    return;
                }
                // Change state if cwnd was undone or retransmissions are lost.
            }
            _ => {}
        }
        if fall_through {
            if ca_rank(self.sock.ca_state) <= ca_rank(CaState::Disorder) {
                self.try_undo_dsack();
            }
            self.identify_packet_loss(&mut st.flag);
            if !self.time_to_recover() {
                self.try_to_open();
                return;
            }
            self.enter_recovery();
            fast_rexmit = true;
        }
        if !self.cfg.rack && do_lost {
            self.update_scoreboard(fast_rexmit);
        }
        st.rexmit = Rexmit::Lost;
    }

    /// `tcp_identify_packet_loss`.
    fn identify_packet_loss(&mut self, f: &mut u32) {
        if self.sock.packets_out == 0 || !self.cfg.rack {
            return;
        }
        let prior_retrans = self.sock.retrans_out;
        if self.rack_mark_lost() {
            *f &= !flag::SET_XMIT_TIMER;
        }
        if prior_retrans > self.sock.retrans_out {
            *f |= flag::LOST_RETRANS;
        }
    }

    /// `tcp_time_to_recover`: a loss is proven, or (without RACK) the duplicate threshold
    /// is met.
    fn time_to_recover(&self) -> bool {
        self.sock.lost_out > 0 || (!self.cfg.rack && self.sock.sacked_out + 1 > self.reordering)
    }

    /// `tcp_force_fast_retransmit`: SACKed data lies more than `reordering` above snd_una.
    fn force_fast_retransmit(&self) -> bool {
        self.highest_sack_seq() > self.sock.snd_una + self.reordering as u64
    }

    /// `tcp_enter_recovery`.
    pub(crate) fn enter_recovery(&mut self) {
        self.stats.fast_recoveries += 1;
        self.sock.prior_ssthresh = 0;
        self.init_undo();
        if !self.in_cwnd_reduction() {
            self.sock.prior_ssthresh = self.sock.current_ssthresh();
            self.init_cwnd_reduction();
        }
        self.set_ca_state(CaState::Recovery);
    }

    /// `tcp_enter_cwr`: a congestion control asked to reduce cwnd without a loss
    /// (`Sock::cwr_request`). No undo is possible for it; a connection already in
    /// CWR, Recovery or Loss keeps its reduction.
    pub(crate) fn enter_cwr(&mut self) {
        self.sock.prior_ssthresh = 0;
        if ca_rank(self.sock.ca_state) < ca_rank(CaState::Cwr) {
            self.undo_marker = None;
            self.init_cwnd_reduction();
            self.set_ca_state(CaState::Cwr);
        }
    }

    /// `tcp_init_undo`: remember where the episode started and how many retransmissions
    /// D-SACKs must cover to prove it spurious.
    fn init_undo(&mut self) {
        self.undo_marker = Some(self.sock.snd_una);
        let mut retrans = self.sock.retrans_out as i64;
        if self.tlp_high_seq.is_some() && self.tlp_retrans {
            retrans += 1;
        }
        self.undo_retrans = if retrans == 0 { -1 } else { retrans };
    }

    /// `tcp_init_cwnd_reduction`: start CWR/Recovery: prior_cwnd, ssthresh, PRR counters.
    pub(crate) fn init_cwnd_reduction(&mut self) {
        self.high_seq = self.sock.snd_nxt;
        self.tlp_high_seq = None;
        self.sock.cwnd_cnt = 0;
        self.sock.prior_cwnd = self.sock.cwnd;
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.sock.ssthresh = self.cc.ssthresh(&self.sock);
    }

    /// `tcp_end_cwnd_reduction`: cwnd = ssthresh (unless undone), `CA_EVENT_COMPLETE_CWR`.
    pub(crate) fn end_cwnd_reduction(&mut self) {
        if self.cc.owns_cwnd() {
            return;
        }
        if self.sock.ssthresh < INFINITE_SSTHRESH
            && (self.sock.ca_state == CaState::Cwr || self.undo_marker.is_some())
        {
            self.sock.cwnd = self.sock.ssthresh;
            self.snd_cwnd_stamp = self.sock.now;
        }
        self.cc.cwnd_event(&mut self.sock, CaEvent::CompleteCwr);
    }

    /// `tcp_cwnd_reduction`: PRR-SSRB (RFC 6937).
    pub(crate) fn cwnd_reduction(&mut self, newly_acked_sacked: u32, newly_lost: u32, f: u32) {
        if newly_acked_sacked == 0 || self.sock.prior_cwnd == 0 {
            return;
        }
        let pipe = self.sock.packets_in_flight() as i64;
        let ssthresh = self.sock.ssthresh as i64;
        let delta = ssthresh - pipe;
        self.prr_delivered += newly_acked_sacked;
        let prr_delivered = self.prr_delivered as i64;
        let prr_out = self.prr_out as i64;
        let mut sndcnt = if delta < 0 {
            // Proportional rate reduction: RFC 6937 §3.1, pipe > ssthresh.
            let prior_cwnd = self.sock.prior_cwnd as i64;
            (ssthresh * prr_delivered + prior_cwnd - 1) / prior_cwnd - prr_out
        } else {
            // Slow-start reduction bound: grow back to ssthresh at most as fast as
            // delivered, plus one on a cumulative ACK without new loss.
            let mut n = (prr_delivered - prr_out).max(newly_acked_sacked as i64);
            if f & flag::SND_UNA_ADVANCED != 0 && newly_lost == 0 {
                n += 1;
            }
            delta.min(n)
        };
        // Force a fast retransmit upon entering fast recovery.
        sndcnt = sndcnt.max(if self.prr_out > 0 { 0 } else { 1 });
        self.sock.cwnd = (pipe + sndcnt) as u32;
    }

    /// `tcp_try_keep_open`: Open if nothing is SACKed, lost or retransmitted, else Disorder.
    fn try_keep_open(&mut self) {
        let state = if self.sock.sacked_out + self.sock.lost_out > 0 || self.any_retrans_done() {
            CaState::Disorder
        } else {
            CaState::Open
        };
        if self.sock.ca_state != state {
            self.set_ca_state(state);
            self.high_seq = self.sock.snd_nxt;
        }
    }

    /// `tcp_try_to_open` (no ECN, so no CWR from here).
    fn try_to_open(&mut self) {
        if !self.any_retrans_done() {
            self.retrans_stamp = None;
        }
        if self.sock.ca_state != CaState::Cwr {
            self.try_keep_open();
        }
    }

    /// `tcp_any_retrans_done`.
    fn any_retrans_done(&self) -> bool {
        self.sock.retrans_out > 0 || self.sb.head().is_some_and(|h| h.flags & EVER_RETRANS != 0)
    }

    // ----- undo ------------------------------------------------------------------------

    /// `tcp_packet_delayed`: the ACK echoes a timestamp older than our first
    /// retransmission, so an original transmission got through.
    fn packet_delayed(&self) -> bool {
        self.retrans_stamp.is_some_and(|t| self.tsecr_before(t))
    }

    /// `tcp_may_undo`.
    fn may_undo(&self) -> bool {
        self.undo_marker.is_some() && (self.undo_retrans == 0 || self.packet_delayed())
    }

    /// `tcp_undo_cwnd_reduction`.
    fn undo_cwnd_reduction(&mut self, unmark_loss: bool) {
        if unmark_loss {
            for seq in self.sb.seqs() {
                let f = self.sb.seg(seq).flags;
                if f & LOST != 0 {
                    self.sb.set_flags(&mut self.sock, seq, f & !LOST);
                }
            }
            debug_assert_eq!(self.sock.lost_out, 0);
            self.lost_hint = None;
        }
        if self.sock.prior_ssthresh != 0 {
            self.sock.cwnd = self.cc.undo_cwnd(&self.sock);
            if self.sock.prior_ssthresh > self.sock.ssthresh {
                self.sock.ssthresh = self.sock.prior_ssthresh;
            }
        }
        self.snd_cwnd_stamp = self.sock.now;
        self.undo_marker = None;
        self.rack.advanced = true; // force RACK to re-examine losses
    }

    /// `tcp_try_undo_recovery`: at the end of Recovery/Loss, undo if nothing was really
    /// lost; then Open.
    fn try_undo_recovery(&mut self) {
        if self.may_undo() {
            self.undo_cwnd_reduction(false);
            self.stats.undo_recovery += 1;
        } else if self.rack.reo_wnd_persist > 0 {
            self.rack.reo_wnd_persist -= 1;
        }
        self.set_ca_state(CaState::Open);
    }

    /// `tcp_try_undo_dsack`: every retransmission was D-SACKed.
    fn try_undo_dsack(&mut self) -> bool {
        if self.undo_marker.is_some() && self.undo_retrans == 0 {
            self.rack.reo_wnd_persist = (self.rack.reo_wnd_persist + 1).min(RACK_RECOVERY_THRESH);
            self.undo_cwnd_reduction(false);
            self.stats.undo_dsack += 1;
            return true;
        }
        false
    }

    /// `tcp_try_undo_partial`: a partial ACK in Recovery. Returns true to stop processing.
    fn try_undo_partial(&mut self, prior_snd_una: u64, do_lost: &mut bool) -> bool {
        if self.undo_marker.is_some() && self.packet_delayed() {
            // The hole was filled by a delayed original: reordering.
            self.check_sack_reordering(prior_snd_una);
            if self.sock.retrans_out > 0 {
                return true;
            }
            if !self.any_retrans_done() {
                self.retrans_stamp = None;
            }
            self.undo_cwnd_reduction(true);
            self.stats.undo_partial += 1;
            self.try_keep_open();
        } else {
            // Partial ACK: force a fast retransmit.
            *do_lost = self.force_fast_retransmit();
        }
        false
    }

    /// `tcp_try_undo_loss`: the timeout was spurious (timestamps, or F-RTO).
    fn try_undo_loss(&mut self, frto_undo: bool) -> bool {
        if frto_undo || self.may_undo() {
            self.undo_cwnd_reduction(true);
            if frto_undo {
                self.stats.undo_frto += 1;
            } else {
                self.stats.undo_loss += 1;
            }
            self.retransmits = 0;
            self.set_ca_state(CaState::Open);
            return true;
        }
        false
    }

    /// `tcp_process_loss`: ACK processing in Loss state, with F-RTO (RFC 5682 §3.1, the
    /// SACK-enhanced variant).
    fn process_loss(&mut self, st: &mut AckState) {
        let recovered = self.sock.snd_una >= self.high_seq;
        if st.flag & flag::SND_UNA_ADVANCED != 0 && self.try_undo_loss(false) {
            return;
        }
        if self.frto {
            // Step 3.b: the timeout was spurious if never-retransmitted data is (S)ACKed.
            if st.flag & flag::ORIG_SACK_ACKED != 0 && self.try_undo_loss(true) {
                return;
            }
            if self.sock.snd_nxt > self.high_seq {
                // Step 3.a: new data was sent; SACKs or dupacks mean the loss was real.
                if st.flag & flag::DATA_SACKED != 0 || st.num_dupack > 0 {
                    self.frto = false;
                }
            } else if st.flag & flag::SND_UNA_ADVANCED != 0 && !recovered {
                // Step 2.b: try to send new data (deferred until cwnd is updated).
                self.high_seq = self.sock.snd_nxt;
                if self.has_new_data() {
                    st.rexmit = Rexmit::New;
                    return;
                }
                self.frto = false;
            }
        }
        if recovered {
            // Step 2.a and first part of step 3.a.
            self.try_undo_recovery();
            return;
        }
        st.rexmit = Rexmit::Lost;
    }

    /// `tcp_enter_loss` (RTO): mark outstanding segments lost, ssthresh once per episode,
    /// `cwnd = in_flight + 1`, F-RTO armed.
    pub(crate) fn enter_loss(&mut self) {
        let state = self.sock.ca_state;
        let new_recovery = ca_rank(state) < ca_rank(CaState::Recovery);
        self.timeout_mark_lost();
        // Reduce ssthresh if it has not yet been made inside this window.
        if ca_rank(state) <= ca_rank(CaState::Disorder)
            || self.high_seq <= self.sock.snd_una
            || (state == CaState::Loss && self.retransmits == 0)
        {
            self.sock.prior_ssthresh = self.sock.current_ssthresh();
            self.sock.prior_cwnd = self.sock.cwnd;
            self.sock.ssthresh = self.cc.ssthresh(&self.sock);
            self.cc.cwnd_event(&mut self.sock, CaEvent::Loss);
            self.init_undo();
        }
        self.sock.cwnd = self.sock.packets_in_flight() + 1;
        self.sock.cwnd_cnt = 0;
        self.snd_cwnd_stamp = self.sock.now;
        // A timeout after many dupacks suggests reordering was overestimated.
        if ca_rank(state) <= ca_rank(CaState::Disorder) && self.sock.sacked_out >= TCP_REORDERING {
            self.reordering = self.reordering.min(TCP_REORDERING);
        }
        self.set_ca_state(CaState::Loss);
        self.high_seq = self.sock.snd_nxt;
        self.tlp_high_seq = None;
        // F-RTO (tcp_frto = 2): unless this is a repeated timeout on the same episode.
        self.frto = new_recovery || self.retransmits > 0;
        self.rexmit_hold = false;
        self.probe = None;
        self.lost_hint = None;
    }

    /// `tcp_timeout_mark_lost`: everything outstanding is lost, except segments sent
    /// within the last RACK RTT (they may still be delivered); the head always is.
    fn timeout_mark_lost(&mut self) {
        let head = self.sock.snd_una;
        for seq in self.sb.seqs() {
            let sent_at = self.sb.seg(seq).sent_at;
            if seq != head && self.rack_skb_timeout(sent_at, 0) > 0 {
                continue;
            }
            self.sb.mark_lost(&mut self.sock, seq);
        }
    }

    /// `tcp_update_scoreboard` (RACK off): mark holes with ≥ `reordering` SACKed
    /// segments above them, or the head on a fast retransmit.
    fn update_scoreboard(&mut self, fast_rexmit: bool) {
        let sacked_upto = self.sock.sacked_out as i64 - self.reordering as i64;
        if sacked_upto >= 0 {
            self.mark_head_lost(sacked_upto, false);
        } else if fast_rexmit {
            self.mark_head_lost(1, true);
        }
    }

    /// `tcp_mark_head_lost`: from the head, mark un-SACKed segments lost until more than
    /// `packets` SACKed segments have been passed (never beyond `high_seq`).
    fn mark_head_lost(&mut self, packets: i64, mark_head: bool) {
        let una = self.sock.snd_una;
        let (mut seq, mut cnt) = match self.lost_hint {
            Some((h, c)) if h >= una => {
                if mark_head && h > una {
                    return;
                }
                (h, c)
            }
            _ => (una, 0),
        };
        while seq < self.sock.snd_nxt {
            self.lost_hint = Some((seq, cnt));
            if seq + 1 > self.high_seq {
                break;
            }
            if self.sb.seg(seq).flags & SACKED != 0 {
                cnt += 1;
            }
            if cnt as i64 > packets {
                break;
            }
            // tcp_skb_mark_lost: only segments neither lost nor SACKED yet (a hole
            // already retransmitted stays as it is).
            if self.sb.seg(seq).flags & (LOST | SACKED) == 0 {
                self.sb.mark_lost(&mut self.sock, seq);
            }
            if mark_head {
                break;
            }
            seq += 1;
        }
    }

    /// `tcp_check_sack_reordering`: a segment below the highest SACK was delivered
    /// without retransmission; widen the duplicate threshold (up to 300).
    pub(crate) fn check_sack_reordering(&mut self, low_seq: u64) {
        let fack = self.highest_sack_seq();
        if low_seq >= fack {
            return;
        }
        let metric = fack - low_seq;
        if metric > self.reordering as u64 {
            self.reordering = metric.min(TCP_MAX_REORDERING as u64) as u32;
        }
        self.reord_seen += 1;
    }

    /// `tcp_process_tlp_ack` (RFC 8985 §7.4): did the probe repair a loss?
    pub(crate) fn process_tlp_ack(&mut self, ack: u64, f: u32) {
        let Some(high) = self.tlp_high_seq else {
            return;
        };
        if ack < high {
            return;
        }
        if !self.tlp_retrans || f & flag::DSACK_TLP != 0 {
            // A new-data probe was ACKed, or the D-SACK shows original and probe arrived.
            self.tlp_high_seq = None;
        } else if ack > high {
            // The ACK advances past the probe: there was a loss, so reduce cwnd.
            self.init_cwnd_reduction();
            self.set_ca_state(CaState::Cwr);
            self.end_cwnd_reduction();
            self.try_keep_open();
            self.stats.tlp_recoveries += 1;
        } else if f & (flag::SND_UNA_ADVANCED | flag::NOT_DUP | flag::DATA_SACKED) == 0 {
            // Pure dupack: original and probe both arrived, no loss.
            self.tlp_high_seq = None;
        }
    }
}
