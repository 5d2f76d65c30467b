// SPDX-License-Identifier: GPL-2.0
/*
 * César's SU paper rule, bpf/cesar/su.h, compiled for user space.
 *
 * The twin test of crates/cellcc-congestion/src/cesar/su.rs (`cesar::su::twin`) builds
 * this file with clang and feeds it the gap histograms it also gives the Rust
 * SuEstimator::decide_paper, then compares the decisions line by line.
 *
 * Input, one histogram per line, whitespace-separated integers:
 *   period gaps count[0] .. count[BINS-1] sum_us[0] .. sum_us[BINS-1]
 * (period: decision_gaps; gaps: the gaps counted, normally the sum of the counts;
 * sum_us: the sum of the gaps in each bin, in microseconds).
 * Output, one line per histogram: "decision su_us" (enum cesar_decision; su_us is 0
 * unless the decision is CESAR_DECISION_PATTERN). Exit status 1 on malformed input.
 *
 * What su.h takes from the BPF environment is defined here: the integer types, the
 * function attributes, barrier_var, and the members of struct cesar and struct cesar_cfg
 * that cesar_su_on_ack reads (it is not called here).
 */
#include <stdio.h>

typedef unsigned int __u32;
typedef unsigned long long __u64;

#ifndef __always_inline /* glibc's <sys/cdefs.h> has it */
#define __always_inline inline __attribute__((always_inline))
#endif
#define __noinline __attribute__((noinline))
/* Keeps the compiler from reasoning about var across this point (as in BPF). */
#define barrier_var(var) asm volatile("" : "+r"(var))

#include "cesar/su_hist.h"

struct cesar {
	__u32 has_prev_ack;
	__u64 prev_ack_us;
	struct cesar_hist hist;
};

struct cesar_cfg {
	__u32 module;
	__u32 period;
};

#include "cesar/su.h"

/* Reads one histogram into h; 0 at the end of the input, -1 if it is malformed. */
static int read_hist(struct cesar_hist *h, __u32 *period)
{
	unsigned long long v;
	int i, r;

	r = scanf("%llu", &v);
	if (r == EOF)
		return 0;
	if (r != 1 || v > 0xffffffffULL)
		return -1;
	*period = v;
	if (scanf("%llu", &v) != 1 || v > 0xffffffffULL)
		return -1;
	h->gaps = v;
	for (i = 0; i < BINS; i++) {
		if (scanf("%llu", &v) != 1 || v > 0xffffffffULL)
			return -1;
		h->count[i] = v;
	}
	for (i = 0; i < BINS; i++) {
		if (scanf("%llu", &v) != 1)
			return -1;
		h->sum_us[i] = v;
	}
	return 1;
}

int main(void)
{
	static struct cesar_hist h;
	__u32 period, su;
	int r, d;

	for (;;) {
		h = (struct cesar_hist){0};
		r = read_hist(&h, &period);
		if (r == 0)
			return 0;
		if (r < 0) {
			fprintf(stderr, "su_twin: malformed histogram line\n");
			return 1;
		}
		su = 0;
		d = cesar_decide_paper(&h, period, &su);
		printf("%d %u\n", d, d == CESAR_DECISION_PATTERN ? su : 0);
	}
}
