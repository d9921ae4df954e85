#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "nccl-plugin/core/comm.h"
#include "nccl-plugin/core/ctx.h"
#include "nccl-plugin/plog.h"
#include "nccl-plugin/telemetry/telemetry.h"

int fqn_comm_fail(struct fqn_comm *c, int lane, int err, const char *what)
{
	struct fqn_lane *l = lane >= 0 ? c->lanes[lane] : NULL;
	/* a control-mode lane may be gone (down): its names stay in lc */
	const char *peer = l ? l->peer : lane >= 0 && c->control ? c->lc[lane].peer : "?";
	const char *local = l ? l->local : lane >= 0 && c->control ? c->lc[lane].local : "?";

	if (c->err)
		return c->err;
	c->err = err;
	c->err_lane = lane;
	FQN_WARN("connection %llx lane %d/%d (%s %s %s, %s): %s: %s (%s, errno %d)",
		 (unsigned long long)c->conn_id, lane, c->nlanes, local, c->is_send ? "->" : "<-", peer,
		 l ? l->ops->kind : "?", what,
		 err == -ECONNRESET ? "peer closed or reset the connection" : "failed", strerror(-err), -err);
	return err;
}

void fqn_comm_stats_init(struct fqn_comm *c)
{
	int sync;
	int64_t now = fqn_clock_now(c->ctx, &sync);

	c->interval_ns =
	    c->ctx && c->ctx->telemetry ? (int64_t)c->ctx->cfg.telemetry_interval_ms * 1000000 : 0;
	for (int i = 0; i < c->nlanes; i++) {
		memset(&c->stats[i], 0, sizeof(c->stats[i]));
		c->stats[i].interval_start = now;
	}
}

void fqn_comm_tick(struct fqn_comm *c, int i, int64_t now, int force)
{
	const struct fqn_ctx *ctx = c->ctx;
	struct fqn_lane_stats *st = &c->stats[i];
	struct fqn_lane *l = c->lanes[i];
	struct fqn_lane_sample s;

	if (!c->interval_ns || !ctx || !ctx->telemetry || !l)
		return;
	if (now < st->interval_start) { /* the clock page came or went: restart */
		st->interval_start = now;
		st->acked_lane = NULL; /* its acked bytes span more than the new interval */
		return;
	}
	/* the last interval, at close: only if it has something to say (a
	 * lane capped while idle has its time capped) */
	if (force ? st->chunks == 0 && !st->throttled_ns && !st->assigned_ns
		  : now - st->interval_start < c->interval_ns)
		return;
	memset(&s, 0, offsetof(struct fqn_lane_sample, owd));
	s.conn_id = c->conn_id;
	s.lane = i;
	s.is_send = c->is_send;
	s.rank1 = ctx->rank1;
	s.peer_rank1 = c->peer_rank1;
	s.synchronised = !st->unsync;
	snprintf(s.kind, sizeof(s.kind), "%s", l->ops->kind);
	snprintf(s.nic, sizeof(s.nic), "%s", fqn_ctx_nic_name(ctx, l->nic));
	memcpy(s.local, l->local, sizeof(s.local));
	memcpy(s.peer, l->peer, sizeof(s.peer));
	s.start_ns = st->interval_start;
	s.end_ns = now;
	s.bytes = st->bytes;
	s.chunks = st->chunks;
	s.msgs = st->msgs;
	s.throttled_ns =
	    st->throttled_ns < now - st->interval_start ? st->throttled_ns : now - st->interval_start;
	s.assigned_rate = st->assigned_rate;
	s.assigned_ns =
	    st->assigned_ns < now - st->interval_start ? st->assigned_ns : now - st->interval_start;
	l->ops->info(l, &s.info); /* one getsockopt per lane per interval */
	if (c->is_send) {
		if (st->acked_lane == l && s.info.bytes_acked >= st->acked_base)
			s.acked = s.info.bytes_acked - st->acked_base; /* 0 where unknown */
		st->acked_base = s.info.bytes_acked;
		st->acked_lane = l;
	}
	s.owd = st->owd;
	fqn_telemetry_push(ctx->telemetry, &s);
	st->bytes = st->chunks = st->msgs = 0;
	st->throttled_ns = st->assigned_ns = 0;
	st->unsync = 0;
	st->interval_start = now;
	fqn_hist_reset(&st->owd);
}

void fqn_comm_release(struct fqn_comm *c)
{
	int sync;
	int64_t now = fqn_clock_now(c->ctx, &sync);

	for (int i = 0; i < c->nlanes; i++)
		fqn_comm_tick(c, i, now, 1);
	for (int i = 0; i < c->nlanes; i++) {
		if (c->lanes[i])
			c->lanes[i]->ops->destroy(c->lanes[i]);
		c->lanes[i] = NULL;
	}
}

void fqn_comm_apply_tclass(struct fqn_comm *c, int i)
{
	struct fqn_lane *l = c->lanes[i];
	int err;

	if (c->tclass < 0 || !l)
		return;
	err = l->ops->set_tclass ? l->ops->set_tclass(l, c->tclass) : -ENOTSUP;
	if (err < 0)
		FQN_WARN("connection %llx lane %d (%s -> %s): traffic class %d not set: %s",
			 (unsigned long long)c->conn_id, i, l->local, l->peer, c->tclass, strerror(-err));
}
