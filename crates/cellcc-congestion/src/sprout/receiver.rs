//! Sprout's receiver: observes arrivals per tick, keeps the link-rate distribution and
//! forecasts cumulative deliveries (NSDI 2013 §3.1–§3.3; reference `Receiver` in
//! `keithw/sprout`, `src/sprout/receiver.cc`).

use std::sync::Arc;

use cellcc_units::{Dur, Time};

use super::config::SproutConfig;
use super::model::{normalize, observe, ForecastTables, Grid};
use crate::feedback::{ReceiverAgent, ReceiverFeedback, FEEDBACK_VALUES};

/// The receiver-side forecaster, run inside the simulated TCP receiver.
#[derive(Debug)]
pub struct SproutReceiver {
    model: Arc<(Grid, ForecastTables)>,
    /// Probability of each grid rate (the ensemble).
    p: Vec<f64>,
    scratch: Vec<f64>,
    /// Grid points with mass and their probabilities, rebuilt once per forecast.
    support: Vec<(usize, f64)>,
    tick: Dur,
    idle_skip: Dur,
    packet_bytes: f64,
    quantile: f64,
    forecast_ticks: usize,
    /// Start of the current tick (`_time`); set by the first arrival.
    tick_start: Option<Time>,
    /// Packets received in the current tick (bytes / packet_bytes).
    count: f64,
    /// Ticks starting before this with no arrivals are not observed (`_score_time`).
    score_time: Time,
    /// Forecast for the tick starting at `.0`: cumulative packets over 1..=H ticks.
    cached: Option<(Time, [u32; FEEDBACK_VALUES])>,
    /// Ticks observed and skipped, for tests and diagnostics.
    pub(crate) observed_ticks: u64,
    pub(crate) skipped_ticks: u64,
}

impl SproutReceiver {
    /// A receiver starting from a flat distribution over the rate grid of `cfg`.
    pub fn new(cfg: &SproutConfig) -> Self {
        let model = super::model::shared_model(cfg);
        let n = model.0.rates.len();
        // The reference starts from a flat distribution over the grid.
        let mut p = vec![1.0; n];
        normalize(&mut p);
        SproutReceiver {
            model,
            p,
            scratch: Vec::with_capacity(n),
            support: Vec::with_capacity(n),
            tick: cfg.tick(),
            idle_skip: Dur::from_ns((cfg.idle_skip_ms * 1e6).round() as u64),
            packet_bytes: cfg.packet_bytes as f64,
            quantile: cfg.quantile,
            forecast_ticks: cfg.forecast_ticks as usize,
            tick_start: None,
            count: 0.0,
            score_time: Time::ZERO,
            cached: None,
            observed_ticks: 0,
            skipped_ticks: 0,
        }
    }

    /// The current rate distribution (grid point i has rate i · max_rate / (bins − 1)).
    pub fn distribution(&self) -> &[f64] {
        &self.p
    }

    /// Mean of the rate distribution, packets/s.
    pub fn mean_rate_pps(&self) -> f64 {
        self.p
            .iter()
            .zip(&self.model.0.rates)
            .map(|(p, r)| p * r)
            .sum()
    }

    /// Close every tick that ended by `now` (reference `advance_to`): evolve, then
    /// observe the tick's count unless it was empty inside an announced gap.
    fn advance_to(&mut self, now: Time) {
        let Some(mut start) = self.tick_start else {
            self.tick_start = Some(now);
            return;
        };
        while start + self.tick <= now {
            let grid = &self.model.0;
            grid.evolve(&self.p, &mut self.scratch);
            std::mem::swap(&mut self.p, &mut self.scratch);
            normalize(&mut self.p);
            if start >= self.score_time || self.count > 0.0 {
                // Reference: round the packet count, but at least 1 if anything arrived.
                let mut n = (self.count + 0.5).floor() as u32;
                if self.count > 0.0 && n == 0 {
                    n = 1;
                }
                observe(grid, &mut self.p, n);
                self.count = 0.0;
                self.observed_ticks += 1;
            } else {
                self.skipped_ticks += 1;
            }
            start += self.tick;
        }
        self.tick_start = Some(start);
    }

    /// The forecast for the current tick (§3.3): the `quantile` of cumulative deliveries
    /// over the next 1..=H ticks, packets.
    pub fn forecast(&mut self, now: Time) -> [u32; FEEDBACK_VALUES] {
        self.advance_to(now);
        let start = self.tick_start.unwrap_or(now);
        if let Some((t, f)) = self.cached {
            if t == start {
                return f;
            }
        }
        let mut f = [0u32; FEEDBACK_VALUES];
        ForecastTables::support(&self.p, &mut self.support);
        // Cumulative quantiles are computed per horizon and need not be monotone by a
        // packet or two; the window arithmetic needs them to be, so each horizon's is at
        // least the one before (passed as the search's floor: the same figures, fewer
        // evaluations of the mixture CDF).
        let mut floor = 0;
        let last = self.cached.map(|(_, last)| last);
        for (h, v) in f.iter_mut().enumerate().take(self.forecast_ticks) {
            let hint = last.map(|last| last[h]);
            *v = self
                .model
                .1
                .lower_quantile(&self.support, h + 1, self.quantile, floor, hint);
            floor = *v;
        }
        self.cached = Some((start, f));
        f
    }
}

impl ReceiverAgent for SproutReceiver {
    fn on_data(&mut self, now: Time, payload: u32) {
        self.advance_to(now);
        self.count += payload as f64 / self.packet_bytes;
        // Every flight of a window-limited reference sender ends announcing a 50 ms gap.
        let start = self.tick_start.unwrap_or(now);
        self.score_time = self.score_time.max(start + self.idle_skip);
    }

    fn feedback(&mut self, now: Time) -> ReceiverFeedback {
        let f = self.forecast(now);
        ReceiverFeedback::new(&f[..self.forecast_ticks])
    }
}
