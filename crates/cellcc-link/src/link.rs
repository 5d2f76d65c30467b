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

use std::collections::VecDeque;

use cellcc_units::Time;

use crate::queue::{Discipline, DropReason, DroppedPacket, PacketQueue, QueueSpec, Queued};
use crate::service::{LinkConfigError, LinkService, Opportunities, Serializer};
use crate::trace::OPPORTUNITY_BYTES;

/// A packet that has left the link.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Departure<T> {
    pub item: T,
    pub ip_len: u32,
    pub enqueued_at: Time,
    /// The opportunity that completed it (trace) or when its last bit left (constant).
    pub departed_at: Time,
}

/// Outcome of [`Link::enqueue`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use = "a dropped item is handed back and would otherwise be lost silently"]
pub enum EnqueueResult<T> {
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
    pub packets_accepted: u64,
    pub packets_departed: u64,
    pub ip_bytes_departed: u64,
    /// Charged bytes (IP + framing) of departed packets.
    pub charged_bytes_departed: u64,
    pub drops_queue_full: u64,
    pub drops_head: u64,
    pub drops_too_big: u64,
    /// Trace links: opportunities elapsed, used or not. Always 0 on constant links.
    pub opportunities: u64,
    /// Trace links: opportunities that carried at least one byte.
    pub opportunities_used: u64,
    /// Trace links: opportunity bytes with nothing to carry (the queue was empty).
    /// `opportunities × 1504 = wasted_bytes + bytes carried`, where bytes carried are the
    /// charged bytes departed plus the part already sent of the packet in transit.
    pub wasted_bytes: u64,
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
}

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

    pub fn try_new(service: LinkService, queue: QueueSpec) -> Result<Self, LinkConfigError> {
        service.validate()?;
        let queue = queue.build()?;
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
        })
    }

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
        let max = self.service.max_charged_bytes();
        let charged = ip_len
            .checked_add(self.service.framing_bytes())
            .filter(|&charged| max.is_none_or(|max| charged <= max));
        let Some(charged_bytes) = charged else {
            self.stats.drops_too_big += 1;
            return EnqueueResult::Dropped(item);
        };
        let packet = Queued {
            item,
            ip_len,
            charged_bytes,
            enqueued_at: now,
        };
        let drops_before = self.drops.len();
        if let Err(rejected) = self.queue.enqueue(now, packet, &mut self.drops) {
            self.stats.drops_queue_full += 1;
            return EnqueueResult::Dropped(rejected.item);
        }
        self.stats.packets_accepted += 1;
        for drop in self.drops.range(drops_before..) {
            match drop.reason {
                DropReason::HeadDrop => self.stats.drops_head += 1,
                DropReason::QueueFull => self.stats.drops_queue_full += 1,
                DropReason::TooBig => self.stats.drops_too_big += 1,
            }
        }
        if let Engine::Constant {
            serializer,
            in_transit: in_transit @ None,
        } = &mut self.engine
        {
            // An idle serialiser starts at once; `advance(now)` left nothing due.
            if let Some(next) = self.queue.dequeue(now, &mut self.drops) {
                let finish = serializer.start(now, next.charged_bytes);
                *in_transit = Some((next, finish));
            }
        }
        EnqueueResult::Accepted
    }

    /// Serves every opportunity (trace) or finishes every transmission (constant) at or
    /// before `now`, appending departures in order.
    pub fn advance(&mut self, now: Time) {
        match &mut self.engine {
            Engine::Trace {
                opportunities,
                in_transit,
            } => {
                while let Some(at) = opportunities.next_at().filter(|&at| at <= now) {
                    if in_transit.is_none() && self.queue.is_empty() {
                        // Nothing to send until the next arrival: every opportunity up
                        // to `now` is wasted whole.
                        let skipped = opportunities.skip_through(now);
                        self.stats.opportunities += skipped;
                        self.stats.wasted_bytes +=
                            skipped.saturating_mul(u64::from(OPPORTUNITY_BYTES));
                        break;
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
                        let next_finish = serializer.start(start, next.charged_bytes);
                        *in_transit = Some((next, next_finish));
                    }
                }
            }
        }
    }

    /// The next departure, in departure order.
    pub fn pop_departure(&mut self) -> Option<Departure<T>> {
        self.departures.pop_front()
    }

    /// The next packet dropped after acceptance (drop-head), in drop order. Refused
    /// arrivals are returned by [`Link::enqueue`] and do not appear here.
    pub fn pop_drop(&mut self) -> Option<DroppedPacket<T>> {
        self.drops.pop_front()
    }

    /// When [`Link::advance`] will next produce a departure: the next opportunity while a
    /// packet is queued or in transit (on a trace link every such opportunity completes
    /// at least one packet, since no packet exceeds one opportunity), or the current
    /// transmission's finish time. `None` when idle, or when a `Once` trace has ended.
    pub fn next_wakeup(&self) -> Option<Time> {
        match &self.engine {
            Engine::Trace {
                opportunities,
                in_transit,
            } => {
                if in_transit.is_some() || !self.queue.is_empty() {
                    opportunities.next_at()
                } else {
                    None
                }
            }
            Engine::Constant { in_transit, .. } => in_transit.as_ref().map(|(_, finish)| *finish),
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
    pub fn has_packet_in_transit(&self) -> bool {
        match &self.engine {
            Engine::Trace { in_transit, .. } => in_transit.is_some(),
            Engine::Constant { in_transit, .. } => in_transit.is_some(),
        }
    }

    /// Bytes the link offers in `[from, to)`, used or not: 1504 per opportunity on a
    /// trace link, rate × duration on a constant-rate link.
    pub fn capacity_bytes(&self, from: Time, to: Time) -> u64 {
        self.service.capacity_bytes(from, to)
    }

    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }
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
    fn pop_drop(&mut self) -> Option<DroppedPacket<T>> {
        self.drops.pop_front()
    }
    fn next_wakeup(&self) -> Option<Time> {
        Link::next_wakeup(self)
    }
    fn len(&self) -> usize {
        self.queued_packets() + usize::from(self.has_packet_in_transit()) + self.departures.len()
    }
}
