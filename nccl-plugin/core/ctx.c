#include <time.h>

#include "common/clock.h"
#include "common/clock_page.h"
#include "nccl-plugin/core/ctx.h"
#include "nccl-plugin/hello.h"
#include "nccl-plugin/lanes/lane_drv.h"
#include "nccl-plugin/telemetry/event.h"

int64_t fqn_clock_at(const struct fqn_ctx *ctx, int64_t raw, int *sync)
{
	struct fq_clock_model m;
	int64_t now = fq_clock_ns(CLOCK_MONOTONIC_RAW);

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
	return raw + (fq_clock_ns(CLOCK_REALTIME) - now);
}

int64_t fqn_clock_now(const struct fqn_ctx *ctx, int *sync)
{
	return fqn_clock_at(ctx, 0, sync);
}

const char *fqn_ctx_nic_name(const struct fqn_ctx *ctx, int nic)
{
	return ctx && nic >= 0 && nic < ctx->nnics ? ctx->nics[nic].name : "?";
}

size_t fqn_lane_hello_size(const struct fqn_ctx *ctx)
{
	return FQN_HELLO_SIZE + ctx->drv->hello_extra;
}

int fqn_lane_dial(const struct fqn_ctx *ctx, int nic, const struct sockaddr *local,
		  const struct sockaddr *remote, int keepalive_ms, struct fqn_lane **out)
{
	return ctx->drv->dial(&ctx->cfg, ctx->nics, ctx->nnics, nic, local, remote, keepalive_ms, out);
}

int fqn_lane_accepted(const struct fqn_ctx *ctx, int nic, int fd, size_t chunk_size, int keepalive_ms,
		      const uint8_t *after_hello, struct fqn_lane **out)
{
	return ctx->drv->accept(&ctx->cfg, ctx->nics, ctx->nnics, nic, fd, chunk_size, keepalive_ms,
				after_hello, out);
}

void fqn_ctx_event(const struct fqn_ctx *ctx, const struct fqn_event *e)
{
	int sync;
	int64_t start;

	if (!ctx || !ctx->telemetry)
		return;
	start = fqn_clock_now(ctx, &sync) - (fq_clock_ns(CLOCK_MONOTONIC) - e->at_ns);
	fqn_event_push(ctx->telemetry, ctx->rank1, start, sync, e);
}
