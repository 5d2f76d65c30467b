//! Receiver-side agents: congestion controls whose decisions are made at the receiver.
//!
//! Some schemes (Sprout) model the link at the receiver, from the arrival times of data
//! packets, and send the result back to the sender in every acknowledgement. A scheme of
//! that kind returns a [`ReceiverAgent`] from
//! [`CongestionControl::receiver_agent`](crate::CongestionControl::receiver_agent); the
//! TCP receiver of the flow then
//!
//! 1. tells the agent about every arriving data segment
//!    ([`ReceiverAgent::on_data`]: arrival time and payload bytes, duplicates and
//!    out-of-order segments included, before the ACK decision), and
//! 2. stamps [`ReceiverAgent::feedback`] on every ACK it sends (immediate or delayed),
//!
//! and the sender hands each stamped value to
//! [`CongestionControl::on_receiver_feedback`](crate::CongestionControl::on_receiver_feedback)
//! before the rest of the ACK's processing. Schemes without an agent send ACKs without
//! feedback, byte for byte as before. The agent is sans-I/O like everything here: the
//! receiver passes `now` in.
//!
//! On the wire the feedback is modelled as an RFC 6994 experimental TCP option: 4 bytes
//! (kind, length, 16-bit experiment id) plus 4 bytes per value. The 40-byte option space
//! is not enforced (with three SACK blocks and timestamps a real ACK would have to drop
//! blocks); the bytes are charged to the ACK's length so the uplink carries them.

use cellcc_units::Time;

/// Most values one ACK can carry.
pub const FEEDBACK_VALUES: usize = 8;

/// Bytes of the option header (kind, length, ExID; RFC 6994 §3).
const OPTION_HEADER_BYTES: u32 = 4;

/// A small vector of values a receiver-side agent stamps on an ACK; the meaning belongs
/// to the scheme (Sprout: cumulative delivery forecasts, packets).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
pub struct ReceiverFeedback {
    values: [u32; FEEDBACK_VALUES],
    len: u8,
}

impl ReceiverFeedback {
    /// Feedback carrying `values` (at most [`FEEDBACK_VALUES`]; the agent's invariant).
    pub fn new(values: &[u32]) -> Self {
        assert!(
            values.len() <= FEEDBACK_VALUES,
            "an ACK carries at most {FEEDBACK_VALUES} feedback values"
        );
        let mut v = [0; FEEDBACK_VALUES];
        v[..values.len()].copy_from_slice(values);
        ReceiverFeedback {
            values: v,
            len: values.len() as u8,
        }
    }

    /// The values, in the order the agent gave them.
    pub fn values(&self) -> &[u32] {
        &self.values[..self.len as usize]
    }

    /// Bytes the option adds to the ACK.
    pub fn wire_bytes(&self) -> u32 {
        OPTION_HEADER_BYTES + 4 * self.len as u32
    }
}

/// The receiver-side half of a congestion control (see the module documentation).
pub trait ReceiverAgent: std::fmt::Debug + Send {
    /// A data segment with `payload` bytes reached the receiver at `now` (every arrival,
    /// including duplicates and out-of-order segments; called before the ACK decision).
    fn on_data(&mut self, now: Time, payload: u32);

    /// An ACK leaves the receiver at `now`: the feedback to stamp on it. `now` never
    /// decreases between calls of either method.
    fn feedback(&mut self, now: Time) -> ReceiverFeedback;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feedback_keeps_values_and_charges_an_option() {
        let f = ReceiverFeedback::new(&[3, 5, 8]);
        assert_eq!(f.values(), &[3, 5, 8]);
        assert_eq!(f.wire_bytes(), 4 + 12);
        assert_eq!(ReceiverFeedback::default().values(), &[] as &[u32]);
    }
}
