//! TUN offloads, sans-I/O: the virtio-net header that a TUN device opened with
//! `IFF_VNET_HDR` puts before every packet, the segmentation of the TCP super-packets the
//! kernel then hands over (one read instead of up to 44) into the MTU-sized packets the
//! link model serves one by one, and the coalescing of consecutive segments due together
//! back into one super-packet for one write.
//!
//! ```text
//!   read:  [vnet hdr | IP | TCP | 64 KB payload] ─► segment ─► n × [IP | TCP | ≤ mss]
//!   write: consecutive in-order segments of one flow ─► coalesce ─► [vnet hdr | IP | TCP | Σ]
//! ```
//!
//! What the kernel's own TCP segmentation offload does (`tcp_gso_segment`,
//! `inet_gso_segment`), segmentation does: each segment gets the headers of the
//! super-packet with its own IPv4 total length, id (the first's + i) and header checksum
//! (or IPv6 payload length), sequence number (the first's + i × mss), CWR only on the
//! first segment and FIN and PSH only on the last. The TCP checksum is left to the
//! receiver as the kernel leaves it to a NIC: `VIRTIO_NET_HDR_F_NEEDS_CSUM` with the
//! pseudo-header sum in the checksum field (`CHECKSUM_PARTIAL`; a packet delivered
//! locally with it is not verified, as over loopback or veth).
//!
//! Coalescing is the receive side's GRO (`tcp_gro_receive`): a run of segments merges when
//! every one carries only ACK (PSH allowed on the last), the same addresses, ports, ACK
//! number, window and TCP options byte for byte, contiguous sequence numbers, and the
//! same payload length as the first except a shorter last one. Anything else (SYN, FIN,
//! RST, CWR/ECE, UDP, ICMP, IP options or fragments, packets without a partial checksum)
//! is written as it was read.

use std::fmt;

/// `linux/virtio_net.h`: `sizeof(struct virtio_net_hdr)`, the TUN default
/// (`TUNSETVNETHDRSZ`), without the `num_buffers` field of the mergeable variant.
pub const VNET_HDR_LEN: usize = 10;
/// `VIRTIO_NET_HDR_F_NEEDS_CSUM`: the checksum at `csum_start + csum_offset` holds the
/// pseudo-header sum; the rest is summed from `csum_start` on.
const F_NEEDS_CSUM: u8 = 1;
/// `VIRTIO_NET_HDR_GSO_*`.
const GSO_NONE: u8 = 0;
const GSO_TCPV4: u8 = 1;
const GSO_TCPV6: u8 = 4;
/// `VIRTIO_NET_HDR_GSO_ECN`: the super-packet carries CWR (on its first segment only).
const GSO_ECN: u8 = 0x80;
const IPPROTO_TCP: u8 = 6;
const IPV4_HDR_MIN: usize = 20;
const IPV6_HDR: usize = 40;
const TCP_HDR_MIN: usize = 20;
/// Offset of the checksum in the TCP header (RFC 9293 §3.1).
const TCP_CHECK: usize = 16;
// TCP flags (RFC 9293 §3.1, RFC 3168 §6.1).
const FIN: u8 = 0x01;
const PSH: u8 = 0x08;
const ACK: u8 = 0x10;
const CWR: u8 = 0x80;
/// Largest coalesced IP packet: the 16-bit IPv4 total length (for IPv6 the same bound
/// keeps the payload length within its 16 bits too), as `gso_max_size` of a TUN device.
const MAX_COALESCED: usize = 65_535;

/// `struct virtio_net_hdr`, in the host's byte order (legacy virtio: TUN uses native
/// endianness unless told otherwise).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VnetHdr {
    /// `VIRTIO_NET_HDR_F_*`.
    pub flags: u8,
    /// `VIRTIO_NET_HDR_GSO_*`.
    pub gso_type: u8,
    /// Length of the headers (IP + TCP) of a super-packet.
    pub hdr_len: u16,
    /// Payload bytes per segment of a super-packet.
    pub gso_size: u16,
    /// Where checksumming starts (the transport header).
    pub csum_start: u16,
    /// Where the checksum is stored, from `csum_start`.
    pub csum_offset: u16,
}

impl VnetHdr {
    /// The header at the front of `bytes`, if there are enough.
    pub fn parse(bytes: &[u8]) -> Option<VnetHdr> {
        let b = bytes.get(..VNET_HDR_LEN)?;
        let u16_at = |i: usize| u16::from_ne_bytes([b[i], b[i + 1]]);
        Some(VnetHdr {
            flags: b[0],
            gso_type: b[1],
            hdr_len: u16_at(2),
            gso_size: u16_at(4),
            csum_start: u16_at(6),
            csum_offset: u16_at(8),
        })
    }

    /// The header as the TUN device reads it.
    pub fn to_bytes(self) -> [u8; VNET_HDR_LEN] {
        let mut b = [0u8; VNET_HDR_LEN];
        b[0] = self.flags;
        b[1] = self.gso_type;
        b[2..4].copy_from_slice(&self.hdr_len.to_ne_bytes());
        b[4..6].copy_from_slice(&self.gso_size.to_ne_bytes());
        b[6..8].copy_from_slice(&self.csum_start.to_ne_bytes());
        b[8..10].copy_from_slice(&self.csum_offset.to_ne_bytes());
        b
    }

    /// Whether the packet is a super-packet to segment.
    pub fn is_gso(self) -> bool {
        self.gso_type != GSO_NONE
    }

    /// One TCP packet whose checksum the receiver completes.
    fn tcp_partial(ip_hdr: usize) -> VnetHdr {
        VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: GSO_NONE,
            hdr_len: 0,
            gso_size: 0,
            csum_start: ip_hdr as u16,
            csum_offset: TCP_CHECK as u16,
        }
    }
}

/// One IP packet with the virtio-net header it is written with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    /// How the receiving kernel treats it (all zeros without offloads).
    pub hdr: VnetHdr,
    /// The IP packet.
    pub ip: Vec<u8>,
}

/// Why a super-packet could not be segmented (it is then dropped and counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentError {
    /// A GSO type other than TCP over IPv4 or IPv6.
    UnsupportedGso(u8),
    /// The headers do not describe a TCP packet of that IP version, or no segment size.
    Malformed(&'static str),
}

impl fmt::Display for SegmentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SegmentError::UnsupportedGso(t) => write!(f, "unsupported GSO type {t:#x}"),
            SegmentError::Malformed(why) => write!(f, "malformed super-packet: {why}"),
        }
    }
}

/// Where the headers of a TCP packet end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct TcpLayout {
    v6: bool,
    /// IP header length.
    ip_hdr: usize,
    /// IP + TCP header length.
    hdrs: usize,
}

/// The layout of `ip` if it is a TCP packet over IPv4 (any options) or IPv6 (no
/// extension headers).
fn tcp_layout(ip: &[u8]) -> Option<TcpLayout> {
    let (v6, ip_hdr) = match ip.first()? >> 4 {
        4 => {
            let ihl = usize::from(ip[0] & 0x0f) * 4;
            if ihl < IPV4_HDR_MIN || *ip.get(9)? != IPPROTO_TCP {
                return None;
            }
            (false, ihl)
        }
        6 => {
            if *ip.get(6)? != IPPROTO_TCP {
                return None;
            }
            (true, IPV6_HDR)
        }
        _ => return None,
    };
    let doff = usize::from(*ip.get(ip_hdr + 12)? >> 4) * 4;
    let hdrs = ip_hdr + doff;
    (doff >= TCP_HDR_MIN && hdrs <= ip.len()).then_some(TcpLayout { v6, ip_hdr, hdrs })
}

/// Splits the packet read with `hdr` into the packets the link model carries, handing
/// each to `out`; returns how many. A packet that is not a super-packet is handed over
/// as it is, header and all.
pub fn segment(
    hdr: VnetHdr,
    ip: &[u8],
    mut out: impl FnMut(Packet),
) -> Result<usize, SegmentError> {
    if !hdr.is_gso() {
        out(Packet {
            hdr,
            ip: ip.to_vec(),
        });
        return Ok(1);
    }
    let layout = tcp_layout(ip).ok_or(SegmentError::Malformed("not a TCP packet"))?;
    match (hdr.gso_type & !GSO_ECN, layout.v6) {
        (GSO_TCPV4, false) | (GSO_TCPV6, true) => {}
        (GSO_TCPV4 | GSO_TCPV6, _) => {
            return Err(SegmentError::Malformed("GSO type and IP version differ"))
        }
        (other, _) => return Err(SegmentError::UnsupportedGso(other)),
    }
    let mss = usize::from(hdr.gso_size);
    if mss == 0 {
        return Err(SegmentError::Malformed("segment size 0"));
    }
    let (headers, payload) = ip.split_at(layout.hdrs);
    let seq0 = be32(&headers[layout.ip_hdr + 4..]);
    let id0 = u16::from_be_bytes([headers[4], headers[5]]);
    // A super-packet without payload (never made by the kernel) stays one packet.
    let count = payload.len().div_ceil(mss).max(1);
    for i in 0..count {
        let chunk = &payload[i * mss..((i + 1) * mss).min(payload.len())];
        let mut seg = Vec::with_capacity(headers.len() + chunk.len());
        seg.extend_from_slice(headers);
        seg.extend_from_slice(chunk);
        let tcp = layout.ip_hdr;
        let seq = seq0.wrapping_add((i * mss) as u32);
        seg[tcp + 4..tcp + 8].copy_from_slice(&seq.to_be_bytes());
        let mut flags = seg[tcp + 13];
        if i > 0 {
            flags &= !CWR;
        }
        if i + 1 < count {
            flags &= !(FIN | PSH);
        }
        seg[tcp + 13] = flags;
        let id = id0.wrapping_add(i as u16);
        finish_headers(&mut seg, layout, id);
        out(Packet {
            hdr: VnetHdr::tcp_partial(layout.ip_hdr),
            ip: seg,
        });
    }
    Ok(count)
}

/// Sets the IP length fields of `ip` from its length (and the IPv4 id and header
/// checksum), and the TCP checksum field to the pseudo-header sum.
fn finish_headers(ip: &mut [u8], layout: TcpLayout, id: u16) {
    let len = ip.len();
    if layout.v6 {
        ip[4..6].copy_from_slice(&((len - IPV6_HDR) as u16).to_be_bytes());
    } else {
        ip[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        ip[4..6].copy_from_slice(&id.to_be_bytes());
        ip[10..12].copy_from_slice(&[0, 0]);
        let check = !fold(sum16(&ip[..layout.ip_hdr], 0));
        ip[10..12].copy_from_slice(&check.to_be_bytes());
    }
    let partial = fold(pseudo_header_sum(ip, layout));
    let at = layout.ip_hdr + TCP_CHECK;
    ip[at..at + 2].copy_from_slice(&partial.to_be_bytes());
}

/// The pseudo-header sum of the TCP segment in `ip` (RFC 9293 §3.1, RFC 8200 §8.1).
fn pseudo_header_sum(ip: &[u8], layout: TcpLayout) -> u64 {
    let tcp_len = (ip.len() - layout.ip_hdr) as u64;
    let addrs = if layout.v6 { &ip[8..40] } else { &ip[12..20] };
    sum16(addrs, u64::from(IPPROTO_TCP) + tcp_len)
}

/// The ones' complement sum of `data` as big-endian 16-bit words, unfolded.
fn sum16(data: &[u8], init: u64) -> u64 {
    let mut sum = init;
    let mut words = data.chunks_exact(2);
    for w in &mut words {
        sum += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        sum += u64::from(*last) << 8;
    }
    sum
}

/// Folds a sum into 16 bits with end-around carry.
fn fold(mut sum: u64) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// A packet that may start or join a coalesced run: TCP with a partial checksum, only
/// ACK (and PSH) set, no IPv4 options or fragmentation.
fn coalescible(p: &Packet) -> Option<TcpLayout> {
    let h = p.hdr;
    if h.is_gso() || h.flags & F_NEEDS_CSUM == 0 || usize::from(h.csum_offset) != TCP_CHECK {
        return None;
    }
    let layout = tcp_layout(&p.ip)?;
    if usize::from(h.csum_start) != layout.ip_hdr {
        return None;
    }
    if !layout.v6
        && (layout.ip_hdr != IPV4_HDR_MIN
            || usize::from(u16::from_be_bytes([p.ip[2], p.ip[3]])) != p.ip.len()
            || u16::from_be_bytes([p.ip[6], p.ip[7]]) & 0x3fff != 0)
    {
        return None;
    }
    if layout.v6 && usize::from(u16::from_be_bytes([p.ip[4], p.ip[5]])) + IPV6_HDR != p.ip.len() {
        return None;
    }
    let flags = p.ip[layout.ip_hdr + 13];
    (flags & !PSH == ACK).then_some(layout)
}

/// Whether `p` has the same flow, ACK, window and options as `first` (both coalescible
/// with the same layout): the bytes GRO compares.
fn same_flow(first: &[u8], p: &[u8], layout: TcpLayout) -> bool {
    let t = layout.ip_hdr;
    let ip_same = if layout.v6 {
        first[..4] == p[..4] && first[6..40] == p[6..40]
    } else {
        first[..2] == p[..2] && first[6..10] == p[6..10] && first[12..20] == p[12..20]
    };
    ip_same
        && first[t..t + 4] == p[t..t + 4] // ports
        && first[t + 8..t + 13] == p[t + 8..t + 13] // ACK number, data offset
        && first[t + 14..t + 16] == p[t + 14..t + 16] // window
        && first[t + 18..layout.hdrs] == p[t + 18..layout.hdrs] // urgent pointer, options
}

/// How many packets from the start of `packets` can be written as one super-packet: 1
/// when the first cannot start a run.
pub fn run_length<'a>(mut packets: impl Iterator<Item = &'a Packet>) -> usize {
    let Some(first) = packets.next() else {
        return 0;
    };
    let Some(layout) = coalescible(first) else {
        return 1;
    };
    let mss = first.ip.len() - layout.hdrs;
    let t = layout.ip_hdr;
    if mss == 0 || first.ip[t + 13] & PSH != 0 {
        return 1;
    }
    let mut next_seq = be32(&first.ip[t + 4..]).wrapping_add(mss as u32);
    let (mut count, mut total) = (1, first.ip.len());
    for p in packets {
        if coalescible(p) != Some(layout) || !same_flow(&first.ip, &p.ip, layout) {
            break;
        }
        let len = p.ip.len() - layout.hdrs;
        if len == 0 || len > mss || be32(&p.ip[t + 4..]) != next_seq || total + len > MAX_COALESCED
        {
            break;
        }
        count += 1;
        total += len;
        next_seq = next_seq.wrapping_add(len as u32);
        // A short or pushed segment ends the run, as it ends a GRO flow.
        if len < mss || p.ip[t + 13] & PSH != 0 {
            break;
        }
    }
    count
}

/// Writes the `run` (the packets [`run_length`] counted, at least 2) into `out` as one
/// super-packet with its virtio-net header in front.
pub fn coalesce<'a>(mut run: impl Iterator<Item = &'a Packet>, out: &mut Vec<u8>) {
    let first = run.next().expect("a run has a first packet");
    let layout = tcp_layout(&first.ip).expect("run_length accepted only TCP packets");
    let mss = first.ip.len() - layout.hdrs;
    let hdr = VnetHdr {
        flags: F_NEEDS_CSUM,
        gso_type: if layout.v6 { GSO_TCPV6 } else { GSO_TCPV4 },
        hdr_len: layout.hdrs as u16,
        gso_size: mss as u16,
        csum_start: layout.ip_hdr as u16,
        csum_offset: TCP_CHECK as u16,
    };
    out.clear();
    out.extend_from_slice(&hdr.to_bytes());
    out.extend_from_slice(&first.ip);
    let mut last_flags = first.ip[layout.ip_hdr + 13];
    for p in run {
        out.extend_from_slice(&p.ip[layout.hdrs..]);
        last_flags = p.ip[layout.ip_hdr + 13];
    }
    let ip = &mut out[VNET_HDR_LEN..];
    ip[layout.ip_hdr + 13] |= last_flags & PSH;
    let id = u16::from_be_bytes([ip[4], ip[5]]);
    finish_headers(ip, layout, id);
}

#[cfg(test)]
#[path = "offload_tests.rs"]
mod tests;
