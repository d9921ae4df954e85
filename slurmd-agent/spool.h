/*
 * spool: the agent's outgoing frames, on disk until the controller has
 * acknowledged them (write-ahead: every frame is spooled before it is
 * sent, so an agent restart or a controller outage loses nothing within
 * the bound).
 *
 * Frames carry increasing sequence numbers (Envelope.seq) assigned here.
 * The spool is a directory of segment files named by their first seq, each
 * a record log (common/reclog.h: checksummed records, a torn tail cut when
 * read back) whose record body is [u8 kind][u64 seq, big-endian][frame
 * bytes]. A segment is deleted once every frame in it is acknowledged.
 *
 * Frames are of two classes: bulk telemetry (probe, clock, lane and profiler
 * reports: a newer one supersedes an older) and events (step start and
 * end, link and failover events: what the job report is made of). Over the
 * size bound every closed segment, oldest first, is rewritten without its
 * bulk telemetry before any event is dropped; only when events alone
 * exceed the bound are the oldest segments dropped whole. Both classes
 * share one seq order, so the controller still sees a step's start before
 * its reports. Every dropped frame is counted by class. The next seq is leased in a small file so a
 * restarted agent never reuses a number the controller has stored.
 */
#ifndef FQ_AGENT_SPOOL_H
#define FQ_AGENT_SPOOL_H

#include <event2/event.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/fabriciq.pb-c.h"
#include "slurmd-agent/spool_flush.h"

struct fq_spool;

/* Open (creating) the spool in dir, bounded to max_bytes. Frames found
 * there from an earlier run are kept for sending. 0 or a negative errno. */
int fq_spool_open(const char *dir, uint64_t max_bytes, struct fq_spool **out);
void fq_spool_close(struct fq_spool *s);

/* Assign env->seq, serialise it and append it. 0, or a negative errno
 * (-EMSGSIZE for a frame over the frame limit; an I/O error is logged). */
int fq_spool_append(struct fq_spool *s, Fabriciq__Envelope *env);

/* Everything up to seq is acknowledged: drop it. */
void fq_spool_ack(struct fq_spool *s, uint64_t seq);

/* Sending: rewind to the first unacknowledged frame (after a reconnect). */
void fq_spool_rewind(struct fq_spool *s);
/* The next frame to send (header + envelope, as on the wire) into buf of
 * cap bytes: its length, 0 if none is waiting, or a negative errno. An
 * event is sent only once it is durable (fq_spool_durable_seq), and the
 * frames after it wait with it: the controller never stores an event the
 * node may still lose (a step SPANK was never told was registered, then a
 * node crash); bulk telemetry goes at once. The caller sends again when
 * the flush is done (fq_spool_when_durable). */
int64_t fq_spool_next(struct fq_spool *s, uint8_t *buf, size_t cap, uint64_t *seq);

/* The seq the next appended frame will get, and the first unacknowledged. */
uint64_t fq_spool_next_seq(const struct fq_spool *s);
uint64_t fq_spool_first_unacked(const struct fq_spool *s);
/* The first frame not durably known to be acknowledged: what the agent's
 * hello tells the controller. The acknowledged seq is kept in DIR/acked
 * (written at each ack, synced by the next flush), so after a restart,
 * even a node crash, this never goes below a value told before; the
 * controller takes a value that goes back (or 1, after acks) for an agent
 * that lost its spool, and would store its frames again. */
uint64_t fq_spool_first_unconfirmed(const struct fq_spool *s);
/* The seq of this run's first frame (next_seq when the spool was opened):
 * above every seq the spool ever gave (AgentHello.fresh_seq). */
uint64_t fq_spool_fresh_seq(const struct fq_spool *s);

/* Durability: spool_flush.h (fq_spool_attach, fq_spool_flush, fq_spool_when_durable). */

/* Whether frames of this Envelope payload case are bulk telemetry (dropped
 * first); the others are events. */
bool fq_spool_is_bulk(int payload_case);

/* {bytes, frames (on disk), unacked (sent or not, not yet acknowledged),
 * dropped_frames, dropped_bulk_frames, dropped_event_frames, io_errors,
 * acked_seq, next_seq, max_bytes} */
struct json_object *fq_spool_counters(const struct fq_spool *s);

#endif /* FQ_AGENT_SPOOL_H */
