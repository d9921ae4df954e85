/*
 * ib_mr: a cache of memory registrations, keyed by page-aligned range.
 *
 * NCCL registers the same buffers over and over (every connection, every
 * communicator); a verbs registration pins pages and costs tens of
 * microseconds per MiB, so ranges are registered once, page-aligned, and
 * shared: get() returns an entry covering [addr, addr+len) (an existing one
 * if some entry covers it, else a new registration of the enclosing pages)
 * with a reference taken; put() drops it. An entry whose last reference is
 * gone stays registered (a later get() of the same buffer is free) until
 * the cache holds max entries and room is needed: then the least recently
 * used idle entry is deregistered. When all max entries are referenced,
 * get() fails with -ENOSPC rather than pin without bound.
 *
 * The registration itself is a function pointer (ibv_reg_mr on a PD in the
 * plugin; a fake in tests). Thread-safe: one mutex around the table.
 */
#ifndef FQIB_MR_H
#define FQIB_MR_H

#include <stddef.h>
#include <stdint.h>

struct fqib_mr {
	uintptr_t start; /* page-aligned */
	size_t len;      /* multiple of the page size */
	void *mr;        /* what reg returned (struct ibv_mr *) */
	uint32_t lkey, rkey;
	int refs;
	uint64_t last_use; /* cache clock at the last get() */
};

/* Register [addr, addr+len): 0 and *mr, *lkey, *rkey, or a negative errno. */
typedef int (*fqib_reg_fn)(void *ctx, void *addr, size_t len, void **mr, uint32_t *lkey, uint32_t *rkey);
typedef void (*fqib_dereg_fn)(void *ctx, void *mr);

struct fqib_mr_cache;

/* page: a power of two (0: the system page size). max >= 1 entries. */
int fqib_mr_cache_create(fqib_reg_fn reg, fqib_dereg_fn dereg, void *ctx, int max, size_t page,
			 struct fqib_mr_cache **out);
/* Deregisters every entry, referenced or not. */
void fqib_mr_cache_destroy(struct fqib_mr_cache *c);

/* 0 and *out (referenced), -EINVAL (len 0 or the range wraps), -ENOSPC,
 * or reg's error. */
int fqib_mr_get(struct fqib_mr_cache *c, void *addr, size_t len, struct fqib_mr **out);
/* Drop a reference from get(). -EINVAL if m is not an entry with one. */
int fqib_mr_put(struct fqib_mr_cache *c, struct fqib_mr *m);

/* Entries now registered (referenced or idle). */
int fqib_mr_count(struct fqib_mr_cache *c);

#endif /* FQIB_MR_H */
