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
//! A discipline implements [`PacketQueue`] and gets a variant in the private
//! `Discipline` enum that the link holds.

use std::collections::VecDeque;
use std::fmt;

use cellcc_units::Time;

use crate::aqm::{AqmConfigError, Codel, CodelConfig, Pie, PieConfig};

/// A packet waiting in a queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Queued<T> {
    pub item: T,
    /// IP length as given by the caller.
    pub ip_len: u32,
    /// Bytes the link charges for it (IP length + framing); queue limits count these.
    pub charged_bytes: u32,
    pub enqueued_at: Time,
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
    pub item: T,
    pub ip_len: u32,
    pub enqueued_at: Time,
    /// When it was dropped.
    pub at: Time,
    pub reason: DropReason,
}

/// The queue discipline configuration, with Mahimahi's names and limits.
#[derive(Clone, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum QueueSpec {
    /// No limit (Mahimahi's default for both directions).
    #[default]
    Infinite,
    /// Reject an arrival that would exceed a limit.
    #[serde(rename = "droptail")]
    DropTail {
        #[serde(default)]
        packets: Option<u64>,
        #[serde(default)]
        bytes: Option<u64>,
    },
    /// Accept the arrival, then drop from the head until within the limits.
    #[serde(rename = "drophead")]
    DropHead {
        #[serde(default)]
        packets: Option<u64>,
        #[serde(default)]
        bytes: Option<u64>,
    },
    /// CoDel (RFC 8289) or Mahimahi's `codel`: drops at dequeue once the sojourn time has
    /// stayed above target for an interval.
    Codel(CodelConfig),
    /// PIE (RFC 8033) or Mahimahi's `pie`: random early drops at arrival with a
    /// probability steered to a target queueing delay.
    Pie(PieConfig),
}

/// An unusable [`QueueSpec`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QueueSpecError {
    #[error("{discipline} queue needs a limit: give `packets` and/or `bytes`")]
    NoLimit { discipline: &'static str },
    #[error("{discipline} queue: `{limit} = 0` is not a limit; use a positive value, or omit it for no {limit} limit")]
    ZeroLimit {
        discipline: &'static str,
        limit: &'static str,
    },
    /// A bad CoDel or PIE parameter, e.g. `codel: interval_ms must be > 0`.
    #[error(transparent)]
    Aqm(#[from] AqmConfigError),
}

impl QueueSpec {
    /// Checks that droptail/drophead have at least one limit, that no limit is 0, and
    /// CoDel's and PIE's parameters.
    pub fn validate(&self) -> Result<(), QueueSpecError> {
        let (discipline, packets, bytes) = match *self {
            QueueSpec::Infinite => return Ok(()),
            QueueSpec::DropTail { packets, bytes } => ("droptail", packets, bytes),
            QueueSpec::DropHead { packets, bytes } => ("drophead", packets, bytes),
            QueueSpec::Codel(config) => return Ok(config.validate()?),
            QueueSpec::Pie(config) => return Ok(config.validate()?),
        };
        if packets.is_none() && bytes.is_none() {
            return Err(QueueSpecError::NoLimit { discipline });
        }
        if packets == Some(0) {
            return Err(QueueSpecError::ZeroLimit {
                discipline,
                limit: "packets",
            });
        }
        if bytes == Some(0) {
            return Err(QueueSpecError::ZeroLimit {
                discipline,
                limit: "bytes",
            });
        }
        Ok(())
    }

    /// Builds the discipline; `seed` keys the random stream of disciplines that draw
    /// (PIE) and is ignored by the others.
    pub(crate) fn build<T>(&self, seed: u64) -> Result<Discipline<T>, QueueSpecError> {
        self.validate()?;
        let fifo = match *self {
            QueueSpec::Infinite => Fifo::new(Limits::NONE, Overflow::Reject),
            QueueSpec::DropTail { packets, bytes } => {
                Fifo::new(Limits { packets, bytes }, Overflow::Reject)
            }
            QueueSpec::DropHead { packets, bytes } => {
                Fifo::new(Limits { packets, bytes }, Overflow::DropHead)
            }
            QueueSpec::Codel(config) => return Ok(Discipline::Codel(Codel::new(config)?)),
            QueueSpec::Pie(config) => {
                return Ok(Discipline::Pie(Box::new(Pie::new(config, seed)?)))
            }
        };
        Ok(Discipline::Fifo(fifo))
    }
}

impl fmt::Display for QueueSpec {
    /// Mahimahi's command-line spelling, e.g. `droptail packets=100, bytes=150000` or
    /// `codel target=5, interval=100, packets=1000` (see [`CodelConfig`] and
    /// [`PieConfig`] for what the AQMs add).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (name, packets, bytes) = match self {
            QueueSpec::Infinite => return f.write_str("infinite"),
            QueueSpec::DropTail { packets, bytes } => ("droptail", *packets, *bytes),
            QueueSpec::DropHead { packets, bytes } => ("drophead", *packets, *bytes),
            QueueSpec::Codel(config) => return config.fmt(f),
            QueueSpec::Pie(config) => return config.fmt(f),
        };
        f.write_str(name)?;
        let mut sep = " ";
        if let Some(p) = packets {
            write!(f, "{sep}packets={p}")?;
            sep = ", ";
        }
        if let Some(b) = bytes {
            write!(f, "{sep}bytes={b}")?;
        }
        Ok(())
    }
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
    #[inline]
    fn is_empty(&self) -> bool {
        self.len_packets() == 0
    }
}

/// Optional packet and byte limits; `None` means unlimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub packets: Option<u64>,
    pub bytes: Option<u64>,
}

impl Limits {
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

/// The disciplines a [`crate::Link`] can hold (static dispatch, no `'static` bound on
/// the item type).
#[derive(Clone, Debug)]
pub(crate) enum Discipline<T> {
    Fifo(Fifo<T>),
    Codel(Codel<T>),
    /// Boxed: its random generator makes it several times larger than the others.
    Pie(Box<Pie<T>>),
}

impl<T> PacketQueue<T> for Discipline<T> {
    #[inline(always)]
    fn enqueue(
        &mut self,
        now: Time,
        packet: Queued<T>,
        drops: &mut VecDeque<DroppedPacket<T>>,
    ) -> Result<(), Queued<T>> {
        match self {
            Discipline::Fifo(q) => q.enqueue(now, packet, drops),
            Discipline::Codel(q) => q.enqueue(now, packet, drops),
            Discipline::Pie(q) => q.enqueue(now, packet, drops),
        }
    }
    #[inline(always)]
    fn dequeue(&mut self, now: Time, drops: &mut VecDeque<DroppedPacket<T>>) -> Option<Queued<T>> {
        match self {
            Discipline::Fifo(q) => q.dequeue(now, drops),
            Discipline::Codel(q) => q.dequeue(now, drops),
            Discipline::Pie(q) => q.dequeue(now, drops),
        }
    }
    #[inline]
    fn len_packets(&self) -> usize {
        match self {
            Discipline::Fifo(q) => q.len_packets(),
            Discipline::Codel(q) => q.len_packets(),
            Discipline::Pie(q) => q.len_packets(),
        }
    }
    #[inline]
    fn len_bytes(&self) -> u64 {
        match self {
            Discipline::Fifo(q) => q.len_bytes(),
            Discipline::Codel(q) => q.len_bytes(),
            Discipline::Pie(q) => q.len_bytes(),
        }
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
    fn validation_names_the_problem() {
        assert!(QueueSpec::Infinite.validate().is_ok());
        let none = QueueSpec::DropTail {
            packets: None,
            bytes: None,
        };
        assert_eq!(
            none.validate(),
            Err(QueueSpecError::NoLimit {
                discipline: "droptail"
            })
        );
        assert!(none
            .validate()
            .unwrap_err()
            .to_string()
            .contains("`packets` and/or `bytes`"));
        let zero = QueueSpec::DropHead {
            packets: Some(0),
            bytes: Some(10),
        };
        assert!(zero
            .validate()
            .unwrap_err()
            .to_string()
            .contains("`packets = 0`"));
    }

    #[test]
    fn display_uses_mahimahi_spelling() {
        assert_eq!(QueueSpec::Infinite.to_string(), "infinite");
        let q = QueueSpec::DropTail {
            packets: Some(100),
            bytes: Some(150_000),
        };
        assert_eq!(q.to_string(), "droptail packets=100, bytes=150000");
        assert_eq!(
            QueueSpec::DropHead {
                packets: None,
                bytes: Some(3000)
            }
            .to_string(),
            "drophead bytes=3000"
        );
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
