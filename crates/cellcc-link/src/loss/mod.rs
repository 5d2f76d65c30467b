//! Random packet loss: i.i.d. Bernoulli loss (Mahimahi `mm-loss`, ravinet/mahimahi
//! `src/frontend/loss_queue.cc`), and [`LossModel`], which also offers bursty
//! Gilbert–Elliott loss ([`crate::GilbertElliott`]).
//!
//! A packet is dropped when a uniform 64-bit draw `u` is below `threshold = floor(p × 2^64)`,
//! so the drop probability is `p` to within 2^-64, with no floating point per packet.
//!
//! Differences from Mahimahi:
//! 1. Randomness comes from the caller's seeded generator, so runs are reproducible;
//!    `mm-loss` seeds from `std::random_device`.
//! 2. Every call consumes exactly one `u64`, whatever `p` (0 included). Draws therefore
//!    stay aligned across runs with different `p` from the same seed: the packets lost
//!    at a lower `p` are a subset of those lost at a higher one.

mod gilbert;

use rand_core::Rng;

use crate::params::{probability, ParamError};

pub use gilbert::{GilbertElliott, GilbertElliottConfig};

/// 2^64 as a float (exact).
const TWO_POW_64: f64 = 18_446_744_073_709_551_616.0;

/// A probability that is not in [0, 1].
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("loss probability {p} is not in [0, 1]; give a probability such as 0.01 for 1 %")]
pub struct LossError {
    /// The offending value.
    pub p: f64,
}

/// Independent loss with probability `p` per packet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BernoulliLoss {
    p: f64,
    /// `floor(p × 2^64)`; up to 2^64 (p = 1), hence `u128`.
    threshold: u128,
}

impl BernoulliLoss {
    /// No loss.
    pub const NONE: BernoulliLoss = BernoulliLoss {
        p: 0.0,
        threshold: 0,
    };

    /// # Panics
    /// If `p` is not in [0, 1]; user input should go through [`BernoulliLoss::try_new`].
    pub fn new(p: f64) -> Self {
        Self::try_new(p).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A loss process with probability `p`, or an error if `p` is not in [0, 1].
    pub fn try_new(p: f64) -> Result<Self, LossError> {
        if !(0.0..=1.0).contains(&p) {
            return Err(LossError { p });
        }
        // Scaling by a power of two is exact; the cast floors.
        let threshold = (p * TWO_POW_64) as u128;
        Ok(BernoulliLoss { p, threshold })
    }

    /// The loss probability per packet.
    pub fn p(&self) -> f64 {
        self.p
    }

    /// Whether the next packet is lost. Draws one `u64` from `rng`.
    pub fn drops<R: Rng + ?Sized>(&self, rng: &mut R) -> bool {
        u128::from(rng.next_u64()) < self.threshold
    }
}

impl Default for BernoulliLoss {
    fn default() -> Self {
        Self::NONE
    }
}

/// A loss process on entry to a link.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum LossModel {
    /// Never loses, and draws nothing.
    #[default]
    None,
    /// Independent loss; one draw per packet.
    Bernoulli(BernoulliLoss),
    /// Bursty loss; two draws per packet.
    GilbertElliott(GilbertElliott),
}

impl LossModel {
    /// Whether the next packet is lost.
    pub fn drops<R: Rng + ?Sized>(&mut self, rng: &mut R) -> bool {
        match self {
            LossModel::None => false,
            LossModel::Bernoulli(b) => b.drops(rng),
            LossModel::GilbertElliott(ge) => ge.drops(rng),
        }
    }

    /// Long-run fraction of packets lost.
    pub fn loss_rate(&self) -> f64 {
        match self {
            LossModel::None => 0.0,
            LossModel::Bernoulli(b) => b.p(),
            LossModel::GilbertElliott(ge) => ge.config().loss_rate(),
        }
    }
}

/// The `loss` key of a link: a plain probability (`loss = 0.01`, Bernoulli) or a table
/// naming the model:
///
/// ```toml
/// loss = { model = "bernoulli", p = 0.01 }
/// loss = { model = "gilbert-elliott", p = 0.01, r = 0.3, loss_good = 0.0, loss_bad = 1.0 }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
#[serde(tag = "model", rename_all = "kebab-case")]
pub enum LossConfig {
    /// Independent loss.
    Bernoulli {
        /// Loss probability per packet, in [0, 1].
        p: f64,
    },
    /// Bursty loss: a two-state Markov chain with a loss probability per state.
    GilbertElliott(GilbertElliottConfig),
}

impl Default for LossConfig {
    fn default() -> Self {
        LossConfig::Bernoulli { p: 0.0 }
    }
}

/// The table form of [`LossConfig`].
#[derive(serde::Deserialize)]
#[serde(tag = "model", rename_all = "kebab-case", deny_unknown_fields)]
enum LossTable {
    Bernoulli { p: f64 },
    GilbertElliott(GilbertElliottConfig),
}

impl<'de> serde::Deserialize<'de> for LossConfig {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = LossConfig;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a loss probability such as 0.01, or a table such as \
                     { model = \"gilbert-elliott\", p = 0.01, r = 0.3 }",
                )
            }
            fn visit_f64<E>(self, p: f64) -> Result<LossConfig, E> {
                Ok(LossConfig::Bernoulli { p })
            }
            fn visit_i64<E>(self, p: i64) -> Result<LossConfig, E> {
                Ok(LossConfig::Bernoulli { p: p as f64 })
            }
            fn visit_u64<E>(self, p: u64) -> Result<LossConfig, E> {
                Ok(LossConfig::Bernoulli { p: p as f64 })
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<LossConfig, A::Error> {
                let table: LossTable = serde::Deserialize::deserialize(
                    serde::de::value::MapAccessDeserializer::new(map),
                )?;
                Ok(match table {
                    LossTable::Bernoulli { p } => LossConfig::Bernoulli { p },
                    LossTable::GilbertElliott(ge) => LossConfig::GilbertElliott(ge),
                })
            }
        }
        deserializer.deserialize_any(Visit)
    }
}

impl LossConfig {
    /// Every probability in [0, 1]; the error names the key (`p`, `r`, `loss_bad`, ...).
    pub fn validate(&self) -> Result<(), ParamError> {
        match self {
            LossConfig::Bernoulli { p } => probability("p", *p).map(|_| ()),
            LossConfig::GilbertElliott(ge) => ge.validate(),
        }
    }

    /// The loss process; a zero Bernoulli probability gives [`LossModel::None`].
    pub fn build(&self) -> Result<LossModel, ParamError> {
        self.validate()?;
        Ok(match *self {
            LossConfig::Bernoulli { p: 0.0 } => LossModel::None,
            LossConfig::Bernoulli { p } => LossModel::Bernoulli(BernoulliLoss::new(p)),
            LossConfig::GilbertElliott(ge) => LossModel::GilbertElliott(GilbertElliott::new(ge)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    #[test]
    fn extremes_and_rejection() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        assert!((0..1000).all(|_| !BernoulliLoss::new(0.0).drops(&mut rng)));
        assert!((0..1000).all(|_| BernoulliLoss::new(1.0).drops(&mut rng)));
        assert!(BernoulliLoss::try_new(1.5).is_err());
        assert!(BernoulliLoss::try_new(-0.1).is_err());
        assert!(BernoulliLoss::try_new(f64::NAN)
            .unwrap_err()
            .to_string()
            .contains("not in [0, 1]"));
        assert_eq!(BernoulliLoss::new(0.5).threshold, 1 << 63);
    }

    #[test]
    fn rate_is_close_to_p_and_deterministic() {
        let loss = BernoulliLoss::new(0.1);
        let count = |seed| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            (0..100_000).filter(|_| loss.drops(&mut rng)).count()
        };
        let n = count(42);
        assert_eq!(n, count(42));
        // Binomial(1e5, 0.1): sd ≈ 95; allow 5 sd.
        assert!((9_525..=10_475).contains(&n), "{n}");
    }

    #[test]
    fn loss_config_spellings() {
        use crate::params::test_value::{from, V};
        assert_eq!(
            from::<LossConfig>(V::F(0.01)).unwrap(),
            LossConfig::Bernoulli { p: 0.01 }
        );
        assert_eq!(
            from::<LossConfig>(V::I(0)).unwrap(),
            LossConfig::Bernoulli { p: 0.0 }
        );
        assert_eq!(
            from::<LossConfig>(V::M(vec![("model", V::S("bernoulli")), ("p", V::F(0.2))])).unwrap(),
            LossConfig::Bernoulli { p: 0.2 }
        );
        let ge = from::<LossConfig>(V::M(vec![
            ("model", V::S("gilbert-elliott")),
            ("p", V::F(0.01)),
            ("r", V::F(0.3)),
        ]))
        .unwrap();
        assert_eq!(
            ge,
            LossConfig::GilbertElliott(GilbertElliottConfig {
                p: 0.01,
                r: 0.3,
                loss_good: 0.0,
                loss_bad: 1.0
            })
        );
        let e = from::<LossConfig>(V::M(vec![
            ("model", V::S("gilbert-elliott")),
            ("p", V::F(0.01)),
            ("r", V::F(0.3)),
            ("h", V::F(0.3)),
        ]))
        .unwrap_err();
        assert!(e.contains("unknown field `h`"), "{e}");
        let e = from::<LossConfig>(V::M(vec![("model", V::S("gilbert")), ("p", V::F(0.1))]))
            .unwrap_err();
        assert!(e.contains("gilbert"), "{e}");
        let e = from::<LossConfig>(V::S("1%")).unwrap_err();
        assert!(e.contains("a loss probability"), "{e}");
    }

    #[test]
    fn lower_p_loses_a_subset() {
        let (low, high) = (BernoulliLoss::new(0.05), BernoulliLoss::new(0.2));
        let mut a = ChaCha8Rng::seed_from_u64(3);
        let mut b = ChaCha8Rng::seed_from_u64(3);
        for _ in 0..10_000 {
            let (l, h) = (low.drops(&mut a), high.drops(&mut b));
            assert!(!l || h);
        }
    }
}
