/*
 * profdrv: drive any NCCL profiler plugin .so as NCCL does, whatever its
 * ABI version (1..6), through one interface.
 *
 * profdrv_open dlopens the file and takes ncclProfiler_vN for the version
 * asked, or the newest present (NCCL 2.30's order: v6, v5 .. v1). Events
 * are described once, as NCCL's own newest descriptor (v6), and lowered to
 * the plugin's version as NCCL's adapters do (src/plugin/profiler/
 * profiler_v1.cc ..): v1 gets enum codes instead of names, v1..v4 get the
 * group as a coll's parent, v5+ get API events, v1..v3 get the proxyOp
 * states with transSize (as 2.23..2.26 sent them), v4+ the proxyStep
 * states with transSize. An event whose type the version lacks, or which
 * the plugin's activation mask leaves out, is not sent (NULL handle), as
 * in NCCL. Calls may come from any thread, as NCCL's do.
 */
#ifndef FQ_COLLBENCH_PROFDRV_H
#define FQ_COLLBENCH_PROFDRV_H

#include <stddef.h>
#include <stdint.h>

#include "nccl-profiler/nccl_profiler.h"

#define PROFDRV_MIN_VERSION 1
#define PROFDRV_MAX_VERSION 6

struct profdrv;

/* What the driver sent (to compare with what the plugin counted). */
struct profdrv_counts {
	uint64_t groups, colls, p2ps, proxy_ops, steps, net, states, api;
};

/* version 0: the newest exported. Returns 0, or -1 with a one-line reason. */
int profdrv_open(const char *path, int version, struct profdrv **out, char *err, size_t errlen);
/* Finalizes (if initialised) and dlcloses. */
void profdrv_close(struct profdrv *p);
int profdrv_version(const struct profdrv *p);
const char *profdrv_name(const struct profdrv *p);
int profdrv_mask(const struct profdrv *p);
void profdrv_counts(const struct profdrv *p, struct profdrv_counts *out);

/* init with the version's arguments. Returns the plugin's result. */
ncclResult_t profdrv_init(struct profdrv *p, uint64_t comm_hash, const char *comm_name, int nnodes,
			  int nranks, int rank, ncclDebugLogger_t logfn);

/* An operation as the application enqueues it. */
struct profdrv_op {
	int is_p2p;
	const char *func;     /* NCCL's name: "AllReduce", "Send", "Recv" ... */
	const char *datatype; /* "ncclFloat32", "ncclInt8" */
	size_t count;
	int root, peer;
	uint64_t seq;
	const char *algo, *proto; /* colls */
	int nchannels;
};

/* Application thread: a group with one operation (v5+: their API events
 * first). *task is what proxy operations name as their parent. */
void profdrv_op_begin(struct profdrv *p, const struct profdrv_op *op, void **task);
/* Application thread: the operation is handed to the proxy (stopEvent for
 * the task and the group; the API events end). */
void profdrv_op_enqueued(struct profdrv *p);

/* Proxy thread. */
void *profdrv_proxy_op_start(struct profdrv *p, void *task, int channel, int peer, int nsteps, int chunk,
			     int is_send);
/* Which transport's events the driver sends for a request (v3+): NCCL's
 * socket transport's (one per task) or its IB transport's (one per work
 * request on a QP; a receive's carries no opcode nor length, as NCCL's). */
enum profdrv_net {
	PROFDRV_NET_SOCKET = 0,
	PROFDRV_NET_IB
};
void profdrv_set_net(struct profdrv *p, enum profdrv_net net);

/* One network transfer of len bytes: the step starts and reaches its
 * posted state; a netPlugin event (v3+) starts, for the connection conn
 * (a socket's fd, or QP 0x100 + conn). *net is its handle. */
void *profdrv_step_post(struct profdrv *p, void *op, int step, int is_send, size_t len,
			size_t op_bytes_posted, int conn, void **net);
/* The transfer completed: the net event stops, the step's last states,
 * the step stops. */
void profdrv_step_done(struct profdrv *p, void *op, void *step, void *net, int is_send, size_t len,
		       size_t op_bytes_done);
void profdrv_proxy_op_stop(struct profdrv *p, void *op);

/* Raw access for conformance tests: NCCL's generic (v6) descriptor,
 * lowered to the plugin's version; returns the plugin's result. */
ncclResult_t profdrv_start_raw(struct profdrv *p, void **h, const void *descr_v6);
ncclResult_t profdrv_stop_raw(struct profdrv *p, void *h);
ncclResult_t profdrv_record_raw(struct profdrv *p, void *h, int state, size_t trans_size, int appended);

#endif /* FQ_COLLBENCH_PROFDRV_H */
