/* coll: mesh setup, the transfer engine and the collectives (see coll.h). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/collbench/coll.h"

struct mesh {
	struct netdrv *d;
	int rank, nranks;
	double timeout_s;
	int idle_us; /* a pass of the engine that moved nothing sleeps this long (0: spin) */
	void **send; /* [peer] */
	void **recv;
	/* [peer]: open until mesh_close, so a harness can tell accepted lanes from dialed ones */
	void **listen;
	const struct coll_hooks *hooks;
	char err[256];
};

/* One direction of one transfer: bytes cut into slices, up to COLL_WINDOW
 * requests in flight, completed in order. On a received slice, reduce (if
 * set) folds staging into dst. */
struct xfer {
	void *comm;
	int is_send;
	char *buf;
	size_t bytes;
	size_t posted, completed; /* bytes */
	int started;              /* a zero-byte transfer still sends one message */
	void *reqs[COLL_WINDOW];
	size_t off[COLL_WINDOW], len[COLL_WINDOW];
	int head, inflight;
	float *reduce_dst;
	int peer, conn; /* conn: the connection's index, for the hooks */
	int ended, step;
	unsigned long moves; /* requests posted and completed, so far */
	void *hx, *hreq[COLL_WINDOW], *hnet[COLL_WINDOW];
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void mesh_set_hooks(struct mesh *m, const struct coll_hooks *h)
{
	m->hooks = h;
}

void mesh_set_idle(struct mesh *m, int idle_us)
{
	m->idle_us = idle_us;
}

const char *mesh_error(const struct mesh *m)
{
	return m->err;
}

static int xfer_done(const struct xfer *x)
{
	return x->started && x->completed == x->bytes && x->inflight == 0;
}

static int xfer_post(struct mesh *m, struct xfer *x)
{
	while (x->inflight < COLL_WINDOW && (x->posted < x->bytes || !x->started)) {
		int slot = (x->head + x->inflight) % COLL_WINDOW, tag = 0;
		size_t len = x->bytes - x->posted < COLL_SLICE ? x->bytes - x->posted : COLL_SLICE;
		void *data = x->buf + x->posted, *req = NULL;
		ncclResult_t rc;

		rc = x->is_send ? netdrv_isend(m->d, x->comm, data, len, tag, NULL, &req)
				: netdrv_irecv(m->d, x->comm, 1, &data, &len, &tag, NULL, &req);
		if (rc != ncclSuccess) {
			snprintf(m->err, sizeof(m->err), "%s of %zu bytes failed: ncclResult %d",
				 x->is_send ? "isend" : "irecv", len, rc);
			return -1;
		}
		if (!req)
			return 0; /* the plugin is full: retry later, as NCCL does */
		if (m->hooks && !x->started)
			x->hx = m->hooks->xfer_begin(
			    m->hooks->arg, x->peer, x->is_send, x->bytes,
			    x->bytes ? (int)((x->bytes + COLL_SLICE - 1) / COLL_SLICE) : 1);
		if (m->hooks)
			x->hreq[slot] = m->hooks->req_posted(m->hooks->arg, x->hx, x->step++, x->is_send, len,
							     x->posted + len, x->conn, &x->hnet[slot]);
		x->reqs[slot] = req;
		x->off[slot] = x->posted;
		x->len[slot] = len;
		x->posted += len;
		x->inflight++;
		x->moves++;
		x->started = 1;
	}
	return 0;
}

static void reduce_slice(float *dst, const float *src, size_t bytes)
{
	for (size_t i = 0; i < bytes / sizeof(float); i++)
		dst[i] += src[i];
}

static int xfer_test(struct mesh *m, struct xfer *x)
{
	while (x->inflight) {
		int done = 0, size = -1, slot = x->head;
		ncclResult_t rc = netdrv_test(m->d, x->reqs[slot], &done, &size);

		if (rc != ncclSuccess) {
			snprintf(m->err, sizeof(m->err), "test of a %s failed: ncclResult %d",
				 x->is_send ? "send" : "receive", rc);
			return -1;
		}
		if (!done)
			return 0;
		if (size != (int)x->len[slot]) {
			snprintf(m->err, sizeof(m->err), "%s completed with %d bytes, %zu expected",
				 x->is_send ? "send" : "receive", size, x->len[slot]);
			return -1;
		}
		if (x->reduce_dst)
			reduce_slice((float *)((char *)x->reduce_dst + x->off[slot]),
				     (const float *)(x->buf + x->off[slot]), x->len[slot]);
		x->completed += x->len[slot];
		if (m->hooks)
			m->hooks->req_done(m->hooks->arg, x->hx, x->hreq[slot], x->hnet[slot], x->is_send,
					   x->len[slot], x->completed);
		x->head = (x->head + 1) % COLL_WINDOW;
		x->inflight--;
		x->moves++;
	}
	if (m->hooks && xfer_done(x) && !x->ended) {
		m->hooks->xfer_end(m->hooks->arg, x->hx);
		x->ended = 1;
	}
	return 0;
}

static int xfer_run(struct mesh *m, struct xfer *x, int n)
{
	double end = now_s() + m->timeout_s;

	for (;;) {
		unsigned long moved = 0;
		int all = 1;

		for (int i = 0; i < n; i++) {
			if (xfer_done(&x[i]))
				continue;
			all = 0;
			moved -= x[i].moves;
			if (xfer_post(m, &x[i]) < 0 || xfer_test(m, &x[i]) < 0)
				return -1;
			moved += x[i].moves;
		}
		if (all)
			return 0;
		if (!moved && m->idle_us)
			nanosleep(&(struct timespec){.tv_nsec = m->idle_us * 1000L}, NULL);
		if (now_s() > end) {
			snprintf(m->err, sizeof(m->err), "transfer did not complete in %.0f s", m->timeout_s);
			return -1;
		}
	}
}

static int mesh_connect_all(struct mesh *m, char *handles, void **lcomms, char *err, size_t errlen)
{
	double end = now_s() + m->timeout_s;
	int n = m->nranks, r = m->rank, left = 2 * (n - 1);

	while (left > 0) {
		for (int p = 0; p < n; p++) {
			char *h = handles + ((size_t)p * (size_t)n + (size_t)r) * NCCL_NET_HANDLE_MAXSIZE;

			if (p == r)
				continue;
			if (!m->send[p]) {
				if (netdrv_connect(m->d, 0, h, &m->send[p]) != ncclSuccess) {
					snprintf(err, errlen, "connect to rank %d failed", p);
					return -ECONNREFUSED;
				}
				left -= m->send[p] != NULL;
			}
			if (!m->recv[p]) {
				if (netdrv_accept(m->d, lcomms[p], &m->recv[p]) != ncclSuccess) {
					snprintf(err, errlen, "accept from rank %d failed", p);
					return -ECONNREFUSED;
				}
				left -= m->recv[p] != NULL;
			}
		}
		if (now_s() > end) {
			snprintf(err, errlen, "connections not established in %.0f s", m->timeout_s);
			return -ETIMEDOUT;
		}
	}
	return 0;
}

int mesh_open(struct netdrv *d, struct bootstrap *b, int dev, double timeout_s, struct mesh **out, char *err,
	      size_t errlen)
{
	struct mesh *m;
	char *mine = NULL, *all = NULL;
	void **lcomms = NULL;
	int n, rc = -ENOMEM;

	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->d = d;
	m->timeout_s = timeout_s;
	rc = bootstrap_rank(b, &m->rank, &m->nranks);
	n = m->nranks;
	m->send = calloc((size_t)n, sizeof(void *));
	m->recv = calloc((size_t)n, sizeof(void *));
	lcomms = calloc((size_t)n, sizeof(void *));
	mine = calloc((size_t)n, NCCL_NET_HANDLE_MAXSIZE);
	all = calloc((size_t)n * (size_t)n, NCCL_NET_HANDLE_MAXSIZE);
	if (!m->send || !m->recv || !lcomms || !mine || !all)
		goto fail;
	/* mine[p]: the handle rank p connects to, to send to this rank. */
	for (int p = 0; p < n; p++) {
		if (p != m->rank && netdrv_listen(d, dev, mine + (size_t)p * NCCL_NET_HANDLE_MAXSIZE,
						  &lcomms[p]) != ncclSuccess) {
			snprintf(err, errlen, "listen on device %d failed", dev);
			rc = -EIO;
			goto fail;
		}
	}
	rc = bootstrap_allgather(b, mine, all, (size_t)n * NCCL_NET_HANDLE_MAXSIZE);
	if (rc < 0) {
		snprintf(err, errlen, "handle exchange failed: %s", strerror(-rc));
		goto fail;
	}
	rc = mesh_connect_all(m, all, lcomms, err, errlen);
	if (rc < 0)
		goto fail;
	m->listen = lcomms;
	free(mine);
	free(all);
	*out = m;
	return 0;

fail:
	for (int p = 0; lcomms && p < n; p++)
		if (lcomms[p])
			netdrv_close_listen(d, lcomms[p]);
	free(lcomms);
	free(mine);
	free(all);
	mesh_close(m);
	return rc;
}

void mesh_close(struct mesh *m)
{
	if (!m)
		return;
	for (int p = 0; p < m->nranks; p++) {
		if (m->send && m->send[p])
			netdrv_close_send(m->d, m->send[p]);
		if (m->recv && m->recv[p])
			netdrv_close_recv(m->d, m->recv[p]);
		if (m->listen && m->listen[p])
			netdrv_close_listen(m->d, m->listen[p]);
	}
	free(m->send);
	free(m->recv);
	free(m->listen);
	free(m);
}

/* Ring allreduce, NCCL's algorithm: n-1 reduce-scatter steps then n-1
 * allgather steps; each step sends one part to the next rank while
 * receiving another from the previous one, sliced and pipelined. */
int coll_allreduce(struct mesh *m, const float *send, float *recv, float *tmp, size_t count)
{
	int n = m->nranks, r = m->rank, next = (r + 1) % n, prev = (r + n - 1) % n;

#define PART_OFF(p) ((size_t)(p)*count / (size_t)n)
#define PART_LEN(p) (PART_OFF((p) + 1) - PART_OFF(p))
	if (recv != send)
		memcpy(recv, send, count * sizeof(float));
	if (n == 1)
		return 0;
	for (int s = 0; s < 2 * (n - 1); s++) {
		int reduce = s < n - 1;
		int sp = reduce ? (r - s + 2 * n) % n : (r + 1 - (s - (n - 1)) + 2 * n) % n;
		int rp = reduce ? (r - s - 1 + 2 * n) % n : (r - (s - (n - 1)) + 2 * n) % n;
		struct xfer x[2] = {
		    {.comm = m->send[next],
		     .is_send = 1,
		     .peer = next,
		     .conn = 2 * next,
		     .buf = (char *)(recv + PART_OFF(sp)),
		     .bytes = PART_LEN(sp) * sizeof(float)},
		    {.comm = m->recv[prev],
		     .peer = prev,
		     .conn = 2 * prev + 1,
		     .buf = (char *)((reduce ? tmp : recv) + PART_OFF(rp)),
		     .bytes = PART_LEN(rp) * sizeof(float),
		     .reduce_dst = reduce ? recv + PART_OFF(rp) : NULL},
		};

		if (xfer_run(m, x, 2) < 0)
			return -1;
	}
	return 0;
#undef PART_OFF
#undef PART_LEN
}

/* All pairs at once, as NCCL's grouped send/recv alltoall. */
int coll_alltoall(struct mesh *m, const char *send, char *recv, size_t bytes_per_rank)
{
	int n = m->nranks, r = m->rank, k = 0, rc;
	struct xfer *x = calloc(2 * (size_t)n, sizeof(*x));

	if (!x) {
		snprintf(m->err, sizeof(m->err), "out of memory");
		return -1;
	}
	memcpy(recv + (size_t)r * bytes_per_rank, send + (size_t)r * bytes_per_rank, bytes_per_rank);
	for (int p = 0; p < n; p++) {
		if (p == r)
			continue;
		x[k++] = (struct xfer){.comm = m->send[p],
				       .is_send = 1,
				       .peer = p,
				       .conn = 2 * p,
				       .buf = (char *)send + (size_t)p * bytes_per_rank,
				       .bytes = bytes_per_rank};
		x[k++] = (struct xfer){.comm = m->recv[p],
				       .peer = p,
				       .conn = 2 * p + 1,
				       .buf = recv + (size_t)p * bytes_per_rank,
				       .bytes = bytes_per_rank};
	}
	rc = xfer_run(m, x, k);
	free(x);
	return rc;
}

int coll_pingpong_half(struct mesh *m, char *buf, size_t bytes, int back)
{
	int peer = 1 - m->rank, is_send = (m->rank == 0) != !!back;
	struct xfer x;

	if (m->rank > 1 || m->nranks < 2)
		return 0;
	x = (struct xfer){.comm = is_send ? m->send[peer] : m->recv[peer],
			  .is_send = is_send,
			  .peer = peer,
			  .conn = 2 * peer + !is_send,
			  .buf = buf,
			  .bytes = bytes};
	return xfer_run(m, &x, 1);
}

int coll_pingpong(struct mesh *m, char *buf, size_t bytes)
{
	return coll_pingpong_half(m, buf, bytes, 0) < 0 || coll_pingpong_half(m, buf, bytes, 1) < 0 ? -1 : 0;
}
