/*
 * ingest_rows: frames to rows. Each kind of frame (hello, probe window,
 * lane, clock report, link event, failover, step start/end) is mapped onto
 * the database's rows (db/db.h), and a batch is written in one
 * transaction with its nodes' seqs (fabriciq.agent_seq): exactly once.
 */
#include "controller/ingest_int.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/frame.h"
#include "common/log.h"
#include "db/db.h"

/* A database error worth retrying (not one about the data itself). */
bool fq_ingest_transient(int rc)
{
	return !(rc == -EINVAL || rc == -EILSEQ || rc == -ENOENT || rc == -EEXIST || rc == -ERANGE);
}

/* ---- fabriciq.agent_seq --------------------------------------------- */

/* Reads the stored seqs (once: see seq_loaded). */
int ing_load_seqs(struct fq_ingest *ing)
{
	struct fq_db_agent_seq *rows;
	size_t n;
	int rc;

	if (ing->seq_loaded)
		return 0;
	if ((rc = fq_db_agent_seqs(ing->db, &rows, &n)) < 0) {
		fq_error("database: %s", fq_db_error(ing->db));
		return rc;
	}
	for (size_t i = 0; i < n; i++) {
		struct node_state *nd = ing_node_get(ing, rows[i].node);
		if (!nd)
			continue;
		nd->stored = rows[i].last_seq;
		if (!nd->restarted && nd->accepted < nd->stored)
			nd->accepted = nd->durable = nd->stored;
	}
	fq_db_agent_seqs_free(rows, n);
	ing->seq_loaded = true;
	return 0;
}

/* ---- frames to rows ------------------------------------------------ */

static const char *str_or_null(const char *s)
{
	return s && *s ? s : NULL;
}

static int apply_probe(struct fq_ingest *ing, const struct item *it)
{
	const Fabriciq__ProbeReport *p = it->env->probe;
	struct fq_db_probe_window w = {
	    .window_start_ns = p->window_start_ns,
	    .window_end_ns = p->window_end_ns,
	    .src_node = it->node->name,
	    .src_nic = p->local_nic,
	    .dst_node = p->remote_node,
	    .dst_nic = p->remote_nic,
	    .sent = p->sent,
	    .answered = p->answered,
	    .lost = p->lost,
	    .owd_fwd_min_ns = p->owd_fwd_min_ns,
	    .owd_fwd_p50_ns = p->owd_fwd_p50_ns,
	    .owd_fwd_p90_ns = p->owd_fwd_p90_ns,
	    .owd_fwd_p99_ns = p->owd_fwd_p99_ns,
	    .owd_fwd_max_ns = p->owd_fwd_max_ns,
	    .owd_rev_min_ns = p->owd_rev_min_ns,
	    .owd_rev_p50_ns = p->owd_rev_p50_ns,
	    .owd_rev_p90_ns = p->owd_rev_p90_ns,
	    .owd_rev_p99_ns = p->owd_rev_p99_ns,
	    .owd_rev_max_ns = p->owd_rev_max_ns,
	    .rtt_p50_ns = p->rtt_p50_ns,
	    .timestamp_kind = (enum fq_db_timestamp_kind)(p->timestamp_kind <= 3 ? p->timestamp_kind : 0),
	    .path_up = p->path_up,
	    .agent_seq = it->seq,
	};
	char key[1024];
	struct fq_strmap_entry *e;
	struct link_state *ls;
	int state = p->path_up ? FQ_DB_LINK_UP : FQ_DB_LINK_DOWN;
	int rc = fq_db_add_probe_windows(ing->db, &w, 1);

	if (rc)
		return rc;
	/* The links table: on a state change, else at most once a minute. */
	snprintf(key, sizeof(key), "%s\x1f%s\x1f%s\x1f%s", w.src_node, w.src_nic, w.dst_node, w.dst_nic);
	if (!(e = fq_strmap_upsert(&ing->links, key)))
		return -ENOMEM;
	if (!e->value && !(e->value = calloc(1, sizeof(struct link_state))))
		return -ENOMEM;
	ls = e->value;
	if (ls->state == state && it->recv_ns - ls->upserted_ns < LINK_REFRESH_NS)
		return 0;
	if (ls->state != state)
		ls->since_ns = p->window_end_ns ? p->window_end_ns : it->recv_ns;
	{
		struct fq_db_link l = {
		    .src_node = w.src_node,
		    .src_nic = w.src_nic,
		    .dst_node = w.dst_node,
		    .dst_nic = w.dst_nic,
		    .state = (enum fq_db_link_state)state,
		    .state_since_ns = ls->since_ns,
		    .seen_ns = it->recv_ns,
		};
		if ((rc = fq_db_upsert_link(ing->db, &l)) == 0) {
			ls->state = state;
			ls->upserted_ns = it->recv_ns;
		}
	}
	return rc;
}

/* The job report's rank NICs (fq_db_add_rank_nic): the reporting agent's
 * own side of a lane, its rank and local NIC, once per (rank, node, NIC):
 * rank_nics remembers what went into the flush being built and what was
 * committed before; a flush that fails forgets it all (rank_nics_forget). */
static int rank_nic(struct fq_ingest *ing, uint64_t job, uint32_t step, uint32_t rank, const char *node,
		    const char *nic)
{
	char key[1024];
	struct fq_strmap_entry *e;
	int rc;

	if (!nic || !*nic)
		return 0;
	snprintf(key, sizeof(key), "%llu.%u.%u\x1f%s\x1f%s", (unsigned long long)job, step, rank, node, nic);
	if (fq_strmap_get(&ing->rank_nics, key))
		return 0;
	if ((rc = fq_db_add_rank_nic(ing->db, job, step, rank, node, nic)) < 0)
		return rc;
	if (ing->rank_nics.count >= STEP_CACHE_MAX)
		fq_strmap_clear(&ing->rank_nics, NULL);
	if ((e = fq_strmap_upsert(&ing->rank_nics, key)))
		e->value = (void *)1;
	return 0;
}

static void rank_nics_forget(struct fq_ingest *ing)
{
	fq_strmap_clear(&ing->rank_nics, NULL);
}

static int apply_lane(struct fq_ingest *ing, const struct item *it)
{
	const Fabriciq__LaneReport *l = it->env->lane;
	const char *me = it->node->name;
	struct fq_db_lane_window w = {
	    .interval_start_ns = l->interval_start_ns,
	    .interval_end_ns = l->interval_end_ns,
	    .job_id = l->job_id,
	    .step_id = l->step_id,
	    .src_rank = l->src_rank,
	    .dst_rank = l->dst_rank,
	    .lane = l->lane,
	    .lane_kind = *l->lane_kind ? l->lane_kind : "tcp",
	    .src_node = l->is_send ? me : l->remote_node,
	    .src_nic = l->is_send ? l->local_nic : l->remote_nic,
	    .dst_node = l->is_send ? l->remote_node : me,
	    .dst_nic = l->is_send ? l->remote_nic : l->local_nic,
	    .bytes = l->bytes,
	    .chunks = l->chunks,
	    .messages = l->messages,
	    .owd_min_ns = l->owd_min_ns,
	    .owd_p50_ns = l->owd_p50_ns,
	    .owd_p99_ns = l->owd_p99_ns,
	    .owd_max_ns = l->owd_max_ns,
	    .tcp_rtt_us = l->tcp_rtt_us,
	    .tcp_retrans = l->tcp_retrans,
	    .tcp_ce = l->tcp_delivered_ce,
	    .synchronised = l->synchronised,
	    .pacing_rate = l->pacing_rate,
	    .throttled_ns = l->throttled_ns,
	    .assigned_rate = l->assigned_rate,
	    .assigned_ns = l->assigned_ns,
	};
	int rc = fq_db_add_lane_windows(ing->db, &w, 1);

	if (rc)
		return rc;
	return rank_nic(ing, l->job_id, l->step_id, l->is_send ? l->src_rank : l->dst_rank, me, l->local_nic);
}

/* A profiler report: its windows and ops, each row with the report's
 * step, rank and node (the agent's word, slurmd-agent/proftag.h). */
static int apply_profiler(struct fq_ingest *ing, const struct item *it)
{
	const Fabriciq__ProfilerReport *p = it->env->profiler;
	int rc = 0;

	for (size_t i = 0; i < p->n_windows && !rc; i++) {
		const Fabriciq__ProfilerWindow *x = p->windows[i];
		struct fq_db_profiler_window w = {
		    .interval_start_ns = p->interval_start_ns,
		    .interval_end_ns = p->interval_end_ns,
		    .job_id = p->job_id,
		    .step_id = p->step_id,
		    .rank = p->rank,
		    .node = it->node->name,
		    .kind = x->kind,
		    .comm_hash = p->comm_hash,
		    .device = x->device,
		    .sub = x->sub,
		    .id = x->id,
		    .count = x->count,
		    .bytes = x->bytes,
		    .mean_ns = x->mean_ns,
		    .max_ns = x->max_ns,
		    .synchronised = p->synchronised,
		};
		rc = fq_db_add_profiler_windows(ing->db, &w, 1);
	}
	for (size_t i = 0; i < p->n_ops && !rc; i++) {
		const Fabriciq__ProfilerOp *x = p->ops[i];
		struct fq_db_profiler_op o = {
		    .start_ns = x->start_ns,
		    .end_ns = x->end_ns,
		    .job_id = p->job_id,
		    .step_id = p->step_id,
		    .rank = p->rank,
		    .nranks = p->nranks,
		    .node = it->node->name,
		    .func = x->func,
		    .algo = x->algo,
		    .proto = x->proto,
		    .comm_hash = p->comm_hash,
		    .seq = x->seq,
		    .bytes = x->bytes,
		    .p2p = x->p2p,
		    .peer = x->peer,
		    .algbw_gbs = x->gbps,
		    .synchronised = x->synchronised,
		};
		rc = fq_db_add_profiler_ops(ing->db, &o, 1);
	}
	return rc;
}

static int apply_clock(struct fq_ingest *ing, const struct item *it)
{
	const Fabriciq__ClockReport *c = it->env->clock;
	struct fq_db_clock_estimate rows[64];
	size_t n = 0;
	int rc = 0;

	for (size_t i = 0; i < c->n_estimates && !rc; i++) {
		const Fabriciq__ClockEstimate *e = c->estimates[i];
		rows[n++] = (struct fq_db_clock_estimate){
		    .reported_ns = it->recv_ns,
		    .node = it->node->name,
		    .peer_node = e->peer_node,
		    .offset_ns = e->offset_ns,
		    .drift_ppb = e->drift_ppb,
		    .error_bound_ns = e->error_bound_ns,
		    .samples = e->samples,
		    .window_start_local_ns = e->window_start_ns,
		    .window_end_local_ns = e->window_end_ns,
		    .applied_offset_ns = c->applied_offset_ns,
		    .applied_error_ns = c->applied_error_ns,
		    .correction_epoch = c->correction_epoch,
		};
		if (n == 64 || i + 1 == c->n_estimates) {
			rc = fq_db_add_clock_estimates(ing->db, rows, n);
			n = 0;
		}
	}
	return rc;
}

static int apply_link(struct fq_ingest *ing, const struct item *it)
{
	const Fabriciq__LinkEvent *l = it->env->link;
	struct fq_db_link_event e = {
	    .time_ns = l->time_ns ? l->time_ns : it->recv_ns,
	    .detected_ns = l->detected_ns ? l->detected_ns : it->recv_ns,
	    .node = it->node->name,
	    .nic = l->local_nic,
	    .remote_node = str_or_null(l->remote_node),
	    .remote_nic = str_or_null(l->remote_nic),
	    .state = (enum fq_db_link_state)(l->state <= 2 ? l->state : 0),
	    .detector = *l->detector ? l->detector : "probe",
	    .nic_level = l->nic_level,
	};

	return fq_db_add_link_events(ing->db, &e, 1);
}

static int apply_trace(struct fq_ingest *ing, const struct item *it)
{
	const Fabriciq__PathTrace *t = it->env->trace;
	struct fq_db_route r = {
	    .node = it->node->name,
	    .nic = t->local_nic,
	    .remote_node = t->remote_node,
	    .remote_nic = t->remote_nic,
	    .flow = t->flow,
	    .hops = (const char *const *)t->hops,
	    .n_hops = t->n_hops,
	    .reached = t->reached,
	    .time_ns = t->time_ns ? t->time_ns : it->recv_ns,
	};

	return fq_db_put_route(ing->db, &r);
}

static int apply_failover(struct fq_ingest *ing, const struct item *it)
{
	const Fabriciq__FailoverEvent *f = it->env->failover;
	struct fq_db_failover_event e = {
	    .time_ns = f->time_ns ? f->time_ns : it->recv_ns,
	    .job_id = f->job_id,
	    .step_id = f->step_id,
	    .src_rank = f->src_rank,
	    .dst_rank = f->dst_rank,
	    .from_lane = f->from_lane,
	    .to_lane = f->to_lane,
	    .node = it->node->name,
	    .local_nic = f->local_nic,
	    .remote_nic = f->remote_nic,
	    .cause = *f->cause ? f->cause : "socket-error",
	    .detect_ns = f->detect_ns,
	    .bytes_resent = f->bytes_resent,
	    .duration_ns = f->duration_ns,
	    .failback = f->failback,
	    .conn_id = f->conn_id,
	    .is_send = !f->from_receiver,
	};

	return fq_db_add_failover_events(ing->db, &e, 1);
}

/* What StepStart told us, so StepEnd's upsert keeps the step's mode and
 * counts; forgotten (with the step's rank NICs) once every node of the
 * step has ended it. */
struct step_info {
	uint32_t uid, node_count, task_count, nodes_ended;
	int64_t start_ns;
	char mode[16];
};

static int apply_step_start(struct fq_ingest *ing, const struct item *it)
{
	const Fabriciq__StepStart *s = it->env->step_start;
	const char *node = *s->node ? s->node : it->node->name;
	struct fq_db_step st = {
	    .job_id = s->job_id,
	    .step_id = s->step_id,
	    .uid = s->uid,
	    .mode = str_or_null(s->mode),
	    .net_class = str_or_null(s->net_class),
	    .node_count = s->node_count,
	    .task_count = s->task_count,
	    .start_ns = s->time_ns ? s->time_ns : it->recv_ns,
	};
	char key[FQ_STEP_KEY_LEN];
	struct fq_strmap_entry *e;
	int rc = fq_db_upsert_step(ing->db, &st);

	if (rc)
		return rc;
	fq_strmap_step_key(key, s->job_id, s->step_id);
	if (ing->steps.count < STEP_CACHE_MAX && (e = fq_strmap_upsert(&ing->steps, key))) {
		struct step_info *si = e->value ? e->value : calloc(1, sizeof(*si));
		if (si) {
			si->uid = s->uid;
			si->node_count = s->node_count;
			si->task_count = s->task_count;
			si->start_ns = st.start_ns;
			snprintf(si->mode, sizeof(si->mode), "%s", st.mode ? st.mode : "monitor");
			e->value = si;
		}
	}
	for (size_t i = 0; i < s->n_ranks; i++) {
		struct fq_db_rank r = {
		    .job_id = s->job_id,
		    .step_id = s->step_id,
		    .rank = s->ranks[i]->global_rank,
		    .local_rank = s->ranks[i]->local_rank,
		    .node = node,
		    .pid = s->ranks[i]->pid,
		};
		if ((rc = fq_db_upsert_rank(ing->db, &r)))
			return rc;
	}
	return 0;
}

/* Every node of the step (key "JOB.STEP") has ended it: its cached start
 * and its ranks' NICs are forgotten (the caches stay the size of the
 * running steps, not of every step since the controller started). */
static void forget_step(struct fq_ingest *ing, const char *key)
{
	char prefix[FQ_STEP_KEY_LEN + 1];

	free(fq_strmap_remove(&ing->steps, key));
	snprintf(prefix, sizeof(prefix), "%s.", key);
	fq_strmap_remove_prefix(&ing->rank_nics, prefix, NULL);
}

static int apply_step_end(struct fq_ingest *ing, const struct item *it)
{
	const Fabriciq__StepEnd *s = it->env->step_end;
	char key[FQ_STEP_KEY_LEN];
	int rc;
	struct step_info *si;
	struct fq_db_step st = {
	    .job_id = s->job_id,
	    .step_id = s->step_id,
	    .end_ns = s->time_ns ? s->time_ns : it->recv_ns,
	    .has_exit_status = true,
	    .exit_status = s->exit_status,
	};

	fq_strmap_step_key(key, s->job_id, s->step_id);
	si = fq_strmap_get(&ing->steps, key);
	st.start_ns = si ? si->start_ns : st.end_ns;
	if (si) {
		st.uid = si->uid;
		st.mode = si->mode;
		st.node_count = si->node_count;
		st.task_count = si->task_count;
	}
	rc = fq_db_upsert_step(ing->db, &st);
	if (!rc)
		rc = fq_db_step_node_end(ing->db, s->job_id, s->step_id, it->node->name, st.end_ns);
	if (rc < 0)
		return rc;
	if (rc == 1 && si && ++si->nodes_ended >= si->node_count)
		forget_step(ing, key);
	return 0;
}

static int apply_hello(struct fq_ingest *ing, const struct item *it)
{
	const Fabriciq__AgentHello *h = it->env->hello;
	struct fq_db_node n = {
	    .name = h->node,
	    .agent_version = str_or_null(h->agent_version),
	    .boot_id = str_or_null(h->boot_id),
	    .seen_ns = it->recv_ns,
	};
	int rc = fq_db_upsert_node(ing->db, &n);

	for (size_t i = 0; i < h->n_nics && !rc; i++) {
		const Fabriciq__Nic *x = h->nics[i];
		struct fq_db_nic nic = {
		    .node = h->node,
		    .name = x->name,
		    .address = str_or_null(x->address),
		    .guid = str_or_null(x->guid),
		    .rail = x->rail,
		    .speed_mbps = x->speed_mbps,
		    .kind = (enum fq_db_nic_kind)(x->kind <= 3 ? x->kind : 0),
		    .front_end = x->front_end,
		    .seen_ns = it->recv_ns,
		};
		rc = fq_db_upsert_nic(ing->db, &nic);
	}
	return rc;
}

static int apply_item(struct fq_ingest *ing, const struct item *it)
{
	switch (it->env->payload_case) {
	case FABRICIQ__ENVELOPE__PAYLOAD_PROBE:
		return apply_probe(ing, it);
	case FABRICIQ__ENVELOPE__PAYLOAD_LANE:
		return apply_lane(ing, it);
	case FABRICIQ__ENVELOPE__PAYLOAD_CLOCK:
		return apply_clock(ing, it);
	case FABRICIQ__ENVELOPE__PAYLOAD_LINK:
		return apply_link(ing, it);
	case FABRICIQ__ENVELOPE__PAYLOAD_FAILOVER:
		return apply_failover(ing, it);
	case FABRICIQ__ENVELOPE__PAYLOAD_STEP_START:
		return apply_step_start(ing, it);
	case FABRICIQ__ENVELOPE__PAYLOAD_STEP_END:
		return apply_step_end(ing, it);
	case FABRICIQ__ENVELOPE__PAYLOAD_HELLO:
		return apply_hello(ing, it);
	case FABRICIQ__ENVELOPE__PAYLOAD_TRACE:
		return apply_trace(ing, it);
	case FABRICIQ__ENVELOPE__PAYLOAD_LANE_ROUTE:
	case FABRICIQ__ENVELOPE__PAYLOAD_STALL:
		return 0; /* the detector's (ctl_detect.c); no row */
	case FABRICIQ__ENVELOPE__PAYLOAD_PROFILER:
		return apply_profiler(ing, it);
	default:
		return -EINVAL;
	}
}

static void reject(struct fq_ingest *ing, const struct item *it, int rc)
{
	ing->ac.rejected++;
	fq_log_rl(FQ_LOG_WARN, "frame seq %llu from %s refused by the database (%s): %s",
		  (unsigned long long)it->seq, it->node->name, strerror(-rc), fq_db_error(ing->db));
}

/* The node's count as of this item (ing_apply_items). Returns false if the
 * item is at or below it: stored already, by a ing_replay chunk committed just
 * before a crash kept the spool from recording it. */
static bool item_advance(struct fq_ingest *ing, const struct item *it)
{
	struct node_state *n = it->node;

	if (n->gen != ing->gen) {
		n->gen = ing->gen;
		n->cur = n->stored;
	}
	if (it->seq == SEQ_RESTART) {
		n->cur = it->env->hello->next_seq ? it->env->hello->next_seq - 1 : 0;
		return true;
	}
	if (it->seq == SEQ_HELLO)
		return true;
	if (it->seq <= n->cur)
		return false;
	n->cur = it->seq;
	return true;
}

/* Buffers the new seq of every node of items (once per node), for the
 * flush's transaction; with commit, records them as stored. */
static int items_seqs(struct fq_ingest *ing, const struct item *items, size_t n, bool commit)
{
	unsigned pass = ++ing->pass;
	int rc;

	for (size_t i = 0; i < n; i++) {
		struct node_state *nd = items[i].node;
		if (nd->gen != ing->gen || nd->pass == pass)
			continue;
		nd->pass = pass;
		if (commit)
			nd->stored = nd->cur;
		else if (nd->cur != nd->stored && (rc = fq_db_add_agent_seq(ing->db, nd->name, nd->cur)) < 0)
			return rc;
	}
	return 0;
}

/* Writes items to the database in one flush, with their nodes' seqs in
 * the same transaction (fabriciq.agent_seq). A statement or row refused
 * for its data is dropped (counted); a transient failure aborts the lot
 * (nothing committed) with its errno. */
int ing_apply_items(struct fq_ingest *ing, const struct item *items, size_t n, bool one_by_one)
{
	int64_t rows, t0 = fq_clock_ns(CLOCK_MONOTONIC), t1;
	int rc;

	ing->gen++;
	for (size_t i = 0; i < n; i++) {
		if (!item_advance(ing, &items[i])) {
			ing->ac.duplicates++;
			continue;
		}
		if ((rc = apply_item(ing, &items[i])) == 0)
			continue;
		if (fq_ingest_transient(rc)) {
			fq_db_discard(ing->db);
			rank_nics_forget(ing);
			return rc;
		}
		reject(ing, &items[i], rc);
		if (one_by_one) {
			fq_db_discard(ing->db);
			rank_nics_forget(ing);
		}
	}
	if ((rc = items_seqs(ing, items, n, false)) < 0) {
		fq_db_discard(ing->db);
		rank_nics_forget(ing);
		return rc;
	}
	t1 = fq_clock_ns(CLOCK_MONOTONIC);
	ing->ac.encode_ns += (uint64_t)(t1 - t0);
	rows = fq_db_flush(ing->db);
	ing->ac.write_ns += (uint64_t)(fq_clock_ns(CLOCK_MONOTONIC) - t1);
	if (rows >= 0) {
		if (ing->test_kill_after && ++ing->commits == ing->test_kill_after) {
			fq_warn("FQ_INGEST_TEST_KILL_AFTER_FLUSHES: killed after commit %lu", ing->commits);
			raise(SIGKILL);
		}
		items_seqs(ing, items, n, true);
		ing->ac.rows += (uint64_t)rows;
		return 0;
	}
	rc = (int)rows;
	fq_db_discard(ing->db);
	rank_nics_forget(ing);
	if (fq_ingest_transient(rc))
		return rc;
	if (one_by_one) {
		reject(ing, &items[0], rc);
		return 0;
	}
	/* One bad row fails the whole COPY: redo frame by frame (upserts are
	 * idempotent), dropping only the frames the database refuses. */
	for (size_t i = 0; i < n; i++)
		if ((rc = ing_apply_items(ing, &items[i], 1, true)) < 0)
			return rc;
	return 0;
}
