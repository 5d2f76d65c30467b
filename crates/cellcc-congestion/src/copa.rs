//! Copa: delay-based congestion control towards a target rate of 1/(δ·d_q).
//!
//! Sources: V. Arun, H. Balakrishnan, "Copa: Practical Delay-Based Congestion Control
//! for the Internet", USENIX NSDI 2018 (Renton, 9–11 April 2018), §2 (the target rate,
//! the standing RTT, the velocity), §2.1 (slow start), §2.2 (competitive mode). Reference
//! code: `venkatarun95/genericCC` (`markoviancc.cc`, `rtt-window.cc`), a user-space UDP
//! sender; Pantheon runs it as `do_ss:auto:0.5`. Notes in the algorithm specification,
//! §5.1. Nothing of the reference code is reproduced here.
//!
//! # Model
//!
//! Copa aims at the sending rate λ_t = 1/(δ·d_q) packets per second, where the queueing
//! delay d_q = RTT_standing − RTT_min, RTT_standing is the smallest RTT of the last
//! srtt/2 (the queue that does not drain within half an RTT) and RTT_min the smallest of
//! the last 10 s. Its current rate is λ = cwnd/RTT_standing. On every ACK cwnd moves by
//! v/(δ·cwnd) towards the target: up if λ ≤ λ_t, down otherwise. If one flow is alone on
//! a link of μ packets/s, λ = μ at equilibrium, so d_q = 1/(δ·μ): the queue holds 1/δ
//! packets (2 at δ = 0.5). The velocity v doubles every RTT once cwnd has moved in the same
//! direction for 3 RTTs and returns to 1 when the direction changes, so Copa converges
//! quickly from far away. Packets are paced at 2·cwnd/RTT_standing.
//!
//! Competitive mode: if the queue was not nearly empty (d_q below a tenth of the largest
//! queueing delay of the last 4 RTTs) at least once in 5 RTTs, another buffer-filling
//! flow is present and Copa adapts 1/δ by AIMD (+1 per RTT, halved on loss) instead of
//! keeping δ = 0.5.
//!
//! # States
//!
//! ```text
//!  init, RTO             lambda > lambda_t
//!   |   +------------+  (never returns)  +---------+  queue not nearly empty  +-------------+
//!   +-->| SLOW_START |------------------>| DEFAULT |------------------------->| COMPETITIVE |
//!       | cwnd += 1  |                   | delta   |<-------------------------| 1/delta AIMD|
//!       | per ACK    |                   |  = 0.5  |  nearly empty within     +-------------+
//!       +------------+                   +---------+  the last 5 RTTs
//! ```
//!
//! # Differences from the paper
//!
//! 1. **TCP port.** Copa runs as a congestion control owning cwnd and pacing
//!    (`cong_control`) in our Linux TCP model, not as a UDP sender: the stack retransmits
//!    lost segments (SACK/RACK) and Copa does not run PRR. RTTs are the stack's per-ACK
//!    `rs.rtt` (the newest (S)ACKed segment, as in Linux); srtt is the stack's (gain 1/8;
//!    the reference uses 1/16).
//! 2. **Per-ACK step with stretch ACKs.** An ACK covering n packets moves cwnd by
//!    n·v/(δ·cwnd) (the paper's rule applied per packet acknowledged).
//! 3. **Direction.** The paper compares cwnd with its value one RTT earlier. Here, as in
//!    the reference code, a packet-timed round (BBR's round counter) has a direction only
//!    if at least 2/3 of the packets it acknowledged moved cwnd that way; a round without
//!    such a majority resets v to 1. With the paper's net comparison, a round in which
//!    cwnd crossed the target still counted as "up", v stayed at 8 for the next round
//!    and cwnd fell from 27 to 9 packets in one RTT on a 12 Mbit/s link, emptying the
//!    queue (utilisation 0.87). v doubles from the round in which the same direction was
//!    seen for the 3rd time in a row (paper); the reference doubles after one round
//!    (`velocity_rounds = 1` reproduces it).
//! 4. **Velocity cap** (from the reference code, not in the paper): v is halved while
//!    v > δ·cwnd, so one RTT never changes cwnd by more than cwnd itself.
//! 5. **Windowed extrema** use the kernel's 3-sample min/max filter ([`Minmax`], µs):
//!    RTT_min over 10 s (the reference extends it to 20·RTT_min), RTT_standing over
//!    srtt/2, the queue-emptiness maximum over 4·srtt. The filter is exact for the running
//!    extreme and approximate for an expired one (it falls back to the best sample of a
//!    later sub-window); the reference keeps an exact monotone deque.
//! 6. **Nearly empty** is tested per RTT sample: d_q(sample) ≤ 0.1·max d_q of the last
//!    4·srtt (paper; the reference's "min of 4·srtt below RTT_min + 10 % of the range",
//!    evaluated sample by sample), **or at most one packet's transmission time**
//!    (RTT/cwnd). The paper's fluid model lets the queue reach 0; a packet queue does not:
//!    pacing at 2·cwnd/RTT makes each packet arrive half a transmission time behind the
//!    previous one, and with delayed ACKs the sampled packet is the second of a pair.
//!    Alone on a 12 Mbit/s link the samples then bottom out at 0.7–1 ms against a maximum
//!    of ~5 ms, an exactly empty queue was seen only every ~11 RTTs, and without the
//!    one-packet floor Copa switched to competitive mode alone and let the queue grow
//!    without bound (1/δ rose every RTT).
//! 7. **Competitive mode.** 1/δ += 1 once per round without loss; δ doubles at most once
//!    per round on loss (the reference doubles on every lossy ACK); δ ≤ `delta`.
//!    Returning to default mode restores δ = `delta`.
//! 8. **Loss.** In default mode losses do not change cwnd (the paper's Copa reacts to
//!    delay only); the reference's 30 %-loss safety net (cwnd × 0.7) is not implemented.
//! 9. **RTO.** A retransmission timeout restarts slow start from the initial window with
//!    v = 1 and the RTT filters kept (the reference re-initialises after 2 s without
//!    ACKs). cwnd floor: 2 packets (reference).

use serde::{Deserialize, Serialize};

use cellcc_units::{Dur, Time, NS_PER_S};

use crate::minmax::Minmax;
use crate::{CaState, ConfigError, CongestionControl, PacingStatus, RateSample, Sock};

/// Smallest cwnd, packets (reference `markoviancc.cc`): a window of 2 keeps ACKs flowing.
pub const CWND_MIN: f64 = 2.0;
/// Nearly empty: d_q below this fraction of the largest recent d_q (NSDI'18 §2.2).
const EMPTY_FRACTION: f64 = 0.1;
/// The queue must be nearly empty at least once every this many RTTs to stay in default
/// mode (NSDI'18 §2.2).
const EMPTY_EVERY_RTTS: u64 = 5;
/// Window of the d_q maximum for the emptiness test, in srtts (NSDI'18 §2.2).
const MAX_WINDOW_RTTS: u64 = 4;
/// Pacing gain: packets leave at twice cwnd/RTT_standing (NSDI'18 §2).
const PACING_GAIN: f64 = 2.0;
/// RTT assumed before the first sample (pacing only): a typical cellular RTT.
const RTT_UNKNOWN: Dur = Dur::from_ms(100);

/// Parameters of [`Copa`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CopaConfig {
    /// δ of default mode, the weight of delay against throughput (NSDI'18 §2; default 0.5:
    /// a standing queue of 1/δ = 2 packets).
    pub delta: f64,
    /// Switch to competitive mode when the queue never empties (NSDI'18 §2.2; default true,
    /// Pantheon's `auto`). False keeps δ = `delta` for ever.
    pub mode_switching: bool,
    /// Start with slow start (NSDI'18 §2.1; default true, Pantheon's `do_ss`).
    pub slow_start: bool,
    /// Rounds in the same direction before v starts doubling (NSDI'18 §2: 3; the
    /// reference code: 1).
    pub velocity_rounds: u32,
    /// Window of RTT_min, s (NSDI'18 §2: 10).
    pub rtt_min_window_s: f64,
    /// Initial cwnd, packets (reference: 10, as Linux).
    pub init_cwnd: u32,
}

impl Default for CopaConfig {
    fn default() -> Self {
        CopaConfig {
            delta: 0.5,
            mode_switching: true,
            slow_start: true,
            velocity_rounds: 3,
            rtt_min_window_s: 10.0,
            init_cwnd: 10,
        }
    }
}

impl CopaConfig {
    /// Check every value; the error names the field and the accepted range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |field: &str, reason: String| Err(ConfigError::new("copa", field, reason));
        if !(self.delta.is_finite() && self.delta > 0.0 && self.delta <= 1.0) {
            return err("delta", format!("{} is outside (0, 1]", self.delta));
        }
        if !(1..=100).contains(&self.velocity_rounds) {
            return err(
                "velocity_rounds",
                format!("{} is outside 1..=100", self.velocity_rounds),
            );
        }
        if !(self.rtt_min_window_s.is_finite()
            && self.rtt_min_window_s >= 0.1
            && self.rtt_min_window_s <= 3600.0)
        {
            return err(
                "rtt_min_window_s",
                format!("{} is outside [0.1, 3600] s", self.rtt_min_window_s),
            );
        }
        if !(2..=10_000).contains(&self.init_cwnd) {
            return err(
                "init_cwnd",
                format!("{} is outside 2..=10000 packets", self.init_cwnd),
            );
        }
        Ok(())
    }
}

/// Copa's phase; every change goes through `Copa::transition`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// cwnd += 1 per packet acked until λ > λ_t.
    SlowStart,
    /// δ = `delta`.
    Default,
    /// 1/δ adapted by AIMD.
    Competitive,
}

impl Mode {
    /// Label used in time series and by [`CongestionControl::phase`].
    pub fn name(self) -> &'static str {
        match self {
            Mode::SlowStart => "slow_start",
            Mode::Default => "default",
            Mode::Competitive => "competitive",
        }
    }
}

/// Direction cwnd moved in over the last round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// cwnd moved up (λ ≤ λ_t) for at least 2/3 of the round's packets.
    Up,
    /// cwnd moved down (λ > λ_t) for at least 2/3 of the round's packets.
    Down,
}

/// NSDI'18 §2: the target window RTT_standing/(δ·d_q) (λ_t·RTT_standing), packets;
/// infinite when there is no queue.
pub fn target_cwnd(rtt_standing: Dur, d_q: Dur, delta: f64) -> f64 {
    if d_q.is_zero() {
        return f64::INFINITY;
    }
    rtt_standing.as_secs_f64() / (delta * d_q.as_secs_f64())
}

/// NSDI'18 §2: one ACK of `acked` packets moves cwnd by acked·v/(δ·cwnd) towards the
/// target (up when λ ≤ λ_t, i.e. cwnd ≤ target), not below [`CWND_MIN`].
pub fn step_cwnd(cwnd: f64, target: f64, v: f64, delta: f64, acked: u32) -> f64 {
    let step = f64::from(acked) * v / (delta * cwnd);
    let next = if cwnd <= target {
        cwnd + step
    } else {
        cwnd - step
    };
    next.max(CWND_MIN)
}

/// A Copa controller. Build with [`Copa::new`]; the stack then calls `init`.
#[derive(Clone, Debug)]
pub struct Copa {
    config: CopaConfig,
    mode: Mode,
    /// δ in use (changes only in competitive mode).
    delta: f64,
    /// Congestion window, packets (fractional).
    cwnd: f64,
    /// Velocity v (a power of two).
    velocity: f64,
    /// Direction of the last completed round, and how many rounds in a row had it.
    direction: Option<Direction>,
    same_direction_rounds: u32,
    /// `delivered` at which the current packet-timed round ends.
    next_round_delivered: u64,
    /// Packets acked this round whose ACK moved cwnd up, and down.
    round_up: u32,
    round_down: u32,
    /// A loss was seen in the current round (competitive mode).
    round_lost: bool,
    /// RTT_min over `rtt_min_window_s`, µs.
    rtt_min: Minmax,
    /// RTT_standing: min RTT over srtt/2, µs.
    rtt_standing: Minmax,
    /// Largest d_q sample over 4·srtt, µs.
    dq_max: Minmax,
    /// Last time a sample saw a nearly empty queue.
    last_empty: Time,
    /// Sum and count of d_q estimates, for the reported mean.
    dq_sum_us: f64,
    dq_count: u64,
}

impl Default for Copa {
    fn default() -> Self {
        Copa::new(CopaConfig::default())
    }
}

/// Microsecond clock for the [`Minmax`] filters (wraps like `tcp_jiffies32`).
fn us32(t: Time) -> u32 {
    t.as_us() as u32
}

/// A duration in µs as `u32`, saturated.
fn dur_us32(d: Dur) -> u32 {
    u32::try_from(d.as_us()).unwrap_or(u32::MAX)
}

impl Copa {
    /// A controller with these parameters, in slow start unless `config.slow_start` is off.
    pub fn new(config: CopaConfig) -> Self {
        Copa {
            mode: if config.slow_start {
                Mode::SlowStart
            } else {
                Mode::Default
            },
            delta: config.delta,
            cwnd: f64::from(config.init_cwnd),
            velocity: 1.0,
            direction: None,
            same_direction_rounds: 0,
            next_round_delivered: 0,
            round_up: 0,
            round_down: 0,
            round_lost: false,
            rtt_min: Minmax::new_min_empty(),
            rtt_standing: Minmax::new_min_empty(),
            dq_max: Minmax::new(0, 0),
            last_empty: Time::ZERO,
            dq_sum_us: 0.0,
            dq_count: 0,
            config,
        }
    }

    /// The current mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }
    /// δ in use: `config.delta` except in competitive mode, where 1/δ follows AIMD.
    pub fn delta(&self) -> f64 {
        self.delta
    }
    /// Congestion window, packets (fractional).
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }
    /// Velocity v, a power of two (1 after a change of direction).
    pub fn velocity(&self) -> f64 {
        self.velocity
    }

    /// RTT_min, if measured.
    pub fn rtt_min(&self) -> Option<Dur> {
        Some(self.rtt_min.get())
            .filter(|&v| v != u32::MAX)
            .map(|v| Dur::from_us(v.into()))
    }

    /// RTT_standing, if measured.
    pub fn rtt_standing(&self) -> Option<Dur> {
        Some(self.rtt_standing.get())
            .filter(|&v| v != u32::MAX)
            .map(|v| Dur::from_us(v.into()))
    }

    /// The queueing delay estimate d_q = RTT_standing − RTT_min.
    pub fn d_q(&self) -> Option<Dur> {
        Some(self.rtt_standing()?.saturating_sub(self.rtt_min()?))
    }

    /// Every mode change goes through here; debug builds check the edge is legal.
    fn transition(&mut self, to: Mode) {
        use Mode::*;
        debug_assert!(
            matches!(
                (self.mode, to),
                (SlowStart, Default | Competitive)
                    | (Default, Competitive)
                    | (Competitive, Default)
                    | (_, SlowStart)
            ),
            "illegal Copa transition {} -> {}",
            self.mode.name(),
            to.name()
        );
        if to == Default || (to == SlowStart && self.mode == Competitive) {
            self.delta = self.config.delta;
        }
        self.mode = to;
    }

    /// `cong_control`: the per-ACK recipe.
    fn on_ack(&mut self, sock: &mut Sock, rs: &RateSample) {
        let round_end = self.update_round(sock, rs);
        self.update_rtts(sock, rs);
        self.update_mode(sock, round_end);
        self.update_cwnd(rs);
        if round_end {
            self.update_velocity();
        }
        self.set_pacing_rate(sock);
        self.set_cwnd(sock);
    }

    /// Packet-timed rounds (as BBR's `bbr_update_round`): a round ends when a packet sent
    /// after its start is delivered.
    fn update_round(&mut self, sock: &Sock, rs: &RateSample) -> bool {
        if rs.losses > 0 {
            self.round_lost = true;
        }
        if rs.interval.is_some() && rs.prior_delivered >= self.next_round_delivered {
            self.next_round_delivered = sock.delivered;
            true
        } else {
            false
        }
    }

    /// Feed the RTT sample to RTT_min, RTT_standing and the d_q maximum.
    fn update_rtts(&mut self, sock: &Sock, rs: &RateSample) {
        let Some(rtt) = rs.rtt else { return };
        let now = us32(sock.now);
        let srtt = if sock.srtt.is_zero() { rtt } else { sock.srtt };
        let min_win = (self.config.rtt_min_window_s * 1e6) as u32;
        let rtt_us = dur_us32(rtt).max(1);
        let rtt_min = self.rtt_min.running_min(min_win, now, rtt_us); // NSDI'18 §2: RTT_min
        let standing_win = dur_us32(srtt / 2);
        self.rtt_standing.running_min(standing_win, now, rtt_us); // NSDI'18 §2: RTT_standing
        let dq_sample = rtt_us - rtt_min;
        let max_win = dur_us32(srtt * MAX_WINDOW_RTTS);
        let dq_max = self.dq_max.running_max(max_win, now, dq_sample);
        // NSDI'18 §2.2: the queue is nearly empty (at most 10 % of its recent maximum),
        // or holds at most one packet (difference 6).
        let packet_time_us = f64::from(rtt_us) / self.cwnd.max(1.0);
        let threshold = (EMPTY_FRACTION * f64::from(dq_max)).max(packet_time_us);
        if f64::from(dq_sample) <= threshold {
            self.last_empty = sock.now;
        }
        if let Some(dq) = self.d_q() {
            self.dq_sum_us += dq.as_us() as f64;
            self.dq_count += 1;
        }
    }

    /// NSDI'18 §2.1–2.2: leave slow start; switch between default and competitive mode;
    /// competitive mode's AIMD on 1/δ.
    fn update_mode(&mut self, sock: &Sock, round_end: bool) {
        if !self.config.mode_switching || self.mode == Mode::SlowStart || sock.srtt.is_zero() {
            return;
        }
        let quiet = sock.now.saturating_since(self.last_empty);
        let competitive = quiet > sock.srtt * EMPTY_EVERY_RTTS;
        match (self.mode, competitive) {
            (Mode::Default, true) => self.transition(Mode::Competitive),
            (Mode::Competitive, false) => self.transition(Mode::Default),
            _ => {}
        }
        if self.mode == Mode::Competitive && round_end {
            let inv = 1.0 / self.delta;
            let inv = if self.round_lost {
                inv / 2.0 // NSDI'18 §2.2: 1/δ halves on loss
            } else {
                inv + 1.0 // NSDI'18 §2.2: 1/δ += 1 per RTT
            };
            self.delta = (1.0 / inv).min(self.config.delta);
        }
        if round_end {
            self.round_lost = false;
        }
    }

    /// Slow start, or the per-ACK step towards the target.
    fn update_cwnd(&mut self, rs: &RateSample) {
        let acked = rs.acked_sacked;
        if acked == 0 {
            return;
        }
        let (Some(standing), Some(d_q)) = (self.rtt_standing(), self.d_q()) else {
            return;
        };
        let target = target_cwnd(standing, d_q, self.delta); // NSDI'18 §2: λ_t = 1/(δ·d_q)
        if self.mode == Mode::SlowStart {
            if self.cwnd <= target {
                self.cwnd += f64::from(acked); // NSDI'18 §2.1: doubles per RTT
                return;
            }
            self.transition(Mode::Default);
        }
        if self.cwnd <= target {
            self.round_up += acked;
        } else {
            self.round_down += acked;
        }
        self.cwnd = step_cwnd(self.cwnd, target, self.velocity, self.delta, acked);
    }

    /// NSDI'18 §2: once per round, find the direction cwnd moved in; double v once the
    /// same direction held for `velocity_rounds` rounds, else reset it to 1. A round's
    /// direction is that of at least 2/3 of its ACKs' steps (reference code); a round
    /// without such a majority resets v (difference 3).
    fn update_velocity(&mut self) {
        let (up, down) = (self.round_up, self.round_down);
        self.round_up = 0;
        self.round_down = 0;
        if self.mode == Mode::SlowStart {
            return;
        }
        let net = i64::from(up) - i64::from(down);
        let majority = 3 * net.unsigned_abs() > 2 * u64::from(up + down);
        let dir = match (majority, net > 0) {
            (false, _) => None,
            (true, true) => Some(Direction::Up),
            (true, false) => Some(Direction::Down),
        };
        match dir {
            Some(d) if Some(d) == self.direction => self.same_direction_rounds += 1,
            _ => {
                self.direction = dir;
                self.same_direction_rounds = u32::from(dir.is_some());
                self.velocity = 1.0;
            }
        }
        if self.same_direction_rounds >= self.config.velocity_rounds {
            self.velocity *= 2.0;
        }
        // Reference code: v ≤ δ·cwnd (one RTT moves cwnd by at most v/δ ≤ cwnd).
        while self.velocity > 1.0 && self.velocity > self.delta * self.cwnd {
            self.velocity /= 2.0;
        }
    }

    /// NSDI'18 §2: pace at 2·cwnd/RTT_standing.
    fn set_pacing_rate(&self, sock: &mut Sock) {
        let rtt = self
            .rtt_standing()
            .filter(|d| !d.is_zero())
            .unwrap_or(RTT_UNKNOWN);
        let bytes_per_s =
            PACING_GAIN * self.cwnd * f64::from(sock.mss) * NS_PER_S as f64 / rtt.as_ns() as f64;
        sock.pacing_rate = (bytes_per_s as u64).clamp(1, sock.max_pacing_rate.max(1));
    }

    fn set_cwnd(&self, sock: &mut Sock) {
        let cwnd = self.cwnd.ceil().min(f64::from(u32::MAX)) as u32;
        sock.cwnd = cwnd.clamp(CWND_MIN as u32, sock.cwnd_clamp);
    }

    /// Restart slow start from the initial window (init and RTO).
    fn restart(&mut self) {
        self.cwnd = f64::from(self.config.init_cwnd);
        self.round_up = 0;
        self.round_down = 0;
        self.velocity = 1.0;
        self.direction = None;
        self.same_direction_rounds = 0;
        if self.config.slow_start {
            self.transition(Mode::SlowStart);
        }
    }
}

impl CongestionControl for Copa {
    fn name(&self) -> &'static str {
        "copa"
    }

    fn init(&mut self, sock: &mut Sock) {
        *self = Copa::new(self.config.clone());
        self.next_round_delivered = sock.delivered;
        self.last_empty = sock.now;
        sock.pacing_status = PacingStatus::Needed;
        self.set_pacing_rate(sock);
        self.set_cwnd(sock);
    }

    /// Copa does not use ssthresh.
    fn ssthresh(&mut self, sock: &Sock) -> u32 {
        sock.ssthresh
    }

    fn cong_control(&mut self, sock: &mut Sock, rs: &RateSample) {
        self.on_ack(sock, rs);
    }

    fn owns_cwnd(&self) -> bool {
        true
    }

    /// Difference 9: an RTO restarts slow start.
    fn set_state(&mut self, sock: &mut Sock, new_state: CaState) {
        if new_state == CaState::Loss && sock.ca_state != CaState::Loss {
            self.restart();
            self.last_empty = sock.now;
            self.set_pacing_rate(sock);
        }
    }

    /// The window never changed for a loss; keep it.
    fn undo_cwnd(&mut self, sock: &Sock) -> u32 {
        sock.cwnd
    }

    fn phase(&self) -> &'static str {
        self.mode.name()
    }

    fn info(&self) -> Vec<(&'static str, f64)> {
        let mean_dq_ms = if self.dq_count > 0 {
            self.dq_sum_us / self.dq_count as f64 / 1000.0
        } else {
            f64::NAN
        };
        vec![
            ("delta", self.delta),
            ("velocity", self.velocity),
            ("dq_mean_ms", mean_dq_ms),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_window_is_rtt_standing_over_delta_dq() {
        // RTT_standing 22 ms, d_q 2 ms, δ = 0.5: λ_t = 1/(0.5·0.002 s) = 1000 pkt/s and
        // the target window λ_t·RTT_standing = 22 packets.
        let t = target_cwnd(Dur::from_ms(22), Dur::from_ms(2), 0.5);
        assert!((t - 22.0).abs() < 1e-9, "{t}");
        // No queue: the target is unbounded.
        assert!(target_cwnd(Dur::from_ms(20), Dur::ZERO, 0.5).is_infinite());
    }

    #[test]
    fn per_ack_step_is_v_over_delta_cwnd() {
        // cwnd 20 below a target of 22: +1·1/(0.5·20) = +0.1 per packet.
        assert!((step_cwnd(20.0, 22.0, 1.0, 0.5, 1) - 20.1).abs() < 1e-12);
        // Above the target, v = 4, a delayed ACK of 2: −2·4/(0.5·25) = −0.64.
        assert!((step_cwnd(25.0, 22.0, 4.0, 0.5, 2) - 24.36).abs() < 1e-12);
        // A full window of ACKs moves cwnd by about v/δ = 2 packets per RTT.
        let mut w = 20.0;
        for _ in 0..20 {
            w = step_cwnd(w, 100.0, 1.0, 0.5, 1);
        }
        assert!((w - 22.0).abs() < 0.1, "{w}");
        // Never below the floor.
        assert_eq!(step_cwnd(2.0, 1.0, 8.0, 0.5, 1), CWND_MIN);
    }

    /// Drive Copa with ACKs of one packet each at RTT `rtt_ms` (packets delivered one by
    /// one, rounds of `cwnd` packets), returning the controller and sock.
    fn drive(copa: &mut Copa, sock: &mut Sock, acks: u32, rtt: Dur, gap: Dur) {
        for _ in 0..acks {
            sock.now += gap;
            sock.delivered += 1;
            sock.srtt = rtt;
            let rs = RateSample {
                prior_delivered: sock.delivered - u64::from(sock.cwnd).min(sock.delivered),
                delivered: 1,
                interval: Some(rtt),
                rtt: Some(rtt),
                acked_sacked: 1,
                ..RateSample::default()
            };
            copa.cong_control(sock, &rs);
        }
    }

    #[test]
    fn slow_start_adds_one_per_ack_until_the_target_is_exceeded() {
        let mut copa = Copa::default();
        let mut sock = Sock::new(1448, Time::ZERO);
        copa.init(&mut sock);
        assert_eq!(sock.pacing_status, PacingStatus::Needed);
        // Constant RTT: d_q = 0, the target is infinite, slow start adds 1 per ACK.
        drive(&mut copa, &mut sock, 10, Dur::from_ms(20), Dur::from_ms(1));
        assert_eq!(copa.mode(), Mode::SlowStart);
        assert_eq!(sock.cwnd, 20);
        // A queue appears: RTT 30 ms against RTT_min 20 → d_q 10 ms once RTT_standing
        // (the min of the last srtt/2 = 15 ms) has forgotten the 20 ms samples; target
        // 30/(0.5·10) = 6 packets < cwnd: slow start ends, cwnd decreases.
        drive(&mut copa, &mut sock, 15, Dur::from_ms(30), Dur::from_ms(1));
        assert_eq!(copa.mode(), Mode::SlowStart, "a transient is filtered out");
        let peak = copa.cwnd();
        drive(&mut copa, &mut sock, 5, Dur::from_ms(30), Dur::from_ms(1));
        assert_eq!(copa.mode(), Mode::Default);
        assert_eq!(copa.d_q(), Some(Dur::from_ms(10)));
        assert!(copa.cwnd() < peak, "{} vs {peak}", copa.cwnd());
    }

    #[test]
    fn velocity_doubles_from_the_third_round_in_the_same_direction() {
        let mut copa = Copa::new(CopaConfig {
            slow_start: false,
            ..CopaConfig::default()
        });
        copa.cwnd = 20.0;
        let round = |c: &mut Copa, up: u32, down: u32| {
            c.round_up = up;
            c.round_down = down;
            c.update_velocity();
            c.velocity()
        };
        // Five rounds of 20 ACKs all moving cwnd up: v = 1, 1, 2, 4, 8.
        let v: Vec<f64> = (0..5).map(|_| round(&mut copa, 20, 0)).collect();
        assert_eq!(v, vec![1.0, 1.0, 2.0, 4.0, 8.0]);
        // 13 up and 7 down: net 6 is not more than 2/3 of 20 → no direction, v = 1.
        assert_eq!(round(&mut copa, 13, 7), 1.0);
        // 17 up, 3 down: net 14 > 13.3 → up again, counted from 1.
        assert_eq!(round(&mut copa, 17, 3), 1.0);
        assert_eq!(copa.direction, Some(Direction::Up));
        // A change of direction resets v.
        assert_eq!(round(&mut copa, 0, 20), 1.0);
        assert_eq!(copa.direction, Some(Direction::Down));
        // Reference timing: doubling after one round; capped at δ·cwnd.
        let mut r = Copa::new(CopaConfig {
            slow_start: false,
            velocity_rounds: 1,
            ..CopaConfig::default()
        });
        r.cwnd = 6.0;
        assert_eq!(round(&mut r, 6, 0), 2.0);
        r.cwnd = 7.0;
        assert_eq!(round(&mut r, 7, 0), 2.0, "4 > 0.5·7 = 3.5 is halved back");
    }

    #[test]
    fn competitive_mode_when_the_queue_never_empties_and_aimd_on_inverse_delta() {
        let mut copa = Copa::new(CopaConfig {
            slow_start: false,
            ..CopaConfig::default()
        });
        let mut sock = Sock::new(1448, Time::ZERO);
        copa.init(&mut sock);
        drive(&mut copa, &mut sock, 5, Dur::from_ms(20), Dur::from_ms(1));
        assert_eq!(copa.mode(), Mode::Default);
        // A queue of 40–50 ms that never falls below 10 % of its maximum.
        for i in 0..600u64 {
            let rtt = Dur::from_ms(60 + 10 * (i % 2));
            drive(&mut copa, &mut sock, 1, rtt, Dur::from_ms(1));
        }
        assert_eq!(copa.mode(), Mode::Competitive);
        assert!(copa.delta() < 0.5, "1/δ grew: δ = {}", copa.delta());
        // The queue empties: back to default, δ = 0.5.
        drive(&mut copa, &mut sock, 3, Dur::from_ms(20), Dur::from_ms(1));
        assert_eq!(copa.mode(), Mode::Default);
        assert_eq!(copa.delta(), 0.5);
    }

    #[test]
    fn pacing_is_twice_cwnd_over_rtt_standing() {
        let mut copa = Copa::default();
        let mut sock = Sock::new(1000, Time::ZERO);
        copa.init(&mut sock);
        drive(&mut copa, &mut sock, 10, Dur::from_ms(20), Dur::from_ms(1));
        // cwnd 20, RTT_standing 20 ms: 2·20·1000 B / 0.02 s = 2 MB/s.
        assert_eq!(sock.pacing_rate, 2_000_000);
    }

    #[test]
    fn validate_names_the_field() {
        let c = CopaConfig {
            delta: 0.0,
            ..CopaConfig::default()
        };
        assert_eq!(c.validate().unwrap_err().field, "delta");
        assert!(CopaConfig::default().validate().is_ok());
    }
}
