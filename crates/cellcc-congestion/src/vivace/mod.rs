//! PCC-Vivace: rate control by online gradient ascent on a utility of throughput,
//! latency gradient and loss.
//!
//! Source: M. Dong, T. Meng, D. Zarchy, E. Arslan, Y. Gilad, P. B. Godfrey, M. Schapira,
//! "PCC Vivace: Online-Learning Congestion Control", USENIX NSDI 2018 (Renton, 9–11 April
//! 2018), §2 (utility, Eq. 1), §3 (rate control: slow start, probing, confidence
//! amplifier, dynamic change boundary). Reference code: `PCCproject/PCC-Uspace`, the
//! QUIC-derived sender in `src/pcc/`: `pcc_vivace_sender.cpp` (decisions, amplifier,
//! bound), `pcc_sender.cpp` (monitor intervals, probing, slow start),
//! `pcc_monitor_interval_queue.cpp` (attribution, when a utility is available) and
//! `pcc_utility_manager.cpp` (utility, RTT gradient and its filters), all read at commit
//! `2ca1811`. (`PCCproject/PCC-Kernel` is Allegro, not Vivace.) Nothing of the reference
//! code is reproduced here; the mechanism is re-implemented from its description below.
//!
//! # Model
//!
//! Time is cut into monitor intervals (MIs), each sent at one rate. An MI is *useful*
//! (evaluated) or a *filler* (sent at the base rate r while results are outstanding).
//! When all packets of every useful MI are acknowledged or lost, each gets the utility
//!
//! ```text
//!   u(x) = x^0.9 − 900·x·dRTT/dt − 11.35·x·L          (NSDI'18 Eq. 1, x in Mbit/s)
//! ```
//!
//! with x the MI's achieved sending rate, L its loss rate and dRTT/dt the least-squares
//! slope of its RTT samples over their send times, kept only when it is positive and
//! stands out of the MI's RTT noise (or the RTT trend over the last 6 MIs is abnormal).
//! Slow start doubles r after every MI whose utility beats the previous one and halves
//! it (back to the last good rate) when not. Probing sends 3 pairs of MIs at r(1+ε) and
//! r(1−ε) (random order within a pair); if the pairs agree, Vivace moves r one step in
//! the better direction and keeps stepping, one MI per step, while the utility keeps
//! improving ("decision made"); the step is θ·γ amplified by the number of consecutive
//! steps and bounded by ω·r, ω growing while steps hit it.
//!
//! # States
//!
//! ```text
//!  init
//!   |   +------------+ u ≤ u_prev: r/2   +------------+  pairs agree: r(1±ε) ± Δ  +---------------+
//!   +-->| SLOW_START |------------------>|  PROBING   |-------------------------->| DECISION_MADE |<-+
//!       | r·2 per MI |<------------------| 3 pairs of |<--------------------------| one MI/step,  |  |
//!       +------------+  r at the floor   | r(1±ε)     |  utility worse: step back | r ± m·θ·γ ≤ ω·r| |
//!                      after a re-probe  +------------+                           +---------------+  |
//!                                         ^  |  pairs disagree: probe again              |  improving |
//!                                         +--+                                            +-----------+
//! ```
//!
//! # Verified constants (reference file in brackets)
//!
//! * t = 0.9, b = 900, c = 11.35 [`pcc_utility_manager.cpp`: `kSendingRateExponent`,
//!   `kLatencyCoefficient`, `kVivaceLossCoefficient`]; x = bytes sent over the MI's
//!   send duration (plus one packet's transmission time), L = bytes lost / bytes sent.
//! * RTT gradient: least-squares slope of the MI's per-packet RTTs over packet number,
//!   divided by the packet spacing at the MI's rate, i.e. dRTT/d(send time) [ibid.,
//!   `ComputeRttGradient`]. It counts only if (a) it exceeds the MI's "regression error"
//!   \[`DetermineToleranceGeneral`\], or (b) the slope of the mean RTTs of the last 6 MIs
//!   leaves its running mean ± 2 running deviations (EWMA weight 0.1) upwards
//!   [`ProcessRttTrend`, `DetermineToleranceInflation`: `kRttHistoryLen` = 6,
//!   `kAlpha` = 0.1, `kInflationToleranceGain*` = 2, reset when the trend falls below
//!   1/100 (`kBeta`) of its smallest magnitude]; negative gradients count as 0, and in
//!   slow start so does a rise below 1 ms over the MI \[`CalculateUtilityProportional`\].
//!   There is no fixed 0.01 tolerance in the reference.
//! * MIs [`pcc_sender.cpp` `CreateNewInterval`, `pcc_monitor_interval_queue.cpp`]: a
//!   useful MI lasts at least min RTT (`monitor_duration_ = min_rtt_ * 1.0`) and until
//!   it has 4 RTT samples of its own packets (`kMinReliableRtt`); fillers last until all
//!   outstanding useful MIs are evaluated; utilities are delivered together once every
//!   useful MI is complete. Useful MIs per phase: 1 in slow start and decision made, 6
//!   (3 pairs, `kNumIntervalGroupsInProbingPrimary`) in probing.
//! * Probing [`pcc_sender.cpp` `MaybeSetSendingRate`, `pcc_vivace_sender.cpp`
//!   `CanMakeDecision`]: ε = 0.05 (`kProbingStepSize`); per pair, the side with the higher
//!   utility votes; a decision needs a majority voting "increase" (≥ 2 of 3) or all 3
//!   voting "decrease", otherwise probing repeats at the same r.
//! * Step [`pcc_vivace_sender.cpp` `EnterDecisionMade`, `ComputeRateChange`]: on a
//!   decision r first moves to the winning probe rate r(1±ε); then Δ = θ·γ with
//!   γ = Δu/Δx: from probing, Δu = sum over the agreeing pairs of their utility gap / 3
//!   and Δx = the first pair's rate gap; in decision made, the gaps to the previous MI.
//!   θ = 1 (`kUtilityGradientToRateChangeFactor`) with rates in units of 2²⁰ bit/s
//!   (`kMegabit` = 1024·1024), i.e. 1.0995 (Mbit/s)² per unit utility in decimal units.
//!   Amplifier m = ⌊(n + 1)/2⌋^1.2 at the n-th consecutive step (`kRateChangeAmplifyExponent`
//!   = 1.2, integer division): 1, 1, 2.30, 2.30, 3.74, 3.74, 5.28, …, applied only to
//!   decision-made steps (the step out of probing has m = 1).
//!   Bound: Δ ≤ r·(0.05 + 0.05·k) (`kInitialMaxStepSize`, `kIncrementalStepSize`); k + 1
//!   when a step is clipped, k − 1 (down to 0) when not, k = 0 after probing. Every step
//!   is at least 0.5 Mbit/s (`kMinRateChange`), r at least 0.5 Mbit/s (`kMinSendingRate`).
//! * Decision made ends at the first MI whose utility moved against the direction; r then
//!   steps back by one (m = 1) step computed from that MI and probing restarts.
//! * Slow start \[`pcc_sender.cpp`\]: r₀ = 10 packets per 100 ms (`kInitialRtt`), scaled by
//!   100 ms / RTT at the first RTT sample when that is shorter; exit halves r. The
//!   RTT-inflation early exit is disabled in the reference (tolerance 100).
//!
//! # Differences from the paper and the reference code
//!
//! 1. **TCP port.** Vivace owns cwnd and pacing through `cong_control` in our Linux TCP
//!    model: packets are paced at the open MI's rate (EDT pacing), the stack
//!    retransmits, and a cwnd cap of `cwnd_gain`·r·min RTT (default 2, at least 4
//!    packets) bounds what is in flight. The reference's sender is rate-only: its
//!    `GetCongestionWindow` is r·min RTT, but the `CanSend` check that would use it
//!    (2.5× that) is unreachable at `2ca1811`. The cap matters: with the reference's
//!    MIs (each waits for RTT samples of its own packets, so it lasts ≥ 1 current RTT)
//!    and negative gradients counting as 0, an overshoot builds a queue that the rate
//!    controller alone neither notices quickly nor drains (on the 12/24 Mbit/s step
//!    link a cap of 2·r·srtt left 2.2 s of queue 3–7 s after the step down).
//! 2. **MI accounting.** Packets are counted, not identified: an MI owns the packets sent
//!    (new or retransmitted) while it was open, i.e. a range of the connection's running
//!    count delivered + lost + in flight; an ACK's newly resolved packets are split over
//!    the MIs whose ranges they fall in (losses first), its RTT sample goes to the MI of
//!    the last one, at send time now − RTT. One RTT sample per ACK, not per packet.
//! 3. **RTT-sample filters.** The reference drops samples taken during ACK bursts (ACK
//!    spacing ratio > 50× its average) and extends an MI once when fewer than 80 % of
//!    its samples are kept; not modelled (every sample is kept). Its "regression error"
//!    is computed against a line whose slope was already rescaled to seconds per second,
//!    so in effect it is the standard deviation of the MI's RTTs over their mean; we
//!    compute that quantity directly.
//! 4. **Paper vs reference.** The paper describes the confidence amplifier and the
//!    dynamic change boundary without the reference's integer-halved amplifier, its
//!    0.5 Mbit/s minimum step or the increase-biased vote; the reference is followed.
//!    The paper's fixed |dRTT/dt| tolerance is replaced by the reference's filters.
//! 5. **RTO** halves r and restarts probing (the reference has no timeouts); fast
//!    recovery does not change r (the utility already counts the loss).

use std::collections::VecDeque;

use cellcc_units::{Dur, NS_PER_S};

use crate::{CaState, CongestionControl, PacingStatus, RateSample, Sock};

/// Smallest window cap, packets: keeps ACKs (and with them the MIs) flowing.
pub const CWND_MIN: u32 = 4;
/// RTT assumed before the first sample (reference `kInitialRtt`, 100 ms).
const RTT_UNKNOWN: Dur = Dur::from_ms(100);
/// Initial rate: 10 packets (Linux's initial window) per [`RTT_UNKNOWN`].
const INIT_PACKETS: f64 = 10.0;
/// Bits per Mbit, for utilities in Mbit/s.
const BITS_PER_MBIT: f64 = 1e6;
/// Slow-start MIs ignore an RTT rise below this over the MI (reference
/// `CalculateUtilityProportional`: 1000 µs / MI duration).
const STARTING_RTT_RISE_S: f64 = 1e-3;
/// Trend filter: EWMA weight (reference `kAlpha`), deviation gain
/// (`kInflationToleranceGain*`) and reset ratio (`kBeta`).
const TREND_ALPHA: f64 = 0.1;
const TREND_GAIN: f64 = 2.0;
const TREND_RESET: f64 = 100.0;

mod config;
pub use config::VivaceConfig;

/// NSDI'18 Eq. 1: u = x^t − b·x·dRTT/dt − c·x·L, x in Mbit/s. `rtt_gradient` is the
/// gradient after the filters (see `Vivace::filtered_gradient`).
pub fn utility(x_mbps: f64, rtt_gradient: f64, loss: f64, cfg: &VivaceConfig) -> f64 {
    x_mbps.powf(cfg.exponent)
        - cfg.latency_coeff * x_mbps * rtt_gradient
        - cfg.loss_coeff * x_mbps * loss
}

/// Confidence amplifier at the `n`-th consecutive decision-made step (reference
/// `ComputeRateChange`: ⌊(n+1)/2⌋^1.2 with integer halving): 1, 1, 2.30, 2.30, 3.74, …
pub fn amplifier(n: u32, exponent: f64) -> f64 {
    f64::from(n.saturating_add(1) / 2).max(1.0).powf(exponent)
}

/// NSDI'18 §3 step with the reference's bound: the change (Mbit/s, ≥ 0) for gradient
/// magnitude `gamma` at rate `r_mbps`, amplifier `m` and bound index `k`. Returns the
/// change and the next k (k + 1 if clipped, else k − 1 down to 0).
pub fn step(r_mbps: f64, gamma: f64, m: f64, k: u32, cfg: &VivaceConfig) -> (f64, u32) {
    let change = cfg.theta * gamma.abs() * m; // Δ = m·θ·γ
    let bound = r_mbps * (cfg.omega0 + cfg.omega_step * f64::from(k)); // dynamic bound ω·r
    let (change, k) = if change > bound {
        (bound, k + 1)
    } else {
        (change, k.saturating_sub(1))
    };
    (change.max(cfg.min_change_mbps), k)
}

mod monitor;
use monitor::{Mi, Regression, Trend};

/// Vivace's phase; every change goes through `Vivace::transition`.
#[derive(Clone, Debug, PartialEq)]
pub enum Phase {
    /// Rate doubles after every improving MI.
    SlowStart {
        /// The last MI's utility.
        last: f64,
    },
    /// A probing round.
    Probing {
        /// The offsets (±ε) of the useful MIs still to send, in sending order.
        plan: VecDeque<f64>,
        /// Consecutive probing rounds without a decision, this one included (from 1).
        rounds: u32,
    },
    /// Stepping in one direction after a probing decision.
    DecisionMade {
        /// +1 to increase the rate, −1 to decrease it.
        direction: f64,
        /// Consecutive steps taken in `direction` (the amplifier's n of the last one).
        rounds: u32,
        /// (Target rate in Mbit/s, utility) of the MI the next one is compared with.
        last: (f64, f64),
    },
}

impl Phase {
    /// Label used in time series and by [`CongestionControl::phase`].
    pub fn name(&self) -> &'static str {
        match self {
            Phase::SlowStart { .. } => "slow_start",
            Phase::Probing { .. } => "probing",
            Phase::DecisionMade { .. } => "decision_made",
        }
    }

    /// Useful MIs per round: 2·pairs in probing, else 1.
    fn useful_mis(&self, pairs: u32) -> usize {
        match self {
            Phase::Probing { .. } => 2 * pairs as usize,
            _ => 1,
        }
    }
}

/// A PCC-Vivace controller. Build with [`Vivace::new`]; the stack then calls `init`.
#[derive(Clone, Debug)]
pub struct Vivace {
    config: VivaceConfig,
    phase: Phase,
    /// The base (central) rate r, bytes/s.
    rate: f64,
    /// MIs not yet evaluated, oldest first; the last one is open.
    mis: VecDeque<Mi>,
    /// Bound index k of the dynamic change boundary.
    bound_k: u32,
    /// Smallest RTT seen (the MI length).
    min_rtt: Option<Dur>,
    trend: Trend,
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

/// A probing pair's vote (reference `CanMakeDecision`): true for "increase" when the
/// side with the higher utility has the higher rate (ties vote for the first MI's
/// opposite side, as in the reference).
fn votes_increase(a: (f64, f64), b: (f64, f64)) -> bool {
    if a.1 > b.1 {
        a.0 > b.0
    } else {
        a.0 < b.0
    }
}

impl Vivace {
    /// A controller in slow start; `init` sets the first base rate.
    pub fn new(config: VivaceConfig) -> Self {
        Vivace {
            phase: Phase::SlowStart { last: 0.0 },
            rate: 0.0,
            mis: VecDeque::new(),
            bound_k: 0,
            min_rtt: None,
            trend: Trend::default(),
            rng: config.seed,
            steps: 0,
            config,
        }
    }

    /// The current phase.
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

    /// Every phase change goes through here.
    fn transition(&mut self, to: Phase) {
        debug_assert!(
            matches!(
                (&self.phase, &to),
                (_, Phase::Probing { .. })
                    | (Phase::Probing { .. }, Phase::DecisionMade { .. })
                    | (Phase::DecisionMade { .. }, Phase::DecisionMade { .. })
                    | (Phase::Probing { .. }, Phase::SlowStart { .. })
                    | (Phase::SlowStart { .. }, Phase::SlowStart { .. })
            ),
            "illegal Vivace transition {} -> {}",
            self.phase.name(),
            to.name()
        );
        self.phase = to;
    }

    /// A new probing round around r (NSDI'18 §3; reference `MaybeSetSendingRate`): each
    /// pair sends r(1+ε) and r(1−ε) in random order.
    fn start_probing(&mut self, rounds: u32) {
        let eps = self.config.epsilon;
        let mut plan = VecDeque::new();
        for _ in 0..self.config.probe_pairs {
            let up_first = next_random(&mut self.rng) & 1 == 1;
            let first = if up_first { eps } else { -eps };
            plan.push_back(first);
            plan.push_back(-first);
        }
        self.transition(Phase::Probing { plan, rounds });
    }

    /// `cong_control`: the per-ACK recipe.
    fn on_ack(&mut self, sock: &mut Sock, rs: &RateSample) {
        self.update_rtt(rs);
        self.attribute_ack(sock, rs);
        self.evaluate_completed(sock);
        self.rotate_mi(sock);
        self.set_pacing_rate(sock);
        self.set_cwnd(sock);
    }

    /// Track the min RTT; at the first sample, scale the initial rate to the path's
    /// RTT (reference `OnCongestionEvent`: r·100 ms/RTT when the RTT is shorter).
    fn update_rtt(&mut self, rs: &RateSample) {
        let Some(rtt) = rs.rtt.filter(|r| !r.is_zero()) else {
            return;
        };
        if self.min_rtt.is_none() && rtt < RTT_UNKNOWN {
            self.rate *= RTT_UNKNOWN.as_secs_f64() / rtt.as_secs_f64();
        }
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
    }

    /// Difference 2: split this ACK's newly resolved packets over the MIs holding them
    /// (losses first) and give its RTT sample to the MI of the last one.
    fn attribute_ack(&mut self, sock: &Sock, rs: &RateSample) {
        let resolved = resolved_count(sock);
        let lost = u64::from(rs.losses);
        let newly = u64::from(rs.acked_sacked) + lost;
        let first = resolved.saturating_sub(newly);
        for mi in self.mis.iter_mut() {
            let end = mi.sent_end.unwrap_or(u64::MAX);
            let (lo, hi) = (first.max(mi.sent_start), resolved.min(end));
            if lo >= hi {
                continue;
            }
            let lost_here = (first + lost).clamp(lo, hi) - lo;
            mi.lost += lost_here;
            mi.delivered += hi - lo - lost_here;
        }
        let Some(rtt) = rs.rtt.filter(|_| rs.acked_sacked > 0) else {
            return;
        };
        let last = resolved.saturating_sub(1);
        if let Some(mi) = self.mis.iter_mut().find(|m| m.contains(last)) {
            // The sample's x is its packet's send time (reference: packet number times
            // the MI's packet spacing), relative to the MI start.
            let sent = sock.now.as_secs_f64() - rtt.as_secs_f64() - mi.start.as_secs_f64();
            mi.rtts.add(sent, rtt.as_secs_f64());
        }
    }

    /// Reference `OnCongestionEvent` of the MI queue: once every useful MI is complete,
    /// compute their utilities in order and act on them together.
    fn evaluate_completed(&mut self, sock: &Sock) {
        let resolved = resolved_count(sock);
        let expected = self.phase.useful_mis(self.config.probe_pairs);
        let useful: Vec<&Mi> = self.mis.iter().filter(|m| m.useful.is_some()).collect();
        if useful.len() < expected || !useful.iter().all(|m| m.complete(resolved)) {
            return;
        }
        let min_samples = f64::from(self.config.min_mi_rtt_samples);
        let mis: Vec<Mi> = useful.into_iter().cloned().collect();
        debug_assert!(mis.iter().all(|m| m.rtts.n >= min_samples));
        let results: Vec<(f64, f64)> = mis
            .iter()
            .map(|mi| {
                let g = self.filtered_gradient(mi);
                let x = mi.x_mbps(sock.mss);
                (Self::mbps(mi.rate), utility(x, g, mi.loss(), &self.config))
            })
            .collect();
        // Reference: the queue drops everything up to the last useful MI.
        self.mis.retain(|m| m.end.is_none());
        self.on_utilities(&results);
    }

    /// The RTT gradient as the utility uses it (reference `PrepareStatistics` and
    /// `CalculateUtilityProportional`): the MI's slope, kept only if it exceeds the
    /// MI's relative RTT deviation or the RTT trend is abnormally rising; 0 if negative,
    /// and in slow start 0 if the rise over the MI is below 1 ms.
    fn filtered_gradient(&mut self, mi: &Mi) -> f64 {
        if mi.rtts.n < 2.0 {
            return 0.0;
        }
        let slope = mi.rtts.slope();
        let mut counts = mi.rtts.relative_deviation() < slope.abs();
        let window = self.config.trend_mis as usize;
        if self.trend.inflated(mi.rtts.mean() * 1e6, window) {
            counts = true;
        }
        if !counts || slope < 0.0 {
            return 0.0;
        }
        if mi.starting && slope * mi.duration_s() < STARTING_RTT_RISE_S {
            return 0.0;
        }
        slope
    }

    /// React to the utilities of one round's useful MIs, `(target Mbit/s, u)` in order.
    fn on_utilities(&mut self, results: &[(f64, f64)]) {
        match self.phase.clone() {
            Phase::SlowStart { last } => {
                let u = results[0].1;
                if u > last {
                    // NSDI'18 §3: double while the utility grows.
                    self.rate *= 2.0;
                    self.transition(Phase::SlowStart { last: u });
                } else {
                    // Back to the last improving rate, then probe.
                    self.rate /= 2.0;
                    self.start_probing(1);
                }
            }
            Phase::Probing { rounds, .. } => self.on_probing_results(results, rounds),
            Phase::DecisionMade {
                direction,
                rounds,
                last,
            } => {
                let (x, u) = results[0];
                // Keep going while the utility moved with the rate in `direction`.
                if (u - last.1) * (x - last.0) * direction > 0.0 {
                    let rounds = rounds + 1;
                    let m = amplifier(rounds, self.config.amplifier_exponent);
                    let gamma = Self::gradient_between((x, u), last);
                    self.apply_step(direction, gamma, m);
                    if self.floor_reached() {
                        self.start_probing(1);
                    } else {
                        self.transition(Phase::DecisionMade {
                            direction,
                            rounds,
                            last: (x, u),
                        });
                    }
                } else {
                    // Step back once (m = 1), then probe again.
                    let gamma = Self::gradient_between((x, u), last);
                    self.apply_step(-direction, gamma, 1.0);
                    self.floor_reached();
                    self.start_probing(1);
                }
            }
        }
    }

    /// Reference `CanMakeDecision`, `SetRateChangeDirection`, `EnterDecisionMade`.
    fn on_probing_results(&mut self, results: &[(f64, f64)], rounds: u32) {
        let pairs: Vec<((f64, f64), (f64, f64))> =
            results.chunks_exact(2).map(|p| (p[0], p[1])).collect();
        let n = pairs.len();
        let up = pairs.iter().filter(|(a, b)| votes_increase(*a, *b)).count();
        let down = n - up;
        // Increase on a majority, decrease only when unanimous.
        if up > n / 2 || down == n {
            let direction = if up > down { 1.0 } else { -1.0 };
            let agrees = |a, b| votes_increase(a, b) == (direction > 0.0);
            let mut last = (0.0, 0.0);
            let mut du = 0.0;
            for &(a, b) in &pairs {
                if agrees(a, b) {
                    last = if a.1 > b.1 { a } else { b };
                    du += (a.1 - b.1).abs();
                }
            }
            let dx = (pairs[0].0 .0 - pairs[0].1 .0).abs();
            let gamma = if dx > 1e-9 { du / n as f64 / dx } else { 0.0 };
            // Move to the better probe rate, then take the first step (m = 1, k = 0).
            self.rate *= 1.0 + direction * self.config.epsilon;
            self.bound_k = 0;
            self.apply_step(direction, gamma, 1.0);
            if self.floor_reached() {
                self.start_probing(1);
            } else {
                self.transition(Phase::DecisionMade {
                    direction,
                    rounds: 1,
                    last,
                });
            }
        } else {
            // No decision: probe again around the same r; at the floor, slow start.
            let floor = Self::bytes_per_s(self.config.min_rate_mbps);
            if self.rate <= floor {
                self.rate = floor;
                self.bound_k = 0;
                self.transition(Phase::SlowStart { last: 0.0 });
            } else {
                self.start_probing(rounds + 1);
            }
        }
    }

    /// |Δu/Δx| between two (rate, utility) points.
    fn gradient_between(a: (f64, f64), b: (f64, f64)) -> f64 {
        let dx = (a.0 - b.0).abs();
        if dx > 1e-9 {
            (a.1 - b.1).abs() / dx
        } else {
            0.0
        }
    }

    /// r moves by one bounded, amplified step in `direction`.
    fn apply_step(&mut self, direction: f64, gamma: f64, m: f64) {
        let r = Self::mbps(self.rate);
        let (change, k) = step(r, gamma, m, self.bound_k, &self.config);
        self.bound_k = k;
        self.rate = Self::bytes_per_s(r + direction * change);
        self.steps += 1;
    }

    /// Clamp r to the floor; true (and the bound reset) if it was below.
    fn floor_reached(&mut self) -> bool {
        let floor = Self::bytes_per_s(self.config.min_rate_mbps);
        if self.rate < floor {
            self.rate = floor;
            self.bound_k = 0;
            true
        } else {
            false
        }
    }

    /// Reference `CreateNewInterval`: close the open MI and open the next when due.
    fn rotate_mi(&mut self, sock: &Sock) {
        let useful = self.mis.iter().filter(|m| m.useful.is_some()).count();
        let due = match (self.mis.back(), self.min_rtt) {
            (None, _) => true,
            // No new MI before the first RTT sample.
            (Some(_), None) => false,
            // No useful MI outstanding: start one.
            (Some(_), Some(_)) if useful == 0 => true,
            // A filler lasts until the useful MIs are evaluated.
            (Some(mi), _) if mi.useful.is_none() => false,
            // A useful MI lasts min RTT and until 4 of its packets have RTT samples.
            (Some(mi), Some(min_rtt)) => {
                mi.rtts.n >= f64::from(self.config.min_mi_rtt_samples)
                    && sock.now >= mi.start + min_rtt
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
        let offset =
            if self.min_rtt.is_some() && useful < self.phase.useful_mis(self.config.probe_pairs) {
                Some(match &mut self.phase {
                    Phase::Probing { plan, .. } => plan.pop_front().unwrap_or(0.0),
                    _ => 0.0,
                })
            } else {
                None
            };
        self.mis.push_back(Mi {
            useful: offset,
            starting: matches!(self.phase, Phase::SlowStart { .. }),
            rate: self.rate * (1.0 + offset.unwrap_or(0.0)),
            start: sock.now,
            end: None,
            sent_start: sent,
            sent_end: None,
            delivered: 0,
            lost: 0,
            rtts: Regression::default(),
        });
    }

    /// The open MI's rate.
    fn current_rate(&self) -> f64 {
        self.mis.back().map_or(self.rate, |m| m.rate)
    }

    fn set_pacing_rate(&self, sock: &mut Sock) {
        sock.pacing_rate = (self.current_rate() as u64).clamp(1, sock.max_pacing_rate.max(1));
    }

    /// Difference 1: cwnd = max(4, cwnd_gain·rate·min RTT).
    fn set_cwnd(&self, sock: &mut Sock) {
        let rtt = self.min_rtt.unwrap_or(RTT_UNKNOWN);
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

    fn cong_control(&mut self, sock: &mut Sock, rs: &RateSample) {
        self.on_ack(sock, rs);
    }

    fn owns_cwnd(&self) -> bool {
        true
    }

    /// Difference 5: an RTO halves the rate and restarts probing.
    fn set_state(&mut self, sock: &mut Sock, new_state: CaState) {
        if new_state == CaState::Loss && sock.ca_state != CaState::Loss {
            self.rate /= 2.0;
            self.floor_reached();
            self.bound_k = 0;
            self.start_probing(1);
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
mod tests;
