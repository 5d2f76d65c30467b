//! The Tuner: C2TCP JSAC Algorithm 3 (§III-D), inside the controller.
//!
//! In the paper the Tuner is a user-space process that, every tuning cycle (0.5 s),
//! reads the average RTT of the flow's packets over the cycle and moves α (Setpoint =
//! α·MINRTT) so that the average RTT meets the application's Target. Here it runs on the
//! first ACK at or after the end of each cycle, from RTT samples the controller records,
//! so the core stays sans-I/O. A cycle with no RTT sample changes nothing.
//!
//! ```text
//!   every cycle:  avg_rtt < Target  ->  α grows   (at most to 10)
//!                 avg_rtt > Target  ->  α shrinks (at least to 1)
//!                 otherwise / no samples -> α unchanged
//! ```
//!
//! Differences from the paper:
//! 1. The cycle ends at the first ACK after it is due (no timer); the next cycle is
//!    measured from that ACK, like a user process that sleeps a cycle after each read.
//! 2. α is kept in thousandths (integer) and each step is floored to 0.001
//!    ([`Fidelity::Paper`]).
//! 3. Target 0 means 2 × MINRTT (the reference harness; the paper has no such value):
//!    with [`Fidelity::Paper`] it follows the current MINRTT every cycle.
//!
//! Differences from the paper that [`Fidelity::Linux`] adds (reference Tuner, spec §1.6):
//! 1. The update is multiplicative, as the paper's Eq. (16) derives it, not Algorithm 3's
//!    additive form: α ← α − ⌊2(avg − T)·α/avg⌋ and α ← α + ⌊⌊(T − avg)·α/2⌋/avg⌋, on α
//!    as a ×100 integer, with avg and T in whole ms.
//! 2. avg is the mean of the samples the kernel hook saw (none during CUBIC's 1-s
//!    blackout), floored to ms; an avg of 0 ms changes nothing.
//! 3. Target 0 becomes 2 × MINRTT once, at the first cycle that has a MINRTT, and stays.

use super::config::{Fidelity, MAX_ALPHA, MIN_ALPHA};
use crate::{Dur, Time};

/// α in thousandths: 1000 = 1.0.
pub const ALPHA_ONE: u32 = 1000;
/// Algorithm 3 bounds in thousandths.
const MIN_ALPHA_MILLI: u32 = MIN_ALPHA as u32 * ALPHA_ONE;
const MAX_ALPHA_MILLI: u32 = MAX_ALPHA as u32 * ALPHA_ONE;
/// The reference Tuner's α unit: the kernel's `alpha` is α × 100.
const KERNEL_ALPHA_ONE: u64 = 100;
/// Milli-α per kernel α unit.
const MILLI_PER_KERNEL_UNIT: u64 = ALPHA_ONE as u64 / KERNEL_ALPHA_ONE;
/// Target 0 means this many MINRTTs (reference harness).
const AUTO_TARGET_MIN_RTTS: u64 = 2;
const NS_PER_US: u64 = 1_000;
const US_PER_MS: u64 = 1_000;

/// The Tuner's state: the cycle's running average and its own α.
#[derive(Clone, Debug)]
pub struct Tuner {
    cycle: Dur,
    fidelity: Fidelity,
    /// End of the current cycle.
    next_tune: Time,
    /// α as the Tuner last wrote it, thousandths.
    alpha_milli: u32,
    /// Sum of this cycle's RTT samples (ns for Paper, µs for Linux) and their count.
    sum: u128,
    count: u64,
    /// Linux: Target 0 resolved once to 2 × MINRTT, whole ms.
    auto_target_ms: Option<u64>,
}

impl Tuner {
    /// A Tuner whose first cycle starts at `start`, with α = `alpha_milli`.
    pub fn new(cycle: Dur, fidelity: Fidelity, start: Time, alpha_milli: u32) -> Self {
        Tuner {
            cycle,
            fidelity,
            next_tune: start.saturating_add(cycle),
            alpha_milli,
            sum: 0,
            count: 0,
            auto_target_ms: None,
        }
    }

    /// α as the Tuner last set it, thousandths.
    pub fn alpha_milli(&self) -> u32 {
        self.alpha_milli
    }

    /// One RTT sample for this cycle's average.
    pub fn record(&mut self, rtt: Dur) {
        let v = match self.fidelity {
            Fidelity::Paper => rtt.as_ns(),
            Fidelity::Linux => rtt.as_ns() / NS_PER_US,
        };
        // Reference patch: only samples r > 0 enter the running mean.
        if self.fidelity == Fidelity::Linux && v == 0 {
            return;
        }
        self.sum += u128::from(v);
        self.count += 1;
    }

    /// Whether the current cycle is over at `now`.
    pub fn due(&self, now: Time) -> bool {
        now >= self.next_tune
    }

    /// End the cycle at `now`: update α from the cycle's average RTT, the application's
    /// `target` (zero: 2 × MINRTT) and `min_rtt` (MINRTT, if known). Returns the new α
    /// (thousandths) when the update changed it, and starts the next cycle.
    pub fn tune(&mut self, now: Time, target: Dur, min_rtt: Option<Dur>) -> Option<u32> {
        self.next_tune = now.saturating_add(self.cycle);
        let (sum, count) = (self.sum, self.count);
        self.sum = 0;
        self.count = 0;
        if count == 0 {
            return None;
        }
        let before = self.alpha_milli;
        self.alpha_milli = match self.fidelity {
            Fidelity::Paper => {
                let avg = (sum / u128::from(count)) as u64;
                let target = if target.is_zero() {
                    min_rtt?.as_ns() * AUTO_TARGET_MIN_RTTS
                } else {
                    target.as_ns()
                };
                paper_update(before, avg, target)
            }
            Fidelity::Linux => {
                let avg_ms = (sum / u128::from(count)) as u64 / US_PER_MS;
                let min_ms = min_rtt.map(|d| d.as_ns() / NS_PER_US / US_PER_MS);
                let target_ms = if target.is_zero() {
                    if self.auto_target_ms.is_none() {
                        self.auto_target_ms =
                            min_ms.filter(|&m| m > 0).map(|m| m * AUTO_TARGET_MIN_RTTS);
                    }
                    self.auto_target_ms?
                } else {
                    target.as_ns() / NS_PER_US / US_PER_MS
                };
                linux_update(before, avg_ms, target_ms)
            }
        };
        (self.alpha_milli != before).then_some(self.alpha_milli)
    }
}

/// C2TCP JSAC Algorithm 3 on α in thousandths; `avg_rtt` and `target` in the same unit.
pub fn paper_update(alpha_milli: u32, avg_rtt: u64, target: u64) -> u32 {
    let (avg, t, one) = (
        u128::from(avg_rtt),
        u128::from(target),
        u128::from(ALPHA_ONE),
    );
    if avg < t {
        // C2TCP JSAC Algorithm 3 lines 5–9: α += (Target − avg_rtt)/(2·avg_rtt), ≤ max_α.
        let step = (t - avg) * one / (2 * avg.max(1));
        let raised = u128::from(alpha_milli) + step;
        raised.min(u128::from(MAX_ALPHA_MILLI)) as u32
    } else if t < avg {
        // Lines 11–14: α −= 2·(avg_rtt − Target)/Target, ≥ min_α.
        let step = 2 * (avg - t) * one / t.max(1);
        let lowered = u128::from(alpha_milli).saturating_sub(step);
        lowered.max(u128::from(MIN_ALPHA_MILLI)) as u32
    } else {
        alpha_milli
    }
}

/// The reference Tuner's update (spec §1.6) on α in thousandths, computed on the
/// kernel's ×100 integer; `avg_ms` and `target_ms` in whole ms.
pub fn linux_update(alpha_milli: u32, avg_ms: u64, target_ms: u64) -> u32 {
    let alpha = i128::from(u64::from(alpha_milli) / MILLI_PER_KERNEL_UNIT);
    let (avg, t) = (i128::from(avg_ms), i128::from(target_ms));
    let min = (MIN_ALPHA_MILLI as u64 / MILLI_PER_KERNEL_UNIT) as i128;
    let max = (MAX_ALPHA_MILLI as u64 / MILLI_PER_KERNEL_UNIT) as i128;
    let next = if avg > t {
        // C2TCP JSAC Eq. (16), decrease: Setpoint_new = Setpoint·(avg − 2(avg − T))/avg.
        (alpha - 2 * (avg - t) * alpha / avg).max(min)
    } else if 0 < avg && avg < t {
        // Eq. (16), increase: Setpoint_new = Setpoint·(T − (T − avg)/2)/avg.
        (alpha + (t - avg) * alpha / 2 / avg).min(max)
    } else {
        alpha
    };
    (next as u64 * MILLI_PER_KERNEL_UNIT) as u32
}
