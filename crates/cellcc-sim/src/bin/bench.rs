//! `make bench`: simulator speed and memory.
//!
//! Runs one Cubic flow over `TMobile-LTE-short.down` (140 s, ≈16.7 Mbit/s) with a
//! 2000-packet drop-tail buffer, as the speed target is stated, several times, and
//! reports simulated seconds per wall-clock second (median of the runs, so the figure is
//! a ratio measured within one process) and the process's peak resident memory.
//!
//! Usage: `cellcc-bench [TRACE_DIR] [--runs N]`. TRACE_DIR defaults to the shared
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

fn main() {
    let mut args = std::env::args().skip(1);
    let mut dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/traces/mahimahi"
    ));
    let mut runs = DEFAULT_RUNS;
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
        "{:<8} {:>5} {:>12} {:>14} {:>12} {:>10}",
        "scheme", "run", "wall (ms)", "sim s / wall s", "events", "Mbit/s"
    );
    for scheme in ["cubic", "bbr"] {
        let text = scenario_text(&down.display().to_string(), up.as_deref(), scheme);
        let sc = match Scenario::parse(&text, "bench", None) {
            Ok(sc) => sc,
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(2);
            }
        };
        let mut speeds = Vec::with_capacity(runs);
        for run in 0..runs {
            let t0 = Instant::now();
            let out = cellcc_sim::run(&sc);
            let wall = t0.elapsed().as_secs_f64();
            let speed = sc.duration.as_secs_f64() / wall;
            speeds.push(speed);
            let tput = out.summary.last().map_or(0.0, |r| r.throughput_mbps);
            println!(
                "{scheme:<8} {run:>5} {:>12.1} {speed:>14.0} {:>12} {tput:>10.2}",
                wall * 1e3,
                out.events
            );
        }
        speeds.sort_by(|a, b| a.total_cmp(b));
        println!(
            "{scheme:<8} median speed: {:.0}x real time (target for cubic: >= 1000x)",
            speeds[speeds.len() / 2]
        );
    }
    match peak_rss_kib() {
        Some(k) => println!("peak resident memory: {:.1} MiB", k as f64 / 1024.0),
        None => println!("peak resident memory: unavailable (no /proc/self/status)"),
    }
}
