/* clock_fit under standing queues: the long history keeps the estimate on
 * the clean buckets (pure: synthetic samples, no clocks read). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "slurmd-agent/clock_fit.h"
#include "tests/unit/tap.h"

#define MS 1000000LL
#define S  1000000000LL

struct path_model {
	int64_t theta0; /* peer - us at t = 0 */
	double drift;   /* d theta / dt */
	double wander;  /* d drift / dt (1/ns) */
	int64_t base;   /* minimum one-way delay, both directions */
	int64_t q_fwd;  /* standing queue on the forward direction (0: none) */
	unsigned seed;
};

static int64_t theta_at(const struct path_model *m, int64_t t)
{
	return m->theta0 + (int64_t)(m->drift * (double)t + 0.5 * m->wander * (double)t * (double)t);
}

/* Some queueing noise: a quarter of the samples clean (+-50 ns jitter). */
static int64_t noise(struct path_model *m)
{
	int64_t j = rand_r(&m->seed) % 101 - 50;

	return rand_r(&m->seed) % 4 == 0 ? j : j + 1000 + rand_r(&m->seed) % 100000;
}

/* One probe pair every 20 ms over [from, to). */
static void feed(struct fq_clock_fit *f, struct path_model *m, int64_t from, int64_t to)
{
	for (int64_t t = from; t < to; t += 20 * MS) {
		int64_t sq = m->q_fwd ? m->q_fwd + rand_r(&m->seed) % 2000 : 0;

		fq_clock_fit_add_fwd(f, t, m->base + sq + noise(m) + theta_at(m, t));
		fq_clock_fit_add_rev(f, t + 40000, m->base + noise(m) - theta_at(m, t + 40000));
	}
}

static int64_t err_at(const struct fq_clock_fit *f, const struct path_model *m, int64_t now,
		      struct fq_clock_estimate *e)
{
	if (fq_clock_fit_estimate(f, now, e) < 0)
		return INT64_MAX;
	return e->offset_ns - theta_at(m, now);
}

static int64_t abs64(int64_t v)
{
	return v < 0 ? -v : v;
}

static void test_quiet(void)
{
	struct path_model m = {.theta0 = -37123456, .drift = 3e-6, .base = 9000, .seed = 7};
	struct fq_clock_fit *f = fq_clock_fit_create(4 * S, 250 * MS, 512);
	struct fq_clock_estimate e;
	int64_t err, worst = 0;

	feed(f, &m, 1 * MS, 3 * S);
	err = err_at(f, &m, 3 * S, &e);
	ok(abs64(err) < 2000, "3 s in (short fit): error %" PRId64 " ns < 2 us", err);
	for (int64_t now = 3 * S; now < 120 * S; now += S) {
		feed(f, &m, now, now + S);
		err = err_at(f, &m, now + S, &e);
		worst = abs64(err) > worst ? abs64(err) : worst;
	}
	ok(worst < 300, "quiet path, 3 ppm drift, 4..120 s: worst error %" PRId64 " ns < 300 ns", worst);
	ok(e.drift_ppb > 2990 && e.drift_ppb < 3010, "drift %.1f ppb (3000)", e.drift_ppb);
	ok(e.bound_ns >= abs64(err) && e.bound_ns < m.base + 10000, "bound %" PRId64 " ns holds", e.bound_ns);
	ok(e.buckets >= 200, "offset from the %u newest clean buckets", e.buckets);
	fq_clock_fit_destroy(f);
}

/* The drift itself moves (100 ppb over 500 s): the offset still follows,
 * since it comes from the newest buckets. */
static void test_wander(void)
{
	struct path_model m = {
	    .theta0 = 1234567, .drift = -4e-6, .wander = 0.2e-9 / 1e9, .base = 9000, .seed = 5};
	struct fq_clock_fit *f = fq_clock_fit_create(4 * S, 250 * MS, 512);
	struct fq_clock_estimate e;
	int64_t err, worst = 0;

	for (int64_t now = 0; now < 500 * S; now += S) {
		feed(f, &m, now + 1, now + S);
		if (now < 10 * S)
			continue;
		err = err_at(f, &m, now + S, &e);
		worst = abs64(err) > worst ? abs64(err) : worst;
	}
	ok(worst < 300, "drift wandering by 0.2 ppb/s for 500 s: worst error %" PRId64 " ns < 300 ns", worst);
	fq_clock_fit_destroy(f);
}

static void test_standing_queue(double drift, const char *what)
{
	struct path_model m = {.theta0 = 81234567, .drift = drift, .base = 12000, .seed = 3};
	struct fq_clock_fit *f = fq_clock_fit_create(4 * S, 250 * MS, 512);
	struct fq_clock_fit *fresh = fq_clock_fit_create(4 * S, 250 * MS, 512);
	struct fq_clock_estimate e, b0;
	int64_t err, worst = 0, bound_ok = 1;

	feed(f, &m, 1 * MS, 120 * S);
	is_int(fq_clock_fit_estimate(f, 120 * S, &b0), 0, "%s: 120 s quiet: estimate", what);
	/* then 2 ms of standing queue on the forward direction for 300 s */
	m.q_fwd = 2 * MS;
	for (int64_t now = 120 * S; now < 420 * S; now += S) {
		feed(f, &m, now, now + S);
		err = err_at(f, &m, now + S, &e);
		worst = abs64(err) > worst ? abs64(err) : worst;
		if (e.bound_ns < abs64(err))
			bound_ok = 0;
	}
	ok(worst < 1000, "%s: 300 s of a 2 ms standing queue one way: worst error %" PRId64 " ns < 1 us",
	   what, worst);
	ok(bound_ok, "%s: the bound held throughout (last %" PRId64 " ns, %" PRId64 " ns when quiet)", what,
	   e.bound_ns, b0.bound_ns);
	ok(e.bound_ns > b0.bound_ns, "%s: ... and grew while extrapolating", what);
	/* the same loaded samples without the quiet history: biased by half
	 * the queue (what the fit did before it kept a history) */
	feed(fresh, &m, 400 * S, 420 * S);
	err = err_at(fresh, &m, 420 * S, &e);
	ok(abs64(err) > 900000, "%s: without the history the queue biases by %" PRId64 " ns", what, err);
	/* the queue drains: clean buckets again, back on them */
	m.q_fwd = 0;
	feed(f, &m, 420 * S, 430 * S);
	err = err_at(f, &m, 430 * S, &e);
	ok(abs64(err) < 300, "%s: queue gone: error %" PRId64 " ns", what, err);
	fq_clock_fit_destroy(f);
	fq_clock_fit_destroy(fresh);
}

static void test_silence(void)
{
	struct path_model m = {.theta0 = 5000, .base = 9000, .seed = 11};
	struct fq_clock_fit *f = fq_clock_fit_create(4 * S, 250 * MS, 512);
	struct fq_clock_estimate e;

	feed(f, &m, 1 * MS, 60 * S);
	is_int(fq_clock_fit_estimate(f, 60 * S, &e), 0, "60 s: estimate");
	is_int(fq_clock_fit_estimate(f, 70 * S, &e), -EAGAIN,
	       "nothing got through for 10 s: -EAGAIN (the caller holds), despite the history");
	fq_clock_fit_destroy(f);
}

int main(void)
{
	test_quiet();
	test_wander();
	test_standing_queue(0, "no drift");
	test_standing_queue(20e-6, "20 ppm drift");
	test_silence();
	return done_testing();
}
