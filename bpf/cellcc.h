/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Conventions shared by cellcc's BPF congestion controls (bpf/<algo>.bpf.c) and by the
 * user-space side (crates/cellcc-kernel), which mirrors struct cellcc_flow_key and reads
 * everything else from the objects' BTF (docs/kernel.md).
 *
 * Parameters and statistics of a connection are reachable from any process, not only the
 * one holding the socket, so the Tuner, `cellcc-kernel set` and `cellcc-kernel stats` can
 * act on flows they did not open. Each algorithm ALGO defines three maps:
 *
 *   ALGO_defaults  ARRAY, one entry: struct ALGO_params used by every connection that has
 *                  no override. The loader fills it with the documented defaults.
 *   ALGO_params    HASH   struct cellcc_flow_key -> struct ALGO_params, per-connection
 *                  overrides (looked up on every ACK, so a change applies mid-flow).
 *   ALGO_stats     LRU_HASH struct cellcc_flow_key -> struct ALGO_stats, written by the
 *                  algorithm, read by user space.
 *
 * Per-connection state the algorithm needs lives in icsk_ca_priv (104 bytes) or, when it
 * does not fit, in a BPF_MAP_TYPE_SK_STORAGE map private to the algorithm.
 */
#ifndef CELLCC_BPF_H
#define CELLCC_BPF_H

/* Include after vmlinux.h, which provides __u16/__u32 and struct sock. */
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>

/* A connection as seen by the sender. Addresses are IPv6 in network byte order (as in
 * struct in6_addr); an IPv4 address is stored IPv4-mapped (::ffff:a.b.c.d), which is
 * also how the kernel stores an IPv4 peer of a dual-stack IPv6 socket, so one IPv4
 * connection has one key whichever socket family carries it. Ports are in host byte
 * order; `pad` is zero. */
struct cellcc_flow_key {
	__u8 local_addr[16];
	__u8 remote_addr[16];
	__u16 local_port;
	__u16 remote_port;
	__u32 pad;
};

#define CELLCC_STATS_MAX_ENTRIES 4096
#define CELLCC_PARAMS_MAX_ENTRIES 4096

/* AF_INET6 (include/linux/socket.h); vmlinux.h has no macros. */
#define CELLCC_AF_INET6 10

/* `addr` as an IPv4-mapped IPv6 address. */
static __always_inline void cellcc_v4_mapped(__u8 out[16], __be32 addr)
{
	out[10] = 0xff;
	out[11] = 0xff;
	__builtin_memcpy(&out[12], &addr, 4);
}

/* The key of the connection `sk` belongs to. */
static __always_inline struct cellcc_flow_key cellcc_flow_key_of(const struct sock *sk)
{
	struct cellcc_flow_key key = {};

	if (sk->__sk_common.skc_family == CELLCC_AF_INET6) {
		__builtin_memcpy(key.local_addr, &sk->__sk_common.skc_v6_rcv_saddr, 16);
		__builtin_memcpy(key.remote_addr, &sk->__sk_common.skc_v6_daddr, 16);
	} else {
		cellcc_v4_mapped(key.local_addr, sk->__sk_common.skc_rcv_saddr);
		cellcc_v4_mapped(key.remote_addr, sk->__sk_common.skc_daddr);
	}
	key.local_port = sk->__sk_common.skc_num;
	key.remote_port = bpf_ntohs(sk->__sk_common.skc_dport);
	return key;
}

/* Integer helpers the algorithms share. */
static __always_inline __u64 min_u64(__u64 a, __u64 b) { return a < b ? a : b; }
static __always_inline __u64 max_u64(__u64 a, __u64 b) { return a > b ? a : b; }

/* a * b, saturating at 2^63 (well above any rate, time or count the algorithms use). */
static __always_inline __u64 mul_sat(__u64 a, __u64 b)
{
	if (a && b > (1ULL << 63) / a)
		return 1ULL << 63;
	return a * b;
}

/* The kernel's own TCP helpers (include/net/tcp.h static inlines, which BPF cannot
 * call), for the algorithms that drive snd_cwnd themselves. */

/* before(seq1, seq2): seq1 comes first in 32-bit sequence space. */
static __always_inline int cellcc_before(__u32 seq1, __u32 seq2)
{
	return (__s32)(seq1 - seq2) < 0;
}

/* after(seq2, seq1). */
static __always_inline int cellcc_after(__u32 seq2, __u32 seq1)
{
	return cellcc_before(seq1, seq2);
}

/* tcp_in_slow_start(). */
static __always_inline int cellcc_in_slow_start(const struct tcp_sock *tp)
{
	return tp->snd_cwnd < tp->snd_ssthresh;
}

/* tcp_packets_in_flight(): packets_out - (sacked_out + lost_out) + retrans_out. */
static __always_inline __u32 cellcc_packets_in_flight(const struct tcp_sock *tp)
{
	return tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out;
}

/* tcp_is_cwnd_limited(): the last flight was limited by cwnd (or, in slow start, cwnd is
 * below twice the largest recent flight). */
static __always_inline int cellcc_is_cwnd_limited(const struct tcp_sock *tp)
{
	if (BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited))
		return 1;
	if (cellcc_in_slow_start(tp))
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return 0;
}

/* a / b truncated towards zero, as C's signed division (clang 14 has no signed BPF
 * division before cpu v4); b != 0. */
static __always_inline __s64 cellcc_sdiv(__s64 a, __s64 b)
{
	__u64 ua = a < 0 ? -(__u64)a : (__u64)a;
	__u64 ub = b < 0 ? -(__u64)b : (__u64)b;
	__u64 q = ua / ub;

	return (a < 0) != (b < 0) ? -(__s64)q : (__s64)q;
}

/* The three maps of the convention above for algorithm `algo`, whose file defines
 * struct algo##_params and struct algo##_stats first. */
#define CELLCC_MAPS(algo)							\
	struct {							\
		__uint(type, BPF_MAP_TYPE_ARRAY);			\
		__uint(max_entries, 1);					\
		__type(key, __u32);					\
		__type(value, struct algo##_params);			\
	} algo##_defaults SEC(".maps");					\
	struct {							\
		__uint(type, BPF_MAP_TYPE_HASH);			\
		__uint(max_entries, CELLCC_PARAMS_MAX_ENTRIES);		\
		__type(key, struct cellcc_flow_key);			\
		__type(value, struct algo##_params);			\
	} algo##_params SEC(".maps");					\
	struct {							\
		__uint(type, BPF_MAP_TYPE_LRU_HASH);			\
		__uint(max_entries, CELLCC_STATS_MAX_ENTRIES);		\
		__type(key, struct cellcc_flow_key);			\
		__type(value, struct algo##_stats);			\
	} algo##_stats SEC(".maps")

/* The effective parameters of a flow: its override if present and valid, else
 * algo##_defaults[0] if valid, else algo##_builtin_params. Defines
 * `const struct algo##_params *algo##_params_for(const struct cellcc_flow_key *key)`. */
#define CELLCC_PARAMS_FOR(algo)							\
	static __always_inline const struct algo##_params *			\
	algo##_params_for(const struct cellcc_flow_key *key)			\
	{									\
		const struct algo##_params *p;					\
		__u32 zero = 0;							\
										\
		p = bpf_map_lookup_elem(&algo##_params, key);			\
		if (p && p->valid)						\
			return p;						\
		p = bpf_map_lookup_elem(&algo##_defaults, &zero);		\
		if (p && p->valid)						\
			return p;						\
		return (const struct algo##_params *)&algo##_builtin_params;	\
	}

#endif /* CELLCC_BPF_H */
