//! Upper and lower bounds on scenario values, checked when a scenario is loaded so that a
//! hostile or mistyped value is a one-line error naming its key instead of a run that
//! cannot allocate its memory, never ends, or divides by a value that rounded to zero.
//!
//! Every bound is documented in `docs/scenarios.md` ("Limits"). The checks run on values
//! after their conversion to integer units (nanoseconds, bit/s), so that a value that
//! rounds to zero is refused as well.

use cellcc_link::{JitterConfig, ResolvedScheduling, MAX_TRACE_OPPORTUNITIES};
use cellcc_units::{Bandwidth, Dur};

use super::{Ctx, ScenarioError};
use crate::traffic::BackgroundSource;

/// Largest scenario text: 4 MiB. The largest sensible scenarios (1000 flows with
/// parameters, 4096 UEs with their traces named) are under 1 MiB; TOML parsing takes
/// about 60 bytes of memory per byte of text, so this bounds it to about 250 MB.
pub const MAX_SCENARIO_BYTES: usize = 4 << 20;
/// Longest run: one week of simulated time (a day-long drive test with margin; the
/// time series of a week at 500 ms bins still fits [`MAX_RUN_MEMORY_BYTES`]).
pub const MAX_DURATION_S: f64 = 7.0 * 86_400.0;
/// Longest fixed delay (propagation, scheduling, HARQ round trip, jitter parameter,
/// TCP timer): one minute, far beyond any radio or satellite path.
pub const MAX_DELAY_MS: f64 = 60_000.0;
/// Slowest link or source: 1 kbit/s (the link crate's bound, which the emulator's
/// `--rate-mbps` shares; its reason is there).
pub const MIN_RATE_MBPS: f64 = cellcc_link::MIN_RATE_MBPS;
/// Fastest link or source: 1 Tbit/s.
pub const MAX_RATE_MBPS: f64 = cellcc_link::MAX_RATE_MBPS;
/// Narrowest time-series bin: 1 µs (a narrower one rounds towards 0 ns).
pub const MIN_BIN_MS: f64 = 0.001;
/// Largest trace `scale`: every opportunity offered 100 times (C2TCP triples a trace).
pub const MAX_SCALE: u32 = 100;
/// Most `[[flows]]` in one scenario: each keeps about [`FLOW_STATE_BYTES`] of metrics.
pub const MAX_FLOWS: usize = 1_000;
/// Highest mean arrival rate of a `short_flows` source, flows per second.
pub const MAX_SHORT_FLOW_RATE_PER_S: f64 = 1_000.0;
/// Shortest scheduling period or TTI (`tti_ms`, `sr_period_ms`,
/// `proactive_grant_period_ms`, `tdd.period_ms`): 62.5 µs, 5G's shortest common slot
/// (240 kHz subcarrier spacing, TS 38.211 Table 4.3.2-1).
pub const MIN_SCHEDULING_PERIOD_MS: f64 = 0.0625;
/// Most delivery opportunities of all the traces of one scenario together (each costs 4
/// bytes): twice what one trace may hold.
pub const MAX_SCENARIO_TRACE_OPPORTUNITIES: usize = 2 * MAX_TRACE_OPPORTUNITIES;
/// Largest estimate of a run's memory accepted: 1 GiB, which leaves room under a 2 GiB
/// address-space limit for the interpreter, its libraries and the event queue.
pub const MAX_RUN_MEMORY_BYTES: f64 = (1u64 << 30) as f64;
/// Memory a TCP flow keeps until the end of the run: three delay histograms of 1 µs to
/// 1 h at three significant digits (about 180 kB each) plus its endpoints.
pub const FLOW_STATE_BYTES: f64 = 600_000.0;
/// Peak memory of one time-series row on its way to Python (per-bin accumulators, the
/// columns, their JSON text and Python objects): 1.45 kB measured, rounded up.
pub const TIMESERIES_ROW_BYTES: f64 = 1_500.0;

/// Smallest socket buffer value (`tcp.wmem`, `tcp.rmem`): one page, the minimum of
/// Linux's own defaults.
pub const MIN_SOCKET_BUFFER_BYTES: f64 = 4_096.0;
/// Largest socket buffer value: 1 GiB, the largest window the window scale can offer
/// (65 535 << 14).
pub const MAX_SOCKET_BUFFER_BYTES: f64 = (1u64 << 30) as f64;

/// `tcp.wmem`/`tcp.rmem`: three whole byte counts (minimum, initial, maximum) in
/// [`MIN_SOCKET_BUFFER_BYTES`, `MAX_SOCKET_BUFFER_BYTES`], in non-decreasing order.
pub(super) fn socket_buffer(ctx: &Ctx, key: &str, v: [f64; 3]) -> Result<[u64; 3], ScenarioError> {
    for x in v {
        if !x.is_finite() || x.fract() != 0.0 {
            return Err(ctx.err(key, format!("{} is not a whole number of bytes", show(x))));
        }
        if !(MIN_SOCKET_BUFFER_BYTES..=MAX_SOCKET_BUFFER_BYTES).contains(&x) {
            return Err(ctx.err(
                key,
                format!(
                    "{} is outside {MIN_SOCKET_BUFFER_BYTES}..={MAX_SOCKET_BUFFER_BYTES} bytes",
                    show(x)
                ),
            ));
        }
    }
    if !(v[0] <= v[1] && v[1] <= v[2]) {
        return Err(ctx.err(key, "must be [minimum, initial, maximum] in that order"));
    }
    Ok(v.map(|x| x as u64))
}

/// `v` for a message: plain decimals for ordinary values, `1e300` for extreme ones.
pub(super) fn show(v: f64) -> String {
    if v != 0.0 && !(1e-4..1e15).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// `v` as a finite number in `min..=max`, or an error naming `key`.
pub(super) fn in_range(
    ctx: &Ctx,
    key: &str,
    v: f64,
    min: f64,
    max: f64,
    unit: &str,
) -> Result<f64, ScenarioError> {
    if !v.is_finite() {
        return Err(ctx.err(key, format!("must be a finite number, got {v}")));
    }
    if v < min {
        return Err(ctx.err(key, format!("{} is below the limit {min}{unit}", show(v))));
    }
    if v > max {
        return Err(ctx.err(key, format!("{} is above the limit {max}{unit}", show(v))));
    }
    Ok(v)
}

/// A rate in Mbit/s within [`MIN_RATE_MBPS`]..=[`MAX_RATE_MBPS`].
pub(super) fn rate(ctx: &Ctx, key: &str, mbps: f64) -> Result<Bandwidth, ScenarioError> {
    super::positive(ctx, key, mbps)?;
    let mbps = in_range(ctx, key, mbps, MIN_RATE_MBPS, MAX_RATE_MBPS, " Mbit/s")?;
    let rate = Bandwidth::from_mbps(mbps);
    // In range, the rate is at least 1000 bit/s; asserted because it is divided by.
    debug_assert!(rate.bits_per_sec >= 1000);
    Ok(rate)
}

/// A duration in ms within `0..=`[`MAX_DELAY_MS`] (`positive`: at least 1 µs, so it
/// does not round to 0 ns).
pub(super) fn delay_ms(ctx: &Ctx, key: &str, v: f64, positive: bool) -> Result<Dur, ScenarioError> {
    let min = if positive { MIN_BIN_MS } else { 0.0 };
    let v = in_range(ctx, key, v, min, MAX_DELAY_MS, " ms")?;
    Ok(super::ms(v))
}

/// Jitter parameters within [`MAX_DELAY_MS`].
pub(super) fn jitter(ctx: &Ctx, key: &str, j: &JitterConfig) -> Result<(), ScenarioError> {
    let values: &[(&str, f64)] = match *j {
        JitterConfig::Uniform { min_ms, max_ms } => &[("min_ms", min_ms), ("max_ms", max_ms)],
        JitterConfig::Normal { mean_ms, sd_ms } => &[("mean_ms", mean_ms), ("sd_ms", sd_ms)],
        JitterConfig::Exponential { mean_ms } => &[("mean_ms", mean_ms)],
    };
    for &(name, v) in values {
        if v.is_finite() && v > MAX_DELAY_MS {
            return Err(ctx.err(
                format!("{key}.{name}"),
                format!("{} is above the limit {MAX_DELAY_MS} ms", show(v)),
            ));
        }
    }
    Ok(())
}

/// Every time of a resolved `[scheduling]` table within its bounds.
pub(super) fn scheduling(ctx: &Ctx, s: &ResolvedScheduling) -> Result<(), ScenarioError> {
    let e = s.expanded();
    let periods = [
        ("tti_ms", e.tti_ms),
        ("sr_period_ms", e.sr_period_ms),
        (
            "proactive_grant_period_ms",
            e.proactive_grant_period_ms.filter(|&p| p != 0.0),
        ),
        ("tdd.period_ms", e.tdd.as_ref().and_then(|t| t.period_ms)),
    ];
    for (name, v) in periods {
        if let Some(v) = v {
            in_range(
                ctx,
                &format!("scheduling.{name}"),
                v,
                MIN_SCHEDULING_PERIOD_MS,
                MAX_DELAY_MS,
                " ms",
            )?;
        }
    }
    let delays = [
        ("sr_offset_ms", e.sr_offset_ms),
        ("grant_delay_ms", e.grant_delay_ms),
        ("ul_tx_delay_ms", e.ul_tx_delay_ms),
    ];
    for (name, v) in delays {
        if let Some(v) = v {
            in_range(
                ctx,
                &format!("scheduling.{name}"),
                v,
                0.0,
                MAX_DELAY_MS,
                " ms",
            )?;
        }
    }
    Ok(())
}

/// Bounds of a background source's rate; returns the expected number of short TCP flows
/// it starts before the end of the run (0 for UDP sources).
pub(super) fn background(
    ctx: &Ctx,
    key: &str,
    source: &BackgroundSource,
    duration_s: f64,
) -> Result<f64, ScenarioError> {
    let c = match source {
        BackgroundSource::Cbr(c) => {
            rate(ctx, &format!("{key}.source.rate_mbps"), c.rate_mbps)?;
            return Ok(0.0);
        }
        BackgroundSource::OnOff(c) => {
            rate(ctx, &format!("{key}.source.rate_mbps"), c.rate_mbps)?;
            return Ok(0.0);
        }
        BackgroundSource::ShortFlows(c) => c,
    };
    // Validated above, so the inter-arrival distribution exists.
    let gaps = c
        .interarrival()
        .map_err(|e| ctx.err(format!("{key}.source.{}", e.field), e.reason))?;
    let rate = 1.0 / gaps.mean();
    if !rate.is_finite() || rate > MAX_SHORT_FLOW_RATE_PER_S {
        let given = [
            (c.rate_per_s.is_some(), "rate_per_s"),
            (c.load.is_some(), "load"),
            (c.interarrival_s.is_some(), "interarrival_s"),
        ];
        let name = given
            .iter()
            .find(|(present, _)| *present)
            .map_or("rate_per_s", |(_, n)| *n);
        return Err(ctx.err(
            format!("{key}.source.{name}"),
            format!(
                "gives {} short flows per second, above the limit {} per second",
                show(rate.round()),
                MAX_SHORT_FLOW_RATE_PER_S
            ),
        ));
    }
    let stop = c.stop_s.unwrap_or(duration_s).min(duration_s);
    Ok(rate * (stop - c.start_s).max(0.0))
}

/// What a run will hold in memory until its end, estimated before it starts.
pub(super) struct MemoryEstimate {
    /// Scenario flows plus the expected number of short background flows.
    pub(super) tcp_flows: f64,
    /// The key that adds the most flows (`flows` or `background[i]`).
    pub(super) flows_key: String,
    /// Time-series rows: bins × (scenario flows + 1).
    pub(super) rows: f64,
}

impl MemoryEstimate {
    /// Refuse a run whose estimate exceeds [`MAX_RUN_MEMORY_BYTES`], naming the key that
    /// weighs most.
    pub(super) fn check(&self, ctx: &Ctx) -> Result<(), ScenarioError> {
        let flows = self.tcp_flows * FLOW_STATE_BYTES;
        let series = self.rows * TIMESERIES_ROW_BYTES;
        let total = flows + series;
        if total <= MAX_RUN_MEMORY_BYTES {
            return Ok(());
        }
        let mb = |b: f64| format!("{:.1} MB", b / 1e6);
        let detail = format!(
            "the run would need about {} ({:.0} TCP flows × {}, {:.0} time-series rows × \
             {:.1} kB), above the limit of {}",
            mb(total),
            self.tcp_flows,
            mb(FLOW_STATE_BYTES),
            self.rows,
            TIMESERIES_ROW_BYTES / 1e3,
            mb(MAX_RUN_MEMORY_BYTES),
        );
        if series >= flows {
            Err(ctx.err(
                "metrics.bin_ms",
                format!("{detail}; widen metrics.bin_ms or shorten duration_s"),
            ))
        } else {
            Err(ctx.err(
                self.flows_key.as_str(),
                format!("{detail}; run fewer flows or a shorter duration_s"),
            ))
        }
    }
}
