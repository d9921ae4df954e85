/* telemetry: lock-free sample ring and the agent-facing thread (see telemetry.h). */
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
#include "nccl-plugin/plog.h"
#include "nccl-plugin/telemetry/telemetry.h"

#define RING_SLOTS   256                /* a power of two; ~1 MiB */
#define RECONNECT_NS (1LL * 1000000000) /* an agent restarted is back in a second or two */
#define FRAME_MAX    4096

/* Vyukov's bounded MPMC queue: each slot's sequence number says whose turn
 * it is, so producers on several proxy threads never lock or wait. */
struct ring_slot {
	uint64_t seq;
	struct fqn_lane_sample s;
};

/* Frames, back to back, and where each ends: a frame is sent once all
 * of it is in the agent's socket (a batch cut short counts the whole
 * frames it wrote). */
struct batch {
	uint8_t *buf;
	size_t len, cap;
	size_t *ends;
	size_t n, ncap;
};

static void batch_free(struct batch *b)
{
	free(b->buf);
	free(b->ends);
	*b = (struct batch){0};
}

struct fqn_telemetry {
	struct ring_slot *slots;
	uint64_t head; /* next to push */
	uint64_t tail; /* next to pop (the thread only) */
	char path[108];
	int interval_ms;
	int wake_fd; /* eventfd: stop, or a flush */
	int stop;
	uint64_t flush_asked, flush_done; /* fqn_telemetry_flush's requests, and the last served */
	pthread_t thread;
	int fd; /* to the agent, -1 if none */
	int warned;
	int64_t next_connect_ns;
	struct batch pending; /* the batch being written */
	size_t pending_off;   /* its bytes written so far */
	size_t pending_done;  /* its frames written whole: sent */
	uint64_t pushed, dropped_full, sent, dropped_no_agent;
};

int fqn_telemetry_push(struct fqn_telemetry *t, const struct fqn_lane_sample *s)
{
	uint64_t pos = __atomic_load_n(&t->head, __ATOMIC_RELAXED);

	for (;;) {
		struct ring_slot *slot = &t->slots[pos & (RING_SLOTS - 1)];
		uint64_t seq = __atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE);
		int64_t dif = (int64_t)(seq - pos);

		if (dif == 0) {
			if (__atomic_compare_exchange_n(&t->head, &pos, pos + 1, 1, __ATOMIC_RELAXED,
							__ATOMIC_RELAXED)) {
				slot->s = *s;
				__atomic_store_n(&slot->seq, pos + 1, __ATOMIC_RELEASE);
				__atomic_fetch_add(&t->pushed, 1, __ATOMIC_RELAXED);
				return 0;
			}
		} else if (dif < 0) {
			__atomic_fetch_add(&t->dropped_full, 1, __ATOMIC_RELAXED);
			return -ENOBUFS;
		} else {
			pos = __atomic_load_n(&t->head, __ATOMIC_RELAXED);
		}
	}
}

/* Single consumer: 1 and *s if a sample was waiting. */
static int ring_pop(struct fqn_telemetry *t, struct fqn_lane_sample *s)
{
	struct ring_slot *slot = &t->slots[t->tail & (RING_SLOTS - 1)];

	if (__atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE) != t->tail + 1)
		return 0;
	*s = slot->s;
	__atomic_store_n(&slot->seq, t->tail + RING_SLOTS, __ATOMIC_RELEASE);
	t->tail++;
	return 1;
}

void fqn_lane_report_fill(Fabriciq__LaneReport *r, const struct fqn_lane_sample *s)
{
	fabriciq__lane_report__init(r);
	r->lane = (uint32_t)s->lane;
	r->local_nic = (char *)s->nic;
	r->is_send = s->is_send != 0;
	/* src is the sending rank, dst the receiving one; unknown stays 0 (the
	 * agent sets this end's from SO_PEERCRED anyway) */
	if (s->is_send) {
		r->src_rank = s->rank1 ? s->rank1 - 1 : 0;
		r->dst_rank = s->peer_rank1 ? s->peer_rank1 - 1 : 0;
	} else {
		r->src_rank = s->peer_rank1 ? s->peer_rank1 - 1 : 0;
		r->dst_rank = s->rank1 ? s->rank1 - 1 : 0;
	}
	r->local_address = (char *)s->local;
	r->remote_address = (char *)s->peer; /* the agent names the remote node and NIC */
	r->interval_start_ns = s->start_ns;
	r->interval_end_ns = s->end_ns;
	r->bytes = s->bytes;
	r->chunks = s->chunks;
	r->messages = s->msgs;
	if (s->owd.count) {
		r->owd_min_ns = s->owd.min;
		r->owd_p50_ns = fqn_hist_quantile(&s->owd, 0.5);
		r->owd_p99_ns = fqn_hist_quantile(&s->owd, 0.99);
		r->owd_max_ns = s->owd.max;
	}
	r->tcp_rtt_us = s->info.rtt_us;
	r->tcp_min_rtt_us = s->info.min_rtt_us;
	r->tcp_retrans = s->info.retrans;
	r->tcp_delivered_ce = s->info.delivered_ce;
	r->synchronised = s->synchronised;
	r->lane_kind = (char *)s->kind;
	if (s->is_send) { /* a receiving socket's cap says nothing of the lane */
		r->pacing_rate = s->info.pacing_rate;
		r->throttled_ns = s->throttled_ns;
		r->assigned_rate = s->assigned_rate;
		r->assigned_ns = s->assigned_ns;
		r->tcp_bytes_acked = s->acked;
	}
	r->local_qpn = s->info.local_qpn; /* an IB lane's, 0 on TCP */
	r->remote_qpn = s->info.remote_qpn;
}

void fqn_failover_fill(Fabriciq__FailoverEvent *f, const struct fqn_lane_sample *s)
{
	fabriciq__failover_event__init(f);
	f->from_lane = (uint32_t)s->lane;
	f->to_lane = (uint32_t)(s->to_lane >= 0 ? s->to_lane : s->lane);
	f->local_nic = (char *)s->nic;
	f->remote_nic = (char *)s->peer; /* the far NIC's name from the path page, else its address */
	f->cause = (char *)s->cause;
	f->time_ns = s->start_ns;
	f->detect_ns = s->detect_ns;
	f->bytes_resent = s->bytes_resent;
	f->duration_ns = s->duration_ns;
	f->failback = strcmp(s->cause, "failback") == 0;
	f->conn_id = s->conn_id;
	f->from_receiver = !s->is_send;
	/* as in a lane report: src the sending rank, dst the receiving one */
	if (s->is_send) {
		f->src_rank = s->rank1 ? s->rank1 - 1 : 0;
		f->dst_rank = s->peer_rank1 ? s->peer_rank1 - 1 : 0;
	} else {
		f->src_rank = s->peer_rank1 ? s->peer_rank1 - 1 : 0;
		f->dst_rank = s->rank1 ? s->rank1 - 1 : 0;
	}
}

static void agent_connect(struct fqn_telemetry *t)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (fq_clock_ns(CLOCK_MONOTONIC) < t->next_connect_ns)
		return;
	t->next_connect_ns = fq_clock_ns(CLOCK_MONOTONIC) + RECONNECT_NS;
	memcpy(sa.sun_path, t->path, sizeof(t->path));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (!t->warned)
			FQN_WARN(
			    "no node agent at %s (%s): telemetry is dropped, NCCL traffic is not affected; "
			    "retrying every %lld s",
			    t->path, strerror(errno), RECONNECT_NS / 1000000000);
		t->warned = 1;
		close(fd);
		return;
	}
	FQN_INFO("telemetry: connected to the node agent at %s", t->path);
	__atomic_store_n(&t->fd, fd, __ATOMIC_RELAXED);
}

static void agent_drop(struct fqn_telemetry *t, const char *why)
{
	FQN_INFO("telemetry: lost the node agent at %s (%s); dropping samples until it is back", t->path,
		 why);
	close(t->fd);
	__atomic_store_n(&t->fd, -1, __ATOMIC_RELAXED);
	/* the frames the agent's socket did not take whole (it stopped, or
	 * refused the write): not sent */
	__atomic_fetch_add(&t->dropped_no_agent, t->pending.n - t->pending_done, __ATOMIC_RELAXED);
	batch_free(&t->pending);
	t->pending_off = t->pending_done = 0;
	t->next_connect_ns = fq_clock_ns(CLOCK_MONOTONIC) + RECONNECT_NS;
}

/* Push out the pending batch. 1 when nothing is pending any more. */
static int flush_pending(struct fqn_telemetry *t)
{
	struct batch *b = &t->pending;

	while (t->pending_off < b->len) {
		ssize_t n = send(t->fd, b->buf + t->pending_off, b->len - t->pending_off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
		size_t done = t->pending_done;

		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			agent_drop(t, strerror(errno));
			return 0;
		}
		t->pending_off += (size_t)n;
		while (t->pending_done < b->n && b->ends[t->pending_done] <= t->pending_off)
			t->pending_done++;
		__atomic_fetch_add(&t->sent, t->pending_done - done, __ATOMIC_RELAXED);
	}
	batch_free(b);
	t->pending_off = t->pending_done = 0;
	return 1;
}

/* Append one sample's frame to the batch. 0, or -1 to drop it. */
static int batch_add(struct batch *b, const struct fqn_lane_sample *s)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__LaneReport r;
	Fabriciq__FailoverEvent f;
	uint8_t *frame;
	size_t n;

	env.version = FQ_PROTOCOL_VERSION;
	if (s->event) {
		fqn_failover_fill(&f, s);
		env.sent_ns = s->start_ns;
		env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_FAILOVER;
		env.failover = &f;
	} else {
		fqn_lane_report_fill(&r, s);
		env.sent_ns = s->end_ns;
		env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_LANE;
		env.lane = &r;
	}
	if (fq_frame_encode(&env, FRAME_MAX, &frame, &n) < 0)
		return -1;
	if (b->len + n > b->cap) {
		size_t ncap = (b->cap ? b->cap * 2 : 16384) + n;
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
	memcpy(b->buf + b->len, frame, n);
	b->len += n;
	b->ends[b->n++] = b->len;
	free(frame);
	return 0;
fail:
	free(frame);
	return -1;
}

/* Pop everything; send it as one batch (one write, one wakeup of the
 * agent) if the agent is there and has read the previous batch. */
static void drain(struct fqn_telemetry *t)
{
	struct fqn_lane_sample *s = malloc(sizeof(*s));
	struct batch batch = {0};
	int can_send;

	if (!s)
		return;
	if (t->fd < 0)
		agent_connect(t);
	can_send = t->fd >= 0 && flush_pending(t) && t->fd >= 0;
	while (ring_pop(t, s)) {
		if (!can_send || batch_add(&batch, s) < 0) /* no agent, or it is not reading: */
			__atomic_fetch_add(&t->dropped_no_agent, 1,
					   __ATOMIC_RELAXED); /* never queue without bound */
	}
	free(s);
	if (!batch.n) {
		batch_free(&batch);
		return;
	}
	t->pending = batch;
	t->pending_off = t->pending_done = 0;
	flush_pending(t);
}

static void *telemetry_main(void *arg)
{
	struct fqn_telemetry *t = arg;
	struct pollfd pfd = {t->wake_fd, POLLIN, 0};

	while (!__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE)) {
		uint64_t asked, n;

		if (poll(&pfd, 1, t->interval_ms) > 0)
			(void)!read(t->wake_fd, &n, sizeof(n)); /* clear the wakeup */
		asked = __atomic_load_n(&t->flush_asked, __ATOMIC_ACQUIRE);
		drain(t);
		__atomic_store_n(&t->flush_done, asked, __ATOMIC_RELEASE);
	}
	drain(t);
	return NULL;
}

int fqn_telemetry_start(const char *socket_path, int interval_ms, struct fqn_telemetry **out)
{
	struct fqn_telemetry *t;
	sigset_t all, old;
	int rc;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->slots = calloc(RING_SLOTS, sizeof(*t->slots));
	if (!t->slots) {
		rc = -ENOMEM;
		goto err_free;
	}
	for (uint64_t i = 0; i < RING_SLOTS; i++)
		t->slots[i].seq = i;
	snprintf(t->path, sizeof(t->path), "%s", socket_path);
	t->interval_ms = interval_ms;
	t->fd = -1;
	t->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (t->wake_fd < 0) {
		rc = -errno;
		goto err_slots;
	}
	/* The thread takes no signals: they belong to the application. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = -pthread_create(&t->thread, NULL, telemetry_main, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc < 0)
		goto err_wake;
	*out = t;
	return 0;

err_wake:
	close(t->wake_fd);
err_slots:
	free(t->slots);
err_free:
	free(t);
	return rc;
}

void fqn_telemetry_flush(struct fqn_telemetry *t, int timeout_ms)
{
	uint64_t one = 1, asked;
	int64_t until = fq_clock_ns(CLOCK_MONOTONIC) + (int64_t)timeout_ms * 1000000;

	if (!t)
		return;
	asked = __atomic_add_fetch(&t->flush_asked, 1, __ATOMIC_ACQ_REL);
	if (write(t->wake_fd, &one, sizeof(one)) < 0)
		return;
	while (__atomic_load_n(&t->flush_done, __ATOMIC_ACQUIRE) < asked &&
	       fq_clock_ns(CLOCK_MONOTONIC) < until)
		nanosleep(&(struct timespec){0, 1000000}, NULL);
}

void fqn_telemetry_stop(struct fqn_telemetry *t)
{
	uint64_t one = 1;

	if (!t)
		return;
	__atomic_store_n(&t->stop, 1, __ATOMIC_RELEASE);
	if (write(t->wake_fd, &one, sizeof(one)) < 0)
		FQN_WARN("telemetry: cannot wake the thread: %s", strerror(errno));
	pthread_join(t->thread, NULL);
	t->dropped_no_agent += t->pending.n - t->pending_done; /* frames never written whole */
	FQN_INFO("telemetry: %llu samples sent, %llu dropped (no agent), %llu dropped (ring full)",
		 (unsigned long long)t->sent, (unsigned long long)t->dropped_no_agent,
		 (unsigned long long)t->dropped_full);
	if (t->fd >= 0)
		close(t->fd);
	close(t->wake_fd);
	batch_free(&t->pending);
	free(t->slots);
	free(t);
}

void fqn_telemetry_counts(struct fqn_telemetry *t, struct fqn_telemetry_counts *out)
{
	out->pushed = __atomic_load_n(&t->pushed, __ATOMIC_RELAXED);
	out->dropped_full = __atomic_load_n(&t->dropped_full, __ATOMIC_RELAXED);
	out->sent = __atomic_load_n(&t->sent, __ATOMIC_RELAXED);
	out->dropped_no_agent = __atomic_load_n(&t->dropped_no_agent, __ATOMIC_RELAXED);
	out->connected = __atomic_load_n(&t->fd, __ATOMIC_RELAXED) >= 0;
}
