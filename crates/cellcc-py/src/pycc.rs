//! Congestion controls written in Python (`docs/python-cc.md`).
//!
//! An external scheme `module.path:Name` is resolved by `cellcc.pycc._build` (Python),
//! which imports the class, instantiates it with the flow's `params` and says which of
//! the two levels it uses:
//!
//! - **per ACK** ([`PyCc`]): the class implements the Linux hooks (`init`, `ssthresh`,
//!   `cong_avoid` or `cong_control`, ...); each call receives a [`PySock`] holding a copy
//!   of the connection state, and what the hook wrote into it is copied back;
//! - **per interval** ([`PyPolicy`]): the class implements `on_interval(report)`; the
//!   simulator folds per-ACK measurements and calls it once per interval
//!   (`cellcc_sim::control`).
//!
//! Runs with Python schemes hold the GIL. The first exception raised by user code, or a
//! value of the wrong type or range, is kept in the run's [`ErrorSlot`] with the class,
//! hook and simulated time; the run stops right after the event and the error is raised
//! with the original exception as its `__cause__`.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use cellcc_congestion::{AckSample, CaEvent, CaState, CongestionControl, RateSample, Sock};
use cellcc_sim::control::{
    Decision, External, ExternalSchemes, Held, HeldConfig, IntervalClock, IntervalControl,
    IntervalPolicy, IntervalReport,
};
use cellcc_sim::schemes::{self, SchemeError};
use cellcc_units::Dur;

use crate::report::{decision_from, PyReport};
use crate::sock::{ca_event_name, ca_state_name, PyRateSample, PySock};
use crate::ControlError;

/// A `&'static str` for a string made at run time, each distinct one leaked once (names
/// and phases of Python schemes; the trait returns `&'static str`). Bounded: beyond
/// [`MAX_INTERNED`] distinct strings, `"other"`.
fn intern(s: &str) -> &'static str {
    static SET: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut set = SET
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(&found) = set.get(s) {
        return found;
    }
    if set.len() >= MAX_INTERNED {
        return "other";
    }
    let leaked: &'static str = Box::leak(s.to_owned().into_boxed_str());
    set.insert(leaked);
    leaked
}

const MAX_INTERNED: usize = 4096;

/// The first failure of user code in a run, shared by every Python scheme of the run.
#[derive(Default)]
pub(crate) struct ErrorSlot {
    pub flag: Arc<AtomicBool>,
    err: Mutex<Option<PyErr>>,
}

impl ErrorSlot {
    /// Keep `err` (a `ControlError` whose cause is the user's exception) unless an
    /// earlier failure is kept, and raise the flag that stops the run.
    pub(crate) fn fail(&self, err: PyErr) {
        let mut slot = self.err.lock().unwrap_or_else(|e| e.into_inner());
        slot.get_or_insert(err);
        self.flag.store(true, Ordering::Relaxed);
    }

    pub(crate) fn take(&self) -> Option<PyErr> {
        self.err.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// `ControlError("<where>: <what>")` with `cause` as `__cause__`. A `KeyboardInterrupt`
/// or `SystemExit` (not an `Exception`) is passed on unchanged: Ctrl-C in a hook that
/// loops stops the run as Ctrl-C.
fn control_error(py: Python<'_>, whence: &str, cause: Option<PyErr>) -> PyErr {
    if let Some(c) = &cause {
        if !c.is_instance_of::<pyo3::exceptions::PyException>(py) {
            return cause.expect("checked above");
        }
    }
    let what = match &cause {
        Some(e) => {
            let ty = e
                .get_type(py)
                .name()
                .map(|n| n.to_string())
                .unwrap_or_else(|_| "Exception".into());
            format!("{ty}: {}", e.value(py))
        }
        None => String::new(),
    };
    let err = ControlError::new_err(format!("{whence}: {what}"));
    if let Some(c) = cause {
        err.set_cause(py, Some(c));
    }
    err
}

/// The Python methods a per-ACK class provides.
struct Hooks {
    init: Option<Py<PyAny>>,
    ssthresh: Py<PyAny>,
    cong_avoid: Option<Py<PyAny>>,
    cong_control: Option<Py<PyAny>>,
    pkts_acked: Option<Py<PyAny>>,
    set_state: Option<Py<PyAny>>,
    cwnd_event: Option<Py<PyAny>>,
    in_ack_event: Option<Py<PyAny>>,
    undo_cwnd: Option<Py<PyAny>>,
    phase: Option<Py<PyAny>>,
    info: Option<Py<PyAny>>,
}

fn method(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Option<Py<PyAny>>> {
    let m = obj.getattr_opt(name)?;
    Ok(m.filter(|m| !m.is_none()).map(|m| m.unbind()))
}

/// A per-ACK congestion control implemented by a Python object.
pub(crate) struct PyCc {
    /// `module:Name` (for error messages).
    path: String,
    label: &'static str,
    flow: u32,
    hooks: Hooks,
    owns: bool,
    sock: Py<PySock>,
    slot: Arc<ErrorSlot>,
    failed: bool,
}

impl std::fmt::Debug for PyCc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PyCc").field("path", &self.path).finish()
    }
}

impl PyCc {
    pub(crate) fn new(
        py: Python<'_>,
        obj: &Bound<'_, PyAny>,
        path: &str,
        flow: u32,
        slot: Arc<ErrorSlot>,
    ) -> PyResult<Self> {
        let ssthresh = method(obj, "ssthresh")?.ok_or_else(|| {
            PyValueError::new_err(format!(
                "{path}: a per-ACK congestion control needs an ssthresh(sock) method \
                 (Linux tcp_validate_congestion_control)"
            ))
        })?;
        let hooks = Hooks {
            init: method(obj, "init")?,
            ssthresh,
            cong_avoid: method(obj, "cong_avoid")?,
            cong_control: method(obj, "cong_control")?,
            pkts_acked: method(obj, "pkts_acked")?,
            set_state: method(obj, "set_state")?,
            cwnd_event: method(obj, "cwnd_event")?,
            in_ack_event: method(obj, "in_ack_event")?,
            undo_cwnd: method(obj, "undo_cwnd")?,
            phase: method(obj, "phase")?,
            info: method(obj, "info")?,
        };
        if hooks.cong_avoid.is_none() && hooks.cong_control.is_none() {
            return Err(PyValueError::new_err(format!(
                "{path}: a per-ACK congestion control needs cong_avoid(sock, acked) or \
                 cong_control(sock, rs) (Linux tcp_validate_congestion_control)"
            )));
        }
        let owns = hooks.cong_control.is_some();
        let label = intern(&obj.get_type().qualname()?.to_string());
        let sock = Py::new(
            py,
            PySock {
                inner: Sock::new(1448, cellcc_units::Time::ZERO),
            },
        )?;
        Ok(PyCc {
            path: path.to_owned(),
            label,
            flow,
            hooks,
            owns,
            sock,
            slot,
            failed: false,
        })
    }

    fn fail(&mut self, py: Python<'_>, hook: &str, now: cellcc_units::Time, e: PyErr) {
        self.failed = true;
        let whence = format!(
            "{}.{hook} (flow {}, t = {:.6} s)",
            self.path,
            self.flow,
            now.as_secs_f64()
        );
        self.slot.fail(control_error(py, &whence, Some(e)));
    }

    /// Call `hook` with the sock copied in and back; `None` if it (or an earlier call)
    /// failed.
    fn call<'py>(
        &mut self,
        py: Python<'py>,
        name: &str,
        hook: &Py<PyAny>,
        sock: &mut Sock,
        args: impl FnOnce(Bound<'py, PySock>) -> PyResult<Bound<'py, PyTuple>>,
    ) -> Option<Bound<'py, PyAny>> {
        if self.failed {
            return None;
        }
        let ps = self.sock.bind(py).clone();
        ps.borrow_mut().inner.clone_from(sock);
        let result = args(ps.clone()).and_then(|a| hook.bind(py).call1(a));
        match result {
            Ok(v) => {
                sock.clone_from(&ps.borrow().inner);
                Some(v)
            }
            Err(e) => {
                self.fail(py, name, sock.now, e);
                None
            }
        }
    }

    fn call_void(
        &mut self,
        name: &str,
        pick: fn(&Hooks) -> Option<&Py<PyAny>>,
        sock: &mut Sock,
        extra: impl for<'py> FnOnce(Python<'py>) -> PyResult<Bound<'py, PyAny>>,
    ) {
        if pick(&self.hooks).is_none() {
            return;
        }
        // One GIL attach per hook call (this runs on every ACK).
        Python::attach(|py| {
            let hook = pick(&self.hooks).expect("checked above").clone_ref(py);
            self.call(py, name, &hook, sock, |ps| {
                let x = extra(py)?;
                if x.is_none() {
                    Ok(PyTuple::new(py, [ps.into_any()])?)
                } else {
                    Ok(PyTuple::new(py, [ps.into_any(), x])?)
                }
            });
        });
    }

    /// A window returned by `ssthresh` or `undo_cwnd`: a positive int.
    fn window(
        &mut self,
        py: Python<'_>,
        hook: &str,
        sock: &Sock,
        v: Option<Bound<'_, PyAny>>,
    ) -> Option<u32> {
        let v = v?;
        match v.extract::<u32>() {
            Ok(w) if w >= 1 => Some(w),
            Ok(_) => {
                let e = PyValueError::new_err("returned 0; a window is at least 1 packet");
                self.fail(py, hook, sock.now, e);
                None
            }
            Err(_) => {
                let e = PyValueError::new_err(format!(
                    "returned {}; expected a window in packets (an int from 1 to 2**32-1)",
                    v.repr().map(|r| r.to_string()).unwrap_or_default()
                ));
                self.fail(py, hook, sock.now, e);
                None
            }
        }
    }
}

impl CongestionControl for PyCc {
    fn name(&self) -> &'static str {
        self.label
    }

    fn init(&mut self, sock: &mut Sock) {
        self.call_void(
            "init",
            |h| h.init.as_ref(),
            sock,
            |py| Ok(py.None().into_bound(py)),
        );
    }

    fn ssthresh(&mut self, sock: &Sock) -> u32 {
        let mut copy = sock.clone();
        Python::attach(|py| {
            let hook = self.hooks.ssthresh.clone_ref(py);
            let v = self.call(py, "ssthresh", &hook, &mut copy, |ps| {
                PyTuple::new(py, [ps.into_any()])
            });
            self.window(py, "ssthresh", sock, v)
        })
        .unwrap_or(sock.ssthresh.min(sock.cwnd).max(2))
    }

    fn cong_avoid(&mut self, sock: &mut Sock, acked: u32) {
        self.call_void(
            "cong_avoid",
            |h| h.cong_avoid.as_ref(),
            sock,
            |py| Ok(acked.into_pyobject(py)?.into_any()),
        );
    }

    fn cong_control(&mut self, sock: &mut Sock, rs: &RateSample) {
        let rs = PyRateSample::new(rs);
        self.call_void(
            "cong_control",
            |h| h.cong_control.as_ref(),
            sock,
            |py| Ok(Bound::new(py, rs)?.into_any()),
        );
    }

    fn owns_cwnd(&self) -> bool {
        self.owns
    }

    fn set_state(&mut self, sock: &mut Sock, new_state: CaState) {
        self.call_void(
            "set_state",
            |h| h.set_state.as_ref(),
            sock,
            |py| Ok(ca_state_name(new_state).into_pyobject(py)?.into_any()),
        );
    }

    fn cwnd_event(&mut self, sock: &mut Sock, event: CaEvent) {
        self.call_void(
            "cwnd_event",
            |h| h.cwnd_event.as_ref(),
            sock,
            |py| Ok(ca_event_name(event).into_pyobject(py)?.into_any()),
        );
    }

    fn in_ack_event(&mut self, sock: &mut Sock, slow_path: bool) {
        self.call_void(
            "in_ack_event",
            |h| h.in_ack_event.as_ref(),
            sock,
            |py| {
                Ok(pyo3::types::PyBool::new(py, slow_path)
                    .to_owned()
                    .into_any())
            },
        );
    }

    fn pkts_acked(&mut self, sock: &mut Sock, sample: &AckSample) {
        let (n, rtt, in_flight) = (
            sample.pkts_acked,
            sample.rtt.map(|r| r.as_ns() / 1_000),
            sample.in_flight,
        );
        self.call_void(
            "pkts_acked",
            |h| h.pkts_acked.as_ref(),
            sock,
            |py| {
                let d = PyDict::new(py);
                d.set_item("pkts_acked", n)?;
                d.set_item("rtt_us", rtt)?;
                d.set_item("in_flight", in_flight)?;
                Ok(d.into_any())
            },
        );
    }

    fn undo_cwnd(&mut self, sock: &Sock) -> u32 {
        let Some(hook) = self.hooks.undo_cwnd.as_ref() else {
            return sock.cwnd.max(sock.prior_cwnd);
        };
        let hook = Python::attach(|py| hook.clone_ref(py));
        let mut copy = sock.clone();
        Python::attach(|py| {
            let v = self.call(py, "undo_cwnd", &hook, &mut copy, |ps| {
                PyTuple::new(py, [ps.into_any()])
            });
            self.window(py, "undo_cwnd", sock, v)
        })
        .unwrap_or(sock.cwnd)
    }

    fn phase(&self) -> &'static str {
        let Some(hook) = self.hooks.phase.as_ref() else {
            return "";
        };
        if self.failed {
            return "";
        }
        Python::attach(|py| {
            let v = hook.bind(py).call0().and_then(|v| v.extract::<String>());
            v.map(|s| intern(&s)).unwrap_or("")
        })
    }

    fn info(&self) -> Vec<(&'static str, f64)> {
        let Some(hook) = self.hooks.info.as_ref() else {
            return Vec::new();
        };
        Python::attach(|py| {
            hook.bind(py)
                .call0()
                .and_then(|v| {
                    v.extract::<Vec<(String, f64)>>().or_else(|_| {
                        let d = v.cast::<PyDict>()?;
                        d.iter()
                            .map(|(k, x)| Ok((k.extract::<String>()?, x.extract::<f64>()?)))
                            .collect()
                    })
                })
                .map(|pairs| pairs.into_iter().map(|(k, x)| (intern(&k), x)).collect())
                .unwrap_or_default()
        })
    }
}

/// A per-interval policy implemented by a Python object's `on_interval(report)`.
pub(crate) struct PyPolicy {
    path: String,
    on_interval: Py<PyAny>,
    slot: Arc<ErrorSlot>,
}

impl IntervalPolicy for PyPolicy {
    fn decide(&mut self, report: &IntervalReport) -> Result<Decision, String> {
        Python::attach(|py| {
            let result = Bound::new(py, PyReport { r: *report })
                .and_then(|r| self.on_interval.bind(py).call1((r,)))
                .and_then(|v| decision_from(&v));
            result.map_err(|e| {
                let whence = format!(
                    "{}.on_interval (flow {}, t = {:.6} s)",
                    self.path,
                    report.flow,
                    report.t.as_secs_f64()
                );
                self.slot.fail(control_error(py, &whence, Some(e)));
                whence
            })
        })
    }
}

/// What `cellcc.pycc._build` says about one external scheme.
pub(crate) enum Spec {
    PerAck(Py<PyAny>),
    Interval {
        obj: Py<PyAny>,
        base: String,
        base_params: toml::Table,
        clock: IntervalClock,
        held: HeldConfig,
    },
}

/// Resolve an external scheme through `cellcc.pycc._build`. Errors are Python
/// exceptions whose message says what is wrong.
pub(crate) fn resolve(
    py: Python<'_>,
    scheme: &str,
    params: &toml::Table,
    flow: u32,
    seed: u64,
) -> PyResult<Spec> {
    let params_json =
        serde_json::to_string(params).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let build = py.import("cellcc.pycc")?.getattr("_build")?;
    let out = build.call1((scheme, params_json, flow, seed))?;
    let kind: String = out.get_item(0)?.extract()?;
    let obj = out.get_item(1)?.unbind();
    if kind == "per_ack" {
        return Ok(Spec::PerAck(obj));
    }
    let base: String = out.get_item(2)?.extract()?;
    let base_params_toml: String = out.get_item(3)?.extract()?;
    let base_params: toml::Table = toml::from_str(&base_params_toml)
        .map_err(|e| PyValueError::new_err(format!("base_params: {e}")))?;
    let interval_s: f64 = out.get_item(4)?.extract()?;
    let per_rtt: bool = out.get_item(5)?.extract()?;
    let cwnd: u32 = out.get_item(6)?.extract()?;
    let pacing: Option<f64> = out.get_item(7)?.extract()?;
    let every = Dur::from_secs_f64(interval_s);
    Ok(Spec::Interval {
        obj,
        base,
        base_params,
        clock: if per_rtt {
            IntervalClock::PerRtt(every)
        } else {
            IntervalClock::Every(every)
        },
        held: HeldConfig {
            cwnd,
            pacing_rate: pacing.map(|r| r as u64),
        },
    })
}

/// The base scheme of per-interval control: `"held"` or a built-in scheme.
pub(crate) fn build_base(
    base: &str,
    params: &toml::Table,
    held: HeldConfig,
    seed: u64,
) -> Result<Box<dyn CongestionControl>, SchemeError> {
    if base == Held::NAME {
        if !params.is_empty() {
            return Err(SchemeError {
                key: "base_params".into(),
                message: "\"held\" takes no parameters (use initial_cwnd and \
                          initial_pacing_rate)"
                    .into(),
            });
        }
        return Ok(Box::new(Held::new(held)));
    }
    schemes::build(base, params, seed).map_err(|e| SchemeError {
        key: format!("base.{}", e.key),
        message: e.message,
    })
}

/// Builds the agent flow's per-interval control (its base scheme, clock, no policy).
pub(crate) type AgentControl = Box<dyn Fn() -> Result<IntervalControl, SchemeError> + Send>;

/// Builds Python schemes for a run; flows prepared up front (while validating) are
/// taken from `ready`.
pub(crate) struct PyFactory {
    pub slot: Arc<ErrorSlot>,
    pub ready: Vec<Option<(String, External)>>,
    /// For a stepped run (gym): the flow without a policy, with its base and clock.
    pub agent: Option<(u32, AgentControl)>,
}

impl ExternalSchemes for PyFactory {
    fn build(
        &mut self,
        flow: u32,
        scheme: &str,
        params: &toml::Table,
        seed: u64,
    ) -> Result<External, SchemeError> {
        if let Some((agent, make)) = &self.agent {
            if *agent == flow {
                return make().map(External::Interval);
            }
        }
        let prepared = self
            .ready
            .get_mut(flow as usize)
            .and_then(Option::take)
            .filter(|(name, _)| name == scheme);
        if let Some((_, external)) = prepared {
            return Ok(external);
        }
        Python::attach(|py| prepare(py, scheme, params, flow, seed, self.slot.clone()))
    }
}

/// Resolve and build one external scheme; errors name the key relative to the flow.
pub(crate) fn prepare(
    py: Python<'_>,
    scheme: &str,
    params: &toml::Table,
    flow: u32,
    seed: u64,
    slot: Arc<ErrorSlot>,
) -> Result<External, SchemeError> {
    let spec = resolve(py, scheme, params, flow, seed).map_err(|e| {
        let key = if e.is_instance_of::<pyo3::exceptions::PyTypeError>(py) {
            "params"
        } else {
            "scheme"
        };
        SchemeError {
            key: key.into(),
            message: e.value(py).to_string(),
        }
    })?;
    into_external(py, spec, scheme, flow, seed, slot)
}

/// Turn a resolved spec into what the simulator runs.
pub(crate) fn into_external(
    py: Python<'_>,
    spec: Spec,
    scheme: &str,
    flow: u32,
    seed: u64,
    slot: Arc<ErrorSlot>,
) -> Result<External, SchemeError> {
    match spec {
        Spec::PerAck(obj) => PyCc::new(py, obj.bind(py), scheme, flow, slot)
            .map(|cc| External::Cc(Box::new(cc)))
            .map_err(|e| SchemeError {
                key: "scheme".into(),
                message: e.value(py).to_string(),
            }),
        Spec::Interval {
            obj,
            base,
            base_params,
            clock,
            held,
        } => {
            let on_interval = obj
                .bind(py)
                .getattr("on_interval")
                .map_err(|e| SchemeError {
                    key: "scheme".into(),
                    message: e.value(py).to_string(),
                })?;
            let base = build_base(&base, &base_params, held, seed)?;
            Ok(External::Interval(IntervalControl {
                base,
                clock,
                policy: Some(Box::new(PyPolicy {
                    path: scheme.to_owned(),
                    on_interval: on_interval.unbind(),
                    slot,
                })),
            }))
        }
    }
}

/// The module's classes.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySock>()?;
    m.add_class::<PyRateSample>()?;
    m.add_class::<PyReport>()?;
    Ok(())
}
