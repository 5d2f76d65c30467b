//! Command line of `cellcc-emu`, shaped like `mm-delay D mm-link UP DOWN -- cmd`, and the
//! checks that turn it into a validated configuration.
//!
//! Every user error becomes a [`UsageError`] that names the argument (or the trace file
//! and line) and says how to fix it; the binary prints it and exits with status 2.

use std::ffi::OsString;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::Arc;

use cellcc_link::{
    AqmVariant, BernoulliLoss, CodelConfig, DelayTrace, DelayTraceError, LinkService, PieConfig,
    QueueSpec, ResolvedScheduling, SchedulingConfig, Trace, TraceError, TraceMode, MAX_RATE_MBPS,
    MIN_RATE_MBPS,
};
use cellcc_units::{Bandwidth, Dur};
use clap::{Parser, ValueEnum};

use crate::privs::{self, RunAs};

/// Exit status for bad input (as clap uses for usage errors).
pub const EXIT_USAGE: i32 = 2;

/// Longest one-way delay accepted: an hour, far beyond any experiment.
const MAX_DELAY_MS: f64 = 3_600_000.0;

/// The command line of `cellcc-emu`.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "cellcc-emu",
    version,
    about = "Real-time Mahimahi-compatible link emulator (mm-delay + mm-link + mm-loss) \
             between two network namespaces",
    after_help = "Downlink = server -> client, uplink = client -> server. The server \
                  command runs in the \"server\" namespace, the client command in the \
                  \"client\" namespace; both see CELLCC_EMU_SERVER_ADDR and \
                  CELLCC_EMU_CLIENT_ADDR. Without a client command the emulator runs \
                  until SIGINT/SIGTERM and prints how to enter the namespaces."
)]
pub struct EmuArgs {
    /// One-way propagation delay in ms, each direction (mm-delay); decimals allowed.
    #[arg(long, value_name = "MS", default_value = "0", value_parser = parse_delay)]
    pub delay: Dur,
    /// One-way delay that varies with time, each direction, instead of --delay
    /// (mm-file-delay): one delay in ms per line, line k for packets entering the delay
    /// in [k x step, (k+1) x step) ms; the file loops.
    #[arg(long, value_name = "FILE", conflicts_with = "delay")]
    pub delay_trace: Option<PathBuf>,
    /// Time each line of --delay-trace holds for, whole ms (mm-file-delay's
    /// time_resolution_ms).
    #[arg(long, value_name = "MS", default_value_t = 1, requires = "delay_trace",
          value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub delay_trace_step: u64,
    /// Mahimahi trace of the uplink (client -> server).
    #[arg(long, value_name = "TRACE")]
    pub uplink: Option<PathBuf>,
    /// Mahimahi trace of the downlink (server -> client).
    #[arg(long, value_name = "TRACE")]
    pub downlink: Option<PathBuf>,
    /// Constant-rate uplink instead of a trace, Mbit/s (the simulator's `rate_mbps`).
    #[arg(long, value_name = "MBPS", value_parser = parse_rate)]
    pub uplink_rate_mbps: Option<f64>,
    /// Constant-rate downlink instead of a trace, Mbit/s.
    #[arg(long, value_name = "MBPS", value_parser = parse_rate)]
    pub downlink_rate_mbps: Option<f64>,
    /// Constant rate of both directions, Mbit/s: shorthand for --uplink-rate-mbps R
    /// --downlink-rate-mbps R.
    #[arg(long, value_name = "MBPS", value_parser = parse_rate)]
    pub rate_mbps: Option<f64>,
    /// Uplink queue discipline.
    #[arg(long, value_enum, default_value_t = QueueKind::Infinite)]
    pub uplink_queue: QueueKind,
    /// Uplink queue arguments in Mahimahi's spelling, e.g. "packets=400" or
    /// "target=5, interval=100, packets=1000".
    #[arg(long, value_name = "ARGS", default_value = "")]
    pub uplink_queue_args: String,
    /// Downlink queue discipline.
    #[arg(long, value_enum, default_value_t = QueueKind::Infinite)]
    pub downlink_queue: QueueKind,
    /// Downlink queue arguments (as --uplink-queue-args).
    #[arg(long, value_name = "ARGS", default_value = "")]
    pub downlink_queue_args: String,
    /// Bernoulli loss probability on the uplink (mm-loss uplink P).
    #[arg(long, value_name = "P", default_value = "0", value_parser = parse_probability)]
    pub uplink_loss: f64,
    /// Bernoulli loss probability on the downlink (mm-loss downlink P).
    #[arg(long, value_name = "P", default_value = "0", value_parser = parse_probability)]
    pub downlink_loss: f64,
    /// Cellular uplink scheduling after the uplink link: the UE's scheduling-request /
    /// grant cycle of a preset (e.g. lte-fdd-sr10, nr-tdd-2.5ms).
    #[arg(long, value_name = "PRESET")]
    pub uplink_sched: Option<String>,
    /// Cellular downlink scheduling after the downlink link: the base station's TTI /
    /// TDD release gate of a preset (e.g. lte-sr20-burst8).
    #[arg(long, value_name = "PRESET")]
    pub downlink_sched: Option<String>,
    /// Play the traces once instead of looping (mm-link --once).
    #[arg(long)]
    pub once: bool,
    /// Write the uplink's mm-link log here.
    #[arg(long, value_name = "FILE")]
    pub uplink_log: Option<PathBuf>,
    /// Write the downlink's mm-link log here.
    #[arg(long, value_name = "FILE")]
    pub downlink_log: Option<PathBuf>,
    /// Write a JSON summary here at exit (packets, drops, lateness, CPU time).
    #[arg(long, value_name = "FILE")]
    pub stats: Option<PathBuf>,
    /// Shell command (run with `sh -c`) in the server namespace.
    #[arg(long, value_name = "SHELL CMD")]
    pub server_cmd: Option<String>,
    /// Address of the server end.
    #[arg(long, value_name = "IPV4", default_value = "10.64.0.1")]
    pub server_addr: Ipv4Addr,
    /// Address of the client end.
    #[arg(long, value_name = "IPV4", default_value = "10.64.0.2")]
    pub client_addr: Ipv4Addr,
    /// Seed of the loss and PIE random streams.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// SCHED_FIFO priority of the event loop (1-99) for accurate timing on a busy
    /// machine; 0 keeps the normal scheduler. The commands always run with the normal
    /// policy.
    #[arg(long, value_name = "PRIO", default_value_t = 10,
          value_parser = clap::value_parser!(i32).range(0..=99))]
    pub realtime_priority: i32,
    /// Read and write one 1500-byte packet per system call instead of taking TCP
    /// super-packets from the kernel and giving it coalesced ones (TUN offloads); the
    /// link model, logs and stats are per 1500-byte packet either way.
    #[arg(long)]
    pub no_offload: bool,
    /// Run the server and client commands as this user (name or uid), with no
    /// capabilities. Default: the invoking user under sudo (SUDO_UID), else the user
    /// running the emulator (root keeps every capability; see docs/emulator.md).
    #[arg(long, value_name = "USER")]
    pub user: Option<String>,
    /// The client command and its arguments, after `--`.
    #[arg(last = true, value_name = "CLIENT_CMD")]
    pub command: Vec<OsString>,
}

/// Mahimahi's queue names (`--uplink-queue`, `--downlink-queue`; see [`QueueSpec`] for
/// what each does).
// The variants carry plain comments, not doc comments: clap turns a doc comment on a
// `ValueEnum` variant into help text for that value, which changes `--help` (the
// possible values become a described list and every option switches to the long
// layout).
#[allow(missing_docs)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum QueueKind {
    // No limit.
    Infinite,
    // Reject arrivals beyond the limits.
    Droptail,
    // Drop from the head to stay within the limits.
    Drophead,
    // CoDel active queue management.
    Codel,
    // PIE active queue management.
    Pie,
}

/// A bad argument or input file.
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    /// An option's value is unusable.
    #[error("{option}: {message}")]
    Argument {
        /// The option, as spelled on the command line (`--uplink-queue-args`).
        option: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A trace file could not be read or parsed.
    #[error("{0}")]
    Trace(#[from] TraceError),
    /// A delay trace could not be read or parsed.
    #[error("--delay-trace: {0}")]
    DelayTrace(#[from] DelayTraceError),
}

fn arg_error(option: &str, message: impl Into<String>) -> UsageError {
    UsageError::Argument {
        option: option.to_string(),
        message: message.into(),
    }
}

fn parse_delay(s: &str) -> Result<Dur, String> {
    let ms: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of milliseconds (e.g. 20 or 2.5)"))?;
    if !ms.is_finite() || !(0.0..=MAX_DELAY_MS).contains(&ms) {
        return Err(format!("{s} ms must be between 0 and {MAX_DELAY_MS} ms"));
    }
    Ok(Dur::from_ns((ms * 1e6).round() as u64))
}

/// A constant rate in Mbit/s, within the simulator's bounds on `rate_mbps`.
fn parse_rate(s: &str) -> Result<f64, String> {
    let mbps: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a rate in Mbit/s (e.g. 24 or 1.5)"))?;
    if !(mbps.is_finite() && (MIN_RATE_MBPS..=MAX_RATE_MBPS).contains(&mbps)) {
        return Err(format!(
            "{s} Mbit/s must be between {MIN_RATE_MBPS} and {MAX_RATE_MBPS} Mbit/s"
        ));
    }
    Ok(mbps)
}

fn parse_probability(s: &str) -> Result<f64, String> {
    let p: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a probability (e.g. 0.01 for 1 %)"))?;
    BernoulliLoss::try_new(p).map_err(|e| e.to_string())?;
    Ok(p)
}

/// Parses Mahimahi's `--*-queue-args` ("name=NUMBER, name=NUMBER") for `kind`.
/// `option` names the command-line option in errors. CoDel and PIE default to the
/// `mahimahi` variant (what `mm-link` runs); `variant=rfc` selects the RFC algorithm.
pub fn parse_queue(kind: QueueKind, args: &str, option: &str) -> Result<QueueSpec, UsageError> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for part in args.split(',') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let Some((name, value)) = part.split_once('=') else {
            return Err(arg_error(
                option,
                format!("{part:?} is not of the form name=value (e.g. packets=400)"),
            ));
        };
        let (name, value) = (name.trim().to_string(), value.trim().to_string());
        if pairs.iter().any(|(n, _)| *n == name) {
            return Err(arg_error(option, format!("`{name}` is given twice")));
        }
        pairs.push((name, value));
    }
    let allowed: &[&str] = match kind {
        QueueKind::Infinite => &[],
        QueueKind::Droptail | QueueKind::Drophead => &["packets", "bytes"],
        QueueKind::Codel => &["target", "interval", "packets", "bytes", "variant"],
        QueueKind::Pie => &["qdelay_ref", "max_burst", "packets", "bytes", "variant"],
    };
    let kind_name = kind
        .to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_string());
    for (name, _) in &pairs {
        if !allowed.contains(&name.as_str()) {
            let hint = if allowed.is_empty() {
                format!("the {kind_name} queue takes no arguments")
            } else {
                format!("the {kind_name} queue takes {}", allowed.join(", "))
            };
            return Err(arg_error(
                option,
                format!("unknown argument `{name}`: {hint}"),
            ));
        }
    }
    let number = |name: &str| -> Result<Option<u64>, UsageError> {
        let Some((_, v)) = pairs.iter().find(|(n, _)| n == name) else {
            return Ok(None);
        };
        v.parse::<u64>().map(Some).map_err(|_| {
            arg_error(
                option,
                format!("`{name}={v}`: expected a non-negative whole number"),
            )
        })
    };
    let variant = || -> Result<AqmVariant, UsageError> {
        match pairs
            .iter()
            .find(|(n, _)| n == "variant")
            .map(|(_, v)| v.as_str())
        {
            None | Some("mahimahi") => Ok(AqmVariant::Mahimahi),
            Some("rfc") => Ok(AqmVariant::Rfc),
            Some(other) => Err(arg_error(
                option,
                format!("`variant={other}`: expected mahimahi or rfc"),
            )),
        }
    };
    let spec = match kind {
        QueueKind::Infinite => QueueSpec::Infinite,
        QueueKind::Droptail => QueueSpec::DropTail {
            packets: number("packets")?,
            bytes: number("bytes")?,
        },
        QueueKind::Drophead => QueueSpec::DropHead {
            packets: number("packets")?,
            bytes: number("bytes")?,
        },
        QueueKind::Codel => {
            let defaults = CodelConfig::default();
            QueueSpec::Codel(CodelConfig {
                variant: variant()?,
                target_ms: number("target")?.unwrap_or(defaults.target_ms),
                interval_ms: number("interval")?.unwrap_or(defaults.interval_ms),
                packets: number("packets")?,
                bytes: number("bytes")?,
            })
        }
        QueueKind::Pie => {
            let defaults = PieConfig::default();
            QueueSpec::Pie(PieConfig {
                variant: variant()?,
                qdelay_ref_ms: number("qdelay_ref")?.unwrap_or(defaults.qdelay_ref_ms),
                max_burst_ms: number("max_burst")?.unwrap_or(defaults.max_burst_ms),
                packets: number("packets")?,
                bytes: number("bytes")?,
                ..defaults
            })
        }
    };
    spec.validate()
        .map_err(|e| arg_error(option, format!("{e}")))?;
    Ok(spec)
}

/// What a direction's link sends at.
#[derive(Debug, Clone)]
pub enum Capacity {
    /// A Mahimahi trace of delivery opportunities (1504 bytes each; packets charged
    /// IP length + 4).
    Trace(Arc<Trace>),
    /// A constant rate, served as the simulator's `rate_mbps` link: a work-conserving
    /// serialiser charging the IP length.
    Rate(Bandwidth),
}

impl Capacity {
    /// The link service of this capacity; `mode` applies to a trace.
    pub fn service(&self, mode: TraceMode) -> LinkService {
        match self {
            Capacity::Trace(trace) => LinkService::trace(trace.clone(), mode),
            Capacity::Rate(rate) => LinkService::constant(*rate),
        }
    }

    /// The trace file name, or the rate (`24 Mbit/s`).
    pub fn label(&self) -> String {
        match self {
            Capacity::Trace(trace) => trace.name().to_string(),
            Capacity::Rate(rate) => format!("{} Mbit/s", rate.bits_per_sec as f64 / 1e6),
        }
    }

    /// The trace, if the capacity is one.
    pub fn trace(&self) -> Option<&Arc<Trace>> {
        match self {
            Capacity::Trace(trace) => Some(trace),
            Capacity::Rate(_) => None,
        }
    }
}

/// The capacity of one direction from its trace and rate options: exactly one.
fn capacity(
    way: &str,
    trace: Option<&PathBuf>,
    rate_mbps: Option<f64>,
    both_rate_mbps: Option<f64>,
) -> Result<Capacity, UsageError> {
    let rate_option = format!("--{way}-rate-mbps");
    match (trace, rate_mbps, both_rate_mbps) {
        (Some(_), Some(_), _) => Err(arg_error(
            &rate_option,
            format!("give either --{way} TRACE or {rate_option} R, not both"),
        )),
        (Some(_), None, Some(_)) => Err(arg_error(
            "--rate-mbps",
            format!("sets both directions, but --{way} gives a trace; use {rate_option} for one direction"),
        )),
        (None, Some(_), Some(_)) => Err(arg_error(
            "--rate-mbps",
            format!("sets both directions; give it or {rate_option}, not both"),
        )),
        (Some(path), None, None) => Ok(Capacity::Trace(Arc::new(Trace::from_file(path)?))),
        (None, Some(r), None) | (None, None, Some(r)) => Ok(Capacity::Rate(Bandwidth::from_mbps(r))),
        (None, None, None) => Err(arg_error(
            &format!("--{way}"),
            format!("missing the {way} capacity: give --{way} TRACE, {rate_option} R or --rate-mbps R"),
        )),
    }
}

/// The validated configuration of one direction.
#[derive(Debug, Clone)]
pub struct DirectionConfig {
    /// The direction's capacity: a trace of delivery opportunities or a constant rate.
    pub capacity: Capacity,
    /// The direction's queue discipline, validated.
    pub queue: QueueSpec,
    /// Loss on entry to the direction (mm-loss).
    pub loss: BernoulliLoss,
    /// Cellular scheduling preset of this direction's gate, if any.
    pub sched: Option<ResolvedScheduling>,
}

/// Resolves a scheduling preset named on the command line.
fn parse_sched(name: Option<&str>, option: &str) -> Result<Option<ResolvedScheduling>, UsageError> {
    let Some(name) = name else {
        return Ok(None);
    };
    SchedulingConfig {
        preset: name.to_string(),
        ..SchedulingConfig::default()
    }
    .resolve()
    .map(Some)
    .map_err(|e| arg_error(option, e.reason))
}

/// The validated configuration of a run.
#[derive(Debug, Clone)]
pub struct EmuConfig {
    /// The command line as given.
    pub args: EmuArgs,
    /// Loop the traces, or play them once (`--once`).
    pub mode: TraceMode,
    /// The uplink (client → server).
    pub uplink: DirectionConfig,
    /// The downlink (server → client).
    pub downlink: DirectionConfig,
    /// Who the commands run as (`--user`, `SUDO_UID`, or the emulator's user).
    pub run_as: RunAs,
    /// The time-varying delay of both directions (`--delay-trace`), if any.
    pub delay_trace: Option<Arc<DelayTrace>>,
}

impl EmuArgs {
    /// Reads the traces and checks every argument clap cannot check alone.
    pub fn validate(self) -> Result<EmuConfig, UsageError> {
        if self.server_addr == self.client_addr {
            return Err(arg_error(
                "--client-addr",
                format!("must differ from --server-addr ({})", self.server_addr),
            ));
        }
        for (addr, option) in [
            (self.server_addr, "--server-addr"),
            (self.client_addr, "--client-addr"),
        ] {
            if addr.is_unspecified() || addr.is_broadcast() || addr.is_multicast() {
                return Err(arg_error(
                    option,
                    format!("{addr} is not a unicast address"),
                ));
            }
        }
        if let Some(program) = self.command.first() {
            if !program_exists(program) {
                return Err(arg_error(
                    "CLIENT_CMD",
                    format!(
                        "{}: no such program (not an executable file, and not found in PATH)",
                        program.to_string_lossy()
                    ),
                ));
            }
        }
        let uplink_capacity = capacity(
            "uplink",
            self.uplink.as_ref(),
            self.uplink_rate_mbps,
            self.rate_mbps,
        )?;
        let downlink_capacity = capacity(
            "downlink",
            self.downlink.as_ref(),
            self.downlink_rate_mbps,
            self.rate_mbps,
        )?;
        if self.once && uplink_capacity.trace().is_none() && downlink_capacity.trace().is_none() {
            return Err(arg_error(
                "--once",
                "applies to trace links, and both directions have a constant rate",
            ));
        }
        let delay_trace = self
            .delay_trace
            .as_ref()
            .map(|path| DelayTrace::from_file(path, self.delay_trace_step).map(Arc::new))
            .transpose()?;
        let uplink = DirectionConfig {
            capacity: uplink_capacity,
            queue: parse_queue(
                self.uplink_queue,
                &self.uplink_queue_args,
                "--uplink-queue-args",
            )?,
            loss: BernoulliLoss::try_new(self.uplink_loss)
                .map_err(|e| arg_error("--uplink-loss", e.to_string()))?,
            sched: parse_sched(self.uplink_sched.as_deref(), "--uplink-sched")?,
        };
        let downlink = DirectionConfig {
            capacity: downlink_capacity,
            queue: parse_queue(
                self.downlink_queue,
                &self.downlink_queue_args,
                "--downlink-queue-args",
            )?,
            loss: BernoulliLoss::try_new(self.downlink_loss)
                .map_err(|e| arg_error("--downlink-loss", e.to_string()))?,
            sched: parse_sched(self.downlink_sched.as_deref(), "--downlink-sched")?,
        };
        let mode = if self.once {
            TraceMode::Once
        } else {
            TraceMode::Loop
        };
        let run_as = privs::resolve(self.user.as_deref())?;
        Ok(EmuConfig {
            args: self,
            mode,
            uplink,
            downlink,
            run_as,
            delay_trace,
        })
    }
}

/// Whether `program` names an executable file (with a `/`) or one found in `PATH`, as
/// `execvp` would look it up.
fn program_exists(program: &std::ffi::OsStr) -> bool {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    let executable = |path: &std::path::Path| {
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.as_bytes().contains(&b'/') {
        return executable(std::path::Path::new(program));
    }
    let Some(path) = std::env::var_os("PATH") else {
        return false;
    };
    std::env::split_paths(&path).any(|dir| executable(&dir.join(program)))
}

/// Mahimahi's spelling of a queue for log headers: `droptail [packets=400]`.
pub fn queue_description(spec: &QueueSpec) -> String {
    let limits = |packets: &Option<u64>, bytes: &Option<u64>| {
        let mut parts = Vec::new();
        if let Some(p) = packets {
            parts.push(format!("packets={p}"));
        }
        if let Some(b) = bytes {
            parts.push(format!("bytes={b}"));
        }
        parts.join(", ")
    };
    match spec {
        QueueSpec::Infinite => "infinite".to_string(),
        QueueSpec::DropTail { packets, bytes } => format!("droptail [{}]", limits(packets, bytes)),
        QueueSpec::DropHead { packets, bytes } => format!("drophead [{}]", limits(packets, bytes)),
        QueueSpec::Codel(c) => format!("{c}"),
        QueueSpec::Pie(p) => format!("{p}"),
    }
}

#[cfg(test)]
mod tests;
