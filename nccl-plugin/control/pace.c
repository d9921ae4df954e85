/* pace: per-lane rates from the queueing delay (see pace.h). */
#include <errno.h>
#include <stdlib.h>

#include "nccl-plugin/control/pace.h"

/* Multiplicative increase only after this many updates in a row with the
 * queue at most target/2 (150 ms): one low reading is most often the queue
 * just drained by a cut with the link still full, where growing every lane
 * by mi at once would overshoot the target by mi x update at the next (the
 * fluid model of test-pace swung 0..15 ms without it); a queue that stays
 * low is a path with room. */
#define MI_AFTER 3

/* Updates without a call (the transport drives them while the connection
 * has requests) after which its lanes start unpaced: a collective's
 * iterations leave a connection idle between them, and a rate cut at one
 * iteration's end (its queue full) held the next one's start back. */
#define IDLE_UPDATES 2

struct pace_lane {
	double rate;    /* bytes/s; 0: unpaced */
	int fresh;      /* an observation with traffic and an RTT since the last update */
	double q;       /* its queueing delay, ns */
	double bytes;   /* and the bytes acked in its interval */
	int64_t last_q; /* the last queueing delay seen, for telemetry */
	int low;        /* updates in a row with the queue at most target/2 */
	double trend;   /* its change since the update before, ns (0: no sample then) */
	int recent;     /* it carried traffic in the last update */
};

struct fqn_pace {
	struct fqn_pace_params p;
	int n;
	struct pace_lane l[FQN_MAX_LANES];
	int64_t last_update;
};

void fqn_pace_params_default(struct fqn_pace_params *p)
{
	p->update_ns = (int64_t)FQN_PACE_UPDATE_MS * 1000000;
	p->target_ns = (int64_t)FQN_PACE_TARGET_US * 1000;
	p->gain = 0.5;
	p->max_cut = 0.5;
	p->ai = 0.125e6;
	p->mi = 0.1;
	p->floor = 1.25e6;
	p->ceiling = 50e9;
	p->lead = 1.5;
}

static int params_ok(const struct fqn_pace_params *p)
{
	return p->update_ns > 0 && p->target_ns > 0 && p->gain > 0 && p->gain <= 1 && p->max_cut > 0 &&
	       p->max_cut <= 1 && p->ai > 0 && p->mi >= 0 && p->floor > 0 && p->ceiling > p->floor &&
	       p->lead >= 0 && p->lead <= 4;
}

int fqn_pace_create(int nlanes, const struct fqn_pace_params *p, int64_t now, struct fqn_pace **out)
{
	struct fqn_pace *s;

	if (nlanes < 1 || nlanes > FQN_MAX_LANES || !params_ok(p))
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->p = *p;
	s->n = nlanes;
	s->last_update = now;
	*out = s;
	return 0;
}

void fqn_pace_destroy(struct fqn_pace *s)
{
	free(s);
}

void fqn_pace_observe(struct fqn_pace *s, int lane, const struct fqn_pace_sample *smp)
{
	struct pace_lane *l;
	double q;

	if (lane < 0 || lane >= s->n)
		return;
	l = &s->l[lane];
	if (!smp->bytes || !smp->rtt_us || !smp->min_rtt_us)
		return; /* no traffic: the RTT is stale; no RTT: no signal */
	q = smp->rtt_us > smp->min_rtt_us ? (double)(smp->rtt_us - smp->min_rtt_us) * 1000 : 0;
	l->trend = l->recent ? q - l->q : 0;
	l->q = q;
	l->last_q = (int64_t)l->q;
	l->bytes = (double)smp->bytes;
	l->fresh = 1;
}

void fqn_pace_reset(struct fqn_pace *s, int lane)
{
	if (lane >= 0 && lane < s->n)
		s->l[lane] = (struct pace_lane){0};
}

/* Lane l's next rate after an interval of dt ns. */
static double next_rate(const struct fqn_pace_params *p, const struct pace_lane *l, double q, double dt)
{
	double t = (double)p->target_ns, r = l->rate, cut, sent;

	if (q > t) {
		cut = p->gain * (q - t) / (double)p->update_ns;
		if (cut > p->max_cut)
			cut = p->max_cut;
		sent = l->bytes * 1e9 / dt;
		/* a paced lane that sent less than half its rate (between
		 * messages, or its acks bunched) loses at most max_cut of it */
		if (r > 0 && sent < r * (1 - p->max_cut))
			sent = r * (1 - p->max_cut);
		r = sent * (1 - cut) + p->ai;
		return r < p->floor ? p->floor : r;
	}
	if (r <= 0)
		return 0; /* unpaced and below the target: nothing to do */
	if (l->low >= MI_AFTER)
		r = r * (1 + p->mi) + p->ai;
	else
		r += p->ai;
	return r >= p->ceiling ? 0 : r;
}

/* The lanes' rates follow the connection's chunks between them. A lane
 * that went idle in the update (the connection fed its siblings instead)
 * gives its rate to the siblings busy in both updates, and one that came
 * back takes its rate from them: pacing-limited siblings would otherwise
 * leave the lane's part of the link unused until additive steps refill
 * it (the queue ran empty 100-300 ms in bench-incast), or send on top of
 * the lane's. An idle lane keeps no rate above the busy lanes' mean: they
 * took up its part, so at an old rate it would come back as a burst into
 * the queue before the next update sees it. was: each lane busy in the
 * update before. 1 if a rate changed. */
static int follow_chunks(struct fqn_pace *s, const int *was)
{
	double gone = 0, back = 0, sum = 0;
	int steady = 0, busy = 0, changed = 0;

	for (int i = 0; i < s->n; i++) {
		const struct pace_lane *l = &s->l[i];

		if (l->rate <= 0)
			continue;
		if (l->recent) {
			sum += l->rate;
			busy++;
		}
		if (was[i] && !l->recent)
			gone += l->rate;
		else if (!was[i] && l->recent)
			back += l->rate;
		else if (l->recent)
			steady++;
	}
	if (!busy)
		return 0; /* no busy lane paced: nothing to follow */
	for (int i = 0; steady && gone != back && i < s->n; i++) {
		struct pace_lane *l = &s->l[i];

		if (l->rate <= 0 || !was[i] || !l->recent)
			continue;
		l->rate += (gone - back) / steady;
		if (l->rate < s->p.floor)
			l->rate = s->p.floor;
		changed = 1;
	}
	for (int i = 0; i < s->n; i++) {
		struct pace_lane *l = &s->l[i];

		if (l->recent || (l->rate > 0 && l->rate <= sum / busy))
			continue;
		l->rate = sum / busy;
		changed = 1;
	}
	return changed;
}

int fqn_pace_update(struct fqn_pace *s, int64_t now)
{
	double dt = (double)(now - s->last_update);
	int changed = 0, was[FQN_MAX_LANES];

	if (now - s->last_update < s->p.update_ns)
		return 0;
	if (now - s->last_update > IDLE_UPDATES * s->p.update_ns) {
		/* not driven for that long: the connection had nothing to send */
		s->last_update = now;
		for (int i = 0; i < s->n; i++) {
			changed |= s->l[i].rate != 0;
			fqn_pace_reset(s, i);
		}
		return changed;
	}
	s->last_update = now;
	for (int i = 0; i < s->n; i++) {
		struct pace_lane *l = &s->l[i];
		double r, q;

		was[i] = l->recent;
		l->recent = l->fresh;
		if (!l->fresh)
			continue;
		l->fresh = 0;
		q = l->q + s->p.lead * (l->trend > 0 ? l->trend : 0); /* where a rising queue is now */
		l->low = q > (double)s->p.target_ns / 2 ? 0 : l->low + 1;
		r = next_rate(&s->p, l, q, dt);
		changed |= r != l->rate;
		l->rate = r;
	}
	return changed | follow_chunks(s, was);
}

double fqn_pace_rate(const struct fqn_pace *s, int lane)
{
	return lane >= 0 && lane < s->n ? s->l[lane].rate : 0;
}

int64_t fqn_pace_delay(const struct fqn_pace *s, int lane)
{
	return lane >= 0 && lane < s->n ? s->l[lane].last_q : 0;
}
