/* hist: log-linear histogram quantiles (see hist.h). */
#include <string.h>

#include "nccl-plugin/hist.h"

void fqn_hist_reset(struct fqn_hist *h)
{
	memset(h, 0, sizeof(*h));
}

uint64_t fqn_hist_bucket_low(unsigned i)
{
	unsigned msb, sub;

	if (i < FQN_HIST_SUB)
		return i;
	msb = i / FQN_HIST_SUB + 3;
	sub = i % FQN_HIST_SUB;
	return (1ULL << msb) + ((uint64_t)sub << (msb - 4));
}

int64_t fqn_hist_quantile(const struct fqn_hist *h, double q)
{
	uint64_t rank, seen = 0;

	if (h->count == 0)
		return 0;
	if (q <= 0)
		return h->min;
	if (q >= 1)
		return h->max;
	rank = (uint64_t)(q * (double)(h->count - 1)) + 1;
	for (unsigned i = 0; i < FQN_HIST_BUCKETS; i++) {
		seen += h->bucket[i];
		if (seen >= rank) {
			uint64_t lo = fqn_hist_bucket_low(i);
			uint64_t hi = i + 1 < FQN_HIST_BUCKETS ? fqn_hist_bucket_low(i + 1) : UINT64_MAX;
			int64_t mid = (int64_t)(lo + (hi - lo) / 2);

			if (i < FQN_HIST_SUB)
				mid = (int64_t)lo;
			if (mid < h->min)
				mid = h->min;
			if (mid > h->max)
				mid = h->max;
			return mid;
		}
	}
	return h->max;
}
