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
    pub field: String,
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
    #[serde(default = "default_packet_bytes")]
    pub packet_bytes: u32,
    /// On-period lengths, s (mean at least 1 µs).
    pub on_s: Distribution,
    /// Off-period lengths, s.
    pub off_s: Distribution,
    #[serde(default)]
    pub start_s: f64,
    #[serde(default)]
    pub stop_s: Option<f64>,
}

impl CbrConfig {
    pub fn validate(&self) -> Result<(), TrafficConfigError> {
        check_rate(self.rate_mbps)?;
        check_packet(self.packet_bytes)?;
        check_window(self.start_s, self.stop_s).map(|_| ())
    }
}

impl OnOffConfig {
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
    #[serde(default)]
    pub start_s: f64,
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

    pub fn validate(&self) -> Result<(), TrafficConfigError> {
        self.interarrival().map(|_| ())
    }
}

/// One short flow: when it starts and how many application bytes it carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShortFlow {
    pub start: Time,
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
    Cbr(CbrConfig),
    #[serde(rename = "onoff")]
    OnOff(OnOffConfig),
    ShortFlows(ShortFlowsConfig),
}

impl BackgroundSource {
    pub fn validate(&self) -> Result<(), TrafficConfigError> {
        match self {
            BackgroundSource::Cbr(c) => c.validate(),
            BackgroundSource::OnOff(c) => c.validate(),
            BackgroundSource::ShortFlows(c) => c.validate(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    fn rng(seed: u64) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(seed)
    }

    fn rel_err(measured: f64, expected: f64) -> f64 {
        (measured - expected).abs() / expected
    }

    #[test]
    fn cbr_spacing_is_exact_and_does_not_drift() {
        // 1500 bytes at 12 Mbit/s: one packet per millisecond exactly.
        let mut s = UdpSource::cbr(&CbrConfig {
            rate_mbps: 12.0,
            packet_bytes: 1500,
            start_s: 0.0,
            stop_s: None,
        })
        .unwrap();
        let first: Vec<Time> = s.by_ref().take(4).collect();
        assert_eq!(first, (0..4).map(Time::from_ms).collect::<Vec<_>>());
        // 1000 bytes at 3 Mbit/s = 8/3 ms: packet 3000 is at exactly 8 s.
        let mut s = UdpSource::cbr(&CbrConfig {
            rate_mbps: 3.0,
            packet_bytes: 1000,
            start_s: 0.0,
            stop_s: None,
        })
        .unwrap();
        assert_eq!(s.next_send(), Some(Time::ZERO));
        assert_eq!(s.next_send(), Some(Time(2_666_667)));
        assert_eq!(s.nth(2998), Some(Time::from_secs(8)));
    }

    #[test]
    fn start_and_stop_are_honoured() {
        let config = CbrConfig {
            rate_mbps: 12.0,
            packet_bytes: 1500,
            start_s: 1.0,
            stop_s: Some(2.0),
        };
        let times: Vec<Time> = UdpSource::cbr(&config).unwrap().collect();
        assert_eq!(times.len(), 1000);
        assert_eq!(times[0], Time::from_secs(1));
        assert_eq!(times[999], Time::from_ms(1999));
        let flows: Vec<ShortFlow> = ShortFlowArrivals::new(
            &ShortFlowsConfig {
                rate_per_s: Some(100.0),
                load: None,
                capacity_mbps: None,
                interarrival_s: None,
                size: Distribution::Constant { value: 10_000.0 },
                start_s: 20.0,
                stop_s: Some(30.0),
            },
            rng(5),
        )
        .unwrap()
        .collect();
        assert!(flows.first().unwrap().start > Time::from_secs(20));
        assert!(flows.last().unwrap().start < Time::from_secs(30));
        assert!(flows.windows(2).all(|w| w[0].start <= w[1].start));
        // About 100 flows per second for 10 s (Poisson: sd ≈ 32).
        assert!((900..1100).contains(&flows.len()), "{}", flows.len());
        assert!(flows.iter().all(|f| f.bytes == 10_000));
    }

    #[test]
    fn on_off_with_constant_periods_is_exact() {
        let config = OnOffConfig {
            rate_mbps: 12.0,
            packet_bytes: 1500,
            on_s: Distribution::Constant { value: 0.1 },
            off_s: Distribution::Constant { value: 0.3 },
            start_s: 0.5,
            stop_s: Some(1.3),
        };
        assert_eq!(config.duty_cycle(), 0.25);
        let times: Vec<u64> = UdpSource::on_off(&config, rng(1))
            .unwrap()
            .map(|t| t.as_ms())
            .collect();
        // On [500, 600) and [900, 1000); the third on period starts at 1300 = stop.
        let expected: Vec<u64> = (500..600).chain(900..1000).collect();
        assert_eq!(times, expected);
    }

    #[test]
    fn on_off_duty_cycle_matches_over_a_long_run() {
        // On ~ Exp(0.5 s), off ~ Exp(1.5 s): duty cycle 0.25. 8 Mbit/s with 10 000-byte
        // packets is 100 packets/s while on. 10 000 on/off cycles: sd of the measured
        // duty cycle ≈ 1 %.
        let config = OnOffConfig {
            rate_mbps: 8.0,
            packet_bytes: 10_000,
            on_s: Distribution::Exponential { mean: 0.5 },
            off_s: Distribution::Exponential { mean: 1.5 },
            start_s: 0.0,
            stop_s: Some(20_000.0),
        };
        let sent = UdpSource::on_off(&config, rng(11)).unwrap().count() as f64;
        let expected = 100.0 * 20_000.0 * config.duty_cycle();
        println!("on/off: {sent} packets, expected {expected}");
        assert!(rel_err(sent, expected) < 0.04, "{sent} vs {expected}");
    }

    #[test]
    fn loaded_cell_arrivals_offer_the_requested_load() {
        // The LTE study's loaded cell: 50 % of 20 Mbit/s in flows of mean 50 kB:
        // λ = 0.5·2.5e6/5e4 = 25 flows/s.
        let config = ShortFlowsConfig {
            rate_per_s: None,
            load: Some(0.5),
            capacity_mbps: Some(20.0),
            interarrival_s: None,
            size: Distribution::Exponential { mean: 50_000.0 },
            start_s: 0.0,
            stop_s: Some(4000.0),
        };
        let arrivals = ShortFlowArrivals::new(&config, rng(2)).unwrap();
        assert!(rel_err(arrivals.rate_per_s(), 25.0) < 1e-12);
        let flows: Vec<ShortFlow> = arrivals.collect();
        let n = flows.len() as f64;
        let bytes: u64 = flows.iter().map(|f| f.bytes).sum();
        let load = bytes as f64 * 8.0 / 4000.0 / 20e6;
        let mean_gap = flows.last().unwrap().start.as_secs_f64() / n;
        println!("short flows: {n} flows, mean gap {mean_gap:.5} s, offered load {load:.4}");
        assert!(rel_err(n, 100_000.0) < 0.02, "{n} flows");
        assert!(rel_err(mean_gap, 0.04) < 0.02, "mean gap {mean_gap}");
        assert!(rel_err(load, 0.5) < 0.03, "load {load}");
        // Uniform gaps, as the study drew them.
        let uniform = ShortFlowsConfig {
            load: None,
            capacity_mbps: None,
            interarrival_s: Some(Distribution::Uniform { min: 0.0, max: 0.2 }),
            ..config
        };
        let flows: Vec<ShortFlow> = ShortFlowArrivals::new(&uniform, rng(2)).unwrap().collect();
        assert!(
            rel_err(flows.len() as f64, 40_000.0) < 0.02,
            "{}",
            flows.len()
        );
    }

    #[test]
    fn same_seed_same_traffic_other_seed_other_traffic() {
        let config = ShortFlowsConfig {
            rate_per_s: Some(10.0),
            load: None,
            capacity_mbps: None,
            interarrival_s: None,
            size: Distribution::Lognormal {
                mu: 9.0,
                sigma: 1.5,
            },
            start_s: 0.0,
            stop_s: Some(100.0),
        };
        let run = |seed| -> Vec<ShortFlow> {
            ShortFlowArrivals::new(&config, rng(seed))
                .unwrap()
                .collect()
        };
        assert_eq!(run(1), run(1));
        assert_ne!(run(1), run(2));
        let on_off = OnOffConfig {
            rate_mbps: 5.0,
            packet_bytes: 1200,
            on_s: Distribution::Pareto {
                shape: 1.5,
                min: 0.01,
            },
            off_s: Distribution::Exponential { mean: 0.2 },
            start_s: 0.0,
            stop_s: Some(30.0),
        };
        let times =
            |seed| -> Vec<Time> { UdpSource::on_off(&on_off, rng(seed)).unwrap().collect() };
        assert_eq!(times(4), times(4));
        assert_ne!(times(4), times(5));
    }

    #[test]
    fn validation_names_the_field() {
        let field = |r: Result<(), TrafficConfigError>| r.unwrap_err().field;
        assert_eq!(
            field(
                Distribution::Pareto {
                    shape: 0.0,
                    min: 1.0
                }
                .validate("size")
            ),
            "size.shape"
        );
        assert_eq!(
            field(Distribution::Uniform { min: 5.0, max: 1.0 }.validate("on_s")),
            "on_s.max"
        );
        assert_eq!(
            field(
                Distribution::Empirical {
                    cdf: vec![(1.0, 0.5), (2.0, 0.9)]
                }
                .validate("size")
            ),
            "size.cdf[1]"
        );
        assert_eq!(
            field(
                Distribution::Empirical {
                    cdf: vec![(3.0, 0.5), (2.0, 1.0)]
                }
                .validate("size")
            ),
            "size.cdf[1]"
        );
        let cbr = CbrConfig {
            rate_mbps: 0.0,
            packet_bytes: 1500,
            start_s: 0.0,
            stop_s: None,
        };
        assert_eq!(field(cbr.validate()), "rate_mbps");
        let late = CbrConfig {
            rate_mbps: 1.0,
            start_s: 5.0,
            stop_s: Some(5.0),
            ..cbr
        };
        assert_eq!(field(late.validate()), "stop_s");
        let flows = ShortFlowsConfig {
            rate_per_s: Some(1.0),
            load: Some(0.5),
            capacity_mbps: Some(10.0),
            interarrival_s: None,
            size: Distribution::Exponential { mean: 1000.0 },
            start_s: 0.0,
            stop_s: None,
        };
        assert_eq!(field(flows.validate()), "rate_per_s");
        let heavy = ShortFlowsConfig {
            rate_per_s: None,
            size: Distribution::Pareto {
                shape: 1.0,
                min: 1000.0,
            },
            ..flows.clone()
        };
        let err = heavy.validate().unwrap_err();
        assert_eq!(err.field, "size");
        assert!(err.to_string().contains("finite, positive mean"), "{err}");
        let no_capacity = ShortFlowsConfig {
            rate_per_s: None,
            capacity_mbps: None,
            ..flows
        };
        assert_eq!(field(no_capacity.validate()), "capacity_mbps");
    }

    /// The spellings proposed in docs/cell.md parse, and unknown keys are refused.
    #[test]
    fn scenario_spellings_parse() {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Background {
            #[allow(dead_code)]
            ue: usize,
            source: BackgroundSource,
        }
        #[derive(Deserialize)]
        struct Doc {
            cell: cellcc_link::CellConfig,
            background: Vec<Background>,
        }
        // The example of docs/cell.md, verbatim.
        let text = r#"
            [cell]
            scheduler = "pf"            # "rr" | "pf" (default) | "max-throughput"
            tti_ms = 1.0                # 1 (LTE, default) or 0.5 (NR at 30 kHz); 0.001..=1000
            pf_tc_ttis = 100            # PF averaging time constant t_c, TTIs (>= 1)

            [[cell.ues]]                # UE 0: the phone under test
            trace = "traces/TMobile-LTE-short.down"
            queue = { kind = "droptail", packets = 750 }   # the LTE study's RLC buffer

            [[cell.ues]]                # UE 1: same trace, independent phase
            trace = "traces/TMobile-LTE-short.down"
            offset_ms = 35000
            mode = "loop"               # or "once"

            [[cell.ues]]                # UE 2: a constant channel
            rate_mbps = 20.0

            [[background]]              # capacity step: background starts at 20 s (Fig. 5 right)
            ue = 1
            source = { kind = "cbr", rate_mbps = 10.0, packet_bytes = 1500, start_s = 20.0 }

            [[background]]              # the LTE study's loaded cell: 50 % load of short TCP flows
            ue = 2
            [background.source]
            kind = "short_flows"
            load = 0.5
            capacity_mbps = 20.0
            size = { kind = "exponential", mean = 50000 }
            stop_s = 20.0               # background stops at 20 s (Fig. 5 left)

            [[background]]
            ue = 1
            [background.source]
            kind = "onoff"
            rate_mbps = 5.0
            on_s = { kind = "exponential", mean = 0.5 }
            off_s = { kind = "constant", value = 1.0 }
        "#;
        let doc: Doc = toml::from_str(text).unwrap();
        doc.cell.validate().unwrap();
        assert_eq!(
            doc.cell.scheduler,
            cellcc_link::SchedulerKind::ProportionalFair
        );
        assert_eq!(doc.cell.ues.len(), 3);
        assert_eq!(doc.cell.ues[1].offset_ms, 35_000);
        assert_eq!(doc.cell.tti().unwrap(), cellcc_units::Dur::from_ms(1));
        for b in &doc.background {
            b.source.validate().unwrap();
        }
        assert!(matches!(
            &doc.background[0].source,
            BackgroundSource::Cbr(CbrConfig {
                packet_bytes: 1500,
                stop_s: None,
                ..
            })
        ));
        assert!(matches!(
            &doc.background[1].source,
            BackgroundSource::ShortFlows(_)
        ));
        assert!(matches!(
            &doc.background[2].source,
            BackgroundSource::OnOff(_)
        ));
        let table = "kind = \"empirical\"\ncdf = [[1000, 0.5], [35900, 0.9], [1e6, 1]]\n";
        let empirical: Distribution = toml::from_str(table).unwrap();
        empirical.validate("size").unwrap();
        assert_eq!(
            empirical,
            Distribution::Empirical {
                cdf: vec![(1000.0, 0.5), (35_900.0, 0.9), (1e6, 1.0)]
            }
        );
        let typo = "kind = \"cbr\"\nrate_mbps = 1.0\nrate_mpbs = 2.0\n";
        let err = toml::from_str::<BackgroundSource>(typo).unwrap_err();
        assert!(err.to_string().contains("rate_mpbs"), "{err}");
        let scheduler = "scheduler = \"fair\"\n[[ues]]\nrate_mbps = 1.0\n";
        let err = toml::from_str::<cellcc_link::CellConfig>(scheduler).unwrap_err();
        assert!(err.to_string().contains("max-throughput"), "{err}");
    }
}
