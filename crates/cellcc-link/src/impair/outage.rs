//! Link outages: windows `[start, start + duration)` in which a link has no capacity.
//!
//! Motivation: a cellular link can lose its capacity for a while (deep fade, handover,
//! coverage hole). What happens to the traffic depends on the radio layer: with RLC
//! acknowledged mode and a surviving connection the base station keeps the packets and
//! sends them afterwards (a *stall*); after a radio link failure the UE re-establishes
//! the connection and the buffered packets are gone (a *drop*). Mahimahi's `mm-onoff` /
//! `mm-intermittent` only drop (see `docs/mahimahi-compat.md`); the TCP-over-LTE study
//! shared with this project describes the capacity collapse under mobility.
//!
//! ```text
//!   kind    in the window                            at the window start
//!   stall   serves nothing; arrivals are queued      nothing (a partly sent packet
//!           as usual                                 resumes after the window)
//!   drop    serves nothing; every arrival is lost    every queued packet and the one
//!                                                    in transit are lost
//! ```
//!
//! In both, trace opportunities inside the window are never offered, a constant-rate link
//! pauses (the packet on the wire finishes `duration` later), and the link's
//! `capacity_bytes` counts 0 for the window. Losses are reported through the link's drop
//! queue with `DropReason::Outage`.
//!
//! Differences from Mahimahi: `mm-onoff` draws random on/off periods and only drops; here
//! windows are fixed in the scenario (reproducible), and may stall instead.

use cellcc_units::{Dur, Time};

use crate::params::{dur_s, ParamError};

/// What an outage does to the traffic.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum OutageKind {
    /// No service; packets wait (RLC keeps them). The default.
    #[default]
    Stall,
    /// No service; arrivals are lost and the queue is flushed at the start.
    Drop,
}

/// One outage, as a scenario writes it: `{ start_s = 10.0, duration_s = 2.0, kind =
/// "stall" }`.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutageConfig {
    /// Start, in seconds of simulated time (≥ 0).
    pub start_s: f64,
    /// Length in seconds (> 0).
    pub duration_s: f64,
    /// `"stall"` (default) or `"drop"`.
    #[serde(default)]
    pub kind: OutageKind,
}

impl OutageConfig {
    /// Check `start_s ≥ 0`, `duration_s > 0` and that the outage ends within [`Time::MAX`].
    pub fn validate(&self) -> Result<(), ParamError> {
        self.window().map(|_| ())
    }

    fn window(&self) -> Result<OutageWindow, ParamError> {
        let start = Time::ZERO + dur_s("start_s", self.start_s)?;
        let duration = dur_s("duration_s", self.duration_s)?;
        if duration.is_zero() {
            return Err(ParamError::new(
                "duration_s",
                format!("must be positive, got {}", self.duration_s),
            ));
        }
        let end = start.checked_add(duration).ok_or_else(|| {
            ParamError::new("duration_s", "the outage ends after the end of time")
        })?;
        Ok(OutageWindow {
            start,
            end,
            kind: self.kind,
        })
    }
}

/// An outage in nanoseconds: `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutageWindow {
    /// First instant without service.
    pub start: Time,
    /// First instant with service again (exclusive end).
    pub end: Time,
    /// Whether packets stall or are dropped during the window.
    pub kind: OutageKind,
}

/// The outages of one link: disjoint windows in time order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outages {
    windows: Vec<OutageWindow>,
    /// `down_before[i]`: total outage time of `windows[..i]` (len + 1 entries).
    down_before: Vec<Dur>,
}

impl Default for Outages {
    fn default() -> Self {
        Self::none()
    }
}

impl Outages {
    /// No outages.
    pub fn none() -> Self {
        Outages {
            windows: Vec::new(),
            down_before: vec![Dur::ZERO],
        }
    }

    /// Windows in any order; they may touch but not overlap, and must not be empty.
    pub fn new(mut windows: Vec<OutageWindow>) -> Result<Self, ParamError> {
        if let Some(i) = windows.iter().position(|w| w.end <= w.start) {
            return Err(ParamError::new(
                format!("outages[{i}].duration_s"),
                "must be positive",
            ));
        }
        windows.sort_by_key(|w| w.start);
        if let Some(pair) = windows.windows(2).find(|p| p[1].start < p[0].end) {
            return Err(ParamError::new(
                "outages",
                format!(
                    "the outage starting at {} overlaps the one from {} to {}; merge them",
                    pair[1].start, pair[0].start, pair[0].end
                ),
            ));
        }
        let mut down_before = Vec::with_capacity(windows.len() + 1);
        let mut total = Dur::ZERO;
        down_before.push(total);
        for w in &windows {
            total += w.end - w.start;
            down_before.push(total);
        }
        Ok(Outages {
            windows,
            down_before,
        })
    }

    /// From the scenario's list; errors name `outages[i].<key>` by position in the list.
    pub fn from_config(configs: &[OutageConfig]) -> Result<Self, ParamError> {
        let windows = configs
            .iter()
            .enumerate()
            .map(|(i, c)| c.window().map_err(|e| e.within(&format!("outages[{i}]"))))
            .collect::<Result<Vec<_>, _>>()?;
        Self::new(windows)
    }

    /// The windows, disjoint and in time order.
    pub fn windows(&self) -> &[OutageWindow] {
        &self.windows
    }

    /// Whether there are no outages.
    pub fn is_empty(&self) -> bool {
        self.windows.is_empty()
    }

    /// Index of the first window that has not ended at `t` (`end > t`).
    fn first_not_ended(&self, t: Time) -> usize {
        self.windows.partition_point(|w| w.end <= t)
    }

    /// The window containing `t`.
    pub fn containing(&self, t: Time) -> Option<&OutageWindow> {
        self.windows
            .get(self.first_not_ended(t))
            .filter(|w| w.start <= t)
    }

    /// Start of the first window starting after `t`.
    pub fn next_start_after(&self, t: Time) -> Option<Time> {
        let i = self.windows.partition_point(|w| w.start <= t);
        self.windows.get(i).map(|w| w.start)
    }

    /// Total outage time in `[Time::ZERO, t)`.
    fn down_until(&self, t: Time) -> Dur {
        let i = self.first_not_ended(t);
        let partial = self
            .windows
            .get(i)
            .map_or(Dur::ZERO, |w| t.saturating_since(w.start));
        self.down_before[i] + partial
    }

    /// Total outage time in `[from, to)`.
    pub fn down_time_in(&self, from: Time, to: Time) -> Dur {
        if to <= from {
            return Dur::ZERO;
        }
        self.down_until(to) - self.down_until(from)
    }

    /// The windows overlapping `[from, to)`.
    pub(crate) fn overlapping(&self, from: Time, to: Time) -> &[OutageWindow] {
        let first = self.first_not_ended(from);
        let last = self.windows.partition_point(|w| w.start < to);
        &self.windows[first..last.max(first)]
    }

    /// Service time at `t`: time elapsed outside outages. Constant inside a window.
    pub(crate) fn service_time_at(&self, t: Time) -> Time {
        Time::ZERO + (t - Time::ZERO - self.down_until(t))
    }

    /// The first instant at which the service time reaches `v` (the inverse of
    /// [`Outages::service_time_at`], taking the earliest instant of a flat stretch).
    pub(crate) fn wall_time_at(&self, v: Time) -> Time {
        // Window i starts at service time start_i − down_before[i]; every window whose
        // start comes before `v` in service time has passed in full.
        let passed = self
            .windows
            .iter()
            .zip(&self.down_before)
            .take_while(|(w, &down)| w.start - down < v)
            .count();
        v.saturating_add(self.down_before[passed])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(start_ms: u64, end_ms: u64, kind: OutageKind) -> OutageWindow {
        OutageWindow {
            start: Time::from_ms(start_ms),
            end: Time::from_ms(end_ms),
            kind,
        }
    }

    #[test]
    fn service_time_skips_windows() {
        let o = Outages::new(vec![
            w(30, 40, OutageKind::Drop),
            w(10, 20, OutageKind::Stall),
        ])
        .unwrap();
        assert_eq!(o.windows()[0].start, Time::from_ms(10));
        let ms = Time::from_ms;
        assert_eq!(o.service_time_at(ms(5)), ms(5));
        assert_eq!(o.service_time_at(ms(15)), ms(10));
        assert_eq!(o.service_time_at(ms(25)), ms(15));
        assert_eq!(o.service_time_at(ms(45)), ms(25));
        assert_eq!(o.wall_time_at(ms(5)), ms(5));
        assert_eq!(o.wall_time_at(ms(10)), ms(10));
        assert_eq!(o.wall_time_at(ms(10) + Dur(1)), ms(20) + Dur(1));
        assert_eq!(o.wall_time_at(ms(20)), ms(30));
        assert_eq!(o.wall_time_at(ms(21)), ms(41));
        assert_eq!(o.down_time_in(ms(0), ms(100)), Dur::from_ms(20));
        assert_eq!(o.down_time_in(ms(15), ms(35)), Dur::from_ms(10));
        assert_eq!(o.containing(ms(20)), None);
        assert_eq!(o.containing(ms(19)).unwrap().kind, OutageKind::Stall);
        assert_eq!(o.next_start_after(ms(10)), Some(ms(30)));
        assert_eq!(o.overlapping(ms(19), ms(31)).len(), 2);
        assert_eq!(o.overlapping(ms(20), ms(30)).len(), 0);
    }

    #[test]
    fn the_table_spelling() {
        use crate::params::test_value::{from, V};
        let c: OutageConfig =
            from(V::M(vec![("start_s", V::F(10.0)), ("duration_s", V::I(2))])).unwrap();
        assert_eq!(c.kind, OutageKind::Stall);
        let c: OutageConfig = from(V::M(vec![
            ("start_s", V::F(1.0)),
            ("duration_s", V::F(0.5)),
            ("kind", V::S("drop")),
        ]))
        .unwrap();
        assert_eq!(c.kind, OutageKind::Drop);
        let e = from::<OutageConfig>(V::M(vec![
            ("start_s", V::F(1.0)),
            ("duration_s", V::F(0.5)),
            ("kind", V::S("flush")),
        ]))
        .unwrap_err();
        assert!(e.contains("flush"), "{e}");
        let e = from::<OutageConfig>(V::M(vec![("start_ms", V::F(1.0))])).unwrap_err();
        assert!(e.contains("unknown field `start_ms`"), "{e}");
    }

    #[test]
    fn bad_windows_are_named() {
        let e = Outages::new(vec![
            w(10, 20, OutageKind::Stall),
            w(15, 25, OutageKind::Stall),
        ])
        .unwrap_err();
        assert_eq!(e.field, "outages");
        let cfg = |start_s, duration_s| OutageConfig {
            start_s,
            duration_s,
            kind: OutageKind::Stall,
        };
        let e = Outages::from_config(&[cfg(1.0, 1.0), cfg(-1.0, 1.0)]).unwrap_err();
        assert_eq!(e.field, "outages[1].start_s");
        let e = Outages::from_config(&[cfg(1.0, 0.0)]).unwrap_err();
        assert_eq!(e.field, "outages[0].duration_s");
    }
}
