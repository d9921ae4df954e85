/*
 * test-detector-lanes: the stateful detector (controller/detector.h) on job
 * steps' lanes (detector_lane.c): lane outliers, inband mismatch,
 * collisions and their advice, rdma_config, replaying
 * recorded telemetry (the text files in tests/controller/data/) or on
 * inputs fed one by one: every rule opens, extends and closes one anomaly,
 * attaches it to exactly the job steps and ranks whose lanes crossed the
 * place, and gives drain/resume hints once.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/controller/det-fixture.h"
#include "tests/unit/tap.h"

static void test_lane_outlier(void)
{
	struct fq_detector *d = make();
	const struct rec *o;

	reset();
	replay(d, "lane-outlier.txt", 1e9);
	is_int(count(FQ_DET_OPEN, NULL), 1, "lane fixture: one anomaly opened (3 intervals extend it)");
	o = find_open("lane_outlier", "n4", "rail1");
	ok(o != NULL, "lane_outlier on n4/rail1");
	if (!o)
		o = &recs[0];
	is_str(o->rnode, "n1", "remote n1");
	is_str(o->rnic, "rail1", "remote rail1");
	like(o->summary, "lane 1 of job 42.0 rank 3->0: p99 94.1 us vs step median 4.2 us", "summary");
	is_int(o->severity, 0, "info: no probe on its path saw a rise");
	like(o->summary, "its path's probes saw no rise", "... and the summary says so");
	like(o->evidence, "\"owd_p99_ns\":94100", "evidence: the p99");
	like(o->evidence, "\"step_median_p99_ns\":4200", "evidence: the median");
	is_int(attached(o->handle, 42, 0), (1 << 3) | (1 << 0), "attached to job 42.0 ranks 3 and 0 only");
	ok(!attached_job(43), "not to job 43 (same nodes, rail2)");
	is_int(count(FQ_DET_ATTACH, NULL), 1, "one attachment in all");
	is_int(count(FQ_DET_CLOSE, NULL), 0, "still open");
	fq_detector_tick(d, S(133));
	collect(d);
	is_int(count(FQ_DET_CLOSE, NULL), 0, "open 30 s after the last evidence (103 s)");
	fq_detector_tick(d, S(133.5));
	collect(d);
	ok(find_kind(FQ_DET_CLOSE, o->handle) && find_kind(FQ_DET_CLOSE, o->handle)->end == S(103),
	   "closed after 30 s quiet, ending at the last evidence");
	fq_detector_destroy(d);

	/* Just under the factor (above the floor): 7 lanes at 20 us, one at 100 us. */
	d = make();
	reset();
	for (uint32_t r = 0; r < 4; r++)
		for (uint32_t l = 0; l < 2; l++)
			lane(d, 44, r, (r + 1) % 4, l, r % 2 ? "n2" : "n1", l ? "rail1" : "rail0",
			     r % 2 ? "n1" : "n2", l ? "rail1" : "rail0", 10, 15,
			     r == 3 && l == 1 ? 100.0 : 20.0);
	fq_detector_tick(d, S(11));
	collect(d);
	is_int(count(FQ_DET_OPEN, NULL), 0, "100 us = 5 x the 20 us median: no outlier");
	probe(d, "n2", "rail1", "n1", "rail1", 10.5, 500, 2000); /* the fabric agrees: 2 ms p99 */
	lane(d, 44, 3, 0, 1, "n2", "rail1", "n1", "rail1", 11, 15, 100.1);
	for (uint32_t r = 0; r < 4; r++)
		lane(d, 44, r, (r + 1) % 4, 0, r % 2 ? "n2" : "n1", "rail0", r % 2 ? "n1" : "n2", "rail0", 11,
		     15, 20);
	fq_detector_tick(d, S(12));
	collect(d);
	is_int(count(FQ_DET_OPEN, "lane_outlier"), 1, "100.1 us: outlier");
	o = find_open("lane_outlier", "n2", "rail1");
	ok(o && o->severity == 1, "a warning: its path's probes are elevated too");
	fq_detector_destroy(d);

	/* With the default persistence (3 intervals in a row): one slow
	 * interval, or two with a normal one between, is a hiccup (seen on a
	 * healthy fabric: one 100 ms interval of a lane at 27.8 ms p99 against
	 * a step median of 3.2 ms); three in a row are an outlier. */
	{
		struct fq_detector_config c;
		const double slow[] = {200, 20, 200, 200, 20, 200, 200, 200};
		int opened_at = 0;

		fq_detector_config_defaults(&c);
		d = fq_detector_create(&c);
		reset();
		for (int t = 0; t < 8; t++) {
			for (uint32_t r = 0; r < 4; r++)
				lane(d, 45, r, (r + 1) % 4, 0, r % 2 ? "n2" : "n1", "rail0",
				     r % 2 ? "n1" : "n2", "rail0", 10 + t, 15, r == 3 ? slow[t] : 20.0);
			fq_detector_tick(d, S(10.5 + t));
			collect(d);
			if (!opened_at && count(FQ_DET_OPEN, "lane_outlier"))
				opened_at = t + 1;
		}
		is_int(opened_at, 8, "lane_outlier opens with the third slow interval in a row, not before");
		fq_detector_destroy(d);
	}
}

static void test_inband(void)
{
	struct fq_detector *d = make();
	const struct rec *o;

	reset();
	for (int t = 1; t <= 5; t++)
		probe(d, "n1", "rail0", "n2", "rail0", t, 21, 30);
	lane(d, 50, 0, 1, 0, "n1", "rail0", "n2", "rail0", 5, 105, 140); /* 5 x 21 us: just not */
	lane(d, 51, 0, 1, 0, "n1", "rail1", "n2", "rail1", 5, 310, 400); /* no probes on rail1 */
	collect(d);
	is_int(count(FQ_DET_OPEN, NULL), 0, "lane p50 105 us vs probe 21 us: no mismatch; no probe: none");
	lane(d, 50, 0, 1, 0, "n1", "rail0", "n2", "rail0", 6, 410, 500);
	collect(d);
	o = find_open("inband_mismatch", "n1", "rail0");
	ok(o != NULL, "lane min 410 us vs probe p50 21 us: inband_mismatch");
	if (o) {
		like(o->summary, "lane min 410.0 us vs probe p50 21.0 us", "summary");
		is_int(attached(o->handle, 50, 0), 3, "attached to job 50.0 ranks 0, 1");
	} else {
		skip(2, "no anomaly");
	}
	ok(!attached_job(51), "not to job 51 (rail1)");
	fq_detector_destroy(d);

	/* congestion is not misconfiguration: a loaded lane's p50 is far above
	 * the probes, but its minimum sits at the path's base delay */
	d = make();
	reset();
	for (int t = 1; t <= 5; t++)
		probe(d, "n1", "rail0", "n2", "rail0", t, 21, 30);
	fq_detector_lane(d, &(struct fq_det_lane){.job_id = 52,
						  .dst_rank = 1,
						  .src_node = "n1",
						  .src_nic = "rail0",
						  .dst_node = "n2",
						  .dst_nic = "rail0",
						  .start_ns = S(5),
						  .end_ns = S(6),
						  .owd_p50_ns = US(3000),
						  .owd_p99_ns = US(9000),
						  .owd_min_ns = US(24)});
	collect(d);
	ok(!find_open("inband_mismatch", "n1", "rail0"),
	   "a queued lane (p50 3 ms, min 24 us): no inband_mismatch");
	fq_detector_destroy(d);

	/* a TCP lane's chunks wait in the sender's socket first: a busy job's
	 * smallest one-way delay is milliseconds on a healthy fabric (seen:
	 * 1.0-2.3 ms against probes of 8-18 us), its TCP RTT floor is not */
	for (int floor_us = 40; floor_us <= 2000; floor_us += 1960) {
		struct fq_det_lane send = {.job_id = 53,
					   .dst_rank = 1,
					   .src_node = "n1",
					   .src_nic = "rail0",
					   .dst_node = "n2",
					   .dst_nic = "rail0",
					   .start_ns = S(5),
					   .end_ns = S(6),
					   .tcp_min_rtt_ns = US(floor_us)};
		struct fq_det_lane recv = send;

		d = make();
		reset();
		for (int t = 1; t <= 5; t++)
			probe(d, "n1", "rail0", "n2", "rail0", t, 21, 30);
		recv.end_ns = S(6) + 1000;
		recv.tcp_min_rtt_ns = US(floor_us + 10); /* the receiver's socket: a little more */
		recv.owd_p50_ns = US(2200);
		recv.owd_p99_ns = US(4000);
		recv.owd_min_ns = US(1800);
		fq_detector_lane(d, &send);
		fq_detector_lane(d, &recv);
		collect(d);
		o = find_open("inband_mismatch", "n1", "rail0");
		if (floor_us == 40) {
			ok(!o, "a self-queued TCP lane (min 1.8 ms, RTT floor 40 us) vs probe p50 21 us: no "
			       "mismatch");
		} else {
			ok(o != NULL,
			   "a TCP lane whose RTT floor is 2 ms vs probe p50 21 us: inband_mismatch");
			like(o ? o->summary : "", "TCP RTT floor / 2 1000.0 us vs probe p50 21.0 us",
			     "... judged by half its RTT floor (the sender's, the smaller)");
		}
		fq_detector_destroy(d);
	}
}

static void lane_route(struct fq_detector *d, uint64_t job, uint32_t sr, uint32_t dr, uint32_t ln,
		       const char *sn, const char *snic, int sp, uint16_t port, double t);
static void probe_route(struct fq_detector *d, const char *sn, const char *snic, const char *dn,
			const char *dnic, int sp, double t);

/* A detector after 5 s of probes: n1/rail0 -> n3/rail0 over spine1 at
 * 20 us, and two pairs with no node in common over spine2 delayed from
 * t = 4 (spine2's links queue by the probes); ticked at 5.5 s. */
static struct fq_detector *spine2_queueing(void)
{
	struct fq_detector *d = make();

	reset();
	probe_route(d, "n1", "rail0", "n3", "rail0", 1, 0.5);
	probe_route(d, "n2", "rail1", "n4", "rail1", 2, 0.5);
	probe_route(d, "n5", "rail0", "n6", "rail0", 2, 0.5);
	for (int t = 1; t <= 5; t++) {
		probe(d, "n1", "rail0", "n3", "rail0", t, 20, 30);
		probe(d, "n2", "rail1", "n4", "rail1", t, t < 4 ? 20 : 3000, t < 4 ? 30 : 4000);
		probe(d, "n5", "rail0", "n6", "rail0", t, t < 4 ? 20 : 3000, t < 4 ? 30 : 4000);
	}
	fq_detector_tick(d, S(5.5));
	return d;
}

/* A lane far slower than its NIC pair's probes, its own route traced over
 * spine2, whose links queue by the probes (pairs with no node in common
 * delayed over it), while its pair's probes take spine1: the fabric's
 * delay, no inband_mismatch. The same lane traced over the idle spine1:
 * inband_mismatch. */
static void test_inband_queueing(void)
{
	for (int sp = 2; sp >= 1; sp--) {
		struct fq_detector *d = spine2_queueing();

		lane_route(d, 700, 0, 1, 0, "n1", "rail0", sp, 43000, 5.6);
		lane(d, 700, 0, 1, 0, "n1", "rail0", "n3", "rail0", 6, 410, 500);
		collect(d);
		if (sp == 2)
			ok(!find_open("inband_mismatch", NULL, NULL),
			   "a lane (min 410 us, probes 20 us) routed over spine2, which queues: no "
			   "inband_mismatch");
		else
			ok(find_open("inband_mismatch", "n1", "rail0") != NULL,
			   "the same lane routed over spine1, which does not: inband_mismatch");
		fq_detector_destroy(d);
	}
}

/* TCP lane ln of job from n1/rail0 to n3/rail0 (the receiver's report,
 * an RTT floor of floor_us) for the second before t. */
static void tcp_lane(struct fq_detector *d, uint64_t job, uint32_t ln, double floor_us, double t)
{
	fq_detector_lane(d, &(struct fq_det_lane){.job_id = job,
						  .dst_rank = 1,
						  .lane = ln,
						  .src_node = "n1",
						  .src_nic = "rail0",
						  .dst_node = "n3",
						  .dst_nic = "rail0",
						  .start_ns = S(t - 1),
						  .end_ns = S(t),
						  .owd_p50_ns = US(600),
						  .owd_p99_ns = US(900),
						  .owd_min_ns = US(450),
						  .tcp_min_rtt_ns = US(floor_us)});
}

/* Probe windows of n1/rail0 -> n3/rail0 for t = from .. to, both ways:
 * p50 20 us, p90 25 us or, congested that way, 4 ms (the tail the
 * path_delay rule reads). */
static void probes_13(struct fq_detector *d, int from, int to, bool fwd, bool rev)
{
	for (int t = from; t <= to; t++)
		fq_detector_probe(d, &(struct fq_det_probe){.node = "n1",
							    .nic = "rail0",
							    .remote_node = "n3",
							    .remote_nic = "rail0",
							    .start_ns = S(t - 1),
							    .end_ns = S(t),
							    .sent = 100,
							    .answered = 100,
							    .owd_fwd_p50_ns = US(20),
							    .owd_fwd_p90_ns = US(fwd ? 4000 : 25),
							    .owd_fwd_p99_ns = US(fwd ? 5000 : 30),
							    .owd_rev_p50_ns = US(20),
							    .owd_rev_p90_ns = US(rev ? 4000 : 25),
							    .owd_rev_p99_ns = US(rev ? 5000 : 30),
							    .up = true});
}

/* A TCP lane on n1/rail0 -> n3/rail0 (RTT floor 8.2 ms) whose NIC pair's
 * probes keep a p50 of 20 us: an in-band mismatch while the probes find
 * the pair healthy; none while their p90 has the pair delayed (an open
 * path_delay), this way or the way back, which an RTT floor counts: the
 * fabric's congestion, reported as such. */
static void test_inband_pair_delayed(void)
{
	static const char *what[] = {"neither way", "this way", "the way back"};

	for (int c = 0; c < 3; c++) {
		struct fq_detector *d = make();

		reset();
		probes_13(d, 1, 5, false, false);
		probes_13(d, 6, 8, c == 1, c == 2);
		fq_detector_tick(d, S(8.5));
		tcp_lane(d, 900, 0, 8200, 9);
		collect(d);
		if (c)
			ok(find_open("path_delay", NULL, NULL) && !find_open("inband_mismatch", NULL, NULL),
			   "the pair's probes delayed %s (p90 4 ms, p50 20 us): path_delay, no "
			   "inband_mismatch",
			   what[c]);
		else
			ok(!find_open("path_delay", NULL, NULL) &&
			       find_open("inband_mismatch", "n1", "rail0"),
			   "the pair's probes delayed %s: inband_mismatch", what[c]);
		fq_detector_destroy(d);
	}
}

/* With path_delay's persistence of 3 windows (the default), a lane waits
 * as many intervals over the probes: congestion that comes with a job is
 * over its lanes' RTT floors at once and over the probes' only after
 * their persistence. A lane over them from t = 6 with the probes healthy:
 * inband_mismatch at its third interval (t = 8), not before. The same
 * with the probes' tail congested from t = 6: path_delay at t = 8, and no
 * inband_mismatch ever. */
static void test_inband_persists(void)
{
	for (int congested = 0; congested < 2; congested++) {
		struct fq_detector_config c;
		struct fq_detector *d;
		int named = 0;

		fq_detector_config_defaults(&c);
		d = fq_detector_create(&c);
		reset();
		probes_13(d, 1, 5, false, false);
		for (int t = 6; t <= 10; t++) {
			probes_13(d, t, t, congested, false);
			tcp_lane(d, 910, 0, 8200, t);
			collect(d);
			if (!named && find_open("inband_mismatch", NULL, NULL))
				named = t;
		}
		if (congested)
			ok(find_open("path_delay", NULL, NULL) && !named,
			   "the probes' tail congested with the job: path_delay, no inband_mismatch (%d)",
			   named);
		else
			is_int(named, 8,
			       "the probes healthy: inband_mismatch at the lane's third interval over them");
		fq_detector_destroy(d);
	}
}

/* A TCP lane is traced by its agent within seconds of its first report:
 * until its route comes (or ROUTE_WAIT_NS, or its step's end) its
 * inband judgement waits, so a lane hashed onto a queueing spine is not
 * named misconfigured for want of its route. */
static void test_inband_waits_route(void)
{
	for (int c = 0; c < 4; c++) {
		struct fq_detector *d = spine2_queueing();
		const struct rec *o;
		double t = 6;

		tcp_lane(d, 800, 0, 820, t);
		collect(d);
		ok(!find_open("inband_mismatch", NULL, NULL),
		   "case %d: a TCP lane (base 410 us, probes 20 us) before its route: held", c);
		switch (c) {
		case 0:
			lane_route(d, 800, 0, 1, 0, "n1", "rail0", 2, 43000, 6.5);
			collect(d);
			ok(!find_open("inband_mismatch", NULL, NULL),
			   "its route comes, over spine2, which queues: no inband_mismatch");
			break;
		case 1:
			lane_route(d, 800, 0, 1, 0, "n1", "rail0", 1, 43000, 6.5);
			collect(d);
			o = find_open("inband_mismatch", "n1", "rail0");
			ok(o != NULL, "its route comes, over spine1, which does not: inband_mismatch then");
			is_int(o ? attached(o->handle, 800, 0) : -1, 3,
			       "... in job 800.0's report, ranks 0, 1");
			break;
		case 2:
			fq_detector_step_end(d, 800, 0);
			collect(d);
			o = find_open("inband_mismatch", "n1", "rail0");
			ok(o != NULL,
			   "its step ends before its route: judged on what is known, inband_mismatch");
			is_int(o ? attached(o->handle, 800, 0) : -1, 3,
			       "... in job 800.0's report, ranks 0, 1");
			break;
		case 3:
			for (t = 7; t <= 18; t++) {
				probe(d, "n1", "rail0", "n3", "rail0", t, 20, 30);
				tcp_lane(d, 800, 0, 820, t);
				collect(d);
				if (find_open("inband_mismatch", NULL, NULL))
					break;
			}
			is_int((int)t, 18,
			       "no route ever: judged at its first interval ending over 12 s after its first "
			       "began");
			break;
		}
		fq_detector_destroy(d);
	}
}

/* The newest ADVICE collected, and how many there are (*n, may be NULL). */
static const struct rec *last_advice(size_t *n)
{
	const struct rec *adv = NULL;

	if (n)
		*n = 0;
	for (size_t i = 0; i < nrecs; i++)
		if (recs[i].kind == FQ_DET_ADVICE) {
			adv = &recs[i];
			if (n)
				(*n)++;
		}
	return adv;
}

/* A detector with the collision rule and its advice on. */
static struct fq_detector *collision_detector(struct fq_detector_config *c)
{
	fq_detector_config_defaults(c);
	c->collision_advice = true;
	reset();
	return fq_detector_create(c);
}

/* Two jobs through n2/rail1 (the TBF spine's far end): probe owd of every
 * NIC pair ~20 us; job 4242's two lanes into n2/rail1 at 94 and 400 us,
 * job 4243's one lane at 120 us; quiet lanes elsewhere. */
static void test_collision(void)
{
	struct fq_detector_config c;
	struct fq_detector *d;
	const struct rec *o, *adv = NULL;
	size_t nadv = 0;

	d = collision_detector(&c);
	for (int t = 1; t <= 3; t++) {
		probe(d, "n1", "rail1", "n2", "rail1", t, 20, 30);
		probe(d, "n3", "rail1", "n2", "rail1", t, 22, 30);
		probe(d, "n4", "rail1", "n2", "rail1", t, 21, 30);
		probe(d, "n1", "rail0", "n2", "rail0", t, 18, 25);
	}
	lane(d, 4242, 0, 1, 1, "n1", "rail1", "n2", "rail1", 3, 60, 94);
	lane(d, 4242, 2, 1, 1, "n3", "rail1", "n2", "rail1", 3, 200, 400);
	lane(d, 4242, 0, 1, 0, "n1", "rail0", "n2", "rail0", 3, 3, 4);
	lane(d, 4243, 5, 6, 1, "n4", "rail1", "n2", "rail1", 3, 90, 120);
	fq_detector_tick(d, S(3.5));
	collect(d);
	o = find_open("collision", "n2", "rail1");
	ok(o != NULL, "collision anomaly on n2/rail1 (%s)", o ? o->summary : "none");
	ok(o && attached(o->handle, 4242, 0) >= 0 && attached(o->handle, 4243, 0) >= 0,
	   "attached to both jobs");
	adv = last_advice(&nadv);
	ok(nadv == 1 && adv->job == 4243 && !strcmp(adv->node, "n4") && !strcmp(adv->nic, "rail1") &&
	       !strcmp(adv->rnode, "n2") && !strcmp(adv->rnic, "rail1"),
	   "one advice: job 4243 (fewer lanes) to move n4/rail1 -> n2/rail1 (%zu advice)", nadv);
	ok(adv && adv->end - adv->start == c.advice_lifetime_ns && o && adv->handle == o->handle &&
	       !strcmp(adv->reason, "n2/rail1"),
	   "for advice_lifetime_ns, tied to the anomaly, naming the shared NIC");
	ok(o && strstr(o->evidence, "\"move_job\":4243") && strstr(o->evidence, "\"other_job\":4242"),
	   "the evidence says which job moves and why");
	reset();
	fq_detector_tick(d, S(3.6)); /* the same window again: advice renewed, no second anomaly */
	collect(d);
	ok(count(FQ_DET_ADVICE, NULL) == 1 && count(FQ_DET_OPEN, "collision") == 0,
	   "next tick, collision still there: advice again (renewal), the anomaly extended");
	/* the advised job's lanes there grow to 2, the other's fall to 1: by lane
	 * counts alone the choice would flip and both jobs would move */
	for (int t = 4; t <= 5; t++) {
		probe(d, "n1", "rail1", "n2", "rail1", t, 20, 30);
		probe(d, "n3", "rail1", "n2", "rail1", t, 22, 30);
		probe(d, "n4", "rail1", "n2", "rail1", t, 21, 30);
	}
	lane(d, 4242, 0, 1, 1, "n1", "rail1", "n2", "rail1", 5, 30, 40);
	lane(d, 4242, 2, 1, 1, "n3", "rail1", "n2", "rail1", 5, 200, 400);
	lane(d, 4243, 5, 6, 1, "n4", "rail1", "n2", "rail1", 5, 90, 120);
	lane(d, 4243, 7, 6, 1, "n4", "rail1", "n2", "rail1", 5, 90, 130);
	reset();
	fq_detector_tick(d, S(5.5));
	collect(d);
	adv = last_advice(NULL);
	ok(adv && adv->job == 4243 && count(FQ_DET_ADVICE, NULL) >= 1,
	   "the advised job stays the one to move while its advice holds (job %llu), though it now has more "
	   "lanes there",
	   adv ? (unsigned long long)adv->job : 0ULL);
	/* job 4243's step ends: its lanes are forgotten, so no collision is left */
	fq_detector_step_end(d, 4243, 0);
	reset();
	fq_detector_tick(d, S(5.6));
	collect(d);
	is_int((int)count(FQ_DET_ADVICE, NULL), 0, "job 4243's step ended: no advice at the next tick");
	fq_detector_destroy(d);

	fq_detector_config_defaults(&c); /* collision_advice off (the default) */
	d = fq_detector_create(&c);
	reset();
	probe(d, "n1", "rail1", "n2", "rail1", 1, 20, 30);
	probe(d, "n4", "rail1", "n2", "rail1", 1, 21, 30);
	lane(d, 4242, 0, 1, 1, "n1", "rail1", "n2", "rail1", 1, 60, 400);
	lane(d, 4243, 5, 6, 1, "n4", "rail1", "n2", "rail1", 1, 90, 120);
	fq_detector_tick(d, S(1.5));
	collect(d);
	ok(count(FQ_DET_ADVICE, NULL) == 0 && !find_open("collision", NULL, NULL),
	   "collision_advice off: nothing");
	fq_detector_destroy(d);
}

/* A lane's own route from leaf1 over spine sp to leaf2, as its agent
 * traced it (the trace stops at the far leaf), from source port port. */
static void lane_route(struct fq_detector *d, uint64_t job, uint32_t sr, uint32_t dr, uint32_t ln,
		       const char *sn, const char *snic, int sp, uint16_t port, double t)
{
	char nic[32], up[32], spine[16], dn[32], down[32];
	const char *comps[7] = {nic, up, "leaf1", dn, spine, down, "leaf2"};

	snprintf(nic, sizeof(nic), "%s/%s", sn, snic);
	snprintf(up, sizeof(up), "%s/%s~leaf1", sn, snic);
	snprintf(spine, sizeof(spine), "spine%d", sp);
	snprintf(dn, sizeof(dn), "leaf1~spine%d", sp);
	snprintf(down, sizeof(down), "leaf2~spine%d", sp);
	fq_detector_lane_route(d, &(struct fq_det_lane_route){.job_id = job,
							      .src_rank = sr,
							      .dst_rank = dr,
							      .lane = ln,
							      .local_port = port,
							      .comps = comps,
							      .n = 7,
							      .now_ns = S(t)});
}

/* A NIC pair's probe route from leaf1 over spine sp to leaf2, at t. */
static void probe_route(struct fq_detector *d, const char *sn, const char *snic, const char *dn,
			const char *dnic, int sp, double t)
{
	char a[32], up[32], spine[16], ls[32], sl[32], down[32], b[32];
	const char *comps[9] = {a, up, "leaf1", ls, spine, sl, "leaf2", down, b};

	snprintf(a, sizeof(a), "%s/%s", sn, snic);
	snprintf(up, sizeof(up), "%s/%s~leaf1", sn, snic);
	snprintf(ls, sizeof(ls), "leaf1~spine%d", sp);
	snprintf(spine, sizeof(spine), "spine%d", sp);
	snprintf(sl, sizeof(sl), "leaf2~spine%d", sp);
	snprintf(down, sizeof(down), "%s/%s~leaf2", dn, dnic);
	snprintf(b, sizeof(b), "%s/%s", dn, dnic);
	fq_detector_route(d, sn, snic, dn, dnic, comps, 9, S(t));
}

/* Two jobs on disjoint NICs whose lanes ECMP hashed onto one spine: job
 * 500 from n1/rail0 to n3/rail0, one lane over spine2 and one over
 * spine1; job 600 from n2/rail1 to n4/rail1, both lanes over spine2. The
 * lanes' own routes meet on leaf1>spine2: the collision is there, and the
 * advice names job 500's lane on it by its source port. */
static void test_collision_link(void)
{
	struct fq_detector_config c;
	struct fq_detector *d;
	const struct rec *o, *adv = NULL;
	size_t nadv = 0;

	d = collision_detector(&c);
	probe_route(d, "n1", "rail0", "n3", "rail0", 1, 0.5); /* the pairs' probes: spine1 and spine2 */
	probe_route(d, "n2", "rail1", "n4", "rail1", 2, 0.5);
	probe_route(d, "n5", "rail0", "n6", "rail0", 2, 0.5); /* a pair of no job's, over spine2 too */
	for (int t = 1; t <= 3; t++) {
		probe(d, "n1", "rail0", "n3", "rail0", t, 20, 30);
		probe(d, "n2", "rail1", "n4", "rail1", t, 20, 30);
		probe(d, "n5", "rail0", "n6", "rail0", t, 20, 30);
	}
	lane(d, 500, 0, 1, 0, "n1", "rail0", "n3", "rail0", 3, 200, 400);
	lane(d, 500, 0, 1, 1, "n1", "rail0", "n3", "rail0", 3, 150, 300);
	lane(d, 600, 0, 1, 0, "n2", "rail1", "n4", "rail1", 3, 250, 500);
	lane(d, 600, 0, 1, 1, "n2", "rail1", "n4", "rail1", 3, 200, 450);
	fq_detector_tick(d, S(3.2));
	collect(d);
	ok(!find_open("collision", NULL, NULL),
	   "before the lanes' routes are traced: no shared NIC, no collision");
	lane_route(d, 500, 0, 1, 0, "n1", "rail0", 2, 41000, 3.3);
	lane_route(d, 500, 0, 1, 1, "n1", "rail0", 1, 41001, 3.3);
	lane_route(d, 600, 0, 1, 0, "n2", "rail1", 2, 42000, 3.3);
	lane_route(d, 600, 0, 1, 1, "n2", "rail1", 2, 42001, 3.3);
	reset();
	fq_detector_tick(d, S(3.5));
	collect(d);
	ok(!find_open("collision", NULL, NULL),
	   "the lanes meet on leaf1>spine2 but its probes are not delayed: no collision (their delays "
	   "are their senders' own queues)");
	/* spine2 queues: the probes over it are delayed two windows in a row,
	 * on pairs with no NIC in common (one NIC's own trouble, a flap,
	 * delays only its own paths, whatever links they cross) */
	for (int t = 4; t <= 5; t++) {
		probe(d, "n1", "rail0", "n3", "rail0", t, 20, 30);
		probe(d, "n2", "rail1", "n4", "rail1", t, 3000, 4000);
		probe(d, "n5", "rail0", "n6", "rail0", t, 3000, 4000);
	}
	lane(d, 500, 0, 1, 0, "n1", "rail0", "n3", "rail0", 5, 200, 400);
	lane(d, 500, 0, 1, 1, "n1", "rail0", "n3", "rail0", 5, 150, 300);
	lane(d, 600, 0, 1, 0, "n2", "rail1", "n4", "rail1", 5, 9000, 12000);
	lane(d, 600, 0, 1, 1, "n2", "rail1", "n4", "rail1", 5, 8000, 11000);
	reset();
	fq_detector_tick(d, S(5.5));
	collect(d);
	o = find_open("collision", NULL, NULL);
	ok(o && !*o->node && !*o->nic && !strcmp(o->component, "leaf1>spine2"),
	   "now queueing by the probes: a collision on the link leaf1>spine2, named as a component (%s)",
	   o ? o->summary : "none");
	ok(o && strstr(o->evidence, "\"link\":\"leaf1>spine2\"") && strstr(o->evidence, "\"move_job\":500"),
	   "its evidence names the link and the job to move (500: 1 lane there against 2)");
	ok(o && attached(o->handle, 500, 0) >= 0 && attached(o->handle, 600, 0) >= 0,
	   "attached to both jobs, whose lanes cross it");
	adv = last_advice(&nadv);
	ok(nadv == 1 && adv->job == 500 && adv->port == 41000 && !strcmp(adv->node, "n1") &&
	       !strcmp(adv->nic, "rail0") && !strcmp(adv->rnode, "n3") && !strcmp(adv->rnic, "rail0") &&
	       !strcmp(adv->reason, "leaf1>spine2"),
	   "one advice: job 500's lane from port 41000 (over spine2, not its lane over spine1) off "
	   "n1/rail0 -> n3/rail0 (%zu advice)",
	   nadv);
	/* the advised lane moved: re-opened on a new port, traced over spine3 */
	lane_route(d, 500, 0, 1, 0, "n1", "rail0", 3, 41002, 6.2);
	lane(d, 500, 0, 1, 0, "n1", "rail0", "n3", "rail0", 6, 20, 30);
	lane(d, 500, 0, 1, 1, "n1", "rail0", "n3", "rail0", 6, 150, 300);
	lane(d, 600, 0, 1, 0, "n2", "rail1", "n4", "rail1", 6, 9000, 12000);
	lane(d, 600, 0, 1, 1, "n2", "rail1", "n4", "rail1", 6, 8000, 11000);
	probe(d, "n1", "rail0", "n3", "rail0", 6, 20, 30);
	probe(d, "n2", "rail1", "n4", "rail1", 6, 3000, 4000);
	probe(d, "n5", "rail0", "n6", "rail0", 6, 3000, 4000);
	reset();
	fq_detector_tick(d, S(6.5));
	collect(d);
	is_int((long long)count(FQ_DET_ADVICE, NULL), 0, "the lane moved off the link: no advice");
	fq_detector_destroy(d);
}

/* Jobs 4242 and 4243 collide on n2/rail1, then (the first collision still
 * open) on n2/rail0: one incident, the second its member; jobs 4244 and
 * 4245 colliding on n6/rail0 meanwhile are an incident of their own. */
static void test_collision_incident(void)
{
	struct fq_detector_config c;
	struct fq_detector *d;
	const struct rec *first, *second, *other, *upd;

	d = collision_detector(&c);
	for (int t = 1; t <= 3; t++) {
		probe(d, "n1", "rail1", "n2", "rail1", t, 20, 30);
		probe(d, "n4", "rail1", "n2", "rail1", t, 21, 30);
	}
	lane(d, 4242, 0, 1, 1, "n1", "rail1", "n2", "rail1", 3, 60, 400);
	lane(d, 4243, 5, 6, 1, "n4", "rail1", "n2", "rail1", 3, 90, 120);
	fq_detector_tick(d, S(3.5));
	collect(d);
	first = find_open("collision", "n2", "rail1");
	ok(first && !first->incident, "jobs 4242 and 4243 collide on n2/rail1: an incident (%s)",
	   first ? first->summary : "none");
	for (int t = 4; t <= 5; t++) {
		probe(d, "n1", "rail0", "n2", "rail0", t, 20, 30);
		probe(d, "n4", "rail0", "n2", "rail0", t, 21, 30);
		probe(d, "n5", "rail0", "n6", "rail0", t, 20, 30);
		probe(d, "n7", "rail0", "n6", "rail0", t, 21, 30);
	}
	lane(d, 4242, 0, 1, 0, "n1", "rail0", "n2", "rail0", 5, 60, 400);
	lane(d, 4243, 5, 6, 0, "n4", "rail0", "n2", "rail0", 5, 90, 120);
	fq_detector_tick(d, S(5.5));
	collect(d);
	second = find_open("collision", "n2", "rail0");
	ok(second && first && second->incident == first->handle,
	   "... then on n2/rail0: a member of that incident (incident %llu, the first %llu)",
	   second ? (unsigned long long)second->incident : 0ULL,
	   first ? (unsigned long long)first->handle : 0ULL);
	upd = NULL;
	for (size_t i = 0; i < nrecs; i++)
		if (recs[i].kind == FQ_DET_UPDATE && first && recs[i].handle == first->handle)
			upd = &recs[i];
	ok(upd && upd->events == 2 && strstr(upd->summary, "collide on n2/rail1 and 1 more place;"),
	   "... which now counts 2 NICs: %s", upd ? upd->summary : "no update");
	lane(d, 4244, 0, 1, 0, "n5", "rail0", "n6", "rail0", 5, 60, 400);
	lane(d, 4245, 5, 6, 0, "n7", "rail0", "n6", "rail0", 5, 90, 120);
	fq_detector_tick(d, S(5.6));
	collect(d);
	other = find_open("collision", "n6", "rail0");
	ok(other && !other->incident, "jobs 4244 and 4245 on n6/rail0: an incident of their own (%s)",
	   other ? other->summary : "none");
	fq_detector_destroy(d);
}

/* The collision of test_collision_incident, but job 4243's lane is one the
 * agent found no connection for (LaneReport.unverified): no collision, no
 * advice, and the lane attaches the job to nothing. The detector never
 * sees a lane's kind (struct fq_det_lane has none), so an IB lane whose
 * queue pair the agent could not verify, or could not ask about, is this
 * same input. */
static void test_unverified_lane(void)
{
	struct fq_detector_config c;
	struct fq_detector *d;

	d = collision_detector(&c);
	for (int t = 1; t <= 3; t++) {
		probe(d, "n1", "rail1", "n2", "rail1", t, 20, 30);
		probe(d, "n4", "rail1", "n2", "rail1", t, 21, 30);
	}
	lane(d, 4242, 0, 1, 1, "n1", "rail1", "n2", "rail1", 3, 60, 400);
	fq_detector_lane(d, &(struct fq_det_lane){.job_id = 4243,
						  .src_rank = 5,
						  .dst_rank = 6,
						  .lane = 1,
						  .src_node = "n4",
						  .src_nic = "rail1",
						  .dst_node = "n2",
						  .dst_nic = "rail1",
						  .start_ns = S(2),
						  .end_ns = S(3),
						  .owd_p50_ns = US(90),
						  .owd_p99_ns = US(120000),
						  .owd_min_ns = US(90),
						  .unverified = true});
	fq_detector_tick(d, S(3.5));
	collect(d);
	ok(!find_open("collision", NULL, NULL) && count(FQ_DET_ADVICE, NULL) == 0,
	   "an unverified lane (a job's word only) makes no collision and moves no job");
	fq_detector_destroy(d);
}

/* An RDMA lane refused for its configuration (plugin FailoverEvent cause
 * "config"): one rdma_config anomaly per NIC, attached to the step and its
 * ranks, renewed by repeats, closed when they stop; other causes nothing. */
static void test_rdma_config(void)
{
	struct fq_detector *d = make();
	const struct rec *o;
	struct fq_det_lane_event e = {.node = "n1",
				      .nic = "mlx5_0",
				      .remote_nic = "198.19.0.5",
				      .cause = "path-down",
				      .job_id = 77,
				      .step_id = 2,
				      .src_rank = 0,
				      .dst_rank = 3,
				      .time_ns = S(10)};

	reset();
	fq_detector_lane_event(NULL, &e);
	fq_detector_lane_event(d, NULL);
	fq_detector_lane_event(d, &e);
	e.cause = "steer";
	fq_detector_lane_event(d, &e);
	collect(d);
	ok(nrecs == 0, "failovers and steering moves open no anomaly");
	e.cause = "config";
	fq_detector_lane_event(d, &e);
	e.time_ns = S(12), e.src_rank = 1, e.dst_rank = 3;
	fq_detector_lane_event(d, &e);
	collect(d);
	o = find_open("rdma_config", "n1", "mlx5_0");
	ok(o && count(FQ_DET_OPEN, "rdma_config") == 1 && o->severity == 1 &&
	       strstr(o->summary, "198.19.0.5") && strstr(o->summary, "RoCE version"),
	   "cause config: one rdma_config warning on n1/mlx5_0 (%s)", o ? o->summary : "none");
	ok(o && attached(o->handle, 77, 2) == ((1LL << 0) | (1LL << 1) | (1LL << 3)),
	   "attached to job 77.2, ranks 0, 1 and 3");
	fq_detector_tick(d, S(30));
	collect(d);
	ok(o && !find_kind(FQ_DET_CLOSE, o->handle), "still open within quiet_close of the last event");
	fq_detector_tick(d, S(43));
	collect(d);
	ok(o && find_kind(FQ_DET_CLOSE, o->handle) && find_kind(FQ_DET_CLOSE, o->handle)->end == S(12),
	   "closed quiet_close after the last event, ending at it");
	fq_detector_destroy(d);
}

int main(void)
{
	test_lane_outlier();
	test_inband();
	test_inband_queueing();
	test_inband_waits_route();
	test_inband_pair_delayed();
	test_inband_persists();
	test_collision();
	test_collision_incident();
	test_collision_link();
	test_unverified_lane();
	test_rdma_config();
	return done_testing();
}
