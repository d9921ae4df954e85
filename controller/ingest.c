/*
 * ingest: see ingest.h; how its files share the work: ingest_int.h. This
 * file: the public side (nodes and their seqs, the batch, flushes and
 * acknowledgements, create/destroy).
 */
#include "controller/ingest_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/frame.h"
#include "common/log.h"
#include "controller/spool.h"
#include "db/db.h"

/* ---- the public side ------------------------------------------------ */

int fq_ingest_create(const struct fq_ingest_config *c, const struct fq_ingest_ops *ops, void *arg,
		     struct fq_ingest **out, char *err, size_t errlen)
{
	struct fq_ingest *ing = calloc(1, sizeof(*ing));
	int rc;

	*out = NULL;
	if (!ing)
		return -ENOMEM;
	ing->cfg = *c;
	if (!ing->cfg.connect_timeout_s)
		ing->cfg.connect_timeout_s = FQ_INGEST_CONNECT_TIMEOUT_S;
	if (getenv("FQ_INGEST_TEST_KILL_AFTER_FLUSHES"))
		ing->test_kill_after = strtoul(getenv("FQ_INGEST_TEST_KILL_AFTER_FLUSHES"), NULL, 10);
	if (!ing->cfg.statement_timeout_ms)
		ing->cfg.statement_timeout_ms = FQ_INGEST_STATEMENT_TIMEOUT_MS;
	ing->ops = *ops;
	ing->arg = arg;
	ing->conninfo = strdup(c->conninfo ? c->conninfo : "");
	ing->spool_dir = strdup(c->spool_dir);
	if (!ing->conninfo || !ing->spool_dir) {
		rc = -ENOMEM;
		goto fail;
	}
	ing->efd = -1;
	if ((rc = fq_spool_open(c->spool_dir, c->spool_max, &ing->spool, err, errlen)) < 0)
		goto fail;
	ing_db_usable(ing); /* starts connecting */
	if ((rc = ing_scan_spool(ing)) < 0) {
		snprintf(err, errlen, "spool %s: %s", c->spool_dir, strerror(-rc));
		goto fail;
	}
	if ((rc = ing_writer_start(ing)) < 0) {
		snprintf(err, errlen, "starting the database writer thread: %s", strerror(-rc));
		goto fail;
	}
	*out = ing;
	return 0;

fail:
	fq_ingest_destroy(ing);
	return rc;
}

void fq_ingest_destroy(struct fq_ingest *ing)
{
	if (!ing)
		return;
	ing_writer_stop(ing);
	if (ing->jobs)
		fq_info(
		    "ingest: %llu flushes, %llu rows (%.0f a flush); encoding %.2f us/row, COPY + commit "
		    "%.2f us/row; a flush in flight %.0f%% of the time, the event loop waited on it %.3f s",
		    (unsigned long long)ing->jobs, (unsigned long long)ing->job_rows,
		    (double)ing->job_rows / (double)ing->jobs,
		    ing->job_rows ? (double)ing->ac.encode_ns / 1e3 / (double)ing->job_rows : 0.0,
		    ing->job_rows ? (double)ing->ac.write_ns / 1e3 / (double)ing->job_rows : 0.0,
		    100.0 * (double)ing->job_busy_ns /
			(double)(fq_clock_ns(CLOCK_MONOTONIC) - ing->job_start_ns + 1),
		    (double)ing->job_wait_ns / 1e9);
	ing_free_items(ing->inflight, ing->ninflight);
	free(ing->inflight);
	ing_free_items(ing->batch, ing->nbatch);
	free(ing->batch);
	ing_nodes_clear(ing);
	fq_strmap_clear(&ing->links, free);
	fq_strmap_clear(&ing->steps, free);
	fq_strmap_clear(&ing->rank_nics, NULL);
	fq_spool_close(ing->spool);
	fq_dbconnect_abandon(ing->aux_open);
	fq_dbconnect_abandon(ing->db_open);
	fq_db_destroy(ing->aux);
	fq_db_destroy(ing->db);
	free(ing->conninfo);
	free(ing->spool_dir);
	free(ing);
}

static int queue(struct fq_ingest *ing, struct node_state *n, uint64_t seq, Fabriciq__Envelope *env,
		 int64_t now_ns)
{
	if (ing->nbatch == ing->capbatch) {
		size_t cap = ing->capbatch ? ing->capbatch * 2 : 1024;
		struct item *b = realloc(ing->batch, cap * sizeof(*b));
		if (!b)
			return -ENOMEM;
		ing->batch = b;
		ing->capbatch = cap;
	}
	ing->batch[ing->nbatch++] = (struct item){n, seq, now_ns, env, n->restarts};
	return 0;
}

/* The restart rule (proto AgentHello.next_seq). The agent sends the first
 * seq it holds unacknowledged. Below what this controller accepted, that
 * is either a ing_replay (acks lost with the connection or with a controller
 * crash: the frames must be dropped as duplicates) or an agent that lost
 * its spool and counts afresh (the frames are new). It is the latter when
 * next_seq is 1, or when an earlier hello of the agent already showed it
 * knew of acks above next_seq: an agent's acknowledged seq only goes back
 * if it lost its spool. */
static bool count_restarted(const struct node_state *n, uint64_t next_seq, uint64_t fresh_seq)
{
	if (n->restart_dropped && next_seq)
		return true; /* the restarting hello was dropped (spool full): again */
	/* An agent that says where its new frames start: a restart is exactly
	 * one that would reuse seqs stored (proto AgentHello.fresh_seq). */
	if (fresh_seq)
		return fresh_seq <= n->accepted;
	if (!next_seq || next_seq > n->accepted)
		return false;
	return next_seq == 1 || next_seq <= n->confirmed;
}

int fq_ingest_hello(struct fq_ingest *ing, Fabriciq__Envelope *env, int64_t now_ns)
{
	const Fabriciq__AgentHello *h = env->hello;
	struct node_state *n = ing_node_get(ing, h->node);
	uint64_t seq = SEQ_HELLO;
	int rc;

	if (!n) {
		fq_frame_free(env);
		return -ENOMEM;
	}
	if (count_restarted(n, h->next_seq, h->fresh_seq)) {
		fq_warn(
		    "agent %s restarted its frame count (next seq %llu, %llu accepted, it knew of acks up to "
		    "%llu): its dedupe restarts",
		    n->name, (unsigned long long)h->next_seq, (unsigned long long)n->accepted,
		    (unsigned long long)n->confirmed);
		n->accepted = n->durable = h->next_seq - 1;
		/* never acknowledge the old count's seqs to the new one */
		n->batch_max = n->inflight_max = 0;
		n->restarts++;
		n->confirmed = h->next_seq - 1;
		n->restarted = true;
		n->restart_dropped = false;
		/* Queued in order: the flush that stores it lowers agent_seq. */
		seq = SEQ_RESTART;
	} else if (h->next_seq && h->next_seq - 1 > n->confirmed) {
		n->confirmed = h->next_seq - 1;
	}
	if ((rc = queue(ing, n, seq, env, now_ns)) < 0)
		fq_frame_free(env);
	else
		ing->st.frames_by_kind[FQ_INGEST_HELLO]++;
	return rc;
}

static int kind_of(const Fabriciq__Envelope *env)
{
	switch (env->payload_case) {
	case FABRICIQ__ENVELOPE__PAYLOAD_PROBE:
		return FQ_INGEST_PROBE;
	case FABRICIQ__ENVELOPE__PAYLOAD_CLOCK:
		return FQ_INGEST_CLOCK;
	case FABRICIQ__ENVELOPE__PAYLOAD_LANE:
		return FQ_INGEST_LANE;
	case FABRICIQ__ENVELOPE__PAYLOAD_STEP_START:
		return FQ_INGEST_STEP_START;
	case FABRICIQ__ENVELOPE__PAYLOAD_STEP_END:
		return FQ_INGEST_STEP_END;
	case FABRICIQ__ENVELOPE__PAYLOAD_LINK:
		return FQ_INGEST_LINK;
	case FABRICIQ__ENVELOPE__PAYLOAD_FAILOVER:
		return FQ_INGEST_FAILOVER;
	case FABRICIQ__ENVELOPE__PAYLOAD_TRACE:
		return FQ_INGEST_TRACE;
	case FABRICIQ__ENVELOPE__PAYLOAD_LANE_ROUTE:
		return FQ_INGEST_LANE_ROUTE;
	case FABRICIQ__ENVELOPE__PAYLOAD_PROFILER:
		return FQ_INGEST_PROFILER;
	case FABRICIQ__ENVELOPE__PAYLOAD_STALL:
		return FQ_INGEST_STALL;
	default:
		return -1;
	}
}

int fq_ingest_frame(struct fq_ingest *ing, const char *node, Fabriciq__Envelope *env, int64_t now_ns,
		    uint64_t *ack_now)
{
	struct node_state *n = ing_node_get(ing, node);
	int kind = kind_of(env);
	int rc;

	*ack_now = 0;
	if (!n || kind < 0 || env->seq == 0) {
		fq_frame_free(env);
		return n ? -EINVAL : -ENOMEM;
	}
	if (env->seq <= n->accepted) {
		ing->st.duplicates++;
		if (env->seq <= n->durable)
			*ack_now = env->seq;
		fq_frame_free(env);
		return 0;
	}
	if ((rc = queue(ing, n, env->seq, env, now_ns)) < 0) {
		fq_frame_free(env);
		return rc;
	}
	n->accepted = env->seq;
	n->batch_max = env->seq;
	ing->st.frames++;
	ing->st.frames_by_kind[kind]++;
	return 1;
}

bool fq_ingest_should_flush(const struct fq_ingest *ing)
{
	return ing->nbatch >= ing->cfg.max_batch_frames;
}

int fq_ingest_flush(struct fq_ingest *ing, int64_t now_ns, int64_t budget_ns)
{
	bool usable;
	int rc = 0;

	(void)now_ns;
	ing->budget_ns = budget_ns;
	if (ing->busy) {
		/* Finished but not yet polled? Else flush when it is. */
		if ((rc = ing_complete(ing, ing->nbatch >= INFLIGHT_BACKLOG * ing->cfg.max_batch_frames)) < 0)
			return rc;
		if (ing->busy) {
			ing->flush_wanted = true;
			return 0;
		}
	}
	ing->flush_wanted = false;
	usable = ing_db_usable(ing);
	if (usable && fq_spool_pending_bytes(ing->spool)) {
		if (ing_replay(ing, budget_ns) < 0)
			usable = false;
	}
	if (!ing->nbatch)
		goto out;
	ing->st.flushes++;
	if (usable && !fq_spool_pending_bytes(ing->spool) && ing_submit(ing) == 0)
		return 0;
	if ((rc = ing_batch_to_spool(ing)) == 0)
		ing_batch_durable(ing);
	else
		ing_batch_drop(ing);
	ing_free_items(ing->batch, ing->nbatch);
	ing->nbatch = 0;
out:
	ing_fold_counts(ing);
	if (usable && !ing->down && !fq_spool_pending_bytes(ing->spool))
		ing_db_ok(ing);
	return rc;
}

int fq_ingest_fd(const struct fq_ingest *ing)
{
	return ing->efd;
}

int fq_ingest_poll(struct fq_ingest *ing, int64_t now_ns)
{
	int rc = ing_complete(ing, false);

	if (rc < 0)
		return rc;
	if (!ing->busy && (ing->flush_wanted || fq_ingest_should_flush(ing)))
		return fq_ingest_flush(ing, now_ns, ing->budget_ns);
	return 0;
}

int fq_ingest_finish(struct fq_ingest *ing, int64_t now_ns, int64_t budget_ns)
{
	int rc = ing_complete(ing, true), rc2;

	rc2 = fq_ingest_flush(ing, now_ns, budget_ns);
	if (rc >= 0)
		rc = rc2;
	rc2 = ing_complete(ing, true);
	return rc < 0 ? rc : rc2 < 0 ? rc2 : 0;
}

struct fq_db *fq_ingest_db(struct fq_ingest *ing)
{
	struct fq_db_options o = {
	    .conninfo = ing->conninfo,
	    .connect_timeout_s = ing->cfg.connect_timeout_s,
	    .statement_timeout_ms = ing->cfg.statement_timeout_ms,
	};

	if (ing->down || !ing->db)
		return NULL; /* not before ingest's own connection has migrated the schema */
	return ing_db_open(ing, &ing->aux, &ing->aux_open, &o, NULL) ? ing->aux : NULL;
}

void fq_ingest_db_failed(struct fq_ingest *ing, int rc, int64_t now_ns)
{
	(void)now_ns;
	if (!fq_ingest_transient(rc))
		return;
	ing_db_down(ing, ing->aux ? fq_db_error(ing->aux) : "connection lost");
	fq_db_destroy(ing->aux);
	ing->aux = NULL;
}

void fq_ingest_get_stats(const struct fq_ingest *ing, struct fq_ingest_stats *st)
{
	*st = ing->st;
	st->spool_bytes = fq_spool_pending_bytes(ing->spool);
	st->pending_frames = ing->nbatch + ing->ninflight;
	st->cached_steps = ing->steps.count;
	st->cached_rank_nics = ing->rank_nics.count;
	st->db_up = ing->db && !ing->down;
}
