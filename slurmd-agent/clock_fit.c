#include "slurmd-agent/clock_fit.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct ring {
	int64_t *t, *v;
	unsigned head, count;
};

/* One bucket of the long history (absolute index idx = t / bucket_ns):
 * the lowest sample of each direction and when it was seen. */
struct hbucket {
	int64_t idx, tf, mf, tr, mr;
	unsigned char hf, hr;
};

struct fq_clock_fit {
	int64_t window_ns, bucket_ns;
	unsigned capacity;
	struct ring fwd, rev;
	struct hbucket *hist; /* FQ_CLOCK_HIST_NS / bucket_ns slots, slot = idx % n_hist */
	unsigned n_hist;
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
	f->n_hist = (unsigned)(FQ_CLOCK_HIST_NS / bucket_ns);
	if (f->n_hist < MAX_BUCKETS)
		f->n_hist = MAX_BUCKETS;
	f->hist = calloc(f->n_hist, sizeof(*f->hist));
	if (!f->hist || ring_init(&f->fwd, capacity) < 0 || ring_init(&f->rev, capacity) < 0) {
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
	free(f->hist);
	free(f);
}

static int64_t floor_div(int64_t a, int64_t b)
{
	return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

/* The history slot of time t, reset if it held an older bucket; NULL for
 * a sample older than the slot's bucket (more than the history ago). */
static struct hbucket *hist_slot(struct fq_clock_fit *f, int64_t t)
{
	int64_t idx = floor_div(t, f->bucket_ns);
	struct hbucket *h = &f->hist[(uint64_t)idx % f->n_hist];

	if (h->hf || h->hr) {
		if (h->idx > idx)
			return NULL;
		if (h->idx == idx)
			return h;
	}
	memset(h, 0, sizeof(*h));
	h->idx = idx;
	return h;
}

void fq_clock_fit_add_fwd(struct fq_clock_fit *f, int64_t t_ns, int64_t fwd_ns)
{
	struct hbucket *h = hist_slot(f, t_ns);

	ring_add(&f->fwd, f->capacity, t_ns, fwd_ns);
	if (h && (!h->hf || fwd_ns < h->mf)) {
		h->mf = fwd_ns;
		h->tf = t_ns;
		h->hf = 1;
	}
}

void fq_clock_fit_add_rev(struct fq_clock_fit *f, int64_t t_ns, int64_t rev_ns)
{
	struct hbucket *h = hist_slot(f, t_ns);

	ring_add(&f->rev, f->capacity, t_ns, rev_ns);
	if (h && (!h->hr || rev_ns < h->mr)) {
		h->mr = rev_ns;
		h->tr = t_ns;
		h->hr = 1;
	}
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

/* The short-window fit (see clock_fit.h): -EAGAIN without 2 usable buckets;
 * -ENODATA when no bucket of the window holds both directions. */
static int short_estimate(const struct fq_clock_fit *f, int64_t now_ns, struct fq_clock_estimate *out)
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
		return -ENODATA;
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

/* Least squares y = a + b x over n points, then once more without those
 * beyond 3 MADs (at least 100 ns) of the first line. *cutoff: that
 * trimming distance. -EAGAIN with fewer than 2 points. */
static int trimmed_line(const double *x, const double *y, unsigned n, double *scratch, double *a, double *b,
			double *cutoff)
{
	*a = *b = *cutoff = 0;
	for (unsigned round = 0; round < 2; round++) {
		double sx = 0, sy = 0, sxx = 0, sxy = 0, mx, my;
		unsigned c = 0;

		for (unsigned i = 0; i < n; i++) {
			if (round && fabs(y[i] - (*a + *b * x[i])) > *cutoff)
				continue;
			sx += x[i];
			sy += y[i];
			c++;
		}
		if (c < 2)
			return -EAGAIN;
		mx = sx / c;
		my = sy / c;
		for (unsigned i = 0; i < n; i++) {
			if (round && fabs(y[i] - (*a + *b * x[i])) > *cutoff)
				continue;
			sxx += (x[i] - mx) * (x[i] - mx);
			sxy += (x[i] - mx) * (y[i] - my);
		}
		*b = sxx > 0 ? sxy / sxx : 0;
		*a = my - *b * mx;
		if (round == 0) {
			for (unsigned i = 0; i < n; i++)
				scratch[i] = fabs(y[i] - (*a + *b * x[i]));
			*cutoff = 3 * 1.4826 * median(scratch, n);
			*cutoff = *cutoff < 100 ? 100 : *cutoff;
		}
	}
	return 0;
}

/*
 * The long fit (see clock_fit.h). The clean history buckets are those
 * whose round trip (corrected by slope_ns_per_ns for the drift between
 * its two minima) is within the slack of the lowest round trip of the
 * whole history. A line through the newest FQ_CLOCK_FIT_RECENT of them
 * gives theta at the newest one; from there to now the slope of a line
 * through up to FQ_CLOCK_FIT_MAX_CLEAN of them (a long baseline) carries
 * it when the newest is older than the short window, the recent line's
 * own slope otherwise. -EAGAIN with fewer than FQ_CLOCK_FIT_MIN_CLEAN.
 */
static int long_estimate(const struct fq_clock_fit *f, int64_t now_ns, double slope_ns_per_ns,
			 struct fq_clock_estimate *out)
{
	static __thread double x[FQ_CLOCK_FIT_MAX_CLEAN], y[FQ_CLOCK_FIT_MAX_CLEAN],
	    hr[FQ_CLOCK_FIT_MAX_CLEAN], scratch[FQ_CLOCK_FIT_MAX_CLEAN];
	static __thread int64_t mf[FQ_CLOCK_FIT_MAX_CLEAN], mr[FQ_CLOCK_FIT_MAX_CLEAN];
	int64_t now_idx = floor_div(now_ns, f->bucket_ns), best = INT64_MAX, slack = 0, min_f = INT64_MAX,
		min_r = INT64_MAX;
	double ar, br, cr, al, bl, cl, worst_r = 0, worst_l = 0, resid = 0, x_last = -1e300, x_first = 1e300,
				       xl_first = 1e300, gap, slope, span_r, span_l, off;
	unsigned n = 0, nr, used = 0;

	for (unsigned pass = 0; pass < 2; pass++) {
		for (int64_t k = 0; k < (int64_t)f->n_hist && n < FQ_CLOCK_FIT_MAX_CLEAN; k++) {
			const struct hbucket *h = &f->hist[(uint64_t)(now_idx - k) % f->n_hist];
			double rtt;

			if (!h->hf || !h->hr || h->idx != now_idx - k)
				continue;
			rtt = (double)h->mf + (double)h->mr - slope_ns_per_ns * (double)(h->tf - h->tr);
			if (pass == 0) {
				best = (int64_t)rtt < best ? (int64_t)rtt : best;
				continue;
			}
			if (rtt > (double)(best + slack))
				continue;
			x[n] = (double)((h->tf + h->tr) / 2 - now_ns);
			y[n] = ((double)h->mf - (double)h->mr) / 2;
			hr[n] = rtt / 2;
			mf[n] = h->mf;
			mr[n] = h->mr;
			n++;
		}
		if (pass == 0) {
			if (best == INT64_MAX)
				return -EAGAIN;
			slack = best / FQ_CLOCK_FIT_SLACK_DIV > FQ_CLOCK_FIT_SLACK_NS
				    ? best / FQ_CLOCK_FIT_SLACK_DIV
				    : FQ_CLOCK_FIT_SLACK_NS;
		}
	}
	if (n < FQ_CLOCK_FIT_MIN_CLEAN)
		return -EAGAIN;
	nr = n < FQ_CLOCK_FIT_RECENT ? n : FQ_CLOCK_FIT_RECENT; /* the buckets are newest first */
	if (trimmed_line(x, y, nr, scratch, &ar, &br, &cr) < 0 ||
	    trimmed_line(x, y, n, scratch, &al, &bl, &cl) < 0)
		return -EAGAIN;
	for (unsigned i = 0; i < n; i++) {
		double r = fabs(y[i] - (al + bl * x[i]));

		if (r <= cl) {
			worst_l = hr[i] + r > worst_l ? hr[i] + r : worst_l;
			xl_first = x[i] < xl_first ? x[i] : xl_first;
		}
		if (i >= nr)
			continue;
		r = fabs(y[i] - (ar + br * x[i]));
		if (r > cr)
			continue;
		resid = r > resid ? r : resid;
		worst_r = hr[i] + r > worst_r ? hr[i] + r : worst_r;
		x_last = x[i] > x_last ? x[i] : x_last;
		x_first = x[i] < x_first ? x[i] : x_first;
		min_f = mf[i] < min_f ? mf[i] : min_f;
		min_r = mr[i] < min_r ? mr[i] : min_r;
		used++;
	}
	gap = -x_last; /* since the newest clean bucket */
	span_r = x_last - x_first > f->bucket_ns ? x_last - x_first : (double)f->bucket_ns;
	span_l = x_last - xl_first > span_r ? x_last - xl_first : span_r;
	if (gap <= (double)f->window_ns) {
		slope = br;
		off = ar;
	} else {
		slope = bl;
		off = ar + br * x_last + bl * gap;
	}
	out->offset_ns = (int64_t)llround(off);
	out->drift_ppb = slope * 1e9;
	out->residual_ns = (int64_t)(resid + 0.5);
	out->min_fwd_ns = min_f;
	out->min_rev_ns = min_r;
	/* at every bucket used the recent line is within (half its round trip
	 * + its residual) of the truth, and its slope within 2 x that over its
	 * span (the long line's likewise over its own); plus what theta moves
	 * within a bucket; from the newest clean bucket to now the slope's
	 * uncertainty, and the oscillator's wander, add up */
	out->bound_ns = (int64_t)(worst_r + 0.5) + (int64_t)(fabs(slope) * (double)f->bucket_ns) +
			(int64_t)((2 * (gap <= (double)f->window_ns ? worst_r / span_r : worst_l / span_l) +
				   FQ_CLOCK_FIT_WANDER_PPB / 1e9) *
				  gap);
	out->at_ns = now_ns;
	out->buckets = used;
	out->samples = 0;
	return 0;
}

int fq_clock_fit_estimate(const struct fq_clock_fit *f, int64_t now_ns, struct fq_clock_estimate *out)
{
	struct fq_clock_estimate s, l;
	int rs = short_estimate(f, now_ns, &s);

	if (rs == -ENODATA)
		return -EAGAIN; /* nothing got through lately: the caller holds */
	if (long_estimate(f, now_ns, rs == 0 ? s.drift_ppb / 1e9 : 0, &l) == 0) {
		l.samples = rs == 0 ? s.samples : 0;
		*out = l;
		return 0;
	}
	if (rs < 0)
		return -EAGAIN;
	*out = s;
	return 0;
}
