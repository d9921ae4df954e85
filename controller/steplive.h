/*
 * steplive: the job steps the controller holds live state for (their
 * /metrics series, the detector's lanes), and when to let go of it. A step
 * is live from its first frame (a node's StepStart, or a lane report)
 * until every node that started it has ended it (its StepEnds), or until
 * nothing of it came for idle_ns (an agent gone before its step's end, a
 * StepEnd lost). The caller drops what it holds for each step this module
 * says is gone, so that state is bounded by the steps running, not by
 * every step ever run.
 */
#ifndef FQ_CONTROLLER_STEPLIVE_H
#define FQ_CONTROLLER_STEPLIVE_H

#include <stddef.h>
#include <stdint.h>

#include "proto/fabriciq.pb-c.h"

struct fq_step_id {
	uint64_t job;
	uint32_t step;
};

struct fq_steplive;

struct fq_steplive *fq_steplive_create(void);
void fq_steplive_destroy(struct fq_steplive *l);

/* An accepted frame of node at now_ns (StepStart, StepEnd and lane
 * reports count; others are ignored). 1 and *gone when it was the StepEnd
 * of the last node running its step (or of a step no StepStart was seen
 * for: a controller restarted meanwhile), else 0. */
int fq_steplive_frame(struct fq_steplive *l, const char *node, const Fabriciq__Envelope *env, int64_t now_ns,
		      struct fq_step_id *gone);

/* Forget the steps nothing came of since now_ns - idle_ns: at most max
 * of them, written to gone (the rest at the next call). How many. */
size_t fq_steplive_expire(struct fq_steplive *l, int64_t now_ns, int64_t idle_ns, struct fq_step_id *gone,
			  size_t max);

/* Steps live now. */
size_t fq_steplive_count(const struct fq_steplive *l);

#endif /* FQ_CONTROLLER_STEPLIVE_H */
