//! Per-packet link log in the format of `mm-link --uplink-log/--downlink-log`
//! (ravinet/mahimahi `man/mm-link.1`), streamed to any writer so that Mahimahi's
//! `mm-throughput-graph` and `mm-delay-graph` read it.
//!
//! ```text
//! # mahimahi mm-link (cellcc-emu) [downlink] > FILE
//! # command line: ...
//! # queue: droptail [packets=400]
//! # init timestamp: 1764000000000      (Unix ms of emulator time 0)
//! # base timestamp: 0
//! 0 + 1504                            arrival at the link: ms, charged bytes
//! 1 # 1504                            delivery opportunity of 1504 bytes
//! 1 - 1504 1                          departure: ms, charged bytes, delay ms
//! 2 d 1 1504                          drop: ms, packets, charged bytes
//! ```
//!
//! Times are whole milliseconds since emulator time 0 (floor). Sizes are charged bytes
//! (IP length + 4, what Mahimahi reads from its TUN device). The delay of a departure is
//! `floor(departure ms) − floor(arrival ms)`, as Mahimahi computes it from its ms clock.
//! Every opportunity of the trace is listed, used or not, in time order with the packet
//! lines (opportunities at a millisecond come before arrivals in it, as Mahimahi serves
//! opportunities before enqueueing).
//!
//! Differences from `mm-link`: drops are logged for every discipline, including CoDel's
//! dequeue-time drops, which `mm-link` does not log.

use std::io::{self, Write};
use std::sync::Arc;

use cellcc_link::{Trace, TraceMode, OPPORTUNITY_BYTES};
use cellcc_units::Time;

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

    /// The next opportunity's time in ms, without consuming it.
    pub fn peek_ms(&self) -> Option<u64> {
        self.trace
            .timestamps_ms()
            .get(self.index)
            .map(|&ts| self.base_ms + u64::from(ts))
    }

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
    /// `uplink` or `downlink`.
    pub direction: &'static str,
    /// The command line of the emulator.
    pub command_line: String,
    /// The queue in Mahimahi's spelling, e.g. `droptail [packets=400]`.
    pub queue: String,
    /// Unix time in ms of emulator time 0.
    pub init_timestamp_ms: u64,
}

/// A streaming mm-link log.
#[derive(Debug)]
pub struct MmLog<W: Write> {
    out: W,
    opportunities: Option<OpportunityCursor>,
}

impl<W: Write> MmLog<W> {
    /// Writes the header. `opportunities` lists the link's delivery opportunities (`None`
    /// for a link without a trace).
    pub fn new(
        mut out: W,
        header: &LogHeader,
        opportunities: Option<OpportunityCursor>,
    ) -> io::Result<Self> {
        writeln!(
            out,
            "# mahimahi mm-link (cellcc-emu) [{}]",
            header.direction
        )?;
        writeln!(out, "# command line: {}", header.command_line)?;
        writeln!(out, "# queue: {}", header.queue)?;
        writeln!(out, "# init timestamp: {}", header.init_timestamp_ms)?;
        writeln!(out, "# base timestamp: 0")?;
        Ok(MmLog { out, opportunities })
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

    /// A packet of `size` charged bytes arrived at the link at `t`.
    pub fn arrival(&mut self, t: Time, size: u32) -> io::Result<()> {
        self.catch_up(t.as_ms())?;
        writeln!(self.out, "{} + {size}", t.as_ms())
    }

    /// A packet that arrived at `arrived` left the link at `t`.
    pub fn departure(&mut self, t: Time, size: u32, arrived: Time) -> io::Result<()> {
        self.catch_up(t.as_ms())?;
        let delay = t.as_ms().saturating_sub(arrived.as_ms());
        writeln!(self.out, "{} - {size} {delay}", t.as_ms())
    }

    /// A packet was dropped at `t`.
    pub fn drop_packet(&mut self, t: Time, size: u32) -> io::Result<()> {
        self.catch_up(t.as_ms())?;
        writeln!(self.out, "{} d 1 {size}", t.as_ms())
    }

    /// Writes the opportunities before `end` and flushes; returns the writer.
    pub fn finish(mut self, end: Time) -> io::Result<W> {
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
            direction: "downlink",
            command_line: "cellcc-emu --downlink t".into(),
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
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "# mahimahi mm-link (cellcc-emu) [downlink]");
        assert!(lines.contains(&"# queue: infinite"));
        assert!(lines.contains(&"# init timestamp: 1234"));
        assert!(lines.contains(&"# base timestamp: 0"));
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
        log.drop_packet(Time::from_ms(3) + Dur::from_us(300), 1504)
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
