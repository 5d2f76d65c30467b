//! Chains of path stages ([`Stage`]) and how the event loop drives them.
//!
//! A chain moves a packet through its stages in order: what stage `i` releases is pushed
//! into stage `i + 1` with its release time; what the last stage releases leaves the
//! chain (`exits`); what any stage drops is collected (`drops`). Each stage has one
//! pending wake-up at most (see [`super::claim`]).

use cellcc_link::{DroppedPacket, Released, Stage};
use cellcc_units::Time;

use super::claim;

/// A stage as the simulator holds it.
pub(crate) type BoxedStage<T> = Box<dyn Stage<T> + Send>;

pub(crate) struct Chain<T> {
    stages: Vec<BoxedStage<T>>,
    timers: Vec<Option<Time>>,
    /// Packets that left the last stage, in order, waiting for the simulator.
    pub(crate) exits: Vec<Released<T>>,
    /// Packets dropped by any stage, with the stage index.
    pub(crate) drops: Vec<(usize, DroppedPacket<T>)>,
    buf: Vec<Released<T>>,
    next: Vec<Released<T>>,
}

impl<T> Chain<T> {
    pub(crate) fn new(stages: Vec<BoxedStage<T>>) -> Self {
        let n = stages.len();
        Chain {
            stages,
            timers: vec![None; n],
            exits: Vec::new(),
            drops: Vec::new(),
            buf: Vec::new(),
            next: Vec::new(),
        }
    }

    /// Packets held by the stages (not counting `exits`/`drops` not yet taken).
    pub(crate) fn held(&self) -> usize {
        self.stages.iter().map(|s| s.len()).sum()
    }

    /// A packet enters the chain at `now`. Returns the stage wake-ups to schedule.
    pub(crate) fn push(&mut self, now: Time, item: T, ip_len: u32, wakeups: &mut Vec<(u16, Time)>) {
        let mut input = std::mem::take(&mut self.buf);
        input.push(Released {
            item,
            ip_len,
            at: now,
        });
        self.run_from(now, 0, input, wakeups);
    }

    /// Stage `idx`'s wake-up at `now` fired. Stale wake-ups (superseded by an earlier
    /// claim) return without effect.
    pub(crate) fn wake(&mut self, now: Time, idx: u16, wakeups: &mut Vec<(u16, Time)>) {
        let i = idx as usize;
        if self.timers[i] != Some(now) {
            return;
        }
        self.timers[i] = None;
        let input = std::mem::take(&mut self.buf);
        self.run_from(now, i, input, wakeups);
    }

    fn run_from(
        &mut self,
        now: Time,
        mut idx: usize,
        mut input: Vec<Released<T>>,
        wakeups: &mut Vec<(u16, Time)>,
    ) {
        loop {
            if idx == self.stages.len() {
                self.exits.append(&mut input);
                break;
            }
            let stage = &mut self.stages[idx];
            for r in input.drain(..) {
                stage.push(r.at, r.item, r.ip_len);
            }
            stage.advance(now);
            while let Some(d) = stage.pop_drop() {
                self.drops.push((idx, d));
            }
            let mut out = std::mem::take(&mut self.next);
            while let Some(r) = stage.pop_output() {
                out.push(r);
            }
            if let Some(t) = claim(now, &mut self.timers[idx], stage.next_wakeup()) {
                wakeups.push((idx as u16, t));
            }
            self.next = input;
            if out.is_empty() {
                input = out;
                break;
            }
            input = out;
            idx += 1;
        }
        // Return the (empty) buffer for reuse.
        debug_assert!(input.is_empty());
        self.buf = input;
    }
}

impl<T> Chain<T> {
    /// A chain without stages: packets go straight through.
    pub(crate) fn is_pass_through(&self) -> bool {
        self.stages.is_empty()
    }
}
