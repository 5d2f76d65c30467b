//! Helpers shared by the scenario-level test files (`mod common;` in each).
//!
//! Set `CELLCC_TEST_PLOTS=DIR` to also write each run's time series as JSON columns into
//! DIR, so a failing test is one step away from a picture.

#![allow(dead_code)] // each test file uses its own subset

use std::path::PathBuf;

use cellcc_sim::{run, Scenario, SimOutput};

/// Every data packet and every ACK sent was delivered, dropped or is still in the
/// network, exactly once.
pub(crate) fn conserved(out: &SimOutput) {
    let c = out.conservation;
    assert_eq!(
        c.data_sent,
        c.data_delivered + c.data_dropped + c.data_in_network,
        "{c:?}"
    );
    assert_eq!(
        c.acks_sent,
        c.acks_delivered + c.acks_dropped + c.acks_in_network,
        "{c:?}"
    );
}

/// Parse `text` (named `name` in errors) and run it; panics with the loader's message.
pub(crate) fn simulate(name: &str, text: &str) -> SimOutput {
    let sc = Scenario::parse(text, name, None).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let out = run(&sc);
    write_plot(name, &out);
    out
}

/// Write `out`'s time series to `$CELLCC_TEST_PLOTS/<name>.json` when that is set.
pub(crate) fn write_plot(name: &str, out: &SimOutput) {
    if let Some(dir) = std::env::var_os("CELLCC_TEST_PLOTS") {
        let path = PathBuf::from(dir).join(format!("{name}.json"));
        std::fs::write(path, serde_json::to_string(&out.timeseries).unwrap()).unwrap();
    }
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
    let dir = traces_dir()?;
    let mut traces: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "down"))
        .collect();
    traces.sort();
    assert!(!traces.is_empty(), "no .down traces in {}", dir.display());
    Some(traces)
}
