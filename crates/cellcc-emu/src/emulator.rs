//! The real-time emulator: sets up the two namespaces, starts the commands, and runs the
//! event loop that moves packets between the TUN devices through the two
//! [`Direction`]s.
//!
//! Event loop (one thread):
//!
//! ```text
//!   loop:
//!     wake = min(next_wakeup of both directions)
//!     ppoll(server tun, client tun, signalfd, client pidfd; timeout = wake − now)
//!     signal or client exit ─► stop
//!     read every available packet (up to a batch) from each TUN, stamped with its
//!       read time; a TCP super-packet is split into 1500-byte packets ─► Direction::ingress
//!     advance both directions to now
//!     write every due packet to the other TUN, consecutive segments of one TCP flow
//!       coalesced into one write; lateness = write time − due time, per packet
//! ```
//!
//! With offloads (the default; `--no-offload` turns them off) the TUN devices carry a
//! virtio-net header, so the sending kernel hands over TCP super-packets of up to 64 KB
//! in one read and the receiving kernel takes them in one write, as a NIC with TSO and
//! GRO would ([`crate::offload`]). The link model, its log and the stats still see every
//! 1500-byte packet on its own, at its read time and with its own due time.
//!
//! Timer slack is set to 1 ns so that `ppoll` wakes on time. Emulator time 0 is when the
//! namespaces are ready, just before the commands start (Mahimahi: when the shell
//! starts); the monotonic clock since then is the `now` given to the sans-I/O links.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::path::Path;
use std::time::Duration;

use cellcc_link::mmlog::{LogHeader, MmLog, OpportunityCursor};
use cellcc_link::Link;
use cellcc_units::Time;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

use crate::cli::{queue_description, DirectionConfig, EmuConfig, UsageError, EXIT_USAGE};
use crate::logwriter::OffThreadWriter;
use crate::netns::{self, Endpoint};
use crate::offload::{self, Packet, VnetHdr, VNET_HDR_LEN};
use crate::output::{self, PendingOutput};
use crate::path::{Direction, Ready, Way};
use crate::privs::RunAs;
use crate::procs::{self, Job};
use crate::stats::{DirectionSummary, IoCounters, Lateness, Summary};
use crate::sys;

/// Largest read from a TUN device: a TCP super-packet (at most 64 KiB) behind its
/// virtio-net header, with room to spare. Without offloads packets are at most the MTU
/// (1500).
const READ_BUFFER_BYTES: usize = 1 << 17;
/// Packets read from one device per wake-up before the loop moves on, so a flood on one
/// side cannot delay departures on the other.
const READ_BATCH: usize = 256;
/// Signals that stop the emulator.
const STOP_SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Why the emulator failed.
#[derive(Debug, thiserror::Error)]
pub enum EmuError {
    /// Bad input: exit status 2.
    #[error("{0}")]
    Usage(#[from] UsageError),
    /// An output file cannot be created: exit status 2.
    #[error("{path}: cannot create: {source}")]
    Output {
        /// The file as given.
        path: String,
        /// Why it could not be created.
        source: io::Error,
    },
    /// Setting up or running failed (no permission, no TUN, ...): exit status 1.
    #[error("{0}")]
    System(#[from] io::Error),
}

impl EmuError {
    /// The process exit status for this error: 2 for bad input, 1 for a system failure.
    pub fn exit_code(&self) -> i32 {
        match self {
            EmuError::Usage(_) | EmuError::Output { .. } => EXIT_USAGE,
            EmuError::System(_) => 1,
        }
    }
}

/// An output file, written to a temporary file and renamed into place at the end (see
/// [`output`]).
struct Output {
    writer: BufWriter<File>,
    pending: PendingOutput,
}

fn create_output(path: &Path) -> Result<Output, EmuError> {
    output::create(path, output::sudo_owner())
        .map(|(file, pending)| Output {
            writer: BufWriter::with_capacity(1 << 16, file),
            pending,
        })
        .map_err(|source| EmuError::Output {
            path: path.display().to_string(),
            source,
        })
}

/// Renames a finished output into place, or says why it could not.
fn commit(pending: PendingOutput, what: &str) {
    let dest = pending.dest().display().to_string();
    if let Err(e) = pending.commit() {
        eprintln!("cellcc-emu: warning: {what} {dest}: cannot rename into place: {e}");
    }
}

/// One direction's I/O side.
struct Side {
    direction: Direction<Packet>,
    lateness: Lateness,
    write_errors: u64,
    io: IoCounters,
    /// Whether the TUN devices carry virtio-net headers (offloads).
    offload: bool,
    /// The packets due at this wake-up, written together.
    due: Vec<Ready<Packet>>,
}

/// Runs the emulator; returns the process exit status (the client's, or 128 + signal).
pub fn run(config: EmuConfig, command_line: String) -> Result<i32, EmuError> {
    let args = &config.args;
    if config.run_as == RunAs::Rootless {
        // Before any thread exists: unshare(CLONE_NEWUSER) refuses multithreaded callers.
        sys::enter_user_namespace().map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "not root, and rootless mode cannot create a user namespace: {e} \
                     (allow unprivileged user namespaces, or run as root)"
                ),
            )
        })?;
    }
    // Output files first, as temporary files renamed into place at the end: a bad path
    // fails before anything is set up, and a failed run leaves no file behind.
    let uplink_log = args.uplink_log.as_deref().map(create_output).transpose()?;
    let downlink_log = args
        .downlink_log
        .as_deref()
        .map(create_output)
        .transpose()?;
    let stats_out = args.stats.as_deref().map(create_output).transpose()?;
    let (uplink_log, uplink_pending) = split(uplink_log);
    let (downlink_log, downlink_pending) = split(downlink_log);

    sys::block_signals(&STOP_SIGNALS)?;
    let sigfd = sys::signalfd(&STOP_SIGNALS)?;
    if let Err(e) = sys::set_timer_slack_ns(1) {
        eprintln!("cellcc-emu: warning: cannot lower timer slack ({e}); timing will be coarser");
    }

    if args.realtime_priority > 0 {
        if let Err(e) = sys::set_realtime(args.realtime_priority) {
            let hint = if config.run_as == RunAs::Rootless {
                " (rootless mode: it needs an RLIMIT_RTPRIO; --realtime-priority 0 runs without)"
            } else {
                ""
            };
            eprintln!(
                "cellcc-emu: warning: cannot run as SCHED_FIFO ({e}); timing will be less accurate under load{hint}"
            );
        }
    }

    let offload = !args.no_offload;
    let server = netns::create_endpoint(
        netns::SERVER_TUN,
        args.server_addr,
        args.client_addr,
        offload,
    )?;
    let client = netns::create_endpoint(
        netns::CLIENT_TUN,
        args.client_addr,
        args.server_addr,
        offload,
    )?;

    let init_timestamp_ms = sys::realtime_ms();
    let t0_ns = sys::monotonic_ns();
    let header = |direction| LogHeader {
        program: "cellcc-emu",
        direction,
        command_line: Some(command_line.clone()),
        queue: String::new(),
        init_timestamp_ms,
    };
    let mut downlink = Side::new(
        Way::Downlink,
        &config.downlink,
        &config,
        downlink_log,
        header("downlink"),
        1,
    )?;
    let mut uplink = Side::new(
        Way::Uplink,
        &config.uplink,
        &config,
        uplink_log,
        header("uplink"),
        2,
    )?;

    let addrs = (args.server_addr, args.client_addr);
    let mut server_job = match &args.server_cmd {
        Some(cmd) => Some(procs::spawn(
            "server",
            server.ns.as_fd(),
            &OsString::from("sh"),
            &[OsString::from("-c"), OsString::from(cmd)],
            addrs,
            false,
            &config.run_as,
        )?),
        None => None,
    };
    let mut client_job = match args.command.split_first() {
        Some((program, rest)) => Some(procs::spawn(
            "client",
            client.ns.as_fd(),
            program,
            rest,
            addrs,
            true,
            &config.run_as,
        )?),
        None => None,
    };
    if client_job.is_none() {
        print_how_to_enter(&server, &client);
    }

    let clock = Clock { t0_ns };
    let outcome = event_loop(
        &clock,
        &server,
        &client,
        &mut downlink,
        &mut uplink,
        sigfd.as_fd(),
        client_job.as_ref().map(|j| j.pidfd()),
    );
    let end = clock.now();
    // Commands first, then the devices and namespaces (dropped at the end of scope).
    let client_status = client_job.as_mut().and_then(Job::stop);
    if let Some(job) = server_job.as_mut() {
        job.stop();
    }
    let outcome = outcome?;
    let client_exit_code = client_status.map(procs::shell_code);

    let log_results = [
        (downlink.direction.finish_log(end), downlink_pending),
        (uplink.direction.finish_log(end), uplink_pending),
    ];
    for (result, pending) in log_results {
        match (result, pending) {
            (Ok(()), Some(pending)) => commit(pending, "link log"),
            (Err(e), _) => eprintln!("cellcc-emu: warning: writing a link log failed: {e}"),
            (Ok(()), None) => {}
        }
    }
    if let Some(Output {
        writer: mut out,
        pending,
    }) = stats_out
    {
        let summary = summarise(
            &config,
            &command_line,
            end,
            &outcome,
            client_exit_code,
            &downlink,
            &uplink,
        );
        let written = serde_json::to_writer_pretty(&mut out, &summary)
            .map_err(io::Error::other)
            .and_then(|()| writeln!(out))
            .and_then(|()| out.flush());
        match written {
            Ok(()) => commit(pending, "stats file"),
            Err(e) => eprintln!("cellcc-emu: warning: writing the stats file failed: {e}"),
        }
    }
    drop(server);
    drop(client);
    Ok(match (outcome.stop, client_exit_code) {
        (Stop::ClientExited, Some(code)) => code,
        (Stop::Signal(signo), _) if client_job.is_some() => 128 + signo,
        _ => 0,
    })
}

/// The writer and the rename handle of an optional output.
fn split(out: Option<Output>) -> (Option<BufWriter<File>>, Option<PendingOutput>) {
    match out {
        Some(Output { writer, pending }) => (Some(writer), Some(pending)),
        None => (None, None),
    }
}

fn print_how_to_enter(server: &Endpoint, client: &Endpoint) {
    eprintln!(
        "cellcc-emu: running (pid {}); stop with Ctrl-C or SIGTERM",
        std::process::id()
    );
    for (name, e) in [("server", server), ("client", client)] {
        eprintln!(
            "  {name} namespace ({} on {}, net:[{}]): {} <command>",
            e.addr,
            e.tun_name,
            e.ns_inode,
            netns::nsenter_hint(e.ns.as_fd())
        );
    }
}

impl Side {
    fn new(
        way: Way,
        dir: &DirectionConfig,
        config: &EmuConfig,
        log_out: Option<BufWriter<File>>,
        mut header: LogHeader,
        stream: u64,
    ) -> Result<Side, EmuError> {
        let seed = config.args.seed;
        let link = Link::try_with_seed(
            dir.capacity.service(config.mode),
            dir.queue.clone(),
            seed.wrapping_mul(2).wrapping_add(stream),
        )
        .map_err(|e| UsageError::Argument {
            option: format!("--{}-queue-args", way.name()),
            message: e.to_string(),
        })?;
        header.queue = queue_description(&dir.queue);
        let log = match log_out {
            Some(out) => {
                let cursor = OpportunityCursor::for_service(link.service());
                // Off the event loop: a file write may sleep under writeback.
                let writer = OffThreadWriter::spawn(out, &format!("{}-log", way.name()))?;
                let boxed: Box<dyn Write + Send> = Box::new(writer);
                Some(MmLog::new(boxed, &header, cursor)?)
            }
            None => None,
        };
        let mut direction = Direction::new(
            way,
            link,
            config.args.delay,
            dir.loss,
            ChaCha8Rng::seed_from_u64(seed.wrapping_mul(1_000_003).wrapping_add(stream)),
            log,
        );
        if let Some(trace) = &config.delay_trace {
            direction = direction.with_delay_trace(trace.clone());
        }
        if let Some(sched) = &dir.sched {
            direction = direction.with_gate(match way {
                Way::Downlink => Box::new(sched.downlink_gate()),
                Way::Uplink => Box::new(sched.uplink_gate()),
            });
        }
        Ok(Side {
            direction,
            lateness: Lateness::default(),
            write_errors: 0,
            io: IoCounters::default(),
            offload: !config.args.no_offload,
            due: Vec::new(),
        })
    }

    /// Writes every due packet to `tun`, recording lateness. With offloads, each run of
    /// consecutive segments of one TCP flow goes in one write ([`offload::run_length`]).
    fn write_ready(&mut self, clock: &Clock, tun: BorrowedFd<'_>, scratch: &mut Vec<u8>) {
        // Taken out (and put back, keeping its allocation) so the packets can be borrowed
        // while the counters change.
        let mut due = std::mem::take(&mut self.due);
        due.extend(std::iter::from_fn(|| self.direction.pop_ready()));
        let mut i = 0;
        while i < due.len() {
            let n = if self.offload {
                offload::run_length(due[i..].iter().map(|r| &r.item))
            } else {
                1
            };
            let run = &due[i..i + n];
            if n > 1 {
                offload::coalesce(run.iter().map(|r| &r.item), scratch);
                self.io.writes += 1;
                if sys::write(tun, scratch).is_ok() {
                    self.io.gso_writes += 1;
                    self.io.coalesced_packets += n as u64;
                } else {
                    // Refused as a whole: each packet on its own.
                    for r in run {
                        self.write_errors += u64::from(!self.write_one(tun, &r.item));
                    }
                }
            } else {
                self.write_errors += u64::from(!self.write_one(tun, &run[0].item));
            }
            let written = clock.now();
            for r in run {
                self.lateness
                    .record(written.saturating_since(r.due).as_ns());
            }
            i += n;
        }
        due.clear();
        self.due = due;
    }

    /// Writes one packet; whether the device took it.
    fn write_one(&mut self, tun: BorrowedFd<'_>, packet: &Packet) -> bool {
        self.io.writes += 1;
        let written = if self.offload {
            sys::write2(tun, &packet.hdr.to_bytes(), &packet.ip)
        } else {
            sys::write(tun, &packet.ip)
        };
        written.is_ok()
    }

    /// Reads up to [`READ_BATCH`] packets from `tun` into the direction; with offloads,
    /// a TCP super-packet enters as the packets it splits into, all at its read time.
    fn read_available(
        &mut self,
        clock: &Clock,
        tun: BorrowedFd<'_>,
        buf: &mut [u8],
    ) -> io::Result<()> {
        for _ in 0..READ_BATCH {
            let Some(n) = sys::read_nonblocking(tun, buf)? else {
                break;
            };
            if n == 0 {
                break;
            }
            let now = clock.now();
            self.io.reads += 1;
            if !self.offload {
                let packet = Packet {
                    hdr: VnetHdr::default(),
                    ip: buf[..n].to_vec(),
                };
                self.direction.ingress(now, packet, n as u32);
                continue;
            }
            let Some(hdr) = VnetHdr::parse(&buf[..n]) else {
                self.io.gso_errors += 1;
                continue;
            };
            let direction = &mut self.direction;
            let split = offload::segment(hdr, &buf[VNET_HDR_LEN..n], |p| {
                let len = p.ip.len() as u32;
                direction.ingress(now, p, len);
            });
            match split {
                Ok(segments) if hdr.is_gso() => {
                    self.io.gso_reads += 1;
                    self.io.gso_segments += segments as u64;
                }
                Ok(_) => {}
                Err(_) => self.io.gso_errors += 1,
            }
        }
        Ok(())
    }
}

/// Emulator time: the monotonic clock since time 0.
struct Clock {
    t0_ns: u64,
}

impl Clock {
    #[inline]
    fn now(&self) -> Time {
        Time::from_ns(sys::monotonic_ns().saturating_sub(self.t0_ns))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    ClientExited,
    Signal(libc::c_int),
}

struct Outcome {
    stop: Stop,
    wakeups: u64,
    /// How late the kernel woke the loop after its timed sleeps.
    wakeup_lateness: Lateness,
}

fn event_loop(
    clock: &Clock,
    server: &Endpoint,
    client: &Endpoint,
    downlink: &mut Side,
    uplink: &mut Side,
    sigfd: BorrowedFd<'_>,
    client_pidfd: Option<BorrowedFd<'_>>,
) -> io::Result<Outcome> {
    let mut buf = vec![0u8; READ_BUFFER_BYTES];
    let mut scratch = Vec::with_capacity(READ_BUFFER_BYTES);
    let server_tun = server.tun.as_fd();
    let client_tun = client.tun.as_fd();
    let mut fds = vec![pollfd(server_tun), pollfd(client_tun), pollfd(sigfd)];
    if let Some(fd) = client_pidfd {
        fds.push(pollfd(fd));
    }
    let mut wakeups = 0u64;
    let mut wakeup_lateness = Lateness::default();
    loop {
        let wake = match (
            downlink.direction.next_wakeup(),
            uplink.direction.next_wakeup(),
        ) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let timeout = wake.map(|w| Duration::from_nanos(w.saturating_since(clock.now()).as_ns()));
        for fd in fds.iter_mut() {
            fd.revents = 0;
        }
        let ready = sys::ppoll(&mut fds, timeout)?;
        wakeups += 1;
        if let (Some(wake), Some(timeout)) = (wake, timeout) {
            // A sleep that ended at its timeout, or after it: how late the kernel woke
            // the loop. Sleeps cut short by a packet before the deadline say nothing.
            let woke = clock.now();
            if !timeout.is_zero() && (ready == 0 || woke >= wake) {
                wakeup_lateness.record(woke.saturating_since(wake).as_ns());
            }
        }
        if fds[2].revents != 0 {
            if let Some(signo) = sys::read_signal(sigfd)? {
                return Ok(Outcome {
                    stop: Stop::Signal(signo),
                    wakeups,
                    wakeup_lateness,
                });
            }
        }
        if fds.get(3).is_some_and(|fd| fd.revents != 0) {
            // Deliver what is already due, then stop.
            let now = clock.now();
            downlink.direction.advance(now);
            uplink.direction.advance(now);
            downlink.write_ready(clock, client_tun, &mut scratch);
            uplink.write_ready(clock, server_tun, &mut scratch);
            return Ok(Outcome {
                stop: Stop::ClientExited,
                wakeups,
                wakeup_lateness,
            });
        }
        if fds[0].revents & libc::POLLIN != 0 {
            downlink.read_available(clock, server_tun, &mut buf)?;
        }
        if fds[1].revents & libc::POLLIN != 0 {
            uplink.read_available(clock, client_tun, &mut buf)?;
        }
        let now = clock.now();
        downlink.direction.advance(now);
        uplink.direction.advance(now);
        downlink.write_ready(clock, client_tun, &mut scratch);
        uplink.write_ready(clock, server_tun, &mut scratch);
    }
}

fn pollfd(fd: BorrowedFd<'_>) -> libc::pollfd {
    libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }
}

fn summarise(
    config: &EmuConfig,
    command_line: &str,
    end: Time,
    outcome: &Outcome,
    client_exit_code: Option<i32>,
    downlink: &Side,
    uplink: &Side,
) -> Summary {
    let (user, system) = sys::cpu_times_s();
    let duration_s = end.as_secs_f64();
    let direction = |side: &Side, dir: &DirectionConfig| DirectionSummary {
        trace: dir.capacity.label(),
        queue: queue_description(&dir.queue),
        loss: dir.loss.p(),
        sched: dir.sched.as_ref().map(|s| s.preset.name.to_string()),
        counters: side.direction.counters().clone(),
        write_errors: side.write_errors,
        io: side.io.clone(),
        held_at_exit: side.direction.held() as u64,
        link: side.direction.link().stats().clone(),
        lateness: side.lateness.summary(),
    };
    let mut both = downlink.lateness.clone();
    both.merge(&uplink.lateness);
    Summary {
        version: env!("CARGO_PKG_VERSION"),
        command_line: command_line.to_string(),
        delay_ms: config.args.delay.as_ns() as f64 / 1e6,
        delay_trace: config.delay_trace.as_ref().map(|d| d.name().to_string()),
        duration_s,
        cpu_user_s: user,
        cpu_system_s: system,
        cpu_fraction: if duration_s > 0.0 {
            (user + system) / duration_s
        } else {
            0.0
        },
        wakeups: outcome.wakeups,
        offload: !config.args.no_offload,
        stop_reason: match outcome.stop {
            Stop::ClientExited => "client exited".to_string(),
            Stop::Signal(signo) => signal_name(signo).to_string(),
        },
        client_exit_code,
        uplink: direction(uplink, &config.uplink),
        downlink: direction(downlink, &config.downlink),
        lateness: both.summary(),
        wakeup_lateness: outcome.wakeup_lateness.summary(),
    }
}

fn signal_name(signo: libc::c_int) -> &'static str {
    match signo {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "signal",
    }
}
