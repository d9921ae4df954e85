/*
 * ticks: the profiler's event clock (ticks.h).
 */
#include "nccl-profiler/ticks.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define CLOCKSOURCE "/sys/devices/system/clocksource/clocksource0/current_clocksource"

bool fqp_ticks_tsc;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct fqp_ticks_anchor first;
/* ns per tick as a double's bits (1.0 without the TSC), and the raw span
 * it was measured over */
static _Atomic uint64_t scale_bits;
static _Atomic int64_t scale_span;

static double scale(void)
{
	uint64_t b = atomic_load_explicit(&scale_bits, memory_order_relaxed);
	double s;

	memcpy(&s, &b, sizeof(s));
	return s;
}

static void set_scale(double s, int64_t span)
{
	uint64_t b;

	memcpy(&b, &s, sizeof(b));
	atomic_store_explicit(&scale_bits, b, memory_order_relaxed);
	atomic_store_explicit(&scale_span, span, memory_order_relaxed);
}

/* The kernel keeps time by the TSC only when it found it invariant and in
 * step on every CPU: then so may we. */
static bool kernel_uses_tsc(void)
{
	char buf[32] = {0};
	FILE *f = fopen(CLOCKSOURCE, "re");
	bool yes;

	if (!f)
		return false;
	yes = fgets(buf, sizeof(buf), f) && !strcmp(buf, "tsc\n");
	fclose(f);
	return yes;
}

/* Both clocks at one instant: the counter between two raw reads, the
 * narrowest of up to `tries` (the first under 2 us ends it: a thread
 * preempted between the reads would put the instant off by as long). */
static struct fqp_ticks_anchor read_both(int tries, int64_t *width)
{
	struct fqp_ticks_anchor best = {0};

	*width = INT64_MAX;
	for (int i = 0; i<tries && * width> 2000; i++) {
		int64_t a = fq_now_ns(), t = fqp_ticks(), b = fq_now_ns();

		if (b - a < *width) {
			*width = b - a;
			best = (struct fqp_ticks_anchor){t, a + (b - a) / 2};
		}
	}
	return best;
}

static void init_once(void)
{
	struct fqp_ticks_anchor second;
	struct timespec two_ms = {0, 2000000};
	int64_t w;

	set_scale(1.0, 0);
#if defined(__x86_64__) || defined(__i386__)
	fqp_ticks_tsc = kernel_uses_tsc();
#endif
	if (!fqp_ticks_tsc)
		return;
	first = read_both(5, &w);
	nanosleep(&two_ms, NULL);
	second = read_both(5, &w);
	if (second.ticks <= first.ticks || second.raw_ns <= first.raw_ns) {
		fqp_ticks_tsc = false; /* a counter that does not move forward */
		return;
	}
	set_scale((double)(second.raw_ns - first.raw_ns) / (double)(second.ticks - first.ticks),
		  second.raw_ns - first.raw_ns);
}

void fqp_ticks_init(void)
{
	pthread_once(&once, init_once);
}

int64_t fqp_ticks_dur(int64_t ticks)
{
	return fqp_ticks_tsc ? (int64_t)((double)ticks * scale()) : ticks;
}

struct fqp_ticks_anchor fqp_ticks_anchor(void)
{
	struct fqp_ticks_anchor a;
	int64_t span, width;

	if (!fqp_ticks_tsc) {
		int64_t now = fq_now_ns();

		return (struct fqp_ticks_anchor){now, now};
	}
	a = read_both(3, &width);
	span = a.raw_ns - first.raw_ns;
	/* only from a tight reading; racing threads may each store
	 * theirs: any of them is as good */
	if (width <= 2000 && span > 2 * atomic_load_explicit(&scale_span, memory_order_relaxed) &&
	    a.ticks > first.ticks)
		set_scale((double)span / (double)(a.ticks - first.ticks), span);
	return a;
}

int64_t fqp_ticks_raw(const struct fqp_ticks_anchor *a, int64_t ticks)
{
	return a->raw_ns - fqp_ticks_dur(a->ticks - ticks);
}
