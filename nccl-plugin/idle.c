#include "nccl-plugin/idle.h"

void fqn_idle_init(struct fqn_idle *s)
{
	pthread_mutex_init(&s->lock, NULL);
	s->head = NULL;
	s->next_ns = 0;
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
