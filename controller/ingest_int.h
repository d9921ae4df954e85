/*
 * ingest_int.h: the ingest module's state (controller/ingest.h), shared by
 * its files and by no one else:
 *   ingest.c         the public side: frames into the batch, flushes,
 *                    acknowledgements, create/destroy
 *   ingest_writer.c  the writer thread that runs flushes off the event
 *                    loop, and their completion
 *   ingest_replay.c  the spool: frames as spool records, a batch spooled,
 *                    replayed into the database once it is back (calls
 *                    controller/spool.h)
 *   ingest_db.c      the database connection's health (connect, down,
 *                    backoff, statement timeouts)
 *   ingest_rows.c    frames to rows: each kind of frame mapped onto the
 *                    database's rows, a batch written in one transaction
 *                    with the nodes' seqs (fabriciq.agent_seq)
 *   ingest_batch.c   the nodes' states, a settled batch's items (acked,
 *                    dropped, freed)
 * Each file calls only the files listed below it.
 *
 * A batch holds the unpacked envelopes themselves until they are durable:
 * the rows handed to libfqdb borrow their strings, and a failed flush can
 * still write the same frames to the spool.
 */
#ifndef FQ_CONTROLLER_INGEST_INT_H
#define FQ_CONTROLLER_INGEST_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/dbconnect.h"
#include "controller/ingest.h"
#include "controller/strmap.h"

struct fq_db_options;

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
	struct fq_db *db;  /* the writer's while busy */
	struct fq_db *aux; /* the loop thread's own statements (fq_ingest_db) */
	/* each opened off the loop (dbconnect.h): NULL when not opening */
	struct fq_dbconnect *db_open, *aux_open;
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

/* ---- ingest_writer.c: the writer thread ------------------------------------ */

/* Starts / stops (after its flush in flight) the writer thread. */
int ing_writer_start(struct fq_ingest *ing);
void ing_writer_stop(struct fq_ingest *ing);
/* Folds what ing_apply_items counted into the stats (loop thread, writer idle). */
void ing_fold_counts(struct fq_ingest *ing);
/* Hands the batch to the writer thread as a flush in flight. */
int ing_submit(struct fq_ingest *ing);
/* Completes the flush in flight, if any and if finished (or waiting for it
 * with wait): 1 completed, 0 nothing to do or still running; a negative
 * errno if frames had to be dropped. */
int ing_complete(struct fq_ingest *ing, bool wait);

/* ---- ingest_replay.c: the spool ---------------------------------------------- */

/* Appends one item to the spool as a record. */
int ing_spool_item(struct fq_ingest *ing, const struct item *it);
/* Writes the batch to the spool (durable there): 0, or a negative errno
 * (the spool full: its frames dropped). */
int ing_batch_to_spool(struct fq_ingest *ing);
/* Replays the spool into the database, chunk by chunk, for up to budget_ns. */
int ing_replay(struct fq_ingest *ing, int64_t budget_ns);
/* At start: the seqs of frames in the spool count as accepted. */
int ing_scan_spool(struct fq_ingest *ing);

/* ---- ingest_db.c: the database's health -------------------------------------- */

/* The database failed (what: doing what): closed, retried after a backoff. */
void ing_db_down(struct fq_ingest *ing, const char *what);
/* A statement went through: the backoff is reset. */
void ing_db_ok(struct fq_ingest *ing);
/* True if the database may be used now (connecting when needed). */
bool ing_db_usable(struct fq_ingest *ing);
bool ing_db_open(struct fq_ingest *ing, struct fq_db **db, struct fq_dbconnect **open,
		 const struct fq_db_options *o, fq_dbconnect_setup_fn setup);

/* ---- ingest_rows.c: frames to rows ----------------------------------------- */

/* Reads the stored seqs (once: see seq_loaded). */
int ing_load_seqs(struct fq_ingest *ing);
/* Writes items to the database in one flush, with their nodes' seqs in
 * the same transaction (fabriciq.agent_seq). A statement or row refused
 * for its data is dropped (counted); a transient failure aborts the lot
 * (nothing committed) with its errno. */
int ing_apply_items(struct fq_ingest *ing, const struct item *items, size_t n, bool one_by_one);

/* ---- ingest_batch.c: nodes and settled items ------------------------------- */

/* The node's state (created on first use); NULL: out of memory. */
struct node_state *ing_node_get(struct fq_ingest *ing, const char *name);
/* Frees every node's state. */
void ing_nodes_clear(struct fq_ingest *ing);
/* After the batch is durable (stored or spooled): acknowledge, reset. */
void ing_batch_durable(struct fq_ingest *ing);
/* The spool is full: forget these frames, let their agents resend them. */
void ing_items_drop(struct fq_ingest *ing, const struct item *items, size_t nitems);
/* ... the whole batch. */
void ing_batch_drop(struct fq_ingest *ing);
void ing_free_items(struct item *items, size_t n);

#endif /* FQ_CONTROLLER_INGEST_INT_H */
