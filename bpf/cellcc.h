/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Conventions shared by cellcc's BPF congestion controls (bpf/<algo>.bpf.c) and by the
 * user-space side (crates/cellcc-kernel), which mirrors every struct below as #[repr(C)].
 *
 * Parameters and statistics of a connection are reachable from any process, not only the
 * one holding the socket, so the Tuner, `cellcc kernel set` and `cellcc kernel stats` can
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

/* Include after vmlinux.h, which provides __u16/__u32. */

/* A connection, IPv4 only, as seen by the sender. Addresses are in network byte order
 * (as in struct sock_common); ports are in host byte order. `pad` is zero. */
struct cellcc_flow_key {
	__u32 local_addr;
	__u32 remote_addr;
	__u16 local_port;
	__u16 remote_port;
	__u32 pad;
};

#define CELLCC_STATS_MAX_ENTRIES 4096
#define CELLCC_PARAMS_MAX_ENTRIES 4096

/* ---- Shared helpers for the algorithm programs (not mirrored by user space) ---- */

/* Network to host order for a 16-bit port, without <bpf/bpf_endian.h>. */
static __always_inline __u16 cellcc_ntohs(__u16 v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return __builtin_bswap16(v);
#else
	return v;
#endif
}

/* The flow key of a socket as the sender sees it (see struct cellcc_flow_key). */
static __always_inline void cellcc_flow_key_of(const struct sock *sk, struct cellcc_flow_key *key)
{
	key->local_addr = sk->__sk_common.skc_rcv_saddr;
	key->remote_addr = sk->__sk_common.skc_daddr;
	key->local_port = sk->__sk_common.skc_num;
	key->remote_port = cellcc_ntohs(sk->__sk_common.skc_dport);
	key->pad = 0;
}

#endif /* CELLCC_BPF_H */
