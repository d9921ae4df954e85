/*
 * fuzz-ud: the agent's UD probe inputs from outside: peer addresses (from
 * agent.peers and the controller's peer assignment) and received UD
 * messages (GRH room + probe). A parsed address must format to a text that
 * parses back to an equal address; a payload found must lie inside the
 * buffer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "slurmd-agent/probe_transport.h"
#include "slurmd-agent/probe_ud.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char text[256], again[FQ_PEER_ADDR_STRLEN];
	struct fq_peer_addr a, b;
	const uint8_t *payload;
	uint8_t gid[16];
	size_t len, n = size < sizeof(text) - 1 ? size : sizeof(text) - 1;
	bool has_gid;

	memcpy(text, data, n);
	text[n] = '\0';
	if (fq_peer_addr_parse(text, 7101, &a) == 0) {
		fq_peer_addr_format(&a, again, sizeof(again));
		if (fq_peer_addr_parse(again, 7101, &b) != 0 || !fq_peer_addr_equal(&a, &b))
			abort();
	}
	for (int grh = 0; grh < 2; grh++)
		if (fq_ud_rx_payload(data, (uint32_t)size, grh, &payload, &len, &has_gid, gid) == 0 &&
		    (payload < data || payload + len > data + size))
			abort();
	return 0;
}
