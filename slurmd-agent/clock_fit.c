#include "slurmd-agent/clock_fit.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct ring {
	int64_t *t, *v;
	unsigned head, count;
};

struct fq_clock_fit {
	int64_t window_ns, bucket_ns;
	unsigned capacity;
	struct ring fwd, rev;
};

#define MAX_BUCKETS 256
/* buckets with a round trip up to max(1.5 x the best, best + this) are used */
#define MIN_RTT_SLACK_NS 20000

static int ring_init(struct ring *r, unsigned cap)
{
	r->t = calloc(cap, sizeof(*r->t));
	r->v = calloc(cap, sizeof(*r->v));
	return r->t && r->v ? 0 : -ENOMEM;
}

static void ring_add(struct ring *r, unsigned cap, int64_t t, int64_t v)
{
	unsigned i;

	if (r->count < cap) {
		i = (r->head + r->count) % cap;
		r->count++;
	} else { /* full: the oldest slot takes the new sample */
		i = r->head;
		r->head = (r->head + 1) % cap;
	}
	r->t[i] = t;
	r->v[i] = v;
}

struct fq_clock_fit *fq_clock_fit_create(int64_t window_ns, int64_t bucket_ns, unsigned capacity)
{
	struct fq_clock_fit *f;

	if (window_ns <= 0 || bucket_ns <= 0 || window_ns / bucket_ns > MAX_BUCKETS || capacity < 2)
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->window_ns = window_ns;
	f->bucket_ns = bucket_ns;
	f->capacity = capacity;
	if (ring_init(&f->fwd, capacity) < 0 || ring_init(&f->rev, capacity) < 0) {
		fq_clock_fit_destroy(f);
		return NULL;
	}
	return f;
}

void fq_clock_fit_destroy(struct fq_clock_fit *f)
{
	if (!f)
		return;
	free(f->fwd.t);
	free(f->fwd.v);
	free(f->rev.t);
	free(f->rev.v);
	free(f);
}

void fq_clock_fit_add_fwd(struct fq_clock_fit *f, int64_t t_ns, int64_t fwd_ns)
{
	ring_add(&f->fwd, f->capacity, t_ns, fwd_ns);
}

void fq_clock_fit_add_rev(struct fq_clock_fit *f, int64_t t_ns, int64_t rev_ns)
{
	ring_add(&f->rev, f->capacity, t_ns, rev_ns);
}

struct envelope {
	int64_t min[MAX_BUCKETS], t[MAX_BUCKETS];
	unsigned char have[MAX_BUCKETS];
};

/* Per-bucket minimum (and when it was seen) of the samples in the window. */
static unsigned lower_envelope(const struct fq_clock_fit *f, const struct ring *r, int64_t now, unsigned nb,
			       struct envelope *e)
{
	int64_t start = now - (int64_t)nb * f->bucket_ns;
	unsigned used = 0;

	memset(e->have, 0, nb);
	for (unsigned k = 0; k < r->count; k++) {
		unsigned i = (r->head + k) % f->capacity;
		int64_t b;

		if (r->t[i] <= start || r->t[i] > now)
			continue;
		b = (r->t[i] - start - 1) / f->bucket_ns;
		if (!e->have[b] || r->v[i] < e->min[b]) {
			e->min[b] = r->v[i];
			e->t[b] = r->t[i];
			e->have[b] = 1;
		}
		used++;
	}
	return used;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int fq_clock_fit_estimate(const struct fq_clock_fit *f, int64_t now_ns, struct fq_clock_estimate *out)
{
	static __thread struct envelope ef, er;
	static __thread double slopes[MAX_BUCKETS * (MAX_BUCKETS - 1) / 2], icpt[MAX_BUCKETS];
	double bt[MAX_BUCKETS], th[MAX_BUCKETS], slope = 0, resid = 0;
	int64_t rtt[MAX_BUCKETS], urtt[MAX_BUCKETS], min_f = INT64_MAX, min_r = INT64_MAX,
						     min_rtt = INT64_MAX, cut;
	double worst = 0;
	unsigned nb = (unsigned)(f->window_ns / f->bucket_ns), n = 0, used = 0, ns = 0, samples;
	unsigned idx[MAX_BUCKETS];

	samples = lower_envelope(f, &f->fwd, now_ns, nb, &ef);
	samples += lower_envelope(f, &f->rev, now_ns, nb, &er);
	for (unsigned b = 0; b < nb; b++) {
		if (!ef.have[b] || !er.have[b])
			continue;
		/* theta cancels in fwd + rev within one bucket (not across a
		 * drifting window): the bucket's round trip */
		rtt[b] = ef.min[b] + er.min[b];
		min_rtt = rtt[b] < min_rtt ? rtt[b] : min_rtt;
		idx[n++] = b;
	}
	if (n == 0)
		return -EAGAIN;
	/* Only buckets whose round trip is near the best one: in the others at
	 * least one direction never got through without queueing, and a
	 * one-sided queue biases theta by half its delay. */
	cut = min_rtt + (min_rtt / 2 > MIN_RTT_SLACK_NS ? min_rtt / 2 : MIN_RTT_SLACK_NS);
	for (unsigned k = 0; k < n; k++) {
		unsigned b = idx[k];
		if (rtt[b] > cut)
			continue;
		/* time relative to now, so doubles keep ns precision */
		bt[used] = (double)((ef.t[b] + er.t[b]) / 2 - now_ns);
		th[used] = ((double)ef.min[b] - (double)er.min[b]) / 2;
		min_f = ef.min[b] < min_f ? ef.min[b] : min_f;
		min_r = er.min[b] < min_r ? er.min[b] : min_r;
		urtt[used] = rtt[b];
		used++;
	}
	if (used < 2)
		return -EAGAIN;
	for (unsigned i = 0; i < used; i++)
		for (unsigned j = i + 1; j < used; j++)
			if (bt[j] != bt[i])
				slopes[ns++] = (th[j] - th[i]) / (bt[j] - bt[i]);
	if (ns)
		slope = median(slopes, ns);
	for (unsigned i = 0; i < used; i++)
		icpt[i] = th[i] - slope * bt[i];
	out->offset_ns = (int64_t)median(icpt, used); /* at bt = 0, i.e. now */
	for (unsigned i = 0; i < used; i++) {
		double r = fabs(th[i] - (slope * bt[i] + (double)out->offset_ns));
		resid = r > resid ? r : resid;
		/* the truth at bucket i is within urtt/2 of th[i]; the line is r
		 * away from th[i] there */
		if ((double)urtt[i] / 2 + r > worst)
			worst = (double)urtt[i] / 2 + r;
	}
	out->drift_ppb = slope * 1e9;
	out->residual_ns = (int64_t)(resid + 0.5);
	out->min_fwd_ns = min_f;
	out->min_rev_ns = min_r;
	/* at each bucket used, the line is within (half its round trip + its
	 * residual) of the truth; plus what the drift moves theta within a
	 * bucket, for the step from the last bucket to now */
	out->bound_ns = (int64_t)(worst + 0.5) + (int64_t)(fabs(slope) * (double)f->bucket_ns);
	out->at_ns = now_ns;
	out->buckets = used;
	out->samples = samples;
	return 0;
}
