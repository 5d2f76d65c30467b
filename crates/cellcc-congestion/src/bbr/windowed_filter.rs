//! Windowed max filter with three samples (Linux `lib/win_minmax.c`, running max only).
//!
//! Tracks the best, second-best and third-best maxima seen in the last `win` units of
//! "time" using three samples, in O(1) per update. BBR feeds it bandwidth samples with
//! the packet-timed round count as the clock, so `win = 10` keeps the maximum of the
//! last ten rounds.
//!
//! The three samples always satisfy `s[0].v >= s[1].v >= s[2].v` and
//! `s[0].t <= s[1].t <= s[2].t` (modulo wrap-around): the best sample is the oldest,
//! and each later choice is a younger, smaller candidate that takes over when the one
//! before it falls out of the window.
//!
//! Differences from Linux: none. Times are `u32` and compared with wrapping
//! subtraction exactly as the kernel does, so the round counter may wrap.

/// One filter entry: a value and the time it was measured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MinmaxSample {
    /// Measurement time (BBR: round count).
    pub t: u32,
    /// Measured value (BBR: bandwidth in packets per µs << 24).
    pub v: u32,
}

/// A windowed running-max filter (`struct minmax`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WindowedMax {
    s: [MinmaxSample; 3],
}

impl WindowedMax {
    /// A filter holding `meas` measured at `t` (`minmax_reset`).
    pub fn new(t: u32, meas: u32) -> Self {
        let mut m = WindowedMax::default();
        m.reset(t, meas);
        m
    }

    /// The current windowed maximum (`minmax_get`).
    pub fn get(&self) -> u32 {
        self.s[0].v
    }

    /// Forget everything and hold only `meas` at `t` (`minmax_reset`).
    pub fn reset(&mut self, t: u32, meas: u32) -> u32 {
        let val = MinmaxSample { t, v: meas };
        self.s = [val; 3];
        self.s[0].v
    }

    /// Add `meas` measured at `t`, keeping the max over the last `win` time units
    /// (`minmax_running_max`). Returns the new maximum.
    pub fn running_max(&mut self, win: u32, t: u32, meas: u32) -> u32 {
        let val = MinmaxSample { t, v: meas };

        // A new overall max, or every stored sample (even the youngest) is too old:
        // forget the earlier samples.
        if val.v >= self.s[0].v || val.t.wrapping_sub(self.s[2].t) > win {
            return self.reset(t, meas);
        }

        if val.v >= self.s[1].v {
            self.s[2] = val;
            self.s[1] = val;
        } else if val.v >= self.s[2].v {
            self.s[2] = val;
        }

        self.subwin_update(win, val)
    }

    /// As time advances, promote the 2nd and 3rd choices (`minmax_subwin_update`).
    fn subwin_update(&mut self, win: u32, val: MinmaxSample) -> u32 {
        let dt = val.t.wrapping_sub(self.s[0].t);

        if dt > win {
            // The best sample left the window: the 2nd choice becomes the best, the
            // 3rd the 2nd, and the new sample the 3rd. The (new) best may itself be
            // outside the window, so this can happen twice (the 3rd choice was checked
            // to be inside the window on entry).
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if val.t.wrapping_sub(self.s[0].t) > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].t == self.s[0].t && dt > win / 4 {
            // A quarter of the window passed without a new 2nd choice: take one from
            // the second quarter.
            self.s[2] = val;
            self.s[1] = val;
        } else if self.s[2].t == self.s[1].t && dt > win / 2 {
            // Half the window passed without a new 3rd choice: take one from the
            // second half.
            self.s[2] = val;
        }
        self.s[0].v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WIN: u32 = 10;

    #[test]
    fn keeps_the_max_for_the_whole_window_then_expires_it() {
        // A 100 at round 0, then 50s every round: the 100 is the max while
        // t - 0 <= 10, i.e. through round 10, and expires at round 11.
        let mut f = WindowedMax::new(0, 100);
        for t in 1..=10 {
            assert_eq!(f.running_max(WIN, t, 50), 100, "round {t}");
        }
        assert_eq!(f.running_max(WIN, 11, 50), 50);
    }

    #[test]
    fn expiry_falls_back_to_the_best_younger_sample() {
        // 100 at round 0; 80 at round 3 (2nd choice); 60 at round 6 (3rd choice);
        // then small samples. When 100 expires (round 11) the max is 80, which is
        // itself from round 3 and stays until round 13; then 60 (round 6) until 16.
        let mut f = WindowedMax::new(0, 100);
        let mut got = Vec::new();
        for t in 1..=20u32 {
            let v = match t {
                3 => 80,
                6 => 60,
                _ => 10,
            };
            got.push((t, f.running_max(WIN, t, v)));
        }
        let expect = |t: u32| match t {
            0..=10 => 100,
            11..=13 => 80,
            14..=16 => 60,
            _ => 10,
        };
        for (t, v) in got {
            assert_eq!(v, expect(t), "round {t}");
        }
    }

    #[test]
    fn a_new_max_resets_all_choices() {
        let mut f = WindowedMax::new(0, 10);
        f.running_max(WIN, 1, 5);
        assert_eq!(f.running_max(WIN, 2, 30), 30);
        assert_eq!(f.s, [MinmaxSample { t: 2, v: 30 }; 3]);
        // Equal values also count as a new max (>=), refreshing its time.
        f.running_max(WIN, 5, 30);
        assert_eq!(f.s[0], MinmaxSample { t: 5, v: 30 });
    }

    #[test]
    fn a_stale_filter_is_reset_by_any_sample() {
        // Nothing for more than a window: even a smaller value takes over at once.
        let mut f = WindowedMax::new(0, 100);
        assert_eq!(f.running_max(WIN, 25, 7), 7);
    }

    #[test]
    fn round_counter_wraps_like_the_kernel() {
        let start = u32::MAX - 2;
        let mut f = WindowedMax::new(start, 100);
        // start + 10 wraps to 7; still within the window.
        assert_eq!(f.running_max(WIN, start.wrapping_add(10), 1), 100);
        assert_eq!(f.running_max(WIN, start.wrapping_add(11), 1), 1);
    }
}
