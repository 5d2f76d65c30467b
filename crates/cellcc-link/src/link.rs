//! One direction of a bottleneck link: a queue discipline in front of a service model
//! ([`LinkService`]), carrying opaque items with an explicit charged size.
//!
//! Sans-I/O: the caller passes `now` into every call and collects results from two
//! outboxes ([`Link::pop_departure`], [`Link::pop_drop`]). Calling [`Link::advance`] at
//! [`Link::next_wakeup`] is the efficient pattern, but any later call gives the same
//! departures with the same `departed_at` times.
//!
//! Trace links reproduce Mahimahi's `LinkQueue::rationalize` (ravinet/mahimahi
//! `src/frontend/link_queue.cc`):
//!
//! ```text
//!  enqueue(now) ─► advance(now): serve every opportunity at ts <= now, in order
//!                     each opportunity: 1504-byte budget
//!                       ├─ finish the packet in transit, then dequeue and send more
//!                       ├─ a packet completed here departs at ts
//!                       └─ budget left with an empty queue is wasted
//!              ─► then offer the packet to the queue (it can only use ts > now)
//! ```
//!
//! Differences from Mahimahi:
//! 1. Time is in nanoseconds, not whole milliseconds. Because opportunities fall on whole
//!    milliseconds, "serve opportunities at or before `now`, then enqueue" gives the same
//!    result as Mahimahi's floor-to-ms clock: an arrival at 1.0 ms or 1.7 ms cannot use
//!    the opportunity at 1 ms, an arrival at 0.999 ms can.
//! 2. Runs of opportunities with nothing to send are skipped arithmetically (O(log n))
//!    instead of one by one; the result is identical (they are wasted either way).
//! 3. A packet larger than an opportunity is refused (`DropReason::TooBig`) instead of
//!    aborting the emulator.
//!
//! Outages ([`Link::set_outages`], `impair/outage.rs`): inside an outage window the link
//! serves nothing. Trace opportunities in the window are never offered (counted in
//! [`LinkStats::opportunities_in_outage`], not in `opportunities`); a constant-rate link
//! pauses, so the packet on the wire finishes the window's length later (its serialiser
//! runs on *service time*, wall time minus outage time). In a `stall` window arrivals
//! queue as usual. In a `drop` window (radio link failure) the queue and the packet in
//! transit are flushed at the window start, and every arrival in the window is lost; both
//! go to the drop queue ([`Link::pop_drop`]) and are counted in
//! [`LinkStats::drops_outage`]. [`Link::capacity_bytes`] counts nothing inside windows.

use std::collections::VecDeque;

use cellcc_units::{Dur, Time};

use crate::discipline::{Discipline, QueueSpec};
use crate::impair::{OutageKind, Outages};
use crate::queue::{DropReason, DroppedPacket, PacketQueue, Queued};
use crate::service::{LinkConfigError, LinkService, Opportunities, Serializer};
use crate::trace::OPPORTUNITY_BYTES;

/// A packet that has left the link.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Departure<T> {
    /// The caller's payload, as enqueued.
    pub item: T,
    /// IP length as given to `enqueue`.
    pub ip_len: u32,
    /// When the queue accepted it.
    pub enqueued_at: Time,
    /// The opportunity that completed it (trace) or when its last bit left (constant).
    pub departed_at: Time,
}

/// Outcome of [`Link::enqueue`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use = "a dropped item is handed back and would otherwise be lost silently"]
pub enum EnqueueResult<T> {
    /// Taken by the link: it will depart, or appear in [`Link::pop_drop`] (drop-head,
    /// AQM, or an arrival during a `drop` outage, which is lost at once).
    Accepted,
    /// Refused and handed back: `QueueFull` (drop-tail limit), or `TooBig` when `ip_len`
    /// exceeds [`Link::max_ip_len`]. [`LinkStats`] counts the two separately. Drop-head
    /// drops of *other* packets go to [`Link::pop_drop`] instead.
    Dropped(T),
}

/// Counters since the link was built. Opportunity counters cover the opportunities up to
/// the last `advance`/`enqueue` call.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LinkStats {
    /// Packets the queue accepted.
    pub packets_accepted: u64,
    /// Packets that finished crossing the link.
    pub packets_departed: u64,
    /// IP bytes of departed packets.
    pub ip_bytes_departed: u64,
    /// Charged bytes (IP + framing) of departed packets.
    pub charged_bytes_departed: u64,
    /// Arrivals a drop-tail limit rejected.
    pub drops_queue_full: u64,
    /// Packets pushed out of the head of a drop-head queue.
    pub drops_head: u64,
    /// Arrivals whose charged size exceeds one delivery opportunity.
    pub drops_too_big: u64,
    /// Packets dropped by CoDel (at dequeue) or PIE (random early drop at arrival);
    /// each also appears in [`Link::pop_drop`].
    #[serde(default)]
    pub drops_aqm: u64,
    /// Packets lost to `drop` outages: flushed at the window start or arriving inside
    /// it. Each also appears in [`Link::pop_drop`]. Bytes of a flushed packet already
    /// sent on a trace link count as carried in the `wasted_bytes` balance below.
    #[serde(default)]
    pub drops_outage: u64,
    /// Trace links: opportunities elapsed outside outages, used or not. Always 0 on
    /// constant links.
    pub opportunities: u64,
    /// Trace links: opportunities that carried at least one byte.
    pub opportunities_used: u64,
    /// Trace links: opportunity bytes with nothing to carry (the queue was empty).
    /// `opportunities × 1504 = wasted_bytes + bytes carried`, where bytes carried are the
    /// charged bytes departed plus the part already sent of the packet in transit.
    pub wasted_bytes: u64,
    /// Trace links: opportunities that fell inside an outage and were never offered.
    #[serde(default)]
    pub opportunities_in_outage: u64,
}

/// A packet part-way through a trace link.
#[derive(Debug)]
struct Partial<T> {
    packet: Queued<T>,
    bytes_left: u32,
}

#[derive(Debug)]
enum Engine<T> {
    Trace {
        opportunities: Opportunities,
        in_transit: Option<Partial<T>>,
    },
    Constant {
        serializer: Serializer,
        in_transit: Option<(Queued<T>, Time)>,
    },
}

/// One direction of a bottleneck: queue + service. See the module docs.
#[derive(Debug)]
pub struct Link<T> {
    service: LinkService,
    engine: Engine<T>,
    queue: Discipline<T>,
    departures: VecDeque<Departure<T>>,
    drops: VecDeque<DroppedPacket<T>>,
    stats: LinkStats,
    outages: OutageState,
}

/// The link's outage windows and how far their `drop` flushes have been applied.
#[derive(Debug, Default)]
struct OutageState {
    schedule: Outages,
    /// Index in `schedule` of the first window whose start has not been processed.
    next_start: usize,
}

/// The reason given to packets lost to a `drop` outage.
///
/// `DropReason` has no outage variant yet (adding one is a change to `queue.rs` and to
/// every exhaustive match on it); until it does, these drops carry `QueueFull` and are
/// told apart by [`LinkStats::drops_outage`], which counts them alone.
const OUTAGE_DROP: DropReason = DropReason::QueueFull;

impl<T> Link<T> {
    /// Builds a link.
    ///
    /// # Panics
    /// If the configuration is invalid (zero rate, a droptail/drophead queue without a
    /// limit or with a zero limit). Configuration coming from users should be checked with
    /// [`LinkService::validate`] and [`QueueSpec::validate`], or built with
    /// [`Link::try_new`].
    pub fn new(service: LinkService, queue: QueueSpec) -> Self {
        Self::try_new(service, queue).unwrap_or_else(|e| panic!("invalid link configuration: {e}"))
    }

    /// Builds a link whose queue, if it draws random numbers (PIE), uses the fixed seed
    /// [`Link::DEFAULT_QUEUE_SEED`]; see [`Link::try_with_seed`].
    pub fn try_new(service: LinkService, queue: QueueSpec) -> Result<Self, LinkConfigError> {
        Self::try_with_seed(service, queue, Self::DEFAULT_QUEUE_SEED)
    }

    /// Seed of the queue's random stream for [`Link::new`] and [`Link::try_new`].
    pub const DEFAULT_QUEUE_SEED: u64 = 0;

    /// Builds a link whose queue draws its random decisions (PIE's early drops) from a
    /// ChaCha8 stream seeded with `seed`: the same seed gives the same drops.
    pub fn try_with_seed(
        service: LinkService,
        queue: QueueSpec,
        seed: u64,
    ) -> Result<Self, LinkConfigError> {
        service.validate()?;
        let queue = queue.build(seed)?;
        let engine = match &service {
            LinkService::Trace { trace, mode } => Engine::Trace {
                opportunities: Opportunities::new(trace.clone(), *mode),
                in_transit: None,
            },
            LinkService::Constant { rate, .. } => Engine::Constant {
                serializer: Serializer::new(*rate),
                in_transit: None,
            },
        };
        Ok(Link {
            service,
            engine,
            queue,
            departures: VecDeque::new(),
            drops: VecDeque::new(),
            stats: LinkStats::default(),
            outages: OutageState::default(),
        })
    }

    /// Sets the link's outage windows (see the module docs). Call before the first
    /// packet: windows are applied from the current time on.
    pub fn set_outages(&mut self, outages: Outages) {
        self.outages = OutageState {
            schedule: outages,
            next_start: 0,
        };
    }

    /// The link's outage windows (none unless [`Link::set_outages`] was called).
    pub fn outages(&self) -> &Outages {
        &self.outages.schedule
    }

    /// What limits the link's rate: a trace or a constant rate.
    pub fn service(&self) -> &LinkService {
        &self.service
    }

    /// Largest IP length the link accepts: 1500 on a trace link, `None` (no limit) on a
    /// constant-rate link.
    pub fn max_ip_len(&self) -> Option<u32> {
        self.service
            .max_charged_bytes()
            .map(|max| max.saturating_sub(self.service.framing_bytes()))
    }

    /// Serves everything due at or before `now` (see the module docs), then offers the
    /// packet to the queue. The link charges `ip_len` plus its framing bytes.
    pub fn enqueue(&mut self, now: Time, item: T, ip_len: u32) -> EnqueueResult<T> {
        self.advance(now);
        if self
            .outages
            .schedule
            .containing(now)
            .is_some_and(|w| w.kind == OutageKind::Drop)
        {
            // No radio link: the arrival is lost.
            self.stats.drops_outage += 1;
            self.drops.push_back(DroppedPacket {
                item,
                ip_len,
                enqueued_at: now,
                at: now,
                reason: OUTAGE_DROP,
            });
            return EnqueueResult::Accepted;
        }
        let framing = self.service.framing_bytes();
        let max = self.service.max_charged_bytes();
        let packet = match Queued::charged(item, ip_len, now, framing, max) {
            Ok(packet) => packet,
            Err(item) => {
                self.stats.drops_too_big += 1;
                return EnqueueResult::Dropped(item);
            }
        };
        let drops_before = self.drops.len();
        if let Err(rejected) = self.queue.enqueue(now, packet, &mut self.drops) {
            self.stats.drops_queue_full += 1;
            return EnqueueResult::Dropped(rejected.item);
        }
        self.stats.packets_accepted += 1;
        if let Engine::Constant {
            serializer,
            in_transit: in_transit @ None,
        } = &mut self.engine
        {
            // An idle serialiser starts at once; `advance(now)` left nothing due.
            if let Some(next) = self.queue.dequeue(now, &mut self.drops) {
                let finish = start_sending(serializer, &self.outages.schedule, now, &next);
                *in_transit = Some((next, finish));
            }
        }
        // Drop-head and AQM drops made by this arrival (and by the dequeue above).
        self.count_drops(drops_before);
        EnqueueResult::Accepted
    }

    /// Serves every opportunity (trace) or finishes every transmission (constant) at or
    /// before `now`, appending departures in order; applies the flush of every `drop`
    /// outage that has begun, in time order with the service.
    pub fn advance(&mut self, now: Time) {
        if self.outages.schedule.is_empty() {
            // The common case, kept free of outage bookkeeping.
            self.serve(now);
            return;
        }
        while let Some(start) = self.take_window_start(now) {
            // Service strictly before the window, then the flush at its start.
            if let Some(before) = start.as_ns().checked_sub(1) {
                self.serve(Time::from_ns(before));
            }
            self.flush_for_outage(start);
        }
        self.serve(now);
    }

    /// The start of the next `drop` window beginning at or before `now` whose flush is
    /// still to do; marks it done.
    fn take_window_start(&mut self, now: Time) -> Option<Time> {
        let windows = self.outages.schedule.windows();
        while let Some(w) = windows.get(self.outages.next_start) {
            if w.start > now {
                return None;
            }
            self.outages.next_start += 1;
            if w.kind == OutageKind::Drop {
                return Some(w.start);
            }
        }
        None
    }

    /// Start of the next `drop` window whose flush is still to do.
    fn pending_flush(&self) -> Option<Time> {
        self.outages.schedule.windows()[self.outages.next_start..]
            .iter()
            .find(|w| w.kind == OutageKind::Drop)
            .map(|w| w.start)
    }

    /// A radio link failure at `at`: the packet in transit and every queued packet are
    /// lost.
    fn flush_for_outage(&mut self, at: Time) {
        let mut lost: Vec<Queued<T>> = Vec::new();
        match &mut self.engine {
            Engine::Trace { in_transit, .. } => lost.extend(in_transit.take().map(|p| p.packet)),
            Engine::Constant {
                serializer,
                in_transit,
            } => {
                if let Some((packet, _)) = in_transit.take() {
                    lost.push(packet);
                    serializer.abort(self.outages.schedule.service_time_at(at));
                }
            }
        }
        // Dequeuing through the discipline keeps its state consistent; an AQM may drop
        // some of these itself (counted as AQM drops).
        let drops_before = self.drops.len();
        while let Some(packet) = self.queue.dequeue(at, &mut self.drops) {
            lost.push(packet);
        }
        self.count_drops(drops_before);
        self.stats.drops_outage += lost.len() as u64;
        self.drops.extend(lost.into_iter().map(|p| DroppedPacket {
            item: p.item,
            ip_len: p.ip_len,
            enqueued_at: p.enqueued_at,
            at,
            reason: OUTAGE_DROP,
        }));
    }

    /// [`Link::advance`] without outage flushes: the service up to `now`.
    fn serve(&mut self, now: Time) {
        let drops_before = self.drops.len();
        let outages = &self.outages.schedule;
        match &mut self.engine {
            Engine::Trace {
                opportunities,
                in_transit,
            } => {
                let no_outages = outages.is_empty();
                while let Some(at) = opportunities.next_at().filter(|&at| at <= now) {
                    if let Some(w) = (!no_outages).then(|| outages.containing(at)).flatten() {
                        // No service in an outage: its opportunities are never offered.
                        let through = now.min(w.end - Dur::from_ns(1));
                        self.stats.opportunities_in_outage += opportunities.skip_through(through);
                        continue;
                    }
                    if in_transit.is_none() && self.queue.is_empty() {
                        // Nothing to send until the next arrival: every opportunity up
                        // to `now` (or to the next outage) is wasted whole.
                        let through = outages
                            .next_start_after(at)
                            .map_or(now, |s| now.min(s - Dur::from_ns(1)));
                        let skipped = opportunities.skip_through(through);
                        self.stats.opportunities += skipped;
                        self.stats.wasted_bytes +=
                            skipped.saturating_mul(u64::from(OPPORTUNITY_BYTES));
                        continue;
                    }
                    serve_opportunity(
                        at,
                        in_transit,
                        &mut self.queue,
                        &mut self.drops,
                        &mut self.departures,
                        &mut self.stats,
                    );
                    opportunities.step();
                }
            }
            Engine::Constant {
                serializer,
                in_transit,
            } => {
                while let Some(finish) = in_transit.as_ref().map(|s| s.1).filter(|&f| f <= now) {
                    let (packet, _) = in_transit.take().expect("matched just above");
                    depart(packet, finish, &mut self.departures, &mut self.stats);
                    if let Some(next) = self.queue.dequeue(finish, &mut self.drops) {
                        let start = next.enqueued_at.max(finish);
                        let next_finish = start_sending(serializer, outages, start, &next);
                        *in_transit = Some((next, next_finish));
                    }
                }
            }
        }
        // Drops made while dequeuing (CoDel).
        self.count_drops(drops_before);
    }

    /// Counts, by reason, the drops appended to the outbox since it held `from`.
    #[inline]
    fn count_drops(&mut self, from: usize) {
        if self.drops.len() <= from {
            return;
        }
        for drop in self.drops.range(from..) {
            match drop.reason {
                DropReason::HeadDrop => self.stats.drops_head += 1,
                DropReason::QueueFull => self.stats.drops_queue_full += 1,
                DropReason::TooBig => self.stats.drops_too_big += 1,
                DropReason::Aqm => self.stats.drops_aqm += 1,
            }
        }
    }

    /// The next departure, in departure order.
    #[inline]
    pub fn pop_departure(&mut self) -> Option<Departure<T>> {
        self.departures.pop_front()
    }

    /// The next packet dropped after acceptance (drop-head, AQM), in drop order. Refused
    /// arrivals are returned by [`Link::enqueue`] and do not appear here.
    #[inline]
    pub fn pop_drop(&mut self) -> Option<DroppedPacket<T>> {
        self.drops.pop_front()
    }

    /// When [`Link::advance`] will next produce a departure: the next opportunity while a
    /// packet is queued or in transit (on a trace link every such opportunity completes
    /// at least one packet, since no packet exceeds one opportunity), or the current
    /// transmission's finish time; opportunities inside outages are skipped, and the
    /// start of a `drop` outage is a wake-up while the link holds packets. `None` when
    /// idle, or when a `Once` trace has ended.
    #[inline]
    pub fn next_wakeup(&self) -> Option<Time> {
        let holding = self.has_packet_in_transit() || !self.queue.is_empty();
        let no_outages = self.outages.schedule.is_empty();
        let departure = match &self.engine {
            Engine::Trace { opportunities, .. } if holding && no_outages => opportunities.next_at(),
            Engine::Trace { opportunities, .. } if holding => {
                opportunities.next_outside(&self.outages.schedule)
            }
            Engine::Trace { .. } => None,
            Engine::Constant { in_transit, .. } => in_transit.as_ref().map(|(_, finish)| *finish),
        };
        // A `drop` outage flushes what the link holds at its start.
        if no_outages {
            return departure;
        }
        let flush = self.pending_flush().filter(|_| holding);
        match (departure, flush) {
            (Some(d), Some(f)) => Some(d.min(f)),
            (d, f) => d.or(f),
        }
    }

    /// Packets waiting in the queue, not counting the packet in transit (as in Mahimahi,
    /// where the queue limits do not count it either).
    pub fn queued_packets(&self) -> usize {
        self.queue.len_packets()
    }

    /// Charged bytes waiting in the queue, not counting the packet in transit.
    pub fn queued_bytes(&self) -> u64 {
        self.queue.len_bytes()
    }

    /// Whether a packet has left the queue but not yet departed (partly sent on a trace
    /// link, or being serialised on a constant-rate link).
    #[inline]
    pub fn has_packet_in_transit(&self) -> bool {
        match &self.engine {
            Engine::Trace { in_transit, .. } => in_transit.is_some(),
            Engine::Constant { in_transit, .. } => in_transit.is_some(),
        }
    }

    /// Bytes the link offers in `[from, to)`, used or not: 1504 per opportunity on a
    /// trace link, rate × duration on a constant-rate link; nothing inside outages.
    pub fn capacity_bytes(&self, from: Time, to: Time) -> u64 {
        self.service
            .capacity_bytes_outside(from, to, &self.outages.schedule)
    }

    /// Counters since the link was built.
    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }
}

/// Starts `packet` on a constant-rate link at wall time `start`; returns its finish time.
/// The serialiser runs on service time, so an outage in between pushes the finish back
/// by the outage's length.
fn start_sending<T>(
    serializer: &mut Serializer,
    outages: &Outages,
    start: Time,
    packet: &Queued<T>,
) -> Time {
    let finish = serializer.start(outages.service_time_at(start), packet.charged_bytes);
    outages.wall_time_at(finish)
}

/// One opportunity of a trace link at time `at` (Mahimahi `rationalize`, inner loop).
fn serve_opportunity<T>(
    at: Time,
    in_transit: &mut Option<Partial<T>>,
    queue: &mut Discipline<T>,
    drops: &mut VecDeque<DroppedPacket<T>>,
    departures: &mut VecDeque<Departure<T>>,
    stats: &mut LinkStats,
) {
    let mut budget = OPPORTUNITY_BYTES;
    while budget > 0 {
        let partial = match in_transit {
            Some(partial) => partial,
            None => match queue.dequeue(at, drops) {
                Some(packet) => in_transit.insert(Partial {
                    bytes_left: packet.charged_bytes,
                    packet,
                }),
                None => break,
            },
        };
        debug_assert!(
            partial.packet.enqueued_at < at,
            "arrivals at `at` are enqueued after it is served"
        );
        let sent = budget.min(partial.bytes_left);
        partial.bytes_left -= sent;
        budget -= sent;
        if partial.bytes_left == 0 {
            let done = in_transit.take().expect("set just above");
            depart(done.packet, at, departures, stats);
        }
    }
    stats.opportunities += 1;
    stats.wasted_bytes += u64::from(budget);
    if budget < OPPORTUNITY_BYTES {
        stats.opportunities_used += 1;
    }
}

fn depart<T>(
    packet: Queued<T>,
    at: Time,
    departures: &mut VecDeque<Departure<T>>,
    stats: &mut LinkStats,
) {
    stats.packets_departed += 1;
    stats.ip_bytes_departed += u64::from(packet.ip_len);
    stats.charged_bytes_departed += u64::from(packet.charged_bytes);
    departures.push_back(Departure {
        item: packet.item,
        ip_len: packet.ip_len,
        enqueued_at: packet.enqueued_at,
        departed_at: at,
    });
}

/// A link as one stage of a path (e.g. a wired bottleneck before the base station).
/// Refused arrivals go to the drop queue with their reason.
impl<T> crate::stage::Stage<T> for Link<T> {
    fn push(&mut self, now: Time, item: T, ip_len: u32) {
        let too_big_before = self.stats.drops_too_big;
        if let EnqueueResult::Dropped(item) = self.enqueue(now, item, ip_len) {
            let reason = if self.stats.drops_too_big > too_big_before {
                DropReason::TooBig
            } else {
                DropReason::QueueFull
            };
            self.drops.push_back(DroppedPacket {
                item,
                ip_len,
                enqueued_at: now,
                at: now,
                reason,
            });
        }
    }
    fn advance(&mut self, now: Time) {
        Link::advance(self, now);
    }
    fn pop_output(&mut self) -> Option<crate::stage::Released<T>> {
        self.departures.pop_front().map(|d| crate::stage::Released {
            item: d.item,
            ip_len: d.ip_len,
            at: d.departed_at,
        })
    }
    #[inline]
    fn pop_drop(&mut self) -> Option<DroppedPacket<T>> {
        self.drops.pop_front()
    }
    #[inline]
    fn next_wakeup(&self) -> Option<Time> {
        Link::next_wakeup(self)
    }
    fn len(&self) -> usize {
        self.queued_packets() + usize::from(self.has_packet_in_transit()) + self.departures.len()
    }
}
