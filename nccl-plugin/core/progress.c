#include <errno.h>

#include "common/clock.h"
#include "nccl-plugin/core/comm.h"
#include "nccl-plugin/core/ctx.h"
#include "nccl-plugin/core/net.h"
#include "nccl-plugin/core/progress.h"
#include "nccl-plugin/core/recv.h"
#include "nccl-plugin/core/send.h"

#define IDLE_SERVE_NS (1LL * 1000000)  /* idle receive comms: served every 1 ms at most */
#define IDLE_WAKE_NS  (10LL * 1000000) /* ... and by the thread every 10 ms, calls or not */

static void serve_idle(struct fqn_ctx *ctx)
{
	fqn_idle_sweep(&ctx->idle, fq_clock_ns(CLOCK_MONOTONIC), IDLE_SERVE_NS, fqn_recv_serve);
}

int fqn_progress_start(struct fqn_ctx *ctx)
{
	return fqn_idle_start(&ctx->idle, IDLE_WAKE_NS, IDLE_SERVE_NS, fqn_recv_serve);
}

void fqn_progress_stop(struct fqn_ctx *ctx)
{
	fqn_idle_stop(&ctx->idle);
}

int fqn_send_progress(struct fqn_send *s)
{
	struct fqn_comm *c = fqn_send_comm(s);
	int rc;

	if (c->err)
		return c->err;
	rc = fqn_send_drive(s);
	if (c->control)
		serve_idle(c->ctx); /* the acks this send may be waiting for */
	return rc;
}

int fqn_recv_progress(struct fqn_recv *r, const struct fqn_req *until)
{
	struct fqn_comm *c = fqn_recv_comm(r);
	int rc = fqn_recv_drive(r, until);

	if (c->control)
		serve_idle(c->ctx);
	return rc;
}

int fqn_isend(struct fqn_send *s, void *data, size_t size, int tag, struct fqn_req **out)
{
	int rc = fqn_send_post(s, data, size, tag, out);

	if (rc < 0 || !*out)
		return rc;
	return fqn_send_progress(s);
}

int fqn_irecv(struct fqn_recv *r, int n, void **data, const size_t *sizes, const int *tags,
	      struct fqn_req **out)
{
	struct fqn_comm *c = fqn_recv_comm(r);
	int rc = fqn_recv_post(r, n, data, sizes, tags, out);

	if (c->control)
		serve_idle(c->ctx);
	return rc;
}

int fqn_test(struct fqn_req *q, int *done, size_t *sizes, int *nsizes)
{
	int rc;

	*done = 0;
	if (nsizes)
		*nsizes = 0;
	if (!q || q->state == FQN_REQ_FREE)
		return -EINVAL;
	if (q->kind == FQN_REQ_FLUSH) {
		*done = 1;
		return 0;
	}
	if (q->state != FQN_REQ_DONE) {
		rc = q->comm->is_send ? fqn_send_progress((struct fqn_send *)q->comm)
				      : fqn_recv_progress((struct fqn_recv *)q->comm, q);
		if (rc < 0)
			return rc;
		if (q->state != FQN_REQ_DONE)
			return 0;
	}
	*done = 1;
	if (q->kind == FQN_REQ_SEND) {
		if (sizes)
			sizes[0] = q->cap[0];
		if (nsizes)
			*nsizes = 1;
	} else {
		for (int j = 0; sizes && j < q->n; j++)
			sizes[j] = q->size[j];
		if (nsizes)
			*nsizes = q->n;
	}
	q->state = FQN_REQ_FREE;
	return 0;
}
