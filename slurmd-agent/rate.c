/* rate: a token bucket (see rate.h). */
#include "slurmd-agent/rate.h"

bool fq_rate_take(struct fq_rate *r, const struct fq_rate_limit *lim, int64_t now_ns)
{
	if (!r->last_ns) {
		r->tokens = lim->burst;
	} else if (now_ns > r->last_ns) {
		r->tokens += (double)(now_ns - r->last_ns) / 1e9 * lim->per_s;
		if (r->tokens > lim->burst)
			r->tokens = lim->burst;
	}
	if (now_ns > r->last_ns)
		r->last_ns = now_ns;
	if (r->tokens < 1.0)
		return false;
	r->tokens -= 1.0;
	return true;
}
