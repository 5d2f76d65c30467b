/* SPDX-License-Identifier: GPL-2.0 */
/*
 * César: the SU histogram, the constants of its two decision rules and their outcomes.
 *
 * Twin of the constants at the top of crates/cellcc-congestion/src/cesar/su.rs, in
 * microseconds where su.rs has durations. Shared by bpf/cesar.bpf.c, which includes it
 * with its constants, and by the user-space harness bpf/tests/su_twin.c, which compiles
 * cesar/su.h against it to check the paper rule against su.rs. It needs __u32 and __u64
 * only (vmlinux.h in BPF, the harness's typedefs in user space).
 */
#ifndef CELLCC_CESAR_SU_HIST_H
#define CELLCC_CESAR_SU_HIST_H

/* Histogram bin width (module LINE_MARGIN). */
#define BIN_US 500
/* Bins (module MAX_PATTERN_COUNT): gaps of 20 ms or more are ignored. */
#define BINS 40
/* Array slots per histogram: a power of two above BINS, so that every computed index
 * can be masked into bounds for the verifier (indices stay below BINS + 1 by logic). */
#define BIN_SLOTS 64
#define BIN_MASK (BIN_SLOTS - 1)
/* The SU before any decision and after a module-rule fallback (module INITIAL_SU). */
#define INITIAL_SU_US 5000
/* Fewest gaps that make a line (module top-peak threshold). */
#define MIN_LINE 8
/* Paper rule (reference thresholds): bins below this are near-0 gaps inside a set. */
#define NEAR_ZERO_BINS 2
/* Lowest bin an SU window may include (gaps >= 2 ms). */
#define FIRST_SU_BIN 4
/* Smallest SU halving gives (2 ms, the shortest gap an SU window covers). */
#define MIN_HALVED_SU_US (BIN_US * FIRST_SU_BIN)
/* Halvings at most: an SU is a mean gap under 20 ms (BINS * BIN_US) and its half is
 * taken only if >= 2 ms, so 19.999 -> 9.999 -> 4.999 -> 2.499 ms is the longest chain
 * (su.rs loops until the half is too short; this bound never cuts that loop short). */
#define MAX_HALVINGS 3
/* A gap is on a line within one bin width of a multiple of the SU. */
#define LINE_TOLERANCE_US BIN_US
/* Share of set gaps that must lie on the SU's lines, %. */
#define ON_LINE_MIN_PERCENT 75
/* Share of all gaps near 0 for the ACKs to count as bursty, %. */
#define BURST_MIN_PERCENT 10
/* Share of set gaps a second line must hold, %. */
#define SECOND_LINE_MIN_PERCENT 10
/* Set gaps a decision waits for, at most MAX_DEFERRAL periods. */
#define MIN_SET_GAPS 32
#define MAX_DEFERRAL 16
/* Module rule: first peak bin (2.5 ms), peaks extracted, bins cleared around a peak. */
#define MODULE_FIRST_PEAK_BIN 5
#define MODULE_PEAKS 3
#define MODULE_SUPPRESS_BINS 4

enum cesar_decision {
	CESAR_DECISION_NONE = 0,       /* none yet / keep collecting */
	CESAR_DECISION_PATTERN = 1,
	CESAR_DECISION_NO_PATTERN = 2,
	CESAR_DECISION_UNCHANGED = 3,  /* module rule: too weak to decide */
};

/* The SU histogram (§IV-B): gaps per 0.5 ms bin and their sums, plus scratch space for
 * the decision. */
struct cesar_hist {
	__u32 count[BIN_SLOTS];
	__u64 sum_us[BIN_SLOTS];
	__u32 scratch[BIN_SLOTS]; /* module triangular histogram / paper on-line counts */
	__u32 gaps;               /* counted since the last decision (pattern_count) */
	__u32 pad;
};

#endif /* CELLCC_CESAR_SU_HIST_H */
