/*
 * prof: the profiler's one internal API. Each exported ncclProfiler_vN
 * (abi/plugin.c) translates its version's descriptors into a struct
 * fqp_event and calls these; nothing here knows a version.
 *
 * Threads. NCCL calls a context from several threads at once: the
 * application thread (group, coll, p2p and the v5+ API events), the
 * proxy progress thread (proxyOp, proxyStep, proxyCtrl, kernelCh, and the
 * IB transport's QP events, which it emits while posting and polling),
 * and the socket transport's helper threads (its socket events). A
 * coll's stopEvent comes from the application thread after the launch,
 * usually before its proxyOps end on the proxy thread.
 *
 * No lock on any of those paths, no allocation, no system call but the
 * vDSO clock read: an event takes a slot from the context's preallocated
 * pool through a lock-free stack (pool.h), its figures go to atomic
 * counters of a fixed window table (window.h), a finished collective or
 * p2p goes into a bounded lock-free ring of op records. A full pool,
 * table or ring drops the event and counts the drop; nothing waits.
 *
 * Handles are not pointers: a handle encodes (context slot, context
 * generation, event slot, event generation) and is checked against the
 * context table before use, so NULL, garbage, a handle stopped twice,
 * or a handle used after finalize is counted (rejected) and ignored.
 * Contexts are never freed: finalize marks one dead and a later init
 * reuses it, so a straggler from another thread never touches freed
 * memory. Every entry point returns 0 or a negative errno; the adapters
 * give NCCL ncclSuccess whatever happens (a profiler must not fail NCCL).
 *
 * Times: CLOCK_MONOTONIC_RAW at each call; a record is mapped onto the
 * agent's global timeline through its clock page (common/clock_page.h)
 * when the op ends, or stays raw monotonic time with synchronised = 0.
 */
#ifndef FQP_PROF_H
#define FQP_PROF_H

#include <stddef.h>
#include <stdint.h>

#include "nccl-profiler/nccl_profiler.h"
#include "nccl-profiler/window.h"

/* Internal event kinds (not NCCL's bits). */
enum fqp_type {
	FQP_EV_GROUP = 0,
	FQP_EV_COLL,
	FQP_EV_P2P,
	FQP_EV_PROXY_OP,
	FQP_EV_PROXY_STEP,
	FQP_EV_PROXY_CTRL,
	FQP_EV_KERNEL_CH,
	FQP_EV_NET,
	FQP_EV_GROUP_API,
	FQP_EV_COLL_API,
	FQP_EV_P2P_API,
	FQP_EV_KERNEL_LAUNCH,
	FQP_EV_CE_COLL,
	FQP_EV_CE_SYNC,
	FQP_EV_CE_BATCH,
	FQP_EV_NTYPES
};

/* Which network event a netPlugin descriptor held. */
enum fqp_net_kind {
	FQP_NET_UNKNOWN = 0, /* an id or a struct version this build does not know */
	FQP_NET_IB_QP,
	FQP_NET_SOCKET
};

/* One startEvent, decoded (plain data; the adapter fills what its
 * version gives and leaves the rest zero; ids are names.h's). */
struct fqp_event {
	enum fqp_type type;
	void *parent; /* NCCL's parentObj: a handle this plugin returned, or NULL */
	int rank;
	uint64_t seq;
	uint64_t comm_hash;    /* v1..v3 give it per coll/p2p (0: the context's) */
	int func, algo, proto; /* FQP_FUNC_*, FQP_ALGO_*, FQP_PROTO_* */
	size_t count;
	unsigned type_size; /* bytes per element; 0: unknown */
	int root, peer;
	int nchannels;
	/* proxyOp */
	int channel, nsteps, chunk, is_send;
	int other_process; /* the op came from another process: its parent is not ours */
	/* proxyStep */
	int step;
	/* netPlugin */
	enum fqp_net_kind net;
	int dev, qpn, fd;
	int opcode; /* IB: ibv_wr_opcode; socket: 0 send, 1 recv */
	uint64_t length;
	/* CE batch */
	uint64_t total_bytes;
};

/* recordEventState's arguments, decoded. */
struct fqp_state_args {
	uint64_t trans_size; /* proxyStep (v4+) or proxyOp (v1..v3): bytes so far */
	int appended;        /* proxyCtrl */
};

/* A context's counters (snapshot). started = stopped + live + rejected
 * starts do not count as started. */
struct fqp_counts {
	uint64_t started[FQP_EV_NTYPES];
	uint64_t stopped[FQP_EV_NTYPES];
	uint64_t states;          /* recordEventState calls taken */
	uint64_t dropped_pool;    /* startEvent found the pool empty: no handle given */
	uint64_t dropped_windows; /* the window table was full for a new key */
	uint64_t dropped_ops;     /* the op-record ring was full */
	uint64_t unknown_type;    /* startEvent with a type this build does not know */
	uint64_t net_unknown;     /* netPlugin events with an unknown id or struct */
	uint64_t ops_done;        /* colls and p2ps completed (stop + every proxyOp ended) */
	uint64_t live;            /* events started and not yet ended */
};

/* Process-wide counters of calls no context could take. */
struct fqp_global_counts {
	uint64_t bad_handle;    /* NULL, garbage, stopped twice, or a dead context */
	uint64_t bad_context;   /* startEvent/finalize with a context that is not one of ours */
	uint64_t init_failures; /* no memory or no context slot */
};

struct fqp_config {
	unsigned pool_events;    /* events in flight per context (0: default 65536) */
	unsigned ring_ops;       /* op records kept until drained (0: default 4096) */
	const char *clock_page;  /* NULL: $FABRICIQ_CLOCK_PAGE or /run/fabriciq/clock */
	ncclDebugLogger_t logfn; /* may be NULL */
};

struct fqp_comm_info {
	uint64_t comm_hash;
	const char *comm_name; /* may be NULL */
	int nnodes, nranks, rank;
};

/* Opaque: its value encodes a context slot and generation (like a
 * handle) and is never dereferenced, so a stale or garbage one is
 * recognised instead of followed. */
struct fqp_ctx;

/* The mask fabriciq asks for: group, coll, p2p, proxyOp, proxyStep and
 * netPlugin (not proxyCtrl nor kernelCh: kernelCh makes NCCL open proxy
 * connections of its own, a cost monitoring must not add). */
int fqp_default_mask(void);

/* init: a context for one communicator. 0, or -ENOMEM / -ENOSPC (every
 * context slot live). The config is read once. */
int fqp_init(struct fqp_ctx **out, const struct fqp_comm_info *ci, const struct fqp_config *cfg);
/* finalize: the context takes no more events; its memory stays (reused by
 * a later init). 0, or -EINVAL for a context that is not live. */
int fqp_finalize(struct fqp_ctx *ctx);

/* startEvent: *handle is set (NULL when the event is dropped or rejected).
 * 0, -EINVAL (bad context or type), -ENOBUFS (pool empty: counted). */
int fqp_start(struct fqp_ctx *ctx, void **handle, const struct fqp_event *ev);
/* stopEvent: 0, or -EINVAL for a handle that is not a live event. */
int fqp_stop(void *handle);
/* recordEventState: 0, or -EINVAL. */
int fqp_record(void *handle, int state, const struct fqp_state_args *a);

/* Readers (the telemetry side, tests): never on NCCL's paths. */
int fqp_counts(struct fqp_ctx *ctx, struct fqp_counts *out);
void fqp_global_counts(struct fqp_global_counts *out);
/* Complete, at their stop time, the stopped colls and p2ps no proxyOp
 * joined (no network activity, or their proxyOps were dropped) that
 * started before an op a proxyOp did join (NCCL's proxy goes in order),
 * or stopped at least older_than_ns ago (0: all). fqp_drain_ops sweeps
 * with 10 s, finalize with 0. */
void fqp_sweep(struct fqp_ctx *ctx, int64_t older_than_ns);
/* Take up to n finished op records, oldest first; returns how many. */
size_t fqp_drain_ops(struct fqp_ctx *ctx, struct fqp_op_record *out, size_t n);
/* Hand each non-empty window to cb (reset: take its counts). Returns the
 * number of windows, or -EINVAL. */
int fqp_windows(struct fqp_ctx *ctx, int reset, void (*cb)(const struct fqp_window_sample *, void *),
		void *arg);
/* The context's communicator, and whether its clock page was found. */
int fqp_ctx_info(struct fqp_ctx *ctx, struct fqp_comm_info *out, int *clock_synced);
/* Now on the context's timeline: global through the agent's clock page
 * (*sync = 1), else raw monotonic (*sync = 0). 0, or -EINVAL. */
int fqp_ctx_now(struct fqp_ctx *ctx, int64_t *out, int *sync);

#endif /* FQP_PROF_H */
