/* test-chunk: chunk arithmetic, header codec against hostile input, and
 * reassembly accounting (sizes 0, 1, chunk-1, chunk, chunk+1, 1 GiB). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nccl-plugin/chunk.h"
#include "tests/unit/tap.h"

#define C (512u * 1024u)

/* Field by field: the struct has padding, which memcmp would compare. */
static int hdr_eq(const struct fqn_chunk_hdr *a, const struct fqn_chunk_hdr *b)
{
	return a->seq == b->seq && a->msg_size == b->msg_size && a->offset == b->offset &&
	       a->send_ns == b->send_ns && a->len == b->len && a->tag == b->tag && a->lane == b->lane &&
	       a->flags == b->flags;
}

/* Cut a message as the sender does, feed every chunk through encode,
 * decode and reassembly in a scrambled order; count bytes. */
static int roundtrip(uint64_t size, uint64_t *bytes, uint64_t *chunks)
{
	uint64_t n = fqn_chunk_count(size, C), covered = 0;
	struct fqn_reasm r;
	int done = 0;

	if (fqn_reasm_begin(&r, size, 7, C) < 0)
		return -4;
	for (uint64_t k = 0; k < n; k++) {
		uint64_t idx = (k * 7919) % n; /* any order: lanes interleave */
		struct fqn_chunk_hdr h = {.seq = 3, .msg_size = size, .offset = idx * C, .tag = 7, .lane = 1};
		struct fqn_chunk_hdr d;
		uint8_t raw[FQN_CHUNK_HDR_SIZE];
		const char *why;
		int rc;

		if (n > 1 && 7919 % n == 0)
			idx = k;
		h.offset = idx * C;
		h.len = fqn_chunk_len(size, C, h.offset);
		fqn_chunk_hdr_encode(&h, raw);
		if (fqn_chunk_hdr_decode(raw, C, &d, &why) < 0 || !hdr_eq(&d, &h))
			return -1;
		covered += d.len;
		rc = fqn_reasm_add(&r, &d, &why);
		if (rc < 0 || (rc == 1) != (k == n - 1))
			return -2;
		done = rc;
	}
	fqn_reasm_end(&r);
	*bytes = covered;
	*chunks = n;
	return done ? 0 : -3;
}

static void test_sizes(void)
{
	const uint64_t sizes[] = {0, 1, C - 1, C, C + 1, 3ull * C, 1ull << 30};
	const uint64_t want[] = {1, 1, 1, 1, 2, 3, 2048};

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t bytes = 0, chunks = 0;
		int rc = roundtrip(sizes[i], &bytes, &chunks);

		ok(rc == 0 && bytes == sizes[i] && chunks == want[i],
		   "size %llu: %llu chunks cover it exactly and complete on the last",
		   (unsigned long long)sizes[i], (unsigned long long)chunks);
	}
	is_int(fqn_chunk_len(C + 1, C, C), 1, "the chunk after a full one holds the 1 remaining byte");
	is_int(fqn_chunk_len(0, C, 0), 0, "an empty message is one empty chunk");
}

static void encode_ok(struct fqn_chunk_hdr *h, uint8_t raw[FQN_CHUNK_HDR_SIZE])
{
	*h = (struct fqn_chunk_hdr){.seq = 1, .msg_size = 3 * C, .offset = C, .len = C, .tag = 0};
	fqn_chunk_hdr_encode(h, raw);
}

static void test_hostile(void)
{
	struct fqn_chunk_hdr h, d;
	uint8_t raw[FQN_CHUNK_HDR_SIZE];
	const char *why = NULL;

	encode_ok(&h, raw);
	ok(fqn_chunk_hdr_decode(raw, C, &d, &why) == 0, "a good header decodes");
	raw[0] ^= 1;
	ok(fqn_chunk_hdr_decode(raw, C, &d, &why) == -EBADMSG && strstr(why, "magic"), "bad magic: %s", why);
	encode_ok(&h, raw);
	raw[4] = 9;
	ok(fqn_chunk_hdr_decode(raw, C, &d, &why) == -EBADMSG && strstr(why, "version"), "bad version: %s",
	   why);
	encode_ok(&h, raw);
	raw[5] = 0x80;
	ok(fqn_chunk_hdr_decode(raw, C, &d, &why) == -EBADMSG && strstr(why, "flags"), "unknown flag: %s",
	   why);

	h.offset = C + 1;
	fqn_chunk_hdr_encode(&h, raw);
	ok(fqn_chunk_hdr_decode(raw, C, &d, &why) == -EBADMSG, "offset off a chunk boundary: %s", why);
	h.offset = 3 * C;
	fqn_chunk_hdr_encode(&h, raw);
	ok(fqn_chunk_hdr_decode(raw, C, &d, &why) == -EBADMSG, "offset at the end of the message: %s", why);
	h.offset = UINT64_MAX - (UINT64_MAX % C);
	fqn_chunk_hdr_encode(&h, raw);
	ok(fqn_chunk_hdr_decode(raw, C, &d, &why) == -EBADMSG, "offset near 2^64 (wrap): %s", why);
	h.offset = C;
	h.len = C + 1;
	fqn_chunk_hdr_encode(&h, raw);
	ok(fqn_chunk_hdr_decode(raw, C, &d, &why) == -EBADMSG, "length over the chunk size: %s", why);
	h.len = 10;
	fqn_chunk_hdr_encode(&h, raw);
	ok(fqn_chunk_hdr_decode(raw, C, &d, &why) == -EBADMSG, "short length mid-message: %s", why);
	h.len = C;
	h.msg_size = UINT64_MAX;
	fqn_chunk_hdr_encode(&h, raw);
	ok(fqn_chunk_hdr_decode(raw, C, &d, &why) == -EBADMSG, "message size 2^64-1: %s", why);
	h.msg_size = 0;
	h.offset = 0;
	h.len = 1;
	fqn_chunk_hdr_encode(&h, raw);
	ok(fqn_chunk_hdr_decode(raw, C, &d, &why) == -EBADMSG, "payload on an empty message: %s", why);

	/* Random garbage never decodes into something out of bounds. */
	srand(42);
	int bad = 0;
	for (int i = 0; i < 100000; i++) {
		for (int j = 0; j < FQN_CHUNK_HDR_SIZE; j++)
			raw[j] = (uint8_t)rand();
		if (i & 1) { /* keep magic and version so the deeper checks run */
			raw[0] = 'F', raw[1] = 'Q', raw[2] = 'C', raw[3] = 'H', raw[4] = 1, raw[5] &= 1;
			raw[16 + 5] = raw[16 + 6] = raw[16 + 7] = 0;
		}
		if (fqn_chunk_hdr_decode(raw, C, &d, &why) == 0 &&
		    (d.offset + d.len > d.msg_size || d.len > C || d.msg_size > FQN_MAX_MSG_SIZE))
			bad++;
	}
	is_int(bad, 0, "100000 random headers: none accepted that points outside its message");
}

static void test_reasm_mismatch(void)
{
	struct fqn_reasm r;
	struct fqn_chunk_hdr h = {.msg_size = 2 * C, .offset = 0, .len = C, .tag = 5};
	const char *why;
	int rc;

	ok(fqn_reasm_begin(&r, 2 * C, 5, C) == 0, "reassembly of a 2-chunk message");
	is_int(fqn_reasm_add(&r, &h, &why), 0, "first of two chunks: not complete");
	h.tag = 6;
	ok(fqn_reasm_add(&r, &h, &why) == -EBADMSG, "a chunk with another tag: %s", why);
	h.tag = 5;
	h.msg_size = 3 * C;
	ok(fqn_reasm_add(&r, &h, &why) == -EBADMSG, "a chunk with another size: %s", why);
	h.msg_size = 2 * C;
	/* Finding 10: the chunk count reached 0 with chunk 1 never received. */
	is_int(fqn_reasm_add(&r, &h, &why), -EALREADY, "the first chunk again: a duplicate (%s)", why);
	ok(fqn_reasm_check(&r, &h, &why) == -EALREADY && r.cov.left == 1,
	   "... which covers nothing: 1 chunk still missing");
	h.offset = C;
	h.len = 2 * C; /* what a lane decoding with twice the chunk size would pass */
	rc = fqn_reasm_add(&r, &h, &why);
	ok(rc == -EBADMSG, "a chunk longer than the message's chunk: %s", why);
	h.len = C;
	is_int(fqn_reasm_add(&r, &h, &why), 1, "the second chunk completes");
	is_int(fqn_reasm_add(&r, &h, &why), -EALREADY, "a third chunk is refused as a duplicate");
	h.offset = 2 * C;
	rc = fqn_reasm_add(&r, &h, &why);
	ok(rc == -EBADMSG, "a chunk past the end: %s", why);
	fqn_reasm_end(&r);
}

int main(void)
{
	test_sizes();
	test_hostile();
	test_reasm_mismatch();
	return done_testing();
}
