/* profrun: application and proxy threads around a profiler (see profrun.h). */
#include <pthread.h>
#include <stdlib.h>

#include "tools/collbench/profrun.h"

/* NCCL gives an operation one proxyOp per channel and connection (a
 * ring allreduce: one send to the next rank, one receive from the
 * previous, whose steps span every ring step), started together when the
 * proxy appends the plan's ops and stopped when their last step is done.
 * Here: one per (peer, direction) of the current operation, started at
 * its first transfer, stopped when the operation's work returns. */
#define MAX_CONNS 256

struct conn_op {
	void *h;
	int step;
	size_t posted, done;
};

struct profrun {
	struct profdrv *d;
	int nsteps;
	struct conn_op conn[MAX_CONNS];
	struct mesh *m;
	struct coll_hooks hooks;
	pthread_t thread;
	int running;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* The job handed over: fn(arg) under task; done when finished. */
	int (*fn)(void *);
	void *arg;
	void *task;
	int posted, done, rc, quit;
};

/* The transfer's xfer handle is its struct conn_op. */
static void *h_xfer_begin(void *arg, int peer, int is_send, size_t bytes, int nreqs)
{
	struct profrun *r = arg;
	int i = 2 * peer + !is_send;
	struct conn_op *c;

	(void)bytes;
	if (peer < 0 || i >= MAX_CONNS)
		return NULL;
	c = &r->conn[i];
	if (!c->h)
		c->h = profdrv_proxy_op_start(r->d, r->task, 0, peer, nreqs * r->nsteps, COLL_SLICE, is_send);
	return c;
}

static void *h_req_posted(void *arg, void *xfer, int step, int is_send, size_t len, size_t posted, int conn,
			  void **net)
{
	struct profrun *r = arg;
	struct conn_op *c = xfer;

	(void)step, (void)posted;
	*net = NULL;
	if (!c)
		return NULL;
	c->posted += len;
	return profdrv_step_post(r->d, c->h, c->step++, is_send, len, c->posted, conn, net);
}

static void h_req_done(void *arg, void *xfer, void *req, void *net, int is_send, size_t len, size_t done)
{
	struct profrun *r = arg;
	struct conn_op *c = xfer;

	(void)done;
	if (!c)
		return;
	c->done += len;
	profdrv_step_done(r->d, c->h, req, net, is_send, len, c->done);
}

static void h_xfer_end(void *arg, void *xfer)
{
	(void)arg, (void)xfer; /* the proxyOp spans the operation's transfers */
}

/* The operation's work is done: its proxyOps end. */
static void conns_stop(struct profrun *r)
{
	for (int i = 0; i < MAX_CONNS; i++) {
		if (r->conn[i].h)
			profdrv_proxy_op_stop(r->d, r->conn[i].h);
		r->conn[i] = (struct conn_op){0};
	}
}

static void *proxy_main(void *arg)
{
	struct profrun *r = arg;

	pthread_mutex_lock(&r->mu);
	for (;;) {
		while (!r->posted && !r->quit)
			pthread_cond_wait(&r->cv, &r->mu);
		if (r->quit)
			break;
		r->posted = 0;
		pthread_mutex_unlock(&r->mu);
		int rc = r->fn(r->arg);
		conns_stop(r);
		pthread_mutex_lock(&r->mu);
		r->rc = rc;
		r->done = 1;
		pthread_cond_broadcast(&r->cv);
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

int profrun_open(const char *path, int abi, enum profdrv_net net, uint64_t comm_hash, int rank, int nranks,
		 struct mesh *m, ncclDebugLogger_t logfn, struct profrun **out, char *err, size_t errlen)
{
	struct profrun *r = calloc(1, sizeof(*r));

	*out = NULL;
	if (!r) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (profdrv_open(path, abi, &r->d, err, errlen) < 0) {
		free(r);
		return -1;
	}
	profdrv_set_net(r->d, net);
	if (profdrv_init(r->d, comm_hash, "collbench", nranks, nranks, rank, logfn) != ncclSuccess)
		fprintf(stderr,
			"fabriciq-collbench: profiler init failed: going on without it, as NCCL does\n");
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	if (pthread_create(&r->thread, NULL, proxy_main, r) != 0) {
		snprintf(err, errlen, "cannot start the proxy thread");
		profdrv_close(r->d);
		free(r);
		return -1;
	}
	r->running = 1;
	r->m = m;
	r->hooks = (struct coll_hooks){.arg = r,
				       .xfer_begin = h_xfer_begin,
				       .req_posted = h_req_posted,
				       .req_done = h_req_done,
				       .xfer_end = h_xfer_end};
	mesh_set_hooks(m, &r->hooks);
	*out = r;
	return 0;
}

int profrun_op(struct profrun *r, const struct profdrv_op *op, int nxfers, int (*fn)(void *), void *arg)
{
	void *task = NULL;
	int rc;

	r->nsteps = nxfers > 0 ? nxfers : 1;
	profdrv_op_begin(r->d, op, &task);
	pthread_mutex_lock(&r->mu);
	r->fn = fn;
	r->arg = arg;
	r->task = task;
	r->done = 0;
	r->posted = 1;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	/* Enqueued: NCCL stops the task and group events here, while the
	 * proxy thread may already be running the operation. */
	profdrv_op_enqueued(r->d);
	pthread_mutex_lock(&r->mu);
	while (!r->done)
		pthread_cond_wait(&r->cv, &r->mu);
	rc = r->rc;
	pthread_mutex_unlock(&r->mu);
	return rc;
}

void profrun_report(struct profrun *r, int rank, FILE *f)
{
	struct profdrv_counts c;

	profdrv_counts(r->d, &c);
	fprintf(f,
		"# profiler rank %d: '%s' ncclProfiler_v%d mask 0x%x sent: groups %llu colls %llu p2ps %llu "
		"proxyOps %llu steps %llu net %llu states %llu api %llu\n",
		rank, profdrv_name(r->d), profdrv_version(r->d), profdrv_mask(r->d),
		(unsigned long long)c.groups, (unsigned long long)c.colls, (unsigned long long)c.p2ps,
		(unsigned long long)c.proxy_ops, (unsigned long long)c.steps, (unsigned long long)c.net,
		(unsigned long long)c.states, (unsigned long long)c.api);
	fflush(f);
}

void profrun_close(struct profrun *r)
{
	if (!r)
		return;
	if (r->running) {
		pthread_mutex_lock(&r->mu);
		r->quit = 1;
		pthread_cond_broadcast(&r->cv);
		pthread_mutex_unlock(&r->mu);
		pthread_join(r->thread, NULL);
	}
	mesh_set_hooks(r->m, NULL);
	profdrv_close(r->d);
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
	free(r);
}
