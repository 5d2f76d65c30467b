//! One element of a network path, as the simulator (and the real-time emulator) drive it.
//!
//! A path is a chain of stages: random loss, a wired bottleneck, propagation delay, the
//! radio bottleneck, the cellular scheduler's release gate, jitter, HARQ retransmission
//! delay, outages. Each stage takes packets in at `now`, holds them, and releases them
//! (or drops them) at times it announces through [`Stage::next_wakeup`]. The driver calls
//! [`Stage::advance`] at those times (or later: released packets carry the time they
//! left) and moves what [`Stage::pop_output`] returns to the next stage.
//!
//! Stages are sans-I/O: time comes in as arguments; a stage that needs randomness owns a
//! seeded generator handed to it at construction, so the same inputs give the same
//! outputs.

use cellcc_units::Time;

use crate::queue::DroppedPacket;

/// A packet leaving a stage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Released<T> {
    pub item: T,
    pub ip_len: u32,
    /// When it left the stage (at or before the `advance` call that released it).
    pub at: Time,
}

/// A stage of a path. Items are opaque (the simulator's packets) with their IP length.
pub trait Stage<T> {
    /// A packet arrives at `now`. Calls come in non-decreasing `now` order. A packet the
    /// stage refuses or loses goes to its drop queue ([`Stage::pop_drop`]).
    fn push(&mut self, now: Time, item: T, ip_len: u32);
    /// Run the stage up to `now` (release what is due, apply drops that are due).
    fn advance(&mut self, now: Time);
    /// The next released packet, in release order.
    fn pop_output(&mut self) -> Option<Released<T>>;
    /// The next dropped packet.
    fn pop_drop(&mut self) -> Option<DroppedPacket<T>>;
    /// When the stage next needs [`Stage::advance`]; `None` when idle.
    fn next_wakeup(&self) -> Option<Time>;
    /// Packets held (for packet conservation checks).
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Fixed propagation delay as a stage ([`crate::DelayLine`] carrying IP lengths).
#[derive(Clone, Debug)]
pub struct Delay<T> {
    line: crate::DelayLine<(T, u32)>,
    out: std::collections::VecDeque<Released<T>>,
}

impl<T> Delay<T> {
    pub fn new(delay: cellcc_units::Dur) -> Self {
        Delay {
            line: crate::DelayLine::new(delay),
            out: std::collections::VecDeque::new(),
        }
    }
}

impl<T> Stage<T> for Delay<T> {
    fn push(&mut self, now: Time, item: T, ip_len: u32) {
        self.line.push(now, (item, ip_len));
    }
    fn advance(&mut self, now: Time) {
        while let Some((at, (item, ip_len))) = self.line.pop_ready_with_time(now) {
            self.out.push_back(Released { item, ip_len, at });
        }
    }
    fn pop_output(&mut self) -> Option<Released<T>> {
        self.out.pop_front()
    }
    fn pop_drop(&mut self) -> Option<DroppedPacket<T>> {
        None
    }
    fn next_wakeup(&self) -> Option<Time> {
        self.line.next_wakeup()
    }
    fn len(&self) -> usize {
        self.line.len() + self.out.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cellcc_units::Dur;

    #[test]
    fn delay_stage_releases_after_the_delay_with_release_times() {
        let mut d = Delay::new(Dur::from_ms(10));
        d.push(Time::from_ms(1), 'a', 100);
        d.push(Time::from_ms(2), 'b', 200);
        assert_eq!(d.next_wakeup(), Some(Time::from_ms(11)));
        d.advance(Time::from_ms(15));
        let out: Vec<_> = std::iter::from_fn(|| d.pop_output()).collect();
        assert_eq!(
            out,
            vec![
                Released {
                    item: 'a',
                    ip_len: 100,
                    at: Time::from_ms(11)
                },
                Released {
                    item: 'b',
                    ip_len: 200,
                    at: Time::from_ms(12)
                },
            ]
        );
        assert!(d.is_empty());
    }
}
