/*
 * idle: the set of receive comms that the progress engine (progress.c)
 * serves while their owner posts nothing (control mode). A set of opaque
 * members, each with its own link; one sweep at a time, at most one per
 * period, and a sweep holds the set's lock throughout, so a member that
 * fqn_idle_remove returned from is never served again.
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
};

void fqn_idle_init(struct fqn_idle *s);
void fqn_idle_add(struct fqn_idle *s, struct fqn_idle_link *m);
/* No-op for a link never added. */
void fqn_idle_remove(struct fqn_idle *s, struct fqn_idle_link *m);
/* If now (CLOCK_MONOTONIC) is at or past the next sweep and no other thread
 * is sweeping: serve(m) for every member, the next sweep period_ns later. */
void fqn_idle_sweep(struct fqn_idle *s, int64_t now, int64_t period_ns,
		    void (*serve)(struct fqn_idle_link *m));

#endif /* FQN_IDLE_H */
