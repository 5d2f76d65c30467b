//! The TCP sender: Linux 6.x `tcp_ack` and its helpers (`net/ipv4/tcp_input.c`). This file
//! holds the state, the public API and the per-ACK recipe; the steps live in `input.rs`
//! (SACK, RFC 2018/2883; cumulative ACK; RTT sample, RFC 6298 with `rtt.rs`), `rate.rs`
//! (delivery-rate samples), `recovery.rs` (state machine, undo, F-RTO, PRR), `rack.rs`
//! (RACK-TLP loss detection) and `output.rs` (transmission, pacing, timers, probes).
//!
//! Per-ACK recipe ([`TcpSender::on_ack`]), in Linux's order:
//! ```text
//! on_receiver_feedback (only schemes with a receiver-side agent)
//! sacktag (SACK/D-SACK scoreboard)  → in_ack_event
//! clean_rtx_queue (cumulative ACK, RTT sample, min_rtt, RTO) → pkts_acked
//! rack_update_reo_wnd → process_tlp_ack
//! fastretrans_alert (if the ACK is dubious: RACK, undo, state machine, ssthresh/set_state)
//! set_xmit_timer (TLP or RTO)
//! rate_gen (delivery-rate sample)
//! cong_control: cc.cong_control | PRR in CWR/Recovery | cc.cong_avoid; default pacing rate
//! ```
//!
//! Differences from Linux (all in `docs/tcp-model.md`):
//! 1. Whole-segment sequence numbers; every segment is one packet (no TSO/GSO, pcount 1).
//! 2. ACKs older than `snd_una` are ignored (the modelled paths are FIFO, so they cannot
//!    occur); SACK reneging is not modelled (the receiver never reneges).
//! 3. No ECN, no FIN, no MTU probing; the SYN exchange is optional and lives in
//!    `handshake.rs` (the sender is built when it ends).
//! 4. `pkts_acked` receives the number of segments newly ACKed or SACKed (the trait's
//!    definition) and `in_flight` before the ACK.
//! 5. A congestion control cannot call `tcp_enter_cwr` itself: it sets
//!    `Sock::cwr_request` in `cong_avoid`, and the stack enters CWR right after the hook
//!    returns (the same point in the ACK's processing).

use cellcc_congestion::minmax::Minmax;
use cellcc_congestion::{CaState, CongestionControl, RateSample, Sock};
use cellcc_units::{Dur, Time};

use super::handshake::Established;
use super::pacing::{default_pacing_rate, Pacer};
use super::rate::{RateAcc, RateEstimator};
use super::rtt::RttEstimator;
use super::scoreboard::Scoreboard;
use super::{App, SenderConfig, SenderObserver};
use crate::packet::{AckSegment, FlowId};

/// `sysctl_tcp_reordering`: initial duplicate threshold (`TCP_FASTRETRANS_THRESH`).
pub(crate) const TCP_REORDERING: u32 = 3;
/// `sysctl_tcp_max_reordering`.
pub(crate) const TCP_MAX_REORDERING: u32 = 300;

/// `FLAG_*` bits of one ACK's processing (`tcp_input.c`).
pub(crate) mod flag {
    /// Data was cumulatively ACKed (`FLAG_DATA_ACKED`, here also `FLAG_ACKED`).
    pub(crate) const DATA_ACKED: u32 = 1 << 0;
    /// `snd_una` advanced (`FLAG_SND_UNA_ADVANCED`; implies `FLAG_WIN_UPDATE`).
    pub(crate) const SND_UNA_ADVANCED: u32 = 1 << 1;
    /// New data was SACKed.
    pub(crate) const DATA_SACKED: u32 = 1 << 2;
    /// The ACK carried a valid D-SACK.
    pub(crate) const DSACKING_ACK: u32 = 1 << 3;
    /// The D-SACK covers the tail loss probe.
    pub(crate) const DSACK_TLP: u32 = 1 << 4;
    /// A retransmitted segment was cumulatively ACKed (RFC 6298 §3: no RTT from the ACK).
    pub(crate) const RETRANS_DATA_ACKED: u32 = 1 << 5;
    /// A never-retransmitted segment below `high_seq` was (S)ACKed.
    pub(crate) const ORIG_SACK_ACKED: u32 = 1 << 6;
    /// Re-arm the TLP/RTO timer after processing.
    pub(crate) const SET_XMIT_TIMER: u32 = 1 << 7;
    /// A retransmission was found lost.
    pub(crate) const LOST_RETRANS: u32 = 1 << 8;
    /// The ACK probably was a delayed ACK for a lone runt segment.
    pub(crate) const ACK_MAYBE_DELAYED: u32 = 1 << 9;

    /// `FLAG_NOT_DUP` (data, window update or ACKed).
    pub(crate) const NOT_DUP: u32 = DATA_ACKED | SND_UNA_ADVANCED;
    /// `FLAG_CA_ALERT` (no ECN here).
    pub(crate) const CA_ALERT: u32 = DATA_SACKED | DSACKING_ACK;
    /// `FLAG_FORWARD_PROGRESS`.
    pub(crate) const FORWARD_PROGRESS: u32 = DATA_ACKED | DATA_SACKED;
}

/// Counters reported by [`TcpSender::stats`].
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SenderStats {
    /// Data segments put on the wire, retransmissions included.
    pub segments_sent: u64,
    /// Payload bytes put on the wire, retransmissions included.
    pub bytes_sent: u64,
    /// Retransmitted segments (fast, timeout and probe retransmissions).
    pub retransmissions: u64,
    /// Entries into fast recovery.
    pub fast_recoveries: u64,
    /// Retransmission timeouts.
    pub rtos: u64,
    /// Tail loss probes sent.
    pub tlps: u64,
    /// Losses repaired by a probe and answered with a cwnd reduction.
    pub tlp_recoveries: u64,
    /// RACK reordering-window timer expiries.
    pub reo_timeouts: u64,
    /// Recoveries undone when their end showed no loss (`TCPFullUndo`/`TCPLossUndo`).
    pub undo_recovery: u64,
    /// Timeouts undone by timestamps (`tcp_try_undo_loss`).
    pub undo_loss: u64,
    /// Timeouts found spurious by F-RTO.
    pub undo_frto: u64,
    /// Reductions undone because D-SACKs covered every retransmission.
    pub undo_dsack: u64,
    /// Partial undos (a hole filled by a delayed original).
    pub undo_partial: u64,
    /// ACKs carrying a valid D-SACK.
    pub dsacks_received: u64,
    /// ACKs processed.
    pub acks_received: u64,
    /// Payload bytes cumulatively acknowledged.
    pub bytes_acked: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TimerKind {
    /// `ICSK_TIME_RETRANS`.
    Retrans,
    /// `ICSK_TIME_REO_TIMEOUT` (RACK reordering window).
    Reo,
    /// `ICSK_TIME_LOSS_PROBE`.
    Probe,
}

/// Linux's single retransmission timer (`icsk_retransmit_timer` with `icsk_pending`).
/// After a RACK or probe expiry the pending kind stays set until the timer is re-armed,
/// as in the kernel (it changes how `tcp_rearm_rto` computes the RTO).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct XmitTimer {
    pub pending: Option<TimerKind>,
    pub expires: Option<Time>,
}

/// A tail loss probe decided at timer expiry, sent by the next `poll_transmit`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Probe {
    NewData,
    Retransmit(u64),
}

/// What `tcp_xmit_recovery` should do after the ACK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rexmit {
    None,
    Lost,
    /// F-RTO: send new data before any retransmission.
    New,
}

/// Observer events buffered during processing and delivered in order at the end of each
/// public call.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Event {
    Rtt(Time, Dur),
    Retransmit(Time, u64),
    State(Time, CaState, CaState),
    Rto(Time),
}

/// RACK state (`tp->rack`, RFC 8985).
#[derive(Clone, Debug)]
pub(crate) struct Rack {
    /// Send time of the most recently sent delivered segment (`rack.mstamp`).
    pub mstamp: Option<Time>,
    /// Its end sequence (`rack.end_seq`), for ties.
    pub end_seq: u64,
    /// RTT of the latest delivered segment (`rack.rtt_us`).
    pub rtt: Dur,
    /// New delivery information since the last detection (`rack.advanced`).
    pub advanced: bool,
    /// Reordering window multiplier (`rack.reo_wnd_steps`).
    pub reo_wnd_steps: u32,
    /// Recoveries to keep the enlarged window (`rack.reo_wnd_persist`).
    pub reo_wnd_persist: u32,
    /// A D-SACK arrived since the last window adjustment (`rack.dsack_seen`).
    pub dsack_seen: bool,
    /// `delivered` at the last window adjustment (`rack.last_delivered`).
    pub last_delivered: u64,
}

/// State of one ACK's processing (`tcp_sacktag_state` plus `tcp_ack` locals).
#[derive(Debug)]
pub(crate) struct AckState {
    pub flag: u32,
    pub prior_snd_una: u64,
    pub prior_fack: u64,
    pub prior_in_flight: u32,
    pub prior_packets: u32,
    pub prior_delivered: u64,
    pub prior_lost: u64,
    pub acc: RateAcc,
    pub first_sackt: Option<Time>,
    pub last_sackt: Option<Time>,
    pub reord: u64,
    pub sack_delivered: u32,
    pub num_dupack: u32,
    pub rexmit: Rexmit,
    pub ca_rtt: Option<Dur>,
}

/// A Linux-faithful TCP sender for one flow.
pub struct TcpSender {
    pub(crate) flow: FlowId,
    pub(crate) cfg: SenderConfig,
    pub(crate) cc: Box<dyn CongestionControl>,
    pub(crate) sock: Sock,
    pub(crate) sb: Scoreboard,
    pub(crate) rtt: RttEstimator,
    /// `tcp_sock.rtt_min`: windowed min RTT, µs, timed by `tcp_jiffies32`; empty
    /// (`u32::MAX`) before the first sample, as after `tcp_init_sock`.
    pub(crate) rtt_min: Minmax,
    pub(crate) rate: RateEstimator,
    pub(crate) rack: Rack,
    pub(crate) pacer: Pacer,
    /// Segments of a finite flow, and the payload of its last one.
    pub(crate) total_segs: Option<u64>,
    pub(crate) last_len: u32,
    // Loss recovery (`tcp_sock` fields).
    pub(crate) high_seq: u64,
    pub(crate) undo_marker: Option<u64>,
    pub(crate) undo_retrans: i64,
    /// TSval of the first retransmission of the episode (`retrans_stamp`).
    pub(crate) retrans_stamp: Option<u32>,
    pub(crate) reordering: u32,
    pub(crate) reord_seen: u32,
    pub(crate) prr_delivered: u32,
    pub(crate) prr_out: u32,
    pub(crate) frto: bool,
    /// F-RTO asked for new data first: hold retransmissions until the next ACK.
    pub(crate) rexmit_hold: bool,
    pub(crate) tlp_high_seq: Option<u64>,
    pub(crate) tlp_retrans: bool,
    pub(crate) probe: Option<Probe>,
    pub(crate) total_retrans: u64,
    pub(crate) dsack_dups: u64,
    /// `lost_skb_hint`/`lost_cnt_hint` for the duplicate-threshold marking.
    pub(crate) lost_hint: Option<(u64, u32)>,
    // Timers.
    /// `icsk_rto`, rounded up to ticks and backed off.
    pub(crate) rto: Dur,
    pub(crate) backoff: u32,
    /// Consecutive timeouts (`icsk_retransmits`).
    pub(crate) retransmits: u32,
    pub(crate) timer: XmitTimer,
    // cwnd validation and idle restart.
    pub(crate) cwnd_usage_seq: u64,
    pub(crate) snd_cwnd_used: u32,
    pub(crate) snd_cwnd_stamp: Time,
    // Timestamps: last TSval received (echoed), TSecr of the ACK being processed.
    pub(crate) ts_recent: u32,
    pub(crate) rcv_tsecr: u32,
    // Socket buffers (`sockbuf.rs`).
    /// `snd_wnd`: the peer's advertised window, bytes from `snd_una`.
    pub(crate) snd_wnd: u64,
    /// `sk_sndbuf`, bytes.
    pub(crate) sndbuf: u64,
    /// Segments the application has written (`write_seq`): it tops the write queue up to
    /// `sk_sndbuf`, so this never decreases.
    pub(crate) write_seq: u64,
    /// `SOCK_QUEUE_SHRUNK`: an ACK freed queue space since the last `tcp_check_space`.
    pub(crate) queue_shrunk: bool,
    pub(crate) chrono: super::chrono::Chrono,
    pub(crate) stats: SenderStats,
    pub(crate) events: Vec<Event>,
    pub(crate) gap_scratch: Vec<(u64, u64)>,
}

impl std::fmt::Debug for TcpSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpSender")
            .field("flow", &self.flow)
            .field("cc", &self.cc.name())
            .field("snd_una", &self.sock.snd_una)
            .field("snd_nxt", &self.sock.snd_nxt)
            .field("cwnd", &self.sock.cwnd)
            .field("ca_state", &self.sock.ca_state)
            .finish_non_exhaustive()
    }
}

impl TcpSender {
    /// A sender whose connection is established at `now` (no handshake, no RTT sample).
    /// Calls `cc.init`.
    ///
    /// `cc` must own cwnd or override `cong_avoid` (Linux's
    /// `tcp_validate_congestion_control`). Rust cannot see whether a default method was
    /// overridden, and probing here would feed the controller an ACK and change the run,
    /// so the rule is checked by behaviour for every registered scheme in the registry's
    /// tests (`every_scheme_provides_cong_avoid_or_cong_control`).
    pub fn new(
        flow: FlowId,
        cfg: &SenderConfig,
        cc: Box<dyn CongestionControl>,
        app: App,
        now: Time,
    ) -> Self {
        Self::start(flow, cfg, cc, app, now, None)
    }

    /// A sender whose connection a handshake established at `now` ([`super::handshake`],
    /// `tcp_init_transfer`): the SYN-ACK's RTT seeds srtt, rttvar, the RTO and min_rtt
    /// before `cc.init`, as Linux's `tcp_ack` on the SYN-ACK runs before
    /// `tcp_init_congestion_control`; more than one SYN retransmission starts it at
    /// cwnd 1; the SYN-ACK's window and TSval are the first `snd_wnd` and `ts_recent`.
    pub fn after_handshake(
        flow: FlowId,
        cfg: &SenderConfig,
        cc: Box<dyn CongestionControl>,
        app: App,
        now: Time,
        hs: &Established,
    ) -> Self {
        Self::start(flow, cfg, cc, app, now, Some(hs))
    }

    fn start(
        flow: FlowId,
        cfg: &SenderConfig,
        cc: Box<dyn CongestionControl>,
        app: App,
        now: Time,
        hs: Option<&Established>,
    ) -> Self {
        assert!(cfg.mss > 0 && cfg.hz > 0 && !cfg.ts_granularity.is_zero());
        let mut sock = Sock::new(cfg.mss, now);
        sock.hz = cfg.hz;
        sock.ts_granularity = cfg.ts_granularity;
        sock.cwnd = cfg.init_cwnd;
        let (total_segs, last_len) = match app {
            App::Bulk => (None, cfg.mss),
            App::Bytes(n) => {
                let mss = cfg.mss as u64;
                let segs = n.div_ceil(mss);
                (Some(segs), (n - segs.saturating_sub(1) * mss) as u32)
            }
        };
        let mut s = TcpSender {
            flow,
            cfg: cfg.clone(),
            cc,
            sock,
            sb: Scoreboard::default(),
            rtt: RttEstimator::new(cfg.rto_min),
            rtt_min: Minmax::new_min_empty(),
            rate: RateEstimator::default(),
            rack: Rack {
                mstamp: None,
                end_seq: 0,
                rtt: Dur::ZERO,
                advanced: false,
                reo_wnd_steps: 1,
                reo_wnd_persist: 0,
                dsack_seen: false,
                last_delivered: 0,
            },
            pacer: Pacer {
                wstamp: now,
                ..Pacer::default()
            },
            total_segs,
            last_len,
            high_seq: 0,
            undo_marker: None,
            undo_retrans: 0,
            retrans_stamp: None,
            reordering: TCP_REORDERING,
            reord_seen: 0,
            prr_delivered: 0,
            prr_out: 0,
            frto: false,
            rexmit_hold: false,
            tlp_high_seq: None,
            tlp_retrans: false,
            probe: None,
            total_retrans: 0,
            dsack_dups: 0,
            lost_hint: None,
            rto: Dur::ZERO,
            backoff: 0,
            retransmits: 0,
            timer: XmitTimer::default(),
            cwnd_usage_seq: 0,
            snd_cwnd_used: 0,
            snd_cwnd_stamp: now,
            ts_recent: 0,
            rcv_tsecr: 0,
            snd_wnd: u64::MAX,
            sndbuf: cfg.wmem[1],
            write_seq: 0,
            queue_shrunk: false,
            chrono: Default::default(),
            stats: SenderStats::default(),
            events: Vec::new(),
            gap_scratch: Vec::new(),
        };
        s.rto = s.ticks_ceil(cfg.rto_init).min(cfg.rto_max);
        if let Some(hs) = hs {
            s.seed_from_handshake(hs);
        }
        s.cc.init(&mut s.sock);
        // tcp_init_buffer_space → tcp_sndbuf_expand.
        s.sndbuf_expand();
        s.app_write();
        s
    }

    /// Process an incoming ACK (`tcp_ack`).
    pub fn on_ack<O: SenderObserver>(&mut self, now: Time, ack: &AckSegment, obs: &mut O) {
        self.sock.now = now;
        self.rexmit_hold = false;
        self.process_ack(ack);
        self.flush(obs);
    }

    /// Next segment to put on the wire now, if cwnd, pacing and the app allow; call
    /// repeatedly until `None`.
    pub fn poll_transmit<O: SenderObserver>(
        &mut self,
        now: Time,
        obs: &mut O,
    ) -> Option<crate::packet::DataSegment> {
        self.sock.now = now;
        let seg = self.transmit_one();
        self.flush(obs);
        seg
    }

    /// Earliest time the sender needs attention: the RTO/TLP/RACK timer, or the pacing
    /// release time when it has something to send but pacing holds it back. `None` if
    /// nothing is pending.
    pub fn next_wakeup(&self) -> Option<Time> {
        let mut w = self.timer.expires;
        let mut consider = |t: Time| w = Some(w.map_or(t, |x| x.min(t)));
        if self.probe.is_some() {
            consider(self.sock.now);
        } else if self.wants_to_send() {
            if let Some(t) = self.pacer.release_time(&self.sock, self.sock.now) {
                consider(t);
            }
        }
        w
    }

    /// Fire expired timers (RTO, RACK reordering timeout, TLP); no-op if none expired.
    pub fn on_timer<O: SenderObserver>(&mut self, now: Time, obs: &mut O) {
        self.sock.now = now;
        self.fire_timer();
        self.flush(obs);
    }

    /// Set the window and/or the pacing rate from outside the congestion control (a
    /// per-interval controller's decision, as `setsockopt(TCP_CWND)` patches or CCP's
    /// datapath do). The window is capped at `cwnd_clamp`; a pacing rate turns internal
    /// pacing on. Takes effect for the next transmission.
    pub fn set_window_and_rate(&mut self, now: Time, cwnd: Option<u32>, pacing_rate: Option<u64>) {
        self.sock.now = now;
        if let Some(w) = cwnd {
            self.sock.cwnd = w.clamp(1, self.sock.cwnd_clamp);
            self.snd_cwnd_stamp = self.sock.now;
        }
        if let Some(r) = pacing_rate {
            self.sock.pacing_status = cellcc_congestion::PacingStatus::Needed;
            self.sock.pacing_rate = r.min(self.sock.max_pacing_rate);
        }
    }

    /// The connection state congestion controls see (cwnd, ssthresh, srtt, pacing rate…).
    pub fn sock(&self) -> &Sock {
        &self.sock
    }

    /// The congestion control (for `phase()` and `name()`).
    pub fn cc(&self) -> &dyn CongestionControl {
        self.cc.as_ref()
    }

    /// Counters since the sender was built.
    pub fn stats(&self) -> &SenderStats {
        &self.stats
    }

    /// The current retransmission timeout (`icsk_rto`, backed off).
    pub fn rto(&self) -> Dur {
        self.rto
    }

    /// The RTT estimator (srtt, mdev, rttvar).
    pub fn rtt_estimator(&self) -> &RttEstimator {
        &self.rtt
    }

    /// Whether a finite flow has been fully acknowledged (always false for `Bulk`).
    pub fn is_complete(&self) -> bool {
        self.total_segs.is_some_and(|n| self.sock.snd_una >= n)
    }

    fn flush<O: SenderObserver>(&mut self, obs: &mut O) {
        for e in self.events.drain(..) {
            match e {
                Event::Rtt(t, r) => obs.rtt_sample(t, r),
                Event::Retransmit(t, s) => obs.retransmit(t, s),
                Event::State(t, a, b) => obs.state_change(t, a, b),
                Event::Rto(t) => obs.rto(t),
            }
        }
    }

    // ----- small helpers -------------------------------------------------------------

    /// Length of one kernel tick.
    pub(crate) fn tick(&self) -> Dur {
        Dur::from_ns(1_000_000_000 / self.cfg.hz as u64)
    }

    /// Round a duration up to whole ticks (`usecs_to_jiffies` rounds up).
    pub(crate) fn ticks_ceil(&self, d: Dur) -> Dur {
        let t = self.tick().as_ns();
        Dur::from_ns(d.as_ns().div_ceil(t) * t)
    }

    /// The sender's TCP timestamp clock (TSval).
    pub(crate) fn ts_now(&self) -> u32 {
        (self.sock.now.as_ns() / self.cfg.ts_granularity.as_ns()) as u32
    }

    /// Payload bytes of segment `seq`.
    pub(crate) fn seg_len(&self, seq: u64) -> u32 {
        match self.total_segs {
            Some(n) if seq + 1 == n => self.last_len,
            _ => self.cfg.mss,
        }
    }

    /// New data can go out: the application wrote it (`tcp_send_head`) and the peer's
    /// window has room for it (`tcp_snd_wnd_test`).
    pub(crate) fn has_new_data(&self) -> bool {
        self.has_unsent() && self.wnd_allows(self.sock.snd_nxt)
    }

    /// The write queue holds data not yet sent.
    pub(crate) fn has_unsent(&self) -> bool {
        self.sock.snd_nxt < self.write_seq
    }

    /// `tcp_snd_wnd_test`: segment `seq` ends within `snd_una + snd_wnd` (`tcp_wnd_end`).
    pub(crate) fn wnd_allows(&self, seq: u64) -> bool {
        (seq - self.sock.snd_una) * self.cfg.mss as u64 + self.seg_len(seq) as u64 <= self.snd_wnd
    }

    /// Set the peer's initial window (the SYN-ACK's, unscaled), before any ACK.
    pub fn set_snd_wnd(&mut self, bytes: u64) {
        self.snd_wnd = bytes;
    }

    /// `sk_sndbuf`, bytes.
    pub fn sndbuf(&self) -> u64 {
        self.sndbuf
    }

    /// The application writes while `sk_wmem_queued < sk_sndbuf`
    /// (`sk_stream_memory_free`), one segment at a time, until its data ends.
    pub(crate) fn app_write(&mut self) {
        let was_empty = !self.has_unsent();
        let ts = super::sockbuf::tx_truesize(self.cfg.mss);
        let room = self.sndbuf.div_ceil(ts);
        let mut limit = self.sock.snd_una + room;
        if let Some(n) = self.total_segs {
            limit = limit.min(n);
        }
        self.write_seq = self.write_seq.max(limit);
        self.chrono_on_write(was_empty);
    }

    /// The writer is blocked on a full send buffer (`SOCK_NOSPACE`).
    pub(crate) fn app_blocked(&self) -> bool {
        self.total_segs.is_none_or(|n| self.write_seq < n)
    }

    /// `tcp_sndbuf_expand`.
    fn sndbuf_expand(&mut self) {
        let want = super::sockbuf::sndbuf_expand(
            self.cfg.mss,
            self.sock.cwnd,
            self.reordering,
            2,
            self.cfg.wmem[2],
        );
        self.sndbuf = self.sndbuf.max(want);
    }

    /// `tcp_check_space` → `tcp_new_space`, after the ACK's transmissions: a blocked
    /// writer whose queue shrank gets a larger buffer if cwnd is not full
    /// (`tcp_should_expand_sndbuf`), then writes. True if new data became available.
    pub(crate) fn check_space(&mut self) -> bool {
        if !std::mem::take(&mut self.queue_shrunk) || !self.app_blocked() {
            return false;
        }
        if self.sock.packets_in_flight() < self.sock.cwnd {
            self.sndbuf_expand();
            self.snd_cwnd_stamp = self.sock.now;
        }
        let before = self.write_seq;
        self.app_write();
        let wrote = self.write_seq > before;
        if wrote {
            self.chrono_writer_woke();
        }
        wrote
    }

    /// `tcp_highest_sack_seq`: one past the highest SACKed segment, or `snd_una`.
    pub(crate) fn highest_sack_seq(&self) -> u64 {
        if self.sock.sacked_out == 0 {
            self.sock.snd_una
        } else {
            self.sb.highest_sack_end
        }
    }

    pub(crate) fn in_cwnd_reduction(&self) -> bool {
        matches!(self.sock.ca_state, CaState::Cwr | CaState::Recovery)
    }

    /// `tcp_set_ca_state`: tell the congestion control, then switch. Every state change
    /// goes through here.
    pub(crate) fn set_ca_state(&mut self, to: CaState) {
        let from = self.sock.ca_state;
        debug_assert!(legal_transition(from, to), "illegal {from:?} -> {to:?}");
        self.cc.set_state(&mut self.sock, to);
        self.sock.ca_state = to;
        if from != to {
            self.events.push(Event::State(self.sock.now, from, to));
        }
    }

    // ----- tcp_ack ---------------------------------------------------------------------

    fn process_ack(&mut self, ack: &AckSegment) {
        if ack.ack > self.sock.snd_nxt || ack.ack < self.sock.snd_una {
            // ACK of unsent data is invalid; one older than snd_una cannot arrive on the
            // FIFO paths modelled (Linux would still read its SACK blocks).
            return;
        }
        self.stats.acks_received += 1;
        if let Some(fb) = &ack.feedback {
            // Not Linux: a receiver-side agent's value (`cellcc_congestion::feedback`).
            self.cc.on_receiver_feedback(&mut self.sock, fb);
        }
        self.rcv_tsecr = ack.tsecr;
        self.ts_recent = ack.tsval;
        // tcp_ack_update_window (FIFO paths: every valid ACK is the newest).
        self.snd_wnd = ack.wnd as u64;
        self.sock.rcv_tsval = ack.tsval;
        self.sock.rcv_tsecr = ack.tsecr;
        let mut st = AckState {
            flag: 0,
            prior_snd_una: self.sock.snd_una,
            prior_fack: self.highest_sack_seq(),
            prior_in_flight: self.sock.packets_in_flight(),
            prior_packets: self.sock.packets_out,
            prior_delivered: self.sock.delivered,
            prior_lost: self.sock.lost,
            acc: RateAcc::default(),
            first_sackt: None,
            last_sackt: None,
            reord: u64::MAX,
            sack_delivered: 0,
            num_dupack: 0,
            rexmit: Rexmit::None,
            ca_rtt: None,
        };
        if ack.ack > self.sock.snd_una {
            st.flag |= flag::SND_UNA_ADVANCED;
            self.retransmits = 0;
            self.queue_shrunk = true;
        }
        let slow_path = ack.sack_len > 0 || st.flag & flag::SND_UNA_ADVANCED == 0;
        self.sock.snd_una = ack.ack;
        if ack.sack_len > 0 {
            self.sacktag(ack, &mut st);
        }
        self.sock.delivered += st.sack_delivered as u64; // tcp_count_delivered
        self.cc.in_ack_event(&mut self.sock, slow_path);
        if st.prior_packets == 0 {
            // Nothing was outstanding (`no_queue`).
            if self.tlp_high_seq.is_some() {
                self.process_tlp_ack(ack.ack, st.flag);
            }
            return;
        }
        self.clean_rtx_queue(ack.ack, &mut st);
        self.rack_update_reo_wnd(&st.acc);
        if self.tlp_high_seq.is_some() {
            self.process_tlp_ack(ack.ack, st.flag);
        }
        if self.ack_is_dubious(st.flag) {
            if st.flag & (flag::SND_UNA_ADVANCED | flag::NOT_DUP | flag::DSACKING_ACK) == 0 {
                st.num_dupack = 1;
            }
            self.fastretrans_alert(&mut st);
        }
        if st.flag & flag::SET_XMIT_TIMER != 0 {
            self.set_xmit_timer();
        }
        let delivered = (self.sock.delivered - st.prior_delivered) as u32;
        let lost = (self.sock.lost - st.prior_lost) as u32;
        let rs = self.rate.gen(
            &mut self.sock,
            &st.acc,
            delivered,
            lost,
            st.prior_in_flight,
            st.ca_rtt,
            st.flag & flag::ACK_MAYBE_DELAYED != 0,
        );
        self.cong_control(delivered, st.flag, &rs);
        self.xmit_recovery(st.rexmit);
    }

    /// `tcp_ack_is_dubious`.
    fn ack_is_dubious(&self, f: u32) -> bool {
        f & flag::NOT_DUP == 0 || f & flag::CA_ALERT != 0 || self.sock.ca_state != CaState::Open
    }

    /// `tcp_cong_control`.
    fn cong_control(&mut self, acked_sacked: u32, f: u32, rs: &RateSample) {
        if self.cc.owns_cwnd() {
            self.cc.cong_control(&mut self.sock, rs);
            return;
        }
        if self.in_cwnd_reduction() {
            // Reduce cwnd as the state mandates (PRR).
            self.cwnd_reduction(acked_sacked, rs.losses, f);
        } else if self.may_raise_cwnd(f) {
            self.cc.cong_avoid(&mut self.sock, acked_sacked);
            self.snd_cwnd_stamp = self.sock.now;
            // Linux congestion controls may call `tcp_enter_cwr` from `cong_avoid`
            // (CDG's backoff); here they ask through `Sock::cwr_request`.
            if std::mem::take(&mut self.sock.cwr_request) {
                self.enter_cwr();
            }
        }
        self.sock.pacing_rate = default_pacing_rate(&self.sock, self.rtt.srtt_us8());
    }

    /// `tcp_may_raise_cwnd`: grow only on in-order delivery, unless reordering is high.
    fn may_raise_cwnd(&self, f: u32) -> bool {
        if self.reordering > TCP_REORDERING {
            f & flag::FORWARD_PROGRESS != 0
        } else {
            f & flag::DATA_ACKED != 0
        }
    }

    /// `tcp_xmit_recovery`: F-RTO's "send new data first" holds retransmissions until
    /// the next ACK if new data can go out; otherwise F-RTO is abandoned.
    fn xmit_recovery(&mut self, rexmit: Rexmit) {
        if rexmit == Rexmit::New {
            if self.has_new_data() && self.sock.packets_in_flight() < self.sock.cwnd {
                self.rexmit_hold = true;
            } else {
                self.frto = false;
            }
        }
    }
}

/// Transitions Linux can make (`tcp_set_ca_state` callers). Setting the same state again
/// is allowed (the kernel does it on repeated timeouts).
fn legal_transition(from: CaState, to: CaState) -> bool {
    use CaState::*;
    from == to
        || match to {
            Loss => true,
            Recovery => true,
            Cwr => matches!(from, Open | Disorder),
            Open | Disorder => true,
        }
}

/// Order of `enum tcp_ca_state` (Open < Disorder < CWR < Recovery < Loss).
pub(crate) fn ca_rank(s: CaState) -> u8 {
    match s {
        CaState::Open => 0,
        CaState::Disorder => 1,
        CaState::Cwr => 2,
        CaState::Recovery => 3,
        CaState::Loss => 4,
    }
}
