//! The paper rule against its BPF twin, so that the two cannot drift apart.
//!
//! `bpf/tests/su_twin.c` compiles `bpf/cesar/su.h` for user space; this test builds it
//! with clang, gives it and [`SuEstimator::decide_paper`] the same gap histograms (count
//! and sum per bin) and asserts the same decision and SU for every one. The histograms
//! are those of the unit tests in `su.rs` and pseudo-random ones from a fixed seed,
//! shaped like a decision's worth of ACK gaps on a scheduled link (lines at multiples of
//! an SU of 2.5–10 ms, grants skipped, sets spread, jitter and stray gaps).
//!
//! Every gap is a whole number of microseconds, so both sides bin it alike and hold the
//! same sums (the Rust side in ns, 1000 times the BPF side's µs). Their means still
//! differ by under 1 µs (`bpf/cesar.bpf.c` difference 1: the BPF side's means are
//! rounded down to whole µs, the Rust side's to whole ns), so SUs are compared in whole
//! microseconds, rounded down on the Rust side as the BPF side rounds. A histogram that put a mean within that
//! rounding of a threshold (a mean 0.5 ms off a multiple of the SU) can be decided
//! differently by the twins: 2 of 20 000 histograms from this generator are, a bin mean
//! of 14 102 µs (14 102.24 in ns) against the 500 µs tolerance from 2 × 6801 µs, and
//! 4 × SU off by 4 µs (SU 3651 µs, 3651.98 in ns). The fixed seed's histograms have
//! none; a failure lists each histogram's input line to look at with both sides.
//!
//! Without clang the test prints why and passes (CI has clang); `CELLCC_CLANG` names
//! another compiler, as for the BPF build.

use std::io::{ErrorKind, Write as _};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::tests::bursts;
use super::*;
use crate::cesar::tests::Rng;

/// Pseudo-random histograms compared besides the unit tests' ones.
const RANDOM_HISTOGRAMS: usize = 500;
/// Seed of the pseudo-random histograms.
const SEED: u64 = 0x5eed_c35a;
/// Mismatches listed in a failure message.
const SHOWN_MISMATCHES: usize = 10;

/// A gap histogram in whole microseconds, as `struct cesar_hist` holds it.
struct Hist {
    name: String,
    period: u32,
    count: [u32; BINS],
    sum_us: [u64; BINS],
}

impl Hist {
    /// The histogram of `gaps_us` (gaps of 20 ms or more are not counted, as in `on_gap`).
    fn of(name: impl Into<String>, gaps_us: impl IntoIterator<Item = u64>) -> Self {
        let mut h = Hist {
            name: name.into(),
            period: DECISION_GAPS,
            count: [0; BINS],
            sum_us: [0; BINS],
        };
        for gap in gaps_us {
            let bin = (gap / BIN.as_us()) as usize;
            if bin < BINS {
                h.count[bin] += 1;
                h.sum_us[bin] += gap;
            }
        }
        h
    }

    /// `(count, gap µs)` pairs: `count` gaps of each length.
    fn of_lines(name: &str, lines: &[(usize, u64)]) -> Self {
        Self::of(
            name,
            lines
                .iter()
                .flat_map(|&(n, gap)| std::iter::repeat_n(gap, n)),
        )
    }

    fn gaps(&self) -> u32 {
        self.count.iter().sum()
    }

    /// The Rust decision as the harness prints it: `(enum cesar_decision, SU in µs)`.
    fn rust(&self) -> (u32, u64) {
        let mut e = SuEstimator::new(Rule::Paper, self.period);
        e.count = self.count;
        for (ns, us) in e.sum_ns.iter_mut().zip(self.sum_us) {
            *ns = us * 1000;
        }
        e.gaps = self.gaps();
        match e.decide_paper() {
            None => (0, 0),
            Some(Decision::Pattern(su)) => (1, su.as_us()),
            Some(Decision::NoPattern) => (2, 0),
            Some(Decision::Unchanged) => (3, 0),
        }
    }

    /// The harness's input line.
    fn line(&self) -> String {
        let mut words = vec![self.period.to_string(), self.gaps().to_string()];
        words.extend(self.count.iter().map(u32::to_string));
        words.extend(self.sum_us.iter().map(u64::to_string));
        words.join(" ")
    }
}

/// The histograms of the paper-rule unit tests in `su.rs` (the gaps each test feeds up
/// to its decision).
fn unit_test_histograms() -> Vec<Hist> {
    let mut out = vec![
        Hist::of_lines("2.5 ms x 100, 5 ms x 150", &[(100, 2500), (150, 5000)]),
        Hist::of_lines("2.5 ms x 50 under 5 ms x 200", &[(50, 2500), (200, 5000)]),
        Hist::of_lines("2.5 ms x 20, too few", &[(20, 2500), (230, 5000)]),
        Hist::of_lines(
            "LTE SR: 14 / 39 / 3 at 5 / 10 / 15 ms",
            &[(194, 100), (14, 5000), (39, 10_000), (3, 15_000)],
        ),
        Hist::of_lines(
            "weak fundamental: 13 / 96 / 42",
            &[(99, 100), (13, 5000), (96, 10_000), (42, 15_000)],
        ),
        Hist::of_lines(
            "no line explains: 7 / 96 / 42",
            &[(105, 100), (7, 5000), (96, 10_000), (42, 15_000)],
        ),
        Hist::of_lines(
            "halving: 7 / 39 / 3",
            &[(201, 100), (7, 5000), (39, 10_000), (3, 15_000)],
        ),
        Hist::of_lines(
            "repeated halving to 2.5 ms",
            &[
                (145, 100),
                (6, 2500),
                (8, 5000),
                (6, 7500),
                (80, 10_000),
                (2, 12_500),
                (3, 15_000),
            ],
        ),
        Hist::of_lines(
            "10 ms with 7 strays at 5 and 15 ms",
            &[(150, 100), (4, 5000), (93, 10_000), (3, 15_000)],
        ),
        Hist::of_lines(
            "10 ms with 10 strays, 8.3 %",
            &[(130, 100), (5, 5000), (110, 10_000), (5, 15_000)],
        ),
        Hist::of_lines(
            "10 ms with strays off every grid",
            &[
                (150, 100),
                (3, 5000),
                (90, 10_000),
                (3, 15_000),
                (2, 3200),
                (2, 12_700),
            ],
        ),
        Hist::of_lines("near 0 only, deferred", &[(250, 100)]),
        Hist::of_lines("near 0 only, 16 periods", &[(4000, 300)]),
    ];
    for spacing in [1000, 2000, 2500, 5000, 12_000] {
        out.push(Hist::of_lines(
            &format!("even spacing {spacing} µs"),
            &[(250, spacing)],
        ));
    }
    for (su, burst, skip) in [(5000, 3, 10), (2500, 4, 7), (8000, 2, 5)] {
        let name = format!("sets of {burst} every {su} µs, every {skip}th grant missed");
        out.push(Hist::of(
            name,
            bursts(su, burst, skip).into_iter().take(250),
        ));
    }
    let deferred = bursts(5000, 40, 1000).into_iter().take(1241);
    out.push(Hist::of("sets of 40: decided at gap 1241", deferred));
    let random = super::tests::uniform_gaps_us();
    out.push(Hist::of("uniform in [0, 10) ms", random.take(250)));
    out
}

/// One decision's worth of ACK gaps: mostly sets one SU (2.5–10 ms) or a few apart
/// (grants skipped), each set shortening the gap to the next by its spread and jittered,
/// with bursts of near-0 gaps and stray gaps anywhere; now and then no pattern at all
/// (uniform gaps, or evenly spaced ACKs with jitter).
fn random_histogram(rng: &mut Rng, i: usize) -> Hist {
    let mut gaps: Vec<u64> = (0..rng.below(220)).map(|_| rng.below(1000)).collect();
    match rng.below(20) {
        0 => gaps.extend((0..rng.within(50, 300)).map(|_| rng.below(20_000))),
        1 => {
            let spacing = rng.within(1000, 15_000);
            let jitter = rng.below(300);
            gaps.extend(
                (0..rng.within(50, 300)).map(|_| spacing + rng.below(2 * jitter + 1) - jitter),
            );
        }
        _ => {
            let su = rng.within(2500, 10_000);
            // Weights of the multiples k·SU: grants skipped with a constant probability
            // (geometric), independent weights, or a weak SU line under strong multiples
            // (grants skipped so often that one SU apart is rare).
            let multiples = 19_000 / su;
            let style = rng.below(3);
            let skip_pct = rng.below(90);
            let mut weight = 1000;
            let weights: Vec<u64> = (1..=multiples)
                .map(|k| match style {
                    0 => {
                        let w = weight * (100 - skip_pct) / 100;
                        weight = weight * skip_pct / 100;
                        w
                    }
                    1 => rng.below(100).pow(2),
                    _ if k == 1 => rng.below(15),
                    _ => rng.below(100),
                })
                .collect();
            let total: u64 = weights.iter().sum::<u64>().max(1);
            let spread = rng.below(300);
            let jitter = rng.below(400);
            for _ in 0..rng.within(20, 250) {
                let mut pick = rng.below(total);
                let k = weights
                    .iter()
                    .position(|&w| {
                        let hit = pick < w;
                        pick = pick.saturating_sub(w);
                        hit
                    })
                    .unwrap_or(0) as u64
                    + 1;
                let gap = (k * su + rng.below(2 * jitter + 1)).saturating_sub(spread + jitter);
                gaps.push(gap);
            }
            gaps.extend((0..rng.below(25)).map(|_| rng.below(20_000)));
        }
    }
    Hist::of(format!("random #{i}"), gaps)
}

/// A temporary directory for the harness, removed when dropped (also when the test fails).
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("cellcc-su-twin-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temporary directory");
        ScratchDir(dir)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

/// Compiles the harness into a temporary directory; `None` (after saying why) when
/// there is no clang.
fn build_harness(dir: &std::path::Path) -> Option<PathBuf> {
    let bpf = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../bpf");
    let clang = std::env::var("CELLCC_CLANG").unwrap_or_else(|_| "clang".into());
    let exe = dir.join("su_twin");
    let result = Command::new(&clang)
        .args(["-O2", "-Wall", "-Wextra", "-Werror"])
        .arg("-I")
        .arg(&bpf)
        .arg("-o")
        .arg(&exe)
        .arg(bpf.join("tests/su_twin.c"))
        .output();
    match result {
        Err(e) if e.kind() == ErrorKind::NotFound => {
            println!("skipped: {clang} not found (the twin test needs clang)");
            None
        }
        Err(e) => panic!("running {clang}: {e}"),
        Ok(out) => {
            assert!(
                out.status.success(),
                "{clang} failed on bpf/tests/su_twin.c:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            Some(exe)
        }
    }
}

/// The harness's decisions for `hists`, in order.
fn run_harness(exe: &std::path::Path, hists: &[Hist]) -> Vec<(u32, u64)> {
    let mut child = Command::new(exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the harness just built runs");
    let input: String = hists.iter().map(|h| h.line() + "\n").collect();
    let mut stdin = child.stdin.take().expect("piped");
    // Write from a thread: the input is larger than a pipe holds.
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().expect("the harness exits");
    writer
        .join()
        .expect("writer thread")
        .expect("writing the histograms");
    assert!(out.status.success(), "su_twin exited with {}", out.status);
    let text = String::from_utf8(out.stdout).expect("ASCII output");
    let decisions: Vec<(u32, u64)> = text
        .lines()
        .map(|l| {
            let (d, su) = l.split_once(' ').expect("\"decision su_us\"");
            (d.parse().expect("decision"), su.parse().expect("su_us"))
        })
        .collect();
    assert_eq!(decisions.len(), hists.len(), "one decision per histogram");
    decisions
}

#[test]
fn bpf_paper_rule_decides_as_the_rust_one() {
    let dir = ScratchDir::new();
    let Some(exe) = build_harness(&dir.0) else {
        return;
    };
    let mut hists = unit_test_histograms();
    let mut rng = Rng(SEED);
    hists.extend((0..RANDOM_HISTOGRAMS).map(|i| random_histogram(&mut rng, i)));
    let bpf = run_harness(&exe, &hists);

    let mut tally = [0usize; 4];
    let mut mismatches = Vec::new();
    for (h, &b) in hists.iter().zip(&bpf) {
        let r = h.rust();
        tally[r.0 as usize] += 1;
        if r != b {
            mismatches.push(format!(
                "{}: Rust {r:?}, BPF {b:?} (decision, SU µs)\n    input: {}",
                h.name,
                h.line()
            ));
        }
    }
    println!(
        "{} histograms compared ({} from su.rs's tests, {RANDOM_HISTOGRAMS} random): \
         {} patterns, {} without a pattern, {} deferred; {} mismatches",
        hists.len(),
        hists.len() - RANDOM_HISTOGRAMS,
        tally[1],
        tally[2],
        tally[0],
        mismatches.len()
    );
    assert!(
        mismatches.is_empty(),
        "bpf/cesar/su.h and su.rs decide differently on {} of {} histograms:\n{}",
        mismatches.len(),
        hists.len(),
        mismatches[..mismatches.len().min(SHOWN_MISMATCHES)].join("\n")
    );
}
