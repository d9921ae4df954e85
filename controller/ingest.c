/*
 * ingest: see ingest.h.
 *
 * A batch holds the unpacked envelopes themselves until they are durable:
 * the rows handed to libfqdb borrow their strings, and a failed flush can
 * still write the same frames to the spool.
 */
#include "controller/ingest.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/frame.h"
#include "common/log.h"
#include "controller/spool.h"
#include "controller/strmap.h"
#include "db/db.h"

#define REPLAY_CHUNK 4096
/* While the database is down, each retry writes a small first chunk under
 * a short statement timeout: a retry into a table still locked (or a
 * server still overloaded) then stalls the event loop for RETRY_TIMEOUT_MS,
 * not a full statement timeout, while the agents wait for their acks. */
#define RETRY_CHUNK      256
#define RETRY_TIMEOUT_MS 250
#define LINK_REFRESH_NS  (60 * 1000000000ll)
#define STEP_CACHE_MAX   100000
/* While a flush is in flight the next batch grows; beyond this many times
 * max_batch_frames the event loop waits for the flush, so a database
 * slower than the agents slows the agents (TCP) instead of filling memory. */
#define INFLIGHT_BACKLOG 4

struct node_state {
	char *name;
	uint64_t accepted;     /* highest seq queued, stored or spooled */
	uint64_t durable;      /* highest seq stored or spooled (acknowledged) */
	uint64_t stored;       /* fabriciq.agent_seq's last_seq as last read or committed */
	uint64_t confirmed;    /* highest seq its agent showed it knew acknowledged (hello) */
	uint64_t batch_max;    /* highest seq in the current batch (0: none) */
	uint64_t inflight_max; /* highest seq in the flush in flight (0: none) */
	/* apply_items' scratch: the node's seq as of the item being applied */
	uint64_t cur;
	unsigned gen, pass;   /* of apply_items, of items_seqs */
	unsigned restarts;    /* restarted counts (hellos): no ack across one */
	bool restarted;       /* count restarted before agent_seq was read: keep ours */
	bool restart_dropped; /* its restarting hello dropped (spool full) */
};

/* item.seq of a hello; of a hello that restarts its node's count. */
#define SEQ_HELLO   0
#define SEQ_RESTART UINT64_MAX

struct item {
	struct node_state *node;
	uint64_t seq; /* or SEQ_HELLO, SEQ_RESTART */
	int64_t recv_ns;
	Fabriciq__Envelope *env;
	unsigned restarts; /* its node's restarts when it was queued */
};

struct link_state {
	int state;
	int64_t since_ns, upserted_ns;
};

/* What apply_items counts: written by whichever thread runs it, folded
 * into the stats by the event loop thread (fold_counts). */
struct apply_counts {
	uint64_t duplicates, rows, rejected;
	uint64_t encode_ns, write_ns; /* frames to COPY rows + upserts; COPY, seqs, commit */
};

struct fq_ingest {
	struct fq_ingest_config cfg;
	char *conninfo, *spool_dir;
	struct fq_ingest_ops ops;
	void *arg;
	struct fq_db *db;   /* the writer's while busy */
	struct fq_db *aux;  /* the loop thread's own statements (fq_ingest_db) */
	bool seq_loaded;    /* read once: later reads would undo restarted counts */
	int timeout_ms;     /* the connection's statement timeout now */
	unsigned gen, pass; /* apply_items calls, items_seqs passes */
	/* FQ_INGEST_TEST_KILL_AFTER_FLUSHES=N (tests only): SIGKILL itself
	 * right after the Nth committed flush, before its acks go out: the
	 * crash exactly-once must survive (tests/controller/test-ctl-crash.sh). */
	unsigned long test_kill_after, commits;
	bool down;
	int64_t retry_ns, backoff_ns;
	struct fq_spool *spool;
	struct fq_strmap nodes, links, steps, rank_nics;
	struct item *batch;
	size_t nbatch, capbatch;
	struct fq_ingest_stats st;
	struct apply_counts ac;
	/* The writer thread (ingest.h): it owns db, links, steps and the
	 * nodes' apply scratch while busy; the event loop thread owns the
	 * rest. lock guards job_ready, job_done, job_rc, stop. */
	pthread_t writer;
	bool writer_up;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool job_ready, job_done, stop;
	int job_rc, efd;
	bool busy;         /* a flush handed over and not completed (loop thread) */
	bool flush_wanted; /* a flush was asked for while busy */
	int64_t budget_ns; /* of the last fq_ingest_flush */
	struct item *inflight;
	size_t ninflight, capinflight;
	int64_t job_start_ns, submit_ns, done_ns;
	uint64_t job_enc0, job_wr0;
	uint64_t jobs, job_rows, job_wait_ns, job_busy_ns;
};

bool fq_ingest_transient(int rc)
{
	return !(rc == -EINVAL || rc == -EILSEQ || rc == -ENOENT || rc == -EEXIST || rc == -ERANGE);
}

static struct node_state *node_get(struct fq_ingest *ing, const char *name)
{
	struct fq_strmap_entry *e = fq_strmap_upsert(&ing->nodes, name);
	struct node_state *n;

	if (!e)
		return NULL;
	if (e->value)
		return e->value;
	n = calloc(1, sizeof(*n));
	if (!n || !(n->name = strdup(name))) {
		free(n);
		fq_strmap_remove(&ing->nodes, name);
		return NULL;
	}
	e->value = n;
	return n;
}

static void node_free(void *v)
{
	struct node_state *n = v;

	if (n)
		free(n->name);
	free(n);
}

/* ---- fabriciq.agent_seq --------------------------------------------- */

/* Reads the stored seqs (once: see seq_loaded). */
static int load_seqs(struct fq_ingest *ing)
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
		struct node_state *nd = node_get(ing, rows[i].node);
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

/* ---- database connection ------------------------------------------- */

static int64_t now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void db_down(struct fq_ingest *ing, const char *what)
{
	int64_t now = now_mono();

	if (!ing->down)
		fq_warn("database unavailable (%s): frames go to the spool %s until it is back", what,
			ing->spool_dir);
	ing->down = true;
	ing->backoff_ns = ing->backoff_ns ? ing->backoff_ns * 2 : ing->cfg.backoff_min_ns;
	if (ing->backoff_ns > ing->cfg.backoff_max_ns)
		ing->backoff_ns = ing->cfg.backoff_max_ns;
	ing->retry_ns = now + ing->backoff_ns;
}

/* The statement timeout for a retry while down, else the configured one. */
static void set_timeout(struct fq_ingest *ing, bool retry)
{
	int ms = ing->cfg.statement_timeout_ms;

	if (retry && ms > RETRY_TIMEOUT_MS)
		ms = RETRY_TIMEOUT_MS;
	if (ing->db && ing->timeout_ms != ms && fq_db_set_statement_timeout(ing->db, ms) == 0)
		ing->timeout_ms = ms;
}

static void db_ok(struct fq_ingest *ing)
{
	if (ing->down) {
		fq_info("database is back");
		set_timeout(ing, false);
	}
	ing->down = false;
	ing->backoff_ns = 0;
}

static void db_close(struct fq_ingest *ing)
{
	fq_db_destroy(ing->db);
	ing->db = NULL;
}

/* True if the database may be used now (connecting when needed). */
static bool db_usable(struct fq_ingest *ing)
{
	struct fq_db_options o = {
	    .conninfo = ing->conninfo,
	    .connect_timeout_s = ing->cfg.connect_timeout_s,
	};
	char err[512];
	int rc;

	if (ing->down && now_mono() < ing->retry_ns)
		return false;
	if (!ing->db) {
		if (fq_db_connect(&o, &ing->db, err, sizeof(err)) < 0) {
			db_down(ing, err);
			return false;
		}
		if (ing->cfg.migrate && (rc = fq_db_migrate(ing->db, NULL)) < 0) {
			fq_error("database: migrating the schema: %s", fq_db_error(ing->db));
			db_close(ing);
			db_down(ing, "schema migration failed");
			return false;
		}
		/* After the migration, which may legitimately take long. */
		ing->timeout_ms = 0;
	}
	set_timeout(ing, ing->down);
	if (load_seqs(ing) < 0) {
		db_down(ing, "cannot read fabriciq.agent_seq");
		return false;
	}
	return true;
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
	    .owd_fwd_p99_ns = p->owd_fwd_p99_ns,
	    .owd_fwd_max_ns = p->owd_fwd_max_ns,
	    .owd_rev_min_ns = p->owd_rev_min_ns,
	    .owd_rev_p50_ns = p->owd_rev_p50_ns,
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
	};
	int rc = fq_db_add_lane_windows(ing->db, &w, 1);

	if (rc)
		return rc;
	return rank_nic(ing, l->job_id, l->step_id, l->is_send ? l->src_rank : l->dst_rank, me, l->local_nic);
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

/* What StepStart told us, so StepEnd's upsert keeps the step's mode and counts. */
struct step_info {
	uint32_t uid, node_count, task_count;
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

static int apply_step_end(struct fq_ingest *ing, const struct item *it)
{
	const Fabriciq__StepEnd *s = it->env->step_end;
	char key[FQ_STEP_KEY_LEN];
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
	return fq_db_upsert_step(ing->db, &st);
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

/* The node's count as of this item (apply_items). Returns false if the
 * item is at or below it: stored already, by a replay chunk committed just
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
static int apply_items(struct fq_ingest *ing, const struct item *items, size_t n, bool one_by_one)
{
	int64_t rows, t0 = now_mono(), t1;
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
	t1 = now_mono();
	ing->ac.encode_ns += (uint64_t)(t1 - t0);
	rows = fq_db_flush(ing->db);
	ing->ac.write_ns += (uint64_t)(now_mono() - t1);
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
		if ((rc = apply_items(ing, &items[i], 1, true)) < 0)
			return rc;
	return 0;
}

/* ---- spool records -------------------------------------------------- */

/* u16 node length | node | u64 seq | i64 recv_ns | packed envelope */
static int spool_item(struct fq_ingest *ing, const struct item *it)
{
	size_t nl = strlen(it->node->name), el = fabriciq__envelope__get_packed_size(it->env);
	size_t len = 2 + nl + 16 + el;
	uint8_t *b = malloc(len);
	uint16_t nl16 = (uint16_t)nl;
	int rc;

	if (!b)
		return -ENOMEM;
	memcpy(b, &nl16, 2);
	memcpy(b + 2, it->node->name, nl);
	memcpy(b + 2 + nl, &it->seq, 8);
	memcpy(b + 10 + nl, &it->recv_ns, 8);
	fabriciq__envelope__pack(it->env, b + 18 + nl);
	rc = fq_spool_append(ing->spool, b, len);
	free(b);
	return rc;
}

static int unspool_item(struct fq_ingest *ing, const uint8_t *b, size_t len, struct item *it)
{
	uint16_t nl;
	char name[65536];

	if (len < 18)
		return -EBADMSG;
	memcpy(&nl, b, 2);
	if ((size_t)nl + 18 > len)
		return -EBADMSG;
	memcpy(name, b + 2, nl);
	name[nl] = '\0';
	memcpy(&it->seq, b + 2 + nl, 8);
	memcpy(&it->recv_ns, b + 10 + nl, 8);
	if (!(it->node = node_get(ing, name)))
		return -ENOMEM;
	return fq_frame_unpack(b + 18 + nl, len - 18 - nl, &it->env);
}

static void free_items(struct item *items, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fq_frame_free(items[i].env);
}

/* Replays the spool into the database, chunk by chunk, for up to budget_ns. */
static int replay(struct fq_ingest *ing, int64_t budget_ns)
{
	int64_t until = now_mono() + budget_ns;
	struct item *items = calloc(REPLAY_CHUNK, sizeof(*items));
	int rc = 0;

	if (!items)
		return -ENOMEM;
	while (fq_spool_pending_bytes(ing->spool) && now_mono() < until) {
		size_t n = 0, bad = 0, chunk = ing->down ? RETRY_CHUNK : REPLAY_CHUNK;
		const uint8_t *b;
		size_t len;

		while (n < chunk && (rc = fq_spool_next(ing->spool, &b, &len)) == 1) {
			if (unspool_item(ing, b, len, &items[n]) < 0) {
				bad++;
				continue;
			}
			n++;
		}
		if (rc < 0 && rc != -EBADMSG) {
			free_items(items, n);
			break;
		}
		if (bad)
			fq_warn("spool: %zu unreadable records skipped", bad);
		rc = apply_items(ing, items, n, false);
		if (rc == 0) {
			/* A crash before this commit replays the chunk again:
			 * agent_seq, committed with it, makes that harmless. */
			if ((rc = fq_spool_commit(ing->spool)) < 0)
				fq_error("spool: committing the replay position: %s", strerror(-rc));
			ing->st.replayed_frames += n;
			db_ok(ing); /* full chunks, the configured timeout */
		} else {
			fq_spool_rewind(ing->spool);
			db_down(ing, fq_db_error(ing->db));
		}
		free_items(items, n);
		if (rc)
			break;
		if (!fq_spool_pending_bytes(ing->spool))
			fq_info("spool replayed into the database");
	}
	free(items);
	return rc;
}

/* At start: the seqs of frames in the spool count as accepted. */
static int scan_spool(struct fq_ingest *ing)
{
	const uint8_t *b;
	size_t len, n = 0;
	int rc;

	while ((rc = fq_spool_next(ing->spool, &b, &len)) == 1) {
		struct item it;
		if (unspool_item(ing, b, len, &it) < 0)
			continue;
		if (it.seq == SEQ_RESTART) {
			uint64_t next = it.env->hello->next_seq;
			it.node->accepted = it.node->durable = next ? next - 1 : 0;
			it.node->restarted = true;
		} else if (it.seq != SEQ_HELLO && it.node->accepted < it.seq) {
			it.node->accepted = it.node->durable = it.seq;
		}
		fq_frame_free(it.env);
		n++;
	}
	fq_spool_rewind(ing->spool);
	if (n)
		fq_info("spool %s holds %zu frames (%llu bytes) to replay", ing->spool_dir, n,
			(unsigned long long)fq_spool_pending_bytes(ing->spool));
	return rc < 0 ? rc : 0;
}

/* ---- the writer thread ------------------------------------------------ */

/*
 * One flush at a time runs on the writer thread: apply_items (frames to
 * COPY rows, upserts) and fq_db_flush (COPY, agent seqs, commit), while
 * the event loop goes on reading and decoding the next batch. That is
 * where the time went: with the flush on the loop thread, PostgreSQL sat
 * idle while the controller decoded and encoded, and the controller sat
 * idle while PostgreSQL parsed the COPY. Everything else (replaying the
 * spool, spooling, the acks) stays on the loop thread, which completes a
 * flush when the writer signals efd (fq_ingest_poll).
 */

static void *writer_main(void *arg)
{
	struct fq_ingest *ing = arg;
	uint64_t one = 1;
	int rc;

	pthread_mutex_lock(&ing->lock);
	for (;;) {
		while (!ing->job_ready && !ing->stop)
			pthread_cond_wait(&ing->cond, &ing->lock);
		if (!ing->job_ready)
			break;
		ing->job_ready = false;
		pthread_mutex_unlock(&ing->lock);
		rc = apply_items(ing, ing->inflight, ing->ninflight, false);
		pthread_mutex_lock(&ing->lock);
		ing->job_rc = rc;
		ing->job_done = true;
		ing->done_ns = now_mono();
		pthread_cond_broadcast(&ing->cond);
		if (write(ing->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			fq_log_rl(FQ_LOG_ERROR, "ingest: signalling a finished flush: %s", strerror(errno));
	}
	pthread_mutex_unlock(&ing->lock);
	return NULL;
}

static int writer_start(struct fq_ingest *ing)
{
	int rc;

	if ((ing->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
		return -errno;
	if ((rc = pthread_mutex_init(&ing->lock, NULL)))
		return -rc;
	if ((rc = pthread_cond_init(&ing->cond, NULL))) {
		pthread_mutex_destroy(&ing->lock);
		return -rc;
	}
	if ((rc = pthread_create(&ing->writer, NULL, writer_main, ing))) {
		pthread_cond_destroy(&ing->cond);
		pthread_mutex_destroy(&ing->lock);
		return -rc;
	}
	ing->writer_up = true;
	ing->job_start_ns = now_mono();
	return 0;
}

static int complete(struct fq_ingest *ing, bool wait);

static void writer_stop(struct fq_ingest *ing)
{
	if (ing->writer_up) {
		complete(ing, true);
		pthread_mutex_lock(&ing->lock);
		ing->stop = true;
		pthread_cond_broadcast(&ing->cond);
		pthread_mutex_unlock(&ing->lock);
		pthread_join(ing->writer, NULL);
		pthread_cond_destroy(&ing->cond);
		pthread_mutex_destroy(&ing->lock);
		ing->writer_up = false;
	}
	if (ing->efd >= 0)
		close(ing->efd);
	ing->efd = -1;
}

/* Folds what apply_items counted into the stats (loop thread, writer idle). */
static void fold_counts(struct fq_ingest *ing)
{
	ing->st.duplicates += ing->ac.duplicates;
	ing->st.rows_rejected += ing->ac.rejected;
	ing->st.rows_written += ing->ac.rows;
	ing->job_rows += ing->ac.rows;
	ing->ac.duplicates = ing->ac.rejected = ing->ac.rows = 0;
}

/* Hands the first max_batch_frames frames of the batch to the writer (a
 * flush never grows past what one statement timeout allows). Each node's
 * acknowledgement moves with its frames (inflight_max): the highest seq
 * among them, unless its count restarted since (never acknowledge the old
 * count's seqs to the new one); the rest of the batch keeps batch_max. */
static int submit(struct fq_ingest *ing)
{
	size_t k = ing->nbatch < ing->cfg.max_batch_frames ? ing->nbatch : ing->cfg.max_batch_frames;

	if (ing->capinflight < k) {
		struct item *b = realloc(ing->inflight, k * sizeof(*b));
		if (!b)
			return -ENOMEM;
		ing->inflight = b;
		ing->capinflight = k;
	}
	memcpy(ing->inflight, ing->batch, k * sizeof(*ing->batch));
	memmove(ing->batch, ing->batch + k, (ing->nbatch - k) * sizeof(*ing->batch));
	ing->ninflight = k;
	ing->nbatch -= k;
	for (size_t i = 0; i < k; i++) {
		const struct item *it = &ing->inflight[i];
		struct node_state *n = it->node;
		if (it->seq != SEQ_HELLO && it->seq != SEQ_RESTART && it->restarts == n->restarts &&
		    it->seq > n->inflight_max)
			n->inflight_max = it->seq;
	}
	for (size_t i = 0; i < k; i++) {
		struct node_state *n = ing->inflight[i].node;
		if (n->batch_max && n->batch_max == n->inflight_max)
			n->batch_max = 0; /* its last frame is in flight */
	}
	ing->busy = true;
	ing->jobs++;
	ing->submit_ns = now_mono();
	ing->job_enc0 = ing->ac.encode_ns;
	ing->job_wr0 = ing->ac.write_ns;
	pthread_mutex_lock(&ing->lock);
	ing->job_done = false;
	ing->job_ready = true;
	pthread_cond_signal(&ing->cond);
	pthread_mutex_unlock(&ing->lock);
	return 0;
}

static void batch_durable(struct fq_ingest *ing);
static void items_drop(struct fq_ingest *ing, const struct item *items, size_t nitems);
static void batch_drop(struct fq_ingest *ing);
static int batch_to_spool(struct fq_ingest *ing);

/* Completes the flush in flight, if any and if finished (or waiting for it
 * with wait): committed, its frames are acknowledged; failed, they go to
 * the spool with the frames accepted since behind them (order), as a
 * failed flush on the loop thread would. 1 completed, 0 nothing to do or
 * still running; a negative errno if frames had to be dropped. */
static int complete(struct fq_ingest *ing, bool wait)
{
	int64_t t0 = now_mono();
	uint64_t v;
	int rc;

	if (!ing->busy)
		return 0;
	pthread_mutex_lock(&ing->lock);
	if (!ing->job_done && !wait) {
		pthread_mutex_unlock(&ing->lock);
		return 0;
	}
	while (!ing->job_done)
		pthread_cond_wait(&ing->cond, &ing->lock);
	rc = ing->job_rc;
	pthread_mutex_unlock(&ing->lock);
	if (read(ing->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		fq_log_rl(FQ_LOG_ERROR, "ingest: reading the writer's eventfd: %s", strerror(errno));
	ing->job_wait_ns += (uint64_t)(now_mono() - t0);
	ing->busy = false;
	fq_debug("ingest: [%.3f..%.3f] flush of %zu frames: encoding %.1f ms, COPY + commit %.1f ms, "
		 "completed %.1f ms after "
		 "it finished (%zu frames queued since)",
		 (double)(ing->submit_ns % 100000000000ll) / 1e9,
		 (double)(ing->done_ns % 100000000000ll) / 1e9, ing->ninflight,
		 (double)(ing->ac.encode_ns - ing->job_enc0) / 1e6,
		 (double)(ing->ac.write_ns - ing->job_wr0) / 1e6, (double)(now_mono() - ing->done_ns) / 1e6,
		 ing->nbatch);
	fold_counts(ing);
	ing->job_busy_ns = ing->ac.encode_ns + ing->ac.write_ns;
	if (rc == 0) {
		db_ok(ing);
		for (size_t i = 0; i < ing->ninflight; i++) {
			struct node_state *n = ing->inflight[i].node;
			if (!n->inflight_max)
				continue;
			n->durable = n->inflight_max;
			n->inflight_max = 0;
			ing->ops.durable(ing->arg, n->name, n->durable);
		}
		free_items(ing->inflight, ing->ninflight);
		ing->ninflight = 0;
		return 1;
	}
	ing->st.flush_failures++;
	db_down(ing, fq_db_error(ing->db));
	/* inflight, then the batch accepted since: one batch, to the spool. */
	if (ing->capinflight < ing->ninflight + ing->nbatch) {
		struct item *b = realloc(ing->inflight, (ing->ninflight + ing->nbatch) * sizeof(*b));
		if (!b) {
			/* Not even that: drop both, their agents resend them. */
			items_drop(ing, ing->inflight, ing->ninflight);
			batch_drop(ing);
			free_items(ing->inflight, ing->ninflight);
			ing->ninflight = 0;
			free_items(ing->batch, ing->nbatch);
			ing->nbatch = 0;
			return -ENOMEM;
		}
		ing->inflight = b;
		ing->capinflight = ing->ninflight + ing->nbatch;
	}
	memcpy(ing->inflight + ing->ninflight, ing->batch, ing->nbatch * sizeof(*ing->batch));
	{
		struct item *t = ing->batch;
		size_t cap = ing->capbatch;
		ing->batch = ing->inflight;
		ing->nbatch = ing->ninflight + ing->nbatch;
		ing->capbatch = ing->capinflight;
		ing->inflight = t;
		ing->capinflight = cap;
		ing->ninflight = 0;
	}
	for (size_t i = 0; i < ing->nbatch; i++) {
		struct node_state *n = ing->batch[i].node;
		if (!n->batch_max)
			n->batch_max = n->inflight_max;
		n->inflight_max = 0;
	}
	if ((rc = batch_to_spool(ing)) == 0)
		batch_durable(ing);
	else
		batch_drop(ing);
	free_items(ing->batch, ing->nbatch);
	ing->nbatch = 0;
	return rc < 0 ? rc : 1;
}

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
	if (db_usable(ing))
		fq_info("database connected");
	if ((rc = scan_spool(ing)) < 0) {
		snprintf(err, errlen, "spool %s: %s", c->spool_dir, strerror(-rc));
		goto fail;
	}
	if ((rc = writer_start(ing)) < 0) {
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
	writer_stop(ing);
	if (ing->jobs)
		fq_info(
		    "ingest: %llu flushes, %llu rows (%.0f a flush); encoding %.2f us/row, COPY + commit "
		    "%.2f us/row; a flush in flight %.0f%% of the time, the event loop waited on it %.3f s",
		    (unsigned long long)ing->jobs, (unsigned long long)ing->job_rows,
		    (double)ing->job_rows / (double)ing->jobs,
		    ing->job_rows ? (double)ing->ac.encode_ns / 1e3 / (double)ing->job_rows : 0.0,
		    ing->job_rows ? (double)ing->ac.write_ns / 1e3 / (double)ing->job_rows : 0.0,
		    100.0 * (double)ing->job_busy_ns / (double)(now_mono() - ing->job_start_ns + 1),
		    (double)ing->job_wait_ns / 1e9);
	free_items(ing->inflight, ing->ninflight);
	free(ing->inflight);
	free_items(ing->batch, ing->nbatch);
	free(ing->batch);
	fq_strmap_clear(&ing->nodes, node_free);
	fq_strmap_clear(&ing->links, free);
	fq_strmap_clear(&ing->steps, free);
	fq_strmap_clear(&ing->rank_nics, NULL);
	fq_spool_close(ing->spool);
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
 * is either a replay (acks lost with the connection or with a controller
 * crash: the frames must be dropped as duplicates) or an agent that lost
 * its spool and counts afresh (the frames are new). It is the latter when
 * next_seq is 1, or when an earlier hello of the agent already showed it
 * knew of acks above next_seq: an agent's acknowledged seq only goes back
 * if it lost its spool. */
static bool count_restarted(const struct node_state *n, uint64_t next_seq)
{
	if (n->restart_dropped && next_seq)
		return true; /* the restarting hello was dropped (spool full): again */
	if (!next_seq || next_seq > n->accepted)
		return false;
	return next_seq == 1 || next_seq <= n->confirmed;
}

int fq_ingest_hello(struct fq_ingest *ing, Fabriciq__Envelope *env, int64_t now_ns)
{
	const Fabriciq__AgentHello *h = env->hello;
	struct node_state *n = node_get(ing, h->node);
	uint64_t seq = SEQ_HELLO;
	int rc;

	if (!n) {
		fq_frame_free(env);
		return -ENOMEM;
	}
	if (count_restarted(n, h->next_seq)) {
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
	default:
		return -1;
	}
}

int fq_ingest_frame(struct fq_ingest *ing, const char *node, Fabriciq__Envelope *env, int64_t now_ns,
		    uint64_t *ack_now)
{
	struct node_state *n = node_get(ing, node);
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

/* After the batch is durable (stored or spooled): acknowledge, reset. */
static void batch_durable(struct fq_ingest *ing)
{
	for (size_t i = 0; i < ing->nbatch; i++) {
		struct node_state *n = ing->batch[i].node;
		if (!n->batch_max)
			continue;
		n->durable = n->batch_max;
		n->batch_max = 0;
		ing->ops.durable(ing->arg, n->name, n->durable);
	}
}

/* The spool is full: forget these frames, let their agents resend them. */
static void items_drop(struct fq_ingest *ing, const struct item *items, size_t nitems)
{
	for (size_t i = 0; i < nitems; i++) {
		struct node_state *n = items[i].node;
		if (items[i].seq == SEQ_RESTART)
			n->restart_dropped = true;
		if (!n->batch_max && !n->inflight_max)
			continue;
		n->accepted = n->durable;
		n->batch_max = n->inflight_max = 0;
		ing->ops.dropped(ing->arg, n->name);
	}
	ing->st.spool_full_drops += nitems;
}

static void batch_drop(struct fq_ingest *ing)
{
	items_drop(ing, ing->batch, ing->nbatch);
}

static int batch_to_spool(struct fq_ingest *ing)
{
	int rc = 0;

	for (size_t i = 0; i < ing->nbatch && !rc; i++)
		rc = spool_item(ing, &ing->batch[i]);
	if (!rc)
		rc = fq_spool_sync(ing->spool);
	if (rc) {
		/* Nothing of this batch counts as spooled (its agents resend it). */
		fq_spool_discard(ing->spool);
		fq_log_rl(FQ_LOG_ERROR,
			  "spool %s: %s: %zu frames not acknowledged, their agents will resend them",
			  ing->spool_dir, strerror(-rc), ing->nbatch);
		return rc;
	}
	ing->st.spooled_frames += ing->nbatch;
	return 0;
}

int fq_ingest_flush(struct fq_ingest *ing, int64_t now_ns, int64_t budget_ns)
{
	bool usable;
	int rc = 0;

	(void)now_ns;
	ing->budget_ns = budget_ns;
	if (ing->busy) {
		/* Finished but not yet polled? Else flush when it is. */
		if ((rc = complete(ing, ing->nbatch >= INFLIGHT_BACKLOG * ing->cfg.max_batch_frames)) < 0)
			return rc;
		if (ing->busy) {
			ing->flush_wanted = true;
			return 0;
		}
	}
	ing->flush_wanted = false;
	usable = db_usable(ing);
	if (usable && fq_spool_pending_bytes(ing->spool)) {
		if (replay(ing, budget_ns) < 0)
			usable = false;
	}
	if (!ing->nbatch)
		goto out;
	ing->st.flushes++;
	if (usable && !fq_spool_pending_bytes(ing->spool) && submit(ing) == 0)
		return 0;
	if ((rc = batch_to_spool(ing)) == 0)
		batch_durable(ing);
	else
		batch_drop(ing);
	free_items(ing->batch, ing->nbatch);
	ing->nbatch = 0;
out:
	fold_counts(ing);
	if (usable && !ing->down && !fq_spool_pending_bytes(ing->spool))
		db_ok(ing);
	return rc;
}

int fq_ingest_fd(const struct fq_ingest *ing)
{
	return ing->efd;
}

int fq_ingest_poll(struct fq_ingest *ing, int64_t now_ns)
{
	int rc = complete(ing, false);

	if (rc < 0)
		return rc;
	if (!ing->busy && (ing->flush_wanted || fq_ingest_should_flush(ing)))
		return fq_ingest_flush(ing, now_ns, ing->budget_ns);
	return 0;
}

int fq_ingest_finish(struct fq_ingest *ing, int64_t now_ns, int64_t budget_ns)
{
	int rc = complete(ing, true), rc2;

	rc2 = fq_ingest_flush(ing, now_ns, budget_ns);
	if (rc >= 0)
		rc = rc2;
	rc2 = complete(ing, true);
	return rc < 0 ? rc : rc2 < 0 ? rc2 : 0;
}

struct fq_db *fq_ingest_db(struct fq_ingest *ing)
{
	struct fq_db_options o = {
	    .conninfo = ing->conninfo,
	    .connect_timeout_s = ing->cfg.connect_timeout_s,
	    .statement_timeout_ms = ing->cfg.statement_timeout_ms,
	};
	char err[512];

	if (ing->down)
		return NULL;
	if (!ing->aux && fq_db_connect(&o, &ing->aux, err, sizeof(err)) < 0) {
		db_down(ing, err);
		return NULL;
	}
	return ing->aux;
}

void fq_ingest_db_failed(struct fq_ingest *ing, int rc, int64_t now_ns)
{
	(void)now_ns;
	if (!fq_ingest_transient(rc))
		return;
	db_down(ing, ing->aux ? fq_db_error(ing->aux) : "connection lost");
	fq_db_destroy(ing->aux);
	ing->aux = NULL;
}

void fq_ingest_get_stats(const struct fq_ingest *ing, struct fq_ingest_stats *st)
{
	*st = ing->st;
	st->spool_bytes = fq_spool_pending_bytes(ing->spool);
	st->pending_frames = ing->nbatch + ing->ninflight;
	st->db_up = ing->db && !ing->down;
}
