//! The proportional gains k_f and k_d from the threshold T (PropRate §3, §3.1, Eq. 3–8).
//!
//! ```text
//! regime (Eq. 6):  buffer emptied  if t̄_buff < (L_max − RTT)/2, else buffer full
//! buffer full (Eq. 7):     k_f = (3/2·T + RTT)/(T + RTT)     k_d = (1/2·T + RTT)/(T + RTT)
//!                          D_max = 3/2·T                      (Eq. 3 with t̄_buff = T)
//! buffer emptied (Eq. 8):  U   = (2T/(L_max − RTT))^(1/4)
//!                          k_f = (2/U·T + RTT)/(T + RTT)
//!                          D_max = U³·(L_max − RTT)           (Eq. 4; equals 2T/U)
//!                          t_f = D_max/(k_f − 1)
//!                          k_d = (RTT − (1−U)/U·k_f·t_f)/(1/U·T + RTT − (1−U)/U·t_f)
//! ```
//!
//! RTT is the round-trip time without buffer delay (the connection's minimum RTT). All
//! durations enter the formulas in ms; k_f, k_d and U are dimensionless.
//!
//! The regime is chosen from t̄_buff, as Eq. 6 is written; the formulas then use the
//! current T, which the negative-feedback loop moves. U is capped at 1 (Eq. 8 with U > 1
//! would describe a buffer that empties for a negative time). Eq. 8's k_d falls to zero
//! or below when RTT is short against T (for T = 20 ms, L_max = 120 ms it does for
//! RTT ≤ 30 ms): the lag of one RTT is then too short to empty the buffer for the time U
//! asks for even when sending nothing. The controller clamps k_d to
//! `[k_d_min, K_D_MAX]` and k_f to at least [`K_F_MIN`], so Fill always fills and Drain
//! always drains but keeps sending.

use cellcc_units::Dur;

/// Smallest k_f used: Fill must outpace the receive rate (§4 "k_f > 1"); 1 % keeps the
/// buffer growing when the NFL has pushed T to its floor.
pub(super) const K_F_MIN: f64 = 1.01;
/// Largest k_d used: Drain must send slower than the receive rate (§4 "k_d < 1").
pub(super) const K_D_MAX: f64 = 0.99;

/// Which waveform of the buffer delay PropRate aims for (§3, Fig. 1 and 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Regime {
    /// The buffer never empties: delay oscillates between D_min = T/2 and D_max = 3T/2.
    BufferFull,
    /// The buffer is emptied periodically: delay oscillates between 0 and D_max, and the
    /// link is used for a fraction U of the time.
    BufferEmptied,
}

/// Eq. 6: the buffer-emptied regime is used only if t̄_buff < (L_max − RTT)/2. An L_max at
/// or below RTT leaves no room for buffer delay at all; the buffer-full regime is used.
pub fn regime(t_buff: Dur, l_max: Dur, rtt: Dur) -> Regime {
    let room = l_max.saturating_sub(rtt);
    if !room.is_zero() && t_buff.as_ns() * 2 < room.as_ns() {
        Regime::BufferEmptied
    } else {
        Regime::BufferFull
    }
}

/// Eq. 7 as printed: `(k_f, k_d)` for the buffer-full regime.
pub fn eq7(t: Dur, rtt: Dur) -> (f64, f64) {
    let (t, rtt) = (t.as_ms_f64(), rtt.as_ms_f64());
    let k_f = (1.5 * t + rtt) / (t + rtt); // PropRate Eq. (7)
    let k_d = (0.5 * t + rtt) / (t + rtt); // PropRate Eq. (7)
    (k_f, k_d)
}

/// Eq. 8 as printed, for the buffer-emptied regime (unclamped k_d).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Eq8 {
    /// Link utilisation U (capped at 1).
    pub u: f64,
    /// Fill gain.
    pub k_f: f64,
    /// Drain gain; may be ≤ 0 (see the module header).
    pub k_d: f64,
    /// Peak buffer delay D_max, ms (Eq. 4).
    pub d_max_ms: f64,
    /// Time spent in Buffer Fill t_f, ms.
    pub t_f_ms: f64,
}

/// Eq. 8 for threshold `t`, RTT `rtt` and latency budget `l_max` (> `rtt`).
pub fn eq8(t: Dur, rtt: Dur, l_max: Dur) -> Eq8 {
    let (t, rtt) = (t.as_ms_f64(), rtt.as_ms_f64());
    let budget = l_max.as_ms_f64() - rtt;
    let u = (2.0 * t / budget).powf(0.25).min(1.0); // PropRate Eq. (8), U
    let k_f = (2.0 / u * t + rtt) / (t + rtt); // PropRate Eq. (8), k_f
    let d_max_ms = u.powi(3) * budget; // PropRate Eq. (4)
    let t_f_ms = d_max_ms / (k_f - 1.0); // PropRate §3.1, t_f = D_max/(k_f − 1)
    let idle = (1.0 - u) / u;
    let k_d = (rtt - idle * k_f * t_f_ms) / (t / u + rtt - idle * t_f_ms); // PropRate Eq. (8), k_d
    Eq8 {
        u,
        k_f,
        k_d,
        d_max_ms,
        t_f_ms,
    }
}

/// The gains in use, after clamping.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gains {
    /// The buffer-delay waveform the gains are for (Eq. 6).
    pub regime: Regime,
    /// Utilisation the waveform aims for (1 in the buffer-full regime).
    pub u: f64,
    /// σ_f = k_f·ρ in Buffer Fill.
    pub k_f: f64,
    /// σ_d = k_d·ρ in Buffer Drain.
    pub k_d: f64,
    /// Peak buffer delay of the waveform, sizing the window cap.
    pub d_max: Dur,
}

impl Gains {
    /// Gains for threshold `t` and `rtt` in `regime`, with k_d at least `k_d_min`.
    pub fn new(regime: Regime, t: Dur, rtt: Dur, l_max: Dur, k_d_min: f64) -> Gains {
        let (u, k_f, k_d, d_max) = match regime {
            Regime::BufferFull => {
                let (k_f, k_d) = eq7(t, rtt);
                // Eq. (3) with t̄_buff = T: D_min = T/2, D_max = D_min + T.
                (1.0, k_f, k_d, t + t / 2)
            }
            Regime::BufferEmptied => {
                let e = eq8(t, rtt, l_max);
                (e.u, e.k_f, e.k_d, Dur::from_ns((e.d_max_ms * 1e6) as u64))
            }
        };
        // NaN (a degenerate T = RTT = 0) falls to the bounds as well.
        let k_f = if k_f >= K_F_MIN { k_f } else { K_F_MIN };
        let k_d = if k_d >= k_d_min {
            k_d.min(K_D_MAX)
        } else {
            k_d_min
        };
        Gains {
            regime,
            u,
            k_f,
            k_d,
            d_max,
        }
    }
}
