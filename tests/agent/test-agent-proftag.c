/*
 * The agent's word on a profiler report (slurmd-agent/proftag.h): job,
 * step and rank replaced by the agent's, a report naming another job or
 * step refused, implausible windows and ops removed and counted, the rest
 * kept as sent; and the whole through a frame, as the telemetry socket
 * hands it over (encode, decode, tag, encode again for the spool).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/frame.h"
#include "slurmd-agent/proftag.h"
#include "slurmd-agent/spool.h"
#include "tests/unit/tap.h"

#define NW 6
#define NO 7

static Fabriciq__ProfilerWindow W[NW];
static Fabriciq__ProfilerOp O[NO];
static Fabriciq__ProfilerWindow *WP[NW];
static Fabriciq__ProfilerOp *OP[NO];

/* A report as a process sends it, encoded and decoded (so its parts are
 * heap-allocated like those the agent receives). */
static Fabriciq__Envelope *report(uint64_t claim_job, uint32_t claim_step)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT, *out = NULL;
	Fabriciq__ProfilerReport r = FABRICIQ__PROFILER_REPORT__INIT;
	const char *kinds[NW] = {"coll", "net_ib", "bogus", "step_send", "net_sock", "coll"};
	uint8_t *buf;
	size_t len;

	for (int i = 0; i < NW; i++) {
		fabriciq__profiler_window__init(&W[i]);
		W[i].kind = (char *)kinds[i];
		W[i].count = i == 5 ? 0 : 10; /* the last: no events */
		W[i].bytes = 1000;
		W[i].mean_ns = 50;
		W[i].max_ns = 90;
		W[i].id = 0x100 + i;
		WP[i] = &W[i];
	}
	for (int i = 0; i < NO; i++) {
		fabriciq__profiler_op__init(&O[i]);
		O[i].func = "AllReduce";
		O[i].algo = "RING";
		O[i].proto = "SIMPLE";
		O[i].bytes = 4096;
		O[i].start_ns = 1000;
		O[i].end_ns = 2000;
		O[i].gbps = 4.096;
		OP[i] = &O[i];
	}
	O[1].end_ns = 999;                               /* ends before it starts */
	O[2].end_ns = 1000 + 7200 * 1000000000LL;        /* two hours */
	O[3].gbps = NAN;                                 /* not a number */
	O[4].func = "All Reduce; drop table";            /* not a word */
	O[5].algo = "RINGRINGRINGRINGRINGRINGRINGRING1"; /* 33 bytes */
	r.job_id = claim_job;
	r.step_id = claim_step;
	r.rank = 999; /* the process's word: replaced */
	r.comm_hash = 0xfeed;
	r.nranks = 4;
	r.interval_start_ns = 5000;
	r.interval_end_ns = 4000; /* before its start */
	r.n_windows = NW;
	r.windows = WP;
	r.n_ops = NO;
	r.ops = OP;
	env.version = FQ_PROTOCOL_VERSION;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_PROFILER;
	env.profiler = &r;
	if (fq_frame_encode(&env, 65536, &buf, &len) < 0)
		return NULL;
	fq_frame_unpack(buf + 4, len - 4, &out);
	free(buf);
	return out;
}

int main(void)
{
	Fabriciq__Envelope *e = report(0, 0), *back = NULL;
	Fabriciq__ProfilerReport *r;
	unsigned removed = 99;
	uint8_t *buf;
	size_t len;

	ok(e && e->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_PROFILER, "a report decodes from its frame");
	r = e->profiler;
	ok(fq_proftag(r, 42, 3, 7, &removed) == 0, "a report claiming no job is taken");
	ok(r->job_id == 42 && r->step_id == 3 && r->rank == 7,
	   "job, step and rank are the agent's (42.3 rank 7), not the process's rank 999");
	ok(r->n_windows == 4 && !strcmp(r->windows[0]->kind, "coll") &&
	       !strcmp(r->windows[1]->kind, "net_ib") && !strcmp(r->windows[2]->kind, "step_send") &&
	       !strcmp(r->windows[3]->kind, "net_sock") && r->windows[1]->id == 0x101,
	   "windows: the unknown kind and the empty one removed, 4 kept in order (%zu)", r->n_windows);
	ok(r->n_ops == 2 && r->ops[0]->end_ns == 2000 && r->ops[1]->end_ns == 2000 &&
	       !strcmp(r->ops[1]->func, "AllReduce"),
	   "ops: backwards, 2-hour, NaN-bandwidth, odd-name and long-name removed, 2 kept (%zu)", r->n_ops);
	is_int((int)removed, 7, "7 removed, counted");
	ok(r->interval_start_ns == 4000 && r->comm_hash == 0xfeed && r->nranks == 4,
	   "an interval ending before its start starts at its end; the rest kept");
	ok(fq_frame_encode(e, 65536, &buf, &len) == 0 && fq_frame_unpack(buf + 4, len - 4, &back) == 0 &&
	       back->profiler->n_windows == 4 && back->profiler->n_ops == 2 && back->profiler->job_id == 42,
	   "the tagged report encodes again for the spool and decodes the same");
	if (back)
		fq_frame_free(back);
	free(buf);
	fq_frame_free(e);

	e = report(41, 3);
	ok(e && fq_proftag(e->profiler, 42, 3, 7, NULL) == -EPERM,
	   "a report claiming job 41 from job 42: refused");
	fq_frame_free(e);
	e = report(42, 4);
	ok(e && fq_proftag(e->profiler, 42, 3, 7, NULL) == -EPERM,
	   "... claiming step 42.4 from 42.3: refused");
	fq_frame_free(e);
	e = report(42, 3);
	ok(e && fq_proftag(e->profiler, 42, 3, 7, NULL) == 0, "... claiming its own step: taken");
	fq_frame_free(e);
	ok(fq_spool_is_bulk(FABRICIQ__ENVELOPE__PAYLOAD_PROFILER) &&
	       fq_spool_is_bulk(FABRICIQ__ENVELOPE__PAYLOAD_LANE) &&
	       !fq_spool_is_bulk(FABRICIQ__ENVELOPE__PAYLOAD_FAILOVER),
	   "profiler reports are bulk in the spool, like lane reports (dropped before events)");
	ok(fq_proftag_kind_known("net_ib") && !fq_proftag_kind_known("") && !fq_proftag_kind_known(NULL),
	   "kinds: net_ib known; empty and NULL not");
	return done_testing();
}
