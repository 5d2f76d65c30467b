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

/// The shared Mahimahi traces, or `None` (with a note) when they are absent.
pub(crate) fn traces_dir() -> Option<PathBuf> {
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
