/* SPDX-License-Identifier: GPL-2.0 */
/*
 * PropRate: the gains k_f, k_d and the waveform's peak delay from T (§3, Eq. 3-8).
 *
 * Twin of crates/cellcc-congestion/src/proprate/params.rs, read side by side:
 *   struct pr_gains                    Gains
 *   proprate_eq8                       eq8
 *   pr_update_gains                    regime, eq7 and Gains::new
 *
 * Part of bpf/proprate.bpf.c, included once where its section was (after the constants,
 * the per-socket state struct and the parameters); not a standalone header.
 */
#ifndef CELLCC_PROPRATE_PARAMS_H
#define CELLCC_PROPRATE_PARAMS_H

/* Gains of one regime, Q16, and the waveform's peak buffer delay. */
struct pr_gains {
	__u64 k_f_q16;
	__u64 k_d_q16;
	__u64 u_q16;
	__u64 d_max_us;
};

/* Eq. 8 for threshold t, base RTT rtt and latency room budget = L_max - RTT > 2t (all
 * below 2^27 us). A global function, verified once (see proprate_nfl_step_us). */
__noinline int proprate_eq8(__u64 t, __u64 rtt, __u64 budget, __u64 k_d_min, struct pr_gains *g)
{
	__u64 x_q32, s_q31, u_q31, t2u, k_f, u3, d_max, t_f, idle_q16, a, b, num, den, k_d;
	int num_pos, den_pos, i;

	if (!g)
		return 0;
	t = min_u64(max_u64(t, 1), 1ULL << 27);
	rtt = min_u64(rtt, 1ULL << 27);
	budget = min_u64(max_u64(budget, 1), 1ULL << 27);
	/* PropRate Eq. (8): U = (2T / (L_max - RTT))^(1/4), capped at 1. */
	x_q32 = min_u64((2 * t << 32) / budget, (1ULL << 32) - 1);
	s_q31 = isqrt64(max_u64(x_q32, 1) << 30);
	u_q31 = isqrt64(max_u64(s_q31, 1) << 31);
	if (!u_q31)
		u_q31 = 1;
	/* 2T/U, us. */
	t2u = (2 * t << 31) / u_q31;
	/* PropRate Eq. (8): k_f = (2/U·T + RTT) / (T + RTT). */
	k_f = ((t2u + rtt) << 16) / (t + rtt);
	/* PropRate Eq. (4): D_max = U³·(L_max - RTT). */
	u3 = (((u_q31 * u_q31) >> 31) * u_q31) >> 31;
	d_max = (budget * u3) >> 31;
	/* PropRate §3.1: t_f = D_max/(k_f - 1), with k_f - 1 = (2T/U - T)/(T + RTT) > 0. */
	t_f = t2u > t ? mul_sat(d_max, t + rtt) / (t2u - t) : 0;
	/* (1 - U)/U in Q16. */
	idle_q16 = (((1ULL << 31) - min_u64(u_q31, 1ULL << 31)) << 16) / u_q31;
	/* PropRate Eq. (8): k_d = (RTT - (1-U)/U·k_f·t_f) / (1/U·T + RTT - (1-U)/U·t_f). */
	a = mul_sat((idle_q16 * k_f) >> 16, t_f) >> 16;
	b = mul_sat(idle_q16, t_f) >> 16;
	num_pos = rtt >= a;
	num = num_pos ? rtt - a : a - rtt;
	den = t2u / 2 + rtt;
	den_pos = den >= b;
	den = den_pos ? den - b : b - den;
	if (!den)
		k_d = num_pos && num ? K_D_MAX_Q16 : k_d_min;
	else if (num_pos != den_pos || !num)
		k_d = k_d_min; /* k_d <= 0: the model's own infeasibility (reference decision 2) */
	else if (num >= den)
		k_d = K_D_MAX_Q16;
	else {
		for (i = 0; i < 24 && den >= (1ULL << 46); i++) {
			num >>= 1;
			den >>= 1;
		}
		k_d = den ? (num << 16) / den : k_d_min;
	}
	g->u_q16 = u_q31 >> 15;
	g->k_f_q16 = min_u64(k_f, 0xffffffffULL);
	g->k_d_q16 = k_d;
	g->d_max_us = d_max;
	return 1;
}

/* The gains for the current T and base RTT, clamped (reference params.rs). */
static __always_inline void pr_update_gains(struct proprate *ca, const struct pr_cfg *c, __u64 rtt)
{
	__u64 t = ca->threshold_us, room, k_f, k_d;

	room = c->l_max_us > rtt ? c->l_max_us - rtt : 0;
	/* PropRate Eq. (6): buffer emptied iff t_buff_bar < (L_max - RTT)/2. */
	if (room && 2 * c->t_buff_us < room) {
		struct pr_gains g = {};

		ca->regime = PR_BUFFER_EMPTIED;
		proprate_eq8(t, rtt, room, c->k_d_min_q16, &g);
		ca->k_f_q16 = g.k_f_q16;
		ca->k_d_q16 = g.k_d_q16;
		ca->u_q16 = g.u_q16;
		ca->d_max_us = g.d_max_us;
	} else {
		ca->regime = PR_BUFFER_FULL;
		/* PropRate Eq. (7). */
		ca->k_f_q16 = ((t + t / 2 + rtt) << 16) / (t + rtt);
		ca->k_d_q16 = ((t / 2 + rtt) << 16) / (t + rtt);
		ca->u_q16 = Q16;
		/* PropRate Eq. (3) with t_buff_bar = T: D_max = D_min + T = 3T/2. */
		ca->d_max_us = t + t / 2;
	}
	k_f = ca->k_f_q16;
	k_d = ca->k_d_q16;
	ca->k_f_q16 = k_f >= K_F_MIN_Q16 ? k_f : K_F_MIN_Q16;
	ca->k_d_q16 = k_d >= c->k_d_min_q16 ? min_u64(k_d, K_D_MAX_Q16) : c->k_d_min_q16;
}

#endif /* CELLCC_PROPRATE_PARAMS_H */
