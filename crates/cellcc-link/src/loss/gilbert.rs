//! Gilbert–Elliott bursty loss: a two-state Markov chain, each state with its own loss
//! probability.
//!
//! Sources: E. N. Gilbert, "Capacity of a burst-noise channel", Bell System Technical
//! Journal 39(5), 1960; E. O. Elliott, "Estimates of error rates for codes on burst-noise
//! channels", BSTJ 42(5), 1963. Parameter names as in G. Hasslinger, O. Hohlfeld, "The
//! Gilbert-Elliott Model for Packet Loss in Real Time Services on the Internet", MMB 2008
//! (`p`, `r`, `1 − k`, `1 − h`), which is also Linux netem's `loss gemodel p r 1-h 1-k`.
//!
//! ```text
//!              p (good → bad)
//!          ┌──────────────────┐
//!   ┌──────┴─┐              ┌─▼──────┐
//!   │  GOOD  │              │  BAD   │   each packet: lost with the current state's
//!   │loss_good              │loss_bad│   probability, then one transition step
//!   └──────▲─┘              └─┬──────┘
//!          └──────────────────┘
//!              r (bad → good)
//! ```
//!
//! Closed forms (per packet, stationary):
//! * P(bad) = p / (p + r); loss rate = (r × loss_good + p × loss_bad) / (p + r).
//! * With `loss_good = 0`, a loss happens only in the bad state and the next packet is
//!   lost with probability (1 − r) × loss_bad, so loss bursts are geometric with mean
//!   1 / (1 − (1 − r) × loss_bad); the simple Gilbert model (`loss_bad = 1`) gives 1 / r.
//!
//! Differences from netem: the chain starts in the good state, as in netem, but every
//! packet consumes exactly two draws (loss, then transition) from the caller's seeded
//! generator, so runs are reproducible.

use rand_core::Rng;

use super::BernoulliLoss;
use crate::params::{probability, ParamError};

/// Gilbert–Elliott parameters: `loss = { model = "gilbert-elliott", p = 0.01, r = 0.3 }`.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GilbertElliottConfig {
    /// Probability of moving from good to bad after a packet.
    pub p: f64,
    /// Probability of moving from bad to good after a packet.
    pub r: f64,
    /// Loss probability in the good state (`1 − k`). Default 0.
    #[serde(default)]
    pub loss_good: f64,
    /// Loss probability in the bad state (`1 − h`). Default 1 (Gilbert's model).
    #[serde(default = "one")]
    pub loss_bad: f64,
}

fn one() -> f64 {
    1.0
}

impl GilbertElliottConfig {
    /// Each probability in [0, 1], and `p + r > 0` (otherwise the chain never moves and
    /// the long-run rate is undefined; use a Bernoulli loss).
    pub fn validate(&self) -> Result<(), ParamError> {
        probability("p", self.p)?;
        probability("r", self.r)?;
        probability("loss_good", self.loss_good)?;
        probability("loss_bad", self.loss_bad)?;
        if self.p + self.r == 0.0 {
            return Err(ParamError::new(
                "r",
                "p and r are both 0, so the chain never leaves the good state; use a \
                 Bernoulli loss (`loss = <probability>`) instead",
            ));
        }
        Ok(())
    }

    /// Long-run fraction of packets lost.
    pub fn loss_rate(&self) -> f64 {
        (self.r * self.loss_good + self.p * self.loss_bad) / (self.p + self.r)
    }

    /// Mean length of a run of consecutive losses, when `loss_good = 0`.
    pub fn mean_burst_len(&self) -> Option<f64> {
        (self.loss_good == 0.0).then(|| 1.0 / (1.0 - (1.0 - self.r) * self.loss_bad))
    }
}

/// The Gilbert–Elliott loss process with its current state.
#[derive(Clone, Debug, PartialEq)]
pub struct GilbertElliott {
    config: GilbertElliottConfig,
    to_bad: BernoulliLoss,
    to_good: BernoulliLoss,
    lose_in_good: BernoulliLoss,
    lose_in_bad: BernoulliLoss,
    bad: bool,
}

impl GilbertElliott {
    /// Starts in the good state.
    pub fn new(config: GilbertElliottConfig) -> Result<Self, ParamError> {
        config.validate()?;
        Ok(GilbertElliott {
            config,
            to_bad: BernoulliLoss::new(config.p),
            to_good: BernoulliLoss::new(config.r),
            lose_in_good: BernoulliLoss::new(config.loss_good),
            lose_in_bad: BernoulliLoss::new(config.loss_bad),
            bad: false,
        })
    }

    /// The parameters the process runs with.
    pub fn config(&self) -> &GilbertElliottConfig {
        &self.config
    }

    /// Whether the chain is in the bad state.
    pub fn is_bad(&self) -> bool {
        self.bad
    }

    /// Whether the next packet is lost; then one step of the chain. Two draws.
    pub fn drops<R: Rng + ?Sized>(&mut self, rng: &mut R) -> bool {
        let lost = if self.bad {
            self.lose_in_bad.drops(rng)
        } else {
            self.lose_in_good.drops(rng)
        };
        let flip = if self.bad {
            self.to_good.drops(rng)
        } else {
            self.to_bad.drops(rng)
        };
        self.bad ^= flip;
        lost
    }
}
