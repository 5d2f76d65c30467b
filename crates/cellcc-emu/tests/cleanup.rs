//! End-to-end checks that `cellcc-emu` leaves nothing behind: after the client exits
//! (its status passed on), SIGINT, SIGTERM or SIGKILL of the emulator, no process of the
//! run survives, not even a `setsid` child of the server, both network namespaces are
//! gone, and the root namespace keeps no new device, namespace or iptables rule; as root
//! and in rootless mode. They need root, `/dev/net/tun` and network namespaces; without
//! them each test prints `skipped: <reason>` and returns.
//!
//! The rootless tests start the emulator as `nobody` through `setpriv` (so they too need
//! root to start) and skip, saying why, where unprivileged user namespaces are off.
//!
//! The tests run one at a time (a lock), since they count namespaces on a shared machine.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

mod common;
use common::{
    assert_namespace_gone, assert_root_unchanged, emu_command, json, open_to_all, read_trimmed,
    require_emulation, require_rootless, root_state, small_emulator, wait_or_stop, TempDir, SERIAL,
};

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
