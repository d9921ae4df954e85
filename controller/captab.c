/*
 * captab: the detector's state tables (see captab.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "controller/captab.h"
#include "controller/rules.h"

static uint64_t fnv1a(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h = 14695981039346656037ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 1099511628211ULL;
	return h;
}

void fq_captab_init(struct fq_captab *t, void *ctx, size_t key_off, size_t key_size, size_t ent_size,
		    size_t max, int64_t expire_ns, void (*drop)(void *ctx, struct fq_captab_ent *e))
{
	*t = (struct fq_captab){.key_off = key_off,
				.key_size = key_size,
				.ent_size = ent_size,
				.max = max ? max : 1,
				.expire_ns = expire_ns,
				.drop = drop,
				.ctx = ctx};
}

static const void *ent_key(const struct fq_captab *t, const struct fq_captab_ent *e)
{
	return (const char *)e + t->key_off;
}

struct fq_captab_ent *fq_captab_find(const struct fq_captab *t, const void *key)
{
	uint64_t h;

	if (!t->nb)
		return NULL;
	h = fnv1a(key, t->key_size);
	for (struct fq_captab_ent *e = t->b[h & (t->nb - 1)]; e; e = e->next)
		if (e->hash == h && memcmp(ent_key(t, e), key, t->key_size) == 0)
			return e;
	return NULL;
}

void fq_captab_unlink(struct fq_captab *t, struct fq_captab_ent *e)
{
	struct fq_captab_ent **pp = &t->b[e->hash & (t->nb - 1)];

	while (*pp && *pp != e)
		pp = &(*pp)->next;
	if (*pp)
		*pp = e->next;
	t->n--;
	if (t->drop)
		t->drop(t->ctx, e);
	free(e);
}

size_t fq_captab_drop_upto(struct fq_captab *t, int64_t cutoff, const struct fq_captab_ent *keep)
{
	size_t dropped = 0;

	for (size_t i = 0; i < t->nb; i++) {
		struct fq_captab_ent *e = t->b[i], *next;

		for (; e; e = next) {
			next = e->next;
			if (e != keep && e->seen_ns <= cutoff) {
				fq_captab_unlink(t, e);
				dropped++;
			}
		}
	}
	return dropped;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

void fq_captab_make_room(struct fq_captab *t, int64_t now, const struct fq_captab_ent *keep)
{
	int64_t *seen;
	size_t k = 0;

	if (t->expire_ns > 0)
		fq_captab_drop_upto(t, fq_rule_sat_sub(now, t->expire_ns) - 1, keep);
	if (t->n < t->max)
		return;
	seen = malloc(t->n * sizeof(*seen));
	if (!seen)
		return;
	for (size_t i = 0; i < t->nb; i++)
		for (struct fq_captab_ent *e = t->b[i]; e; e = e->next)
			if (e != keep)
				seen[k++] = e->seen_ns;
	if (k) {
		qsort(seen, k, sizeof(*seen), cmp_i64);
		fq_captab_drop_upto(t, seen[k / 8], keep);
	}
	free(seen);
}

static int grow(struct fq_captab *t)
{
	size_t nb = t->nb ? t->nb * 2 : 64;
	struct fq_captab_ent **b = calloc(nb, sizeof(*b));

	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < t->nb; i++) {
		struct fq_captab_ent *e = t->b[i], *next;

		for (; e; e = next) {
			next = e->next;
			e->next = b[e->hash & (nb - 1)];
			b[e->hash & (nb - 1)] = e;
		}
	}
	free(t->b);
	t->b = b;
	t->nb = nb;
	return 0;
}

struct fq_captab_ent *fq_captab_get(struct fq_captab *t, const void *key, int64_t now, bool evict,
				    bool *created)
{
	struct fq_captab_ent *e = fq_captab_find(t, key);

	if (created)
		*created = false;
	if (!e) {
		if (t->n >= t->max && (!evict || (fq_captab_make_room(t, now, NULL), t->n >= t->max)))
			return NULL;
		if (t->n >= t->nb && grow(t) < 0)
			return NULL;
		e = calloc(1, t->ent_size);
		if (!e)
			return NULL;
		memcpy((char *)e + t->key_off, key, t->key_size);
		e->hash = fnv1a(key, t->key_size);
		e->seen_ns = now;
		e->next = t->b[e->hash & (t->nb - 1)];
		t->b[e->hash & (t->nb - 1)] = e;
		t->n++;
		if (created)
			*created = true;
	}
	if (now > e->seen_ns)
		e->seen_ns = now;
	return e;
}

void fq_captab_free(struct fq_captab *t)
{
	fq_captab_drop_upto(t, INT64_MAX, NULL);
	free(t->b);
	t->b = NULL;
	t->nb = 0;
}
