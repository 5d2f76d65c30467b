//! Story tests of the cell: who gets which TTI, when packets leave, what is wasted.

use std::sync::Arc;

use cellcc_units::Bandwidth;

use super::*;
use crate::discipline::QueueSpec;
use crate::trace::{Trace, TraceMode};

const MS: Dur = Dur::from_ms(1);

fn constant_ue(mbps: f64) -> UeSpec {
    UeSpec::new(
        UeChannel::constant(Bandwidth::from_mbps(mbps)),
        QueueSpec::Infinite,
    )
}

fn trace_ue(ts: &[u32], mode: TraceMode) -> UeSpec {
    let trace = Arc::new(Trace::from_timestamps(ts.to_vec(), "t").unwrap());
    UeSpec::new(UeChannel::trace(trace, mode), QueueSpec::Infinite)
}

fn cell(kind: SchedulerKind, tti: Dur, ues: Vec<UeSpec>) -> Cell<u32> {
    Cell::new(CellSpec::new(kind, tti, ues))
}

/// Runs the cell wake-up by wake-up until idle or past `until`; `(ue, item, departed_at)`.
fn run(cell: &mut Cell<u32>, until: Time) -> Vec<(usize, u32, Time)> {
    let mut out = Vec::new();
    while let Some(t) = cell.next_wakeup().filter(|&t| t <= until) {
        cell.advance(t);
        while let Some((ue, d)) = cell.pop_departure() {
            assert_eq!(d.departed_at, t, "departures happen at the wake-up");
            out.push((ue, d.item, d.departed_at));
        }
    }
    out
}

fn times_ms(deps: &[(usize, u32, Time)]) -> Vec<f64> {
    deps.iter().map(|d| d.2.as_ns() as f64 / 1e6).collect()
}

#[test]
fn a_ue_with_an_empty_queue_is_never_scheduled() {
    // 12 Mbit/s = 1500 bytes per 1 ms TTI each; only UE 1 has data.
    let mut c = cell(
        SchedulerKind::RoundRobin,
        MS,
        vec![constant_ue(12.0), constant_ue(12.0), constant_ue(12.0)],
    );
    for id in 0..10 {
        assert_eq!(c.enqueue(Time::ZERO, 1, id, 1500), EnqueueResult::Accepted);
    }
    let deps = run(&mut c, Time::from_secs(1));
    // UE 1 gets TTIs 1..=10 back to back (TTI 0 is served before the arrivals at 0).
    assert_eq!(times_ms(&deps), (1..=10).map(f64::from).collect::<Vec<_>>());
    assert!(deps.iter().all(|d| d.0 == 1));
    assert_eq!(c.ue_stats(1).ttis_scheduled, 10);
    assert_eq!(c.ue_stats(0).ttis_scheduled, 0);
    assert_eq!(c.ue_stats(2).ttis_scheduled, 0);
    assert_eq!(c.ue_stats(1).wasted_bytes, 0);
    assert_eq!(c.next_wakeup(), None);
}

#[test]
fn unused_bytes_are_wasted_not_banked_and_not_passed_on() {
    // 24 Mbit/s = 3000 bytes per TTI.
    let mut c = cell(
        SchedulerKind::RoundRobin,
        MS,
        vec![constant_ue(24.0), constant_ue(24.0)],
    );
    // Idle for 100 ms: nothing is banked.
    c.advance(Time::from_ms(100));
    assert_eq!(c.stats().ttis, 101);
    assert_eq!(c.stats().ttis_scheduled, 0);
    let at = Time::from_ms(100) + Dur::from_us(300);
    for id in 0..4 {
        assert!(c.enqueue(at, 0, id, 1500) == EnqueueResult::Accepted);
    }
    assert!(c.enqueue(at, 1, 100, 1000) == EnqueueResult::Accepted);
    let deps = run(&mut c, Time::from_secs(1));
    // TTI 101 → UE 0 (two packets), 102 → UE 1 (1000 of 3000 bytes used, 2000 wasted
    // although UE 0 still has data), 103 → UE 0 (two packets).
    assert_eq!(
        deps.iter()
            .map(|d| (d.0, d.1, d.2.as_ms()))
            .collect::<Vec<_>>(),
        [
            (0, 0, 101),
            (0, 1, 101),
            (1, 100, 102),
            (0, 2, 103),
            (0, 3, 103)
        ]
    );
    assert_eq!(c.ue_stats(1).wasted_bytes, 2000);
    assert_eq!(c.ue_stats(1).served_bytes, 1000);
    assert_eq!(c.ue_stats(0).wasted_bytes, 0);
    assert_eq!(c.ue_stats(0).bytes_scheduled, 6000);
}

#[test]
fn packets_span_ttis_and_keep_their_remaining_bytes() {
    // 1.2 Mbit/s = 150 bytes per TTI: a 1500-byte packet needs 10 of its UE's TTIs.
    let mut c = cell(
        SchedulerKind::RoundRobin,
        MS,
        vec![constant_ue(1.2), constant_ue(1.2)],
    );
    assert!(c.enqueue(Time::ZERO, 0, 7, 1500) == EnqueueResult::Accepted);
    assert!(c.enqueue(Time::ZERO, 1, 8, 1500) == EnqueueResult::Accepted);
    c.advance(Time::from_ms(5));
    // TTIs 1, 3, 5 went to UE 0; 2, 4 to UE 1.
    assert!(c.has_packet_in_transit(0) && c.has_packet_in_transit(1));
    assert_eq!(c.queued_packets(0), 0);
    assert_eq!(c.served_bytes(0), 450);
    assert_eq!(c.served_bytes(1), 300);
    let deps = run(&mut c, Time::from_secs(1));
    // UE 0's tenth TTI is TTI 19, UE 1's is TTI 20.
    assert_eq!(
        deps.iter().map(|d| (d.0, d.2.as_ms())).collect::<Vec<_>>(),
        [(0, 19), (1, 20)]
    );
    assert_eq!(c.ue_stats(0).ttis_scheduled, 10);
}

#[test]
fn half_millisecond_ttis_are_exact() {
    // 12 Mbit/s at 0.5 ms = 750 bytes per TTI: a 1500-byte packet every 1 ms exactly.
    let mut c = cell(
        SchedulerKind::ProportionalFair,
        NR_TTI_30KHZ,
        vec![constant_ue(12.0)],
    );
    for id in 0..4 {
        assert!(c.enqueue(Time::ZERO, 0, id, 1500) == EnqueueResult::Accepted);
    }
    let deps = run(&mut c, Time::from_secs(1));
    assert_eq!(
        deps.iter().map(|d| d.2.as_ns()).collect::<Vec<_>>(),
        [1_000_000, 2_000_000, 3_000_000, 4_000_000]
    );
    // An arrival at 4.25 ms starts in the TTI at 4.5 ms and leaves at 5.0 ms.
    let mut c = cell(
        SchedulerKind::RoundRobin,
        NR_TTI_30KHZ,
        vec![constant_ue(12.0)],
    );
    let at = Time::from_us(4250);
    assert!(c.enqueue(at, 0, 9, 1500) == EnqueueResult::Accepted);
    assert_eq!(c.next_wakeup(), Some(Time::from_us(4500)));
    let deps = run(&mut c, Time::from_secs(1));
    assert_eq!(deps, [(0, 9, Time::from_us(5000))]);
    // 1 Mbit/s at 0.5 ms: 62 or 63 bytes per TTI; 125 000 bytes in one second exactly.
    let c: Cell<u32> = cell(
        SchedulerKind::RoundRobin,
        NR_TTI_30KHZ,
        vec![constant_ue(1.0)],
    );
    assert_eq!(c.capacity_bytes(0, Time::ZERO, Time::from_secs(1)), 125_000);
}

#[test]
fn trace_channel_wakes_only_when_it_has_capacity() {
    // Opportunities at 10 and 30 ms (period 30 ms); a 0.5 ms TTI.
    let mut c = cell(
        SchedulerKind::ProportionalFair,
        NR_TTI_30KHZ,
        vec![trace_ue(&[10, 30], TraceMode::Loop)],
    );
    assert_eq!(c.next_wakeup(), None, "no data, no wake-up");
    for id in 0..3 {
        assert!(c.enqueue(Time::from_ms(1), 0, id, 1500) == EnqueueResult::Accepted);
    }
    assert_eq!(c.next_wakeup(), Some(Time::from_ms(10)));
    let deps = run(&mut c, Time::from_secs(1));
    assert_eq!(
        deps.iter().map(|d| d.2.as_ms()).collect::<Vec<_>>(),
        [10, 30, 40]
    );
    // A too-big packet is refused, as on a trace link.
    assert_eq!(c.max_ip_len(0), Some(1500));
    assert_eq!(
        c.enqueue(Time::from_ms(50), 0, 99, 1501),
        EnqueueResult::Dropped(99)
    );
    assert_eq!(c.ue_stats(0).drops_too_big, 1);
}

#[test]
fn an_ended_once_trace_stops_waking() {
    let mut c = cell(
        SchedulerKind::MaxThroughput,
        MS,
        vec![trace_ue(&[2, 4], TraceMode::Once)],
    );
    for id in 0..3 {
        assert!(c.enqueue(Time::ZERO, 0, id, 1500) == EnqueueResult::Accepted);
    }
    let deps = run(&mut c, Time::from_secs(10));
    assert_eq!(deps.iter().map(|d| d.2.as_ms()).collect::<Vec<_>>(), [2, 4]);
    assert_eq!(c.queued_packets(0), 1);
    assert_eq!(c.next_wakeup(), None);
    c.advance(Time::from_secs(100));
    assert_eq!(c.stats().ttis, 100_001);
}

#[test]
fn drophead_drops_carry_their_ue() {
    let queue = QueueSpec::DropHead {
        packets: Some(2),
        bytes: None,
    };
    let mut c = cell(
        SchedulerKind::RoundRobin,
        MS,
        vec![
            constant_ue(12.0),
            UeSpec::new(UeChannel::constant(Bandwidth::from_mbps(12.0)), queue),
        ],
    );
    for id in 0..4 {
        assert!(c.enqueue(Time::ZERO, 1, id, 1500) == EnqueueResult::Accepted);
    }
    let drops: Vec<(usize, u32)> = std::iter::from_fn(|| c.pop_drop())
        .map(|(ue, d)| (ue, d.item))
        .collect();
    assert_eq!(drops, [(1, 0), (1, 1)]);
    assert_eq!(c.ue_stats(1).drops_head, 2);
    assert_eq!(c.queued_packets(1), 2);
    assert_eq!(c.queued_bytes(1), 3000);
}

#[test]
fn pf_with_equal_constant_channels_takes_turns() {
    let mut c = cell(
        SchedulerKind::ProportionalFair,
        MS,
        (0..4).map(|_| constant_ue(12.0)).collect(),
    );
    for id in 0..40 {
        assert!(c.enqueue(Time::ZERO, id as usize % 4, id, 1500) == EnqueueResult::Accepted);
    }
    let deps = run(&mut c, Time::from_secs(1));
    let order: Vec<usize> = deps.iter().map(|d| d.0).collect();
    let expected: Vec<usize> = (0..40).map(|i| i % 4).collect();
    assert_eq!(order, expected);
    // R̄ after TTI 40 (UE 3 last served): the UE served longest ago has the least.
    let avg: Vec<f64> = (0..4).map(|u| c.pf_average(u).unwrap()).collect();
    assert!(
        avg[0] < avg[1] && avg[1] < avg[2] && avg[2] < avg[3],
        "{avg:?}"
    );
}

#[test]
fn capacity_counts_whole_ttis_starting_in_the_window() {
    let c: Cell<u32> = cell(
        SchedulerKind::RoundRobin,
        MS,
        vec![trace_ue(&[1, 1, 3, 5], TraceMode::Loop), constant_ue(12.0)],
    );
    // TTIs starting in [0.5 ms, 5 ms) are 1..=4: opportunities 1, 1, 3.
    assert_eq!(
        c.capacity_bytes(0, Time::from_us(500), Time::from_ms(5)),
        3 * 1504
    );
    assert_eq!(
        c.capacity_bytes(1, Time::from_us(500), Time::from_ms(5)),
        4 * 1500
    );
    assert_eq!(c.capacity_bytes(1, Time::from_ms(5), Time::from_ms(5)), 0);
}

#[test]
fn config_validation_names_the_field() {
    let good = CellConfig {
        scheduler: SchedulerKind::ProportionalFair,
        tti_ms: 0.5,
        pf_tc_ttis: 100.0,
        ues: vec![
            UeConfig {
                rate_mbps: Some(10.0),
                ..UeConfig::default()
            },
            UeConfig {
                trace: Some("lte.down".into()),
                offset_ms: 2,
                ..UeConfig::default()
            },
        ],
    };
    assert!(good.validate().is_ok());
    assert_eq!(good.tti().unwrap(), Dur::from_us(500));
    let field = |c: &CellConfig| c.validate().unwrap_err().field();
    let mut bad = good.clone();
    bad.tti_ms = 0.0;
    assert_eq!(field(&bad), "tti_ms");
    bad = good.clone();
    bad.pf_tc_ttis = 0.5;
    assert_eq!(field(&bad), "pf_tc_ttis");
    bad = good.clone();
    bad.ues.clear();
    assert_eq!(field(&bad), "ues");
    bad = good.clone();
    bad.ues[1].rate_mbps = Some(3.0);
    assert_eq!(field(&bad), "ues[1]");
    bad = good.clone();
    bad.ues[0].rate_mbps = Some(-1.0);
    assert_eq!(field(&bad), "ues[0].rate_mbps");
    assert!(bad.validate().unwrap_err().to_string().contains("-1"));
    bad = good.clone();
    bad.ues[0].offset_ms = 5;
    assert_eq!(field(&bad), "ues[0].offset_ms");
    bad = good.clone();
    bad.ues[1].queue = QueueSpec::DropTail {
        packets: None,
        bytes: None,
    };
    assert_eq!(field(&bad), "ues[1].queue");
    assert!(bad
        .validate()
        .unwrap_err()
        .to_string()
        .starts_with("ues[1].queue: droptail queue needs a limit"));
}

#[test]
fn to_spec_loads_traces_through_the_caller() {
    let config = CellConfig {
        scheduler: SchedulerKind::RoundRobin,
        tti_ms: 1.0,
        pf_tc_ttis: 100.0,
        ues: vec![
            UeConfig {
                trace: Some("a".into()),
                offset_ms: 7,
                ..UeConfig::default()
            },
            UeConfig {
                trace: Some("missing".into()),
                ..UeConfig::default()
            },
        ],
    };
    let load = |_ue: usize, path: &str| match path {
        "a" => Ok(Arc::new(Trace::from_timestamps(vec![1, 2], path)?)),
        _ => Trace::from_timestamps(vec![], path).map(Arc::new),
    };
    let err = config.to_spec(load).unwrap_err();
    assert_eq!(err.field(), "ues[1].trace");
    assert!(
        err.to_string().contains("missing:1: the file is empty"),
        "{err}"
    );
    let mut one = config.clone();
    one.ues.truncate(1);
    let spec = one.to_spec(load).unwrap();
    match &spec.ues[0].channel {
        UeChannel::Trace { offset, mode, .. } => {
            assert_eq!(*offset, Dur::from_ms(7));
            assert_eq!(*mode, TraceMode::Loop);
        }
        other => panic!("expected a trace channel, got {other:?}"),
    }
    let built: Cell<u32> = Cell::try_new(spec).unwrap();
    assert_eq!(built.ue_count(), 1);
    assert_eq!(built.scheduler(), SchedulerKind::RoundRobin);
}

#[test]
fn spec_validation_rejects_bad_ttis_and_zero_rates() {
    let err = Cell::<u32>::try_new(CellSpec::new(
        SchedulerKind::RoundRobin,
        Dur::from_ns(10),
        vec![constant_ue(1.0)],
    ))
    .unwrap_err();
    assert_eq!(err.field(), "tti_ms");
    let zero = UeSpec::new(UeChannel::constant(Bandwidth::ZERO), QueueSpec::Infinite);
    let err =
        Cell::<u32>::try_new(CellSpec::new(SchedulerKind::RoundRobin, MS, vec![zero])).unwrap_err();
    assert_eq!(err.field(), "ues[0].rate_mbps");
}

#[test]
fn aqm_drops_at_dequeue_carry_their_ue_and_packets_are_conserved() {
    let codel = QueueSpec::Codel(crate::CodelConfig::default());
    let mut c = cell(
        SchedulerKind::RoundRobin,
        MS,
        vec![
            constant_ue(12.0),
            UeSpec::new(UeChannel::constant(Bandwidth::from_mbps(12.0)), codel),
        ],
    );
    // Both UEs backlogged: each drains 1500 B every other TTI, so UE 1's 2000 packets
    // wait for seconds and CoDel (target 5 ms, interval 100 ms) starts dropping.
    for id in 0..2000 {
        assert!(c.enqueue(Time::ZERO, 0, id, 1500) == EnqueueResult::Accepted);
        assert!(c.enqueue(Time::ZERO, 1, id, 1500) == EnqueueResult::Accepted);
    }
    c.advance(Time::from_secs(2));
    let drops: Vec<(usize, DropReason)> = std::iter::from_fn(|| c.pop_drop())
        .map(|(ue, d)| (ue, d.reason))
        .collect();
    let s = c.ue_stats(1);
    assert!(s.drops_aqm > 0);
    assert_eq!(drops.len() as u64, s.drops_aqm);
    assert!(drops.iter().all(|&d| d == (1, DropReason::Aqm)));
    assert_eq!(c.ue_stats(0).drops_aqm, 0);
    for ue in 0..2 {
        let s = c.ue_stats(ue);
        let held = c.queued_packets(ue) as u64 + u64::from(c.has_packet_in_transit(ue));
        assert_eq!(
            s.packets_accepted,
            s.packets_departed + s.drops_aqm + s.drops_head + held,
            "UE {ue}"
        );
        assert_eq!(s.bytes_scheduled, s.served_bytes + s.wasted_bytes);
    }
}

/// The scheduler's bookkeeping (`ready`: each UE's next useful TTI, kept sorted) against a
/// straightforward scan of every UE with the stateless channel answers, on random cells:
/// many UEs, traces looped and once with offsets, constant channels from below a byte per
/// TTI to 100 Mbit/s, every scheduler, small queues, random arrivals. `next_wakeup` and
/// every TTI's candidate list assert equality with the scan in test builds; the run also
/// checks that packets are conserved.
#[test]
fn ready_set_agrees_with_a_scan_of_every_ue_on_random_cells() {
    use rand_chacha::ChaCha8Rng;
    use rand_core::{Rng, SeedableRng};
    let mut rng = ChaCha8Rng::seed_from_u64(19);
    let mut below = |n: u64| rng.next_u64() % n;
    for round in 0..40 {
        let tti = [MS, Dur::from_us(500), Dur::from_us(125), Dur::from_ms(3)][below(4) as usize];
        let kind = [
            SchedulerKind::RoundRobin,
            SchedulerKind::ProportionalFair,
            SchedulerKind::MaxThroughput,
        ][below(3) as usize];
        let n_ues = 1 + below(if round % 4 == 0 { 300 } else { 40 }) as usize;
        let shared: Vec<Arc<Trace>> = (0..3)
            .map(|_| {
                let len = 1 + below(60);
                let mut t = 0u32;
                let ts: Vec<u32> = (0..len)
                    .map(|_| {
                        t += below(12) as u32;
                        t
                    })
                    .collect();
                Arc::new(Trace::from_timestamps(ts, "r").unwrap())
            })
            .collect();
        let ues: Vec<UeSpec> = (0..n_ues)
            .map(|_| {
                let channel = match below(5) {
                    0 => UeChannel::constant(Bandwidth::from_bps(1_000 + below(20_000))),
                    1 => UeChannel::constant(Bandwidth::from_bps(100_000 + below(100_000_000))),
                    _ => UeChannel::Trace {
                        trace: Arc::clone(&shared[below(3) as usize]),
                        mode: if below(4) == 0 {
                            TraceMode::Once
                        } else {
                            TraceMode::Loop
                        },
                        offset: Dur::from_ms(below(50)),
                    },
                };
                let queue = match below(3) {
                    0 => QueueSpec::Infinite,
                    1 => QueueSpec::DropTail {
                        packets: Some(1 + below(8)),
                        bytes: None,
                    },
                    _ => QueueSpec::DropHead {
                        packets: Some(1 + below(8)),
                        bytes: None,
                    },
                };
                UeSpec::new(channel, queue)
            })
            .collect();
        let mut c: Cell<u32> = Cell::new(CellSpec::new(kind, tti, ues));
        let mut now = Time::ZERO;
        let mut accepted = 0u64;
        for id in 0..3000u32 {
            let long_gap = below(50) == 0;
            now += Dur::from_us(below(if long_gap { 200_000 } else { 400 }));
            let ue = below(n_ues as u64) as usize;
            let ip_len = 40 + below(1460) as u32;
            if c.enqueue(now, ue, id, ip_len) == EnqueueResult::Accepted {
                accepted += 1;
            }
            let _ = c.next_wakeup();
            if below(8) == 0 {
                now += Dur::from_us(below(5_000));
                c.advance(now);
            }
        }
        c.advance(now + Dur::from_secs(30));
        let _ = c.next_wakeup();
        let (mut departed, mut dropped, mut held) = (0, 0, 0);
        for ue in 0..n_ues {
            let s = c.ue_stats(ue);
            departed += s.packets_departed;
            dropped += s.drops_head;
            held += c.queued_packets(ue) as u64 + u64::from(c.has_packet_in_transit(ue));
        }
        assert_eq!(accepted, departed + dropped + held, "round {round}");
    }
}
