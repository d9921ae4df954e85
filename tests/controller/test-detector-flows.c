/*
 * test-detector-flows: the localisation over probe flows
 * (controller/detector_locate.c, fq_det_flow). A model fabric: 8 hosts
 * with one rail on 4 leaves (2 each) and 4 spines; every directed pair is
 * probed over 4 flows, each its own 5-tuple and so its own route (the
 * spine by a fixed hash of pair and flow, as ECMP's), its reverse leg
 * the far end's same flow. Probe windows every second, one fault at a
 * time:
 *   - one cable (leaf1~spine2) dropping probes: only the flows over it
 *     lose (a quarter of a pair's probes at most), every path stays UP ->
 *     fabric_loss on that cable, its evidence naming flows;
 *   - spine3 slow: only the flows over it are delayed (the pairs' own
 *     p90, all flows together, elevated too) -> fabric_delay on spine3,
 *     the path_delay anomalies of pairs with a flow over it its members,
 *     and no slow_sender or slow_receiver (most pairs have a flow over
 *     spine3, but none is delayed on every flow);
 *   - n3/rail0 slow to send: every flow of its paths delayed -> its
 *     slow_sender, no fabric blame;
 *   - the same cable fault where each pair's flow 0 alone crosses no
 *     cable of leaf1 toward spine2 often enough (a pair without flows:
 *     its own route only) -> the flows find it all the same;
 *   - an agent without flows (no fq_det_flow): its path is one flow,
 *     judged as before.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/controller/det-fixture.h"
#include "tests/unit/tap.h"

#define HOSTS  8
#define LEAVES 4
#define SPINES 4
#define FLOWS  4

static int leaf_of(int i)
{
	return (i - 1) / 2 + 1;
}

/* The spine ECMP picks for flow k of i -> j (0: same leaf). */
static int spine_of(int i, int j, int k)
{
	if (leaf_of(i) == leaf_of(j))
		return 0;
	return (int)((unsigned)(i * 131 + j * 71 + k * 37 + (i * j * (k + 1)) % 11) % SPINES) + 1;
}

static void feed_routes(struct fq_detector *d, int flows)
{
	for (int i = 1; i <= HOSTS; i++)
		for (int j = 1; j <= HOSTS; j++)
			for (int k = 0; k < flows && i != j; k++) {
				char names[9][64], ni[8], nj[8];
				const char *comps[9];
				int a = leaf_of(i), b = leaf_of(j), s = spine_of(i, j, k);
				size_t n = 0;

				snprintf(names[n++], 64, "n%d/rail0", i);
				snprintf(names[n++], 64, "n%d/rail0~leaf%d", i, a);
				snprintf(names[n++], 64, "leaf%d", a);
				if (s) {
					snprintf(names[n++], 64, "leaf%d~spine%d", a, s);
					snprintf(names[n++], 64, "spine%d", s);
					snprintf(names[n++], 64, "leaf%d~spine%d", b, s);
					snprintf(names[n++], 64, "leaf%d", b);
				}
				snprintf(names[n++], 64, "n%d/rail0~leaf%d", j, b);
				snprintf(names[n++], 64, "n%d/rail0", j);
				for (size_t m = 0; m < n; m++)
					comps[m] = names[m];
				snprintf(ni, sizeof(ni), "n%d", i);
				snprintf(nj, sizeof(nj), "n%d", j);
				fq_detector_flow_route(d, ni, "rail0", nj, "rail0", (unsigned)k, comps, n,
						       S(0));
			}
}

/* Does flow k of i -> j (one way) cross the cable leafL~spineS / spine S? */
static bool over_cable(int i, int j, int k, int l, int s)
{
	return spine_of(i, j, k) == s && (leaf_of(i) == l || leaf_of(j) == l);
}

enum fault {
	NONE,
	CABLE,
	SPINE,
	NIC3
};
static enum fault fault;

/* Flow k of i -> j: lost probes (its round trip: i -> j, then j -> i by the
 * same flow) and delayed one way. */
static bool flow_lossy(int i, int j, int k)
{
	return fault == CABLE && (over_cable(i, j, k, 1, 2) || over_cable(j, i, k, 1, 2));
}

static bool flow_slow(int i, int j, int k)
{
	return (fault == SPINE && spine_of(i, j, k) == 3) || (fault == NIC3 && i == 3);
}

/* One window [t-1, t] of every pair (i < j, n_i reporting), its flows
 * (flows 0: an agent without them, the pair's own figures only). */
static void second(struct fq_detector *d, int t, int flows)
{
	for (int i = 1; i <= HOSTS; i++)
		for (int j = i + 1; j <= HOSTS; j++) {
			struct fq_det_flow fl[FLOWS];
			char ni[8], nj[8];
			struct fq_det_probe p = {.nic = "rail0",
						 .remote_nic = "rail0",
						 .start_ns = S(t - 1),
						 .end_ns = S(t),
						 .up = true};
			bool fslow = false, rslow = false;

			for (int k = 0; k < FLOWS; k++) {
				bool lossy = flow_lossy(i, j, k), f = flow_slow(i, j, k),
				     r = flow_slow(j, i, k);

				fl[k] = (struct fq_det_flow){.flow = (unsigned)k,
							     .sent = 12,
							     .answered = lossy ? 9 : 12,
							     .lost = lossy ? 3 : 0,
							     .owd_fwd_p50_ns = US(f ? 2000 : 20),
							     .owd_fwd_p90_ns = US(f ? 2000 : 21),
							     .owd_rev_p50_ns = US(r ? 2000 : 20),
							     .owd_rev_p90_ns = US(r ? 2000 : 21)};
				if (k < (flows ? flows : 1)) {
					p.sent += fl[k].sent, p.answered += fl[k].answered,
					    p.lost += fl[k].lost;
					fslow = fslow || f, rslow = rslow || r;
				}
			}
			/* the pair's p90: a quarter of its probes over the slow spine
			 * is more than a tenth */
			p.owd_fwd_p50_ns = US(20), p.owd_fwd_p90_ns = US(fslow ? 2000 : 21);
			p.owd_rev_p50_ns = US(20), p.owd_rev_p90_ns = US(rslow ? 2000 : 21);
			p.flows = flows ? fl : NULL;
			p.n_flows = flows ? (size_t)flows : 0;
			snprintf(ni, sizeof(ni), "n%d", i);
			snprintf(nj, sizeof(nj), "n%d", j);
			p.node = ni, p.remote_node = nj;
			fq_detector_probe(d, &p);
		}
	fq_detector_tick(d, S(t) + 1);
	collect(d);
}

static struct fq_detector *fabric(int flows)
{
	struct fq_detector *d = make();

	reset();
	fault = NONE;
	feed_routes(d, flows ? flows : 1);
	for (int t = 1; t <= 8; t++) /* the paths' baselines */
		second(d, t, flows);
	return d;
}

/* Flows (one way, i != j) over the cable, and the pairs with one. */
static void cable_paths(unsigned *flows, unsigned *pairs)
{
	*flows = *pairs = 0;
	for (int i = 1; i <= HOSTS; i++)
		for (int j = 1; j <= HOSTS; j++) {
			bool any = false;

			for (int k = 0; k < FLOWS && i != j; k++) {
				*flows += over_cable(i, j, k, 1, 2);
				any = any || over_cable(i, j, k, 1, 2);
			}
			*pairs += any;
		}
}

static unsigned flow0_over_cable(void)
{
	unsigned n = 0;

	for (int i = 1; i <= HOSTS; i++)
		for (int j = 1; j <= HOSTS; j++)
			n += i != j && over_cable(i, j, 0, 1, 2);
	return n;
}

static void test_cable(void)
{
	struct fq_detector *d = fabric(FLOWS);
	const struct rec *o;
	unsigned flows, pairs;

	cable_paths(&flows, &pairs);
	diag("leaf1~spine2: crossed by %u directed flows of %u pairs; by %u pairs' flow 0", flows, pairs,
	     flow0_over_cable());
	is_int(count(FQ_DET_OPEN, NULL), 0, "8 s of a healthy fabric over 4 flows a pair: no anomaly");
	fault = CABLE;
	for (int t = 9; t <= 12; t++)
		second(d, t, FLOWS);
	is_int(count(FQ_DET_OPEN, "fabric_loss"), 1,
	       "leaf1~spine2 dropping probes on its flows: one fabric_loss");
	o = find_open("fabric_loss", NULL, NULL);
	is_str(o ? o->component : "", "leaf1~spine2", "blamed on that cable");
	like(o ? o->evidence : "", "/rail0#", "its evidence names flows (pair#flow)");
	is_int(count_place(FQ_DET_OPEN, true), 0, "no path DOWN: its other flows kept every pair UP");
	is_int(count(FQ_DET_OPEN, "fabric_delay"), 0, "nothing delayed");
	fq_detector_destroy(d);
}

static void test_spine(void)
{
	struct fq_detector *d = fabric(FLOWS);
	const struct rec *o;

	fault = SPINE;
	for (int t = 9; t <= 13; t++)
		second(d, t, FLOWS);
	is_int(count(FQ_DET_OPEN, "fabric_delay"), 1, "spine3 slow on the flows over it: one fabric_delay");
	o = find_open("fabric_delay", NULL, NULL);
	is_str(o ? o->component : "", "spine3", "blamed on spine3");
	ok(count(FQ_DET_OPEN, "path_delay") > 0, "the pairs' p90 elevated: %zu path_delay",
	   count(FQ_DET_OPEN, "path_delay"));
	{
		size_t members = 0, opened = 0;

		for (size_t i = 0; o && i < nrecs; i++)
			if (recs[i].kind == FQ_DET_OPEN && !strcmp(recs[i].akind, "path_delay")) {
				opened++;
				members += recs[i].incident == o->handle;
				for (size_t k = 0; k < nrecs; k++)
					members += recs[k].kind == FQ_DET_MEMBER &&
						   recs[k].handle == recs[i].handle &&
						   recs[k].incident == o->handle;
			}
		is_int(members, opened, "each a member of spine3's incident (a flow of its pair over it)");
	}
	is_int(count(FQ_DET_OPEN, "slow_sender") + count(FQ_DET_OPEN, "slow_receiver"), 0,
	       "no NIC blamed: most pairs have a flow over spine3, none is delayed on every flow");
	fq_detector_destroy(d);
}

/* A slow sender delays every flow of its paths: the NIC rule still sees it. */
static void test_slow_nic(void)
{
	struct fq_detector *d = fabric(FLOWS);
	const struct rec *o;

	fault = NIC3;
	for (int t = 9; t <= 13; t++)
		second(d, t, FLOWS);
	o = find_open("slow_sender", "n3", "rail0");
	ok(o != NULL, "n3/rail0 delaying every flow it sends: slow_sender (%s)", o ? o->summary : "none");
	is_int(count(FQ_DET_OPEN, "fabric_delay"), 0, "no fabric component blamed");
	fq_detector_destroy(d);
}

/* Agents without flows: a path is one flow, its own route and figures. */
static void test_no_flows(void)
{
	struct fq_detector *d = fabric(0);

	fault = SPINE;
	for (int t = 9; t <= 13; t++)
		second(d, t, 0);
	/* flow 0 alone: the pairs whose flow 0 crosses spine3 are delayed */
	is_int(count(FQ_DET_OPEN, "fabric_delay"), 1,
	       "no flows: spine3 still blamed by the pairs' own routes");
	is_str(count(FQ_DET_OPEN, "fabric_delay") ? find_open("fabric_delay", NULL, NULL)->component : "",
	       "spine3", "... spine3");
	fq_detector_destroy(d);
}

/* Flow input kept in bounds. */
static void test_bounds(void)
{
	struct fq_detector *d = make();
	const char *comps[] = {"n1/rail0", "n1/rail0~leaf1", "leaf1", "n2/rail0~leaf1", "n2/rail0"};
	struct fq_det_flow fl[2] = {{.flow = FQ_DET_MAX_FLOWS, .sent = 10, .lost = 10},
				    {.flow = 1, .sent = 10, .answered = 10}};

	fq_detector_flow_route(d, "n1", "rail0", "n2", "rail0", FQ_DET_MAX_FLOWS, comps, 5, S(1));
	fq_detector_flow_route(d, "n1", "rail0", "n2", "rail0", 1, comps, 5, S(1));
	fq_detector_probe(d, &(struct fq_det_probe){.node = "n1",
						    .nic = "rail0",
						    .remote_node = "n2",
						    .remote_nic = "rail0",
						    .start_ns = S(1),
						    .end_ns = S(2),
						    .sent = 20,
						    .answered = 20,
						    .up = true,
						    .flows = fl,
						    .n_flows = 2});
	fq_detector_tick(d, S(3));
	ok(true, "a flow past FQ_DET_MAX_FLOWS (route, window) is ignored, no crash");
	fq_detector_destroy(d);
}

int main(void)
{
	test_cable();
	test_spine();
	test_slow_nic();
	test_no_flows();
	test_bounds();
	return done_testing();
}
