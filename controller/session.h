/*
 * session: one agent connection (libevent bufferevent, no thread).
 *
 * Protocol (proto/fabriciq.proto): the controller sends Challenge{nonce,
 * max_frame}; the agent answers Auth{credential} within auth_timeout; the
 * credential must decode (munge) with payload == nonce and uid ==
 * agent_uid, else Result{code, message} is sent, one line naming the peer
 * and the reason is logged, and the connection closes. Then AgentHello,
 * then report frames. Oversized or undecodable frames are counted and
 * close the connection.
 */
#ifndef FQ_CONTROLLER_SESSION_H
#define FQ_CONTROLLER_SESSION_H

#include <stdint.h>
#include <sys/types.h>

#include "proto/fabriciq.pb-c.h"

struct event_base;
struct fq_session;

struct fq_session_stats {
	uint64_t connections, auth_ok, auth_failed, auth_timeout;
	uint64_t frames_oversized, frames_garbage, frames_unexpected;
	uint64_t connected; /* sessions now authenticated and past hello */
};

struct fq_session_ops {
	/* AgentHello accepted (ownership of env taken). Return 0, or a
	 * negative errno to refuse and close. */
	int (*hello)(void *arg, struct fq_session *s, Fabriciq__Envelope *env);
	/* A report frame (ownership taken). */
	void (*frame)(void *arg, struct fq_session *s, Fabriciq__Envelope *env);
	/* The session is about to be freed. */
	void (*closed)(void *arg, struct fq_session *s);
};

struct fq_session_config {
	const char *munge_socket; /* NULL: munged's default */
	uid_t agent_uid;
	size_t max_frame;
	int64_t auth_timeout_ns;
	size_t max_output; /* bytes queued to a slow agent before it is dropped */
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
/* Collision advice to this agent: job `job` should move its lanes off
 * local_nic -> remote_node/remote_nic for lifetime_ns from receipt; the
 * jobs collide on shared_nic with other_job (proto Advice). 0 or a
 * negative errno, as fq_session_send. */
int fq_session_send_advice(struct fq_session *s, uint64_t job, const char *local_nic, const char *remote_node,
			   const char *remote_nic, int64_t lifetime_ns, uint64_t other_job,
			   const char *shared_nic, int64_t now_ns);

const char *fq_session_peer(const struct fq_session *s);
const char *fq_session_node(const struct fq_session *s); /* NULL before hello */
void fq_session_set_user(struct fq_session *s, void *user);
void *fq_session_user(const struct fq_session *s);

#endif /* FQ_CONTROLLER_SESSION_H */
