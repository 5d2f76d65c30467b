//! Transmission and timers: `tcp_write_xmit`, `tcp_xmit_retransmit_queue`,
//! `tcp_retransmit_skb`, `tcp_cwnd_validate`, idle restart (`net/ipv4/tcp_output.c`), the
//! retransmission timer and tail loss probes (`tcp_timer.c`, `tcp_output.c`,
//! RFC 6298, RFC 8985 §7).
//!
//! One call of `poll_transmit` sends at most one segment, in Linux's priority order:
//! a pending tail loss probe (ignores cwnd), then the lowest segment marked lost and not
//! yet retransmitted, then new data; each only if `in_flight < cwnd` and pacing allows.
//!
//! Timers: Linux multiplexes RTO, RACK reordering timeout and loss probe on one timer
//! (`icsk_pending`); so does this model. After an ACK in Open state the probe timer
//! (PTO = 2·srtt + 2 ms, or + `rto_min` with one packet out, never beyond the RTO) takes
//! the timer; otherwise the RTO, which `tcp_rearm_rto` arms for the full `icsk_rto` from
//! now, or, when replacing a RACK/probe timer, for what is left of the RTO measured
//! from the oldest outstanding segment's send time.
//!
//! Differences from Linux:
//! 1. A loss probe is decided when its timer fires and handed out by the next
//!    `poll_transmit` (same instant in the event loop).
//! 2. F-RTO's "new data first" holds retransmissions until the next ACK (Linux's pacing
//!    tasklet could still retransmit in between).
//! 3. The timeout retransmission of the head goes through the same path as other
//!    retransmissions, so it is paced when pacing is on (Linux sends it from the timer).

use cellcc_congestion::{CaEvent, CaState};
use cellcc_units::{Dur, Time};

use super::rate::RateEstimator;
use super::scoreboard::{Seg, EVER_RETRANS, RETRANS};
use super::sender::{Event, Probe, TcpSender, TimerKind, XmitTimer};
use crate::packet::DataSegment;

/// `TCP_TIMEOUT_MIN_US`: probe-timeout slack when more than one packet is out.
const TLP_SLACK: Dur = Dur::from_ms(2);

impl TcpSender {
    /// Tell the pacer a segment of `len` bytes leaves at `now`; the TSO burst size
    /// (`tcp_tso_segs`, which asks the congestion control) is worked out only when the
    /// segment starts a paced burst.
    fn pace(&mut self, now: Time, len: u32) {
        let burst = if self.pacer.starts_burst(&self.sock, now) {
            super::pacing::tso_segs(&self.sock, self.cc.min_tso_segs(&self.sock))
        } else {
            0
        };
        self.pacer.on_send(&self.sock, now, len, burst);
    }

    /// Whether something could be sent if pacing allowed it.
    pub(crate) fn wants_to_send(&self) -> bool {
        (self.wants_retransmit() || self.has_new_data())
            && self.sock.packets_in_flight() < self.sock.cwnd
    }

    fn wants_retransmit(&self) -> bool {
        !self.rexmit_hold && self.sb.lost_pending > 0 && self.sock.retrans_out < self.sock.lost_out
    }

    /// One step of `tcp_xmit_retransmit_queue` / `tcp_write_xmit`.
    pub(crate) fn transmit_one(&mut self) -> Option<DataSegment> {
        let mut seg = self.transmit_step();
        if seg.is_none() && self.check_space() {
            // The writer filled the room the ACK freed (`sk_write_space`): push again.
            seg = self.transmit_step();
        }
        if seg.is_none() {
            self.chrono_after_write_xmit();
        }
        seg
    }

    fn transmit_step(&mut self) -> Option<DataSegment> {
        if let Some(p) = self.probe.take() {
            if let Some(seg) = self.send_probe(p) {
                return Some(seg);
            }
        }
        let rexmit = self.wants_retransmit();
        if !rexmit && !self.has_new_data() {
            if !self.has_unsent() {
                // The application has nothing more (or the send buffer holds only
                // unacknowledged data): mark the flow app-limited (what `tcp_sendmsg`
                // checks when the app writes). A window-limited sender is not.
                RateEstimator::check_app_limited(&mut self.sock, false);
            }
            return None;
        }
        if self.sock.packets_in_flight() >= self.sock.cwnd {
            self.cwnd_validate(true);
            return None;
        }
        if self.pacer.holds(&self.sock, self.sock.now) {
            return None;
        }
        Some(if rexmit {
            self.retransmit_lost()
        } else {
            self.send_new(false)
        })
    }

    /// Send the next new segment (`tcp_write_xmit` → `tcp_transmit_skb` →
    /// `tcp_event_new_data_sent`). `forced`: a loss probe, which ignores cwnd and does
    /// not schedule another probe.
    pub(crate) fn send_new(&mut self, forced: bool) -> DataSegment {
        let now = self.sock.now;
        let seq = self.sock.snd_nxt;
        let len = self.seg_len(seq);
        if self.sock.packets_out == 0 {
            self.slow_start_after_idle_check();
        }
        self.event_data_sent();
        self.pace(now, len);
        self.sock.wstamp = self.pacer.wstamp;
        let tx = self.rate.skb_sent(&mut self.sock, now);
        let prior_packets = self.sock.packets_out;
        self.sb.push_new(Seg {
            sent_at: now,
            tx,
            xmits: 1,
            flags: 0,
        });
        self.sock.snd_nxt += 1;
        self.sock.packets_out += 1;
        debug_assert_eq!(self.sb.end(), self.sock.snd_nxt);
        if prior_packets == 0 || self.timer.pending == Some(TimerKind::Probe) {
            self.rearm_rto();
        }
        if self.in_cwnd_reduction() {
            self.prr_out += 1;
        }
        self.stats.segments_sent += 1;
        self.stats.bytes_sent += len as u64;
        let limited = self.sock.packets_in_flight() >= self.sock.cwnd;
        self.cwnd_validate(limited);
        if !forced {
            self.schedule_loss_probe(false);
        }
        self.make_segment(seq, len, false)
    }

    /// Retransmit the lowest lost segment (`tcp_xmit_retransmit_queue`).
    fn retransmit_lost(&mut self) -> DataSegment {
        let seq = self.sb.next_lost().expect("lost_pending > 0");
        let seg = self.retransmit_skb(seq, true);
        if self.in_cwnd_reduction() {
            self.prr_out += 1;
        }
        if seq == self.sock.snd_una && self.timer.pending != Some(TimerKind::Reo) {
            self.reset_xmit_timer(TimerKind::Retrans, self.rto, true);
        }
        seg
    }

    /// `tcp_retransmit_skb` (`mark` = true) or `__tcp_retransmit_skb` as used by the loss
    /// probe (`mark` = false: the copy is not counted in `retrans_out`).
    pub(crate) fn retransmit_skb(&mut self, seq: u64, mark: bool) -> DataSegment {
        let now = self.sock.now;
        let len = self.seg_len(seq);
        self.event_data_sent();
        self.pace(now, len);
        self.sock.wstamp = self.pacer.wstamp;
        let tx = self.rate.skb_sent(&mut self.sock, now);
        self.sb.record_retransmit(seq, now, tx);
        let f = self.sb.seg(seq).flags;
        let new = if mark {
            f | RETRANS | EVER_RETRANS
        } else {
            f | EVER_RETRANS
        };
        self.sb.set_flags(&mut self.sock, seq, new);
        self.total_retrans += 1;
        self.stats.retransmissions += 1;
        self.stats.segments_sent += 1;
        self.stats.bytes_sent += len as u64;
        self.events.push(Event::Retransmit(now, seq));
        if mark {
            // Save the stamp of the first retransmission (for undo), count it for D-SACK.
            let ts = self.ts_now();
            self.retrans_stamp.get_or_insert(ts);
            self.undo_retrans = self.undo_retrans.max(0) + 1;
        }
        self.make_segment(seq, len, true)
    }

    fn make_segment(&self, seq: u64, len: u32, retransmit: bool) -> DataSegment {
        DataSegment {
            flow: self.flow,
            seq,
            len,
            tsval: self.ts_now(),
            tsecr: self.ts_recent,
            sent_at: self.sock.now,
            retransmit,
            syn: false,
        }
    }

    /// `tcp_event_data_sent`: `CA_EVENT_TX_START` when sending with nothing in flight.
    fn event_data_sent(&mut self) {
        if self.sock.packets_in_flight() == 0 {
            self.cc.cwnd_event(&mut self.sock, CaEvent::TxStart);
        }
        self.sock.lsndtime = self.sock.now;
    }

    /// `tcp_slow_start_after_idle_check`: after more than an RTO without sending, halve
    /// cwnd per elapsed RTO (`tcp_cwnd_restart`, RFC 5681 §4.1 / RFC 2861).
    fn slow_start_after_idle_check(&mut self) {
        if !self.cfg.slow_start_after_idle || self.sock.packets_out > 0 || self.cc.owns_cwnd() {
            return;
        }
        let delta = self.sock.now.saturating_since(self.sock.lsndtime);
        if delta <= self.rto {
            return;
        }
        self.cc.cwnd_event(&mut self.sock, CaEvent::CwndRestart);
        self.sock.ssthresh = self.sock.current_ssthresh();
        let restart = self.cfg.init_cwnd.min(self.sock.cwnd);
        let mut cwnd = self.sock.cwnd;
        let mut d = delta.as_ns() as i128;
        loop {
            d -= self.rto.as_ns() as i128;
            if d > 0 && cwnd > restart {
                cwnd >>= 1;
            } else {
                break;
            }
        }
        self.sock.cwnd = cwnd.max(restart);
        self.snd_cwnd_stamp = self.sock.now;
        self.snd_cwnd_used = 0;
    }

    /// `tcp_cwnd_validate`: remember whether the flow filled cwnd in this window (or the
    /// largest flight), and decay cwnd after an application-limited RTO (RFC 2861).
    pub(crate) fn cwnd_validate(&mut self, is_cwnd_limited: bool) {
        let s = &mut self.sock;
        if s.snd_una >= self.cwnd_usage_seq
            || is_cwnd_limited
            || (!s.is_cwnd_limited && s.packets_out > s.max_packets_out)
        {
            s.is_cwnd_limited = is_cwnd_limited;
            s.max_packets_out = s.packets_out;
            self.cwnd_usage_seq = s.snd_nxt;
        }
        if self.sock.is_cwnd_limited() {
            // The network is fed fully.
            self.snd_cwnd_used = 0;
            self.snd_cwnd_stamp = self.sock.now;
        } else {
            self.snd_cwnd_used = self.snd_cwnd_used.max(self.sock.packets_out);
            self.chrono_not_cwnd_limited();
            if self.cfg.slow_start_after_idle
                && self.sock.now.saturating_since(self.snd_cwnd_stamp) >= self.rto
                && !self.cc.owns_cwnd()
            {
                self.cwnd_application_limited();
            }
        }
    }

    /// `tcp_cwnd_application_limited`. A `Bulk` application is always blocked on the
    /// send buffer (`SOCK_NOSPACE`), so this applies only once a finite flow wrote all
    /// its data into the send buffer.
    fn cwnd_application_limited(&mut self) {
        if self.sock.ca_state == CaState::Open && !self.app_blocked() {
            let win_used = self.snd_cwnd_used.max(self.cfg.init_cwnd);
            if win_used < self.sock.cwnd {
                self.sock.ssthresh = self.sock.current_ssthresh();
                self.sock.cwnd = (self.sock.cwnd + win_used) >> 1;
            }
            self.snd_cwnd_used = 0;
        }
        self.snd_cwnd_stamp = self.sock.now;
    }

    // ----- timers ----------------------------------------------------------------------

    /// `tcp_reset_xmit_timer` (with `pace`: plus the pacing delay) /
    /// `inet_csk_reset_xmit_timer`: arm `kind` after `when`, at most `rto_max`.
    pub(crate) fn reset_xmit_timer(&mut self, kind: TimerKind, when: Dur, pace: bool) {
        let mut when = when;
        if pace {
            when += self.pacer.delay(&self.sock, self.sock.now);
        }
        let when = when.min(self.cfg.rto_max);
        self.timer = XmitTimer {
            pending: Some(kind),
            expires: Some(self.sock.now.saturating_add(when)),
        };
    }

    /// `tcp_rto_delta_us`: time left until the RTO measured from the head's send time,
    /// µs (may be negative).
    fn rto_delta_us(&self) -> i64 {
        match self.sb.head() {
            Some(h) => {
                // i64 ns covers 292 years of simulated time.
                let deadline = (h.sent_at.as_ns() + self.rto.as_ns()) as i64;
                (deadline - self.sock.now.as_ns() as i64) / 1000
            }
            None => self.rto.as_us() as i64,
        }
    }

    /// `tcp_rearm_rto`.
    pub(crate) fn rearm_rto(&mut self) {
        if self.sock.packets_out == 0 {
            self.timer = XmitTimer::default();
            return;
        }
        let mut rto = self.rto;
        if matches!(self.timer.pending, Some(TimerKind::Reo | TimerKind::Probe)) {
            // Offset the time already elapsed since the regular RTO would have started.
            let delta_us = self.rto_delta_us().max(1) as u64;
            rto = self.ticks_ceil(Dur::from_us(delta_us));
        }
        self.reset_xmit_timer(TimerKind::Retrans, rto, true);
    }

    /// `tcp_set_xmit_timer`: a loss probe if allowed, else the RTO.
    pub(crate) fn set_xmit_timer(&mut self) {
        if !self.schedule_loss_probe(true) {
            self.rearm_rto();
        }
    }

    /// `tcp_schedule_loss_probe` (RFC 8985 §7.2): PTO = 2·srtt + 2 ms, or + `rto_min`
    /// with one packet outstanding (room for a delayed ACK), or `rto_init` without an RTT
    /// sample; never later than the RTO. Only in Open/CWR with data outstanding.
    pub(crate) fn schedule_loss_probe(&mut self, advancing_rto: bool) -> bool {
        if !self.cfg.tlp
            || self.sock.packets_out == 0
            || !matches!(self.sock.ca_state, CaState::Open | CaState::Cwr)
        {
            return false;
        }
        let mut timeout = if self.rtt.has_sample() {
            let mut us = self.rtt.srtt_us8() >> 2;
            us += if self.sock.packets_out == 1 {
                self.cfg.rto_min.as_us()
            } else {
                TLP_SLACK.as_us()
            };
            self.ticks_ceil(Dur::from_us(us))
        } else {
            self.ticks_ceil(self.cfg.rto_init)
        };
        let rto_delta_us = if advancing_rto {
            self.rto.as_us() as i64
        } else {
            self.rto_delta_us()
        };
        if rto_delta_us > 0 {
            timeout = timeout.min(self.ticks_ceil(Dur::from_us(rto_delta_us as u64)));
        }
        self.reset_xmit_timer(TimerKind::Probe, timeout, true);
        true
    }

    /// `tcp_write_timer_handler`: run the expired timer, if any.
    pub(crate) fn fire_timer(&mut self) {
        let Some(at) = self.timer.expires else {
            return;
        };
        if at > self.sock.now {
            return;
        }
        self.timer.expires = None;
        match self.timer.pending {
            Some(TimerKind::Retrans) => {
                self.timer.pending = None;
                self.retransmit_timer();
            }
            Some(TimerKind::Reo) => self.rack_reo_timeout(),
            Some(TimerKind::Probe) => self.send_loss_probe(),
            None => {}
        }
    }

    /// `tcp_retransmit_timer`: enter Loss, back off, re-arm. The head, now marked lost,
    /// goes out with the next `poll_transmit` (cwnd = in_flight + 1 admits it).
    fn retransmit_timer(&mut self) {
        if self.sock.packets_out == 0 {
            return;
        }
        self.events.push(Event::Rto(self.sock.now));
        self.stats.rtos += 1;
        self.enter_loss();
        self.retransmits += 1;
        self.backoff += 1;
        self.rto = (self.rto * 2).min(self.cfg.rto_max);
        self.reset_xmit_timer(TimerKind::Retrans, self.rto, false);
    }

    /// `tcp_send_loss_probe`, decision half: at most one probe outstanding; probe with
    /// new data if there is some, else with the highest outstanding segment.
    fn send_loss_probe(&mut self) {
        if self.tlp_high_seq.is_some() {
            self.rearm_rto();
            return;
        }
        self.tlp_retrans = false;
        if self.has_new_data() {
            if self.pacer.holds(&self.sock, self.sock.now) {
                self.rearm_rto();
                return;
            }
            self.probe = Some(Probe::NewData);
        } else if self.sock.packets_out == 0 {
            self.timer = XmitTimer::default();
        } else {
            self.probe = Some(Probe::Retransmit(self.sock.snd_nxt - 1));
        }
    }

    /// `tcp_send_loss_probe`, sending half.
    fn send_probe(&mut self, p: Probe) -> Option<DataSegment> {
        let seg = match p {
            Probe::NewData if self.has_new_data() => self.send_new(true),
            Probe::Retransmit(seq) if seq >= self.sock.snd_una && seq < self.sock.snd_nxt => {
                let s = self.retransmit_skb(seq, false);
                self.tlp_retrans = true;
                s
            }
            _ => {
                self.rearm_rto();
                return None;
            }
        };
        // Record snd_nxt for loss detection; restart the RTO from now.
        self.tlp_high_seq = Some(self.sock.snd_nxt);
        self.stats.tlps += 1;
        self.timer.pending = None;
        self.rearm_rto();
        Some(seg)
    }
}
