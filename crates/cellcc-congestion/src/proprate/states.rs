//! The four states of PropRate (§4, Fig. 5(b)) and the bursts two of them send.
//!
//! * **Slow Start**: a back-to-back burst of 10 packets; when all are acknowledged, the
//!   receiver timestamps on their ACKs give ρ, unless they all carry the same timestamp,
//!   in which case the burst doubles and is sent again.
//! * **Buffer Fill**: pace at σ_f = k_f·ρ until t_buff ≥ T.
//! * **Buffer Drain**: pace at σ_d = k_d·ρ until t_buff < T, or until ⌈ρ·RTT⌉ packets
//!   were sent in Drain, then Monitor.
//! * **Monitor**: a back-to-back burst of 10 packets, then σ_m = σ_d/2 until the burst's
//!   ACKs give a fresh receive rate: at least ρ → Fill (the rate joins ρ's EWMA), else
//!   Drain.
//!
//! Bursts are realised with the stack's pacing and window: the pacing rate is the line
//! rate (`sock.max_pacing_rate`, unpaced by default) and the window admits exactly the
//! burst's unsent packets on top of what is in flight, so nothing else goes out until the
//! burst is out; the next ACK then sets the state's own rate and window.

use cellcc_units::Dur;

use super::estimators::TimestampWindow;
use super::{PropRate, State};
use crate::Sock;

/// A point in the connection's packet accounting, to count packets sent since.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendMark {
    delivered: u64,
    lost: u64,
    in_flight: u32,
}

impl SendMark {
    /// A mark at the socket's current delivered, lost and in-flight counts.
    pub fn new(sock: &Sock) -> Self {
        SendMark {
            delivered: sock.delivered,
            lost: sock.lost,
            in_flight: sock.packets_in_flight(),
        }
    }

    /// Packets delivered or marked lost since the mark.
    pub fn resolved_since(&self, sock: &Sock) -> u64 {
        (sock.delivered - self.delivered) + (sock.lost - self.lost)
    }

    /// Packets sent (new or retransmitted) since the mark. Every packet is in flight,
    /// delivered or marked lost, so what was sent since is the growth of their sum.
    /// A packet marked lost and delivered after all is counted twice; that only makes a
    /// burst end early.
    pub fn sent_since(&self, sock: &Sock) -> u64 {
        (self.resolved_since(sock) + u64::from(sock.packets_in_flight()))
            .saturating_sub(u64::from(self.in_flight))
    }
}

/// A burst of `len` packets sent back to back, with the receiver timestamps of its ACKs.
#[derive(Clone, Debug)]
pub struct Burst {
    /// Packets in the burst.
    pub len: u32,
    mark: SendMark,
    window: TimestampWindow,
}

impl Burst {
    /// A burst of `len` packets starting now, collecting receiver timestamps in `window`.
    pub fn new(len: u32, sock: &Sock, window: TimestampWindow) -> Self {
        Burst {
            len,
            mark: SendMark::new(sock),
            window,
        }
    }

    /// Burst packets not yet sent.
    pub fn unsent(&self, sock: &Sock) -> u32 {
        u64::from(self.len).saturating_sub(self.mark.sent_since(sock)) as u32
    }

    /// Record the ACK being processed. Data is delivered in order through the
    /// bottleneck, so the burst's packets are delivered once those in flight at its start
    /// are; ACKs from then on carry the burst's receive times.
    pub fn on_ack(&mut self, sock: &Sock) {
        if sock.delivered >= self.mark.delivered + u64::from(self.mark.in_flight) {
            self.window.push(sock.rcv_tsval, sock.delivered, false);
        }
    }

    /// Every burst packet was delivered or marked lost.
    pub fn done(&self, sock: &Sock) -> bool {
        self.mark.resolved_since(sock) >= u64::from(self.mark.in_flight) + u64::from(self.len)
    }

    /// The receive rate the burst saw, bytes per second; `None` if all its ACKs carried
    /// one timestamp.
    pub fn rate(&self, sock: &Sock) -> Option<u64> {
        self.window
            .rate_bytes_per_sec(sock.mss, sock.ts_granularity)
    }
}

impl PropRate {
    /// A fresh burst of `len` packets starting now.
    pub(super) fn burst(&self, len: u32, sock: &Sock) -> Burst {
        Burst::new(len, sock, self.new_window(sock))
    }

    /// Per-ACK state machine: the transitions of the current state.
    pub(super) fn update_state(&mut self, sock: &Sock, t_buff: Option<Dur>) {
        match &mut self.state {
            State::SlowStart(burst) => {
                burst.on_ack(sock);
                if !burst.done(sock) {
                    return;
                }
                match burst.rate(sock) {
                    // §4: a rate estimate exists: Slow Start ends.
                    Some(rate) => {
                        self.rho.set(rate);
                        // Sending paused while the burst was acknowledged; the window
                        // must not read that pause as a slow receiver.
                        self.rho.clear_window();
                        self.transition(State::BufferFill);
                    }
                    // §4: all packets in one time-tick: double the burst and repeat.
                    None => {
                        let len = burst.len.saturating_mul(2).min(sock.cwnd_clamp);
                        let next = self.burst(len, sock);
                        self.transition(State::SlowStart(next));
                    }
                }
            }
            State::BufferFill => {
                // §3: congestion detected: the (lagged) buffer delay reached T.
                if t_buff.is_some_and(|d| d >= self.threshold) {
                    self.transition(State::BufferDrain(SendMark::new(sock)));
                }
            }
            State::BufferDrain(mark) => {
                let sent = mark.sent_since(sock);
                if t_buff.is_some_and(|d| d < self.threshold) {
                    // §3: congestion eased.
                    self.transition(State::BufferFill);
                } else if sent >= self.bdp_packets(sock) {
                    // §4.1: RTT·ρ packets sent in Drain: re-measure in Monitor.
                    let burst = self.burst(self.config.burst_packets, sock);
                    self.transition(State::Monitor(burst));
                }
            }
            State::Monitor(burst) => {
                burst.on_ack(sock);
                if !burst.done(sock) {
                    return;
                }
                // Until two timestamps are seen, keep sending at σ_m and waiting.
                let Some(rate) = burst.rate(sock) else {
                    return;
                };
                if rate >= self.rho.rho().unwrap_or(0) {
                    // §4: the network is good: Fill. Ten packets measure only a few
                    // ticks of a bursty link, so the estimate joins ρ's EWMA as one
                    // sample rather than replacing it.
                    self.rho.fold(rate);
                    self.transition(State::BufferFill);
                } else {
                    // §4: still congested: continue draining.
                    self.transition(State::BufferDrain(SendMark::new(sock)));
                }
            }
        }
    }
}
