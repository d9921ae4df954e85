/*
 * prof-null: a profiler plugin whose entry points return at once, the
 * baseline of bench-profiler.sh: the same calls through the same tables
 * (and, under collbench, the same driver and proxy thread), no work.
 */
#include "nccl-profiler/abi/profiler_v6.h"

static ncclResult_t n_init(void **c, uint64_t id, int *mask, const char *name, int nn, int nr, int r,
			   ncclDebugLogger_t l)
{
	(void)id, (void)name, (void)nn, (void)nr, (void)r, (void)l;
	*c = (void *)1;
	*mask = ncclProfileGroup | ncclProfileColl | ncclProfileP2p | ncclProfileProxyOp |
		ncclProfileProxyStep | ncclProfileNetPlugin; /* fabriciq's mask: the same events are sent */
	return ncclSuccess;
}

static ncclResult_t n_start(void *c, void **h, ncclProfilerEventDescr_v6_t *d)
{
	(void)c, (void)d;
	*h = (void *)1;
	return ncclSuccess;
}

static ncclResult_t n_stop(void *h)
{
	(void)h;
	return ncclSuccess;
}

static ncclResult_t n_record(void *h, ncclProfilerEventState_t s, ncclProfilerEventStateArgs_v6_t *a)
{
	(void)h, (void)s, (void)a;
	return ncclSuccess;
}

static ncclResult_t n_fin(void *c)
{
	(void)c;
	return ncclSuccess;
}

__attribute__((visibility("default")))
ncclProfiler_v6_t ncclProfiler_v6 = {"null", n_init, n_start, n_stop, n_record, n_fin};
