/* SPDX-License-Identifier: GPL-2.0 */
/*
 * César: scheduling-unit estimation from ACK gaps (§IV-B, §IV-C).
 *
 * Twin of crates/cellcc-congestion/src/cesar/su.rs (SuEstimator), read side by side:
 *   hist_weight, hist_window_mean      SuEstimator::weight, window_mean
 *   pct_at_least                       pct(part, whole) >= percent
 *   cesar_paper_peak                   SuEstimator::peak
 *   cesar_paper_lines                  SuEstimator::on_lines (into h->scratch)
 *   cesar_paper_explains               SuEstimator::explains (of h->scratch)
 *   cesar_paper_odd_lines              the odd multiples' sum in SuEstimator::halve
 *   cesar_paper_second_line            the second-line check of SuEstimator::decide_paper
 *   cesar_paper_line_at                one element of `lines` in SuEstimator::fundamental
 *   cesar_paper_candidate              the candidate of SuEstimator::fundamental
 *   cesar_paper_fallback               `lines.rev()...` in SuEstimator::fundamental
 *   cesar_paper_halve                  SuEstimator::halve
 *   cesar_paper_fundamental            SuEstimator::fundamental
 *   cesar_decide_paper                 SuEstimator::decide_paper
 *   cesar_module_peak,                 the peak extraction of
 *   cesar_module_clear                 SuEstimator::decide_module
 *   cesar_decide_module                SuEstimator::decide_module
 *   hist_clear                         the reset after a decision in on_gap
 *   cesar_su_on_ack                    SuEstimator::on_ack, on_gap
 *
 * Part of bpf/cesar.bpf.c, included once where its section was (after the constants,
 * the per-socket state struct and the parameters); not a standalone header. It uses the
 * constants and struct cesar_hist of cesar/su_hist.h and, in cesar_su_on_ack only,
 * struct cesar and struct cesar_cfg. bpf/tests/su_twin.c compiles it for user space,
 * where su.rs's twin test runs the paper rule on the same histograms as the Rust one.
 */
#ifndef CELLCC_CESAR_SU_H
#define CELLCC_CESAR_SU_H

/* A histogram index masked into the array; the barrier keeps the compiler from dropping
 * the mask on the strength of an earlier range check the verifier cannot see. */
static __always_inline __u32 bin_idx(__u32 i)
{
	barrier_var(i);
	return i & BIN_MASK;
}

/* Gaps in the window of bins j-1..=j+1 within FIRST_SU_BIN..BINS-1 (j >= FIRST_SU_BIN). */
static __always_inline __u32 hist_weight(const struct cesar_hist *h, __u32 j)
{
	__u32 w = 0;

	if (j >= BINS)
		return 0;
	w = h->count[bin_idx(j)];
	if (j >= FIRST_SU_BIN + 1)
		w += h->count[bin_idx(j - 1)];
	if (j + 1 < BINS)
		w += h->count[bin_idx(j + 1)];
	return w;
}

/* Mean gap in that window, us; 0 if empty. */
static __always_inline __u64 hist_window_mean(const struct cesar_hist *h, __u32 j)
{
	__u64 n, sum;

	if (j >= BINS)
		return 0;
	n = h->count[bin_idx(j)];
	sum = h->sum_us[bin_idx(j)];
	if (j >= FIRST_SU_BIN + 1) {
		n += h->count[bin_idx(j - 1)];
		sum += h->sum_us[bin_idx(j - 1)];
	}
	if (j + 1 < BINS) {
		n += h->count[bin_idx(j + 1)];
		sum += h->sum_us[bin_idx(j + 1)];
	}
	return n ? sum / n : 0;
}

static __always_inline __u64 abs_diff(__u64 a, __u64 b)
{
	return a > b ? a - b : b - a;
}

/* Whether part is at least `percent` % of whole (of 1 when whole is 0): su.rs's
 * pct(part, whole) >= percent, without its division (floor(100 * part / whole) >= percent
 * exactly when 100 * part >= percent * whole). */
static __always_inline int pct_at_least(__u32 part, __u32 whole, __u32 percent)
{
	return (__u64)part * 100 >= (__u64)(whole ? whole : 1) * percent;
}

/*
 * The decisions scan the 40 bins several times. Each scan that yields a bin index or a
 * count, and each step that repeats such scans, is a global function of its own: the
 * verifier checks a global function once, with unknown arguments, and the caller sees an
 * unknown result; inside one function, a scan that remembered its best index as a known
 * constant per iteration would multiply the paths the verifier walks by two per bin.
 */

/* Paper rule: the window holding most set gaps (ties: fuller centre bin, then the shorter
 * gap); returns BINS if it holds fewer than MIN_LINE gaps. */
__noinline int cesar_paper_peak(struct cesar_hist *h)
{
	__u32 i, w, c, peak = BINS, best_w = 0, best_c = 0;

	if (!h)
		return BINS;
	for (i = FIRST_SU_BIN + 1; i < BINS; i++) {
		w = hist_weight(h, i);
		c = h->count[i];
		if (peak == BINS || w > best_w || (w == best_w && c > best_c)) {
			peak = i;
			best_w = w;
			best_c = c;
		}
	}
	return best_w >= MIN_LINE ? peak : BINS;
}

/* Paper rule: count the gaps on each multiple k*SU (within the line tolerance) into
 * h->scratch[k], the last slot (k = BINS) collecting all higher multiples; slot 0 is
 * unused. All zero when su is 0. */
__noinline int cesar_paper_lines(struct cesar_hist *h, __u64 su)
{
	__u64 mean, k;
	__u32 i, c;

	if (!h)
		return 0;
	for (i = 0; i < BIN_SLOTS; i++)
		h->scratch[i] = 0;
	if (!su)
		return 0;
	for (i = NEAR_ZERO_BINS; i < BINS; i++) {
		c = h->count[i];
		if (!c)
			continue;
		mean = h->sum_us[i] / c;
		k = (mean + su / 2) / su;
		if (k >= 1 && abs_diff(mean, k * su) <= LINE_TOLERANCE_US)
			h->scratch[bin_idx(k < BINS ? k : BINS)] += c;
	}
	return 1;
}

/* Paper rule: whether the SU whose line counts are in h->scratch explains the set gaps:
 * >= ON_LINE_MIN_PERCENT of them on its multiples, and for every coarser grid m*SU
 * (m = 2..=BINS) >= MIN_LINE of them on multiples k*SU with k not a multiple of m, gaps
 * the coarser grid cannot hold. */
__noinline int cesar_paper_explains(struct cesar_hist *h, __u32 set_gaps)
{
	__u32 k, m, on = 0, off_grid;

	if (!h)
		return 0;
	for (k = 1; k <= BINS; k++)
		on += h->scratch[k];
	if (!pct_at_least(on, set_gaps, ON_LINE_MIN_PERCENT))
		return 0;
	for (m = 2; m <= BINS; m++) {
		off_grid = 0;
		for (k = 1; k <= BINS; k++)
			if (k % m)
				off_grid += h->scratch[k];
		if (off_grid < MIN_LINE)
			return 0;
	}
	return 1;
}

/* Paper rule: the gaps in h->scratch on odd multiples (1, 3, 5, ...) of the SU. */
__noinline __u32 cesar_paper_odd_lines(struct cesar_hist *h)
{
	__u32 k, odd = 0;

	if (!h)
		return 0;
	for (k = 1; k <= BINS; k += 2)
		odd += h->scratch[k];
	return odd;
}

/* Paper rule: whether a second multiple (2*SU, 3*SU, ...) in h->scratch holds a line
 * (>= MIN_LINE gaps and >= SECOND_LINE_MIN_PERCENT of the set gaps). */
__noinline int cesar_paper_second_line(struct cesar_hist *h, __u32 set_gaps)
{
	__u32 k, c;

	if (!h)
		return 0;
	for (k = 2; k <= BINS; k++) {
		c = h->scratch[k];
		if (c >= MIN_LINE && pct_at_least(c, set_gaps, SECOND_LINE_MIN_PERCENT))
			return 1;
	}
	return 0;
}

/* Paper rule: the mean gap of window j if it is a line below the peak whose multiple
 * (k >= 2, within the line tolerance) the peak's mean gap is: >= MIN_LINE gaps and a
 * local maximum; 0 if it is not (j >= FIRST_SU_BIN + 1, j + 1 < BINS). */
static __always_inline __u64 cesar_paper_line_at(const struct cesar_hist *h, __u32 j,
						  __u64 peak_mean)
{
	__u64 su, k;
	__u32 w;

	w = hist_weight(h, j);
	if (w < MIN_LINE || w < hist_weight(h, j - 1) || w < hist_weight(h, j + 1))
		return 0;
	su = hist_window_mean(h, j);
	if (!su)
		return 0;
	k = (peak_mean + su / 2) / su;
	if (k < 2 || abs_diff(peak_mean, k * su) > LINE_TOLERANCE_US)
		return 0;
	return su;
}

/* Paper rule: the candidate SU, the mean gap of the smallest line below the peak whose
 * multiple the peak is and which is frequent (>= SECOND_LINE_MIN_PERCENT of the set
 * gaps) (§IV-C "smallest least common multiple of the ACK interval pattern that
 * frequently appears"), else the peak's mean gap. */
__noinline __u64 cesar_paper_candidate(struct cesar_hist *h, __u32 peak, __u32 set_gaps)
{
	__u64 peak_mean, su;
	__u32 j;

	if (!h)
		return 0;
	peak_mean = hist_window_mean(h, peak);
	for (j = FIRST_SU_BIN + 1; j < BINS - 1; j++) {
		if (j >= peak)
			break;
		su = cesar_paper_line_at(h, j, peak_mean);
		if (su && pct_at_least(hist_weight(h, j), set_gaps, SECOND_LINE_MIN_PERCENT))
			return su;
	}
	return peak_mean;
}

/* Paper rule, for a candidate that does not explain the set gaps: the mean gap of the
 * largest line below the peak (scanning down from it), whose multiple the peak is,
 * shorter than the candidate and explaining the set gaps however few it holds itself
 * (the coarsest grid that fits); the candidate if none does. */
__noinline __u64 cesar_paper_fallback(struct cesar_hist *h, __u32 peak, __u64 candidate,
				      __u32 set_gaps)
{
	__u64 peak_mean, su;
	__u32 j;

	if (!h)
		return candidate;
	peak_mean = hist_window_mean(h, peak);
	for (j = BINS - 2; j > FIRST_SU_BIN; j--) {
		if (j >= peak)
			continue;
		su = cesar_paper_line_at(h, j, peak_mean);
		if (!su || su >= candidate)
			continue;
		cesar_paper_lines(h, su);
		if (cesar_paper_explains(h, set_gaps))
			return su;
	}
	return candidate;
}

/* Paper rule: su halved while it explains the set gaps and its half (>= 2 ms) explains
 * them too with a frequent line's worth of them (>= MIN_LINE and >= SECOND_LINE_MIN_PERCENT)
 * on its odd multiples, where a grid of su cannot put a gap. */
__noinline __u64 cesar_paper_halve(struct cesar_hist *h, __u64 su, __u32 set_gaps)
{
	__u64 half;
	__u32 n, odd;

	if (!h)
		return su;
	for (n = 0; n < MAX_HALVINGS; n++) {
		cesar_paper_lines(h, su);
		if (!cesar_paper_explains(h, set_gaps))
			break;
		half = su / 2;
		if (half < MIN_HALVED_SU_US)
			break;
		cesar_paper_lines(h, half);
		odd = cesar_paper_odd_lines(h);
		if (odd < MIN_LINE || !pct_at_least(odd, set_gaps, SECOND_LINE_MIN_PERCENT))
			break;
		if (!cesar_paper_explains(h, set_gaps))
			break;
		su = half;
	}
	return su;
}

/* Paper rule: the SU for the peak in window `peak`: the candidate if it explains the set
 * gaps, else the fallback line, then halved while its half is the SU; 0 if none. */
__noinline __u64 cesar_paper_fundamental(struct cesar_hist *h, __u32 peak, __u32 set_gaps)
{
	__u64 candidate, su;

	if (!h)
		return 0;
	candidate = cesar_paper_candidate(h, peak, set_gaps);
	if (!candidate)
		return 0;
	cesar_paper_lines(h, candidate);
	if (cesar_paper_explains(h, set_gaps))
		su = candidate;
	else
		su = cesar_paper_fallback(h, peak, candidate, set_gaps);
	return cesar_paper_halve(h, su, set_gaps);
}

/* The paper rule (reference su.rs). Returns the decision; *su_out gets the SU of a
 * pattern. CESAR_DECISION_NONE = keep collecting (too few gaps between sets yet). */
static __always_inline int cesar_decide_paper(struct cesar_hist *h, __u32 period, __u32 *su_out)
{
	__u32 all, near_zero, set_gaps, peak;
	int bursty;
	__u64 su;

	all = h->gaps;
	near_zero = h->count[0] + h->count[1];
	set_gaps = all > near_zero ? all - near_zero : 0;
	if (set_gaps < MIN_SET_GAPS && (__u64)all < (__u64)period * MAX_DEFERRAL)
		return CESAR_DECISION_NONE;
	peak = cesar_paper_peak(h);
	if (peak >= BINS)
		return CESAR_DECISION_NO_PATTERN;
	su = cesar_paper_fundamental(h, peak, set_gaps);
	if (!su || su > 0xffffffffULL)
		return CESAR_DECISION_NO_PATTERN;
	cesar_paper_lines(h, su);
	bursty = near_zero >= MIN_LINE && pct_at_least(near_zero, all, BURST_MIN_PERCENT);
	if (cesar_paper_explains(h, set_gaps) && (bursty || cesar_paper_second_line(h, set_gaps))) {
		*su_out = su;
		return CESAR_DECISION_PATTERN;
	}
	return CESAR_DECISION_NO_PATTERN;
}

/* Module rule: the largest bin of the triangular histogram (h->scratch) among bins
 * MODULE_FIRST_PEAK_BIN.., lowest index on ties; returns index << 32 | value, 0 when
 * all are empty. */
__noinline __u64 cesar_module_peak(struct cesar_hist *h)
{
	__u32 i, bi = 0, bv = 0, v;

	if (!h)
		return 0;
	for (i = MODULE_FIRST_PEAK_BIN; i < BINS; i++) {
		v = h->scratch[i];
		if (v > bv) {
			bv = v;
			bi = i;
		}
	}
	return ((__u64)bi << 32) | bv;
}

/* Module rule: clear bins lo..=hi of the triangular histogram. */
__noinline int cesar_module_clear(struct cesar_hist *h, __u32 lo, __u32 hi)
{
	__u32 i;

	if (!h)
		return 0;
	for (i = 0; i < BINS; i++)
		if (i >= lo && i <= hi)
			h->scratch[i] = 0;
	return 1;
}

/* The reference module's rule: triangular histogram, three peaks with +-4 bins
 * suppressed, harmonic fix-ups. */
static __always_inline int cesar_decide_module(struct cesar_hist *h, __u32 *su_out)
{
	__u32 i1, v1, i2, v2, i3, v3, i, su_bins, half;
	__u64 pk;

	/* A gap in bin i counts in bins i and i + 1. */
	for (i = 0; i < BINS; i++)
		h->scratch[i] = h->count[i] + (i ? h->count[i - 1] : 0);
	/* Gaps under 2.5 ms never form an SU (bin 3 is left but cannot be chosen). */
	h->scratch[0] = 0;
	h->scratch[1] = 0;
	h->scratch[2] = 0;
	h->scratch[4] = 0;
	pk = cesar_module_peak(h);
	i1 = pk >> 32;
	v1 = (__u32)pk;
	cesar_module_clear(h, i1 > MODULE_SUPPRESS_BINS ? i1 - MODULE_SUPPRESS_BINS : 0,
			   i1 + MODULE_SUPPRESS_BINS);
	pk = cesar_module_peak(h);
	i2 = pk >> 32;
	v2 = (__u32)pk;
	cesar_module_clear(h, i2 > MODULE_SUPPRESS_BINS ? i2 - MODULE_SUPPRESS_BINS : 0,
			   i2 + MODULE_SUPPRESS_BINS);
	pk = cesar_module_peak(h);
	i3 = pk >> 32;
	v3 = (__u32)pk;
	if (v1 >= MIN_LINE) {
		half = v1 / 2;
		su_bins = i1;
		if (i1 == 10 && ((i2 == 5 && v2 >= half) || (i3 == 5 && v3 >= half)))
			su_bins = 5;   /* 5 ms line with a strong 2.5 ms line: 2.5 ms */
		if (i1 == 20 && (i2 == 10 || (i3 == 10 && v3 >= half)))
			su_bins = 10;  /* 10 ms line with a 5 ms line: 5 ms */
		if (su_bins == 9)
			su_bins = 10;  /* 4.5 ms -> 5 ms */
		else if (su_bins == 15)
			su_bins = 16;  /* 7.5 ms -> 8 ms */
		*su_out = su_bins * BIN_US;
		return CESAR_DECISION_PATTERN;
	}
	if (!v1 || !v2)
		return CESAR_DECISION_NO_PATTERN;
	/* i2 >= 5 here (v2 > 0): no divisor is zero. */
	if ((i2 && i1 % i2 == 0) || i1 % (i2 + 1) == 0 || (i2 > 1 && i1 % (i2 - 1) == 0))
		return CESAR_DECISION_UNCHANGED;
	return CESAR_DECISION_NO_PATTERN;
}

static __always_inline void hist_clear(struct cesar_hist *h)
{
	int i;

	for (i = 0; i < BINS; i++) {
		h->count[i] = 0;
		h->sum_us[i] = 0;
	}
	h->gaps = 0;
}

/* One observed ACK at now_us: count its gap (< 20 ms); every `period` gaps, decide. */
static __always_inline int cesar_su_on_ack(struct cesar *ca, const struct cesar_cfg *c,
					   __u64 now_us, __u32 *su_out)
{
	struct cesar_hist *h = &ca->hist;
	__u64 gap, bin;
	int d;

	if (!ca->has_prev_ack) {
		ca->has_prev_ack = 1;
		ca->prev_ack_us = now_us;
		return CESAR_DECISION_NONE;
	}
	gap = now_us > ca->prev_ack_us ? now_us - ca->prev_ack_us : 0;
	ca->prev_ack_us = now_us;
	bin = gap / BIN_US;
	/* Keep the bound check on the index itself (the verifier does not follow the
	 * compiler's rewriting of it into a check on the gap). */
	barrier_var(bin);
	if (bin >= BINS)
		return CESAR_DECISION_NONE;
	h->count[bin_idx(bin)]++;
	h->sum_us[bin_idx(bin)] += gap;
	h->gaps++;
	if (h->gaps < c->period)
		return CESAR_DECISION_NONE;
	d = c->module ? cesar_decide_module(h, su_out) : cesar_decide_paper(h, c->period, su_out);
	if (d != CESAR_DECISION_NONE)
		hist_clear(h);
	return d;
}

#endif /* CELLCC_CESAR_SU_H */
