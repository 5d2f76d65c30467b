//! The TCP sender: Linux 6.x `tcp_ack` and its helpers (`net/ipv4/tcp_input.c`), with SACK
//! (RFC 2018/2883), RTT estimation (RFC 6298, see `rtt.rs`), delivery-rate samples
//! (`rate.rs`), the loss-recovery state machine, RACK-TLP and PRR (`recovery.rs`), and
//! transmission, pacing and timers (`output.rs`).
//!
//! Per-ACK recipe ([`TcpSender::on_ack`]), in Linux's order:
//! ```text
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
//! 3. No ECN, no receive-window limit, no SYN/FIN, no MTU probing.
//! 4. `pkts_acked` receives the number of segments newly ACKed or SACKed (the trait's
//!    definition) and `in_flight` before the ACK.

use cellcc_congestion::{AckSample, CaState, CongestionControl, RateSample, Sock};
use cellcc_units::{Dur, Time};

use super::pacing::{default_pacing_rate, Pacer};
use super::rate::{us_delta, RateAcc, RateEstimator};
use super::rtt::{RttEstimator, WindowedMin};
use super::scoreboard::{Scoreboard, ANY_RETRANS, LOST, RETRANS, SACKED};
use super::{App, SenderConfig, SenderObserver};
use crate::packet::{AckSegment, FlowId, MAX_SACK_BLOCKS};

/// `tcp_min_rtt_wlen`: window of the min-RTT filter, seconds.
const MIN_RTT_WLEN_S: u64 = 300;
/// `sysctl_tcp_reordering`: initial duplicate threshold (`TCP_FASTRETRANS_THRESH`).
pub(crate) const TCP_REORDERING: u32 = 3;
/// `sysctl_tcp_max_reordering`.
pub(crate) const TCP_MAX_REORDERING: u32 = 300;

/// `FLAG_*` bits of one ACK's processing (`tcp_input.c`).
pub(crate) mod flag {
    /// Data was cumulatively ACKed (`FLAG_DATA_ACKED`, here also `FLAG_ACKED`).
    pub const DATA_ACKED: u32 = 1 << 0;
    /// `snd_una` advanced (`FLAG_SND_UNA_ADVANCED`; implies `FLAG_WIN_UPDATE`).
    pub const SND_UNA_ADVANCED: u32 = 1 << 1;
    /// New data was SACKed.
    pub const DATA_SACKED: u32 = 1 << 2;
    /// The ACK carried a valid D-SACK.
    pub const DSACKING_ACK: u32 = 1 << 3;
    /// The D-SACK covers the tail loss probe.
    pub const DSACK_TLP: u32 = 1 << 4;
    /// A retransmitted segment was cumulatively ACKed (Karn: no RTT from the ACK).
    pub const RETRANS_DATA_ACKED: u32 = 1 << 5;
    /// A never-retransmitted segment below `high_seq` was (S)ACKed.
    pub const ORIG_SACK_ACKED: u32 = 1 << 6;
    /// Re-arm the TLP/RTO timer after processing.
    pub const SET_XMIT_TIMER: u32 = 1 << 7;
    /// A retransmission was found lost.
    pub const LOST_RETRANS: u32 = 1 << 8;
    /// The ACK probably was a delayed ACK for a lone runt segment.
    pub const ACK_MAYBE_DELAYED: u32 = 1 << 9;

    /// `FLAG_NOT_DUP` (data, window update or ACKed).
    pub const NOT_DUP: u32 = DATA_ACKED | SND_UNA_ADVANCED;
    /// `FLAG_CA_ALERT` (no ECN here).
    pub const CA_ALERT: u32 = DATA_SACKED | DSACKING_ACK;
    /// `FLAG_FORWARD_PROGRESS`.
    pub const FORWARD_PROGRESS: u32 = DATA_ACKED | DATA_SACKED;
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
    pub(crate) rtt_min: WindowedMin,
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
    pub(crate) lsndtime: Time,
    // Timestamps: last TSval received (echoed), TSecr of the ACK being processed.
    pub(crate) ts_recent: u32,
    pub(crate) rcv_tsecr: u32,
    pub(crate) stats: SenderStats,
    pub(crate) events: Vec<Event>,
    gap_scratch: Vec<(u64, u64)>,
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
    pub fn new(
        flow: FlowId,
        cfg: &SenderConfig,
        cc: Box<dyn CongestionControl>,
        app: App,
        now: Time,
    ) -> Self {
        assert!(cfg.mss > 0 && cfg.hz > 0 && !cfg.ts_granularity.is_zero());
        let mut sock = Sock::new(cfg.mss, now);
        sock.hz = cfg.hz;
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
            rtt_min: WindowedMin::new(),
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
                data_segs_out: 0,
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
            lsndtime: now,
            ts_recent: 0,
            rcv_tsecr: 0,
            stats: SenderStats::default(),
            events: Vec::new(),
            gap_scratch: Vec::new(),
        };
        s.rto = s.ticks_ceil(cfg.rto_init).min(cfg.rto_max);
        s.cc.init(&mut s.sock);
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

    /// The connection state congestion controls see (cwnd, ssthresh, srtt, pacing rate…).
    pub fn sock(&self) -> &Sock {
        &self.sock
    }

    /// The congestion control (for `phase()` and `name()`).
    pub fn cc(&self) -> &dyn CongestionControl {
        self.cc.as_ref()
    }

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

    pub(crate) fn has_new_data(&self) -> bool {
        self.total_segs.is_none_or(|n| self.sock.snd_nxt < n)
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
        self.rcv_tsecr = ack.tsecr;
        self.ts_recent = ack.tsval;
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

    /// `tcp_sacktag_write_queue`: apply the ACK's SACK blocks to the scoreboard.
    fn sacktag(&mut self, ack: &AckSegment, st: &mut AckState) {
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
    fn clean_rtx_queue(&mut self, ack: u64, st: &mut AckState) {
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

    /// `tcp_update_rtt_min`.
    fn update_rtt_min(&mut self, rtt: Dur, f: u32) {
        let rtt_us = rtt.as_us();
        if f & flag::ACK_MAYBE_DELAYED != 0 && rtt_us > self.rtt_min.get() {
            // Delayed ACKs would make the filter overestimate once the minimum expires.
            return;
        }
        let tick_us = self.tick().as_us().max(1);
        let win = MIN_RTT_WLEN_S * self.cfg.hz as u64;
        let v = if rtt_us == 0 { tick_us } else { rtt_us };
        self.rtt_min.update(win, self.sock.jiffies(), v);
        self.sock.min_rtt = Dur::from_us(self.rtt_min.get());
    }

    /// `tcp_set_rto`: RTO = srtt + rttvar, rounded up to ticks, at most `rto_max`.
    fn set_rto(&mut self) {
        if let Some(us) = self.rtt.rto_us() {
            self.rto = self.ticks_ceil(Dur::from_us(us)).min(self.cfg.rto_max);
        }
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
