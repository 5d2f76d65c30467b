//! The LTE study's loss- and delay-based schemes as BPF congestion controls (Vegas,
//! Westwood+, Illinois, CDG; `bpf/{vegas,westwood,illinois,cdg}.bpf.c`): each loads and
//! passes the verifier, a real TCP connection selects it and carries data, and on a
//! delayed bottleneck its own state (stats map) shows the algorithm at work. Needs root,
//! kernel BTF and the embedded objects; without them each test prints `skipped: <reason>`
//! and passes.
//!
//! Run: `sudo cargo test --locked -p cellcc-kernel --test lte_schemes -- --nocapture`.

mod common;

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::Duration;

use common::{read_list, run_ok, wait_until, Loader, TestPath, ALLOWED, AVAILABLE, PIN_DIR};
use serde_json::Value;

/// `cellcc-kernel` algorithm and `TCP_CONGESTION` name of each scheme.
const SCHEMES: [(&str, &str); 4] = [
    ("vegas", "cellcc_vegas"),
    ("westwood", "cellcc_westwood"),
    ("illinois", "cellcc_illinois"),
    ("cdg", "cellcc_cdg"),
];

fn algos() -> Vec<&'static str> {
    SCHEMES.iter().map(|(a, _)| *a).collect()
}

/// One flow's stats entry of `algo`, from `stats --json`.
fn flow_stats(algo: &str, flow: &str) -> Option<Value> {
    let out = run_ok(&["stats", algo, "--json"]);
    let all: Value = serde_json::from_str(&out).expect("stats --json is JSON");
    all.as_array()?
        .iter()
        .find(|e| e["flow"] == flow)
        .map(|e| e["stats"].clone())
}

/// The flow's stats once the connection has released the congestion control.
fn released_stats(algo: &str, flow: &str) -> Value {
    let mut stats = None;
    wait_until(Duration::from_secs(5), || {
        stats = flow_stats(algo, flow);
        stats.as_ref().is_some_and(|s| u(s, "released") == 1)
    });
    stats.unwrap_or_else(|| panic!("no released {algo} stats entry for {flow}"))
}

fn u(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("stats field {key} missing or negative in {v}"))
}

fn i(v: &Value, key: &str) -> i64 {
    v[key]
        .as_i64()
        .unwrap_or_else(|| panic!("stats field {key} missing in {v}"))
}

/// Sends `bytes` over IPv4 loopback from a socket that selected `cc` before connecting;
/// returns the flow as `cellcc-kernel` prints it.
fn loopback_transfer(cc: &str, bytes: usize) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().unwrap().port();
    let receiver = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().expect("accept");
        let mut buf = vec![0u8; 1 << 16];
        let mut total = 0usize;
        while let Ok(n @ 1..) = conn.read(&mut buf) {
            total += n;
        }
        total
    });
    // SAFETY: plain socket creation; the fd is owned by the TcpStream below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) };
    assert!(fd >= 0);
    // SAFETY: valid fd and option buffer.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            cc.as_ptr().cast(),
            cc.len() as libc::socklen_t,
        )
    };
    assert_eq!(
        rc,
        0,
        "setsockopt(TCP_CONGESTION, {cc}): {}",
        std::io::Error::last_os_error()
    );
    let addr = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes([127, 0, 0, 1]),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: valid fd and sockaddr_in.
    let rc = unsafe {
        libc::connect(
            fd,
            (&addr as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as u32,
        )
    };
    assert_eq!(rc, 0, "connect: {}", std::io::Error::last_os_error());
    // SAFETY: fd is a connected socket owned by nobody else.
    let mut stream = unsafe { <std::net::TcpStream as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    // The connection runs the algorithm it asked for.
    let mut name = [0u8; 16];
    let mut len = name.len() as libc::socklen_t;
    // SAFETY: valid fd, buffer and length.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_mut_ptr().cast(),
            &mut len,
        )
    };
    assert_eq!(rc, 0);
    let name = String::from_utf8_lossy(&name[..len as usize]);
    assert_eq!(name.trim_end_matches('\0'), cc);
    let flow = format!(
        "{}-{}",
        stream.local_addr().unwrap(),
        stream.peer_addr().unwrap()
    );
    stream.write_all(&vec![0x5a; bytes]).expect("send");
    drop(stream);
    assert_eq!(receiver.join().unwrap(), bytes, "{cc}: every byte arrived");
    flow
}

#[test]
fn lte_schemes_load_and_carry_loopback_connections() {
    let _guard = common::lock();
    skip_unless_ready!();
    let allowed_before = std::fs::read_to_string(ALLOWED).unwrap();
    let mut loader = Loader::start(&algos());
    let available = read_list(AVAILABLE);
    let allowed = read_list(ALLOWED);
    for (algo, cc) in SCHEMES {
        assert!(available.contains(&cc.to_string()), "{cc} registered");
        assert!(allowed.contains(&cc.to_string()), "{cc} allowed");
        for suffix in ["defaults", "params", "stats"] {
            let map = format!("{algo}_{suffix}");
            assert!(
                Path::new(PIN_DIR).join(algo).join(&map).exists(),
                "{map} pinned"
            );
        }
    }
    // `list` shows the Linux module defaults.
    let list: Value = serde_json::from_str(&run_ok(&["list", "--json"])).unwrap();
    let entry = |cc: &str| {
        list["algorithms"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == cc)
            .unwrap_or_else(|| panic!("{cc} missing from {list}"))
            .clone()
    };
    let vegas = entry("cellcc_vegas");
    assert_eq!(
        (
            &vegas["defaults"]["alpha"],
            &vegas["defaults"]["beta"],
            &vegas["defaults"]["gamma"]
        ),
        (&Value::from(2), &Value::from(4), &Value::from(1))
    );
    assert_eq!(entry("cellcc_illinois")["defaults"]["win_thresh"], 15);
    assert_eq!(entry("cellcc_cdg")["defaults"]["backoff_beta"], 724);

    for (algo, cc) in SCHEMES {
        let flow = loopback_transfer(cc, 8 << 20);
        let s = released_stats(algo, &flow);
        println!("{cc} over loopback: {s}");
        assert!(u(&s, "acks") > 0, "{cc}: the algorithm saw ACKs");
        // Loopback segments are up to 64 KB: 8 MB is at least 128 of them.
        assert!(u(&s, "delivered") >= 100, "{cc}: {}", u(&s, "delivered"));
        assert!(u(&s, "cwnd") >= 2, "{cc}: cwnd {}", u(&s, "cwnd"));
    }

    let out = run_ok(&["unload"]);
    assert!(out.is_empty() || !out.contains("error"), "{out}");
    assert_eq!(loader.wait_exit(), Some(0), "the loader exits 0 on SIGTERM");
    for (_, cc) in SCHEMES {
        assert!(!read_list(AVAILABLE).contains(&cc.to_string()));
    }
    assert_eq!(std::fs::read_to_string(ALLOWED).unwrap(), allowed_before);
}

/// 4 s of bulk data over a 20 ms path with a 10 Mbit/s tbf and a 150 KB (120 ms) queue.
fn bottleneck_run(path: &TestPath, algo: &str, cc: &str) -> Value {
    let t = common::transfer(path, cc, Duration::from_secs(4), |_| {});
    assert!(t.received > 1_000_000, "{cc} carried {} bytes", t.received);
    let flow = format!(
        "{}:{}-{}:5201",
        path.sender_ip, t.local_port, path.receiver_ip
    );
    let s = released_stats(algo, &flow);
    println!(
        "{cc}: {:.2} Mbit/s, stats {s}",
        t.received as f64 * 8.0 / 4e6
    );
    s
}

#[test]
fn lte_schemes_run_their_algorithms_on_a_delayed_bottleneck() {
    let _guard = common::lock();
    skip_unless_ready!();
    let _loader = Loader::start(&algos());
    let path = TestPath::new(Duration::from_millis(10), "10mbit", 150_000);

    // Vegas: baseRTT is the path's 20 ms (+ serialisation), and it decides once per RTT.
    let s = bottleneck_run(&path, "vegas", "cellcc_vegas");
    let base = u(&s, "base_rtt_us");
    assert!((19_000..40_000).contains(&base), "Vegas baseRTT {base} us");
    let decided = u(&s, "increases") + u(&s, "holds") + u(&s, "decreases");
    assert!(
        u(&s, "rounds") > 20 && decided > 10,
        "Vegas decided in {decided} of {} rounds",
        u(&s, "rounds")
    );

    // Westwood+: BWE near the 10 Mbit/s bottleneck, RTTmin the path's, in jiffies.
    let s = bottleneck_run(&path, "westwood", "cellcc_westwood");
    let hz = u(&s, "hz");
    assert!([100, 250, 300, 1000].contains(&hz), "HZ {hz}");
    let bwe = u(&s, "bw_est_bps");
    assert!(
        (4_000_000..12_000_000).contains(&bwe),
        "Westwood+ BWE {bwe} bit/s on a 10 Mbit/s bottleneck"
    );
    let rtt_min_ms = u(&s, "rtt_min_jiffies") * 1000 / hz;
    assert!(
        (19..60).contains(&rtt_min_ms),
        "Westwood+ RTTmin {rtt_min_ms} ms"
    );
    assert!(
        u(&s, "samples") > 20,
        "{} bandwidth samples",
        u(&s, "samples")
    );

    // Illinois: alpha and beta from delay once cwnd passes win_thresh.
    let s = bottleneck_run(&path, "illinois", "cellcc_illinois");
    let base = u(&s, "base_rtt_us");
    assert!(
        (19_000..40_000).contains(&base),
        "Illinois base RTT {base} us"
    );
    assert!(u(&s, "max_rtt_us") > base);
    assert!(u(&s, "alpha_updates") > 5, "{s}");
    let (alpha, beta) = (u(&s, "alpha_x128"), u(&s, "beta_x64"));
    assert!((38..=1280).contains(&alpha), "alpha {alpha}/128");
    assert!((8..=32).contains(&beta), "beta {beta}/64");

    // CDG: per-RTT gradients, and delay backoffs through the emulated CWR.
    let s = bottleneck_run(&path, "cdg", "cellcc_cdg");
    assert!(u(&s, "rounds") > 20, "CDG rounds {}", u(&s, "rounds"));
    assert_eq!(u(&s, "window"), 8);
    assert!(
        u(&s, "backoffs") + u(&s, "backoffs_ineffectual") > 0,
        "a queue building over 120 ms gives positive gradients: {s}"
    );
    let _ = i(&s, "grad_us");
}
