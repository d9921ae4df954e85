/*
 * timeline: this node's mapping of its local clock (CLOCK_MONOTONIC_RAW)
 * onto the fabric's global timeline, as published on the clock page
 * (pure: the caller passes the time).
 *
 * The caller sets a target mapping whenever it learns a better one (the
 * controller's mesh correction, or the direct estimate to the reference
 * host); each publication moves the published mapping toward the target
 * by changing its rate, never by stepping it back: global time as readers
 * see it is continuous and increasing. The rate change is bounded
 * (max_slew_ppb); a large forward error is stepped at once (stepping
 * forward keeps time monotonic), a large backward error is slewed.
 */
#ifndef FQ_AGENT_TIMELINE_H
#define FQ_AGENT_TIMELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/clock_page.h"

struct fq_timeline_config {
	int64_t max_slew_ppb;    /* largest rate change used to converge (500 ppm) */
	int64_t step_forward_ns; /* forward errors above this are stepped (10 ms) */
	int64_t publish_ns;      /* publication period the slew is planned over */
	int64_t valid_ns;        /* a publication is valid this long (3 periods) */
};

struct fq_timeline {
	struct fq_timeline_config cfg;
	bool have_target, published;
	int64_t t_ref, t_offset, t_bound; /* target: global(t) = t + t_offset + t_drift*(t-t_ref) */
	double t_drift_ppb;
	struct fq_clock_model pub; /* the last published model */
	uint64_t steps;
};

void fq_timeline_init(struct fq_timeline *tl, const struct fq_timeline_config *cfg);

/* The target mapping: global - local = offset_ns at local time ref_ns,
 * changing at drift_ppb, within bound_ns. */
void fq_timeline_set_target(struct fq_timeline *tl, int64_t ref_ns, int64_t offset_ns, double drift_ppb,
			    int64_t bound_ns);

/* The model to publish at local time now_ns (the published model moves
 * toward the target). false while there is no target (nothing to publish). */
bool fq_timeline_publish(struct fq_timeline *tl, int64_t now_ns, struct fq_clock_model *out);

/* Global time of local time t under the last published model (t itself
 * if nothing was published). */
int64_t fq_timeline_global(const struct fq_timeline *tl, int64_t local_ns);

#endif /* FQ_AGENT_TIMELINE_H */
