//! The queue disciplines a link can be configured with: [`QueueSpec`], as a scenario or
//! Mahimahi's `--*-queue=` option spells it, and the `Discipline` it builds. This is
//! where the FIFOs of `queue.rs` and the AQMs of `aqm/` meet; both sit below it.

use std::collections::VecDeque;
use std::fmt;

use cellcc_units::Time;

use crate::aqm::{AqmConfigError, Codel, CodelConfig, Pie, PieConfig};
use crate::queue::{DroppedPacket, Fifo, Limits, Overflow, PacketQueue, Queued};

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
        /// Most packets waiting (`packets=`); `None`: no packet limit.
        #[serde(default)]
        packets: Option<u64>,
        /// Most charged bytes waiting (`bytes=`, IP length plus framing); `None`: no byte limit.
        #[serde(default)]
        bytes: Option<u64>,
    },
    /// Accept the arrival, then drop from the head until within the limits.
    #[serde(rename = "drophead")]
    DropHead {
        /// Most packets waiting (`packets=`); `None`: no packet limit.
        #[serde(default)]
        packets: Option<u64>,
        /// Most charged bytes waiting (`bytes=`, IP length plus framing); `None`: no byte limit.
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
    /// A drop-tail or drop-head queue without any limit.
    #[error("{discipline} queue needs a limit: give `packets` and/or `bytes`")]
    NoLimit {
        /// `droptail` or `drophead`.
        discipline: &'static str,
    },
    /// A limit of 0 (Mahimahi reads `packets=0` as no limit; here no limit is spelled by
    /// omitting the key).
    #[error("{discipline} queue: `{limit} = 0` is not a limit; use a positive value, or omit it for no {limit} limit")]
    ZeroLimit {
        /// `droptail` or `drophead`.
        discipline: &'static str,
        /// `packets` or `bytes`.
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
}
