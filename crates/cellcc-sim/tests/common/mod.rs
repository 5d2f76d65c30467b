//! Helpers shared by the scenario-level test files (`mod common;` in each).
//!
//! Set `CELLCC_TEST_PLOTS=DIR` to also write each run's time series as JSON columns into
//! DIR, so a failing test is one step away from a picture.

#![allow(dead_code)] // each test file uses its own subset

use std::path::{Path, PathBuf};

use cellcc_sim::metrics::SummaryRow;
use cellcc_sim::{run, Scenario, SimOutput};

/// Every data packet and every ACK sent was delivered, dropped or is still in the
/// network, exactly once; `label` names the run in the failure message.
pub(crate) fn conserved(label: &str, out: &SimOutput) {
    let c = out.conservation;
    assert_eq!(
        c.data_sent,
        c.data_delivered + c.data_dropped + c.data_in_network,
        "{label}: {c:?}"
    );
    assert_eq!(
        c.acks_sent,
        c.acks_delivered + c.acks_dropped + c.acks_in_network,
        "{label}: {c:?}"
    );
}

/// Two runs of the same scenario and seed have the same summary and time series.
pub(crate) fn same_results(label: &str, a: &SimOutput, b: &SimOutput) {
    assert_eq!(
        serde_json::to_string(&a.summary).unwrap(),
        serde_json::to_string(&b.summary).unwrap(),
        "{label}: same seed, different summary"
    );
    assert_eq!(
        serde_json::to_string(&a.timeseries).unwrap(),
        serde_json::to_string(&b.timeseries).unwrap(),
        "{label}: same seed, different time series"
    );
}

/// Parse `text` (named `name` in errors) and run it; panics with the loader's message.
pub(crate) fn simulate(name: &str, text: &str) -> SimOutput {
    let sc = Scenario::parse(text, name, None).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let out = run(&sc).expect("the scenario runs");
    write_plot(name, &out);
    out
}

/// The loader's message for a scenario `text` it refuses (named `x.toml`).
pub(crate) fn parse_error(text: &str) -> String {
    Scenario::parse(text, "x.toml", None)
        .map(|_| ())
        .unwrap_err()
        .to_string()
}

/// Write `out`'s time series to `$CELLCC_TEST_PLOTS/<name>.json` when that is set.
/// Labels such as "LTE SR 5 ms, 24 Mbit/s" become "LTE-SR-5-ms--24-Mbit-s".
pub(crate) fn write_plot(name: &str, out: &SimOutput) {
    if let Some(dir) = std::env::var_os("CELLCC_TEST_PLOTS") {
        let file: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        let path = PathBuf::from(dir).join(format!("{file}.json"));
        std::fs::write(path, serde_json::to_string(&out.timeseries).unwrap()).unwrap();
    }
}

/// One summary row on one line: throughput, utilisation, RTT and queueing delay, losses.
pub(crate) fn show(label: &str, r: &SummaryRow) {
    println!(
        "{label}: throughput {:.3} Mbit/s, utilisation {:.3}, RTT mean {:.1} ms (p95 {:.1}, \
         min {:.1}), queueing delay mean {:.2} ms (p50 {:.2}, p95 {:.2}), drops {}, \
         retransmits {}, RTOs {}",
        r.throughput_mbps,
        r.utilisation.unwrap_or(f64::NAN),
        r.rtt_mean_ms.unwrap_or(f64::NAN),
        r.rtt_p95_ms.unwrap_or(f64::NAN),
        r.rtt_min_ms.unwrap_or(f64::NAN),
        r.qdelay_mean_ms.unwrap_or(f64::NAN),
        r.qdelay_p50_ms.unwrap_or(f64::NAN),
        r.qdelay_p95_ms.unwrap_or(f64::NAN),
        r.drops,
        r.retransmits,
        r.rtos
    );
}

/// 12 Mbit/s downlink, 10 ms each way (20 ms propagation RTT), infinite buffer, a
/// 100 Mbit/s uplink; one flow of `scheme` with `params` (the BBR sanity scenario).
pub(crate) fn constant_link(scheme: &str, params: &str, duration_s: f64) -> String {
    format!(
        "duration_s = {duration_s}\nseed = 1\n[downlink]\nrate_mbps = 12.0\ndelay_ms = 10.0\n\
         queue = {{ kind = \"infinite\" }}\n[uplink]\nrate_mbps = 100.0\ndelay_ms = 10.0\n\
         [[flows]]\nscheme = \"{scheme}\"\nparams = {{ {params} }}\n"
    )
}

/// A trace-driven path as in the C2TCP JSAC evaluation (§VII-C): 10 ms each way, a
/// droptail downlink buffer of `buffer_bytes`; the uplink is `up`, or 100 Mbit/s when
/// there is no trace for it.
pub(crate) fn trace_link(
    down: &Path,
    up: Option<&Path>,
    buffer_bytes: u64,
    scheme: &str,
    params: &str,
    duration_s: f64,
) -> String {
    let uplink = match up {
        Some(up) => format!("trace = \"{}\"", up.display()),
        None => "rate_mbps = 100.0".to_string(),
    };
    format!(
        "duration_s = {duration_s}\nseed = 1\n[downlink]\ntrace = \"{}\"\ndelay_ms = 10.0\n\
         queue = {{ kind = \"droptail\", bytes = {buffer_bytes} }}\n\
         [uplink]\n{uplink}\ndelay_ms = 10.0\n\
         [[flows]]\nscheme = \"{scheme}\"\nparams = {{ {params} }}\n",
        down.display()
    )
}

/// Mean queueing delay of flow 0 over bins whose start lies in `[from_s, to_s)`.
pub(crate) fn mean_qdelay(out: &SimOutput, from_s: f64, to_s: f64) -> f64 {
    let ts = &out.timeseries;
    let v: Vec<f64> = (0..ts.len())
        .filter(|&i| ts.flow[i] == 0 && ts.t_s[i] >= from_s && ts.t_s[i] < to_s)
        .filter_map(|i| ts.qdelay_ms[i])
        .collect();
    assert!(!v.is_empty(), "no delay samples in [{from_s}, {to_s})");
    v.iter().sum::<f64>() / v.len() as f64
}

/// Where the shared Mahimahi traces are expected: `shared/traces/mahimahi` beside the
/// checkout.
const TRACES_DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/traces/mahimahi"
);

/// Set to `1` (CI does, in `.ci/run`) to make absent shared traces a test failure
/// instead of a skip.
const REQUIRE_TRACES_ENV: &str = "CELLCC_REQUIRE_TRACES";

/// The shared Mahimahi trace directory, or `None` (with a note) when it is absent; see
/// [`shared_traces_path`].
pub(crate) fn traces_dir() -> Option<PathBuf> {
    shared_traces_path("")
}

/// The shared trace `name` (e.g. `TMobile-LTE-short.down`), or `None` (with a note) when
/// it is absent; see [`shared_traces_path`].
pub(crate) fn shared_trace(name: &str) -> Option<PathBuf> {
    shared_traces_path(name)
}

/// `rel` inside the shared Mahimahi traces (`""`: the directory itself), if it exists.
/// Every test that needs the traces finds them through here. When it is absent the test
/// skips (`None`, with a note), except under `CELLCC_REQUIRE_TRACES=1`, where this
/// panics naming the path and the variable.
fn shared_traces_path(rel: &str) -> Option<PathBuf> {
    let dir = PathBuf::from(TRACES_DIR);
    let path = if rel.is_empty() { dir } else { dir.join(rel) };
    if path.exists() {
        return Some(path);
    }
    if std::env::var_os(REQUIRE_TRACES_ENV).is_some_and(|v| v == "1") {
        panic!(
            "shared trace path {} not found, and {REQUIRE_TRACES_ENV}=1 requires the shared \
             traces (unset it to skip the tests that need them)",
            path.display()
        );
    }
    eprintln!("skipping: {} not found", path.display());
    None
}

/// The `.down` traces of the shared Mahimahi set, sorted, or `None` (with a note) when
/// the set is absent. Panics if the folder exists but holds none.
pub(crate) fn down_traces() -> Option<Vec<PathBuf>> {
    traces_with(&["down"])
}

/// The `.down` and `.up` traces of the shared Mahimahi set, sorted, or `None` (with a
/// note) when the set is absent. Panics if the folder exists but holds fewer than the
/// 13 traces of the set.
pub(crate) fn all_traces() -> Option<Vec<PathBuf>> {
    let traces = traces_with(&["down", "up"])?;
    assert!(
        traces.len() >= 13,
        "expected the 13 Mahimahi traces, found {}",
        traces.len()
    );
    Some(traces)
}

fn traces_with(extensions: &[&str]) -> Option<Vec<PathBuf>> {
    let dir = traces_dir()?;
    let mut traces: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension()
                .is_some_and(|x| extensions.iter().any(|e| x == *e))
        })
        .collect();
    traces.sort();
    assert!(!traces.is_empty(), "no traces in {}", dir.display());
    Some(traces)
}

/// The trace of the other direction (`.up` for a `.down` trace and the reverse).
pub(crate) fn partner(trace: &Path) -> PathBuf {
    trace.with_extension(match trace.extension().unwrap().to_str() {
        Some("down") => "up",
        _ => "down",
    })
}
