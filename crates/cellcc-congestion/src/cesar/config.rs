//! César parameters: the paper's α, β, γ, the reference module's options, and the
//! inner BBR used as the fallback.
//!
//! Defaults are the paper's (§V-A: α = 2, β = 0.05, γ = 0.125), which are also the
//! reference module's defaults (`cesar_alpha = 2`, `cesar_beta = 5` %, `cesar_gamma = 8`,
//! i.e. 1/8). The real-valued gains are converted once, in [`Gains::from_config`], to
//! 32-bit binary fixed point so the per-ACK arithmetic is integer only.

use serde::Deserialize;

use super::su::{DECISION_GAPS, MIN_DECISION_GAPS};
use crate::bbr::BbrConfig;
use crate::{ConfigError, Dur};

/// Where the reference module's behaviour differs from the paper, which one to follow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fidelity {
    /// The paper's algorithm (§IV), with the choices documented in the module header
    /// where the paper is silent.
    #[default]
    Paper,
    /// The reference module's behaviour where it differs from the paper: SU decision
    /// rule, set accounting, per-ACK rate samples as BW_i, its pacing and cwnd update
    /// formulas. Its crash cases are guarded (see the module header).
    Module,
}

/// Parameters of [`super::Cesar`]. Names follow the paper (α, β, γ) and the module.
#[derive(Clone, Debug, PartialEq, serde::Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CesarConfig {
    /// α: pacing multiplier over BW_ewma (César Eq. 3–4; paper α > 1; default 2). The
    /// RTT penalty ρ scales it back toward 1× as the RTT grows. Range 1..=16.
    pub alpha: f64,
    /// β: weight of the delay-driven cwnd decrease (César Eq. 5 and 9; 0 < β < 1;
    /// default 0.05).
    pub beta: f64,
    /// γ: EWMA weight of the bandwidth estimate (César Eq. 2; 0 < γ < 1; default 0.125).
    pub gamma: f64,
    /// A fixed scheduling unit in ms instead of estimating it (module parameter
    /// `cesar_scheduling_unit`, there in µs with 0 meaning "estimate"). Default: estimate.
    /// Range 0.1..=1000 ms.
    pub fixed_su_ms: Option<f64>,
    /// Paper or reference-module behaviour where they differ. Default `"paper"`.
    pub fidelity: Fidelity,
    /// ACK gaps (of less than 20 ms) collected per scheduling-unit decision
    /// (`PATTERN_DECISON_PERIOD`, default 250). Range 32..=1 000 000.
    pub decision_gaps: u32,
    /// cwnd floor, packets (`cesar_cwnd_min_target`, default 4). At least 1.
    pub cwnd_min_target: u32,
    /// The BBR that runs before the first decision and as the fallback when no cellular
    /// pattern is found (default: Linux BBR v1). The module's 1.2 full-pipe threshold is
    /// `bbr = { full_bw_thresh = 307 }`.
    pub bbr: BbrConfig,
}

impl Default for CesarConfig {
    fn default() -> Self {
        CesarConfig {
            alpha: 2.0,
            beta: 0.05,
            gamma: 0.125,
            fixed_su_ms: None,
            fidelity: Fidelity::Paper,
            decision_gaps: DECISION_GAPS,
            cwnd_min_target: 4,
            bbr: BbrConfig::default(),
        }
    }
}

/// Largest α accepted: beyond it ρ and the pacing rate lose their meaning.
const MAX_ALPHA: f64 = 16.0;
/// Smallest and largest fixed scheduling unit, ms.
const FIXED_SU_MS_RANGE: (f64, f64) = (0.1, 1000.0);
/// Largest decision period, in gaps.
const MAX_DECISION_GAPS: u32 = 1_000_000;

impl CesarConfig {
    /// Check every value; the error names the field. The controller never panics on
    /// any value, but out-of-range gains make the equations meaningless.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |field: &str, reason: String| Err(ConfigError::new("cesar", field, reason));
        if !(self.alpha.is_finite() && (1.0..=MAX_ALPHA).contains(&self.alpha)) {
            return err(
                "alpha",
                format!("{} is outside 1..={MAX_ALPHA} (paper: α > 1)", self.alpha),
            );
        }
        for (field, v) in [("beta", self.beta), ("gamma", self.gamma)] {
            if !(v.is_finite() && v > 0.0 && v < 1.0) {
                return err(field, format!("{v} must lie strictly between 0 and 1"));
            }
        }
        if let Some(ms) = self.fixed_su_ms {
            let (lo, hi) = FIXED_SU_MS_RANGE;
            if !(ms.is_finite() && (lo..=hi).contains(&ms)) {
                return err("fixed_su_ms", format!("{ms} is outside {lo}..={hi} ms"));
            }
        }
        if !(MIN_DECISION_GAPS..=MAX_DECISION_GAPS).contains(&self.decision_gaps) {
            return err(
                "decision_gaps",
                format!(
                    "{} is outside {MIN_DECISION_GAPS}..={MAX_DECISION_GAPS}",
                    self.decision_gaps
                ),
            );
        }
        if self.cwnd_min_target == 0 {
            return err("cwnd_min_target", "must be at least 1 packet".into());
        }
        self.bbr.validate().map_err(|e| ConfigError {
            scheme: "cesar",
            field: format!("bbr.{}", e.field),
            reason: e.reason,
        })
    }

    /// The fixed scheduling unit, if one is configured.
    pub fn fixed_su(&self) -> Option<Dur> {
        self.fixed_su_ms.map(|ms| Dur::from_secs_f64(ms / 1000.0))
    }
}

/// Fractional bits of the fixed-point gains: `1.0` is `1 << 32`.
pub(super) const GAIN_SHIFT: u32 = 32;
/// A gain of 1.0.
pub(super) const GAIN_ONE: u64 = 1 << GAIN_SHIFT;

/// α, β, γ in 32-bit binary fixed point (β = 0.05 is 214 748 365 / 2^32, an error of
/// 1e-9 relative).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Gains {
    pub alpha: u64,
    pub beta: u64,
    pub gamma: u64,
}

impl Gains {
    /// Round each gain to the nearest 2^-32. Out-of-range values are clamped so that a
    /// config that skipped [`CesarConfig::validate`] still cannot overflow.
    pub(super) fn from_config(c: &CesarConfig) -> Self {
        let q = |v: f64, lo: f64, hi: f64| {
            let v = if v.is_finite() { v.clamp(lo, hi) } else { lo };
            (v * GAIN_ONE as f64).round() as u64
        };
        Gains {
            alpha: q(c.alpha, 1.0, MAX_ALPHA),
            beta: q(c.beta, 0.0, 1.0),
            gamma: q(c.gamma, 0.0, 1.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde::de::value::{Error as DeError, MapDeserializer};
    use serde::de::IntoDeserializer;

    /// Deserialize a table whose values all have one type (serde's value
    /// deserializers; TOML parsing is tested with the scheme registry).
    fn from_pairs<'a, V>(pairs: Vec<(&'a str, V)>) -> Result<CesarConfig, String>
    where
        V: IntoDeserializer<'a, DeError>,
    {
        CesarConfig::deserialize(MapDeserializer::<_, DeError>::new(pairs.into_iter()))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_are_the_papers_and_validate() {
        let c = CesarConfig::default();
        assert_eq!((c.alpha, c.beta, c.gamma), (2.0, 0.05, 0.125));
        assert_eq!(c.fixed_su_ms, None);
        assert_eq!(c.fidelity, Fidelity::Paper);
        assert_eq!(c.decision_gaps, 250);
        assert_eq!(c.cwnd_min_target, 4);
        assert_eq!(c.validate(), Ok(()));
        let g = Gains::from_config(&c);
        assert_eq!(g.alpha, 2 << 32);
        // 0.05 × 2^32 = 214 748 364.8 -> 214 748 365; 0.125 × 2^32 = 2^29 exactly.
        assert_eq!(g.beta, 214_748_365);
        assert_eq!(g.gamma, 1 << 29);
    }

    #[test]
    fn reads_partial_tables_and_rejects_unknown_keys() {
        let c = from_pairs(vec![("alpha", 3.0), ("gamma", 0.25)]).unwrap();
        assert_eq!((c.alpha, c.beta, c.gamma), (3.0, 0.05, 0.25));
        let c = CesarConfig {
            fixed_su_ms: Some(2.5),
            ..CesarConfig::default()
        };
        assert_eq!(c.fixed_su(), Some(Dur::from_us(2500)));
        let c = from_pairs(vec![("fidelity", "module")]).unwrap();
        assert_eq!(c.fidelity, Fidelity::Module);
        let e = from_pairs(vec![("alpah", 2.0)]).unwrap_err();
        assert!(e.contains("unknown field `alpah`"), "{e}");
        let e = from_pairs(vec![("fidelity", "kernel")]).unwrap_err();
        assert!(e.contains("unknown variant `kernel`"), "{e}");
    }

    #[test]
    fn validate_names_the_field() {
        let field = |c: CesarConfig| c.validate().unwrap_err().field;
        let d = CesarConfig::default;
        assert_eq!(field(CesarConfig { alpha: 0.5, ..d() }), "alpha");
        assert_eq!(
            field(CesarConfig {
                alpha: f64::NAN,
                ..d()
            }),
            "alpha"
        );
        assert_eq!(field(CesarConfig { beta: 0.0, ..d() }), "beta");
        assert_eq!(field(CesarConfig { beta: 1.0, ..d() }), "beta");
        assert_eq!(field(CesarConfig { gamma: 1.5, ..d() }), "gamma");
        assert_eq!(
            field(CesarConfig {
                fixed_su_ms: Some(0.0),
                ..d()
            }),
            "fixed_su_ms"
        );
        assert_eq!(
            field(CesarConfig {
                decision_gaps: 10,
                ..d()
            }),
            "decision_gaps"
        );
        assert_eq!(
            field(CesarConfig {
                cwnd_min_target: 0,
                ..d()
            }),
            "cwnd_min_target"
        );
        let mut c = d();
        c.bbr.high_gain = 5000;
        let e = c.validate().unwrap_err();
        assert_eq!(e.field, "bbr.high_gain");
        assert!(
            e.to_string().starts_with("cesar.bbr.high_gain: 5000"),
            "{e}"
        );
    }
}
