/*
 * profrun: NCCL's threads around a collective, for a profiler plugin.
 *
 * The calling (application) thread starts the group and the operation's
 * events, hands the work to a proxy thread, stops the operation's events
 * (enqueued, as NCCL's hostStreamPlanTask does after ncclProxyStart) and
 * waits, as a stream synchronisation would. The proxy thread runs the
 * transfers through the net plugin, and the mesh's hooks send the proxyOp,
 * proxyStep and netPlugin events from there, so the plugin sees NCCL's
 * two threads and its ordering (a coll stopped before or after its proxy
 * operations start).
 */
#ifndef FQ_COLLBENCH_PROFRUN_H
#define FQ_COLLBENCH_PROFRUN_H

#include <stdio.h>

#include "tools/collbench/coll.h"
#include "tools/collbench/profdrv.h"

struct profrun;

/* Load the plugin (abi 0: the newest it exports; net: which transport's
 * events a request gets), init it as rank of
 * nranks in communicator comm_hash, start the proxy thread and hook the
 * mesh. 0, or -1 with a one-line reason in err. */
int profrun_open(const char *path, int abi, enum profdrv_net net, uint64_t comm_hash, int rank, int nranks,
		 struct mesh *m, ncclDebugLogger_t logfn, struct profrun **out, char *err, size_t errlen);
/* Run fn(arg) on the proxy thread as operation op; nxfers: the transfers
 * each connection makes in it (a proxyOp's nSteps is that times the
 * first transfer's requests). Returns fn's result. */
int profrun_op(struct profrun *r, const struct profdrv_op *op, int nxfers, int (*fn)(void *), void *arg);
/* One '# profiler ...' line: the version and what was sent. */
void profrun_report(struct profrun *r, int rank, FILE *f);
/* Stop the thread, finalize the plugin, unhook the mesh. */
void profrun_close(struct profrun *r);

#endif /* FQ_COLLBENCH_PROFRUN_H */
