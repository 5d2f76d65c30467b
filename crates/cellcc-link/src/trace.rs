//! Mahimahi packet-delivery traces: parsing, validation, summary statistics and the
//! arithmetic that maps a (possibly looping) trace onto simulation time.
//!
//! Format (Mahimahi `mm-link`, ravinet/mahimahi `src/frontend/link_queue.cc`): one line
//! per delivery opportunity, each line a non-negative decimal integer number of
//! milliseconds since the link started. A timestamp repeated k times means k
//! opportunities in that millisecond. Mahimahi rejects a trace with no lines or whose last
//! timestamp is 0; the last timestamp is also the loop period.
//!
//! Differences from Mahimahi's reader:
//! 1. Stricter: Mahimahi converts lines with `atoi`-style parsing; here any character
//!    other than ASCII digits (a sign, a space, a `\r`, a decimal point) is an error that
//!    names the file and line and says how to fix it, and a decreasing timestamp is an
//!    error rather than undefined behaviour of the schedule.
//! 2. Timestamps are stored as `u32` milliseconds (traces up to about 49.7 days).

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use cellcc_units::{Dur, Time, NS_PER_MS};

/// Bytes Mahimahi lets through at each delivery opportunity (`PACKET_SIZE = 1504` in
/// link_queue.cc: the largest TUN read, a 1500-byte IP packet plus the 4-byte
/// packet-information header).
pub const OPPORTUNITY_BYTES: u32 = 1504;

/// Bytes per opportunity in the "capacity" convention of Mahimahi's man page and trace
/// README, and of published mean rates (lines × 1500 × 8 / duration).
pub const NOMINAL_PACKET_BYTES: u32 = 1500;

/// Whether a trace link repeats its trace.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum TraceMode {
    /// Repeat forever with period = last timestamp (Mahimahi's default).
    #[default]
    Loop,
    /// Play the trace once, then deliver nothing, forever (`mm-link --once`).
    Once,
}

/// Longest part of an offending line quoted back in an error message.
const MAX_QUOTED_CHARS: usize = 40;
/// Longest line a trace may hold, in bytes: a `u32` timestamp has at most 10 digits, so
/// this leaves room for leading zeros while a file without newlines is refused after 64
/// bytes instead of being read whole into memory.
pub const MAX_TRACE_LINE_BYTES: usize = 64;
/// Most delivery opportunities one trace (after `scale`) may hold: 50 million lines,
/// 200 MB of timestamps, about 100 times the longest public Mahimahi trace.
pub const MAX_TRACE_OPPORTUNITIES: usize = 50_000_000;

/// Why a trace could not be read. Every message names the file, the 1-based line where
/// possible, and how to fix the problem.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be read.
    #[error("{file}: cannot read the trace: {source}")]
    Io {
        /// The path as given, or the name a parsed trace was given.
        file: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file holds no line.
    #[error("{file}:1: the file is empty; a Mahimahi trace needs at least one line holding a millisecond timestamp")]
    Empty {
        /// The path as given, or the name a parsed trace was given.
        file: String,
    },
    /// A line is empty.
    #[error("{file}:{line}: the line is blank; Mahimahi rejects blank lines, delete it (check for a doubled newline at the end of the file)")]
    BlankLine {
        /// The path as given, or the name a parsed trace was given.
        file: String,
        /// 1-based line number.
        line: u64,
    },
    /// A line ends with `\r`.
    #[error("{file}:{line}: the line ends with a carriage return (Windows line ending); convert the file with `dos2unix` or `tr -d '\\r'`")]
    CarriageReturn {
        /// The path as given, or the name a parsed trace was given.
        file: String,
        /// 1-based line number.
        line: u64,
    },
    /// A timestamp is below 0.
    #[error("{file}:{line}: timestamp {found} is negative; Mahimahi timestamps count milliseconds from 0")]
    Negative {
        /// The path as given, or the name a parsed trace was given.
        file: String,
        /// 1-based line number.
        line: u64,
        /// The offending line, cut to 40 characters (then `...`).
        found: String,
    },
    /// A line is not a non-negative decimal integer.
    #[error("{file}:{line}: expected a whole number of milliseconds, found {found:?}; every line of a Mahimahi trace is one non-negative decimal integer with no spaces, signs or decimal point")]
    NotAnInteger {
        /// The path as given, or the name a parsed trace was given.
        file: String,
        /// 1-based line number.
        line: u64,
        /// The offending line, cut to 40 characters (then `...`).
        found: String,
    },
    /// A timestamp exceeds `u32::MAX` milliseconds.
    #[error("{file}:{line}: timestamp {found} does not fit in 32 bits of milliseconds (about 49.7 days); shorten the trace")]
    TooLarge {
        /// The path as given, or the name a parsed trace was given.
        file: String,
        /// 1-based line number.
        line: u64,
        /// The offending line, cut to 40 characters (then `...`).
        found: String,
    },
    /// A timestamp is smaller than the one before it.
    #[error("{file}:{line}: timestamp {value} is smaller than the previous line's {previous}; Mahimahi traces must be non-decreasing")]
    Decreasing {
        /// The path as given, or the name a parsed trace was given.
        file: String,
        /// 1-based line number.
        line: u64,
        /// This line's timestamp, ms.
        value: u32,
        /// The previous line's timestamp, ms.
        previous: u32,
    },
    /// The last timestamp, which sets the loop period, is 0.
    #[error("{file}:{line}: the last timestamp is 0, so the trace lasts no time; the last line sets the loop period and must be greater than 0")]
    ZeroDuration {
        /// The path as given, or the name a parsed trace was given.
        file: String,
        /// 1-based line number.
        line: u64,
    },
    /// The path is not a regular file (a directory, a FIFO, a device such as `/dev/zero`).
    #[error("{file}: not a regular file; a trace must be a regular file (not a directory, FIFO or device)")]
    NotAFile {
        /// The path as given.
        file: String,
    },
    /// A line is longer than [`MAX_TRACE_LINE_BYTES`].
    #[error("{file}:{line}: the line is longer than {MAX_TRACE_LINE_BYTES} bytes; a Mahimahi trace holds one whole number of milliseconds per line")]
    LineTooLong {
        /// The path as given, or the name a parsed trace was given.
        file: String,
        /// 1-based line number.
        line: u64,
    },
    /// The trace holds more than [`MAX_TRACE_OPPORTUNITIES`] lines.
    #[error("{file}: more than {MAX_TRACE_OPPORTUNITIES} delivery opportunities (lines); shorten the trace")]
    TooManyLines {
        /// The path as given, or the name a parsed trace was given.
        file: String,
    },
}

/// A validated Mahimahi trace: non-empty, non-decreasing, last timestamp > 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    name: String,
    /// One entry per delivery opportunity, in milliseconds from the start of the link.
    timestamps_ms: Vec<u32>,
}

/// Where one opportunity sits in a looping trace: line `index` of repetition `cycle`,
/// at `cycle × period + timestamps[index]` milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Position {
    pub cycle: u64,
    pub index: usize,
}

/// Summary of a trace, in the conventions of the shared traces README.
///
/// Rates use the 1500-byte convention ([`NOMINAL_PACKET_BYTES`]) so that they match
/// published numbers; multiply by 1504/1500 for the bytes the link really carries per
/// opportunity ([`OPPORTUNITY_BYTES`]).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TraceStats {
    /// The last timestamp, which is also the loop period.
    pub duration: Dur,
    /// Number of lines (delivery opportunities per period).
    pub opportunities: u64,
    /// The first timestamp.
    pub first_ts: Dur,
    /// lines × 1500 × 8 / duration, in Mbit/s.
    pub mean_mbps: f64,
    /// 5th percentile (linear interpolation between closest ranks) of the capacity in
    /// each second of the period, Mbit/s; see [`Trace::stats`] for how seconds are formed.
    pub capacity_p5_mbps: f64,
    /// 25th percentile of the per-second capacity, Mbit/s.
    pub capacity_p25_mbps: f64,
    /// Median of the per-second capacity, Mbit/s.
    pub capacity_p50_mbps: f64,
    /// 75th percentile of the per-second capacity, Mbit/s.
    pub capacity_p75_mbps: f64,
    /// 95th percentile of the per-second capacity, Mbit/s.
    pub capacity_p95_mbps: f64,
    /// Highest per-second capacity, Mbit/s.
    pub max_mbps_1s: f64,
    /// Largest difference between consecutive timestamps (the README's "max gap").
    pub max_gap: Dur,
    /// Longest span with no opportunity as the link experiences it: the larger of
    /// `max_gap` and `first_ts`. The span before the first line is an outage both at
    /// start-up and at every wrap (the opportunity after the last line of one cycle comes
    /// `first_ts` later, because the period equals the last timestamp).
    pub longest_outage: Dur,
}

/// Checks lines one at a time, so that files and in-memory vectors get the same rules
/// and the same messages.
struct Validator<'a> {
    file: &'a str,
    line: u64,
    timestamps: Vec<u32>,
}

impl<'a> Validator<'a> {
    fn new(file: &'a str) -> Self {
        Validator {
            file,
            line: 0,
            timestamps: Vec::new(),
        }
    }

    fn push(&mut self, value: u32) -> Result<(), TraceError> {
        if self.timestamps.len() >= MAX_TRACE_OPPORTUNITIES {
            return Err(TraceError::TooManyLines {
                file: self.file.to_string(),
            });
        }
        self.line += 1;
        if let Some(&previous) = self.timestamps.last() {
            if value < previous {
                return Err(TraceError::Decreasing {
                    file: self.file.to_string(),
                    line: self.line,
                    value,
                    previous,
                });
            }
        }
        self.timestamps.push(value);
        Ok(())
    }

    fn finish(self, name: &str) -> Result<Trace, TraceError> {
        match self.timestamps.last() {
            None => Err(TraceError::Empty {
                file: self.file.to_string(),
            }),
            Some(0) => Err(TraceError::ZeroDuration {
                file: self.file.to_string(),
                line: self.line,
            }),
            Some(_) => Ok(Trace {
                name: name.to_string(),
                timestamps_ms: self.timestamps,
            }),
        }
    }
}

/// Parses one line (without its `\n`) as a millisecond timestamp.
fn parse_line(bytes: &[u8], file: &str, line: u64) -> Result<u32, TraceError> {
    let quoted = || {
        let text = String::from_utf8_lossy(bytes);
        let mut s: String = text.chars().take(MAX_QUOTED_CHARS).collect();
        if text.chars().count() > MAX_QUOTED_CHARS {
            s.push_str("...");
        }
        s
    };
    let file = file.to_string();
    if bytes.is_empty() {
        return Err(TraceError::BlankLine { file, line });
    }
    if bytes.last() == Some(&b'\r') {
        return Err(TraceError::CarriageReturn { file, line });
    }
    let is_digits = |b: &[u8]| !b.is_empty() && b.iter().all(u8::is_ascii_digit);
    if bytes[0] == b'-' && is_digits(&bytes[1..]) {
        return Err(TraceError::Negative {
            file,
            line,
            found: quoted(),
        });
    }
    if !is_digits(bytes) {
        return Err(TraceError::NotAnInteger {
            file,
            line,
            found: quoted(),
        });
    }
    let mut value: u64 = 0;
    for &b in bytes {
        value = value * 10 + u64::from(b - b'0');
        if value > u64::from(u32::MAX) {
            return Err(TraceError::TooLarge {
                file,
                line,
                found: quoted(),
            });
        }
    }
    Ok(value as u32)
}

impl Trace {
    /// Reads a trace file. Errors name the path as given; the trace is named after the
    /// file name. Only regular files are read (a FIFO would block, a device never ends).
    pub fn from_file(path: impl AsRef<Path>) -> Result<Trace, TraceError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let io = |source| TraceError::Io {
            file: shown.clone(),
            source,
        };
        // Checked before opening: opening a FIFO for reading blocks until a writer comes.
        if !std::fs::metadata(path).map_err(io)?.is_file() {
            return Err(TraceError::NotAFile { file: shown });
        }
        let file = File::open(path).map_err(io)?;
        // Checked again on the open file, in case the path changed in between.
        if !file.metadata().map_err(io)?.is_file() {
            return Err(TraceError::NotAFile { file: shown });
        }
        let mut trace = Self::parse(BufReader::new(file), &shown)?;
        if let Some(file_name) = path.file_name().and_then(|n| n.to_str()) {
            trace.name = file_name.to_string();
        }
        Ok(trace)
    }

    /// Parses a trace from a reader, one line at a time; `name` labels the trace and its
    /// error messages. The last line may omit its newline. A line longer than
    /// [`MAX_TRACE_LINE_BYTES`] is an error, found without reading the rest of it.
    pub fn parse(mut reader: impl BufRead, name: &str) -> Result<Trace, TraceError> {
        let mut validator = Validator::new(name);
        let mut buf = Vec::with_capacity(16);
        // A line and its newline, plus one byte to tell a line that is too long.
        let limit = (MAX_TRACE_LINE_BYTES + 2) as u64;
        loop {
            buf.clear();
            let n = (&mut reader)
                .take(limit)
                .read_until(b'\n', &mut buf)
                .map_err(|source| TraceError::Io {
                    file: name.to_string(),
                    source,
                })?;
            if n == 0 {
                break;
            }
            if buf.last() == Some(&b'\n') {
                buf.pop();
            }
            if buf.len() > MAX_TRACE_LINE_BYTES {
                return Err(TraceError::LineTooLong {
                    file: name.to_string(),
                    line: validator.line + 1,
                });
            }
            let value = parse_line(&buf, name, validator.line + 1)?;
            validator.push(value)?;
        }
        validator.finish(name)
    }

    /// Builds a trace from timestamps (ms), applying the same checks as the parser; line
    /// numbers in errors are 1-based indices into `timestamps_ms`.
    pub fn from_timestamps(timestamps_ms: Vec<u32>, name: &str) -> Result<Trace, TraceError> {
        let mut validator = Validator::new(name);
        validator
            .timestamps
            .reserve(timestamps_ms.len().min(MAX_TRACE_OPPORTUNITIES));
        for value in timestamps_ms {
            validator.push(value)?;
        }
        validator.finish(name)
    }

    /// The file name (or the name given to [`Trace::parse`]).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// One entry per delivery opportunity, in milliseconds.
    pub fn timestamps_ms(&self) -> &[u32] {
        &self.timestamps_ms
    }

    /// Number of lines, i.e. opportunities per period.
    pub fn len(&self) -> usize {
        self.timestamps_ms.len()
    }

    /// Always false: a validated trace has at least one line.
    pub fn is_empty(&self) -> bool {
        self.timestamps_ms.is_empty()
    }

    /// Loop period in ms: the last timestamp (never 0).
    pub fn period_ms(&self) -> u64 {
        // A validated trace is non-empty.
        u64::from(
            *self
                .timestamps_ms
                .last()
                .expect("validated trace is non-empty"),
        )
    }

    /// The times (ms) of every opportunity strictly before `end_ms`, in order, as the
    /// link sees them in `mode` (a looping trace repeats with period = last timestamp).
    /// Meant for logs and plots of bounded runs.
    pub fn opportunity_times_ms(&self, mode: TraceMode, end_ms: u64) -> Vec<u64> {
        let period = self.period_ms();
        let mut out = Vec::new();
        for cycle in 0.. {
            if mode == TraceMode::Once && cycle > 0 {
                break;
            }
            let base = cycle * period;
            if base >= end_ms {
                break;
            }
            for &ts in &self.timestamps_ms {
                let t = base + u64::from(ts);
                if t >= end_ms {
                    return out;
                }
                out.push(t);
            }
        }
        out
    }

    /// Summary statistics; see [`TraceStats`] for each field.
    ///
    /// Per-second capacity: the period is cut into whole seconds `[s, s+1)` from 0, with
    /// a final partial second scaled by its length. A line whose timestamp equals the
    /// period is counted at phase 0, where looping plays it (it coincides with the next
    /// cycle's start), so the seconds tile one period of the looping link exactly.
    pub fn stats(&self) -> TraceStats {
        let period_ms = self.period_ms();
        let lines = self.timestamps_ms.len() as u64;
        let bits_per_opportunity = f64::from(NOMINAL_PACKET_BYTES * 8);
        let mean_mbps = lines as f64 * bits_per_opportunity / (period_ms as f64 / 1e3) / 1e6;

        let seconds = period_ms.div_ceil(1000) as usize;
        let mut per_second = vec![0u64; seconds];
        for &ts in &self.timestamps_ms {
            let phase = if u64::from(ts) == period_ms {
                0
            } else {
                u64::from(ts)
            };
            per_second[(phase / 1000) as usize] += 1;
        }
        let mut mbps: Vec<f64> = per_second
            .iter()
            .enumerate()
            .map(|(s, &count)| {
                let length_ms = (period_ms - s as u64 * 1000).min(1000);
                count as f64 * bits_per_opportunity / (length_ms as f64 / 1e3) / 1e6
            })
            .collect();
        mbps.sort_by(f64::total_cmp);

        let first = u64::from(self.timestamps_ms[0]);
        let max_gap = self
            .timestamps_ms
            .windows(2)
            .map(|w| u64::from(w[1] - w[0]))
            .max()
            .unwrap_or(0);
        TraceStats {
            duration: Dur::from_ms(period_ms),
            opportunities: lines,
            first_ts: Dur::from_ms(first),
            mean_mbps,
            capacity_p5_mbps: percentile(&mbps, 5.0),
            capacity_p25_mbps: percentile(&mbps, 25.0),
            capacity_p50_mbps: percentile(&mbps, 50.0),
            capacity_p75_mbps: percentile(&mbps, 75.0),
            capacity_p95_mbps: percentile(&mbps, 95.0),
            max_mbps_1s: mbps.last().copied().unwrap_or(0.0),
            max_gap: Dur::from_ms(max_gap),
            longest_outage: Dur::from_ms(max_gap.max(first)),
        }
    }

    // ---- Position arithmetic for the link (all in the looping schedule) ----

    /// Time of the opportunity at `pos`, or `None` if it lies beyond [`Time::MAX`].
    pub(crate) fn time_of(&self, pos: Position) -> Option<Time> {
        let ms = pos
            .cycle
            .checked_mul(self.period_ms())?
            .checked_add(u64::from(self.timestamps_ms[pos.index]))?;
        ms.checked_mul(NS_PER_MS).map(Time)
    }

    /// The first opportunity later than millisecond `m` (so every opportunity before it
    /// is at or before `m`).
    ///
    /// With `m = q × period + r` (0 ≤ r < period), all of cycle `q - 1` ends at
    /// `q × period ≤ m`, and cycle `q` always has a line later than `r` because its last
    /// line is at `period > r`.
    pub(crate) fn first_after_ms(&self, m: u64) -> Position {
        let period = self.period_ms();
        let (cycle, r) = (m / period, m % period);
        let index = self.timestamps_ms.partition_point(|&ts| u64::from(ts) <= r);
        debug_assert!(
            index < self.timestamps_ms.len(),
            "the last line is at the period, which is > r"
        );
        Position { cycle, index }
    }

    /// The first opportunity later than `t`. Opportunities fall on whole milliseconds,
    /// so "at or before `t`" is "at or before floor(t) ms".
    pub(crate) fn first_after(&self, t: Time) -> Position {
        self.first_after_ms(t.as_ms())
    }

    /// The first opportunity at or after `t`: the first after ceil(t) − 1 ms.
    pub(crate) fn first_at_or_after(&self, t: Time) -> Position {
        match t.as_ns().div_ceil(NS_PER_MS) {
            0 => Position { cycle: 0, index: 0 },
            ceil_ms => self.first_after_ms(ceil_ms - 1),
        }
    }

    /// Number of opportunities before `pos` since the link started, in `mode` (a `Once`
    /// link has only cycle 0).
    pub(crate) fn ordinal(&self, pos: Position, mode: TraceMode) -> u128 {
        let lines = self.timestamps_ms.len() as u128;
        let ordinal = u128::from(pos.cycle) * lines + pos.index as u128;
        match mode {
            TraceMode::Loop => ordinal,
            TraceMode::Once => ordinal.min(lines),
        }
    }
}

/// Percentile `p` (0–100) of sorted `values`, interpolating linearly between the two
/// closest ranks (NumPy's default method).
fn percentile(sorted: &[f64], p: f64) -> f64 {
    match sorted.len() {
        0 => 0.0,
        1 => sorted[0],
        n => {
            let rank = p / 100.0 * (n - 1) as f64;
            let lo = rank.floor() as usize;
            let hi = rank.ceil() as usize;
            sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(ts: &[u32]) -> Trace {
        Trace::from_timestamps(ts.to_vec(), "t").unwrap()
    }

    /// Every (cycle, index) in time order for the first few cycles, by brute force.
    fn schedule(t: &Trace, cycles: u64) -> Vec<(u64, Position)> {
        let mut out = Vec::new();
        for cycle in 0..cycles {
            for index in 0..t.len() {
                let pos = Position { cycle, index };
                out.push((t.time_of(pos).unwrap().as_ms(), pos));
            }
        }
        out
    }

    #[test]
    fn first_after_matches_brute_force() {
        for ts in [
            &[0u32, 2][..],
            &[5],
            &[1, 1, 3, 5],
            &[0, 0, 7, 7, 7, 9],
            &[3, 3, 3],
        ] {
            let t = trace(ts);
            let sched = schedule(&t, 6);
            for m in 0..(3 * t.period_ms()) {
                let expect = sched.iter().find(|(time, _)| *time > m).unwrap().1;
                assert_eq!(t.first_after_ms(m), expect, "trace {ts:?}, m = {m}");
                let ordinal = sched.iter().filter(|(time, _)| *time <= m).count() as u128;
                assert_eq!(t.ordinal(expect, TraceMode::Loop), ordinal);
            }
        }
    }

    #[test]
    fn first_at_or_after_rounds_partial_milliseconds_up() {
        let t = trace(&[1, 2]);
        assert_eq!(
            t.first_at_or_after(Time::ZERO),
            Position { cycle: 0, index: 0 }
        );
        assert_eq!(
            t.first_at_or_after(Time::from_ms(1)),
            Position { cycle: 0, index: 0 }
        );
        assert_eq!(
            t.first_at_or_after(Time::from_ms(1) + Dur(1)),
            Position { cycle: 0, index: 1 }
        );
        assert_eq!(
            t.first_after(Time::from_ms(1)),
            Position { cycle: 0, index: 1 }
        );
        assert_eq!(
            t.first_after(Time::from_ms(1) - Dur(1)),
            Position { cycle: 0, index: 0 }
        );
    }

    #[test]
    fn opportunity_times_loop_and_once() {
        let t = trace(&[0, 2]);
        assert_eq!(
            t.opportunity_times_ms(TraceMode::Loop, 7),
            vec![0, 2, 2, 4, 4, 6, 6]
        );
        assert_eq!(t.opportunity_times_ms(TraceMode::Once, 7), vec![0, 2]);
        assert_eq!(t.opportunity_times_ms(TraceMode::Loop, 2), vec![0]);
    }

    #[test]
    fn stats_of_a_small_trace() {
        // Period 2000 ms; lines at 0 and 2000 both fall at phase 0 (second 0).
        let t = trace(&[0, 10, 1500, 1999, 2000]);
        let s = t.stats();
        assert_eq!(s.duration, Dur::from_ms(2000));
        assert_eq!(s.opportunities, 5);
        // 5 × 1500 × 8 bits over 2 s.
        assert!((s.mean_mbps - 0.03).abs() < 1e-12);
        // Second 0: lines 0, 10, 2000 → 3 × 12000 bit/s; second 1: 2 lines.
        assert!((s.max_mbps_1s - 0.036).abs() < 1e-12);
        assert!((s.capacity_p5_mbps - (0.024 + 0.012 * 0.05)).abs() < 1e-12);
        assert_eq!(s.max_gap, Dur::from_ms(1490));
        assert_eq!(s.longest_outage, Dur::from_ms(1490));
        let late_start = trace(&[3000, 3001]).stats();
        assert_eq!(late_start.longest_outage, Dur::from_ms(3000));
        assert_eq!(late_start.max_gap, Dur::from_ms(1));
    }

    #[test]
    fn a_line_without_end_is_refused_after_the_line_limit() {
        // An endless line (as /dev/zero or a huge file without newlines) is never read
        // whole: the reader stops right after the limit.
        let endless = std::io::repeat(b'1');
        let err = Trace::parse(std::io::BufReader::new(endless), "t").unwrap_err();
        assert!(
            matches!(err, TraceError::LineTooLong { line: 1, .. }),
            "{err}"
        );
        let long = format!("5\n{}\n", "0".repeat(MAX_TRACE_LINE_BYTES + 1));
        let err = Trace::parse(long.as_bytes(), "t").unwrap_err();
        assert!(
            matches!(err, TraceError::LineTooLong { line: 2, .. }),
            "{err}"
        );
        let leading_zeros = format!("{}7\n", "0".repeat(MAX_TRACE_LINE_BYTES - 1));
        assert_eq!(
            Trace::parse(leading_zeros.as_bytes(), "t")
                .unwrap()
                .timestamps_ms(),
            &[7]
        );
    }

    #[test]
    fn only_regular_files_are_read() {
        for path in ["/dev/zero", "/"] {
            let err = Trace::from_file(path).unwrap_err();
            assert!(matches!(err, TraceError::NotAFile { .. }), "{path}: {err}");
        }
    }
}
