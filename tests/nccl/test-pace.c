/* pace: the rate controller fed with numbers and a fake clock, and closed
 * over a fluid model of a bottleneck: n paced senders into one link of
 * capacity C with a drop-tail queue, RTT = base + queue / C. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nccl-plugin/env.h"

#include "nccl-plugin/control/pace.h"
#include "tests/unit/tap.h"

#define MS(x)   ((int64_t)(x)*1000000)
#define STEP_NS MS(1)

/* Default params with bad value k (0..12) set; its name in *what. */
static void bad_params(struct fqn_pace_params *p, int k, const char **what)
{
	fqn_pace_params_default(p);
	switch (k) {
	case 0:
		p->update_ns = 0;
		*what = "update 0";
		break;
	case 1:
		p->target_ns = 0;
		*what = "target 0";
		break;
	case 2:
		p->target_ns = -5;
		*what = "target < 0";
		break;
	case 3:
		p->gain = 0;
		*what = "gain 0";
		break;
	case 4:
		p->gain = 1.5;
		*what = "gain > 1";
		break;
	case 5:
		p->max_cut = 0;
		*what = "max_cut 0";
		break;
	case 6:
		p->max_cut = 2;
		*what = "max_cut > 1";
		break;
	case 7:
		p->ai = 0;
		*what = "ai 0";
		break;
	case 8:
		p->mi = -0.1;
		*what = "mi < 0";
		break;
	case 9:
		p->floor = 0;
		*what = "floor 0";
		break;
	case 10:
		p->lead = -0.5;
		*what = "lead < 0";
		break;
	case 11:
		p->lead = 5;
		*what = "lead > 4";
		break;
	default:
		p->ceiling = p->floor;
		*what = "ceiling at the floor";
		break;
	}
}

static void test_params(void)
{
	struct fqn_pace_params p;
	struct fqn_pace *s;
	const char *what;

	fqn_pace_params_default(&p);
	is_int(fqn_pace_create(0, &p, 0, &s), -EINVAL, "0 lanes refused");
	is_int(fqn_pace_create(FQN_MAX_LANES + 1, &p, 0, &s), -EINVAL, "17 lanes refused");
	for (int k = 0; k <= 12; k++) {
		bad_params(&p, k, &what);
		is_int(fqn_pace_create(2, &p, 0, &s), -EINVAL, "bad params refused: %s", what);
	}
	fqn_pace_params_default(&p);
	is_int(fqn_pace_create(4, &p, 0, &s), 0, "defaults accepted");
	ok(fqn_pace_rate(s, 0) == 0 && fqn_pace_rate(s, 3) == 0, "every lane unpaced at start");
	fqn_pace_destroy(s);
}

/* One update of lane 0 alone: RTT rtt_us over a 100 us base, bytes acked. */
static int step1(struct fqn_pace *s, int64_t *now, uint32_t rtt_us, uint64_t bytes)
{
	struct fqn_pace_sample smp = {.rtt_us = rtt_us, .min_rtt_us = 100, .bytes = bytes};

	*now += MS(50);
	fqn_pace_observe(s, 0, &smp);
	return fqn_pace_update(s, *now);
}

static void test_rules(void)
{
	struct fqn_pace_params p;
	struct fqn_pace *s;
	int64_t now = 0;
	double r, cut;
	int k, bounded = 1;

	fqn_pace_params_default(&p);
	fqn_pace_create(1, &p, 0, &s);
	/* 10 MB/s delivered (500 KB per 50 ms) */
	is_int(step1(s, &now, 100 + 1000, 500000), 0, "below the target: stays unpaced");
	is_int(step1(s, &now, 100 + 200000, 0), 0, "no traffic: a stale RTT changes nothing");
	ok(step1(s, &now, 100 + 4000, 500000) == 1, "above the target: paced");
	r = fqn_pace_rate(s, 0);
	/* cut = gain x 2 ms / 50 ms, from what it delivered, plus ai */
	cut = p.gain * 2.0 / 50;
	ok(fabs(r - (10e6 * (1 - cut) + p.ai)) < 1e3,
	   "the cut is in proportion to the excess (%.0f B/s, want %.0f)", r, 10e6 * (1 - cut) + p.ai);
	for (k = 0; k < 10; k++) { /* gain x 398 ms / 50 ms: far above max_cut */
		step1(s, &now, 100 + 400000, 500000);
		bounded &= fabs(fqn_pace_rate(s, 0) - (10e6 * (1 - p.max_cut) + p.ai)) < 1e3;
	}
	ok(bounded, "a huge excess cuts by max_cut at most (%.0f, from 10 MB/s)", fqn_pace_rate(s, 0));
	for (k = 0; k < 5; k++)
		step1(s, &now, 100 + 500000, 5000);
	ok(fabs(fqn_pace_rate(s, 0) - p.floor) < 1, "never below the floor (%.0f)", fqn_pace_rate(s, 0));
	r = fqn_pace_rate(s, 0);
	step1(s, &now, 100 + 1600, 50000000);
	ok(fabs(fqn_pace_rate(s, 0) - (r + p.ai)) < 1, "at or below the target: additive");
	r = fqn_pace_rate(s, 0);
	step1(s, &now, 100 + 200, 50000000);
	ok(fabs(fqn_pace_rate(s, 0) - (r + p.ai)) < 1, "a low queue once: still additive");
	step1(s, &now, 100 + 200, 50000000);
	r = fqn_pace_rate(s, 0);
	step1(s, &now, 100 + 200, 50000000);
	ok(fabs(fqn_pace_rate(s, 0) - (r * (1 + p.mi) + p.ai)) < 1,
	   "a queue low 3 updates in a row: multiplicative");
	for (k = 0; k < 200 && fqn_pace_rate(s, 0) > 0; k++)
		step1(s, &now, 100, 50000000);
	ok(fqn_pace_rate(s, 0) == 0, "an empty queue releases it at the ceiling (%d updates from the floor)",
	   k);
	ok(k <= 120, "from the floor to unpaced (50 GB/s) in %d updates <= 120 (6 s)", k);
	step1(s, &now, 100 + 4000, 500000);
	ok(fqn_pace_rate(s, 0) > 0, "paced again");
	r = fqn_pace_rate(s, 0);
	step1(s, &now, 100 + 4000, 5000); /* it sent a hundredth of that: between messages */
	ok(fabs(fqn_pace_rate(s, 0) - (r * (1 - p.max_cut) * (1 - cut) + p.ai)) < 1,
	   "a lane that sent little loses at most max_cut of its rate, not all of it");
	fqn_pace_reset(s, 0);
	ok(fqn_pace_rate(s, 0) == 0 && fqn_pace_delay(s, 0) == 0, "a lane back up is unpaced");
	step1(s, &now, 100 + 4000, 500000);
	r = fqn_pace_rate(s, 0);
	{
		struct fqn_pace_sample smp = {.rtt_us = 100 + 50000, .min_rtt_us = 100, .bytes = 500000};

		fqn_pace_observe(s, 0, &smp);
		is_int(fqn_pace_update(s, now + MS(10)), 0, "nothing before an update period has passed");
		ok(fqn_pace_rate(s, 0) == r, "the rate is kept until then");
	}
	fqn_pace_destroy(s);
}

/* One update of two lanes: each lane's RTT over a 100 us base (0: the
 * lane carried nothing and is not observed) and bytes acked. */
static void step2(struct fqn_pace *s, int64_t *now, uint32_t rtt0, uint64_t b0, uint32_t rtt1, uint64_t b1)
{
	struct fqn_pace_sample s0 = {.rtt_us = rtt0, .min_rtt_us = 100, .bytes = b0};
	struct fqn_pace_sample s1 = {.rtt_us = rtt1, .min_rtt_us = 100, .bytes = b1};

	*now += MS(50);
	if (rtt0)
		fqn_pace_observe(s, 0, &s0);
	if (rtt1)
		fqn_pace_observe(s, 1, &s1);
	fqn_pace_update(s, *now);
}

/* The signal is late (an update or so): the law acts on a rising queue
 * extrapolated lead updates ahead, on a falling one as it stands. */
static void test_trend(void)
{
	struct fqn_pace_params p;
	struct fqn_pace *s;
	int64_t now = 0;
	double r, q;

	fqn_pace_params_default(&p);
	fqn_pace_create(1, &p, 0, &s);
	step1(s, &now, 100 + 1000, 500000);
	is_int(step1(s, &now, 100 + 1800, 500000), 1,
	       "a queue rising to 1.8 ms (under the 2 ms target): paced");
	q = 1.8 + p.lead * 0.8; /* ms, where it will be */
	ok(fabs(fqn_pace_rate(s, 0) - (10e6 * (1 - p.gain * (q - 2) / 50) + p.ai)) < 1e3,
	   "cut for the queue %.1f updates ahead (%.1f ms): %.0f B/s", p.lead, q, fqn_pace_rate(s, 0));
	step1(s, &now, 100 + 10000, 500000);
	step1(s, &now, 100 + 6000, 500000);
	ok(fabs(fqn_pace_rate(s, 0) - (10e6 * (1 - p.gain * 4 / 50) + p.ai)) < 1,
	   "a queue falling from 10 to 6 ms is cut for the 6 ms that stand, no less (%.0f B/s)",
	   fqn_pace_rate(s, 0));
	step1(s, &now, 100 + 200000, 0); /* no traffic: no sample */
	r = fqn_pace_rate(s, 0);
	step1(s, &now, 100 + 1900, 500000);
	ok(fabs(fqn_pace_rate(s, 0) - (r + p.ai)) < 1,
	   "no trend across an update without a sample: 1.9 ms is under the target");
	fqn_pace_destroy(s);
}

/* A connection moves its chunks between its lanes: their rates follow. */
static void test_follow(void)
{
	struct fqn_pace_params p;
	struct fqn_pace *s;
	int64_t now = 0;
	double r0, r1, cut;

	fqn_pace_params_default(&p);
	fqn_pace_create(2, &p, 0, &s);
	cut = p.gain * 2.0 / 50; /* a steady 4 ms queue, 2 ms above the target */
	step2(s, &now, 100 + 4000, 500000, 100 + 4000, 250000);
	r0 = 10e6 * (1 - cut) + p.ai;
	r1 = 5e6 * (1 - cut) + p.ai;
	ok(fabs(fqn_pace_rate(s, 0) - r0) < 1 && fabs(fqn_pace_rate(s, 1) - r1) < 1,
	   "both lanes paced (%.0f, %.0f B/s)", fqn_pace_rate(s, 0), fqn_pace_rate(s, 1));
	step2(s, &now, 100 + 4000, 500000, 0, 0);
	ok(fabs(fqn_pace_rate(s, 0) - (r0 + r1)) < 1,
	   "a lane gone idle gives its rate to its busy sibling (%.0f = %.0f + %.0f)", fqn_pace_rate(s, 0),
	   r0, r1);
	ok(fabs(fqn_pace_rate(s, 1) - r1) < 1, "and keeps its own, under the busy lanes' mean");
	step2(s, &now, 100 + 4000, 500000, 100 + 4000, 250000);
	ok(fabs(fqn_pace_rate(s, 0) - r0 + r1) < 1 && fabs(fqn_pace_rate(s, 1) - r1) < 1,
	   "back, it takes its rate from the sibling (%.0f, %.0f)", fqn_pace_rate(s, 0), fqn_pace_rate(s, 1));
	fqn_pace_destroy(s);

	/* an idle lane at a rate above what the busy lanes now have */
	fqn_pace_create(2, &p, 0, &s);
	now = 0;
	step2(s, &now, 100 + 4000, 100000, 100 + 4000, 1000000);
	r0 = 2e6 * (1 - cut) + p.ai;
	r1 = 20e6 * (1 - cut) + p.ai;
	step2(s, &now, 100 + 4000, 100000, 0, 0);
	ok(fabs(fqn_pace_rate(s, 1) - r0) < 1,
	   "an idle lane keeps no rate above the busy lanes' own (%.0f, was %.0f): no burst when it is back",
	   fqn_pace_rate(s, 1), r1);
	ok(fabs(fqn_pace_rate(s, 0) - (r0 + r1)) < 1, "its old rate went to the sibling (%.0f)",
	   fqn_pace_rate(s, 0));
	fqn_pace_destroy(s);

	/* a lane back up (failback, move) while its sibling is paced */
	fqn_pace_create(2, &p, 0, &s);
	now = 0;
	step2(s, &now, 100 + 4000, 500000, 100 + 4000, 500000);
	fqn_pace_reset(s, 1);
	ok(fqn_pace_rate(s, 1) == 0, "a lane back up forgets its rate");
	step2(s, &now, 100 + 4000, 500000, 0, 0);
	ok(fabs(fqn_pace_rate(s, 1) - fqn_pace_rate(s, 0)) < 1,
	   "until it carries traffic it is held at its paced sibling's rate (%.0f), not unpaced",
	   fqn_pace_rate(s, 1));
	fqn_pace_destroy(s);

	/* not driven for more than two updates: the connection was idle */
	fqn_pace_create(2, &p, 0, &s);
	now = 0;
	step2(s, &now, 100 + 4000, 500000, 100 + 4000, 500000);
	ok(fqn_pace_rate(s, 0) > 0 && fqn_pace_rate(s, 1) > 0, "both lanes paced");
	now += MS(50);
	step2(s, &now, 100 + 4000, 500000, 100 + 4000, 500000);
	ok(fqn_pace_rate(s, 0) > 0 && fqn_pace_rate(s, 1) > 0,
	   "an update 100 ms after the last: still paced");
	now += MS(110);
	is_int(fqn_pace_update(s, now + MS(50)), 1,
	       "the first update after 160 ms without one changes the rates");
	ok(fqn_pace_rate(s, 0) == 0 && fqn_pace_rate(s, 1) == 0 && fqn_pace_delay(s, 0) == 0,
	   "and both lanes start unpaced: a rate cut at an iteration's end does not hold the next one back");
	fqn_pace_destroy(s);

	/* nothing paced: nothing moves */
	fqn_pace_create(2, &p, 0, &s);
	now = 0;
	step2(s, &now, 100 + 1000, 500000, 100 + 1000, 500000);
	step2(s, &now, 100 + 1000, 500000, 0, 0);
	ok(fqn_pace_rate(s, 0) == 0 && fqn_pace_rate(s, 1) == 0, "unpaced lanes stay unpaced when one idles");
	fqn_pace_destroy(s);
}

/*
 * The fluid model. Each sender offers min(its rate, line) (unpaced: the
 * line rate, a TCP sender filling the queue); the queue grows by the
 * excess over the capacity and drops what exceeds its bound; the link
 * serves the senders in proportion to what they offer. Each sender's
 * srtt follows base + queue / C with TCP's 1/8 gain per ms.
 */
#define NMAX 8
struct sim {
	int n;
	double cap, line, qmax, base_s; /* B/s, B/s, B, s */
	double q;                       /* bytes queued */
	double srtt[NMAX], acked[NMAX];
	int active[NMAX];
	int64_t now;
	struct fqn_pace *pace;
	/* over the measured window */
	double served, delays[20000], rates[NMAX];
	int nd;
};

static void sim_init(struct sim *m, int n, double cap, double qmax_s, const struct fqn_pace_params *p)
{
	memset(m, 0, sizeof(*m));
	m->n = n;
	m->cap = cap;
	m->line = 10 * cap;
	m->qmax = qmax_s * cap;
	m->base_s = 100e-6;
	for (int i = 0; i < n; i++) {
		m->srtt[i] = m->base_s;
		m->active[i] = 1;
	}
	fqn_pace_create(n, p, 0, &m->pace);
}

/* Run until t_ns; measure (delay samples, bytes served, per-lane rates)
 * from `from` on. */
static void sim_run(struct sim *m, int64_t t_ns, int64_t from)
{
	for (; m->now < t_ns; m->now += STEP_NS) {
		double dt = STEP_NS / 1e9, offer[NMAX], total = 0, served;

		for (int i = 0; i < m->n; i++) {
			double r = fqn_pace_rate(m->pace, i);

			offer[i] = !m->active[i] ? 0 : r > 0 && r < m->line ? r : m->line;
			total += offer[i];
		}
		served = m->q > 0 || total > m->cap ? m->cap : total;
		m->q += (total - served) * dt;
		if (m->q > m->qmax)
			m->q = m->qmax;
		if (m->q < 0)
			m->q = 0;
		for (int i = 0; i < m->n; i++) {
			double got = total > 0 ? served * offer[i] / total * dt : 0;

			m->acked[i] += got;
			m->srtt[i] += (m->base_s + m->q / m->cap - m->srtt[i]) / 8;
			if (m->now >= from)
				m->rates[i] += got;
		}
		if (m->now >= from) {
			m->served += served * dt;
			if (m->nd < 20000)
				m->delays[m->nd++] = m->q / m->cap;
		}
		if ((m->now + STEP_NS) % MS(50) == 0) {
			for (int i = 0; i < m->n; i++) {
				struct fqn_pace_sample smp = {.rtt_us = (uint32_t)(m->srtt[i] * 1e6),
							      .min_rtt_us = (uint32_t)(m->base_s * 1e6),
							      .bytes = (uint64_t)m->acked[i]};

				m->acked[i] = 0;
				fqn_pace_observe(m->pace, i, &smp);
			}
			fqn_pace_update(m->pace, m->now + STEP_NS);
		}
	}
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double quantile(struct sim *m, double q)
{
	qsort(m->delays, (size_t)m->nd, sizeof(double), cmp_d);
	return m->nd ? m->delays[(int)(q * (m->nd - 1))] : 0;
}

static double jain(const double *x, int n)
{
	double s = 0, s2 = 0;

	for (int i = 0; i < n; i++) {
		s += x[i];
		s2 += x[i] * x[i];
	}
	return s2 > 0 ? s * s / (n * s2) : 0;
}

/* Where the queue settles with n equal lanes on capacity c (see pace.h):
 * the target plus the excess whose cut offsets each update's ai. */
static double settles(const struct fqn_pace_params *p, int n, double c)
{
	return (p->target_ns + n * p->ai * p->update_ns / (p->gain * c)) / 1e9;
}

static void test_bottleneck(void)
{
	struct fqn_pace_params p;
	struct sim m;
	double p99, p50, util, lo = 1e9, hi = 0, eq;

	/* 4 senders into 200 Mbit/s (25 MB/s) with a 100 ms deep queue */
	fqn_pace_params_default(&p);
	sim_init(&m, 4, 25e6, 0.1, &p);
	eq = settles(&p, 4, m.cap);
	sim_run(&m, MS(3000), MS(1000));
	p99 = quantile(&m, 0.99);
	p50 = quantile(&m, 0.5);
	util = m.served / (m.cap * 2.0);
	ok(p50 >= 2e-3 && p50 < eq + 1e-3, "converges: queue p50 %.2f ms (target 2 ms, settles at %.2f)",
	   p50 * 1e3, eq * 1e3);
	ok(p99 < eq + 2e-3, "queue p99 %.2f ms < %.2f ms (unpaced: the 100 ms bound)", p99 * 1e3,
	   (eq + 2e-3) * 1e3);
	ok(util >= 0.97, "the link stays busy: %.3f of capacity", util);
	ok(jain(m.rates, 4) > 0.99, "4 equal lanes share evenly (Jain %.4f)", jain(m.rates, 4));
	/* no oscillation beyond a bound: over a further 2 s, the delay's range */
	m.nd = 0;
	sim_run(&m, MS(5000), MS(3000));
	for (int k = 0; k < m.nd; k++) {
		lo = m.delays[k] < lo ? m.delays[k] : lo;
		hi = m.delays[k] > hi ? m.delays[k] : hi;
	}
	ok(hi - lo < 1e-3 && lo > 0, "steady: the queue swings %.2f..%.2f ms (range < 1 ms, never empty)",
	   lo * 1e3, hi * 1e3);
	fqn_pace_destroy(m.pace);

	/* the same without pacing: the queue sits at its bound */
	p.target_ns = MS(100000); /* never above the target: never paced */
	sim_init(&m, 4, 25e6, 0.1, &p);
	sim_run(&m, MS(3000), MS(1000));
	ok(quantile(&m, 0.99) > 0.09, "unpaced, the same model's queue p99 is %.1f ms",
	   quantile(&m, 0.99) * 1e3);
	fqn_pace_destroy(m.pace);
}

static void test_fairness(void)
{
	struct fqn_pace_params p;
	struct sim m;
	double share;

	/* 2 lanes settle alone, then 2 more join: all 4 converge to equal */
	fqn_pace_params_default(&p);
	sim_init(&m, 4, 25e6, 0.1, &p);
	m.active[2] = m.active[3] = 0;
	sim_run(&m, MS(2000), MS(100000));
	m.active[2] = m.active[3] = 1;
	sim_run(&m, MS(8000), MS(6000));
	share = m.rates[0] / (m.rates[2] > 0 ? m.rates[2] : 1);
	ok(jain(m.rates, 4) > 0.95, "late joiners: Jain %.4f over the last 2 s (> 0.95)", jain(m.rates, 4));
	ok(share > 0.7 && share < 1.4, "an early lane / a late one: %.2f", share);
	fqn_pace_destroy(m.pace);
}

static void test_reaction(void)
{
	struct fqn_pace_params p;
	struct sim m;
	int64_t t;

	/* paced at the target, the capacity halves: how long until the queue is
	 * back under 2x the target (it first runs up by half a rate x update) */
	fqn_pace_params_default(&p);
	sim_init(&m, 4, 50e6, 0.1, &p);
	sim_run(&m, MS(3000), MS(100000));
	m.cap = 25e6;
	m.q = m.q / 2; /* the same delay in bytes of the new capacity */
	for (t = MS(3000); t < MS(6000); t += MS(10)) {
		sim_run(&m, t + MS(10), MS(100000));
		if (t > MS(3200) && m.q / m.cap < settles(&p, 4, m.cap) + 2e-3)
			break;
	}
	ok(t - MS(3000) <= MS(600), "capacity halved: the queue under 8 ms again after %lld ms (<= 600)",
	   (long long)((t - MS(3000)) / 1000000));
	fqn_pace_destroy(m.pace);

	/* unpaced lanes into a full 100 ms queue: paced and under 4 ms within 1 s */
	fqn_pace_params_default(&p);
	sim_init(&m, 4, 25e6, 0.1, &p);
	m.q = m.qmax;
	for (int i = 0; i < 4; i++)
		m.srtt[i] = 0.1;
	for (t = 0; t < MS(3000); t += MS(10)) {
		sim_run(&m, t + MS(10), MS(100000));
		if (m.q / m.cap < settles(&p, 4, m.cap) + 2e-3)
			break;
	}
	ok(t <= MS(1000), "a full 100 ms queue is under 8 ms after %lld ms (<= 1000)",
	   (long long)(t / 1000000));
	fqn_pace_destroy(m.pace);
}

static void test_healthy(void)
{
	struct fqn_pace_params p;
	struct sim m;
	int paced = 0;

	/* one lane alone on a link it cannot fill (its line rate is the
	 * link's: the queue never builds): never paced */
	fqn_pace_params_default(&p);
	sim_init(&m, 1, 25e6, 0.1, &p);
	m.line = m.cap * 0.99;
	for (int64_t t = 0; t < MS(3000); t += MS(50)) {
		sim_run(&m, t + MS(50), 0);
		paced |= fqn_pace_rate(m.pace, 0) > 0;
	}
	ok(!paced, "a healthy path is never paced");
	fqn_pace_destroy(m.pace);
}

int main(void)
{
	test_params();
	test_rules();
	test_trend();
	test_follow();
	test_bottleneck();
	test_fairness();
	test_reaction();
	test_healthy();
	return done_testing();
}
