/*
 * test-detector-links: the stateful detector (controller/detector.h) on its
 * NICs and paths (detector_link.c, detector_episode.c): flapping, path
 * delay, slow NICs, link_down and its incidents, replaying
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

static void test_flapping(void)
{
	struct fq_detector *d = make();
	const struct rec *o, *h;

	/* The first 8 DOWNs: the threshold, not flapping. */
	reset();
	replay(d, "flaps-rail1.txt", 2103);
	is_int(count(FQ_DET_OPEN, "flapping"), 0, "8 DOWNs in 35 min: not flapping");
	is_int(count(FQ_DET_OPEN, "link_down"), 8, "each DOWN (5 min apart) an episode of its own");
	is_int(count(FQ_DET_CLOSE, NULL), 7, "7 over: closed, the 8th UP for less than incident_gap");
	is_int(count(FQ_DET_UPDATE, NULL), 0, "one DOWN each");
	fq_detector_tick(d, S(2132.4));
	collect(d);
	is_int(count(FQ_DET_CLOSE, NULL), 8, "the 8th closed 30 s after its UP ...");
	is_int(recs[nrecs - 1].end, S(2102.4), "... ending at the UP");
	is_int(count(FQ_DET_HINT, NULL), 0, "no hint");
	fq_detector_destroy(d);

	d = make();
	reset();
	replay(d, "flaps-rail1.txt", 1e9);
	o = find_open("flapping", "n2", "rail1");
	ok(o != NULL, "9 DOWNs in 40 min: flapping on n2/rail1");
	if (!o)
		o = &recs[0];
	is_int(o->severity, 2, "critical");
	like(o->summary, "rail1 of n2 went down 9 times in 1h", "summary");
	is_int(o->start, S(1.0), "starts at the first DOWN of the window");
	h = find_kind(FQ_DET_HINT, 0);
	ok(h && !h->resume, "a drain hint");
	if (!h)
		h = &recs[0];
	is_str(h->reason, "fabriciq: rail1 flapped 9 in 1h", "reason text");
	is_str(h->node, "n2", "for n2");
	is_str(h->nic, "rail1", "rail1");
	is_int(h->handle, o->handle, "citing the anomaly");
	ok(o->incident && find_kind(FQ_DET_OPEN, o->incident) &&
	       !strcmp(find_kind(FQ_DET_OPEN, o->incident)->akind, "link_down") &&
	       find_kind(FQ_DET_OPEN, o->incident)->start == S(2399.6),
	   "part of the incident of its 9th DOWN's episode");
	is_int(attached(o->handle, 7, 1), 3,
	       "attached to job 7.1 (ranks 0, 1) sending over rail1 (stored on its incident)");
	ok(attached(o->handle, 8, 0) < 0, "not to job 8.0 on rail0");

	/* A 10th DOWN extends it: no new anomaly, no second hint. */
	fq_detector_link(
	    d, &(struct fq_det_link){.node = "n2", .nic = "rail1", .nic_level = true, .time_ns = S(2700)});
	fq_detector_link(
	    d, &(struct fq_det_link){
		   .node = "n2", .nic = "rail1", .nic_level = true, .up = true, .time_ns = S(2702)});
	fq_detector_tick(d, S(2703));
	collect(d);
	is_int(count(FQ_DET_OPEN, "flapping"), 1, "10th DOWN: still one flapping anomaly");
	is_int(count(FQ_DET_HINT, NULL), 1, "still one hint");

	/* The daemon applies the hint; n3 is drained by an admin. */
	fq_detector_node_drained(d, "n2", h->reason, S(2710));
	fq_detector_node_drained(d, "n3", "maintenance: new cable", S(2710));
	for (double t = 2800; t <= 3900; t += 100)
		fq_detector_tick(d, S(t));
	collect(d);
	is_int(count(FQ_DET_HINT, NULL), 1, "no resume while flapping is open");
	fq_detector_tick(d, S(3902));
	collect(d);
	ok(find_kind(FQ_DET_CLOSE, o->handle) != NULL, "flapping closes once <= 8 DOWNs in the last hour");
	fq_detector_tick(d, S(4499));
	collect(d);
	is_int(count(FQ_DET_HINT, NULL), 1, "no resume before 10 min healthy");
	fq_detector_tick(d, S(4500));
	collect(d);
	is_int(count(FQ_DET_HINT, NULL), 2, "resume after 10 min healthy");
	h = &recs[nrecs - 1];
	ok(h->kind == FQ_DET_HINT && h->resume && strcmp(h->node, "n2") == 0, "the resume hint is for n2");
	like(h->reason, "fabriciq:", "resume reason");
	for (double t = 4600; t <= 20000; t += 700)
		fq_detector_tick(d, S(t));
	collect(d);
	is_int(count(FQ_DET_HINT, NULL), 2, "no second resume, none for n3 (someone else's reason)");
	fq_detector_destroy(d);
}

static void test_path_delay(void)
{
	struct fq_detector *d = make();
	const struct rec *o, *c;

	reset();
	replay(d, "path-delay.txt", 43);
	is_int(count(FQ_DET_OPEN, NULL), 1, "3 slow windows: one anomaly");
	o = find_open("path_delay", "n1", "rail0");
	ok(o && strcmp(o->rnode, "n2") == 0, "path_delay n1/rail0 -> n2/rail0");
	if (!o)
		o = &recs[0];
	like(o->summary, "path n1/rail0 -> n2/rail0: owd p99 400.2 us vs baseline 3", "summary");
	like(o->evidence, "\"owd_p99_ns\":400200", "evidence");
	is_int(o->start, S(10), "starts with the first slow window");
	is_int(count(FQ_DET_CLOSE, NULL), 0, "open 30 s after the last slow window");
	fq_detector_tick(d, S(44));
	collect(d);
	c = find_kind(FQ_DET_CLOSE, o->handle);
	ok(c && c->end == S(13), "closed at tick 44, ending with the last slow window (13 s)");
	is_int(count(FQ_DET_OPEN, NULL), 1, "no anomaly on the quiet reverse direction");
	fq_detector_destroy(d);

	/* Just under the baseline factor: 4 x 30 us. */
	d = make();
	reset();
	for (int t = 1; t <= 10; t++)
		probe(d, "n1", "rail0", "n2", "rail0", t, 20, 30);
	probe(d, "n1", "rail0", "n2", "rail0", 11, 60, 120);
	collect(d);
	is_int(count(FQ_DET_OPEN, NULL), 0, "120 us on a 30 us baseline: not flagged");
	probe(d, "n1", "rail0", "n2", "rail0", 12, 60, 125);
	collect(d);
	is_int(count(FQ_DET_OPEN, NULL), 0, "125 us: over 4 x, but 95 us over the baseline: not flagged");
	probe(d, "n1", "rail0", "n2", "rail0", 13, 60, 335);
	collect(d);
	is_int(count(FQ_DET_OPEN, "path_delay"), 1, "335 us: over 4 x and 305 us over the baseline: flagged");
	fq_detector_destroy(d);
}

/* With the default persistence one slow window, or two, is noise; the
 * third in a row opens the anomaly, dated from the first. */
static void test_persistence(void)
{
	struct fq_detector_config c;
	struct fq_detector *d;
	const struct rec *o;

	fq_detector_config_defaults(&c);
	d = fq_detector_create(&c);
	reset();
	for (int t = 1; t <= 10; t++)
		probe(d, "n1", "rail0", "n2", "rail0", t, 20, 30);
	probe(d, "n1", "rail0", "n2", "rail0", 11, 60, 400);
	probe(d, "n1", "rail0", "n2", "rail0", 12, 20, 30);
	probe(d, "n1", "rail0", "n2", "rail0", 13, 60, 400);
	probe(d, "n1", "rail0", "n2", "rail0", 14, 60, 400);
	collect(d);
	is_int(count(FQ_DET_OPEN, NULL), 0, "single and double slow windows: noise, not flagged");
	probe(d, "n1", "rail0", "n2", "rail0", 15, 60, 400);
	collect(d);
	o = find_open("path_delay", "n1", "rail0");
	ok(o != NULL, "the third slow window in a row: path_delay");
	ok(o && o->start == S(12), "dated from the first window of the streak");
	fq_detector_destroy(d);
}

/* One report of path n1/rail0 <-> n2/rail0 over [t0, t1] from `node`'s end,
 * the direction n1 -> n2 as {p50, p90, p99} us (n2 reports it as reverse). */
static void probe_tail(struct fq_detector *d, const char *node, double t0, double t1, double p50, double p90,
		       double p99)
{
	bool n1 = strcmp(node, "n1") == 0;
	struct fq_det_probe p = {.node = node,
				 .nic = "rail0",
				 .remote_node = n1 ? "n2" : "n1",
				 .remote_nic = "rail0",
				 .start_ns = S(t0),
				 .end_ns = S(t1),
				 .sent = 50,
				 .answered = 50,
				 .up = true};

	if (n1)
		p.owd_fwd_p50_ns = US(p50), p.owd_fwd_p90_ns = US(p90), p.owd_fwd_p99_ns = US(p99);
	else
		p.owd_rev_p50_ns = US(p50), p.owd_rev_p90_ns = US(p90), p.owd_rev_p99_ns = US(p99);
	fq_detector_probe(d, &p);
}

/* Second t of the path as both its ends report it (n2's window 80 ms
 * later): p99 as n1 and as n2 saw it. */
static void both_ends(struct fq_detector *d, int t, double p50, double p90, double p99_n1, double p99_n2)
{
	probe_tail(d, "n1", t - 1, t, p50, p90, p99_n1);
	probe_tail(d, "n2", t - 0.92, t + 0.08, p50, p90, p99_n2);
}

/* The rule judges a window's p90: at a probe every 20 ms a window's p99 is
 * its slowest probe, and one slow probe a second (a busy sending host) is
 * not a delayed path. Both ends report a direction, over windows that
 * overlap: persistence counts periods of time, not reports. */
static void test_tail(void)
{
	struct fq_detector_config c;
	struct fq_detector *d;
	const struct rec *o;
	int t;

	fq_detector_config_defaults(&c); /* 3 windows in a row */
	d = fq_detector_create(&c);
	reset();
	for (t = 1; t <= 10; t++)
		both_ends(d, t, 15, 20, 30, 30);
	for (; t <= 20; t++)
		both_ends(d, t, 15, 22, 800, 2200);
	collect(d);
	is_int(count(FQ_DET_OPEN, NULL), 0,
	       "10 s of one probe in 50 slow (p99 800 us, 2.2 ms; p90 22 us): not flagged");
	for (; t <= 22; t++)
		both_ends(d, t, 200, 400, 900, 900);
	collect(d);
	is_int(count(FQ_DET_OPEN, NULL), 0,
	       "p90 400 us in 4 reports from both ends over 2 s: two periods, not flagged");
	probe_tail(d, "n1", t - 1, t, 200, 400, 900);
	collect(d);
	o = find_open("path_delay", "n1", "rail0");
	ok(o != NULL && strcmp(o->rnode, "n2") == 0, "the third second: path_delay n1/rail0 -> n2/rail0");
	if (!o)
		o = &recs[0];
	like(o->summary, "path n1/rail0 -> n2/rail0: owd p90 400.0 us vs baseline",
	     "the summary names the p90");
	like(o->evidence, "\"owd_p90_ns\":400000,\"owd_p99_ns\":900000",
	     "the evidence has the p90 and the p99");
	is_int(o->start, S(20), "dated from the first slow window");
	is_int(count(FQ_DET_OPEN, NULL), 1, "one anomaly: the reverse direction was quiet");
	fq_detector_destroy(d);
}

/* An action whose store failed for a passing reason is put back (the
 * controller does so while the database is away): it comes again first,
 * and the rest after it, in order. */
static void test_unget(void)
{
	struct fq_detector *d = make();
	struct fq_det_action a;
	uint64_t first;
	int n = 0;

	fq_detector_unget(d); /* nothing given yet: nothing to put back */
	for (int t = 1; t <= 10; t++) {
		probe(d, "n1", "rail0", "n2", "rail0", t, 20, 30);
		probe(d, "n1", "rail0", "n3", "rail0", t, 20, 30);
	}
	probe(d, "n1", "rail0", "n2", "rail0", 11, 300, 900);
	probe(d, "n1", "rail0", "n3", "rail0", 11, 300, 900);
	ok(fq_detector_next(d, &a) == 1 && a.kind == FQ_DET_OPEN, "an action: the first path_delay opens");
	first = a.handle;
	fq_detector_unget(d);
	ok(fq_detector_next(d, &a) == 1 && a.kind == FQ_DET_OPEN && a.handle == first && a.remote_node &&
	       strcmp(a.remote_node, "n2") == 0,
	   "put back, it comes again, whole (n1 -> n2)");
	while (fq_detector_next(d, &a) == 1)
		n += a.kind == FQ_DET_OPEN && a.handle != first;
	is_int(n, 1, "then the other path's");
	fq_detector_destroy(d);
}

static void test_slow_nic(void)
{
	static const char *peers[] = {"n4", "n5", "n6", "n7", "n8"};
	struct fq_detector *d;
	const struct rec *o;

	for (int elevated = 4; elevated <= 5; elevated++) {
		d = make();
		reset();
		for (int t = 1; t <= 7; t++)
			for (int p = 0; p < 5; p++) {
				bool slow = t == 7 && p < elevated;

				probe(d, "n3", "rail0", peers[p], "rail0", t, slow ? 200 : 20,
				      slow ? 400 : 30);
				probe(d, peers[p], "rail0", "n9", "rail0", t, slow ? 200 : 20,
				      slow ? 400 : 30);
			}
		fq_detector_tick(d, S(7.5));
		collect(d);
		is_int(count(FQ_DET_OPEN, "path_delay"), 2 * elevated, "%d elevated paths from n3 and to n9",
		       elevated);
		if (elevated == 4) {
			is_int(count(FQ_DET_OPEN, "slow_sender") + count(FQ_DET_OPEN, "slow_receiver"), 0,
			       "4 of 5: no slow NIC (a NIC slows every path through it: the healthy one "
			       "clears it)");
		} else {
			o = find_open("slow_sender", "n3", "rail0");
			ok(o != NULL, "5 of 5: slow_sender n3/rail0");
			like(o ? o->summary : "", "5 of 5 paths from it elevated", "summary");
			ok(find_open("slow_receiver", "n9", "rail0") != NULL,
			   "5 of 5: slow_receiver n9/rail0");
			is_int(count(FQ_DET_OPEN, "slow_sender") + count(FQ_DET_OPEN, "slow_receiver"), 2,
			       "and no other slow NIC");
		}
		fq_detector_destroy(d);
	}
}

/* Every NIC's paths elevated (every spine congested: each path delayed as
 * a slow NIC's would be): a slow NIC is an outlier among NICs, so none is
 * blamed. */
static void test_slow_everywhere(void)
{
	static const char *hosts[] = {"n1", "n2", "n3", "n4", "n5", "n6"};
	struct fq_detector *d = make();

	reset();
	for (int t = 1; t <= 7; t++)
		for (int a = 0; a < 6; a++)
			for (int b = 0; b < 6; b++)
				if (a != b)
					probe(d, hosts[a], "rail0", hosts[b], "rail0", t, t == 7 ? 200 : 20,
					      t == 7 ? 400 : 30);
	fq_detector_tick(d, S(7.5));
	collect(d);
	is_int(count(FQ_DET_OPEN, "path_delay"), 30, "all 30 paths of 6 NICs elevated");
	is_int(count(FQ_DET_OPEN, "slow_sender") + count(FQ_DET_OPEN, "slow_receiver"), 0,
	       "no NIC blamed: every NIC's paths are elevated, the queue is not a NIC's");
	fq_detector_destroy(d);
}

static void test_link_down(void)
{
	struct fq_detector *d = make();
	const struct rec *o, *n, *h;

	reset();
	lane(d, 60, 1, 0, 0, "n2", "rail0", "n1", "rail0", 9, 5,
	     8); /* the reverse direction crosses it too */
	lane(d, 61, 0, 1, 0, "n1", "rail1", "n2", "rail1", 9, 5, 8);
	lane(d, 59, 0, 1, 0, "n1", "rail0", "n2", "rail0", 2, 5, 8); /* long before: not during it */
	fq_detector_link(
	    d,
	    &(struct fq_det_link){
		.node = "n1", .nic = "rail0", .remote_node = "n2", .remote_nic = "rail0", .time_ns = S(10)});
	fq_detector_tick(d, S(11.9));
	collect(d);
	ok(!find_open("link_down", NULL, NULL), "a path DOWN waits incident_settle for a NIC cause");
	fq_detector_tick(d, S(12));
	collect(d);
	o = find_open("link_down", "n1", "rail0");
	ok(o && strcmp(o->rnode, "n2") == 0 && o->severity == 1, "path DOWN: link_down n1/rail0 - n2/rail0");
	if (!o)
		o = &recs[0];
	is_int(attached(o->handle, 60, 0), 3, "attached to job 60.0 crossing it");
	ok(!attached_job(61) && !attached_job(59), "not to job 61 (rail1) nor job 59 (ended before)");
	lane(d, 62, 4, 5, 1, "n1", "rail0", "n2", "rail0", 12, 5, 8);
	collect(d);
	is_int(attached(o->handle, 62, 0), (1 << 4) | (1 << 5), "a lane arriving later is attached too");
	fq_detector_link(
	    d,
	    &(struct fq_det_link){
		.node = "n1", .nic = "rail0", .remote_node = "n2", .remote_nic = "rail0", .time_ns = S(11)});
	collect(d);
	is_int(count(FQ_DET_OPEN, NULL), 1, "a repeated DOWN extends it");
	fq_detector_tick(d, S(100));
	collect(d);
	ok(!find_kind(FQ_DET_CLOSE, 0), "link_down stays open without UP (no quiet close)");
	fq_detector_link(d, &(struct fq_det_link){.node = "n1",
						  .nic = "rail0",
						  .remote_node = "n2",
						  .remote_nic = "rail0",
						  .up = true,
						  .time_ns = S(101)});
	collect(d);
	fq_detector_tick(d, S(130.9));
	collect(d);
	ok(!find_kind(FQ_DET_CLOSE, 0), "UP: the episode open until UP for incident_gap");
	fq_detector_tick(d, S(131));
	collect(d);
	ok(find_kind(FQ_DET_CLOSE, o->handle) && find_kind(FQ_DET_CLOSE, o->handle)->end == S(101),
	   "then closed, at the UP time");

	/* Every path of n5/rail0 down: NIC-level, then dead after 60 s. */
	reset();
	for (int p = 0; p < 3; p++) {
		char peer[8];

		snprintf(peer, sizeof(peer), "n%d", 6 + p);
		probe(d, "n5", "rail0", peer, "rail0", 200, 20, 30);
	}
	for (int p = 0; p < 3; p++) {
		char peer[8];

		snprintf(peer, sizeof(peer), "n%d", 6 + p);
		fq_detector_link(d, &(struct fq_det_link){.node = "n5",
							  .nic = "rail0",
							  .remote_node = peer,
							  .remote_nic = "rail0",
							  .time_ns = S(201 + p)});
		collect(d);
		if (p == 1)
			is_int(count(FQ_DET_OPEN, NULL), 0, "2 of 3 paths down: held for a NIC cause");
	}
	n = NULL;
	for (size_t i = 0; i < nrecs; i++)
		if (recs[i].kind == FQ_DET_OPEN && strcmp(recs[i].node, "n5") == 0 && !recs[i].rnode[0])
			n = &recs[i];
	ok(n && n->severity == 2 && strcmp(n->akind, "link_down") == 0,
	   "3 of 3: NIC-level link_down, critical");
	fq_detector_tick(d, S(262));
	collect(d);
	is_int(count(FQ_DET_OPEN, NULL), 1, "the paths' DOWNs are the NIC's incident: no path anomaly");
	is_int(count(FQ_DET_HINT, NULL), 0, "no drain before 60 s down");
	fq_detector_tick(d, S(263));
	collect(d);
	h = find_kind(FQ_DET_HINT, 0);
	ok(h && !h->resume && strcmp(h->node, "n5") == 0, "dead NIC: drain hint for n5");
	is_str(h ? h->reason : NULL, "fabriciq: rail0 down 1 in 1h", "dead NIC reason");
	fq_detector_tick(d, S(300));
	collect(d);
	is_int(count(FQ_DET_HINT, NULL), 1, "no duplicate hint");
	fq_detector_destroy(d);
}

/* The test-flap scenario on recorded times: rail1 of n3 flaps 10 times, 0.8 s
 * apart, each DOWN seen on every path from n3 and to it, and by n3's agent
 * as NIC-level, while job 40 (ranks 0-2 on n1-n3) crosses it and job 41
 * (n1 <-> n2) does not. One incident, counting the 10 DOWNs. */
static void test_incident_nic(void)
{
	static const char *const peers[] = {"n1", "n2", "n4", "n5"};
	struct fq_detector_config c;
	struct fq_detector *d;
	const struct rec *o, *f, *u, *cl;
	double t;

	fq_detector_config_defaults(&c);
	c.flap_window_ns = 20000000000LL;
	d = fq_detector_create(&c);
	reset();
	for (int i = 0; i < 4; i++) {
		probe(d, "n3", "rail1", peers[i], "rail1", 9, 20, 30);
		probe(d, peers[i], "rail1", "n3", "rail1", 9, 20, 30);
	}
	lane(d, 40, 0, 2, 0, "n1", "rail1", "n3", "rail1", 9.5, 5, 8);
	lane(d, 40, 2, 1, 0, "n3", "rail1", "n2", "rail1", 9.5, 5, 8);
	lane(d, 41, 0, 1, 0, "n1", "rail1", "n2", "rail1", 9.5, 5, 8);
	for (int k = 0; k < 10; k++) {
		t = 10 + 0.8 * k;
		for (int i = 0; i < 4; i++) {
			link_event(d, "n3", "rail1", peers[i], "rail1", false, t + 0.05 * i);
			link_event(d, peers[i], "rail1", "n3", "rail1", false, t + 0.02 + 0.05 * i);
		}
		link_event(d, "n3", "rail1", NULL, NULL, false, t + 0.25);
		for (int i = 0; i < 4; i++) {
			link_event(d, "n3", "rail1", peers[i], "rail1", true, t + 0.4 + 0.01 * i);
			link_event(d, peers[i], "rail1", "n3", "rail1", true, t + 0.42 + 0.01 * i);
		}
		link_event(d, "n3", "rail1", NULL, NULL, true, t + 0.5);
		fq_detector_tick(d, S(t + 0.7));
	}
	for (t = 18; t <= 47.5; t += 1)
		fq_detector_tick(d, S(t));
	collect(d);
	is_int(count_place(FQ_DET_OPEN, false), 1, "one NIC-level link_down: the incident");
	is_int(count_place(FQ_DET_OPEN, true), 0, "no path-level link_down (80 path DOWNs are raw events)");
	is_int(count(FQ_DET_OPEN, NULL), 2, "two anomalies in all");
	o = find_open("link_down", "n3", "rail1");
	f = find_open("flapping", "n3", "rail1");
	ok(o && f, "the link_down episode and the flapping of n3/rail1");
	if (!o || !f)
		goto out;
	is_int(o->incident, 0, "the episode is an incident");
	is_int(o->start, S(10.15), "starting at the first NIC DOWN (its 4th path down)");
	is_int(f->incident, o->handle, "flapping (9th DOWN) is part of it");
	u = last_update(o->handle);
	is_int(u ? u->events : 0, 10, "it counts the 10 DOWNs");
	is_int(u ? u->end : 0, S(10 + 0.8 * 9 + 0.15), "its last DOWN");
	is_int(count(FQ_DET_UPDATE, NULL), 9, "one UPDATE per DOWN after the first");
	is_int(attached(o->handle, 40, 0), 7, "attached to job 40.0, ranks 0, 1, 2 ...");
	is_int(attached(f->handle, 40, 0), 7, "... and so is its member (stored on the incident)");
	ok(!attached_job(41), "not job 41 (n1 <-> n2)");
	ok(!find_kind(FQ_DET_CLOSE, o->handle), "open for 30 s after the last UP (17.6 s) ...");
	fq_detector_tick(d, S(47.6));
	collect(d);
	cl = find_kind(FQ_DET_CLOSE, o->handle);
	is_int(cl ? cl->end : 0, S(10 + 0.8 * 9 + 0.4), "... then closed, ending at that UP");
	is_int(count(FQ_DET_HINT, NULL), 1, "one drain hint");
out:
	fq_detector_destroy(d);
}

/* A path that flaps while its NICs' other paths stay up: an episode of the
 * path, after incident_settle; DOWNs within incident_gap of its UP count
 * into it, a DOWN after that is a new one. */
static void test_incident_path(void)
{
	struct fq_detector *d = make();
	const struct rec *o, *u, *cl;

	reset();
	probe(d, "n1", "rail0", "n2", "rail0", 99, 20, 30);
	probe(d, "n1", "rail0", "n3", "rail0", 99, 20, 30);
	probe(d, "n1", "rail0", "n4", "rail0", 99, 20, 30);
	lane(d, 50, 0, 1, 0, "n1", "rail0", "n2", "rail0", 99.5, 5, 8);
	for (int k = 0; k < 3; k++) {
		link_event(d, "n1", "rail0", "n2", "rail0", false, 100 + k);
		link_event(d, "n1", "rail0", "n2", "rail0", true, 100.3 + k);
	}
	fq_detector_tick(d, S(101.9));
	collect(d);
	is_int(count(FQ_DET_OPEN, NULL), 0, "held for incident_settle (2 s)");
	fq_detector_tick(d, S(102.5));
	collect(d);
	o = find_open("link_down", "n1", "rail0");
	ok(o && !strcmp(o->rnode, "n2") && o->start == S(100) && !o->incident,
	   "then one path incident n1/rail0 -> n2/rail0 from the first DOWN");
	if (!o)
		goto out;
	u = last_update(o->handle);
	is_int(u ? u->events : 0, 3, "counting its 3 DOWNs ...");
	ok(u && u->end == S(102) && count(FQ_DET_UPDATE, NULL) == 1, "... the last at 102 s (one UPDATE)");
	is_int(attached(o->handle, 50, 0), 3, "attached to job 50.0 (ranks 0, 1)");
	link_event(d, "n1", "rail0", "n2", "rail0", false, 110);
	link_event(d, "n1", "rail0", "n2", "rail0", true, 110.3);
	collect(d);
	u = last_update(o->handle);
	is_int(u ? u->events : 0, 4, "a DOWN 8 s after its UP counts into it");
	fq_detector_tick(d, S(140.2));
	collect(d);
	ok(!find_kind(FQ_DET_CLOSE, o->handle), "open until UP for 30 s ...");
	fq_detector_tick(d, S(140.3));
	collect(d);
	cl = find_kind(FQ_DET_CLOSE, o->handle);
	is_int(cl ? cl->end : 0, S(110.3), "... closed at its last UP");
	link_event(d, "n1", "rail0", "n2", "rail0", false, 150);
	fq_detector_tick(d, S(152));
	collect(d);
	is_int(count(FQ_DET_OPEN, "link_down"), 2, "a DOWN after that: a new incident");
	is_int(count(FQ_DET_OPEN, NULL), 2, "and nothing else");
out:
	fq_detector_destroy(d);
}

/* What the NIC said of its own link at a NIC-level DOWN chooses the
 * component: disabled on the host -> the NIC; no carrier -> its cable
 * (none known here: no routes); said after its paths already opened the
 * episode -> an UPDATE blames it anew. */
static void nic_path(struct fq_detector *d, const char *peer, bool up, double t)
{
	fq_detector_link(d, &(struct fq_det_link){.node = "n4",
						  .nic = "rail0",
						  .remote_node = peer,
						  .remote_nic = "rail0",
						  .up = up,
						  .time_ns = S(t)});
}

static void test_nic_said(void)
{
	struct fq_detector *d = make();
	const struct rec *o, *u = NULL;

	reset();
	fq_detector_link(d, &(struct fq_det_link){.node = "n5",
						  .nic = "rail1",
						  .nic_level = true,
						  .time_ns = S(10),
						  .nic_state = "admin-down"});
	fq_detector_tick(d, S(11));
	collect(d);
	o = find_open("link_down", "n5", "rail1");
	is_str(o ? o->component : "", "n5/rail1", "a NIC disabled on its host: the NIC blamed");
	like(o ? o->summary : "", "administratively down on its host", "... and said so");

	fq_detector_link(d, &(struct fq_det_link){.node = "n6",
						  .nic = "rail0",
						  .nic_level = true,
						  .time_ns = S(12),
						  .nic_state = "no-carrier"});
	collect(d);
	o = find_open("link_down", "n6", "rail0");
	is_str(o ? o->component : "-", "", "no carrier: its cable, not known without routes");
	like(o ? o->summary : "", "sees no link: its cable, the switch port or the NIC",
	     "... and the summary says what");

	/* n4/rail0's two paths go DOWN: the NIC is inferred down; then it says */
	nic_path(d, "n7", true, 13);
	nic_path(d, "n8", true, 13);
	nic_path(d, "n7", false, 20);
	nic_path(d, "n8", false, 20);
	collect(d);
	ok(find_open("link_down", "n4", "rail0") != NULL, "n4/rail0 down, inferred from its paths");
	fq_detector_link(d, &(struct fq_det_link){.node = "n4",
						  .nic = "rail0",
						  .nic_level = true,
						  .time_ns = S(20.1),
						  .nic_state = "admin-down"});
	collect(d);
	for (size_t i = 0; i < nrecs; i++)
		if (recs[i].kind == FQ_DET_UPDATE &&
		    recs[i].handle == find_open("link_down", "n4", "rail0")->handle)
			u = &recs[i];
	is_str(u ? u->component : "", "n4/rail0", "then it says it is disabled: an UPDATE blames the NIC");
	like(u ? u->summary : "", "down 1 times; the NIC is administratively down", "... with the summary");
	fq_detector_destroy(d);
}

/*
 * A peer's agent that stood still (its host gave it no CPU): the paths to
 * it went DOWN at its peers, and the link was fine. Its stall report
 * explains a held DOWN whose silence it covers if the path was UP again
 * by its end; it comes only after the stall, so a DOWN toward an agent
 * heard from before its silence and not since waits for it (up to
 * stall_wait, 30 s).
 */

/* n1 and n3 probe n2, n4, n5 on rail0 (a NIC with one path DOWN is not NIC-down). */
static struct fq_detector *stall_setup(double t)
{
	struct fq_detector *d = make();

	reset();
	for (int i = 1; i <= 3; i += 2)
		for (int j = 2; j <= 5; j++)
			if (j != 3) {
				char n[8], r[8];

				snprintf(n, sizeof(n), "n%d", i);
				snprintf(r, sizeof(r), "n%d", j);
				probe(d, n, "rail0", r, "rail0", t, 20, 30);
			}
	for (int j = 1; j <= 5; j++) {
		char n[8];

		snprintf(n, sizeof(n), "n%d", j);
		fq_detector_agent_heard(d, n, S(t));
	}
	return d;
}

static void tick(struct fq_detector *d, double t)
{
	fq_detector_tick(d, S(t));
	collect(d);
}

static void test_peer_stall(void)
{
	struct fq_detector *d = stall_setup(99.9);
	const struct rec *o;

	/* the test-agent-restart run: n4's agent stood still 1.45 s */
	link_event(d, "n1", "rail0", "n4", "rail0", false, 100.02);
	link_event(d, "n3", "rail0", "n4", "rail0", false, 100.01);
	link_event(d, "n1", "rail0", "n4", "rail0", true, 101.46);
	fq_detector_agent_stall(d, "n4", S(100.03), S(101.45));
	fq_detector_agent_heard(d, "n4", S(101.47));
	link_event(d, "n3", "rail0", "n4", "rail0", true, 101.47);
	tick(d, 102.1);
	tick(d, 140);
	is_int(count(FQ_DET_OPEN, NULL), 0, "DOWNs toward an agent that stood still, UP after: no anomaly");
	fq_detector_destroy(d);

	/* a stall as the link fails: still DOWN well past the stall's end */
	d = stall_setup(199.9);
	link_event(d, "n1", "rail0", "n5", "rail0", false, 200.02);
	fq_detector_agent_stall(d, "n5", S(200.03), S(201));
	fq_detector_agent_heard(d, "n5", S(201.01));
	tick(d, 202.1);
	tick(d, 203.2);
	is_int(count(FQ_DET_OPEN, NULL), 0,
	       "a stall over the silence, the path still DOWN: held a while ...");
	tick(d, 203.3);
	o = find_open("link_down", "n1", "rail0");
	ok(o && !strcmp(o->rnode, "n5") && o->start == S(200.02) && count(FQ_DET_OPEN, NULL) == 1,
	   "... then link_down n1/rail0 -> n5/rail0 from its DOWN (the link, not the stall)");
	fq_detector_destroy(d);

	/* UP again, but long after the stall's end: the link */
	d = stall_setup(199.9);
	link_event(d, "n1", "rail0", "n5", "rail0", false, 200.02);
	fq_detector_agent_stall(d, "n5", S(200.03), S(200.5));
	fq_detector_agent_heard(d, "n5", S(200.51));
	link_event(d, "n1", "rail0", "n5", "rail0", true, 201.5);
	tick(d, 202.1);
	is_int(count(FQ_DET_OPEN, "link_down"), 1, "UP 1 s after the stall's end: link_down as before");
	fq_detector_destroy(d);

	/* no stall, the far agent heard all along: link_down at incident_settle */
	d = stall_setup(299.9);
	link_event(d, "n1", "rail0", "n2", "rail0", false, 300);
	fq_detector_agent_heard(d, "n2", S(300.9));
	link_event(d, "n1", "rail0", "n2", "rail0", true, 301);
	fq_detector_agent_heard(d, "n2", S(301.9));
	tick(d, 301.9);
	is_int(count(FQ_DET_OPEN, NULL), 0, "no stall: held for incident_settle ...");
	tick(d, 302.1);
	is_int(count(FQ_DET_OPEN, "link_down"), 1, "... then link_down as before");
	fq_detector_destroy(d);

	/* a 5 s stall: its report comes after incident_settle, behind another frame */
	d = stall_setup(399.9);
	link_event(d, "n1", "rail0", "n5", "rail0", false, 400.01);
	tick(d, 402.1);
	tick(d, 404.9);
	is_int(count(FQ_DET_OPEN, NULL), 0, "n5's agent silent since: its DOWN held past incident_settle");
	link_event(d, "n1", "rail0", "n5", "rail0", true, 405.01);
	fq_detector_agent_heard(d, "n5", S(405.02)); /* a window spooled before the report */
	tick(d, 405.03);
	is_int(count(FQ_DET_OPEN, NULL), 0, "n5 heard again: one tick more for its report ...");
	fq_detector_agent_stall(d, "n5", S(400.02), S(405));
	fq_detector_agent_heard(d, "n5", S(405.04));
	tick(d, 406);
	tick(d, 440);
	is_int(count(FQ_DET_OPEN, NULL), 0, "... which explains it: no anomaly");
	fq_detector_destroy(d);

	/* heard again, no report: the link */
	d = stall_setup(499.9);
	link_event(d, "n1", "rail0", "n5", "rail0", false, 500.01);
	tick(d, 502.1);
	fq_detector_agent_heard(d, "n5", S(503));
	tick(d, 503.1);
	is_int(count(FQ_DET_OPEN, NULL), 0, "n5 heard again after a silence ...");
	tick(d, 504.1);
	is_int(count(FQ_DET_OPEN, "link_down"), 1, "... and no stall report: link_down");
	fq_detector_destroy(d);

	/* never heard again (its host gone, its session not yet): stall_wait */
	d = stall_setup(599.9);
	link_event(d, "n1", "rail0", "n5", "rail0", false, 600.01);
	tick(d, 602.1);
	tick(d, 629.9);
	is_int(count(FQ_DET_OPEN, NULL), 0, "n5 silent: held up to stall_wait ...");
	tick(d, 630.1);
	o = find_open("link_down", "n1", "rail0");
	ok(o && o->start == S(600.01), "... then link_down from its DOWN");
	fq_detector_destroy(d);
}

int main(void)
{
	test_flapping();
	test_path_delay();
	test_persistence();
	test_tail();
	test_unget();
	test_slow_nic();
	test_slow_everywhere();
	test_link_down();
	test_incident_nic();
	test_incident_path();
	test_nic_said();
	test_peer_stall();
	return done_testing();
}
