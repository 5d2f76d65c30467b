//! PropRate: rate-based congestion control that regulates the bottleneck buffer.
//!
//! Source: W. K. Leong, Z. Wang, B. Leong, "TCP Congestion Control Beyond
//! Bandwidth-Delay Product for Mobile Cellular Networks", ACM CoNEXT 2017 (Incheon,
//! 12–15 December 2017), doi:10.1145/3143361.3143378 — §3 (model, Eq. 1–8), §3.2 (the
//! negative-feedback loop, Eq. 9), §4 (states), §4.1 (buffer delay), §4.2 (receive rate).
//! No implementation is public; this one is written from the paper alone.
//!
//! # Model
//!
//! The sender estimates the receive rate ρ from the receiver's TCP timestamps and the
//! buffer delay t_buff from the relative one-way delay, and makes its sending rate
//! oscillate around ρ: it fills the bottleneck buffer at σ_f = k_f·ρ (k_f > 1) until
//! t_buff reaches a threshold T, then drains it at σ_d = k_d·ρ (k_d < 1) until t_buff
//! falls below T. The one-RTT lag of the observation turns the single threshold into a
//! sawtooth whose mean is the application's target t̄_buff. k_f and k_d follow from T and
//! the base RTT (Eq. 7 when the buffer should never empty, Eq. 8 when it should empty
//! periodically to keep latency under L_max); an outer loop moves T until the achieved
//! mean meets t̄_buff. Packets are paced at the rate; a window caps what is in flight.
//!
//! # States
//!
//! ```text
//!   init, RTO (any state)
//!        |
//!        v          rate estimate            t_buff >= T
//!  +------------+  from the burst   +-------------+ -------> +--------------+
//!  | SLOW_START |----------------->| BUFFER_FILL |          | BUFFER_DRAIN |
//!  +------------+                  |  k_f * rho  | <------- |  k_d * rho   |
//!   ^    | one tick only:          +-------------+ t_buff<T +--------------+
//!   +----+ burst x 2                     ^                    |        ^
//!                                        | new rho >= rho     | RTT*rho | new rho < rho
//!                                        |                    v packets|
//!                                        |               +---------------+
//!                                        +---------------|    MONITOR    |
//!                                                        | 10-pkt burst, |
//!                                                        | then k_d*rho/2|
//!                                                        +---------------+
//! ```
//!
//! # Differences from the paper
//!
//! Every item the paper leaves open (the **\[choice\]** items of the algorithm notes) is
//! decided here:
//!
//! 1. **L_max** is not given for the paper's runs; default 120 ms, which puts PR(M)
//!    (t̄_buff = 40 ms) at the crossover of the regimes for the paper's RTT of 40 ms, as §5
//!    says it is.
//! 2. **Regime and gains.** The regime is chosen by Eq. 6 from t̄_buff and the current
//!    base RTT; Eq. 7/8 are then evaluated with the current T and RTT on every ACK. U is
//!    capped at 1; k_f ≥ 1.01; k_d is clamped to `[k_d_min, 0.99]` (`k_d_min` = 0.1):
//!    Eq. 8 gives k_d ≤ 0 for short RTTs (T = 20 ms, L_max = 120 ms: RTT ≤ 30 ms).
//!    RTT is `sock.min_rtt` (Linux `tcp_min_rtt`).
//! 3. **Negative-feedback loop.** As printed, §3.2 raises T in Fill when t_actual > t̄_buff,
//!    which is positive feedback; implemented with the signs of Fig. 4: in Fill, if
//!    t_actual > t̄_buff, T −= ln(t_actual − t̄_buff); in Drain, if t_actual < t̄_buff,
//!    T += ln(t̄_buff − t_actual); differences in ms, so a step is ln(ms) ms and
//!    differences ≤ 1 ms move nothing. T stays within [1 ms, 4·t̄_buff]. t_sample (Eq. 9)
//!    is the mean of the per-ACK t_buff over a window of ⌈ρ·RTT⌉ delivered packets;
//!    t_actual starts at the first t_sample. Switchable (`nfl`).
//! 4. **Receive rate.** Bytes received = `sock.delivered` (acked and SACKed packets) ×
//!    MSS, which is the paper's "SACK blocks give the exact count" (the simulated stack
//!    always uses SACK, so the dup-ACK = one MSS rule is not needed). The window is the
//!    last 50 distinct receiver timestamps, at most 500 ms; each completed timestamp gives
//!    one window rate, folded into ρ with weight 1/8 (`rho_gain`; the paper gives none).
//!    A window in which an ACK saw the buffer empty (t_buff ≤ 1 tick) measured the
//!    sender, not the link (§3's model assumes a busy bottleneck): its rate may raise ρ
//!    but not lower it, as BBR treats application-limited samples. Without this rule ρ
//!    followed σ_d and σ_m down while draining an empty buffer and collapsed on the
//!    driving traces. Application-limited samples are skipped. The window restarts after
//!    Slow Start and after an idle restart, so pauses are not read as a slow receiver.
//! 5. **RD_min** is a windowed minimum over 300 s (`rd_min_window_s`), not "re-measured in
//!    Monitor". In the buffer-full regime the buffer never empties by design (D_min =
//!    t̄_buff/2), so a short window or a reset from the Monitor's packets would take a
//!    queued delay as the baseline; the controller then adds the target on top of it,
//!    again at every expiry, and latency ratchets up. A shorter window can be configured.
//! 6. **Relative one-way delay.** RD = t_r − t_s with t_r the ACK's TSval and t_s the
//!    send time (in timestamp ticks) of the newest (S)ACKed segment, `now − rs.rtt`: the
//!    segment whose arrival made the receiver send the ACK (the paper: "the sender
//!    records the sending time of each packet"). The echoed TSecr is used only on
//!    in-order ACKs without an RTT sample. TSecr is stale after a loss (§4.1), and with
//!    delayed ACKs it echoes the first segment of the pair, one pacing interval older:
//!    at σ_d = 0.1·ρ on an 8 Mbit/s link that interval is 14 ms (29 ms at σ_m), read as
//!    buffer delay.
//! 7. **Sending.** Instead of a per-tick packet count rounded up in Fill and down in
//!    Drain/Monitor, the stack's EDT pacing sends at the state's rate exactly. The window
//!    cap (the paper's "window-capped", value not given) is
//!    `max(4, ⌈cwnd_gain·ρ·(RTT + D_max)/MSS⌉)`, `cwnd_gain` = 1: the flight the waveform
//!    needs at its peak. In the buffer-emptied regime RTT + D_max ≤ L_max (Eq. 4), so the
//!    cap keeps what is in flight within ρ·L_max; it binds when ACKs stop (outages),
//!    when whatever is sent only queues.
//! 8. **Bursts** (Slow Start, Monitor) are sent back to back: line-rate pacing
//!    (`sock.max_pacing_rate`) and a window of `in_flight + unsent burst packets`. A
//!    Slow Start burst ends when all its packets are delivered or lost; it yields ρ if
//!    its ACKs carry at least two distinct timestamps; otherwise the next burst is twice
//!    as long. The Monitor burst is followed by σ_m = σ_d/2 until all 10 packets are
//!    delivered or lost and at least two timestamps were seen (the issue's "10-packet
//!    burst at σ_d/2": the burst measures, σ_m is the rate while it does; pacing the 10
//!    packets at σ_m instead measured σ_m whenever the buffer was empty and dropped
//!    PR(L)'s utilisation on TMobile-LTE-driving to 0.07). A Monitor estimate ≥ ρ joins
//!    ρ's EWMA as one sample instead of replacing ρ: ten packets span one or two ticks of
//!    a bursty cellular link; when it replaced ρ, one such estimate on
//!    TMobile-LTE-driving raised the window to 1078 packets and the queue to 700 ms.
//! 9. **Monitor** is entered after ⌈ρ·RTT/MSS⌉ packets (new or retransmitted) were sent in
//!    Drain, RTT being the base RTT as everywhere in the paper. With Eq. 7's gains a
//!    nominal Drain lasts 2(T + RTT) and sends (T + 2·RTT)·ρ, so Monitor is part of most
//!    Drain phases, not an exception; the NFL absorbs the extra drain.
//! 10. **RTO** (`set_state(Loss)`) restarts Slow Start with a 10-packet burst; ρ, RD_min,
//!     T and t_actual are kept until the burst measures ρ again. Fast recovery does not
//!     change the rate (§4.3); `ssthresh` is left alone and undo keeps cwnd.
//! 11. **Timestamp granularity** is the connection's (`sock.ts_granularity`); the paper's
//!     default assumption of 10 ms and its granularity estimator are not needed.
//! 12. **Floors.** ρ is read as at least 10 packets per second, so Drain and Monitor keep
//!     sending probes after an outage.
//!
//! # Differences from reference code
//!
//! None to list: the authors' Linux 3.13 kernel module is not public.

mod config;
mod estimators;
mod nfl;
mod params;
mod states;

#[cfg(test)]
mod tests;

pub use config::{PropRateConfig, PRESET_H_MS, PRESET_L_MS, PRESET_M_MS};
pub use params::{eq7, eq8, regime, Eq8, Gains, Regime};
pub use states::{Burst, SendMark};

use estimators::{OneWayDelay, ReceiveRate, TimestampWindow};
use nfl::{Nfl, Side};

use cellcc_units::{Dur, NS_PER_S};

use crate::{CaEvent, CaState, CongestionControl, PacingStatus, RateSample, Sock};

/// Smallest window cap, packets: a flight of a few packets keeps ACKs (and with them
/// both estimators) flowing at any rate.
pub const CWND_MIN: u32 = 4;
/// ρ is read as at least this many packets per second (see difference 12).
const RHO_MIN_PACKETS_PER_SEC: u64 = 10;
/// Base RTT assumed before the first RTT sample (only reachable if a state past Slow
/// Start is forced without one): Linux's initial RTO scale is no better; 100 ms is a
/// typical cellular RTT.
const RTT_UNKNOWN: Dur = Dur::from_ms(100);

/// PropRate's state machine (§4, Fig. 5(b)), each state carrying its own data.
#[derive(Clone, Debug)]
pub enum State {
    /// Bursts of doubling length until the receiver timestamps give a rate.
    SlowStart(Burst),
    /// Pace at k_f·ρ.
    BufferFill,
    /// Pace at k_d·ρ; counts packets sent since the mark for the Monitor cap.
    BufferDrain(SendMark),
    /// A burst to re-measure ρ, then k_d·ρ/2 until it is measured.
    Monitor(Burst),
}

impl State {
    /// Label used in time series and by [`CongestionControl::phase`].
    pub fn name(&self) -> &'static str {
        match self {
            State::SlowStart(_) => "slow_start",
            State::BufferFill => "buffer_fill",
            State::BufferDrain(_) => "buffer_drain",
            State::Monitor(_) => "monitor",
        }
    }
}

/// A PropRate controller. Build with [`PropRate::new`]; the stack then calls
/// [`CongestionControl::init`].
#[derive(Clone, Debug)]
pub struct PropRate {
    config: PropRateConfig,
    state: State,
    /// Receive-rate estimate ρ.
    rho: ReceiveRate,
    /// Buffer-delay estimate t_buff.
    owd: OneWayDelay,
    /// The outer loop on T.
    nfl: Nfl,
    /// The switching threshold T.
    threshold: Dur,
    /// k_f, k_d and D_max in use (recomputed per ACK).
    gains: Gains,
    /// The ACK being processed carried SACK blocks or did not advance `snd_una`.
    slow_path: bool,
    /// Fill/Drain/Monitor transitions since `init`, for reporting.
    transitions: u64,
    /// Entries to Monitor since `init`.
    monitors: u64,
}

impl Default for PropRate {
    fn default() -> Self {
        PropRate::new(PropRateConfig::default())
    }
}

impl PropRate {
    /// A controller with `config` (see [`PropRateConfig::validate`]; invalid values are
    /// clamped into range by the formulas, never a panic).
    pub fn new(config: PropRateConfig) -> Self {
        let granularity = Dur::from_ms(1);
        let window = TimestampWindow::new(config.rho_timestamps, config.rho_window(), granularity);
        let t = config.t_buff().max(nfl::T_MIN);
        let gains = Gains::new(
            regime(t, config.l_max(), RTT_UNKNOWN),
            t,
            RTT_UNKNOWN,
            config.l_max(),
            config.k_d_min,
        );
        PropRate {
            state: State::BufferFill,
            rho: ReceiveRate::new(window, config.rho_gain),
            owd: OneWayDelay::new(config.rd_min_window()),
            nfl: Nfl::default(),
            threshold: t,
            gains,
            slow_path: false,
            transitions: 0,
            monitors: 0,
            config,
        }
    }

    /// The parameters in use.
    pub fn config(&self) -> &PropRateConfig {
        &self.config
    }

    /// The current state (Slow Start, Buffer Fill, Buffer Drain or Monitor).
    pub fn state(&self) -> &State {
        &self.state
    }

    /// ρ, bytes per second, `None` before Slow Start measured it.
    pub fn rho(&self) -> Option<u64> {
        self.rho.rho()
    }

    /// The last buffer-delay estimate t_buff.
    pub fn t_buff(&self) -> Option<Dur> {
        self.owd.last()
    }

    /// RD_min, the minimum relative one-way delay, in timestamp ticks.
    pub fn rd_min(&self) -> Option<i64> {
        self.owd.rd_min()
    }

    /// The threshold T.
    pub fn threshold(&self) -> Dur {
        self.threshold
    }

    /// The achieved buffer delay t_actual of the NFL (tracked with or without the loop).
    pub fn t_actual(&self) -> Option<Dur> {
        self.nfl.t_actual()
    }

    /// The gains in use.
    pub fn gains(&self) -> Gains {
        self.gains
    }

    /// State changes since `init` (Slow Start's own restarts excluded).
    pub fn transitions(&self) -> u64 {
        self.transitions
    }

    /// Monitor entries since `init`.
    pub fn monitors(&self) -> u64 {
        self.monitors
    }

    /// Every state change goes through here. Debug builds check it is one of Fig. 5(b)'s
    /// edges (RTO's return to Slow Start is made by `set_state`, from any state).
    fn transition(&mut self, to: State) {
        use State::*;
        debug_assert!(
            matches!(
                (&self.state, &to),
                (SlowStart(_), SlowStart(_) | BufferFill)
                    | (BufferFill, BufferDrain(_))
                    | (BufferDrain(_), BufferFill | Monitor(_))
                    | (Monitor(_), BufferFill | BufferDrain(_))
            ),
            "illegal PropRate transition {} -> {}",
            self.state.name(),
            to.name()
        );
        if matches!(to, Monitor(_)) {
            self.monitors += 1;
        }
        if !matches!(to, SlowStart(_)) {
            self.transitions += 1;
        }
        self.state = to;
    }

    /// Enter Slow Start with a fresh `burst_packets` burst (init and RTO).
    fn restart_slow_start(&mut self, sock: &Sock) {
        let burst = self.burst(self.config.burst_packets, sock);
        self.state = State::SlowStart(burst);
    }

    /// A receive-rate window for this connection's timestamp clock.
    fn new_window(&self, sock: &Sock) -> TimestampWindow {
        TimestampWindow::new(
            self.config.rho_timestamps,
            self.config.rho_window(),
            sock.ts_granularity,
        )
    }

    /// The base RTT of the formulas: the connection's minimum RTT.
    fn base_rtt(sock: &Sock) -> Dur {
        if sock.min_rtt != Dur::MAX {
            sock.min_rtt
        } else if !sock.srtt.is_zero() {
            sock.srtt
        } else {
            RTT_UNKNOWN
        }
    }

    /// ρ in bytes per second, with the floor of difference 12.
    fn rho_bytes_per_sec(&self, sock: &Sock) -> u64 {
        let floor = RHO_MIN_PACKETS_PER_SEC * u64::from(sock.mss);
        self.rho.rho().unwrap_or(0).max(floor)
    }

    /// Bytes that `rate` (bytes/s) carries in `d`.
    fn bytes_in(rate: u64, d: Dur) -> u64 {
        u64::try_from(u128::from(rate) * u128::from(d.as_ns()) / u128::from(NS_PER_S))
            .unwrap_or(u64::MAX)
    }

    /// ⌈ρ·RTT⌉ in packets (at least 1): the NFL window and the Drain → Monitor cap.
    fn bdp_packets(&self, sock: &Sock) -> u64 {
        let bytes = Self::bytes_in(self.rho_bytes_per_sec(sock), Self::base_rtt(sock));
        bytes.div_ceil(u64::from(sock.mss.max(1))).max(1)
    }

    /// `cong_control`: the per-ACK recipe.
    fn on_ack(&mut self, sock: &mut Sock, rs: &RateSample) {
        let t_buff = self.update_model(sock, rs);
        self.update_state(sock, t_buff);
        self.set_pacing_rate(sock);
        self.set_cwnd(sock);
    }

    /// Fold the ACK into ρ, t_buff and the NFL; recompute the gains. Returns this ACK's
    /// t_buff sample, if it gave one.
    fn update_model(&mut self, sock: &Sock, rs: &RateSample) -> Option<Dur> {
        let in_slow_start = matches!(self.state, State::SlowStart(_));
        let t_buff = self
            .relative_delay(sock, rs)
            .map(|rd| self.owd.on_sample(sock.now, rd, sock.ts_granularity));
        if !in_slow_start {
            // Within one tick of RD_min is an empty buffer, given both clocks' rounding.
            let idle = t_buff.is_some_and(|d| d <= sock.ts_granularity);
            self.rho.on_ack(
                sock.rcv_tsval,
                sock.delivered,
                idle,
                sock.mss,
                sock.ts_granularity,
                rs.is_app_limited,
            );
        }
        if let (Some(d), false) = (t_buff, in_slow_start) {
            self.update_threshold(sock, d);
        }
        let rtt = Self::base_rtt(sock);
        let l_max = self.config.l_max();
        let regime = regime(self.config.t_buff(), l_max, rtt); // PropRate Eq. (6)
        self.gains = Gains::new(regime, self.threshold, rtt, l_max, self.config.k_d_min);
        t_buff
    }

    /// PropRate §4.1: RD = t_r − t_s in timestamp ticks. t_r is the receiver's TSval;
    /// t_s the send time of the newest (S)ACKed segment, the one whose arrival made the
    /// receiver send this ACK (`now − rs.rtt`), else the echoed TSecr on an in-order ACK
    /// (difference 6).
    fn relative_delay(&self, sock: &Sock, rs: &RateSample) -> Option<i32> {
        let send_tick = match rs.rtt {
            Some(rtt) => {
                let sent = sock.now.as_ns().saturating_sub(rtt.as_ns());
                (sent / sock.ts_granularity.as_ns().max(1)) as u32
            }
            None if !self.slow_path => sock.rcv_tsecr,
            None => return None,
        };
        Some(sock.rcv_tsval.wrapping_sub(send_tick) as i32)
    }

    /// PropRate §3.2: feed the NFL; move T when a window closes (if the loop is on).
    fn update_threshold(&mut self, sock: &Sock, t_buff: Dur) {
        let bdp = self.bdp_packets(sock);
        let Some(t_actual) = self.nfl.on_sample(t_buff, sock.delivered, bdp) else {
            return;
        };
        if !self.config.nfl {
            return;
        }
        let side = match self.state {
            State::BufferFill => Side::Fill,
            State::BufferDrain(_) => Side::Drain,
            State::SlowStart(_) | State::Monitor(_) => Side::Other,
        };
        let target = self.config.t_buff().max(nfl::T_MIN);
        self.threshold = nfl::adjust(self.threshold, t_actual, target, side);
    }

    /// The burst in progress, if its packets are not all sent yet.
    fn unsent_burst(&self, sock: &Sock) -> Option<u32> {
        match &self.state {
            State::SlowStart(b) => Some(b.unsent(sock)),
            State::Monitor(b) => Some(b.unsent(sock)).filter(|&n| n > 0),
            _ => None,
        }
    }

    /// Pace at the state's rate: σ_f, σ_d, σ_m = σ_d/2, or line rate for a burst.
    fn set_pacing_rate(&self, sock: &mut Sock) {
        let rho = self.rho_bytes_per_sec(sock) as f64;
        let gain = match self.state {
            State::BufferFill => self.gains.k_f,       // σ_f = k_f·ρ (§3)
            State::BufferDrain(_) => self.gains.k_d,   // σ_d = k_d·ρ (§3)
            State::Monitor(_) => self.gains.k_d / 2.0, // σ_m = σ_d/2 (§4)
            State::SlowStart(_) => f64::INFINITY,      // always a burst
        };
        let rate = if self.unsent_burst(sock).is_some() {
            sock.max_pacing_rate
        } else {
            (gain * rho).min(u64::MAX as f64) as u64
        };
        // A zero rate would mean "unpaced" to the stack.
        sock.pacing_rate = rate.clamp(1, sock.max_pacing_rate.max(1));
    }

    /// Cap the window: exactly the burst during a burst, else
    /// `max(4, ⌈cwnd_gain·ρ·(RTT + D_max)⌉)` packets.
    fn set_cwnd(&self, sock: &mut Sock) {
        let cwnd = match self.unsent_burst(sock) {
            Some(unsent) => sock.packets_in_flight().saturating_add(unsent).max(1),
            None => {
                let flight = Self::base_rtt(sock) + self.gains.d_max;
                let bytes = Self::bytes_in(self.rho_bytes_per_sec(sock), flight) as f64
                    * self.config.cwnd_gain;
                let packets = (bytes / f64::from(sock.mss.max(1))).ceil();
                (packets.min(f64::from(u32::MAX)) as u32).max(CWND_MIN)
            }
        };
        sock.cwnd = cwnd.min(sock.cwnd_clamp);
    }
}

impl CongestionControl for PropRate {
    fn name(&self) -> &'static str {
        "proprate"
    }

    /// Start in Slow Start with the first burst; ask the stack for EDT pacing.
    fn init(&mut self, sock: &mut Sock) {
        let config = self.config.clone();
        *self = PropRate::new(config);
        self.rho = ReceiveRate::new(self.new_window(sock), self.config.rho_gain);
        self.restart_slow_start(sock);
        sock.pacing_status = PacingStatus::Needed;
        self.set_pacing_rate(sock);
        self.set_cwnd(sock);
    }

    /// Losses do not change the rate (§4.3): ssthresh stays.
    fn ssthresh(&mut self, sock: &Sock) -> u32 {
        sock.ssthresh
    }

    fn cong_control(&mut self, sock: &mut Sock, rs: &RateSample) {
        self.on_ack(sock, rs);
    }

    fn owns_cwnd(&self) -> bool {
        true
    }

    /// §4: a retransmission timeout returns to Slow Start. The stack has just set
    /// cwnd = in_flight + 1 for the head's retransmission; the burst starts with the next
    /// ACK's window.
    fn set_state(&mut self, sock: &mut Sock, new_state: CaState) {
        if new_state == CaState::Loss {
            self.restart_slow_start(sock);
            self.set_pacing_rate(sock);
        }
    }

    /// Restart after idle: the idle time is not a receive rate.
    fn cwnd_event(&mut self, _sock: &mut Sock, event: CaEvent) {
        if event == CaEvent::TxStart {
            self.rho.clear_window();
        }
    }

    fn in_ack_event(&mut self, _sock: &mut Sock, slow_path: bool) {
        self.slow_path = slow_path;
    }

    /// A spurious timeout or recovery: the rate never changed; keep the window.
    fn undo_cwnd(&mut self, sock: &Sock) -> u32 {
        sock.cwnd
    }

    fn phase(&self) -> &'static str {
        self.state.name()
    }

    /// The waveform in use at the end: `k_f`, `k_d`, `u`, `buffer_full` (1 in the
    /// buffer-full regime of Eq. 7, 0 in the buffer-emptied one of Eq. 8),
    /// `threshold_ms` (T), `d_max_ms`, `rho_mbps` (NaN before a first estimate) and the
    /// Fill/Drain/Monitor `transitions`.
    fn info(&self) -> Vec<(&'static str, f64)> {
        let ms = |d: Dur| d.as_ns() as f64 / 1e6;
        let rho = self.rho.rho().map_or(f64::NAN, |r| r as f64 * 8.0 / 1e6);
        vec![
            ("k_f", self.gains.k_f),
            ("k_d", self.gains.k_d),
            ("u", self.gains.u),
            (
                "buffer_full",
                f64::from(u8::from(self.gains.regime == Regime::BufferFull)),
            ),
            ("threshold_ms", ms(self.threshold)),
            ("d_max_ms", ms(self.gains.d_max)),
            ("rho_mbps", rho),
            ("transitions", self.transitions as f64),
        ]
    }
}
