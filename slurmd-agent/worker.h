/*
 * worker: blocking calls off an event loop.
 *
 * One thread runs the jobs submitted to it, one at a time, in the order
 * they came; each job's done then runs on the loop's thread (woken through
 * an eventfd the loop watches). A job that blocks (a stuck munged, a slow
 * DNS server, a slow disk) delays the jobs behind it on the same worker,
 * never the loop: independent kinds of blocking work get a worker each.
 *
 * The caller owns a job (a struct fq_job embedded in its own) and its
 * inputs; run must touch nothing the loop touches meanwhile. The worker
 * holds the job from submit until done is called.
 */
#ifndef FQ_AGENT_WORKER_H
#define FQ_AGENT_WORKER_H

#include <stdbool.h>
#include <stddef.h>

struct event_base;
struct fq_worker;

struct fq_job {
	void (*run)(struct fq_job *j); /* on the worker thread */
	/* On the loop's thread; ran is false for a job dropped by
	 * fq_worker_destroy before it ran. The job is the caller's again. */
	void (*done)(struct fq_job *j, bool ran);
	struct fq_job *next; /* the worker's */
};

/* Starts the thread. NULL on failure (errno set). */
struct fq_worker *fq_worker_create(struct event_base *base);

/* Queue j (run and done set). Never fails: the queue is the jobs' own
 * links, and callers bound how many they have outstanding. */
void fq_worker_submit(struct fq_worker *w, struct fq_job *j);

/* Jobs submitted whose done has not run yet. */
size_t fq_worker_pending(const struct fq_worker *w);

/* Waits for the job running (if any) to return, then calls done for every
 * job: ran true for those that ran, false for those still queued. */
void fq_worker_destroy(struct fq_worker *w);

#endif /* FQ_AGENT_WORKER_H */
