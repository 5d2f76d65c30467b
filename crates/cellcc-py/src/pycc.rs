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

use cellcc_congestion::{
    AckSample, CaEvent, CaState, CongestionControl, PacingStatus, RateSample, Sock,
};
use cellcc_sim::control::{
    Decision, External, ExternalSchemes, Held, HeldConfig, IntervalClock, IntervalControl,
    IntervalPolicy, IntervalReport,
};
use cellcc_sim::schemes::{self, SchemeError};
use cellcc_units::Dur;

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
pub struct ErrorSlot {
    pub flag: Arc<AtomicBool>,
    err: Mutex<Option<PyErr>>,
}

impl ErrorSlot {
    /// Keep `err` (a `ControlError` whose cause is the user's exception) unless an
    /// earlier failure is kept, and raise the flag that stops the run.
    pub fn fail(&self, err: PyErr) {
        let mut slot = self.err.lock().unwrap_or_else(|e| e.into_inner());
        slot.get_or_insert(err);
        self.flag.store(true, Ordering::Relaxed);
    }

    pub fn take(&self) -> Option<PyErr> {
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

fn ca_state_name(s: CaState) -> &'static str {
    match s {
        CaState::Open => "open",
        CaState::Disorder => "disorder",
        CaState::Cwr => "cwr",
        CaState::Recovery => "recovery",
        CaState::Loss => "loss",
    }
}

fn ca_event_name(e: CaEvent) -> &'static str {
    match e {
        CaEvent::TxStart => "tx_start",
        CaEvent::CwndRestart => "cwnd_restart",
        CaEvent::CompleteCwr => "complete_cwr",
        CaEvent::Loss => "loss",
        CaEvent::EcnNoCe => "ecn_no_ce",
        CaEvent::EcnIsCe => "ecn_is_ce",
    }
}

/// The connection state a Python hook sees (`struct tcp_sock`'s fields that congestion
/// controls use). Times are integers in µs as in Linux (`srtt_us` here is the smoothed
/// RTT itself, not Linux's `srtt_us << 3`); windows in packets; rates in bytes/s.
#[pyclass(name = "Sock", module = "cellcc._core")]
pub struct PySock {
    pub inner: Sock,
}

#[pymethods]
impl PySock {
    /// Payload bytes per full segment (`mss_cache`).
    #[getter]
    fn mss(&self) -> u32 {
        self.inner.mss
    }
    /// `snd_cwnd_clamp`.
    #[getter]
    fn cwnd_clamp(&self) -> u32 {
        self.inner.cwnd_clamp
    }
    /// cwnd saved at the start of the last reduction.
    #[getter]
    fn prior_cwnd(&self) -> u32 {
        self.inner.prior_cwnd
    }
    /// ssthresh saved for undo.
    #[getter]
    fn prior_ssthresh(&self) -> u32 {
        self.inner.prior_ssthresh
    }
    /// Segments sent and not cumulatively acked (`packets_out`).
    #[getter]
    fn packets_out(&self) -> u32 {
        self.inner.packets_out
    }
    #[getter]
    fn sacked_out(&self) -> u32 {
        self.inner.sacked_out
    }
    #[getter]
    fn lost_out(&self) -> u32 {
        self.inner.lost_out
    }
    #[getter]
    fn retrans_out(&self) -> u32 {
        self.inner.retrans_out
    }
    /// Segments delivered (acked or sacked) so far (`delivered`).
    #[getter]
    fn delivered(&self) -> u64 {
        self.inner.delivered
    }
    /// Segments marked lost so far.
    #[getter]
    fn lost(&self) -> u64 {
        self.inner.lost
    }
    /// Oldest unacknowledged segment (in segments).
    #[getter]
    fn snd_una(&self) -> u64 {
        self.inner.snd_una
    }
    /// Next new segment to send (in segments).
    #[getter]
    fn snd_nxt(&self) -> u64 {
        self.inner.snd_nxt
    }
    /// Largest `packets_out` in the last window.
    #[getter]
    fn max_packets_out(&self) -> u32 {
        self.inner.max_packets_out
    }
    /// Non-zero while application-limited (`app_limited`).
    #[getter]
    fn app_limited(&self) -> u64 {
        self.inner.app_limited
    }
    /// `sk_max_pacing_rate`, bytes/s.
    #[getter]
    fn max_pacing_rate(&self) -> u64 {
        self.inner.max_pacing_rate
    }
    /// `CONFIG_HZ`.
    #[getter]
    fn hz(&self) -> u32 {
        self.inner.hz
    }
    /// Current time, µs (`tcp_mstamp`).
    #[getter]
    fn now_us(&self) -> u64 {
        self.inner.now.as_ns() / 1_000
    }
    /// Current time, ns (the simulator's resolution).
    #[getter]
    fn now_ns(&self) -> u64 {
        self.inner.now.as_ns()
    }
    /// `tcp_jiffies32`.
    #[getter]
    fn jiffies(&self) -> u64 {
        self.inner.jiffies()
    }
    /// Smoothed RTT, µs; 0 before the first sample.
    #[getter]
    fn srtt_us(&self) -> u64 {
        self.inner.srtt.as_ns() / 1_000
    }
    /// Windowed minimum RTT, µs; `None` before the first sample.
    #[getter]
    fn min_rtt_us(&self) -> Option<u64> {
        (self.inner.min_rtt != Dur::MAX).then(|| self.inner.min_rtt.as_ns() / 1_000)
    }
    /// When `delivered` last changed, µs.
    #[getter]
    fn delivered_mstamp_us(&self) -> u64 {
        self.inner.delivered_mstamp.as_ns() / 1_000
    }
    /// When the last data segment was sent, µs (`lsndtime`).
    #[getter]
    fn lsndtime_us(&self) -> u64 {
        self.inner.lsndtime.as_ns() / 1_000
    }
    /// `"open"`, `"disorder"`, `"cwr"`, `"recovery"` or `"loss"` (`icsk_ca_state`).
    #[getter]
    fn ca_state(&self) -> &'static str {
        ca_state_name(self.inner.ca_state)
    }
    /// `tcp_packets_in_flight`.
    #[getter]
    fn in_flight(&self) -> u32 {
        self.inner.packets_in_flight()
    }

    /// Congestion window, packets (`snd_cwnd`); at least 1.
    #[getter]
    fn cwnd(&self) -> u32 {
        self.inner.cwnd
    }
    #[setter]
    fn set_cwnd(&mut self, v: u32) -> PyResult<()> {
        if v == 0 {
            return Err(PyValueError::new_err("sock.cwnd must be at least 1 packet"));
        }
        self.inner.cwnd = v;
        Ok(())
    }
    /// Slow-start threshold, packets (`snd_ssthresh`).
    #[getter]
    fn ssthresh(&self) -> u32 {
        self.inner.ssthresh
    }
    #[setter]
    fn set_ssthresh(&mut self, v: u32) -> PyResult<()> {
        if v == 0 {
            return Err(PyValueError::new_err(
                "sock.ssthresh must be at least 1 packet",
            ));
        }
        self.inner.ssthresh = v;
        Ok(())
    }
    /// Linear-increase counter (`snd_cwnd_cnt`).
    #[getter]
    fn cwnd_cnt(&self) -> u32 {
        self.inner.cwnd_cnt
    }
    #[setter]
    fn set_cwnd_cnt(&mut self, v: u32) {
        self.inner.cwnd_cnt = v;
    }
    /// Pacing rate, bytes/s (`sk_pacing_rate`).
    #[getter]
    fn pacing_rate(&self) -> u64 {
        self.inner.pacing_rate
    }
    #[setter]
    fn set_pacing_rate(&mut self, v: u64) {
        self.inner.pacing_rate = v;
    }
    /// Whether the stack paces (`sk_pacing_status == SK_PACING_NEEDED`); set it in
    /// `init` to turn internal pacing on.
    #[getter]
    fn pacing_needed(&self) -> bool {
        self.inner.pacing_status == PacingStatus::Needed
    }
    #[setter]
    fn set_pacing_needed(&mut self, v: bool) {
        self.inner.pacing_status = if v {
            PacingStatus::Needed
        } else {
            PacingStatus::None
        };
    }
    /// Set in `cong_avoid` to enter CWR as `tcp_enter_cwr` would (CDG's backoff).
    #[getter]
    fn cwr_request(&self) -> bool {
        self.inner.cwr_request
    }
    #[setter]
    fn set_cwr_request(&mut self, v: bool) {
        self.inner.cwr_request = v;
    }

    /// `tcp_in_slow_start`: cwnd below ssthresh.
    fn in_slow_start(&self) -> bool {
        self.inner.in_slow_start()
    }
    /// `tcp_is_cwnd_limited`.
    fn is_cwnd_limited(&self) -> bool {
        self.inner.is_cwnd_limited()
    }
    /// `tcp_current_ssthresh`.
    fn current_ssthresh(&self) -> u32 {
        self.inner.current_ssthresh()
    }
    /// `tcp_slow_start`: returns the `acked` left over once cwnd reached ssthresh.
    fn slow_start(&mut self, acked: u32) -> u32 {
        self.inner.slow_start(acked)
    }
    /// `tcp_cong_avoid_ai`: cwnd += acked / w, remainder in `cwnd_cnt`.
    fn cong_avoid_ai(&mut self, w: u32, acked: u32) {
        self.inner.cong_avoid_ai(w, acked)
    }

    fn __repr__(&self) -> String {
        let s = &self.inner;
        format!(
            "Sock(now_us={}, cwnd={}, ssthresh={}, in_flight={}, srtt_us={}, ca_state={:?})",
            s.now.as_ns() / 1_000,
            s.cwnd,
            s.ssthresh,
            s.packets_in_flight(),
            s.srtt.as_ns() / 1_000,
            ca_state_name(s.ca_state)
        )
    }
}

/// Linux's rate sample (`struct rate_sample`) as `cong_control` sees it.
#[pyclass(name = "RateSample", module = "cellcc._core", get_all)]
pub struct PyRateSample {
    /// Segments delivered over `interval_us`.
    delivered: u64,
    /// The sample's interval, µs; `None` when the sample is invalid.
    interval_us: Option<u64>,
    /// RTT of the most recently (S)ACKed segment, µs; `None` when unknown.
    rtt_us: Option<u64>,
    /// Segments marked lost by this ACK.
    losses: u32,
    /// Segments newly acked or sacked by this ACK.
    acked_sacked: u32,
    /// Packets in flight before this ACK.
    prior_in_flight: u32,
    /// Whether the sample was taken while application-limited.
    is_app_limited: bool,
}

impl PyRateSample {
    fn new(rs: &RateSample) -> Self {
        PyRateSample {
            delivered: rs.delivered,
            interval_us: rs.interval.map(|d| d.as_ns() / 1_000),
            rtt_us: rs.rtt.map(|d| d.as_ns() / 1_000),
            losses: rs.losses,
            acked_sacked: rs.acked_sacked,
            prior_in_flight: rs.prior_in_flight,
            is_app_limited: rs.is_app_limited,
        }
    }
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
pub struct PyCc {
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
    pub fn new(
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
        let Some(hook) = pick(&self.hooks).map(|h| Python::attach(|py| h.clone_ref(py))) else {
            return;
        };
        Python::attach(|py| {
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
        let hook = Python::attach(|py| self.hooks.ssthresh.clone_ref(py));
        let mut copy = sock.clone();
        Python::attach(|py| {
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

/// A report of one interval (`cellcc_sim::control::IntervalReport`) in float units:
/// times in ms (`t_s` and `interval_s` in s), rates in bytes/s (`pacing_rate`) and
/// bits/s (`delivery_rate_bps`, `send_rate_bps`). RTT statistics are `None` when the
/// interval had no RTT sample.
#[pyclass(name = "IntervalReport", module = "cellcc._core", frozen)]
pub struct PyReport {
    pub r: IntervalReport,
}

fn ms(d: Option<Dur>) -> Option<f64> {
    d.map(|d| d.as_ns() as f64 / 1e6)
}

fn nan(x: Option<f64>) -> f64 {
    x.unwrap_or(f64::NAN)
}

/// The order of [`PyReport::values`].
pub const REPORT_FIELDS: &[&str] = &[
    "t_s",
    "interval_s",
    "acks",
    "delivered_pkts",
    "acked_pkts",
    "lost_pkts",
    "sent_pkts",
    "retrans_pkts",
    "delivered_bytes",
    "sent_bytes",
    "delivery_rate_bps",
    "goodput_bps",
    "send_rate_bps",
    "rtt_samples",
    "rtt_min_ms",
    "rtt_mean_ms",
    "rtt_max_ms",
    "rtt_first_ms",
    "rtt_last_ms",
    "cwnd",
    "ssthresh",
    "in_flight",
    "pacing_rate",
    "srtt_ms",
    "min_rtt_ms",
];

impl PyReport {
    fn rate_bps(&self, bytes: u64) -> f64 {
        let s = self.r.interval.as_secs_f64();
        if s > 0.0 {
            bytes as f64 * 8.0 / s
        } else {
            0.0
        }
    }
}

#[pymethods]
impl PyReport {
    #[getter]
    fn flow(&self) -> u32 {
        self.r.flow
    }
    #[getter]
    fn t_s(&self) -> f64 {
        self.r.t.as_secs_f64()
    }
    #[getter]
    fn interval_s(&self) -> f64 {
        self.r.interval.as_secs_f64()
    }
    #[getter]
    fn acks(&self) -> u64 {
        self.r.acks
    }
    #[getter]
    fn delivered_pkts(&self) -> u64 {
        self.r.delivered_pkts
    }
    /// Segments newly cumulatively acked (in-order data the application got).
    #[getter]
    fn acked_pkts(&self) -> u64 {
        self.r.acked_pkts
    }
    /// Payload bits cumulatively acked per second of the interval (goodput).
    #[getter]
    fn goodput_bps(&self) -> f64 {
        self.rate_bps(self.r.acked_pkts * u64::from(self.r.mss))
    }
    #[getter]
    fn lost_pkts(&self) -> u64 {
        self.r.lost_pkts
    }
    #[getter]
    fn sent_pkts(&self) -> u64 {
        self.r.sent_pkts
    }
    #[getter]
    fn retrans_pkts(&self) -> u64 {
        self.r.retrans_pkts
    }
    #[getter]
    fn delivered_bytes(&self) -> u64 {
        self.r.delivered_bytes
    }
    #[getter]
    fn sent_bytes(&self) -> u64 {
        self.r.sent_bytes
    }
    /// Payload bits delivered per second of the interval.
    #[getter]
    fn delivery_rate_bps(&self) -> f64 {
        self.rate_bps(self.r.delivered_bytes)
    }
    /// Payload bits sent per second of the interval.
    #[getter]
    fn send_rate_bps(&self) -> f64 {
        self.rate_bps(self.r.sent_bytes)
    }
    #[getter]
    fn rtt_samples(&self) -> u64 {
        self.r.rtt_samples
    }
    #[getter]
    fn rtt_min_ms(&self) -> Option<f64> {
        ms(self.r.rtt_min)
    }
    #[getter]
    fn rtt_mean_ms(&self) -> Option<f64> {
        ms(self.r.rtt_mean)
    }
    #[getter]
    fn rtt_max_ms(&self) -> Option<f64> {
        ms(self.r.rtt_max)
    }
    #[getter]
    fn rtt_first_ms(&self) -> Option<f64> {
        ms(self.r.rtt_first)
    }
    #[getter]
    fn rtt_last_ms(&self) -> Option<f64> {
        ms(self.r.rtt_last)
    }
    #[getter]
    fn cwnd(&self) -> u32 {
        self.r.cwnd
    }
    #[getter]
    fn ssthresh(&self) -> u32 {
        self.r.ssthresh
    }
    #[getter]
    fn in_flight(&self) -> u32 {
        self.r.in_flight
    }
    #[getter]
    fn pacing_rate(&self) -> u64 {
        self.r.pacing_rate
    }
    #[getter]
    fn srtt_ms(&self) -> f64 {
        self.r.srtt.as_ns() as f64 / 1e6
    }
    #[getter]
    fn min_rtt_ms(&self) -> Option<f64> {
        ms(self.r.min_rtt)
    }
    #[getter]
    fn ca_state(&self) -> &'static str {
        ca_state_name(self.r.ca_state)
    }
    #[getter]
    fn mss(&self) -> u32 {
        self.r.mss
    }

    /// Every numeric field as floats, in the order of `IntervalReport.FIELDS` (missing
    /// RTT statistics and `min_rtt_ms` are NaN).
    fn values(&self) -> [f64; 25] {
        let r = &self.r;
        [
            r.t.as_secs_f64(),
            r.interval.as_secs_f64(),
            r.acks as f64,
            r.delivered_pkts as f64,
            r.acked_pkts as f64,
            r.lost_pkts as f64,
            r.sent_pkts as f64,
            r.retrans_pkts as f64,
            r.delivered_bytes as f64,
            r.sent_bytes as f64,
            self.rate_bps(r.delivered_bytes),
            self.rate_bps(r.acked_pkts * u64::from(r.mss)),
            self.rate_bps(r.sent_bytes),
            r.rtt_samples as f64,
            nan(ms(r.rtt_min)),
            nan(ms(r.rtt_mean)),
            nan(ms(r.rtt_max)),
            nan(ms(r.rtt_first)),
            nan(ms(r.rtt_last)),
            f64::from(r.cwnd),
            f64::from(r.ssthresh),
            f64::from(r.in_flight),
            r.pacing_rate as f64,
            r.srtt.as_ns() as f64 / 1e6,
            nan(ms(r.min_rtt)),
        ]
    }

    #[classattr]
    #[allow(non_snake_case)]
    fn FIELDS() -> Vec<&'static str> {
        REPORT_FIELDS.to_vec()
    }

    fn __repr__(&self) -> String {
        format!(
            "IntervalReport(flow={}, t_s={:.6}, delivered_pkts={}, lost_pkts={}, cwnd={}, srtt_ms={:.3})",
            self.r.flow,
            self.r.t.as_secs_f64(),
            self.r.delivered_pkts,
            self.r.lost_pkts,
            self.r.cwnd,
            self.r.srtt.as_ns() as f64 / 1e6
        )
    }
}

/// What a policy (or a gym agent) returned, checked: `None` keeps everything; a number
/// is a window; a mapping or an object has `cwnd` and/or `pacing_rate`.
pub fn decision_from(v: &Bound<'_, PyAny>) -> PyResult<Decision> {
    if v.is_none() {
        return Ok(Decision::default());
    }
    let field = |name: &str| -> PyResult<Option<Bound<'_, PyAny>>> {
        if let Ok(d) = v.cast::<PyDict>() {
            for key in d.keys() {
                let k: String = key.extract()?;
                if k != "cwnd" && k != "pacing_rate" {
                    return Err(PyValueError::new_err(format!(
                        "unknown key {k:?} in the decision; expected cwnd and/or pacing_rate"
                    )));
                }
            }
            return d.get_item(name);
        }
        v.getattr_opt(name)
    };
    let (cwnd, rate) =
        if v.is_instance_of::<pyo3::types::PyInt>() || v.is_instance_of::<pyo3::types::PyFloat>() {
            (Some(v.clone()), None)
        } else {
            let (c, r) = (field("cwnd")?, field("pacing_rate")?);
            if c.is_none() && r.is_none() && !v.is_instance_of::<PyDict>() {
                return Err(PyValueError::new_err(format!(
                    "returned {}; expected None, a window (number), or a dict/object with cwnd \
                 and/or pacing_rate",
                    v.get_type().qualname()?
                )));
            }
            (c, r)
        };
    let number = |x: Option<Bound<'_, PyAny>>, what: &str, min: f64, max: f64| {
        let Some(x) = x.filter(|x| !x.is_none()) else {
            return Ok(None);
        };
        let f: f64 = x.extract().map_err(|_| {
            PyValueError::new_err(format!(
                "{what} is {}, expected a number",
                x.get_type()
                    .qualname()
                    .map(|q| q.to_string())
                    .unwrap_or_default()
            ))
        })?;
        if !(f.is_finite() && f >= min && f <= max) {
            return Err(PyValueError::new_err(format!(
                "{what} = {f}: expected a finite number from {min} to {max}"
            )));
        }
        Ok(Some(f))
    };
    let cwnd = number(cwnd, "cwnd", 1.0, f64::from(u32::MAX))?.map(|w| w as u32);
    let pacing = number(rate, "pacing_rate (bytes/s)", 1.0, 1e15)?.map(|r| r as u64);
    Ok(Decision {
        cwnd,
        pacing_rate: pacing,
    })
}

/// A per-interval policy implemented by a Python object's `on_interval(report)`.
pub struct PyPolicy {
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
pub enum Spec {
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
pub fn resolve(
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
pub fn build_base(
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

/// Builds Python schemes for a run; flows prepared up front (while validating) are
/// taken from `ready`.
pub struct PyFactory {
    pub slot: Arc<ErrorSlot>,
    pub ready: Vec<Option<(String, External)>>,
    /// For a stepped run (gym): the flow without a policy, with its base and clock.
    pub agent: Option<(
        u32,
        Box<dyn Fn() -> Result<IntervalControl, SchemeError> + Send>,
    )>,
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
pub fn prepare(
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
pub fn into_external(
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
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySock>()?;
    m.add_class::<PyRateSample>()?;
    m.add_class::<PyReport>()?;
    Ok(())
}
