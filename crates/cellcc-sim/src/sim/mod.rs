//! The discrete-event loop: flows, paths and the order in which things happen.
//!
//! Topology (Mahimahi's `mm-delay D mm-link UP DOWN` with the sender outside, extended
//! with optional cellular stages):
//!
//! ```text
//!  sender ─loss─► [wired bottleneck] ─► delay(down) ─► radio queue ─► radio service ─┐
//!                                                                                     │
//!                                  receiver ◄─ [downlink gate, HARQ, jitter] ◄────────┘
//!                                     │
//!  sender ◄─ delay(up) ◄─ [grant gate, HARQ, jitter] ◄─ uplink service ◄─ queue ◄─loss┘ (ACKs)
//! ```
//!
//! Data is delayed, then queued (`mm-delay` outside `mm-link`); ACKs are queued on the
//! uplink, then delayed. The picture shows a downlink flow; an uplink flow's sender sits
//! at the UE, so its data takes the uplink path and its ACKs the downlink path. Either
//! path carries [`Packet`]s of both kinds in one order, so they share every queue. Stages in brackets exist only when the scenario asks for them;
//! a plain scenario runs exactly the Mahimahi pipeline. The radio is one link per UE, or
//! a shared cell whose scheduler serves the UEs' queues. Events are ordered by
//! `(time, sequence)`: ties run in the order they were scheduled, so a run is a pure
//! function of the scenario and seed.

mod background;
mod delivery;
mod finish;
mod flows;
mod handshake;
mod path;
mod radio;
mod step;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use cellcc_link::mmlog::{LogHeader, MmLog, OpportunityCursor};
use cellcc_link::{
    Cell, Delay, DownlinkGate, Harq, Jitter, Link, LinkService, LossModel, UplinkGrant,
};
use cellcc_units::{Dur, Time};
use rand_chacha::ChaCha8Rng;

use crate::control::{self, ControlError, ExternalSchemes, FlowControl, IntervalFold};
use crate::metrics::{FlowMetrics, SenderSample};
use crate::packet::{AckStore, DataSegment, DownPacket, Packet, UpPacket};
use crate::rng::{self, StageKind, Stream};
use crate::scenario::{Direction, LinkConfig, Scenario};
use crate::schemes;
use crate::tcp::{App, SenderObserver, TcpReceiver, TcpSender};
use crate::traffic::{BackgroundSource, ShortFlow, ShortFlowArrivals, UdpSource};

pub use finish::{AckRecord, CcInfo, Conservation, LinkSummary, ShortFlowRecord, SimOutput};
use path::{BoxedStage, Chain};
use radio::RadioLink;
pub use step::{RunError, Step};

/// Events between progress callbacks.
const PROGRESS_EVERY: u64 = 1 << 14;

/// Which chain of stages an event belongs to. UE indices are 16 bits (cells hold at
/// most `MAX_UES`) so that an [`Event`] stays 8 bytes: the event heap is the hottest
/// data structure of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum ChainId {
    /// Shared downlink stages before the radio (wired bottleneck, propagation delay).
    DownPre,
    /// Per-UE downlink stages after the radio.
    DownPost(u16),
    /// Per-UE uplink stages after the uplink radio (ending with the propagation delay).
    UpPost(u16),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    FlowStart(u32),
    SenderTimer(u32),
    ReceiverTimer(u32),
    Stage(ChainId, u16),
    DownRadio,
    UpRadio(u32),
    /// A background UDP source's next packet.
    Udp(u32),
    /// A background short-flow generator's next arrival.
    ShortArrival(u32),
    Sample,
    /// An interval boundary of a flow under per-interval control ([`crate::control`]).
    Control(u32),
}

const _: () = assert!(std::mem::size_of::<Event>() == 8, "keep heap entries small");

/// A run was stopped by its progress callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("simulation cancelled")]
pub struct Cancelled;

/// Where a flow comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    /// `flows[i]` of the scenario.
    Scenario(usize),
    /// A short TCP flow of `background[i]`; `record` indexes the output's list.
    Short { background: usize, record: usize },
    /// The packets of UDP source `background[i]` (no TCP endpoints).
    Udp(usize),
}

struct Flow {
    scheme: String,
    start: Time,
    ue: u32,
    /// The direction of the data; ACKs take the other one.
    dir: Direction,
    origin: Origin,
    app: App,
    sender: Option<TcpSender>,
    receiver: Option<TcpReceiver>,
    sender_timer: Option<Time>,
    receiver_timer: Option<Time>,
    /// Per-interval control, for external schemes that asked for it.
    control: Option<FlowControl>,
    /// The handshake's state (`[tcp] handshake`), kept after it for stray SYN-ACKs.
    conn: Option<Box<handshake::Connection>>,
}

impl Flow {
    /// A flow that has not started: no endpoints, timers or control yet.
    fn new(scheme: String, start: Time, ue: u32, dir: Direction, origin: Origin, app: App) -> Self {
        Flow {
            scheme,
            start,
            ue,
            dir,
            origin,
            app,
            sender: None,
            receiver: None,
            sender_timer: None,
            receiver_timer: None,
            control: None,
            conn: None,
        }
    }
}

/// Records sender events into a flow's metrics.
struct Observer<'a> {
    flow: &'a mut FlowMetrics,
    all: &'a mut FlowMetrics,
    last_rtt: Option<Dur>,
    /// The flow's per-interval measurements, under per-interval control.
    fold: Option<&'a mut IntervalFold>,
}

impl SenderObserver for Observer<'_> {
    fn rtt_sample(&mut self, _now: Time, rtt: Dur) {
        if let Some(fold) = self.fold.as_mut() {
            fold.rtt(rtt);
        }
        // The aggregate's RTT distribution is merged from the flows' at the end.
        self.flow.rtt.record(rtt);
        self.last_rtt = Some(rtt);
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

/// A packet after its direction's radio: when it entered the radio queue (for queueing
/// delay).
#[derive(Clone, Debug)]
struct Carried<P> {
    pkt: P,
    queued_at: Time,
}

/// The downlink radio: one link, or a shared cell.
struct Radio {
    link: RadioLink,
    timer: Option<Time>,
}

/// One UE's uplink radio.
struct UpRadio {
    link: Link<UpPacket>,
    timer: Option<Time>,
}

/// The aggregate a flow's counters also go to: `all` (the scenario's downlink flows),
/// `all_up` (its uplink flows) or `bg` (background traffic).
fn aggregate<'a>(
    origin: Origin,
    dir: Direction,
    all: &'a mut FlowMetrics,
    all_up: &'a mut FlowMetrics,
    bg: &'a mut FlowMetrics,
) -> &'a mut FlowMetrics {
    match (origin, dir) {
        (Origin::Scenario(_), Direction::Down) => all,
        (Origin::Scenario(_), Direction::Up) => all_up,
        _ => bg,
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

/// A chain of `stages` followed by a fixed `delay` (none when zero); a bare delay takes
/// the chain's fast path.
fn ending_in_delay<T: Send + 'static>(mut stages: Vec<BoxedStage<T>>, delay: Dur) -> Chain<T> {
    if delay.is_zero() {
        return Chain::new(stages);
    }
    if stages.is_empty() {
        return Chain::delay(delay);
    }
    stages.push(Box::new(Delay::new(delay)));
    Chain::new(stages)
}

/// A part of a scenario that cannot be built, as a [`RunError::Invalid`] naming it.
/// [`Scenario::parse`] refuses every such scenario; one built by hand may still be.
fn invalid(what: &str, e: impl std::fmt::Display) -> RunError {
    RunError::Invalid(format!("{what}: {e}"))
}

/// A direction's radio link: its service and queue, with its outages; `queue_seed`
/// feeds a randomised queue discipline (PIE).
fn radio_link<T>(cfg: &LinkConfig, queue_seed: u64, what: &str) -> Result<Link<T>, RunError> {
    let mut link = Link::try_with_seed(cfg.service.clone(), cfg.queue.clone(), queue_seed)
        .map_err(|e| invalid(what, e))?;
    link.set_outages(cfg.outages.clone());
    Ok(link)
}

/// The seed of a queue's own random stream.
fn queue_seed(sc: &Scenario, downlink: bool, ue: u32, wired: bool) -> u64 {
    use rand_core::Rng;
    rng::stream(
        sc.seed,
        Stream::Queue {
            downlink,
            ue,
            wired,
        },
    )
    .next_u64()
}

fn build_loss(cfg: &LinkConfig, what: &str) -> Result<LossModel, RunError> {
    cfg.loss.build().map_err(|e| invalid(what, e))
}

/// HARQ retransmission delay, then jitter, after a direction's radio link.
fn radio_impairments<T: Send + 'static>(
    sc: &Scenario,
    cfg: &LinkConfig,
    downlink: bool,
    ue: u32,
    stages: &mut Vec<BoxedStage<T>>,
) -> Result<(), RunError> {
    let stream = |kind| rng::stream(sc.seed, Stream::Stage { downlink, ue, kind });
    let dir = if downlink { "downlink" } else { "uplink" };
    if let Some(h) = &cfg.harq {
        let harq = Harq::new(*h, stream(StageKind::Harq))
            .map_err(|e| invalid(&format!("{dir}.harq"), e))?;
        stages.push(Box::new(harq));
    }
    if let Some(j) = &cfg.jitter {
        let jitter = Jitter::new(*j, stream(StageKind::Jitter))
            .map_err(|e| invalid(&format!("{dir}.jitter"), e))?;
        stages.push(Box::new(jitter));
    }
    Ok(())
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
    down_loss: LossModel,
    down_rng: ChaCha8Rng,
    up_loss: LossModel,
    up_rng: ChaCha8Rng,
    down_pre: Chain<DownPacket>,
    radio: Radio,
    down_post: Vec<Chain<Carried<DownPacket>>>,
    up_radio: Vec<UpRadio>,
    up_post: Vec<Chain<Carried<UpPacket>>>,
    /// Charged bytes on top of the IP length on the radio links (4 on trace links).
    /// Per UE (the packet log only exists without a cell, where there is one UE).
    down_framing: Vec<u32>,
    /// The same for the uplink (every UE's uplink is a copy of `[uplink]`).
    up_framing: u32,
    /// Aggregate of the scenario's uplink flows (`all` holds its downlink flows).
    all_up: FlowMetrics,
    /// The ACKs of uplink flows while they cross the downlink (which carries
    /// [`AckRef`]s to them); its length is the number of ACKs in the downlink path.
    down_acks: AckStore,
    /// Data packets of uplink flows inside the uplink path, counted in and out: with
    /// `down_acks`, what lets the packet-conservation check split what each direction's
    /// stages hold into data and ACKs.
    up_data_in_network: u64,
    wakeups: Vec<(u16, Time)>,
    /// The downlink radio link's mm-link log (`[metrics] packet_log`), in memory: its
    /// writes cannot fail, so their results are ignored.
    log: Option<MmLog<Vec<u8>>>,
    ack_log: Option<Vec<AckRecord>>,
    link_series: Vec<(u64, u64)>,
    count: Conservation,
    /// Aggregate of the background flows (kept out of the scenario flows' `all`).
    bg: FlowMetrics,
    udp: Vec<(UdpSource, u32)>,
    /// Short-flow generators: arrivals, the next flow, and the `background[]` index.
    short: Vec<(ShortFlowArrivals, Option<ShortFlow>, usize)>,
    short_flows: Vec<ShortFlowRecord>,
    /// Builds the algorithms of external schemes ([`crate::control`]).
    external: Option<Box<dyn ExternalSchemes>>,
    /// Raised by an external congestion control that failed: the run stops.
    abort: Option<Arc<AtomicBool>>,
    /// The flow whose decision [`Simulation::step`] returned and nobody gave yet.
    awaiting: Option<u32>,
    /// What ended the run from inside an event (an external scheme that failed to build).
    failure: Option<ControlError>,
}

/// Return an emptied list to its slot unless the slot holds a larger one.
fn give_back<T>(slot: &mut Vec<T>, list: Vec<T>) {
    debug_assert!(list.is_empty());
    if slot.is_empty() && slot.capacity() < list.capacity() {
        *slot = list;
    }
}

impl<'s> Simulation<'s> {
    /// A simulation of `sc` at time zero, with every flow's start and source scheduled.
    /// A scenario that [`Scenario::parse`] would refuse (one built by hand) may be a
    /// [`RunError::Invalid`].
    pub fn new(sc: &'s Scenario) -> Result<Self, RunError> {
        if sc.metrics.bin.is_zero() {
            return Err(invalid("metrics.bin_ms", "the bin width is 0 ns"));
        }
        let end = Time::ZERO + sc.duration;
        let log = sc.metrics.packet_log.then(|| {
            let header = LogHeader {
                program: "cellcc",
                direction: "downlink",
                command_line: None,
                queue: format!("{:?}", sc.downlink.queue),
                init_timestamp_ms: 0,
            };
            let opportunities = OpportunityCursor::for_service(&sc.downlink.service);
            MmLog::new(Vec::new(), &header, opportunities).expect("writes to memory")
        });
        let ues = sc.cell.as_ref().map_or(1, |c| c.ues.len() as u32);
        let mut down_pre: Vec<BoxedStage<DownPacket>> = Vec::new();
        if let Some(w) = &sc.wired {
            let link = Link::<DownPacket>::try_with_seed(
                LinkService::constant(w.rate),
                w.queue.clone(),
                queue_seed(sc, true, 0, true),
            )
            .map_err(|e| invalid("wired", e))?;
            down_pre.push(Box::new(link));
        }
        let down_post = (0..ues)
            .map(|u| {
                let mut stages: Vec<BoxedStage<Carried<_>>> = Vec::new();
                if let Some(s) = &sc.scheduling {
                    let gate =
                        DownlinkGate::new(&s.downlink).map_err(|e| invalid("scheduling", e))?;
                    stages.push(Box::new(gate));
                }
                radio_impairments(sc, &sc.downlink, true, u, &mut stages)?;
                Ok(Chain::new(stages))
            })
            .collect::<Result<_, RunError>>()?;
        let up_post = (0..ues)
            .map(|u| {
                let mut stages: Vec<BoxedStage<Carried<_>>> = Vec::new();
                if let Some(s) = &sc.scheduling {
                    let gate = UplinkGrant::new(&s.uplink).map_err(|e| invalid("scheduling", e))?;
                    stages.push(Box::new(gate));
                }
                radio_impairments(sc, &sc.uplink, false, u, &mut stages)?;
                Ok(ending_in_delay(stages, sc.uplink.delay))
            })
            .collect::<Result<_, RunError>>()?;
        let radio = match &sc.cell {
            None => RadioLink::Link(Box::new(radio_link(
                &sc.downlink,
                queue_seed(sc, true, 0, false),
                "downlink",
            )?)),
            Some(spec) => RadioLink::Cell(Box::new(
                Cell::try_with_seed(spec.clone(), queue_seed(sc, true, 0, false))
                    .map_err(|e| invalid("cell", e))?,
            )),
        };
        let up_radio = (0..ues)
            .map(|u| {
                Ok(UpRadio {
                    link: radio_link(&sc.uplink, queue_seed(sc, false, u, false), "uplink")?,
                    timer: None,
                })
            })
            .collect::<Result<_, RunError>>()?;
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
                .enumerate()
                .map(|(i, f)| {
                    let start = Time::ZERO + f.start;
                    let origin = Origin::Scenario(i);
                    Flow::new(f.scheme.clone(), start, f.ue, f.direction, origin, f.app)
                })
                .collect(),
            metrics: vec![FlowMetrics::default(); sc.flows.len()],
            all: FlowMetrics::default(),
            down_loss: build_loss(&sc.downlink, "downlink.loss")?,
            down_rng: rng::stream(sc.seed, Stream::DownlinkLoss),
            up_loss: build_loss(&sc.uplink, "uplink.loss")?,
            up_rng: rng::stream(sc.seed, Stream::UplinkLoss),
            down_pre: ending_in_delay(down_pre, sc.downlink.delay),
            radio: Radio {
                link: radio,
                timer: None,
            },
            down_post,
            up_radio,
            up_post,
            down_framing: match &sc.cell {
                None => vec![sc.downlink.service.framing_bytes()],
                Some(spec) => spec.ues.iter().map(|u| u.channel.framing_bytes()).collect(),
            },
            up_framing: sc.uplink.service.framing_bytes(),
            all_up: FlowMetrics::default(),
            up_data_in_network: 0,
            down_acks: AckStore::default(),
            wakeups: Vec::new(),
            log,
            ack_log: sc.metrics.ack_log.then(Vec::new),
            link_series: Vec::new(),
            count: Conservation::default(),
            bg: FlowMetrics::without_series(),
            udp: Vec::new(),
            short: Vec::new(),
            short_flows: Vec::new(),
            external: None,
            abort: None,
            awaiting: None,
            failure: None,
        };
        for (i, f) in sc.flows.iter().enumerate() {
            sim.push(Time::ZERO + f.start, Event::FlowStart(i as u32));
        }
        for (k, b) in sc.background.iter().enumerate() {
            let rng = rng::stream(sc.seed, Stream::Background(k as u32));
            let bad = |e: crate::traffic::TrafficConfigError| {
                invalid(&format!("background[{k}].source.{}", e.field), e.reason)
            };
            match &b.source {
                BackgroundSource::Cbr(c) => {
                    let src = UdpSource::cbr(c).map_err(bad)?;
                    sim.add_udp(k, b.ue, src);
                }
                BackgroundSource::OnOff(c) => {
                    let src = UdpSource::on_off(c, rng).map_err(bad)?;
                    sim.add_udp(k, b.ue, src);
                }
                BackgroundSource::ShortFlows(c) => {
                    let mut arrivals = ShortFlowArrivals::new(c, rng).map_err(bad)?;
                    let first = arrivals.next_flow();
                    let idx = sim.short.len() as u32;
                    if let Some(f) = &first {
                        sim.push(f.start, Event::ShortArrival(idx));
                    }
                    sim.short.push((arrivals, first, k));
                }
            }
        }
        sim.push(Time::ZERO + sc.metrics.bin, Event::Sample);
        Ok(sim)
    }

    fn push(&mut self, t: Time, ev: Event) {
        self.seq += 1;
        self.queue.push(Reverse((t, self.seq, ev)));
    }

    fn dispatch(&mut self, t: Time, ev: Event) {
        match ev {
            Event::FlowStart(i) => self.start_or_fail(i),
            Event::SenderTimer(i) => {
                let f = &mut self.flows[i as usize];
                if f.sender_timer != Some(t) {
                    return; // superseded by an earlier or later wake-up
                }
                f.sender_timer = None;
                if let Some(s) = f.sender.as_mut() {
                    // Background flows' timer events count into `all`, as they always
                    // have (kept so that existing results do not change).
                    let all = match f.dir {
                        Direction::Down => &mut self.all,
                        Direction::Up => &mut self.all_up,
                    };
                    let mut obs = Observer {
                        flow: &mut self.metrics[i as usize],
                        all,
                        last_rtt: None,
                        fold: f.control.as_mut().and_then(|c| c.fold.as_mut()),
                    };
                    s.on_timer(t, &mut obs);
                } else {
                    self.connector_timer(i);
                }
                self.pump_sender(i);
            }
            Event::ReceiverTimer(i) => {
                let f = &mut self.flows[i as usize];
                if f.receiver_timer != Some(t) {
                    return;
                }
                f.receiver_timer = None;
                match f.receiver.as_mut() {
                    Some(r) => {
                        if let Some(a) = r.on_timer(t) {
                            self.send_ack(i, a);
                        }
                    }
                    None => self.acceptor_timer(i),
                }
                self.arm_receiver(i);
            }
            Event::Stage(ChainId::DownPre, _) if self.down_pre.is_delay() => {
                if !self.down_pre.take_delay_timer(t) {
                    return;
                }
                while let Some(r) = self.down_pre.pop_delayed(t) {
                    self.enqueue_radio(r.at, r.item, r.ip_len);
                }
                if let Some(w) = self.down_pre.rearm_delayed(t) {
                    self.push(w, Event::Stage(ChainId::DownPre, 0));
                }
            }
            Event::Stage(ChainId::UpPost(u), _) if self.up_post[u as usize].is_delay() => {
                if !self.up_post[u as usize].take_delay_timer(t) {
                    return;
                }
                while let Some(r) = self.up_post[u as usize].pop_delayed(t) {
                    self.exit_up(r.at, r.item, r.ip_len);
                }
                if let Some(w) = self.up_post[u as usize].rearm_delayed(t) {
                    self.push(w, Event::Stage(ChainId::UpPost(u), 0));
                }
            }
            Event::Stage(id, idx) => {
                let mut wakeups = std::mem::take(&mut self.wakeups);
                match id {
                    ChainId::DownPre => self.down_pre.wake(t, idx, &mut wakeups),
                    ChainId::DownPost(u) => self.down_post[u as usize].wake(t, idx, &mut wakeups),
                    ChainId::UpPost(u) => self.up_post[u as usize].wake(t, idx, &mut wakeups),
                }
                self.schedule_stages(id, &mut wakeups);
                self.wakeups = wakeups;
                self.drain_chain(id);
            }
            Event::DownRadio => {
                if self.radio.timer != Some(t) {
                    return;
                }
                self.radio.timer = None;
                self.service_radio();
            }
            Event::UpRadio(u) => {
                let r = &mut self.up_radio[u as usize];
                if r.timer != Some(t) {
                    return;
                }
                r.timer = None;
                self.service_up(u);
            }
            Event::Udp(k) => self.send_udp(k),
            Event::ShortArrival(k) => self.short_arrival(k),
            Event::Sample => self.sample(),
            Event::Control(_) => unreachable!("boundaries are handled by Simulation::step"),
        }
    }

    fn schedule_stages(&mut self, id: ChainId, wakeups: &mut Vec<(u16, Time)>) {
        for (idx, t) in wakeups.drain(..) {
            self.push(t, Event::Stage(id, idx));
        }
    }

    /// Hand what left chain `id` (and what it dropped) to the next element.
    fn drain_chain(&mut self, id: ChainId) {
        // The exit and drop lists are taken while their packets are handled (handling
        // may re-enter this chain), then handed back so their capacity is reused and
        // steady-state runs allocate nothing here.
        match id {
            ChainId::DownPre => {
                if !self.down_pre.drops.is_empty() {
                    for (_, d) in std::mem::take(&mut self.down_pre.drops) {
                        self.drop_down(&d.item);
                    }
                }
                let mut exits = std::mem::take(&mut self.down_pre.exits);
                for r in exits.drain(..) {
                    self.enqueue_radio(r.at, r.item, r.ip_len);
                }
                give_back(&mut self.down_pre.exits, exits);
            }
            ChainId::DownPost(u) => {
                let chain = &mut self.down_post[u as usize];
                let drops = std::mem::take(&mut chain.drops);
                let mut exits = std::mem::take(&mut chain.exits);
                for (_, d) in drops {
                    self.drop_down(&d.item.pkt);
                }
                for r in exits.drain(..) {
                    self.exit_down(r.at, r.item, r.ip_len);
                }
                give_back(&mut self.down_post[u as usize].exits, exits);
            }
            ChainId::UpPost(u) => {
                let chain = &mut self.up_post[u as usize];
                if !chain.drops.is_empty() {
                    for (_, d) in std::mem::take(&mut chain.drops) {
                        self.drop_up(&d.item.pkt);
                    }
                }
                let mut exits = std::mem::take(&mut self.up_post[u as usize].exits);
                for r in exits.drain(..) {
                    self.exit_up(r.at, r.item, r.ip_len);
                }
                give_back(&mut self.up_post[u as usize].exits, exits);
            }
        }
    }

    fn sample(&mut self) {
        let now = self.now;
        let bin = self.sc.metrics.bin;
        for (i, f) in self.flows.iter().enumerate() {
            if !matches!(f.origin, Origin::Scenario(_)) {
                continue;
            }
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
            self.radio.link.queued_packets() as u64,
            self.radio.link.queued_bytes(),
        ));
        self.push(now + bin, Event::Sample);
    }
}

/// Run a scenario of built-in schemes to completion.
pub fn run(sc: &Scenario) -> Result<SimOutput, RunError> {
    Simulation::new(sc)?.run(&mut |_| true)
}
