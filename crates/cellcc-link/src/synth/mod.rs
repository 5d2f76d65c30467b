//! Synthetic Mahimahi traces from documented models, deterministic for a seed.
//!
//! Three models, chosen by `model` in a [`SynthConfig`] table (TOML or JSON):
//!
//! * `mobility` ([`MobilityConfig`], `channel.rs`): a UE driving past a cell site at a
//!   given speed (the TCP-over-LTE study uses 60 and 200 km/h). Per TTI: path loss,
//!   Gudmundson shadowing and Rayleigh fading (Doppler `f_d = v·f_c/c`) give the SINR;
//!   the SINR gives a CQI by 10 %-BLER thresholds, the CQI an MCS and the MCS a transport
//!   block size from the 3GPP tables (`lte_tables.rs`: TS 36.213; `nr_tables.rs`:
//!   TS 38.214 §5.1.3.2).
//! * `steps` ([`StepsConfig`], `steps.rs`): ccBench's step changes, ×F up or down every
//!   period after a warm-up.
//! * `constant` ([`ConstantConfig`]).
//!
//! Every model produces bits per interval (per TTI, or per millisecond), which
//! accumulate into 1504-byte delivery opportunities ([`OPPORTUNITY_BYTES`], what
//! `mm-link` carries per line) with an exact integer carry: bits delivered in the TTIs
//! that end within millisecond `(m−1, m]` are offered at timestamp m, so the first
//! timestamp is ≥ 1, and the carry runs across milliseconds, so the trace holds
//! ⌊total bits / 12032⌋ opportunities. The last line sets `mm-link`'s loop period: if the
//! last millisecond has no opportunity (a fade or a zero-rate tail), one extra
//! opportunity is added there, so the period always equals `duration_s`.
//!
//! ```
//! use cellcc_link::synth::{generate, SynthConfig, StepsConfig, StepDirection};
//!
//! let config = SynthConfig::Steps(StepsConfig {
//!     base_mbps: 12.032, factor: 2.0, direction: StepDirection::Up,
//!     warmup_s: 1.0, period_s: 1.0, duration_s: 3.0,
//! });
//! let trace = generate(&config, 1).unwrap();
//! // 12.032 Mbit/s is one opportunity per ms for 2 s, then two per ms for 1 s.
//! assert_eq!(trace.len(), 2000 + 2000);
//! assert_eq!(trace.period_ms(), 3000);
//! ```
//!
//! Randomness (mobility only) comes from ChaCha8 seeded with the `seed` argument, one
//! stream for shadowing and one for fading, so the same configuration and seed give the
//! same trace; see `channel.rs` for the one platform caveat (floating-point maths
//! library).

pub mod coherence;
pub mod lte_tables;
pub mod nr_tables;

mod channel;
mod fading;
mod steps;

pub use channel::{
    simulate_channel, ChannelRun, Direction, Fading, MobilityConfig, PathLoss, Rat, TtiSample,
};
pub use coherence::coherence_lag;
pub use steps::{ConstantConfig, Segment, StepDirection, StepsConfig};

use serde::Deserialize;

use crate::{Trace, MAX_TRACE_OPPORTUNITIES, OPPORTUNITY_BYTES};
use cellcc_units::NS_PER_MS;

/// Longest trace generated, s (one hour; an hour of 1 Gbit/s is 300 M lines).
pub const MAX_DURATION_S: f64 = 3600.0;
/// Micro-bits per opportunity, the carry unit of the mobility model (bits × parts per
/// million of scheduler share).
const MICROBITS_PER_OPPORTUNITY: u64 = OPPORTUNITY_BYTES as u64 * 8 * 1_000_000;

/// A synthetic trace model, tagged by `model`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(tag = "model", rename_all = "snake_case")]
pub enum SynthConfig {
    /// A UE moving past a cell site: SINR from path loss, shadowing and fading, mapped to
    /// transport blocks per TTI (`model = "mobility"`).
    Mobility(MobilityConfig),
    /// ccBench-style step changes of the rate (`model = "steps"`).
    Steps(StepsConfig),
    /// One constant rate (`model = "constant"`).
    Constant(ConstantConfig),
}

impl SynthConfig {
    /// The `model` name.
    pub fn model(&self) -> &'static str {
        match self {
            SynthConfig::Mobility(_) => "mobility",
            SynthConfig::Steps(_) => "steps",
            SynthConfig::Constant(_) => "constant",
        }
    }

    /// Checks every field; the error names the first offending one.
    pub fn validate(&self) -> Result<(), SynthError> {
        match self {
            SynthConfig::Mobility(c) => c.validate(),
            SynthConfig::Steps(c) => c.validate(),
            SynthConfig::Constant(c) => c.validate(),
        }
    }
}

/// A configuration value is out of range or inconsistent.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct SynthError {
    /// The configuration key at fault, e.g. `speed_kmh`.
    pub field: &'static str,
    /// What is wrong with the value and what would be accepted.
    pub message: String,
}

pub(crate) fn invalid(field: &'static str, message: String) -> SynthError {
    SynthError { field, message }
}

/// Whole milliseconds of `duration_s`, checked against [`MAX_DURATION_S`].
pub(crate) fn duration_ms(duration_s: f64) -> Result<u32, SynthError> {
    let ms = (duration_s * 1e3).round();
    if !(duration_s.is_finite() && duration_s <= MAX_DURATION_S && ms >= 1.0) {
        return Err(invalid(
            "duration_s",
            format!("expected 0.001..={MAX_DURATION_S} s, got {duration_s}"),
        ));
    }
    Ok(ms as u32)
}

/// Collects opportunities from amounts of capacity with an exact carry.
pub(crate) struct Opportunities {
    /// Capacity units per opportunity.
    unit: u64,
    /// Capacity not yet turned into an opportunity, < `unit` between calls.
    carry: u64,
    timestamps: Vec<u32>,
    /// More than [`MAX_TRACE_OPPORTUNITIES`] were offered: the rest was not kept.
    too_many: bool,
}

impl Opportunities {
    pub(crate) fn new(unit: u64) -> Self {
        Opportunities {
            unit,
            carry: 0,
            timestamps: Vec::new(),
            too_many: false,
        }
    }

    /// Adds `amount` units offered at millisecond `timestamp_ms` (non-decreasing).
    pub(crate) fn add(&mut self, timestamp_ms: u32, amount: u64) {
        self.carry += amount;
        let whole = self.carry / self.unit;
        self.carry -= whole * self.unit;
        // Stop keeping opportunities beyond the limit (`finish` refuses the trace), so
        // that a fast link over a long duration cannot exhaust memory.
        let room = MAX_TRACE_OPPORTUNITIES.saturating_sub(self.timestamps.len());
        if whole > room as u64 {
            self.too_many = true;
            return;
        }
        self.timestamps
            .extend(std::iter::repeat_n(timestamp_ms, whole as usize));
    }

    /// The trace, with one opportunity added at `end_ms` when the last millisecond has
    /// none (the last line is the loop period); an error naming `duration_s` when it
    /// would hold more than [`MAX_TRACE_OPPORTUNITIES`].
    pub(crate) fn finish(mut self, end_ms: u32, name: &str) -> Result<Trace, SynthError> {
        if self.too_many || self.timestamps.len() >= MAX_TRACE_OPPORTUNITIES {
            return Err(invalid(
                "duration_s",
                format!(
                    "the trace would hold more than {MAX_TRACE_OPPORTUNITIES} delivery \
                     opportunities; shorten duration_s or lower the rate"
                ),
            ));
        }
        if self.timestamps.last() != Some(&end_ms) {
            self.timestamps.push(end_ms);
        }
        Ok(Trace::from_timestamps(self.timestamps, name)
            .expect("timestamps are non-decreasing, end at end_ms ≥ 1 and fit the limit"))
    }
}

/// Generates the trace of `config` with `seed` (only the mobility model is random).
pub fn generate(config: &SynthConfig, seed: u64) -> Result<Trace, SynthError> {
    let name = format!("synth-{}-seed{seed}", config.model());
    match config {
        SynthConfig::Steps(c) => steps::trace_from_segments(&c.segments()?, &name),
        SynthConfig::Constant(c) => steps::trace_from_segments(&c.segments()?, &name),
        SynthConfig::Mobility(c) => {
            let prepared = c.prepare()?;
            let (ttis, tti_ns, end_ms, share_ppm) = (
                prepared.ttis(),
                prepared.tti.as_ns(),
                prepared.duration_ms,
                prepared.share_ppm,
            );
            let mut channel = channel::Channel::new(prepared, seed);
            let mut out = Opportunities::new(MICROBITS_PER_OPPORTUNITY);
            for k in 0..ttis {
                let sample = channel.next_sample();
                // The TTI [k, k+1)·TTI is offered at the millisecond in which it ends.
                let ms = ((k + 1) * tti_ns)
                    .div_ceil(NS_PER_MS)
                    .min(u64::from(end_ms));
                out.add(ms as u32, sample.tb_bits * share_ppm);
            }
            out.finish(end_ms, &name)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_parse_with_defaults_and_reject_unknown_keys() {
        let parse = |text: &str| -> Result<SynthConfig, String> {
            let value: toml_like::Value = toml_like::parse(text);
            SynthConfig::deserialize(value).map_err(|e| e.to_string())
        };
        let mobility = parse("model=mobility speed_kmh=200").unwrap();
        match mobility {
            SynthConfig::Mobility(m) => {
                assert_eq!(m.speed_kmh, 200.0);
                assert_eq!(m.duration_s, 60.0);
                assert_eq!(m.rat, Rat::Lte);
            }
            other => panic!("{other:?}"),
        }
        let err = parse("model=mobility speed=200").unwrap_err();
        assert!(err.contains("unknown field `speed`"), "{err}");
        let err = parse("model=wobbly").unwrap_err();
        assert!(err.contains("unknown variant `wobbly`"), "{err}");
        let err = parse("model=steps factor=2").unwrap_err();
        assert!(err.contains("missing field `base_mbps`"), "{err}");
    }

    /// A minimal self-describing value to exercise the serde derive without a format
    /// crate: `key=value` pairs, numbers parsed as f64, everything else a string.
    mod toml_like {
        use serde::de::value::{Error, MapDeserializer};
        use serde::de::{Deserializer, IntoDeserializer, Visitor};

        pub(super) enum Value {
            Map(Vec<(String, Value)>),
            Number(f64),
            Text(String),
        }

        pub(super) fn parse(text: &str) -> Value {
            Value::Map(
                text.split_whitespace()
                    .map(|pair| {
                        let (k, v) = pair.split_once('=').unwrap();
                        let value = v
                            .parse::<f64>()
                            .map(Value::Number)
                            .unwrap_or_else(|_| Value::Text(v.to_string()));
                        (k.to_string(), value)
                    })
                    .collect(),
            )
        }

        impl<'de> IntoDeserializer<'de, Error> for Value {
            type Deserializer = Value;
            fn into_deserializer(self) -> Value {
                self
            }
        }

        impl<'de> Deserializer<'de> for Value {
            type Error = Error;
            fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
                match self {
                    Value::Map(entries) => {
                        visitor.visit_map(MapDeserializer::new(entries.into_iter()))
                    }
                    Value::Number(n) if n.fract() == 0.0 && n >= 0.0 => visitor.visit_u64(n as u64),
                    Value::Number(n) => visitor.visit_f64(n),
                    Value::Text(s) => visitor.visit_string(s),
                }
            }
            serde::forward_to_deserialize_any! {
                bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
                bytes byte_buf option unit unit_struct newtype_struct seq tuple
                tuple_struct map struct enum identifier ignored_any
            }
        }
    }

    #[test]
    fn duration_limits() {
        assert_eq!(duration_ms(0.0015), Ok(2));
        assert!(duration_ms(0.0004).is_err());
        assert!(duration_ms(3600.0).is_ok());
        assert_eq!(duration_ms(3600.5).unwrap_err().field, "duration_s");
    }
}
