//! Scheduling-unit (SU) estimation from ACK inter-arrival gaps (César §IV-B, §IV-C).
//!
//! The sender sees ACKs in bursts: the ACKs of one *set* (packets served by the same
//! downlink resources and sent back on the same uplink grant) arrive almost together,
//! and consecutive sets are a multiple of the scheduling unit apart. The gaps between
//! consecutive ACKs therefore form horizontal "lines" (Fig. 6): one near 0 ms (inside a
//! set) and others at SU, 2·SU, ... (between sets, more than one SU when a grant is
//! skipped). A path whose bottleneck is not a scheduled cellular link shows no such
//! lines, and César falls back to BBR (§IV-A).
//!
//! Both rules below read one histogram of gaps in 0.5 ms bins over 0–20 ms
//! (`LINE_MARGIN` = 500 µs, `MAX_PATTERN_COUNT` = 40 bins; longer gaps are ignored)
//! and decide once every `decision_gaps` (250) counted gaps, then start over.
//!
//! **Paper rule** (default; the paper gives the idea, the thresholds are ours):
//! ```text
//! near-0 gaps  Z = gaps < 1 ms (inside a set);   set gaps M = the others
//! peak         the 1.5 ms window (three bins, gaps >= 2 ms) holding most set gaps
//! line         a 1.5 ms window that is a local maximum holding >= 8 gaps
//! grid(s)      the set gaps within 0.5 ms of a multiple k·s (k >= 1)
//! explains(s)  >= 75 % of the set gaps on grid(s), and for every m >= 2, >= 8 of them
//!              at k·s with k not a multiple of m (gaps the coarser grid of m·s cannot
//!              hold; >= 8 gaps within 0.5 ms of s itself count against every m)
//! candidate    mean gap in the smallest line holding >= 10 % of the set gaps whose
//!              multiple the peak is, else the mean gap in the peak
//! S            the candidate if it explains the set gaps, else the mean gap in the
//!              largest smaller line whose multiple the peak is and which explains
//!              them (however few of the set gaps it holds), else the candidate
//! SU           S halved (S/2, then S/4, ...) while the current SU explains the set
//!              gaps and its half is >= 2 ms, explains them, and has >= 8 and >= 10 %
//!              of the set gaps on its odd multiples (1, 3, 5, ...·SU/2)
//! pattern iff  explains(SU), and
//!              "multiple lines": Z >= 10 % of all gaps (bursts), or a second
//!              multiple (2·SU, 3·SU, ...) holding >= 10 % of the set gaps
//! ```
//! The fallback from the candidate finds the fundamental when grants are skipped so
//! often that its own line is weak (LTE, SR 5 ms, a few Mbit/s: 13 gaps at 5 ms, 96 at
//! 10 ms, 42 at 15 ms out of 151 set gaps): the 10 ms candidate leaves the 15 ms gaps off
//! its lines and fails the 75 % test, the 5 ms line puts every set gap on a multiple. It
//! replaces only a candidate that fails, and only with a line that passes; the largest
//! such line is taken because a finer grid fits more gaps by chance.
//!
//! Halving finds the fundamental when a grid twice as coarse explains the set gaps too
//! (LTE, SR 5 ms, TMobile-LTE-short.down: 7 gaps at 5 ms, 39 at 10 ms, 3 at 15 ms out
//! of 49 set gaps). No line is at 5 ms (7 < 8), and the 10 ms candidate explains the
//! set gaps (79.6 % on its multiples), yet 10 of them lie on odd multiples of 5 ms,
//! where a 10 ms scheduling unit cannot put a gap; with 5 ms every set gap is on the
//! grid and grants are often skipped. Gaps on odd multiples of SU/2 are off the grid of
//! SU: evidence for SU/2 that SU cannot produce. As many as a frequent line holds (the
//! candidate's bar: >= 8 and >= 10 % of the set gaps) make SU/2 the SU; fewer are stray
//! gaps (a 10 ms pattern with a few gaps at 5 or 15 ms keeps 10 ms). Every multiple of
//! SU is an even multiple of SU/2, so SU/2 holds more set gaps on its grid than SU by
//! exactly those gaps. Only halves are tried: a skipped grant doubles a gap, and a
//! finer fraction SU/m, its 1 ms wide lines every SU/m, holds a larger share of random
//! gaps. Halving refines an SU that explains the set gaps; it does not replace one that
//! does not (with 7 gaps at 5 ms, 96 at 10 ms and 42 at 15 ms, no line explains the set
//! gaps and the decision finds no pattern).
//!
//! `explains` asks for a line's worth of evidence that s is not too fine, i.e. that no
//! coarser grid m·s holds all but a few of the gaps on s's grid. A line at s itself is
//! such evidence against every m; gaps on odd multiples of s are the evidence against
//! 2·s, so a halved SU whose own line is weak explains the set gaps. The pattern test is
//! the same for every SU.
//!
//! Evenly spaced ACKs give one line (all near 0, or all at the spacing) and random gaps
//! fail the 75 % test, so both select BBR. A decision waits for 32 set gaps (up to
//! 16 × `decision_gaps` gaps in all), so large bursts at high rates do not starve it.
//!
//! **Module rule** (`fidelity = "module"`): the reference module's dominant-peak and
//! harmonic heuristic. Each gap adds one to its bin and the next (bin j counts gaps in
//! `[(j-1)/2, (j+1)/2)` ms); bins 0, 1, 2 and 4 are cleared (gaps under 2.5 ms never
//! form an SU); three peaks are taken among bins 5–39, each clearing ±4 bins; if the top
//! holds at least 8 the SU is its centre, corrected to 2.5 ms or 5 ms when half as many
//! gaps sit at half the period, and snapped from 4.5 to 5 ms and 7.5 to 8 ms; weaker
//! histograms fall back to BBR unless the two top peaks are harmonics. Evenly spaced
//! ACKs 2–20 ms apart are (wrongly) read as a pattern.
//!
//! The BPF twin is `bpf/cesar/su.h` (in µs); the `twin` test runs its paper rule, compiled
//! for user space, against [`SuEstimator::decide_paper`] on the same histograms.

use crate::{Dur, Time};

/// Histogram bin width (`LINE_MARGIN`, 500 µs).
pub(super) const BIN: Dur = Dur::from_us(500);
/// Number of bins (`MAX_PATTERN_COUNT`): gaps of 20 ms or more are ignored.
pub(super) const BINS: usize = 40;
/// Counted gaps per decision (`PATTERN_DECISON_PERIOD`).
pub(super) const DECISION_GAPS: u32 = 250;
/// Smallest decision period accepted by the configuration.
pub(super) const MIN_DECISION_GAPS: u32 = 32;
/// The SU before any decision, and after a module-rule fallback (`INITIAL_SU`, 5 ms).
pub(super) const INITIAL_SU: Dur = Dur::from_ms(5);
/// Fewest gaps that make a line (the module's top-peak threshold).
const MIN_LINE: u32 = 8;

// Paper rule (our thresholds, see the module header).
/// Bins below this are "near 0" gaps inside a set (< 1 ms).
const NEAR_ZERO_BINS: usize = 2;
/// Lowest bin an SU window may include (gaps >= 2 ms; the module's smallest SU is 2.5).
const FIRST_SU_BIN: usize = 4;
/// Smallest SU halving gives (2 ms, the shortest gap an SU window covers).
const MIN_HALVED_SU: Dur = Dur::from_ns(BIN.as_ns() * FIRST_SU_BIN as u64);
/// A gap is on a line if within this of a multiple of the SU (one bin width).
const LINE_TOLERANCE: Dur = BIN;
/// Share of set gaps that must lie on the SU's lines.
const ON_LINE_MIN_PERCENT: u64 = 75;
/// Share of all gaps that must be near 0 for the ACKs to count as bursty.
const BURST_MIN_PERCENT: u64 = 10;
/// Share of set gaps a second line (a multiple of SU) must hold.
const SECOND_LINE_MIN_PERCENT: u64 = 10;
/// Set gaps a decision waits for ...
const MIN_SET_GAPS: u32 = 32;
/// ... but at most this many decision periods.
const MAX_DEFERRAL: u32 = 16;

// Module rule (reference module constants).
/// Bins the module clears before looking for peaks.
const MODULE_CLEARED_BINS: [usize; 4] = [0, 1, 2, 4];
/// First bin a module peak may occupy (2.5 ms).
const MODULE_FIRST_PEAK_BIN: usize = 5;
/// Peaks extracted (`MAX_SORTING`).
const MODULE_PEAKS: usize = 3;
/// Bins cleared on each side of an extracted peak.
const MODULE_SUPPRESS_BINS: usize = 4;

/// `part` as a whole percentage of `whole` (rounded down; of 1 when `whole` is 0).
fn pct(part: u32, whole: u32) -> u64 {
    u64::from(part) * 100 / u64::from(whole.max(1))
}

/// Outcome of one decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// A cellular scheduling pattern with this scheduling unit.
    Pattern(Dur),
    /// No pattern: the bottleneck does not look like a scheduled cellular link.
    NoPattern,
    /// Module rule only: too weak to decide; keep the current mode and SU.
    Unchanged,
}

/// Which decision rule to apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Rule {
    Paper,
    Module,
}

/// Collects ACK gaps and decides, every `period` gaps, whether they show a scheduling
/// pattern and with which SU.
#[derive(Clone, Debug)]
pub(super) struct SuEstimator {
    rule: Rule,
    period: u32,
    /// Arrival of the previous ACK that carried an RTT sample (`previous_clock`).
    prev_ack: Option<Time>,
    /// Gaps per 0.5 ms bin.
    count: [u32; BINS],
    /// Sum of the gaps in each bin, ns (for the mean gap of a line).
    sum_ns: [u64; BINS],
    /// Gaps counted since the last decision (`pattern_count`).
    gaps: u32,
}

impl SuEstimator {
    pub(super) fn new(rule: Rule, period: u32) -> Self {
        SuEstimator {
            rule,
            period: period.max(1),
            prev_ack: None,
            count: [0; BINS],
            sum_ns: [0; BINS],
            gaps: 0,
        }
    }

    /// An ACK with an RTT sample arrived at `now`; returns a decision every `period`
    /// counted gaps.
    pub(super) fn on_ack(&mut self, now: Time) -> Option<Decision> {
        let prev = self.prev_ack.replace(now)?;
        self.on_gap(now.saturating_since(prev))
    }

    /// Count one gap; gaps of 20 ms or more are not counted.
    pub(super) fn on_gap(&mut self, gap: Dur) -> Option<Decision> {
        let bin = (gap.as_ns() / BIN.as_ns()) as usize;
        if bin >= BINS {
            return None;
        }
        self.count[bin] += 1;
        self.sum_ns[bin] += gap.as_ns();
        self.gaps += 1;
        if self.gaps < self.period {
            return None;
        }
        let decision = match self.rule {
            Rule::Paper => self.decide_paper()?,
            Rule::Module => self.decide_module(),
        };
        self.count = [0; BINS];
        self.sum_ns = [0; BINS];
        self.gaps = 0;
        Some(decision)
    }

    /// The paper rule; `None` to keep collecting (too few gaps between sets yet).
    fn decide_paper(&self) -> Option<Decision> {
        let all = self.gaps;
        let near_zero: u32 = self.count[..NEAR_ZERO_BINS].iter().sum();
        let set_gaps = all - near_zero;
        if set_gaps < MIN_SET_GAPS && all < self.period.saturating_mul(MAX_DEFERRAL) {
            return None;
        }
        let Some(peak) = self.peak() else {
            return Some(Decision::NoPattern);
        };
        let su = self.fundamental(peak, set_gaps);
        if su.is_zero() {
            return Some(Decision::NoPattern);
        }

        let on_line = self.on_lines(su);
        let bursty = near_zero >= MIN_LINE && pct(near_zero, all) >= BURST_MIN_PERCENT;
        let second_line = on_line[2..]
            .iter()
            .any(|&c| c >= MIN_LINE && pct(c, set_gaps) >= SECOND_LINE_MIN_PERCENT);
        let pattern = Self::explains(&on_line, set_gaps) && (bursty || second_line);
        Some(if pattern {
            Decision::Pattern(su)
        } else {
            Decision::NoPattern
        })
    }

    /// Bins of the window centred on bin `j`: `j-1..=j+1`, within `FIRST_SU_BIN..BINS`.
    fn window(j: usize) -> std::ops::RangeInclusive<usize> {
        j.saturating_sub(1).max(FIRST_SU_BIN)..=(j + 1).min(BINS - 1)
    }

    /// Gaps in the window centred on bin `j`.
    fn weight(&self, j: usize) -> u32 {
        Self::window(j).map(|i| self.count[i]).sum()
    }

    /// Mean gap in the window centred on bin `j`.
    fn window_mean(&self, j: usize) -> Option<Dur> {
        let (n, sum) = Self::window(j).fold((0u64, 0u64), |(n, s), i| {
            (n + u64::from(self.count[i]), s + self.sum_ns[i])
        });
        (n > 0).then(|| Dur::from_ns(sum / n))
    }

    fn bin_mean(&self, i: usize) -> Option<Dur> {
        (self.count[i] > 0).then(|| Dur::from_ns(self.sum_ns[i] / u64::from(self.count[i])))
    }

    /// The window holding most set gaps (ties: the fuller centre bin, then the shorter
    /// gap), if it makes a line.
    fn peak(&self) -> Option<usize> {
        let mut best: Option<(usize, u32, u32)> = None;
        for j in FIRST_SU_BIN + 1..BINS {
            let key = (self.weight(j), self.count[j]);
            if best.is_none_or(|(_, w, c)| key > (w, c)) {
                best = Some((j, key.0, key.1));
            }
        }
        best.filter(|&(_, w, _)| w >= MIN_LINE).map(|(j, _, _)| j)
    }

    /// Gaps on each multiple k·SU (index k, the last one collecting all higher
    /// multiples), within the line tolerance; index 0 is unused.
    fn on_lines(&self, su: Dur) -> [u32; BINS + 1] {
        let mut on_line = [0u32; BINS + 1];
        if su.is_zero() {
            return on_line;
        }
        for i in NEAR_ZERO_BINS..BINS {
            let Some(mean) = self.bin_mean(i) else {
                continue;
            };
            let k = (mean.as_ns() + su.as_ns() / 2) / su.as_ns();
            let off = mean.as_ns().abs_diff(k * su.as_ns());
            if k >= 1 && off <= LINE_TOLERANCE.as_ns() {
                on_line[(k as usize).min(BINS)] += self.count[i];
            }
        }
        on_line
    }

    /// Whether the SU whose lines are `on_line` explains the set gaps: most set gaps on
    /// its multiples, and no coarser grid of its multiples (m·SU, m >= 2) accounts for
    /// all but a few of them: for every m, a line's worth lies on multiples k·SU with k
    /// not a multiple of m. A line at SU itself is such evidence against every m; the
    /// odd multiples of SU are the evidence against 2·SU.
    fn explains(on_line: &[u32; BINS + 1], set_gaps: u32) -> bool {
        let on: u32 = on_line.iter().sum();
        let off_grid =
            |m: usize| -> u32 { (1..=BINS).filter(|k| k % m != 0).map(|k| on_line[k]).sum() };
        pct(on, set_gaps) >= ON_LINE_MIN_PERCENT && (2..=BINS).all(|m| off_grid(m) >= MIN_LINE)
    }

    /// The SU for the peak in window `peak` (module header). The candidate is the
    /// smallest frequent line whose multiple is the peak ("smallest least common
    /// multiple of the ACK interval pattern that frequently appears", §IV-C; "we
    /// estimate the minimum time difference", §IV-B). A frequent line holds as many
    /// gaps as a second line must (>= 8 and >= 10 % of the set gaps), however much
    /// stronger the peak is: when sparse ACKs leave the buffer empty at a grant, the
    /// next SR waits for the following occasion and gaps of 2·SU can outnumber gaps of
    /// SU several times over (LTE, SR 5 ms, a few Mbit/s).
    ///
    /// When grants are skipped more often still, the SU line can hold under 10 % of the
    /// set gaps while 2·SU and 3·SU are strong; the candidate (2·SU) then leaves the
    /// 3·SU gaps off its lines and does not explain the set gaps. A smaller line (>= 8
    /// gaps, a local maximum, the peak on one of its multiples) that does explain them
    /// is the SU then: the largest such line, the coarsest grid that fits. A candidate
    /// that explains the set gaps is kept by this step. Either SU is then halved while
    /// the set gaps show the half is the SU (`halve`).
    fn fundamental(&self, peak: usize, set_gaps: u32) -> Dur {
        let peak_mean = self.window_mean(peak).unwrap_or(Dur::ZERO);
        // Lines below the peak whose multiple (>= 2) the peak is, and whether each is
        // frequent.
        let lines = (FIRST_SU_BIN + 1..peak).filter_map(|j| {
            let w = self.weight(j);
            let local_max = w >= self.weight(j - 1) && w >= self.weight(j + 1);
            if w < MIN_LINE || !local_max {
                return None;
            }
            let su = self.window_mean(j)?;
            let k = (peak_mean.as_ns() + su.as_ns() / 2) / su.as_ns().max(1);
            let on_grid = peak_mean.as_ns().abs_diff(k * su.as_ns()) <= LINE_TOLERANCE.as_ns();
            let frequent = pct(w, set_gaps) >= SECOND_LINE_MIN_PERCENT;
            (k >= 2 && on_grid).then_some((su, frequent))
        });
        let candidate = lines
            .clone()
            .find(|&(_, frequent)| frequent)
            .map_or(peak_mean, |(su, _)| su);
        if candidate.is_zero() {
            return candidate;
        }
        let su = if Self::explains(&self.on_lines(candidate), set_gaps) {
            candidate
        } else {
            // The largest line below the candidate first: the coarsest grid that fits.
            lines
                .rev()
                .map(|(su, _)| su)
                .filter(|&su| su < candidate)
                .find(|&su| Self::explains(&self.on_lines(su), set_gaps))
                .unwrap_or(candidate)
        };
        self.halve(su, set_gaps)
    }

    /// `su` halved while the set gaps show that its half is the SU (module header): the
    /// current SU explains the set gaps, and SU/2 (>= 2 ms) explains them too with a
    /// frequent line's worth of them (>= 8 and >= 10 %) on its odd multiples, where a
    /// grid of SU cannot put a gap. Every multiple of SU is an even multiple of SU/2, so
    /// SU/2 holds more set gaps on its lines than SU by exactly those. SU's own line can
    /// be weak: grants skipped often leave few gaps of one SU and many of two. An SU that
    /// does not explain the set gaps is returned as it is (no pattern).
    fn halve(&self, mut su: Dur, set_gaps: u32) -> Dur {
        while Self::explains(&self.on_lines(su), set_gaps) {
            let half = Dur::from_ns(su.as_ns() / 2);
            if half < MIN_HALVED_SU {
                break;
            }
            let fine = self.on_lines(half);
            let odd: u32 = fine.iter().skip(1).step_by(2).sum();
            let frequent = odd >= MIN_LINE && pct(odd, set_gaps) >= SECOND_LINE_MIN_PERCENT;
            if !frequent || !Self::explains(&fine, set_gaps) {
                break;
            }
            su = half;
        }
        su
    }

    /// The reference module's decision.
    fn decide_module(&self) -> Decision {
        // Triangular histogram: a gap in bin i counts in bins i and i + 1.
        let mut h = [0u32; BINS];
        for (j, slot) in h.iter_mut().enumerate() {
            *slot = self.count[j] + if j > 0 { self.count[j - 1] } else { 0 };
        }
        for i in MODULE_CLEARED_BINS {
            h[i] = 0;
        }
        let mut peaks = [(0usize, 0u32); MODULE_PEAKS];
        for p in &mut peaks {
            // Largest bin, lowest index on ties; (0, 0) when all are empty.
            let mut best = (0usize, 0u32);
            for (j, &v) in h.iter().enumerate().skip(MODULE_FIRST_PEAK_BIN) {
                if v > best.1 {
                    best = (j, v);
                }
            }
            *p = best;
            let lo = best.0.saturating_sub(MODULE_SUPPRESS_BINS);
            let hi = (best.0 + MODULE_SUPPRESS_BINS).min(BINS - 1);
            h[lo..=hi].iter_mut().for_each(|v| *v = 0);
        }
        let [(i1, v1), (i2, v2), (i3, v3)] = peaks;
        if v1 >= MIN_LINE {
            let half = v1 / 2;
            let mut su_bins = i1;
            if i1 == 10 && ((i2 == 5 && v2 >= half) || (i3 == 5 && v3 >= half)) {
                su_bins = 5; // 5 ms line with a strong 2.5 ms line: 2.5 ms
            }
            if i1 == 20 && (i2 == 10 || (i3 == 10 && v3 >= half)) {
                su_bins = 10; // 10 ms line with a 5 ms line: 5 ms
            }
            match su_bins {
                9 => su_bins = 10,  // 4.5 ms -> 5 ms
                15 => su_bins = 16, // 7.5 ms -> 8 ms
                _ => {}
            }
            return Decision::Pattern(BIN * su_bins as u64);
        }
        if v1 == 0 || v2 == 0 {
            return Decision::NoPattern;
        }
        // i2 >= 5 here (v2 > 0), so i2 - 1 is not zero.
        let harmonic = [i2, i2 + 1, i2 - 1].iter().any(|&d| i1 % d == 0);
        if harmonic {
            Decision::Unchanged
        } else {
            Decision::NoPattern
        }
    }
}

/// The BPF twin (`bpf/cesar/su.h`) against the paper rule.
#[cfg(test)]
mod twin;

#[cfg(test)]
mod tests {
    use super::*;

    /// Uniform pseudo-random gaps in [0, 10) ms, µs (a fixed LCG: the same list every run).
    pub(super) fn uniform_gaps_us() -> impl Iterator<Item = u64> {
        let mut x: u64 = 12345;
        std::iter::repeat_with(move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % 10_000
        })
    }

    fn us(v: u64) -> Dur {
        Dur::from_us(v)
    }

    /// Feed gaps (µs) until the first decision.
    fn decide(rule: Rule, gaps: impl IntoIterator<Item = u64>) -> Option<Decision> {
        let mut e = SuEstimator::new(rule, DECISION_GAPS);
        gaps.into_iter().find_map(|g| e.on_gap(us(g)))
    }

    /// Sets of `burst` ACKs 30 µs apart, one set every `su_us`, every `skip`-th grant
    /// missed.
    pub(super) fn bursts(su_us: u64, burst: usize, skip: usize) -> Vec<u64> {
        let mut out = Vec::new();
        for s in 1..400 {
            let gap = if s % skip == 0 { 2 * su_us } else { su_us };
            out.push(gap - 30 * (burst as u64 - 1));
            out.extend(std::iter::repeat_n(30, burst - 1));
        }
        out
    }

    #[test]
    fn gaps_of_20_ms_or_more_are_not_counted() {
        let mut e = SuEstimator::new(Rule::Paper, 32);
        assert_eq!(e.on_ack(Time::from_ms(1)), None, "first ACK: no gap yet");
        assert_eq!(e.on_ack(Time::from_ms(30)), None);
        assert_eq!(e.gaps, 0);
        e.on_ack(Time::from_us(34_999));
        assert_eq!((e.gaps, e.count[9]), (1, 1), "4.999 ms is bin 9");
        assert_eq!(e.sum_ns[9], 4_999_000);
    }

    #[test]
    fn paper_rule_finds_bursty_patterns() {
        // 5 ms, 3 ACKs per set: set gaps 4.94 ms, one grant in 10 missed.
        let d = decide(Rule::Paper, bursts(5000, 3, 10)).unwrap();
        // Window of bins 9..=11 holds the 4.94 ms gaps; the 9.94 ms gaps are 2·SU.
        assert_eq!(d, Decision::Pattern(us(4940)));
        let d = decide(Rule::Paper, bursts(2500, 4, 7)).unwrap();
        assert_eq!(d, Decision::Pattern(us(2410)));
        let d = decide(Rule::Paper, bursts(8000, 2, 5)).unwrap();
        assert_eq!(d, Decision::Pattern(us(7970)));
    }

    #[test]
    fn paper_rule_prefers_the_fundamental_over_a_stronger_multiple() {
        // Single-ACK sets; 2.5 ms grants of which 40 % are used once, 60 % skipped:
        // gaps 2.5 ms (x 100) and 5.0 ms (x 150). 2.5 ms is a line (100 >= 8, 40 %).
        let gaps = (0..250).map(|i| if i % 5 < 2 { 2500 } else { 5000 });
        assert_eq!(decide(Rule::Paper, gaps), Some(Decision::Pattern(us(2500))));
        // 2.5 ms gaps x 50 under a 5 ms peak x 200: still a line (20 % >= 10 %), so
        // the SU is the minimum 2.5 ms, with the 5 ms gaps on its second multiple.
        let gaps = (0..250).map(|i| if i % 5 == 0 { 2500 } else { 5000 });
        assert_eq!(decide(Rule::Paper, gaps), Some(Decision::Pattern(us(2500))));
        // 2.5 ms gaps x 20 (8 % of 250): too few for a line, the SU would be 5 ms, and
        // without bursts or a second multiple of 5 ms that is a single line: no pattern.
        let gaps = (0..250).map(|i| if i % 25 < 2 { 2500 } else { 5000 });
        assert_eq!(decide(Rule::Paper, gaps), Some(Decision::NoPattern));
        // The LTE SR case seen in the simulator (SR 5 ms, sparse ACKs): 194 gaps near
        // 0, 14 at 5 ms, 39 at 10 ms, 3 at 15 ms. 14 is under half of 39 but 25 % of
        // the 56 set gaps: SU 5 ms, every set gap on a multiple.
        let mut gaps = vec![100u64; 194];
        gaps.extend([5000; 14].iter().chain(&[10_000; 39]).chain(&[15_000; 3]));
        assert_eq!(decide(Rule::Paper, gaps), Some(Decision::Pattern(us(5000))));
    }

    #[test]
    fn paper_rule_finds_a_weak_fundamental_that_explains_the_set_gaps() {
        // LTE SR 5 ms at low capacity (Verizon-LTE-short.down with socket buffers):
        // 99 gaps near 0, 13 at 5 ms, 96 at 10 ms, 42 at 15 ms. 13 is 8.6 % of the 151
        // set gaps, under the 10 % of a frequent line, so the candidate is the 10 ms
        // peak; the 15 ms gaps are off its lines (96 of 151 on them, 63 %). The 5 ms
        // line (13 >= 8) puts every set gap on a multiple: SU 5 ms.
        let mut gaps = vec![100u64; 99];
        gaps.extend([5000; 13].iter().chain(&[10_000; 96]).chain(&[15_000; 42]));
        assert_eq!(decide(Rule::Paper, gaps), Some(Decision::Pattern(us(5000))));
        // Without the 5 ms line (7 gaps there, under 8) nothing explains the 15 ms
        // gaps: no pattern, as before.
        let mut gaps = vec![100u64; 105];
        gaps.extend([5000; 7].iter().chain(&[10_000; 96]).chain(&[15_000; 42]));
        assert_eq!(decide(Rule::Paper, gaps), Some(Decision::NoPattern));
    }

    #[test]
    fn paper_rule_halves_an_su_when_odd_multiples_of_the_half_hold_a_line() {
        // LTE SR 5 ms on TMobile-LTE-short.down (one decision of the simulator): 201
        // gaps near 0, 7 at 5 ms, 39 at 10 ms, 3 at 15 ms. The 5 ms line holds 7 < 8,
        // so the candidate is the 10 ms peak, and it explains the set gaps (a line of 39
        // at 10 ms, 39 of 49 = 79.6 % on its multiples). But 10 set gaps, at 5 and
        // 15 ms, lie on odd multiples of 5 ms, where a 10 ms grid cannot put them: a
        // frequent line's worth (>= 8, 20 % >= 10 %). 5 ms puts all 49 on its grid and
        // explains them (10 >= 8 against 10 ms, 46 >= 8 against 15 ms): SU 5 ms.
        let mut gaps = vec![100u64; 201];
        gaps.extend([5000; 7].iter().chain(&[10_000; 39]).chain(&[15_000; 3]));
        assert_eq!(decide(Rule::Paper, gaps), Some(Decision::Pattern(us(5000))));
        // Halving repeats: 145 near 0, 6 at 2.5 ms, 8 at 5 ms (a line, but 7.6 % of the
        // 105 set gaps: not frequent), 6 at 7.5 ms, 80 at 10 ms, 2 at 12.5 ms, 3 at
        // 15 ms. The 10 ms candidate explains them (76 %); 11 on odd multiples of 5 ms
        // (10.5 %) make it 5 ms, then 14 on odd multiples of 2.5 ms (13 %) 2.5 ms.
        let mut gaps = vec![100u64; 145];
        gaps.extend(
            [2500; 6]
                .iter()
                .chain(&[5000; 8])
                .chain(&[7500; 6])
                .chain(&[10_000; 80])
                .chain(&[12_500; 2])
                .chain(&[15_000; 3]),
        );
        assert_eq!(decide(Rule::Paper, gaps), Some(Decision::Pattern(us(2500))));
    }

    #[test]
    fn paper_rule_keeps_an_su_with_a_few_stray_gaps_on_odd_multiples_of_the_half() {
        // A clean 10 ms pattern with stray gaps: 150 near 0, 93 at 10 ms, 4 at 5 ms and
        // 3 at 15 ms. 7 set gaps on odd multiples of 5 ms are under a line's worth (8):
        // SU 10 ms.
        let mut gaps = vec![100u64; 150];
        gaps.extend([5000; 4].iter().chain(&[10_000; 93]).chain(&[15_000; 3]));
        assert_eq!(
            decide(Rule::Paper, gaps),
            Some(Decision::Pattern(us(10_000)))
        );
        // 10 of them (5 at 5 ms, 5 at 15 ms) among 120 set gaps: 8.3 %, under the 10 %
        // of a frequent line: still 10 ms.
        let mut gaps = vec![100u64; 130];
        gaps.extend([5000; 5].iter().chain(&[10_000; 110]).chain(&[15_000; 5]));
        assert_eq!(
            decide(Rule::Paper, gaps),
            Some(Decision::Pattern(us(10_000)))
        );
        // Strays off every grid do not count: 150 near 0, 90 at 10 ms, 3 at 5 ms, 3 at
        // 15 ms and 4 at 3.2 and 12.7 ms: 6 on odd multiples of 5 ms, SU 10 ms.
        let mut gaps = vec![100u64; 150];
        gaps.extend(
            [5000; 3]
                .iter()
                .chain(&[10_000; 90])
                .chain(&[15_000; 3])
                .chain(&[3200, 3200, 12_700, 12_700]),
        );
        assert_eq!(
            decide(Rule::Paper, gaps),
            Some(Decision::Pattern(us(10_000)))
        );
    }

    #[test]
    fn paper_rule_rejects_even_spacing_and_random_gaps() {
        for spacing in [300, 1000, 2000, 2500, 5000, 12_000] {
            assert_eq!(
                decide(Rule::Paper, std::iter::repeat_n(spacing, 5000)),
                Some(Decision::NoPattern),
                "{spacing} µs"
            );
        }
        let random = uniform_gaps_us();
        assert_eq!(decide(Rule::Paper, random), Some(Decision::NoPattern));
    }

    #[test]
    fn paper_rule_waits_for_enough_set_gaps() {
        // 40 ACKs per 5 ms set: 250 gaps hold only 6 set gaps, so the decision waits
        // for the 32nd, which is gap 31 × 40 + 1 = 1241.
        let mut e = SuEstimator::new(Rule::Paper, DECISION_GAPS);
        let gaps = bursts(5000, 40, 1000);
        let (at, d) = gaps
            .iter()
            .enumerate()
            .find_map(|(i, &g)| e.on_gap(us(g)).map(|d| (i, d)))
            .unwrap();
        assert_eq!(at + 1, 1241);
        // The set gap is 5 ms minus the 39 × 30 µs burst.
        assert_eq!(d, Decision::Pattern(us(3830)));
        // A stream of near-0 gaps only is decided after 16 periods.
        let mut e = SuEstimator::new(Rule::Paper, DECISION_GAPS);
        let at = (0..).position(|_| e.on_gap(us(100)).is_some()).unwrap();
        assert_eq!(at + 1, 16 * 250);
    }

    #[test]
    fn module_rule_reproduces_the_reference_heuristic() {
        // 5 ms sets: gaps 4.94 ms fall in bin 9, counted in bins 9 and 10; the lowest
        // index wins the tie (4.5 ms), snapped to 5 ms.
        let d = decide(Rule::Module, bursts(5000, 3, 10));
        assert_eq!(d, Some(Decision::Pattern(us(5000))));
        // 8 ms: bins 15/16 tie, 7.5 snapped to 8 ms.
        let d = decide(Rule::Module, bursts(8000, 2, 5));
        assert_eq!(d, Some(Decision::Pattern(us(8000))));
        // 100 gaps of 2.5 ms and 150 of 5 ms: the 5 ms peak (bin 10, 150) is corrected
        // to 2.5 ms because bin 5 holds at least half as many (100 >= 75).
        let gaps = (0..250).map(|i| if i % 5 < 2 { 2500 } else { 5000 });
        assert_eq!(
            decide(Rule::Module, gaps),
            Some(Decision::Pattern(us(2500)))
        );
        // Hazard reproduced: evenly spaced ACKs 2 ms apart read as a 2.5 ms pattern.
        assert_eq!(
            decide(Rule::Module, std::iter::repeat(2000)),
            Some(Decision::Pattern(us(2500)))
        );
        // All gaps near 0: no peak at all, BBR.
        assert_eq!(
            decide(Rule::Module, std::iter::repeat(300)),
            Some(Decision::NoPattern)
        );
    }

    #[test]
    fn module_rule_weak_histograms() {
        // 243 near-0 gaps, 4 at 12 ms (bins 24, 25 -> 4) and 3 at 6 ms (bins 12, 13 -> 3):
        // top 4 < 8; 24 is a multiple of 12: unchanged.
        let mut gaps = vec![100u64; 243];
        gaps.extend([12_000, 12_000, 12_000, 12_000, 6000, 6000, 6000]);
        assert_eq!(decide(Rule::Module, gaps), Some(Decision::Unchanged));
        // 4 at 6 ms and 3 at 8.5 ms (bin 17): 12 vs 17, 18, 16: not harmonic -> BBR.
        let mut gaps = vec![100u64; 243];
        gaps.extend([6000, 6000, 6000, 6000, 8500, 8500, 8500]);
        assert_eq!(decide(Rule::Module, gaps), Some(Decision::NoPattern));
    }
}
