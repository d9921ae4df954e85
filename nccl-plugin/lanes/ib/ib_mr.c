/* ib_mr: registration cache (see ib_mr.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "nccl-plugin/lanes/ib/ib_mr.h"

struct fqib_mr_cache {
	fqib_reg_fn reg;
	fqib_dereg_fn dereg;
	void *ctx;
	size_t page;
	int max, n;
	uint64_t clock;
	pthread_mutex_t lock;
	struct fqib_mr **e; /* n entries, unordered; pointers stay valid */
};

int fqib_mr_cache_create(fqib_reg_fn reg, fqib_dereg_fn dereg, void *ctx, int max, size_t page,
			 struct fqib_mr_cache **out)
{
	struct fqib_mr_cache *c;

	*out = NULL;
	if (!page) {
		long ps = sysconf(_SC_PAGESIZE);
		page = ps > 0 ? (size_t)ps : 4096;
	}
	if (!reg || !dereg || max < 1 || (page & (page - 1)))
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->e = calloc((size_t)max, sizeof(*c->e));
	if (!c->e) {
		free(c);
		return -ENOMEM;
	}
	c->reg = reg;
	c->dereg = dereg;
	c->ctx = ctx;
	c->max = max;
	c->page = page;
	pthread_mutex_init(&c->lock, NULL);
	*out = c;
	return 0;
}

void fqib_mr_cache_destroy(struct fqib_mr_cache *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->n; i++) {
		c->dereg(c->ctx, c->e[i]->mr);
		free(c->e[i]);
	}
	pthread_mutex_destroy(&c->lock);
	free(c->e);
	free(c);
}

static void evict(struct fqib_mr_cache *c, int i)
{
	c->dereg(c->ctx, c->e[i]->mr);
	free(c->e[i]);
	c->e[i] = c->e[--c->n];
}

/* Make room for one entry: 0, or -ENOSPC when every entry is referenced. */
static int make_room(struct fqib_mr_cache *c)
{
	int lru = -1;

	if (c->n < c->max)
		return 0;
	for (int i = 0; i < c->n; i++)
		if (c->e[i]->refs == 0 && (lru < 0 || c->e[i]->last_use < c->e[lru]->last_use))
			lru = i;
	if (lru < 0)
		return -ENOSPC;
	evict(c, lru);
	return 0;
}

int fqib_mr_get(struct fqib_mr_cache *c, void *addr, size_t len, struct fqib_mr **out)
{
	uintptr_t a = (uintptr_t)addr, start, end;
	struct fqib_mr *m;
	int rc;

	*out = NULL;
	if (len == 0 || a + len < a || a + len > UINTPTR_MAX - c->page)
		return -EINVAL;
	start = a & ~(uintptr_t)(c->page - 1);
	end = (a + len + c->page - 1) & ~(uintptr_t)(c->page - 1);
	pthread_mutex_lock(&c->lock);
	c->clock++;
	for (int i = 0; i < c->n; i++) {
		m = c->e[i];
		if (m->start <= start && end <= m->start + m->len) {
			m->refs++;
			m->last_use = c->clock;
			*out = m;
			pthread_mutex_unlock(&c->lock);
			return 0;
		}
	}
	rc = make_room(c);
	m = rc == 0 ? calloc(1, sizeof(*m)) : NULL;
	if (rc == 0 && !m)
		rc = -ENOMEM;
	if (rc == 0) {
		m->start = start;
		m->len = end - start;
		rc = c->reg(c->ctx, (void *)start, m->len, &m->mr, &m->lkey, &m->rkey);
		if (rc < 0) {
			free(m);
		} else {
			m->refs = 1;
			m->last_use = c->clock;
			c->e[c->n++] = m;
			*out = m;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int fqib_mr_put(struct fqib_mr_cache *c, struct fqib_mr *m)
{
	int rc = -EINVAL;

	pthread_mutex_lock(&c->lock);
	for (int i = 0; i < c->n; i++)
		if (c->e[i] == m && m->refs > 0) {
			m->refs--;
			rc = 0;
			break;
		}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int fqib_mr_count(struct fqib_mr_cache *c)
{
	int n;

	pthread_mutex_lock(&c->lock);
	n = c->n;
	pthread_mutex_unlock(&c->lock);
	return n;
}
