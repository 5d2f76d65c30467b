//! Parameters in user units, checked and converted once: durations given as `_ms` / `_s`
//! floats become integer nanoseconds, probabilities are checked to lie in [0, 1], and a
//! bad value yields a [`ParamError`] naming its key. Also the uniform draws and the
//! sample-to-duration rounding the random stages share.
//!
//! A ground-floor module: it imports nothing from the crate, and the configuration
//! structs of `cellular/`, `impair/` and `loss.rs` build on it.

use cellcc_units::{Dur, NS_PER_MS, NS_PER_S};
use rand_core::Rng;

/// A parameter that cannot be used. `field` is its key relative to the table it came
/// from (`sr_period_ms`, `tdd.dl_ms`, `outages[1].start_s`); a scenario loader prefixes
/// the table's own path.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{field}`: {reason}")]
pub struct ParamError {
    /// The key, relative to the table it came from.
    pub field: String,
    /// What is wrong with the value, and what would be accepted.
    pub reason: String,
}

impl ParamError {
    /// An error for `field`.
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        ParamError {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// The same error for a key nested under `prefix` (`tdd` + `dl_ms` → `tdd.dl_ms`).
    pub fn within(self, prefix: &str) -> Self {
        ParamError {
            field: format!("{prefix}.{}", self.field),
            reason: self.reason,
        }
    }
}

/// Longest duration a float parameter may give: about 213 days, far below `u64` ns.
const MAX_PARAM_NS: f64 = 1.0e16;

/// `value` in units of `ns_per_unit`, as nanoseconds rounded to the nearest one; must be
/// finite and not negative (zero allowed).
fn duration(field: &str, value: f64, ns_per_unit: u64, unit: &str) -> Result<Dur, ParamError> {
    if !value.is_finite() || value < 0.0 {
        return Err(ParamError::new(
            field,
            format!("must be a duration ≥ 0 {unit}, got {value}"),
        ));
    }
    let ns = (value * ns_per_unit as f64).round();
    if ns > MAX_PARAM_NS {
        return Err(ParamError::new(
            field,
            format!("{value} {unit} is too long"),
        ));
    }
    // In [0, 1e16] after the checks above, so the cast is exact.
    Ok(Dur::from_ns(ns as u64))
}

/// A duration in milliseconds (≥ 0), e.g. `grant_delay_ms`.
pub(crate) fn dur_ms(field: &str, ms: f64) -> Result<Dur, ParamError> {
    duration(field, ms, NS_PER_MS, "ms")
}

/// A duration in milliseconds that must be at least 1 ns, e.g. a period.
pub(crate) fn positive_dur_ms(field: &str, ms: f64) -> Result<Dur, ParamError> {
    let d = dur_ms(field, ms)?;
    if d.is_zero() {
        return Err(ParamError::new(
            field,
            format!("must be a positive duration in ms, got {ms}"),
        ));
    }
    Ok(d)
}

/// A duration in seconds (≥ 0), e.g. an outage's `start_s`.
pub(crate) fn dur_s(field: &str, s: f64) -> Result<Dur, ParamError> {
    duration(field, s, NS_PER_S, "s")
}

/// A probability in [0, 1].
pub(crate) fn probability(field: &str, p: f64) -> Result<f64, ParamError> {
    if (0.0..=1.0).contains(&p) {
        Ok(p)
    } else {
        Err(ParamError::new(
            field,
            format!("must be a probability in [0, 1], got {p}"),
        ))
    }
}

/// 2^-53, the spacing of the 53-bit uniform grid below.
const TWO_POW_MINUS_53: f64 = 1.0 / 9_007_199_254_740_992.0;

/// A uniform draw in [0, 1) on a grid of 2^-53 (the top 53 bits of one `u64`).
pub(crate) fn unit_f64<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    (rng.next_u64() >> 11) as f64 * TWO_POW_MINUS_53
}

/// A uniform draw in (0, 1], safe for `ln`.
pub(crate) fn unit_f64_nonzero<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    1.0 - unit_f64(rng)
}

/// Milliseconds (a non-negative, finite sample) as whole nanoseconds, rounded.
pub(crate) fn ms_sample_to_dur(ms: f64) -> Dur {
    debug_assert!(
        ms.is_finite() && ms >= 0.0,
        "samples are validated upstream"
    );
    // Saturates at u64::MAX for absurd samples (an exponential tail), which only pushes
    // the release to the end of time.
    Dur::from_ns((ms * NS_PER_MS as f64).round() as u64)
}

/// A minimal serde data format for unit tests of the configuration spellings (this crate
/// has no TOML dependency): a tree of strings, numbers, booleans and tables.
#[cfg(test)]
pub(crate) mod test_value {
    use serde::de::value::{Error, MapDeserializer};
    use serde::de::{self, IntoDeserializer, Visitor};

    #[derive(Clone, Debug)]
    pub(crate) enum V {
        S(&'static str),
        F(f64),
        I(i64),
        B(bool),
        M(Vec<(&'static str, V)>),
    }

    /// Deserialises `T` from `v`, returning the error message on failure.
    pub(crate) fn from<T: serde::de::DeserializeOwned>(v: V) -> Result<T, String> {
        T::deserialize(v).map_err(|e| e.to_string())
    }

    impl<'de> de::Deserializer<'de> for V {
        type Error = Error;

        fn deserialize_any<W: Visitor<'de>>(self, visitor: W) -> Result<W::Value, Error> {
            match self {
                V::S(s) => visitor.visit_str(s),
                V::F(f) => visitor.visit_f64(f),
                V::I(i) => visitor.visit_i64(i),
                V::B(b) => visitor.visit_bool(b),
                V::M(m) => visitor.visit_map(MapDeserializer::new(m.into_iter())),
            }
        }

        fn deserialize_option<W: Visitor<'de>>(self, visitor: W) -> Result<W::Value, Error> {
            visitor.visit_some(self)
        }

        fn deserialize_enum<W: Visitor<'de>>(
            self,
            _name: &'static str,
            _variants: &'static [&'static str],
            visitor: W,
        ) -> Result<W::Value, Error> {
            match self {
                V::S(s) => visitor.visit_enum(s.into_deserializer()),
                other => other.deserialize_any(visitor),
            }
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf unit unit_struct newtype_struct seq tuple tuple_struct map struct
            identifier ignored_any
        }
    }

    impl<'de> IntoDeserializer<'de, Error> for V {
        type Deserializer = V;
        fn into_deserializer(self) -> V {
            self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_round_to_whole_nanoseconds_and_reject_bad_values() {
        assert_eq!(dur_ms("x", 0.5).unwrap(), Dur::from_us(500));
        assert_eq!(dur_ms("x", 0.3).unwrap(), Dur::from_us(300));
        assert_eq!(dur_ms("x", 2.5).unwrap(), Dur::from_us(2500));
        assert_eq!(dur_s("x", 2.0).unwrap(), Dur::from_secs(2));
        assert_eq!(dur_ms("x", 0.0).unwrap(), Dur::ZERO);
        let e = dur_ms("sr_period_ms", -5.0).unwrap_err();
        assert_eq!(e.field, "sr_period_ms");
        assert!(e.to_string().contains("-5"), "{e}");
        assert_eq!(dur_ms("x", f64::NAN).unwrap_err().field, "x");
        assert_eq!(positive_dur_ms("p", 0.0).unwrap_err().field, "p");
        assert_eq!(probability("q", 1.5).unwrap_err().field, "q");
        assert!(probability("q", f64::NAN).is_err());
        assert_eq!(
            ParamError::new("dl_ms", "too long").within("tdd").field,
            "tdd.dl_ms"
        );
    }
}
