/*
 * session: see session.h.
 */
#include "controller/session.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/frame.h"
#include "common/log.h"
#include "common/munge_cred.h"
#include "controller/authq.h"

enum state {
	AWAIT_AUTH,
	VERIFYING, /* the credential is with the authq: reading paused */
	AWAIT_HELLO,
	READY,
	CLOSING
};

struct fq_session {
	struct bufferevent *bev;
	struct event *timer; /* auth timeout, then the closing deadline */
	struct fq_frame_decoder *dec;
	struct fq_session_config cfg;
	struct fq_session_ops ops;
	void *arg, *user;
	struct fq_session_stats *stats;
	enum state state;
	bool in_cb, free_pending, counted;
	bool reply_wanted; /* the agent sent a nonce: answer with our own Auth */
	char peer[96];
	char *node;
	int64_t ticket;     /* the authq request while VERIFYING */
	size_t frame_limit; /* FQ_SESSION_AUTH_FRAME_MAX until authenticated, then max_frame */
	uint8_t nonce[FQ_MUNGE_NONCE_SIZE];       /* ours, in the Challenge */
	uint8_t agent_nonce[FQ_MUNGE_NONCE_SIZE]; /* the agent's, in its Auth (reply_wanted) */
};

static void session_free(struct fq_session *s)
{
	if (s->ops.closed)
		s->ops.closed(s->arg, s);
	if (s->counted)
		s->stats->connected--;
	if (s->ticket)
		fq_authq_cancel(s->cfg.authq, s->ticket);
	s->stats->open--;
	if (s->timer)
		event_free(s->timer);
	if (s->bev)
		bufferevent_free(s->bev);
	fq_frame_decoder_destroy(s->dec);
	free(s->node);
	free(s);
}

static void on_written(struct bufferevent *bev, void *arg)
{
	struct fq_session *s = arg;

	(void)bev;
	if (s->state == CLOSING && !s->in_cb)
		session_free(s);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct fq_session *s = arg;

	(void)fd;
	(void)what;
	if (s->state == CLOSING) {
		session_free(s);
		return;
	}
	if (s->state == AWAIT_AUTH || s->state == VERIFYING) {
		s->stats->auth_timeout++;
		fq_warn("agent %s: no authentication within %.1f s: closing", s->peer,
			(double)s->cfg.auth_timeout_ns / 1e9);
		fq_session_close(s, NULL);
	} else if (s->state == AWAIT_HELLO) {
		s->stats->hello_timeout++;
		fq_warn("agent %s: authenticated but no AgentHello within %.1f s: closing", s->peer,
			(double)s->cfg.auth_timeout_ns / 1e9);
		fq_session_close(s, NULL);
	}
}

static void arm_timer(struct fq_session *s)
{
	struct timeval tv = {(time_t)(s->cfg.auth_timeout_ns / 1000000000),
			     (suseconds_t)(s->cfg.auth_timeout_ns % 1000000000 / 1000)};

	event_del(s->timer);
	event_add(s->timer, &tv);
}

void fq_session_close(struct fq_session *s, const char *why)
{
	struct timeval tv = {2, 0};

	if (s->state == CLOSING)
		return;
	if (s->ticket) {
		fq_authq_cancel(s->cfg.authq, s->ticket);
		s->ticket = 0;
	}
	if (why)
		fq_info("agent %s%s%s: closing: %s", s->peer, s->node ? " " : "", s->node ? s->node : "",
			why);
	s->state = CLOSING;
	if (s->ops.closed) {
		s->ops.closed(s->arg, s);
		s->ops.closed = NULL;
	}
	bufferevent_disable(s->bev, EV_READ);
	/* Let queued frames (a Result) go out, but not for long. */
	if (evbuffer_get_length(bufferevent_get_output(s->bev)) == 0) {
		if (s->in_cb)
			s->free_pending = true;
		else
			session_free(s);
		return;
	}
	bufferevent_setcb(s->bev, NULL, on_written, NULL, s);
	event_del(s->timer);
	event_add(s->timer, &tv);
}

int fq_session_send(struct fq_session *s, const Fabriciq__Envelope *env)
{
	uint8_t *buf;
	size_t len;
	int rc;

	if (s->state == CLOSING)
		return -EPIPE;
	if (evbuffer_get_length(bufferevent_get_output(s->bev)) > s->cfg.max_output) {
		fq_session_close(s, "agent does not read what the controller sends");
		return -ENOBUFS;
	}
	if ((rc = fq_frame_encode(env, s->cfg.max_frame, &buf, &len)) < 0)
		return rc;
	rc = bufferevent_write(s->bev, buf, len) < 0 ? -ENOMEM : 0;
	free(buf);
	return rc;
}

int fq_session_send_advice(struct fq_session *s, uint64_t job, const char *local_nic, const char *remote_node,
			   const char *remote_nic, uint16_t port, int64_t lifetime_ns, uint64_t other_job,
			   const char *shared, int64_t now_ns)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__Advice a = FABRICIQ__ADVICE__INIT;

	a.job_id = job;
	a.kind = "move";
	a.local_nic = (char *)(local_nic ? local_nic : "");
	a.remote_node = (char *)(remote_node ? remote_node : "");
	a.remote_nic = (char *)(remote_nic ? remote_nic : "");
	a.lifetime_ns = lifetime_ns;
	a.local_port = port;
	a.collides_with_job = other_job;
	if (shared && strchr(shared, '>'))
		a.shared_link = (char *)shared;
	else
		a.shared_nic = (char *)(shared ? shared : "");
	env.version = FQ_PROTOCOL_VERSION;
	env.sent_ns = now_ns;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_ADVICE;
	env.advice = &a;
	return fq_session_send(s, &env);
}

int fq_session_ack(struct fq_session *s, uint64_t seq)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__Ack ack = FABRICIQ__ACK__INIT;

	ack.seq = seq;
	env.version = FQ_PROTOCOL_VERSION;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_ACK;
	env.ack = &ack;
	return fq_session_send(s, &env);
}

static void send_result(struct fq_session *s, int code, const char *msg)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__Result res = FABRICIQ__RESULT__INIT;

	res.code = code;
	res.message = (char *)msg;
	env.version = FQ_PROTOCOL_VERSION;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_RESULT;
	env.result = &res;
	fq_session_send(s, &env);
}

static void pump_input(struct fq_session *s);

static void refuse_auth(struct fq_session *s, int rc, const char *err)
{
	char msg[320];

	s->stats->auth_failed++;
	fq_warn("agent %s: authentication refused: %s", s->peer, err[0] ? err : strerror(-rc));
	snprintf(msg, sizeof(msg), "authentication refused: %s", err[0] ? err : strerror(-rc));
	send_result(s, -rc, msg);
	fq_session_close(s, NULL);
}

/* The controller's own Auth, for the agent's nonce. */
static void send_auth(struct fq_session *s, const char *cred)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__Auth au = FABRICIQ__AUTH__INIT;
	uint8_t sig[FQ_SIGN_SIZE];
	const struct fq_sign_part parts[] = {{s->agent_nonce, sizeof(s->agent_nonce)},
					     {s->nonce, sizeof(s->nonce)}};

	au.credential = (char *)cred;
	if (s->cfg.key && fq_sign(s->cfg.key, FQ_SIGN_CONTROLLER_AUTH, parts, 2, sig) == 0) {
		au.signature.data = sig;
		au.signature.len = sizeof(sig);
	}
	env.version = FQ_PROTOCOL_VERSION;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_AUTH;
	env.auth = &au;
	fq_session_send(s, &env);
}

/* The authq's verdict, on the loop. */
static void on_verdict(void *arg, int rc, uid_t uid, const char *err, const char *reply)
{
	struct fq_session *s = arg;

	(void)uid;
	s->ticket = 0;
	s->state = AWAIT_AUTH;
	if (rc < 0) {
		refuse_auth(s, rc, err); /* frees s, now or once the Result is out */
		return;
	}
	if (s->reply_wanted && !reply) {
		s->stats->auth_failed++;
		fq_error("agent %s: cannot mint the controller's credential: %s", s->peer, err);
		send_result(s, EAGAIN, "the controller cannot authenticate itself: retry");
		fq_session_close(s, NULL);
		return;
	}
	if (reply)
		send_auth(s, reply);
	s->stats->auth_ok++;
	s->state = AWAIT_HELLO;
	s->frame_limit = s->cfg.max_frame;
	fq_frame_decoder_set_max(s->dec, s->frame_limit);
	arm_timer(s); /* now for the AgentHello */
	bufferevent_enable(s->bev, EV_READ);
	pump_input(s); /* frames that came while the credential was checked */
}

static void on_auth(struct fq_session *s, Fabriciq__Envelope *env)
{
	int64_t ticket;

	if (env->payload_case != FABRICIQ__ENVELOPE__PAYLOAD_AUTH) {
		s->stats->auth_failed++;
		fq_warn("agent %s: authentication refused: expected Auth, got payload %d", s->peer,
			(int)env->payload_case);
		send_result(s, EACCES, "authentication required: send Auth first");
		fq_session_close(s, NULL);
		return;
	}
	if (env->auth->nonce.len && env->auth->nonce.len != FQ_MUNGE_NONCE_SIZE) {
		refuse_auth(s, -EPROTO, "the agent's nonce is not 16 bytes");
		return;
	}
	s->reply_wanted = env->auth->nonce.len == FQ_MUNGE_NONCE_SIZE;
	if (s->reply_wanted)
		memcpy(s->agent_nonce, env->auth->nonce.data, sizeof(s->agent_nonce));
	ticket = fq_authq_submit(s->cfg.authq, env->auth->credential, s->nonce, s->cfg.agent_uid,
				 s->reply_wanted ? env->auth->nonce.data : NULL, on_verdict, s);
	if (ticket == -EBUSY) {
		s->stats->auth_busy++;
		fq_log_rl(FQ_LOG_WARN, "agent %s: credential checks queue full: closing (it will retry)",
			  s->peer);
		send_result(s, EAGAIN, "controller busy checking credentials: retry");
		fq_session_close(s, NULL);
		return;
	}
	if (ticket < 0) {
		refuse_auth(s, (int)ticket, "");
		return;
	}
	s->ticket = ticket;
	s->state = VERIFYING;
	bufferevent_disable(s->bev, EV_READ);
}

static void on_envelope(struct fq_session *s, Fabriciq__Envelope *env)
{
	char why[256] = "AgentHello refused";
	int rc;

	switch (s->state) {
	case AWAIT_AUTH:
		on_auth(s, env);
		fq_frame_free(env);
		return;
	case AWAIT_HELLO:
		if (env->payload_case != FABRICIQ__ENVELOPE__PAYLOAD_HELLO || !env->hello->node[0]) {
			s->stats->frames_unexpected++;
			send_result(s, EPROTO, "expected AgentHello with a node name");
			fq_session_close(s, "first frame after Auth is not an AgentHello with a node name");
			fq_frame_free(env);
			return;
		}
		if (!(s->node = strdup(env->hello->node))) {
			fq_frame_free(env);
			fq_session_close(s, "out of memory");
			return;
		}
		event_del(s->timer);
		s->state = READY;
		s->counted = true;
		s->stats->connected++;
		if ((rc = s->ops.hello(s->arg, s, env, why, sizeof(why))) < 0) {
			send_result(s, -rc, why);
			fq_session_close(s, why);
		}
		return;
	case READY:
		s->ops.frame(s->arg, s, env);
		return;
	case VERIFYING: /* not reached: frames wait in the decoder meanwhile */
	case CLOSING:
		fq_frame_free(env);
		return;
	}
}

static bool takes_frames(const struct fq_session *s)
{
	return s->state != CLOSING && s->state != VERIFYING;
}

/* Feeds one slice of received bytes and handles the frames it completes. */
static void feed(struct fq_session *s, const void *data, size_t len)
{
	Fabriciq__Envelope *env;
	int rc;

	if ((rc = fq_frame_decoder_feed(s->dec, data, len)) < 0 && rc != -EMSGSIZE) {
		fq_session_close(s, strerror(-rc));
		return;
	}
	while (takes_frames(s) && (rc = fq_frame_decoder_next(s->dec, &env)) != 0) {
		if (rc == 1) {
			on_envelope(s, env);
			continue;
		}
		if (rc == -EMSGSIZE) {
			s->stats->frames_oversized++;
			fq_log_rl(FQ_LOG_WARN, "agent %s: frame over the %zu-byte limit%s: closing", s->peer,
				  s->frame_limit, s->state == AWAIT_AUTH ? " before authentication" : "");
		} else {
			s->stats->frames_garbage++;
			fq_log_rl(FQ_LOG_WARN, "agent %s: undecodable frame (%s): closing", s->peer,
				  strerror(-rc));
		}
		fq_session_close(s, NULL);
		return;
	}
}

/* The bytes are fed from libevent's buffer in place (evbuffer_peek), in
 * slices of at most 64 KiB so the decoder's buffer stays bounded: one copy
 * fewer per byte than removing them into a buffer of ours first. */
#define FEED_SLICE 65536

/* Feeds what the input buffer holds (and the decoder kept) while the
 * session takes frames; frees the session if it closed meanwhile. */
static void pump_input(struct fq_session *s)
{
	struct evbuffer *in = bufferevent_get_input(s->bev);

	s->in_cb = true;
	feed(s, NULL, 0);
	while (takes_frames(s) && evbuffer_get_length(in) > 0) {
		struct evbuffer_iovec v[16];
		int n = evbuffer_peek(in, -1, NULL, v, 16);
		size_t used = 0;

		for (int i = 0; i < n && i < 16 && takes_frames(s); i++)
			for (size_t off = 0; off < v[i].iov_len && takes_frames(s);) {
				size_t len =
				    v[i].iov_len - off < FEED_SLICE ? v[i].iov_len - off : FEED_SLICE;
				feed(s, (const uint8_t *)v[i].iov_base + off, len);
				off += len;
				used += len;
			}
		evbuffer_drain(in, used);
	}
	s->in_cb = false;
	if (s->free_pending || (s->state == CLOSING && !evbuffer_get_length(bufferevent_get_output(s->bev))))
		session_free(s);
}

static void on_read(struct bufferevent *bev, void *arg)
{
	(void)bev;
	pump_input(arg);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	struct fq_session *s = arg;

	(void)bev;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		if (s->state == READY)
			fq_info("agent %s %s: disconnected", s->peer, s->node);
		s->state = CLOSING;
		session_free(s);
	}
}

struct fq_session *fq_session_create(struct event_base *base, int fd, const char *peer,
				     const struct fq_session_config *c, const struct fq_session_ops *ops,
				     void *arg, struct fq_session_stats *stats)
{
	struct fq_session *s = calloc(1, sizeof(*s));
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__Challenge ch = FABRICIQ__CHALLENGE__INIT;

	if (!s) {
		evutil_closesocket(fd);
		return NULL;
	}
	s->cfg = *c;
	s->ops = *ops;
	s->arg = arg;
	s->stats = stats;
	stats->open++;
	snprintf(s->peer, sizeof(s->peer), "%s", peer);
	s->bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
	s->frame_limit = FQ_SESSION_AUTH_FRAME_MAX;
	s->dec = fq_frame_decoder_create(s->frame_limit);
	s->timer = event_new(base, -1, 0, on_timer, s);
	if (!s->bev) {
		evutil_closesocket(fd);
		goto fail;
	}
	if (!s->dec || !s->timer || fq_munge_nonce(s->nonce) < 0)
		goto fail;
	stats->connections++;
	bufferevent_setcb(s->bev, on_read, NULL, on_event, s);
	bufferevent_enable(s->bev, EV_READ | EV_WRITE);
	arm_timer(s);
	ch.nonce.data = s->nonce;
	ch.nonce.len = sizeof(s->nonce);
	ch.max_frame = (uint32_t)c->max_frame;
	env.version = FQ_PROTOCOL_VERSION;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_CHALLENGE;
	env.challenge = &ch;
	if (fq_session_send(s, &env) < 0)
		goto fail;
	return s;

fail:
	s->ops.closed = NULL;
	session_free(s);
	return NULL;
}

bool fq_session_node_signed(const struct fq_session *s, const uint8_t public[FQ_SIGN_PUBLIC_SIZE],
			    const Fabriciq__AgentHello *h)
{
	const struct fq_sign_part parts[] = {
	    {s->nonce, sizeof(s->nonce)},
	    {s->agent_nonce, s->reply_wanted ? sizeof(s->agent_nonce) : 0},
	    {h->node, strlen(h->node)},
	};

	return fq_sign_verify(public, FQ_SIGN_NODE_HELLO, parts, 3, h->node_signature.data,
			      h->node_signature.len);
}

const char *fq_session_peer(const struct fq_session *s)
{
	return s->peer;
}

const char *fq_session_node(const struct fq_session *s)
{
	return s->node;
}

void fq_session_set_user(struct fq_session *s, void *user)
{
	s->user = user;
}

void *fq_session_user(const struct fq_session *s)
{
	return s->user;
}
