// SPDX-License-Identifier: GPL-2.0
/*
 * TCP Westwood+ as a BPF struct_ops congestion control ("cellcc_westwood"), as Linux 6.x
 * runs it (net/ipv4/tcp_westwood.c), for kernels that do not ship tcp_westwood.
 *
 * Sources: S. Mascolo, C. Casetti, M. Gerla, M. Y. Sanadidi, R. Wang, "TCP Westwood:
 * Bandwidth Estimation for Enhanced Transport over Wireless Links", ACM MobiCom 2001,
 * section 2; L. A. Grieco, S. Mascolo, "Performance evaluation and comparison of
 * Westwood+, New Reno, and Vegas TCP congestion control", ACM SIGCOMM CCR 34(2), 2004
 * (one bandwidth sample per RTT); Linux net/ipv4/tcp_westwood.c. Reference mirrored
 * here: crates/cellcc-congestion/src/westwood/mod.rs.
 *
 * Model. Westwood+ grows like Reno but, after a congestion episode, sets the window to
 * the bandwidth-delay product the sender measured, BWE * RTTmin. Bytes acked are counted
 * per ACK (a duplicate ACK counts one segment, a later cumulative ACK subtracts what was
 * counted already); once max(RTT, 50 ms) has passed, the count over the jiffies elapsed
 * is one bandwidth sample, smoothed twice by a 7/8 low-pass filter (bw_ns_est, bw_est).
 * RTT and RTTmin are in jiffies, rounded up.
 *
 *   Reno growth (slow start, +1/RTT)          every ACK: bk += bytes acked;
 *     |                                       every max(RTT, 50 ms):
 *     | loss / CWR: ssthresh := cwnd/2 (Reno)   bw_ns := 7/8 bw_ns + 1/8 bk/delta
 *     v                                         bw_est := 7/8 bw_est + 1/8 bw_ns
 *   Recovery / CWR (PRR)
 *     | end (COMPLETE_CWR): cwnd := ssthresh := max(bw_est * RTTmin / mss, 2)
 *     v
 *   Reno growth        RTO (CA_EVENT_LOSS): ssthresh := max(bw_est * RTTmin / mss, 2),
 *                                           RTTmin restarts from the next sample
 *
 * Differences from the Rust reference (and from Linux):
 * 1. Jiffies are the kernel's (bpf_jiffies64, truncated to 32 bits as tcp_jiffies32) and
 *    HZ is this kernel's CONFIG_HZ (read by libbpf from the kernel config); the
 *    reference takes HZ from the scenario's tcp.hz (default 1000). Without a readable
 *    kernel config HZ is taken as 1000 (westwood_stats.hz says which was used).
 * 2. Byte counts are Linux's: snd_una differences in bytes and mss_cache per duplicate
 *    ACK (the reference counts whole segments of mss bytes); bw_est * RTTmin is computed
 *    in 64 bits as in the reference (Linux's 32-bit product can wrap).
 * 3. Reno growth, loss-time ssthresh and undo are the kernel's own (tcp_reno_* kfuncs).
 * 4. Westwood+ has no parameters; struct westwood_params has only `valid`.
 * 5. Per-socket state lives in a BPF_MAP_TYPE_SK_STORAGE map with the flow key and
 *    counters for westwood_stats; if it cannot be allocated the connection runs plain
 *    Reno. The stats entry is marked `released` when the connection ends.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "cellcc.h"

char _license[] SEC("license") = "GPL";

/* CONFIG_HZ of the running kernel (libbpf reads /proc/config.gz or /boot/config-*);
 * 0 when neither exists. */
extern const int CONFIG_HZ __kconfig __weak;

/* HZ when the kernel config cannot be read. */
#define WESTWOOD_HZ_FALLBACK 1000
/* Shortest sampling interval, a fraction of a second (TCP_WESTWOOD_RTT_MIN = HZ/20 =
 * 50 ms): shorter windows give noisy samples on LANs. */
#define WESTWOOD_RTT_MIN_DIVISOR 20
/* RTT and RTTmin before the first sample, seconds (TCP_WESTWOOD_INIT_RTT = 20*HZ):
 * deliberately huge so the first real sample replaces it. */
#define WESTWOOD_INIT_RTT_S 20
/* Smallest window BWE * RTTmin yields, packets (tcp_westwood_bw_rttmin). */
#define WESTWOOD_MIN_WINDOW 2
#define USEC_PER_SEC 1000000ULL

/* Westwood+ has no parameters (Linux's module has none). */
struct westwood_params {
	__u32 valid;		/* 1: this entry is used */
};

/* What the connection reports, rewritten on every ACK. */
struct westwood_stats {
	__u64 acks;		/* in_ack_event calls */
	__u64 slow_path_acks;	/* of those, CA_ACK_SLOWPATH */
	__u64 samples;		/* bandwidth samples filtered */
	__u64 cwr_completions;	/* CA_EVENT_COMPLETE_CWR: cwnd := BWE * RTTmin */
	__u64 losses;		/* CA_EVENT_LOSS (RTO): ssthresh := BWE * RTTmin */
	__u64 bw_est_bps;	/* BWE in bit/s (bw_est * HZ * 8) */
	__u64 delivered;	/* tp->delivered, packets */
	__u64 updated_us;	/* tcp_mstamp of the last update */
	__u32 bw_est;		/* BWE, bytes per jiffy */
	__u32 bw_ns_est;	/* first filter stage, bytes per jiffy */
	__u32 rtt_jiffies;	/* latest RTT sample, jiffies (rounded up) */
	__u32 rtt_min_jiffies;	/* RTTmin, jiffies */
	__u32 bwe_rttmin_pkts;	/* the window the next episode ends with */
	__u32 last_cwr_cwnd;	/* cwnd set by the last COMPLETE_CWR (0: none yet) */
	__u32 hz;		/* HZ used for jiffies */
	__u32 srtt_us;
	__u32 cwnd;
	__u32 ssthresh;
	__u32 released;		/* 1 once the connection released the congestion control */
	__u32 pad;
};

/* Linux's struct westwood plus the key and counters. */
struct westwood_state {
	struct cellcc_flow_key key;	/* taken at init: the ports are gone by release */
	__u64 acks;
	__u64 slow_path_acks;
	__u64 samples;
	__u64 cwr_completions;
	__u64 losses;
	__u32 bw_ns_est;	/* first bandwidth estimate, bytes per jiffy */
	__u32 bw_est;		/* BWE, bytes per jiffy */
	__u32 rtt_win_sx;	/* jiffy the current sampling interval began */
	__u32 bk;		/* bytes acked in the current sampling interval */
	__u32 snd_una;		/* snd_una at the previous ACK */
	__u32 accounted;	/* bytes counted by duplicate ACKs, not yet cumulatively acked */
	__u32 rtt;		/* latest RTT sample, jiffies */
	__u32 rtt_min;		/* RTTmin, jiffies */
	__u32 first_ack;	/* the next ACK re-anchors snd_una */
	__u32 reset_rtt_min;	/* the next update takes the latest RTT as RTTmin (after RTO) */
	__u32 hz;
	__u32 last_cwr_cwnd;
};

const volatile struct westwood_params westwood_builtin_params = {
	.valid = 1,
};

/* westwood_defaults, westwood_params, westwood_stats (bpf/cellcc.h); the parameter maps
 * exist for the convention only. */
CELLCC_MAPS(westwood);

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct westwood_state);
} westwood_sk_state SEC(".maps");

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

static __always_inline struct westwood_state *westwood_state_of(struct sock *sk)
{
	return bpf_sk_storage_get(&westwood_sk_state, sk, 0, 0);
}

/* tcp_jiffies32. */
static __always_inline __u32 westwood_jiffies32(void)
{
	return (__u32)bpf_jiffies64();
}

static __always_inline __u32 westwood_hz(void)
{
	int hz = CONFIG_HZ;

	return hz > 0 ? hz : WESTWOOD_HZ_FALLBACK;
}

/* usecs_to_jiffies: rounded up. */
static __always_inline __u32 westwood_us_to_jiffies(__u64 us, __u32 hz)
{
	__u64 j = (us * hz + USEC_PER_SEC - 1) / USEC_PER_SEC;

	return j > 0xffffffffULL ? 0xffffffffU : j;
}

/* tcp_westwood_bw_rttmin: BWE * RTTmin in packets, at least 2. */
static __always_inline __u32 westwood_bw_rttmin(const struct westwood_state *st,
						const struct tcp_sock *tp)
{
	/* MobiCom 2001 section 2: ssthresh = (BWE * RTTmin) / seg_size. */
	__u64 mss = tp->mss_cache ? tp->mss_cache : 1;
	__u64 w = (__u64)st->bw_est * st->rtt_min / mss;

	if (w > 0xffffffffULL)
		w = 0xffffffffULL;
	return w < WESTWOOD_MIN_WINDOW ? WESTWOOD_MIN_WINDOW : w;
}

/* westwood_do_filter: (7a + b) / 8. */
static __always_inline __u32 westwood_low_pass(__u32 a, __u32 b)
{
	return ((__u64)7 * a + b) >> 3;
}

/* westwood_filter: one bandwidth sample bk / delta through the two 7/8 filters; the
 * first sample fills both. delta > 0. */
static __always_inline void westwood_filter(struct westwood_state *st, __u32 delta)
{
	__u32 sample = st->bk / delta;

	st->samples++;
	if (st->bw_ns_est == 0 && st->bw_est == 0) {
		st->bw_ns_est = sample;
		st->bw_est = sample;
	} else {
		/* Grieco & Mascolo 2004 Eq. (1) with constant gain: b = 7/8 b + 1/8 sample. */
		st->bw_ns_est = westwood_low_pass(st->bw_ns_est, sample);
		st->bw_est = westwood_low_pass(st->bw_est, st->bw_ns_est);
	}
}

/* westwood_update_window: close the sampling interval once it is longer than
 * max(RTT, 50 ms) and filter its sample. */
static __always_inline void westwood_update_window(struct westwood_state *st,
						   const struct tcp_sock *tp)
{
	__u32 now = westwood_jiffies32();
	__s32 delta = now - st->rtt_win_sx;
	__u32 min_window = st->hz / WESTWOOD_RTT_MIN_DIVISOR;
	__u32 window = st->rtt > min_window ? st->rtt : min_window;

	/* The first sample must not count data acked before the connection was set up. */
	if (st->first_ack) {
		st->snd_una = tp->snd_una;
		st->first_ack = 0;
	}
	/* Linux compares the signed delta with an unsigned window: as unsigned. */
	if (st->rtt && (__u32)delta > window) {
		westwood_filter(st, delta);
		st->bk = 0;
		st->rtt_win_sx = now;
	}
}

/* update_rtt_min. */
static __always_inline void westwood_update_rtt_min(struct westwood_state *st)
{
	if (st->reset_rtt_min) {
		st->rtt_min = st->rtt;
		st->reset_rtt_min = 0;
	} else if (st->rtt < st->rtt_min) {
		st->rtt_min = st->rtt;
	}
}

/* westwood_acked_count: bytes a slow-path ACK accounts for. A duplicate ACK counts one
 * segment; a cumulative ACK covering more than one segment counts only what duplicate
 * ACKs did not already count. */
static __always_inline __u32 westwood_acked_count(struct westwood_state *st,
						  const struct tcp_sock *tp)
{
	__u32 mss = tp->mss_cache;
	__u32 cumul = tp->snd_una - st->snd_una;

	if (!cumul) {
		st->accounted += mss;
		cumul = mss;
	}
	if (cumul > mss) {
		if (st->accounted >= cumul) {
			st->accounted -= cumul;
			cumul = mss;
		} else {
			cumul -= st->accounted;
			st->accounted = 0;
		}
	}
	st->snd_una = tp->snd_una;
	return cumul;
}

static __always_inline void westwood_write_stats(struct sock *sk,
						 const struct westwood_state *st,
						 __u32 released)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct westwood_stats s = {};
	struct westwood_stats *old;

	s.acks = st->acks;
	s.slow_path_acks = st->slow_path_acks;
	s.samples = st->samples;
	s.cwr_completions = st->cwr_completions;
	s.losses = st->losses;
	s.bw_est_bps = (__u64)st->bw_est * st->hz * 8;
	s.delivered = tp->delivered;
	s.updated_us = tp->tcp_mstamp;
	s.bw_est = st->bw_est;
	s.bw_ns_est = st->bw_ns_est;
	s.rtt_jiffies = st->rtt;
	s.rtt_min_jiffies = st->rtt_min;
	s.bwe_rttmin_pkts = westwood_bw_rttmin(st, tp);
	s.last_cwr_cwnd = st->last_cwr_cwnd;
	s.hz = st->hz;
	s.srtt_us = tp->srtt_us >> 3; /* srtt_us is stored << 3 */
	s.cwnd = tp->snd_cwnd;
	s.ssthresh = tp->snd_ssthresh;
	s.released = released;

	old = bpf_map_lookup_elem(&westwood_stats, &st->key);
	if (old)
		__builtin_memcpy(old, &s, sizeof(s));
	else
		bpf_map_update_elem(&westwood_stats, &st->key, &s, BPF_ANY);
}

/* tcp_westwood_init. */
SEC("struct_ops")
void BPF_PROG(westwood_init, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct westwood_state *st;

	st = bpf_sk_storage_get(&westwood_sk_state, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!st)
		return;
	__builtin_memset(st, 0, sizeof(*st));
	st->key = cellcc_flow_key_of(sk);
	st->hz = westwood_hz();
	st->reset_rtt_min = 1;
	st->rtt = WESTWOOD_INIT_RTT_S * st->hz;
	st->rtt_min = st->rtt;
	st->rtt_win_sx = westwood_jiffies32();
	st->snd_una = tp->snd_una;
	st->first_ack = 1;
}

SEC("struct_ops")
void BPF_PROG(westwood_release, struct sock *sk)
{
	struct westwood_state *st = westwood_state_of(sk);

	if (!st)
		return;
	westwood_write_stats(sk, st, 1);
	bpf_map_delete_elem(&westwood_params, &st->key);
}

/* tcp_westwood_ack: count the bytes this ACK acknowledged. */
SEC("struct_ops")
void BPF_PROG(westwood_in_ack_event, struct sock *sk, __u32 flags)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct westwood_state *st = westwood_state_of(sk);

	if (!st)
		return;
	st->acks++;
	westwood_update_window(st, tp);
	if (flags & CA_ACK_SLOWPATH) {
		st->slow_path_acks++;
		st->bk += westwood_acked_count(st, tp);
	} else {
		/* westwood_fast_bw: a pure cumulative advance. */
		st->bk += tp->snd_una - st->snd_una;
		st->snd_una = tp->snd_una;
	}
	westwood_update_rtt_min(st);
	westwood_write_stats(sk, st, 0);
}

/* tcp_westwood_pkts_acked: keep the latest RTT, in jiffies rounded up. */
SEC("struct_ops")
void BPF_PROG(westwood_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct westwood_state *st;
	__s32 rtt_us = sample->rtt_us;

	if (rtt_us <= 0)
		return;
	st = westwood_state_of(sk);
	if (st)
		st->rtt = westwood_us_to_jiffies(rtt_us, st->hz);
}

/* tcp_westwood_event: the end of an episode sets cwnd and ssthresh to BWE * RTTmin; an
 * RTO sets ssthresh to it and restarts RTTmin. */
SEC("struct_ops")
void BPF_PROG(westwood_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct westwood_state *st;

	if (event != CA_EVENT_COMPLETE_CWR && event != CA_EVENT_LOSS)
		return;
	st = westwood_state_of(sk);
	if (!st)
		return;
	if (event == CA_EVENT_COMPLETE_CWR) {
		/* MobiCom 2001 section 2: cwnd = ssthresh = BWE * RTTmin / seg_size. */
		tp->snd_ssthresh = westwood_bw_rttmin(st, tp);
		tp->snd_cwnd = tp->snd_ssthresh;
		st->last_cwr_cwnd = tp->snd_cwnd;
		st->cwr_completions++;
	} else {
		/* MobiCom 2001 section 2, after a timeout: ssthresh = BWE * RTTmin / seg_size. */
		tp->snd_ssthresh = westwood_bw_rttmin(st, tp);
		st->reset_rtt_min = 1;
		st->losses++;
	}
}

SEC("struct_ops")
void BPF_PROG(westwood_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(westwood_ssthresh, struct sock *sk)
{
	return tcp_reno_ssthresh(sk);
}

SEC("struct_ops")
__u32 BPF_PROG(westwood_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops westwood = {
	.init = (void *)westwood_init,
	.release = (void *)westwood_release,
	.ssthresh = (void *)westwood_ssthresh,
	.cong_avoid = (void *)westwood_cong_avoid,
	.cwnd_event = (void *)westwood_cwnd_event,
	.in_ack_event = (void *)westwood_in_ack_event,
	.pkts_acked = (void *)westwood_pkts_acked,
	.undo_cwnd = (void *)westwood_undo_cwnd,
	.name = "cellcc_westwood",
};
