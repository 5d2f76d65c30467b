//! The server and client commands: started inside a namespace, each in its own process
//! group, and always taken down with the emulator.
//!
//! * The namespace is entered with `setns` between `fork` and `exec` (never `ip netns
//!   exec`, which remounts `/sys` and hides BPF pins under `/sys/fs/bpf`).
//! * Each command leads a new process group, so stopping it reaches whatever it started
//!   (`sh -c 'a & b'`). When standard input is a terminal, the client's group is made the
//!   terminal's foreground group while it runs (as a shell does for a job), so Ctrl-C
//!   reaches the client, which exits, and the emulator then stops as usual.
//! * `PR_SET_PDEATHSIG(SIGKILL)` kills a command if the emulator dies without cleaning
//!   up (SIGKILL); processes it started itself are not covered by that.
//! * Stopping: SIGTERM to the group, up to [`GRACE`] for the leader to exit, then SIGKILL
//!   to the group, then reap.

use std::ffi::OsString;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::sys;

/// How long a command has to exit after SIGTERM before it is killed.
pub const GRACE: Duration = Duration::from_secs(2);

/// Environment variable holding the server's address.
pub const ENV_SERVER_ADDR: &str = "CELLCC_EMU_SERVER_ADDR";
/// Environment variable holding the client's address.
pub const ENV_CLIENT_ADDR: &str = "CELLCC_EMU_CLIENT_ADDR";

/// A running command.
#[derive(Debug)]
pub struct Job {
    /// `server` or `client`, for messages.
    pub name: &'static str,
    child: Option<Child>,
    pidfd: OwnedFd,
    /// Whether the terminal's foreground group was given to this job.
    owns_terminal: bool,
    status: Option<ExitStatus>,
}

/// Starts `program args` in the namespace `ns`.
pub fn spawn(
    name: &'static str,
    ns: BorrowedFd<'_>,
    program: &OsString,
    args: &[OsString],
    addrs: (Ipv4Addr, Ipv4Addr),
    foreground: bool,
) -> io::Result<Job> {
    let ns_fd: RawFd = ns.as_raw_fd();
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env(ENV_SERVER_ADDR, addrs.0.to_string())
        .env(ENV_CLIENT_ADDR, addrs.1.to_string())
        .process_group(0);
    if !foreground {
        cmd.stdin(Stdio::null());
    }
    // SAFETY: the closure only makes async-signal-safe system calls (setns, prctl,
    // pthread_sigmask) and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            sys::setns_net(ns_fd)?;
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) < 0 {
                return Err(io::Error::last_os_error());
            }
            // The emulator blocks SIGINT/SIGTERM to read them from a signalfd; the mask
            // would survive exec.
            sys::unblock_all_signals()
        });
    }
    let child = cmd.spawn().map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("starting the {name} command {:?}: {e}", program),
        )
    })?;
    let pid = child.id() as libc::pid_t;
    let pidfd = match sys::pidfd_open(pid) {
        Ok(fd) => fd,
        Err(e) => {
            sys::kill_group(pid, libc::SIGKILL);
            let mut child = child;
            let _ = child.wait();
            return Err(e);
        }
    };
    let mut job = Job {
        name,
        child: Some(child),
        pidfd,
        owns_terminal: false,
        status: None,
    };
    if foreground {
        job.owns_terminal = give_terminal(pid);
    }
    Ok(job)
}

/// Makes `pgid` the terminal's foreground group if standard input is this process's
/// controlling terminal; returns whether it did.
fn give_terminal(pgid: libc::pid_t) -> bool {
    // SAFETY: isatty/tcgetpgrp/getpgrp are plain calls on fd 0.
    let ours = unsafe { libc::isatty(0) == 1 && libc::tcgetpgrp(0) == libc::getpgrp() };
    if !ours {
        return false;
    }
    set_foreground(pgid)
}

/// `tcsetpgrp(0, pgid)` with SIGTTOU ignored (a background caller would be stopped).
fn set_foreground(pgid: libc::pid_t) -> bool {
    // SAFETY: signal/tcsetpgrp are plain calls; the old SIGTTOU disposition is restored.
    unsafe {
        let old = libc::signal(libc::SIGTTOU, libc::SIG_IGN);
        let ok = libc::tcsetpgrp(0, pgid) == 0;
        libc::signal(libc::SIGTTOU, old);
        ok
    }
}

impl Job {
    /// The command's process ID (0 once [`Job::stop`] has reaped it).
    pub fn pid(&self) -> libc::pid_t {
        self.child.as_ref().map_or(0, |c| c.id() as libc::pid_t)
    }

    /// Readable once the command's leader has exited.
    pub fn pidfd(&self) -> BorrowedFd<'_> {
        self.pidfd.as_fd()
    }

    /// Whether the command's leader has exited (reaped or not).
    pub fn has_exited(&self) -> bool {
        self.status.is_some() || sys::is_readable(self.pidfd.as_fd())
    }

    /// Stops the command (SIGTERM, grace, SIGKILL to its whole group) and reaps it.
    /// Returns its exit status. Idempotent.
    pub fn stop(&mut self) -> Option<ExitStatus> {
        let Some(mut child) = self.child.take() else {
            return self.status;
        };
        let pgid = child.id() as libc::pid_t;
        if self.owns_terminal {
            // SAFETY: getpgrp is a plain call.
            set_foreground(unsafe { libc::getpgrp() });
            self.owns_terminal = false;
        }
        if !sys::is_readable(self.pidfd.as_fd()) {
            sys::kill_group(pgid, libc::SIGTERM);
            let deadline = Instant::now() + GRACE;
            let mut pfd = [libc::pollfd {
                fd: self.pidfd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            }];
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() || matches!(sys::ppoll(&mut pfd, Some(left)), Ok(n) if n > 0) {
                    break;
                }
            }
        }
        // The leader is at worst a zombie, so its pid (the group id) cannot be reused
        // yet: stragglers in the group are killed, never an unrelated group.
        sys::kill_group(pgid, libc::SIGKILL);
        self.status = child.wait().ok();
        self.status
    }

    /// The exit status as a shell reports it: the code, or 128 + signal.
    pub fn exit_code(&self) -> Option<i32> {
        self.status.map(shell_code)
    }
}

/// An exit status as a shell reports it: the code, or 128 + signal.
pub fn shell_code(status: ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

impl Drop for Job {
    fn drop(&mut self) {
        self.stop();
    }
}
