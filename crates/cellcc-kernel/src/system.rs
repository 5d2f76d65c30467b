//! The machine-wide state a loader owns: pins under bpffs, the allowed-congestion-control
//! sysctl, the pidfile and the state file that lets a later command clean up after a
//! loader that was killed.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::bail;
use crate::check::BPFFS;
use crate::error::{Context, Result};

/// Congestion controls registered in the kernel.
pub(crate) const AVAILABLE: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";
/// Congestion controls unprivileged sockets may select.
pub(crate) const ALLOWED: &str = "/proc/sys/net/ipv4/tcp_allowed_congestion_control";
/// Directory of the pidfile and state file.
pub(crate) const RUN_DIR: &str = "/run/cellcc";
/// The running loader's pid.
pub(crate) const PIDFILE: &str = "/run/cellcc/kernel.pid";
/// What the running loader changed: `allowed_before=...`, `algos=...`.
pub(crate) const STATEFILE: &str = "/run/cellcc/kernel.state";

/// `BPFFS/cellcc`, under which each algorithm's maps are pinned.
pub(crate) fn pin_root() -> PathBuf {
    Path::new(BPFFS).join("cellcc")
}

/// `BPFFS/cellcc/ALGO/MAP`.
pub(crate) fn pin_path(algo: &str, map: &str) -> PathBuf {
    pin_root().join(algo).join(map)
}

/// The names in a congestion-control list sysctl.
pub(crate) fn read_list(path: &str) -> Result<Vec<String>> {
    let text = fs::read_to_string(path).context(format!("reading {path}"))?;
    Ok(text.split_whitespace().map(str::to_string).collect())
}

/// Writes the allowed list.
pub(crate) fn write_allowed(names: &[String]) -> Result<()> {
    fs::write(ALLOWED, names.join(" ")).context(format!("writing {ALLOWED}"))
}

/// What a loader recorded about itself.
#[derive(Clone, Debug, Default)]
pub(crate) struct LoaderState {
    /// Its pid.
    pub pid: i32,
    /// The allowed list before it added its names.
    pub allowed_before: Option<String>,
    /// The algorithms it loaded (`c2tcp`).
    pub algos: Vec<String>,
    /// Their kernel names (`cellcc_c2tcp`).
    pub names: Vec<String>,
}

impl LoaderState {
    /// Writes the state file then the pidfile (the pidfile last: its presence means the
    /// state file is complete).
    pub(crate) fn write(&self) -> Result<()> {
        fs::create_dir_all(RUN_DIR).context(format!("creating {RUN_DIR}"))?;
        let mut s = String::new();
        if let Some(a) = &self.allowed_before {
            s.push_str(&format!("allowed_before={a}\n"));
        }
        s.push_str(&format!("algos={}\n", self.algos.join(" ")));
        s.push_str(&format!("names={}\n", self.names.join(" ")));
        fs::write(STATEFILE, s).context(format!("writing {STATEFILE}"))?;
        let mut f = fs::File::create(PIDFILE).context(format!("writing {PIDFILE}"))?;
        writeln!(f, "{}", self.pid).context(format!("writing {PIDFILE}"))
    }

    /// The recorded loader, if there is a pidfile.
    pub(crate) fn read() -> Result<Option<Self>> {
        let Ok(pid) = fs::read_to_string(PIDFILE) else {
            return Ok(None);
        };
        let Ok(pid) = pid.trim().parse::<i32>() else {
            bail!(
                "{PIDFILE} does not hold a pid ({:?}); remove it",
                pid.trim()
            );
        };
        let mut st = LoaderState {
            pid,
            ..Default::default()
        };
        for line in fs::read_to_string(STATEFILE).unwrap_or_default().lines() {
            if let Some(v) = line.strip_prefix("allowed_before=") {
                st.allowed_before = Some(v.to_string());
            } else if let Some(v) = line.strip_prefix("algos=") {
                st.algos = v.split_whitespace().map(str::to_string).collect();
            } else if let Some(v) = line.strip_prefix("names=") {
                st.names = v.split_whitespace().map(str::to_string).collect();
            }
        }
        Ok(Some(st))
    }

    /// Removes the pidfile and state file.
    pub(crate) fn remove_files() {
        let _ = fs::remove_file(PIDFILE);
        let _ = fs::remove_file(STATEFILE);
    }
}

/// Whether `pid` is a running cellcc-kernel process.
pub(crate) fn loader_alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists.
    let exists = unsafe { libc::kill(pid, 0) } == 0;
    if !exists {
        return false;
    }
    // A reused pid belongs to another program; zombies have an empty cmdline.
    let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let zombie = stat
        .rsplit_once(')')
        .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
    !zombie && String::from_utf8_lossy(&cmdline).contains("cellcc-kernel")
}

/// Removes the pinned maps of `algo` and its directory (and the root if empty).
pub(crate) fn remove_pins(algo: &str) {
    let dir = pin_root().join(algo);
    if let Ok(entries) = fs::read_dir(&dir) {
        for e in entries.flatten() {
            let _ = fs::remove_file(e.path());
        }
    }
    let _ = fs::remove_dir(&dir);
    let _ = fs::remove_dir(pin_root());
}

/// Undoes what a dead loader left behind: pins, allowed list, pidfile. Returns what was
/// done, for the user.
pub(crate) fn clean_stale(st: &LoaderState) -> String {
    for algo in &st.algos {
        remove_pins(algo);
    }
    let mut notes = vec![format!(
        "loader {} is not running; removed its pins and pidfile",
        st.pid
    )];
    if let Some(before) = &st.allowed_before {
        let names: Vec<String> = before.split_whitespace().map(str::to_string).collect();
        match write_allowed(&names) {
            Ok(()) => notes.push(format!("restored {ALLOWED} to {before:?}")),
            Err(e) => notes.push(format!("could not restore the allowed list: {e}")),
        }
    }
    LoaderState::remove_files();
    notes.join("; ")
}
