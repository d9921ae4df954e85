/*
 * test-strmap: the controller's string-keyed map (controller/strmap.h):
 * get, upsert, remove, and removing a job step's keys by prefix, which
 * must take exactly the keys under it (not step 1's for step 10's) and
 * free each value once, across the map's growth.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/strmap.h"
#include "tests/unit/tap.h"

static int freed;

static void count_free(void *v)
{
	freed++;
	free(v);
}

static void put(struct fq_strmap *m, const char *key)
{
	struct fq_strmap_entry *e = fq_strmap_upsert(m, key);

	if (e && !e->value)
		e->value = strdup(key);
}

static void count_each(struct fq_strmap_entry *e, void *arg)
{
	(void)e;
	(*(size_t *)arg)++;
}

int main(void)
{
	struct fq_strmap m = {0};
	char key[64];
	size_t n = 0;

	plan(9);
	ok(!fq_strmap_get(&m, "x") && !fq_strmap_remove(&m, "x") && !fq_strmap_remove_prefix(&m, "x", NULL),
	   "an empty map: nothing to get or remove");
	for (unsigned i = 0; i < 200; i++) { /* through several doublings */
		snprintf(key, sizeof(key), "7.%u.%u", i % 2 ? 1 : 10, i);
		put(&m, key);
	}
	put(&m, "7.1");
	put(&m, "17.1.0");
	is_int(m.count, 202, "202 keys");
	is_str(fq_strmap_get(&m, "7.1.3"), "7.1.3", "a key's value");
	is_int(fq_strmap_remove_prefix(&m, "7.1.", count_free), 100, "step 7.1's 100 keys removed");
	is_int(freed, 100, "... each value freed once");
	ok(!fq_strmap_get(&m, "7.1.3") && fq_strmap_get(&m, "7.10.2") && fq_strmap_get(&m, "7.1") &&
	       fq_strmap_get(&m, "17.1.0"),
	   "step 7.10's keys, the key 7.1 itself and 17.1's stay");
	fq_strmap_each(&m, count_each, &n);
	is_int(n, m.count, "the walk sees what the count says (%zu)", n);
	is_int(fq_strmap_remove_prefix(&m, "7.1.", count_free), 0, "again: none");
	freed = 0;
	fq_strmap_clear(&m, count_free);
	is_int(freed, 102, "the rest freed by clear");
	return done_testing();
}
