//! Link impairments beyond the bottleneck itself: outages, per-packet jitter and
//! HARQ-like link-layer retransmission delay. (Bursty Gilbert–Elliott loss is a loss
//! process and lives with the others in `loss/`.)
//!
//! * [`Outages`]: windows in which a [`crate::Link`] has no capacity; `stall` windows
//!   buffer arrivals, `drop` windows lose them and flush the link (a radio link failure).
//!   They live in the link itself (see `Link::set_outages`), because they change what the
//!   link serves and its capacity.
//! * [`Jitter`]: a [`crate::Stage`] adding a random delay per packet without reordering.
//! * [`Harq`]: a [`crate::Stage`] delaying a random share of packets by whole HARQ round
//!   trips instead of losing them.
//!
//! Configuration structs take user units (`_ms`, `_s` floats, probabilities) and are
//! checked by `validate()`, which names the offending key in a [`crate::ParamError`]; the
//! models convert them to integer nanoseconds once, at construction (helpers in
//! `params.rs`).

mod harq;
mod jitter;
mod outage;

pub use harq::{Harq, HarqConfig, HarqStats};
pub use jitter::{Jitter, JitterConfig};
pub use outage::{OutageConfig, OutageKind, OutageWindow, Outages};
