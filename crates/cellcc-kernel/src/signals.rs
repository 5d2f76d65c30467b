//! SIGINT/SIGTERM (and SIGHUP, a closed terminal) handling without handlers: the signals
//! are blocked and taken synchronously with `sigwait`/`sigtimedwait`, so a long-running
//! command can clean up in order.

use std::time::Duration;

use crate::error::{Error, Result};

fn stop_set() -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset initialise and fill a local set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGHUP);
        set
    }
}

/// Blocks SIGINT, SIGTERM and SIGHUP for this thread (call before spawning threads).
pub(crate) fn block_stop_signals() -> Result<()> {
    let set = stop_set();
    // SAFETY: `set` is initialised; the old mask is not needed.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(Error::new(format!(
            "blocking SIGINT/SIGTERM failed: errno {rc}"
        )));
    }
    Ok(())
}

/// Waits for SIGINT, SIGTERM or SIGHUP, at most `timeout` (forever if `None`). Returns the
/// signal number, or 0 on timeout.
pub(crate) fn wait_stop_signal(timeout: Option<Duration>) -> Result<i32> {
    let set = stop_set();
    loop {
        let rc = match timeout {
            None => {
                let mut sig = 0;
                // SAFETY: `set` is initialised, `sig` is a valid out-pointer.
                let rc = unsafe { libc::sigwait(&set, &mut sig) };
                if rc == 0 {
                    return Ok(sig);
                }
                rc
            }
            Some(t) => {
                let ts = libc::timespec {
                    tv_sec: t.as_secs() as libc::time_t,
                    tv_nsec: t.subsec_nanos() as libc::c_long,
                };
                // SAFETY: `set` and `ts` are initialised; the siginfo is not needed.
                let rc = unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &ts) };
                if rc > 0 {
                    return Ok(rc);
                }
                let err = std::io::Error::last_os_error();
                match err.raw_os_error() {
                    Some(libc::EAGAIN) => return Ok(0),
                    Some(e) => e,
                    None => libc::EINVAL,
                }
            }
        };
        if rc != libc::EINTR {
            return Err(Error::new(format!(
                "waiting for a signal failed: errno {rc}"
            )));
        }
    }
}
