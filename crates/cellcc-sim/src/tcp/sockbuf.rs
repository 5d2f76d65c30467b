//! Socket buffers (Linux 6.18): the send buffer (`tcp_wmem`, `tcp_sndbuf_expand`,
//! `sk_wmem_queued` as a sum of per-skb truesize) and the receive window (`tcp_rmem`,
//! `tcp_select_initial_window`, `tcp_init_buffer_space`, `tcp_measure_rcv_mss`'s
//! `scaling_ratio`, `tcp_grow_window`/`rcv_ssthresh`, `tcp_rcv_rtt_measure_ts`,
//! `tcp_rcv_space_adjust` (dynamic right-sizing), `__tcp_select_window`/`tcp_select_window`
//! with window scaling, `tcp_cleanup_rbuf`'s window-update ACK), from
//! `net/ipv4/tcp_input.c`, `tcp_output.c` and `tcp.c`.
//!
//! Differences from Linux:
//! 1. Truesize is a per-segment constant overhead plus the payload: a sent segment is
//!    charged `len + 526` (measured: Linux's skbs hold a few segments each, so the skb
//!    overhead is shared), a received one `len + 856` (a 1500-byte packet in a 2 KiB
//!    kmalloc head, as a TUN or veth device delivers it).
//! 2. The application writes and reads at segment granularity and at once: a bulk
//!    writer tops the write queue up to `sk_sndbuf` whenever a segment's worth is free
//!    (Linux wakes it when a third of the buffer is free), and the reader empties the
//!    receive queue as soon as data is in order, so the window only closes by the memory
//!    the out-of-order queue holds. With nothing outstanding that queue is empty and the
//!    window is open, so the zero-window probe timer is never needed (not modelled).
//! 3. No memory pressure (`tcp_mem`), no `SO_SNDBUF`/`SO_RCVBUF` locks, no
//!    `tcp_notsent_lowat` (its default, `UINT_MAX`, never limits a bulk writer).

/// `SKB_DATA_ALIGN(sizeof(struct sk_buff))` on x86_64.
const SKB_STRUCT: u64 = 256;
/// `SKB_DATA_ALIGN(sizeof(struct skb_shared_info))` on x86_64.
const SKB_SHINFO: u64 = 320;
/// `MAX_TCP_HEADER` on x86_64 (`L1_CACHE_ALIGN(128 + MAX_HEADER)`).
const MAX_TCP_HEADER: u64 = 320;
/// Write-queue truesize per sent segment beyond its payload: 526 bytes, measured on
/// Linux 6.18 (a bulk CUBIC sender stuck behind a lost retransmission froze at 2125
/// unacknowledged 1448-byte segments under the 4 MiB `tcp_wmem` maximum,
/// docs/validation.md gap 2): between a 1 KiB skb head plus `sk_buff` per skb of
/// `tcp_min_tso_segs` = 2 segments (640) and per 3 segments (427).
const TX_SEG_OVERHEAD: u64 = 526;
/// Receive truesize beyond the payload: 2304 (a 2 KiB head plus the `sk_buff`) for a
/// 1448-byte segment, so `scaling_ratio` = 1448·256/2304 = 160.
pub(crate) const RX_SKB_OVERHEAD: u64 = 2304 - 1448;
/// `TCP_RMEM_TO_WIN_SCALE`: `scaling_ratio` is a fraction of 256.
const RMEM_TO_WIN_SCALE: u32 = 8;
/// `TCP_DEFAULT_SCALING_RATIO`: 50 % before the first segment is measured.
const DEFAULT_SCALING_RATIO: u64 = 1 << (RMEM_TO_WIN_SCALE - 1);
/// `TCP_MAX_WSCALE`.
const MAX_WSCALE: u32 = 14;
/// `U16_MAX`: the largest unscaled window field.
const MAX_WINDOW_FIELD: u64 = 65_535;
/// `sysctl_rmem_max` (`net.core.rmem_max`) default, which also sets the window scale.
const CORE_RMEM_MAX: u64 = 212_992;
/// `TCP_INIT_CWND`: `rcvq_space.space` starts at this many `advmss`.
const INIT_CWND: u64 = 10;
/// `SOCK_MIN_RCVBUF / 2`: the smallest window clamp.
const MIN_WINDOW_CLAMP: u64 = 2048 + SKB_STRUCT;

/// Truesize one sent segment of `len` bytes adds to `sk_wmem_queued`.
pub(crate) fn tx_truesize(len: u32) -> u64 {
    len as u64 + TX_SEG_OVERHEAD
}

/// `tcp_sndbuf_expand`: room for `factor` (2, or the congestion control's
/// `sndbuf_expand`) times `max(cwnd, TCP_INIT_CWND, reordering + 1)` segments, each
/// charged a power-of-two kmalloc of a full skb; never above `wmem_max`.
pub(crate) fn sndbuf_expand(
    mss: u32,
    cwnd: u32,
    reordering: u32,
    factor: u64,
    wmem_max: u64,
) -> u64 {
    let per_mss = (mss as u64 + MAX_TCP_HEADER + SKB_SHINFO).next_power_of_two() + SKB_STRUCT;
    let nr_segs = (cwnd as u64).max(INIT_CWND).max(reordering as u64 + 1);
    (factor * nr_segs * per_mss).min(wmem_max)
}

/// The receive side's buffer and window state (`tcp_sock` fields).
#[derive(Clone, Debug)]
pub(crate) struct RcvWindow {
    /// `sk_rcvbuf`, bytes.
    pub(crate) rcvbuf: u64,
    rmem_max: u64,
    autotune: bool,
    advmss: u64,
    /// `scaling_ratio` (fraction of 256 of truesize that is payload).
    ratio: u64,
    /// `rx_opt.rcv_wscale`.
    pub(crate) wscale: u32,
    pub(crate) window_clamp: u64,
    pub(crate) rcv_ssthresh: u64,
    /// `rcv_wnd`: the window last advertised, bytes.
    pub(crate) rcv_wnd: u64,
    /// `rcv_wup` in bytes: `rcv_nxt` when the last window was advertised.
    pub(crate) rcv_wup: u64,
    /// `rcv_rtt_est.rtt_us` (×8), 0 before the first sample.
    rtt_us8: u64,
    last_tsecr: Option<u32>,
    /// `rcvq_space`: bytes copied in the last measured RTT, and where/when it began.
    space: u64,
    space_seq: u64,
    space_time_us: u64,
}

impl RcvWindow {
    /// `tcp_select_initial_window` then `tcp_init_buffer_space`, at `now_us`.
    pub(crate) fn new(
        rmem_default: u64,
        rmem_max: u64,
        autotune: bool,
        advmss: u32,
        now_us: u64,
    ) -> Self {
        let advmss = advmss as u64;
        let mut w = RcvWindow {
            rcvbuf: rmem_default,
            rmem_max,
            autotune,
            advmss,
            ratio: DEFAULT_SCALING_RATIO,
            wscale: 0,
            window_clamp: 0,
            rcv_ssthresh: 0,
            rcv_wnd: 0,
            rcv_wup: 0,
            rtt_us8: 0,
            last_tsecr: None,
            space: 0,
            space_seq: 0,
            space_time_us: now_us,
        };
        // tcp_select_initial_window (no clamp set, no route `initrwnd`).
        let mut space = w.win_from_space(w.rcvbuf);
        if space > advmss {
            space -= space % advmss;
        }
        w.rcv_wnd = space.min(MAX_WINDOW_FIELD);
        let scale_space = space.max(rmem_max).max(CORE_RMEM_MAX);
        w.wscale = (scale_space.ilog2().saturating_sub(15)).min(MAX_WSCALE);
        w.rcv_ssthresh = w.rcv_wnd;
        // tcp_init_buffer_space (tcp_app_win = 31: the clamp is the full space, less one
        // segment reserved).
        let maxwin = w.win_from_space(w.rcvbuf);
        w.window_clamp = maxwin;
        if w.window_clamp > 2 * advmss && w.window_clamp + advmss > maxwin {
            w.window_clamp = (2 * advmss).max(maxwin - advmss);
        }
        w.rcv_ssthresh = w.rcv_ssthresh.min(w.window_clamp);
        w.space = w.rcv_ssthresh.min(w.rcv_wnd).min(INIT_CWND * advmss);
        w
    }

    /// `tcp_win_from_space`.
    fn win_from_space(&self, space: u64) -> u64 {
        (space * self.ratio) >> RMEM_TO_WIN_SCALE
    }

    /// `tcp_space_from_win`.
    fn space_from_win(&self, win: u64) -> u64 {
        (win << RMEM_TO_WIN_SCALE) / self.ratio
    }

    /// The scaled window the sender sees in an ACK's window field.
    pub(crate) fn advertised(&self) -> u64 {
        (self.rcv_wnd >> self.wscale) << self.wscale
    }

    /// `tcp_measure_rcv_mss`'s ratio update, when `rcv_mss` changes to `len`.
    pub(crate) fn measure_ratio(&mut self, len: u32) {
        let val = ((len as u64) << RMEM_TO_WIN_SCALE) / (len as u64 + RX_SKB_OVERHEAD);
        let val = val.max(1);
        if val != self.ratio {
            self.ratio = val;
            // tcp_set_window_clamp
            let old = self.window_clamp;
            let new = self.win_from_space(self.rcvbuf).max(MIN_WINDOW_CLAMP);
            self.window_clamp = new;
            if new < old {
                self.rcv_ssthresh = self.rcv_ssthresh.min(new);
            } else {
                self.rcv_ssthresh = self.rcv_ssthresh.max(self.rcv_wnd.min(new));
            }
            self.space = self.space.min(self.window_clamp);
        }
    }

    /// `tcp_grow_window` for a segment of `len` bytes, with `ooo_truesize` bytes held out
    /// of order; true when the window grew (Linux then sets `icsk_ack.quick |= 1`).
    pub(crate) fn grow(&mut self, len: u32, ooo_truesize: u64) -> bool {
        let room = self.window_clamp.min(self.free_space(ooo_truesize));
        if room <= self.rcv_ssthresh {
            return false;
        }
        let room = room - self.rcv_ssthresh;
        let truesize = len as u64 + RX_SKB_OVERHEAD;
        // Check #2: the skb's overhead fits the window scaling.
        let incr = if self.win_from_space(truesize) <= len as u64 {
            2 * self.advmss
        } else {
            // `__tcp_grow_window`: a segment this small for its truesize grows nothing
            // until rcv_ssthresh is small; the model's segments never get here.
            return false;
        };
        let incr = incr.max(2 * len as u64);
        self.rcv_ssthresh += room.min(incr);
        true
    }

    /// `tcp_space`: the window the free receive memory allows.
    fn free_space(&self, ooo_truesize: u64) -> u64 {
        self.win_from_space(self.rcvbuf.saturating_sub(ooo_truesize))
    }

    /// `tcp_rcv_rtt_measure_ts`: one sample per new TSecr on a full-sized segment.
    /// `unread`: in-order data the reader has not copied yet is queued (`rcv_nxt !=
    /// copied_seq`), in which case a higher sample is not taken (`tcp_rcv_rtt_update`).
    pub(crate) fn rtt_measure_ts(
        &mut self,
        tsecr: u32,
        ts_now: u32,
        ts_us: u64,
        full: bool,
        unread: bool,
    ) {
        if tsecr == 0 || self.last_tsecr == Some(tsecr) {
            return;
        }
        self.last_tsecr = Some(tsecr);
        if !full {
            return;
        }
        let delta = ts_now.wrapping_sub(tsecr) as i32;
        if delta <= 0 {
            return;
        }
        let sample = delta as u64 * ts_us;
        // tcp_rcv_rtt_update: a lower sample replaces, a higher one is averaged in (1/8)
        // unless the receive queue holds unread data.
        let m = sample << 3;
        if self.rtt_us8 == 0 || m < self.rtt_us8 {
            self.rtt_us8 = m;
        } else if !unread {
            self.rtt_us8 = self.rtt_us8 - (self.rtt_us8 >> 3) + sample;
        }
    }

    /// `tcp_rcv_space_adjust` (dynamic right-sizing) after the reader copied everything
    /// up to `copied_seq` (bytes) at `now_us`. The model's reader leaves nothing in the
    /// receive queue, so Linux's `copied -= inq` subtracts 0.
    pub(crate) fn space_adjust(&mut self, copied_seq: u64, now_us: u64) {
        let time = now_us.saturating_sub(self.space_time_us);
        if self.rtt_us8 == 0 || time < self.rtt_us8 >> 3 {
            return;
        }
        let copied = copied_seq - self.space_seq;
        if copied > self.space {
            self.rcvbuf_grow(copied, 0);
        }
        self.space_seq = copied_seq;
        self.space_time_us = now_us;
    }

    /// `tcp_rcvbuf_grow` (Linux 6.18): `rcvq_space.space` becomes `newval`, and with
    /// autotuning the buffer grows to hold `rcvwin` = twice `newval` (DRS is a round trip
    /// late), grown by twice the rate increase (`2·rcvwin·(newval − old)/old`, a sender
    /// in slow start doubles), plus `ooo_span`, the bytes from `rcv_nxt` to the end of
    /// the out-of-order queue. Called by DRS with the bytes copied in the last round trip
    /// and, with `newval` = the current space, for every segment queued out of order
    /// ([`RcvWindow::grow_for_ooo`]).
    pub(crate) fn rcvbuf_grow(&mut self, newval: u64, ooo_span: u64) {
        let old = self.space;
        self.space = newval;
        if !self.autotune {
            return;
        }
        let mut rcvwin = newval << 1;
        if let Some(grow) = (rcvwin * newval.saturating_sub(old)).checked_div(old) {
            rcvwin += grow << 1;
        }
        rcvwin += ooo_span;
        let rcvbuf = self.space_from_win(rcvwin).min(self.rmem_max);
        if rcvbuf > self.rcvbuf {
            self.rcvbuf = rcvbuf;
            self.window_clamp = self.win_from_space(rcvbuf);
        }
    }

    /// `tcp_data_queue_ofo`'s `tcp_rcvbuf_grow(sk, rcvq_space.space)`: room for twice
    /// the last round trip's data plus `ooo_span` bytes up to the queue's end.
    pub(crate) fn grow_for_ooo(&mut self, ooo_span: u64) {
        self.rcvbuf_grow(self.space, ooo_span);
    }

    /// `__tcp_select_window`: the window the receiver would offer now.
    pub(crate) fn select(&self, ooo_truesize: u64, rcv_mss: u32) -> u64 {
        let free = self.free_space(ooo_truesize);
        let full = self.window_clamp.min(self.win_from_space(self.rcvbuf));
        // (Linux also ends quick-ACK mode here; the model's reader never lets the free
        // space fall that low outside a recovery.)
        let allowed = self.win_from_space(self.rcvbuf);
        if free < full / 2 && (free < allowed >> 4 || free < rcv_mss as u64) {
            return 0;
        }
        let free = free.min(self.rcv_ssthresh);
        let unit = 1u64 << self.wscale;
        free.div_ceil(unit) * unit
    }

    /// Whether a window-update ACK is due after a read (`tcp_cleanup_rbuf`): the window
    /// left (`rcv_wup + rcv_wnd − rcv_nxt`) is at most half the clamp and the new one at
    /// least twice it.
    pub(crate) fn update_due(&self, rcv_nxt: u64, ooo_truesize: u64, rcv_mss: u32) -> bool {
        let now = (self.rcv_wup + self.rcv_wnd).saturating_sub(rcv_nxt);
        2 * now <= self.window_clamp && {
            let new = self.select(ooo_truesize, rcv_mss);
            new > 0 && new >= 2 * now
        }
    }

    /// `tcp_select_window`: never shrink the offered right edge; remember what was sent.
    /// Returns the window in bytes as the sender reads it (field << scale).
    pub(crate) fn advertise(&mut self, rcv_nxt: u64, ooo_truesize: u64, rcv_mss: u32) -> u64 {
        let cur = (self.rcv_wup + self.rcv_wnd).saturating_sub(rcv_nxt);
        let mut new = self.select(ooo_truesize, rcv_mss);
        let unit = 1u64 << self.wscale;
        if new < cur {
            new = cur.div_ceil(unit) * unit;
        }
        new = new.min(MAX_WINDOW_FIELD << self.wscale);
        self.rcv_wnd = new;
        self.rcv_wup = rcv_nxt;
        self.advertised()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn linux_default() -> RcvWindow {
        RcvWindow::new(131_072, 33_554_432, true, 1448, 0)
    }

    #[test]
    fn initial_window_scale_and_clamp_are_linux_6_18s() {
        let mut w = linux_default();
        // 131072 at 50 % = 65536, rounded down to 45 segments; scale from 32 MiB.
        assert_eq!(w.rcv_wnd, 65_160);
        assert_eq!(w.wscale, 10);
        assert_eq!(w.window_clamp, 65_536 - 1448);
        assert_eq!(w.rcv_ssthresh, 64_088);
        assert_eq!(w.space, 14_480);
        // The first 1448-byte segment measures the ratio 160/256: clamp 81920.
        w.measure_ratio(1448);
        assert_eq!(w.window_clamp, 81_920);
        assert_eq!(w.rcv_ssthresh, 65_160);
        // Growth: 2·advmss per segment up to the clamp.
        assert!(w.grow(1448, 0));
        assert_eq!(w.rcv_ssthresh, 65_160 + 2896);
        for _ in 0..20 {
            w.grow(1448, 0);
        }
        assert_eq!(w.rcv_ssthresh, 81_920);
        assert!(!w.grow(1448, 0));
        // Advertised: rounded up to 1 KiB units.
        assert_eq!(w.advertise(0, 0, 1448), 81_920);
    }

    #[test]
    fn drs_grows_the_buffer_once_a_round_trip_doubles() {
        let mut w = linux_default();
        w.measure_ratio(1448);
        w.rtt_measure_ts(100, 120, 1000, true, false); // 20 ms
        assert_eq!(w.rtt_us8, 20_000 << 3);
        // First round trip: 10 segments copied, no more than `space`: no growth.
        w.space_adjust(14_480, 20_000);
        assert_eq!(w.rcvbuf, 131_072);
        // Second: 20 segments. rcvwin = 2·28960 = 57920, grown by 2·57920·(28960 −
        // 14480)/14480 to 173760; rcvbuf = 173760·256/160.
        w.space_adjust(14_480 + 28_960, 40_000);
        assert_eq!(w.rcvbuf, 278_016);
        assert_eq!(w.window_clamp, 173_760);
        // Less than an RTT later: no measurement.
        w.space_adjust(14_480 + 28_960 + 100_000, 45_000);
        assert_eq!(w.rcvbuf, 278_016);
        // Autotuning off: the buffer stays.
        let mut off = RcvWindow::new(131_072, 33_554_432, false, 1448, 0);
        off.measure_ratio(1448);
        off.rtt_measure_ts(100, 120, 1000, true, false);
        off.space_adjust(14_480, 20_000);
        off.space_adjust(14_480 + 28_960, 40_000);
        assert_eq!(off.rcvbuf, 131_072);
    }

    #[test]
    fn drs_matches_the_window_a_linux_6_18_receiver_advertised() {
        // Measured (validation, Reno on ATT-LTE-driving-2016): after its second DRS
        // round the receiver's window stopped at 135168 bytes (132 KiB units), which
        // 11 then 19 segments a round trip give: rcvwin = 55024 + 2·55024·11584/15928.
        let mut w = linux_default();
        w.measure_ratio(1448);
        w.rtt_measure_ts(100, 142, 1000, true, false);
        w.space_adjust(11 * 1448, 42_000);
        assert_eq!(w.space, 15_928);
        w.space_adjust(30 * 1448, 84_000);
        assert_eq!(w.window_clamp, 135_057);
        while w.grow(1448, 0) {}
        assert_eq!(w.advertise(0, 0, 1448), 135_168);
    }

    #[test]
    fn a_higher_rtt_sample_waits_for_the_reader_a_lower_one_does_not() {
        let mut w = linux_default();
        w.rtt_measure_ts(100, 140, 1000, true, false);
        assert_eq!(w.rtt_us8 >> 3, 40_000);
        // 80 ms with unread data queued (a segment of the same instant before it): kept
        // out, as Linux does since 6.16, so that a standing queue does not inflate the
        // estimate DRS waits on.
        w.rtt_measure_ts(200, 280, 1000, true, true);
        assert_eq!(w.rtt_us8 >> 3, 40_000);
        // The same with the queue read: averaged in with gain 1/8.
        w.rtt_measure_ts(300, 380, 1000, true, false);
        assert_eq!(w.rtt_us8, 8 * 40_000 - 40_000 + 80_000);
        // A lower sample replaces the estimate either way.
        w.rtt_measure_ts(400, 430, 1000, true, true);
        assert_eq!(w.rtt_us8 >> 3, 30_000);
    }

    #[test]
    fn an_out_of_order_queue_grows_the_buffer_by_its_span() {
        let mut w = linux_default();
        w.measure_ratio(1448);
        // tcp_data_queue_ofo: rcvwin = 2·space (no rate increase) + the span.
        w.grow_for_ooo(200 * 1448);
        assert_eq!(w.window_clamp, 2 * 14_480 + 200 * 1448);
        assert_eq!(w.space, 14_480);
        // A shorter span later never shrinks it.
        w.grow_for_ooo(1448);
        assert_eq!(w.window_clamp, 2 * 14_480 + 200 * 1448);
    }

    #[test]
    fn the_window_never_moves_its_right_edge_left() {
        let mut w = linux_default();
        w.measure_ratio(1448);
        assert_eq!(w.advertise(0, 0, 1448), 65_536);
        // 40 segments held out of order shrink the free space below the edge.
        let ooo = 40 * (1448 + RX_SKB_OVERHEAD);
        let edge = w.advertise(1448, ooo, 1448);
        assert_eq!(edge, 65_536 - 1024);
    }

    #[test]
    fn send_buffer_sizes() {
        // 2 · max(cwnd, 10) · 4352 bytes.
        assert_eq!(sndbuf_expand(1448, 10, 3, 2, 4_194_304), 87_040);
        assert_eq!(sndbuf_expand(1448, 100, 3, 2, 4_194_304), 870_400);
        assert_eq!(sndbuf_expand(1448, 1000, 3, 2, 4_194_304), 4_194_304);
        // The 4 MiB maximum holds 2125 full segments, as measured on the kernel.
        assert_eq!(4_194_304u64.div_ceil(tx_truesize(1448)), 2125);
    }
}
