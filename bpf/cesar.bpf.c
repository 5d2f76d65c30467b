// SPDX-License-Identifier: GPL-2.0
/*
 * César as a BPF struct_ops TCP congestion control ("cellcc_cesar").
 *
 * Paper: J. Shin, G. Lee, J. Paek, S. Bahk, "César: Cellular Resource Scheduling-Aware
 * Congestion Control" (design §IV, Eq. 1-10; alpha = 2, beta = 0.05, gamma = 0.125 in
 * §V-A). Reference module: the authors' tcp_cesar.c (revision "equal condition", July
 * 2024), known through the project's algorithm notes only. This file is a port of the
 * project's Rust reference, crates/cellcc-congestion/src/cesar/, both of its rules
 * (params.fidelity = 0 paper, the default; 1 module).
 *
 * Model. A base station serves a phone in bursts and the phone returns the ACKs of each
 * burst on its next uplink grant, so ACKs reach the sender in sets a multiple of the
 * scheduling unit (SU) apart. César estimates the SU from a histogram of ACK gaps (40
 * bins of 0.5 ms), splits the ACKs into sets, and once per set, at its last packet (the
 * anchor), updates BW_ewma (Eq. 2), paces at alpha*rho*BW_ewma (Eq. 3-4) and moves cwnd
 * step-wise by comparing the anchor's RTT with the previous anchor's (Eq. 5-10). Without
 * a scheduling pattern the bottleneck is not a cellular link: César runs BBR. Start-up
 * is BBR's STARTUP. The inner BBR is the kernel's own (Linux BBR v1, called through its
 * kfuncs): it runs on every ACK, and in STEADY its writes to cwnd and the pacing rate
 * are undone, so its model stays current for a fallback.
 *
 *        init: inner BBR in STARTUP, SU estimation running
 *         |
 *         v        SU decision: no pattern
 *    +---------+ --------------------------------------> +-------+
 *    |  PROBE  |                                         |  BBR  |  BBR on the socket
 *    +---------+ --+                                     +-------+
 *     BBR on the   | pattern (paper: once BBR's pipe        |  ^
 *     socket       | is full; module: at once, or at        |  | SU decision:
 *                  | full pipe with SU 5 ms; fixed SU:      |  | no pattern
 *                  v at full pipe)                          |  |
 *              +--------+ <-- pattern (paper: pipe full) ---+  |
 *              | STEADY | -----------------------------------+
 *              +--------+  César sets cwnd and pacing; SU re-estimated every decision
 *
 * Differences from the Rust reference:
 *  1. Integer arithmetic without 128-bit products: times in microseconds (the Rust
 *     reference uses nanoseconds, so histogram bin edges and SU means differ by < 1 us),
 *     alpha, beta, gamma and rho in Q16 (Rust: Q32; beta = 3277/65536 = 0.050003),
 *     products saturate at 2^63 instead of going through u128.
 *  2. The inner BBR is the running kernel's tcp_bbr (full-pipe threshold 1.25, not
 *     configurable) instead of the reference's BBR model; its state occupies
 *     icsk_ca_priv, so César's own state is in socket storage. BBR's min_tso_segs and
 *     sndbuf_expand hooks are wired as the kernel's BBR wires them.
 *  3. Parameters come from maps and are re-read on every ACK (per-flow override,
 *     cesar_defaults[0], then the built-in defaults below); the set rule in use is the
 *     one of the fidelity in force when STEADY was entered.
 *  4. Gaps, RTTs and rate samples are the stack's: tp->tcp_mstamp (us), rs->rtt_us,
 *     rs->delivered, rs->interval_us. ACKs without an RTT sample are not observed (as in
 *     the reference and the module).
 *  5. BW samples are capped at 2^40 (65536 packets per microsecond), so no later
 *     product can overflow.
 * Differences from the paper and the module: those of the reference (its header): the
 * SU rule's thresholds are the reference's, start-up is BBR STARTUP, STEADY starts
 * initialised from BBR's model, a set ends after a gap of SU - margin or an age of SU,
 * RTT_min never expires, division by zero in the increase and invalid rate samples are
 * guarded, no per-ACK logging.
 *
 * Verifier: every division is guarded; loops are bounded (40 bins, 3 peaks); histogram
 * indices are masked into 64-slot arrays; each histogram scan that yields a bin index is
 * a global function (checked once, with unknown arguments: inlined, a scan remembering
 * its best index doubled the paths at every bin). The only kernel writes are snd_cwnd,
 * sk_pacing_rate and sk_pacing_status.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "cellcc.h"

char _license[] SEC("license") = "GPL";

#ifndef CELLCC_STRUCT_OPS_SEC
#define CELLCC_STRUCT_OPS_SEC ".struct_ops.link"
#endif

/* ---- Parameters and statistics (mirrored by user space) ---- */

struct cesar_params {
	__u32 valid;            /* 1 = use this entry */
	__u32 alpha_x1000;      /* alpha: pacing multiplier on BW_ewma (Eq. 3-4), 1000..16000 */
	__u32 beta_x1000;       /* beta: weight of the delay-driven decrease (Eq. 5, 9) */
	__u32 gamma_x1000;      /* gamma: EWMA weight (Eq. 2) */
	__u32 fixed_su_us;      /* 0 = estimate the SU; else a fixed SU, no estimation */
	__u32 fidelity;         /* 0 = paper rules (default), 1 = reference module rules */
	__u32 decision_gaps;    /* counted ACK gaps per SU decision, 32..1000000 */
	__u32 cwnd_min_target;  /* cwnd floor, packets */
};

/* A snapshot written on every ACK. Rates in bits per second. */
struct cesar_stats {
	__u32 phase;              /* enum cesar_phase */
	__u32 su_us;              /* scheduling unit in use */
	__u64 pacing_rate_bps;    /* sk_pacing_rate, x8 */
	__u64 min_rtt_us;         /* RTT_min (0 before the first sample) */
	__u64 srtt_us;
	__u32 cwnd;               /* snd_cwnd, packets */
	__u32 cwnd_target;        /* César's cwnd_i in packets (STEADY) */
	__u64 bw_ewma_bps;        /* BW_ewma (STEADY) */
	__u64 bbr_bw_bps;         /* the inner BBR's bandwidth estimate */
	__u32 bbr_full_bw_reached;
	__u32 pacing_gain_x1000;  /* alpha*rho (STEADY) */
	__u32 last_decision;      /* enum cesar_decision of the latest SU decision */
	__u32 histogram_gaps;     /* gaps collected toward the next decision */
	__u64 acks;               /* cong_control calls */
	__u64 decisions;
	__u64 pattern_decisions;
	__u64 no_pattern_decisions;
	__u64 unchanged_decisions;
	__u64 steady_entries;
	__u64 bbr_entries;
	__u64 sets;               /* per-set adjustments (steps) */
	__u64 increases;          /* steps that took the RTT-fell branch (Eq. 8-10) */
	__u64 decreases;          /* steps that took the RTT-rose branch (Eq. 5-7) */
};

const volatile struct cesar_params cesar_builtin_params = {
	.valid = 1,
	.alpha_x1000 = 2000,     /* §V-A, module cesar_alpha = 2 */
	.beta_x1000 = 50,        /* §V-A, module cesar_beta = 5 % */
	.gamma_x1000 = 125,      /* §V-A, module cesar_gamma = 8 (1/8) */
	.fixed_su_us = 0,        /* module cesar_scheduling_unit = 0: estimate */
	.fidelity = 0,           /* the paper's algorithm */
	.decision_gaps = 250,    /* module PATTERN_DECISON_PERIOD */
	.cwnd_min_target = 4,    /* module cesar_cwnd_min_target */
};

/* cesar_defaults, cesar_params, cesar_stats (bpf/cellcc.h). */
CELLCC_MAPS(cesar);

/* ---- The kernel's BBR, as kfuncs ---- */

extern void bbr_init(struct sock *sk) __ksym;
extern void bbr_main(struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs) __ksym;
extern __u32 bbr_ssthresh(struct sock *sk) __ksym;
extern __u32 bbr_undo_cwnd(struct sock *sk) __ksym;
extern void bbr_cwnd_event(struct sock *sk, enum tcp_ca_event event) __ksym;
extern void bbr_set_state(struct sock *sk, __u8 new_state) __ksym;
extern __u32 bbr_min_tso_segs(struct sock *sk) __ksym;
extern __u32 bbr_sndbuf_expand(struct sock *sk) __ksym;

/* ---- Constants ---- */

#define USEC_PER_SEC 1000000ULL
/* Gains: 1.0 in Q16. */
#define Q16 65536ULL
/* Bandwidth unit: packets per microsecond << 24 (BBR's BW_UNIT). */
#define BW_SCALE 24
/* BW samples above this are garbage (difference 5). */
#define BW_MAX (1ULL << 40)
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
/* Set margins: "almost the same" as the SU (module margin). */
#define MARGIN_US 1000
#define MARGIN_SMALL_SU_US 500
#define SMALL_SU_US 3000
/* Module rule: a skipped-grant excess is carried only past SU + this. */
#define MODULE_EXCESS_MIN_US 500
/* Module: packets delivered before its start-up growth rule looks at the target. */
#define MODULE_INIT_DELIVERED 10
/* The module's queue-occupancy percentage is out of this. */
#define MODULE_GAIN_DENOM 200
#define MIN_DECISION_GAPS 32
#define MAX_DECISION_GAPS 1000000

enum cesar_phase {
	CESAR_PROBE = 0,
	CESAR_STEADY = 1,
	CESAR_BBR = 2,
};

enum cesar_decision {
	CESAR_DECISION_NONE = 0,       /* none yet / keep collecting */
	CESAR_DECISION_PATTERN = 1,
	CESAR_DECISION_NO_PATTERN = 2,
	CESAR_DECISION_UNCHANGED = 3,  /* module rule: too weak to decide */
};

/* ---- Per-socket state (socket storage: icsk_ca_priv holds the kernel BBR) ---- */

/* The SU histogram (§IV-B): gaps per 0.5 ms bin and their sums, plus scratch space for
 * the decision. */
struct cesar_hist {
	__u32 count[BIN_SLOTS];
	__u64 sum_us[BIN_SLOTS];
	__u32 scratch[BIN_SLOTS]; /* module triangular histogram / paper on-line counts */
	__u32 gaps;               /* counted since the last decision (pattern_count) */
	__u32 pad;
};

struct cesar {
	__u32 inited;
	__u32 phase;              /* enum cesar_phase */
	__u32 su_us;              /* SU in use */
	__u32 pending_pattern;    /* paper: a pattern waits for BBR's full pipe */
	__u32 last_decision;
	__u32 sets_rule;          /* fidelity in force when STEADY was entered */
	/* RTT_min and the latest valid BW_i. */
	__u32 has_min_rtt;
	__u32 has_last_bw;
	__u64 min_rtt_us;
	__u64 last_bw;
	/* SU estimator: arrival of the previous observed ACK. */
	__u32 has_prev_ack;
	__u32 pad0;
	__u64 prev_ack_us;
	/* Paper set rule: the open set and the previous set's end. */
	__u32 open;
	__u32 open_has_bw;
	__u64 open_first_us;
	__u64 open_last_us;
	__u64 open_delivered;
	__u64 open_rtt_us;
	__u64 open_bw;
	__u32 has_prev_end;
	__u32 ps_has_last_bw;
	__u64 prev_end_us;
	__u64 ps_last_bw;
	/* Module set rule (previous_clock, previous_clock_diff, clock_pass, previous_ack,
	 * su_delivered, su_interval, gathering, previous_rtt, previous_bw). */
	__u32 ms_has_prev;
	__u32 ms_gathering;
	__u64 ms_prev_time_us;
	__u64 ms_prev_gap_us;
	__u64 ms_clock_pass_us;
	__u64 ms_prev_acked;
	__u64 ms_delivered;
	__u64 ms_interval_us;
	__u64 ms_prev_rtt_us;
	__u64 ms_prev_bw;
	__u32 ms_has_prev_bw;
	/* Step (STEADY): cwnd_i in bytes, BW_ewma, RTT_{i-1}, pacing gain over BW_ewma. */
	__u32 has_prev_rtt;
	__u64 cwnd_bytes;
	__u64 bw_ewma;
	__u64 prev_rtt_us;
	__u64 pacing_gain_q16;
	/* Counters. */
	__u64 acks;
	__u64 decisions;
	__u64 pattern_decisions;
	__u64 no_pattern_decisions;
	__u64 unchanged_decisions;
	__u64 steady_entries;
	__u64 bbr_entries;
	__u64 sets;
	__u64 increases;
	__u64 decreases;
	struct cesar_hist hist;
};

#define CESAR_SCALAR_WORDS (__builtin_offsetof(struct cesar, hist) / 8)
_Static_assert(__builtin_offsetof(struct cesar, hist) % 8 == 0, "histogram 8-aligned");
_Static_assert(sizeof(struct cesar_hist) % 8 == 0, "histogram size in words");

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct cesar);
} cesar_sk SEC(".maps");

/* ---- Small integer helpers ---- */

/* min_u64, max_u64 and mul_sat are in bpf/cellcc.h. */

/* a * b / c, saturating; a if c is zero. */
static __always_inline __u64 mul_div(__u64 a, __u64 b, __u64 c)
{
	if (!c)
		return a;
	return mul_sat(a, b) / c;
}

/* ---- Parameters ---- */

CELLCC_PARAMS_FOR(cesar)

/* The parameters in use, as Q16 gains and clamped ranges. */
struct cesar_cfg {
	__u64 alpha;
	__u64 beta;
	__u64 gamma;
	__u32 fixed_su_us;
	__u32 module;
	__u32 period;
	__u32 cwnd_min_target;
};

static __always_inline void cesar_cfg(const struct cesar_params *p, struct cesar_cfg *c)
{
	c->alpha = min_u64(max_u64(p->alpha_x1000, 1000), 16000) * Q16 / 1000;
	c->beta = min_u64(p->beta_x1000, 1000) * Q16 / 1000;
	c->gamma = min_u64(p->gamma_x1000, 1000) * Q16 / 1000;
	c->fixed_su_us = min_u64(p->fixed_su_us, 1000000);
	c->module = p->fidelity == 1;
	c->period = min_u64(max_u64(p->decision_gaps, MIN_DECISION_GAPS), MAX_DECISION_GAPS);
	c->cwnd_min_target = max_u64(p->cwnd_min_target, 1);
}

/* ---- The inner BBR's model, read from icsk_ca_priv ---- */

static __always_inline struct bbr *cesar_bbr(struct sock *sk)
{
	return (struct bbr *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

/* bbr_bw(): the long-term bandwidth while policed, else the windowed max. */
static __always_inline __u64 cesar_bbr_bw(struct sock *sk)
{
	struct bbr *bbr = cesar_bbr(sk);

	return bbr->lt_use_bw ? bbr->lt_bw : bbr->bw.s[0].v;
}

static __always_inline int cesar_bbr_full_bw_reached(struct sock *sk)
{
	return cesar_bbr(sk)->full_bw_reached;
}

/* ---- SU estimation (§IV-B, §IV-C) ---- */

/* A histogram index masked into the array; the barrier keeps the compiler from dropping
 * the mask on the strength of an earlier range check the verifier cannot see. */
static __always_inline __u32 bin_idx(__u32 i)
{
	barrier_var(i);
	return i & BIN_MASK;
}

/* Gaps in the window of bins j-1..=j+1 within FIRST_SU_BIN..BINS-1 (j >= FIRST_SU_BIN). */
static __always_inline __u32 hist_weight(const struct cesar_hist *h, __u32 j)
{
	__u32 w = 0;

	if (j >= BINS)
		return 0;
	w = h->count[bin_idx(j)];
	if (j >= FIRST_SU_BIN + 1)
		w += h->count[bin_idx(j - 1)];
	if (j + 1 < BINS)
		w += h->count[bin_idx(j + 1)];
	return w;
}

/* Mean gap in that window, us; 0 if empty. */
static __always_inline __u64 hist_window_mean(const struct cesar_hist *h, __u32 j)
{
	__u64 n, sum;

	if (j >= BINS)
		return 0;
	n = h->count[bin_idx(j)];
	sum = h->sum_us[bin_idx(j)];
	if (j >= FIRST_SU_BIN + 1) {
		n += h->count[bin_idx(j - 1)];
		sum += h->sum_us[bin_idx(j - 1)];
	}
	if (j + 1 < BINS) {
		n += h->count[bin_idx(j + 1)];
		sum += h->sum_us[bin_idx(j + 1)];
	}
	return n ? sum / n : 0;
}

static __always_inline __u64 abs_diff(__u64 a, __u64 b)
{
	return a > b ? a - b : b - a;
}

/*
 * The decisions scan the 40 bins several times. Each scan that yields a bin index is a
 * global function of its own: the verifier checks a global function once, with unknown
 * arguments, and the caller sees an unknown result; inside one function, a scan that
 * remembered its best index as a known constant per iteration would multiply the paths
 * the verifier walks by two per bin.
 */

/* Paper rule: the window holding most set gaps (ties: fuller centre bin, then the shorter
 * gap); returns BINS if it holds fewer than MIN_LINE gaps. */
__noinline int cesar_paper_peak(struct cesar_hist *h)
{
	__u32 i, w, c, peak = BINS, best_w = 0, best_c = 0;

	if (!h)
		return BINS;
	for (i = FIRST_SU_BIN + 1; i < BINS; i++) {
		w = hist_weight(h, i);
		c = h->count[i];
		if (peak == BINS || w > best_w || (w == best_w && c > best_c)) {
			peak = i;
			best_w = w;
			best_c = c;
		}
	}
	return best_w >= MIN_LINE ? peak : BINS;
}

/* Paper rule: the SU, the mean gap of the smallest line of which the peak is a multiple
 * (§IV-C "smallest least common multiple of the ACK interval pattern that frequently
 * appears"), else the peak's mean gap. A line is a local maximum holding >= MIN_LINE gaps
 * and >= 10 % of the set gaps. */
__noinline __u64 cesar_paper_fundamental(struct cesar_hist *h, __u32 peak, __u32 set_gaps)
{
	__u64 peak_mean, cand, k;
	__u32 i, w;

	if (!h)
		return 0;
	peak_mean = hist_window_mean(h, peak);
	for (i = FIRST_SU_BIN + 1; i < BINS - 1; i++) {
		if (i >= peak)
			break;
		w = hist_weight(h, i);
		if (w < MIN_LINE || (__u64)w * 100 < (__u64)set_gaps * SECOND_LINE_MIN_PERCENT)
			continue;
		if (w < hist_weight(h, i - 1) || w < hist_weight(h, i + 1))
			continue;
		cand = hist_window_mean(h, i);
		if (!cand)
			continue;
		k = (peak_mean + cand / 2) / cand;
		if (k >= 2 && abs_diff(peak_mean, k * cand) <= LINE_TOLERANCE_US)
			return cand;
	}
	return peak_mean;
}

/* Paper rule: count the gaps on each multiple k*SU (within the line tolerance) into
 * h->scratch[k], k <= BINS. */
__noinline int cesar_paper_lines(struct cesar_hist *h, __u64 su)
{
	__u64 mean, k;
	__u32 i, c;

	if (!h || !su)
		return 0;
	for (i = 0; i < BIN_SLOTS; i++)
		h->scratch[i] = 0;
	for (i = NEAR_ZERO_BINS; i < BINS; i++) {
		c = h->count[i];
		if (!c)
			continue;
		mean = h->sum_us[i] / c;
		k = (mean + su / 2) / su;
		if (k >= 1 && abs_diff(mean, k * su) <= LINE_TOLERANCE_US)
			h->scratch[bin_idx(k < BINS ? k : BINS)] += c;
	}
	return 1;
}

/* Paper rule: from the line counts, the gaps on all lines (bits 63..2), whether a second
 * multiple holds a line (bit 1) and whether the SU itself does (bit 0). */
__noinline __u64 cesar_paper_line_summary(struct cesar_hist *h, __u32 set_gaps)
{
	__u64 on = 0, second_line = 0;
	__u32 i, c;

	if (!h)
		return 0;
	for (i = 1; i <= BINS; i++) {
		c = h->scratch[i];
		on += c;
		if (i >= 2 && c >= MIN_LINE &&
		    (__u64)c * 100 >= (__u64)max_u64(set_gaps, 1) * SECOND_LINE_MIN_PERCENT)
			second_line = 1;
	}
	return (on << 2) | (second_line << 1) | (h->scratch[1] >= MIN_LINE);
}

/* The paper rule (reference su.rs). Returns the decision; *su_out gets the SU of a
 * pattern. CESAR_DECISION_NONE = keep collecting (too few gaps between sets yet). */
static __always_inline int cesar_decide_paper(struct cesar_hist *h, __u32 period, __u32 *su_out)
{
	__u32 all, near_zero, set_gaps, peak, second_line, first_line, concentrated, bursty;
	__u64 su, summary, on;

	all = h->gaps;
	near_zero = h->count[0] + h->count[1];
	set_gaps = all > near_zero ? all - near_zero : 0;
	if (set_gaps < MIN_SET_GAPS && (__u64)all < (__u64)period * MAX_DEFERRAL)
		return CESAR_DECISION_NONE;
	peak = cesar_paper_peak(h);
	if (peak >= BINS)
		return CESAR_DECISION_NO_PATTERN;
	su = cesar_paper_fundamental(h, peak, set_gaps);
	if (!su || su > 0xffffffffULL)
		return CESAR_DECISION_NO_PATTERN;
	cesar_paper_lines(h, su);
	summary = cesar_paper_line_summary(h, set_gaps);
	on = summary >> 2;
	second_line = (summary >> 1) & 1;
	first_line = summary & 1;
	concentrated = on * 100 >= (__u64)max_u64(set_gaps, 1) * ON_LINE_MIN_PERCENT;
	bursty = near_zero >= MIN_LINE &&
		 (__u64)near_zero * 100 >= (__u64)max_u64(all, 1) * BURST_MIN_PERCENT;
	if (first_line && concentrated && (bursty || second_line)) {
		*su_out = su;
		return CESAR_DECISION_PATTERN;
	}
	return CESAR_DECISION_NO_PATTERN;
}

/* Module rule: the largest bin of the triangular histogram (h->scratch) among bins
 * MODULE_FIRST_PEAK_BIN.., lowest index on ties; returns index << 32 | value, 0 when
 * all are empty. */
__noinline __u64 cesar_module_peak(struct cesar_hist *h)
{
	__u32 i, bi = 0, bv = 0, v;

	if (!h)
		return 0;
	for (i = MODULE_FIRST_PEAK_BIN; i < BINS; i++) {
		v = h->scratch[i];
		if (v > bv) {
			bv = v;
			bi = i;
		}
	}
	return ((__u64)bi << 32) | bv;
}

/* Module rule: clear bins lo..=hi of the triangular histogram. */
__noinline int cesar_module_clear(struct cesar_hist *h, __u32 lo, __u32 hi)
{
	__u32 i;

	if (!h)
		return 0;
	for (i = 0; i < BINS; i++)
		if (i >= lo && i <= hi)
			h->scratch[i] = 0;
	return 1;
}

/* The reference module's rule: triangular histogram, three peaks with +-4 bins
 * suppressed, harmonic fix-ups. */
static __always_inline int cesar_decide_module(struct cesar_hist *h, __u32 *su_out)
{
	__u32 i1, v1, i2, v2, i3, v3, i, su_bins, half;
	__u64 pk;

	/* A gap in bin i counts in bins i and i + 1. */
	for (i = 0; i < BINS; i++)
		h->scratch[i] = h->count[i] + (i ? h->count[i - 1] : 0);
	/* Gaps under 2.5 ms never form an SU (bin 3 is left but cannot be chosen). */
	h->scratch[0] = 0;
	h->scratch[1] = 0;
	h->scratch[2] = 0;
	h->scratch[4] = 0;
	pk = cesar_module_peak(h);
	i1 = pk >> 32;
	v1 = (__u32)pk;
	cesar_module_clear(h, i1 > MODULE_SUPPRESS_BINS ? i1 - MODULE_SUPPRESS_BINS : 0,
			   i1 + MODULE_SUPPRESS_BINS);
	pk = cesar_module_peak(h);
	i2 = pk >> 32;
	v2 = (__u32)pk;
	cesar_module_clear(h, i2 > MODULE_SUPPRESS_BINS ? i2 - MODULE_SUPPRESS_BINS : 0,
			   i2 + MODULE_SUPPRESS_BINS);
	pk = cesar_module_peak(h);
	i3 = pk >> 32;
	v3 = (__u32)pk;
	if (v1 >= MIN_LINE) {
		half = v1 / 2;
		su_bins = i1;
		if (i1 == 10 && ((i2 == 5 && v2 >= half) || (i3 == 5 && v3 >= half)))
			su_bins = 5;   /* 5 ms line with a strong 2.5 ms line: 2.5 ms */
		if (i1 == 20 && (i2 == 10 || (i3 == 10 && v3 >= half)))
			su_bins = 10;  /* 10 ms line with a 5 ms line: 5 ms */
		if (su_bins == 9)
			su_bins = 10;  /* 4.5 ms -> 5 ms */
		else if (su_bins == 15)
			su_bins = 16;  /* 7.5 ms -> 8 ms */
		*su_out = su_bins * BIN_US;
		return CESAR_DECISION_PATTERN;
	}
	if (!v1 || !v2)
		return CESAR_DECISION_NO_PATTERN;
	/* i2 >= 5 here (v2 > 0): no divisor is zero. */
	if ((i2 && i1 % i2 == 0) || i1 % (i2 + 1) == 0 || (i2 > 1 && i1 % (i2 - 1) == 0))
		return CESAR_DECISION_UNCHANGED;
	return CESAR_DECISION_NO_PATTERN;
}

static __always_inline void hist_clear(struct cesar_hist *h)
{
	int i;

	for (i = 0; i < BINS; i++) {
		h->count[i] = 0;
		h->sum_us[i] = 0;
	}
	h->gaps = 0;
}

/* One observed ACK at now_us: count its gap (< 20 ms); every `period` gaps, decide. */
static __always_inline int cesar_su_on_ack(struct cesar *ca, const struct cesar_cfg *c,
					   __u64 now_us, __u32 *su_out)
{
	struct cesar_hist *h = &ca->hist;
	__u64 gap, bin;
	int d;

	if (!ca->has_prev_ack) {
		ca->has_prev_ack = 1;
		ca->prev_ack_us = now_us;
		return CESAR_DECISION_NONE;
	}
	gap = now_us > ca->prev_ack_us ? now_us - ca->prev_ack_us : 0;
	ca->prev_ack_us = now_us;
	bin = gap / BIN_US;
	/* Keep the bound check on the index itself (the verifier does not follow the
	 * compiler's rewriting of it into a check on the gap). */
	barrier_var(bin);
	if (bin >= BINS)
		return CESAR_DECISION_NONE;
	h->count[bin_idx(bin)]++;
	h->sum_us[bin_idx(bin)] += gap;
	h->gaps++;
	if (h->gaps < c->period)
		return CESAR_DECISION_NONE;
	d = c->module ? cesar_decide_module(h, su_out) : cesar_decide_paper(h, c->period, su_out);
	if (d != CESAR_DECISION_NONE)
		hist_clear(h);
	return d;
}

/* ---- Sets and anchors (§IV-C, §IV-D, Eq. 1, BW_set) ---- */

/* César Eq. (1): BW_i = Delivered_i / RTT_i, packets/us << 24; 0 = no sample. */
static __always_inline __u64 bw_over_rtt(__s64 delivered, __s64 rtt_us)
{
	if (delivered <= 0 || rtt_us <= 0)
		return 0;
	return min_u64(((__u64)delivered << BW_SCALE) / (__u64)rtt_us, BW_MAX);
}

/* The module's BW_i: the tcp_rate sample delivered / interval_us; 0 = invalid. */
static __always_inline __u64 bw_over_interval(__s64 delivered, __s64 interval_us)
{
	if (delivered <= 0 || interval_us <= 0)
		return 0;
	return min_u64(((__u64)delivered << BW_SCALE) / (__u64)interval_us, BW_MAX);
}

/* BW_set (César Eq. 6): packets acked in the set over its duration; 0 = unknown. */
static __always_inline __u64 bw_set(__u64 delivered, __u64 duration_us)
{
	if (!delivered || !duration_us)
		return 0;
	return min_u64(mul_sat(delivered, 1ULL << BW_SCALE) / duration_us, BW_MAX);
}

static __always_inline __u64 set_margin(__u64 su)
{
	return su <= SMALL_SU_US ? MARGIN_SMALL_SU_US : MARGIN_US;
}

/* Gaps at least this long start a new set: SU - margin, at least SU/2. */
static __always_inline __u64 new_set_threshold(__u64 su)
{
	__u64 m = set_margin(su);

	return max_u64(su > m ? su - m : 0, su / 2);
}

/* A set that just closed, described by its anchor. */
struct cesar_set {
	__u64 delivered;
	__u64 duration_us;  /* 0 = unknown */
	__u64 rtt_us;
	__u64 bw;           /* 0 = no valid sample up to the anchor */
};

/* One observed ACK, as the set rules read it. */
struct cesar_obs {
	__u64 now_us;
	__u64 acked;
	__u64 rtt_us;
	__u64 bw;           /* 0 = invalid sample */
};

/* The paper's set rule: a gap >= SU - margin or an age > SU starts a new set; the set's
 * duration is the time between the previous and this anchor. */
static __always_inline int sets_paper(struct cesar *ca, const struct cesar_obs *o, __u64 su,
				      struct cesar_set *out)
{
	int closed = 0;

	if (o->bw) {
		ca->ps_last_bw = o->bw;
		ca->ps_has_last_bw = 1;
	}
	if (ca->open) {
		__u64 gap = o->now_us > ca->open_last_us ? o->now_us - ca->open_last_us : 0;
		__u64 age = o->now_us > ca->open_first_us ? o->now_us - ca->open_first_us : 0;

		if (gap >= new_set_threshold(su) || age > su) {
			out->delivered = ca->open_delivered;
			out->duration_us = ca->has_prev_end && ca->open_last_us > ca->prev_end_us ?
					   ca->open_last_us - ca->prev_end_us : 0;
			out->rtt_us = ca->open_rtt_us;
			out->bw = ca->open_has_bw ? ca->open_bw : 0;
			ca->prev_end_us = ca->open_last_us;
			ca->has_prev_end = 1;
			ca->open = 0;
			closed = 1;
		}
	}
	if (!ca->open) {
		ca->open = 1;
		ca->open_first_us = o->now_us;
		ca->open_delivered = 0;
	}
	ca->open_last_us = o->now_us;
	ca->open_delivered += o->acked;
	ca->open_rtt_us = o->rtt_us;
	ca->open_bw = ca->ps_last_bw;
	ca->open_has_bw = ca->ps_has_last_bw;
	return closed;
}

static __always_inline void sets_module_close(struct cesar *ca, struct cesar_set *out)
{
	out->delivered = ca->ms_delivered;
	out->duration_us = ca->ms_interval_us;
	out->rtt_us = ca->ms_prev_rtt_us;
	out->bw = ca->ms_has_prev_bw ? ca->ms_prev_bw : 0;
	ca->ms_gathering = 0;
	ca->ms_interval_us = 0;
	ca->ms_delivered = 0;
	ca->ms_clock_pass_us = 0;
}

/* The module's set rule: one-ACK lag, clock_pass bounding a set, the large gap before
 * a set as its duration. */
static __always_inline int sets_module(struct cesar *ca, const struct cesar_obs *o, __u64 su,
				       struct cesar_set *out)
{
	__u64 next_gap = 0;
	int closed = 0;

	if (ca->ms_has_prev) {
		__u64 margin = set_margin(su);
		__u64 th = su > margin ? su - margin : 0;
		__u64 raw = o->now_us > ca->ms_prev_time_us ? o->now_us - ca->ms_prev_time_us : 0;
		__u64 g_prev = ca->ms_prev_gap_us + ca->ms_clock_pass_us;
		__u64 g_cur = raw + ca->ms_clock_pass_us;
		int prev_large = g_prev >= th, cur_large = g_cur >= th;

		next_gap = raw;
		if (prev_large && !cur_large) {
			/* The previous ACK opened a set after a large gap. */
			__u64 k, whole;

			ca->ms_delivered += ca->ms_prev_acked;
			ca->ms_interval_us = g_prev;
			ca->ms_gathering = 1;
			/* A gap past a whole number of SUs by more than the margin carries its
			 * excess into this set's clock (skipped grants). */
			k = su ? max_u64((ca->ms_prev_gap_us + su / 2) / su, 1) : 1;
			whole = mul_sat(su, k);
			if (ca->ms_prev_gap_us > whole + margin &&
			    ca->ms_prev_gap_us >= su + MODULE_EXCESS_MIN_US)
				ca->ms_clock_pass_us += ca->ms_prev_gap_us - whole;
		} else if (prev_large && cur_large) {
			/* The previous ACK was a set on its own. */
			ca->ms_delivered += ca->ms_prev_acked;
			ca->ms_interval_us = g_prev;
			sets_module_close(ca, out);
			closed = 1;
		} else if (!prev_large && cur_large) {
			/* The set ended with the previous ACK. */
			if (ca->ms_gathering) {
				ca->ms_delivered += ca->ms_prev_acked;
				sets_module_close(ca, out);
				closed = 1;
			}
			if (raw < th)
				next_gap = g_cur; /* the boundary came from clock_pass */
		} else if (ca->ms_gathering) {
			/* Inside a set. */
			ca->ms_delivered += ca->ms_prev_acked;
			ca->ms_clock_pass_us += ca->ms_prev_gap_us;
		}
	}
	ca->ms_prev_gap_us = next_gap;
	ca->ms_prev_acked = o->acked;
	ca->ms_prev_time_us = o->now_us;
	ca->ms_has_prev = 1;
	ca->ms_prev_rtt_us = o->rtt_us;
	if (o->bw) {
		ca->ms_prev_bw = o->bw; /* invalid samples are skipped, not used */
		ca->ms_has_prev_bw = 1;
	}
	return closed;
}

/* ---- Step-wise update (§IV-D, §IV-E, Eq. 2-10) ---- */

/* César Eq. (2): (1 - gamma)*prev + gamma*sample, rounded. */
static __always_inline __u64 cesar_ewma(__u64 prev, __u64 sample, __u64 gamma)
{
	gamma = min_u64(gamma, Q16);
	return (prev * (Q16 - gamma) + sample * gamma + Q16 / 2) >> 16;
}

/* César Eq. (4): rho = 1 - (alpha - 1)/alpha * (RTT - RTT_min)/RTT, Q16, in [1/alpha, 1]. */
static __always_inline __u64 cesar_rho(__u64 alpha, __u64 rtt, __u64 min_rtt)
{
	__u64 queue, share, penalty;

	if (!rtt || alpha <= Q16)
		return Q16;
	queue = min_u64(rtt > min_rtt ? rtt - min_rtt : 0, rtt);
	share = (queue << 16) / rtt;
	penalty = (alpha - Q16) * share / alpha;
	return Q16 - min_u64(penalty, Q16);
}

/* César Eq. (6): CD = (RTT_i - RTT_{i-1})*BW_set/BW_i; without BW_set the ratio is 1. */
static __always_inline __u64 congestive_delay(__u64 rtt, __u64 prev, __u64 bwset, __u64 bw)
{
	__u64 rise = rtt > prev ? rtt - prev : 0;

	return bwset && bw ? mul_div(rise, bwset, bw) : rise;
}

/* César Eq. (7): BR = (RTT_i - RTT_min)*max(0, BW_ewma - BW_i)/BW_ewma. */
static __always_inline __u64 bandwidth_reduction(__u64 rtt, __u64 min_rtt, __u64 ewma, __u64 bw)
{
	if (bw >= ewma || !ewma)
		return 0;
	return mul_div(rtt > min_rtt ? rtt - min_rtt : 0, ewma - bw, ewma);
}

/* César Eq. (5) and (9): (1 - beta)*W + beta*W*RTT_min/(RTT_min + x), evaluated as
 * W - beta*W*x/(RTT_min + x). */
static __always_inline __u64 shrink(__u64 w, __u64 beta, __u64 min_rtt, __u64 x)
{
	__u64 frac, cut;

	if (!x)
		return w;
	x = min_u64(x, 1ULL << 40);
	frac = (x << 16) / (min_rtt + x); /* <= 1.0; min_rtt + x >= x > 0 */
	cut = mul_sat(mul_sat(w, min_u64(beta, Q16)) >> 16, frac) >> 16;
	return w - min_u64(cut, w);
}

/* The increase term of César Eq. (8), bytes:
 * BW_ewma*SU*rho*(RTT_{i-1} - RTT_i)/(RTT_{i-1} - RTT_min). Zero when
 * RTT_{i-1} = RTT_min, where the module divides by zero. */
static __always_inline __u64 increase(__u64 ewma, __u64 su, __u64 mss, __u64 rho,
				      __u64 prev, __u64 rtt, __u64 min_rtt)
{
	__u64 span = prev > min_rtt ? prev - min_rtt : 0;
	__u64 fall = min_u64(prev > rtt ? prev - rtt : 0, span);
	__u64 ratio, v;

	if (!span || !fall)
		return 0;
	ratio = (fall << 16) / span;
	v = mul_sat(ewma, su);             /* packets << 24 in one SU */
	v = mul_sat(v, rho) >> 16;
	v = mul_sat(v, ratio) >> 16;
	return mul_sat(v, mss) >> BW_SCALE;
}

/* Inputs of one set's adjustment. */
struct cesar_step_in {
	__u64 rtt;          /* RTT_i: the anchor's RTT */
	__u64 min_rtt;
	__u64 bw;           /* BW_i */
	__u64 bwset;        /* BW_set, 0 = unknown */
	__u64 su;
	__u64 mss;
	__u64 rs_interval;  /* module: interval of the ACK that closed the set, 0 = none */
};

/* The paper's adjustment at anchor i: Eq. 2-10 in that order. */
static __always_inline void step_paper(struct cesar *ca, const struct cesar_cfg *c,
				       const struct cesar_step_in *in)
{
	__u64 rho, br, cd, inc, u, r;

	/* César Eq. (2). */
	ca->bw_ewma = max_u64(cesar_ewma(ca->bw_ewma, in->bw, c->gamma), 1);
	/* César Eq. (4) and (3). */
	rho = cesar_rho(c->alpha, in->rtt, in->min_rtt);
	ca->pacing_gain_q16 = (c->alpha * rho) >> 16;
	if (ca->has_prev_rtt) {
		/* César Eq. (7). */
		br = bandwidth_reduction(in->rtt, in->min_rtt, ca->bw_ewma, in->bw);
		if (in->rtt > ca->prev_rtt_us) {
			/* César Eq. (6) and (5). */
			cd = congestive_delay(in->rtt, ca->prev_rtt_us, in->bwset, in->bw);
			ca->cwnd_bytes = shrink(ca->cwnd_bytes, c->beta, in->min_rtt, cd + br);
			ca->decreases++;
		} else {
			/* César Eq. (8). */
			inc = increase(ca->bw_ewma, in->su, in->mss, rho, ca->prev_rtt_us, in->rtt,
				       in->min_rtt);
			u = ca->cwnd_bytes + inc;
			/* César Eq. (9) and (10). */
			r = shrink(u, c->beta, in->min_rtt, br);
			ca->cwnd_bytes = max_u64(ca->cwnd_bytes, r);
			ca->increases++;
		}
	}
	ca->prev_rtt_us = in->rtt;
	ca->has_prev_rtt = 1;
}

/* The module's adjustment (its formulas; the division by zero of the increase guarded). */
static __always_inline void step_module(struct cesar *ca, const struct cesar_cfg *c,
					const struct cesar_step_in *in)
{
	__u64 r1 = in->rtt, r_min = in->min_rtt, b = in->bw, big_b = ca->bw_ewma;
	__u64 occupancy = 0, factor, r0, br, inc, shrunk, rise;

	/* Queue occupancy from the closing ACK's interval; the pacing gain changes only
	 * when that interval exceeds RTT_min. */
	if (in->rs_interval > r_min && in->rs_interval) {
		occupancy = 100 * (in->rs_interval - r_min) / in->rs_interval;
		factor = (MODULE_GAIN_DENOM - min_u64(occupancy, MODULE_GAIN_DENOM)) * Q16 /
			 MODULE_GAIN_DENOM;
		ca->pacing_gain_q16 = (c->alpha * factor) >> 16;
	}
	factor = (MODULE_GAIN_DENOM - min_u64(occupancy, MODULE_GAIN_DENOM)) * Q16 /
		 MODULE_GAIN_DENOM;
	/* RTT_{i-1} starts at 0, so the first adjustment always takes the decrease. */
	r0 = ca->has_prev_rtt ? ca->prev_rtt_us : 0;
	br = bandwidth_reduction(r1, r_min, big_b, b);
	if (r1 <= r0) {
		inc = increase(big_b, in->su, in->mss, factor, r0, r1, r_min);
		shrunk = shrink(ca->cwnd_bytes, c->beta, r_min, br);
		ca->cwnd_bytes = max_u64(ca->cwnd_bytes, shrunk + inc);
		ca->increases++;
	} else {
		/* BW_set/BW_i only damps the rise (ratio capped at 1). */
		rise = r1 - r0;
		if (in->bwset && b > in->bwset)
			rise = mul_div(rise, in->bwset, b);
		ca->cwnd_bytes = shrink(ca->cwnd_bytes, c->beta, r_min, br + rise);
		ca->decreases++;
	}
	/* EWMA after the adjustment, each term floored. */
	ca->bw_ewma = max_u64(big_b - ((big_b * c->gamma) >> 16) + ((b * c->gamma) >> 16), 1);
	ca->prev_rtt_us = r1;
	ca->has_prev_rtt = 1;
}

/* ---- States ---- */

/* Every state change goes through here: PROBE -> STEADY | BBR, STEADY -> BBR,
 * BBR -> STEADY. */
static __always_inline void cesar_transition(struct cesar *ca, __u32 to)
{
	__u32 from = ca->phase;

	if (!((from == CESAR_PROBE && (to == CESAR_STEADY || to == CESAR_BBR)) ||
	      (from == CESAR_STEADY && to == CESAR_BBR) ||
	      (from == CESAR_BBR && to == CESAR_STEADY)))
		return;
	if (to == CESAR_STEADY)
		ca->steady_entries++;
	else
		ca->bbr_entries++;
	ca->phase = to;
}

/* Enter STEADY from the inner BBR's model: BW_ewma = BBR's bandwidth, cwnd = the
 * measured BDP (paper) or the current window (module), pacing alpha*BW_ewma. */
static __always_inline void cesar_enter_steady(struct cesar *ca, struct sock *sk,
					       const struct cesar_cfg *c)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	__u64 mss = tp->mss_cache ? tp->mss_cache : 1, bw, cwnd_bytes, bdp;

	bw = cesar_bbr_bw(sk);
	if (!bw)
		bw = ca->has_last_bw ? ca->last_bw : 1;
	if (c->module) {
		cwnd_bytes = (__u64)tp->snd_cwnd * mss;
	} else {
		bdp = mul_sat(bw, ca->has_min_rtt ? ca->min_rtt_us : 0);
		bdp = (bdp + (1ULL << BW_SCALE) - 1) >> BW_SCALE;
		cwnd_bytes = mul_sat(bdp, mss);
	}
	ca->sets_rule = c->module;
	ca->open = 0;
	ca->has_prev_end = 0;
	ca->ps_has_last_bw = 0;
	ca->ms_has_prev = 0;
	ca->ms_gathering = 0;
	ca->ms_clock_pass_us = 0;
	ca->ms_delivered = 0;
	ca->ms_interval_us = 0;
	ca->ms_has_prev_bw = 0;
	ca->cwnd_bytes = max_u64(cwnd_bytes, (__u64)c->cwnd_min_target * mss);
	ca->bw_ewma = max_u64(bw, 1);
	ca->has_prev_rtt = 0;
	ca->pacing_gain_q16 = c->alpha;
	ca->pending_pattern = 0;
	cesar_transition(ca, CESAR_STEADY);
}

static __always_inline void cesar_on_decision(struct cesar *ca, struct sock *sk,
					      const struct cesar_cfg *c, int d, __u32 su)
{
	ca->last_decision = d;
	ca->decisions++;
	switch (d) {
	case CESAR_DECISION_PATTERN:
		ca->pattern_decisions++;
		ca->su_us = su;
		if (ca->phase == CESAR_STEADY)
			break;
		if (c->module)
			cesar_enter_steady(ca, sk, c);
		else
			ca->pending_pattern = 1;
		break;
	case CESAR_DECISION_NO_PATTERN:
		ca->no_pattern_decisions++;
		ca->pending_pattern = 0;
		if (c->module)
			ca->su_us = INITIAL_SU_US;
		if (ca->phase != CESAR_BBR)
			cesar_transition(ca, CESAR_BBR);
		break;
	default:
		ca->unchanged_decisions++;
		break;
	}
}

/* STEADY once BBR's pipe is full: a pending pattern (paper), a fixed SU, or the
 * module's start-up exit before any decision. */
static __always_inline void cesar_maybe_enter_steady(struct cesar *ca, struct sock *sk,
						     const struct cesar_cfg *c)
{
	int probing;

	if (ca->phase == CESAR_STEADY || !cesar_bbr_full_bw_reached(sk))
		return;
	probing = ca->phase == CESAR_PROBE;
	if (ca->pending_pattern || (probing && c->module) || (probing && c->fixed_su_us))
		cesar_enter_steady(ca, sk, c);
}

/* Feed one observed ACK to the set tracker; adjust once per closed set. */
static __always_inline void cesar_on_steady_ack(struct cesar *ca, struct tcp_sock *tp,
						const struct cesar_cfg *c, const struct cesar_obs *o,
						const struct rate_sample *rs)
{
	struct cesar_set set = {};
	struct cesar_step_in in = {};
	__u64 mss = tp->mss_cache ? tp->mss_cache : 1;
	int closed;

	if (ca->sets_rule)
		closed = sets_module(ca, o, ca->su_us, &set);
	else
		closed = sets_paper(ca, o, ca->su_us, &set);
	if (!closed || !set.bw)
		return; /* no set closed, or no valid bandwidth sample yet */
	in.rtt = set.rtt_us;
	in.min_rtt = ca->has_min_rtt ? ca->min_rtt_us : o->rtt_us;
	in.bw = set.bw;
	in.bwset = bw_set(set.delivered, set.duration_us);
	in.su = ca->su_us;
	in.mss = mss;
	in.rs_interval = rs->interval_us > 0 ? rs->interval_us : 0;
	if (ca->sets_rule)
		step_module(ca, c, &in);
	else
		step_paper(ca, c, &in);
	ca->sets++;
	ca->cwnd_bytes = max_u64(ca->cwnd_bytes, (__u64)c->cwnd_min_target * mss);
}

/* César Eq. (3): pace at pacing_gain * BW_ewma, bytes per second. */
static __always_inline void cesar_set_pacing_rate(struct cesar *ca, struct sock *sk, struct tcp_sock *tp)
{
	__u64 bw = mul_sat(ca->bw_ewma, ca->pacing_gain_q16) >> 16;
	__u64 rate = mul_sat(mul_sat(bw, tp->mss_cache), USEC_PER_SEC) >> BW_SCALE;

	if (rate)
		sk->sk_pacing_rate = min_u64(rate, sk->sk_max_pacing_rate);
}

/* Move cwnd toward cwnd_i: min(cwnd + acked, cwnd_i) on ACKs that acknowledge data,
 * at least cwnd_min_target. */
static __always_inline void cesar_set_cwnd(struct cesar *ca, struct sock *sk, struct tcp_sock *tp,
					   const struct cesar_cfg *c, __u32 acked)
{
	__u64 mss = tp->mss_cache ? tp->mss_cache : 1, target, grown, cwnd;

	if (!acked)
		return;
	target = min_u64(ca->cwnd_bytes / mss, 0xffffffffULL);
	grown = (__u64)tp->snd_cwnd + acked;
	if (c->module && !cesar_bbr_full_bw_reached(sk)) {
		/* The module before its pipe is full: grow by acked while below the target
		 * or while fewer than 10 packets have been delivered. */
		cwnd = (tp->snd_cwnd < target || tp->delivered < MODULE_INIT_DELIVERED) ?
		       grown : tp->snd_cwnd;
	} else {
		cwnd = min_u64(grown, target);
	}
	cwnd = max_u64(cwnd, c->cwnd_min_target);
	tp->snd_cwnd = min_u64(cwnd, tp->snd_cwnd_clamp);
}

/* Bandwidth (packets/us << 24) to bits per second. */
static __always_inline __u64 cesar_bw_bps(__u64 bw, __u32 mss)
{
	return mul_sat(mul_sat(bw, (__u64)mss * 8), USEC_PER_SEC) >> BW_SCALE;
}

static __always_inline void cesar_write_stats(struct cesar *ca, struct sock *sk, struct tcp_sock *tp,
					      const struct cellcc_flow_key *key)
{
	struct cesar_stats st = {};
	__u32 mss = tp->mss_cache ? tp->mss_cache : 1;

	st.phase = ca->phase;
	st.su_us = ca->su_us;
	st.pacing_rate_bps = mul_sat(sk->sk_pacing_rate, 8);
	st.min_rtt_us = ca->has_min_rtt ? ca->min_rtt_us : 0;
	st.srtt_us = tp->srtt_us >> 3;
	st.cwnd = tp->snd_cwnd;
	st.cwnd_target = ca->phase == CESAR_STEADY ? min_u64(ca->cwnd_bytes / mss, 0xffffffffULL) : 0;
	st.bw_ewma_bps = ca->phase == CESAR_STEADY ? cesar_bw_bps(ca->bw_ewma, mss) : 0;
	st.bbr_bw_bps = cesar_bw_bps(cesar_bbr_bw(sk), mss);
	st.bbr_full_bw_reached = cesar_bbr_full_bw_reached(sk);
	st.pacing_gain_x1000 = (ca->pacing_gain_q16 * 1000) >> 16;
	st.last_decision = ca->last_decision;
	st.histogram_gaps = ca->hist.gaps;
	st.acks = ca->acks;
	st.decisions = ca->decisions;
	st.pattern_decisions = ca->pattern_decisions;
	st.no_pattern_decisions = ca->no_pattern_decisions;
	st.unchanged_decisions = ca->unchanged_decisions;
	st.steady_entries = ca->steady_entries;
	st.bbr_entries = ca->bbr_entries;
	st.sets = ca->sets;
	st.increases = ca->increases;
	st.decreases = ca->decreases;
	bpf_map_update_elem(&cesar_stats, key, &st, BPF_ANY);
}

/* ---- Hooks ---- */

static __always_inline struct cesar *cesar_state(struct sock *sk)
{
	return bpf_sk_storage_get(&cesar_sk, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
}

static __always_inline void cesar_reset(struct cesar *ca, const struct cesar_cfg *c)
{
	__u64 *words = (__u64 *)ca;
	int i;

	/* Zero everything before the histogram (memset of this size is not a BPF builtin). */
	for (i = 0; i < CESAR_SCALAR_WORDS; i++)
		words[i] = 0;
	hist_clear(&ca->hist);
	ca->inited = 1;
	ca->phase = CESAR_PROBE;
	ca->su_us = c->fixed_su_us ? c->fixed_su_us : INITIAL_SU_US;
	ca->pacing_gain_q16 = c->alpha;
}

/* Reset, start the inner BBR (ssthresh infinite, initial pacing rate, pacing status). */
SEC("struct_ops")
void BPF_PROG(cesar_init, struct sock *sk)
{
	struct cellcc_flow_key key;
	struct cesar_cfg c;
	struct cesar *ca;

	bbr_init(sk);
	/* Internal pacing (no fq qdisc needed); bbr_init asks for it too. */
	sk->sk_pacing_status = SK_PACING_NEEDED;
	ca = cesar_state(sk);
	if (!ca)
		return;
	key = cellcc_flow_key_of(sk);
	cesar_cfg(cesar_params_for(&key), &c);
	cesar_reset(ca, &c);
}

/* The per-ACK recipe: observe -> estimate SU -> inner BBR -> STEADY entry ->
 * (STEADY) sets, step, pacing rate, cwnd. */
SEC("struct_ops")
void BPF_PROG(cesar_cong_control, struct sock *sk, __u32 ack, int flag,
	      const struct rate_sample *rs)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct cellcc_flow_key key;
	struct cesar_obs o = {};
	struct cesar_cfg c;
	struct cesar *ca;
	__u64 saved_rate;
	__u32 saved_cwnd, su = 0;
	int have_obs, d, was_steady;

	ca = cesar_state(sk);
	if (!ca) {
		bbr_main(sk, ack, flag, rs);
		return;
	}
	key = cellcc_flow_key_of(sk);
	cesar_cfg(cesar_params_for(&key), &c);
	if (!ca->inited)
		cesar_reset(ca, &c);
	ca->acks++;
	if (c.fixed_su_us)
		ca->su_us = c.fixed_su_us;

	/* Observe: RTT_min and this ACK's BW_i; ACKs without an RTT sample take no part
	 * in SU estimation or sets. */
	have_obs = rs->rtt_us > 0;
	if (have_obs) {
		o.now_us = tp->tcp_mstamp;
		o.acked = rs->acked_sacked;
		o.rtt_us = rs->rtt_us;
		o.bw = c.module ? bw_over_interval(rs->delivered, rs->interval_us)
				: bw_over_rtt(rs->delivered, rs->rtt_us);
		if (!ca->has_min_rtt || o.rtt_us < ca->min_rtt_us) {
			ca->min_rtt_us = o.rtt_us;
			ca->has_min_rtt = 1;
		}
		if (o.bw) {
			ca->last_bw = o.bw;
			ca->has_last_bw = 1;
		}
		if (!c.fixed_su_us) {
			d = cesar_su_on_ack(ca, &c, o.now_us, &su);
			if (d != CESAR_DECISION_NONE)
				cesar_on_decision(ca, sk, &c, d, su);
		}
	}

	/* The inner BBR sees every ACK; in STEADY its writes are undone. */
	was_steady = ca->phase == CESAR_STEADY;
	saved_cwnd = tp->snd_cwnd;
	saved_rate = sk->sk_pacing_rate;
	bbr_main(sk, ack, flag, rs);
	if (was_steady) {
		tp->snd_cwnd = saved_cwnd;
		sk->sk_pacing_rate = saved_rate;
	}

	cesar_maybe_enter_steady(ca, sk, &c);
	if (ca->phase == CESAR_STEADY) {
		if (have_obs)
			cesar_on_steady_ack(ca, tp, &c, &o, rs);
		cesar_set_pacing_rate(ca, sk, tp);
		cesar_set_cwnd(ca, sk, tp, &c, rs->acked_sacked);
	}
	cesar_write_stats(ca, sk, tp, &key);
}

/* No reduction of its own (the module returns infinity); the inner BBR saves cwnd. */
SEC("struct_ops")
__u32 BPF_PROG(cesar_ssthresh, struct sock *sk)
{
	return bbr_ssthresh(sk);
}

/* BBR's undo in PROBE and BBR; in STEADY the window is kept (as the module does). */
SEC("struct_ops")
__u32 BPF_PROG(cesar_undo_cwnd, struct sock *sk)
{
	__u32 cwnd = bbr_undo_cwnd(sk);
	struct cesar *ca = cesar_state(sk);

	if (ca && ca->phase == CESAR_STEADY)
		return ((struct tcp_sock *)sk)->snd_cwnd;
	return cwnd;
}

SEC("struct_ops")
void BPF_PROG(cesar_set_state, struct sock *sk, __u8 new_state)
{
	bbr_set_state(sk, new_state);
}

/* BBR may reset its pacing rate on a restart from idle; in STEADY César keeps its own. */
SEC("struct_ops")
void BPF_PROG(cesar_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	struct cesar *ca = cesar_state(sk);
	__u64 saved_rate = sk->sk_pacing_rate;

	bbr_cwnd_event(sk, event);
	if (ca && ca->phase == CESAR_STEADY)
		sk->sk_pacing_rate = saved_rate;
}

SEC("struct_ops")
__u32 BPF_PROG(cesar_min_tso_segs, struct sock *sk)
{
	return bbr_min_tso_segs(sk);
}

SEC("struct_ops")
__u32 BPF_PROG(cesar_sndbuf_expand, struct sock *sk)
{
	return bbr_sndbuf_expand(sk);
}

SEC(CELLCC_STRUCT_OPS_SEC)
struct tcp_congestion_ops cesar = {
	.init = (void *)cesar_init,
	.cong_control = (void *)cesar_cong_control,
	.ssthresh = (void *)cesar_ssthresh,
	.undo_cwnd = (void *)cesar_undo_cwnd,
	.set_state = (void *)cesar_set_state,
	.cwnd_event = (void *)cesar_cwnd_event,
	.min_tso_segs = (void *)cesar_min_tso_segs,
	.sndbuf_expand = (void *)cesar_sndbuf_expand,
	.name = "cellcc_cesar",
};
