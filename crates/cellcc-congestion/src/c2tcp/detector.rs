//! The Condition Detector: C2TCP JSAC Algorithm 1 (and IFIP Algorithm 1, lines 5–14).
//!
//! Per RTT sample the caller says whether the sample is *good* (below the Setpoint, or
//! the IFIP Target) and which Interval applies; the detector keeps the CoDel-like episode
//! state (`first_time`, `next_time`, `N`) and tells the Action Enforcer what to do.
//!
//! ```text
//!          any state: rtt < Setpoint -> Increase, N := 1, episode ends
//!      +----------------------------------------------------------+
//!      v                                                          |
//!  +------+  rtt >= Setpoint    +--------+  now > next_time   +-----+
//!  | Good |-------------------->| Normal |------------------->| Bad |---+
//!  +------+  next_time :=       +--------+  Backoff,          +-----+   |
//!            now + Interval                 next_time := now +   ^      |
//!                                           Interval/√N, N += 1  +------+
//!                                           (again at each later next_time)
//! ```
//!
//! No timer and no windowed minimum are needed (JSAC §III-B2, "Notice"): a good sample
//! ends the episode at once; Interval passing without one is exactly "min RTT over the
//! last Interval stayed at or above the Setpoint".
//!
//! Differences from the papers, [`Fidelity::Linux`] only (reference patch, spec §1.4):
//! 1. Times are floored to µs when stored (the kernel's CoDel clock, 1.024 µs units, is
//!    modelled as µs) and `next_time` is floored to whole ms when compared.
//! 2. 1/√N comes from one CoDel Newton step per back-off on a Q0.16 reciprocal, seeded
//!    with one step from 1.0 at the start of each episode: the gaps after the first
//!    back-off are Interval × 1.0, 0.5, 0.5625, 0.4878… instead of 1/√1, 1/√2, 1/√3, 1/√4.
//!    The fixed-point step is our own (Q0.32 intermediate, 128-bit product) and may
//!    differ from the kernel's rounding in the last bit.

use super::config::Fidelity;
use crate::{Dur, Time};

/// Q0.16 reciprocal square root as CoDel stores it (`rec_inv_sqrt`): 0xFFFF ≈ 1.0.
const REC_INV_SQRT_ONE: u16 = u16::MAX;
/// ns per µs and per ms, for the kernel's clock resolutions.
const NS_PER_US: u64 = 1_000;
const NS_PER_MS: u64 = 1_000_000;

/// The network condition after the last RTT sample (JSAC §III-B1). The IFIP paper calls
/// Normal the "waiting phase".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Condition {
    /// The last RTT was below the Setpoint. Also the state before any sample.
    #[default]
    Good,
    /// RTTs at or above the Setpoint for less than an Interval.
    Normal,
    /// RTTs at or above the Setpoint for a whole Interval: back-offs every Interval/√N.
    Bad,
}

/// What the Action Enforcer must do for one sample (JSAC Algorithm 1 lines 13, 24).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Nothing (Normal condition, or Bad between two back-offs).
    None,
    /// Good condition: the additive increase of Eq. (1).
    Increase,
    /// Start (or continuation) of a Bad condition: ssthresh from the base, cwnd := 1.
    Backoff,
}

/// How the spacing Interval/√N is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Spacing {
    /// Exact integer square root of Interval²/N, in ns.
    Exact,
    /// CoDel's control law: Interval × `rec_inv_sqrt`/2^16, one Newton step per N.
    Newton { rec_inv_sqrt: u16 },
}

/// The detector's state (JSAC Algorithm 1 variables).
#[derive(Clone, Debug)]
pub struct Detector {
    condition: Condition,
    /// `first_time`: true while no above-Setpoint episode is running.
    first_time: bool,
    /// `next_time`: when the next back-off may happen.
    next_time: Time,
    /// `N`: back-offs of the current episode plus one.
    n: u32,
    spacing: Spacing,
    fidelity: Fidelity,
}

impl Detector {
    /// A detector in the Good condition with no episode running.
    pub fn new(fidelity: Fidelity) -> Self {
        Detector {
            condition: Condition::Good,
            first_time: true,
            next_time: Time::ZERO,
            n: 1,
            spacing: match fidelity {
                Fidelity::Paper => Spacing::Exact,
                Fidelity::Linux => Spacing::Newton {
                    rec_inv_sqrt: REC_INV_SQRT_ONE,
                },
            },
            fidelity,
        }
    }

    /// The condition after the last sample.
    pub fn condition(&self) -> Condition {
        self.condition
    }

    /// `N`, the count the next back-off's spacing divides by (1 outside episodes).
    pub fn backoffs_plus_one(&self) -> u32 {
        self.n
    }

    /// When the next back-off may happen (meaningful in Normal and Bad).
    pub fn next_time(&self) -> Time {
        self.next_time
    }

    /// One RTT sample at `now`: `good` if it is below the Setpoint; `interval` is the
    /// Interval a new episode or back-off uses.
    pub fn on_sample(&mut self, now: Time, good: bool, interval: Dur) -> Action {
        let now = self.clock(now);
        if good {
            // JSAC Algorithm 1 lines 9–13: Good; the episode (if any) ends.
            self.condition = Condition::Good;
            self.first_time = true;
            self.n = 1;
            Action::Increase
        } else if self.first_time {
            // Lines 15–18: the first sample above the Setpoint opens an episode.
            self.condition = Condition::Normal;
            self.next_time = now.saturating_add(interval);
            self.first_time = false;
            if let Spacing::Newton { rec_inv_sqrt } = &mut self.spacing {
                // Reference patch: N := 1 and one Newton step from 1.0.
                *rec_inv_sqrt = newton_step(REC_INV_SQRT_ONE, 1);
            }
            Action::None
        } else if now > self.deadline() {
            // Lines 20–24: a whole Interval (then Interval/√N) without a good sample.
            self.condition = Condition::Bad;
            self.next_time = now.saturating_add(self.spacing(interval));
            self.n = self.n.saturating_add(1);
            if let Spacing::Newton { rec_inv_sqrt } = &mut self.spacing {
                *rec_inv_sqrt = newton_step(*rec_inv_sqrt, self.n);
            }
            Action::Backoff
        } else {
            Action::None
        }
    }

    /// `now` at the resolution the detector stores times in.
    fn clock(&self, now: Time) -> Time {
        match self.fidelity {
            Fidelity::Paper => now,
            Fidelity::Linux => Time::from_ns(now.as_ns() / NS_PER_US * NS_PER_US),
        }
    }

    /// `next_time` as the comparison reads it (whole ms in the reference patch).
    fn deadline(&self) -> Time {
        match self.fidelity {
            Fidelity::Paper => self.next_time,
            Fidelity::Linux => Time::from_ns(self.next_time.as_ns() / NS_PER_MS * NS_PER_MS),
        }
    }

    /// Interval/√N with the current N (JSAC Algorithm 1 line 22).
    fn spacing(&self, interval: Dur) -> Dur {
        match self.spacing {
            Spacing::Exact => inv_sqrt_scale(interval, self.n),
            Spacing::Newton { rec_inv_sqrt } => {
                let us = interval.as_ns() / NS_PER_US;
                Dur::from_us((us * u64::from(rec_inv_sqrt)) >> 16)
            }
        }
    }
}

/// ⌊interval/√n⌋ in ns, exactly: ⌊√⌊interval²/n⌋⌋ = ⌊√(interval²/n)⌋.
pub fn inv_sqrt_scale(interval: Dur, n: u32) -> Dur {
    let ns = u128::from(interval.as_ns());
    let root = (ns * ns / u128::from(n.max(1))).isqrt();
    Dur::from_ns(root as u64)
}

/// One Newton–Raphson step towards 1/√n on a Q0.16 value, as CoDel iterates it:
/// x' = x·(3 − n·x²)/2.
pub fn newton_step(rec_inv_sqrt: u16, n: u32) -> u16 {
    // Q0.32 operands; x < 2^32 so x² fits in 64 bits before the shift.
    let x = u64::from(rec_inv_sqrt) << 16;
    let x2 = (x * x) >> 32;
    // Q2.32: 3 − n·x². n·x² stays near 1 once x tracks 1/√n, far below 3 · 2^32.
    let val = (3u64 << 32).saturating_sub(u64::from(n).saturating_mul(x2));
    let next = (u128::from(x) * u128::from(val)) >> 33;
    (next >> 16).min(u128::from(u16::MAX)) as u16
}
