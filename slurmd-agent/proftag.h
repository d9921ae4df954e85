/*
 * proftag: a ProfilerReport from a step's process (the NCCL profiler
 * plugin, nccl-profiler/tele.h) made the agent's word before it is spooled
 * (pure: no I/O, so tests feed it messages).
 *
 * The job, step and rank are the agent's (SO_PEERCRED found the sender's
 * step, steps.h), never the process's: a report naming another job or step
 * is refused whole. What the process says of its own traffic is kept
 * where it is plausible and removed where it cannot be (so the controller
 * never stores it): a window of a kind no profiler sends, or with no
 * events; an op that ends before it starts, lasts over an hour, or has a
 * bandwidth that is not a finite number >= 0; names (func, algo, proto)
 * that are not short words.
 */
#ifndef FQ_AGENT_PROFTAG_H
#define FQ_AGENT_PROFTAG_H

#include <stdint.h>

#include "proto/fabriciq.pb-c.h"

/* Tag r as job.step's, sent by global rank `rank`. 0, or -EPERM (it
 * claims another job or step: drop it). *removed (may be NULL): windows
 * and ops taken out as implausible. */
int fq_proftag(Fabriciq__ProfilerReport *r, uint64_t job_id, uint32_t step_id, uint32_t rank,
	       unsigned *removed);

/* Pure: whether s is a window kind the profiler sends ("coll", "net_ib"...). */
int fq_proftag_kind_known(const char *s);

#endif /* FQ_AGENT_PROFTAG_H */
