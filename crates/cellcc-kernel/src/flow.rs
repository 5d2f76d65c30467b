//! `struct cellcc_flow_key` (bpf/cellcc.h), the key of every per-connection map.

use std::fmt;
use std::net::Ipv4Addr;

use crate::bail;
use crate::error::Result;

/// Size of `struct cellcc_flow_key`: two IPv4 addresses, two ports, 4 bytes of padding.
pub const KEY_SIZE: usize = 16;

/// A connection as its sender sees it (IPv4 only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    /// Local (sender) address.
    pub local_addr: Ipv4Addr,
    /// Remote address.
    pub remote_addr: Ipv4Addr,
    /// Local port.
    pub local_port: u16,
    /// Remote port.
    pub remote_port: u16,
}

impl FlowKey {
    /// The map key: addresses in network order, ports in host order, zero padding.
    pub fn to_bytes(self) -> [u8; KEY_SIZE] {
        let mut b = [0u8; KEY_SIZE];
        b[0..4].copy_from_slice(&self.local_addr.octets());
        b[4..8].copy_from_slice(&self.remote_addr.octets());
        b[8..10].copy_from_slice(&self.local_port.to_ne_bytes());
        b[10..12].copy_from_slice(&self.remote_port.to_ne_bytes());
        b
    }

    /// A key read from a map; `None` if it has the wrong size.
    pub fn from_bytes(b: &[u8]) -> Option<Self> {
        if b.len() != KEY_SIZE {
            return None;
        }
        let addr = |o: usize| Ipv4Addr::new(b[o], b[o + 1], b[o + 2], b[o + 3]);
        let port = |o: usize| u16::from_ne_bytes([b[o], b[o + 1]]);
        Some(FlowKey {
            local_addr: addr(0),
            remote_addr: addr(4),
            local_port: port(8),
            remote_port: port(10),
        })
    }

    /// Parses `LADDR:LPORT-RADDR:RPORT` (`10.0.0.1:40000-10.0.0.2:5201`).
    pub fn parse(s: &str) -> Result<Self> {
        let usage = "expected LADDR:LPORT-RADDR:RPORT, e.g. 10.0.0.1:40000-10.0.0.2:5201";
        let Some((local, remote)) = s.split_once('-') else {
            bail!("flow {s:?}: {usage}");
        };
        let endpoint = |e: &str| -> Result<(Ipv4Addr, u16)> {
            let Some((addr, port)) = e.rsplit_once(':') else {
                bail!("flow {s:?}: {e:?} has no port; {usage}");
            };
            let Ok(addr) = addr.parse::<Ipv4Addr>() else {
                bail!("flow {s:?}: {addr:?} is not an IPv4 address; {usage}");
            };
            let Ok(port) = port.parse::<u16>() else {
                bail!("flow {s:?}: {port:?} is not a port number (0-65535)");
            };
            Ok((addr, port))
        };
        let (local_addr, local_port) = endpoint(local)?;
        let (remote_addr, remote_port) = endpoint(remote)?;
        Ok(FlowKey {
            local_addr,
            remote_addr,
            local_port,
            remote_port,
        })
    }
}

impl fmt::Display for FlowKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}-{}:{}",
            self.local_addr, self.local_port, self.remote_addr, self.remote_port
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_format_and_bytes_round_trip() {
        let k = FlowKey::parse("10.0.0.1:40000-10.0.0.2:5201").unwrap();
        assert_eq!(k.to_string(), "10.0.0.1:40000-10.0.0.2:5201");
        let b = k.to_bytes();
        assert_eq!(&b[0..4], &[10, 0, 0, 1]);
        assert_eq!(&b[12..16], &[0, 0, 0, 0]);
        assert_eq!(FlowKey::from_bytes(&b), Some(k));
    }

    #[test]
    fn bad_flows_are_named() {
        for bad in ["10.0.0.1:1", "x:1-10.0.0.2:2", "10.0.0.1:99999-10.0.0.2:2"] {
            let e = FlowKey::parse(bad).unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
        }
    }
}
