/*
 * relia: control mode's delivery bookkeeping (FABRICIQ_MODE=control), pure,
 * no I/O, so tests drive it with injected losses, duplicates and reorders.
 *
 * Sender: every chunk handed to a lane goes into that lane's FIFO (struct
 * fqn_txq) until the receiver acknowledges it. The receiver acks per lane
 * with a cumulative count of the chunks it has taken off that lane since
 * the lane (re)connected; a lane delivers in order, so a count pops exactly
 * the FIFO's front. A send completes when all its chunks are acked, so its
 * buffer is still there when a chunk has to go again. When a lane fails its
 * FIFO moves to the resend queue (struct fqn_resendq), which gives chunks
 * out lowest (seq, offset) first: "in order of need", the oldest message
 * being the one the receiver is waiting for.
 *
 * Receiver: a chunk is identified by its header's message seq and offset.
 * Its message's reassembly (struct fqn_reasm, chunk.h) remembers which
 * chunks arrived, so a chunk that arrives twice (it reached the receiver
 * but its ack died with the lane, and the sender resent it) is taken once
 * and the copy dropped.
 *
 * Ack record (FQN_CTRL_SIZE = 16 bytes, little-endian):
 *   0 u32 magic "FQAK"  4 u16 kind (1: ack)  6 u16 lane  8 u64 count
 */
#ifndef FQN_RELIA_H
#define FQN_RELIA_H

#include <stddef.h>
#include <stdint.h>

#include "nccl-plugin/lanes/lane.h"

#define FQN_CTRL_MAGIC 0x4b415146u /* "FQAK" */
#define FQN_CTRL_ACK   1
#define FQN_TXQ_MAX    256 /* unacked chunks per lane: the lane's window */

void fqn_ack_encode(uint16_t lane, uint64_t count, uint8_t out[FQN_CTRL_SIZE]);
/* 0, or -EBADMSG (not an ack record). */
int fqn_ack_decode(const uint8_t in[FQN_CTRL_SIZE], uint16_t *lane, uint64_t *count);

/* A chunk, as the sender finds it again: its message and offset. */
struct fqn_cref {
	uint64_t seq;
	uint64_t offset;
	uint32_t len;
};

struct fqn_txq {
	struct fqn_cref e[FQN_TXQ_MAX];
	unsigned head, count;
	uint64_t pushed; /* chunks pushed since reset */
	uint64_t acked;  /* the highest cumulative ack applied */
};

void fqn_txq_reset(struct fqn_txq *q);
static inline int fqn_txq_full(const struct fqn_txq *q)
{
	return q->count == FQN_TXQ_MAX;
}
/* 0, or -ENOBUFS (full: the caller checks fqn_txq_full first). */
int fqn_txq_push(struct fqn_txq *q, const struct fqn_cref *c);
/* Apply cumulative ack `count`: pops the newly acked chunks, calling
 * done(arg, chunk) for each in order. Returns how many were popped (0 for
 * a stale or repeated ack), or -EPROTO if count exceeds what was pushed. */
int fqn_txq_ack(struct fqn_txq *q, uint64_t count, void (*done)(void *arg, const struct fqn_cref *c),
		void *arg);

/* Chunks to send again, kept sorted so pop gives the lowest (seq, offset). */
struct fqn_resendq {
	struct fqn_cref *e; /* sorted descending: the next one is last */
	unsigned n, cap;
};

/* Move every chunk of q into rq (q is reset). Returns the bytes moved, or
 * -ENOMEM (then nothing moved). */
int64_t fqn_resendq_take(struct fqn_resendq *rq, struct fqn_txq *q);
/* 1 and *c: the next chunk to resend; 0: the queue is empty. */
int fqn_resendq_pop(struct fqn_resendq *rq, struct fqn_cref *c);
/* Give back the chunk just popped (the lane could not take it). */
void fqn_resendq_unpop(struct fqn_resendq *rq, const struct fqn_cref *c);
void fqn_resendq_free(struct fqn_resendq *rq);

/* What the receiver does with a chunk header, from its receive state:
 * the message is not posted yet (wait), it was completed before (drop a
 * copy), or it is being received (then its fqn_reasm decides). */
enum fqn_rx_class {
	FQN_RX_STALL,
	FQN_RX_DUP,
	FQN_RX_LIVE
};
enum fqn_rx_class fqn_rx_classify(uint64_t seq, uint64_t post_seq, int slot_active, uint64_t slot_seq);

#endif /* FQN_RELIA_H */
