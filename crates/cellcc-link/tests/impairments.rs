//! Impairments: outages on a link (stall vs drop), Gilbert–Elliott loss, jitter and HARQ
//! delay. Worked numbers are in the comments; statistical checks allow 5 standard
//! deviations and print what they measured.

mod common;

use std::sync::Arc;

use cellcc_link::{
    DroppedPacket, EnqueueResult, GilbertElliottConfig, Harq, HarqConfig, Jitter, JitterConfig,
    Link, LinkService, LossConfig, LossModel, OutageConfig, OutageKind, OutageWindow, Outages,
    QueueSpec, Stage, Trace, TraceMode,
};
use cellcc_units::Time;
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

use common::run_stage;

fn ms(t: u64) -> Time {
    Time::from_ms(t)
}

fn us(t: u64) -> Time {
    Time::from_us(t)
}

/// A trace link with one 1504-byte opportunity every millisecond from 1 ms to 10 s.
fn every_ms_link() -> Link<u32> {
    let trace = Trace::from_timestamps((1..=10_000).collect(), "every-ms").unwrap();
    Link::new(
        LinkService::trace(Arc::new(trace), TraceMode::Once),
        QueueSpec::Infinite,
    )
}

/// 12 Mbit/s: a 1500-byte packet takes exactly 1 ms.
fn constant_link() -> Link<u32> {
    common::constant_link(12.0)
}

fn outage(start_ms: u64, end_ms: u64, kind: OutageKind) -> Outages {
    Outages::new(vec![OutageWindow {
        start: ms(start_ms),
        end: ms(end_ms),
        kind,
    }])
    .unwrap()
}

/// `(packet id, time)` pairs.
type Timeline = Vec<(u32, Time)>;

/// Feeds `(time, id)` arrivals of 1500-byte packets, running the link at every wake-up
/// in between; returns departures `(id, time)` and drops `(id, time)`.
fn drive(link: &mut Link<u32>, arrivals: &[(Time, u32)], until: Time) -> (Timeline, Timeline) {
    let mut departed = Vec::new();
    let mut dropped = Vec::new();
    let mut collect = |link: &mut Link<u32>| {
        while let Some(d) = link.pop_departure() {
            departed.push((d.item, d.departed_at));
        }
        while let Some(DroppedPacket { item, at, .. }) = link.pop_drop() {
            dropped.push((item, at));
        }
    };
    let wakeups_until = |link: &Link<u32>, t: Time| link.next_wakeup().filter(|&w| w <= t);
    for &(at, id) in arrivals {
        while let Some(w) = wakeups_until(link, at) {
            link.advance(w);
            collect(link);
        }
        assert_eq!(link.enqueue(at, id, 1500), EnqueueResult::Accepted);
        collect(link);
    }
    while let Some(w) = wakeups_until(link, until) {
        link.advance(w);
        collect(link);
    }
    (departed, dropped)
}

/// [`every_ms_link`] with a `kind` outage over [1 s, 3 s).
fn every_ms_link_with_outage(kind: OutageKind) -> Link<u32> {
    let mut link = every_ms_link();
    link.set_outages(outage(1000, 3000, kind));
    link
}

/// Packets 0-3 at 998.5 ms (just before the window), 4 and 5 at 1500 ms (inside it),
/// then one packet at each of `later` (ids from 6).
fn arrivals_around_the_window(later: &[Time]) -> Vec<(Time, u32)> {
    let before = (0..4).map(|id| (us(998_500), id));
    let inside = (4..6).map(|id| (ms(1500), id));
    let after = later.iter().zip(6..).map(|(&at, id)| (at, id));
    before.chain(inside).chain(after).collect()
}

/// The next wake-up of [`every_ms_link_with_outage`] after packets 0-3 arrived at
/// 998.5 ms and the first left at 999 ms.
fn wakeup_after_the_first_departure(kind: OutageKind) -> Option<Time> {
    let mut probe = every_ms_link_with_outage(kind);
    for (at, id) in &arrivals_around_the_window(&[])[..4] {
        assert_eq!(probe.enqueue(*at, *id, 1500), EnqueueResult::Accepted);
    }
    probe.advance(ms(999));
    probe.next_wakeup()
}

#[test]
fn a_stall_on_a_trace_link_buffers_and_delivers_after_it() {
    // Stall [1 s, 3 s). Opportunities every ms; a 1500-byte packet fills one.
    // 998.5 ms: packets 0-3 → 0 at 999 ms; 1, 2, 3 wait; the opportunity at 3000 ms is
    // outside the window → 3000, 3001, 3002. 1500 ms: 4, 5 → 3003, 3004.
    // 2999.5 ms: 6 → 3005. 3010.5 ms: 7 → 3011 (the link is idle again by then).
    let mut link = every_ms_link_with_outage(OutageKind::Stall);
    let arrivals = arrivals_around_the_window(&[us(2_999_500), us(3_010_500)]);
    // No wake-up inside the window.
    assert_eq!(
        wakeup_after_the_first_departure(OutageKind::Stall),
        Some(ms(3000))
    );

    let (departed, dropped) = drive(&mut link, &arrivals, ms(5000));
    let expect: Vec<(u32, Time)> = [
        (0, 999),
        (1, 3000),
        (2, 3001),
        (3, 3002),
        (4, 3003),
        (5, 3004),
        (6, 3005),
        (7, 3011),
    ]
    .iter()
    .map(|&(id, t)| (id, ms(t)))
    .collect();
    assert_eq!(departed, expect);
    assert!(dropped.is_empty());
    // Capacity: opportunities 1..3999 ms in [0, 4 s), minus the 2000 in the window.
    assert_eq!(link.capacity_bytes(ms(0), ms(4000)), 1999 * 1504);
    assert_eq!(link.capacity_bytes(ms(1000), ms(3000)), 0);
    assert_eq!(link.capacity_bytes(ms(2500), ms(3500)), 500 * 1504);
    link.advance(ms(5000));
    let stats = link.stats();
    println!(
        "stall: {} opportunities offered, {} in the outage, capacity(0, 4 s) = {} B",
        stats.opportunities,
        stats.opportunities_in_outage,
        link.capacity_bytes(ms(0), ms(4000))
    );
    assert_eq!(stats.opportunities_in_outage, 2000);
    assert_eq!(stats.opportunities + stats.opportunities_in_outage, 5000);
}

#[test]
fn a_stall_on_a_constant_link_pauses_the_packet_on_the_wire() {
    // 1 ms per packet; stall [1 s, 3 s).
    // 999.5 ms: 0 starts, 0.5 ms sent before the stall, the rest after → 3000.5 ms.
    // 1500 ms: 1 queues → 3000.5 + 1 = 3001.5 ms. 3100 ms: 2, idle link → 3101 ms.
    let mut link = constant_link();
    link.set_outages(outage(1000, 3000, OutageKind::Stall));
    let arrivals = [(us(999_500), 0), (ms(1500), 1), (ms(3100), 2)];
    let (departed, dropped) = drive(&mut link, &arrivals, ms(5000));
    assert_eq!(
        departed,
        [(0, us(3_000_500)), (1, us(3_001_500)), (2, ms(3101))]
    );
    assert!(dropped.is_empty());
    // 12 Mbit/s = 1.5 MB/s over the 2 s outside the window.
    assert_eq!(link.capacity_bytes(ms(0), ms(4000)), 3_000_000);
    assert_eq!(link.capacity_bytes(ms(500), ms(1500)), 750_000);
}

#[test]
fn a_drop_outage_flushes_the_link_and_loses_arrivals() {
    // Drop [1 s, 3 s) on the every-ms trace.
    // 998.5 ms: 0-3 → 0 departs at 999 ms; 1, 2, 3 are flushed at 1000 ms.
    // 1500 ms: 4, 5 are lost on arrival. 3000 ms: 6 arrives as the window ends, cannot
    // use the opportunity at its own instant → 3001 ms.
    let mut link = every_ms_link_with_outage(OutageKind::Drop);
    let arrivals = arrivals_around_the_window(&[ms(3000)]);
    assert_eq!(
        wakeup_after_the_first_departure(OutageKind::Drop),
        Some(ms(1000)),
        "the flush is a wake-up"
    );

    let (departed, dropped) = drive(&mut link, &arrivals, ms(5000));
    assert_eq!(departed, [(0, ms(999)), (6, ms(3001))]);
    assert_eq!(
        dropped,
        [
            (1, ms(1000)),
            (2, ms(1000)),
            (3, ms(1000)),
            (4, ms(1500)),
            (5, ms(1500))
        ]
    );
    let stats = link.stats();
    assert_eq!(stats.drops_outage, 5);
    assert_eq!(stats.drops_queue_full, 0);
    assert_eq!(stats.packets_accepted, 5);
    assert_eq!(link.capacity_bytes(ms(0), ms(4000)), 1999 * 1504);
}

#[test]
fn a_drop_outage_on_a_constant_link_loses_the_packet_on_the_wire() {
    // 999.5 ms: 0 starts (due 1000.5), 1 queues; at 1000 ms both are lost.
    // 3000 ms: 2 starts a new busy period → 3001 ms.
    let mut link = constant_link();
    link.set_outages(outage(1000, 3000, OutageKind::Drop));
    let arrivals = [(us(999_500), 0), (us(999_500), 1), (ms(3000), 2)];
    let (departed, dropped) = drive(&mut link, &arrivals, ms(5000));
    assert_eq!(departed, [(2, ms(3001))]);
    assert_eq!(dropped, [(0, ms(1000)), (1, ms(1000))]);
    assert_eq!(link.stats().drops_outage, 2);
}

#[test]
fn outages_keep_every_packet_accounted_for() {
    // Random windows (stall or drop) and random arrivals on both kinds of link: every
    // packet departs or is dropped exactly once, in FIFO order, never inside a window.
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for case in 0..60 {
        let mut windows = Vec::new();
        let mut t = 0;
        for _ in 0..3 {
            let start = t + 50 + rng.next_u64() % 400;
            let end = start + 1 + rng.next_u64() % 300;
            let kind = if rng.next_u64() % 2 == 0 {
                OutageKind::Stall
            } else {
                OutageKind::Drop
            };
            windows.push(OutageWindow {
                start: ms(start),
                end: ms(end),
                kind,
            });
            t = end;
        }
        let outages = Outages::new(windows.clone()).unwrap();
        let mut link = if case % 2 == 0 {
            every_ms_link()
        } else {
            constant_link()
        };
        link.set_outages(outages);
        let mut at = 0;
        let arrivals: Vec<(Time, u32)> = (0..400)
            .map(|id| {
                at += rng.next_u64() % 5_000;
                (us(at), id)
            })
            .collect();
        let (departed, dropped) = drive(&mut link, &arrivals, ms(10_000));
        let mut seen: Vec<u32> = departed.iter().chain(&dropped).map(|d| d.0).collect();
        seen.sort();
        assert_eq!(seen, (0..400).collect::<Vec<_>>(), "case {case}");
        assert!(departed
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
        for &(id, t) in &departed {
            assert!(
                windows.iter().all(|w| t <= w.start || t >= w.end),
                "case {case}: packet {id} left at {t} inside an outage"
            );
        }
        assert_eq!(link.stats().drops_outage, dropped.len() as u64);
    }
}

#[test]
fn outage_configs_name_bad_keys() {
    let cfg = |start_s, duration_s, kind| OutageConfig {
        start_s,
        duration_s,
        kind,
    };
    let o = Outages::from_config(&[cfg(10.0, 2.0, OutageKind::Stall)]).unwrap();
    assert_eq!(o.windows()[0].start, Time::from_secs(10));
    assert_eq!(o.windows()[0].end, Time::from_secs(12));
    let e = Outages::from_config(&[cfg(1.0, -2.0, OutageKind::Drop)]).unwrap_err();
    assert_eq!(e.field, "outages[0].duration_s");
    let e = Outages::from_config(&[
        cfg(1.0, 2.0, OutageKind::Drop),
        cfg(2.5, 1.0, OutageKind::Stall),
    ])
    .unwrap_err();
    assert_eq!(e.field, "outages");
}

/// Runs `loss` over `n` packets; returns (loss rate, mean run of consecutive losses).
fn loss_run(loss: &mut LossModel, n: usize, seed: u64) -> (f64, f64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut lost, mut bursts, mut in_burst) = (0usize, 0usize, false);
    for _ in 0..n {
        let l = loss.drops(&mut rng);
        lost += usize::from(l);
        bursts += usize::from(l && !in_burst);
        in_burst = l;
    }
    (lost as f64 / n as f64, lost as f64 / bursts as f64)
}

#[test]
fn gilbert_elliott_matches_its_closed_forms() {
    let ge = |p, r, loss_good, loss_bad| GilbertElliottConfig {
        p,
        r,
        loss_good,
        loss_bad,
    };
    // (config, expected rate, expected mean burst, rate tolerance, burst tolerance)
    // Gilbert: p = 0.05, r = 0.25 → rate 0.05 / 0.30 = 0.16667, bursts 1 / r = 4.
    // loss_bad = 0.8: rate 0.8 × 0.05 / 0.30 = 0.13333; bursts 1 / (1 − 0.75 × 0.8) = 2.5.
    // Elliott: p = 0.02, r = 0.2, 1 % / 60 %: rate (0.2 × 0.01 + 0.02 × 0.6) / 0.22
    //          = 0.063636 (no closed-form burst length with loss in the good state).
    let cases = [
        (ge(0.05, 0.25, 0.0, 1.0), 1.0 / 6.0, Some(4.0)),
        (ge(0.05, 0.25, 0.0, 0.8), 0.4 / 3.0, Some(2.5)),
        (ge(0.02, 0.2, 0.01, 0.6), 0.014 / 0.22, None),
    ];
    let n = 1_000_000;
    for (cfg, rate, burst) in cases {
        assert!((cfg.loss_rate() - rate).abs() < 1e-12);
        match (cfg.mean_burst_len(), burst) {
            (Some(got), Some(want)) => assert!((got - want).abs() < 1e-12, "{got}"),
            (got, want) => assert_eq!(got, want),
        }
        let mut model = LossConfig::GilbertElliott(cfg).build().unwrap();
        let (measured_rate, measured_burst) = loss_run(&mut model, n, 5);
        // The chain's states stay correlated for about 1 / (p + r) packets; 5 sd of the
        // rate with that correlation is below 0.005 for these parameters.
        println!(
            "GE {cfg:?}: rate {measured_rate:.5} (closed form {rate:.5}), mean burst \
             {measured_burst:.3} (closed form {burst:?})"
        );
        assert!((measured_rate - rate).abs() < 0.005, "{measured_rate}");
        if let Some(b) = burst {
            assert!((measured_burst - b).abs() < 0.06 * b, "{measured_burst}");
        }
        // Same seed, same losses.
        let mut a = LossConfig::GilbertElliott(cfg).build().unwrap();
        let mut b = LossConfig::GilbertElliott(cfg).build().unwrap();
        assert_eq!(loss_run(&mut a, 10_000, 5), loss_run(&mut b, 10_000, 5));
    }
}

#[test]
fn loss_configs_build_and_name_bad_keys() {
    assert_eq!(
        LossConfig::Bernoulli { p: 0.0 }.build().unwrap(),
        LossModel::None
    );
    let mut b = LossConfig::Bernoulli { p: 0.1 }.build().unwrap();
    let (rate, _) = loss_run(&mut b, 100_000, 3);
    assert!((rate - 0.1).abs() < 0.005, "{rate}");
    assert_eq!(b.loss_rate(), 0.1);
    let e = LossConfig::Bernoulli { p: 1.5 }.build().unwrap_err();
    assert_eq!(e.field, "p");
    let ge = |p, r, loss_good, loss_bad| {
        LossConfig::GilbertElliott(GilbertElliottConfig {
            p,
            r,
            loss_good,
            loss_bad,
        })
        .build()
        .unwrap_err()
        .field
    };
    assert_eq!(ge(-0.1, 0.3, 0.0, 1.0), "p");
    assert_eq!(ge(0.1, 1.3, 0.0, 1.0), "r");
    assert_eq!(ge(0.1, 0.3, 2.0, 1.0), "loss_good");
    assert_eq!(ge(0.1, 0.3, 0.0, f64::NAN), "loss_bad");
    assert_eq!(ge(0.0, 0.0, 0.0, 1.0), "r");
}

/// Pushes `arrivals` through `stage` and returns `(id, arrival, release)` in release
/// order.
fn through<S: Stage<u32>>(stage: &mut S, arrivals: &[Time]) -> Vec<(u32, Time, Time)> {
    run_stage(stage, arrivals, 100)
        .into_iter()
        .map(|(item, at)| (item, arrivals[item as usize], at))
        .collect()
}

fn mean_extra_ms(out: &[(u32, Time, Time)]) -> f64 {
    out.iter()
        .map(|&(_, a, r)| (r - a).as_ms_f64())
        .sum::<f64>()
        / out.len() as f64
}

#[test]
fn jitter_keeps_order_and_has_the_distribution_mean() {
    // Sparse arrivals (100 ms apart), so FIFO never holds a packet back: the mean added
    // delay is the distribution's mean.
    // uniform [1, 4]: 2.5 ms (sd 0.866). exponential: 3 ms (sd 3).
    // normal(2, 2) truncated at 0: α = −1, φ(1) = 0.2419707, 1 − Φ(−1) = 0.8413447,
    // mean = 2 + 2 × 0.2419707 / 0.8413447 = 2.575199 ms (sd about 1.64).
    let sparse: Vec<Time> = (0..100_000u64).map(|i| ms(100 * i)).collect();
    let cases = [
        (
            JitterConfig::Uniform {
                min_ms: 1.0,
                max_ms: 4.0,
            },
            2.5,
            0.866,
        ),
        (JitterConfig::Exponential { mean_ms: 3.0 }, 3.0, 3.0),
        (
            JitterConfig::Normal {
                mean_ms: 2.0,
                sd_ms: 2.0,
            },
            2.575199,
            1.64,
        ),
    ];
    for (cfg, mean, sd) in cases {
        let mut j = Jitter::new(cfg, ChaCha8Rng::seed_from_u64(9)).unwrap();
        let out = through(&mut j, &sparse);
        let measured = mean_extra_ms(&out);
        let tolerance = 5.0 * sd / (sparse.len() as f64).sqrt();
        println!("jitter {cfg:?}: mean extra {measured:.4} ms, expected {mean} ± {tolerance:.4}");
        assert!((measured - mean).abs() < tolerance, "{measured}");
        if let JitterConfig::Uniform { min_ms, max_ms } = cfg {
            assert!(out.iter().all(|&(_, a, r)| {
                let d = (r - a).as_ms_f64();
                d >= min_ms && d <= max_ms
            }));
        }
        // Same seed, same releases; another seed, others.
        let mut again = Jitter::new(cfg, ChaCha8Rng::seed_from_u64(9)).unwrap();
        assert_eq!(through(&mut again, &sparse[..1000]), out[..1000]);
        let mut other = Jitter::new(cfg, ChaCha8Rng::seed_from_u64(10)).unwrap();
        assert_ne!(through(&mut other, &sparse[..1000]), out[..1000]);
    }

    // Dense arrivals (every 0.1 ms) with up to 10 ms of jitter: order is kept, releases
    // never go backwards, and waiting behind earlier packets adds to the mean.
    let dense: Vec<Time> = (0..50_000u64).map(|i| us(100 * i)).collect();
    let cfg = JitterConfig::Uniform {
        min_ms: 0.0,
        max_ms: 10.0,
    };
    let mut j = Jitter::new(cfg, ChaCha8Rng::seed_from_u64(1)).unwrap();
    let out = through(&mut j, &dense);
    assert!(out
        .windows(2)
        .all(|w| w[0].0 + 1 == w[1].0 && w[0].2 <= w[1].2));
    let measured = mean_extra_ms(&out);
    println!("dense uniform [0, 10] ms: mean extra {measured:.3} ms (draws alone: 5)");
    assert!(measured > 5.5, "{measured}");
}

#[test]
fn jitter_configs_name_bad_keys() {
    let e = |cfg: JitterConfig| cfg.validate().unwrap_err().field;
    assert_eq!(
        e(JitterConfig::Uniform {
            min_ms: 5.0,
            max_ms: 1.0
        }),
        "min_ms"
    );
    assert_eq!(
        e(JitterConfig::Uniform {
            min_ms: 0.0,
            max_ms: -1.0
        }),
        "max_ms"
    );
    assert_eq!(
        e(JitterConfig::Normal {
            mean_ms: -1.0,
            sd_ms: 1.0
        }),
        "mean_ms"
    );
    assert_eq!(
        e(JitterConfig::Normal {
            mean_ms: 1.0,
            sd_ms: f64::INFINITY
        }),
        "sd_ms"
    );
    assert_eq!(e(JitterConfig::Exponential { mean_ms: -3.0 }), "mean_ms");
}

#[test]
fn harq_delays_are_whole_round_trips_with_the_right_frequencies() {
    // bler 0.1, at most 3 retransmissions: P(k) = 0.9, 0.09, 0.009, 0.001; mean 0.111.
    let cfg = HarqConfig {
        in_order: false,
        ..HarqConfig::default()
    };
    assert!((cfg.mean_retx() - 0.111).abs() < 1e-12);
    let n = 100_000u64;
    let arrivals: Vec<Time> = (0..n).map(|i| us(1000 * i + 300)).collect();
    let mut h = Harq::new(cfg, ChaCha8Rng::seed_from_u64(4)).unwrap();
    let out = through(&mut h, &arrivals);
    let mut counts = [0u64; 4];
    for &(_, a, r) in &out {
        let d = r - a;
        assert_eq!(
            d.as_ns() % 8_000_000,
            0,
            "a whole number of 8 ms round trips"
        );
        counts[(d.as_ns() / 8_000_000) as usize] += 1;
    }
    println!(
        "HARQ bler 0.1, 3 retx: k = 0..3 counts {counts:?} of {n} (expected 90000, 9000, \
         900, 100); stats {:?}",
        h.stats()
    );
    let expected = [0.9, 0.09, 0.009, 0.001];
    for (k, (&c, &p)) in counts.iter().zip(&expected).enumerate() {
        let mean = p * n as f64;
        let sd = (n as f64 * p * (1.0 - p)).sqrt();
        assert!((c as f64 - mean).abs() < 5.0 * sd, "k = {k}: {c}");
    }
    assert_eq!(h.stats().packets, n);
    assert_eq!(h.stats().at_max_retx, counts[3]);
    assert_eq!(
        h.stats().retransmissions,
        counts[1] + 2 * counts[2] + 3 * counts[3]
    );
    // Out of order: packets 1 ms apart overtake one delayed by 8 ms.
    assert!(out.windows(2).any(|w| w[0].0 > w[1].0));
}

#[test]
fn harq_in_order_holds_later_packets_behind_a_retransmitted_one() {
    // The same seed draws the same retransmissions in both modes, so in order each
    // release is the running maximum of the out-of-order releases.
    let arrivals: Vec<Time> = (0..20_000u64).map(|i| us(500 * i)).collect();
    let run = |in_order| {
        let cfg = HarqConfig {
            bler: 0.2,
            in_order,
            ..HarqConfig::default()
        };
        let mut h = Harq::new(cfg, ChaCha8Rng::seed_from_u64(8)).unwrap();
        let mut out = through(&mut h, &arrivals);
        out.sort_by_key(|&(id, _, _)| id);
        out
    };
    let free = run(false);
    let ordered = run(true);
    let mut running_max = Time::ZERO;
    let mut held_back = 0;
    for (f, o) in free.iter().zip(&ordered) {
        running_max = running_max.max(f.2);
        assert_eq!(o.2, running_max, "packet {}", o.0);
        held_back += usize::from(o.2 > f.2);
    }
    println!(
        "in order: {held_back} of {} packets waited behind a retransmission",
        free.len()
    );
    assert!(held_back > 0);
    // Determinism.
    assert_eq!(run(true), ordered);
}

#[test]
fn harq_configs_name_bad_keys() {
    let e = |cfg: HarqConfig| cfg.validate().unwrap_err().field;
    let base = HarqConfig::default();
    assert_eq!(e(HarqConfig { bler: 1.5, ..base }), "bler");
    assert_eq!(
        e(HarqConfig {
            rtt_ms: 0.0,
            ..base
        }),
        "rtt_ms"
    );
    assert_eq!(
        e(HarqConfig {
            max_retx: 100,
            ..base
        }),
        "max_retx"
    );
}
