/* pool: lock-free index stack (see pool.h). */
#include "nccl-profiler/pool.h"

void fqp_pool_init(struct fqp_pool *p, _Atomic uint32_t *next, unsigned n)
{
	p->n = n;
	p->next = next;
	for (unsigned i = 0; i < n; i++)
		atomic_store_explicit(&next[i], i + 1 < n ? i + 1 : FQP_POOL_NIL, memory_order_relaxed);
	atomic_store_explicit(&p->head, n ? 0 : FQP_POOL_NIL, memory_order_release);
}

uint32_t fqp_pool_pop(struct fqp_pool *p)
{
	uint64_t h = atomic_load_explicit(&p->head, memory_order_acquire);

	for (;;) {
		uint32_t i = (uint32_t)h, nx;
		uint64_t nh;

		if (i == FQP_POOL_NIL || i >= p->n)
			return FQP_POOL_NIL;
		/* May be stale if i was popped meanwhile; then the tag moved
		 * and the CAS below fails. */
		nx = atomic_load_explicit(&p->next[i], memory_order_relaxed);
		nh = ((h >> 32) + 1) << 32 | nx;
		if (atomic_compare_exchange_weak_explicit(&p->head, &h, nh, memory_order_acq_rel,
							  memory_order_acquire))
			return i;
	}
}

void fqp_pool_push(struct fqp_pool *p, uint32_t i)
{
	uint64_t h = atomic_load_explicit(&p->head, memory_order_relaxed);

	if (i >= p->n)
		return;
	for (;;) {
		atomic_store_explicit(&p->next[i], (uint32_t)h, memory_order_relaxed);
		if (atomic_compare_exchange_weak_explicit(&p->head, &h, (h & ~0xffffffffull) | i,
							  memory_order_release, memory_order_relaxed))
			return;
	}
}
