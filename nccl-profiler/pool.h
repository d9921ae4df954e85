/*
 * pool: a fixed set of slot indices handed out and back by any thread
 * without a lock: a Treiber stack whose head carries a tag (bumped on
 * every pop) beside the index, so a slot popped and pushed back between
 * another thread's read and its compare-and-swap (ABA) fails that CAS.
 * Pop on empty returns FQP_POOL_NIL at once (the caller drops and counts).
 */
#ifndef FQP_POOL_H
#define FQP_POOL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define FQP_POOL_NIL 0xffffffffu

struct fqp_pool {
	_Atomic uint64_t head; /* tag << 32 | index */
	unsigned n;
	_Atomic uint32_t *next; /* n entries, caller's memory */
};

/* next: n entries the caller owns. Every index starts free. */
void fqp_pool_init(struct fqp_pool *p, _Atomic uint32_t *next, unsigned n);
uint32_t fqp_pool_pop(struct fqp_pool *p);
void fqp_pool_push(struct fqp_pool *p, uint32_t i);

#endif /* FQP_POOL_H */
