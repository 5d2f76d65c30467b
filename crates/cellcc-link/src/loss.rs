//! I.i.d. Bernoulli packet loss (Mahimahi `mm-loss`, ravinet/mahimahi
//! `src/frontend/loss_queue.cc`).
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

use rand_core::Rng;

/// 2^64 as a float (exact).
const TWO_POW_64: f64 = 18_446_744_073_709_551_616.0;

/// A probability that is not in [0, 1].
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("loss probability {p} is not in [0, 1]; give a probability such as 0.01 for 1 %")]
pub struct LossError {
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

    pub fn try_new(p: f64) -> Result<Self, LossError> {
        if !(0.0..=1.0).contains(&p) {
            return Err(LossError { p });
        }
        // Scaling by a power of two is exact; the cast floors.
        let threshold = (p * TWO_POW_64) as u128;
        Ok(BernoulliLoss { p, threshold })
    }

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
