/*
 * uplink: the agent's connection to the controller.
 *
 * TCP, framed protobuf (common/frame.h). On connect the controller sends a
 * Challenge; the agent answers with Auth (a munge credential whose payload
 * is the challenge's nonce: bound to this connection, so a captured one is
 * useless elsewhere) and AgentHello, then streams its spool (spool.h) from
 * the first unacknowledged frame. Acks drop frames from the spool;
 * ClockCorrection and PeerAssignment are handed to the caller. A broken or
 * refused connection is retried with exponential backoff (0.5 s .. 5 s,
 * jittered); meanwhile frames wait in the spool.
 */
#ifndef FQ_AGENT_UPLINK_H
#define FQ_AGENT_UPLINK_H

#include <event2/event.h>
#include <json-c/json.h>
#include <stdint.h>

#include "proto/fabriciq.pb-c.h"
#include "slurmd-agent/spool.h"

struct fq_uplink_ops {
	/* Fill the hello (strings must outlive the call); next_seq is set by the uplink. */
	void (*hello)(void *arg, Fabriciq__AgentHello *h);
	void (*correction)(void *arg, const Fabriciq__ClockCorrection *c);
	void (*peers)(void *arg, const Fabriciq__PeerAssignment *p);
	void (*advice)(void *arg, const Fabriciq__Advice *a); /* may be NULL */
};

struct fq_uplink_config {
	const char *host; /* controller address (name or IPv4) */
	uint16_t port;
	const char *munge_socket; /* NULL: munged's default */
	int credential_ttl_s;     /* 0: munged's default */
};

struct fq_uplink;

struct fq_uplink *fq_uplink_create(struct event_base *base, const struct fq_uplink_config *cfg,
				   struct fq_spool *spool, const struct fq_uplink_ops *ops, void *arg);
void fq_uplink_destroy(struct fq_uplink *u);

/* New frames were appended to the spool: send them if connected. */
void fq_uplink_kick(struct fq_uplink *u);

int fq_uplink_connected(const struct fq_uplink *u);

/* {state, connects, auth_refusals, disconnects, frames_sent, acked_seq, last_error} */
struct json_object *fq_uplink_counters(const struct fq_uplink *u);

#endif /* FQ_AGENT_UPLINK_H */
