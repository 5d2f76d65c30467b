//! What the emulator's end-to-end test files share: the binaries, the one-at-a-time
//! lock, the check of what the machine supports, a temporary directory and JSON reading.

#![allow(dead_code)] // each test file uses its own part

use std::path::{Path, PathBuf};
use std::sync::Mutex;

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
