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
    fn cong_avoid(&mut self, _sock: &mut Sock, _acked: u32) {}
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

fn ms(x: u64) -> Time {
    Time::from_ms(x)
}

// ----- (1) slow start ---------------------------------------------------------------------

#[test]
fn slow_start_doubles_cwnd_each_round_trip_with_delayed_acks() {
    // 100 Mbit/s, 40 ms RTT: BDP ≈ 333 packets, so the first rounds never queue.
    let (sender, _) = reno_sender(&SenderConfig::default(), App::Bulk);
    let mut net = Net::new(sender, Bandwidth::from_mbps(100.0), Dur::from_ms(20), None);
    // Round k is sent around 40k ms and ACKed around 40(k+1) ms.
    for (k, cwnd) in [10, 20, 40, 80, 160].into_iter().enumerate() {
        net.run_until(ms(20 + 40 * k as u64));
        assert_eq!(net.sender.sock().cwnd, cwnd, "cwnd after {k} round trips");
    }
    // By 155 ms the receiver got rounds 0..3 = 150 segments: 16 quick ACKs, then one
    // ACK per two segments.
    let mut net2 = {
        let (sender, _) = reno_sender(&SenderConfig::default(), App::Bulk);
        Net::new(sender, Bandwidth::from_mbps(100.0), Dur::from_ms(20), None)
    };
    net2.run_until(ms(155));
    assert_eq!(net2.receiver.stats().segments_received, 150);
    assert_eq!(net2.receiver.stats().acks_sent, 16 + (150 - 16) / 2);
    assert_eq!(net2.receiver.stats().delayed_acks, 0);
    assert_eq!(net2.sender.stats().retransmissions, 0);
}

// ----- (2) one lost segment: fast retransmit, PRR, exit at high_seq -----------------------

fn single_loss(rack: bool) {
    let cfg = SenderConfig {
        rack,
        ..SenderConfig::default()
    };
    let (sender, events) = reno_sender(&cfg, App::Bulk);
    // 10 Mbit/s (1.2 ms per packet), 40 ms RTT, deep queue: the loss hits slow start.
    let mut net = Net::new(sender, Bandwidth::from_mbps(10.0), Dur::from_ms(20), None);
    let mut dropped = false;
    net.drop_data = Box::new(move |_, seg| {
        if seg.seq == 60 && !dropped {
            dropped = true;
            return true;
        }
        false
    });
    net.run_until(ms(1500));
    let st = net.sender.stats().clone();
    assert_eq!(st.fast_recoveries, 1);
    assert_eq!(st.retransmissions, 1);
    assert_eq!((st.rtos, st.tlps), (0, 0));
    assert_eq!(net.obs.retransmits.len(), 1);
    let (t_rexmit, seq) = net.obs.retransmits[0];
    assert_eq!(seq, 60);

    // Fast retransmit on the ACK that brought the third SACKed segment (dupthresh), which
    // also entered Recovery.
    let entry = net
        .obs
        .states
        .iter()
        .find(|s| s.2 == CaState::Recovery)
        .expect("entered Recovery");
    assert_eq!(entry.0, t_rexmit);
    let before = *net.trace.iter().rev().find(|s| s.t < entry.0).unwrap();
    let at_entry = net.snap_at(entry.0);
    assert_eq!(at_entry.sacked_out, 3, "dupthresh: 3 segments SACKed");
    assert_eq!(
        at_entry.ssthresh,
        (before.cwnd / 2).max(2),
        "Reno halves cwnd"
    );
    let ssthresh = at_entry.ssthresh;

    // Exit when snd_una passes high_seq: cwnd = ssthresh and CompleteCwr.
    let exit = net
        .obs
        .states
        .iter()
        .find(|s| s.1 == CaState::Recovery)
        .expect("left Recovery");
    assert_eq!(exit.2, CaState::Open);
    let at_exit = net.snap_at(exit.0);
    assert_eq!(at_exit.cwnd, ssthresh);
    assert!(events.lock().unwrap().contains(&CaEvent::CompleteCwr));

    // PRR: over the recovery the sender sent about ssthresh segments (one retransmission
    // plus new data), leaving in-flight at ssthresh when recovery ends; in-flight never
    // exceeded its value at entry.
    let sent_in_recovery = net
        .sent
        .iter()
        .filter(|s| s.0 >= entry.0 && s.0 < exit.0)
        .count() as i64;
    assert!(
        (sent_in_recovery - ssthresh as i64).abs() <= 2,
        "sent {sent_in_recovery} during recovery, ssthresh {ssthresh}"
    );
    assert!((at_exit.in_flight as i64 - ssthresh as i64).abs() <= 2);
    for s in net.trace.iter().filter(|s| s.t >= entry.0 && s.t < exit.0) {
        assert!(s.in_flight <= at_entry.in_flight.max(before.in_flight));
        assert_eq!(s.state, CaState::Recovery);
    }
    // Afterwards the flow keeps going in congestion avoidance.
    assert!(net.sender.sock().snd_una > 500);
    assert_eq!(net.sender.sock().ssthresh, ssthresh);
}

#[test]
fn single_loss_fast_retransmit_prr_and_exit_with_rack() {
    single_loss(true);
}

#[test]
fn single_loss_fast_retransmit_prr_and_exit_with_dupthresh() {
    single_loss(false);
}

#[test]
fn rack_detects_a_lost_retransmission_without_a_timeout() {
    let run = |rack: bool| {
        let cfg = SenderConfig {
            rack,
            ..SenderConfig::default()
        };
        let (sender, _) = reno_sender(&cfg, App::Bulk);
        let mut net = Net::new(sender, Bandwidth::from_mbps(10.0), Dur::from_ms(20), None);
        // Segment 60 is lost twice: the original and the first retransmission.
        let mut copies = 0;
        net.drop_data = Box::new(move |_, seg| {
            if seg.seq == 60 {
                copies += 1;
                return copies <= 2;
            }
            false
        });
        net.run_until(ms(3000));
        let rexmits: Vec<u64> = net.obs.retransmits.iter().map(|r| r.1).collect();
        (net.sender.stats().clone(), rexmits)
    };
    let (st, rexmits) = run(true);
    assert_eq!(rexmits, vec![60, 60]);
    assert_eq!((st.rtos, st.fast_recoveries), (0, 1), "{st:?}");
    // Without RACK only the retransmission timer finds the second loss.
    let (st, rexmits) = run(false);
    assert_eq!(rexmits, vec![60, 60]);
    assert_eq!(st.rtos, 1, "{st:?}");
}

// ----- (3) tail loss: TLP -------------------------------------------------------------------

#[test]
fn tail_loss_is_repaired_by_a_probe_at_two_srtt_without_rto() {
    let (sender, _) = reno_sender(&SenderConfig::default(), App::Bytes(30 * 1448));
    let mut net = Net::new(sender, Bandwidth::from_mbps(10.0), Dur::from_ms(20), None);
    // Lose the first transmission of the last three segments.
    net.drop_data = Box::new(|_, seg| seg.seq >= 27 && !seg.retransmit);
    let done = net.run_to_completion(ms(10_000));
    let st = net.sender.stats().clone();
    assert_eq!((st.tlps, st.rtos), (1, 0));
    assert_eq!(net.receiver.delivered_bytes(), 30 * 1448);
    // The probe retransmits the highest segment; RACK then finds 27 and 28 lost.
    let probe = net.obs.retransmits[0];
    assert_eq!(probe.1, 29);
    let rexmits: Vec<u64> = net.obs.retransmits.iter().map(|r| r.1).collect();
    assert_eq!(rexmits, vec![29, 27, 28]);
    // PTO = 2·srtt + 2 ms from the last ACK (3 packets out), in whole ticks.
    let last_ack = *net.trace.iter().rev().find(|s| s.t < probe.0).unwrap();
    let pto_us = (last_ack.srtt_us8 >> 2) + 2000;
    let pto = Dur::from_ms(pto_us.div_ceil(1000));
    assert_eq!(probe.0, last_ack.t + pto);
    assert!(done < probe.0 + Dur::from_ms(200), "completed at {done}");
}

#[test]
fn a_single_lost_tail_segment_is_probed_at_the_rto_bound() {
    // One packet out: PTO = 2·srtt + rto_min, capped at the RTO, which is sooner here.
    let (sender, _) = reno_sender(&SenderConfig::default(), App::Bytes(30 * 1448));
    let mut net = Net::new(sender, Bandwidth::from_mbps(10.0), Dur::from_ms(20), None);
    net.drop_data = Box::new(|_, seg| seg.seq == 29 && !seg.retransmit);
    net.run_to_completion(ms(10_000));
    let st = net.sender.stats();
    assert_eq!((st.tlps, st.rtos), (1, 0));
    let probe = net.obs.retransmits[0];
    let last_ack = *net.trace.iter().rev().find(|s| s.t < probe.0).unwrap();
    let two_srtt_plus_min = Dur::from_us((last_ack.srtt_us8 >> 2) + 200_000);
    assert_eq!(probe.0, last_ack.t + last_ack.rto.min(two_srtt_plus_min));
}

// ----- (4) blackout: RTO, backoff, cwnd 1, slow start ---------------------------------------

#[test]
fn blackout_times_out_backs_off_and_restarts_in_slow_start() {
    // cwnd clamped at 20 (below the 33-packet BDP): no loss before the blackout.
    let cc = TestReno {
        cwnd_clamp: Some(20),
        ..TestReno::default()
    };
    let sender = TcpSender::new(
        0,
        &SenderConfig::default(),
        Box::new(cc),
        App::Bulk,
        Time::ZERO,
    );
    let mut net = Net::new(sender, Bandwidth::from_mbps(10.0), Dur::from_ms(20), None);
    let blackout = |t: Time| t >= ms(2000) && t < ms(5000);
    net.drop_data = Box::new(move |t, _| blackout(t));
    net.drop_ack = Box::new(move |t, _| blackout(t));
    net.run_until(ms(1999));
    let before = net.trace.last().copied().unwrap();
    assert_eq!(before.cwnd, 20);
    assert_eq!(before.state, CaState::Open);
    let rto0 = net.sender.rto();
    // RTO = srtt + max(4·mdev, rto_min), rounded up to a tick.
    let est = net.sender.rtt_estimator();
    let expect = Dur::from_ms((est.srtt_us() + est.rttvar_us()).div_ceil(1000));
    assert_eq!(rto0, expect);
    assert!(rto0 >= Dur::from_us(est.srtt_us()) + Dur::from_ms(200));

    net.run_until(ms(8000));
    let rtos = net.obs.rtos.clone();
    assert!(rtos.len() >= 4, "rtos at {rtos:?}");
    // First: a probe went out PTO after the last ACK; the RTO fires rto0 after it.
    assert_eq!(net.sender.stats().tlps, 1);
    let probe_sent = net
        .sent
        .iter()
        .rev()
        .find(|s| s.0 < rtos[0])
        .map(|s| s.0)
        .unwrap();
    assert_eq!(rtos[0], probe_sent + rto0);
    // Backoff doubles the interval each time.
    for w in rtos.windows(2).take(3).enumerate() {
        let (i, pair) = w;
        assert_eq!(pair[1] - pair[0], rto0 * (2 << i), "interval after RTO {i}");
    }
    // After the first RTO: Loss, everything lost, cwnd = 1, ssthresh halved once.
    let after = net.snap_at(rtos[0]);
    assert_eq!(after.state, CaState::Loss);
    assert_eq!(after.cwnd, 1);
    assert_eq!(after.ssthresh, 10);
    assert_eq!(
        net.snap_at(rtos[3]).ssthresh,
        10,
        "not halved again in the same episode"
    );
    // The first ACK after the blackout restarts slow start from 1.
    let first_ack_after = net
        .trace
        .iter()
        .find(|s| s.t > ms(5000) && s.snd_una > before.snd_una);
    let first = first_ack_after.expect("ACKs after the blackout");
    assert!(first.cwnd <= 2);
    let later = net.snap_at(first.t + Dur::from_ms(200));
    assert!(later.cwnd >= 8, "slow start resumed: cwnd {}", later.cwnd);
    assert!(net.sender.sock().snd_una > before.snd_una + 100);
}

#[test]
fn a_delay_spike_causes_a_spurious_timeout_that_is_undone() {
    // The bottleneck stops serving for 1.5 s but loses nothing (a cellular stall): the
    // RTO fires, and the originals' ACKs, echoing timestamps older than the
    // retransmission, prove it spurious (tcp_try_undo_loss).
    let cc = TestReno {
        cwnd_clamp: Some(20),
        ..TestReno::default()
    };
    let sender = TcpSender::new(
        0,
        &SenderConfig::default(),
        Box::new(cc),
        App::Bulk,
        Time::ZERO,
    );
    let mut net = Net::new(sender, Bandwidth::from_mbps(10.0), Dur::from_ms(20), None);
    net.fwd.stall = Some((ms(2000), ms(3500)));
    net.run_until(ms(1999));
    let before = net.trace.last().copied().unwrap();
    net.run_until(ms(6000));
    let st = net.sender.stats().clone();
    assert!(st.rtos >= 1);
    assert_eq!(st.undo_loss + st.undo_frto, 1, "{st:?}");
    // Undo restored the window and the threshold from before the timeout.
    let undo_t = net
        .obs
        .states
        .iter()
        .find(|s| s.1 == CaState::Loss)
        .unwrap()
        .0;
    let after = net.snap_at(undo_t);
    assert_eq!(after.state, CaState::Open);
    assert_eq!(after.cwnd, before.cwnd);
    assert_eq!(
        net.sender.sock().ssthresh,
        cellcc_congestion::INFINITE_SSTHRESH
    );
    assert!(
        net.receiver.stats().duplicates >= 1,
        "the retransmission was a duplicate"
    );
}

/// Owns cwnd (fixed) and asks for pacing at a fixed rate, like BBR does.
#[derive(Debug)]
struct PacedFixed {
    cwnd: u32,
    rate: u64,
}

impl CongestionControl for PacedFixed {
    fn name(&self) -> &'static str {
        "paced"
    }
    fn init(&mut self, sock: &mut Sock) {
        sock.cwnd = self.cwnd;
        sock.pacing_status = cellcc_congestion::PacingStatus::Needed;
        sock.pacing_rate = self.rate;
    }
    fn ssthresh(&mut self, sock: &Sock) -> u32 {
        sock.cwnd
    }
    fn cong_avoid(&mut self, _sock: &mut Sock, _acked: u32) {}
    fn owns_cwnd(&self) -> bool {
        true
    }
    fn cong_control(&mut self, sock: &mut Sock, _rs: &RateSample) {
        sock.cwnd = self.cwnd;
    }
}

#[test]
fn pacing_spaces_segments_only_when_the_cc_asks() {
    // 1448 bytes per ms; the first 10 segments go out unpaced, then one per ms.
    let cc = PacedFixed {
        cwnd: 100,
        rate: 1_448_000,
    };
    let sender = TcpSender::new(
        0,
        &SenderConfig::default(),
        Box::new(cc),
        App::Bulk,
        Time::ZERO,
    );
    assert_eq!(sender.next_wakeup(), None);
    let mut net = Net::new(sender, Bandwidth::from_mbps(100.0), Dur::from_ms(20), None);
    assert_eq!(net.sent.len(), 10);
    assert_eq!(net.sender.next_wakeup(), Some(ms(1)), "pacing release time");
    net.run_until(ms(30));
    let times: Vec<Time> = net.sent.iter().map(|s| s.0).collect();
    assert!(times[..10].iter().all(|&t| t == Time::ZERO));
    for (k, &t) in times[10..].iter().enumerate() {
        assert_eq!(t, ms(k as u64 + 1));
    }
    assert_eq!(times.len(), 10 + 30);
    // Without pacing (Reno), the initial window goes out at once and nothing waits.
    let (sender, _) = reno_sender(&SenderConfig::default(), App::Bulk);
    let net = Net::new(sender, Bandwidth::from_mbps(100.0), Dur::from_ms(20), None);
    assert_eq!(net.sent.len(), 10);
    assert!(
        net.sender.next_wakeup() > Some(ms(100)),
        "only the probe timer"
    );
}

// ----- (5) receiver ---------------------------------------------------------------------------

fn seg(seq: u64, tsval: u32) -> DataSegment {
    DataSegment {
        flow: 0,
        seq,
        len: 1448,
        tsval,
        tsecr: 0,
        sent_at: Time::ZERO,
        retransmit: false,
    }
}

fn blocks(a: &AckSegment) -> Vec<(u64, u64)> {
    a.sack_blocks().iter().map(|b| (b.start, b.end)).collect()
}

#[test]
fn receiver_quick_acks_then_every_second_segment() {
    let mut r = TcpReceiver::new(0, &ReceiverConfig::default(), Time::ZERO);
    for s in 0..16 {
        let out = r.on_data(ms(s), &seg(s, s as u32));
        assert!(out.ack.is_some(), "quick ACK {s}");
        assert_eq!(out.delivered_bytes, 1448);
    }
    // Quick-ACK budget spent: ACK every second full-sized segment.
    assert!(r.on_data(ms(16), &seg(16, 16)).ack.is_none());
    assert_eq!(r.next_wakeup(), Some(ms(16) + Dur::from_ms(40)));
    let a = r.on_data(ms(17), &seg(17, 17)).ack.expect("second segment");
    assert_eq!(a.ack, 18);
    assert_eq!(r.next_wakeup(), None);
    assert!(r.on_data(ms(18), &seg(18, 18)).ack.is_none());
    assert!(r.on_data(ms(19), &seg(19, 19)).ack.is_some());
}

#[test]
fn receiver_delays_a_lone_segment_by_40ms() {
    let mut r = TcpReceiver::new(0, &ReceiverConfig::default(), Time::ZERO);
    for s in 0..16 {
        r.on_data(ms(s), &seg(s, 7));
    }
    // A lone segment after a 100 ms pause (ato stays at 40 ms: 100 ms > ato).
    assert!(r.on_data(ms(115), &seg(16, 115)).ack.is_none());
    assert_eq!(r.next_wakeup(), Some(ms(155)));
    assert_eq!(r.on_timer(ms(154)), None);
    let a = r.on_timer(ms(155)).expect("delayed ACK");
    assert_eq!((a.ack, a.tsecr, a.sack_len), (17, 115, 0));
    assert_eq!(r.stats().delayed_acks, 1);
    assert_eq!(r.next_wakeup(), None);
}

#[test]
fn receiver_sack_blocks_are_most_recent_first() {
    let mut r = TcpReceiver::new(0, &ReceiverConfig::default(), Time::ZERO);
    let mut t = 0;
    let mut feed = |r: &mut TcpReceiver, s: u64| {
        t += 1;
        r.on_data(ms(t), &seg(s, t as u32))
    };
    feed(&mut r, 0);
    feed(&mut r, 1);
    let a = feed(&mut r, 3).ack.unwrap();
    assert_eq!((a.ack, blocks(&a)), (2, vec![(3, 4)]));
    let a = feed(&mut r, 5).ack.unwrap();
    assert_eq!(blocks(&a), vec![(5, 6), (3, 4)]);
    let a = feed(&mut r, 7).ack.unwrap();
    assert_eq!(blocks(&a), vec![(7, 8), (5, 6), (3, 4)]);
    // 4 joins 3 and 5: the merged block comes first.
    let a = feed(&mut r, 4).ack.unwrap();
    assert_eq!(blocks(&a), vec![(3, 6), (7, 8)]);
    let a = feed(&mut r, 9).ack.unwrap();
    assert_eq!(blocks(&a), vec![(9, 10), (3, 6), (7, 8)]);
    let a = feed(&mut r, 11).ack.unwrap();
    assert_eq!(
        blocks(&a),
        vec![(11, 12), (9, 10), (3, 6)],
        "at most 3 blocks"
    );
    // Filling the first hole delivers 2..6 and ACKs at once.
    let out = feed(&mut r, 2);
    let a = out.ack.expect("gap-filling data is ACKed at once");
    assert_eq!(out.delivered_bytes, 4 * 1448);
    assert_eq!((a.ack, blocks(&a)), (6, vec![(11, 12), (9, 10), (7, 8)]));
    assert_eq!(r.stats().out_of_order, 6);
}

#[test]
fn receiver_dsacks_duplicates() {
    let mut r = TcpReceiver::new(0, &ReceiverConfig::default(), Time::ZERO);
    for s in [0, 1, 2, 4, 5] {
        r.on_data(ms(s), &seg(s, s as u32));
    }
    // Below the cumulative ACK.
    let out = r.on_data(ms(10), &seg(1, 10));
    assert!(out.duplicate);
    assert_eq!(out.delivered_bytes, 0);
    let a = out.ack.unwrap();
    assert!(a.dsack);
    assert_eq!((a.ack, blocks(&a)), (3, vec![(1, 2), (4, 6)]));
    // Inside an out-of-order block: D-SACK, then the enclosing block.
    let a = r.on_data(ms(11), &seg(5, 11)).ack.unwrap();
    assert!(a.dsack);
    assert_eq!(blocks(&a), vec![(5, 6), (4, 6)]);
    assert_eq!(r.stats().duplicates, 2);
    assert_eq!(r.delivered_bytes(), 3 * 1448);
}

#[test]
fn receiver_echoes_the_timestamp_of_the_earliest_unacked_segment() {
    let mut r = TcpReceiver::new(0, &ReceiverConfig::default(), Time::ZERO);
    for s in 0..16 {
        r.on_data(ms(s), &seg(s, 100 + s as u32));
    }
    // ACK every two: the echo is the first segment's TSval (RFC 7323 §4.3 (2)).
    r.on_data(ms(20), &seg(16, 200));
    let a = r.on_data(ms(21), &seg(17, 201)).ack.unwrap();
    assert_eq!(a.tsecr, 200);
    // Out of order: TS.Recent does not move; the hole filler's TSval is echoed.
    let a = r.on_data(ms(22), &seg(19, 300)).ack.unwrap();
    assert_eq!(a.tsecr, 200);
    let a = r.on_data(ms(23), &seg(18, 301)).ack.unwrap();
    assert_eq!((a.ack, a.tsecr), (20, 301));
}

// ----- (6) delivery-rate samples ----------------------------------------------------------------

#[test]
fn rate_samples_match_the_bottleneck_and_mark_the_app_limited_tail() {
    // 12 Mbit/s: exactly 1000 packets of 1500 bytes per second; fixed cwnd 60 keeps the
    // link busy (BDP 40 packets) with a standing queue.
    let samples = Arc::new(Mutex::new(Vec::new()));
    let cc = FixedCwnd {
        cwnd: 60,
        samples: samples.clone(),
    };
    let total = 3000u64;
    let sender = TcpSender::new(
        0,
        &SenderConfig::default(),
        Box::new(cc),
        App::Bytes(total * 1448),
        Time::ZERO,
    );
    let mut net = Net::new(sender, Bandwidth::from_mbps(12.0), Dur::from_ms(20), None);
    // Lose the last segment so the probe that repairs it is sent app-limited.
    net.drop_data = Box::new(move |_, seg| seg.seq == total - 1 && !seg.retransmit);
    net.run_to_completion(ms(20_000));
    let samples = samples.lock().unwrap();
    let steady: Vec<&(Time, RateSample)> = samples
        .iter()
        .filter(|(t, rs)| *t > ms(500) && *t < ms(2500) && rs.interval.is_some())
        .collect();
    assert!(steady.len() > 500);
    for (t, rs) in &steady {
        assert!(!rs.is_app_limited);
        let pps = rs.delivered as f64 / rs.interval.unwrap().as_secs_f64();
        assert!((pps / 1000.0 - 1.0).abs() < 0.02, "{pps} pkt/s at {t}");
    }
    // The tail: once all data is out, the flow is app-limited; the probe carries it.
    let tail: Vec<&(Time, RateSample)> =
        samples.iter().filter(|(_, rs)| rs.is_app_limited).collect();
    assert!(!tail.is_empty(), "no app-limited sample");
    assert!(tail.iter().all(|(t, _)| *t > ms(2900)));
    assert_eq!(net.sender.stats().tlps, 1);
}

// ----- (7) RTT estimator in the loop ------------------------------------------------------------

#[test]
fn first_rtt_sample_sets_srtt_and_rto() {
    // An unloaded path: the first ACK (quick ACK of segment 0) measures
    // 40 ms + 1.2 ms serialisation; srtt = m, RTO = m + max(2m, 200 ms) → 242 ms (ticks).
    let (sender, _) = reno_sender(&SenderConfig::default(), App::Bulk);
    let mut net = Net::new(sender, Bandwidth::from_mbps(10.0), Dur::from_ms(20), None);
    assert_eq!(net.sender.rto(), Dur::from_secs(1), "initial RTO");
    net.run_until(ms(42));
    let (_, m) = net.obs.rtts[0];
    assert_eq!(m, Dur::from_us(41_200));
    assert_eq!(net.sender.sock().srtt, m);
    assert_eq!(net.sender.rto(), Dur::from_ms(242));
    assert_eq!(net.sender.sock().min_rtt, m);
}

// ----- (8) every byte delivered exactly once, in order, under random loss ---------------------

/// xorshift64* for the lossy channel.
struct Rng(u64);
impl Rng {
    fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn lossy_transfer(
    bytes: u64,
    p_data: f64,
    p_ack: f64,
    seed: u64,
    rack: bool,
    limit: Option<usize>,
) -> SenderStats {
    let cfg = SenderConfig {
        rack,
        ..SenderConfig::default()
    };
    let (sender, _) = reno_sender(&cfg, App::Bytes(bytes));
    let mut net = Net::new(sender, Bandwidth::from_mbps(8.0), Dur::from_ms(15), limit);
    let mut rng = Rng(seed | 1);
    net.drop_data = Box::new(move |_, _| rng.next_f64() < p_data);
    let mut rng = Rng((seed ^ 0x9e37_79b9_7f4a_7c15) | 1);
    net.drop_ack = Box::new(move |_, _| rng.next_f64() < p_ack);
    net.run_to_completion(Time::from_secs(100_000));
    assert_eq!(net.receiver.delivered_bytes(), bytes);
    assert_eq!(net.delivered, bytes);
    assert_eq!(net.deliveries.iter().map(|d| d.1).sum::<u64>(), bytes);
    let s = net.sender.sock();
    assert_eq!(s.snd_una, bytes.div_ceil(1448));
    assert_eq!(
        (s.packets_out, s.sacked_out, s.lost_out, s.retrans_out),
        (0, 0, 0, 0)
    );
    assert_eq!(net.sender.stats().bytes_acked, bytes);
    assert_eq!(
        net.sender.next_wakeup(),
        None,
        "no timer left after completion"
    );
    net.sender.stats().clone()
}

use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn every_byte_is_delivered_exactly_once_in_order(
        bytes in 1u64..400_000,
        p_data in 0.0f64..0.25,
        p_ack in 0.0f64..0.25,
        seed in any::<u64>(),
        rack in any::<bool>(),
        queue in prop_oneof![Just(None), (5usize..60).prop_map(Some)],
    ) {
        lossy_transfer(bytes, p_data, p_ack, seed, rack, queue);
    }
}

#[test]
fn heavy_loss_transfer_completes() {
    let st = lossy_transfer(1_000_000, 0.3, 0.3, 42, true, Some(20));
    assert!(st.rtos > 0 && st.retransmissions > 200, "{st:?}");
    lossy_transfer(1_000_000, 0.3, 0.3, 43, false, Some(20));
}

#[test]
fn runs_are_deterministic() {
    let run = || {
        let (sender, _) = reno_sender(&SenderConfig::default(), App::Bytes(500_000));
        let mut net = Net::new(
            sender,
            Bandwidth::from_mbps(8.0),
            Dur::from_ms(15),
            Some(30),
        );
        let t = net.run_to_completion(Time::from_secs(1000));
        (t, net.sender.stats().clone(), net.receiver.stats().clone())
    };
    assert_eq!(run(), run());
}

// ----- performance smoke test (run with --release --ignored) ------------------------------------

#[test]
#[ignore]
fn perf_long_bulk_flow() {
    let (sender, _) = reno_sender(&SenderConfig::default(), App::Bulk);
    let mut net = Net::new(
        sender,
        Bandwidth::from_mbps(16.7),
        Dur::from_ms(20),
        Some(2000),
    );
    let start = std::time::Instant::now();
    net.run_until(Time::from_secs(140));
    let el = start.elapsed();
    let st = net.sender.stats();
    eprintln!(
        "140 s: {} segments, {} ACKs, {} rexmits, {} recoveries, {} rtos in {:?}",
        st.segments_sent, st.acks_received, st.retransmissions, st.fast_recoveries, st.rtos, el
    );
}

#[test]
#[ignore]
fn stress_many_lossy_transfers() {
    let mut r = Rng(12345);
    let (mut segs, mut rtos, mut undos) = (0, 0, 0);
    for i in 0..3000u64 {
        let bytes = 1 + (r.next_f64() * 600_000.0) as u64;
        let pd = r.next_f64() * 0.35;
        let pa = r.next_f64() * 0.35;
        let rack = r.next_f64() < 0.5;
        let q = if r.next_f64() < 0.5 {
            None
        } else {
            Some(3 + (r.next_f64() * 80.0) as usize)
        };
        let st = lossy_transfer(bytes, pd, pa, i * 7919 + 1, rack, q);
        segs += st.segments_sent;
        rtos += st.rtos;
        undos += st.undo_loss + st.undo_frto + st.undo_recovery + st.undo_dsack;
    }
    eprintln!("{segs} segments, {rtos} RTOs, {undos} undos");
}
