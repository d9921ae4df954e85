/*
 * chunk: how a message is cut into chunks, the chunk header on the wire,
 * and the receiver's bookkeeping to reassemble it. Pure, no I/O.
 *
 * A message of S bytes becomes max(1, ceil(S / C)) chunks of C bytes (the
 * sender's chunk size, announced at connection setup), the last one shorter;
 * a zero-byte message is one chunk of length 0, so the receiver learns its
 * size and tag. Chunk k covers [k*C, min((k+1)*C, S)). Any lane may carry any
 * chunk; on one lane chunks go in (seq, offset) order.
 *
 * Header, 48 bytes, little-endian:
 *   0 u32 magic "FQCH"   4 u8 version (1)   5 u8 flags   6 u16 lane
 *   8 u64 seq (message number on this connection, from 0)
 *  16 u64 msg_size      24 u64 offset      32 u32 len      36 i32 tag
 *  40 i64 send_ns (global timeline when FQN_CHUNK_F_SYNC, else the sender's
 *         CLOCK_REALTIME: then no delay is measured from it)
 * Every chunk repeats msg_size and tag, so the first chunk to arrive on any
 * lane is enough to match the message to a receive buffer.
 */
#ifndef FQN_CHUNK_H
#define FQN_CHUNK_H

#include <stddef.h>
#include <stdint.h>

#define FQN_CHUNK_HDR_SIZE 48
#define FQN_CHUNK_MAGIC    0x48435146u /* "FQCH" */
#define FQN_CHUNK_VERSION  1
#define FQN_CHUNK_F_SYNC   0x01u /* send_ns is on the global timeline */
#define FQN_MAX_MSG_SIZE   (1ULL << 40)

struct fqn_chunk_hdr {
	uint64_t seq;
	uint64_t msg_size;
	uint64_t offset;
	int64_t send_ns;
	uint32_t len;
	int32_t tag;
	uint16_t lane;
	uint8_t flags;
};

/* Number of chunks of a message (>= 1). */
uint64_t fqn_chunk_count(uint64_t msg_size, size_t chunk_size);

/* Length of the chunk starting at offset (offset < msg_size, or 0 for an
 * empty message). */
uint32_t fqn_chunk_len(uint64_t msg_size, size_t chunk_size, uint64_t offset);

void fqn_chunk_hdr_encode(const struct fqn_chunk_hdr *h, uint8_t out[FQN_CHUNK_HDR_SIZE]);

/* Decode and check a header against the sender's chunk size: magic,
 * version, known flags, msg_size <= FQN_MAX_MSG_SIZE, offset on a chunk
 * boundary inside the message, len exactly the chunk's length. Returns 0,
 * or -EBADMSG with *why (static string) saying which check failed. */
int fqn_chunk_hdr_decode(const uint8_t in[FQN_CHUNK_HDR_SIZE], size_t chunk_size, struct fqn_chunk_hdr *h,
			 const char **why);

/* Which chunks of one message arrived: inline bits for messages of up to
 * 512 chunks (e.g. 256 MiB of 512 KiB chunks), heap bits beyond. */
struct fqn_seen {
	uint64_t inline_bits[8];
	uint64_t *bits;
	uint64_t nchunks;
	uint64_t left; /* chunks still missing */
};

/* 0 or -ENOMEM. */
int fqn_seen_begin(struct fqn_seen *s, uint64_t nchunks);
/* 1 if chunk idx was received whole already, 0 if not, -EBADMSG if idx
 * is not in the message. (The control-mode receiver lands a copy of a
 * chunk that is not held yet even while another lane is still landing
 * it: that lane may be dead; it is switched to the sink, so a late copy
 * never writes a buffer NCCL may already own again.) */
int fqn_seen_test(const struct fqn_seen *s, uint64_t idx);
/* Chunk idx arrived whole: 1 if new (*complete = 1 when it was the last
 * one missing), 0 if held already, -EBADMSG if idx is not in the message. */
int fqn_seen_mark(struct fqn_seen *s, uint64_t idx, int *complete);
void fqn_seen_free(struct fqn_seen *s);

/* One message being reassembled: its size and tag, and which chunks
 * (offsets) it holds. A message is complete when every chunk's offset is
 * covered, never by a count: a chunk that arrives twice (on two lanes, or
 * a resend) covers nothing new, so it can never complete a message that
 * still has a hole. */
struct fqn_reasm {
	uint64_t size;
	int32_t tag;
	size_t chunk_size;
	struct fqn_seen cov;
};

/* 0, or -ENOMEM (a message of more than 512 chunks needs heap bits). */
int fqn_reasm_begin(struct fqn_reasm *r, uint64_t size, int32_t tag, size_t chunk_size);
/* Release the coverage bits (any time after begin; again is harmless). */
void fqn_reasm_end(struct fqn_reasm *r);

/* Check one received (decoded) chunk against its message: 0 if it belongs
 * and is not held yet, -EALREADY if its offset is covered already (a
 * duplicate), -EBADMSG if it contradicts the message (size or tag differ,
 * offset outside it or off the message's chunk boundaries, length not
 * that chunk's: a chunk that passes lands inside [0, size) and covers
 * exactly its own chunk; *why says). Marks nothing. */
int fqn_reasm_check(const struct fqn_reasm *r, const struct fqn_chunk_hdr *h, const char **why);

/* Check, then cover the chunk: 1 when the message is complete, 0 if more
 * chunks are due, -EALREADY or -EBADMSG as fqn_reasm_check (nothing
 * covered then). */
int fqn_reasm_add(struct fqn_reasm *r, const struct fqn_chunk_hdr *h, const char **why);

/* n-byte little-endian fields of the setup messages (hello, IB handle):
 * byte at a time, any alignment. The chunk header has its own fixed-width
 * accessors (chunk.c), on the data path. */
static inline void fqn_put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t fqn_get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

#endif /* FQN_CHUNK_H */
