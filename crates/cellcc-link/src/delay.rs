//! Fixed propagation delay (Mahimahi `mm-delay`, ravinet/mahimahi
//! `src/frontend/delay_queue.cc`): every item pushed at `now` is released at
//! `now + delay`, in push order.
//!
//! Differences from Mahimahi:
//! 1. The delay is any number of nanoseconds; `mm-delay` takes whole milliseconds.
//!
//! A [`DelayTrace`] gives a delay that varies with time, as `mm-file-delay`
//! (ravinet/mahimahi pull request 135, `file_delay_queue.cc`): the delay of a packet is
//! the trace's value at the step its arrival falls in, and the line stays FIFO
//! ([`DelayLine::push_with_delay`]).

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use cellcc_units::{Dur, Time, NS_PER_MS};

use crate::release::ReleaseQueue;

/// Largest delay a delay trace may give, ms (one minute, the simulator's bound on
/// `delay_ms`): beyond any radio or satellite path.
pub const MAX_TRACE_DELAY_MS: f64 = 60_000.0;
/// Longest line of a delay trace, bytes: a refused file without newlines is caught
/// without reading it whole.
const MAX_DELAY_LINE_BYTES: usize = 64;
/// Most values a delay trace may hold (10 M: almost three hours at 1 ms steps).
pub const MAX_DELAY_TRACE_VALUES: usize = 10_000_000;
/// Longest step of a delay trace, ms.
pub const MAX_DELAY_STEP_MS: u64 = 3_600_000;

/// A FIFO of items in flight for a fixed time.
#[derive(Clone, Debug)]
pub struct DelayLine<T> {
    delay: Dur,
    /// Release times non-decreasing (pushes come in time order), taken out by `pop_due`.
    in_flight: ReleaseQueue<T>,
}

impl<T> DelayLine<T> {
    /// An empty line that holds every item for `delay`.
    pub fn new(delay: Dur) -> Self {
        DelayLine {
            delay,
            in_flight: ReleaseQueue::new(),
        }
    }

    /// The fixed delay every item sees.
    pub fn delay(&self) -> Dur {
        self.delay
    }

    /// Sends `item` at `now`; it is released at `now + delay`. Pushes must come in
    /// non-decreasing `now` order (they do in an event-driven simulation), which keeps
    /// the line FIFO.
    #[inline]
    pub fn push(&mut self, now: Time, item: T) {
        let release = now.saturating_add(self.delay);
        debug_assert!(
            self.in_flight
                .last_pending()
                .is_none_or(|last| last <= release),
            "pushes must be in time order for a fixed delay to stay FIFO"
        );
        self.in_flight.push(release, item);
    }

    /// The oldest item whose release time is at or before `now`.
    pub fn pop_ready(&mut self, now: Time) -> Option<T> {
        self.pop_ready_with_time(now).map(|(_, item)| item)
    }

    /// Like [`DelayLine::pop_ready`], with the item's release time (useful when called
    /// after that time).
    #[inline]
    pub fn pop_ready_with_time(&mut self, now: Time) -> Option<(Time, T)> {
        self.in_flight.pop_due(now)
    }

    /// Sends `item` at `now` for `delay` instead of the line's fixed delay (a
    /// [`DelayTrace`]'s value). The line stays FIFO, as `mm-file-delay`'s queue: an item
    /// whose delay would take it out before the item ahead of it leaves together with
    /// that item (release = max(now + delay, release of the item ahead)).
    #[inline]
    pub fn push_with_delay(&mut self, now: Time, delay: Dur, item: T) {
        let release = now.saturating_add(delay);
        let release = self
            .in_flight
            .last_pending()
            .map_or(release, |last| last.max(release));
        self.in_flight.push(release, item);
    }

    /// Release time of the oldest item, if any.
    #[inline]
    pub fn next_wakeup(&self) -> Option<Time> {
        self.in_flight.next_wakeup()
    }

    /// Items in flight.
    pub fn len(&self) -> usize {
        self.in_flight.len()
    }

    /// Whether nothing is in flight.
    pub fn is_empty(&self) -> bool {
        self.in_flight.is_empty()
    }
}

/// Why a delay trace could not be read: every message names the file and, where there
/// is one, the 1-based line.
#[derive(Debug, thiserror::Error)]
pub enum DelayTraceError {
    /// The file could not be read.
    #[error("{file}: cannot read the delay trace: {source}")]
    Io {
        /// The path as given.
        file: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Not a regular file.
    #[error("{file}: not a regular file; a delay trace must be a regular file (not a directory, FIFO or device)")]
    NotAFile {
        /// The path as given.
        file: String,
    },
    /// No value in the file.
    #[error("{file}:1: the delay trace holds no delay; give one delay in ms per line")]
    Empty {
        /// The path as given.
        file: String,
    },
    /// A line is not a delay.
    #[error("{file}:{line}: {message}")]
    Line {
        /// The path as given.
        file: String,
        /// 1-based line number.
        line: u64,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// Too many values.
    #[error(
        "{file}: more than {MAX_DELAY_TRACE_VALUES} delays; shorten the trace or use a longer step"
    )]
    TooManyValues {
        /// The path as given.
        file: String,
    },
    /// The step is out of range.
    #[error("the step of a delay trace must be 1 to {MAX_DELAY_STEP_MS} ms, got {0}")]
    Step(u64),
}

/// A one-way delay that changes with time, read from a file in `mm-file-delay`'s format:
/// one delay per line, in milliseconds (decimals allowed, e.g. `42` or `37.5`), line k
/// (counting from 0, comment lines `# ...` not counted) holding the delay of packets that
/// arrive in `[k × step, (k + 1) × step)` ms after the start. After the last line the
/// trace starts again (`mm-file-delay` loops it the same way).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DelayTrace {
    name: String,
    step: Dur,
    delays: Vec<Dur>,
}

impl DelayTrace {
    /// A delay trace from values (the `step` is at least 1 ms).
    pub fn new(name: &str, step_ms: u64, delays: Vec<Dur>) -> Result<Self, DelayTraceError> {
        if !(1..=MAX_DELAY_STEP_MS).contains(&step_ms) {
            return Err(DelayTraceError::Step(step_ms));
        }
        if delays.is_empty() {
            return Err(DelayTraceError::Empty {
                file: name.to_string(),
            });
        }
        Ok(DelayTrace {
            name: name.to_string(),
            step: Dur::from_ms(step_ms),
            delays,
        })
    }

    /// Reads a delay trace file with steps of `step_ms`; errors name the path as given.
    pub fn from_file(path: impl AsRef<Path>, step_ms: u64) -> Result<Self, DelayTraceError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let io = |source| DelayTraceError::Io {
            file: shown.clone(),
            source,
        };
        if !std::fs::metadata(path).map_err(io)?.is_file() {
            return Err(DelayTraceError::NotAFile { file: shown });
        }
        let file = std::fs::File::open(path).map_err(io)?;
        Self::parse(BufReader::new(file), &shown, step_ms)
    }

    /// Parses a delay trace from `reader`; `name` labels it in errors.
    pub fn parse(
        mut reader: impl BufRead,
        name: &str,
        step_ms: u64,
    ) -> Result<Self, DelayTraceError> {
        let mut delays = Vec::new();
        let mut buf = Vec::new();
        let mut line = 0u64;
        let limit = (MAX_DELAY_LINE_BYTES + 2) as u64;
        let err = |line, message: String| DelayTraceError::Line {
            file: name.to_string(),
            line,
            message,
        };
        loop {
            buf.clear();
            let n = (&mut reader)
                .take(limit)
                .read_until(b'\n', &mut buf)
                .map_err(|source| DelayTraceError::Io {
                    file: name.to_string(),
                    source,
                })?;
            if n == 0 {
                break;
            }
            line += 1;
            if buf.last() == Some(&b'\n') {
                buf.pop();
            }
            if buf.len() > MAX_DELAY_LINE_BYTES {
                return Err(err(
                    line,
                    format!("the line is longer than {MAX_DELAY_LINE_BYTES} bytes; a delay trace holds one delay in ms per line"),
                ));
            }
            if buf.last() == Some(&b'\r') {
                return Err(err(line, "the line ends with a carriage return (Windows line ending); convert the file with `dos2unix`".into()));
            }
            let text = String::from_utf8_lossy(&buf);
            let value = text.trim();
            if value.starts_with('#') {
                continue;
            }
            if value.is_empty() {
                return Err(err(
                    line,
                    "the line is blank; every line holds one delay in ms (comments start with #)"
                        .into(),
                ));
            }
            let ms: f64 = value
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite())
                .ok_or_else(|| {
                    err(
                        line,
                        format!("expected a delay in ms (e.g. 40 or 37.5), found {value:?}"),
                    )
                })?;
            if !(0.0..=MAX_TRACE_DELAY_MS).contains(&ms) {
                return Err(err(
                    line,
                    format!("delay {value} ms is outside 0 to {MAX_TRACE_DELAY_MS} ms"),
                ));
            }
            if delays.len() >= MAX_DELAY_TRACE_VALUES {
                return Err(DelayTraceError::TooManyValues {
                    file: name.to_string(),
                });
            }
            delays.push(Dur::from_ns((ms * NS_PER_MS as f64).round() as u64));
        }
        Self::new(name, step_ms, delays)
    }

    /// The name given (the path for a file).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The time each value holds for.
    pub fn step(&self) -> Dur {
        self.step
    }

    /// The values, one per step.
    pub fn delays(&self) -> &[Dur] {
        &self.delays
    }

    /// The delay of a packet arriving at `at`: the value of step ⌊at / step⌋, the trace
    /// repeating after its last value (`mm-file-delay`: `delays[(t / res) % n]`).
    pub fn delay_at(&self, at: Time) -> Dur {
        let step = at.as_ns() / self.step.as_ns();
        // The index is below the length, which fits in usize.
        self.delays[(step % self.delays.len() as u64) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_in_order_after_the_delay() {
        let mut line = DelayLine::new(Dur::from_ms(10));
        line.push(Time::from_ms(0), 'a');
        line.push(Time::from_ms(3), 'b');
        assert_eq!(line.next_wakeup(), Some(Time::from_ms(10)));
        assert_eq!(line.pop_ready(Time::from_ms(10) - Dur(1)), None);
        assert_eq!(line.pop_ready(Time::from_ms(10)), Some('a'));
        assert_eq!(line.pop_ready(Time::from_ms(12)), None);
        assert_eq!(
            line.pop_ready_with_time(Time::from_ms(20)),
            Some((Time::from_ms(13), 'b'))
        );
        assert!(line.is_empty());
        assert_eq!(line.next_wakeup(), None);
    }

    #[test]
    fn zero_delay_releases_immediately() {
        let mut line = DelayLine::new(Dur::ZERO);
        line.push(Time::from_ms(5), 1);
        assert_eq!(line.pop_ready(Time::from_ms(5)), Some(1));
    }

    fn parse(text: &str, step_ms: u64) -> Result<DelayTrace, DelayTraceError> {
        DelayTrace::parse(text.as_bytes(), "d.txt", step_ms)
    }

    #[test]
    fn delay_trace_values_by_step_and_looping() {
        let d = parse("# a comment\n10\n20.5\n  30 \n", 100).unwrap();
        assert_eq!(
            d.delays(),
            [Dur::from_ms(10), Dur::from_us(20_500), Dur::from_ms(30)]
        );
        assert_eq!(d.delay_at(Time::ZERO), Dur::from_ms(10));
        assert_eq!(d.delay_at(Time::from_ms(100) - Dur(1)), Dur::from_ms(10));
        assert_eq!(d.delay_at(Time::from_ms(100)), Dur::from_us(20_500));
        assert_eq!(d.delay_at(Time::from_ms(299)), Dur::from_ms(30));
        // After the last step the trace starts again.
        assert_eq!(d.delay_at(Time::from_ms(300)), Dur::from_ms(10));
        // 1350 ms is step 13, the second value of the fifth repetition.
        assert_eq!(d.delay_at(Time::from_ms(1_350)), Dur::from_us(20_500));
    }

    #[test]
    fn delay_trace_errors_name_file_and_line() {
        let msg = |text: &str| parse(text, 1).unwrap_err().to_string();
        assert_eq!(
            msg("10\nabc\n"),
            "d.txt:2: expected a delay in ms (e.g. 40 or 37.5), found \"abc\""
        );
        assert!(msg("10\n-1\n").starts_with("d.txt:2: delay -1 ms is outside"));
        assert!(msg("10\n\n5\n").starts_with("d.txt:2: the line is blank"));
        assert!(msg("10\r\n").starts_with("d.txt:1: the line ends with a carriage return"));
        assert!(msg("70000\n").starts_with("d.txt:1: delay 70000 ms"));
        assert!(msg("nan\n").starts_with("d.txt:1: expected a delay"));
        assert!(msg(&"1".repeat(100)).starts_with("d.txt:1: the line is longer"));
        assert!(msg("# only a comment\n").starts_with("d.txt:1: the delay trace holds no delay"));
        assert!(matches!(parse("1\n", 0), Err(DelayTraceError::Step(0))));
    }

    #[test]
    fn delay_trace_from_a_missing_file_names_it() {
        let e = DelayTrace::from_file("/no/such/delays.txt", 1)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("/no/such/delays.txt: cannot read"), "{e}");
    }

    #[test]
    fn a_varying_delay_keeps_the_line_fifo() {
        // A packet sent at 0 for 50 ms, one at 10 ms for 5 ms: the second waits for the
        // first (mm-file-delay's queue is FIFO), one at 60 ms leaves after its own delay.
        let mut line = DelayLine::new(Dur::ZERO);
        line.push_with_delay(Time::ZERO, Dur::from_ms(50), 'a');
        line.push_with_delay(Time::from_ms(10), Dur::from_ms(5), 'b');
        line.push_with_delay(Time::from_ms(60), Dur::from_ms(5), 'c');
        let out: Vec<(Time, char)> =
            std::iter::from_fn(|| line.pop_ready_with_time(Time::from_ms(100))).collect();
        assert_eq!(
            out,
            [
                (Time::from_ms(50), 'a'),
                (Time::from_ms(50), 'b'),
                (Time::from_ms(65), 'c')
            ]
        );
    }
}
