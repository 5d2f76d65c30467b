//! CDG, the CAIA Delay-Gradient congestion control, as Linux 6.x runs it
//! (`net/ipv4/tcp_cdg.c`).
//!
//! Sources:
//! - D. A. Hayes, G. Armitage, "Revisiting TCP Congestion Control using Delay
//!   Gradients", IFIP Networking 2011, LNCS 6641, pp. 328–341: §3.1 (gradients of the
//!   per-RTT min and max RTT, Eqs. (1)–(3)), §3.2 (probabilistic backoff, Eq. (4)),
//!   §3.3 (ineffectual-backoff detection), §3.4 (shadow window).
//! - Linux `net/ipv4/tcp_cdg.c` (K. K. Jonassen), 6.x: `tcp_cdg_grad`,
//!   `tcp_cdg_backoff`, `tcp_cdg_cong_avoid`, `tcp_cdg_acked`, `tcp_cdg_ssthresh`,
//!   `tcp_cdg_cwnd_event`, `tcp_cdg_hystart_update` (see `hystart.rs`).
//!
//! Model. Each RTT CDG takes the smallest and largest RTT sample (`τ_min`, `τ_max`) and
//! their change from the previous RTT, `g_min` and `g_max`, summed over the last
//! `window` RTTs. A positive gradient means queues are growing: with `g = g_min` if it
//! is positive, else `g_max`, CDG backs off with probability `1 − e^(−g/G)`, to
//! `backoff_beta·cwnd` (0.7071) through the stack's CWR state and PRR. Otherwise it grows
//! as Reno. Two heuristics make it coexist with loss-based flows: the *shadow window*
//! remembers the window a loss-based flow would have (backoffs do not shrink it), so a
//! loss after delay backoffs does not halve a window already reduced; *ineffectual
//! backoff detection* stops backing off after `use_ineff` backoffs that did not lower
//! the delay (no gradient ≤ −32 µs), since then someone else owns the queue.
//!
//! ```text
//!                 once per RTT: g = Σ window gradients (g_min if > 0, else g_max)
//!   slow start ──(CDG HyStart or loss)──► congestion avoidance (Reno growth,
//!       │                                  shadow_wnd += the same increase)
//!       │                                     │ g > 0, rand ≥ e^(−g·backoff_factor·10⁻⁶)
//!       │                                     │ and < use_ineff ineffectual backoffs
//!       ▼                                     ▼
//!   loss: shadow := min(shadow/2, cwnd)     backoff: shadow := max(shadow, cwnd),
//!         ssthresh := max(2, shadow,               CWR (tcp_enter_cwr) with
//!                         cwnd/2)                  ssthresh := max(2, 0.7071·cwnd),
//!                                                  PRR; at CWR's end: new RTT window
//! ```
//!
//! Differences from the paper (all inherited from Linux):
//! 1. G is folded into `backoff_factor = 1000/(G·window)` (42 for G = 3, window = 8),
//!    and the gradients are moving *sums* (not averages) over `window` RTTs: the
//!    backoff exponent is `g_sum·backoff_factor·10⁻⁶ = g_avg·window·1000/(G·window)/10⁶`
//!    = `g_avg/G` with g in ms. Until the window has filled the sum is extrapolated
//!    (`·window/filled`).
//! 2. Backoff uses CWR with PRR (a gradual reduction over one RTT) and β = 0.7071
//!    instead of 0.7 applied at once; slow start ends with CDG's HyStart variant.
//! 3. A delayed-ACK filter: an ACK of one packet after ACKs of several is only used to
//!    lower the RTT minimum (up to 5 in a row), as in Hayes' FreeBSD timing work.
//! 4. The shadow window is limited to 2·cwnd at a loss (`min(shadow/2, cwnd)`), and to
//!    cwnd while the flow is application-limited.
//! 5. Optional loss tolerance (`use_tolerance`, off by default): a loss while the
//!    gradients say the queue is not full keeps cwnd.
//! 6. e^(−x) is a fixed-point product over the bits of x.
//!
//! Differences from Linux:
//! 1. The random draw is a SplitMix64 stream seeded from the flow (`backoff_seed`), not
//!    the kernel's RNG; runs are deterministic.
//! 2. The e^(−x) factor table is ⌊65536·e^(−0.000256·2^k)⌋; the kernel's own table
//!    differs by one unit in the last place in some entries (≤ 2·10⁻⁵ relative).
//! 3. The HyStart clock is `sock.now` (Linux uses `local_clock()`, not `tcp_mstamp`),
//!    with 64-bit µs that never wrap, and "no ACK train yet" is `None` instead of 0.
//! 4. The gradient buffer always exists (Linux falls back to window = 1 if `kcalloc`
//!    fails).
//! 5. Windows and sequence numbers count segments; the backoff exponent is computed
//!    in 64 bits and saturates instead of wrapping.
//! 6. Parameters are per connection and validated; Linux's are global module
//!    parameters (`window` only at load time).

mod backoff;
mod hystart;
#[cfg(test)]
mod tests;

pub use hystart::{HYSTART_ACK_TRAIN, HYSTART_DELAY};

use serde::{Deserialize, Serialize};

use crate::reno::NewReno;
use crate::{AckSample, CaEvent, ConfigError, CongestionControl, Sock};
use backoff::{nexp_u32, BackoffRng};

/// β is scaled by 1024 (`backoff_beta` = 0.7071·1024 = 724 for √½).
const BETA_SCALE: u32 = 1024;
/// A gradient sum at or below −32 µs shows the last backoff worked (`tcp_cdg_grad`):
/// smaller changes are clock and ACK noise.
const EFFECTIVE_GRAD_US: i32 = -32;
/// Most consecutive multi-packet ACKs the delayed-ACK filter counts (`delack < 5`).
const DELACK_MAX: u8 = 5;
/// Smallest ssthresh, packets.
const MIN_SSTHRESH: u32 = 2;
/// Largest gradient window (Linux keeps the ring index in 8 bits).
const WINDOW_MAX: u32 = 256;
/// Rounding unit of the loss-tolerance classifier, µs (`DIV_ROUND_CLOSEST(g, 64)`).
const TOLERANCE_UNIT_US: i32 = 64;

/// CDG's parameters, named and defaulted as Linux's `tcp_cdg` module parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CdgConfig {
    /// Gradient moving-sum window, RTTs; a power of two in 1..=256 (`window`,
    /// default 8).
    pub window: u32,
    /// cwnd after a delay backoff, ×1/1024, 0..=1024 (`backoff_beta`, default 724 ≈
    /// 0.7071 = √½).
    pub backoff_beta: u32,
    /// Backoff probability scale: P = 1 − e^(−g·backoff_factor·10⁻⁶), g in µs summed
    /// over the window (`backoff_factor`, default 42 = 1000/(G·window), G ≈ 3 ms).
    pub backoff_factor: u32,
    /// HyStart detectors: 0 off, 1 ACK train, 2 delay, 3 both (`hystart_detect`,
    /// default 3).
    pub hystart_detect: u8,
    /// Stop backing off after this many backoffs without a gradient ≤ −32 µs; 0
    /// disables the detection (`use_ineff`, default 5).
    pub use_ineff: u32,
    /// Use the shadow window at losses (`use_shadow`, default true).
    pub use_shadow: bool,
    /// Keep cwnd at a loss when the gradients say the queue is not full
    /// (`use_tolerance`, default false).
    pub use_tolerance: bool,
    /// Seed of the backoff draws. The simulator derives it from the flow's seed unless
    /// the scenario sets it. Default 0.
    pub backoff_seed: u64,
}

impl Default for CdgConfig {
    /// Linux 6.x defaults.
    fn default() -> Self {
        CdgConfig {
            window: 8,
            backoff_beta: 724,
            backoff_factor: 42,
            hystart_detect: HYSTART_ACK_TRAIN | HYSTART_DELAY,
            use_ineff: 5,
            use_shadow: true,
            use_tolerance: false,
            backoff_seed: 0,
        }
    }
}

impl CdgConfig {
    /// The checks of `tcp_cdg_register` (window a power of two ≤ 256, backoff_beta ≤
    /// 1024), plus `hystart_detect` ≤ 3 and `use_ineff` within Linux's 16-bit counter.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |field: &str, reason: String| Err(ConfigError::new("cdg", field, reason));
        if !self.window.is_power_of_two() || self.window > WINDOW_MAX {
            return err(
                "window",
                format!("{} is not a power of two in 1..=256", self.window),
            );
        }
        if self.backoff_beta > BETA_SCALE {
            return err(
                "backoff_beta",
                format!("{} is above 1024 (β × 1024)", self.backoff_beta),
            );
        }
        if self.hystart_detect > (HYSTART_ACK_TRAIN | HYSTART_DELAY) {
            return err(
                "hystart_detect",
                format!(
                    "{} is not 0 (off), 1 (ACK train), 2 (delay) or 3 (both)",
                    self.hystart_detect
                ),
            );
        }
        if self.use_ineff >= u32::from(u16::MAX) {
            return err(
                "use_ineff",
                format!("{} does not fit the 16-bit backoff counter", self.use_ineff),
            );
        }
        Ok(())
    }
}

/// Per-RTT minimum and maximum RTT, µs (Linux's `struct minmax` of CDG); both 0 means
/// "no sample yet" (`v64 == 0`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct MinMax {
    min: i32,
    max: i32,
}

impl MinMax {
    fn is_empty(&self) -> bool {
        self.min == 0 && self.max == 0
    }
}

/// `enum cdg_state`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum CdgState {
    #[default]
    Unknown,
    /// Loss tolerance: the gradients say the queue is not full.
    NonFull,
    /// Loss tolerance: the queue looks full.
    Full,
    /// A delay backoff is in progress (until CWR completes).
    Backoff,
}

/// A CDG controller; fields mirror Linux's `struct cdg`.
#[derive(Clone, Debug)]
pub struct Cdg {
    cfg: CdgConfig,
    /// This RTT's min/max RTT.
    rtt: MinMax,
    /// The previous RTT's.
    rtt_prev: MinMax,
    /// Ring of the last `window` gradients (`gradients`).
    gradients: Vec<MinMax>,
    /// Sum of the ring (`gsum`).
    gsum: MinMax,
    /// The ring has wrapped once (`gfilled`).
    gfilled: bool,
    /// Next ring slot (`tail`).
    tail: usize,
    state: CdgState,
    /// Delayed-ACK filter counter (`delack`).
    delack: u8,
    /// The per-RTT step is due once `snd_una` passes this (`rtt_seq`).
    rtt_seq: u64,
    /// cwnd at the last `ssthresh` call, for undo (`undo_cwnd`).
    undo_cwnd: u32,
    /// The window a loss-based flow would have, packets (`shadow_wnd`).
    shadow_wnd: u32,
    /// Backoffs since the last effective one (`backoff_cnt`).
    backoff_cnt: u32,
    /// HyStart: ACKs this round (`sample_cnt`).
    sample_cnt: u16,
    /// Smallest per-RTT minimum seen, µs (`delay_min`; 0 = none).
    delay_min: i32,
    /// HyStart ACK train: last ACK and round start, µs.
    last_ack_us: Option<u64>,
    round_start_us: u64,
    rng: BackoffRng,
    reno: NewReno,
    // Observation only.
    backoffs: u64,
    backoffs_ineffectual: u64,
    hystart_exits: u64,
    last_grad_us: i32,
}

impl Cdg {
    /// A controller with `cfg`.
    ///
    /// # Panics
    /// If `window` is not a power of two in 1..=256 (the ring index masks with
    /// `window − 1`). Scenario values are checked by [`CdgConfig::validate`].
    pub fn new(cfg: CdgConfig) -> Self {
        assert!(
            cfg.window.is_power_of_two() && cfg.window <= WINDOW_MAX,
            "window must be a power of two in 1..=256: the ring index is masked"
        );
        // Linux only allocates the ring for window > 1; with window = 1 the raw
        // gradient is used, which a one-slot ring reproduces exactly.
        Cdg {
            cfg,
            rtt: MinMax::default(),
            rtt_prev: MinMax::default(),
            gradients: vec![MinMax::default(); cfg.window as usize],
            gsum: MinMax::default(),
            gfilled: false,
            tail: 0,
            state: CdgState::Unknown,
            delack: 0,
            rtt_seq: 0,
            undo_cwnd: 0,
            shadow_wnd: 0,
            backoff_cnt: 0,
            sample_cnt: 0,
            delay_min: 0,
            last_ack_us: None,
            round_start_us: 0,
            rng: BackoffRng::new(cfg.backoff_seed),
            reno: NewReno::new(),
            backoffs: 0,
            backoffs_ineffectual: 0,
            hystart_exits: 0,
            last_grad_us: 0,
        }
    }

    /// The parameters this controller runs with.
    pub fn config(&self) -> &CdgConfig {
        &self.cfg
    }

    /// The shadow window, packets.
    pub fn shadow_wnd(&self) -> u32 {
        self.shadow_wnd
    }

    /// Delay backoffs taken so far.
    pub fn backoffs(&self) -> u64 {
        self.backoffs
    }

    /// `tcp_cdg_grad`: push this RTT's gradients into the window and return the
    /// backoff signal, µs.
    fn grad(&mut self) -> i32 {
        // Hayes & Armitage Eq. (1): g_min = τ_min,n − τ_min,n−1; g_max likewise.
        let mut gmin = self.rtt.min - self.rtt_prev.min;
        let mut gmax = self.rtt.max - self.rtt_prev.max;
        // Eq. (2)–(3) as moving sums over `window` RTTs (Linux).
        let old = self.gradients[self.tail];
        self.gsum.min += gmin - old.min;
        self.gsum.max += gmax - old.max;
        self.gradients[self.tail] = MinMax {
            min: gmin,
            max: gmax,
        };
        self.tail = (self.tail + 1) & (self.cfg.window as usize - 1);
        gmin = self.gsum.min;
        gmax = self.gsum.max;

        // §3.2: the min-RTT gradient leads; the max-RTT gradient catches a queue that
        // drains between RTT minima.
        let mut grad = if gmin > 0 { gmin } else { gmax };
        if !self.gfilled {
            if self.tail == 0 {
                self.gfilled = true;
            } else {
                // Extrapolate the missing slots.
                grad = ((i64::from(grad) * i64::from(self.cfg.window)) / self.tail as i64)
                    .clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32;
            }
        }
        // §3.3: a clear fall in delay shows the last backoff was effective.
        if gmin <= EFFECTIVE_GRAD_US || gmax <= EFFECTIVE_GRAD_US {
            self.backoff_cnt = 0;
        }
        if self.cfg.use_tolerance {
            let gmin = div_round_closest(gmin, TOLERANCE_UNIT_US);
            let gmax = div_round_closest(gmax, TOLERANCE_UNIT_US);
            if gmin > 0 && gmax <= 0 {
                self.state = CdgState::Full;
            } else if (gmin > 0 && gmax > 0) || gmax < 0 {
                self.state = CdgState::NonFull;
            }
        }
        grad
    }

    /// `tcp_cdg_backoff`: draw against `1 − e^(−grad·backoff_factor·10⁻⁶)`; on a
    /// backoff, ask the stack to enter CWR. Returns whether it backed off.
    fn backoff(&mut self, sock: &mut Sock, grad: u32) -> bool {
        let x = (u64::from(grad) * u64::from(self.cfg.backoff_factor)).min(u64::from(u32::MAX));
        // Hayes & Armitage Eq. (4): back off with probability 1 − e^(−g/G).
        if self.rng.next_u32() <= nexp_u32(x as u32) {
            return false;
        }
        if self.cfg.use_ineff != 0 {
            self.backoff_cnt += 1;
            if self.backoff_cnt > self.cfg.use_ineff {
                // §3.3: backoffs stopped lowering the delay; a loss-based flow owns
                // the queue.
                self.backoffs_ineffectual += 1;
                return false;
            }
        }
        // §3.4: the shadow window keeps the pre-backoff window for the next loss.
        self.shadow_wnd = self.shadow_wnd.max(sock.cwnd);
        self.state = CdgState::Backoff;
        self.backoffs += 1;
        // `tcp_enter_cwr`.
        sock.cwr_request = true;
        true
    }

    /// Start a new RTT's min/max (after the per-RTT step or at the end of CWR).
    fn next_rtt_window(&mut self, sock: &Sock) {
        self.rtt_seq = sock.snd_nxt;
        self.rtt_prev = self.rtt;
        self.rtt = MinMax::default();
    }
}

/// `DIV_ROUND_CLOSEST` for signed values.
fn div_round_closest(x: i32, d: i32) -> i32 {
    if (x > 0) == (d > 0) {
        (x + d / 2) / d
    } else {
        (x - d / 2) / d
    }
}

impl Default for Cdg {
    fn default() -> Self {
        Cdg::new(CdgConfig::default())
    }
}

impl CongestionControl for Cdg {
    fn name(&self) -> &'static str {
        "cdg"
    }

    /// `tcp_cdg_init`.
    fn init(&mut self, sock: &mut Sock) {
        *self = Cdg::new(self.cfg);
        self.rtt_seq = sock.snd_nxt;
        self.shadow_wnd = sock.cwnd;
    }

    /// `tcp_cdg_ssthresh`: √½ after a delay backoff; after a loss half of the larger of
    /// cwnd and the shadow window.
    fn ssthresh(&mut self, sock: &Sock) -> u32 {
        self.undo_cwnd = sock.cwnd;
        if self.state == CdgState::Backoff {
            let beta = u64::from(self.cfg.backoff_beta.min(BETA_SCALE));
            return ((u64::from(sock.cwnd) * beta) >> 10).max(u64::from(MIN_SSTHRESH)) as u32;
        }
        if self.state == CdgState::NonFull && self.cfg.use_tolerance {
            return sock.cwnd;
        }
        // §3.4: a loss halves the shadow window (never above 2·cwnd).
        self.shadow_wnd = (self.shadow_wnd >> 1).min(sock.cwnd);
        if self.cfg.use_shadow {
            return MIN_SSTHRESH.max(self.shadow_wnd).max(sock.cwnd >> 1);
        }
        MIN_SSTHRESH.max(sock.cwnd >> 1)
    }

    /// `tcp_cdg_cong_avoid` (never called in CWR or Recovery).
    fn cong_avoid(&mut self, sock: &mut Sock, acked: u32) {
        if sock.in_slow_start() && self.cfg.hystart_detect != 0 {
            self.hystart_update(sock);
        }
        if sock.snd_una > self.rtt_seq && !self.rtt.is_empty() {
            let grad = if self.rtt_prev.is_empty() {
                0
            } else {
                self.grad()
            };
            self.last_grad_us = grad;
            self.next_rtt_window(sock);
            self.last_ack_us = None;
            self.sample_cnt = 0;
            if grad > 0 && self.backoff(sock, grad as u32) {
                return;
            }
        }
        if !sock.is_cwnd_limited() {
            self.shadow_wnd = self.shadow_wnd.min(sock.cwnd);
            return;
        }
        let prior = sock.cwnd;
        self.reno.cong_avoid(sock, acked);
        // §3.4: the shadow window grows as cwnd does.
        self.shadow_wnd = self.shadow_wnd.saturating_add(sock.cwnd - prior);
    }

    /// `tcp_cdg_acked`: feed this RTT's min and max, filtering delayed ACKs.
    fn pkts_acked(&mut self, sock: &mut Sock, sample: &AckSample) {
        let Some(rtt) = sample.rtt else { return };
        let rtt_us = i32::try_from(rtt.as_us()).unwrap_or(i32::MAX);
        if rtt_us <= 0 {
            return;
        }
        if sock.sacked_out == 0 {
            if sample.pkts_acked == 1 && self.delack > 0 {
                // A lone-packet ACK after stretch ACKs is likely delayed: only a
                // provably lower minimum is taken (an empty minimum stays empty).
                self.rtt.min = self.rtt.min.min(rtt_us);
                self.delack -= 1;
                return;
            } else if sample.pkts_acked > 1 && self.delack < DELACK_MAX {
                self.delack += 1;
            }
        }
        if self.rtt.min == 0 || rtt_us < self.rtt.min {
            self.rtt.min = rtt_us;
        }
        self.rtt.max = self.rtt.max.max(rtt_us);
    }

    /// `tcp_cdg_undo_cwnd`.
    fn undo_cwnd(&mut self, sock: &Sock) -> u32 {
        sock.cwnd.max(self.undo_cwnd)
    }

    /// `tcp_cdg_cwnd_event`: idle restart forgets everything; the end of CWR/Recovery
    /// starts a fresh RTT window (gradients during a reduction are not used).
    fn cwnd_event(&mut self, sock: &mut Sock, event: CaEvent) {
        match event {
            CaEvent::CwndRestart => {
                let cfg = self.cfg;
                let rng = self.rng.clone();
                let (backoffs, ineff, exits) =
                    (self.backoffs, self.backoffs_ineffectual, self.hystart_exits);
                *self = Cdg::new(cfg);
                // The random stream continues (it stands for the kernel's RNG).
                self.rng = rng;
                self.backoffs = backoffs;
                self.backoffs_ineffectual = ineff;
                self.hystart_exits = exits;
                self.rtt_seq = sock.snd_nxt;
                self.shadow_wnd = sock.cwnd;
            }
            CaEvent::CompleteCwr => {
                self.state = CdgState::Unknown;
                self.next_rtt_window(sock);
            }
            _ => {}
        }
    }

    /// `"backoff"` while a delay backoff's CWR runs, else Reno's `"slow_start"` or
    /// `"cong_avoid"`.
    fn phase(&self) -> &'static str {
        if self.state == CdgState::Backoff {
            "backoff"
        } else {
            self.reno.phase()
        }
    }

    /// `backoffs` (delay backoffs taken), `backoffs_ineffectual` (suppressed by
    /// `use_ineff`), `hystart_exits`, `shadow_wnd_pkts`, `grad_us` (the last per-RTT
    /// backoff signal), `delay_min_ms`.
    fn info(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("backoffs", self.backoffs as f64),
            ("backoffs_ineffectual", self.backoffs_ineffectual as f64),
            ("hystart_exits", self.hystart_exits as f64),
            ("shadow_wnd_pkts", f64::from(self.shadow_wnd)),
            ("grad_us", f64::from(self.last_grad_us)),
            ("delay_min_ms", f64::from(self.delay_min) / 1000.0),
        ]
    }
}
