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
 * Files. This one holds the parameters, the per-socket state, the state machine (the
 * twin of cesar/mod.rs), the hooks and the ops table. Each part with a Rust twin in
 * crates/cellcc-congestion/src/cesar/ is a header, included where its section stands:
 *   bpf/cesar/su_hist.h  SU histogram, SU rule constants  su.rs (its constants)
 *   bpf/cesar/su.h       SU estimation from ACK gaps      su.rs
 *   bpf/cesar/sets.h     sets, anchors, BW_i and BW_set   sets.rs
 *   bpf/cesar/steps.h    BW_ewma, pacing, cwnd steps      steps.rs
 * su_hist.h needs nothing of this file, so that bpf/tests/su_twin.c can compile su.h for
 * user space, where su.rs's twin test checks the paper rule against the Rust one.
 *
 * Verifier: every division is guarded; loops are bounded (40 bins, 3 peaks, 3 halvings);
 * histogram indices are masked into 64-slot arrays; each histogram scan that yields a
 * bin index or a count is a global function (checked once, with unknown arguments:
 * inlined, a scan remembering its best index doubled the paths at every bin). The only
 * kernel writes are snd_cwnd, sk_pacing_rate and sk_pacing_status.
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
/* The SU histogram, its bins and the SU rules' thresholds (shared with the user-space
 * harness that checks cesar/su.h against the Rust reference). */
#include "cesar/su_hist.h"
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

/* ---- Per-socket state (socket storage: icsk_ca_priv holds the kernel BBR) ---- */

/* struct cesar_hist, the SU histogram, is in cesar/su_hist.h. */
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

/* ---- SU estimation (§IV-B, §IV-C): cesar/su.h ---- */
#include "cesar/su.h"

/* ---- Sets and anchors (§IV-C, §IV-D, Eq. 1, BW_set): cesar/sets.h ---- */
#include "cesar/sets.h"

/* ---- Step-wise update (§IV-D, §IV-E, Eq. 2-10): cesar/steps.h ---- */
#include "cesar/steps.h"

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
