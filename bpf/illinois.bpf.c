// SPDX-License-Identifier: GPL-2.0
/*
 * TCP-Illinois as a BPF struct_ops congestion control ("cellcc_illinois"), as Linux 6.x
 * runs it (net/ipv4/tcp_illinois.c), for kernels that do not ship tcp_illinois.
 *
 * Sources: S. Liu, T. Basar, R. Srikant, "TCP-Illinois: A loss- and delay-based
 * congestion control algorithm for high-speed networks", Performance Evaluation
 * 65(6-7), 2008, section 3 (alpha = f1(d_a), beta = f2(d_a)); Linux
 * net/ipv4/tcp_illinois.c. Reference mirrored here:
 * crates/cellcc-congestion/src/illinois/mod.rs.
 *
 * Model. Loss decides whether to back off, queueing delay how much: AIMD with an
 * additive increase alpha in [0.3, 10] packets per RTT and a multiplicative decrease
 * beta in [1/8, 1/2], both set once per RTT from the average queueing delay of the last
 * RTT, d_a = avg RTT - base RTT, relative to the largest seen, d_m = max RTT - base RTT.
 * Below win_thresh packets it is Reno (alpha = 1, beta = 1/2).
 *
 *   slow start (Reno) --loss--> congestion avoidance: cwnd += alpha/cwnd per ACK
 *                                 once per RTT:  d_a <= d_m/100 -> alpha := 10 (after theta)
 *                                                else alpha := k1/(k2 + d_a) in [0.3, 10]
 *                                                beta := 1/8 | linear | 1/2
 *                               loss: ssthresh := (1 - beta) * cwnd
 *                               RTO (Loss): alpha := 1, beta := 1/2, counters reset
 *
 * Fixed point as in Linux: alpha in 1/128 (ALPHA_SHIFT 7), beta in 1/64 (BETA_SHIFT 6).
 *
 * Differences from the Rust reference (and from Linux):
 * 1. None in the algorithm. Products are in 64 bits and cnt_rtt and acked are 32-bit, as
 *    in the reference (Linux: 32-bit products, 16-bit counters); beta's line is computed
 *    as beta_min + (beta_max - beta_min)(d_a - d2)/(d3 - d2), which is Linux's expression
 *    rearranged (the same integer) without its intermediate negative value.
 * 2. Slow start is the kernel's (tcp_slow_start kfunc); undo is Linux's
 *    max(cwnd, loss_cwnd) (the reference uses tcp_reno_undo_cwnd, max(cwnd, prior_cwnd),
 *    which is the same value whenever the stack calls ssthresh first).
 * 3. win_thresh and theta are read from the maps (per-flow override,
 *    illinois_defaults[0], then the built-in Linux defaults) once per RTT; Linux's module
 *    parameters are global.
 * 4. Per-socket state lives in a BPF_MAP_TYPE_SK_STORAGE map with the flow key and
 *    counters for illinois_stats; if it cannot be allocated the connection runs plain
 *    Reno. When the connection ends its illinois_params override is deleted and its
 *    stats entry is marked `released`.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "cellcc.h"

char _license[] SEC("license") = "GPL";

/* alpha in units of 1/128 (ALPHA_SHIFT). */
#define ILLINOIS_ALPHA_SHIFT 7
#define ILLINOIS_ALPHA_SCALE (1U << ILLINOIS_ALPHA_SHIFT)
/* Smallest alpha, ~0.3 packets/RTT (ALPHA_MIN = 3 * 128 / 10 = 38). */
#define ILLINOIS_ALPHA_MIN ((3 * ILLINOIS_ALPHA_SCALE) / 10)
/* Largest alpha, 10 packets/RTT. */
#define ILLINOIS_ALPHA_MAX (10 * ILLINOIS_ALPHA_SCALE)
/* Reno's alpha = 1, below win_thresh and after an RTO. */
#define ILLINOIS_ALPHA_BASE ILLINOIS_ALPHA_SCALE
/* Largest RTT sample taken, us (U32_MAX / ALPHA_MAX, ~3.36 s), as Linux. */
#define ILLINOIS_RTT_MAX_US (0xffffffffU / ILLINOIS_ALPHA_MAX)
/* beta in units of 1/64 (BETA_SHIFT). */
#define ILLINOIS_BETA_SHIFT 6
#define ILLINOIS_BETA_SCALE (1U << ILLINOIS_BETA_SHIFT)
/* beta range: 1/8 to 1/2 (Reno's, BETA_BASE). */
#define ILLINOIS_BETA_MIN (ILLINOIS_BETA_SCALE / 8)
#define ILLINOIS_BETA_MAX (ILLINOIS_BETA_SCALE / 2)
#define ILLINOIS_BETA_BASE ILLINOIS_BETA_MAX
/* "No RTT yet" for the base RTT. */
#define ILLINOIS_NO_RTT_US 0x7fffffffU
/* Smallest ssthresh after a loss, packets. */
#define ILLINOIS_MIN_SSTHRESH 2
/* Linux's module defaults (IllinoisConfig::default). */
#define ILLINOIS_WIN_THRESH_DEFAULT 15
#define ILLINOIS_THETA_DEFAULT 5

/* Per-connection parameters (Linux's module parameters), read once per RTT. */
struct illinois_params {
	__u32 valid;		/* 1: this entry is used; 0: fall through to the next source */
	__u32 win_thresh;	/* below this cwnd (packets): alpha = 1, beta = 1/2 (Reno) */
	__u32 theta;		/* low-delay RTTs before alpha returns to alpha_max */
};

/* What the connection reports, rewritten on every ACK. */
struct illinois_stats {
	__u64 acks;		/* cong_avoid calls */
	__u64 rtt_samples;	/* pkts_acked calls with an RTT sample */
	__u64 alpha_updates;	/* delay-based per-RTT updates (cwnd >= win_thresh) */
	__u64 alpha_at_max;	/* of those, alpha = alpha_max */
	__u64 alpha_sum;	/* sum of alpha over those, 1/128 */
	__u64 reno_updates;	/* per-RTT updates below win_thresh */
	__u64 rtos;		/* set_state(Loss) */
	__u64 delivered;	/* tp->delivered, packets */
	__u64 updated_us;	/* tcp_mstamp of the last update */
	__u32 alpha_x128;	/* alpha, 1/128 packets per RTT */
	__u32 beta_x64;		/* beta, 1/64 */
	__u32 base_rtt_us;	/* smallest RTT sample; 0x7fffffff = none */
	__u32 max_rtt_us;	/* largest RTT sample */
	__u32 avg_delay_us;	/* d_a of the last delay-based update */
	__u32 max_delay_us;	/* d_m of the last delay-based update */
	__u32 srtt_us;
	__u32 cwnd;
	__u32 ssthresh;
	__u32 released;		/* 1 once the connection released the congestion control */
};

/* Linux's struct illinois plus the key and counters. */
struct illinois_state {
	struct cellcc_flow_key key;	/* taken at init: the ports are gone by release */
	__u64 sum_rtt;		/* sum of this RTT's samples, us */
	__u64 acks;
	__u64 rtt_samples;
	__u64 alpha_updates;
	__u64 alpha_at_max;
	__u64 alpha_sum;
	__u64 reno_updates;
	__u64 rtos;
	__u32 cnt_rtt;		/* samples this RTT */
	__u32 base_rtt;		/* min of all samples, us */
	__u32 max_rtt;		/* max of all samples, us */
	__u32 end_seq;		/* the per-RTT update is due once an ACK passes this */
	__u32 alpha;		/* additive increase, 1/128 packets per RTT */
	__u32 beta;		/* multiplicative decrease, 1/64 */
	__u32 loss_cwnd;	/* cwnd at the last ssthresh call, for undo */
	__u32 acked;		/* packets acked by the current ACK (from pkts_acked) */
	__u32 rtt_above;	/* the average delay has been above d_m/100 */
	__u32 rtt_low;		/* consecutive low-delay RTTs since */
	__u32 last_da;
	__u32 last_dm;
};

/* Compiled-in defaults (documented in docs/kernel.md). */
const volatile struct illinois_params illinois_builtin_params = {
	.valid = 1,
	.win_thresh = ILLINOIS_WIN_THRESH_DEFAULT,
	.theta = ILLINOIS_THETA_DEFAULT,
};

/* illinois_defaults, illinois_params, illinois_stats (bpf/cellcc.h). */
CELLCC_MAPS(illinois);

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct illinois_state);
} illinois_sk_state SEC(".maps");

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;
extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __ksym;

CELLCC_PARAMS_FOR(illinois)

static __always_inline struct illinois_state *illinois_state_of(struct sock *sk)
{
	return bpf_sk_storage_get(&illinois_sk_state, sk, 0, 0);
}

/* rtt_reset: start the next RTT's average. */
static __always_inline void illinois_rtt_reset(struct illinois_state *st,
					       const struct tcp_sock *tp)
{
	st->end_seq = tp->snd_nxt;
	st->cnt_rtt = 0;
	st->sum_rtt = 0;
}

/* alpha(): alpha from the average queueing delay da and the largest dm, us. */
static __always_inline __u32 illinois_alpha(struct illinois_state *st, __u32 da, __u32 dm,
					    __u32 theta)
{
	/* Liu et al. 2008 section 3: d1 = 0.01 d_m. */
	__u32 d1 = dm / 100;
	__u64 dm1, da1, den;

	if (da <= d1) {
		if (!st->rtt_above)
			return ILLINOIS_ALPHA_MAX;
		/* Wait for theta low-delay RTTs before jumping back to alpha_max. */
		if (++st->rtt_low < theta)
			return st->alpha;
		st->rtt_low = 0;
		st->rtt_above = 0;
		return ILLINOIS_ALPHA_MAX;
	}
	st->rtt_above = 1;
	/* Liu et al. 2008 section 3: alpha = k1 / (k2 + d_a), with k1 = (d_m - d1) alpha_min
	 * alpha_max / (alpha_max - alpha_min) and k2 = (d_m - d1) alpha_min / (alpha_max -
	 * alpha_min) - d1; rearranged as in Linux. */
	dm1 = dm - d1;
	da1 = da - d1;
	den = dm1 + da1 * (ILLINOIS_ALPHA_MAX - ILLINOIS_ALPHA_MIN) / ILLINOIS_ALPHA_MIN;
	if (den == 0)
		return ILLINOIS_ALPHA_MAX;
	return dm1 * ILLINOIS_ALPHA_MAX / den;
}

/* beta(): beta from the average queueing delay da and the largest dm, us. */
static __always_inline __u32 illinois_beta(__u32 da, __u32 dm)
{
	/* Liu et al. 2008 section 3: d2 = 0.1 d_m, d3 = 0.8 d_m. */
	__u32 d2 = dm / 10;
	__u32 d3;

	if (da <= d2)
		return ILLINOIS_BETA_MIN;
	d3 = (__u64)8 * dm / 10;
	if (da >= d3 || d3 <= d2)
		return ILLINOIS_BETA_MAX;
	/* Liu et al. 2008 section 3: beta = k3 + k4 d_a, the line through (d2, beta_min)
	 * and (d3, beta_max). */
	return ((__u64)ILLINOIS_BETA_MIN * (d3 - d2) +
		(__u64)(ILLINOIS_BETA_MAX - ILLINOIS_BETA_MIN) * (da - d2)) / (d3 - d2);
}

/* update_params: once per RTT, alpha and beta from this RTT's delays. */
static __always_inline void illinois_update_params(struct illinois_state *st,
						   const struct tcp_sock *tp)
{
	const struct illinois_params *p = illinois_params_for(&st->key);
	__u32 dm, da;

	if (tp->snd_cwnd < p->win_thresh) {
		st->alpha = ILLINOIS_ALPHA_BASE;
		st->beta = ILLINOIS_BETA_BASE;
		st->reno_updates++;
	} else if (st->cnt_rtt > 0) {
		dm = st->max_rtt - st->base_rtt;
		da = st->sum_rtt / st->cnt_rtt - st->base_rtt;
		st->alpha = illinois_alpha(st, da, dm, p->theta);
		st->beta = illinois_beta(da, dm);
		st->last_da = da;
		st->last_dm = dm;
		st->alpha_updates++;
		st->alpha_at_max += st->alpha == ILLINOIS_ALPHA_MAX;
		st->alpha_sum += st->alpha;
	}
	illinois_rtt_reset(st, tp);
}

static __always_inline void illinois_write_stats(struct sock *sk,
						 const struct illinois_state *st,
						 __u32 released)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct illinois_stats s = {};
	struct illinois_stats *old;

	s.acks = st->acks;
	s.rtt_samples = st->rtt_samples;
	s.alpha_updates = st->alpha_updates;
	s.alpha_at_max = st->alpha_at_max;
	s.alpha_sum = st->alpha_sum;
	s.reno_updates = st->reno_updates;
	s.rtos = st->rtos;
	s.delivered = tp->delivered;
	s.updated_us = tp->tcp_mstamp;
	s.alpha_x128 = st->alpha;
	s.beta_x64 = st->beta;
	s.base_rtt_us = st->base_rtt;
	s.max_rtt_us = st->max_rtt;
	s.avg_delay_us = st->last_da;
	s.max_delay_us = st->last_dm;
	s.srtt_us = tp->srtt_us >> 3; /* srtt_us is stored << 3 */
	s.cwnd = tp->snd_cwnd;
	s.ssthresh = tp->snd_ssthresh;
	s.released = released;

	old = bpf_map_lookup_elem(&illinois_stats, &st->key);
	if (old)
		__builtin_memcpy(old, &s, sizeof(s));
	else
		bpf_map_update_elem(&illinois_stats, &st->key, &s, BPF_ANY);
}

/* tcp_illinois_init. */
SEC("struct_ops")
void BPF_PROG(illinois_init, struct sock *sk)
{
	struct illinois_state *st;

	st = bpf_sk_storage_get(&illinois_sk_state, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!st)
		return;
	__builtin_memset(st, 0, sizeof(*st));
	st->key = cellcc_flow_key_of(sk);
	st->alpha = ILLINOIS_ALPHA_MAX;
	st->beta = ILLINOIS_BETA_BASE;
	st->base_rtt = ILLINOIS_NO_RTT_US;
	illinois_rtt_reset(st, (struct tcp_sock *)sk);
}

SEC("struct_ops")
void BPF_PROG(illinois_release, struct sock *sk)
{
	struct illinois_state *st = illinois_state_of(sk);

	if (!st)
		return;
	illinois_write_stats(sk, st, 1);
	bpf_map_delete_elem(&illinois_params, &st->key);
}

/* tcp_illinois_acked: this ACK's packet count and RTT sample. */
SEC("struct_ops")
void BPF_PROG(illinois_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct illinois_state *st = illinois_state_of(sk);
	__s32 rtt_us = sample->rtt_us;
	__u32 rtt;

	if (!st)
		return;
	st->acked = sample->pkts_acked;
	/* ACKs without an RTT sample (rtt_us < 0) count packets only. */
	if (rtt_us < 0)
		return;
	rtt = rtt_us > ILLINOIS_RTT_MAX_US ? ILLINOIS_RTT_MAX_US : rtt_us;
	if (rtt < st->base_rtt)
		st->base_rtt = rtt;
	if (rtt > st->max_rtt)
		st->max_rtt = rtt;
	st->cnt_rtt++;
	st->sum_rtt += rtt;
	st->rtt_samples++;
}

/* tcp_illinois_cong_avoid. */
SEC("struct_ops")
void BPF_PROG(illinois_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct illinois_state *st = illinois_state_of(sk);
	__u64 delta;

	if (!st) {
		tcp_reno_cong_avoid(sk, ack, acked);
		return;
	}
	st->acks++;
	if (cellcc_after(ack, st->end_seq))
		illinois_update_params(st, tp);

	if (!cellcc_is_cwnd_limited(tp))
		goto out;
	if (cellcc_in_slow_start(tp)) {
		tcp_slow_start(tp, acked);
		goto out;
	}
	/* Liu et al. 2008 section 3: W += alpha / W per ACK, as a counter of packets acked
	 * since the last increment (Linux counts pkts_acked's value once, then 1 per call). */
	tp->snd_cwnd_cnt += st->acked;
	st->acked = 1;
	delta = ((__u64)tp->snd_cwnd_cnt * st->alpha) >> ILLINOIS_ALPHA_SHIFT;
	if (tp->snd_cwnd && delta >= tp->snd_cwnd) {
		__u64 cwnd = tp->snd_cwnd + delta / tp->snd_cwnd;

		tp->snd_cwnd = cwnd < tp->snd_cwnd_clamp ? cwnd : tp->snd_cwnd_clamp;
		tp->snd_cwnd_cnt = 0;
	}
out:
	illinois_write_stats(sk, st, 0);
}

/* tcp_illinois_ssthresh: cwnd - beta * cwnd, at least 2. */
SEC("struct_ops")
__u32 BPF_PROG(illinois_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct illinois_state *st = illinois_state_of(sk);
	__u32 cut, w;

	if (!st)
		return tcp_reno_ssthresh(sk);
	st->loss_cwnd = tp->snd_cwnd;
	/* Liu et al. 2008 section 3: W <- W - beta W on loss. */
	cut = ((__u64)tp->snd_cwnd * st->beta) >> ILLINOIS_BETA_SHIFT;
	w = tp->snd_cwnd - cut;
	return w > ILLINOIS_MIN_SSTHRESH ? w : ILLINOIS_MIN_SSTHRESH;
}

/* tcp_illinois_cwnd_undo. */
SEC("struct_ops")
__u32 BPF_PROG(illinois_undo_cwnd, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct illinois_state *st = illinois_state_of(sk);

	if (!st)
		return tcp_reno_undo_cwnd(sk);
	return tp->snd_cwnd > st->loss_cwnd ? tp->snd_cwnd : st->loss_cwnd;
}

/* tcp_illinois_state: an RTO resets alpha and beta to Reno's. */
SEC("struct_ops")
void BPF_PROG(illinois_set_state, struct sock *sk, __u8 new_state)
{
	struct illinois_state *st;

	if (new_state != TCP_CA_Loss)
		return;
	st = illinois_state_of(sk);
	if (!st)
		return;
	st->alpha = ILLINOIS_ALPHA_BASE;
	st->beta = ILLINOIS_BETA_BASE;
	st->rtt_low = 0;
	st->rtt_above = 0;
	st->rtos++;
	illinois_rtt_reset(st, (struct tcp_sock *)sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops illinois = {
	.init = (void *)illinois_init,
	.release = (void *)illinois_release,
	.ssthresh = (void *)illinois_ssthresh,
	.cong_avoid = (void *)illinois_cong_avoid,
	.set_state = (void *)illinois_set_state,
	.pkts_acked = (void *)illinois_pkts_acked,
	.undo_cwnd = (void *)illinois_undo_cwnd,
	.name = "cellcc_illinois",
};
