/* libFuzzer target: the agent's probe packet parser, and the parsers of a
 * router's ICMP time-exceeded quoting a path trace's probe or a lane
 * trace's TCP segment (read on a raw socket: anything on the wire reaches
 * them). What decodes must encode back to the same bytes; what parses as a
 * quote must lie inside the input, and a lane quote's fields must be the
 * bytes it names. */
#include <stdlib.h>
#include <string.h>

#include "slurmd-agent/probe_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fq_probe p;
	struct fq_trace_icmp q;
	struct fq_lane_icmp l;
	uint8_t again[FQ_PROBE_SIZE];

	if (fq_probe_decode(data, size, &p) == 0) {
		fq_probe_encode(&p, again);
		if (memcmp(again, data, FQ_PROBE_SIZE) != 0)
			abort();
	}
	if (fq_trace_icmp_parse(data, size, &q) == 0 &&
	    (q.ttl < 1 || q.ttl > FQ_PROBE_TRACE_TTL_MAX || memcmp(&q.router, data + 12, 4) != 0))
		abort();
	if (fq_lane_icmp_parse(data, size, &l) == 0) {
		size_t q0 = (size_t)(data[0] & 15) * 4 + 8, tcp = q0 + (size_t)(data[q0] & 15) * 4;
		struct fq_lane_segment s = {.src = l.src,
					    .dst = l.dst,
					    .sport = l.sport,
					    .dport = l.dport,
					    .seq = l.seq,
					    .ttl = l.ttl};
		uint8_t seg[FQ_LANE_SEGMENT_SIZE];

		/* the quote's fields re-encoded: the same addresses, ports, seq */
		if (l.ttl < 1 || l.ttl > FQ_LANE_SEGMENT_TTL_MAX || tcp + 8 > size ||
		    memcmp(&l.router, data + 12, 4) != 0 || fq_lane_segment_encode(&s, seg) != 0 ||
		    memcmp(seg + 12, data + q0 + 12, 8) != 0 || memcmp(seg + 20, data + tcp, 8) != 0)
			abort();
	}
	return 0;
}
