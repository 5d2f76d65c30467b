//! Requirements of the real path, checked before every command: kernel version, BTF,
//! privileges, bpffs and the embedded objects.

use std::ffi::CString;
use std::fs;
use std::path::Path;

use crate::bail;
use crate::error::Result;
use crate::objects;

/// First kernel with the `cong_control(sk, ack, flag, rs)` signature the algorithms are
/// written for.
pub const MIN_KERNEL: (u32, u32) = (6, 10);
/// The kernel's BTF, needed to load struct_ops programs.
pub const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";
/// Where bpffs is expected (and mounted if absent).
pub const BPFFS: &str = "/sys/fs/bpf";
/// `BPF_FS_MAGIC` from linux/magic.h.
const BPF_FS_MAGIC: i64 = 0xcafe_4a11;
/// Capability numbers (linux/capability.h).
const CAP_NET_ADMIN: u32 = 12;
const CAP_SYS_ADMIN: u32 = 21;
const CAP_BPF: u32 = 39;

/// One requirement and whether it holds.
#[derive(Debug)]
pub struct Check {
    /// What is checked (`kernel >= 6.10`).
    pub what: &'static str,
    /// Ok(detail) or Err(reason and fix).
    pub result: std::result::Result<String, String>,
}

/// Runs every check, mounting bpffs if it is missing; never fails itself.
pub fn run_all() -> Vec<Check> {
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
            result: bpffs(),
        },
        Check {
            what: "BPF objects",
            result: embedded(),
        },
    ]
}

/// Runs every check; the first failure becomes the error.
pub fn require() -> Result<()> {
    for c in run_all() {
        if let Err(reason) = c.result {
            bail!("requirement not met ({}): {reason}", c.what);
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

fn bpffs() -> std::result::Result<String, String> {
    if is_bpffs(BPFFS) {
        return Ok(format!("mounted at {BPFFS}"));
    }
    let caps = cap_eff().unwrap_or(0);
    if caps & (1u64 << CAP_SYS_ADMIN) == 0 {
        return Err(format!(
            "{BPFFS} is not a bpffs and mounting one needs CAP_SYS_ADMIN: mount -t bpf bpf {BPFFS}"
        ));
    }
    let _ = fs::create_dir_all(BPFFS);
    let src = CString::new("bpf").unwrap();
    let dst = CString::new(BPFFS).unwrap();
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
            "{BPFFS} is not a bpffs and mounting one failed: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(format!("mounted a bpffs at {BPFFS}"))
}

fn embedded() -> std::result::Result<String, String> {
    let algos = objects::discover().map_err(|e| e.to_string())?;
    let names: Vec<&str> = algos.iter().map(|a| a.kernel_name.as_str()).collect();
    Ok(names.join(" "))
}
