// SPDX-License-Identifier: GPL-2.0
/*
 * CDG, the CAIA Delay-Gradient congestion control, as a BPF struct_ops congestion control
 * ("cellcc_cdg"), as Linux 6.x runs it (net/ipv4/tcp_cdg.c), for kernels that do not ship
 * tcp_cdg.
 *
 * Sources: D. A. Hayes, G. Armitage, "Revisiting TCP Congestion Control using Delay
 * Gradients", IFIP Networking 2011, LNCS 6641, pp. 328-341: section 3.1 (gradients of
 * the per-RTT min and max RTT, Eqs. (1)-(3)), 3.2 (probabilistic backoff, Eq. (4)), 3.3
 * (ineffectual-backoff detection), 3.4 (shadow window); Linux net/ipv4/tcp_cdg.c.
 * Reference mirrored here: crates/cellcc-congestion/src/cdg/ (mod.rs; backoff.rs for
 * e^(-x); hystart.rs for CDG's HyStart, the sections of the same names below).
 *
 * Model. Each RTT CDG takes the smallest and largest RTT sample and their change from the
 * previous RTT, g_min and g_max, summed over the last `window` RTTs. With g = g_min if
 * positive, else g_max, it backs off with probability 1 - e^(-g * backoff_factor * 1e-6)
 * to backoff_beta * cwnd (0.7071) through CWR and PRR; otherwise it grows as Reno. The
 * shadow window remembers the window a loss-based flow would have, so a loss after delay
 * backoffs does not halve a window already reduced; after use_ineff backoffs that did not
 * lower the delay (no gradient <= -32 us) CDG stops backing off.
 *
 *                 once per RTT: g = sum of window gradients (g_min if > 0, else g_max)
 *   slow start --(CDG HyStart or loss)--> congestion avoidance (Reno growth,
 *       |                                  shadow_wnd += the same increase)
 *       |                                     | g > 0, rand > e^(-g * backoff_factor * 1e-6)
 *       |                                     | and < use_ineff ineffectual backoffs
 *       v                                     v
 *   loss: shadow := min(shadow/2, cwnd)     backoff: shadow := max(shadow, cwnd),
 *         ssthresh := max(2, shadow,               CWR with ssthresh :=
 *                         cwnd/2)                  max(2, 0.7071 cwnd), PRR;
 *                                                  at CWR's end: new RTT window
 *
 * Differences from the Rust reference (and from Linux):
 * 1. CWR is emulated. tcp_enter_cwr() is not a kfunc, so a backoff does in cong_avoid
 *    what it does in the kernel: high_seq := snd_nxt, prior_cwnd := cwnd, snd_cwnd_cnt :=
 *    0, ssthresh := CDG's backoff ssthresh; then, on each later cong_avoid call, the PRR
 *    step of tcp_cwnd_reduction() (prr_delivered and prr_out are tp->delivered and
 *    tp->data_segs_out since the backoff), until an ACK passes high_seq: cwnd :=
 *    ssthresh and CA_EVENT_COMPLETE_CWR's handling, then that ACK's normal cong_avoid.
 *    The kernel's state stays Open (or Disorder) meanwhile, so:
 *    a. cwnd changes only on ACKs that acknowledge new data (the kernel's CWR also
 *       steps on ACKs that only SACK);
 *    b. a loss or RTO during the reduction makes the stack call ssthresh, which the
 *       kernel's CWR would not: the emulation then ends and ssthresh stays the backoff's
 *       (as in the kernel), but the stack's Recovery starts PRR afresh from the current
 *       cwnd, and an undo of that episode is possible (tcp_enter_cwr disables undo);
 *    c. "+1 on a cumulative ACK without new loss" in PRR's slow-start bound counts
 *       losses since the previous cong_avoid call, not on this ACK.
 * 2. The random draw is the kernel's (bpf_get_prandom_u32, as Linux's
 *    get_random_u32()); the reference draws from a SplitMix64 stream seeded per flow
 *    (backoff_seed has no BPF counterpart). Runs are therefore not repeatable.
 * 3. The e^(-x) factors are the reference's, floor(65536 e^(-0.000256 * 2^k)), within one
 *    unit of Linux's hand-made table; grad * backoff_factor saturates in 64 bits (Linux
 *    wraps in 32), and the extrapolation grad * window / filled is computed in 64 bits.
 * 4. The HyStart clock is bpf_ktime_get_ns() in microseconds, 32-bit as Linux's
 *    local_clock() use (the reference uses the simulated time).
 * 5. Reno growth is the kernel's (tcp_reno_cong_avoid kfunc).
 * 6. The parameters are read from the maps (per-flow override, cdg_defaults[0], then the
 *    built-in Linux defaults) on each ACK; `window` only at init, as Linux only at module
 *    load. A window that is not a power of two in 1..256 falls back to the built-in 8
 *    (Linux refuses to load). The gradient ring always holds 256 slots.
 * 7. Per-socket state lives in a BPF_MAP_TYPE_SK_STORAGE map (the ring does not fit
 *    icsk_ca_priv; Linux kcallocs it) with the flow key and counters for cdg_stats; if it
 *    cannot be allocated the connection runs plain Reno. When the connection ends its
 *    cdg_params override is deleted and its stats entry is marked `released`.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "cellcc.h"

char _license[] SEC("license") = "GPL";

/* HyStart detectors (hystart_detect bits). */
#define CDG_HYSTART_ACK_TRAIN 1
#define CDG_HYSTART_DELAY 2
/* Linux's module defaults (CdgConfig::default). */
#define CDG_WINDOW_DEFAULT 8
#define CDG_BACKOFF_BETA_DEFAULT 724	/* 0.7071 * 1024 = sqrt(1/2) */
#define CDG_BACKOFF_FACTOR_DEFAULT 42	/* 1000 / (G * window), G ~ 3 ms */
#define CDG_HYSTART_DETECT_DEFAULT 3
#define CDG_USE_INEFF_DEFAULT 5
#define CDG_USE_SHADOW_DEFAULT 1
#define CDG_USE_TOLERANCE_DEFAULT 0
/* Largest gradient window (Linux keeps the ring index in 8 bits). */
#define CDG_WINDOW_MAX 256
/* beta is scaled by 1024. */
#define CDG_BETA_SCALE 1024
/* A gradient sum at or below -32 us shows the last backoff worked (tcp_cdg_grad). */
#define CDG_EFFECTIVE_GRAD_US (-32)
/* Most consecutive multi-packet ACKs the delayed-ACK filter counts. */
#define CDG_DELACK_MAX 5
/* Smallest ssthresh, packets. */
#define CDG_MIN_SSTHRESH 2
/* Rounding unit of the loss-tolerance classifier, us (DIV_ROUND_CLOSEST(g, 64)). */
#define CDG_TOLERANCE_UNIT_US 64
/* HyStart: largest ACK spacing that continues a train, us; floor of both thresholds,
 * us; ACKs per round before the delay test. */
#define CDG_ACK_TRAIN_GAP_US 3000
#define CDG_THRESH_FLOOR_US 125
#define CDG_DELAY_MIN_SAMPLES 8
/* TCP_INFINITE_SSTHRESH (include/net/tcp.h; vmlinux.h has no macros). */
#define CDG_INFINITE_SSTHRESH 0x7fffffffU

/* enum cdg_state. */
enum cdg_phase {
	CDG_UNKNOWN = 0,
	CDG_NONFULL = 1,	/* loss tolerance: the gradients say the queue is not full */
	CDG_FULL = 2,		/* loss tolerance: the queue looks full */
	CDG_BACKOFF = 3,	/* a delay backoff is in progress (until CWR completes) */
};

/* Per-connection parameters (Linux's module parameters), read on each ACK. */
struct cdg_params {
	__u32 valid;		/* 1: this entry is used; 0: fall through to the next source */
	__u32 window;		/* gradient window, RTTs: power of two in 1..256 (at init) */
	__u32 backoff_beta;	/* cwnd after a delay backoff, x 1/1024, <= 1024 */
	__u32 backoff_factor;	/* P(backoff) = 1 - e^(-g * backoff_factor * 1e-6) */
	__u32 hystart_detect;	/* 0 off, 1 ACK train, 2 delay, 3 both */
	__u32 use_ineff;	/* ineffectual backoffs before giving up; 0: never */
	__u32 use_shadow;	/* 1: shadow window at losses */
	__u32 use_tolerance;	/* 1: keep cwnd at a loss when the queue is not full */
};

/* What the connection reports, rewritten on every ACK. */
struct cdg_stats {
	__u64 acks;		/* cong_avoid calls */
	__u64 rtt_samples;	/* pkts_acked calls with an RTT sample */
	__u64 rounds;		/* per-RTT gradient steps */
	__u64 backoffs;		/* delay backoffs taken (emulated CWR entries) */
	__u64 backoffs_ineffectual;	/* backoffs suppressed by use_ineff */
	__u64 hystart_exits;	/* slow start ended by CDG's HyStart */
	__u64 cwr_completions;	/* emulated CWRs that ran until an ACK passed high_seq */
	__u64 cwr_cut_short;	/* emulated CWRs ended by a loss or RTO (ssthresh call) */
	__u64 loss_ssthresh;	/* ssthresh calls that took the loss rule */
	__u64 delivered;	/* tp->delivered, packets */
	__u64 updated_us;	/* tcp_mstamp of the last update */
	__s32 grad_us;		/* the last per-RTT backoff signal */
	__s32 gsum_min_us;	/* windowed sums of the min- and max-RTT gradients */
	__s32 gsum_max_us;
	__s32 delay_min_us;	/* HyStart's smallest per-RTT minimum (0: none) */
	__u32 shadow_wnd;	/* packets */
	__u32 state;		/* enum cdg_phase */
	__u32 in_cwr;		/* 1 while an emulated CWR runs */
	__u32 window;		/* gradient window in use */
	__u32 srtt_us;
	__u32 cwnd;
	__u32 ssthresh;
	__u32 released;		/* 1 once the connection released the congestion control */
};

/* Per-RTT minimum and maximum RTT, us; both 0 = no sample yet (Linux's v64 == 0). */
struct cdg_minmax {
	__s32 min;
	__s32 max;
};

/* Linux's struct cdg, the CWR emulation, the key and counters; the ring last. */
struct cdg_state {
	struct cellcc_flow_key key;	/* taken at init: the ports are gone by release */
	__u64 acks;
	__u64 rtt_samples;
	__u64 rounds;
	__u64 backoffs;
	__u64 backoffs_ineffectual;
	__u64 hystart_exits;
	__u64 cwr_completions;
	__u64 cwr_cut_short;
	__u64 loss_ssthresh;
	struct cdg_minmax rtt;		/* this RTT's min/max */
	struct cdg_minmax rtt_prev;	/* the previous RTT's */
	struct cdg_minmax gsum;		/* sum of the ring */
	__u32 gfilled;		/* the ring has wrapped once */
	__u32 tail;		/* next ring slot */
	__u32 state;		/* enum cdg_phase */
	__u32 delack;		/* delayed-ACK filter counter */
	__u32 rtt_seq;		/* the per-RTT step is due once an ACK passes this */
	__u32 undo_cwnd;	/* cwnd at the last ssthresh call */
	__u32 shadow_wnd;	/* the window a loss-based flow would have, packets */
	__u32 backoff_cnt;	/* backoffs since the last effective one */
	__u32 sample_cnt;	/* HyStart: ACKs this round */
	__s32 delay_min;	/* HyStart: smallest per-RTT minimum, us (0: none) */
	__u32 last_ack;		/* HyStart ACK train: last ACK, us (0: no train) */
	__u32 round_start;	/* HyStart ACK train: round start, us */
	__u32 window;		/* gradient window, fixed at init */
	__s32 last_grad;
	/* tcp_enter_cwr() emulation (difference 1). */
	__u32 cwr;		/* 1 while the emulated CWR runs */
	__u32 high_seq;		/* snd_nxt at the backoff: CWR ends once snd_una passes it */
	__u32 prior_cwnd;	/* cwnd at the backoff */
	__u32 cwr_delivered;	/* tp->delivered at the backoff (prr_delivered = since) */
	__u32 cwr_segs_out;	/* tp->data_segs_out at the backoff (prr_out = since) */
	__u32 cwr_lost;		/* tp->lost at the previous cong_avoid call */
	struct cdg_minmax gradients[CDG_WINDOW_MAX];	/* ring of the last window gradients */
};

/* Compiled-in defaults (documented in docs/kernel.md). */
const volatile struct cdg_params cdg_builtin_params = {
	.valid = 1,
	.window = CDG_WINDOW_DEFAULT,
	.backoff_beta = CDG_BACKOFF_BETA_DEFAULT,
	.backoff_factor = CDG_BACKOFF_FACTOR_DEFAULT,
	.hystart_detect = CDG_HYSTART_DETECT_DEFAULT,
	.use_ineff = CDG_USE_INEFF_DEFAULT,
	.use_shadow = CDG_USE_SHADOW_DEFAULT,
	.use_tolerance = CDG_USE_TOLERANCE_DEFAULT,
};

/* cdg_defaults, cdg_params, cdg_stats (bpf/cellcc.h). */
CELLCC_MAPS(cdg);

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct cdg_state);
} cdg_sk_state SEC(".maps");

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

CELLCC_PARAMS_FOR(cdg)

static __always_inline struct cdg_state *cdg_state_of(struct sock *sk)
{
	return bpf_sk_storage_get(&cdg_sk_state, sk, 0, 0);
}

static __always_inline int cdg_minmax_empty(const struct cdg_minmax *m)
{
	return m->min == 0 && m->max == 0;
}

/* ---- Backoff probability (twin of cdg/backoff.rs) ---- */

/* e^(-x) for x = 256 * 2^k us (k = 0..15) as a multiplier scaled by 2^16:
 * floor(65536 e^(-0.000256 * 2^k)), the reference's EXP_FACTORS. */
static const __u32 cdg_exp_factors[16] = {
	65519, 65502, 65468, 65401, 65268, 65001, 64471, 63423,
	61378, 57485, 50423, 38795, 22966, 8048, 988, 14,
};

/* nexp_u32: e^(-ux * 1e-6) * (2^32 - 1). From 2^24 on the result is below 2^-24: 0. */
static __always_inline __u32 cdg_nexp_u32(__u32 ux)
{
	__u32 msb = ux >> 8;
	__u32 res;
	int k;

	if (msb > 0xffff)
		return 0;
	/* The low 8 bits (x < 256e-6) linearly: e^(-x) ~ 1 - x. */
	res = 0xffffffffU - (ux & 0xff) * (0xffffffffU / 1000000);
	/* e^(-(a + b + ...)) = e^(-a) e^(-b) ...: one factor per set bit of x >> 8. */
#pragma unroll
	for (k = 0; k < 16; k++) {
		if (msb & (1U << k))
			res = ((__u64)res * cdg_exp_factors[k]) >> 16;
	}
	return res;
}

/* ---- CDG's HyStart (twin of cdg/hystart.rs) ---- */

/* tcp_cdg_hystart_update: in slow start, before the per-RTT step. */
static __always_inline void cdg_hystart_update(struct cdg_state *st, struct tcp_sock *tp,
					       __u32 detect)
{
	__u32 now_us, base_owd;
	__s32 thresh;

	/* min_not_zero(delay_min, rtt.min). */
	if (st->rtt.min > 0 && (st->delay_min == 0 || st->rtt.min < st->delay_min))
		st->delay_min = st->rtt.min;
	if (st->delay_min == 0)
		return;

	if (detect & CDG_HYSTART_ACK_TRAIN) {
		now_us = bpf_ktime_get_ns() / 1000;
		if (st->last_ack == 0 || !cellcc_is_cwnd_limited(tp)) {
			st->last_ack = now_us;
			st->round_start = now_us;
		} else if (cellcc_before(now_us, st->last_ack + CDG_ACK_TRAIN_GAP_US)) {
			base_owd = (__u32)st->delay_min / 2;
			if (base_owd < CDG_THRESH_FLOOR_US)
				base_owd = CDG_THRESH_FLOOR_US;
			st->last_ack = now_us;
			if (cellcc_after(now_us, st->round_start + base_owd)) {
				st->hystart_exits++;
				tp->snd_ssthresh = tp->snd_cwnd;
				return;
			}
		}
	}
	if (detect & CDG_HYSTART_DELAY) {
		if (st->sample_cnt < CDG_DELAY_MIN_SAMPLES) {
			st->sample_cnt++;
		} else {
			thresh = st->delay_min + (__u32)st->delay_min / 8;
			if (thresh < CDG_THRESH_FLOOR_US)
				thresh = CDG_THRESH_FLOOR_US;
			if (st->rtt.min > thresh) {
				st->hystart_exits++;
				tp->snd_ssthresh = tp->snd_cwnd;
			}
		}
	}
}

/* ---- Gradients, backoff, ssthresh (twin of cdg/mod.rs) ---- */

/* DIV_ROUND_CLOSEST for signed values. */
static __always_inline __s32 cdg_div_round_closest(__s32 x, __s32 d)
{
	if ((x > 0) == (d > 0))
		return cellcc_sdiv((__s64)x + d / 2, d);
	return cellcc_sdiv((__s64)x - d / 2, d);
}

/* tcp_cdg_grad: push this RTT's gradients into the window and return the backoff
 * signal, us. */
static __always_inline __s32 cdg_grad(struct cdg_state *st, const struct cdg_params *p)
{
	/* Hayes & Armitage Eq. (1): g_min = tau_min,n - tau_min,n-1; g_max likewise. */
	__s32 gmin = st->rtt.min - st->rtt_prev.min;
	__s32 gmax = st->rtt.max - st->rtt_prev.max;
	__u32 slot = st->tail & (CDG_WINDOW_MAX - 1);
	__u32 window = st->window;
	__s64 g;
	__s32 grad;

	/* Eq. (2)-(3) as moving sums over window RTTs (Linux). */
	st->gsum.min += gmin - st->gradients[slot].min;
	st->gsum.max += gmax - st->gradients[slot].max;
	st->gradients[slot].min = gmin;
	st->gradients[slot].max = gmax;
	st->tail = (st->tail + 1) & (window - 1);
	gmin = st->gsum.min;
	gmax = st->gsum.max;

	/* Section 3.2: the min-RTT gradient leads; the max-RTT gradient catches a queue
	 * that drains between RTT minima. */
	grad = gmin > 0 ? gmin : gmax;
	if (!st->gfilled) {
		if (st->tail == 0) {
			st->gfilled = 1;
		} else {
			/* Extrapolate the missing slots. */
			g = cellcc_sdiv((__s64)grad * window, st->tail);
			if (g > 0x7fffffffLL)
				g = 0x7fffffffLL;
			else if (g < -0x80000000LL)
				g = -0x80000000LL;
			grad = g;
		}
	}
	/* Section 3.3: a clear fall in delay shows the last backoff was effective. */
	if (gmin <= CDG_EFFECTIVE_GRAD_US || gmax <= CDG_EFFECTIVE_GRAD_US)
		st->backoff_cnt = 0;
	if (p->use_tolerance) {
		gmin = cdg_div_round_closest(gmin, CDG_TOLERANCE_UNIT_US);
		gmax = cdg_div_round_closest(gmax, CDG_TOLERANCE_UNIT_US);
		if (gmin > 0 && gmax <= 0)
			st->state = CDG_FULL;
		else if ((gmin > 0 && gmax > 0) || gmax < 0)
			st->state = CDG_NONFULL;
	}
	return grad;
}

/* tcp_cdg_ssthresh: sqrt(1/2) after a delay backoff; after a loss half of the larger of
 * cwnd and the shadow window. */
static __always_inline __u32 cdg_ssthresh_of(struct cdg_state *st, const struct tcp_sock *tp,
					     const struct cdg_params *p)
{
	__u32 cwnd = tp->snd_cwnd;
	__u32 beta, w;

	st->undo_cwnd = cwnd;
	if (st->state == CDG_BACKOFF) {
		beta = p->backoff_beta < CDG_BETA_SCALE ? p->backoff_beta : CDG_BETA_SCALE;
		w = ((__u64)cwnd * beta) >> 10;
		return w > CDG_MIN_SSTHRESH ? w : CDG_MIN_SSTHRESH;
	}
	if (st->state == CDG_NONFULL && p->use_tolerance)
		return cwnd;
	st->loss_ssthresh++;
	/* Section 3.4: a loss halves the shadow window (never above 2 cwnd). */
	st->shadow_wnd = (st->shadow_wnd >> 1) < cwnd ? st->shadow_wnd >> 1 : cwnd;
	w = cwnd >> 1;
	if (p->use_shadow && st->shadow_wnd > w)
		w = st->shadow_wnd;
	return w > CDG_MIN_SSTHRESH ? w : CDG_MIN_SSTHRESH;
}

/* tcp_enter_cwr() from Open or Disorder, emulated (difference 1):
 * tcp_init_cwnd_reduction() without the state change. */
static __always_inline void cdg_enter_cwr(struct cdg_state *st, struct tcp_sock *tp,
					  const struct cdg_params *p)
{
	st->cwr = 1;
	st->high_seq = tp->snd_nxt;
	st->prior_cwnd = tp->snd_cwnd;
	st->cwr_delivered = tp->delivered;
	st->cwr_segs_out = tp->data_segs_out;
	st->cwr_lost = tp->lost;
	tp->snd_cwnd_cnt = 0;
	tp->snd_ssthresh = cdg_ssthresh_of(st, tp, p);
}

/* One step of tcp_cwnd_reduction() (PRR, RFC 6937) in the emulated CWR; `acked` is
 * this ACK's newly acked or SACKed packets. */
static __always_inline void cdg_cwr_step(struct cdg_state *st, struct tcp_sock *tp,
					 __u32 acked)
{
	__s64 in_flight = cellcc_packets_in_flight(tp);
	__s64 ssthresh = tp->snd_ssthresh;
	__s64 delta = ssthresh - in_flight;
	__s64 prr_delivered = (__u32)(tp->delivered - st->cwr_delivered);
	__s64 prr_out = (__u32)(tp->data_segs_out - st->cwr_segs_out);
	__u32 newly_lost = tp->lost - st->cwr_lost;
	__s64 sndcnt, n;

	st->cwr_lost = tp->lost;
	if (acked == 0 || st->prior_cwnd == 0)
		return;
	if (delta < 0) {
		/* RFC 6937 section 3.1: pipe > ssthresh, send ssthresh/prior_cwnd of what
		 * is delivered. */
		sndcnt = (__s64)(((__u64)ssthresh * prr_delivered + st->prior_cwnd - 1) /
				 st->prior_cwnd) - prr_out;
	} else {
		/* Slow-start reduction bound: grow back to ssthresh at most as fast as
		 * delivered, plus one on a cumulative ACK without new loss (cong_avoid runs
		 * on ACKs that advance snd_una). */
		n = prr_delivered - prr_out;
		if (n < acked)
			n = acked;
		if (!newly_lost)
			n++;
		sndcnt = delta < n ? delta : n;
	}
	/* Force a (re)transmission upon entering the reduction. */
	if (sndcnt < (prr_out ? 0 : 1))
		sndcnt = prr_out ? 0 : 1;
	tp->snd_cwnd = in_flight + sndcnt;
}

/* CA_EVENT_COMPLETE_CWR: a fresh RTT window (gradients across a reduction are not
 * used). */
static __always_inline void cdg_complete_cwr(struct cdg_state *st, const struct tcp_sock *tp)
{
	st->state = CDG_UNKNOWN;
	st->rtt_seq = tp->snd_nxt;
	st->rtt_prev = st->rtt;
	st->rtt.min = 0;
	st->rtt.max = 0;
}

/* tcp_cdg_backoff: draw against 1 - e^(-grad * backoff_factor * 1e-6); on a backoff,
 * enter (emulated) CWR. Returns whether it backed off. */
static __always_inline int cdg_backoff(struct cdg_state *st, struct tcp_sock *tp,
				       const struct cdg_params *p, __u32 grad)
{
	__u64 x = (__u64)grad * p->backoff_factor;

	if (x > 0xffffffffULL)
		x = 0xffffffffULL;
	/* Hayes & Armitage Eq. (4): back off with probability 1 - e^(-g/G). */
	if (bpf_get_prandom_u32() <= cdg_nexp_u32(x))
		return 0;
	if (p->use_ineff) {
		st->backoff_cnt++;
		if (st->backoff_cnt > p->use_ineff) {
			/* Section 3.3: backoffs stopped lowering the delay; a loss-based flow
			 * owns the queue. */
			st->backoffs_ineffectual++;
			return 0;
		}
	}
	/* Section 3.4: the shadow window keeps the pre-backoff window for the next loss. */
	if (st->shadow_wnd < tp->snd_cwnd)
		st->shadow_wnd = tp->snd_cwnd;
	st->state = CDG_BACKOFF;
	st->backoffs++;
	cdg_enter_cwr(st, tp, p);
	return 1;
}

/* The gradient window of the parameters, or the default if it is not a power of two in
 * 1..256. */
static __always_inline __u32 cdg_window_of(const struct cdg_params *p)
{
	__u32 w = p->window;

	if (w == 0 || w > CDG_WINDOW_MAX || (w & (w - 1)))
		return CDG_WINDOW_DEFAULT;
	return w;
}

/* tcp_cdg_init / CA_EVENT_CWND_RESTART: forget everything but the key, the counters and
 * the window. */
static __always_inline void cdg_reset(struct cdg_state *st, const struct tcp_sock *tp)
{
	int i;

	st->rtt.min = 0;
	st->rtt.max = 0;
	st->rtt_prev = st->rtt;
	st->gsum = st->rtt;
	st->gfilled = 0;
	st->tail = 0;
	st->state = CDG_UNKNOWN;
	st->delack = 0;
	st->undo_cwnd = 0;
	st->backoff_cnt = 0;
	st->sample_cnt = 0;
	st->delay_min = 0;
	st->last_ack = 0;
	st->round_start = 0;
	st->last_grad = 0;
	st->cwr = 0;
	/* Only the first `window` slots are ever used. The empty asm keeps clang from
	 * turning the loop into a memset call, which BPF does not have. */
	for (i = 0; i < CDG_WINDOW_MAX; i++) {
		if (i >= st->window)
			break;
		st->gradients[i].min = 0;
		st->gradients[i].max = 0;
		asm volatile("" ::: "memory");
	}
	st->rtt_seq = tp->snd_nxt;
	st->shadow_wnd = tp->snd_cwnd;
}

static __always_inline void cdg_write_stats(struct sock *sk, const struct cdg_state *st,
					    __u32 released)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct cdg_stats s; /* every member is set below (no padding): no memset in BPF */
	struct cdg_stats *old;

	s.acks = st->acks;
	s.rtt_samples = st->rtt_samples;
	s.rounds = st->rounds;
	s.backoffs = st->backoffs;
	s.backoffs_ineffectual = st->backoffs_ineffectual;
	s.hystart_exits = st->hystart_exits;
	s.cwr_completions = st->cwr_completions;
	s.cwr_cut_short = st->cwr_cut_short;
	s.loss_ssthresh = st->loss_ssthresh;
	s.delivered = tp->delivered;
	s.updated_us = tp->tcp_mstamp;
	s.grad_us = st->last_grad;
	s.gsum_min_us = st->gsum.min;
	s.gsum_max_us = st->gsum.max;
	s.delay_min_us = st->delay_min;
	s.shadow_wnd = st->shadow_wnd;
	s.state = st->state;
	s.in_cwr = st->cwr;
	s.window = st->window;
	s.srtt_us = tp->srtt_us >> 3; /* srtt_us is stored << 3 */
	s.cwnd = tp->snd_cwnd;
	s.ssthresh = tp->snd_ssthresh;
	s.released = released;

	old = bpf_map_lookup_elem(&cdg_stats, &st->key);
	if (old)
		__builtin_memcpy(old, &s, sizeof(s));
	else
		bpf_map_update_elem(&cdg_stats, &st->key, &s, BPF_ANY);
}

/* ---- Hooks ---- */

/* tcp_cdg_init. */
SEC("struct_ops")
void BPF_PROG(cdg_init, struct sock *sk)
{
	struct cdg_state *st;

	st = bpf_sk_storage_get(&cdg_sk_state, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!st)
		return;
	st->key = cellcc_flow_key_of(sk);
	st->acks = 0;
	st->rtt_samples = 0;
	st->rounds = 0;
	st->backoffs = 0;
	st->backoffs_ineffectual = 0;
	st->hystart_exits = 0;
	st->cwr_completions = 0;
	st->cwr_cut_short = 0;
	st->loss_ssthresh = 0;
	st->window = cdg_window_of(cdg_params_for(&st->key));
	cdg_reset(st, (struct tcp_sock *)sk);
}

SEC("struct_ops")
void BPF_PROG(cdg_release, struct sock *sk)
{
	struct cdg_state *st = cdg_state_of(sk);

	if (!st)
		return;
	cdg_write_stats(sk, st, 1);
	bpf_map_delete_elem(&cdg_params, &st->key);
}

/* tcp_cdg_cong_avoid (the kernel calls it in Open and Disorder only); first the
 * emulated CWR's step or end. */
SEC("struct_ops")
void BPF_PROG(cdg_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct cdg_state *st = cdg_state_of(sk);
	const struct cdg_params *p;
	__u32 prior_cwnd, incr;
	__s32 grad;

	if (!st) {
		tcp_reno_cong_avoid(sk, ack, acked);
		return;
	}
	st->acks++;
	if (st->cwr) {
		if (!cellcc_after(tp->snd_una, st->high_seq)) {
			cdg_cwr_step(st, tp, acked);
			goto out;
		}
		/* tcp_end_cwnd_reduction() from CWR: cwnd := ssthresh, COMPLETE_CWR; then
		 * this ACK's cong_avoid as in Open. */
		st->cwr = 0;
		st->cwr_completions++;
		if (tp->snd_ssthresh < CDG_INFINITE_SSTHRESH) {
			tp->snd_cwnd = tp->snd_ssthresh;
			tp->snd_cwnd_stamp = (__u32)bpf_jiffies64();
		}
		cdg_complete_cwr(st, tp);
	}
	p = cdg_params_for(&st->key);

	if (cellcc_in_slow_start(tp) && p->hystart_detect)
		cdg_hystart_update(st, tp, p->hystart_detect);

	if (cellcc_after(ack, st->rtt_seq) && !cdg_minmax_empty(&st->rtt)) {
		grad = 0;
		if (!cdg_minmax_empty(&st->rtt_prev))
			grad = cdg_grad(st, p);
		st->rounds++;
		st->last_grad = grad;
		st->rtt_seq = tp->snd_nxt;
		st->rtt_prev = st->rtt;
		st->rtt.min = 0;
		st->rtt.max = 0;
		st->last_ack = 0;
		st->sample_cnt = 0;
		if (grad > 0 && cdg_backoff(st, tp, p, grad))
			goto out;
	}

	if (!cellcc_is_cwnd_limited(tp)) {
		if (st->shadow_wnd > tp->snd_cwnd)
			st->shadow_wnd = tp->snd_cwnd;
		goto out;
	}
	prior_cwnd = tp->snd_cwnd;
	tcp_reno_cong_avoid(sk, ack, acked);
	/* Section 3.4: the shadow window grows as cwnd does. */
	incr = tp->snd_cwnd - prior_cwnd;
	if (st->shadow_wnd + incr > st->shadow_wnd)
		st->shadow_wnd += incr;
out:
	cdg_write_stats(sk, st, 0);
}

/* tcp_cdg_acked: feed this RTT's min and max, filtering delayed ACKs. */
SEC("struct_ops")
void BPF_PROG(cdg_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct cdg_state *st;
	__s32 rtt_us = sample->rtt_us;

	if (rtt_us <= 0)
		return;
	st = cdg_state_of(sk);
	if (!st)
		return;
	st->rtt_samples++;
	/* Hayes, CAIA TR 100219A: a lone-packet ACK after stretch ACKs is likely delayed;
	 * it only lowers an existing minimum (an empty minimum stays empty). */
	if (tp->sacked_out == 0) {
		if (sample->pkts_acked == 1 && st->delack) {
			if (rtt_us < st->rtt.min)
				st->rtt.min = rtt_us;
			st->delack--;
			return;
		} else if (sample->pkts_acked > 1 && st->delack < CDG_DELACK_MAX) {
			st->delack++;
		}
	}
	if (st->rtt.min == 0 || rtt_us < st->rtt.min)
		st->rtt.min = rtt_us;
	if (rtt_us > st->rtt.max)
		st->rtt.max = rtt_us;
}

/* tcp_cdg_ssthresh. During the emulated CWR the kernel's own CWR would not call it (a
 * loss enters Recovery keeping the backoff's ssthresh): the emulation ends, ssthresh
 * stays (difference 1b). */
SEC("struct_ops")
__u32 BPF_PROG(cdg_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct cdg_state *st = cdg_state_of(sk);

	if (!st)
		return tcp_reno_ssthresh(sk);
	if (st->cwr) {
		st->cwr = 0;
		st->cwr_cut_short++;
		return tp->snd_ssthresh;
	}
	return cdg_ssthresh_of(st, tp, cdg_params_for(&st->key));
}

/* tcp_cdg_undo_cwnd. */
SEC("struct_ops")
__u32 BPF_PROG(cdg_undo_cwnd, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct cdg_state *st = cdg_state_of(sk);

	if (!st)
		return tcp_reno_undo_cwnd(sk);
	return tp->snd_cwnd > st->undo_cwnd ? tp->snd_cwnd : st->undo_cwnd;
}

/* tcp_cdg_cwnd_event: idle restart forgets everything; the end of CWR/Recovery starts a
 * fresh RTT window. */
SEC("struct_ops")
void BPF_PROG(cdg_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct cdg_state *st;

	if (event != CA_EVENT_CWND_RESTART && event != CA_EVENT_COMPLETE_CWR)
		return;
	st = cdg_state_of(sk);
	if (!st)
		return;
	if (event == CA_EVENT_CWND_RESTART)
		cdg_reset(st, tp);
	else
		cdg_complete_cwr(st, tp);
}

/* The kernel's own CWR, Recovery or Loss replaces an emulated CWR still running. */
SEC("struct_ops")
void BPF_PROG(cdg_set_state, struct sock *sk, __u8 new_state)
{
	struct cdg_state *st;

	if (new_state < TCP_CA_CWR)
		return;
	st = cdg_state_of(sk);
	if (st && st->cwr) {
		st->cwr = 0;
		st->cwr_cut_short++;
	}
}

SEC(".struct_ops.link")
struct tcp_congestion_ops cdg = {
	.init = (void *)cdg_init,
	.release = (void *)cdg_release,
	.ssthresh = (void *)cdg_ssthresh,
	.cong_avoid = (void *)cdg_cong_avoid,
	.set_state = (void *)cdg_set_state,
	.cwnd_event = (void *)cdg_cwnd_event,
	.pkts_acked = (void *)cdg_pkts_acked,
	.undo_cwnd = (void *)cdg_undo_cwnd,
	.name = "cellcc_cdg",
};
