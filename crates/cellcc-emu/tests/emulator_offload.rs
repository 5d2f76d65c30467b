//! End-to-end checks of the TUN offloads (`crates/cellcc-emu/src/offload.rs`): with them
//! (the default) the kernel hands the emulator TCP super-packets, which it splits into
//! the 1500-byte packets the link serves and coalesces again on the way out; with
//! `--no-offload` every read and write is one packet. Either way the transfer gets its
//! goodput and the link log shows packets of at most 1500 IP bytes. UDP, whose packets
//! come with partial checksums, still passes. They need root, `/dev/net/tun` and network
//! namespaces; without them each test prints `skipped: <reason>` and returns.

use std::fs::File;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;
use common::{json, require_emulation, write_constant_trace, TempDir, EMU, FLOW, SERIAL};

/// Trace rate, Mbit/s: one of the rates the goodput test of `tests/timing.rs` checks.
const RATE_MBPS: u64 = 48;
const TRANSFER_S: u64 = 10;
/// Goodput must be within this fraction of the ideal (as in `tests/timing.rs`).
const GOODPUT_TOLERANCE: f64 = 0.05;
/// Largest charged size of a logged departure: 1500 IP bytes and the 4 bytes of framing
/// a trace opportunity of 1504 bytes carries.
const MAX_DEPARTURE_BYTES: u64 = 1504;

/// Runs the emulator with `extra` arguments and waits for it (at most `limit`).
fn run_emu(dir: &TempDir, extra: &[&str], limit: Duration) {
    let mut emu = Command::new(EMU)
        .args(["--stats", &dir.s("stats.json")])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(dir.path("stderr")).unwrap())
        .spawn()
        .expect("start cellcc-emu");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = emu.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > limit {
            let _ = emu.kill();
            panic!("cellcc-emu still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        status.success(),
        "cellcc-emu exited with {status:?}: {}",
        std::fs::read_to_string(dir.path("stderr")).unwrap_or_default()
    );
}

/// A 10 s CUBIC transfer server → client through a 48 Mbit/s constant-rate trace, 20 ms
/// each way; returns goodput / ideal and the stats.
fn transfer(dir: &TempDir, extra: &[&str]) -> (f64, Value) {
    let per_s = write_constant_trace(&dir.path("c.trace"), RATE_MBPS);
    let ideal_mbps = (per_s * 1448 * 8) as f64 / 1e6;
    let port = 5401;
    let server = format!(
        "exec {FLOW} send --to $CELLCC_EMU_CLIENT_ADDR:{port} --cc cubic --duration {TRANSFER_S} --summary {}",
        dir.s("send.json")
    );
    let trace = dir.s("c.trace");
    let recv_summary = dir.s("recv.json");
    let down_log = dir.s("down.log");
    let port = port.to_string();
    let mut args = vec![
        "--delay",
        "20",
        "--uplink",
        &trace,
        "--downlink",
        &trace,
        "--downlink-queue",
        "droptail",
        "--downlink-queue-args",
        "packets=400",
        "--downlink-log",
        &down_log,
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--server-cmd", &server, "--", FLOW, "recv"]);
    args.extend_from_slice(&["--port", &port, "--summary", &recv_summary]);
    run_emu(dir, &args, Duration::from_secs(TRANSFER_S + 30));
    let goodput = json(&dir.path("recv.json"))["goodput_mbps"]
        .as_f64()
        .unwrap();
    (goodput / ideal_mbps, json(&dir.path("stats.json")))
}

/// The largest charged size among the departures of an mm-link log.
fn largest_departure(log: &str) -> u64 {
    log.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f.get(1) == Some(&"-")).then(|| f[2].parse::<u64>().unwrap())
        })
        .max()
        .unwrap_or(0)
}

fn count(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

#[test]
fn offloads_carry_super_packets_and_the_link_still_serves_1500_byte_packets() {
    require_emulation!();
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("offload-on");
    let (ratio, stats) = transfer(&dir, &[]);
    let down = &stats["downlink"];
    let io = &down["io"];
    println!("offloads on: goodput/ideal {ratio:.3}, downlink io {io}");
    assert_eq!(stats["offload"], true);
    // The sender's kernel handed over super-packets, each split into several packets.
    assert!(count(io, "gso_reads") > 0, "{io}");
    assert!(
        count(io, "gso_segments") >= 2 * count(io, "gso_reads"),
        "{io}"
    );
    assert_eq!(count(io, "gso_errors"), 0, "{io}");
    // Consecutive segments went out together: fewer writes than packets.
    assert!(count(io, "gso_writes") > 0, "{io}");
    assert!(count(io, "coalesced_packets") >= 2 * count(io, "gso_writes"));
    assert!(count(io, "writes") < count(down, "packets_out"), "{io}");
    assert_eq!(count(down, "write_errors"), 0);
    // The link served (and logged) every packet on its own, none above 1500 IP bytes.
    assert_eq!(
        count(down, "packets_out"),
        count(&down["link"], "packets_departed")
    );
    let log = std::fs::read_to_string(dir.path("down.log")).unwrap();
    let largest = largest_departure(&log);
    assert!(
        (1000..=MAX_DEPARTURE_BYTES).contains(&largest),
        "largest departure {largest} bytes"
    );
    assert!(
        (ratio - 1.0).abs() <= GOODPUT_TOLERANCE,
        "goodput is {ratio:.3} of the ideal, not within 5 %"
    );
}

#[test]
fn without_offloads_every_read_and_write_is_one_packet() {
    require_emulation!();
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("offload-off");
    let (ratio, stats) = transfer(&dir, &["--no-offload"]);
    println!("offloads off: goodput/ideal {ratio:.3}");
    assert_eq!(stats["offload"], false);
    for way in ["downlink", "uplink"] {
        let d = &stats[way];
        let io = &d["io"];
        assert_eq!(count(io, "gso_reads") + count(io, "gso_writes"), 0, "{io}");
        assert_eq!(count(io, "reads"), count(d, "packets_in"), "{way}");
        assert_eq!(count(io, "writes"), count(d, "packets_out"), "{way}");
    }
    let log = std::fs::read_to_string(dir.path("down.log")).unwrap();
    assert!(largest_departure(&log) <= MAX_DEPARTURE_BYTES);
    assert!(
        (ratio - 1.0).abs() <= GOODPUT_TOLERANCE,
        "goodput is {ratio:.3} of the ideal, not within 5 %"
    );
}

/// UDP datagrams (partial checksums, no segmentation) cross both ways with offloads on:
/// `iperf3 -u` from the client to the server and back (`-R`), none lost on an idle path.
#[test]
fn udp_passes_both_ways_with_offloads() {
    require_emulation!();
    if Command::new("iperf3").arg("--version").output().is_err() {
        println!("skipped: iperf3 is not installed");
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for reverse in ["", "-R"] {
        let dir = TempDir::new("offload-udp");
        let out = dir.s("iperf.json");
        // The client retries while the server is not listening yet, until a report with
        // the datagram counts comes back.
        let client = format!(
            "for i in 1 2 3 4 5 6 7 8 9 10; do \
             iperf3 -c $CELLCC_EMU_SERVER_ADDR -p 5402 -u -b 5M -l 1200 -t 2 {reverse} --json > {out}; \
             grep -q lost_packets {out} && exit 0; sleep 0.3; done; exit 1"
        );
        run_emu(
            &dir,
            &[
                "--rate-mbps",
                "48",
                "--delay",
                "5",
                "--server-cmd",
                "exec iperf3 -s -1 -p 5402",
                "--",
                "sh",
                "-c",
                &client,
            ],
            Duration::from_secs(30),
        );
        let report = json(&dir.path("iperf.json"));
        let sum = &report["end"]["sum"];
        let packets = sum["packets"]
            .as_u64()
            .unwrap_or_else(|| panic!("{report}"));
        let lost = sum["lost_packets"]
            .as_u64()
            .unwrap_or_else(|| panic!("{report}"));
        println!("UDP {reverse}: {packets} datagrams, {lost} lost");
        assert!(packets > 500, "{sum}");
        assert_eq!(lost, 0, "{sum}");
        let stats = json(&dir.path("stats.json"));
        for way in ["downlink", "uplink"] {
            assert_eq!(count(&stats[way]["io"], "gso_errors"), 0);
            assert_eq!(count(&stats[way], "write_errors"), 0);
        }
    }
}
