#include <time.h>

#include "common/clock_page.h"
#include "nccl-plugin/ctx.h"

static int64_t ns_of(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t fqn_clock_at(const struct fqn_ctx *ctx, int64_t raw, int *sync)
{
	struct fq_clock_model m;
	int64_t now = ns_of(CLOCK_MONOTONIC_RAW);

	if (raw == 0)
		raw = now;
	if (ctx && ctx->clock && fq_clock_page_read(ctx->clock, raw, &m) == 0) {
		*sync = 1;
		return fq_clock_model_global(&m, raw);
	}
	/* No valid page (not yet published, or stale): the local real time,
	 * so that a report's times stay times even when its delays cannot
	 * be measured. */
	*sync = 0;
	return raw + (ns_of(CLOCK_REALTIME) - now);
}

int64_t fqn_clock_now(const struct fqn_ctx *ctx, int *sync)
{
	return fqn_clock_at(ctx, 0, sync);
}

int64_t fqn_mono_ns(void)
{
	return ns_of(CLOCK_MONOTONIC);
}

const char *fqn_ctx_nic_name(const struct fqn_ctx *ctx, int nic)
{
	return ctx && nic >= 0 && nic < ctx->nnics ? ctx->nics[nic].name : "?";
}
