//! BBR v1 congestion control, reproducing Linux 6.x `net/ipv4/tcp_bbr.c`.
//!
//! Sources: "BBR: Congestion-Based Congestion Control", ACM Queue 14(5), 2016; the
//! ICCRG Internet-Draft "BBR Congestion Control", revision 00 (3 July 2017); and the
//! Linux 6.x module, whose per-ACK semantics, hook interplay and fixed-point
//! arithmetic this implementation follows line for line.
//!
//! # Model
//!
//! BBR measures the path instead of reacting to loss, and paces to the measurement:
//!
//! ```text
//! bw          = windowed max of (delivered / interval) over the last 10 rounds
//! min_rtt     = windowed min of RTT samples over the last 10 s
//! pacing_rate = pacing_gain * bw * 99 %
//! cwnd        = max(ceil(cwnd_gain * bw * min_rtt) + extra_acked + 3 * tso_goal, 4)
//! ```
//!
//! Units are the kernel's: bandwidth in packets per µs scaled by 2^24 ([`BW_UNIT`]),
//! gains scaled by 2^8 ([`BBR_UNIT`]), cwnd in packets, pacing rate in bytes per second,
//! the min-RTT and PROBE_RTT timers in jiffies (`sock.hz`).
//!
//! # States
//!
//! ```text
//!      init
//!       |
//!       v         pipe full               inflight <= BDP
//!  +---------+  (3 rounds < +25 %)   +-------+  (queue drained)   +----------+
//!  | STARTUP |---------------------->| DRAIN |------------------->| PROBE_BW |---+
//!  +---------+                       +-------+                    +----------+   | lt_bw
//!    ^     |                             |                          ^    |  ^    | expired:
//!    |     |  min_rtt expired (10 s)     |                          |    |  +----+ new cycle
//!    |     v                             v                          |    v
//!  +--------------------------------------------------------------------------+
//!  |     PROBE_RTT: cwnd <= 4 for max(200 ms, 1 round), then restore cwnd     |
//!  +--------------------------------------------------------------------------+
//!    pipe never filled: back to STARTUP             pipe full: back to PROBE_BW
//! ```
//!
//! STARTUP paces at 2/ln 2 ≈ 2.89× the estimate so the delivery rate doubles each round;
//! once three rounds grow it by less than 25 % the pipe is full and DRAIN paces at the
//! inverse gain until the queue it built is gone. PROBE_BW then cycles the pacing gain
//! through eight phases `[5/4, 3/4, 1, 1, 1, 1, 1, 1]` of about one min_rtt each, to
//! probe for bandwidth and give it back. If min_rtt has not been refreshed for 10 s,
//! PROBE_RTT drains the queue to measure it again.
//!
//! # Differences from Linux `tcp_bbr.c`
//!
//! 1. **Cycle start.** The kernel picks the first PROBE_BW phase with
//!    `get_random_u32_below(7)`. This crate reads no RNG: each entry to PROBE_BW draws
//!    from a SplitMix64 stream seeded by [`BbrConfig::cycle_seed`], which the simulator
//!    derives from the flow's seed. Same distribution; never the 3/4 phase.
//! 2. **Earliest departure time.** `packets_in_net_at_edt` reads the stack's
//!    `sock.wstamp` (`tcp_wstamp_ns`) as the kernel does; with the simulator's EDT
//!    pacer it is the release time of the next paced packet.
//! 3. **TSO.** The TSO goal is computed as the kernel does (1.2 Mbit/s threshold,
//!    `pacing_rate >> 10`, at most 127 segments), so the cwnd keeps the kernel's
//!    `3 * tso_goal` term; the simulator's sender sends its paced bursts of
//!    `tcp_tso_segs` segments with the minimum from `min_tso_segs`. `sock.tso_segs` is
//!    not read.
//! 4. **Integer widths.** Delivered/lost counters and jiffies are 64-bit (no 32-bit
//!    wrap). Products that are 64-bit in the kernel are 128-bit here and results
//!    saturate instead of wrapping; `extra_acked` saturates at 65 535 instead of being
//!    truncated to 16 bits. Results agree wherever the kernel does not overflow.
//! 5. **Invalid samples.** The kernel marks an invalid rate sample with
//!    `interval_us = -1` (and `delivered = -1`); here `rs.interval` is `None` or under
//!    1 µs, and the stack reports `rs.delivered = 0` for such samples.
//! 6. **Parameters** are a runtime [`BbrConfig`] instead of compile-time constants; the
//!    kernel's bitfield widths are enforced by [`BbrConfig::validate`] instead of by
//!    wrapping.
//! 7. **Hooks** `sndbuf_expand` and `get_info` do not exist in [`CongestionControl`].

mod ack_aggregation;
mod config;
mod cwnd;
mod drain;
mod lt_bw;
mod pacing;
mod probe_bw;
mod probe_rtt;
mod startup;

#[cfg(test)]
mod tests;

pub use config::BbrConfig;

use crate::minmax::Minmax;
use crate::{CaEvent, CaState, CongestionControl, Dur, RateSample, Sock};
use ack_aggregation::AckAggregation;
use lt_bw::LtBw;
use probe_bw::CycleRng;

/// Bandwidth fixed-point shift: bw is packets per µs × 2^24 (`BW_SCALE`). One unit is
/// ~0.06 packets/s (~715 bit/s at 1500-byte packets); a `u32` covers up to 256
/// packets/µs (~3 Tbit/s).
pub const BW_SCALE: u32 = 24;
/// `BW_UNIT`: 1.0 packet per µs.
pub const BW_UNIT: u64 = 1 << BW_SCALE;
/// Gain fixed-point shift: gains are × 2^8 (`BBR_SCALE`).
pub const BBR_SCALE: u32 = 8;
/// `BBR_UNIT`: a gain of 1.0.
pub const BBR_UNIT: u32 = 1 << BBR_SCALE;
/// `TCP_INIT_CWND` (`include/net/tcp.h`): the cwnd cap before any RTT sample, and the
/// number of packets STARTUP grows through regardless of its target.
const TCP_INIT_CWND: u32 = 10;

/// BBR's state machine (`enum bbr_mode`), each state carrying its own data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Ramp up at `high_gain` until the bandwidth estimate stops growing.
    Startup,
    /// Pace at `drain_gain` until the queue STARTUP built has drained.
    Drain,
    /// Steady state: cycle the pacing gain to probe for bandwidth and yield it.
    ProbeBw {
        /// Phase of the gain cycle `[5/4, 3/4, 1, 1, 1, 1, 1, 1]`, 0..8 (`cycle_idx`).
        cycle_idx: usize,
        /// `delivered_mstamp` when this phase started, µs (`cycle_mstamp`).
        cycle_mstamp_us: u64,
    },
    /// cwnd at `cwnd_min_target` to drain the queue and re-measure min_rtt.
    ProbeRtt {
        /// Jiffies after which PROBE_RTT may end; `None` until inflight first reaches
        /// the cwnd floor (`probe_rtt_done_stamp`, where the kernel uses 0 for unset).
        done_stamp: Option<u64>,
        /// A packet-timed round has passed at the floor (`probe_rtt_round_done`).
        round_done: bool,
    },
}

impl Mode {
    /// Label used in time series and by [`CongestionControl::phase`].
    pub fn name(&self) -> &'static str {
        match self {
            Mode::Startup => "startup",
            Mode::Drain => "drain",
            Mode::ProbeBw { .. } => "probe_bw",
            Mode::ProbeRtt { .. } => "probe_rtt",
        }
    }
}

/// A BBR v1 controller (`struct bbr`). Build with [`Bbr::new`]; the stack then calls
/// [`CongestionControl::init`], which (re)initialises every field from the socket.
#[derive(Clone, Debug)]
pub struct Bbr {
    config: BbrConfig,
    /// Current state and its data (`mode`, `cycle_idx`, `cycle_mstamp`,
    /// `probe_rtt_done_stamp`, `probe_rtt_round_done`).
    mode: Mode,
    /// Max recent delivery rate, packets per µs << 24, over `bw_rtts` rounds (`bw`).
    bw: Minmax,
    /// Packet-timed rounds elapsed (`rtt_cnt`).
    rtt_cnt: u32,
    /// `sock.delivered` at which the current round ends (`next_rtt_delivered`).
    next_rtt_delivered: u64,
    /// This ACK started a new packet-timed round (`round_start`).
    round_start: bool,
    /// Min RTT in the `min_rtt_win_sec` window, µs; `u32::MAX` before any sample
    /// (`min_rtt_us`).
    min_rtt_us: u32,
    /// When `min_rtt_us` was taken, jiffies (`min_rtt_stamp`).
    min_rtt_stamp: u64,
    /// Current pacing gain, × 1/256 (`pacing_gain`). Stored, not derived from `mode`:
    /// the cycle-phase and drain checks read the value set by the previous ACK, before
    /// `update_gains` runs, exactly as in the kernel.
    pacing_gain: u32,
    /// Current cwnd gain, × 1/256 (`cwnd_gain`).
    cwnd_gain: u32,
    /// STARTUP has filled the pipe; never cleared until `init` (`full_bw_reached`).
    full_bw_reached: bool,
    /// Bandwidth at the last significant growth, to detect a full pipe (`full_bw`).
    full_bw: u32,
    /// Rounds without significant growth (`full_bw_cnt`).
    full_bw_cnt: u32,
    /// cwnd to restore after loss recovery or PROBE_RTT (`prior_cwnd`).
    prior_cwnd: u32,
    /// TCP congestion state seen on the previous ACK (`prev_ca_state`).
    prev_ca_state: CaState,
    /// First round of fast recovery: send one packet per packet acked
    /// (`packet_conservation`).
    packet_conservation: bool,
    /// Restarting after idle, until data is next acked (`idle_restart`).
    idle_restart: bool,
    /// The initial pacing rate was computed from a real RTT sample (`has_seen_rtt`).
    has_seen_rtt: bool,
    /// Long-term (policer) bandwidth model (`lt_*`).
    lt: LtBw,
    /// ACK-aggregation estimator (`ack_epoch_*`, `extra_acked*`).
    ack_aggr: AckAggregation,
    /// Source of the PROBE_BW starting phases (replaces the kernel RNG).
    cycle_rng: CycleRng,
}

impl Default for Bbr {
    fn default() -> Self {
        Bbr::new(BbrConfig::default())
    }
}

impl Bbr {
    /// A controller with the given parameters. Any values are accepted (the controller
    /// never panics on them); [`BbrConfig::validate`] reports values the kernel could
    /// not represent.
    pub fn new(config: BbrConfig) -> Self {
        let cycle_rng = CycleRng::new(config.cycle_seed);
        Bbr {
            pacing_gain: config.high_gain,
            cwnd_gain: config.high_gain,
            config,
            mode: Mode::Startup,
            bw: Minmax::new(0, 0),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            round_start: false,
            min_rtt_us: u32::MAX,
            min_rtt_stamp: 0,
            full_bw_reached: false,
            full_bw: 0,
            full_bw_cnt: 0,
            prior_cwnd: 0,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            idle_restart: false,
            has_seen_rtt: false,
            lt: LtBw::default(),
            ack_aggr: AckAggregation::default(),
            cycle_rng,
        }
    }

    /// The parameters this controller was built with.
    pub fn config(&self) -> &BbrConfig {
        &self.config
    }

    /// Current state.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Windowed max delivery rate, packets per µs << 24 (`bbr_max_bw`).
    pub fn max_bw(&self) -> u32 {
        self.bw.get()
    }

    /// The bandwidth the model uses, packets per µs << 24: the long-term (policed) rate
    /// while a policer is detected, else [`max_bw`](Self::max_bw) (`bbr_bw`).
    pub fn bw(&self) -> u32 {
        if self.lt.use_bw {
            self.lt.bw
        } else {
            self.max_bw()
        }
    }

    /// Windowed min RTT, `None` before the first sample.
    pub fn min_rtt(&self) -> Option<Dur> {
        (self.min_rtt_us != u32::MAX).then(|| Dur::from_us(u64::from(self.min_rtt_us)))
    }

    /// Current pacing gain, × 1/256.
    pub fn pacing_gain(&self) -> u32 {
        self.pacing_gain
    }

    /// Current cwnd gain, × 1/256.
    pub fn cwnd_gain(&self) -> u32 {
        self.cwnd_gain
    }

    /// STARTUP has filled the pipe (stays true for the life of the connection).
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }

    /// A token-bucket policer is detected and its rate is used as the bandwidth.
    pub fn lt_use_bw(&self) -> bool {
        self.lt.use_bw
    }

    /// Packet-timed rounds elapsed since `init`.
    pub fn round_count(&self) -> u32 {
        self.rtt_cnt
    }

    /// Every state change goes through here. Debug builds check that the transition is
    /// one the kernel can make, given whether the pipe has been filled.
    fn transition(&mut self, to: Mode) {
        debug_assert!(
            self.is_legal_transition(to),
            "illegal BBR transition {:?} -> {:?} (full_bw_reached = {})",
            self.mode,
            to,
            self.full_bw_reached
        );
        self.mode = to;
    }

    fn is_legal_transition(&self, to: Mode) -> bool {
        use Mode::*;
        let full = self.full_bw_reached;
        match (self.mode, to) {
            // bbr_check_drain: STARTUP filled the pipe.
            (Startup, Drain) => full,
            // bbr_check_drain: the queue is drained; bbr_lt_bw_sampling: stop using
            // lt_bw and restart gain cycling.
            (Drain, ProbeBw { .. }) | (ProbeBw { .. }, ProbeBw { .. }) => full,
            // bbr_update_min_rtt: min_rtt expired in any other state.
            (Startup | Drain | ProbeBw { .. }, ProbeRtt { .. }) => true,
            // bbr_reset_mode after PROBE_RTT.
            (ProbeRtt { .. }, Startup) => !full,
            (ProbeRtt { .. }, ProbeBw { .. }) => full,
            _ => false,
        }
    }

    /// `bbr_reset_mode`: leave PROBE_RTT for STARTUP if the pipe was never filled,
    /// else for PROBE_BW.
    fn reset_mode(&mut self, sock: &Sock) {
        if self.full_bw_reached {
            self.reset_probe_bw_mode(sock);
        } else {
            self.transition(Mode::Startup);
        }
    }

    /// `bbr_main`: the per-ACK recipe.
    fn on_ack(&mut self, sock: &mut Sock, rs: &RateSample) {
        self.update_model(sock, rs);

        let bw = self.bw();
        self.set_pacing_rate(sock, bw, self.pacing_gain);
        self.set_cwnd(sock, rs, rs.acked_sacked, bw, self.cwnd_gain);
    }

    /// `bbr_update_model`: fold one rate sample into the path model and state machine.
    fn update_model(&mut self, sock: &mut Sock, rs: &RateSample) {
        self.update_bw(sock, rs);
        self.update_ack_aggregation(sock, rs);
        self.update_cycle_phase(sock, rs);
        self.check_full_bw_reached(rs);
        self.check_drain(sock);
        self.update_min_rtt(sock, rs);
        self.update_gains();
    }

    /// `bbr_update_bw`: round accounting, long-term sampling and the max-bw filter.
    fn update_bw(&mut self, sock: &Sock, rs: &RateSample) {
        self.round_start = false;
        let Some(interval_us) = valid_interval_us(rs) else {
            return; // not a valid observation
        };

        // A round ends when a packet sent after the previous round ended is delivered.
        if rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = sock.delivered;
            self.rtt_cnt = self.rtt_cnt.wrapping_add(1);
            self.round_start = true;
            self.packet_conservation = false;
        }

        self.lt_bw_sampling(sock, rs);

        // A lower bound on the bottleneck rate: delivered packets over the interval,
        // scaled first since the ratio is << 1 packet/µs.
        let bw =
            saturate_u32(u128::from(rs.delivered) * u128::from(BW_UNIT) / u128::from(interval_us));

        // App-limited samples measure the application, not the path: keep them only if
        // they describe the path at least as well as the model already does.
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.bw.running_max(self.config.bw_rtts, self.rtt_cnt, bw);
        }
    }

    /// `bbr_update_gains`: the (pacing, cwnd) gains of the current state.
    fn update_gains(&mut self) {
        let c = &self.config;
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (c.high_gain, c.high_gain),
            // Pace slowly to drain; keep cwnd so the pipe stays full.
            Mode::Drain => (c.drain_gain, c.high_gain),
            Mode::ProbeBw { cycle_idx, .. } => {
                let pacing = if self.lt.use_bw {
                    BBR_UNIT // a policer was detected: pace at its rate, no probing
                } else {
                    probe_bw::PACING_GAIN[cycle_idx]
                };
                (pacing, c.cwnd_gain)
            }
            Mode::ProbeRtt { .. } => (BBR_UNIT, BBR_UNIT),
        };
    }

    /// `bbr_save_cwnd`: remember the last known good cwnd to restore after loss
    /// recovery or PROBE_RTT.
    fn save_cwnd(&mut self, cwnd: u32) {
        if !in_recovery_or_loss(self.prev_ca_state) && !matches!(self.mode, Mode::ProbeRtt { .. }) {
            self.prior_cwnd = cwnd; // this cwnd is good enough
        } else {
            // Loss recovery or PROBE_RTT have temporarily cut cwnd.
            self.prior_cwnd = self.prior_cwnd.max(cwnd);
        }
    }
}

impl CongestionControl for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    /// `bbr_min_tso_segs`.
    fn min_tso_segs(&self, sock: &Sock) -> Option<u32> {
        Some(Bbr::min_tso_segs(self, sock))
    }

    /// `bbr_init`.
    fn init(&mut self, sock: &mut Sock) {
        let config = self.config.clone();
        *self = Bbr::new(config);

        sock.ssthresh = crate::INFINITE_SSTHRESH;
        self.next_rtt_delivered = sock.delivered;
        self.prev_ca_state = CaState::Open;
        self.min_rtt_us = if sock.min_rtt == Dur::MAX {
            u32::MAX
        } else {
            dur_to_us_u32(sock.min_rtt)
        };
        self.min_rtt_stamp = sock.jiffies();
        self.bw.reset(self.rtt_cnt, 0);
        self.init_pacing_rate_from_rtt(sock);
        self.reset_lt_bw_sampling(sock);
        self.mode = Mode::Startup; // bbr_reset_startup_mode; not a transition
                                   // The kernel leaves the gains at 0 until the first ACK's update_gains; nothing
                                   // reads them before then, so STARTUP's are set now for reporting.
        self.update_gains();
        self.ack_aggr = AckAggregation::new(sock.now.as_us());
        // The kernel only moves NONE to NEEDED (cmpxchg); there is no other state here.
        sock.pacing_status = crate::PacingStatus::Needed;
    }

    /// `bbr_ssthresh`: entering loss recovery; save cwnd for when it ends or is undone.
    /// BBR does not lower ssthresh.
    fn ssthresh(&mut self, sock: &Sock) -> u32 {
        self.save_cwnd(sock.cwnd);
        sock.ssthresh
    }

    fn cong_control(&mut self, sock: &mut Sock, rs: &RateSample) {
        self.on_ack(sock, rs);
    }

    fn owns_cwnd(&self) -> bool {
        true
    }

    /// `bbr_set_state`: an RTO is treated as the end of a round with one loss.
    fn set_state(&mut self, sock: &mut Sock, new_state: CaState) {
        if new_state == CaState::Loss {
            let rs = RateSample {
                losses: 1,
                ..RateSample::default()
            };
            self.prev_ca_state = CaState::Loss;
            self.full_bw = 0;
            self.round_start = true; // treat RTO like end of a round
            self.lt_bw_sampling(sock, &rs);
        }
    }

    /// `bbr_cwnd_event`: transmission restarts after an app-limited idle period.
    fn cwnd_event(&mut self, sock: &mut Sock, event: CaEvent) {
        if event == CaEvent::TxStart && sock.app_limited != 0 {
            self.idle_restart = true;
            self.ack_aggr.restart_epoch(sock.now.as_us());
            // Avoid pointless buffer overflows: pace at the estimate if no more speed
            // is needed (restarting from idle and app-limited).
            match self.mode {
                Mode::ProbeBw { .. } => self.set_pacing_rate(sock, self.bw(), BBR_UNIT),
                Mode::ProbeRtt { .. } => self.check_probe_rtt_done(sock),
                Mode::Startup | Mode::Drain => {}
            }
        }
    }

    /// `bbr_undo_cwnd`: the slow-down was spurious; restart full-pipe detection and the
    /// policer model, keep cwnd.
    fn undo_cwnd(&mut self, sock: &Sock) -> u32 {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.reset_lt_bw_sampling(sock);
        sock.cwnd
    }

    fn phase(&self) -> &'static str {
        self.mode.name()
    }
}

/// The sample's interval in whole µs, or `None` if the sample is not a valid
/// observation (`rs->interval_us <= 0`).
fn valid_interval_us(rs: &RateSample) -> Option<u64> {
    rs.interval.map(|d| d.as_us()).filter(|&us| us > 0)
}

/// `state >= TCP_CA_Recovery` in the kernel's state order.
fn in_recovery_or_loss(state: CaState) -> bool {
    matches!(state, CaState::Recovery | CaState::Loss)
}

/// A duration in whole µs, saturated to `u32` like the kernel's `u32` µs fields.
fn dur_to_us_u32(d: Dur) -> u32 {
    u32::try_from(d.as_us()).unwrap_or(u32::MAX)
}

/// Narrow a wide intermediate result, saturating where the kernel would truncate.
fn saturate_u32(v: u128) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}
