/* SPDX-License-Identifier: GPL-2.0 */
/*
 * PropRate: the four states, their bursts and the transitions between them (§4).
 *
 * Twin of crates/cellcc-congestion/src/proprate/states.rs, read side by side:
 *   pr_new_burst                       PropRate::burst, Burst::new
 *   pr_restart_slow_start              PropRate::restart_slow_start (mod.rs)
 *   pr_burst_unsent, pr_burst_done,    Burst::unsent, done, on_ack
 *   pr_burst_on_ack
 *   pr_transition                      PropRate::transition (mod.rs)
 *   pr_update_state                    PropRate::update_state
 *
 * Part of bpf/proprate.bpf.c, included once where its section was (after the constants,
 * the per-socket state struct and the parameters); not a standalone header.
 */
#ifndef CELLCC_PROPRATE_STATES_H
#define CELLCC_PROPRATE_STATES_H

static __always_inline void pr_new_burst(struct proprate *ca, const struct tcp_sock *tp, __u32 len)
{
	ca->burst_len = len;
	pr_mark(ca, tp);
	tsw_clear(&ca->burst_win);
}

static __always_inline void pr_restart_slow_start(struct proprate *ca, const struct tcp_sock *tp,
						  const struct pr_cfg *c)
{
	pr_new_burst(ca, tp, c->burst_packets);
	ca->state = PR_SLOW_START;
	ca->slow_start_bursts++;
}

/* Burst packets not yet sent. */
static __always_inline __u32 pr_burst_unsent(const struct proprate *ca, const struct tcp_sock *tp)
{
	__u32 sent = pr_sent_since(ca, tp);

	return ca->burst_len > sent ? ca->burst_len - sent : 0;
}

/* Every burst packet was delivered or marked lost. */
static __always_inline int pr_burst_done(const struct proprate *ca, const struct tcp_sock *tp)
{
	return (__u64)pr_resolved_since(ca, tp) >= (__u64)ca->mark_in_flight + ca->burst_len;
}

/* Data is delivered in order through the bottleneck: once what was in flight at the
 * burst's start is delivered, ACKs carry the burst's receive times. */
static __always_inline void pr_burst_on_ack(struct proprate *ca, const struct tcp_sock *tp,
					    const struct pr_cfg *c)
{
	struct tsw_limits lim = {
		.max_points = c->rho_points,
		.max_span_ticks = max_u64(c->rho_window_us / ca->tick_us, 1),
	};

	if ((__s32)(tp->delivered - (ca->mark_delivered + ca->mark_in_flight)) >= 0)
		proprate_tsw_push(&ca->burst_win, tp->rx_opt.rcv_tsval, tp->delivered, 0, &lim);
}

/* Every state change goes through here (Fig. 5(b)'s edges; RTO's return to Slow Start
 * is made by set_state). */
static __always_inline void pr_transition(struct proprate *ca, __u32 to)
{
	__u32 from = ca->state;

	if (from == PR_BUFFER_FILL && to == PR_BUFFER_DRAIN)
		ca->fill_to_drain++;
	else if (from == PR_BUFFER_DRAIN && to == PR_BUFFER_FILL)
		ca->drain_to_fill++;
	else if (from == PR_BUFFER_DRAIN && to == PR_MONITOR)
		ca->drain_to_monitor++;
	else if (from == PR_MONITOR && to == PR_BUFFER_FILL)
		ca->monitor_to_fill++;
	else if (from == PR_MONITOR && to == PR_BUFFER_DRAIN)
		ca->monitor_to_drain++;
	else if (!(from == PR_SLOW_START && to == PR_BUFFER_FILL))
		return; /* not an edge of the diagram: refuse */
	ca->transitions++;
	ca->state = to;
}

static __always_inline void pr_update_state(struct proprate *ca, const struct tcp_sock *tp,
					    const struct pr_cfg *c, int have_t_buff, __u64 t_buff)
{
	__u64 rate;

	switch (ca->state) {
	case PR_SLOW_START:
		pr_burst_on_ack(ca, tp, c);
		if (!pr_burst_done(ca, tp))
			return;
		rate = proprate_tsw_rate(&ca->burst_win, tp->mss_cache, ca->tick_us);
		if (rate) {
			/* §4: a rate estimate exists: Slow Start ends. The pause while the
			 * burst was acknowledged must not read as a slow receiver. */
			ca->rho = rate;
			tsw_clear(&ca->rho_win);
			pr_transition(ca, PR_BUFFER_FILL);
		} else {
			/* §4: all packets in one tick: double the burst and repeat. */
			pr_new_burst(ca, tp, min_u64((__u64)ca->burst_len * 2, tp->snd_cwnd_clamp));
			ca->slow_start_bursts++;
		}
		return;
	case PR_BUFFER_FILL:
		/* §3: congestion detected: the (lagged) buffer delay reached T. */
		if (have_t_buff && t_buff >= ca->threshold_us) {
			pr_mark(ca, tp);
			pr_transition(ca, PR_BUFFER_DRAIN);
		}
		return;
	case PR_BUFFER_DRAIN:
		if (have_t_buff && t_buff < ca->threshold_us) {
			/* §3: congestion eased. */
			pr_transition(ca, PR_BUFFER_FILL);
		} else if (pr_sent_since(ca, tp) >= pr_bdp_packets(ca, tp)) {
			/* §4.1: RTT·rho packets sent in Drain: re-measure in Monitor. */
			pr_new_burst(ca, tp, c->burst_packets);
			pr_transition(ca, PR_MONITOR);
		}
		return;
	case PR_MONITOR:
		pr_burst_on_ack(ca, tp, c);
		if (!pr_burst_done(ca, tp))
			return;
		rate = proprate_tsw_rate(&ca->burst_win, tp->mss_cache, ca->tick_us);
		if (!rate)
			return; /* until two timestamps are seen, keep sending at sigma_m */
		if (rate >= ca->rho) {
			/* §4: the network is good: Fill; the estimate joins rho's EWMA. */
			pr_rho_fold(ca, rate, c->rho_gain_x1000);
			pr_transition(ca, PR_BUFFER_FILL);
		} else {
			/* §4: still congested: continue draining. */
			pr_mark(ca, tp);
			pr_transition(ca, PR_BUFFER_DRAIN);
		}
		return;
	}
}

#endif /* CELLCC_PROPRATE_STATES_H */
