//! The `mahimahi` variant's drop-probability controller: Mahimahi's
//! `PIEPacketQueue` (ravinet/mahimahi `src/packet/pie_packet_queue.cc`), with its
//! whole-millisecond clock and integer delay and rate. See the parent module for the
//! list of differences from RFC 8033.

use cellcc_units::{Dur, Time};
use rand_core::Rng;

use super::{uniform, PieConfig, ALPHA, BETA, DECAY, DQ_THRESHOLD, SAFE_PROB};
use crate::aqm::MAX_PACKET_BYTES;

/// Mahimahi's auto-tuning: divide the PI step by 128 below p = 0.01, by 32 below 0.1,
/// else by 16 (coarser than RFC 8033 §4.2's ladder).
const AUTO_TUNE: [(f64, f64); 2] = [(0.01, 128.0), (0.1, 32.0)];
/// Mahimahi's divisor from p = 0.1 up.
const AUTO_TUNE_TOP: f64 = 16.0;
/// Mahimahi's rate average keeps 7/8 of the old value (`avg − avg>>3 + sample>>3`).
const RATE_EWMA_SHIFT: u32 = 3;

/// The state a periodic update changes (compared to detect a fixed point). Names and
/// integer widths are Mahimahi's.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Vars {
    drop_prob: f64,
    burst_allowance_ms: u32,
    qdelay_old_ms: u32,
    current_qdelay_ms: u32,
    /// Bytes dequeued in the rate measurement in progress (`None` = Mahimahi's
    /// `DQ_COUNT_INVALID`, no measurement).
    dq_count: Option<u32>,
    /// Start of the rate measurement, ms.
    dq_tstamp_ms: u32,
    /// Average dequeue rate, bytes per ms; 0 = unknown.
    avg_dq_rate: u32,
}

/// Mahimahi PIE's controller.
#[derive(Clone, Debug)]
pub(super) struct MahimahiPie {
    qdelay_ref_ms: u32,
    max_burst_ms: u32,
    t_update_ms: u64,
    vars: Vars,
    /// Time of the last periodic update, ms (Mahimahi `last_update_`, the queue's
    /// creation time at first, here 0).
    last_update_ms: u64,
}

impl MahimahiPie {
    pub(super) fn new(config: &PieConfig) -> Self {
        let ms = |v: u64| u32::try_from(v).expect("validated to at most one hour");
        MahimahiPie {
            qdelay_ref_ms: ms(config.qdelay_ref_ms),
            max_burst_ms: ms(config.max_burst_ms),
            t_update_ms: config.t_update_ms(),
            vars: Vars {
                drop_prob: 0.0,
                // Mahimahi starts without burst allowance (RFC 8033: MAX_BURST).
                burst_allowance_ms: 0,
                qdelay_old_ms: 0,
                current_qdelay_ms: 0,
                dq_count: None,
                dq_tstamp_ms: 0,
                avg_dq_rate: 0,
            },
            last_update_ms: 0,
        }
    }

    pub(super) fn drop_prob(&self) -> f64 {
        self.vars.drop_prob
    }

    pub(super) fn burst_allowance(&self) -> Dur {
        Dur::from_ms(u64::from(self.vars.burst_allowance_ms))
    }

    pub(super) fn qdelay(&self) -> Dur {
        Dur::from_ms(u64::from(self.vars.current_qdelay_ms))
    }

    /// Mahimahi `calculate_drop_prob`: replays every update period that has passed
    /// strictly (`now − last_update > t_update`), each with the backlog as it is now.
    pub(super) fn catch_up(&mut self, now: Time, queue_bytes: u64) {
        let now_ms = now.as_ms();
        while now_ms.saturating_sub(self.last_update_ms) > self.t_update_ms {
            let before = self.vars;
            self.update(queue_bytes);
            self.last_update_ms += self.t_update_ms;
            let behind = now_ms - self.last_update_ms;
            if self.vars == before && behind > self.t_update_ms {
                // A fixed point: the remaining updates change nothing. Skip them.
                self.last_update_ms += (behind - 1) / self.t_update_ms * self.t_update_ms;
            }
        }
    }

    /// One update period of Mahimahi's `calculate_drop_prob`.
    fn update(&mut self, queue_bytes: u64) {
        let v = &mut self.vars;
        let mut update_prob = true;
        v.qdelay_old_ms = v.current_qdelay_ms;
        // Little's law in whole ms: bytes / (bytes per ms).
        v.current_qdelay_ms = match v.avg_dq_rate {
            0 => 0,
            rate => u32::try_from(queue_bytes / u64::from(rate)).unwrap_or(u32::MAX),
        };
        if v.current_qdelay_ms == 0 && queue_bytes != 0 {
            update_prob = false;
        }
        // RFC 8033 §4.2's PI law, but with the delays in ms.
        let diff = |a: u32, b: u32| (i64::from(a) - i64::from(b)) as f64;
        let mut p = ALPHA * diff(v.current_qdelay_ms, self.qdelay_ref_ms)
            + BETA * diff(v.current_qdelay_ms, v.qdelay_old_ms);
        p /= AUTO_TUNE
            .iter()
            .find(|(below, _)| v.drop_prob < *below)
            .map_or(AUTO_TUNE_TOP, |&(_, divisor)| divisor);
        v.drop_prob += p;
        if v.drop_prob < 0.0 {
            v.drop_prob = 0.0;
        } else if v.drop_prob > 1.0 {
            v.drop_prob = 1.0;
            update_prob = false;
        }
        if v.current_qdelay_ms == 0 && v.qdelay_old_ms == 0 && update_prob {
            v.drop_prob *= DECAY;
        }
        let t_update = u32::try_from(self.t_update_ms).expect("validated to at most one hour");
        v.burst_allowance_ms = v.burst_allowance_ms.saturating_sub(t_update);
        let half_ref = self.qdelay_ref_ms / 2;
        if v.drop_prob == 0.0
            && v.current_qdelay_ms < half_ref
            && v.qdelay_old_ms < half_ref
            && v.avg_dq_rate > 0
        {
            // Calm again: forget the rate and restore the allowance.
            v.dq_count = None;
            v.avg_dq_rate = 0;
            v.burst_allowance_ms = self.max_burst_ms;
        }
    }

    /// Mahimahi `drop_early`, with `queue_bytes` queued before the arrival.
    pub(super) fn drop_early<R: Rng + ?Sized>(&mut self, queue_bytes: u64, rng: &mut R) -> bool {
        let v = &self.vars;
        if v.burst_allowance_ms > 0 {
            return false;
        }
        if v.qdelay_old_ms < self.qdelay_ref_ms / 2 && v.drop_prob < SAFE_PROB {
            return false;
        }
        // Strictly less than two full packets (RFC 8033: at most two).
        if queue_bytes < 2 * MAX_PACKET_BYTES {
            return false;
        }
        uniform(rng) < v.drop_prob
    }

    /// Mahimahi `dequeue` after the packet left: dequeue-rate measurement, burst
    /// allowance, then the due updates. `queue_bytes` is the backlog left behind.
    pub(super) fn on_dequeue(&mut self, now: Time, charged_bytes: u32, queue_bytes: u64) {
        // Mahimahi keeps this time in 32 bits.
        let now_ms = now.as_ms() as u32;
        let v = &mut self.vars;
        if queue_bytes >= DQ_THRESHOLD && v.dq_count.is_none() {
            v.dq_tstamp_ms = now_ms;
            v.dq_count = Some(0);
        }
        if let Some(count) = v.dq_count {
            let count = count.saturating_add(charged_bytes);
            v.dq_count = Some(count);
            let dtime = now_ms.wrapping_sub(v.dq_tstamp_ms);
            if u64::from(count) > DQ_THRESHOLD && dtime > 0 {
                let sample = count / dtime;
                v.avg_dq_rate = match v.avg_dq_rate {
                    0 => sample,
                    avg => (avg - (avg >> RATE_EWMA_SHIFT)) + (sample >> RATE_EWMA_SHIFT),
                };
                if queue_bytes < DQ_THRESHOLD {
                    v.dq_count = None;
                } else {
                    v.dq_count = Some(0);
                    v.dq_tstamp_ms = now_ms;
                }
                v.burst_allowance_ms = v.burst_allowance_ms.saturating_sub(dtime);
            }
        }
        self.catch_up(now, queue_bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aqm::AqmVariant;
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    fn mahimahi() -> MahimahiPie {
        MahimahiPie::new(&PieConfig {
            variant: AqmVariant::Mahimahi,
            ..PieConfig::default()
        })
    }

    #[test]
    fn updates_fall_strictly_after_t_update_with_delays_in_ms() {
        let mut p = mahimahi();
        p.vars.avg_dq_rate = 1250; // bytes per ms (10 Mbit/s)
                                   // 30 ms (and 30.999 ms, still 30 on the ms clock) after the last update: not due.
        p.catch_up(Time::from_ms(30), 25_000);
        p.catch_up(Time::from_us(30_999), 25_000);
        assert_eq!((p.drop_prob(), p.last_update_ms), (0.0, 0));
        // 31 ms: one update. Delay 25000/1250 = 20 ms, old 0:
        // 0.125·(20 − 15) + 1.25·(20 − 0) = 25.625, p < 0.01: /128 → 0.2001953125.
        p.catch_up(Time::from_ms(31), 25_000);
        assert_eq!(p.drop_prob(), 0.2001953125);
        assert_eq!((p.last_update_ms, p.qdelay()), (30, Dur::from_ms(20)));
        // 61 ms: 0.125·5 + 1.25·0 = 0.625, p ≥ 0.1: /16 → +0.0390625.
        p.catch_up(Time::from_ms(61), 25_000);
        assert_eq!(p.drop_prob(), 0.2392578125);
        // From p = 0.05 the divisor is 32: +0.625/32.
        p.vars.drop_prob = 0.05;
        p.catch_up(Time::from_ms(91), 25_000);
        assert_eq!(p.drop_prob(), 0.06953125);
        // Two periods late: both replayed at once.
        p.catch_up(Time::from_ms(152), 25_000);
        assert_eq!(p.last_update_ms, 150);
    }

    #[test]
    fn decay_needs_an_empty_queue() {
        let mut p = mahimahi();
        p.vars.avg_dq_rate = 1250;
        // Empty: (0.5 + 0.125·(0 − 15)/16)·0.98 = 0.3828125·0.98 = 0.37515625.
        p.vars.drop_prob = 0.5;
        p.update(0);
        assert!(
            (p.drop_prob() - 0.37515625).abs() < 1e-15,
            "{}",
            p.drop_prob()
        );
        // 1000 bytes queued read as 0 ms (1000/1250): no decay.
        p.vars.drop_prob = 0.5;
        p.update(1000);
        assert_eq!(p.drop_prob(), 0.3828125);
    }

    #[test]
    fn burst_allowance_starts_empty_and_needs_a_known_rate() {
        let mut p = mahimahi();
        assert_eq!(
            p.burst_allowance(),
            Dur::ZERO,
            "RFC 8033 starts at MAX_BURST"
        );
        p.update(0);
        assert_eq!(p.burst_allowance(), Dur::ZERO, "no rate known yet");
        p.vars.avg_dq_rate = 1250;
        p.vars.dq_count = Some(5000);
        p.update(0);
        assert_eq!(p.burst_allowance(), Dur::from_ms(150));
        assert_eq!(
            (p.vars.avg_dq_rate, p.vars.dq_count),
            (0, None),
            "rate forgotten"
        );
        // Under load it shrinks by t_update per update ...
        p.vars.avg_dq_rate = 1250;
        p.update(25_000);
        assert_eq!(p.burst_allowance(), Dur::from_ms(120));
    }

    #[test]
    fn rate_measurement_counts_the_packet_at_its_start() {
        let mut p = mahimahi();
        p.vars.burst_allowance_ms = 100;
        // 1504-byte packets leave every 1.2 ms with 20+ packets behind them. The
        // measurement starts at the first dequeue (0 ms) and counts that packet too:
        // 11 packets = 16544 > 16384 bytes at 12.0 ms → 16544/12 = 1378 bytes/ms,
        // where the true rate is 1504/1.2 = 1253.
        for k in 0..=10u64 {
            p.on_dequeue(Time::from_us(1200 * k), 1504, 1504 * (30 - k));
        }
        assert_eq!(p.vars.avg_dq_rate, 1378);
        // ... and the burst allowance shrinks by the 12 ms measured.
        assert_eq!(p.vars.burst_allowance_ms, 88);
        assert_eq!((p.vars.dq_count, p.vars.dq_tstamp_ms), (Some(0), 12));
    }

    #[test]
    fn replayed_updates_see_the_backlog_left_by_the_dequeue() {
        let mut p = mahimahi();
        p.vars.avg_dq_rate = 1000;
        // 20000 bytes queued since 0 ms; the dequeue at 31 ms leaves 18496. The update
        // due after 30 ms runs after it and reads 18 ms, not 20.
        p.on_dequeue(Time::from_ms(31), 1504, 18_496);
        assert_eq!(p.qdelay(), Dur::from_ms(18));
    }

    #[test]
    fn drop_early_guards() {
        let mut p = mahimahi();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        p.vars.drop_prob = 1.0;
        p.vars.burst_allowance_ms = 1;
        assert!(!p.drop_early(1_000_000, &mut rng));
        p.vars.burst_allowance_ms = 0;
        // qdelay_old < 15/2 = 7 (integer) with p < 0.2: no drop.
        p.vars.drop_prob = 0.19;
        p.vars.qdelay_old_ms = 6;
        assert!(!p.drop_early(1_000_000, &mut rng));
        // Strictly less than 2·1504 bytes: no drop; exactly 3008 reaches the draw (the
        // RFC variant spares it).
        p.vars.drop_prob = 1.0;
        assert!(!p.drop_early(3007, &mut rng));
        assert!(p.drop_early(3008, &mut rng));
    }
}
