//! Monitor-interval bookkeeping of PCC-Vivace: the per-MI regression of RTT over send
//! time and the RTT-trend filter (see the module header of [`super`]).

use std::collections::VecDeque;

use cellcc_units::Time;

use super::{BITS_PER_MBIT, TREND_ALPHA, TREND_GAIN, TREND_RESET};

/// Least-squares fit of y over t from running sums (t relative to the MI start).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Regression {
    pub(super) n: f64,
    pub(super) st: f64,
    pub(super) sy: f64,
    pub(super) stt: f64,
    pub(super) sty: f64,
    pub(super) syy: f64,
}

impl Regression {
    pub(super) fn add(&mut self, t: f64, y: f64) {
        self.n += 1.0;
        self.st += t;
        self.sy += y;
        self.stt += t * t;
        self.sty += t * y;
        self.syy += y * y;
    }

    pub(super) fn slope(&self) -> f64 {
        let den = self.n * self.stt - self.st * self.st;
        if self.n < 2.0 || den.abs() < 1e-18 {
            return 0.0;
        }
        (self.n * self.sty - self.st * self.sy) / den
    }

    pub(super) fn mean(&self) -> f64 {
        if self.n == 0.0 {
            0.0
        } else {
            self.sy / self.n
        }
    }

    /// Standard deviation of y over its mean (difference 3: the reference's effective
    /// "regression error").
    pub(super) fn relative_deviation(&self) -> f64 {
        let mean = self.mean();
        if self.n < 2.0 || mean <= 0.0 {
            return 0.0;
        }
        let var = (self.syy / self.n - mean * mean).max(0.0);
        var.sqrt() / mean
    }
}

/// One monitor interval.
#[derive(Clone, Debug)]
pub(super) struct Mi {
    /// `Some(offset)` for a useful MI (its rate is r·(1 + offset)), `None` for a filler.
    pub(super) useful: Option<f64>,
    /// Sent during slow start (the 1 ms rise tolerance applies).
    pub(super) starting: bool,
    /// Target rate, bytes/s.
    pub(super) rate: f64,
    pub(super) start: Time,
    pub(super) end: Option<Time>,
    /// Its packets: the running sent count over `[sent_start, sent_end)`.
    pub(super) sent_start: u64,
    pub(super) sent_end: Option<u64>,
    pub(super) delivered: u64,
    pub(super) lost: u64,
    pub(super) rtts: Regression,
}

impl Mi {
    pub(super) fn complete(&self, resolved: u64) -> bool {
        self.sent_end.is_some_and(|e| resolved >= e)
    }

    pub(super) fn contains(&self, packet: u64) -> bool {
        packet >= self.sent_start && self.sent_end.is_none_or(|e| packet < e)
    }

    pub(super) fn duration_s(&self) -> f64 {
        self.end
            .map_or(0.0, |e| e.saturating_since(self.start).as_secs_f64())
    }

    /// Achieved sending rate x over the MI, Mbit/s.
    pub(super) fn x_mbps(&self, mss: u32) -> f64 {
        let Some(sent_end) = self.sent_end else {
            return 0.0;
        };
        let bits = (sent_end - self.sent_start) as f64 * f64::from(mss) * 8.0;
        bits / self.duration_s().max(1e-6) / BITS_PER_MBIT
    }

    pub(super) fn loss(&self) -> f64 {
        let resolved = self.delivered + self.lost;
        if resolved == 0 {
            0.0
        } else {
            self.lost as f64 / resolved as f64
        }
    }
}

/// The RTT-trend filter (reference `ProcessRttTrend`): running statistics of the slope
/// of the mean RTTs (µs) of the last few MIs.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Trend {
    pub(super) history: VecDeque<f64>,
    /// `None` until the first full window (or after a reset).
    pub(super) stats: Option<TrendStats>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct TrendStats {
    pub(super) avg: f64,
    pub(super) dev: f64,
    pub(super) min: f64,
    pub(super) last: f64,
}

impl Trend {
    /// Record an MI's mean RTT (µs); true when the RTT trend is abnormally rising.
    pub(super) fn inflated(&mut self, mean_rtt_us: f64, window: usize) -> bool {
        self.history.push_back(mean_rtt_us);
        while self.history.len() > window {
            self.history.pop_front();
        }
        if self.history.len() < window {
            return false;
        }
        let mut reg = Regression::default();
        for (i, y) in self.history.iter().enumerate() {
            reg.add(i as f64, *y);
        }
        let g = reg.slope();
        match &mut self.stats {
            Some(s) if s.min >= 1e-6 && g.abs() >= s.min / TREND_RESET => {
                let mut inflated = false;
                if (g - s.avg).abs() > TREND_GAIN * s.dev {
                    inflated = g > 0.0;
                } else {
                    s.dev = (1.0 - TREND_ALPHA) * s.dev + TREND_ALPHA * (g - s.last).abs();
                    s.avg = (1.0 - TREND_ALPHA) * s.avg + TREND_ALPHA * g;
                    s.last = g;
                }
                s.min = s.min.min(g.abs());
                inflated
            }
            _ => {
                self.stats = Some(TrendStats {
                    avg: 0.0,
                    dev: g.abs(),
                    min: g.abs(),
                    last: g,
                });
                false
            }
        }
    }
}
