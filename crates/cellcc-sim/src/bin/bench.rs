//! `make bench`: simulator speed and memory.
//!
//! Runs one Cubic flow over `TMobile-LTE-short.down` (140 s, ≈16.7 Mbit/s) with a
//! 2000-packet drop-tail buffer, as the speed target is stated, several times, and
//! reports simulated seconds per second of wall-clock time and per second of the thread's
//! CPU time (medians of the runs, so each figure is a ratio measured within one process),
//! and the process's peak resident memory. On a shared machine the CPU-time figure is the
//! one to compare between builds: waiting for a core does not count in it.
//!
//! Then the scaling scenarios of [`scale`]: CPU time per delivered packet of a shared cell
//! of 4 to 1024 UEs, and of 1 to 1000 flows on one 1 Gbit/s link.
//!
//! Usage: `cellcc-bench [TRACE_DIR] [--runs N] [--scheme NAME]... [--only speed|cell|flows]...
//! [--ues N,N,...] [--flows N,N,...]` (default: cubic and bbr; every section; the default
//! counts of [`scale`]). TRACE_DIR defaults to the shared
//! Mahimahi trace folder next to the project; without it the bench says so and exits 2.
//!
//! `cellcc-bench --per-ack [--trace] [TRACE_DIR] [--runs N] [--scheme NAME]...`
//! (`make bench-per-ack`): the per-ACK CPU cost of every registered scheme (PropRate,
//! CoNEXT 2017, Table 4), see [`per_ack`].

use std::path::PathBuf;
use std::time::Instant;

use cellcc_sim::schemes::SCHEMES;
use cellcc_sim::Scenario;

#[path = "bench/scale.rs"]
mod scale;

const TRACE: &str = "TMobile-LTE-short.down";
const UPLINK_TRACE: &str = "TMobile-LTE-short.up";
const DEFAULT_RUNS: usize = 5;

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// CPU time this thread has used (user + system), from `getrusage(RUSAGE_THREAD)`.
fn thread_cpu_secs() -> f64 {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `ru` is a valid, writable rusage; the call only fills it.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, ru.as_mut_ptr()) };
    if rc != 0 {
        return f64::NAN;
    }
    // SAFETY: getrusage succeeded, so it initialised the struct.
    let ru = unsafe { ru.assume_init() };
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
    secs(ru.ru_utime) + secs(ru.ru_stime)
}

/// CPU time this thread has used, nanoseconds, from `clock_gettime(CLOCK_THREAD_CPUTIME_ID)`
/// (the scheduler's runtime, not rounded to microseconds as getrusage reports it).
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the call only fills it.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(
        rc, 0,
        "CLOCK_THREAD_CPUTIME_ID is supported on Linux since 2.6.12"
    );
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn scenario_text(down: &str, up: Option<&str>, scheme: &str) -> String {
    let uplink = match up {
        Some(u) => format!("trace = \"{u}\""),
        None => "rate_mbps = 100.0".to_string(),
    };
    format!(
        "name = \"bench-{scheme}\"\nduration_s = 140.0\nseed = 1\n\
         [downlink]\ntrace = \"{down}\"\ndelay_ms = 10.0\nqueue = {{ kind = \"droptail\", packets = 2000 }}\n\
         [uplink]\n{uplink}\ndelay_ms = 10.0\n\
         [[flows]]\nscheme = \"{scheme}\"\n"
    )
}

/// A comma-separated list of positive counts, or exit 2 naming the option.
fn counts(option: &str, value: Option<String>) -> Vec<usize> {
    let parsed: Option<Vec<usize>> = value.and_then(|v| {
        v.split(',')
            .map(|n| n.trim().parse().ok().filter(|&n: &usize| n >= 1))
            .collect()
    });
    parsed.unwrap_or_else(|| {
        eprintln!("error: {option} needs a comma-separated list of positive integers");
        std::process::exit(2);
    })
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Run a scenario to the end; an error (only a scenario the loader would refuse) ends
/// the benchmark.
fn run_or_exit(sc: &Scenario) -> cellcc_sim::SimOutput {
    cellcc_sim::run(sc).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2);
    })
}

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("--per-ack") {
        args.next();
        per_ack::main(args.collect());
        return;
    }
    let mut dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/traces/mahimahi"
    ));
    let mut runs = DEFAULT_RUNS;
    let mut schemes: Vec<String> = Vec::new();
    let mut only: Vec<String> = Vec::new();
    let mut ues = scale::DEFAULT_UES.to_vec();
    let mut flows = scale::DEFAULT_FLOWS.to_vec();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--only" => match args.next() {
                Some(s) if ["speed", "cell", "flows"].contains(&s.as_str()) => only.push(s),
                _ => {
                    eprintln!("error: --only needs one of speed, cell, flows");
                    std::process::exit(2);
                }
            },
            "--ues" => ues = counts("--ues", args.next()),
            "--flows" => flows = counts("--flows", args.next()),
            "--runs" => {
                runs = match args.next().and_then(|v| v.parse().ok()) {
                    Some(n) if n >= 1 => n,
                    _ => {
                        eprintln!("error: --runs needs a positive integer");
                        std::process::exit(2);
                    }
                }
            }
            "--scheme" => match args.next() {
                Some(name) => schemes.push(name),
                None => {
                    eprintln!("error: --scheme needs a scheme name");
                    std::process::exit(2);
                }
            },
            other => dir = PathBuf::from(other),
        }
    }
    let down = dir.join(TRACE);
    if !down.exists() {
        eprintln!("error: {} not found; pass the folder holding the Mahimahi traces (see `cellcc traces download`)", down.display());
        std::process::exit(2);
    }
    let section = |name: &str| only.is_empty() || only.iter().any(|s| s == name);
    if section("speed") {
        speed(&down, &dir, runs, schemes);
    }
    if section("cell") {
        let configs = ues
            .iter()
            .map(|&n| (format!("{n} UEs"), scale::cell_text(&down, n)))
            .collect();
        println!();
        scale::run(
            &format!("cell: PF, 1 ms TTIs, every UE on {TRACE} (own offset), 1 CUBIC flow + 8 Mbit/s CBR background, 20 s; CPU time per delivered packet, {runs} runs alternated"),
            "cell",
            configs,
            runs,
        );
    }
    if section("flows") {
        let configs = flows
            .iter()
            .map(|&n| (format!("{n} flows"), scale::flows_text(n)))
            .collect();
        println!();
        scale::run(
            &format!("many flows: CUBIC on a 1 Gbit/s downlink, 10 ms each way, droptail 4000 packets, 5 s; CPU time per delivered packet, {runs} runs alternated"),
            "flows",
            configs,
            runs,
        );
    }
    match peak_rss_kib() {
        Some(k) => println!("peak resident memory: {:.1} MiB", k as f64 / 1024.0),
        None => println!("peak resident memory: unavailable (no /proc/self/status)"),
    }
}

/// The speed bench: one flow per scheme over the trace, simulated seconds per second.
fn speed(down: &std::path::Path, dir: &std::path::Path, runs: usize, mut schemes: Vec<String>) {
    let up = dir.join(UPLINK_TRACE);
    let up = up.exists().then(|| up.display().to_string());
    println!(
        "cellcc-bench: {TRACE}, 140 s, droptail 2000 packets, 10 ms one-way delay each direction"
    );
    println!(
        "{:<8} {:>5} {:>10} {:>14} {:>10} {:>13} {:>10} {:>8}",
        "scheme",
        "run",
        "wall (ms)",
        "sim s / wall s",
        "CPU (ms)",
        "sim s / CPU s",
        "events",
        "Mbit/s"
    );
    if schemes.is_empty() {
        schemes = vec!["cubic".into(), "bbr".into()];
    }
    for scheme in &schemes {
        let scheme = scheme.as_str();
        let text = scenario_text(&down.display().to_string(), up.as_deref(), scheme);
        let sc = match Scenario::parse(&text, "bench", None) {
            Ok(sc) => sc,
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(2);
            }
        };
        let mut speeds = Vec::with_capacity(runs);
        let mut cpu_speeds = Vec::with_capacity(runs);
        for run in 0..runs {
            let c0 = thread_cpu_secs();
            let t0 = Instant::now();
            let out = run_or_exit(&sc);
            let wall = t0.elapsed().as_secs_f64();
            let cpu = thread_cpu_secs() - c0;
            let speed = sc.duration.as_secs_f64() / wall;
            let cpu_speed = sc.duration.as_secs_f64() / cpu;
            speeds.push(speed);
            cpu_speeds.push(cpu_speed);
            let tput = out.summary.last().map_or(0.0, |r| r.throughput_mbps);
            println!(
                "{scheme:<8} {run:>5} {:>10.1} {speed:>14.0} {:>10.1} {cpu_speed:>13.0} {:>10} {tput:>8.2}",
                wall * 1e3,
                cpu * 1e3,
                out.events
            );
        }
        println!(
            "{scheme:<8} median speed: {:.0}x real time, {:.0}x per CPU second (target for cubic: >= 1000x)",
            median(&mut speeds),
            median(&mut cpu_speeds)
        );
    }
}

/// `--per-ack`: what one ACK costs each algorithm in this implementation.
///
/// PropRate (CoNEXT 2017) §5.5, Table 4, measures the sender's CPU utilisation under iperf
/// for each protocol on three CPUs and concludes that PropRate's footprint is comparable
/// to CUBIC's while the forecast-based Sprout, Verus and PCC cost significantly more. A
/// simulator has no sender CPU to sample, so this mode measures the thread CPU time of
/// whole single-flow runs and divides it by the ACKs the sender processed
/// (`Conservation::acks_delivered`). Everything a run does besides the congestion control
/// (links, queues, the TCP model, metrics) is paid by every scheme; `fixed` (a constant
/// window, no work per ACK) measures it, and a scheme's marginal cost is its ns/ACK minus
/// `fixed`'s. Figures are medians over the runs, with their spread (min–max); the schemes
/// are alternated (every scheme once per round), so load on a shared machine falls on all
/// of them alike.
mod per_ack {
    use super::{median, thread_cpu_ns, Scenario, SCHEMES, TRACE, UPLINK_TRACE};
    use std::path::PathBuf;

    /// Runs per scheme unless `--runs` says otherwise.
    const DEFAULT_RUNS: usize = 5;
    /// The reference scheme: a constant window, so its per-ACK work is the TCP model's.
    const REFERENCE: &str = "fixed";
    /// `fixed`'s window, packets: above the BDP of both links (12 Mbit/s × 20 ms = 20
    /// packets; the trace's ≈16.7 Mbit/s mean × 20 ms ≈ 28), so the reference keeps the
    /// link busy and its ACK count matches the full-rate schemes'.
    const FIXED_CWND: u32 = 100;
    /// A second reference, reported but not subtracted: `fixed` paced at the link rate,
    /// separating what pacing timers cost from what an algorithm's per-ACK work costs.
    const PACED: &str = "fixed-paced";
    /// The constant link (the default): 12 Mbit/s, 60 s.
    const RATE_MBPS: f64 = 12.0;
    const CONSTANT_DURATION_S: f64 = 60.0;
    /// With `--trace`: the speed bench's trace and length.
    const TRACE_DURATION_S: f64 = 140.0;

    /// PropRate CoNEXT 2017 Table 4: sender CPU utilisation (%) under iperf, per protocol,
    /// on an Intel i7-2600, a Xeon E5640 and a Core 2 Q9550; the scheme that stands for it
    /// here (PCC is PCC Allegro in the paper; the nearest here is PCC Vivace).
    const PAPER: &[(&str, &str, [f64; 3])] = &[
        ("Sprout", "sprout", [2.4, 2.8, 3.5]),
        ("LEDBAT", "ledbat", [0.1, 0.1, 3.0]),
        ("PCC", "pcc-vivace", [12.7, 12.8, 25.4]),
        ("Verus", "verus", [21.8, 22.6, 25.2]),
        ("BBR", "bbr", [0.1, 0.1, 1.5]),
        ("CUBIC", "cubic", [0.1, 0.1, 0.3]),
        ("RRE", "", [0.1, 0.1, 0.3]),
        ("PropRate", "proprate", [0.1, 0.1, 0.3]),
    ];

    fn usage_error(msg: &str) -> ! {
        eprintln!("error: {msg}");
        eprintln!(
            "usage: cellcc-bench --per-ack [--trace] [TRACE_DIR] [--runs N] [--scheme NAME]..."
        );
        std::process::exit(2);
    }

    /// The capacity keys of each direction and the run length.
    struct Links<'a> {
        down: &'a str,
        up: &'a str,
        duration_s: f64,
    }

    fn scenario_text(links: &Links, scheme: &str) -> String {
        let (scheme, params) = match scheme {
            REFERENCE => (scheme, format!("params = {{ cwnd = {FIXED_CWND} }}\n")),
            PACED => (
                REFERENCE,
                format!("params = {{ cwnd = {FIXED_CWND}, pacing_mbps = {RATE_MBPS:.1} }}\n"),
            ),
            _ => (scheme, String::new()),
        };
        format!(
            "name = \"bench-per-ack-{scheme}\"\nduration_s = {:.1}\nseed = 1\n\
             [downlink]\n{}\ndelay_ms = 10.0\nqueue = {{ kind = \"droptail\", packets = 2000 }}\n\
             [uplink]\n{}\ndelay_ms = 10.0\n\
             [[flows]]\nscheme = \"{scheme}\"\n{params}",
            links.duration_s, links.down, links.up
        )
    }

    /// One scheme's medians.
    struct Row {
        scheme: String,
        acks: u64,
        events_per_ack: f64,
        mbps: f64,
        cpu_ms: f64,
        ns_per_ack: f64,
        /// Smallest and largest ns/ACK of the runs.
        spread: (f64, f64),
    }

    /// One scheme's scenario and the runs measured so far.
    struct Runs {
        scheme: String,
        sc: Scenario,
        acks: u64,
        events: u64,
        mbps: f64,
        cpu_ms: Vec<f64>,
        per_ack: Vec<f64>,
    }

    impl Runs {
        fn new(scheme: &str, links: &Links) -> Self {
            let text = scenario_text(links, scheme);
            let sc = Scenario::parse(&text, "bench --per-ack", None).unwrap_or_else(|e| {
                eprintln!("error: {e}");
                std::process::exit(2);
            });
            Runs {
                scheme: scheme.to_string(),
                sc,
                acks: 0,
                events: 0,
                mbps: 0.0,
                cpu_ms: Vec::new(),
                per_ack: Vec::new(),
            }
        }

        /// One timed run.
        fn measure(&mut self) {
            let c0 = thread_cpu_ns();
            let out = super::run_or_exit(&self.sc);
            let ns = (thread_cpu_ns() - c0) as f64;
            let n = out.conservation.acks_delivered;
            // The simulator is deterministic: every run of a scenario processes the same ACKs.
            assert!(
                self.per_ack.is_empty() || n == self.acks,
                "{}: ACK count changed between runs",
                self.scheme
            );
            self.acks = n;
            self.events = out.events;
            self.mbps = out.summary.last().map_or(0.0, |r| r.throughput_mbps);
            self.cpu_ms.push(ns * 1e-6);
            self.per_ack.push(ns / n.max(1) as f64);
        }

        fn row(mut self) -> Row {
            let lo = self.per_ack.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = self.per_ack.iter().copied().fold(0.0, f64::max);
            Row {
                scheme: self.scheme,
                acks: self.acks,
                events_per_ack: self.events as f64 / self.acks.max(1) as f64,
                mbps: self.mbps,
                cpu_ms: median(&mut self.cpu_ms),
                ns_per_ack: median(&mut self.per_ack),
                spread: (lo, hi),
            }
        }
    }

    /// Every scheme once per round, `runs` rounds, so that load on a shared machine
    /// falls on every scheme alike; one untimed round first (the first touch of the code
    /// and allocator is not an algorithm's cost).
    fn measure_alternated(schemes: &[String], links: &Links, runs: usize) -> Vec<Row> {
        let mut all: Vec<Runs> = schemes.iter().map(|s| Runs::new(s, links)).collect();
        for r in &all {
            super::run_or_exit(&r.sc);
        }
        for _ in 0..runs {
            for r in all.iter_mut() {
                r.measure();
            }
        }
        all.into_iter().map(Runs::row).collect()
    }

    pub(super) fn main(args: Vec<String>) {
        let mut dir = PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/traces/mahimahi"
        ));
        let mut runs = DEFAULT_RUNS;
        let mut use_trace = false;
        let mut schemes: Vec<String> = Vec::new();
        let mut args = args.into_iter();
        while let Some(a) = args.next() {
            match a.as_str() {
                "--runs" => match args.next().and_then(|v| v.parse().ok()) {
                    Some(n) if n >= 1 => runs = n,
                    _ => usage_error("--runs needs a positive integer"),
                },
                "--scheme" => match args.next() {
                    Some(name) => schemes.push(name),
                    None => usage_error("--scheme needs a scheme name"),
                },
                "--trace" => use_trace = true,
                other if other.starts_with("--") => usage_error(&format!("unknown option {other}")),
                other => dir = PathBuf::from(other),
            }
        }
        if schemes.is_empty() {
            schemes = SCHEMES.iter().map(|s| s.name.to_string()).collect();
        }
        for s in &schemes {
            if s != PACED && cellcc_sim::schemes::find(s).is_none() {
                usage_error(&format!("unknown scheme '{s}'"));
            }
        }
        // The references are measured first and always, whatever `--scheme` chose.
        schemes.retain(|s| s != REFERENCE);
        schemes.insert(0, REFERENCE.to_string());
        schemes.insert(1, PACED.to_string());

        // The capacity keys of each direction (`trace = ...` or `rate_mbps = ...`).
        let (down, up, duration_s, what) = if use_trace {
            let down = dir.join(TRACE);
            if !down.exists() {
                usage_error(&format!(
                    "{} not found; pass the folder holding the Mahimahi traces (see `cellcc traces download`)",
                    down.display()
                ));
            }
            let up = dir.join(UPLINK_TRACE);
            let up = if up.exists() {
                format!("trace = \"{}\"", up.display())
            } else {
                "rate_mbps = 100.0".to_string()
            };
            (
                format!("trace = \"{}\"", down.display()),
                up,
                TRACE_DURATION_S,
                format!("{TRACE}, {TRACE_DURATION_S} s"),
            )
        } else {
            (
                format!("rate_mbps = {RATE_MBPS:.1}"),
                "rate_mbps = 100.0".to_string(),
                CONSTANT_DURATION_S,
                format!("constant {RATE_MBPS} Mbit/s downlink, {CONSTANT_DURATION_S} s"),
            )
        };
        let links = Links {
            down: &down,
            up: &up,
            duration_s,
        };

        println!(
            "cellcc-bench --per-ack: one flow, {what}, 10 ms one-way delay each direction, \
             droptail 2000 packets; medians of {runs} runs, schemes alternated; thread CPU time per ACK the sender processed"
        );
        println!(
            "{:<11} {:>8} {:>8} {:>11} {:>9} {:>8} {:>13} {:>13} {:>9}",
            "scheme",
            "ACKs",
            "Mbit/s",
            "events/ACK",
            "CPU (ms)",
            "ns/ACK",
            "spread",
            "marginal ns",
            "/ cubic"
        );
        let rows = measure_alternated(&schemes, &links, runs);
        let base = rows[0].ns_per_ack;
        let marginal = |r: &Row| r.ns_per_ack - base;
        // Whole-run ns/ACK relative to CUBIC's: CUBIC's marginal cost is within the
        // run-to-run noise of the reference, so a ratio of marginals would be noise.
        let cubic = rows
            .iter()
            .find(|r| r.scheme == "cubic")
            .map(|r| r.ns_per_ack);
        let vs_cubic = |r: &Row| {
            cubic
                .filter(|c| *c > 0.0)
                .map_or("-".to_string(), |c| format!("{:.2}", r.ns_per_ack / c))
        };
        for r in &rows {
            let vs_cubic = vs_cubic(r);
            println!(
                "{:<11} {:>8} {:>8.2} {:>11.2} {:>9.1} {:>8.0} {:>13} {:>13.0} {:>9}",
                r.scheme,
                r.acks,
                r.mbps,
                r.events_per_ack,
                r.cpu_ms,
                r.ns_per_ack,
                format!("{:.0}-{:.0}", r.spread.0, r.spread.1),
                marginal(r),
                vs_cubic
            );
        }
        println!();
        println!("PropRate CoNEXT 2017 Table 4: sender CPU utilisation under iperf (i7-2600 / Xeon E5640 / Q9550), beside ours");
        println!(
            "{:<9} {:<11} {:>20} {:>13} {:>9}",
            "paper", "scheme", "CPU % (paper)", "marginal ns", "/ cubic"
        );
        for (name, scheme, pct) in PAPER {
            let ours = rows.iter().find(|r| r.scheme == *scheme);
            let (m, x) = match ours {
                Some(r) => (format!("{:.0}", marginal(r)), vs_cubic(r)),
                None if scheme.is_empty() => ("not here".to_string(), "-".to_string()),
                None => ("-".to_string(), "-".to_string()),
            };
            let shown = if scheme.is_empty() { "-" } else { scheme };
            println!(
                "{name:<9} {shown:<11} {:>20} {m:>13} {x:>9}",
                format!("{} / {} / {}", pct[0], pct[1], pct[2])
            );
        }
        println!(
            "claim: PropRate's footprint is comparable to CUBIC's; Sprout, Verus and PCC cost significantly more"
        );
    }
}
