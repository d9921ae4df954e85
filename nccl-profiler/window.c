/* window: lock-free window table and op-record ring (see window.h). */
#include <errno.h>
#include <string.h>

#include "nccl-profiler/window.h"

/* A key packs into one word so that one CAS claims a slot: kind (8 bits),
 * dev + 1 (8), sub (8), id (40, sign-extended back). 0: empty. */
#define ID_BITS 40

struct fqp_win_slot {
	_Atomic uint64_t key;
	_Atomic uint64_t count, bytes, dur_sum, dur_max;
	_Atomic uint64_t hist[FQP_HIST_BUCKETS];
};

struct fqp_wintab {
	struct fqp_win_slot slot[FQP_WINDOWS];
};

struct fqp_opring_cell {
	_Atomic uint64_t seq;
	struct fqp_op_record rec;
};

struct fqp_opring {
	unsigned mask;
	_Atomic uint64_t head; /* next to push */
	char pad[64];
	_Atomic uint64_t tail; /* next to pop */
	struct fqp_opring_cell cell[];
};

unsigned fqp_hist_bucket(uint64_t ns)
{
	unsigned b = ns ? 64u - (unsigned)__builtin_clzll(ns) : 0;

	return b < FQP_HIST_BUCKETS ? b : FQP_HIST_BUCKETS - 1;
}

static uint64_t key_pack(const struct fqp_window_key *k)
{
	return ((uint64_t)(k->kind & 0xff) << 56) | ((uint64_t)((k->dev + 1) & 0xff) << 48) |
	       ((uint64_t)(k->sub & 0xff) << 40) | ((uint64_t)k->id & ((1ull << ID_BITS) - 1));
}

static void key_unpack(uint64_t v, struct fqp_window_key *k)
{
	uint64_t id = v & ((1ull << ID_BITS) - 1);

	k->kind = (int)(v >> 56);
	k->dev = (int)((v >> 48) & 0xff) - 1;
	k->sub = (int)((v >> 40) & 0xff);
	k->id = (int64_t)(id << (64 - ID_BITS)) >> (64 - ID_BITS);
}

size_t fqp_wintab_size(void)
{
	return sizeof(struct fqp_wintab);
}

void fqp_wintab_init(struct fqp_wintab *t)
{
	memset(t, 0, sizeof(*t));
}

static struct fqp_win_slot *slot_for(struct fqp_wintab *t, uint64_t key)
{
	uint64_t h = key * 0x9e3779b97f4a7c15ull;
	unsigned i = (unsigned)(h >> 40) % FQP_WINDOWS;

	for (int p = 0; p < FQP_WINDOW_PROBES; p++, i = (i + 1) % FQP_WINDOWS) {
		struct fqp_win_slot *s = &t->slot[i];
		uint64_t cur = atomic_load_explicit(&s->key, memory_order_acquire), zero = 0;

		if (cur == key)
			return s;
		if (cur == 0) {
			if (atomic_compare_exchange_strong_explicit(&s->key, &zero, key, memory_order_acq_rel,
								    memory_order_acquire) ||
			    zero == key)
				return s;
		}
	}
	return NULL;
}

int fqp_wintab_add(struct fqp_wintab *t, const struct fqp_window_key *k, uint64_t bytes, uint64_t dur_ns)
{
	struct fqp_win_slot *s = slot_for(t, key_pack(k));
	uint64_t max;

	if (!s)
		return -ENOSPC;
	atomic_fetch_add_explicit(&s->count, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->bytes, bytes, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->dur_sum, dur_ns, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->hist[fqp_hist_bucket(dur_ns)], 1, memory_order_relaxed);
	max = atomic_load_explicit(&s->dur_max, memory_order_relaxed);
	while (dur_ns > max && !atomic_compare_exchange_weak_explicit(
				   &s->dur_max, &max, dur_ns, memory_order_relaxed, memory_order_relaxed))
		;
	return 0;
}

static uint64_t take(_Atomic uint64_t *v, int reset)
{
	return reset ? atomic_exchange_explicit(v, 0, memory_order_relaxed)
		     : atomic_load_explicit(v, memory_order_relaxed);
}

int fqp_wintab_read(struct fqp_wintab *t, int reset, void (*cb)(const struct fqp_window_sample *, void *),
		    void *arg)
{
	int n = 0;

	for (int i = 0; i < FQP_WINDOWS; i++) {
		struct fqp_win_slot *s = &t->slot[i];
		struct fqp_window_sample w;
		uint64_t key = atomic_load_explicit(&s->key, memory_order_acquire);

		if (!key)
			continue;
		memset(&w, 0, sizeof(w));
		key_unpack(key, &w.key);
		w.count = take(&s->count, reset);
		w.bytes = take(&s->bytes, reset);
		w.dur_sum_ns = take(&s->dur_sum, reset);
		w.dur_max_ns = take(&s->dur_max, reset);
		for (int b = 0; b < FQP_HIST_BUCKETS; b++)
			w.hist[b] = take(&s->hist[b], reset);
		if (!w.count)
			continue;
		if (cb)
			cb(&w, arg);
		n++;
	}
	return n;
}

size_t fqp_opring_size(unsigned n)
{
	return sizeof(struct fqp_opring) + (size_t)n * sizeof(struct fqp_opring_cell);
}

void fqp_opring_init(struct fqp_opring *r, unsigned n)
{
	memset(r, 0, fqp_opring_size(n));
	r->mask = n - 1;
	for (unsigned i = 0; i < n; i++)
		atomic_store_explicit(&r->cell[i].seq, i, memory_order_relaxed);
}

int fqp_opring_push(struct fqp_opring *r, const struct fqp_op_record *rec)
{
	uint64_t pos = atomic_load_explicit(&r->head, memory_order_relaxed);

	for (;;) {
		struct fqp_opring_cell *c = &r->cell[pos & r->mask];
		uint64_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
		int64_t dif = (int64_t)(seq - pos);

		if (dif == 0) {
			if (atomic_compare_exchange_weak_explicit(
				&r->head, &pos, pos + 1, memory_order_relaxed, memory_order_relaxed)) {
				c->rec = *rec;
				atomic_store_explicit(&c->seq, pos + 1, memory_order_release);
				return 0;
			}
		} else if (dif < 0) {
			return -ENOBUFS;
		} else {
			pos = atomic_load_explicit(&r->head, memory_order_relaxed);
		}
	}
}

int fqp_opring_pop(struct fqp_opring *r, struct fqp_op_record *out)
{
	uint64_t pos = atomic_load_explicit(&r->tail, memory_order_relaxed);
	struct fqp_opring_cell *c = &r->cell[pos & r->mask];
	uint64_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);

	if ((int64_t)(seq - (pos + 1)) < 0)
		return 0;
	*out = c->rec;
	atomic_store_explicit(&c->seq, pos + r->mask + 1, memory_order_release);
	atomic_store_explicit(&r->tail, pos + 1, memory_order_relaxed);
	return 1;
}
