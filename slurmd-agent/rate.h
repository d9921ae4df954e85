/*
 * rate: a token bucket. A bucket holds at most burst tokens and gains
 * per_s tokens a second; each admitted item takes one. Plain data, kept by
 * whoever is limited (the agent: one bucket per step and kind of frame).
 */
#ifndef FQ_AGENT_RATE_H
#define FQ_AGENT_RATE_H

#include <stdbool.h>
#include <stdint.h>

struct fq_rate_limit {
	double per_s; /* tokens gained a second */
	double burst; /* at most this many held; >= 1 */
};

/* A zeroed bucket is full at its first fq_rate_take. */
struct fq_rate {
	double tokens;
	int64_t last_ns; /* 0: never used */
};

/* Take one token at now_ns (a monotonic clock, > 0): true if one was there,
 * false (nothing taken) if the bucket is empty. A clock going backwards
 * adds nothing. */
bool fq_rate_take(struct fq_rate *r, const struct fq_rate_limit *lim, int64_t now_ns);

#endif /* FQ_AGENT_RATE_H */
