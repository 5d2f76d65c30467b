// SPDX-License-Identifier: GPL-2.0
/*
 * TCP Vegas as a BPF struct_ops congestion control ("cellcc_vegas"), as Linux 6.x runs
 * it (net/ipv4/tcp_vegas.c), for kernels that do not ship tcp_vegas.
 *
 * Sources: L. S. Brakmo, L. L. Peterson, "TCP Vegas: End to End Congestion Avoidance on
 * a Global Internet", IEEE JSAC 13(8), October 1995, section 3.2 (congestion avoidance)
 * and 3.3 (modified slow start); Linux net/ipv4/tcp_vegas.c. Reference mirrored here:
 * crates/cellcc-congestion/src/vegas/mod.rs (the simulator's Vegas, which `cellcc
 * validate` compares this program with).
 *
 * Model. baseRTT is the smallest RTT sample ever seen (+1 us). Once per RTT, with rtt the
 * smallest sample of the last RTT, diff = cwnd * (rtt - baseRTT) / baseRTT estimates the
 * packets queued (JSAC 3.2, Diff = (Expected - Actual) * BaseRTT). Congestion avoidance
 * adds one packet per RTT while diff < alpha, removes one while diff > beta and holds in
 * between; slow start doubles per RTT until diff > gamma, then sets cwnd to the rate
 * achieved (cwnd * baseRTT / rtt + 1). Loss handling is Reno's (kfuncs).
 *
 *               RTT with > gamma queued: cwnd := cwnd*baseRTT/rtt + 1
 *   slow start -----------------------------------------------> congestion avoidance
 *     (per ACK: +acked)                                        (once per RTT:)
 *       ^                                                        diff < alpha: +1
 *       | RTO / recovery: Vegas off (Reno) until Open again      alpha..beta: hold
 *       +--------------------------------------------------------diff > beta:  -1
 *
 * Vegas decides only in the Open state, after a full RTT of fresh samples, and only when
 * that RTT gave at least 3 samples (fewer are almost surely delayed ACKs: Reno growth).
 *
 * Differences from the Rust reference (and from Linux):
 * 1. None in the algorithm: the hooks are Linux's and the reference's, line for line.
 *    diff and the achieved-rate window are computed in 64 bits as in the reference
 *    (Linux's 32-bit cwnd * (rtt - baseRTT) wraps past 2^32); sequence numbers are
 *    Linux's 32-bit byte sequence numbers (the reference counts segments).
 * 2. Reno growth, slow start, ssthresh and undo are the kernel's own (tcp_reno_*,
 *    tcp_slow_start kfuncs), so the loss response is this kernel's, not the simulator's
 *    TCP model.
 * 3. alpha, beta and gamma are read from the maps (per-flow override, vegas_defaults[0],
 *    then the built-in Linux defaults) at each once-per-RTT decision; Linux's module
 *    parameters are global. alpha > beta is not rejected (Linux does not check either).
 * 4. Per-socket state lives in a BPF_MAP_TYPE_SK_STORAGE map with the flow key and
 *    counters for vegas_stats; if it cannot be allocated the connection runs plain Reno.
 * 5. When the connection releases the congestion control its vegas_params override is
 *    deleted and its vegas_stats entry is marked `released`.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "cellcc.h"

char _license[] SEC("license") = "GPL";

/* "No RTT yet" for baseRTT and the per-RTT minimum (tcp_vegas.c: 0x7fffffff). */
#define VEGAS_NO_RTT_US 0x7fffffffU
/* A round needs more than 2 samples before Vegas trusts it (tcp_vegas_cong_avoid). */
#define VEGAS_MIN_SAMPLES_PER_RTT 3
/* Smallest cwnd Vegas sets, packets (tcp_vegas_cong_avoid). */
#define VEGAS_MIN_CWND 2
/* Linux's module defaults (tcp_vegas.c; VegasConfig::default). */
#define VEGAS_ALPHA_DEFAULT 2
#define VEGAS_BETA_DEFAULT 4
#define VEGAS_GAMMA_DEFAULT 1

/* What the last decision did (reported in vegas_stats.decision). */
enum vegas_decision {
	VEGAS_RENO = 0,		/* Vegas off, or too few samples in the last RTT */
	VEGAS_SLOW_START = 1,
	VEGAS_LEAVE_SLOW_START = 2,
	VEGAS_INCREASE = 3,
	VEGAS_HOLD = 4,
	VEGAS_DECREASE = 5,
};

/* Per-connection parameters (Linux's module parameters), read at each decision. */
struct vegas_params {
	__u32 valid;		/* 1: this entry is used; 0: fall through to the next source */
	__u32 alpha;		/* fewer packets queued: cwnd += 1 per RTT */
	__u32 beta;		/* more packets queued: cwnd -= 1 per RTT */
	__u32 gamma;		/* leave slow start once more packets are queued */
};

/* What the connection reports, rewritten on every ACK. */
struct vegas_stats {
	__u64 acks;		/* cong_avoid calls */
	__u64 rtt_samples;	/* pkts_acked calls with an RTT sample */
	__u64 rounds;		/* once-per-RTT checks while Vegas was on */
	__u64 reno_rounds;	/* of those, with too few samples (Reno growth) */
	__u64 increases;	/* diff < alpha */
	__u64 holds;		/* alpha <= diff <= beta */
	__u64 decreases;	/* diff > beta */
	__u64 slow_start_exits;	/* diff > gamma in slow start */
	__u64 delivered;	/* tp->delivered, packets */
	__u64 updated_us;	/* tcp_mstamp of the last update */
	__u64 diff_pkts;	/* diff at the last decision */
	__u32 base_rtt_us;	/* baseRTT (+1 us, as Linux keeps it); 0x7fffffff = none */
	__u32 min_rtt_us;	/* rtt of the last decision (min of that RTT, +1 us) */
	__u32 srtt_us;
	__u32 cwnd;
	__u32 ssthresh;
	__u32 doing_vegas_now;	/* 1 while decisions are on (Open state) */
	__u32 decision;		/* enum vegas_decision of the last cong_avoid */
	__u32 released;		/* 1 once the connection released the congestion control */
};

/* Linux's struct vegas plus the key and counters. */
struct vegas_state {
	struct cellcc_flow_key key;	/* taken at init: the ports are gone by release */
	__u64 acks;
	__u64 rtt_samples;
	__u64 rounds;
	__u64 reno_rounds;
	__u64 increases;
	__u64 holds;
	__u64 decreases;
	__u64 slow_start_exits;
	__u64 last_diff;
	__u32 doing_vegas_now;	/* decisions on: Open state, after a fresh round started */
	__u32 beg_snd_nxt;	/* the decision is due once an ACK passes this */
	__u32 base_rtt_us;	/* baseRTT: min of all rtt + 1 us samples */
	__u32 min_rtt_us;	/* minRTT: min of this RTT's samples (+1 us) */
	__u32 cnt_rtt;		/* cntRTT: samples this RTT */
	__u32 last_min_rtt_us;	/* minRTT used by the last decision */
	__u32 decision;
	__u32 pad;
};

/* Compiled-in defaults (documented in docs/kernel.md). */
const volatile struct vegas_params vegas_builtin_params = {
	.valid = 1,
	.alpha = VEGAS_ALPHA_DEFAULT,
	.beta = VEGAS_BETA_DEFAULT,
	.gamma = VEGAS_GAMMA_DEFAULT,
};

/* vegas_defaults, vegas_params, vegas_stats (bpf/cellcc.h). */
CELLCC_MAPS(vegas);

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct vegas_state);
} vegas_sk_state SEC(".maps");

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;
extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __ksym;

CELLCC_PARAMS_FOR(vegas)

static __always_inline struct vegas_state *vegas_state_of(struct sock *sk)
{
	return bpf_sk_storage_get(&vegas_sk_state, sk, 0, 0);
}

/* vegas_enable: start a fresh round of samples; decide after it. */
static __always_inline void vegas_enable(struct vegas_state *st, const struct tcp_sock *tp)
{
	st->doing_vegas_now = 1;
	st->beg_snd_nxt = tp->snd_nxt;
	st->cnt_rtt = 0;
	st->min_rtt_us = VEGAS_NO_RTT_US;
}

/* tcp_vegas_init: forget baseRTT too. */
static __always_inline void vegas_restart(struct vegas_state *st, const struct tcp_sock *tp)
{
	st->base_rtt_us = VEGAS_NO_RTT_US;
	vegas_enable(st, tp);
}

static __always_inline void vegas_reno(struct sock *sk, struct vegas_state *st, __u32 ack,
				       __u32 acked)
{
	st->decision = VEGAS_RENO;
	tcp_reno_cong_avoid(sk, ack, acked);
}

/* The once-per-RTT decision from this RTT's minimum against baseRTT. */
static __always_inline void vegas_decide(struct sock *sk, struct vegas_state *st, __u32 acked)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	const struct vegas_params *p = vegas_params_for(&st->key);
	__u64 rtt = st->min_rtt_us;
	__u64 base = st->base_rtt_us;
	__u64 cwnd = tp->snd_cwnd;
	__u64 target_cwnd, diff;
	__u32 c;

	/* pkts_acked stores rtt + 1 us, so both are at least 1. */
	if (rtt == 0)
		rtt = 1;
	if (base == 0)
		base = 1;
	/* JSAC 3.2: Expected * baseRTT = cwnd; Actual * baseRTT = cwnd * baseRTT / rtt. */
	target_cwnd = cwnd * base / rtt;
	/* JSAC 3.2: Diff = (Expected - Actual) * BaseRTT, packets queued. */
	diff = rtt > base ? cwnd * (rtt - base) / base : 0;
	st->last_diff = diff;
	st->last_min_rtt_us = rtt;

	if (diff > p->gamma && cellcc_in_slow_start(tp)) {
		/* JSAC 3.3 (Linux's variant): leave slow start at the rate achieved, +1 for
		 * the integer truncation. */
		st->decision = VEGAS_LEAVE_SLOW_START;
		st->slow_start_exits++;
		c = target_cwnd + 1 < cwnd ? target_cwnd + 1 : cwnd;
		tp->snd_cwnd = c;
		if (tp->snd_ssthresh > c)
			tp->snd_ssthresh = c;
	} else if (cellcc_in_slow_start(tp)) {
		st->decision = VEGAS_SLOW_START;
		tcp_slow_start(tp, acked);
	} else if (diff > p->beta) {
		/* JSAC 3.2: Diff > beta, decrease linearly. */
		st->decision = VEGAS_DECREASE;
		st->decreases++;
		tp->snd_cwnd = tp->snd_cwnd - 1;
		if (tp->snd_ssthresh > tp->snd_cwnd)
			tp->snd_ssthresh = tp->snd_cwnd;
	} else if (diff < p->alpha) {
		/* JSAC 3.2: Diff < alpha, increase linearly. */
		st->decision = VEGAS_INCREASE;
		st->increases++;
		tp->snd_cwnd = tp->snd_cwnd + 1;
	} else {
		st->decision = VEGAS_HOLD;
		st->holds++;
	}
	if (tp->snd_cwnd < VEGAS_MIN_CWND)
		tp->snd_cwnd = VEGAS_MIN_CWND;
	else if (tp->snd_cwnd > tp->snd_cwnd_clamp)
		tp->snd_cwnd = tp->snd_cwnd_clamp;
	/* tcp_current_ssthresh() outside CWR/Recovery (cong_avoid runs in Open and
	 * Disorder only): max(ssthresh, 3/4 cwnd). */
	c = (tp->snd_cwnd >> 1) + (tp->snd_cwnd >> 2);
	if (tp->snd_ssthresh < c)
		tp->snd_ssthresh = c;
}

static __always_inline void vegas_write_stats(struct sock *sk, const struct vegas_state *st,
					      __u32 released)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct vegas_stats s = {};
	struct vegas_stats *old;

	s.acks = st->acks;
	s.rtt_samples = st->rtt_samples;
	s.rounds = st->rounds;
	s.reno_rounds = st->reno_rounds;
	s.increases = st->increases;
	s.holds = st->holds;
	s.decreases = st->decreases;
	s.slow_start_exits = st->slow_start_exits;
	s.delivered = tp->delivered;
	s.updated_us = tp->tcp_mstamp;
	s.diff_pkts = st->last_diff;
	s.base_rtt_us = st->base_rtt_us;
	s.min_rtt_us = st->last_min_rtt_us;
	s.srtt_us = tp->srtt_us >> 3; /* srtt_us is stored << 3 */
	s.cwnd = tp->snd_cwnd;
	s.ssthresh = tp->snd_ssthresh;
	s.doing_vegas_now = st->doing_vegas_now;
	s.decision = st->decision;
	s.released = released;

	old = bpf_map_lookup_elem(&vegas_stats, &st->key);
	if (old)
		__builtin_memcpy(old, &s, sizeof(s));
	else
		bpf_map_update_elem(&vegas_stats, &st->key, &s, BPF_ANY);
}

/* tcp_vegas_init. */
SEC("struct_ops")
void BPF_PROG(vegas_init, struct sock *sk)
{
	struct vegas_state *st;

	st = bpf_sk_storage_get(&vegas_sk_state, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!st)
		return;
	__builtin_memset(st, 0, sizeof(*st));
	st->key = cellcc_flow_key_of(sk);
	st->last_min_rtt_us = VEGAS_NO_RTT_US;
	vegas_restart(st, (struct tcp_sock *)sk);
}

SEC("struct_ops")
void BPF_PROG(vegas_release, struct sock *sk)
{
	struct vegas_state *st = vegas_state_of(sk);

	if (!st)
		return;
	vegas_write_stats(sk, st, 1);
	bpf_map_delete_elem(&vegas_params, &st->key);
}

/* tcp_vegas_cong_avoid: the once-per-RTT decision when the round that began at
 * beg_snd_nxt is acked; slow start per ACK in between. */
SEC("struct_ops")
void BPF_PROG(vegas_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct vegas_state *st = vegas_state_of(sk);

	if (!st) {
		tcp_reno_cong_avoid(sk, ack, acked);
		return;
	}
	st->acks++;
	if (!st->doing_vegas_now) {
		vegas_reno(sk, st, ack, acked);
	} else if (cellcc_after(ack, st->beg_snd_nxt)) {
		st->beg_snd_nxt = tp->snd_nxt;
		st->rounds++;
		if (st->cnt_rtt < VEGAS_MIN_SAMPLES_PER_RTT) {
			st->reno_rounds++;
			vegas_reno(sk, st, ack, acked);
		} else {
			vegas_decide(sk, st, acked);
		}
		/* Wipe the slate clean for the next RTT. */
		st->cnt_rtt = 0;
		st->min_rtt_us = VEGAS_NO_RTT_US;
	} else if (cellcc_in_slow_start(tp)) {
		st->decision = VEGAS_SLOW_START;
		tcp_slow_start(tp, acked);
	}
	vegas_write_stats(sk, st, 0);
}

/* tcp_vegas_pkts_acked: feed baseRTT and this RTT's minimum. */
SEC("struct_ops")
void BPF_PROG(vegas_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct vegas_state *st;
	__s32 rtt_us = sample->rtt_us;
	__u32 vrtt;

	if (rtt_us < 0)
		return;
	st = vegas_state_of(sk);
	if (!st)
		return;
	/* Never a zero RTT: Linux adds 1 us. */
	vrtt = (__u32)rtt_us + 1;
	if (vrtt > VEGAS_NO_RTT_US)
		vrtt = VEGAS_NO_RTT_US;
	if (vrtt < st->base_rtt_us)
		st->base_rtt_us = vrtt;
	if (vrtt < st->min_rtt_us)
		st->min_rtt_us = vrtt;
	st->cnt_rtt++;
	st->rtt_samples++;
}

/* tcp_vegas_state: Vegas runs only in Open; re-entering Open starts a fresh round. */
SEC("struct_ops")
void BPF_PROG(vegas_set_state, struct sock *sk, __u8 new_state)
{
	struct vegas_state *st = vegas_state_of(sk);

	if (!st)
		return;
	if (new_state == TCP_CA_Open)
		vegas_enable(st, (struct tcp_sock *)sk);
	else
		st->doing_vegas_now = 0;
}

/* tcp_vegas_cwnd_event: after idle, start over (baseRTT included). */
SEC("struct_ops")
void BPF_PROG(vegas_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	struct vegas_state *st;

	if (event != CA_EVENT_CWND_RESTART && event != CA_EVENT_TX_START)
		return;
	st = vegas_state_of(sk);
	if (st)
		vegas_restart(st, (struct tcp_sock *)sk);
}

SEC("struct_ops")
__u32 BPF_PROG(vegas_ssthresh, struct sock *sk)
{
	return tcp_reno_ssthresh(sk);
}

SEC("struct_ops")
__u32 BPF_PROG(vegas_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops vegas = {
	.init = (void *)vegas_init,
	.release = (void *)vegas_release,
	.ssthresh = (void *)vegas_ssthresh,
	.cong_avoid = (void *)vegas_cong_avoid,
	.set_state = (void *)vegas_set_state,
	.cwnd_event = (void *)vegas_cwnd_event,
	.pkts_acked = (void *)vegas_pkts_acked,
	.undo_cwnd = (void *)vegas_undo_cwnd,
	.name = "cellcc_vegas",
};
