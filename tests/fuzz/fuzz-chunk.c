/*
 * fuzz-chunk: what the NCCL plugin reads from a lane's peer on the data
 * path: a chunk header (48 bytes, checked against the sender's chunk size,
 * then accounted in its message's reassembly) and a control record (an
 * ack, 16 bytes). Input: 1 byte choosing the chunk size (4 KiB << 0..14),
 * the header, the record. A header or record that decodes must encode and
 * decode again to the same fields; reassembly takes a chunk once (it
 * completes a one-chunk message) and refuses its copies as duplicates.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nccl-plugin/chunk.h"
#include "nccl-plugin/control/relia.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t hdr[FQN_CHUNK_HDR_SIZE] = {0}, out[FQN_CHUNK_HDR_SIZE], rec[FQN_CTRL_SIZE] = {0};
	struct fqn_chunk_hdr h, h2;
	struct fqn_reasm r;
	const char *why;
	size_t chunk;
	uint64_t count, count2;
	uint16_t lane, lane2;

	if (size < 1)
		return 0;
	chunk = (size_t)4096 << (data[0] % 15);
	data++, size--;
	memcpy(hdr, data, size < sizeof(hdr) ? size : sizeof(hdr));
	if (fqn_chunk_hdr_decode(hdr, chunk, &h, &why) == 0) {
		fqn_chunk_hdr_encode(&h, out);
		if (fqn_chunk_hdr_decode(out, chunk, &h2, &why) != 0 || h2.seq != h.seq ||
		    h2.msg_size != h.msg_size || h2.offset != h.offset || h2.send_ns != h.send_ns ||
		    h2.len != h.len || h2.tag != h.tag || h2.lane != h.lane || h2.flags != h.flags)
			abort();
		if (h.len > chunk || h.offset + h.len > h.msg_size)
			abort();
		if (fqn_reasm_begin(&r, h.msg_size, h.tag, chunk) == 0) {
			/* the same chunk again and again: covered once, a duplicate after */
			for (int k = 0; k < 4; k++) {
				int rc = fqn_reasm_add(&r, &h, &why);

				if (k == 0 ? rc != (fqn_chunk_count(h.msg_size, chunk) == 1)
					   : rc != -EALREADY)
					abort();
			}
			fqn_reasm_end(&r);
		}
	}
	if (size > sizeof(hdr)) {
		memcpy(rec, data + sizeof(hdr),
		       size - sizeof(hdr) < sizeof(rec) ? size - sizeof(hdr) : sizeof(rec));
		if (fqn_ack_decode(rec, &lane, &count) == 0) {
			fqn_ack_encode(lane, count, rec);
			if (fqn_ack_decode(rec, &lane2, &count2) != 0 || lane2 != lane || count2 != count)
				abort();
		}
	}
	return 0;
}
