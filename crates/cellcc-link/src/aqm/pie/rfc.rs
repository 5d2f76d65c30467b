//! The `rfc` variant's drop-probability controller (RFC 8033 §4, §5.2, §5.4, §5.5).
//! See the parent module for the model, the replay of periodic updates and the
//! differences from the RFC.

use cellcc_units::{Dur, Time};
use rand_core::Rng;

use super::{
    diff_secs, uniform, PieConfig, PieDelayEstimator, ALPHA, BETA, DECAY, DQ_THRESHOLD, SAFE_PROB,
};
use crate::aqm::MAX_PACKET_BYTES;
use crate::queue::Queued;

/// RFC 8033 §4.2 auto-tuning: while drop_prob is below the bound, the PI step is divided
/// by the divisor (first matching row); from 0.1 up it is used as is.
const AUTO_TUNE: [(f64, f64); 6] = [
    (0.000_001, 2048.0),
    (0.000_01, 512.0),
    (0.000_1, 128.0),
    (0.001, 32.0),
    (0.01, 8.0),
    (0.1, 2.0),
];
/// RFC 8033 §5.5: once drop_prob ≥ 0.1, an increase is capped at 0.02 per update.
const CAP_FROM_PROB: f64 = 0.1;
/// RFC 8033 §5.5: the largest increase per update once drop_prob ≥ 0.1.
const CAP_STEP: f64 = 0.02;
/// RFC 8033 §5.4: no drop while the accumulated probability is below 0.85 ...
const DERAND_LOW: f64 = 0.85;
/// ... and a certain drop once it reaches 8.5.
const DERAND_HIGH: f64 = 8.5;
/// RFC 8033 §5.2: the average dequeue time is updated with weight DQ_THRESHOLD/2^16 =
/// 1/4 (the new sample counts 1 part in 4).
const DQ_WEIGHT_DIVISOR: u64 = 4;

/// The state a periodic update changes (compared to detect a fixed point).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Vars {
    /// RFC 8033 `PIE->drop_prob_`.
    drop_prob: f64,
    /// RFC 8033 `PIE->qdelay_old_`: the delay sample of the last update.
    qdelay_old: Dur,
    /// RFC 8033 `PIE->burst_allowance_`.
    burst_allowance: Dur,
}

/// A dequeue-rate measurement in progress (RFC 8033 §5.2).
#[derive(Clone, Copy, Debug)]
struct Measurement {
    start: Time,
    /// Bytes dequeued since `start`.
    dq_count: u64,
}

/// Where the delay sample comes from.
#[derive(Clone, Copy, Debug)]
enum Estimator {
    /// Sojourn time of the last dequeued packet, 0 once the queue is empty.
    Timestamp { last_sample: Dur },
    /// RFC 8033 §5.2: average time to dequeue DQ_THRESHOLD bytes (`None` until the
    /// first measurement ends).
    DequeueRate {
        measurement: Option<Measurement>,
        avg_dq_time: Option<Dur>,
    },
}

impl Estimator {
    /// `current_qdelay` for `queue_bytes` queued (RFC 8033 §4.3, §5.2).
    fn qdelay(&self, queue_bytes: u64) -> Dur {
        match *self {
            Estimator::Timestamp { last_sample } => last_sample,
            Estimator::DequeueRate { avg_dq_time, .. } => match avg_dq_time {
                // RFC 8033 §5.2: current_qdelay = byte_length · avg_dq_time / DQ_THRESHOLD.
                Some(avg) => {
                    let ns = u128::from(queue_bytes) * u128::from(avg.as_ns())
                        / u128::from(DQ_THRESHOLD);
                    Dur::from_ns(u64::try_from(ns).unwrap_or(u64::MAX))
                }
                None => Dur::ZERO,
            },
        }
    }
}

/// RFC 8033 PIE's controller: drop probability, burst allowance, delay estimate.
#[derive(Clone, Debug)]
pub(super) struct RfcPie {
    qdelay_ref: Dur,
    max_burst: Dur,
    t_update: Dur,
    derandomize: bool,
    cap_drop_adjustment: bool,
    vars: Vars,
    /// RFC 8033 §5.4 `PIE->accu_prob_`.
    accu_prob: f64,
    /// When the next periodic update is due.
    next_update: Time,
    estimator: Estimator,
}

impl RfcPie {
    pub(super) fn new(config: &PieConfig) -> Self {
        let max_burst = Dur::from_ms(config.max_burst_ms);
        let t_update = Dur::from_ms(config.t_update_ms());
        let estimator = match config.delay_estimator.unwrap_or_default() {
            PieDelayEstimator::Timestamp => Estimator::Timestamp {
                last_sample: Dur::ZERO,
            },
            PieDelayEstimator::DequeueRate => Estimator::DequeueRate {
                measurement: None,
                avg_dq_time: None,
            },
        };
        RfcPie {
            qdelay_ref: Dur::from_ms(config.qdelay_ref_ms),
            max_burst,
            t_update,
            derandomize: config.derandomize,
            cap_drop_adjustment: config.cap_drop_adjustment,
            vars: Vars {
                drop_prob: 0.0,
                qdelay_old: Dur::ZERO,
                // RFC 8033 §4.4: initialised to MAX_BURST.
                burst_allowance: max_burst,
            },
            accu_prob: 0.0,
            next_update: Time::ZERO + t_update,
            estimator,
        }
    }

    pub(super) fn drop_prob(&self) -> f64 {
        self.vars.drop_prob
    }

    pub(super) fn burst_allowance(&self) -> Dur {
        self.vars.burst_allowance
    }

    pub(super) fn qdelay(&self) -> Dur {
        self.vars.qdelay_old
    }

    /// Runs, in order, every periodic update due at or before `now`. `queue_bytes` is
    /// the backlog since the previous event, unchanged until `now`.
    pub(super) fn catch_up(&mut self, now: Time, queue_bytes: u64) {
        while self.next_update <= now {
            let before = self.vars;
            self.update(queue_bytes);
            self.next_update += self.t_update;
            if self.vars == before && self.next_update <= now {
                // A fixed point: the remaining updates read the same inputs and state,
                // so they change nothing either. Skip them.
                let remaining = (now - self.next_update).as_ns() / self.t_update.as_ns() + 1;
                self.next_update += self.t_update * remaining;
            }
        }
    }

    /// One periodic update (RFC 8033 §4.2, §4.4, §5.5).
    fn update(&mut self, queue_bytes: u64) {
        let current = self.estimator.qdelay(queue_bytes);
        let v = &mut self.vars;
        // RFC 8033 §4.2: p = α·(current_qdelay − QDELAY_REF) + β·(current − qdelay_old).
        let mut p =
            ALPHA * diff_secs(current, self.qdelay_ref) + BETA * diff_secs(current, v.qdelay_old);
        // RFC 8033 §4.2: auto-tune the step to the current drop probability.
        if let Some(&(_, divisor)) = AUTO_TUNE.iter().find(|(below, _)| v.drop_prob < *below) {
            p /= divisor;
        }
        // RFC 8033 §5.5: cap the increase once the probability is already high.
        if self.cap_drop_adjustment && v.drop_prob >= CAP_FROM_PROB && p > CAP_STEP {
            p = CAP_STEP;
        }
        v.drop_prob += p;
        // RFC 8033 §4.2: decay exponentially once the queue has been empty.
        if current.is_zero() && v.qdelay_old.is_zero() {
            v.drop_prob *= DECAY;
        }
        // RFC 8033 §4.2: bound the probability.
        v.drop_prob = v.drop_prob.clamp(0.0, 1.0);
        // RFC 8033 §4.4: the allowance shrinks by T_UPDATE per update, floored at 0 ...
        v.burst_allowance = v.burst_allowance.saturating_sub(self.t_update);
        // ... and is restored once congestion is gone.
        let half_ref = self.qdelay_ref / 2;
        if v.drop_prob == 0.0 && current < half_ref && v.qdelay_old < half_ref {
            v.burst_allowance = self.max_burst;
        }
        // RFC 8033 §4.2: store the current latency value.
        v.qdelay_old = current;
    }

    /// Whether to drop an arrival at random (RFC 8033 §4.1, §4.4, §5.4), with
    /// `queue_bytes` queued before it. Draws from `rng` only at the random stage.
    pub(super) fn drop_early<R: Rng + ?Sized>(&mut self, queue_bytes: u64, rng: &mut R) -> bool {
        let v = self.vars;
        // RFC 8033 §4.4: no random drop while burst allowance remains.
        if !v.burst_allowance.is_zero() {
            return false;
        }
        // RFC 8033 §4.1: stay work-conserving at low delay and probability, or with
        // about two packets or less queued.
        if (v.qdelay_old < self.qdelay_ref / 2 && v.drop_prob < SAFE_PROB)
            || queue_bytes <= 2 * MAX_PACKET_BYTES
        {
            return false;
        }
        if self.derandomize {
            // RFC 8033 §5.4: accumulate the probability between drops.
            if v.drop_prob == 0.0 {
                self.accu_prob = 0.0;
            }
            self.accu_prob += v.drop_prob;
            if self.accu_prob < DERAND_LOW {
                return false;
            }
            if self.accu_prob >= DERAND_HIGH {
                self.accu_prob = 0.0;
                return true;
            }
        }
        let drop = uniform(rng) < v.drop_prob;
        if drop {
            self.accu_prob = 0.0;
        }
        drop
    }

    /// RFC 8033 Appendix B: any drop restarts the de-randomisation accumulator.
    pub(super) fn on_tail_drop(&mut self) {
        self.accu_prob = 0.0;
    }

    /// Feeds the delay estimator with a packet dequeued at `now`, `queue_bytes` being
    /// left behind it.
    pub(super) fn on_dequeue<T>(&mut self, now: Time, packet: &Queued<T>, queue_bytes: u64) {
        match &mut self.estimator {
            Estimator::Timestamp { last_sample } => {
                *last_sample = if queue_bytes == 0 {
                    Dur::ZERO
                } else {
                    now.saturating_since(packet.enqueued_at)
                };
            }
            Estimator::DequeueRate {
                measurement,
                avg_dq_time,
            } => {
                // RFC 8033 §5.2: count the bytes of a measurement in progress ...
                if let Some(m) = measurement {
                    m.dq_count += u64::from(packet.charged_bytes);
                    if m.dq_count >= DQ_THRESHOLD {
                        let dq_time = now.saturating_since(m.start);
                        // RFC 8033 §5.2: avg = dq_time·w + avg·(1 − w), w = 1/4.
                        // An average of 0 counts as none, as the RFC's `avg_dq_time_ == 0`.
                        *avg_dq_time = Some(match avg_dq_time.filter(|a| !a.is_zero()) {
                            None => dq_time,
                            Some(avg) => {
                                (dq_time + avg * (DQ_WEIGHT_DIVISOR - 1)) / DQ_WEIGHT_DIVISOR
                            }
                        });
                        *measurement = None;
                    }
                }
                // ... and start one when enough data is queued.
                if measurement.is_none() && queue_bytes >= DQ_THRESHOLD {
                    *measurement = Some(Measurement {
                        start: now,
                        dq_count: 0,
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aqm::AqmVariant;
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    const MS: Dur = Dur::from_ms(1);

    fn pie(config: PieConfig) -> RfcPie {
        assert_eq!(config.variant, AqmVariant::Rfc);
        RfcPie::new(&config)
    }

    fn set(p: &mut RfcPie, drop_prob: f64, qdelay_old_ms: u64, sample_ms: u64) {
        p.vars = Vars {
            drop_prob,
            qdelay_old: MS * qdelay_old_ms,
            burst_allowance: Dur::ZERO,
        };
        p.estimator = Estimator::Timestamp {
            last_sample: MS * sample_ms,
        };
    }

    fn assert_close(got: f64, want: f64) {
        assert!((got - want).abs() <= 1e-12 * want.abs(), "{got} vs {want}");
    }

    #[test]
    fn pi_step_with_auto_tuning_worked_numbers() {
        let mut p = pie(PieConfig::default());
        set(&mut p, 0.0, 0, 20);
        p.update(0);
        // α·(0.020 − 0.015) + β·(0.020 − 0) = 0.000625 + 0.025 = 0.025625, and
        // drop_prob < 1e-6: /2048 → 1.2512207e-5.
        assert_close(p.vars.drop_prob, 0.025625 / 2048.0);
        assert_eq!(p.vars.qdelay_old, MS * 20);
        p.update(0);
        // α·0.005 + β·0 = 0.000625, and 1.25e-5 ∈ [1e-5, 1e-4): /128 → +4.8828125e-6.
        assert_close(p.vars.drop_prob, 0.025625 / 2048.0 + 0.000625 / 128.0);
        // Each row of the ladder: α·0.010 + β·0.010 = 0.01375 divided by the divisor.
        for (prob, divisor) in [
            (5e-7, 2048.0),
            (5e-6, 512.0),
            (5e-5, 128.0),
            (5e-4, 32.0),
            (5e-3, 8.0),
            (0.05, 2.0),
            (0.5, 1.0),
        ] {
            set(&mut p, prob, 15, 25);
            p.update(0);
            assert_close(p.vars.drop_prob, prob + 0.01375 / divisor);
        }
    }

    #[test]
    fn decay_bounds_and_cap_worked_numbers() {
        let mut p = pie(PieConfig::default());
        // Both samples 0: (0.5 − α·0.015)·0.98 = 0.498125·0.98 = 0.4881625.
        set(&mut p, 0.5, 0, 0);
        p.update(0);
        assert_close(p.vars.drop_prob, 0.4881625);
        // 1e-7 − 0.001875/2048 < 0: bounded at exactly 0.
        set(&mut p, 1e-7, 0, 0);
        p.update(0);
        assert_eq!(p.vars.drop_prob, 0.0);
        // 0.99 + α·0.485 + β·0.5 > 1: bounded at 1.
        set(&mut p, 0.99, 0, 500);
        p.update(0);
        assert_eq!(p.vars.drop_prob, 1.0);
        // §5.5: from 0.2, α·0.045 + β·0.045 = 0.061875 is capped at 0.02 when enabled.
        let mut capped = pie(PieConfig {
            cap_drop_adjustment: true,
            ..PieConfig::default()
        });
        set(&mut capped, 0.2, 15, 60);
        capped.update(0);
        assert_close(capped.vars.drop_prob, 0.22);
        set(&mut p, 0.2, 15, 60);
        p.update(0);
        assert_close(p.vars.drop_prob, 0.261875);
        // Below 0.1 the cap does not apply: 0.05 + 0.061875/2.
        set(&mut capped, 0.05, 15, 60);
        capped.update(0);
        assert_close(capped.vars.drop_prob, 0.0809375);
    }

    #[test]
    fn burst_allowance_drains_per_update_and_returns_when_calm() {
        let mut p = pie(PieConfig::default());
        assert_eq!(p.burst_allowance(), MS * 150);
        p.estimator = Estimator::Timestamp {
            last_sample: MS * 20,
        };
        // Updates at 15, 30 and 45 ms, each −15 ms; none at 14.999 ms.
        p.catch_up(Time::from_us(14_999), 0);
        assert_eq!(p.burst_allowance(), MS * 150);
        p.catch_up(Time::from_ms(15), 0);
        assert_eq!(p.burst_allowance(), MS * 135);
        p.catch_up(Time::from_ms(45), 0);
        assert_eq!(p.burst_allowance(), MS * 105);
        p.catch_up(Time::from_secs(1), 0);
        assert_eq!(p.burst_allowance(), Dur::ZERO);
        // Calm (p = 0, both samples < 7.5 ms): back to MAX_BURST.
        set(&mut p, 0.0, 5, 5);
        p.update(0);
        assert_eq!(p.burst_allowance(), MS * 150);
        // Not while p > 0: 0.01 − α·0.01/2 = 0.009375 stays positive.
        set(&mut p, 0.01, 5, 5);
        p.update(0);
        assert!(p.drop_prob() > 0.0);
        assert_eq!(p.burst_allowance(), Dur::ZERO);
    }

    #[test]
    fn drop_early_safeguards_draw_nothing() {
        let mut p = pie(PieConfig::default());
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let untouched = rng.clone();
        // Burst allowance left: never drop.
        p.vars.drop_prob = 1.0;
        assert!(!p.drop_early(1_000_000, &mut rng));
        // Low delay and probability.
        set(&mut p, 0.19, 7, 7);
        assert!(!p.drop_early(1_000_000, &mut rng));
        // At most 2·1504 bytes queued.
        set(&mut p, 1.0, 20, 20);
        assert!(!p.drop_early(3008, &mut rng));
        assert_eq!(rng, untouched, "no draw so far");
        // Past every safeguard, p = 1 always drops, with one draw.
        assert!(p.drop_early(3009, &mut rng));
        assert_ne!(rng, untouched);
        // qdelay_old ≥ 7.5 ms or p ≥ 0.2 reach the random stage.
        set(&mut p, 0.19, 8, 8);
        let before = rng.clone();
        p.drop_early(1_000_000, &mut rng);
        assert_ne!(rng, before);
    }

    #[test]
    fn derandomisation_accumulates_before_drawing() {
        let mut p = pie(PieConfig {
            derandomize: true,
            ..PieConfig::default()
        });
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        // p = 0.001: no draw until the sum reaches 0.85 (850 arrivals), a certain drop
        // once it reaches 8.5 (8500 arrivals).
        set(&mut p, 0.001, 20, 20);
        let mut arrivals = 0;
        let before = rng.clone();
        loop {
            arrivals += 1;
            let draws_so_far = rng != before;
            let dropped = p.drop_early(100_000, &mut rng);
            if arrivals < 850 {
                assert!(!dropped && rng == before, "arrival {arrivals}");
            }
            if dropped {
                assert!(draws_so_far || arrivals >= 850);
                break;
            }
            assert!(arrivals <= 8500);
        }
        assert!((850..=8500).contains(&arrivals), "{arrivals}");
        assert_eq!(p.accu_prob, 0.0, "a drop restarts the sum");
    }

    #[test]
    fn dequeue_rate_estimator_worked_numbers() {
        let mut p = pie(PieConfig {
            delay_estimator: Some(PieDelayEstimator::DequeueRate),
            ..PieConfig::default()
        });
        let packet = |t: Time| Queued {
            item: (),
            ip_len: 1500,
            charged_bytes: 1500,
            enqueued_at: t,
        };
        // 30000 bytes queued, one 1500-byte packet dequeued every 1.2 ms: the
        // measurement starts at the first dequeue (28500 left ≥ 16384) and ends at the
        // 11th after it (16500 ≥ 16384 bytes counted), 13.2 ms later.
        for k in 0..=11u64 {
            p.on_dequeue(
                Time::from_us(1200 * k),
                &packet(Time::ZERO),
                30_000 - 1500 * (k + 1),
            );
        }
        let Estimator::DequeueRate { avg_dq_time, .. } = p.estimator else {
            unreachable!()
        };
        assert_eq!(avg_dq_time, Some(Dur::from_us(13_200)));
        // 12000 bytes × 13.2 ms / 16384 bytes = 9.66796875 ms.
        assert_eq!(p.estimator.qdelay(12_000), Dur::from_ns(9_667_968));
        // A second measurement at half the rate: 26.4 ms → (26.4 + 3·13.2)/4 = 16.5 ms.
        for k in 0..=11u64 {
            let t = Time::from_secs(1) + Dur::from_us(2400 * k);
            p.on_dequeue(t, &packet(Time::ZERO), 30_000 - 1500 * (k + 1));
        }
        let Estimator::DequeueRate { avg_dq_time, .. } = p.estimator else {
            unreachable!()
        };
        assert_eq!(avg_dq_time, Some(Dur::from_us(16_500)));
    }

    #[test]
    fn skipping_a_fixed_point_equals_running_every_update() {
        let mut lazy = pie(PieConfig::default());
        set(&mut lazy, 0.3, 0, 0);
        let mut eager = lazy.clone();
        lazy.catch_up(Time::from_secs(3600), 0);
        let mut t = Time::ZERO;
        while t <= Time::from_secs(3600) {
            eager.catch_up(t, 0);
            t += MS * 15;
        }
        assert_eq!(lazy.vars, eager.vars);
        assert_eq!(lazy.next_update, eager.next_update);
        assert_eq!(lazy.next_update, Time::from_secs(3600) + MS * 15);
        assert_eq!((lazy.drop_prob(), lazy.burst_allowance()), (0.0, MS * 150));
    }
}
