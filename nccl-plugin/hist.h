/*
 * hist: a fixed-memory log-linear histogram of nanosecond delays.
 *
 * Values below 16 have a bucket each; above, every power of two is cut
 * into 16 equal buckets, so a bucket's width is at most 1/16 of its lower
 * bound and a quantile reported at the bucket's midpoint is within 1/32
 * (3.2 %) of the true sample. 976 u32 counters cover 0..2^64. Exact min and
 * max are kept beside. Negative values (a clock error larger than the
 * delay) are counted in bucket 0 and reflected in min. Not thread-safe:
 * one owner adds, and hands a copy to whoever reports it.
 */
#ifndef FQN_HIST_H
#define FQN_HIST_H

#include <stdint.h>

#define FQN_HIST_SUB     16
#define FQN_HIST_BUCKETS (61 * FQN_HIST_SUB)

struct fqn_hist {
	uint64_t count;
	int64_t min, max;
	uint32_t bucket[FQN_HIST_BUCKETS];
};

void fqn_hist_reset(struct fqn_hist *h);

static inline unsigned fqn_hist_index(uint64_t v)
{
	unsigned msb;

	if (v < FQN_HIST_SUB)
		return (unsigned)v;
	msb = 63u - (unsigned)__builtin_clzll(v);
	return (msb - 3u) * FQN_HIST_SUB + (unsigned)((v >> (msb - 4u)) & (FQN_HIST_SUB - 1));
}

static inline void fqn_hist_add(struct fqn_hist *h, int64_t v)
{
	unsigned i = fqn_hist_index(v < 0 ? 0 : (uint64_t)v);

	if (h->count == 0 || v < h->min)
		h->min = v;
	if (h->count == 0 || v > h->max)
		h->max = v;
	h->count++;
	if (h->bucket[i] != UINT32_MAX)
		h->bucket[i]++;
}

/* The q-quantile (0 <= q <= 1), clamped to [min, max]; 0 if empty. */
int64_t fqn_hist_quantile(const struct fqn_hist *h, double q);

/* Lower bound of bucket i (the inverse of fqn_hist_index). */
uint64_t fqn_hist_bucket_low(unsigned i);

#endif /* FQN_HIST_H */
