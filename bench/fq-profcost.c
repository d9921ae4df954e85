/*
 * fq-profcost: what the profiler plugin costs NCCL's threads, per event
 * and per small operation, against a baseline profiler whose entry points
 * return at once (the same calls through the same tables), measured in the
 * same run; and how many events per second one thread records before the
 * plugin drops any.
 *
 *   fq-profcost NULL_PROFILER.so PROFILER.so [OPS]
 *
 * The baseline is bench/prof-null's .so (entry points that return).
 * One operation here is what NCCL sends for an 8-byte allreduce over the
 * network between two ranks: a group, a coll, two proxyOps, two steps with
 * their states, two IB QP events (11 starts, 11 stops, 4 states).
 *
 *   fq-profcost --ramp PROFILER.so [SECONDS]
 *
 * The sustained rate with the telemetry thread running: a thread here
 * stands for the agent (a unix socket it reads and discards, as fast as
 * it can), FABRICIQ_AGENT_SOCKET names it, and one thread sends those
 * operations paced at 1000, 2000, 4000 ... per second, SECONDS (3) each,
 * a fresh communicator each; the plugin's own drop counters (the line it
 * logs at finalize through NCCL's logger) say whether it dropped any.
 * Prints each step and the highest rate with no drop.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "nccl-profiler/abi/profiler_v6.h"

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static pid_t pid; /* NCCL reads it once */

/* One 8-byte allreduce's events, as NCCL sends them. */
static void one_op(ncclProfiler_v6_t *p, void *ctx, int i)
{
	ncclProfilerNetIbDescr_v1_t ib = {.type = ncclProfileQp, .qp = {.qpNum = i & 3, .length = 8}};
	ncclProfilerEventDescr_v6_t d = {.type = ncclProfileGroup};
	ncclProfilerEventStateArgs_v6_t a = {.proxyStep = {.transSize = 8}};
	void *g, *c, *op[2], *st[2], *n[2];

	p->startEvent(ctx, &g, &d);
	d = (ncclProfilerEventDescr_v6_t){.type = ncclProfileColl};
	d.coll.func = "AllReduce";
	d.coll.datatype = "ncclFloat32";
	d.coll.algo = "RING";
	d.coll.proto = "LL";
	d.coll.count = 2;
	d.coll.parentGroup = g;
	p->startEvent(ctx, &c, &d);
	p->stopEvent(c);
	p->stopEvent(g);
	for (int k = 0; k < 2; k++) {
		d = (ncclProfilerEventDescr_v6_t){.type = ncclProfileProxyOp, .parentObj = c};
		d.proxyOp.pid = pid;
		d.proxyOp.peer = 1;
		d.proxyOp.isSend = k;
		p->startEvent(ctx, &op[k], &d);
		d = (ncclProfilerEventDescr_v6_t){.type = ncclProfileProxyStep, .parentObj = op[k]};
		p->startEvent(ctx, &st[k], &d);
		p->recordEventState(st[k],
				    k ? ncclProfilerProxyStepSendGPUWait : ncclProfilerProxyStepRecvWait, &a);
		d = (ncclProfilerEventDescr_v6_t){.type = ncclProfileNetPlugin, .parentObj = st[k]};
		d.netPlugin.id = (int64_t)((1u << 16) | 1);
		d.netPlugin.data = &ib;
		p->startEvent(ctx, &n[k], &d);
	}
	for (int k = 0; k < 2; k++) {
		p->stopEvent(n[k]);
		p->recordEventState(st[k],
				    k ? ncclProfilerProxyStepSendWait : ncclProfilerProxyStepRecvGPUWait, &a);
		p->stopEvent(st[k]);
		p->stopEvent(op[k]);
	}
}

static double run(ncclProfiler_v6_t *p, long ops)
{
	void *ctx = NULL;
	int mask = 0;
	double t0;

	p->init(&ctx, 1, &mask, "bench", 1, 2, 0, NULL);
	for (long i = 0; i < ops / 10; i++) /* warm up */
		one_op(p, ctx, (int)i);
	t0 = now();
	for (long i = 0; i < ops; i++)
		one_op(p, ctx, (int)i);
	t0 = now() - t0;
	p->finalize(ctx);
	return t0 / (double)ops * 1e9; /* ns per op */
}

/* Starts only, no stops, until the first drop: how many events one
 * thread records, and how fast, before the pool is full. */
static void burst(ncclProfiler_v6_t *p)
{
	ncclProfilerEventDescr_v6_t d = {.type = ncclProfileProxyStep};
	void *ctx = NULL, *h = (void *)1;
	int mask = 0;
	long n = 0;
	double t0;

	p->init(&ctx, 2, &mask, "burst", 1, 2, 0, NULL);
	t0 = now();
	while (h && n < 100000000) {
		p->startEvent(ctx, &h, &d);
		n += h != NULL;
	}
	t0 = now() - t0;
	printf("burst: %ld events started before the first drop (the pool), %.1f M events/s\n", n,
	       n / t0 / 1e6);
	p->finalize(ctx);
}

static ncclProfiler_v6_t *load(const char *path)
{
	void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	ncclProfiler_v6_t *p = dl ? dlsym(dl, "ncclProfiler_v6") : NULL;

	if (!p)
		fprintf(stderr, "fq-profcost: cannot load ncclProfiler_v6 from %s: %s\n", path, dlerror());
	return p;
}

/* ---- --ramp ---------------------------------------------------------------- */

static unsigned long long drop_pool, drop_win, drop_ops, ops_logged;
static int drops_seen;

/* NCCL's logger as the plugin calls it at finalize: its counts line. */
static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
	char buf[512];
	const char *p;
	va_list ap;

	(void)level, (void)flags, (void)file, (void)line;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if ((p = strstr(buf, "dropped ")) && sscanf(p, "dropped %llu (pool) %llu (windows) %llu (op records)",
						    &drop_pool, &drop_win, &drop_ops) == 3)
		drops_seen = 1;
	if ((p = strstr(buf, "rank ")) && (p = strchr(p, ':')))
		sscanf(p, ": %llu ops", &ops_logged);
}

static unsigned long long agent_bytes;

/* The stand-in agent: accepts every connection and reads everything. */
static void *agent(void *arg)
{
	int lfd = *(int *)arg;
	char buf[65536];

	for (;;) {
		int fd = accept(lfd, NULL, NULL);
		ssize_t n;

		if (fd < 0)
			return NULL;
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			__atomic_fetch_add(&agent_bytes, (unsigned long long)n, __ATOMIC_RELAXED);
		close(fd);
	}
}

static int agent_start(char *path, size_t len)
{
	static int lfd;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	pthread_t t;

	snprintf(path, len, "/tmp/fq-profcost-%d.sock", (int)getpid());
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	unlink(path);
	if ((lfd = socket(AF_UNIX, SOCK_STREAM, 0)) < 0 ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 8) < 0 ||
	    pthread_create(&t, NULL, agent, &lfd) != 0) {
		perror("fq-profcost: the stand-in agent's socket");
		return -1;
	}
	pthread_detach(t);
	setenv("FABRICIQ_AGENT_SOCKET", path, 1);
	return 0;
}

/* One step of the ramp: rate ops/s for secs; the ops done per second. */
static double paced(ncclProfiler_v6_t *p, double rate, double secs)
{
	void *ctx = NULL;
	int mask = 0;
	long i = 0;
	double t0, t;

	drops_seen = 0;
	drop_pool = drop_win = drop_ops = ops_logged = 0;
	p->init(&ctx, 3, &mask, "ramp", 1, 2, 0, logger);
	t0 = now();
	while ((t = now() - t0) < secs) {
		if ((double)i < t * rate)
			one_op(p, ctx, (int)i++);
		else if ((double)i - t * rate > 2)
			usleep(50);
	}
	p->finalize(ctx);
	return (double)i / t;
}

static int ramp(const char *path, double secs)
{
	ncclProfiler_v6_t *p = load(path);
	char sock[108];
	double best = 0, best_done = 0;

	if (!p || agent_start(sock, sizeof(sock)) < 0)
		return 1;
	printf("ramp: one thread, 22 events per op, %.0f s a step, the telemetry thread sending to a "
	       "stand-in agent every %s ms\n",
	       secs,
	       getenv("FABRICIQ_TELEMETRY_INTERVAL_MS") ? getenv("FABRICIQ_TELEMETRY_INTERVAL_MS") : "1000");
	for (double rate = 1000; rate <= 4096000; rate *= 2) {
		double done = paced(p, rate, secs);
		unsigned long long drops = drop_pool + drop_win + drop_ops;

		printf("ramp: %8.0f ops/s asked, %8.0f done (%5.2f M events/s): dropped %llu (pool) %llu "
		       "(windows) "
		       "%llu (op records)%s\n",
		       rate, done, done * 22 / 1e6, drop_pool, drop_win, drop_ops,
		       drops_seen ? "" : " [no counts line logged]");
		if (!drops_seen)
			return 1;
		if (drops)
			break;
		best = rate, best_done = done;
		if (done < rate * 0.9) /* the thread itself is the limit */
			break;
	}
	printf(
	    "ramp: highest rate with no drop: %.0f ops/s = %.2f M events/s (%.0f done); the agent read %llu "
	    "bytes\n",
	    best, best_done * 22 / 1e6, best_done, agent_bytes);
	unlink(sock);
	return 0;
}

int main(int argc, char **argv)
{
	long ops = argc > 3 ? atol(argv[3]) : 1000000;
	ncclProfiler_v6_t *null_prof, *p;
	double base, prof;

	pid = getpid();
	if (argc >= 3 && !strcmp(argv[1], "--ramp"))
		return ramp(argv[2], argc > 3 ? atof(argv[3]) : 3.0);
	if (argc < 3) {
		fprintf(stderr, "usage: fq-profcost NULL_PROFILER.so PROFILER.so [OPS]\n");
		return 2;
	}
	if (!(null_prof = load(argv[1])) || !(p = load(argv[2])))
		return 1;
	base = run(null_prof, ops);
	prof = run(p, ops);
	printf("per 8-B allreduce (22 events, 4 states): baseline %.1f ns, fabriciq %.1f ns, +%.1f ns "
	       "(ratio %.2f)\n",
	       base, prof, prof - base, prof / base);
	printf("per event: %.1f ns; one thread records %.1f M events/s with no drop (start+stop pairs)\n",
	       (prof - base) / 22, 22.0 / prof * 1e3);
	{ /* the floor: each event reads the raw clock at start and stop */
		struct timespec t;
		double t0 = now();

		for (int i = 0; i < 1000000; i++)
			clock_gettime(CLOCK_MONOTONIC_RAW, &t);
		printf("one CLOCK_MONOTONIC_RAW read here: %.1f ns (two per event)\n", (now() - t0) * 1e3);
	}
	burst(p);
	return 0;
}
