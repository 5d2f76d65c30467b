//! When CUBIC's current growth epoch started, for the reference patch's 1-second gate.
//!
//! The reference patch runs C2TCP at the end of CUBIC's `pkts_acked`, after CUBIC's
//! early return "ignore RTT samples for 1 s (HZ jiffies) after `epoch_start`" (spec
//! §1.4 item 2). [`crate::cubic::Cubic`] keeps `epoch_start` private, so this module
//! follows the same hooks CUBIC does and reproduces when `bictcp_update` opens an
//! epoch: on the first ACK that reaches congestion avoidance after `init`, a reduction
//! (`ssthresh`) or an RTO (`set_state(Loss)`), subject to `bictcp_update`'s early return
//! while cwnd is unchanged for HZ/32 jiffies; idle periods shift it (`TxStart`). An
//! accessor on `Cubic` would make this mirror unnecessary.

use crate::{CaEvent, CaState, Sock};

/// With cwnd unchanged, `bictcp_update` returns early for HZ/32 jiffies (as in `cubic`).
const UPDATE_INTERVAL_DIVISOR: u64 = 32;

/// The fields of CUBIC's state that decide when an epoch starts.
#[derive(Clone, Debug, Default)]
pub(super) struct CubicEpoch {
    /// `epoch_start`, jiffies; `None` between a reduction and the next growth.
    epoch_start: Option<u64>,
    /// `last_cwnd`: cwnd at the last full recomputation.
    last_cwnd: u32,
    /// `last_time`: jiffy of the last full recomputation.
    last_time: u64,
}

impl CubicEpoch {
    /// `bictcp_reset` (on `init` and on an RTO).
    pub(super) fn reset(&mut self) {
        *self = CubicEpoch::default();
    }

    /// `cubictcp_recalc_ssthresh`: the epoch ends.
    pub(super) fn on_ssthresh(&mut self) {
        self.epoch_start = None;
    }

    /// `cubictcp_state`.
    pub(super) fn on_set_state(&mut self, new_state: CaState) {
        if new_state == CaState::Loss {
            self.reset();
        }
    }

    /// `cubictcp_cwnd_event(CA_EVENT_TX_START)`: shift the epoch by the idle time.
    pub(super) fn on_cwnd_event(&mut self, sock: &Sock, event: CaEvent) {
        if event == CaEvent::TxStart {
            crate::cubic::shift_epoch_after_idle(&mut self.epoch_start, sock);
        }
    }

    /// `cubictcp_cong_avoid` up to the point where `bictcp_update` may open an epoch.
    /// Call with the socket as CUBIC will see it, before CUBIC's own `cong_avoid`.
    pub(super) fn on_cong_avoid(&mut self, sock: &Sock, acked: u32) {
        if !sock.is_cwnd_limited() {
            return;
        }
        let mut cwnd = sock.cwnd;
        if sock.in_slow_start() {
            // `tcp_slow_start`: the ACK's leftover after reaching ssthresh, if any.
            let grown = cwnd.saturating_add(acked).min(sock.ssthresh);
            let left = acked - (grown - cwnd);
            cwnd = grown.min(sock.cwnd_clamp);
            if left == 0 {
                return;
            }
        }
        let now = sock.jiffies();
        if self.last_cwnd == cwnd
            && now.saturating_sub(self.last_time) <= u64::from(sock.hz) / UPDATE_INTERVAL_DIVISOR
        {
            return;
        }
        if self.epoch_start.is_none() || now != self.last_time {
            self.last_cwnd = cwnd;
            self.last_time = now;
            if self.epoch_start.is_none() {
                self.epoch_start = Some(now);
            }
        }
    }

    /// Whether CUBIC's `pkts_acked` returns early now: less than 1 s (HZ jiffies) since
    /// the epoch started.
    pub(super) fn in_blackout(&self, sock: &Sock) -> bool {
        self.epoch_start
            .is_some_and(|start| sock.jiffies().saturating_sub(start) < u64::from(sock.hz))
    }

    /// The jiffy the current epoch started, if one is running.
    #[cfg(test)]
    pub(super) fn epoch_start(&self) -> Option<u64> {
        self.epoch_start
    }
}
