// SPDX-License-Identifier: GPL-2.0
/*
 * PropRate as a BPF struct_ops TCP congestion control ("cellcc_proprate").
 *
 * Paper: W. K. Leong, Z. Wang, B. Leong, "TCP Congestion Control Beyond Bandwidth-Delay
 * Product for Mobile Cellular Networks", ACM CoNEXT 2017, doi:10.1145/3143361.3143378:
 * §3 (model, Eq. 1-8), §3.2 (negative-feedback loop, Eq. 9), §4 (states), §4.1 (buffer
 * delay), §4.2 (receive rate). No implementation by the authors is public. This file is a
 * port of the project's Rust reference, crates/cellcc-congestion/src/proprate/, and keeps
 * its decisions (numbered there 1-12 and in docs/algorithms/proprate.md).
 *
 * Model. From the TCP timestamps on the ACKs the sender estimates the receive rate rho
 * (bytes the receiver got between two of its own TSvals, over the last 50 distinct TSvals
 * or 500 ms, EWMA 1/8) and the buffer delay t_buff = RD - RD_min, RD = TSval of the ACK
 * minus the send tick of the newest (S)ACKed segment. It paces at sigma_f = k_f*rho until
 * t_buff >= T, then at sigma_d = k_d*rho until t_buff < T; the one-RTT lag of the signal
 * makes a sawtooth whose mean is the target t_buff_bar. k_f, k_d come from T and the base
 * RTT (Eq. 7 buffer full, Eq. 8 buffer emptied, Eq. 6 chooses); the NFL moves T until the
 * achieved mean meets the target. cwnd caps the flight at rho*(RTT + D_max).
 *
 *   init, RTO (any state)
 *        |
 *        v          rate estimate            t_buff >= T
 *  +------------+  from the burst   +-------------+ -------> +--------------+
 *  | SLOW_START |----------------->| BUFFER_FILL |          | BUFFER_DRAIN |
 *  +------------+                  |  k_f * rho  | <------- |  k_d * rho   |
 *   ^    | one tick only:          +-------------+ t_buff<T +--------------+
 *   +----+ burst x 2                     ^                    |        ^
 *                                        | new rho >= rho     | RTT*rho | new rho < rho
 *                                        |                    v packets|
 *                                        |               +---------------+
 *                                        +---------------|    MONITOR    |
 *                                                        | 10-pkt burst, |
 *                                                        | then k_d*rho/2|
 *                                                        +---------------+
 *
 * Differences from the Rust reference:
 *  1. Integer fixed point only: times in microseconds (the Rust reference uses
 *     nanoseconds), k_f, k_d and U in Q16 (U's fourth root by two integer square roots
 *     in Q31), ln() of the NFL by an integer log2 with 16 fractional bits (an NFL step
 *     of ln(20 ms) comes out as 2995 us instead of 2995.732 us), rho's EWMA rounded to
 *     the byte per second.
 *  2. Parameters come from maps and are re-read on every ACK (per-flow override,
 *     proprate_defaults[0], then the built-in defaults below), so they can change
 *     mid-flow. When t_buff_us changes, T restarts at the new target; with nfl = 0 T is
 *     the target. The Rust controller's configuration is fixed for the flow's life.
 *  3. Time parameters are clamped to 100 s and the base RTT to 10 s so every product
 *     fits 64 bits; rho_timestamps is clamped to [2, 64] (the window is a 64-slot ring
 *     in socket storage; the Rust window has no upper bound).
 *  4. The timestamp clock is read from the socket: 1 ms, or 1 us when the connection
 *     negotiated microsecond timestamps. The send tick adds tp->tsoffset, so that it is
 *     in the same clock as TSecr (Linux randomises the TS offset per connection).
 *  5. Packet accounting for bursts and the Drain -> Monitor cap uses tp->delivered,
 *     tp->lost and tcp_packets_in_flight() as 32-bit counters (wrapping arithmetic).
 *  6. The line rate of bursts is sk_max_pacing_rate (unlimited unless SO_MAX_PACING_RATE
 *     is set), as in the reference.
 * Differences from the paper: those of the reference (its header, items 1-12): L_max
 * default 120 ms, k_d clamped to [k_d_min, 0.99] and k_f >= 1.01, NFL with the negative
 * signs of Fig. 4 and ln of milliseconds, T within [1 ms, 4 * t_buff_bar], RD_min a 300 s
 * windowed minimum, RD from the newest (S)ACKed segment's send time (TSecr only on
 * in-order ACKs without an RTT sample), windows that saw an empty buffer only raise rho,
 * EDT pacing instead of per-tick packet counts, window cap rho*(RTT + D_max), bursts at
 * line rate, the Monitor rate folded into the EWMA, RTO -> Slow Start, no cwnd reduction
 * on loss.
 *
 * Requires TCP timestamps on both ends (net.ipv4.tcp_timestamps = 1, the default).
 *
 * Files. This one holds the parameters, the per-socket state, the integer helpers, the
 * model update and outputs (the twin of proprate/mod.rs), the hooks and the ops table.
 * Each part with a Rust twin in crates/cellcc-congestion/src/proprate/ is a header,
 * included where its section stands:
 *   bpf/proprate/estimators.h  timestamp window, rho, t_buff   estimators.rs
 *   bpf/proprate/params.h      regime, k_f, k_d (Eq. 6-8)      params.rs
 *   bpf/proprate/nfl.h         the NFL on T (Eq. 9)            nfl.rs
 *   bpf/proprate/states.h      states, bursts, transitions     states.rs
 *
 * Verifier: every division is guarded or has a structurally positive divisor; loops are
 * bounded and carry no data-dependent branch; the timestamp-window push, a window's
 * rate, Eq. 8 and the NFL step are global functions (checked once, not once per path).
 * State lives in socket storage; the only kernel writes are snd_cwnd, sk_pacing_rate
 * and sk_pacing_status.
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

/* Units are in the suffixes; "_x1000" is a real number times 1000. */
struct proprate_params {
	__u32 valid;            /* 1 = use this entry */
	__u32 t_buff_us;        /* target average buffer delay t_buff_bar (§3.1) */
	__u32 l_max_us;         /* maximum tolerable RTT L_max (Eq. 4-6) */
	__u32 nfl;              /* 1 = run the negative-feedback loop on T (§3.2) */
	__u32 rho_timestamps;   /* rho window: distinct receiver timestamps (§4.2), 2..64 */
	__u32 rho_window_us;    /* rho window: maximum span (§4.2) */
	__u32 rho_gain_x1000;   /* EWMA weight of each window rate */
	__u32 rd_min_window_ms; /* window of RD_min (§4.1 "the recent past") */
	__u32 burst_packets;    /* Slow Start and Monitor burst (§4) */
	__u32 cwnd_gain_x1000;  /* window cap in units of rho*(RTT + D_max) */
	__u32 k_d_min_x1000;    /* floor of k_d */
};

/* A snapshot written on every ACK. Rates in bits per second (as ss prints them). */
struct proprate_stats {
	__u32 state;             /* enum proprate_state */
	__u32 regime;            /* 0 buffer full (Eq. 7), 1 buffer emptied (Eq. 8) */
	__u64 rho_bps;           /* receive-rate estimate (0 before the first) */
	__u64 pacing_rate_bps;   /* sk_pacing_rate written, x8 (2^63 = line rate, a burst) */
	__u64 t_buff_us;         /* last buffer-delay sample */
	__u64 threshold_us;      /* T */
	__u64 t_actual_us;       /* the NFL's achieved buffer delay (Eq. 9) */
	__u64 target_us;         /* t_buff_bar in use */
	__u64 min_rtt_us;        /* base RTT of the formulas (tcp_min_rtt) */
	__u64 srtt_us;
	__u64 d_max_us;          /* peak buffer delay of the waveform */
	__u32 k_f_x1000;
	__u32 k_d_x1000;
	__u32 u_x1000;           /* utilisation the waveform aims for */
	__u32 cwnd;              /* snd_cwnd written, packets */
	__u64 acks;              /* cong_control calls */
	__u64 fill_to_drain;
	__u64 drain_to_fill;
	__u64 drain_to_monitor;
	__u64 monitor_to_fill;
	__u64 monitor_to_drain;
	__u64 slow_start_bursts; /* bursts sent in Slow Start (first, doubled, after RTO) */
	__u64 rtos;              /* set_state(Loss) */
	__u64 transitions;       /* Fill/Drain/Monitor changes, as the reference counts them */
};

const volatile struct proprate_params proprate_builtin_params = {
	.valid = 1,
	.t_buff_us = 40000,          /* PR(M), §5 */
	.l_max_us = 120000,          /* puts PR(M) at Eq. 6's crossover for a 40 ms RTT */
	.nfl = 1,
	.rho_timestamps = 50,        /* §4.2 */
	.rho_window_us = 500000,     /* §4.2 */
	.rho_gain_x1000 = 125,       /* 1/8, the weight of Eq. 9 */
	.rd_min_window_ms = 300000,  /* Linux's tcp_min_rtt_wlen */
	.burst_packets = 10,         /* §4 */
	.cwnd_gain_x1000 = 1000,
	.k_d_min_x1000 = 100,
};

/* proprate_defaults, proprate_params, proprate_stats (bpf/cellcc.h). */
CELLCC_MAPS(proprate);

/* ---- Constants ---- */

#define USEC_PER_SEC 1000000ULL
#define USEC_PER_MSEC 1000ULL
/* Fixed point of the gains: 1.0. */
#define Q16 65536ULL
/* k_f >= 1.01: Fill must outpace rho even with T at its floor (reference K_F_MIN). */
#define K_F_MIN_Q16 66191ULL
/* k_d <= 0.99: Drain must send below rho (reference K_D_MAX). */
#define K_D_MAX_Q16 64880ULL
/* Lowest threshold: one Linux timestamp tick; T = 0 would never leave Drain. */
#define T_MIN_US 1000ULL
/* Highest threshold as a multiple of t_buff_bar: anti-windup of the NFL. */
#define T_MAX_FACTOR 4
/* Smallest window cap: a few packets keep ACKs and both estimators going. */
#define CWND_MIN 4
/* rho is read as at least this many packets per second (Drain keeps probing). */
#define RHO_MIN_PACKETS_PER_SEC 10ULL
/* Base RTT before any sample: a typical cellular RTT. */
#define RTT_UNKNOWN_US 100000ULL
/* Clamps that keep every product below 2^64 (difference 3). */
#define TIME_PARAM_MAX_US 100000000ULL
#define RTT_MAX_US 10000000ULL
/* Slots of a timestamp window (difference 3). */
#define TSW_SLOTS 64
#define TSW_MASK (TSW_SLOTS - 1)
/* Offset mapping a signed RD into the unsigned order of the min filter. */
#define RD_BIAS 0x80000000U
/* ln(1000) in Q16, to turn ln(us) into ln(ms). */
#define LN_1000_Q16 452706ULL
/* ln(2) in Q16. */
#define LN_2_Q16 45426ULL

enum proprate_state {
	PR_SLOW_START = 0,
	PR_BUFFER_FILL = 1,
	PR_BUFFER_DRAIN = 2,
	PR_MONITOR = 3,
};

enum proprate_regime {
	PR_BUFFER_FULL = 0,
	PR_BUFFER_EMPTIED = 1,
};

/* ---- Per-socket state (socket storage: the windows do not fit icsk_ca_priv) ---- */

/* One receiver timestamp and tp->delivered at the last ACK carrying it. */
struct ts_point {
	__u32 tick;
	__u32 delivered;
	__u32 idle;      /* an ACK of this tick saw the bottleneck buffer empty */
	__u32 idle_cum;  /* idle points pushed into the window up to this one */
};

/* Sliding window of distinct receiver timestamps (§4.2), a ring of TSW_SLOTS. */
struct ts_window {
	__u32 head;        /* index of the oldest point */
	__u32 len;
	__u32 idle_total;  /* idle points ever pushed (running count for idle_cum) */
	__u32 pad;
	struct ts_point pts[TSW_SLOTS];
};

/* The kernel's windowed min filter, one sample: time (ms) and value. */
struct pr_minmax_sample {
	__u32 t;
	__u32 v;
};

struct proprate {
	__u32 inited;
	__u32 state;            /* enum proprate_state */
	__u32 slow_path;        /* this ACK had SACK blocks or did not advance snd_una */
	__u32 tick_us;          /* timestamp clock tick of the connection */
	/* The burst in progress (Slow Start, Monitor) and Drain's send mark: packets
	 * delivered, lost and in flight when it started. */
	__u32 burst_len;
	__u32 mark_delivered;
	__u32 mark_lost;
	__u32 mark_in_flight;
	/* Receive rate rho, bytes per second; 0 = no estimate yet. */
	__u64 rho;
	/* RD_min filter (values are RD + RD_BIAS, ticks) and the last t_buff. */
	struct pr_minmax_sample rd_min[3];
	__u32 has_t_buff;
	__u32 has_t_actual;
	__u64 t_buff_us;
	/* NFL (Eq. 9): t_actual and the current window (delivered at start, sum, count). */
	__u64 t_actual_us;
	__u32 nfl_started;
	__u32 nfl_start;
	__u64 nfl_sum_us;
	__u64 nfl_count;
	/* Threshold T and the target it was set for. */
	__u64 threshold_us;
	__u64 target_us;
	/* Gains in use. */
	__u32 regime;
	__u32 k_f_q16;
	__u32 k_d_q16;
	__u32 u_q16;
	__u64 d_max_us;
	/* Counters. */
	__u64 acks;
	__u64 fill_to_drain;
	__u64 drain_to_fill;
	__u64 drain_to_monitor;
	__u64 monitor_to_fill;
	__u64 monitor_to_drain;
	__u64 slow_start_bursts;
	__u64 rtos;
	__u64 transitions;
	struct ts_window rho_win;   /* rho's sliding window */
	struct ts_window burst_win; /* the timestamps of the burst in progress */
};

/* The scalar part of struct proprate, in 64-bit words (zeroed on reset). */
#define PR_SCALAR_WORDS (__builtin_offsetof(struct proprate, rho_win) / 8)
_Static_assert(__builtin_offsetof(struct proprate, rho_win) % 8 == 0, "windows 8-aligned");

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct proprate);
} proprate_sk SEC(".maps");

/* ---- Small integer helpers ---- */

/* min_u64, max_u64 and mul_sat are in bpf/cellcc.h. */

/* 1 if v != 0, for v < 2^63, without a branch. */
static __always_inline __u64 nz_bit(__u64 v)
{
	return (v | -v) >> 63;
}

/* Index of the top set bit of x (0 for x <= 1), by a branch-free binary search. */
static __always_inline __u64 msb64(__u64 x)
{
	__u64 msb = 0, n;

	n = nz_bit(x >> 32) * 32; msb += n; x >>= n;
	n = nz_bit(x >> 16) * 16; msb += n; x >>= n;
	n = nz_bit(x >> 8) * 8; msb += n; x >>= n;
	n = nz_bit(x >> 4) * 4; msb += n; x >>= n;
	n = nz_bit(x >> 2) * 2; msb += n; x >>= n;
	return msb + nz_bit(x >> 1);
}

/* sqrt(x) for 1 <= x < 2^62, within one unit: Newton's iteration from above,
 * 2^(msb/2 + 1) > sqrt(x); six steps reach 64-bit precision from that start. */
static __always_inline __u64 isqrt64(__u64 x)
{
	__u64 r = 1ULL << ((msb64(x) >> 1) + 1);
	int i;

#pragma clang loop unroll(full)
	for (i = 0; i < 7; i++)
		r = (r + x / r) >> 1;
	return r;
}

/* log2(x) in Q16 for 1 <= x < 2^62: integer part by a branch-free binary search, 16
 * fraction bits by repeated squaring of the mantissa in Q30. */
static __always_inline __u64 log2_q16(__u64 x)
{
	__u64 msb = msb64(x), y, frac = 0, b;
	int i;

	/* Mantissa in [1, 2) as Q30. */
	y = msb > 30 ? x >> (msb - 30) : x << (30 - msb);
#pragma clang loop unroll(full)
	for (i = 15; i >= 0; i--) {
		y = (y * y) >> 30;  /* in [1, 4) */
		b = y >> 31;        /* >= 2 */
		y >>= b;
		frac |= b << i;
	}
	return (msb << 16) | frac;
}

/* PropRate §3.2: one NFL step, ln(diff in ms) in ms, returned in us; zero for
 * differences up to 1 ms. A global function: the verifier checks it once, not once per
 * path that reaches it. */
__noinline __u64 proprate_nfl_step_us(__u64 diff_us)
{
	__u64 ln_q16;

	if (diff_us <= USEC_PER_MSEC || diff_us >= (1ULL << 62))
		return 0;
	ln_q16 = (log2_q16(diff_us) * LN_2_Q16) >> 16;
	if (ln_q16 <= LN_1000_Q16)
		return 0;
	return ((ln_q16 - LN_1000_Q16) * USEC_PER_MSEC + Q16 / 2) >> 16;
}

/* ---- Parameters ---- */

CELLCC_PARAMS_FOR(proprate)

/* The parameters in use, clamped into the ranges the arithmetic assumes. */
struct pr_cfg {
	__u64 t_buff_us;
	__u64 l_max_us;
	__u64 rho_window_us;
	__u32 nfl;
	__u32 rho_points;
	__u32 rho_gain_x1000;
	__u32 rd_min_window_ms;
	__u32 burst_packets;
	__u32 cwnd_gain_x1000;
	__u32 k_d_min_q16;
};

static __always_inline void proprate_cfg(const struct proprate_params *p, struct pr_cfg *c)
{
	c->t_buff_us = min_u64(max_u64(p->t_buff_us, T_MIN_US), TIME_PARAM_MAX_US);
	c->l_max_us = min_u64(p->l_max_us, TIME_PARAM_MAX_US);
	c->rho_window_us = min_u64(max_u64(p->rho_window_us, 1), TIME_PARAM_MAX_US);
	c->nfl = p->nfl;
	c->rho_points = min_u64(max_u64(p->rho_timestamps, 2), TSW_SLOTS);
	c->rho_gain_x1000 = min_u64(max_u64(p->rho_gain_x1000, 1), 1000);
	c->rd_min_window_ms = max_u64(p->rd_min_window_ms, 1);
	c->burst_packets = min_u64(max_u64(p->burst_packets, 1), 1 << 16);
	c->cwnd_gain_x1000 = min_u64(max_u64(p->cwnd_gain_x1000, 1000), 100000);
	c->k_d_min_q16 = min_u64(max_u64(p->k_d_min_x1000, 1), 999) * Q16 / 1000;
}

/* ---- Socket accounting ---- */

static __always_inline __u32 pr_in_flight(const struct tcp_sock *tp)
{
	/* tcp_packets_in_flight(): packets_out - left_out + retrans_out */
	return tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out;
}

static __always_inline void pr_mark(struct proprate *ca, const struct tcp_sock *tp)
{
	ca->mark_delivered = tp->delivered;
	ca->mark_lost = tp->lost;
	ca->mark_in_flight = pr_in_flight(tp);
}

/* Packets delivered or marked lost since the mark. */
static __always_inline __u32 pr_resolved_since(const struct proprate *ca, const struct tcp_sock *tp)
{
	return (tp->delivered - ca->mark_delivered) + (tp->lost - ca->mark_lost);
}

/* Packets sent (new or retransmitted) since the mark: growth of resolved + in flight. */
static __always_inline __u32 pr_sent_since(const struct proprate *ca, const struct tcp_sock *tp)
{
	__u64 now = (__u64)pr_resolved_since(ca, tp) + pr_in_flight(tp);

	return now > ca->mark_in_flight ? now - ca->mark_in_flight : 0;
}

/* The connection's base RTT: tcp_min_rtt(), else srtt, else 100 ms. */
static __always_inline __u64 pr_base_rtt_us(const struct tcp_sock *tp)
{
	__u32 m = tp->rtt_min.s[0].v;

	if (m != ~0U)
		return min_u64(m, RTT_MAX_US);
	if (tp->srtt_us)
		return min_u64(tp->srtt_us >> 3, RTT_MAX_US);
	return RTT_UNKNOWN_US;
}

/* ---- Timestamp window and estimators (§4.1, §4.2): proprate/estimators.h ---- */
#include "proprate/estimators.h"

/* ---- Gains (Eq. 3-8): proprate/params.h ---- */
#include "proprate/params.h"

/* ---- NFL (§3.2, Eq. 9): proprate/nfl.h ---- */
#include "proprate/nfl.h"

/* ---- Model update (PropRate::update_model in proprate/mod.rs) ---- */


/* Fold the ACK into t_buff, rho and the NFL; recompute the gains. Returns 1 and the
 * t_buff sample in *t_buff if the ACK gave one. */
static __always_inline int pr_update_model(struct proprate *ca, struct tcp_sock *tp,
					   const struct rate_sample *rs, const struct pr_cfg *c,
					   __u64 *t_buff)
{
	int in_slow_start = ca->state == PR_SLOW_START, have = 0;
	__u32 min, biased, idle = 0;
	__s32 rd;

	/* Parameters may change mid-flow (difference 2). */
	if (c->t_buff_us != ca->target_us || !c->nfl) {
		ca->target_us = c->t_buff_us;
		ca->threshold_us = c->t_buff_us;
	}
	if (pr_relative_delay(ca, tp, rs, &rd)) {
		biased = (__u32)rd + RD_BIAS;
		min = pr_running_min(ca->rd_min, c->rd_min_window_ms,
				     (__u32)(tp->tcp_mstamp / USEC_PER_MSEC), biased);
		/* PropRate §4.1: t_buff = RD - RD_min. */
		*t_buff = (__u64)(biased - min) * ca->tick_us;
		ca->t_buff_us = *t_buff;
		ca->has_t_buff = 1;
		have = 1;
		/* Within one tick of RD_min is an empty buffer, given both clocks' rounding. */
		idle = *t_buff <= ca->tick_us;
	}
	if (!in_slow_start) {
		/* §4.2: a new receiver timestamp completes the window as it stood. */
		__u64 sample = proprate_tsw_rate(&ca->rho_win, tp->mss_cache, ca->tick_us);
		__u32 sender_limited = tsw_saw_idle(&ca->rho_win);
		struct tsw_limits lim = {
			.max_points = c->rho_points,
			.max_span_ticks = max_u64(c->rho_window_us / ca->tick_us, 1),
		};

		if (proprate_tsw_push(&ca->rho_win, tp->rx_opt.rcv_tsval, tp->delivered, idle, &lim) &&
		    !rs->is_app_limited && sample &&
		    !(sender_limited && ca->rho && sample < ca->rho))
			pr_rho_fold(ca, sample, c->rho_gain_x1000);
		if (have)
			pr_update_threshold(ca, tp, c, *t_buff);
	}
	pr_update_gains(ca, c, pr_base_rtt_us(tp));
	return have;
}

/* ---- States (§4): proprate/states.h ---- */
#include "proprate/states.h"

/* ---- Outputs ---- */

/* The burst in progress has unsent packets (Slow Start: always a burst). */
static __always_inline int pr_in_burst(const struct proprate *ca, const struct tcp_sock *tp)
{
	if (ca->state == PR_SLOW_START)
		return 1;
	return ca->state == PR_MONITOR && pr_burst_unsent(ca, tp) > 0;
}

static __always_inline void pr_set_pacing_rate(struct proprate *ca, struct sock *sk, struct tcp_sock *tp)
{
	__u64 max_rate = sk->sk_max_pacing_rate, gain, rate;

	if (pr_in_burst(ca, tp)) {
		rate = max_rate;
	} else {
		if (ca->state == PR_BUFFER_FILL)
			gain = ca->k_f_q16;            /* sigma_f = k_f·rho (§3) */
		else if (ca->state == PR_BUFFER_DRAIN)
			gain = ca->k_d_q16;            /* sigma_d = k_d·rho (§3) */
		else
			gain = ca->k_d_q16 / 2;        /* sigma_m = sigma_d/2 (§4) */
		rate = mul_sat(pr_rho_floor(ca, tp->mss_cache), gain) >> 16;
	}
	/* A zero rate would mean "unpaced". */
	sk->sk_pacing_rate = min_u64(max_u64(rate, 1), max_u64(max_rate, 1));
}

static __always_inline void pr_set_cwnd(struct proprate *ca, struct tcp_sock *tp, const struct pr_cfg *c)
{
	__u32 mss = tp->mss_cache ? tp->mss_cache : 1;
	__u64 cwnd, bytes;

	if (pr_in_burst(ca, tp)) {
		cwnd = max_u64((__u64)pr_in_flight(tp) + pr_burst_unsent(ca, tp), 1);
	} else {
		/* Window cap: ⌈cwnd_gain·rho·(RTT + D_max)/MSS⌉ packets, at least 4. */
		bytes = mul_sat(pr_rho_floor(ca, mss), pr_base_rtt_us(tp) + ca->d_max_us) / USEC_PER_SEC;
		bytes = mul_sat(bytes, c->cwnd_gain_x1000) / 1000;
		cwnd = max_u64((bytes + mss - 1) / mss, CWND_MIN);
	}
	tp->snd_cwnd = min_u64(cwnd, tp->snd_cwnd_clamp);
}

static __always_inline void pr_write_stats(struct proprate *ca, struct sock *sk, struct tcp_sock *tp,
					   const struct cellcc_flow_key *key)
{
	struct proprate_stats st = {};

	st.state = ca->state;
	st.regime = ca->regime;
	st.rho_bps = ca->rho * 8;
	st.pacing_rate_bps = mul_sat(sk->sk_pacing_rate, 8);
	st.t_buff_us = ca->t_buff_us;
	st.threshold_us = ca->threshold_us;
	st.t_actual_us = ca->t_actual_us;
	st.target_us = ca->target_us;
	st.min_rtt_us = pr_base_rtt_us(tp);
	st.srtt_us = tp->srtt_us >> 3;
	st.d_max_us = ca->d_max_us;
	st.k_f_x1000 = ((__u64)ca->k_f_q16 * 1000) >> 16;
	st.k_d_x1000 = ((__u64)ca->k_d_q16 * 1000) >> 16;
	st.u_x1000 = ((__u64)ca->u_q16 * 1000) >> 16;
	st.cwnd = tp->snd_cwnd;
	st.acks = ca->acks;
	st.fill_to_drain = ca->fill_to_drain;
	st.drain_to_fill = ca->drain_to_fill;
	st.drain_to_monitor = ca->drain_to_monitor;
	st.monitor_to_fill = ca->monitor_to_fill;
	st.monitor_to_drain = ca->monitor_to_drain;
	st.slow_start_bursts = ca->slow_start_bursts;
	st.rtos = ca->rtos;
	st.transitions = ca->transitions;
	bpf_map_update_elem(&proprate_stats, key, &st, BPF_ANY);
}

/* ---- Hooks ---- */

static __always_inline struct proprate *proprate_state(struct sock *sk)
{
	return bpf_sk_storage_get(&proprate_sk, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
}

/* Fresh state: Slow Start with the first burst. */
static __always_inline void proprate_reset(struct proprate *ca, struct sock *sk, const struct pr_cfg *c)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	__u64 rtt = pr_base_rtt_us(tp);

	__u64 *words = (__u64 *)ca;
	int i;

	/* Zero everything before the windows (memset of this size is not a BPF builtin). */
	for (i = 0; i < PR_SCALAR_WORDS; i++)
		words[i] = 0;
	tsw_clear(&ca->rho_win);
	tsw_clear(&ca->burst_win);
	ca->inited = 1;
	ca->tick_us = tp->tcp_usec_ts ? 1 : USEC_PER_MSEC;
	ca->rd_min[0].v = ~0U;
	ca->rd_min[1].v = ~0U;
	ca->rd_min[2].v = ~0U;
	ca->target_us = c->t_buff_us;
	ca->threshold_us = c->t_buff_us;
	pr_update_gains(ca, c, rtt);
	pr_restart_slow_start(ca, tp, c);
}

SEC("struct_ops")
void BPF_PROG(proprate_init, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct cellcc_flow_key key;
	struct pr_cfg c;
	struct proprate *ca;

	/* Rate-based: the stack paces at sk_pacing_rate (no fq qdisc needed). */
	sk->sk_pacing_status = SK_PACING_NEEDED;
	ca = proprate_state(sk);
	if (!ca)
		return;
	key = cellcc_flow_key_of(sk);
	proprate_cfg(proprate_params_for(&key), &c);
	proprate_reset(ca, sk, &c);
	pr_set_pacing_rate(ca, sk, tp);
	pr_set_cwnd(ca, tp, &c);
}

/* The per-ACK recipe: update_model -> update_state -> set_pacing_rate -> set_cwnd. */
SEC("struct_ops")
void BPF_PROG(proprate_cong_control, struct sock *sk, __u32 ack, int flag,
	      const struct rate_sample *rs)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct cellcc_flow_key key;
	struct proprate *ca;
	struct pr_cfg c;
	__u64 t_buff = 0;
	int have;

	ca = proprate_state(sk);
	if (!ca)
		return;
	key = cellcc_flow_key_of(sk);
	proprate_cfg(proprate_params_for(&key), &c);
	if (!ca->inited)
		proprate_reset(ca, sk, &c);
	ca->acks++;
	have = pr_update_model(ca, tp, rs, &c, &t_buff);
	pr_update_state(ca, tp, &c, have, t_buff);
	pr_set_pacing_rate(ca, sk, tp);
	pr_set_cwnd(ca, tp, &c);
	pr_write_stats(ca, sk, tp, &key);
}

/* Losses do not change the rate (§4.3): ssthresh stays. */
SEC("struct_ops")
__u32 BPF_PROG(proprate_ssthresh, struct sock *sk)
{
	return ((struct tcp_sock *)sk)->snd_ssthresh;
}

/* A spurious timeout or recovery: the rate never changed; keep the window. */
SEC("struct_ops")
__u32 BPF_PROG(proprate_undo_cwnd, struct sock *sk)
{
	return ((struct tcp_sock *)sk)->snd_cwnd;
}

/* §4: a retransmission timeout returns to Slow Start (the stack has set cwnd to
 * in_flight + 1; the burst starts with the next ACK's window). */
SEC("struct_ops")
void BPF_PROG(proprate_set_state, struct sock *sk, __u8 new_state)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct cellcc_flow_key key;
	struct proprate *ca;
	struct pr_cfg c;

	if (new_state != TCP_CA_Loss)
		return;
	ca = proprate_state(sk);
	if (!ca || !ca->inited)
		return;
	key = cellcc_flow_key_of(sk);
	proprate_cfg(proprate_params_for(&key), &c);
	ca->rtos++;
	pr_restart_slow_start(ca, tp, &c);
	pr_set_pacing_rate(ca, sk, tp);
}

/* Restart after idle: the idle time is not a receive rate. */
SEC("struct_ops")
void BPF_PROG(proprate_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	struct proprate *ca;

	if (event != CA_EVENT_TX_START)
		return;
	ca = proprate_state(sk);
	if (ca && ca->inited)
		tsw_clear(&ca->rho_win);
}

/* Remember whether the ACK took the slow path (SACK blocks, no snd_una advance): TSecr
 * is then not used for RD. */
SEC("struct_ops")
void BPF_PROG(proprate_in_ack_event, struct sock *sk, __u32 flags)
{
	struct proprate *ca = proprate_state(sk);

	if (ca)
		ca->slow_path = (flags & CA_ACK_SLOWPATH) ? 1 : 0;
}

SEC(CELLCC_STRUCT_OPS_SEC)
struct tcp_congestion_ops proprate = {
	.init = (void *)proprate_init,
	.cong_control = (void *)proprate_cong_control,
	.ssthresh = (void *)proprate_ssthresh,
	.undo_cwnd = (void *)proprate_undo_cwnd,
	.set_state = (void *)proprate_set_state,
	.cwnd_event = (void *)proprate_cwnd_event,
	.in_ack_event = (void *)proprate_in_ack_event,
	.name = "cellcc_proprate",
};
