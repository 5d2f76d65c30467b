//! Acceptance tests of the shared cell (docs/cell.md): fairness and shares of the three
//! schedulers, a capacity step, equivalence with a trace link, determinism and speed.
//! Each test prints its measured numbers (`cargo test -- --nocapture`).

mod common;

use std::sync::Arc;
use std::time::Instant;

use cellcc_link::{
    Cell, CellSpec, EnqueueResult, Link, LinkService, QueueSpec, SchedulerKind, Trace, TraceMode,
    UeChannel, UeSpec, LTE_TTI, NR_TTI_30KHZ,
};
use cellcc_units::{Bandwidth, Dur, Time};
use common::shared_trace;
use proptest::prelude::*;
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

/// A Mahimahi trace with block fading: every `block_ms` a level X is drawn uniformly
/// from `0..levels`, and each millisecond of the block carries `scale × X`
/// opportunities. UEs built with different seeds fade independently with the same
/// statistics; `scale` multiplies the mean rate and nothing else. The last line is at
/// `duration_ms`, the loop period.
fn fading_trace(seed: u64, scale: u32, block_ms: u32, levels: u32, duration_ms: u32) -> Arc<Trace> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut ts = Vec::new();
    for block in 0..duration_ms / block_ms {
        let level = rng.next_u32() % levels;
        for ms in block * block_ms + 1..=(block + 1) * block_ms {
            ts.extend(std::iter::repeat_n(ms, (scale * level) as usize));
        }
    }
    if ts.last() != Some(&duration_ms) {
        ts.push(duration_ms);
    }
    Arc::new(Trace::from_timestamps(ts, &format!("fading-{seed}")).unwrap())
}

fn trace_ue(trace: Arc<Trace>) -> UeSpec {
    UeSpec::new(
        UeChannel::trace(trace, TraceMode::Loop),
        QueueSpec::Infinite,
    )
}

fn constant_ue(mbps: f64) -> UeSpec {
    UeSpec::new(
        UeChannel::constant(Bandwidth::from_mbps(mbps)),
        QueueSpec::Infinite,
    )
}

/// Fills every UE's queue at time 0 with more 1500-byte packets than its channel could
/// carry by `end` (so all stay backlogged), runs to `end` (the TTI at `end` included)
/// and returns the cell.
fn saturate(spec: CellSpec, end: Time) -> Cell<u32> {
    let mut cell = Cell::new(spec);
    for ue in 0..cell.ue_count() {
        let packets = cell.capacity_bytes(ue, Time::ZERO, end + cell.tti()) / 1500 + 2;
        for id in 0..packets {
            assert_eq!(
                cell.enqueue(Time::ZERO, ue, id as u32, 1500),
                EnqueueResult::Accepted
            );
        }
    }
    let mut t = Time::ZERO;
    while t < end {
        t = (t + Dur::from_secs(1)).min(end);
        cell.advance(t);
        while cell.pop_departure().is_some() {}
    }
    for ue in 0..cell.ue_count() {
        assert!(cell.queued_packets(ue) > 0, "UE {ue} ran dry");
    }
    cell
}

fn jain(x: &[f64]) -> f64 {
    let sum: f64 = x.iter().sum();
    let squares: f64 = x.iter().map(|v| v * v).sum();
    sum * sum / (x.len() as f64 * squares)
}

fn served(cell: &Cell<u32>) -> Vec<f64> {
    (0..cell.ue_count())
        .map(|ue| cell.served_bytes(ue) as f64)
        .collect()
}

fn shares(x: &[f64]) -> Vec<f64> {
    let sum: f64 = x.iter().sum();
    x.iter().map(|v| v / sum).collect()
}

fn time_shares(cell: &Cell<u32>) -> Vec<f64> {
    let ttis: Vec<f64> = (0..cell.ue_count())
        .map(|ue| cell.ue_stats(ue).ttis_scheduled as f64)
        .collect();
    shares(&ttis)
}

fn mbps(bytes: f64, seconds: f64) -> f64 {
    bytes * 8.0 / seconds / 1e6
}

/// Four UEs with independent block fading of equal statistics (levels 0..=6
/// opportunities per ms in 5 ms blocks: mean 36 Mbit/s each), all backlogged, 30 s.
#[test]
fn pf_is_fair_among_equal_channels_and_gains_from_diversity() {
    let end = Time::from_secs(30);
    let spec = |kind| {
        CellSpec::new(
            kind,
            LTE_TTI,
            (0..4)
                .map(|seed| trace_ue(fading_trace(100 + seed, 1, 5, 7, 30_000)))
                .collect(),
        )
    };
    let pf = saturate(spec(SchedulerKind::ProportionalFair), end);
    let rr = saturate(spec(SchedulerKind::RoundRobin), end);
    let mt = saturate(spec(SchedulerKind::MaxThroughput), end);
    let index = jain(&served(&pf));
    let total = |c: &Cell<u32>| mbps(served(c).iter().sum(), 30.0);
    println!(
        "PF, 4 equal fading UEs, 30 s: Jain {index:.5}, per-UE Mbit/s {:?}, time shares {:?}",
        served(&pf)
            .iter()
            .map(|&b| mbps(b, 30.0))
            .collect::<Vec<_>>(),
        time_shares(&pf)
    );
    println!(
        "cell throughput Mbit/s: rr {:.2}, pf {:.2}, max-throughput {:.2}; mean channel {:.2}",
        total(&rr),
        total(&pf),
        total(&mt),
        mbps(pf.capacity_bytes(0, Time::ZERO, end) as f64, 30.0)
    );
    assert!(index >= 0.98, "Jain's index {index}");
    // Multi-user diversity: PF rides the peaks that RR ignores; MT takes the best
    // channel every TTI, the most any one-UE-per-TTI schedule can carry here.
    assert!(
        total(&pf) > 1.2 * total(&rr),
        "pf {} rr {}",
        total(&pf),
        total(&rr)
    );
    assert!(total(&mt) >= total(&pf));
}

/// PF with mean rates 1:2:4 from the same fading family (UE u's rate is m_u·X_u(t), X_u
/// i.i.d.): the metric r_u/R̄_u does not depend on m_u at equilibrium, so each UE gets
/// 1/3 of the TTIs and throughput shares 1/7, 2/7, 4/7. Tolerance: time shares within
/// 0.02 of 1/3, throughput shares within 5 % of 1/7, 2/7, 4/7.
#[test]
fn pf_shares_are_proportional_to_mean_rates_under_independent_fading() {
    let end = Time::from_secs(30);
    let ues = [(1, 1), (2, 2), (3, 4)]
        .iter()
        .map(|&(seed, scale)| trace_ue(fading_trace(200 + seed, scale, 5, 5, 30_000)))
        .collect();
    let pf = saturate(
        CellSpec::new(SchedulerKind::ProportionalFair, LTE_TTI, ues),
        end,
    );
    let throughput = shares(&served(&pf));
    let time = time_shares(&pf);
    println!("PF 1:2:4 fading: throughput shares {throughput:?}, time shares {time:?}");
    for (got, want) in throughput.iter().zip([1.0 / 7.0, 2.0 / 7.0, 4.0 / 7.0]) {
        assert!(
            (got - want).abs() / want < 0.05,
            "throughput share {got} vs {want}"
        );
    }
    for t in &time {
        assert!((t - 1.0 / 3.0).abs() < 0.02, "time share {t}");
    }
}

/// With constant channels PF degenerates to round robin in time: equal TTIs, throughput
/// in proportion to the rates. RR does the same by construction. MT gives every TTI to
/// the best channel.
#[test]
fn constant_channels_rr_and_pf_share_time_equally_mt_takes_the_best() {
    let end = Time::from_secs(30);
    let rates = [6.0, 12.0, 24.0];
    let spec = |kind| {
        CellSpec::new(
            kind,
            LTE_TTI,
            rates.iter().map(|&r| constant_ue(r)).collect(),
        )
    };
    for kind in [SchedulerKind::RoundRobin, SchedulerKind::ProportionalFair] {
        let cell = saturate(spec(kind), end);
        let ttis: Vec<u64> = (0..3).map(|ue| cell.ue_stats(ue).ttis_scheduled).collect();
        let per_ue: Vec<f64> = served(&cell).iter().map(|&b| mbps(b, 30.0)).collect();
        println!("{}: TTIs {ttis:?}, Mbit/s {per_ue:?}", kind.name());
        // TTIs 1..=30 000 (TTI 0 passes before the arrivals at 0) split three ways.
        let (lo, hi) = (ttis.iter().min().unwrap(), ttis.iter().max().unwrap());
        assert!(hi - lo <= 1, "{} TTIs {ttis:?}", kind.name());
        for (got, rate) in per_ue.iter().zip(rates) {
            assert!((got - rate / 3.0).abs() < 0.01, "{got} vs {}", rate / 3.0);
        }
    }
    let mt = saturate(spec(SchedulerKind::MaxThroughput), end);
    let per_ue: Vec<f64> = served(&mt).iter().map(|&b| mbps(b, 30.0)).collect();
    println!("max-throughput: Mbit/s {per_ue:?}");
    assert_eq!(mt.served_bytes(0), 0);
    assert_eq!(mt.served_bytes(1), 0);
    assert!((per_ue[2] - 24.0).abs() < 0.01);
}

/// MT starves the weaker UEs only while the best one has data: when its queue empties,
/// the next best takes over.
#[test]
fn max_throughput_moves_on_when_the_best_ue_runs_dry() {
    let mut cell: Cell<u32> = Cell::new(CellSpec::new(
        SchedulerKind::MaxThroughput,
        LTE_TTI,
        vec![constant_ue(6.0), constant_ue(12.0), constant_ue(24.0)],
    ));
    // UE 2 (3000 B/TTI) has 100 packets: two per TTI, TTIs 1..=50.
    for id in 0..100 {
        assert!(cell.enqueue(Time::ZERO, 2, id, 1500) == EnqueueResult::Accepted);
    }
    for ue in 0..2 {
        for id in 0..1000 {
            assert!(cell.enqueue(Time::ZERO, ue, id, 1500) == EnqueueResult::Accepted);
        }
    }
    cell.advance(Time::from_ms(50));
    assert_eq!(cell.ue_stats(2).packets_departed, 100);
    assert_eq!(cell.served_bytes(1) + cell.served_bytes(0), 0);
    cell.advance(Time::from_ms(150));
    // TTIs 51..=150 all go to UE 1 (one packet each); UE 0 still waits.
    assert_eq!(cell.ue_stats(1).packets_departed, 100);
    assert_eq!(cell.served_bytes(0), 0);
}

/// The LTE study's capacity step (Fig. 5): a UE alone has the whole cell; when a
/// background UE becomes backlogged at 10 s its share halves; when the background stops
/// at 20 s it has the whole cell again.
#[test]
fn background_start_and_stop_step_the_capacity_down_and_up() {
    for kind in [SchedulerKind::RoundRobin, SchedulerKind::ProportionalFair] {
        let mut cell: Cell<u32> = Cell::new(CellSpec::new(
            kind,
            LTE_TTI,
            vec![
                constant_ue(24.0),
                UeSpec::new(
                    UeChannel::constant(Bandwidth::from_mbps(24.0)),
                    QueueSpec::DropTail {
                        packets: Some(100),
                        bytes: None,
                    },
                ),
            ],
        ));
        for id in 0..80_000 {
            assert!(cell.enqueue(Time::ZERO, 0, id, 1500) == EnqueueResult::Accepted);
        }
        // Background: 24 Mbit/s of 1500-byte packets (one per 0.5 ms) in [10 s, 20 s).
        let mut per_second = vec![0u64; 30];
        let mut t = Time::from_secs(10);
        let mut id = 0;
        let mut record = |cell: &mut Cell<u32>| {
            while let Some((ue, d)) = cell.pop_departure() {
                if ue == 0 {
                    per_second[(d.departed_at.as_ms() / 1000) as usize] += u64::from(d.ip_len);
                }
            }
        };
        while t < Time::from_secs(20) {
            let _ = cell.enqueue(t, 1, id, 1500);
            record(&mut cell);
            id += 1;
            t += Dur::from_us(500);
        }
        cell.advance(Time::from_secs(30) - Dur(1));
        record(&mut cell);
        let rate = |from: usize, to: usize| {
            mbps(
                per_second[from..to].iter().sum::<u64>() as f64,
                (to - from) as f64,
            )
        };
        let (before, during, after) = (rate(1, 10), rate(11, 20), rate(21, 30));
        println!(
            "{}: UE 0 Mbit/s before {before:.3}, with background {during:.3}, after {after:.3}",
            kind.name()
        );
        assert!((before - 24.0).abs() < 0.01);
        assert!((during - 12.0).abs() < 0.05);
        assert!((after - 24.0).abs() < 0.01);
    }
}

/// A one-UE cell with a trace channel and a TTI dividing 1 ms departs exactly as a trace
/// link does, whatever the scheduler.
fn cell_matches_link(
    ts: Vec<u32>,
    arrivals: Vec<(u64, u32)>,
    queue: QueueSpec,
    tti: Dur,
    kind: SchedulerKind,
) {
    let trace = Arc::new(Trace::from_timestamps(ts, "p").unwrap());
    let mut link: Link<u32> = Link::new(
        LinkService::trace(trace.clone(), TraceMode::Loop),
        queue.clone(),
    );
    let mut cell: Cell<u32> = Cell::new(CellSpec::new(
        kind,
        tti,
        vec![UeSpec::new(UeChannel::trace(trace, TraceMode::Loop), queue)],
    ));
    let (mut from_link, mut from_cell) = (Vec::new(), Vec::new());
    let (mut drops_link, mut drops_cell) = (Vec::new(), Vec::new());
    let mut now = 0;
    for (id, &(gap_us, ip_len)) in arrivals.iter().enumerate() {
        now += gap_us * 1000;
        let (a, b) = (
            link.enqueue(Time(now), id as u32, ip_len),
            cell.enqueue(Time(now), 0, id as u32, ip_len),
        );
        assert_eq!(a, b, "enqueue of {id} at {now} ns");
        while let Some(d) = link.pop_drop() {
            drops_link.push((d.item, d.at));
        }
        while let Some((_, d)) = cell.pop_drop() {
            drops_cell.push((d.item, d.at));
        }
    }
    let end = Time(now) + Dur::from_secs(2);
    link.advance(end);
    cell.advance(end);
    while let Some(d) = link.pop_departure() {
        from_link.push(d);
    }
    while let Some((ue, d)) = cell.pop_departure() {
        assert_eq!(ue, 0);
        from_cell.push(d);
    }
    assert_eq!(from_cell, from_link);
    assert_eq!(drops_cell, drops_link);
    assert_eq!(cell.queued_packets(0), link.queued_packets());
}

fn queue_spec() -> impl Strategy<Value = QueueSpec> {
    prop_oneof![
        Just(QueueSpec::Infinite),
        (1u64..6).prop_map(|p| QueueSpec::DropTail {
            packets: Some(p),
            bytes: None
        }),
        (1500u64..6000).prop_map(|b| QueueSpec::DropHead {
            packets: None,
            bytes: Some(b)
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn one_ue_trace_cell_equals_a_trace_link(
        deltas in prop::collection::vec(0u32..4, 1..40),
        arrivals in prop::collection::vec((0u64..3000, 40u32..1502), 1..80),
        queue in queue_spec(),
        tti_choice in 0usize..3,
        kind_choice in 0usize..3,
    ) {
        // Non-decreasing timestamps with a positive last one.
        let mut ts = Vec::new();
        let mut t = 0;
        for d in deltas {
            t += d;
            ts.push(t);
        }
        if t == 0 {
            ts.push(1);
        }
        let tti = [LTE_TTI, NR_TTI_30KHZ, Dur::from_us(125)][tti_choice];
        let kind = [
            SchedulerKind::RoundRobin,
            SchedulerKind::ProportionalFair,
            SchedulerKind::MaxThroughput,
        ][kind_choice];
        cell_matches_link(ts, arrivals, queue, tti, kind);
    }
}

/// Drives a 4-UE PF cell as a simulator would: per-UE Poisson-ish arrivals from a seeded
/// generator, wake-ups at `next_wakeup`; returns a log of every departure and drop.
fn drive(seed: u64, end: Time) -> (Vec<(usize, u32, Time)>, u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut cell: Cell<u32> = Cell::new(CellSpec::new(
        SchedulerKind::ProportionalFair,
        LTE_TTI,
        (0..4)
            .map(|u| {
                UeSpec::new(
                    UeChannel::trace(fading_trace(300 + u, 1, 5, 7, 60_000), TraceMode::Loop),
                    QueueSpec::DropTail {
                        packets: Some(200),
                        bytes: None,
                    },
                )
            })
            .collect(),
    ));
    // Offered: 20 Mbit/s per UE (1500 B every 0.6 ms on average), above the ~15 Mbit/s
    // PF share of four such UEs: queues stay mostly full, with drops.
    let mut next_arrival: Vec<Time> = (0..4).map(|_| Time::ZERO).collect();
    let mut log = Vec::new();
    let mut id = 0u32;
    let mut drops = 0;
    loop {
        let arrival = *next_arrival.iter().min().unwrap();
        let wake = cell.next_wakeup().map_or(arrival, |w| w.min(arrival));
        if wake >= end {
            break;
        }
        if wake == arrival {
            let ue = next_arrival.iter().position(|&t| t == arrival).unwrap();
            if let EnqueueResult::Dropped(item) = cell.enqueue(arrival, ue, id, 1500) {
                log.push((ue, item, arrival));
                drops += 1;
            }
            id += 1;
            next_arrival[ue] = arrival + Dur::from_us(200 + u64::from(rng.next_u32() % 801));
        } else {
            cell.advance(wake);
        }
        while let Some((ue, d)) = cell.pop_departure() {
            log.push((ue, d.item, d.departed_at));
        }
    }
    (log, drops)
}

#[test]
fn same_inputs_same_departures() {
    let end = Time::from_secs(10);
    let (a, drops) = drive(9, end);
    let (b, _) = drive(9, end);
    let (c, _) = drive(10, end);
    println!("determinism: {} events, {drops} refused arrivals", a.len());
    assert!(drops > 0 && a.len() > 10_000);
    assert_eq!(a, b);
    assert_ne!(a, c);
}

/// 60 s of a busy 4-UE cell, event by event, must take well under a second.
#[test]
fn a_minute_of_a_four_ue_cell_runs_in_well_under_a_second() {
    let started = Instant::now();
    let (log, drops) = drive(1, Time::from_secs(60));
    let elapsed = started.elapsed();
    println!(
        "4-UE PF cell, 60 s simulated: {} departures and drops ({drops} drops) in {elapsed:?}",
        log.len()
    );
    assert!(log.len() > 100_000);
    if !cfg!(debug_assertions) {
        assert!(elapsed.as_secs_f64() < 1.0, "took {elapsed:?}");
    }
}

/// An idle cell costs nothing per TTI: an hour of silence at 0.5 ms TTIs is one step.
#[test]
fn idle_ttis_are_skipped_in_one_step() {
    let mut cell: Cell<u32> = Cell::new(CellSpec::new(
        SchedulerKind::ProportionalFair,
        NR_TTI_30KHZ,
        (0..4).map(|_| constant_ue(50.0)).collect(),
    ));
    let started = Instant::now();
    for hour in 1..=1000u64 {
        let t = Time::from_secs(3600 * hour);
        assert!(cell.enqueue(t, (hour % 4) as usize, hour as u32, 1500) == EnqueueResult::Accepted);
        cell.advance(t + Dur::from_ms(1));
        assert!(cell.pop_departure().is_some());
    }
    let elapsed = started.elapsed();
    println!(
        "1000 h of mostly idle 0.5 ms TTIs ({} TTIs) in {elapsed:?}",
        cell.stats().ttis
    );
    assert_eq!(cell.stats().ttis_scheduled, 1000);
    assert!(elapsed.as_secs_f64() < 0.5, "took {elapsed:?}");
}

/// Real trace: four UEs read the same T-Mobile LTE trace at offsets 0, 35, 70 and
/// 105 s; over a whole 140 s period each sees the same channel, so PF shares evenly.
#[test]
fn pf_on_a_shared_real_trace_with_offsets() {
    let Some(path) = shared_trace("TMobile-LTE-short.down") else {
        return;
    };
    let trace = Arc::new(Trace::from_file(path).unwrap());
    let period = Dur::from_ms(trace.period_ms());
    let end = Time(period.as_ns());
    let ues = (0..4)
        .map(|u| {
            UeSpec::new(
                UeChannel::Trace {
                    trace: trace.clone(),
                    mode: TraceMode::Loop,
                    offset: Dur::from_secs(35 * u),
                },
                QueueSpec::Infinite,
            )
        })
        .collect();
    let started = Instant::now();
    let pf = saturate(
        CellSpec::new(SchedulerKind::ProportionalFair, LTE_TTI, ues),
        end,
    );
    let index = jain(&served(&pf));
    let per_ue: Vec<f64> = served(&pf)
        .iter()
        .map(|&b| mbps(b, end.as_secs_f64()))
        .collect();
    println!(
        "PF on 4 × TMobile-LTE-short.down (offsets 0/35/70/105 s), {:?}: Jain {index:.5}, \
         per-UE Mbit/s {per_ue:?}, time shares {:?}, single-UE mean {:.2} Mbit/s ({:?})",
        period,
        time_shares(&pf),
        mbps(
            pf.capacity_bytes(0, Time::ZERO, end) as f64,
            end.as_secs_f64()
        ),
        started.elapsed()
    );
    assert!(index >= 0.98, "Jain's index {index}");
}
