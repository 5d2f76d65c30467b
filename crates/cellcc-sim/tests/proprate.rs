//! PropRate acceptance (issue items 5 and 6): achieved vs target buffer delay with and
//! without the negative-feedback loop on the paper's kind of trace, every shared trace in
//! both directions without panics or accounting errors, determinism, and the presets.
//!
//! Rerun with the numbers printed:
//! `cargo test --release --locked -p cellcc-sim --test proprate -- --nocapture`.
//! Set `CELLCC_TEST_PLOTS=DIR` to also write each run's time series as JSON into DIR.
//! Tests that need `../shared/traces` skip (with a message) when it is absent.

use std::path::PathBuf;

use cellcc_sim::{run, Scenario, SimOutput};

/// The paper's emulation setup (§5): 2000-packet drop-tail bottleneck; 20 ms base RTT
/// (10 ms each way); a constant fast uplink so that only the downlink trace varies.
fn scenario(down: &str, up: Option<&str>, params: &str, scheme: &str, secs: f64) -> String {
    let uplink = match up {
        Some(t) => format!("trace = \"{t}\""),
        None => "rate_mbps = 100.0".to_string(),
    };
    format!(
        "duration_s = {secs}\nseed = 1\n\
         [downlink]\ntrace = \"{down}\"\ndelay_ms = 10.0\nqueue = {{ kind = \"droptail\", packets = 2000 }}\n\
         [uplink]\n{uplink}\ndelay_ms = 10.0\n\
         [[flows]]\nscheme = \"{scheme}\"\nparams = {{ {params} }}\n"
    )
}

fn simulate(name: &str, text: &str) -> SimOutput {
    let sc = Scenario::parse(text, name, None).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let out = run(&sc);
    if let Some(dir) = std::env::var_os("CELLCC_TEST_PLOTS") {
        let path = PathBuf::from(dir).join(format!("{name}.json"));
        std::fs::write(path, serde_json::to_string(&out.timeseries).unwrap()).unwrap();
    }
    out
}

fn traces_dir() -> Option<PathBuf> {
    let p = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/traces/mahimahi"
    ));
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!("skipping: {} not found", p.display());
        None
    }
}

fn trace(dir: &std::path::Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

/// Mean queueing delay at the bottleneck (the summary's `qdelay_mean_ms`) of flow 0.
fn mean_buffer_delay(out: &SimOutput) -> f64 {
    out.summary[0]
        .qdelay_mean_ms
        .expect("packets left the bottleneck")
}

#[test]
fn nfl_holds_the_target_buffer_delay_on_tmobile_lte_driving() {
    let Some(dir) = traces_dir() else {
        return;
    };
    let down = trace(&dir, "TMobile-LTE-driving.down");
    println!("TMobile-LTE-driving.down, 120 s, 2000-packet droptail, 20 ms RTT, 100 Mbit/s uplink");
    println!("target_ms  nfl  mean_qdelay_ms  error_%  p95_qdelay_ms  throughput_mbps  utilisation  drops  rtos");
    let mut worst_nfl: f64 = 0.0;
    let mut err_sum = [0.0f64; 2];
    for target in [20.0, 40.0, 80.0, 120.0] {
        for (i, nfl) in [true, false].into_iter().enumerate() {
            let params = format!("t_buff_ms = {target}, nfl = {nfl}");
            let out = simulate(
                &format!("proprate-tmobile-{target}-{nfl}"),
                &scenario(&down, None, &params, "proprate", 120.0),
            );
            let row = &out.summary[0];
            let mean = mean_buffer_delay(&out);
            let err = (mean - target) / target * 100.0;
            println!(
                "{target:>9}  {:>3}  {mean:>14.1}  {err:>+7.1}  {:>13.1}  {:>15.2}  {:>11.3}  {:>5}  {:>4}",
                if nfl { "on" } else { "off" },
                row.qdelay_p95_ms.unwrap(),
                row.throughput_mbps,
                row.utilisation.unwrap(),
                row.drops,
                row.rtos
            );
            err_sum[i] += err.abs();
            if nfl {
                worst_nfl = worst_nfl.max(err.abs());
            }
        }
    }
    println!(
        "mean |error|: with NFL {:.1} %, without {:.1} %",
        err_sum[0] / 4.0,
        err_sum[1] / 4.0
    );
    assert!(worst_nfl <= 25.0, "worst error with NFL {worst_nfl:.1} %");
}

#[test]
fn zz_diag_constant() {
    let dl = std::env::var("DIAG_DL").unwrap_or("rate_mbps = 12.0".into());
    let t0: f64 = std::env::var("DIAG_T0")
        .map(|v| v.parse().unwrap())
        .unwrap_or(0.0);
    let extra = std::env::var("DIAG_P").unwrap_or_default();
    let targets: Vec<f64> = std::env::var("DIAG_TARGETS")
        .unwrap_or("20,40,80,120".into())
        .split(',')
        .map(|v| v.parse().unwrap())
        .collect();
    let dur = std::env::var("DIAG_DUR").unwrap_or("60".into());
    for target in targets {
        let text = format!(
            "duration_s = {dur}\nseed = 1\n[metrics]\nbin_ms = 100.0\n[downlink]\n{dl}\ndelay_ms = 10.0\nqueue = {{ kind = \"droptail\", packets = 2000 }}\n\
             [uplink]\nrate_mbps = 100.0\ndelay_ms = 10.0\n[[flows]]\nscheme = \"proprate\"\nparams = {{ t_buff_ms = {target} {extra} }}\n");
        let text = match std::env::var("DIAG_SCHEME") {
            Ok(sch) => text
                .replace("scheme = \"proprate\"", &format!("scheme = \"{sch}\""))
                .replace(
                    &format!("params = {{ t_buff_ms = {target} {extra} }}"),
                    "params = {}",
                ),
            Err(_) => text,
        };
        let out = simulate("diag", &text);
        let r = &out.summary[0];
        println!("target {target}: qdelay mean {:.1} p50 {:.1} p95 {:.1} tput {:.2} util {:.3} drops {} rtos {}", r.qdelay_mean_ms.unwrap(), r.qdelay_p50_ms.unwrap(), r.qdelay_p95_ms.unwrap(), r.throughput_mbps, r.utilisation.unwrap(), r.drops, r.rtos);
        if std::env::var_os("DIAG_TS").is_some() && target == 40.0 {
            let ts = &out.timeseries;
            let cap: std::collections::HashMap<u64, f64> = (0..ts.len())
                .filter(|&i| ts.flow[i] == -1)
                .map(|i| {
                    (
                        (ts.t_s[i] * 10.0).round() as u64,
                        ts.capacity_mbps[i].unwrap_or(-1.0),
                    )
                })
                .collect();
            for i in 0..ts.len() {
                if ts.flow[i] == 0 && ts.t_s[i] >= t0 && ts.t_s[i] < t0 + 8.0 {
                    println!("  t {:5.1} cap {:>5.1} q {:>6.1} egress {:>5.2} pacing {:>7.2} cwnd {:>5} infl {:>5}", ts.t_s[i], cap[&((ts.t_s[i] * 10.0).round() as u64)], ts.qdelay_ms[i].unwrap_or(-1.0), ts.egress_mbps[i].unwrap_or(0.0), ts.pacing_mbps[i].unwrap_or(0.0).min(999.0), ts.cwnd[i].unwrap_or(0), ts.inflight[i].unwrap_or(0));
                }
            }
        }
    }
}
