//! Requirements of the real path, checked before every command: kernel version, BTF,
//! privileges, bpffs and the embedded objects.
//!
//! Checking only observes: `cellcc-kernel check` leaves the system as it found it. The
//! one change a requirement can call for, mounting a bpffs, is made by `load` (which pins
//! its maps there) after every check has passed; see [`plan_bpffs`].

use std::ffi::CString;
use std::fs;
use std::path::Path;

use crate::bail;
use crate::error::Result;
use crate::objects;

/// First kernel with the `cong_control(sk, ack, flag, rs)` signature the algorithms are
/// written for.
pub(crate) const MIN_KERNEL: (u32, u32) = (6, 10);
/// The kernel's BTF, needed to load struct_ops programs.
pub(crate) const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";
/// Where bpffs is expected (and where `load` mounts one if it is absent).
pub(crate) const BPFFS: &str = "/sys/fs/bpf";
/// `BPF_FS_MAGIC` from linux/magic.h.
const BPF_FS_MAGIC: i64 = 0xcafe_4a11;
/// Capability numbers (linux/capability.h).
const CAP_NET_ADMIN: u32 = 12;
const CAP_SYS_ADMIN: u32 = 21;
const CAP_BPF: u32 = 39;

/// One requirement and whether it holds.
#[derive(Debug)]
pub(crate) struct Check {
    /// What is checked (`kernel >= 6.10`).
    pub what: &'static str,
    /// Ok(detail) or Err(reason and fix).
    pub result: std::result::Result<String, String>,
}

/// What a command does with the real path, which decides what a missing bpffs means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// `check`: report what holds and how to fix what does not; change nothing.
    Inspect,
    /// `load`: pins its maps under bpffs, so a missing one is mounted (CAP_SYS_ADMIN).
    Load,
    /// `list`, `set`, `stats`, `tune`, `unload`: read what a loader pinned; without a
    /// bpffs nothing can have been pinned, which those commands report themselves.
    Control,
}

/// What to do about bpffs, decided by [`plan_bpffs`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum BpffsPlan {
    /// Nothing to do; the detail to report.
    Ready(String),
    /// Mount a bpffs at [`BPFFS`] (only ever for [`Purpose::Load`]).
    Mount,
    /// The requirement is not met: the reason and the command that fixes it.
    Fail(String),
}

/// The command that mounts the bpffs the loader expects.
fn mount_command() -> String {
    format!("mount -t bpf bpf {BPFFS}")
}

/// Decides what a missing or present bpffs means for `purpose`. Pure, so the rule
/// "a check never mounts" is tested without root.
pub(crate) fn plan_bpffs(mounted: bool, can_mount: bool, purpose: Purpose) -> BpffsPlan {
    if mounted {
        return BpffsPlan::Ready(format!("mounted at {BPFFS}"));
    }
    match (purpose, can_mount) {
        (Purpose::Load, true) => BpffsPlan::Mount,
        (Purpose::Inspect, true) => BpffsPlan::Ready(format!(
            "not mounted at {BPFFS}; `cellcc-kernel load` will mount one (or run: {})",
            mount_command()
        )),
        (Purpose::Inspect | Purpose::Load, false) => BpffsPlan::Fail(format!(
            "{BPFFS} is not a bpffs and mounting one needs CAP_SYS_ADMIN; as root run: {}",
            mount_command()
        )),
        (Purpose::Control, _) => {
            BpffsPlan::Ready(format!("not mounted at {BPFFS}: no loader has pinned maps"))
        }
    }
}

/// Runs every check for `purpose`; only observes (a missing bpffs is reported, never
/// mounted) and never fails itself.
pub(crate) fn run_all(purpose: Purpose) -> Vec<Check> {
    vec![
        Check {
            what: "kernel >= 6.10",
            result: kernel(),
        },
        Check {
            what: "kernel BTF",
            result: btf(),
        },
        Check {
            what: "privileges",
            result: privileges(),
        },
        Check {
            what: "bpffs",
            result: bpffs(purpose),
        },
        Check {
            what: "BPF objects",
            result: embedded(),
        },
    ]
}

/// Runs every check for `purpose`; the first failure becomes the error. Then, for
/// [`Purpose::Load`] only, mounts a bpffs if none is present: the one change made, and
/// only once everything else is known to hold.
pub(crate) fn require(purpose: Purpose) -> Result<()> {
    for c in run_all(purpose) {
        if let Err(reason) = c.result {
            bail!("requirement not met ({}): {reason}", c.what);
        }
    }
    if plan_bpffs(is_bpffs(BPFFS), can_mount(), purpose) == BpffsPlan::Mount {
        if let Err(reason) = mount_bpffs() {
            bail!("requirement not met (bpffs): {reason}");
        }
    }
    Ok(())
}

fn kernel() -> std::result::Result<String, String> {
    let release = fs::read_to_string("/proc/sys/kernel/osrelease")
        .map_err(|e| format!("cannot read /proc/sys/kernel/osrelease: {e}"))?;
    let release = release.trim();
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let major = parts.next().and_then(|p| p.parse::<u32>().ok());
    let minor = parts.next().and_then(|p| p.parse::<u32>().ok());
    match (major, minor) {
        (Some(ma), Some(mi)) if (ma, mi) >= MIN_KERNEL => Ok(format!("Linux {release}")),
        (Some(_), Some(_)) => Err(format!(
            "Linux {release} is older than {}.{}: cellcc's algorithms are written for the \
             cong_control(sk, ack, flag, rs) signature of 6.10, which this kernel would reject",
            MIN_KERNEL.0, MIN_KERNEL.1
        )),
        _ => Err(format!("cannot parse kernel release {release:?}")),
    }
}

fn btf() -> std::result::Result<String, String> {
    if Path::new(VMLINUX_BTF).exists() {
        Ok(VMLINUX_BTF.to_string())
    } else {
        Err(format!(
            "{VMLINUX_BTF} is missing: the kernel needs CONFIG_DEBUG_INFO_BTF=y for struct_ops"
        ))
    }
}

/// Effective capabilities from /proc/self/status.
fn cap_eff() -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("CapEff:"))?;
    u64::from_str_radix(line.trim_start_matches("CapEff:").trim(), 16).ok()
}

fn privileges() -> std::result::Result<String, String> {
    let caps = cap_eff().unwrap_or(0);
    let has = |cap: u32| caps & (1u64 << cap) != 0;
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    if euid == 0 && has(CAP_BPF) && has(CAP_NET_ADMIN) {
        return Ok("root".into());
    }
    if has(CAP_BPF) && has(CAP_NET_ADMIN) {
        return Ok("CAP_BPF + CAP_NET_ADMIN".into());
    }
    Err(format!(
        "needs root or CAP_BPF + CAP_NET_ADMIN (euid {euid}, CapEff {caps:#x}); run with sudo"
    ))
}

fn is_bpffs(path: &str) -> bool {
    let Ok(c) = CString::new(path) else {
        return false;
    };
    // SAFETY: an all-zero statfs is a valid out-parameter; `c` is NUL-terminated.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the call.
    let rc = unsafe { libc::statfs(c.as_ptr(), &mut st) };
    rc == 0 && st.f_type as i64 == BPF_FS_MAGIC
}

/// Whether this process may mount a filesystem.
fn can_mount() -> bool {
    cap_eff().unwrap_or(0) & (1u64 << CAP_SYS_ADMIN) != 0
}

fn bpffs(purpose: Purpose) -> std::result::Result<String, String> {
    match plan_bpffs(is_bpffs(BPFFS), can_mount(), purpose) {
        BpffsPlan::Ready(detail) => Ok(detail),
        // The mount happens in `require`, after the other checks; reported here as what
        // is about to happen.
        BpffsPlan::Mount => Ok(format!("not mounted at {BPFFS}; mounting one")),
        BpffsPlan::Fail(reason) => Err(reason),
    }
}

/// Mounts a bpffs at [`BPFFS`] (`mount -t bpf bpf /sys/fs/bpf`).
fn mount_bpffs() -> std::result::Result<(), String> {
    fs::create_dir_all(BPFFS).map_err(|e| format!("creating {BPFFS}: {e}"))?;
    let src = CString::new("bpf").expect("a literal without NUL");
    let dst = CString::new(BPFFS).expect("a literal without NUL");
    // SAFETY: all pointers are valid NUL-terminated strings; data may be null.
    let rc = unsafe {
        libc::mount(
            src.as_ptr(),
            dst.as_ptr(),
            src.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc != 0 || !is_bpffs(BPFFS) {
        return Err(format!(
            "{BPFFS} is not a bpffs and mounting one failed: {}; try: {}",
            std::io::Error::last_os_error(),
            mount_command()
        ));
    }
    Ok(())
}

fn embedded() -> std::result::Result<String, String> {
    let algos = objects::discover().map_err(|e| e.to_string())?;
    let names: Vec<&str> = algos.iter().map(|a| a.kernel_name.as_str()).collect();
    Ok(names.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_never_mounts() {
        for can_mount in [false, true] {
            let plan = plan_bpffs(false, can_mount, Purpose::Inspect);
            assert_ne!(plan, BpffsPlan::Mount, "can_mount = {can_mount}");
            let (BpffsPlan::Ready(text) | BpffsPlan::Fail(text)) = plan else {
                unreachable!()
            };
            assert!(text.contains("not"), "reports the missing bpffs: {text}");
            assert!(
                text.contains("mount -t bpf bpf /sys/fs/bpf"),
                "names the fix: {text}"
            );
        }
    }

    #[test]
    fn a_check_passes_when_load_could_mount_and_fails_when_it_could_not() {
        assert!(matches!(
            plan_bpffs(false, true, Purpose::Inspect),
            BpffsPlan::Ready(_)
        ));
        assert!(matches!(
            plan_bpffs(false, false, Purpose::Inspect),
            BpffsPlan::Fail(t) if t.contains("CAP_SYS_ADMIN")
        ));
    }

    #[test]
    fn only_load_mounts_and_only_when_missing() {
        assert_eq!(plan_bpffs(false, true, Purpose::Load), BpffsPlan::Mount);
        assert!(matches!(
            plan_bpffs(false, false, Purpose::Load),
            BpffsPlan::Fail(_)
        ));
        for purpose in [Purpose::Inspect, Purpose::Load, Purpose::Control] {
            assert_eq!(
                plan_bpffs(true, true, purpose),
                BpffsPlan::Ready(format!("mounted at {BPFFS}"))
            );
            for can_mount in [false, true] {
                if purpose != Purpose::Load {
                    assert_ne!(plan_bpffs(false, can_mount, purpose), BpffsPlan::Mount);
                }
            }
        }
    }

    #[test]
    fn control_commands_do_not_require_bpffs() {
        assert!(matches!(
            plan_bpffs(false, false, Purpose::Control),
            BpffsPlan::Ready(_)
        ));
    }
}
