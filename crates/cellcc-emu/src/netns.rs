//! The emulator's two network namespaces, each with one TUN device.
//!
//! ```text
//!   "server" namespace                          "client" namespace
//!   ┌──────────────────────┐                    ┌──────────────────────┐
//!   │ server command       │                    │ client command       │
//!   │ tun "emu-server"     │   downlink ──►     │ tun "emu-client"     │
//!   │ 10.64.0.1 peer .2    │   ◄── uplink       │ 10.64.0.2 peer .1    │
//!   └─────────┬────────────┘                    └──────────┬───────────┘
//!             └──── fd ──── cellcc-emu (root namespace) ──── fd ────┘
//! ```
//!
//! Each namespace is created unnamed, by `unshare(CLONE_NEWNET)` in a short-lived thread,
//! and is held only by file descriptors of the emulator (the namespace's own fd and the
//! TUN device's fd, both close-on-exec) and by the commands running inside. The TUN
//! devices are not persistent: closing their fd deletes them. So when the emulator exits,
//! however it exits (even SIGKILL), the devices vanish and each namespace is freed with
//! its last process; nothing is ever named in the root namespace, no `ip netns` entry and
//! no mount are made, and no firewall rule is added.
//!
//! Interfaces are configured with `ioctl`s on a socket opened inside the namespace
//! (address, point-to-point peer, /32 netmask, `txqueuelen`, up; loopback up), so no
//! external tool is needed.

use std::ffi::CStr;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use crate::sys;

/// TX queue length given to each TUN device. The default (500) makes the device drop
/// packets silently whenever the emulator falls behind for a moment, so that the
/// kernel's queue, not the emulated one, would decide the losses.
pub const TUN_TXQUEUELEN: i32 = 10_000;

/// Name of the TUN device in the server namespace.
pub const SERVER_TUN: &str = "emu-server";
/// Name of the TUN device in the client namespace.
pub const CLIENT_TUN: &str = "emu-client";

/// `linux/if.h`: IFNAMSIZ.
const IFNAMSIZ: usize = libc::IFNAMSIZ;
// `linux/if_tun.h` and `linux/sockios.h`, from libc so the encodings match the target.
const TUNSETIFF: libc::c_ulong = libc::TUNSETIFF as libc::c_ulong;
const IFF_TUN: libc::c_short = libc::IFF_TUN as libc::c_short;
const IFF_NO_PI: libc::c_short = libc::IFF_NO_PI as libc::c_short;
const IFF_VNET_HDR: libc::c_short = libc::IFF_VNET_HDR as libc::c_short;
const TUNSETOFFLOAD: libc::c_ulong = libc::TUNSETOFFLOAD as libc::c_ulong;
/// What the emulator takes from the kernel with offloads on: packets with a partial
/// checksum, and TCP super-packets over IPv4 and IPv6 (with CWR), which it segments
/// (`crate::offload`). No UDP segmentation offload: UDP stays one datagram per packet.
const TUN_OFFLOADS: libc::c_uint =
    libc::TUN_F_CSUM | libc::TUN_F_TSO4 | libc::TUN_F_TSO6 | libc::TUN_F_TSO_ECN;
const SIOCGIFFLAGS: libc::c_ulong = libc::SIOCGIFFLAGS as libc::c_ulong;
const SIOCSIFFLAGS: libc::c_ulong = libc::SIOCSIFFLAGS as libc::c_ulong;
const SIOCSIFADDR: libc::c_ulong = libc::SIOCSIFADDR as libc::c_ulong;
const SIOCSIFDSTADDR: libc::c_ulong = libc::SIOCSIFDSTADDR as libc::c_ulong;
const SIOCSIFNETMASK: libc::c_ulong = libc::SIOCSIFNETMASK as libc::c_ulong;
const SIOCGIFINDEX: libc::c_ulong = libc::SIOCGIFINDEX as libc::c_ulong;
// `linux/netlink.h` and `linux/rtnetlink.h`.
const RTM_NEWLINK: u16 = 16;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_ACK: u16 = 0x4;
const NLMSG_ERROR: u16 = 0x2;
const IFLA_TXQLEN: u16 = 13;

/// `struct ifreq`: a name and a 24-byte union, of which we use the sockaddr, the flags
/// (`short`) and the queue length (`int`) members.
#[repr(C)]
struct IfReq {
    name: [u8; IFNAMSIZ],
    data: [u8; 24],
}

impl IfReq {
    fn new(name: &str) -> io::Result<IfReq> {
        let bytes = name.as_bytes();
        if bytes.len() >= IFNAMSIZ || bytes.contains(&0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("interface name {name:?} must be 1 to 15 bytes"),
            ));
        }
        let mut req = IfReq {
            name: [0; IFNAMSIZ],
            data: [0; 24],
        };
        req.name[..bytes.len()].copy_from_slice(bytes);
        Ok(req)
    }

    fn set_short(&mut self, v: libc::c_short) {
        self.data[..2].copy_from_slice(&v.to_ne_bytes());
    }

    fn short(&self) -> libc::c_short {
        libc::c_short::from_ne_bytes([self.data[0], self.data[1]])
    }

    fn int(&self) -> libc::c_int {
        libc::c_int::from_ne_bytes([self.data[0], self.data[1], self.data[2], self.data[3]])
    }

    fn set_addr(&mut self, addr: Ipv4Addr) {
        // struct sockaddr_in: family (host order), port, address (network order).
        self.data = [0; 24];
        self.data[..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
        self.data[4..8].copy_from_slice(&addr.octets());
    }
}

fn ioctl(
    fd: BorrowedFd<'_>,
    request: libc::c_ulong,
    req: &mut IfReq,
    what: &str,
) -> io::Result<()> {
    // SAFETY: `req` is a valid, writable ifreq-sized buffer for these requests.
    let ret = unsafe { libc::ioctl(fd.as_raw_fd(), request as _, req as *mut IfReq) };
    if ret < 0 {
        let err = io::Error::last_os_error();
        return Err(io::Error::new(err.kind(), format!("{what}: {err}")));
    }
    Ok(())
}

/// A route netlink request `RTM_NEWLINK` that sets one device's `IFLA_TXQLEN`.
#[repr(C)]
struct TxQueueLenRequest {
    // struct nlmsghdr
    len: u32,
    kind: u16,
    flags: u16,
    seq: u32,
    pid: u32,
    // struct ifinfomsg
    family: u8,
    pad: u8,
    device_type: u16,
    index: i32,
    device_flags: u32,
    change: u32,
    // struct rtattr + u32
    attr_len: u16,
    attr_kind: u16,
    value: u32,
}

/// Sets the transmit queue length of device `index` in the calling thread's namespace
/// through route netlink. Not the `SIOCSIFTXQLEN` ioctl: that one wants `CAP_NET_ADMIN`
/// in the initial user namespace, which rootless mode does not have; netlink checks the
/// capability in the namespace's own user namespace.
fn set_txqueuelen(index: libc::c_int, len: u32) -> io::Result<()> {
    // SAFETY: plain system call.
    let raw = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::NETLINK_ROUTE,
        )
    };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: freshly created descriptor.
    let sock = unsafe { OwnedFd::from_raw_fd(raw) };
    let req = TxQueueLenRequest {
        len: std::mem::size_of::<TxQueueLenRequest>() as u32,
        kind: RTM_NEWLINK,
        flags: NLM_F_REQUEST | NLM_F_ACK,
        seq: 1,
        pid: 0,
        family: libc::AF_UNSPEC as u8,
        pad: 0,
        device_type: 0,
        index,
        device_flags: 0,
        change: 0,
        attr_len: 8,
        attr_kind: IFLA_TXQLEN,
        value: len,
    };
    // SAFETY: `req` is valid for its size; the kernel is the destination (no address).
    let sent = unsafe {
        libc::send(
            sock.as_raw_fd(),
            (&req as *const TxQueueLenRequest).cast(),
            std::mem::size_of::<TxQueueLenRequest>(),
            0,
        )
    };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    // The acknowledgement: nlmsghdr (16 bytes) of type NLMSG_ERROR, then the error code
    // (0 for success, else −errno) and the request's header.
    let mut reply = [0u8; 256];
    // SAFETY: `reply` is valid for its length.
    let n = unsafe { libc::recv(sock.as_raw_fd(), reply.as_mut_ptr().cast(), reply.len(), 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    if n < 20 || u16::from_ne_bytes([reply[4], reply[5]]) != NLMSG_ERROR {
        return Err(io::Error::other("unexpected route netlink reply"));
    }
    let error = i32::from_ne_bytes([reply[16], reply[17], reply[18], reply[19]]);
    if error != 0 {
        return Err(io::Error::from_raw_os_error(-error));
    }
    Ok(())
}

/// One end of the emulated path: a network namespace and its TUN device.
#[derive(Debug)]
pub struct Endpoint {
    /// `/proc/thread-self/ns/net` of the namespace, opened while inside it.
    pub ns: OwnedFd,
    /// The TUN device (non-blocking): reading gives the packets the namespace sends to
    /// its peer, writing injects packets into the namespace.
    pub tun: OwnedFd,
    /// Name of the TUN device inside the namespace.
    pub tun_name: &'static str,
    /// This end's address.
    pub addr: Ipv4Addr,
    /// The other end's address (the TUN device's point-to-point peer).
    pub peer: Ipv4Addr,
    /// Whether the device was opened with offloads: every packet read or written has a
    /// virtio-net header in front (`crate::offload`).
    pub offload: bool,
    /// The namespace's inode (`net:[INODE]`), for diagnostics and leak checks.
    pub ns_inode: u64,
}

/// Creates a fresh namespace with a configured TUN device, from a new thread so the
/// caller's namespace never changes. On error everything made so far is released (the
/// file descriptors close, the device and the namespace vanish).
/// With `offload`, the device hands over TCP super-packets and packets with partial
/// checksums, each behind a virtio-net header, and takes them so.
pub fn create_endpoint(
    tun_name: &'static str,
    addr: Ipv4Addr,
    peer: Ipv4Addr,
    offload: bool,
) -> io::Result<Endpoint> {
    let handle = std::thread::Builder::new()
        .name(format!("netns-{tun_name}"))
        .spawn(move || setup_in_new_namespace(tun_name, addr, peer, offload))?;
    handle
        .join()
        .map_err(|_| io::Error::other("namespace setup thread panicked"))?
}

fn setup_in_new_namespace(
    tun_name: &'static str,
    addr: Ipv4Addr,
    peer: Ipv4Addr,
    offload: bool,
) -> io::Result<Endpoint> {
    sys::unshare_net().map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("unshare(CLONE_NEWNET): {e} (the emulator needs root, or user namespaces for rootless mode)"),
        )
    })?;
    let ns = sys::open(c"/proc/thread-self/ns/net", libc::O_RDONLY)
        .map_err(|e| io::Error::new(e.kind(), format!("opening the new namespace: {e}")))?;
    let tun = open_tun(tun_name, offload)?;
    // A socket created now belongs to this thread's (new) namespace.
    // SAFETY: plain system call.
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: freshly created descriptor.
    let sock = unsafe { OwnedFd::from_raw_fd(raw) };
    let s = sock.as_fd();

    let mut req = IfReq::new("lo")?;
    ioctl(s, SIOCGIFFLAGS, &mut req, "reading loopback flags")?;
    let flags = req.short() | libc::IFF_UP as libc::c_short;
    req.set_short(flags);
    ioctl(s, SIOCSIFFLAGS, &mut req, "bringing loopback up")?;

    let mut req = IfReq::new(tun_name)?;
    req.set_addr(addr);
    ioctl(s, SIOCSIFADDR, &mut req, "setting the TUN address")?;
    req.set_addr(peer);
    ioctl(s, SIOCSIFDSTADDR, &mut req, "setting the TUN peer address")?;
    req.set_addr(Ipv4Addr::BROADCAST);
    ioctl(s, SIOCSIFNETMASK, &mut req, "setting the TUN netmask")?;
    let mut req = IfReq::new(tun_name)?;
    ioctl(s, SIOCGIFINDEX, &mut req, "reading the TUN index")?;
    set_txqueuelen(req.int(), TUN_TXQUEUELEN as u32)
        .map_err(|e| io::Error::new(e.kind(), format!("raising the TUN txqueuelen: {e}")))?;
    let mut req = IfReq::new(tun_name)?;
    ioctl(s, SIOCGIFFLAGS, &mut req, "reading the TUN flags")?;
    let flags = req.short() | (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
    req.set_short(flags);
    ioctl(s, SIOCSIFFLAGS, &mut req, "bringing the TUN device up")?;

    let ns_inode = sys::inode(ns.as_fd())?;
    Ok(Endpoint {
        ns,
        tun,
        tun_name,
        addr,
        peer,
        offload,
        ns_inode,
    })
}

/// Opens `/dev/net/tun` and attaches a new non-persistent TUN device (no packet
/// information header) in the calling thread's namespace; with `offload`, with a
/// virtio-net header and [`TUN_OFFLOADS`].
fn open_tun(name: &str, offload: bool) -> io::Result<OwnedFd> {
    const DEV: &CStr = c"/dev/net/tun";
    let fd = sys::open(DEV, libc::O_RDWR | libc::O_NONBLOCK).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("opening /dev/net/tun: {e} (is the tun module available?)"),
        )
    })?;
    let mut req = IfReq::new(name)?;
    let vnet = if offload { IFF_VNET_HDR } else { 0 };
    req.set_short(IFF_TUN | IFF_NO_PI | vnet);
    ioctl(
        fd.as_fd(),
        TUNSETIFF,
        &mut req,
        "creating the TUN device (TUNSETIFF)",
    )?;
    if offload {
        // SAFETY: TUNSETOFFLOAD takes the flags as the integer argument itself.
        let ret = unsafe {
            libc::ioctl(
                fd.as_raw_fd(),
                TUNSETOFFLOAD as _,
                TUN_OFFLOADS as libc::c_ulong,
            )
        };
        if ret < 0 {
            let err = io::Error::last_os_error();
            return Err(io::Error::new(
                err.kind(),
                format!("enabling TUN offloads (TUNSETOFFLOAD): {err} (--no-offload runs without)"),
            ));
        }
    }
    Ok(fd)
}

/// The `nsenter` command that enters the namespace held by descriptor `fd` of this
/// process.
pub fn nsenter_hint(fd: BorrowedFd<'_>) -> String {
    format!(
        "nsenter --net=/proc/{}/fd/{}",
        std::process::id(),
        fd.as_raw_fd()
    )
}
