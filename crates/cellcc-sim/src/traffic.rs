//! Background traffic for a loaded cell: UDP constant-bit-rate and on/off sources, and
//! many short TCP flows with random sizes and arrival times.
//!
//! Sources:
//! - The LTE TCP study (`tcp-over-lte-study`): §3.2, background load made of many short
//!   TCP connections whose sizes and inter-arrival times are drawn from (uniform)
//!   random distributions; §5.1, a total background load of 50 % of the link capacity,
//!   short flows with exponentially distributed sizes, and background traffic started
//!   or stopped at 20 s for a sudden capacity decrease or increase (Fig. 5).
//! - C2TCP, IEEE JSAC 2019, §VI: UDP streams to three other UEs compete with the UE
//!   under test at the base station.
//!
//! Model. Generators are sans-I/O: each owns a seeded [`ChaCha8Rng`] handed to it at
//! construction (the simulator derives one stream per source from the master seed) and
//! yields its events one at a time, in time order, as [`Time`]s:
//!
//! * [`UdpSource`], CBR: packet n of `packet_bytes` leaves at
//!   `start + ⌈n·packet_bytes·8 / rate⌉` (in ns, from the start, so spacing never drifts).
//! * [`UdpSource`], on/off: alternating periods drawn from `on_s` and `off_s`; during an
//!   on period the CBR clock restarts at the period's start; nothing is sent while off.
//! * [`ShortFlowArrivals`]: flow k starts at `start + g_1 + … + g_k` with i.i.d. gaps
//!   (exponential for Poisson arrivals at rate λ) and carries an i.i.d. size.
//!   `load = ρ` with a capacity `C` gives `λ = ρ·C / E[size]`.
//!
//! ```text
//!   on/off:  start_s ──► ON ──(on period ends)──► OFF ──(off period ends)──► ON ──► …
//!            every state ──(time reaches stop_s)──► DONE (no event at or after stop_s)
//! ```
//!
//! Differences from the study:
//! 1. The study does not publish its distributions' bounds; here every distribution is
//!    configurable, and `load` derives the Poisson rate from the mean size.
//! 2. `load` counts application bytes; TCP/IP headers add 52/1448 ≈ 3.6 % on the wire.
//! 3. Sizes are rounded to whole bytes, at least 1; durations to whole nanoseconds.
//!
//! Every random number comes from the generator through `+ − × ÷` and `sqrt` (exact in
//! IEEE 754) and our own `ln`/`exp` (`traffic/distribution.rs`), never the platform's
//! libm, so the same seed gives bit-identical traffic on every machine.

mod distribution;

use std::fmt;

use cellcc_units::{Bandwidth, Dur, Time};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

pub use distribution::Distribution;

/// Default UDP packet: a full 1500-byte IP packet.
const DEFAULT_PACKET_BYTES: u32 = 1500;
/// Shortest mean on period accepted, seconds: keeps an on/off source from spinning on
/// periods that round to 0 ns.
const MIN_MEAN_ON_S: f64 = 1e-6;
/// Bits per megabit.
const BITS_PER_MBIT: f64 = 1e6;

/// A configuration value that cannot be used; `field` is the key path within the
/// source's table, e.g. `size.shape`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct TrafficConfigError {
    /// The key path within the source's table.
    pub field: String,
    /// What is wrong with the value.
    pub reason: String,
}

fn invalid<T>(
    field: impl fmt::Display,
    reason: impl Into<String>,
) -> Result<T, TrafficConfigError> {
    Err(TrafficConfigError {
        field: field.to_string(),
        reason: reason.into(),
    })
}

fn default_packet_bytes() -> u32 {
    DEFAULT_PACKET_BYTES
}

/// When a source is active: from `start_s` (default 0) until `stop_s` (default: never).
fn check_window(
    start_s: f64,
    stop_s: Option<f64>,
) -> Result<(Time, Option<Time>), TrafficConfigError> {
    if !(start_s.is_finite() && start_s >= 0.0) {
        return invalid("start_s", format!("{start_s} must be a finite time >= 0"));
    }
    let start = Time(Dur::from_secs_f64(start_s).as_ns());
    let stop = match stop_s {
        None => None,
        Some(stop_s) if stop_s.is_finite() && stop_s > start_s => {
            Some(Time(Dur::from_secs_f64(stop_s).as_ns()))
        }
        Some(stop_s) => {
            return invalid(
                "stop_s",
                format!("{stop_s} must be a finite time after start_s = {start_s}"),
            )
        }
    };
    Ok((start, stop))
}

fn check_rate(rate_mbps: f64) -> Result<Bandwidth, TrafficConfigError> {
    let rate = Bandwidth::from_mbps(rate_mbps);
    if rate_mbps.is_finite() && rate_mbps > 0.0 && rate.bits_per_sec > 0 {
        Ok(rate)
    } else {
        invalid(
            "rate_mbps",
            format!("{rate_mbps} is not a positive rate in Mbit/s"),
        )
    }
}

fn check_packet(packet_bytes: u32) -> Result<u32, TrafficConfigError> {
    if packet_bytes == 0 {
        return invalid(
            "packet_bytes",
            "must be at least 1 byte (the IP packet length)",
        );
    }
    Ok(packet_bytes)
}

/// UDP at a constant bit rate (`kind = "cbr"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CbrConfig {
    /// Sending rate, Mbit/s of IP packets.
    pub rate_mbps: f64,
    /// IP length of every packet (default 1500).
    #[serde(default = "default_packet_bytes")]
    pub packet_bytes: u32,
    /// First packet at this time, s (default 0).
    #[serde(default)]
    pub start_s: f64,
    /// No packet at or after this time, s (default: never stops).
    #[serde(default)]
    pub stop_s: Option<f64>,
}

/// UDP on/off (`kind = "onoff"`): CBR at `rate_mbps` during on periods, silent during
/// off periods; periods in seconds drawn from `on_s` and `off_s`; starts on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OnOffConfig {
    /// Rate while on, Mbit/s.
    pub rate_mbps: f64,
    /// IP length of every packet (default 1500).
    #[serde(default = "default_packet_bytes")]
    pub packet_bytes: u32,
    /// On-period lengths, s (mean at least 1 µs).
    pub on_s: Distribution,
    /// Off-period lengths, s.
    pub off_s: Distribution,
    /// First on period starts at this time, s (default 0).
    #[serde(default)]
    pub start_s: f64,
    /// No packet at or after this time, s (default: never stops).
    #[serde(default)]
    pub stop_s: Option<f64>,
}

impl CbrConfig {
    /// Check a positive rate, a packet of at least 1 byte and the start/stop window; the
    /// error names the key.
    pub fn validate(&self) -> Result<(), TrafficConfigError> {
        check_rate(self.rate_mbps)?;
        check_packet(self.packet_bytes)?;
        check_window(self.start_s, self.stop_s).map(|_| ())
    }
}

impl OnOffConfig {
    /// Check the rate, packet size, both distributions (mean on period ≥ 1 µs) and the
    /// start/stop window; the error names the key.
    pub fn validate(&self) -> Result<(), TrafficConfigError> {
        check_rate(self.rate_mbps)?;
        check_packet(self.packet_bytes)?;
        self.on_s.validate("on_s")?;
        self.off_s.validate("off_s")?;
        // Validated parameters give a mean that is not NaN.
        if self.on_s.mean() < MIN_MEAN_ON_S {
            return invalid(
                "on_s",
                format!("the mean on period must be at least {MIN_MEAN_ON_S} s"),
            );
        }
        check_window(self.start_s, self.stop_s).map(|_| ())
    }

    /// Fraction of time on: `E[on] / (E[on] + E[off])`.
    pub fn duty_cycle(&self) -> f64 {
        let on = self.on_s.mean();
        on / (on + self.off_s.mean())
    }
}

/// The random part of an on/off source.
#[derive(Clone, Debug)]
struct OnOffPeriods {
    on: Distribution,
    off: Distribution,
    rng: ChaCha8Rng,
}

/// A UDP source: CBR or on/off. Yields send times in non-decreasing order.
#[derive(Clone, Debug)]
pub struct UdpSource {
    rate: Bandwidth,
    packet_bytes: u32,
    stop: Option<Time>,
    /// `None` for CBR.
    periods: Option<OnOffPeriods>,
    /// Origin of the current on period's CBR clock.
    period_start: Time,
    /// End of the current on period; `None` for CBR.
    period_end: Option<Time>,
    /// Packets sent in the current on period.
    sent_in_period: u64,
    done: bool,
}

impl UdpSource {
    /// A CBR source (no randomness).
    pub fn cbr(config: &CbrConfig) -> Result<Self, TrafficConfigError> {
        config.validate()?;
        let (start, stop) = check_window(config.start_s, config.stop_s)?;
        Ok(UdpSource {
            rate: Bandwidth::from_mbps(config.rate_mbps),
            packet_bytes: config.packet_bytes,
            stop,
            periods: None,
            period_start: start,
            period_end: None,
            sent_in_period: 0,
            done: false,
        })
    }

    /// An on/off source drawing its periods from `rng`.
    pub fn on_off(config: &OnOffConfig, rng: ChaCha8Rng) -> Result<Self, TrafficConfigError> {
        config.validate()?;
        let (start, stop) = check_window(config.start_s, config.stop_s)?;
        let mut periods = OnOffPeriods {
            on: config.on_s.clone(),
            off: config.off_s.clone(),
            rng,
        };
        let first_on = seconds(periods.on.sample(&mut periods.rng));
        Ok(UdpSource {
            rate: Bandwidth::from_mbps(config.rate_mbps),
            packet_bytes: config.packet_bytes,
            stop,
            period_start: start,
            period_end: Some(start.saturating_add(first_on)),
            periods: Some(periods),
            sent_in_period: 0,
            done: false,
        })
    }

    /// IP length of every packet.
    pub fn packet_bytes(&self) -> u32 {
        self.packet_bytes
    }

    /// When the next packet leaves; `None` once the source has stopped.
    pub fn next_send(&mut self) -> Option<Time> {
        while !self.done {
            // Packet n of the period leaves ⌈n·bits/rate⌉ after its start.
            let offset = self
                .rate
                .transmit_time(self.sent_in_period * u64::from(self.packet_bytes));
            let at = self.period_start.saturating_add(offset);
            if self.stop.is_some_and(|stop| at >= stop) {
                self.done = true;
                break;
            }
            match (self.period_end, &mut self.periods) {
                (Some(end), Some(periods)) if at >= end => {
                    let off = seconds(periods.off.sample(&mut periods.rng));
                    let on = seconds(periods.on.sample(&mut periods.rng));
                    self.period_start = end.saturating_add(off);
                    self.period_end = Some(self.period_start.saturating_add(on));
                    self.sent_in_period = 0;
                    if self.period_start == Time::MAX {
                        self.done = true;
                    }
                }
                _ => {
                    self.sent_in_period += 1;
                    return Some(at);
                }
            }
        }
        None
    }
}

impl Iterator for UdpSource {
    type Item = Time;
    fn next(&mut self) -> Option<Time> {
        self.next_send()
    }
}

/// A sampled duration in seconds as nanoseconds (negative or NaN samples give 0).
fn seconds(s: f64) -> Dur {
    Dur::from_secs_f64(s)
}

/// Many short TCP flows (`kind = "short_flows"`). Arrivals are given by exactly one of
/// `rate_per_s` (Poisson), `load` with `capacity_mbps` (Poisson with
/// `λ = load·capacity / E[size]`), or `interarrival_s` (any renewal process).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShortFlowsConfig {
    /// Poisson arrival rate λ, flows per second.
    #[serde(default)]
    pub rate_per_s: Option<f64>,
    /// Offered load as a fraction of `capacity_mbps` (0.5 in the LTE study).
    #[serde(default)]
    pub load: Option<f64>,
    /// Capacity that `load` refers to, Mbit/s.
    #[serde(default)]
    pub capacity_mbps: Option<f64>,
    /// Gaps between arrivals, s.
    #[serde(default)]
    pub interarrival_s: Option<Distribution>,
    /// Flow sizes, application bytes.
    pub size: Distribution,
    /// Arrivals begin here: the first is one gap after this time, s (default 0).
    #[serde(default)]
    pub start_s: f64,
    /// No arrival at or after this time, s (default: never stops).
    #[serde(default)]
    pub stop_s: Option<f64>,
}

impl ShortFlowsConfig {
    /// Checks the fields and returns the gap distribution (seconds).
    pub fn interarrival(&self) -> Result<Distribution, TrafficConfigError> {
        self.size.validate("size")?;
        check_window(self.start_s, self.stop_s)?;
        let positive = |field: &str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(v)
            } else {
                invalid(field, format!("{v} must be a finite number > 0"))
            }
        };
        let poisson = |lambda: f64| Distribution::Exponential { mean: 1.0 / lambda };
        match (
            self.rate_per_s,
            self.load,
            self.capacity_mbps,
            &self.interarrival_s,
        ) {
            (Some(lambda), None, None, None) => Ok(poisson(positive("rate_per_s", lambda)?)),
            (None, Some(load), Some(capacity_mbps), None) => {
                let load = positive("load", load)?;
                let capacity_mbps = positive("capacity_mbps", capacity_mbps)?;
                let capacity_bytes_per_s = capacity_mbps * BITS_PER_MBIT / 8.0;
                let mean_size = self.size.mean();
                if !(mean_size.is_finite() && mean_size > 0.0) {
                    let reason = format!(
                        "`load` needs a finite, positive mean size; this one is {mean_size}"
                    );
                    return invalid("size", reason);
                }
                // λ = ρ·C / E[size].
                Ok(poisson(load * capacity_bytes_per_s / mean_size))
            }
            (None, None, None, Some(gaps)) => {
                gaps.validate("interarrival_s")?;
                if gaps.mean() <= 0.0 {
                    return invalid("interarrival_s", "the mean gap must be positive");
                }
                Ok(gaps.clone())
            }
            (None, Some(_), None, None) => invalid(
                "capacity_mbps",
                "`load` needs the capacity it is a fraction of",
            ),
            (None, None, Some(_), None) => {
                invalid("load", "`capacity_mbps` is only used with `load`")
            }
            _ => invalid(
                "rate_per_s",
                "give exactly one of `rate_per_s`, `load` with `capacity_mbps`, or \
                 `interarrival_s`",
            ),
        }
    }

    /// Check that exactly one way of giving arrivals is used and every value is valid; the
    /// error names the key.
    pub fn validate(&self) -> Result<(), TrafficConfigError> {
        self.interarrival().map(|_| ())
    }
}

/// One short flow: when it starts and how many application bytes it carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShortFlow {
    /// When the flow starts.
    pub start: Time,
    /// Application bytes it carries.
    pub bytes: u64,
}

/// Arrivals of short flows, in time order.
#[derive(Clone, Debug)]
pub struct ShortFlowArrivals {
    gaps: Distribution,
    size: Distribution,
    /// The previous arrival (or the start).
    last: Time,
    stop: Option<Time>,
    rng: ChaCha8Rng,
    done: bool,
}

impl ShortFlowArrivals {
    /// The arrivals of `config`, drawing gaps and sizes from `rng`.
    pub fn new(config: &ShortFlowsConfig, rng: ChaCha8Rng) -> Result<Self, TrafficConfigError> {
        let gaps = config.interarrival()?;
        let (start, stop) = check_window(config.start_s, config.stop_s)?;
        Ok(ShortFlowArrivals {
            gaps,
            size: config.size.clone(),
            last: start,
            stop,
            rng,
            done: false,
        })
    }

    /// Mean arrival rate, flows per second.
    pub fn rate_per_s(&self) -> f64 {
        1.0 / self.gaps.mean()
    }

    /// The next flow; `None` once an arrival would be at or after `stop_s`.
    pub fn next_flow(&mut self) -> Option<ShortFlow> {
        if self.done {
            return None;
        }
        let start = self
            .last
            .saturating_add(seconds(self.gaps.sample(&mut self.rng)));
        if start == Time::MAX || self.stop.is_some_and(|stop| start >= stop) {
            self.done = true;
            return None;
        }
        self.last = start;
        // Rounded to whole bytes, at least one (`as` saturates huge samples).
        let bytes = (self.size.sample(&mut self.rng).round() as u64).max(1);
        Some(ShortFlow { start, bytes })
    }
}

impl Iterator for ShortFlowArrivals {
    type Item = ShortFlow;
    fn next(&mut self) -> Option<ShortFlow> {
        self.next_flow()
    }
}

/// One `[[background]]` source of a scenario, tagged by `kind`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BackgroundSource {
    /// UDP at a constant bit rate.
    Cbr(CbrConfig),
    /// UDP switching between a constant bit rate and silence.
    #[serde(rename = "onoff")]
    OnOff(OnOffConfig),
    /// Short TCP flows with random arrivals and sizes.
    ShortFlows(ShortFlowsConfig),
}

impl BackgroundSource {
    /// Check the source's parameters; the error names the key within its table.
    pub fn validate(&self) -> Result<(), TrafficConfigError> {
        match self {
            BackgroundSource::Cbr(c) => c.validate(),
            BackgroundSource::OnOff(c) => c.validate(),
            BackgroundSource::ShortFlows(c) => c.validate(),
        }
    }
}

#[cfg(test)]
mod tests;
