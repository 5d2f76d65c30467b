//! The cell's configuration: the scenario form ([`CellConfig`], serde) and the built
//! form with traces loaded ([`CellSpec`]), their validation and error type.

use std::sync::Arc;

use cellcc_units::{Bandwidth, Dur};
use serde::{Deserialize, Serialize};

use super::{SchedulerKind, UeChannel};
use crate::discipline::{QueueSpec, QueueSpecError};
use crate::trace::{Trace, TraceError, TraceMode};

/// The LTE TTI: one 1 ms subframe (3GPP TS 36.211 §4).
pub const LTE_TTI: Dur = Dur::from_ms(1);
/// An NR slot at 30 kHz subcarrier spacing, μ = 1: 0.5 ms (3GPP TS 38.211 §4.3.2).
pub const NR_TTI_30KHZ: Dur = Dur::from_us(500);
/// Default PF time constant t_c, in TTIs: 100 ms of memory at 1 ms TTIs, the order of
/// the window of ns-3 LENA's PF scheduler (99 TTIs) used by the LTE study.
pub const DEFAULT_PF_TC_TTIS: f64 = 100.0;
/// Shortest TTI accepted: 5G's shortest common slot (62.5 µs at 240 kHz subcarrier
/// spacing, TS 38.211 Table 4.3.2-1). A shorter TTI models no radio and costs a scheduling
/// decision over every UE each TTI (1 µs with 1000 UEs: 10^9 per simulated second).
const MIN_TTI: Dur = Dur(62_500);
/// Longest TTI accepted: a sanity bound (a TTI of seconds is a configuration mistake).
const MAX_TTI: Dur = Dur::from_secs(1);
/// Nanoseconds per millisecond as a float, for reading `tti_ms`.
const NS_PER_MS_F64: f64 = 1e6;

fn default_tti_ms() -> f64 {
    LTE_TTI.as_ms_f64()
}

fn default_pf_tc_ttis() -> f64 {
    DEFAULT_PF_TC_TTIS
}

/// A cell as a scenario writes it (`[cell]` with `[[cell.ues]]`). Unknown keys are
/// errors; [`CellConfig::validate`] names the offending field.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellConfig {
    /// `"rr"`, `"pf"` (default) or `"max-throughput"`.
    #[serde(default)]
    pub scheduler: SchedulerKind,
    /// TTI length in ms, rounded to the nanosecond: 1 (LTE, default) or 0.5 (NR at
    /// 30 kHz). Between 0.001 and 1000.
    #[serde(default = "default_tti_ms")]
    pub tti_ms: f64,
    /// PF's averaging time constant t_c, in TTIs (default 100, at least 1). Ignored by
    /// the other schedulers.
    #[serde(default = "default_pf_tc_ttis")]
    pub pf_tc_ttis: f64,
    /// The UEs, in index order; at least one.
    pub ues: Vec<UeConfig>,
}

/// Most UEs a cell may hold: UE indices travel as 16 bits in the simulator's events,
/// far above any cell the papers model (a handful of UEs).
pub(super) const MAX_UES: usize = 4096;

/// One UE of a [`CellConfig`]: its channel (exactly one of `trace`, `rate_mbps`) and
/// its queue at the base station.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UeConfig {
    /// Mahimahi trace giving the UE's channel; the caller resolves and reads the path.
    #[serde(default)]
    pub trace: Option<String>,
    /// `"loop"` (default) or `"once"`, as for a trace link.
    #[serde(default)]
    pub mode: TraceMode,
    /// Start this many ms into the trace (default 0), so UEs sharing a trace fade
    /// independently.
    #[serde(default)]
    pub offset_ms: u64,
    /// Constant channel rate in Mbit/s instead of a trace.
    #[serde(default)]
    pub rate_mbps: Option<f64>,
    /// Queue discipline at the base station (default infinite).
    #[serde(default)]
    pub queue: QueueSpec,
}

/// A cell ready to build: configuration with the traces loaded.
#[derive(Clone, Debug)]
pub struct CellSpec {
    /// How the cell shares each TTI among the UEs.
    pub scheduler: SchedulerKind,
    /// TTI length (between 1 µs and 1 s).
    pub tti: Dur,
    /// PF's t_c in TTIs (>= 1).
    pub pf_tc_ttis: f64,
    /// The UEs, in index order; at least one.
    pub ues: Vec<UeSpec>,
}

/// One UE of a [`CellSpec`].
#[derive(Clone, Debug)]
pub struct UeSpec {
    /// What the UE could receive per TTI if scheduled alone.
    pub channel: UeChannel,
    /// The UE's queue discipline at the base station.
    pub queue: QueueSpec,
}

/// A cell that cannot be built; `field` paths are relative to the cell's table.
#[derive(Debug, thiserror::Error)]
pub enum CellError {
    /// A value is out of range or inconsistent.
    #[error("{field}: {reason}")]
    Invalid {
        /// Path of the offending field (`tti_ms`, `ues[2].rate_mbps`).
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A UE's queue discipline is invalid.
    #[error("ues[{ue}].queue: {source}")]
    Queue {
        /// Index of the UE.
        ue: usize,
        /// What is wrong with the queue.
        #[source]
        source: QueueSpecError,
    },
    /// A UE's trace could not be read or parsed.
    #[error("ues[{ue}].trace: {source}")]
    Trace {
        /// Index of the UE.
        ue: usize,
        /// What is wrong with the trace.
        #[source]
        source: TraceError,
    },
}

impl CellError {
    fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        CellError::Invalid {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// The key path of the offending field, e.g. `ues[2].rate_mbps`.
    pub fn field(&self) -> String {
        match self {
            CellError::Invalid { field, .. } => field.clone(),
            CellError::Queue { ue, .. } => format!("ues[{ue}].queue"),
            CellError::Trace { ue, .. } => format!("ues[{ue}].trace"),
        }
    }
}

impl CellConfig {
    /// The TTI, after checking `tti_ms`.
    pub fn tti(&self) -> Result<Dur, CellError> {
        let ns = self.tti_ms * NS_PER_MS_F64;
        let range = MIN_TTI.as_ms_f64()..=MAX_TTI.as_ms_f64();
        if !self.tti_ms.is_finite() || !range.contains(&self.tti_ms) {
            return Err(CellError::invalid(
                "tti_ms",
                format!(
                    "{} is outside {}..={} ms; use 1 for LTE or 0.5 for NR at 30 kHz",
                    self.tti_ms,
                    range.start(),
                    range.end()
                ),
            ));
        }
        Ok(Dur(ns.round() as u64))
    }

    /// Checks every field that does not need the traces.
    pub fn validate(&self) -> Result<(), CellError> {
        self.tti()?;
        check_tc(self.pf_tc_ttis)?;
        if self.ues.is_empty() {
            return Err(CellError::invalid(
                "ues",
                "a cell needs at least one UE: add a [[cell.ues]] table",
            ));
        }
        if self.ues.len() > MAX_UES {
            return Err(CellError::invalid(
                "ues",
                format!("a cell holds at most {MAX_UES} UEs, not {}", self.ues.len()),
            ));
        }
        for (i, ue) in self.ues.iter().enumerate() {
            match (&ue.trace, ue.rate_mbps) {
                (Some(_), Some(_)) | (None, None) => {
                    return Err(CellError::invalid(
                        format!("ues[{i}]"),
                        "give exactly one of `trace` (a Mahimahi trace) and `rate_mbps`",
                    ))
                }
                (None, Some(mbps)) => {
                    if ue.offset_ms != 0 {
                        return Err(CellError::invalid(
                            format!("ues[{i}].offset_ms"),
                            "applies to trace channels only; remove it",
                        ));
                    }
                    check_rate(i, mbps)?;
                }
                (Some(_), None) => {}
            }
            ue.queue
                .validate()
                .map_err(|source| CellError::Queue { ue: i, source })?;
        }
        Ok(())
    }

    /// Validates, then loads each UE's trace with `load_trace(ue, path)` (the caller
    /// resolves relative paths and does the I/O).
    pub fn to_spec(
        &self,
        mut load_trace: impl FnMut(usize, &str) -> Result<Arc<Trace>, TraceError>,
    ) -> Result<CellSpec, CellError> {
        self.validate()?;
        let mut ues = Vec::with_capacity(self.ues.len());
        for (i, ue) in self.ues.iter().enumerate() {
            let channel = match (&ue.trace, ue.rate_mbps) {
                (Some(path), _) => UeChannel::Trace {
                    trace: load_trace(i, path)
                        .map_err(|source| CellError::Trace { ue: i, source })?,
                    mode: ue.mode,
                    offset: Dur::from_ms(ue.offset_ms),
                },
                (None, Some(mbps)) => UeChannel::constant(Bandwidth::from_mbps(mbps)),
                (None, None) => unreachable!("validate() requires a trace or a rate"),
            };
            ues.push(UeSpec {
                channel,
                queue: ue.queue.clone(),
            });
        }
        Ok(CellSpec {
            scheduler: self.scheduler,
            tti: self.tti()?,
            pf_tc_ttis: self.pf_tc_ttis,
            ues,
        })
    }
}

fn check_tc(tc: f64) -> Result<(), CellError> {
    if tc.is_finite() && tc >= 1.0 {
        Ok(())
    } else {
        Err(CellError::invalid(
            "pf_tc_ttis",
            format!("{tc} must be a number of TTIs >= 1 (100 averages over ~100 TTIs)"),
        ))
    }
}

fn check_rate(ue: usize, mbps: f64) -> Result<(), CellError> {
    if mbps.is_finite() && Bandwidth::from_mbps(mbps).bits_per_sec > 0 && mbps > 0.0 {
        Ok(())
    } else {
        Err(CellError::invalid(
            format!("ues[{ue}].rate_mbps"),
            format!("{mbps} is not a positive rate in Mbit/s"),
        ))
    }
}

impl CellSpec {
    /// A cell with PF's default time constant.
    pub fn new(scheduler: SchedulerKind, tti: Dur, ues: Vec<UeSpec>) -> Self {
        CellSpec {
            scheduler,
            tti,
            pf_tc_ttis: DEFAULT_PF_TC_TTIS,
            ues,
        }
    }

    /// Check the TTI, PF's time constant and every UE (a constant rate above 0, a valid
    /// queue); the error names the field.
    pub fn validate(&self) -> Result<(), CellError> {
        if !(MIN_TTI..=MAX_TTI).contains(&self.tti) {
            return Err(CellError::invalid(
                "tti_ms",
                format!("{} is outside {MIN_TTI}..={MAX_TTI}", self.tti),
            ));
        }
        check_tc(self.pf_tc_ttis)?;
        if self.ues.is_empty() {
            return Err(CellError::invalid("ues", "a cell needs at least one UE"));
        }
        for (i, ue) in self.ues.iter().enumerate() {
            if let UeChannel::Constant { rate } = ue.channel {
                if rate.bits_per_sec == 0 {
                    return Err(CellError::invalid(
                        format!("ues[{i}].rate_mbps"),
                        "the rate is 0 bit/s, so nothing would ever be sent",
                    ));
                }
            }
            ue.queue
                .validate()
                .map_err(|source| CellError::Queue { ue: i, source })?;
        }
        Ok(())
    }
}

impl UeSpec {
    /// A UE with this channel and queue.
    pub fn new(channel: UeChannel, queue: QueueSpec) -> Self {
        UeSpec { channel, queue }
    }
}
