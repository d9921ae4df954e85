/* libFuzzer target: the agent's probe packet parser, and the parser of a
 * router's ICMP time-exceeded quoting a path trace's probe (read on a raw
 * socket: anything on the wire reaches it). What decodes must encode back
 * to the same bytes; what parses as a quote must lie inside the input. */
#include <stdlib.h>
#include <string.h>

#include "slurmd-agent/probe_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fq_probe p;
	struct fq_trace_icmp q;
	uint8_t again[FQ_PROBE_SIZE];

	if (fq_probe_decode(data, size, &p) == 0) {
		fq_probe_encode(&p, again);
		if (memcmp(again, data, FQ_PROBE_SIZE) != 0)
			abort();
	}
	if (fq_trace_icmp_parse(data, size, &q) == 0 &&
	    (q.ttl < 1 || q.ttl > FQ_PROBE_TRACE_TTL_MAX || memcmp(&q.router, data + 12, 4) != 0))
		abort();
	return 0;
}
