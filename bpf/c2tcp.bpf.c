// SPDX-License-Identifier: GPL-2.0
/*
 * C2TCP as a BPF struct_ops congestion control ("cellcc_c2tcp"), JSAC version, on top of
 * the kernel's own CUBIC.
 *
 * Source: S. Abbasloo, Y. Xu, H. J. Chao, "C2TCP: A Flexible Cellular TCP to Meet
 * Stringent Delay Requirements", IEEE JSAC 37(4), April 2019: Condition Detector
 * (Algorithm 1), Action Enforcer (Algorithm 2, Eq. (1)); the Tuner (Algorithm 3) runs in
 * user space (`cellcc-kernel tune`), as in the paper's design. Reference implementation
 * mirrored here: crates/cellcc-congestion/src/c2tcp/ with `fidelity = "paper"`.
 *
 * Model. Every hook is CUBIC's, called through the cubictcp_* kfuncs; kernel CUBIC owns
 * icsk_ca_priv. C2TCP runs at the end of pkts_acked (after CUBIC's own pkts_acked, before
 * CUBIC's cong_avoid on the same ACK), on every ACK with an RTT sample:
 *
 *                    rtt < Setpoint: cwnd += Setpoint/rtt per RTT (Eq. (1))
 *             +------------------------------------------------------+
 *             v                                                      |
 *         +------+  rtt >= Setpoint   +--------+  Interval with no   +-----+
 *  ACK -->| good |------------------->| normal |--------------------->| bad |--+
 *         +------+  next := now + IV  +--------+  rtt < Setpoint:    +-----+  |
 *             ^                                  ssthresh := CUBIC's,         |
 *             |                                  cwnd := 1, N += 1            |
 *             +------------- rtt < Setpoint -------------- every IV/sqrt(N) --+
 *
 * Setpoint = alpha * MINRTT (MINRTT: lifetime minimum RTT), Interval := Setpoint on Good
 * samples. alpha and the Tuner's Target are per connection: c2tcp_params[flow], else
 * c2tcp_defaults[0], else c2tcp_builtin_params (see bpf/cellcc.h).
 *
 * Differences from the Rust reference (fidelity = "paper"):
 * 1. The base is the running kernel's CUBIC (kfuncs), not the simulator's CUBIC model; its
 *    version-specific behaviour (HyStart, RFC 9438 details) is whatever this kernel has.
 * 2. Times are integer microseconds (tcp_mstamp and ack_sample.rtt_us), not nanoseconds;
 *    alpha is a x100 integer (the reference keeps thousandths), so Setpoint is
 *    floor(MINRTT_us * alpha_x100 / 100).
 * 3. alpha is clamped to [1, 10] (JSAC Algorithm 3's bounds) on every ACK, whatever user
 *    space wrote; an alpha outside the range is not an error in the map.
 * 4. The Tuner is not in the controller: user space reads the cumulative RTT sum and
 *    sample count from c2tcp_stats and writes alpha into c2tcp_params (period set there,
 *    not ACK-clocked). The target schedule of the reference config does not exist here;
 *    the Target is a parameter that only the user-space Tuner reads.
 * 5. The Open/Disorder gate (reference item 7) uses the state last passed to set_state,
 *    which is the state the kernel has on this ACK.
 * 6. Interval/sqrt(N) uses CoDel's control law (the reference's `fidelity = "linux"`
 *    spacing): a Q0.16 estimate of 1/sqrt(N) improved by one Newton step per back-off,
 *    seeded with one step from 1.0 when an episode opens, so the gaps after the first
 *    back-off are Interval x 1.0, 0.5, 0.56, 0.49, ... instead of 1/sqrt(1), 1/sqrt(2)...
 *    An exact integer square root needs a loop whose paths the verifier cannot bound.
 * 7. Per-socket state lives in a BPF_MAP_TYPE_SK_STORAGE map (kernel CUBIC owns
 *    icsk_ca_priv); if the storage cannot be allocated the connection runs plain CUBIC.
 * 8. The flow's c2tcp_params override is deleted when the connection releases the
 *    congestion control; its c2tcp_stats entry stays (LRU) with `released` = 1.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "cellcc.h"

char _license[] SEC("license") = "GPL";

/* alpha_x100 of alpha = 1. */
#define C2TCP_ALPHA_ONE 100
/* JSAC Algorithm 3 lines 3-4: min_alpha = 1, max_alpha = 10. */
#define C2TCP_ALPHA_MIN 100
#define C2TCP_ALPHA_MAX 1000
/* Default alpha: 1.5, the reference Tuner's starting value (C2tcpConfig::default). */
#define C2TCP_ALPHA_DEFAULT 150
/* Default Target for the Tuner: 50 ms, the JSAC evaluation's default. */
#define C2TCP_TARGET_DEFAULT_US 50000
/* Fraction bits of the Eq. (1) credit, as the reference enforcer's Q16 counter. */
#define C2TCP_CREDIT_SHIFT 16
/* CoDel's Q0.16 reciprocal square root (rec_inv_sqrt): 0xffff ~ 1.0. */
#define C2TCP_REC_INV_SQRT_ONE 0xffff
#define C2TCP_REC_INV_SQRT_SHIFT 16

/* Condition Detector states (JSAC section III-B1), as reported in c2tcp_stats. */
enum c2tcp_condition {
	C2TCP_GOOD = 0,
	C2TCP_NORMAL = 1,
	C2TCP_BAD = 2,
};

/* Per-connection parameters; every field is read on every ACK. */
struct c2tcp_params {
	__u32 valid;		/* 1: this entry is used; 0: fall through to the next source */
	__u32 alpha_x100;	/* Setpoint = alpha x MINRTT, alpha x 100, clamped to [100, 1000] */
	__u32 target_us;	/* application Target for the average RTT (Tuner only); 0 = 2 x MINRTT */
};

/* What the connection reports, rewritten on every ACK. Cumulative counters never reset. */
struct c2tcp_stats {
	__u64 acks;		/* pkts_acked calls */
	__u64 rtt_samples;	/* ACKs with an RTT sample (Tuner input, cumulative) */
	__u64 rtt_sum_us;	/* sum of those samples (Tuner input, cumulative) */
	__u64 delivered;	/* tp->delivered, packets */
	__u64 resets;		/* Condition Detector back-offs: cwnd := 1 */
	__u64 increases;	/* packets added by Eq. (1) */
	__u64 updated_us;	/* tcp_mstamp of the last update */
	__u32 srtt_us;		/* smoothed RTT */
	__u32 min_rtt_us;	/* C2TCP's MINRTT (lifetime minimum) */
	__u32 last_rtt_us;	/* last RTT sample */
	__u32 cwnd;		/* after C2TCP, before CUBIC's cong_avoid on the last ACK */
	__u32 ssthresh;
	__u32 alpha_x100;	/* alpha in use */
	__u32 setpoint_us;	/* alpha x MINRTT */
	__u32 interval_us;	/* Interval */
	__u32 target_us;	/* Target in the effective params */
	__u32 condition;	/* 0 good, 1 normal, 2 bad */
	__u32 n;		/* N: back-offs in this episode + 1 */
	__u32 ca_state;		/* TCP_CA_* */
	__u32 released;		/* 1 once the connection released the congestion control */
	__u32 pad;
};

/* C2TCP's own per-socket state (JSAC Algorithm 1 variables plus counters). */
struct c2tcp_state {
	struct cellcc_flow_key key;	/* taken at init: the ports are gone by release */
	__u64 next_time_us;	/* next_time: earliest next back-off */
	__u64 credit_q16;	/* Eq. (1) credit not yet turned into packets, Q16 packets^2 */
	__u64 acks;
	__u64 rtt_samples;
	__u64 rtt_sum_us;
	__u64 resets;
	__u64 increases;
	__u32 min_rtt_us;	/* MINRTT; 0 = no sample yet */
	__u32 interval_us;	/* Interval; 0 = not set yet */
	__u32 last_rtt_us;
	__u32 n;		/* N */
	__u32 rec_inv_sqrt;	/* ~1/sqrt(N), Q0.16 */
	__u32 first_time;	/* 1 while no above-Setpoint episode runs */
	__u32 condition;
	__u32 ca_state;
	__u32 setpoint_us;
	__u32 alpha_x100;
	__u32 target_us;
};

/* Compiled-in defaults (documented in docs/kernel.md). */
const volatile struct c2tcp_params c2tcp_builtin_params = {
	.valid = 1,
	.alpha_x100 = C2TCP_ALPHA_DEFAULT,
	.target_us = C2TCP_TARGET_DEFAULT_US,
};

/* c2tcp_defaults, c2tcp_params, c2tcp_stats (bpf/cellcc.h). */
CELLCC_MAPS(c2tcp);

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct c2tcp_state);
} c2tcp_sk_state SEC(".maps");

extern void cubictcp_init(struct sock *sk) __ksym;
extern __u32 cubictcp_recalc_ssthresh(struct sock *sk) __ksym;
extern void cubictcp_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern void cubictcp_state(struct sock *sk, __u8 new_state) __ksym;
extern void cubictcp_cwnd_event(struct sock *sk, enum tcp_ca_event event) __ksym;
extern void cubictcp_acked(struct sock *sk, const struct ack_sample *sample) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

static __always_inline struct tcp_sock *c2tcp_tp(struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct c2tcp_state *c2tcp_state_of(struct sock *sk)
{
	return bpf_sk_storage_get(&c2tcp_sk_state, sk, 0, 0);
}

/* Effective parameters: the flow's override, else the defaults map, else the built-in
 * ones (bpf/cellcc.h). */
CELLCC_PARAMS_FOR(c2tcp)

static __always_inline void c2tcp_params_of(const struct cellcc_flow_key *key,
					    struct c2tcp_params *out)
{
	const struct c2tcp_params *p = c2tcp_params_for(key);

	out->alpha_x100 = p->alpha_x100;
	out->target_us = p->target_us;
	out->valid = 1;
	if (out->alpha_x100 < C2TCP_ALPHA_MIN)
		out->alpha_x100 = C2TCP_ALPHA_MIN;
	if (out->alpha_x100 > C2TCP_ALPHA_MAX)
		out->alpha_x100 = C2TCP_ALPHA_MAX;
}

/* One Newton-Raphson step towards 1/sqrt(n) on a Q0.16 reciprocal, as CoDel iterates it
 * (RFC 8289 section 5.5 control law): x' = x * (3 - n * x^2) / 2. */
static __always_inline __u32 c2tcp_newton_step(__u32 rec_inv_sqrt, __u32 n)
{
	__u64 x = (__u64)rec_inv_sqrt << C2TCP_REC_INV_SQRT_SHIFT;	/* Q0.32 */
	__u64 x2 = (x * x) >> 32;					/* Q0.32 */
	__u64 three = 3ULL << 32;
	__u64 nx2 = (__u64)n * x2;
	__u64 val = nx2 < three ? three - nx2 : 0;			/* Q2.32 */

	val >>= 2;					/* keeps val * x within 64 bits */
	val = (val * x) >> (32 - 2 + 1);		/* Q0.32, halved */
	val >>= C2TCP_REC_INV_SQRT_SHIFT;
	return val > C2TCP_REC_INV_SQRT_ONE ? C2TCP_REC_INV_SQRT_ONE : val;
}

/* Interval/sqrt(N), us (JSAC Algorithm 1 line 22), with the Q0.16 estimate of 1/sqrt(N). */
static __always_inline __u64 c2tcp_spacing_us(__u64 interval_us, __u32 rec_inv_sqrt)
{
	return (interval_us * rec_inv_sqrt) >> C2TCP_REC_INV_SQRT_SHIFT;
}

/* Action Enforcer, Good: C2TCP JSAC Eq. (1), cwnd += (Setpoint/rtt) x (1/cwnd) per packet
 * acked, fractions carried in a Q16 credit. */
static __always_inline void c2tcp_increase(struct tcp_sock *tp, struct c2tcp_state *st,
					   __u32 setpoint_us, __u32 rtt_us, __u32 acked)
{
	__u64 per_packet, w, grow, cwnd;

	if (rtt_us == 0)
		rtt_us = 1;
	per_packet = ((__u64)setpoint_us << C2TCP_CREDIT_SHIFT) / rtt_us;
	st->credit_q16 += per_packet * acked;
	cwnd = tp->snd_cwnd ? tp->snd_cwnd : 1;
	w = cwnd << C2TCP_CREDIT_SHIFT;
	if (st->credit_q16 < w)
		return;
	grow = st->credit_q16 / w;
	st->credit_q16 -= grow * w;
	cwnd = tp->snd_cwnd + grow;
	if (cwnd > tp->snd_cwnd_clamp)
		cwnd = tp->snd_cwnd_clamp;
	st->increases += cwnd - tp->snd_cwnd;
	tp->snd_cwnd = cwnd;
}

/* Action Enforcer, Bad: C2TCP JSAC Algorithm 2 lines 9-10, ssthresh from CUBIC, cwnd := 1;
 * the TCP state is not changed. */
static __always_inline void c2tcp_backoff(struct sock *sk, struct c2tcp_state *st)
{
	struct tcp_sock *tp = c2tcp_tp(sk);

	tp->snd_ssthresh = cubictcp_recalc_ssthresh(sk);
	tp->snd_cwnd = 1;
	tp->snd_cwnd_cnt = 0;
	st->credit_q16 = 0;
	st->resets++;
}

/* Condition Detector for one RTT sample: C2TCP JSAC Algorithm 1, then Algorithm 2. */
static __always_inline void c2tcp_on_rtt(struct sock *sk, struct c2tcp_state *st,
					 const struct c2tcp_params *p, __u32 rtt_us,
					 __u32 acked)
{
	struct tcp_sock *tp = c2tcp_tp(sk);
	__u64 now_us = tp->tcp_mstamp;
	__u64 setpoint;
	int good;

	/* JSAC Algorithm 1 lines 5-6: MINRTT = min(MINRTT, rtt). */
	if (st->min_rtt_us == 0 || rtt_us < st->min_rtt_us)
		st->min_rtt_us = rtt_us ? rtt_us : 1;
	st->last_rtt_us = rtt_us;
	st->rtt_samples++;
	st->rtt_sum_us += rtt_us;

	/* Line 8: Setpoint = alpha x MINRTT. */
	setpoint = (__u64)st->min_rtt_us * p->alpha_x100 / C2TCP_ALPHA_ONE;
	if (setpoint > 0xffffffffULL)
		setpoint = 0xffffffffULL;
	st->setpoint_us = setpoint;
	good = rtt_us < setpoint;
	/* Line 10: Interval = Setpoint (on Good samples; before the first one, the current
	 * Setpoint). */
	if (good || st->interval_us == 0)
		st->interval_us = setpoint;

	/* Paper fidelity acts only while CUBIC's own growth is in charge (Open, Disorder). */
	if (st->ca_state != TCP_CA_Open && st->ca_state != TCP_CA_Disorder)
		return;

	if (good) {
		/* Lines 9-13: Good, the episode ends; Algorithm 2 line 4: increase. */
		st->condition = C2TCP_GOOD;
		st->first_time = 1;
		st->n = 1;
		c2tcp_increase(tp, st, st->setpoint_us, rtt_us, acked);
	} else if (st->first_time) {
		/* Lines 15-18: first sample at or above Setpoint opens an episode. */
		st->condition = C2TCP_NORMAL;
		st->next_time_us = now_us + st->interval_us;
		st->first_time = 0;
		st->rec_inv_sqrt = c2tcp_newton_step(C2TCP_REC_INV_SQRT_ONE, 1);
	} else if (now_us > st->next_time_us) {
		/* Lines 20-24: a whole Interval (then Interval/sqrt(N)) without a Good sample. */
		st->condition = C2TCP_BAD;
		st->next_time_us = now_us + c2tcp_spacing_us(st->interval_us, st->rec_inv_sqrt);
		st->n++;
		st->rec_inv_sqrt = c2tcp_newton_step(st->rec_inv_sqrt, st->n);
		c2tcp_backoff(sk, st);
	}
}

static __always_inline void c2tcp_write_stats(struct sock *sk, const struct c2tcp_state *st,
					      const struct cellcc_flow_key *key, __u32 released)
{
	struct tcp_sock *tp = c2tcp_tp(sk);
	struct c2tcp_stats s = {};
	struct c2tcp_stats *old;

	s.acks = st->acks;
	s.rtt_samples = st->rtt_samples;
	s.rtt_sum_us = st->rtt_sum_us;
	s.delivered = tp->delivered;
	s.resets = st->resets;
	s.increases = st->increases;
	s.updated_us = tp->tcp_mstamp;
	s.srtt_us = tp->srtt_us >> 3; /* srtt_us is stored << 3 */
	s.min_rtt_us = st->min_rtt_us;
	s.last_rtt_us = st->last_rtt_us;
	s.cwnd = tp->snd_cwnd;
	s.ssthresh = tp->snd_ssthresh;
	s.alpha_x100 = st->alpha_x100;
	s.setpoint_us = st->setpoint_us;
	s.interval_us = st->interval_us;
	s.target_us = st->target_us;
	s.condition = st->condition;
	s.n = st->n;
	s.ca_state = st->ca_state;
	s.released = released;

	old = bpf_map_lookup_elem(&c2tcp_stats, key);
	if (old)
		__builtin_memcpy(old, &s, sizeof(s));
	else
		bpf_map_update_elem(&c2tcp_stats, key, &s, BPF_ANY);
}

SEC("struct_ops")
void BPF_PROG(c2tcp_init, struct sock *sk)
{
	struct c2tcp_state *st;

	cubictcp_init(sk);
	st = bpf_sk_storage_get(&c2tcp_sk_state, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!st)
		return;
	__builtin_memset(st, 0, sizeof(*st));
	st->first_time = 1;
	st->n = 1;
	st->rec_inv_sqrt = C2TCP_REC_INV_SQRT_ONE;
	st->ca_state = TCP_CA_Open;
	st->key = cellcc_flow_key_of(sk);
}

SEC("struct_ops")
void BPF_PROG(c2tcp_release, struct sock *sk)
{
	struct c2tcp_state *st = c2tcp_state_of(sk);

	if (!st)
		return;
	c2tcp_write_stats(sk, st, &st->key, 1);
	bpf_map_delete_elem(&c2tcp_params, &st->key);
}

SEC("struct_ops")
__u32 BPF_PROG(c2tcp_ssthresh, struct sock *sk)
{
	return cubictcp_recalc_ssthresh(sk);
}

SEC("struct_ops")
void BPF_PROG(c2tcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	cubictcp_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
void BPF_PROG(c2tcp_set_state, struct sock *sk, __u8 new_state)
{
	struct c2tcp_state *st = c2tcp_state_of(sk);

	if (st) {
		st->ca_state = new_state;
		/* An RTO restarts cwnd from 1: the Eq. (1) credit is void. */
		if (new_state == TCP_CA_Loss)
			st->credit_q16 = 0;
	}
	cubictcp_state(sk, new_state);
}

SEC("struct_ops")
void BPF_PROG(c2tcp_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	cubictcp_cwnd_event(sk, event);
}

/* Per ACK: CUBIC's pkts_acked, then C2TCP: effective params -> Condition Detector ->
 * Action Enforcer -> stats. */
SEC("struct_ops")
void BPF_PROG(c2tcp_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct c2tcp_params p;
	struct c2tcp_state *st;
	__s32 rtt_us = sample->rtt_us;

	cubictcp_acked(sk, sample);
	st = c2tcp_state_of(sk);
	if (!st)
		return;
	c2tcp_params_of(&st->key, &p);
	st->alpha_x100 = p.alpha_x100;
	st->target_us = p.target_us;
	st->acks++;
	/* ACKs without an RTT sample (rtt_us < 0) are ignored, as CUBIC ignores them. */
	if (rtt_us >= 0)
		c2tcp_on_rtt(sk, st, &p, rtt_us, sample->pkts_acked);
	c2tcp_write_stats(sk, st, &st->key, 0);
}

SEC("struct_ops")
__u32 BPF_PROG(c2tcp_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops c2tcp = {
	.init = (void *)c2tcp_init,
	.release = (void *)c2tcp_release,
	.ssthresh = (void *)c2tcp_ssthresh,
	.cong_avoid = (void *)c2tcp_cong_avoid,
	.set_state = (void *)c2tcp_set_state,
	.cwnd_event = (void *)c2tcp_cwnd_event,
	.pkts_acked = (void *)c2tcp_pkts_acked,
	.undo_cwnd = (void *)c2tcp_undo_cwnd,
	.name = "cellcc_c2tcp",
};
