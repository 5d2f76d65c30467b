//! End-to-end goodput, RTT and timing of `cellcc-emu`: 10 s CUBIC transfers with
//! `cellcc-flow` through constant-rate traces at 12 to 200 Mbit/s, with the share of
//! packets written within 1 ms of schedule, and the mm-link log checked against the
//! link's counters. They need root, `/dev/net/tun` and network namespaces; without them
//! each test prints `skipped: <reason>` and returns. Run with
//! `cargo test --release -p cellcc-emu --test timing -- --nocapture` to see the
//! measured numbers.
//!
//! The tests run one at a time (a lock), since they measure timing on a shared machine.

use std::fs::File;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

mod common;
use common::{
    emu_command, json, require_emulation, wait_or_stop, write_constant_trace, TempDir, FLOW, SERIAL,
};

/// Duration of each goodput transfer.
const TRANSFER_S: u64 = 10;
/// Goodput must be within this fraction of the ideal.
const GOODPUT_TOLERANCE: f64 = 0.05;
/// Fraction of packets that must be written within 1 ms of schedule.
const ON_TIME_FRACTION: f64 = 0.99;
/// Runs of one rate when the machine, not the emulator, made packets late (below).
const ATTEMPTS: usize = 3;

/// One 10 s CUBIC transfer through a constant-rate trace.
struct Transfer {
    /// Goodput / ideal.
    goodput_ratio: f64,
    on_time: f64,
    min_rtt_ms: f64,
    /// Share of the run during which the kernel held the event loop's wake-ups off by
    /// more than 1 ms: packets due then leave late whatever the emulator does.
    machine_stall_share: f64,
    row: String,
}

fn transfer(mbps: u64, dir: &TempDir, with_log: bool) -> Transfer {
    let trace = dir.path("c.trace");
    let per_s = write_constant_trace(&trace, mbps);
    // 1448 payload bytes per 1504-byte opportunity.
    let ideal_mbps = (per_s * 1448 * 8) as f64 / 1e6;
    let port = 5201;
    let server = format!(
        "exec {FLOW} send --to $CELLCC_EMU_CLIENT_ADDR:{port} --cc cubic --duration {TRANSFER_S} --summary {}",
        dir.s("send.json")
    );
    let log_args = if with_log {
        vec!["--downlink-log".to_string(), dir.s("down.log")]
    } else {
        Vec::new()
    };
    let mut emu = emu_command(false)
        .args(&log_args)
        .args([
            "--delay",
            "20",
            "--uplink",
            &dir.s("c.trace"),
            "--downlink",
            &dir.s("c.trace"),
            "--downlink-queue",
            "droptail",
            "--downlink-queue-args",
            "packets=400",
            "--stats",
            &dir.s("stats.json"),
            "--server-cmd",
            &server,
            "--",
            FLOW,
            "recv",
            "--port",
            &port.to_string(),
            "--summary",
            &dir.s("recv.json"),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(dir.path("stderr")).unwrap())
        .spawn()
        .expect("start cellcc-emu");
    let status = wait_or_stop(&mut emu, Duration::from_secs(TRANSFER_S + 30));
    assert!(
        status.success(),
        "{mbps} Mbit/s: cellcc-emu exited with {status:?}: {}",
        std::fs::read_to_string(dir.path("stderr")).unwrap_or_default()
    );
    let recv = json(&dir.path("recv.json"));
    let stats = json(&dir.path("stats.json"));
    if with_log {
        check_log(&dir.path("down.log"), &stats["downlink"]["link"], per_s);
    }
    let goodput_mbps = recv["goodput_mbps"].as_f64().unwrap();
    let lateness = &stats["lateness"];
    let wakeups = &stats["wakeup_lateness"];
    let on_time = lateness["fraction_within_1ms"].as_f64().unwrap();
    let machine_stall_share = wakeups["excess_over_1ms_ms"].as_f64().unwrap()
        / (stats["duration_s"].as_f64().unwrap() * 1e3);
    let min_rtt_ms = json(&dir.path("send.json"))["last"]["min_rtt_us"]
        .as_f64()
        .unwrap()
        / 1e3;
    let row = format!(
        "{mbps:>9}  {goodput_mbps:>12.2}  {ideal_mbps:>10.2}  {:>5.3}  {on_time:>11.4}  {:>6.0}  {:>6.0}  {:>8.4}  {:>11.0}  {:>12.3}  {:>12.3}  {:>5}  {min_rtt_ms:>10.3}",
        goodput_mbps / ideal_mbps,
        lateness["p99_us"].as_f64().unwrap(),
        lateness["max_us"].as_f64().unwrap(),
        wakeups["fraction_within_1ms"].as_f64().unwrap(),
        wakeups["max_us"].as_f64().unwrap(),
        machine_stall_share * 100.0,
        stats["cpu_fraction"].as_f64().unwrap(),
        stats["downlink"]["link"]["drops_queue_full"],
    );
    Transfer {
        goodput_ratio: goodput_mbps / ideal_mbps,
        on_time,
        min_rtt_ms,
        machine_stall_share,
        row,
    }
}

/// Goodput, timing and RTT of CUBIC through constant-rate traces.
///
/// Timing depends on the machine as well as on the emulator: on a kernel without
/// preemption (`PREEMPT_NONE`, this machine kind) another process's work in the kernel
/// delays even a `SCHED_FIFO` wake-up by milliseconds. The emulator measures how late its
/// timed sleeps end (`wakeup_lateness`). A run that misses the 99 % is repeated, up to
/// [`ATTEMPTS`] runs, only when those wake-up delays account for at least half of its
/// late packets; a miss the machine does not explain fails at once, and so does a rate
/// whose every run misses.
#[test]
fn cubic_goodput_and_timing_on_constant_rate_traces() {
    require_emulation!();
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut failures = Vec::new();
    println!("rate_mbps  goodput_mbps  ideal_mbps  ratio  on_time_1ms  p99_us  max_us  wake_1ms  wake_max_us  held_off_pct  cpu_fraction  drops  min_rtt_ms");
    for mbps in [12u64, 48, 96, 200] {
        let mut attempt = 1;
        let run = loop {
            let dir = TempDir::new(&format!("goodput{mbps}-{attempt}"));
            // The slowest rate also writes the downlink's mm-link log, checked in `transfer`.
            let run = transfer(mbps, &dir, mbps == 12);
            println!("{}", run.row);
            let late_share = 1.0 - run.on_time;
            let machine_explains = run.machine_stall_share >= 0.5 * late_share;
            if run.on_time >= ON_TIME_FRACTION || !machine_explains || attempt == ATTEMPTS {
                if run.on_time < ON_TIME_FRACTION && machine_explains {
                    println!(
                        "{mbps} Mbit/s: the kernel held the loop off for {:.2} % of every run",
                        run.machine_stall_share * 100.0
                    );
                }
                break run;
            }
            println!(
                "{mbps} Mbit/s: {:.2} % late, and the kernel held the loop off for {:.2} % of the run: again",
                late_share * 100.0,
                run.machine_stall_share * 100.0
            );
            attempt += 1;
        };
        // Two 20 ms delays, plus waiting for an opportunity in each direction: trace
        // timestamps are whole ms, so at any rate a packet may wait up to 1 ms (an ACK
        // sent as data arrives at an opportunity just misses it, as in Mahimahi), plus
        // 1 ms for the machine.
        let max_rtt_ms = 40.0 + 2.0 + 1.0;
        if !(40.0..=max_rtt_ms).contains(&run.min_rtt_ms) {
            failures.push(format!(
                "{mbps} Mbit/s: sender's min RTT {:.3} ms is not in [40, {max_rtt_ms:.3}] ms",
                run.min_rtt_ms
            ));
        }
        if (run.goodput_ratio - 1.0).abs() > GOODPUT_TOLERANCE {
            failures.push(format!(
                "{mbps} Mbit/s: goodput is {:.3} of the ideal, not within 5 %",
                run.goodput_ratio
            ));
        }
        if run.on_time < ON_TIME_FRACTION {
            failures.push(format!(
                "{mbps} Mbit/s: only {:.2} % of packets within 1 ms (wake-ups held off for {:.2} % of the run)",
                run.on_time * 100.0,
                run.machine_stall_share * 100.0
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The mm-link log agrees with the link's counters: one `-` line per departure, one `+`
/// per arrival at the link (accepted or refused), one `d` per refused arrival, an
/// opportunity line for every opportunity, in time order.
fn check_log(path: &Path, link: &Value, per_s: u64) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.starts_with("# mahimahi mm-link (cellcc-emu) [downlink]"));
    assert!(text.contains("# queue: droptail [packets=400]"));
    let (mut arrivals, mut departures, mut drops, mut opportunities) = (0u64, 0u64, 0u64, 0u64);
    let mut last_t = 0u64;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let fields: Vec<&str> = line.split(' ').collect();
        let t: u64 = fields[0]
            .parse()
            .unwrap_or_else(|_| panic!("bad line {line:?}"));
        assert!(t >= last_t, "log out of order at {line:?}");
        last_t = t;
        match fields[1] {
            "+" => arrivals += 1,
            "-" => departures += 1,
            "d" => drops += 1,
            "#" => {
                assert_eq!(fields[2], "1504");
                opportunities += 1;
            }
            other => panic!("unknown event {other:?} in {line:?}"),
        }
    }
    let count = |key: &str| link[key].as_u64().unwrap();
    assert_eq!(departures, count("packets_departed"));
    assert_eq!(drops, count("drops_queue_full"));
    assert_eq!(
        arrivals,
        count("packets_accepted") + count("drops_queue_full")
    );
    // Opportunities up to the end of the run: about per_s for each second logged.
    let expected = per_s as f64 * last_t as f64 / 1000.0;
    assert!(
        (opportunities as f64 - expected).abs() <= per_s as f64 / 100.0 + 2.0,
        "{opportunities} opportunity lines for {last_t} ms, expected about {expected:.0}"
    );
}
