//! How the bottleneck serves its queue: a Mahimahi trace of delivery opportunities, or a
//! constant-rate serialiser.
//!
//! Trace service (Mahimahi `mm-link`, ravinet/mahimahi `src/frontend/link_queue.cc`):
//! line i of the trace is an opportunity to send [`OPPORTUNITY_BYTES`] at `ts[i]` ms. In
//! [`TraceMode::Loop`] cycle k replays the trace shifted by k × period, period = the last
//! timestamp, so opportunity (k, i) is at `k × period + ts[i]` ms; a trace starting at 0
//! thus has two opportunities at every wrap. [`TraceMode::Once`] stops after cycle 0.
//!
//! Constant service: a work-conserving serialiser at a fixed rate. A busy period that
//! starts at `epoch` finishes its n-th packet at `epoch + ceil(bits_1..n × 1e9 / rate)` ns,
//! computed from the epoch so that rounding never accumulates.

use std::sync::Arc;

use cellcc_units::{Bandwidth, Dur, Time, NS_PER_S};

use crate::discipline::QueueSpecError;
use crate::impair::Outages;
use crate::trace::{Position, Trace, TraceMode, OPPORTUNITY_BYTES};

/// Bytes Mahimahi adds to every packet it carries: the TUN packet-information header
/// (flags + protocol) read along with the IP packet, so a 1500-byte IP packet fills one
/// 1504-byte opportunity and a 52-byte ACK costs 56.
pub const MAHIMAHI_FRAMING_BYTES: u32 = 4;

/// Slowest constant-rate link: 1 kbit/s. Below it a 1500-byte packet takes over 12 s,
/// and rates round to whole bit/s (5e-7 Mbit/s is 0 bit/s). The scenario loader and
/// the emulator's `--rate-mbps` share this bound.
pub const MIN_RATE_MBPS: f64 = 0.001;
/// Fastest constant-rate link: 1 Tbit/s (a 1500-byte packet then takes 12 ns).
pub const MAX_RATE_MBPS: f64 = 1_000_000.0;

/// What limits how fast the link sends.
#[derive(Clone, Debug)]
pub enum LinkService {
    /// Mahimahi trace of delivery opportunities; every packet is charged
    /// `ip_len + MAHIMAHI_FRAMING_BYTES`.
    Trace {
        /// The delivery opportunities.
        trace: Arc<Trace>,
        /// Whether the trace loops or plays once.
        mode: TraceMode,
    },
    /// Fixed rate; every packet is charged `ip_len + framing_bytes` (0 by default).
    Constant {
        /// The link rate.
        rate: Bandwidth,
        /// Bytes added to each packet's IP length before it is serialised.
        framing_bytes: u32,
    },
}

/// A link that cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LinkConfigError {
    /// The rate is 0 bit/s.
    #[error("constant-rate link: the rate is 0 bit/s, so nothing would ever be sent; give a positive rate")]
    ZeroRate,
    /// The queue discipline is unusable.
    #[error(transparent)]
    Queue(#[from] QueueSpecError),
}

impl LinkService {
    /// A trace link.
    pub fn trace(trace: Arc<Trace>, mode: TraceMode) -> Self {
        LinkService::Trace { trace, mode }
    }

    /// A constant-rate link with no per-packet framing.
    pub fn constant(rate: Bandwidth) -> Self {
        LinkService::Constant {
            rate,
            framing_bytes: 0,
        }
    }

    /// Check the service can send: a constant rate must be above 0 bit/s.
    pub fn validate(&self) -> Result<(), LinkConfigError> {
        match self {
            LinkService::Trace { .. } => Ok(()),
            LinkService::Constant { rate, .. } if rate.bits_per_sec == 0 => {
                Err(LinkConfigError::ZeroRate)
            }
            LinkService::Constant { .. } => Ok(()),
        }
    }

    /// Bytes added to the IP length of every packet to get the bytes the link charges.
    pub fn framing_bytes(&self) -> u32 {
        match self {
            LinkService::Trace { .. } => MAHIMAHI_FRAMING_BYTES,
            LinkService::Constant { framing_bytes, .. } => *framing_bytes,
        }
    }

    /// Largest charged size the link accepts (one opportunity on a trace link).
    pub fn max_charged_bytes(&self) -> Option<u32> {
        match self {
            LinkService::Trace { .. } => Some(OPPORTUNITY_BYTES),
            LinkService::Constant { .. } => None,
        }
    }

    /// Bytes the link could carry in `[from, to)`: [`OPPORTUNITY_BYTES`] per opportunity,
    /// or rate × duration. Independent of traffic, so usable for utilisation.
    pub fn capacity_bytes(&self, from: Time, to: Time) -> u64 {
        self.capacity_bytes_outside(from, to, &Outages::none())
    }

    /// [`LinkService::capacity_bytes`] with nothing offered inside `outages`: their
    /// opportunities are not counted, and a constant-rate link counts only the time
    /// outside them.
    pub fn capacity_bytes_outside(&self, from: Time, to: Time, outages: &Outages) -> u64 {
        if to <= from {
            return 0;
        }
        match self {
            LinkService::Trace { trace, mode } => {
                let before = |t| trace.ordinal(trace.first_at_or_after(t), *mode);
                let count = |a, b| before(b) - before(a);
                let down: u128 = outages
                    .overlapping(from, to)
                    .iter()
                    .map(|w| count(w.start.max(from), w.end.min(to)))
                    .sum();
                let opportunities = count(from, to) - down;
                u64::try_from(opportunities * u128::from(OPPORTUNITY_BYTES)).unwrap_or(u64::MAX)
            }
            LinkService::Constant { rate, .. } => {
                rate.bytes_in((to - from) - outages.down_time_in(from, to))
            }
        }
    }
}

/// The next opportunity of a trace link.
#[derive(Clone, Debug)]
pub(crate) struct Opportunities {
    trace: Arc<Trace>,
    mode: TraceMode,
    next: Position,
    /// Time of `next`; `None` once a `Once` trace is over (or beyond `Time::MAX`).
    next_at: Option<Time>,
}

impl Opportunities {
    pub(crate) fn new(trace: Arc<Trace>, mode: TraceMode) -> Self {
        let mut opportunities = Opportunities {
            trace,
            mode,
            next: Position { cycle: 0, index: 0 },
            next_at: None,
        };
        opportunities.move_to(Position { cycle: 0, index: 0 });
        opportunities
    }

    pub(crate) fn next_at(&self) -> Option<Time> {
        self.next_at
    }

    fn move_to(&mut self, pos: Position) {
        self.next = pos;
        self.next_at = match self.mode {
            TraceMode::Once if pos.cycle > 0 => None,
            _ => self.trace.time_of(pos),
        };
    }

    /// Moves past the opportunity at `next_at`, which has just been served.
    pub(crate) fn step(&mut self) {
        let mut pos = self.next;
        pos.index += 1;
        if pos.index == self.trace.len() {
            // Wrap: Mahimahi advances its time base by the last timestamp.
            pos = Position {
                cycle: pos.cycle + 1,
                index: 0,
            };
        }
        self.move_to(pos);
    }

    /// Passes over, unserved, every opportunity at or before `now` in O(log n); returns
    /// how many there were.
    pub(crate) fn skip_through(&mut self, now: Time) -> u64 {
        match self.next_at {
            Some(t) if t <= now => {}
            _ => return 0,
        }
        let target = self.trace.first_after(now);
        let skipped =
            self.trace.ordinal(target, self.mode) - self.trace.ordinal(self.next, self.mode);
        self.move_to(target);
        u64::try_from(skipped).unwrap_or(u64::MAX)
    }

    /// The next opportunity that is not inside an outage (`None` past the end of a `Once`
    /// trace).
    pub(crate) fn next_outside(&self, outages: &Outages) -> Option<Time> {
        let mut at = self.next_at?;
        while let Some(w) = outages.containing(at) {
            let pos = self.trace.first_at_or_after(w.end);
            at = match self.mode {
                TraceMode::Once if pos.cycle > 0 => return None,
                _ => self.trace.time_of(pos)?,
            };
        }
        Some(at)
    }
}

/// Finish times on a constant-rate link.
#[derive(Clone, Debug)]
pub(crate) struct Serializer {
    rate: Bandwidth,
    /// Start of the current busy period.
    epoch: Time,
    /// Bits finished or in progress since `epoch`.
    bits_since_epoch: u128,
    /// Finish time of the last packet started.
    last_finish: Time,
}

impl Serializer {
    pub(crate) fn new(rate: Bandwidth) -> Self {
        Serializer {
            rate,
            epoch: Time::ZERO,
            bits_since_epoch: 0,
            last_finish: Time::ZERO,
        }
    }

    /// Starts sending `bytes` at `start` (never before the previous finish) and returns
    /// when the last bit leaves.
    pub(crate) fn start(&mut self, start: Time, bytes: u32) -> Time {
        debug_assert!(
            start >= self.last_finish,
            "the link sends one packet at a time"
        );
        if start > self.last_finish {
            // The link was idle: a new busy period.
            self.epoch = start;
            self.bits_since_epoch = 0;
        }
        self.bits_since_epoch += u128::from(bytes) * 8;
        // A validated rate is positive.
        let ns = (self.bits_since_epoch * u128::from(NS_PER_S))
            .div_ceil(u128::from(self.rate.bits_per_sec));
        self.last_finish = self
            .epoch
            .saturating_add(Dur(u64::try_from(ns).unwrap_or(u64::MAX)));
        self.last_finish
    }

    /// Abandons the packet on the wire at `at` (a `drop` outage): the link is idle from
    /// `at`, and the next packet starts a new busy period.
    pub(crate) fn abort(&mut self, at: Time) {
        self.epoch = at;
        self.bits_since_epoch = 0;
        self.last_finish = at;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializer_has_no_rounding_drift() {
        // 1000 bytes at 3 Mbit/s = 8000/3 µs: per-packet rounding would gain 1 ns a packet.
        let mut s = Serializer::new(Bandwidth::from_bps(3_000_000));
        let mut finish = Time::ZERO;
        for _ in 0..3000 {
            finish = s.start(finish, 1000);
        }
        assert_eq!(finish, Time::from_secs(8));
    }

    #[test]
    fn skip_through_counts_wasted_opportunities() {
        let trace = Arc::new(Trace::from_timestamps(vec![0, 2], "t").unwrap());
        let mut o = Opportunities::new(trace.clone(), TraceMode::Loop);
        // Opportunities 0, 2, 2, 4, 4: five at or before 4 ms.
        assert_eq!(o.skip_through(Time::from_ms(4)), 5);
        assert_eq!(o.next_at(), Some(Time::from_ms(6)));
        assert_eq!(o.skip_through(Time::from_ms(5)), 0);
        let mut once = Opportunities::new(trace, TraceMode::Once);
        assert_eq!(once.skip_through(Time::from_ms(100)), 2);
        assert_eq!(once.next_at(), None);
    }
}
