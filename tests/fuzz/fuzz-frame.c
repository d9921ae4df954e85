/*
 * libFuzzer target: the frame decoder on hostile bytes. The first byte
 * picks the chunk size the rest is fed in, so split handling is fuzzed as
 * well as payloads; every decoded envelope is re-encoded and must decode
 * again to the same sequence number and payload kind, or be refused cleanly.
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
			uint8_t *buf;
			size_t len;
			/* What decodes must encode, and that must decode again to
			 * the same thing, or be refused cleanly: protobuf-c keeps
			 * unknown fields it accepted leniently (a field numbered
			 * 0 with a non-minimal tag) and then refuses their
			 * re-encoding. So a forwarder of outside frames (the agent
			 * relaying plugin telemetry) must not relay unknown fields. */
			if (fq_frame_encode(env, 0, &buf, &len) == 0) {
				Fabriciq__Envelope *again;
				int rc2 = fq_frame_unpack(buf + 4, len - 4, &again);
				if (rc2 == -EBADMSG) {
					free(buf);
					fq_frame_free(env);
					continue;
				}
				if (rc2 != 0 || again->seq != env->seq ||
				    again->payload_case != env->payload_case)
					abort();
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
