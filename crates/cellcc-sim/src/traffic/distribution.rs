//! Distributions of flow sizes and of on, off and inter-arrival periods, sampled from a
//! seeded generator with arithmetic that gives the same numbers on every machine.
//!
//! Samples use only `+ − × ÷` and `sqrt` (exact in IEEE 754) and this file's own
//! `ln`/`exp` (`portable`): the platform's libm may round differently between systems,
//! which would make the same seed give different traffic.

use rand_core::Rng;
use serde::{Deserialize, Serialize};

use super::{invalid, TrafficConfigError};

/// 2^-53: turns the top 53 bits of a `u64` into a uniform number in [0, 1).
const UNIT_53: f64 = 1.0 / (1u64 << 53) as f64;

/// A probability distribution of non-negative values (bytes or seconds), written as a
/// table with `kind`, e.g. `{ kind = "pareto", shape = 1.5, min = 10000 }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Distribution {
    /// Always `value`.
    Constant {
        /// The value (≥ 0).
        value: f64,
    },
    /// Exponential with the given mean.
    Exponential {
        /// The mean (> 0).
        mean: f64,
    },
    /// Uniform on `[min, max]` (the LTE study's choice).
    Uniform {
        /// Lower bound (≥ 0).
        min: f64,
        /// Upper bound (≥ `min`).
        max: f64,
    },
    /// Pareto: `P(X > x) = (min/x)^shape` for `x >= min`; mean `shape·min/(shape − 1)`,
    /// infinite for `shape <= 1`.
    Pareto {
        /// Shape (tail index) α > 0.
        shape: f64,
        /// Scale: the smallest value (> 0).
        min: f64,
    },
    /// `exp(N(mu, sigma²))`; mean `exp(mu + sigma²/2)`.
    Lognormal {
        /// Mean of the underlying normal (of ln X).
        mu: f64,
        /// Standard deviation of the underlying normal (≥ 0).
        sigma: f64,
    },
    /// Piecewise-linear CDF through `[value, probability]` points: non-decreasing values
    /// and probabilities, the last probability 1. A first probability `p0 > 0` puts mass
    /// `p0` on the first value.
    Empirical {
        /// The `[value, probability]` points, in order.
        cdf: Vec<(f64, f64)>,
    },
}

impl Distribution {
    /// Checks the parameters; `field` names the distribution in errors (`size`, `on_s`).
    pub fn validate(&self, field: &str) -> Result<(), TrafficConfigError> {
        let non_negative = |name: &str, v: f64| {
            if v.is_finite() && v >= 0.0 {
                Ok(())
            } else {
                invalid(
                    format!("{field}.{name}"),
                    format!("{v} must be a finite number >= 0"),
                )
            }
        };
        let positive = |name: &str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                invalid(
                    format!("{field}.{name}"),
                    format!("{v} must be a finite number > 0"),
                )
            }
        };
        match self {
            Distribution::Constant { value } => non_negative("value", *value),
            Distribution::Exponential { mean } => positive("mean", *mean),
            Distribution::Uniform { min, max } => {
                non_negative("min", *min)?;
                non_negative("max", *max)?;
                if max < min {
                    return invalid(
                        format!("{field}.max"),
                        format!("{max} is below min = {min}"),
                    );
                }
                Ok(())
            }
            Distribution::Pareto { shape, min } => {
                positive("shape", *shape)?;
                positive("min", *min)
            }
            Distribution::Lognormal { mu, sigma } => {
                if !mu.is_finite() {
                    return invalid(format!("{field}.mu"), format!("{mu} must be finite"));
                }
                non_negative("sigma", *sigma)?;
                if !self.mean().is_finite() {
                    return invalid(
                        format!("{field}.sigma"),
                        format!("exp(mu + sigma²/2) overflows with mu = {mu}, sigma = {sigma}"),
                    );
                }
                Ok(())
            }
            Distribution::Empirical { cdf } => validate_cdf(cdf, field),
        }
    }

    /// The expected value (`f64::INFINITY` for Pareto with `shape <= 1`).
    pub fn mean(&self) -> f64 {
        match self {
            Distribution::Constant { value } => *value,
            Distribution::Exponential { mean } => *mean,
            Distribution::Uniform { min, max } => (min + max) / 2.0,
            Distribution::Pareto { shape, min } => {
                if *shape > 1.0 {
                    shape * min / (shape - 1.0)
                } else {
                    f64::INFINITY
                }
            }
            Distribution::Lognormal { mu, sigma } => portable::exp(mu + sigma * sigma / 2.0),
            Distribution::Empirical { cdf } => {
                // Mass p0 at the first value, then the mean of each linear segment
                // (uniform on it) weighted by its probability.
                let (v0, p0) = cdf[0];
                let atom = v0 * p0;
                atom + cdf
                    .windows(2)
                    .map(|w| (w[1].1 - w[0].1) * (w[0].0 + w[1].0) / 2.0)
                    .sum::<f64>()
            }
        }
    }

    /// One sample. The parameters must be valid ([`Distribution::validate`]).
    pub fn sample(&self, rng: &mut impl Rng) -> f64 {
        match self {
            Distribution::Constant { value } => *value,
            // Inverse CDF: −mean·ln(1 − u); 1 − u is in (0, 1].
            Distribution::Exponential { mean } => -mean * portable::ln(1.0 - unit(rng)),
            Distribution::Uniform { min, max } => min + (max - min) * unit(rng),
            // Inverse CDF: min·(1 − u)^(−1/shape).
            Distribution::Pareto { shape, min } => {
                min * portable::exp(-portable::ln(1.0 - unit(rng)) / shape)
            }
            Distribution::Lognormal { mu, sigma } => portable::exp(mu + sigma * normal(rng)),
            Distribution::Empirical { cdf } => {
                let u = unit(rng);
                let (v0, p0) = cdf[0];
                if u < p0 {
                    return v0;
                }
                // The first point with probability > u exists: the last is 1 > u.
                let i = cdf.partition_point(|&(_, p)| p <= u);
                let (v_lo, p_lo) = cdf[i - 1];
                let (v_hi, p_hi) = cdf[i];
                v_lo + (v_hi - v_lo) * (u - p_lo) / (p_hi - p_lo)
            }
        }
    }
}

fn validate_cdf(cdf: &[(f64, f64)], field: &str) -> Result<(), TrafficConfigError> {
    let at = |i: usize| format!("{field}.cdf[{i}]");
    if cdf.is_empty() {
        return invalid(
            format!("{field}.cdf"),
            "needs at least one [value, probability] point",
        );
    }
    for (i, &(v, p)) in cdf.iter().enumerate() {
        if !(v.is_finite() && v >= 0.0) {
            return invalid(at(i), format!("value {v} must be a finite number >= 0"));
        }
        if !(0.0..=1.0).contains(&p) {
            return invalid(at(i), format!("probability {p} is outside [0, 1]"));
        }
        if i > 0 && (v < cdf[i - 1].0 || p < cdf[i - 1].1) {
            return invalid(at(i), "values and probabilities must be non-decreasing");
        }
    }
    let last = cdf[cdf.len() - 1].1;
    if last != 1.0 {
        return invalid(
            at(cdf.len() - 1),
            format!("the last probability is {last}; it must be 1"),
        );
    }
    Ok(())
}

/// Uniform in [0, 1) with 53 random bits.
fn unit(rng: &mut impl Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 * UNIT_53
}

/// Standard normal by the polar method (no trigonometry: only `ln` and `sqrt`).
fn normal(rng: &mut impl Rng) -> f64 {
    loop {
        let v1 = 2.0 * unit(rng) - 1.0;
        let v2 = 2.0 * unit(rng) - 1.0;
        let s = v1 * v1 + v2 * v2;
        if s > 0.0 && s < 1.0 {
            return v1 * (-2.0 * portable::ln(s) / s).sqrt();
        }
    }
}

/// `ln` and `exp` from `+ − × ÷` only, so that results do not depend on the platform's
/// math library. Accurate to a few ulp, plenty for traffic models.
mod portable {
    use std::f64::consts::{LN_2, SQRT_2};

    /// ln 2 split for exact products k·LN2_HI (|k| < 2^20): the high part has its low 32
    /// bits zero, `LN2_HI + LN2_LO` is ln 2 to about 2^-85 (fdlibm's split).
    const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
    const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);

    /// Terms of the atanh series for ln: |s| <= 0.172, so s^25/25 < 1e-20.
    const LN_TERMS: i32 = 12;
    /// Taylor terms of exp on |r| <= ln2/2: 0.35^18/18! < 1e-23.
    const EXP_TERMS: i32 = 17;
    /// 2^54, to lift subnormals into the normal range.
    const TWO_54: f64 = (1u64 << 54) as f64;

    /// Natural logarithm of a finite `x > 0` (0 gives −∞).
    pub(super) fn ln(x: f64) -> f64 {
        if x == 0.0 {
            return f64::NEG_INFINITY;
        }
        debug_assert!(x > 0.0 && x.is_finite(), "ln of {x}");
        let (x, lift) = if x < f64::MIN_POSITIVE {
            (x * TWO_54, -54)
        } else {
            (x, 0)
        };
        let bits = x.to_bits();
        let mut exponent = ((bits >> 52) & 0x7ff) as i32 - 1023 + lift;
        // x = m·2^exponent with m in [1, 2), then m in (√2/2, √2].
        let mut m = f64::from_bits((bits & ((1u64 << 52) - 1)) | (1023u64 << 52));
        if m > SQRT_2 {
            m *= 0.5;
            exponent += 1;
        }
        // ln m = 2·atanh(s) = 2·(s + s³/3 + s⁵/5 + …), s = (m − 1)/(m + 1).
        let s = (m - 1.0) / (m + 1.0);
        let s2 = s * s;
        let mut series = 0.0;
        for k in (0..LN_TERMS).rev() {
            series = series * s2 + 1.0 / f64::from(2 * k + 1);
        }
        let e = f64::from(exponent);
        e * LN2_HI + (e * LN2_LO + 2.0 * s * series)
    }

    /// e^x.
    pub(super) fn exp(x: f64) -> f64 {
        if x.is_nan() {
            return x;
        }
        if x > 709.8 {
            return f64::INFINITY;
        }
        if x < -745.2 {
            return 0.0;
        }
        // x = k·ln2 + r, |r| <= ln2/2; e^x = 2^k·e^r.
        let k = (x / LN_2).round();
        let r = (x - k * LN2_HI) - k * LN2_LO;
        let mut taylor = 1.0;
        for n in (1..=EXP_TERMS).rev() {
            taylor = 1.0 + taylor * r / f64::from(n);
        }
        scale(taylor, k as i32)
    }

    /// y·2^k, exact while the result is normal.
    fn scale(mut y: f64, mut k: i32) -> f64 {
        let two_pow = |e: i32| f64::from_bits(((e + 1023) as u64) << 52);
        while k > 1000 {
            y *= two_pow(1000);
            k -= 1000;
        }
        while k < -1000 {
            y *= two_pow(-1000);
            k += 1000;
        }
        y * two_pow(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    fn rng(seed: u64) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(seed)
    }

    fn mean_of(d: &Distribution, n: usize, seed: u64) -> f64 {
        let mut r = rng(seed);
        (0..n).map(|_| d.sample(&mut r)).sum::<f64>() / n as f64
    }

    fn rel_err(measured: f64, expected: f64) -> f64 {
        (measured - expected).abs() / expected
    }

    #[test]
    fn portable_ln_and_exp_match_std_to_a_few_ulp() {
        let mut r = rng(1);
        for i in 0..20_000 {
            // Spread over many binades, including subnormals and values near 1.
            let x = match i % 4 {
                0 => unit(&mut r),
                1 => 1.0 + (unit(&mut r) - 0.5) * 1e-6,
                2 => f64::from_bits(r.next_u64() >> 2).max(f64::MIN_POSITIVE / 1e10),
                _ => unit(&mut r) * 1e-310,
            };
            if x == 0.0 {
                continue;
            }
            let (mine, std) = (portable::ln(x), x.ln());
            assert!(
                (mine - std).abs() <= 4.0 * f64::EPSILON * std.abs().max(1e-300) + 1e-300,
                "ln({x:e}) = {mine:e}, std {std:e}"
            );
        }
        // Results in the normal range (subnormal results lose relative precision).
        for i in 0..20_000 {
            let x = (i as f64 - 10_000.0) * 0.0705;
            let (mine, std) = (portable::exp(x), x.exp());
            assert!(
                (mine - std).abs() <= 8.0 * f64::EPSILON * std,
                "exp({x}) = {mine:e}, std {std:e}"
            );
        }
        assert_eq!(portable::ln(1.0), 0.0);
        assert_eq!(portable::exp(0.0), 1.0);
        assert_eq!(portable::ln(0.0), f64::NEG_INFINITY);
        assert_eq!(portable::exp(1000.0), f64::INFINITY);
        assert_eq!(portable::exp(-1000.0), 0.0);
    }

    #[test]
    fn long_run_means_match_each_distribution() {
        let cases = [
            Distribution::Constant { value: 3.0 },
            Distribution::Exponential { mean: 50_000.0 },
            Distribution::Uniform {
                min: 1000.0,
                max: 9000.0,
            },
            // Finite variance (shape > 2): mean 2.5·1000/1.5 = 1666.7.
            Distribution::Pareto {
                shape: 2.5,
                min: 1000.0,
            },
            // mean e^(1 + 0.5²/2) = e^1.125 = 3.0802.
            Distribution::Lognormal {
                mu: 1.0,
                sigma: 0.5,
            },
            // Mass 0.5 at 1000, then uniform on [1000, 35900] with 0.4, on
            // [35900, 100000] with 0.1: 500 + 0.4·18450 + 0.1·67950 = 14675.
            Distribution::Empirical {
                cdf: vec![(1000.0, 0.5), (35_900.0, 0.9), (100_000.0, 1.0)],
            },
        ];
        let expected = [3.0, 50_000.0, 5000.0, 1666.666, 3.0802, 14_675.0];
        for (d, &want) in cases.iter().zip(&expected) {
            d.validate("d").unwrap();
            assert!(
                rel_err(d.mean(), want) < 1e-4,
                "{d:?}: mean() = {}",
                d.mean()
            );
            let got = mean_of(d, 200_000, 7);
            println!("{d:?}: sample mean {got:.4}, expected {want}");
            assert!(rel_err(got, want) < 0.02, "{d:?}: sample mean {got}");
        }
        assert_eq!(
            Distribution::Pareto {
                shape: 1.0,
                min: 1.0
            }
            .mean(),
            f64::INFINITY
        );
    }

    #[test]
    fn empirical_cdf_is_reproduced() {
        let d = Distribution::Empirical {
            cdf: vec![(1000.0, 0.5), (35_900.0, 0.9), (100_000.0, 1.0)],
        };
        let mut r = rng(3);
        let samples: Vec<f64> = (0..100_000).map(|_| d.sample(&mut r)).collect();
        let frac = |x: f64| samples.iter().filter(|&&s| s <= x).count() as f64 / 1e5;
        // P(X <= 1000) = 0.5, P(X <= 18450) = 0.7 (halfway along the second segment).
        assert!((frac(1000.0) - 0.5).abs() < 0.01, "{}", frac(1000.0));
        assert!((frac(18_450.0) - 0.7).abs() < 0.01, "{}", frac(18_450.0));
        assert!(samples.iter().all(|&s| (1000.0..=100_000.0).contains(&s)));
    }
}
