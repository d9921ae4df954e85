/*
 * fq-chunkcost: the per-chunk CPU work of the plugin's data path, for
 * callgrind. Mode "base": what every chunk costs without telemetry (header
 * encode, decode and check, reassembly accounting); mode "telemetry": the
 * same plus what telemetry adds (a global-time stamp at send through the
 * clock page, a receive stamp, the one-way delay into the histogram).
 *
 *   fq-chunkcost base|telemetry N [CLOCK_PAGE]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock_page.h"
#include "nccl-plugin/chunk.h"
#include "nccl-plugin/core/ctx.h"
#include "nccl-plugin/core/net.h"
#include "nccl-plugin/hist.h"

int main(int argc, char **argv)
{
	struct fq_clock_page_writer *w = NULL;
	const struct fqn_ctx *ctx;
	int telemetry, sync;
	long n;
	struct fqn_hist hist;
	struct fqn_reasm r;
	uint64_t sink = 0;

	if (argc < 3 || (strcmp(argv[1], "base") != 0 && strcmp(argv[1], "telemetry") != 0)) {
		fprintf(stderr, "usage: fq-chunkcost base|telemetry N [CLOCK_PAGE]\n");
		return 2;
	}
	telemetry = strcmp(argv[1], "telemetry") == 0;
	n = atol(argv[2]);
	if (argc > 3) { /* a valid clock page, so stamps take the synchronised path */
		struct fq_clock_model m = {.clock_id = CLOCK_MONOTONIC_RAW,
					   .offset_ns = 1000,
					   .drift_ppb = 10,
					   .error_bound_ns = 100,
					   .valid_until_ns = INT64_MAX};
		struct timespec ts;

		/* As the agent publishes it: the reference point is recent. */
		clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
		m.ref_local_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
		if (fq_clock_page_writer_open(argv[3], &w) < 0)
			return 1;
		fq_clock_page_publish(w, &m);
		setenv("FABRICIQ_CLOCK_PAGE", argv[3], 1);
	}
	setenv("FABRICIQ_IFACES", "lo", 1);
	if (fqn_init(NULL) < 0)
		return 1;
	ctx = fqn_context();
	fqn_hist_reset(&hist);
	if (fqn_reasm_begin(&r, (uint64_t)n * 4096, 0, 4096) < 0)
		return 1;
	for (long i = 0; i < n; i++) {
		struct fqn_chunk_hdr h = {
		    .seq = 1, .msg_size = (uint64_t)n * 4096, .offset = (uint64_t)i * 4096, .len = 4096};
		struct fqn_chunk_hdr d;
		uint8_t raw[FQN_CHUNK_HDR_SIZE];
		const char *why;

		if (telemetry) {
			h.send_ns = fqn_clock_now(ctx, &sync);
			h.flags = sync ? FQN_CHUNK_F_SYNC : 0;
		}
		fqn_chunk_hdr_encode(&h, raw);
		if (fqn_chunk_hdr_decode(raw, 4096, &d, &why) < 0 || fqn_reasm_add(&r, &d, &why) < 0)
			return 1;
		if (telemetry)
			fqn_hist_add(&hist, fqn_clock_now(ctx, &sync) - d.send_ns);
		sink += d.offset;
	}
	fqn_reasm_end(&r);
	printf("%ld chunks, %llu samples, p50 %lld ns (%s)\n", n, (unsigned long long)hist.count,
	       (long long)fqn_hist_quantile(&hist, 0.5), (unsigned long long)sink ? "ok" : "?");
	fqn_fini();
	fq_clock_page_writer_close(w);
	return 0;
}
