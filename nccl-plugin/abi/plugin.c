/*
 * plugin: the exported ncclNetPlugin_v8 .. _v12 tables, each a thin
 * adapter over net.h. Translation happens here and only here: negative
 * errnos to ncclResult_t, int sizes to size_t, v11's per-communicator
 * context. Nothing else leaves the .so (libnccl-net-fabriciq.sym).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "nccl-plugin/core/comm.h"
#include "nccl-plugin/core/net.h"
#include "nccl-plugin/plog.h"

#define FQN_PLUGIN_NAME "fabriciq"

static ncclResult_t to_nccl(int rc)
{
	if (rc >= 0)
		return ncclSuccess;
	switch (fqn_errno_to_class(rc)) {
	case FQN_ERR_REMOTE:
		return ncclRemoteError;
	case FQN_ERR_USAGE:
		return ncclInvalidUsage;
	default:
		return ncclSystemError;
	}
}

static ncclResult_t a_init(ncclDebugLogger_t logger)
{
	return to_nccl(fqn_init(logger));
}

static ncclResult_t a_devices(int *ndev)
{
	return to_nccl(fqn_devices(ndev));
}

/* The fields every version shares, filled through a macro since each
 * version's struct is its own type. */
#define FILL_PROPS_V8(out, p)                                                                                \
	do {                                                                                                 \
		(out)->name = (char *)(p).name;                                                              \
		(out)->pciPath = (char *)(p).pci_path;                                                       \
		(out)->guid = (p).guid;                                                                      \
		(out)->ptrSupport = NCCL_PTR_HOST;                                                           \
		(out)->regIsGlobal = 0;                                                                      \
		(out)->speed = (p).speed_mbps;                                                               \
		(out)->port = (p).port;                                                                      \
		(out)->latency = 0;                                                                          \
		(out)->maxComms = (p).max_comms;                                                             \
		(out)->maxRecvs = (p).max_recvs;                                                             \
		(out)->netDeviceType = 0; /* host */                                                         \
		(out)->netDeviceVersion = 0;                                                                 \
	} while (0)

#define FILL_PROPS_V9(out, p, dev)                                                                           \
	do {                                                                                                 \
		FILL_PROPS_V8(out, p);                                                                       \
		(out)->forceFlush = 0;                                                                       \
		(out)->vProps.ndevs = 1;                                                                     \
		(out)->vProps.devs[0] = (dev);                                                               \
		(out)->maxP2pBytes = (size_t)1 << 40;                                                        \
		(out)->maxCollBytes = (size_t)1 << 40;                                                       \
	} while (0)

static ncclResult_t a_props_v8(int dev, ncclNetProperties_v8_t *out)
{
	struct fqn_props p;
	int rc = fqn_get_properties(dev, &p);

	if (rc == 0) {
		memset(out, 0, sizeof(*out));
		FILL_PROPS_V8(out, p);
	}
	return to_nccl(rc);
}

static ncclResult_t a_props_v9(int dev, ncclNetProperties_v9_t *out)
{
	struct fqn_props p;
	int rc = fqn_get_properties(dev, &p);

	if (rc == 0) {
		memset(out, 0, sizeof(*out));
		FILL_PROPS_V9(out, p, dev);
	}
	return to_nccl(rc);
}

static ncclResult_t a_props_v11(int dev, ncclNetProperties_v11_t *out)
{
	struct fqn_props p;
	int rc = fqn_get_properties(dev, &p);

	if (rc == 0) {
		memset(out, 0, sizeof(*out));
		FILL_PROPS_V9(out, p, dev);
		out->maxMultiRequestSize = 1;
	}
	return to_nccl(rc);
}

static ncclResult_t a_props_v12(int dev, ncclNetProperties_v12_t *out)
{
	struct fqn_props p;
	int rc = fqn_get_properties(dev, &p);

	if (rc == 0) {
		memset(out, 0, sizeof(*out));
		FILL_PROPS_V9(out, p, dev);
		out->maxMultiRequestSize = 1;
		out->railId = (int16_t)p.rail;
		out->planeId = 0;
	}
	return to_nccl(rc);
}

static ncclResult_t a_listen(int dev, void *handle, void **listenComm)
{
	return to_nccl(fqn_listen(dev, handle, (struct fqn_listen **)listenComm));
}

static ncclResult_t a_connect(int dev, void *handle, void **sendComm, void **sendDevComm)
{
	if (sendDevComm)
		*sendDevComm = NULL;
	return to_nccl(fqn_connect(dev, handle, (struct fqn_send **)sendComm));
}

static ncclResult_t a_accept(void *listenComm, void **recvComm, void **recvDevComm)
{
	if (recvDevComm)
		*recvDevComm = NULL;
	return to_nccl(fqn_accept(listenComm, (struct fqn_recv **)recvComm));
}

/* Host memory needs no registration: the handle only proves the call. */
static int fqn_mr_token;

/* IB lanes: host memory is registered through the device's MR cache (the
 * handle is the cache entry), ready for a zero-copy path; lanes today copy
 * through their own registered rings. NCCL_PTR_CUDA stays unreported even
 * with GPUDirect RDMA: that copy is a CPU memcpy. */
static ncclResult_t a_regMr(void *comm, void *data, size_t size, int type, void **mhandle)
{
	if (type == NCCL_PTR_HOST && comm) {
		int dev = fqn_comm_device(comm), rc = fqn_reg_mr(data, size, dev, mhandle);

		if (rc < 0)
			FQN_WARN("regMr: registering %zu bytes at %p on device %d: %s", size, data, dev,
				 strerror(-rc));
		if (rc != 0)
			return rc < 0 ? ncclSystemError : ncclSuccess;
	}
	if (type != NCCL_PTR_HOST) {
		FQN_WARN(
		    "regMr: memory type %d not supported (host memory only: ptrSupport is NCCL_PTR_HOST)",
		    type);
		return ncclInvalidUsage;
	}
	*mhandle = &fqn_mr_token;
	return ncclSuccess;
}

static ncclResult_t a_regMrDmaBuf(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
				  void **mhandle)
{
	(void)comm;
	(void)data;
	(void)size;
	(void)offset;
	(void)fd;
	(void)mhandle;
	FQN_WARN("regMrDmaBuf: DMA-BUF memory (type %d) not supported", type);
	return ncclInvalidUsage;
}

static ncclResult_t a_deregMr(void *comm, void *mhandle)
{
	(void)comm;
	if (mhandle == &fqn_mr_token)
		return ncclSuccess;
	return fqn_dereg_mr(mhandle) == 0 ? ncclSuccess : ncclInvalidUsage;
}

static ncclResult_t a_isend(void *sendComm, void *data, size_t size, int tag, void *mhandle, void **request)
{
	(void)mhandle;
	return to_nccl(fqn_isend(sendComm, data, size, tag, (struct fqn_req **)request));
}

static ncclResult_t a_isend_v8(void *sendComm, void *data, int size, int tag, void *mhandle, void **request)
{
	if (size < 0) {
		*request = NULL;
		return ncclInvalidUsage;
	}
	return a_isend(sendComm, data, (size_t)size, tag, mhandle, request);
}

static ncclResult_t a_isend_v10(void *sendComm, void *data, size_t size, int tag, void *mhandle,
				void *phandle, void **request)
{
	(void)phandle;
	return a_isend(sendComm, data, size, tag, mhandle, request);
}

static ncclResult_t a_irecv(void *recvComm, int n, void **data, size_t *sizes, int *tags, void **mhandles,
			    void **request)
{
	(void)mhandles;
	return to_nccl(fqn_irecv(recvComm, n, data, sizes, tags, (struct fqn_req **)request));
}

static ncclResult_t a_irecv_v8(void *recvComm, int n, void **data, int *sizes, int *tags, void **mhandles,
			       void **request)
{
	size_t sz[FQN_MAX_RECVS];

	*request = NULL;
	if (n < 1 || n > FQN_MAX_RECVS)
		return ncclInvalidUsage;
	for (int i = 0; i < n; i++) {
		if (sizes[i] < 0)
			return ncclInvalidUsage;
		sz[i] = (size_t)sizes[i];
	}
	return a_irecv(recvComm, n, data, sz, tags, mhandles, request);
}

static ncclResult_t a_irecv_v10(void *recvComm, int n, void **data, size_t *sizes, int *tags, void **mhandles,
				void **phandles, void **request)
{
	(void)phandles;
	return a_irecv(recvComm, n, data, sizes, tags, mhandles, request);
}

static ncclResult_t a_iflush(void *recvComm, int n, void **data, int *sizes, void **mhandles, void **request)
{
	(void)n;
	(void)data;
	(void)sizes;
	(void)mhandles;
	return to_nccl(fqn_iflush(recvComm, (struct fqn_req **)request));
}

static ncclResult_t a_test(void *request, int *done, int *sizes)
{
	size_t sz[FQN_MAX_RECVS];
	int n = 0, rc;

	rc = fqn_test(request, done, sz, &n);
	for (int i = 0; sizes && i < n; i++)
		sizes[i] = sz[i] > INT_MAX ? INT_MAX : (int)sz[i];
	return to_nccl(rc);
}

static ncclResult_t a_closeSend(void *sendComm)
{
	return to_nccl(fqn_close_send(sendComm));
}

static ncclResult_t a_closeRecv(void *recvComm)
{
	return to_nccl(fqn_close_recv(recvComm));
}

static ncclResult_t a_closeListen(void *listenComm)
{
	return to_nccl(fqn_close_listen(listenComm));
}

static ncclResult_t a_getDeviceMr(void *comm, void *mhandle, void **dptr_mhandle)
{
	(void)comm;
	(void)mhandle;
	*dptr_mhandle = NULL; /* no device offload */
	return ncclSuccess;
}

static ncclResult_t a_irecvConsumed(void *recvComm, int n, void *request)
{
	(void)recvComm;
	(void)n;
	(void)request;
	return ncclSuccess;
}

static ncclResult_t a_init_v10(ncclDebugLogger_t logger, ncclProfilerCallback_t prof)
{
	(void)prof;
	return a_init(logger);
}

/* NCCL's trafficClass (v10+): the byte the send comm's lanes put in their
 * packets' IP TOS / IPv6 traffic class, unless the job has a network class. NCCL passes NCCL_CONFIG_UNDEF_INT
 * (INT_MIN) when the user set none: anything outside 0..255 leaves the
 * kernel's default. Applied once the comm is up, before its first chunk
 * (the handshake went with the default class); the comm remembers it for
 * lanes re-dialed after a failover or a steering move (send.c). */
static ncclResult_t connect_tclass(int dev, int tclass, void *handle, void **sendComm, void **sendDevComm)
{
	ncclResult_t rc = a_connect(dev, handle, sendComm, sendDevComm);
	struct fqn_comm *c = *sendComm; /* struct fqn_send begins with its comm */

	/* the site's class (FABRICIQ_DSCP), set when the comm was made, wins:
	 * a job's own NCCL setting does not lift it into another class */
	if (rc != ncclSuccess || !c || tclass < 0 || tclass > 255 || c->tclass >= 0)
		return rc;
	c->tclass = tclass;
	for (int i = 0; i < c->nlanes; i++)
		fqn_comm_apply_tclass(c, i);
	return rc;
}

static ncclResult_t a_connect_v10(int dev, ncclNetCommConfig_t *config, void *handle, void **sendComm,
				  void **sendDevComm)
{
	return connect_tclass(dev, config ? config->trafficClass : -1, handle, sendComm, sendDevComm);
}

/* v11+: one context per NCCL communicator; the network state stays global. */
struct fqn_v11_ctx {
	uint64_t comm_id;
	int traffic_class;
};

static ncclResult_t a_init_v11(void **ctx, uint64_t commId, ncclNetCommConfig_t *config,
			       ncclDebugLogger_t logger, ncclProfilerCallback_t prof)
{
	struct fqn_v11_ctx *c;
	int rc;

	(void)prof;
	*ctx = NULL;
	rc = fqn_init(logger);
	if (rc < 0)
		return to_nccl(rc);
	c = calloc(1, sizeof(*c));
	if (!c) {
		fqn_fini();
		return ncclSystemError;
	}
	c->comm_id = commId;
	c->traffic_class = config ? config->trafficClass : -1;
	*ctx = c;
	return ncclSuccess;
}

static ncclResult_t a_finalize_v11(void *ctx)
{
	free(ctx);
	fqn_fini();
	return ncclSuccess;
}

static ncclResult_t a_setNetAttr_v11(void *ctx, ncclNetAttr_t *attr)
{
	(void)ctx;
	(void)attr; /* hints about concurrency; every lane already runs at full speed */
	return ncclSuccess;
}

static ncclResult_t a_listen_v11(void *ctx, int dev, void *handle, void **listenComm)
{
	(void)ctx;
	return a_listen(dev, handle, listenComm);
}

static ncclResult_t a_connect_v11(void *ctx, int dev, void *handle, void **sendComm, void **sendDevComm)
{
	const struct fqn_v11_ctx *c = ctx;

	return connect_tclass(dev, c ? c->traffic_class : -1, handle, sendComm, sendDevComm);
}

#define EXPORT __attribute__((visibility("default")))

/* makeVDevice stays NULL: NCCL then does not merge NICs, and each
 * connection already stripes its lanes over every rail. */

EXPORT const ncclNet_v8_t ncclNetPlugin_v8 = {
    FQN_PLUGIN_NAME, a_init,        a_devices,     a_props_v8,    a_listen,        a_connect, a_accept,
    a_regMr,         a_regMrDmaBuf, a_deregMr,     a_isend_v8,    a_irecv_v8,      a_iflush,  a_test,
    a_closeSend,     a_closeRecv,   a_closeListen, a_getDeviceMr, a_irecvConsumed,
};

EXPORT const ncclNet_v9_t ncclNetPlugin_v9 = {
    FQN_PLUGIN_NAME, a_init,        a_devices,     a_props_v9,    a_listen,        a_connect, a_accept,
    a_regMr,         a_regMrDmaBuf, a_deregMr,     a_isend,       a_irecv,         a_iflush,  a_test,
    a_closeSend,     a_closeRecv,   a_closeListen, a_getDeviceMr, a_irecvConsumed, NULL,
};

EXPORT const ncclNet_v10_t ncclNetPlugin_v10 = {
    FQN_PLUGIN_NAME, a_init_v10,    a_devices,     a_props_v9,    a_listen,        a_connect_v10, a_accept,
    a_regMr,         a_regMrDmaBuf, a_deregMr,     a_isend_v10,   a_irecv_v10,     a_iflush,      a_test,
    a_closeSend,     a_closeRecv,   a_closeListen, a_getDeviceMr, a_irecvConsumed, NULL,
};

EXPORT const ncclNet_v11_t ncclNetPlugin_v11 = {
    FQN_PLUGIN_NAME, a_init_v11, a_devices,      a_props_v11,      a_listen_v11,  a_connect_v11,
    a_accept,        a_regMr,    a_regMrDmaBuf,  a_deregMr,        a_isend_v10,   a_irecv_v10,
    a_iflush,        a_test,     a_closeSend,    a_closeRecv,      a_closeListen, a_getDeviceMr,
    a_irecvConsumed, NULL,       a_finalize_v11, a_setNetAttr_v11,
};

EXPORT const ncclNet_v12_t ncclNetPlugin_v12 = {
    FQN_PLUGIN_NAME, a_init_v11, a_devices,      a_props_v12,      a_listen_v11,  a_connect_v11,
    a_accept,        a_regMr,    a_regMrDmaBuf,  a_deregMr,        a_isend_v10,   a_irecv_v10,
    a_iflush,        a_test,     a_closeSend,    a_closeRecv,      a_closeListen, a_getDeviceMr,
    a_irecvConsumed, NULL,       a_finalize_v11, a_setNetAttr_v11,
};
