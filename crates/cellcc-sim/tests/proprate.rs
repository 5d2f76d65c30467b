//! PropRate acceptance (issue items 5 and 6): the two regimes on a constant link, achieved
//! vs target buffer delay with and without the negative-feedback loop on a driving trace,
//! every shared trace in both directions without panics or accounting errors,
//! determinism, and the presets' parameters.
//!
//! Rerun with the numbers printed:
//! `cargo test --release --locked -p cellcc-sim --test proprate -- --nocapture`.
//! Set `CELLCC_TEST_PLOTS=DIR` to also write each run's time series as JSON into DIR.
//! Tests that need `../shared/traces` skip (with a message) when it is absent, and fail
//! under `CELLCC_REQUIRE_TRACES=1` (see `common`).

mod common;
use common::{all_traces, conserved, partner, same_results, simulate, traces_dir};

use std::path::Path;

use cellcc_sim::{Scenario, SimOutput};

/// A 2000-packet drop-tail bottleneck (the paper's emulation buffer, §5) with 10 ms each
/// way (20 ms base RTT). `down`/`up` are link capacity lines (`trace = ...` or
/// `rate_mbps = ...`).
fn scenario(down: &str, up: &str, scheme: &str, params: &str, secs: f64) -> String {
    scenario_owd(10.0, down, up, scheme, params, secs)
}

/// As [`scenario`] with `owd_ms` of propagation delay each way.
fn scenario_owd(
    owd_ms: f64,
    down: &str,
    up: &str,
    scheme: &str,
    params: &str,
    secs: f64,
) -> String {
    format!(
        "duration_s = {secs}\nseed = 1\n\
         [downlink]\n{down}\ndelay_ms = {owd_ms}\nqueue = {{ kind = \"droptail\", packets = 2000 }}\n\
         [uplink]\n{up}\ndelay_ms = {owd_ms}\n\
         [[flows]]\nscheme = \"{scheme}\"\nparams = {{ {params} }}\n"
    )
}

const FAST_UPLINK: &str = "rate_mbps = 100.0";

/// Length of `TMobile-LTE-driving.down` (its last timestamp is 474 609 ms).
const WHOLE_TMOBILE_DRIVING_S: f64 = 474.0;

/// §5's setup: the paper's 20 ms propagation delay each way.
fn paper_setup(down: &str, up: &str, scheme: &str, params: &str, secs: f64) -> String {
    scenario_owd(20.0, down, up, scheme, params, secs)
}

fn trace_line(path: &Path) -> String {
    format!("trace = \"{}\"", path.display())
}

/// "Buffer delay": mean queueing delay at the bottleneck of flow 0 (`qdelay_mean_ms`).
fn mean_buffer_delay(out: &SimOutput) -> f64 {
    out.summary[0]
        .qdelay_mean_ms
        .expect("packets left the bottleneck")
}

/// Signed error of the achieved mean buffer delay, percent of the target.
fn error_pct(achieved: f64, target: f64) -> f64 {
    (achieved - target) / target * 100.0
}

/// Both regimes on a constant 12 Mbit/s link: PR(H) keeps the buffer full (utilisation
/// ≈ 1, Eq. 7); PR(L) empties it periodically (utilisation U < 1, Eq. 8) for a low mean.
#[test]
fn presets_reach_their_regimes_on_a_constant_link() {
    let mut rows = Vec::new();
    for (scheme, target) in [("proprate-l", 20.0), ("proprate-h", 80.0)] {
        let out = simulate(
            &format!("{scheme}-constant"),
            &scenario("rate_mbps = 12.0", FAST_UPLINK, scheme, "", 30.0),
        );
        let row = &out.summary[0];
        let mean = mean_buffer_delay(&out);
        let util = row.utilisation.unwrap();
        println!(
            "{scheme} on 12 Mbit/s: mean buffer delay {mean:.1} ms (target {target}, {:+.1} %), p95 {:.1} ms, utilisation {util:.3}",
            error_pct(mean, target),
            row.qdelay_p95_ms.unwrap()
        );
        assert!(
            error_pct(mean, target).abs() <= 25.0,
            "{scheme}: {mean} ms vs {target} ms"
        );
        assert_eq!(row.drops, 0, "{scheme}: 2000 packets are never reached");
        rows.push(util);
    }
    assert!(rows[1] >= 0.99, "PR(H) keeps the link busy: {}", rows[1]);
    assert!(
        rows[0] < 0.95,
        "PR(L) empties the buffer, giving up utilisation: {}",
        rows[0]
    );
}

/// Fig. 9's experiment on TMobile-LTE-driving: achieved vs target mean buffer delay for
/// t̄_buff in {20, 40, 80, 120} ms, with and without the NFL, in the paper's emulation
/// setup (§5: "the propagation delay was set to 20 ms", i.e. 20 ms each way and the
/// 40 ms RTT of the Eq. 7/8 worked numbers), over the whole trace. The trace has no
/// uplink file, so ACKs take a fast constant uplink.
///
/// Measured (see `docs/algorithms/proprate.md`): with the NFL, 40, 80 and 120 ms are met
/// within ±25 %; 20 ms is not. The link is silent for 20–100 ms at a time for a large
/// part of the trace (and has 1 s outages); a paced sender piles packets up in every
/// gap, which sets a floor the threshold cannot lower: with t̄_buff = 1 ms the NFL drives
/// T to its 1 ms floor and the mean is still above 25 ms, the top of the 20 ms band
/// (asserted below). The gap is reported, not hidden: the test asserts the ±25 % band
/// where it is met and, for 20 ms, that the NFL moves the mean toward the target and
/// that the floor lies above the band.
#[test]
fn nfl_holds_the_target_buffer_delay_on_tmobile_lte_driving() {
    let Some(dir) = traces_dir() else {
        return;
    };
    let down = trace_line(&dir.join("TMobile-LTE-driving.down"));
    let run_one = |target: f64, nfl: bool| {
        simulate(
            &format!("proprate-tmobile-{target}-{nfl}"),
            &paper_setup(
                &down,
                FAST_UPLINK,
                "proprate",
                &format!("t_buff_ms = {target}, nfl = {nfl}"),
                WHOLE_TMOBILE_DRIVING_S,
            ),
        )
    };
    println!(
        "TMobile-LTE-driving.down, whole trace ({WHOLE_TMOBILE_DRIVING_S} s), 2000-packet droptail, \
         20 ms each way, 100 Mbit/s uplink"
    );
    println!("target_ms  nfl  mean_qdelay_ms  error_%  p95_qdelay_ms  throughput_mbps  utilisation  rtos");
    let mut err = Vec::new();
    for target in [20.0, 40.0, 80.0, 120.0] {
        let mut pair = [0.0; 2];
        for (i, nfl) in [true, false].into_iter().enumerate() {
            let out = run_one(target, nfl);
            let row = &out.summary[0];
            let mean = mean_buffer_delay(&out);
            pair[i] = error_pct(mean, target);
            println!(
                "{target:>9}  {:>3}  {mean:>14.1}  {:>+7.1}  {:>13.1}  {:>15.2}  {:>11.3}  {:>4}",
                if nfl { "on" } else { "off" },
                pair[i],
                row.qdelay_p95_ms.unwrap(),
                row.throughput_mbps,
                row.utilisation.unwrap(),
                row.rtos
            );
        }
        err.push((target, pair[0], pair[1]));
    }
    let mean_abs = |k: usize| {
        err.iter()
            .map(|e| if k == 0 { e.1.abs() } else { e.2.abs() })
            .sum::<f64>()
            / err.len() as f64
    };
    println!(
        "mean |error|: with NFL {:.1} %, without {:.1} %",
        mean_abs(0),
        mean_abs(1)
    );
    let floor = mean_buffer_delay(&run_one(1.0, true));
    println!("floor: t_buff_ms = 1 with NFL gives a mean buffer delay of {floor:.1} ms");

    for &(target, on, off) in &err {
        if target >= 40.0 {
            assert!(on.abs() <= 25.0, "t̄_buff {target}: {on:+.1} % with NFL");
        } else {
            // Known gap (see above): at least the loop must help.
            assert!(
                on.abs() < off.abs(),
                "t̄_buff {target}: NFL {on:+.1} % vs {off:+.1} %"
            );
        }
    }
    // Fig. 9's claim: without the loop the achieved delay is further off, on average and
    // by at least 10 points at some target.
    assert!(mean_abs(1) > mean_abs(0));
    assert!(err.iter().any(|e| e.2.abs() - e.1.abs() >= 10.0));
    // The floor that explains the gap at 20 ms: above the ±25 % band even at T = 1 ms.
    assert!(floor > 25.0, "floor {floor} ms");
}

/// Every shared Mahimahi trace, as the data direction, with a constant uplink and, where
/// the reverse file exists, with it as the ACK path: no panic, packets conserved, sane
/// sender state, and the same seed gives the same output twice.
#[test]
fn every_trace_in_both_directions_runs_cleanly_and_deterministically() {
    let Some(files) = all_traces() else {
        return;
    };
    let schemes = [
        ("proprate-l", ""),
        ("proprate-m", ""),
        ("proprate-h", ""),
        ("proprate", "t_buff_ms = 60, nfl = false"),
    ];
    let mut runs = 0;
    println!("trace (data direction)           uplink          scheme        tput_mbps  util   mean_q_ms  rtos");
    for (i, down) in files.iter().enumerate() {
        let reverse = partner(down);
        let mut uplinks = vec![("100 Mbit/s".to_string(), FAST_UPLINK.to_string())];
        if reverse.exists() {
            let name = reverse.file_name().unwrap().to_string_lossy().to_string();
            uplinks.push((name, trace_line(&reverse)));
        }
        for (j, (up_name, up)) in uplinks.iter().enumerate() {
            let (scheme, params) = schemes[(i + j) % schemes.len()];
            let name = down.file_name().unwrap().to_string_lossy().to_string();
            let text = scenario(&trace_line(down), up, scheme, params, 60.0);
            let a = simulate(&format!("{name}-{j}"), &text);
            let b = simulate(&format!("{name}-{j}"), &text);
            let row = &a.summary[0];
            println!(
                "{name:<32} {up_name:<15} {scheme:<12} {:>9.2}  {:>5.3}  {:>9.1}  {:>4}",
                row.throughput_mbps,
                row.utilisation.unwrap_or(0.0),
                row.qdelay_mean_ms.unwrap_or(f64::NAN),
                row.rtos
            );
            same_results(&name, &a, &b);
            conserved(&name, &a);
            assert!(row.app_bytes > 0, "{name}: nothing delivered");
            assert!(
                row.utilisation.unwrap() <= 1.0 + 1e-9,
                "{name}: utilisation {:?}",
                row.utilisation
            );
            let ts = &a.timeseries;
            for k in (0..ts.len()).filter(|&k| ts.flow[k] == 0) {
                if let Some(cwnd) = ts.cwnd[k] {
                    assert!(cwnd >= 1, "{name}: cwnd {cwnd} at {} s", ts.t_s[k]);
                }
                if let Some(p) = ts.pacing_mbps[k] {
                    assert!(p > 0.0, "{name}: pacing {p} at {} s", ts.t_s[k]);
                }
            }
            runs += 1;
        }
    }
    assert!(runs >= 25, "{runs} runs");
}

/// The scheme registry: presets fix t̄_buff and take the other parameters; bad values
/// are errors naming the key.
#[test]
fn presets_and_parameter_errors() {
    let text =
        |scheme: &str, params: &str| scenario("rate_mbps = 12.0", FAST_UPLINK, scheme, params, 1.0);
    for scheme in ["proprate", "proprate-l", "proprate-m", "proprate-h"] {
        Scenario::parse(
            &text(scheme, "nfl = false, l_max_ms = 200"),
            "ok.toml",
            None,
        )
        .unwrap_or_else(|e| panic!("{scheme}: {e}"));
    }
    let err = |scheme: &str, params: &str| {
        Scenario::parse(&text(scheme, params), "bad.toml", None)
            .unwrap_err()
            .to_string()
    };
    let e = err("proprate-h", "t_buff_ms = 30");
    assert!(e.contains("params.t_buff_ms") && e.contains("fixes"), "{e}");
    for (scheme, params, needle) in [
        ("proprate", "t_buff_ms = 0", "params.t_buff_ms"),
        ("proprate", "k_d_min = 1.5", "params.k_d_min"),
        ("proprate", "rho_timestamps = 1", "params.rho_timestamps"),
        ("proprate-l", "t_buf_ms = 20", "t_buf_ms"),
        ("proprate", "nfl = 3", "params.nfl"),
    ] {
        let e = err(scheme, params);
        assert!(e.contains(needle), "{scheme} {{ {params} }}: {e}");
    }
}
