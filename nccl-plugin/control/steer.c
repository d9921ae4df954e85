/* steer: lane weights from lane delays, with hysteresis (see steer.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nccl-plugin/control/steer.h"

#define MS(x) ((int64_t)(x)*1000000)

/* The base RTT forgets upward at this rate per update (1/256 of the gap),
 * and only while the lane is not congested: a route change that raised the
 * floor for good is learnt in ~10 s, a queue that stays full is not (learnt,
 * it raised the base by a sixth of the queue's delay in 2 s, and a
 * congested lane's swinging RTT then dipped under the leaving margin before
 * rehash_after: seen on the testbed, a connection whose every lane sat
 * behind a 100 ms queue never moved). */
#define BASE_FORGET 256

struct steer_lane {
	int up;
	double w;          /* current weight */
	double d;          /* EWMA of the delay signal, ns; 0: no sample yet */
	int fresh;         /* an observation arrived since the last update */
	double obs;        /* that observation's signal */
	double rtt, base;  /* TCP RTT now and its slowly forgotten minimum, ns; 0: unknown */
	int64_t congested; /* since when (0: not congested) */
};

struct fqn_steer {
	struct fqn_steer_params p;
	int n;
	struct steer_lane l[FQN_MAX_LANES];
	int64_t last_update, last_change;
	int64_t all_congested_since; /* 0: some up lane is not congested */
	int trial_lane, moves;       /* -1: no trial */
	int64_t trial_start, cooldown_until;
	double trial_max;      /* the trial lane's highest RTT since its trial began, ns */
	int futile;            /* episodes in a row that found no better path */
	int64_t backoff_until; /* no move of our own accord before this (advice may) */
	double trial_before;   /* the moved lane's RTT before the move */
	double trial_base;     /* ... and its base: the path's floor, uncongested */
	double trial_w;        /* ... and its weight */
};

void fqn_steer_params_default(struct fqn_steer_params *p)
{
	p->update_ns = MS(FQN_STEER_UPDATE_MS);
	p->alpha = 0.5;
	p->dwell_ns = MS(150);
	p->dead_band = 0.1;
	p->floor = 0.02;
	p->max_step = 2.0;
	p->congest_ratio = 3.0;
	p->congest_abs_ns = MS(10);
	p->rehash_after_ns = MS(2000);
	p->trial_ns = MS(500);
	p->keep_ratio = 0.8;
	p->max_moves = 3;
	p->cooldown_ns = MS(10000);
}

static int params_ok(const struct fqn_steer_params *p, int n)
{
	return p->update_ns > 0 && p->alpha > 0 && p->alpha <= 1 && p->dwell_ns >= 0 && p->dead_band >= 0 &&
	       p->floor >= 0 && p->floor * n < 1 && p->max_step > 1 && p->congest_ratio >= 1 &&
	       p->trial_ns > 0 && p->keep_ratio > 0 && p->max_moves >= 1;
}

int fqn_steer_create(int nlanes, const struct fqn_steer_params *p, int64_t now, struct fqn_steer **out)
{
	struct fqn_steer *s;

	if (nlanes < 1 || nlanes > FQN_MAX_LANES || !params_ok(p, nlanes))
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->p = *p;
	s->n = nlanes;
	for (int i = 0; i < nlanes; i++) {
		s->l[i].up = 1;
		s->l[i].w = 1.0 / nlanes;
	}
	s->last_update = now;
	s->last_change = now - p->dwell_ns;
	s->trial_lane = -1;
	*out = s;
	return 0;
}

void fqn_steer_destroy(struct fqn_steer *s)
{
	free(s);
}

static int nup(const struct fqn_steer *s)
{
	int k = 0;

	for (int i = 0; i < s->n; i++)
		k += s->l[i].up;
	return k;
}

/* Scale the up lanes' weights to sum 1 with every one at least the floor. */
static void normalise(struct fqn_steer *s, double *t)
{
	double sum = 0;
	int k = nup(s);

	for (int i = 0; i < s->n; i++)
		sum += s->l[i].up ? t[i] : 0;
	for (int i = 0; i < s->n; i++) {
		if (!s->l[i].up)
			t[i] = 0;
		else if (sum <= 0)
			t[i] = 1.0 / k;
		else
			t[i] = s->p.floor + (1.0 - s->p.floor * k) * (t[i] / sum);
	}
}

void fqn_steer_observe(struct fqn_steer *s, int lane, const struct fqn_steer_sample *smp)
{
	struct steer_lane *l;
	double rtt;

	if (lane < 0 || lane >= s->n || !s->l[lane].up)
		return;
	l = &s->l[lane];
	if (smp->samples) {
		l->obs = (double)smp->p99_ns;
		if (smp->retrans_delta || smp->ce_delta)
			l->obs *= 1.5;
		if (l->obs < 1000)
			l->obs = 1000; /* 1 us: no division by ~0, no lane "infinitely" better */
		l->fresh = 1;
	}
	if (smp->rtt_us) {
		rtt = (double)smp->rtt_us * 1000;
		l->rtt = rtt;
		if (lane == s->trial_lane && rtt > s->trial_max)
			s->trial_max = rtt;
		if (l->base <= 0 || rtt < l->base)
			l->base = rtt;
		else if (!l->congested)
			l->base += (rtt - l->base) / BASE_FORGET;
	}
}

void fqn_steer_set_up(struct fqn_steer *s, int lane, int up, int64_t now)
{
	double t[FQN_MAX_LANES], others = 0;
	struct steer_lane *l;
	int nothers = 0;

	if (lane < 0 || lane >= s->n || s->l[lane].up == !!up)
		return;
	l = &s->l[lane];
	l->up = !!up;
	l->d = l->obs = l->rtt = l->base = 0;
	l->fresh = 0;
	l->congested = 0;
	for (int i = 0; i < s->n; i++) {
		t[i] = s->l[i].w;
		if (i != lane && s->l[i].up) {
			others += t[i];
			nothers++;
		}
	}
	/* Down: nothing. Back after a failure (failback verified the path):
	 * an average lane's share, and steering takes it from there; starting
	 * at the floor would leave it there while the lanes' delays are alike.
	 * A moved lane on its new hash: the share it had before the move. A
	 * congested lane steering had shed would otherwise bring half the
	 * traffic back onto a path that may be as congested, for the whole
	 * trial; its small share still shows another flow's queue, and a free
	 * path's falling delay wins it back at up to max_step per change. */
	if (!up)
		t[lane] = 0;
	else if (!nothers)
		t[lane] = 1;
	else if (lane == s->trial_lane && s->trial_w > 0 && s->trial_w < 1)
		t[lane] = others * s->trial_w / (1 - s->trial_w); /* trial_w once normalised */
	else
		t[lane] = others / nothers;
	normalise(s, t);
	for (int i = 0; i < s->n; i++)
		s->l[i].w = t[i];
	s->last_change = now;
	if (up && lane == s->trial_lane) {
		s->trial_start = now; /* the trial runs from when the moved lane carries traffic */
		s->trial_max = 0;
	}
}

static void update_congestion(struct fqn_steer *s, int64_t now)
{
	int all = 1, k = 0;

	for (int i = 0; i < s->n; i++) {
		struct steer_lane *l = &s->l[i];
		int c;

		if (!l->up)
			continue;
		k++;
		if (!l->congested) /* enter above the thresholds */
			c = l->rtt > 0 && l->base > 0 && l->rtt > l->base * s->p.congest_ratio &&
			    l->rtt - l->base > (double)s->p.congest_abs_ns;
		else /* leave below half of them: one quiet sample is no end of it */
			c = l->rtt > 0 && l->rtt > l->base * (1 + (s->p.congest_ratio - 1) / 2) &&
			    l->rtt - l->base > (double)s->p.congest_abs_ns / 2;
		if (c && !l->congested)
			l->congested = now;
		else if (!c)
			l->congested = 0;
		all &= c;
	}
	if (!all || !k)
		s->all_congested_since = 0;
	else if (!s->all_congested_since)
		s->all_congested_since = now;
}

int fqn_steer_update(struct fqn_steer *s, int64_t now)
{
	double t[FQN_MAX_LANES], dref = 0, wsum = 0, change = 0;
	int any = 0, fed[FQN_MAX_LANES] = {0};

	if (now - s->last_update < s->p.update_ns)
		return 0;
	s->last_update = now;
	update_congestion(s, now);
	for (int i = 0; i < s->n; i++) {
		struct steer_lane *l = &s->l[i];

		if (!l->up || !l->fresh)
			continue;
		l->d = l->d > 0 ? l->d + s->p.alpha * (l->obs - l->d) : l->obs;
		l->fresh = 0;
		fed[i] = any = 1;
	}
	if (!any || nup(s) < 2)
		return 0; /* no traffic: nothing learnt; one lane: nothing to steer */
	for (int i = 0; i < s->n; i++)
		if (s->l[i].up && s->l[i].d > 0) {
			dref += s->l[i].w * s->l[i].d;
			wsum += s->l[i].w;
		}
	dref /= wsum;
	for (int i = 0; i < s->n; i++) {
		struct steer_lane *l = &s->l[i];
		double f;

		t[i] = 0;
		if (!l->up)
			continue;
		if (l->d <= 0)
			l->d = dref; /* never sampled (new, or back on a new path): assume average */
		else if (!fed[i])
			l->d += (dref - l->d) / 4; /* starved: drift toward dref, to be probed again */
		f = dref / l->d;
		f = f > s->p.max_step ? s->p.max_step : f < 1 / s->p.max_step ? 1 / s->p.max_step : f;
		t[i] = l->w * f;
	}
	normalise(s, t);
	for (int i = 0; i < s->n; i++) {
		double dw = t[i] > s->l[i].w ? t[i] - s->l[i].w : s->l[i].w - t[i];
		double big = t[i] > s->l[i].w ? t[i] : s->l[i].w;

		if (big > 0 && dw / big > change)
			change = dw / big; /* relative: a lane near the floor still moves */
	}
	if (change < s->p.dead_band || now - s->last_change < s->p.dwell_ns)
		return 0;
	for (int i = 0; i < s->n; i++)
		s->l[i].w = t[i];
	s->last_change = now;
	return 1;
}

double fqn_steer_weight(const struct fqn_steer *s, int lane)
{
	return lane >= 0 && lane < s->n ? s->l[lane].w : 0;
}

int64_t fqn_steer_delay(const struct fqn_steer *s, int lane)
{
	return lane >= 0 && lane < s->n ? (int64_t)s->l[lane].d : 0;
}

int fqn_steer_congested(const struct fqn_steer *s, int lane)
{
	return lane >= 0 && lane < s->n && s->l[lane].up && s->l[lane].congested != 0;
}

int fqn_steer_rehash_pick(struct fqn_steer *s, int advise, int64_t now)
{
	int best = -1;

	if (s->trial_lane >= 0 || now < s->cooldown_until)
		return -1;
	if (!advise && (!s->all_congested_since || now - s->all_congested_since < s->p.rehash_after_ns ||
			now < s->backoff_until))
		return -1;
	for (int i = 0; i < s->n; i++)
		if (s->l[i].up && (best < 0 || s->l[i].rtt - s->l[i].base > s->l[best].rtt - s->l[best].base))
			best = i;
	return best;
}

void fqn_steer_trial_begin(struct fqn_steer *s, int lane, int64_t now)
{
	if (lane < 0 || lane >= s->n)
		return;
	if (s->trial_lane != lane) {
		s->moves = 0;
		s->trial_before = s->l[lane].rtt;
		s->trial_base = s->l[lane].base;
		s->trial_w = s->l[lane].w;
	}
	s->trial_lane = lane;
	s->trial_start = now;
	s->trial_max = 0;
	s->moves++;
	s->all_congested_since = 0;
}

int fqn_steer_trial_lane(const struct fqn_steer *s)
{
	return s->trial_lane;
}

int fqn_steer_trial_verdict(struct fqn_steer *s, int64_t now)
{
	struct steer_lane *l;
	int keep;

	if (s->trial_lane < 0)
		return -1;
	l = &s->l[s->trial_lane];
	if (!l->up || now - s->trial_start < s->p.trial_ns || s->trial_max <= 0)
		return -1;
	/* Kept: the new path's highest RTT over the trial is lower than the
	 * RTT before the move, and not congested itself by the entry rule
	 * against the floor before the move. The highest, not the last: a
	 * queue's RTT swings (a TCP sawtooth), and a full queue read at a low
	 * moment must not pass for a free path. */
	keep = s->trial_max < s->trial_before * s->p.keep_ratio &&
	       !(s->trial_base > 0 && s->trial_max > s->trial_base * s->p.congest_ratio &&
		 s->trial_max - s->trial_base > (double)s->p.congest_abs_ns);
	if (keep || s->moves >= s->p.max_moves) {
		s->trial_lane = -1;
		s->cooldown_until = now + s->p.cooldown_ns;
		/* An episode that found nothing better (kept the last path by
		 * rule) says the queue is not the path's: most often the job's
		 * own load on a bottleneck every path shares (its host link).
		 * Moving again would only repeat that, so the next episode of
		 * our own accord waits twice as long each time, up to 2^8
		 * cooldowns (~43 min at 10 s); a better path found resets it. */
		s->futile = keep ? 0 : s->futile < 8 ? s->futile + 1 : 8;
		s->backoff_until = now + (s->p.cooldown_ns << s->futile);
		return 1;
	}
	return 0;
}
