/*
 * test-rules: each pure rule of controller/rules.h on recorded numbers,
 * positive and just under its threshold, and on hostile input.
 */
#include <float.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/rules.h"
#include "tests/unit/tap.h"

#define US(x) ((int64_t)((x)*1000.0 + 0.5))
#define S(x)  ((int64_t)((x)*1e9 + 0.5))

/* The DOWN times (ns) of the NIC-level "down" lines of a fixture. */
static size_t fixture_downs(const char *name, int64_t *out, size_t max)
{
	const char *top = getenv("top_srcdir");
	char path[512], line[512], node[64], nic[64], rn[64], rnic[64], state[16];
	double t;
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/tests/controller/data/%s", top ? top : "..", name);
	f = fopen(path, "r");
	if (!f) {
		printf("Bail out! cannot open %s\n", path);
		exit(1);
	}
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "link %63s %63s %63s %63s %15s %lf", node, nic, rn, rnic, state, &t) == 6 &&
		    strcmp(state, "down") == 0 && n < max)
			out[n++] = S(t);
	fclose(f);
	return n;
}

/* The p99s (ns) of the lanes of one job's first interval in a fixture. */
static size_t fixture_lane_p99(const char *name, unsigned long job, double start_s, int64_t *out, size_t max)
{
	const char *top = getenv("top_srcdir");
	char path[512], line[512];
	unsigned long j, step, sr, dr, lane;
	double st, en, p50, p99;
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/tests/controller/data/%s", top ? top : "..", name);
	f = fopen(path, "r");
	if (!f) {
		printf("Bail out! cannot open %s\n", path);
		exit(1);
	}
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "lane %lu %lu %lu %lu %lu %*s %*s %*s %*s %lf %lf %lf %lf", &j, &step, &sr,
			   &dr, &lane, &st, &en, &p50, &p99) == 9 &&
		    j == job && st == start_s && n < max)
			out[n++] = US(p99);
	fclose(f);
	return n;
}

static void test_flapping(const struct fq_detector_config *c)
{
	int64_t downs[32];
	size_t n = fixture_downs("flaps-rail1.txt", downs, 32);
	unsigned count = 0;

	is_int(n, 9, "fixture: 9 DOWNs of rail1");
	ok(fq_rule_flapping(c, downs, n, downs[n - 1], &count), "9 DOWNs in 40 min: flapping");
	is_int(count, 9, "counted 9");
	ok(!fq_rule_flapping(c, downs, n - 1, downs[n - 2], &count), "8 DOWNs (the threshold): not flapping");
	is_int(count, 8, "counted 8");
	/* The same 9 DOWNs spread over 2 h: never more than 8 in one hour. */
	for (size_t i = 0; i < n; i++)
		downs[i] = downs[0] + (int64_t)i * S(900);
	ok(!fq_rule_flapping(c, downs, n, downs[n - 1], &count), "9 DOWNs over 2 h: not flapping (%u in 1h)",
	   count);
	is_int(fq_rule_flap_count(downs, n, downs[n - 1], S(3600)), 4, "4 of them in the last hour");
	ok(fq_rule_flap_count(downs, n, downs[0] - 1, S(3600)) == 0, "none counted before they happened");
	ok(!fq_rule_flapping(c, NULL, 0, S(1), &count) && count == 0, "no DOWNs: not flapping");
}

static void test_nic_down(const struct fq_detector_config *c)
{
	ok(fq_rule_nic_down(c, 4, 4), "all 4 paths down: NIC down");
	ok(!fq_rule_nic_down(c, 4, 3), "3 of 4 paths down: not NIC down");
	ok(!fq_rule_nic_down(c, 1, 1), "the only path down: cannot tell (min 2 paths)");
	ok(!fq_rule_nic_down(c, 0, 0), "no paths known: not down");
}

static void test_path_delay(const struct fq_detector_config *c)
{
	int64_t b = 0;

	/* Baseline from quiet 30 us windows of tests/controller/data/path-delay.txt. */
	static const double quiet[] = {30.2, 29.7, 30.9, 29.4, 30.1, 30.4, 29.8, 30.0, 29.9, 30.1};
	for (size_t i = 0; i < sizeof(quiet) / sizeof(quiet[0]); i++)
		b = fq_rule_baseline_update(b, US(quiet[i]));
	ok(b > US(29.5) && b < US(30.5), "baseline of quiet windows near 30 us (%.2f us)", b / 1000.0);
	is_int(fq_rule_path_delay(c, US(400.2), US(30)), FQ_RULE_DELAY_BASELINE,
	       "400 us vs 30 us baseline fires");
	is_int(fq_rule_path_delay(c, US(400), US(100)), FQ_RULE_DELAY_OK, "400 us = 4 x 100 us: just not");
	is_int(fq_rule_path_delay(c, US(400.1), US(100)), FQ_RULE_DELAY_BASELINE,
	       "400.1 us > 4 x 100 us (300.1 us over it) fires");
	is_int(fq_rule_path_delay(c, US(70.2), US(14.1)), FQ_RULE_DELAY_OK,
	       "70 us vs 14 us (x5), 56 us over it: a busy healthy fabric (test-healthy), not flagged");
	is_int(fq_rule_path_delay(c, US(115.8), US(14.4)), FQ_RULE_DELAY_OK,
	       "115.8 us vs 14.4 us (x8), 101 us over it: a busy healthy fabric (test-healthy), not flagged");
	is_int(fq_rule_path_delay(c, US(330), US(30)), FQ_RULE_DELAY_OK,
	       "330 us > 4 x 30 us but only 300 us over it: not");
	is_int(fq_rule_path_delay(c, US(330.1), US(30)), FQ_RULE_DELAY_BASELINE,
	       "330.1 us: over 4 x and over 300 us above the baseline: fires");
	is_int(fq_rule_path_delay(c, US(48), US(10)), FQ_RULE_DELAY_OK,
	       "48 us > 4 x 10 us but under the floor");
	is_int(fq_rule_path_delay(c, US(50), US(10)), FQ_RULE_DELAY_OK, "50 us: at the floor, not flagged");
	is_int(fq_rule_path_delay(c, US(1000), 0), FQ_RULE_DELAY_OK,
	       "1 ms, no baseline: at the threshold, not");
	is_int(fq_rule_path_delay(c, US(1000.1), 0), FQ_RULE_DELAY_ABSOLUTE,
	       "above 1 ms, no baseline: threshold");
	is_int(fq_rule_path_delay(c, US(1500), US(1000)), FQ_RULE_DELAY_ABSOLUTE,
	       "above 1 ms on a slow path");
	is_int(fq_rule_path_delay(c, 0, US(30)), FQ_RULE_DELAY_OK, "no sample: OK");
	is_int(fq_rule_path_delay(c, -5, US(30)), FQ_RULE_DELAY_OK, "negative: OK");
	/* A noisy quiet window moves the baseline by at most 1/8 of 2x. */
	b = fq_rule_baseline_update(US(30), US(119));
	ok(b <= US(30) + US(30) / 8 + 1, "one 119 us quiet window: baseline %.2f us (clamped)", b / 1000.0);
	is_int(fq_rule_baseline_update(US(30), 0), US(30), "no sample leaves the baseline");
	ok(fq_rule_baseline_update(INT64_MAX, INT64_MAX) > 0, "huge baseline and sample do not overflow");
	is_int(fq_rule_baseline_update(1000, INT64_MAX), 1125, "huge sample clamped to 2 x baseline");
}

static void test_lane_outlier(const struct fq_detector_config *c)
{
	int64_t p99[16], median = 0, v[8];
	bool out[16];
	size_t n = fixture_lane_p99("lane-outlier.txt", 42, 100, p99, 16), idx = 99;

	is_int(n, 8, "fixture: 8 lanes of job 42 in the first interval");
	is_int(fq_rule_lane_outliers(c, p99, n, out, &median), 1, "one outlier among 8 lanes");
	is_int(median, US(4.2), "step median 4.2 us");
	for (size_t i = 0; i < n; i++)
		if (out[i])
			idx = i;
	is_int(p99[idx], US(94.1), "the outlier is the 94.1 us lane");
	/* Factor boundary above the floor: 7 lanes at 20 us, one at exactly 5 x. */
	for (size_t i = 0; i < 8; i++)
		v[i] = US(20);
	v[5] = US(100);
	is_int(fq_rule_lane_outliers(c, v, 8, out, NULL), 0, "100 us = 5 x 20 us median: just not");
	v[5] = US(100.1);
	is_int(fq_rule_lane_outliers(c, v, 8, out, NULL), 1, "100.1 us fires");
	ok(out[5] && !out[4], "and exactly that lane");
	/* Floor: 49 us is > 5 x 4 us but under the 50 us floor. */
	for (size_t i = 0; i < 8; i++)
		v[i] = US(4);
	v[2] = US(49);
	is_int(fq_rule_lane_outliers(c, v, 8, out, NULL), 0, "49 us vs 4 us: under the floor");
	v[0] = US(94), v[1] = US(4);
	is_int(fq_rule_lane_outliers(c, v, 2, out, NULL), 0, "two lanes: no median to speak of");
	v[0] = 0, v[1] = -1, v[2] = US(94), v[3] = 0;
	is_int(fq_rule_lane_outliers(c, v, 4, out, &median), 0, "lanes without samples are not counted");
	is_int(fq_rule_lane_outliers(c, NULL, 5, NULL, NULL), 0, "NULL lanes");
	is_int(fq_rule_median(NULL, 0), 0, "median of nothing");
	v[0] = INT64_MAX, v[1] = INT64_MAX - 1;
	ok(fq_rule_median(v, 2) > 0, "median of huge values does not overflow");
}

static void test_inband(const struct fq_detector_config *c)
{
	ok(fq_rule_inband_mismatch(c, US(410), US(21)), "lane p50 410 us vs probe p50 21 us: mismatch");
	ok(!fq_rule_inband_mismatch(c, US(400), US(80)), "400 us = 5 x 80 us: just not");
	ok(fq_rule_inband_mismatch(c, US(400.1), US(80)), "400.1 us: mismatch");
	ok(!fq_rule_inband_mismatch(c, US(300), US(20)),
	   "15x but 280 us above: under the floor (a busy healthy lane, "
	   "test-slow-receiver)");
	ok(!fq_rule_inband_mismatch(c, US(40), US(5)), "8x but only 35 us above: under the floor");
	ok(!fq_rule_inband_mismatch(c, US(310), 0), "no probe sample");
	ok(!fq_rule_inband_mismatch(c, 0, US(21)), "no lane sample");
	ok(!fq_rule_inband_mismatch(c, INT64_MAX, INT64_MIN), "hostile values");
}

static void test_slow_nic(const struct fq_detector_config *dflt)
{
	struct fq_detector_config share = *dflt, *c = &share;

	ok(!fq_rule_slow_nic(dflt, 5, 4) && fq_rule_slow_nic(dflt, 5, 5),
	   "by default every path elevated: 4 of 5 not slow, 5 of 5 slow");
	share.slow_nic_share = 0.8;
	ok(fq_rule_slow_nic(c, 5, 4), "4 of 5 paths elevated: slow (0.8)");
	ok(!fq_rule_slow_nic(c, 5, 3), "3 of 5: not");
	ok(fq_rule_slow_nic(c, 3, 3), "3 of 3: slow");
	ok(!fq_rule_slow_nic(c, 2, 2), "2 of 2: too few paths (min 3)");
	ok(!fq_rule_slow_nic(c, 10, 7), "7 of 10: not");
	ok(fq_rule_slow_nic(c, 10, 8), "8 of 10: slow");
	ok(!fq_rule_slow_nic(c, 3, 9), "more elevated than paths: refused");
	ok(fq_rule_slow_nics_few(1, 8), "1 slow NIC of 8 judged: blamed");
	ok(fq_rule_slow_nics_few(4, 8), "4 of 8: half, blamed");
	ok(!fq_rule_slow_nics_few(5, 8), "5 of 8: most NICs, the fabric's queue, not theirs");
	ok(fq_rule_slow_nics_few(1, 2), "1 of 2: blamed");
	ok(fq_rule_slow_nics_few(1, 1), "the only NIC judged: blamed (one slow NIC is one)");
	ok(!fq_rule_slow_nics_few(2, 3), "2 of 3: most");
	ok(fq_rule_slow_nics_few(0, 0), "none slow: nothing to refuse");
}

/* Two jobs' lanes in one window through a TBF-shaped spine: probe owd of
 * the NIC pairs ~20 us; job 4242's lanes through the shared n2/rail1 at
 * 94-400 us, job 4243's at 120-180 us, quiet lanes at 4-30 us. */
static void test_collision(const struct fq_detector_config *c)
{
	struct fq_rule_clane l[] = {
	    {4242, "n1/rail1", "n2/rail1", US(94), US(20), NULL, 0},  /* outlier */
	    {4242, "n3/rail1", "n2/rail1", US(400), US(22), NULL, 0}, /* outlier */
	    {4242, "n1/rail0", "n2/rail0", US(4), US(18), NULL, 0},   /* quiet */
	    {4243, "n4/rail1", "n2/rail1", US(120), US(21), NULL, 0}, /* outlier */
	    {4243, "n4/rail0", "n3/rail0", US(30), US(19), NULL, 0},  /* quiet */
	};
	struct fq_rule_collision r;
	bool out[8];

	ok(fq_rule_collision(c, l, 5, out, &r), "two jobs' outlier lanes share n2/rail1: collision");
	ok(out[0] && out[1] && !out[2] && out[3] && !out[4],
	   "outliers: the lanes above 3x their probe delay");
	is_str(r.place, "n2/rail1", "the shared NIC");
	is_int((long long)r.move_job, 4243, "move the job with fewer affected lanes (1 vs 2)");
	is_int((long long)r.other_job, 4242, "the other job");
	ok(r.move_lanes == 1 && r.other_lanes == 2 && r.jobs == 2, "lane counts 1 and 2, 2 jobs");

	fq_rule_collision_keep(l, 5, out, 4242, &r);
	ok(r.move_job == 4242 && r.move_lanes == 2 && r.other_job == 4243 && r.other_lanes == 1,
	   "4242 advised before and still there: it stays the one to move, 4243 the other");
	fq_rule_collision(c, l, 5, out, &r);
	fq_rule_collision_keep(l, 5, out, 777, &r);
	ok(r.move_job == 4243 && r.other_job == 4242,
	   "a job advised before but not there: the rule's choice");
	l[3].job_id = 4242;
	ok(!fq_rule_collision(c, l, 5, out, &r),
	   "one job alone on the NIC: no collision (that is lane_outlier's)");
	l[3].job_id = 4243;
	l[3].owd_p99_ns = US(60); /* 2.9x its probe: under the factor */
	ok(!fq_rule_collision(c, l, 5, NULL, &r), "the other job's lane just under 3x: no collision");
	l[3].owd_p99_ns = US(120);
	l[3].dst_nic = "n5/rail1"; /* a path that shares no NIC with the others */
	ok(!fq_rule_collision(c, l, 5, NULL, &r), "outliers on disjoint NICs: no collision");
	l[3].src_nic = "n3/rail1"; /* shares n3/rail1 as the source of 4242's second lane */
	ok(fq_rule_collision(c, l, 5, NULL, &r) && !strcmp(r.place, "n3/rail1"),
	   "a shared source NIC counts too (%s)", r.place);

	struct fq_rule_clane tie[] = {
	    {7, "a/r1", "b/r1", US(300), US(20), NULL, 0},
	    {9, "c/r1", "b/r1", US(300), US(20), NULL, 0},
	    {8, "d/r1", "b/r1", US(300), US(20), NULL, 0},
	};
	ok(fq_rule_collision(c, tie, 3, NULL, &r) && r.move_job == 9 && r.other_job == 7 && r.jobs == 3,
	   "equal lane counts: move the highest job id (9), other the lowest (7)");

	struct fq_rule_clane bad[] = {
	    {1, NULL, "b/r1", US(300), US(20), NULL, 0}, {2, "c/r1", "", US(300), US(20), NULL, 0},
	    {3, "d/r1", "b/r1", US(300), 0, NULL, 0},    {4, "e/r1", "b/r1", 0, US(20), NULL, 0},
	    {5, "f/r1", "b/r1", US(40), US(1), NULL, 0}, /* 40x, but under the 50 us floor */
	};
	ok(!fq_rule_collision(c, bad, 5, out, &r) && !out[0] && !out[1] && !out[2] && !out[3] && !out[4],
	   "missing NIC, no probe delay, no sample, under the floor: never outliers");
	ok(!fq_rule_collision(c, NULL, 0, NULL, NULL), "no lanes");
}

/* Lanes that share no NIC but were hashed onto one spine: their own routes
 * cross the same switch link the same way. */
static void test_collision_link(const struct fq_detector_config *c)
{
	const char *a1[] = {"leaf1>spine2", "spine2>leaf2"}, *a2[] = {"leaf1>spine1", "spine1>leaf2"};
	const char *b1[] = {"leaf1>spine2", "spine2>leaf3"}, *b2[] = {"leaf1>spine2", "spine2>leaf3"};
	const char *back[] = {"leaf2>spine2", "spine2>leaf1"};
	struct fq_rule_clane l[] = {
	    {11, "n1/rail0", "n3/rail0", US(400), US(20), a1, 2},   /* outlier, via spine2 */
	    {11, "n1/rail0", "n3/rail0", US(300), US(20), a2, 2},   /* outlier, via spine1 */
	    {12, "n2/rail1", "n5/rail1", US(500), US(20), b1, 2},   /* outlier, via spine2 */
	    {12, "n2/rail1", "n5/rail1", US(450), US(20), b2, 2},   /* outlier, via spine2 */
	    {13, "n4/rail0", "n2/rail0", US(900), US(20), back, 2}, /* the way back over spine2 */
	};
	struct fq_rule_collision r;
	bool out[5], hit;

	ok(fq_rule_collision(c, l, 5, out, &r), "two jobs' lanes hashed onto leaf1>spine2: collision");
	is_str(r.place, "leaf1>spine2", "the shared link, the way the lanes cross it");
	ok(r.move_job == 11 && r.move_lanes == 1 && r.other_job == 12 && r.other_lanes == 2 && r.jobs == 2,
	   "job 11 (1 lane there) moves, job 12 (2 lanes) stays; job 13 crosses spine2 the other way");
	ok(fq_rule_clane_at(&l[0], "leaf1>spine2") && !fq_rule_clane_at(&l[1], "leaf1>spine2") &&
	       fq_rule_clane_at(&l[1], "n1/rail0") && !fq_rule_clane_at(&l[4], "leaf1>spine2"),
	   "a lane is at its NICs and its links, not at a link's reverse");
	l[0].nlinks = 0; /* its route not traced yet */
	ok(!fq_rule_collision(c, l, 5, out, &r),
	   "without its traced route job 11's lane meets job 12's nowhere");
	l[0].nlinks = 2;
	l[2].dst_nic = l[3].dst_nic = "n3/rail0"; /* job 12 now ends on job 11's NIC too */
	hit = fq_rule_collision(c, l, 5, out, &r);
	ok(hit && !strcmp(r.place, "n3/rail0") && r.move_job == 12 && r.move_lanes == 2 && r.other_lanes == 2,
	   "a NIC with more outlier lanes (4) than the link (3) wins (%s), equal counts: the higher job "
	   "moves",
	   r.place);

	struct fq_rule_clane self[] = {
	    {21, "n9/r0", "n9/r0", US(400), US(20), NULL, 0}, /* both ends one NIC */
	    {22, "n9/r0", "n8/r0", US(400), US(20), NULL, 0},
	};
	hit = fq_rule_collision(c, self, 2, NULL, &r);
	ok(hit && !strcmp(r.place, "n9/r0") && r.move_lanes == 1 && r.other_lanes == 1 && r.move_job == 22,
	   "a lane whose both ends are one NIC is there once (%zu and %zu lanes)", r.move_lanes,
	   r.other_lanes);

	/* 500 lanes on 500 NIC pairs, all over one link: counted exactly */
	enum {
		MANY = 500
	};
	struct fq_rule_clane *many = calloc(MANY, sizeof(*many));
	char(*names)[2][16] = calloc(MANY, sizeof(*names));
	const char *via[] = {"leaf3>spine4"};

	for (int i = 0; many && names && i < MANY; i++) {
		snprintf(names[i][0], sizeof(names[i][0]), "h%d/r0", i);
		snprintf(names[i][1], sizeof(names[i][1]), "g%d/r0", i);
		many[i] = (struct fq_rule_clane){
		    i % 5 < 3 ? 1 : 2, names[i][0], names[i][1], US(400), US(20), via, 1};
	}
	hit = many && names && fq_rule_collision(c, many, MANY, NULL, &r);
	ok(hit && !strcmp(r.place, "leaf3>spine4") && r.move_job == 2 && r.move_lanes == 200 &&
	       r.other_job == 1 && r.other_lanes == 300 && r.jobs == 2,
	   "500 lanes over one link: job 2 (200 lanes) moves, job 1 (300) stays");
	free(many);
	free(names);
}

static void test_text(void)
{
	char buf[128];

	is_str(fq_rule_drain_reason("rail1", "flapped", 9, S(3600), buf, sizeof(buf)),
	       "fabriciq: rail1 flapped 9 in 1h", "drain reason text");
	is_str(fq_rule_format_duration(S(2400), buf, sizeof(buf)), "40m", "40 min");
	is_str(fq_rule_format_duration(S(90), buf, sizeof(buf)), "90s", "90 s");
	is_str(fq_rule_format_duration(250000000, buf, sizeof(buf)), "250ms", "250 ms");
	is_str(fq_rule_format_duration(-1, buf, sizeof(buf)), "0s", "negative duration");
	is_str(fq_rule_drain_reason(NULL, "", 0, 0, buf, sizeof(buf)), "fabriciq: ? ? 0 in 0s", "NULL parts");
	ok(fq_rule_drain_reason("rail1", "flapped", 9, S(3600), buf, 8) && strlen(buf) == 7, "truncated");
	ok(fq_rule_is_own_reason("fabriciq: rail1 flapped 9 in 1h"), "own reason");
	ok(!fq_rule_is_own_reason("maintenance: fabriciq later"), "someone else's reason");
	ok(!fq_rule_is_own_reason(NULL) && !fq_rule_is_own_reason(""), "NULL/empty reason");
	is_int(fq_rule_sat_sub(INT64_MIN, 1), INT64_MIN, "saturating subtract, low");
	is_int(fq_rule_sat_sub(INT64_MAX, -1), INT64_MAX, "saturating subtract, high");
}

int main(void)
{
	struct fq_detector_config c;

	fq_detector_config_defaults(&c);
	test_flapping(&c);
	test_nic_down(&c);
	test_path_delay(&c);
	test_lane_outlier(&c);
	test_inband(&c);
	test_slow_nic(&c);
	test_collision(&c);
	test_collision_link(&c);
	test_text();
	return done_testing();
}
