//! End-to-end tests of `cellcc-emu` and `cellcc-flow` through real TUN devices and
//! network namespaces. They need root, `/dev/net/tun` and network namespaces; without
//! them each test prints `skipped: <reason>` and returns. Run with
//! `cargo test --release -p cellcc-emu --test emulator -- --nocapture` to see the
//! measured numbers.
//!
//! The rootless tests start the emulator as `nobody` through `setpriv` (so they too need
//! root to start) and skip, saying why, where unprivileged user namespaces are off.
//!
//! The tests run one at a time (a lock), since they measure timing on a shared machine.

use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;
use common::{json, unsupported, write_constant_trace, TempDir, EMU, FLOW, SERIAL};

macro_rules! require_emulation {
    () => {
        if let Some(reason) = unsupported() {
            println!("skipped: {reason}");
            return;
        }
    };
}

fn lines_of(program: &str, args: &[&str]) -> BTreeSet<String> {
    match Command::new(program).args(args).output() {
        Ok(out) => String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(str::to_string)
            .collect(),
        Err(_) => BTreeSet::new(),
    }
}

/// What the emulator must leave as it found it in the root namespace.
#[derive(Debug, PartialEq, Eq)]
struct RootState {
    netns: BTreeSet<String>,
    links: BTreeSet<String>,
    iptables: BTreeSet<String>,
}

fn root_state() -> RootState {
    let links = lines_of("ip", &["-o", "link", "show"])
        .into_iter()
        .filter_map(|l| l.split(':').nth(1).map(|name| name.trim().to_string()))
        .collect();
    RootState {
        netns: lines_of("ip", &["netns", "list"]),
        links,
        iptables: lines_of("iptables-save", &[]),
    }
}

/// Checks nothing was added by the emulator. The machine is shared: other programs may
/// add or remove namespaces, links and rules meanwhile, so entries that appeared are
/// reported, and only those that could be the emulator's (named after its devices) fail
/// the test. The precise check is [`assert_namespace_gone`].
fn assert_root_unchanged(before: &RootState) {
    let after = root_state();
    if after == *before {
        return;
    }
    for (what, b, a) in [
        ("ip netns", &before.netns, &after.netns),
        ("ip link", &before.links, &after.links),
        ("iptables-save", &before.iptables, &after.iptables),
    ] {
        let added: Vec<_> = a.difference(b).collect();
        if !added.is_empty() {
            println!("note: {what} gained {added:?} during the test (another program?)");
        }
        assert!(
            added.iter().all(|l| !l.contains("emu-")),
            "{what} gained emulator entries: {added:?}"
        );
    }
}

/// The inode of every network namespace some process is in or holds a descriptor of.
fn namespaces_in_use() -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in procs.flatten() {
        let dir = entry.path();
        if !entry
            .file_name()
            .to_string_lossy()
            .chars()
            .all(|c| c.is_ascii_digit())
        {
            continue;
        }
        if let Ok(link) = std::fs::read_link(dir.join("ns/net")) {
            found.insert(link.display().to_string());
        }
        if let Ok(fds) = std::fs::read_dir(dir.join("fd")) {
            for fd in fds.flatten() {
                if let Ok(link) = std::fs::read_link(fd.path()) {
                    let link = link.display().to_string();
                    if link.starts_with("net:[") {
                        found.insert(link);
                    }
                }
            }
        }
    }
    found
}

/// No process is in `ns` (`net:[INODE]`) or holds it, within a few seconds (the kernel
/// tears namespaces down asynchronously, but references go at once).
fn assert_namespace_gone(ns: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if !namespaces_in_use().contains(ns) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "namespace {ns} is still in use after the emulator exited"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn process_alive(pid: &str) -> bool {
    // A zombie is dead for our purposes.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

fn wait_for_files(paths: &[PathBuf], timeout: Duration) {
    let deadline = Instant::now() + timeout;
    while !paths
        .iter()
        .all(|p| std::fs::read_to_string(p).is_ok_and(|s| s.ends_with('\n')))
    {
        assert!(
            Instant::now() < deadline,
            "the commands did not start: {paths:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn read_trimmed(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap().trim().to_string()
}

/// Arguments of an emulator over a 12 Mbit/s link with 5 ms of delay.
fn small_emulator(dir: &TempDir) -> Vec<String> {
    write_constant_trace(&dir.path("link.trace"), 12);
    [
        "--delay",
        "5",
        "--uplink",
        &dir.s("link.trace"),
        "--downlink",
        &dir.s("link.trace"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// Shell words that write the pid of the shell running them, as the whole machine sees
/// it, to `file` (`$$` is the pid inside the command's PID namespace; `/proc` is the
/// machine's).
fn record_host_pid(file: &str) -> String {
    format!("read -r p _ < /proc/self/stat && echo $p > {file}.tmp && mv {file}.tmp {file}")
}

/// Client and server commands that record their namespace and pid (the server also
/// starts a background child), then wait.
fn recording_commands(dir: &TempDir, client_tail: &str) -> (String, Vec<String>) {
    let server = format!(
        "readlink /proc/self/ns/net > {ns}.tmp && mv {ns}.tmp {ns}; sh -c '{bg}; exec sleep 60' & {pid}; wait",
        ns = dir.s("server_ns"),
        bg = record_host_pid(&dir.s("server_bg")),
        pid = record_host_pid(&dir.s("server_pid")),
    );
    let client = format!(
        "readlink /proc/self/ns/net > {ns}.tmp && mv {ns}.tmp {ns}; {pid}; {client_tail}",
        ns = dir.s("client_ns"),
        pid = record_host_pid(&dir.s("client_pid")),
    );
    (server, vec!["sh".into(), "-c".into(), client])
}

/// Runs a client that exits on its own, or signals the emulator mid-run; checks the
/// exit status and that nothing is left behind.
fn run_and_check_cleanup(tag: &str, signal: Option<libc::c_int>, rootless: bool) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = root_state();
    let dir = TempDir::new(tag);
    if rootless {
        open_to_all(&dir);
    }
    let tail = match signal {
        Some(_) => "exec sleep 60",
        None => "sleep 0.3; exit 3",
    };
    let (server, client) = recording_commands(&dir, tail);
    let mut args = small_emulator(&dir);
    args.extend([
        "--stats".into(),
        dir.s("stats.json"),
        "--server-cmd".into(),
        server,
        "--".into(),
    ]);
    args.extend(client);
    let mut emu = emu_command(rootless)
        .args(&args)
        .stdin(Stdio::null())
        .spawn()
        .expect("start cellcc-emu");
    let started = [
        dir.path("server_ns"),
        dir.path("server_bg"),
        dir.path("server_pid"),
        dir.path("client_ns"),
        dir.path("client_pid"),
    ];
    wait_for_files(&started, Duration::from_secs(10));
    let server_ns = read_trimmed(&dir.path("server_ns"));
    let client_ns = read_trimmed(&dir.path("client_ns"));
    let root_ns = std::fs::read_link("/proc/self/ns/net")
        .unwrap()
        .display()
        .to_string();
    assert!(server_ns.starts_with("net:[") && client_ns.starts_with("net:["));
    assert_ne!(server_ns, client_ns);
    assert_ne!(server_ns, root_ns);
    assert_ne!(client_ns, root_ns);
    // The emulator's devices are not in the root namespace.
    assert!(!root_state().links.iter().any(|l| l.starts_with("emu-")));

    if let Some(signo) = signal {
        std::thread::sleep(Duration::from_millis(300));
        // SAFETY: plain system call to our own child.
        unsafe { libc::kill(emu.id() as libc::pid_t, signo) };
    }
    let status = wait_or_stop(&mut emu, Duration::from_secs(15));
    let expected = match signal {
        Some(signo) => 128 + signo,
        None => 3,
    };
    assert_eq!(status.code(), Some(expected), "exit status of cellcc-emu");
    for pid in ["server_pid", "server_bg", "client_pid"] {
        let pid = read_trimmed(&dir.path(pid));
        assert!(!process_alive(&pid), "{pid} is still running");
    }
    assert_namespace_gone(&server_ns);
    assert_namespace_gone(&client_ns);
    assert_root_unchanged(&before);
    let stats = json(&dir.path("stats.json"));
    let reason = stats["stop_reason"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    match signal {
        Some(libc::SIGINT) => assert_eq!(reason, "SIGINT"),
        Some(libc::SIGTERM) => assert_eq!(reason, "SIGTERM"),
        _ => assert_eq!(reason, "client exited"),
    }
}

#[test]
fn normal_exit_passes_the_client_status_and_leaves_nothing() {
    require_emulation!();
    run_and_check_cleanup("exit", None, false);
}

#[test]
fn sigint_mid_run_leaves_nothing() {
    require_emulation!();
    run_and_check_cleanup("sigint", Some(libc::SIGINT), false);
}

#[test]
fn sigterm_mid_run_leaves_nothing() {
    require_emulation!();
    run_and_check_cleanup("sigterm", Some(libc::SIGTERM), false);
}

#[test]
fn sigkill_of_the_emulator_leaves_nothing() {
    require_emulation!();
    sigkill_and_check_cleanup(false);
}

fn sigkill_and_check_cleanup(rootless: bool) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = root_state();
    let dir = TempDir::new("sigkill");
    if rootless {
        open_to_all(&dir);
    }
    // The server also starts a child in a session of its own, which PR_SET_PDEATHSIG
    // does not reach: the end of the server's PID namespace does.
    let marker = unique_sleep();
    let server = format!(
        "setsid sh -c 'exec sleep {marker}' < /dev/null & readlink /proc/self/ns/net > {ns}.tmp && mv {ns}.tmp {ns}; exec sleep 60",
        ns = dir.s("server_ns")
    );
    let client = format!(
        "readlink /proc/self/ns/net > {ns}.tmp && mv {ns}.tmp {ns}; exec sleep 60",
        ns = dir.s("client_ns")
    );
    let mut args = small_emulator(&dir);
    args.extend([
        "--server-cmd".into(),
        server,
        "--".into(),
        "sh".into(),
        "-c".into(),
        client,
    ]);
    let mut emu = emu_command(rootless)
        .args(&args)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_files(
        &[dir.path("server_ns"), dir.path("client_ns")],
        Duration::from_secs(10),
    );
    let server_ns = read_trimmed(&dir.path("server_ns"));
    let client_ns = read_trimmed(&dir.path("client_ns"));
    wait_until_running(&marker);
    emu.kill().unwrap();
    emu.wait().unwrap();
    assert_gone(&marker, "after SIGKILL");
    assert_namespace_gone(&server_ns);
    assert_namespace_gone(&client_ns);
    assert_root_unchanged(&before);
}

/// `cellcc-emu` as the tests run it: as root without `SUDO_UID` (the commands then run
/// as root, so they can write into the test's directory), or in rootless mode as
/// `nobody`, started through `setpriv` as an ordinary user would start it.
fn emu_command(rootless: bool) -> Command {
    let mut cmd = if rootless {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", EMU]);
        c
    } else {
        Command::new(EMU)
    };
    cmd.env_remove("SUDO_UID")
        .env_remove("SUDO_GID")
        .env_remove("SUDO_USER");
    cmd
}

/// Why rootless mode cannot be tested here, if it cannot.
fn rootless_unsupported() -> Option<String> {
    if let Some(reason) = unsupported() {
        return Some(reason);
    }
    let works = Command::new("setpriv")
        .args([
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            "unshare",
            "--user",
            "--map-root-user",
            "--net",
            "true",
        ])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !works {
        return Some(
            "`setpriv --reuid=nobody ... unshare --user --net` fails: no setpriv, no user \
             nobody, or unprivileged user namespaces are off"
                .into(),
        );
    }
    None
}

macro_rules! require_rootless {
    () => {
        if let Some(reason) = rootless_unsupported() {
            println!("skipped: {reason}");
            return;
        }
    };
}

/// Lets every user write into `dir` (for commands and outputs of a rootless run).
fn open_to_all(dir: &TempDir) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o777)).unwrap();
}

/// Waits for `child` up to `limit`; past it, SIGTERM (the emulator cleans up), then
/// fails the test.
fn wait_or_stop(child: &mut Child, limit: Duration) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            // SAFETY: plain system call to our own child.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
            let _ = child.wait();
            panic!("cellcc-emu did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn run_bad_input(args: &[&str]) -> Output {
    emu_command(false)
        .args(args)
        .output()
        .expect("start cellcc-emu")
}

#[test]
fn malformed_trace_is_exit_2_naming_file_and_line() {
    // Needs no root: traces are checked before anything is set up.
    let dir = TempDir::new("badtrace");
    std::fs::write(dir.path("good.trace"), "1\n").unwrap();
    std::fs::write(dir.path("bad.trace"), "1\n2\n2\n1\n").unwrap();
    let out = run_bad_input(&[
        "--uplink",
        &dir.s("good.trace"),
        "--downlink",
        &dir.s("bad.trace"),
        "--",
        "true",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.trace:4:"), "{err}");
    assert_eq!(err.lines().count(), 1, "one clear error line: {err}");

    let out = run_bad_input(&[
        "--uplink",
        &dir.s("missing.trace"),
        "--downlink",
        &dir.s("good.trace"),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("missing.trace"), "{err}");
}

#[test]
fn bad_queue_args_and_numbers_are_exit_2_naming_the_argument() {
    let dir = TempDir::new("badargs");
    std::fs::write(dir.path("t"), "1\n").unwrap();
    let t = dir.s("t");
    let cases: [(&[&str], &str); 4] = [
        (
            &[
                "--downlink-queue",
                "droptail",
                "--downlink-queue-args",
                "packets=x",
            ],
            "--downlink-queue-args",
        ),
        (
            &["--uplink-queue", "codel", "--uplink-queue-args", "bogus=1"],
            "--uplink-queue-args",
        ),
        (&["--delay", "soon"], "--delay"),
        (&["--downlink-loss", "2"], "--downlink-loss"),
    ];
    for (extra, named) in cases {
        let mut args = vec!["--uplink", &t, "--downlink", &t];
        args.extend_from_slice(extra);
        let out = run_bad_input(&args);
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(named), "{extra:?}: {err}");
    }
    let out = run_bad_input(&[
        "--uplink",
        &t,
        "--downlink",
        &t,
        "--stats",
        "/nonexistent-dir/x.json",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent-dir/x.json"));
    let out = run_bad_input(&[
        "--uplink",
        &t,
        "--downlink",
        &t,
        "--",
        "no-such-program-xyz",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-program-xyz"));
}

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

// ---------------------------------------------------------------------------------------
// Privileges, outputs and process containment.

/// `id -u NAME` and `id -g NAME`.
fn ids_of(user: &str) -> (u32, u32) {
    let id = |flag: &str| -> u32 {
        let out = Command::new("id").args([flag, user]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    };
    (id("-u"), id("-g"))
}

/// `/proc/PID/status` lines `Uid:` and `Gid:` (real, effective, saved, filesystem).
fn status_ids(pid: &str) -> Option<(Vec<u32>, Vec<u32>)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let ids = |key: &str| -> Option<Vec<u32>> {
        let line = text.lines().find(|l| l.starts_with(key))?;
        Some(
            line[key.len()..]
                .split_whitespace()
                .filter_map(|v| v.parse().ok())
                .collect(),
        )
    };
    Some((ids("Uid:")?, ids("Gid:")?))
}

/// `pid` and every process descending from it, as the whole machine sees them.
fn process_tree(pid: u32) -> Vec<String> {
    let mut parent_of = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        if let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) {
            let ppid = stat
                .rsplit(')')
                .next()
                .and_then(|rest| rest.split_whitespace().nth(1))
                .unwrap_or("")
                .to_string();
            parent_of.push((name, ppid));
        }
    }
    let mut tree = vec![pid.to_string()];
    let mut i = 0;
    while i < tree.len() {
        let p = tree[i].clone();
        tree.extend(
            parent_of
                .iter()
                .filter(|(_, pp)| *pp == p)
                .map(|(c, _)| c.clone()),
        );
        i += 1;
    }
    tree
}

/// The lines of the command's output that start with `prefix`, without it.
fn tagged<'a>(out: &'a str, prefix: &str) -> Vec<&'a str> {
    out.lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .map(str::trim)
        .collect()
}

/// Under sudo (simulated with `SUDO_UID`/`SUDO_GID`, as sudo sets them) and with
/// `--user`, both commands run as that user with every capability set empty, and under
/// sudo the outputs belong to the invoking user.
#[test]
fn commands_run_as_the_invoking_user_without_capabilities() {
    require_emulation!();
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (uid, gid) = ids_of("nobody");
    for how in ["sudo", "--user"] {
        let dir = TempDir::new(&format!("privs-{}", how.trim_start_matches('-')));
        let mut args = small_emulator(&dir);
        args.extend([
            "--stats".into(),
            dir.s("stats.json"),
            "--server-cmd".into(),
            "echo server-uid $(id -u); grep ^Cap /proc/self/status | sed 's/^/server-/'; exec sleep 60"
                .into(),
        ]);
        let mut cmd = emu_command(false);
        if how == "sudo" {
            cmd.env("SUDO_UID", uid.to_string())
                .env("SUDO_GID", gid.to_string());
        } else {
            args.extend(["--user".into(), "nobody".into()]);
        }
        args.extend([
            "--".into(),
            "sh".into(),
            "-c".into(),
            "sleep 0.5; echo client-uid $(id -u) $(id -g); grep ^Cap /proc/self/status | sed 's/^/client-/'"
                .into(),
        ]);
        let out = cmd
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .expect("start cellcc-emu");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{how}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            tagged(&stdout, "client-uid"),
            [format!("{uid} {gid}")],
            "{how}: {stdout}"
        );
        assert_eq!(
            tagged(&stdout, "server-uid"),
            [uid.to_string()],
            "{how}: {stdout}"
        );
        for side in ["client-", "server-"] {
            let caps = tagged(&stdout, side);
            let sets: Vec<&str> = ["CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:"]
                .into_iter()
                .filter(|set| {
                    caps.iter()
                        .any(|l| l.starts_with(set) && l.ends_with("0000000000000000"))
                })
                .collect();
            assert_eq!(sets.len(), 5, "{how}, {side}: {caps:?}");
        }
        use std::os::unix::fs::MetadataExt;
        let owner = std::fs::metadata(dir.path("stats.json")).unwrap().uid();
        let expected_owner = if how == "sudo" { uid } else { 0 };
        assert_eq!(owner, expected_owner, "{how}: owner of the stats file");
    }
}

/// Every entry of `dir`, sorted.
fn entries(dir: &TempDir) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// An output path that is a symlink is replaced, never written through.
#[test]
fn outputs_never_follow_symlinks() {
    require_emulation!();
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("symlink");
    let mut args = small_emulator(&dir);
    std::fs::write(dir.path("victim"), "precious\n").unwrap();
    for name in ["stats.json", "down.log"] {
        std::os::unix::fs::symlink(dir.path("victim"), dir.path(name)).unwrap();
    }
    args.extend([
        "--stats".into(),
        dir.s("stats.json"),
        "--downlink-log".into(),
        dir.s("down.log"),
        "--".into(),
        "true".into(),
    ]);
    let status = emu_command(false)
        .args(&args)
        .stdin(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(read_trimmed(&dir.path("victim")), "precious");
    for name in ["stats.json", "down.log"] {
        let meta = std::fs::symlink_metadata(dir.path(name)).unwrap();
        assert!(meta.is_file(), "{name} is still a symlink");
    }
    assert!(json(&dir.path("stats.json"))["duration_s"].is_number());
    assert!(read_trimmed(&dir.path("down.log")).starts_with("# mahimahi mm-link"));
}

/// A run that fails leaves no output file at all, not even one created before the
/// failure.
#[test]
fn a_failed_run_leaves_no_output() {
    require_emulation!();
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // The first output can be created, the second's directory is missing.
    let dir = TempDir::new("failed");
    let mut args = small_emulator(&dir);
    args.extend([
        "--uplink-log".into(),
        dir.s("up.log"),
        "--downlink-log".into(),
        dir.s("missing/down.log"),
        "--stats".into(),
        dir.s("stats.json"),
        "--".into(),
        "true".into(),
    ]);
    let out = emu_command(false).args(&args).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("missing/down.log"), "{stderr}");
    assert_eq!(entries(&dir), ["link.trace"]);
}

/// Host pids of processes whose command line is exactly `argv`.
fn pids_running(argv: &[&str]) -> Vec<String> {
    let wanted: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .chars()
                .all(|c| c.is_ascii_digit())
        })
        .filter(|e| std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == wanted))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|pid| process_alive(pid))
        .collect()
}

/// A `sleep` duration no other process uses, to find the process later.
fn unique_sleep() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("1000.{nanos:09}")
}

/// Waits until `sleep MARKER` runs.
fn wait_until_running(marker: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while pids_running(&["sleep", marker]).is_empty() {
        assert!(Instant::now() < deadline, "sleep {marker} did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Checks that `sleep MARKER` is gone within a few seconds; kills it (the test's own
/// leftover) and fails if not.
fn assert_gone(marker: &str, when: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = pids_running(&["sleep", marker]);
        if left.is_empty() {
            return;
        }
        if Instant::now() > deadline {
            for pid in &left {
                // SAFETY: plain system call; the test's own leftover.
                unsafe { libc::kill(pid.parse().unwrap(), libc::SIGKILL) };
            }
            panic!("{when}: the server's setsid child {left:?} survived the run");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A child of the server command that left its session (`setsid`) does not survive the
/// run, whether the client exits or the emulator is stopped with SIGTERM.
#[test]
fn a_setsid_child_of_the_server_does_not_outlive_the_run() {
    require_emulation!();
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for signal in [None, Some(libc::SIGTERM)] {
        let dir = TempDir::new("setsid");
        let marker = unique_sleep();
        let server = format!("setsid sh -c 'exec sleep {marker}' < /dev/null & wait");
        // The client exits once the test has seen the setsid child (file `go`).
        let go = dir.s("go");
        let client = match signal {
            None => format!("while [ ! -e {go} ]; do sleep 0.05; done; exit 0"),
            Some(_) => "exec sleep 60".to_string(),
        };
        let mut args = small_emulator(&dir);
        args.extend([
            "--server-cmd".into(),
            server,
            "--".into(),
            "sh".into(),
            "-c".into(),
            client,
        ]);
        let mut emu = emu_command(false)
            .args(&args)
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        wait_until_running(&marker);
        std::fs::write(&go, "").unwrap();
        if let Some(signo) = signal {
            // SAFETY: plain system call to our own child.
            unsafe { libc::kill(emu.id() as libc::pid_t, signo) };
        }
        let status = wait_or_stop(&mut emu, Duration::from_secs(15));
        assert_eq!(status.code(), Some(signal.map_or(0, |s| 128 + s)));
        assert_gone(&marker, &format!("after {signal:?}"));
    }
}

/// Rootless mode: started as `nobody`, the emulator carries a TCP transfer; no process
/// of the run ever has uid or gid 0, and nothing is left afterwards.
#[test]
fn rootless_as_nobody_carries_a_transfer_and_nothing_runs_as_root() {
    require_rootless!();
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = root_state();
    let dir = TempDir::new("rootless");
    open_to_all(&dir);
    let (uid, _) = ids_of("nobody");
    let per_s = write_constant_trace(&dir.path("link.trace"), 12);
    let ideal_mbps = (per_s * 1448 * 8) as f64 / 1e6;
    // An unprivileged sender may pick only an allowed congestion control.
    let allowed = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
        .unwrap_or_default();
    let cc = allowed
        .split_whitespace()
        .next()
        .unwrap_or("reno")
        .to_string();
    let server = format!(
        "exec {FLOW} send --to $CELLCC_EMU_CLIENT_ADDR:5201 --cc {cc} --duration 3 --summary {}",
        dir.s("send.json")
    );
    let mut emu = emu_command(true)
        .args([
            "--delay",
            "5",
            "--uplink",
            &dir.s("link.trace"),
            "--downlink",
            &dir.s("link.trace"),
            "--realtime-priority",
            "0",
            "--stats",
            &dir.s("stats.json"),
            "--server-cmd",
            &server,
            "--",
            FLOW,
            "recv",
            "--port",
            "5201",
            "--summary",
            &dir.s("recv.json"),
        ])
        .stdin(Stdio::null())
        .stderr(File::create(dir.path("stderr")).unwrap())
        .spawn()
        .unwrap();
    // Watch every process of the run until it ends.
    let emu_exe = std::fs::canonicalize(EMU).unwrap();
    let mut seen = BTreeSet::new();
    let mut namespaces = BTreeSet::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = emu.try_wait().unwrap() {
            break status;
        }
        // Until it execs the emulator, the child is `setpriv`, which starts as root.
        let exe = std::fs::read_link(format!("/proc/{}/exe", emu.id()));
        if !exe.is_ok_and(|e| e == emu_exe) {
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        for pid in process_tree(emu.id()) {
            if let Some((uids, gids)) = status_ids(&pid) {
                assert!(
                    uids.iter().all(|&u| u == uid) && !gids.contains(&0),
                    "process {pid} of the run has uids {uids:?}, gids {gids:?}"
                );
                if let Ok(ns) = std::fs::read_link(format!("/proc/{pid}/ns/net")) {
                    namespaces.insert(ns.display().to_string());
                }
                seen.insert(pid);
            }
        }
        if Instant::now() > deadline {
            // SAFETY: plain system call to our own child.
            unsafe { libc::kill(emu.id() as libc::pid_t, libc::SIGTERM) };
            let _ = emu.wait();
            panic!("the rootless run did not finish within 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = std::fs::read_to_string(dir.path("stderr")).unwrap_or_default();
    assert!(status.success(), "{status:?}: {stderr}");
    // The emulator, each command's guard, init and the command itself at least.
    assert!(seen.len() >= 5, "saw only {seen:?}");
    let goodput = json(&dir.path("recv.json"))["goodput_mbps"]
        .as_f64()
        .unwrap();
    assert!(
        goodput > 0.7 * ideal_mbps,
        "goodput {goodput:.2} Mbit/s of {ideal_mbps:.2}"
    );
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        std::fs::metadata(dir.path("stats.json")).unwrap().uid(),
        uid
    );
    let root_ns = std::fs::read_link("/proc/self/ns/net")
        .unwrap()
        .display()
        .to_string();
    namespaces.remove(&root_ns);
    assert_eq!(namespaces.len(), 2, "{namespaces:?}");
    for ns in &namespaces {
        assert_namespace_gone(ns);
    }
    assert_root_unchanged(&before);
}

#[test]
fn rootless_normal_exit_leaves_nothing() {
    require_rootless!();
    run_and_check_cleanup("rootless-exit", None, true);
}

#[test]
fn rootless_sigint_leaves_nothing() {
    require_rootless!();
    run_and_check_cleanup("rootless-sigint", Some(libc::SIGINT), true);
}

#[test]
fn rootless_sigterm_leaves_nothing() {
    require_rootless!();
    run_and_check_cleanup("rootless-sigterm", Some(libc::SIGTERM), true);
}

#[test]
fn rootless_sigkill_leaves_nothing() {
    require_rootless!();
    sigkill_and_check_cleanup(true);
}
