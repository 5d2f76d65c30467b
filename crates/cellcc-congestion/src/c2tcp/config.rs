//! Scenario parameters of both C2TCP versions, their defaults and their validation.
//!
//! Config is separate from state: [`C2tcpConfig`] (JSAC 2019, scheme `c2tcp`) and
//! [`C2tcpIfipConfig`] (IFIP Networking 2018, scheme `c2tcp-ifip`) hold documented
//! defaults and build [`super::C2tcp`]; the controller keeps only dynamic state. Times
//! are given in milliseconds (as the kernel's sysctls and the papers give them) and turned
//! into [`Dur`] once, when the controller is built.

use serde::Deserialize;

use crate::cubic::CubicConfig;
use crate::{ConfigError, Dur};

/// Smallest α (Setpoint = α·MINRTT); C2TCP JSAC Algorithm 3 line 3 (`min_α = 1`).
pub const MIN_ALPHA: f64 = 1.0;
/// Largest α; C2TCP JSAC Algorithm 3 line 4 (`max_α = 10`).
pub const MAX_ALPHA: f64 = 10.0;
/// Largest Target, Interval or schedule time accepted, ms: one minute is far beyond any
/// delay an interactive application would ask for and keeps every product in 64 bits.
const MAX_MS: f64 = 60_000.0;
/// Largest schedule time, s (one day of simulated time).
const MAX_SCHEDULE_S: f64 = 86_400.0;

/// Which of the two descriptions of C2TCP to reproduce where they differ.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fidelity {
    /// The papers' pseudo-code, in exact nanosecond arithmetic (the default).
    #[default]
    Paper,
    /// The authors' Linux 4.13 patch and user-space Tuner: millisecond flooring, the
    /// hook skipped for 1 s after a CUBIC epoch start, per-ACK increase through the
    /// shared `snd_cwnd_cnt`, CoDel's Newton-step 1/√N, the Tuner's ×100 integer α.
    Linux,
}

/// The loss-based algorithm C2TCP refines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Base {
    /// CUBIC with HyStart, as both papers and the reference patch use (the default).
    #[default]
    Cubic,
    /// Linux Reno (NewReno recovery in the stack).
    Newreno,
}

/// Parameters of C2TCP as in the JSAC 2019 paper (scheme `c2tcp`).
///
/// Read from a scenario's `params` table; missing keys take the defaults, unknown keys
/// are errors, and [`C2tcpConfig::validate`] names the field of any out-of-range value.
#[derive(Clone, Debug, PartialEq, serde::Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct C2tcpConfig {
    /// The application's Target for the average RTT, ms (default 50, the JSAC
    /// evaluation's default and the reference `run.sh`). 0 means "2 × min RTT", as the
    /// reference harness does. Used by the Tuner only.
    pub target_ms: f64,
    /// Changes of Target during the flow: `[[t_s, target_ms], ...]`, t in seconds since
    /// the connection started (`init`), strictly increasing. From `t_s` on, Target is
    /// `target_ms` (0 again means 2 × min RTT). Default: none.
    pub target_schedule: Vec<[f64; 2]>,
    /// Initial α (Setpoint = α·MINRTT), in [1, 10]. Default 1.5, the reference Tuner's
    /// starting value (the paper gives none).
    pub alpha: f64,
    /// Run the Tuner (JSAC Algorithm 3). Without it α stays at `alpha`. Default true.
    pub tuner: bool,
    /// Tuning cycle, ms (default 500: the paper's "half a second", §III-D).
    pub tuning_cycle_ms: f64,
    /// `"paper"` (default) or `"linux"`: see [`Fidelity`].
    pub fidelity: Fidelity,
    /// `"cubic"` (default) or `"newreno"`.
    pub base: Base,
    /// CUBIC's own parameters when `base = "cubic"` (Linux module defaults when absent).
    pub cubic: Option<CubicConfig>,
}

impl Default for C2tcpConfig {
    fn default() -> Self {
        C2tcpConfig {
            target_ms: 50.0,
            target_schedule: Vec::new(),
            alpha: 1.5,
            tuner: true,
            tuning_cycle_ms: 500.0,
            fidelity: Fidelity::Paper,
            base: Base::Cubic,
            cubic: None,
        }
    }
}

/// Parameters of C2TCP as in the IFIP Networking 2018 paper (scheme `c2tcp-ifip`).
#[derive(Clone, Debug, PartialEq, serde::Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct C2tcpIfipConfig {
    /// Target RTT, ms: RTTs below it are a good condition (default 100, the IFIP
    /// evaluation's setting and the kernel sysctl's default).
    pub target_ms: f64,
    /// Interval, ms: how long RTTs must stay at or above Target before the first
    /// back-off (default 100, as `target_ms`).
    pub interval_ms: f64,
    /// `"paper"` (default) or `"linux"`: see [`Fidelity`].
    pub fidelity: Fidelity,
    /// `"cubic"` (default) or `"newreno"`.
    pub base: Base,
    /// CUBIC's own parameters when `base = "cubic"`.
    pub cubic: Option<CubicConfig>,
}

impl Default for C2tcpIfipConfig {
    fn default() -> Self {
        C2tcpIfipConfig {
            target_ms: 100.0,
            interval_ms: 100.0,
            fidelity: Fidelity::Paper,
            base: Base::Cubic,
            cubic: None,
        }
    }
}

/// Scheme names of the two versions, for errors.
const SCHEME: &str = "c2tcp";
const IFIP_SCHEME: &str = "c2tcp-ifip";

/// `v` is a finite number of ms in `lo..=MAX_MS` (`lo` excluded when `open`); with
/// Linux fidelity it must also be whole, as the kernel's sysctls and the Tuner's
/// arithmetic are in integer ms.
fn check_ms(
    scheme: &'static str,
    field: &str,
    v: f64,
    lo: f64,
    open: bool,
    fidelity: Fidelity,
) -> Result<(), ConfigError> {
    let below = if open { v <= lo } else { v < lo };
    if !v.is_finite() || below || v > MAX_MS {
        let lo_s = if open { "> " } else { ">= " };
        return Err(ConfigError::new(
            scheme,
            field,
            format!("{v} ms is out of range (must be {lo_s}{lo} and <= {MAX_MS})"),
        ));
    }
    if fidelity == Fidelity::Linux && !is_whole(v) {
        return Err(ConfigError::new(
            scheme,
            field,
            format!("{v} ms: fidelity = \"linux\" takes whole milliseconds, as the kernel does"),
        ));
    }
    Ok(())
}

/// Whether `v` is an integer up to decimal-to-binary rounding (1.15 × 100 is
/// 114.99999999999999).
fn is_whole(v: f64) -> bool {
    (v - v.round()).abs() < 1e-9
}

fn check_base(
    scheme: &'static str,
    base: Base,
    cubic: &Option<CubicConfig>,
) -> Result<(), ConfigError> {
    if base != Base::Cubic && cubic.is_some() {
        return Err(ConfigError::new(
            scheme,
            "cubic",
            "CUBIC parameters are only used with base = \"cubic\"",
        ));
    }
    Ok(())
}

impl C2tcpConfig {
    /// Check every value; the error names the first offending field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_ms(
            SCHEME,
            "target_ms",
            self.target_ms,
            0.0,
            false,
            self.fidelity,
        )?;
        let mut last_t = None;
        for (i, &[t_s, target_ms]) in self.target_schedule.iter().enumerate() {
            let field = format!("target_schedule[{i}]");
            if !t_s.is_finite() || !(0.0..=MAX_SCHEDULE_S).contains(&t_s) {
                return Err(ConfigError::new(
                    SCHEME,
                    field,
                    format!("time {t_s} s is out of range 0..={MAX_SCHEDULE_S}"),
                ));
            }
            if last_t.is_some_and(|last| t_s <= last) {
                return Err(ConfigError::new(
                    SCHEME,
                    field,
                    format!("time {t_s} s is not after the previous entry's; times must increase"),
                ));
            }
            last_t = Some(t_s);
            check_ms(SCHEME, &field, target_ms, 0.0, false, self.fidelity)?;
        }
        if !self.alpha.is_finite() || !(MIN_ALPHA..=MAX_ALPHA).contains(&self.alpha) {
            return Err(ConfigError::new(
                SCHEME,
                "alpha",
                format!(
                    "{} is out of range {MIN_ALPHA}..={MAX_ALPHA} (Setpoint = alpha × min RTT)",
                    self.alpha
                ),
            ));
        }
        if self.fidelity == Fidelity::Linux && !is_whole(self.alpha * 100.0) {
            return Err(ConfigError::new(
                SCHEME,
                "alpha",
                format!(
                    "{}: fidelity = \"linux\" takes alpha in steps of 0.01 (the kernel's ×100 integer)",
                    self.alpha
                ),
            ));
        }
        check_ms(
            SCHEME,
            "tuning_cycle_ms",
            self.tuning_cycle_ms,
            0.0,
            true,
            Fidelity::Paper,
        )?;
        check_base(SCHEME, self.base, &self.cubic)
    }

    /// α in thousandths (the controller's fixed point).
    pub(super) fn alpha_milli(&self) -> u32 {
        // Nearest thousandth; with Linux fidelity validate() has checked α is in 0.01s.
        (self.alpha * 1000.0).round() as u32
    }
}

impl C2tcpIfipConfig {
    /// Check every value; the error names the first offending field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_ms(
            IFIP_SCHEME,
            "target_ms",
            self.target_ms,
            0.0,
            true,
            self.fidelity,
        )?;
        check_ms(
            IFIP_SCHEME,
            "interval_ms",
            self.interval_ms,
            0.0,
            true,
            self.fidelity,
        )?;
        check_base(IFIP_SCHEME, self.base, &self.cubic)
    }
}

/// Milliseconds from a validated config to a duration, rounded to the nearest ns.
pub(super) fn ms_to_dur(ms: f64) -> Dur {
    Dur::from_secs_f64(ms / 1000.0)
}
