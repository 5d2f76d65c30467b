//! `TCP_INFO` and the socket options `cellcc-flow` logs: the sender's samples
//! (`--info-log`) and the receiver's autotuning state after each read (`--log`).

use std::io;
use std::os::fd::RawFd;

use serde::Serialize;

/// The `struct tcp_info` of `linux/tcp.h`, up to `tcpi_rcv_wnd` (Linux 6.2+).
/// The kernel fills as much as it has and reports the length it wrote.
#[repr(C)]
#[derive(Default, Clone, Copy)]
pub(super) struct TcpInfo {
    pub(super) state: u8,
    pub(super) ca_state: u8,
    pub(super) retransmits: u8,
    pub(super) probes: u8,
    pub(super) backoff: u8,
    pub(super) options: u8,
    pub(super) wscale: u8,
    pub(super) app_limited_flags: u8,
    pub(super) rto: u32,
    pub(super) ato: u32,
    pub(super) snd_mss: u32,
    pub(super) rcv_mss: u32,
    pub(super) unacked: u32,
    pub(super) sacked: u32,
    pub(super) lost: u32,
    pub(super) retrans: u32,
    pub(super) fackets: u32,
    pub(super) last_data_sent: u32,
    pub(super) last_ack_sent: u32,
    pub(super) last_data_recv: u32,
    pub(super) last_ack_recv: u32,
    pub(super) pmtu: u32,
    pub(super) rcv_ssthresh: u32,
    pub(super) rtt: u32,
    pub(super) rttvar: u32,
    pub(super) snd_ssthresh: u32,
    pub(super) snd_cwnd: u32,
    pub(super) advmss: u32,
    pub(super) reordering: u32,
    pub(super) rcv_rtt: u32,
    pub(super) rcv_space: u32,
    pub(super) total_retrans: u32,
    pub(super) pacing_rate: u64,
    pub(super) max_pacing_rate: u64,
    pub(super) bytes_acked: u64,
    pub(super) bytes_received: u64,
    pub(super) segs_out: u32,
    pub(super) segs_in: u32,
    pub(super) notsent_bytes: u32,
    pub(super) min_rtt: u32,
    pub(super) data_segs_in: u32,
    pub(super) data_segs_out: u32,
    pub(super) delivery_rate: u64,
    pub(super) busy_time: u64,
    pub(super) rwnd_limited: u64,
    pub(super) sndbuf_limited: u64,
    pub(super) delivered: u32,
    pub(super) delivered_ce: u32,
    pub(super) bytes_sent: u64,
    pub(super) bytes_retrans: u64,
    pub(super) dsack_dups: u32,
    pub(super) reord_seen: u32,
    pub(super) rcv_ooopack: u32,
    pub(super) snd_wnd: u32,
    pub(super) rcv_wnd: u32,
}

/// One `TCP_INFO` sample, as logged.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct InfoSample {
    /// When the sample was taken, ns since the start.
    pub t_ns: u64,
    /// `tcpi_snd_cwnd`, packets.
    pub cwnd: u32,
    /// `tcpi_rtt`: smoothed RTT, µs.
    pub srtt_us: u32,
    /// `tcpi_rttvar`: RTT variation, µs.
    pub rttvar_us: u32,
    /// `tcpi_min_rtt`: windowed minimum RTT, µs.
    pub min_rtt_us: u32,
    /// `tcpi_pacing_rate`, bit/s (the kernel reports bytes/s).
    pub pacing_rate_bps: u64,
    /// `tcpi_delivery_rate`, bit/s (the kernel reports bytes/s).
    pub delivery_rate_bps: u64,
    /// `tcpi_bytes_acked`: bytes cumulatively acknowledged.
    pub bytes_acked: u64,
    /// `tcpi_total_retrans`: segments retransmitted over the connection.
    pub retrans: u32,
    /// `tcpi_lost`: segments currently marked lost.
    pub lost: u32,
    /// `tcpi_snd_ssthresh` (0x7fffffff before the first reduction).
    pub ssthresh: u32,
    /// `tcpi_ca_state`: 0 Open, 1 Disorder, 2 CWR, 3 Recovery, 4 Loss.
    pub ca_state: u8,
    /// `tcpi_rto`: the retransmission timeout in effect.
    pub rto_us: u32,
    /// `tcpi_backoff`: RTO back-offs since the last ACK that advanced.
    pub backoff: u8,
    /// `tcpi_unacked`: segments outstanding.
    pub unacked: u32,
    /// `tcpi_sacked`: segments SACKed.
    pub sacked: u32,
    /// `tcpi_retrans`: segments retransmitted and still outstanding.
    pub retrans_out: u32,
    /// `tcpi_snd_wnd`: the peer's last advertised receive window, bytes.
    pub snd_wnd: u32,
    /// `tcpi_rwnd_limited`: time spent limited by the peer's receive window, µs.
    pub rwnd_limited_us: u64,
    /// `tcpi_sndbuf_limited`: time spent limited by the send buffer, µs.
    pub sndbuf_limited_us: u64,
}

impl InfoSample {
    /// The `--info-log` header line, in field order.
    pub const CSV_HEADER: &'static str = "t_ns,cwnd,srtt_us,rttvar_us,min_rtt_us,pacing_rate_bps,delivery_rate_bps,bytes_acked,retrans,lost,ssthresh,ca_state,rto_us,backoff,unacked,sacked,retrans_out,snd_wnd,rwnd_limited_us,sndbuf_limited_us";

    /// The sample as one `--info-log` line (no newline), in [`InfoSample::CSV_HEADER`] order.
    pub fn csv_row(&self) -> String {
        format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            self.t_ns,
            self.cwnd,
            self.srtt_us,
            self.rttvar_us,
            self.min_rtt_us,
            self.pacing_rate_bps,
            self.delivery_rate_bps,
            self.bytes_acked,
            self.retrans,
            self.lost,
            self.ssthresh,
            self.ca_state,
            self.rto_us,
            self.backoff,
            self.unacked,
            self.sacked,
            self.retrans_out,
            self.snd_wnd,
            self.rwnd_limited_us,
            self.sndbuf_limited_us
        )
    }
}

/// The receive side's autotuning state after a read (a `--log` line's last fields).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecvSample {
    /// `tcpi_rcv_rtt`: the receiver's RTT estimate that paces DRS, µs.
    pub rcv_rtt_us: u32,
    /// `tcpi_rcv_space`: `rcvq_space.space`, the bytes of the largest round trip seen.
    pub rcv_space: u32,
    /// `tcpi_rcv_ssthresh`: the window's growth limit, bytes.
    pub rcv_ssthresh: u32,
    /// `tcpi_rcv_wnd`: the window last advertised, bytes (0 before Linux 6.2).
    pub rcv_wnd: u32,
    /// `SO_RCVBUF`: `sk_rcvbuf`, the receive buffer DRS sizes, bytes.
    pub rcvbuf: u32,
}

impl RecvSample {
    /// The receiver `--log` header line.
    pub const CSV_HEADER: &'static str =
        "t_ns,bytes,rcv_rtt_us,rcv_space,rcv_ssthresh,rcv_wnd,rcvbuf";

    pub(super) fn csv_fields(&self) -> String {
        format!(
            "{},{},{},{},{}",
            self.rcv_rtt_us, self.rcv_space, self.rcv_ssthresh, self.rcv_wnd, self.rcvbuf
        )
    }
}

pub(super) fn recv_sample(fd: RawFd) -> io::Result<RecvSample> {
    let info = raw_tcp_info(fd)?;
    let mut rcvbuf: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `rcvbuf` is valid for `len` writable bytes.
    let ret = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&mut rcvbuf as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(RecvSample {
        rcv_rtt_us: info.rcv_rtt,
        rcv_space: info.rcv_space,
        rcv_ssthresh: info.rcv_ssthresh,
        rcv_wnd: info.rcv_wnd,
        rcvbuf: rcvbuf.max(0) as u32,
    })
}

fn raw_tcp_info(fd: RawFd) -> io::Result<TcpInfo> {
    let mut info = TcpInfo::default();
    let mut len = std::mem::size_of::<TcpInfo>() as libc::socklen_t;
    // SAFETY: `info` is valid for `len` writable bytes; the kernel writes at most `len`.
    let ret = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut TcpInfo).cast(),
            &mut len,
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    // A field beyond what the kernel wrote stays 0 (older kernels).
    Ok(info)
}

pub(super) fn tcp_info(fd: RawFd, t_ns: u64) -> io::Result<InfoSample> {
    let info = raw_tcp_info(fd)?;
    Ok(InfoSample {
        t_ns,
        cwnd: info.snd_cwnd,
        srtt_us: info.rtt,
        rttvar_us: info.rttvar,
        min_rtt_us: info.min_rtt,
        pacing_rate_bps: info.pacing_rate.saturating_mul(8),
        delivery_rate_bps: info.delivery_rate.saturating_mul(8),
        bytes_acked: info.bytes_acked,
        retrans: info.total_retrans,
        lost: info.lost,
        ssthresh: info.snd_ssthresh,
        ca_state: info.ca_state,
        rto_us: info.rto,
        backoff: info.backoff,
        unacked: info.unacked,
        sacked: info.sacked,
        retrans_out: info.retrans,
        snd_wnd: info.snd_wnd,
        rwnd_limited_us: info.rwnd_limited,
        sndbuf_limited_us: info.sndbuf_limited,
    })
}
