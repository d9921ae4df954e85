/*
 * authq: see authq.h. A fixed table of `depth` slots under one mutex; the
 * worker takes the queued slot with the lowest ticket (first come, first
 * decoded), and signals finished ones through an eventfd the loop watches.
 */
#include "controller/authq.h"

#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/log.h"

enum slot_state {
	FREE,
	QUEUED,
	RUNNING,
	DONE
};

struct slot {
	enum slot_state state;
	bool cancelled; /* RUNNING when cancelled: freed when done */
	int64_t ticket;
	char cred[FQ_AUTHQ_CRED_MAX + 1];
	uint8_t nonce[FQ_MUNGE_NONCE_SIZE], peer_nonce[FQ_MUNGE_NONCE_SIZE];
	bool reply_wanted;
	char *reply; /* minted for peer_nonce (malloc'd) */
	uid_t expected_uid, uid;
	int rc;
	char err[256];
	fq_authq_done_fn done;
	void *arg;
};

struct fq_authq {
	pthread_mutex_t lock;
	pthread_cond_t work;
	pthread_t thread;
	bool stop;
	int efd;
	struct event *ev;
	char *munge_socket;
	int64_t next_ticket;
	size_t depth;
	struct slot *slots;
};

static struct slot *next_queued(struct fq_authq *q)
{
	struct slot *best = NULL;

	for (size_t i = 0; i < q->depth; i++)
		if (q->slots[i].state == QUEUED && (!best || q->slots[i].ticket < best->ticket))
			best = &q->slots[i];
	return best;
}

static void *worker(void *arg)
{
	struct fq_authq *q = arg;
	uint64_t one = 1;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		struct slot *s;

		while (!q->stop && !(s = next_queued(q)))
			pthread_cond_wait(&q->work, &q->lock);
		if (q->stop)
			break;
		s->state = RUNNING;
		pthread_mutex_unlock(&q->lock);
		/* The slot's inputs are not touched by the loop while RUNNING. */
		s->err[0] = '\0';
		s->rc = fq_munge_decode(q->munge_socket, s->cred, s->nonce, sizeof(s->nonce), s->expected_uid,
					&s->uid, NULL, s->err, sizeof(s->err));
		if (s->rc == 0 && s->reply_wanted &&
		    fq_munge_encode(q->munge_socket, s->peer_nonce, sizeof(s->peer_nonce), 0, &s->reply,
				    s->err, sizeof(s->err)) < 0)
			s->reply = NULL;
		pthread_mutex_lock(&q->lock);
		s->state = DONE;
		if (write(q->efd, &one, sizeof(one)) < 0)
			fq_log_rl(FQ_LOG_ERROR, "authq: cannot wake the event loop: %s", strerror(errno));
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

/* On the loop: deliver every finished decode, one callback at a time with
 * the lock released (a callback may submit or cancel). */
static void on_done(evutil_socket_t fd, short what, void *arg)
{
	struct fq_authq *q = arg;
	uint64_t n;

	(void)what;
	if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		fq_log_rl(FQ_LOG_ERROR, "authq: eventfd: %s", strerror(errno));
	for (;;) {
		struct slot *s = NULL, copy;

		pthread_mutex_lock(&q->lock);
		for (size_t i = 0; i < q->depth && !s; i++)
			if (q->slots[i].state == DONE)
				s = &q->slots[i];
		if (s) {
			copy = *s;
			s->reply = NULL;
			s->state = FREE;
		}
		pthread_mutex_unlock(&q->lock);
		if (!s)
			return;
		if (!copy.cancelled)
			copy.done(copy.arg, copy.rc, copy.uid, copy.err, copy.reply);
		free(copy.reply);
	}
}

struct fq_authq *fq_authq_create(struct event_base *base, const char *munge_socket, size_t depth)
{
	struct fq_authq *q = calloc(1, sizeof(*q));
	int rc;

	if (!q)
		return NULL;
	q->efd = -1;
	q->depth = depth ? depth : 1;
	q->next_ticket = 1;
	if (!(q->slots = calloc(q->depth, sizeof(*q->slots))) ||
	    (munge_socket && !(q->munge_socket = strdup(munge_socket))))
		goto fail;
	if ((q->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0 ||
	    !(q->ev = event_new(base, q->efd, EV_READ | EV_PERSIST, on_done, q)) ||
	    event_add(q->ev, NULL) < 0)
		goto fail;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->work, NULL);
	if ((rc = pthread_create(&q->thread, NULL, worker, q)) != 0) {
		pthread_cond_destroy(&q->work);
		pthread_mutex_destroy(&q->lock);
		errno = rc;
		goto fail;
	}
	return q;
fail:
	if (q->ev)
		event_free(q->ev);
	if (q->efd >= 0)
		close(q->efd);
	free(q->munge_socket);
	free(q->slots);
	free(q);
	return NULL;
}

void fq_authq_destroy(struct fq_authq *q)
{
	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	q->stop = true;
	pthread_cond_signal(&q->work);
	pthread_mutex_unlock(&q->lock);
	pthread_join(q->thread, NULL);
	for (size_t i = 0; i < q->depth; i++)
		free(q->slots[i].reply);
	pthread_cond_destroy(&q->work);
	pthread_mutex_destroy(&q->lock);
	event_free(q->ev);
	close(q->efd);
	free(q->munge_socket);
	free(q->slots);
	free(q);
}

int64_t fq_authq_submit(struct fq_authq *q, const char *cred, const uint8_t nonce[FQ_MUNGE_NONCE_SIZE],
			uid_t expected_uid, const uint8_t *peer_nonce, fq_authq_done_fn done, void *arg)
{
	size_t len = strlen(cred);
	struct slot *s = NULL;
	int64_t ticket;

	if (len > FQ_AUTHQ_CRED_MAX)
		return -EMSGSIZE;
	pthread_mutex_lock(&q->lock);
	for (size_t i = 0; i < q->depth && !s; i++)
		if (q->slots[i].state == FREE)
			s = &q->slots[i];
	if (!s) {
		pthread_mutex_unlock(&q->lock);
		return -EBUSY;
	}
	memcpy(s->cred, cred, len + 1);
	memcpy(s->nonce, nonce, sizeof(s->nonce));
	s->expected_uid = expected_uid;
	s->reply_wanted = peer_nonce != NULL;
	if (peer_nonce)
		memcpy(s->peer_nonce, peer_nonce, sizeof(s->peer_nonce));
	s->reply = NULL;
	s->done = done;
	s->arg = arg;
	s->cancelled = false;
	s->ticket = ticket = q->next_ticket++;
	s->state = QUEUED;
	pthread_cond_signal(&q->work);
	pthread_mutex_unlock(&q->lock);
	return ticket;
}

void fq_authq_cancel(struct fq_authq *q, int64_t ticket)
{
	pthread_mutex_lock(&q->lock);
	for (size_t i = 0; i < q->depth; i++) {
		struct slot *s = &q->slots[i];

		if (s->state == FREE || s->ticket != ticket)
			continue;
		if (s->state == RUNNING) {
			s->cancelled = true;
		} else {
			free(s->reply);
			s->reply = NULL;
			s->state = FREE;
		}
	}
	pthread_mutex_unlock(&q->lock);
}

size_t fq_authq_pending(struct fq_authq *q)
{
	size_t n = 0;

	pthread_mutex_lock(&q->lock);
	for (size_t i = 0; i < q->depth; i++)
		n += q->slots[i].state != FREE;
	pthread_mutex_unlock(&q->lock);
	return n;
}
