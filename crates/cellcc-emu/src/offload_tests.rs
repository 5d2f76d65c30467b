//! Segmentation and coalescing against straightforward full computations.

use super::*;

const MSS: usize = 1448;
/// TCP header with the timestamps option (NOP, NOP, TS): 32 bytes, as Linux sends.
const TCP_HDR: usize = 32;

/// A straightforward Internet checksum (RFC 1071): the complement of the folded sum of
/// 16-bit big-endian words, an odd byte padded with zero.
fn reference_checksum(parts: &[&[u8]]) -> u16 {
    let bytes: Vec<u8> = parts.concat();
    let mut sum: u32 = 0;
    for i in (0..bytes.len()).step_by(2) {
        let hi = u32::from(bytes[i]) << 8;
        let lo = bytes.get(i + 1).map_or(0, |&b| u32::from(b));
        sum += hi | lo;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The TCP checksum of the segment in `ip`, computed from scratch (field taken as 0).
fn reference_tcp_checksum(ip: &[u8], ip_hdr: usize, v6: bool) -> u16 {
    let mut tcp = ip[ip_hdr..].to_vec();
    tcp[16] = 0;
    tcp[17] = 0;
    let len = tcp.len() as u32;
    let pseudo: Vec<u8> = if v6 {
        [&ip[8..40], &len.to_be_bytes()[..], &[0, 0, 0, 6]].concat()
    } else {
        [&ip[12..20], &[0, 6], &(len as u16).to_be_bytes()[..]].concat()
    };
    reference_checksum(&[&pseudo, &tcp])
}

/// What a NIC (or the kernel's `skb_checksum_help`) does with a partial checksum: sums
/// from `csum_start` to the end, the field included, and stores the complement.
fn complete_partial(p: &Packet) -> Vec<u8> {
    assert_eq!(p.hdr.flags & F_NEEDS_CSUM, F_NEEDS_CSUM);
    let mut ip = p.ip.clone();
    let start = usize::from(p.hdr.csum_start);
    let at = start + usize::from(p.hdr.csum_offset);
    let check = !fold(sum16(&ip[start..], 0));
    ip[at..at + 2].copy_from_slice(&check.to_be_bytes());
    ip
}

fn tcp_header(seq: u32, flags: u8) -> Vec<u8> {
    let mut t = vec![0u8; TCP_HDR];
    t[0..2].copy_from_slice(&5201u16.to_be_bytes());
    t[2..4].copy_from_slice(&40_000u16.to_be_bytes());
    t[4..8].copy_from_slice(&seq.to_be_bytes());
    t[8..12].copy_from_slice(&77u32.to_be_bytes());
    t[12] = ((TCP_HDR / 4) as u8) << 4;
    t[13] = flags;
    t[14..16].copy_from_slice(&512u16.to_be_bytes());
    t[16..18].copy_from_slice(&0xbeefu16.to_be_bytes()); // stale: must be rewritten
    t[20..32].copy_from_slice(&[1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 5]);
    t
}

fn ipv4(tcp: &[u8], payload: &[u8], id: u16) -> Vec<u8> {
    let mut ip = vec![0x45, 0x02, 0, 0, 0, 0, 0x40, 0, 64, 6, 0x12, 0x34];
    ip.extend_from_slice(&[10, 64, 0, 1, 10, 64, 0, 2]);
    let len = (20 + tcp.len() + payload.len()) as u16;
    ip[2..4].copy_from_slice(&len.to_be_bytes());
    ip[4..6].copy_from_slice(&id.to_be_bytes());
    [ip, tcp.to_vec(), payload.to_vec()].concat()
}

fn ipv6(tcp: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut ip = vec![0x60, 0, 0, 0, 0, 0, 6, 64];
    ip[4..6].copy_from_slice(&((tcp.len() + payload.len()) as u16).to_be_bytes());
    ip.extend((0..16).map(|i| 0x20 + i as u8));
    ip.extend((0..16).map(|i| 0x40 + i as u8));
    [ip, tcp.to_vec(), payload.to_vec()].concat()
}

fn payload(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

fn gso(gso_type: u8, ip_hdr: usize) -> VnetHdr {
    VnetHdr {
        flags: F_NEEDS_CSUM,
        gso_type,
        hdr_len: (ip_hdr + TCP_HDR) as u16,
        gso_size: MSS as u16,
        csum_start: ip_hdr as u16,
        csum_offset: 16,
    }
}

fn split(hdr: VnetHdr, ip: &[u8]) -> Vec<Packet> {
    let mut out = Vec::new();
    let n = segment(hdr, ip, |p| out.push(p)).unwrap();
    assert_eq!(n, out.len());
    out
}

#[test]
fn vnet_header_round_trips() {
    let h = gso(GSO_TCPV4 | GSO_ECN, 20);
    assert_eq!(VnetHdr::parse(&h.to_bytes()), Some(h));
    assert_eq!(VnetHdr::parse(&[0; 9]), None);
}

#[test]
fn an_ipv4_super_packet_splits_like_the_kernels_tso() {
    let data = payload(3 * MSS + 100);
    let seq0 = 0xffff_f000; // wraps inside the super-packet
    let ip = ipv4(&tcp_header(seq0, ACK | PSH | FIN), &data, 0xfffe);
    let segs = split(gso(GSO_TCPV4, 20), &ip);
    assert_eq!(segs.len(), 4);
    let mut rebuilt = Vec::new();
    for (i, s) in segs.iter().enumerate() {
        let last = i == 3;
        let want_len = 20 + TCP_HDR + if last { 100 } else { MSS };
        assert_eq!(s.ip.len(), want_len);
        assert_eq!(
            usize::from(u16::from_be_bytes([s.ip[2], s.ip[3]])),
            want_len
        );
        assert_eq!(
            u16::from_be_bytes([s.ip[4], s.ip[5]]),
            0xfffeu16.wrapping_add(i as u16)
        );
        assert_eq!(reference_checksum(&[&s.ip[..20]]), 0, "IP header checksum");
        let seq = be32(&s.ip[24..]);
        assert_eq!(seq, seq0.wrapping_add((i * MSS) as u32));
        let flags = s.ip[33];
        assert_eq!(flags, if last { ACK | PSH | FIN } else { ACK });
        assert_eq!(s.hdr, VnetHdr::tcp_partial(20));
        let done = complete_partial(s);
        let want = reference_tcp_checksum(&s.ip, 20, false);
        assert_eq!(
            u16::from_be_bytes([done[36], done[37]]),
            want,
            "segment {i}"
        );
        // Every other byte is the super-packet's.
        assert_eq!(s.ip[..2], ip[..2]);
        assert_eq!(s.ip[6..10], ip[6..10]);
        assert_eq!(s.ip[12..24], ip[12..24]);
        assert_eq!(s.ip[28..33], ip[28..33]);
        assert_eq!(s.ip[34..36], ip[34..36]);
        assert_eq!(s.ip[38..52], ip[38..52]);
        rebuilt.extend_from_slice(&s.ip[52..]);
    }
    assert_eq!(rebuilt, data);
}

#[test]
fn cwr_stays_on_the_first_segment_only() {
    let ip = ipv4(&tcp_header(1, ACK | CWR | PSH), &payload(2 * MSS), 1);
    let segs = split(gso(GSO_TCPV4 | GSO_ECN, 20), &ip);
    let flags: Vec<u8> = segs.iter().map(|s| s.ip[33]).collect();
    assert_eq!(flags, [ACK | CWR, ACK | PSH]);
}

#[test]
fn an_ipv6_super_packet_splits_with_payload_lengths_and_checksums() {
    let data = payload(2 * MSS + 1); // an odd last segment
    let ip = ipv6(&tcp_header(1000, ACK), &data);
    let segs = split(gso(GSO_TCPV6, 40), &ip);
    assert_eq!(segs.len(), 3);
    for (i, s) in segs.iter().enumerate() {
        let len = if i == 2 { 1 } else { MSS };
        assert_eq!(s.ip.len(), 40 + TCP_HDR + len);
        assert_eq!(
            usize::from(u16::from_be_bytes([s.ip[4], s.ip[5]])),
            TCP_HDR + len
        );
        assert_eq!(be32(&s.ip[44..]), 1000 + (i * MSS) as u32);
        let done = complete_partial(s);
        let want = reference_tcp_checksum(&s.ip, 40, true);
        assert_eq!(
            u16::from_be_bytes([done[56], done[57]]),
            want,
            "segment {i}"
        );
    }
}

#[test]
fn packets_that_are_not_super_packets_pass_unchanged() {
    // A UDP packet with a partial checksum and an ICMP packet without: header and bytes
    // kept as read.
    let udp_hdr = VnetHdr {
        flags: F_NEEDS_CSUM,
        csum_start: 20,
        csum_offset: 6,
        ..VnetHdr::default()
    };
    let mut udp = ipv4(&[0; 8], b"hello", 9);
    udp[9] = 17;
    let mut icmp = ipv4(&[8, 0, 0, 0, 0, 1, 0, 1], &[], 10);
    icmp[9] = 1;
    for (hdr, ip) in [(udp_hdr, udp), (VnetHdr::default(), icmp)] {
        let segs = split(hdr, &ip);
        assert_eq!(segs, [Packet { hdr, ip }]);
    }
}

#[test]
fn unsupported_or_malformed_super_packets_are_refused() {
    let ip = ipv4(&tcp_header(1, ACK), &payload(3000), 1);
    let udp_gso = VnetHdr {
        gso_type: 5, // VIRTIO_NET_HDR_GSO_UDP_L4
        ..gso(GSO_TCPV4, 20)
    };
    assert_eq!(
        segment(udp_gso, &ip, |_| {}),
        Err(SegmentError::UnsupportedGso(5))
    );
    let v6_type = gso(GSO_TCPV6, 20);
    assert!(matches!(
        segment(v6_type, &ip, |_| {}),
        Err(SegmentError::Malformed(_))
    ));
    let no_size = VnetHdr {
        gso_size: 0,
        ..gso(GSO_TCPV4, 20)
    };
    assert!(segment(no_size, &ip, |_| {}).is_err());
    assert!(segment(gso(GSO_TCPV4, 20), &ip[..30], |_| {}).is_err());
}

#[test]
fn segments_coalesce_back_into_the_super_packet() {
    for v6 in [false, true] {
        let data = payload(3 * MSS + 500);
        let tcp = tcp_header(5, ACK | PSH);
        let (ip, ip_hdr, kind) = if v6 {
            (ipv6(&tcp, &data), 40, GSO_TCPV6)
        } else {
            (ipv4(&tcp, &data, 300), 20, GSO_TCPV4)
        };
        let segs = split(gso(kind, ip_hdr), &ip);
        assert_eq!(run_length(segs.iter()), 4, "v6 {v6}");
        let mut out = Vec::new();
        coalesce(segs.iter(), &mut out);
        let hdr = VnetHdr::parse(&out).unwrap();
        assert_eq!(hdr, gso(kind, ip_hdr));
        let merged = &out[VNET_HDR_LEN..];
        assert_eq!(merged.len(), ip.len());
        // Same bytes but for the IPv4 header checksum and the TCP checksum.
        let t = ip_hdr + TCP_CHECK;
        let differs: Vec<usize> = (0..ip.len()).filter(|&i| merged[i] != ip[i]).collect();
        let allowed = [10, 11, t, t + 1];
        assert!(differs.iter().all(|i| allowed.contains(i)), "{differs:?}");
        if !v6 {
            assert_eq!(reference_checksum(&[&merged[..20]]), 0);
        }
        // Completing the partial checksum gives the full one.
        let p = Packet {
            hdr,
            ip: merged.to_vec(),
        };
        let done = complete_partial(&p);
        assert_eq!(
            u16::from_be_bytes([done[t], done[t + 1]]),
            reference_tcp_checksum(merged, ip_hdr, v6)
        );
    }
}

#[test]
fn runs_stop_where_gro_would() {
    let seg = |seq: u32, flags: u8, len: usize| {
        split(
            gso(GSO_TCPV4, 20),
            &ipv4(&tcp_header(seq, flags), &payload(len), 1),
        )
        .remove(0)
    };
    let m = MSS as u32;
    let full = |i: u32| seg(100 + i * m, ACK, MSS);
    // Contiguous full segments, then a short one ending the run.
    let run = [full(0), full(1), seg(100 + 2 * m, ACK, 10), full(3)];
    assert_eq!(run_length(run.iter()), 3);
    // A gap in sequence numbers.
    assert_eq!(run_length([full(0), full(2)].iter()), 1);
    // PSH ends the run after the pushed segment; a pushed first segment runs alone.
    let pushed = seg(100 + m, ACK | PSH, MSS);
    assert_eq!(run_length([full(0), pushed.clone(), full(2)].iter()), 2);
    assert_eq!(run_length([pushed, full(2)].iter()), 1);
    // FIN, SYN, a longer segment, another port, a different ACK number.
    assert_eq!(
        run_length([full(0), seg(100 + m, ACK | FIN, MSS)].iter()),
        1
    );
    assert_eq!(run_length([seg(100, 0x02, 0), full(1)].iter()), 1);
    let mut longer = full(1);
    longer.ip.push(0);
    let layout = tcp_layout(&longer.ip).unwrap();
    finish_headers(&mut longer.ip, layout, 1);
    assert_eq!(run_length([full(0), longer].iter()), 1);
    let mut other_port = full(1);
    other_port.ip[21] ^= 1;
    assert_eq!(run_length([full(0), other_port].iter()), 1);
    let mut other_ack = full(1);
    other_ack.ip[31] ^= 1;
    assert_eq!(run_length([full(0), other_ack].iter()), 1);
    // A packet without a partial checksum (its checksum is final) neither starts nor joins.
    let mut complete = full(1);
    complete.hdr = VnetHdr::default();
    assert_eq!(run_length([full(0), complete.clone()].iter()), 1);
    assert_eq!(run_length([complete, full(2)].iter()), 1);
    // The 64 KiB limit: 45 full segments of 1448 bytes fit (52 + 45 × 1448 = 65212), 46 do not.
    let many: Vec<Packet> = (0..50).map(full).collect();
    assert_eq!(run_length(many.iter()), 45);
    assert_eq!(run_length(std::iter::empty()), 0);
}
