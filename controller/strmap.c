/*
 * strmap: see strmap.h.
 */
#include "controller/strmap.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	while (*s)
		h = (h ^ (uint8_t)*s++) * 1099511628211ull;
	return h;
}

void *fq_strmap_get(const struct fq_strmap *m, const char *key)
{
	if (!m->nbuckets)
		return NULL;
	for (struct fq_strmap_entry *e = m->buckets[hash(key) & (m->nbuckets - 1)]; e; e = e->next)
		if (!strcmp(e->key, key))
			return e->value;
	return NULL;
}

static int grow(struct fq_strmap *m)
{
	size_t nb = m->nbuckets ? m->nbuckets * 2 : 64;
	struct fq_strmap_entry **b = calloc(nb, sizeof(*b));

	if (!b)
		return -1;
	for (size_t i = 0; i < m->nbuckets; i++) {
		struct fq_strmap_entry *e = m->buckets[i], *next;
		for (; e; e = next) {
			next = e->next;
			size_t j = hash(e->key) & (nb - 1);
			e->next = b[j];
			b[j] = e;
		}
	}
	free(m->buckets);
	m->buckets = b;
	m->nbuckets = nb;
	return 0;
}

struct fq_strmap_entry *fq_strmap_upsert(struct fq_strmap *m, const char *key)
{
	struct fq_strmap_entry *e;
	size_t j;

	if (m->nbuckets) {
		for (e = m->buckets[hash(key) & (m->nbuckets - 1)]; e; e = e->next)
			if (!strcmp(e->key, key))
				return e;
	}
	if (m->count >= m->nbuckets && grow(m) < 0)
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e || !(e->key = strdup(key))) {
		free(e);
		return NULL;
	}
	j = hash(key) & (m->nbuckets - 1);
	e->next = m->buckets[j];
	m->buckets[j] = e;
	m->count++;
	return e;
}

void *fq_strmap_remove(struct fq_strmap *m, const char *key)
{
	if (!m->nbuckets)
		return NULL;
	for (struct fq_strmap_entry **p = &m->buckets[hash(key) & (m->nbuckets - 1)]; *p; p = &(*p)->next) {
		struct fq_strmap_entry *e = *p;
		if (!strcmp(e->key, key)) {
			void *v = e->value;
			*p = e->next;
			free(e->key);
			free(e);
			m->count--;
			return v;
		}
	}
	return NULL;
}

size_t fq_strmap_remove_prefix(struct fq_strmap *m, const char *prefix, void (*free_value)(void *))
{
	size_t len = strlen(prefix), n = 0;

	for (size_t i = 0; i < m->nbuckets; i++)
		for (struct fq_strmap_entry **p = &m->buckets[i]; *p;) {
			struct fq_strmap_entry *e = *p;

			if (strncmp(e->key, prefix, len)) {
				p = &e->next;
				continue;
			}
			*p = e->next;
			if (free_value)
				free_value(e->value);
			free(e->key);
			free(e);
			m->count--;
			n++;
		}
	return n;
}

void fq_strmap_each(const struct fq_strmap *m, void (*fn)(struct fq_strmap_entry *e, void *arg), void *arg)
{
	for (size_t i = 0; i < m->nbuckets; i++)
		for (struct fq_strmap_entry *e = m->buckets[i]; e; e = e->next)
			fn(e, arg);
}

void fq_strmap_clear(struct fq_strmap *m, void (*free_value)(void *))
{
	for (size_t i = 0; i < m->nbuckets; i++) {
		struct fq_strmap_entry *e = m->buckets[i], *next;
		for (; e; e = next) {
			next = e->next;
			if (free_value)
				free_value(e->value);
			free(e->key);
			free(e);
		}
	}
	free(m->buckets);
	m->buckets = NULL;
	m->nbuckets = m->count = 0;
}

const char *fq_strmap_step_key(char key[FQ_STEP_KEY_LEN], uint64_t job, uint32_t step)
{
	snprintf(key, FQ_STEP_KEY_LEN, "%llu.%u", (unsigned long long)job, step);
	return key;
}
