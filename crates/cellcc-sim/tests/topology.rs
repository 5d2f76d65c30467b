//! Paths beyond the single Mahimahi bottleneck: a shared wired bottleneck before the
//! base station, cellular stages after the radio, several UEs.

use cellcc_sim::{run, Scenario, SimOutput};

mod common;
use common::{conserved, parse_error, simulate};

#[test]
fn a_wired_bottleneck_before_the_base_station_limits_and_drops() {
    // C2TCP §VIII-A friendliness topology: 24 Mbit/s switch, 40 ms RTT, 1-BDP buffer
    // (24e6 × 0.04 / 8 / 1500 = 80 packets); the radio behind it is faster.
    let text =
        "duration_s = 30\n[wired]\nrate_mbps = 24\nqueue = { kind = \"droptail\", packets = 80 }\n\
        [downlink]\nrate_mbps = 100\ndelay_ms = 20\n[uplink]\nrate_mbps = 100\ndelay_ms = 20\n\
        [[flows]]\nscheme = \"cubic\"\n[[flows]]\nscheme = \"cubic\"\nstart_s = 5\n";
    let out = simulate("wired", text);
    conserved("wired", &out);
    let all = out.summary.last().unwrap();
    println!(
        "wired 24 Mbit/s: delivered {:.2} Mbit/s, drops {}, radio queue p95 {:?} ms",
        out.link.delivered_mbps, all.drops, all.qdelay_p95_ms
    );
    assert!(out.link.delivered_mbps <= 24.0 * 1.001);
    assert!(out.link.delivered_mbps > 20.0, "Cubic fills the switch");
    assert!(all.drops > 0, "the 1-BDP switch buffer overflows");
    // The radio at 100 Mbit/s never queues more than a few packets behind a 24 Mbit/s
    // feed.
    assert!(all.qdelay_p95_ms.unwrap() < 1.0);
}

#[test]
fn flows_name_existing_ues() {
    let text =
        "duration_s = 10\n[downlink]\nrate_mbps = 10\n[[flows]]\nscheme = \"cubic\"\nue = 2\n";
    let err = parse_error(text);
    assert!(
        err.starts_with("x.toml: flows[0].ue: UE 2 does not exist"),
        "{err}"
    );
    let text = "duration_s = 10\n[wired]\nrate_mbps = 0\n[downlink]\nrate_mbps = 10\n[[flows]]\nscheme = \"cubic\"\n";
    let err = parse_error(text);
    assert!(
        err.starts_with("x.toml: wired.rate_mbps: must be a positive number"),
        "{err}"
    );
}

#[test]
fn aqm_queues_are_selectable_and_report_their_drops() {
    // C2TCP §IV-B's baseline: CUBIC over CoDel; and PIE, each with its own drops.
    for queue in [
        "{ kind = \"codel\", target_ms = 5, interval_ms = 100 }",
        "{ kind = \"codel\", target_ms = 5, interval_ms = 100, variant = \"mahimahi\" }",
        "{ kind = \"pie\", qdelay_ref_ms = 15 }",
        "{ kind = \"pie\", qdelay_ref_ms = 15, variant = \"mahimahi\" }",
    ] {
        let text = format!(
            "duration_s = 30\n[downlink]\nrate_mbps = 12\ndelay_ms = 10\nqueue = {queue}\n\
             [uplink]\nrate_mbps = 12\ndelay_ms = 10\n[[flows]]\nscheme = \"cubic\"\n"
        );
        let out = simulate("aqm", &text);
        conserved(queue, &out);
        let row = &out.summary[0];
        println!(
            "{queue}: utilisation {:.3}, mean queueing delay {:.1} ms, drops {}",
            row.utilisation.unwrap(),
            row.qdelay_mean_ms.unwrap(),
            row.drops
        );
        assert!(row.drops > 0);
        assert!(
            row.qdelay_mean_ms.unwrap() < 60.0,
            "the AQM keeps the queue short"
        );
        assert!(row.utilisation.unwrap() > 0.8);
    }
    let bad = "duration_s = 10\n[downlink]\nrate_mbps = 12\nqueue = { kind = \"codel\", interval_ms = 0 }\n\
        [[flows]]\nscheme = \"cubic\"\n";
    let err = parse_error(bad);
    assert!(
        err.starts_with("x.toml: downlink.queue.interval_ms: codel: interval_ms"),
        "{err}"
    );
}

/// Mean throughput (Mbit/s) of `flow` over bins starting in `[from_s, to_s)`.
fn mean_tput(out: &SimOutput, flow: i64, from_s: f64, to_s: f64) -> f64 {
    let ts = &out.timeseries;
    let v: Vec<f64> = (0..ts.len())
        .filter(|&i| ts.flow[i] == flow && ts.t_s[i] >= from_s && ts.t_s[i] < to_s)
        .map(|i| ts.throughput_mbps[i].unwrap_or(0.0))
        .collect();
    v.iter().sum::<f64>() / v.len() as f64
}

const CELL: &str = "[cell]\nscheduler = \"pf\"\n\
    [[cell.ues]]\nrate_mbps = 24\nqueue = { kind = \"droptail\", packets = 400 }\n\
    [[cell.ues]]\nrate_mbps = 24\nqueue = { kind = \"droptail\", packets = 400 }\n\
    [[cell.ues]]\nrate_mbps = 24\nqueue = { kind = \"droptail\", packets = 400 }\n\
    [[cell.ues]]\nrate_mbps = 24\nqueue = { kind = \"droptail\", packets = 400 }\n";

#[test]
fn a_shared_cell_splits_capacity_among_its_ues() {
    let mut text = format!(
        "duration_s = 30\n{CELL}[downlink]\ndelay_ms = 10\n[uplink]\nrate_mbps = 50\ndelay_ms = 10\n"
    );
    for ue in 0..4 {
        text += &format!("[[flows]]\nscheme = \"cubic\"\nue = {ue}\n");
    }
    let out = simulate("cell4", &text);
    conserved("cell4", &out);
    let x: Vec<f64> = out.summary[..4].iter().map(|r| r.throughput_mbps).collect();
    let jain = x.iter().sum::<f64>().powi(2) / (4.0 * x.iter().map(|v| v * v).sum::<f64>());
    println!("PF cell, 4 Cubic flows on 24 Mbit/s channels: {x:.2?} Mbit/s, Jain {jain:.4}");
    assert!(jain >= 0.98, "{jain}");
    // One TTI serves one UE: together they share one UE's worth of channel.
    let total: f64 = x.iter().sum();
    assert!(total > 20.0 && total <= 24.0 * 1.001, "{total}");
}

#[test]
fn background_traffic_steps_capacity_down_and_up() {
    // LTE study Fig. 5: a 12 Mbit/s UDP source on another UE starts at 10 s and stops
    // at 20 s; it takes half of the round-robin cell's TTIs meanwhile.
    let text = "duration_s = 30\n[cell]\nscheduler = \"rr\"\n\
        [[cell.ues]]\nrate_mbps = 24\nqueue = { kind = \"droptail\", packets = 200 }\n\
        [[cell.ues]]\nrate_mbps = 24\nqueue = { kind = \"droptail\", packets = 100 }\n\
        [downlink]\ndelay_ms = 10\n[uplink]\nrate_mbps = 50\ndelay_ms = 10\n\
        [[flows]]\nscheme = \"cubic\"\n\
        [[background]]\nue = 1\nsource = { kind = \"cbr\", rate_mbps = 12, packet_bytes = 1500, start_s = 10, stop_s = 20 }\n";
    let out = simulate("step", text);
    conserved("step", &out);
    let before = mean_tput(&out, 0, 5.0, 10.0);
    let during = mean_tput(&out, 0, 12.0, 20.0);
    let after = mean_tput(&out, 0, 23.0, 30.0);
    let bg = out
        .summary
        .iter()
        .find(|r| r.flow == -2)
        .expect("background row");
    println!(
        "capacity step: {before:.2} → {during:.2} → {after:.2} Mbit/s; background {:.2} Mbit/s over the run",
        bg.throughput_mbps
    );
    assert!(before > 20.0 && after > 20.0);
    assert!((during - 12.0).abs() < 1.5, "{during}");
    // 12 Mbit/s for 10 of 30 s, less the 52-byte headers.
    assert!(
        (bg.throughput_mbps - 4.0 * 1448.0 / 1500.0).abs() < 0.2,
        "{}",
        bg.throughput_mbps
    );
    assert_eq!(out.summary.iter().filter(|r| r.flow >= 0).count(), 1);
}

#[test]
fn short_flows_load_a_cell_and_are_recorded() {
    // The LTE study's loaded cell: short TCP flows at 50 % of a 24 Mbit/s UE channel.
    let text = format!(
        "duration_s = 30\n{CELL}[downlink]\ndelay_ms = 10\n[uplink]\nrate_mbps = 50\ndelay_ms = 10\n\
         [[flows]]\nscheme = \"cubic\"\n\
         [[background]]\nue = 1\nscheme = \"cubic\"\n[background.source]\nkind = \"short_flows\"\n\
         load = 0.5\ncapacity_mbps = 24\nsize = {{ kind = \"exponential\", mean = 50000 }}\n"
    );
    let out = simulate("short", &text);
    conserved("short", &out);
    let n = out.short_flows.len();
    let done = out
        .short_flows
        .iter()
        .filter(|f| f.completed.is_some())
        .count();
    let offered: u64 = out.short_flows.iter().map(|f| f.bytes).sum();
    let bg = out.summary.iter().find(|r| r.flow == -2).unwrap();
    println!(
        "short flows: {n} started, {done} completed, offered {:.2} Mbit/s, carried {:.2} Mbit/s; main flow {:.2} Mbit/s",
        offered as f64 * 8.0 / 30e6,
        bg.throughput_mbps,
        out.summary[0].throughput_mbps
    );
    // λ = 0.5 × 24e6 / 8 / 50 kB = 30 flows/s.
    assert!((800..=1000).contains(&n), "{n}");
    // Every flow that started more than 10 s before the end has finished.
    let early = out
        .short_flows
        .iter()
        .filter(|f| f.start.as_secs_f64() < 20.0);
    for f in early.clone().filter(|f| f.completed.is_none()).take(5) {
        println!("unfinished: {f:?}");
    }
    assert!(early.clone().all(|f| f.completed.is_some()));
    assert!(early.count() > 500);
    assert!(out.summary[0].throughput_mbps > 5.0);
    let again = simulate("short", &text);
    assert_eq!(out.short_flows, again.short_flows);
}

#[test]
fn cell_scenarios_reject_per_link_keys() {
    for (bad, start) in [
        (
            format!(
                "duration_s = 10\n{CELL}[downlink]\nrate_mbps = 10\n[[flows]]\nscheme = \"cubic\"\n"
            ),
            "x.toml: downlink.rate_mbps: with [cell]",
        ),
        (
            format!(
                "duration_s = 10\n{CELL}[[flows]]\nscheme = \"cubic\"\n[[background]]\nue = 9\nsource = {{ kind = \"cbr\", rate_mbps = 1, packet_bytes = 1500 }}\n"
            ),
            "x.toml: background[0].ue: UE 9 does not exist",
        ),
        (
            "duration_s = 10\n[cell]\n[[cell.ues]]\nrate_mbps = -1\n[[flows]]\nscheme = \"cubic\"\n"
                .to_string(),
            "x.toml: cell.ues[0].rate_mbps",
        ),
    ] {
        let err = parse_error(&bad);
        assert!(err.starts_with(start), "{err}");
    }
}

#[test]
fn synthetic_links_are_generated_from_the_scenario() {
    let text = "duration_s = 40\nseed = 4\n[downlink]\nsynth = { model = \"steps\", base_mbps = 12, factor = 2, direction = \"up\", duration_s = 40 }\n\
        delay_ms = 10\n[uplink]\nrate_mbps = 50\ndelay_ms = 10\n[[flows]]\nscheme = \"bbr\"\n";
    let a = simulate("synth", text);
    let b = simulate("synth", text);
    conserved("synth", &a);
    assert_eq!(format!("{:?}", a.summary), format!("{:?}", b.summary));
    println!(
        "steps trace: {} at {:.2} Mbit/s, BBR utilisation {:.3}",
        a.link.downlink,
        a.link.capacity_mbps,
        a.summary[0].utilisation.unwrap()
    );
    assert!(a.link.downlink.starts_with("synth steps"));
    assert!(a.summary[0].utilisation.unwrap() > 0.8);
    let bad = text.replace("base_mbps = 12", "base_mbps = -1");
    let err = parse_error(&bad);
    assert!(err.starts_with("x.toml: downlink.synth.base_mbps"), "{err}");
}

#[test]
fn a_one_ue_cell_on_a_trace_runs_exactly_like_the_link() {
    let dir = std::env::temp_dir().join(format!("cellcc-topology-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Two 1504-byte opportunities every millisecond for 10 s (24.06 Mbit/s).
    let lines: String = (1..=10_000).map(|t| format!("{t}\n{t}\n")).collect();
    std::fs::write(dir.join("two.trace"), lines).unwrap();
    let tail =
        "delay_ms = 10\n[uplink]\nrate_mbps = 50\ndelay_ms = 10\n[[flows]]\nscheme = \"cubic\"\n";
    let link = format!(
        "duration_s = 20\n[downlink]\ntrace = \"two.trace\"\nqueue = {{ kind = \"droptail\", packets = 100 }}\n{tail}"
    );
    let cell = format!(
        "duration_s = 20\n[cell]\n[[cell.ues]]\ntrace = \"two.trace\"\nqueue = {{ kind = \"droptail\", packets = 100 }}\n[downlink]\n{tail}"
    );
    let run_in = |text: &str| {
        run(&Scenario::parse(text, "x.toml", Some(&dir)).unwrap()).expect("the scenario runs")
    };
    let (a, b) = (run_in(&link), run_in(&cell));
    std::fs::remove_dir_all(&dir).unwrap();
    println!(
        "link vs one-UE cell: utilisation {:.6} / {:.6}, throughput {:.4} / {:.4} Mbit/s",
        a.summary[0].utilisation.unwrap(),
        b.summary[0].utilisation.unwrap(),
        a.summary[0].throughput_mbps,
        b.summary[0].throughput_mbps
    );
    assert_eq!(format!("{:?}", a.summary[0]), format!("{:?}", b.summary[0]));
}
