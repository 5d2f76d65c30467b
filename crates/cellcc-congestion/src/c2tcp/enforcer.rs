//! The Action Enforcer: C2TCP JSAC Algorithm 2 (IFIP Algorithm 1, lines 6 and 15–16).
//!
//! Good: an additive increase on top of the base algorithm's own, `Setpoint/rtt`
//! packets per RTT (JSAC Eq. (1)); Normal: nothing; Bad: what a loss-based TCP does after
//! a timeout caused by an imaginary AQM drop: ssthresh from the base algorithm, cwnd := 1.
//! The connection's TCP state is not changed (no retransmission, no Recovery).
//!
//! Differences from the papers:
//! 1. Eq. (1) adds `Setpoint/rtt × 1/cwnd` per *packet* acked (the paper's model acks
//!    one packet per ACK), so that cwnd grows by Setpoint/rtt per RTT also with delayed
//!    or stretch ACKs. Fractions carry over in a Q16 counter of our own; it is cleared by
//!    a back-off and by an RTO.
//! 2. IFIP Eq. (1) reads `Cwnd += Target/rtt` per ACK in the pseudo-code; the text calls
//!    it an additive increase following AIMD and the authors' code grows cwnd by about
//!    Target/rtt per window, so it is implemented per RTT like the JSAC form.
//! 3. A back-off also clears `cwnd_cnt`, as Linux does when it resets cwnd after a
//!    timeout.
//!
//! [`Fidelity::Linux`](super::Fidelity::Linux) (reference patch, spec §1.4 and §1.5):
//! 1. The increase is per ACK, `⌊SP_ms / max(r_ms, 1)⌋` added to the shared
//!    `snd_cwnd_cnt` (so it also speeds up the base's own counter), and cwnd grows by
//!    `⌊cnt/cwnd⌋` when the counter reaches cwnd; v1 (IFIP) adds `⌊Target_ms / max(r_ms,
//!    1)⌋` (its additive sysctl term is 0) and grows by at most one packet, clearing the
//!    counter.
//! 2. A back-off first records `prior_ssthresh = tcp_current_ssthresh()`. During
//!    CWR/Recovery it acts too (PRR then overwrites cwnd on the same ACK; the new
//!    ssthresh stays), with one guard the kernel does not have: `prior_cwnd` is raised
//!    to the cwnd the back-off found, so that PRR cannot multiply the flight by
//!    ssthresh/1 (see [`Enforcer::backoff`]).

use crate::{CaState, CongestionControl, Dur, Sock};

/// Fraction bits of the Eq. (1) credit.
const CREDIT_SHIFT: u32 = 16;

/// The increase credit not yet turned into whole packets.
#[derive(Clone, Debug, Default)]
pub struct Enforcer {
    /// Σ (Setpoint/rtt) over acked packets since cwnd last grew by it, Q16 packets²
    /// (cwnd grows by one each time it reaches cwnd).
    credit_q16: u64,
}

impl Enforcer {
    /// C2TCP JSAC Eq. (1) for `acked` packets: cwnd += setpoint/rtt × 1/cwnd each.
    pub fn increase(&mut self, sock: &mut Sock, setpoint: Dur, rtt: Dur, acked: u32) {
        let rtt_ns = u128::from(rtt.as_ns().max(1));
        let per_packet = (u128::from(setpoint.as_ns()) << CREDIT_SHIFT) / rtt_ns;
        let add = per_packet.saturating_mul(u128::from(acked));
        self.credit_q16 = self
            .credit_q16
            .saturating_add(u64::try_from(add).unwrap_or(u64::MAX));
        let w = u64::from(sock.cwnd.max(1)) << CREDIT_SHIFT;
        if self.credit_q16 >= w {
            // C2TCP JSAC Eq. (1): Cwnd_new = Cwnd + (Setpoint/RTT)·(1/Cwnd) per packet.
            let grow = self.credit_q16 / w;
            self.credit_q16 -= grow * w;
            let grow = u32::try_from(grow).unwrap_or(u32::MAX);
            sock.cwnd = sock.cwnd.saturating_add(grow).min(sock.cwnd_clamp);
        }
    }

    /// Reference patch v2.2: `⌊sp_ms / max(r_ms, 1)⌋` into the shared `snd_cwnd_cnt`.
    pub fn increase_linux(sock: &mut Sock, sp_ms: u64, r_ms: u64) {
        let inc = u32::try_from(sp_ms / r_ms.max(1)).unwrap_or(u32::MAX);
        sock.cwnd_cnt = sock.cwnd_cnt.saturating_add(inc);
        let w = sock.cwnd.max(1);
        if sock.cwnd_cnt >= w {
            let grow = sock.cwnd_cnt / w;
            sock.cwnd_cnt -= grow * w;
            sock.cwnd = sock.cwnd.saturating_add(grow).min(sock.cwnd_clamp);
        }
    }

    /// Reference patch v1 (IFIP): `⌊target_ms / max(r_ms, 1)⌋` into `snd_cwnd_cnt`; at
    /// most one packet per trigger, and the counter restarts.
    pub fn increase_linux_ifip(sock: &mut Sock, target_ms: u64, r_ms: u64) {
        let inc = u32::try_from(target_ms / r_ms.max(1)).unwrap_or(u32::MAX);
        sock.cwnd_cnt = sock.cwnd_cnt.saturating_add(inc);
        if sock.cwnd_cnt >= sock.cwnd {
            if sock.cwnd < sock.cwnd_clamp {
                sock.cwnd += 1;
            }
            sock.cwnd_cnt = 0;
        }
    }

    /// Bad condition: `ssthresh ← recalc_ssthresh()` by the base algorithm, `Cwnd ← 1`
    /// (C2TCP JSAC Algorithm 2 lines 9–10; IFIP Algorithm 1 lines 15–16).
    pub fn backoff(&mut self, sock: &mut Sock, base: &mut dyn CongestionControl, linux: bool) {
        if linux {
            sock.prior_ssthresh = sock.current_ssthresh();
            if matches!(sock.ca_state, CaState::Cwr | CaState::Recovery) {
                // Guard, not in the kernel: PRR scales by ssthresh/prior_cwnd; after a
                // reset just before Recovery began, prior_cwnd is 1 and the new ssthresh
                // would release ssthresh packets per packet delivered, a flight that
                // only the receive window bounds in Linux (the simulator has none).
                sock.prior_cwnd = sock.prior_cwnd.max(sock.cwnd);
            }
        }
        sock.ssthresh = base.ssthresh(sock);
        sock.cwnd = 1;
        sock.cwnd_cnt = 0;
        self.credit_q16 = 0;
    }

    /// Forget the credit (RTO: cwnd restarts from 1).
    pub fn clear(&mut self) {
        self.credit_q16 = 0;
    }
}
