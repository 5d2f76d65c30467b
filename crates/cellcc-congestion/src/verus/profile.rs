//! Verus' delay profile (SIGCOMM 2015 §3.2): the delay each window size produced, and
//! its inverse, the window that should produce a target delay.
//!
//! Samples: for each integer window w, an EWMA (weight 7/8 on the old value, as the
//! reference's `wList`) of the delays of packets sent while the window was w. Fit: the
//! reference fits a penalised cubic spline (ALGLIB `spline1dfitpenalized`) every second;
//! here the fit is the isotonic (non-decreasing, pool-adjacent-violators) regression of
//! the sampled points, interpolated linearly between them: delay cannot fall as the
//! window grows, and the inverse is then well defined. The inverse is not extrapolated:
//! a delay above the whole curve cannot be mapped (the caller restarts slow start, as the
//! reference does). The forward curve (the delay of a window, for the loss reaction) is
//! extended beyond the largest sampled window with the slope of the fit, at least D_min
//! per largest-window packets.

use cellcc_units::Dur;

/// Weight of the old value in each window's delay EWMA (reference `ewma(.., 0.875)`).
const SAMPLE_KEEP_EIGHTHS: u64 = 7;

/// Delay per window value, and the fitted curve.
#[derive(Clone, Debug, Default)]
pub struct Profile {
    /// `samples[w]`: smoothed delay of packets sent at window w, if any.
    samples: Vec<Option<Dur>>,
    /// Fitted points (w, delay), w increasing, delay non-decreasing.
    fit: Vec<(f64, f64)>,
}

impl Profile {
    /// Record a packet sent at window `w` that saw `delay` (reference
    /// `updateUponReceivingPacket`).
    pub fn add(&mut self, w: u32, delay: Dur, max_window: u32) {
        if w == 0 || w > max_window {
            return;
        }
        let w = w as usize;
        if self.samples.len() <= w {
            self.samples.resize(w + 1, None);
        }
        let new = match self.samples[w] {
            None => delay,
            Some(old) => Dur::from_ns(
                (SAMPLE_KEEP_EIGHTHS * old.as_ns() + (8 - SAMPLE_KEEP_EIGHTHS) * delay.as_ns()) / 8,
            ),
        };
        self.samples[w] = Some(new);
    }

    /// Whether a fit exists.
    pub fn has_fit(&self) -> bool {
        !self.fit.is_empty()
    }

    /// Refit the curve from the samples: isotonic regression (pool adjacent violators,
    /// equal weights) of delay on window.
    pub fn refit(&mut self) {
        // Blocks of (sum of delays, count, first w, last w).
        let mut blocks: Vec<(f64, f64, f64, f64)> = Vec::new();
        for (w, s) in self.samples.iter().enumerate() {
            let Some(d) = s else { continue };
            let d = d.as_ns() as f64 / 1e6;
            blocks.push((d, 1.0, w as f64, w as f64));
            while blocks.len() >= 2 {
                let (s2, n2, _, l2) = blocks[blocks.len() - 1];
                let (s1, n1, f1, _) = blocks[blocks.len() - 2];
                if s1 / n1 <= s2 / n2 {
                    break;
                }
                blocks.truncate(blocks.len() - 2);
                blocks.push((s1 + s2, n1 + n2, f1, l2));
            }
        }
        self.fit.clear();
        for (s, n, first, last) in blocks {
            let d = s / n;
            self.fit.push((first, d));
            if last > first {
                self.fit.push((last, d));
            }
        }
    }

    /// Slope used beyond the largest fitted window, ms per packet.
    fn tail_slope(&self, d_min_ms: f64) -> f64 {
        let (w0, d0) = self.fit[0];
        let (w1, d1) = self.fit[self.fit.len() - 1];
        let fitted = if w1 > w0 { (d1 - d0) / (w1 - w0) } else { 0.0 };
        fitted.max(d_min_ms / w1.max(1.0))
    }

    /// The fitted delay at window `w`, ms (reference `calcDelayCurveInv`).
    pub fn delay_at(&self, w: f64, d_min_ms: f64) -> Option<f64> {
        let first = *self.fit.first()?;
        let last = *self.fit.last()?;
        if w <= first.0 {
            return Some(first.1);
        }
        if w >= last.0 {
            return Some(last.1 + (w - last.0) * self.tail_slope(d_min_ms));
        }
        let i = self.fit.partition_point(|p| p.0 <= w);
        let (a, b) = (self.fit[i - 1], self.fit[i]);
        Some(a.1 + (b.1 - a.1) * (w - a.0) / (b.0 - a.0))
    }

    /// The largest window whose fitted delay is at most `d_ms` (reference
    /// `calcDelayCurve`); 1 when even the smallest sampled window exceeds it. `None`
    /// without a fit, or when `d_ms` lies above the whole curve: the reference's "can't
    /// map delay on delay curve" (no window up to `MAX_W_DELAY_CURVE` has a larger
    /// delay), on which it restarts slow start. The curve is not extrapolated here: on a
    /// drop-tail path the delay stops growing with the window once the buffer is full,
    /// so the windows beyond the sampled ones hold no delay the sender could aim at.
    pub fn window_for(&self, d_ms: f64) -> Option<f64> {
        let first = *self.fit.first()?;
        let last = *self.fit.last()?;
        if d_ms < first.1 {
            return Some(1.0);
        }
        if d_ms > last.1 {
            return None;
        }
        if d_ms == last.1 {
            return Some(last.0);
        }
        // The last fitted point at or below d, then interpolate towards the next one.
        let i = self.fit.partition_point(|p| p.1 <= d_ms);
        let (a, b) = (self.fit[i - 1], self.fit[i]);
        Some(a.0 + (b.0 - a.0) * (d_ms - a.1) / (b.1 - a.1))
    }
}
