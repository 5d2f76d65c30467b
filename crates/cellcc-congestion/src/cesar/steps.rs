//! Bandwidth EWMA, pacing and the step-wise cwnd update (César §IV-D, §IV-E,
//! Eq. 2–10), evaluated once per set at its anchor packet i.
//!
//! ```text
//! BW_ewma_i = (1 − γ)·BW_ewma_{i−1} + γ·BW_i                              (2)
//! Pacing_i  = α·ρ_i·BW_ewma_i                                             (3)
//! ρ_i       = 1 + (1 − α)/α · (RTT_i − RTT_min)/RTT_i                     (4)
//! RTT_i > RTT_{i−1}:
//!   cwnd_i  = (1 − β)·cwnd_{i−1} + β·cwnd_{i−1}·RTT_min/(RTT_min + CD_i + BR_i)   (5)
//!   CD_i    = (RTT_i − RTT_{i−1})·BW_set_i/BW_i                           (6)
//!   BR_i    = (RTT_i − RTT_min)·max(0, BW_ewma_i − BW_i)/BW_ewma_i        (7)
//! RTT_i <= RTT_{i−1}:
//!   u_i     = cwnd_{i−1} + BW_ewma_i·SU·ρ_i·(RTT_{i−1} − RTT_i)/(RTT_{i−1} − RTT_min) (8)
//!   r_i     = (1 − β)·u_i + β·u_i·RTT_min/(RTT_min + BR_i)                (9)
//!   cwnd_i  = max(cwnd_{i−1}, r_i)                                        (10)
//! ```
//!
//! Units: bandwidths in packets per µs << 24 (BBR's `BW_UNIT`), delays as [`Dur`] (ns),
//! cwnd in bytes (packets × MSS, as the module keeps `cwnd_est`), gains in Q32
//! ([`GAIN_ONE`] = 1.0). Eq. 5 and 9 are evaluated in the equivalent form
//! `W − β·W·x/(RTT_min + x)`.
//!
//! The module's variant ([`Step::on_set_module`]) differs: it scales pacing and the
//! increase by `1 − g/200` with `g = ⌊100·(I − RTT_min)/I⌋` taken from the rate-sample
//! interval I of the ACK that closes the set (equal to ρ for α = 2 with RTT replaced by
//! I), shrinks the old window and adds the increase unshrunk, caps `BW_set/BW_i` at 1,
//! uses the pre-update BW_ewma in the equations, and updates the EWMA afterwards with
//! separately floored terms.

use super::config::{Gains, GAIN_ONE, GAIN_SHIFT};
use crate::bbr::BW_SCALE;
use crate::Dur;

/// ns per µs, for `bandwidth × time` products.
const NS_PER_US: u128 = 1000;
/// The module's queue-occupancy percentage is out of this (pacing gain `(200 − g)/200`).
const MODULE_GAIN_DENOM: u64 = 200;

/// Inputs of one set's adjustment.
#[derive(Clone, Copy, Debug)]
pub(super) struct SetInput {
    /// RTT_i: the anchor's RTT.
    pub rtt: Dur,
    /// RTT_min.
    pub min_rtt: Dur,
    /// BW_i: the anchor's bandwidth sample.
    pub bw: u64,
    /// BW_set_i, if the set's duration is known.
    pub bw_set: Option<u64>,
    /// Scheduling unit.
    pub su: Dur,
    /// Bytes per packet.
    pub mss: u32,
    /// Module rule only: the rate-sample interval of the ACK that closed the set.
    pub rs_interval: Option<Dur>,
}

/// César's state in STEADY (the module's `cwnd_est`, `ewma_bw`, `previous_previous_rtt`,
/// `pacing_gain`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// cwnd_i, bytes.
    pub cwnd_bytes: u64,
    /// BW_ewma, packets per µs << 24.
    pub bw_ewma: u64,
    /// RTT_{i−1}: the previous anchor's RTT (`None` before the first set).
    pub prev_rtt: Option<Dur>,
    /// Pacing rate over BW_ewma, Q32: α·ρ_i (Eq. 3), or the module's α·(200 − g)/200.
    pub pacing_gain: u64,
}

/// `a · b` for Q32 factors.
fn mul_q32(a: u64, b: u64) -> u64 {
    u64::try_from((u128::from(a) * u128::from(b)) >> GAIN_SHIFT).unwrap_or(u64::MAX)
}

/// `a + b` for delays, saturating.
fn add_dur(a: Dur, b: Dur) -> Dur {
    Dur::from_ns(a.as_ns().saturating_add(b.as_ns()))
}

/// `d · num / den` for a duration, saturating; `d` if `den` is zero.
fn scale_dur(d: Dur, num: u64, den: u64) -> Dur {
    if den == 0 {
        return d;
    }
    let ns = u128::from(d.as_ns()) * u128::from(num) / u128::from(den);
    Dur::from_ns(u64::try_from(ns).unwrap_or(u64::MAX))
}

/// César Eq. (2): `(1 − γ)·prev + γ·sample`, rounded to the nearest unit.
pub(super) fn ewma(prev: u64, sample: u64, gamma: u64) -> u64 {
    let gamma = u128::from(gamma.min(GAIN_ONE));
    let v = u128::from(prev) * (u128::from(GAIN_ONE) - gamma)
        + u128::from(sample) * gamma
        + u128::from(GAIN_ONE / 2);
    u64::try_from(v >> GAIN_SHIFT).unwrap_or(u64::MAX)
}

/// César Eq. (4): `ρ = 1 − (α − 1)/α · (RTT − RTT_min)/RTT`, Q32, in `[1/α, 1]`.
pub(super) fn rho(alpha: u64, rtt: Dur, min_rtt: Dur) -> u64 {
    let queue = rtt.saturating_sub(min_rtt).min(rtt);
    if rtt.is_zero() || alpha <= GAIN_ONE {
        return GAIN_ONE;
    }
    // (RTT − RTT_min)/RTT in Q32, at most 1.0.
    let share = (u128::from(queue.as_ns()) << GAIN_SHIFT) / u128::from(rtt.as_ns());
    let penalty = u128::from(alpha - GAIN_ONE) * share / u128::from(alpha);
    GAIN_ONE - u64::try_from(penalty).unwrap_or(GAIN_ONE).min(GAIN_ONE)
}

/// César Eq. (3) as a gain over BW_ewma: `α·ρ`.
pub(super) fn pacing_gain(alpha: u64, rho: u64) -> u64 {
    mul_q32(alpha, rho)
}

/// César Eq. (6): `CD = (RTT_i − RTT_{i−1})·BW_set/BW_i`. Without BW_set (first set)
/// the ratio is taken as 1.
pub(super) fn congestive_delay(rtt: Dur, prev_rtt: Dur, bw_set: Option<u64>, bw: u64) -> Dur {
    let rise = rtt.saturating_sub(prev_rtt);
    match bw_set {
        Some(set) => scale_dur(rise, set, bw),
        None => rise,
    }
}

/// César Eq. (7): `BR = (RTT_i − RTT_min)·max(0, BW_ewma − BW_i)/BW_ewma`.
pub(super) fn bandwidth_reduction(rtt: Dur, min_rtt: Dur, bw_ewma: u64, bw: u64) -> Dur {
    if bw >= bw_ewma {
        return Dur::ZERO;
    }
    scale_dur(rtt.saturating_sub(min_rtt), bw_ewma - bw, bw_ewma)
}

/// César Eq. (5) and (9): `(1 − β)·W + β·W·RTT_min/(RTT_min + x)`, evaluated as
/// `W − β·W·x/(RTT_min + x)`.
pub(super) fn shrink(cwnd_bytes: u64, beta: u64, min_rtt: Dur, x: Dur) -> u64 {
    if x.is_zero() {
        return cwnd_bytes;
    }
    let x_ns = u128::from(x.as_ns());
    let frac = (x_ns << GAIN_SHIFT) / (u128::from(min_rtt.as_ns()) + x_ns); // <= 1.0
    let cut = (u128::from(cwnd_bytes) * u128::from(beta.min(GAIN_ONE)) * frac) >> (2 * GAIN_SHIFT);
    cwnd_bytes - u64::try_from(cut).unwrap_or(cwnd_bytes).min(cwnd_bytes)
}

/// The increase term of César Eq. (8), bytes:
/// `BW_ewma·SU·ρ·(RTT_{i−1} − RTT_i)/(RTT_{i−1} − RTT_min)`. Zero when
/// `RTT_{i−1} = RTT_min` (then `RTT_i = RTT_min` too: 0/0), where the module divides
/// by zero.
pub(super) fn increase(
    bw_ewma: u64,
    su: Dur,
    mss: u32,
    rho: u64,
    prev_rtt: Dur,
    rtt: Dur,
    min_rtt: Dur,
) -> u64 {
    let span = prev_rtt.saturating_sub(min_rtt);
    let fall = prev_rtt.saturating_sub(rtt).min(span);
    if span.is_zero() || fall.is_zero() {
        return 0;
    }
    let ratio = (u128::from(fall.as_ns()) << GAIN_SHIFT) / u128::from(span.as_ns());
    // Bytes one SU carries at BW_ewma, << BW_SCALE (saturating: only absurd inputs
    // come near the limit).
    let mut v = u128::from(bw_ewma)
        .saturating_mul(u128::from(su.as_ns()))
        .saturating_mul(u128::from(mss))
        / NS_PER_US;
    v = v.saturating_mul(u128::from(rho)) >> GAIN_SHIFT;
    v = v.saturating_mul(ratio) >> GAIN_SHIFT;
    u64::try_from(v >> BW_SCALE).unwrap_or(u64::MAX)
}

impl Step {
    /// STEADY starts from this window and bandwidth, pacing at `α × BW_ewma`.
    pub(super) fn new(cwnd_bytes: u64, bw_ewma: u64, gains: &Gains) -> Self {
        Step {
            cwnd_bytes,
            bw_ewma: bw_ewma.max(1),
            prev_rtt: None,
            pacing_gain: gains.alpha,
        }
    }

    /// Pacing rate in packets per µs << 24: `pacing_gain · BW_ewma`.
    pub(super) fn pacing_bw(&self) -> u64 {
        mul_q32(self.bw_ewma, self.pacing_gain)
    }

    /// The paper's adjustment at anchor packet i (Eq. 2–10, in that order: the
    /// equations use BW_ewma_i, already updated with BW_i).
    pub(super) fn on_set_paper(&mut self, g: &Gains, inp: &SetInput) {
        // César Eq. (2).
        self.bw_ewma = ewma(self.bw_ewma, inp.bw, g.gamma).max(1);
        // César Eq. (4) and (3).
        let rho = rho(g.alpha, inp.rtt, inp.min_rtt);
        self.pacing_gain = pacing_gain(g.alpha, rho);

        if let Some(prev) = self.prev_rtt {
            // César Eq. (7).
            let br = bandwidth_reduction(inp.rtt, inp.min_rtt, self.bw_ewma, inp.bw);
            if inp.rtt > prev {
                // César Eq. (6) and (5).
                let cd = congestive_delay(inp.rtt, prev, inp.bw_set, inp.bw);
                self.cwnd_bytes = shrink(self.cwnd_bytes, g.beta, inp.min_rtt, add_dur(cd, br));
            } else {
                // César Eq. (8).
                let inc = increase(
                    self.bw_ewma,
                    inp.su,
                    inp.mss,
                    rho,
                    prev,
                    inp.rtt,
                    inp.min_rtt,
                );
                let u = self.cwnd_bytes.saturating_add(inc);
                // César Eq. (9) and (10).
                let r = shrink(u, g.beta, inp.min_rtt, br);
                self.cwnd_bytes = self.cwnd_bytes.max(r);
            }
        }
        self.prev_rtt = Some(inp.rtt);
    }

    /// The reference module's adjustment (its formulas, with the division by zero of
    /// the increase branch guarded).
    pub(super) fn on_set_module(&mut self, g: &Gains, inp: &SetInput) {
        let (r1, r_min, b, big_b) = (inp.rtt, inp.min_rtt, inp.bw, self.bw_ewma);
        // Queue occupancy from the closing ACK's rate-sample interval; the pacing gain
        // changes only when that interval exceeds RTT_min.
        let occupancy = match inp.rs_interval {
            Some(i) if i > r_min && i.as_us() > 0 => {
                let pct = 100 * (i.as_us() - r_min.as_us()) / i.as_us();
                let factor =
                    (MODULE_GAIN_DENOM - pct.min(MODULE_GAIN_DENOM)) * GAIN_ONE / MODULE_GAIN_DENOM;
                self.pacing_gain = mul_q32(g.alpha, factor);
                pct
            }
            _ => 0,
        };
        let factor =
            (MODULE_GAIN_DENOM - occupancy.min(MODULE_GAIN_DENOM)) * GAIN_ONE / MODULE_GAIN_DENOM;
        // RTT_{i−1} starts at 0, so the first adjustment always takes the decrease.
        let r0 = self.prev_rtt.unwrap_or(Dur::ZERO);
        let br = bandwidth_reduction(r1, r_min, big_b, b);
        if r1 <= r0 {
            let inc = increase(big_b, inp.su, inp.mss, factor, r0, r1, r_min);
            let shrunk = shrink(self.cwnd_bytes, g.beta, r_min, br);
            self.cwnd_bytes = self.cwnd_bytes.max(shrunk.saturating_add(inc));
        } else {
            // BW_set/BW_i only damps the rise (ratio capped at 1).
            let rise = match inp.bw_set {
                Some(set) if b > set => scale_dur(r1 - r0, set, b),
                _ => r1 - r0,
            };
            self.cwnd_bytes = shrink(self.cwnd_bytes, g.beta, r_min, add_dur(br, rise));
        }
        // EWMA after the adjustment, each term floored.
        self.bw_ewma = (big_b - mul_q32(big_b, g.gamma) + mul_q32(b, g.gamma)).max(1);
        self.prev_rtt = Some(r1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cesar::config::CesarConfig;

    const MSS: u32 = 1000;

    /// Packets per second in packets per µs << 24 (floor).
    fn pps(p: f64) -> u64 {
        (p * (1u64 << 24) as f64 / 1e6) as u64
    }
    fn ms(v: f64) -> Dur {
        Dur::from_secs_f64(v / 1000.0)
    }
    fn gains() -> Gains {
        Gains::from_config(&CesarConfig::default())
    }
    fn q32(v: u64) -> f64 {
        v as f64 / GAIN_ONE as f64
    }
    /// Within one byte of the hand-computed value in packets.
    fn assert_packets(bytes: u64, packets: f64) {
        let want = packets * f64::from(MSS);
        assert!(
            (bytes as f64 - want).abs() <= 1.0,
            "{bytes} bytes, expected {want:.3}"
        );
    }

    fn input(rtt: f64, bw: f64, bw_set: Option<f64>) -> SetInput {
        SetInput {
            rtt: ms(rtt),
            min_rtt: ms(40.0),
            bw: pps(bw),
            bw_set: bw_set.map(pps),
            su: ms(5.0),
            mss: MSS,
            rs_interval: None,
        }
    }

    fn step(cwnd_packets: u64, ewma_pps: f64, prev_rtt: f64) -> Step {
        Step {
            cwnd_bytes: cwnd_packets * u64::from(MSS),
            bw_ewma: pps(ewma_pps),
            prev_rtt: Some(ms(prev_rtt)),
            pacing_gain: 2 * GAIN_ONE,
        }
    }

    #[test]
    fn eq_2_ewma() {
        // (1 − 0.125)·1000 + 0.125·2000 = 1125.
        assert_eq!(ewma(1000, 2000, gains().gamma), 1125);
        assert_eq!(ewma(7, 7, gains().gamma), 7);
    }

    #[test]
    fn eq_3_4_pacing() {
        let g = gains();
        // RTT 60 ms, RTT_min 40 ms, α = 2: ρ = 1 − ½·20/60 = 0.833 333.
        let r = rho(g.alpha, ms(60.0), ms(40.0));
        assert!((q32(r) - 5.0 / 6.0).abs() < 1e-9, "{}", q32(r));
        // Pacing = 2 × 0.8333 × BW_ewma = 1.6667 × BW_ewma: 2000 packets/s at 1200.
        let gain = pacing_gain(g.alpha, r);
        let bw = mul_q32(pps(1200.0), gain);
        assert!((bw as f64 - pps(2000.0) as f64).abs() <= 1.0, "{bw}");
        // At RTT_min ρ = 1; as the RTT grows ρ tends to 1/α.
        assert_eq!(rho(g.alpha, ms(40.0), ms(40.0)), GAIN_ONE);
        assert!((q32(rho(g.alpha, ms(40_000.0), ms(40.0))) - 0.5005).abs() < 1e-9);
        // α = 3: ρ = 1 − ⅔·20/60 = 0.7778; pacing 2.3333 × BW_ewma.
        let alpha3 = 3 * GAIN_ONE;
        let r = rho(alpha3, ms(60.0), ms(40.0));
        assert!((q32(pacing_gain(alpha3, r)) - 7.0 / 3.0).abs() < 1e-8);
    }

    #[test]
    fn eq_5_6_7_decrease() {
        // cwnd 100 packets, RTT 50 -> 60 ms, RTT_min 40, BW_i 1000, BW_set 500 packets/s,
        // BW_ewma 1200 after Eq. 2 (so before: (1200 − 0.125·1000)/0.875 = 1228.571).
        let inp = input(60.0, 1000.0, Some(500.0));
        // CD = 10 ms × 500/1000 = 5 ms. (The bandwidths are floored to 2^-24 packets/µs,
        // so the ratio is 8388/16 777 = 0.499 97: within 1 µs.)
        let cd = congestive_delay(inp.rtt, ms(50.0), inp.bw_set, inp.bw);
        assert!((cd.as_ms_f64() - 5.0).abs() < 1e-3, "{cd}");
        // BR = 20 ms × (1200 − 1000)/1200 = 3.3333 ms.
        let br = bandwidth_reduction(inp.rtt, inp.min_rtt, pps(1200.0), inp.bw);
        assert!((br.as_ms_f64() - 10.0 / 3.0).abs() < 1e-3, "{br}");
        // cwnd = 0.95·100 + 0.05·100·40/(40 + 5 + 3.3333) = 95 + 4.137 931 = 99.137 931.
        let mut s = step(100, 1200.0 / 0.875 - 1000.0 * 0.125 / 0.875, 50.0);
        s.on_set_paper(&gains(), &inp);
        assert_packets(s.cwnd_bytes, 99.137_931);
        assert!((s.bw_ewma as f64 - pps(1200.0) as f64).abs() <= 1.0);
        assert_eq!(s.prev_rtt, Some(ms(60.0)));
        // Pacing: ρ = 0.8333, 2·ρ = 1.6667.
        assert!((q32(s.pacing_gain) - 5.0 / 3.0).abs() < 1e-8);
    }

    #[test]
    fn eq_8_9_10_increase() {
        // cwnd 100, RTT 60 -> 50 ms, RTT_min 40, SU 5 ms, BW_ewma 1200, BW_i 1000.
        // ρ = 1 − ½·10/50 = 0.9.
        // u = 100 + 1200·0.005·0.9·(60 − 50)/(60 − 40) = 100 + 2.7 = 102.7.
        let g = gains();
        let r = rho(g.alpha, ms(50.0), ms(40.0));
        let inc = increase(pps(1200.0), ms(5.0), MSS, r, ms(60.0), ms(50.0), ms(40.0));
        assert_packets(inc, 2.7);
        // BR = 10·200/1200 = 1.6667 ms; r = 102.7·(1 − 0.05·1.6667/41.6667) = 102.4946;
        // Eq. 10: max(100, 102.4946).
        let br = bandwidth_reduction(ms(50.0), ms(40.0), pps(1200.0), pps(1000.0));
        assert_packets(shrink(100_000 + inc, g.beta, ms(40.0), br), 102.494_6);
        // The same through on_set_paper, from the BW_ewma_{i−1} that Eq. 2 with
        // BW_i = 1000 turns into 1200: (1200 − 0.125·1000)/0.875.
        let mut s = step(100, 1200.0 / 0.875 - 1000.0 * 0.125 / 0.875, 60.0);
        s.on_set_paper(&g, &input(50.0, 1000.0, None));
        assert_packets(s.cwnd_bytes, 102.494_6);
        assert!((q32(s.pacing_gain) - 1.8).abs() < 1e-8, "2·ρ = 1.8");
    }

    #[test]
    fn eq_10_never_decreases_when_the_rtt_falls() {
        // RTT 60 -> 59 ms: ρ = 1 − ½·19/59 = 0.838 983;
        // u = 100 + 6·0.838 983·(1/20) = 100.251 695;
        // BW_i = 100 vs BW_ewma 1200: BR = 19·1100/1200 = 17.4167 ms;
        // r = 100.2517·(1 − 0.05·17.4167/57.4167) = 98.731 < 100, so cwnd stays 100.
        let g = gains();
        let r = rho(g.alpha, ms(59.0), ms(40.0));
        let inc = increase(pps(1200.0), ms(5.0), MSS, r, ms(60.0), ms(59.0), ms(40.0));
        assert_packets(inc, 0.251_695);
        let br = bandwidth_reduction(ms(59.0), ms(40.0), pps(1200.0), pps(100.0));
        assert_packets(shrink(100_000 + inc, g.beta, ms(40.0), br), 98.731);
        let mut s = step(100, 1200.0 / 0.875 - 100.0 * 0.125 / 0.875, 60.0);
        s.on_set_paper(&g, &input(59.0, 100.0, None));
        assert_eq!(s.cwnd_bytes, 100_000);
    }

    #[test]
    fn first_set_only_records_the_rtt_and_no_division_by_zero() {
        let g = gains();
        let mut s = Step::new(100_000, pps(1000.0), &g);
        s.on_set_paper(&g, &input(45.0, 1000.0, None));
        assert_eq!(s.cwnd_bytes, 100_000);
        assert_eq!(s.prev_rtt, Some(ms(45.0)));
        // RTT_{i−1} = RTT_i = RTT_min: the increase is 0/0, taken as 0.
        assert_eq!(
            increase(
                pps(1000.0),
                ms(5.0),
                MSS,
                GAIN_ONE,
                ms(40.0),
                ms(40.0),
                ms(40.0)
            ),
            0
        );
        let mut s = step(100, 1000.0, 40.0);
        s.on_set_paper(&g, &input(40.0, 1000.0, None));
        s.on_set_module(&g, &input(40.0, 1000.0, None));
        assert_eq!(s.cwnd_bytes, 100_000);
    }

    #[test]
    fn module_decrease_caps_the_set_ratio_and_updates_the_ewma_after() {
        let g = gains();
        // Same inputs as eq_5_6_7 but BW_set 2000 > BW_i 1000 and BW_ewma 1200 before.
        // Paper: CD = 10·2 = 20 ms -> 95 + 5·40/(40 + 20 + 3.3333) = 98.157 895.
        // Module: Δ = 10·min(1, 2) = 10 ms -> 95 + 5·40/53.3333 = 98.75.
        let mut m = step(100, 1200.0, 50.0);
        m.on_set_module(&g, &input(60.0, 1000.0, Some(2000.0)));
        assert_packets(m.cwnd_bytes, 98.75);
        // B := B − ⌊B/8⌋ + ⌊b/8⌋ = 1200 − 150 + 125 = 1175 packets/s (in BW units).
        let (b0, b) = (pps(1200.0), pps(1000.0));
        assert_eq!(m.bw_ewma, b0 - b0 / 8 + b / 8);
        // The paper's Eq. 6 with the same numbers (BW_ewma 1200 after Eq. 2).
        let cd = congestive_delay(ms(60.0), ms(50.0), Some(pps(2000.0)), b);
        let br = bandwidth_reduction(ms(60.0), ms(40.0), b0, b);
        assert_packets(shrink(100_000, g.beta, ms(40.0), cd + br), 98.157_895);
    }

    #[test]
    fn module_increase_uses_the_rate_interval_occupancy() {
        let g = gains();
        // RTT 60 -> 50 ms, RTT_min 40, I = 62.5 ms: g = ⌊100·22.5/62.5⌋ = 36, factor
        // 164/200 = 0.82. inc = 1200·0.005·0.82·10/20 = 2.46 packets.
        // BR = 10·200/1200 = 1.6667 ms: W' = 100·(1 − 0.05·1.6667/41.6667) = 99.8.
        // W = max(100, 99.8 + 2.46) = 102.26; pacing gain 2·0.82 = 1.64.
        let mut m = step(100, 1200.0, 60.0);
        let mut inp = input(50.0, 1000.0, None);
        inp.rs_interval = Some(ms(62.5));
        m.on_set_module(&g, &inp);
        assert_packets(m.cwnd_bytes, 102.26);
        assert!((q32(m.pacing_gain) - 1.64).abs() < 1e-9);
        // The module's first adjustment: RTT_{i−1} = 0, so the decrease branch with a
        // rise of the whole RTT: 95 + 5·40/(40 + 45) = 97.352 941 (BW_i = BW_ewma).
        let mut m = Step::new(100_000, pps(1000.0), &g);
        m.on_set_module(&g, &input(45.0, 1000.0, None));
        assert_packets(m.cwnd_bytes, 97.352_941);
    }
}
