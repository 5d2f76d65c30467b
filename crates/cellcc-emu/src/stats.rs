//! What `--stats FILE` writes at exit: per direction, packets, bytes, drops and the
//! lateness of every written packet (actual write time − scheduled release time), plus
//! the emulator's CPU time.

use cellcc_link::LinkStats;
use hdrhistogram::Histogram;
use serde::Serialize;

use crate::path::DirectionCounters;

/// Lateness bound of the accuracy figure: a packet is "on time" if written within 1 ms
/// of its scheduled time, Mahimahi's clock granularity.
pub const ON_TIME_NS: u64 = 1_000_000;
/// Largest lateness recorded exactly; later packets are clamped (60 s).
const MAX_LATENESS_NS: u64 = 60_000_000_000;
/// Significant decimal digits of the lateness histogram (0.1 % relative error).
const SIGNIFICANT_DIGITS: u8 = 3;

/// Lateness of written packets.
#[derive(Debug, Clone)]
pub struct Lateness {
    hist: Histogram<u64>,
    on_time: u64,
    count: u64,
    sum_ns: u128,
    /// Σ (lateness − 1 ms) over the late ones.
    excess_ns: u128,
    max_ns: u64,
}

impl Default for Lateness {
    fn default() -> Self {
        Lateness {
            hist: Histogram::new_with_bounds(1, MAX_LATENESS_NS, SIGNIFICANT_DIGITS)
                .expect("constant bounds are valid: 1 <= low, high >= 2 * low, 3 digits"),
            on_time: 0,
            count: 0,
            sum_ns: 0,
            excess_ns: 0,
            max_ns: 0,
        }
    }
}

impl Lateness {
    /// Adds one packet (or wake-up) that was `lateness_ns` late.
    #[inline]
    pub fn record(&mut self, lateness_ns: u64) {
        self.count += 1;
        self.sum_ns += u128::from(lateness_ns);
        self.max_ns = self.max_ns.max(lateness_ns);
        if lateness_ns <= ON_TIME_NS {
            self.on_time += 1;
        } else {
            self.excess_ns += u128::from(lateness_ns - ON_TIME_NS);
        }
        self.hist
            .saturating_record(lateness_ns.clamp(1, MAX_LATENESS_NS));
    }

    /// Adds `other`'s samples, as if each had been recorded here too.
    pub fn merge(&mut self, other: &Lateness) {
        self.count += other.count;
        self.sum_ns += other.sum_ns;
        self.excess_ns += other.excess_ns;
        self.max_ns = self.max_ns.max(other.max_ns);
        self.on_time += other.on_time;
        // Both histograms have the same bounds, so adding cannot fail.
        let _ = self.hist.add(&other.hist);
    }

    /// The figures so far (zeros, and a fraction of 1, without samples).
    pub fn summary(&self) -> LatenessSummary {
        let us = |ns: u64| ns as f64 / 1e3;
        let q = |quantile: f64| {
            if self.count == 0 {
                0.0
            } else {
                us(self.hist.value_at_quantile(quantile))
            }
        };
        LatenessSummary {
            count: self.count,
            mean_us: if self.count == 0 {
                0.0
            } else {
                self.sum_ns as f64 / self.count as f64 / 1e3
            },
            p50_us: q(0.50),
            p99_us: q(0.99),
            p999_us: q(0.999),
            max_us: us(self.max_ns),
            fraction_within_1ms: if self.count == 0 {
                1.0
            } else {
                self.on_time as f64 / self.count as f64
            },
            excess_over_1ms_ms: self.excess_ns as f64 / 1e6,
        }
    }
}

/// Lateness figures, in µs.
#[derive(Debug, Clone, Serialize)]
pub struct LatenessSummary {
    /// Packets written (or, for wake-ups, timed sleeps measured).
    pub count: u64,
    /// Mean lateness.
    pub mean_us: f64,
    /// Median lateness (histogram, 3 significant digits).
    pub p50_us: f64,
    /// 99th percentile of the lateness.
    pub p99_us: f64,
    /// 99.9th percentile of the lateness.
    pub p999_us: f64,
    /// Largest lateness (exact).
    pub max_us: f64,
    /// Fraction written (or woken) within 1 ms of the scheduled time.
    pub fraction_within_1ms: f64,
    /// Σ (lateness − 1 ms) over the late ones, in ms. For wake-ups: how long the loop
    /// was held off beyond 1 ms in all; packets due in that time leave more than 1 ms late.
    pub excess_over_1ms_ms: f64,
}

/// A direction's reads (from the sending side's TUN device) and writes (to the
/// receiving side's). Without offloads every read and write is one packet.
#[derive(Debug, Clone, Default, Serialize)]
pub struct IoCounters {
    /// Reads that returned a packet.
    pub reads: u64,
    /// Of those, TCP super-packets (offloads on).
    pub gso_reads: u64,
    /// Packets the super-packets were split into.
    pub gso_segments: u64,
    /// Super-packets that could not be split, dropped.
    pub gso_errors: u64,
    /// Writes.
    pub writes: u64,
    /// Of those, coalesced super-packets (offloads on).
    pub gso_writes: u64,
    /// Packets the coalesced writes carried.
    pub coalesced_packets: u64,
}

/// One direction in the summary.
#[derive(Debug, Clone, Serialize)]
pub struct DirectionSummary {
    /// The trace's file name, or the constant rate (`24 Mbit/s`).
    pub trace: String,
    /// The queue in Mahimahi's spelling (`droptail [packets=400]`).
    pub queue: String,
    /// Bernoulli loss probability on entry.
    pub loss: f64,
    /// Cellular scheduling preset of the gate after the link, if any.
    pub sched: Option<String>,
    /// Packets and IP bytes in, lost and out (flattened into this object).
    #[serde(flatten)]
    pub counters: DirectionCounters,
    /// Packets that could not be written to the TUN device.
    pub write_errors: u64,
    /// System calls on the TUN devices and what they carried.
    pub io: IoCounters,
    /// Packets still in the delay line or the link when the emulator stopped.
    pub held_at_exit: u64,
    /// The link's own counters (queue drops, opportunities).
    pub link: LinkStats,
    /// Lateness of the packets written in this direction.
    pub lateness: LatenessSummary,
}

/// The whole `--stats` file.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// The emulator's version.
    pub version: &'static str,
    /// The command line as run.
    pub command_line: String,
    /// Emulated one-way delay, ms (0 with a delay trace).
    pub delay_ms: f64,
    /// The delay trace (`--delay-trace`), if any.
    pub delay_trace: Option<String>,
    /// Wall time from emulator time 0 to the end of the event loop, s.
    pub duration_s: f64,
    /// User CPU time of the emulator process, s.
    pub cpu_user_s: f64,
    /// System CPU time of the emulator process, s.
    pub cpu_system_s: f64,
    /// (user + system) / duration.
    pub cpu_fraction: f64,
    /// Event-loop wake-ups.
    pub wakeups: u64,
    /// Whether the TUN devices ran with offloads (`--no-offload` turns them off).
    pub offload: bool,
    /// Why the emulator stopped: `client exited`, `SIGINT`, `SIGTERM`, ...
    pub stop_reason: String,
    /// Exit status of the client command, if there was one and it exited.
    pub client_exit_code: Option<i32>,
    /// The uplink (client → server).
    pub uplink: DirectionSummary,
    /// The downlink (server → client).
    pub downlink: DirectionSummary,
    /// Both directions together.
    pub lateness: LatenessSummary,
    /// How late the kernel woke the event loop after a timed sleep (wake-up time −
    /// requested time, for sleeps that ended at or after their timeout): the machine's
    /// share of the packets' lateness. On a kernel without preemption (`PREEMPT_NONE`),
    /// other processes' work in the kernel delays even a `SCHED_FIFO` wake-up.
    pub wakeup_lateness: LatenessSummary,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lateness_quantiles_and_on_time_fraction() {
        let mut l = Lateness::default();
        for us in 1..=1000u64 {
            l.record(us * 10); // 10 µs .. 10 ms in steps of 10 µs
        }
        let s = l.summary();
        assert_eq!(s.count, 1000);
        assert!((s.p50_us - 5.0).abs() < 0.01, "{}", s.p50_us);
        assert!((s.p99_us - 9.9).abs() < 0.02, "{}", s.p99_us);
        assert_eq!(s.max_us, 10.0);
        assert_eq!(s.fraction_within_1ms, 1.0);
        assert_eq!(s.excess_over_1ms_ms, 0.0);
        l.record(2_000_000);
        l.record(1_500_000);
        let s = l.summary();
        assert!((s.fraction_within_1ms - 1000.0 / 1002.0).abs() < 1e-12);
        assert!((s.excess_over_1ms_ms - 1.5).abs() < 1e-9);
        assert_eq!(s.max_us, 2000.0);
    }

    #[test]
    fn empty_lateness_is_all_on_time() {
        let s = Lateness::default().summary();
        assert_eq!((s.count, s.fraction_within_1ms, s.max_us), (0, 1.0, 0.0));
    }

    #[test]
    fn merge_adds_counts() {
        let mut a = Lateness::default();
        let mut b = Lateness::default();
        a.record(100);
        b.record(3_000_000);
        a.merge(&b);
        let s = a.summary();
        assert_eq!(s.count, 2);
        assert_eq!(s.fraction_within_1ms, 0.5);
        assert!((s.excess_over_1ms_ms - 2.0).abs() < 1e-9);
    }
}
