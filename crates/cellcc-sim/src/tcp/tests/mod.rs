//! Scenario tests: a sender and a receiver joined by an in-test loopback (a fixed-rate,
//! fixed-delay forward link with an optional drop-tail queue, a fixed-delay return path,
//! and loss rules), driven by a small deterministic event loop.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::{Arc, Mutex};

use cellcc_congestion::{CaEvent, CaState, CongestionControl, RateSample, Sock};
use cellcc_units::{Bandwidth, Dur, Time};

use super::*;
use crate::packet::{AckSegment, DataSegment};

// ----- test congestion controls ---------------------------------------------------------

/// Reno as in `tcp_cong.c`, recording the events it sees.
#[derive(Debug, Default)]
struct TestReno {
    events: Arc<Mutex<Vec<CaEvent>>>,
    cwnd_clamp: Option<u32>,
}

impl CongestionControl for TestReno {
    fn name(&self) -> &'static str {
        "test-reno"
    }
    fn init(&mut self, sock: &mut Sock) {
        if let Some(c) = self.cwnd_clamp {
            sock.cwnd_clamp = c;
        }
    }
    fn ssthresh(&mut self, sock: &Sock) -> u32 {
        (sock.cwnd >> 1).max(2)
    }
    fn cong_avoid(&mut self, sock: &mut Sock, acked: u32) {
        if !sock.is_cwnd_limited() {
            return;
        }
        let mut acked = acked;
        if sock.in_slow_start() {
            acked = sock.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        let w = sock.cwnd;
        sock.cong_avoid_ai(w, acked);
    }
    fn cwnd_event(&mut self, _sock: &mut Sock, event: CaEvent) {
        self.events.lock().unwrap().push(event);
    }
}

/// Owns cwnd at a fixed value and records every rate sample.
#[derive(Debug)]
struct FixedCwnd {
    cwnd: u32,
    samples: Arc<Mutex<Vec<(Time, RateSample)>>>,
}

impl CongestionControl for FixedCwnd {
    fn name(&self) -> &'static str {
        "fixed"
    }
    fn init(&mut self, sock: &mut Sock) {
        sock.cwnd = self.cwnd;
    }
    fn ssthresh(&mut self, sock: &Sock) -> u32 {
        sock.cwnd
    }
    fn owns_cwnd(&self) -> bool {
        true
    }
    fn cong_control(&mut self, sock: &mut Sock, rs: &RateSample) {
        sock.cwnd = self.cwnd;
        self.samples.lock().unwrap().push((sock.now, *rs));
    }
}

// ----- observer and loopback ------------------------------------------------------------

#[derive(Debug, Default)]
struct Recorder {
    rtts: Vec<(Time, Dur)>,
    retransmits: Vec<(Time, u64)>,
    states: Vec<(Time, CaState, CaState)>,
    rtos: Vec<Time>,
}

impl SenderObserver for Recorder {
    fn rtt_sample(&mut self, now: Time, rtt: Dur) {
        self.rtts.push((now, rtt));
    }
    fn retransmit(&mut self, now: Time, seq: u64) {
        self.retransmits.push((now, seq));
    }
    fn state_change(&mut self, now: Time, from: CaState, to: CaState) {
        self.states.push((now, from, to));
    }
    fn rto(&mut self, now: Time) {
        self.rtos.push(now);
    }
}

/// Sender state after an event.
#[derive(Clone, Copy, Debug)]
struct Snap {
    t: Time,
    cwnd: u32,
    ssthresh: u32,
    in_flight: u32,
    sacked_out: u32,
    snd_una: u64,
    state: CaState,
    srtt_us8: u64,
    rto: Dur,
}

/// A link: serialisation at `rate` (None: infinitely fast), then `delay`; drop-tail
/// when `limit` packets are waiting.
struct Link {
    rate: Option<Bandwidth>,
    delay: Dur,
    limit: Option<usize>,
    free_at: Time,
    departures: VecDeque<Time>,
    /// The link serves nothing in `[start, end)` (packets wait, none are lost).
    stall: Option<(Time, Time)>,
}

impl Link {
    fn new(rate: Option<Bandwidth>, delay: Dur, limit: Option<usize>) -> Self {
        Link {
            rate,
            delay,
            limit,
            free_at: Time::ZERO,
            departures: VecDeque::new(),
            stall: None,
        }
    }

    /// Arrival time at the far end, or None if the queue is full.
    fn send(&mut self, now: Time, bytes: u32) -> Option<Time> {
        while self.departures.front().is_some_and(|&d| d <= now) {
            self.departures.pop_front();
        }
        if self.limit.is_some_and(|l| self.departures.len() >= l) {
            return None;
        }
        let tx = self
            .rate
            .map_or(Dur::ZERO, |r| r.transmit_time(bytes as u64));
        let mut start = self.free_at.max(now);
        if let Some((s, e)) = self.stall {
            if start + tx > s && start < e {
                start = e;
            }
        }
        let dep = start + tx;
        self.free_at = dep;
        self.departures.push_back(dep);
        Some(dep + self.delay)
    }
}

enum Ev {
    Data(DataSegment),
    Ack(AckSegment),
    SenderWake,
    ReceiverWake,
}

struct Item {
    t: Time,
    n: u64,
    ev: Ev,
}
impl PartialEq for Item {
    fn eq(&self, o: &Self) -> bool {
        (self.t, self.n) == (o.t, o.n)
    }
}
impl Eq for Item {}
impl PartialOrd for Item {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Item {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.t, self.n).cmp(&(o.t, o.n))
    }
}

type DataRule = Box<dyn FnMut(Time, &DataSegment) -> bool>;
type AckRule = Box<dyn FnMut(Time, &AckSegment) -> bool>;

struct Net {
    now: Time,
    heap: BinaryHeap<Reverse<Item>>,
    n: u64,
    sender: TcpSender,
    receiver: TcpReceiver,
    fwd: Link,
    rev: Link,
    drop_data: DataRule,
    drop_ack: AckRule,
    sender_wake: Option<Time>,
    receiver_wake: Option<Time>,
    obs: Recorder,
    sent: Vec<(Time, u64, bool)>,
    trace: Vec<Snap>,
    delivered: u64,
    deliveries: Vec<(Time, u64)>,
}

impl Net {
    fn new(sender: TcpSender, rate: Bandwidth, one_way: Dur, limit: Option<usize>) -> Self {
        let mut net = Net {
            now: Time::ZERO,
            heap: BinaryHeap::new(),
            n: 0,
            sender,
            receiver: TcpReceiver::new(0, &ReceiverConfig::default(), Time::ZERO),
            fwd: Link::new(Some(rate), one_way, limit),
            rev: Link::new(None, one_way, None),
            drop_data: Box::new(|_, _| false),
            drop_ack: Box::new(|_, _| false),
            sender_wake: None,
            receiver_wake: None,
            obs: Recorder::default(),
            sent: Vec::new(),
            trace: Vec::new(),
            delivered: 0,
            deliveries: Vec::new(),
        };
        net.pump_sender();
        net
    }

    fn push(&mut self, t: Time, ev: Ev) {
        self.n += 1;
        self.heap.push(Reverse(Item { t, n: self.n, ev }));
    }

    fn snap(&mut self) {
        let s = self.sender.sock();
        self.trace.push(Snap {
            t: self.now,
            cwnd: s.cwnd,
            ssthresh: s.ssthresh,
            in_flight: s.packets_in_flight(),
            sacked_out: s.sacked_out,
            snd_una: s.snd_una,
            state: s.ca_state,
            srtt_us8: self.sender.rtt_estimator().srtt_us8(),
            rto: self.sender.rto(),
        });
    }

    fn pump_sender(&mut self) {
        while let Some(seg) = self.sender.poll_transmit(self.now, &mut self.obs) {
            self.sent.push((self.now, seg.seq, seg.retransmit));
            if (self.drop_data)(self.now, &seg) {
                continue;
            }
            if let Some(at) = self.fwd.send(self.now, seg.ip_len()) {
                self.push(at, Ev::Data(seg));
            }
        }
        if let Some(w) = self.sender.next_wakeup() {
            if self.sender_wake != Some(w) {
                self.sender_wake = Some(w);
                self.push(w, Ev::SenderWake);
            }
        }
    }

    fn send_ack(&mut self, ack: AckSegment) {
        if (self.drop_ack)(self.now, &ack) {
            return;
        }
        if let Some(at) = self.rev.send(self.now, ack.ip_len()) {
            self.push(at, Ev::Ack(ack));
        }
    }

    fn schedule_receiver(&mut self) {
        if let Some(w) = self.receiver.next_wakeup() {
            if self.receiver_wake != Some(w) {
                self.receiver_wake = Some(w);
                self.push(w, Ev::ReceiverWake);
            }
        }
    }

    /// Process one event; false when none is left.
    fn step(&mut self) -> bool {
        let Some(Reverse(item)) = self.heap.pop() else {
            return false;
        };
        assert!(item.t >= self.now, "time went backwards");
        self.now = item.t;
        match item.ev {
            Ev::Data(seg) => {
                let out = self.receiver.on_data(self.now, &seg);
                if out.delivered_bytes > 0 {
                    self.delivered += out.delivered_bytes;
                    self.deliveries.push((self.now, out.delivered_bytes));
                }
                if let Some(a) = out.ack {
                    self.send_ack(a);
                }
                self.schedule_receiver();
            }
            Ev::Ack(a) => {
                self.sender.on_ack(self.now, &a, &mut self.obs);
                self.snap();
                self.pump_sender();
            }
            Ev::SenderWake => {
                if self.sender_wake == Some(self.now) {
                    self.sender_wake = None;
                    self.sender.on_timer(self.now, &mut self.obs);
                    self.snap();
                    self.pump_sender();
                }
            }
            Ev::ReceiverWake => {
                if self.receiver_wake == Some(self.now) {
                    self.receiver_wake = None;
                    if let Some(a) = self.receiver.on_timer(self.now) {
                        self.send_ack(a);
                    }
                    self.schedule_receiver();
                }
            }
        }
        true
    }

    fn run_until(&mut self, t: Time) {
        while self.heap.peek().is_some_and(|Reverse(i)| i.t <= t) {
            self.step();
        }
        self.now = self.now.max(t);
    }

    /// Run until the finite flow completes; returns the completion time.
    fn run_to_completion(&mut self, limit: Time) -> Time {
        while !self.sender.is_complete() {
            assert!(self.now <= limit, "flow did not complete by {limit}");
            assert!(self.step(), "no events left but the flow is not complete");
        }
        self.now
    }

    /// The first change of congestion state into `state`: (time, from, to).
    fn entered(&self, state: CaState) -> (Time, CaState, CaState) {
        let first = self.obs.states.iter().find(|s| s.2 == state);
        *first.unwrap_or_else(|| panic!("never entered {state:?}"))
    }

    /// The first change of congestion state out of `state`: (time, from, to).
    fn left(&self, state: CaState) -> (Time, CaState, CaState) {
        let first = self.obs.states.iter().find(|s| s.1 == state);
        *first.unwrap_or_else(|| panic!("never left {state:?}"))
    }

    fn snap_at(&self, t: Time) -> Snap {
        *self
            .trace
            .iter()
            .rev()
            .find(|s| s.t <= t)
            .expect("no snapshot before t")
    }
}

fn reno_sender(cfg: &SenderConfig, app: App) -> (TcpSender, Arc<Mutex<Vec<CaEvent>>>) {
    let cc = TestReno::default();
    let events = cc.events.clone();
    (
        TcpSender::new(0, cfg, Box::new(cc), app, Time::ZERO),
        events,
    )
}

/// A sender of `app` with `cc` and the default configuration, starting at 0.
fn sender_with(cc: impl CongestionControl + 'static, app: App) -> TcpSender {
    TcpSender::new(0, &SenderConfig::default(), Box::new(cc), app, Time::ZERO)
}

/// Reno with cwnd clamped at 20 (below the 33-packet BDP), bulk, over 10 Mbit/s with
/// 20 ms each way and a deep queue.
fn clamped_reno_net() -> Net {
    let cc = TestReno {
        cwnd_clamp: Some(20),
        ..TestReno::default()
    };
    let sender = sender_with(cc, App::Bulk);
    Net::new(sender, Bandwidth::from_mbps(10.0), Dur::from_ms(20), None)
}

fn ms(x: u64) -> Time {
    Time::from_ms(x)
}

mod delivery;
mod handshake;
mod receiver;
mod sender;
