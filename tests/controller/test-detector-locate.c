/*
 * test-detector-locate: delayed paths blamed on the fabric component they
 * share (controller/detector_locate.c). A model fabric: 8 hosts with one
 * rail on 4 leaves (2 each) and 3 spines, every directed pair's route as
 * the controller's topology gives it (the spine by a fixed hash of the
 * pair, as ECMP's); probe windows every second, one fault at a time:
 *   - spine2 congested: every path over it delayed -> spine2, each
 *     path_delay a member, the steps whose NIC pairs cross it attached;
 *   - one link (leaf1~spine2) congested -> that link, not the spine or
 *     the leaf it hangs off;
 *   - every path into one NIC delayed (a slow receiver) -> no fabric blame,
 *     that NIC a slow receiver;
 *   - a spine queueing -> no NIC named slow, though two send most of
 *     their paths over it;
 *   - two delayed paths, no common component -> none;
 *   - the congestion gone -> the incident closes;
 * and loss (probes lost on a round trip, or paths DOWN):
 *   - one cable dropping a few probes -> fabric_loss on that cable;
 *   - a cable down: the paths over it lose a window's probes, then their
 *     routes move off it (re-converged) -> still that cable, judged on the
 *     routes at the loss;
 *   - one NIC down (every path to or from it DOWN) -> no fabric blame;
 *   - a spine both delaying and dropping -> one incident: the loss blame a
 *     member of the delay's.
 * A lane's own route (its TCP 5-tuple's, traced by its agent) decides
 * whether its step is attached; a lane without one goes by its NIC pair's
 * probe route.
 * Each incident gets one fabric hint, what to check on its component
 * (FQ_DET_HINT with a component, no node), and no drain: no node is at
 * fault; a blame that extends an incident or joins one gives none.
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
#define SPINES 3

static int leaf_of(int i)
{
	return (i - 1) / 2 + 1;
}

static int spine_of(int i, int j)
{
	return (i * 7 + j * 3) % SPINES + 1;
}

/* The route of ni/rail0 -> nj/rail0 over spine s, as topology.h names
 * components. */
static size_t route_via(int i, int j, int s, char names[9][64], const char *comps[9])
{
	int a = leaf_of(i), b = leaf_of(j);
	size_t n = 0;

	snprintf(names[n++], 64, "n%d/rail0", i);
	snprintf(names[n++], 64, "n%d/rail0~leaf%d", i, a);
	snprintf(names[n++], 64, "leaf%d", a);
	if (a != b) {
		snprintf(names[n++], 64, "leaf%d~spine%d", a, s);
		snprintf(names[n++], 64, "spine%d", s);
		snprintf(names[n++], 64, "leaf%d~spine%d", b, s);
		snprintf(names[n++], 64, "leaf%d", b);
	}
	snprintf(names[n++], 64, "n%d/rail0~leaf%d", j, b);
	snprintf(names[n++], 64, "n%d/rail0", j);
	for (size_t k = 0; k < n; k++)
		comps[k] = names[k];
	return n;
}

/* ... over the spine ECMP picks for the pair's probes. */
static size_t route(int i, int j, char names[9][64], const char *comps[9])
{
	return route_via(i, j, spine_of(i, j), names, comps);
}

static int avoid_leaf, avoid_spine; /* a cable down: routes re-converged around it */
static int untraced[2];             /* hosts whose paths' routes are not known yet (0: none) */

static void routes_at(struct fq_detector *d, int t)
{
	for (int i = 1; i <= HOSTS; i++)
		for (int j = 1; j <= HOSTS; j++) {
			char names[9][64], ni[8], nj[8];
			const char *comps[9];
			size_t n;

			if (i == j || i == untraced[0] || j == untraced[0] || i == untraced[1] ||
			    j == untraced[1])
				continue;
			n = route(i, j, names, comps);
			snprintf(ni, sizeof(ni), "n%d", i);
			snprintf(nj, sizeof(nj), "n%d", j);
			if (avoid_leaf && (leaf_of(i) == avoid_leaf || leaf_of(j) == avoid_leaf) && n > 5 &&
			    !strcmp(names[4], "spine1")) {
				/* over spine3 instead */
				snprintf(names[3], 64, "leaf%d~spine3", leaf_of(i));
				snprintf(names[4], 64, "spine3");
				snprintf(names[5], 64, "leaf%d~spine3", leaf_of(j));
			}
			fq_detector_route(d, ni, "rail0", nj, "rail0", comps, n, S(t));
		}
}

static void routes(struct fq_detector *d)
{
	routes_at(d, 0);
}

typedef bool (*delayed_fn)(int i, int j);

static delayed_fn lossy, down; /* pairs (i < j) losing 3 probes of 50 a window; DOWN */

/* One window [t-1, t] of every directed pair (n_i reports i -> j forward),
 * 2000 us where delayed says, else 20 us; then the tick. */
static void second(struct fq_detector *d, int t, delayed_fn delayed)
{
	for (int i = 1; i <= HOSTS; i++)
		for (int j = i + 1; j <= HOSTS; j++) {
			char ni[8], nj[8];
			struct fq_det_probe p = {.nic = "rail0",
						 .remote_nic = "rail0",
						 .start_ns = S(t - 1),
						 .end_ns = S(t),
						 .sent = 50,
						 .answered = 50,
						 .up = true};
			double fwd = delayed && delayed(i, j) ? 2000 : 20,
			       rev = delayed && delayed(j, i) ? 2000 : 20;

			snprintf(ni, sizeof(ni), "n%d", i);
			snprintf(nj, sizeof(nj), "n%d", j);
			p.node = ni, p.remote_node = nj;
			p.owd_fwd_p50_ns = US(fwd), p.owd_fwd_p90_ns = US(fwd), p.owd_fwd_p99_ns = US(fwd);
			p.owd_rev_p50_ns = US(rev), p.owd_rev_p90_ns = US(rev), p.owd_rev_p99_ns = US(rev);
			if (lossy && lossy(i, j))
				p.lost = 3, p.answered = 47;
			if (down && down(i, j))
				p.lost = 50, p.answered = 0, p.up = false;
			fq_detector_probe(d, &p);
		}
	fq_detector_tick(d, S(t) + 1);
	collect(d);
}

static bool via_spine2(int i, int j)
{
	return leaf_of(i) != leaf_of(j) && spine_of(i, j) == 2;
}

static bool via_leaf1_spine2(int i, int j)
{
	return via_spine2(i, j) && (leaf_of(i) == 1 || leaf_of(j) == 1);
}

/* spine2's links loaded one way only: leaf1 -> spine2 and spine2 -> leaf3 */
static bool spine2_some_ways(int i, int j)
{
	return via_spine2(i, j) && (leaf_of(i) == 1 || leaf_of(j) == 3);
}

static bool via_spine1(int i, int j)
{
	return leaf_of(i) != leaf_of(j) && spine_of(i, j) == 1;
}

static bool into_n3(int i, int j)
{
	(void)i;
	return j == 3;
}

static bool two_apart(int i, int j)
{
	return (i == 1 && j == 2) || (i == 7 && j == 8);
}

static unsigned count_delayed(delayed_fn f)
{
	unsigned n = 0;

	for (int i = 1; i <= HOSTS; i++)
		for (int j = 1; j <= HOSTS; j++)
			n += i != j && f(i, j);
	return n;
}

/* Every path_delay opened is a member of incident: at its OPEN or by a MEMBER. */
static size_t members(uint64_t incident)
{
	size_t n = 0;

	for (size_t i = 0; i < nrecs; i++) {
		const struct rec *r = &recs[i];

		if (r->kind == FQ_DET_OPEN && !strcmp(r->akind, "path_delay"))
			for (size_t k = 0; k < nrecs; k++)
				if ((k == i && r->incident == incident) ||
				    (recs[k].kind == FQ_DET_MEMBER && recs[k].handle == r->handle &&
				     recs[k].incident == incident)) {
					n++;
					break;
				}
	}
	return n;
}

/* The fabric hints given (HINT actions with a component); of handle unless 0. */
static size_t fabric_hints(uint64_t handle)
{
	size_t n = 0;

	for (size_t i = 0; i < nrecs; i++)
		n += recs[i].kind == FQ_DET_HINT && recs[i].component[0] &&
		     (!handle || recs[i].handle == handle);
	return n;
}

/* The drain or resume hints given (HINT actions with a node). */
static size_t node_hints(void)
{
	size_t n = 0;

	for (size_t i = 0; i < nrecs; i++)
		n += recs[i].kind == FQ_DET_HINT && recs[i].node[0];
	return n;
}

/* The fabric hint of incident handle (a blank one: none). */
static const struct rec *fabric_hint(uint64_t handle)
{
	static const struct rec none;

	for (size_t i = 0; i < nrecs; i++)
		if (recs[i].kind == FQ_DET_HINT && recs[i].component[0] && recs[i].handle == handle)
			return &recs[i];
	return &none;
}

static struct fq_detector *fabric(void)
{
	struct fq_detector *d = make();

	reset();
	routes(d);
	for (int t = 1; t <= 8; t++) /* the paths' baselines */
		second(d, t, NULL);
	return d;
}

static void test_spine(void)
{
	struct fq_detector *d = fabric();
	const struct rec *o;
	unsigned want = count_delayed(via_spine2);

	is_int(count(FQ_DET_OPEN, NULL), 0, "8 s of a healthy fabric: no anomaly");
	/* a lane of job 7 n1 -> n5 (routed over spine2) and one of job 9 n2 -> n5 (over spine3) */
	ok(via_spine2(1, 5) && !via_spine2(2, 5), "the model's routes for the lanes below");
	lane(d, 7, 0, 1, 0, "n1", "rail0", "n5", "rail0", 9, 20, 30);
	lane(d, 9, 0, 1, 0, "n2", "rail0", "n5", "rail0", 9, 20, 30);
	for (int t = 9; t <= 14; t++)
		second(d, t, via_spine2);
	is_int(count(FQ_DET_OPEN, "fabric_delay"), 1, "spine2 congested: one fabric_delay");
	o = find_open("fabric_delay", NULL, NULL);
	if (!o)
		o = &recs[0];
	is_str(o->component, "spine2", "blamed on spine2");
	is_str(o->node, "", "no node: a component");
	like(o->summary, "spine2 congested: ", "summary names it");
	like(o->evidence, "\"normal_through\":0", "evidence: no path through it healthy");
	is_int(count(FQ_DET_OPEN, "path_delay"), want, "a path_delay per delayed direction");
	is_int(members(o->handle), want, "every one of them a member of spine2's incident");
	ok(attached(o->handle, 7, 0) >= 0, "job 7 (its lane's NIC pair routed over spine2) attached");
	ok(attached(o->handle, 9, 0) < 0, "job 9 (routed over spine3) not");
	is_int(fabric_hints(0), 1, "one fabric hint");
	is_str(fabric_hint(o->handle)->component, "spine2", "... for spine2's incident");
	like(fabric_hint(o->handle)->reason, "check spine2: its buffer and queue occupancy, ",
	     "... what to check there");
	like(fabric_hint(o->handle)->reason, "isolate it", "... and to isolate it if it goes on");
	ok(!fabric_hint(o->handle)->node[0] && !fabric_hint(o->handle)->resume, "... no node, no resume");
	is_int(node_hints(), 0, "no drain hint: no node is at fault");
	for (int t = 15; t <= 50; t++)
		second(d, t, NULL);
	is_int(count(FQ_DET_OPEN, "fabric_delay"), 1, "still one after it is gone");
	ok(find_kind(FQ_DET_CLOSE, o->handle) != NULL, "closed once the delays stopped");
	is_int(count(FQ_DET_HINT, NULL), 1, "one hint in all: extending the incident gave none");
	fq_detector_destroy(d);
}

/* A lane's own route, as its sending agent traces it (up to the far leaf:
 * its trace stops before the far host), over spine sp; first: its first
 * component, when not its NIC (a lane that moved to another NIC). */
static void lane_route(struct fq_detector *d, uint64_t job, int i, int j, int sp, const char *first, int t)
{
	char names[9][64];
	const char *comps[9];
	size_t n = route_via(i, j, sp, names, comps);

	if (first)
		comps[0] = first;
	fq_detector_lane_route(d, &(struct fq_det_lane_route){.job_id = job,
							      .src_rank = 0,
							      .dst_rank = 1,
							      .lane = 0,
							      .comps = comps,
							      .n = n - 2,
							      .now_ns = S(t)});
}

/* Steps attached by their lanes' own routes where the agents traced them:
 * ECMP hashes a lane apart from its NIC pair's probes. */
static void test_lane_routes(void)
{
	struct fq_detector *d = fabric();
	const struct rec *o;

	ok(spine_of(2, 5) == 3 && spine_of(1, 5) == 2 && spine_of(3, 5) == 1 && spine_of(1, 6) == 2 &&
	       spine_of(2, 6) == 3,
	   "the model's probe routes for the lanes below");
	lane(d, 21, 0, 1, 0, "n2", "rail0", "n5", "rail0", 9, 20, 30);
	lane(d, 22, 0, 1, 0, "n1", "rail0", "n5", "rail0", 9, 20, 30);
	lane(d, 23, 0, 1, 0, "n3", "rail0", "n5", "rail0", 9, 20, 30);
	lane(d, 24, 0, 1, 0, "n1", "rail0", "n6", "rail0", 9, 20, 30);
	lane(d, 25, 0, 1, 0, "n2", "rail0", "n6", "rail0", 9, 20, 30);
	lane_route(d, 21, 2, 5, 2, NULL, 9);       /* probes over spine3, the lane over spine2 */
	lane_route(d, 22, 1, 5, 1, NULL, 9);       /* probes over spine2, the lane over spine1 */
	lane_route(d, 25, 2, 6, 2, "n2/rail1", 9); /* a route from another NIC: not this lane's */
	for (int t = 9; t <= 14; t++)
		second(d, t, via_spine2);
	o = find_open("fabric_delay", NULL, NULL);
	if (!o)
		o = &recs[0];
	is_str(o->component, "spine2", "spine2 congested: blamed on spine2");
	ok(attached(o->handle, 21, 0) >= 0,
	   "job 21 attached: its lane's own route crosses spine2 (its probes' not)");
	ok(attached(o->handle, 22, 0) < 0,
	   "job 22 not: its lane's own route avoids spine2 (its probes' crosses it)");
	ok(attached(o->handle, 24, 0) >= 0,
	   "job 24 attached by its NIC pair's probe route: its lane not traced");
	ok(attached(o->handle, 25, 0) < 0, "job 25 not: a route from another NIC is not its lane's");
	ok(attached(o->handle, 23, 0) < 0, "job 23 not yet: no route of its lane, its probes over spine1");
	lane_route(d, 23, 3, 5, 2, NULL, 15);
	collect(d);
	ok(attached(o->handle, 23, 0) >= 0, "... attached as soon as its lane's route over spine2 arrives");
	fq_detector_destroy(d);
}

static void test_link(void)
{
	struct fq_detector *d = fabric();
	const struct rec *o;

	for (int t = 9; t <= 14; t++)
		second(d, t, via_leaf1_spine2);
	is_int(count(FQ_DET_OPEN, "fabric_delay"), 1, "one link congested: one fabric_delay");
	o = find_open("fabric_delay", NULL, NULL);
	if (!o)
		o = &recs[0];
	is_str(o->component, "leaf1~spine2", "blamed on the link, not spine2 nor leaf1");
	is_int(members(o->handle), count_delayed(via_leaf1_spine2), "every delayed path its member");
	is_int(fabric_hints(o->handle), 1, "one fabric hint");
	like(fabric_hint(o->handle)->reason,
	     "check the link leaf1~spine2: its utilisation each way, the ports' queue, ECN-marked and PFC "
	     "pause counters, and whether ECMP puts more than its share",
	     "... the link's load, its queues and its ECMP share");
	is_int(node_hints(), 0, "no drain hint");
	fq_detector_destroy(d);
}

static bool via_leaf1(int i, int j)
{
	return leaf_of(i) == 1 || leaf_of(j) == 1;
}

/* A leaf delaying all its traffic: its hint says its hosts have no other way. */
static void test_leaf(void)
{
	struct fq_detector *d = fabric();
	const struct rec *o;

	for (int t = 9; t <= 14; t++)
		second(d, t, via_leaf1);
	o = find_open("fabric_delay", NULL, NULL);
	is_str(o ? o->component : "", "leaf1", "every path to or from leaf1's hosts delayed: leaf1 blamed");
	like(fabric_hint(o ? o->handle : 0)->reason, "check leaf1: its buffer and queue occupancy",
	     "its fabric hint: what to check on leaf1");
	like(fabric_hint(o ? o->handle : 0)->reason, "its hosts reach the fabric through it alone",
	     "its fabric hint: a leaf's hosts cannot be routed around it");
	is_int(node_hints(), 0, "no drain hint for its hosts");
	fq_detector_destroy(d);
}

/* A spine whose queues fill in some directions only (a job loads some of
 * its links one way): half the paths through it are slow, each of its
 * loaded links' paths all are; those links all hang off spine2. */
static void test_spine_some_ways(void)
{
	struct fq_detector *d = fabric();
	const struct rec *o;

	for (int t = 9; t <= 14; t++)
		second(d, t, spine2_some_ways);
	is_int(count(FQ_DET_OPEN, "fabric_delay"), 1, "spine2 loaded one way on two links: one fabric_delay");
	o = find_open("fabric_delay", NULL, NULL);
	is_str(o ? o->component : "", "spine2", "blamed on spine2, the switch both delayed links hang off");
	is_int(members(o ? o->handle : 0), count_delayed(spine2_some_ways), "every delayed path its member");
	fq_detector_destroy(d);
}

/* Routes come seconds after the first probe windows (agents trace each
 * path when first probed; an answer lost on a congested link is tried
 * again 10 s later). spine1 queueing as above while n3's and n6's paths
 * have no route yet: their delay cannot be told from their NICs', so
 * they wait ROUTE_WAIT_NS (12 s) from when first heard of (t = 1): with
 * the routes at t = 11, no NIC is named slow; without them, judged on
 * what is known from the first tick past the wait (t = 13, 12 s and a
 * nanosecond on): by default their paths within their leaves, not
 * delayed, clear them; where a share of a NIC's paths is enough
 * (slow_nic_share 0.8), n3 and n6 are named then. */
static void test_routes_late(void)
{
	for (int late = 0; late < 3; late++) {
		struct fq_detector *d = make_share(late == 2 ? 0.8 : 0);
		int named_at = 0;

		reset();
		untraced[0] = 3, untraced[1] = 6;
		routes(d);
		for (int t = 1; t <= 5; t++)
			second(d, t, NULL);
		for (int t = 6; t <= 16 && !named_at; t++) {
			if (t == 11 && !late) {
				untraced[0] = untraced[1] = 0;
				routes_at(d, t);
			}
			second(d, t, via_spine1);
			if (count(FQ_DET_OPEN, "slow_receiver") + count(FQ_DET_OPEN, "slow_sender"))
				named_at = t;
		}
		if (!late)
			is_int(named_at, 0,
			       "spine1 queueing, n3's and n6's routes at t = 11: no NIC named slow");
		else if (late == 1)
			is_int(named_at, 0,
			       "their routes never come: no NIC named slow, their healthy paths clear them");
		else
			ok(named_at == 13 && find_open("slow_sender", "n3", "rail0") &&
			       find_open("slow_sender", "n6", "rail0"),
			   "... at slow_nic_share 0.8: n3, n6 named slow senders at t = 13 (%d), judged "
			   "without",
			   named_at);
		untraced[0] = untraced[1] = 0;
		fq_detector_destroy(d);
	}
}

static void test_not_fabric(void)
{
	struct fq_detector *d = fabric();
	size_t nslow;

	for (int t = 9; t <= 14; t++)
		second(d, t, into_n3);
	is_int(count(FQ_DET_OPEN, "path_delay"), HOSTS - 1, "every path into n3 delayed");
	is_int(count(FQ_DET_OPEN, "fabric_delay"), 0, "one NIC's paths: the NIC rules', no fabric blame");
	ok(find_open("slow_receiver", "n3", "rail0") && count(FQ_DET_OPEN, "slow_receiver") == 1 &&
	       count(FQ_DET_OPEN, "slow_sender") == 0,
	   "... n3/rail0 a slow receiver, the one slow NIC");
	fq_detector_destroy(d);

	/* spine1 queueing: the pairs' hash sends everything n3 and n6 send to
	 * other leaves over it (6 of their 7 paths), but each such path
	 * crosses a link queueing for others' paths too: the fabric's delay,
	 * not theirs, and no NIC is named slow */
	d = fabric();
	for (int t = 9; t <= 14; t++)
		second(d, t, via_spine1);
	is_int(count(FQ_DET_OPEN, "path_delay"), count_delayed(via_spine1),
	       "spine1 queueing: every path over it delayed");
	ok(find_open("fabric_delay", NULL, NULL) != NULL, "... blamed on the fabric");
	nslow = count(FQ_DET_OPEN, "slow_receiver") + count(FQ_DET_OPEN, "slow_sender");
	is_int(nslow, 0, "no NIC named slow (n3, n6: 6 of 7 paths from them delayed)");
	for (size_t i = 0; nslow && i < nrecs; i++)
		if (recs[i].kind == FQ_DET_OPEN && strstr(recs[i].akind, "slow_"))
			diag("%s", recs[i].summary);
	fq_detector_destroy(d);

	d = fabric();
	for (int t = 9; t <= 14; t++)
		second(d, t, two_apart);
	is_int(count(FQ_DET_OPEN, "path_delay"), 2, "two delayed paths on two leaves");
	is_int(count(FQ_DET_OPEN, "fabric_delay"), 0, "fewer than 3, nothing shared: no blame");
	fq_detector_destroy(d);
}

/* Does the round trip of i -> j cross the cable leaf a ~ spine s? */
static bool trip_crosses(int i, int j, int a, int s)
{
	int li = leaf_of(i), lj = leaf_of(j);

	return li != lj && ((spine_of(i, j) == s && (li == a || lj == a)) ||
			    (spine_of(j, i) == s && (li == a || lj == a)));
}

static bool over_leaf1_spine2(int i, int j)
{
	return trip_crosses(i, j, 1, 2);
}

static bool over_leaf2_spine1(int i, int j)
{
	return trip_crosses(i, j, 2, 1);
}

static bool touches_n3(int i, int j)
{
	return i == 3 || j == 3;
}

static bool spine2_trip(int i, int j)
{
	return via_spine2(i, j) || via_spine2(j, i);
}

static const struct rec *loss_open(void)
{
	const struct rec *o = find_open("fabric_loss", NULL, NULL);

	return o ? o : &recs[0];
}

static void test_loss(void)
{
	struct fq_detector *d = fabric();
	const struct rec *o;

	lossy = over_leaf1_spine2;
	for (int t = 9; t <= 12; t++)
		second(d, t, NULL);
	is_int(count(FQ_DET_OPEN, "fabric_loss"), 1, "a cable dropping 6 %% of probes: one fabric_loss");
	o = loss_open();
	is_str(o->component, "leaf1~spine2", "blamed on the cable leaf1~spine2");
	like(o->summary, "leaf1~spine2 dropping packets: ", "summary names it");
	like(o->evidence, "\"symptom\":\"loss\"", "evidence: the symptom");
	is_int(count(FQ_DET_OPEN, "fabric_delay"), 0, "no delay blamed");
	is_int(fabric_hints(0), 1, "one fabric hint");
	like(fabric_hint(o->handle)->reason,
	     "check the cable leaf1~spine2: both ends' optics (DOM: rx/tx power), the ports' error and "
	     "discard counters",
	     "... the cable's optics and counters");
	like(fabric_hint(o->handle)->reason, "reseat or replace the cable or optic",
	     "... then reseat or replace");
	is_int(node_hints(), 0, "no drain hint: no node is at fault");
	lossy = NULL;
	fq_detector_destroy(d);

	/* leaf2~spine1 down: one window of loss, then the routes move off it */
	d = fabric();
	lossy = over_leaf2_spine1;
	second(d, 9, NULL);
	lossy = NULL;
	avoid_leaf = 2, avoid_spine = 1;
	routes_at(d, 9);
	routes_at(d, 10); /* the topology rebuilt: the same routes again */
	second(d, 10, NULL);
	second(d, 11, NULL);
	is_int(count(FQ_DET_OPEN, "fabric_loss"), 1, "a cable down, its paths re-routed: one fabric_loss");
	is_str(loss_open()->component, "leaf2~spine1",
	       "blamed on the cable the paths crossed when they lost probes");
	avoid_leaf = avoid_spine = 0;
	fq_detector_destroy(d);

	d = fabric();
	down = touches_n3;
	for (int t = 9; t <= 12; t++)
		second(d, t, NULL);
	down = NULL;
	is_int(count(FQ_DET_OPEN, "fabric_loss"), 0,
	       "n3's NIC down (its paths DOWN): the NIC rules', no fabric blame");
	fq_detector_destroy(d);

	d = fabric();
	lossy = spine2_trip;
	for (int t = 9; t <= 14; t++)
		second(d, t, via_spine2);
	lossy = NULL;
	o = find_open("fabric_delay", NULL, NULL);
	is_str(o ? o->component : "", "spine2", "spine2 delaying and dropping: the delay blamed on spine2");
	is_str(loss_open()->component, "spine2", "... and the loss");
	ok(o && loss_open()->incident == o->handle, "one incident: the loss blame a member of the delay's");
	is_int(fabric_hints(0), 1, "one fabric hint, the incident's: none for the member");
	is_int(fabric_hints(o ? o->handle : 0), 1, "... spine2's");
	fq_detector_destroy(d);

	/* paths losing probes from their first window on (coming up: the far
	 * agent starting) are not a lossy fabric */
	d = make();
	reset();
	routes(d);
	lossy = over_leaf1_spine2;
	for (int t = 1; t <= 4; t++)
		second(d, t, NULL);
	lossy = NULL;
	is_int(count(FQ_DET_OPEN, "fabric_loss"), 0,
	       "losses before a path ever answered cleanly: not counted");
	fq_detector_destroy(d);

	/* a loaded spine drops on one link first, then delays on all */
	d = fabric();
	lossy = over_leaf1_spine2;
	second(d, 9, NULL);
	is_str(loss_open()->component, "leaf1~spine2", "spine2's busiest link drops first: that link blamed");
	for (int t = 10; t <= 14; t++)
		second(d, t, via_spine2);
	lossy = NULL;
	o = find_open("fabric_delay", NULL, NULL);
	is_str(o ? o->component : "", "spine2", "then spine2 delays: spine2 blamed");
	is_int(o ? (int)o->incident : -1, 0, "... as the incident");
	{
		const struct rec *m = NULL;

		for (size_t i = 0; i < nrecs; i++)
			if (recs[i].kind == FQ_DET_MEMBER && recs[i].handle == loss_open()->handle)
				m = &recs[i];
		ok(o && m && m->incident == o->handle, "the link's loss blame part of spine2's incident");
	}
	is_int(fabric_hints(loss_open()->handle), 1, "the link's incident had its hint when it opened");
	is_int(fabric_hints(o ? o->handle : 0), 1, "spine2's incident has one, the one that counts now");
	is_int(fabric_hints(0), 2, "... and no other: taking in the link's incident gave none");
	like(fabric_hint(o ? o->handle : 0)->reason, "check spine2: ", "... what to check on spine2");
	/* then spine2 drops on every link: the loss blamed on spine2 joins
	 * the incident, no second one */
	lossy = spine2_trip;
	for (int t = 15; t <= 20; t++)
		second(d, t, via_spine2);
	lossy = NULL;
	{
		const struct rec *l = NULL;

		for (size_t i = 0; i < nrecs; i++)
			if (recs[i].kind == FQ_DET_OPEN && !strcmp(recs[i].akind, "fabric_loss") &&
			    !strcmp(recs[i].component, "spine2"))
				l = &recs[i];
		ok(o && l && l->incident == o->handle,
		   "spine2's drops, blamed on spine2 later, are part of the same incident");
	}
	is_int(fabric_hints(0), 2, "... and give no hint");
	is_int(node_hints(), 0, "no drain hint in all");
	fq_detector_destroy(d);
}

/* The differences from the expected topology: one anomaly each while the
 * topology shows it; a declared link no route crosses is not one. */
static void test_topology_mismatch(void)
{
	struct fq_detector *d = make();
	const char *kinds[] = {"host_moved", "link_not_seen", "switch_undeclared"};
	const char *texts[] = {"n3/rail1 is on leaf2, declared on leaf1",
			       "leaf1~spine4: declared, no route crosses it",
			       "198.18.120.1: a switch the file does not declare"};
	const struct rec *o;

	reset();
	fq_detector_topology(d, kinds, texts, 3, S(10));
	fq_detector_topology(d, kinds, texts, 1, S(12)); /* one only for a moment: routes still arriving */
	fq_detector_topology(d, kinds, texts, 3, S(14));
	fq_detector_tick(d, S(19));
	collect(d);
	is_int(count(FQ_DET_OPEN, "topology_mismatch"), 0, "differences younger than 10 s: no anomaly yet");
	fq_detector_tick(d, S(20));
	collect(d);
	is_int(count(FQ_DET_OPEN, "topology_mismatch"), 1,
	       "the one shown for 10 s: an anomaly (a link not seen left out)");
	fq_detector_tick(d, S(24));
	collect(d);
	is_int(count(FQ_DET_OPEN, "topology_mismatch"), 2, "the other, 10 s after it came back: two");
	o = find_open("topology_mismatch", NULL, NULL);
	like(o ? o->summary : "", "topology: ", "summary: the difference's text");
	is_str(o ? o->node : "-", "", "no node: not a node's");
	fq_detector_topology(d, kinds, texts, 3, S(30));
	fq_detector_tick(d, S(100));
	collect(d);
	is_int(count(FQ_DET_OPEN, "topology_mismatch"), 2,
	       "still there: extended, not reopened, not closed when quiet");
	is_int(count(FQ_DET_CLOSE, NULL), 0, "none closed");
	fq_detector_topology(d, kinds, texts, 1, S(101));
	collect(d);
	is_int(count(FQ_DET_CLOSE, NULL), 1,
	       "the undeclared switch gone from the routes: its anomaly closes");
	fq_detector_topology(d, NULL, NULL, 0, S(102));
	collect(d);
	is_int(count(FQ_DET_CLOSE, NULL), 2, "no difference left: both closed");
	fq_detector_destroy(d);
}

int main(void)
{
	test_spine();
	test_lane_routes();
	test_link();
	test_leaf();
	test_spine_some_ways();
	test_not_fabric();
	test_routes_late();
	test_loss();
	test_topology_mismatch();
	return done_testing();
}
