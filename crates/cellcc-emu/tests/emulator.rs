//! End-to-end tests of what `cellcc-emu` accepts, writes and runs as: malformed traces
//! and arguments are refused with exit status 2, naming the culprit (these need no
//! root); outputs never follow symlinks and a failed run leaves none; the commands run
//! as the invoking user with no capabilities. The others need root, `/dev/net/tun` and
//! network namespaces; without them each test prints `skipped: <reason>` and returns.
//!
//! Goodput and timing are in `tests/timing.rs`, cleanup after a run in
//! `tests/cleanup.rs`, rootless mode in `tests/rootless.rs`. The tests run one at a time
//! (a lock).

use std::process::{Output, Stdio};

mod common;
use common::{
    emu_command, ids_of, json, read_trimmed, require_emulation, small_emulator, TempDir, SERIAL,
};

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

// ---------------------------------------------------------------------------------------
// Privileges and outputs.

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
