//! Piecewise-constant rate traces: a constant link, and ccBench-style step changes.
//!
//! Source: ccBench (Soheil-ab/ccBench, arXiv 2307.10054), `solo_runall.sh` link dynamics
//! "constant, 2×/4× step up, 2×/4× step down every 7 s after a 10 s warm-up", and its
//! trace files `wiredN-Fx-{u,d}-7s-plus-10`. The published `wired12-2x-u-7s-plus-10`
//! (38 s) has one line per ms (12 Mbit/s) at 11.6–14.3 s, two per ms (24 Mbit/s) at
//! 19.4–20.8 s and at its end (38 s): the base rate holds for the warm-up and the first
//! period, and the rate alternates every period after that, which is the schedule below.
//!
//! Model (k = period index after the warm-up, from 0):
//!
//! ```text
//!   rate
//!    |          up: base·F      base·F
//!    |               +-----+     +-----+
//!    |  base         |     |     |     |
//!    +---------+-----+     +-----+     +--   (down: base/F in the odd periods;
//!    |<warmup->|<-P->|<-P->|<-P->|<-P->|      alternate: base·F, base, base/F, base, …)
//!    0         W    W+P
//! ```
//!
//! Even periods run at the base rate; odd periods at base·F (`up`), base/F (`down`), or
//! alternately base·F and base/F (`alternate`, starting with base·F).
//!
//! Differences from ccBench:
//! 1. Rates are exact to 1 bit/s with carry between milliseconds (ccBench's files hold a
//!    whole number of 1504-byte lines per ms, so only multiples of 12.032 Mbit/s are
//!    exact).
//! 2. Any factor ≥ 1 and any warm-up and period are accepted; ccBench uses F ∈ {2, 4}
//!    (file names also show 8), a 10 s warm-up and 7 s periods.

use serde::Deserialize;

use super::{duration_ms, invalid, Opportunities, SynthError};
use crate::{Trace, OPPORTUNITY_BYTES};

/// Bit·ms/s per opportunity: one ms at R bit/s adds R to the carry, and an opportunity
/// completes every 1504 × 8 × 1000 units.
const UNITS_PER_OPPORTUNITY: u64 = OPPORTUNITY_BYTES as u64 * 8 * 1000;
/// Highest rate accepted, Mbit/s (100 Gbit/s; the trace would hold 8.3 M lines per s).
const MAX_RATE_MBPS: f64 = 100_000.0;
/// Largest step factor accepted.
const MAX_FACTOR: f64 = 1000.0;

/// What the odd periods after the warm-up do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepDirection {
    /// base·F.
    Up,
    /// base/F.
    Down,
    /// base·F, then base/F, alternately.
    Alternate,
}

/// A step-change trace (see the module docs for the schedule).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepsConfig {
    /// Base rate, Mbit/s (required; ccBench uses 12, 24, 48, 96 and 192).
    pub base_mbps: f64,
    /// Step factor F ≥ 1. Default 2.
    #[serde(default = "default_factor")]
    pub factor: f64,
    /// `"up"` (default), `"down"` or `"alternate"`.
    #[serde(default = "default_direction")]
    pub direction: StepDirection,
    /// Time at the base rate before the periods start, s. Default 10.
    #[serde(default = "default_warmup_s")]
    pub warmup_s: f64,
    /// Length of each period, s. Default 7.
    #[serde(default = "default_period_s")]
    pub period_s: f64,
    /// Trace length, s, up to 3600. Default 38 (warm-up and four periods, as ccBench's
    /// files).
    #[serde(default = "default_steps_duration_s")]
    pub duration_s: f64,
}

fn default_factor() -> f64 {
    2.0
}
fn default_direction() -> StepDirection {
    StepDirection::Up
}
fn default_warmup_s() -> f64 {
    10.0
}
fn default_period_s() -> f64 {
    7.0
}
fn default_steps_duration_s() -> f64 {
    38.0
}
fn default_constant_duration_s() -> f64 {
    60.0
}

/// A constant-rate trace.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConstantConfig {
    /// Rate, Mbit/s (required).
    pub rate_mbps: f64,
    /// Trace length, s, up to 3600. Default 60.
    #[serde(default = "default_constant_duration_s")]
    pub duration_s: f64,
}

/// One constant-rate stretch `[start_ms, end_ms)` of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Start of the stretch, ms from the trace start.
    pub start_ms: u32,
    /// End of the stretch (exclusive), ms.
    pub end_ms: u32,
    /// Rate in bit/s (1504-byte opportunities carry it).
    pub rate_bps: u64,
}

fn rate_bps(mbps: f64, field: &'static str) -> Result<u64, SynthError> {
    if !(mbps.is_finite() && (0.0..=MAX_RATE_MBPS).contains(&mbps)) {
        return Err(invalid(
            field,
            format!("expected a rate in 0..={MAX_RATE_MBPS} Mbit/s, got {mbps}"),
        ));
    }
    Ok((mbps * 1e6).round() as u64)
}

/// Whole milliseconds of a non-negative time in seconds.
fn ms_of(seconds: f64, field: &'static str, min_ms: u64) -> Result<u32, SynthError> {
    let ms = (seconds * 1e3).round();
    if !(seconds.is_finite() && ms >= min_ms as f64 && ms <= f64::from(u32::MAX)) {
        return Err(invalid(
            field,
            format!("expected at least {} s, got {seconds}", min_ms as f64 / 1e3),
        ));
    }
    Ok(ms as u32)
}

impl StepsConfig {
    /// Checks every field; the error names the first offending one.
    pub fn validate(&self) -> Result<(), SynthError> {
        self.segments().map(|_| ())
    }

    /// The constant-rate stretches that make up the trace, in order.
    pub fn segments(&self) -> Result<Vec<Segment>, SynthError> {
        let base = rate_bps(self.base_mbps, "base_mbps")?;
        if !(self.factor.is_finite() && (1.0..=MAX_FACTOR).contains(&self.factor)) {
            return Err(invalid(
                "factor",
                format!(
                    "expected a step factor in 1..={MAX_FACTOR}, got {}",
                    self.factor
                ),
            ));
        }
        let high = rate_bps(self.base_mbps * self.factor, "factor")?;
        let low = (self.base_mbps / self.factor * 1e6).round() as u64;
        let warmup = ms_of(self.warmup_s, "warmup_s", 0)?;
        let period = ms_of(self.period_s, "period_s", 1)?;
        let end = duration_ms(self.duration_s)?;
        let mut segments = vec![];
        let mut start = 0u32;
        let mut k = 0u64;
        while start < end {
            let (length, rate) = if start == 0 && warmup > 0 {
                (warmup, base)
            } else {
                let odd_rate = match self.direction {
                    StepDirection::Up => high,
                    StepDirection::Down => low,
                    StepDirection::Alternate if k % 4 == 1 => high,
                    StepDirection::Alternate => low,
                };
                let rate = if k.is_multiple_of(2) { base } else { odd_rate };
                k += 1;
                (period, rate)
            };
            let stop = start.saturating_add(length).min(end);
            segments.push(Segment {
                start_ms: start,
                end_ms: stop,
                rate_bps: rate,
            });
            start = stop;
        }
        Ok(segments)
    }
}

impl ConstantConfig {
    /// Checks every field; the error names the first offending one.
    pub fn validate(&self) -> Result<(), SynthError> {
        self.segments().map(|_| ())
    }

    /// The single segment of the trace.
    pub fn segments(&self) -> Result<Vec<Segment>, SynthError> {
        let rate = rate_bps(self.rate_mbps, "rate_mbps")?;
        let end = duration_ms(self.duration_s)?;
        Ok(vec![Segment {
            start_ms: 0,
            end_ms: end,
            rate_bps: rate,
        }])
    }
}

/// Spreads each segment's bits evenly over its milliseconds: millisecond m (covering
/// `[m, m+1)` ms) adds its rate to a carry and emits an opportunity at timestamp m + 1
/// for every whole 1504 bytes. The carry runs across segments, so the trace holds
/// `⌊total bits / 12032⌋` opportunities, plus one at the end when the last millisecond
/// has none (the last line sets the loop period).
pub(crate) fn trace_from_segments(segments: &[Segment], name: &str) -> Result<Trace, SynthError> {
    let end = segments.last().map_or(0, |s| s.end_ms);
    let mut out = Opportunities::new(UNITS_PER_OPPORTUNITY);
    for segment in segments {
        for ms in segment.start_ms..segment.end_ms {
            out.add(ms + 1, segment.rate_bps);
        }
    }
    out.finish(end, name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(direction: StepDirection) -> StepsConfig {
        StepsConfig {
            base_mbps: 12.0,
            factor: 2.0,
            direction,
            warmup_s: 10.0,
            period_s: 7.0,
            duration_s: 38.0,
        }
    }

    #[test]
    fn ccbench_schedule_up() {
        let s = steps(StepDirection::Up).segments().unwrap();
        let rates: Vec<(u32, u32, u64)> = s
            .iter()
            .map(|g| (g.start_ms, g.end_ms, g.rate_bps))
            .collect();
        assert_eq!(
            rates,
            [
                (0, 10_000, 12_000_000),
                (10_000, 17_000, 12_000_000),
                (17_000, 24_000, 24_000_000),
                (24_000, 31_000, 12_000_000),
                (31_000, 38_000, 24_000_000),
            ]
        );
    }

    #[test]
    fn down_and_alternate_schedules() {
        let down: Vec<u64> = steps(StepDirection::Down)
            .segments()
            .unwrap()
            .iter()
            .map(|g| g.rate_bps)
            .collect();
        assert_eq!(
            down,
            [
                12e6 as u64,
                12e6 as u64,
                6e6 as u64,
                12e6 as u64,
                6e6 as u64
            ]
        );
        let alternate = StepsConfig {
            duration_s: 52.0,
            ..steps(StepDirection::Alternate)
        };
        let rates: Vec<u64> = alternate
            .segments()
            .unwrap()
            .iter()
            .map(|g| g.rate_bps)
            .collect();
        assert_eq!(
            rates,
            [12e6, 12e6, 24e6, 12e6, 6e6, 12e6, 24e6].map(|r| r as u64)
        );
    }

    #[test]
    fn carry_is_exact() {
        // 1 Mbit/s for 1 s = 1e6 bits = 83 opportunities of 12032 bits (998 656 bits)
        // with 1344 bits carried; the last one comes at ⌈83·12032/1000⌉ = 999 ms.
        let trace = trace_from_segments(
            &[Segment {
                start_ms: 0,
                end_ms: 1000,
                rate_bps: 1_000_000,
            }],
            "t",
        )
        .unwrap();
        let ts = trace.timestamps_ms();
        // 83 opportunities plus the end-of-trace line at 1000 ms.
        assert_eq!(ts.len(), 84);
        assert_eq!(ts[0], 13); // 13 ms · 1000 bit/ms ≥ 12032
        assert_eq!(ts[82], 999);
        assert_eq!(*ts.last().unwrap(), 1000);
        // A zero-rate trace is a single line at its end.
        let zero = trace_from_segments(
            &[Segment {
                start_ms: 0,
                end_ms: 500,
                rate_bps: 0,
            }],
            "z",
        )
        .unwrap();
        assert_eq!(zero.timestamps_ms(), &[500]);
        // 100 Gbit/s for an hour would be 3·10^10 opportunities: refused, and the
        // opportunities beyond the limit are never stored.
        let err = trace_from_segments(
            &[Segment {
                start_ms: 0,
                end_ms: 3_600_000,
                rate_bps: 100_000_000_000,
            }],
            "huge",
        )
        .unwrap_err();
        assert_eq!(err.field, "duration_s");
    }

    #[test]
    fn validation_names_the_field() {
        let err = |cfg: StepsConfig| cfg.validate().unwrap_err().to_string();
        assert!(err(StepsConfig {
            factor: 0.5,
            ..steps(StepDirection::Up)
        })
        .starts_with("factor: "));
        assert!(err(StepsConfig {
            base_mbps: -1.0,
            ..steps(StepDirection::Up)
        })
        .starts_with("base_mbps: "));
        assert!(err(StepsConfig {
            period_s: 0.0,
            ..steps(StepDirection::Up)
        })
        .starts_with("period_s: "));
        assert!(err(StepsConfig {
            warmup_s: f64::NAN,
            ..steps(StepDirection::Up)
        })
        .starts_with("warmup_s: "));
        let constant = ConstantConfig {
            rate_mbps: f64::INFINITY,
            duration_s: 1.0,
        };
        assert!(constant
            .validate()
            .unwrap_err()
            .to_string()
            .starts_with("rate_mbps: "));
    }
}
