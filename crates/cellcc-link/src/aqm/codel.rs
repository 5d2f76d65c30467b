//! CoDel, "Controlled Delay Active Queue Management", RFC 8289 (January 2018), with the
//! Linux control law (`include/net/codel.h`, `codel_impl.h`, 4.x–6.x), and the variant
//! Mahimahi runs (ravinet/mahimahi `src/packet/codel_packet_queue.cc`, "based on
//! draft-ietf-aqm-codel-04 and Linux 4.4").
//!
//! Model. CoDel watches the sojourn time of each packet it dequeues (`now −
//! enqueued_at`). When the sojourn time has stayed at or above `target` for a whole
//! `interval` (and more than one packet's worth of bytes is queued), it drops a packet
//! and enters the dropping state, where it drops one more packet each time `drop_next`
//! passes, `drop_next` advancing by `interval/√count` (the control law): the drop rate
//! grows as √count until a dequeued packet is back below target. Re-entering within 16
//! intervals resumes at the number of drops of the previous episode (`count := count −
//! lastcount`), which is not the previous drop rate: after a long episode it is the whole
//! final count, after a short one it is small (docs/aqm.md traces the cycle this makes
//! under unresponsive overload).
//!
//! ```text
//!                    sojourn ≥ target and backlog > MAXPACKET for a whole interval:
//!                    drop; count := delta or 1; drop_next := now + interval/√count
//!   +---------------+ ───────────────────────────────────────────► +----------+
//!   | not dropping  |                                                | dropping | ─┐ now ≥ drop_next:
//!   +---------------+ ◄─────────────────────────────────────────── +----------+ ◄┘ drop, count += 1,
//!                     a dequeued packet below target, or backlog         drop_next += interval/√count
//!                     ≤ MAXPACKET (queue nearly empty)
//! ```
//!
//! Differences of the `rfc` variant from RFC 8289's pseudocode:
//! 1. `interval/√count` uses Linux's fixed point: 1/√count is kept in Q0.16 and moved
//!    by one Newton step each time count changes (`codel_Newton_step`), then scaled in
//!    Q0.32 (`codel_control_law`), as RFC 8289 §5.7 suggests. From count = 1 the first
//!    step lands on 0.5, so the second drop comes 50 ms after the first instead of
//!    100/√2 = 70.7 ms; the error is −2.6 % at count 3, −1 % at 6, < 0.5 % from 9.
//! 2. The re-entry test `now − drop_next < 16·interval` is Linux's signed comparison:
//!    re-entering before `drop_next` counts as recent.
//! 3. No ECN: items are opaque, so every congestion signal is a drop.
//! 4. MAXPACKET is 1504 charged bytes (one Mahimahi opportunity).
//!
//! Differences from Linux: 1. time is 64-bit nanoseconds, not wrapping 32-bit units of
//! 1.024 µs; 2. the dropping state is entered when `now ≥ first_above_time` (RFC), not
//! `now > first_above_time`; 3. no ECN, no per-flow queues (`fq_codel`), and the
//! backlog compared with MAXPACKET is this queue's, not the whole qdisc's.
//!
//! The `mahimahi` variant reproduces Mahimahi's differences from the RFC:
//! 1. Clock in whole milliseconds: `now` and `enqueued_at` are floored to ms before the
//!    sojourn time and all state times are computed.
//! 2. The control law is `interval/√count` in floating point, truncated to whole ms
//!    (100, 70, 57, 50, 44, ... ms).
//! 3. When a drop is due, the head packet is **delivered** and the packet(s) behind it
//!    are discarded; the decision to keep dropping is taken on the discarded packet.
//!    (The RFC drops the head and delivers the next packet.)
//! 4. The re-entry test `now − drop_next < 16·interval` is unsigned: re-entering before
//!    `drop_next` wraps around, fails the test, and restarts at count = 1.
//! 5. Mahimahi measures sojourn at its wall-clock dequeue time; here it is the
//!    opportunity time the link passes, which is the same when the emulator keeps up.
//! 6. Mahimahi does not log drops made at dequeue; here every drop is reported.

use std::collections::VecDeque;
use std::fmt;

use cellcc_units::{Dur, Time};

use super::MAX_PACKET_BYTES;
use super::{aqm_drop, check_limit, check_ms, fmt_limits, AqmConfigError, AqmVariant};
use crate::queue::{DroppedPacket, Fifo, Limits, Overflow, PacketQueue, Queued};

/// Name used in errors and in the Mahimahi spelling.
const NAME: &str = "codel";
/// RFC 8289 §5.3: TARGET = 5 ms.
const DEFAULT_TARGET_MS: u64 = 5;
/// RFC 8289 §5.3: INTERVAL = 100 ms.
const DEFAULT_INTERVAL_MS: u64 = 100;
/// RFC 8289 §5.5: re-entering within 16 intervals of the last drop schedule resumes the
/// previous drop rate.
const REENTRY_INTERVALS: u64 = 16;
/// Linux `REC_INV_SQRT_BITS`: 1/√count is stored in Q0.16.
const REC_INV_SQRT_BITS: u32 = 16;
/// Linux `REC_INV_SQRT_SHIFT`: shift from Q0.16 to Q0.32.
const REC_INV_SQRT_SHIFT: u32 = 32 - REC_INV_SQRT_BITS;
/// Linux's value of 1/√1 in Q0.16 (`~0U >> REC_INV_SQRT_SHIFT`), just under 1.
const REC_INV_SQRT_ONE: u16 = u16::MAX;

/// CoDel's parameters. Missing keys take the RFC 8289 defaults; unknown keys are
/// errors. Scenario spelling: `queue = { kind = "codel", target_ms = 5, interval_ms =
/// 100, packets = 1000, variant = "rfc" }`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CodelConfig {
    /// `rfc` (default) or `mahimahi`.
    pub variant: AqmVariant,
    /// TARGET, the acceptable standing sojourn time, ms. Default 5 (RFC 8289 §5.3).
    pub target_ms: u64,
    /// INTERVAL, the time the sojourn must stay above target before dropping, and the
    /// base of the control law, ms. Default 100 (RFC 8289 §5.3).
    pub interval_ms: u64,
    /// Tail-drop limit in packets; none by default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packets: Option<u64>,
    /// Tail-drop limit in charged bytes; none by default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
}

impl Default for CodelConfig {
    fn default() -> Self {
        CodelConfig {
            variant: AqmVariant::Rfc,
            target_ms: DEFAULT_TARGET_MS,
            interval_ms: DEFAULT_INTERVAL_MS,
            packets: None,
            bytes: None,
        }
    }
}

impl CodelConfig {
    /// Checks every parameter; the error names the first bad one.
    pub fn validate(&self) -> Result<(), AqmConfigError> {
        check_ms(NAME, "target_ms", self.target_ms, false)?;
        check_ms(NAME, "interval_ms", self.interval_ms, false)?;
        check_limit(NAME, "packets", self.packets)?;
        check_limit(NAME, "bytes", self.bytes)
    }
}

impl fmt::Display for CodelConfig {
    /// Mahimahi's `--*-queue-args` spelling, e.g. `codel target=5, interval=100,
    /// packets=1000`; the `rfc` variant, which Mahimahi does not have, adds
    /// `, variant=rfc`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{NAME} target={}, interval={}",
            self.target_ms, self.interval_ms
        )?;
        fmt_limits(f, self.packets, self.bytes)?;
        if self.variant == AqmVariant::Rfc {
            f.write_str(", variant=rfc")?;
        }
        Ok(())
    }
}

/// A CoDel queue (see the module docs). Built from a validated [`CodelConfig`].
#[derive(Clone, Debug)]
pub struct Codel<T> {
    variant: AqmVariant,
    target: Dur,
    interval: Dur,
    fifo: Fifo<T>,
    /// When the sojourn time will have been above target for a whole interval; `None`
    /// while it is below (RFC 8289 `first_above_time = 0`).
    first_above_time: Option<Time>,
    /// When the next drop is due in the dropping state.
    drop_next: Time,
    /// Drops since entering the dropping state (plus the resumed count).
    count: u32,
    /// `count` when the dropping state was last entered.
    lastcount: u32,
    dropping: bool,
    /// 1/√count in Q0.16 (`rfc` variant only).
    rec_inv_sqrt: u16,
}

/// What `do_dequeue` found (RFC 8289 §5.6 `dodequeue_result`).
struct Dequeued<T> {
    packet: Option<Queued<T>>,
    ok_to_drop: bool,
}

impl<T> Codel<T> {
    /// An empty queue with `config`, or the error [`CodelConfig::validate`] finds.
    pub fn new(config: CodelConfig) -> Result<Self, AqmConfigError> {
        config.validate()?;
        let limits = Limits {
            packets: config.packets,
            bytes: config.bytes,
        };
        Ok(Codel {
            variant: config.variant,
            target: Dur::from_ms(config.target_ms),
            interval: Dur::from_ms(config.interval_ms),
            fifo: Fifo::new(limits, Overflow::Reject),
            first_above_time: None,
            drop_next: Time::ZERO,
            count: 0,
            lastcount: 0,
            dropping: false,
            rec_inv_sqrt: 0,
        })
    }

    /// Whether the queue is in the dropping state.
    pub fn dropping(&self) -> bool {
        self.dropping
    }

    /// The drop count of the current (or last) dropping state.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// When the next drop is due, if in the dropping state.
    pub fn drop_next(&self) -> Option<Time> {
        self.dropping.then_some(self.drop_next)
    }

    /// When the sojourn time will have been above target for an interval, if it is
    /// above target now.
    pub fn first_above_time(&self) -> Option<Time> {
        self.first_above_time
    }

    /// The time CoDel reads: exact, or floored to whole ms (Mahimahi's clock).
    fn clock(&self, t: Time) -> Time {
        match self.variant {
            AqmVariant::Rfc => t,
            AqmVariant::Mahimahi => Time::from_ms(t.as_ms()),
        }
    }

    /// Takes the head and says whether CoDel may drop: its sojourn time has been at or
    /// above target for a whole interval (RFC 8289 §5.6 `dodequeue`).
    fn do_dequeue(&mut self, now: Time) -> Dequeued<T> {
        let Some(packet) = self.fifo.pop_front() else {
            // RFC 8289 §5.6: an empty queue cannot be above target.
            self.first_above_time = None;
            return Dequeued {
                packet: None,
                ok_to_drop: false,
            };
        };
        let sojourn = now.saturating_since(self.clock(packet.enqueued_at));
        let mut ok_to_drop = false;
        // RFC 8289 §5.6: below target, or at most one packet left (the backlog term,
        // which also covers Mahimahi's "queue now empty" test).
        if sojourn < self.target || self.fifo.len_bytes() <= MAX_PACKET_BYTES {
            self.first_above_time = None;
        } else {
            match self.first_above_time {
                None => self.first_above_time = Some(now + self.interval),
                Some(t) if now >= t => ok_to_drop = true,
                Some(_) => {}
            }
        }
        Dequeued {
            packet: Some(packet),
            ok_to_drop,
        }
    }

    /// `t + interval/√count` (RFC 8289 §3.3, §5.6 `control_law`).
    fn control_law(&self, t: Time) -> Time {
        let step = match self.variant {
            // Linux `codel_control_law`: reciprocal_scale(interval, rec_inv_sqrt << 16).
            AqmVariant::Rfc => {
                let scale = u128::from(self.rec_inv_sqrt) << REC_INV_SQRT_SHIFT;
                let ns = (u128::from(self.interval.as_ns()) * scale) >> 32;
                Dur::from_ns(u64::try_from(ns).expect("≤ interval, which fits in u64"))
            }
            // Mahimahi: `t + (uint64_t)(interval / sqrt(count))`, in whole ms.
            AqmVariant::Mahimahi => {
                let ms = self.interval.as_ms() as f64 / f64::from(self.count).sqrt();
                Dur::from_ms(ms as u64)
            }
        };
        t + step
    }

    /// One more drop in the dropping state: count += 1 and, in the `rfc` variant, one
    /// Newton step toward the new 1/√count.
    fn bump_count(&mut self) {
        self.count = self.count.saturating_add(1);
        if self.variant == AqmVariant::Rfc {
            self.rec_inv_sqrt = newton_step(self.rec_inv_sqrt, self.count);
        }
    }

    /// Entering the dropping state (RFC 8289 §5.5): resume the previous drop rate if the
    /// last episode was recent, otherwise restart at count = 1.
    fn enter_dropping(&mut self, now: Time) {
        debug_assert!(!self.dropping, "entered only from the non-dropping state");
        self.dropping = true;
        // count ≥ lastcount: count only grows between two entries.
        let delta = self.count - self.lastcount;
        let recent = match self.variant {
            // Linux `codel_time_before(now − drop_next, 16·interval)`, signed.
            AqmVariant::Rfc => {
                now.saturating_since(self.drop_next) < self.interval * REENTRY_INTERVALS
            }
            // Mahimahi: unsigned 64-bit `now − drop_next_ < 16·interval_`.
            AqmVariant::Mahimahi => {
                now.as_ns().wrapping_sub(self.drop_next.as_ns())
                    < (self.interval * REENTRY_INTERVALS).as_ns()
            }
        };
        if delta > 1 && recent {
            self.count = delta;
            // Linux: one Newton step from the old 1/√count; later steps correct it.
            if self.variant == AqmVariant::Rfc {
                self.rec_inv_sqrt = newton_step(self.rec_inv_sqrt, self.count);
            }
        } else {
            self.count = 1;
            self.rec_inv_sqrt = REC_INV_SQRT_ONE;
        }
        self.lastcount = self.count;
        self.drop_next = self.control_law(now);
    }

    /// RFC 8289 §5.5 `dequeue`: the head is dropped and the next packet delivered.
    fn dequeue_rfc(
        &mut self,
        now: Time,
        drops: &mut VecDeque<DroppedPacket<T>>,
    ) -> Option<Queued<T>> {
        let mut r = self.do_dequeue(now);
        if self.dropping {
            if !r.ok_to_drop {
                // Sojourn time below target: leave the dropping state.
                self.dropping = false;
            }
            // A large backlog can make several drops due at once, hence the loop.
            while self.dropping && now >= self.drop_next {
                let victim = r.packet.take().expect("ok_to_drop implies a packet");
                drops.push_back(aqm_drop(victim, now));
                self.bump_count();
                r = self.do_dequeue(now);
                if r.ok_to_drop {
                    self.drop_next = self.control_law(self.drop_next);
                } else {
                    self.dropping = false;
                }
            }
        } else if r.ok_to_drop {
            let victim = r.packet.take().expect("ok_to_drop implies a packet");
            drops.push_back(aqm_drop(victim, now));
            r = self.do_dequeue(now);
            self.enter_dropping(now);
        }
        r.packet
    }

    /// Mahimahi's `CODELPacketQueue::dequeue`: the head is delivered and the packets
    /// behind it are discarded when drops are due.
    fn dequeue_mahimahi(
        &mut self,
        now: Time,
        drops: &mut VecDeque<DroppedPacket<T>>,
    ) -> Option<Queued<T>> {
        let head = self.do_dequeue(now);
        if self.dropping {
            if !head.ok_to_drop {
                self.dropping = false;
            }
            while self.dropping && now >= self.drop_next {
                // ok_to_drop of the previous packet implies more bytes queued.
                let behind = self.do_dequeue(now);
                let victim = behind.packet.expect("ok_to_drop implies a packet behind");
                drops.push_back(aqm_drop(victim, now));
                self.bump_count();
                if behind.ok_to_drop {
                    self.drop_next = self.control_law(self.drop_next);
                } else {
                    self.dropping = false;
                }
            }
        } else if head.ok_to_drop {
            let behind = self.do_dequeue(now);
            let victim = behind.packet.expect("ok_to_drop implies a packet behind");
            drops.push_back(aqm_drop(victim, now));
            self.enter_dropping(now);
        }
        head.packet
    }
}

impl<T> PacketQueue<T> for Codel<T> {
    /// RFC 8289 §5.4: CoDel does nothing at arrival but timestamp the packet (the link
    /// already did) and apply the tail-drop limits.
    fn enqueue(
        &mut self,
        now: Time,
        packet: Queued<T>,
        drops: &mut VecDeque<DroppedPacket<T>>,
    ) -> Result<(), Queued<T>> {
        self.fifo.enqueue(now, packet, drops)
    }

    fn dequeue(&mut self, now: Time, drops: &mut VecDeque<DroppedPacket<T>>) -> Option<Queued<T>> {
        let now = self.clock(now);
        match self.variant {
            AqmVariant::Rfc => self.dequeue_rfc(now, drops),
            AqmVariant::Mahimahi => self.dequeue_mahimahi(now, drops),
        }
    }

    fn len_packets(&self) -> usize {
        self.fifo.len_packets()
    }

    fn len_bytes(&self) -> u64 {
        self.fifo.len_bytes()
    }
}

/// One Newton–Raphson step toward 1/√count for `y` in Q0.16:
/// `y' = y·(3 − count·y²)/2` (Linux `codel_Newton_step`, integer widths as there).
pub(crate) fn newton_step(rec_inv_sqrt: u16, count: u32) -> u16 {
    let invsqrt = u32::from(rec_inv_sqrt) << REC_INV_SQRT_SHIFT;
    let invsqrt2 = ((u64::from(invsqrt) * u64::from(invsqrt)) >> 32) as u32;
    // 3·2^32 − count·y², wrapping as Linux's u64 does (it cannot for count changes of
    // one, or for a resumed count below the previous one).
    let mut val = (3u64 << 32).wrapping_sub(u64::from(count) * u64::from(invsqrt2));
    val >>= 2; // keeps the next product inside 64 bits
    val = (val.wrapping_mul(u64::from(invsqrt))) >> (32 - 2 + 1);
    (val >> REC_INV_SQRT_SHIFT) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn queue(variant: AqmVariant) -> Codel<u32> {
        Codel::new(CodelConfig {
            variant,
            ..CodelConfig::default()
        })
        .unwrap()
    }

    /// Enqueues packets `ids` (1500 charged bytes each) at `at`.
    fn fill(q: &mut Codel<u32>, ids: std::ops::Range<u32>, at: Time) {
        let mut drops = VecDeque::new();
        for id in ids {
            let p = Queued {
                item: id,
                ip_len: 1496,
                charged_bytes: 1500,
                enqueued_at: at,
            };
            q.enqueue(at, p, &mut drops).unwrap();
        }
        assert!(drops.is_empty());
    }

    /// Dequeues at `at`: (delivered id, dropped ids).
    fn take(q: &mut Codel<u32>, at: Time) -> (Option<u32>, Vec<u32>) {
        let mut drops = VecDeque::new();
        let got = q.dequeue(at, &mut drops).map(|p| p.item);
        assert!(drops
            .iter()
            .all(|d| d.reason == crate::DropReason::Aqm && d.at == at));
        (got, drops.into_iter().map(|d| d.item).collect())
    }

    #[test]
    fn newton_steps_worked_by_hand() {
        // count 2 from y = 0xFFFF/2^16 ≈ 1: y·(3 − 2y²)/2 ≈ 0.5, 0x8001 after Linux's
        // truncations (y² = 0xFFFE0001/2^32, val = 3·2^32 − 2·y², ...).
        assert_eq!(newton_step(0xFFFF, 2), 0x8001);
        // count 3 from 0.50001526: y·(3 − 3y²)/2 = 0.5625057 → 36864 = 0x9000.
        assert_eq!(newton_step(0x8001, 3), 0x9000);
        // count 4 from 0.5625: 0.5625·(3 − 4·0.31640625)/2 = 0.48779296875 = 0x7CE0.
        assert_eq!(newton_step(0x9000, 4), 0x7CE0);
        // Stepping count by one keeps y within 0.1 % of 1/√count from count 60 on,
        // plus two Q0.16 units of rounding (which dominate for large counts).
        let mut y = REC_INV_SQRT_ONE;
        for count in 2..=100_000u32 {
            y = newton_step(y, count);
            let exact = 65536.0 / f64::from(count).sqrt();
            if count >= 60 {
                let error = (f64::from(y) - exact).abs();
                assert!(error < 1e-3 * exact + 2.0, "count {count}: {y} vs {exact}");
            }
        }
    }

    #[test]
    fn control_law_worked_numbers() {
        let mut q = queue(AqmVariant::Rfc);
        q.rec_inv_sqrt = REC_INV_SQRT_ONE;
        // 100 ms × 0xFFFF0000 / 2^32 = 100 ms × (1 − 2^-16) = 99 998 474.1 ns.
        assert_eq!(q.control_law(Time::ZERO), Time::from_ns(99_998_474));
        q.rec_inv_sqrt = 0x8001; // 100 ms × 0x80010000 / 2^32 = 50 001 525.9 ns.
        assert_eq!(q.control_law(Time::ZERO), Time::from_ns(50_001_525));
        let mut m = queue(AqmVariant::Mahimahi);
        for (count, ms) in [(1, 100), (2, 70), (3, 57), (4, 50), (5, 44), (100, 10)] {
            m.count = count;
            assert_eq!(m.control_law(Time::from_ms(7)), Time::from_ms(7 + ms));
        }
    }

    #[test]
    fn rfc_drops_the_head_mahimahi_delivers_it_and_drops_the_next() {
        // (delivered, dropped) when entering the dropping state, then at drop_next.
        for (variant, first, second) in [
            (AqmVariant::Rfc, (Some(2), vec![1]), (Some(5), vec![4])),
            (AqmVariant::Mahimahi, (Some(1), vec![2]), (Some(4), vec![5])),
        ] {
            let mut q = queue(variant);
            fill(&mut q, 0..10, Time::ZERO);
            // 10 ms: sojourn 10 ms ≥ 5 ms with 9 packets behind: above target from now.
            assert_eq!(take(&mut q, Time::from_ms(10)), (Some(0), vec![]));
            assert_eq!(q.first_above_time(), Some(Time::from_ms(110)));
            // 110 ms: above target for a whole interval: enter the dropping state.
            assert_eq!(take(&mut q, Time::from_ms(110)), first, "{variant}");
            assert!(q.dropping());
            assert_eq!(q.count(), 1);
            let next = q.drop_next().unwrap();
            match variant {
                AqmVariant::Rfc => assert_eq!(next, Time::from_ns(110 * MS + 99_998_474)),
                AqmVariant::Mahimahi => assert_eq!(next, Time::from_ms(210)),
            }
            // Just before drop_next: deliver packet 3 without dropping.
            assert_eq!(take(&mut q, next - Dur::from_ns(1)), (Some(3), vec![]));
            // At drop_next: the second drop, count 2.
            assert_eq!(take(&mut q, next), second, "{variant}");
            assert_eq!(q.count(), 2);
            match variant {
                AqmVariant::Rfc => assert_eq!(q.drop_next(), Some(next + Dur(50_001_525))),
                AqmVariant::Mahimahi => assert_eq!(q.drop_next(), Some(Time::from_ms(280))),
            }
        }
    }

    #[test]
    fn mahimahi_reads_a_whole_millisecond_clock() {
        // Enqueued at 0.9 ms, dequeued at 5.5 ms: 4.6 ms exactly, but 5 − 0 = 5 ms on
        // Mahimahi's clock, which reaches the 5 ms target.
        for (variant, above) in [
            (AqmVariant::Rfc, None),
            (AqmVariant::Mahimahi, Some(Time::from_ms(105))),
        ] {
            let mut q = queue(variant);
            fill(&mut q, 0..3, Time::from_us(900));
            take(&mut q, Time::from_us(5500));
            assert_eq!(q.first_above_time(), above, "{variant}");
        }
    }

    #[test]
    fn reentry_before_drop_next_resumes_in_rfc_and_restarts_in_mahimahi() {
        let now = Time::from_secs(10);
        for (offset_before_now, rfc, mahimahi) in [
            // drop_next 50 ms in the future: Linux's signed test says "recent";
            // Mahimahi's unsigned difference wraps and says "long ago".
            (-50i64, 8, 1),
            // 1 s after drop_next: within 16 intervals for both.
            (1000, 8, 8),
            // 2 s after: too long ago for both.
            (2000, 1, 1),
        ] {
            for (variant, expected) in [(AqmVariant::Rfc, rfc), (AqmVariant::Mahimahi, mahimahi)] {
                let mut q = queue(variant);
                q.count = 10;
                q.lastcount = 2;
                q.rec_inv_sqrt = 0x5100; // ≈ 1/√10
                q.drop_next =
                    Time::from_ns((now.as_ns() as i64 - offset_before_now * MS as i64) as u64);
                q.enter_dropping(now);
                assert_eq!(q.count(), expected, "{variant}, {offset_before_now} ms");
                assert_eq!(q.lastcount, expected);
            }
        }
    }

    #[test]
    fn leaves_the_dropping_state_below_target_and_never_drops_the_last_packet() {
        for variant in [AqmVariant::Rfc, AqmVariant::Mahimahi] {
            let mut q = queue(variant);
            fill(&mut q, 0..6, Time::ZERO);
            take(&mut q, Time::from_ms(10));
            let (_, dropped) = take(&mut q, Time::from_ms(110));
            assert_eq!(dropped.len(), 1);
            // Fresh packets queue behind the old ones (3, 4, 5), still above target: the
            // queue stays in the dropping state while they leave (before drop_next) ...
            fill(&mut q, 100..103, Time::from_ms(111));
            for (ms, id) in [(112, 3), (113, 4), (114, 5)] {
                assert_eq!(take(&mut q, Time::from_ms(ms)), (Some(id), vec![]));
                assert!(q.dropping(), "{variant}, {ms} ms");
            }
            // ... and the first fresh one, 4 ms old, is below target: leave it.
            assert_eq!(take(&mut q, Time::from_ms(115)), (Some(100), vec![]));
            assert!(!q.dropping(), "{variant}");
            assert_eq!(q.first_above_time(), None);
            // One packet left behind (≤ MAXPACKET): no drop however old it is.
            let mut q = queue(variant);
            fill(&mut q, 0..2, Time::ZERO);
            assert_eq!(take(&mut q, Time::from_secs(5)), (Some(0), vec![]));
            assert_eq!(take(&mut q, Time::from_secs(6)), (Some(1), vec![]));
            assert_eq!(q.first_above_time(), None);
        }
    }

    #[test]
    fn limits_refuse_arrivals() {
        let mut q = Codel::<u32>::new(CodelConfig {
            packets: Some(2),
            ..CodelConfig::default()
        })
        .unwrap();
        fill(&mut q, 0..2, Time::ZERO);
        let p = Queued {
            item: 9,
            ip_len: 1496,
            charged_bytes: 1500,
            enqueued_at: Time::ZERO,
        };
        let rejected = q.enqueue(Time::ZERO, p, &mut VecDeque::new());
        assert_eq!(rejected.map_err(|p| p.item), Err(9));
        assert_eq!((q.len_packets(), q.len_bytes()), (2, 3000));
    }
}
