/*
 * test-rates: the controller's rates between network classes
 * (controller/rates.h) on lanes fed tick by tick: who shares which link,
 * when it is congested, the rate each lower-class path gets, its renewal,
 * its lift when the sharing ends, and what does not trigger it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "controller/rates.h"
#include "tests/unit/tap.h"

#define S(x)  ((int64_t)((x)*1e9))
#define MBS   1000000.0 /* bytes/s */
#define BASE  200       /* us: the path's RTT floor */
#define LEAF1 "leaf1"

/* Two leaves under one spine: n1, n2 on leaf1, n3, n4 on leaf2. */
static const char *const R_UP[] = {"leaf1", "spine1", "leaf2"};
static const char *const R_DOWN[] = {"leaf2", "spine1", "leaf1"};

/* One second's report of a lane ending at t: rate bytes/s, of them acked
 * acknowledged (0: not said), queue q us. */
static void feed_acked(struct fq_rates *r, uint64_t job, uint32_t lane, const char *node, const char *rnode,
		       double rate, double acked, unsigned q, int64_t t)
{
	struct fq_rates_lane l = {.job = job,
				  .step = 0,
				  .src_rank = 0,
				  .dst_rank = 1,
				  .lane = lane,
				  .node = node,
				  .nic = "rail0",
				  .remote_node = rnode,
				  .remote_nic = "rail0",
				  .start_ns = t - S(1),
				  .end_ns = t,
				  .bytes = (uint64_t)rate,
				  .rtt_us = BASE + q,
				  .min_rtt_us = BASE,
				  .acked_bytes = (uint64_t)acked,
				  .now_ns = t};
	if (fq_rates_lane(r, &l) < 0)
		diag("lane %llu/%u refused", (unsigned long long)job, lane);
}

static void feed(struct fq_rates *r, uint64_t job, uint32_t lane, const char *node, const char *rnode,
		 double rate, unsigned q, int64_t t)
{
	feed_acked(r, job, lane, node, rnode, rate, 0, q, t);
}

/* The advice of the last tick: count, and the one for job (rate, -1 none). */
static int take(struct fq_rates *r, uint64_t job, int64_t *rate, struct fq_rates_advice *out)
{
	struct fq_rates_advice a;
	int n = 0;

	*rate = -1;
	while (fq_rates_next(r, &a) == 1) {
		n++;
		if (a.job == job) {
			*rate = (int64_t)a.rate;
			if (out)
				*out = a;
		}
	}
	return n;
}

static struct fq_rates *setup(void)
{
	struct fq_rates_config c;
	struct fq_rates *r;
	const char *const n1[] = {"n1"}, *const n2[] = {"n2"};

	(void)n1;
	(void)n2;
	fq_rates_config_defaults(&c);
	r = fq_rates_create(&c);
	fq_rates_step(r, 1, 0, "latency", 0, 0); /* prio=0 */
	fq_rates_step(r, 2, 0, "bulk", 0, 4);    /* weight=4 */
	fq_rates_path_route(r, "n1", "rail0", "n3", "rail0", R_UP, 3);
	fq_rates_path_route(r, "n2", "rail0", "n4", "rail0", R_UP, 3);
	fq_rates_path_route(r, "n3", "rail0", "n1", "rail0", R_DOWN, 3);
	fq_rates_path_route(r, "n4", "rail0", "n2", "rail0", R_DOWN, 3);
	return r;
}

/* A tick at t: the latency job's one lane (lat bytes/s) and the bulk job's
 * four (bulk bytes/s each, queue q us), n1 -> n3 and n2 -> n4. */
static void second(struct fq_rates *r, double lat, double bulk, unsigned q, int64_t t)
{
	if (lat > 0)
		feed(r, 1, 0, "n1", "n3", lat, 50, t);
	for (uint32_t k = 0; k < 4 && bulk > 0; k++)
		feed(r, 2, k, "n2", "n4", bulk, q, t);
	fq_rates_tick(r, t);
}

/* A new one whose bulk path has 4.7 MB/s a lane: two ticks shared and
 * congested (24 MB/s), the advice taken. */
static struct fq_rates *capped(int64_t *t)
{
	struct fq_rates *r = setup();
	int64_t rate;

	second(r, 4 * MBS, 5 * MBS, 10000, *t += S(1));
	second(r, 4 * MBS, 5 * MBS, 10000, *t += S(1));
	take(r, 2, &rate, NULL);
	return r;
}

int main(void)
{
	struct fq_rates *r;
	struct fq_rates_advice a;
	struct fq_rates_config c;
	int64_t rate, t = S(100);
	int n;

	plan(28);
	fq_rates_config_defaults(&c);
	c.util = 1.5;
	ok(!fq_rates_create(&c), "a util above 1 is refused");

	/* 1. The bulk job alone fills the spine (a 10 ms queue): no sharing. */
	r = setup();
	second(r, 0, 6 * MBS, 10000, t += S(1));
	n = take(r, 2, &rate, NULL);
	ok(n == 0, "bulk alone on a congested link: no advice (%d)", n);
	is_int(fq_rates_managed_links(r), 0, "no link managed");

	/* 2. Both, the bulk job's queue standing: its capacity is the sum. */
	second(r, 4 * MBS, 5 * MBS, 10000, t += S(1));
	n = take(r, 2, &rate, &a);
	/* 24 MB/s seen while congested; 0.95 x 24 - 4 = 18.8 MB/s for 4 lanes */
	ok(n == 1 && rate == 4700000,
	   "shared and congested: the bulk path gets 4.7 MB/s per lane (%lld, %d advice)", (long long)rate,
	   n);
	is_str(a.node, "n2", "to the sending node's agent");
	ok(!strcmp(a.nic, "rail0") && !strcmp(a.remote_node, "n4") && !strcmp(a.remote_nic, "rail0"),
	   "for its path rail0 -> n4/rail0");
	ok(a.for_job == 1 && a.capacity == 24000000, "leaving room for job 1, capacity %llu B/s",
	   (unsigned long long)a.capacity);
	ok(!strcmp(a.link, "n2/rail0>") || !strcmp(a.link, "leaf1>spine1") || !strcmp(a.link, ">n4/rail0") ||
	       !strcmp(a.link, "spine1>leaf2"),
	   "on a link both cross: %s", a.link);
	is_int(fq_rates_managed_links(r), 2,
	       "managed: leaf1>spine1 and spine1>leaf2 (the latency lane's too)");

	/* 3. Capped, no queue: the link stays managed while shared; an
	 * unchanged rate is not sent again before renew_ns. */
	second(r, 4 * MBS, 4.7 * MBS, 0, t += S(1));
	n = take(r, 2, &rate, NULL);
	ok(n == 0, "the same rate next tick: not resent (%d)", n);
	second(r, 6 * MBS, 4.7 * MBS, 0, t += S(1));
	n = take(r, 2, &rate, NULL);
	/* 0.95 x 24 - 6 = 16.8 -> 4.2 per lane: a change above 10 % */
	ok(n == 1 && rate == 4200000, "the latency job sends more: 4.2 MB/s per lane at once (%lld)",
	   (long long)rate);
	second(r, 6 * MBS, 4.2 * MBS, 0, t += S(1));
	second(r, 6 * MBS, 4.2 * MBS, 0, t += S(1));
	second(r, 6 * MBS, 4.2 * MBS, 0, t += S(1));
	n = take(r, 2, &rate, NULL);
	ok(n == 1 && rate == 4200000, "renewed after renew_ns (%lld)", (long long)rate);

	/* 4. The latency job stops: held hold_ns, then lifted (rate 0). */
	{
		int lifts = 0, held = 0;

		for (int k = 0; k < 6; k++) {
			second(r, 0, 4.2 * MBS, 0, t += S(1));
			take(r, 2, &rate, NULL);
			lifts += rate == 0;
			held += fq_rates_capped_lanes(r) == 4;
		}
		ok(!lifts && held == 6,
		   "held while the latency job is away for a tick (its report may be late) and hold_ns: %d "
		   "lifts, 4 lanes capped %d of 6 ticks",
		   lifts, held);
	}
	second(r, 0, 4.2 * MBS, 0, t += S(1));
	n = take(r, 2, &rate, NULL);
	ok(n == 1 && rate == 0, "lifted once the sharing has ended for hold_ns (%lld)", (long long)rate);
	second(r, 0, 6 * MBS, 10000, t += S(1));
	n = take(r, 2, &rate, NULL);
	ok(n == 0, "nothing more for the bulk alone (%d)", n);

	/* 4b. A tick that finds no report of two of the bulk job's lanes
	 * (they come on their own clocks, and the next tick brings two):
	 * they keep their rate that tick, so the other two are not given
	 * theirs as well (nor is that tick a capacity sample: two ticks of
	 * 24 MB/s read before it). Two ticks without: idle, but a lane idle
	 * keeps its share for hold_ns (an alltoall's lanes pause between
	 * iterations); past it, or gone (stale_ns), the two left share the
	 * budget. */
	fq_rates_destroy(r);
	r = capped(&t);
	feed(r, 1, 0, "n1", "n3", 4 * MBS, 50, t + S(1));
	for (uint32_t k = 0; k < 2; k++)
		feed(r, 2, k, "n2", "n4", 5 * MBS, 10000, t + S(1));
	fq_rates_tick(r, t += S(1));
	n = take(r, 2, &rate, NULL);
	ok(n == 0 && fq_rates_capped_lanes(r) == 4,
	   "two of four lanes' reports late a tick: 4.7 MB/s a lane kept, not doubled (%d advice)", n);
	{
		int64_t got = -1;
		int k, other = 0;

		for (k = 1; k <= 8 && got != 9400000; k++) {
			feed(r, 1, 0, "n1", "n3", 4 * MBS, 50, t + S(1));
			for (uint32_t l = 0; l < 2; l++)
				feed(r, 2, l, "n2", "n4", 5 * MBS, 10000, t + S(1));
			fq_rates_tick(r, t += S(1));
			take(r, 2, &got, NULL);
			other += got != -1 && got != 9400000 && got != 4700000;
		}
		ok(got == 9400000 && k - 1 >= 5 && !other,
		   "... without them: 4.7 MB/s a lane kept for hold_ns, the two left get 9.4 MB/s a lane "
		   "%d ticks on (%d other rates)",
		   k - 1, other);
	}

	/* 4c. Lanes idle a tick (an alltoall between iterations: reported,
	 * below active_rate) keep their share: the one active lane of four
	 * is not given the whole budget. */
	fq_rates_destroy(r);
	r = capped(&t);
	feed(r, 1, 0, "n1", "n3", 4 * MBS, 50, t + S(1));
	feed(r, 2, 0, "n2", "n4", 4.7 * MBS, 10000, t + S(1));
	for (uint32_t l = 1; l < 4; l++)
		feed(r, 2, l, "n2", "n4", 1000, 0, t + S(1));
	fq_rates_tick(r, t += S(1));
	n = take(r, 2, &rate, NULL);
	ok(n == 0 && fq_rates_capped_lanes(r) == 4,
	   "three of four lanes idle a tick: 4.7 MB/s a lane kept, not 18.8 for the one (%d advice, %lld)", n,
	   (long long)rate);

	/* 5. Sharing without congestion: no rate. */
	fq_rates_destroy(r);
	r = setup();
	second(r, 4 * MBS, 3 * MBS, 500, t += S(1));
	second(r, 4 * MBS, 3 * MBS, 500, t += S(1));
	ok(take(r, 2, &rate, NULL) == 0, "shared but no queue above 2 ms: no advice");

	/* 6. The step ends: its path lifted at the next tick. */
	second(r, 4 * MBS, 5 * MBS, 10000, t += S(1));
	take(r, 2, &rate, NULL);
	ok(rate > 0, "congested: a rate again (%lld)", (long long)rate);
	fq_rates_step_end(r, 2, 0);
	fq_rates_tick(r, t += S(1));
	take(r, 2, &rate, NULL);
	ok(rate == 0, "the bulk step ended: its advice lifted");
	fq_rates_destroy(r);

	/* 7. Two lower classes: the budget split by weight, evenly within a
	 * class; the floor (min_share). No routes: the NIC's own link. */
	r = setup();
	fq_rates_step(r, 3, 0, "scavenger", 0, 1);
	for (int k = 0; k < 1; k++) {
		feed(r, 1, 0, "n5", "n9", 2 * MBS, 0, t + S(1)); /* they share n5's link only */
		feed(r, 2, 0, "n5", "n6", 6 * MBS, 8000, t + S(1));
		feed(r, 2, 1, "n5", "n6", 6 * MBS, 8000, t + S(1));
		feed(r, 3, 0, "n5", "n7", 6 * MBS, 8000, t + S(1));
		fq_rates_tick(r, t += S(1));
	}
	{
		int64_t r2 = -1, r3 = -1;

		while (fq_rates_next(r, &a) == 1)
			if (a.job == 2)
				r2 = (int64_t)a.rate;
			else if (a.job == 3)
				r3 = (int64_t)a.rate;
		/* n5/rail0> : 20 MB/s; 0.95 x 20 - 2 = 17: bulk 4/5 over 2 lanes, scavenger 1/5 */
		ok(r2 == 6800000 && r3 == 3400000,
		   "weights 4:1 on n5's link: 6.8 MB/s a bulk lane, 3.4 the other (%lld, %lld)",
		   (long long)r2, (long long)r3);
	}
	fq_rates_destroy(r);

	r = setup();
	for (int k = 0; k < 1; k++) {
		feed(r, 1, 0, "n5", "n6", 19 * MBS, 0, t + S(1));
		feed(r, 2, 0, "n5", "n6", 1 * MBS, 8000, t + S(1));
		fq_rates_tick(r, t += S(1));
	}
	take(r, 2, &rate, NULL);
	ok(rate == 2000000, "the higher class takes nearly all: the lower keeps min_share, 2 MB/s (%lld)",
	   (long long)rate);
	fq_rates_destroy(r);

	/* 8. The capacity: what the lanes delivered (the receiving ends'
	 * reports), not what their senders wrote (socket buffers filling:
	 * 30 MB/s sent on a 20 MB/s link); the largest but one of the
	 * congested ticks, not their median (ticks an alltoall spends partly
	 * between iterations: 10 MB/s delivered). */
	r = setup();
	for (int k = 0; k < 2; k++) {
		for (uint32_t l = 0; l < 4; l++) {
			feed(r, 2, l, "n2", "n4", 7.5 * MBS, 10000, t + S(1));
			fq_rates_lane_delivered(r, 2, 0, 0, 1, l, t, t + S(1), 5 * MBS);
		}
		fq_rates_tick(r, t += S(1));
	}
	for (int k = 0; k < 4; k++) {
		for (uint32_t l = 0; l < 4; l++) {
			feed(r, 2, l, "n2", "n4", 2.5 * MBS, 10000, t + S(1));
			fq_rates_lane_delivered(r, 2, 0, 0, 1, l, t, t + S(1), 2.5 * MBS);
		}
		fq_rates_tick(r, t += S(1));
	}
	second(r, 4 * MBS, 4 * MBS, 10000, t += S(1)); /* no delivered report: what was sent, 20 */
	take(r, 2, &rate, &a);
	ok(rate == 3750000 && a.capacity == 20000000,
	   "capacity 20 MB/s: delivered 20, 20, 10 x 4, 20 (sent 30 twice); (0.95 x 20 - 4) / 4 = 3.75 MB/s "
	   "a "
	   "lane (%lld, %llu)",
	   (long long)rate, (unsigned long long)a.capacity);
	ok(fq_rates_lane_delivered(r, 2, 0, 0, 1, 7, t, t + S(1), MBS) == -ENOENT,
	   "a delivered report of a lane its sender has not reported: not kept");
	ok(fq_rates_lane_delivered(r, 2, 0, 0, 1, 0, t, t, MBS) == -EINVAL, "an empty interval: refused");
	fq_rates_destroy(r);

	/* 8b. What the far end acknowledged, as the sending end reports it
	 * (TCP), before the receiving end's report: a receiving rank that
	 * stalled reads its socket's backlog in the next interval, above the
	 * link (7.5 MB/s a lane on a 20 MB/s link). A tick that counts a
	 * lane's figure of the tick before (two lanes' reports late, the
	 * other two at their peak: 30) is no sample. */
	r = setup();
	{
		const double full[4] = {5 * MBS, 5 * MBS, 5 * MBS, 5 * MBS},
			     half[4] = {10 * MBS, 10 * MBS, 0, 0};
		const double *seq[] = {full, full, half, full, half};
		int taken = 0;

		for (size_t k = 0; k < sizeof(seq) / sizeof(seq[0]); k++) {
			for (uint32_t l = 0; l < 4; l++)
				if (seq[k][l] > 0) {
					feed_acked(r, 2, l, "n2", "n4", seq[k][l], seq[k][l], 10000,
						   t + S(1));
					taken += fq_rates_lane_delivered(r, 2, 0, 0, 1, l, t, t + S(1),
									 1.5 * seq[k][l]) == 0;
				}
			fq_rates_tick(r, t += S(1));
		}
		feed_acked(r, 1, 0, "n1", "n3", 4 * MBS, 4 * MBS, 50, t + S(1));
		for (uint32_t l = 0; l < 4; l++)
			feed_acked(r, 2, l, "n2", "n4", 4 * MBS, 4 * MBS, 10000, t + S(1));
		fq_rates_tick(r, t += S(1));
		take(r, 2, &rate, &a);
		ok(rate == 3750000 && a.capacity == 20000000 && taken == 16,
		   "capacity 20 MB/s from what was acknowledged (the receiving ends' 30 not needed: %d "
		   "answered 0), the ticks with two lanes late not read; (0.95 x 20 - 4) / 4 = 3.75 MB/s a "
		   "lane (%lld, %llu)",
		   taken, (long long)rate, (unsigned long long)a.capacity);
	}
	fq_rates_destroy(r);

	/* 9. A step the controller has no class for takes no part. */
	r = setup();
	for (int k = 0; k < 2; k++) {
		feed(r, 1, 0, "n5", "n6", 4 * MBS, 0, t + S(1));
		feed(r, 9, 0, "n5", "n6", 16 * MBS, 8000, t + S(1));
		fq_rates_tick(r, t += S(1));
	}
	ok(take(r, 9, &rate, NULL) == 0, "a lane of an unknown step is not capped");
	fq_rates_destroy(r);
	return done_testing();
}
