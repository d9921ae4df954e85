/* libFuzzer target: the agent's probe packet parser. What decodes must
 * encode back to the same bytes. */
#include <stdlib.h>
#include <string.h>

#include "slurmd-agent/probe_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fq_probe p;
	uint8_t again[FQ_PROBE_SIZE];

	if (fq_probe_decode(data, size, &p) == 0) {
		fq_probe_encode(&p, again);
		if (memcmp(again, data, FQ_PROBE_SIZE) != 0)
			abort();
	}
	return 0;
}
