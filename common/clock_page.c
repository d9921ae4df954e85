/* clock_page: seqlocked clock model in a shared file (see clock_page.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/clock_page.h"

#include "common/shm_page.h"

struct fq_clock_page_layout {
	uint32_t magic;
	uint32_t version;
	uint64_t seq;
	int32_t clock_id;
	uint32_t flags;
	int64_t ref_local_ns;
	int64_t offset_ns;
	int64_t drift_ppb;
	int64_t error_bound_ns;
	int64_t valid_until_ns;
	uint64_t updates;
};

_Static_assert(sizeof(struct fq_clock_page_layout) == 72, "clock page layout is a contract");

struct fq_clock_page_writer {
	struct fq_clock_page_layout *page;
};

struct fq_clock_page_reader {
	const struct fq_clock_page_layout *page;
};

#define LOAD(p)     __atomic_load_n(&(p), __ATOMIC_RELAXED)
#define STORE(p, v) __atomic_store_n(&(p), (v), __ATOMIC_RELAXED)

int64_t fq_clock_model_global(const struct fq_clock_model *m, int64_t local_ns)
{
	int64_t dt = local_ns - m->ref_local_ns;

	/* Within 4 s of the reference (the agent republishes far more often)
	 * and under 2^30 ppb the product fits 62 bits: one multiply and a
	 * division by a constant. Otherwise 128 bits, which never overflow. */
	if (dt > -(INT64_C(1) << 32) && dt < (INT64_C(1) << 32) && m->drift_ppb > -(INT64_C(1) << 30) &&
	    m->drift_ppb < (INT64_C(1) << 30))
		return local_ns + m->offset_ns + m->drift_ppb * dt / 1000000000;
	return local_ns + m->offset_ns + (int64_t)((__int128)m->drift_ppb * dt / 1000000000);
}

int fq_clock_page_writer_open(const char *path, struct fq_clock_page_writer **out)
{
	struct fq_clock_page_writer *w = calloc(1, sizeof(*w));
	void *p;
	int rc;

	if (!w)
		return -ENOMEM;
	rc = fq_shm_page_create(path, FQ_CLOCK_PAGE_SIZE, &p);
	if (rc < 0) {
		free(w);
		return rc;
	}
	w->page = p;
	STORE(w->page->seq, LOAD(w->page->seq) | 1); /* readers retry while we set the header */
	w->page->clock_id = CLOCK_MONOTONIC_RAW;
	w->page->version = FQ_CLOCK_PAGE_VERSION;
	__atomic_store_n(&w->page->magic, FQ_CLOCK_PAGE_MAGIC, __ATOMIC_RELEASE);
	*out = w;
	return 0;
}

void fq_clock_page_publish(struct fq_clock_page_writer *w, const struct fq_clock_model *m)
{
	struct fq_clock_page_layout *p = w->page;
	uint64_t seq = LOAD(p->seq) | 1; /* odd: update in progress */

	STORE(p->seq, seq);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	STORE(p->clock_id, m->clock_id);
	STORE(p->ref_local_ns, m->ref_local_ns);
	STORE(p->offset_ns, m->offset_ns);
	STORE(p->drift_ppb, m->drift_ppb);
	STORE(p->error_bound_ns, m->error_bound_ns);
	STORE(p->valid_until_ns, m->valid_until_ns);
	STORE(p->updates, LOAD(p->updates) + 1);
	__atomic_store_n(&p->seq, seq + 1, __ATOMIC_RELEASE);
}

void fq_clock_page_writer_close(struct fq_clock_page_writer *w)
{
	if (!w)
		return;
	munmap(w->page, FQ_CLOCK_PAGE_SIZE);
	free(w);
}

int fq_clock_page_reader_open(const char *path, struct fq_clock_page_reader **out)
{
	struct fq_clock_page_reader *r = calloc(1, sizeof(*r));
	const void *p;
	int rc;

	if (!r)
		return -ENOMEM;
	rc = fq_shm_page_open(path, FQ_CLOCK_PAGE_SIZE, &p);
	if (rc < 0) {
		free(r);
		return rc;
	}
	r->page = p;
	if (__atomic_load_n(&r->page->magic, __ATOMIC_ACQUIRE) != FQ_CLOCK_PAGE_MAGIC ||
	    r->page->version != FQ_CLOCK_PAGE_VERSION) {
		fq_clock_page_reader_close(r);
		return -EPROTO;
	}
	*out = r;
	return 0;
}

int fq_clock_page_read(struct fq_clock_page_reader *r, int64_t now_local_ns, struct fq_clock_model *m)
{
	const struct fq_clock_page_layout *p = r->page;

	for (int tries = 0; tries < 1000; tries++) {
		uint64_t s1 = __atomic_load_n(&p->seq, __ATOMIC_ACQUIRE), s2;

		if (s1 & 1)
			continue;
		m->clock_id = LOAD(p->clock_id);
		m->ref_local_ns = LOAD(p->ref_local_ns);
		m->offset_ns = LOAD(p->offset_ns);
		m->drift_ppb = LOAD(p->drift_ppb);
		m->error_bound_ns = LOAD(p->error_bound_ns);
		m->valid_until_ns = LOAD(p->valid_until_ns);
		m->updates = LOAD(p->updates);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = LOAD(p->seq);
		if (s1 != s2)
			continue;
		if (LOAD(p->magic) != FQ_CLOCK_PAGE_MAGIC || m->clock_id != CLOCK_MONOTONIC_RAW)
			return -EPROTO;
		return m->valid_until_ns < now_local_ns ? -ESTALE : 0;
	}
	return -EAGAIN;
}

void fq_clock_page_reader_close(struct fq_clock_page_reader *r)
{
	if (!r)
		return;
	munmap((void *)r->page, FQ_CLOCK_PAGE_SIZE);
	free(r);
}
