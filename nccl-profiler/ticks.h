/*
 * ticks: the profiler's event clock. NCCL's threads read the clock twice
 * per event (start and stop), 22 events for an 8-byte allreduce, so the
 * read must be cheap: the CPU's time-stamp counter where the kernel itself
 * keeps time by it (clocksource "tsc": invariant, synchronised across
 * CPUs), about 7 ns against 23 ns for clock_gettime; otherwise
 * CLOCK_MONOTONIC_RAW nanoseconds (fq_now_ns), and every conversion below
 * is exact.
 *
 * Ticks are turned into nanoseconds off the event path: durations by the
 * scale (ns per tick), instants on CLOCK_MONOTONIC_RAW (the clock page's
 * raw clock) against an anchor the caller reads when it needs one
 * (fqp_ticks_anchor: the counter between two clock_gettime, once per
 * operation), so a scale error counts only over the distance to that
 * anchor. The scale is measured at the
 * first init (two readings of both clocks 2 ms apart: within 1e-4) and
 * refined by each anchor read when its distance from the first has
 * doubled, so it converges as 1/uptime.
 */
#ifndef FQ_NCCL_PROFILER_TICKS_H
#define FQ_NCCL_PROFILER_TICKS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/clock.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

extern bool fqp_ticks_tsc; /* set once by fqp_ticks_init */

/* Once per process (any thread, any number of times): chooses the
 * counter and measures its scale. */
void fqp_ticks_init(void);

static inline int64_t fqp_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (fqp_ticks_tsc)
		return (int64_t)__rdtsc();
#endif
	return fq_now_ns();
}

/* A span of ticks in nanoseconds. */
int64_t fqp_ticks_dur(int64_t ticks);

/* Now on both clocks, and the scale refined by it. */
struct fqp_ticks_anchor {
	int64_t ticks, raw_ns;
};
struct fqp_ticks_anchor fqp_ticks_anchor(void);

/* A tick instant on CLOCK_MONOTONIC_RAW, by an anchor. */
int64_t fqp_ticks_raw(const struct fqp_ticks_anchor *a, int64_t ticks);

#endif
