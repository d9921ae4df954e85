/* tele: the profiler's frames to the node agent (see tele.h). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/frame.h"
#include "common/step_socket.h"
#include "nccl-profiler/names.h"
#include "nccl-profiler/report.h"
#include "nccl-profiler/tele.h"

#define TELE_SLOTS     256 /* registered communicators (prof.c has as many contexts) */
#define RECONNECT_NS   (5LL * 1000000000)
#define FINAL_WAIT_MS  2000
#define DEFAULT_IVL_MS 1000
#define OPS_PER_TAKE   256

/* ---- pure: messages and frames ------------------------------------------ */

void fqp_tele_window_fill(Fabriciq__ProfilerWindow *m, const struct fqp_window_sample *w)
{
	fabriciq__profiler_window__init(m);
	m->kind = (char *)fqp_win_kind_name(w->key.kind);
	m->device = w->key.dev;
	m->sub = w->key.sub;
	m->id = w->key.id;
	m->count = w->count;
	m->bytes = w->bytes;
	m->mean_ns = w->count ? (int64_t)(w->dur_sum_ns / w->count) : 0;
	m->max_ns = (int64_t)w->dur_max_ns;
}

void fqp_tele_op_fill(Fabriciq__ProfilerOp *m, const struct fqp_op_record *r)
{
	fabriciq__profiler_op__init(m);
	m->func = (char *)fqp_func_name(r->func);
	m->algo = (char *)(r->algo ? fqp_algo_name(r->algo) : "");
	m->proto = (char *)(r->proto ? fqp_proto_name(r->proto) : "");
	m->bytes = r->bytes;
	m->start_ns = r->start_ns;
	m->end_ns = r->end_ns;
	m->gbps = r->gbps;
	m->synchronised = r->synchronised != 0;
	m->seq = r->seq;
	m->p2p = r->is_p2p != 0;
	m->peer = r->is_p2p ? r->peer : -1;
}

int fqp_tele_frames(const struct fqp_tele_interval *iv, void (*out)(const uint8_t *, size_t, void *),
		    void *arg)
{
	Fabriciq__ProfilerWindow wm[FQP_TELE_PER_FRAME], *wp[FQP_TELE_PER_FRAME];
	Fabriciq__ProfilerOp om[FQP_TELE_PER_FRAME], *op[FQP_TELE_PER_FRAME];
	size_t wi = 0, oi = 0;
	int frames = 0;

	do {
		Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
		Fabriciq__ProfilerReport r = FABRICIQ__PROFILER_REPORT__INIT;
		uint8_t *frame;
		size_t len;

		r.comm_hash = iv->ci ? iv->ci->comm_hash : 0;
		r.nranks = iv->ci && iv->ci->nranks > 0 ? (uint32_t)iv->ci->nranks : 0;
		r.interval_start_ns = iv->start_ns;
		r.interval_end_ns = iv->end_ns;
		r.synchronised = iv->synchronised != 0;
		r.dropped = iv->dropped;
		r.ops_done = iv->ops_done;
		r.windows = wp;
		r.ops = op;
		for (; wi < iv->nwin && r.n_windows < FQP_TELE_PER_FRAME; wi++, r.n_windows++) {
			fqp_tele_window_fill(&wm[r.n_windows], &iv->win[wi]);
			wp[r.n_windows] = &wm[r.n_windows];
		}
		for (; oi < iv->nops && r.n_ops < FQP_TELE_PER_FRAME; oi++, r.n_ops++) {
			fqp_tele_op_fill(&om[r.n_ops], &iv->ops[oi]);
			op[r.n_ops] = &om[r.n_ops];
		}
		env.version = FQ_PROTOCOL_VERSION;
		env.sent_ns = iv->end_ns;
		env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_PROFILER;
		env.profiler = &r;
		if (fq_frame_encode(&env, FQ_TELEMETRY_FRAME_MAX, &frame, &len) < 0)
			return -ENOMEM;
		out(frame, len, arg);
		free(frame);
		frames++;
	} while (wi < iv->nwin || oi < iv->nops);
	return frames;
}

/* ---- the thread ---------------------------------------------------------- */

struct slot {
	struct fqp_ctx *ctx; /* NULL: free */
	int64_t last_ns;     /* the end of its last interval (global or raw, as fqp_ctx_now gives) */
};

struct batch {
	uint8_t *buf;
	size_t len, cap, n; /* n: frames */
	size_t *ends;
	size_t ncap;
};

static struct {
	pthread_mutex_t mu; /* slots, the batch being built; never taken on NCCL's event paths */
	struct slot slots[TELE_SLOTS];
	unsigned nslots;
	int running, stop;
	pthread_t thread;
	int wake_fd;
	char path[108];
	int interval_ms;
	int fd, warned;
	int64_t next_connect_ns;
	struct batch build;   /* frames taken, not yet handed to the socket */
	struct batch pending; /* being written */
	size_t pending_off, pending_done;
	uint64_t flush_asked, flush_done;
	uint64_t reports, frames, sent, dropped_no_agent, encode_failures;
} T = {.mu = PTHREAD_MUTEX_INITIALIZER, .fd = -1, .wake_fd = -1};

static void batch_free(struct batch *b)
{
	free(b->buf);
	free(b->ends);
	*b = (struct batch){0};
}

static void batch_put(const uint8_t *frame, size_t len, void *arg)
{
	struct batch *b = arg;

	if (b->len + len > b->cap) {
		size_t ncap = (b->cap ? b->cap * 2 : 16384) + len;
		uint8_t *nb = realloc(b->buf, ncap);

		if (!nb)
			goto fail;
		b->buf = nb;
		b->cap = ncap;
	}
	if (b->n == b->ncap) {
		size_t ncap = b->ncap ? b->ncap * 2 : 64;
		size_t *ne = realloc(b->ends, ncap * sizeof(*ne));

		if (!ne)
			goto fail;
		b->ends = ne;
		b->ncap = ncap;
	}
	memcpy(b->buf + b->len, frame, len);
	b->len += len;
	b->ends[b->n++] = b->len;
	__atomic_fetch_add(&T.frames, 1, __ATOMIC_RELAXED);
	return;
fail:
	__atomic_fetch_add(&T.encode_failures, 1, __ATOMIC_RELAXED);
}

struct wins {
	struct fqp_window_sample *w;
	size_t n, cap;
};

static void take_window(const struct fqp_window_sample *w, void *arg)
{
	struct wins *a = arg;

	if (a->n < a->cap)
		a->w[a->n++] = *w;
}

/* One context's interval into T.build. Called with T.mu held. */
static void take(struct slot *s)
{
	static struct fqp_window_sample win[FQP_WINDOWS];
	static struct fqp_op_record ops[OPS_PER_TAKE];
	struct wins wa = {win, 0, FQP_WINDOWS};
	struct fqp_comm_info ci;
	struct fqp_counts c;
	struct fqp_tele_interval iv = {.ci = &ci, .win = win, .ops = ops};
	int64_t now;
	int sync;

	if (fqp_ctx_info(s->ctx, &ci, NULL) < 0 || fqp_counts(s->ctx, &c) < 0 ||
	    fqp_ctx_now(s->ctx, &now, &sync) < 0)
		return;
	fqp_windows(s->ctx, 1, take_window, &wa);
	iv.start_ns = s->last_ns ? s->last_ns : now;
	iv.end_ns = now;
	iv.synchronised = sync;
	iv.dropped = c.dropped_pool + c.dropped_windows + c.dropped_ops;
	iv.ops_done = c.ops_done;
	iv.nwin = wa.n;
	do {
		iv.nops = fqp_drain_ops(s->ctx, ops, OPS_PER_TAKE);
		if (fqp_tele_frames(&iv, batch_put, &T.build) < 0)
			T.encode_failures++;
		iv.nwin = 0; /* the windows went with the first frames */
	} while (iv.nops == OPS_PER_TAKE);
	s->last_ns = now;
	T.reports++;
}

static void agent_connect(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (fq_clock_ns(CLOCK_MONOTONIC) < T.next_connect_ns)
		return;
	T.next_connect_ns = fq_clock_ns(CLOCK_MONOTONIC) + RECONNECT_NS;
	memcpy(sa.sun_path, T.path, sizeof(T.path));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (!T.warned)
			fprintf(stderr,
				"fabriciq: profiler: no node agent at %s (%s): telemetry is dropped, NCCL is "
				"not affected; retrying every 5 s\n",
				T.path, strerror(errno));
		T.warned = 1;
		close(fd);
		return;
	}
	__atomic_store_n(&T.fd, fd, __ATOMIC_RELAXED);
}

static void agent_drop(void)
{
	close(T.fd);
	__atomic_store_n(&T.fd, -1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&T.dropped_no_agent, T.pending.n - T.pending_done, __ATOMIC_RELAXED);
	batch_free(&T.pending);
	T.pending_off = T.pending_done = 0;
	T.next_connect_ns = fq_clock_ns(CLOCK_MONOTONIC) + RECONNECT_NS;
}

/* Push out the pending batch. 1 when nothing is pending any more. */
static int flush_pending(void)
{
	struct batch *b = &T.pending;

	while (T.pending_off < b->len) {
		ssize_t n =
		    send(T.fd, b->buf + T.pending_off, b->len - T.pending_off, MSG_DONTWAIT | MSG_NOSIGNAL);
		size_t done = T.pending_done;

		if (n < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				agent_drop();
			return 0;
		}
		T.pending_off += (size_t)n;
		while (T.pending_done < b->n && b->ends[T.pending_done] <= T.pending_off)
			T.pending_done++;
		__atomic_fetch_add(&T.sent, T.pending_done - done, __ATOMIC_RELAXED);
	}
	batch_free(b);
	T.pending_off = T.pending_done = 0;
	return 1;
}

/* Hand what was built to the socket (called without T.mu: only this
 * thread touches the socket and the pending batch). */
static void send_built(struct batch *built)
{
	if (T.fd < 0)
		agent_connect();
	if (!built->n) {
		if (T.fd >= 0)
			flush_pending();
		batch_free(built);
		return;
	}
	if (T.fd < 0 || !flush_pending() ||
	    T.fd < 0) { /* no agent, or not reading: never queue without bound */
		__atomic_fetch_add(&T.dropped_no_agent, built->n, __ATOMIC_RELAXED);
		batch_free(built);
		return;
	}
	T.pending = *built;
	*built = (struct batch){0};
	flush_pending();
}

/* The last batch before the thread ends: wait (up to FINAL_WAIT_MS) for
 * the agent's socket to take it. */
static void final_write(void)
{
	int64_t until = fq_clock_ns(CLOCK_MONOTONIC) + (int64_t)FINAL_WAIT_MS * 1000000;

	while (T.fd >= 0 && T.pending.n && fq_clock_ns(CLOCK_MONOTONIC) < until) {
		struct pollfd p = {T.fd, POLLOUT, 0};

		if (poll(&p, 1, 100) > 0 && flush_pending())
			break;
	}
}

static void *tele_main(void *arg)
{
	struct pollfd pfd = {T.wake_fd, POLLIN, 0};
	int last = 0;

	(void)arg;
	/* Connect now, while the process surely lives: the agent learns the
	 * sender's step from its pid when it accepts (and remembers it), so
	 * a short job's only batch, written at finalize just before the
	 * process exits, is still taken as the step's. */
	agent_connect();
	while (!last) {
		struct batch built;
		uint64_t asked, n;

		if (poll(&pfd, 1, T.interval_ms) > 0)
			(void)!read(T.wake_fd, &n, sizeof(n));
		pthread_mutex_lock(&T.mu);
		last = T.stop;
		asked = T.flush_asked;
		for (unsigned i = 0; i < T.nslots; i++)
			if (T.slots[i].ctx)
				take(&T.slots[i]);
		built = T.build;
		T.build = (struct batch){0};
		pthread_mutex_unlock(&T.mu);
		send_built(&built);
		__atomic_store_n(&T.flush_done, asked, __ATOMIC_RELEASE);
	}
	final_write();
	return NULL;
}

/* Called with T.mu held. */
static int thread_start(void)
{
	const char *path = getenv("FABRICIQ_AGENT_SOCKET");
	const char *ivl = getenv("FABRICIQ_TELEMETRY_INTERVAL_MS");
	sigset_t all, old;
	int rc;

	const char *on = getenv("FABRICIQ_PROFILER_TELEMETRY");

	if (!path || !*path || (on && !strcmp(on, "0")))
		return -ENOENT;
	if (strlen(path) >= sizeof(T.path))
		return -ENAMETOOLONG;
	snprintf(T.path, sizeof(T.path), "%s", path);
	T.interval_ms = ivl && atoi(ivl) >= 10 && atoi(ivl) <= 600000 ? atoi(ivl) : DEFAULT_IVL_MS;
	T.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (T.wake_fd < 0)
		return -errno;
	T.stop = 0;
	T.warned = 0;
	T.next_connect_ns = 0;
	/* The thread takes no signals: they belong to the application. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = -pthread_create(&T.thread, NULL, tele_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc < 0) {
		close(T.wake_fd);
		T.wake_fd = -1;
		return rc;
	}
	T.running = 1;
	return 0;
}

int fqp_tele_register(struct fqp_ctx *ctx)
{
	int rc = 0;

	pthread_mutex_lock(&T.mu);
	if (!T.running)
		rc = thread_start();
	if (rc == 0) {
		rc = -ENOSPC;
		for (unsigned i = 0; i < TELE_SLOTS; i++) {
			if (T.slots[i].ctx)
				continue;
			T.slots[i] = (struct slot){.ctx = ctx};
			if (i >= T.nslots)
				T.nslots = i + 1;
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&T.mu);
	return rc;
}

static void wake(void)
{
	uint64_t one = 1;

	if (write(T.wake_fd, &one, sizeof(one)) < 0)
		fprintf(stderr, "fabriciq: profiler: cannot wake the telemetry thread: %s\n",
			strerror(errno));
}

/* After the thread ended (the last communicator's finalize): its socket
 * and eventfd closed; a communicator registered meanwhile gets a new
 * thread. Called with T.mu held. */
static void thread_ended(void)
{
	unsigned live = 0;

	T.dropped_no_agent += T.pending.n - T.pending_done;
	batch_free(&T.pending);
	T.pending_off = T.pending_done = 0;
	if (T.fd >= 0)
		close(T.fd);
	T.fd = -1;
	close(T.wake_fd);
	T.wake_fd = -1;
	T.running = 0;
	for (unsigned i = 0; i < T.nslots; i++)
		if (T.slots[i].ctx)
			live = i + 1;
	T.nslots = live;
	if (live && thread_start() < 0)
		for (unsigned i = 0; i < live; i++)
			T.slots[i].ctx = NULL; /* no thread: their figures stay in their tables */
}

int fqp_tele_finalize(struct fqp_ctx *ctx)
{
	int64_t until = fq_clock_ns(CLOCK_MONOTONIC) + (int64_t)FINAL_WAIT_MS * 1000000;
	int found = 0, rc, others = 0, join = 0;
	uint64_t asked = 0;

	pthread_mutex_lock(&T.mu);
	for (unsigned i = 0; i < T.nslots; i++) {
		if (T.slots[i].ctx != ctx) {
			others |= T.slots[i].ctx != NULL;
			continue;
		}
		fqp_sweep(ctx, 0); /* every stopped op completes now */
		take(&T.slots[i]);
		T.slots[i].ctx = NULL;
		found = 1;
	}
	rc = fqp_finalize(ctx); /* under the lock: the op ring keeps one consumer */
	if (found) {
		asked = ++T.flush_asked;
		/* the last communicator ends the thread (unless another
		 * finalize is ending it already: then only the bounded wait) */
		join = !others && !T.stop;
		T.stop |= join;
	}
	pthread_mutex_unlock(&T.mu);
	if (!found)
		return rc;
	wake();
	if (join) { /* the thread writes what is left and ends */
		pthread_join(T.thread, NULL);
		pthread_mutex_lock(&T.mu);
		thread_ended();
		pthread_mutex_unlock(&T.mu);
		return rc;
	}
	while (__atomic_load_n(&T.flush_done, __ATOMIC_ACQUIRE) < asked &&
	       fq_clock_ns(CLOCK_MONOTONIC) < until)
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	return rc;
}

void fqp_tele_counts(struct fqp_tele_counts *o)
{
	pthread_mutex_lock(&T.mu);
	o->reports = T.reports;
	o->frames = __atomic_load_n(&T.frames, __ATOMIC_RELAXED);
	o->sent = __atomic_load_n(&T.sent, __ATOMIC_RELAXED);
	o->dropped_no_agent = __atomic_load_n(&T.dropped_no_agent, __ATOMIC_RELAXED);
	o->encode_failures = T.encode_failures;
	o->connected = __atomic_load_n(&T.fd, __ATOMIC_RELAXED) >= 0;
	o->running = T.running;
	pthread_mutex_unlock(&T.mu);
}
