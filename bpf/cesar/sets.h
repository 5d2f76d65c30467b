/* SPDX-License-Identifier: GPL-2.0 */
/*
 * César: sets, anchors and their bandwidths (§IV-C, §IV-D, Eq. 1, BW_set of Eq. 6).
 *
 * Twin of crates/cellcc-congestion/src/cesar/sets.rs, read side by side:
 *   bw_over_rtt, bw_over_interval,     bw_over_rtt, bw_over_interval, bw_set
 *   bw_set
 *   set_margin, new_set_threshold      margin, new_set_threshold
 *   struct cesar_obs                   AckObs
 *   struct cesar_set                   ClosedSet
 *   sets_paper                         PaperSets::on_ack
 *   sets_module, sets_module_close     ModuleSets::on_ack, close
 *
 * Part of bpf/cesar.bpf.c, included once where its section was (after the constants,
 * the per-socket state struct and the parameters); not a standalone header.
 */
#ifndef CELLCC_CESAR_SETS_H
#define CELLCC_CESAR_SETS_H

/* César Eq. (1): BW_i = Delivered_i / RTT_i, packets/us << 24; 0 = no sample. */
static __always_inline __u64 bw_over_rtt(__s64 delivered, __s64 rtt_us)
{
	if (delivered <= 0 || rtt_us <= 0)
		return 0;
	return min_u64(((__u64)delivered << BW_SCALE) / (__u64)rtt_us, BW_MAX);
}

/* The module's BW_i: the tcp_rate sample delivered / interval_us; 0 = invalid. */
static __always_inline __u64 bw_over_interval(__s64 delivered, __s64 interval_us)
{
	if (delivered <= 0 || interval_us <= 0)
		return 0;
	return min_u64(((__u64)delivered << BW_SCALE) / (__u64)interval_us, BW_MAX);
}

/* BW_set (César Eq. 6): packets acked in the set over its duration; 0 = unknown. */
static __always_inline __u64 bw_set(__u64 delivered, __u64 duration_us)
{
	if (!delivered || !duration_us)
		return 0;
	return min_u64(mul_sat(delivered, 1ULL << BW_SCALE) / duration_us, BW_MAX);
}

static __always_inline __u64 set_margin(__u64 su)
{
	return su <= SMALL_SU_US ? MARGIN_SMALL_SU_US : MARGIN_US;
}

/* Gaps at least this long start a new set: SU - margin, at least SU/2. */
static __always_inline __u64 new_set_threshold(__u64 su)
{
	__u64 m = set_margin(su);

	return max_u64(su > m ? su - m : 0, su / 2);
}

/* A set that just closed, described by its anchor. */
struct cesar_set {
	__u64 delivered;
	__u64 duration_us;  /* 0 = unknown */
	__u64 rtt_us;
	__u64 bw;           /* 0 = no valid sample up to the anchor */
};

/* One observed ACK, as the set rules read it. */
struct cesar_obs {
	__u64 now_us;
	__u64 acked;
	__u64 rtt_us;
	__u64 bw;           /* 0 = invalid sample */
};

/* The paper's set rule: a gap >= SU - margin or an age > SU starts a new set; the set's
 * duration is the time between the previous and this anchor. */
static __always_inline int sets_paper(struct cesar *ca, const struct cesar_obs *o, __u64 su,
				      struct cesar_set *out)
{
	int closed = 0;

	if (o->bw) {
		ca->ps_last_bw = o->bw;
		ca->ps_has_last_bw = 1;
	}
	if (ca->open) {
		__u64 gap = o->now_us > ca->open_last_us ? o->now_us - ca->open_last_us : 0;
		__u64 age = o->now_us > ca->open_first_us ? o->now_us - ca->open_first_us : 0;

		if (gap >= new_set_threshold(su) || age > su) {
			out->delivered = ca->open_delivered;
			out->duration_us = ca->has_prev_end && ca->open_last_us > ca->prev_end_us ?
					   ca->open_last_us - ca->prev_end_us : 0;
			out->rtt_us = ca->open_rtt_us;
			out->bw = ca->open_has_bw ? ca->open_bw : 0;
			ca->prev_end_us = ca->open_last_us;
			ca->has_prev_end = 1;
			ca->open = 0;
			closed = 1;
		}
	}
	if (!ca->open) {
		ca->open = 1;
		ca->open_first_us = o->now_us;
		ca->open_delivered = 0;
	}
	ca->open_last_us = o->now_us;
	ca->open_delivered += o->acked;
	ca->open_rtt_us = o->rtt_us;
	ca->open_bw = ca->ps_last_bw;
	ca->open_has_bw = ca->ps_has_last_bw;
	return closed;
}

static __always_inline void sets_module_close(struct cesar *ca, struct cesar_set *out)
{
	out->delivered = ca->ms_delivered;
	out->duration_us = ca->ms_interval_us;
	out->rtt_us = ca->ms_prev_rtt_us;
	out->bw = ca->ms_has_prev_bw ? ca->ms_prev_bw : 0;
	ca->ms_gathering = 0;
	ca->ms_interval_us = 0;
	ca->ms_delivered = 0;
	ca->ms_clock_pass_us = 0;
}

/* The module's set rule: one-ACK lag, clock_pass bounding a set, the large gap before
 * a set as its duration. */
static __always_inline int sets_module(struct cesar *ca, const struct cesar_obs *o, __u64 su,
				       struct cesar_set *out)
{
	__u64 next_gap = 0;
	int closed = 0;

	if (ca->ms_has_prev) {
		__u64 margin = set_margin(su);
		__u64 th = su > margin ? su - margin : 0;
		__u64 raw = o->now_us > ca->ms_prev_time_us ? o->now_us - ca->ms_prev_time_us : 0;
		__u64 g_prev = ca->ms_prev_gap_us + ca->ms_clock_pass_us;
		__u64 g_cur = raw + ca->ms_clock_pass_us;
		int prev_large = g_prev >= th, cur_large = g_cur >= th;

		next_gap = raw;
		if (prev_large && !cur_large) {
			/* The previous ACK opened a set after a large gap. */
			__u64 k, whole;

			ca->ms_delivered += ca->ms_prev_acked;
			ca->ms_interval_us = g_prev;
			ca->ms_gathering = 1;
			/* A gap past a whole number of SUs by more than the margin carries its
			 * excess into this set's clock (skipped grants). */
			k = su ? max_u64((ca->ms_prev_gap_us + su / 2) / su, 1) : 1;
			whole = mul_sat(su, k);
			if (ca->ms_prev_gap_us > whole + margin &&
			    ca->ms_prev_gap_us >= su + MODULE_EXCESS_MIN_US)
				ca->ms_clock_pass_us += ca->ms_prev_gap_us - whole;
		} else if (prev_large && cur_large) {
			/* The previous ACK was a set on its own. */
			ca->ms_delivered += ca->ms_prev_acked;
			ca->ms_interval_us = g_prev;
			sets_module_close(ca, out);
			closed = 1;
		} else if (!prev_large && cur_large) {
			/* The set ended with the previous ACK. */
			if (ca->ms_gathering) {
				ca->ms_delivered += ca->ms_prev_acked;
				sets_module_close(ca, out);
				closed = 1;
			}
			if (raw < th)
				next_gap = g_cur; /* the boundary came from clock_pass */
		} else if (ca->ms_gathering) {
			/* Inside a set. */
			ca->ms_delivered += ca->ms_prev_acked;
			ca->ms_clock_pass_us += ca->ms_prev_gap_us;
		}
	}
	ca->ms_prev_gap_us = next_gap;
	ca->ms_prev_acked = o->acked;
	ca->ms_prev_time_us = o->now_us;
	ca->ms_has_prev = 1;
	ca->ms_prev_rtt_us = o->rtt_us;
	if (o->bw) {
		ca->ms_prev_bw = o->bw; /* invalid samples are skipped, not used */
		ca->ms_has_prev_bw = 1;
	}
	return closed;
}

#endif /* CELLCC_CESAR_SETS_H */
