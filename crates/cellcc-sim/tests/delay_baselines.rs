//! Scenario-level acceptance tests of the delay-based baselines: Copa, LEDBAT (RFC 6817
//! and LEDBAT++) and PCC-Vivace. Each test prints what it measured; rerun them with
//! `cargo test --release --locked -p cellcc-sim --test delay_baselines -- --nocapture`.
//!
//! The trace test skips when `../shared/traces/mahimahi` is absent (and fails under
//! `CELLCC_REQUIRE_TRACES=1`, see `common`). Set `CELLCC_TEST_PLOTS=DIR` to also write
//! each run's time series into DIR.

mod common;
use common::{down_traces, show, simulate};

use cellcc_sim::SimOutput;

/// Link rate of the constant-link tests, Mbit/s.
const RATE_MBPS: f64 = 12.0;
/// Bytes a full segment occupies on the link (1448 payload + 52 header bytes).
const PACKET_BYTES: f64 = 1500.0;

/// Packets per ms the constant link serves.
fn packets_per_ms() -> f64 {
    RATE_MBPS * 1e6 / 8.0 / PACKET_BYTES / 1000.0
}

/// `RATE_MBPS` downlink, 10 ms each way, infinite (deep) buffer; `flows` are
/// `(scheme, params, start_s)`.
fn constant_link(flows: &[(&str, &str, f64)], duration_s: f64, bin_ms: f64) -> String {
    link(
        &format!("rate_mbps = {RATE_MBPS}"),
        "{ kind = \"infinite\" }",
        flows,
        duration_s,
        bin_ms,
    )
}

/// A downlink with capacity `capacity` (TOML keys) and `queue`, 10 ms each way.
fn link(
    capacity: &str,
    queue: &str,
    flows: &[(&str, &str, f64)],
    duration_s: f64,
    bin_ms: f64,
) -> String {
    let mut s = format!(
        "duration_s = {duration_s}\nseed = 1\n[downlink]\n{capacity}\n\
         delay_ms = 10.0\nqueue = {queue}\n[uplink]\nrate_mbps = 100.0\n\
         delay_ms = 10.0\n[metrics]\nbin_ms = {bin_ms}\n"
    );
    for (scheme, params, start) in flows {
        s += &format!(
            "[[flows]]\nscheme = \"{scheme}\"\nparams = {{ {params} }}\nstart_s = {start}\n"
        );
    }
    s
}

/// Mean over bins of `flow` whose start lies in `[from_s, to_s)` of a time-series column.
fn mean_of(
    out: &SimOutput,
    flow: i64,
    from_s: f64,
    to_s: f64,
    col: impl Fn(usize) -> Option<f64>,
) -> f64 {
    let ts = &out.timeseries;
    let v: Vec<f64> = (0..ts.len())
        .filter(|&i| ts.flow[i] == flow && ts.t_s[i] >= from_s && ts.t_s[i] < to_s)
        .filter_map(&col)
        .collect();
    assert!(
        !v.is_empty(),
        "no samples for flow {flow} in [{from_s}, {to_s})"
    );
    v.iter().sum::<f64>() / v.len() as f64
}

/// A value `flow`'s congestion control reported at the end of the run.
fn info(out: &SimOutput, flow: u32, name: &str) -> f64 {
    let cc = out
        .cc_info
        .iter()
        .find(|c| c.flow == flow)
        .expect("flow info");
    cc.values
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no {name} in {:?}", cc.values))
        .1
}

fn mean_qdelay(out: &SimOutput, flow: i64, from_s: f64, to_s: f64) -> f64 {
    mean_of(out, flow, from_s, to_s, |i| out.timeseries.qdelay_ms[i])
}

fn mean_throughput(out: &SimOutput, flow: i64, from_s: f64, to_s: f64) -> f64 {
    mean_of(out, flow, from_s, to_s, |i| {
        Some(out.timeseries.throughput_mbps[i].unwrap_or(0.0))
    })
}

/// The smallest queueing delay of `flow` within each `window_ms` of `[from_s, to_s)`,
/// averaged: the queue that did not drain within the window (Copa's standing queue when
/// the window is srtt/2). Needs bins of at most `window_ms`.
fn mean_window_min_qdelay(out: &SimOutput, flow: i64, from_s: f64, to_s: f64, per: usize) -> f64 {
    let ts = &out.timeseries;
    let v: Vec<f64> = (0..ts.len())
        .filter(|&i| ts.flow[i] == flow && ts.t_s[i] >= from_s && ts.t_s[i] < to_s)
        .filter_map(|i| ts.qdelay_ms[i])
        .collect();
    let mins: Vec<f64> = v
        .chunks(per)
        .map(|c| c.iter().cloned().fold(f64::INFINITY, f64::min))
        .collect();
    mins.iter().sum::<f64>() / mins.len() as f64
}

/// Copa NSDI'18 §2: alone on a link of μ packets/s, Copa's rate equals μ when
/// d_q = 1/(δ·μ), a standing queue of 1/δ packets — 2 packets (2 ms at 1 packet/ms) at
/// δ = 0.5. Measured three ways after a 5 s warm-up: Copa's own d_q estimate (mean over
/// ACKs), the link's queueing delay taken as the minimum of each 10 ms (≈ srtt/2, the
/// window RTT_standing uses), and the mean queueing delay; with utilisation.
#[test]
fn copa_standing_queue_is_about_one_over_delta_packets() {
    for (delta, switching) in [(0.5, true), (0.5, false), (0.25, false)] {
        let params = format!("delta = {delta}, mode_switching = {switching}");
        let out = simulate(
            &format!("copa-standing-{delta}-{switching}"),
            &constant_link(&[("copa", &params, 0.0)], 30.0, 2.0),
        );
        let r = &out.summary[0];
        show(&format!("copa {params}, 12 Mbit/s, 20 ms, deep buffer"), r);
        let pkt_ms = packets_per_ms();
        let standing_ms = mean_window_min_qdelay(&out, 0, 5.0, 30.0, 5);
        let mean_ms = mean_qdelay(&out, 0, 5.0, 30.0);
        let dq_ms = info(&out, 0, "dq_mean_ms");
        let expect = 1.0 / delta;
        println!(
            "  1/δ = {expect} packets: Copa's d_q {:.2} packets, link standing queue \
             (min per 10 ms) {:.2} packets, mean queue {:.2} packets",
            dq_ms * pkt_ms,
            standing_ms * pkt_ms,
            mean_ms * pkt_ms
        );
        let phase = out.cc_info[0].phase;
        println!("  final mode {phase}, δ {}", info(&out, 0, "delta"));
        assert_eq!(
            phase, "default",
            "alone on the link Copa stays in default mode"
        );
        let util = r.utilisation.unwrap();
        assert!(util >= 0.9, "utilisation {util}");
        let standing = standing_ms * pkt_ms;
        assert!(
            standing >= 0.5 * expect && standing <= 2.0 * expect,
            "standing queue {standing} packets vs 1/δ = {expect}"
        );
        let dq = dq_ms * pkt_ms;
        assert!(
            dq >= 0.5 * expect && dq <= 2.0 * expect,
            "Copa's d_q {dq} packets vs 1/δ = {expect}"
        );
        assert_eq!(r.drops, 0);
    }
}

/// RFC 6817 §2.4: alone on a constant link with a deep buffer, LEDBAT grows until the
/// queueing delay reaches TARGET (100 ms) and holds it there. Measured as the mean
/// queueing delay of the link over 30–60 s (after the ~1 packet/RTT ramp-up). LEDBAT++
/// does the same around its 60 ms target, minus its periodic slowdowns.
#[test]
fn ledbat_holds_queueing_delay_near_its_target() {
    for (scheme, target) in [("ledbat", 100.0), ("ledbat++", 60.0)] {
        let out = simulate(
            &format!("{scheme}-alone"),
            &constant_link(&[(scheme, "", 0.0)], 60.0, 100.0),
        );
        let r = &out.summary[0];
        show(&format!("{scheme}, 12 Mbit/s, 20 ms, deep buffer"), r);
        let q = mean_qdelay(&out, 0, 30.0, 60.0);
        let tput = mean_throughput(&out, 0, 30.0, 60.0);
        println!(
            "  30–60 s: mean queueing delay {q:.1} ms (target {target} ms), throughput \
             {tput:.2} Mbit/s, controller q at the end {:.1} ms, slowdowns {}",
            info(&out, 0, "queuing_delay_ms"),
            info(&out, 0, "slowdowns")
        );
        assert!(
            (q - target).abs() <= 0.15 * target,
            "{scheme}: mean queueing delay {q} ms vs target {target} ms"
        );
        assert!(
            tput >= 0.8 * RATE_MBPS * 1448.0 / 1500.0,
            "{scheme}: throughput {tput}"
        );
    }
}

/// RFC 6817 §1–2: LEDBAT yields to standard TCP. LEDBAT runs alone for 20 s, then a
/// CUBIC flow starts on the same link (deep 400-packet droptail buffer, 400 ms at
/// 12 Mbit/s, so CUBIC's queue exceeds LEDBAT's target). LEDBAT's share is its
/// throughput over the sum of both flows' throughput, from the 500 ms time-series bins,
/// in 10–20 s (alone) and 30–60 s (with CUBIC, after 10 s of convergence).
#[test]
fn ledbat_yields_to_cubic() {
    for scheme in ["ledbat", "ledbat++"] {
        let out = simulate(
            &format!("{scheme}-vs-cubic"),
            &link(
                &format!("rate_mbps = {RATE_MBPS}"),
                "{ kind = \"droptail\", packets = 400 }",
                &[(scheme, "", 0.0), ("cubic", "", 20.0)],
                60.0,
                500.0,
            ),
        );
        show(&format!("{scheme} (flow 0)"), &out.summary[0]);
        show("cubic from 20 s (flow 1)", &out.summary[1]);
        let alone = mean_throughput(&out, 0, 10.0, 20.0);
        let with = mean_throughput(&out, 0, 30.0, 60.0);
        let cubic = mean_throughput(&out, 1, 30.0, 60.0);
        let share = with / (with + cubic);
        println!(
            "  {scheme}: alone {alone:.2} Mbit/s; with CUBIC {with:.2} Mbit/s vs CUBIC \
             {cubic:.2} Mbit/s: share {share:.3}"
        );
        assert!(
            alone >= 0.7 * RATE_MBPS * 1448.0 / 1500.0,
            "{scheme} alone: {alone}"
        );
        assert!(
            share <= 0.1,
            "{scheme} keeps {share} of the link against CUBIC"
        );
    }
}

/// PCC-Vivace NSDI'18 §2–3 sanity: alone on a constant 12 Mbit/s link with a deep buffer
/// it reaches high utilisation with a small queue (the latency term of the utility
/// punishes a growing RTT). Measured over 10–30 s.
#[test]
fn vivace_high_utilisation_low_queueing_on_a_constant_link() {
    let out = simulate(
        "vivace-constant",
        &constant_link(&[("pcc-vivace", "", 0.0)], 30.0, 100.0),
    );
    let r = &out.summary[0];
    show("pcc-vivace, 12 Mbit/s, 20 ms, deep buffer", r);
    let tput = mean_throughput(&out, 0, 10.0, 30.0);
    let q = mean_qdelay(&out, 0, 10.0, 30.0);
    let util = tput / (RATE_MBPS * 1448.0 / 1500.0);
    println!(
        "  10–30 s: throughput {tput:.2} Mbit/s (utilisation of goodput capacity {util:.3}), \
         mean queueing delay {q:.1} ms, final rate {:.2} Mbit/s after {} steps",
        info(&out, 0, "rate_mbps"),
        info(&out, 0, "steps")
    );
    assert!(util >= 0.85, "utilisation {util}");
    assert!(q <= 20.0, "mean queueing delay {q} ms");
}

/// PCC-Vivace reacts to a rate step (ccBench `wired12-2x-u-7s-plus-10`: 12 Mbit/s until
/// 17 s, 24 Mbit/s 17–24 s, 12 Mbit/s 24–31 s, 24 Mbit/s 31–38 s; deep buffer). Its
/// throughput rises after the step up, and after the step down the queue it built
/// drains again (mean queueing delay over the last 4 s of the low period).
///
/// Vivace tracks the step with the reference's decision-made stepping; what keeps the
/// queue short after the step down is the port's cwnd cap of 2·r·min RTT (see
/// docs/algorithms/pcc-vivace.md: with a cap of 2·r·srtt the queue reaches seconds).
#[test]
fn vivace_follows_a_rate_step() {
    let out = simulate(
        "vivace-steps",
        &link(
            "synth = { model = \"steps\", base_mbps = 12, factor = 2, direction = \"up\" }",
            "{ kind = \"infinite\" }",
            &[("pcc-vivace", "", 0.0)],
            38.0,
            100.0,
        ),
    );
    show("pcc-vivace, steps 12/24 Mbit/s", &out.summary[0]);
    let low = mean_throughput(&out, 0, 12.0, 17.0);
    let high = mean_throughput(&out, 0, 20.0, 24.0);
    let back = mean_throughput(&out, 0, 27.0, 31.0);
    let high2 = mean_throughput(&out, 0, 34.0, 38.0);
    let q_low = mean_qdelay(&out, 0, 12.0, 17.0);
    let q_back = mean_qdelay(&out, 0, 27.0, 31.0);
    println!(
        "  throughput: 12–17 s {low:.2}, 20–24 s {high:.2}, 27–31 s {back:.2}, 34–38 s \
         {high2:.2} Mbit/s; mean queueing delay 12–17 s {q_low:.1} ms, 27–31 s {q_back:.1} ms"
    );
    assert!(
        low >= 0.8 * 12.0 * 1448.0 / 1500.0,
        "12 Mbit/s period: {low}"
    );
    assert!(high >= 1.4 * low, "after the step up: {high} vs {low}");
    assert!(
        high2 >= 1.4 * back,
        "after the second step up: {high2} vs {back}"
    );
    assert!(q_back <= 50.0, "queue after the step down: {q_back} ms");
}

/// Every scheme of this file runs for 20 s on every `.down` Mahimahi trace (150 KB
/// droptail buffer, 10 ms each way, 100 Mbit/s uplink) without a panic and delivers data.
#[test]
fn every_delay_baseline_runs_on_every_trace() {
    let Some(traces) = down_traces() else { return };
    for trace in &traces {
        let name = trace.file_stem().unwrap().to_string_lossy().to_string();
        for scheme in ["copa", "ledbat", "ledbat++", "pcc-vivace"] {
            let out = simulate(
                &format!("{scheme}-{name}"),
                &link(
                    &format!("trace = \"{}\"", trace.display()),
                    "{ kind = \"droptail\", bytes = 150000 }",
                    &[(scheme, "", 0.0)],
                    20.0,
                    500.0,
                ),
            );
            show(&format!("{scheme} on {name}"), &out.summary[0]);
            assert!(
                out.summary[0].app_bytes > 0,
                "{scheme} on {name} delivered nothing"
            );
        }
    }
}

/// PCC-Vivace on every `.down` Boston trace for the trace's full length, in the
/// baselines-all-traces setup: 20 ms each way, 2000-packet drop-tail buffers both ways,
/// the sibling `.up` trace as uplink (constant 100 Mbit/s where there is none). Prints
/// throughput, utilisation and mean queueing delay per trace and their means; only
/// asserts that data was delivered. Long (about an hour of simulated time):
/// `cargo test --release --locked -p cellcc-sim --test delay_baselines -- --ignored
/// --nocapture vivace_on_the_boston_traces`.
#[test]
#[ignore = "long: the full length of the seven traces"]
fn vivace_on_the_boston_traces() {
    let Some(traces) = down_traces() else { return };
    let run_one = |trace: &std::path::PathBuf| {
        let name = trace.file_stem().unwrap().to_string_lossy().to_string();
        let up = trace.with_extension("up");
        let uplink = if up.exists() {
            format!("trace = \"{}\"", up.display())
        } else {
            "rate_mbps = 100.0".to_string()
        };
        // The full trace: its last delivery opportunity, ms.
        let last_ms: f64 = std::fs::read_to_string(trace)
            .unwrap()
            .lines()
            .rev()
            .find_map(|l| l.trim().parse().ok())
            .expect("a trace with timestamps");
        let text = format!(
            "duration_s = {}\nseed = 1\n[downlink]\ntrace = \"{}\"\ndelay_ms = 20.0\n\
             queue = {{ kind = \"droptail\", packets = 2000 }}\n[uplink]\n{uplink}\n\
             delay_ms = 20.0\nqueue = {{ kind = \"droptail\", packets = 2000 }}\n\
             [metrics]\nbin_ms = 1000.0\n[[flows]]\nscheme = \"pcc-vivace\"\n",
            last_ms / 1000.0,
            trace.display()
        );
        (name, simulate("vivace-trace", &text).summary[0].clone())
    };
    let rows: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = traces
            .chunks(traces.len().div_ceil(2).max(1))
            .map(|chunk| s.spawn(move || chunk.iter().map(run_one).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let (mut tput, mut util, mut q, mut p95) = (0.0, 0.0, 0.0, 0.0);
    for (name, r) in &rows {
        let (u, qd) = (
            r.utilisation.unwrap_or(f64::NAN),
            r.qdelay_mean_ms.unwrap_or(f64::NAN),
        );
        println!(
            "{name:<24} throughput {:7.3} Mbit/s  utilisation {u:.3}  mean queueing delay \
             {qd:8.1} ms  (p95 {:.1} ms)",
            r.throughput_mbps,
            r.qdelay_p95_ms.unwrap_or(f64::NAN)
        );
        p95 += r.qdelay_p95_ms.unwrap_or(f64::NAN);
        tput += r.throughput_mbps;
        util += u;
        q += qd;
        assert!(r.app_bytes > 0, "pcc-vivace on {name} delivered nothing");
    }
    let n = rows.len().max(1) as f64;
    println!(
        "{:<24} throughput {:7.3} Mbit/s  utilisation {:.3}  mean queueing delay {:8.1} ms  \
         (p95 {:.1} ms)",
        "mean",
        tput / n,
        util / n,
        q / n,
        p95 / n
    );
}
