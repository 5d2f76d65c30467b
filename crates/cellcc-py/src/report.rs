//! Interval reports as Python sees them, and decisions read back from Python
//! (`docs/python-cc.md`, per-interval control).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use cellcc_sim::control::{Decision, IntervalReport};
use cellcc_units::Dur;

use crate::sock::ca_state_name;

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
pub(crate) const REPORT_FIELDS: &[&str] = &[
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
pub(crate) fn decision_from(v: &Bound<'_, PyAny>) -> PyResult<Decision> {
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
