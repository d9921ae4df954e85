/* profdrv: a profiler plugin driven as NCCL drives it (see profdrv.h). */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl-profiler/abi/profiler_v1.h"
#include "nccl-profiler/abi/profiler_v2.h"
#include "nccl-profiler/abi/profiler_v3.h"
#include "nccl-profiler/abi/profiler_v4.h"
#include "nccl-profiler/abi/profiler_v5.h"
#include "nccl-profiler/abi/profiler_v6.h"
#include "tools/collbench/profdrv.h"

typedef ncclProfilerEventDescr_v6_t descr_t;

struct profdrv {
	void *dl;
	int version;
	const void *table;
	const char *name;
	void *ctx;
	int inited, mask;
	enum profdrv_net net;
	pid_t pid;
	/* The application thread's current operation. */
	void *group, *group_api, *op_api, *task;
	struct {
		_Atomic uint64_t groups, colls, p2ps, proxy_ops, steps, net, states, api;
	} n;
};

#define T(v) ((const ncclProfiler_v##v##_t *)p->table)

int profdrv_open(const char *path, int version, struct profdrv **out, char *err, size_t errlen)
{
	struct profdrv *p;
	void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	const void *t = NULL;
	int v = version ? version : PROFDRV_MAX_VERSION;
	char sym[32];

	*out = NULL;
	if (!dl) {
		snprintf(err, errlen, "cannot load profiler %s: %s", path, dlerror());
		return -1;
	}
	for (; v >= PROFDRV_MIN_VERSION; v--) {
		snprintf(sym, sizeof(sym), "ncclProfiler_v%d", v);
		if ((t = dlsym(dl, sym)) || version)
			break;
	}
	if (!t) {
		snprintf(err, errlen, "no symbol ncclProfiler_v%d in %s",
			 version ? version : PROFDRV_MIN_VERSION, path);
		dlclose(dl);
		return -1;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		dlclose(dl);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	p->dl = dl;
	p->table = t;
	p->version = v;
	p->name = T(1)->name ? T(1)->name : "?"; /* name is first in every version */
	p->pid = getpid();
	*out = p;
	return 0;
}

void profdrv_close(struct profdrv *p)
{
	if (!p)
		return;
	if (p->inited && p->ctx)
		T(1)->finalize(p->ctx); /* same slot in every version */
	/* No dlclose: NCCL keeps a plugin loaded while a communicator may
	 * still call it, and a run ends with the process. */
	free(p);
}

void profdrv_set_net(struct profdrv *p, enum profdrv_net net)
{
	p->net = net;
}

int profdrv_version(const struct profdrv *p)
{
	return p->version;
}

const char *profdrv_name(const struct profdrv *p)
{
	return p->name;
}

int profdrv_mask(const struct profdrv *p)
{
	return p->mask;
}

void profdrv_counts(const struct profdrv *p, struct profdrv_counts *o)
{
	o->groups = p->n.groups;
	o->colls = p->n.colls;
	o->p2ps = p->n.p2ps;
	o->proxy_ops = p->n.proxy_ops;
	o->steps = p->n.steps;
	o->net = p->n.net;
	o->states = p->n.states;
	o->api = p->n.api;
}

ncclResult_t profdrv_init(struct profdrv *p, uint64_t hash, const char *name, int nnodes, int nranks,
			  int rank, ncclDebugLogger_t logfn)
{
	ncclResult_t rc;

	p->mask = 0;
	switch (p->version) {
	case 1:
	case 2:
	case 3:
		rc = T(1)->init(&p->ctx, &p->mask);
		break;
	case 4:
		rc = T(4)->init(&p->ctx, &p->mask, name, hash, nnodes, nranks, rank, logfn);
		break;
	default:
		rc = T(5)->init(&p->ctx, hash, &p->mask, name, nnodes, nranks, rank, logfn);
		break;
	}
	p->inited = rc == ncclSuccess;
	if (!p->inited)
		p->mask = 0; /* NCCL goes on without the profiler */
	return rc;
}

/* ---- lowering, as NCCL's profiler_vN.cc adapters -------------------------- */

static uint8_t code_of(const char *s, const char *const *names, int n, uint8_t dflt)
{
	for (int i = 0; s && i < n; i++)
		if (names[i] && strcmp(s, names[i]) == 0)
			return (uint8_t)i;
	return dflt;
}

static const char *const v1_funcs[] = {"Broadcast", "Reduce",   "AllGather", "ReduceScatter",
				       "AllReduce", "SendRecv", "Send",      "Recv"};
static const char *const v1_types[] = {"ncclInt8",    "ncclUint8",   "ncclInt32",   "ncclUint32",
				       "ncclInt64",   "ncclUint64",  "ncclFloat16", "ncclFloat32",
				       "ncclFloat64", "ncclBfloat16"};
static const char *const v1_algos[] = {"TREE",      "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS",
				       "NVLS_TREE", "PAT"};
static const char *const v1_protos[] = {"LL", "LL128", "SIMPLE"};
#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static ncclResult_t start_v1(struct profdrv *p, void **h, const descr_t *d)
{
	ncclProfilerEventDescr_v1_t e = {0};

	e.type = (uint8_t)d->type;
	e.parentObj = d->parentObj;
	e.rank = d->rank;
	switch (d->type) {
	case ncclProfileGroup:
	case ncclProfileProxyCtrl:
		break;
	case ncclProfileColl:
		e.parentObj = d->coll.parentGroup;
		e.coll.seqNumber = d->coll.seqNumber;
		e.coll.func = code_of(d->coll.func, v1_funcs, N(v1_funcs), 6);
		e.coll.sendBuff = d->coll.sendBuff;
		e.coll.recvBuff = d->coll.recvBuff;
		e.coll.count = d->coll.count;
		e.coll.root = d->coll.root;
		e.coll.datatype = code_of(d->coll.datatype, v1_types, N(v1_types), 8);
		e.coll.nMaxChannels = d->coll.nChannels;
		e.coll.nWarps = d->coll.nWarps;
		e.coll.algo = code_of(d->coll.algo, v1_algos, N(v1_algos), 6);
		e.coll.proto = code_of(d->coll.proto, v1_protos, N(v1_protos), 2);
		break;
	case ncclProfileP2p:
		e.parentObj = d->p2p.parentGroup;
		e.p2p.func = code_of(d->p2p.func, v1_funcs, N(v1_funcs), 6);
		e.p2p.buff = d->p2p.buff;
		e.p2p.count = d->p2p.count;
		e.p2p.datatype = code_of(d->p2p.datatype, v1_types, N(v1_types), 8);
		e.p2p.peer = d->p2p.peer;
		break;
	case ncclProfileProxyOp:
		memcpy(&e.proxyOp, &d->proxyOp, sizeof(e.proxyOp));
		break;
	case ncclProfileProxyStep:
		e.proxyStep.step = d->proxyStep.step;
		break;
	default:
		*h = NULL;
		return ncclSuccess;
	}
	return T(1)->startEvent(p->ctx, h, &e);
}

/* v2 and v3: names; v3 adds kernelCh and netPlugin. */
#define LOWER_V23(e, d)                                                                                      \
	do {                                                                                                 \
		(e).type = (uint8_t)(d)->type;                                                               \
		(e).parentObj = (d)->parentObj;                                                              \
		(e).rank = (d)->rank;                                                                        \
		if ((d)->type == ncclProfileColl) {                                                          \
			(e).parentObj = (d)->coll.parentGroup;                                               \
			(e).coll.seqNumber = (d)->coll.seqNumber;                                            \
			(e).coll.func = (d)->coll.func;                                                      \
			(e).coll.sendBuff = (d)->coll.sendBuff;                                              \
			(e).coll.recvBuff = (d)->coll.recvBuff;                                              \
			(e).coll.count = (d)->coll.count;                                                    \
			(e).coll.root = (d)->coll.root;                                                      \
			(e).coll.datatype = (d)->coll.datatype;                                              \
			(e).coll.nMaxChannels = (d)->coll.nChannels;                                         \
			(e).coll.nWarps = (d)->coll.nWarps;                                                  \
			(e).coll.algo = (d)->coll.algo;                                                      \
			(e).coll.proto = (d)->coll.proto;                                                    \
		} else if ((d)->type == ncclProfileP2p) {                                                    \
			(e).parentObj = (d)->p2p.parentGroup;                                                \
			(e).p2p.func = (d)->p2p.func;                                                        \
			(e).p2p.buff = (d)->p2p.buff;                                                        \
			(e).p2p.datatype = (d)->p2p.datatype;                                                \
			(e).p2p.count = (d)->p2p.count;                                                      \
			(e).p2p.peer = (d)->p2p.peer;                                                        \
		} else if ((d)->type == ncclProfileProxyOp) {                                                \
			memcpy(&(e).proxyOp, &(d)->proxyOp, sizeof((e).proxyOp));                            \
		} else if ((d)->type == ncclProfileProxyStep) {                                              \
			(e).proxyStep.step = (d)->proxyStep.step;                                            \
		}                                                                                            \
	} while (0)

static int is_v23_type(uint64_t t, int v)
{
	return t == ncclProfileGroup || t == ncclProfileColl || t == ncclProfileP2p ||
	       t == ncclProfileProxyOp || t == ncclProfileProxyStep || t == ncclProfileProxyCtrl ||
	       (v >= 3 && (t == ncclProfileKernelCh || t == ncclProfileNetPlugin));
}

static ncclResult_t start_v4(struct profdrv *p, void **h, const descr_t *d)
{
	ncclProfilerEventDescr_v4_t e = {0};

	if (d->type > ncclProfileNetPlugin) { /* API and CE events: v5+ */
		*h = NULL;
		return ncclSuccess;
	}
	e.type = (uint8_t)d->type;
	e.parentObj = d->parentObj;
	e.rank = d->rank;
	if (d->type == ncclProfileColl) {
		e.parentObj = d->coll.parentGroup;         /* v5 moved it */
		memcpy(&e.coll, &d->coll, sizeof(e.coll)); /* v5's coll is v4's plus parentGroup */
	} else if (d->type == ncclProfileP2p) {
		e.parentObj = d->p2p.parentGroup;
		memcpy(&e.p2p, &d->p2p, sizeof(e.p2p));
	} else if (d->type == ncclProfileProxyOp) {
		memcpy(&e.proxyOp, &d->proxyOp, sizeof(e.proxyOp));
	} else if (d->type == ncclProfileProxyStep) {
		e.proxyStep.step = d->proxyStep.step;
	} else if (d->type == ncclProfileKernelCh) {
		e.kernelCh.channelId = d->kernelCh.channelId;
		e.kernelCh.pTimer = d->kernelCh.pTimer;
	} else if (d->type == ncclProfileNetPlugin) {
		e.netPlugin.id = d->netPlugin.id;
		e.netPlugin.data = d->netPlugin.data;
	}
	return T(4)->startEvent(p->ctx, h, &e);
}

ncclResult_t profdrv_start_raw(struct profdrv *p, void **h, const void *descr)
{
	const descr_t *d = descr;

	*h = NULL;
	if (!p->inited)
		return ncclSuccess;
	switch (p->version) {
	case 1:
		return start_v1(p, h, d);
	case 2: {
		ncclProfilerEventDescr_v2_t e = {0};

		if (!is_v23_type(d->type, 2))
			return ncclSuccess;
		LOWER_V23(e, d);
		return T(2)->startEvent(p->ctx, h, &e);
	}
	case 3: {
		ncclProfilerEventDescr_v3_t e = {0};

		if (!is_v23_type(d->type, 3))
			return ncclSuccess;
		LOWER_V23(e, d);
		if (d->type == ncclProfileKernelCh)
			e.kernelCh.channelId = d->kernelCh.channelId;
		else if (d->type == ncclProfileNetPlugin) {
			e.netPlugin.id = d->netPlugin.id;
			e.netPlugin.data = d->netPlugin.data;
		}
		return T(3)->startEvent(p->ctx, h, &e);
	}
	case 4:
		return start_v4(p, h, d);
	case 5: {
		ncclProfilerEventDescr_v5_t e;

		if (d->type > ncclProfileKernelLaunch) /* CE events: v6 */
			return ncclSuccess;
		memcpy(&e, d, sizeof(e)); /* v6 is v5 with more union members */
		return T(5)->startEvent(p->ctx, h, &e);
	}
	default: {
		descr_t e = *d;

		return T(6)->startEvent(p->ctx, h, &e);
	}
	}
}

ncclResult_t profdrv_stop_raw(struct profdrv *p, void *h)
{
	if (!p->inited || !h)
		return ncclSuccess;
	return T(1)->stopEvent(h);
}

ncclResult_t profdrv_record_raw(struct profdrv *p, void *h, int state, size_t trans, int appended)
{
	if (!p->inited || !h)
		return ncclSuccess;
	atomic_fetch_add(&p->n.states, 1);
	if (p->version <= 3) {
		ncclProfilerEventStateArgs_v1_t a = {0};

		if (state >= ncclProfilerProxyCtrlIdle && state <= ncclProfilerProxyCtrlAppendEnd)
			a.proxyCtrl.appendedProxyOps = appended;
		else
			a.proxyOp.transSize = trans;
		return T(1)->recordEventState(h, (ncclProfilerEventState_t)state, &a);
	} else {
		ncclProfilerEventStateArgs_v4_t a = {0};

		if (state >= ncclProfilerProxyCtrlIdle && state <= ncclProfilerProxyCtrlAppendEnd)
			a.proxyCtrl.appendedProxyOps = appended;
		else
			a.proxyStep.transSize = trans;
		return T(4)->recordEventState(h, (ncclProfilerEventState_t)state, &a);
	}
}

/* ---- NCCL's sequence -------------------------------------------------------- */

static int want(const struct profdrv *p, int bits)
{
	return p->inited && (p->mask & bits);
}

#define TASK_BITS                                                                                            \
	(ncclProfileColl | ncclProfileP2p | ncclProfileProxyOp | ncclProfileProxyStep |                      \
	 ncclProfileKernelCh | ncclProfileNetPlugin)

void profdrv_op_begin(struct profdrv *p, const struct profdrv_op *op, void **task)
{
	descr_t d;

	p->group = p->group_api = p->op_api = p->task = NULL;
	if (p->version >= 5 &&
	    want(p, TASK_BITS | ncclProfileGroup | ncclProfileGroupApi | ncclProfileCollApi |
			ncclProfileP2pApi | ncclProfileKernelLaunch)) {
		d = (descr_t){.type = ncclProfileGroupApi};
		d.groupApi.groupDepth = 1;
		profdrv_start_raw(p, &p->group_api, &d);
		d = (descr_t){.type = op->is_p2p ? ncclProfileP2pApi : ncclProfileCollApi,
			      .parentObj = p->group_api};
		if (op->is_p2p) {
			d.p2pApi.func = op->func;
			d.p2pApi.count = op->count;
			d.p2pApi.datatype = op->datatype;
		} else {
			d.collApi.func = op->func;
			d.collApi.count = op->count;
			d.collApi.datatype = op->datatype;
			d.collApi.root = op->root;
		}
		profdrv_start_raw(p, &p->op_api, &d);
		atomic_fetch_add(&p->n.api, (p->group_api != NULL) + (p->op_api != NULL));
	}
	if (want(p, TASK_BITS | ncclProfileGroup)) {
		d = (descr_t){.type = ncclProfileGroup};
		profdrv_start_raw(p, &p->group, &d);
		atomic_fetch_add(&p->n.groups, p->group != NULL);
	}
	if (want(p, TASK_BITS & ~(op->is_p2p ? ncclProfileColl : ncclProfileP2p))) {
		d = (descr_t){.type = op->is_p2p ? ncclProfileP2p : ncclProfileColl, .parentObj = p->op_api};
		if (op->is_p2p) {
			d.p2p.func = op->func;
			d.p2p.datatype = op->datatype;
			d.p2p.count = op->count;
			d.p2p.peer = op->peer;
			d.p2p.nChannels = (uint8_t)op->nchannels;
			d.p2p.parentGroup = p->group;
		} else {
			d.coll.seqNumber = op->seq;
			d.coll.func = op->func;
			d.coll.count = op->count;
			d.coll.root = op->root;
			d.coll.datatype = op->datatype;
			d.coll.nChannels = (uint8_t)op->nchannels;
			d.coll.nWarps = 16;
			d.coll.algo = op->algo;
			d.coll.proto = op->proto;
			d.coll.parentGroup = p->group;
		}
		d.rank = 0;
		profdrv_start_raw(p, &p->task, &d);
		atomic_fetch_add(op->is_p2p ? &p->n.p2ps : &p->n.colls, p->task != NULL);
	}
	*task = p->task;
}

void profdrv_op_enqueued(struct profdrv *p)
{
	/* hostStreamPlanTask: tasks, then the group; then the API events. */
	profdrv_stop_raw(p, p->task);
	profdrv_stop_raw(p, p->group);
	if (p->group_api) {
		profdrv_record_raw(p, p->group_api, ncclProfilerGroupEndApiStart, 0, 0);
		profdrv_stop_raw(p, p->op_api);
		profdrv_stop_raw(p, p->group_api);
	}
	p->group = p->group_api = p->op_api = p->task = NULL;
}

void *profdrv_proxy_op_start(struct profdrv *p, void *task, int channel, int peer, int nsteps, int chunk,
			     int is_send)
{
	descr_t d = {.type = ncclProfileProxyOp, .parentObj = task};
	void *h = NULL;

	if (!want(p, ncclProfileProxyOp | ncclProfileProxyStep | ncclProfileNetPlugin))
		return NULL;
	d.proxyOp.pid = p->pid;
	d.proxyOp.channelId = (uint8_t)channel;
	d.proxyOp.peer = peer;
	d.proxyOp.nSteps = nsteps;
	d.proxyOp.chunkSize = chunk;
	d.proxyOp.isSend = is_send;
	profdrv_start_raw(p, &h, &d);
	atomic_fetch_add(&p->n.proxy_ops, h != NULL);
	if (h && p->version >= 4)
		profdrv_record_raw(p, h, ncclProfilerProxyOpInProgress_v4, 0, 0);
	return h;
}

void *profdrv_step_post(struct profdrv *p, void *op, int step, int is_send, size_t len, size_t posted,
			int conn, void **net)
{
	descr_t d = {.type = ncclProfileProxyStep, .parentObj = op};
	ncclProfilerNetSockDescr_v1_t sock = {.type = ncclProfileSocket};
	ncclProfilerNetIbDescr_v1_t ib = {.type = ncclProfileQp};
	void *h = NULL;

	*net = NULL;
	if (want(p, ncclProfileProxyStep | ncclProfileNetPlugin)) {
		d.proxyStep.step = step;
		profdrv_start_raw(p, &h, &d);
		atomic_fetch_add(&p->n.steps, h != NULL);
	}
	if (p->version <= 3 && op) /* 2.23 .. 2.26: the op's running byte count */
		profdrv_record_raw(p, op,
				   is_send ? ncclProfilerProxyOpSendPosted : ncclProfilerProxyOpRecvPosted,
				   posted, 0);
	if (h) {
		profdrv_record_raw(
		    p, h, is_send ? ncclProfilerProxyStepSendGPUWait : ncclProfilerProxyStepRecvWait, len, 0);
		if (is_send)
			profdrv_record_raw(p, h, ncclProfilerProxyStepSendWait, len, 0);
	}
	/* The transport's event: the socket transport's from the thread
	 * moving the bytes, the IB transport's when it posts the request. */
	if (p->version >= 3 && want(p, ncclProfileNetPlugin) && h) {
		d = (descr_t){.type = ncclProfileNetPlugin, .parentObj = h};
		if (p->net == PROFDRV_NET_IB) {
			ib.qp.device = 0;
			ib.qp.wr_id = (uint64_t)step;
			ib.qp.qpNum = 0x100 + conn;
			ib.qp.opcode = is_send ? 1 : 0; /* IBV_WR_RDMA_WRITE_WITH_IMM; a receive sets none */
			ib.qp.length = is_send ? len : 0;
			d.netPlugin.id = (int64_t)(NCCL_PROFILER_NET_TYPE_IB | 1);
			d.netPlugin.data = &ib;
		} else {
			sock.sock.fd = conn;
			sock.sock.op = is_send ? 0 : 1;
			sock.sock.length = len;
			d.netPlugin.id = (int64_t)(NCCL_PROFILER_NET_TYPE_SOCK | 1);
			d.netPlugin.data = &sock; /* valid during the call only, as in NCCL */
		}
		profdrv_start_raw(p, net, &d);
		atomic_fetch_add(&p->n.net, *net != NULL);
	}
	return h;
}

void profdrv_step_done(struct profdrv *p, void *op, void *step, void *net, int is_send, size_t len,
		       size_t done)
{
	profdrv_stop_raw(p, net);
	if (step && !is_send) {
		profdrv_record_raw(p, step, ncclProfilerProxyStepRecvFlushWait, len, 0);
		profdrv_record_raw(p, step, ncclProfilerProxyStepRecvGPUWait, len, 0);
	}
	profdrv_stop_raw(p, step);
	if (p->version <= 3 && op)
		profdrv_record_raw(p, op, is_send ? ncclProfilerProxyOpSendDone : ncclProfilerProxyOpRecvDone,
				   done, 0);
}

void profdrv_proxy_op_stop(struct profdrv *p, void *op)
{
	profdrv_stop_raw(p, op);
}
