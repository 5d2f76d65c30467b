//! The three TTI schedulers of the cell: which backlogged UE gets the next TTI.
//!
//! Every TTI the cell lists the candidates, the UEs with data waiting whose channel
//! carries at least one byte in this TTI, each with `r_u(t)`, the bytes it would receive
//! if chosen. The scheduler picks one ([`Scheduler::pick`]); after the TTI the cell
//! reports what was sent ([`Scheduler::record`]); runs of TTIs in which nobody is
//! served are reported in one call ([`Scheduler::record_idle`]).
//!
//! * Round robin: the first candidate at or after the UE following the last one served,
//!   cyclically. UeChannel-blind except that a UE with nothing to receive in this TTI is
//!   passed over (it would waste the TTI).
//! * Proportional fair ([PF]: "Opportunistic Beamforming Using Dumb Antennas", IEEE
//!   Trans. Inf. Theory 48(6), June 2002): the candidate with the largest
//!   `r_u(t) / R̄_u(t)`, where `R̄_u` is an exponentially weighted average, time
//!   constant `t_c` TTIs, of the bytes the UE was actually sent per TTI, updated every
//!   TTI for every UE (with 0 when it was not served):
//!   `R̄_u(t+1) = (1 − 1/t_c)·R̄_u(t) + (1/t_c)·s_u(t)`.
//! * Max throughput: the candidate with the largest `r_u(t)`.
//!
//! Ties go to the lowest UE index, so the choice is deterministic.

use serde::{Deserialize, Serialize};

/// Which scheduler shares the cell, spelled as in a scenario's `scheduler` key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum SchedulerKind {
    /// Round robin over backlogged UEs: equal numbers of TTIs.
    #[serde(rename = "rr")]
    RoundRobin,
    /// Proportional fair (the LTE study's MAC scheduler, Table 2): the default.
    #[default]
    #[serde(rename = "pf")]
    ProportionalFair,
    /// Max throughput (max C/I): the best instantaneous channel.
    #[serde(rename = "max-throughput")]
    MaxThroughput,
}

impl SchedulerKind {
    /// The scenario spelling.
    pub fn name(self) -> &'static str {
        match self {
            SchedulerKind::RoundRobin => "rr",
            SchedulerKind::ProportionalFair => "pf",
            SchedulerKind::MaxThroughput => "max-throughput",
        }
    }
}

/// A UE that could use the current TTI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Candidate {
    pub ue: usize,
    /// `r_u(t)`: bytes the UE would receive in this TTI, > 0.
    pub bytes: u64,
}

/// Scheduler state (its configuration is the kind and, for PF, `t_c`).
#[derive(Clone, Debug)]
pub(crate) enum Scheduler {
    RoundRobin {
        /// The UE whose turn it is (the one after the last UE served).
        next: usize,
    },
    ProportionalFair {
        /// `1 − 1/t_c`, the weight of the old average.
        keep: f64,
        /// `1/t_c`, the weight of the bytes sent in the TTI just ended.
        gain: f64,
        /// `R̄_u`, bytes per TTI, one per UE.
        average: Vec<f64>,
    },
    MaxThroughput,
}

impl Scheduler {
    /// `tc_ttis` is PF's time constant (>= 1, checked by the cell's validation).
    pub(super) fn new(kind: SchedulerKind, ues: usize, tc_ttis: f64) -> Self {
        match kind {
            SchedulerKind::RoundRobin => Scheduler::RoundRobin { next: 0 },
            SchedulerKind::ProportionalFair => Scheduler::ProportionalFair {
                keep: 1.0 - 1.0 / tc_ttis,
                gain: 1.0 / tc_ttis,
                // R̄ starts at 0: every UE's first TTI wins against any UE already served.
                average: vec![0.0; ues],
            },
            SchedulerKind::MaxThroughput => Scheduler::MaxThroughput,
        }
    }

    /// The UE that gets this TTI; `None` only when there is no candidate. `candidates`
    /// are in increasing UE order.
    pub(super) fn pick(&self, candidates: &[Candidate]) -> Option<usize> {
        let first = candidates.first()?;
        let chosen = match self {
            Scheduler::RoundRobin { next } => {
                candidates.iter().find(|c| c.ue >= *next).unwrap_or(first)
            }
            Scheduler::ProportionalFair { average, .. } => {
                candidates.iter().skip(1).fold(first, |best, c| {
                    // r_c/R̄_c > r_best/R̄_best, cross-multiplied so that an average of 0
                    // (a UE never served yet) ranks highest without dividing by 0; with
                    // both averages 0 neither is strictly better and the lower index
                    // stays. [PF] scheduling rule: argmax_k R_k(t)/T_k(t).
                    let challenger = c.bytes as f64 * average[best.ue];
                    let holder = best.bytes as f64 * average[c.ue];
                    if challenger > holder {
                        c
                    } else {
                        best
                    }
                })
            }
            // Strictly greater: ties keep the lower index.
            Scheduler::MaxThroughput => {
                candidates
                    .iter()
                    .skip(1)
                    .fold(first, |best, c| if c.bytes > best.bytes { c } else { best })
            }
        };
        Some(chosen.ue)
    }

    /// One TTI has ended; `served` is the UE that had it and the bytes it was sent
    /// (`None`: nobody was served).
    pub(super) fn record(&mut self, served: Option<(usize, u64)>) {
        match self {
            Scheduler::RoundRobin { next } => {
                if let Some((ue, _)) = served {
                    *next = ue + 1;
                }
            }
            Scheduler::ProportionalFair {
                keep,
                gain,
                average,
            } => {
                // [PF] average update:
                // T_k(t+1) = (1 − 1/t_c)·T_k(t) + (1/t_c)·R_k(t)·[k served].
                // For a UE not served the sum's second term is +0.0, and `keep·T + 0.0` is
                // `keep·T` bit for bit (both are >= 0, so no −0.0 arises): one plain
                // multiplication over the vector, which the compiler vectorises, then the
                // served UE's term from its old average.
                let old = served.map(|(chosen, bytes)| (chosen, average[chosen], bytes));
                for avg in average.iter_mut() {
                    *avg *= *keep;
                }
                if let Some((chosen, before, bytes)) = old {
                    average[chosen] = *keep * before + *gain * bytes as f64;
                }
            }
            Scheduler::MaxThroughput => {}
        }
    }

    /// `n` TTIs have ended with nobody served: PF's averages decay by `(1 − 1/t_c)^n`.
    pub(super) fn record_idle(&mut self, n: u64) {
        if let Scheduler::ProportionalFair { keep, average, .. } = self {
            if n == 0 {
                return;
            }
            let factor = pow(*keep, n);
            for avg in average.iter_mut() {
                *avg *= factor;
            }
        }
    }

    /// PF's `R̄_u` (bytes per TTI); `None` for the other schedulers.
    pub(super) fn average(&self, ue: usize) -> Option<f64> {
        match self {
            Scheduler::ProportionalFair { average, .. } => average.get(ue).copied(),
            _ => None,
        }
    }
}

/// `base^n` by repeated squaring: at most 64 squarings, and only multiplications, whose
/// IEEE results are the same on every machine (`powi` may differ between platforms).
fn pow(mut base: f64, mut n: u64) -> f64 {
    let mut acc = 1.0;
    while n > 0 {
        if n & 1 == 1 {
            acc *= base;
        }
        n >>= 1;
        base *= base;
        if acc == 0.0 {
            break;
        }
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cands(list: &[(usize, u64)]) -> Vec<Candidate> {
        list.iter()
            .map(|&(ue, bytes)| Candidate { ue, bytes })
            .collect()
    }

    #[test]
    fn round_robin_resumes_after_the_last_ue_served() {
        let mut s = Scheduler::new(SchedulerKind::RoundRobin, 4, 100.0);
        let all = cands(&[(0, 10), (1, 10), (2, 10), (3, 10)]);
        let mut order = Vec::new();
        for _ in 0..6 {
            let ue = s.pick(&all).unwrap();
            s.record(Some((ue, 10)));
            order.push(ue);
        }
        assert_eq!(order, [0, 1, 2, 3, 0, 1]);
        // UE 2 is not a candidate: its turn passes to 3, then the cycle wraps.
        let without_2 = cands(&[(0, 10), (1, 10), (3, 10)]);
        assert_eq!(s.pick(&without_2), Some(3));
        s.record(Some((3, 10)));
        assert_eq!(s.pick(&without_2), Some(0));
        assert_eq!(s.pick(&[]), None);
    }

    #[test]
    fn max_throughput_takes_the_best_channel_lowest_index_on_ties() {
        let s = Scheduler::new(SchedulerKind::MaxThroughput, 3, 100.0);
        assert_eq!(s.pick(&cands(&[(0, 5), (1, 9), (2, 7)])), Some(1));
        assert_eq!(s.pick(&cands(&[(0, 9), (1, 9), (2, 7)])), Some(0));
    }

    /// Worked numbers for t_c = 4 (keep 0.75, gain 0.25), two UEs.
    #[test]
    fn proportional_fair_worked_example() {
        let mut s = Scheduler::new(SchedulerKind::ProportionalFair, 2, 4.0);
        let both = cands(&[(0, 1000), (1, 500)]);
        // R̄ = (0, 0): tie, UE 0.
        assert_eq!(s.pick(&both), Some(0));
        s.record(Some((0, 1000)));
        // R̄0 = 0.25·1000 = 250, R̄1 = 0: UE 1 (never served) wins.
        assert_eq!(s.average(0), Some(250.0));
        assert_eq!(s.pick(&both), Some(1));
        s.record(Some((1, 500)));
        // R̄0 = 0.75·250 = 187.5, R̄1 = 0.25·500 = 125.
        assert_eq!(s.average(0), Some(187.5));
        assert_eq!(s.average(1), Some(125.0));
        // Metrics 1000/187.5 = 5.33 vs 500/125 = 4: UE 0.
        assert_eq!(s.pick(&both), Some(0));
        // With r1 = 800: 800/125 = 6.4 beats 5.33.
        assert_eq!(s.pick(&cands(&[(0, 1000), (1, 800)])), Some(1));
        // Three idle TTIs: both decay by 0.75³ = 0.421875.
        s.record_idle(3);
        assert_eq!(s.average(0), Some(187.5 * 0.421875));
        assert_eq!(s.average(1), Some(125.0 * 0.421875));
    }

    #[test]
    fn idle_decay_equals_repeated_single_steps_and_reaches_zero() {
        let mut a = Scheduler::new(SchedulerKind::ProportionalFair, 1, 2.0);
        let mut b = a.clone();
        a.record(Some((0, 1024)));
        b.record(Some((0, 1024)));
        // keep = 0.5 is a power of two, so both paths are exact.
        a.record_idle(5);
        for _ in 0..5 {
            b.record(None);
        }
        assert_eq!(a.average(0), Some(16.0));
        assert_eq!(a.average(0), b.average(0));
        a.record_idle(u64::MAX);
        assert_eq!(a.average(0), Some(0.0));
        assert_eq!(pow(0.99, 0), 1.0);
        assert_eq!(pow(3.0, 5), 243.0);
    }
}
