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

/// SACK blocks an ACK can carry alongside the timestamp option (40-byte option space:
/// 12 for timestamps leaves room for 3 blocks).
pub const MAX_SACK_BLOCKS: usize = 3;

/// A TCP data segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataSegment {
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
}

impl DataSegment {
    /// Length of the IP datagram.
    pub fn ip_len(&self) -> u32 {
        self.len + HEADER_BYTES
    }
}

/// A half-open range of segment numbers `[start, end)` reported by SACK.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SackBlock {
    pub start: u64,
    pub end: u64,
}

/// A pure TCP ACK.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AckSegment {
    pub flow: FlowId,
    /// Cumulative ACK: the next segment the receiver expects.
    pub ack: u64,
    /// SACK blocks, most recent first (RFC 2018 §4); `sack_len` of them are valid.
    pub sack: [SackBlock; MAX_SACK_BLOCKS],
    pub sack_len: u8,
    /// True when the first SACK block reports a duplicate segment (D-SACK, RFC 2883).
    pub dsack: bool,
    /// Receiver's timestamp value (TSval).
    pub tsval: u32,
    /// Echo of the TSval of the segment that triggered this ACK (TSecr, RFC 7323 §4.3).
    pub tsecr: u32,
    /// When the receiver sent this ACK.
    pub sent_at: Time,
    /// The value a scheme's receiver-side agent stamped on it (`None` for schemes
    /// without one; see `cellcc_congestion::feedback`). Boxed so that the ACKs of every
    /// other scheme stay small: they are moved through queues and delay lines per packet.
    pub feedback: Option<Box<ReceiverFeedback>>,
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
        HEADER_BYTES + sack + self.feedback.as_ref().map_or(0, |f| f.wire_bytes())
    }

    /// The valid SACK blocks.
    pub fn sack_blocks(&self) -> &[SackBlock] {
        &self.sack[..self.sack_len as usize]
    }
}

/// Anything a link carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Packet {
    Data(DataSegment),
    Ack(AckSegment),
}

impl Packet {
    pub fn ip_len(&self) -> u32 {
        match self {
            Packet::Data(d) => d.ip_len(),
            Packet::Ack(a) => a.ip_len(),
        }
    }
    pub fn flow(&self) -> FlowId {
        match self {
            Packet::Data(d) => d.flow,
            Packet::Ack(a) => a.flow,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        };
        assert_eq!(d.ip_len(), 1500);
        let mut a = AckSegment {
            flow: 0,
            ack: 1,
            sack: [SackBlock::default(); MAX_SACK_BLOCKS],
            sack_len: 0,
            dsack: false,
            tsval: 0,
            tsecr: 0,
            sent_at: Time::ZERO,
            feedback: None,
        };
        // A pure ACK is 52 bytes; Mahimahi charges 56 with the TUN header.
        assert_eq!(a.ip_len(), 52);
        a.sack_len = 3;
        assert_eq!(a.ip_len(), 52 + 4 + 24);
        // A receiver agent's feedback: a 4-byte option header and 4 bytes per value.
        a.feedback = Some(Box::new(cellcc_congestion::ReceiverFeedback::new(&[1, 2])));
        assert_eq!(a.ip_len(), 52 + 4 + 24 + 4 + 8);
    }
}
