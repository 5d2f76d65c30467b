//! The real path end to end: load the embedded BPF congestion controls into the running
//! kernel, drive a TCP connection with cellcc_c2tcp, read and write its maps, and check
//! that every change is undone. Needs root, kernel BTF and the embedded objects; without
//! them each test prints `skipped: <reason>` and passes.
//!
//! Run: `sudo cargo test --locked -p cellcc-kernel --test kernel -- --nocapture`.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{
    read_list, run, run_ok, wait_until, Loader, TestPath, ALLOWED, AVAILABLE, C2TCP, PIDFILE,
    PIN_DIR,
};
use serde_json::Value;

/// One cellcc_c2tcp flow's stats, from `stats --json`.
fn flow_stats(flow: &str) -> Option<Value> {
    let out = run_ok(&["stats", "c2tcp", "--json"]);
    let all: Value = serde_json::from_str(&out).expect("stats --json is JSON");
    all.as_array()?
        .iter()
        .find(|e| e["flow"] == flow)
        .map(|e| e["stats"].clone())
}

/// cellcc_c2tcp's entry in `list --json`.
fn c2tcp_entry(list: &Value) -> Value {
    let algos = list["algorithms"]
        .as_array()
        .expect("algorithms is an array");
    algos
        .iter()
        .find(|a| a["name"] == C2TCP)
        .unwrap_or_else(|| panic!("{C2TCP} missing from {list}"))
        .clone()
}

fn u(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("stats field {key} missing in {v}"))
}

#[test]
fn load_list_set_stats_unload_restores_everything() {
    let _guard = common::lock();
    skip_unless_ready!();
    let allowed_before = std::fs::read_to_string(ALLOWED).unwrap();
    let mut loader = Loader::start(&[]);

    assert!(
        read_list(AVAILABLE).contains(&C2TCP.to_string()),
        "registered"
    );
    assert!(
        read_list(ALLOWED).contains(&C2TCP.to_string()),
        "allowed for unprivileged sockets"
    );
    for map in ["c2tcp_defaults", "c2tcp_params", "c2tcp_stats"] {
        assert!(
            Path::new(PIN_DIR).join("c2tcp").join(map).exists(),
            "{map} pinned"
        );
    }
    let pid: i32 = std::fs::read_to_string(PIDFILE)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(pid, loader.pid());

    // A second loader is refused while this one runs.
    let second = run(&["load"]);
    assert!(!second.status.success());
    assert!(String::from_utf8_lossy(&second.stderr).contains("another loader is running"));
    // Without the pidfile, the registered name itself is the reason to refuse.
    let hidden = format!("{PIDFILE}.test");
    std::fs::rename(PIDFILE, &hidden).unwrap();
    let third = run(&["load", "c2tcp"]);
    std::fs::rename(&hidden, PIDFILE).unwrap();
    assert!(!third.status.success());
    let err = String::from_utf8_lossy(&third.stderr);
    assert!(err.contains("cellcc_c2tcp is already registered"), "{err}");
    for map in ["c2tcp_defaults", "c2tcp_params", "c2tcp_stats"] {
        assert!(
            Path::new(PIN_DIR).join("c2tcp").join(map).exists(),
            "{map} still pinned"
        );
    }

    let list: Value = serde_json::from_str(&run_ok(&["list", "--json"])).unwrap();
    assert_eq!(list["loader_pid"], loader.pid());
    let c2tcp = c2tcp_entry(&list);
    assert_eq!(c2tcp["registered"], true);
    assert_eq!(
        c2tcp["defaults"]["alpha_x100"], 150,
        "built-in default alpha 1.5"
    );

    let out = run_ok(&["set", "c2tcp", "alpha_x100=300", "target_us=80000"]);
    assert!(out.contains("alpha_x100=300"), "{out}");
    let list: Value = serde_json::from_str(&run_ok(&["list", "--json"])).unwrap();
    let c2tcp = c2tcp_entry(&list);
    assert_eq!(c2tcp["defaults"]["alpha_x100"], 300);
    assert_eq!(c2tcp["defaults"]["target_us"], 80000);
    assert_eq!(c2tcp["defaults_source"], "defaults map");

    let bad = run(&["set", "c2tcp", "alpha=3"]);
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("unknown key \"alpha\"") && err.contains("alpha_x100"),
        "{err}"
    );
    let bad = run(&["set", "c2tcp", "alpha_x100=-1"]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("out of range"));

    let out = run_ok(&[
        "set",
        "c2tcp",
        "alpha_x100=900",
        "--flow",
        "10.9.9.1:4000-10.9.9.2:5201",
    ]);
    assert!(
        out.contains("flow 10.9.9.1:4000-10.9.9.2:5201") && out.contains("target_us=80000"),
        "{out}"
    );
    let stats: Value = serde_json::from_str(&run_ok(&["stats", "--json"])).unwrap();
    assert!(stats.is_array());

    let out = run(&["unload"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(loader.wait_exit(), Some(0), "the loader exits 0 on SIGTERM");
    assert!(
        !read_list(AVAILABLE).contains(&C2TCP.to_string()),
        "unregistered"
    );
    assert_eq!(
        std::fs::read_to_string(ALLOWED).unwrap(),
        allowed_before,
        "sysctl restored"
    );
    assert!(!Path::new(PIN_DIR).join("c2tcp").exists(), "pins removed");
    assert!(!Path::new(PIDFILE).exists(), "pidfile removed");

    // Without a loader, commands that need one say so.
    let out = run(&["set", "c2tcp", "alpha_x100=200"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not loaded"));
}

#[test]
fn sigkill_of_the_loader_unregisters_and_unload_cleans_up() {
    let _guard = common::lock();
    skip_unless_ready!();
    let allowed_before = std::fs::read_to_string(ALLOWED).unwrap();
    let mut loader = Loader::start(&["c2tcp"]);
    assert!(read_list(AVAILABLE).contains(&C2TCP.to_string()));
    loader.child.kill().unwrap();
    loader.child.wait().unwrap();

    // The kernel drops the struct_ops link with the process.
    assert!(
        wait_until(Duration::from_secs(5), || !read_list(AVAILABLE)
            .contains(&C2TCP.to_string())),
        "{C2TCP} still registered after SIGKILL"
    );
    assert!(!read_list(ALLOWED).contains(&C2TCP.to_string()));
    // Pins and pidfile outlive a SIGKILL; `unload` removes them.
    assert!(Path::new(PIDFILE).exists());
    let out = run(&["unload"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not running"));
    assert!(!Path::new(PIN_DIR).join("c2tcp").exists(), "pins removed");
    assert!(!Path::new(PIDFILE).exists(), "pidfile removed");
    assert_eq!(
        std::fs::read_to_string(ALLOWED).unwrap(),
        allowed_before,
        "sysctl restored"
    );
}

/// A connection that selected an algorithm keeps its struct_ops map after `unload`:
/// `unload` says so instead of reporting a plain success.
#[test]
fn unload_says_when_open_connections_still_hold_an_algorithm() {
    let _guard = common::lock();
    skip_unless_ready!();
    let mut loader = Loader::start(&["c2tcp"]);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (server, _) = listener.accept().unwrap();
    use std::os::fd::AsRawFd;
    // SAFETY: a valid socket and a buffer of the given length.
    let ret = unsafe {
        libc::setsockopt(
            client.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            C2TCP.as_ptr().cast(),
            C2TCP.len() as libc::socklen_t,
        )
    };
    assert_eq!(ret, 0, "{}", std::io::Error::last_os_error());

    let out = run(&["unload"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(loader.wait_exit(), Some(0));
    assert!(
        err.contains("still hold c2tcp (struct_ops map id") && !err.starts_with("unloaded"),
        "{err}"
    );
    assert!(!read_list(AVAILABLE).contains(&C2TCP.to_string()));

    // When the closed connection's map is freed is up to the kernel: a clean CI machine
    // was seen holding it for more than 30 s after both ends closed, so that `unload`
    // then reports plain success is not asserted here.
    drop(client);
    drop(server);
}

/// Resets and ACKs of one 3-s cellcc_c2tcp transfer over a 10 ms one-way delay line with
/// a 10 Mbit/s tbf of `limit_bytes`, with alpha `alpha_x100`.
fn resets_for(limit_bytes: u32, alpha_x100: u32) -> (u64, u64, Value) {
    let path = TestPath::new(Duration::from_millis(10), "10mbit", limit_bytes);
    let alpha = format!("alpha_x100={alpha_x100}");
    let sender = path.sender_ip;
    let receiver = path.receiver_ip;
    let t = common::transfer(&path, C2TCP, Duration::from_secs(3), |port| {
        // Also exercises a per-flow override on a live connection.
        let flow = format!("{sender}:{port}-{receiver}:5201");
        run_ok(&["set", "c2tcp", &alpha, "--flow", &flow]);
    });
    let flow = format!("{sender}:{}-{receiver}:5201", t.local_port);
    let mut stats = None;
    wait_until(Duration::from_secs(5), || {
        stats = flow_stats(&flow);
        stats.as_ref().is_some_and(|s| u(s, "released") == 1)
    });
    let s = stats.unwrap_or_else(|| panic!("no stats entry for {flow}"));
    assert!(
        t.received > 100_000,
        "the flow carried data ({} bytes)",
        t.received
    );
    println!(
        "limit {limit_bytes} B, alpha {alpha_x100}: {} bytes, resets {}, acks {}, min_rtt {} us, avg rtt {} us, setpoint {} us",
        t.received,
        u(&s, "resets"),
        u(&s, "acks"),
        u(&s, "min_rtt_us"),
        u(&s, "rtt_sum_us") / u(&s, "rtt_samples").max(1),
        u(&s, "setpoint_us"),
    );
    (u(&s, "resets"), u(&s, "acks"), s)
}

#[test]
fn c2tcp_carries_a_connection_and_resets_cwnd_when_rtt_stays_above_setpoint() {
    let _guard = common::lock();
    skip_unless_ready!();
    let _loader = Loader::start(&["c2tcp"]);

    // Deep buffer: 400 KB at 10 Mbit/s is up to 320 ms of queue on a 20 ms path, so RTT
    // stays far above Setpoint = 1.5 x MINRTT.
    let (deep_resets, deep_acks, s) = resets_for(400_000, 150);
    let min_rtt = u(&s, "min_rtt_us");
    assert!(
        (19_000..40_000).contains(&min_rtt),
        "MINRTT {min_rtt} us on a 20 ms path"
    );
    assert_eq!(u(&s, "alpha_x100"), 150);
    assert_eq!(
        u(&s, "setpoint_us"),
        min_rtt * 150 / 100,
        "Setpoint = alpha x MINRTT"
    );
    assert!(u(&s, "srtt_us") >= min_rtt && u(&s, "last_rtt_us") >= min_rtt);
    assert!(u(&s, "rtt_samples") > 100 && u(&s, "rtt_samples") <= deep_acks);
    assert!(u(&s, "delivered") > 100, "delivered {}", u(&s, "delivered"));
    assert!(u(&s, "cwnd") >= 1 && u(&s, "ssthresh") >= 2);
    assert!(
        deep_resets >= 3,
        "RTT above Setpoint for an Interval must reset cwnd ({deep_resets} resets)"
    );
    // The resets keep the queue short: the mean RTT stays near Setpoint although the
    // buffer could hold 320 ms (CUBIC passes 150 ms on this path within 3 s).
    let mean_rtt = u(&s, "rtt_sum_us") / u(&s, "rtt_samples");
    assert!(
        mean_rtt < 2 * u(&s, "setpoint_us"),
        "mean RTT {mean_rtt} us"
    );

    // Small queue (15 KB, 12 ms) and alpha 10: Setpoint 200 ms is never reached.
    let (small_resets, _, s) = resets_for(15_000, 1000);
    assert_eq!(u(&s, "alpha_x100"), 1000, "the per-flow override applied");
    assert!(
        small_resets * 4 < deep_resets,
        "alpha 10 with a small queue: {small_resets} resets, deep buffer alpha 1.5: {deep_resets}"
    );
}

#[test]
fn tuner_raises_alpha_when_the_average_rtt_is_below_target() {
    let _guard = common::lock();
    skip_unless_ready!();
    let _loader = Loader::start(&["c2tcp"]);
    let tuner = std::process::Command::new(common::BIN)
        .args(["tune", "--target-ms", "100", "--period-ms", "200"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the tuner starts");

    // Deep buffer, Target 100 ms: with alpha 1.5 C2TCP holds the RTT near 1.5 x 20 ms,
    // below Target, so the Tuner raises alpha (JSAC Algorithm 3 lines 5-9).
    let path = TestPath::new(Duration::from_millis(10), "10mbit", 400_000);
    let t = common::transfer(&path, C2TCP, Duration::from_secs(3), |_| {});
    let flow = format!(
        "{}:{}-{}:5201",
        path.sender_ip, t.local_port, path.receiver_ip
    );
    let s = flow_stats(&flow).unwrap_or_else(|| panic!("no stats entry for {flow}"));

    // SAFETY: signalling our own child.
    unsafe { libc::kill(tuner.id() as i32, libc::SIGTERM) };
    let out = tuner.wait_with_output().expect("the tuner exits");
    let log = String::from_utf8_lossy(&out.stdout);
    println!("{log}");
    assert!(out.status.success(), "the tuner exits 0 on SIGTERM");
    assert!(
        log.contains(&format!("{flow}: tuning from alpha 1.50")),
        "{log}"
    );
    assert!(log.contains("target 100 ms: alpha 1.50 -> "), "{log}");
    let alpha = u(&s, "alpha_x100");
    assert!(
        alpha > 150,
        "alpha_x100 {alpha} after tuning towards a Target above the RTT"
    );
    println!(
        "tuned: alpha_x100 {alpha}, avg rtt {} us, resets {}",
        u(&s, "rtt_sum_us") / u(&s, "rtt_samples").max(1),
        u(&s, "resets")
    );
}

/// Sends `bytes` over loopback from a socket connected to `connect_host` at the
/// listener's port (an IPv6 socket for an IPv6 address), switched to cellcc_c2tcp once
/// connected; `before_data` runs with the connection's flow as `cellcc-kernel` writes
/// it. Returns that flow.
fn loopback_transfer(
    listen_on: &str,
    connect_host: &str,
    bytes: usize,
    before_data: impl FnOnce(&str),
) -> String {
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;

    let listener = std::net::TcpListener::bind(listen_on).expect("bind");
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
    let mut stream =
        std::net::TcpStream::connect(format!("{connect_host}:{port}")).expect("connect");
    let cc = C2TCP.as_bytes();
    // SAFETY: valid fd and option buffer.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            cc.as_ptr().cast(),
            cc.len() as u32,
        )
    };
    assert_eq!(rc, 0, "setsockopt: {}", std::io::Error::last_os_error());
    let local = stream.local_addr().unwrap();
    let peer = stream.peer_addr().unwrap();
    // As the loader prints flows: IPv4-mapped addresses as IPv4.
    let show = |a: std::net::SocketAddr| match a {
        std::net::SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => format!("{v4}:{}", v6.port()),
            None => a.to_string(),
        },
        v4 => v4.to_string(),
    };
    let flow = format!("{}-{}", show(local), show(peer));
    before_data(&flow);
    stream.write_all(&vec![0x5a; bytes]).expect("send");
    drop(stream);
    assert_eq!(receiver.join().unwrap(), bytes);
    flow
}

#[test]
fn ipv6_and_dual_stack_connections_have_keys_of_their_own() {
    let _guard = common::lock();
    skip_unless_ready!();
    let _loader = Loader::start(&["c2tcp"]);
    let cases = [
        // Native IPv6.
        ("[::1]:0", "[::1]", "[::1]:", "317"),
        // IPv4 over an IPv6 socket: the kernel keeps v4-mapped addresses, the key and the
        // loader show them as IPv4.
        ("[::]:0", "[::ffff:127.0.0.1]", "127.0.0.1:", "243"),
    ];
    for (listen_on, connect_host, prefix, alpha_x100) in cases {
        let flow = loopback_transfer(listen_on, connect_host, 4 << 20, |flow| {
            assert!(flow.starts_with(prefix), "{flow}");
            let out = run_ok(&[
                "set",
                "c2tcp",
                &format!("alpha_x100={alpha_x100}"),
                "--flow",
                flow,
            ]);
            assert!(out.contains(&format!("flow {flow}")), "{out}");
        });
        let mut stats = None;
        wait_until(Duration::from_secs(5), || {
            stats = flow_stats(&flow);
            stats.as_ref().is_some_and(|s| u(s, "acks") > 0)
        });
        let s = stats.unwrap_or_else(|| panic!("no stats entry for {flow}"));
        println!(
            "{flow}: acks {}, alpha_x100 {}",
            u(&s, "acks"),
            u(&s, "alpha_x100")
        );
        assert_eq!(
            u(&s, "alpha_x100").to_string(),
            alpha_x100,
            "the per-flow override reached {flow}"
        );
    }
}
