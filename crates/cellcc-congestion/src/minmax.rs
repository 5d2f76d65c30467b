//! Windowed min/max filter with three samples: Linux `lib/win_minmax.c` (Kathleen
//! Nichols' algorithm), used by BBR's bandwidth filter and by the TCP stack's
//! `tcp_min_rtt`.
//!
//! # Algorithm
//!
//! The filter tracks the best, second-best and third-best samples seen in the last `win`
//! units of "time", in O(1) per update and three slots of memory. For a running max the
//! slots always satisfy `s[0].v >= s[1].v >= s[2].v` and `s[0].t <= s[1].t <= s[2].t`
//! (for a running min the values are ordered the other way): the best sample is the
//! oldest, and each later choice is a younger, worse candidate that takes over when the
//! one before it falls out of the window.
//!
//! Per sample (`minmax_running_max` / `minmax_running_min`):
//! 1. A new best value, or a filter whose youngest slot is older than the window, is
//!    reset to hold only the new sample in all three slots.
//! 2. Otherwise the sample replaces the 2nd and 3rd choices if it beats the 2nd, or only
//!    the 3rd if it beats the 3rd.
//! 3. `minmax_subwin_update`: if the best sample has left the window, the choices move
//!    up (possibly twice); else if a quarter of the window passed without a distinct 2nd
//!    choice, or half of it without a distinct 3rd, the new sample fills that slot, so
//!    the younger choices come from later sub-windows.
//!
//! The only difference between the max and the min filter is the direction of the
//! comparison in steps 1 and 2; both go through one routine here, as in the kernel.
//!
//! # Units
//!
//! Times and values are `u32` as in the kernel. Time is in whatever unit the caller
//! uses: BBR passes its packet-timed round count, the TCP stack passes `tcp_jiffies32`
//! (the low 32 bits of jiffies) with a window of `tcp_min_rtt_wlen · HZ` and RTTs in µs.
//! Times are compared with wrapping subtraction exactly as the kernel does, so the clock
//! may wrap; only an age of 2^32 units or more (49.7 days of jiffies at `HZ = 1000`)
//! would be misread.
//!
//! # Empty min filter
//!
//! A running-min filter reset with value `u32::MAX` (Linux `tcp_init_sock`:
//! `minmax_reset(&tp->rtt_min, tcp_jiffies32, ~0U)`) holds no sample: [`Minmax::get`]
//! returns `u32::MAX` and the first sample replaces it. [`Minmax::new_min_empty`]
//! builds such a filter.
//!
//! Differences from Linux: none.

/// One filter slot: a value and the time it was measured (`struct minmax_sample`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct MinmaxSample {
    /// Measurement time (BBR: round count; TCP: jiffies).
    t: u32,
    /// Measured value (BBR: bandwidth in packets per µs << 24; TCP: RTT in µs).
    v: u32,
}

/// Which extreme the filter keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Keep {
    Max,
    Min,
}

impl Keep {
    /// `a` is at least as good as `b` (`>=` for a max, `<=` for a min, as in the kernel:
    /// an equal value counts as new and refreshes its time).
    fn at_least(self, a: u32, b: u32) -> bool {
        match self {
            Keep::Max => a >= b,
            Keep::Min => a <= b,
        }
    }
}

/// A windowed running min or max filter over three samples (`struct minmax`).
///
/// One value tracks either a max ([`running_max`](Self::running_max)) or a min
/// ([`running_min`](Self::running_min)); mixing the two on one filter is meaningless, as
/// in the kernel.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Minmax {
    s: [MinmaxSample; 3],
}

impl Minmax {
    /// A filter holding only `meas` measured at `t` (`minmax_reset`).
    pub fn new(t: u32, meas: u32) -> Self {
        let mut m = Minmax::default();
        m.reset(t, meas);
        m
    }

    /// An empty running-min filter: [`get`](Self::get) returns `u32::MAX` until the
    /// first [`running_min`](Self::running_min) sample (`tcp_init_sock` resets
    /// `rtt_min` with `~0U`).
    pub fn new_min_empty() -> Self {
        Minmax::new(0, u32::MAX)
    }

    /// The current windowed extreme (`minmax_get`).
    pub fn get(&self) -> u32 {
        self.s[0].v
    }

    /// Forget everything and hold only `meas` at `t` (`minmax_reset`). Returns `meas`.
    pub fn reset(&mut self, t: u32, meas: u32) -> u32 {
        self.s = [MinmaxSample { t, v: meas }; 3];
        self.s[0].v
    }

    /// Add `meas` measured at `t`, keeping the max over the last `win` time units
    /// (`minmax_running_max`). Returns the new maximum.
    pub fn running_max(&mut self, win: u32, t: u32, meas: u32) -> u32 {
        self.running(Keep::Max, win, t, meas)
    }

    /// Add `meas` measured at `t`, keeping the min over the last `win` time units
    /// (`minmax_running_min`). Returns the new minimum.
    pub fn running_min(&mut self, win: u32, t: u32, meas: u32) -> u32 {
        self.running(Keep::Min, win, t, meas)
    }

    /// `minmax_running_max` and `minmax_running_min`, which differ only in `keep`.
    fn running(&mut self, keep: Keep, win: u32, t: u32, meas: u32) -> u32 {
        let val = MinmaxSample { t, v: meas };

        // A new overall best, or every stored sample (even the youngest) is too old:
        // forget the earlier samples.
        if keep.at_least(val.v, self.s[0].v) || val.t.wrapping_sub(self.s[2].t) > win {
            return self.reset(t, meas);
        }

        if keep.at_least(val.v, self.s[1].v) {
            self.s[2] = val;
            self.s[1] = val;
        } else if keep.at_least(val.v, self.s[2].v) {
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

    // Running max, BBR style: a 10-round window.

    const WIN: u32 = 10;

    #[test]
    fn max_is_kept_for_the_whole_window_then_expires() {
        // A 100 at round 0, then 50s every round: the 100 is the max while
        // t - 0 <= 10, i.e. through round 10, and expires at round 11.
        let mut f = Minmax::new(0, 100);
        for t in 1..=10 {
            assert_eq!(f.running_max(WIN, t, 50), 100, "round {t}");
        }
        assert_eq!(f.running_max(WIN, 11, 50), 50);
    }

    #[test]
    fn max_expiry_falls_back_to_the_best_younger_sample() {
        // 100 at round 0; 80 at round 3 (2nd choice); 60 at round 6 (3rd choice);
        // then small samples. When 100 expires (round 11) the max is 80, which is
        // itself from round 3 and stays until round 13; then 60 (round 6) until 16.
        let mut f = Minmax::new(0, 100);
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
        let mut f = Minmax::new(0, 10);
        f.running_max(WIN, 1, 5);
        assert_eq!(f.running_max(WIN, 2, 30), 30);
        assert_eq!(f.s, [MinmaxSample { t: 2, v: 30 }; 3]);
        // Equal values also count as a new max (>=), refreshing its time.
        f.running_max(WIN, 5, 30);
        assert_eq!(f.s[0], MinmaxSample { t: 5, v: 30 });
    }

    #[test]
    fn a_stale_max_filter_is_reset_by_any_sample() {
        // Nothing for more than a window: even a smaller value takes over at once.
        let mut f = Minmax::new(0, 100);
        assert_eq!(f.running_max(WIN, 25, 7), 7);
    }

    #[test]
    fn max_time_wraps_like_the_kernel() {
        let start = u32::MAX - 2;
        let mut f = Minmax::new(start, 100);
        // start + 10 wraps to 7; still within the window.
        assert_eq!(f.running_max(WIN, start.wrapping_add(10), 1), 100);
        assert_eq!(f.running_max(WIN, start.wrapping_add(11), 1), 1);
    }

    // Running min, TCP min-RTT style: an empty filter and a 100-tick window.

    #[test]
    fn min_tracks_and_expires() {
        let mut m = Minmax::new_min_empty();
        assert_eq!(m.get(), u32::MAX);
        assert_eq!(m.running_min(100, 0, 50), 50);
        assert_eq!(m.running_min(100, 10, 60), 50);
        assert_eq!(m.running_min(100, 30, 70), 50);
        // At t = 30 a quarter window had passed, so 70 became the 2nd choice (60 was
        // dropped); when 50 ages out after the window, 70 takes over.
        assert_eq!(m.running_min(100, 101, 80), 70);
        assert_eq!(m.running_min(100, 120, 40), 40);
        // Nothing in the window for longer than the window: reset to the new sample.
        assert_eq!(m.running_min(100, 400, 90), 90);
    }

    #[test]
    fn the_first_min_sample_replaces_the_empty_state_at_any_time() {
        // The empty filter's time is irrelevant: u32::MAX loses to (or ties with) any
        // value, so the first sample always resets the filter.
        let mut m = Minmax::new_min_empty();
        assert_eq!(m.running_min(100, 7, u32::MAX), u32::MAX);
        assert_eq!(m.s, [MinmaxSample { t: 7, v: u32::MAX }; 3]);
        let mut m = Minmax::new_min_empty();
        assert_eq!(m.running_min(100, 5_000, 123), 123);
        assert_eq!(m.s, [MinmaxSample { t: 5_000, v: 123 }; 3]);
    }

    #[test]
    fn min_expiry_promotes_the_2nd_and_3rd_choices() {
        // Mirror of the max case: 10 at t = 0; 20 at t = 3 (2nd choice); 30 at t = 6
        // (3rd choice); then large samples. 10 lasts through t = 10, 20 through 13,
        // 30 through 16.
        let mut f = Minmax::new(0, 10);
        for t in 1..=20u32 {
            let v = match t {
                3 => 20,
                6 => 30,
                _ => 90,
            };
            let expect = match t {
                0..=10 => 10,
                11..=13 => 20,
                14..=16 => 30,
                _ => 90,
            };
            assert_eq!(f.running_min(WIN, t, v), expect, "t {t}");
        }
    }

    #[test]
    fn min_time_wraps_like_the_kernel() {
        // tcp_jiffies32 wraps: the window is measured across the wrap.
        let start = u32::MAX - 50;
        let mut m = Minmax::new_min_empty();
        m.running_min(100, start, 40);
        assert_eq!(m.running_min(100, start.wrapping_add(100), 90), 40);
        assert_eq!(m.running_min(100, start.wrapping_add(101), 90), 90);
    }
}
