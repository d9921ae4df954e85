/*
 * plugin: the exported ncclProfiler_v1 .. _v6 tables, each a thin adapter
 * over prof.h. Translation happens here and only here: each version's
 * descriptor to a struct fqp_event, its state arguments to struct
 * fqp_state_args, negative errnos to ncclSuccess (a profiler must never
 * fail or stop NCCL: a call it cannot take is counted and ignored).
 * Nothing else leaves the .so (libnccl-profiler-fabriciq.sym).
 *
 * NCCL 2.23 .. 2.30 dlsym ncclProfiler_v6, then _v5 .. _v1, and take the
 * first found (src/plugin/profiler.cc); an older NCCL never sees the
 * newer tables.
 */
#include <string.h>
#include <unistd.h>

#include "nccl-profiler/abi/profiler_v1.h"
#include "nccl-profiler/abi/profiler_v2.h"
#include "nccl-profiler/abi/profiler_v3.h"
#include "nccl-profiler/abi/profiler_v4.h"
#include "nccl-profiler/abi/profiler_v5.h"
#include "nccl-profiler/abi/profiler_v6.h"
#include "nccl-profiler/names.h"
#include "nccl-profiler/prof.h"
#include "nccl-profiler/tele.h"

#define FQP_PLUGIN_NAME "fabriciq"
#define EXPORT          __attribute__((visibility("default")))

/* The process that loaded us: a proxyOp from another one (PXN) names a
 * parent in that process's memory. Read once, not a getpid() per event. */
static pid_t my_pid;

/* NCCL's type bits to ours; -1 for a bit this build does not know. */
static int type_of(uint64_t t)
{
	switch (t) {
	case ncclProfileGroup:
		return FQP_EV_GROUP;
	case ncclProfileColl:
		return FQP_EV_COLL;
	case ncclProfileP2p:
		return FQP_EV_P2P;
	case ncclProfileProxyOp:
		return FQP_EV_PROXY_OP;
	case ncclProfileProxyStep:
		return FQP_EV_PROXY_STEP;
	case ncclProfileProxyCtrl:
		return FQP_EV_PROXY_CTRL;
	case ncclProfileKernelCh:
		return FQP_EV_KERNEL_CH;
	case ncclProfileNetPlugin:
		return FQP_EV_NET;
	case ncclProfileGroupApi:
		return FQP_EV_GROUP_API;
	case ncclProfileCollApi:
		return FQP_EV_COLL_API;
	case ncclProfileP2pApi:
		return FQP_EV_P2P_API;
	case ncclProfileKernelLaunch:
		return FQP_EV_KERNEL_LAUNCH;
	case ncclProfileCeColl:
		return FQP_EV_CE_COLL;
	case ncclProfileCeSync:
		return FQP_EV_CE_SYNC;
	case ncclProfileCeBatch:
		return FQP_EV_CE_BATCH;
	default:
		return -1;
	}
}

/* A netPlugin event's id and data (v3+). */
static void net_of(struct fqp_event *e, int64_t id, const void *data)
{
	uint32_t type = (uint32_t)id & NCCL_PROFILER_NET_TYPE_MASK,
		 ver = (uint32_t)id & NCCL_PROFILER_NET_VER_MASK;

	e->net = FQP_NET_UNKNOWN;
	if (!data || ver != 1)
		return;
	if (type == NCCL_PROFILER_NET_TYPE_IB) {
		const ncclProfilerNetIbDescr_v1_t *ib = data;

		if (ib->type != ncclProfileQp)
			return;
		e->net = FQP_NET_IB_QP;
		e->dev = ib->qp.device;
		e->qpn = ib->qp.qpNum;
		e->opcode = ib->qp.opcode;
		e->length = ib->qp.length;
	} else if (type == NCCL_PROFILER_NET_TYPE_SOCK) {
		const ncclProfilerNetSockDescr_v1_t *s = data;

		if (s->type != ncclProfileSocket)
			return;
		e->net = FQP_NET_SOCKET;
		e->fd = s->sock.fd;
		e->opcode = s->sock.op;
		e->length = s->sock.length;
	}
}

/* The fields v1 .. v6 share under the same names, from any descriptor `d`. */
#define PROXY_OF(e, d)                                                                                       \
	do {                                                                                                 \
		(e)->other_process = my_pid && (d)->proxyOp.pid != my_pid;                                   \
		(e)->channel = (d)->proxyOp.channelId;                                                       \
		(e)->peer = (d)->proxyOp.peer;                                                               \
		(e)->nsteps = (d)->proxyOp.nSteps;                                                           \
		(e)->chunk = (d)->proxyOp.chunkSize;                                                         \
		(e)->is_send = (d)->proxyOp.isSend;                                                          \
	} while (0)

/* v2 .. v6's string-named coll and p2p fields. */
#define COLL_STR_OF(e, c)                                                                                    \
	do {                                                                                                 \
		(e)->seq = (c).seqNumber;                                                                    \
		(e)->func = fqp_func_from_str((c).func);                                                     \
		(e)->count = (c).count;                                                                      \
		(e)->root = (c).root;                                                                        \
		(e)->type_size = fqp_type_size_from_str((c).datatype);                                       \
		(e)->algo = fqp_algo_from_str((c).algo);                                                     \
		(e)->proto = fqp_proto_from_str((c).proto);                                                  \
	} while (0)
#define P2P_STR_OF(e, p)                                                                                     \
	do {                                                                                                 \
		(e)->func = fqp_func_from_str((p).func);                                                     \
		(e)->count = (p).count;                                                                      \
		(e)->peer = (p).peer;                                                                        \
		(e)->type_size = fqp_type_size_from_str((p).datatype);                                       \
	} while (0)

/* The decode every version shares: type, parent, rank, proxyOp and
 * proxyStep (same layout in v1 .. v6). Returns 0, or -1 for an unknown
 * type (counted by prof through FQP_EV_NTYPES). */
#define COMMON_OF(e, d)                                                                                      \
	do {                                                                                                 \
		int t_ = type_of((d)->type);                                                                 \
		(e)->type = t_ < 0 ? FQP_EV_NTYPES : (enum fqp_type)t_;                                      \
		(e)->parent = (d)->parentObj;                                                                \
		(e)->rank = (d)->rank;                                                                       \
		(e)->peer = -1;                                                                              \
		if (t_ == FQP_EV_PROXY_OP)                                                                   \
			PROXY_OF(e, d);                                                                      \
		else if (t_ == FQP_EV_PROXY_STEP)                                                            \
			(e)->step = (d)->proxyStep.step;                                                     \
	} while (0)

static ncclResult_t start(void *ctx, void **h, const struct fqp_event *e)
{
	(void)fqp_start(ctx, h, e);
	return ncclSuccess;
}

/* ---- v1 ------------------------------------------------------------------ */

static ncclResult_t v1_start(void *ctx, void **h, ncclProfilerEventDescr_v1_t *d)
{
	struct fqp_event e = {0};

	if (!d)
		return start(ctx, h, NULL);
	COMMON_OF(&e, d);
	if (e.type == FQP_EV_COLL) {
		e.seq = d->coll.seqNumber;
		e.comm_hash = d->coll.commHash;
		e.func = fqp_func_from_v1(d->coll.func);
		e.count = d->coll.count;
		e.root = d->coll.root;
		e.type_size = fqp_type_size_from_v1(d->coll.datatype);
		e.nchannels = d->coll.nMaxChannels;
		e.algo = fqp_algo_from_v1(d->coll.algo);
		e.proto = fqp_proto_from_v1(d->coll.proto);
	} else if (e.type == FQP_EV_P2P) {
		e.comm_hash = d->p2p.commHash;
		e.func = fqp_func_from_v1(d->p2p.func);
		e.count = d->p2p.count;
		e.peer = d->p2p.peer;
		e.type_size = fqp_type_size_from_v1(d->p2p.datatype);
	}
	return start(ctx, h, &e);
}

static ncclResult_t v1_record(void *h, ncclProfilerEventState_t s, ncclProfilerEventStateArgs_v1_t *a)
{
	struct fqp_state_args x = {0};

	if (a) {
		if (s >= ncclProfilerProxyOpSendPosted && s <= ncclProfilerProxyOpRecvDone)
			x.trans_size = a->proxyOp.transSize;
		else if (s >= ncclProfilerProxyCtrlIdle && s <= ncclProfilerProxyCtrlAppendEnd)
			x.appended = a->proxyCtrl.appendedProxyOps;
	}
	(void)fqp_record(h, (int)s, a ? &x : NULL);
	return ncclSuccess;
}

static ncclResult_t stop(void *h)
{
	(void)fqp_stop(h);
	return ncclSuccess;
}

static ncclResult_t init_v1(void **ctx, int *mask)
{
	struct fqp_ctx *c = NULL;

	if (!ctx)
		return ncclSuccess;
	my_pid = getpid();
	/* v1 .. v3 tell nothing of the communicator. */
	if (fqp_init(&c, NULL, NULL) == 0 && mask)
		*mask = fqp_default_mask();
	if (c)
		(void)fqp_tele_register(c); /* -ENOENT: no agent socket named, no telemetry */
	else if (mask)
		*mask = 0; /* no context: NCCL sends no events */
	*ctx = c;
	return ncclSuccess;
}

static ncclResult_t finalize(void *ctx)
{
	(void)fqp_tele_finalize(ctx); /* finalizes it, after its last report */
	return ncclSuccess;
}

EXPORT ncclProfiler_v1_t ncclProfiler_v1 = {
    .name = FQP_PLUGIN_NAME,
    .init = init_v1,
    .startEvent = v1_start,
    .stopEvent = stop,
    .recordEventState = v1_record,
    .finalize = finalize,
};

/* ---- v2, v3 -------------------------------------------------------------- */

static ncclResult_t v2_start(void *ctx, void **h, ncclProfilerEventDescr_v2_t *d)
{
	struct fqp_event e = {0};

	if (!d)
		return start(ctx, h, NULL);
	COMMON_OF(&e, d);
	if (e.type == FQP_EV_COLL) {
		COLL_STR_OF(&e, d->coll);
		e.comm_hash = d->coll.commHash;
		e.nchannels = d->coll.nMaxChannels;
	} else if (e.type == FQP_EV_P2P) {
		P2P_STR_OF(&e, d->p2p);
		e.comm_hash = d->p2p.commHash;
	}
	return start(ctx, h, &e);
}

static ncclResult_t v3_start(void *ctx, void **h, ncclProfilerEventDescr_v3_t *d)
{
	struct fqp_event e = {0};

	if (!d)
		return start(ctx, h, NULL);
	COMMON_OF(&e, d);
	if (e.type == FQP_EV_COLL) {
		COLL_STR_OF(&e, d->coll);
		e.comm_hash = d->coll.commHash;
		e.nchannels = d->coll.nMaxChannels;
	} else if (e.type == FQP_EV_P2P) {
		P2P_STR_OF(&e, d->p2p);
		e.comm_hash = d->p2p.commHash;
	} else if (e.type == FQP_EV_KERNEL_CH) {
		e.channel = d->kernelCh.channelId;
	} else if (e.type == FQP_EV_NET) {
		net_of(&e, d->netPlugin.id, d->netPlugin.data);
	}
	return start(ctx, h, &e);
}

EXPORT ncclProfiler_v2_t ncclProfiler_v2 = {
    .name = FQP_PLUGIN_NAME,
    .init = init_v1,
    .startEvent = v2_start,
    .stopEvent = stop,
    .recordEventState = v1_record,
    .finalize = finalize,
};

EXPORT ncclProfiler_v3_t ncclProfiler_v3 = {
    .name = FQP_PLUGIN_NAME,
    .init = init_v1,
    .startEvent = v3_start,
    .stopEvent = stop,
    .recordEventState = v1_record,
    .finalize = finalize,
};

/* ---- v4 .. v6 ------------------------------------------------------------ */

static ncclResult_t init_comm(void **ctx, uint64_t hash, int *mask, const char *name, int nnodes, int nranks,
			      int rank, ncclDebugLogger_t logfn)
{
	struct fqp_comm_info ci = {
	    .comm_hash = hash, .comm_name = name, .nnodes = nnodes, .nranks = nranks, .rank = rank};
	struct fqp_config cfg = {.logfn = logfn};
	struct fqp_ctx *c = NULL;

	if (!ctx)
		return ncclSuccess;
	my_pid = getpid();
	if (fqp_init(&c, &ci, &cfg) == 0 && mask)
		*mask = fqp_default_mask();
	if (c)
		(void)fqp_tele_register(c); /* -ENOENT: no agent socket named, no telemetry */
	else if (mask)
		*mask = 0;
	*ctx = c;
	return ncclSuccess;
}

static ncclResult_t v4_init(void **ctx, int *mask, const char *name, uint64_t hash, int nnodes, int nranks,
			    int rank, ncclDebugLogger_t logfn)
{
	return init_comm(ctx, hash, mask, name, nnodes, nranks, rank, logfn);
}

static ncclResult_t v5_init(void **ctx, uint64_t id, int *mask, const char *name, int nnodes, int nranks,
			    int rank, ncclDebugLogger_t logfn)
{
	return init_comm(ctx, id, mask, name, nnodes, nranks, rank, logfn);
}

static ncclResult_t v4_start(void *ctx, void **h, ncclProfilerEventDescr_v4_t *d)
{
	struct fqp_event e = {0};

	if (!d)
		return start(ctx, h, NULL);
	COMMON_OF(&e, d);
	if (e.type == FQP_EV_COLL) {
		COLL_STR_OF(&e, d->coll);
		e.nchannels = d->coll.nChannels;
	} else if (e.type == FQP_EV_P2P) {
		P2P_STR_OF(&e, d->p2p);
		e.nchannels = d->p2p.nChannels;
	} else if (e.type == FQP_EV_KERNEL_CH) {
		e.channel = d->kernelCh.channelId;
	} else if (e.type == FQP_EV_NET) {
		net_of(&e, d->netPlugin.id, d->netPlugin.data);
	}
	return start(ctx, h, &e);
}

/* v5 and v6 share the layout up to v6's CE members. A coll's or p2p's
 * parentObj is its API event since v5; the proxyOp's parent is the task
 * itself, so nothing changes for us. */
#define V5_BODY(e, d)                                                                                        \
	do {                                                                                                 \
		if ((e)->type == FQP_EV_COLL) {                                                              \
			COLL_STR_OF(e, (d)->coll);                                                           \
			(e)->nchannels = (d)->coll.nChannels;                                                \
		} else if ((e)->type == FQP_EV_P2P) {                                                        \
			P2P_STR_OF(e, (d)->p2p);                                                             \
			(e)->nchannels = (d)->p2p.nChannels;                                                 \
		} else if ((e)->type == FQP_EV_KERNEL_CH) {                                                  \
			(e)->channel = (d)->kernelCh.channelId;                                              \
		} else if ((e)->type == FQP_EV_NET) {                                                        \
			net_of(e, (d)->netPlugin.id, (d)->netPlugin.data);                                   \
		} else if ((e)->type == FQP_EV_COLL_API) {                                                   \
			(e)->func = fqp_func_from_str((d)->collApi.func);                                    \
			(e)->count = (d)->collApi.count;                                                     \
			(e)->type_size = fqp_type_size_from_str((d)->collApi.datatype);                      \
		} else if ((e)->type == FQP_EV_P2P_API) {                                                    \
			(e)->func = fqp_func_from_str((d)->p2pApi.func);                                     \
			(e)->count = (d)->p2pApi.count;                                                      \
			(e)->type_size = fqp_type_size_from_str((d)->p2pApi.datatype);                       \
		}                                                                                            \
	} while (0)

static ncclResult_t v5_start(void *ctx, void **h, ncclProfilerEventDescr_v5_t *d)
{
	struct fqp_event e = {0};

	if (!d)
		return start(ctx, h, NULL);
	COMMON_OF(&e, d);
	V5_BODY(&e, d);
	return start(ctx, h, &e);
}

static ncclResult_t v6_start(void *ctx, void **h, ncclProfilerEventDescr_v6_t *d)
{
	struct fqp_event e = {0};

	if (!d)
		return start(ctx, h, NULL);
	COMMON_OF(&e, d);
	V5_BODY(&e, d);
	if (e.type == FQP_EV_CE_COLL) {
		e.seq = d->ceColl.seqNumber;
		e.func = fqp_func_from_str(d->ceColl.func);
		e.count = d->ceColl.count;
		e.root = d->ceColl.root;
		e.type_size = fqp_type_size_from_str(d->ceColl.datatype);
	} else if (e.type == FQP_EV_CE_BATCH) {
		e.total_bytes = d->ceCollBatch.totalBytes;
	}
	return start(ctx, h, &e);
}

static ncclResult_t v4_record(void *h, ncclProfilerEventState_t s, ncclProfilerEventStateArgs_v4_t *a)
{
	struct fqp_state_args x = {0};

	if (a) {
		switch (s) {
		case ncclProfilerProxyStepSendGPUWait:
		case ncclProfilerProxyStepSendPeerWait_v4:
		case ncclProfilerProxyStepSendWait:
		case ncclProfilerProxyStepRecvWait:
		case ncclProfilerProxyStepRecvFlushWait:
		case ncclProfilerProxyStepRecvGPUWait:
			x.trans_size = a->proxyStep.transSize;
			break;
		case ncclProfilerProxyCtrlIdle:
		case ncclProfilerProxyCtrlActive:
		case ncclProfilerProxyCtrlSleep:
		case ncclProfilerProxyCtrlWakeup:
		case ncclProfilerProxyCtrlAppend:
		case ncclProfilerProxyCtrlAppendEnd:
			x.appended = a->proxyCtrl.appendedProxyOps;
			break;
		default: /* netPlugin and kernelCh updates: counted only */
			break;
		}
	}
	(void)fqp_record(h, (int)s, a ? &x : NULL);
	return ncclSuccess;
}

EXPORT ncclProfiler_v4_t ncclProfiler_v4 = {
    .name = FQP_PLUGIN_NAME,
    .init = v4_init,
    .startEvent = v4_start,
    .stopEvent = stop,
    .recordEventState = v4_record,
    .finalize = finalize,
};

EXPORT ncclProfiler_v5_t ncclProfiler_v5 = {
    .name = FQP_PLUGIN_NAME,
    .init = v5_init,
    .startEvent = v5_start,
    .stopEvent = stop,
    .recordEventState = v4_record,
    .finalize = finalize,
};

EXPORT ncclProfiler_v6_t ncclProfiler_v6 = {
    .name = FQP_PLUGIN_NAME,
    .init = v5_init,
    .startEvent = v6_start,
    .stopEvent = stop,
    .recordEventState = v4_record,
    .finalize = finalize,
};
