//! Chains of path stages ([`Stage`]) and how the event loop drives them.
//!
//! A chain moves a packet through its stages in order: what stage `i` releases is pushed
//! into stage `i + 1` with its release time; what the last stage releases leaves the
//! chain (`exits`); what any stage drops is collected (`drops`). Each stage has one
//! pending wake-up at most (see [`super::claim`]).
//!
//! The commonest chain is a bare propagation delay (no wired bottleneck before the
//! radio, no cellular model after it). It is held as a [`DelayLine`] directly rather
//! than as a boxed stage, so the hot path of plain scenarios pays no dynamic dispatch
//! and no copies through the stage's output queue; the results are identical.

use cellcc_link::{DelayLine, DroppedPacket, Released, Stage};
use cellcc_units::{Dur, Time};

use super::claim;

/// A stage as the simulator holds it.
pub(crate) type BoxedStage<T> = Box<dyn Stage<T> + Send>;

/// What a chain holds: a bare delay (the fast path) or a list of stages.
enum Body<T> {
    Delay(DelayLine<(T, u32)>),
    Stages(Vec<BoxedStage<T>>),
}

pub(crate) struct Chain<T> {
    body: Body<T>,
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
            body: Body::Stages(stages),
            timers: vec![None; n],
            exits: Vec::new(),
            drops: Vec::new(),
            buf: Vec::new(),
            next: Vec::new(),
        }
    }

    /// A chain that is one fixed delay (`mm-delay`), equivalent to
    /// `Chain::new(vec![Box::new(Delay::new(delay))])`.
    pub(crate) fn delay(delay: Dur) -> Self {
        Chain {
            body: Body::Delay(DelayLine::new(delay)),
            timers: vec![None],
            exits: Vec::new(),
            drops: Vec::new(),
            buf: Vec::new(),
            next: Vec::new(),
        }
    }

    /// Packets held by the stages (not counting `exits`/`drops` not yet taken).
    pub(crate) fn held(&self) -> usize {
        match &self.body {
            Body::Delay(line) => line.len(),
            Body::Stages(stages) => stages.iter().map(|s| s.len()).sum(),
        }
    }

    /// A packet enters the chain at `now`. Returns the stage wake-ups to schedule.
    #[inline]
    pub(crate) fn push(&mut self, now: Time, item: T, ip_len: u32, wakeups: &mut Vec<(u16, Time)>) {
        if let Body::Delay(line) = &mut self.body {
            line.push(now, (item, ip_len));
            self.release_delayed(now, wakeups);
            return;
        }
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
    #[inline]
    pub(crate) fn wake(&mut self, now: Time, idx: u16, wakeups: &mut Vec<(u16, Time)>) {
        let i = idx as usize;
        if self.timers[i] != Some(now) {
            return;
        }
        self.timers[i] = None;
        if matches!(self.body, Body::Delay(_)) {
            self.release_delayed(now, wakeups);
            return;
        }
        let input = std::mem::take(&mut self.buf);
        self.run_from(now, i, input, wakeups);
    }

    /// Whether this chain is a bare delay, driven through the `*_delayed` methods.
    #[inline]
    pub(crate) fn is_delay(&self) -> bool {
        matches!(self.body, Body::Delay(_))
    }

    /// A bare delay chain takes a packet at `now`; returns the wake-up to schedule.
    #[inline]
    pub(crate) fn push_delayed(&mut self, now: Time, item: T, ip_len: u32) -> Option<Time> {
        let Body::Delay(line) = &mut self.body else {
            unreachable!("only called on delay chains")
        };
        line.push(now, (item, ip_len));
        claim(now, &mut self.timers[0], line.next_wakeup())
    }

    /// A bare delay chain's wake-up at `now` fired: true unless it was stale.
    #[inline]
    pub(crate) fn take_delay_timer(&mut self, now: Time) -> bool {
        if self.timers[0] != Some(now) {
            return false;
        }
        self.timers[0] = None;
        true
    }

    /// The next packet of a bare delay chain due at or before `now`. The caller hands it
    /// on before asking for the next one, as packets leave one by one.
    #[inline]
    pub(crate) fn pop_delayed(&mut self, now: Time) -> Option<Released<T>> {
        let Body::Delay(line) = &mut self.body else {
            unreachable!("only called on delay chains")
        };
        let (at, (item, ip_len)) = line.pop_ready_with_time(now)?;
        Some(Released { item, ip_len, at })
    }

    /// After [`Chain::pop_delayed`] ran dry: the wake-up to schedule for what is left.
    #[inline]
    pub(crate) fn rearm_delayed(&mut self, now: Time) -> Option<Time> {
        let Body::Delay(line) = &mut self.body else {
            unreachable!("only called on delay chains")
        };
        claim(now, &mut self.timers[0], line.next_wakeup())
    }

    /// The delay fast path: move what is due to `exits` and claim the next release.
    #[inline]
    fn release_delayed(&mut self, now: Time, wakeups: &mut Vec<(u16, Time)>) {
        let Body::Delay(line) = &mut self.body else {
            unreachable!("only called on delay chains")
        };
        while let Some((at, (item, ip_len))) = line.pop_ready_with_time(now) {
            self.exits.push(Released { item, ip_len, at });
        }
        if let Some(t) = claim(now, &mut self.timers[0], line.next_wakeup()) {
            wakeups.push((0, t));
        }
    }

    fn run_from(
        &mut self,
        now: Time,
        mut idx: usize,
        mut input: Vec<Released<T>>,
        wakeups: &mut Vec<(u16, Time)>,
    ) {
        let Body::Stages(stages) = &mut self.body else {
            unreachable!("delay chains take the fast path")
        };
        loop {
            if idx == stages.len() {
                self.exits.append(&mut input);
                break;
            }
            let stage = &mut stages[idx];
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
    #[inline]
    pub(crate) fn is_pass_through(&self) -> bool {
        matches!(&self.body, Body::Stages(s) if s.is_empty())
    }
}
