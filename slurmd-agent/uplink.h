/*
 * uplink: the agent's connection to the controller.
 *
 * TCP, framed protobuf (common/frame.h). On connect the controller sends a
 * Challenge; the agent answers with Auth (a munge credential whose payload
 * is the challenge's nonce: bound to this connection, so a captured one is
 * useless elsewhere, plus a nonce of its own) and AgentHello. The
 * controller must then authenticate itself: an Auth whose credential
 * decodes on this node's munged with the agent's nonce as payload and
 * controller_uid as uid (and, when agent.controller_key is set, signed
 * with the controller's key: common/signkey.h), within 10 s. Until it has, the agent sends
 * nothing more and takes nothing from it (no Ack, correction, peers or
 * advice); a bad or missing one drops the connection (counted in
 * controller_auth_refused). Then it streams its spool (spool.h) from the
 * first unacknowledged frame. Resolving the controller's name and both
 * munge calls block (a slow DNS server, a stuck munged: libmunge gives up
 * after 10 s): they run on the uplink's own worker thread (worker.h), one
 * at a time, so the agent's loop (probes, pages, the step socket) never
 * waits on them; a call for a connection dropped meanwhile is discarded,
 * and no new connection is tried while one still blocks. Acks drop frames from the spool;
 * ClockCorrection and PeerAssignment are handed to the caller. A broken or
 * refused connection is retried with exponential backoff (0.5 s .. 5 s,
 * jittered); meanwhile frames wait in the spool.
 *
 * Nothing the controller sends is taken on trust (a process on the
 * controller's address may not be the controller): each value is bounded
 * here before it reaches the spool or the caller, and a refusal is logged
 * and counted (fq_uplink_counters):
 *  - Ack{seq}: seq must be below fq_spool_next_seq (a frame that was
 *    spooled, hence possibly sent); a larger one (UINT64_MAX would empty
 *    the spool) drops the connection and leaves the spool as it was;
 *  - ClockCorrection: a reference node name, the global time it implies
 *    now (local - offset_ns + reference_epoch_ns) within
 *    FQ_UPLINK_CLOCK_MAX_NS of this host's CLOCK_REALTIME (the global
 *    timeline is realtime-based and never steps back, so a correction far
 *    ahead would hold every timestamp wrong until restart), |drift_ppb| at
 *    most FQ_UPLINK_DRIFT_MAX_PPB, error_bound_ns in 0..CLOCK_MAX, and at
 *    most one per FQ_UPLINK_CORRECTION_MIN_NS; else ignored;
 *  - PeerAssignment: every NIC entry and peer with non-empty names and
 *    address of at most FQ_UPLINK_NAME_MAX bytes, FQ_UPLINK_PEERS_MAX peers
 *    in all; else ignored whole (the prober checks addresses and NICs);
 *  - Advice: kind "move" or "rate", a job, a local NIC, and lifetime_ns in
 *    1..FQ_UPLINK_ADVICE_MAX_NS (the controller's advice_lifetime range);
 *    else ignored.
 */
#ifndef FQ_AGENT_UPLINK_H
#define FQ_AGENT_UPLINK_H

#include <event2/event.h>
#include <json-c/json.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/signkey.h"
#include "proto/fabriciq.pb-c.h"
#include "slurmd-agent/spool.h"

#define FQ_UPLINK_CLOCK_MAX_NS      1000000000ll /* 1 s: NTP keeps hosts within ms */
#define FQ_UPLINK_DRIFT_MAX_PPB     1e6          /* 1000 ppm: twice any crystal's */
#define FQ_UPLINK_CORRECTION_MIN_NS 50000000ll   /* 50 ms: the controller sends one per report window */
#define FQ_UPLINK_NAME_MAX          255
#define FQ_UPLINK_PEERS_MAX         4096
#define FQ_UPLINK_ADVICE_MAX_NS     3600000000000ll /* 1 h */

struct fq_uplink_ops {
	/* Fill the hello (strings must outlive the call); next_seq is set by the uplink. */
	void (*hello)(void *arg, Fabriciq__AgentHello *h);
	void (*correction)(void *arg, const Fabriciq__ClockCorrection *c);
	void (*peers)(void *arg, const Fabriciq__PeerAssignment *p);
	void (*advice)(void *arg, const Fabriciq__Advice *a); /* may be NULL */
	void (*retrace)(void *arg);                           /* may be NULL */
};

struct fq_uplink_config {
	const char *host; /* controller address (name or IPv4) */
	uint16_t port;
	const char *munge_socket; /* NULL: munged's default */
	int credential_ttl_s;     /* 0: munged's default */
	uid_t controller_uid;     /* the uid the controller's credential must carry */
	/* This node's key (agent.node_key): each AgentHello is signed with it
	 * (FQ_SIGN_NODE_HELLO over the Challenge nonce, ours and the node
	 * name). NULL: not signed. */
	const struct fq_signkey *node_key;
	/* The controller's public key (agent.controller_key): its Auth must be
	 * signed with it (FQ_SIGN_CONTROLLER_AUTH over our nonce and its
	 * Challenge nonce), besides its munge credential. NULL: not asked. */
	const uint8_t *controller_key;
};

struct fq_uplink;

struct fq_uplink *fq_uplink_create(struct event_base *base, const struct fq_uplink_config *cfg,
				   struct fq_spool *spool, const struct fq_uplink_ops *ops, void *arg);
void fq_uplink_destroy(struct fq_uplink *u);

/* New frames were appended to the spool: send them if connected. */
void fq_uplink_kick(struct fq_uplink *u);

int fq_uplink_connected(const struct fq_uplink *u);

/* {state, connects, auth_refusals, controller_auth_refused, disconnects, frames_sent, acked_seq,
 * acks_refused, corrections_refused, peers_refused, advice_refused, last_error} */
struct json_object *fq_uplink_counters(const struct fq_uplink *u);

#endif /* FQ_AGENT_UPLINK_H */
