//! The negative-feedback loop on the threshold T (PropRate §3.2, Fig. 4, Eq. 9).
//!
//! Buffer regulation is a black box turning T into an achieved buffer delay t_actual; a
//! slower outer loop moves T until t_actual meets the target t̄_buff:
//!
//! ```text
//! per window of ⌈ρ·RTT⌉ delivered packets:
//!     t_sample = mean of the per-ACK t_buff samples in the window
//!     t_actual = 7/8·t_actual + 1/8·t_sample                          (Eq. 9)
//!     in Buffer Fill,  if t_actual > t̄_buff:  T −= log(t_actual − t̄_buff)
//!     in Buffer Drain, if t_actual < t̄_buff:  T += log(t̄_buff − t_actual)
//!     T within [T_MIN, T_MAX_FACTOR·t̄_buff]
//! ```
//!
//! The paper's text increments T in Fill when t_actual > t̄_buff (and decrements it in
//! Drain when t_actual < t̄_buff); a higher T delays the switch to Drain, so that would
//! push latency further from the target. The signs above are those of the loop the
//! section title and Fig. 4 describe. "log" is the natural logarithm of the difference in
//! ms, giving a step in ms; a difference under 1 ms (log < 0) moves T by nothing.

use cellcc_units::Dur;

/// Lowest threshold, 1 ms: one tick of a Linux timestamp clock; T = 0 would never leave
/// Drain (t_buff < 0 is impossible).
pub(super) const T_MIN: Dur = Dur::from_ms(1);
/// Highest threshold, as a multiple of t̄_buff: bounds the integrator when the target
/// cannot be reached (a buffer too small, or a link that empties it anyway), so that T
/// does not wind up and overshoot once conditions change.
pub(super) const T_MAX_FACTOR: u64 = 4;
/// Weight of a new sample in t_actual (Eq. 9).
const EWMA_SHIFT: u32 = 3;

/// Which state the controller is in when a window closes; the loop moves T only in
/// Buffer Fill (down) and Buffer Drain (up).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Side {
    Fill,
    Drain,
    Other,
}

/// State of the loop.
#[derive(Clone, Debug, Default)]
pub(super) struct Nfl {
    /// EWMA of the window means, Eq. 9; `None` before the first window closes.
    t_actual: Option<Dur>,
    /// `sock.delivered` when the current window started.
    window_start: Option<u64>,
    /// Sum and count of t_buff samples in the current window.
    sum_ns: u128,
    count: u64,
}

impl Nfl {
    /// The achieved buffer delay t_actual.
    pub(super) fn t_actual(&self) -> Option<Dur> {
        self.t_actual
    }

    /// One t_buff sample at delivered count `delivered`. When `bdp_packets` packets have
    /// been delivered since the window started, the window closes: returns the new
    /// t_actual.
    pub(super) fn on_sample(
        &mut self,
        t_buff: Dur,
        delivered: u64,
        bdp_packets: u64,
    ) -> Option<Dur> {
        let start = *self.window_start.get_or_insert(delivered);
        self.sum_ns += u128::from(t_buff.as_ns());
        self.count += 1;
        if delivered.saturating_sub(start) < bdp_packets.max(1) {
            return None;
        }
        let t_sample = Dur::from_ns((self.sum_ns / u128::from(self.count)) as u64);
        self.window_start = Some(delivered);
        self.sum_ns = 0;
        self.count = 0;
        let t_actual = match self.t_actual {
            None => t_sample,
            // PropRate Eq. (9): t_actual = 7/8·t_actual + 1/8·t_sample.
            Some(a) => Dur::from_ns(
                a.as_ns() - (a.as_ns() >> EWMA_SHIFT) + (t_sample.as_ns() >> EWMA_SHIFT),
            ),
        };
        self.t_actual = Some(t_actual);
        Some(t_actual)
    }
}

/// The size of one adjustment: log(|t_actual − t̄_buff|) with the difference in ms, as a
/// duration in ms; zero for differences up to 1 ms (PropRate §3.2).
pub(super) fn log_step(diff: Dur) -> Dur {
    let ms = diff.as_ms_f64();
    if ms <= 1.0 {
        return Dur::ZERO;
    }
    Dur::from_ns((ms.ln() * 1e6).round() as u64)
}

/// PropRate §3.2: the new threshold after a window closed with `t_actual`, for target
/// `t_target`, while in `side`.
pub(super) fn adjust(t: Dur, t_actual: Dur, t_target: Dur, side: Side) -> Dur {
    let t = match side {
        Side::Fill if t_actual > t_target => t.saturating_sub(log_step(t_actual - t_target)),
        Side::Drain if t_actual < t_target => t + log_step(t_target - t_actual),
        _ => t,
    };
    t.max(T_MIN).min(t_target * T_MAX_FACTOR)
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn ms(v: u64) -> Dur {
        Dur::from_ms(v)
    }

    #[test]
    fn log_steps_in_ms() {
        // ln 20 = 2.995 732 ms; ln e = 1 ms; ln 1 = 0; below 1 ms nothing.
        assert_eq!(log_step(ms(20)), Dur::from_ns(2_995_732));
        assert_eq!(log_step(Dur::from_ns(2_718_282)), Dur::from_ns(1_000_000));
        assert_eq!(log_step(ms(1)), Dur::ZERO);
        assert_eq!(log_step(Dur::from_us(500)), Dur::ZERO);
        // ln 100 = 4.605 170 ms.
        assert_eq!(log_step(ms(100)), Dur::from_ns(4_605_170));
    }

    #[test]
    fn threshold_moves_against_the_error_only_in_fill_and_drain() {
        let target = ms(40);
        // Too much delay seen in Fill: T = 40 − ln(60 − 40) = 37.004 268 ms.
        assert_eq!(
            adjust(ms(40), ms(60), target, Side::Fill),
            Dur::from_ns(37_004_268)
        );
        // Too little seen in Drain: T = 40 + ln(40 − 30) = 42.302 585 ms.
        assert_eq!(
            adjust(ms(40), ms(30), target, Side::Drain),
            Dur::from_ns(42_302_585)
        );
        // The other combinations leave T alone.
        assert_eq!(adjust(ms(40), ms(30), target, Side::Fill), ms(40));
        assert_eq!(adjust(ms(40), ms(60), target, Side::Drain), ms(40));
        assert_eq!(adjust(ms(40), ms(60), target, Side::Other), ms(40));
        // Bounds: never below 1 ms, never above 4 × t̄_buff.
        assert_eq!(adjust(ms(2), ms(1000), target, Side::Fill), T_MIN);
        assert_eq!(adjust(ms(159), ms(0), target, Side::Drain), ms(160));
    }

    #[test]
    fn t_actual_is_the_eq9_ewma_of_window_means() {
        let mut n = Nfl::default();
        // Window of 10 packets: samples 10, 20, 30 ms at delivered 0, 5, 10.
        assert_eq!(n.on_sample(ms(10), 0, 10), None);
        assert_eq!(n.on_sample(ms(20), 5, 10), None);
        // Closes: mean 20 ms; the first window sets t_actual.
        assert_eq!(n.on_sample(ms(30), 10, 10), Some(ms(20)));
        // Next window: one sample of 60 ms at delivered 20.
        // t_actual = 20 − 20/8 + 60/8 = 20 − 2.5 + 7.5 = 25 ms.
        assert_eq!(n.on_sample(ms(60), 20, 10), Some(ms(25)));
        assert_eq!(n.t_actual(), Some(ms(25)));
    }
}
