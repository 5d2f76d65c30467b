//! The TCP receiver: in-order delivery, out-of-order buffering, SACK (RFC 2018) and
//! D-SACK (RFC 2883) generation, delayed ACKs with Linux's quick-ACK mode and `ato`
//! adaptation (`tcp_event_data_recv`, `__tcp_ack_snd_check`, `tcp_send_delayed_ack`,
//! `tcp_delack_timer_handler` in `net/ipv4/tcp_input.c`/`tcp_output.c`/`tcp_timer.c`), and
//! the timestamp echo rules of RFC 7323 §4.3.
//!
//! When an ACK goes out:
//! * at once for out-of-order data, for data that fills a gap, for a duplicate segment
//!   (which also re-enters quick-ACK mode), in quick-ACK mode (the first 16 ACKs), and
//!   when more than one full segment (`rcv_mss`) is unacknowledged, i.e. every second
//!   full-sized segment;
//! * otherwise after the delayed-ACK timeout `ato`, which starts at 40 ms and adapts to
//!   the data inter-arrival time `m`: `m ≤ 20 ms → ato/2 + 20 ms`, `m < ato → ato/2 + m`;
//!   an expiry doubles it (capped at the RTO); it is applied capped at 200 ms.
//!
//! SACK blocks: the first reports the block holding the segment that triggered the ACK,
//! then the most recently reported other blocks (at most 3 blocks with timestamps, Linux
//! remembers 4). A duplicate puts a D-SACK block first and, if it lies above the cumulative
//! ACK, its enclosing block second.
//!
//! Differences from Linux:
//! 1. The receive window (`sockbuf.rs`) assumes a reader that copies in-order data at
//!    once, so the window closes only by the out-of-order queue's memory.
//! 2. No SACK compression (every out-of-order arrival is ACKed at once), no GRO.
//! 3. The receiver has no RTT estimate (pure receiver, no handshake): `ato` is bounded by
//!    `HZ/2` and the delayed-ACK maximum, and its RTO for the idle check is 1 s.
//! 4. `ato` is kept in ns rather than jiffies.
//! 5. A duplicate above the cumulative ACK gets its enclosing block as the second SACK
//!    block (RFC 2883 §4); Linux leaves the SACK list as it is.
//! 6. No PSH and no application reads: Linux ACKs a single full-sized segment carrying
//!    PSH as soon as the application's read drains the receive queue
//!    (`tcp_measure_rcv_mss` sets `ICSK_ACK_PUSHED`, `__tcp_cleanup_rbuf` sends), where
//!    this receiver waits for a second segment. Under uplink grants these extra ACKs
//!    change which SR occasions carry a batch (`docs/cellular-models.md`, "When the SR
//!    period does not show").
//!
//! Not Linux: a scheme may run a receiver-side agent here ([`TcpReceiver::with_agent`],
//! `cellcc_congestion::feedback`). It sees every data arrival before the ACK decision
//! and stamps its feedback on every ACK; without one, ACKs are exactly as above.

use cellcc_congestion::ReceiverAgent;
use cellcc_units::{Dur, Time};

use super::sockbuf::{RcvWindow, RX_SKB_OVERHEAD};
use super::ReceiverConfig;
use crate::packet::{AckSegment, DataSegment, FlowId, SackBlock, MAX_SACK_BLOCKS};

/// `TCP_DELACK_MAX`: the delayed-ACK timeout never exceeds this.
const DELACK_MAX: Dur = Dur::from_ms(200);
/// `HZ/2`: bound on `ato` when no RTT is known.
const ATO_MAX_NO_RTT: Dur = Dur::from_ms(500);
/// The receiver's RTO (`TCP_TIMEOUT_INIT`, no RTT sample on a pure receiver).
const RECEIVER_RTO: Dur = Dur::from_secs(1);
/// `TCP_MSS_DEFAULT`: initial estimate of the sender's MSS (`tcp_initialize_rcv_mss`).
const INITIAL_RCV_MSS: u32 = 536;
/// `TCP_NUM_SACKS`: SACK blocks remembered.
const NUM_SACKS: usize = 4;

/// Result of [`TcpReceiver::on_data`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecvOutcome {
    /// ACK to send now, if any.
    pub ack: Option<AckSegment>,
    /// Payload bytes newly delivered in order to the application.
    pub delivered_bytes: u64,
    /// The segment had been received before.
    pub duplicate: bool,
}

/// Counters reported by [`TcpReceiver::stats`].
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReceiverStats {
    /// Data segments received, duplicates included.
    pub segments_received: u64,
    /// Segments received before (below `rcv_nxt` or already held out of order).
    pub duplicates: u64,
    /// Segments that arrived above a hole.
    pub out_of_order: u64,
    /// ACKs sent, immediate and delayed.
    pub acks_sent: u64,
    /// ACKs sent by the delayed-ACK timer.
    pub delayed_acks: u64,
    /// ACKs carrying a D-SACK block.
    pub dsacks_sent: u64,
    /// Payload bytes delivered in order to the application.
    pub bytes_delivered: u64,
}

/// A received out-of-order range `[start, end)` holding `bytes` payload bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct OooRange {
    start: u64,
    end: u64,
    bytes: u64,
}

/// A TCP receiver for one flow.
#[derive(Debug)]
pub struct TcpReceiver {
    flow: FlowId,
    cfg: ReceiverConfig,
    /// Next expected segment (`rcv_nxt`).
    rcv_nxt: u64,
    /// `rcv_nxt` when the last ACK was sent (`rcv_wup`, RFC 7323's Last.ACK.sent).
    rcv_wup: u64,
    /// Payload bytes delivered in order since the last ACK (`rcv_nxt − rcv_wup`).
    unacked_bytes: u64,
    /// Out-of-order ranges, sorted and merged (`out_of_order_queue`).
    ooo: Vec<OooRange>,
    /// A sequence number inside each remembered SACK block, most recent first.
    recent: [u64; NUM_SACKS],
    n_recent: usize,
    /// Estimate of the sender's MSS (`icsk_ack.rcv_mss`).
    rcv_mss: u32,
    /// Quick ACKs left (`icsk_ack.quick`).
    quick: u32,
    /// Delayed-ACK timeout (`icsk_ack.ato`); zero before the first data.
    ato: Dur,
    /// Last in-order data arrival (`icsk_ack.lrcvtime`).
    lrcvtime: Time,
    /// An ACK is owed (`ICSK_ACK_SCHED`).
    ack_pending: bool,
    /// Delayed-ACK timer (`ICSK_ACK_TIMER`, `icsk_ack.timeout`).
    delack_at: Option<Time>,
    /// `TS.Recent`, echoed as TSecr.
    ts_recent: Option<u32>,
    delivered: u64,
    stats: ReceiverStats,
    /// The scheme's receiver-side agent, if it has one.
    agent: Option<Box<dyn ReceiverAgent>>,
    /// Receive buffer and advertised window (`sockbuf.rs`).
    win: RcvWindow,
    /// Truesize of the out-of-order queue (`sk_rmem_alloc`; the reader keeps the
    /// in-order queue empty).
    ooo_truesize: u64,
}

impl TcpReceiver {
    /// A receiver of flow `flow` expecting segment 0, idle since `now`.
    pub fn new(flow: FlowId, cfg: &ReceiverConfig, now: Time) -> Self {
        assert!(!cfg.ts_granularity.is_zero());
        TcpReceiver {
            flow,
            cfg: cfg.clone(),
            rcv_nxt: 0,
            rcv_wup: 0,
            unacked_bytes: 0,
            ooo: Vec::new(),
            recent: [0; NUM_SACKS],
            n_recent: 0,
            rcv_mss: INITIAL_RCV_MSS,
            quick: 0,
            ato: Dur::ZERO,
            lrcvtime: now,
            ack_pending: false,
            delack_at: None,
            ts_recent: None,
            delivered: 0,
            stats: ReceiverStats::default(),
            agent: None,
            win: RcvWindow::new(
                cfg.rmem[1],
                cfg.rmem[2],
                cfg.autotune,
                cfg.advmss,
                now.as_ns() / 1000,
            ),
            ooo_truesize: 0,
        }
    }

    /// The initial receive window of a receiver with `cfg` (`tcp_select_initial_window`),
    /// what a SYN-ACK advertises (capped there at 65 535 bytes, unscaled).
    pub fn syn_window(cfg: &ReceiverConfig) -> u64 {
        RcvWindow::new(cfg.rmem[1], cfg.rmem[2], cfg.autotune, cfg.advmss, 0).rcv_wnd
    }

    /// The window of the SYN-ACK (unscaled), the sender's `snd_wnd` before the first ACK.
    pub fn initial_window(&self) -> u64 {
        self.win.rcv_wnd
    }

    /// `sk_rcvbuf` and the last advertised window, bytes.
    pub fn buffer_and_window(&self) -> (u64, u64) {
        (self.win.rcvbuf, self.win.rcv_wnd)
    }

    /// Run `agent` (a scheme's receiver-side half) in this receiver: it sees every data
    /// arrival and stamps its feedback on every ACK. `None` leaves the receiver plain.
    pub fn with_agent(mut self, agent: Option<Box<dyn ReceiverAgent>>) -> Self {
        self.agent = agent;
        self
    }

    /// Process a data segment; returns an ACK to send now (if any) and the payload bytes
    /// newly delivered in order to the application.
    pub fn on_data(&mut self, now: Time, seg: &DataSegment) -> RecvOutcome {
        self.stats.segments_received += 1;
        if let Some(a) = self.agent.as_mut() {
            a.on_data(now, seg.len);
        }
        // RFC 7323 §4.3 (`tcp_replace_ts_recent`): remember TSval if the segment starts at
        // or before the last ACK sent and is not older than TS.Recent.
        if seg.seq <= self.rcv_wup
            && self
                .ts_recent
                .is_none_or(|r| (seg.tsval.wrapping_sub(r) as i32) >= 0)
        {
            self.ts_recent = Some(seg.tsval);
        }
        let ts_us = self.cfg.ts_granularity.as_ns() / 1000;
        // The reader runs after the segments arriving at one instant are processed (a
        // link delivers a millisecond's packets together): in-order data that arrived
        // at this instant is still unread.
        let unread = self.lrcvtime == now && self.delivered > 0;
        self.win.rtt_measure_ts(
            seg.tsecr,
            self.ts_now(now),
            ts_us,
            seg.len >= self.rcv_mss,
            unread,
        );

        if seg.seq < self.rcv_nxt || self.ooo_range(seg.seq).is_some() {
            // A retransmission of data we hold: D-SACK it at once, back to quick ACKs.
            self.stats.duplicates += 1;
            self.enter_quickack_mode();
            self.ack_pending = true;
            let ack = self.send_ack(now, Some(seg.seq));
            return RecvOutcome {
                ack: Some(ack),
                delivered_bytes: 0,
                duplicate: true,
            };
        }

        if seg.seq > self.rcv_nxt {
            // Out of order: queue it and ACK at once with SACK.
            self.stats.out_of_order += 1;
            self.insert_ooo(seg.seq, seg.len);
            // tcp_data_queue_ofo → tcp_grow_window (no quick-ACK change: this ACK is
            // immediate anyway).
            self.ooo_truesize += seg.len as u64 + RX_SKB_OVERHEAD;
            self.win.grow(seg.len, self.ooo_truesize);
            self.win.grow_for_ooo(self.ooo_span());
            self.ack_pending = true;
            let ack = self.send_ack(now, None);
            return RecvOutcome {
                ack: Some(ack),
                delivered_bytes: 0,
                duplicate: false,
            };
        }

        // In order.
        let mut bytes = seg.len as u64;
        self.rcv_nxt += 1;
        let had_ooo = !self.ooo.is_empty();
        if had_ooo {
            // Ranges are merged, so at most the first one can now be contiguous.
            if self.ooo[0].start == self.rcv_nxt {
                let r = self.ooo.remove(0);
                self.rcv_nxt = r.end;
                bytes += r.bytes;
                self.ooo_truesize -= r.bytes + (r.end - r.start) * RX_SKB_OVERHEAD;
            }
            self.forget_acked_blocks();
        }
        self.delivered += bytes;
        self.stats.bytes_delivered += bytes;
        self.unacked_bytes += bytes;
        self.event_data_recv(now, seg.len);
        // RFC 5681 §4.2: ACK at once when the gap in the queue is filled.
        let gap_filled = had_ooo && self.ooo.is_empty();
        let mut ack = if self.unacked_bytes > self.rcv_mss as u64
            || self.quick > 0
            || self.cfg.quickack_always
            || gap_filled
            || !self.ooo.is_empty()
        {
            Some(self.send_ack(now, None))
        } else {
            self.send_delayed_ack(now)
        };
        // The reader copies the data at once: tcp_recvmsg → tcp_rcv_space_adjust, then
        // tcp_cleanup_rbuf's window-update ACK.
        self.win.space_adjust(self.delivered, now.as_ns() / 1000);
        if ack.is_none()
            && self
                .win
                .update_due(self.delivered, self.ooo_truesize, self.rcv_mss)
        {
            ack = Some(self.send_ack(now, None));
        }
        RecvOutcome {
            ack,
            delivered_bytes: bytes,
            duplicate: false,
        }
    }

    /// Delayed-ACK timer.
    pub fn next_wakeup(&self) -> Option<Time> {
        self.delack_at
    }

    /// Fire the delayed-ACK timer if it expired (`tcp_delack_timer_handler`).
    pub fn on_timer(&mut self, now: Time) -> Option<AckSegment> {
        let at = self.delack_at?;
        if at > now {
            return None;
        }
        self.delack_at = None;
        if !self.ack_pending {
            return None;
        }
        // Delayed ACK missed: inflate ato.
        self.ato = (self.ato * 2).min(RECEIVER_RTO);
        self.stats.delayed_acks += 1;
        Some(self.send_ack(now, None))
    }

    /// Payload bytes delivered in order so far.
    pub fn delivered_bytes(&self) -> u64 {
        self.delivered
    }

    /// Counters since the receiver was built.
    pub fn stats(&self) -> &ReceiverStats {
        &self.stats
    }

    /// Next expected segment (`rcv_nxt`).
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }

    /// `tcp_event_data_recv`: quick-ACK start-up and `ato` adaptation.
    fn event_data_recv(&mut self, now: Time, len: u32) {
        // inet_csk_schedule_ack
        self.ack_pending = true;
        // tcp_measure_rcv_mss: the largest segment seen estimates the sender's MSS; a
        // new size re-measures the payload share of truesize (`scaling_ratio`).
        if len >= self.rcv_mss {
            if len != self.rcv_mss {
                self.win.measure_ratio(len);
            }
            self.rcv_mss = len;
        }
        let half_min = self.cfg.delack_min / 2;
        if self.ato.is_zero() {
            // The first data segment: start the delayed-ACK engine in quick-ACK mode.
            self.incr_quickack();
            self.ato = self.cfg.delack_min;
        } else {
            let m = now.saturating_since(self.lrcvtime);
            if m <= half_min {
                self.ato = self.ato / 2 + half_min;
            } else if m < self.ato {
                self.ato = (self.ato / 2 + m).min(RECEIVER_RTO);
            } else if m > RECEIVER_RTO {
                // Too long a gap: the sender restarts; ACK quickly.
                self.incr_quickack();
            }
        }
        self.lrcvtime = now;
        // tcp_grow_window: a growing window asks for a quick ACK (`icsk_ack.quick |= 1`).
        if len >= 128 && self.win.grow(len, self.ooo_truesize) {
            self.quick |= 1;
        }
    }

    /// `tcp_incr_quickack`: up to half the window in full segments, at least 2.
    fn incr_quickack(&mut self) {
        let quickacks = (self.win.rcv_wnd / (2 * self.rcv_mss as u64)).max(2);
        self.quick = self
            .quick
            .max((quickacks as u32).min(self.cfg.max_quickacks));
    }

    fn ts_now(&self, now: Time) -> u32 {
        (now.as_ns() / self.cfg.ts_granularity.as_ns()) as u32
    }

    fn enter_quickack_mode(&mut self) {
        self.incr_quickack();
        self.ato = self.cfg.delack_min;
    }

    /// `tcp_send_delayed_ack`: arm (or keep) the timer; ACK now if it is about to fire.
    fn send_delayed_ack(&mut self, now: Time) -> Option<AckSegment> {
        let mut ato = self.ato;
        if ato > self.cfg.delack_min {
            ato = ato.min(ATO_MAX_NO_RTT);
        }
        ato = ato.min(DELACK_MAX);
        let mut timeout = now + ato;
        if let Some(t) = self.delack_at {
            if t <= now + ato / 4 {
                return Some(self.send_ack(now, None));
            }
            // Use the new timeout only if there was no earlier one.
            timeout = timeout.min(t);
        }
        self.delack_at = Some(timeout);
        None
    }

    /// Build and account an ACK (`tcp_send_ack` → `tcp_event_ack_sent`).
    fn send_ack(&mut self, now: Time, dsack: Option<u64>) -> AckSegment {
        let mut sack = [SackBlock::default(); MAX_SACK_BLOCKS];
        let mut n = 0;
        if let Some(d) = dsack {
            sack[0] = SackBlock {
                start: d,
                end: d + 1,
            };
            n = 1;
            if let Some(i) = self.ooo_range(d) {
                sack[1] = SackBlock {
                    start: self.ooo[i].start,
                    end: self.ooo[i].end,
                };
                n = 2;
            }
            self.stats.dsacks_sent += 1;
        }
        let first_sack = dsack.is_some() as usize;
        for k in 0..self.n_recent {
            if n == MAX_SACK_BLOCKS {
                break;
            }
            let Some(i) = self.ooo_range(self.recent[k]) else {
                continue;
            };
            let b = SackBlock {
                start: self.ooo[i].start,
                end: self.ooo[i].end,
            };
            if !sack[first_sack..n].contains(&b) {
                sack[n] = b;
                n += 1;
            }
        }
        let ack = AckSegment {
            flow: self.flow,
            ack: self.rcv_nxt,
            sack,
            sack_len: n as u8,
            dsack: dsack.is_some(),
            tsval: self.ts_now(now),
            tsecr: self.ts_recent.unwrap_or(0),
            sent_at: now,
            wnd: self
                .win
                .advertise(self.delivered, self.ooo_truesize, self.rcv_mss)
                .min(u32::MAX as u64) as u32,
            feedback: self.agent.as_mut().map(|a| Box::new(a.feedback(now))),
            syn: false,
        };
        // tcp_event_ack_sent: one quick ACK used; the timer is cleared.
        if self.quick > 0 {
            let pkts = self.ack_pending as u32;
            if pkts >= self.quick {
                self.quick = 0;
                self.ato = self.cfg.delack_min;
            } else {
                self.quick -= pkts;
            }
        }
        self.rcv_wup = self.rcv_nxt;
        self.unacked_bytes = 0;
        self.ack_pending = false;
        self.delack_at = None;
        self.stats.acks_sent += 1;
        ack
    }

    /// Index of the out-of-order range holding `seq`.
    fn ooo_range(&self, seq: u64) -> Option<usize> {
        let i = self.ooo.partition_point(|r| r.end <= seq);
        (i < self.ooo.len() && self.ooo[i].start <= seq).then_some(i)
    }

    /// Queue an out-of-order segment (not held yet) and make its block the most recent.
    /// Bytes from `rcv_nxt` to the end of the out-of-order queue (Linux's
    /// `ooo_last_skb->end_seq − rcv_nxt`): the queued bytes, and the holes as full
    /// segments (the model counts sequence in segments).
    fn ooo_span(&self) -> u64 {
        let Some(last) = self.ooo.last() else {
            return 0;
        };
        let queued: u64 = self.ooo.iter().map(|r| r.bytes).sum();
        let queued_segs: u64 = self.ooo.iter().map(|r| r.end - r.start).sum();
        queued + (last.end - self.rcv_nxt - queued_segs) * self.rcv_mss as u64
    }

    fn insert_ooo(&mut self, seq: u64, len: u32) {
        let len = len as u64;
        let i = self.ooo.partition_point(|r| r.end < seq);
        let merge_left = i < self.ooo.len() && self.ooo[i].end == seq;
        let j = if merge_left { i + 1 } else { i };
        let merge_right = j < self.ooo.len() && self.ooo[j].start == seq + 1;
        let k = match (merge_left, merge_right) {
            (true, true) => {
                let right = self.ooo.remove(j);
                let r = &mut self.ooo[i];
                r.end = right.end;
                r.bytes += len + right.bytes;
                i
            }
            (true, false) => {
                let r = &mut self.ooo[i];
                r.end = seq + 1;
                r.bytes += len;
                i
            }
            (false, true) => {
                let r = &mut self.ooo[j];
                r.start = seq;
                r.bytes += len;
                j
            }
            (false, false) => {
                self.ooo.insert(
                    i,
                    OooRange {
                        start: seq,
                        end: seq + 1,
                        bytes: len,
                    },
                );
                i
            }
        };
        // The block now holding seq goes first; drop remembered anchors inside it.
        let (s, e) = (self.ooo[k].start, self.ooo[k].end);
        let mut m = 0;
        let mut kept = [0u64; NUM_SACKS];
        kept[0] = seq;
        m += 1;
        for &a in &self.recent[..self.n_recent] {
            if m == NUM_SACKS {
                break;
            }
            if !(s..e).contains(&a) {
                kept[m] = a;
                m += 1;
            }
        }
        self.recent = kept;
        self.n_recent = m;
    }

    /// `tcp_sack_remove`: forget blocks the cumulative ACK has passed.
    fn forget_acked_blocks(&mut self) {
        let mut m = 0;
        for k in 0..self.n_recent {
            if self.recent[k] >= self.rcv_nxt {
                self.recent[m] = self.recent[k];
                m += 1;
            }
        }
        self.n_recent = m;
    }
}
