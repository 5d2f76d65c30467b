//! What César reports at the end of a run ([`CongestionControl::info`]): the
//! scheduling-unit decisions so far and the time spent in each state.
//!
//! Pure bookkeeping: nothing here feeds back into the control. Time in a state is the
//! sum of the intervals between consecutive ACKs (`cong_control` calls), each charged
//! to the state César was in at the earlier ACK, so it ends at the last ACK.
//!
//! [`CongestionControl::info`]: crate::CongestionControl::info

use super::su::Decision;
use super::Phase;
use crate::{Dur, Time};

/// ns per ms, for the reported values.
const NS_PER_MS: f64 = 1e6;
/// ns per s, for the reported values.
const NS_PER_S: f64 = 1e9;

/// Scheduling-unit decisions and state durations.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Record {
    /// Decisions that found a pattern.
    patterns: u32,
    /// Decisions that found no pattern.
    no_patterns: u32,
    /// Module-rule decisions that kept the current mode.
    unchanged: u32,
    /// The SU of the first pattern decision.
    first_su: Option<Dur>,
    /// Smallest and largest SU over the pattern decisions.
    su_range: Option<(Dur, Dur)>,
    /// When the first decision came.
    first_decision_at: Option<Time>,
    /// The previous ACK and the state César was in after it.
    last_ack: Option<(Time, Phase)>,
    /// Time spent in PROBE, STEADY and BBR.
    probe: Dur,
    steady: Dur,
    bbr: Dur,
    /// Entries into STEADY.
    steady_entries: u32,
}

impl Record {
    /// Count one decision taken at `now`.
    pub(super) fn on_decision(&mut self, d: Decision, now: Time) {
        self.first_decision_at.get_or_insert(now);
        match d {
            Decision::Pattern(su) => {
                self.patterns += 1;
                self.first_su.get_or_insert(su);
                self.su_range = Some(match self.su_range {
                    Some((lo, hi)) => (lo.min(su), hi.max(su)),
                    None => (su, su),
                });
            }
            Decision::NoPattern => self.no_patterns += 1,
            Decision::Unchanged => self.unchanged += 1,
        }
    }

    /// César entered STEADY.
    pub(super) fn on_steady_entry(&mut self) {
        self.steady_entries += 1;
    }

    /// An ACK at `now`, after which César is in `phase`: charge the time since the
    /// previous ACK to the state it left César in.
    pub(super) fn on_ack(&mut self, now: Time, phase: Phase) {
        if let Some((prev, prev_phase)) = self.last_ack {
            let dt = now.saturating_since(prev);
            let slot = match prev_phase {
                Phase::Probe => &mut self.probe,
                Phase::Steady => &mut self.steady,
                Phase::Bbr => &mut self.bbr,
            };
            *slot += dt;
        }
        self.last_ack = Some((now, phase));
    }

    /// Named values for [`crate::CongestionControl::info`]; `su` is the SU in use,
    /// `estimating` whether it comes from decisions (not `fixed_su_ms`). `su_ms` is NaN
    /// while estimating until a decision finds a pattern.
    pub(super) fn values(&self, su: Dur, estimating: bool) -> Vec<(&'static str, f64)> {
        let ms = |d: Dur| d.as_ns() as f64 / NS_PER_MS;
        let s = |d: Dur| d.as_ns() as f64 / NS_PER_S;
        // Until a decision finds a pattern an estimating César has no SU of its own (it
        // holds the 5 ms default only as a placeholder).
        let su_ms = if estimating && self.patterns == 0 {
            f64::NAN
        } else {
            ms(su)
        };
        let (lo, hi) = self
            .su_range
            .map_or((f64::NAN, f64::NAN), |(lo, hi)| (ms(lo), ms(hi)));
        vec![
            ("su_ms", su_ms),
            ("su_first_ms", self.first_su.map_or(f64::NAN, ms)),
            ("su_min_ms", lo),
            ("su_max_ms", hi),
            (
                "su_decisions",
                f64::from(self.patterns + self.no_patterns + self.unchanged),
            ),
            ("pattern_decisions", f64::from(self.patterns)),
            ("no_pattern_decisions", f64::from(self.no_patterns)),
            ("unchanged_decisions", f64::from(self.unchanged)),
            (
                "first_decision_s",
                self.first_decision_at
                    .map_or(f64::NAN, |t| s(t - Time::ZERO)),
            ),
            ("steady_entries", f64::from(self.steady_entries)),
            ("probe_s", s(self.probe)),
            ("steady_s", s(self.steady)),
            ("bbr_s", s(self.bbr)),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(v: &[(&'static str, f64)], name: &str) -> f64 {
        v.iter().find(|(n, _)| *n == name).unwrap().1
    }

    #[test]
    fn decisions_and_state_time_are_counted() {
        let mut r = Record::default();
        let before = r.values(Dur::from_ms(5), true);
        assert!(value(&before, "su_ms").is_nan(), "no SU before a decision");
        assert!(value(&before, "su_min_ms").is_nan());
        assert_eq!(value(&before, "su_decisions"), 0.0);
        // A fixed SU is reported from the start.
        assert_eq!(value(&r.values(Dur::from_ms(8), false), "su_ms"), 8.0);

        r.on_ack(Time::from_ms(100), Phase::Probe);
        r.on_decision(Decision::NoPattern, Time::from_ms(300));
        let v = r.values(Dur::from_ms(5), true);
        assert!(value(&v, "su_ms").is_nan(), "no pattern found yet");
        assert_eq!(value(&v, "first_decision_s"), 0.3);
        r.on_ack(Time::from_ms(400), Phase::Probe); // 300 ms in PROBE
        r.on_decision(Decision::Pattern(Dur::from_us(4_920)), Time::from_ms(400));
        r.on_steady_entry();
        r.on_ack(Time::from_ms(450), Phase::Steady); // 50 ms more in PROBE
        r.on_decision(Decision::Pattern(Dur::from_us(5_010)), Time::from_ms(1_000));
        r.on_decision(Decision::Pattern(Dur::from_us(4_990)), Time::from_ms(1_500));
        r.on_ack(Time::from_ms(1_650), Phase::Bbr); // 1200 ms in STEADY
        r.on_decision(Decision::NoPattern, Time::from_ms(1_650));
        r.on_ack(Time::from_ms(1_900), Phase::Bbr); // 250 ms in BBR

        let v = r.values(Dur::from_us(4_990), true);
        assert_eq!(value(&v, "su_ms"), 4.99);
        assert_eq!(value(&v, "su_first_ms"), 4.92);
        assert_eq!(value(&v, "su_min_ms"), 4.92);
        assert_eq!(value(&v, "su_max_ms"), 5.01);
        assert_eq!(value(&v, "su_decisions"), 5.0);
        assert_eq!(value(&v, "pattern_decisions"), 3.0);
        assert_eq!(value(&v, "no_pattern_decisions"), 2.0);
        assert_eq!(value(&v, "first_decision_s"), 0.3);
        assert_eq!(value(&v, "steady_entries"), 1.0);
        assert_eq!(value(&v, "probe_s"), 0.35);
        assert_eq!(value(&v, "steady_s"), 1.2);
        assert_eq!(value(&v, "bbr_s"), 0.25);
    }
}
