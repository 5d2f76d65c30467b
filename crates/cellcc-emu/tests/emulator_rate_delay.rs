//! End-to-end tests of `cellcc-emu --rate-mbps` and `--delay-trace` through real TUN
//! devices and network namespaces: a CUBIC transfer with `cellcc-flow` over a
//! constant-rate path, and the RTT a transfer sees through a delay trace. They need root,
//! `/dev/net/tun` and network namespaces; without them each test prints
//! `skipped: <reason>` and returns. The tests run one at a time (a lock).

use std::fs::File;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;
use common::{json, unsupported, TempDir, EMU, FLOW, SERIAL};

/// Runs `cellcc-emu` with `args`, a `cellcc-flow` CUBIC sender of `seconds` on the
/// server side and its receiver as the client; returns the receiver's summary.
fn transfer(dir: &TempDir, args: &[&str], seconds: u64) -> Value {
    let port = 5301;
    let server = format!(
        "exec {FLOW} send --to $CELLCC_EMU_CLIENT_ADDR:{port} --cc cubic --duration {seconds} \
         --info-log {} --summary {}",
        dir.s("info.csv"),
        dir.s("send.json")
    );
    let mut emu = Command::new(EMU)
        .args(args)
        .args([
            "--stats",
            &dir.s("stats.json"),
            "--server-cmd",
            &server,
            "--",
        ])
        .args([
            FLOW,
            "recv",
            "--port",
            &port.to_string(),
            "--summary",
            &dir.s("recv.json"),
        ])
        .env_remove("SUDO_UID")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(dir.path("stderr")).unwrap())
        .spawn()
        .expect("start cellcc-emu");
    let deadline = Instant::now() + Duration::from_secs(seconds + 30);
    let status = loop {
        if let Some(status) = emu.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = emu.kill();
            panic!("cellcc-emu did not finish in time");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        status.success(),
        "cellcc-emu exited with {status:?}: {}",
        std::fs::read_to_string(dir.path("stderr")).unwrap_or_default()
    );
    json(&dir.path("recv.json"))
}

/// A constant-rate path is the simulator's `rate_mbps` link: CUBIC fills it, never
/// beyond the rate, and the link log lists no opportunities.
#[test]
fn cubic_fills_a_constant_rate_path() {
    if let Some(reason) = unsupported() {
        println!("skipped: {reason}");
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("rate");
    let recv = transfer(
        &dir,
        &[
            "--rate-mbps",
            "24",
            "--delay",
            "10",
            "--downlink-queue",
            "droptail",
            "--downlink-queue-args",
            "packets=200",
            "--downlink-log",
            &dir.s("down.log"),
        ],
        5,
    );
    // 1448 payload bytes per 1500-byte IP packet; the constant link charges the IP length.
    let ideal_mbps = 24.0 * 1448.0 / 1500.0;
    let goodput = recv["goodput_mbps"].as_f64().unwrap();
    println!("goodput {goodput:.2} Mbit/s of {ideal_mbps:.2}");
    assert!(
        (0.9 * ideal_mbps..=1.01 * ideal_mbps).contains(&goodput),
        "goodput {goodput} Mbit/s, ideal {ideal_mbps}"
    );
    let stats = json(&dir.path("stats.json"));
    assert_eq!(stats["downlink"]["trace"], "24 Mbit/s");
    assert_eq!(stats["uplink"]["trace"], "24 Mbit/s");
    let log = std::fs::read_to_string(dir.path("down.log")).unwrap();
    assert!(
        log.lines().any(|l| l.contains(" - ")),
        "no departures logged"
    );
    assert!(
        !log.lines()
            .any(|l| !l.starts_with('#') && l.contains(" # ")),
        "a constant-rate log lists no opportunities"
    );
    // Departures carry IP lengths (no framing): full-sized packets log 1500 bytes.
    assert!(log
        .lines()
        .any(|l| l.ends_with(" - 1500") || l.contains(" - 1500 ")));
}

/// The RTT follows the delay trace: 5 ms each way for the first 2 s, 50 ms after.
#[test]
fn the_rtt_follows_the_delay_trace() {
    if let Some(reason) = unsupported() {
        println!("skipped: {reason}");
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("dtrace");
    std::fs::write(
        dir.path("delays.txt"),
        "# ms each way, 2 s per line\n5\n50\n",
    )
    .unwrap();
    // A fast link with a short queue, so queueing adds at most about 2 ms.
    transfer(
        &dir,
        &[
            "--rate-mbps",
            "100",
            "--delay-trace",
            &dir.s("delays.txt"),
            "--delay-trace-step",
            "2000",
            "--downlink-queue",
            "droptail",
            "--downlink-queue-args",
            "packets=20",
        ],
        4,
    );
    let stats = json(&dir.path("stats.json"));
    assert!(stats["delay_trace"]
        .as_str()
        .unwrap()
        .ends_with("delays.txt"));
    // srtt (µs) by the sender's time since it started (just after emulator time 0).
    let info = std::fs::read_to_string(dir.path("info.csv")).unwrap();
    let samples: Vec<(f64, f64)> = info
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (
                f[0].parse::<f64>().unwrap() / 1e9,
                f[2].parse::<f64>().unwrap() / 1e3,
            )
        })
        .collect();
    let srtt_in = |from: f64, to: f64| -> Vec<f64> {
        samples
            .iter()
            .filter(|(t, _)| (from..to).contains(t))
            .map(|&(_, srtt)| srtt)
            .collect()
    };
    let early = srtt_in(1.0, 1.8);
    let late = srtt_in(3.0, 3.8);
    assert!(!early.is_empty() && !late.is_empty(), "{samples:?}");
    let range = |v: &[f64]| {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(0.0, f64::max);
        format!("{lo:.1}-{hi:.1} ms")
    };
    println!(
        "srtt at 1.0-1.8 s: {}, at 3.0-3.8 s: {}",
        range(&early),
        range(&late)
    );
    assert!(
        early.iter().all(|&s| (9.0..=30.0).contains(&s)),
        "{early:?}"
    );
    assert!(
        late.iter().all(|&s| (99.0..=140.0).contains(&s)),
        "{late:?}"
    );
}

/// Bad rates and delay traces are one line naming the option (and the file and line),
/// exit status 2, before anything is set up (so no root is needed).
#[test]
fn bad_rates_and_delay_traces_are_exit_2() {
    let dir = TempDir::new("badrate");
    std::fs::write(dir.path("t"), "1\n").unwrap();
    std::fs::write(dir.path("delays.txt"), "10\n\n20\n").unwrap();
    let t = dir.s("t");
    let delays = dir.s("delays.txt");
    let cases: [(&[&str], &str); 4] = [
        (
            &["--downlink", &t, "--downlink-rate-mbps", "5", "--uplink", &t],
            "--downlink-rate-mbps: give either --downlink TRACE or --downlink-rate-mbps R, not both",
        ),
        (&["--rate-mbps", "0", "--", "true"], "--rate-mbps"),
        (&["--uplink", &t], "--downlink: missing the downlink capacity"),
        (
            &["--rate-mbps", "5", "--delay-trace", &delays],
            "delays.txt:2: the line is blank",
        ),
    ];
    for (args, needle) in cases {
        let out = Command::new(EMU)
            .args(args)
            .output()
            .expect("start cellcc-emu");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}
