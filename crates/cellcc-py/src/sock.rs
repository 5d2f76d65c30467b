//! The connection state and rate sample that per-ACK Python hooks receive
//! (`docs/python-cc.md`).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use cellcc_congestion::{CaEvent, CaState, PacingStatus, RateSample, Sock};
use cellcc_units::Dur;

pub(crate) fn ca_state_name(s: CaState) -> &'static str {
    match s {
        CaState::Open => "open",
        CaState::Disorder => "disorder",
        CaState::Cwr => "cwr",
        CaState::Recovery => "recovery",
        CaState::Loss => "loss",
    }
}

pub(crate) fn ca_event_name(e: CaEvent) -> &'static str {
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
pub(crate) struct PyRateSample {
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
    pub(crate) fn new(rs: &RateSample) -> Self {
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
