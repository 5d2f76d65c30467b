//! A UE's radio channel as the cell scheduler sees it: the bytes the UE could receive in
//! each TTI if it had the whole TTI (and the whole cell bandwidth) to itself.
//!
//! TTI k covers `[k·tti, (k+1)·tti)` of simulation time.
//!
//! * Trace channel: [`OPPORTUNITY_BYTES`] for every Mahimahi opportunity whose time falls
//!   in the TTI, read from the UE's trace shifted by `offset` (simulation time t is trace
//!   time t + offset), looping as [`crate::Link`] does. With a TTI that divides 1 ms
//!   (1, 0.5, 0.25, 0.125 ms) every opportunity at `m` ms lands in the TTI that starts at
//!   exactly `m` ms; with 0.5 ms TTIs the TTIs starting at half milliseconds carry nothing
//!   (a trace resolves capacity to whole milliseconds only).
//! * Constant channel: `bytes_in((k+1)·tti) − bytes_in(k·tti)`, cumulative floors from
//!   time 0, so the per-TTI bytes never drift from the rate (at 12 Mbit/s and 1 ms,
//!   exactly 1500 bytes per TTI; at 1 Mbit/s and 0.5 ms, 62 or 63 bytes).
//!
//! The cell reads a trace channel through a forward-only [`Cursor`] (TTIs are asked for
//! in non-decreasing order): a busy cell steps from one opportunity to the next, a jump
//! over idle time is a binary search. A constant channel's cursor keeps `bytes_in(k·tti)` as
//! the quotient and remainder of `k·rate·tti / 8·10⁹`, so the next TTI is an addition.

use std::sync::Arc;

use cellcc_units::{Bandwidth, Dur, Time, NS_PER_S};

use crate::service::MAHIMAHI_FRAMING_BYTES;
use crate::trace::{Position, Trace, TraceMode, OPPORTUNITY_BYTES};

/// Bits per byte, for rate arithmetic.
#[cfg(test)]
const BITS_PER_BYTE: u128 = 8;
/// Opportunities a cursor steps over one by one before it jumps by binary search: a
/// busy cell moves a TTI at a time, an idle one jumps.
const SEEK_STEPS: u32 = 16;

/// What one UE could receive per TTI if it were scheduled alone.
#[derive(Clone, Debug)]
pub enum UeChannel {
    /// Mahimahi trace of delivery opportunities; packets are charged
    /// `ip_len + MAHIMAHI_FRAMING_BYTES` and may not exceed one opportunity, as on a
    /// trace [`crate::Link`].
    Trace {
        /// The UE's trace of delivery opportunities.
        trace: Arc<Trace>,
        /// Whether the trace loops or ends (`Once`: nothing more after its last line).
        mode: TraceMode,
        /// Where in the trace the UE starts: simulation time t reads trace time
        /// `t + offset`. Lets several UEs share one trace with independent phases.
        offset: Dur,
    },
    /// A fixed rate with no framing and no packet-size limit, as a constant
    /// [`crate::Link`].
    Constant {
        /// The channel's rate.
        rate: Bandwidth,
    },
}

impl UeChannel {
    /// A trace channel read from its start.
    pub fn trace(trace: Arc<Trace>, mode: TraceMode) -> Self {
        UeChannel::Trace {
            trace,
            mode,
            offset: Dur::ZERO,
        }
    }

    /// A channel at a constant `rate`.
    pub fn constant(rate: Bandwidth) -> Self {
        UeChannel::Constant { rate }
    }

    /// Bytes added to the IP length of every packet (4 on a trace, 0 at a constant rate).
    pub fn framing_bytes(&self) -> u32 {
        match self {
            UeChannel::Trace { .. } => MAHIMAHI_FRAMING_BYTES,
            UeChannel::Constant { .. } => 0,
        }
    }

    /// Largest charged size the channel accepts (one opportunity on a trace).
    pub fn max_charged_bytes(&self) -> Option<u32> {
        match self {
            UeChannel::Trace { .. } => Some(OPPORTUNITY_BYTES),
            UeChannel::Constant { .. } => None,
        }
    }

    /// Bytes the channel offers in `[from, to)` of simulation time.
    pub fn bytes_between(&self, from: Time, to: Time) -> u64 {
        if to <= from {
            return 0;
        }
        match self {
            UeChannel::Trace {
                trace,
                mode,
                offset,
            } => {
                let ordinal = |t: Time| {
                    trace.ordinal(trace.first_at_or_after(t.saturating_add(*offset)), *mode)
                };
                let count = ordinal(to) - ordinal(from);
                u64::try_from(count * u128::from(OPPORTUNITY_BYTES)).unwrap_or(u64::MAX)
            }
            UeChannel::Constant { rate } => {
                rate.bytes_in(Dur(to.as_ns())) - rate.bytes_in(Dur(from.as_ns()))
            }
        }
    }

    /// Bytes of TTI `k` (stateless; the cell uses [`Cursor`]s).
    #[cfg(test)]
    pub(crate) fn tti_bytes(&self, tti: Dur, k: u64) -> u64 {
        match (tti_start(tti, k), tti_start(tti, k + 1)) {
            (Some(from), Some(to)) => self.bytes_between(from, to),
            _ => 0,
        }
    }

    /// The first TTI at or after TTI `k` that carries at least one byte; `None` if there
    /// is none (a `Once` trace that has ended) or it lies beyond [`Time::MAX`].
    /// Stateless; the cell uses [`Cursor`]s.
    #[cfg(test)]
    pub(crate) fn next_useful_tti(&self, tti: Dur, k: u64) -> Option<u64> {
        let start = tti_start(tti, k)?;
        match self {
            UeChannel::Trace {
                trace,
                mode,
                offset,
            } => {
                let shifted = start.checked_add(*offset)?;
                let pos = trace.first_at_or_after(shifted);
                if *mode == TraceMode::Once && pos.cycle > 0 {
                    return None;
                }
                // The opportunity is at or after `start + offset`, so its TTI is >= k.
                let at = trace.time_of(pos)?.as_ns() - offset.as_ns();
                Some(at / tti.as_ns())
            }
            UeChannel::Constant { rate } => constant_next_useful(*rate, tti, start),
        }
    }

    /// A cursor at the start of the channel (TTI 0) for TTIs of length `tti`.
    pub(crate) fn cursor(&self, tti: Dur) -> Cursor {
        match self {
            UeChannel::Trace {
                trace,
                mode,
                offset,
            } => {
                let pos = trace.first_at_or_after(Time(offset.as_ns()));
                Cursor::Trace {
                    pos,
                    at: sim_time(trace, *mode, *offset, pos),
                }
            }
            UeChannel::Constant { rate } => {
                // bytes_in(k·tti) = ⌊k·A/D⌋ with A = rate·tti, D = 8·10⁹ (bits·ns per
                // byte·s); A = per_tti·D + carry.
                let a = u128::from(rate.bits_per_sec) * u128::from(tti.as_ns());
                let d = u128::from(CONSTANT_DENOMINATOR);
                Cursor::Constant {
                    // A TTI of at most 1000 s at a u64 rate carries < 2^64 bytes.
                    per_tti: u64::try_from(a / d).unwrap_or(u64::MAX),
                    carry: (a % d) as u64,
                    k: 0,
                    before: 0,
                    rem: 0,
                }
            }
        }
    }

    /// Bytes of TTI `k`; `k` never decreases from one call on `cursor` to the next.
    pub(crate) fn tti_bytes_at(&self, cursor: &mut Cursor, tti: Dur, k: u64) -> u64 {
        let (Some(from), Some(to)) = (tti_start(tti, k), tti_start(tti, k + 1)) else {
            return 0;
        };
        match (self, cursor) {
            (
                UeChannel::Trace {
                    trace,
                    mode,
                    offset,
                },
                cursor,
            ) => {
                self.seek(cursor, from);
                // Count the TTI's opportunities on a copy: they stay ahead of the cursor
                // until a later TTI is asked for.
                let mut probe = *cursor;
                let mut count = 0u64;
                while probe.trace_at().is_some_and(|at| at < to) {
                    count += 1;
                    probe.step(trace, *mode, *offset);
                }
                count * u64::from(OPPORTUNITY_BYTES)
            }
            (UeChannel::Constant { rate }, cursor) => {
                cursor.seek_tti(*rate, tti, k);
                cursor.constant_bytes()
            }
        }
    }

    /// The first TTI at or after TTI `k` that carries at least one byte; `None` if there
    /// is none (a `Once` trace that has ended) or it lies beyond [`Time::MAX`]. `k` never
    /// decreases from one call on `cursor` to the next.
    pub(crate) fn next_useful_tti_at(&self, cursor: &mut Cursor, tti: Dur, k: u64) -> Option<u64> {
        let start = tti_start(tti, k)?;
        match self {
            UeChannel::Trace { .. } => {
                self.seek(cursor, start);
                // The opportunity is at or after the TTI's start, so its TTI is >= k.
                cursor.trace_at().map(|at| at.as_ns() / tti.as_ns())
            }
            UeChannel::Constant { rate } => {
                cursor.seek_tti(*rate, tti, k);
                cursor.constant_next_useful()
            }
        }
    }

    /// Moves a trace cursor to the first opportunity at or after `target`: a few steps
    /// one by one, then a binary search.
    fn seek(&self, cursor: &mut Cursor, target: Time) {
        let UeChannel::Trace {
            trace,
            mode,
            offset,
        } = self
        else {
            return;
        };
        for _ in 0..SEEK_STEPS {
            if cursor.trace_at().is_none_or(|at| at >= target) {
                return;
            }
            cursor.step(trace, *mode, *offset);
        }
        if cursor.trace_at().is_some_and(|at| at < target) {
            let pos = trace.first_at_or_after(target.saturating_add(*offset));
            *cursor = Cursor::Trace {
                pos,
                at: sim_time(trace, *mode, *offset, pos),
            };
        }
    }
}

/// `D` of a constant channel's cumulative bytes `⌊k·A/D⌋`: 8 bits per byte times 10⁹ ns
/// per second (`Bandwidth::bytes_in`).
const CONSTANT_DENOMINATOR: u64 = 8 * NS_PER_S;

/// Where a UE's channel has been read up to. Moves forward only.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Cursor {
    /// The first opportunity not yet passed and its simulation time (`None`: there are no
    /// more).
    Trace { pos: Position, at: Option<Time> },
    /// TTI `k` of a constant channel and `bytes_in(k·tti) = before`, kept as the
    /// quotient and remainder of `k·A / D` (`A = rate·tti = per_tti·D + carry`), so that
    /// moving to the next TTI is an addition instead of a 128-bit division.
    Constant {
        per_tti: u64,
        carry: u64,
        k: u64,
        before: u64,
        /// `k·A mod D`, < D.
        rem: u64,
    },
}

impl Cursor {
    /// A trace cursor's opportunity time; `None` for a constant channel.
    fn trace_at(&self) -> Option<Time> {
        match self {
            Cursor::Trace { at, .. } => *at,
            Cursor::Constant { .. } => None,
        }
    }

    /// Moves a trace cursor to the next opportunity (Mahimahi's loop: after the last line,
    /// cycle + 1).
    fn step(&mut self, trace: &Trace, mode: TraceMode, offset: Dur) {
        let Cursor::Trace { pos, at } = self else {
            return;
        };
        pos.index += 1;
        if pos.index == trace.len() {
            *pos = Position {
                cycle: pos.cycle + 1,
                index: 0,
            };
        }
        *at = sim_time(trace, mode, offset, *pos);
    }

    /// Moves a constant cursor to TTI `target` (>= its TTI): `m` TTIs on is
    /// `k·A + m·A = (before + m·per_tti)·D + rem + m·carry`, in u64 while that fits,
    /// else one 128-bit division from scratch (a jump of ~2^30 TTIs or more).
    fn seek_tti(&mut self, rate: Bandwidth, tti: Dur, target: u64) {
        let Cursor::Constant {
            per_tti,
            carry,
            k,
            before,
            rem,
        } = self
        else {
            return;
        };
        if target == *k {
            return;
        }
        let m = target.wrapping_sub(*k);
        let stepped = (target > *k)
            .then(|| {
                let extra = rem.checked_add(m.checked_mul(*carry)?)?;
                let whole = before.checked_add(m.checked_mul(*per_tti)?)?;
                whole
                    .checked_add(extra / CONSTANT_DENOMINATOR)
                    .map(|b| (b, extra % CONSTANT_DENOMINATOR))
            })
            .flatten();
        let (b, r) = stepped.unwrap_or_else(|| {
            // Callers ask only for TTIs that start before Time::MAX.
            let ka = u128::from(rate.bits_per_sec) * u128::from(target.saturating_mul(tti.as_ns()));
            let d = u128::from(CONSTANT_DENOMINATOR);
            // bytes_in truncates to u64 the same way.
            ((ka / d) as u64, (ka % d) as u64)
        });
        *k = target;
        *before = b;
        *rem = r;
    }

    /// Bytes of a constant cursor's TTI: `⌊(k+1)·A/D⌋ − ⌊k·A/D⌋ = per_tti + [rem + carry
    /// >= D]`.
    fn constant_bytes(&self) -> u64 {
        match *self {
            Cursor::Constant {
                per_tti,
                carry,
                rem,
                ..
            } => per_tti + u64::from(rem + carry >= CONSTANT_DENOMINATOR),
            Cursor::Trace { .. } => 0,
        }
    }

    /// The first TTI from a constant cursor's on that carries a byte. With `per_tti >= 1`
    /// it is this one; below a byte per TTI it is the first `k + m` whose remainder
    /// carries, `rem + (m+1)·carry >= D` (one u64 division).
    fn constant_next_useful(&self) -> Option<u64> {
        let Cursor::Constant {
            per_tti,
            carry,
            k,
            rem,
            ..
        } = *self
        else {
            return None;
        };
        if per_tti >= 1 {
            return Some(k);
        }
        // `carry >= 1`: a positive rate and TTI make `A >= 1`.
        k.checked_add((CONSTANT_DENOMINATOR - rem - 1) / carry)
    }
}

/// Simulation time (trace time − offset) of the opportunity at `pos`; `None` past the
/// end of a `Once` trace or beyond [`Time::MAX`].
fn sim_time(trace: &Trace, mode: TraceMode, offset: Dur, pos: Position) -> Option<Time> {
    if mode == TraceMode::Once && pos.cycle > 0 {
        return None;
    }
    // Cursors only visit opportunities at or after `offset`.
    trace
        .time_of(pos)
        .and_then(|t| t.as_ns().checked_sub(offset.as_ns()))
        .map(Time)
}

/// The first TTI, from the one starting at `start`, that carries a byte at `rate`
/// (stateless: the reference for the cursors).
#[cfg(test)]
fn constant_next_useful(rate: Bandwidth, tti: Dur, start: Time) -> Option<u64> {
    // Smallest T with bytes_in(T) >= B + 1, where B = bytes_in(start):
    // T = ceil((B + 1)·8·1e9 / rate). The TTI whose end reaches T is ceil(T / tti) − 1,
    // and T > start, so it is at or after the TTI starting at `start`.
    let before = u128::from(rate.bytes_in(Dur(start.as_ns())));
    let bits = (before + 1) * BITS_PER_BYTE * u128::from(NS_PER_S);
    let first_ns = bits.div_ceil(u128::from(rate.bits_per_sec));
    let k_next = first_ns.div_ceil(u128::from(tti.as_ns())) - 1;
    u64::try_from(k_next).ok()
}

/// Start of TTI `k`, or `None` beyond [`Time::MAX`].
pub(crate) fn tti_start(tti: Dur, k: u64) -> Option<Time> {
    k.checked_mul(tti.as_ns()).map(Time)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(ts: &[u32]) -> Arc<Trace> {
        Arc::new(Trace::from_timestamps(ts.to_vec(), "t").unwrap())
    }

    /// Brute force: the first k' >= k with tti_bytes > 0, searching a bounded range.
    fn brute_next(c: &UeChannel, tti: Dur, k: u64, limit: u64) -> Option<u64> {
        (k..k + limit).find(|&j| c.tti_bytes(tti, j) > 0)
    }

    #[test]
    fn trace_ttis_collect_the_opportunities_they_cover() {
        // Opportunities at 1, 1, 3, 5 ms; loop period 5 ms.
        let c = UeChannel::trace(trace(&[1, 1, 3, 5]), TraceMode::Loop);
        let ms = Dur::from_ms(1);
        let per_tti: Vec<u64> = (0..7).map(|k| c.tti_bytes(ms, k) / 1504).collect();
        // Cycle 0: 1,1,3,5; cycle 1: 6,6,8,10.
        assert_eq!(per_tti, [0, 2, 0, 1, 0, 1, 2]);
        let half = Dur::from_us(500);
        let per_half: Vec<u64> = (0..8).map(|k| c.tti_bytes(half, k) / 1504).collect();
        assert_eq!(per_half, [0, 0, 2, 0, 0, 0, 1, 0]);
        // 2 ms TTIs gather [2, 4) → the opportunity at 3.
        assert_eq!(c.tti_bytes(Dur::from_ms(2), 1), 1504);
    }

    #[test]
    fn offset_reads_the_trace_later() {
        let c = UeChannel::Trace {
            trace: trace(&[1, 1, 3, 5]),
            mode: TraceMode::Loop,
            offset: Dur::from_ms(2),
        };
        // Simulation ms 1 = trace ms 3, ms 3 = trace ms 5, ms 4 = trace ms 6 (two).
        let per_tti: Vec<u64> = (0..5)
            .map(|k| c.tti_bytes(Dur::from_ms(1), k) / 1504)
            .collect();
        assert_eq!(per_tti, [0, 1, 0, 1, 2]);
    }

    #[test]
    fn constant_ttis_do_not_drift() {
        // 1 Mbit/s = 125 000 B/s; 0.5 ms TTIs carry 62.5 bytes on average.
        let c = UeChannel::constant(Bandwidth::from_bps(1_000_000));
        let tti = Dur::from_us(500);
        let first: Vec<u64> = (0..4).map(|k| c.tti_bytes(tti, k)).collect();
        assert_eq!(first, [62, 63, 62, 63]);
        let total: u64 = (0..2000).map(|k| c.tti_bytes(tti, k)).sum();
        assert_eq!(total, 125_000);
        assert_eq!(c.bytes_between(Time::ZERO, Time::from_secs(1)), 125_000);
    }

    #[test]
    fn cursors_agree_with_the_stateless_answers() {
        let channels = [
            UeChannel::Trace {
                trace: trace(&[0, 0, 3, 7, 7, 7, 8, 30]),
                mode: TraceMode::Loop,
                offset: Dur::from_ms(5),
            },
            UeChannel::Trace {
                trace: trace(&[2, 4, 9]),
                mode: TraceMode::Once,
                offset: Dur::from_ms(3),
            },
            UeChannel::constant(Bandwidth::from_bps(700_000)),
        ];
        for c in &channels {
            for tti in [Dur::from_ms(1), Dur::from_us(500), Dur::from_ms(4)] {
                let mut cursor = c.cursor(tti);
                let mut k = 0;
                // Steps of 0 to 3 TTIs with an occasional long jump.
                for i in 0..400u64 {
                    k += if i % 37 == 36 { 250 } else { i % 4 };
                    assert_eq!(
                        c.next_useful_tti_at(&mut cursor, tti, k),
                        c.next_useful_tti(tti, k),
                        "{c:?} tti {tti} k {k}"
                    );
                    assert_eq!(c.tti_bytes_at(&mut cursor, tti, k), c.tti_bytes(tti, k));
                }
            }
        }
    }

    #[test]
    fn next_useful_tti_matches_brute_force() {
        let slow = UeChannel::constant(Bandwidth::from_bps(3_000));
        let sparse = UeChannel::trace(trace(&[0, 7, 7, 20]), TraceMode::Loop);
        let once = UeChannel::trace(trace(&[2, 4]), TraceMode::Once);
        for tti in [Dur::from_ms(1), Dur::from_us(500), Dur::from_ms(3)] {
            for k in 0..60 {
                for c in [&slow, &sparse] {
                    assert_eq!(
                        c.next_useful_tti(tti, k),
                        brute_next(c, tti, k, 20_000),
                        "{c:?} tti {tti} k {k}"
                    );
                }
                assert_eq!(once.next_useful_tti(tti, k), brute_next(&once, tti, k, 100));
            }
        }
    }
}
