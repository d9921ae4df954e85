/*
 * ingest: from accepted agent frames to durable rows.
 *
 * Frames are queued (with the agent's seq) and made durable in batches by
 * fq_ingest_flush: written to PostgreSQL through libfqdb (COPY writers and
 * upserts), or, while the database is unreachable or failing, appended to
 * the on-disk spool and fsync()ed. Only then is a frame reported durable
 * (ops->durable), which is when the daemon acknowledges it to its agent.
 * The spool is replayed in order when the database is back; new frames go
 * behind it, so rows reach the database in the order they were accepted.
 *
 * Dedupe: per node, the highest seq accepted (queued, stored or spooled).
 * A frame at or below it is a replay: dropped, never stored twice. The
 * highest stored seq per node is kept in fabriciq.agent_seq
 * (sql/004_controller.sql), written in the transaction of the flush that
 * stores the frames (fq_db_add_agent_seq), so a crash cannot separate a
 * batch from the seq that marks it stored; a spool replay skips what
 * agent_seq already covers. A restart keeps dedupe.
 *
 * A slow database must not stall the agents: each statement is cancelled
 * after statement_timeout_ms, the batch then goes to the spool, and while
 * the database is down each retry writes a small first chunk under a
 * short timeout before going back to full batches.
 *
 * Throughput: a flush runs on a writer thread of its own (frames to COPY
 * rows and upserts, then COPY, agent seqs, commit), so the event loop goes
 * on receiving and decoding while PostgreSQL parses the previous batch.
 * One flush is in flight at a time; the writer owns the connection while
 * it runs. When it is done it signals fq_ingest_fd(), and the loop calls
 * fq_ingest_poll(), which acknowledges its frames (ops->durable) or, if it
 * failed, spools them with the frames accepted since behind them. The
 * spool, its replay and every callback stay on the loop thread. While a
 * flush is in flight the next batch grows; past 4 x max_batch_frames the
 * loop waits for it (the agents then wait on TCP, not on our memory).
 *
 * Apart from that thread: call everything from the daemon's event loop
 * thread.
 *
 * The implementation: ingest.c (this interface), ingest_rows.c (frames to
 * rows), ingest_writer.c (the database's health, the writer thread),
 * ingest_replay.c (the spool); ingest_int.h, their shared state.
 */
#ifndef FQ_CONTROLLER_INGEST_H
#define FQ_CONTROLLER_INGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/fabriciq.pb-c.h"

struct fq_ingest;
struct fq_db;

struct fq_ingest_config {
	const char *conninfo;                   /* libpq conninfo ("": PG* environment) */
	const char *spool_dir;                  /* on-disk spool */
	uint64_t spool_max;                     /* bytes */
	size_t max_batch_frames;                /* fq_ingest_should_flush() beyond this */
	int64_t backoff_min_ns, backoff_max_ns; /* database reconnect backoff */
	bool migrate;                           /* bring the schema up to date on connect */
	/* Limits on waiting for PostgreSQL (0: the defaults below). The flush
	 * runs on the event loop: a statement that hangs (a lock, an overloaded
	 * server) stalls every agent, so it is cancelled after
	 * statement_timeout_ms and its frames go to the spool, like those of
	 * a failed flush (the connection's conninfo connect_timeout wins). */
	int connect_timeout_s;
	int statement_timeout_ms;
};

#define FQ_INGEST_CONNECT_TIMEOUT_S    3
#define FQ_INGEST_STATEMENT_TIMEOUT_MS 2000

struct fq_ingest_ops {
	/* Everything up to seq from node is durable: acknowledge it. */
	void (*durable)(void *arg, const char *node, uint64_t seq);
	/* Frames of node queued but not made durable were dropped (spool
	 * full): the daemon closes its connection so the agent replays them. */
	void (*dropped)(void *arg, const char *node);
};

enum fq_ingest_kind {
	FQ_INGEST_PROBE,
	FQ_INGEST_CLOCK,
	FQ_INGEST_LANE,
	FQ_INGEST_STEP_START,
	FQ_INGEST_STEP_END,
	FQ_INGEST_LINK,
	FQ_INGEST_FAILOVER,
	FQ_INGEST_HELLO,
	FQ_INGEST_TRACE,
	FQ_INGEST_LANE_ROUTE, /* for the detector only: nothing stored */
	FQ_INGEST_PROFILER,   /* the NCCL profiler plugin's windows and ops */
	FQ_INGEST_STALL,      /* an agent's loop stood still: for the detector only */
	FQ_INGEST_KINDS
};

struct fq_ingest_stats {
	uint64_t frames;                          /* report frames accepted (not duplicates) */
	uint64_t frames_by_kind[FQ_INGEST_KINDS]; /* by enum fq_ingest_kind */
	uint64_t duplicates;                      /* replays dropped by dedupe */
	uint64_t rows_written;                    /* COPY rows committed */
	uint64_t rows_rejected;                   /* rows or statements refused by the database (bad data) */
	uint64_t flushes, flush_failures;
	uint64_t spooled_frames, replayed_frames, spool_full_drops;
	uint64_t spool_bytes; /* not yet replayed */
	size_t pending_frames;
	size_t cached_steps, cached_rank_nics; /* running steps' starts and ranks' NICs (ingest_rows.c) */
	bool db_up;
};

/* Opens the spool, connects (a failure to connect is not an error: the
 * spool takes the frames), loads the per-node seqs. 0 or a negative errno
 * with err filled. */
int fq_ingest_create(const struct fq_ingest_config *c, const struct fq_ingest_ops *ops, void *arg,
		     struct fq_ingest **out, char *err, size_t errlen);
/* Frees everything; call fq_ingest_flush first (unflushed frames are not
 * acknowledged, so the agents still hold them). */
void fq_ingest_destroy(struct fq_ingest *ing);

/* An AgentHello (ownership of env taken): queues the node and NIC upserts;
 * if the agent restarted its count (proto AgentHello.next_seq: next_seq at
 * or below the accepted seq, and 1 or at or below a seq an earlier hello
 * showed acknowledged), restarts the node's dedupe and logs it; the flush
 * that stores the hello lowers agent_seq in order with the frames. */
int fq_ingest_hello(struct fq_ingest *ing, Fabriciq__Envelope *env, int64_t now_ns);

/* A report frame (ownership of env taken). Returns 1 queued, 0 a
 * duplicate (dropped; *ack_now is set to its seq when everything up to it
 * is durable already, else 0 and ops->durable will cover it), -EINVAL (no
 * payload this controller stores, or seq 0). */
int fq_ingest_frame(struct fq_ingest *ing, const char *node, Fabriciq__Envelope *env, int64_t now_ns,
		    uint64_t *ack_now);

bool fq_ingest_should_flush(const struct fq_ingest *ing);

/* Makes the queued frames durable and replays the spool while the
 * database answers (for at most budget_ns of replay): hands them to the
 * writer thread (durable when fq_ingest_poll says so), or, while the
 * database is down or the spool is not yet replayed, spools them now. A
 * flush asked for while one is in flight starts when that one completes.
 * 0, or a negative errno when frames had to be dropped. */
int fq_ingest_flush(struct fq_ingest *ing, int64_t now_ns, int64_t budget_ns);

/* An eventfd that becomes readable when a flush in flight has finished:
 * then call fq_ingest_poll. */
int fq_ingest_fd(const struct fq_ingest *ing);
/* Completes a finished flush (acks, or the spool) and starts the next one
 * if one was asked for meanwhile. 0, or a negative errno when frames had
 * to be dropped. */
int fq_ingest_poll(struct fq_ingest *ing, int64_t now_ns);
/* At exit: waits for the flush in flight, flushes the rest and waits for
 * that too. 0 or a negative errno as fq_ingest_flush. */
int fq_ingest_finish(struct fq_ingest *ing, int64_t now_ns, int64_t budget_ns);

/* A connection for the daemon's own statements (anomalies, hints), on the
 * loop thread: not the writer's, so they never wait for a flush in flight
 * (opened on first use off the loop, with the same limits, once ingest's
 * own connection has brought the schema up to date). NULL while it is
 * being opened and while the database is down. A failure there should be reported with fq_ingest_db_failed
 * (a transient one marks the database down and drops that connection). */
struct fq_db *fq_ingest_db(struct fq_ingest *ing);
void fq_ingest_db_failed(struct fq_ingest *ing, int rc, int64_t now_ns);

void fq_ingest_get_stats(const struct fq_ingest *ing, struct fq_ingest_stats *st);

/* Is rc a database error that retrying later can cure (connection lost,
 * resources), as opposed to a row the database refuses? */
bool fq_ingest_transient(int rc);

#endif /* FQ_CONTROLLER_INGEST_H */
