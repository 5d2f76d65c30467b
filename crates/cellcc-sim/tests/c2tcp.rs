//! C2TCP scenario-level acceptance tests (issue acceptance list). Each test prints the
//! numbers it measured; rerun them with
//! `cargo test --release --locked -p cellcc-sim --test c2tcp -- --nocapture`.
//!
//! Tests that need `../shared/traces/mahimahi` skip when it is absent (and fail under
//! `CELLCC_REQUIRE_TRACES=1`, see `common`). Set `CELLCC_TEST_PLOTS=DIR` to also write
//! each run's time series into DIR.

mod common;
use common::{
    all_traces, conserved, constant_link, mean_qdelay, partner, same_results, show, simulate,
    trace_link, traces_dir,
};

use std::path::Path;

use cellcc_sim::{Scenario, SimOutput};

/// JSAC Eq. (15): in steady state the mean RTT stays below 1.5 × Setpoint. The Tuner is
/// off so that α, and with it the Setpoint, is fixed as the analysis assumes. α = 2 is
/// the reference kernel's default (`TCP_C2TCP_ALPHA_INIT` = 200) and inside the
/// 2–3 × RTT range the IFIP paper recommends for Target; α = 3 checks the other end.
/// The Setpoint is α × the measured minimum RTT (20 ms propagation + 1 ms to send a
/// 1500-byte packet at 12 Mbit/s).
#[test]
fn steady_state_mean_rtt_below_one_and_a_half_setpoints() {
    for fidelity in ["paper", "linux"] {
        for alpha in [2.0, 3.0] {
            let params = format!("tuner = false, alpha = {alpha}, fidelity = \"{fidelity}\"");
            let out = simulate(
                &format!("c2tcp-steady-{fidelity}-{alpha}"),
                &constant_link("c2tcp", &params, 60.0),
            );
            let r = &out.summary[0];
            show(&format!("12 Mbit/s, infinite buffer, {params}"), r);
            let min_rtt = r.rtt_min_ms.unwrap();
            let setpoint = alpha * min_rtt;
            let mean = r.rtt_mean_ms.unwrap();
            let util = r.utilisation.unwrap();
            // JSAC Eq. (14), the tighter bound: α·(MINRTT + 1/(2·bw)), bw in packets/ms.
            let bw_pkts_per_ms = 12e6 / 8.0 / 1500.0 / 1000.0;
            let eq14 = alpha * (min_rtt + 1.0 / (2.0 * bw_pkts_per_ms));
            println!(
                "  Setpoint {setpoint:.1} ms: mean RTT {mean:.1} ms vs Eq. (15) bound {:.1} ms \
                 (Eq. (14) {eq14:.1} ms)",
                1.5 * setpoint
            );
            assert!(
                mean < 1.5 * setpoint,
                "{params}: mean RTT {mean} ms ≥ 1.5 × Setpoint {setpoint} ms"
            );
            assert!(util >= 0.80, "{params}: utilisation {util}");
            assert_eq!(r.drops, 0);
        }
    }
}

/// JSAC Fig. 20 trend with the Tuner: on Verizon LTE (downlink; 20 ms min RTT; 150 KB
/// droptail buffer as in JSAC §VII-C) the mean RTT meets the application's Target
/// (within +15 % or below), and a larger Target buys more throughput.
#[test]
fn tuner_meets_the_target_on_verizon_lte_and_throughput_rises_with_it() {
    let Some(dir) = traces_dir() else { return };
    let down = dir.join("Verizon-LTE-short.down");
    let up = dir.join("Verizon-LTE-short.up");
    for fidelity in ["paper", "linux"] {
        let mut throughputs = Vec::new();
        for target in [50.0, 80.0, 100.0] {
            let params = format!("target_ms = {target}, fidelity = \"{fidelity}\"");
            let out = simulate(
                &format!("c2tcp-verizon-{fidelity}-{target}"),
                &trace_link(&down, Some(&up), 150_000, "c2tcp", &params, 140.0),
            );
            let r = &out.summary[0];
            show(&format!("Verizon-LTE-short, 150 KB, {params}"), r);
            let mean = r.rtt_mean_ms.unwrap();
            println!("  mean RTT / Target = {:.3}", mean / target);
            assert!(
                mean <= 1.15 * target,
                "{params}: mean RTT {mean} ms above Target + 15 %"
            );
            throughputs.push(r.throughput_mbps);
        }
        assert!(
            throughputs.windows(2).all(|w| w[1] > w[0]),
            "{fidelity}: throughput must rise with Target: {throughputs:?}"
        );
    }
}

/// JSAC §III-D: the application may change Target during the flow. Until the change the
/// run is identical to one with the first Target; afterwards its queueing delay moves to
/// that of a run with the second Target all along.
#[test]
fn target_schedule_moves_the_operating_point_mid_flow() {
    let Some(dir) = traces_dir() else { return };
    let down = dir.join("Verizon-LTE-short.down");
    let up = dir.join("Verizon-LTE-short.up");
    let run_with = |name: &str, params: &str| {
        simulate(
            name,
            &trace_link(&down, Some(&up), 150_000, "c2tcp", params, 140.0),
        )
    };
    let low = run_with("c2tcp-target-50", "target_ms = 50");
    let high = run_with("c2tcp-target-100", "target_ms = 100");
    let switched = run_with(
        "c2tcp-target-50-then-100",
        "target_ms = 50, target_schedule = [[70.0, 100.0]]",
    );
    let early = |o: &SimOutput| mean_qdelay(o, 10.0, 70.0);
    let late = |o: &SimOutput| mean_qdelay(o, 80.0, 140.0);
    println!(
        "queueing delay [10, 70) s: Target 50 {:.1} ms, switched {:.1} ms; \
         [80, 140) s: Target 50 {:.1} ms, switched {:.1} ms, Target 100 {:.1} ms",
        early(&low),
        early(&switched),
        late(&low),
        late(&switched),
        late(&high)
    );
    assert_eq!(early(&low), early(&switched));
    assert!(late(&switched) > 1.3 * late(&low));
    let ratio = late(&switched) / late(&high);
    assert!(
        (0.75..=1.25).contains(&ratio),
        "after the switch the queueing delay should be that of Target 100: ratio {ratio}"
    );
}

/// The seven downlink traces of the `c2tcp-jsac-table1` experiment.
const JSAC_TABLE1_TRACES: [&str; 7] = [
    "ATT-LTE-driving",
    "ATT-LTE-driving-2016",
    "TMobile-LTE-driving",
    "TMobile-LTE-short",
    "TMobile-UMTS-driving",
    "Verizon-EVDO-driving",
    "Verizon-LTE-short",
];

/// JSAC Table I setup (§VII-C: 20 ms min RTT, 150 KB droptail buffer, Target 50 ms). The
/// ACK path is the authors' evaluation scripts' constant 48 Mbit/s wired link (`wired48`
/// for every trace), or with `cellular_ack` the trace's cellular `.up` where it has one.
/// Returns the means over the traces of CUBIC ÷ C2TCP throughput and mean queueing delay.
fn jsac_table1_ratios(dir: &Path, cellular_ack: bool, duration_s: f64) -> (f64, f64) {
    let (mut thr, mut qd) = (0.0, 0.0);
    for trace in JSAC_TABLE1_TRACES {
        let down = dir.join(format!("{trace}.down"));
        let up = dir.join(format!("{trace}.up"));
        let uplink = if cellular_ack && up.exists() {
            format!("trace = \"{}\"", up.display())
        } else {
            "rate_mbps = 48.0".to_string()
        };
        let run = |scheme: &str| {
            let text = format!(
                "duration_s = {duration_s}\nseed = 1\n[downlink]\ntrace = \"{}\"\ndelay_ms = 10.0\n\
                 queue = {{ kind = \"droptail\", bytes = 150000 }}\n\
                 [uplink]\n{uplink}\ndelay_ms = 10.0\n\
                 queue = {{ kind = \"droptail\", bytes = 150000 }}\n\
                 [[flows]]\nscheme = \"{scheme}\"\n",
                down.display()
            );
            let ack = if cellular_ack { "cellular" } else { "wired" };
            let out = simulate(&format!("jsac-table1-{scheme}-{trace}-{ack}"), &text);
            out.summary[0].clone()
        };
        let (c2, cu) = (run("c2tcp"), run("cubic"));
        let (c2q, cuq) = (c2.qdelay_mean_ms.unwrap(), cu.qdelay_mean_ms.unwrap());
        println!(
            "  {trace:22} c2tcp {:6.2} Mbit/s {c2q:6.1} ms | cubic {:6.2} Mbit/s {cuq:7.1} ms \
             | c2tcp/cubic throughput {:.2}",
            c2.throughput_mbps,
            cu.throughput_mbps,
            c2.throughput_mbps / cu.throughput_mbps
        );
        thr += cu.throughput_mbps / c2.throughput_mbps;
        qd += cuq / c2q;
    }
    let n = JSAC_TABLE1_TRACES.len() as f64;
    (thr / n, qd / n)
}

/// JSAC Table I: CUBIC gets 1.28× C2TCP's throughput at 8.95× its mean queueing delay,
/// averaged over the traces after normalising each to C2TCP. The authors' scripts carry
/// the ACKs over a constant 48 Mbit/s wired link (`setup.sh` of their JSAC evaluation:
/// `wired48` as every trace's uplink); with it C2TCP keeps most of CUBIC's throughput
/// (asserted: CUBIC ≤ 1.5×) at a fraction of its delay (asserted: CUBIC ≥ 5×). With the
/// cellular `.up` traces as the ACK path the RTT of an empty queue is already close to the
/// 50 ms Target on the driving traces and CUBIC's share about doubles: printed only.
#[test]
fn jsac_table1_throughput_and_delay_against_cubic() {
    let Some(dir) = traces_dir() else { return };
    let duration_s = 120.0;
    println!("ACK path: constant 48 Mbit/s (the authors' wired48)");
    let (thr, qd) = jsac_table1_ratios(&dir, false, duration_s);
    println!("  mean CUBIC ÷ C2TCP: throughput {thr:.2} (paper 1.28), queueing delay {qd:.2} (paper 8.95)");
    println!("ACK path: the cellular .up trace where there is one");
    let (thr_c, qd_c) = jsac_table1_ratios(&dir, true, duration_s);
    println!("  mean CUBIC ÷ C2TCP: throughput {thr_c:.2}, queueing delay {qd_c:.2}");
    assert!(thr <= 1.5, "CUBIC ÷ C2TCP throughput {thr}");
    assert!(qd >= 5.0, "CUBIC ÷ C2TCP queueing delay {qd}");
}

/// Mean queueing delay (ms) of `scheme` on `trace` for each buffer size, printed.
fn buffer_sweep(dir: &Path, trace: &str, scheme: &str, buffers: &[u64]) -> Vec<f64> {
    let down = dir.join(format!("{trace}.down"));
    let up = dir.join(format!("{trace}.up"));
    buffers
        .iter()
        .map(|&bytes| {
            let out = simulate(
                &format!("{scheme}-{trace}-{bytes}"),
                &trace_link(&down, Some(&up), bytes, scheme, "", 140.0),
            );
            let r = &out.summary[0];
            show(&format!("{trace}, {bytes} B buffer, {scheme}"), r);
            r.qdelay_mean_ms.unwrap()
        })
        .collect()
}

const BUFFERS: [u64; 5] = [75_000, 150_000, 375_000, 750_000, 1_500_000];

/// The sweep over `BUFFERS` for C2TCP and CUBIC on `trace`, printed; checks that CUBIC's
/// mean queueing delay grows with the buffer (monotone, and at least 5× from the
/// smallest to the largest). Returns (C2TCP's, CUBIC's) delays.
fn sweep_c2tcp_and_cubic(dir: &Path, trace: &str) -> (Vec<f64>, Vec<f64>) {
    let c2tcp = buffer_sweep(dir, trace, "c2tcp", &BUFFERS);
    let cubic = buffer_sweep(dir, trace, "cubic", &BUFFERS);
    println!("{trace}: mean queueing delay c2tcp {c2tcp:.1?} ms, cubic {cubic:.1?} ms");
    assert!(
        cubic.windows(2).all(|w| w[1] > w[0]),
        "{trace}: cubic queueing delay must grow with the buffer: {cubic:?}"
    );
    assert!(cubic[4] >= 5.0 * cubic[0], "{trace}: {cubic:?}");
    (c2tcp, cubic)
}

/// JSAC Fig. 21 trend on Verizon LTE (downlink): from a 75 KB to a 1.5 MB buffer
/// C2TCP's mean queueing delay stays within +20 % of its smallest value, while CUBIC's
/// grows with the buffer (monotone, and at least 5× from the smallest to the largest).
#[test]
fn queueing_delay_is_insensitive_to_buffer_size_unlike_cubic() {
    let Some(dir) = traces_dir() else { return };
    let trace = "Verizon-LTE-short";
    let (c2tcp, _) = sweep_c2tcp_and_cubic(&dir, trace);
    let lo = c2tcp.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = c2tcp.iter().copied().fold(0.0, f64::max);
    assert!(
        hi <= 1.2 * lo,
        "{trace}: c2tcp queueing delay varies with the buffer: {c2tcp:?}"
    );
}

/// The same sweep on T-Mobile LTE, reported only for C2TCP: this trace runs at about
/// 16 Mbit/s, where 75 KB hold only ~37 ms, less than C2TCP's own queue, so the
/// smallest buffer drops packets and lowers C2TCP's delay (measured 17.9 ms against
/// 22.4 ms from 375 KB up; see docs/algorithms/c2tcp.md). CUBIC's growth is checked.
#[test]
fn buffer_sweep_on_tmobile_lte() {
    let Some(dir) = traces_dir() else { return };
    let trace = "TMobile-LTE-short";
    sweep_c2tcp_and_cubic(&dir, trace);
}

/// Every Mahimahi trace, as the data direction with its partner (if any) carrying the
/// ACKs, for both versions, both fidelities and both bases: no panic, data delivered,
/// packets conserved, and the same seed gives an identical summary and time series.
#[test]
fn runs_on_every_trace_deterministically() {
    let Some(traces) = all_traces() else { return };
    let configs = [
        ("c2tcp", ""),
        ("c2tcp", "fidelity = \"linux\""),
        ("c2tcp", "base = \"newreno\", target_ms = 0"),
        ("c2tcp-ifip", ""),
        ("c2tcp-ifip", "fidelity = \"linux\", base = \"newreno\""),
    ];
    let mut runs = 0;
    for data in &traces {
        if let Ok(only) = std::env::var("DBG_TRACE") {
            if !data.to_string_lossy().contains(&only) {
                continue;
            }
        }
        let partner = partner(data);
        let ack = partner.exists().then_some(partner.as_path());
        let name = data.file_name().unwrap().to_string_lossy().to_string();
        for (scheme, params) in configs {
            let text = trace_link(data, ack, 150_000, scheme, params, 60.0);
            let a = simulate(&format!("{scheme}-{name}"), &text);
            let b = simulate(&format!("{scheme}-{name}"), &text);
            let r = &a.summary[0];
            let label = format!("{name} ({scheme} {params})");
            show(&label, r);
            assert!(r.throughput_mbps > 0.0, "{label}");
            conserved(&label, &a);
            same_results(&label, &a, &b);
            runs += 1;
        }
    }
    println!(
        "{runs} runs on {} traces, each repeated identically",
        traces.len()
    );
}

/// Scenario files reach every parameter, and errors name the key.
#[test]
fn scenario_parameters_are_validated_with_their_key() {
    let err = |scheme: &str, params: &str| {
        Scenario::parse(&constant_link(scheme, params, 1.0), "s.toml", None)
            .unwrap_err()
            .to_string()
    };
    let e = err("c2tcp", "alpha = 12.0");
    assert!(
        e.starts_with("s.toml: flows[0].params.alpha: 12 is out of range"),
        "{e}"
    );
    for (scheme, params, needle) in [
        (
            "c2tcp",
            "target_schedule = [[5.0, 50.0], [4.0, 80.0]]",
            "flows[0].params.target_schedule[1]: time 4 s",
        ),
        ("c2tcp", "fidelity = \"kernel\"", "flows[0].params.fidelity"),
        (
            "c2tcp",
            "cubic = { beta = 2000 }",
            "flows[0].params.cubic.beta",
        ),
        (
            "c2tcp",
            "base = \"newreno\", cubic = { beta = 600 }",
            "flows[0].params.cubic: CUBIC parameters",
        ),
        (
            "c2tcp-ifip",
            "target_ms = 0",
            "flows[0].params.target_ms: 0 ms is out of range",
        ),
        ("c2tcp-ifip", "alpha = 2.0", "flows[0].params.alpha"),
        (
            "c2tcp",
            "fidelity = \"linux\", target_ms = 49.5",
            "whole milliseconds",
        ),
    ] {
        let e = err(scheme, params);
        assert!(e.contains(needle), "{scheme} {{ {params} }}: {e}");
    }
    // A full table loads.
    let ok = "target_ms = 80, target_schedule = [[10, 50], [20.5, 0]], alpha = 2.5, \
              tuner = true, tuning_cycle_ms = 250, fidelity = \"linux\", base = \"cubic\", \
              cubic = { hystart = false }";
    Scenario::parse(&constant_link("c2tcp", ok, 1.0), "s.toml", None).unwrap();
    let ok = "target_ms = 60, interval_ms = 80, fidelity = \"paper\", base = \"newreno\"";
    Scenario::parse(&constant_link("c2tcp-ifip", ok, 1.0), "s.toml", None).unwrap();
}
