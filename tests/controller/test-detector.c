/*
 * test-detector: the stateful detector (controller/detector.h) as a whole
 * (detector.c): its memory bounds and hostile input. Its rules:
 * test-detector-links.c and test-detector-lanes.c.
 */
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/controller/det-fixture.h"
#include "tests/unit/tap.h"

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
	void *volatile held;

	fq_detector_config_defaults(&c);
	c.max_paths = 10000;
	c.max_nics = 5000;
	c.max_steps = 1000;
	c.max_lanes = 8000;
	/* One block held while measuring: glibc's count is then never 0 (this
	 * program may not have allocated anything yet); 0 means another
	 * allocator. */
	held = malloc(64);
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
	free(held);

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

int main(void)
{
	test_memory_bounds();
	test_hostile();
	return done_testing();
}
