/*
 * clock: fabriciq's local clock and the mapping of kernel packet stamps.
 *
 * The local clock of every fabriciq process is CLOCK_MONOTONIC_RAW: never
 * stepped, never slewed by NTP, so offsets and drifts fitted against it
 * stay meaningful. The kernel stamps packets (SO_TIMESTAMPING software
 * stamps) on CLOCK_REALTIME, which NTP or an admin may step and slew; a
 * cross-timestamp (realtime read between two raw reads) gives the
 * realtime-minus-raw offset at one instant, with an error bound of half the
 * bracket. The tightest of several brackets is kept.
 */
#ifndef FQ_COMMON_CLOCK_H
#define FQ_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

#define FQ_NSEC_PER_SEC 1000000000LL

/* Nanoseconds on a clock: every part reads its clocks through these, never
 * a timespec of its own (CLOCK_MONOTONIC for timeouts, REALTIME for wall
 * time that is stored or shown). */
int64_t fq_clock_ns(clockid_t clock);

/* Nanoseconds on CLOCK_MONOTONIC_RAW. */
int64_t fq_now_ns(void);

/* Nanoseconds on CLOCK_REALTIME. */
int64_t fq_realtime_ns(void);

static inline int64_t fq_timespec_to_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * FQ_NSEC_PER_SEC + ts->tv_nsec;
}

/* Normalised for negative values too: 0 <= tv_nsec < 1e9. */
static inline struct timespec fq_ns_to_timespec(int64_t ns)
{
	struct timespec ts;

	ts.tv_sec = ns / FQ_NSEC_PER_SEC;
	ts.tv_nsec = ns % FQ_NSEC_PER_SEC;
	if (ts.tv_nsec < 0) {
		ts.tv_nsec += FQ_NSEC_PER_SEC;
		ts.tv_sec -= 1;
	}
	return ts;
}

/* One realtime read bracketed by two raw reads. */
struct fq_xstamp_sample {
	int64_t raw_before, real, raw_after;
};

/* REALTIME - MONOTONIC_RAW at one instant, +- error_ns. */
struct fq_xstamp {
	int64_t offset_ns;    /* add to a raw time to get realtime */
	int64_t error_ns;     /* half the tightest bracket */
	int64_t taken_raw_ns; /* when (raw clock) */
};

/* Pure: the best estimate from n samples (the tightest bracket). Returns 0,
 * or -EINVAL if n == 0 or every sample has raw_after < raw_before. */
int fq_xstamp_from_samples(const struct fq_xstamp_sample *s, unsigned n, struct fq_xstamp *out);

/* Reads `n` brackets (1..64) now and keeps the tightest. 0 or -EINVAL. */
int fq_xstamp_measure(unsigned n, struct fq_xstamp *out);

/* On demand: re-measure x (n brackets) if it was never taken (zeroed) or is
 * older than max_age_ns on the raw clock at now_raw_ns. Returns 1 if it
 * was re-measured, 0 if still fresh, -EINVAL for a bad n. */
int fq_xstamp_refresh(struct fq_xstamp *x, int64_t now_raw_ns, int64_t max_age_ns, unsigned n);

/* Map a kernel CLOCK_REALTIME stamp onto MONOTONIC_RAW with a cross-stamp.
 * Valid while nobody steps REALTIME; refresh the cross-stamp each second or
 * so, since NTP slews REALTIME against RAW by up to 500 ppm. */
static inline int64_t fq_realtime_to_raw(const struct fq_xstamp *x, int64_t realtime_ns)
{
	return realtime_ns - x->offset_ns;
}

#endif /* FQ_COMMON_CLOCK_H */
