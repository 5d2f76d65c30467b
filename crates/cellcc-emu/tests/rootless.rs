//! End-to-end test of `cellcc-emu`'s rootless mode: started as `nobody` through
//! `setpriv`, the emulator carries a TCP transfer with `cellcc-flow`, no process of the
//! run has uid or gid 0, and nothing is left afterwards (the cleanup tests of rootless
//! runs are in `tests/cleanup.rs`). It needs root to start, `/dev/net/tun`, network
//! namespaces and unprivileged user namespaces; without them it prints
//! `skipped: <reason>` and returns.
//!
//! The tests run one at a time (a lock).

use std::collections::BTreeSet;
use std::fs::File;
use std::process::Stdio;
use std::time::{Duration, Instant};

mod common;
use common::{
    assert_namespace_gone, assert_root_unchanged, emu_command, ids_of, json, open_to_all,
    require_rootless, root_state, write_constant_trace, TempDir, EMU, FLOW, SERIAL,
};

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
