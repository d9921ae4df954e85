/* Loopback traffic through the plugin's net API for its C tests (header
 * only; nccl-test.h has the helpers that need no plugin symbols). */
#ifndef FQN_TESTS_NCCL_TRAFFIC_H
#define FQN_TESTS_NCCL_TRAFFIC_H

#include <string.h>

#include "nccl-plugin/core/net.h"
#include "tests/nccl/nccl-test.h"

/* Messages of 256 KiB from s to r for secs, each filled anew and checked
 * at the far end: 1 if every one completed intact (*n counts them), 0 at
 * the first that did not (5 s each at most). */
static inline int loopback_traffic(struct fqn_send *s, struct fqn_recv *r, double secs, int *n)
{
	static char sb[1 << 18], rb[1 << 18];
	double end = now_s() + secs;

	while (now_s() < end) {
		struct fqn_req *sq = NULL, *rq = NULL;
		void *data = rb;
		size_t size = sizeof(rb);
		int tag = 3, sd = 0, rd = 0, src = 0, rrc = 0;
		double limit = now_s() + 5;

		memset(sb, 'a' + *n % 26, sizeof(sb));
		memset(rb, 0, sizeof(rb));
		fqn_irecv(r, 1, &data, &size, &tag, &rq);
		fqn_isend(s, sb, sizeof(sb), tag, &sq);
		while ((!sd || !rd) && !src && !rrc && now_s() < limit) {
			if (!sd && sq)
				src = fqn_test(sq, &sd, NULL, NULL);
			if (!rd && rq)
				rrc = fqn_test(rq, &rd, NULL, NULL);
		}
		if (!sd || !rd || memcmp(sb, rb, sizeof(sb)) != 0)
			return 0;
		(*n)++;
	}
	return 1;
}

#endif
