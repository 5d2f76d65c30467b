//! The server and client commands: started inside a namespace, each in its own PID
//! namespace and process group, as the user [`RunAs`] says, and always taken down with
//! the emulator.
//!
//! * The network namespace is entered with `setns` between `fork` and `exec` (never `ip
//!   netns exec`, which remounts `/sys` and hides BPF pins under `/sys/fs/bpf`).
//! * Each command runs in a PID namespace of its own, under a small init process that is
//!   part of the emulator (no exec), so that nothing the command starts can outlive the
//!   run: when a PID namespace's init exits, the kernel kills every process in it,
//!   including ones that left the process group or the session (`setsid`), and daemons.
//!   `/proc` is not remounted, so `ps` inside still shows the whole machine.
//!
//!   ```text
//!   cellcc-emu
//!    └─ guard     (the Job's pid; parent namespace; waits for init, exits with its code)
//!        └─ init  (pid 1 of the new PID namespace; reaps; exits as described below)
//!            └─ the command (pid 2)
//!   ```
//!
//!   The client's init exits as soon as the command does (its code is the command's, or
//!   128 + signal), taking whatever the command left running with it. The server's init
//!   waits until every process in its namespace has exited, so a server command that
//!   starts a daemon and returns keeps its daemon for the run.
//! * Privileges are dropped in the guard, after `setns` and `unshare(CLONE_NEWPID)` and
//!   before init is forked, so no process of the job runs with the emulator's privileges
//!   ([`RunAs::drop_in_child`]).
//! * All three lead or join one new process group, so stopping the job reaches whatever
//!   the command started in its group (`sh -c 'a & b'`). When standard input is a
//!   terminal, the client's group is made the terminal's foreground group while it runs
//!   (as a shell does for a job), so Ctrl-C reaches the client, which exits, and the
//!   emulator then stops as usual. The guard ignores SIGINT, SIGTERM, SIGHUP and SIGQUIT,
//!   and init, as a namespace's init, only receives SIGKILL, so such signals reach the
//!   command alone.
//! * `PR_SET_PDEATHSIG(SIGKILL)` kills the guard if the emulator dies without cleaning up
//!   (SIGKILL), and init if the guard dies; the namespace, with every process in it, goes
//!   with init.
//! * Stopping: SIGTERM to the group, up to [`GRACE`] for the guard to exit (the command
//!   and, for the server, everything in its namespace), then SIGKILL to the group, which
//!   kills init and so the whole namespace, then reap.

use std::ffi::OsString;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::privs::{self, RunAs};
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

/// Signals the guard process ignores: they are for the command.
const GUARD_IGNORES: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// Starts `program args` in the network namespace `ns`, in a PID namespace of its own, as
/// `run_as` says. `client`: the client command (it gets the terminal, and its PID
/// namespace ends when it exits); otherwise the server command.
pub fn spawn(
    name: &'static str,
    ns: BorrowedFd<'_>,
    program: &OsString,
    args: &[OsString],
    addrs: (Ipv4Addr, Ipv4Addr),
    client: bool,
    run_as: &RunAs,
) -> io::Result<Job> {
    let ns_fd: RawFd = ns.as_raw_fd();
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env(ENV_SERVER_ADDR, addrs.0.to_string())
        .env(ENV_CLIENT_ADDR, addrs.1.to_string())
        .envs(run_as.environment())
        .process_group(0);
    if !client {
        cmd.stdin(Stdio::null());
    }
    // Everything the child needs is prepared here: it may not allocate.
    let last_cap = privs::last_capability();
    let emulator = std::process::id() as libc::pid_t;
    let run_as = run_as.clone();
    // SAFETY: the closure only makes async-signal-safe system calls (setns, unshare,
    // setgroups/setgid/setuid, capset, prctl, fork, waitpid, close_range, signal,
    // pthread_sigmask, _exit) and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            // The emulator blocks SIGINT/SIGTERM to read them from a signalfd; the mask
            // would survive exec.
            sys::unblock_all_signals()?;
            sys::setns_net(ns_fd)?;
            sys::unshare_pid()?;
            run_as.drop_in_child(last_cap)?;
            // After the drop: changing credentials clears the parent-death signal.
            sys::set_parent_death_signal(libc::SIGKILL)?;
            if libc::getppid() != emulator {
                // The emulator died before the line above.
                libc::_exit(1);
            }
            let init = sys::fork()?;
            if init > 0 {
                guard(init);
            }
            sys::set_parent_death_signal(libc::SIGKILL)?;
            let command = sys::fork()?;
            if command > 0 {
                namespace_init(command, client);
            }
            // The command: std execs it.
            Ok(())
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
    if client {
        job.owns_terminal = give_terminal(pid);
    }
    Ok(job)
}

/// An exit code as a shell gives it, from a `waitpid` status.
fn code_of(status: libc::c_int) -> libc::c_int {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        1
    }
}

/// The guard (in the child, after `fork`): holds no descriptors (the one std uses to
/// report a failed `exec` must reach end-of-file once the command has exec'd), ignores
/// the stop signals, waits for `init` and exits with its code.
fn guard(init: libc::pid_t) -> ! {
    sys::close_from(3);
    for signo in GUARD_IGNORES {
        // SAFETY: signal is async-signal-safe.
        unsafe { libc::signal(signo, libc::SIG_IGN) };
    }
    let code = code_of(sys::wait_for(init));
    // SAFETY: _exit is async-signal-safe; nothing of the parent's may run here.
    unsafe { libc::_exit(code) }
}

/// Pid 1 of the command's PID namespace (in the child, after `fork`): reaps every
/// process that ends in the namespace. A client's init exits when `command` does; a
/// server's once nothing is left. Its exit ends the namespace.
fn namespace_init(command: libc::pid_t, client: bool) -> ! {
    sys::close_from(3);
    let mut code = 0;
    loop {
        let mut status = 0;
        // SAFETY: plain waitpid on any child.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid == command {
            code = code_of(status);
            if client {
                break;
            }
        } else if pid < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break; // ECHILD: the namespace is empty.
        }
    }
    // SAFETY: _exit is async-signal-safe.
    unsafe { libc::_exit(code) }
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
            // The guard ignores it and init does not receive it: it is for the command
            // and the rest of its group.
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
        // yet: stragglers in the group are killed, never an unrelated group. SIGKILL
        // reaches init too, which ends the PID namespace and every process in it.
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
