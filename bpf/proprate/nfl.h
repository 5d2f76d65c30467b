/* SPDX-License-Identifier: GPL-2.0 */
/*
 * PropRate: the negative-feedback loop on the threshold T (§3.2, Fig. 4, Eq. 9).
 *
 * Twin of crates/cellcc-congestion/src/proprate/nfl.rs, read side by side:
 *   pr_update_threshold                Nfl::on_sample, then adjust
 *   proprate_nfl_step_us               log_step; it sits with the integer helpers of
 *                                      proprate.bpf.c, next to the log2 it uses
 *
 * Part of bpf/proprate.bpf.c, included once where its section was (after the constants,
 * the per-socket state struct and the parameters); not a standalone header.
 */
#ifndef CELLCC_PROPRATE_NFL_H
#define CELLCC_PROPRATE_NFL_H

static __always_inline void pr_update_threshold(struct proprate *ca, const struct tcp_sock *tp,
						const struct pr_cfg *c, __u64 t_buff)
{
	__u64 bdp = pr_bdp_packets(ca, tp), t_sample, t = ca->threshold_us;

	if (!ca->nfl_started) {
		ca->nfl_started = 1;
		ca->nfl_start = tp->delivered;
	}
	ca->nfl_sum_us += t_buff;
	ca->nfl_count++;
	if ((__u32)(tp->delivered - ca->nfl_start) < bdp)
		return;
	t_sample = ca->nfl_count ? ca->nfl_sum_us / ca->nfl_count : 0;
	ca->nfl_start = tp->delivered;
	ca->nfl_sum_us = 0;
	ca->nfl_count = 0;
	if (!ca->has_t_actual) {
		ca->has_t_actual = 1;
		ca->t_actual_us = t_sample;
	} else {
		/* PropRate Eq. (9): t_actual = 7/8·t_actual + 1/8·t_sample. */
		ca->t_actual_us = ca->t_actual_us - (ca->t_actual_us >> 3) + (t_sample >> 3);
	}
	if (!c->nfl)
		return;
	/* PropRate §3.2 with Fig. 4's signs: down in Fill, up in Drain. */
	if (ca->state == PR_BUFFER_FILL && ca->t_actual_us > c->t_buff_us) {
		__u64 step = proprate_nfl_step_us(ca->t_actual_us - c->t_buff_us);

		t = t > step ? t - step : 0;
	} else if (ca->state == PR_BUFFER_DRAIN && ca->t_actual_us < c->t_buff_us) {
		t += proprate_nfl_step_us(c->t_buff_us - ca->t_actual_us);
	}
	ca->threshold_us = min_u64(max_u64(t, T_MIN_US), c->t_buff_us * T_MAX_FACTOR);
}

#endif /* CELLCC_PROPRATE_NFL_H */
