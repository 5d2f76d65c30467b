//! PropRate parameters: the two the paper gives the application (t̄_buff, L_max), the
//! switch for the negative-feedback loop, and the implementation choices the paper leaves
//! open, each with its documented default.

use serde::{Deserialize, Serialize};

use cellcc_units::Dur;

use crate::ConfigError;

/// Target average buffer delay of the paper's presets, ms (§5: PR(L), PR(M), PR(H)).
pub const PRESET_L_MS: f64 = 20.0;
/// PR(M): approximately at the crossover of the two regimes (§5).
pub const PRESET_M_MS: f64 = 40.0;
/// PR(H): buffer-full regime (§5).
pub const PRESET_H_MS: f64 = 80.0;

/// Parameters of [`super::PropRate`]. Names follow the paper (`t_buff` is t̄_buff, `l_max`
/// is L_max).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PropRateConfig {
    /// Target average buffer delay t̄_buff, ms (§3.1). Default 40 (PR(M)).
    pub t_buff_ms: f64,
    /// Maximum tolerable end-to-end round-trip latency L_max, ms (§3, Eq. 4–6). Selects the
    /// buffer-emptied regime when t̄_buff < (L_max − RTT)/2. The paper does not state the
    /// value of its runs; default 120, which puts PR(M) (40 ms) at the crossover for the
    /// paper's RTT of 40 ms, as §5 says it is.
    pub l_max_ms: f64,
    /// Run the negative-feedback loop on the threshold T (§3.2, Eq. 9). Default true;
    /// false keeps T = t̄_buff (the "no NFL" curve of Fig. 9).
    pub nfl: bool,
    /// Receive-rate window: distinct receiver timestamps (§4.2, default 50).
    pub rho_timestamps: u32,
    /// Receive-rate window: maximum span, ms (§4.2, default 500).
    pub rho_window_ms: f64,
    /// Weight of each new window rate in the EWMA ρ (§4.2 gives no value; default 1/8, the
    /// weight of Eq. 9).
    pub rho_gain: f64,
    /// Window of the minimum relative one-way delay RD_min, s (§4.1 "the recent past";
    /// default 300, Linux's `tcp_min_rtt_wlen`; see difference 5 in the module header).
    pub rd_min_window_s: f64,
    /// Packets in the first Slow Start burst and in each Monitor burst (§4, default 10).
    pub burst_packets: u32,
    /// Window cap as a multiple of ρ·(RTT + D_max), the flight the waveform needs at its
    /// peak (Table 3 "window-capped"; the paper gives no value; default 1).
    pub cwnd_gain: f64,
    /// Floor of k_d (Eq. 8 can give k_d ≤ 0 when RTT is small against T; default 0.1, so
    /// Buffer Drain keeps sending and its ACKs keep measuring t_buff).
    pub k_d_min: f64,
}

impl Default for PropRateConfig {
    fn default() -> Self {
        PropRateConfig {
            t_buff_ms: PRESET_M_MS,
            l_max_ms: 120.0,
            nfl: true,
            rho_timestamps: 50,
            rho_window_ms: 500.0,
            rho_gain: 0.125,
            rd_min_window_s: 300.0,
            burst_packets: 10,
            cwnd_gain: 1.0,
            k_d_min: 0.1,
        }
    }
}

/// Largest accepted time parameter, ms (one hour): beyond any cellular path, and far from
/// overflowing nanosecond [`Dur`]s.
const MAX_MS: f64 = 3_600_000.0;
/// Largest accepted burst, packets: bursts double in Slow Start, so keep headroom in u32.
const MAX_BURST: u32 = 1 << 16;

impl PropRateConfig {
    /// The paper's preset PR(L), PR(M) or PR(H): this configuration with t̄_buff set.
    pub fn with_t_buff_ms(self, t_buff_ms: f64) -> Self {
        PropRateConfig { t_buff_ms, ..self }
    }

    /// Check every value; the error names the field and the accepted range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |field: &str, reason: String| Err(ConfigError::new("proprate", field, reason));
        for (field, v, unit, max) in [
            ("t_buff_ms", self.t_buff_ms, "ms", MAX_MS),
            ("l_max_ms", self.l_max_ms, "ms", MAX_MS),
            ("rho_window_ms", self.rho_window_ms, "ms", MAX_MS),
            (
                "rd_min_window_s",
                self.rd_min_window_s,
                "s",
                MAX_MS / 1000.0,
            ),
        ] {
            if !(v.is_finite() && v > 0.0 && v <= max) {
                return err(field, format!("{v} must be in (0, {max}] {unit}"));
            }
        }
        if self.t_buff_ms < 1.0 {
            return err(
                "t_buff_ms",
                format!("{} is below 1 ms, the NFL's smallest step", self.t_buff_ms),
            );
        }
        if self.rho_timestamps < 2 {
            return err(
                "rho_timestamps",
                format!(
                    "{} must be at least 2 (a rate needs two timestamps)",
                    self.rho_timestamps
                ),
            );
        }
        if !(self.rho_gain.is_finite() && self.rho_gain > 0.0 && self.rho_gain <= 1.0) {
            return err("rho_gain", format!("{} is outside (0, 1]", self.rho_gain));
        }
        if self.burst_packets == 0 || self.burst_packets > MAX_BURST {
            return err(
                "burst_packets",
                format!("{} is outside 1..={MAX_BURST}", self.burst_packets),
            );
        }
        if !(self.cwnd_gain.is_finite() && (1.0..=100.0).contains(&self.cwnd_gain)) {
            return err(
                "cwnd_gain",
                format!("{} is outside [1, 100]", self.cwnd_gain),
            );
        }
        if !(self.k_d_min.is_finite() && self.k_d_min > 0.0 && self.k_d_min < 1.0) {
            return err("k_d_min", format!("{} is outside (0, 1)", self.k_d_min));
        }
        Ok(())
    }

    /// t̄_buff as a duration.
    pub fn t_buff(&self) -> Dur {
        ms(self.t_buff_ms)
    }

    /// L_max as a duration.
    pub fn l_max(&self) -> Dur {
        ms(self.l_max_ms)
    }

    /// The receive-rate window's span limit.
    pub fn rho_window(&self) -> Dur {
        ms(self.rho_window_ms)
    }

    /// The RD_min window.
    pub fn rd_min_window(&self) -> Dur {
        ms(self.rd_min_window_s * 1000.0)
    }
}

/// Milliseconds (validated finite and non-negative) to a duration, to the nanosecond.
fn ms(v: f64) -> Dur {
    Dur::from_ns((v.clamp(0.0, MAX_MS) * 1e6).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from_toml(text: &str) -> Result<PropRateConfig, String> {
        let de = serde::de::value::MapDeserializer::<_, serde::de::value::Error>::new(
            text.split(',').filter(|s| !s.is_empty()).map(|kv| {
                let (k, v) = kv.split_once('=').unwrap();
                (k.trim().to_string(), v.trim().parse::<f64>().unwrap())
            }),
        );
        PropRateConfig::deserialize(de).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_are_documented_values_and_valid() {
        let c = PropRateConfig::default();
        assert_eq!((c.t_buff_ms, c.l_max_ms, c.nfl), (40.0, 120.0, true));
        assert_eq!(
            (c.rho_timestamps, c.rho_window_ms, c.rho_gain),
            (50, 500.0, 0.125)
        );
        assert_eq!((c.burst_packets, c.cwnd_gain, c.k_d_min), (10, 1.0, 0.1));
        assert_eq!(c.rd_min_window_s, 300.0);
        assert_eq!(c.validate(), Ok(()));
        assert_eq!(c.t_buff(), Dur::from_ms(40));
        assert_eq!(c.l_max(), Dur::from_ms(120));
        assert_eq!(c.rd_min_window(), Dur::from_secs(300));
        let h = c.with_t_buff_ms(PRESET_H_MS);
        assert_eq!(h.t_buff(), Dur::from_ms(80));
    }

    #[test]
    fn partial_tables_fill_defaults_and_unknown_keys_fail() {
        let c = from_toml("t_buff_ms=20,k_d_min=0.2").unwrap();
        assert_eq!((c.t_buff_ms, c.k_d_min, c.l_max_ms), (20.0, 0.2, 120.0));
        let e = from_toml("t_buf_ms=20").unwrap_err();
        assert!(e.contains("unknown field `t_buf_ms`"), "{e}");
    }

    #[test]
    fn validate_names_the_field() {
        let bad = |c: PropRateConfig| c.validate().unwrap_err();
        let d = PropRateConfig::default;
        let e = bad(PropRateConfig {
            t_buff_ms: 0.0,
            ..d()
        });
        assert_eq!(e.field, "t_buff_ms");
        assert_eq!(
            e.to_string(),
            "proprate.t_buff_ms: 0 must be in (0, 3600000] ms"
        );
        assert_eq!(
            bad(PropRateConfig {
                t_buff_ms: 0.5,
                ..d()
            })
            .field,
            "t_buff_ms"
        );
        assert_eq!(
            bad(PropRateConfig {
                l_max_ms: f64::NAN,
                ..d()
            })
            .field,
            "l_max_ms"
        );
        assert_eq!(
            bad(PropRateConfig {
                rho_timestamps: 1,
                ..d()
            })
            .field,
            "rho_timestamps"
        );
        assert_eq!(
            bad(PropRateConfig {
                rho_window_ms: -1.0,
                ..d()
            })
            .field,
            "rho_window_ms"
        );
        assert_eq!(
            bad(PropRateConfig {
                rho_gain: 1.5,
                ..d()
            })
            .field,
            "rho_gain"
        );
        assert_eq!(
            bad(PropRateConfig {
                rd_min_window_s: 0.0,
                ..d()
            })
            .field,
            "rd_min_window_s"
        );
        assert_eq!(
            bad(PropRateConfig {
                burst_packets: 0,
                ..d()
            })
            .field,
            "burst_packets"
        );
        assert_eq!(
            bad(PropRateConfig {
                cwnd_gain: 0.5,
                ..d()
            })
            .field,
            "cwnd_gain"
        );
        assert_eq!(
            bad(PropRateConfig {
                k_d_min: 1.0,
                ..d()
            })
            .field,
            "k_d_min"
        );
    }
}
