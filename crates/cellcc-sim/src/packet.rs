//! Packets that cross simulated links: TCP data segments and ACKs.
//!
//! Sequence numbers count whole segments (segment `n` carries payload bytes
//! `[n·mss, n·mss + len)`), which is equivalent to Linux's byte sequence space for a
//! sender that only ever sends full-MSS segments (plus one short last segment of a
//! finite flow).

use cellcc_congestion::ReceiverFeedback;
use cellcc_units::Time;

/// Index of a flow in the scenario (0-based).
pub type FlowId = u32;

/// IPv4 header (20) + TCP header (20) + timestamp option padded (12) bytes, the headers
/// of every segment in a Linux connection with timestamps on.
pub const HEADER_BYTES: u32 = 52;

/// Extra option bytes of a SYN or SYN-ACK over [`HEADER_BYTES`]: Linux's SYN options
/// are MSS (4), SACK-permitted (2), timestamps (10), NOP (1) and window scale (3), 20
/// bytes against the 12 of the timestamp option alone, so a SYN is a 60-byte datagram.
pub const SYN_OPTION_BYTES: u32 = 8;

/// SACK blocks an ACK can carry alongside the timestamp option (40-byte option space:
/// 12 for timestamps leaves room for 3 blocks).
pub const MAX_SACK_BLOCKS: usize = 3;

/// A TCP data segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataSegment {
    /// The flow the segment belongs to.
    pub flow: FlowId,
    /// Segment sequence number.
    pub seq: u64,
    /// Payload bytes (mss, or less for the last segment of a finite flow).
    pub len: u32,
    /// Sender's TCP timestamp value (TSval), in sender clock ticks.
    pub tsval: u32,
    /// Timestamp echo reply (TSecr).
    pub tsecr: u32,
    /// When the sender put this copy on the wire (for one-way-delay metrics).
    pub sent_at: Time,
    /// True if this copy is a retransmission.
    pub retransmit: bool,
    /// The SYN flag: the connecting side's first segment (see `tcp::handshake`).
    pub syn: bool,
}

impl DataSegment {
    /// Length of the IP datagram.
    pub fn ip_len(&self) -> u32 {
        self.len + HEADER_BYTES + if self.syn { SYN_OPTION_BYTES } else { 0 }
    }

    /// A segment without payload: a SYN, or a pure ACK from the sending side (the
    /// handshake's third segment, a challenge ACK); it carries no data to the receiver.
    pub fn is_control(&self) -> bool {
        self.len == 0
    }
}

/// A half-open range of segment numbers `[start, end)` reported by SACK.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SackBlock {
    /// First segment of the range.
    pub start: u64,
    /// One past the last segment of the range.
    pub end: u64,
}

/// A pure TCP ACK.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AckSegment {
    /// The flow the ACK belongs to (the flow whose data it acknowledges).
    pub flow: FlowId,
    /// Cumulative ACK: the next segment the receiver expects.
    pub ack: u64,
    /// SACK blocks, most recent first (RFC 2018 §4); `sack_len` of them are valid.
    pub sack: [SackBlock; MAX_SACK_BLOCKS],
    /// Number of valid entries at the front of `sack`.
    pub sack_len: u8,
    /// True when the first SACK block reports a duplicate segment (D-SACK, RFC 2883).
    pub dsack: bool,
    /// Receiver's timestamp value (TSval).
    pub tsval: u32,
    /// Echo of the TSval of the segment that triggered this ACK (TSecr, RFC 7323 §4.3).
    pub tsecr: u32,
    /// When the receiver sent this ACK.
    pub sent_at: Time,
    /// The advertised receive window, bytes as the sender reads it (the window field
    /// shifted by the window scale), from `ack` on.
    pub wnd: u32,
    /// The value a scheme's receiver-side agent stamped on it (`None` for schemes
    /// without one; see `cellcc_congestion::feedback`). Boxed so that the ACKs of every
    /// other scheme stay small: they are moved through queues and delay lines per packet.
    pub feedback: Option<Box<ReceiverFeedback>>,
    /// The SYN flag: a SYN-ACK of the handshake (see `tcp::handshake`), not an ACK of data.
    pub syn: bool,
}

impl AckSegment {
    /// Length of the IP datagram: headers, plus the SACK option (2 NOPs, kind, length,
    /// 8 bytes per block) when blocks are present, plus the feedback option when present.
    pub fn ip_len(&self) -> u32 {
        let sack = if self.sack_len == 0 {
            0
        } else {
            4 + 8 * self.sack_len as u32
        };
        let syn = if self.syn { SYN_OPTION_BYTES } else { 0 };
        HEADER_BYTES + syn + sack + self.feedback.as_ref().map_or(0, |f| f.wire_bytes())
    }

    /// The valid SACK blocks.
    pub fn sack_blocks(&self) -> &[SackBlock] {
        &self.sack[..self.sack_len as usize]
    }
}

/// Anything a link carries: a data segment of a flow sending in the link's direction,
/// or an ACK of a flow sending the other way.
///
/// `A` is how the packet holds its ACK. The uplink, where ACKs are the common case
/// (every downlink flow sends them that way), holds them inline ([`UpPacket`]). The
/// downlink, where they are rare (only uplink flows send them that way), holds an
/// [`AckRef`] to an ACK parked in an [`AckStore`] ([`DownPacket`]), so that a downlink
/// data packet stays a plain value the size of a [`DataSegment`]: queues of thousands
/// of them are the simulator's working set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packet<A = AckSegment> {
    /// A data segment of a flow sending in the link's direction.
    Data(DataSegment),
    /// An ACK of a flow sending the other way.
    Ack(A),
}

/// What the downlink carries.
pub type DownPacket = Packet<AckRef>;
/// What the uplink carries.
pub type UpPacket = Packet<AckSegment>;

/// How a [`Packet`] holds its ACK: inline, or by reference to an [`AckStore`].
pub trait AckHold {
    /// The flow the ACK belongs to.
    fn flow(&self) -> FlowId;
}

impl AckHold for AckSegment {
    #[inline]
    fn flow(&self) -> FlowId {
        self.flow
    }
}

/// An ACK parked in an [`AckStore`] while this reference crosses a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckRef {
    /// The flow the ACK belongs to.
    pub flow: FlowId,
    slot: u32,
}

impl AckHold for AckRef {
    #[inline]
    fn flow(&self) -> FlowId {
        self.flow
    }
}

/// ACKs parked while their [`AckRef`]s travel. Slots are reused last-freed first, so
/// the same run parks into the same slots.
#[derive(Debug, Default)]
pub struct AckStore {
    slots: Vec<Option<AckSegment>>,
    free: Vec<u32>,
    len: usize,
}

impl AckStore {
    /// Park `ack` and return the reference that travels in its place.
    pub fn park(&mut self, ack: AckSegment) -> AckRef {
        let flow = ack.flow;
        self.len += 1;
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some(ack);
                slot
            }
            None => {
                self.slots.push(Some(ack));
                (self.slots.len() - 1) as u32
            }
        };
        AckRef { flow, slot }
    }

    /// Take the ACK `r` refers to. Panics if it was taken before: every [`AckRef`] is
    /// made by [`AckStore::park`] and leaves the network (delivered or dropped) once.
    pub fn take(&mut self, r: AckRef) -> AckSegment {
        let ack = self.slots[r.slot as usize]
            .take()
            .expect("an AckRef leaves the network once, so its slot is still full");
        self.free.push(r.slot);
        self.len -= 1;
        ack
    }

    /// ACKs parked (in the network).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no ACK is parked.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<A: AckHold> Packet<A> {
    /// The flow the packet belongs to.
    #[inline]
    pub fn flow(&self) -> FlowId {
        match self {
            Packet::Data(d) => d.flow,
            Packet::Ack(a) => a.flow(),
        }
    }
}

impl UpPacket {
    /// Length of the IP datagram.
    pub fn ip_len(&self) -> u32 {
        match self {
            Packet::Data(d) => d.ip_len(),
            Packet::Ack(a) => a.ip_len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pure ACK of `flow` acknowledging `n`, without SACK blocks or feedback.
    fn ack(flow: FlowId, n: u64) -> AckSegment {
        AckSegment {
            flow,
            ack: n,
            sack: [SackBlock::default(); MAX_SACK_BLOCKS],
            sack_len: 0,
            dsack: false,
            tsval: 0,
            tsecr: 0,
            sent_at: Time::ZERO,
            wnd: u32::MAX,
            feedback: None,
            syn: false,
        }
    }

    #[test]
    fn wire_sizes_match_linux_with_timestamps() {
        let d = DataSegment {
            flow: 0,
            seq: 0,
            len: 1448,
            tsval: 0,
            tsecr: 0,
            sent_at: Time::ZERO,
            retransmit: false,
            syn: false,
        };
        assert_eq!(d.ip_len(), 1500);
        let mut a = ack(0, 1);
        // A pure ACK is 52 bytes; Mahimahi charges 56 with the TUN header.
        assert_eq!(a.ip_len(), 52);
        a.sack_len = 3;
        assert_eq!(a.ip_len(), 52 + 4 + 24);
        // A receiver agent's feedback: a 4-byte option header and 4 bytes per value.
        a.feedback = Some(Box::new(cellcc_congestion::ReceiverFeedback::new(&[1, 2])));
        assert_eq!(a.ip_len(), 52 + 4 + 24 + 4 + 8);
        // A packet reports the length of what it carries.
        assert_eq!(UpPacket::Ack(a.clone()).ip_len(), a.ip_len());
        assert_eq!(UpPacket::Data(d).ip_len(), 1500);
    }

    #[test]
    fn downlink_data_packets_stay_the_size_of_a_segment() {
        // The downlink queues hold thousands of data packets; parking the (rare) ACKs
        // keeps them as small as before uplink flows existed.
        assert_eq!(
            std::mem::size_of::<DownPacket>(),
            std::mem::size_of::<DataSegment>()
        );
        assert_eq!(
            std::mem::size_of::<UpPacket>(),
            std::mem::size_of::<AckSegment>()
        );
    }

    #[test]
    fn parked_acks_come_back_once_and_slots_are_reused() {
        let mut store = AckStore::default();
        let a = store.park(ack(3, 10));
        let b = store.park(ack(4, 11));
        assert_eq!((a.flow, b.flow, store.len()), (3, 4, 2));
        assert_eq!(store.take(a).ack, 10);
        let c = store.park(ack(5, 12));
        assert_eq!(c.slot, a.slot, "the freed slot is reused");
        assert_eq!(store.take(b).ack, 11);
        assert_eq!(store.take(c).ack, 12);
        assert!(store.is_empty());
    }
}
