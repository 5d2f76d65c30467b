//! Connection set-up: the three-way handshake as Linux 6.x runs it, for `[tcp] handshake`.
//!
//! The connecting side ([`Connector`], `SYN_SENT`: `tcp_connect`, `tcp_retransmit_timer`,
//! `tcp_rcv_synsent_state_process`) sends a SYN and retransmits it on a timer; the
//! listening side ([`Acceptor`], the request socket: `tcp_conn_request`,
//! `inet_rtx_syn_ack`, `reqsk_timer_handler`, `tcp_check_req`) answers with a SYN-ACK and
//! retransmits that on its own timer and on every retransmitted SYN. The first SYN-ACK
//! to arrive establishes the connecting side, which answers with a pure ACK and only
//! then starts its [`super::TcpSender`] (`tcp_init_transfer`): the SYN-ACK's RTT seeds
//! srtt, rttvar, the RTO and min_rtt before the congestion control's `init`, and a SYN
//! sent more than twice starts the flow at cwnd 1. The first non-SYN segment of the
//! connecting side establishes the listening side.
//!
//! Why it matters: on a cellular trace the handshake's packets share the link with the
//! flow's first data. The uplink's first delivery opportunity may come a second in (the
//! SYN-ACK then waits for it and the SYN is sent again), the handshake's ACKs take bytes
//! of the downlink opportunity the first data segment would have used, and the RTT the
//! SYN-ACK measured becomes the first srtt. `docs/tcp-model.md` has the measured effect.
//!
//! Sequence numbers: the SYN and the SYN-ACK do not consume segment numbers here (the
//! data starts at segment 0 on both sides); the handshake's own segments are told apart
//! by their flags ([`DataSegment::syn`], [`AckSegment::syn`]) and by carrying no payload.
//!
//! Timers (Linux 6.5+ defaults):
//! - SYN: `TCP_TIMEOUT_INIT` (1 s); the first `tcp_syn_linear_timeouts` (4)
//!   retransmissions keep it, later ones double it, up to `TCP_RTO_MAX`; after
//!   `tcp_syn_retries` (6) retransmissions the next expiry abandons the connection.
//! - SYN-ACK: 1 s doubled on every expiry (`reqsk_timeout`), `tcp_synack_retries` (5)
//!   retransmissions; a retransmitted SYN also triggers one (at most one per
//!   `tcp_invalid_ratelimit`, 500 ms) and restarts the timer.
//! - A SYN-ACK reaching an established connecting side gets a challenge ACK (RFC 5961
//!   §4), at most one per 500 ms.

use cellcc_units::{Dur, Time};

use crate::packet::{AckSegment, DataSegment, FlowId, SackBlock, MAX_SACK_BLOCKS};

/// `TCP_TIMEOUT_INIT`: the first SYN and SYN-ACK timeout.
pub const TIMEOUT_INIT: Dur = Dur::from_secs(1);
/// `tcp_syn_retries`.
pub const SYN_RETRIES: u32 = 6;
/// `tcp_syn_linear_timeouts` (Linux 6.5+): SYN retransmissions before the backoff doubles.
pub const SYN_LINEAR_TIMEOUTS: u32 = 4;
/// `tcp_synack_retries`.
pub const SYNACK_RETRIES: u32 = 5;
/// `tcp_invalid_ratelimit`: the least time between two answers to out-of-window segments
/// (`tcp_oow_rate_limited`), here a retransmitted SYN or a stray SYN-ACK.
pub const INVALID_RATELIMIT: Dur = Dur::from_ms(500);
/// The window field of a SYN-ACK is never scaled (RFC 7323 §2.2).
pub const SYN_WINDOW_MAX: u64 = 65_535;

/// `tcp_oow_rate_limited`: allow an answer now unless one went out less than
/// [`INVALID_RATELIMIT`] ago, and remember it.
fn oow_allowed(last: &mut Option<Time>, now: Time) -> bool {
    if last.is_some_and(|t| now.saturating_since(t) < INVALID_RATELIMIT) {
        return false;
    }
    *last = Some(now);
    true
}

/// The TCP timestamp clock at `now` (`tcp_time_stamp_ts`), in ticks of `granularity`.
fn ts_at(now: Time, granularity: Dur) -> u32 {
    (now.as_ns() / granularity.as_ns()) as u32 // the TS clock wraps: truncation intended
}

/// What the connecting side learnt when the first SYN-ACK arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Established {
    /// The handshake's RTT sample: from the SYN's send time if it was sent once, else
    /// from the SYN-ACK's timestamp echo (Karn's rule, `tcp_ack_update_rtt`).
    pub rtt: Dur,
    /// SYN retransmissions (`total_retrans` at `tcp_init_transfer`).
    pub syn_retransmits: u32,
    /// The SYN-ACK's (unscaled) window, bytes: the first `snd_wnd`.
    pub snd_wnd: u64,
    /// The SYN-ACK's TSval: the first `ts_recent`, echoed by the first data segments.
    pub ts_recent: u32,
}

/// The connecting side before and after the SYN-ACK (`SYN_SENT`).
#[derive(Clone, Debug)]
pub struct Connector {
    flow: FlowId,
    ts_granularity: Dur,
    /// When the first SYN was sent.
    first_sent: Option<Time>,
    syn_due: bool,
    retransmits: u32,
    rto: Dur,
    rto_max: Dur,
    timer: Option<Time>,
    established: bool,
    failed: bool,
    ts_recent: u32,
    /// Pure ACKs to send (the handshake's third segment, challenge ACKs).
    acks_due: u32,
    last_oow: Option<Time>,
}

impl Connector {
    /// A connecting side whose SYN is due now; `rto_max` bounds the SYN backoff.
    pub fn new(flow: FlowId, ts_granularity: Dur, rto_max: Dur) -> Self {
        assert!(!ts_granularity.is_zero());
        Connector {
            flow,
            ts_granularity,
            first_sent: None,
            syn_due: true,
            retransmits: 0,
            rto: TIMEOUT_INIT,
            rto_max,
            timer: None,
            established: false,
            failed: false,
            ts_recent: 0,
            acks_due: 0,
            last_oow: None,
        }
    }

    /// Whether the SYN-ACK has arrived.
    pub fn is_established(&self) -> bool {
        self.established
    }

    /// Whether the connection was abandoned (`tcp_syn_retries` exhausted).
    pub fn has_failed(&self) -> bool {
        self.failed
    }

    /// SYN retransmissions so far.
    pub fn syn_retransmits(&self) -> u32 {
        self.retransmits
    }

    /// The next handshake segment to send now (a SYN or a pure ACK), if any.
    pub fn poll_transmit(&mut self, now: Time) -> Option<DataSegment> {
        let ts = ts_at(now, self.ts_granularity);
        if self.syn_due {
            self.syn_due = false;
            self.first_sent.get_or_insert(now);
            self.timer = Some(now + self.rto);
            return Some(DataSegment {
                flow: self.flow,
                seq: 0,
                len: 0,
                tsval: ts,
                tsecr: 0,
                sent_at: now,
                retransmit: self.retransmits > 0,
                syn: true,
            });
        }
        if self.acks_due > 0 {
            self.acks_due -= 1;
            return Some(DataSegment {
                flow: self.flow,
                seq: 0,
                len: 0,
                tsval: ts,
                tsecr: self.ts_recent,
                sent_at: now,
                retransmit: false,
                syn: false,
            });
        }
        None
    }

    /// When the SYN timer expires, if it is armed.
    pub fn next_wakeup(&self) -> Option<Time> {
        self.timer
    }

    /// The SYN timer (`tcp_retransmit_timer` in `SYN_SENT`): send the SYN again, or give
    /// up after [`SYN_RETRIES`] retransmissions.
    pub fn on_timer(&mut self, now: Time) {
        if self.timer.is_none_or(|t| t > now) {
            return;
        }
        self.timer = None;
        if self.retransmits >= SYN_RETRIES {
            self.failed = true;
            return;
        }
        self.retransmits += 1;
        if self.retransmits > SYN_LINEAR_TIMEOUTS {
            self.rto = (self.rto * 2).min(self.rto_max);
        }
        self.syn_due = true;
    }

    /// A SYN-ACK arrived. The first establishes the connection (the pure ACK answering it
    /// is then due) and returns what the sender starts from; a later one is answered by
    /// a challenge ACK unless one went out in the last 500 ms.
    pub fn on_syn_ack(&mut self, now: Time, ack: &AckSegment) -> Option<Established> {
        debug_assert!(ack.syn);
        if self.established || self.failed {
            if self.established && oow_allowed(&mut self.last_oow, now) {
                self.acks_due += 1;
            }
            return None;
        }
        self.established = true;
        self.timer = None;
        self.syn_due = false;
        self.ts_recent = ack.tsval;
        self.acks_due += 1;
        let first = self
            .first_sent
            .expect("a SYN-ACK answers a SYN that was sent");
        let rtt = if self.retransmits == 0 {
            now.saturating_since(first)
        } else {
            // Karn: the SYN was sent more than once, so time the TSecr (RFC 7323 §4).
            let ticks = ts_at(now, self.ts_granularity)
                .wrapping_sub(ack.tsecr)
                .max(1);
            self.ts_granularity * u64::from(ticks)
        };
        Some(Established {
            rtt,
            syn_retransmits: self.retransmits,
            snd_wnd: u64::from(ack.wnd),
            ts_recent: ack.tsval,
        })
    }
}

/// The listening side's request socket (`SYN_RECV`) until the connection is established.
#[derive(Clone, Debug)]
pub struct Acceptor {
    flow: FlowId,
    ts_granularity: Dur,
    /// TSval of the first SYN, echoed by every SYN-ACK (`req->ts_recent`).
    ts_recent: Option<u32>,
    timer: Option<Time>,
    num_timeout: u32,
    synacks_due: u32,
    last_oow: Option<Time>,
    established: bool,
}

impl Acceptor {
    /// A listening side that has seen no SYN yet.
    pub fn new(flow: FlowId, ts_granularity: Dur) -> Self {
        assert!(!ts_granularity.is_zero());
        Acceptor {
            flow,
            ts_granularity,
            ts_recent: None,
            timer: None,
            num_timeout: 0,
            synacks_due: 0,
            last_oow: None,
            established: false,
        }
    }

    /// Whether the connecting side's first non-SYN segment has arrived.
    pub fn is_established(&self) -> bool {
        self.established
    }

    /// `reqsk_timeout`: the SYN-ACK timeout after `num_timeout` expiries.
    fn timeout(&self) -> Dur {
        (TIMEOUT_INIT * (1u64 << self.num_timeout.min(16))).min(Dur::from_secs(120))
    }

    /// A SYN arrived. The first creates the request (a SYN-ACK is due, the timer starts);
    /// a retransmitted one gets the SYN-ACK again, rate-limited, and restarts the timer.
    pub fn on_syn(&mut self, now: Time, seg: &DataSegment) {
        debug_assert!(seg.syn);
        if self.established {
            // On FIFO paths a SYN cannot overtake the ACK that established us.
            return;
        }
        match self.ts_recent {
            None => {
                self.ts_recent = Some(seg.tsval);
                self.num_timeout = 0;
                self.synacks_due += 1;
                self.timer = Some(now + self.timeout());
            }
            Some(_) => {
                if oow_allowed(&mut self.last_oow, now) {
                    self.synacks_due += 1;
                    self.timer = Some(now + self.timeout());
                }
            }
        }
    }

    /// A segment other than a SYN arrived from the connecting side: the handshake's ACK,
    /// or data when that ACK was lost. Returns true if this established the connection.
    pub fn on_segment(&mut self) -> bool {
        if self.established || self.ts_recent.is_none() {
            return false;
        }
        self.established = true;
        self.timer = None;
        self.synacks_due = 0;
        true
    }

    /// When the SYN-ACK timer expires, if it is armed.
    pub fn next_wakeup(&self) -> Option<Time> {
        self.timer
    }

    /// The SYN-ACK timer (`reqsk_timer_handler`): send it again with a doubled timeout,
    /// or drop the request after [`SYNACK_RETRIES`] retransmissions.
    pub fn on_timer(&mut self, now: Time) {
        if self.established || self.timer.is_none_or(|t| t > now) {
            return;
        }
        self.timer = None;
        if self.num_timeout >= SYNACK_RETRIES {
            // The request is dropped; a later SYN starts a new one.
            self.ts_recent = None;
            return;
        }
        self.num_timeout += 1;
        self.synacks_due += 1;
        self.timer = Some(now + self.timeout());
    }

    /// The next SYN-ACK to send now, if one is due; `rcv_wnd` is the listening side's
    /// initial receive window (advertised unscaled, so at most 65 535 bytes).
    pub fn poll_syn_ack(&mut self, now: Time, rcv_wnd: u64) -> Option<AckSegment> {
        if self.synacks_due == 0 {
            return None;
        }
        self.synacks_due -= 1;
        Some(AckSegment {
            flow: self.flow,
            ack: 0,
            sack: [SackBlock::default(); MAX_SACK_BLOCKS],
            sack_len: 0,
            dsack: false,
            tsval: ts_at(now, self.ts_granularity),
            tsecr: self.ts_recent.unwrap_or(0),
            sent_at: now,
            wnd: rcv_wnd.min(SYN_WINDOW_MAX) as u32,
            feedback: None,
            syn: true,
        })
    }
}
