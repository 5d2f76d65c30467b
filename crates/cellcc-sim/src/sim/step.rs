//! Running a simulation: to the end, or step by step between the interval boundaries of
//! flows under per-interval control without a policy ([`crate::control`]).

use std::cmp::Reverse;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use cellcc_units::Time;

use super::{Cancelled, Event, Simulation, PROGRESS_EVERY};
use crate::control::{ControlError, Decision, ExternalSchemes, IntervalReport};
use crate::scenario::Scenario;
use crate::sim::SimOutput;

/// Why a run stopped before its end.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RunError {
    /// The progress callback returned false.
    #[error("simulation cancelled")]
    Cancelled,
    /// The abort flag given to [`Simulation::abort_on`] was raised (by an external
    /// congestion control that failed and keeps its own error).
    #[error("simulation aborted")]
    Aborted,
    /// An external scheme could not be built, or a per-interval policy failed or
    /// decided something that cannot be applied.
    #[error(transparent)]
    Control(#[from] ControlError),
    /// A part of the scenario cannot be built (only a scenario made without
    /// [`Scenario::parse`], which checks every part, can be).
    #[error("invalid scenario: {0}")]
    Invalid(String),
}

impl From<Cancelled> for RunError {
    fn from(_: Cancelled) -> Self {
        RunError::Cancelled
    }
}

/// Where [`Simulation::step`] stopped.
// Returned by value once per boundary and never stored: boxing the report would only
// add an allocation per step.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// A flow without a policy reached an interval boundary: call
    /// [`Simulation::decide`] (or `step` again to keep its window and rate).
    Decide(IntervalReport),
    /// The run reached its end: call [`Simulation::finish`].
    Done,
}

impl<'s> Simulation<'s> {
    /// A simulation whose external schemes (`module:Name`, [`crate::control`]) are built
    /// by `external`.
    pub fn with_external(
        sc: &'s Scenario,
        external: Box<dyn ExternalSchemes>,
    ) -> Result<Self, RunError> {
        let mut sim = Simulation::new(sc)?;
        sim.external = Some(external);
        Ok(sim)
    }

    /// Stop the run as soon as `flag` is raised (checked after every event); the run
    /// then ends with [`RunError::Aborted`].
    pub fn abort_on(&mut self, flag: Arc<AtomicBool>) {
        self.abort = Some(flag);
    }

    /// Run to the end. `progress(fraction)` is called now and then; returning false
    /// cancels the run. Flows under per-interval control need a policy here.
    pub fn run(mut self, progress: &mut dyn FnMut(f64) -> bool) -> Result<SimOutput, RunError> {
        match self.step(progress)? {
            Step::Done => Ok(self.finish()),
            Step::Decide(r) => Err(ControlError {
                flow: r.flow,
                t_s: r.t.as_secs_f64(),
                message: "per-interval control without a policy needs Simulation::step".into(),
            }
            .into()),
        }
    }

    /// Run until a flow under per-interval control without a policy reaches a boundary
    /// (its report is returned), or to the end.
    pub fn step(&mut self, progress: &mut dyn FnMut(f64) -> bool) -> Result<Step, RunError> {
        if let Some(i) = self.awaiting {
            self.decide(i, Decision::default())?;
        }
        while let Some(Reverse((t, _, ev))) = self.queue.pop() {
            if t >= self.end {
                self.queue.clear();
                break;
            }
            debug_assert!(t >= self.now, "events never go back in time");
            self.now = t;
            self.events += 1;
            if self.events.is_multiple_of(PROGRESS_EVERY)
                && !progress(t.as_ns() as f64 / self.end.as_ns() as f64)
            {
                return Err(RunError::Cancelled);
            }
            if let Event::Control(i) = ev {
                if let Some(report) = self.boundary(i)? {
                    return Ok(Step::Decide(report));
                }
                continue;
            }
            self.dispatch(t, ev);
            if let Some(e) = self.failure.take() {
                return Err(e.into());
            }
            if let Some(flag) = &self.abort {
                if flag.load(Ordering::Relaxed) {
                    return Err(RunError::Aborted);
                }
            }
        }
        self.now = self.end;
        progress(1.0);
        Ok(Step::Done)
    }

    /// The decision for the flow whose report [`step`](Self::step) just returned:
    /// applied now, then the next boundary is scheduled.
    pub fn decide(&mut self, flow: u32, decision: Decision) -> Result<(), ControlError> {
        if self.awaiting != Some(flow) {
            return Err(ControlError {
                flow,
                t_s: self.now.as_secs_f64(),
                message: match self.awaiting {
                    Some(w) => format!("a decision is awaited for flow {w}, not {flow}"),
                    None => "no decision is awaited".into(),
                },
            });
        }
        self.awaiting = None;
        self.apply_decision(flow, decision)
    }

    /// Now is a boundary of flow `i`: close its interval; with a policy, decide and go
    /// on (returns `None`); without one, hand the report out.
    fn boundary(&mut self, i: u32) -> Result<Option<IntervalReport>, ControlError> {
        let now = self.now;
        let f = &mut self.flows[i as usize];
        let (Some(ctl), Some(s)) = (f.control.as_mut(), f.sender.as_ref()) else {
            return Ok(None);
        };
        let report = ctl.close(i, now, s);
        let Some(policy) = ctl.policy.as_mut() else {
            self.awaiting = Some(i);
            return Ok(Some(report));
        };
        let decision = policy.decide(&report).map_err(|message| ControlError {
            flow: i,
            t_s: now.as_secs_f64(),
            message,
        })?;
        self.apply_decision(i, decision)?;
        Ok(None)
    }

    /// Apply a decision to flow `i` at the current time, let it send, and schedule its
    /// next boundary.
    fn apply_decision(&mut self, i: u32, decision: Decision) -> Result<(), ControlError> {
        let now = self.now;
        let f = &mut self.flows[i as usize];
        let (Some(ctl), Some(s)) = (f.control.as_ref(), f.sender.as_mut()) else {
            return Ok(());
        };
        decision.apply(now, s).map_err(|message| ControlError {
            flow: i,
            t_s: now.as_secs_f64(),
            message,
        })?;
        let next = ctl.next(now, s);
        self.push_boundary(next, i);
        self.pump_sender(i);
        Ok(())
    }

    /// Boundaries sort before every other event of their nanosecond (sequence 0), so an
    /// interval holds the ACKs of `[t_k, t_{k+1})`.
    pub(super) fn push_boundary(&mut self, t: Time, i: u32) {
        self.queue.push(Reverse((t, 0, Event::Control(i))));
    }
}
