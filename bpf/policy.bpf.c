// SPDX-License-Identifier: GPL-2.0
/*
 * Per-interval control from user space as a BPF struct_ops congestion control
 * ("cellcc_policy"): the kernel datapath of the simulator's per-interval API
 * (docs/python-cc.md "Per-interval control", crates/cellcc-sim/src/control.rs).
 *
 * Per connection the program folds per-ACK measurements over an interval, as the
 * simulator's IntervalFold does, and at each interval boundary pushes one
 * struct policy_report into the ring buffer policy_reports. User space
 * (`cellcc-kernel policy-io`, driven by cellcc.kernel_policy in Python) turns it into the
 * report object the simulator hands to on_interval(report), calls the policy and writes
 * the decision (cwnd, pacing rate) into policy_decide[flow]. The program applies a
 * decision once, on the first ACK after it was written, and otherwise leaves cwnd and
 * sk_pacing_rate alone: the base is the simulator's "held" (Held in control.rs).
 *
 * Timing (docs/kernel.md "Per-interval policies"):
 * 1. Boundaries are taken on ACK arrival: the interval closes on the first ACK at or
 *    after start + interval_us (tcp_mstamp), and that ACK belongs to the closing
 *    interval. The next boundary is the next multiple of interval_us after the start, so
 *    boundaries stay on the grid start + k x interval_us as in the simulator, but each is
 *    late by up to one ACK gap; an interval without ACKs is merged into the next one.
 * 2. The decision for report k reaches the connection when user space has written it and
 *    the next ACK arrives (user-space latency plus at most one ACK gap), not at t_k.
 * 3. Late user space: until a new decision arrives the last one holds (cwnd and pacing
 *    rate stay where they are). stats.late counts boundaries at which the previous
 *    report had no decision yet; stats.dropped counts reports the full ring buffer lost.
 * 4. The stack's own reactions apply as in Held: an RTO sets cwnd = in_flight + 1
 *    (tcp_enter_loss), which stands until the next decision; with cong_control the
 *    kernel runs no PRR in recovery, and ssthresh() returns max(cwnd, 2) (Held::ssthresh).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "cellcc.h"

char _license[] SEC("license") = "GPL";

/* The simulator's defaults: IntervalControl.interval_ms = 20, initial_cwnd = 10. */
#define POLICY_INTERVAL_DEFAULT_US 20000
#define POLICY_INITIAL_CWND 10
/* Shortest interval accepted (the simulator's MIN_INTERVAL is 1 ms). */
#define POLICY_MIN_INTERVAL_US 1000
/* Ring buffer size: 256 KiB, some 1 800 reports (20 ms intervals of 90 flows for 1 s). */
#define POLICY_RINGBUF_BYTES (256 * 1024)

/* Per-connection parameters, read at init and at every boundary. */
struct policy_params {
	__u32 valid;		/* 1: this entry is used */
	__u32 interval_us;	/* interval length; at least 1000 */
	__u32 initial_cwnd;	/* packets, at init */
	__u32 pad;
	__u64 initial_pacing_Bps; /* bytes/s at init; 0: no pacing until a decision sets one */
};

/* What the connection reports, rewritten at every boundary and decision. */
struct policy_stats {
	__u64 reports;		/* reports pushed into the ring buffer */
	__u64 dropped;		/* reports lost: ring buffer full */
	__u64 decisions;	/* decisions applied */
	__u64 late;		/* boundaries at which the previous report had no decision yet */
	__u64 last_seq;		/* number of the last report (1, 2, ...) */
	__u64 applied_seq;	/* report number the last applied decision answered */
	__u64 pacing_rate_Bps;	/* sk_pacing_rate, bytes/s; 0 without pacing */
	__u64 updated_us;	/* tcp_mstamp of the last update */
	__u32 cwnd;
	__u32 interval_us;	/* interval in use */
	__u32 released;		/* 1 once the connection released the congestion control */
	__u32 pad;
};

/* One interval, as the simulator's IntervalReport (crates/cellcc-sim/src/control.rs). */
struct policy_report {
	struct cellcc_flow_key key;
	__u64 seq;		/* report number of this connection, from 1 */
	__u64 t_us;		/* boundary, tcp_mstamp */
	__u64 interval_us;	/* since the previous boundary */
	__u64 acks;		/* ACKs processed (cong_control calls) */
	__u64 delivered_pkts;	/* tp->delivered advance */
	__u64 acked_bytes;	/* snd_una advance, bytes */
	__u64 lost_pkts;	/* tp->lost advance */
	__u64 sent_pkts;	/* tp->data_segs_out advance (retransmissions included) */
	__u64 retrans_pkts;	/* tp->total_retrans advance */
	__u64 sent_bytes;	/* tp->bytes_sent advance (retransmissions included) */
	__u64 rtt_samples;
	__u64 rtt_sum_us;
	__u64 pacing_rate_Bps;	/* sk_pacing_rate at the boundary; 0 without pacing */
	__u32 rtt_min_us;	/* over the interval's samples (0 when rtt_samples = 0) */
	__u32 rtt_max_us;
	__u32 rtt_first_us;
	__u32 rtt_last_us;
	__u32 cwnd;
	__u32 ssthresh;
	__u32 in_flight;	/* tcp_packets_in_flight */
	__u32 srtt_us;		/* smoothed RTT; 0 before the first sample */
	__u32 min_rtt_us;	/* windowed minimum RTT (tp->rtt_min); ~0 before a sample */
	__u32 ca_state;		/* TCP_CA_* */
	__u32 mss;		/* tp->mss_cache */
	__u32 pad;
};

/* A decision written by user space; applied once, when `seq` changes. */
struct policy_decision {
	__u64 seq;		/* the report it answers (non-zero) */
	__u32 cwnd;		/* packets; 0: keep */
	__u32 pad;
	__u64 pacing_Bps;	/* bytes/s; 0: keep */
};

/* Per-socket state: the fold of the running interval. */
struct policy_state {
	struct cellcc_flow_key key;	/* taken at init: the ports are gone by release */
	__u64 start_us;		/* previous boundary (or init) */
	__u64 next_us;		/* next boundary on the grid */
	__u64 acks;
	__u64 rtt_samples;
	__u64 rtt_sum_us;
	__u64 seq;		/* reports pushed or dropped so far */
	__u64 applied_seq;
	__u64 reports, dropped, decisions, late;
	__u32 delivered;	/* counters at the interval's start */
	__u32 snd_una;
	__u32 lost;
	__u32 sent;
	__u32 retrans;
	__u32 interval_us;
	__u64 bytes_sent;
	__u32 rtt_min_us;
	__u32 rtt_max_us;
	__u32 rtt_first_us;
	__u32 rtt_last_us;
	__u32 ca_state;
	__u32 pad;
};

const volatile struct policy_params policy_builtin_params = {
	.valid = 1,
	.interval_us = POLICY_INTERVAL_DEFAULT_US,
	.initial_cwnd = POLICY_INITIAL_CWND,
	.initial_pacing_Bps = 0,
};

/* policy_defaults, policy_params, policy_stats (bpf/cellcc.h). */
CELLCC_MAPS(policy);

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, POLICY_RINGBUF_BYTES);
} policy_reports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CELLCC_PARAMS_MAX_ENTRIES);
	__type(key, struct cellcc_flow_key);
	__type(value, struct policy_decision);
} policy_decide SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct policy_state);
} policy_sk_state SEC(".maps");

CELLCC_PARAMS_FOR(policy)

static __always_inline struct tcp_sock *policy_tp(struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline __u32 policy_interval_of(const struct cellcc_flow_key *key)
{
	__u32 iv = policy_params_for(key)->interval_us;

	return iv < POLICY_MIN_INTERVAL_US ? POLICY_MIN_INTERVAL_US : iv;
}

/* sk_pacing_rate if the stack paces this socket, else 0 (the simulator's pacing_rate
 * without pacing; the kernel leaves ~0 there). */
static __always_inline __u64 policy_pacing_rate(const struct sock *sk)
{
	return sk->sk_pacing_status == SK_PACING_NONE ? 0 : sk->sk_pacing_rate;
}

/* tcp_packets_in_flight (include/net/tcp.h). */
static __always_inline __u32 policy_in_flight(const struct tcp_sock *tp)
{
	__u32 left = tp->sacked_out + tp->lost_out;
	__u32 out = tp->packets_out > left ? tp->packets_out - left : 0;

	return out + tp->retrans_out;
}

/* The fold restarts from the connection's counters now (IntervalFold::new). */
static __always_inline void policy_fold_reset(struct policy_state *st, const struct tcp_sock *tp)
{
	st->acks = 0;
	st->rtt_samples = 0;
	st->rtt_sum_us = 0;
	st->rtt_min_us = 0;
	st->rtt_max_us = 0;
	st->rtt_first_us = 0;
	st->rtt_last_us = 0;
	st->delivered = tp->delivered;
	st->snd_una = tp->snd_una;
	st->lost = tp->lost;
	st->sent = tp->data_segs_out;
	st->retrans = tp->total_retrans;
	st->bytes_sent = tp->bytes_sent;
}

static __always_inline void policy_write_stats(struct sock *sk, const struct policy_state *st,
					       __u32 released)
{
	struct tcp_sock *tp = policy_tp(sk);
	struct policy_stats s = {};
	struct policy_stats *old;

	s.reports = st->reports;
	s.dropped = st->dropped;
	s.decisions = st->decisions;
	s.late = st->late;
	s.last_seq = st->seq;
	s.applied_seq = st->applied_seq;
	s.pacing_rate_Bps = policy_pacing_rate(sk);
	s.updated_us = tp->tcp_mstamp;
	s.cwnd = tp->snd_cwnd;
	s.interval_us = st->interval_us;
	s.released = released;
	old = bpf_map_lookup_elem(&policy_stats, &st->key);
	if (old)
		__builtin_memcpy(old, &s, sizeof(s));
	else
		bpf_map_update_elem(&policy_stats, &st->key, &s, BPF_ANY);
}

/* Close the interval ending now (IntervalFold::close) and push its report. */
static __always_inline void policy_close(struct sock *sk, struct policy_state *st, __u64 now)
{
	struct tcp_sock *tp = policy_tp(sk);
	struct policy_report *r;

	if (st->seq > st->applied_seq)
		st->late++;
	st->seq++;
	r = bpf_ringbuf_reserve(&policy_reports, sizeof(*r), 0);
	if (!r) {
		st->dropped++;
	} else {
		r->key = st->key;
		r->seq = st->seq;
		r->t_us = now;
		r->interval_us = now - st->start_us;
		r->acks = st->acks;
		r->delivered_pkts = tp->delivered - st->delivered;
		r->acked_bytes = tp->snd_una - st->snd_una;
		r->lost_pkts = tp->lost - st->lost;
		r->sent_pkts = tp->data_segs_out - st->sent;
		r->retrans_pkts = tp->total_retrans - st->retrans;
		r->sent_bytes = tp->bytes_sent - st->bytes_sent;
		r->rtt_samples = st->rtt_samples;
		r->rtt_sum_us = st->rtt_sum_us;
		r->pacing_rate_Bps = policy_pacing_rate(sk);
		r->rtt_min_us = st->rtt_min_us;
		r->rtt_max_us = st->rtt_max_us;
		r->rtt_first_us = st->rtt_first_us;
		r->rtt_last_us = st->rtt_last_us;
		r->cwnd = tp->snd_cwnd;
		r->ssthresh = tp->snd_ssthresh;
		r->in_flight = policy_in_flight(tp);
		r->srtt_us = tp->srtt_us >> 3; /* srtt_us is stored << 3 */
		r->min_rtt_us = tp->rtt_min.s[0].v;
		r->ca_state = st->ca_state;
		r->mss = tp->mss_cache;
		r->pad = 0;
		bpf_ringbuf_submit(r, 0);
		st->reports++;
	}
	st->interval_us = policy_interval_of(&st->key);
	st->start_us = now;
	/* The next boundary on the grid start + k x interval after now. */
	if (st->next_us + st->interval_us > now)
		st->next_us += st->interval_us;
	else
		st->next_us = now + st->interval_us - (now - st->next_us) % st->interval_us;
	policy_fold_reset(st, tp);
}

/* Apply a new decision once; otherwise the last one holds. */
static __always_inline int policy_apply(struct sock *sk, struct policy_state *st)
{
	struct tcp_sock *tp = policy_tp(sk);
	struct policy_decision *d = bpf_map_lookup_elem(&policy_decide, &st->key);
	__u32 cwnd;

	if (!d || d->seq == 0 || d->seq == st->applied_seq)
		return 0;
	st->applied_seq = d->seq;
	st->decisions++;
	if (d->cwnd) {
		cwnd = d->cwnd;
		if (cwnd > tp->snd_cwnd_clamp)
			cwnd = tp->snd_cwnd_clamp;
		tp->snd_cwnd = cwnd;
	}
	if (d->pacing_Bps) {
		sk->sk_pacing_status = SK_PACING_NEEDED;
		sk->sk_pacing_rate = min_u64(d->pacing_Bps, max_u64(sk->sk_max_pacing_rate, 1));
	}
	return 1;
}

SEC("struct_ops")
void BPF_PROG(policy_init, struct sock *sk)
{
	struct tcp_sock *tp = policy_tp(sk);
	const struct policy_params *p;
	struct policy_state *st;

	st = bpf_sk_storage_get(&policy_sk_state, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!st)
		return;
	__builtin_memset(st, 0, sizeof(*st));
	st->key = cellcc_flow_key_of(sk);
	st->ca_state = TCP_CA_Open;
	p = policy_params_for(&st->key);
	if (p->initial_cwnd)
		tp->snd_cwnd = p->initial_cwnd < tp->snd_cwnd_clamp ? p->initial_cwnd
								     : tp->snd_cwnd_clamp;
	if (p->initial_pacing_Bps) {
		sk->sk_pacing_status = SK_PACING_NEEDED;
		sk->sk_pacing_rate = p->initial_pacing_Bps;
	}
	/* A decision left from an earlier connection with the same four-tuple is void. */
	bpf_map_delete_elem(&policy_decide, &st->key);
	st->interval_us = policy_interval_of(&st->key);
	st->start_us = tp->tcp_mstamp;
	st->next_us = st->start_us + st->interval_us;
	policy_fold_reset(st, tp);
}

SEC("struct_ops")
void BPF_PROG(policy_release, struct sock *sk)
{
	struct policy_state *st = bpf_sk_storage_get(&policy_sk_state, sk, 0, 0);

	if (!st)
		return;
	policy_write_stats(sk, st, 1);
	bpf_map_delete_elem(&policy_params, &st->key);
	bpf_map_delete_elem(&policy_decide, &st->key);
}

/* Held::ssthresh: max(cwnd, 2); cwnd is the policy's, not the stack's. */
SEC("struct_ops")
__u32 BPF_PROG(policy_ssthresh, struct sock *sk)
{
	__u32 cwnd = policy_tp(sk)->snd_cwnd;

	return cwnd > 2 ? cwnd : 2;
}

SEC("struct_ops")
void BPF_PROG(policy_set_state, struct sock *sk, __u8 new_state)
{
	struct policy_state *st = bpf_sk_storage_get(&policy_sk_state, sk, 0, 0);

	if (st)
		st->ca_state = new_state;
}

/* One RTT sample per ACK that has one (IntervalFold::rtt). */
SEC("struct_ops")
void BPF_PROG(policy_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct policy_state *st;
	__s32 rtt_us = sample->rtt_us;

	if (rtt_us < 0)
		return;
	st = bpf_sk_storage_get(&policy_sk_state, sk, 0, 0);
	if (!st)
		return;
	st->rtt_samples++;
	st->rtt_sum_us += rtt_us;
	if (st->rtt_min_us == 0 || (__u32)rtt_us < st->rtt_min_us)
		st->rtt_min_us = rtt_us ? rtt_us : 1;
	if ((__u32)rtt_us > st->rtt_max_us)
		st->rtt_max_us = rtt_us;
	if (st->rtt_samples == 1)
		st->rtt_first_us = rtt_us;
	st->rtt_last_us = rtt_us;
}

/* Every ACK: count it, close the interval at a boundary, apply a new decision. */
SEC("struct_ops")
void BPF_PROG(policy_cong_control, struct sock *sk, __u32 ack, int flag,
	      const struct rate_sample *rs)
{
	struct tcp_sock *tp = policy_tp(sk);
	struct policy_state *st = bpf_sk_storage_get(&policy_sk_state, sk, 0, 0);
	__u64 now = tp->tcp_mstamp;
	int changed = 0;

	if (!st)
		return;
	st->acks++;
	if (now >= st->next_us) {
		policy_close(sk, st, now);
		changed = 1;
	}
	changed |= policy_apply(sk, st);
	if (changed)
		policy_write_stats(sk, st, 0);
}

/* Held::undo_cwnd: the window stays. */
SEC("struct_ops")
__u32 BPF_PROG(policy_undo_cwnd, struct sock *sk)
{
	return policy_tp(sk)->snd_cwnd;
}

SEC(".struct_ops.link")
struct tcp_congestion_ops policy = {
	.init = (void *)policy_init,
	.release = (void *)policy_release,
	.ssthresh = (void *)policy_ssthresh,
	.set_state = (void *)policy_set_state,
	.pkts_acked = (void *)policy_pkts_acked,
	.cong_control = (void *)policy_cong_control,
	.undo_cwnd = (void *)policy_undo_cwnd,
	.name = "cellcc_policy",
};
