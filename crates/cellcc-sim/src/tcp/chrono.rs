//! The sender's chronographs (`tcp_chrono_start`, `tcp_chrono_stop`, `tcp_chrono_set`
//! in `tcp_output.c`): how long the connection had data to send (busy), and for how
//! much of that the receiver's window or the send buffer held it back. `TCP_INFO`
//! reports them as `tcpi_busy_time`, `tcpi_rwnd_limited` and `tcpi_sndbuf_limited`,
//! which `cellcc-flow` logs on the real side; the simulator reports the same three
//! ([`ChronoTimes`]).
//!
//! One chronograph runs at a time, the highest-priority condition of those that hold
//! (busy < rwnd-limited < sndbuf-limited), counted in kernel ticks (`tcp_jiffies32`).
//! Where the kernel starts and stops each:
//! * busy starts when the application writes into an empty write queue
//!   (`tcp_add_write_queue_tail`) and stops when both queues are empty (an ACK that
//!   empties the retransmission queue: `tcp_clean_rtx_queue`);
//! * rwnd-limited starts at the end of a `tcp_write_xmit` pass that stopped because the
//!   next segment did not fit the peer's window (pacing and cwnd had room: the loop tests
//!   them first), and stops at the end of any other pass; a pass runs only when unsent
//!   data waits (`tcp_push_pending_frames`);
//! * sndbuf-limited starts in `tcp_cwnd_validate` when the flight does not fill cwnd,
//!   nothing unsent is left and the writer is blocked on the send buffer (`SOCK_NOSPACE`),
//!   and stops when the writer can write again (`tcp_check_space`). The kernel's writer
//!   wakes when a third of the buffer is free (`sk_stream_write_space`); the simulated
//!   writer writes as soon as an ACK frees room, so this chronograph stops earlier in the
//!   simulator.

use cellcc_units::{Dur, Time};

use super::sender::TcpSender;

/// `enum tcp_chrono`, in priority order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum ChronoKind {
    /// `TCP_CHRONO_UNSPEC`: nothing to send.
    #[default]
    Unspec,
    /// `TCP_CHRONO_BUSY`.
    Busy,
    /// `TCP_CHRONO_RWND_LIMITED`.
    RwndLimited,
    /// `TCP_CHRONO_SNDBUF_LIMITED`.
    SndbufLimited,
}

/// The running chronograph and the ticks each has accumulated (`chrono_type`,
/// `chrono_start`, `chrono_stat`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Chrono {
    kind: ChronoKind,
    start: u64,
    stat: [u64; 3],
}

/// The chronographs' totals, as `TCP_INFO` reports them (`tcp_get_info_chrono_stats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ChronoTimes {
    /// `tcpi_busy_time`: every chronograph's time, the limited ones included.
    pub busy: Dur,
    /// `tcpi_rwnd_limited`: the peer's receive window held new data back.
    pub rwnd_limited: Dur,
    /// `tcpi_sndbuf_limited`: the send buffer held the writer back.
    pub sndbuf_limited: Dur,
}

impl Chrono {
    /// `tcp_chrono_set`.
    fn set(&mut self, kind: ChronoKind, now: u64) {
        if self.kind > ChronoKind::Unspec {
            self.stat[self.kind as usize - 1] += now - self.start;
        }
        self.start = now;
        self.kind = kind;
    }

    /// `tcp_chrono_start`: a higher-priority condition takes over.
    pub(crate) fn start(&mut self, kind: ChronoKind, now: u64) {
        if kind > self.kind {
            self.set(kind, now);
        }
    }

    /// `tcp_chrono_stop`: nothing left to send stops every chronograph; the end of the
    /// running condition falls back to busy.
    pub(crate) fn stop(&mut self, kind: ChronoKind, now: u64, queues_empty: bool) {
        if queues_empty {
            self.set(ChronoKind::Unspec, now);
        } else if kind == self.kind {
            self.set(ChronoKind::Busy, now);
        }
    }

    /// The totals at `now` (the running chronograph's time so far included), `tick`
    /// long ticks each.
    pub(crate) fn times(&self, now: u64, tick: Dur) -> ChronoTimes {
        let mut stat = self.stat;
        if self.kind > ChronoKind::Unspec {
            stat[self.kind as usize - 1] += now - self.start;
        }
        let dur = |ticks: u64| Dur::from_ns(ticks * tick.as_ns());
        ChronoTimes {
            busy: dur(stat.iter().sum()),
            rwnd_limited: dur(stat[ChronoKind::RwndLimited as usize - 1]),
            sndbuf_limited: dur(stat[ChronoKind::SndbufLimited as usize - 1]),
        }
    }
}

impl TcpSender {
    /// `tcp_jiffies32` at the sender's clock.
    fn jiffies(&self) -> u64 {
        self.sock.now.as_ns() / self.tick().as_ns()
    }

    /// The chronographs at `now` (the end of a run).
    pub fn chrono_times(&self, now: Time) -> ChronoTimes {
        self.chrono
            .times(now.as_ns() / self.tick().as_ns(), self.tick())
    }

    /// The application wrote: into an empty write queue starts busy.
    pub(crate) fn chrono_on_write(&mut self, was_empty: bool) {
        if was_empty && self.has_unsent() {
            let now = self.jiffies();
            self.chrono.start(ChronoKind::Busy, now);
        }
    }

    /// The end of a transmission pass that left unsent data: rwnd-limited if the peer's
    /// window is what stopped it.
    pub(crate) fn chrono_after_write_xmit(&mut self) {
        if !self.has_unsent() {
            return;
        }
        let now = self.jiffies();
        let rwnd_limited = !self.pacer.holds(&self.sock, self.sock.now)
            && self.sock.packets_in_flight() < self.sock.cwnd
            && !self.wnd_allows(self.sock.snd_nxt);
        if rwnd_limited {
            self.chrono.start(ChronoKind::RwndLimited, now);
        } else {
            self.chrono.stop(ChronoKind::RwndLimited, now, false);
        }
    }

    /// `tcp_cwnd_validate` found the flight short of cwnd: sndbuf-limited if nothing
    /// unsent is left and the writer waits for room.
    pub(crate) fn chrono_not_cwnd_limited(&mut self) {
        if !self.has_unsent() && self.app_blocked() {
            let now = self.jiffies();
            self.chrono.start(ChronoKind::SndbufLimited, now);
        }
    }

    /// The writer wrote again (`tcp_check_space`); what it wrote waits unsent, so the
    /// queues are not empty.
    pub(crate) fn chrono_writer_woke(&mut self) {
        let now = self.jiffies();
        self.chrono.stop(ChronoKind::SndbufLimited, now, false);
    }

    /// An ACK emptied the retransmission queue (`tcp_clean_rtx_queue`).
    pub(crate) fn chrono_rtx_queue_empty(&mut self) {
        let now = self.jiffies();
        let empty = !self.has_unsent();
        self.chrono.stop(ChronoKind::Busy, now, empty);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_highest_priority_condition_runs_and_its_end_falls_back_to_busy() {
        let mut c = Chrono::default();
        c.start(ChronoKind::Busy, 10);
        c.start(ChronoKind::RwndLimited, 30);
        // A lower-priority start does not interrupt it; stopping another kind does not.
        c.start(ChronoKind::Busy, 40);
        c.stop(ChronoKind::SndbufLimited, 45, false);
        c.stop(ChronoKind::RwndLimited, 50, false);
        c.start(ChronoKind::SndbufLimited, 60);
        c.stop(ChronoKind::Busy, 70, false);
        c.stop(ChronoKind::SndbufLimited, 75, true);
        let ms = Dur::from_ms(1);
        let t = c.times(100, ms);
        assert_eq!(t.rwnd_limited, Dur::from_ms(20));
        assert_eq!(t.sndbuf_limited, Dur::from_ms(15));
        // 10..75: every chronograph's time, nothing after both queues emptied.
        assert_eq!(t.busy, Dur::from_ms(65));
        // A running chronograph counts up to `now`.
        c.start(ChronoKind::RwndLimited, 80);
        assert_eq!(c.times(90, ms).rwnd_limited, Dur::from_ms(30));
    }
}
