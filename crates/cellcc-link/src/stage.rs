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
//!
//! A stage that holds packets for a time ([`Delay`], `Jitter`, `Harq`, the two cellular
//! gates) computes each packet's release time by its own rule and keeps the packet in a
//! [`ReleaseQueue`] until then; `advance`, `pop_output`, `next_wakeup` and `len` are the
//! queue's.

use cellcc_units::{Dur, Time};

use crate::queue::DroppedPacket;
use crate::release::ReleaseQueue;

/// A packet leaving a stage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Released<T> {
    /// The caller's payload.
    pub item: T,
    /// IP length as pushed.
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
    /// Whether the stage holds no packet.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Packets held by a stage, with their IP lengths.
pub(crate) type HeldPackets<T> = ReleaseQueue<(T, u32)>;

impl<T> HeldPackets<T> {
    /// The next packet released by `advance`, as [`Stage::pop_output`] hands it on.
    #[inline]
    pub(crate) fn pop_output(&mut self) -> Option<Released<T>> {
        self.pop_released()
            .map(|(at, (item, ip_len))| Released { item, ip_len, at })
    }
}

/// The [`Stage`] methods of a stage that keeps its packets in a `held: HeldPackets<T>`
/// field until the release time its `push` computed, and never drops one: everything
/// but `push`, expanded inside the stage's `impl<T> Stage<T>` block.
macro_rules! held_stage_methods {
    () => {
        fn advance(&mut self, now: ::cellcc_units::Time) {
            self.held.advance(now);
        }
        fn pop_output(&mut self) -> Option<$crate::stage::Released<T>> {
            self.held.pop_output()
        }
        fn pop_drop(&mut self) -> Option<$crate::queue::DroppedPacket<T>> {
            None
        }
        fn next_wakeup(&self) -> Option<::cellcc_units::Time> {
            self.held.next_wakeup()
        }
        fn len(&self) -> usize {
            self.held.len()
        }
    };
}
pub(crate) use held_stage_methods;

/// Fixed propagation delay as a stage (what [`crate::DelayLine`] does, carrying IP
/// lengths): release rule `now + delay`.
#[derive(Clone, Debug)]
pub struct Delay<T> {
    delay: Dur,
    held: HeldPackets<T>,
}

impl<T> Delay<T> {
    /// A stage that holds every packet for `delay`.
    pub fn new(delay: Dur) -> Self {
        Delay {
            delay,
            held: HeldPackets::new(),
        }
    }
}

impl<T> Stage<T> for Delay<T> {
    fn push(&mut self, now: Time, item: T, ip_len: u32) {
        let release = now.saturating_add(self.delay);
        debug_assert!(
            self.held.last_pending().is_none_or(|last| last <= release),
            "pushes must be in time order for a fixed delay to stay FIFO"
        );
        self.held.push(release, (item, ip_len));
    }
    held_stage_methods!();
}

#[cfg(test)]
mod tests {
    use super::*;

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
