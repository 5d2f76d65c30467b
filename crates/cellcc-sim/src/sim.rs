//! The discrete-event loop: flows, links and the order in which things happen.
//!
//! Topology (Mahimahi's `mm-delay D mm-link UP DOWN` with the sender outside):
//!
//! ```text
//!  sender ──loss──► delay(down) ──► queue ─► downlink service ──► receiver
//!     ▲                                                              │
//!     └──────────── delay(up) ◄── uplink service ◄─ queue ◄──loss────┘ (ACKs)
//! ```
//!
//! Data is delayed, then queued (`mm-delay` outside `mm-link`); ACKs are queued on the
//! uplink, then delayed. Events are ordered by `(time, sequence)`: ties run in the order
//! they were scheduled, so a run is a pure function of the scenario and seed.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use cellcc_link::{BernoulliLoss, DelayLine, EnqueueResult, Link, LinkService};
use cellcc_units::{Dur, Time};
use rand_chacha::ChaCha8Rng;

use crate::metrics::{FlowMetrics, PacketLog, SenderSample, SummaryRow, TimeSeries};
use crate::packet::{AckSegment, DataSegment};
use crate::rng::{self, Stream};
use crate::scenario::{LinkConfig, Scenario};
use crate::schemes;
use crate::tcp::{SenderObserver, TcpReceiver, TcpSender};

/// Events between progress callbacks.
const PROGRESS_EVERY: u64 = 1 << 14;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    FlowStart(u32),
    SenderTimer(u32),
    ReceiverTimer(u32),
    DownDelay,
    DownLink,
    UpLink,
    UpDelay,
    Sample,
}

/// Everything a run produces.
#[derive(Debug, Clone)]
pub struct SimOutput {
    pub summary: Vec<SummaryRow>,
    pub timeseries: TimeSeries,
    pub link: LinkSummary,
    pub events: u64,
    pub packet_log: Option<String>,
    pub conservation: Conservation,
}

/// Packet accounting at the end of a run: every packet sent was delivered, dropped, or
/// is still in the network (in a delay line, a queue, or in service).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Conservation {
    pub data_sent: u64,
    pub data_delivered: u64,
    pub data_dropped: u64,
    pub data_in_network: u64,
    pub acks_sent: u64,
    pub acks_delivered: u64,
    pub acks_dropped: u64,
    pub acks_in_network: u64,
}

/// Downlink capacity and use over the measured span.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LinkSummary {
    pub downlink: String,
    pub uplink: String,
    pub capacity_mbps: f64,
    pub utilisation: Option<f64>,
    pub delivered_mbps: f64,
    pub drops: u64,
}

/// A run was stopped by its progress callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("simulation cancelled")]
pub struct Cancelled;

struct Flow {
    scheme: String,
    start: Time,
    sender: Option<TcpSender>,
    receiver: Option<TcpReceiver>,
    sender_timer: Option<Time>,
    receiver_timer: Option<Time>,
}

/// Records sender events into a flow's metrics.
struct Observer<'a> {
    flow: &'a mut FlowMetrics,
    all: &'a mut FlowMetrics,
}

impl SenderObserver for Observer<'_> {
    fn rtt_sample(&mut self, _now: Time, rtt: Dur) {
        self.flow.rtt.record(rtt);
        self.all.rtt.record(rtt);
    }
    fn retransmit(&mut self, _now: Time, _seq: u64) {
        self.flow.retransmits += 1;
        self.all.retransmits += 1;
    }
    fn rto(&mut self, _now: Time) {
        self.flow.rtos += 1;
        self.all.rtos += 1;
    }
}

struct Direction<T> {
    link: Link<T>,
    delay: Dur,
    delay_line: DelayLine<T>,
    loss: BernoulliLoss,
    rng: ChaCha8Rng,
    framing: u32,
    link_timer: Option<Time>,
    delay_timer: Option<Time>,
}

impl<T> Direction<T> {
    fn new(cfg: &LinkConfig, rng: ChaCha8Rng) -> Self {
        // Charged bytes on top of the IP length (4 on trace links: Mahimahi's TUN header).
        let framing = cfg.service.framing_bytes();
        Direction {
            link: Link::new(cfg.service.clone(), cfg.queue.clone()),
            delay: cfg.delay,
            delay_line: DelayLine::new(cfg.delay),
            loss: BernoulliLoss::new(cfg.loss),
            rng,
            framing,
            link_timer: None,
            delay_timer: None,
        }
    }
}

/// Claim a wake-up at `want` (not before `now`) for an entity whose pending wake-up is
/// `slot`. Returns the time to schedule, or `None` if an earlier one is already pending
/// (at most one live event per entity; superseded events are recognised and skipped).
fn claim(now: Time, slot: &mut Option<Time>, want: Option<Time>) -> Option<Time> {
    let t = want?.max(now);
    if slot.is_none_or(|c| t < c) {
        *slot = Some(t);
        Some(t)
    } else {
        None
    }
}

/// A simulation in progress.
pub struct Simulation<'s> {
    sc: &'s Scenario,
    now: Time,
    end: Time,
    seq: u64,
    events: u64,
    queue: BinaryHeap<Reverse<(Time, u64, Event)>>,
    flows: Vec<Flow>,
    metrics: Vec<FlowMetrics>,
    all: FlowMetrics,
    down: Direction<DataSegment>,
    up: Direction<AckSegment>,
    log: Option<PacketLog>,
    link_series: Vec<(u64, u64)>,
    count: Conservation,
}

impl<'s> Simulation<'s> {
    pub fn new(sc: &'s Scenario) -> Self {
        let end = Time::ZERO + sc.duration;
        let log = sc.metrics.packet_log.then(|| {
            let (opps, bytes) = match &sc.downlink.service {
                LinkService::Trace { trace, mode } => (
                    trace.opportunity_times_ms(*mode, end.as_ms() + 1),
                    cellcc_link::OPPORTUNITY_BYTES,
                ),
                LinkService::Constant { .. } => (Vec::new(), 0),
            };
            PacketLog::new(&format!("{:?}", sc.downlink.queue), opps, bytes)
        });
        let mut sim = Simulation {
            sc,
            now: Time::ZERO,
            end,
            seq: 0,
            events: 0,
            queue: BinaryHeap::new(),
            flows: sc
                .flows
                .iter()
                .map(|f| Flow {
                    scheme: f.scheme.clone(),
                    start: Time::ZERO + f.start,
                    sender: None,
                    receiver: None,
                    sender_timer: None,
                    receiver_timer: None,
                })
                .collect(),
            metrics: vec![FlowMetrics::default(); sc.flows.len()],
            all: FlowMetrics::default(),
            down: Direction::new(&sc.downlink, rng::stream(sc.seed, Stream::DownlinkLoss)),
            up: Direction::new(&sc.uplink, rng::stream(sc.seed, Stream::UplinkLoss)),
            log,
            link_series: Vec::new(),
            count: Conservation::default(),
        };
        for (i, f) in sc.flows.iter().enumerate() {
            sim.push(Time::ZERO + f.start, Event::FlowStart(i as u32));
        }
        sim.push(Time::ZERO + sc.metrics.bin, Event::Sample);
        sim
    }

    fn push(&mut self, t: Time, ev: Event) {
        self.seq += 1;
        self.queue.push(Reverse((t, self.seq, ev)));
    }

    /// Run to the end. `progress(fraction)` is called now and then; returning false
    /// cancels the run.
    pub fn run(mut self, progress: &mut dyn FnMut(f64) -> bool) -> Result<SimOutput, Cancelled> {
        while let Some(Reverse((t, _, ev))) = self.queue.pop() {
            if t >= self.end {
                break;
            }
            debug_assert!(t >= self.now, "events never go back in time");
            self.now = t;
            self.events += 1;
            if self.events.is_multiple_of(PROGRESS_EVERY)
                && !progress(t.as_ns() as f64 / self.end.as_ns() as f64)
            {
                return Err(Cancelled);
            }
            self.dispatch(t, ev);
        }
        self.now = self.end;
        progress(1.0);
        Ok(self.finish())
    }

    fn dispatch(&mut self, t: Time, ev: Event) {
        match ev {
            Event::FlowStart(i) => self.start_flow(i),
            Event::SenderTimer(i) => {
                let f = &mut self.flows[i as usize];
                if f.sender_timer != Some(t) {
                    return; // superseded by an earlier or later wake-up
                }
                f.sender_timer = None;
                if let Some(s) = f.sender.as_mut() {
                    let mut obs = Observer {
                        flow: &mut self.metrics[i as usize],
                        all: &mut self.all,
                    };
                    s.on_timer(t, &mut obs);
                }
                self.pump_sender(i);
            }
            Event::ReceiverTimer(i) => {
                let f = &mut self.flows[i as usize];
                if f.receiver_timer != Some(t) {
                    return;
                }
                f.receiver_timer = None;
                let ack = f.receiver.as_mut().and_then(|r| r.on_timer(t));
                if let Some(a) = ack {
                    self.send_ack(a);
                }
                self.arm_receiver(i);
            }
            Event::DownDelay => {
                if self.down.delay_timer != Some(t) {
                    return;
                }
                self.down.delay_timer = None;
                while let Some(seg) = self.down.delay_line.pop_ready(t) {
                    self.enqueue_down(seg);
                }
                self.arm_down_delay();
            }
            Event::DownLink => {
                if self.down.link_timer != Some(t) {
                    return;
                }
                self.down.link_timer = None;
                self.service_down();
            }
            Event::UpLink => {
                if self.up.link_timer != Some(t) {
                    return;
                }
                self.up.link_timer = None;
                self.service_up();
            }
            Event::UpDelay => {
                if self.up.delay_timer != Some(t) {
                    return;
                }
                self.up.delay_timer = None;
                while let Some(ack) = self.up.delay_line.pop_ready(t) {
                    self.deliver_ack(ack);
                }
                self.arm_up_delay();
            }
            Event::Sample => self.sample(),
        }
    }

    fn start_flow(&mut self, i: u32) {
        let cfg = &self.sc.flows[i as usize];
        let seed = rng::flow_seed(self.sc.seed, i);
        // Scheme and parameters were validated when the scenario was loaded.
        let cc = schemes::build(&cfg.scheme, &cfg.params, seed)
            .expect("scheme parameters are validated by Scenario::parse");
        let f = &mut self.flows[i as usize];
        f.sender = Some(TcpSender::new(i, &self.sc.sender, cc, cfg.app, self.now));
        f.receiver = Some(TcpReceiver::new(i, &self.sc.receiver, self.now));
        self.pump_sender(i);
    }

    /// Let sender `i` transmit everything it may now, then re-arm its timer.
    fn pump_sender(&mut self, i: u32) {
        let now = self.now;
        loop {
            let f = &mut self.flows[i as usize];
            let Some(s) = f.sender.as_mut() else { return };
            let mut obs = Observer {
                flow: &mut self.metrics[i as usize],
                all: &mut self.all,
            };
            let Some(seg) = s.poll_transmit(now, &mut obs) else {
                break;
            };
            let len = seg.ip_len() as u64;
            self.count.data_sent += 1;
            self.metrics[i as usize].sent_ip_bytes += len;
            self.all.sent_ip_bytes += len;
            if self.down.loss.drops(&mut self.down.rng) {
                self.metrics[i as usize].drops_random += 1;
                self.all.drops_random += 1;
                self.count.data_dropped += 1;
                continue;
            }
            if self.down.delay.is_zero() {
                self.enqueue_down(seg);
            } else {
                self.down.delay_line.push(now, seg);
                self.arm_down_delay();
            }
        }
        let want = self.flows[i as usize]
            .sender
            .as_ref()
            .and_then(|s| s.next_wakeup());
        if let Some(t) = claim(self.now, &mut self.flows[i as usize].sender_timer, want) {
            self.push(t, Event::SenderTimer(i));
        }
    }

    fn arm_receiver(&mut self, i: u32) {
        let want = self.flows[i as usize]
            .receiver
            .as_ref()
            .and_then(|r| r.next_wakeup());
        if let Some(t) = claim(self.now, &mut self.flows[i as usize].receiver_timer, want) {
            self.push(t, Event::ReceiverTimer(i));
        }
    }

    fn arm_down_delay(&mut self) {
        let want = self.down.delay_line.next_wakeup();
        if let Some(t) = claim(self.now, &mut self.down.delay_timer, want) {
            self.push(t, Event::DownDelay);
        }
    }
    fn arm_up_delay(&mut self) {
        let want = self.up.delay_line.next_wakeup();
        if let Some(t) = claim(self.now, &mut self.up.delay_timer, want) {
            self.push(t, Event::UpDelay);
        }
    }
    fn arm_down_link(&mut self) {
        let want = self.down.link.next_wakeup();
        if let Some(t) = claim(self.now, &mut self.down.link_timer, want) {
            self.push(t, Event::DownLink);
        }
    }
    fn arm_up_link(&mut self) {
        let want = self.up.link.next_wakeup();
        if let Some(t) = claim(self.now, &mut self.up.link_timer, want) {
            self.push(t, Event::UpLink);
        }
    }

    fn enqueue_down(&mut self, seg: DataSegment) {
        let now = self.now;
        let ip_len = seg.ip_len();
        if let Some(log) = self.log.as_mut() {
            log.arrival(now, ip_len + self.down.framing);
        }
        if let EnqueueResult::Dropped(d) = self.down.link.enqueue(now, seg, ip_len) {
            self.record_down_drop(d.flow, ip_len);
        }
        // Serve what is due now; this also records head drops the enqueue caused.
        self.service_down();
    }

    fn record_down_drop(&mut self, flow: u32, ip_len: u32) {
        self.count.data_dropped += 1;
        self.metrics[flow as usize].drops_queue += 1;
        self.all.drops_queue += 1;
        if let Some(log) = self.log.as_mut() {
            log.drop(self.now, ip_len + self.down.framing);
        }
    }

    fn drain_down_drops(&mut self) {
        while let Some(d) = self.down.link.pop_drop() {
            self.record_down_drop(d.item.flow, d.ip_len);
        }
    }

    /// Run the downlink up to now and hand departures to the receivers.
    fn service_down(&mut self) {
        let now = self.now;
        let bin = self.sc.metrics.bin;
        self.down.link.advance(now);
        self.drain_down_drops();
        while let Some(dep) = self.down.link.pop_departure() {
            let seg = dep.item;
            let i = seg.flow as usize;
            self.count.data_delivered += 1;
            let t = dep.departed_at;
            let owd = t.saturating_since(seg.sent_at);
            let qdelay = t.saturating_since(dep.enqueued_at);
            let charged = dep.ip_len + self.down.framing;
            self.metrics[i].on_egress(t, dep.ip_len, charged, owd, qdelay, bin);
            self.all.on_egress(t, dep.ip_len, charged, owd, qdelay, bin);
            if let Some(log) = self.log.as_mut() {
                log.departure(t, charged, qdelay);
            }
            let Some(r) = self.flows[i].receiver.as_mut() else {
                continue;
            };
            let out = r.on_data(t, &seg);
            if out.delivered_bytes > 0 {
                self.metrics[i].on_app_delivered(t, out.delivered_bytes, bin);
                self.all.on_app_delivered(t, out.delivered_bytes, bin);
                if let crate::tcp::App::Bytes(n) = self.sc.flows[i].app {
                    if self.metrics[i].app_bytes >= n {
                        self.metrics[i].completed_at.get_or_insert(t);
                    }
                }
            }
            if let Some(a) = out.ack {
                self.send_ack(a);
            }
            self.arm_receiver(seg.flow);
        }
        self.arm_down_link();
    }

    fn send_ack(&mut self, ack: AckSegment) {
        self.count.acks_sent += 1;
        if self.up.loss.drops(&mut self.up.rng) {
            self.count.acks_dropped += 1;
            return;
        }
        let now = self.now;
        let ip_len = ack.ip_len();
        if let EnqueueResult::Dropped(_) = self.up.link.enqueue(now, ack, ip_len) {
            self.count.acks_dropped += 1;
        }
        self.service_up();
    }

    fn service_up(&mut self) {
        let now = self.now;
        self.up.link.advance(now);
        while self.up.link.pop_drop().is_some() {
            self.count.acks_dropped += 1;
        }
        while let Some(dep) = self.up.link.pop_departure() {
            if self.up.delay.is_zero() {
                self.deliver_ack(dep.item);
            } else {
                self.up.delay_line.push(dep.departed_at, dep.item);
            }
        }
        self.arm_up_delay();
        self.arm_up_link();
    }

    fn deliver_ack(&mut self, ack: AckSegment) {
        self.count.acks_delivered += 1;
        let i = ack.flow;
        let now = self.now;
        if let Some(s) = self.flows[i as usize].sender.as_mut() {
            let mut obs = Observer {
                flow: &mut self.metrics[i as usize],
                all: &mut self.all,
            };
            s.on_ack(now, &ack, &mut obs);
        }
        self.pump_sender(i);
    }

    fn sample(&mut self) {
        let now = self.now;
        let bin = self.sc.metrics.bin;
        for (i, f) in self.flows.iter().enumerate() {
            if let Some(s) = f.sender.as_ref() {
                let sock = s.sock();
                let sample = SenderSample {
                    cwnd: sock.cwnd,
                    ssthresh: sock.ssthresh,
                    pacing_bps: sock.pacing_rate,
                    srtt: sock.srtt,
                    inflight: sock.packets_in_flight(),
                };
                self.metrics[i].sample(now, bin, &sample);
            }
        }
        self.link_series.push((
            self.down.link.queued_packets() as u64,
            self.down.link.queued_bytes(),
        ));
        self.push(now + bin, Event::Sample);
    }

    fn finish(mut self) -> SimOutput {
        let end = self.end;
        let bin = self.sc.metrics.bin;
        let first_start = self
            .flows
            .iter()
            .map(|f| f.start)
            .min()
            .unwrap_or(Time::ZERO);
        let mut summary = Vec::with_capacity(self.flows.len() + 1);
        for (i, f) in self.flows.iter().enumerate() {
            let m = &self.metrics[i];
            let stop = m.completed_at.unwrap_or(end);
            let active = stop.saturating_since(f.start);
            let cap = self.down.link.capacity_bytes(f.start, stop);
            summary.push(m.summary(i as i64, &f.scheme, f.start, active, Some(cap)));
        }
        let cap_all = self.down.link.capacity_bytes(first_start, end);
        let schemes: Vec<&str> = self.flows.iter().map(|f| f.scheme.as_str()).collect();
        let mut scheme_all = schemes.clone();
        scheme_all.dedup();
        let all_label = if scheme_all.len() == 1 {
            scheme_all[0].to_string()
        } else {
            "all".to_string()
        };
        let all_row = self.all.summary(
            -1,
            &all_label,
            first_start,
            end.saturating_since(first_start),
            Some(cap_all),
        );
        let link = LinkSummary {
            downlink: self.sc.downlink.label.clone(),
            uplink: self.sc.uplink.label.clone(),
            capacity_mbps: {
                let secs = end.saturating_since(first_start).as_secs_f64();
                if secs > 0.0 {
                    cap_all as f64 * 8.0 / secs / 1e6
                } else {
                    0.0
                }
            },
            utilisation: all_row.utilisation,
            delivered_mbps: all_row.pantheon_throughput_mbps.unwrap_or(0.0),
            drops: all_row.drops,
        };
        summary.push(all_row);

        let bins = (end.as_ns().div_ceil(bin.as_ns())) as usize;
        let mut ts = TimeSeries::default();
        for (i, f) in self.flows.iter().enumerate() {
            let from = (f.start.as_ns() / bin.as_ns()) as usize;
            ts.push_flow(i as i64, &self.metrics[i], bin, from, bins);
        }
        let secs = bin.as_secs_f64();
        for b in 0..bins {
            let t0 = Time(b as u64 * bin.as_ns());
            let t1 = Time(((b as u64 + 1) * bin.as_ns()).min(end.as_ns()));
            let cap = self.down.link.capacity_bytes(t0, t1) as f64 * 8.0
                / t1.saturating_since(t0).as_secs_f64().max(1e-12)
                / 1e6;
            let egress = self.all.bin_egress_bytes(b) as f64 * 8.0 / secs / 1e6;
            let q = self.link_series.get(b).copied().unwrap_or((0, 0));
            ts.push_link(b as f64 * secs, egress, Some(cap), q);
        }
        let packet_log = self.log.take().map(|l| l.finish(end));
        let mut conservation = self.count;
        conservation.data_in_network = (self.down.delay_line.len()
            + self.down.link.queued_packets()
            + usize::from(self.down.link.has_packet_in_transit()))
            as u64;
        conservation.acks_in_network = (self.up.delay_line.len()
            + self.up.link.queued_packets()
            + usize::from(self.up.link.has_packet_in_transit()))
            as u64;
        SimOutput {
            summary,
            timeseries: ts,
            link,
            events: self.events,
            packet_log,
            conservation,
        }
    }
}

/// Run a scenario to completion.
pub fn run(sc: &Scenario) -> SimOutput {
    Simulation::new(sc)
        .run(&mut |_| true)
        .expect("a run without a cancelling callback completes")
}
