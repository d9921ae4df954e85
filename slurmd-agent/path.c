#include "slurmd-agent/path.h"

#include <string.h>

void fq_path_init(struct fq_path *p, int64_t now_ns)
{
	memset(p, 0, sizeof(*p));
	p->up = true;
	p->changed_ns = now_ns;
	p->last_answer_ns = now_ns;
}

void fq_path_on_probe(struct fq_path *p, int64_t now_ns)
{
	if (!p->first_unanswered_ns)
		p->first_unanswered_ns = now_ns;
}

enum fq_path_event fq_path_on_answer(struct fq_path *p, int64_t now_ns)
{
	p->last_answer_ns = now_ns;
	p->first_unanswered_ns = 0;
	p->ever_answered = true;
	if (p->up)
		return FQ_PATH_NONE;
	p->up = true;
	p->changed_ns = now_ns;
	return FQ_PATH_WENT_UP;
}

enum fq_path_event fq_path_check(struct fq_path *p, int64_t now_ns, int64_t down_after_ns, int64_t *since_ns)
{
	int64_t since;

	if (!p->up || !p->first_unanswered_ns)
		return FQ_PATH_NONE;
	/* Silence counts from the last answer; the oldest unanswered probe
	 * must also be half the detection time old, so a path whose probing
	 * just resumed after a pause is not declared dead at once. */
	since = p->ever_answered ? p->last_answer_ns : p->first_unanswered_ns;
	if (now_ns - since < down_after_ns || now_ns - p->first_unanswered_ns < down_after_ns / 2)
		return FQ_PATH_NONE;
	/* a path that never answered (its peer may be starting) gets a grace
	 * time, and going DOWN then is not a flap: it never was UP */
	if (!p->ever_answered && now_ns - since < FQ_PATH_STARTUP_GRACE_NS)
		return FQ_PATH_NONE;
	p->up = false;
	p->changed_ns = now_ns;
	if (since_ns)
		*since_ns = since;
	if (!p->ever_answered)
		return FQ_PATH_WENT_DOWN;
	p->flaps++;
	p->flap_times[(p->flap_head + p->flap_count) % FQ_PATH_FLAP_HISTORY] = now_ns;
	if (p->flap_count < FQ_PATH_FLAP_HISTORY)
		p->flap_count++;
	else
		p->flap_head = (p->flap_head + 1) % FQ_PATH_FLAP_HISTORY;
	if (since_ns)
		*since_ns = since;
	return FQ_PATH_WENT_DOWN;
}

unsigned fq_path_flaps_since(const struct fq_path *p, int64_t now_ns, int64_t window_ns)
{
	unsigned n = 0;

	for (unsigned k = 0; k < p->flap_count; k++)
		if (now_ns - p->flap_times[(p->flap_head + k) % FQ_PATH_FLAP_HISTORY] <= window_ns)
			n++;
	return n;
}
