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
 * deadlock. Payloads land directly in the posted buffers. A message is
 * complete when its chunks cover every offset (fqn_reasm); without control
 * mode nothing is ever resent, so a chunk that arrives twice (from a
 * broken or hostile peer) fails the comm with -EBADMSG instead of landing.
 *
 * Control mode: each lane acks the chunks it has taken (cumulative count,
 * sent when the lane has been drained and at least every 32 chunks), and
 * a chunk is taken once: a copy of a chunk already held (resent after its
 * ack was lost with a lane) is read into a sink of chunk_size bytes and
 * dropped (relia.h); a chunk longer than that fails the comm. A
 * lane whose socket fails, or whose path the agent has DOWN, is closed; a
 * re-dialed lane replaces it (rejoin.h) and is acked at once (the
 * sender's test that the new path works). Chunks are counted when their
 * payload is complete, so a chunk cut off with its lane is simply taken
 * again from the resend. A comm with no receive posted is still served
 * (copies drained and acked, re-dialed lanes taken and acked) from any
 * control-mode progress call in the process (progress.h): NCCL
 * calls nothing on it then, and the sender may be waiting for those acks.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "nccl-plugin/control/failover.h"
#include "nccl-plugin/control/rejoin.h"
#include "nccl-plugin/control/relia.h"
#include "nccl-plugin/core/comm.h"
#include "nccl-plugin/core/ctx.h"
#include "nccl-plugin/core/failover.h"
#include "nccl-plugin/core/recv.h"
#include "nccl-plugin/core/rejoin.h"
#include "nccl-plugin/idle.h"
#include "nccl-plugin/plog.h"

#define REJOIN_POLL_NS (2LL * 1000000)
#define ACK_EVERY      32
#define PATH_HEALTH_NS (5LL * 1000000) /* silent-lane checks: every 5 ms per comm at most */

/* The receiver's lanes know only UP and DOWN: it never re-dials (lane_fsm.h). */
static const struct fqn_lane_fsm_cfg recv_fsm;

struct fqn_rmsg {
	int active;
	uint64_t seq;
	struct fqn_req *req;
	int elem;               /* buffer taken, -1 before the first chunk */
	struct fqn_reasm reasm; /* completion is by coverage, in every mode */
	/* without control mode: a chunk covers its offset when its header is
	 * accepted (a second copy is refused before it lands), so the message
	 * is complete only when every chunk is covered and none is still
	 * landing: a lane may be mid-payload while another lands the last */
	int covered;
	unsigned landing;
	/* when its receive was posted, on the global timeline (owd_from) */
	int64_t post_ns;
};

struct fqn_rlane {
	int accepted;      /* current header checked and accounted */
	uint64_t last_seq; /* per-lane order check */
	uint64_t last_off;
	int have_last;
	int64_t seen_ns; /* when its header was first seen */
	int seen_sync;   /* both ends' stamps of it on the global timeline */
	unsigned idle;   /* consecutive polls that found no chunk header */
	/* control mode: the current chunk */
	int dup; /* a copy of a chunk held already: read into the sink */
	uint64_t cur_seq, cur_idx;
};

struct fqn_recv {
	struct fqn_comm c;
	uint64_t post_seq; /* next message number a receive will claim */
	uint64_t nposted;  /* receives posted */
	int last_lane;     /* where polling starts */
	unsigned polls;    /* progress calls, for polling idle lanes less often */
	int small;         /* the last chunk header seen was of a one-chunk message */
	struct fqn_rlane rl[FQN_MAX_LANES];
	struct fqn_rmsg msgs[FQN_SEND_SLOTS];
	struct fqn_req reqs[FQN_RECV_SLOTS];
	/* control mode */
	uint8_t *sink; /* chunk_size bytes for dropped copies */
	int64_t next_rejoin_ns;
	int64_t next_silent_ns; /* next silent-lane check */
	int64_t waiting_ns;     /* a receive has been pending since (0: none pending) */
	uint64_t pending_msgs;  /* messages posted and not complete */
	int registered;
	uint64_t dups;
	uint64_t owd_negative; /* chunks seen before they were sent, by the two clocks (owd_add) */
	int64_t owd_most_negative;
	/* control mode: the owner's calls and fqn_recv_serve (from any
	 * thread) take lock; idle links it into its context's idle set */
	pthread_mutex_t lock;
	int serving; /* in fqn_recv_serve: its owner is not calling */
	struct fqn_idle_link idle;
};

int fqn_recv_from_lanes(struct fqn_ctx *ctx, int dev, struct fqn_lane **lanes, int nlanes, size_t chunk_size,
			uint64_t conn_id, struct fqn_recv **out)
{
	struct fqn_recv *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->c.ctx = ctx;
	r->c.dev = dev;
	r->c.nlanes = nlanes;
	r->c.chunk_size = chunk_size;
	r->c.conn_id = conn_id;
	r->c.err_lane = -1;
	r->c.tclass = ctx->cfg.tclass;
	r->c.fo = fqn_ctl_failover_cfg(&ctx->cfg);
	for (int i = 0; i < nlanes; i++) {
		r->c.lanes[i] = lanes[i];
		fqn_comm_apply_tclass(&r->c, i);
	}
	fqn_comm_stats_init(&r->c);
	pthread_mutex_init(&r->lock, NULL);
	*out = r;
	return 0;
}

struct fqn_comm *fqn_recv_comm(struct fqn_recv *r)
{
	return &r->c;
}

void fqn_recv_set_peer_rank(struct fqn_recv *r, uint32_t rank1)
{
	r->c.peer_rank1 = rank1;
}

static int recv_bad(struct fqn_recv *r, int i, const char *why)
{
	char what[160];

	snprintf(what, sizeof(what), "malformed chunk from peer (%s)", why);
	return fqn_comm_fail(&r->c, i, -EBADMSG, what);
}

/* Bind message m to a buffer of its receive by the first chunk's tag. */
static int recv_bind(struct fqn_recv *r, int i, struct fqn_rmsg *m, const struct fqn_chunk_hdr *h)
{
	struct fqn_req *q = m->req;
	char what[160];

	if (m->elem >= 0)
		return 0;
	for (int j = 0; j < q->n && m->elem < 0; j++)
		if (!(q->matched & (1 << j)) && q->tags[j] == h->tag)
			m->elem = j;
	if (m->elem < 0) {
		snprintf(what, sizeof(what), "message %llu has tag %d, which no buffer of its receive has",
			 (unsigned long long)h->seq, h->tag);
		return fqn_comm_fail(&r->c, i, -EINVAL, what);
	}
	if (h->msg_size > q->cap[m->elem]) {
		snprintf(what, sizeof(what),
			 "message %llu of %llu bytes is larger than its receive buffer (%zu bytes)",
			 (unsigned long long)h->seq, (unsigned long long)h->msg_size, q->cap[m->elem]);
		m->elem = -1;
		return fqn_comm_fail(&r->c, i, -EMSGSIZE, what);
	}
	if (fqn_reasm_begin(&m->reasm, h->msg_size, h->tag, r->c.chunk_size) < 0) {
		m->elem = -1;
		return fqn_comm_fail(&r->c, i, -ENOMEM, "receive");
	}
	q->matched |= 1 << m->elem;
	return 0;
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
	rc = recv_bind(r, i, m, h);
	if (rc < 0)
		return rc;
	/* No resends here: a chunk covered already is a broken peer's, and
	 * taking it would land bytes over data already delivered. */
	rc = fqn_reasm_add(&m->reasm, h, &why);
	if (rc < 0)
		return recv_bad(r, i, why);
	m->covered |= rc;
	m->landing++;
	rl->accepted = 1;
	rl->have_last = 1;
	rl->last_seq = h->seq;
	rl->last_off = h->offset;
	return 1;
}

/* Where a chunk's one-way delay starts: when it was sent, or, for a
 * chunk sent before its receive was posted and seen only after that, at
 * the post. Such a chunk waited in sockets for the receiver (its rank held
 * up downstream, say by a slow peer): time no link added, and not the
 * lane's delay. What is left is the delay from when both ends were ready
 * (at most the network's; the network's whole when the receiver was
 * first). A chunk seen before its post keeps its whole delay. */
static int64_t owd_from(const struct fqn_rlane *rl, const struct fqn_rmsg *m, const struct fqn_chunk_hdr *h)
{
	return m->post_ns > h->send_ns && m->post_ns < rl->seen_ns ? m->post_ns : h->send_ns;
}

/* A chunk's one-way delay into its lane's interval, where both ends'
 * stamps were on the synchronised timeline. A delay below zero is none:
 * the two ends' clock models disagreed by more than it (-4.7 ms was once
 * reported as a window's minimum, 1 window of 855); it is left out of the
 * interval and counted (logged at close), never reported as a delay. */
static void owd_add(struct fqn_recv *r, int i, const struct fqn_rmsg *m, const struct fqn_chunk_hdr *h)
{
	const struct fqn_rlane *rl = &r->rl[i];
	int64_t d;

	if (!rl->seen_sync) /* a delay across two clocks is no delay */
		return;
	d = rl->seen_ns - owd_from(rl, m, h);
	if (d >= 0) {
		fqn_hist_add(&r->c.stats[i].owd, d);
		return;
	}
	r->owd_negative++;
	if (d < r->owd_most_negative)
		r->owd_most_negative = d;
}

static void recv_chunk_done(struct fqn_recv *r, int i, const struct fqn_chunk_hdr *h)
{
	struct fqn_rlane *rl = &r->rl[i];
	struct fqn_lane_stats *st = &r->c.stats[i];
	struct fqn_rmsg *m = &r->msgs[h->seq % FQN_SEND_SLOTS];

	st->bytes += h->len;
	st->chunks++;
	owd_add(r, i, m, h);
	fqn_comm_tick(&r->c, i, rl->seen_ns, 0);
	rl->accepted = 0;
	rl->seen_ns = 0;
	if (--m->landing || !m->covered)
		return;
	st->msgs++;
	fqn_reasm_end(&m->reasm);
	m->req->size[m->elem] = m->reasm.size;
	m->active = 0;
	r->pending_msgs--;
	if (--m->req->msgs_left == 0)
		m->req->state = FQN_REQ_DONE;
}

/* Polling an empty socket is a syscall: while the traffic is one-chunk
 * messages (the last header seen says so), a lane that has found no chunk
 * header for IDLE_AFTER polls in a row is polled on every IDLE_EVERY-th
 * progress call only, unless the last message completed on it. So a
 * test() waiting for a small message costs one recv() (on the lane the
 * sender keeps using while its lanes keep up), not one per lane. A lane is
 * hot again as soon as a header arrives on it; a chunk arriving on an idle
 * lane waits at most IDLE_EVERY - 1 calls, which happens when the sender
 * moves to another lane (one was busy, or a large message begins). Large
 * messages poll every lane on every call: a lane polled late would fill
 * its socket buffer and lose its share of the stripes. */
#define IDLE_AFTER 1024
#define IDLE_EVERY 16

/* Progress lane i; stop early once `until` (if set) is complete, so a
 * test() that succeeds costs no extra recv() on the way out. */
static int recv_lane(struct fqn_recv *r, int i, const struct fqn_req *until)
{
	struct fqn_lane *l = r->c.lanes[i];
	struct fqn_rlane *rl = &r->rl[i];

	rl->idle++;
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
		rl->idle = 0;
		r->small = h.msg_size <= r->c.chunk_size;
		if (!rl->seen_ns) {
			rl->seen_ns =
			    fqn_clock_at(r->c.ctx, l->ops->rx_stamp ? l->ops->rx_stamp(l) : 0, &sync);
			rl->seen_sync = sync && (h.flags & FQN_CHUNK_F_SYNC);
			r->c.stats[i].unsync |= !rl->seen_sync;
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

/* ---- control mode ---- */

/* Lane i's current header: 1 accepted (rl->dup says where the payload
 * goes), 0 not posted yet (stall), or the comm's error. */
static int ctl_accept_hdr(struct fqn_recv *r, int i, const struct fqn_chunk_hdr *h)
{
	struct fqn_rlane *rl = &r->rl[i];
	struct fqn_rmsg *m = &r->msgs[h->seq % FQN_SEND_SLOTS];
	const char *why;
	int rc;

	if (h->lane != i)
		return recv_bad(r, i, "lane number is not the lane's");
	if (h->len > r->c.chunk_size) /* the sink's size: no read may overrun it */
		return recv_bad(r, i, "chunk longer than the connection's chunk size");
	switch (fqn_rx_classify(h->seq, r->post_seq, m->active, m->seq)) {
	case FQN_RX_STALL:
		return 0;
	case FQN_RX_DUP:
		rl->dup = 1;
		break;
	case FQN_RX_LIVE:
		rc = recv_bind(r, i, m, h);
		if (rc < 0)
			return rc;
		rc = fqn_reasm_check(&m->reasm, h, &why);
		if (rc == -EBADMSG)
			return recv_bad(r, i, why);
		rl->dup = rc == -EALREADY;
		break;
	}
	if (!r->sink) {
		r->sink = malloc(r->c.chunk_size);
		if (!r->sink)
			return fqn_comm_fail(&r->c, i, -ENOMEM, "receive");
	}
	/* Another lane still landing this chunk may be dead (this copy is
	 * the resend): it finishes into the sink, this one lands. */
	for (int j = 0; !rl->dup && j < r->c.nlanes; j++)
		if (j != i && r->rl[j].accepted && !r->rl[j].dup && r->rl[j].cur_seq == h->seq &&
		    r->rl[j].cur_idx == h->offset / r->c.chunk_size)
			r->rl[j].dup = 1;
	rl->cur_seq = h->seq;
	rl->cur_idx = h->offset / r->c.chunk_size;
	rl->accepted = 1;
	return 1;
}

static void ctl_chunk_done(struct fqn_recv *r, int i, const struct fqn_chunk_hdr *h)
{
	struct fqn_rlane *rl = &r->rl[i];
	struct fqn_lane_stats *st = &r->c.stats[i];
	struct fqn_rmsg *m = &r->msgs[h->seq % FQN_SEND_SLOTS];
	int dup = rl->dup, complete = 0;

	r->c.lc[i].rx_count++;
	rl->accepted = 0;
	rl->dup = 0;
	if (dup) {
		r->dups++;
		rl->seen_ns = 0;
		return;
	}
	st->bytes += h->len;
	st->chunks++;
	owd_add(r, i, m, h);
	fqn_comm_tick(&r->c, i, rl->seen_ns, 0);
	rl->seen_ns = 0;
	if (fqn_seen_mark(&m->reasm.cov, rl->cur_idx, &complete) == 0)
		r->dups++; /* cannot happen: a second copy in flight is switched to the sink */
	if (!complete)
		return;
	st->msgs++;
	fqn_reasm_end(&m->reasm);
	m->req->size[m->elem] = m->reasm.size;
	m->active = 0;
	r->pending_msgs--;
	if (--m->req->msgs_left == 0)
		m->req->state = FQN_REQ_DONE;
}

/* Lane i is gone: a chunk it was landing may be taken from another copy. */
static void ctl_lane_drop(struct fqn_recv *r, int i, const char *cause, int err, int64_t now)
{
	struct fqn_rlane *rl = &r->rl[i];
	struct fqn_lane_ctl *lc = &r->c.lc[i];

	memset(rl, 0, sizeof(*rl));                  /* a chunk half landed is simply taken from its resend */
	if (cause && lc->fsm.state == FQN_LANE_UP) { /* a new outage */
		fqn_ctl_event(&r->c, i, -1, cause, now, 0, 0, 0);
		lc->reported = 1;
		FQN_WARN(
		    "connection %llx lane %d/%d (%s %s <- %s): %s%s%s; waiting for the sender to re-dial",
		    (unsigned long long)r->c.conn_id, i, r->c.nlanes, lc->nic, lc->local, lc->peer, cause,
		    err ? ": " : "", err ? strerror(-err) : "");
	} else if (cause) { /* the same outage: the socket of a lane already down went too */
		FQN_INFO("connection %llx lane %d/%d (%s %s <- %s): down since %lld ms, now %s%s%s too",
			 (unsigned long long)r->c.conn_id, i, r->c.nlanes, lc->nic, lc->local, lc->peer,
			 (long long)((now - lc->down_ns) / 1000000), cause, err ? ": " : "",
			 err ? strerror(-err) : "");
	}
	r->c.lanes[i]->ops->destroy(r->c.lanes[i]);
	r->c.lanes[i] = NULL;
	fqn_lane_fsm_step(&lc->fsm, FQN_LEV_DOWN, now, &recv_fsm);
	lc->cause = cause ? cause : "replaced";
	lc->last_err = err;
	lc->down_ns = now;
}

/* Send lane i's ack if it is due. 0, or a negative errno (lane failed). */
static int ctl_ack(struct fqn_recv *r, int i)
{
	struct fqn_lane_ctl *lc = &r->c.lc[i];
	uint8_t rec[FQN_CTRL_SIZE];
	int rc;

	if (!lc->ack_owed && lc->rx_count == lc->ack_sent)
		return 0;
	fqn_ack_encode((uint16_t)i, lc->rx_count, rec);
	rc = r->c.lanes[i]->ops->tx_ctrl(r->c.lanes[i], rec);
	if (rc == -EAGAIN)
		return 0; /* a later, larger count goes instead */
	if (rc < 0)
		return rc;
	lc->ack_sent = lc->rx_count;
	/* 1: queued behind a full socket. Owed until it is out: the sender
	 * may be waiting for it with nothing more to send, so no newer ack
	 * would ever push it (a stall that outlived the congestion). */
	lc->ack_owed = rc == 1;
	return 0;
}

static void ctl_install(struct fqn_recv *r, struct fqn_lane *l, int64_t now)
{
	int i = l->index;
	struct fqn_lane_ctl *lc = &r->c.lc[i];
	int64_t down_ns = fqn_rejoin_failback_due(lc->fsm.state, lc->reported) ? lc->down_ns : 0;

	if (r->c.lanes[i])
		ctl_lane_drop(r, i, NULL, 0, now);
	r->c.lanes[i] = l;
	fqn_comm_apply_tclass(&r->c, i);
	fqn_ctl_lane_init(&r->c, i);
	if (down_ns) {
		FQN_WARN("connection %llx lane %d (%s <- %s): back after %lld ms (re-dialed); failback",
			 (unsigned long long)r->c.conn_id, i, lc->nic, lc->peer,
			 (long long)((now - down_ns) / 1000000));
		fqn_ctl_event(&r->c, i, i, "failback", now, 0, 0, now - down_ns);
	}
	lc->reported = 0;
	fqn_lane_fsm_step(&lc->fsm, FQN_LEV_BACK, now, &recv_fsm);
	lc->down_ns = 0;
	lc->rx_count = lc->ack_sent = 0;
	lc->ack_owed = 1; /* the sender waits for this ack before it trusts the lane */
	r->c.stats[i].interval_start = fqn_clock_now(r->c.ctx, &(int){0});
}

/* Progress lane i (control mode). 0, or the comm's error; a lane failure
 * only drops the lane. */
static int ctl_recv_lane(struct fqn_recv *r, int i, const struct fqn_req *until, int64_t now)
{
	struct fqn_lane *l = r->c.lanes[i];
	struct fqn_rlane *rl = &r->rl[i];
	int rc = 0;

	for (;;) {
		struct fqn_chunk_hdr h;
		const char *why = "?";
		struct fqn_rmsg *m;
		uint8_t *dst;
		int sync;

		rc = l->ops->rx_header(l, &h, &why);
		if (rc == -EBADMSG)
			return recv_bad(r, i, why);
		if (rc <= 0)
			break;
		r->c.lc[i].progress_ns = now; /* the lane is not silent */
		if (!rl->seen_ns) {
			rl->seen_ns =
			    fqn_clock_at(r->c.ctx, l->ops->rx_stamp ? l->ops->rx_stamp(l) : 0, &sync);
			rl->seen_sync = sync && (h.flags & FQN_CHUNK_F_SYNC);
			r->c.stats[i].unsync |= !rl->seen_sync;
		}
		if (!rl->accepted) {
			rc = ctl_accept_hdr(r, i, &h);
			if (rc < 0)
				return rc;
			if (rc == 0)
				break;
		}
		m = &r->msgs[h.seq % FQN_SEND_SLOTS];
		dst = rl->dup ? r->sink : (uint8_t *)m->req->data[m->elem] + h.offset;
		rc = l->ops->rx_payload(l, dst);
		if (rc <= 0)
			break;
		ctl_chunk_done(r, i, &h);
		rc = 0;
		if (r->c.lc[i].rx_count - r->c.lc[i].ack_sent >= ACK_EVERY && (rc = ctl_ack(r, i)) < 0)
			break;
		if (until && until->state == FQN_REQ_DONE)
			break;
	}
	if (rc >= 0)
		rc = ctl_ack(r, i);
	if (rc < 0)
		/* served while idle (fqn_recv_serve), a lane its peer closed is
		 * most often the peer's job ending first: no failover said,
		 * its error kept for the owner's next call (fqn_ctl_check_grace) */
		ctl_lane_drop(r, i, r->serving && rc == -ECONNRESET ? NULL : "socket-error", rc, now);
	return 0;
}

/* 1 if lane i's transport has heard nothing from the peer for longer
 * than a live peer allows, or cannot say (fqn_failover_recv_silent). */
static int ctl_peer_silent(struct fqn_recv *r, int i)
{
	struct fqn_lane_info info;

	return fqn_failover_recv_silent(r->c.lanes[i]->ops->info(r->c.lanes[i], &info) < 0 ? NULL : &info,
					&r->c.fo);
}

/* Lane i's health on the receiving side, which no socket error reports
 * when a link dies silently: with a receive posted, a lane that has seen
 * no data for the lane timeout while its transport has heard nothing from
 * the peer is failed ("no-data"); the path page having it DOWN fails it at
 * once ("path-down"). Its socket stays (the sender decides: a socket
 * closed here would look like a dead process); the peer heard again, the
 * path back UP, or a re-dial (ctl_install) make it UP again. */
static void ctl_lane_health(struct fqn_recv *r, int i, int paths, int64_t now)
{
	struct fqn_lane_ctl *lc = &r->c.lc[i];
	int down, silent;

	if (lc->fsm.state != FQN_LANE_UP) {
		if (!strcmp(lc->cause, "path-down") ? paths && !fqn_ctl_path_down(&r->c, i)
						    : !ctl_peer_silent(r, i)) {
			FQN_WARN("connection %llx lane %d (%s <- %s): back after %lld ms (%s); failback",
				 (unsigned long long)r->c.conn_id, i, lc->nic, lc->peer,
				 (long long)((now - lc->down_ns) / 1000000),
				 !strcmp(lc->cause, "path-down") ? "the path is UP"
								 : "the peer is heard again");
			fqn_ctl_event(&r->c, i, i, "failback", now, 0, 0, now - lc->down_ns);
			lc->reported = 0;
			fqn_lane_fsm_step(&lc->fsm, FQN_LEV_BACK, now, &recv_fsm);
			lc->down_ns = 0;
		}
		return;
	}
	down = paths && fqn_ctl_path_down(&r->c, i);
	/* the syscall only for a lane quiet for a timeout with a receive posted */
	silent = !down && fqn_failover_recv_quiet(lc->progress_ns, r->waiting_ns, now, &r->c.fo) &&
		 ctl_peer_silent(r, i);
	if (!down && !silent)
		return;
	fqn_lane_fsm_step(&lc->fsm, FQN_LEV_DOWN, now, &recv_fsm);
	lc->cause = down ? "path-down" : "no-data";
	lc->last_err = 0;
	lc->down_ns = now;
	fqn_ctl_event(&r->c, i, -1, lc->cause, now, 0, 0, 0);
	lc->reported = 1;
	FQN_WARN("connection %llx lane %d/%d (%s %s <- %s): %s (%s); waiting for the sender",
		 (unsigned long long)r->c.conn_id, i, r->c.nlanes, lc->nic, lc->local, lc->peer, lc->cause,
		 down ? "the agent's path page has the path DOWN"
		      : "a receive is posted, nothing arrived for the lane timeout and the peer is silent");
}

static int ctl_recv_progress(struct fqn_recv *r, const struct fqn_req *until)
{
	int64_t now = fq_clock_ns(CLOCK_MONOTONIC);
	int paths = fqn_ctl_path_due(&r->c, now);
	int health = now >= r->next_silent_ns;
	struct fqn_lane *l;

	if (now >= r->next_rejoin_ns) {
		r->next_rejoin_ns = now + REJOIN_POLL_NS;
		while (fqn_rejoin_take(r->c.ctx->rejoin, r, &l) == 1)
			ctl_install(r, l, now);
	}
	if (!r->pending_msgs)
		r->waiting_ns = 0;
	else if (!r->waiting_ns)
		r->waiting_ns = now;
	if (health)
		r->next_silent_ns = now + PATH_HEALTH_NS;
	for (int k = 0; k < r->c.nlanes; k++) {
		int i = (r->last_lane + k) % r->c.nlanes;
		int rc;

		if (!r->c.lanes[i])
			continue;
		rc = ctl_recv_lane(r, i, until, now);
		if (rc < 0)
			return rc;
		if (r->c.lanes[i] && (health || paths))
			ctl_lane_health(r, i, paths, now);
		if (until && until->state == FQN_REQ_DONE) {
			r->last_lane = i;
			break;
		}
	}
	return r->serving ? 0 : fqn_ctl_check_grace(&r->c, now); /* the owner's calls judge */
}

int fqn_recv_enable_control(struct fqn_recv *r, uint64_t token)
{
	int64_t now = fq_clock_ns(CLOCK_MONOTONIC);
	int rc;

	rc = fqn_rejoin_register(r->c.ctx->rejoin, r, r->c.conn_id, token, r->c.nlanes, r->c.chunk_size);
	if (rc < 0)
		return rc;
	r->registered = 1;
	for (int i = 0; i < r->c.nlanes; i++) {
		struct fqn_lane_ctl *lc = &r->c.lc[i];

		fqn_ctl_lane_init(&r->c, i);
		/* absent since setup: DOWN until the sender's re-dial (ctl_install) */
		fqn_lane_fsm_step(&lc->fsm, r->c.lanes[i] ? FQN_LEV_BACK : FQN_LEV_DOWN, now, &recv_fsm);
		if (r->c.lanes[i])
			continue;
		lc->cause = "connect-failed";
		lc->down_ns = now;
	}
	r->c.token = token;
	r->c.control = 1;
	fqn_idle_add(&r->c.ctx->idle, &r->idle);
	return 0;
}

void fqn_recv_serve(struct fqn_idle_link *m)
{
	struct fqn_recv *r = (struct fqn_recv *)((char *)m - offsetof(struct fqn_recv, idle));

	if (pthread_mutex_trylock(&r->lock))
		return; /* its owner is in it (or it is the caller's own) */
	/* Only a comm with no receive pending: serving it completes no
	 * request, so its owner's unlocked look at a request's state
	 * (fqn_test) never races with this thread. */
	if (!r->c.err && !r->pending_msgs) {
		r->serving = 1;
		ctl_recv_progress(r, NULL);
		r->serving = 0;
	}
	pthread_mutex_unlock(&r->lock);
}

/* fqn_recv_drive without control mode's lock (the caller holds it). */
static int recv_progress(struct fqn_recv *r, const struct fqn_req *until)
{
	if (r->c.err)
		return r->c.err;
	if (r->c.control)
		return ctl_recv_progress(r, until);
	r->polls++;
	for (int k = 0; k < r->c.nlanes; k++) {
		/* Start where the last chunk came from: small messages follow one another. */
		int i = (r->last_lane + k) % r->c.nlanes, rc;

		if (!r->c.lanes[i]) /* absent since setup: monitor mode runs without it */
			continue;
		if (r->small && i != r->last_lane && r->rl[i].idle >= IDLE_AFTER && r->polls % IDLE_EVERY)
			continue;
		rc = recv_lane(r, i, until);
		if (rc < 0)
			return rc;
		if (until && until->state == FQN_REQ_DONE) {
			r->last_lane = i;
			break;
		}
	}
	return 0;
}

int fqn_recv_drive(struct fqn_recv *r, const struct fqn_req *until)
{
	int rc;

	if (!r->c.control)
		return recv_progress(r, until);
	pthread_mutex_lock(&r->lock);
	rc = recv_progress(r, until);
	pthread_mutex_unlock(&r->lock);
	return rc;
}

static int recv_post(struct fqn_recv *r, int n, void **data, const size_t *sizes, const int *tags,
		     struct fqn_req **out)
{
	struct fqn_req *q;
	int64_t now;
	int sync;

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
	now = fqn_clock_now(r->c.ctx, &sync);
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
		m->covered = 0;
		m->landing = 0;
		m->post_ns = sync ? now : 0; /* off the global timeline: not compared */
	}
	q->state = FQN_REQ_ACTIVE;
	r->post_seq += (uint64_t)n;
	r->pending_msgs += (uint64_t)n;
	r->nposted++;
	*out = q;
	return recv_progress(r, q);
}

int fqn_recv_post(struct fqn_recv *r, int n, void **data, const size_t *sizes, const int *tags,
		  struct fqn_req **out)
{
	int rc;

	if (!r->c.control)
		return recv_post(r, n, data, sizes, tags, out);
	pthread_mutex_lock(&r->lock);
	rc = recv_post(r, n, data, sizes, tags, out);
	pthread_mutex_unlock(&r->lock);
	return rc;
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

int fqn_close_recv(struct fqn_recv *r)
{
	if (!r)
		return 0;
	/* a sweep holds the idle set's lock throughout: none is serving r after this */
	if (r->c.control)
		fqn_idle_remove(&r->c.ctx->idle, &r->idle);
	if (r->registered)
		fqn_rejoin_unregister(r->c.ctx->rejoin, r);
	if (r->dups)
		FQN_INFO("connection %llx: %llu duplicate chunk(s) dropped after resends",
			 (unsigned long long)r->c.conn_id, (unsigned long long)r->dups);
	if (r->owd_negative)
		FQN_WARN("connection %llx: %llu chunk(s) seen before they were sent by the two hosts' clocks "
			 "(by up to %.1f us): left out of the lanes' delays; are both agents' clocks "
			 "synchronised?",
			 (unsigned long long)r->c.conn_id, (unsigned long long)r->owd_negative,
			 -r->owd_most_negative / 1e3);
	fqn_comm_release(&r->c);
	for (int k = 0; k < FQN_SEND_SLOTS; k++)
		fqn_reasm_end(&r->msgs[k].reasm);
	free(r->sink);
	pthread_mutex_destroy(&r->lock);
	free(r);
	return 0;
}
