/*
 * captab: a chained hash table of fixed-size entries with a cap on their
 * number, for the detector's per-path, NIC, node, step and anomaly state.
 * Entries are found by a fixed-size key inside them; each remembers when
 * it was last seen. A full table first drops what expired, then the least
 * recently seen eighth, so memory stays bounded whatever agents send.
 * An entry type embeds struct fq_captab_ent first. Not thread-safe.
 */
#ifndef FQ_CONTROLLER_CAPTAB_H
#define FQ_CONTROLLER_CAPTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fq_captab_ent {
	struct fq_captab_ent *next;
	uint64_t hash;
	int64_t seen_ns;
};

struct fq_captab {
	struct fq_captab_ent **b;
	size_t nb, n, max;
	size_t key_off, key_size, ent_size;
	int64_t expire_ns;
	void (*drop)(void *ctx, struct fq_captab_ent *e); /* before an entry is freed (may be NULL) */
	void *ctx;
};

/* Entries of ent_size bytes keyed by key_size bytes at key_off; at most max
 * (>= 1); expire_ns > 0: entries unseen that long go first when full. */
void fq_captab_init(struct fq_captab *t, void *ctx, size_t key_off, size_t key_size, size_t ent_size,
		    size_t max, int64_t expire_ns, void (*drop)(void *ctx, struct fq_captab_ent *e));
struct fq_captab_ent *fq_captab_find(const struct fq_captab *t, const void *key);
/* The entry for key, created (zeroed) if new; NULL: no memory, or the
 * table is full and may not evict (evict false). seen_ns moves forward. */
struct fq_captab_ent *fq_captab_get(struct fq_captab *t, const void *key, int64_t now, bool evict,
				    bool *created);
void fq_captab_unlink(struct fq_captab *t, struct fq_captab_ent *e);
/* Drops every entry with seen_ns <= cutoff (but keep); returns how many. */
size_t fq_captab_drop_upto(struct fq_captab *t, int64_t cutoff, const struct fq_captab_ent *keep);
/* Full: drop what expired, else the least recently seen eighth (never keep). */
void fq_captab_make_room(struct fq_captab *t, int64_t now, const struct fq_captab_ent *keep);
void fq_captab_free(struct fq_captab *t);

/* for (type *var ...) over every entry; var may be unlinked in the body. */
#define FQ_CAPTAB_FOREACH(t, type, var, nextvar)                                                             \
	for (size_t i_##var = 0; i_##var < (t)->nb; i_##var++)                                               \
		for (struct fq_captab_ent *e_##var = (t)->b[i_##var], *nextvar; e_##var; e_##var = nextvar)  \
			for (type *var = (nextvar = e_##var->next, (type *)e_##var); var; var = NULL)

#endif /* FQ_CONTROLLER_CAPTAB_H */
