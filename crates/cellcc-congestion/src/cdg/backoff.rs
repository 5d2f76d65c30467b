//! CDG's backoff probability: `P(backoff) = 1 − e^(−g/G)` (Hayes & Armitage 2011,
//! Eq. (4)), evaluated in fixed point as Linux's `nexp_u32` does, and the deterministic
//! random stream that draws against it.

/// `e^(−x)` for `x = 256·2^k µs` (k = 0..15), as a multiplier scaled by 2^16:
/// `⌊65536·e^(−0.000256·2^k)⌋` (checked against `f64::exp` in the tests). Multiplying
/// together the factors of the set bits of `x >> 8` gives `e^(−x)` for the high bits.
const EXP_FACTORS: [u32; 16] = [
    65519, 65502, 65468, 65401, 65268, 65001, 64471, 63423, 61378, 57485, 50423, 38795, 22966,
    8048, 988, 14,
];
/// µs in the argument's unit (x is given in millionths).
const MICRO: u32 = 1_000_000;
/// Arguments from 2^24 µs on give e^(−16.7) < 2^−24: return 0 (as Linux does).
const NEXP_CUTOFF_MSB: u32 = u16::MAX as u32;

/// `nexp_u32`: `e^(−ux·10⁻⁶)·(2^32 − 1)`, to within a few parts in 10⁵.
pub(super) fn nexp_u32(ux: u32) -> u32 {
    let mut msb = ux >> 8;
    if msb > NEXP_CUTOFF_MSB {
        return 0;
    }
    // The low 8 bits (x < 256·10⁻⁶) linearly: e^(−x) ≈ 1 − x.
    let mut res = u32::MAX - (ux & 0xff) * (u32::MAX / MICRO);
    let mut k = 0;
    while msb != 0 {
        if msb & 1 != 0 {
            res = ((u64::from(res) * u64::from(EXP_FACTORS[k])) >> 16) as u32;
        }
        msb >>= 1;
        k += 1;
    }
    res
}

/// The deterministic stand-in for the kernel's `get_random_u32()`: a SplitMix64 stream
/// seeded from the flow (portable, equal on every machine, passes BigCrush).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct BackoffRng {
    state: u64,
}

impl BackoffRng {
    pub(super) fn new(seed: u64) -> Self {
        BackoffRng { state: seed }
    }

    /// Next 32 uniformly distributed bits (the high half of a SplitMix64 output).
    pub(super) fn next_u32(&mut self) -> u32 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 32) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factors_are_floored_exponentials() {
        for (k, &f) in EXP_FACTORS.iter().enumerate() {
            let x = 256e-6 * f64::from(1u32 << k);
            assert_eq!(f, (65536.0 * (-x).exp()).floor() as u32, "k = {k}");
        }
    }

    #[test]
    fn nexp_matches_the_exponential() {
        assert_eq!(nexp_u32(0), u32::MAX);
        // Worked number: grad 3000 µs × backoff_factor 42 = 126 000 → e^(−0.126) = 0.8816.
        let r = f64::from(nexp_u32(126_000)) / f64::from(u32::MAX);
        assert!((r - (-0.126f64).exp()).abs() < 1e-4, "{r}");
        for ux in [
            1u32, 200, 255, 256, 1000, 42_000, 500_000, 1_000_000, 3_000_000, 16_000_000,
        ] {
            let want = (-(f64::from(ux) * 1e-6)).exp();
            let got = f64::from(nexp_u32(ux)) / f64::from(u32::MAX);
            assert!(
                (got - want).abs() <= 1e-4 * want.max(1e-3),
                "x = {ux}: {got} vs {want}"
            );
        }
        assert_eq!(nexp_u32(1 << 24), 0);
    }

    #[test]
    fn the_stream_is_deterministic_per_seed() {
        let mut a = BackoffRng::new(7);
        let mut b = BackoffRng::new(7);
        let mut c = BackoffRng::new(8);
        let xa: Vec<u32> = (0..4).map(|_| a.next_u32()).collect();
        let xb: Vec<u32> = (0..4).map(|_| b.next_u32()).collect();
        let xc: Vec<u32> = (0..4).map(|_| c.next_u32()).collect();
        assert_eq!(xa, xb);
        assert_ne!(xa, xc);
    }
}
