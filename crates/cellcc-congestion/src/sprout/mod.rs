//! Sprout: a stochastic forecast of the cellular link's deliveries, made at the receiver
//! and used by the sender as its window.
//!
//! Source: K. Winstein, A. Sivaraman, H. Balakrishnan, "Stochastic Forecasts Achieve High
//! Throughput and Low Delay over Cellular Networks", USENIX NSDI 2013 (Lombard, IL,
//! 2–5 April 2013) — §3.1 (model), §3.2 (inference), §3.3 (forecast), §3.4 (sender).
//! Reference code: `keithw/sprout` (`src/sprout/{receiver,process,processforecaster}.cc`),
//! the same code in `keithw/alfalfa` (`src/network/sproutconn.cc` for the sender) and in
//! `Soheil-ab/c2tcp`. The reference is a user-space UDP tunnel; this is its mechanism
//! ported onto the simulator's TCP: the forecaster runs as a receiver-side agent in the
//! TCP receiver and rides on every ACK ([`crate::feedback`]), and the sender turns it into
//! the congestion window.
//!
//! # Model
//!
//! The link delivers packets as a Poisson process whose rate λ wanders by Brownian motion
//! (σ = 200 packets/s/√s) and can fall into an outage λ = 0 that it leaves at rate
//! λ_z = 1/s. The receiver keeps λ's distribution on 256 grid points over
//! [0, `max_rate_pps`]. Every 20 ms tick it evolves the distribution, then multiplies it
//! by the Poisson likelihood of the packets that arrived in the tick. From the result it
//! forecasts, for each of the next 8 ticks, the 5th percentile of cumulative deliveries,
//! and sends the 8 numbers back. The sender keeps in flight what the forecast says the
//! link will deliver within the 100 ms delay target: cwnd = C(k + 5) − C(k), k the ticks
//! elapsed since the forecast arrived; TCP's in-flight count is the queue estimate the
//! window is compared against.
//!
//! # States
//!
//! ```text
//!  +-------------+  first ACK with a forecast  +-------------------------------+
//!  | NO_FORECAST | --------------------------> | FORECAST: cwnd = C(k+5)-C(k)  |
//!  | cwnd = IW   |                             | per ACK, floor min_cwnd       |
//!  +-------------+                             +-------------------------------+
//! ```
//!
//! # Differences from the paper and the reference code
//!
//! 1. **Transport.** TCP instead of a UDP tunnel. The forecast travels as an ACK option
//!    (8 × 32-bit values, charged on the uplink); the sender's queue estimate
//!    ("bytes sent minus `received_or_lost_count`, minus forecast deliveries as ticks
//!    pass") is TCP's packets in flight, which falls as ACKs report deliveries. TCP's
//!    loss recovery and RTO stay as they are; Sprout itself ignores loss (its
//!    `ssthresh` keeps cwnd).
//! 2. **Window arithmetic.** cwnd = C(k + 5) − C(k) with C(0) = 0 and C(h) the forecast
//!    for h ticks: the deliveries of the next 5 ticks (§3.4). The reference indexes its
//!    `counts` array from 0 = one tick, so at k = 0 it uses ticks 2..6; its queue
//!    decrement also subtracts a cumulative count per tick.
//! 3. **Idle ticks.** TCP carries no `time_to_next`; every arrival is treated as
//!    announcing the reference's 50 ms fallback gap (what a window-limited reference
//!    sender sends at the end of each flight), so empty ticks within 50 ms of the last
//!    arrival's tick are not observed.
//! 4. **Heartbeats.** The reference sends a heartbeat every 50 ms when its window is
//!    closed; here cwnd never drops below `min_cwnd` = 2 and TCP's probes and RTO keep
//!    packets flowing.
//! 5. **Rate grid.** `max_rate_pps` defaults to the reference's 1000 packets/s (12 Mbit/s);
//!    the per-tick count limit is 1.5 × the top rate's mean (the reference's 30 for 20),
//!    so the grid can be widened for faster links. Grid point 0 is the outage state and
//!    points are spaced max/(bins − 1) (the reference has 257 samples, width max/256).
//! 6. **σ.** The paper's 200 packets/s/√s (some reference versions use 250).
//! 7. **Normalisation.** A distribution left with no mass (an arrival count impossible on
//!    the grid) restarts flat instead of dividing by zero; likelihoods are evaluated in
//!    logarithms; probabilities below 1e-16 are dropped from the forecast tables.
//! 8. **Counting.** Arrivals count payload bytes / `packet_bytes` (1448, the MSS; the
//!    reference divides by 1400), rounded, at least 1 when anything arrived.

mod config;
mod model;
mod receiver;
#[cfg(test)]
mod tests;

pub use config::SproutConfig;
pub use receiver::SproutReceiver;

use cellcc_units::{Dur, Time};

use crate::feedback::{ReceiverAgent, ReceiverFeedback, FEEDBACK_VALUES};
use crate::{CongestionControl, RateSample, Sock};

/// The most recent forecast the sender holds.
#[derive(Clone, Copy, Debug)]
struct Forecast {
    /// When the ACK carrying it arrived (the reference's `remote_forecast_time`).
    at: Time,
    /// Cumulative deliveries over 1..=H ticks, packets.
    cumulative: [u32; FEEDBACK_VALUES],
    ticks: usize,
}

/// The Sprout sender.
#[derive(Debug)]
pub struct Sprout {
    cfg: SproutConfig,
    tick: Dur,
    forecast: Option<Forecast>,
}

impl Sprout {
    /// A sender with these parameters (already validated).
    pub fn new(cfg: SproutConfig) -> Self {
        debug_assert!(cfg.validate().is_ok(), "validated by the caller");
        Sprout {
            tick: cfg.tick(),
            cfg,
            forecast: None,
        }
    }

    /// C(h): forecast cumulative deliveries within h ticks (C(0) = 0), packets.
    fn cumulative(f: &Forecast, h: usize) -> u32 {
        if h == 0 {
            0
        } else {
            f.cumulative[h.min(f.ticks) - 1]
        }
    }

    /// Window in packets at `now` (§3.4): the deliveries forecast within the delay
    /// target, starting from the tick the forecast has reached.
    pub fn window_at(&self, now: Time) -> Option<u32> {
        let f = self.forecast?;
        let k = (now.saturating_since(f.at).as_ns() / self.tick.as_ns()) as usize;
        let k = k.min(f.ticks);
        let target = (k + self.cfg.target_ticks as usize).min(f.ticks);
        Some(Self::cumulative(&f, target) - Self::cumulative(&f, k))
    }

    /// Forecast deliveries within the delay target as a rate, Mbit/s of payload.
    fn forecast_mbps(&self) -> Option<f64> {
        let f = self.forecast?;
        let c = Self::cumulative(&f, self.cfg.target_ticks as usize) as f64;
        let secs = self.cfg.target_ticks as f64 * self.cfg.tick_ms / 1000.0;
        Some(c * self.cfg.packet_bytes as f64 * 8.0 / secs / 1e6)
    }
}

impl CongestionControl for Sprout {
    fn name(&self) -> &'static str {
        "sprout"
    }

    fn receiver_agent(&self) -> Option<Box<dyn ReceiverAgent>> {
        Some(Box::new(SproutReceiver::new(&self.cfg)))
    }

    fn on_receiver_feedback(&mut self, sock: &mut Sock, feedback: &ReceiverFeedback) {
        let v = feedback.values();
        if v.is_empty() {
            return;
        }
        let mut cumulative = [0; FEEDBACK_VALUES];
        cumulative[..v.len()].copy_from_slice(v);
        self.forecast = Some(Forecast {
            at: sock.now,
            cumulative,
            ticks: v.len(),
        });
    }

    /// Sprout does not react to loss: keep the window.
    fn ssthresh(&mut self, sock: &Sock) -> u32 {
        sock.cwnd.max(self.cfg.min_cwnd)
    }

    fn owns_cwnd(&self) -> bool {
        true
    }

    fn cong_control(&mut self, sock: &mut Sock, _rs: &RateSample) {
        let Some(w) = self.window_at(sock.now) else {
            return; // no forecast yet: keep the initial window
        };
        // Forecast packets are `packet_bytes`; cwnd counts MSS-sized segments.
        let segs = (w as u64 * self.cfg.packet_bytes as u64 / sock.mss.max(1) as u64) as u32;
        sock.cwnd = segs.max(self.cfg.min_cwnd).min(sock.cwnd_clamp);
    }

    fn phase(&self) -> &'static str {
        if self.forecast.is_some() {
            "forecast"
        } else {
            "no_forecast"
        }
    }

    fn info(&self) -> Vec<(&'static str, f64)> {
        let mut v = Vec::new();
        if let Some(f) = self.forecast {
            v.push(("forecast_mbps", self.forecast_mbps().unwrap_or(0.0)));
            v.push((
                "forecast_target_pkts",
                Self::cumulative(&f, self.cfg.target_ticks as usize) as f64,
            ));
        }
        v
    }
}
