//! Active queue management: CoDel (RFC 8289) and PIE (RFC 8033), each in two variants.
//!
//! * [`AqmVariant::Rfc`]: the algorithm as its RFC specifies it, with the Linux choices
//!   the RFC defers to (CoDel's Newton-step control law).
//! * [`AqmVariant::Mahimahi`]: what Mahimahi's `--*-queue=codel` / `--*-queue=pie`
//!   actually do (ravinet/mahimahi `src/packet/codel_packet_queue.cc`,
//!   `src/packet/pie_packet_queue.cc`): a whole-millisecond clock, and the quirks listed
//!   in each algorithm's header.
//!
//! Both disciplines are sans-I/O [`crate::PacketQueue`]s: the link passes the time of
//! every arrival and every dequeue (the delivery opportunity or service start), and
//! packets dropped by the AQM go to the link's drop outbox with
//! [`crate::DropReason::Aqm`], whether the drop happens at arrival (PIE) or at dequeue
//! (CoDel). Both also keep optional `packets`/`bytes` limits: an arrival that would
//! exceed one is refused ([`crate::DropReason::QueueFull`]), as in Mahimahi's
//! `DroppingPacketQueue`.
//!
//! PIE's random decisions come from a ChaCha8 stream owned by the queue and seeded when
//! the link is built ([`crate::Link::try_with_seed`]).
//!
//! The user-facing description, with measured numbers, is `docs/aqm.md`.

mod codel;
mod pie;
#[cfg(test)]
mod tests;

use std::fmt;

use cellcc_units::Time;

use crate::queue::{DropReason, DroppedPacket, Queued};
use crate::trace::OPPORTUNITY_BYTES;

pub use codel::{Codel, CodelConfig};
pub use pie::{Pie, PieConfig, PieDelayEstimator};

/// Largest packet, in charged bytes: RFC 8289's MAXPACKET and RFC 8033's MEAN_PKTSIZE,
/// taken as one full Mahimahi opportunity (a 1500-byte IP packet plus 4 bytes of
/// framing), which is also Mahimahi's `PACKET_SIZE` in both AQMs.
pub(crate) const MAX_PACKET_BYTES: u64 = OPPORTUNITY_BYTES as u64;

/// Largest time parameter accepted, in ms (one hour): far beyond any sensible AQM
/// setting, and keeps every nanosecond product well inside 64 bits.
pub const MAX_AQM_TIME_MS: u64 = 3_600_000;

/// Which behaviour an AQM reproduces.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum AqmVariant {
    /// The RFC (RFC 8289 for CoDel, RFC 8033 for PIE).
    #[default]
    Rfc,
    /// Mahimahi's implementation, quirks included.
    Mahimahi,
}

impl fmt::Display for AqmVariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AqmVariant::Rfc => "rfc",
            AqmVariant::Mahimahi => "mahimahi",
        })
    }
}

/// An unusable AQM parameter: names the discipline, the parameter and what is wrong,
/// e.g. `codel: interval_ms must be > 0`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{discipline}: {parameter} {problem}")]
pub struct AqmConfigError {
    /// `"codel"` or `"pie"`.
    pub discipline: &'static str,
    /// The parameter's name as written in a scenario, e.g. `"interval_ms"`.
    pub parameter: &'static str,
    /// What is wrong and how to fix it.
    pub problem: String,
}

impl AqmConfigError {
    pub(crate) fn new(
        discipline: &'static str,
        parameter: &'static str,
        problem: impl Into<String>,
    ) -> Self {
        AqmConfigError {
            discipline,
            parameter,
            problem: problem.into(),
        }
    }
}

/// Checks a time parameter in ms: at most [`MAX_AQM_TIME_MS`], and positive unless
/// `zero_ok`.
pub(crate) fn check_ms(
    discipline: &'static str,
    parameter: &'static str,
    value: u64,
    zero_ok: bool,
) -> Result<(), AqmConfigError> {
    if value == 0 && !zero_ok {
        return Err(AqmConfigError::new(discipline, parameter, "must be > 0"));
    }
    if value > MAX_AQM_TIME_MS {
        return Err(AqmConfigError::new(
            discipline,
            parameter,
            format!("must be at most {MAX_AQM_TIME_MS} (one hour), got {value}"),
        ));
    }
    Ok(())
}

/// Checks an optional queue limit: absent (no limit) or positive.
pub(crate) fn check_limit(
    discipline: &'static str,
    parameter: &'static str,
    value: Option<u64>,
) -> Result<(), AqmConfigError> {
    if value == Some(0) {
        return Err(AqmConfigError::new(
            discipline,
            parameter,
            format!("must be > 0; omit it for no {parameter} limit"),
        ));
    }
    Ok(())
}

/// Writes the optional limits in Mahimahi's spelling (`, packets=N, bytes=N`).
pub(crate) fn fmt_limits(
    f: &mut fmt::Formatter<'_>,
    packets: Option<u64>,
    bytes: Option<u64>,
) -> fmt::Result {
    if let Some(p) = packets {
        write!(f, ", packets={p}")?;
    }
    if let Some(b) = bytes {
        write!(f, ", bytes={b}")?;
    }
    Ok(())
}

/// The drop record of a packet the AQM discards at `at`.
pub(crate) fn aqm_drop<T>(packet: Queued<T>, at: Time) -> DroppedPacket<T> {
    DroppedPacket {
        item: packet.item,
        ip_len: packet.ip_len,
        enqueued_at: packet.enqueued_at,
        at,
        reason: DropReason::Aqm,
    }
}
