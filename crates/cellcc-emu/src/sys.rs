//! Thin, safe wrappers over the Linux system calls the emulator and the traffic tool use
//! (libc only). Every wrapper returns `io::Result`; no wrapper panics.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// Turns a `-1` return into the thread's `errno`.
fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// CLOCK_MONOTONIC in nanoseconds.
#[inline]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// Wall-clock time in milliseconds since the Unix epoch (log headers only).
pub fn realtime_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Asks for timer slack of 1 ns so `ppoll` timeouts expire on time (the default slack
/// is 50 µs).
pub fn set_timer_slack_ns(ns: libc::c_ulong) -> io::Result<()> {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument.
    check(unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns, 0, 0, 0) }).map(drop)
}

/// Gives the calling thread the real-time policy SCHED_FIFO at `priority`, with
/// SCHED_RESET_ON_FORK so that processes it starts get the normal policy back.
pub fn set_realtime(priority: libc::c_int) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: valid pointer to a sched_param; pid 0 is the calling thread.
    check(unsafe {
        libc::sched_setscheduler(0, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, &param)
    })
    .map(drop)
}

/// Opens a file with `O_CLOEXEC`.
pub fn open(path: &CStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: `path` is NUL-terminated; the returned fd is owned by nobody else.
    let fd = check(unsafe { libc::open(path.as_ptr(), flags | libc::O_CLOEXEC) })?;
    // SAFETY: `fd` was just opened and is valid.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Moves this process into a new user namespace in which it keeps its own uid and gid
/// (mapped to themselves) and holds every capability, over namespaces it creates from
/// then on. The process must be single-threaded.
pub fn enter_user_namespace() -> io::Result<()> {
    // SAFETY: plain system calls.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    // SAFETY: plain system call; fails with EINVAL if other threads exist.
    check(unsafe { libc::unshare(libc::CLONE_NEWUSER) })
        .map_err(|e| io::Error::new(e.kind(), format!("unshare(CLONE_NEWUSER): {e}")))?;
    // An unprivileged process may map only its own ids, and its gid only once
    // setgroups(2) is denied.
    for (file, text) in [
        ("/proc/self/setgroups", "deny".to_string()),
        ("/proc/self/uid_map", format!("{uid} {uid} 1")),
        ("/proc/self/gid_map", format!("{gid} {gid} 1")),
    ] {
        std::fs::write(file, text)
            .map_err(|e| io::Error::new(e.kind(), format!("writing {file}: {e}")))?;
    }
    Ok(())
}

/// Moves the calling thread into a fresh, unnamed network namespace.
pub fn unshare_net() -> io::Result<()> {
    // SAFETY: plain system call; it only affects the calling thread.
    check(unsafe { libc::unshare(libc::CLONE_NEWNET) }).map(drop)
}

/// Makes the calling process's next child the first process (pid 1) of a new PID
/// namespace. Async-signal-safe.
pub fn unshare_pid() -> io::Result<()> {
    // SAFETY: plain system call; it only affects children created afterwards.
    check(unsafe { libc::unshare(libc::CLONE_NEWPID) }).map(drop)
}

/// Asks for `signal` when the parent exits (`PR_SET_PDEATHSIG`). Async-signal-safe.
pub fn set_parent_death_signal(signal: libc::c_int) -> io::Result<()> {
    // SAFETY: plain prctl.
    check(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, signal, 0, 0, 0) }).map(drop)
}

/// `fork(2)`: the child's pid in the parent, 0 in the child. Only for a process that is
/// between `fork` and `exec` already (single-threaded, nothing to run after the fork but
/// async-signal-safe calls).
pub fn fork() -> io::Result<libc::pid_t> {
    // SAFETY: called only in a single-threaded child (see above).
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(pid)
}

/// Closes every descriptor from `first` up. Async-signal-safe.
pub fn close_from(first: libc::c_uint) {
    // SAFETY: plain system call; closing descriptors this process does not use.
    unsafe { libc::syscall(libc::SYS_close_range, first, libc::c_uint::MAX, 0) };
}

/// Waits for the child `pid` to end and returns its `waitpid` status. Async-signal-safe.
pub fn wait_for(pid: libc::pid_t) -> libc::c_int {
    loop {
        let mut status = 0;
        // SAFETY: plain waitpid on our own child.
        let ret = unsafe { libc::waitpid(pid, &mut status, 0) };
        if ret == pid {
            return status;
        }
        if ret < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return 1 << 8; // exit code 1: the child is gone.
        }
    }
}

/// Moves the calling thread into the network namespace `ns`. Async-signal-safe, so it may
/// be called between `fork` and `exec`.
pub fn setns_net(ns: RawFd) -> io::Result<()> {
    // SAFETY: plain system call on a file descriptor.
    check(unsafe { libc::setns(ns, libc::CLONE_NEWNET) }).map(drop)
}

/// Puts `fd` in non-blocking mode.
pub fn set_nonblocking(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: fcntl on a valid descriptor.
    let flags = check(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) })?;
    // SAFETY: as above.
    check(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) }).map(drop)
}

/// `read(2)`; `Ok(None)` when the descriptor has nothing to read (`EAGAIN`).
#[inline]
pub fn read_nonblocking(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<Option<usize>> {
    loop {
        // SAFETY: `buf` is valid for `buf.len()` writable bytes.
        let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Ok(Some(n as usize));
        }
        let err = io::Error::last_os_error();
        match err.kind() {
            io::ErrorKind::WouldBlock => return Ok(None),
            io::ErrorKind::Interrupted => continue,
            _ => return Err(err),
        }
    }
}

/// `write(2)` of one whole buffer (one packet on a TUN device).
#[inline]
pub fn write(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    loop {
        // SAFETY: `buf` is valid for `buf.len()` readable bytes.
        let n = unsafe { libc::write(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// `writev(2)` of `head` then `body` as one buffer (one packet on a TUN device).
#[inline]
pub fn write2(fd: BorrowedFd<'_>, head: &[u8], body: &[u8]) -> io::Result<usize> {
    let iov = [
        libc::iovec {
            iov_base: head.as_ptr() as *mut libc::c_void,
            iov_len: head.len(),
        },
        libc::iovec {
            iov_base: body.as_ptr() as *mut libc::c_void,
            iov_len: body.len(),
        },
    ];
    loop {
        // SAFETY: both iovecs point to live buffers of their lengths, which writev only
        // reads.
        let n = unsafe { libc::writev(fd.as_raw_fd(), iov.as_ptr(), 2) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Waits until one of `fds` is ready or `timeout` passes (`None`: forever), with
/// nanosecond resolution. Signals are not unblocked (they arrive through a signalfd).
/// Returns the number of ready descriptors; 0 on timeout or interruption.
pub fn ppoll(fds: &mut [libc::pollfd], timeout: Option<Duration>) -> io::Result<usize> {
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: t.subsec_nanos() as libc::c_long,
    });
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `fds` is a valid slice of pollfd; `ts_ptr` is null or points to `ts`, which
    // outlives the call; a null sigmask keeps the current mask.
    let n = unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            ts_ptr,
            std::ptr::null(),
        )
    };
    if n < 0 {
        let err = io::Error::last_os_error();
        if err.kind() == io::ErrorKind::Interrupted {
            return Ok(0);
        }
        return Err(err);
    }
    Ok(n as usize)
}

/// A set of signals.
pub fn sigset(signals: &[libc::c_int]) -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; sigemptyset initialises it.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid sigset_t; the signal numbers are valid constants.
    unsafe {
        libc::sigemptyset(&mut set);
        for &s in signals {
            libc::sigaddset(&mut set, s);
        }
    }
    set
}

/// Blocks `signals` in the calling thread (threads created later inherit the mask).
pub fn block_signals(signals: &[libc::c_int]) -> io::Result<()> {
    let set = sigset(signals);
    // SAFETY: valid set pointer; the old mask is not needed.
    let ret = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if ret != 0 {
        return Err(io::Error::from_raw_os_error(ret));
    }
    Ok(())
}

/// Unblocks every signal in the calling thread; async-signal-safe (used between `fork`
/// and `exec`, since the signal mask survives `exec`).
pub fn unblock_all_signals() -> io::Result<()> {
    let set = sigset(&[]);
    // SAFETY: valid set pointer.
    let ret = unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &set, std::ptr::null_mut()) };
    if ret != 0 {
        return Err(io::Error::from_raw_os_error(ret));
    }
    Ok(())
}

/// A non-blocking signalfd for `signals` (which must be blocked).
pub fn signalfd(signals: &[libc::c_int]) -> io::Result<OwnedFd> {
    let set = sigset(signals);
    // SAFETY: -1 asks for a new descriptor; `set` is valid.
    let fd = check(unsafe { libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC) })?;
    // SAFETY: freshly created descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Reads one pending signal number from a signalfd, if any.
pub fn read_signal(fd: BorrowedFd<'_>) -> io::Result<Option<libc::c_int>> {
    // SAFETY: signalfd_siginfo is plain data.
    let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::signalfd_siginfo>();
    // SAFETY: `info` is valid for `size` writable bytes.
    let n = unsafe {
        libc::read(
            fd.as_raw_fd(),
            (&mut info as *mut libc::signalfd_siginfo).cast(),
            size,
        )
    };
    if n < 0 {
        let err = io::Error::last_os_error();
        if err.kind() == io::ErrorKind::WouldBlock {
            return Ok(None);
        }
        return Err(err);
    }
    if n as usize != size {
        return Ok(None);
    }
    Ok(Some(info.ssi_signo as libc::c_int))
}

/// A pidfd for `pid`: readable once the process has exited (before it is reaped).
pub fn pidfd_open(pid: libc::pid_t) -> io::Result<OwnedFd> {
    // SAFETY: plain system call; flags 0.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: freshly created descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Sends `signal` to the process group `pgid`; a group that no longer exists is fine.
pub fn kill_group(pgid: libc::pid_t, signal: libc::c_int) {
    if pgid > 0 {
        // SAFETY: plain system call; ESRCH (no such group) is expected and ignored.
        unsafe { libc::kill(-pgid, signal) };
    }
}

/// Whether `fd` is ready for reading right now.
pub fn is_readable(fd: BorrowedFd<'_>) -> bool {
    let mut pfd = [libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }];
    matches!(ppoll(&mut pfd, Some(Duration::ZERO)), Ok(n) if n > 0)
}

/// User and system CPU time of this process so far, in seconds.
pub fn cpu_times_s() -> (f64, f64) {
    // SAFETY: rusage is plain data; getrusage fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (secs(ru.ru_utime), secs(ru.ru_stime))
}

/// The inode of a network namespace file descriptor, as `ip netns identify` and
/// `/proc/PID/ns/net` show it (`net:[INODE]`).
pub fn inode(fd: BorrowedFd<'_>) -> io::Result<u64> {
    // SAFETY: stat is plain data; fstat fills it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid descriptor and pointer.
    check(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) })?;
    Ok(st.st_ino)
}

/// Whether the effective user is root.
pub fn is_root() -> bool {
    // SAFETY: plain system call without arguments.
    unsafe { libc::geteuid() == 0 }
}
