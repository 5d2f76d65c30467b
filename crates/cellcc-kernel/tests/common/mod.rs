//! Helpers for the kernel tests: skip conditions, the loader as a child process, and a
//! test path between two network namespaces.
//!
//! The path is a user-space delay line between two TUN devices (one per namespace): every
//! packet is held for a fixed one-way delay (this kernel has no netem), and a tbf on the
//! sender's TUN device is the bottleneck queue. Names include the test process's pid and
//! a counter, and everything is removed on drop.

#![allow(dead_code)] // each test binary uses a subset

use std::collections::VecDeque;
use std::ffi::CString;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The binary under test.
pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_cellcc-kernel");
pub(crate) const AVAILABLE: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";
pub(crate) const ALLOWED: &str = "/proc/sys/net/ipv4/tcp_allowed_congestion_control";
pub(crate) const PIDFILE: &str = "/run/cellcc/kernel.pid";
pub(crate) const PIN_DIR: &str = "/sys/fs/bpf/cellcc";
pub(crate) const C2TCP: &str = "cellcc_c2tcp";

/// One loader at a time on the machine: tests in a binary take this lock.
static MACHINE: Mutex<()> = Mutex::new(());

/// Takes the machine-wide test lock (a failed test does not poison the others).
pub(crate) fn lock() -> MutexGuard<'static, ()> {
    MACHINE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Why the kernel tests cannot run here, if they cannot.
pub(crate) fn skip_reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root (the tests register congestion controls)".into());
    }
    if !Path::new("/sys/kernel/btf/vmlinux").exists() {
        return Some("no kernel BTF (/sys/kernel/btf/vmlinux)".into());
    }
    for tool in ["ip", "tc"] {
        let found = Command::new(tool)
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            return Some(format!("`{tool}` (iproute2) is not installed"));
        }
    }
    let out = run(&["check"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if let Some(line) = text.lines().find(|l| l.contains("FAIL  BPF objects")) {
        return Some(format!("the binary has no BPF objects: {line}"));
    }
    if let Some(line) = text.lines().find(|l| l.contains("FAIL  kernel >=")) {
        return Some(line.to_string());
    }
    assert!(
        out.status.success(),
        "check failed:\n{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    if Path::new(PIDFILE).exists() {
        return Some(format!(
            "a loader is already running ({PIDFILE}); the tests do not stop it"
        ));
    }
    None
}

/// Returns early from a test, printing why, when the kernel tests cannot run.
#[macro_export]
macro_rules! skip_unless_ready {
    () => {
        if let Some(reason) = common::skip_reason() {
            println!("skipped: {reason}");
            return;
        }
    };
}

/// Runs the binary to completion.
pub(crate) fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("the test binary runs")
}

/// Runs the binary and asserts success; returns stdout.
pub(crate) fn run_ok(args: &[&str]) -> String {
    let out = run(args);
    assert!(
        out.status.success(),
        "cellcc-kernel {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The names in a congestion-control list.
pub(crate) fn read_list(path: &str) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// Polls `cond` every 20 ms until it holds or `timeout` passes.
pub(crate) fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

/// `cellcc-kernel load` as a child; killed (SIGKILL) on drop if still running.
pub(crate) struct Loader {
    pub child: Child,
}

impl Loader {
    /// Starts the loader and waits (at most 20 s) for its `ready:` line.
    pub(crate) fn start(algos: &[&str]) -> Loader {
        let mut child = Command::new(BIN)
            .arg("load")
            .args(algos)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the loader starts");
        let stdout = child.stdout.take().expect("piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(Duration::from_secs(20)).unwrap_or_default();
        let mut loader = Loader { child };
        assert!(
            line.starts_with("ready: "),
            "the loader did not print ready (got {line:?}, exit {:?})",
            loader.child.try_wait()
        );
        loader
    }

    pub(crate) fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Waits (at most 10 s) for the loader to exit; returns its exit code.
    pub(crate) fn wait_exit(&mut self) -> Option<i32> {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Loader {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        // Leave no stale state behind for the next test.
        let _ = run(&["unload"]);
    }
}

fn sh(args: &[&str]) {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .expect("iproute2 runs");
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `ioctl(TUNSETIFF)`, `_IOW('T', 202, int)`.
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;
/// Largest packet the delay line carries (the TUN MTU is 1500).
const MAX_PACKET: usize = 2048;

#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Opens TUN device `dev` inside namespace `ns` (the device is created in the namespace of
/// the thread that calls TUNSETIFF, so a short-lived thread enters it).
fn open_tun(ns: &str, dev: &str) -> OwnedFd {
    let ns = ns.to_string();
    let dev = dev.to_string();
    std::thread::spawn(move || {
        let nsfile = File::open(format!("/var/run/netns/{ns}")).expect("netns exists");
        // SAFETY: setns on this thread with a valid netns fd.
        let rc = unsafe { libc::setns(nsfile.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
        let path = CString::new("/dev/net/tun").unwrap();
        // SAFETY: valid path; the fd is owned below.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_NONBLOCK) };
        assert!(
            fd >= 0,
            "open /dev/net/tun: {}",
            std::io::Error::last_os_error()
        );
        // SAFETY: fd was just opened and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut req = IfReq {
            name: [0; libc::IFNAMSIZ],
            flags: IFF_TUN | IFF_NO_PI,
            _pad: [0; 22],
        };
        req.name[..dev.len()].copy_from_slice(dev.as_bytes());
        // SAFETY: req is a valid ifreq for TUNSETIFF.
        let rc = unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF, &mut req) };
        assert_eq!(
            rc,
            0,
            "TUNSETIFF {dev}: {}",
            std::io::Error::last_os_error()
        );
        fd
    })
    .join()
    .expect("TUN thread")
}

/// Forwards packets read from `from` to `to` after `delay`, until `stop`.
fn delay_line(
    from: Arc<OwnedFd>,
    to: Arc<OwnedFd>,
    delay: Duration,
    stop: Arc<AtomicBool>,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut queue: VecDeque<(Instant, Vec<u8>)> = VecDeque::new();
        let mut buf = [0u8; MAX_PACKET];
        while !stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            while queue.front().is_some_and(|(due, _)| *due <= now) {
                let (_, pkt) = queue.pop_front().expect("non-empty");
                // SAFETY: writing a buffer we own to an open fd.
                unsafe { libc::write(to.as_raw_fd(), pkt.as_ptr().cast(), pkt.len()) };
            }
            let wait_ms = queue.front().map_or(5, |(due, _)| {
                due.saturating_duration_since(now).as_millis().min(5) as i32
            });
            let mut pfd = libc::pollfd {
                fd: from.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            unsafe { libc::poll(&mut pfd, 1, wait_ms) };
            loop {
                // SAFETY: reading into a buffer we own from an open non-blocking fd.
                let n = unsafe { libc::read(from.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
                if n <= 0 {
                    break;
                }
                queue.push_back((Instant::now() + delay, buf[..n as usize].to_vec()));
            }
        }
    })
}

static PATHS: AtomicU32 = AtomicU32::new(0);

/// Sender namespace `ns_a` --TUN delay line--> router `ns_r` --veth, tbf--> receiver
/// `ns_b`. The bottleneck queue is on the router, where TCP Small Queues (which keeps a
/// sender's own qdisc nearly empty) does not reach.
pub(crate) struct TestPath {
    pub ns_a: String,
    pub ns_r: String,
    pub ns_b: String,
    pub sender_ip: Ipv4Addr,
    pub receiver_ip: Ipv4Addr,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl TestPath {
    /// A path with `one_way` delay each way (between sender and router) and a tbf
    /// bottleneck of `rate` (tc syntax) with a `limit_bytes` queue towards the receiver.
    pub(crate) fn new(one_way: Duration, rate: &str, limit_bytes: u32) -> TestPath {
        let id = format!(
            "{}{}",
            std::process::id(),
            PATHS.fetch_add(1, Ordering::Relaxed)
        );
        let ns = |s: &str| format!("cck{id}{s}");
        let mut path = TestPath {
            ns_a: ns("a"),
            ns_r: ns("r"),
            ns_b: ns("b"),
            sender_ip: Ipv4Addr::new(10, 79, 0, 1),
            receiver_ip: Ipv4Addr::new(10, 79, 1, 2),
            stop: Arc::new(AtomicBool::new(false)),
            threads: Vec::new(),
        };
        let (a, r, b) = (path.ns_a.clone(), path.ns_r.clone(), path.ns_b.clone());
        let (tun_a, tun_r, veth_r, veth_b) = (ns("ta"), ns("tr"), ns("vr"), ns("vb"));
        for n in [&a, &r, &b] {
            sh(&["ip", "netns", "add", n]);
            sh(&["ip", "-n", n, "link", "set", "lo", "up"]);
        }
        let fd_a = Arc::new(open_tun(&a, &tun_a));
        let fd_r = Arc::new(open_tun(&r, &tun_r));
        sh(&[
            "ip",
            "-n",
            &a,
            "addr",
            "add",
            "10.79.0.1",
            "peer",
            "10.79.0.254",
            "dev",
            &tun_a,
        ]);
        sh(&[
            "ip",
            "-n",
            &r,
            "addr",
            "add",
            "10.79.0.254",
            "peer",
            "10.79.0.1",
            "dev",
            &tun_r,
        ]);
        for (n, dev) in [(&a, &tun_a), (&r, &tun_r)] {
            // A long TUN queue, so that the tbf, not the device, is what drops.
            sh(&[
                "ip",
                "-n",
                n,
                "link",
                "set",
                dev,
                "txqueuelen",
                "10000",
                "up",
            ]);
        }
        sh(&[
            "ip",
            "-n",
            &a,
            "route",
            "add",
            "10.79.1.0/24",
            "dev",
            &tun_a,
        ]);
        sh(&[
            "ip", "link", "add", &veth_r, "netns", &r, "type", "veth", "peer", "name", &veth_b,
            "netns", &b,
        ]);
        sh(&[
            "ip",
            "-n",
            &r,
            "addr",
            "add",
            "10.79.1.1/24",
            "dev",
            &veth_r,
        ]);
        sh(&[
            "ip",
            "-n",
            &b,
            "addr",
            "add",
            "10.79.1.2/24",
            "dev",
            &veth_b,
        ]);
        sh(&["ip", "-n", &r, "link", "set", &veth_r, "up"]);
        sh(&["ip", "-n", &b, "link", "set", &veth_b, "up"]);
        sh(&[
            "ip",
            "-n",
            &b,
            "route",
            "add",
            "default",
            "via",
            "10.79.1.1",
        ]);
        sh(&[
            "ip",
            "netns",
            "exec",
            &r,
            "sysctl",
            "-qw",
            "net.ipv4.ip_forward=1",
        ]);
        let limit = limit_bytes.to_string();
        sh(&[
            "ip", "netns", "exec", &r, "tc", "qdisc", "add", "dev", &veth_r, "root", "tbf", "rate",
            rate, "burst", "3000", "limit", &limit,
        ]);
        path.threads.push(delay_line(
            fd_a.clone(),
            fd_r.clone(),
            one_way,
            path.stop.clone(),
        ));
        path.threads
            .push(delay_line(fd_r, fd_a, one_way, path.stop.clone()));
        path
    }
}

impl Drop for TestPath {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        for ns in [&self.ns_a, &self.ns_r, &self.ns_b] {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
    }
}

/// Runs `f` on a thread inside namespace `ns`.
fn in_netns<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> JoinHandle<T> {
    let ns = ns.to_string();
    std::thread::spawn(move || {
        let nsfile = File::open(format!("/var/run/netns/{ns}")).expect("netns exists");
        // SAFETY: setns on this thread with a valid netns fd.
        let rc = unsafe { libc::setns(nsfile.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
        f()
    })
}

/// A finished bulk transfer.
pub(crate) struct Transfer {
    /// The sender's local port.
    pub local_port: u16,
    /// Bytes the receiver read.
    pub received: u64,
}

/// Sends bulk data from `ns_a` to `ns_b` for `duration` over a socket that selects `cc`
/// with setsockopt(TCP_CONGESTION). `during` runs (on the caller's thread) once the
/// connection is up, with the sender's local port.
pub(crate) fn transfer(
    path: &TestPath,
    cc: &str,
    duration: Duration,
    during: impl FnOnce(u16),
) -> Transfer {
    let port = 5201;
    let rx_ip = path.receiver_ip;
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let receiver = in_netns(&path.ns_b, move || {
        let listener = TcpListener::bind(SocketAddrV4::new(rx_ip, port)).expect("bind");
        ready_tx.send(()).unwrap();
        let (mut conn, _) = listener.accept().expect("accept");
        let mut buf = vec![0u8; 1 << 16];
        let mut total = 0u64;
        loop {
            match conn.read(&mut buf) {
                Ok(0) | Err(_) => return total,
                Ok(n) => total += n as u64,
            }
        }
    });
    ready_rx
        .recv_timeout(Duration::from_secs(5))
        .expect("receiver listening");
    let cc = cc.to_string();
    let (port_tx, port_rx) = std::sync::mpsc::channel();
    let sender = in_netns(&path.ns_a, move || {
        // SAFETY: plain socket creation; the fd is owned by the TcpStream below.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) };
        assert!(fd >= 0);
        // SAFETY: valid fd and option buffer.
        let rc = unsafe {
            libc::setsockopt(
                fd,
                libc::IPPROTO_TCP,
                libc::TCP_CONGESTION,
                cc.as_ptr().cast(),
                cc.len() as u32,
            )
        };
        assert_eq!(
            rc,
            0,
            "setsockopt(TCP_CONGESTION, {cc}): {}",
            std::io::Error::last_os_error()
        );
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: port.to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from_ne_bytes(rx_ip.octets()),
            },
            sin_zero: [0; 8],
        };
        // SAFETY: valid fd and sockaddr_in.
        let rc = unsafe {
            libc::connect(
                fd,
                (&addr as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as u32,
            )
        };
        assert_eq!(rc, 0, "connect: {}", std::io::Error::last_os_error());
        // SAFETY: fd is a connected socket owned by nobody else.
        let mut stream = unsafe { TcpStream::from_raw_fd(fd) };
        let local_port = stream.local_addr().expect("bound").port();
        port_tx.send(local_port).unwrap();
        let chunk = vec![0x5au8; 1 << 16];
        let start = Instant::now();
        while start.elapsed() < duration {
            if stream.write_all(&chunk).is_err() {
                break;
            }
        }
        local_port
    });
    let local_port = port_rx
        .recv_timeout(Duration::from_secs(5))
        .expect("connected");
    during(local_port);
    let local_port = sender.join().expect("sender");
    let received = receiver.join().expect("receiver");
    Transfer {
        local_port,
        received,
    }
}
