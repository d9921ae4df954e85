/*
 * The profiler under hostile or unexpected calls, in fixed memory, without
 * a lock: stop without start, garbage and NULL handles, double stops,
 * unknown event types, unknown network events, huge counts, events after
 * finalize (every call returns ncclSuccess and is counted); drops counted
 * exactly when the pool, the window table or the op ring is full; 10^6
 * events with no heap growth (mallinfo2) and no pthread_mutex_lock (this
 * program interposes it: the profiler's objects are linked in); four
 * threads at once, counts exact.
 */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/clock_page.h"
#include "nccl-profiler/abi/profiler_v4.h"
#include "nccl-profiler/abi/profiler_v6.h"
#include "nccl-profiler/prof.h"
#include "tests/unit/tap.h"

extern ncclProfiler_v4_t ncclProfiler_v4;
extern ncclProfiler_v6_t ncclProfiler_v6;

/* Every pthread_mutex_lock of this process comes here first (not under
 * ThreadSanitizer, whose own interceptor must see them). */
static atomic_ulong mutex_locks;
#ifndef __SANITIZE_THREAD__
#define FQ_COUNT_LOCKS 1
int pthread_mutex_lock(pthread_mutex_t *m)
{
	static int (*real)(pthread_mutex_t *);

	atomic_fetch_add(&mutex_locks, 1);
	if (!real)
		real = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_lock");
	return real(m);
}
#endif

static uint64_t bad_handles(void)
{
	struct fqp_global_counts g;

	fqp_global_counts(&g);
	return g.bad_handle;
}

static void *init6(unsigned pool)
{
	char v[16];
	void *ctx = NULL;
	int mask = 0;

	snprintf(v, sizeof(v), "%u", pool);
	setenv("FABRICIQ_PROFILER_EVENTS", v, 1);
	ncclProfiler_v6.init(&ctx, 77, &mask, "t", 1, 2, 0, NULL);
	unsetenv("FABRICIQ_PROFILER_EVENTS");
	return ctx;
}

static ncclProfilerEventDescr_v6_t coll(size_t count, const char *type)
{
	ncclProfilerEventDescr_v6_t d = {.type = ncclProfileColl};

	d.coll.func = "AllReduce";
	d.coll.count = count;
	d.coll.datatype = type;
	return d;
}

static void test_hostile(void)
{
	void *ctx = init6(1024), *h = (void *)1, *h2;
	ncclProfilerEventDescr_v6_t d = coll(10, "ncclFloat32");
	ncclProfilerEventStateArgs_v6_t a = {0};
	struct fqp_op_record r;
	struct fqp_counts c;
	uint64_t b0 = bad_handles();
	int stack_var, ok_all = 1;

	ok(ctx != NULL, "init");
	/* Stops and states on handles that were never given. */
	void *junk[] = {NULL, (void *)1, &stack_var, (void *)0xdeadbeefcafebabeull, (void *)~0ull, ctx};
	for (unsigned i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
		ok_all &= ncclProfiler_v6.stopEvent(junk[i]) == ncclSuccess;
		ok_all &= ncclProfiler_v6.recordEventState(junk[i], ncclProfilerProxyStepSendWait, &a) ==
			  ncclSuccess;
	}
	ok(ok_all, "stop and record on NULL, small, stack, random, all-ones and context values: ncclSuccess");
	is_int(bad_handles() - b0, 12, "each of those 12 calls counted as a bad handle");
	/* Double stop, and a state after the stop. */
	ncclProfiler_v6.startEvent(ctx, &h, &d);
	ok(h != NULL, "a coll starts");
	ncclProfiler_v6.stopEvent(h);
	b0 = bad_handles();
	ok(ncclProfiler_v6.stopEvent(h) == ncclSuccess && bad_handles() - b0 == 1,
	   "a second stop: counted, ignored");
	/* Unknown types: no handle, counted. */
	d.type = 1ull << 40;
	ncclProfiler_v6.startEvent(ctx, &h2, &d);
	d.type = ncclProfileColl | ncclProfileP2p; /* two bits: no type */
	ncclProfiler_v6.startEvent(ctx, &h, &d);
	fqp_counts(ctx, &c);
	ok(h == NULL && h2 == NULL && c.unknown_type == 2, "unknown types: NULL handles, 2 counted (%llu)",
	   (unsigned long long)c.unknown_type);
	/* NULL descriptor, NULL handle pointer, garbage context. */
	ok(ncclProfiler_v6.startEvent(ctx, &h, NULL) == ncclSuccess && h == NULL,
	   "NULL descriptor: no handle");
	d = coll(10, "ncclFloat32");
	ok(ncclProfiler_v6.startEvent(ctx, NULL, &d) == ncclSuccess, "NULL eHandle pointer: ignored");
	ok(ncclProfiler_v6.startEvent((void *)0x1234, &h, &d) == ncclSuccess && h == NULL,
	   "a context that is not ours: no handle");
	ok(ncclProfiler_v6.startEvent(NULL, &h, &d) == ncclSuccess && h == NULL, "NULL context: no handle");
	/* Huge count: saturates, no wrap. */
	d = coll(SIZE_MAX, "ncclFloat64");
	ncclProfiler_v6.startEvent(ctx, &h, &d);
	ncclProfiler_v6.stopEvent(h);
	fqp_sweep(ctx, 0);
	{
		struct fqp_op_record rr[4];
		size_t n = fqp_drain_ops(ctx, rr, 4), i;

		for (i = 0; i < n && rr[i].bytes != UINT64_MAX; i++)
			;
		ok(i < n, "count SIZE_MAX x 8 bytes: bytes saturate at 2^64-1 (%zu records)", n);
	}
	/* Unknown datatype and names: bytes 0, ids 'other'. */
	d = coll(100, "ncclFloat4e2m1");
	d.coll.func = "FutureColl";
	ncclProfiler_v6.startEvent(ctx, &h, &d);
	ncclProfiler_v6.stopEvent(h);
	fqp_sweep(ctx, 0);
	ok(fqp_drain_ops(ctx, &r, 1) == 1 && r.bytes == 0 && r.func != 0,
	   "unknown datatype and op: 0 bytes, 'other'");
	/* Network events this build does not know, or without data. */
	d = (ncclProfilerEventDescr_v6_t){.type = ncclProfileNetPlugin};
	d.netPlugin.id = (int64_t)((3u << 16) | 1);
	ncclProfiler_v6.startEvent(ctx, &h, &d);
	ncclProfiler_v6.stopEvent(h);
	d.netPlugin.id = (int64_t)((1u << 16) | 1);
	d.netPlugin.data = NULL;
	ncclProfiler_v6.startEvent(ctx, &h, &d);
	ncclProfiler_v6.recordEventState(h, ncclProfilerNetPluginUpdate, NULL);
	ncclProfiler_v6.stopEvent(h);
	fqp_counts(ctx, &c);
	is_int(c.net_unknown, 2, "an unknown transport and an IB event without data: 2 unknown net events");
	/* A proxyOp whose parent is garbage, or another proxyOp: no parent. */
	d = (ncclProfilerEventDescr_v6_t){.type = ncclProfileProxyOp, .parentObj = (void *)0x42};
	d.proxyOp.pid = getpid();
	ncclProfiler_v6.startEvent(ctx, &h, &d);
	d.parentObj = h;
	ncclProfiler_v6.startEvent(ctx, &h2, &d);
	ok(h && h2 && ncclProfiler_v6.stopEvent(h2) == ncclSuccess &&
	       ncclProfiler_v6.stopEvent(h) == ncclSuccess,
	   "proxyOps with a garbage or a wrong-type parent still start and stop");
	/* A child that outlives its coll, out of order: coll stopped, proxyOp
	 * starts, coll stopped again (ignored), proxyOp ends: one record. */
	d = coll(4, "ncclInt32");
	ncclProfiler_v6.startEvent(ctx, &h, &d);
	ncclProfiler_v6.stopEvent(h);
	d = (ncclProfilerEventDescr_v6_t){.type = ncclProfileProxyOp, .parentObj = h};
	d.proxyOp.pid = getpid();
	ncclProfiler_v6.startEvent(ctx, &h2, &d);
	ncclProfiler_v6.stopEvent(h);
	ncclProfiler_v6.stopEvent(h2);
	ok(fqp_drain_ops(ctx, &r, 1) == 1 && r.proxy_ops == 1 && r.bytes == 16,
	   "coll stopped before its proxyOp started: completed by the proxyOp, once");
	/* After finalize: every call is refused, counted, NCCL gets success. */
	ncclProfiler_v6.startEvent(ctx, &h, &(ncclProfilerEventDescr_v6_t){.type = ncclProfileGroup});
	ok(ncclProfiler_v6.finalize(ctx) == ncclSuccess, "finalize");
	b0 = bad_handles();
	ok(ncclProfiler_v6.stopEvent(h) == ncclSuccess && bad_handles() - b0 == 1,
	   "a stop after finalize: counted, ignored");
	d = coll(1, "ncclInt8");
	ok(ncclProfiler_v6.startEvent(ctx, &h, &d) == ncclSuccess && h == NULL,
	   "a start after finalize: no handle");
	ok(ncclProfiler_v6.finalize(ctx) == ncclSuccess, "a second finalize: success");
	/* A new communicator reuses the memory; the old handles stay dead. */
	void *ctx2 = init6(1024);
	b0 = bad_handles();
	ok(ctx2 && ctx2 != ctx && ncclProfiler_v6.stopEvent(h2) == ncclSuccess && bad_handles() - b0 == 1,
	   "a later init: a new context; the old one's handles are still refused");
	ncclProfiler_v6.finalize(ctx2);
}

/* Pool of 64: 100 starts give 64 handles and 36 counted drops; stops
 * give the slots back. */
static void test_drops(void)
{
	void *ctx = init6(64), *h[100];
	ncclProfilerEventDescr_v6_t d = {.type = ncclProfileProxyStep};
	struct fqp_config cfg = {.pool_events = 64, .ring_ops = 4, .clock_page = "/nonexistent"};
	struct fqp_counts c;
	struct fqp_ctx *pc;
	struct fqp_op_record r[8];
	int got = 0;

	for (int i = 0; i < 100; i++) {
		ncclProfiler_v6.startEvent(ctx, &h[i], &d);
		got += h[i] != NULL;
	}
	fqp_counts(ctx, &c);
	ok(got == 64 && c.dropped_pool == 36, "pool of 64: 64 handles, 36 drops counted (%d, %llu)", got,
	   (unsigned long long)c.dropped_pool);
	for (int i = 0; i < 100; i++)
		ncclProfiler_v6.stopEvent(h[i]); /* NULLs are NCCL's business: it never stops those */
	ncclProfiler_v6.startEvent(ctx, &h[0], &d);
	ok(h[0] != NULL, "after the stops the pool gives again");
	ncclProfiler_v6.stopEvent(h[0]);
	/* 600 distinct QPs for 512 windows: each lands or is counted. */
	static ncclProfilerNetIbDescr_v1_t ib = {.type = ncclProfileQp};
	int windows = 0;
	for (int q = 0; q < 600; q++) {
		void *n;

		ib.qp.qpNum = 1000 + q;
		ib.qp.length = 1;
		d = (ncclProfilerEventDescr_v6_t){.type = ncclProfileNetPlugin};
		d.netPlugin.id = (int64_t)((1u << 16) | 1);
		d.netPlugin.data = &ib;
		ncclProfiler_v6.startEvent(ctx, &n, &d);
		ncclProfiler_v6.stopEvent(n);
	}
	fqp_counts(ctx, &c);
	windows = fqp_windows(ctx, 0, NULL, NULL);
	ok(c.dropped_windows >= 88 && c.dropped_windows + (uint64_t)windows - 1 == 600,
	   "600 QPs, 512 windows: %d kept + %llu dropped = 600 (+1 step window)", windows - 1,
	   (unsigned long long)c.dropped_windows);
	ncclProfiler_v6.finalize(ctx);
	/* Op ring of 4: 10 ops undrained, 6 counted drops, 4 drained. */
	ok(fqp_init(&pc, NULL, &cfg) == 0, "init with a 4-record ring");
	for (int i = 0; i < 10; i++) {
		struct fqp_event e = {.type = FQP_EV_COLL, .count = 1, .type_size = 4};
		void *hh;

		fqp_start(pc, &hh, &e);
		fqp_stop(hh);
	}
	fqp_sweep(pc, 0);
	fqp_counts(pc, &c);
	ok(c.ops_done == 10 && c.dropped_ops == 6 && fqp_drain_ops(pc, r, 8) == 4,
	   "10 ops into a ring of 4: 6 drops counted, 4 records (%llu)", (unsigned long long)c.dropped_ops);
	fqp_finalize(pc);
}

/* One coll with a proxyOp, a step and an IB event: 5 events. */
static void one_op(void *ctx, int q, int v4)
{
	ncclProfilerNetIbDescr_v1_t ib = {.type = ncclProfileQp, .qp = {.length = 4096}}; /* per thread */
	ncclProfilerEventDescr_v6_t d = coll(1024, "ncclFloat32");
	ncclProfilerEventStateArgs_v6_t a = {.proxyStep = {.transSize = 4096}};
	void *c = NULL, *op = NULL, *st = NULL, *n = NULL, *g = NULL;

	(void)v4;
	ncclProfiler_v6.startEvent(ctx, &g, &(ncclProfilerEventDescr_v6_t){.type = ncclProfileGroup});
	ncclProfiler_v6.startEvent(ctx, &c, &d);
	ncclProfiler_v6.stopEvent(c);
	ncclProfiler_v6.stopEvent(g);
	d = (ncclProfilerEventDescr_v6_t){.type = ncclProfileProxyOp, .parentObj = c};
	d.proxyOp.pid = getpid();
	d.proxyOp.peer = q & 7;
	d.proxyOp.isSend = 1;
	ncclProfiler_v6.startEvent(ctx, &op, &d);
	d = (ncclProfilerEventDescr_v6_t){.type = ncclProfileProxyStep, .parentObj = op};
	ncclProfiler_v6.startEvent(ctx, &st, &d);
	ncclProfiler_v6.recordEventState(st, ncclProfilerProxyStepSendWait, &a);
	d = (ncclProfilerEventDescr_v6_t){.type = ncclProfileNetPlugin, .parentObj = st};
	d.netPlugin.id = (int64_t)((1u << 16) | 1);
	d.netPlugin.data = &ib;
	ib.qp.qpNum = q & 15;
	ncclProfiler_v6.startEvent(ctx, &n, &d);
	ncclProfiler_v6.stopEvent(n);
	ncclProfiler_v6.stopEvent(st);
	ncclProfiler_v6.stopEvent(op);
}

static void test_memory(void)
{
	void *ctx = init6(4096);
	struct fqp_op_record r[256];
	struct fqp_counts c;
	size_t before, after;
	unsigned long locks;

	one_op(ctx, 0, 0); /* first use: lazy libc state (clock vDSO) */
	before = mallinfo2().uordblks;
	locks = atomic_load(&mutex_locks);
	for (int i = 0; i < 200000; i++) {
		one_op(ctx, i, 0);
		if (i % 1000 == 999) /* a drainer, as the telemetry side will be */
			while (fqp_drain_ops(ctx, r, 256) > 0)
				;
	}
	after = mallinfo2().uordblks;
	fqp_counts(ctx, &c);
	ok(c.started[FQP_EV_COLL] + c.started[FQP_EV_PROXY_OP] + c.started[FQP_EV_PROXY_STEP] +
		   c.started[FQP_EV_NET] + c.started[FQP_EV_GROUP] ==
	       1000005,
	   "10^6 events (200001 x group, coll, proxyOp, step, IB QP)");
	ok(c.ops_done == 200001 && c.live == 0 && c.dropped_pool == 0 && c.dropped_windows == 0,
	   "every op completed, nothing live or dropped");
	if (before == 0) {
		skip(1, "mallinfo2 does not see this allocator (sanitizer build)");
	} else {
		diag("heap in use: %zu bytes before, %zu after 10^6 events", before, after);
		ok(after <= before, "no heap growth under 10^6 events");
	}
#ifndef FQ_COUNT_LOCKS
	(void)locks;
	skip(2, "ThreadSanitizer build: locks are its interceptor's");
#else
	is_int(atomic_load(&mutex_locks) - locks, 0, "no pthread_mutex_lock on any call");
	{ /* the interposer does see locks: one of ours */
		pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

		locks = atomic_load(&mutex_locks);
		pthread_mutex_lock(&m);
		pthread_mutex_unlock(&m);
		is_int(atomic_load(&mutex_locks) - locks, 1, "(the count sees a lock when one is taken)");
	}
#endif
	ncclProfiler_v6.finalize(ctx);
}

/* Four threads on one context (NCCL's application, proxy and socket
 * threads): exact counts, nothing lost or doubled. */
static void *worker(void *ctx)
{
	for (int i = 0; i < 25000; i++)
		one_op(ctx, i, 0);
	return NULL;
}

static void test_threads(void)
{
	void *ctx = init6(1024);
	pthread_t t[4];
	struct fqp_counts c;

	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, ctx);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	fqp_counts(ctx, &c);
	ok(c.ops_done == 100000 && c.stopped[FQP_EV_PROXY_STEP] == 100000 &&
	       c.stopped[FQP_EV_NET] == 100000 && c.live == 0 && c.dropped_pool == 0,
	   "4 threads x 25000 ops: 100000 ops, steps and QP events, none live or dropped (ops %llu)",
	   (unsigned long long)c.ops_done);
	ncclProfiler_v6.finalize(ctx);
}

/* NCCL's two threads on one context: the application thread starts a
 * coll and stops it once enqueued; the proxy thread, handed the coll's
 * handle through a pipe, runs its proxyOp, step and QP event, often after
 * the coll's stop. Every coll completes once, by its proxyOp. */
struct pair {
	void *ctx;
	int fd[2];
};

static void *proxy_side(void *arg)
{
	struct pair *p = arg;
	void *c;

	while (read(p->fd[0], &c, sizeof(c)) == (ssize_t)sizeof(c) && c != (void *)p) { /* p: the end */
		ncclProfilerNetIbDescr_v1_t ib = {.type = ncclProfileQp, .qp = {.qpNum = 9, .length = 64}};
		ncclProfilerEventDescr_v6_t d = {.type = ncclProfileProxyOp, .parentObj = c};
		ncclProfilerEventStateArgs_v6_t a = {.proxyStep = {.transSize = 64}};
		void *op = NULL, *st = NULL, *n = NULL;

		d.proxyOp.pid = getpid();
		d.proxyOp.peer = 1;
		ncclProfiler_v6.startEvent(p->ctx, &op, &d);
		d = (ncclProfilerEventDescr_v6_t){.type = ncclProfileProxyStep, .parentObj = op};
		ncclProfiler_v6.startEvent(p->ctx, &st, &d);
		ncclProfiler_v6.recordEventState(st, ncclProfilerProxyStepRecvWait, &a);
		d = (ncclProfilerEventDescr_v6_t){.type = ncclProfileNetPlugin, .parentObj = st};
		d.netPlugin.id = (int64_t)((1u << 16) | 1);
		d.netPlugin.data = &ib;
		ncclProfiler_v6.startEvent(p->ctx, &n, &d);
		ncclProfiler_v6.stopEvent(n);
		ncclProfiler_v6.stopEvent(st);
		ncclProfiler_v6.stopEvent(op);
	}
	return NULL;
}

static void test_two_threads(void)
{
	/* A pool that holds every coll at once: the proxy may lag far behind. */
	struct pair p = {.ctx = init6(32768)};
	struct fqp_op_record r[64];
	struct fqp_counts c;
	pthread_t t;
	size_t recs = 0, n;
	int one_child = 1;

	if (pipe(p.fd) < 0) {
		skip(2, "no pipe");
		return;
	}
	pthread_create(&t, NULL, proxy_side, &p);
	for (int i = 0; i < 20000; i++) {
		ncclProfilerEventDescr_v6_t d = coll(16, "ncclFloat32");
		void *h = NULL;

		ncclProfiler_v6.startEvent(p.ctx, &h, &d);
		if (write(p.fd[1], &h, sizeof(h)) != (ssize_t)sizeof(h))
			break;
		ncclProfiler_v6.stopEvent(h); /* enqueued: races the proxy */
		while ((n = fqp_drain_ops(p.ctx, r, 64)) > 0)
			for (size_t k = 0; k < n; k++, recs++)
				one_child &= r[k].proxy_ops == 1 && r[k].bytes == 64;
	}
	void *end = &p;
	if (write(p.fd[1], &end, sizeof(end)) != (ssize_t)sizeof(end))
		diag("could not stop the proxy thread");
	pthread_join(t, NULL);
	while ((n = fqp_drain_ops(p.ctx, r, 64)) > 0)
		for (size_t k = 0; k < n; k++, recs++)
			one_child &= r[k].proxy_ops == 1 && r[k].bytes == 64;
	fqp_counts(p.ctx, &c);
	ok(c.ops_done == 20000 && recs == 20000 && c.live == 0,
	   "application and proxy threads: 20000 colls, each completed once (%llu done, %zu records)",
	   (unsigned long long)c.ops_done, recs);
	ok(one_child, "each by its proxyOp, whichever came first: its stop or the proxyOp's start");
	close(p.fd[0]);
	close(p.fd[1]);
	ncclProfiler_v6.finalize(p.ctx);
}

/* With the agent's clock page, records are on the global timeline (the
 * page's offset applied) and say so; a stale page: raw, unsynchronised. */
static void test_clock_page(void)
{
	char path[] = "/tmp/fq-prof-clockXXXXXX";
	int fd = mkstemp(path);
	struct fq_clock_page_writer *w = NULL;
	struct fq_clock_model m = {.clock_id = CLOCK_MONOTONIC_RAW, .offset_ns = 5 * FQ_NSEC_PER_SEC};
	struct fqp_config cfg = {.pool_events = 64, .clock_page = path};
	struct fqp_event e = {.type = FQP_EV_COLL, .count = 4, .type_size = 4};
	struct fqp_op_record r;
	struct fqp_ctx *pc;
	int64_t t0, t1;
	void *h;

	if (fd < 0 || fq_clock_page_writer_open(path, &w) < 0) {
		skip(3, "cannot write a clock page in /tmp");
		return;
	}
	close(fd);
	m.ref_local_ns = fq_now_ns();
	m.valid_until_ns = m.ref_local_ns + 60 * FQ_NSEC_PER_SEC;
	fq_clock_page_publish(w, &m);
	ok(fqp_init(&pc, NULL, &cfg) == 0, "init with the agent's clock page");
	t0 = fq_now_ns();
	fqp_start(pc, &h, &e);
	fqp_stop(h);
	t1 = fq_now_ns();
	fqp_sweep(pc, 0);
	ok(fqp_drain_ops(pc, &r, 1) == 1 && r.synchronised && r.start_ns >= t0 + m.offset_ns &&
	       r.end_ns <= t1 + m.offset_ns && r.end_ns >= r.start_ns,
	   "a record on the page's timeline: raw time + 5 s, synchronised");
	m.valid_until_ns = fq_now_ns() - 1; /* the agent stopped publishing */
	fq_clock_page_publish(w, &m);
	fqp_start(pc, &h, &e);
	fqp_stop(h);
	fqp_sweep(pc, 0);
	ok(fqp_drain_ops(pc, &r, 1) == 1 && !r.synchronised && r.start_ns < t1 + FQ_NSEC_PER_SEC,
	   "a stale page: raw monotonic time, unsynchronised");
	fqp_finalize(pc);
	fq_clock_page_writer_close(w);
	unlink(path);
}

/* v4's init and states through the same core. */
static void test_v4_states(void)
{
	void *ctx = NULL, *st = NULL;
	ncclProfilerEventDescr_v4_t d = {.type = ncclProfileProxyStep};
	ncclProfilerEventStateArgs_v4_t a = {.proxyStep = {.transSize = 10}};
	struct fqp_counts c;
	int mask = -1;

	ncclProfiler_v4.init(&ctx, &mask, NULL, 1, 1, 1, 0, NULL);
	ok(ctx && mask == fqp_default_mask(), "v4 init with a NULL name");
	ncclProfiler_v4.startEvent(ctx, &st, &d);
	for (int s = -5; s < 64; s++)
		ncclProfiler_v4.recordEventState(st, (ncclProfilerEventState_t)s, &a);
	ncclProfiler_v4.stopEvent(st);
	fqp_counts(ctx, &c);
	ok(c.states == 69 && c.live == 0, "69 states, known or not, taken; the step stops (%llu)",
	   (unsigned long long)c.states);
	ncclProfiler_v4.finalize(ctx);
	ok(ncclProfiler_v4.init(NULL, &mask, "x", 1, 1, 1, 0, NULL) == ncclSuccess,
	   "init with a NULL context pointer");
}

int main(void)
{
	setenv("FABRICIQ_CLOCK_PAGE", "/nonexistent", 1);
	unsetenv("FABRICIQ_PROFILER_DUMP");
	test_hostile();
	test_drops();
	test_memory();
	test_threads();
	test_two_threads();
	test_clock_page();
	test_v4_states();
	return done_testing();
}
