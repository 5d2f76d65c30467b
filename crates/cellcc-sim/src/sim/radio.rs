//! The downlink radio: one Mahimahi-style link, or a shared cell whose TTI scheduler
//! serves per-UE queues. Both look alike to the event loop.

use cellcc_link::{Cell, Departure, DroppedPacket, EnqueueResult, Link};
use cellcc_units::Time;

use crate::packet::DownPacket;

pub(crate) enum RadioLink {
    Link(Box<Link<DownPacket>>),
    Cell(Box<Cell<DownPacket>>),
}

impl RadioLink {
    #[inline]
    pub(crate) fn enqueue(
        &mut self,
        at: Time,
        ue: u32,
        pkt: DownPacket,
        ip_len: u32,
    ) -> EnqueueResult<DownPacket> {
        match self {
            RadioLink::Link(l) => l.enqueue(at, pkt, ip_len),
            RadioLink::Cell(c) => c.enqueue(at, ue as usize, pkt, ip_len),
        }
    }

    #[inline]
    pub(crate) fn advance(&mut self, now: Time) {
        match self {
            RadioLink::Link(l) => l.advance(now),
            RadioLink::Cell(c) => c.advance(now),
        }
    }

    #[inline]
    pub(crate) fn pop_drop(&mut self) -> Option<DroppedPacket<DownPacket>> {
        match self {
            RadioLink::Link(l) => l.pop_drop(),
            RadioLink::Cell(c) => c.pop_drop().map(|(_, d)| d),
        }
    }

    /// The next departure (its UE is its flow's UE).
    #[inline]
    pub(crate) fn pop_departure(&mut self) -> Option<Departure<DownPacket>> {
        match self {
            RadioLink::Link(l) => l.pop_departure(),
            RadioLink::Cell(c) => c.pop_departure().map(|(_, d)| d),
        }
    }

    #[inline]
    pub(crate) fn next_wakeup(&self) -> Option<Time> {
        match self {
            RadioLink::Link(l) => l.next_wakeup(),
            RadioLink::Cell(c) => c.next_wakeup(),
        }
    }

    fn ues(&self) -> usize {
        match self {
            RadioLink::Link(_) => 1,
            RadioLink::Cell(c) => c.ue_count(),
        }
    }

    /// Packets waiting in all queues.
    pub(crate) fn queued_packets(&self) -> usize {
        match self {
            RadioLink::Link(l) => l.queued_packets(),
            RadioLink::Cell(c) => (0..self.ues()).map(|u| c.queued_packets(u)).sum(),
        }
    }

    pub(crate) fn queued_bytes(&self) -> u64 {
        match self {
            RadioLink::Link(l) => l.queued_bytes(),
            RadioLink::Cell(c) => (0..self.ues()).map(|u| c.queued_bytes(u)).sum(),
        }
    }

    /// Packets partly sent.
    pub(crate) fn in_transit(&self) -> usize {
        match self {
            RadioLink::Link(l) => usize::from(l.has_packet_in_transit()),
            RadioLink::Cell(c) => (0..self.ues())
                .filter(|&u| c.has_packet_in_transit(u))
                .count(),
        }
    }

    /// Bytes UE `ue`'s channel offers in `[from, to)` (as if it were alone in a cell).
    pub(crate) fn capacity_bytes(&self, ue: u32, from: Time, to: Time) -> u64 {
        match self {
            RadioLink::Link(l) => l.capacity_bytes(from, to),
            RadioLink::Cell(c) => c.capacity_bytes(ue as usize, from, to),
        }
    }
}
