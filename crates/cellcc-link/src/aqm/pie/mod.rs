//! PIE, "Proportional Integral Controller Enhanced (PIE): A Lightweight Control Scheme
//! to Address the Bufferbloat Problem", RFC 8033 (February 2017), and the variant
//! Mahimahi runs (ravinet/mahimahi `src/packet/pie_packet_queue.cc`, "based on
//! draft-ietf-aqm-pie-09 and the PIE implementation in Linux 4.4").
//!
//! Model. PIE drops arriving packets at random with probability `drop_prob`. Every
//! `t_update` a PI controller moves `drop_prob` by
//! `α·(qdelay − qdelay_ref) + β·(qdelay − qdelay_old)` (RFC 8033 §4.2), scaled down
//! while `drop_prob` is small (auto-tuning), and lets it decay ×0.98 per update once the
//! queue is empty. `qdelay` is the queueing delay, estimated from timestamps or from the
//! dequeue rate (§4.3, §5.2). A burst allowance (§4.4) suspends random drops for
//! `max_burst` after a calm period; random drops are also skipped while the delay is
//! small and the probability low, or the queue holds about two packets or less (§4.1).
//!
//! ```text
//!   +-------------------------------+  each update: allowance −= t_update   +----------------------+
//!   | protected: allowance > 0,     | ────────────────────────────────────► | allowance = 0:       |
//!   | every arrival is accepted     |                                        | random early drops   |
//!   +-------------------------------+ ◄──────────────────────────────────── +----------------------+
//!                 update with drop_prob = 0 and both delay samples < qdelay_ref/2:
//!                 allowance := max_burst
//! ```
//!
//! Periodic updates in a sans-I/O queue. The RFC runs the update from a timer every
//! `t_update`. This queue has no timer: on every `enqueue` and `dequeue` it first
//! replays, in order, every update that fell due since the previous call. Between two
//! calls nothing the update reads changes (the queued bytes, the latest delay sample,
//! the dequeue-rate estimate), so each replayed update sees exactly the inputs a timer
//! would have given it, and the result equals the timer-driven one. In the `rfc`
//! variant updates fall at k·t_update (k ≥ 1) from the queue's creation at time 0, and
//! an update due at the very time of an event runs before the event. When a replayed
//! update leaves the state unchanged, the remaining ones would too, and are skipped in
//! O(1) (a long idle period costs nothing).
//!
//! Differences of the `rfc` variant from RFC 8033:
//! 1. The queueing delay comes by default from timestamps: the sojourn time of the last
//!    packet dequeued, or 0 when that dequeue emptied the queue (as Linux's `sch_pie`
//!    does without `dq_rate_estimator`). `delay_estimator = "dequeue_rate"` selects the
//!    §5.2 estimator instead.
//! 2. The burst-allowance reset (§4.4) is checked at each periodic update, where both
//!    delay samples are known, after the allowance is decremented.
//! 3. De-randomisation (§5.4) and the cap on the drop-probability increase (§5.5) are
//!    options, off by default; PIE is always active (§5.3 is not implemented); no ECN.
//! 4. MEAN_PKTSIZE is 1504 charged bytes (one Mahimahi opportunity).
//! 5. The random draw is a ChaCha8 stream seeded per queue, one `u64` per decision that
//!    reaches the random stage (53 bits compared with `drop_prob`).
//!
//! The `mahimahi` variant (file `mahimahi.rs`) reproduces Mahimahi's differences:
//! 1. Clock in whole ms; `t_update` = 30 ms; an update is due when `now − last_update >
//!    t_update` (strictly), so the k-th update runs at the first event at or after
//!    30k + 1 ms; updates are replayed at the start of `enqueue` and at the end of
//!    `dequeue`, i.e. with the queue as it is after the dequeued packet left.
//! 2. Delay = queued bytes / average dequeue rate, in whole ms (integer division); the
//!    rate, in bytes/ms, is measured over > 16384 bytes (`dq_threshold`) and averaged
//!    with weight 1/8; 0 while no rate is known.
//! 3. The PI law takes delays in **milliseconds** (α·Δms + β·Δms), then divides by 128
//!    below p = 0.01, by 32 below 0.1, else by 16: per update, 62.5× the RFC's gain
//!    for p ≥ 0.001 (more below). Under a steady overload p swings between 0 and 1
//!    instead of settling (measured in `tests/aqm.rs`).
//! 4. Decay ×0.98 only when both samples are 0, the queue is empty and p was not capped
//!    at 1 in that update.
//! 5. The burst allowance starts at 0 and is set to `max_burst` only by an update that
//!    sees p = 0, both samples < qdelay_ref/2 (integer ms) and a known rate, which also
//!    forgets the rate; under load it shrinks both by each rate-measurement interval and
//!    by t_update per update.
//! 6. Random drops are skipped if the queue holds strictly less than 2·1504 bytes.
//! 7. The generator is a seeded ChaCha8 stream (Mahimahi seeds from `random_device`).

mod mahimahi;
mod rfc;

use std::collections::VecDeque;
use std::fmt;

use cellcc_units::{Dur, Time};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

use super::{aqm_drop, check_limit, check_ms, fmt_limits, AqmConfigError, AqmVariant};
use crate::queue::{DroppedPacket, Fifo, Limits, Overflow, PacketQueue, Queued};
use mahimahi::MahimahiPie;
use rfc::RfcPie;

/// Name used in errors and in the Mahimahi spelling.
const NAME: &str = "pie";
/// RFC 8033 §4.2: QDELAY_REF SHOULD be 15 ms.
const DEFAULT_QDELAY_REF_MS: u64 = 15;
/// RFC 8033 §4.4: MAX_BURST SHOULD be 150 ms.
const DEFAULT_MAX_BURST_MS: u64 = 150;
/// RFC 8033 §4.2: T_UPDATE defaults to 15 ms.
const RFC_T_UPDATE_MS: u64 = 15;
/// Mahimahi's hard-coded `t_update_` (ms).
const MAHIMAHI_T_UPDATE_MS: u64 = 30;
/// RFC 8033 §4.2: α = 0.125 (per second in the RFC; per ms in Mahimahi).
const ALPHA: f64 = 0.125;
/// RFC 8033 §4.2: β = 1.25 (per second in the RFC; per ms in Mahimahi).
const BETA: f64 = 1.25;
/// RFC 8033 §4.2: exponential decay of drop_prob per update once the queue is empty.
const DECAY: f64 = 0.98;
/// RFC 8033 §4.1: random drops are skipped below this probability while the delay is
/// under qdelay_ref/2.
const SAFE_PROB: f64 = 0.2;
/// RFC 8033 §5.2 DQ_THRESHOLD, also Mahimahi's `dq_threshold_`: 2^14 bytes.
const DQ_THRESHOLD: u64 = 1 << 14;

/// How the `rfc` variant estimates the queueing delay.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum PieDelayEstimator {
    /// Sojourn time of the last dequeued packet (0 once the queue is empty).
    #[default]
    Timestamp,
    /// Queued bytes × average time to dequeue DQ_THRESHOLD bytes / DQ_THRESHOLD
    /// (RFC 8033 §5.2, Little's law).
    DequeueRate,
}

/// PIE's parameters. Missing keys take the RFC 8033 defaults; unknown keys are errors.
/// Scenario spelling: `queue = { kind = "pie", qdelay_ref_ms = 15, max_burst_ms = 150,
/// variant = "mahimahi", packets = 1000 }`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PieConfig {
    /// `rfc` (default) or `mahimahi`.
    pub variant: AqmVariant,
    /// QDELAY_REF, the target queueing delay, ms. Default 15 (RFC 8033 §4.2).
    pub qdelay_ref_ms: u64,
    /// MAX_BURST, the burst allowance, ms. Default 150 (RFC 8033 §4.4). 0 disables burst
    /// protection (`rfc` only; Mahimahi refuses 0).
    pub max_burst_ms: u64,
    /// T_UPDATE, the update period, ms. Default 15 (`rfc`, RFC 8033 §4.2) or 30
    /// (`mahimahi`, hard-coded there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub t_update_ms: Option<u64>,
    /// `rfc` only: `timestamp` (default) or `dequeue_rate`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay_estimator: Option<PieDelayEstimator>,
    /// `rfc` only: RFC 8033 §5.4 de-randomisation. Default off.
    pub derandomize: bool,
    /// `rfc` only: RFC 8033 §5.5, cap each increase at 0.02 once p ≥ 0.1. Default off.
    pub cap_drop_adjustment: bool,
    /// Tail-drop limit in packets; none by default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packets: Option<u64>,
    /// Tail-drop limit in charged bytes; none by default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
}

impl Default for PieConfig {
    fn default() -> Self {
        PieConfig {
            variant: AqmVariant::Rfc,
            qdelay_ref_ms: DEFAULT_QDELAY_REF_MS,
            max_burst_ms: DEFAULT_MAX_BURST_MS,
            t_update_ms: None,
            delay_estimator: None,
            derandomize: false,
            cap_drop_adjustment: false,
            packets: None,
            bytes: None,
        }
    }
}

impl PieConfig {
    /// The update period in force: the configured one, or the variant's default.
    pub fn t_update_ms(&self) -> u64 {
        self.t_update_ms.unwrap_or(match self.variant {
            AqmVariant::Rfc => RFC_T_UPDATE_MS,
            AqmVariant::Mahimahi => MAHIMAHI_T_UPDATE_MS,
        })
    }

    /// Checks every parameter; the error names the first bad one.
    pub fn validate(&self) -> Result<(), AqmConfigError> {
        let mahimahi = self.variant == AqmVariant::Mahimahi;
        check_ms(NAME, "qdelay_ref_ms", self.qdelay_ref_ms, false)?;
        if mahimahi && self.max_burst_ms == 0 {
            return Err(AqmConfigError::new(
                NAME,
                "max_burst_ms",
                "must be > 0 in the mahimahi variant (Mahimahi refuses 0)",
            ));
        }
        check_ms(NAME, "max_burst_ms", self.max_burst_ms, true)?;
        check_ms(NAME, "t_update_ms", self.t_update_ms(), false)?;
        if mahimahi {
            let rfc_only = [
                ("delay_estimator", self.delay_estimator.is_some()),
                ("derandomize", self.derandomize),
                ("cap_drop_adjustment", self.cap_drop_adjustment),
            ];
            if let Some((parameter, _)) = rfc_only.into_iter().find(|(_, given)| *given) {
                return Err(AqmConfigError::new(
                    NAME,
                    parameter,
                    "is an rfc-variant option; the mahimahi variant reproduces Mahimahi, \
                     which has no such option (remove it, or use variant = \"rfc\")",
                ));
            }
        }
        check_limit(NAME, "packets", self.packets)?;
        check_limit(NAME, "bytes", self.bytes)
    }
}

impl fmt::Display for PieConfig {
    /// Mahimahi's `--*-queue-args` spelling, e.g. `pie qdelay_ref=15, max_burst=150,
    /// packets=1000`; settings Mahimahi does not have follow (`variant=rfc`, a
    /// non-default `t_update`, and the `rfc` options that are on).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{NAME} qdelay_ref={}, max_burst={}",
            self.qdelay_ref_ms, self.max_burst_ms
        )?;
        fmt_limits(f, self.packets, self.bytes)?;
        if self.variant == AqmVariant::Rfc {
            f.write_str(", variant=rfc")?;
        }
        if let Some(t) = self.t_update_ms.filter(|&t| {
            t != PieConfig {
                t_update_ms: None,
                ..*self
            }
            .t_update_ms()
        }) {
            write!(f, ", t_update={t}")?;
        }
        if self.delay_estimator == Some(PieDelayEstimator::DequeueRate) {
            f.write_str(", delay_estimator=dequeue_rate")?;
        }
        if self.derandomize {
            f.write_str(", derandomize=true")?;
        }
        if self.cap_drop_adjustment {
            f.write_str(", cap_drop_adjustment=true")?;
        }
        Ok(())
    }
}

/// The drop-probability controller of one variant.
#[derive(Clone, Debug)]
enum Control {
    Rfc(RfcPie),
    Mahimahi(MahimahiPie),
}

/// A PIE queue (see the module docs). Built from a validated [`PieConfig`] and a seed
/// for its random drops.
#[derive(Clone, Debug)]
pub struct Pie<T> {
    fifo: Fifo<T>,
    control: Control,
    rng: ChaCha8Rng,
}

impl<T> Pie<T> {
    /// An empty queue with `config` whose random drops are seeded with `seed`, or the error
    /// [`PieConfig::validate`] finds.
    pub fn new(config: PieConfig, seed: u64) -> Result<Self, AqmConfigError> {
        config.validate()?;
        let limits = Limits {
            packets: config.packets,
            bytes: config.bytes,
        };
        let control = match config.variant {
            AqmVariant::Rfc => Control::Rfc(RfcPie::new(&config)),
            AqmVariant::Mahimahi => Control::Mahimahi(MahimahiPie::new(&config)),
        };
        Ok(Pie {
            fifo: Fifo::new(limits, Overflow::Reject),
            control,
            rng: ChaCha8Rng::seed_from_u64(seed),
        })
    }

    /// The current drop probability, in [0, 1].
    pub fn drop_prob(&self) -> f64 {
        match &self.control {
            Control::Rfc(c) => c.drop_prob(),
            Control::Mahimahi(c) => c.drop_prob(),
        }
    }

    /// The remaining burst allowance.
    pub fn burst_allowance(&self) -> Dur {
        match &self.control {
            Control::Rfc(c) => c.burst_allowance(),
            Control::Mahimahi(c) => c.burst_allowance(),
        }
    }

    /// The delay sample of the last periodic update (`qdelay_old` once stored).
    pub fn qdelay(&self) -> Dur {
        match &self.control {
            Control::Rfc(c) => c.qdelay(),
            Control::Mahimahi(c) => c.qdelay(),
        }
    }

    /// Runs the periodic updates due at `now` without an arrival or a departure, as a
    /// timer would. Never needed for correctness (every call replays them); it lets
    /// tests compare lazy replay with a timer, and observers read a current state.
    pub fn tick(&mut self, now: Time) {
        let bytes = self.fifo.len_bytes();
        match &mut self.control {
            Control::Rfc(c) => c.catch_up(now, bytes),
            Control::Mahimahi(c) => c.catch_up(now, bytes),
        }
    }
}

impl<T> PacketQueue<T> for Pie<T> {
    /// Replays due updates, applies the tail-drop limits, then the random early drop
    /// (RFC 8033 §4.1, Appendix B `enque`). An early-dropped arrival is accepted and
    /// reported at once in `drops` with [`crate::DropReason::Aqm`].
    fn enqueue(
        &mut self,
        now: Time,
        packet: Queued<T>,
        drops: &mut VecDeque<DroppedPacket<T>>,
    ) -> Result<(), Queued<T>> {
        let bytes = self.fifo.len_bytes();
        let early_drop = match &mut self.control {
            Control::Rfc(c) => {
                c.catch_up(now, bytes);
                if !self.fifo.fits(packet.charged_bytes) {
                    c.on_tail_drop();
                    return Err(packet);
                }
                c.drop_early(bytes, &mut self.rng)
            }
            Control::Mahimahi(c) => {
                c.catch_up(now, bytes);
                if !self.fifo.fits(packet.charged_bytes) {
                    return Err(packet);
                }
                c.drop_early(bytes, &mut self.rng)
            }
        };
        if early_drop {
            drops.push_back(aqm_drop(packet, now));
            return Ok(());
        }
        self.fifo.enqueue(now, packet, drops)
    }

    /// Takes the head and feeds the delay estimators: replays due updates first
    /// (`rfc`) or after (`mahimahi`, as Mahimahi does).
    fn dequeue(&mut self, now: Time, _drops: &mut VecDeque<DroppedPacket<T>>) -> Option<Queued<T>> {
        if let Control::Rfc(c) = &mut self.control {
            c.catch_up(now, self.fifo.len_bytes());
        }
        let packet = self.fifo.pop_front()?;
        let left = self.fifo.len_bytes();
        match &mut self.control {
            Control::Rfc(c) => c.on_dequeue(now, &packet, left),
            Control::Mahimahi(c) => c.on_dequeue(now, packet.charged_bytes, left),
        }
        Some(packet)
    }

    fn len_packets(&self) -> usize {
        self.fifo.len_packets()
    }

    fn len_bytes(&self) -> u64 {
        self.fifo.len_bytes()
    }
}

/// A uniform draw in [0, 1) from the top 53 bits of one `u64`.
fn uniform<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    /// 2^-53: the spacing of 53-bit fractions.
    const SCALE: f64 = 1.0 / (1u64 << 53) as f64;
    (rng.next_u64() >> 11) as f64 * SCALE
}

/// `x − y` in seconds, signed: a temporary of the PI law, never state.
fn diff_secs(x: Dur, y: Dur) -> f64 {
    (x.as_ns() as f64 - y.as_ns() as f64) / 1e9
}
