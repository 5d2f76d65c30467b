//! Coherence time of a sampled series: how long it takes to forget its value.
//!
//! Definition (used for the mobility acceptance test and in `docs/traces.md`):
//!
//! 1. Remove the slow part: subtract from each sample the mean of a centred window of
//!    `detrend_window` samples (truncated at the ends), or the global mean when
//!    `detrend_window` is 0 or 1.
//! 2. Normalised autocorrelation of the residual r at lag L:
//!    `ρ(L) = [Σ_{i < n−L} r_i·r_{i+L} / (n − L)] / [Σ r_i² / n]`, ρ(0) = 1.
//! 3. The coherence lag is where ρ first drops below `threshold`, interpolated linearly
//!    between the two lags around the crossing, in samples (so a value below 1 means
//!    "within one sample").
//!
//! For Clarke fading the autocorrelation of the power gain is J0²(2π·f_d·τ), which is
//! 0.5 at 2π·f_d·τ ≈ 1.13, τ ≈ 0.18 / f_d.
//!
//! Differences from the textbook definitions: T. S. Rappaport ("Wireless Communications",
//! 2nd ed., §5.4.3) gives T_c ≈ 9/(16π·f_d) = 0.179/f_d for correlation 0.5 (the value
//! above) and the rule of thumb 0.423/f_d; this measure is empirical, works on any
//! series (SINR, capacity per TTI, binned trace capacity) and states how slow variation
//! is removed.

/// The lag (in samples, interpolated) at which the autocorrelation of `samples`, after
/// removing a centred moving average of `detrend_window` samples, first drops below
/// `threshold`. `None` if the residual has no variance or never drops below the
/// threshold within half the series.
pub fn coherence_lag(samples: &[f64], detrend_window: usize, threshold: f64) -> Option<f64> {
    let n = samples.len();
    if n < 4 {
        return None;
    }
    let residual = detrend(samples, detrend_window);
    let variance = residual.iter().map(|r| r * r).sum::<f64>() / n as f64;
    if variance <= 0.0 {
        return None;
    }
    let mut previous = 1.0;
    for lag in 1..=n / 2 {
        let sum: f64 = residual[..n - lag]
            .iter()
            .zip(&residual[lag..])
            .map(|(a, b)| a * b)
            .sum();
        let rho = sum / (n - lag) as f64 / variance;
        if rho < threshold {
            let fraction = (previous - threshold) / (previous - rho);
            return Some((lag - 1) as f64 + fraction);
        }
        previous = rho;
    }
    None
}

fn detrend(samples: &[f64], window: usize) -> Vec<f64> {
    let n = samples.len();
    if window <= 1 {
        let mean = samples.iter().sum::<f64>() / n as f64;
        return samples.iter().map(|x| x - mean).collect();
    }
    let mut prefix = Vec::with_capacity(n + 1);
    prefix.push(0.0);
    for &x in samples {
        prefix.push(prefix.last().copied().unwrap_or(0.0) + x);
    }
    let half = window / 2;
    (0..n)
        .map(|i| {
            let lo = i.saturating_sub(half);
            let hi = (i + half + 1).min(n);
            samples[i] - (prefix[hi] - prefix[lo]) / (hi - lo) as f64
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_period_eight_square_wave() {
        // +1 ×4, −1 ×4, repeated 100 times: lag-1 pairs agree 6 times in 8, so
        // ρ(1) = (799 − 2·199)/799 = 0.5019 (199 sign changes among 799 pairs); lag-2
        // pairs agree half the time, ρ(2) = 0: the crossing interpolates to
        // 1 + 0.0019/0.5019 = 1.004.
        let samples: Vec<f64> = (0..800)
            .map(|i| if (i / 4) % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        let lag = coherence_lag(&samples, 0, 0.5).unwrap();
        assert!((lag - 1.0).abs() < 0.01, "{lag}");
    }

    #[test]
    fn white_noise_decorrelates_within_one_sample_and_constants_have_none() {
        // A deterministic pseudo-random sequence (linear congruential).
        let mut x: u64 = 1;
        let samples: Vec<f64> = (0..10_000)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 11) as f64 / (1u64 << 53) as f64
            })
            .collect();
        assert!(coherence_lag(&samples, 0, 0.5).unwrap() < 0.6);
        assert_eq!(coherence_lag(&[3.0; 100], 0, 0.5), None);
        // A ramp with only its global mean removed stays correlated for long lags.
        let ramp: Vec<f64> = (0..1000).map(f64::from).collect();
        assert!(coherence_lag(&ramp, 0, 0.5).unwrap() > 100.0);
    }
}
