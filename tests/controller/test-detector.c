/*
 * test-detector: the stateful detector (controller/detector.h) replaying
 * recorded telemetry (the text files in tests/controller/data/): every rule opens,
 * extends and closes one anomaly, attaches it to exactly the job steps and
 * ranks whose lanes crossed the place, and gives drain/resume hints once.
 */
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/detector.h"
#include "tests/unit/tap.h"

#define BASE  1700000000000000000LL /* the fixtures' t = 0 on the global timeline */
#define S(x)  (BASE + (int64_t)((x)*1e9 + 0.5))
#define US(x) ((int64_t)((x)*1000.0 + 0.5))

/* ---- recorded actions ----------------------------------------------------- */

struct rec {
	enum fq_det_action_kind kind;
	uint64_t handle, job, incident;
	unsigned events;
	uint32_t step, ranks[8];
	size_t nranks;
	int severity;
	int64_t start, end;
	bool resume;
	char akind[32], node[80], nic[48], rnode[80], rnic[48], summary[512], evidence[512], reason[160];
};

static struct rec recs[4096];
static size_t nrecs;

static void cp(char *dst, size_t len, const char *s)
{
	snprintf(dst, len, "%s", s ? s : "");
}

static void collect(struct fq_detector *d)
{
	struct fq_det_action a;

	while (fq_detector_next(d, &a)) {
		struct rec *r = &recs[nrecs < 4095 ? nrecs++ : nrecs];

		memset(r, 0, sizeof(*r));
		r->kind = a.kind, r->handle = a.handle, r->job = a.job_id, r->step = a.step_id;
		r->incident = a.incident, r->events = a.events;
		r->severity = a.severity, r->start = a.start_ns, r->end = a.end_ns, r->resume = a.resume;
		for (size_t i = 0; i < a.nranks && i < 8; i++)
			r->ranks[r->nranks++] = a.ranks[i];
		cp(r->akind, sizeof(r->akind), a.anomaly_kind);
		cp(r->node, sizeof(r->node), a.node);
		cp(r->nic, sizeof(r->nic), a.nic);
		cp(r->rnode, sizeof(r->rnode), a.remote_node);
		cp(r->rnic, sizeof(r->rnic), a.remote_nic);
		cp(r->summary, sizeof(r->summary), a.summary);
		cp(r->evidence, sizeof(r->evidence), a.evidence_json);
		cp(r->reason, sizeof(r->reason), a.reason);
	}
}

static size_t count(enum fq_det_action_kind kind, const char *akind)
{
	size_t n = 0;

	for (size_t i = 0; i < nrecs; i++)
		n += recs[i].kind == kind && (!akind || strcmp(recs[i].akind, akind) == 0);
	return n;
}

static const struct rec *find_open(const char *akind, const char *node, const char *nic)
{
	for (size_t i = 0; i < nrecs; i++)
		if (recs[i].kind == FQ_DET_OPEN && strcmp(recs[i].akind, akind) == 0 &&
		    (!node || strcmp(recs[i].node, node) == 0) && (!nic || strcmp(recs[i].nic, nic) == 0))
			return &recs[i];
	return NULL;
}

static const struct rec *find_kind(enum fq_det_action_kind kind, uint64_t handle)
{
	for (size_t i = 0; i < nrecs; i++)
		if (recs[i].kind == kind && (!handle || recs[i].handle == handle))
			return &recs[i];
	return NULL;
}

/* The ranks of (job, step) attached to handle, as a bit set; -1: not attached. */
static long long attached(uint64_t handle, uint64_t job, uint32_t step)
{
	long long bits = -1;

	for (size_t i = 0; i < nrecs; i++) {
		if (recs[i].kind != FQ_DET_ATTACH || recs[i].handle != handle || recs[i].job != job ||
		    recs[i].step != step)
			continue;
		if (bits < 0)
			bits = 0;
		for (size_t k = 0; k < recs[i].nranks; k++)
			bits |= 1LL << (recs[i].ranks[k] & 63);
	}
	return bits;
}

static bool attached_job(uint64_t job)
{
	for (size_t i = 0; i < nrecs; i++)
		if (recs[i].kind == FQ_DET_ATTACH && recs[i].job == job)
			return true;
	return false;
}

static void reset(void)
{
	nrecs = 0;
}

/* ---- fixture replay ------------------------------------------------------- */

/* The defaults, but a path's delay counts from its first elevated window
 * (test_persistence checks the default of 3 in a row). */
static struct fq_detector *make(void)
{
	struct fq_detector_config c;

	fq_detector_config_defaults(&c);
	c.delay_persist_windows = 1;
	c.lane_outlier_persist = 1;
	return fq_detector_create(&c);
}

/* Feeds the lines of a fixture with a time <= until_s into d (ticks too). */
static void replay(struct fq_detector *d, const char *name, double until_s)
{
	const char *top = getenv("top_srcdir");
	char path[512], line[512], a[64], b[64], c[64], e[64], st[16];
	double t0, t1, x1, x2, x3, x4;
	unsigned long job, step, sr, dr, lane;
	int up;
	FILE *f;

	snprintf(path, sizeof(path), "%s/tests/controller/data/%s", top ? top : "..", name);
	f = fopen(path, "r");
	if (!f) {
		printf("Bail out! cannot open %s\n", path);
		exit(1);
	}
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "tick %lf", &t0) == 1) {
			if (t0 > until_s)
				break;
			fq_detector_tick(d, S(t0));
			collect(d);
		} else if (sscanf(line, "link %63s %63s %63s %63s %15s %lf", a, b, c, e, st, &t0) == 6) {
			bool nic = strcmp(c, "-") == 0;

			if (t0 > until_s)
				break;
			fq_detector_link(d, &(struct fq_det_link){.node = a,
								  .nic = b,
								  .remote_node = nic ? "" : c,
								  .remote_nic = nic ? "" : e,
								  .nic_level = nic,
								  .up = strcmp(st, "up") == 0,
								  .time_ns = S(t0)});
		} else if (sscanf(line, "probe %63s %63s %63s %63s %lf %lf %lf %lf %lf %lf %d", a, b, c, e,
				  &t0, &t1, &x1, &x2, &x3, &x4, &up) == 11) {
			if (t1 > until_s)
				break;
			fq_detector_probe(d, &(struct fq_det_probe){.node = a,
								    .nic = b,
								    .remote_node = c,
								    .remote_nic = e,
								    .start_ns = S(t0),
								    .end_ns = S(t1),
								    .sent = 100,
								    .answered = 100,
								    .owd_fwd_p50_ns = US(x1),
								    .owd_fwd_p99_ns = US(x2),
								    .owd_rev_p50_ns = US(x3),
								    .owd_rev_p99_ns = US(x4),
								    .up = up != 0});
		} else if (sscanf(line, "lane %lu %lu %lu %lu %lu %63s %63s %63s %63s %lf %lf %lf %lf", &job,
				  &step, &sr, &dr, &lane, a, b, c, e, &t0, &t1, &x1, &x2) == 13) {
			if (t1 > until_s)
				break;
			fq_detector_lane(d, &(struct fq_det_lane){.job_id = job,
								  .step_id = (uint32_t)step,
								  .src_rank = (uint32_t)sr,
								  .dst_rank = (uint32_t)dr,
								  .lane = (uint32_t)lane,
								  .src_node = a,
								  .src_nic = b,
								  .dst_node = c,
								  .dst_nic = e,
								  .start_ns = S(t0),
								  .end_ns = S(t1),
								  .bytes = 1 << 20,
								  .owd_p50_ns = US(x1),
								  .owd_p99_ns = US(x2),
								  .synchronised = true});
		}
	}
	fclose(f);
	collect(d);
}

static void probe(struct fq_detector *d, const char *n, const char *nic, const char *rn, const char *rnic,
		  double t, double p50_us, double p99_us)
{
	fq_detector_probe(d, &(struct fq_det_probe){.node = n,
						    .nic = nic,
						    .remote_node = rn,
						    .remote_nic = rnic,
						    .start_ns = S(t - 1),
						    .end_ns = S(t),
						    .sent = 100,
						    .answered = 100,
						    .owd_fwd_p50_ns = US(p50_us),
						    .owd_fwd_p99_ns = US(p99_us),
						    .up = true});
}

static void lane(struct fq_detector *d, uint64_t job, uint32_t sr, uint32_t dr, uint32_t ln, const char *sn,
		 const char *snic, const char *dn, const char *dnic, double t, double p50_us, double p99_us)
{
	fq_detector_lane(d, &(struct fq_det_lane){.job_id = job,
						  .src_rank = sr,
						  .dst_rank = dr,
						  .lane = ln,
						  .src_node = sn,
						  .src_nic = snic,
						  .dst_node = dn,
						  .dst_nic = dnic,
						  .start_ns = S(t - 1),
						  .end_ns = S(t),
						  .owd_p50_ns = US(p50_us),
						  .owd_p99_ns = US(p99_us),
						  .owd_min_ns = US(p50_us)});
}

/* ---- the rules, end to end -------------------------------------------------- */

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
	lane(d, 44, 3, 0, 1, "n2", "rail1", "n1", "rail1", 11, 15, 100.1);
	for (uint32_t r = 0; r < 4; r++)
		lane(d, 44, r, (r + 1) % 4, 0, r % 2 ? "n2" : "n1", "rail0", r % 2 ? "n1" : "n2", "rail0", 11,
		     15, 20);
	fq_detector_tick(d, S(12));
	collect(d);
	is_int(count(FQ_DET_OPEN, "lane_outlier"), 1, "100.1 us: outlier");
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

static void test_slow_nic(void)
{
	static const char *peers[] = {"n4", "n5", "n6", "n7", "n8"};
	struct fq_detector *d;
	const struct rec *o;

	for (int elevated = 3; elevated <= 4; elevated++) {
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
		if (elevated == 3) {
			is_int(count(FQ_DET_OPEN, "slow_sender") + count(FQ_DET_OPEN, "slow_receiver"), 0,
			       "3 of 5 (under 0.8): no slow NIC");
		} else {
			o = find_open("slow_sender", "n3", "rail0");
			ok(o != NULL, "4 of 5: slow_sender n3/rail0");
			like(o ? o->summary : "", "4 of 5 paths from it elevated", "summary");
			ok(find_open("slow_receiver", "n9", "rail0") != NULL,
			   "4 of 5: slow_receiver n9/rail0");
			is_int(count(FQ_DET_OPEN, "slow_sender") + count(FQ_DET_OPEN, "slow_receiver"), 2,
			       "and no other slow NIC");
		}
		fq_detector_destroy(d);
	}
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

/* ---- incidents ---------------------------------------------------------------- */

static void link(struct fq_detector *d, const char *n, const char *nic, const char *rn, const char *rnic,
		 bool up, double t)
{
	fq_detector_link(d, &(struct fq_det_link){.node = n,
						  .nic = nic,
						  .remote_node = rn ? rn : "",
						  .remote_nic = rn ? rnic : "",
						  .nic_level = rn == NULL,
						  .up = up,
						  .time_ns = S(t)});
}

/* The newest UPDATE of handle (NULL: none). */
static const struct rec *last_update(uint64_t handle)
{
	for (size_t i = nrecs; i-- > 0;)
		if (recs[i].kind == FQ_DET_UPDATE && recs[i].handle == handle)
			return &recs[i];
	return NULL;
}

static size_t count_place(enum fq_det_action_kind kind, bool path)
{
	size_t n = 0;

	for (size_t i = 0; i < nrecs; i++)
		n += recs[i].kind == kind && !strcmp(recs[i].akind, "link_down") &&
		     (recs[i].rnode[0] != 0) == path;
	return n;
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
			link(d, "n3", "rail1", peers[i], "rail1", false, t + 0.05 * i);
			link(d, peers[i], "rail1", "n3", "rail1", false, t + 0.02 + 0.05 * i);
		}
		link(d, "n3", "rail1", NULL, NULL, false, t + 0.25);
		for (int i = 0; i < 4; i++) {
			link(d, "n3", "rail1", peers[i], "rail1", true, t + 0.4 + 0.01 * i);
			link(d, peers[i], "rail1", "n3", "rail1", true, t + 0.42 + 0.01 * i);
		}
		link(d, "n3", "rail1", NULL, NULL, true, t + 0.5);
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
		link(d, "n1", "rail0", "n2", "rail0", false, 100 + k);
		link(d, "n1", "rail0", "n2", "rail0", true, 100.3 + k);
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
	link(d, "n1", "rail0", "n2", "rail0", false, 110);
	link(d, "n1", "rail0", "n2", "rail0", true, 110.3);
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
	link(d, "n1", "rail0", "n2", "rail0", false, 150);
	fq_detector_tick(d, S(152));
	collect(d);
	is_int(count(FQ_DET_OPEN, "link_down"), 2, "a DOWN after that: a new incident");
	is_int(count(FQ_DET_OPEN, NULL), 2, "and nothing else");
out:
	fq_detector_destroy(d);
}

/* ---- bounds and hostile input ---------------------------------------------- */

static size_t heap_used(void)
{
	return mallinfo2().uordblks;
}

static void test_memory_bounds(void)
{
	struct fq_detector_config c;
	struct fq_detector *d;
	size_t before, after1 = 0, after2;
	char a[32], b[32];

	fq_detector_config_defaults(&c);
	c.max_paths = 10000;
	c.max_nics = 5000;
	c.max_steps = 1000;
	c.max_lanes = 8000;
	before = heap_used();
	d = fq_detector_create(&c);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 100000; i++) {
			int k = round * 100000 + i;

			snprintf(a, sizeof(a), "h%d", k);
			snprintf(b, sizeof(b), "g%d", k);
			probe(d, a, "rail0", b, "rail0", 1 + k * 0.001, 20, 30);
			lane(d, (uint64_t)k, 0, 1, 0, a, "rail0", b, "rail0", 1 + k * 0.001, 5, 8);
			if (i % 1000 == 0) {
				fq_detector_tick(d, S(1 + k * 0.001));
				while (fq_detector_next(d, &(struct fq_det_action){0}))
					;
			}
		}
		if (round == 0)
			after1 = heap_used();
	}
	after2 = heap_used();
	diag("heap: %zu KiB after 100k paths+steps, %zu KiB after 200k (caps 10k paths, 5k NICs, 1k steps)",
	     (after1 - before) / 1024, (after2 - before) / 1024);
	if (before == 0) { /* the eviction still ran; only the figures are missing */
		skip(2, "mallinfo2 does not see this allocator (sanitizer build)");
	} else {
		ok(after1 - before < 16u << 20, "100k distinct paths and steps: under 16 MiB");
		ok(after2 <= after1 + (after1 - before) / 10, "another 100k: no growth");
	}
	/* After all the eviction it still detects. */
	reset();
	fq_detector_link(d, &(struct fq_det_link){.node = "h199999",
						  .nic = "rail0",
						  .remote_node = "g199999",
						  .remote_nic = "rail0",
						  .time_ns = S(201.5)});
	fq_detector_tick(d, S(203.5));
	collect(d);
	{
		const struct rec *o = find_open("link_down", "h199999", "rail0");

		ok(o != NULL, "still detects after evicting");
		is_int(attached(o ? o->handle : 0, 199999, 0), 3, "and attaches the step kept");
	}
	fq_detector_destroy(d);

	/* Default caps, for the record: 100k paths fit without eviction. */
	before = heap_used();
	d = make();
	for (int i = 0; i < 100000; i++) {
		snprintf(a, sizeof(a), "h%d", i);
		snprintf(b, sizeof(b), "g%d", i);
		probe(d, a, "rail0", b, "rail0", 1, 20, 30);
	}
	if (before)
		diag("default caps: %zu B per path (with its 2 NICs)", (heap_used() - before) / 100000);
	fq_detector_destroy(d);
}

static void test_hostile(void)
{
	struct fq_detector *d = make();
	struct fq_det_action a;
	char longname[5000];
	const struct rec *o;

	fq_detector_probe(NULL, NULL);
	fq_detector_lane(NULL, NULL);
	fq_detector_link(NULL, NULL);
	fq_detector_tick(NULL, 1);
	fq_detector_node_drained(NULL, NULL, NULL, 0);
	fq_detector_destroy(NULL);
	ok(fq_detector_next(NULL, &a) == 0 && fq_detector_next(d, NULL) == 0, "NULL detector/action");
	fq_detector_probe(d, NULL);
	fq_detector_probe(d, &(struct fq_det_probe){0});
	fq_detector_probe(d,
			  &(struct fq_det_probe){.node = "", .nic = "", .remote_node = "", .remote_nic = ""});
	fq_detector_probe(
	    d, &(struct fq_det_probe){
		   .node = "a", .nic = "b", .remote_node = "c", .remote_nic = "d", .end_ns = -5, .up = true});
	fq_detector_lane(d, &(struct fq_det_lane){0});
	fq_detector_lane(d, &(struct fq_det_lane){.src_node = "a", .src_nic = "b", .end_ns = 0});
	fq_detector_link(d, &(struct fq_det_link){0});
	fq_detector_link(d, &(struct fq_det_link){.node = "a", .nic = "b", .time_ns = -1});
	fq_detector_node_drained(d, "", "fabriciq: x", 5);
	fq_detector_node_drained(d, NULL, NULL, -5);
	fq_detector_tick(d, 0);
	fq_detector_tick(d, -100);
	ok(fq_detector_next(d, &a) == 0, "empty/zero/negative inputs are refused, no action");

	/* Huge values and odd names. */
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	for (int i = 0; i < 8; i++)
		fq_detector_probe(d, &(struct fq_det_probe){.node = "n\"1\xff",
							    .nic = longname,
							    .remote_node = "z",
							    .remote_nic = "\\",
							    .start_ns = INT64_MIN,
							    .end_ns = INT64_MAX - i,
							    .owd_fwd_p50_ns = INT64_MAX,
							    .owd_fwd_p99_ns = INT64_MAX,
							    .owd_rev_p99_ns = -1,
							    .up = true});
	fq_detector_lane(d, &(struct fq_det_lane){.job_id = UINT64_MAX,
						  .step_id = UINT32_MAX,
						  .src_rank = UINT32_MAX,
						  .lane = UINT32_MAX,
						  .src_node = longname,
						  .src_nic = "\x01",
						  .dst_node = NULL,
						  .dst_nic = "x",
						  .start_ns = INT64_MAX,
						  .end_ns = 1,
						  .owd_p50_ns = INT64_MAX,
						  .owd_p99_ns = INT64_MIN});
	fq_detector_link(d, &(struct fq_det_link){.node = longname,
						  .nic = longname,
						  .remote_node = longname,
						  .remote_nic = "",
						  .time_ns = INT64_MAX});
	fq_detector_node_drained(d, longname, "fabriciq: y", INT64_MIN);
	fq_detector_tick(d, INT64_MAX);
	fq_detector_tick(d, 1);
	fq_detector_tick(d, INT64_MAX);
	reset();
	collect(d);
	o = find_open("path_delay", NULL, NULL);
	ok(o != NULL, "a huge delay is still flagged");
	ok(o && strncmp(o->node, "n?1?", 4) == 0 && strlen(o->nic) < 64, "names sanitised and truncated");
	ok(o && !strstr(o->summary + 5, "\"") && o->evidence[0] == '{',
	   "no raw quote from a name in the text");
	ok(nrecs > 0, "no crash on hostile input (%zu actions)", nrecs);
	fq_detector_destroy(d);

	/* Leaving actions untaken: bounded by max_pending. */
	{
		struct fq_detector_config c;
		size_t n = 0;

		fq_detector_config_defaults(&c);
		c.max_pending = 10;
		d = fq_detector_create(&c);
		for (int i = 0; i < 50; i++) {
			char peer[16];

			snprintf(peer, sizeof(peer), "p%d", i);
			fq_detector_link(d,
					 &(struct fq_det_link){.node = peer, /* one path each: no NIC cause */
							       .nic = "rail0",
							       .remote_node = "n1",
							       .remote_nic = "rail0",
							       .time_ns = S(1 + i)});
		}
		fq_detector_tick(d, S(60));
		while (fq_detector_next(d, &a))
			n++;
		is_int(n, 10, "untaken actions capped at max_pending");
		fq_detector_destroy(d);
	}
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

	fq_detector_config_defaults(&c);
	c.collision_advice = true;
	d = fq_detector_create(&c);
	reset();
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
	for (size_t i = 0; i < nrecs; i++)
		if (recs[i].kind == FQ_DET_ADVICE) {
			adv = &recs[i];
			nadv++;
		}
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
	adv = NULL;
	for (size_t i = 0; i < nrecs; i++)
		if (recs[i].kind == FQ_DET_ADVICE)
			adv = &recs[i];
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
	test_flapping();
	test_path_delay();
	test_persistence();
	test_inband();
	test_slow_nic();
	test_link_down();
	test_incident_nic();
	test_incident_path();
	test_memory_bounds();
	test_hostile();
	test_collision();
	test_rdma_config();
	return done_testing();
}
