/*
 * test-prof-ticks: the profiler's event clock (nccl-profiler/ticks.h)
 * against CLOCK_MONOTONIC_RAW: spans and instants converted from ticks
 * agree with the raw clock read around them, right after the first init
 * (the 2 ms scale) and after the scale was refined.
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "common/clock.h"
#include "nccl-profiler/ticks.h"
#include "tests/unit/tap.h"

static void sleep_ns(int64_t ns)
{
	struct timespec t = {ns / 1000000000, ns % 1000000000};

	nanosleep(&t, NULL);
}

/* The counter between two raw reads, retried while they are far apart
 * (this thread preempted between them): the raw instant, in *raw */
static int64_t pair(int64_t *raw)
{
	int64_t a, t, b;
	int tries = 0;

	do {
		a = fq_now_ns();
		t = fqp_ticks();
		b = fq_now_ns();
	} while (b - a > 20000 && ++tries < 1000);
	*raw = a + (b - a) / 2;
	return t;
}

/* A span of about ns: measured by ticks against the raw clock; the
 * difference (ns) */
static int64_t span_error(int64_t ns)
{
	int64_t r0, r1, t0 = pair(&r0), t1;

	sleep_ns(ns);
	t1 = pair(&r1);
	return llabs(fqp_ticks_dur(t1 - t0) - (r1 - r0));
}

/* An instant read between two raw readings, converted by an anchor taken
 * `later` ns afterwards: how far from the raw clock (ns) */
static int64_t instant_error(int64_t later)
{
	int64_t raw, t = pair(&raw);
	struct fqp_ticks_anchor a;

	sleep_ns(later);
	a = fqp_ticks_anchor();
	return llabs(fqp_ticks_raw(&a, t) - raw);
}

int main(void)
{
	int64_t e;

	fqp_ticks_init();
	fqp_ticks_init(); /* once */
	diag("the event clock here: %s", fqp_ticks_tsc ? "the TSC (clocksource tsc)" : "CLOCK_MONOTONIC_RAW");
	e = span_error(20000000);
	ok(e < 20000 + 20000000 / 1000,
	   "a 20 ms span by ticks: within 0.1 %% + 20 us of the raw clock (%lld ns)", (long long)e);
	e = instant_error(1000000);
	ok(e < 25000, "an instant by an anchor 1 ms later: within 25 us of the raw clock (%lld ns)",
	   (long long)e);
	for (int i = 0; i < 4; i++) /* anchors 10, 20, 40, 80 ms on refine the scale */
		instant_error(10000000 << i);
	e = span_error(100000000);
	ok(e < 20000 + 100000000 / 10000, "refined: a 100 ms span within 0.01 %% + 20 us (%lld ns)",
	   (long long)e);
	e = instant_error(100000000);
	ok(e < 25000, "an instant by an anchor 100 ms later: within 25 us (%lld ns)", (long long)e);
	ok(fqp_ticks_dur(0) == 0, "no span, no time");
	return done_testing();
}
