//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use cellcc_link::{Link, LinkService, QueueSpec, Released, Stage, Trace, TraceMode};
use cellcc_units::{Bandwidth, Time};

/// Directory of the shared Mahimahi traces, relative to this crate.
const TRACE_DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/traces/mahimahi"
);

/// Set to `1` (CI does, in `.ci/run`) to make an absent shared trace a test failure
/// instead of a skip.
const REQUIRE_TRACES_ENV: &str = "CELLCC_REQUIRE_TRACES";

/// Path of a shared trace, or `None` (with a note) when it is not available. Every test
/// that needs the shared traces finds them here. Under `CELLCC_REQUIRE_TRACES=1` a
/// missing trace panics instead, naming the path and the variable.
pub(crate) fn shared_trace(name: &str) -> Option<PathBuf> {
    let path = PathBuf::from(TRACE_DIR).join(name);
    if path.is_file() {
        return Some(path);
    }
    if std::env::var_os(REQUIRE_TRACES_ENV).is_some_and(|v| v == "1") {
        panic!(
            "shared trace {} not found, and {REQUIRE_TRACES_ENV}=1 requires the shared \
             traces (unset it to skip the tests that need them)",
            path.display()
        );
    }
    eprintln!("note: skipping, shared trace {name} not found under {TRACE_DIR}");
    None
}

pub(crate) fn trace_link(timestamps_ms: &[u32], mode: TraceMode, queue: QueueSpec) -> Link<u32> {
    let trace = Trace::from_timestamps(timestamps_ms.to_vec(), "test").unwrap();
    Link::new(LinkService::trace(Arc::new(trace), mode), queue)
}

/// A constant-rate link of `mbps` with an infinite queue.
pub(crate) fn constant_link(mbps: f64) -> Link<u32> {
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
pub(crate) fn run_stage<S: Stage<u32>>(
    stage: &mut S,
    arrivals: &[Time],
    ip_len: u32,
) -> Vec<(u32, Time)> {
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
pub(crate) fn run_until(link: &mut Link<u32>, until: Time) -> Vec<(u32, Time)> {
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
pub(crate) fn ms(departures: &[(u32, Time)]) -> Vec<u64> {
    departures
        .iter()
        .map(|&(_, t)| {
            assert_eq!(t.as_ns() % 1_000_000, 0);
            t.as_ms()
        })
        .collect()
}
