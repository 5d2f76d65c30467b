//! TCP Vegas, as Linux 6.x runs it (`net/ipv4/tcp_vegas.c`).
//!
//! Sources:
//! - L. S. Brakmo, L. L. Peterson, "TCP Vegas: End to End Congestion Avoidance on a
//!   Global Internet", IEEE JSAC 13(8), October 1995, §3.2 (congestion avoidance) and
//!   §3.3 (modified slow start).
//! - Linux `net/ipv4/tcp_vegas.c`, 6.x (`tcp_vegas_cong_avoid`, `tcp_vegas_pkts_acked`,
//!   `tcp_vegas_state`, `tcp_vegas_cwnd_event`); loss handling is Reno's
//!   (`tcp_reno_ssthresh`, `tcp_reno_undo_cwnd`).
//!
//! Model. `baseRTT` is the smallest RTT ever seen (the propagation delay). Once per RTT,
//! with `rtt` the smallest sample of the last RTT, Vegas estimates how many of its
//! packets sit in queues: `diff = cwnd·(rtt − baseRTT)/baseRTT` (JSAC §3.2:
//! `Diff = (Expected − Actual)·BaseRTT`). In congestion avoidance it adds one packet
//! per RTT while `diff < alpha`, removes one while `diff > beta`, and holds in between,
//! so 2–4 packets stay queued at the bottleneck. In slow start it doubles per RTT until
//! `diff > gamma`, then sets cwnd to the rate actually achieved (`cwnd·baseRTT/rtt + 1`)
//! and leaves slow start. Losses are handled as by Reno.
//!
//! ```text
//!               RTT with > gamma queued: cwnd := cwnd·baseRTT/rtt + 1
//!   slow_start -----------------------------------------------> congestion avoidance
//!     (per ACK: +acked)                                        (once per RTT:)
//!       ^                                                        diff < alpha: +1
//!       | RTO / recovery: Vegas off (Reno) until Open again      alpha..=beta: hold
//!       +--------------------------------------------------------diff > beta:  -1
//! ```
//! Vegas is "off" (plain Reno growth) outside the Open state; re-entering Open, an idle
//! restart and connection start wait one full RTT of fresh samples before deciding.
//!
//! Differences from the paper (all inherited from Linux):
//! 1. The "actual" rate uses the minimum RTT of the last RTT rather than the mean of the
//!    RTTs of a distinguished segment, to filter delayed ACKs.
//! 2. Slow start grows every RTT (not every other RTT) and exits to the rate actually
//!    achieved (`target + 1`) instead of reducing cwnd by one eighth.
//! 3. Vegas decides only when the last RTT gave at least 3 RTT samples; with fewer it
//!    grows as Reno for that ACK.
//! 4. Loss detection and recovery are Linux's (SACK/RACK + PRR), not Vegas's
//!    fine-grained timeout checks; the window after a loss is Reno's half.
//! 5. Between once-per-RTT decisions congestion avoidance does not grow cwnd at all,
//!    and there is no cwnd-limited check on the Vegas path.
//!
//! Differences from Linux:
//! 1. `diff` and `target_cwnd` are computed in 64 bits: Linux's 32-bit `cwnd·(rtt −
//!    baseRTT)` wraps once it exceeds 2^32 (e.g. cwnd 1000 with 4.3 s of queueing).
//! 2. Windows and sequence numbers count segments, not bytes.
//! 3. Parameters are per connection and validated (`alpha ≤ beta`); Linux's module
//!    parameters are global and unchecked.

#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

use crate::reno::NewReno;
use crate::{AckSample, CaEvent, CaState, ConfigError, CongestionControl, Sock};

/// "No RTT yet" for `baseRTT` and the per-RTT minimum (`0x7fffffff` in Linux).
const NO_RTT_US: u32 = 0x7fff_ffff;
/// RTT samples a round needs before Vegas trusts it: with only 1–2 ACKs per RTT they
/// are almost surely delayed ACKs (`cntRTT <= 2` in `tcp_vegas_cong_avoid`).
const MIN_SAMPLES_PER_RTT: u32 = 3;
/// Smallest cwnd Vegas sets, packets (`tcp_vegas_cong_avoid` clamps at 2).
const MIN_CWND: u32 = 2;

/// Vegas's parameters, named and defaulted as Linux's `tcp_vegas` module parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VegasConfig {
    /// Fewer than this many packets queued: cwnd += 1 per RTT (`alpha`, default 2).
    pub alpha: u32,
    /// More than this many packets queued: cwnd −= 1 per RTT (`beta`, default 4).
    pub beta: u32,
    /// Leave slow start once more than this many packets are queued (`gamma`,
    /// default 1).
    pub gamma: u32,
}

impl Default for VegasConfig {
    /// Linux 6.x defaults.
    fn default() -> Self {
        VegasConfig {
            alpha: 2,
            beta: 4,
            gamma: 1,
        }
    }
}

impl VegasConfig {
    /// `alpha ≤ beta`, or the hold band is empty and cwnd oscillates every RTT.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.alpha > self.beta {
            return Err(ConfigError {
                scheme: "vegas",
                field: "beta".into(),
                reason: format!(
                    "{} is below alpha = {}; the queue target band [alpha, beta] must not be empty",
                    self.beta, self.alpha
                ),
            });
        }
        Ok(())
    }
}

/// What the last `cong_avoid` did (observation only; reported by `phase`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Decision {
    /// Reno growth: Vegas off, or too few RTT samples in the last RTT.
    #[default]
    Reno,
    /// Slow start (per ACK, or the once-per-RTT check found ≤ gamma queued).
    SlowStart,
    /// Slow start ended: cwnd set to the achieved rate.
    LeaveSlowStart,
    /// diff < alpha: cwnd += 1.
    Increase,
    /// alpha ≤ diff ≤ beta.
    Hold,
    /// diff > beta: cwnd −= 1.
    Decrease,
}

/// A Vegas controller; fields mirror Linux's `struct vegas`.
#[derive(Clone, Debug)]
pub struct Vegas {
    cfg: VegasConfig,
    /// `doing_vegas_now`: decisions are on (Open state, after a fresh round started).
    doing_vegas_now: bool,
    /// `beg_snd_nxt`: the decision is due once `snd_una` passes this.
    beg_snd_nxt: u64,
    /// `baseRTT`: min of all `rtt + 1 µs` samples since init.
    base_rtt_us: u32,
    /// `minRTT`: min of this RTT's samples, µs (+1).
    min_rtt_us: u32,
    /// `cntRTT`: samples this RTT.
    cnt_rtt: u32,
    /// Reno, for the fallback growth (and its phase label).
    reno: NewReno,
    decision: Decision,
    /// Packets queued at the last decision (`diff`), for reports.
    last_diff: Option<u64>,
}

impl Vegas {
    /// A controller with `cfg`. Every value is safe to run; [`VegasConfig::validate`]
    /// only rejects meaningless combinations from scenario files.
    pub fn new(cfg: VegasConfig) -> Self {
        Vegas {
            cfg,
            doing_vegas_now: false,
            beg_snd_nxt: 0,
            base_rtt_us: NO_RTT_US,
            min_rtt_us: NO_RTT_US,
            cnt_rtt: 0,
            reno: NewReno::new(),
            decision: Decision::Reno,
            last_diff: None,
        }
    }

    /// The parameters this controller runs with.
    pub fn config(&self) -> &VegasConfig {
        &self.cfg
    }

    /// `baseRTT` in µs (+1 µs as Linux stores it), if a sample was seen.
    pub fn base_rtt_us(&self) -> Option<u32> {
        (self.base_rtt_us != NO_RTT_US).then_some(self.base_rtt_us)
    }

    /// `vegas_enable`: start a fresh round of samples; decide after it.
    fn enable(&mut self, sock: &Sock) {
        self.doing_vegas_now = true;
        self.beg_snd_nxt = sock.snd_nxt;
        self.cnt_rtt = 0;
        self.min_rtt_us = NO_RTT_US;
    }

    /// `tcp_vegas_init`: forget baseRTT too.
    fn restart(&mut self, sock: &Sock) {
        self.base_rtt_us = NO_RTT_US;
        self.enable(sock);
    }

    fn reno_step(&mut self, sock: &mut Sock, acked: u32) {
        self.decision = Decision::Reno;
        self.reno.cong_avoid(sock, acked);
    }

    /// The once-per-RTT decision from `rtt` (this RTT's min) against `baseRTT`.
    fn decide(&mut self, sock: &mut Sock, acked: u32) {
        let rtt = u64::from(self.min_rtt_us);
        let base = u64::from(self.base_rtt_us);
        let cwnd = u64::from(sock.cwnd);
        // Expected·baseRTT = cwnd; Actual·baseRTT = cwnd·baseRTT/rtt (JSAC §3.2).
        let target_cwnd = cwnd * base / rtt;
        // JSAC §3.2: Diff = (Expected − Actual)·BaseRTT, packets queued.
        let diff = cwnd * rtt.saturating_sub(base) / base;
        self.last_diff = Some(diff);

        if diff > u64::from(self.cfg.gamma) && sock.in_slow_start() {
            // JSAC §3.3 (Linux variant): leave slow start at the achieved rate, +1 for
            // the integer truncation.
            self.decision = Decision::LeaveSlowStart;
            sock.cwnd = sock.cwnd.min((target_cwnd as u32).saturating_add(1));
            sock.ssthresh = sock.ssthresh.min(sock.cwnd);
        } else if sock.in_slow_start() {
            self.decision = Decision::SlowStart;
            sock.slow_start(acked);
        } else if diff > u64::from(self.cfg.beta) {
            // JSAC §3.2: Diff > β → decrease linearly.
            self.decision = Decision::Decrease;
            sock.cwnd -= 1;
            sock.ssthresh = sock.ssthresh.min(sock.cwnd);
        } else if diff < u64::from(self.cfg.alpha) {
            // JSAC §3.2: Diff < α → increase linearly.
            self.decision = Decision::Increase;
            sock.cwnd += 1;
        } else {
            self.decision = Decision::Hold;
        }
        sock.cwnd = sock.cwnd.clamp(MIN_CWND, sock.cwnd_clamp.max(MIN_CWND));
        sock.ssthresh = sock.current_ssthresh();
    }
}

impl Default for Vegas {
    fn default() -> Self {
        Vegas::new(VegasConfig::default())
    }
}

impl CongestionControl for Vegas {
    fn name(&self) -> &'static str {
        "vegas"
    }

    /// `tcp_vegas_init`.
    fn init(&mut self, sock: &mut Sock) {
        self.restart(sock);
    }

    /// `tcp_reno_ssthresh`.
    fn ssthresh(&mut self, sock: &Sock) -> u32 {
        self.reno.ssthresh(sock)
    }

    /// `tcp_vegas_cong_avoid`.
    fn cong_avoid(&mut self, sock: &mut Sock, acked: u32) {
        if !self.doing_vegas_now {
            self.reno_step(sock, acked);
            return;
        }
        // `after(ack, beg_snd_nxt)`: the round that began at beg_snd_nxt is acked.
        if sock.snd_una > self.beg_snd_nxt {
            self.beg_snd_nxt = sock.snd_nxt;
            if self.cnt_rtt < MIN_SAMPLES_PER_RTT {
                self.reno_step(sock, acked);
            } else {
                self.decide(sock, acked);
            }
            self.cnt_rtt = 0;
            self.min_rtt_us = NO_RTT_US;
        } else if sock.in_slow_start() {
            self.decision = Decision::SlowStart;
            sock.slow_start(acked);
        }
    }

    /// `tcp_vegas_pkts_acked`: feed baseRTT and this RTT's minimum.
    fn pkts_acked(&mut self, _sock: &mut Sock, sample: &AckSample) {
        let Some(rtt) = sample.rtt else { return };
        // Never a zero RTT: Linux adds 1 µs.
        let vrtt = u32::try_from(rtt.as_us())
            .unwrap_or(u32::MAX)
            .saturating_add(1)
            .min(NO_RTT_US);
        self.base_rtt_us = self.base_rtt_us.min(vrtt);
        self.min_rtt_us = self.min_rtt_us.min(vrtt);
        self.cnt_rtt += 1;
    }

    /// `tcp_vegas_state`: Vegas runs only in Open; re-entering Open starts a fresh round.
    fn set_state(&mut self, sock: &mut Sock, new_state: CaState) {
        if new_state == CaState::Open {
            self.enable(sock);
        } else {
            self.doing_vegas_now = false;
        }
    }

    /// `tcp_vegas_cwnd_event`: after idle, start over (baseRTT included).
    fn cwnd_event(&mut self, sock: &mut Sock, event: CaEvent) {
        if matches!(event, CaEvent::CwndRestart | CaEvent::TxStart) {
            self.restart(sock);
        }
    }

    // `undo_cwnd` is the trait's default, `tcp_reno_undo_cwnd`.

    /// The last growth decision: `"reno"` (Vegas off or too few samples),
    /// `"slow_start"`, `"leave_slow_start"`, `"increase"`, `"hold"`, `"decrease"`.
    fn phase(&self) -> &'static str {
        match self.decision {
            Decision::Reno => "reno",
            Decision::SlowStart => "slow_start",
            Decision::LeaveSlowStart => "leave_slow_start",
            Decision::Increase => "increase",
            Decision::Hold => "hold",
            Decision::Decrease => "decrease",
        }
    }

    /// `base_rtt_ms` (baseRTT) and `diff_pkts` (packets queued at the last decision).
    fn info(&self) -> Vec<(&'static str, f64)> {
        let mut v = Vec::new();
        if let Some(b) = self.base_rtt_us() {
            v.push(("base_rtt_ms", f64::from(b) / 1000.0));
        }
        if let Some(d) = self.last_diff {
            v.push(("diff_pkts", d as f64));
        }
        v
    }
}
