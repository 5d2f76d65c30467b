//! Link-level acceptance tests for CoDel and PIE: a `Link` fed by an unresponsive
//! constant-bit-rate source, with every departure and drop collected. Each test prints
//! its measured numbers (`cargo test -p cellcc-link --test aqm -- --nocapture`); they
//! are recorded in `docs/aqm.md`.

mod common;

use cellcc_link::{
    AqmVariant, Codel, CodelConfig, DropReason, EnqueueResult, Link, LinkService, PacketQueue, Pie,
    PieConfig, PieDelayEstimator, QueueSpec, Queued, TraceMode,
};
use cellcc_units::{Bandwidth, Dur, Time};
use common::trace_link;

/// The bottleneck of the acceptance scenarios: 10 Mbit/s, no framing, so a 1500-byte
/// packet takes exactly 1.2 ms.
const LINK_BPS: u64 = 10_000_000;
const PACKET: u32 = 1500;
/// Serialisation time of one packet at 10 Mbit/s.
const SERVICE: Dur = Dur::from_us(1200);

/// Packets from a constant-bit-rate source: one every `gap` in `[start, stop)`.
#[derive(Clone, Copy)]
struct Cbr {
    gap: Dur,
    start: Time,
    stop: Time,
}

impl Cbr {
    fn mbps(mbps: f64, start: Time, stop: Time) -> Self {
        let gap_ns = (f64::from(PACKET) * 8.0 / (mbps * 1e6) * 1e9).round() as u64;
        Cbr {
            gap: Dur::from_ns(gap_ns),
            start,
            stop,
        }
    }

    /// The 15 Mbit/s overload of the acceptance items (one packet every 800 µs).
    fn overload(secs: u64) -> Self {
        Cbr::mbps(15.0, Time::ZERO, Time::from_secs(secs))
    }
}

/// Everything that happened on a link during a run.
#[derive(Default)]
struct Run {
    arrivals: u64,
    /// (id, enqueued_at, departed_at)
    departures: Vec<(u32, Time, Time)>,
    /// (id, at) of drops reported by `pop_drop`, all with reason `Aqm`.
    aqm_drops: Vec<(u32, Time)>,
    /// Arrivals refused by a tail-drop limit.
    refused: u64,
}

impl Run {
    /// Queueing delay (time from arrival to the start of service) of the packets that
    /// arrived in `[from, to)`, in ms, on the constant 10 Mbit/s link.
    fn sojourns_ms(&self, from: Time, to: Time) -> Vec<f64> {
        self.departures
            .iter()
            .filter(|d| d.1 >= from && d.1 < to)
            .map(|d| (d.2 - d.1 - SERVICE).as_ms_f64())
            .collect()
    }

    fn aqm_drop_times_ms(&self) -> Vec<f64> {
        self.aqm_drops
            .iter()
            .map(|d| (d.1 - Time::ZERO).as_ms_f64())
            .collect()
    }
}

/// Feeds `source` into `link`, event by event, until everything has left or `until`.
fn run(link: &mut Link<u32>, source: Cbr, until: Time) -> Run {
    let mut out = Run::default();
    let mut next = source.start;
    let mut id = 0;
    loop {
        let arrival = Some(next).filter(|&t| t < source.stop && t <= until);
        let wakeup = link.next_wakeup().filter(|&t| t <= until);
        match (arrival, wakeup) {
            (Some(a), w) if w.is_none_or(|w| a < w) => {
                out.arrivals += 1;
                if let EnqueueResult::Dropped(_) = link.enqueue(a, id, PACKET) {
                    out.refused += 1;
                }
                id += 1;
                next = a + source.gap;
            }
            (_, Some(w)) => link.advance(w),
            _ => break,
        }
        while let Some(d) = link.pop_departure() {
            out.departures.push((d.item, d.enqueued_at, d.departed_at));
        }
        while let Some(d) = link.pop_drop() {
            assert_eq!(
                d.reason,
                DropReason::Aqm,
                "only the AQM drops after accepting"
            );
            out.aqm_drops.push((d.item, d.at));
        }
    }
    out
}

fn constant_link(queue: QueueSpec) -> Link<u32> {
    Link::new(LinkService::constant(Bandwidth::from_bps(LINK_BPS)), queue)
}

fn codel(variant: AqmVariant) -> QueueSpec {
    QueueSpec::Codel(CodelConfig {
        variant,
        ..CodelConfig::default()
    })
}

fn pie(variant: AqmVariant) -> QueueSpec {
    QueueSpec::Pie(PieConfig {
        variant,
        ..PieConfig::default()
    })
}

/// (mean, median) of `v`.
fn mean_median(mut v: Vec<f64>) -> (f64, f64) {
    assert!(!v.is_empty());
    v.sort_by(f64::total_cmp);
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    (mean, v[v.len() / 2])
}

/// Checks conservation and the link's counters: every arrival departed, was dropped
/// (AQM or refused) or is still queued, and `LinkStats` agrees with the outboxes.
fn check_accounting(link: &Link<u32>, r: &Run) {
    let in_link = link.queued_packets() as u64 + u64::from(link.has_packet_in_transit());
    assert_eq!(
        r.arrivals,
        r.departures.len() as u64 + r.aqm_drops.len() as u64 + r.refused + in_link
    );
    let stats = link.stats();
    assert_eq!(stats.drops_aqm, r.aqm_drops.len() as u64);
    assert_eq!(stats.drops_queue_full, r.refused);
    assert_eq!(stats.packets_departed, r.departures.len() as u64);
}

/// 1/√count in Q0.16 after Linux's Newton steps, times 100 ms, in ms, for count =
/// 1, 2, ... Worked by hand from `codel_Newton_step`: 1/√1 is 0xFFFF; one step from it
/// with count 2 gives y·(3 − 2y²)/2 = 0x8001 ≈ 0.5; with count 3, 0.5·(3 − 3/4)/2 =
/// 0.5625 = 0x9000; with count 4, 0.5625·(3 − 4·0.31640625)/2 = 0x7CE0; and so on.
const NEWTON_INTERVALS_MS: [f64; 10] = [
    99.998474, 50.001525, 56.25, 48.779296, 44.151306, 40.406799, 37.51831, 35.151672, 33.181762,
    31.504821,
];

#[test]
fn codel_rfc_first_drops_follow_the_newton_step_control_law() {
    let mut link = constant_link(codel(AqmVariant::Rfc));
    let r = run(&mut link, Cbr::overload(2), Time::from_secs(2));
    check_accounting(&link, &r);
    let drops = r.aqm_drop_times_ms();
    println!("codel rfc: first drops at {:?} ms", &drops[..11]);
    // Packet i arrives at 0.8·i ms and starts service at 1.2·i ms: sojourn 0.4·i ms,
    // first ≥ 5 ms for i = 13 at 15.6 ms, so first_above_time = 115.6 ms; the first
    // dequeue at or after it is at 116.4 ms (dequeues fall every 1.2 ms).
    assert!(
        (drops[0] - 116.4).abs() < 1e-6,
        "first drop at {}",
        drops[0]
    );
    // Drops are scheduled at drop_next, then happen at the first dequeue at or after it
    // (every 1.2 ms): each time is within 1.2 ms after the cumulative schedule.
    let mut scheduled = drops[0];
    for (k, interval) in NEWTON_INTERVALS_MS.iter().enumerate() {
        scheduled += interval;
        let late = drops[k + 1] - scheduled;
        assert!(
            (0.0..1.2).contains(&late),
            "drop {} at {} ms, scheduled {scheduled} ms",
            k + 2,
            drops[k + 1]
        );
        let spacing = drops[k + 1] - drops[k];
        let ideal = 100.0 / ((k + 1) as f64).sqrt();
        println!(
            "  count {:2}: spacing {spacing:6.2} ms, Newton {interval:6.2}, 100/√count {ideal:6.2}",
            k + 1
        );
        // Newton's method from 1/√1 is 29 % short at count 2, within 2.6 % from count 3.
        if k + 1 >= 3 {
            assert!(
                (spacing - ideal).abs() <= 0.026 * ideal + 1.2,
                "count {}",
                k + 1
            );
        }
    }
}

#[test]
fn codel_mahimahi_control_law_truncates_to_whole_ms() {
    // One 1504-byte opportunity per ms (12 Mbit/s) and 1500-byte packets at 18 Mbit/s:
    // one dequeue every ms, so every drop happens exactly at drop_next.
    let mut link = trace_link(&[1], TraceMode::Loop, codel(AqmVariant::Mahimahi));
    let source = Cbr::mbps(18.0, Time::ZERO, Time::from_secs(2));
    let r = run(&mut link, source, Time::from_secs(2));
    check_accounting(&link, &r);
    let drops = r.aqm_drop_times_ms();
    let spacing: Vec<f64> = drops.windows(2).take(12).map(|w| w[1] - w[0]).collect();
    println!(
        "codel mahimahi: first drops {:?}, spacing {spacing:?}",
        &drops[..13]
    );
    // ⌊100/√count⌋ for count = 1..12.
    assert_eq!(
        spacing,
        [100.0, 70.0, 57.0, 50.0, 44.0, 40.0, 37.0, 35.0, 33.0, 31.0, 30.0, 28.0]
    );
}

#[test]
fn codel_drops_at_dequeue_are_all_reported_and_counted() {
    for variant in [AqmVariant::Rfc, AqmVariant::Mahimahi] {
        let mut link = constant_link(QueueSpec::Codel(CodelConfig {
            variant,
            packets: Some(1000),
            ..CodelConfig::default()
        }));
        let r = run(&mut link, Cbr::overload(10), Time::from_secs(10));
        check_accounting(&link, &r);
        assert!(!r.aqm_drops.is_empty() && r.refused > 0, "{variant}");
        println!(
            "codel {variant} with packets=1000, 10 s: {} AQM drops, {} refused",
            r.aqm_drops.len(),
            r.refused
        );
    }
}

/// The acceptance scenario. CoDel's drop rate grows only as √count per interval, and an
/// unresponsive 1.5× overload needs count ≈ 1736 (a drop every 2.4 ms): the standing
/// queue reaches ~1.3 s before the drop rate catches up, then CoDel overshoots, drains
/// the queue and leaves the dropping state; RFC 8289 §5.5 re-entry then alternates
/// between a count ~4× too high and one ~20× too low (see the next test). The sojourn
/// time cycles with a period of ~13 s instead of settling at 5 ms. Not a bug: RFC 8289
/// CoDel is built for responsive traffic (see docs/aqm.md).
#[test]
fn codel_against_a_15_mbps_unresponsive_source_cycles_instead_of_converging() {
    for variant in [AqmVariant::Rfc, AqmVariant::Mahimahi] {
        let mut link = constant_link(codel(variant));
        let r = run(&mut link, Cbr::overload(30), Time::from_secs(40));
        check_accounting(&link, &r);
        let (mean, median) = mean_median(r.sojourns_ms(Time::from_secs(15), Time::from_secs(30)));
        let per_second: Vec<f64> = (0..30)
            .map(|s| mean_median(r.sojourns_ms(Time::from_secs(s), Time::from_secs(s + 1))).0)
            .collect();
        let dropped = r.aqm_drops.len() as f64 / r.arrivals as f64;
        println!(
            "codel {variant}, 15 Mbit/s into 10 Mbit/s, 30 s: 2nd-half sojourn mean {mean:.1} ms, \
             median {median:.1} ms; AQM drops {:.3} of arrivals; per-second mean sojourn {:?}",
            dropped,
            per_second.iter().map(|x| x.round()).collect::<Vec<_>>()
        );
        // In the long run the drops remove the excess third of the traffic.
        assert!((0.32..0.345).contains(&dropped), "{dropped}");
        // Far above target on average (measured 540 ms rfc, 452 ms mahimahi) ...
        assert!((300.0..800.0).contains(&mean), "{mean}");
        // ... but the control law wins every cycle: the queue is drained to a small
        // delay at least once in the second half, and the peak stays below 1.5 s.
        let min = per_second[15..].iter().copied().fold(f64::MAX, f64::min);
        let max = per_second.iter().copied().fold(0.0, f64::max);
        assert!(min < 100.0 && max < 1500.0, "min {min}, max {max}");
    }
    // During the first dropping episode (rfc) the drop rate is 10·√count per second and
    // count ≈ (5t)², so the rate grows by ~50 drops/s every second.
    let mut link = constant_link(codel(AqmVariant::Rfc));
    let r = run(&mut link, Cbr::overload(12), Time::from_secs(12));
    let per_second: Vec<usize> = (0..12)
        .map(|s| {
            r.aqm_drops
                .iter()
                .filter(|d| d.1.as_ms() / 1000 == s)
                .count()
        })
        .collect();
    println!("codel rfc: AQM drops per second {per_second:?}");
    for (s, &got) in per_second.iter().enumerate().skip(2) {
        let expected = 50.0 * (s as f64 + 0.5);
        let got = got as f64;
        assert!(
            (got - expected).abs() < 0.06 * expected,
            "second {s}: {got}"
        );
    }
}

/// One dropping episode of a CoDel queue: entered at `enter` with drop count
/// `enter_count`, left at `exit` with `exit_count`.
#[derive(Clone, Copy, Debug)]
struct Episode {
    enter: Time,
    enter_count: u32,
    exit: Time,
    exit_count: u32,
}

/// Drives a CoDel queue directly behind a 10 Mbit/s server (one 1500-byte packet per
/// 1.2 ms, sojourn read at the start of service, as on `constant_link`) fed by
/// `source`, and returns the dropping episodes that ended before `until`.
fn codel_episodes(config: CodelConfig, source: Cbr, until: Time) -> Vec<Episode> {
    let mut q: Codel<u32> = Codel::new(config).unwrap();
    let mut drops = std::collections::VecDeque::new();
    let mut next_arrival = source.start;
    let mut server_free = Time::ZERO;
    let mut episodes = Vec::new();
    let mut open: Option<(Time, u32)> = None;
    loop {
        // The next event: an arrival, or a dequeue once the server is free and the
        // queue is not empty (a dequeue first when both fall at the same time).
        let arrival = Some(next_arrival).filter(|&t| t < source.stop);
        let dequeue_at = (q.len_packets() > 0).then_some(server_free);
        let now = match (arrival, dequeue_at) {
            (Some(a), Some(d)) if a < d => a,
            (Some(a), None) => a,
            (_, Some(d)) => d,
            (None, None) => break,
        };
        if arrival == Some(now) && dequeue_at != Some(now) {
            let packet = Queued {
                item: 0,
                ip_len: PACKET,
                charged_bytes: PACKET,
                enqueued_at: now,
            };
            q.enqueue(now, packet, &mut drops).unwrap();
            server_free = server_free.max(now);
            next_arrival = now + source.gap;
            continue;
        }
        if now >= until {
            break;
        }
        if q.dequeue(now, &mut drops).is_some() {
            server_free = now + SERVICE;
        }
        match (open, q.dropping()) {
            (None, true) => open = Some((now, q.count())),
            (Some((enter, enter_count)), false) => {
                episodes.push(Episode {
                    enter,
                    enter_count,
                    exit: now,
                    exit_count: q.count(),
                });
                open = None;
            }
            _ => {}
        }
    }
    episodes
}

/// Why CoDel cycles against the 15 Mbit/s unresponsive source: the per-episode drop
/// counts follow RFC 8289 §5.5 exactly, and that rule alternates between too high and
/// too low a resumed count. Keeping up needs a drop every 2.4 ms (416.7 of the 1250
/// arrivals/s), i.e. interval/√count = 2.4 ms, count ≈ 1736. The first episode ramps
/// from count 1 (rate 50·t drops/s, count (5t)²), lets a standing queue build until the
/// rate reaches 417/s at ~8.3 s, and needs as long again of surplus drops to drain it:
/// it ends near t = 16.6 s with count ≈ 4 × 1736 (twice the needed rate). Re-entering
/// ~100 ms later is "recent", so the next episode resumes at delta = count − lastcount,
/// that whole count: it drops at twice the needed rate, drains the fresh queue within
/// ~100 ms after ~85 drops and leaves. The entry after that resumes at delta ≈ 85
/// (≈ 92 drops/s), far below the need, and the long ramp starts again.
#[test]
fn codel_reentry_alternates_between_an_overshooting_and_a_small_count() {
    const NEEDED_DROP_GAP_MS: f64 = 2.4;
    for variant in [AqmVariant::Rfc, AqmVariant::Mahimahi] {
        let config = CodelConfig {
            variant,
            ..CodelConfig::default()
        };
        let episodes = codel_episodes(config, Cbr::overload(30), Time::from_secs(30));
        println!(
            "codel {variant}, 15 Mbit/s into 10 Mbit/s: episodes (enter s, count → exit s, count) {:?}",
            episodes
                .iter()
                .map(|e| format!(
                    "{:.3} {} → {:.3} {}",
                    (e.enter - Time::ZERO).as_secs_f64(),
                    e.enter_count,
                    (e.exit - Time::ZERO).as_secs_f64(),
                    e.exit_count
                ))
                .collect::<Vec<_>>()
        );
        // The drop spacing interval/√count of each variant's control law, in ms.
        let gap_ms = |count: u32| {
            let exact = 100.0 / f64::from(count).sqrt();
            match variant {
                AqmVariant::Rfc => exact,
                AqmVariant::Mahimahi => exact.floor(),
            }
        };
        assert!(episodes.len() >= 3, "{episodes:?}");
        assert_eq!(episodes[0].enter_count, 1);
        for (k, pair) in episodes.windows(2).enumerate() {
            let (before, after) = (pair[0], pair[1]);
            // RFC 8289 §5.5: re-entering within 16 intervals of drop_next resumes at
            // count − lastcount. Here every re-entry comes one interval (plus the ~2 ms
            // the queue needs to pass target again) after the exit.
            let gap = after.enter - before.exit;
            assert!(
                gap >= Dur::from_ms(100) && gap < Dur::from_ms(110),
                "{variant}: re-entry {k} after {gap:?}"
            );
            assert_eq!(
                after.enter_count,
                before.exit_count - before.enter_count,
                "{variant}: re-entry {k}"
            );
        }
        for (k, e) in episodes.iter().enumerate() {
            let length = e.exit - e.enter;
            if k % 2 == 0 {
                // Long episodes start below a quarter of the needed rate (count 1, then
                // the ~85 drops of the short episode before) and last seconds.
                assert!(e.enter_count < 100, "{variant}: episode {k} {e:?}");
                assert!(length > Dur::from_secs(5), "{variant}: episode {k} {e:?}");
            } else {
                // Short episodes resume at a count that drops at least 1.9× too fast
                // and drain the queue within 200 ms.
                assert!(
                    gap_ms(e.enter_count) < NEEDED_DROP_GAP_MS / 1.9,
                    "{variant}: episode {k} {e:?}"
                );
                assert!(length < Dur::from_ms(200), "{variant}: episode {k} {e:?}");
            }
        }
    }
}

/// With a mild unresponsive overload (10.5 Mbit/s into 10 Mbit/s, 1/21 to drop) the
/// control law reaches the needed rate within a second and CoDel settles just above its
/// 5 ms target.
#[test]
fn codel_settles_near_target_under_a_mild_unresponsive_overload() {
    for variant in [AqmVariant::Rfc, AqmVariant::Mahimahi] {
        let mut link = constant_link(codel(variant));
        let source = Cbr::mbps(10.5, Time::ZERO, Time::from_secs(30));
        let r = run(&mut link, source, Time::from_secs(31));
        check_accounting(&link, &r);
        let (mean, median) = mean_median(r.sojourns_ms(Time::from_secs(15), Time::from_secs(30)));
        println!(
            "codel {variant}, 10.5 Mbit/s into 10 Mbit/s, 30 s: 2nd-half sojourn mean \
             {mean:.2} ms, median {median:.2} ms"
        );
        assert!((5.0..10.0).contains(&mean), "mean {mean}");
        assert!((5.0..10.0).contains(&median), "median {median}");
    }
}

#[test]
fn pie_holds_the_delay_near_qdelay_ref_under_a_15_mbps_overload() {
    let cases = [
        ("rfc, timestamps", pie(AqmVariant::Rfc), 13.0..17.0),
        (
            "rfc, dequeue rate",
            QueueSpec::Pie(PieConfig {
                delay_estimator: Some(PieDelayEstimator::DequeueRate),
                ..PieConfig::default()
            }),
            13.0..17.0,
        ),
        // Higher, and by a limit cycle rather than a fixed point: its PI law takes
        // delays in ms (62.5× the RFC's gain per update), so p swings between 0 and
        // 1 within ~90 ms and the delay between ~6 and ~32 ms (see docs/aqm.md).
        ("mahimahi", pie(AqmVariant::Mahimahi), 16.0..20.0),
    ];
    for (name, spec, band) in cases {
        let mut link = constant_link(spec);
        let r = run(&mut link, Cbr::overload(30), Time::from_secs(31));
        check_accounting(&link, &r);
        let (mean, median) = mean_median(r.sojourns_ms(Time::from_secs(15), Time::from_secs(30)));
        let dropped = r.aqm_drops.len() as f64 / r.arrivals as f64;
        println!(
            "pie {name}, 15 Mbit/s into 10 Mbit/s, 30 s: 2nd-half queueing delay mean \
             {mean:.2} ms, median {median:.2} ms; AQM drops {dropped:.3} of arrivals"
        );
        assert!(band.contains(&mean), "{name}: mean {mean}");
        assert!((0.32..0.345).contains(&dropped), "{name}: {dropped}");
    }
}

#[test]
fn pie_burst_allowance_lets_an_initial_burst_through() {
    // 1250 packets at 100 Mbit/s in the first 150 ms: the queue reaches ~1.4 s.
    let burst = Cbr::mbps(100.0, Time::ZERO, Time::from_ms(150));
    let drops_with = |max_burst_ms| {
        let mut link = constant_link(QueueSpec::Pie(PieConfig {
            max_burst_ms,
            ..PieConfig::default()
        }));
        let r = run(&mut link, burst, Time::from_secs(10));
        check_accounting(&link, &r);
        r.aqm_drops.len()
    };
    let (protected, unprotected) = (drops_with(150), drops_with(0));
    println!("pie rfc, 150 ms burst at 100 Mbit/s: {protected} drops with max_burst 150 ms, {unprotected} with 0");
    assert_eq!(protected, 0);
    assert!(unprotected > 0);
    // A longer burst: no drop before the allowance has run out (10 updates of 15 ms).
    let mut link = constant_link(pie(AqmVariant::Rfc));
    let r = run(
        &mut link,
        Cbr::mbps(50.0, Time::ZERO, Time::from_ms(300)),
        Time::from_secs(10),
    );
    let first = r.aqm_drops[0].1;
    println!("pie rfc, 300 ms at 50 Mbit/s: first drop at {first}");
    assert!(first >= Time::from_ms(150), "{first}");
}

#[test]
fn pie_is_deterministic_per_seed() {
    let drops = |seed| {
        let service = LinkService::constant(Bandwidth::from_bps(LINK_BPS));
        let mut link = Link::try_with_seed(service, pie(AqmVariant::Rfc), seed).unwrap();
        run(&mut link, Cbr::overload(3), Time::from_secs(3)).aqm_drops
    };
    assert_eq!(drops(7), drops(7));
    assert_ne!(drops(7), drops(8));
    let default_seed = {
        let mut link = constant_link(pie(AqmVariant::Rfc));
        run(&mut link, Cbr::overload(3), Time::from_secs(3)).aqm_drops
    };
    assert_eq!(default_seed, drops(Link::<u32>::DEFAULT_QUEUE_SEED));
}

/// Drives a PIE queue directly behind a 10 Mbit/s server (one 1500-byte packet per
/// 1.2 ms) and samples its drop probability every `period`.
fn pie_drop_prob_trace(
    config: PieConfig,
    phases: &[Cbr],
    until: Time,
    period: Dur,
) -> Vec<(Time, f64)> {
    let mut q: Pie<u32> = Pie::new(config, 1).unwrap();
    let mut drops = std::collections::VecDeque::new();
    let mut arrivals: Vec<Time> = phases
        .iter()
        .flat_map(|c| {
            (0..)
                .map(move |k| c.start + c.gap * k)
                .take_while(move |&t| t < c.stop)
        })
        .collect();
    arrivals.sort();
    let mut arrivals = arrivals.into_iter().peekable();
    let mut server_free = Time::ZERO;
    let mut clock = Time::ZERO;
    let mut samples = Vec::new();
    let mut next_sample = Time::ZERO;
    loop {
        // The next event: an arrival, or a dequeue once the server is free and the
        // queue is not empty (a dequeue first when both fall at the same time).
        let dequeue_at = (!q.is_empty()).then_some(server_free.max(clock));
        let arrival = arrivals.peek().copied();
        let (now, is_arrival) = match (arrival, dequeue_at) {
            (Some(a), Some(d)) if a < d => (a, true),
            (_, Some(d)) => (d, false),
            (Some(a), None) => (a, true),
            (None, None) => (until, false),
        };
        while next_sample <= now.min(until) {
            q.tick(next_sample);
            samples.push((next_sample, q.drop_prob()));
            next_sample += period;
        }
        if now >= until {
            break;
        }
        clock = now;
        if is_arrival {
            arrivals.next();
            let packet = Queued {
                item: 0,
                ip_len: PACKET,
                charged_bytes: PACKET,
                enqueued_at: now,
            };
            let _ = q.enqueue(now, packet, &mut drops);
        } else if q.dequeue(now, &mut drops).is_some() {
            server_free = now + SERVICE;
        }
    }
    samples
}

#[test]
fn pie_drop_probability_rises_under_overload_and_decays_to_zero_after() {
    for variant in [AqmVariant::Rfc, AqmVariant::Mahimahi] {
        let config = PieConfig {
            variant,
            ..PieConfig::default()
        };
        // 15 Mbit/s for 10 s, then 5 Mbit/s (half the link) for 20 s.
        let phases = [
            Cbr::overload(10),
            Cbr::mbps(5.0, Time::from_secs(10), Time::from_secs(30)),
        ];
        let trace = pie_drop_prob_trace(config, &phases, Time::from_secs(30), Dur::from_ms(100));
        let at = |ms: u64| trace.iter().find(|s| s.0 == Time::from_ms(ms)).unwrap().1;
        let overload_mean = trace[50..100].iter().map(|s| s.1).sum::<f64>() / 50.0;
        let zero_at = trace
            .iter()
            .find(|s| s.0 > Time::from_secs(10) && s.1 == 0.0)
            .map(|s| s.0);
        println!(
            "pie {variant}: drop_prob at 0.1 s {:.4}, 1 s {:.4}, mean over 5–10 s {overload_mean:.3}, \
             10.5 s {:.4}, 12 s {:.4}; exactly 0 from {zero_at:?}",
            at(100),
            at(1000),
            at(10_500),
            at(12_000)
        );
        // Under overload the probability settles where a third of arrivals go.
        assert!((0.25..0.45).contains(&overload_mean), "{overload_mean}");
        // Once the overload stops it decays, and reaches exactly 0 within 5 s, and stays.
        let zero_at = zero_at.expect("decays to 0");
        assert!(zero_at < Time::from_secs(15), "{zero_at}");
        assert!(trace.iter().filter(|s| s.0 >= zero_at).all(|s| s.1 == 0.0));
    }
}

#[test]
fn bad_parameters_are_errors_naming_the_parameter() {
    let service = || LinkService::constant(Bandwidth::from_bps(LINK_BPS));
    let cases = [
        (
            QueueSpec::Codel(CodelConfig {
                interval_ms: 0,
                ..CodelConfig::default()
            }),
            "codel: interval_ms must be > 0",
        ),
        (
            QueueSpec::Codel(CodelConfig {
                packets: Some(0),
                ..CodelConfig::default()
            }),
            "codel: packets must be > 0",
        ),
        (
            QueueSpec::Pie(PieConfig {
                variant: AqmVariant::Mahimahi,
                max_burst_ms: 0,
                ..PieConfig::default()
            }),
            "pie: max_burst_ms must be > 0 in the mahimahi variant",
        ),
        (
            QueueSpec::Pie(PieConfig {
                variant: AqmVariant::Mahimahi,
                derandomize: true,
                ..PieConfig::default()
            }),
            "pie: derandomize is an rfc-variant option",
        ),
        (
            QueueSpec::Pie(PieConfig {
                qdelay_ref_ms: 10_000_000,
                ..PieConfig::default()
            }),
            "pie: qdelay_ref_ms must be at most 3600000",
        ),
    ];
    for (spec, message) in cases {
        let err = Link::<u32>::try_new(service(), spec.clone()).unwrap_err();
        assert!(err.to_string().starts_with(message), "{err} / {message}");
        assert!(spec.validate().is_err());
    }
}

#[test]
fn pie_mahimahi_swings_between_low_and_full_drop_probability() {
    // Sampled every 5 ms over 5–10 s of the 15 Mbit/s overload.
    for (variant, low, high) in [
        (AqmVariant::Rfc, 0.2, 0.6),
        (AqmVariant::Mahimahi, 0.2, 1.0),
    ] {
        let config = PieConfig {
            variant,
            ..PieConfig::default()
        };
        let trace = pie_drop_prob_trace(
            config,
            &[Cbr::overload(10)],
            Time::from_secs(10),
            Dur::from_ms(5),
        );
        let steady = trace
            .iter()
            .filter(|s| s.0 >= Time::from_secs(5))
            .map(|s| s.1);
        let (min, max) = steady.fold((1.0f64, 0.0f64), |(lo, hi), p| (lo.min(p), hi.max(p)));
        println!("pie {variant}: drop_prob over 5–10 s between {min:.3} and {max:.3}");
        match variant {
            // The RFC's small per-update steps keep p in a narrow band around 1/3.
            AqmVariant::Rfc => assert!(min > low && max < high, "{min}..{max}"),
            // Mahimahi's ms-scaled steps reach both ends.
            AqmVariant::Mahimahi => assert!(min < low && max == high, "{min}..{max}"),
        }
    }
}
