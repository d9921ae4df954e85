/*
 * strmap: a small string-keyed hash map (chained, grows by doubling) for
 * the controller's per-node, per-path and per-step state.
 */
#ifndef FQ_CONTROLLER_STRMAP_H
#define FQ_CONTROLLER_STRMAP_H

#include <stddef.h>
#include <stdint.h>

struct fq_strmap_entry {
	char *key;   /* owned by the map */
	void *value; /* owned by the caller */
	struct fq_strmap_entry *next;
};

struct fq_strmap {
	struct fq_strmap_entry **buckets;
	size_t nbuckets, count;
};

/* The value stored under key, or NULL. */
void *fq_strmap_get(const struct fq_strmap *m, const char *key);
/* The entry for key, created (value NULL) if missing; NULL on -ENOMEM. */
struct fq_strmap_entry *fq_strmap_upsert(struct fq_strmap *m, const char *key);
/* Removes key; returns its value (NULL if absent). */
void *fq_strmap_remove(struct fq_strmap *m, const char *key);
/* Removes every key that starts with prefix, each value freed with
 * free_value (may be NULL); how many. */
size_t fq_strmap_remove_prefix(struct fq_strmap *m, const char *prefix, void (*free_value)(void *));
/* Calls fn for every entry (the map must not change meanwhile). */
void fq_strmap_each(const struct fq_strmap *m, void (*fn)(struct fq_strmap_entry *e, void *arg), void *arg);
/* Frees the map's entries and keys, and each value with free_value (may be NULL). */
void fq_strmap_clear(struct fq_strmap *m, void (*free_value)(void *));

/* The key of a job step in a map keyed by step ("JOB.STEP") into key;
 * returns key. */
#define FQ_STEP_KEY_LEN 32
const char *fq_strmap_step_key(char key[FQ_STEP_KEY_LEN], uint64_t job, uint32_t step);

#endif /* FQ_CONTROLLER_STRMAP_H */
