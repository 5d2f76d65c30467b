//! Checks against the shared real traces; each test skips (with a note) when the traces
//! are not available, and fails instead under `CELLCC_REQUIRE_TRACES=1` (see `common`).

mod common;

use std::sync::Arc;
use std::time::Instant;

use cellcc_link::{Link, LinkService, QueueSpec, Trace, TraceMode, NOMINAL_PACKET_BYTES};
use cellcc_units::{Dur, Time};
use common::shared_trace;

/// (file, duration s, mean Mbit/s, lines, max gap ms) from the shared traces README.
const README: &[(&str, f64, f64, u64, u64)] = &[
    ("ATT-LTE-driving-2016.down", 120.0, 4.560, 45604, 1123),
    ("ATT-LTE-driving-2016.up", 120.0, 1.910, 19101, 4061),
    ("ATT-LTE-driving.down", 786.1, 5.173, 338895, 1515),
    ("ATT-LTE-driving.up", 1012.5, 0.834, 70336, 78319),
    ("TMobile-LTE-driving.down", 474.6, 12.770, 505078, 1058),
    ("TMobile-LTE-short.down", 140.0, 16.703, 194846, 917),
    ("TMobile-LTE-short.up", 140.0, 13.318, 155381, 724),
    ("TMobile-UMTS-driving.down", 928.4, 2.020, 156262, 5753),
    ("TMobile-UMTS-driving.up", 931.2, 0.943, 73197, 5830),
    ("Verizon-EVDO-driving.down", 1062.0, 0.521, 46065, 11567),
    ("Verizon-EVDO-driving.up", 1064.7, 0.843, 74768, 11198),
    ("Verizon-LTE-short.down", 140.0, 5.028, 58655, 1447),
    ("Verizon-LTE-short.up", 140.0, 5.946, 69367, 1718),
];

#[test]
fn stats_match_the_readme() {
    for &(file, duration_s, mean_mbps, lines, max_gap_ms) in README {
        let Some(path) = shared_trace(file) else {
            continue;
        };
        let stats = Trace::from_file(&path).unwrap().stats();
        assert_eq!(stats.opportunities, lines, "{file}");
        assert_eq!(stats.max_gap, Dur::from_ms(max_gap_ms), "{file}");
        assert!(
            (stats.duration.as_secs_f64() - duration_s).abs() <= 0.05,
            "{file}: {:?}",
            stats.duration
        );
        assert!(
            (stats.mean_mbps - mean_mbps).abs() <= 0.0005,
            "{file}: {}",
            stats.mean_mbps
        );
        assert!(stats.longest_outage >= stats.max_gap);
        assert!(
            stats.capacity_p5_mbps <= stats.capacity_p50_mbps
                && stats.capacity_p95_mbps <= stats.max_mbps_1s
        );
    }
}

/// A saturated link delivers exactly 1500 bytes of IP per opportunity, second by second.
///
/// All packets arrive at time 0, so the opportunities at 0 ms cannot be used (they are
/// served before the arrivals); over one loop period (0, P] the link instead uses the
/// next cycle's opportunities at P, which are the same lines. So over (0, P] the link
/// serves exactly one line per trace line, with lines at 0 ms played at P.
#[test]
fn saturated_tmobile_downlink_delivers_the_trace_capacity() {
    let Some(path) = shared_trace("TMobile-LTE-short.down") else {
        return;
    };
    let trace = Arc::new(Trace::from_file(&path).unwrap());
    let period_ms = trace.period_ms();
    let lines = trace.len();
    let mut link = Link::new(
        LinkService::trace(trace.clone(), TraceMode::Loop),
        QueueSpec::Infinite,
    );
    for id in 0..lines as u32 + 10 {
        assert_eq!(
            link.enqueue(Time::ZERO, id, NOMINAL_PACKET_BYTES),
            cellcc_link::EnqueueResult::Accepted
        );
    }
    let seconds = period_ms.div_ceil(1000) as usize;
    let mut delivered = vec![0u64; seconds];
    let mut total = 0u64;
    while let Some(t) = link
        .next_wakeup()
        .filter(|&t| t <= Time::from_ms(period_ms))
    {
        link.advance(t);
        while let Some(d) = link.pop_departure() {
            assert_eq!(d.departed_at, t);
            delivered[((d.departed_at.as_ms() - 1) / 1000) as usize] += u64::from(d.ip_len);
            total += u64::from(d.ip_len);
        }
    }
    let mut expected = vec![0u64; seconds];
    for &ts in trace.timestamps_ms() {
        let played_at = if ts == 0 { period_ms } else { u64::from(ts) };
        expected[((played_at - 1) / 1000) as usize] += u64::from(NOMINAL_PACKET_BYTES);
    }
    // Seconds are (s, s+1] here because nothing departs at 0; compare them one by one.
    for (s, (&got, &want)) in delivered.iter().zip(&expected).enumerate() {
        assert_eq!(got, want, "second {s}");
    }
    assert_eq!(total, lines as u64 * 1500);
    let mean_mbps = total as f64 * 8.0 / (period_ms as f64 / 1e3) / 1e6;
    assert!((mean_mbps - 16.703).abs() < 0.0005, "{mean_mbps}");
    assert_eq!(
        link.capacity_bytes(Time(1), Time::from_ms(period_ms) + Dur(1)),
        lines as u64 * 1504
    );
    assert_eq!(
        link.stats().wasted_bytes,
        6 * 1504,
        "only the six opportunities at 0 ms were wasted"
    );
}

/// The simulator's typical load: a backlogged downlink (~200k data packets over 140 s)
/// and ~100k ACKs on the uplink, driven event by event. Prints the time taken; run with
/// `cargo test --release -p cellcc-link --test real_traces -- --ignored --nocapture`.
#[test]
#[ignore = "timing; run explicitly in release mode"]
fn link_work_for_a_140_s_run() {
    let (Some(down), Some(up)) = (
        shared_trace("TMobile-LTE-short.down"),
        shared_trace("TMobile-LTE-short.up"),
    ) else {
        return;
    };
    let down = Arc::new(Trace::from_file(down).unwrap());
    let up = Arc::new(Trace::from_file(up).unwrap());
    let queue = QueueSpec::DropTail {
        packets: Some(100),
        bytes: None,
    };
    let mut data: Link<u32> = Link::new(LinkService::trace(down, TraceMode::Loop), queue.clone());
    let mut acks: Link<u32> = Link::new(LinkService::trace(up, TraceMode::Loop), queue);
    let end = Time::from_secs(140);
    let start = Instant::now();
    let (mut sent, mut delivered, mut acked) = (0u32, 0u32, 0u32);
    // Offer a data packet every 0.7 ms (slightly above capacity) and an ACK for every
    // second delivered packet.
    let mut next_send = Time::ZERO;
    loop {
        let wake = [Some(next_send), data.next_wakeup(), acks.next_wakeup()]
            .into_iter()
            .flatten()
            .min()
            .unwrap();
        if wake > end {
            break;
        }
        if wake == next_send {
            let _ = data.enqueue(wake, sent, 1500);
            sent += 1;
            next_send = wake + Dur::from_us(700);
        }
        data.advance(wake);
        while let Some(d) = data.pop_departure() {
            delivered += 1;
            if d.item % 2 == 0 {
                let _ = acks.enqueue(wake, d.item, 52);
            }
        }
        acks.advance(wake);
        while acks.pop_departure().is_some() {
            acked += 1;
        }
    }
    let elapsed = start.elapsed();
    println!(
        "{sent} data offered, {delivered} delivered, {acked} ACKs in {elapsed:?} ({} opportunities)",
        data.stats().opportunities + acks.stats().opportunities
    );
}
