/*
 * recv: the receiving side of a connection.
 *
 * Receives take request slots in posting order; a receive of n buffers
 * claims the next n message numbers. msgs[seq % FQN_SEND_SLOTS] maps a
 * posted message to its request (at most 32 receives x 8 buffers are
 * outstanding, so the window never wraps onto itself). Each lane reads the
 * next chunk header; a header for a message not yet posted leaves the lane
 * stalled (TCP flow control holds the sender back) while other lanes go on,
 * and since every lane carries chunks in message order that cannot
 * deadlock. Payloads land directly in the posted buffers.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl-plugin/conn.h"

struct fqn_rmsg {
	int active;
	uint64_t seq;
	struct fqn_req *req;
	int elem; /* buffer taken, -1 before the first chunk */
	struct fqn_reasm reasm;
};

struct fqn_rlane {
	int accepted;      /* current header checked and accounted */
	int completes;     /* its chunk is the message's last */
	uint64_t last_seq; /* per-lane order check */
	uint64_t last_off;
	int have_last;
	int64_t seen_ns; /* when its header was first seen */
};

struct fqn_recv {
	struct fqn_comm c;
	uint64_t post_seq; /* next message number a receive will claim */
	uint64_t nposted;  /* receives posted */
	int last_lane;     /* where polling starts */
	struct fqn_rlane rl[FQN_MAX_LANES];
	struct fqn_rmsg msgs[FQN_SEND_SLOTS];
	struct fqn_req reqs[FQN_RECV_SLOTS];
};

int fqn_recv_from_lanes(int dev, struct fqn_lane **lanes, int nlanes, size_t chunk_size, uint64_t conn_id,
			struct fqn_recv **out)
{
	struct fqn_recv *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->c.dev = dev;
	r->c.nlanes = nlanes;
	r->c.chunk_size = chunk_size;
	r->c.conn_id = conn_id;
	r->c.err_lane = -1;
	for (int i = 0; i < nlanes; i++)
		r->c.lanes[i] = lanes[i];
	fqn_comm_stats_init(&r->c);
	*out = r;
	return 0;
}

static int recv_bad(struct fqn_recv *r, int i, const char *why)
{
	char what[160];

	snprintf(what, sizeof(what), "malformed chunk from peer (%s)", why);
	return fqn_comm_fail(&r->c, i, -EBADMSG, what);
}

/* Check the current header of lane i and bind its message to a buffer.
 * Returns 1 if accepted, 0 if the message is not posted yet (stall). */
static int recv_accept_hdr(struct fqn_recv *r, int i, const struct fqn_chunk_hdr *h)
{
	struct fqn_rlane *rl = &r->rl[i];
	struct fqn_rmsg *m;
	const char *why;
	int rc;

	if (h->lane != i)
		return recv_bad(r, i, "lane number is not the lane's");
	if (rl->have_last && (h->seq < rl->last_seq || (h->seq == rl->last_seq && h->offset <= rl->last_off)))
		return recv_bad(r, i, "chunk out of order on its lane");
	if (h->seq >= r->post_seq)
		return 0;
	m = &r->msgs[h->seq % FQN_SEND_SLOTS];
	if (!m->active || m->seq != h->seq)
		return recv_bad(r, i, "chunk of a message already complete");
	if (m->elem < 0) {
		struct fqn_req *q = m->req;
		char what[160];

		for (int j = 0; j < q->n && m->elem < 0; j++)
			if (!(q->matched & (1 << j)) && q->tags[j] == h->tag)
				m->elem = j;
		if (m->elem < 0) {
			snprintf(what, sizeof(what),
				 "message %llu has tag %d, which no buffer of its receive has",
				 (unsigned long long)h->seq, h->tag);
			return fqn_comm_fail(&r->c, i, -EINVAL, what);
		}
		if (h->msg_size > q->cap[m->elem]) {
			snprintf(what, sizeof(what),
				 "message %llu of %llu bytes is larger than its receive buffer (%zu bytes)",
				 (unsigned long long)h->seq, (unsigned long long)h->msg_size,
				 q->cap[m->elem]);
			return fqn_comm_fail(&r->c, i, -EMSGSIZE, what);
		}
		q->matched |= 1 << m->elem;
		fqn_reasm_begin(&m->reasm, h->msg_size, h->tag, r->c.chunk_size);
	}
	rc = fqn_reasm_add(&m->reasm, h, &why);
	if (rc < 0)
		return recv_bad(r, i, why);
	rl->completes = rc;
	rl->accepted = 1;
	rl->have_last = 1;
	rl->last_seq = h->seq;
	rl->last_off = h->offset;
	return 1;
}

static void recv_chunk_done(struct fqn_recv *r, int i, const struct fqn_chunk_hdr *h)
{
	struct fqn_rlane *rl = &r->rl[i];
	struct fqn_lane_stats *st = &r->c.stats[i];
	struct fqn_rmsg *m = &r->msgs[h->seq % FQN_SEND_SLOTS];

	st->bytes += h->len;
	st->chunks++;
	fqn_hist_add(&st->owd, rl->seen_ns - h->send_ns);
	fqn_comm_tick(&r->c, i, rl->seen_ns, 0);
	rl->accepted = 0;
	rl->seen_ns = 0;
	if (!rl->completes)
		return;
	st->msgs++;
	m->req->size[m->elem] = m->reasm.size;
	m->active = 0;
	if (--m->req->msgs_left == 0)
		m->req->state = FQN_REQ_DONE;
}

/* Progress lane i; stop early once `until` (if set) is complete, so a
 * test() that succeeds costs no extra recv() on the way out. */
static int recv_lane(struct fqn_recv *r, int i, const struct fqn_req *until)
{
	struct fqn_lane *l = r->c.lanes[i];
	struct fqn_rlane *rl = &r->rl[i];

	for (;;) {
		struct fqn_chunk_hdr h;
		const char *why = "?";
		struct fqn_rmsg *m;
		int rc, sync;

		rc = l->ops->rx_header(l, &h, &why);
		if (rc == -EBADMSG)
			return recv_bad(r, i, why);
		if (rc < 0)
			return fqn_comm_fail(&r->c, i, rc, "receive");
		if (rc == 0)
			return 0;
		if (!rl->seen_ns) {
			rl->seen_ns = fqn_clock_now(&sync);
			r->c.stats[i].unsync |= !sync || !(h.flags & FQN_CHUNK_F_SYNC);
		}
		if (!rl->accepted) {
			rc = recv_accept_hdr(r, i, &h);
			if (rc <= 0)
				return rc;
		}
		m = &r->msgs[h.seq % FQN_SEND_SLOTS];
		rc = l->ops->rx_payload(l, (uint8_t *)m->req->data[m->elem] + h.offset);
		if (rc < 0)
			return fqn_comm_fail(&r->c, i, rc, "receive");
		if (rc == 0)
			return 0;
		recv_chunk_done(r, i, &h);
		if (until && until->state == FQN_REQ_DONE)
			return 0;
	}
}

int fqn_recv_progress(struct fqn_recv *r, const struct fqn_req *until)
{
	if (r->c.err)
		return r->c.err;
	for (int k = 0; k < r->c.nlanes; k++) {
		/* Start where the last chunk came from: small messages follow one another. */
		int i = (r->last_lane + k) % r->c.nlanes;
		int rc = recv_lane(r, i, until);

		if (rc < 0)
			return rc;
		if (until && until->state == FQN_REQ_DONE) {
			r->last_lane = i;
			break;
		}
	}
	return 0;
}

int fqn_irecv(struct fqn_recv *r, int n, void **data, const size_t *sizes, const int *tags,
	      struct fqn_req **out)
{
	struct fqn_req *q;

	*out = NULL;
	if (r->c.err)
		return r->c.err;
	if (n < 1 || n > FQN_MAX_RECVS || !data || !sizes || !tags)
		return -EINVAL;
	q = &r->reqs[r->nposted % FQN_RECV_SLOTS];
	if (q->state != FQN_REQ_FREE)
		return 0;
	for (int j = 0; j < n; j++) {
		if (sizes[j] && !data[j])
			return -EINVAL;
		if (r->msgs[(r->post_seq + (uint64_t)j) % FQN_SEND_SLOTS].active)
			return 0; /* only if the caller holds completed requests untested */
	}
	memset(q, 0, sizeof(*q));
	q->kind = FQN_REQ_RECV;
	q->comm = &r->c;
	q->seq = r->post_seq;
	q->n = n;
	q->msgs_left = n;
	for (int j = 0; j < n; j++) {
		struct fqn_rmsg *m = &r->msgs[(r->post_seq + (uint64_t)j) % FQN_SEND_SLOTS];

		q->data[j] = data[j];
		q->cap[j] = sizes[j];
		q->tags[j] = tags[j];
		m->active = 1;
		m->seq = r->post_seq + (uint64_t)j;
		m->req = q;
		m->elem = -1;
	}
	q->state = FQN_REQ_ACTIVE;
	r->post_seq += (uint64_t)n;
	r->nposted++;
	*out = q;
	return fqn_recv_progress(r, q);
}

static struct fqn_req fqn_flush_done = {.kind = FQN_REQ_FLUSH, .state = FQN_REQ_DONE};

int fqn_iflush(struct fqn_recv *r, struct fqn_req **out)
{
	*out = NULL;
	if (r->c.err)
		return r->c.err;
	*out = &fqn_flush_done;
	return 0;
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

int fqn_close_recv(struct fqn_recv *r)
{
	if (!r)
		return 0;
	fqn_comm_release(&r->c);
	free(r);
	return 0;
}
