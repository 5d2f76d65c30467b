//! PropRate's two measurements, both from TCP timestamps (§4.1, §4.2, Fig. 6):
//!
//! * the receive rate ρ: bytes the receiver got between two of its own timestamps
//!   (TSval of the ACKs), over a sliding window of the last 50 distinct timestamps or
//!   500 ms, whichever is shorter, smoothed by an EWMA;
//! * the buffer delay t_buff = RD − RD_min, RD = t_r − t_s being the relative one-way
//!   delay (receiver TSval minus the echoed sender TSval; the unknown clock offset
//!   cancels in the difference) and RD_min its minimum in the recent past.
//!
//! Timestamps are in ticks of the connection's timestamp clock (`sock.ts_granularity`,
//! 1 ms in Linux, 10 ms on many phones); both estimators inherit that resolution.

use std::collections::VecDeque;

use cellcc_units::{Dur, Time, NS_PER_S};

use crate::minmax::Minmax;

/// One receiver timestamp and the connection's delivered count at the last ACK carrying
/// it: everything counted arrived at the receiver by the end of that tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Point {
    tick: u32,
    delivered: u64,
    /// An ACK of this tick saw the bottleneck buffer empty.
    idle: bool,
}

/// Sliding window of distinct receiver timestamps (§4.2): at most `max_points`
/// timestamps, spanning at most `max_span_ticks`.
#[derive(Clone, Debug)]
pub struct TimestampWindow {
    points: VecDeque<Point>,
    max_points: usize,
    max_span_ticks: u32,
}

impl TimestampWindow {
    /// A window of `max_points` distinct timestamps and at most `max_span` (at least one
    /// tick of `granularity`).
    pub fn new(max_points: u32, max_span: Dur, granularity: Dur) -> Self {
        let ticks = (max_span.as_ns() / granularity.as_ns().max(1)).max(1);
        TimestampWindow {
            points: VecDeque::with_capacity(max_points as usize + 1),
            max_points: (max_points as usize).max(2),
            max_span_ticks: u32::try_from(ticks).unwrap_or(u32::MAX),
        }
    }

    /// Record an ACK carrying receiver timestamp `tick` when `delivered` packets have
    /// been delivered; `idle`: it reported an empty bottleneck buffer. Returns true if
    /// `tick` opened a new timestamp (the previous newest one is then complete).
    pub fn push(&mut self, tick: u32, delivered: u64, idle: bool) -> bool {
        if let Some(last) = self.points.back_mut() {
            // Receiver clocks only move forward; an ACK overtaken on the way back (or in
            // the same tick) adds to the newest timestamp.
            if (tick.wrapping_sub(last.tick) as i32) <= 0 {
                last.delivered = last.delivered.max(delivered);
                last.idle |= idle;
                return false;
            }
        }
        self.points.push_back(Point {
            tick,
            delivered,
            idle,
        });
        while self.points.len() > self.max_points {
            self.points.pop_front();
        }
        while self.span_ticks() > self.max_span_ticks {
            self.points.pop_front();
        }
        true
    }

    /// Ticks between the oldest and the newest timestamp in the window.
    fn span_ticks(&self) -> u32 {
        match (self.points.front(), self.points.back()) {
            (Some(a), Some(b)) => b.tick.wrapping_sub(a.tick),
            _ => 0,
        }
    }

    /// Distinct timestamps in the window.
    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// Whether the window holds no timestamp.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// Whether an ACK in the window saw the bottleneck buffer empty.
    pub fn saw_idle(&self) -> bool {
        self.points.iter().any(|p| p.idle)
    }

    /// Forget every timestamp (after a pause in sending, so the pause is not read as a
    /// slow receiver).
    pub fn clear(&mut self) {
        self.points.clear();
    }

    /// Receive rate over the window, bytes per second: packets delivered after the
    /// oldest timestamp up to the newest, times `mss`, over the ticks between them.
    /// `None` with fewer than two distinct timestamps (§4: "all packets received at the
    /// same time-tick" give no estimate).
    pub fn rate_bytes_per_sec(&self, mss: u32, granularity: Dur) -> Option<u64> {
        let (first, last) = (self.points.front()?, self.points.back()?);
        let ticks = last.tick.wrapping_sub(first.tick);
        if ticks == 0 {
            return None;
        }
        let bytes = u128::from(last.delivered - first.delivered) * u128::from(mss);
        let ns = u128::from(ticks) * u128::from(granularity.as_ns().max(1));
        Some(u64::try_from(bytes * u128::from(NS_PER_S) / ns).unwrap_or(u64::MAX))
    }
}

/// The receive-rate estimate ρ (§4.2): an EWMA of the window rate, one sample per
/// completed receiver timestamp.
///
/// The receive rate is the bottleneck rate only while the bottleneck buffer holds packets
/// (§3's model). A window in which an ACK saw the buffer empty measured the sender, not
/// the link (Drain, Monitor and the empty phase of the buffer-emptied regime send below
/// ρ on purpose); like an application-limited sample in BBR, it may raise ρ but not
/// lower it.
#[derive(Clone, Debug)]
pub(super) struct ReceiveRate {
    window: TimestampWindow,
    /// Weight of each new sample.
    gain: f64,
    /// ρ, bytes per second; `None` until the first estimate.
    rho: Option<u64>,
}

impl ReceiveRate {
    pub(super) fn new(window: TimestampWindow, gain: f64) -> Self {
        ReceiveRate {
            window,
            gain,
            rho: None,
        }
    }

    /// The estimate, bytes per second.
    pub(super) fn rho(&self) -> Option<u64> {
        self.rho
    }

    /// Replace the estimate (Slow Start measured the first one).
    pub(super) fn set(&mut self, rho: u64) {
        self.rho = Some(rho);
    }

    /// Fold one sample into the EWMA (a Monitor burst's estimate).
    pub(super) fn fold(&mut self, sample: u64) {
        // PropRate §4.2: ρ is an EWMA of the instantaneous throughput.
        self.rho = Some(match self.rho {
            None => sample,
            Some(rho) => (rho as f64 + self.gain * (sample as f64 - rho as f64)).round() as u64,
        });
    }

    /// Start the window afresh: sending paused, so the next timestamps would include the
    /// pause.
    pub(super) fn clear_window(&mut self) {
        self.window.clear();
    }

    /// An ACK with receiver timestamp `tick` (`idle`: it saw the buffer empty). When it
    /// opens a new timestamp, the window as it stood (all its timestamps complete) gives
    /// one sample, folded into ρ unless the flow was application-limited (the receiver
    /// then measures the application) or the window saw the buffer empty and the sample
    /// is below ρ.
    pub(super) fn on_ack(
        &mut self,
        tick: u32,
        delivered: u64,
        idle: bool,
        mss: u32,
        granularity: Dur,
        app_limited: bool,
    ) {
        let sample = self.window.rate_bytes_per_sec(mss, granularity);
        let sender_limited = self.window.saw_idle();
        if !self.window.push(tick, delivered, idle) || app_limited {
            return;
        }
        let Some(sample) = sample else {
            return;
        };
        if sender_limited && self.rho.is_some_and(|rho| sample < rho) {
            return;
        }
        self.fold(sample);
    }

    /// The window.
    #[cfg(test)]
    pub(super) fn window(&self) -> &TimestampWindow {
        &self.window
    }
}

/// Offset that maps a signed tick difference into the `u32` order the min filter uses.
const RD_BIAS: i64 = 1 << 31;

/// The buffer-delay estimate (§4.1, Fig. 6(a)): t_buff = RD − RD_min.
#[derive(Clone, Debug)]
pub(super) struct OneWayDelay {
    /// Windowed minimum of RD + [`RD_BIAS`], in ticks; time in ms.
    rd_min: Minmax,
    /// RD_min window, ms.
    window_ms: u32,
    /// The last t_buff, if any.
    last: Option<Dur>,
}

impl OneWayDelay {
    pub(super) fn new(window: Dur) -> Self {
        OneWayDelay {
            rd_min: Minmax::new_min_empty(),
            window_ms: u32::try_from(window.as_ms().max(1)).unwrap_or(u32::MAX),
            last: None,
        }
    }

    /// A relative one-way delay `rd` (receiver tick minus sender tick, wrapping) measured
    /// at `now`; returns t_buff.
    pub(super) fn on_sample(&mut self, now: Time, rd: i32, granularity: Dur) -> Dur {
        let biased = (i64::from(rd) + RD_BIAS) as u32;
        // The filter's clock is ms; its 32-bit wrap (49 days) is handled by the filter.
        let min = self
            .rd_min
            .running_min(self.window_ms, now.as_ms() as u32, biased);
        let t_buff = granularity * u64::from(biased - min); // PropRate §4.1: t_buff = RD − RD_min
        self.last = Some(t_buff);
        t_buff
    }

    /// The last buffer-delay estimate.
    pub(super) fn last(&self) -> Option<Dur> {
        self.last
    }

    /// RD_min in ticks, if any sample was taken.
    pub(super) fn rd_min(&self) -> Option<i64> {
        let v = self.rd_min.get();
        (v != u32::MAX).then(|| i64::from(v) - RD_BIAS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Dur = Dur::from_ms(1);

    #[test]
    fn window_rate_counts_packets_after_the_first_timestamp() {
        let mut w = TimestampWindow::new(50, Dur::from_ms(500), MS);
        assert!(w.push(100, 3, false));
        // Same tick: the newest point takes the larger delivered count.
        assert!(!w.push(100, 5, false));
        assert_eq!(w.rate_bytes_per_sec(1000, MS), None);
        assert!(w.push(104, 13, false));
        // 8 packets of 1000 B over 4 ms = 2 000 000 B/s.
        assert_eq!(w.rate_bytes_per_sec(1000, MS), Some(2_000_000));
        // An ACK with an older timestamp counts toward the newest one.
        assert!(!w.push(103, 15, false));
        assert_eq!(w.rate_bytes_per_sec(1000, MS), Some(2_500_000));
    }

    #[test]
    fn window_keeps_fifty_distinct_timestamps() {
        let mut w = TimestampWindow::new(50, Dur::from_ms(500), MS);
        // One timestamp every 2 ms, 1 packet each: 60 timestamps.
        for i in 0..60u32 {
            w.push(2 * i, u64::from(i), false);
        }
        assert_eq!(w.len(), 50);
        // Oldest kept: i = 10 (tick 20); newest i = 59 (tick 118): 49 packets / 98 ms.
        // 49 × 1448 B / 0.098 s = 724 000 B/s.
        assert_eq!(w.rate_bytes_per_sec(1448, MS), Some(724_000));
    }

    #[test]
    fn window_spans_at_most_500_ms() {
        let mut w = TimestampWindow::new(50, Dur::from_ms(500), MS);
        // A slow flow: one timestamp per 100 ms, 2 packets each.
        for i in 0..10u32 {
            w.push(100 * i, 2 * u64::from(i), false);
        }
        // Only ticks 400..=900 remain (span 500 ms, 6 timestamps): 10 packets / 0.5 s.
        assert_eq!(w.len(), 6);
        assert_eq!(w.rate_bytes_per_sec(1000, MS), Some(20_000));
        // A gap longer than the window leaves a single timestamp and no rate.
        w.push(1500, 30, false);
        assert_eq!(w.len(), 1);
        assert_eq!(w.rate_bytes_per_sec(1000, MS), None);
    }

    #[test]
    fn ten_ms_ticks_limit_the_window_to_fifty_ticks() {
        let g = Dur::from_ms(10);
        let mut w = TimestampWindow::new(50, Dur::from_ms(500), g);
        for i in 0..80u32 {
            w.push(i, u64::from(i) * 3, false);
        }
        // 500 ms = 50 ticks of 10 ms: ticks 29..=79 would be 51 timestamps, so the count
        // limit (50) binds first: ticks 30..=79, 147 packets in 490 ms.
        assert_eq!(w.len(), 50);
        assert_eq!(w.rate_bytes_per_sec(1000, g), Some(300_000));
    }

    #[test]
    fn rho_is_an_ewma_of_completed_windows() {
        let mut r = ReceiveRate::new(TimestampWindow::new(50, Dur::from_ms(500), MS), 0.125);
        // 1 packet (1000 B) per ms: the first sample needs two complete timestamps.
        r.on_ack(0, 0, false, 1000, MS, false);
        r.on_ack(1, 1, false, 1000, MS, false);
        assert_eq!(r.rho(), None);
        r.on_ack(2, 2, false, 1000, MS, false);
        assert_eq!(r.rho(), Some(1_000_000));
        // The rate doubles: 2 packets per ms from tick 2 on. Tick 3 completes the window
        // 0..=2 (2 packets / 2 ms = 1 000 000 B/s: ρ unchanged); tick 4 completes 0..=3,
        // 4 packets / 3 ms = 1 333 333 B/s: ρ = 1 000 000 + 333 333/8 = 1 041 667.
        r.on_ack(3, 4, false, 1000, MS, false);
        assert_eq!(r.rho(), Some(1_000_000));
        r.on_ack(4, 6, false, 1000, MS, false);
        assert_eq!(r.rho(), Some(1_041_667));
        // Application-limited samples are not folded in.
        r.on_ack(5, 7, false, 1000, MS, true);
        assert_eq!(r.rho(), Some(1_041_667));
        // A burst's fresh estimate replaces ρ; clearing the window restarts sampling.
        r.set(2_000_000);
        r.clear_window();
        r.on_ack(9, 10, false, 1000, MS, false);
        r.on_ack(10, 12, false, 1000, MS, false);
        assert_eq!(r.rho(), Some(2_000_000));
        assert_eq!(r.window().len(), 2);
    }

    #[test]
    fn windows_that_saw_an_empty_buffer_only_raise_rho() {
        let mut r = ReceiveRate::new(TimestampWindow::new(50, Dur::from_ms(500), MS), 0.5);
        // Busy link, 2 packets per ms: ρ = 2 000 000 B/s.
        for i in 0..4u32 {
            r.on_ack(i, 2 * u64::from(i), false, 1000, MS, false);
        }
        assert_eq!(r.rho(), Some(2_000_000));
        // The sender slows to 1 packet per ms and an ACK reports an empty buffer (tick
        // 4): the lower samples that follow measure the sender; ρ stays.
        r.on_ack(4, 7, true, 1000, MS, false);
        for i in 5..8u32 {
            r.on_ack(i, 7 + u64::from(i - 4), false, 1000, MS, false);
        }
        assert_eq!(r.rho(), Some(2_000_000));
        // A higher sample is taken even so: tick 8 closes 0..=7, 10 packets / 7 ms is
        // lower; jump to 30 packets at tick 9: window 0..=8 = 40 packets / 8 ms = 5e6.
        r.on_ack(8, 40, false, 1000, MS, false);
        r.on_ack(9, 41, false, 1000, MS, false);
        // ρ = 2e6 + (5e6 − 2e6)/2 = 3.5e6.
        assert_eq!(r.rho(), Some(3_500_000));
        // Once the idle tick has left the window, lower samples count again.
        r.clear_window();
        r.on_ack(20, 100, false, 1000, MS, false);
        r.on_ack(21, 101, false, 1000, MS, false);
        r.on_ack(22, 102, false, 1000, MS, false);
        // Window 20..=21: 1 packet / 1 ms = 1e6: ρ = 3.5e6 − 2.5e6/2 = 2.25e6.
        assert_eq!(r.rho(), Some(2_250_000));
    }

    #[test]
    fn buffer_delay_is_rd_above_its_window_minimum() {
        let mut d = OneWayDelay::new(Dur::from_secs(10));
        // Clocks may be offset: negative RDs work as well.
        assert_eq!(d.on_sample(Time::from_ms(0), -5, MS), Dur::ZERO);
        assert_eq!(d.on_sample(Time::from_ms(100), 15, MS), Dur::from_ms(20));
        assert_eq!(d.rd_min(), Some(-5));
        assert_eq!(d.on_sample(Time::from_ms(200), -7, MS), Dur::ZERO);
        assert_eq!(d.on_sample(Time::from_ms(300), -2, MS), Dur::from_ms(5));
        assert_eq!(d.last(), Some(Dur::from_ms(5)));
        // After the window, the minimum is re-measured from later samples.
        assert_eq!(d.on_sample(Time::from_ms(10_301), 3, MS), Dur::ZERO);
        assert_eq!(d.rd_min(), Some(3));
    }
}
