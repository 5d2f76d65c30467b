//! TCP Westwood+, as Linux 6.x runs it (`net/ipv4/tcp_westwood.c`).
//!
//! Sources:
//! - S. Mascolo, C. Casetti, M. Gerla, M. Y. Sanadidi, R. Wang, "TCP Westwood: Bandwidth
//!   Estimation for Enhanced Transport over Wireless Links", ACM MobiCom 2001, §2.
//! - L. A. Grieco, S. Mascolo, "Performance evaluation and comparison of Westwood+, New
//!   Reno, and Vegas TCP congestion control", ACM SIGCOMM CCR 34(2), April 2004, §2
//!   (Westwood+: one bandwidth sample per RTT).
//! - Linux `net/ipv4/tcp_westwood.c`, 6.x (`tcp_westwood_ack`, `westwood_update_window`,
//!   `westwood_filter`, `westwood_acked_count`, `tcp_westwood_event`); growth and the
//!   loss-time ssthresh are Reno's (`tcp_reno_cong_avoid`, `tcp_reno_ssthresh`).
//!
//! Model. Westwood+ grows like Reno but, after a congestion episode, sets the window to
//! the path's bandwidth-delay product as measured by the sender: `BWE·RTTmin`. Bytes
//! acknowledged are counted per ACK (duplicate ACKs count one segment, later cumulative
//! ACKs subtract what was counted already); once an RTT (at least 50 ms) has passed, the
//! count divided by the elapsed time is one bandwidth sample, smoothed twice by a
//! 7/8 low-pass filter (`bw_ns_est`, then `bw_est`). `RTTmin` is the smallest RTT
//! sample, in jiffies.
//!
//! ```text
//!   Reno growth (slow start, +1/RTT)          every ACK: bk += bytes acked;
//!     |                                       every max(RTT, 50 ms):
//!     | loss / CWR: ssthresh := cwnd/2 (Reno)   bw_ns := 7/8·bw_ns + 1/8·bk/Δ
//!     v                                         bw_est := 7/8·bw_est + 1/8·bw_ns
//!   Recovery / CWR (PRR)
//!     | end (CompleteCwr): cwnd := ssthresh := max(bw_est·RTTmin/mss, 2)
//!     v
//!   Reno growth        RTO (Loss event): ssthresh := max(bw_est·RTTmin/mss, 2),
//!                                        RTTmin restarts from the next sample
//! ```
//!
//! Differences from the papers (all inherited from Linux):
//! 1. At recovery entry ssthresh is Reno's `cwnd/2`; the BWE·RTTmin window is applied
//!    only when the episode ends (MobiCom 2001 §2 sets it at the third duplicate ACK).
//!    During recovery PRR aims at `cwnd/2`.
//! 2. Bandwidth samples are taken per ACK-counted interval of at least max(RTT, 50 ms)
//!    and divided by jiffies elapsed, not per individual ACK with a Tustin filter.
//! 3. `RTT` is the latest RTT sample, `RTTmin` the minimum of those samples, both
//!    rounded up to whole jiffies; an RTO makes the next sample the new minimum.
//!
//! Differences from Linux:
//! 1. Sequence numbers count segments; bytes acked are `segments × mss`, so the last,
//!    possibly short, segment of a finite flow counts as a full one.
//! 2. `bw_est·RTTmin` is computed in 64 bits (Linux's 32-bit product could wrap above
//!    ~4 GB·jiffy, i.e. multi-Gbit/s paths with long RTTs at HZ = 1000).
//! 3. Jiffies are 64-bit counters from `sock.now` and `sock.hz` and never wrap.

#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

use crate::reno::NewReno;
use crate::{AckSample, CaEvent, CongestionControl, Sock};

/// Shortest bandwidth-sampling interval, as a fraction of a second (`TCP_WESTWOOD_RTT_MIN`
/// = HZ/20 = 50 ms): shorter windows give noisy samples on LANs.
const RTT_MIN_WINDOW_DIVISOR: u32 = 20;
/// RTT (and RTTmin) before the first sample, seconds (`TCP_WESTWOOD_INIT_RTT` = 20·HZ):
/// deliberately huge so the first real sample replaces it.
const INIT_RTT_S: u32 = 20;
/// Low-pass filter weight of the old value, in eighths (`westwood_do_filter`).
const FILTER_OLD_EIGHTHS: u64 = 7;
/// Smallest window BWE·RTTmin yields, packets (`tcp_westwood_bw_rttmin`).
const MIN_WINDOW: u32 = 2;
/// Microseconds per second, for `usecs_to_jiffies`.
const US_PER_S: u64 = 1_000_000;

/// Scenario parameters of Westwood+: there are none (Linux's module has none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WestwoodConfig {}

/// A Westwood+ controller; fields mirror Linux's `struct westwood`.
#[derive(Clone, Debug)]
pub struct Westwood {
    /// `bw_ns_est`: first-stage bandwidth estimate, bytes per jiffy.
    bw_ns_est: u32,
    /// `bw_est`: smoothed bandwidth estimate (BWE), bytes per jiffy.
    bw_est: u32,
    /// `rtt_win_sx`: jiffy the current sampling interval began.
    rtt_win_sx: u64,
    /// `bk`: bytes acked in the current sampling interval.
    bk: u64,
    /// `snd_una` (segments) at the previous ACK.
    snd_una: u64,
    /// `accounted`: bytes credited by duplicate ACKs and not yet covered by a cumulative
    /// ACK.
    accounted: u64,
    /// `rtt`: latest RTT sample, jiffies (rounded up).
    rtt: u32,
    /// `rtt_min`: RTTmin, jiffies.
    rtt_min: u32,
    /// `first_ack`: the next ACK re-anchors `snd_una` (the first bandwidth sample must
    /// not count data acked before the connection was set up).
    first_ack: bool,
    /// `reset_rtt_min`: the next update takes the latest RTT as RTTmin (after an RTO).
    reset_rtt_min: bool,
    /// Kernel tick rate and segment size, copied at `init` for reports.
    hz: u32,
    mss: u32,
    /// cwnd set by the last end of a congestion episode, and how many there were
    /// (observation only).
    last_cwr_cwnd: Option<u32>,
    cwr_completions: u64,
    reno: NewReno,
}

impl Westwood {
    /// A fresh controller (Westwood+ has no parameters).
    pub fn new(_cfg: WestwoodConfig) -> Self {
        Westwood {
            bw_ns_est: 0,
            bw_est: 0,
            rtt_win_sx: 0,
            bk: 0,
            snd_una: 0,
            accounted: 0,
            rtt: 0,
            rtt_min: 0,
            first_ack: true,
            reset_rtt_min: true,
            hz: 1000,
            mss: 1448,
            last_cwr_cwnd: None,
            cwr_completions: 0,
            reno: NewReno::new(),
        }
    }

    /// BWE in bytes per jiffy (`bw_est`).
    pub fn bw_est(&self) -> u32 {
        self.bw_est
    }

    /// RTTmin in jiffies.
    pub fn rtt_min_jiffies(&self) -> u32 {
        self.rtt_min
    }

    /// `tcp_westwood_bw_rttmin`: BWE·RTTmin in packets, at least 2.
    pub fn bw_rttmin(&self) -> u32 {
        // MobiCom 2001 §2: ssthresh = (BWE · RTTmin) / seg_size.
        let w = u64::from(self.bw_est) * u64::from(self.rtt_min) / u64::from(self.mss.max(1));
        (w.min(u64::from(u32::MAX)) as u32).max(MIN_WINDOW)
    }

    /// `westwood_update_window`: close the sampling interval once it is longer than
    /// max(RTT, 50 ms) and filter its sample.
    fn update_window(&mut self, sock: &Sock) {
        let now = sock.jiffies();
        if self.first_ack {
            self.snd_una = sock.snd_una;
            self.first_ack = false;
        }
        let delta = now.saturating_sub(self.rtt_win_sx);
        let min_window = u64::from(sock.hz / RTT_MIN_WINDOW_DIVISOR);
        if self.rtt != 0 && delta > u64::from(self.rtt).max(min_window) {
            self.filter(delta);
            self.bk = 0;
            self.rtt_win_sx = now;
        }
    }

    /// `westwood_filter`: one bandwidth sample `bk/Δ` through the two 7/8 filters; the
    /// first sample fills both.
    fn filter(&mut self, delta: u64) {
        let sample = (self.bk / delta).min(u64::from(u32::MAX));
        if self.bw_ns_est == 0 && self.bw_est == 0 {
            self.bw_ns_est = sample as u32;
            self.bw_est = self.bw_ns_est;
        } else {
            // Grieco & Mascolo 2004 Eq. (1) with constant gain: b̂ = 7/8·b̂ + 1/8·b.
            self.bw_ns_est = low_pass(self.bw_ns_est, sample);
            self.bw_est = low_pass(self.bw_est, u64::from(self.bw_ns_est));
        }
    }

    /// `update_rtt_min`.
    fn update_rtt_min(&mut self) {
        if self.reset_rtt_min {
            self.rtt_min = self.rtt;
            self.reset_rtt_min = false;
        } else {
            self.rtt_min = self.rtt_min.min(self.rtt);
        }
    }

    /// `westwood_acked_count`: bytes this (slow-path) ACK accounts for. A duplicate
    /// ACK counts one segment; a cumulative ACK covering more than one segment counts
    /// only what duplicate ACKs did not already count.
    fn acked_count(&mut self, sock: &Sock) -> u64 {
        let mss = u64::from(sock.mss);
        let mut cumul = sock.snd_una.saturating_sub(self.snd_una) * mss;
        if cumul == 0 {
            self.accounted += mss;
            cumul = mss;
        }
        if cumul > mss {
            if self.accounted >= cumul {
                self.accounted -= cumul;
                cumul = mss;
            } else {
                cumul -= self.accounted;
                self.accounted = 0;
            }
        }
        self.snd_una = sock.snd_una;
        cumul
    }
}

/// `westwood_do_filter`: `(7·a + b)/8`.
fn low_pass(a: u32, b: u64) -> u32 {
    ((FILTER_OLD_EIGHTHS * u64::from(a) + b) >> 3).min(u64::from(u32::MAX)) as u32
}

impl Default for Westwood {
    fn default() -> Self {
        Westwood::new(WestwoodConfig::default())
    }
}

impl CongestionControl for Westwood {
    fn name(&self) -> &'static str {
        "westwood"
    }

    /// `tcp_westwood_init`.
    fn init(&mut self, sock: &mut Sock) {
        *self = Westwood::default();
        self.hz = sock.hz;
        self.mss = sock.mss;
        self.rtt = INIT_RTT_S * sock.hz;
        self.rtt_min = self.rtt;
        self.rtt_win_sx = sock.jiffies();
        self.snd_una = sock.snd_una;
    }

    /// `tcp_reno_ssthresh`.
    fn ssthresh(&mut self, sock: &Sock) -> u32 {
        self.reno.ssthresh(sock)
    }

    /// `tcp_reno_cong_avoid`.
    fn cong_avoid(&mut self, sock: &mut Sock, acked: u32) {
        self.reno.cong_avoid(sock, acked);
    }

    /// `tcp_westwood_event`: the end of an episode sets cwnd and ssthresh to BWE·RTTmin;
    /// an RTO sets ssthresh to it and restarts RTTmin.
    fn cwnd_event(&mut self, sock: &mut Sock, event: CaEvent) {
        match event {
            CaEvent::CompleteCwr => {
                // MobiCom 2001 §2: cwnd = ssthresh = BWE·RTTmin/seg_size.
                sock.ssthresh = self.bw_rttmin();
                sock.cwnd = sock.ssthresh;
                self.last_cwr_cwnd = Some(sock.cwnd);
                self.cwr_completions += 1;
            }
            CaEvent::Loss => {
                // MobiCom 2001 §2, after a timeout: ssthresh = BWE·RTTmin/seg_size.
                sock.ssthresh = self.bw_rttmin();
                self.reset_rtt_min = true;
            }
            _ => {}
        }
    }

    /// `tcp_westwood_ack`: count the bytes this ACK acknowledged.
    fn in_ack_event(&mut self, sock: &mut Sock, slow_path: bool) {
        self.update_window(sock);
        if slow_path {
            let acked = self.acked_count(sock);
            self.bk += acked;
        } else {
            // `westwood_fast_bw`: a pure cumulative advance.
            self.bk += sock.snd_una.saturating_sub(self.snd_una) * u64::from(sock.mss);
            self.snd_una = sock.snd_una;
        }
        self.update_rtt_min();
    }

    /// `tcp_westwood_pkts_acked`: keep the latest RTT, in jiffies rounded up.
    fn pkts_acked(&mut self, sock: &mut Sock, sample: &AckSample) {
        if let Some(rtt) = sample.rtt.filter(|r| r.as_us() > 0) {
            // usecs_to_jiffies rounds up.
            let j = (rtt.as_us() * u64::from(sock.hz)).div_ceil(US_PER_S);
            self.rtt = j.min(u64::from(u32::MAX)) as u32;
        }
    }

    // `undo_cwnd` is the trait's default, `tcp_reno_undo_cwnd`.

    /// Reno's growth phase: `"slow_start"` or `"cong_avoid"`.
    fn phase(&self) -> &'static str {
        self.reno.phase()
    }

    /// `bw_est_mbps` (BWE, payload), `rtt_min_ms` (RTTmin, whole jiffies),
    /// `bwe_rttmin_pkts` (the window Westwood+ sets after a congestion episode),
    /// `cwr_completions` and `last_cwr_cwnd_pkts` (the cwnd the last episode ended at).
    fn info(&self) -> Vec<(&'static str, f64)> {
        let hz = f64::from(self.hz);
        let mut v = vec![
            ("bw_est_mbps", f64::from(self.bw_est) * hz * 8.0 / 1e6),
            ("rtt_min_ms", f64::from(self.rtt_min) * 1000.0 / hz),
            ("bwe_rttmin_pkts", f64::from(self.bw_rttmin())),
            ("cwr_completions", self.cwr_completions as f64),
        ];
        if let Some(c) = self.last_cwr_cwnd {
            v.push(("last_cwr_cwnd_pkts", f64::from(c)));
        }
        v
    }
}
