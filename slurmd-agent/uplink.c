/* uplink: authenticated, spooled connection to the controller (see uplink.h). */
#include "slurmd-agent/uplink.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <math.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/clock.h"
#include "common/frame.h"
#include "common/log.h"
#include "common/munge_cred.h"
#include "slurmd-agent/worker.h"

#define BACKOFF_MIN_MS 500
#define BACKOFF_MAX_MS 5000
#define AUTH_TIMEOUT_S 10
#define HIGH_WATER     (256u << 10) /* stop reading the spool above this much unsent output */
#define IN_MAX         (4u << 20)

enum state {
	IDLE,       /* waiting to (re)connect */
	RESOLVING,  /* the controller's name being resolved (worker) */
	CONNECTING, /* TCP connect in progress */
	CHALLENGED, /* waiting for the controller's challenge */
	SIGNING,    /* our credential for its challenge being minted (worker) */
	AWAIT_AUTH, /* answered: waiting for the controller's own Auth */
	CHECKING,   /* the controller's credential being decoded (worker) */
	STREAMING,  /* both authenticated: sending the spool */
};

static const char *const state_names[] = {"disconnected",   "connecting",     "connecting",
					  "authenticating", "authenticating", "authenticating",
					  "authenticating", "connected"};

/* The blocking calls (getaddrinfo, munge_encode, munge_decode) run on the
 * uplink's worker, one at a time; a stuck resolver or munged delays the
 * connection, never the agent's loop. */
enum call_kind {
	RESOLVE,
	SIGN,
	CHECK
};

struct call {
	struct fq_job job;
	struct fq_uplink *u;
	uint64_t conn; /* u->conn_id when asked: stale once that connection is gone */
	enum call_kind kind;
	/* inputs, the call's own */
	char host[256];
	uint16_t port;
	const char *munge_socket; /* u's: fixed once created */
	int ttl_s;
	uid_t want_uid;
	uint8_t nonce[FQ_MUNGE_NONCE_SIZE];
	char *cred; /* CHECK: the controller's (copy); SIGN: ours, minted */
	/* outputs */
	struct sockaddr_storage addr;
	socklen_t addrlen;
	int rc;
	uid_t uid;
	char err[256];
};

struct fq_uplink {
	struct event_base *base;
	struct fq_uplink_config cfg;
	char host[256];
	char munge_socket[4096];
	struct fq_spool *spool;
	struct fq_uplink_ops ops;
	void *arg;
	enum state state;
	struct bufferevent *bev;
	struct fq_frame_decoder *dec;
	struct event *retry_ev;
	unsigned backoff_ms;
	struct fq_worker *worker;
	struct call *call; /* in flight on the worker, or NULL */
	bool closing;
	uint64_t conn_id; /* counts connections: a call for an older one is stale */
	uint8_t *sendbuf;
	uint64_t connects, refusals, disconnects, frames_sent, acked;
	uint64_t acks_refused, corrections_refused, peers_refused, advice_refused, controller_auth_refused;
	uint8_t nonce[FQ_MUNGE_NONCE_SIZE];     /* ours, the controller's Auth must carry it */
	uint8_t challenge[FQ_MUNGE_NONCE_SIZE]; /* the controller's, from its Challenge */
	uint8_t controller_key[FQ_SIGN_PUBLIC_SIZE];
	bool want_key;         /* agent.controller_key set: controller_key holds it */
	int64_t correction_at; /* local raw time of the last correction passed on */
	char last_error[256];
};

static void schedule_retry(struct fq_uplink *u);

static void set_error(struct fq_uplink *u, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_error(struct fq_uplink *u, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(u->last_error, sizeof(u->last_error), fmt, ap);
	va_end(ap);
	fq_log_rl(FQ_LOG_WARN, "controller %s:%u: %s", u->host, u->cfg.port, u->last_error);
}

static void drop_connection(struct fq_uplink *u)
{
	u->conn_id++;
	if (u->bev) {
		bufferevent_free(u->bev);
		u->bev = NULL;
	}
	fq_frame_decoder_destroy(u->dec);
	u->dec = NULL;
	if (u->state == STREAMING)
		u->disconnects++;
	u->state = IDLE;
	schedule_retry(u);
}

static int send_env(struct fq_uplink *u, Fabriciq__Envelope *env)
{
	uint8_t *buf;
	size_t len;
	int rc;

	env->version = FQ_PROTOCOL_VERSION;
	rc = fq_frame_encode(env, IN_MAX, &buf, &len);
	if (rc < 0)
		return rc;
	rc = bufferevent_write(u->bev, buf, len) < 0 ? -ENOMEM : 0;
	free(buf);
	return rc;
}

/* Stream spooled frames until the output buffer is above its high water. */
static void pump(struct fq_uplink *u)
{
	struct evbuffer *out;

	if (u->state != STREAMING)
		return;
	out = bufferevent_get_output(u->bev);
	while (evbuffer_get_length(out) < HIGH_WATER) {
		uint64_t seq;
		int64_t n = fq_spool_next(u->spool, u->sendbuf, IN_MAX + FQ_FRAME_HEADER_SIZE, &seq);
		if (n <= 0) {
			if (n < 0)
				fq_log_rl(FQ_LOG_ERROR, "spool: cannot read the next frame: %s",
					  strerror((int)-n));
			return;
		}
		evbuffer_add(out, u->sendbuf, (size_t)n);
		u->frames_sent++;
	}
}

static void on_write(struct bufferevent *bev, void *arg)
{
	(void)bev;
	pump(arg);
}

static void call_done(struct fq_job *j, bool ran);

static void call_run(struct fq_job *j)
{
	struct call *c = (struct call *)j;
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai = NULL;
	char port[8];

	switch (c->kind) {
	case RESOLVE:
		snprintf(port, sizeof(port), "%u", c->port);
		c->rc = getaddrinfo(c->host, port, &hints, &ai);
		if (c->rc != 0) {
			snprintf(c->err, sizeof(c->err), "cannot resolve: %s", gai_strerror(c->rc));
			c->rc = -EHOSTUNREACH;
			return;
		}
		memcpy(&c->addr, ai->ai_addr, ai->ai_addrlen);
		c->addrlen = ai->ai_addrlen;
		freeaddrinfo(ai);
		return;
	case SIGN:
		c->rc = fq_munge_encode(c->munge_socket, c->nonce, sizeof(c->nonce), c->ttl_s, &c->cred,
					c->err, sizeof(c->err));
		return;
	case CHECK:
		c->rc = fq_munge_decode(c->munge_socket, c->cred, c->nonce, sizeof(c->nonce), c->want_uid,
					&c->uid, NULL, c->err, sizeof(c->err));
		return;
	}
}

/* Hand a call of the current connection to the worker (the uplink has at
 * most one in flight); NULL without memory. */
static struct call *ask(struct fq_uplink *u, enum call_kind kind, enum state wait_in)
{
	struct call *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->job = (struct fq_job){.run = call_run, .done = call_done};
	c->u = u;
	c->conn = u->conn_id;
	c->kind = kind;
	c->munge_socket = u->cfg.munge_socket;
	u->call = c;
	u->state = wait_in;
	return c;
}

static int answer_challenge(struct fq_uplink *u, const Fabriciq__Challenge *ch)
{
	struct call *c;

	if (ch->nonce.len != FQ_MUNGE_NONCE_SIZE) {
		set_error(u, "challenge with a %zu-byte nonce (expected %d)", ch->nonce.len,
			  FQ_MUNGE_NONCE_SIZE);
		return -EPROTO;
	}
	c = ask(u, SIGN, SIGNING);
	if (!c)
		return -ENOMEM;
	memcpy(c->nonce, ch->nonce.data, sizeof(c->nonce));
	memcpy(u->challenge, ch->nonce.data, sizeof(u->challenge));
	c->ttl_s = u->cfg.credential_ttl_s;
	fq_worker_submit(u->worker, &c->job);
	return 0;
}

/* Our credential is minted: send it with a nonce of ours, and the hello. */
static int send_auth(struct fq_uplink *u, const struct call *c)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__Auth auth = FABRICIQ__AUTH__INIT;
	Fabriciq__AgentHello hello = FABRICIQ__AGENT_HELLO__INIT;
	uint8_t sig[FQ_SIGN_SIZE];
	int rc;

	if (c->rc < 0) {
		set_error(u, "cannot mint a munge credential: %s", c->err);
		return c->rc;
	}
	if ((rc = fq_munge_nonce(u->nonce)) < 0) {
		set_error(u, "cannot draw a nonce: %s", strerror(-rc));
		return rc;
	}
	auth.credential = c->cred;
	auth.nonce.data = u->nonce;
	auth.nonce.len = sizeof(u->nonce);
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_AUTH;
	env.auth = &auth;
	rc = send_env(u, &env);
	if (rc < 0)
		return rc;
	u->ops.hello(u->arg, &hello);
	hello.next_seq = fq_spool_first_unconfirmed(u->spool);
	hello.fresh_seq = fq_spool_fresh_seq(u->spool);
	if (u->cfg.node_key) {
		const struct fq_sign_part parts[] = {
		    {u->challenge, sizeof(u->challenge)},
		    {u->nonce, sizeof(u->nonce)},
		    {hello.node, strlen(hello.node)},
		};

		if ((rc = fq_sign(u->cfg.node_key, FQ_SIGN_NODE_HELLO, parts, 3, sig)) < 0) {
			set_error(u, "cannot sign the hello: %s", strerror(-rc));
			return rc;
		}
		hello.node_signature.data = sig;
		hello.node_signature.len = sizeof(sig);
	}
	env = (Fabriciq__Envelope)FABRICIQ__ENVELOPE__INIT;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_HELLO;
	env.hello = &hello;
	rc = send_env(u, &env);
	if (rc < 0)
		return rc;
	u->state = AWAIT_AUTH; /* the read timeout still runs */
	return 0;
}

/* The controller's own Auth: its credential must carry our nonce and the
 * controller's uid (checked on the worker), else the connection is dropped. */
static int check_controller(struct fq_uplink *u, const Fabriciq__Auth *a)
{
	const struct fq_sign_part parts[] = {{u->nonce, sizeof(u->nonce)},
					     {u->challenge, sizeof(u->challenge)}};
	struct call *c;

	if (u->want_key && !fq_sign_verify(u->controller_key, FQ_SIGN_CONTROLLER_AUTH, parts, 2,
					   a->signature.data, a->signature.len)) {
		u->controller_auth_refused++;
		set_error(u, "the controller did not authenticate: its answer is %s (agent.controller_key)",
			  a->signature.len ? "not signed by the controller's key" : "not signed");
		return -EACCES;
	}
	c = ask(u, CHECK, CHECKING);
	if (!c || !(c->cred = strdup(a->credential ? a->credential : ""))) {
		free(c);
		u->call = NULL;
		return -ENOMEM;
	}
	memcpy(c->nonce, u->nonce, sizeof(c->nonce));
	c->want_uid = u->cfg.controller_uid;
	fq_worker_submit(u->worker, &c->job);
	return 0;
}

static int controller_checked(struct fq_uplink *u, const struct call *c)
{
	if (c->rc < 0) {
		u->controller_auth_refused++;
		set_error(u, "the controller did not authenticate: %s",
			  c->err[0] ? c->err : strerror(-c->rc));
		return -EACCES;
	}
	u->state = STREAMING;
	bufferevent_set_timeouts(u->bev, NULL, NULL);
	u->backoff_ms = 0;
	u->last_error[0] = '\0';
	fq_info("controller %s:%u: connected (authenticated, uid %u), resending from seq %llu", u->host,
		u->cfg.port, (unsigned)c->uid, (unsigned long long)fq_spool_first_unacked(u->spool));
	fq_spool_rewind(u->spool);
	pump(u);
	return 0;
}

static bool name_ok(const char *s, size_t max)
{
	return s && *s && strnlen(s, max + 1) <= max;
}

/* The controller's clock correction, bounded (uplink.h). */
static bool correction_ok(struct fq_uplink *u, const Fabriciq__ClockCorrection *c)
{
	int64_t raw = fq_now_ns(), real = fq_realtime_ns();
	/* the global time this correction implies now: local - offset + E_ref */
	double global = (double)raw - (double)c->offset_ns + (double)c->reference_epoch_ns;
	const char *why = NULL;

	if (!name_ok(c->reference_node, FQ_UPLINK_NAME_MAX))
		why = "no valid reference node";
	else if (fabs(global - (double)real) > (double)FQ_UPLINK_CLOCK_MAX_NS)
		why = "its global time is too far from this host's real-time clock";
	else if (!(fabs(c->drift_ppb) <= FQ_UPLINK_DRIFT_MAX_PPB))
		why = "drift out of range";
	else if (c->error_bound_ns < 0 || c->error_bound_ns > FQ_UPLINK_CLOCK_MAX_NS)
		why = "error bound out of range";
	else if (u->correction_at && raw - u->correction_at < FQ_UPLINK_CORRECTION_MIN_NS)
		why = "too soon after the previous one";
	if (why) {
		u->corrections_refused++;
		fq_log_rl(FQ_LOG_WARN,
			  "controller %s:%u: clock correction epoch %llu refused: %s (global - real %.0f ns)",
			  u->host, u->cfg.port, (unsigned long long)c->epoch, why, global - (double)real);
		return false;
	}
	u->correction_at = raw;
	return true;
}

static bool peers_ok(struct fq_uplink *u, const Fabriciq__PeerAssignment *p)
{
	size_t total = 0;
	const char *why = NULL;

	for (size_t i = 0; i < p->n_nics && !why; i++) {
		const Fabriciq__PeerAssignment__NicPeers *np = p->nics[i];

		if (!name_ok(np->local_nic, FQ_UPLINK_NAME_MAX))
			why = "a NIC entry without a valid local NIC name";
		total += np->n_peers;
		for (size_t j = 0; j < np->n_peers && !why; j++)
			if (!name_ok(np->peers[j]->node, FQ_UPLINK_NAME_MAX) ||
			    !name_ok(np->peers[j]->nic, FQ_UPLINK_NAME_MAX) ||
			    !name_ok(np->peers[j]->address, FQ_UPLINK_NAME_MAX))
				why = "a peer without a valid node, NIC or address";
	}
	if (!why && total > FQ_UPLINK_PEERS_MAX)
		why = "too many peers";
	if (why) {
		u->peers_refused++;
		fq_log_rl(FQ_LOG_WARN, "controller %s:%u: peer assignment %llu refused: %s", u->host,
			  u->cfg.port, (unsigned long long)p->epoch, why);
		return false;
	}
	return true;
}

static bool advice_ok(struct fq_uplink *u, const Fabriciq__Advice *a)
{
	if (a->kind && (!strcmp(a->kind, "move") || !strcmp(a->kind, "rate")) && a->job_id &&
	    name_ok(a->local_nic, FQ_UPLINK_NAME_MAX) && a->lifetime_ns > 0 &&
	    a->lifetime_ns <= FQ_UPLINK_ADVICE_MAX_NS)
		return true;
	u->advice_refused++;
	fq_log_rl(FQ_LOG_WARN,
		  "controller %s:%u: advice for job %llu refused: not a move or rate advice with a job, a "
		  "local NIC and a lifetime of at most %lld s",
		  u->host, u->cfg.port, (unsigned long long)a->job_id,
		  (long long)(FQ_UPLINK_ADVICE_MAX_NS / 1000000000));
	return false;
}

/* One frame from the controller: 0, or a negative errno to drop the connection. */
static int on_frame(struct fq_uplink *u, Fabriciq__Envelope *env)
{
	switch (env->payload_case) {
	case FABRICIQ__ENVELOPE__PAYLOAD_CHALLENGE:
		if (u->state != CHALLENGED) {
			set_error(u, "unexpected second challenge");
			return -EPROTO;
		}
		return answer_challenge(u, env->challenge);
	case FABRICIQ__ENVELOPE__PAYLOAD_AUTH:
		if (u->state != AWAIT_AUTH) {
			set_error(u, "unexpected Auth from the controller");
			return -EPROTO;
		}
		return check_controller(u, env->auth);
	case FABRICIQ__ENVELOPE__PAYLOAD_RESULT:
		if (env->result->code) {
			u->refusals++;
			set_error(u, "refused: %s (%s)", env->result->message ? env->result->message : "",
				  strerror(env->result->code));
			return -EACCES;
		}
		return 0;
	case FABRICIQ__ENVELOPE__PAYLOAD_ACK:
		if (u->state != STREAMING)
			return -EPROTO;
		if (env->ack->seq >= fq_spool_next_seq(u->spool)) {
			u->acks_refused++;
			set_error(
			    u,
			    "ack of seq %llu refused: no frame beyond %llu was ever spooled: dropping the "
			    "connection, the spool is kept",
			    (unsigned long long)env->ack->seq,
			    (unsigned long long)fq_spool_next_seq(u->spool) - 1);
			return -EPROTO;
		}
		if (env->ack->seq > u->acked)
			u->acked = env->ack->seq;
		fq_spool_ack(u->spool, env->ack->seq);
		return 0;
	case FABRICIQ__ENVELOPE__PAYLOAD_CORRECTION:
		if (u->state == STREAMING && u->ops.correction && correction_ok(u, env->correction))
			u->ops.correction(u->arg, env->correction);
		return 0;
	case FABRICIQ__ENVELOPE__PAYLOAD_PEERS:
		if (u->state == STREAMING && u->ops.peers && peers_ok(u, env->peers))
			u->ops.peers(u->arg, env->peers);
		return 0;
	case FABRICIQ__ENVELOPE__PAYLOAD_ADVICE:
		if (u->state == STREAMING && u->ops.advice && advice_ok(u, env->advice))
			u->ops.advice(u->arg, env->advice);
		return 0;
	case FABRICIQ__ENVELOPE__PAYLOAD_RETRACE:
		if (u->state == STREAMING && u->ops.retrace)
			u->ops.retrace(u->arg);
		return 0;
	default:
		return 0; /* a kind this agent does not know: ignored (proto versioning rules) */
	}
}

static void on_read(struct bufferevent *bev, void *arg)
{
	struct fq_uplink *u = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	uint8_t buf[16384];
	int n;

	while ((n = evbuffer_remove(in, buf, sizeof(buf))) > 0) {
		Fabriciq__Envelope *env;
		int rc;

		if (fq_frame_decoder_feed(u->dec, buf, (size_t)n) < 0)
			goto drop;
		while ((rc = fq_frame_decoder_next(u->dec, &env)) != 0) {
			if (rc < 0) {
				set_error(u, "bad frame from the controller: %s", strerror(-rc));
				goto drop;
			}
			rc = on_frame(u, env);
			fq_frame_free(env);
			if (rc < 0)
				goto drop;
		}
	}
	return;
drop:
	drop_connection(u);
}

/* What did not come while the connection's read timeout ran. */
static const char *waiting_for(enum state st)
{
	switch (st) {
	case SIGNING:
		return "munged minted no credential";
	case AWAIT_AUTH:
		return "the controller did not authenticate";
	case CHECKING:
		return "munged did not check the controller's credential";
	default:
		return "no challenge";
	}
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	struct fq_uplink *u = arg;
	struct timeval tv = {AUTH_TIMEOUT_S, 0};

	(void)bev;
	if (what & BEV_EVENT_CONNECTED) {
		u->connects++;
		u->state = CHALLENGED;
		/* the challenge must come soon; once streaming, no read timeout */
		bufferevent_set_timeouts(u->bev, &tv, NULL);
		return;
	}
	if (what & BEV_EVENT_TIMEOUT) {
		if (u->state == STREAMING) {
			bufferevent_enable(u->bev, EV_READ);
			return;
		}
		set_error(u, "%s within %d s", waiting_for(u->state), AUTH_TIMEOUT_S);
	} else if (what & BEV_EVENT_ERROR) {
		set_error(u, "%s", evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
	} else if (what & BEV_EVENT_EOF) {
		set_error(u, "connection closed by the controller");
	}
	drop_connection(u);
}

/* The controller's address is known: connect. */
static void connect_to(struct fq_uplink *u, const struct call *c)
{
	if (c->rc < 0) {
		set_error(u, "%s", c->err);
		u->state = IDLE;
		schedule_retry(u);
		return;
	}
	u->dec = fq_frame_decoder_create(IN_MAX);
	u->bev = bufferevent_socket_new(u->base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (!u->dec || !u->bev) {
		drop_connection(u);
		return;
	}
	bufferevent_setcb(u->bev, on_read, on_write, on_event, u);
	bufferevent_setwatermark(u->bev, EV_WRITE, HIGH_WATER / 2, 0);
	bufferevent_enable(u->bev, EV_READ | EV_WRITE);
	u->state = CONNECTING;
	if (bufferevent_socket_connect(u->bev, (const struct sockaddr *)&c->addr, (int)c->addrlen) < 0) {
		set_error(u, "cannot connect");
		drop_connection(u);
	}
}

/* A finished call, on the loop: the next step of its connection, unless
 * that connection is gone (or the uplink is). */
static void call_done(struct fq_job *j, bool ran)
{
	struct call *c = (struct call *)j;
	struct fq_uplink *u = c->u;
	int rc = 0;

	u->call = NULL;
	if (ran && !u->closing && c->conn == u->conn_id) {
		if (c->kind == RESOLVE)
			connect_to(u, c);
		else if (c->kind == SIGN)
			rc = send_auth(u, c);
		else
			rc = controller_checked(u, c);
		if (rc < 0)
			drop_connection(u);
	}
	free(c->cred);
	free(c);
}

static void try_connect(evutil_socket_t fd, short what, void *arg)
{
	struct fq_uplink *u = arg;
	struct call *c;

	(void)fd;
	(void)what;
	/* a call of a connection already dropped still blocks the worker:
	 * no new one behind it */
	if (u->call || !(c = ask(u, RESOLVE, RESOLVING))) {
		schedule_retry(u);
		return;
	}
	snprintf(c->host, sizeof(c->host), "%s", u->host);
	c->port = u->cfg.port;
	fq_worker_submit(u->worker, &c->job);
}

static void schedule_retry(struct fq_uplink *u)
{
	struct timeval tv;
	uint32_t r = 0;
	unsigned ms;

	u->backoff_ms = u->backoff_ms ? u->backoff_ms * 2 : BACKOFF_MIN_MS;
	if (u->backoff_ms > BACKOFF_MAX_MS)
		u->backoff_ms = BACKOFF_MAX_MS;
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) < 0)
		r = 0;
	ms = u->backoff_ms * 3 / 4 + r % (u->backoff_ms / 2 + 1); /* +-25 % */
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	evtimer_add(u->retry_ev, &tv);
}

struct fq_uplink *fq_uplink_create(struct event_base *base, const struct fq_uplink_config *cfg,
				   struct fq_spool *spool, const struct fq_uplink_ops *ops, void *arg)
{
	struct fq_uplink *u = calloc(1, sizeof(*u));
	struct timeval now = {0, 0};

	if (!u)
		return NULL;
	u->base = base;
	u->cfg = *cfg;
	snprintf(u->host, sizeof(u->host), "%s", cfg->host);
	u->cfg.host = u->host;
	if (cfg->controller_key) {
		memcpy(u->controller_key, cfg->controller_key, sizeof(u->controller_key));
		u->want_key = true;
	}
	u->cfg.controller_key = NULL; /* the copy above */
	if (cfg->munge_socket && *cfg->munge_socket) {
		snprintf(u->munge_socket, sizeof(u->munge_socket), "%s", cfg->munge_socket);
		u->cfg.munge_socket = u->munge_socket;
	} else {
		u->cfg.munge_socket = NULL;
	}
	u->spool = spool;
	u->ops = *ops;
	u->arg = arg;
	u->sendbuf = malloc(IN_MAX + FQ_FRAME_HEADER_SIZE);
	u->retry_ev = evtimer_new(base, try_connect, u);
	u->worker = fq_worker_create(base);
	if (!u->sendbuf || !u->retry_ev || !u->worker) {
		fq_uplink_destroy(u);
		return NULL;
	}
	evtimer_add(u->retry_ev, &now);
	return u;
}

void fq_uplink_destroy(struct fq_uplink *u)
{
	if (!u)
		return;
	/* waits for a call in flight (libmunge gives up on a stuck munged) */
	u->closing = true;
	fq_worker_destroy(u->worker);
	if (u->bev)
		bufferevent_free(u->bev);
	fq_frame_decoder_destroy(u->dec);
	if (u->retry_ev)
		event_free(u->retry_ev);
	free(u->sendbuf);
	free(u);
}

void fq_uplink_kick(struct fq_uplink *u)
{
	pump(u);
}

int fq_uplink_connected(const struct fq_uplink *u)
{
	return u->state == STREAMING;
}

struct json_object *fq_uplink_counters(const struct fq_uplink *u)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "controller", json_object_new_string(u->host));
	json_object_object_add(o, "port", json_object_new_int(u->cfg.port));
	json_object_object_add(o, "state", json_object_new_string(state_names[u->state]));
	json_object_object_add(o, "connects", json_object_new_uint64(u->connects));
	json_object_object_add(o, "auth_refusals", json_object_new_uint64(u->refusals));
	json_object_object_add(o, "disconnects", json_object_new_uint64(u->disconnects));
	json_object_object_add(o, "frames_sent", json_object_new_uint64(u->frames_sent));
	json_object_object_add(o, "acked_seq", json_object_new_uint64(u->acked));
	json_object_object_add(o, "controller_auth_refused",
			       json_object_new_uint64(u->controller_auth_refused));
	json_object_object_add(o, "acks_refused", json_object_new_uint64(u->acks_refused));
	json_object_object_add(o, "corrections_refused", json_object_new_uint64(u->corrections_refused));
	json_object_object_add(o, "peers_refused", json_object_new_uint64(u->peers_refused));
	json_object_object_add(o, "advice_refused", json_object_new_uint64(u->advice_refused));
	json_object_object_add(o, "last_error", json_object_new_string(u->last_error));
	return o;
}
