//! `make bench`: simulator speed and memory.
//!
//! Runs one Cubic flow over `TMobile-LTE-short.down` (140 s, ≈16.7 Mbit/s) with a
//! 2000-packet drop-tail buffer, as the speed target is stated, several times, and
//! reports simulated seconds per second of wall-clock time and per second of the thread's
//! CPU time (medians of the runs, so each figure is a ratio measured within one process),
//! and the process's peak resident memory. On a shared machine the CPU-time figure is the
//! one to compare between builds: waiting for a core does not count in it.
//!
//! Usage: `cellcc-bench [TRACE_DIR] [--runs N] [--scheme NAME]...` (default: cubic and
//! bbr). TRACE_DIR defaults to the shared
//! Mahimahi trace folder next to the project; without it the bench says so and exits 2.

use std::path::PathBuf;
use std::time::Instant;

use cellcc_sim::Scenario;

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

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/traces/mahimahi"
    ));
    let mut runs = DEFAULT_RUNS;
    let mut schemes: Vec<String> = Vec::new();
    while let Some(a) = args.next() {
        match a.as_str() {
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
            let out = cellcc_sim::run(&sc);
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
    match peak_rss_kib() {
        Some(k) => println!("peak resident memory: {:.1} MiB", k as f64 / 1024.0),
        None => println!("peak resident memory: unavailable (no /proc/self/status)"),
    }
}
