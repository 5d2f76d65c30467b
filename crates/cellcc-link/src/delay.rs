//! Fixed propagation delay (Mahimahi `mm-delay`, ravinet/mahimahi
//! `src/frontend/delay_queue.cc`): every item pushed at `now` is released at
//! `now + delay`, in push order.
//!
//! Differences from Mahimahi:
//! 1. The delay is any number of nanoseconds; `mm-delay` takes whole milliseconds.

use cellcc_units::{Dur, Time};

use crate::release::ReleaseQueue;

/// A FIFO of items in flight for a fixed time.
#[derive(Clone, Debug)]
pub struct DelayLine<T> {
    delay: Dur,
    /// Release times non-decreasing (pushes come in time order), taken out by `pop_due`.
    in_flight: ReleaseQueue<T>,
}

impl<T> DelayLine<T> {
    /// An empty line that holds every item for `delay`.
    pub fn new(delay: Dur) -> Self {
        DelayLine {
            delay,
            in_flight: ReleaseQueue::new(),
        }
    }

    /// The fixed delay every item sees.
    pub fn delay(&self) -> Dur {
        self.delay
    }

    /// Sends `item` at `now`; it is released at `now + delay`. Pushes must come in
    /// non-decreasing `now` order (they do in an event-driven simulation), which keeps
    /// the line FIFO.
    #[inline]
    pub fn push(&mut self, now: Time, item: T) {
        let release = now.saturating_add(self.delay);
        debug_assert!(
            self.in_flight
                .last_pending()
                .is_none_or(|last| last <= release),
            "pushes must be in time order for a fixed delay to stay FIFO"
        );
        self.in_flight.push(release, item);
    }

    /// The oldest item whose release time is at or before `now`.
    pub fn pop_ready(&mut self, now: Time) -> Option<T> {
        self.pop_ready_with_time(now).map(|(_, item)| item)
    }

    /// Like [`DelayLine::pop_ready`], with the item's release time (useful when called
    /// after that time).
    #[inline]
    pub fn pop_ready_with_time(&mut self, now: Time) -> Option<(Time, T)> {
        self.in_flight.pop_due(now)
    }

    /// Release time of the oldest item, if any.
    #[inline]
    pub fn next_wakeup(&self) -> Option<Time> {
        self.in_flight.next_wakeup()
    }

    /// Items in flight.
    pub fn len(&self) -> usize {
        self.in_flight.len()
    }

    /// Whether nothing is in flight.
    pub fn is_empty(&self) -> bool {
        self.in_flight.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_in_order_after_the_delay() {
        let mut line = DelayLine::new(Dur::from_ms(10));
        line.push(Time::from_ms(0), 'a');
        line.push(Time::from_ms(3), 'b');
        assert_eq!(line.next_wakeup(), Some(Time::from_ms(10)));
        assert_eq!(line.pop_ready(Time::from_ms(10) - Dur(1)), None);
        assert_eq!(line.pop_ready(Time::from_ms(10)), Some('a'));
        assert_eq!(line.pop_ready(Time::from_ms(12)), None);
        assert_eq!(
            line.pop_ready_with_time(Time::from_ms(20)),
            Some((Time::from_ms(13), 'b'))
        );
        assert!(line.is_empty());
        assert_eq!(line.next_wakeup(), None);
    }

    #[test]
    fn zero_delay_releases_immediately() {
        let mut line = DelayLine::new(Dur::ZERO);
        line.push(Time::from_ms(5), 1);
        assert_eq!(line.pop_ready(Time::from_ms(5)), Some(1));
    }
}
