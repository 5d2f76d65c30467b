//! Tests of the background sources and their distributions.

use super::*;
use rand_core::SeedableRng;

fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

fn rel_err(measured: f64, expected: f64) -> f64 {
    (measured - expected).abs() / expected
}

#[test]
fn cbr_spacing_is_exact_and_does_not_drift() {
    // 1500 bytes at 12 Mbit/s: one packet per millisecond exactly.
    let mut s = UdpSource::cbr(&CbrConfig {
        rate_mbps: 12.0,
        packet_bytes: 1500,
        start_s: 0.0,
        stop_s: None,
    })
    .unwrap();
    let first: Vec<Time> = s.by_ref().take(4).collect();
    assert_eq!(first, (0..4).map(Time::from_ms).collect::<Vec<_>>());
    // 1000 bytes at 3 Mbit/s = 8/3 ms: packet 3000 is at exactly 8 s.
    let mut s = UdpSource::cbr(&CbrConfig {
        rate_mbps: 3.0,
        packet_bytes: 1000,
        start_s: 0.0,
        stop_s: None,
    })
    .unwrap();
    assert_eq!(s.next_send(), Some(Time::ZERO));
    assert_eq!(s.next_send(), Some(Time(2_666_667)));
    assert_eq!(s.nth(2998), Some(Time::from_secs(8)));
}

#[test]
fn start_and_stop_are_honoured() {
    let config = CbrConfig {
        rate_mbps: 12.0,
        packet_bytes: 1500,
        start_s: 1.0,
        stop_s: Some(2.0),
    };
    let times: Vec<Time> = UdpSource::cbr(&config).unwrap().collect();
    assert_eq!(times.len(), 1000);
    assert_eq!(times[0], Time::from_secs(1));
    assert_eq!(times[999], Time::from_ms(1999));
    let flows: Vec<ShortFlow> = ShortFlowArrivals::new(
        &ShortFlowsConfig {
            rate_per_s: Some(100.0),
            load: None,
            capacity_mbps: None,
            interarrival_s: None,
            size: Distribution::Constant { value: 10_000.0 },
            start_s: 20.0,
            stop_s: Some(30.0),
        },
        rng(5),
    )
    .unwrap()
    .collect();
    assert!(flows.first().unwrap().start > Time::from_secs(20));
    assert!(flows.last().unwrap().start < Time::from_secs(30));
    assert!(flows.windows(2).all(|w| w[0].start <= w[1].start));
    // About 100 flows per second for 10 s (Poisson: sd ≈ 32).
    assert!((900..1100).contains(&flows.len()), "{}", flows.len());
    assert!(flows.iter().all(|f| f.bytes == 10_000));
}

#[test]
fn on_off_with_constant_periods_is_exact() {
    let config = OnOffConfig {
        rate_mbps: 12.0,
        packet_bytes: 1500,
        on_s: Distribution::Constant { value: 0.1 },
        off_s: Distribution::Constant { value: 0.3 },
        start_s: 0.5,
        stop_s: Some(1.3),
    };
    assert_eq!(config.duty_cycle(), 0.25);
    let times: Vec<u64> = UdpSource::on_off(&config, rng(1))
        .unwrap()
        .map(|t| t.as_ms())
        .collect();
    // On [500, 600) and [900, 1000); the third on period starts at 1300 = stop.
    let expected: Vec<u64> = (500..600).chain(900..1000).collect();
    assert_eq!(times, expected);
}

#[test]
fn on_off_duty_cycle_matches_over_a_long_run() {
    // On ~ Exp(0.5 s), off ~ Exp(1.5 s): duty cycle 0.25. 8 Mbit/s with 10 000-byte
    // packets is 100 packets/s while on. 10 000 on/off cycles: sd of the measured
    // duty cycle ≈ 1 %.
    let config = OnOffConfig {
        rate_mbps: 8.0,
        packet_bytes: 10_000,
        on_s: Distribution::Exponential { mean: 0.5 },
        off_s: Distribution::Exponential { mean: 1.5 },
        start_s: 0.0,
        stop_s: Some(20_000.0),
    };
    let sent = UdpSource::on_off(&config, rng(11)).unwrap().count() as f64;
    let expected = 100.0 * 20_000.0 * config.duty_cycle();
    println!("on/off: {sent} packets, expected {expected}");
    assert!(rel_err(sent, expected) < 0.04, "{sent} vs {expected}");
}

#[test]
fn loaded_cell_arrivals_offer_the_requested_load() {
    // The LTE study's loaded cell: 50 % of 20 Mbit/s in flows of mean 50 kB:
    // λ = 0.5·2.5e6/5e4 = 25 flows/s.
    let config = ShortFlowsConfig {
        rate_per_s: None,
        load: Some(0.5),
        capacity_mbps: Some(20.0),
        interarrival_s: None,
        size: Distribution::Exponential { mean: 50_000.0 },
        start_s: 0.0,
        stop_s: Some(4000.0),
    };
    let arrivals = ShortFlowArrivals::new(&config, rng(2)).unwrap();
    assert!(rel_err(arrivals.rate_per_s(), 25.0) < 1e-12);
    let flows: Vec<ShortFlow> = arrivals.collect();
    let n = flows.len() as f64;
    let bytes: u64 = flows.iter().map(|f| f.bytes).sum();
    let load = bytes as f64 * 8.0 / 4000.0 / 20e6;
    let mean_gap = flows.last().unwrap().start.as_secs_f64() / n;
    println!("short flows: {n} flows, mean gap {mean_gap:.5} s, offered load {load:.4}");
    assert!(rel_err(n, 100_000.0) < 0.02, "{n} flows");
    assert!(rel_err(mean_gap, 0.04) < 0.02, "mean gap {mean_gap}");
    assert!(rel_err(load, 0.5) < 0.03, "load {load}");
    // Uniform gaps, as the study drew them.
    let uniform = ShortFlowsConfig {
        load: None,
        capacity_mbps: None,
        interarrival_s: Some(Distribution::Uniform { min: 0.0, max: 0.2 }),
        ..config
    };
    let flows: Vec<ShortFlow> = ShortFlowArrivals::new(&uniform, rng(2)).unwrap().collect();
    assert!(
        rel_err(flows.len() as f64, 40_000.0) < 0.02,
        "{}",
        flows.len()
    );
}

#[test]
fn same_seed_same_traffic_other_seed_other_traffic() {
    let config = ShortFlowsConfig {
        rate_per_s: Some(10.0),
        load: None,
        capacity_mbps: None,
        interarrival_s: None,
        size: Distribution::Lognormal {
            mu: 9.0,
            sigma: 1.5,
        },
        start_s: 0.0,
        stop_s: Some(100.0),
    };
    let run = |seed| -> Vec<ShortFlow> {
        ShortFlowArrivals::new(&config, rng(seed))
            .unwrap()
            .collect()
    };
    assert_eq!(run(1), run(1));
    assert_ne!(run(1), run(2));
    let on_off = OnOffConfig {
        rate_mbps: 5.0,
        packet_bytes: 1200,
        on_s: Distribution::Pareto {
            shape: 1.5,
            min: 0.01,
        },
        off_s: Distribution::Exponential { mean: 0.2 },
        start_s: 0.0,
        stop_s: Some(30.0),
    };
    let times = |seed| -> Vec<Time> { UdpSource::on_off(&on_off, rng(seed)).unwrap().collect() };
    assert_eq!(times(4), times(4));
    assert_ne!(times(4), times(5));
}

#[test]
fn validation_names_the_field() {
    let field = |r: Result<(), TrafficConfigError>| r.unwrap_err().field;
    assert_eq!(
        field(
            Distribution::Pareto {
                shape: 0.0,
                min: 1.0
            }
            .validate("size")
        ),
        "size.shape"
    );
    assert_eq!(
        field(Distribution::Uniform { min: 5.0, max: 1.0 }.validate("on_s")),
        "on_s.max"
    );
    assert_eq!(
        field(
            Distribution::Empirical {
                cdf: vec![(1.0, 0.5), (2.0, 0.9)]
            }
            .validate("size")
        ),
        "size.cdf[1]"
    );
    assert_eq!(
        field(
            Distribution::Empirical {
                cdf: vec![(3.0, 0.5), (2.0, 1.0)]
            }
            .validate("size")
        ),
        "size.cdf[1]"
    );
    let cbr = CbrConfig {
        rate_mbps: 0.0,
        packet_bytes: 1500,
        start_s: 0.0,
        stop_s: None,
    };
    assert_eq!(field(cbr.validate()), "rate_mbps");
    let late = CbrConfig {
        rate_mbps: 1.0,
        start_s: 5.0,
        stop_s: Some(5.0),
        ..cbr
    };
    assert_eq!(field(late.validate()), "stop_s");
    let flows = ShortFlowsConfig {
        rate_per_s: Some(1.0),
        load: Some(0.5),
        capacity_mbps: Some(10.0),
        interarrival_s: None,
        size: Distribution::Exponential { mean: 1000.0 },
        start_s: 0.0,
        stop_s: None,
    };
    assert_eq!(field(flows.validate()), "rate_per_s");
    let heavy = ShortFlowsConfig {
        rate_per_s: None,
        size: Distribution::Pareto {
            shape: 1.0,
            min: 1000.0,
        },
        ..flows.clone()
    };
    let err = heavy.validate().unwrap_err();
    assert_eq!(err.field, "size");
    assert!(err.to_string().contains("finite, positive mean"), "{err}");
    let no_capacity = ShortFlowsConfig {
        rate_per_s: None,
        capacity_mbps: None,
        ..flows
    };
    assert_eq!(field(no_capacity.validate()), "capacity_mbps");
}

/// The spellings proposed in docs/cell.md parse, and unknown keys are refused.
#[test]
fn scenario_spellings_parse() {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Background {
        #[allow(dead_code)]
        ue: usize,
        source: BackgroundSource,
    }
    #[derive(Deserialize)]
    struct Doc {
        cell: cellcc_link::CellConfig,
        background: Vec<Background>,
    }
    // The example of docs/cell.md, verbatim.
    let text = r#"
        [cell]
        scheduler = "pf"            # "rr" | "pf" (default) | "max-throughput"
        tti_ms = 1.0                # 1 (LTE, default) or 0.5 (NR at 30 kHz); 0.0625..=1000
        pf_tc_ttis = 100            # PF averaging time constant t_c, TTIs (>= 1)

        [[cell.ues]]                # UE 0: the phone under test
        trace = "traces/TMobile-LTE-short.down"
        queue = { kind = "droptail", packets = 750 }   # the LTE study's RLC buffer

        [[cell.ues]]                # UE 1: same trace, independent phase
        trace = "traces/TMobile-LTE-short.down"
        offset_ms = 35000
        mode = "loop"               # or "once"

        [[cell.ues]]                # UE 2: a constant channel
        rate_mbps = 20.0

        [[background]]              # capacity step: background starts at 20 s (Fig. 5 right)
        ue = 1
        source = { kind = "cbr", rate_mbps = 10.0, packet_bytes = 1500, start_s = 20.0 }

        [[background]]              # the LTE study's loaded cell: 50 % load of short TCP flows
        ue = 2
        [background.source]
        kind = "short_flows"
        load = 0.5
        capacity_mbps = 20.0
        size = { kind = "exponential", mean = 50000 }
        stop_s = 20.0               # background stops at 20 s (Fig. 5 left)

        [[background]]
        ue = 1
        [background.source]
        kind = "onoff"
        rate_mbps = 5.0
        on_s = { kind = "exponential", mean = 0.5 }
        off_s = { kind = "constant", value = 1.0 }
    "#;
    let doc: Doc = toml::from_str(text).unwrap();
    doc.cell.validate().unwrap();
    assert_eq!(
        doc.cell.scheduler,
        cellcc_link::SchedulerKind::ProportionalFair
    );
    assert_eq!(doc.cell.ues.len(), 3);
    assert_eq!(doc.cell.ues[1].offset_ms, 35_000);
    assert_eq!(doc.cell.tti().unwrap(), cellcc_units::Dur::from_ms(1));
    for b in &doc.background {
        b.source.validate().unwrap();
    }
    assert!(matches!(
        &doc.background[0].source,
        BackgroundSource::Cbr(CbrConfig {
            packet_bytes: 1500,
            stop_s: None,
            ..
        })
    ));
    assert!(matches!(
        &doc.background[1].source,
        BackgroundSource::ShortFlows(_)
    ));
    assert!(matches!(
        &doc.background[2].source,
        BackgroundSource::OnOff(_)
    ));
    let table = "kind = \"empirical\"\ncdf = [[1000, 0.5], [35900, 0.9], [1e6, 1]]\n";
    let empirical: Distribution = toml::from_str(table).unwrap();
    empirical.validate("size").unwrap();
    assert_eq!(
        empirical,
        Distribution::Empirical {
            cdf: vec![(1000.0, 0.5), (35_900.0, 0.9), (1e6, 1.0)]
        }
    );
    let typo = "kind = \"cbr\"\nrate_mbps = 1.0\nrate_mpbs = 2.0\n";
    let err = toml::from_str::<BackgroundSource>(typo).unwrap_err();
    assert!(err.to_string().contains("rate_mpbs"), "{err}");
    let scheduler = "scheduler = \"fair\"\n[[ues]]\nrate_mbps = 1.0\n";
    let err = toml::from_str::<cellcc_link::CellConfig>(scheduler).unwrap_err();
    assert!(err.to_string().contains("max-throughput"), "{err}");
}
