//! The cellular scheduling gates: hand-computed release schedules, TDD, presets, and the
//! ACK-gap histogram of César Fig. 6 at gate level.
//!
//! Times in the comments are in ms. Notation: an SR sent at occasion `s` is answered by a
//! grant at `s + G`; the granted block goes out at `tx = g + K` (next uplink time under
//! TDD).

mod common;

use cellcc_link::{
    BurstStats, DownlinkGate, DownlinkGateConfig, SchedulingConfig, Stage, TddConfig, TddOverride,
    UplinkGrant, UplinkGrantConfig, PRESETS,
};
use cellcc_units::{Dur, Time};
use common::{constant_link, run_stage};

fn us(t: u64) -> Time {
    Time::from_us(t)
}

/// [`run_stage`] with 52-byte packets (ACKs).
fn run<S: Stage<u32>>(stage: &mut S, arrivals: &[Time]) -> Vec<(u32, Time)> {
    run_stage(stage, arrivals, 52)
}

fn release_times(out: &[(u32, Time)]) -> Vec<Time> {
    // Gates never reorder.
    assert!(out.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
    out.iter().map(|&(_, t)| t).collect()
}

/// The TDD pattern DDDSU of NR with 0.5 ms slots: uplink [2.0, 2.5) of every 2.5 ms.
fn dddsu() -> Option<TddConfig> {
    Some(TddConfig {
        period_ms: 2.5,
        dl_ms: 2.0,
    })
}

/// The most populated bin of 0.5 ms gap bins other than the first ([0, 0.5) ms): its
/// start (ms) and count.
fn dominant_nonzero_bin(bins: &[u64]) -> (f64, u64) {
    let (peak_bin, peak) = bins[1..]
        .iter()
        .enumerate()
        .max_by_key(|&(_, &n)| n)
        .map(|(i, &n)| (i + 1, n))
        .unwrap();
    (peak_bin as f64 * 0.5, peak)
}

fn gate(cfg: &UplinkGrantConfig) -> UplinkGrant<u32> {
    UplinkGrant::new(cfg).unwrap()
}

fn lte(sr_period_ms: f64, grant_delay_ms: f64, ul_tx_delay_ms: f64) -> UplinkGrantConfig {
    UplinkGrantConfig {
        sr_period_ms,
        grant_delay_ms,
        ul_tx_delay_ms,
        ..UplinkGrantConfig::default()
    }
}

#[test]
fn grant_gate_sr5_grant4_hand_schedule() {
    // SR occasions 0, 5, 10, 15; G = 4, K = 0.
    // 0.3: buffer empty → SR at 5 → grant 9.   1.0, 6.2: wait in the buffer → ride at 9.
    // 9.0: arrives at the grant instant → rides at 9.
    // 9.5: buffer emptied at 9 → SR at 10 → grant 14.   12.0 → 14.   14.0 → 14.
    // 15.0: empty → SR at the occasion 15 itself → grant 19.
    let arrivals = [300, 1000, 6200, 9000, 9500, 12000, 14000, 15000].map(us);
    let mut g = gate(&lte(5.0, 4.0, 0.0));
    let out = run(&mut g, &arrivals);
    let expect = [9000, 9000, 9000, 9000, 14000, 14000, 14000, 19000].map(us);
    assert_eq!(release_times(&out), expect);
    assert_eq!(
        (g.stats().srs_sent, g.stats().grants_used, g.stats().packets),
        (3, 3, 8)
    );

    // LTE timing (the `lte-fdd-sr5` preset): the block goes out K = 4 ms after the grant.
    let mut g = gate(&UplinkGrantConfig::default());
    let out = run(&mut g, &arrivals);
    let expect = [13000, 13000, 13000, 13000, 18000, 18000, 18000, 23000].map(us);
    assert_eq!(release_times(&out), expect);
}

#[test]
fn grant_gate_pending_sr_is_repeated_until_the_grant() {
    // SR period 2.5 < G = 4: the SR stays pending over two occasions, and the redundant
    // grant serves the next arrivals without an SR of their own.
    // 0.1: SR at 2.5 (grant 6.5) and again at 5.0 (grant 9.0); waits for 6.5.
    // 3.0, 4.3 → 6.5.
    // 6.6: empty again; the grant at 9.0 is already coming, the next occasion is 7.5:
    //      SR at 7.5 (grant 11.5); rides the grant at 9.0.
    // 9.2: empty; grant 11.5 coming, occasion 10.0: SR at 10 (grant 14.0); rides 11.5.
    let arrivals = [100, 3000, 4300, 6600, 9200].map(us);
    let mut g = gate(&lte(2.5, 4.0, 0.0));
    let out = run(&mut g, &arrivals);
    assert_eq!(release_times(&out), [6500, 6500, 6500, 9000, 11500].map(us));
    assert_eq!(g.stats().srs_sent, 4);
    assert_eq!(g.stats().grants_used, 3);

    // An arrival into the empty buffer when an already requested grant comes before the
    // next SR occasion: that grant cancels the new SR before it is sent.
    // 0.1: SRs at 2.5, 5.0 → grants 6.5, 9.0.   7.6: grant 9.0 ≤ next occasion 10.0.
    let mut g = gate(&lte(2.5, 4.0, 0.0));
    let out = run(&mut g, &[us(100), us(7600)]);
    assert_eq!(release_times(&out), [us(6500), us(9000)]);
    assert_eq!(g.stats().srs_sent, 2);
}

#[test]
fn grant_gate_is_exact_in_nanoseconds_on_nr_slots() {
    // NR FDD: SR every 0.5 ms, G = K = 0.5 ms.
    // 250 ns after 0.25 ms: SR at 0.5 → grant 1.0 → tx 1.5.
    // 1.0 ms + 100 ns: just after the grant → SR at 1.5 → grant 2.0 → tx 2.5.
    // 1.5 ms (an SR occasion, grant 2.0 pending for the buffer) → rides → tx 2.5.
    // 2.0 ms + 1 ns → SR 2.5 → grant 3.0 → tx 3.5.
    let cfg = UplinkGrantConfig {
        sr_period_ms: 0.5,
        grant_delay_ms: 0.5,
        ul_tx_delay_ms: 0.5,
        ..UplinkGrantConfig::default()
    };
    let arrivals = [250_250, 1_000_100, 1_500_000, 2_000_001].map(Time::from_ns);
    let out = run(&mut gate(&cfg), &arrivals);
    assert_eq!(
        release_times(&out),
        [1_500_000, 2_500_000, 2_500_000, 3_500_000].map(Time::from_ns)
    );
}

#[test]
fn grant_gate_sends_and_transmits_only_in_uplink_time() {
    // TDD DDDSU: uplink [2.0, 2.5) of every 2.5 ms. SR every 5 ms at offset 2.0, G = K = 1.
    // 0.3: SR at 2.0 → grant 3.0 → 3.0 + 1 = 4.0 is downlink → tx at 4.5.
    // 3.2: after the grant → SR at 7.0 → grant 8.0 → 9.0 is downlink → tx 9.5.
    let tdd = dddsu();
    let cfg = UplinkGrantConfig {
        sr_period_ms: 5.0,
        sr_offset_ms: 2.0,
        grant_delay_ms: 1.0,
        ul_tx_delay_ms: 1.0,
        proactive_grant_period_ms: None,
        tdd,
    };
    let out = run(&mut gate(&cfg), &[us(300), us(3200)]);
    assert_eq!(release_times(&out), [us(4500), us(9500)]);

    // SR every 0.5 ms: occasions in downlink time are skipped (no uplink control channel
    // there), so 0.3 waits for the occasion at 2.0 → grant 3.0 → tx 4.5.
    let cfg = UplinkGrantConfig {
        sr_period_ms: 0.5,
        sr_offset_ms: 0.0,
        ..cfg
    };
    let mut g = gate(&cfg);
    let out = run(&mut g, &[us(300)]);
    assert_eq!(release_times(&out), [us(4500)]);
    // One SR: the next uplink occasion, 4.5, comes after the grant at 3.0.
    assert_eq!(g.stats().srs_sent, 1);

    // An SR grid that never meets uplink time is refused, naming the offset.
    let bad = UplinkGrantConfig {
        sr_period_ms: 2.5,
        sr_offset_ms: 0.5,
        ..cfg
    };
    assert_eq!(
        UplinkGrant::<u32>::new(&bad).unwrap_err().field,
        "sr_offset_ms"
    );
}

#[test]
fn grant_gate_proactive_grants_need_no_sr() {
    // The `nr-tdd-2.5ms` preset: a grant every 2.5 ms, SR at 2.0 + 5n, G = K = 1,
    // uplink [2.0, 2.5) of every 2.5 ms.
    // 0.3: proactive grant at 2.5 comes before the SR's (SR at 2.0 → 3.0): rides 2.5;
    //      2.5 + 1 = 3.5 → tx 4.5. The SR at 2.0 was sent (pending until 2.5).
    // 2.6: the SR's grant at 3.0 is next → 4.0 → tx 4.5.
    // 3.1: proactive 5.0 before the occasion 7.0 → no SR; 6.0 → tx 7.0.
    let r = SchedulingConfig {
        preset: "nr-tdd-2.5ms".into(),
        ..SchedulingConfig::default()
    }
    .resolve()
    .unwrap();
    let mut g: UplinkGrant<u32> = r.uplink_gate();
    let out = run(&mut g, &[us(300), us(2600), us(3100)]);
    assert_eq!(release_times(&out), [us(4500), us(4500), us(7000)]);
    assert_eq!(g.stats().srs_sent, 1);
}

#[test]
fn release_times_do_not_depend_on_push_advance_order_at_one_instant() {
    // Push at exactly the grant instant, after the gate was advanced to it.
    let mut g = gate(&lte(5.0, 4.0, 0.0));
    g.push(us(300), 0, 52);
    g.advance(us(9000));
    g.push(us(9000), 1, 52);
    g.advance(us(9000));
    let out: Vec<_> = std::iter::from_fn(|| g.pop_output())
        .map(|r| r.at)
        .collect();
    assert_eq!(out, [us(9000), us(9000)]);
}

/// Gaps between consecutive releases of a steady ACK stream (one every 0.2 ms for 20 s)
/// through an uplink gate, in 0.5 ms bins (César's `LINE_MARGIN`).
fn gap_histogram(cfg: &UplinkGrantConfig) -> (Vec<u64>, usize) {
    let arrivals: Vec<Time> = (1..=100_000u64).map(|i| Time::from_us(200 * i)).collect();
    let out = run(&mut gate(cfg), &arrivals);
    let times = release_times(&out);
    let mut bins = vec![0u64; 41]; // 0–20 ms, last bin = beyond
    for w in times.windows(2) {
        let gap_us = (w[1] - w[0]).as_us();
        bins[usize::min((gap_us / 500) as usize, 40)] += 1;
    }
    (bins, times.len() - 1)
}

#[test]
fn ack_gap_histogram_peaks_at_the_sr_period() {
    for (period_ms, g_ms, k_ms) in [(5.0, 4.0, 4.0), (2.5, 4.0, 0.0), (8.0, 4.0, 4.0)] {
        let (bins, gaps) = gap_histogram(&lte(period_ms, g_ms, k_ms));
        let near_zero = bins[0] as f64 / gaps as f64;
        let (peak_ms, peak) = dominant_nonzero_bin(&bins);
        println!(
            "SR {period_ms} ms, G {g_ms} ms, K {k_ms} ms: {gaps} gaps, {:.1} % in [0, 0.5) ms, \
             dominant non-zero bin [{peak_ms}, {}) ms with {peak} gaps ({:.1} % of non-zero)",
            100.0 * near_zero,
            peak_ms + 0.5,
            100.0 * peak as f64 / (gaps as u64 - bins[0]) as f64,
        );
        assert!(
            (peak_ms - period_ms).abs() <= 0.5,
            "dominant gap {peak_ms} ms, SR period {period_ms} ms"
        );
        assert!(near_zero > 0.5, "{near_zero}");
    }
}

/// The distinct gaps between the batches the gate releases for `arrivals` (ms), with
/// how often each occurs, in increasing order of gap.
fn batch_gaps_ms(cfg: &UplinkGrantConfig, arrivals: &[Time]) -> Vec<(u64, usize)> {
    let times = release_times(&run(&mut gate(cfg), arrivals));
    let mut gaps = std::collections::BTreeMap::new();
    for w in times.windows(2).filter(|w| w[1] > w[0]) {
        *gaps.entry((w[1] - w[0]).as_us()).or_insert(0) += 1;
    }
    gaps.into_iter()
        .map(|(gap_us, n)| {
            assert_eq!(gap_us % 1000, 0, "whole-ms arrivals and timing");
            (gap_us / 1000, n)
        })
        .collect()
}

#[test]
fn an_ack_every_2_ms_locks_sr5_onto_every_other_occasion() {
    // `lte-fdd-sr5` timing (SR every 5 ms, G = 4, K = 4) and ACKs leaving a Mahimahi
    // uplink at whole milliseconds. A grant arrives at g = s + 4; the next SR occasion is
    // g + 1. Only an ACK arriving in (g, g + 1] is sent at that occasion; one arriving
    // later waits for g + 6. So the SR period shows only when an ACK arrives at least
    // every SR period − G = 1 ms.
    let cfg = UplinkGrantConfig::default();
    let every = |step_ms: u64, first_ms: u64| -> Vec<Time> {
        (0..1000u64)
            .map(|i| Time::from_ms(first_ms + step_ms * i))
            .collect()
    };

    // One ACK per ms (a receiver ACKing every 1500 B packet of a 12 Mbit/s link): one
    // batch per SR occasion.
    assert_eq!(batch_gaps_ms(&cfg, &every(1, 1)), [(5, 199)]);

    // One ACK every 2 ms (every second packet, delayed ACKs): whatever the phase, the
    // ACK after a grant at g comes at g + 2 at the latest and at g + 1 only every other
    // grant; after one 5 ms gap the stream locks onto every other occasion.
    // 1: SR 5, grant 9 (3, 5, 7, 9 ride). 11: SR 15, grant 19. 21: SR 25 ... → 10 ms.
    assert_eq!(batch_gaps_ms(&cfg, &every(2, 1)), [(10, 199)]);
    // 0: SR 0, grant 4. 6: SR 10, grant 14. 16: SR 20 ... → 10 ms.
    assert_eq!(batch_gaps_ms(&cfg, &every(2, 0)), [(10, 200)]);
    // 9: SR 10, grant 14 (11, 13 ride). 15 is an occasion itself: grant 19 (5 ms).
    // 21: SR 25, grant 29. 31: SR 35 ... → 10 ms from then on.
    let mut phase = vec![us(9000), us(11000), us(13000)];
    phase.extend(every(2, 15));
    assert_eq!(batch_gaps_ms(&cfg, &phase), [(5, 1), (10, 200)]);

    // An ACK for a single segment now and then (Linux sends some: quick ACKs, ACKs from
    // the application's reads) moves the 2 ms clock by 1 ms, and the ACK after the next
    // grant may fall in (g, g + 1]: one 5 ms gap, then 10 ms again.
    // 0: grant 4. 6: SR 10, grant 14. 16: SR 20, grant 24 (18, then 19 one ms later,
    // 21, 23 ride). 25 is an occasion: grant 29 (5 ms). 31: SR 35, grant 39 ... 10 ms.
    let mut shifted: Vec<Time> = (0..=18).step_by(2).map(Time::from_ms).collect();
    shifted.extend(every(2, 19));
    assert_eq!(batch_gaps_ms(&cfg, &shifted), [(5, 1), (10, 201)]);
}

#[test]
fn every_preset_gives_its_scheduling_unit() {
    // A steady data stream (one packet every 0.2 ms for 20 s) through the preset's
    // downlink gate, an immediate ACK per packet, and the uplink gate: the dominant
    // non-zero gap between ACK releases (0.5 ms bins) is the preset's pattern.
    let expected = [
        ("lte-fdd-sr5", 5.0),
        ("lte-fdd-sr10", 10.0),
        ("lte-fdd-sr20", 20.0),
        ("lte-fdd-sr40", 40.0),
        ("lte-fdd-sr80", 80.0),
        ("lte-sr20-burst8", 8.0),
        ("nr-fdd-sr1", 1.0),
        ("nr-tdd-2.5ms", 2.5),
        ("nr-tdd-2.5ms-sr5", 5.0),
        ("nr-tdd-5ms", 5.0),
    ];
    assert_eq!(expected.len(), PRESETS.len());
    let data: Vec<Time> = (1..=100_000u64).map(|i| Time::from_us(200 * i)).collect();
    for (name, unit_ms) in expected {
        let r = SchedulingConfig {
            preset: name.into(),
            ..SchedulingConfig::default()
        }
        .resolve()
        .unwrap();
        let at_ue = run(&mut r.downlink_gate(), &data);
        let acks = release_times(&run(&mut r.uplink_gate(), &release_times(&at_ue)));
        let mut bins = vec![0u64; 201]; // 0.5 ms bins up to 100 ms
        for w in acks.windows(2) {
            bins[usize::min(((w[1] - w[0]).as_us() / 500) as usize, 200)] += 1;
        }
        let gaps = acks.len() as u64 - 1;
        let (peak_ms, peak) = dominant_nonzero_bin(&bins);
        println!(
            "{name:>17}: {:5.1} % of ACK gaps < 0.5 ms; dominant gap [{peak_ms}, {}) ms, \
             {:.1} % of the non-zero gaps",
            100.0 * bins[0] as f64 / gaps as f64,
            peak_ms + 0.5,
            100.0 * peak as f64 / (gaps - bins[0]) as f64
        );
        assert_eq!(peak_ms, unit_ms, "{name}");
        assert!(bins[0] * 2 > gaps, "{name}: most ACKs come in batches");
    }
}

#[test]
fn downlink_gate_serves_every_k_ttis() {
    // TTI 1 ms, served at TTIs 2, 10, 18, ... (every 8, offset 2).
    // 0.0 → 2; 1.999 → 2; 2.0 → 2; 2.001 → 10; 9.5 → 10; 10.0 → 10; 17.0 → 18.
    let cfg = DownlinkGateConfig {
        tti_ms: 1.0,
        dl_every_ttis: 8,
        dl_offset_ttis: 2,
        tdd: None,
    };
    let mut d = DownlinkGate::new(&cfg).unwrap();
    let arrivals = [0, 1999, 2000, 2001, 9500, 10_000, 17_000].map(us);
    let out = run(&mut d, &arrivals);
    assert_eq!(
        release_times(&out),
        [2000, 2000, 2000, 10_000, 10_000, 10_000, 18_000].map(us)
    );
    assert_eq!(
        d.stats(),
        &BurstStats {
            packets: 7,
            ip_bytes: 7 * 52,
            bursts: 3
        }
    );
}

#[test]
fn downlink_gate_follows_the_tdd_pattern() {
    // NR, 0.5 ms slots, DDDSU: slots at 0, 0.5, 1.0, 1.5 are downlink, 2.0 is uplink.
    // 1.5 → 1.5; 1.6 → (2.0 is uplink) 2.5; 2.2 → 2.5; 4.9 → 5.0; 4.0 → 4.0.
    let tdd = dddsu();
    let cfg = DownlinkGateConfig {
        tti_ms: 0.5,
        dl_every_ttis: 1,
        dl_offset_ttis: 0,
        tdd,
    };
    let out = run(
        &mut DownlinkGate::new(&cfg).unwrap(),
        &[1500, 1600, 2200, 4000, 4900].map(us),
    );
    assert_eq!(release_times(&out), [1500, 2500, 2500, 4000, 5000].map(us));

    // Every 2 slots (1 ms) against the 2.5 ms pattern: slots starting 0, 1.0, 3.0, 4.0
    // of each 5 ms are served (2.0 is uplink).
    // 1.2 → 3.0 (2.0 skipped); 4.1 → 5.0; 6.1 → 8.0 (7.0 is uplink).
    let every2 = DownlinkGateConfig {
        dl_every_ttis: 2,
        ..cfg
    };
    let out = run(
        &mut DownlinkGate::new(&every2).unwrap(),
        &[1200, 4100, 6100].map(us),
    );
    assert_eq!(release_times(&out), [3000, 5000, 8000].map(us));
}

#[test]
fn downlink_gate_keeps_the_link_capacity() {
    // A 12 Mbit/s link (1 ms per 1500-byte packet) loaded with 2000 packets at once,
    // then a gate serving every 8 TTIs: everything comes out, each packet at most 8 ms
    // after it left the link, and the long-run rate is the link's.
    let mut link = constant_link(12.0);
    for id in 0..2000 {
        assert_eq!(
            link.enqueue(Time::ZERO, id, 1500),
            cellcc_link::EnqueueResult::Accepted
        );
    }
    let mut departures = Vec::new();
    while let Some(t) = link.next_wakeup() {
        link.advance(t);
        while let Some(d) = link.pop_departure() {
            departures.push((d.departed_at, d.ip_len));
        }
    }
    let cfg = DownlinkGateConfig {
        dl_every_ttis: 8,
        ..DownlinkGateConfig::default()
    };
    let mut d = DownlinkGate::new(&cfg).unwrap();
    let mut out = Vec::new();
    for (id, &(at, ip_len)) in departures.iter().enumerate() {
        d.advance(at);
        while let Some(r) = d.pop_output() {
            out.push(r);
        }
        d.push(at, id as u32, ip_len);
    }
    while let Some(t) = d.next_wakeup() {
        d.advance(t);
        while let Some(r) = d.pop_output() {
            out.push(r);
        }
    }
    let bytes_in: u64 = departures.iter().map(|&(_, l)| u64::from(l)).sum();
    let bytes_out: u64 = out.iter().map(|r| u64::from(r.ip_len)).sum();
    assert_eq!(out.len(), departures.len());
    assert_eq!(bytes_out, bytes_in);
    for (r, &(left_link, _)) in out.iter().zip(&departures) {
        assert!(r.at >= left_link && r.at - left_link < Dur::from_ms(8));
        assert_eq!(r.at.as_ns() % 8_000_000, 0, "a burst instant");
    }
    let last_link = departures.last().unwrap().0;
    let last_gate = out.last().unwrap().at;
    println!(
        "2000 × 1500 B: link done at {last_link}, gate done at {last_gate}, {} bursts",
        d.stats().bursts
    );
    assert_eq!(last_link, Time::from_ms(2000));
    assert_eq!(last_gate, Time::from_ms(2000));
    assert_eq!(d.stats().bursts, 250);
}

#[test]
fn both_gates_make_rtt_lines_and_ack_sets() {
    // A paced sender (one packet every 0.4 ms) over a 10 ms one-way path, a downlink
    // served every 4 TTIs and the LTE SR-5 uplink: the ACKs of a set arrive at one
    // instant, sets are whole SR periods apart (César Fig. 6: gaps at multiples of the
    // scheduling unit), and within a set the RTT falls by the send spacing, so RTT
    // samples lie on lines (César Fig. 3, Fig. 7: the last packet of a set sees the
    // shortest RTT).
    let resolved = SchedulingConfig {
        preset: "lte-fdd-sr5".into(),
        dl_every_ttis: Some(4),
        ..SchedulingConfig::default()
    }
    .resolve()
    .unwrap();
    let mut down: DownlinkGate<u32> = resolved.downlink_gate();
    let mut up: UplinkGrant<u32> = resolved.uplink_gate();
    let one_way = Dur::from_ms(10);
    let sends: Vec<Time> = (0..2500u64).map(|i| Time::from_us(400 * i)).collect();
    let at_ue = run(
        &mut down,
        &sends.iter().map(|&t| t + one_way).collect::<Vec<_>>(),
    );
    let acks = run(&mut up, &release_times(&at_ue));
    let ack_arrivals: Vec<Time> = release_times(&acks).iter().map(|&t| t + one_way).collect();
    let rtts: Vec<Dur> = ack_arrivals
        .iter()
        .zip(&sends)
        .map(|(&a, &s)| a - s)
        .collect();
    let mut sets: Vec<Time> = ack_arrivals.clone();
    sets.dedup();
    let gaps: Vec<Dur> = sets.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.iter().all(|g| g.as_ns() % 5_000_000 == 0), "{gaps:?}");
    assert_eq!(gaps.iter().min(), Some(&Dur::from_ms(5)));
    for i in 1..rtts.len() {
        if ack_arrivals[i] == ack_arrivals[i - 1] {
            assert_eq!(rtts[i - 1] - rtts[i], Dur::from_us(400));
        }
    }
    let min = rtts.iter().min().unwrap();
    let max = rtts.iter().max().unwrap();
    let mut distinct = gaps.clone();
    distinct.sort();
    distinct.dedup();
    println!(
        "{} ACKs in {} sets, set gaps {distinct:?}; RTT {min} .. {max} (propagation 20 ms)",
        rtts.len(),
        sets.len()
    );
    assert!(rtts.len() > 3 * sets.len(), "ACKs come in sets");
    // An ACK leaves at least K = 4 ms after it reached the UE.
    assert!(*min >= Dur::from_ms(20 + 4));
}

#[test]
fn configuration_errors_name_the_key() {
    let resolve = |cfg: SchedulingConfig| cfg.resolve().unwrap_err();
    let base = || SchedulingConfig {
        preset: "lte-fdd-sr5".into(),
        ..SchedulingConfig::default()
    };

    let e = resolve(SchedulingConfig {
        preset: "lte-fdd-sr7".into(),
        ..base()
    });
    assert_eq!(e.field, "preset");
    for p in PRESETS {
        assert!(e.reason.contains(p.name), "{e}");
    }
    println!("{e}");

    let cases: Vec<(SchedulingConfig, &str)> = vec![
        (
            SchedulingConfig {
                sr_period_ms: Some(-5.0),
                ..base()
            },
            "sr_period_ms",
        ),
        (
            SchedulingConfig {
                sr_period_ms: Some(0.0),
                ..base()
            },
            "sr_period_ms",
        ),
        (
            SchedulingConfig {
                sr_offset_ms: Some(5.0),
                ..base()
            },
            "sr_offset_ms",
        ),
        (
            SchedulingConfig {
                grant_delay_ms: Some(f64::NAN),
                ..base()
            },
            "grant_delay_ms",
        ),
        (
            SchedulingConfig {
                ul_tx_delay_ms: Some(-1.0),
                ..base()
            },
            "ul_tx_delay_ms",
        ),
        (
            SchedulingConfig {
                proactive_grant_period_ms: Some(-2.5),
                ..base()
            },
            "proactive_grant_period_ms",
        ),
        (
            SchedulingConfig {
                tti_ms: Some(0.0),
                ..base()
            },
            "tti_ms",
        ),
        (
            SchedulingConfig {
                dl_every_ttis: Some(0),
                ..base()
            },
            "dl_every_ttis",
        ),
        (
            SchedulingConfig {
                dl_every_ttis: Some(4),
                dl_offset_ttis: Some(4),
                ..base()
            },
            "dl_offset_ttis",
        ),
        (
            SchedulingConfig {
                tdd: Some(TddOverride {
                    period_ms: Some(2.5),
                    dl_ms: Some(3.0),
                }),
                ..base()
            },
            "tdd.dl_ms",
        ),
        (
            SchedulingConfig {
                tdd: Some(TddOverride {
                    period_ms: Some(-2.5),
                    dl_ms: Some(2.0),
                }),
                ..base()
            },
            "tdd.period_ms",
        ),
        (
            // The preset has no TDD pattern to complete a partial override from.
            SchedulingConfig {
                tdd: Some(TddOverride {
                    period_ms: None,
                    dl_ms: Some(2.0),
                }),
                ..base()
            },
            "tdd.period_ms",
        ),
    ];
    for (cfg, field) in cases {
        let e = resolve(cfg);
        assert_eq!(e.field, field, "{e}");
        assert!(e.to_string().starts_with(&format!("`{field}`")), "{e}");
    }
}

#[test]
fn presets_carry_their_advertised_parameters() {
    let get = |name: &str| {
        SchedulingConfig {
            preset: name.into(),
            ..SchedulingConfig::default()
        }
        .resolve()
        .unwrap()
    };
    let lte = get("lte-fdd-sr20");
    assert_eq!(lte.uplink.sr_period_ms, 20.0);
    assert_eq!(
        (lte.uplink.grant_delay_ms, lte.uplink.ul_tx_delay_ms),
        (4.0, 4.0)
    );
    assert_eq!((lte.downlink.tti_ms, lte.downlink.dl_every_ttis), (1.0, 1));
    let burst = get("lte-sr20-burst8");
    assert_eq!(
        (burst.uplink.sr_period_ms, burst.downlink.dl_every_ttis),
        (20.0, 8)
    );
    assert_eq!(burst.uplink.proactive_grant_period_ms, Some(8.0));
    let nr = get("nr-tdd-2.5ms");
    assert_eq!(nr.downlink.tti_ms, 0.5);
    assert_eq!(nr.downlink.tdd, dddsu());
    assert_eq!(nr.uplink.proactive_grant_period_ms, Some(2.5));
    assert_eq!(
        get("nr-tdd-2.5ms-sr5").uplink.proactive_grant_period_ms,
        None
    );
    // Overrides win, and 0 removes proactive grants.
    let custom = SchedulingConfig {
        preset: "nr-tdd-2.5ms".into(),
        proactive_grant_period_ms: Some(0.0),
        sr_period_ms: Some(2.5),
        ..SchedulingConfig::default()
    }
    .resolve()
    .unwrap();
    assert_eq!(custom.uplink.proactive_grant_period_ms, None);
    assert_eq!(custom.uplink.sr_period_ms, 2.5);
    assert_eq!(custom.expanded().preset, "nr-tdd-2.5ms");
}
