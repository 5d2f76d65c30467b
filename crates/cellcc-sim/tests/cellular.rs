//! Cellular path models driven end to end by TCP: scheduling delays (César §II-A,
//! Fig. 3 and 6), outages, bursty loss, HARQ delay and jitter, as a scenario selects
//! them.

use std::collections::BTreeMap;

use cellcc_sim::SimOutput;

mod common;
use common::parse_error;

/// Runs `text` (see [`common::simulate`]) and checks that every packet is accounted for.
fn simulate(name: &str, text: &str) -> SimOutput {
    let out = common::simulate(name, text);
    common::conserved(name, &out);
    out
}

/// A 96 Mbit/s downlink, 10 ms each way (BDP = 160 packets), a fixed cwnd of 30
/// packets paced at 24 Mbit/s (well below the BDP, and spread over the RTT as in César
/// Fig. 3, where cwnd is fixed to use 100 of 550 Mbit/s), every ACK logged, and the
/// given `[scheduling]` table.
fn scheduled(scheduling: &str) -> String {
    format!(
        "duration_s = 20\n[downlink]\nrate_mbps = 96\ndelay_ms = 10\n\
         [uplink]\nrate_mbps = 24\ndelay_ms = 10\n[scheduling]\n{scheduling}\n\
         [[flows]]\nscheme = \"fixed\"\nparams = {{ cwnd = 30, pacing_mbps = 24 }}\n\
         [metrics]\nack_log = true\n"
    )
}

/// ACK inter-arrival gaps (ms) at the sender of flow 0, after the first second.
fn ack_gaps_ms(out: &SimOutput) -> Vec<f64> {
    let log = out.ack_log.as_ref().expect("ack_log = true");
    let t: Vec<f64> = log
        .iter()
        .filter(|a| a.flow == 0 && a.t.as_secs_f64() >= 1.0)
        .map(|a| a.t.as_secs_f64() * 1e3)
        .collect();
    t.windows(2).map(|w| w[1] - w[0]).collect()
}

/// The centre of the most populated 0.25 ms bin among gaps of at least 0.5 ms.
fn dominant_nonzero_gap_ms(gaps: &[f64]) -> f64 {
    let mut bins: BTreeMap<u64, usize> = BTreeMap::new();
    for &g in gaps.iter().filter(|&&g| g >= 0.5) {
        *bins.entry((g / 0.25) as u64).or_default() += 1;
    }
    let (bin, _) = bins
        .iter()
        .max_by_key(|&(b, n)| (*n, std::cmp::Reverse(*b)))
        .unwrap();
    (*bin as f64 + 0.5) * 0.25
}

/// RTT samples (ms, rounded to 0.05 ms) and how many fall on each value.
fn rtt_lines(out: &SimOutput) -> Vec<(i64, usize)> {
    let mut lines: BTreeMap<i64, usize> = BTreeMap::new();
    for a in out.ack_log.as_ref().unwrap() {
        if let Some(r) = a.rtt {
            if a.t.as_secs_f64() >= 1.0 {
                *lines
                    .entry((r.as_ns() as f64 / 50_000.0).round() as i64)
                    .or_default() += 1;
            }
        }
    }
    let mut v: Vec<(i64, usize)> = lines.into_iter().collect();
    v.sort_by_key(|&(_, n)| std::cmp::Reverse(n));
    v
}

#[test]
fn uplink_grants_shape_the_ack_clock_and_rtt_lines() {
    for (label, table, period) in [
        ("SR 5 ms", "preset = \"lte-fdd-sr5\"", 5.0),
        (
            "SR 2.5 ms",
            "preset = \"lte-fdd-sr5\"\nsr_period_ms = 2.5",
            2.5,
        ),
        ("SR 8 ms", "preset = \"lte-fdd-sr5\"\nsr_period_ms = 8", 8.0),
    ] {
        let out = simulate(label, &scheduled(table));
        let gaps = ack_gaps_ms(&out);
        let near_zero = gaps.iter().filter(|&&g| g < 0.5).count() as f64 / gaps.len() as f64;
        let peak = dominant_nonzero_gap_ms(&gaps);
        let lines = rtt_lines(&out);
        let samples: usize = lines.iter().map(|&(_, n)| n).sum();
        let top: usize = lines.iter().take(20).map(|&(_, n)| n).sum();
        println!(
            "{label}: {} ACK gaps, {:.0} % below 0.5 ms, dominant non-zero gap {peak:.3} ms; \
             RTT samples {samples} on {} distinct values (0.05 ms), the top 20 hold {:.1} %",
            gaps.len(),
            near_zero * 100.0,
            lines.len(),
            100.0 * top as f64 / samples as f64
        );
        assert!((peak - period).abs() <= 0.5, "{label}: peak {peak} ms");
        assert!(
            near_zero > 0.5,
            "{label}: ACKs of one grant arrive together"
        );
        assert!(
            top as f64 >= 0.95 * samples as f64,
            "{label}: RTT samples fall on a few discrete lines: {lines:?}"
        );
    }
    // Without scheduling the ACK clock is the pacing (one ACK per two 0.5 ms packets at
    // 24 Mbit/s), not a grant period.
    let plain = scheduled("preset = \"lte-fdd-sr5\"")
        .replace("[scheduling]\npreset = \"lte-fdd-sr5\"\n", "");
    let out = simulate("no scheduling", &plain);
    let gaps = ack_gaps_ms(&out);
    let peak = dominant_nonzero_gap_ms(&gaps);
    println!("no scheduling: dominant gap {peak:.3} ms");
    assert!(peak < 1.5, "{peak}");
}

fn outage_run(kind: &str) -> SimOutput {
    simulate(
        kind,
        &format!(
            "duration_s = 12\n[downlink]\nrate_mbps = 12\ndelay_ms = 10\n\
             outages = [{{ start_s = 4, duration_s = 2, kind = \"{kind}\" }}]\n\
             [uplink]\nrate_mbps = 12\ndelay_ms = 10\n\
             [[flows]]\nscheme = \"fixed\"\nparams = {{ cwnd = 10, pacing_mbps = 6 }}\n\
             [metrics]\nbin_ms = 100\n"
        ),
    )
}

#[test]
fn a_stall_buffers_and_a_drop_outage_loses() {
    let stall = outage_run("stall");
    let drop = outage_run("drop");
    let delivered = |out: &SimOutput, from: f64, to: f64| -> f64 {
        let ts = &out.timeseries;
        (0..ts.len())
            .filter(|&i| ts.flow[i] == 0 && ts.t_s[i] >= from && ts.t_s[i] < to)
            .map(|i| ts.throughput_mbps[i].unwrap_or(0.0))
            .sum::<f64>()
    };
    for (label, out) in [("stall", &stall), ("drop", &drop)] {
        println!(
            "{label}: delivered during the outage {:.3}, drops {}, retransmits {}",
            delivered(out, 4.0, 6.0),
            out.summary[0].drops,
            out.summary[0].retransmits
        );
        assert_eq!(
            delivered(out, 4.0, 6.0),
            0.0,
            "{label}: nothing crosses an outage"
        );
    }
    let max_bin_qdelay = |out: &SimOutput| -> f64 {
        let ts = &out.timeseries;
        (0..ts.len())
            .filter(|&i| ts.flow[i] == 0)
            .filter_map(|i| ts.qdelay_ms[i])
            .fold(0.0, f64::max)
    };
    // Stall: what was sent during the outage waited and got through: no loss at all
    // (the RTO still fires during 2 s of silence and resends the head spuriously).
    assert_eq!(stall.summary[0].drops, 0);
    // The packets that waited out the stall leave in the first bin after it, their
    // 2 s wait pulling that bin's mean queueing delay far above the drop run's.
    assert!(max_bin_qdelay(&stall) > 300.0, "{}", max_bin_qdelay(&stall));
    // Drop: the packets in the link and those sent into it were lost and resent.
    assert!(drop.summary[0].drops >= 10, "{}", drop.summary[0].drops);
    assert!(drop.summary[0].retransmits > 0);
    assert!(max_bin_qdelay(&drop) < 100.0, "{}", max_bin_qdelay(&drop));
}

#[test]
fn impairments_are_selectable_and_deterministic() {
    let base = "duration_s = 20\nseed = 3\n[downlink]\nrate_mbps = 12\ndelay_ms = 10\n\
        queue = { kind = \"droptail\", packets = 100 }\n[uplink]\nrate_mbps = 12\ndelay_ms = 10\n\
        [[flows]]\nscheme = \"cubic\"\n";
    let with = |extra: &str| base.replace("[uplink]", &format!("{extra}\n[uplink]"));
    let plain = simulate("plain", base);
    let harq = simulate(
        "harq",
        &with("harq = { bler = 0.3, max_retx = 3, rtt_ms = 8 }"),
    );
    let jitter = simulate(
        "jitter",
        &with("jitter = { dist = \"exponential\", mean_ms = 5 }"),
    );
    let ge = simulate(
        "ge",
        &with("loss = { model = \"gilbert-elliott\", p = 0.001, r = 0.3, loss_bad = 0.5 }"),
    );
    let owd = |o: &SimOutput| o.summary[0].owd_mean_ms.unwrap();
    let min_owd = |o: &SimOutput| o.summary[0].owd_p50_ms.unwrap();
    println!(
        "mean one-way delay: plain {:.1}, HARQ {:.1}, jitter {:.1} ms; GE random drops {}",
        owd(&plain),
        owd(&harq),
        owd(&jitter),
        ge.summary[0].drops
    );
    assert!(min_owd(&harq) > 0.0 && owd(&harq) != owd(&plain));
    assert!(owd(&jitter) != owd(&plain));
    assert!(ge.summary[0].retransmits > plain.summary[0].retransmits);
    let again = simulate(
        "ge",
        &with("loss = { model = \"gilbert-elliott\", p = 0.001, r = 0.3, loss_bad = 0.5 }"),
    );
    assert_eq!(format!("{:?}", ge.summary), format!("{:?}", again.summary));
}

#[test]
fn bad_model_parameters_name_their_key() {
    let base = "duration_s = 10\n[downlink]\nrate_mbps = 12\n[[flows]]\nscheme = \"cubic\"\n";
    let cases = [
        (base.replace("rate_mbps = 12", "rate_mbps = 12\nharq = { bler = 1.5 }"), "downlink.harq.bler"),
        (base.replace("rate_mbps = 12", "rate_mbps = 12\noutages = [{ start_s = 1, duration_s = -2, kind = \"stall\" }]"), "downlink.outages[0].duration_s"),
        (format!("{base}[scheduling]\npreset = \"lte-fdd-sr7\"\n"), "scheduling.preset"),
        (format!("{base}[scheduling]\npreset = \"nr-tdd-5ms\"\ntdd = {{ period_ms = 5, dl_ms = 6 }}\n"), "scheduling.tdd"),
        (base.replace("rate_mbps = 12", "rate_mbps = 12\nloss = { model = \"gilbert-elliott\", p = 2, r = 0.1 }"), "downlink.loss.p"),
    ];
    for (text, key) in cases {
        let err = parse_error(&text);
        println!("{err}");
        assert!(
            err.starts_with(&format!("x.toml: {key}")),
            "want {key}: {err}"
        );
    }
}
