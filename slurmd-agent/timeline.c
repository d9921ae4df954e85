/* timeline: slewed mapping of the local clock onto global time (see timeline.h). */
#include "slurmd-agent/timeline.h"

#include <string.h>
#include <time.h>

void fq_timeline_init(struct fq_timeline *tl, const struct fq_timeline_config *cfg)
{
	memset(tl, 0, sizeof(*tl));
	tl->cfg = *cfg;
	if (tl->cfg.max_slew_ppb <= 0)
		tl->cfg.max_slew_ppb = 500000;
	if (tl->cfg.step_forward_ns <= 0)
		tl->cfg.step_forward_ns = 10000000;
	if (tl->cfg.publish_ns <= 0)
		tl->cfg.publish_ns = 100000000;
	if (tl->cfg.valid_ns <= 0)
		tl->cfg.valid_ns = 3 * tl->cfg.publish_ns;
}

void fq_timeline_set_target(struct fq_timeline *tl, int64_t ref_ns, int64_t offset_ns, double drift_ppb,
			    int64_t bound_ns)
{
	tl->have_target = true;
	tl->t_ref = ref_ns;
	tl->t_offset = offset_ns;
	tl->t_drift_ppb = drift_ppb;
	tl->t_bound = bound_ns;
}

static int64_t target_offset(const struct fq_timeline *tl, int64_t t)
{
	return tl->t_offset + (int64_t)(tl->t_drift_ppb * (double)(t - tl->t_ref) / 1e9);
}

bool fq_timeline_publish(struct fq_timeline *tl, int64_t now_ns, struct fq_clock_model *out)
{
	int64_t want, have, delta, slew;

	if (!tl->have_target)
		return false;
	want = target_offset(tl, now_ns);
	if (!tl->published) {
		have = want; /* nothing was valid before: start on target */
	} else {
		have = fq_clock_model_global(&tl->pub, now_ns) - now_ns;
	}
	delta = want - have;
	if (delta > tl->cfg.step_forward_ns) {
		have = want;
		delta = 0;
		tl->steps++;
	}
	/* the rate that closes delta within one period, bounded */
	slew = (int64_t)((double)delta * 1e9 / (double)tl->cfg.publish_ns);
	if (slew > tl->cfg.max_slew_ppb)
		slew = tl->cfg.max_slew_ppb;
	if (slew < -tl->cfg.max_slew_ppb)
		slew = -tl->cfg.max_slew_ppb;
	tl->pub.clock_id = CLOCK_MONOTONIC_RAW;
	tl->pub.ref_local_ns = now_ns;
	tl->pub.offset_ns = have;
	tl->pub.drift_ppb = (int64_t)tl->t_drift_ppb + slew;
	tl->pub.error_bound_ns = tl->t_bound + (delta < 0 ? -delta : delta);
	tl->pub.valid_until_ns = now_ns + tl->cfg.valid_ns;
	tl->pub.updates++;
	tl->published = true;
	*out = tl->pub;
	return true;
}

int64_t fq_timeline_global(const struct fq_timeline *tl, int64_t local_ns)
{
	return tl->published ? fq_clock_model_global(&tl->pub, local_ns) : local_ns;
}
