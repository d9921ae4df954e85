/* local: the step and telemetry unix sockets (see local.h). */
#include "slurmd-agent/local.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/frame.h"
#include "common/log.h"
#include "common/step_socket.h"

#define READ_CHUNK 16384
#define MAX_OUTBUF (1u << 20) /* a client that never reads its answers is dropped */

enum kind {
	STEP,
	TELEMETRY
};

static const char *const kind_name[] = {"step", "telemetry"};

struct conn {
	struct fq_local *l;
	enum kind kind;
	struct ucred cred;
	struct bufferevent *bev;
	struct fq_frame_decoder *dec;
	struct event *timer;   /* the idle or the partial-frame deadline */
	int64_t partial_since; /* when the pending frame began; 0: none */
	struct conn *prev, *next;
};

/* A step request whose answer an op deferred. */
struct pending {
	uint64_t ticket, seq; /* ours; the request's */
	struct conn *c;
	bool start; /* a StepStart: its answer tells the paths */
	struct pending *next;
};

struct fq_local {
	struct event_base *base;
	struct fq_local_ops ops;
	struct fq_local_limits lim;
	void *arg;
	struct evconnlistener *lis[2];
	char path[2][sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *clock_page, *path_page;
	struct conn *conns;
	unsigned nconns[2];
	struct pending *pending;
	uint64_t next_ticket;
	uint64_t step_requests, step_refused, step_not_root, telemetry_frames, telemetry_unregistered,
	    telemetry_wrong_job, telemetry_dropped, telemetry_rate_limited, bad_frames, refused_conns,
	    refused_per_uid, refused_not_task, closed_idle, closed_partial;
};

/* Forget the deferred answers owed to c (it is closing). */
static void drop_pending(struct fq_local *l, const struct conn *c)
{
	for (struct pending **p = &l->pending; *p;) {
		struct pending *q = *p;

		if (q->c == c) {
			*p = q->next;
			free(q);
		} else {
			p = &q->next;
		}
	}
}

static void conn_close(struct conn *c)
{
	struct fq_local *l = c->l;

	drop_pending(l, c);
	if (c->prev)
		c->prev->next = c->next;
	else
		l->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	l->nconns[c->kind]--;
	event_free(c->timer);
	bufferevent_free(c->bev);
	fq_frame_decoder_destroy(c->dec);
	free(c);
}

static void arm(struct conn *c, int64_t ns)
{
	struct timeval tv = {(time_t)(ns / 1000000000), (suseconds_t)(ns % 1000000000 / 1000)};

	evtimer_add(c->timer, &tv);
}

/* After input: a frame begun gets frame_timeout from its first byte (never
 * extended by more bytes); a telemetry connection with nothing pending gets
 * idle_timeout from now; a step connection with nothing pending none. */
static void rearm(struct conn *c)
{
	if (fq_frame_decoder_pending(c->dec)) {
		if (!c->partial_since) {
			c->partial_since = fq_now_ns();
			arm(c, c->l->lim.frame_timeout_ns);
		}
		return;
	}
	c->partial_since = 0;
	if (c->kind == TELEMETRY)
		arm(c, c->l->lim.idle_timeout_ns);
	else
		evtimer_del(c->timer);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	(void)fd;
	(void)what;
	if (c->partial_since) {
		c->l->closed_partial++;
		fq_log_rl(FQ_LOG_WARN,
			  "%s socket: pid %d (uid %d) left a frame unfinished for %.1f s (%zu bytes): "
			  "connection closed",
			  kind_name[c->kind], (int)c->cred.pid, (int)c->cred.uid,
			  (double)(fq_now_ns() - c->partial_since) / 1e9, fq_frame_decoder_pending(c->dec));
	} else {
		c->l->closed_idle++;
		fq_log_rl(FQ_LOG_INFO,
			  "telemetry socket: pid %d (uid %d) sent nothing for %.0f s: connection closed",
			  (int)c->cred.pid, (int)c->cred.uid, (double)c->l->lim.idle_timeout_ns / 1e9);
	}
	conn_close(c);
}

/* paths: NULL, or the agent's paths (the answer to a StepStart). */
static void answer(struct conn *c, uint64_t seq, int rc, const char *msg, Fabriciq__AgentPaths *paths)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__Result res = FABRICIQ__RESULT__INIT;
	uint8_t *buf;
	size_t len;

	res.seq = seq;
	res.code = rc < 0 ? -rc : 0;
	res.message = (char *)(msg ? msg : "");
	res.paths = paths;
	env.version = FQ_PROTOCOL_VERSION;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_RESULT;
	env.result = &res;
	if (fq_frame_encode(&env, FQ_STEP_FRAME_MAX, &buf, &len) == 0) {
		bufferevent_write(c->bev, buf, len);
		free(buf);
	}
}

/* One frame on the step socket. */
static void on_read(struct bufferevent *bev, void *arg);

/* Take in every telemetry frame the kernel holds now. A task's writes are
 * in our receive queue before it exits, and slurmstepd sends StepEnd only
 * after its tasks have exited: drained first, a step's last reports
 * (failovers among them) are attributed before it is unregistered, not
 * dropped as a stranger's when the two sockets' events come in the other
 * order. */
static void drain_telemetry(struct fq_local *l)
{
	struct conn *c, *next;

	for (c = l->conns; c; c = next) {
		struct evbuffer *in;
		size_t got = 0;
		int n;

		next = c->next; /* on_read may close c */
		if (c->kind != TELEMETRY)
			continue;
		/* A socket bufferevent keeps its input's end frozen for all but
		 * its own reads. Bounded: a sender that never stops cannot hold
		 * the loop. */
		in = bufferevent_get_input(c->bev);
		evbuffer_unfreeze(in, 0);
		while (got < 64 * READ_CHUNK &&
		       (n = evbuffer_read(in, bufferevent_getfd(c->bev), READ_CHUNK)) > 0)
			got += (size_t)n;
		evbuffer_freeze(in, 0);
		on_read(c->bev, c);
	}
}

/* A step request's answer; a StepStart's tells the agent's paths. */
static void answer_step(struct conn *c, uint64_t seq, bool start, int rc, const char *msg)
{
	struct fq_local *l = c->l;
	Fabriciq__AgentPaths paths = FABRICIQ__AGENT_PATHS__INIT;

	if (rc < 0) {
		l->step_refused++;
		fq_warn("step socket: request from pid %d refused: %s", (int)c->cred.pid, msg);
	}
	paths.telemetry_socket = l->path[TELEMETRY];
	paths.clock_page = l->clock_page;
	paths.path_page = l->path_page;
	answer(c, seq, rc, msg, start ? &paths : NULL);
}

/* Remember an answer an op deferred (on no memory: answered now, -ENOMEM). */
static void defer(struct conn *c, uint64_t ticket, uint64_t seq, bool start)
{
	struct pending *p = malloc(sizeof(*p));

	if (!p) {
		answer_step(c, seq, start, -ENOMEM, "the agent is out of memory");
		return;
	}
	*p = (struct pending){.ticket = ticket, .seq = seq, .c = c, .start = start, .next = c->l->pending};
	c->l->pending = p;
}

static void on_step_frame(struct conn *c, Fabriciq__Envelope *env)
{
	struct fq_local *l = c->l;
	uint64_t ticket = ++l->next_ticket;
	bool start = env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_STEP_START;
	char msg[256] = "";
	int rc;

	l->step_requests++;
	switch (env->payload_case) {
	case FABRICIQ__ENVELOPE__PAYLOAD_STEP_START:
		rc = l->ops.step_start(l->arg, env->step_start, ticket, msg, sizeof(msg));
		break;
	case FABRICIQ__ENVELOPE__PAYLOAD_STEP_END:
		drain_telemetry(l);
		rc = l->ops.step_end(l->arg, env->step_end, ticket, msg, sizeof(msg));
		break;
	default:
		rc = -EOPNOTSUPP;
		snprintf(msg, sizeof(msg), "the step socket takes StepStart and StepEnd only");
	}
	if (rc == FQ_LOCAL_LATER)
		defer(c, ticket, env->seq, start);
	else
		answer_step(c, env->seq, start, rc, msg);
}

void fq_local_answer(struct fq_local *l, uint64_t ticket, int rc, const char *msg)
{
	for (struct pending **p = &l->pending; *p; p = &(*p)->next) {
		struct pending *q = *p;

		if (q->ticket != ticket)
			continue;
		*p = q->next;
		answer_step(q->c, q->seq, q->start, rc, msg);
		free(q);
		return;
	}
}

/* One frame on the telemetry socket: 0, or -1 to close the connection. */
static int on_telemetry_frame(struct conn *c, Fabriciq__Envelope *env)
{
	struct fq_local *l = c->l;

	if (env->payload_case != FABRICIQ__ENVELOPE__PAYLOAD_LANE &&
	    env->payload_case != FABRICIQ__ENVELOPE__PAYLOAD_PROFILER &&
	    env->payload_case != FABRICIQ__ENVELOPE__PAYLOAD_FAILOVER) {
		l->bad_frames++;
		fq_log_rl(FQ_LOG_WARN, "telemetry socket: pid %d sent a frame of kind %d: closing",
			  (int)c->cred.pid, (int)env->payload_case);
		return -1;
	}
	l->telemetry_frames++;
	switch (l->ops.telemetry(l->arg, &c->cred, env)) {
	case FQ_LOCAL_ACCEPTED:
		break;
	case FQ_LOCAL_UNREGISTERED:
		l->telemetry_unregistered++;
		fq_log_rl(FQ_LOG_WARN,
			  "telemetry from pid %d (uid %d), not a task of a registered step: dropped",
			  (int)c->cred.pid, (int)c->cred.uid);
		break;
	case FQ_LOCAL_WRONG_JOB:
		l->telemetry_wrong_job++;
		fq_log_rl(FQ_LOG_WARN, "telemetry from pid %d claims another job than its own: dropped",
			  (int)c->cred.pid);
		break;
	case FQ_LOCAL_DROPPED:
		l->telemetry_dropped++;
		break;
	case FQ_LOCAL_RATE_LIMITED:
		l->telemetry_rate_limited++;
		fq_log_rl(
		    FQ_LOG_WARN,
		    "telemetry from pid %d (uid %d) over its step's rate (agent.telemetry_*_rate): dropped",
		    (int)c->cred.pid, (int)c->cred.uid);
		break;
	}
	return 0;
}

static void on_read(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	uint8_t buf[READ_CHUNK];
	int n;

	while ((n = evbuffer_remove(in, buf, sizeof(buf))) > 0) {
		Fabriciq__Envelope *env;
		int rc;

		if (fq_frame_decoder_feed(c->dec, buf, (size_t)n) < 0)
			goto bad;
		while ((rc = fq_frame_decoder_next(c->dec, &env)) != 0) {
			if (rc < 0) {
				c->l->bad_frames++;
				if (rc == -EMSGSIZE)
					goto bad;
				continue;
			}
			if (c->kind == STEP)
				on_step_frame(c, env);
			else if (on_telemetry_frame(c, env) < 0)
				rc = -1;
			fq_frame_free(env);
			if (rc < 0)
				goto bad;
		}
	}
	if (evbuffer_get_length(bufferevent_get_output(bev)) > MAX_OUTBUF)
		goto bad;
	rearm(c);
	return;
bad:
	fq_log_rl(FQ_LOG_WARN, "%s socket: bad input from pid %d: connection closed", kind_name[c->kind],
		  (int)c->cred.pid);
	conn_close(c);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		conn_close(arg);
}

/* The number of telemetry connections uid holds (bounded by telemetry_max:
 * a scan is cheaper than keeping a table in step). */
static unsigned uid_conns(const struct fq_local *l, uid_t uid)
{
	unsigned n = 0;

	for (const struct conn *c = l->conns; c; c = c->next)
		n += c->kind == TELEMETRY && c->cred.uid == uid;
	return n;
}

/* Whether a connection of kind from cred may stay (counted and logged if not). */
static bool admit(struct fq_local *l, enum kind kind, const struct ucred *cred)
{
	unsigned max = kind == STEP ? l->lim.step_max : l->lim.telemetry_max;

	if (kind == STEP && cred->uid != 0) {
		l->step_not_root++;
		fq_log_rl(FQ_LOG_WARN, "step socket: connection from uid %d (pid %d) refused: root only",
			  (int)cred->uid, (int)cred->pid);
		return false;
	}
	if (kind == TELEMETRY && l->ops.telemetry_sender && !l->ops.telemetry_sender(l->arg, cred)) {
		l->refused_not_task++;
		fq_log_rl(
		    FQ_LOG_WARN,
		    "telemetry socket: pid %d (uid %d) is no task of a registered step: connection refused",
		    (int)cred->pid, (int)cred->uid);
		return false;
	}
	if (l->nconns[kind] >= max) {
		l->refused_conns++;
		fq_log_rl(FQ_LOG_WARN, "%s socket: %u connections open (its limit): refusing pid %d (uid %d)",
			  kind_name[kind], l->nconns[kind], (int)cred->pid, (int)cred->uid);
		return false;
	}
	if (kind == TELEMETRY && uid_conns(l, cred->uid) >= l->lim.max_per_uid) {
		l->refused_per_uid++;
		fq_log_rl(
		    FQ_LOG_WARN,
		    "telemetry socket: uid %d holds %u connections (the per-uid limit): refusing pid %d",
		    (int)cred->uid, l->lim.max_per_uid, (int)cred->pid);
		return false;
	}
	return true;
}

static void on_accept(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa, int salen,
		      void *arg)
{
	struct fq_local *l = arg;
	enum kind kind = lis == l->lis[STEP] ? STEP : TELEMETRY;
	socklen_t len = sizeof(struct ucred);
	struct ucred cred;
	struct conn *c;

	(void)sa;
	(void)salen;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || !admit(l, kind, &cred)) {
		close(fd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	c->l = l;
	c->kind = kind;
	c->cred = cred;
	c->dec = fq_frame_decoder_create(kind == STEP ? FQ_STEP_FRAME_MAX : FQ_TELEMETRY_FRAME_MAX);
	c->timer = evtimer_new(l->base, on_timer, c);
	c->bev = bufferevent_socket_new(l->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!c->dec || !c->timer || !c->bev) {
		fq_frame_decoder_destroy(c->dec);
		if (c->timer)
			event_free(c->timer);
		if (c->bev)
			bufferevent_free(c->bev);
		else
			close(fd);
		free(c);
		return;
	}
	bufferevent_setcb(c->bev, on_read, NULL, on_event, c);
	bufferevent_enable(c->bev, EV_READ);
	c->next = l->conns;
	if (l->conns)
		l->conns->prev = c;
	l->conns = c;
	l->nconns[kind]++;
	rearm(c);
}

static struct evconnlistener *listen_unix(struct fq_local *l, const char *path, mode_t mode, char *saved,
					  size_t savedlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct evconnlistener *lis;
	mode_t old;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fq_error("socket path %s is too long (at most %zu bytes)", path, sizeof(sa.sun_path) - 1);
		return NULL;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	unlink(path);
	old = umask(0777 & ~mode);
	lis = evconnlistener_new_bind(l->base, on_accept, l, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC,
				      64, (struct sockaddr *)&sa, (int)sizeof(sa));
	umask(old);
	if (!lis) {
		fq_error("cannot listen on %s: %s", path, strerror(errno));
		return NULL;
	}
	if (chmod(path, mode) < 0) {
		fq_error("cannot set mode %o on %s: %s", (unsigned)mode, path, strerror(errno));
		evconnlistener_free(lis);
		unlink(path);
		return NULL;
	}
	snprintf(saved, savedlen, "%s", path);
	return lis;
}

struct fq_local *fq_local_create(struct event_base *base, const char *step_path, const char *telemetry_path,
				 const char *clock_page, const char *path_page,
				 const struct fq_local_limits *limits, const struct fq_local_ops *ops,
				 void *arg)
{
	struct fq_local *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->base = base;
	l->lim = *limits;
	l->ops = *ops;
	l->arg = arg;
	l->clock_page = strdup(clock_page);
	l->path_page = strdup(path_page);
	if (!l->clock_page || !l->path_page) {
		fq_error("local sockets: out of memory");
		goto fail;
	}
	l->lis[STEP] = listen_unix(l, step_path, 0600, l->path[STEP], sizeof(l->path[STEP]));
	if (!l->lis[STEP])
		goto fail;
	l->lis[TELEMETRY] =
	    listen_unix(l, telemetry_path, 0666, l->path[TELEMETRY], sizeof(l->path[TELEMETRY]));
	if (!l->lis[TELEMETRY])
		goto fail;
	return l;
fail:
	fq_local_destroy(l);
	return NULL;
}

void fq_local_drain(struct fq_local *l)
{
	struct conn *c, *next;

	if (!l)
		return;
	for (c = l->conns; c; c = next) {
		evutil_socket_t fd = bufferevent_getfd(c->bev);
		struct evbuffer *in = bufferevent_get_input(c->bev);
		int rounds = 0;

		next = c->next;
		if (c->kind != TELEMETRY || fd < 0)
			continue;
		/* refuse what a process would write from now on (its write
		 * fails: not sent, as it counts), then read what the socket
		 * holds, at most a few MiB a connection */
		shutdown(fd, SHUT_RD);
		while (rounds++ < 64 && evbuffer_read(in, fd, 65536) > 0)
			;
		on_read(c->bev, c); /* may close c */
	}
}

void fq_local_destroy(struct fq_local *l)
{
	if (!l)
		return;
	while (l->conns)
		conn_close(l->conns);
	for (int i = 0; i < 2; i++)
		if (l->lis[i]) {
			evconnlistener_free(l->lis[i]);
			unlink(l->path[i]);
		}
	free(l->clock_page);
	free(l->path_page);
	free(l);
}

struct json_object *fq_local_counters(const struct fq_local *l)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "step_requests", json_object_new_uint64(l->step_requests));
	json_object_object_add(o, "step_refused", json_object_new_uint64(l->step_refused));
	json_object_object_add(o, "step_not_root", json_object_new_uint64(l->step_not_root));
	json_object_object_add(o, "telemetry_frames", json_object_new_uint64(l->telemetry_frames));
	json_object_object_add(o, "telemetry_unregistered",
			       json_object_new_uint64(l->telemetry_unregistered));
	json_object_object_add(o, "telemetry_wrong_job", json_object_new_uint64(l->telemetry_wrong_job));
	json_object_object_add(o, "telemetry_dropped", json_object_new_uint64(l->telemetry_dropped));
	json_object_object_add(o, "telemetry_rate_limited",
			       json_object_new_uint64(l->telemetry_rate_limited));
	json_object_object_add(o, "bad_frames", json_object_new_uint64(l->bad_frames));
	json_object_object_add(o, "refused_connections", json_object_new_uint64(l->refused_conns));
	json_object_object_add(o, "refused_per_uid", json_object_new_uint64(l->refused_per_uid));
	json_object_object_add(o, "refused_not_task", json_object_new_uint64(l->refused_not_task));
	json_object_object_add(o, "closed_idle", json_object_new_uint64(l->closed_idle));
	json_object_object_add(o, "closed_partial", json_object_new_uint64(l->closed_partial));
	json_object_object_add(o, "step_connections", json_object_new_int((int)l->nconns[STEP]));
	json_object_object_add(o, "telemetry_connections", json_object_new_int((int)l->nconns[TELEMETRY]));
	return o;
}
