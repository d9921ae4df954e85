/*
 * session: one agent connection (libevent bufferevent, on the loop's
 * thread; only the munge decode runs elsewhere, in the authq).
 *
 * Protocol (proto/fabriciq.proto): the controller sends Challenge{nonce,
 * max_frame}; the agent answers Auth{credential} within auth_timeout; the
 * credential must decode (munge) with payload == nonce and uid ==
 * agent_uid, else Result{code, message} is sent, one line naming the peer
 * and the reason is logged, and the connection closes. When the Auth
 * carries a nonce of the agent's, the accepted Auth is answered with the
 * controller's own Auth: a credential minted by this process (its uid)
 * with that nonce as payload, so the agent knows it talks to the
 * controller (slurmd-agent/uplink.h); if none can be minted the agent gets
 * Result{EAGAIN} and the connection closes. With a key of its own
 * (controller.key), that Auth is also signed (common/signkey.h), so an
 * agent given the controller's public key knows it is this controller,
 * not root elsewhere with a munge credential. Then AgentHello (its node
 * name checked by the caller: fq_session_node_signed), then report
 * frames. Oversized or undecodable frames are counted and
 * close the connection.
 *
 * What an unauthenticated peer can cost (the agent port is reachable by
 * anyone on the management network):
 *  - frames before authentication are limited to FQ_SESSION_AUTH_FRAME_MAX
 *    bytes (an Auth is a few hundred): a longer announced length closes
 *    the connection before anything is allocated for it; max_frame applies
 *    only once the credential has been accepted;
 *  - the credential is decoded by the authq (controller/authq.h), off the
 *    event loop; while it is, the session reads nothing more; a full queue
 *    is answered Result{EAGAIN} and closed (the agent retries);
 *  - auth_timeout bounds both steps: Auth (and its decode) within
 *    auth_timeout of the connect, then AgentHello within auth_timeout of
 *    the accepted Auth, else the connection is closed and counted
 *    (auth_timeout, hello_timeout);
 *  - how many sessions may be open at once, and per source address before
 *    AgentHello, is the caller's to cap (controller.c, on accept; `open`
 *    below counts them).
 */
#ifndef FQ_CONTROLLER_SESSION_H
#define FQ_CONTROLLER_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/signkey.h"

#include "proto/fabriciq.pb-c.h"

struct event_base;
struct fq_authq;
struct fq_session;

/* Frames before authentication: Auth is the only one, a munge credential
 * (a few hundred bytes of base64) in an Envelope. */
#define FQ_SESSION_AUTH_FRAME_MAX 2048

struct fq_session_stats {
	uint64_t connections, auth_ok, auth_failed, auth_timeout, hello_timeout, auth_busy;
	uint64_t frames_oversized, frames_garbage, frames_unexpected;
	uint64_t connected;    /* sessions now authenticated and past hello */
	uint64_t open;         /* sessions now open, in any state */
	uint64_t refused;      /* connections refused on accept (the caller's caps) */
	uint64_t node_refused; /* AgentHellos refused for their node name (nodebind.h) */
};

struct fq_session_ops {
	/* AgentHello accepted (ownership of env taken). Return 0, or a
	 * negative errno to refuse: the session then sends Result{errno, why}
	 * (why: whylen bytes to fill with the reason), logs it and closes. */
	int (*hello)(void *arg, struct fq_session *s, Fabriciq__Envelope *env, char *why, size_t whylen);
	/* A report frame (ownership taken). */
	void (*frame)(void *arg, struct fq_session *s, Fabriciq__Envelope *env);
	/* The session is about to be freed. */
	void (*closed)(void *arg, struct fq_session *s);
};

struct fq_session_config {
	struct fq_authq *authq; /* decodes the credentials (the caller's, shared) */
	uid_t agent_uid;
	size_t max_frame;
	int64_t auth_timeout_ns;
	size_t max_output; /* bytes queued to a slow agent before it is dropped */
	/* The controller's key (controller.key): its Auth to an agent is
	 * signed with it (the agent's nonce, then ours). NULL: not signed. */
	const struct fq_signkey *key;
};

/* Takes fd (a connected socket). NULL on failure (fd closed). */
struct fq_session *fq_session_create(struct event_base *base, int fd, const char *peer,
				     const struct fq_session_config *c, const struct fq_session_ops *ops,
				     void *arg, struct fq_session_stats *stats);
/* Closes and frees (calls ops->closed). */
void fq_session_close(struct fq_session *s, const char *why);

/* Sends one envelope; 0 or a negative errno (the session is then closing). */
int fq_session_send(struct fq_session *s, const Fabriciq__Envelope *env);
int fq_session_ack(struct fq_session *s, uint64_t seq);
/* Collision advice to this agent: job `job` should move its lane with
 * source port `port` (0: one of them) off local_nic ->
 * remote_node/remote_nic for lifetime_ns from receipt; the jobs collide
 * with other_job at `shared`: a NIC "node/nic" (proto Advice.shared_nic)
 * or a switch link "A>B" (shared_link). 0 or a negative errno, as
 * fq_session_send. */
int fq_session_send_advice(struct fq_session *s, uint64_t job, const char *local_nic, const char *remote_node,
			   const char *remote_nic, uint16_t port, int64_t lifetime_ns, uint64_t other_job,
			   const char *shared, int64_t now_ns);

/* Does h's node_signature sign this connection's hello for h->node with
 * the key public (common/signkey.h: FQ_SIGN_NODE_HELLO over our Challenge
 * nonce, the agent's Auth nonce and the node name)? For the hello
 * callback. */
bool fq_session_node_signed(const struct fq_session *s, const uint8_t public[FQ_SIGN_PUBLIC_SIZE],
			    const Fabriciq__AgentHello *h);

const char *fq_session_peer(const struct fq_session *s);
const char *fq_session_node(const struct fq_session *s); /* NULL before hello */
void fq_session_set_user(struct fq_session *s, void *user);
void *fq_session_user(const struct fq_session *s);

#endif /* FQ_CONTROLLER_SESSION_H */
