//! The per-packet link log in the format of `mm-link --uplink-log/--downlink-log`
//! (ravinet/mahimahi `man/mm-link.1`, written by `src/frontend/link_queue.cc`), so that
//! Mahimahi's `mm-throughput-graph` and `mm-delay-graph` read it. The one writer of this
//! log: the simulator (`[metrics] packet_log = true`) and the emulator (`cellcc-emu
//! --downlink-log`) both write through [`MmLog`], so the same arrivals and departures give
//! the same event lines; only the header differs (program, command line, start time).
//!
//! ```text
//! # mahimahi mm-link (cellcc-emu) [downlink]
//! # command line: ...                 (when there is one)
//! # queue: droptail [packets=400]
//! # init timestamp: 1764000000000      (Unix ms of time 0; 0 in the simulator)
//! # base timestamp: 0
//! 0 + 1504                            arrival at the link: ms, charged bytes
//! 1 # 1504                            delivery opportunity of 1504 bytes
//! 1 - 1504 1                          departure: ms, charged bytes, delay ms
//! 2 d 1 1504                          drop: ms, packets, charged bytes
//! ```
//!
//! # Rules (Mahimahi's)
//!
//! * Times are whole milliseconds since time 0, rounded down: Mahimahi stamps every event
//!   with its millisecond clock.
//! * The delay of a departure is `floor(departure ms) − floor(arrival ms)`, as Mahimahi
//!   subtracts the two stamps. It is not `floor(exact delay)`: a packet arriving at
//!   0.9 ms and leaving at 2.1 ms spent 1.2 ms in the link and is logged with delay 2.
//! * Sizes are charged bytes: IP length plus the link's framing (4 on a trace link, what
//!   Mahimahi reads from its TUN device).
//! * Every opportunity of the trace is listed, used or not, in time order with the packet
//!   lines; the opportunities of a millisecond come before the packet lines of that
//!   millisecond. A link without a trace (constant rate) has no opportunity lines.
//! * A drop is one line per packet (`t d 1 size`).
//!
//! # Order
//!
//! Mahimahi serves the opportunities up to now (writing their departures) before it logs
//! an arrival, then enqueues the packet and logs what the enqueue dropped. The writer
//! puts the lines in that order itself, whether the link was served up to the arrival's
//! time before or after the arrival was logged: an arrival is held until an event after
//! it; a departure, or a drop made by serving the link, at or before the held arrival's
//! time ([`Time`], exact) is written before it; a drop on the arrival's account (the
//! arrival refused, dropped at once by an outage or PIE, or another packet pushed out of
//! a drop-head queue to admit it) is written after it. Both the simulator and the
//! emulator log an arrival, then its refusal if any, then what the link reports (drops
//! first, then departures), with [`MmLog::link_drop`] sorting the link's drops. The drops
//! of the service are written in time order with the departures reported after them, so
//! a link served late over several milliseconds (the emulator's loop woken late) gives
//! the same log as one served on time.
//!
//! Differences from `mm-link`: drops are logged for every discipline, including CoDel's
//! dequeue-time drops and the drops of outages, which `mm-link` does not have; within one
//! millisecond all opportunities are listed before the departures of that millisecond
//! (Mahimahi writes each opportunity just before the departures it completes). Readers
//! that bin by the millisecond see the same log.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::Arc;

use cellcc_units::Time;

use crate::queue::{DropReason, DroppedPacket};
use crate::service::LinkService;
use crate::trace::{Trace, TraceMode, OPPORTUNITY_BYTES};

/// The times of a trace's delivery opportunities in order, in ms: opportunity `i` of
/// loop `k` is at `k × period + ts[i]`; with [`TraceMode::Once`] the list ends.
#[derive(Debug, Clone)]
pub struct OpportunityCursor {
    trace: Arc<Trace>,
    mode: TraceMode,
    index: usize,
    base_ms: u64,
}

impl OpportunityCursor {
    /// A cursor at the first opportunity of `trace`.
    pub fn new(trace: Arc<Trace>, mode: TraceMode) -> Self {
        OpportunityCursor {
            trace,
            mode,
            index: 0,
            base_ms: 0,
        }
    }

    /// The opportunities of a link served as `service`: `None` for a constant-rate link.
    pub fn for_service(service: &LinkService) -> Option<Self> {
        match service {
            LinkService::Trace { trace, mode } => Some(Self::new(trace.clone(), *mode)),
            LinkService::Constant { .. } => None,
        }
    }

    /// The next opportunity's time in ms, without consuming it.
    pub fn peek_ms(&self) -> Option<u64> {
        self.trace
            .timestamps_ms()
            .get(self.index)
            .map(|&ts| self.base_ms + u64::from(ts))
    }

    /// Consumes the next opportunity.
    fn step(&mut self) {
        self.index += 1;
        if self.index == self.trace.len() && self.mode == TraceMode::Loop {
            self.index = 0;
            self.base_ms += self.trace.period_ms();
        }
    }
}

/// What the log's header says.
#[derive(Debug, Clone)]
pub struct LogHeader {
    /// The program writing the log, in the first line's parentheses: `cellcc` for the
    /// simulator, `cellcc-emu` for the emulator (Mahimahi writes the link's name).
    pub program: &'static str,
    /// `uplink` or `downlink`.
    pub direction: &'static str,
    /// The command line, if there is one (the emulator's).
    pub command_line: Option<String>,
    /// The queue, e.g. `droptail [packets=400]`.
    pub queue: String,
    /// Unix time in ms of time 0 (0 for a simulation).
    pub init_timestamp_ms: u64,
}

/// A streaming mm-link log: header at creation, then one line per event.
#[derive(Debug)]
pub struct MmLog<W: Write> {
    out: W,
    opportunities: Option<OpportunityCursor>,
    /// The time of the last arrival while its line (and the drops at its time) wait in
    /// `held` for the departures served before it.
    held_at: Option<Time>,
    held: Vec<u8>,
    /// Drops made by the link's service (time, charged bytes), waiting to be written in
    /// time order with the departures reported after them.
    service_drops: VecDeque<(Time, u32)>,
}

impl<W: Write> MmLog<W> {
    /// Writes the header. `opportunities` lists the link's delivery opportunities (`None`
    /// for a link without a trace, see [`OpportunityCursor::for_service`]).
    pub fn new(
        mut out: W,
        header: &LogHeader,
        opportunities: Option<OpportunityCursor>,
    ) -> io::Result<Self> {
        writeln!(
            out,
            "# mahimahi mm-link ({}) [{}]",
            header.program, header.direction
        )?;
        if let Some(command_line) = &header.command_line {
            writeln!(out, "# command line: {command_line}")?;
        }
        writeln!(out, "# queue: {}", header.queue)?;
        writeln!(out, "# init timestamp: {}", header.init_timestamp_ms)?;
        writeln!(out, "# base timestamp: 0")?;
        Ok(MmLog {
            out,
            opportunities,
            held_at: None,
            held: Vec::with_capacity(64),
            service_drops: VecDeque::new(),
        })
    }

    /// Writes the held arrival and its drops.
    fn release(&mut self) -> io::Result<()> {
        if let Some(at) = self.held_at.take() {
            // Its millisecond's opportunities first; the departures that came after the
            // call but before the arrival may have needed earlier ones.
            self.catch_up(at.as_ms())?;
            self.out.write_all(&self.held)?;
            self.held.clear();
        }
        Ok(())
    }

    /// Makes way for a departure or drop at `t`: writes the held arrival first unless
    /// the event came before it.
    fn before(&mut self, t: Time) -> io::Result<()> {
        if self.held_at.is_some_and(|at| t > at) {
            self.release()?;
        }
        self.catch_up(t.as_ms())
    }

    /// Writes the waiting service drops at or before `until` (all of them for `None`).
    fn write_service_drops(&mut self, until: Option<Time>) -> io::Result<()> {
        while let Some(&(t, size)) = self.service_drops.front() {
            if until.is_some_and(|until| t > until) {
                break;
            }
            self.service_drops.pop_front();
            self.before(t)?;
            writeln!(self.out, "{} d 1 {size}", t.as_ms())?;
        }
        Ok(())
    }

    /// Writes every opportunity at or before `t_ms`.
    fn catch_up(&mut self, t_ms: u64) -> io::Result<()> {
        if let Some(cursor) = &mut self.opportunities {
            while let Some(at) = cursor.peek_ms().filter(|&at| at <= t_ms) {
                writeln!(self.out, "{at} # {OPPORTUNITY_BYTES}")?;
                cursor.step();
            }
        }
        Ok(())
    }

    /// A packet of `size` charged bytes arrived at the link at `t` (`t + size`).
    pub fn arrival(&mut self, t: Time, size: u32) -> io::Result<()> {
        self.write_service_drops(None)?;
        self.release()?;
        self.held_at = Some(t);
        writeln!(self.held, "{} + {size}", t.as_ms())
    }

    /// A packet of `size` charged bytes that arrived at `arrived` left the link at `t`
    /// (`t - size delay`, delay = `floor(t ms) − floor(arrived ms)`).
    pub fn departure(&mut self, t: Time, size: u32, arrived: Time) -> io::Result<()> {
        self.write_service_drops(Some(t))?;
        self.before(t)?;
        let t_ms = t.as_ms();
        let delay = t_ms.saturating_sub(arrived.as_ms());
        writeln!(self.out, "{t_ms} - {size} {delay}")
    }

    /// A packet of `size` charged bytes was dropped at `t` on account of the arrival at
    /// `t`: the arrival itself refused, or a packet dropped to admit it (`t d 1 size`,
    /// after the arrival's line).
    pub fn drop_on_arrival(&mut self, t: Time, size: u32) -> io::Result<()> {
        if self.held_at == Some(t) {
            return writeln!(self.held, "{} d 1 {size}", t.as_ms());
        }
        self.drop_in_service(t, size)
    }

    /// A packet of `size` charged bytes was dropped at `t` by the link's service (an
    /// AQM at dequeue, an outage): `t d 1 size`, ordered as a departure at `t` would be,
    /// and before the departures at or after `t` logged next (the link reports its
    /// drops before its departures).
    pub fn drop_in_service(&mut self, t: Time, size: u32) -> io::Result<()> {
        self.service_drops.push_back((t, size));
        Ok(())
    }

    /// A drop the link reported, of `size` charged bytes: on an arrival's account if the
    /// packet was dropped the instant it arrived or pushed out of a drop-head queue (by
    /// the arrival at that time), by the service otherwise.
    pub fn link_drop<T>(&mut self, drop: &DroppedPacket<T>, size: u32) -> io::Result<()> {
        if drop.enqueued_at == drop.at || drop.reason == DropReason::HeadDrop {
            self.drop_on_arrival(drop.at, size)
        } else {
            self.drop_in_service(drop.at, size)
        }
    }

    /// Writes the opportunities before `end` and flushes; returns the writer.
    pub fn finish(mut self, end: Time) -> io::Result<W> {
        self.write_service_drops(None)?;
        self.release()?;
        if let Some(last) = end.as_ns().checked_sub(1) {
            self.catch_up(Time::from_ns(last).as_ms())?;
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cellcc_units::Dur;

    fn header() -> LogHeader {
        LogHeader {
            program: "cellcc-emu",
            direction: "downlink",
            command_line: Some("cellcc-emu --downlink t".into()),
            queue: "infinite".into(),
            init_timestamp_ms: 1234,
        }
    }

    fn body(text: &str) -> Vec<&str> {
        text.lines().filter(|l| !l.starts_with('#')).collect()
    }

    #[test]
    fn header_has_mahimahi_lines() {
        let log = MmLog::new(Vec::new(), &header(), None).unwrap();
        let text = String::from_utf8(log.finish(Time::ZERO).unwrap()).unwrap();
        assert_eq!(
            text,
            "# mahimahi mm-link (cellcc-emu) [downlink]\n\
             # command line: cellcc-emu --downlink t\n\
             # queue: infinite\n\
             # init timestamp: 1234\n\
             # base timestamp: 0\n"
        );
        let without = LogHeader {
            command_line: None,
            ..header()
        };
        let log = MmLog::new(Vec::new(), &without, None).unwrap();
        let text = String::from_utf8(log.finish(Time::ZERO).unwrap()).unwrap();
        assert!(!text.contains("command line"), "{text}");
        assert_eq!(text.lines().count(), 4);
    }

    #[test]
    fn delay_is_the_difference_of_whole_milliseconds() {
        let mut log = MmLog::new(Vec::new(), &header(), None).unwrap();
        let at = |us| Time::from_us(us);
        // 0.9 → 2.1 ms: 1.2 ms in the link, logged 2 (floor(exact) would be 1).
        log.departure(at(2_100), 1504, at(900)).unwrap();
        // 3.0 → 3.999 ms: 0.999 ms, logged 0.
        log.departure(at(3_999), 100, at(3_000)).unwrap();
        // 4.999 → 5.0 ms: 1 µs, logged 1.
        log.departure(at(5_000), 100, at(4_999)).unwrap();
        let text = String::from_utf8(log.finish(at(6_000)).unwrap()).unwrap();
        assert_eq!(body(&text), ["2 - 1504 2", "3 - 100 0", "5 - 100 1"]);
    }

    #[test]
    fn opportunities_interleave_in_time_order_and_loop() {
        // Trace 1, 1, 3: period 3 ms, so the opportunities are 1, 1, 3, 4, 4, 6, ...
        let trace = Arc::new(Trace::from_timestamps(vec![1, 1, 3], "t").unwrap());
        let cursor = OpportunityCursor::new(trace, TraceMode::Loop);
        let mut log = MmLog::new(Vec::new(), &header(), Some(cursor)).unwrap();
        log.arrival(Time::from_us(500), 1504).unwrap();
        log.departure(Time::from_ms(1), 1504, Time::from_us(500))
            .unwrap();
        log.arrival(Time::from_ms(3) + Dur::from_us(200), 56)
            .unwrap();
        log.drop_in_service(Time::from_ms(3) + Dur::from_us(300), 1504)
            .unwrap();
        log.departure(Time::from_ms(4), 56, Time::from_ms(3) + Dur::from_us(200))
            .unwrap();
        let text = String::from_utf8(log.finish(Time::from_ms(7)).unwrap()).unwrap();
        assert_eq!(
            body(&text),
            [
                "0 + 1504",
                "1 # 1504",
                "1 # 1504",
                "1 - 1504 1",
                "3 # 1504",
                "3 + 56",
                "3 d 1 1504",
                "4 # 1504",
                "4 # 1504",
                "4 - 56 1",
                "6 # 1504",
            ]
        );
    }

    #[test]
    fn lines_of_one_instant_take_mahimahis_order_whatever_the_call_order() {
        let trace = Arc::new(Trace::from_timestamps(vec![2, 4], "t").unwrap());
        let t = |us| Time::from_us(us);
        let dropped = |enqueued_at, at, reason| DroppedPacket {
            item: (),
            ip_len: 0,
            enqueued_at,
            at,
            reason,
        };
        // The arrival at 2 ms logged before the link served its 2 ms opportunity: the
        // departure and the CoDel drop of that opportunity come first, then the arrival,
        // then its refusal and a packet pushed out for it; the departure at 2.5 ms (at or
        // after `advance` to a later time) follows them.
        let mut a = MmLog::new(
            Vec::new(),
            &header(),
            Some(OpportunityCursor::new(trace.clone(), TraceMode::Loop)),
        )
        .unwrap();
        a.arrival(t(2_000), 100).unwrap();
        a.drop_on_arrival(t(2_000), 100).unwrap();
        a.link_drop(&dropped(t(1_000), t(2_000), DropReason::Aqm), 200)
            .unwrap();
        a.link_drop(&dropped(t(1_500), t(2_000), DropReason::HeadDrop), 300)
            .unwrap();
        a.departure(t(2_000), 400, t(1_200)).unwrap();
        a.departure(t(2_500), 500, t(1_900)).unwrap();
        let a = String::from_utf8(a.finish(t(3_000)).unwrap()).unwrap();
        // The same events with the service logged before the arrival.
        let mut b = MmLog::new(
            Vec::new(),
            &header(),
            Some(OpportunityCursor::new(trace, TraceMode::Loop)),
        )
        .unwrap();
        b.link_drop(&dropped(t(1_000), t(2_000), DropReason::Aqm), 200)
            .unwrap();
        b.departure(t(2_000), 400, t(1_200)).unwrap();
        b.arrival(t(2_000), 100).unwrap();
        b.drop_on_arrival(t(2_000), 100).unwrap();
        b.link_drop(&dropped(t(1_500), t(2_000), DropReason::HeadDrop), 300)
            .unwrap();
        b.departure(t(2_500), 500, t(1_900)).unwrap();
        let b = String::from_utf8(b.finish(t(3_000)).unwrap()).unwrap();
        assert_eq!(
            body(&a),
            [
                "2 # 1504",
                "2 d 1 200",
                "2 - 400 1",
                "2 + 100",
                "2 d 1 100",
                "2 d 1 300",
                "2 - 500 1",
            ]
        );
        assert_eq!(a, b);
        // PIE's early drop of the arrival itself (dropped the instant it arrived).
        let mut c = MmLog::new(Vec::new(), &header(), None).unwrap();
        c.arrival(t(2_300), 100).unwrap();
        c.departure(t(2_100), 400, t(1_000)).unwrap();
        c.link_drop(&dropped(t(2_300), t(2_300), DropReason::Aqm), 100)
            .unwrap();
        c.arrival(t(2_400), 100).unwrap();
        let c = String::from_utf8(c.finish(t(3_000)).unwrap()).unwrap();
        assert_eq!(body(&c), ["2 - 400 1", "2 + 100", "2 d 1 100", "2 + 100"]);
    }

    #[test]
    fn a_link_served_late_gives_the_lines_in_time_order() {
        // Opportunities at 1, 2 and 3 ms, served only when a packet arrives at 3.2 ms: the
        // link reports its drops (CoDel at 1 and 3 ms), then its departures (1, 2, 3 ms).
        let trace = Arc::new(Trace::from_timestamps(vec![1, 2, 3], "t").unwrap());
        let cursor = OpportunityCursor::new(trace, TraceMode::Once);
        let mut log = MmLog::new(Vec::new(), &header(), Some(cursor)).unwrap();
        let t = |us| Time::from_us(us);
        let codel = |at| DroppedPacket {
            item: (),
            ip_len: 0,
            enqueued_at: t(0),
            at,
            reason: DropReason::Aqm,
        };
        log.arrival(t(3_200), 100).unwrap();
        log.link_drop(&codel(t(1_000)), 200).unwrap();
        log.link_drop(&codel(t(3_000)), 300).unwrap();
        for (ms, size) in [(1, 400), (2, 500), (3, 600)] {
            log.departure(Time::from_ms(ms), size, t(0)).unwrap();
        }
        let text = String::from_utf8(log.finish(t(5_000)).unwrap()).unwrap();
        assert_eq!(
            body(&text),
            [
                "1 # 1504",
                "1 d 1 200",
                "1 - 400 1",
                "2 # 1504",
                "2 - 500 2",
                "3 # 1504",
                "3 d 1 300",
                "3 - 600 3",
                "3 + 100",
            ]
        );
    }

    #[test]
    fn finish_lists_the_opportunities_before_the_end() {
        let trace = Arc::new(Trace::from_timestamps(vec![1, 2, 3], "t").unwrap());
        let service = LinkService::trace(trace, TraceMode::Loop);
        let cursor = OpportunityCursor::for_service(&service);
        let log = MmLog::new(Vec::new(), &header(), cursor).unwrap();
        // Ends at 4.5 ms: the opportunity at 4 ms is before the end, the one at 5 is not.
        let end = Time::from_ms(4) + Dur::from_us(500);
        let text = String::from_utf8(log.finish(end).unwrap()).unwrap();
        assert_eq!(
            body(&text),
            ["1 # 1504", "2 # 1504", "3 # 1504", "4 # 1504"]
        );
        let constant = LinkService::constant(cellcc_units::Bandwidth::from_mbps(10.0));
        assert!(OpportunityCursor::for_service(&constant).is_none());
    }

    #[test]
    fn once_mode_stops_after_the_last_line() {
        let trace = Arc::new(Trace::from_timestamps(vec![0, 2], "t").unwrap());
        let cursor = OpportunityCursor::new(trace, TraceMode::Once);
        let log = MmLog::new(Vec::new(), &header(), Some(cursor)).unwrap();
        let text = String::from_utf8(log.finish(Time::from_ms(100)).unwrap()).unwrap();
        assert_eq!(body(&text), ["0 # 1504", "2 # 1504"]);
    }

    #[test]
    fn cursor_matches_the_link_model_on_a_trace_starting_at_zero() {
        // Mahimahi: a trace starting at 0 fires two opportunities at each wrap.
        let trace = Arc::new(Trace::from_timestamps(vec![0, 2], "t").unwrap());
        let mut cursor = OpportunityCursor::new(trace.clone(), TraceMode::Loop);
        let mut got = Vec::new();
        while let Some(at) = cursor.peek_ms().filter(|&at| at <= 6) {
            got.push(at);
            cursor.step();
        }
        assert_eq!(got, trace.opportunity_times_ms(TraceMode::Loop, 7));
        assert_eq!(got, [0, 2, 2, 4, 4, 6, 6]);
    }
}
