//! Queue disciplines at the bottleneck, as in Mahimahi's `--*-queue=` options
//! (ravinet/mahimahi `src/packet/infinite_packet_queue.hh`, `dropping_packet_queue.cc`,
//! `drop_tail_packet_queue.hh`, `drop_head_packet_queue.hh`).
//!
//! Model: the queue holds packets waiting for the link. The packet the link is currently
//! sending (Mahimahi's "packet in transit", partly sent across opportunities) has left the
//! queue and no longer counts against its limits. Limits count packets and *charged*
//! bytes (IP length plus the link's framing, so on a Mahimahi link a 1500-byte packet
//! counts 1504, as `bytes=` does in Mahimahi, which measures the TUN read).
//!
//! * `infinite`: never drops.
//! * `droptail`: an arrival is rejected if, with it, a limit would be exceeded.
//! * `drophead`: the arrival is accepted, then packets are dropped from the head until
//!   the queue is within its limits (the arrival itself goes if it alone is too big).
//! * `codel` and `pie`: active queue management (module `aqm`), RFC 8289 / RFC 8033 or
//!   Mahimahi's variants, with optional drop-tail limits. Their drops are reported with
//!   [`DropReason::Aqm`].
//!
//! Differences from Mahimahi:
//! 1. A limit of 0 is an error here; Mahimahi reads `packets=0` as "no packet limit".
//! 2. `codel` and `pie` take defaults for their parameters and need no limit; Mahimahi
//!    requires `target`/`interval` (`qdelay_ref`/`max_burst`) and a limit.
//!
//! This module is the vocabulary every discipline shares ([`Queued`], [`DroppedPacket`],
//! [`PacketQueue`]) and the FIFO ones; it imports nothing else from the crate, so the AQMs
//! (`aqm/`) build on it. A discipline implements [`PacketQueue`] and gets a variant in
//! the private `Discipline` enum (`discipline.rs`, with [`crate::QueueSpec`]) that the
//! link holds.

use std::collections::VecDeque;

use cellcc_units::Time;

/// A packet waiting in a queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Queued<T> {
    /// The caller's payload (the simulator's packet), handed back on departure or drop.
    pub item: T,
    /// IP length as given by the caller.
    pub ip_len: u32,
    /// Bytes the link charges for it (IP length + framing); queue limits count these.
    pub charged_bytes: u32,
    /// When the queue accepted it.
    pub enqueued_at: Time,
}

impl<T> Queued<T> {
    /// `item` of `ip_len` bytes arriving at `now` on a link that adds `framing_bytes` to
    /// each packet and carries at most `max_charged_bytes` of one (`None`: any size);
    /// `Err(item)` when the charged size is larger than that or overflows.
    #[inline]
    pub(crate) fn charged(
        item: T,
        ip_len: u32,
        now: Time,
        framing_bytes: u32,
        max_charged_bytes: Option<u32>,
    ) -> Result<Self, T> {
        let charged = ip_len
            .checked_add(framing_bytes)
            .filter(|&charged| max_charged_bytes.is_none_or(|max| charged <= max));
        match charged {
            Some(charged_bytes) => Ok(Queued {
                item,
                ip_len,
                charged_bytes,
                enqueued_at: now,
            }),
            None => Err(item),
        }
    }
}

/// Why a packet was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// Rejected on arrival by a drop-tail limit.
    QueueFull,
    /// Pushed out of the head of a drop-head queue by a later arrival.
    HeadDrop,
    /// Charged size larger than one delivery opportunity (Mahimahi aborts on these).
    TooBig,
    /// Dropped by active queue management: CoDel at dequeue, PIE's random early drop
    /// at arrival.
    Aqm,
}

/// A packet the link dropped after accepting it (drop-head, AQM).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DroppedPacket<T> {
    /// The caller's payload.
    pub item: T,
    /// IP length as given by the caller.
    pub ip_len: u32,
    /// When the queue accepted it.
    pub enqueued_at: Time,
    /// When it was dropped.
    pub at: Time,
    /// Why it was dropped.
    pub reason: DropReason,
}

/// What every queue discipline offers the link.
///
/// Both calls receive the time at which they happen: `enqueue` the arrival time (after
/// the link has served every opportunity at or before it), `dequeue` the time of the
/// opportunity (or service start) that takes the packet, so that an AQM can measure
/// sojourn times. Packets dropped after acceptance go to `drops`.
pub trait PacketQueue<T> {
    /// Offers an arrival. `Err` hands a rejected arrival back untouched.
    fn enqueue(
        &mut self,
        now: Time,
        packet: Queued<T>,
        drops: &mut VecDeque<DroppedPacket<T>>,
    ) -> Result<(), Queued<T>>;
    /// Takes the next packet to send, if any.
    fn dequeue(&mut self, now: Time, drops: &mut VecDeque<DroppedPacket<T>>) -> Option<Queued<T>>;
    /// Packets waiting.
    fn len_packets(&self) -> usize;
    /// Charged bytes waiting.
    fn len_bytes(&self) -> u64;
    /// Whether no packet is waiting.
    #[inline]
    fn is_empty(&self) -> bool {
        self.len_packets() == 0
    }
}

/// Optional packet and byte limits; `None` means unlimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most packets the queue may hold.
    pub packets: Option<u64>,
    /// Most charged bytes the queue may hold.
    pub bytes: Option<u64>,
}

impl Limits {
    /// No limits (Mahimahi's `infinite` queue).
    pub const NONE: Limits = Limits {
        packets: None,
        bytes: None,
    };

    /// Mahimahi `DroppingPacketQueue::good_with`: both counts within their limits.
    fn allow(&self, packets: u64, bytes: u64) -> bool {
        self.packets.is_none_or(|limit| packets <= limit)
            && self.bytes.is_none_or(|limit| bytes <= limit)
    }
}

/// What a FIFO does when an arrival would break its limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overflow {
    /// Drop-tail: reject the arrival.
    Reject,
    /// Drop-head: accept it and drop the oldest packets until within the limits.
    DropHead,
}

/// A first-in first-out queue with optional limits: Mahimahi's `infinite`, `droptail`
/// and `drophead`.
#[derive(Clone, Debug)]
pub struct Fifo<T> {
    packets: VecDeque<Queued<T>>,
    bytes: u64,
    limits: Limits,
    overflow: Overflow,
}

impl<T> Fifo<T> {
    /// An empty FIFO with these limits and overflow rule.
    pub fn new(limits: Limits, overflow: Overflow) -> Self {
        Fifo {
            packets: VecDeque::new(),
            bytes: 0,
            limits,
            overflow,
        }
    }

    #[inline(always)]
    pub(crate) fn pop_front(&mut self) -> Option<Queued<T>> {
        let packet = self.packets.pop_front()?;
        self.bytes -= u64::from(packet.charged_bytes);
        Some(packet)
    }

    /// Whether an arrival of `charged_bytes` is within the limits (what a drop-tail
    /// `enqueue` accepts).
    #[inline(always)]
    pub(crate) fn fits(&self, charged_bytes: u32) -> bool {
        self.limits.allow(
            self.packets.len() as u64 + 1,
            self.bytes + u64::from(charged_bytes),
        )
    }
}

impl<T> PacketQueue<T> for Fifo<T> {
    #[inline(always)]
    fn enqueue(
        &mut self,
        now: Time,
        packet: Queued<T>,
        drops: &mut VecDeque<DroppedPacket<T>>,
    ) -> Result<(), Queued<T>> {
        let size = u64::from(packet.charged_bytes);
        match self.overflow {
            Overflow::Reject => {
                if !self.fits(packet.charged_bytes) {
                    return Err(packet);
                }
                self.bytes += size;
                self.packets.push_back(packet);
            }
            Overflow::DropHead => {
                self.bytes += size;
                self.packets.push_back(packet);
                while !self.limits.allow(self.packets.len() as u64, self.bytes) {
                    // The loop ends at the latest when the queue is empty: limits are >= 1.
                    let head = self
                        .pop_front()
                        .expect("an empty queue is within any positive limit");
                    drops.push_back(DroppedPacket {
                        item: head.item,
                        ip_len: head.ip_len,
                        enqueued_at: head.enqueued_at,
                        at: now,
                        reason: DropReason::HeadDrop,
                    });
                }
            }
        }
        Ok(())
    }

    #[inline(always)]
    fn dequeue(
        &mut self,
        _now: Time,
        _drops: &mut VecDeque<DroppedPacket<T>>,
    ) -> Option<Queued<T>> {
        self.pop_front()
    }

    #[inline]
    fn len_packets(&self) -> usize {
        self.packets.len()
    }

    #[inline]
    fn len_bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(id: u32, charged: u32) -> Queued<u32> {
        Queued {
            item: id,
            ip_len: charged - 4,
            charged_bytes: charged,
            enqueued_at: Time::ZERO,
        }
    }

    #[test]
    fn drophead_drops_the_arrival_itself_if_it_alone_is_too_big() {
        let mut q = Fifo::new(
            Limits {
                packets: None,
                bytes: Some(1000),
            },
            Overflow::DropHead,
        );
        let mut drops = VecDeque::new();
        q.enqueue(Time::ZERO, pkt(1, 500), &mut drops).unwrap();
        q.enqueue(Time::ZERO, pkt(2, 1504), &mut drops).unwrap();
        let dropped: Vec<u32> = drops.iter().map(|d| d.item).collect();
        assert_eq!(dropped, vec![1, 2]);
        assert_eq!((q.len_packets(), q.len_bytes()), (0, 0));
    }
}
