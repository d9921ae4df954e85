/* steer: the weight controller fed with numbers and a fake clock. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "nccl-plugin/env.h"

#include "nccl-plugin/control/steer.h"
#include "tests/unit/tap.h"

#define MS(x) ((int64_t)(x)*1000000)

/* One update period: lane i's ack latency d[i] ms, its RTT rtt[i] us. */
static int feed(struct fqn_steer *s, int n, const double *d, const uint32_t *rtt, int64_t now)
{
	for (int i = 0; i < n; i++) {
		struct fqn_steer_sample smp = {0};

		if (d[i] > 0) {
			smp.p50_ns = (int64_t)(d[i] * 1e6);
			smp.p99_ns = smp.p50_ns;
			smp.samples = 10;
			smp.bytes = 10 << 15;
		}
		smp.rtt_us = rtt ? rtt[i] : 0;
		fqn_steer_observe(s, i, &smp);
	}
	return fqn_steer_update(s, now);
}

static void test_create(void)
{
	struct fqn_steer_params p;
	struct fqn_steer *s;

	fqn_steer_params_default(&p);
	is_int(fqn_steer_create(0, &p, 0, &s), -EINVAL, "0 lanes refused");
	is_int(fqn_steer_create(FQN_MAX_LANES + 1, &p, 0, &s), -EINVAL, "17 lanes refused");
	p.floor = 0.5;
	is_int(fqn_steer_create(2, &p, 0, &s), -EINVAL, "a floor that leaves nothing to steer is refused");
	fqn_steer_params_default(&p);
	is_int(fqn_steer_create(4, &p, 0, &s), 0, "4 lanes");
	ok(fabs(fqn_steer_weight(s, 0) - 0.25) < 1e-9 && fabs(fqn_steer_weight(s, 3) - 0.25) < 1e-9,
	   "equal weights at start");
	fqn_steer_destroy(s);
}

/* A plant: lane i's delay grows with the share it carries over its
 * capacity (1 ms + 20 ms x w / cap). Lane 1 loses 90 % of its capacity:
 * its weight falls below 0.2 within a few hundred ms, stays at or above the
 * floor, the weights sum to 1 all along; the capacity comes back: so does
 * the weight. */
static void plant(struct fqn_steer *s, const double *cap, int64_t *now, int steps, int *sum_ok)
{
	for (int k = 0; k < steps; k++) {
		double d[2];

		for (int i = 0; i < 2; i++)
			d[i] = 1 + 20 * fqn_steer_weight(s, i) / cap[i];
		*now += MS(FQN_STEER_UPDATE_MS);
		feed(s, 2, d, NULL, *now);
		if (fabs(fqn_steer_weight(s, 0) + fqn_steer_weight(s, 1) - 1) > 1e-9)
			*sum_ok = 0;
	}
}

static void test_shift(void)
{
	struct fqn_steer_params p;
	struct fqn_steer *s;
	double cap[2] = {1, 1};
	int64_t now = 0, t0, t_low = -1;
	int sum_ok = 1;
	double wmin = 1;

	fqn_steer_params_default(&p);
	fqn_steer_create(2, &p, 0, &s);
	plant(s, cap, &now, 20, &sum_ok);
	ok(fabs(fqn_steer_weight(s, 1) - 0.5) < 0.05, "equal lanes stay near 1/2 (%.3f)",
	   fqn_steer_weight(s, 1));
	cap[1] = 0.1;
	t0 = now;
	for (int k = 0; k < 40; k++) {
		plant(s, cap, &now, 1, &sum_ok);
		if (t_low < 0 && fqn_steer_weight(s, 1) <= 0.2)
			t_low = now - t0;
		if (fqn_steer_weight(s, 1) < wmin)
			wmin = fqn_steer_weight(s, 1);
	}
	ok(sum_ok, "weights sum to 1");
	ok(t_low > 0 && t_low <= MS(400), "congested lane below 0.2 after %lld ms (<= 400)",
	   (long long)(t_low / 1000000));
	ok(wmin >= p.floor - 1e-9, "never below the floor (%.3f)", wmin);
	ok(fqn_steer_weight(s, 1) < 0.15, "settles low (%.3f; equal delays at 0.09)", fqn_steer_weight(s, 1));
	cap[1] = 1;
	t0 = now;
	t_low = -1;
	for (int k = 0; k < 60 && t_low < 0; k++) {
		plant(s, cap, &now, 1, &sum_ok);
		if (fqn_steer_weight(s, 1) >= 0.35)
			t_low = now - t0;
	}
	ok(t_low > 0, "lane recovers once its capacity is back (0.35 after %lld ms)",
	   (long long)(t_low / 1000000));
	/* a lane at the floor with fixed, very high delay stays there, not below */
	{
		double d[2] = {1, 50};

		for (int k = 0; k < 60; k++)
			feed(s, 2, d, NULL, now += p.update_ns);
		ok(fqn_steer_weight(s, 1) >= p.floor && fqn_steer_weight(s, 1) < p.floor + 0.03,
		   "a hopeless lane sits near the floor (%.3f)", fqn_steer_weight(s, 1));
	}
	fqn_steer_destroy(s);
}

/* Equal-ish delays with noise inside the dead band: no change at all. */
static void test_hysteresis(void)
{
	struct fqn_steer_params p;
	struct fqn_steer *s;
	int changes = 0;
	int64_t now = 0, last = -1, min_gap = INT64_MAX;

	fqn_steer_params_default(&p);
	fqn_steer_create(2, &p, 0, &s);
	for (int k = 0; k < 100; k++) {
		double d[2] = {1.0 + 0.04 * (k & 1), 1.0 + 0.04 * !(k & 1)};

		now += p.update_ns;
		changes += feed(s, 2, d, NULL, now);
	}
	is_int(changes, 0, "alternating 4 %% noise moves nothing");
	/* alternating big swings: changes, but never closer than the dwell time */
	changes = 0;
	for (int k = 0; k < 100; k++) {
		double d[2] = {(k / 2) & 1 ? 1 : 5, (k / 2) & 1 ? 5 : 1};

		now += p.update_ns;
		if (feed(s, 2, d, NULL, now)) {
			changes++;
			if (last >= 0 && now - last < min_gap)
				min_gap = now - last;
			last = now;
		}
	}
	ok(changes > 0, "large swings do move weights (%d changes)", changes);
	ok(min_gap >= p.dwell_ns, "no two changes closer than the dwell time (%lld ms)",
	   (long long)(min_gap / 1000000));
	/* no traffic at all: nothing learnt, nothing changes */
	{
		double z[2] = {0, 0};
		double w0 = fqn_steer_weight(s, 0);

		now += p.update_ns * 10;
		is_int(feed(s, 2, z, NULL, now), 0, "an idle interval changes nothing");
		ok(fqn_steer_weight(s, 0) == w0, "weight kept");
	}
	/* updates closer than update_ns are ignored */
	{
		double d[2] = {1, 100};

		is_int(feed(s, 2, d, NULL, now + 1), 0, "an update before update_ns is not one");
	}
	fqn_steer_destroy(s);
}

static void test_down_up(void)
{
	struct fqn_steer_params p;
	struct fqn_steer *s;

	fqn_steer_params_default(&p);
	fqn_steer_create(3, &p, 0, &s);
	fqn_steer_set_up(s, 2, 0, MS(10));
	ok(fqn_steer_weight(s, 2) == 0 && fabs(fqn_steer_weight(s, 0) - 0.5) < 1e-9,
	   "down lane: 0, the rest share");
	fqn_steer_set_up(s, 2, 1, MS(20));
	ok(fabs(fqn_steer_weight(s, 2) - 1.0 / 3) < 1e-9 && fabs(fqn_steer_weight(s, 0) - 1.0 / 3) < 1e-9,
	   "a lane back gets an average lane's share (%.3f), not the floor", fqn_steer_weight(s, 2));
	fqn_steer_destroy(s);
}

/* Every lane's RTT far above its base for rehash_after: a move; the trial
 * keeps a better path and moves again from a worse one, max_moves bound. */
static void test_rehash(void)
{
	struct fqn_steer_params p;
	struct fqn_steer *s;
	double d[2] = {5, 5};
	uint32_t base[2] = {200, 200}, cong[2] = {40000, 26000};
	int64_t now = 0;
	int pick = -1;

	fqn_steer_params_default(&p);
	fqn_steer_create(2, &p, 0, &s);
	for (int k = 0; k < 4; k++)
		feed(s, 2, d, base, now += p.update_ns);
	is_int(fqn_steer_rehash_pick(s, 0, now), -1, "uncongested: no move");
	ok(!fqn_steer_congested(s, 0), "lane 0 not congested");
	is_int(fqn_steer_rehash_pick(s, 1, now), 0, "advice: a move even when uncongested");
	{
		uint32_t mixed[2] = {28000, 200};

		for (int k = 0; k < 20; k++)
			feed(s, 2, d, mixed, now += p.update_ns);
		ok(fqn_steer_congested(s, 0) && !fqn_steer_congested(s, 1), "one lane congested");
		is_int(fqn_steer_rehash_pick(s, 0, now), -1, "one lane free: steer weights, no move");
	}
	{
		/* hysteresis: under the entry margin but over half of it, still
		 * congested; under half, not */
		uint32_t dip[2] = {10000, 200}, low[2] = {4000, 200}, mixed[2] = {28000, 200};

		feed(s, 2, d, dip, now += p.update_ns);
		ok(fqn_steer_congested(s, 0),
		   "a congested lane's RTT dips under the entry margin: still congested");
		feed(s, 2, d, low, now += p.update_ns);
		ok(!fqn_steer_congested(s, 0), "... and under half of it: no longer");
		feed(s, 2, d, mixed, now += p.update_ns);
	}
	for (int k = 0; k < 60 && pick < 0; k++) {
		feed(s, 2, d, cong, now += p.update_ns);
		pick = fqn_steer_rehash_pick(s, 0, now);
	}
	is_int(pick, 0, "all congested: the most delayed lane moves");
	{
		/* a queue that stays full is not learnt as the base: after 10 s of
		 * it, a swing down to a third of it is still congestion */
		struct fqn_steer *q;
		uint32_t full[2] = {150000, 150000}, swing[2] = {50000, 50000};
		int64_t t = 0;

		fqn_steer_create(2, &p, 0, &q);
		for (int k = 0; k < 4; k++)
			feed(q, 2, d, base, t += p.update_ns);
		for (int k = 0; k < 200; k++)
			feed(q, 2, d, full, t += p.update_ns);
		feed(q, 2, d, swing, t += p.update_ns);
		ok(fqn_steer_congested(q, 0) && fqn_steer_congested(q, 1),
		   "10 s behind a full queue, then a swing to a third of it: still congested");
		/* the move's trial: lower than before, yet a queue, not a free path */
		for (int k = 0; k < 4; k++)
			feed(q, 2, d, full, t += p.update_ns);
		fqn_steer_trial_begin(q, 0, t);
		fqn_steer_set_up(q, 0, 0, t);
		fqn_steer_set_up(q, 0, 1, t += MS(20));
		for (int k = 0; k < 12; k++)
			feed(q, 2, d, swing, t += p.update_ns);
		is_int(fqn_steer_trial_verdict(q, t), 0,
		       "a new path at a third of the RTT before, but 250x the base: move again");
		fqn_steer_destroy(q);
	}
	{
		double w0 = fqn_steer_weight(s, 0);

		fqn_steer_trial_begin(s, 0, now);
		is_int(fqn_steer_trial_lane(s), 0, "trial on lane 0");
		is_int(fqn_steer_rehash_pick(s, 0, now + MS(600)), -1, "no second move during a trial");
		fqn_steer_set_up(s, 0, 0, now);
		fqn_steer_set_up(s, 0, 1, now += MS(20));
		ok(fabs(fqn_steer_weight(s, 0) - w0) < 1e-9, "the moved lane is back with its share (%.3f)",
		   w0);
	}
	{
		uint32_t worse[2] = {45000, 26000};

		feed(s, 2, d, worse, now += p.update_ns);
		is_int(fqn_steer_trial_verdict(s, now), -1, "not decided before the trial period");
		for (int k = 0; k < 12; k++)
			feed(s, 2, d, worse, now += p.update_ns);
		is_int(fqn_steer_trial_verdict(s, now), 0, "worse path: move again");
	}
	fqn_steer_trial_begin(s, 0, now);
	fqn_steer_set_up(s, 0, 0, now);
	fqn_steer_set_up(s, 0, 1, now += MS(20));
	{
		uint32_t better[2] = {300, 26000};

		for (int k = 0; k < 12; k++)
			feed(s, 2, d, better, now += p.update_ns);
		is_int(fqn_steer_trial_verdict(s, now), 1, "better path: kept");
		is_int(fqn_steer_trial_lane(s), -1, "trial over");
		is_int(fqn_steer_rehash_pick(s, 1, now + MS(100)), -1, "cooldown: no move right after");
		ok(fqn_steer_rehash_pick(s, 1, now + p.cooldown_ns + 1) >= 0,
		   "after the cooldown, advice moves again");
	}
	fqn_steer_destroy(s);
}

static void test_max_moves(void)
{
	struct fqn_steer_params p;
	struct fqn_steer *s;
	double d[2] = {5, 5};
	uint32_t worse[2] = {30000, 30000};
	int64_t now = 0;
	int v = -1;

	fqn_steer_params_default(&p);
	fqn_steer_create(2, &p, 0, &s);
	feed(s, 2, d, worse, now += p.update_ns);
	for (int m = 0; m < p.max_moves; m++) {
		fqn_steer_trial_begin(s, 1, now);
		fqn_steer_set_up(s, 1, 0, now);
		fqn_steer_set_up(s, 1, 1, now);
		for (int k = 0; k < 12; k++)
			feed(s, 2, d, worse, now += p.update_ns);
		v = fqn_steer_trial_verdict(s, now);
	}
	is_int(v, 1, "after max_moves the last path is kept");
	fqn_steer_destroy(s);
}

/* A job that saturates a bottleneck all its paths share: every lane
 * congested for good, every new path as congested. Episodes that find
 * nothing better come at doubling intervals; advice is held only by the
 * plain cooldown; a better path found resets the wait. Returns the time
 * of the first move at or after `from`, driving episodes as the plugin
 * does (a move's trial runs 500 ms). */
static int64_t next_move(struct fqn_steer *s, const struct fqn_steer_params *p, int64_t from, int64_t limit,
			 const uint32_t *trial_rtt, int *verdict)
{
	double d[2] = {5, 5};
	uint32_t full[2] = {30000, 30000};
	int64_t now = from, first = -1;
	int lane;

	while (now < limit) {
		feed(s, 2, d, full, now += p->update_ns);
		lane = fqn_steer_rehash_pick(s, 0, now);
		if (lane < 0)
			continue;
		first = now;
		do { /* one episode: up to max_moves trials */
			fqn_steer_trial_begin(s, lane, now);
			fqn_steer_set_up(s, lane, 0, now);
			fqn_steer_set_up(s, lane, 1, now);
			/* a new connection's first RTT: the queue it fills is not built yet */
			feed(s, 2, d, (uint32_t[2]){lane ? full[0] : 200, lane ? 200 : full[1]},
			     now += p->update_ns);
			for (int k = 0; k < 12; k++)
				feed(s, 2, d, trial_rtt, now += p->update_ns);
			*verdict = fqn_steer_trial_verdict(s, now);
		} while (*verdict == 0);
		break;
	}
	return first;
}

/* A moved lane steering had shed comes back with that small share, not
 * an average lane's (which would put half the traffic back on a path that
 * may be as congested, for the whole trial); a failed lane back after a
 * failure gets an average share. */
static void test_trial_share(void)
{
	struct fqn_steer_params p;
	struct fqn_steer *s;
	double slow[2] = {40, 5};
	uint32_t rtt[2] = {30000, 30000};
	int64_t now = 0;
	double w0;

	fqn_steer_params_default(&p);
	fqn_steer_create(2, &p, 0, &s);
	for (int k = 0; k < 40; k++)
		feed(s, 2, slow, rtt, now += p.update_ns);
	w0 = fqn_steer_weight(s, 0);
	fqn_steer_trial_begin(s, 0, now);
	fqn_steer_set_up(s, 0, 0, now);
	fqn_steer_set_up(s, 0, 1, now += MS(20));
	ok(w0 < 0.3 && fabs(fqn_steer_weight(s, 0) - w0) < 0.03, /* the floor's rounding */
	   "a shed lane moved: back with its share %.3f (%.3f before), not 0.5", fqn_steer_weight(s, 0), w0);
	for (int k = 0; k < 12; k++)
		feed(s, 2, slow, rtt, now += p.update_ns);
	fqn_steer_trial_verdict(s, now);
	fqn_steer_set_up(s, 1, 0, now);
	fqn_steer_set_up(s, 1, 1, now += MS(20));
	ok(fabs(fqn_steer_weight(s, 1) - 0.5) < 1e-9, "a failed lane back: an average share (%.3f)",
	   fqn_steer_weight(s, 1));
	fqn_steer_destroy(s);
}

static void test_backoff(void)
{
	struct fqn_steer_params p;
	struct fqn_steer *s;
	double d[2] = {5, 5};
	uint32_t base[2] = {200, 200}, full[2] = {30000, 30000}, free_[2] = {300, 30000};
	int64_t t[5], now = 0;
	int v = -1, ok_gaps = 1;

	fqn_steer_params_default(&p);
	fqn_steer_create(2, &p, 0, &s);
	for (int k = 0; k < 4; k++)
		feed(s, 2, d, base, now += p.update_ns);
	t[0] = next_move(s, &p, now, MS(600000), full, &v);
	for (int e = 1; e < 5; e++) {
		t[e] = next_move(s, &p, t[e - 1] + MS(2000), MS(900000), full, &v);
		/* episode e-1 ended ~1.5 s after it began; the next may start
		 * 10 s x 2^e after that */
		if (t[e] < 0 || t[e] - t[e - 1] < (p.cooldown_ns << e) ||
		    t[e] - t[e - 1] > (p.cooldown_ns << e) + MS(3000))
			ok_gaps = 0;
		diag("episode %d began %.1f s after the one before", e, (t[e] - t[e - 1]) / 1e9);
	}
	ok(t[0] >= 0 && ok_gaps,
	   "no better path found: episodes 20, 40, 80, 160 s apart (+ their own length)");
	ok(fqn_steer_rehash_pick(s, 1, t[4] + MS(2000) + p.cooldown_ns) >= 0,
	   "advice still moves after the plain cooldown");
	fqn_steer_destroy(s);

	fqn_steer_create(2, &p, 0, &s);
	now = 0;
	for (int k = 0; k < 4; k++)
		feed(s, 2, d, base, now += p.update_ns);
	t[0] = next_move(s, &p, now, MS(600000), full, &v);
	t[1] = next_move(s, &p, t[0] + MS(2000), MS(900000), free_, &v); /* finds a free path */
	t[2] = next_move(s, &p, t[1] + MS(600), MS(900000), full, &v);
	ok(t[1] >= 0 && t[2] >= 0 && t[2] - t[1] < p.cooldown_ns + MS(3000),
	   "a better path found: the next episode after the plain cooldown again (%.1f s)",
	   (t[2] - t[1]) / 1e9);
	fqn_steer_destroy(s);
}

/* FABRICIQ_STEER: on in control mode by default, off in monitor mode. */
static const char *env_mode, *env_steer, *env_job;
static const char *lookup(const char *name)
{
	if (!strcmp(name, "FABRICIQ_MODE"))
		return env_mode;
	if (!strcmp(name, "FABRICIQ_STEER"))
		return env_steer;
	if (!strcmp(name, "FABRICIQ_JOB_ID"))
		return env_job;
	return NULL;
}

static int load(const char *mode, const char *steer, const char *job, struct fqn_config *cfg, char *err)
{
	env_mode = mode;
	env_steer = steer;
	env_job = job;
	return fqn_config_load(cfg, lookup, err, 256);
}

static void test_env(void)
{
	struct fqn_config cfg;
	char err[256];

	ok(load(NULL, NULL, NULL, &cfg, err) == 0 && !cfg.steer, "monitor mode: steering off by default");
	ok(load("control", NULL, NULL, &cfg, err) == 0 && cfg.steer, "control mode: steering on by default");
	ok(load("control", "off", NULL, &cfg, err) == 0 && !cfg.steer, "control mode, FABRICIQ_STEER=off");
	ok(load("control", "on", "4242", &cfg, err) == 0 && cfg.steer && !strcmp(cfg.job_id, "4242"),
	   "control mode, FABRICIQ_STEER=on, job id taken");
	is_int(load("monitor", "on", NULL, &cfg, err), -EINVAL, "FABRICIQ_STEER=on in monitor mode refused");
	like(err, "needs FABRICIQ_MODE=control", "... and says why");
	is_int(load("control", "yes", NULL, &cfg, err), -EINVAL, "FABRICIQ_STEER=yes refused");
	like(err, "must be on or off", "... and says what is allowed");
	is_int(load("control", NULL, "12x", &cfg, err), -EINVAL, "FABRICIQ_JOB_ID=12x refused");
}

int main(void)
{
	test_env();
	test_create();
	test_shift();
	test_hysteresis();
	test_down_up();
	test_rehash();
	test_max_moves();
	test_trial_share();
	test_backoff();
	return done_testing();
}
