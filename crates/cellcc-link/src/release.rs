//! A queue of items that each leave at their own release time: what every holding path
//! stage (propagation delay, jitter, HARQ, the cellular gates) and [`crate::DelayLine`]
//! keep. A stage decides *when* a packet leaves (its release rule); this queue only
//! keeps the packets until then and hands them out in order.
//!
//! Invariants:
//! 1. Pending items are ordered by release time; items with equal release times keep
//!    their push order. `push` keeps this at any time given (stages push in
//!    non-decreasing order, which takes the O(1) path; an earlier time is inserted in
//!    its place, as HARQ without in-order delivery does).
//! 2. An item is due at `now` when its release time is at or before `now`; taking items
//!    out ([`ReleaseQueue::pop_due`], [`ReleaseQueue::advance`]) only ever takes due items,
//!    from the front, so items leave in (release time, push order).
//! 3. Items keep the release time they were pushed with, and leave with it, even when
//!    they are taken out later than that time.
//! 4. [`ReleaseQueue::len`] counts every item pushed and not yet taken out, released or
//!    not, so a caller's packet conservation count needs nothing else.
//!
//! Two ways to take items out, one per queue:
//! * [`ReleaseQueue::pop_due`]: one due item at a time, straight from the pending items,
//!   for a caller that hands each on at once ([`crate::DelayLine`]);
//! * [`ReleaseQueue::advance`] then [`ReleaseQueue::pop_released`]: `advance(now)` marks
//!   every due item released, and they wait, in release order, until the caller collects
//!   them (a [`crate::Stage`]: `advance`, then `pop_output`).
//!
//! This module imports nothing from the crate.

use std::collections::VecDeque;

use cellcc_units::Time;

/// Items held until their release time. See the module docs for the invariants.
#[derive(Clone, Debug)]
pub struct ReleaseQueue<T> {
    /// Not yet released: (release time, item), times non-decreasing, ties in push order.
    pending: VecDeque<(Time, T)>,
    /// Released by [`ReleaseQueue::advance`] and not yet collected, in release order.
    released: VecDeque<(Time, T)>,
}

impl<T> Default for ReleaseQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> ReleaseQueue<T> {
    /// An empty queue.
    pub const fn new() -> Self {
        ReleaseQueue {
            pending: VecDeque::new(),
            released: VecDeque::new(),
        }
    }

    /// Holds `item` until `at`. It leaves after every item already pending with a release
    /// time at or before `at`, and before every one with a later time.
    #[inline]
    pub fn push(&mut self, at: Time, item: T) {
        if self.pending.back().is_some_and(|&(last, _)| last > at) {
            self.insert_in_order(at, item);
        } else {
            self.pending.push_back((at, item));
        }
    }

    /// `push` for an item due before the last pending one. Kept out of line so that the
    /// common in-order `push` stays small enough to inline into the simulator's hot path.
    #[inline(never)]
    fn insert_in_order(&mut self, at: Time, item: T) {
        // Invariant 1: after the last equal time, so ties keep push order.
        let index = self.pending.partition_point(|&(t, _)| t <= at);
        self.pending.insert(index, (at, item));
    }

    /// The first pending item if it is due at `now`, with its release time. For a queue
    /// emptied this way only (the released items of [`ReleaseQueue::advance`] are not
    /// looked at).
    #[inline]
    pub fn pop_due(&mut self, now: Time) -> Option<(Time, T)> {
        debug_assert!(
            self.released.is_empty(),
            "a queue is emptied either by pop_due or by advance and pop_released"
        );
        match self.pending.front() {
            Some(&(at, _)) if at <= now => self.pending.pop_front(),
            _ => None,
        }
    }

    /// Releases every item due at `now`; [`ReleaseQueue::pop_released`] hands them out.
    #[inline]
    pub fn advance(&mut self, now: Time) {
        while self.pending.front().is_some_and(|&(at, _)| at <= now) {
            let due = self.pending.pop_front().expect("checked just above");
            self.released.push_back(due);
        }
    }

    /// The oldest item released by [`ReleaseQueue::advance`], with its release time.
    #[inline]
    pub fn pop_released(&mut self) -> Option<(Time, T)> {
        self.released.pop_front()
    }

    /// The release time of the first pending item: when the holder next needs to
    /// release something. `None` when nothing is pending.
    #[inline]
    pub fn next_wakeup(&self) -> Option<Time> {
        self.pending.front().map(|&(at, _)| at)
    }

    /// The latest release time pending, for holders whose rule keeps releases in push
    /// order and that check it.
    #[inline]
    pub fn last_pending(&self) -> Option<Time> {
        self.pending.back().map(|&(at, _)| at)
    }

    /// Items held: pending, and released but not yet collected.
    #[inline]
    pub fn len(&self) -> usize {
        self.pending.len() + self.released.len()
    }

    /// Whether no item is held, released or not.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty() && self.released.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(v: u64) -> Time {
        Time::from_ms(v)
    }

    fn drain_released<T>(q: &mut ReleaseQueue<T>) -> Vec<(Time, T)> {
        std::iter::from_fn(|| q.pop_released()).collect()
    }

    #[test]
    fn releases_in_time_order_with_ties_in_push_order() {
        let mut q = ReleaseQueue::new();
        q.push(ms(5), 'a');
        q.push(ms(3), 'b');
        q.push(ms(5), 'c');
        q.push(ms(3), 'd');
        q.push(ms(9), 'e');
        assert_eq!(q.next_wakeup(), Some(ms(3)));
        assert_eq!(q.last_pending(), Some(ms(9)));
        q.advance(ms(5));
        assert_eq!(
            drain_released(&mut q),
            vec![(ms(3), 'b'), (ms(3), 'd'), (ms(5), 'a'), (ms(5), 'c')]
        );
        assert_eq!((q.len(), q.next_wakeup()), (1, Some(ms(9))));
    }

    #[test]
    fn released_items_wait_and_count_until_collected() {
        let mut q = ReleaseQueue::new();
        q.push(ms(1), 1);
        q.push(ms(2), 2);
        q.advance(ms(1) - cellcc_units::Dur(1));
        assert_eq!(q.pop_released(), None, "nothing is due yet");
        q.advance(ms(10));
        assert_eq!(q.len(), 2, "released but not collected still counts");
        assert_eq!(q.next_wakeup(), None, "nothing pending");
        q.push(ms(10), 3);
        assert_eq!(q.pop_released(), Some((ms(1), 1)));
        assert_eq!(q.len(), 2);
        assert_eq!(q.pop_released(), Some((ms(2), 2)));
        assert_eq!(
            q.pop_released(),
            None,
            "3 is pending until the next advance"
        );
        q.advance(ms(10));
        assert_eq!(q.pop_released(), Some((ms(10), 3)));
        assert!(q.is_empty());
    }

    #[test]
    fn pop_due_takes_one_due_item_at_a_time_with_its_time() {
        let mut q = ReleaseQueue::new();
        q.push(ms(10), 'a');
        q.push(ms(13), 'b');
        assert_eq!(q.pop_due(ms(9)), None);
        assert_eq!(q.pop_due(ms(10)), Some((ms(10), 'a')));
        assert_eq!(q.pop_due(ms(12)), None);
        assert_eq!(q.pop_due(ms(20)), Some((ms(13), 'b')));
        assert!(q.is_empty());
        assert_eq!(q.next_wakeup(), None);
    }

    /// One step of a random scenario.
    #[derive(Clone, Debug)]
    enum Op {
        /// Push at `now + offset` (stages never push before `now`; `back` pushes that far
        /// before `now` instead, which the queue also orders).
        Push { offset: u64, back: u64 },
        /// Let time pass, then advance and collect everything released.
        Advance { dt: u64 },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (0u64..20, prop_oneof![4 => Just(0u64), 1 => 0u64..5])
                .prop_map(|(offset, back)| Op::Push { offset, back }),
            1 => (0u64..15).prop_map(|dt| Op::Advance { dt }),
        ]
    }

    proptest! {
        /// Against a model that keeps every item with (time, push number) and releases,
        /// at each advance, the due ones sorted by that key: the same items leave in the
        /// same order with the same times, `next_wakeup` is the earliest pending time and
        /// `len` counts every item not collected. Items pushed at small offsets collide
        /// often, which exercises the ties.
        #[test]
        fn matches_a_sorted_model(ops in proptest::collection::vec(op(), 1..200)) {
            let mut q = ReleaseQueue::new();
            let mut model: Vec<(Time, usize)> = Vec::new();
            let mut now = Time::ZERO;
            let mut pushed = 0usize;
            let mut out = Vec::new();
            let mut expected = Vec::new();
            for op in ops {
                match op {
                    Op::Push { offset, back } => {
                        let at = Time::from_ms((now.as_ms() + offset).saturating_sub(back));
                        q.push(at, pushed);
                        model.push((at, pushed));
                        pushed += 1;
                    }
                    Op::Advance { dt } => {
                        now += cellcc_units::Dur::from_ms(dt);
                        q.advance(now);
                        out.extend(drain_released(&mut q));
                        model.sort_by_key(|&(at, n)| (at, n));
                        let due = model.partition_point(|&(at, _)| at <= now);
                        expected.extend(model.drain(..due));
                    }
                }
                prop_assert_eq!(&out, &expected);
                prop_assert_eq!(q.len(), model.len());
                prop_assert_eq!(q.next_wakeup(), model.iter().map(|&(at, _)| at).min());
            }
            // Everything pushed leaves exactly once.
            q.advance(Time::MAX);
            out.extend(drain_released(&mut q));
            model.sort_by_key(|&(at, n)| (at, n));
            expected.append(&mut model);
            prop_assert_eq!(out.len(), pushed);
            prop_assert_eq!(out, expected);
        }

        /// `pop_due` one at a time gives what `advance` releases, in the same order.
        #[test]
        fn pop_due_agrees_with_advance(
            times in proptest::collection::vec(0u64..50, 0..100),
            until in 0u64..60,
        ) {
            let mut a = ReleaseQueue::new();
            let mut b = ReleaseQueue::new();
            for (n, &t) in times.iter().enumerate() {
                a.push(ms(t), n);
                b.push(ms(t), n);
            }
            a.advance(ms(until));
            let by_advance = drain_released(&mut a);
            let by_pop: Vec<_> = std::iter::from_fn(|| b.pop_due(ms(until))).collect();
            prop_assert_eq!(by_advance, by_pop);
            prop_assert_eq!(a.len(), b.len());
            prop_assert_eq!(a.next_wakeup(), b.next_wakeup());
        }
    }
}
