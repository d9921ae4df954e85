/*
 * event: the one builder of telemetry event samples (FailoverEvents: a
 * lane's failure, failback or failed setup), for control mode's
 * failover.c and setup.c alike: what the event is, on which lane of which
 * connection, stamped (ctx.h's fqn_ctx_event does it on the global
 * clock); pushed to the telemetry thread.
 */
#ifndef FQN_EVENT_H
#define FQN_EVENT_H

#include <stdint.h>

struct fqn_telemetry;

struct fqn_event {
	const char *cause; /* "socket-error", "no-progress", "failback", "config", ... */
	uint64_t conn_id;
	int lane, to_lane; /* to_lane: the lane that took the traffic, -1: none */
	int is_send;
	uint32_t peer_rank1; /* the other end's rank + 1 (0: unknown) */
	const char *kind;    /* the lane kind ("ib"), "" if not said */
	const char *nic, *local, *peer;
	int64_t at_ns; /* CLOCK_MONOTONIC: when it happened */
	int64_t detect_ns, duration_ns;
	uint64_t bytes_resent;
};

/* The event sample of e, from rank1 (this process's rank + 1), at
 * start_ns (synchronised: on the global clock), pushed to t. */
void fqn_event_push(struct fqn_telemetry *t, uint32_t rank1, int64_t start_ns, int synchronised,
		    const struct fqn_event *e);

#endif /* FQN_EVENT_H */
