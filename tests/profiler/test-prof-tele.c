/*
 * The profiler's frames to the agent (nccl-profiler/tele.h): the pure
 * encoder's frames decode to exactly the windows and ops given, split
 * FQP_TELE_PER_FRAME per frame; then the plugin's own thread, with a real
 * unix socket listening where $FABRICIQ_AGENT_SOCKET says (this program
 * reads it as the agent would): every collective the program ran arrives
 * once as an op record and in the coll window; without an agent every frame is counted dropped
 * and finalize does not hang.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/frame.h"
#include "common/step_socket.h"
#include "nccl-profiler/abi/profiler_v6.h"
#include "nccl-profiler/names.h"
#include "nccl-profiler/tele.h"
#include "tests/unit/tap.h"

extern ncclProfiler_v6_t ncclProfiler_v6;

struct got {
	struct fq_frame_decoder *dec;
	int frames, bad;
	size_t windows, ops, coll_count, bad_values;
	uint64_t max_ops_done;
};

static void decode_into(struct got *g)
{
	Fabriciq__Envelope *env;
	int rc;

	while ((rc = fq_frame_decoder_next(g->dec, &env)) > 0) {
		Fabriciq__ProfilerReport *r = env->profiler;

		g->frames++;
		if (env->payload_case != FABRICIQ__ENVELOPE__PAYLOAD_PROFILER) {
			g->bad++;
			fq_frame_free(env);
			continue;
		}
		g->windows += r->n_windows;
		g->ops += r->n_ops;
		if (r->ops_done > g->max_ops_done)
			g->max_ops_done = r->ops_done;
		for (size_t i = 0; i < r->n_windows; i++)
			if (!strcmp(r->windows[i]->kind, "coll"))
				g->coll_count += r->windows[i]->count;
		for (size_t i = 0; i < r->n_ops; i++)
			if (strcmp(r->ops[i]->func, "AllReduce") || r->ops[i]->bytes != 4096 ||
			    r->ops[i]->end_ns < r->ops[i]->start_ns || r->ops[i]->synchronised)
				g->bad_values++;
		fq_frame_free(env);
	}
	if (rc < 0)
		g->bad++;
}

static void put(const uint8_t *f, size_t n, void *arg)
{
	struct got *g = arg;

	fq_frame_decoder_feed(g->dec, f, n);
	decode_into(g);
}

static void test_pure(void)
{
	static struct fqp_window_sample w[70];
	static struct fqp_op_record o[100];
	struct fqp_comm_info ci = {.comm_hash = 0xabc, .nranks = 4, .rank = 1};
	struct fqp_tele_interval iv = {
	    .ci = &ci, .start_ns = 1000, .end_ns = 2000, .win = w, .nwin = 70, .ops = o, .nops = 100};
	struct got g = {.dec = fq_frame_decoder_create(FQ_TELEMETRY_FRAME_MAX)};
	Fabriciq__ProfilerWindow mw;
	Fabriciq__ProfilerOp mo;
	int n;

	for (int i = 0; i < 70; i++)
		w[i] = (struct fqp_window_sample){.key = {FQP_W_COLL, -1, 0, FQP_FUNC_ALLREDUCE},
						  .count = 2,
						  .bytes = 8192,
						  .dur_sum_ns = 300,
						  .dur_max_ns = 200};
	for (int i = 0; i < 100; i++)
		o[i] = (struct fqp_op_record){.func = FQP_FUNC_ALLREDUCE,
					      .algo = FQP_ALGO_RING,
					      .proto = FQP_PROTO_SIMPLE,
					      .bytes = 4096,
					      .start_ns = 10,
					      .end_ns = 20 + i,
					      .gbps = 4096.0 / (10 + i)};
	n = fqp_tele_frames(&iv, put, &g);
	ok(n == 4 && g.frames == 4 && !g.bad, "70 windows and 100 ops: 4 frames of at most %d each (%d, %d)",
	   FQP_TELE_PER_FRAME, n, g.frames);
	ok(g.windows == 70 && g.ops == 100 && g.coll_count == 140 && !g.bad_values,
	   "they decode to exactly 70 windows (140 events) and 100 AllReduce ops");
	fqp_tele_window_fill(&mw, &w[0]);
	ok(!strcmp(mw.kind, "coll") && mw.id == FQP_FUNC_ALLREDUCE && mw.mean_ns == 150 && mw.max_ns == 200 &&
	       mw.device == -1,
	   "a window: kind coll, id, mean 300/2 = 150 ns, max 200 ns");
	fqp_tele_op_fill(&mo, &o[5]);
	ok(!strcmp(mo.func, "AllReduce") && !strcmp(mo.algo, "RING") && !strcmp(mo.proto, "SIMPLE") &&
	       mo.end_ns == 25 && fabs(mo.gbps - 4096.0 / 15) < 1e-9 && mo.peer == -1 && !mo.p2p,
	   "an op: names, times and bandwidth as recorded");
	iv.nwin = iv.nops = 0;
	g.frames = 0;
	ok(fqp_tele_frames(&iv, put, &g) == 1 && g.frames == 1,
	   "an empty interval is still one frame (the counts go out)");
	fq_frame_decoder_destroy(g.dec);
}

static int listen_at(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (strlen(path) >= sizeof(sa.sun_path))
		return -1;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 8) < 0)
		return -1;
	return fd;
}

static void *run_colls(void *ctx, int n)
{
	for (int i = 0; i < n; i++) {
		ncclProfilerEventDescr_v6_t d = {.type = ncclProfileColl};
		void *h = NULL;

		d.coll.func = "AllReduce";
		d.coll.count = 1024;
		d.coll.datatype = "ncclFloat32";
		d.coll.algo = "RING";
		d.coll.proto = "SIMPLE";
		d.coll.seqNumber = (uint64_t)i;
		ncclProfiler_v6.startEvent(ctx, &h, &d);
		ncclProfiler_v6.stopEvent(h);
	}
	return NULL;
}

static void test_thread(const char *dir)
{
	char path[200];
	struct got g = {.dec = fq_frame_decoder_create(FQ_TELEMETRY_FRAME_MAX)};
	struct fqp_tele_counts c;
	void *ctx = NULL;
	int mask = 0, lfd, cfd;
	uint8_t buf[65536];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/agent.sock", dir);
	lfd = listen_at(path);
	ok(lfd >= 0, "a unix socket listens at %s", path);
	setenv("FABRICIQ_AGENT_SOCKET", path, 1);
	setenv("FABRICIQ_TELEMETRY_INTERVAL_MS", "20", 1);
	ncclProfiler_v6.init(&ctx, 0x77, &mask, "tele", 1, 4, 2, NULL);
	fqp_tele_counts(&c);
	ok(ctx && mask && c.running, "init with $FABRICIQ_AGENT_SOCKET set starts the telemetry thread");
	run_colls(ctx, 300);
	nanosleep(&(struct timespec){0, 100000000}, NULL); /* a few intervals go by mid-run */
	run_colls(ctx, 200);
	ncclProfiler_v6.finalize(ctx);
	fqp_tele_counts(&c);
	ok(!c.running && c.frames >= 2 && c.sent == c.frames && !c.dropped_no_agent && !c.encode_failures,
	   "finalize of the last communicator: thread ended, every frame sent (%llu of %llu, %llu reports)",
	   (unsigned long long)c.sent, (unsigned long long)c.frames, (unsigned long long)c.reports);
	cfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	while (cfd >= 0 && (n = read(cfd, buf, sizeof(buf))) > 0) {
		fq_frame_decoder_feed(g.dec, buf, (size_t)n);
		decode_into(&g);
	}
	ok(cfd >= 0 && g.frames == (int)c.sent && !g.bad,
	   "the agent's end reads %d frames, all ProfilerReports", g.frames);
	ok(g.ops == 500 && !g.bad_values, "500 collectives run, 500 op records arrive, as run (%zu, %zu odd)",
	   g.ops, g.bad_values);
	ok(g.coll_count == 500 && g.max_ops_done == 500,
	   "the coll windows count 500 over the reports, and ops_done says 500 (%zu, %llu)", g.coll_count,
	   (unsigned long long)g.max_ops_done);
	if (cfd >= 0)
		close(cfd);
	close(lfd);
	unlink(path);
	fq_frame_decoder_destroy(g.dec);
}

/* Two communicators: the first one's finalize leaves the thread to the
 * second; the last one's ends it; a later init starts a new one. */
static void test_two_comms(const char *dir)
{
	char path[200];
	struct got g = {.dec = fq_frame_decoder_create(FQ_TELEMETRY_FRAME_MAX)};
	struct fqp_tele_counts c1, c2, c3;
	void *a = NULL, *b = NULL, *x = NULL;
	int mask = 0, lfd, cfd;
	uint8_t buf[65536];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/two.sock", dir);
	lfd = listen_at(path);
	setenv("FABRICIQ_AGENT_SOCKET", path, 1);
	ncclProfiler_v6.init(&a, 0x81, &mask, "a", 1, 4, 0, NULL);
	ncclProfiler_v6.init(&b, 0x82, &mask, "b", 1, 4, 0, NULL);
	run_colls(a, 100);
	run_colls(b, 200);
	ncclProfiler_v6.finalize(a);
	fqp_tele_counts(&c1);
	run_colls(b, 50);
	ncclProfiler_v6.finalize(b);
	fqp_tele_counts(&c2);
	ncclProfiler_v6.init(&x, 0x83, &mask, "x", 1, 4, 0, NULL);
	fqp_tele_counts(&c3);
	ncclProfiler_v6.finalize(x);
	ok(c1.running && !c2.running && c3.running,
	   "the first of two finalizes keeps the thread, the second ends it, a new init starts one");
	cfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	while (cfd >= 0 && (n = read(cfd, buf, sizeof(buf))) > 0) {
		fq_frame_decoder_feed(g.dec, buf, (size_t)n);
		decode_into(&g);
	}
	ok(g.ops == 350 && g.coll_count == 350 && !g.bad && !g.bad_values,
	   "100 + 200 + 50 collectives of two communicators: 350 op records, 350 in the windows (%zu, %zu)",
	   g.ops, g.coll_count);
	if (cfd >= 0)
		close(cfd);
	close(lfd);
	unlink(path);
	fq_frame_decoder_destroy(g.dec);
}

static void test_no_agent(const char *dir)
{
	char path[200];
	struct fqp_tele_counts before, c;
	void *ctx = NULL;
	int mask = 0;
	int64_t t0;

	snprintf(path, sizeof(path), "%s/none.sock", dir);
	setenv("FABRICIQ_AGENT_SOCKET", path, 1);
	fqp_tele_counts(&before);
	ncclProfiler_v6.init(&ctx, 0x78, &mask, "tele", 1, 4, 2, NULL);
	run_colls(ctx, 50);
	t0 = fq_now_ns();
	ncclProfiler_v6.finalize(ctx);
	fqp_tele_counts(&c);
	ok(fq_now_ns() - t0 < 1500000000 && !c.running,
	   "no agent: finalize returns without waiting out the socket, thread ended");
	ok(c.frames > before.frames && c.sent == before.sent &&
	       c.dropped_no_agent - before.dropped_no_agent == c.frames - before.frames,
	   "... every frame counted dropped (%llu)",
	   (unsigned long long)(c.dropped_no_agent - before.dropped_no_agent));
}

int main(void)
{
	char dir[] = "/tmp/fq-prof-tele.XXXXXX";

	if (!mkdtemp(dir)) {
		skip_all("no temporary directory");
		return 0;
	}
	setenv("FABRICIQ_CLOCK_PAGE", "/nonexistent", 1);
	test_pure();
	test_thread(dir);
	test_two_comms(dir);
	test_no_agent(dir);
	rmdir(dir);
	return done_testing();
}
