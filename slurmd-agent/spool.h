/*
 * spool: the agent's outgoing frames, on disk until the controller has
 * acknowledged them (write-ahead: every frame is spooled before it is
 * sent, so an agent restart or a controller outage loses nothing within
 * the bound).
 *
 * Frames carry increasing sequence numbers (Envelope.seq) assigned here.
 * The spool is a directory of segment files named by their first seq; a
 * record is [u32 length][u8 kind][u64 seq][frame bytes] (big-endian). A
 * segment is deleted once every frame in it is acknowledged. Over the
 * size bound the oldest closed segments are first rewritten without their
 * probe reports (the least valuable data), then dropped whole; every
 * dropped frame is counted. The next seq is leased in a small file so a
 * restarted agent never reuses a number the controller has stored, and
 * the acknowledged seq is kept in another (at each fq_spool_sync and at
 * close) so it resends only what the controller may not have: the
 * segment being written is kept whole until it is closed.
 */
#ifndef FQ_AGENT_SPOOL_H
#define FQ_AGENT_SPOOL_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/fabriciq.pb-c.h"

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
 * cap bytes: its length, 0 if none is waiting, or a negative errno. */
int64_t fq_spool_next(struct fq_spool *s, uint8_t *buf, size_t cap, uint64_t *seq);

/* The seq the next appended frame will get, and the first unacknowledged. */
uint64_t fq_spool_next_seq(const struct fq_spool *s);
uint64_t fq_spool_first_unacked(const struct fq_spool *s);

/* Flush appended records to stable storage (once per report window). */
void fq_spool_sync(struct fq_spool *s);

/* {bytes, frames (on disk), unacked (sent or not, not yet acknowledged), dropped_frames, dropped_probe_frames, acked_seq, next_seq, max_bytes} */
struct json_object *fq_spool_counters(const struct fq_spool *s);

#endif /* FQ_AGENT_SPOOL_H */
