//! Cellular MAC scheduling as two release gates on the path: the UE's uplink
//! scheduling-request/grant cycle ([`UplinkGrant`]) and the base station's bursty
//! downlink service ([`DownlinkGate`]), with an optional TDD uplink/downlink pattern.
//!
//! Source: J. Shin, G. Lee, J. Paek, S. Bahk, "César: Cellular Resource Scheduling-Aware
//! Congestion Control" (full text as shared with this project): §II-A (SR/grant and TTI
//! scheduling), §III-A and Fig. 3 (uplink alignment makes RTT samples fall on discrete
//! lines; downlink scheduling lifts them above the minimum), §IV-B/C and Fig. 5–7 (ACKs
//! arrive in sets; ACK gaps cluster near 0 and at multiples of the scheduling unit, set by
//! the SR period, the TDD switch period or vendor rules). 3GPP timing values are cited in
//! `presets.rs` where they are used.
//!
//! Placement on the path (the simulator builds the chains):
//!
//! ```text
//!  downlink: sender ─► delay ─► [radio link queue+service] ─► DownlinkGate ─► UE
//!  uplink:   UE ─► [uplink link] ─► UplinkGrant ─► delay ─► sender
//! ```
//!
//! Both gates hold packets and release them at instants fixed by the schedule; they never
//! drop, reorder or change sizes, so they keep the link's long-run capacity and only make
//! delivery timing bursty. Every release time is computed when the packet arrives (the
//! gates' state changes only on arrivals), so the order in which a driver interleaves
//! `push` and `advance` at one instant does not matter; an arrival exactly at a schedule
//! instant (an SR occasion, a grant, a served TTI) can use it.
//!
//! Differences from the paper (which measures real networks and specifies no model):
//! 1. A fixed schedule: every SR occasion, grant delay and served TTI follows the
//!    configuration. The paper's time-varying causes (channel-dependent downlink
//!    allocation, vendor fairness rules, changing numbers of users) are not modelled;
//!    vary the configuration, or combine with a trace link whose capacity varies.
//! 2. Grants are never too small: a grant carries every packet waiting when it arrives
//!    (an uplink carrying TCP ACKs needs a few hundred bytes per grant).

mod downlink;
mod grant;
mod presets;

pub use downlink::{BurstStats, DownlinkGate, DownlinkGateConfig};
pub use grant::{GrantStats, UplinkGrant, UplinkGrantConfig};
pub use presets::{preset, Preset, ResolvedScheduling, SchedulingConfig, TddOverride, PRESETS};

use cellcc_units::{Dur, Time};

use crate::params::{dur_ms, positive_dur_ms, ParamError};

/// Most schedule instants one repetition of a pattern may hold (an SR or TTI grid
/// combined with a TDD period). Realistic settings need at most a few hundred; the bound
/// keeps a mistyped period from allocating a huge table.
const MAX_PATTERN_INSTANTS: u64 = 1 << 16;

/// A TDD uplink/downlink pattern: each period starts with `dl_ms` of downlink time
/// (downlink and special slots) and ends with uplink time (NR
/// `TDD-UL-DL-ConfigCommon`, 3GPP TS 38.331; e.g. DDDSU at 0.5 ms slots: `period_ms =
/// 2.5`, `dl_ms = 2.0`).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TddConfig {
    /// Pattern period (`dl-UL-TransmissionPeriodicity`), e.g. 2.5 or 5 ms.
    pub period_ms: f64,
    /// Downlink (and special-slot) time at the start of each period; `0 < dl_ms <
    /// period_ms`.
    pub dl_ms: f64,
}

impl TddConfig {
    /// Check that both times are positive and that `dl_ms < period_ms` leaves uplink time;
    /// the error names the field.
    pub fn validate(&self) -> Result<(), ParamError> {
        self.pattern().map(|_| ())
    }

    pub(crate) fn pattern(&self) -> Result<TddPattern, ParamError> {
        let period = positive_dur_ms("period_ms", self.period_ms)?;
        let dl = positive_dur_ms("dl_ms", self.dl_ms)?;
        if dl >= period {
            return Err(ParamError::new(
                "dl_ms",
                format!(
                    "downlink time {} ms must be shorter than period_ms = {} ms, leaving uplink time",
                    self.dl_ms, self.period_ms
                ),
            ));
        }
        Ok(TddPattern { period, dl })
    }
}

/// [`TddConfig`] in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TddPattern {
    period: Dur,
    dl: Dur,
}

impl TddPattern {
    fn phase(&self, t: Time) -> u64 {
        t.as_ns() % self.period.as_ns()
    }

    /// Whether `t` is in uplink time.
    pub(crate) fn is_uplink(&self, t: Time) -> bool {
        self.phase(t) >= self.dl.as_ns()
    }

    /// Whether the slot `[t, t + len)` lies inside one period's downlink time.
    pub(crate) fn is_downlink_slot(&self, t: Time, len: Dur) -> bool {
        self.phase(t) + len.as_ns() <= self.dl.as_ns()
    }

    /// The first instant at or after `t` in uplink time.
    pub(crate) fn uplink_at_or_after(&self, t: Time) -> Time {
        let phase = self.phase(t);
        if phase >= self.dl.as_ns() {
            t
        } else {
            t.saturating_add(Dur::from_ns(self.dl.as_ns() - phase))
        }
    }
}

/// A periodic schedule: the grid `offset + n × step` (n ≥ 0), keeping only the instants
/// a TDD pattern allows. Stored as the kept instants of one repetition, so the next
/// instant is a binary search.
#[derive(Clone, Debug)]
pub(crate) struct Occasions {
    /// Length of one repetition: `step`, or lcm(`step`, TDD period).
    repeat: u64,
    /// Kept instants in `[0, repeat)`, increasing, never empty.
    kept: Vec<u64>,
}

/// Why a schedule has no usable instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OccasionsError {
    /// The TDD pattern rules out every instant of the grid.
    NoneAllowed,
    /// One repetition would hold more than [`MAX_PATTERN_INSTANTS`] instants.
    TooLong,
}

impl Occasions {
    /// `offset < step`; `keep` decides, for an instant of the first repetition, whether it
    /// is usable (it is only called when `tdd` is given and sees absolute instants).
    pub(crate) fn new(
        step: Dur,
        offset: Dur,
        tdd: Option<&TddPattern>,
        keep: impl Fn(&TddPattern, Time) -> bool,
    ) -> Result<Self, OccasionsError> {
        debug_assert!(offset < step, "validated by the callers");
        let step = step.as_ns();
        let Some(tdd) = tdd else {
            return Ok(Occasions {
                repeat: step,
                kept: vec![offset.as_ns()],
            });
        };
        let period = tdd.period.as_ns();
        // lcm(step, period) = step × (period / gcd); the instants per repetition are
        // period / gcd.
        let per_repeat = period / gcd(step, period);
        if per_repeat > MAX_PATTERN_INSTANTS {
            return Err(OccasionsError::TooLong);
        }
        let repeat = step
            .checked_mul(per_repeat)
            .ok_or(OccasionsError::TooLong)?;
        let kept: Vec<u64> = (0..per_repeat)
            .map(|n| offset.as_ns() + n * step)
            .filter(|&t| keep(tdd, Time::from_ns(t)))
            .collect();
        if kept.is_empty() {
            return Err(OccasionsError::NoneAllowed);
        }
        Ok(Occasions { repeat, kept })
    }

    /// The first kept instant at or after `t`.
    pub(crate) fn at_or_after(&self, t: Time) -> Time {
        let t = t.as_ns();
        let base = t / self.repeat * self.repeat;
        let phase = t - base;
        let i = self.kept.partition_point(|&k| k < phase);
        let (base, k) = match self.kept.get(i) {
            Some(&k) => (base, k),
            None => (base.saturating_add(self.repeat), self.kept[0]),
        };
        Time::from_ns(base.saturating_add(k))
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// An `offset_ms` for a grid of step `step`: a duration below the step.
pub(crate) fn offset_below(
    field: &str,
    offset_ms: f64,
    step: Dur,
    step_field: &str,
) -> Result<Dur, ParamError> {
    let offset = dur_ms(field, offset_ms)?;
    if offset >= step {
        return Err(ParamError::new(
            field,
            format!("must be below {step_field} ({step}), got {offset_ms} ms"),
        ));
    }
    Ok(offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tdd(period_ms: f64, dl_ms: f64) -> TddPattern {
        TddConfig { period_ms, dl_ms }.pattern().unwrap()
    }

    #[test]
    fn tdd_pattern_phases() {
        // DDDSU at 0.5 ms slots: downlink [0, 2.0), uplink [2.0, 2.5) of every 2.5 ms.
        let p = tdd(2.5, 2.0);
        assert!(!p.is_uplink(Time::from_us(1999)));
        assert!(p.is_uplink(Time::from_us(2000)));
        assert!(p.is_uplink(Time::from_us(4999)));
        assert!(!p.is_uplink(Time::from_us(5000)));
        assert_eq!(
            p.uplink_at_or_after(Time::from_us(4000)),
            Time::from_us(4500)
        );
        assert_eq!(
            p.uplink_at_or_after(Time::from_us(4600)),
            Time::from_us(4600)
        );
        assert!(p.is_downlink_slot(Time::from_us(1500), Dur::from_us(500)));
        assert!(!p.is_downlink_slot(Time::from_us(1600), Dur::from_us(500)));
        let e = TddConfig {
            period_ms: 2.5,
            dl_ms: 3.0,
        }
        .validate()
        .unwrap_err();
        assert_eq!(e.field, "dl_ms");
    }

    #[test]
    fn occasions_on_a_grid_and_filtered_by_tdd() {
        let plain = Occasions::new(Dur::from_ms(5), Dur::from_ms(2), None, |_, _| true).unwrap();
        assert_eq!(plain.at_or_after(Time::ZERO), Time::from_ms(2));
        assert_eq!(plain.at_or_after(Time::from_ms(2)), Time::from_ms(2));
        assert_eq!(
            plain.at_or_after(Time::from_ns(2_000_001)),
            Time::from_ms(7)
        );
        // SR every 0.5 ms, but only in uplink time of a 2.5/2.0 TDD pattern.
        let p = tdd(2.5, 2.0);
        let ul = Occasions::new(Dur::from_us(500), Dur::ZERO, Some(&p), |p, t| {
            p.is_uplink(t)
        })
        .unwrap();
        assert_eq!(ul.at_or_after(Time::ZERO), Time::from_us(2000));
        assert_eq!(ul.at_or_after(Time::from_us(2001)), Time::from_us(4500));
        // Nothing allowed: an SR grid of 2.5 ms at offset 0 always falls in downlink time.
        assert_eq!(
            Occasions::new(Dur::from_us(2500), Dur::ZERO, Some(&p), |p, t| p
                .is_uplink(t))
            .unwrap_err(),
            OccasionsError::NoneAllowed
        );
        // A 1 ns grid against a 2.5 ms period would need 2.5 million instants.
        assert_eq!(
            Occasions::new(Dur::from_ns(1), Dur::ZERO, Some(&p), |_, _| true).unwrap_err(),
            OccasionsError::TooLong
        );
    }
}
