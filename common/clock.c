#include "common/clock.h"

#include <errno.h>

int64_t fq_clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return fq_timespec_to_ns(&ts);
}

int64_t fq_now_ns(void)
{
	return fq_clock_ns(CLOCK_MONOTONIC_RAW);
}

int64_t fq_realtime_ns(void)
{
	return fq_clock_ns(CLOCK_REALTIME);
}

int fq_xstamp_from_samples(const struct fq_xstamp_sample *s, unsigned n, struct fq_xstamp *out)
{
	int64_t best = -1;
	unsigned bi = 0;

	for (unsigned i = 0; i < n; i++) {
		int64_t width = s[i].raw_after - s[i].raw_before;
		if (width < 0)
			continue;
		if (best < 0 || width < best) {
			best = width;
			bi = i;
		}
	}
	if (best < 0)
		return -EINVAL;
	/* The realtime read happened somewhere in the bracket: take its
	 * middle, and half the width as the bound. */
	out->taken_raw_ns = s[bi].raw_before + best / 2;
	out->offset_ns = s[bi].real - out->taken_raw_ns;
	out->error_ns = (best + 1) / 2;
	return 0;
}

int fq_xstamp_measure(unsigned n, struct fq_xstamp *out)
{
	struct fq_xstamp_sample s[64];

	if (n == 0 || n > 64)
		return -EINVAL;
	for (unsigned i = 0; i < n; i++) {
		s[i].raw_before = fq_now_ns();
		s[i].real = fq_realtime_ns();
		s[i].raw_after = fq_now_ns();
	}
	return fq_xstamp_from_samples(s, n, out);
}

int fq_xstamp_refresh(struct fq_xstamp *x, int64_t now_raw_ns, int64_t max_age_ns, unsigned n)
{
	int rc;

	if (x->taken_raw_ns != 0 && now_raw_ns - x->taken_raw_ns <= max_age_ns)
		return 0;
	rc = fq_xstamp_measure(n, x);
	return rc < 0 ? rc : 1;
}
