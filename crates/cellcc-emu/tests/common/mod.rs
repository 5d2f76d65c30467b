//! What the emulator's end-to-end test files share: the binaries, the one-at-a-time
//! lock, the check of what the machine supports (`require_emulation!`,
//! `require_rootless!`), a temporary directory, JSON reading, the emulator started as the
//! tests start it, and the checks that a run left the root namespace as it found it.

#![allow(dead_code)] // each test file uses its own part

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

pub(crate) const EMU: &str = env!("CARGO_BIN_EXE_cellcc-emu");
pub(crate) const FLOW: &str = env!("CARGO_BIN_EXE_cellcc-flow");

/// One test at a time: goodput and timing are measured, and namespaces counted.
pub(crate) static SERIAL: Mutex<()> = Mutex::new(());

/// Why the machine cannot run these tests, if it cannot.
pub(crate) fn unsupported() -> Option<String> {
    // SAFETY: plain system call.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root (TUN devices and network namespaces need CAP_NET_ADMIN)".into());
    }
    if !Path::new("/dev/net/tun").exists() {
        return Some("/dev/net/tun is missing".into());
    }
    if !Path::new("/proc/self/ns/net").exists() {
        return Some("network namespaces are not supported".into());
    }
    // Try to make a namespace, in a thread so the test's own stays as it is.
    let ok = std::thread::spawn(|| {
        // SAFETY: plain system call affecting this thread only.
        unsafe { libc::unshare(libc::CLONE_NEWNET) == 0 }
    })
    .join()
    .unwrap_or(false);
    if !ok {
        return Some("cannot create a network namespace (unshare(CLONE_NEWNET) failed)".into());
    }
    None
}

/// A fresh directory for one test run, removed at the end.
pub(crate) struct TempDir(pub(crate) PathBuf);

impl TempDir {
    pub(crate) fn new(tag: &str) -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir =
            std::env::temp_dir().join(format!("cellcc-emu-{tag}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
    pub(crate) fn s(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The JSON document in `path`.
pub(crate) fn json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A constant-rate trace: rate R gives round(R / (8 × 1504)) opportunities per second,
/// spread evenly over a 1000 ms period. Returns the number of opportunities per second.
pub(crate) fn write_constant_trace(path: &Path, mbps: u64) -> u64 {
    let n = ((mbps * 1_000_000) as f64 / (8.0 * 1504.0)).round() as u64;
    let text: String = (1..=n)
        .map(|i| format!("{}\n", (i * 1000).div_ceil(n)))
        .collect();
    std::fs::write(path, text).unwrap();
    n
}

/// Returns from the test, saying why, where the machine cannot run it.
#[allow(unused_macros)] // as with `dead_code` above: not every test file uses it
macro_rules! require_emulation {
    () => {
        if let Some(reason) = $crate::common::unsupported() {
            println!("skipped: {reason}");
            return;
        }
    };
}
#[allow(unused_imports)] // likewise
pub(crate) use require_emulation;

pub(crate) fn lines_of(program: &str, args: &[&str]) -> BTreeSet<String> {
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
pub(crate) struct RootState {
    pub(crate) netns: BTreeSet<String>,
    pub(crate) links: BTreeSet<String>,
    pub(crate) iptables: BTreeSet<String>,
}

pub(crate) fn root_state() -> RootState {
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
pub(crate) fn assert_root_unchanged(before: &RootState) {
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
pub(crate) fn namespaces_in_use() -> BTreeSet<String> {
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
pub(crate) fn assert_namespace_gone(ns: &str) {
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

pub(crate) fn read_trimmed(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap().trim().to_string()
}

/// Arguments of an emulator over a 12 Mbit/s link with 5 ms of delay.
pub(crate) fn small_emulator(dir: &TempDir) -> Vec<String> {
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

/// `cellcc-emu` as the tests run it: as root without `SUDO_UID` (the commands then run
/// as root, so they can write into the test's directory), or in rootless mode as
/// `nobody`, started through `setpriv` as an ordinary user would start it.
pub(crate) fn emu_command(rootless: bool) -> Command {
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
pub(crate) fn rootless_unsupported() -> Option<String> {
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

/// Returns from the test, saying why, where rootless mode cannot be tested.
#[allow(unused_macros)] // as with `dead_code` above: not every test file uses it
macro_rules! require_rootless {
    () => {
        if let Some(reason) = $crate::common::rootless_unsupported() {
            println!("skipped: {reason}");
            return;
        }
    };
}
#[allow(unused_imports)] // likewise
pub(crate) use require_rootless;

/// Lets every user write into `dir` (for commands and outputs of a rootless run).
pub(crate) fn open_to_all(dir: &TempDir) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o777)).unwrap();
}

/// Waits for `child` up to `limit`; past it, SIGTERM (the emulator cleans up), then
/// fails the test.
pub(crate) fn wait_or_stop(child: &mut Child, limit: Duration) -> ExitStatus {
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

/// `id -u NAME` and `id -g NAME`.
pub(crate) fn ids_of(user: &str) -> (u32, u32) {
    let id = |flag: &str| -> u32 {
        let out = Command::new("id").args([flag, user]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    };
    (id("-u"), id("-g"))
}
