/*
 * spool_flush: the agent spool's durability, part of the spool's
 * interface (spool.h includes it). spool_flush.c is below spool.c: it
 * works on the spool's state (spool_int.h) and calls nothing of spool.c.
 */
#ifndef FQ_AGENT_SPOOL_FLUSH_H
#define FQ_AGENT_SPOOL_FLUSH_H

#include <stdint.h>

struct event_base;
struct fq_spool;

/*
 * Durability (doc/design.md, "What a crash keeps"). An appended frame is
 * in the page cache at once: an agent that crashes keeps it. A node that
 * crashes keeps what a flush made durable: every segment written synced,
 * the directory synced after a segment was created or renamed (else a
 * synced file may lose its name), and the seq lease. A flush runs on the
 * spool's worker thread once fq_spool_attach gave it one (inline before),
 * never two at once: one asked meanwhile runs when the first ends, for
 * every frame appended by then (group commit).
 */
/* Give the spool a worker on base's loop for its flushes. 0 or -errno. */
int fq_spool_attach(struct fq_spool *s, struct event_base *base);
/* Make every frame appended so far durable (an event: at once; bulk
 * telemetry: once per report window). */
void fq_spool_flush(struct fq_spool *s);
/* Every frame up to this seq is durable. */
uint64_t fq_spool_durable_seq(const struct fq_spool *s);
/* fn(arg, rc) once the frame of seq is durable (rc 0) or its flush failed
 * (a negative errno), in seq order, from the loop; a flush is started.
 * Returns 0 (fn will be called), 1 (durable already: fn is not called),
 * or -ENOMEM. */
typedef void (*fq_spool_durable_fn)(void *arg, int rc);
int fq_spool_when_durable(struct fq_spool *s, uint64_t seq, fq_spool_durable_fn fn, void *arg);

#endif /* FQ_AGENT_SPOOL_FLUSH_H */
