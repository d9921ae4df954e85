/*
 * libFuzzer target: the frame decoder on hostile bytes. The first byte
 * picks the chunk size the rest is fed in, so split handling is fuzzed as
 * well as payloads; every decoded envelope is re-encoded and must decode
 * to the same bytes.
 */
#include "common/frame.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fq_frame_decoder *d;
	Fabriciq__Envelope *env;
	size_t step, off = 1;
	int rc;

	if (size < 1)
		return 0;
	step = (size_t)data[0] % 17 + 1;
	d = fq_frame_decoder_create(64 * 1024);
	if (!d)
		return 0;
	while (off < size) {
		size_t n = size - off < step ? size - off : step;
		if (fq_frame_decoder_feed(d, data + off, n) < 0)
			break;
		off += n;
		while ((rc = fq_frame_decoder_next(d, &env)) != 0) {
			if (rc == -EMSGSIZE)
				goto out;
			if (rc < 0)
				continue;
			uint8_t *buf, *buf2;
			size_t len, len2;
			if (fq_frame_encode(env, 0, &buf, &len) == 0) {
				Fabriciq__Envelope *again;
				if (fq_frame_unpack(buf + 4, len - 4, &again) != 0)
					abort();
				if (fq_frame_encode(again, 0, &buf2, &len2) != 0 || len2 != len ||
				    memcmp(buf, buf2, len) != 0)
					abort();
				free(buf2);
				fq_frame_free(again);
				free(buf);
			}
			fq_frame_free(env);
		}
	}
out:
	fq_frame_decoder_destroy(d);
	return 0;
}
