//! A tiny deterministic network for driving BBR in tests.
//!
//! One bulk flow (always backlogged) over a fixed-rate FIFO bottleneck:
//!
//! ```text
//! sender --(policer?)--> [drop-tail queue] --rate--> ... rtt - tx ... --> ACK at sender
//! ```
//!
//! Every packet is acked individually, at `departure from the bottleneck + rtt - tx`,
//! so an unqueued packet sees exactly `rtt`. The sender side reproduces what Linux does
//! around a congestion control that owns cwnd:
//!
//! * EDT pacing at `sock.pacing_rate`, sending while `packets_in_flight < cwnd`;
//! * `tcp_rate.c` delivery-rate samples (per-packet `delivered`, `delivered_mstamp`,
//!   `first_tx_mstamp`, app-limited marks; `interval = max(send, ack interval)`,
//!   invalid below `min_rtt`);
//! * RACK-like loss detection with no reordering window (a packet is lost when a later
//!   one is acked), fast recovery entry/exit calling `ssthresh` and `set_state`, and an
//!   RTO when everything in flight was dropped.
//!
//! Simplifications (irrelevant to what the tests check): lost packets are not
//! retransmitted (the receiver does not need the data), headers are not counted on the
//! wire, the first ten packets are paced like the rest, and the RTT estimator is a plain
//! 1/8 EWMA with an all-time minimum.

use std::collections::VecDeque;

use crate::bbr::{Bbr, BbrConfig, Mode};
use crate::{Bandwidth, CaEvent, CaState, CongestionControl, Dur, RateSample, Sock, Time};

pub(super) const MSS: u32 = 1448;

/// A token-bucket policer in front of the bottleneck.
#[derive(Clone, Copy, Debug)]
pub(super) struct Policer {
    pub rate: Bandwidth,
    pub bucket_bytes: u64,
}

/// The path.
#[derive(Clone, Copy, Debug)]
pub(super) struct Path {
    pub rate: Bandwidth,
    /// RTT of a packet that finds the queue empty (propagation + its own serialisation).
    pub rtt: Dur,
    /// Drop-tail limit: packets waiting (not counting the one being sent).
    pub queue_packets: u32,
    pub policer: Option<Policer>,
}

impl Path {
    /// 10 Mbit/s, 40 ms, a queue of 2 BDP (BDP = 34.5 packets of 1448 B).
    pub(super) fn ten_mbps_40ms() -> Self {
        Path {
            rate: Bandwidth::from_bps(10_000_000),
            rtt: Dur::from_ms(40),
            queue_packets: 70,
            policer: None,
        }
    }
}

/// What the controller looked like after one ACK.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Step {
    pub t: Time,
    pub mode: Mode,
    pub round: u32,
    pub round_start: bool,
    pub cwnd: u32,
    pub pacing_rate: u64,
    pub pacing_gain: u32,
    pub cwnd_gain: u32,
    pub max_bw: u32,
    pub bw: u32,
    pub min_rtt_us: u32,
    pub min_rtt_stamp: u64,
    pub full_bw: u32,
    pub full_bw_cnt: u32,
    pub full_bw_reached: bool,
    pub lt_use_bw: bool,
    pub extra_acked: u32,
    /// `tcp_packets_in_flight` when `cong_control` ran.
    pub in_flight: u32,
    pub prior_in_flight: u32,
    pub rtt: Dur,
    pub losses: u32,
    pub ca_state: CaState,
    pub app_limited: u64,
    pub ssthresh: u32,
}

#[derive(Clone, Debug)]
struct Packet {
    seq: u64,
    sent: Time,
    /// When the ACK reaches the sender; `None` if the network dropped the packet.
    ack_at: Option<Time>,
    /// `tcp_rate_skb_sent` snapshot.
    delivered: u64,
    delivered_mstamp: Time,
    first_tx_mstamp: Time,
    is_app_limited: bool,
}

/// The flow, its path and the log of every ACK.
pub(super) struct Pipe {
    pub sock: Sock,
    pub bbr: Bbr,
    pub path: Path,
    pub log: Vec<Step>,
    pub sent: u64,
    pub rtos: u32,
    flight: VecDeque<Packet>,
    /// Earliest departure time of the next packet (`tcp_wstamp_ns`).
    next_tx: Time,
    /// When the bottleneck finishes its current packet.
    link_free_at: Time,
    /// Policer tokens in bit·ns (bits × 10^9), and when they were last topped up.
    tokens: u128,
    tokens_at: Time,
    first_tx_mstamp: Time,
    /// Recovery ends once everything sent before it started has left the flight.
    high_seq: u64,
}

impl Pipe {
    pub(super) fn new(path: Path, config: BbrConfig) -> Self {
        let mut sock = Sock::new(MSS, Time::ZERO);
        let mut bbr = Bbr::new(config);
        bbr.init(&mut sock);
        let tokens = path
            .policer
            .map_or(0, |p| u128::from(p.bucket_bytes) * 8 * 1_000_000_000);
        Pipe {
            sock,
            bbr,
            path,
            log: Vec::new(),
            sent: 0,
            rtos: 0,
            flight: VecDeque::new(),
            next_tx: Time::ZERO,
            link_free_at: Time::ZERO,
            tokens,
            tokens_at: Time::ZERO,
            first_tx_mstamp: Time::ZERO,
            high_seq: 0,
        }
    }

    fn tx_time(&self) -> Dur {
        self.path.rate.transmit_time(u64::from(MSS))
    }

    /// The earliest pending ACK (ACKs return in send order among delivered packets).
    fn next_ack(&self) -> Option<Time> {
        self.flight.iter().find_map(|p| p.ack_at)
    }

    /// When the sender may transmit next, if cwnd allows.
    fn next_send(&self) -> Option<Time> {
        (self.sock.packets_in_flight() < self.sock.cwnd).then(|| self.next_tx.max(self.sock.now))
    }

    /// Retransmission timeout when nothing in flight can be acked any more.
    fn next_rto(&self) -> Option<Time> {
        if self.flight.is_empty() || self.next_ack().is_some() {
            return None;
        }
        let last_sent = self.flight.back().map_or(self.sock.now, |p| p.sent);
        Some(last_sent + Dur::from_ms(200).max(self.sock.srtt * 2))
    }

    /// Run the flow until `end`.
    pub(super) fn run_until(&mut self, end: Time) {
        loop {
            let ack = self.next_ack();
            let send = self.next_send();
            let rto = self.next_rto();
            let next = [ack, send, rto].into_iter().flatten().min();
            let Some(t) = next.filter(|&t| t <= end) else {
                self.sock.now = end;
                return;
            };
            self.sock.now = t;
            if ack == Some(t) {
                self.on_ack();
            } else if send == Some(t) {
                self.on_send();
            } else {
                self.on_rto();
            }
        }
    }

    /// Does the network drop a packet sent now? Updates the policer and the queue.
    fn admit(&mut self, now: Time) -> Option<Time> {
        if let Some(p) = self.path.policer {
            let cap = u128::from(p.bucket_bytes) * 8 * 1_000_000_000;
            let dt = u128::from(now.saturating_since(self.tokens_at).as_ns());
            self.tokens = (self.tokens + dt * u128::from(p.rate.bits_per_sec)).min(cap);
            self.tokens_at = now;
            let cost = u128::from(MSS) * 8 * 1_000_000_000;
            if self.tokens < cost {
                return None;
            }
            self.tokens -= cost;
        }
        let tx = self.tx_time();
        let backlog = self
            .link_free_at
            .saturating_since(now)
            .as_ns()
            .div_ceil(tx.as_ns());
        if backlog > u64::from(self.path.queue_packets) {
            return None; // the waiting room is full (one packet is in service)
        }
        let depart = self.link_free_at.max(now) + tx;
        self.link_free_at = depart;
        // The rest of the round trip after serialisation; none when a packet's
        // serialisation alone exceeds the base RTT (slow links with short paths).
        Some(depart + self.path.rtt.saturating_sub(tx))
    }

    fn on_send(&mut self) {
        let now = self.sock.now;
        if self.sock.packets_out == 0 {
            // tcp_rate_skb_sent: a new flight starts the sampling clocks.
            self.first_tx_mstamp = now;
            self.sock.delivered_mstamp = now;
            self.bbr.cwnd_event(&mut self.sock, CaEvent::TxStart);
        }
        let ack_at = self.admit(now);
        self.flight.push_back(Packet {
            seq: self.sock.snd_nxt,
            sent: now,
            ack_at,
            delivered: self.sock.delivered,
            delivered_mstamp: self.sock.delivered_mstamp,
            first_tx_mstamp: self.first_tx_mstamp,
            is_app_limited: self.sock.app_limited != 0,
        });
        self.sent += 1;
        self.sock.snd_nxt += 1;
        self.sock.packets_out += 1;
        // EDT pacing: the next packet may leave one packet-time at the pacing rate later.
        let rate = self.sock.pacing_rate.max(1);
        let len_ns = u64::from(MSS) * 1_000_000_000 / rate;
        self.next_tx = self.next_tx.max(now) + Dur::from_ns(len_ns);
    }

    fn on_ack(&mut self) {
        let now = self.sock.now;
        let prior_in_flight = self.sock.packets_in_flight();

        // Packets sent before the acked one and never delivered are lost.
        let mut losses = 0u32;
        while self.flight.front().is_some_and(|p| p.ack_at.is_none()) {
            self.flight.pop_front();
            losses += 1;
        }
        let pkt = self.flight.pop_front().expect("an ACK is pending");
        debug_assert_eq!(pkt.ack_at, Some(now));
        self.sock.lost += u64::from(losses);
        self.sock.delivered += 1;
        self.sock.packets_out = self.flight.len() as u32;
        self.sock.snd_una = self.flight.front().map_or(self.sock.snd_nxt, |p| p.seq);

        // RTT estimator.
        let rtt = now - pkt.sent;
        self.sock.srtt = if self.sock.srtt.is_zero() {
            rtt
        } else {
            Dur::from_ns((self.sock.srtt.as_ns() * 7 + rtt.as_ns()) / 8)
        };
        self.sock.min_rtt = self.sock.min_rtt.min(rtt);

        // Loss recovery state machine.
        if losses > 0 && self.sock.ca_state == CaState::Open {
            self.sock.prior_cwnd = self.sock.cwnd;
            self.sock.ssthresh = self.bbr.ssthresh(&self.sock);
            self.bbr.set_state(&mut self.sock, CaState::Recovery);
            self.sock.ca_state = CaState::Recovery;
            self.high_seq = self.sock.snd_nxt;
        } else if self.sock.ca_state != CaState::Open && self.sock.snd_una >= self.high_seq {
            self.bbr.set_state(&mut self.sock, CaState::Open);
            self.sock.ca_state = CaState::Open;
            self.bbr.cwnd_event(&mut self.sock, CaEvent::CompleteCwr);
        }

        // tcp_rate_gen.
        if self.sock.app_limited != 0 && self.sock.delivered > self.sock.app_limited {
            self.sock.app_limited = 0;
        }
        self.sock.delivered_mstamp = now;
        self.first_tx_mstamp = pkt.sent;
        let snd_interval = pkt.sent - pkt.first_tx_mstamp;
        let rcv_interval = now - pkt.delivered_mstamp;
        let interval = snd_interval.max(rcv_interval);
        let valid = interval.as_us() >= self.sock.min_rtt.as_us();
        let rs = RateSample {
            prior_mstamp: pkt.delivered_mstamp,
            prior_delivered: pkt.delivered,
            delivered: self.sock.delivered - pkt.delivered,
            interval: valid.then_some(interval),
            snd_interval,
            rcv_interval,
            rtt: Some(rtt),
            losses,
            acked_sacked: 1,
            prior_in_flight,
            is_app_limited: pkt.is_app_limited,
            is_retrans: false,
            is_ack_delayed: false,
        };

        let in_flight = self.sock.packets_in_flight();
        self.bbr.cong_control(&mut self.sock, &rs);
        self.record(rtt, losses, prior_in_flight, in_flight);
    }

    fn on_rto(&mut self) {
        // Everything in flight was dropped: RTO, enter Loss.
        self.rtos += 1;
        let lost = self.flight.len() as u64;
        self.flight.clear();
        self.sock.lost += lost;
        self.sock.packets_out = 0;
        self.sock.snd_una = self.sock.snd_nxt;
        self.sock.prior_cwnd = self.sock.cwnd;
        self.sock.ssthresh = self.bbr.ssthresh(&self.sock);
        self.bbr.set_state(&mut self.sock, CaState::Loss);
        self.sock.ca_state = CaState::Loss;
        self.bbr.cwnd_event(&mut self.sock, CaEvent::Loss);
        self.sock.cwnd = 1;
        self.high_seq = self.sock.snd_nxt;
    }

    fn record(&mut self, rtt: Dur, losses: u32, prior_in_flight: u32, in_flight: u32) {
        let b = &self.bbr;
        self.log.push(Step {
            t: self.sock.now,
            mode: b.mode,
            round: b.rtt_cnt,
            round_start: b.round_start,
            cwnd: self.sock.cwnd,
            pacing_rate: self.sock.pacing_rate,
            pacing_gain: b.pacing_gain,
            cwnd_gain: b.cwnd_gain,
            max_bw: b.max_bw(),
            bw: b.bw(),
            min_rtt_us: b.min_rtt_us,
            min_rtt_stamp: b.min_rtt_stamp,
            full_bw: b.full_bw,
            full_bw_cnt: b.full_bw_cnt,
            full_bw_reached: b.full_bw_reached,
            lt_use_bw: b.lt.use_bw,
            extra_acked: b.ack_aggr.extra_acked(),
            in_flight,
            prior_in_flight,
            rtt,
            losses,
            ca_state: self.sock.ca_state,
            app_limited: self.sock.app_limited,
            ssthresh: self.sock.ssthresh,
        });
    }

    /// Packets delivered per second over the last `window`, from the log.
    pub(super) fn goodput_bps(&self, window: Dur) -> u64 {
        let end = self.sock.now;
        let start = Time::from_ns(end.as_ns().saturating_sub(window.as_ns()));
        let n = self.log.iter().filter(|s| s.t > start).count() as u64;
        n * u64::from(MSS) * 8 * 1_000_000_000 / window.as_ns()
    }

    /// With `CELLCC_TRACE_DIR` set, write the log as `<dir>/<name>.csv` for plotting.
    pub(super) fn maybe_write_trace(&self, name: &str) {
        let Some(dir) = std::env::var_os("CELLCC_TRACE_DIR") else {
            return;
        };
        let mut out = String::from(
            "t_s,mode,round,cwnd,pacing_rate,pacing_gain,max_bw,bw,min_rtt_us,in_flight,rtt_ms,losses\n",
        );
        for s in &self.log {
            out += &format!(
                "{:.6},{},{},{},{},{},{},{},{},{},{:.3},{}\n",
                s.t.as_secs_f64(),
                s.mode.name(),
                s.round,
                s.cwnd,
                s.pacing_rate,
                s.pacing_gain,
                s.max_bw,
                s.bw,
                s.min_rtt_us,
                s.in_flight,
                s.rtt.as_ms_f64(),
                s.losses
            );
        }
        let path = std::path::Path::new(&dir).join(format!("{name}.csv"));
        std::fs::write(&path, out).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    }
}
