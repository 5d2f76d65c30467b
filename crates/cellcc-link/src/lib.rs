//! Bottleneck links for the cellcc simulator: Mahimahi-exact trace-driven links,
//! constant-rate links, queue disciplines, propagation delay and random loss.
//!
//! Everything here is sans-I/O: no clock, no global random generator. The current time
//! comes in as `now` on every call and randomness as a `&mut impl rand_core::Rng`, so the
//! same code can drive a discrete-event simulation or a real-time emulator, and the same
//! inputs always give the same outputs.
//!
//! # Model
//!
//! A [`Link`] is one direction of the bottleneck: a queue discipline ([`QueueSpec`]) in
//! front of a service model ([`LinkService`]). Items are opaque (the simulator's packets)
//! and come with their IP length; the link charges `ip_len` plus framing bytes.
//!
//! * **Trace links** replay a Mahimahi trace ([`Trace`]) exactly as `mm-link` does: each
//!   line is a delivery opportunity of [`OPPORTUNITY_BYTES`] = 1504 bytes at that
//!   millisecond; each packet costs `ip_len + 4` ([`MAHIMAHI_FRAMING_BYTES`]); service is
//!   byte-level (several small packets per opportunity, a packet may span opportunities
//!   and departs at the opportunity that completes it); an opportunity's unused bytes are
//!   wasted, never banked; the trace loops with period = last timestamp
//!   ([`TraceMode::Loop`]) or plays once ([`TraceMode::Once`]). Trace time 0 is
//!   simulation time 0.
//! * **Constant-rate links** serialise back to back at a fixed rate, without waste and
//!   without rounding drift.
//!
//! # Ordering rules (Mahimahi's `rationalize` before enqueue)
//!
//! 1. [`Link::enqueue`] at `now` first serves every opportunity at or before `now`, then
//!    queues the packet: a packet arriving exactly at an opportunity's time cannot use it.
//! 2. Departures carry the opportunity (or finish) time, even if [`Link::advance`] is
//!    called later than that time.
//! 3. The packet in transit has left the queue: queue limits and
//!    [`Link::queued_packets`] do not count it.
//!
//! The per-packet `mm-link` log of a link, written the same way by the simulator and the
//! emulator, is [`mmlog`].
//!
//! Where a simulator places delay relative to the link (Mahimahi's `mm-delay` outside
//! `mm-link`: data is delayed then queued on the downlink, ACKs are queued on the uplink
//! then delayed) is described in `docs/mahimahi-compat.md`.
//!
//! ```
//! use std::sync::Arc;
//! use cellcc_link::{EnqueueResult, Link, LinkService, QueueSpec, Trace, TraceMode};
//! use cellcc_units::Time;
//!
//! let trace = Arc::new(Trace::from_timestamps(vec![1, 1, 3, 5], "example").unwrap());
//! let mut link = Link::new(LinkService::trace(trace, TraceMode::Loop), QueueSpec::Infinite);
//! for id in 0..3 {
//!     assert_eq!(link.enqueue(Time::ZERO, id, 1500), EnqueueResult::Accepted);
//! }
//! let mut times = Vec::new();
//! while let Some(t) = link.next_wakeup() {
//!     link.advance(t);
//!     while let Some(d) = link.pop_departure() {
//!         times.push(d.departed_at.as_ms());
//!     }
//! }
//! assert_eq!(times, [1, 1, 3]);
//! ```

mod aqm;
mod cell;
mod cellular;
mod delay;
mod discipline;
mod impair;
mod link;
mod loss;
pub mod mmlog;
mod params;
mod queue;
mod release;
mod service;
mod stage;
pub mod synth;
mod trace;

pub use aqm::{
    AqmConfigError, AqmVariant, Codel, CodelConfig, Pie, PieConfig, PieDelayEstimator,
    MAX_AQM_TIME_MS,
};
pub use cell::{
    Cell, CellConfig, CellError, CellSpec, CellStats, SchedulerKind, UeChannel, UeConfig, UeSpec,
    UeStats, DEFAULT_PF_TC_TTIS, LTE_TTI, NR_TTI_30KHZ,
};
pub use cellular::{
    preset, BurstStats, DownlinkGate, DownlinkGateConfig, GrantStats, Preset, ResolvedScheduling,
    SchedulingConfig, TddConfig, TddOverride, UplinkGrant, UplinkGrantConfig, PRESETS,
};
pub use delay::{
    DelayLine, DelayTrace, DelayTraceError, MAX_DELAY_STEP_MS, MAX_DELAY_TRACE_VALUES,
    MAX_TRACE_DELAY_MS,
};
pub use discipline::{QueueSpec, QueueSpecError};
pub use impair::{
    Harq, HarqConfig, HarqStats, Jitter, JitterConfig, OutageConfig, OutageKind, OutageWindow,
    Outages,
};
pub use link::{Departure, EnqueueResult, Link, LinkStats};
pub use loss::{
    BernoulliLoss, GilbertElliott, GilbertElliottConfig, LossConfig, LossError, LossModel,
};
pub use params::ParamError;
pub use queue::{DropReason, DroppedPacket, Fifo, Limits, Overflow, PacketQueue, Queued};
pub use release::ReleaseQueue;
pub use service::{
    LinkConfigError, LinkService, MAHIMAHI_FRAMING_BYTES, MAX_RATE_MBPS, MIN_RATE_MBPS,
};
pub use stage::{Delay, Released, Stage};
pub use trace::{
    Trace, TraceError, TraceMode, TraceStats, MAX_TRACE_LINE_BYTES, MAX_TRACE_OPPORTUNITIES,
    NOMINAL_PACKET_BYTES, OPPORTUNITY_BYTES,
};
