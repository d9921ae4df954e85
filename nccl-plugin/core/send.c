/*
 * send: the sending side of a connection.
 *
 * Messages take request slots in posting order (slot = seq % FQN_SEND_SLOTS;
 * a slot still in use means "no request now"). One cursor walks the posted
 * messages chunk by chunk; whenever a lane is free it takes the next chunk,
 * stamps it and starts transmitting it. A lane whose socket drains faster
 * takes more chunks, so the load follows each lane's capacity. A send
 * completes when its last chunk has been handed to the kernel.
 *
 * Control mode (both ends FABRICIQ_MODE=control): a send completes when the
 * receiver has acknowledged all its chunks (relia.h), so a lane that fails
 * loses nothing: its unacked chunks are resent on the other lanes, lowest
 * (seq, offset) first. While resends wait, no lane takes new chunks, and a
 * lane takes resends only once its own window is acked, so every lane
 * still carries chunks in message order (the receiver's stall rule stays
 * deadlock-free: a lane can wait behind a chunk of a message the receiver
 * has not posted yet, but as in NCCL's pipeline the receiver posts message
 * M+k once M+k-depth is consumed, never waiting for M itself, and the
 * sender cannot run more than its own depth past an unacked M). Acks for
 * resent copies the receiver already holds, and for a re-dialed lane, come
 * from a receive comm that may have no receive posted (NCCL calls nothing
 * on it then): every progress call also serves those
 * (progress.h), else two ranks each waiting for the other's acks
 * before posting the next receive would wait for ever. A lane fails on a socket error, on no progress for
 * FABRICIQ_LANE_TIMEOUT_MS while the transport has data unacknowledged and
 * has heard nothing from the peer, or when the agent's path page has its
 * path DOWN; it is re-dialed in the background with backoff (rejoin.h) and
 * given traffic again once the receiver acks on the new socket.
 */
#include <errno.h>
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
#include "nccl-plugin/core/send.h"
#include "nccl-plugin/core/send_priv.h"
#include "nccl-plugin/hello.h"
#include "nccl-plugin/lanes/lane_drv.h"
#include "nccl-plugin/plog.h"

int fqn_send_from_lanes(struct fqn_ctx *ctx, int dev, struct fqn_lane **lanes, int nlanes, size_t chunk_size,
			uint64_t conn_id, struct fqn_send **out)
{
	struct fqn_send *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->c.ctx = ctx;
	s->c.is_send = 1;
	s->fsm = fqn_rejoin_policy(ctx->cfg.lane_timeout_ms);
	s->c.fo = fqn_ctl_failover_cfg(&ctx->cfg);
	s->c.dev = dev;
	s->c.nlanes = nlanes;
	s->c.chunk_size = chunk_size;
	s->c.conn_id = conn_id;
	s->c.err_lane = -1;
	s->c.tclass = ctx->cfg.tclass;
	for (int i = 0; i < nlanes; i++) {
		s->c.lanes[i] = lanes[i];
		fqn_comm_apply_tclass(&s->c, i);
	}
	fqn_comm_stats_init(&s->c);
	*out = s;
	return 0;
}

struct fqn_comm *fqn_send_comm(struct fqn_send *s)
{
	return &s->c;
}

void fqn_send_set_peer_rank(struct fqn_send *s, uint32_t rank1)
{
	s->c.peer_rank1 = rank1;
}

/* Offer chunks to lane i until it is busy or nothing is left to send. */
static int send_fill_lane(struct fqn_send *s, int i)
{
	struct fqn_lane *l = s->c.lanes[i];

	for (;;) {
		struct fqn_req *m;
		struct fqn_chunk_hdr h;
		void *cookie;
		int rc, sync;

		rc = l->ops->tx_progress(l, &cookie);
		if (rc < 0)
			return fqn_comm_fail(&s->c, i, rc, "send");
		if (rc == 1) {
			m = cookie;
			if (--m->chunks_left == 0)
				m->state = FQN_REQ_DONE;
		}
		if (s->tx_seq == s->next_seq)
			return 0; /* nothing more to send */
		m = &s->reqs[s->tx_seq % FQN_SEND_SLOTS];
		h.seq = m->seq;
		h.msg_size = m->cap[0];
		h.offset = s->tx_off;
		h.len = fqn_chunk_len(h.msg_size, s->c.chunk_size, h.offset);
		h.tag = m->tags[0];
		h.lane = (uint16_t)i;
		h.send_ns = fqn_clock_now(s->c.ctx, &sync);
		h.flags = sync ? FQN_CHUNK_F_SYNC : 0;
		rc = l->ops->tx_chunk(l, &h, (const uint8_t *)m->data[0] + h.offset, m);
		if (rc == -EAGAIN)
			return 0; /* lane busy */
		if (rc < 0)
			return fqn_comm_fail(&s->c, i, rc, "send");
		s->c.stats[i].bytes += h.len;
		s->c.stats[i].chunks++;
		s->c.stats[i].unsync |= !sync;
		s->multi |= h.msg_size > s->c.chunk_size;
		s->tx_off += h.len;
		if (s->tx_off >= h.msg_size) {
			s->c.stats[i].msgs++;
			s->tx_seq++;
			s->tx_off = 0;
		}
		fqn_comm_tick(&s->c, i, h.send_ns, 0);
	}
}

/* ---- control mode ---- */

static void ev_flush(struct fqn_send *s, int64_t now)
{
	if (!s->ev.active)
		return;
	fqn_ctl_event(&s->c, s->ev.lane, s->ev.to_lane, s->ev.cause, s->ev.start_ns, s->ev.detect_ns,
		      s->ev.bytes, now - s->ev.start_ns);
	s->ev.active = 0;
}

static void ctl_ack_done(void *arg, const struct fqn_cref *c)
{
	struct fqn_send *s = arg;
	struct fqn_req *m = &s->reqs[c->seq % FQN_SEND_SLOTS];

	s->acking += c->len;
	if (s->st && s->st->ctl) { /* steering: the chunk's ack latency on its lane */
		struct fqn_txq *q = s->txq[s->acking_lane];

		fqn_hist_add(&s->st->lat[s->acking_lane],
			     s->acking_ns - s->st->push_ns[s->acking_lane][(q->acked - 1) % FQN_TXQ_MAX]);
	}
	if (m->state == FQN_REQ_ACTIVE && m->seq == c->seq && --m->chunks_left == 0)
		m->state = FQN_REQ_DONE;
}

/* Lane i failed: its unacked chunks go to the resend queue, its socket is
 * closed, it is re-dialed later. Returns 0, or the comm's error. */
static int ctl_lane_fail(struct fqn_send *s, int i, const char *cause, int err, int64_t now)
{
	struct fqn_lane_ctl *lc = &s->c.lc[i];
	int64_t bytes, detect = fqn_failover_detect_ns(cause, now, lc->progress_ns);

	lc->last_err = err;
	if (fqn_lane_fsm_step(&lc->fsm, FQN_LEV_FAIL, now, &s->fsm) == FQN_LACT_BACKOFF) {
		/* a re-dial that did not work out */
		if (s->c.lanes[i])
			s->c.lanes[i]->ops->destroy(s->c.lanes[i]);
		s->c.lanes[i] = NULL;
		return 0;
	}
	bytes = fqn_resendq_take(&s->resend, s->txq[i]);
	if (bytes < 0)
		return fqn_comm_fail(&s->c, i, (int)bytes, "failover");
	FQN_WARN("connection %llx lane %d/%d (%s %s -> %s): %s%s%s; %lld bytes to resend on the other lanes",
		 (unsigned long long)s->c.conn_id, i, s->c.nlanes, lc->nic, lc->local, lc->peer, cause,
		 err ? ": " : "", err ? strerror(-err) : "", (long long)bytes);
	ev_flush(s, now);
	s->ev.active = 1;
	s->ev.lane = i;
	s->ev.to_lane = -1;
	s->ev.cause = cause;
	s->ev.start_ns = now;
	s->ev.detect_ns = detect;
	s->ev.bytes = (uint64_t)bytes;
	if (s->parked[i])
		s->parked[i]->ops->destroy(s->parked[i]);
	s->parked[i] = s->c.lanes[i];
	s->c.lanes[i] = NULL;
	s->busy[i] = 0;
	s->c.failovers++;
	send_steer_lane_state(s, i, 0, now);
	if (s->st && s->st->move == i)
		s->st->move = -1;
	lc->cause = cause;
	lc->down_ns = now;
	return 0;
}

/* Read lane i's acks. 0, or a negative errno (the lane failed). */
static int ctl_read_acks(struct fqn_send *s, int i, int64_t now)
{
	struct fqn_lane *l = s->c.lanes[i];
	struct fqn_lane_ctl *lc = &s->c.lc[i];

	for (;;) {
		uint8_t rec[FQN_CTRL_SIZE];
		uint16_t ln;
		uint64_t count;
		int rc = l->ops->rx_ctrl(l, rec);

		if (rc <= 0)
			return rc;
		if (fqn_ack_decode(rec, &ln, &count) < 0 || ln != i)
			return -EPROTO;
		if (lc->fsm.state == FQN_LANE_VERIFY) { /* hello out, ack back: the new path works */
			int64_t dial_ns = lc->fsm.since_ns;

			if (count != 0)
				return -EPROTO;
			fqn_lane_fsm_step(&lc->fsm, FQN_LEV_BACK, now, &s->fsm);
			if (s->st && s->st->moved[i]) { /* a steering move, not a failure */
				s->st->moved[i] = 0;
			} else {
				FQN_WARN("connection %llx lane %d (%s -> %s): back after %lld ms; failback",
					 (unsigned long long)s->c.conn_id, i, lc->nic, lc->peer,
					 (long long)((now - lc->down_ns) / 1000000));
				fqn_ctl_event(&s->c, i, i, "failback", now, now - dial_ns, 0,
					      now - lc->down_ns);
				s->c.failbacks++;
			}
			if (s->parked[i]) /* the receiver has let go of it for the new one */
				s->parked[i]->ops->destroy(s->parked[i]);
			s->parked[i] = NULL;
			fqn_txq_reset(s->txq[i]);
			lc->progress_ns = now;
			lc->down_ns = 0;
			s->busy[i] = 0;
			send_steer_lane_state(s, i, 1, now);
			continue;
		}
		s->acking = 0;
		s->acking_lane = i;
		s->acking_ns = now;
		rc = fqn_txq_ack(s->txq[i], count, ctl_ack_done, s);
		if (rc < 0)
			return rc;
		if (s->st && s->st->ctl)
			s->st->acked_bytes[i] += s->acking;
		if (rc > 0)
			lc->progress_ns = now;
	}
}

/* Lane i has had data outstanding without an ack for the lane timeout:
 * ask its transport whether it is dead (fqn_failover_send_dead). */
static int ctl_no_progress(struct fqn_send *s, int i, int64_t now)
{
	struct fqn_lane_ctl *lc = &s->c.lc[i];
	struct fqn_lane_info info;

	if (!fqn_failover_send_stalled(s->txq[i]->count, lc->progress_ns, now, &s->c.fo))
		return 0;
	return fqn_failover_send_dead(s->c.lanes[i]->ops->info(s->c.lanes[i], &info) < 0 ? NULL : &info, now,
				      &lc->progress_ns, &s->c.fo);
}

/* Lane i's backoff has passed: dial it, unless its path is DOWN. */
static void redial_start(struct fqn_send *s, int i, int64_t now)
{
	struct fqn_lane_ctl *lc = &s->c.lc[i];
	const struct fqn_ctx *ctx = s->c.ctx;
	int rc;

	if (fqn_ctl_path_down(&s->c, i)) { /* a page lookup: cheap, but not per call */
		fqn_lane_fsm_step(&lc->fsm, FQN_LEV_PATH_DOWN, now, &s->fsm);
		return;
	}
	rc = fqn_lane_dial(ctx, s->c.dev, (struct sockaddr *)&lc->bind_addr,
			   (struct sockaddr *)&lc->rejoin_addr, ctx->cfg.lane_timeout_ms, &s->c.lanes[i]);
	if (rc < 0) {
		s->c.lanes[i] = NULL;
		ctl_lane_fail(s, i, "redial", rc, now);
		return;
	}
	s->c.lanes[i]->index = i;
	s->c.lanes[i]->nic = -1;
	s->c.lanes[i]->chunk_size = s->c.chunk_size;
	fqn_comm_apply_tclass(&s->c, i);
	fqn_lane_fsm_step(&lc->fsm, FQN_LEV_DIALED, now, &s->fsm);
}

/* Re-dialed lane i: once connected, its rejoin hello. */
static void redial_hello(struct fqn_send *s, int i, int64_t now)
{
	struct fqn_lane *l = s->c.lanes[i];
	struct fqn_hello h = {(uint16_t)i,
			      (uint16_t)s->c.nlanes,
			      FQN_HELLO_F_CONTROL | FQN_HELLO_F_REJOIN,
			      (uint32_t)s->c.chunk_size,
			      s->c.token,
			      s->c.conn_id,
			      s->c.ctx->rank1,
			      (uint16_t)(1u << i)};
	uint8_t buf[FQN_HELLO_SIZE];
	int rc = l->ops->poll_connected(l);

	if (rc == 0) {
		fqn_hello_encode(&h, buf);
		rc = l->ops->send_hello(l, buf, sizeof(buf));
	}
	if (rc == -EINPROGRESS || rc == -EAGAIN)
		return;
	if (rc < 0) {
		ctl_lane_fail(s, i, "redial", rc, now);
		return;
	}
	fqn_lane_fsm_step(&s->c.lc[i].fsm, FQN_LEV_HELLO_OUT, now, &s->fsm);
}

/* A lane not UP: re-dial it when its backoff has passed, drive the
 * re-dial, give it up when it takes too long (lane_fsm.h). */
static void ctl_redial(struct fqn_send *s, int i, int64_t now)
{
	struct fqn_lane_ctl *lc = &s->c.lc[i];

	if (lc->fsm.state == FQN_LANE_DOWN && !lc->can_rejoin)
		return;
	switch (fqn_lane_fsm_step(&lc->fsm, FQN_LEV_TICK, now, &s->fsm)) {
	case FQN_LACT_REDIAL:
		redial_start(s, i, now);
		return;
	case FQN_LACT_GIVE_UP: /* SYN, or hello's ack, lost on a still-dead path */
		ctl_lane_fail(s, i, "redial", -ETIMEDOUT, now);
		return;
	default:
		break;
	}
	if (lc->fsm.state == FQN_LANE_DIALING)
		redial_hello(s, i, now);
	else if (lc->fsm.state == FQN_LANE_VERIFY && ctl_read_acks(s, i, now) < 0)
		ctl_lane_fail(s, i, "redial", -EPROTO, now);
}

/* Offer chunks to UP lane i (control mode). 0, or a negative errno for a
 * lane failure (the caller fails the lane over). */
static int ctl_fill_lane(struct fqn_send *s, int i, int64_t now, const char **cause)
{
	struct fqn_lane *l = s->c.lanes[i];
	struct fqn_txq *q = s->txq[i];

	*cause = "socket-error";
	for (;;) {
		struct fqn_chunk_hdr h;
		struct fqn_cref c;
		struct fqn_req *m;
		void *cookie;
		int rc, sync, resent = 0;

		/* nothing unacked, no ack to wait for: spare the idle lane a recv() per call */
		rc = q->count ? ctl_read_acks(s, i, now) : 0;
		if (rc < 0)
			return rc;
		rc = l->ops->tx_progress(l, &cookie);
		if (rc < 0)
			return rc;
		if (rc == 1)
			s->busy[i] = 0;
		if (s->busy[i])
			break;
		if (s->resend.n) {
			if (q->count)
				break; /* resends go behind acked chunks only: per-lane order */
			fqn_resendq_pop(&s->resend, &c);
			resent = 1;
		} else {
			if (s->tx_seq == s->next_seq || fqn_txq_full(q) ||
			    (s->st && !send_steer_allows(s, i)))
				break;
			m = &s->reqs[s->tx_seq % FQN_SEND_SLOTS];
			c.seq = m->seq;
			c.offset = s->tx_off;
			c.len = fqn_chunk_len(m->cap[0], s->c.chunk_size, c.offset);
		}
		m = &s->reqs[c.seq % FQN_SEND_SLOTS];
		h.seq = c.seq;
		h.msg_size = m->cap[0];
		h.offset = c.offset;
		h.len = c.len;
		h.tag = m->tags[0];
		h.lane = (uint16_t)i;
		h.send_ns = fqn_clock_now(s->c.ctx, &sync);
		h.flags = sync ? FQN_CHUNK_F_SYNC : 0;
		rc = l->ops->tx_chunk(l, &h, (const uint8_t *)m->data[0] + h.offset, m);
		if (rc < 0 && resent)
			fqn_resendq_unpop(&s->resend, &c);
		if (rc == -EAGAIN) {
			s->busy[i] = 1;
			break;
		}
		if (rc < 0)
			return rc;
		s->busy[i] = 1;
		if (!q->count)
			s->c.lc[i].progress_ns = now; /* the no-progress clock starts with outstanding data */
		if (s->st)
			send_steer_took(s, i, &c, resent, now);
		fqn_txq_push(q, &c);
		s->c.stats[i].bytes += h.len;
		s->c.stats[i].chunks++;
		s->c.stats[i].unsync |= !sync;
		if (resent) {
			if (s->ev.active && s->ev.to_lane < 0)
				s->ev.to_lane = i;
		} else {
			s->tx_off += h.len;
			if (s->tx_off >= h.msg_size) {
				s->c.stats[i].msgs++;
				s->tx_seq++;
				s->tx_off = 0;
			}
		}
		fqn_comm_tick(&s->c, i, h.send_ns, 0);
	}
	if (ctl_no_progress(s, i, now)) {
		*cause = "no-progress";
		return -ETIMEDOUT;
	}
	return 0;
}

static int ctl_progress(struct fqn_send *s)
{
	int64_t now = fq_clock_ns(CLOCK_MONOTONIC);
	int n = s->c.nlanes, paths = fqn_ctl_path_due(&s->c, now);

	for (int k = 0; k < n; k++) {
		int i = (int)((s->rr + (unsigned)k) % (unsigned)n);
		struct fqn_lane_ctl *lc = &s->c.lc[i];
		const char *cause;
		int rc;

		if (lc->fsm.state != FQN_LANE_UP) {
			ctl_redial(s, i, now);
			continue;
		}
		if (paths && fqn_ctl_path_down(&s->c, i)) {
			rc = ctl_lane_fail(s, i, "path-down", 0, now);
		} else {
			rc = ctl_fill_lane(s, i, now, &cause);
			if (rc < 0)
				rc = ctl_lane_fail(s, i, cause, rc, now);
		}
		if (rc < 0)
			return rc;
	}
	s->rr++;
	if (s->st)
		send_steer_tick(s, now);
	if (s->ev.active && !s->resend.n)
		ev_flush(s, now);
	if (fqn_ctl_check_grace(&s->c, now) < 0) {
		ev_flush(s, now);
		return s->c.err;
	}
	return 0;
}

int fqn_send_enable_control(struct fqn_send *s, uint64_t token, const struct sockaddr_storage *bind,
			    const struct sockaddr_storage *rejoin, const int *can_rejoin)
{
	int64_t now = fq_clock_ns(CLOCK_MONOTONIC);
	const struct fqn_config *cfg = &s->c.ctx->cfg;
	int steer = cfg->steer && s->c.nlanes > 1; /* one lane: nothing to steer */

	for (int i = 0; i < s->c.nlanes; i++) {
		struct fqn_lane_ctl *lc = &s->c.lc[i];

		s->txq[i] = malloc(sizeof(*s->txq[i]));
		if (!s->txq[i])
			return -ENOMEM;
		fqn_txq_reset(s->txq[i]);
		fqn_ctl_lane_init(&s->c, i);
		memcpy(&lc->bind_addr, &bind[i], sizeof(lc->bind_addr));
		memcpy(&lc->rejoin_addr, &rejoin[i], sizeof(lc->rejoin_addr));
		lc->can_rejoin = can_rejoin[i];
		fqn_lane_fsm_step(&lc->fsm, FQN_LEV_BACK, now, &s->fsm); /* UP from now */
		lc->progress_ns = now;
	}
	s->c.token = token;
	s->c.control = 1;
	return send_steer_enable(s, steer, cfg->pace, now); /* the controller's rates need its tick */
}

void fqn_send_lane_absent(struct fqn_send *s, int i, int nic, const char *local, const char *peer, int err,
			  int64_t since_ns, int64_t detect_ns)
{
	struct fqn_lane_ctl *lc = &s->c.lc[i];
	int64_t now = fq_clock_ns(CLOCK_MONOTONIC);

	fqn_ctl_lane_name(&s->c, i, nic, local, peer);
	FQN_WARN(
	    "connection %llx lane %d/%d (%s %s -> %s): connect-failed: %s; %s",
	    (unsigned long long)s->c.conn_id, i, s->c.nlanes, lc->nic, lc->local, lc->peer, strerror(-err),
	    !s->c.control    ? "running on the other lanes (monitor mode: no re-dial)"
	    : lc->can_rejoin ? "starting on the other lanes, re-dialing it"
			     : "starting on the other lanes (the listener has no rejoin port: no re-dial)");
	s->c.failovers++;
	fqn_ctl_event(&s->c, i, -1, "connect-failed", since_ns, detect_ns, 0, now - since_ns);
	if (!s->c.control)
		return;
	send_steer_lane_state(s, i, 0, now);
	fqn_lane_fsm_step(&lc->fsm, FQN_LEV_DOWN, now, &s->fsm);
	lc->cause = "connect-failed";
	lc->last_err = err;
	lc->down_ns = since_ns;
}

int fqn_send_drive(struct fqn_send *s)
{
	int n = s->c.nlanes;

	if (s->c.err)
		return s->c.err;
	if (s->c.control)
		return ctl_progress(s);
	s->multi = 0;
	for (int k = 0; k < n; k++) {
		int i = (int)((s->rr + (unsigned)k) % (unsigned)n), rc;

		if (!s->c.lanes[i])
			continue; /* absent since setup (fqn_send_lane_absent) */
		rc = send_fill_lane(s, i);
		if (rc < 0)
			return rc;
	}
	/* Rotate the first lane while lanes are the limit (chunks left over)
	 * or messages span several chunks (striped over the rails even when
	 * one socket could absorb them); one-chunk messages that go out at
	 * once keep to one lane, which the receiver then polls alone (recv.c:
	 * idle lanes are polled less). */
	if (s->tx_seq != s->next_seq || s->multi)
		s->rr++;
	return 0;
}

int fqn_send_post(struct fqn_send *s, void *data, size_t size, int tag, struct fqn_req **out)
{
	struct fqn_req *m;

	*out = NULL;
	if (s->c.err)
		return s->c.err;
	if (size > FQN_MAX_MSG_SIZE || (size && !data))
		return -EINVAL;
	m = &s->reqs[s->next_seq % FQN_SEND_SLOTS];
	if (m->state != FQN_REQ_FREE)
		return 0; /* all slots in flight: NCCL calls again */
	m->kind = FQN_REQ_SEND;
	m->comm = &s->c;
	m->seq = s->next_seq++;
	m->n = 1;
	m->data[0] = data;
	m->cap[0] = size;
	m->tags[0] = tag;
	m->chunks_left = fqn_chunk_count(size, s->c.chunk_size); /* control: acks count them down */
	m->state = FQN_REQ_ACTIVE;
	*out = m;
	return 0;
}

int fqn_close_send(struct fqn_send *s)
{
	if (!s)
		return 0;
	if (s->c.control)
		ev_flush(s, fq_clock_ns(CLOCK_MONOTONIC)); /* a failover whose resend had not finished */
	if (s->st)
		send_steer_account(s, fq_clock_ns(CLOCK_MONOTONIC)); /* capped since the last update */
	if (s->c.control && (s->c.failovers || s->c.failbacks))
		FQN_INFO("connection %llx: %llu failover(s), %llu failback(s)",
			 (unsigned long long)s->c.conn_id, (unsigned long long)s->c.failovers,
			 (unsigned long long)s->c.failbacks);
	fqn_comm_release(&s->c);
	for (int i = 0; i < FQN_MAX_LANES; i++) {
		free(s->txq[i]);
		if (s->parked[i])
			s->parked[i]->ops->destroy(s->parked[i]);
	}
	fqn_resendq_free(&s->resend);
	send_steer_free(s);
	free(s);
	return 0;
}
