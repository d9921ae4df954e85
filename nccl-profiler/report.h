/*
 * report: a context's figures as text, written at finalize (off NCCL's
 * paths) to $FABRICIQ_PROFILER_DUMP when set (appended: one block per
 * communicator) and summed up in one INFO line through NCCL's logger.
 * This is for people and tests; the agent will get the same windows and
 * op records as telemetry frames.
 *
 * Block format, one record a line, key=value fields:
 *   profiler comm=HASH rank=R nranks=N clock=global|raw ops=N colls=N p2ps=N
 *            proxy_ops=N steps=N net=N net_ib=N net_sock=N states=N live=N
 *            dropped_pool=N dropped_windows=N dropped_ops=N unknown_type=N
 *            net_unknown=N bad_handle=N
 *   window kind=K dev=D sub=S id=I count=N bytes=N mean_ns=N max_ns=N
 *   op func=F algo=A proto=P bytes=N start_ns=T end_ns=T gbps=G sync=0|1 proxy_ops=N
 *   end
 */
#ifndef FQP_REPORT_H
#define FQP_REPORT_H

#include <stdio.h>

#include "nccl-profiler/prof.h"

/* Write ctx's block to f (ops: drains the op ring). 0 or -EINVAL. */
int fqp_report_write(struct fqp_ctx *ctx, FILE *f);
/* The window kind's name ("coll", "proxy_send", "net_ib" ...). */
const char *fqp_win_kind_name(int kind);

#endif /* FQP_REPORT_H */
