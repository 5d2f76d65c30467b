/* SPDX-License-Identifier: GPL-2.0 */
/*
 * César: BW_ewma, pacing and the step-wise cwnd update (§IV-D, §IV-E, Eq. 2-10).
 *
 * Twin of crates/cellcc-congestion/src/cesar/steps.rs, read side by side:
 *   cesar_ewma                         ewma (Eq. 2)
 *   cesar_rho                          rho (Eq. 4); pacing_gain (Eq. 3) is inline in
 *                                      step_paper and step_module
 *   congestive_delay                   congestive_delay (Eq. 6)
 *   bandwidth_reduction                bandwidth_reduction (Eq. 7)
 *   shrink                             shrink (Eq. 5)
 *   increase                           increase (Eq. 8-10)
 *   struct cesar_step_in               SetInput
 *   step_paper, step_module            Step::on_set_paper, on_set_module
 *
 * Part of bpf/cesar.bpf.c, included once where its section was (after the constants,
 * the per-socket state struct and the parameters); not a standalone header.
 */
#ifndef CELLCC_CESAR_STEPS_H
#define CELLCC_CESAR_STEPS_H

/* César Eq. (2): (1 - gamma)*prev + gamma*sample, rounded. */
static __always_inline __u64 cesar_ewma(__u64 prev, __u64 sample, __u64 gamma)
{
	gamma = min_u64(gamma, Q16);
	return (prev * (Q16 - gamma) + sample * gamma + Q16 / 2) >> 16;
}

/* César Eq. (4): rho = 1 - (alpha - 1)/alpha * (RTT - RTT_min)/RTT, Q16, in [1/alpha, 1]. */
static __always_inline __u64 cesar_rho(__u64 alpha, __u64 rtt, __u64 min_rtt)
{
	__u64 queue, share, penalty;

	if (!rtt || alpha <= Q16)
		return Q16;
	queue = min_u64(rtt > min_rtt ? rtt - min_rtt : 0, rtt);
	share = (queue << 16) / rtt;
	penalty = (alpha - Q16) * share / alpha;
	return Q16 - min_u64(penalty, Q16);
}

/* César Eq. (6): CD = (RTT_i - RTT_{i-1})*BW_set/BW_i; without BW_set the ratio is 1. */
static __always_inline __u64 congestive_delay(__u64 rtt, __u64 prev, __u64 bwset, __u64 bw)
{
	__u64 rise = rtt > prev ? rtt - prev : 0;

	return bwset && bw ? mul_div(rise, bwset, bw) : rise;
}

/* César Eq. (7): BR = (RTT_i - RTT_min)*max(0, BW_ewma - BW_i)/BW_ewma. */
static __always_inline __u64 bandwidth_reduction(__u64 rtt, __u64 min_rtt, __u64 ewma, __u64 bw)
{
	if (bw >= ewma || !ewma)
		return 0;
	return mul_div(rtt > min_rtt ? rtt - min_rtt : 0, ewma - bw, ewma);
}

/* César Eq. (5) and (9): (1 - beta)*W + beta*W*RTT_min/(RTT_min + x), evaluated as
 * W - beta*W*x/(RTT_min + x). */
static __always_inline __u64 shrink(__u64 w, __u64 beta, __u64 min_rtt, __u64 x)
{
	__u64 frac, cut;

	if (!x)
		return w;
	x = min_u64(x, 1ULL << 40);
	frac = (x << 16) / (min_rtt + x); /* <= 1.0; min_rtt + x >= x > 0 */
	cut = mul_sat(mul_sat(w, min_u64(beta, Q16)) >> 16, frac) >> 16;
	return w - min_u64(cut, w);
}

/* The increase term of César Eq. (8), bytes:
 * BW_ewma*SU*rho*(RTT_{i-1} - RTT_i)/(RTT_{i-1} - RTT_min). Zero when
 * RTT_{i-1} = RTT_min, where the module divides by zero. */
static __always_inline __u64 increase(__u64 ewma, __u64 su, __u64 mss, __u64 rho,
				      __u64 prev, __u64 rtt, __u64 min_rtt)
{
	__u64 span = prev > min_rtt ? prev - min_rtt : 0;
	__u64 fall = min_u64(prev > rtt ? prev - rtt : 0, span);
	__u64 ratio, v;

	if (!span || !fall)
		return 0;
	ratio = (fall << 16) / span;
	v = mul_sat(ewma, su);             /* packets << 24 in one SU */
	v = mul_sat(v, rho) >> 16;
	v = mul_sat(v, ratio) >> 16;
	return mul_sat(v, mss) >> BW_SCALE;
}

/* Inputs of one set's adjustment. */
struct cesar_step_in {
	__u64 rtt;          /* RTT_i: the anchor's RTT */
	__u64 min_rtt;
	__u64 bw;           /* BW_i */
	__u64 bwset;        /* BW_set, 0 = unknown */
	__u64 su;
	__u64 mss;
	__u64 rs_interval;  /* module: interval of the ACK that closed the set, 0 = none */
};

/* The paper's adjustment at anchor i: Eq. 2-10 in that order. */
static __always_inline void step_paper(struct cesar *ca, const struct cesar_cfg *c,
				       const struct cesar_step_in *in)
{
	__u64 rho, br, cd, inc, u, r;

	/* César Eq. (2). */
	ca->bw_ewma = max_u64(cesar_ewma(ca->bw_ewma, in->bw, c->gamma), 1);
	/* César Eq. (4) and (3). */
	rho = cesar_rho(c->alpha, in->rtt, in->min_rtt);
	ca->pacing_gain_q16 = (c->alpha * rho) >> 16;
	if (ca->has_prev_rtt) {
		/* César Eq. (7). */
		br = bandwidth_reduction(in->rtt, in->min_rtt, ca->bw_ewma, in->bw);
		if (in->rtt > ca->prev_rtt_us) {
			/* César Eq. (6) and (5). */
			cd = congestive_delay(in->rtt, ca->prev_rtt_us, in->bwset, in->bw);
			ca->cwnd_bytes = shrink(ca->cwnd_bytes, c->beta, in->min_rtt, cd + br);
			ca->decreases++;
		} else {
			/* César Eq. (8). */
			inc = increase(ca->bw_ewma, in->su, in->mss, rho, ca->prev_rtt_us, in->rtt,
				       in->min_rtt);
			u = ca->cwnd_bytes + inc;
			/* César Eq. (9) and (10). */
			r = shrink(u, c->beta, in->min_rtt, br);
			ca->cwnd_bytes = max_u64(ca->cwnd_bytes, r);
			ca->increases++;
		}
	}
	ca->prev_rtt_us = in->rtt;
	ca->has_prev_rtt = 1;
}

/* The module's adjustment (its formulas; the division by zero of the increase guarded). */
static __always_inline void step_module(struct cesar *ca, const struct cesar_cfg *c,
					const struct cesar_step_in *in)
{
	__u64 r1 = in->rtt, r_min = in->min_rtt, b = in->bw, big_b = ca->bw_ewma;
	__u64 occupancy = 0, factor, r0, br, inc, shrunk, rise;

	/* Queue occupancy from the closing ACK's interval; the pacing gain changes only
	 * when that interval exceeds RTT_min. */
	if (in->rs_interval > r_min && in->rs_interval) {
		occupancy = 100 * (in->rs_interval - r_min) / in->rs_interval;
		factor = (MODULE_GAIN_DENOM - min_u64(occupancy, MODULE_GAIN_DENOM)) * Q16 /
			 MODULE_GAIN_DENOM;
		ca->pacing_gain_q16 = (c->alpha * factor) >> 16;
	}
	factor = (MODULE_GAIN_DENOM - min_u64(occupancy, MODULE_GAIN_DENOM)) * Q16 /
		 MODULE_GAIN_DENOM;
	/* RTT_{i-1} starts at 0, so the first adjustment always takes the decrease. */
	r0 = ca->has_prev_rtt ? ca->prev_rtt_us : 0;
	br = bandwidth_reduction(r1, r_min, big_b, b);
	if (r1 <= r0) {
		inc = increase(big_b, in->su, in->mss, factor, r0, r1, r_min);
		shrunk = shrink(ca->cwnd_bytes, c->beta, r_min, br);
		ca->cwnd_bytes = max_u64(ca->cwnd_bytes, shrunk + inc);
		ca->increases++;
	} else {
		/* BW_set/BW_i only damps the rise (ratio capped at 1). */
		rise = r1 - r0;
		if (in->bwset && b > in->bwset)
			rise = mul_div(rise, in->bwset, b);
		ca->cwnd_bytes = shrink(ca->cwnd_bytes, c->beta, r_min, br + rise);
		ca->decreases++;
	}
	/* EWMA after the adjustment, each term floored. */
	ca->bw_ewma = max_u64(big_b - ((big_b * c->gamma) >> 16) + ((b * c->gamma) >> 16), 1);
	ca->prev_rtt_us = r1;
	ca->has_prev_rtt = 1;
}

#endif /* CELLCC_CESAR_STEPS_H */
