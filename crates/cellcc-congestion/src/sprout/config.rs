//! Sprout parameters, with the NSDI 2013 paper's (and reference code's) defaults.

use serde::{Deserialize, Serialize};

use cellcc_units::Dur;

use crate::ConfigError;

/// Parameters of [`super::Sprout`] and its receiver-side forecaster.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SproutConfig {
    /// Top of the link-rate grid, packets per second (reference `MAX_ARRIVAL_RATE` =
    /// 1000, i.e. 12 Mbit/s of 1500-byte packets). Faster links need a larger value.
    pub max_rate_pps: f64,
    /// Points of the rate grid, 0 and `max_rate_pps` included (reference `NUM_BINS` = 256).
    pub bins: u32,
    /// Brownian-motion volatility σ of the rate, packets/s per √s (§3.1: 200).
    pub sigma_pps: f64,
    /// Rate λ_z of escaping the outage state λ = 0, per second (§3.1: 1).
    pub outage_escape_per_s: f64,
    /// Length of a tick, ms (§3: 20).
    pub tick_ms: f64,
    /// Ticks forecast (§3.3: 8, i.e. 160 ms).
    pub forecast_ticks: u32,
    /// Delay target in ticks: the window is the deliveries forecast within it (§3.4:
    /// 100 ms = 5 ticks).
    pub target_ticks: u32,
    /// Quantile of the cumulative-delivery forecast (§3.3: the 5th percentile).
    pub quantile: f64,
    /// Payload bytes counted as one packet by the observer (the reference divides bytes
    /// by 1400 and sizes windows in 1440-byte packets; default the MSS, 1448).
    pub packet_bytes: u32,
    /// After an arrival, ticks without arrivals are not observed for this long, ms: the
    /// reference sender announces a 50 ms gap (`time_to_next`) at the end of each flight.
    pub idle_skip_ms: f64,
    /// Smallest cwnd, packets: the TCP stand-in for the reference's 50 ms heartbeat
    /// packets, so that an outage forecast can be disproved.
    pub min_cwnd: u32,
}

impl Default for SproutConfig {
    fn default() -> Self {
        SproutConfig {
            max_rate_pps: 1000.0,
            bins: 256,
            sigma_pps: 200.0,
            outage_escape_per_s: 1.0,
            tick_ms: 20.0,
            forecast_ticks: 8,
            target_ticks: 5,
            quantile: 0.05,
            packet_bytes: 1448,
            idle_skip_ms: 50.0,
            min_cwnd: 2,
        }
    }
}

/// Largest rate grid: the forecast tables grow with (rate × tick)²; 100 000 packets/s is
/// 1.2 Gbit/s, beyond any cellular link.
const MAX_RATE_PPS: f64 = 100_000.0;
/// Most grid points: tables are bins × ticks × counts.
const MAX_BINS: u32 = 4096;
/// Most forecast ticks: a feedback value per tick must fit on an ACK.
const MAX_TICKS: u32 = crate::feedback::FEEDBACK_VALUES as u32;
/// Longest tick, ms.
const MAX_TICK_MS: f64 = 1000.0;
/// Cap of the per-tick arrivals table: 1.5 × the top rate's mean count (the reference's
/// 30 for 20 per tick) must stay below this.
const MAX_TICK_COUNT: f64 = 20_000.0;

impl SproutConfig {
    /// Check every value; the error names the field and the accepted range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |field: &str, reason: String| Err(ConfigError::new("sprout", field, reason));
        if !(self.max_rate_pps.is_finite()
            && self.max_rate_pps > 0.0
            && self.max_rate_pps <= MAX_RATE_PPS)
        {
            return err(
                "max_rate_pps",
                format!("{} must be in (0, {MAX_RATE_PPS}]", self.max_rate_pps),
            );
        }
        if !(3..=MAX_BINS).contains(&self.bins) {
            return err("bins", format!("{} must be in [3, {MAX_BINS}]", self.bins));
        }
        if !(self.sigma_pps.is_finite() && self.sigma_pps > 0.0) {
            return err("sigma_pps", format!("{} must be > 0", self.sigma_pps));
        }
        if !(self.outage_escape_per_s.is_finite() && self.outage_escape_per_s >= 0.0) {
            return err(
                "outage_escape_per_s",
                format!("{} must be >= 0", self.outage_escape_per_s),
            );
        }
        if !(self.tick_ms.is_finite() && self.tick_ms >= 1.0 && self.tick_ms <= MAX_TICK_MS) {
            return err(
                "tick_ms",
                format!("{} must be in [1, {MAX_TICK_MS}] ms", self.tick_ms),
            );
        }
        if !(1..=MAX_TICKS).contains(&self.forecast_ticks) {
            return err(
                "forecast_ticks",
                format!(
                    "{} must be in [1, {MAX_TICKS}] (one ACK value per tick)",
                    self.forecast_ticks
                ),
            );
        }
        if !(1..=self.forecast_ticks).contains(&self.target_ticks) {
            return err(
                "target_ticks",
                format!(
                    "{} must be in [1, forecast_ticks = {}]",
                    self.target_ticks, self.forecast_ticks
                ),
            );
        }
        if !(self.quantile > 0.0 && self.quantile < 1.0) {
            return err("quantile", format!("{} must be in (0, 1)", self.quantile));
        }
        if self.packet_bytes == 0 {
            return err("packet_bytes", "must be > 0".into());
        }
        if !(self.idle_skip_ms.is_finite() && self.idle_skip_ms >= 0.0 && self.idle_skip_ms <= 1e6)
        {
            return err(
                "idle_skip_ms",
                format!("{} must be in [0, 1e6] ms", self.idle_skip_ms),
            );
        }
        if self.min_cwnd == 0 {
            return err("min_cwnd", "must be >= 1 (TCP sends nothing at 0)".into());
        }
        if self.tick_count_limit() as f64 > MAX_TICK_COUNT {
            return err(
                "max_rate_pps",
                format!(
                    "max_rate_pps × tick_ms = {:.0} packets per tick is too many (at most {:.0})",
                    self.max_rate_pps * self.tick_ms / 1000.0,
                    MAX_TICK_COUNT / 1.5
                ),
            );
        }
        Ok(())
    }

    /// Length of a tick.
    pub fn tick(&self) -> Dur {
        Dur::from_ns((self.tick_ms * 1e6).round() as u64)
    }

    /// Per-tick arrival counts the forecast tables resolve, `0..limit` (reference
    /// `MAX_ARRIVALS_PER_TICK` = 30 for 20 packets per tick at the top rate: 1.5 ×).
    pub fn tick_count_limit(&self) -> u32 {
        (1.5 * self.max_rate_pps * self.tick_ms / 1000.0)
            .ceil()
            .max(2.0) as u32
    }
}
