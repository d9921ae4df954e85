/*
 * worker: see worker.h. Two lists under one mutex: queued (taken by the
 * thread from the head) and finished (delivered by the loop in order).
 */
#include "slurmd-agent/worker.h"

#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/log.h"

struct list {
	struct fq_job *head, *tail;
};

struct fq_worker {
	pthread_mutex_t lock;
	pthread_cond_t work;
	pthread_t thread;
	bool stop;
	struct list queued, finished;
	int efd;
	struct event *ev;
	size_t pending; /* the loop's count: submitted, done not yet called */
};

static void push(struct list *l, struct fq_job *j)
{
	j->next = NULL;
	if (l->tail)
		l->tail->next = j;
	else
		l->head = j;
	l->tail = j;
}

static struct fq_job *pop(struct list *l)
{
	struct fq_job *j = l->head;

	if (j) {
		l->head = j->next;
		if (!l->head)
			l->tail = NULL;
	}
	return j;
}

static void *thread_main(void *arg)
{
	struct fq_worker *w = arg;
	uint64_t one = 1;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		struct fq_job *j;

		while (!w->stop && !w->queued.head)
			pthread_cond_wait(&w->work, &w->lock);
		if (w->stop)
			break;
		j = pop(&w->queued);
		pthread_mutex_unlock(&w->lock);
		j->run(j);
		pthread_mutex_lock(&w->lock);
		push(&w->finished, j);
		if (write(w->efd, &one, sizeof(one)) < 0)
			fq_log_rl(FQ_LOG_ERROR, "worker: cannot wake the event loop: %s", strerror(errno));
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* Deliver finished jobs one at a time with the lock released (a done may
 * submit again). */
static void deliver(struct fq_worker *w, struct list *from, bool ran)
{
	for (;;) {
		struct fq_job *j;

		pthread_mutex_lock(&w->lock);
		j = pop(from);
		pthread_mutex_unlock(&w->lock);
		if (!j)
			return;
		w->pending--;
		j->done(j, ran);
	}
}

static void on_finished(evutil_socket_t fd, short what, void *arg)
{
	struct fq_worker *w = arg;
	uint64_t n;

	(void)what;
	if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		fq_log_rl(FQ_LOG_ERROR, "worker: eventfd: %s", strerror(errno));
	deliver(w, &w->finished, true);
}

struct fq_worker *fq_worker_create(struct event_base *base)
{
	struct fq_worker *w = calloc(1, sizeof(*w));
	int rc;

	if (!w)
		return NULL;
	w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->efd < 0)
		goto fail_w;
	w->ev = event_new(base, w->efd, EV_READ | EV_PERSIST, on_finished, w);
	if (!w->ev || event_add(w->ev, NULL) < 0) {
		errno = ENOMEM;
		goto fail_ev;
	}
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->work, NULL);
	rc = pthread_create(&w->thread, NULL, thread_main, w);
	if (rc != 0) {
		pthread_cond_destroy(&w->work);
		pthread_mutex_destroy(&w->lock);
		errno = rc;
		goto fail_ev;
	}
	return w;
fail_ev:
	if (w->ev)
		event_free(w->ev);
	close(w->efd);
fail_w:
	free(w);
	return NULL;
}

void fq_worker_submit(struct fq_worker *w, struct fq_job *j)
{
	w->pending++;
	pthread_mutex_lock(&w->lock);
	push(&w->queued, j);
	pthread_cond_signal(&w->work);
	pthread_mutex_unlock(&w->lock);
}

size_t fq_worker_pending(const struct fq_worker *w)
{
	return w->pending;
}

void fq_worker_destroy(struct fq_worker *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_signal(&w->work);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	deliver(w, &w->finished, true);
	deliver(w, &w->queued, false);
	event_free(w->ev);
	close(w->efd);
	pthread_cond_destroy(&w->work);
	pthread_mutex_destroy(&w->lock);
	free(w);
}
