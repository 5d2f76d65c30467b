//! PCC-Vivace: rate control by online gradient ascent on a utility of throughput,
//! latency gradient and loss.
//!
//! Source: M. Dong, T. Meng, D. Zarchy, E. Arslan, Y. Gilad, P. B. Godfrey, M. Schapira,
//! "PCC Vivace: Online-Learning Congestion Control", USENIX NSDI 2018 (Renton, 9–11 April
//! 2018), §2 (utility, Eq. 1), §3 (rate control: slow start, probing, confidence
//! amplifier, dynamic change boundary). Reference code: `PCCproject/PCC-Uspace`, a
//! user-space UDT sender (`PCCproject/PCC-Kernel` is Allegro, not Vivace). Notes in the
//! algorithm specification, §5.5. Nothing of the reference code is reproduced here.
//!
//! # Model
//!
//! Time is cut into monitor intervals (MIs) of about one RTT, each sent at one rate. When
//! all packets of an MI are acknowledged or lost, its utility is
//!
//! ```text
//!   u(x) = x^0.9 − 900·x·dRTT/dt − 11.35·x·L          (NSDI'18 Eq. 1, x in Mbit/s)
//! ```
//!
//! with x the MI's sending rate, dRTT/dt the slope of its RTT samples over time
//! (ignored when |dRTT/dt| < 0.01) and L its loss rate. Slow start doubles the rate every
//! MI until an MI's utility is below its predecessor's, then returns to the better rate.
//! From then on Vivace probes: pairs of MIs at r(1+ε) and r(1−ε) in random order give the
//! gradient γ = (u⁺ − u⁻)/(x⁺ − x⁻); the rate moves by m·θ₀·γ, where the confidence
//! amplifier m counts consecutive steps in the same direction, and the step is bounded by
//! ω·r, ω = ω₀ + k·δ_ω growing with every consecutive step that hit the bound.
//!
//! # States
//!
//! ```text
//!  init, RTO (rate halved)
//!   |   +---------------+  u(MI k) < u(MI k-1): r = rate of MI k-1  +----------------+
//!   +-->| SLOW_START    |------------------------------------------>| PROBING        |
//!       | r doubles/MI  |                                           | 2 pairs r(1±ε),|
//!       +---------------+                                           | then step r by |
//!                                                                   | m·θ0·γ ≤ ω·r   |<-+
//!                                                                   +----------------+  |
//!                                                                          +------------+
//! ```
//!
//! # Differences from the paper and the reference code
//!
//! 1. **TCP port.** Vivace owns cwnd and pacing through `cong_control` in our Linux TCP
//!    model: packets are paced at the MI's rate (EDT pacing), the stack retransmits, and a
//!    cwnd cap of `cwnd_gain`·r·srtt (default 2, at least 4 packets) bounds what is in
//!    flight when ACKs stop. The paper's sender is rate-only over UDP.
//! 2. **MI accounting.** Packets are counted, not identified: an MI owns the packets sent
//!    (new or retransmitted) while it was open, i.e. a range of the connection's running
//!    count delivered + lost + in flight; an ACK is attributed to the MI whose range holds
//!    the first packet it resolves, and an MI completes once all of its range is
//!    resolved. x is the MI's packets × MSS over its duration; L its lost / resolved.
//! 3. **MI length** = max(srtt, time to send `min_mi_packets` = 10 packets at the MI's
//!    rate); 100 ms before the first RTT sample.
//! 4. **Probing.** Every step comes from a fresh probing round of `probe_pairs` = 2 pairs
//!    (randomised order from a seeded generator; the gradient is the mean of the pairs');
//!    MIs sent while a round's results are outstanding use r and are not evaluated. The
//!    reference additionally keeps moving in a "rate adjusting" phase between probes; here
//!    consecutive probing rounds in the same direction raise m instead.
//! 5. **Amplifier and bound** (paper values not restated in the text we read; tagged
//!    **[recall]** in the notes): m = number of consecutive same-direction steps (1, 2,
//!    3, …), θ₀ = 1 (Mbit/s)² per unit of utility, ω₀ = 0.05, δ_ω = 0.1; k resets when a
//!    step stays within the bound or the direction changes.
//! 6. **Floors.** r ≥ `min_rate_mbps` (0.1 Mbit/s), so probing continues after outages.
//! 7. **RTO** halves r and restarts probing (the paper has no timeouts); fast recovery
//!    does not change r (the utility already counts the loss).

use std::collections::VecDeque;
use std::fmt;

use serde::{Deserialize, Serialize};

use cellcc_units::{Dur, Time, NS_PER_S};

use crate::{CaState, CongestionControl, PacingStatus, RateSample, Sock};

/// Smallest window cap, packets: keeps ACKs (and with them the MIs) flowing.
pub const CWND_MIN: u32 = 4;
/// MI length before the first RTT sample: a typical cellular RTT.
const RTT_UNKNOWN: Dur = Dur::from_ms(100);
/// Initial rate: 10 packets (Linux's initial window) per [`RTT_UNKNOWN`].
const INIT_PACKETS: f64 = 10.0;
/// Bits per byte and bits per Mbit, for utilities in Mbit/s.
const BITS_PER_MBIT: f64 = 1e6;

/// Parameters of [`Vivace`]. Names follow the paper.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VivaceConfig {
    /// Throughput exponent t of Eq. 1 (0.9).
    pub exponent: f64,
    /// Latency coefficient b of Eq. 1 (900).
    pub latency_coeff: f64,
    /// Loss coefficient c of Eq. 1 (11.35).
    pub loss_coeff: f64,
    /// |dRTT/dt| below this is noise and counts as 0 (0.01).
    pub rtt_gradient_tolerance: f64,
    /// Probing step ε (0.05).
    pub epsilon: f64,
    /// Probing pairs per step (2).
    pub probe_pairs: u32,
    /// Conversion factor θ₀, (Mbit/s)² per unit utility (1).
    pub theta0: f64,
    /// Initial change bound ω₀ as a fraction of r (0.05).
    pub omega0: f64,
    /// Growth δ_ω of the bound per consecutive bounded step (0.1).
    pub omega_step: f64,
    /// Smallest MI, packets (10).
    pub min_mi_packets: u32,
    /// cwnd cap as a multiple of r·srtt (2).
    pub cwnd_gain: f64,
    /// Rate floor, Mbit/s (0.1).
    pub min_rate_mbps: f64,
    /// Seed of the probing order (the scenario's flow seed unless given).
    pub seed: u64,
}

impl Default for VivaceConfig {
    fn default() -> Self {
        VivaceConfig {
            exponent: 0.9,
            latency_coeff: 900.0,
            loss_coeff: 11.35,
            rtt_gradient_tolerance: 0.01,
            epsilon: 0.05,
            probe_pairs: 2,
            theta0: 1.0,
            omega0: 0.05,
            omega_step: 0.1,
            min_mi_packets: 10,
            cwnd_gain: 2.0,
            min_rate_mbps: 0.1,
            seed: 1,
        }
    }
}

/// A [`VivaceConfig`] value Vivace cannot run with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VivaceConfigError {
    /// The offending field, as spelled in scenario files.
    pub field: &'static str,
    /// What is wrong and which values are accepted.
    pub reason: String,
}

impl fmt::Display for VivaceConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pcc-vivace.{}: {}", self.field, self.reason)
    }
}

impl std::error::Error for VivaceConfigError {}

impl VivaceConfig {
    /// Check every value; the error names the field and the accepted range.
    pub fn validate(&self) -> Result<(), VivaceConfigError> {
        let err = |field, reason: String| Err(VivaceConfigError { field, reason });
        for (field, v, lo, hi) in [
            ("exponent", self.exponent, 0.01, 1.0),
            ("latency_coeff", self.latency_coeff, 0.0, 1e6),
            ("loss_coeff", self.loss_coeff, 0.0, 1e6),
            (
                "rtt_gradient_tolerance",
                self.rtt_gradient_tolerance,
                0.0,
                1.0,
            ),
            ("epsilon", self.epsilon, 0.001, 0.5),
            ("theta0", self.theta0, 1e-6, 1e6),
            ("omega0", self.omega0, 0.001, 1.0),
            ("omega_step", self.omega_step, 0.0, 1.0),
            ("cwnd_gain", self.cwnd_gain, 1.0, 100.0),
            ("min_rate_mbps", self.min_rate_mbps, 0.001, 1e5),
        ] {
            if !(v.is_finite() && v >= lo && v <= hi) {
                return err(field, format!("{v} is outside [{lo}, {hi}]"));
            }
        }
        if !(1..=16).contains(&self.probe_pairs) {
            return err(
                "probe_pairs",
                format!("{} is outside 1..=16", self.probe_pairs),
            );
        }
        if !(1..=10_000).contains(&self.min_mi_packets) {
            return err(
                "min_mi_packets",
                format!("{} is outside 1..=10000", self.min_mi_packets),
            );
        }
        Ok(())
    }
}

/// NSDI'18 Eq. 1: u = x^t − b·x·dRTT/dt − c·x·L, x in Mbit/s; |dRTT/dt| below
/// `tolerance` counts as 0.
pub fn utility(x_mbps: f64, rtt_gradient: f64, loss: f64, cfg: &VivaceConfig) -> f64 {
    let grad = if rtt_gradient.abs() < cfg.rtt_gradient_tolerance {
        0.0
    } else {
        rtt_gradient
    };
    x_mbps.powf(cfg.exponent) - cfg.latency_coeff * x_mbps * grad - cfg.loss_coeff * x_mbps * loss
}

/// Least-squares slope of y over t (seconds per second), from running sums.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Regression {
    n: f64,
    st: f64,
    sy: f64,
    stt: f64,
    sty: f64,
}

impl Regression {
    fn add(&mut self, t: f64, y: f64) {
        self.n += 1.0;
        self.st += t;
        self.sy += y;
        self.stt += t * t;
        self.sty += t * y;
    }

    fn slope(&self) -> f64 {
        let den = self.n * self.stt - self.st * self.st;
        if self.n < 2.0 || den.abs() < 1e-18 {
            return 0.0;
        }
        (self.n * self.sty - self.st * self.sy) / den
    }
}

/// What an MI is for.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Purpose {
    /// Slow start: compare with the previous MI.
    SlowStart,
    /// Probe `pair`, at r(1+ε) (`up`) or r(1−ε).
    Probe { pair: u32, up: bool },
    /// Sent while waiting for results; not evaluated.
    Filler,
}

/// One monitor interval.
#[derive(Clone, Debug)]
struct Mi {
    epoch: u64,
    purpose: Purpose,
    /// Target rate, bytes/s.
    rate: f64,
    start: Time,
    end: Option<Time>,
    /// Its packets: the running sent count over `[sent_start, sent_end)`.
    sent_start: u64,
    sent_end: Option<u64>,
    delivered: u64,
    lost: u64,
    rtts: Regression,
}

impl Mi {
    fn complete(&self, resolved: u64) -> bool {
        self.sent_end.is_some_and(|e| resolved >= e)
    }

    /// Sending rate x over the MI, Mbit/s.
    fn x_mbps(&self, mss: u32) -> f64 {
        let (Some(end), Some(sent_end)) = (self.end, self.sent_end) else {
            return 0.0;
        };
        let secs = end.saturating_since(self.start).as_secs_f64().max(1e-6);
        (sent_end - self.sent_start) as f64 * f64::from(mss) * 8.0 / secs / BITS_PER_MBIT
    }

    fn loss(&self) -> f64 {
        let resolved = self.delivered + self.lost;
        if resolved == 0 {
            0.0
        } else {
            self.lost as f64 / resolved as f64
        }
    }
}

/// Vivace's phase; every change goes through [`Vivace::transition`].
#[derive(Clone, Debug, PartialEq)]
pub enum Phase {
    /// Rate doubles every MI; `best` = (rate, utility) of the last evaluated MI.
    SlowStart { best: Option<(f64, f64)> },
    /// A probing round: the rates still to be sent and the utilities received
    /// (`(x, u)` per pair and side).
    Probing {
        plan: VecDeque<(u32, bool)>,
        results: Vec<[Option<(f64, f64)>; 2]>,
    },
}

impl Phase {
    pub fn name(&self) -> &'static str {
        match self {
            Phase::SlowStart { .. } => "slow_start",
            Phase::Probing { .. } => "probing",
        }
    }
}

/// A PCC-Vivace controller. Build with [`Vivace::new`]; the stack then calls `init`.
#[derive(Clone, Debug)]
pub struct Vivace {
    config: VivaceConfig,
    phase: Phase,
    /// The base rate r, bytes/s.
    rate: f64,
    /// MIs not yet evaluated, oldest first; the last one is open.
    mis: VecDeque<Mi>,
    /// MIs of an older epoch are dropped unevaluated (a phase change or an RTO).
    epoch: u64,
    /// Confidence amplifier m and the direction of the last step.
    amplifier: u32,
    last_direction: f64,
    /// Consecutive steps that hit the change bound (k).
    bound_hits: u32,
    rng: u64,
    steps: u64,
}

impl Default for Vivace {
    fn default() -> Self {
        Vivace::new(VivaceConfig::default())
    }
}

/// splitmix64: a portable seeded generator for the probing order.
fn next_random(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Packets sent so far (new or retransmitted): every one is delivered, lost or in flight.
fn sent_count(sock: &Sock) -> u64 {
    sock.delivered + sock.lost + u64::from(sock.packets_in_flight())
}

/// Packets resolved (delivered or marked lost) so far.
fn resolved_count(sock: &Sock) -> u64 {
    sock.delivered + sock.lost
}

/// NSDI'18 §3: the mean over the pairs of γ = (u⁺ − u⁻)/(x⁺ − x⁻), once every pair has
/// both utilities (`[low, high]` as `(x, u)`).
fn gradient(results: &[[Option<(f64, f64)>; 2]]) -> Option<f64> {
    let mut sum = 0.0;
    for r in results {
        let ((x_lo, u_lo), (x_hi, u_hi)) = (r[0]?, r[1]?);
        if (x_hi - x_lo).abs() > 1e-9 {
            sum += (u_hi - u_lo) / (x_hi - x_lo);
        }
    }
    Some(sum / results.len().max(1) as f64)
}

/// NSDI'18 §3: one step from gradient `gamma` (utility per Mbit/s) at rate `r_mbps`,
/// with amplifier `m` and bound ω = ω₀ + k·δ_ω. Returns (new rate, whether the bound
/// was hit).
pub fn step(r_mbps: f64, gamma: f64, m: u32, k: u32, cfg: &VivaceConfig) -> (f64, bool) {
    let change = f64::from(m) * cfg.theta0 * gamma; // Δr = m·θ₀·γ
    let omega = cfg.omega0 + f64::from(k) * cfg.omega_step; // dynamic change boundary
    let bound = omega * r_mbps;
    if change.abs() > bound {
        (r_mbps + bound * change.signum(), true)
    } else {
        (r_mbps + change, false)
    }
}

impl Vivace {
    pub fn new(config: VivaceConfig) -> Self {
        Vivace {
            phase: Phase::SlowStart { best: None },
            rate: 0.0,
            mis: VecDeque::new(),
            epoch: 0,
            amplifier: 0,
            last_direction: 0.0,
            bound_hits: 0,
            rng: config.seed,
            steps: 0,
            config,
        }
    }

    pub fn phase_state(&self) -> &Phase {
        &self.phase
    }

    /// The base rate r, bytes/s.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    fn mbps(bytes_per_s: f64) -> f64 {
        bytes_per_s * 8.0 / BITS_PER_MBIT
    }

    fn bytes_per_s(mbps: f64) -> f64 {
        mbps * BITS_PER_MBIT / 8.0
    }

    /// Every phase change goes through here; MIs of the old phase are dropped.
    fn transition(&mut self, to: Phase) {
        debug_assert!(
            matches!(
                (&self.phase, &to),
                (Phase::SlowStart { .. }, Phase::Probing { .. })
                    | (Phase::Probing { .. }, Phase::Probing { .. })
                    | (_, Phase::SlowStart { .. })
            ),
            "illegal Vivace transition {} -> {}",
            self.phase.name(),
            to.name()
        );
        self.epoch += 1;
        self.phase = to;
    }

    /// A new probing round around r with a random order within each pair.
    fn start_probing(&mut self) {
        let mut plan = VecDeque::new();
        for pair in 0..self.config.probe_pairs {
            let up_first = next_random(&mut self.rng) & 1 == 1;
            plan.push_back((pair, up_first));
            plan.push_back((pair, !up_first));
        }
        let results = vec![[None, None]; self.config.probe_pairs as usize];
        self.transition(Phase::Probing { plan, results });
    }

    /// `cong_control`: the per-ACK recipe.
    fn on_ack(&mut self, sock: &mut Sock, rs: &RateSample) {
        self.attribute_ack(sock, rs);
        self.evaluate_completed(sock);
        self.rotate_mi(sock);
        self.set_pacing_rate(sock);
        self.set_cwnd(sock);
    }

    /// Difference 2: credit this ACK to the MI holding the first packet it resolves.
    fn attribute_ack(&mut self, sock: &Sock, rs: &RateSample) {
        let resolved = resolved_count(sock);
        let newly = u64::from(rs.acked_sacked) + u64::from(rs.losses);
        let first = resolved.saturating_sub(newly);
        let Some(mi) = self
            .mis
            .iter_mut()
            .find(|m| first >= m.sent_start && m.sent_end.is_none_or(|e| first < e))
        else {
            return;
        };
        mi.delivered += u64::from(rs.acked_sacked);
        mi.lost += u64::from(rs.losses);
        if let Some(rtt) = rs.rtt {
            mi.rtts.add(sock.now.as_secs_f64(), rtt.as_secs_f64());
        }
    }

    /// Evaluate MIs whose packets are all resolved, oldest first.
    fn evaluate_completed(&mut self, sock: &Sock) {
        let resolved = resolved_count(sock);
        while self.mis.front().is_some_and(|m| m.complete(resolved)) {
            let mi = self.mis.pop_front().expect("checked non-empty");
            if mi.epoch != self.epoch {
                continue;
            }
            let x = mi.x_mbps(sock.mss);
            let u = utility(x, mi.rtts.slope(), mi.loss(), &self.config);
            self.on_utility(&mi, x, u);
        }
    }

    /// React to one MI's utility.
    fn on_utility(&mut self, mi: &Mi, x: f64, u: f64) {
        match (&mut self.phase, mi.purpose) {
            (Phase::SlowStart { best }, Purpose::SlowStart) => match *best {
                // NSDI'18 §3: leave slow start when utility falls; back to the better rate.
                Some((rate, u_prev)) if u < u_prev => {
                    self.rate = rate;
                    self.start_probing();
                }
                _ => *best = Some((mi.rate, u)),
            },
            (Phase::Probing { results, .. }, Purpose::Probe { pair, up }) => {
                results[pair as usize][usize::from(up)] = Some((x, u));
                if let Some(gamma) = gradient(results) {
                    self.apply_gradient(gamma);
                    self.start_probing();
                }
            }
            _ => {}
        }
    }

    /// Confidence amplifier, dynamic change boundary, and the step itself.
    fn apply_gradient(&mut self, gamma: f64) {
        let direction = gamma.signum();
        if direction == 0.0 {
            return;
        }
        if direction == self.last_direction {
            self.amplifier += 1;
        } else {
            self.amplifier = 1;
            self.bound_hits = 0;
        }
        self.last_direction = direction;
        let r = Self::mbps(self.rate);
        let (next, hit) = step(r, gamma, self.amplifier, self.bound_hits, &self.config);
        self.bound_hits = if hit { self.bound_hits + 1 } else { 0 };
        self.rate = Self::bytes_per_s(next.max(self.config.min_rate_mbps));
        self.steps += 1;
    }

    /// Close the open MI when its time is up and open the next.
    fn rotate_mi(&mut self, sock: &Sock) {
        let due = match self.mis.back() {
            None => true,
            // An MI ends once its time is up and it holds at least one packet (a probe
            // MI without packets would never complete and stall its round).
            Some(mi) => {
                mi.end.is_none()
                    && sock.now >= mi.start + self.mi_length(sock, mi.rate)
                    && sent_count(sock) > mi.sent_start
            }
        };
        if !due {
            return;
        }
        let sent = sent_count(sock);
        if let Some(mi) = self.mis.back_mut() {
            mi.end = Some(sock.now);
            mi.sent_end = Some(sent);
        }
        let (purpose, rate) = self.next_mi();
        self.mis.push_back(Mi {
            epoch: self.epoch,
            purpose,
            rate,
            start: sock.now,
            end: None,
            sent_start: sent,
            sent_end: None,
            delivered: 0,
            lost: 0,
            rtts: Regression::default(),
        });
    }

    /// The purpose and rate of the next MI.
    fn next_mi(&mut self) -> (Purpose, f64) {
        let eps = self.config.epsilon;
        match &mut self.phase {
            Phase::SlowStart { .. } => {
                // NSDI'18 §3: the rate doubles every MI.
                let last = self
                    .mis
                    .iter()
                    .rev()
                    .find(|m| m.epoch == self.epoch)
                    .map(|m| m.rate);
                let rate = last.map_or(self.rate, |r| 2.0 * r);
                self.rate = rate;
                (Purpose::SlowStart, rate)
            }
            Phase::Probing { plan, .. } => match plan.pop_front() {
                // NSDI'18 §3: probe at r(1+ε) and r(1−ε).
                Some((pair, up)) => {
                    let f = if up { 1.0 + eps } else { 1.0 - eps };
                    (Purpose::Probe { pair, up }, self.rate * f)
                }
                None => (Purpose::Filler, self.rate),
            },
        }
    }

    fn mi_length(&self, sock: &Sock, rate: f64) -> Dur {
        let rtt = if sock.srtt.is_zero() {
            RTT_UNKNOWN
        } else {
            sock.srtt
        };
        let packets = f64::from(self.config.min_mi_packets) * f64::from(sock.mss);
        let min = Dur::from_secs_f64(packets / rate.max(1.0));
        rtt.max(min)
    }

    /// The open MI's rate.
    fn current_rate(&self) -> f64 {
        self.mis.back().map_or(self.rate, |m| m.rate)
    }

    fn set_pacing_rate(&self, sock: &mut Sock) {
        sock.pacing_rate = (self.current_rate() as u64).clamp(1, sock.max_pacing_rate.max(1));
    }

    /// Difference 1: cwnd = max(4, cwnd_gain·rate·srtt).
    fn set_cwnd(&self, sock: &mut Sock) {
        let rtt = if sock.srtt.is_zero() {
            RTT_UNKNOWN
        } else {
            sock.srtt
        };
        let bytes =
            self.config.cwnd_gain * self.current_rate() * rtt.as_ns() as f64 / NS_PER_S as f64;
        let packets = (bytes / f64::from(sock.mss.max(1))).ceil();
        let cwnd = (packets.min(f64::from(u32::MAX)) as u32).max(CWND_MIN);
        sock.cwnd = cwnd.min(sock.cwnd_clamp);
    }
}

impl CongestionControl for Vivace {
    fn name(&self) -> &'static str {
        "pcc-vivace"
    }

    fn init(&mut self, sock: &mut Sock) {
        *self = Vivace::new(self.config.clone());
        self.rate = INIT_PACKETS * f64::from(sock.mss) / RTT_UNKNOWN.as_secs_f64();
        sock.pacing_status = PacingStatus::Needed;
        self.rotate_mi(sock);
        self.set_pacing_rate(sock);
        self.set_cwnd(sock);
    }

    /// Vivace does not use ssthresh.
    fn ssthresh(&mut self, sock: &Sock) -> u32 {
        sock.ssthresh
    }

    /// Never called: Vivace owns cwnd.
    fn cong_avoid(&mut self, _sock: &mut Sock, _acked: u32) {}

    fn cong_control(&mut self, sock: &mut Sock, rs: &RateSample) {
        self.on_ack(sock, rs);
    }

    fn owns_cwnd(&self) -> bool {
        true
    }

    /// Difference 7: an RTO halves the rate and restarts probing.
    fn set_state(&mut self, sock: &mut Sock, new_state: CaState) {
        if new_state == CaState::Loss && sock.ca_state != CaState::Loss {
            let floor = Self::bytes_per_s(self.config.min_rate_mbps);
            self.rate = (self.rate / 2.0).max(floor);
            self.amplifier = 0;
            self.bound_hits = 0;
            self.last_direction = 0.0;
            self.start_probing();
            self.mis.clear();
            self.rotate_mi(sock);
            self.set_pacing_rate(sock);
        }
    }

    fn undo_cwnd(&mut self, sock: &Sock) -> u32 {
        sock.cwnd
    }

    fn phase(&self) -> &'static str {
        self.phase.name()
    }

    fn info(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("rate_mbps", Self::mbps(self.rate)),
            ("steps", self.steps as f64),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utility_worked_numbers() {
        let cfg = VivaceConfig::default();
        // 10 Mbit/s, flat RTT, no loss: 10^0.9 = 7.943.
        let u = utility(10.0, 0.0, 0.0, &cfg);
        assert!((u - 7.943_282).abs() < 1e-6, "{u}");
        // RTT rising 2 ms per 100 ms (0.02): −900·10·0.02 = −180.
        let u = utility(10.0, 0.02, 0.0, &cfg);
        assert!((u - (7.943_282 - 180.0)).abs() < 1e-6, "{u}");
        // A slope of 0.005 is below the tolerance and ignored.
        assert_eq!(
            utility(10.0, 0.005, 0.0, &cfg),
            utility(10.0, 0.0, 0.0, &cfg)
        );
        // 1 % loss: −11.35·10·0.01 = −1.135.
        let u = utility(10.0, 0.0, 0.01, &cfg);
        assert!((u - (7.943_282 - 1.135)).abs() < 1e-6, "{u}");
    }

    #[test]
    fn step_is_amplified_and_bounded() {
        let cfg = VivaceConfig::default();
        // γ = 0.2 at 10 Mbit/s, m = 1: Δ = 0.2 ≤ ω₀·r = 0.5.
        assert_eq!(step(10.0, 0.2, 1, 0, &cfg), (10.2, false));
        // m = 3: Δ = 0.6 > 0.5 → bounded to +0.5.
        let (r, hit) = step(10.0, 0.2, 3, 0, &cfg);
        assert!((r - 10.5).abs() < 1e-12 && hit);
        // After one bounded step ω = 0.15: Δ = 0.6 ≤ 1.5.
        let (r, hit) = step(10.0, 0.2, 3, 1, &cfg);
        assert!((r - 10.6).abs() < 1e-12 && !hit);
        // Downward: γ = −4 → bounded to −0.5.
        let (r, _) = step(10.0, -4.0, 1, 0, &cfg);
        assert!((r - 9.5).abs() < 1e-12);
    }

    #[test]
    fn regression_slope() {
        let mut r = Regression::default();
        for i in 0..10 {
            let t = f64::from(i) * 0.01;
            r.add(t, 0.02 + 0.5 * t);
        }
        assert!((r.slope() - 0.5).abs() < 1e-9);
    }

    #[test]
    fn amplifier_counts_same_direction_steps() {
        let mut v = Vivace {
            rate: Vivace::bytes_per_s(10.0),
            ..Vivace::default()
        };
        v.apply_gradient(0.1);
        v.apply_gradient(0.1);
        assert_eq!(v.amplifier, 2);
        // 10 + 0.1 = 10.1; then 2·0.1 = 0.2 → 10.3.
        assert!((Vivace::mbps(v.rate) - 10.3).abs() < 1e-9);
        v.apply_gradient(-0.1);
        assert_eq!(v.amplifier, 1);
        assert!((Vivace::mbps(v.rate) - 10.2).abs() < 1e-9);
    }

    #[test]
    fn probing_round_has_both_sides_of_each_pair_in_random_order() {
        let mut v = Vivace {
            rate: 1000.0,
            ..Vivace::default()
        };
        v.start_probing();
        let mut rates = Vec::new();
        for _ in 0..5 {
            rates.push(v.next_mi());
        }
        let probes: Vec<_> = rates[..4].iter().map(|(p, r)| (*p, *r)).collect();
        for pair in 0..2 {
            let sides: Vec<f64> = probes
                .iter()
                .filter(|(p, _)| matches!(p, Purpose::Probe { pair: q, .. } if *q == pair))
                .map(|(_, r)| *r)
                .collect();
            let mut sorted = sides.clone();
            sorted.sort_by(f64::total_cmp);
            assert_eq!(sorted, vec![950.0, 1050.0]);
        }
        assert_eq!(rates[4], (Purpose::Filler, 1000.0));
    }

    #[test]
    fn validate_names_the_field() {
        let c = VivaceConfig {
            epsilon: 0.0,
            ..VivaceConfig::default()
        };
        assert_eq!(c.validate().unwrap_err().field, "epsilon");
        assert!(VivaceConfig::default().validate().is_ok());
    }
}
