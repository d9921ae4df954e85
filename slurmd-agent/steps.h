/*
 * steps: the job steps registered on this node by the SPANK plugin, and
 * the mapping from a process to the step and rank it belongs to.
 *
 * The identity of a telemetry sender is what the kernel proves
 * (SO_PEERCRED: pid and uid), never what it claims: the pid, or its
 * nearest ancestor that is a registered task pid, names the step and the
 * global rank; the uid must be the step's. Pure apart from the parent
 * lookup, which the caller supplies (/proc in the agent, a table in tests).
 */
#ifndef FQ_AGENT_STEPS_H
#define FQ_AGENT_STEPS_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto/fabriciq.pb-c.h"
#include "slurmd-agent/rate.h"

#define FQ_STEPS_MAX_RANKS 4096 /* per step on one node */

struct fq_step_rank {
	uint32_t global_rank, local_rank;
	pid_t pid;
};

struct fq_step {
	uint64_t job_id;
	uint32_t step_id, uid, node_count, task_count;
	char mode[16];
	int64_t registered_ns; /* local raw clock */
	struct fq_step_rank *ranks;
	size_t nranks;
	uint64_t lane_reports; /* accepted from its processes */
	/* what its processes may send (the caller's limits; not persisted) */
	struct fq_rate lane_rate, event_rate;
	uint64_t limited_lanes, limited_events; /* frames refused over them */
	int64_t dead_since_ns;                  /* since when no task pid is alive (now_ns > 0); 0: one is */
};

struct fq_step_key {
	uint64_t job_id;
	uint32_t step_id;
};

struct fq_steps;

/* max_steps bounds the registry (a runaway client cannot grow it). */
struct fq_steps *fq_steps_create(size_t max_steps);
void fq_steps_destroy(struct fq_steps *s);

/* Register (or extend: ranks are merged by global rank, a repeated call is
 * a no-op) the step m describes. 0; -EINVAL (no ranks, a pid <= 1, mode not
 * monitor/control/empty), -ENOSPC (registry or rank table full), -ENOMEM;
 * err says which in words. */
int fq_steps_register(struct fq_steps *s, const Fabriciq__StepStart *m, int64_t now_ns, char *err,
		      size_t errlen);

/* 0, or -ENOENT if (job, step) is not registered. */
int fq_steps_unregister(struct fq_steps *s, uint64_t job_id, uint32_t step_id);

/* The parent of pid: 0 and *ppid, or a negative errno (no such process). */
typedef int (*fq_parent_fn)(pid_t pid, pid_t *ppid, void *arg);

/* /proc/PID/stat's parent. */
int fq_parent_from_proc(pid_t pid, pid_t *ppid, void *arg);

/* The step whose task is pid or pid's nearest ancestor (at most 64
 * generations, stopping at pid 1), and that task's rank. NULL if none.
 * A found sender is remembered until the registry changes, so its next
 * reports walk no process tree. A sender found in no step is remembered
 * too (the negative cache), until the registry changes or for at most
 * FQ_STEPS_MISS_TTL_NS (a pid reused meanwhile by a task's descendant is
 * refused no longer than that): a process flooding the telemetry socket
 * costs one walk of /proc a second, not one a frame. */
#define FQ_STEPS_MISS_TTL_NS 1000000000LL
struct fq_step *fq_steps_find_pid(struct fq_steps *s, pid_t pid, int64_t now_ns, fq_parent_fn parent,
				  void *arg, const struct fq_step_rank **rank);

/* fq_steps_find_pid for a telemetry sender of uid, through /proc, with the
 * reads budgeted: at most FQ_STEPS_UID_READS_S /proc reads a second per
 * uid (burst twice that) and FQ_STEPS_ALL_READS_S in all (the same), each
 * about 10 us on the agent's event loop. A walk out of budget stops, and
 * its sender is answered "no step" for FQ_STEPS_MISS_TTL_NS: many
 * processes of one user, each sending once, cost the loop at most about
 * 1 % (every uid together 4 %), and a job's own tasks (found without a
 * read: they are the registered pids) are never refused. */
#define FQ_STEPS_UID_READS_S 1000
#define FQ_STEPS_ALL_READS_S 4000
struct fq_step *fq_steps_find_sender(struct fq_steps *s, pid_t pid, uid_t uid, int64_t now_ns,
				     const struct fq_step_rank **rank);

/* {sender_walks (process-tree walks done), sender_misses_cached (lookups
 * answered "no step" by the negative cache), sender_proc_reads (/proc
 * reads by fq_steps_find_sender), sender_reads_refused (reads over its
 * budget)} */
struct json_object *fq_steps_counters(const struct fq_steps *s);

/* Whether pid is a live process: 1 or 0. */
typedef int (*fq_alive_fn)(pid_t pid, void *arg);

/* kill(pid, 0): the process exists (EPERM included). */
int fq_alive_from_proc(pid_t pid, void *arg);

/* Reclaim the steps whose StepEnd never came (a lost request, an agent
 * down at the step's end), which would otherwise fill the registry: a step
 * none of whose task pids is alive is marked; still so grace_ns later (a
 * step that just ended gets its StepEnd within it) it is removed and its
 * key written to gone[] (at most max per call, the rest next time).
 * Returns how many were removed. A task pid reused by another process
 * keeps its step until that process ends too. */
size_t fq_steps_reap(struct fq_steps *s, int64_t now_ns, int64_t grace_ns, fq_alive_fn alive, void *arg,
		     struct fq_step_key *gone, size_t max);

size_t fq_steps_count(const struct fq_steps *s);

/* [{job_id, step_id, uid, mode, node_count, task_count, ranks: [{rank,
 * local_rank, pid}], lane_reports, limited_lanes, limited_events}] */
struct json_object *fq_steps_json(const struct fq_steps *s);

/* Persist the registry (fq_steps_json) to path: a fresh file (mode 0600,
 * never one planted at path.tmp) renamed over it. 0 or a negative errno.
 * Not synced (it runs on the agent's loop): the file serves an agent
 * restart, and a node crash ends the steps it names too. */
int fq_steps_save(const struct fq_steps *s, const char *path);

/* Register every step saved at path (as fq_steps_register would; dead
 * ones are left to fq_steps_reap). 0 and *n, 0 and *n = 0 without a
 * file, or -EBADMSG (err says which entry) / another negative errno. */
int fq_steps_load(struct fq_steps *s, const char *path, int64_t now_ns, size_t *n, char *err, size_t errlen);

#endif /* FQ_AGENT_STEPS_H */
