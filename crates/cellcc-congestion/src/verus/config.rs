//! Verus parameters, with the SIGCOMM 2015 paper's and reference code's defaults
//! (`yzaki/verus`, `src/verus.hpp`).

use serde::{Deserialize, Serialize};

use crate::ConfigError;

/// Parameters of [`super::Verus`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VerusConfig {
    /// Epoch length ε, ms (§3: 5; reference `EPOCH`).
    pub epoch_ms: f64,
    /// δ₁: D_est decrease when the epoch's maximum delay rose, ms (reference `DELTA1` = 1).
    pub delta1_ms: f64,
    /// δ₂: D_est increase otherwise, and decrease when D̄_max/D_min > R, ms (`DELTA2` = 2).
    pub delta2_ms: f64,
    /// R: bound on D̄_max / D_min (reference `VERUS_R` = 2).
    pub r: f64,
    /// Multiplicative decrease on loss (`VERUS_M_DECREASE` = 0.7).
    pub beta: f64,
    /// Refit period of the delay profile, ms (`CURVE_TIMER` = 1 s).
    pub refit_ms: f64,
    /// Slow start ends when a delay sample exceeds this, ms (`SS_EXIT_THRESHOLD` = 500).
    pub ss_exit_delay_ms: f64,
    /// Smallest cwnd, packets (the reference's W ≥ 1; TCP's usual floor is 2).
    pub min_cwnd: u32,
    /// Largest window the profile covers, packets (the reference's `MAX_W_DELAY_CURVE`).
    pub max_window: u32,
}

impl Default for VerusConfig {
    fn default() -> Self {
        VerusConfig {
            epoch_ms: 5.0,
            delta1_ms: 1.0,
            delta2_ms: 2.0,
            r: 2.0,
            beta: 0.7,
            refit_ms: 1000.0,
            ss_exit_delay_ms: 500.0,
            min_cwnd: 2,
            max_window: 40_000,
        }
    }
}

/// Largest accepted time parameter, ms (one hour).
const MAX_MS: f64 = 3_600_000.0;
/// Largest profile, packets: one entry per window value.
const MAX_WINDOW: u32 = 1 << 20;

impl VerusConfig {
    /// Check every value; the error names the field and the accepted range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |field: &str, reason: String| Err(ConfigError::new("verus", field, reason));
        for (field, v) in [
            ("epoch_ms", self.epoch_ms),
            ("delta1_ms", self.delta1_ms),
            ("delta2_ms", self.delta2_ms),
            ("refit_ms", self.refit_ms),
            ("ss_exit_delay_ms", self.ss_exit_delay_ms),
        ] {
            if !(v.is_finite() && v > 0.0 && v <= MAX_MS) {
                return err(field, format!("{v} must be in (0, {MAX_MS}] ms"));
            }
        }
        if self.epoch_ms < 0.01 {
            return err("epoch_ms", format!("{} is below 10 µs", self.epoch_ms));
        }
        if !(self.r.is_finite() && self.r > 1.0) {
            return err("r", format!("{} must be > 1 (D_max ≥ D_min)", self.r));
        }
        if !(self.beta > 0.0 && self.beta < 1.0) {
            return err("beta", format!("{} must be in (0, 1)", self.beta));
        }
        if self.min_cwnd == 0 {
            return err("min_cwnd", "must be >= 1 (TCP sends nothing at 0)".into());
        }
        if !(self.min_cwnd..=MAX_WINDOW).contains(&self.max_window) {
            return err(
                "max_window",
                format!("{} must be in [min_cwnd, {MAX_WINDOW}]", self.max_window),
            );
        }
        Ok(())
    }
}
