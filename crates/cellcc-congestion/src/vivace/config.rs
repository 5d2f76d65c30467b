//! Parameters of PCC-Vivace: names from the paper, defaults from the reference
//! (see the module header of [`super`]).

use serde::{Deserialize, Serialize};

use crate::ConfigError;

/// Parameters of [`super::Vivace`]. Names follow the paper; defaults are the reference's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VivaceConfig {
    /// Throughput exponent t of Eq. 1 (0.9).
    pub exponent: f64,
    /// Latency coefficient b of Eq. 1 (900).
    pub latency_coeff: f64,
    /// Loss coefficient c of Eq. 1 (11.35).
    pub loss_coeff: f64,
    /// Probing step ε (0.05).
    pub epsilon: f64,
    /// Probing pairs per round (3).
    pub probe_pairs: u32,
    /// Conversion factor θ, (Mbit/s)² per unit utility (1.0995: 1 in the reference's
    /// units of 2²⁰ bit/s).
    pub theta: f64,
    /// Exponent of the confidence amplifier ⌊(n+1)/2⌋^e (1.2).
    pub amplifier_exponent: f64,
    /// Initial change bound ω₀ as a fraction of r (0.05).
    pub omega0: f64,
    /// Growth of the bound per clipped step (0.05).
    pub omega_step: f64,
    /// Smallest rate change per step, Mbit/s (0.5).
    pub min_change_mbps: f64,
    /// Rate floor, Mbit/s (0.5).
    pub min_rate_mbps: f64,
    /// RTT samples a useful MI needs before it may end (4).
    pub min_mi_rtt_samples: u32,
    /// MIs in the RTT-trend window (6).
    pub trend_mis: u32,
    /// cwnd cap as a multiple of r·min RTT (2).
    pub cwnd_gain: f64,
    /// Seed of the probing order (the scenario's flow seed unless given).
    pub seed: u64,
}

impl Default for VivaceConfig {
    fn default() -> Self {
        VivaceConfig {
            exponent: 0.9,
            latency_coeff: 900.0,
            loss_coeff: 11.35,
            epsilon: 0.05,
            probe_pairs: 3,
            theta: 1.048_576 * 1.048_576,
            amplifier_exponent: 1.2,
            omega0: 0.05,
            omega_step: 0.05,
            min_change_mbps: 0.5,
            min_rate_mbps: 0.5,
            min_mi_rtt_samples: 4,
            trend_mis: 6,
            cwnd_gain: 2.0,
            seed: 1,
        }
    }
}

impl VivaceConfig {
    /// Check every value; the error names the field and the accepted range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |field: &str, reason: String| Err(ConfigError::new("pcc-vivace", field, reason));
        for (field, v, lo, hi) in [
            ("exponent", self.exponent, 0.01, 1.0),
            ("latency_coeff", self.latency_coeff, 0.0, 1e6),
            ("loss_coeff", self.loss_coeff, 0.0, 1e6),
            ("epsilon", self.epsilon, 0.001, 0.5),
            ("theta", self.theta, 1e-6, 1e6),
            ("amplifier_exponent", self.amplifier_exponent, 0.0, 4.0),
            ("omega0", self.omega0, 0.001, 1.0),
            ("omega_step", self.omega_step, 0.0, 1.0),
            ("min_change_mbps", self.min_change_mbps, 0.0, 1e5),
            ("min_rate_mbps", self.min_rate_mbps, 0.001, 1e5),
            ("cwnd_gain", self.cwnd_gain, 1.0, 100.0),
        ] {
            if !(v.is_finite() && v >= lo && v <= hi) {
                return err(field, format!("{v} is outside [{lo}, {hi}]"));
            }
        }
        crate::config::check_ranges(
            "pcc-vivace",
            [
                ("probe_pairs", self.probe_pairs, 1, 16),
                ("min_mi_rtt_samples", self.min_mi_rtt_samples, 1, 1000),
                ("trend_mis", self.trend_mis, 3, 100),
            ],
        )
    }
}
