/*
 * test-detector-prof: peer_slow, the detector's rule over the NCCL
 * profiler plugin's reports (controller/detector_prof.h): the pure rule
 * (fq_rule_peer_slow) on numbers, then the detector fed ranks' reports
 * one by one as the agents send them (each rank on its own phase, a
 * report a second). A healthy ring, small or idle channels, warm-up, two
 * ranks, an interrupted streak, unsynchronised clocks and sends that only
 * waited for their receivers give nothing; a slow peer gives exactly one
 * anomaly, attached to its step and its two ranks, with the rank's QPs in
 * the evidence, and closes once quiet.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/rules.h"
#include "tests/controller/det-fixture.h"
#include "tests/unit/tap.h"

#define MIB (1u << 20)

/* x[i] = channel rank -> peer: bytes in transfers of bytes/count, each
 * taking busy/count ns */
static struct fq_rule_xfer xf(uint32_t rank, uint32_t peer, uint64_t bytes, uint64_t count, int64_t busy)
{
	return (struct fq_rule_xfer){bytes, count, busy, rank, peer};
}

static int verdicts(const struct fq_peer_judgement *o, size_t n, enum fq_peer_verdict v)
{
	int mask = 0;

	for (size_t i = 0; i < n; i++)
		mask |= (o[i].verdict == v) << i;
	return mask;
}

static void test_rule(void)
{
	struct fq_detector_config c;
	struct fq_rule_xfer x[12];
	struct fq_peer_judgement o[12];

	fq_detector_config_defaults(&c);
	/* a ring of 4: channel i is rank i -> i+1 */
	for (uint32_t i = 0; i < 4; i++)
		x[i] = xf(i, (i + 1) % 4, 8 * MIB, 8, 8000000);
	x[2].busy_ns = 80000000;
	is_int(fq_rule_peer_slow(&c, x, 4, o), 1, "rule: one channel 10x slower is slow");
	is_int(verdicts(o, 4, FQ_PEER_SLOW), 1 << 2, "... the right one");
	is_int(verdicts(o, 4, FQ_PEER_NORMAL), 0xb, "... the others normal");
	is_int(o[2].ref_bps, 1048576000, "its reference: the median of the 3 others, 1.05 GB/s");
	is_int(o[2].nref, 3, "... over 3 channels (no other shares its rank or peer)");
	is_int(o[0].nref, 3, "a ring: every channel has 3");
	x[2].busy_ns = 8000000 * 4 - 1000; /* just under 4x: not slow */
	is_int(fq_rule_peer_slow(&c, x, 4, o), 0, "rule: 4x slower minus a hair is not slow");
	is_int(o[2].verdict, FQ_PEER_BETWEEN, "... it is between: below the median / 2 (sqrt 4)");
	x[2].busy_ns = 8000000 * 2 - 1000;
	fq_rule_peer_slow(&c, x, 4, o);
	is_int(o[2].verdict, FQ_PEER_NORMAL, "2x slower minus a hair: normal");
	x[2].busy_ns = 8000000 * 5;
	is_int(fq_rule_peer_slow(&c, x, 3, o), 1, "rule: 5x slower among 3 channels is slow");
	is_int(fq_rule_peer_slow(&c, x + 1, 2, o), 0, "rule: 2 channels judge nothing");
	is_int(verdicts(o, 2, FQ_PEER_UNJUDGED), 3, "... no verdict on either");
	/* an alltoall of 4 whose rank 2 is slow to all, with only rank 0's
	 * channels beside it this interval, 6x slower: against the plain
	 * median of the six (the mean of a slow and a fast one, 0.58 of the
	 * fast) it would not be 4x slower */
	for (uint32_t r = 0, k = 0; r < 4; r += 2)
		for (uint32_t p = 0; p < 4; p++)
			if (p != r)
				x[k++] = xf(r, p, 4 * MIB, 4, r == 2 ? 240000000 : 40000000);
	is_int(fq_rule_peer_slow(&c, x, 6, o), 3,
	       "alltoall, rank 2 6x slow to all, only rank 0 beside it: 3 slow");
	is_int(verdicts(o, 6, FQ_PEER_SLOW), 0x38, "... rank 2's three");
	is_int(o[3].nref, 3, "... 2 -> 0 against rank 0's three (none of them to rank 0)");
	is_int(o[0].nref, 2, "... 0 -> 1 against rank 2's two not to rank 1");
	is_int(verdicts(o, 6, FQ_PEER_NORMAL), 0x7, "... rank 0's three normal");
	/* a slow receiver: everything to rank 3 slow; each judged against
	 * channels not to it */
	for (uint32_t r = 0, k = 0; r < 4; r++)
		for (uint32_t p = 0; p < 4; p++)
			if (p != r)
				x[k++] = xf(r, p, 4 * MIB, 4, p == 3 ? 400000000 : 40000000);
	is_int(fq_rule_peer_slow(&c, x, 12, o), 3,
	       "alltoall, everything to rank 3 10x slow: the 3 to it slow");
	is_int(verdicts(o, 12, FQ_PEER_SLOW), (1 << 2) | (1 << 5) | (1 << 8), "... those three");
	/* small transfers are latency: 8 B allreduces' windows */
	for (uint32_t i = 0; i < 4; i++)
		x[i] = xf(i, (i + 1) % 4, 2 * MIB, 262144, 262144LL * 20000);
	x[1].busy_ns *= 100;
	is_int(fq_rule_peer_slow(&c, x, 4, o), 0, "rule: 8-byte transfers are not judged");
	is_int(o[1].rate_bps, 0, "... and get no rate");
	is_int(o[1].verdict, FQ_PEER_UNJUDGED, "... nor a verdict");
	/* a side channel with little traffic is no comparison, nor judged */
	for (uint32_t i = 0; i < 5; i++)
		x[i] = xf(i, (i + 1) % 5, 16 * MIB, 16, 16000000);
	x[4] = xf(4, 0, 2 * MIB, 2, 200000000);
	is_int(fq_rule_peer_slow(&c, x, 5, o), 0, "rule: a side channel of 1/8 the bytes: not judged");
	is_int(o[4].rate_bps, 0, "... no rate");
	x[4].bytes = 5 * MIB, x[4].count = 5;
	is_int(fq_rule_peer_slow(&c, x, 5, o), 1, "rule: 5/16 of the bytes, 30x slower: judged slow");
	/* idle, empty, hostile */
	x[0] = xf(0, 1, 0, 0, 0);
	x[1] = xf(1, 2, UINT64_MAX, 1, 1);
	x[2] = xf(2, 3, 8 * MIB, 8, -5);
	ok(fq_rule_peer_slow(&c, x, 5, o) <= 5, "rule: hostile figures do not crash");
	is_int(o[0].rate_bps, 0, "an idle channel has no rate");
	is_int(o[2].rate_bps, 0, "nor one with a negative busy time");
	for (uint32_t i = 0; i < 4; i++)
		x[i] = xf(7, 7, 8 * MIB, 8, i == 2 ? 80000000 : 8000000);
	is_int(fq_rule_peer_slow(&c, x, 4, o), 0, "rule: one rank to one peer only: no reference, nothing");
	is_int(fq_rule_peer_slow(&c, NULL, 0, NULL), 0, "rule: nothing, nothing");
}

/* One rank's report ending at t (its interval 1 s): a step_send window to
 * peer (bytes in transfers of 1 MiB, at gbs), and when qp >= 0 its send
 * QP's net_ib window at the same rate and an idle receive QP's. */
static void report(struct fq_detector *d, uint64_t job, uint32_t rank, const char *node, double t,
		   uint32_t peer, uint64_t bytes, double gbs, int qp, bool sync)
{
	uint64_t n = bytes / MIB ? bytes / MIB : 1;
	int64_t mean = (int64_t)((double)bytes / (double)n / gbs);
	struct fq_det_prof_window w[4] = {
	    {"coll", -1, 0, 0, 3, bytes, 5000000},
	    {"step_send", -1, 0, peer, n, bytes, mean},
	    {"net_ib", 0, 1, qp, n, bytes, mean},
	    {"net_ib", 0, 0, qp + 1, n, 0, 1000000},
	};
	struct fq_det_prof r = {.node = node,
				.job_id = job,
				.step_id = 0,
				.rank = rank,
				.comm_hash = 0xabcdef,
				.start_ns = S(t - 1),
				.end_ns = S(t),
				.synchronised = sync,
				.windows = w,
				.nwindows = qp >= 0 ? 4 : 2};

	fq_detector_profiler(d, &r);
}

static const char *const nodes[] = {"n1", "n2", "n3", "n4"};

/* A ring of nranks ranks (rank r on node r+1 sends to r+1), seconds from
 * t0 to t1, rank r's reports ending r/4 s after the second; the channel
 * slow_rank -> slow_rank+1 at slow_gbs from slow_from on (-1: none); a
 * tick at every second. Others at 1.0-1.6 GB/s, 8 MiB a second. */
static void ring(struct fq_detector *d, uint64_t job, uint32_t nranks, int t0, int t1, int slow_rank,
		 double slow_from, double slow_gbs, bool ib)
{
	for (int t = t0; t <= t1; t++) {
		for (uint32_t r = 0; r < nranks; r++) {
			double at = t + r / 4.0, g = 1.0 + 0.6 * ((t * 7 + (int)r * 3) % 5) / 4.0;

			if ((int)r == slow_rank && at >= slow_from)
				g = slow_gbs;
			report(d, job, r, nodes[r % 4], at, (r + 1) % nranks, 8 * MIB, g,
			       ib ? 0x100 + 2 * (int)r : -1, true);
		}
		fq_detector_tick(d, S(t + 1));
		collect(d);
	}
}

static void test_healthy(void)
{
	struct fq_detector *d = fq_detector_create(NULL);

	reset();
	ring(d, 50, 4, 1, 60, -1, 0, 0, true);
	is_int(count(FQ_DET_OPEN, NULL), 0, "healthy ring of 4 ranks, 60 s, rates 1.0-1.6 GB/s: no anomaly");
	/* the first second is warm-up: slow everywhere but one, then healthy */
	reset();
	for (uint32_t r = 0; r < 4; r++)
		report(d, 51, r, nodes[r], 1 + r / 4.0, (r + 1) % 4, 8 * MIB, r == 2 ? 1.0 : 0.05, -1, true);
	fq_detector_tick(d, S(2));
	ring(d, 51, 4, 2, 10, -1, 0, 0, false);
	is_int(count(FQ_DET_OPEN, NULL), 0, "warm-up: 3 ranks slow in their first interval only: none");
	/* 8-byte allreduces: latency, whatever the rate */
	reset();
	for (int t = 1; t <= 10; t++) {
		for (uint32_t r = 0; r < 4; r++)
			report(d, 52, r, nodes[r], t + r / 4.0, (r + 1) % 4, 200000, r == 1 ? 0.0001 : 0.01,
			       -1, true);
		fq_detector_tick(d, S(t + 1));
	}
	collect(d);
	is_int(count(FQ_DET_OPEN, NULL), 0, "small transfers (8 B ops), one rank 100x slower: not judged");
	/* two ranks: nothing to compare with */
	reset();
	ring(d, 53, 2, 1, 10, 0, 1, 0.001, false);
	is_int(count(FQ_DET_OPEN, NULL), 0,
	       "2 ranks, one direction 1000x slower: no median to judge by, none");
	/* unsynchronised: not judged */
	reset();
	for (int t = 1; t <= 10; t++) {
		for (uint32_t r = 0; r < 4; r++)
			report(d, 54, r, nodes[r], t + r / 4.0, (r + 1) % 4, 8 * MIB, r == 1 ? 0.01 : 1.0, -1,
			       false);
		fq_detector_tick(d, S(t + 1));
	}
	collect(d);
	is_int(count(FQ_DET_OPEN, NULL), 0, "reports off the global clock: not judged");
	fq_detector_destroy(d);
}

static void test_slow_peer(void)
{
	struct fq_detector *d = fq_detector_create(NULL);
	const struct rec *o;

	reset();
	ring(d, 60, 4, 1, 6, 1, 4, 0.05, true); /* rank 1 -> 2 slow from its 4th report: 3 slow by t = 6 */
	is_int(count(FQ_DET_OPEN, NULL), 1, "rank 1 -> 2 at 0.05 GB/s for 3 intervals: one anomaly");
	o = find_open("peer_slow", "n2", NULL);
	ok(o != NULL, "peer_slow on n2 (rank 1's node)");
	if (!o)
		o = &recs[0];
	is_str(o->rnode, "n3", "... to n3 (rank 2's node, from its own reports)");
	is_str(o->nic, "", "no NIC");
	is_str(o->rnic, "", "no remote NIC");
	is_int(o->severity, 1, "warning");
	like(o->summary,
	     "rank 1 (n2) -> rank 2 (n3) of job 60.0: transfers at 0.050 GB/s vs the step's median",
	     "summary");
	like(o->evidence, "\"rank\":1,\"peer\":2", "evidence: rank and peer");
	like(o->evidence, "\"intervals\":3", "evidence: 3 intervals in a row");
	like(o->evidence, "\"channels\":3",
	     "evidence: against 3 channels (rank 1's and those to rank 2 are not)");
	like(o->evidence, "\"qps\":[{\"device\":0,\"qp\":258,\"bytes\":8388608,\"gbs\":0.0500}]",
	     "evidence: rank 1's send QP (258) at the same rate; the idle receive QP left out");
	is_int(attached(o->handle, 60, 0), (1 << 1) | (1 << 2), "attached to job 60.0, ranks 1 and 2 only");
	is_int(count(FQ_DET_ATTACH, NULL), 1, "one attachment");
	ring(d, 60, 4, 7, 10, 1, 4, 0.05, true);
	is_int(count(FQ_DET_OPEN, NULL), 1, "4 more slow seconds extend it: still one");
	is_int(count(FQ_DET_ATTACH, NULL), 1, "... and no new attachment");
	ring(d, 60, 4, 11, 40, -1, 0, 0, true);
	o = find_kind(FQ_DET_CLOSE, recs[0].handle);
	ok(o && o->end == S(10.25), "healthy again: closed 30 s after its last slow interval (10.25 s)");
	is_int(count(FQ_DET_OPEN, NULL), 1, "nothing else opened");
	fq_detector_destroy(d);
}

/* 8 s of an alltoall of 4 ranks (every rank to every peer, 4 MiB a second
 * each; job `job`), rank r's reports r/8 s after the second, from t = 3 on
 * rank `slow`'s sends at 0.02 GB/s, the others' at 0.5-0.8. With recv, each
 * rank reports its receives too (step_recv): from `slow` at recv_gbs, from
 * the others at their send rate. */
static void alltoall(struct fq_detector *d, uint64_t job, uint32_t slow, bool recv, double recv_gbs)
{
	for (int t = 1; t <= 8; t++) {
		for (uint32_t r = 0; r < 4; r++) {
			struct fq_det_prof_window w[6];
			struct fq_det_prof q = {.node = nodes[r],
						.job_id = job,
						.rank = r,
						.comm_hash = 9,
						.start_ns = S(t - 1 + r / 8.0),
						.end_ns = S(t + r / 8.0),
						.synchronised = true,
						.windows = w,
						.nwindows = recv ? 6 : 3};

			for (uint32_t k = 0, p = 0; p < 4; p++) {
				double g = r == slow && t >= 3 ? 0.02 : 0.5 + 0.1 * ((t + (int)p) % 4);
				double in = p == slow && t >= 3 ? recv_gbs : 0.5 + 0.1 * ((t + (int)r) % 4);

				if (p == r)
					continue;
				w[k] = (struct fq_det_prof_window){"step_send",       -1, 0, p, 4, 4 * MIB,
								   (int64_t)(MIB / g)};
				w[3 + k++] = (struct fq_det_prof_window){
				    "step_recv", -1, 0, p, 4, 4 * MIB, (int64_t)(MIB / in)};
			}
			fq_detector_profiler(d, &q);
		}
		fq_detector_tick(d, S(t + 1));
		collect(d);
	}
}

/* An alltoall whose rank 2 (n3) sends slowly to everyone: one anomaly per
 * peer, each on rank 2 and its peer; so too when the peers' receives from
 * it crawl as well (they waited on the wire). But when they came at full
 * speed, rank 2's sends waited for its peers to post them (a rank ahead of
 * the others, as in test-profiler-slow once the slow phase ended): none. */
static void test_alltoall(void)
{
	struct fq_detector *d = fq_detector_create(NULL);
	int found = 0;

	reset();
	alltoall(d, 80, 2, false, 0);
	is_int(count(FQ_DET_OPEN, NULL), 3, "alltoall, rank 2 slow to all 3 peers: three anomalies");
	for (size_t i = 0; i < nrecs; i++) {
		const struct rec *o = &recs[i];

		if (o->kind != FQ_DET_OPEN)
			continue;
		found += !strcmp(o->node, "n3") &&
			 attached(o->handle, 80, 0) == ((1 << 2) | (1 << (o->rnode[1] - '1')));
	}
	is_int(found, 3, "... each from n3 to one peer's node, on rank 2 and that peer's rank");
	fq_detector_destroy(d);
	d = fq_detector_create(NULL);
	reset();
	alltoall(d, 81, 2, true, 0.025);
	is_int(count(FQ_DET_OPEN, NULL), 3,
	       "the peers' receives from rank 2 as slow (0.025 GB/s): the same three");
	fq_detector_destroy(d);
	d = fq_detector_create(NULL);
	reset();
	alltoall(d, 82, 1, true, 0.6);
	is_int(count(FQ_DET_OPEN, NULL), 0,
	       "rank 1's sends at 0.02 GB/s, its peers' receives of them at 0.6: they waited for the peers, "
	       "none");
	fq_detector_destroy(d);
	d = fq_detector_create(NULL);
	reset();
	alltoall(d, 83, 1, true, 0.039);
	is_int(count(FQ_DET_OPEN, NULL), 3, "... at 0.039 (under twice the sends' rate): judged slow, three");
	fq_detector_destroy(d);
}

static void test_streak(void)
{
	struct fq_detector *d = fq_detector_create(NULL);

	reset();
	ring(d, 70, 4, 1, 3, -1, 0, 0, false);
	ring(d, 70, 4, 4, 5, 2, 0, 0.1, false); /* 2 slow */
	ring(d, 70, 4, 6, 6, -1, 0, 0, false);  /* 1 healthy */
	ring(d, 70, 4, 7, 8, 2, 0, 0.1, false); /* 2 slow */
	is_int(count(FQ_DET_OPEN, NULL), 0, "slow, slow, healthy, slow, slow: not 3 in a row, none");
	ring(d, 70, 4, 9, 9, 2, 0, 0.1, false);
	is_int(count(FQ_DET_OPEN, NULL), 1, "a third slow in a row: opened");
	ok(find_open("peer_slow", "n3", NULL) != NULL, "... on rank 2's node n3");
	is_str(recs[0].rnode, "n4", "... to n4");
	fq_detector_destroy(d);
	/* an interval between slow and normal (0.4 GB/s against 1.0-1.6:
	 * above a quarter, under half) neither ends a streak nor counts */
	d = fq_detector_create(NULL);
	reset();
	ring(d, 72, 4, 1, 3, -1, 0, 0, false);
	ring(d, 72, 4, 4, 5, 2, 0, 0.1, false); /* 2 slow */
	ring(d, 72, 4, 6, 6, 2, 0, 0.4, false); /* 1 between */
	is_int(count(FQ_DET_OPEN, NULL), 0, "slow, slow, between: none yet");
	ring(d, 72, 4, 7, 7, 2, 0, 0.1, false);
	is_int(count(FQ_DET_OPEN, NULL), 1, "... and a third slow: opened");
	/* a gap (rank 2 sends nothing for 3 s) breaks the streak too */
	fq_detector_destroy(d);
	d = fq_detector_create(NULL);
	reset();
	ring(d, 71, 4, 1, 3, -1, 0, 0, false);
	ring(d, 71, 4, 4, 5, 2, 0, 0.1, false);
	for (int t = 6; t <= 8; t++) {
		for (uint32_t r = 0; r < 4; r++)
			if (r != 2)
				report(d, 71, r, nodes[r], t + r / 4.0, (r + 1) % 4, 8 * MIB, 1.2, -1, true);
		fq_detector_tick(d, S(t + 1));
	}
	ring(d, 71, 4, 9, 10, 2, 0, 0.1, false);
	collect(d);
	is_int(count(FQ_DET_OPEN, NULL), 0, "2 slow, 3 s idle, 2 slow: none");
	/* the step ended: its channels are forgotten */
	fq_detector_step_end(d, 71, 0);
	ring(d, 71, 4, 11, 11, 2, 0, 0.1, false);
	is_int(count(FQ_DET_OPEN, NULL), 0, "after its end, one more slow interval starts from nothing");
	fq_detector_destroy(d);
}

static void test_hostile(void)
{
	struct fq_detector *d = fq_detector_create(NULL);
	struct fq_det_prof_window w[3] = {
	    {NULL, 0, 0, 1, 1, 1, 1},
	    {"step_send", -1, 0, -7, 5, 5 * MIB, 1000},
	    {"step_send", -1, 0, (int64_t)1 << 40, 5, 5 * MIB, 1000},
	};
	struct fq_det_prof r = {.node = "n1",
				.job_id = 1,
				.start_ns = S(1),
				.end_ns = S(2),
				.synchronised = true,
				.windows = w,
				.nwindows = 3};

	reset();
	fq_detector_profiler(d, &r);
	fq_detector_profiler(d, NULL);
	r.node = "";
	fq_detector_profiler(d, &r);
	r.node = "n1", r.start_ns = S(3);
	fq_detector_profiler(d, &r);
	fq_detector_profiler(NULL, &r);
	fq_detector_tick(d, S(3));
	collect(d);
	is_int(count(FQ_DET_OPEN, NULL), 0,
	       "no kind, negative or huge peers, no node, time backwards: ignored");
	/* a ring of extreme figures: saturated, judged without overflow */
	for (int t = 5; t <= 9; t++) {
		for (uint32_t k = 0; k < 4; k++) {
			struct fq_det_prof_window x[2] = {
			    {"step_send", -1, 0, (k + 1) % 4, k ? UINT64_MAX : 1, UINT64_MAX, INT64_MAX},
			    {"net_ib", 0, 1, 7, UINT64_MAX, UINT64_MAX - k, k ? INT64_MAX : 1},
			};
			struct fq_det_prof q = {.node = nodes[k],
						.job_id = 2,
						.rank = k,
						.start_ns = S(t - 1),
						.end_ns = S(t),
						.synchronised = true,
						.windows = x,
						.nwindows = 2};

			fq_detector_profiler(d, &q);
			fq_detector_profiler(d, &q); /* the same interval again: adds up */
		}
		fq_detector_tick(d, S(t + 0.5));
	}
	collect(d);
	ok(count(FQ_DET_OPEN, NULL) <= 1, "extreme figures: no crash, at most one anomaly");
	fq_detector_destroy(d);
}

int main(void)
{
	test_rule();
	test_healthy();
	test_slow_peer();
	test_alltoall();
	test_streak();
	test_hostile();
	return done_testing();
}
