//! `cellcc._core`: the thin Python binding of the simulator.
//!
//! This crate only converts: scenario text in, plain Python dicts and lists out, and Rust
//! errors mapped to the Python exceptions declared in `python/cellcc/_core.pyi`. Runs
//! release the GIL and poll for Ctrl-C between batches of events; runs with congestion
//! controls written in Python (`pycc`) hold it.

mod parquet;
mod pycc;
mod report;
mod sock;
mod stepper;

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyKeyboardInterrupt, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use cellcc_link::synth::{self, SynthConfig};
use cellcc_link::Trace;
use cellcc_sim::control::{self, External};
use cellcc_sim::{RunError, Scenario, SimOutput, Simulation};

// The module path is the one the classes are importable from, so that the exceptions
// pickle (process pools, Ray) with their message.
create_exception!(
    cellcc._core,
    CellccError,
    PyException,
    "Base class of every error raised by the native core; raised as itself for an internal error (a panic of the core, caught at the binding)."
);
create_exception!(
    cellcc._core,
    ScenarioError,
    CellccError,
    "A scenario is invalid."
);
create_exception!(
    cellcc._core,
    TraceError,
    CellccError,
    "A trace file is invalid."
);
create_exception!(
    cellcc._core,
    ControlError,
    CellccError,
    "Congestion-control code written in Python failed or returned an invalid value."
);

fn scenario_err(e: cellcc_sim::ScenarioError) -> PyErr {
    ScenarioError::new_err(e.to_string())
}

/// Run `f`, turning a panic (a bug in the core: user input is checked before it can
/// reach one) into a `CellccError` naming `what`, the scenario or file at hand, instead
/// of pyo3's `PanicException`, which is a `BaseException` and does not pickle.
pub(crate) fn guarded<T>(what: &str, f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        Err(CellccError::new_err(format!(
            "{what}: internal error, please report it with this input: {}",
            message.replace('\n', " ")
        )))
    })
}

fn to_py(py: Python<'_>, v: &serde_json::Value) -> PyResult<Py<PyAny>> {
    // One JSON round trip keeps this binding free of per-type conversion code.
    let text = serde_json::to_string(v).map_err(|e| CellccError::new_err(e.to_string()))?;
    Ok(py.import("json")?.call_method1("loads", (text,))?.unbind())
}

fn load(
    scenario: &str,
    base_dir: Option<&str>,
    source_name: &str,
) -> Result<Scenario, cellcc_sim::ScenarioError> {
    Scenario::parse(scenario, source_name, base_dir.map(Path::new))
}

/// Whether any flow or short-flow source names an external (Python) scheme.
fn has_external(sc: &Scenario) -> bool {
    sc.flows.iter().any(|f| control::is_external(&f.scheme))
        || sc
            .background
            .iter()
            .any(|b| control::is_external(&b.scheme))
}

/// Resolve and build the external schemes of the scenario's flows before the run, so
/// that an import error or a bad parameter is a `ScenarioError` naming the flow.
fn prepare_flows(
    py: Python<'_>,
    sc: &Scenario,
    source_name: &str,
    slot: &Arc<pycc::ErrorSlot>,
    skip: Option<u32>,
) -> PyResult<Vec<Option<(String, External)>>> {
    let mut ready = Vec::with_capacity(sc.flows.len());
    for (i, f) in sc.flows.iter().enumerate() {
        if !control::is_external(&f.scheme) || skip == Some(i as u32) {
            ready.push(None);
            continue;
        }
        let seed = cellcc_sim::rng::flow_seed(sc.seed, i as u32);
        let built =
            pycc::prepare(py, &f.scheme, &f.params, i as u32, seed, slot.clone()).map_err(|e| {
                ScenarioError::new_err(format!(
                    "{source_name}: flows[{i}].{}: {}",
                    e.key, e.message
                ))
            })?;
        ready.push(Some((f.scheme.clone(), built)));
    }
    Ok(ready)
}

/// The error a run that stopped early raises.
fn run_error(
    py: Python<'_>,
    e: RunError,
    slot: &pycc::ErrorSlot,
    interrupted: Option<PyErr>,
) -> PyErr {
    match e {
        RunError::Cancelled => {
            interrupted.unwrap_or_else(|| PyKeyboardInterrupt::new_err("simulation cancelled"))
        }
        RunError::Invalid(_) => ScenarioError::new_err(e.to_string()),
        RunError::Aborted | RunError::Control(_) => match slot.take() {
            Some(err) => err,
            None => {
                let _ = py;
                ControlError::new_err(e.to_string())
            }
        },
    }
}

/// Run one scenario given as TOML text (see `_core.pyi`).
#[pyfunction]
#[pyo3(signature = (scenario, *, base_dir=None, source_name="<scenario>", seed=None, progress=None))]
fn simulate(
    py: Python<'_>,
    scenario: &str,
    base_dir: Option<&str>,
    source_name: &str,
    seed: Option<u64>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Py<PyAny>> {
    guarded(source_name, || {
        simulate_guarded(py, scenario, base_dir, source_name, seed, progress)
    })
}

/// [`simulate`] inside its panic guard.
fn simulate_guarded(
    py: Python<'_>,
    scenario: &str,
    base_dir: Option<&str>,
    source_name: &str,
    seed: Option<u64>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Py<PyAny>> {
    let mut sc = load(scenario, base_dir, source_name).map_err(scenario_err)?;
    if let Some(s) = seed {
        sc.seed = s;
    }
    let started = Instant::now();
    let mut interrupted: Option<PyErr> = None;
    let mut check = |fraction: f64| {
        // Between batches of events: honour Ctrl-C and report progress.
        let check = Python::attach(|py| {
            py.check_signals()?;
            if let Some(cb) = progress.as_ref() {
                cb.call1(py, (fraction,))?;
            }
            Ok::<(), PyErr>(())
        });
        match check {
            Ok(()) => true,
            Err(e) => {
                interrupted = Some(e);
                false
            }
        }
    };
    let slot = Arc::new(pycc::ErrorSlot::default());
    let result = if has_external(&sc) {
        // Python schemes run inside the loop: keep the GIL for the whole run.
        let ready = prepare_flows(py, &sc, source_name, &slot, None)?;
        let factory = pycc::PyFactory {
            slot: slot.clone(),
            ready,
            agent: None,
        };
        Simulation::with_external(&sc, Box::new(factory)).and_then(|mut sim| {
            sim.abort_on(slot.flag.clone());
            sim.run(&mut check)
        })
    } else {
        py.detach(|| Simulation::new(&sc).and_then(|sim| sim.run(&mut check)))
    };
    let out = result.map_err(|e| run_error(py, e, &slot, interrupted.take()))?;
    output(py, &sc, out, started.elapsed().as_secs_f64())
}

/// A finished run as the dict `_core.pyi` documents.
fn output(py: Python<'_>, sc: &Scenario, out: SimOutput, wall_s: f64) -> PyResult<Py<PyAny>> {
    // Per-ACK records as columns (flow, arrival time, RTT sample or null).
    let acks = out.ack_log.as_ref().map(|log| {
        serde_json::json!({
            "flow": log.iter().map(|a| a.flow).collect::<Vec<_>>(),
            "t_s": log.iter().map(|a| a.t.as_secs_f64()).collect::<Vec<_>>(),
            "rtt_ms": log
                .iter()
                .map(|a| a.rtt.map(|r| r.as_ns() as f64 / 1e6))
                .collect::<Vec<_>>(),
        })
    });
    let short_flows = serde_json::json!({
        "background": out.short_flows.iter().map(|f| f.background).collect::<Vec<_>>(),
        "start_s": out.short_flows.iter().map(|f| f.start.as_secs_f64()).collect::<Vec<_>>(),
        "bytes": out.short_flows.iter().map(|f| f.bytes).collect::<Vec<_>>(),
        "completion_s": out
            .short_flows
            .iter()
            .map(|f| f.completed.map(|c| c.saturating_since(f.start).as_secs_f64()))
            .collect::<Vec<_>>(),
    });
    let cc_info: Vec<serde_json::Value> = out
        .cc_info
        .iter()
        .map(|c| {
            let mut m = serde_json::Map::new();
            m.insert("flow".into(), c.flow.into());
            m.insert("phase".into(), c.phase.into());
            for (k, v) in &c.values {
                m.insert((*k).into(), serde_json::json!(v));
            }
            serde_json::Value::Object(m)
        })
        .collect();
    let value = serde_json::json!({
        "short_flows": short_flows,
        "cc_info": cc_info,
        "acks": acks,
        "summary": out.summary,
        "timeseries": out.timeseries,
        "link": out.link,
        "meta": {
            "name": sc.name,
            "seed": sc.seed,
            "duration_s": sc.duration.as_secs_f64(),
            "events": out.events,
            "wall_s": wall_s,
            "version": env!("CARGO_PKG_VERSION"),
        },
    });
    let dict = to_py(py, &value)?;
    let d = dict.bind(py).cast::<PyDict>()?;
    d.set_item("packet_log", out.packet_log)?;
    Ok(dict)
}

/// Parse and check a scenario (including its traces) without running it.
///
/// External (Python) schemes of the flows are imported and instantiated with their
/// parameters, so that errors show here.
#[pyfunction]
#[pyo3(signature = (scenario, *, base_dir=None, source_name="<scenario>"))]
fn validate_scenario(
    py: Python<'_>,
    scenario: &str,
    base_dir: Option<&str>,
    source_name: &str,
) -> PyResult<()> {
    guarded(source_name, || {
        let sc = load(scenario, base_dir, source_name).map_err(scenario_err)?;
        if has_external(&sc) {
            let slot = Arc::new(pycc::ErrorSlot::default());
            prepare_flows(py, &sc, source_name, &slot, None)?;
        }
        Ok(())
    })
}

/// Statistics of a Mahimahi trace.
#[pyfunction]
fn trace_info(py: Python<'_>, path: &str) -> PyResult<Py<PyAny>> {
    guarded(path, || {
        let trace =
            Trace::from_file(Path::new(path)).map_err(|e| TraceError::new_err(e.to_string()))?;
        let stats = trace.stats();
        let value =
            serde_json::to_value(&stats).map_err(|e| CellccError::new_err(e.to_string()))?;
        to_py(py, &value)
    })
}

/// Timestamps (ms) of a Mahimahi trace as little-endian `u32`s, one per line.
#[pyfunction]
fn trace_timestamps<'py>(py: Python<'py>, path: &str) -> PyResult<Bound<'py, PyBytes>> {
    guarded(path, || {
        let trace =
            Trace::from_file(Path::new(path)).map_err(|e| TraceError::new_err(e.to_string()))?;
        Ok(PyBytes::new(py, &le_bytes(trace.timestamps_ms())))
    })
}

/// A synthetic trace (`cellcc_link::synth`) from its configuration as JSON text: the
/// timestamps (ms) as little-endian `u32`s. Configuration errors raise `ValueError`
/// naming the key.
#[pyfunction]
fn synth_trace<'py>(
    py: Python<'py>,
    config_json: &str,
    seed: u64,
) -> PyResult<Bound<'py, PyBytes>> {
    guarded("synthetic trace", || {
        let config: SynthConfig =
            serde_json::from_str(config_json).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let trace = py
            .detach(|| synth::generate(&config, seed))
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(PyBytes::new(py, &le_bytes(trace.timestamps_ms())))
    })
}

fn le_bytes(timestamps: &[u32]) -> Vec<u8> {
    timestamps.iter().flat_map(|t| t.to_le_bytes()).collect()
}

/// Names of the congestion controls the simulator knows.
#[pyfunction]
fn schemes() -> Vec<&'static str> {
    cellcc_sim::schemes::names()
}

/// Every scheme with its source, documentation page and parameters, as JSON: a list of
/// `{name, description, source, doc, params: [{key, default, kind}]}` where `kind` is
/// `value` (with `default` a TOML value), `unset`, `required`, `flow_seed` or `fixed`.
#[pyfunction]
fn scheme_info() -> String {
    use cellcc_sim::schemes::{ParamDefault, SCHEMES};
    let list: Vec<serde_json::Value> = SCHEMES
        .iter()
        .map(|s| {
            let params: Vec<serde_json::Value> = s
                .params()
                .into_iter()
                .map(|p| {
                    let (kind, default) = match p.default {
                        ParamDefault::Value(v) => ("value", Some(v)),
                        ParamDefault::Fixed(v) => ("fixed", Some(v)),
                        ParamDefault::Unset => ("unset", None),
                        ParamDefault::Required => ("required", None),
                        ParamDefault::FlowSeed => ("flow_seed", None),
                    };
                    serde_json::json!({
                        "key": p.key,
                        "kind": kind,
                        "default": default.map(|v| v.to_string()),
                    })
                })
                .collect();
            serde_json::json!({
                "name": s.name,
                "description": s.description,
                "source": s.source,
                "doc": format!("docs/algorithms/{}", s.doc),
                "params": params,
            })
        })
        .collect();
    serde_json::Value::Array(list).to_string()
}

/// The native core of `cellcc`: runs scenarios, validates them, reads and synthesises
/// traces, and lists the registered schemes.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("CellccError", py.get_type::<CellccError>())?;
    m.add("ScenarioError", py.get_type::<ScenarioError>())?;
    m.add("TraceError", py.get_type::<TraceError>())?;
    m.add("ControlError", py.get_type::<ControlError>())?;
    pycc::register(m)?;
    m.add_class::<stepper::Stepper>()?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(validate_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(trace_info, m)?)?;
    m.add_function(wrap_pyfunction!(trace_timestamps, m)?)?;
    m.add_function(wrap_pyfunction!(synth_trace, m)?)?;
    m.add_function(wrap_pyfunction!(schemes, m)?)?;
    m.add_function(wrap_pyfunction!(scheme_info, m)?)?;
    m.add_function(wrap_pyfunction!(parquet::encode_parquet, m)?)?;
    Ok(())
}
