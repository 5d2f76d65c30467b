//! Who the server and client commands run as, and the privilege drop between `fork` and
//! `exec`.
//!
//! The emulator needs privileges only to set the path up (namespaces, TUN devices); the
//! commands need none. Who they run as ([`resolve`]):
//!
//! | the emulator runs as | `--user` | the commands run as |
//! |---|---|---|
//! | root | `NAME` or `UID` | that user, no capabilities |
//! | root under `sudo` (`SUDO_UID` set) | absent | the invoking user, no capabilities |
//! | root, no `SUDO_UID` | absent or `root` | root with every capability (as before; a root shell gives root commands) |
//! | an ordinary user (rootless mode) | absent or themselves | themselves, no capabilities |
//!
//! Dropping ([`RunAs::drop_in_child`], called between `fork` and `exec`, so it only makes
//! async-signal-safe system calls and allocates nothing):
//!
//! 1. the capability bounding set is emptied (`PR_CAPBSET_DROP` for every capability up to
//!    `/proc/sys/kernel/cap_last_cap`), while `CAP_SETPCAP` is still held: nothing the
//!    command runs can ever regain a capability, even a file-capability binary;
//! 2. supplementary groups (the user's, from the group database), gid, then uid;
//! 3. the inheritable, permitted and effective sets are cleared with `capset` (`setuid`
//!    from root clears permitted and effective but not inheritable), and the ambient set
//!    with `PR_CAP_AMBIENT_CLEAR_ALL`;
//! 4. `PR_SET_NO_NEW_PRIVS`: set-user-ID binaries (`sudo`, `su`) cannot raise privileges.
//!
//! All five capability sets (`CapInh`, `CapPrm`, `CapEff`, `CapBnd`, `CapAmb`) are
//! therefore zero in the command. In rootless mode the ids are already the user's; only the
//! capabilities the emulator holds in its own user namespace are dropped (steps 1, 3, 4).

use std::ffi::{CString, OsString};
use std::io;

use nix::unistd::{Gid, Uid, User};

use crate::cli::UsageError;

/// `/proc/sys/kernel/cap_last_cap`: the highest capability number of the running kernel.
const CAP_LAST_CAP: &str = "/proc/sys/kernel/cap_last_cap";
/// Used when `CAP_LAST_CAP` cannot be read: Linux 5.9 and later have 40 (CAP_CHECKPOINT_RESTORE);
/// dropping numbers the kernel does not know fails harmlessly.
const FALLBACK_LAST_CAP: libc::c_int = 63;
/// `linux/capability.h`: `_LINUX_CAPABILITY_VERSION_3`.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// A user the commands run as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    /// User name (for messages and `USER`/`LOGNAME`).
    pub name: String,
    /// User ID.
    pub uid: libc::uid_t,
    /// Primary group ID.
    pub gid: libc::gid_t,
    /// Supplementary groups, from the group database.
    pub groups: Vec<libc::gid_t>,
    /// Home directory (`HOME`).
    pub home: OsString,
}

/// Who the commands run as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunAs {
    /// Root with every capability: the emulator runs as root and no other user was asked
    /// for (no `--user`, no `SUDO_UID`).
    Root,
    /// Switch from root to this user and drop every capability.
    User(Account),
    /// Rootless mode: the commands keep the emulator's own (unprivileged) ids and drop the
    /// capabilities it holds inside the user namespace it created.
    Rootless,
}

fn user_error(message: impl Into<String>) -> UsageError {
    UsageError::Argument {
        option: "--user".into(),
        message: message.into(),
    }
}

fn account(user: User) -> Account {
    // A user without supplementary groups, or whose name cannot be a C string, keeps
    // just the primary group.
    let groups = CString::new(user.name.as_bytes())
        .ok()
        .and_then(|name| nix::unistd::getgrouplist(&name, user.gid).ok())
        .map_or_else(
            || vec![user.gid.as_raw()],
            |g| g.into_iter().map(Gid::as_raw).collect(),
        );
    Account {
        name: user.name,
        uid: user.uid.as_raw(),
        gid: user.gid.as_raw(),
        groups,
        home: user.dir.into_os_string(),
    }
}

/// Looks `spec` (a user name or a numeric uid) up in the user database.
fn lookup(spec: &str) -> Result<Account, UsageError> {
    let found = match spec.parse::<libc::uid_t>() {
        Ok(uid) => User::from_uid(Uid::from_raw(uid)),
        Err(_) => User::from_name(spec),
    };
    match found {
        Ok(Some(user)) => Ok(account(user)),
        Ok(None) => Err(user_error(format!(
            "no user {spec:?} in the user database (give a name or uid listed by `getent passwd`)"
        ))),
        Err(e) => Err(user_error(format!("looking up user {spec:?}: {e}"))),
    }
}

/// The invoking user of `sudo`, from `SUDO_UID` and `SUDO_GID`; a uid without a user
/// database entry runs with `SUDO_GID` and no supplementary groups.
fn sudo_account(uid: libc::uid_t) -> Result<Account, UsageError> {
    if let Ok(Some(user)) = User::from_uid(Uid::from_raw(uid)) {
        return Ok(account(user));
    }
    let gid = std::env::var("SUDO_GID")
        .ok()
        .and_then(|g| g.parse().ok())
        .ok_or_else(|| {
            user_error(format!(
                "SUDO_UID={uid} has no user database entry and SUDO_GID is missing; give --user"
            ))
        })?;
    Ok(Account {
        name: uid.to_string(),
        uid,
        gid,
        groups: vec![gid],
        home: OsString::from("/"),
    })
}

/// Decides who the commands run as (see the module docs), from `--user` and the
/// environment of this process.
pub fn resolve(user: Option<&str>) -> Result<RunAs, UsageError> {
    let euid = nix::unistd::geteuid();
    if !euid.is_root() {
        return match user {
            None => Ok(RunAs::Rootless),
            Some(spec) if lookup(spec)?.uid == euid.as_raw() => Ok(RunAs::Rootless),
            Some(spec) => Err(user_error(format!(
                "running the commands as {spec:?} needs root; without root they run as the \
                 invoking user (uid {euid})"
            ))),
        };
    }
    if let Some(spec) = user {
        let account = lookup(spec)?;
        return Ok(if account.uid == 0 {
            RunAs::Root
        } else {
            RunAs::User(account)
        });
    }
    match std::env::var("SUDO_UID")
        .ok()
        .and_then(|u| u.parse::<libc::uid_t>().ok())
    {
        Some(uid) if uid != 0 => Ok(RunAs::User(sudo_account(uid)?)),
        _ => Ok(RunAs::Root),
    }
}

/// The highest capability number this kernel knows.
pub fn last_capability() -> libc::c_int {
    std::fs::read_to_string(CAP_LAST_CAP)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(FALLBACK_LAST_CAP)
}

/// Turns a `-1` return into the thread's `errno`, naming the step.
fn check(ret: libc::c_int) -> io::Result<()> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `capset` with every set empty.
fn clear_capability_sets() -> io::Result<()> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let header = Header {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    // Version 3 takes two 32-bit halves.
    let data = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: `header` and `data` are valid for the kernel's version-3 layout.
    let ret = unsafe { libc::syscall(libc::SYS_capset, &header, data.as_ptr()) };
    check(ret as libc::c_int)
}

impl RunAs {
    /// Environment variables the command gets on top of the emulator's.
    pub fn environment(&self) -> Vec<(&'static str, OsString)> {
        match self {
            RunAs::User(a) => vec![
                ("HOME", a.home.clone()),
                ("USER", a.name.clone().into()),
                ("LOGNAME", a.name.clone().into()),
            ],
            RunAs::Root | RunAs::Rootless => Vec::new(),
        }
    }

    /// Drops to this user with no capabilities (module docs, steps 1 to 4). Between `fork`
    /// and `exec` only: async-signal-safe, no allocation. `last_cap` is
    /// [`last_capability`], read before the fork.
    pub fn drop_in_child(&self, last_cap: libc::c_int) -> io::Result<()> {
        let account = match self {
            RunAs::Root => return Ok(()),
            RunAs::User(a) => Some(a),
            RunAs::Rootless => None,
        };
        for cap in 0..=last_cap {
            // SAFETY: plain prctl; EINVAL for a number the kernel does not know is fine.
            let ret = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) };
            if ret < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL) {
                return Err(io::Error::last_os_error());
            }
        }
        if let Some(a) = account {
            // SAFETY: plain system calls; `groups` outlives the call.
            unsafe {
                check(libc::setgroups(a.groups.len(), a.groups.as_ptr()))?;
                check(libc::setgid(a.gid))?;
                check(libc::setuid(a.uid))?;
            }
        }
        clear_capability_sets()?;
        // SAFETY: plain prctl calls.
        unsafe {
            check(libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_CLEAR_ALL,
                0,
                0,
                0,
            ))?;
            check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
        }
        Ok(())
    }

    /// A description for messages: `uid 1000 (alice), no capabilities`.
    pub fn describe(&self) -> String {
        match self {
            RunAs::Root => "root with every capability".into(),
            RunAs::User(a) => format!("uid {} ({}), no capabilities", a.uid, a.name),
            RunAs::Rootless => format!("uid {} (rootless), no capabilities", nix::unistd::getuid()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_are_found_by_name_and_by_uid() {
        let root = lookup("root").unwrap();
        assert_eq!((root.uid, root.gid), (0, 0));
        assert_eq!(lookup("0").unwrap().name, "root");
        let e = lookup("no-such-user-xyz").unwrap_err().to_string();
        assert!(
            e.starts_with("--user:") && e.contains("getent passwd"),
            "{e}"
        );
    }

    #[test]
    fn the_kernel_reports_a_plausible_last_capability() {
        // CAP_AUDIT_READ (37) exists since Linux 3.16.
        assert!((37..=63).contains(&last_capability()));
    }
}
