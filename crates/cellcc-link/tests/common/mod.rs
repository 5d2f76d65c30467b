//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use cellcc_link::{Link, LinkService, QueueSpec, Released, Stage, Trace, TraceMode};
use cellcc_units::{Bandwidth, Time};

/// Directory of the shared Mahimahi traces, relative to this crate.
pub const TRACE_DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/traces/mahimahi"
);

/// Path of a shared trace, or `None` (with a note) when it is not available.
pub fn shared_trace(name: &str) -> Option<PathBuf> {
    let path = PathBuf::from(TRACE_DIR).join(name);
    if path.is_file() {
        Some(path)
    } else {
        eprintln!("note: skipping, shared trace {name} not found under {TRACE_DIR}");
        None
    }
}

pub fn trace_link(timestamps_ms: &[u32], mode: TraceMode, queue: QueueSpec) -> Link<u32> {
    let trace = Trace::from_timestamps(timestamps_ms.to_vec(), "test").unwrap();
    Link::new(LinkService::trace(Arc::new(trace), mode), queue)
}

/// A constant-rate link of `mbps` with an infinite queue.
pub fn constant_link(mbps: f64) -> Link<u32> {
    Link::new(
        LinkService::constant(Bandwidth::from_mbps(mbps)),
        QueueSpec::Infinite,
    )
}

/// Drives `stage` event by event with packets of `ip_len` bytes, item `i` arriving at
/// `arrivals[i]`: before each arrival, every wake-up due by then is run; then the
/// arrival is pushed; at the end every remaining wake-up. Returns `(item, release
/// time)` in release order, checking each release happens at its wake-up and that the
/// stage ends empty.
pub fn run_stage<S: Stage<u32>>(stage: &mut S, arrivals: &[Time], ip_len: u32) -> Vec<(u32, Time)> {
    let mut out = Vec::new();
    let mut drain = |stage: &mut S, until: Option<Time>| {
        while let Some(t) = stage
            .next_wakeup()
            .filter(|&t| until.is_none_or(|u| t <= u))
        {
            stage.advance(t);
            while let Some(Released { item, at, .. }) = stage.pop_output() {
                assert_eq!(at, t, "released at its wake-up");
                out.push((item, at));
            }
        }
    };
    for (id, &a) in arrivals.iter().enumerate() {
        drain(stage, Some(a));
        stage.push(a, id as u32, ip_len);
    }
    drain(stage, None);
    assert!(stage.is_empty());
    out
}

/// Runs the link event by event (advance at each `next_wakeup`) until it is idle or the
/// next event is after `until`; returns `(item, departed_at)` in departure order.
pub fn run_until(link: &mut Link<u32>, until: Time) -> Vec<(u32, Time)> {
    let mut out = Vec::new();
    while let Some(t) = link.next_wakeup().filter(|&t| t <= until) {
        link.advance(t);
        while let Some(d) = link.pop_departure() {
            assert_eq!(
                d.departed_at, t,
                "event-driven departures happen at the wake-up time"
            );
            out.push((d.item, d.departed_at));
        }
    }
    out
}

/// Departure times in whole milliseconds (all trace departures are whole ms).
pub fn ms(departures: &[(u32, Time)]) -> Vec<u64> {
    departures
        .iter()
        .map(|&(_, t)| {
            assert_eq!(t.as_ns() % 1_000_000, 0);
            t.as_ms()
        })
        .collect()
}
