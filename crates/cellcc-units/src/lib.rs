//! Time, size and rate newtypes shared by every cellcc crate.
//!
//! All simulated time is an integer number of nanoseconds: state never holds `f64`
//! seconds, so two runs of the same scenario give bit-identical results on every machine.
//! `Time` is an instant since the start of the simulation, `Dur` a span between instants.
//! Rates are integers in bits per second.

use std::fmt;
use std::ops::{Add, AddAssign, Div, Mul, Sub, SubAssign};

/// Nanoseconds per microsecond.
pub const NS_PER_US: u64 = 1_000;
/// Nanoseconds per millisecond.
pub const NS_PER_MS: u64 = 1_000_000;
/// Nanoseconds per second.
pub const NS_PER_S: u64 = 1_000_000_000;

/// An instant, in nanoseconds since the simulation started.
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize, serde::Deserialize,
)]
pub struct Time(pub u64);

/// A span of time in nanoseconds.
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize, serde::Deserialize,
)]
pub struct Dur(pub u64);

impl Time {
    /// The start of the simulation.
    pub const ZERO: Time = Time(0);
    /// Later than any event; used for "never".
    pub const MAX: Time = Time(u64::MAX);

    /// An instant `ns` nanoseconds after the start.
    pub const fn from_ns(ns: u64) -> Self {
        Time(ns)
    }
    /// An instant `us` microseconds after the start.
    pub const fn from_us(us: u64) -> Self {
        Time(us * NS_PER_US)
    }
    /// An instant `ms` milliseconds after the start.
    pub const fn from_ms(ms: u64) -> Self {
        Time(ms * NS_PER_MS)
    }
    /// An instant `s` seconds after the start.
    pub const fn from_secs(s: u64) -> Self {
        Time(s * NS_PER_S)
    }
    /// Nanoseconds since the start.
    pub const fn as_ns(self) -> u64 {
        self.0
    }
    /// Whole microseconds (floor), the unit of Linux's `tcp_mstamp`.
    pub const fn as_us(self) -> u64 {
        self.0 / NS_PER_US
    }
    /// Whole milliseconds (floor), the unit of Mahimahi's clock.
    pub const fn as_ms(self) -> u64 {
        self.0 / NS_PER_MS
    }
    /// Seconds as a float, for reporting only.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / NS_PER_S as f64
    }
    /// `self - earlier`, or zero if `earlier` is later (never negative).
    pub fn saturating_since(self, earlier: Time) -> Dur {
        Dur(self.0.saturating_sub(earlier.0))
    }
    /// `self + d`, or `None` if that overflows `u64` nanoseconds.
    pub fn checked_add(self, d: Dur) -> Option<Time> {
        self.0.checked_add(d.0).map(Time)
    }
    /// `self + d`, clamped at [`Time::MAX`].
    pub fn saturating_add(self, d: Dur) -> Time {
        Time(self.0.saturating_add(d.0))
    }
}

impl Dur {
    /// No time at all.
    pub const ZERO: Dur = Dur(0);
    /// The longest representable span; used for "never" (e.g. a zero rate's transmit time).
    pub const MAX: Dur = Dur(u64::MAX);

    /// A span of `ns` nanoseconds.
    pub const fn from_ns(ns: u64) -> Self {
        Dur(ns)
    }
    /// A span of `us` microseconds.
    pub const fn from_us(us: u64) -> Self {
        Dur(us * NS_PER_US)
    }
    /// A span of `ms` milliseconds.
    pub const fn from_ms(ms: u64) -> Self {
        Dur(ms * NS_PER_MS)
    }
    /// A span of `s` seconds.
    pub const fn from_secs(s: u64) -> Self {
        Dur(s * NS_PER_S)
    }
    /// From float seconds, rounded to the nearest nanosecond (for user input only).
    pub fn from_secs_f64(s: f64) -> Self {
        Dur((s * NS_PER_S as f64).round().max(0.0) as u64)
    }
    /// The span in nanoseconds.
    pub const fn as_ns(self) -> u64 {
        self.0
    }
    /// Whole microseconds (floor).
    pub const fn as_us(self) -> u64 {
        self.0 / NS_PER_US
    }
    /// Whole milliseconds (floor).
    pub const fn as_ms(self) -> u64 {
        self.0 / NS_PER_MS
    }
    /// Seconds as a float, for reporting and rate arithmetic outside the event loop.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / NS_PER_S as f64
    }
    /// Milliseconds as a float, for reporting and formulas stated in ms.
    pub fn as_ms_f64(self) -> f64 {
        self.0 as f64 / NS_PER_MS as f64
    }
    /// Whether the span is zero.
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }
    /// `self - other`, or zero if `other` is longer (never negative).
    pub fn saturating_sub(self, other: Dur) -> Dur {
        Dur(self.0.saturating_sub(other.0))
    }
}

impl Add<Dur> for Time {
    type Output = Time;
    fn add(self, d: Dur) -> Time {
        Time(self.0 + d.0)
    }
}
impl AddAssign<Dur> for Time {
    fn add_assign(&mut self, d: Dur) {
        self.0 += d.0;
    }
}
impl Sub<Dur> for Time {
    type Output = Time;
    fn sub(self, d: Dur) -> Time {
        Time(self.0 - d.0)
    }
}
impl Sub<Time> for Time {
    type Output = Dur;
    /// Panics in debug builds if `rhs` is later: use [`Time::saturating_since`] when the
    /// order is not an invariant.
    fn sub(self, rhs: Time) -> Dur {
        Dur(self.0 - rhs.0)
    }
}
impl Add for Dur {
    type Output = Dur;
    fn add(self, d: Dur) -> Dur {
        Dur(self.0 + d.0)
    }
}
impl AddAssign for Dur {
    fn add_assign(&mut self, d: Dur) {
        self.0 += d.0;
    }
}
impl Sub for Dur {
    type Output = Dur;
    fn sub(self, d: Dur) -> Dur {
        Dur(self.0 - d.0)
    }
}
impl SubAssign for Dur {
    fn sub_assign(&mut self, d: Dur) {
        self.0 -= d.0;
    }
}
impl Mul<u64> for Dur {
    type Output = Dur;
    fn mul(self, k: u64) -> Dur {
        Dur(self.0 * k)
    }
}
impl Div<u64> for Dur {
    type Output = Dur;
    fn div(self, k: u64) -> Dur {
        Dur(self.0 / k)
    }
}

impl fmt::Debug for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
impl fmt::Display for Time {
    /// `s.nnnnnnnnn` so snapshots stay legible.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:09}s", self.0 / NS_PER_S, self.0 % NS_PER_S)
    }
}
impl fmt::Debug for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_multiple_of(NS_PER_MS) {
            write!(f, "{}ms", self.0 / NS_PER_MS)
        } else if self.0.is_multiple_of(NS_PER_US) {
            write!(f, "{}us", self.0 / NS_PER_US)
        } else {
            write!(f, "{}ns", self.0)
        }
    }
}

/// A data rate in bits per second.
#[derive(
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Default,
    Debug,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct Bandwidth {
    /// The rate in bits per second.
    pub bits_per_sec: u64,
}

impl Bandwidth {
    /// No throughput.
    pub const ZERO: Bandwidth = Bandwidth { bits_per_sec: 0 };
    /// A rate of `bits_per_sec` bits per second.
    pub const fn from_bps(bits_per_sec: u64) -> Self {
        Bandwidth { bits_per_sec }
    }
    /// A rate of `bytes` bytes per second.
    pub const fn from_bytes_per_sec(bytes: u64) -> Self {
        Bandwidth {
            bits_per_sec: bytes * 8,
        }
    }
    /// A rate of `mbps` megabits (10^6 bits) per second, rounded to the nearest bit/s.
    pub fn from_mbps(mbps: f64) -> Self {
        Bandwidth {
            bits_per_sec: (mbps * 1e6).round() as u64,
        }
    }
    /// Bytes per second (floor).
    pub const fn bytes_per_sec(self) -> u64 {
        self.bits_per_sec / 8
    }
    /// Megabits (10^6 bits) per second, for reporting.
    pub fn as_mbps(self) -> f64 {
        self.bits_per_sec as f64 / 1e6
    }
    /// Time to serialise `bytes` at this rate, rounded up to the next nanosecond.
    /// Returns [`Dur::MAX`] for a zero rate.
    pub fn transmit_time(self, bytes: u64) -> Dur {
        if self.bits_per_sec == 0 {
            return Dur::MAX;
        }
        let num = bytes as u128 * 8 * NS_PER_S as u128;
        Dur(num.div_ceil(self.bits_per_sec as u128) as u64)
    }
    /// Bytes sent at this rate over `d` (floor).
    pub fn bytes_in(self, d: Dur) -> u64 {
        (self.bits_per_sec as u128 * d.0 as u128 / (8 * NS_PER_S as u128)) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_arithmetic_and_display() {
        let t = Time::from_ms(1500) + Dur::from_us(250);
        assert_eq!(t.as_us(), 1_500_250);
        assert_eq!(t.as_ms(), 1500);
        assert_eq!(format!("{t}"), "1.500250000s");
        assert_eq!(format!("{}", Dur::from_ms(40)), "40ms");
        assert_eq!(
            Time::from_ms(3).saturating_since(Time::from_ms(5)),
            Dur::ZERO
        );
    }

    #[test]
    fn bandwidth_transmit_time_rounds_up() {
        // 1500 bytes at 12 Mbit/s = 1 ms exactly.
        let bw = Bandwidth::from_mbps(12.0);
        assert_eq!(bw.transmit_time(1500), Dur::from_ms(1));
        // 1 byte at 3 bit/s = 8/3 s, rounded up to the nanosecond.
        assert_eq!(Bandwidth::from_bps(3).transmit_time(1), Dur(2_666_666_667));
        assert_eq!(bw.bytes_in(Dur::from_ms(10)), 15_000);
        assert_eq!(Bandwidth::ZERO.transmit_time(1), Dur::MAX);
    }
}
