//! `cellcc-flow`: one bulk TCP transfer for experiments through the emulator.
//!
//! * `recv` listens, accepts one connection and reads until EOF, logging every read.
//! * `send` selects a congestion control with `TCP_CONGESTION` before connecting,
//!   connects (retrying while the receiver is not listening yet), writes for a fixed
//!   time while sampling `TCP_INFO`, and closes. Closing hands the unsent tail to the
//!   kernel, which still delivers it; with `--drain S` the sender waits at most S seconds
//!   for the send queue to empty and then resets the connection, so that a slow path
//!   (minutes for a few MB at 0.1 Mbit/s) does not hold the run. `recv` takes a reset
//!   after data as the end of the transfer (`reset` in its summary).
//!
//! Times in logs are CLOCK_MONOTONIC nanoseconds since the tool's start, whose absolute
//! value is in the summary (`start_monotonic_ns`), so logs of the two ends (and of the
//! emulator, whose clock is the same) can be aligned.
//!
//! Log formats (CSV with a header line):
//! * receiver `--log`: `t_ns,bytes,rcv_rtt_us,rcv_space,rcv_ssthresh,rcv_wnd,rcvbuf`,
//!   one line per `read` that returned data, with the receive side's autotuning state
//!   after the read (`tcp_info`'s `rcv_rtt`, `rcv_space`, `rcv_ssthresh`, `rcv_wnd`
//!   (0 before Linux 6.2), and `SO_RCVBUF`, bytes);
//! * sender `--info-log`: `t_ns,cwnd,srtt_us,rttvar_us,min_rtt_us,pacing_rate_bps,
//!   delivery_rate_bps,bytes_acked,retrans,lost,ssthresh,ca_state,rto_us,backoff,
//!   unacked,sacked,retrans_out,snd_wnd,rwnd_limited_us,sndbuf_limited_us`, one line
//!   per sample; `cwnd` in packets, rates in bit/s (the kernel reports bytes/s),
//!   `retrans` = total retransmitted segments, `lost` = segments currently marked lost,
//!   `snd_wnd` the peer's window in bytes, the `*_limited_us` the time so far the
//!   receive window or the send buffer held the sender back; the rest are `tcp_info`
//!   fields as named.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::output::{self, PendingOutput};
use crate::sys;

mod info;

#[cfg(test)]
use info::TcpInfo;
use info::{recv_sample, tcp_info};
pub use info::{InfoSample, RecvSample};

/// Size of each `write` (and of the receive buffer).
const CHUNK_BYTES: usize = 256 * 1024;
/// Pause between connection attempts while the receiver is not listening.
const RETRY_PAUSE: Duration = Duration::from_millis(50);
const AVAILABLE_CC: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";
const ALLOWED_CC: &str = "/proc/sys/net/ipv4/tcp_allowed_congestion_control";

/// Why a transfer failed.
#[derive(Debug, thiserror::Error)]
pub enum FlowError {
    /// Bad input (exit 2).
    #[error("{0}")]
    Usage(String),
    /// Anything else (exit 1).
    #[error("{context}: {source}")]
    Io {
        /// What was being done (`connecting to 10.64.0.1:5000`).
        context: String,
        /// The system error.
        #[source]
        source: io::Error,
    },
}

impl FlowError {
    /// The process exit status for this error: 2 for bad input, 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            FlowError::Usage(_) => crate::cli::EXIT_USAGE,
            FlowError::Io { .. } => 1,
        }
    }
}

fn io_err(context: impl Into<String>) -> impl FnOnce(io::Error) -> FlowError {
    let context = context.into();
    move |source| FlowError::Io { context, source }
}

/// An output file: a temporary file renamed into place by [`Out::finish`], removed if
/// the transfer fails (see [`output`]).
struct Out {
    writer: BufWriter<File>,
    pending: PendingOutput,
}

impl Out {
    /// Flushes the file and renames it into place.
    fn finish(mut self, what: &str) -> Result<(), FlowError> {
        let dest = self.pending.dest().display().to_string();
        self.writer
            .flush()
            .map_err(io_err(format!("writing the {what} {dest}")))?;
        self.pending
            .commit()
            .map_err(io_err(format!("renaming the {what} into place as {dest}")))
    }
}

/// Every output is created before the transfer starts, so a bad path fails at once.
fn create(path: &Path) -> Result<Out, FlowError> {
    output::create(path, output::sudo_owner())
        .map(|(file, pending)| Out {
            writer: BufWriter::with_capacity(1 << 16, file),
            pending,
        })
        .map_err(|e| FlowError::Usage(format!("{}: cannot create: {e}", path.display())))
}

fn write_json(out: Option<Out>, value: &impl Serialize) -> Result<(), FlowError> {
    let text = serde_json::to_string_pretty(value).map_err(|e| FlowError::Io {
        context: "encoding the summary".into(),
        source: io::Error::other(e),
    })?;
    match out {
        Some(mut out) => {
            writeln!(out.writer, "{text}").map_err(io_err("writing the summary"))?;
            out.finish("summary")
        }
        None => {
            println!("{text}");
            Ok(())
        }
    }
}

/// Nanoseconds since `start` on CLOCK_MONOTONIC.
fn since(start: u64) -> u64 {
    sys::monotonic_ns().saturating_sub(start)
}

/// Options of `cellcc-flow recv`.
#[derive(Debug, Clone)]
pub struct RecvOptions {
    /// TCP port to listen on.
    pub port: u16,
    /// Local address to listen on (all addresses by default).
    pub bind: IpAddr,
    /// Write the CSV read log (`t_ns,bytes,rcv_rtt_us,rcv_space,rcv_ssthresh,rcv_wnd,
    /// rcvbuf`) here.
    pub log: Option<PathBuf>,
    /// Write the JSON summary here; stdout if `None`.
    pub summary: Option<PathBuf>,
}

/// What the receiver reports.
#[derive(Debug, Clone, Serialize)]
pub struct RecvSummary {
    /// CLOCK_MONOTONIC ns at the tool's start; every other time is relative to it.
    pub start_monotonic_ns: u64,
    /// The sender's address and port.
    pub peer: String,
    /// When the connection was accepted, ns since the start.
    pub accepted_ns: u64,
    /// When the first read returned data, ns since the start.
    pub first_byte_ns: Option<u64>,
    /// When the last read returned data, ns since the start.
    pub last_byte_ns: Option<u64>,
    /// Payload bytes received.
    pub bytes: u64,
    /// `read` calls that returned data.
    pub reads: u64,
    /// From the first to the last byte, s.
    pub duration_s: f64,
    /// bytes × 8 / duration, Mbit/s.
    pub goodput_mbps: f64,
    /// The sender reset the connection after data (`send --drain` cut the tail).
    pub reset: bool,
}

/// Receives one connection until EOF.
pub fn recv(opts: &RecvOptions) -> Result<RecvSummary, FlowError> {
    let start = sys::monotonic_ns();
    let mut log = opts.log.as_deref().map(create).transpose()?;
    let summary_out = opts.summary.as_deref().map(create).transpose()?;
    let listener = TcpListener::bind((opts.bind, opts.port))
        .map_err(io_err(format!("listening on {}:{}", opts.bind, opts.port)))?;
    let (mut stream, peer) = listener.accept().map_err(io_err("accepting"))?;
    drop(listener);
    let accepted_ns = since(start);
    if let Some(log) = log.as_mut() {
        writeln!(log.writer, "{}", RecvSample::CSV_HEADER).map_err(io_err("writing the log"))?;
    }
    let mut buf = vec![0u8; CHUNK_BYTES];
    let (mut bytes, mut reads) = (0u64, 0u64);
    let (mut first, mut last) = (None, None);
    let mut reset = false;
    loop {
        let n = match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            // `send --drain` ended the transfer with a reset.
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset && bytes > 0 => {
                reset = true;
                break;
            }
            Err(e) => return Err(io_err("reading")(e)),
        };
        let t = since(start);
        first.get_or_insert(t);
        last = Some(t);
        bytes += n as u64;
        reads += 1;
        if let Some(log) = log.as_mut() {
            let state = recv_sample(stream.as_raw_fd()).map_err(io_err("reading TCP_INFO"))?;
            writeln!(log.writer, "{t},{n},{}", state.csv_fields())
                .map_err(io_err("writing the log"))?;
        }
    }
    if let Some(log) = log {
        log.finish("log")?;
    }
    let duration_s = match (first, last) {
        (Some(f), Some(l)) => (l - f) as f64 / 1e9,
        _ => 0.0,
    };
    let summary = RecvSummary {
        start_monotonic_ns: start,
        peer: peer.to_string(),
        accepted_ns,
        first_byte_ns: first,
        last_byte_ns: last,
        bytes,
        reads,
        duration_s,
        goodput_mbps: if duration_s > 0.0 {
            bytes as f64 * 8.0 / duration_s / 1e6
        } else {
            0.0
        },
        reset,
    };
    write_json(summary_out, &summary)?;
    Ok(summary)
}

/// Options of `cellcc-flow send`.
#[derive(Debug, Clone)]
pub struct SendOptions {
    /// The receiver's address and port.
    pub to: SocketAddr,
    /// Congestion control to select (`TCP_CONGESTION`), e.g. `cubic`, `bbr`.
    pub cc: String,
    /// How long to write after connecting.
    pub duration: Duration,
    /// Write the CSV `TCP_INFO` log here.
    pub info_log: Option<PathBuf>,
    /// Time between `TCP_INFO` samples (> 0).
    pub info_interval: Duration,
    /// How long to keep retrying while the receiver is not listening.
    pub connect_timeout: Duration,
    /// Write the JSON summary here; stdout if `None`.
    pub summary: Option<PathBuf>,
    /// After writing, wait at most this long for the send queue to empty, then reset the
    /// connection; `None` closes at once and leaves the tail to the kernel.
    pub drain: Option<Duration>,
}

/// What the sender reports.
#[derive(Debug, Clone, Serialize)]
pub struct SendSummary {
    /// CLOCK_MONOTONIC ns at the tool's start; every other time is relative to it.
    pub start_monotonic_ns: u64,
    /// The receiver's address and port.
    pub to: String,
    /// The congestion control selected.
    pub cc: String,
    /// `connect` calls made, the successful one included.
    pub connect_attempts: u32,
    /// When the connection was established, ns since the start.
    pub connected_ns: u64,
    /// When the sender stopped writing.
    pub stopped_ns: u64,
    /// Bytes handed to the kernel.
    pub bytes_written: u64,
    /// `TCP_INFO` samples taken.
    pub samples: u64,
    /// Last `TCP_INFO` sample, taken when writing stopped.
    pub last: InfoSample,
    /// Bytes handed to the kernel but not acknowledged when the drain time ran out, cut
    /// by a reset (0 without `--drain`, or when the queue emptied in time).
    pub unsent_bytes: u64,
    /// Whether the connection was reset at the end of the drain time.
    pub reset: bool,
}

fn read_list(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "(unreadable)".into())
}

/// A new TCP socket for `to` with congestion control `cc`.
fn tcp_socket(to: &SocketAddr, cc: &str) -> Result<OwnedFd, FlowError> {
    let domain = if to.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    // SAFETY: plain system call.
    let raw = unsafe { libc::socket(domain, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(io_err("creating a TCP socket")(io::Error::last_os_error()));
    }
    // SAFETY: freshly created descriptor.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: `cc` is valid for `cc.len()` bytes; the kernel copies at most that.
    let ret = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            cc.as_ptr().cast(),
            cc.len() as libc::socklen_t,
        )
    };
    if ret < 0 {
        let err = io::Error::last_os_error();
        let available = read_list(AVAILABLE_CC);
        return Err(FlowError::Usage(match err.raw_os_error() {
            Some(libc::EPERM) => format!(
                "--cc {cc}: not allowed for this user ({err}); allowed: {} \
                 (net.ipv4.tcp_allowed_congestion_control); available: {available}",
                read_list(ALLOWED_CC)
            ),
            _ => format!(
                "--cc {cc}: not available ({err}); available: {available} \
                 ({AVAILABLE_CC}); load a module or register a BPF congestion control first"
            ),
        }));
    }
    Ok(fd)
}

fn sockaddr(to: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match to {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: as above, for sockaddr_in6.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

/// Connects with `cc`, retrying refused or unreachable attempts until `timeout`.
fn connect(opts: &SendOptions, start: u64) -> Result<(TcpStream, u32), FlowError> {
    let (addr, len) = sockaddr(&opts.to);
    let deadline = start.saturating_add(opts.connect_timeout.as_nanos() as u64);
    let mut attempts = 0u32;
    loop {
        attempts += 1;
        let fd = tcp_socket(&opts.to, &opts.cc)?;
        // SAFETY: `addr` holds a valid sockaddr of `len` bytes.
        let ret = unsafe {
            libc::connect(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_storage).cast(),
                len,
            )
        };
        if ret == 0 {
            return Ok((TcpStream::from(fd), attempts));
        }
        let err = io::Error::last_os_error();
        let retry = matches!(
            err.raw_os_error(),
            Some(
                libc::ECONNREFUSED
                    | libc::ENETUNREACH
                    | libc::EHOSTUNREACH
                    | libc::ETIMEDOUT
                    | libc::EINTR
            )
        );
        if !retry || sys::monotonic_ns() >= deadline {
            return Err(FlowError::Io {
                context: format!(
                    "connecting to {} ({attempts} attempts in {:.1} s)",
                    opts.to,
                    since(start) as f64 / 1e9
                ),
                source: err,
            });
        }
        std::thread::sleep(RETRY_PAUSE);
    }
}

/// Sends for `opts.duration`, sampling `TCP_INFO`.
pub fn send(opts: &SendOptions) -> Result<SendSummary, FlowError> {
    let start = sys::monotonic_ns();
    if opts.info_interval.is_zero() {
        return Err(FlowError::Usage("--info-interval-ms must be > 0".into()));
    }
    let mut info_log = opts.info_log.as_deref().map(create).transpose()?;
    let summary_out = opts.summary.as_deref().map(create).transpose()?;
    if let Some(log) = info_log.as_mut() {
        writeln!(log.writer, "{}", InfoSample::CSV_HEADER)
            .map_err(io_err("writing the info log"))?;
    }
    let (stream, attempts) = connect(opts, start)?;
    let connected_ns = since(start);
    stream
        .set_nonblocking(true)
        .map_err(io_err("making the socket non-blocking"))?;
    let fd = stream.as_raw_fd();
    let data = vec![0x5au8; CHUNK_BYTES];
    let interval = opts.info_interval.as_nanos() as u64;
    let end = connected_ns.saturating_add(opts.duration.as_nanos() as u64);
    let mut next_sample = connected_ns;
    let (mut written, mut samples) = (0u64, 0u64);
    let mut last = InfoSample::default();
    loop {
        let now = since(start);
        if now >= next_sample {
            last = tcp_info(fd, now).map_err(io_err("reading TCP_INFO"))?;
            samples += 1;
            if let Some(log) = info_log.as_mut() {
                writeln!(log.writer, "{}", last.csv_row())
                    .map_err(io_err("writing the info log"))?;
            }
            next_sample = next_sample.saturating_add(interval).max(now + 1);
        }
        if now >= end {
            break;
        }
        let wait = next_sample.min(end).saturating_sub(now);
        let mut pfd = [libc::pollfd {
            fd,
            events: libc::POLLOUT,
            revents: 0,
        }];
        sys::ppoll(&mut pfd, Some(Duration::from_nanos(wait)))
            .map_err(io_err("waiting for the socket"))?;
        if pfd[0].revents & (libc::POLLERR | libc::POLLHUP) != 0 {
            return Err(FlowError::Io {
                context: "sending".into(),
                source: stream.take_error().ok().flatten().unwrap_or_else(|| {
                    io::Error::new(io::ErrorKind::BrokenPipe, "connection closed by the peer")
                }),
            });
        }
        if pfd[0].revents & libc::POLLOUT != 0 {
            loop {
                // SAFETY: `data` is valid for its length; MSG_NOSIGNAL avoids SIGPIPE.
                let n = unsafe {
                    libc::send(
                        fd,
                        data.as_ptr().cast(),
                        data.len(),
                        libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
                    )
                };
                if n > 0 {
                    written += n as u64;
                    // A fast path may never fill the socket buffer: keep the schedule.
                    if since(start) >= next_sample.min(end) {
                        break;
                    }
                    continue;
                }
                let err = io::Error::last_os_error();
                match err.kind() {
                    io::ErrorKind::WouldBlock => break,
                    io::ErrorKind::Interrupted => continue,
                    _ => return Err(io_err("sending")(err)),
                }
            }
        }
    }
    let stopped_ns = since(start);
    if let Some(log) = info_log {
        log.finish("info log")?;
    }
    let unsent_bytes = match opts.drain {
        Some(limit) => drain(fd, limit).map_err(io_err("waiting for the send queue to empty"))?,
        None => 0,
    };
    let reset = unsent_bytes > 0;
    if reset {
        // SO_LINGER with a zero timeout: close sends a reset and drops the queue.
        let linger = libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        // SAFETY: `linger` is a valid `struct linger` of the size passed.
        let rc = unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                (&linger as *const libc::linger).cast(),
                std::mem::size_of::<libc::linger>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(io_err("setting SO_LINGER")(io::Error::last_os_error()));
        }
    }
    let summary = SendSummary {
        start_monotonic_ns: start,
        to: opts.to.to_string(),
        cc: opts.cc.clone(),
        connect_attempts: attempts,
        connected_ns,
        stopped_ns,
        bytes_written: written,
        samples,
        last,
        unsent_bytes,
        reset,
    };
    // The summary is written before closing, so it exists once the receiver sees EOF.
    write_json(summary_out, &summary)?;
    // Closing hands the unsent tail to the kernel, which still delivers it, unless the
    // drain time ran out (then it resets the connection).
    drop(stream);
    Ok(summary)
}

/// Bytes in the send queue (written, not yet acknowledged: `SIOCOUTQ`).
fn send_queue_bytes(fd: RawFd) -> io::Result<u64> {
    let mut queued: libc::c_int = 0;
    // SAFETY: SIOCOUTQ (TIOCOUTQ) writes one int through the pointer.
    if unsafe { libc::ioctl(fd, libc::TIOCOUTQ, &mut queued) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(queued.max(0) as u64)
}

/// Waits until the send queue is empty or `limit` has passed; the bytes still queued.
fn drain(fd: RawFd, limit: Duration) -> io::Result<u64> {
    const POLL: Duration = Duration::from_millis(10);
    let deadline = sys::monotonic_ns().saturating_add(limit.as_nanos() as u64);
    loop {
        let queued = send_queue_bytes(fd)?;
        let now = sys::monotonic_ns();
        if queued == 0 || now >= deadline {
            return Ok(queued);
        }
        std::thread::sleep(POLL.min(Duration::from_nanos(deadline - now)));
    }
}

#[cfg(test)]
#[path = "flow_tests.rs"]
mod tests;
