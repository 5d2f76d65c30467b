//! `_core.Stepper`: a run that stops at every interval boundary of one flow so that the
//! caller decides its window and rate (the core of `cellcc.gym`, `docs/gym.md`).

use std::sync::Arc;
use std::time::Instant;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use cellcc_sim::control::{self, Decision, HeldConfig, IntervalClock, IntervalControl};
use cellcc_sim::{Scenario, Simulation, Step};
use cellcc_units::Dur;

use crate::pycc::{self, ErrorSlot};
use crate::report::PyReport;
use crate::{
    guarded, load, output, prepare_flows, run_error, scenario_err, CellccError, ScenarioError,
};

/// One episode: `step()` runs to the agent flow's next interval boundary and returns its
/// report (`None` at the end of the run); `decide(...)` sets the window and/or rate for
/// the next interval; `finish()` returns the run's result dict, as `simulate` does.
#[pyclass(unsendable, module = "cellcc._core")]
pub struct Stepper {
    /// Borrows `*scenario`; dropped first.
    sim: Option<Simulation<'static>>,
    /// Owned (from `Box::into_raw`), freed in `drop` after `sim`.
    scenario: *mut Scenario,
    slot: Arc<ErrorSlot>,
    /// The scenario's name in errors (`source_name`).
    source: String,
    agent: u32,
    started: Instant,
    awaiting: bool,
    done: bool,
}

impl Drop for Stepper {
    fn drop(&mut self) {
        self.sim = None;
        // SAFETY: `scenario` came from `Box::into_raw` in `new` and is freed only here;
        // the only borrow of it (`sim`) was dropped on the line above.
        drop(unsafe { Box::from_raw(self.scenario) });
    }
}

impl Stepper {
    /// [`Stepper::new`] inside its panic guard.
    #[allow(clippy::too_many_arguments)]
    fn create(
        py: Python<'_>,
        scenario: &str,
        base_dir: Option<&str>,
        source_name: &str,
        seed: Option<u64>,
        agent_flow: u32,
        base: &str,
        base_params: &str,
        interval_s: f64,
        per_rtt: bool,
        initial_cwnd: u32,
        initial_pacing_rate: Option<f64>,
    ) -> PyResult<Self> {
        let mut sc = load(scenario, base_dir, source_name).map_err(scenario_err)?;
        if let Some(s) = seed {
            sc.seed = s;
        }
        let bad =
            |key: &str, msg: String| ScenarioError::new_err(format!("{source_name}: {key}: {msg}"));
        let Some(flow) = sc.flows.get(agent_flow as usize) else {
            return Err(bad(
                "agent_flow",
                format!(
                    "is {agent_flow}, but the scenario has {} flows",
                    sc.flows.len()
                ),
            ));
        };
        if !control::is_external(&flow.scheme) {
            return Err(bad(
                &format!("flows[{agent_flow}].scheme"),
                format!(
                    "the agent's flow needs an external name (module:Name), got {:?}",
                    flow.scheme
                ),
            ));
        }
        if !(interval_s.is_finite()
            && interval_s >= 1e-4
            && interval_s <= sc.duration.as_secs_f64())
        {
            return Err(bad(
                "interval_s",
                format!("{interval_s}: expected from 0.0001 s up to the run's duration"),
            ));
        }
        if initial_cwnd == 0 {
            return Err(bad("initial_cwnd", "must be at least 1 packet".into()));
        }
        let pacing = match initial_pacing_rate {
            None => None,
            Some(r) if (1.0..=1e15).contains(&r) => Some(r as u64),
            Some(r) => {
                return Err(bad(
                    "initial_pacing_rate",
                    format!("{r}: expected bytes/s from 1 to 1e15"),
                ))
            }
        };
        let params: toml::Table =
            toml::from_str(base_params).map_err(|e| bad("base_params", e.to_string()))?;
        let held = HeldConfig {
            cwnd: initial_cwnd,
            pacing_rate: pacing,
        };
        let every = Dur::from_secs_f64(interval_s);
        let clock = if per_rtt {
            IntervalClock::PerRtt(every)
        } else {
            IntervalClock::Every(every)
        };
        let agent_seed = cellcc_sim::rng::flow_seed(sc.seed, agent_flow);
        pycc::build_base(base, &params, held, agent_seed).map_err(|e| bad(&e.key, e.message))?;
        let slot = Arc::new(ErrorSlot::default());
        let ready = prepare_flows(py, &sc, source_name, &slot, Some(agent_flow))?;
        let base = base.to_owned();
        let make = move || {
            Ok(IntervalControl {
                base: pycc::build_base(&base, &params, held, agent_seed)?,
                clock,
                policy: None,
            })
        };
        let factory = pycc::PyFactory {
            slot: slot.clone(),
            ready,
            agent: Some((agent_flow, Box::new(make))),
        };
        let scenario = Box::into_raw(Box::new(sc));
        // SAFETY: the box is freed only in `Drop`, after the simulation borrowing it.
        let sc_ref: &'static Scenario = unsafe { &*scenario };
        let mut sim = match Simulation::with_external(sc_ref, Box::new(factory)) {
            Ok(sim) => sim,
            Err(e) => {
                // SAFETY: nothing borrows the scenario any more; it was boxed above.
                drop(unsafe { Box::from_raw(scenario) });
                return Err(ScenarioError::new_err(format!("{source_name}: {e}")));
            }
        };
        sim.abort_on(slot.flag.clone());
        Ok(Stepper {
            sim: Some(sim),
            scenario,
            slot,
            source: source_name.to_owned(),
            agent: agent_flow,
            started: Instant::now(),
            awaiting: false,
            done: false,
        })
    }

    fn sim(&mut self) -> PyResult<&mut Simulation<'static>> {
        self.sim
            .as_mut()
            .ok_or_else(|| CellccError::new_err("this episode is finished; reset the environment"))
    }
}

#[pymethods]
impl Stepper {
    #[new]
    #[pyo3(signature = (
        scenario, *, base_dir=None, source_name="<scenario>", seed=None, agent_flow=0,
        base="held", base_params="", interval_s=0.02, per_rtt=false, initial_cwnd=10,
        initial_pacing_rate=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        scenario: &str,
        base_dir: Option<&str>,
        source_name: &str,
        seed: Option<u64>,
        agent_flow: u32,
        base: &str,
        base_params: &str,
        interval_s: f64,
        per_rtt: bool,
        initial_cwnd: u32,
        initial_pacing_rate: Option<f64>,
    ) -> PyResult<Self> {
        guarded(source_name, || {
            Self::create(
                py,
                scenario,
                base_dir,
                source_name,
                seed,
                agent_flow,
                base,
                base_params,
                interval_s,
                per_rtt,
                initial_cwnd,
                initial_pacing_rate,
            )
        })
    }

    /// Run to the agent flow's next boundary and return the report of the interval that
    /// ended there; `None` when the run reached its end. Without a `decide` call in
    /// between, the window and rate stay as they are.
    fn step(&mut self, py: Python<'_>) -> PyResult<Option<PyReport>> {
        if self.done {
            return Ok(None);
        }
        let mut interrupted: Option<PyErr> = None;
        let mut check = |_fraction: f64| match Python::attach(|py| py.check_signals()) {
            Ok(()) => true,
            Err(e) => {
                interrupted = Some(e);
                false
            }
        };
        let slot = self.slot.clone();
        let source = self.source.clone();
        let step = guarded(&source, || Ok(self.sim()?.step(&mut check)));
        self.awaiting = false;
        let step = step.inspect_err(|_| self.sim = None)?;
        match step {
            Ok(Step::Decide(r)) => {
                debug_assert_eq!(r.flow, self.agent, "only the agent's flow has no policy");
                self.awaiting = true;
                Ok(Some(PyReport { r }))
            }
            Ok(Step::Done) => {
                self.done = true;
                Ok(None)
            }
            Err(e) => {
                self.sim = None;
                Err(run_error(py, e, &slot, interrupted))
            }
        }
    }

    /// The window (packets) and/or pacing rate (bytes/s) from now to the next boundary.
    #[pyo3(signature = (cwnd=None, pacing_rate=None))]
    fn decide(&mut self, cwnd: Option<f64>, pacing_rate: Option<f64>) -> PyResult<()> {
        if !self.awaiting {
            return Err(CellccError::new_err(
                "decide() without a pending report: call step() first",
            ));
        }
        let check = |x: Option<f64>, what: &str, max: f64| match x {
            None => Ok(None),
            Some(v) if v.is_finite() && v >= 1.0 && v <= max => Ok(Some(v)),
            Some(v) => Err(PyValueError::new_err(format!(
                "{what} = {v}: expected a finite number from 1 to {max}"
            ))),
        };
        let decision = Decision {
            cwnd: check(cwnd, "cwnd", f64::from(u32::MAX))?.map(|w| w as u32),
            pacing_rate: check(pacing_rate, "pacing_rate (bytes/s)", 1e15)?.map(|r| r as u64),
        };
        let agent = self.agent;
        self.sim()?
            .decide(agent, decision)
            .map_err(|e| crate::ControlError::new_err(e.to_string()))?;
        self.awaiting = false;
        Ok(())
    }

    /// The finished run's result (the dict `simulate` returns).
    fn finish(&mut self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if !self.done {
            return Err(CellccError::new_err(
                "the episode has not reached its end: step() until it returns None",
            ));
        }
        let sim = self
            .sim
            .take()
            .ok_or_else(|| CellccError::new_err("finish() was already called"))?;
        let out = guarded(&self.source, || Ok(sim.finish()))?;
        // SAFETY: see `Drop`; `sim` (the borrow) is gone.
        let sc = unsafe { &*self.scenario };
        output(py, sc, out, self.started.elapsed().as_secs_f64())
    }

    /// Whether the run reached its end.
    #[getter]
    fn done(&self) -> bool {
        self.done
    }
}
