/*
 * idle: the set of receive comms that the progress engine (progress.c)
 * serves while their owner posts nothing (control mode). A set of opaque
 * members, each with its own link; one sweep at a time, at most one per
 * period, and a sweep holds the set's lock throughout, so a member that
 * fqn_idle_remove returned from is never served again.
 *
 * A process may call nothing of the plugin for as long as it likes (its
 * last collective done, it waits in its launcher's barrier), while a peer
 * waits for acks that only a sweep here gives: fqn_idle_start runs a
 * thread that sweeps every period, so the set is served whether its owner
 * calls or not (the engine's own sweeps make the thread's no-ops while it
 * does).
 */
#ifndef FQN_IDLE_H
#define FQN_IDLE_H

#include <pthread.h>
#include <stdint.h>

struct fqn_idle_link {
	struct fqn_idle_link *next;
	int listed;
};

struct fqn_idle {
	pthread_mutex_t lock;
	struct fqn_idle_link *head;
	int64_t next_ns; /* the next sweep (atomic) */
	/* the sweeping thread (fqn_idle_start) */
	pthread_t thread;
	pthread_mutex_t wait_lock;
	pthread_cond_t wake;
	int running, stop;
	int64_t wake_ns, sweep_ns;
	void (*serve)(struct fqn_idle_link *m);
};

void fqn_idle_init(struct fqn_idle *s);
void fqn_idle_add(struct fqn_idle *s, struct fqn_idle_link *m);
/* No-op for a link never added. */
void fqn_idle_remove(struct fqn_idle *s, struct fqn_idle_link *m);
/* If now (CLOCK_MONOTONIC) is at or past the next sweep and no other thread
 * is sweeping: serve(m) for every member, the next sweep period_ns later. */
void fqn_idle_sweep(struct fqn_idle *s, int64_t now, int64_t period_ns,
		    void (*serve)(struct fqn_idle_link *m));

/* Start the thread that wakes every wake_ns and sweeps s with serve if
 * due (fqn_idle_sweep with period sweep_ns: the engine's, so that the two
 * keep one pace); it takes no signals. 0 or a negative errno (no thread:
 * the engine's sweeps alone). */
int fqn_idle_start(struct fqn_idle *s, int64_t wake_ns, int64_t sweep_ns,
		   void (*serve)(struct fqn_idle_link *m));
/* Stop it and wait for it; a no-op if it is not running. */
void fqn_idle_stop(struct fqn_idle *s);

#endif /* FQN_IDLE_H */
