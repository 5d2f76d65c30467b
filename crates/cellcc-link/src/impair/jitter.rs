//! Variable delay (jitter) that keeps packets in order.
//!
//! Motivation: on a cellular path the one-way delay of consecutive packets varies
//! (scheduling, retransmissions, processing); César §II-B calls this non-congestive delay.
//! Unlike `tc netem delay ... distribution`, which reorders packets whose extra delays
//! cross, a radio bearer delivers in order, so the release time is
//!
//! ```text
//!   release_i = max(release_{i-1}, arrival_i + extra_i)     extra_i ~ the distribution
//! ```
//!
//! and the jitter a packet sees can exceed its own draw when it waits behind an earlier,
//! more delayed one (the mean added delay is therefore at least the distribution's mean).
//!
//! Distributions (`dist`), in milliseconds:
//! * `uniform`: uniform in `[min_ms, max_ms]`; mean `(min_ms + max_ms) / 2`.
//! * `normal`: normal with `mean_ms`, `sd_ms`, truncated at 0 (a negative draw is drawn
//!   again), mean `mean_ms + sd_ms × φ(α) / (1 − Φ(α))`, `α = −mean_ms / sd_ms`.
//! * `exponential`: exponential with mean `mean_ms`.
//!
//! Differences from netem: order is kept (above); the stage owns a seeded ChaCha8
//! generator, so runs are reproducible; draws are rounded to whole nanoseconds. The
//! samplers use `f64` `ln`, `cos` and `sqrt` (Box–Muller, inversion); `ln` and `cos` come
//! from the platform's maths library, whose last-bit differences can change a sample by at
//! most about a nanosecond on another platform.

use cellcc_units::{Dur, Time};
use rand_chacha::ChaCha8Rng;

use crate::params::{dur_ms, ms_sample_to_dur, unit_f64, unit_f64_nonzero, ParamError};
use crate::stage::{held_stage_methods, HeldPackets, Stage};

/// The extra-delay distribution: `jitter = { dist = "uniform", max_ms = 5.0 }`.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "dist", rename_all = "snake_case", deny_unknown_fields)]
pub enum JitterConfig {
    /// Uniform in `[min_ms, max_ms]` (`min_ms` defaults to 0).
    Uniform {
        /// Smallest extra delay, ms (default 0).
        #[serde(default)]
        min_ms: f64,
        /// Largest extra delay, ms.
        max_ms: f64,
    },
    /// Normal truncated at 0; `mean_ms ≥ 0` keeps the redraw rate below one half.
    Normal {
        /// Mean of the untruncated normal, ms.
        mean_ms: f64,
        /// Standard deviation of the untruncated normal, ms.
        sd_ms: f64,
    },
    /// Exponential with the given mean.
    Exponential {
        /// Mean extra delay, ms.
        mean_ms: f64,
    },
}

impl JitterConfig {
    /// Every parameter a finite duration ≥ 0, and `min_ms ≤ max_ms`.
    pub fn validate(&self) -> Result<(), ParamError> {
        match *self {
            JitterConfig::Uniform { min_ms, max_ms } => {
                dur_ms("min_ms", min_ms)?;
                dur_ms("max_ms", max_ms)?;
                if min_ms > max_ms {
                    return Err(ParamError::new(
                        "min_ms",
                        format!("must not exceed max_ms = {max_ms}, got {min_ms}"),
                    ));
                }
            }
            JitterConfig::Normal { mean_ms, sd_ms } => {
                dur_ms("mean_ms", mean_ms)?;
                dur_ms("sd_ms", sd_ms)?;
            }
            JitterConfig::Exponential { mean_ms } => {
                dur_ms("mean_ms", mean_ms)?;
            }
        }
        Ok(())
    }

    /// One extra delay.
    fn sample(&self, rng: &mut ChaCha8Rng) -> Dur {
        let ms = match *self {
            JitterConfig::Uniform { min_ms, max_ms } => min_ms + (max_ms - min_ms) * unit_f64(rng),
            JitterConfig::Normal { mean_ms, sd_ms } => loop {
                // Box–Muller (one of the pair), redrawn while negative.
                let radius = (-2.0 * unit_f64_nonzero(rng).ln()).sqrt();
                let angle = std::f64::consts::TAU * unit_f64(rng);
                let x = mean_ms + sd_ms * radius * angle.cos();
                if x >= 0.0 {
                    break x;
                }
            },
            // Inversion: −mean × ln(U), U in (0, 1].
            JitterConfig::Exponential { mean_ms } => -mean_ms * unit_f64_nonzero(rng).ln(),
        };
        ms_sample_to_dur(ms.max(0.0))
    }
}

/// The jitter stage. See the module docs.
#[derive(Clone, Debug)]
pub struct Jitter<T> {
    config: JitterConfig,
    rng: ChaCha8Rng,
    last_release: Time,
    /// Release times non-decreasing (see `push`).
    held: HeldPackets<T>,
}

impl<T> Jitter<T> {
    /// A jitter stage drawing from `rng` (give each stage its own stream).
    pub fn new(config: JitterConfig, rng: ChaCha8Rng) -> Result<Self, ParamError> {
        config.validate()?;
        Ok(Jitter {
            config,
            rng,
            last_release: Time::ZERO,
            held: HeldPackets::new(),
        })
    }

    /// The distribution the stage draws from.
    pub fn config(&self) -> &JitterConfig {
        &self.config
    }
}

impl<T> Stage<T> for Jitter<T> {
    fn push(&mut self, now: Time, item: T, ip_len: u32) {
        let extra = self.config.sample(&mut self.rng);
        // FIFO: never before the previous packet.
        let release = now.saturating_add(extra).max(self.last_release);
        self.last_release = release;
        self.held.push(release, (item, ip_len));
    }

    held_stage_methods!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::test_value::{from, V};

    #[test]
    fn the_table_spelling() {
        let c: JitterConfig =
            from(V::M(vec![("dist", V::S("uniform")), ("max_ms", V::F(5.0))])).unwrap();
        assert_eq!(
            c,
            JitterConfig::Uniform {
                min_ms: 0.0,
                max_ms: 5.0
            }
        );
        let c: JitterConfig = from(V::M(vec![
            ("dist", V::S("normal")),
            ("mean_ms", V::F(2.0)),
            ("sd_ms", V::I(1)),
        ]))
        .unwrap();
        assert_eq!(
            c,
            JitterConfig::Normal {
                mean_ms: 2.0,
                sd_ms: 1.0
            }
        );
        let e = from::<JitterConfig>(V::M(vec![
            ("dist", V::S("exponential")),
            ("mean", V::F(2.0)),
        ]))
        .unwrap_err();
        assert!(e.contains("unknown field `mean`"), "{e}");
        let e = from::<JitterConfig>(V::M(vec![("dist", V::S("pareto"))])).unwrap_err();
        assert!(e.contains("pareto"), "{e}");
    }
}
