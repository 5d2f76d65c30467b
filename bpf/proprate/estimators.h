/* SPDX-License-Identifier: GPL-2.0 */
/*
 * PropRate: timestamp window, receive rate rho and buffer delay (§4.1, §4.2).
 *
 * Twin of crates/cellcc-congestion/src/proprate/estimators.rs, read side by side:
 *   tsw_at, tsw_clear, tsw_saw_idle,   TimestampWindow (a ring of TSW_SLOTS here):
 *   proprate_tsw_push,                 clear, saw_idle, push,
 *   proprate_tsw_rate                  rate_bytes_per_sec
 *   pr_running_min                     OneWayDelay's RD_min (crate::minmax)
 *   pr_relative_delay                  PropRate::relative_delay (proprate/mod.rs)
 *   pr_rho_fold                        ReceiveRate::fold
 *   pr_rho_floor, pr_bdp_packets       PropRate::rho_bytes_per_sec, bdp_packets (mod.rs)
 *
 * Part of bpf/proprate.bpf.c, included once where its section was (after the constants,
 * the per-socket state struct and the parameters); not a standalone header.
 */
#ifndef CELLCC_PROPRATE_ESTIMATORS_H
#define CELLCC_PROPRATE_ESTIMATORS_H

static __always_inline struct ts_point *tsw_at(struct ts_window *w, __u32 i)
{
	return &w->pts[(w->head + i) & TSW_MASK];
}

static __always_inline void tsw_clear(struct ts_window *w)
{
	w->head = 0;
	w->len = 0;
	w->idle_total = 0;
}

/* Whether an ACK in the window saw the bottleneck buffer empty: idle points from the
 * oldest to the newest, by the running counts (no per-point bookkeeping on eviction). */
static __always_inline int tsw_saw_idle(struct ts_window *w)
{
	struct ts_point *a, *b;

	if (!w->len)
		return 0;
	a = tsw_at(w, 0);
	b = tsw_at(w, w->len - 1);
	return b->idle_cum - a->idle_cum + a->idle > 0;
}

/* How many distinct timestamps a window keeps, and over how many ticks at most. */
struct tsw_limits {
	__u32 max_points;
	__u32 max_span_ticks;
};

/* Record an ACK with receiver timestamp `tick`; returns 1 if it opened a new timestamp
 * (the previous newest one is then complete). A global function: the verifier checks it
 * once, not once per path that reaches a call. */
__noinline int proprate_tsw_push(struct ts_window *w, __u32 tick, __u32 delivered, __u32 idle,
				 const struct tsw_limits *lim)
{
	__u32 max_points, max_span_ticks, n, newest;
	struct ts_point *p;
	int i;

	if (!w || !lim)
		return 0;
	max_points = lim->max_points;
	max_span_ticks = lim->max_span_ticks;
	idle = idle ? 1 : 0;
	if (w->len) {
		p = tsw_at(w, w->len - 1);
		/* Receiver clocks only move forward: an older or equal tick adds to the newest. */
		if ((__s32)(tick - p->tick) <= 0) {
			if ((__s32)(delivered - p->delivered) > 0)
				p->delivered = delivered;
			if (idle && !p->idle) {
				p->idle = 1;
				p->idle_cum++;
				w->idle_total++;
			}
			return 0;
		}
	}
	/* The ring is full: the oldest point makes room. */
	if (w->len >= TSW_SLOTS) {
		w->head = (w->head + 1) & TSW_MASK;
		w->len = TSW_SLOTS - 1;
	}
	w->idle_total += idle;
	p = tsw_at(w, w->len);
	p->tick = tick;
	p->delivered = delivered;
	p->idle = idle;
	p->idle_cum = w->idle_total;
	w->len++;
	/* At most max_points distinct timestamps (§4.2: 50) ... */
	if (w->len > max_points) {
		n = w->len - max_points;
		w->head = (w->head + n) & TSW_MASK;
		w->len = max_points;
	}
	/* ... spanning at most max_span_ticks (§4.2: 500 ms). */
	newest = tick;
	for (i = 0; i < TSW_SLOTS; i++) {
		if (w->len <= 1 || newest - tsw_at(w, 0)->tick <= max_span_ticks)
			break;
		w->head = (w->head + 1) & TSW_MASK;
		w->len--;
	}
	return 1;
}

/* Receive rate over the window, bytes/s: packets delivered after the oldest timestamp up
 * to the newest, times mss, over the ticks between them; 0 with a single tick. */
__noinline __u64 proprate_tsw_rate(struct ts_window *w, __u32 mss, __u32 tick_us)
{
	struct ts_point *a, *b;
	__u64 ticks, bytes;

	if (!w || w->len < 2)
		return 0;
	a = tsw_at(w, 0);
	b = tsw_at(w, w->len - 1);
	ticks = (__u32)(b->tick - a->tick);
	if (!ticks || !tick_us)
		return 0;
	bytes = (__u64)(__u32)(b->delivered - a->delivered) * mss;
	/* 2^32 packets of 64 KiB stay below 2^48; times 10^6 below 2^64 only for 2^44, so
	 * clamp the (absurd) rest. */
	bytes = min_u64(bytes, 1ULL << 43);
	return bytes * (USEC_PER_SEC / tick_us) / ticks;
}

/* ---- Estimators ---- */

/* The kernel's windowed running minimum (three samples), as the reference's Minmax. */
static __u32 pr_running_min(struct pr_minmax_sample *s, __u32 win, __u32 t, __u32 v)
{
	__u32 dt;

	if (v <= s[0].v || t - s[2].t > win) {
		s[0].t = t; s[0].v = v;
		s[1] = s[0];
		s[2] = s[0];
		return v;
	}
	if (v <= s[1].v) {
		s[1].t = t; s[1].v = v;
		s[2] = s[1];
	} else if (v <= s[2].v) {
		s[2].t = t; s[2].v = v;
	}
	dt = t - s[0].t;
	if (dt > win) {
		s[0] = s[1];
		s[1] = s[2];
		s[2].t = t; s[2].v = v;
		if (t - s[0].t > win) {
			s[0] = s[1];
			s[1] = s[2];
			s[2].t = t; s[2].v = v;
		}
	} else if (s[1].t == s[0].t && dt > win / 4) {
		s[1].t = t; s[1].v = v;
		s[2] = s[1];
	} else if (s[2].t == s[1].t && dt > win / 2) {
		s[2].t = t; s[2].v = v;
	}
	return s[0].v;
}

/* PropRate §4.1: RD = t_r - t_s in ticks. t_r is the ACK's TSval; t_s the send tick of
 * the newest (S)ACKed segment (now - rs->rtt_us), else TSecr on an in-order ACK.
 * Returns 0 without a sample. */
static __always_inline int pr_relative_delay(const struct proprate *ca, const struct tcp_sock *tp,
					     const struct rate_sample *rs, __s32 *rd)
{
	__u32 send_tick;

	if (!tp->rx_opt.saw_tstamp)
		return 0;
	if (rs->rtt_us >= 0) {
		__u64 sent_us = tp->tcp_mstamp - (__u64)rs->rtt_us;

		/* Linux TSval = send time in ticks + tsoffset (difference 4). */
		send_tick = (__u32)(sent_us / ca->tick_us) + tp->tsoffset;
	} else if (!ca->slow_path) {
		send_tick = tp->rx_opt.rcv_tsecr;
	} else {
		return 0;
	}
	*rd = (__s32)(tp->rx_opt.rcv_tsval - send_tick);
	return 1;
}

/* Fold one window rate into rho (§4.2: rho is an EWMA of the instantaneous rates). */
static __always_inline void pr_rho_fold(struct proprate *ca, __u64 sample, __u32 gain_x1000)
{
	__u64 d;

	if (!ca->rho) {
		ca->rho = sample;
		return;
	}
	if (sample >= ca->rho) {
		d = (sample - ca->rho) * gain_x1000;
		ca->rho += (d + 500) / 1000;
	} else {
		d = (ca->rho - sample) * gain_x1000;
		ca->rho -= (d + 500) / 1000;
	}
}

/* ⌈rho·RTT⌉ in packets, at least 1: the NFL window and the Drain -> Monitor cap. */
static __always_inline __u64 pr_rho_floor(const struct proprate *ca, __u32 mss)
{
	return max_u64(ca->rho, RHO_MIN_PACKETS_PER_SEC * mss);
}

static __always_inline __u64 pr_bdp_packets(const struct proprate *ca, const struct tcp_sock *tp)
{
	__u32 mss = tp->mss_cache ? tp->mss_cache : 1;
	__u64 bytes = mul_sat(pr_rho_floor(ca, mss), pr_base_rtt_us(tp)) / USEC_PER_SEC;

	return max_u64((bytes + mss - 1) / mss, 1);
}

#endif /* CELLCC_PROPRATE_ESTIMATORS_H */
