//! Scenario files: TOML → a validated [`Scenario`] (schema in `docs/scenarios.md`).
//!
//! Parsing happens in two steps. Serde reads the text into `Raw*` structs that reject
//! unknown keys and wrong types; `serde_path_to_error` names the key path of the first
//! problem. Then semantic checks (ranges, exactly-one-of, trace files, scheme parameters)
//! run with explicit key paths. Every error names the file, the key path (or line) and
//! what was expected.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cellcc_link::{
    CellConfig, CellSpec, HarqConfig, JitterConfig, LinkService, LossConfig, OutageConfig, Outages,
    ParamError, QueueSpec, QueueSpecError, ResolvedScheduling, SchedulingConfig, Trace, TraceMode,
};
use cellcc_units::{Bandwidth, Dur};
use serde::Deserialize;

use crate::tcp::{App, ReceiverConfig, SenderConfig};
use crate::traffic::BackgroundSource;
pub use error::{one_line, ScenarioError};
use link::build_link;
use tcp::{build_tcp, RawTcp};

/// One direction of the path.
#[derive(Debug, Clone)]
pub struct LinkConfig {
    /// How the bottleneck serves packets.
    pub service: LinkService,
    /// Queue discipline in front of it.
    pub queue: QueueSpec,
    /// One-way propagation delay (`mm-delay`).
    pub delay: Dur,
    /// Loss process on entry (Bernoulli or Gilbert–Elliott).
    pub loss: LossConfig,
    /// Windows without capacity (stall or drop), applied to the link.
    pub outages: Outages,
    /// Random extra delay per packet after the link, FIFO-preserving.
    pub jitter: Option<JitterConfig>,
    /// HARQ-like retransmission delay after the link.
    pub harq: Option<HarqConfig>,
    /// Human-readable description (trace file name or rate).
    pub label: String,
}

/// One flow.
#[derive(Debug, Clone)]
pub struct FlowConfig {
    /// Registered scheme name (`cubic`, `bbr`, ...).
    pub scheme: String,
    /// Scheme parameters, validated at load time.
    pub params: toml::Table,
    /// When the flow starts, from the start of the run.
    pub start: Dur,
    /// What the application sends: always backlogged, or a finite number of bytes.
    pub app: App,
    /// The UE (index into the cell's UEs; 0 without a cell) at this flow's end of the
    /// radio: its receiver for a downlink flow, its sender for an uplink flow.
    pub ue: u32,
    /// Which way the data goes; the ACKs take the other direction.
    pub direction: Direction,
}

/// The direction of a flow's data (`flows[i].direction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Server → UE: data crosses the downlink, ACKs the uplink.
    #[default]
    Down,
    /// UE → server: data crosses the uplink, ACKs the downlink.
    Up,
}

impl Direction {
    /// The scenario-file spelling (`"down"`, `"up"`), also used in results.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Down => "down",
            Direction::Up => "up",
        }
    }

    /// The direction the ACKs of a flow in this direction take.
    pub fn reverse(self) -> Direction {
        match self {
            Direction::Down => Direction::Up,
            Direction::Up => Direction::Down,
        }
    }
}

/// One background source.
#[derive(Debug, Clone)]
pub struct BackgroundConfig {
    /// The UE the source sends to or from (0 without a cell).
    pub ue: u32,
    /// What the source sends: a UDP pattern or short TCP flows.
    pub source: BackgroundSource,
    /// Congestion control of short TCP flows.
    pub scheme: String,
    /// Parameters of `scheme`, validated at load time.
    pub params: toml::Table,
}

/// A shared wired bottleneck between the servers and the base station (C2TCP §VIII-A:
/// two servers → switch → UE), traversed by every downlink packet before the
/// propagation delay and the radio.
#[derive(Debug, Clone)]
pub struct WiredConfig {
    /// Line rate of the bottleneck.
    pub rate: Bandwidth,
    /// Queue discipline in front of it.
    pub queue: QueueSpec,
}

/// Metric settings.
#[derive(Debug, Clone)]
pub struct MetricsConfig {
    /// Time-series bin width (`metrics.bin_ms`, default 500 ms).
    pub bin: Dur,
    /// Log the downlink radio link in mm-link format.
    pub packet_log: bool,
    /// Record every ACK's arrival time and RTT sample at its sender.
    pub ack_log: bool,
}

/// A validated scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Name for results (`name`, or the file's stem).
    pub name: String,
    /// Length of the run.
    pub duration: Dur,
    /// Master seed of every random stream (default 1).
    pub seed: u64,
    /// The downlink (server → UE); with a cell, only its delay, loss, jitter and HARQ are
    /// used.
    pub downlink: LinkConfig,
    /// The uplink (UE → server); a 1 Gbit/s link without delay unless `[uplink]` is given.
    pub uplink: LinkConfig,
    /// The scenario's flows, in `[[flows]]` order.
    pub flows: Vec<FlowConfig>,
    /// A shared wired bottleneck before the radio, if any.
    pub wired: Option<WiredConfig>,
    /// A shared cell: per-UE queues and channels served by a TTI scheduler. When set,
    /// the downlink's `service` and `queue` are unused (each UE has its own).
    pub cell: Option<CellSpec>,
    /// Background traffic at the UEs (UDP sources, short TCP flows).
    pub background: Vec<BackgroundConfig>,
    /// Cellular scheduling: uplink grants for ACKs, downlink service bursts.
    pub scheduling: Option<ResolvedScheduling>,
    /// Metric settings (`[metrics]`).
    pub metrics: MetricsConfig,
    /// Sender parameters of every TCP flow (`[tcp]`).
    pub sender: SenderConfig,
    /// Receiver parameters of every TCP flow (`[tcp]`).
    pub receiver: ReceiverConfig,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Option<String>,
    duration_s: f64,
    seed: Option<u64>,
    downlink: Option<RawLink>,
    cell: Option<CellConfig>,
    #[serde(default)]
    background: Vec<RawBackground>,
    uplink: Option<RawLink>,
    flows: Vec<RawFlow>,
    wired: Option<RawWired>,
    scheduling: Option<SchedulingConfig>,
    #[serde(default)]
    metrics: RawMetrics,
    #[serde(default)]
    tcp: RawTcp,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawLink {
    trace: Option<String>,
    rate_mbps: Option<f64>,
    synth: Option<cellcc_link::synth::SynthConfig>,
    synth_seed: Option<u64>,
    mode: Option<RawMode>,
    /// Multiply a trace's capacity by this whole number: every delivery opportunity
    /// is offered `scale` times (as `cellcc traces scale` does for whole factors; C2TCP
    /// JSAC §VII-E triples a trace for its mobile-edge scenario).
    scale: Option<u32>,
    delay_ms: Option<f64>,
    queue: Option<QueueSpec>,
    loss: Option<LossConfig>,
    #[serde(default)]
    outages: Vec<OutageConfig>,
    jitter: Option<JitterConfig>,
    harq: Option<HarqConfig>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum RawMode {
    Loop,
    Once,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFlow {
    scheme: String,
    #[serde(default)]
    params: toml::Table,
    #[serde(default)]
    start_s: f64,
    app: Option<toml::Value>,
    #[serde(default)]
    ue: u32,
    #[serde(default)]
    direction: Direction,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBackground {
    #[serde(default)]
    ue: u32,
    source: BackgroundSource,
    scheme: Option<String>,
    #[serde(default)]
    params: toml::Table,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWired {
    rate_mbps: f64,
    #[serde(default)]
    queue: QueueSpec,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawMetrics {
    bin_ms: Option<f64>,
    packet_log: Option<bool>,
    ack_log: Option<bool>,
}

/// The uplink of a scenario without `[uplink]`: a 1 Gbit/s constant link, no delay (a
/// different default from `cellcc.compare`'s `COMPARE_UPLINK_MBPS`, the 100 Mbit/s ACK
/// path of a compared trace without an uplink trace).
const SCENARIO_DEFAULT_UPLINK_MBPS: f64 = 1000.0;
/// Default time-series bin, as Pantheon's `--ms-per-bin`.
const DEFAULT_BIN_MS: f64 = 500.0;
/// Largest MSS a 1504-byte Mahimahi opportunity can carry (1500-byte IP packet).
const MAX_MSS: u32 = 1448;
/// Largest initial window: 10 000 packets (Linux's default is 10; a larger one only
/// fills memory with segments before the first ACK).
const MAX_INIT_CWND: u32 = 10_000;

struct Ctx<'a> {
    file: &'a str,
    base_dir: Option<&'a Path>,
}

impl Ctx<'_> {
    fn err(&self, location: impl Into<String>, message: impl Into<String>) -> ScenarioError {
        ScenarioError {
            file: self.file.to_string(),
            location: location.into(),
            message: message.into(),
        }
    }
}

impl Scenario {
    /// Load a scenario file; relative trace paths resolve against its directory.
    pub fn from_file(path: &Path) -> Result<Scenario, ScenarioError> {
        let file = path.display().to_string();
        let fail = |message: String| ScenarioError {
            file: file.clone(),
            location: "file".into(),
            message,
        };
        let meta =
            std::fs::metadata(path).map_err(|e| fail(format!("cannot read the scenario: {e}")))?;
        if !meta.is_file() {
            return Err(fail("not a regular file".into()));
        }
        let limit = limits::MAX_SCENARIO_BYTES as u64;
        if meta.len() > limit {
            return Err(fail(format!(
                "the scenario file is {} bytes, above the limit {limit} (4 MiB)",
                meta.len()
            )));
        }
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(limit + 1).read_to_end(&mut bytes))
            .map_err(|e| fail(format!("cannot read the scenario: {e}")))?;
        let text = String::from_utf8(bytes).map_err(|_| fail("not a UTF-8 text file".into()))?;
        Scenario::parse(&text, &file, path.parent())
    }

    /// Parse scenario text. `file` names it in errors; `base_dir` resolves trace paths.
    pub fn parse(
        text: &str,
        file: &str,
        base_dir: Option<&Path>,
    ) -> Result<Scenario, ScenarioError> {
        let ctx = Ctx { file, base_dir };
        if text.len() > limits::MAX_SCENARIO_BYTES {
            return Err(ctx.err(
                "file",
                format!(
                    "the scenario text is {} bytes, above the limit {} (4 MiB)",
                    text.len(),
                    limits::MAX_SCENARIO_BYTES
                ),
            ));
        }
        let raw = parse_raw(text, &ctx)?;
        build(raw, &ctx)
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())]
        .bytes()
        .filter(|&b| b == b'\n')
        .count()
        + 1
}

fn parse_raw(text: &str, ctx: &Ctx) -> Result<RawScenario, ScenarioError> {
    let de = toml::Deserializer::parse(text).map_err(|e| {
        let loc = e
            .span()
            .map(|s| format!("line {}", line_of(text, s.start)))
            .unwrap_or_else(|| "syntax".into());
        ctx.err(loc, format!("invalid TOML: {}", e.message().trim()))
    })?;
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let line = inner
            .span()
            .map(|s| format!(" (line {})", line_of(text, s.start)))
            .unwrap_or_default();
        let location = if path == "." {
            "top level".to_string()
        } else {
            path
        };
        ctx.err(location, format!("{}{line}", inner.message().trim()))
    })
}

fn positive(ctx: &Ctx, key: &str, v: f64) -> Result<f64, ScenarioError> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(ctx.err(key, format!("must be a positive number, got {v}")))
    }
}

fn non_negative(ctx: &Ctx, key: &str, v: f64) -> Result<f64, ScenarioError> {
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(ctx.err(key, format!("must be a number >= 0, got {v}")))
    }
}

fn ms(v: f64) -> Dur {
    Dur::from_secs_f64(v / 1e3)
}

fn build(raw: RawScenario, ctx: &Ctx) -> Result<Scenario, ScenarioError> {
    positive(ctx, "duration_s", raw.duration_s)?;
    let duration_s = limits::in_range(
        ctx,
        "duration_s",
        raw.duration_s,
        1e-6,
        limits::MAX_DURATION_S,
        " s",
    )?;
    let duration = Dur::from_secs_f64(duration_s);
    if raw.flows.len() > limits::MAX_FLOWS {
        return Err(ctx.err(
            "flows",
            format!(
                "{} flows is above the limit {}",
                raw.flows.len(),
                limits::MAX_FLOWS
            ),
        ));
    }
    let seed = raw.seed.unwrap_or(1);
    let (downlink, cell) = build_radio(raw.downlink, raw.cell, seed, ctx)?;
    let uplink = match raw.uplink {
        Some(u) => build_link(u, "uplink", seed, ctx)?,
        None => build_link(
            RawLink {
                rate_mbps: Some(SCENARIO_DEFAULT_UPLINK_MBPS),
                ..Default::default()
            },
            "uplink",
            seed,
            ctx,
        )?,
    };
    if raw.flows.is_empty() {
        return Err(ctx.err("flows", "at least one [[flows]] entry is required"));
    }
    let mut flows = Vec::with_capacity(raw.flows.len());
    for (i, f) in raw.flows.into_iter().enumerate() {
        let key = format!("flows[{i}]");
        let start = Dur::from_secs_f64(non_negative(ctx, &format!("{key}.start_s"), f.start_s)?);
        if start >= duration {
            return Err(ctx.err(
                format!("{key}.start_s"),
                format!(
                    "starts at {} s, not before the end of the run ({} s)",
                    f.start_s, raw.duration_s
                ),
            ));
        }
        let app = build_app(f.app.as_ref(), &format!("{key}.app"), ctx)?;
        // Validate scheme name and parameters now, so errors come before a long run
        // (an external scheme's own parameters are checked by the factory that builds
        // it, before the run starts).
        crate::control::check_scheme(&f.scheme, &f.params)
            .map_err(|e| ctx.err(format!("{key}.{}", e.key), e.message))?;
        flows.push(FlowConfig {
            scheme: f.scheme,
            params: f.params,
            start,
            app,
            ue: f.ue,
            direction: f.direction,
        });
    }
    let bin_ms = positive(
        ctx,
        "metrics.bin_ms",
        raw.metrics.bin_ms.unwrap_or(DEFAULT_BIN_MS),
    )?;
    let bin_ms = limits::in_range(
        ctx,
        "metrics.bin_ms",
        bin_ms,
        limits::MIN_BIN_MS,
        limits::MAX_DURATION_S * 1e3,
        " ms",
    )?;
    let metrics = MetricsConfig {
        bin: ms(bin_ms),
        packet_log: raw.metrics.packet_log.unwrap_or(false),
        ack_log: raw.metrics.ack_log.unwrap_or(false),
    };
    let ues = cell.as_ref().map_or(1, |c| c.ues.len() as u32);
    if let Some((i, f)) = flows.iter().enumerate().find(|(_, f)| f.ue >= ues) {
        return Err(ctx.err(
            format!("flows[{i}].ue"),
            format!(
                "UE {} does not exist: this scenario has {ues} UE(s), numbered from 0",
                f.ue
            ),
        ));
    }
    let bins = duration.as_ns().div_ceil(metrics.bin.as_ns());
    let mut memory = limits::MemoryEstimate {
        tcp_flows: flows.len() as f64,
        flows_key: "flows".into(),
        rows: bins as f64 * (flows.len() as f64 + 1.0),
    };
    let mut most_short_flows = 0.0;
    let mut background = Vec::with_capacity(raw.background.len());
    for (i, b) in raw.background.into_iter().enumerate() {
        let key = format!("background[{i}]");
        if b.ue >= ues {
            return Err(ctx.err(
                format!("{key}.ue"),
                format!("UE {} does not exist: this scenario has {ues} UE(s)", b.ue),
            ));
        }
        b.source
            .validate()
            .map_err(|e| ctx.err(format!("{key}.source.{}", e.field), e.reason))?;
        let expected = limits::background(ctx, &key, &b.source, duration_s)?;
        memory.tcp_flows += expected;
        if expected > most_short_flows && expected > flows.len() as f64 {
            most_short_flows = expected;
            memory.flows_key = format!("{key}.source");
        }
        let is_tcp = matches!(b.source, BackgroundSource::ShortFlows(_));
        if !is_tcp && (b.scheme.is_some() || !b.params.is_empty()) {
            return Err(ctx.err(
                format!("{key}.scheme"),
                "only short_flows sources are TCP; UDP sources take no scheme or params",
            ));
        }
        let scheme = b.scheme.unwrap_or_else(|| "cubic".into());
        if is_tcp {
            crate::control::check_scheme(&scheme, &b.params)
                .map_err(|e| ctx.err(format!("{key}.{}", e.key), e.message))?;
        }
        background.push(BackgroundConfig {
            ue: b.ue,
            source: b.source,
            scheme,
            params: b.params,
        });
    }
    memory.check(ctx)?;
    if cell.is_some() && raw.metrics.packet_log == Some(true) {
        return Err(ctx.err(
            "metrics.packet_log",
            "the mm-link packet log describes one link; it is not available with [cell]",
        ));
    }
    let wired = match raw.wired {
        None => None,
        Some(w) => {
            let rate = limits::rate(ctx, "wired.rate_mbps", w.rate_mbps)?;
            check_queue(ctx, "wired.queue", &w.queue)?;
            Some(WiredConfig {
                rate,
                queue: w.queue,
            })
        }
    };
    let scheduling = match raw.scheduling {
        None => None,
        Some(cfg) => {
            let resolved = cfg.resolve().map_err(|e| param_err(ctx, "scheduling", e))?;
            limits::scheduling(ctx, &resolved)?;
            Some(resolved)
        }
    };
    let (sender, receiver) = build_tcp(raw.tcp, ctx)?;
    Ok(Scenario {
        name: raw.name.unwrap_or_else(|| default_name(ctx.file)),
        duration,
        seed,
        downlink,
        uplink,
        flows,
        wired,
        cell,
        background,
        scheduling,
        metrics,
        sender,
        receiver,
    })
}

fn default_name(file: &str) -> String {
    Path::new(file)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("scenario")
        .trim_matches(['<', '>'])
        .to_string()
}

fn build_app(v: Option<&toml::Value>, key: &str, ctx: &Ctx) -> Result<App, ScenarioError> {
    let expected = "expected \"bulk\" or { bytes = N } with N >= 1";
    match v {
        None => Ok(App::Bulk),
        Some(toml::Value::String(s)) if s == "bulk" => Ok(App::Bulk),
        Some(toml::Value::Table(t)) => {
            if let Some(k) = t.keys().find(|k| k.as_str() != "bytes") {
                return Err(ctx.err(format!("{key}.{k}"), format!("unknown key; {expected}")));
            }
            match t.get("bytes") {
                Some(toml::Value::Integer(n)) if *n >= 1 => Ok(App::Bytes(*n as u64)),
                Some(other) => {
                    Err(ctx.err(format!("{key}.bytes"), format!("got {other}; {expected}")))
                }
                None => Err(ctx.err(key, format!("missing `bytes`; {expected}"))),
            }
        }
        Some(other) => Err(ctx.err(key, format!("got {other}; {expected}"))),
    }
}

/// Cell capacity placeholder for the downlink table when a cell serves the UEs.
const CELL_PLACEHOLDER_MBPS: f64 = 1000.0;

/// The downlink: one link, or (with `[cell]`) a cell whose UEs carry the channels and
/// queues while `[downlink]` gives only delay, loss, jitter and HARQ.
fn build_radio(
    downlink: Option<RawLink>,
    cell: Option<CellConfig>,
    seed: u64,
    ctx: &Ctx,
) -> Result<(LinkConfig, Option<CellSpec>), ScenarioError> {
    let Some(cell) = cell else {
        let Some(raw) = downlink else {
            return Err(ctx.err(
                "downlink",
                "missing [downlink] (or a [cell] with [[cell.ues]])",
            ));
        };
        return Ok((build_link(raw, "downlink", seed, ctx)?, None));
    };
    let mut raw = downlink.unwrap_or_default();
    for (present, name) in [
        (raw.trace.is_some(), "trace"),
        (raw.rate_mbps.is_some(), "rate_mbps"),
        (raw.synth.is_some(), "synth"),
        (raw.mode.is_some(), "mode"),
        (raw.scale.is_some(), "scale"),
        (raw.queue.is_some(), "queue"),
        (!raw.outages.is_empty(), "outages"),
    ] {
        if present {
            return Err(ctx.err(
                format!("downlink.{name}"),
                "with [cell], each UE's channel and queue are given in [[cell.ues]]",
            ));
        }
    }
    raw.rate_mbps = Some(CELL_PLACEHOLDER_MBPS);
    let mut link = build_link(raw, "downlink", seed, ctx)?;
    for (i, ue) in cell.ues.iter().enumerate() {
        if let Some(r) = ue.rate_mbps {
            limits::rate(ctx, &format!("cell.ues[{i}].rate_mbps"), r)?;
        }
        if ue.offset_ms as f64 > limits::MAX_DURATION_S * 1e3 {
            return Err(ctx.err(
                format!("cell.ues[{i}].offset_ms"),
                format!(
                    "{} is above the limit {} ms",
                    ue.offset_ms,
                    limits::MAX_DURATION_S * 1e3
                ),
            ));
        }
    }
    // UEs naming the same file share one copy of its trace; all the traces together
    // stay within `MAX_SCENARIO_TRACE_OPPORTUNITIES`.
    let mut loaded: HashMap<PathBuf, Arc<Trace>> = HashMap::new();
    let mut opportunities = 0usize;
    let mut too_many = None;
    let spec = cell
        .to_spec(|i, path| {
            let path = resolve(path, ctx.base_dir);
            if let Some(trace) = loaded.get(&path) {
                return Ok(Arc::clone(trace));
            }
            let trace = Arc::new(Trace::from_file(&path)?);
            opportunities += trace.timestamps_ms().len();
            if opportunities > limits::MAX_SCENARIO_TRACE_OPPORTUNITIES {
                too_many = Some(i);
                // Stops the loading; replaced by the message below.
                return Err(cellcc_link::TraceError::TooManyLines {
                    file: path.display().to_string(),
                });
            }
            loaded.insert(path, Arc::clone(&trace));
            Ok(trace)
        })
        .map_err(|e| match too_many {
            Some(i) => ctx.err(
                format!("cell.ues[{i}].trace"),
                format!(
                    "the cell's traces hold more than {} delivery opportunities together, \
                     above the limit",
                    limits::MAX_SCENARIO_TRACE_OPPORTUNITIES
                ),
            ),
            None => ctx.err(format!("cell.{}", e.field()), error_chain(&e)),
        })?;
    link.label = format!("cell of {} UEs ({:?})", spec.ues.len(), spec.scheduler);
    Ok((link, Some(spec)))
}

/// An error and its sources, on one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text = format!("{text}: {s}");
        source = s.source();
    }
    text
}

/// A queue's configuration; AQM parameter errors name the parameter's key.
fn check_queue(ctx: &Ctx, key: &str, queue: &QueueSpec) -> Result<(), ScenarioError> {
    queue.validate().map_err(|e| match e {
        QueueSpecError::Aqm(a) => ctx.err(format!("{key}.{}", a.parameter), a.to_string()),
        other => ctx.err(key, other.to_string()),
    })
}

/// A model's parameter error under the table at `key` (`downlink.harq` + `bler`).
fn param_err(ctx: &Ctx, key: &str, e: ParamError) -> ScenarioError {
    let location = if e.field.starts_with('[') {
        format!("{key}{}", e.field)
    } else {
        format!("{key}.{}", e.field)
    };
    ctx.err(location, e.reason)
}

fn resolve(p: &str, base: Option<&Path>) -> PathBuf {
    let path = PathBuf::from(p);
    match base {
        Some(b) if path.is_relative() => b.join(path),
        _ => path,
    }
}

mod error;
pub mod limits;
mod link;
mod tcp;
#[cfg(test)]
mod tests;
