//! Integer cube root for K, in the style of Linux's `cubic_root` (a small table plus one
//! Newton–Raphson step), with our own table and derivation.
//!
//! Derivation. Write `a` (bit length `b ≥ 7`) as `a ≈ i · 8^k` with `k = ⌈(b − 6)/3⌉`,
//! so that the 6-bit head `i = ⌊a / 8^k⌋` lies in `[8, 64)`. Then
//! `∛a ≈ ∛i · 2^k`, and `∛i` comes from a table in Q6 fixed point,
//! `CBRT_Q6[i] = ⌊64·∛i⌋`, giving `x₀ = ⌊CBRT_Q6[i] · 2^k / 64⌋`.
//! Dropping the low base-8 digits makes `a` too small by less than a factor `1 + 1/i ≤
//! 9/8`, so `x₀` is low by at most ≈ 4 %. One Newton–Raphson step on `f(x) = x³ − a`,
//! `x₁ = (2·x₀ + a/x₀²)/3`, maps a relative error `e` to ≈ `e²`: ≤ 0.16 %, which is
//! what the tests measure. Inputs below 64 read the table directly, rounded to the
//! nearest integer.

/// `CBRT_Q6[i] = ⌊∛(i · 2^18)⌋ = ⌊64·∛i⌋` for `i` in `0..64`: the cube roots of the 6-bit
/// integers in Q6 fixed point (the largest, `64·∛63 ≈ 254.7`, fits a byte).
const CBRT_Q6: [u8; 64] = cbrt_q6_table();

/// Number of significant bits kept in the table index.
const INDEX_BITS: u32 = 6;

const fn cbrt_q6_table() -> [u8; 64] {
    let mut table = [0u8; 64];
    let mut i = 0;
    while i < 64 {
        // Largest y with y³ ≤ i·2^18; y ≤ 254 so (y + 1)³ fits in u32.
        let target = (i as u32) << 18;
        let mut y: u32 = 0;
        while (y + 1) * (y + 1) * (y + 1) <= target {
            y += 1;
        }
        table[i] = y as u8;
        i += 1;
    }
    table
}

/// `∛a`, within 0.16 % or ±1 of the exact value, for every `u64`.
pub(super) fn cubic_root(a: u64) -> u32 {
    if a < (1 << INDEX_BITS) {
        // Round Q6 to the nearest integer.
        return (u32::from(CBRT_Q6[a as usize]) + 32) >> 6;
    }
    let bits = u64::BITS - a.leading_zeros();
    // Drop whole base-8 digits until INDEX_BITS significant bits remain.
    let k = (bits - INDEX_BITS).div_ceil(3);
    let head = (a >> (3 * k)) as usize;
    debug_assert!(
        (8..64).contains(&head),
        "a has bits - 3k in 4..=6 leading bits"
    );
    let x0 = (u64::from(CBRT_Q6[head]) << k) >> 6;
    // x0 ≥ (128 << 1) >> 6 = 4 because head ≥ 8 and k ≥ 1: the division is safe.
    debug_assert!(x0 >= 4);
    // Newton–Raphson for x³ = a: x1 = (2·x0 + a / x0²) / 3.
    ((2 * x0 + a / (x0 * x0)) / 3) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(a: u64) {
        let exact = (a as f64).cbrt();
        let got = f64::from(cubic_root(a));
        let err = (got - exact).abs();
        // The result is an integer: allow ±1 where 0.5 % is less than one unit.
        assert!(
            err <= 1.0 || err / exact <= 0.005,
            "cubic_root({a}) = {got}, exact {exact:.3}, error {:.4} %",
            100.0 * err / exact
        );
    }

    #[test]
    fn table_matches_its_definition() {
        assert_eq!(&CBRT_Q6[..9], &[0, 64, 80, 92, 101, 109, 116, 122, 128]);
        assert_eq!(CBRT_Q6[27], 192); // 64 · 3
        assert_eq!(CBRT_Q6[63], 254); // ⌊64 · 3.979⌋
    }

    #[test]
    fn small_inputs_round_to_nearest() {
        assert_eq!(cubic_root(0), 0);
        assert_eq!(cubic_root(1), 1);
        assert_eq!(cubic_root(8), 2);
        assert_eq!(cubic_root(27), 3);
        assert_eq!(cubic_root(63), 4);
        assert_eq!(cubic_root(64), 4);
        assert_eq!(cubic_root(1000), 10);
    }

    #[test]
    fn within_half_a_percent_from_1_to_2_pow_40() {
        // Every input below 2^16, then 40 steps per octave up to 2^40.
        for a in 1..(1u64 << 16) {
            check(a);
        }
        for e in 16 * 40..=40 * 40 {
            let a = 2f64.powf(f64::from(e) / 40.0) as u64;
            check(a);
            check(a + 1);
            check(a - 1);
        }
    }

    #[test]
    fn within_a_fifth_of_a_percent_in_the_range_cubic_uses() {
        // K = ∛(cube_factor · Δ) with cube_factor = ⌊2^40 / 410⌋ and Δ = W_max − cwnd in
        // 1..=10^6 packets: inputs from 2.7·10^9 to 2.7·10^15.
        let cube_factor = (1u64 << 40) / 410;
        let mut worst: f64 = 0.0;
        for delta in (1..=1_000_000u64).step_by(997).chain(1..=2000) {
            let a = cube_factor * delta;
            let exact = (a as f64).cbrt();
            worst = worst.max((f64::from(cubic_root(a)) - exact).abs() / exact);
        }
        assert!(worst < 0.002, "worst relative error {worst}");
    }

    #[test]
    fn full_u64_range_does_not_overflow() {
        // ∛(2^64 − 1) = 2642245.95
        let r = cubic_root(u64::MAX);
        assert!((2_640_000..=2_647_000).contains(&r), "{r}");
        assert_eq!(cubic_root(1 << 63), 2_097_152); // 2^21 exactly
    }
}
