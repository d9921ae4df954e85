#include "nccl-plugin/idle.h"

#include <errno.h>
#include <signal.h>
#include <time.h>

#include "common/clock.h"

void fqn_idle_init(struct fqn_idle *s)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&s->lock, NULL);
	s->head = NULL;
	s->next_ns = 0;
	pthread_mutex_init(&s->wait_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->wake, &ca);
	pthread_condattr_destroy(&ca);
	s->running = s->stop = 0;
}

void fqn_idle_add(struct fqn_idle *s, struct fqn_idle_link *m)
{
	pthread_mutex_lock(&s->lock);
	m->next = s->head;
	s->head = m;
	m->listed = 1;
	pthread_mutex_unlock(&s->lock);
}

void fqn_idle_remove(struct fqn_idle *s, struct fqn_idle_link *m)
{
	if (!m->listed)
		return;
	pthread_mutex_lock(&s->lock);
	for (struct fqn_idle_link **p = &s->head; *p; p = &(*p)->next)
		if (*p == m) {
			*p = m->next;
			break;
		}
	m->listed = 0;
	pthread_mutex_unlock(&s->lock);
}

void fqn_idle_sweep(struct fqn_idle *s, int64_t now, int64_t period_ns,
		    void (*serve)(struct fqn_idle_link *m))
{
	if (now < __atomic_load_n(&s->next_ns, __ATOMIC_RELAXED) || pthread_mutex_trylock(&s->lock))
		return; /* not due, or another thread is at it */
	__atomic_store_n(&s->next_ns, now + period_ns, __ATOMIC_RELAXED);
	for (struct fqn_idle_link *m = s->head; m; m = m->next)
		serve(m);
	pthread_mutex_unlock(&s->lock);
}

static void *idle_main(void *arg)
{
	struct fqn_idle *s = arg;
	struct timespec at;

	pthread_mutex_lock(&s->wait_lock);
	while (!s->stop) {
		clock_gettime(CLOCK_MONOTONIC, &at);
		at.tv_nsec += s->wake_ns % 1000000000;
		at.tv_sec += s->wake_ns / 1000000000 + at.tv_nsec / 1000000000;
		at.tv_nsec %= 1000000000;
		if (pthread_cond_timedwait(&s->wake, &s->wait_lock, &at) != ETIMEDOUT || s->stop)
			continue;
		pthread_mutex_unlock(&s->wait_lock);
		fqn_idle_sweep(s, fq_clock_ns(CLOCK_MONOTONIC), s->sweep_ns, s->serve);
		pthread_mutex_lock(&s->wait_lock);
	}
	pthread_mutex_unlock(&s->wait_lock);
	return NULL;
}

int fqn_idle_start(struct fqn_idle *s, int64_t wake_ns, int64_t sweep_ns,
		   void (*serve)(struct fqn_idle_link *m))
{
	sigset_t all, old;
	int rc;

	if (s->running)
		return 0;
	s->wake_ns = wake_ns > 0 ? wake_ns : 1000000;
	s->sweep_ns = sweep_ns;
	s->serve = serve;
	s->stop = 0;
	/* The thread takes no signals: they belong to the application. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = -pthread_create(&s->thread, NULL, idle_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	s->running = rc == 0;
	return rc;
}

void fqn_idle_stop(struct fqn_idle *s)
{
	if (!s->running)
		return;
	pthread_mutex_lock(&s->wait_lock);
	s->stop = 1;
	pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&s->wait_lock);
	pthread_join(s->thread, NULL);
	s->running = 0;
}
