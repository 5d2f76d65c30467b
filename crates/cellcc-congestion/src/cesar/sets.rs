//! Sets, anchor packets and the bandwidths read from them (César §IV-C, §IV-D, Eq. 1
//! and the BW_set of Eq. 6).
//!
//! With the scheduling unit known, the ACK stream splits into sets: a gap of about one
//! SU or more starts a new set ("if the ACK interval exceeds scheduling unit or is
//! almost the same"), and so does an ACK arriving more than one SU after the set's
//! first ACK ("a set ends if more than scheduling unit time has elapsed since the
//! arrival of the first ACK in a group of bursty ACKs"). The last packet of each set is
//! its *anchor*: it waited least for the uplink grant, so its RTT is the least inflated
//! by scheduling. A set is closed (and César adjusts once) when the first ACK of the
//! next set arrives.
//!
//! ```text
//!  ACKs at the sender:  ||||        |||         |      ||||
//!                       set n-1     set n       set n+1
//!                          ^anchor     ^anchor     ^ ...
//!  duration of set n  = end(n) - end(n-1)          (paper rule)
//!  BW_set(n)          = packets acked in set n / duration of set n
//! ```
//!
//! "Almost the same" is a margin of 1 ms (0.5 ms when SU ≤ 3 ms), as in the module,
//! and the threshold is never below SU/2.
//!
//! **Module rule** (`fidelity = "module"`): the reference module's accounting, which
//! lags one ACK (each ACK's packets are added when the next ACK is classified), bounds a
//! set's length with a running `clock_pass` sum of its small gaps, and takes as set
//! duration the large gap before the set (plus `clock_pass`).

use crate::bbr::BW_UNIT;
use crate::{Dur, Time};

/// "Almost the same" as the SU (module `margin`).
const MARGIN: Dur = Dur::from_ms(1);
/// The margin for small scheduling units.
const MARGIN_SMALL_SU: Dur = Dur::from_us(500);
/// Scheduling units up to this use [`MARGIN_SMALL_SU`].
const SMALL_SU: Dur = Dur::from_ms(3);
/// Module rule: a skipped-grant excess is carried only for gaps at least this much
/// longer than the SU.
const MODULE_EXCESS_MIN: Dur = Dur::from_us(500);

/// µs per second, for rates.
const NS_PER_US: u128 = 1000;

/// César Eq. (1): `BW_i = Delivered_i / RTT_i`, packets per µs << 24 (BBR's
/// [`BW_UNIT`]). `None` without a delivery count or RTT.
pub(super) fn bw_over_rtt(delivered: u64, rtt: Dur) -> Option<u64> {
    if delivered == 0 || rtt.is_zero() {
        return None;
    }
    let bw = u128::from(delivered) * u128::from(BW_UNIT) * NS_PER_US / u128::from(rtt.as_ns());
    Some(u64::try_from(bw).unwrap_or(u64::MAX))
}

/// The module's BW_i: the per-ACK `tcp_rate.c` sample, `delivered / interval_us`.
/// `None` for an invalid sample (the module used such samples unchecked).
pub(super) fn bw_over_interval(delivered: u64, interval: Option<Dur>) -> Option<u64> {
    let us = interval?.as_us();
    if delivered == 0 || us == 0 {
        return None;
    }
    let bw = u128::from(delivered) * u128::from(BW_UNIT) / u128::from(us);
    Some(u64::try_from(bw).unwrap_or(u64::MAX))
}

/// BW_set (César §IV-E, Eq. 6): packets acked in the set over the set's duration.
pub(super) fn bw_set(delivered: u64, duration: Dur) -> Option<u64> {
    if delivered == 0 || duration.is_zero() {
        return None;
    }
    let bw = u128::from(delivered) * u128::from(BW_UNIT) * NS_PER_US / u128::from(duration.as_ns());
    Some(u64::try_from(bw).unwrap_or(u64::MAX))
}

/// The margin by which a gap may fall short of the SU and still start a new set.
pub(super) fn margin(su: Dur) -> Dur {
    if su <= SMALL_SU {
        MARGIN_SMALL_SU
    } else {
        MARGIN
    }
}

/// Gaps at least this long start a new set: `SU − margin`, at least `SU / 2`.
pub(super) fn new_set_threshold(su: Dur) -> Dur {
    su.saturating_sub(margin(su)).max(su / 2)
}

/// What César reads from one ACK that carried an RTT sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct AckObs {
    /// Arrival time.
    pub now: Time,
    /// Packets newly acked or sacked (`acked_sacked`).
    pub acked: u32,
    /// RTT sample (`rs.rtt`).
    pub rtt: Dur,
    /// This ACK's BW_i sample, if valid (Eq. 1, or the module's rate sample).
    pub bw: Option<u64>,
}

/// A set that just ended, described by its anchor (last) packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct ClosedSet {
    /// Packets acked in the set.
    pub delivered: u64,
    /// The set's duration; `None` for the first set (paper rule) or a zero interval.
    pub duration: Option<Dur>,
    /// RTT_i: the anchor's RTT.
    pub rtt: Dur,
    /// BW_i: the anchor's bandwidth sample (the latest valid one up to the anchor).
    pub bw: Option<u64>,
}

impl ClosedSet {
    /// BW_set of this set.
    pub(super) fn bw_set(&self) -> Option<u64> {
        bw_set(self.delivered, self.duration?)
    }
}

/// Set tracking, by the paper's rule or the module's.
#[derive(Clone, Debug)]
pub(super) enum SetTracker {
    Paper(PaperSets),
    Module(ModuleSets),
}

impl SetTracker {
    /// Classify one ACK; returns the set it closed, if any.
    pub(super) fn on_ack(&mut self, obs: &AckObs, su: Dur) -> Option<ClosedSet> {
        match self {
            SetTracker::Paper(s) => s.on_ack(obs, su),
            SetTracker::Module(s) => s.on_ack(obs, su),
        }
    }
}

/// The set being collected.
#[derive(Clone, Copy, Debug)]
struct OpenSet {
    first: Time,
    last: Time,
    delivered: u64,
    rtt: Dur,
    bw: Option<u64>,
}

/// The paper's set rule.
#[derive(Clone, Debug, Default)]
pub(super) struct PaperSets {
    open: Option<OpenSet>,
    /// Anchor arrival of the previous set (its end time).
    prev_end: Option<Time>,
    /// Latest valid BW_i sample.
    last_bw: Option<u64>,
}

impl PaperSets {
    fn on_ack(&mut self, obs: &AckObs, su: Dur) -> Option<ClosedSet> {
        if obs.bw.is_some() {
            self.last_bw = obs.bw;
        }
        let mut closed = None;
        if let Some(set) = self.open {
            let gap = obs.now.saturating_since(set.last);
            let age = obs.now.saturating_since(set.first);
            if gap >= new_set_threshold(su) || age > su {
                closed = Some(ClosedSet {
                    delivered: set.delivered,
                    duration: self
                        .prev_end
                        .map(|end| set.last.saturating_since(end))
                        .filter(|d| !d.is_zero()),
                    rtt: set.rtt,
                    bw: set.bw,
                });
                self.prev_end = Some(set.last);
                self.open = None;
            }
        }
        let set = self.open.get_or_insert(OpenSet {
            first: obs.now,
            last: obs.now,
            delivered: 0,
            rtt: obs.rtt,
            bw: None,
        });
        set.last = obs.now;
        set.delivered += u64::from(obs.acked);
        set.rtt = obs.rtt;
        set.bw = self.last_bw;
        closed
    }
}

/// The reference module's set rule (`previous_clock`, `previous_clock_diff`,
/// `clock_pass`, `previous_ack`, `su_delivered`, `su_interval`, `gathering`).
#[derive(Clone, Debug, Default)]
pub(super) struct ModuleSets {
    prev_time: Option<Time>,
    /// The previous ACK's gap (raw, or extended by `clock_pass` at a set boundary).
    prev_gap: Dur,
    clock_pass: Dur,
    prev_acked: u32,
    delivered: u64,
    interval: Dur,
    gathering: bool,
    prev_rtt: Dur,
    prev_bw: Option<u64>,
}

impl ModuleSets {
    fn on_ack(&mut self, obs: &AckObs, su: Dur) -> Option<ClosedSet> {
        let mut closed = None;
        let mut next_gap = Dur::ZERO;
        if let Some(prev_time) = self.prev_time {
            let margin = margin(su);
            let th = su.saturating_sub(margin);
            let raw = obs.now.saturating_since(prev_time);
            let g_prev = self.prev_gap + self.clock_pass;
            let g_cur = raw + self.clock_pass;
            next_gap = raw;
            match (g_prev >= th, g_cur >= th) {
                // The previous ACK opened a set after a large gap.
                (true, false) => {
                    self.delivered += u64::from(self.prev_acked);
                    self.interval = g_prev;
                    self.gathering = true;
                    // A gap past a whole number of SUs (skipped grants) by more than
                    // the margin carries its excess into this set's clock.
                    let k = ((self.prev_gap.as_ns() + su.as_ns() / 2) / su.as_ns().max(1)).max(1);
                    let whole = su * k;
                    if self.prev_gap > whole + margin && self.prev_gap >= su + MODULE_EXCESS_MIN {
                        self.clock_pass += self.prev_gap - whole;
                    }
                }
                // The previous ACK was a set on its own.
                (true, true) => {
                    self.delivered += u64::from(self.prev_acked);
                    self.interval = g_prev;
                    closed = Some(self.close());
                }
                // The set ended with the previous ACK.
                (false, true) => {
                    if self.gathering {
                        self.delivered += u64::from(self.prev_acked);
                        closed = Some(self.close());
                    }
                    if raw < th {
                        next_gap = g_cur; // the boundary came from clock_pass
                    }
                }
                // Inside a set.
                (false, false) => {
                    if self.gathering {
                        self.delivered += u64::from(self.prev_acked);
                        self.clock_pass += self.prev_gap;
                    }
                }
            }
        }
        self.prev_gap = next_gap;
        self.prev_acked = obs.acked;
        self.prev_time = Some(obs.now);
        self.prev_rtt = obs.rtt;
        if obs.bw.is_some() {
            self.prev_bw = obs.bw; // invalid samples are skipped, not used
        }
        closed
    }

    fn close(&mut self) -> ClosedSet {
        let set = ClosedSet {
            delivered: self.delivered,
            duration: Some(self.interval).filter(|d| !d.is_zero()),
            rtt: self.prev_rtt,
            bw: self.prev_bw,
        };
        self.gathering = false;
        self.interval = Dur::ZERO;
        self.delivered = 0;
        self.clock_pass = Dur::ZERO;
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eq_1_bandwidth_worked_numbers() {
        // 50 packets delivered during a 40 ms RTT: 1250 packets/s = 0.00125 packets/µs;
        // × 2^24 = 20 971.52 -> 20 971.
        assert_eq!(bw_over_rtt(50, Dur::from_ms(40)), Some(20_971));
        // The module's sample: 50 packets over a 41 ms interval: 50/41 000 × 2^24 =
        // 20 460.0 -> 20 460.
        assert_eq!(bw_over_interval(50, Some(Dur::from_ms(41))), Some(20_460));
        // BW_set: 6 packets in a 5 ms set: 1200 packets/s; × 2^24 / 10^6 = 20 132.66.
        assert_eq!(bw_set(6, Dur::from_ms(5)), Some(20_132));
        // Invalid samples give no bandwidth instead of a division by zero.
        assert_eq!(bw_over_rtt(0, Dur::from_ms(40)), None);
        assert_eq!(bw_over_rtt(5, Dur::ZERO), None);
        assert_eq!(bw_over_interval(5, None), None);
        assert_eq!(bw_over_interval(5, Some(Dur::from_ns(999))), None);
        assert_eq!(bw_set(5, Dur::ZERO), None);
    }

    #[test]
    fn thresholds() {
        assert_eq!(new_set_threshold(Dur::from_ms(5)), Dur::from_ms(4));
        assert_eq!(new_set_threshold(Dur::from_us(2500)), Dur::from_ms(2));
        assert_eq!(new_set_threshold(Dur::from_us(800)), Dur::from_us(400));
    }

    fn ack(t_us: u64, acked: u32, rtt_us: u64) -> AckObs {
        AckObs {
            now: Time::from_us(t_us),
            acked,
            rtt: Dur::from_us(rtt_us),
            bw: Some(rtt_us), // a recognisable stand-in
        }
    }

    #[test]
    fn paper_sets_close_on_a_large_gap_with_the_last_ack_as_anchor() {
        let su = Dur::from_ms(5);
        let mut s = SetTracker::Paper(PaperSets::default());
        // Set A at 0: three ACKs; set B at 5 ms: two ACKs; set C at 15 ms (grant
        // skipped); D at 19.2 ms (4.2 ms >= 4 ms threshold).
        let acks = [
            ack(0, 2, 40_000),
            ack(30, 2, 39_000),
            ack(60, 1, 38_000),
            ack(5000, 2, 41_000),
            ack(5050, 2, 40_500),
            ack(15_000, 1, 42_000),
            ack(19_200, 1, 43_000),
        ];
        let closed: Vec<_> = acks.iter().filter_map(|a| s.on_ack(a, su)).collect();
        assert_eq!(closed.len(), 3);
        // A: 5 packets, no previous set, anchor = its last ACK (RTT 38 ms).
        assert_eq!(
            closed[0],
            ClosedSet {
                delivered: 5,
                duration: None,
                rtt: Dur::from_us(38_000),
                bw: Some(38_000)
            }
        );
        // B: 4 packets over end(B) - end(A) = 5050 - 60 = 4990 µs.
        assert_eq!(closed[1].delivered, 4);
        assert_eq!(closed[1].duration, Some(Dur::from_us(4990)));
        assert_eq!(closed[1].rtt, Dur::from_us(40_500));
        // C: the lone ACK at 15 ms, 9950 µs after B's end.
        assert_eq!(closed[2].duration, Some(Dur::from_us(9950)));
        assert_eq!(closed[2].delivered, 1);
    }

    #[test]
    fn paper_sets_are_cut_after_one_su_of_continuous_acks() {
        let su = Dur::from_ms(5);
        let mut s = SetTracker::Paper(PaperSets::default());
        // ACKs every 1 ms: no gap is large, so a set ends when an ACK comes more than
        // 5 ms after the set's first one: sets {0..5}, {6..11}, ...
        let closed: Vec<_> = (0..13)
            .filter_map(|i| s.on_ack(&ack(i * 1000, 1, 40_000), su))
            .collect();
        assert_eq!(closed.len(), 2);
        assert_eq!(closed[0].delivered, 6);
        assert_eq!(closed[1].delivered, 6);
        assert_eq!(closed[1].duration, Some(Dur::from_ms(6)));
    }

    #[test]
    fn module_sets_lag_one_ack_and_use_the_gap_before_the_set() {
        let su = Dur::from_ms(5);
        let mut s = SetTracker::Module(ModuleSets::default());
        let acks = [
            ack(0, 2, 40_000),      // first ACK: remembered only
            ack(5000, 2, 41_000),   // large after small (prev gap 0): nothing gathered
            ack(5030, 3, 40_800),   // small after large: 5000 opened a set, interval 5 ms
            ack(5060, 1, 40_600),   // small after small: +3, clock_pass 30 µs
            ack(10_000, 2, 42_000), // large after small: +1, set closed
        ];
        let closed: Vec<_> = acks.iter().filter_map(|a| s.on_ack(a, su)).collect();
        assert_eq!(closed.len(), 1);
        assert_eq!(
            closed[0],
            ClosedSet {
                delivered: 2 + 3 + 1,
                duration: Some(Dur::from_ms(5)),
                rtt: Dur::from_us(40_600),
                bw: Some(40_600)
            }
        );
        // A lone ACK after a large gap, followed by another large gap: a one-ACK set.
        let closed = s.on_ack(&ack(15_000, 1, 43_000), su).unwrap();
        assert_eq!(closed.delivered, 2);
        assert_eq!(closed.duration, Some(Dur::from_us(4940)));
        assert_eq!(closed.rtt, Dur::from_us(42_000));
    }

    #[test]
    fn invalid_samples_keep_the_last_valid_bandwidth() {
        let su = Dur::from_ms(5);
        for mut s in [
            SetTracker::Paper(PaperSets::default()),
            SetTracker::Module(ModuleSets::default()),
        ] {
            s.on_ack(&ack(0, 1, 40_000), su);
            let mut a = ack(5000, 1, 41_000);
            a.bw = None;
            s.on_ack(&a, su);
            let mut last = None;
            for t in [10_000, 15_000] {
                let mut a = ack(t, 1, 41_000);
                a.bw = None;
                last = s.on_ack(&a, su).or(last);
            }
            assert_eq!(last.unwrap().bw, Some(40_000));
        }
    }
}
