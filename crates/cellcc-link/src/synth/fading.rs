//! Rayleigh fast fading by a sum of sinusoids, and the Gaussian draws of the channel.
//!
//! Source: Y. R. Zheng, C. Xiao, "Simulation models with correct statistical properties
//! for Rayleigh fading channels", IEEE Trans. Communications 51(6), 2003. With M
//! sinusoids at random arrival angles `α_n = (2πn − π + θ)/(4M)` and random phases, the
//! in-phase and quadrature components are independent and their autocorrelation tends to
//! Clarke's `J0(2π·f_d·τ)/2` each (W. C. Jakes, "Microwave Mobile Communications", 1974),
//! so |h|² is exponential with mean 1 and decorrelates over about `0.18 / f_d`
//! (J0² = 0.5).
//!
//! Differences from the paper:
//! 1. The angle offset θ and the phases come from the caller's seeded ChaCha8 stream.
//! 2. The process is sampled at the start of each TTI only (flat within a TTI).
//! 3. Normalised to E|h|² = 1 (each of the M in-phase and quadrature cosines has power
//!    1/2, scaled by 1/√M).

use std::f64::consts::PI;

use rand_chacha::ChaCha8Rng;
use rand_core::Rng;

/// Sinusoids per fading process; Zheng & Xiao show M = 8 already matches the Rayleigh
/// statistics, 16 tightens the autocorrelation at long lags.
const FADING_SINUSOIDS: usize = 16;

/// A uniform draw in [0, 1) with 53 random bits.
fn uniform(rng: &mut ChaCha8Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A standard normal draw (Box–Muller, cosine branch).
pub(crate) fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1 = 1.0 - uniform(rng); // (0, 1]: the logarithm stays finite
    let u2 = uniform(rng);
    (-2.0 * u1.ln()).sqrt() * (2.0 * PI * u2).cos()
}

/// One Rayleigh fading process (Zheng & Xiao 2003):
/// `h(t) = (1/√M)·Σ_n [cos(ω_d·t·cos α_n + φ_n) + j·cos(ω_d·t·sin α_n + ψ_n)]` with
/// `α_n = (2πn − π + θ)/(4M)`, n = 1..M, and θ, φ_n, ψ_n uniform on [−π, π). E|h|² = 1.
#[derive(Clone, Debug)]
pub(crate) struct RayleighProcess {
    omega_cos: [f64; FADING_SINUSOIDS],
    omega_sin: [f64; FADING_SINUSOIDS],
    phi: [f64; FADING_SINUSOIDS],
    psi: [f64; FADING_SINUSOIDS],
}

impl RayleighProcess {
    /// A process with maximum Doppler `doppler_hz`, phases drawn from `rng`.
    pub(super) fn new(doppler_hz: f64, rng: &mut ChaCha8Rng) -> Self {
        let omega_d = 2.0 * PI * doppler_hz;
        let m = FADING_SINUSOIDS as f64;
        let theta = 2.0 * PI * uniform(rng) - PI;
        let mut p = RayleighProcess {
            omega_cos: [0.0; FADING_SINUSOIDS],
            omega_sin: [0.0; FADING_SINUSOIDS],
            phi: [0.0; FADING_SINUSOIDS],
            psi: [0.0; FADING_SINUSOIDS],
        };
        for n in 0..FADING_SINUSOIDS {
            // Zheng & Xiao 2003, Eq. (5): α_n = (2πn − π + θ) / (4M), n from 1.
            let alpha = (2.0 * PI * (n + 1) as f64 - PI + theta) / (4.0 * m);
            p.omega_cos[n] = omega_d * alpha.cos();
            p.omega_sin[n] = omega_d * alpha.sin();
            p.phi[n] = 2.0 * PI * uniform(rng) - PI;
            p.psi[n] = 2.0 * PI * uniform(rng) - PI;
        }
        p
    }

    /// The complex gain at `t_s` seconds, as (in-phase, quadrature).
    pub(super) fn gain(&self, t_s: f64) -> (f64, f64) {
        let mut re = 0.0;
        let mut im = 0.0;
        for n in 0..FADING_SINUSOIDS {
            re += (self.omega_cos[n] * t_s + self.phi[n]).cos();
            im += (self.omega_sin[n] * t_s + self.psi[n]).cos();
        }
        let norm = (FADING_SINUSOIDS as f64).sqrt();
        (re / norm, im / norm)
    }

    /// |h(t)|², mean 1.
    pub(super) fn power(&self, t_s: f64) -> f64 {
        let (re, im) = self.gain(t_s);
        re * re + im * im
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    /// J0 worked values (Abramowitz & Stegun Table 9.1): J0(1) = 0.7652, J0(2) = 0.2239,
    /// J0(2.4048) = 0 (first zero).
    #[test]
    fn fading_autocorrelation_follows_clarke() {
        let doppler_hz = 100.0;
        let omega_d = 2.0 * PI * doppler_hz;
        let cases = [(1.0, 0.7652), (2.0, 0.2239), (2.4048, 0.0)];
        let mut mean_power = 0.0;
        let mut sums = [0.0; 3];
        let seeds = 40;
        let samples = 4000;
        for seed in 0..seeds {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let p = RayleighProcess::new(doppler_hz, &mut rng);
            for i in 0..samples {
                let t = i as f64 * 1.7e-3;
                let (re, _) = p.gain(t);
                mean_power += p.power(t);
                for (sum, &(x, _)) in sums.iter_mut().zip(&cases) {
                    let (re_lag, _) = p.gain(t + x / omega_d);
                    // E[re(t)·re(t+τ)] = J0(ω_d·τ)/2.
                    *sum += 2.0 * re * re_lag;
                }
            }
        }
        let n = (seeds * samples) as f64;
        assert!(
            (mean_power / n - 1.0).abs() < 0.05,
            "E|h|² = {}",
            mean_power / n
        );
        for (sum, &(x, j0)) in sums.iter().zip(&cases) {
            let r = sum / n;
            assert!((r - j0).abs() < 0.05, "x = {x}: {r} vs J0 = {j0}");
        }
    }
}
