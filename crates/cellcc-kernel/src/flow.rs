//! `struct cellcc_flow_key` (bpf/cellcc.h), the key of every per-connection map.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use crate::bail;
use crate::error::Result;

/// Size of `struct cellcc_flow_key`: two IPv6 addresses, two ports, 4 bytes of padding.
pub(crate) const KEY_SIZE: usize = 40;

/// A connection as its sender sees it. Addresses are kept as the BPF side keeps them:
/// IPv6, with an IPv4 address IPv4-mapped (`::ffff:a.b.c.d`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct FlowKey {
    /// Local (sender) address.
    pub local_addr: Ipv6Addr,
    /// Remote address.
    pub remote_addr: Ipv6Addr,
    /// Local port.
    pub local_port: u16,
    /// Remote port.
    pub remote_port: u16,
}

/// An address as the BPF side stores it.
fn stored(addr: IpAddr) -> Ipv6Addr {
    match addr {
        IpAddr::V4(a) => a.to_ipv6_mapped(),
        IpAddr::V6(a) => a,
    }
}

/// An address and port as written: IPv4-mapped addresses as plain IPv4.
fn shown(addr: Ipv6Addr, port: u16) -> SocketAddr {
    match addr.to_ipv4_mapped() {
        Some(v4) => SocketAddr::new(IpAddr::V4(v4), port),
        None => SocketAddr::new(IpAddr::V6(addr), port),
    }
}

impl FlowKey {
    /// The key of a connection from `local` to `remote`.
    pub(crate) fn new(local: SocketAddr, remote: SocketAddr) -> Self {
        FlowKey {
            local_addr: stored(local.ip()),
            remote_addr: stored(remote.ip()),
            local_port: local.port(),
            remote_port: remote.port(),
        }
    }

    /// The map key: addresses in network order, ports in host order, zero padding.
    pub(crate) fn to_bytes(self) -> [u8; KEY_SIZE] {
        let mut b = [0u8; KEY_SIZE];
        b[0..16].copy_from_slice(&self.local_addr.octets());
        b[16..32].copy_from_slice(&self.remote_addr.octets());
        b[32..34].copy_from_slice(&self.local_port.to_ne_bytes());
        b[34..36].copy_from_slice(&self.remote_port.to_ne_bytes());
        b
    }

    /// A key read from a map; `None` if it has the wrong size.
    pub(crate) fn from_bytes(b: &[u8]) -> Option<Self> {
        if b.len() != KEY_SIZE {
            return None;
        }
        let addr = |o: usize| -> Ipv6Addr {
            let octets: [u8; 16] = b[o..o + 16].try_into().expect("16 bytes");
            Ipv6Addr::from(octets)
        };
        let port = |o: usize| u16::from_ne_bytes([b[o], b[o + 1]]);
        Some(FlowKey {
            local_addr: addr(0),
            remote_addr: addr(16),
            local_port: port(32),
            remote_port: port(34),
        })
    }

    /// Parses `LOCAL-REMOTE`, each `ADDR:PORT` with an IPv4 address or a bracketed IPv6
    /// one: `10.0.0.1:40000-10.0.0.2:5201`, `[fd00::1]:40000-[fd00::2]:5201`.
    pub(crate) fn parse(s: &str) -> Result<Self> {
        let usage = "expected LOCAL-REMOTE as ADDR:PORT each, e.g. 10.0.0.1:40000-10.0.0.2:5201 or [fd00::1]:40000-[fd00::2]:5201";
        let Some((local, remote)) = s.split_once('-') else {
            bail!("flow {s:?}: {usage}");
        };
        let parsed = |e: &str| -> Result<SocketAddr> {
            match e.parse::<SocketAddr>() {
                Ok(a) => Ok(a),
                Err(_) => bail!("flow {s:?}: {e:?} is not ADDR:PORT; {usage}"),
            }
        };
        Ok(FlowKey::new(parsed(local)?, parsed(remote)?))
    }
}

impl fmt::Display for FlowKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}-{}",
            shown(self.local_addr, self.local_port),
            shown(self.remote_addr, self.remote_port)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_parse_format_and_bytes_round_trip() {
        let k = FlowKey::parse("10.0.0.1:40000-10.0.0.2:5201").unwrap();
        assert_eq!(k.to_string(), "10.0.0.1:40000-10.0.0.2:5201");
        let b = k.to_bytes();
        // IPv4-mapped, as bpf/cellcc.h stores it.
        assert_eq!(
            &b[0..16],
            &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1]
        );
        assert_eq!(&b[32..34], &40000u16.to_ne_bytes());
        assert_eq!(&b[36..40], &[0, 0, 0, 0]);
        assert_eq!(FlowKey::from_bytes(&b), Some(k));
    }

    #[test]
    fn ipv6_parse_format_and_bytes_round_trip() {
        let k = FlowKey::parse("[fd00::1]:40000-[fd00::2]:5201").unwrap();
        assert_eq!(k.to_string(), "[fd00::1]:40000-[fd00::2]:5201");
        let b = k.to_bytes();
        assert_eq!(b[0], 0xfd);
        assert_eq!(b[15], 1);
        assert_eq!(b[31], 2);
        assert_eq!(FlowKey::from_bytes(&b), Some(k));
        // A mapped address written as IPv6 is the same connection as its IPv4 form.
        let mapped = FlowKey::parse("[::ffff:10.0.0.1]:1-[::ffff:10.0.0.2]:2").unwrap();
        assert_eq!(mapped, FlowKey::parse("10.0.0.1:1-10.0.0.2:2").unwrap());
    }

    #[test]
    fn bad_flows_are_named() {
        for bad in [
            "10.0.0.1:1",
            "x:1-10.0.0.2:2",
            "10.0.0.1:99999-10.0.0.2:2",
            "fd00::1:1-fd00::2:2",
        ] {
            let e = FlowKey::parse(bad).unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
        }
    }

    #[test]
    fn wrong_key_size_is_none() {
        assert_eq!(FlowKey::from_bytes(&[0u8; 16]), None);
    }
}
