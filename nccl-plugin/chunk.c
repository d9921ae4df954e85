/* chunk: chunk arithmetic, header codec, reassembly accounting (see chunk.h). */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nccl-plugin/chunk.h"

uint64_t fqn_chunk_count(uint64_t msg_size, size_t chunk_size)
{
	if (msg_size == 0)
		return 1;
	return msg_size / chunk_size + (msg_size % chunk_size != 0);
}

uint32_t fqn_chunk_len(uint64_t msg_size, size_t chunk_size, uint64_t offset)
{
	uint64_t left = msg_size - offset;

	return (uint32_t)(left < chunk_size ? left : chunk_size);
}

/* Little-endian fields through memcpy: one load or store each on x86 and
 * arm64 (the compiler folds memcpy and a no-op le conversion). */
static void put16(uint8_t *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, sizeof(v));
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, sizeof(v));
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, sizeof(v));
}

static uint16_t get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return le16toh(v);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

void fqn_chunk_hdr_encode(const struct fqn_chunk_hdr *h, uint8_t out[FQN_CHUNK_HDR_SIZE])
{
	put32(out, FQN_CHUNK_MAGIC);
	out[4] = FQN_CHUNK_VERSION;
	out[5] = h->flags;
	put16(out + 6, h->lane);
	put64(out + 8, h->seq);
	put64(out + 16, h->msg_size);
	put64(out + 24, h->offset);
	put32(out + 32, h->len);
	put32(out + 36, (uint32_t)h->tag);
	put64(out + 40, (uint64_t)h->send_ns);
}

int fqn_chunk_hdr_decode(const uint8_t in[FQN_CHUNK_HDR_SIZE], size_t chunk_size, struct fqn_chunk_hdr *h,
			 const char **why)
{
	const char *bad = NULL;

	h->flags = in[5];
	h->lane = get16(in + 6);
	h->seq = get64(in + 8);
	h->msg_size = get64(in + 16);
	h->offset = get64(in + 24);
	h->len = get32(in + 32);
	h->tag = (int32_t)get32(in + 36);
	h->send_ns = (int64_t)get64(in + 40);
	if (get32(in) != FQN_CHUNK_MAGIC)
		bad = "bad magic";
	else if (in[4] != FQN_CHUNK_VERSION)
		bad = "unknown version";
	else if (h->flags & ~FQN_CHUNK_F_SYNC)
		bad = "unknown flags";
	else if (h->msg_size > FQN_MAX_MSG_SIZE)
		bad = "message size over 1 TiB";
	else if (h->offset % chunk_size != 0)
		bad = "offset not on a chunk boundary";
	else if (h->msg_size == 0 ? h->offset != 0 : h->offset >= h->msg_size)
		bad = "offset outside the message";
	else if (h->len != fqn_chunk_len(h->msg_size, chunk_size, h->offset))
		bad = "length is not the chunk's length";
	if (why)
		*why = bad;
	return bad ? -EBADMSG : 0;
}

int fqn_seen_begin(struct fqn_seen *s, uint64_t nchunks)
{
	memset(s->inline_bits, 0, sizeof(s->inline_bits));
	s->bits = s->inline_bits;
	if (nchunks > 64 * 8) {
		s->bits = calloc((size_t)((nchunks + 63) / 64), sizeof(uint64_t));
		if (!s->bits) {
			s->bits = s->inline_bits;
			return -ENOMEM;
		}
	}
	s->nchunks = nchunks;
	s->left = nchunks;
	return 0;
}

int fqn_seen_test(const struct fqn_seen *s, uint64_t idx)
{
	if (idx >= s->nchunks)
		return -EBADMSG;
	return (s->bits[idx / 64] >> (idx % 64)) & 1;
}

int fqn_seen_mark(struct fqn_seen *s, uint64_t idx, int *complete)
{
	uint64_t bit = 1ULL << (idx % 64);

	*complete = 0;
	if (idx >= s->nchunks)
		return -EBADMSG;
	if (s->bits[idx / 64] & bit)
		return 0;
	s->bits[idx / 64] |= bit;
	*complete = --s->left == 0;
	return 1;
}

void fqn_seen_free(struct fqn_seen *s)
{
	if (s->bits && s->bits != s->inline_bits)
		free(s->bits);
	s->bits = s->inline_bits;
}

int fqn_reasm_begin(struct fqn_reasm *r, uint64_t size, int32_t tag, size_t chunk_size)
{
	r->size = size;
	r->tag = tag;
	r->chunk_size = chunk_size;
	return fqn_seen_begin(&r->cov, fqn_chunk_count(size, chunk_size));
}

void fqn_reasm_end(struct fqn_reasm *r)
{
	fqn_seen_free(&r->cov);
}

int fqn_reasm_check(const struct fqn_reasm *r, const struct fqn_chunk_hdr *h, const char **why)
{
	const char *bad = NULL;
	int held = 0;

	if (h->msg_size != r->size)
		bad = "message size differs from its first chunk's";
	else if (h->tag != r->tag)
		bad = "tag differs from its first chunk's";
	else if (h->offset % r->chunk_size != 0 ||
		 (held = fqn_seen_test(&r->cov, h->offset / r->chunk_size)) < 0)
		bad = "chunk outside its message";
	else if (h->len != fqn_chunk_len(r->size, r->chunk_size, h->offset))
		bad = "length is not the chunk's length";
	if (why)
		*why = bad ? bad : held ? "chunk received twice" : NULL;
	return bad ? -EBADMSG : held ? -EALREADY : 0;
}

int fqn_reasm_add(struct fqn_reasm *r, const struct fqn_chunk_hdr *h, const char **why)
{
	int rc = fqn_reasm_check(r, h, why), complete;

	if (rc < 0)
		return rc;
	fqn_seen_mark(&r->cov, h->offset / r->chunk_size, &complete);
	return complete;
}
