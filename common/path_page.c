/* path_page: seqlock-published path health (see path_page.h). */
#include "common/path_page.h"

#include "common/shm_page.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct layout {
	uint32_t magic, version;
	uint64_t seq;
	uint32_t count, flags;
	int64_t updated_ns;
	uint64_t updates;
	uint32_t nrates;
	uint8_t pad[64 - 44];
	struct fq_path_entry e[FQ_PATH_PAGE_MAX];
	struct fq_path_rate rates[FQ_PATH_PAGE_RATES];
};

_Static_assert(sizeof(struct layout) == FQ_PATH_PAGE_SIZE, "path page layout");

struct fq_path_page_writer {
	struct layout *page;
};

struct fq_path_page_reader {
	const struct layout *page;
};

/* Word-wise relaxed copies: a reader racing the writer reads torn data it
 * then discards (the sequence check), never undefined behaviour. */
static void copy_words(void *dst, const void *src, size_t len)
{
	uint64_t *d = dst;
	const uint64_t *s = src;

	for (size_t i = 0; i < len / 8; i++)
		__atomic_store_n(&d[i], __atomic_load_n(&s[i], __ATOMIC_RELAXED), __ATOMIC_RELAXED);
}

int fq_path_page_writer_open(const char *path, struct fq_path_page_writer **out)
{
	struct fq_path_page_writer *w = calloc(1, sizeof(*w));
	void *p;
	int rc;

	if (!w)
		return -ENOMEM;
	rc = fq_shm_page_create(path, FQ_PATH_PAGE_SIZE, &p);
	if (rc < 0) {
		free(w);
		return rc;
	}
	w->page = p;
	__atomic_store_n(&w->page->seq, __atomic_load_n(&w->page->seq, __ATOMIC_RELAXED) | 1,
			 __ATOMIC_RELAXED);
	w->page->version = FQ_PATH_PAGE_VERSION;
	w->page->count = 0;
	__atomic_store_n(&w->page->magic, FQ_PATH_PAGE_MAGIC, __ATOMIC_RELEASE);
	__atomic_store_n(&w->page->seq, (w->page->seq | 1) + 1, __ATOMIC_RELEASE);
	*out = w;
	return 0;
}

void fq_path_page_publish(struct fq_path_page_writer *w, const struct fq_path_entry *e, size_t n,
			  const struct fq_path_rate *rates, size_t nrates, int64_t now_ns)
{
	struct layout *p = w->page;
	uint64_t seq = __atomic_load_n(&p->seq, __ATOMIC_RELAXED) | 1;

	if (n > FQ_PATH_PAGE_MAX)
		n = FQ_PATH_PAGE_MAX;
	if (nrates > FQ_PATH_PAGE_RATES)
		nrates = FQ_PATH_PAGE_RATES;
	__atomic_store_n(&p->seq, seq, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	copy_words(p->e, e, n * sizeof(*e));
	__atomic_store_n(&p->count, (uint32_t)n, __ATOMIC_RELAXED);
	if (nrates)
		copy_words(p->rates, rates, nrates * sizeof(*rates));
	__atomic_store_n(&p->nrates, (uint32_t)nrates, __ATOMIC_RELAXED);
	__atomic_store_n(&p->updated_ns, now_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&p->updates, p->updates + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&p->seq, seq + 1, __ATOMIC_RELEASE);
}

void fq_path_page_writer_close(struct fq_path_page_writer *w)
{
	if (!w)
		return;
	munmap(w->page, FQ_PATH_PAGE_SIZE);
	free(w);
}

int fq_path_page_reader_open(const char *path, struct fq_path_page_reader **out)
{
	struct fq_path_page_reader *r = calloc(1, sizeof(*r));
	const void *p;
	int rc;

	if (!r)
		return -ENOMEM;
	rc = fq_shm_page_open(path, FQ_PATH_PAGE_SIZE, &p);
	if (rc < 0) {
		free(r);
		return rc;
	}
	r->page = p;
	if (__atomic_load_n(&r->page->magic, __ATOMIC_ACQUIRE) != FQ_PATH_PAGE_MAGIC ||
	    r->page->version != FQ_PATH_PAGE_VERSION) {
		fq_path_page_reader_close(r);
		return -EPROTO;
	}
	*out = r;
	return 0;
}

/* One consistent pass over the entries (the seqlock retried up to 1000
 * times): visit(entry, arg) for each, until it returns nonzero; start(arg)
 * before each try. 0, -EAGAIN (writer busy every try) or -EPROTO. */
static int scan(struct fq_path_page_reader *r, void (*start)(void *),
		int (*visit)(const struct fq_path_entry *, void *), void *arg)
{
	const struct layout *p = r->page;

	for (int tries = 0; tries < 1000; tries++) {
		uint64_t s1 = __atomic_load_n(&p->seq, __ATOMIC_ACQUIRE);
		uint32_t n;

		if (s1 & 1)
			continue;
		start(arg);
		n = __atomic_load_n(&p->count, __ATOMIC_RELAXED);
		if (n > FQ_PATH_PAGE_MAX)
			n = FQ_PATH_PAGE_MAX;
		for (uint32_t i = 0; i < n; i++) {
			struct fq_path_entry x;

			copy_words(&x, &p->e[i], sizeof(x));
			x.local_nic[sizeof(x.local_nic) - 1] = '\0';
			x.remote_node[sizeof(x.remote_node) - 1] = '\0';
			x.remote_nic[sizeof(x.remote_nic) - 1] = '\0';
			if (visit(&x, arg))
				break;
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&p->seq, __ATOMIC_RELAXED) != s1)
			continue;
		if (__atomic_load_n(&p->magic, __ATOMIC_RELAXED) != FQ_PATH_PAGE_MAGIC)
			return -EPROTO;
		return 0;
	}
	return -EAGAIN;
}

struct lookup {
	const char *local_nic;
	uint32_t remote_ipv4;
	struct fq_path_entry *e;
	int found;
};

static void lookup_start(void *arg)
{
	((struct lookup *)arg)->found = 0;
}

static int lookup_visit(const struct fq_path_entry *x, void *arg)
{
	struct lookup *q = arg;

	if (x->remote_ipv4 != q->remote_ipv4 || (q->local_nic && strcmp(x->local_nic, q->local_nic) != 0))
		return 0;
	*q->e = *x;
	q->found = 1;
	return 1;
}

int fq_path_page_lookup(struct fq_path_page_reader *r, const char *local_nic, uint32_t remote_ipv4,
			struct fq_path_entry *e)
{
	struct lookup q = {local_nic, remote_ipv4, e, 0};
	int rc = scan(r, lookup_start, lookup_visit, &q);

	return rc < 0 ? rc : q.found ? 0 : -ENOENT;
}

int fq_path_page_rate(struct fq_path_page_reader *r, const char *local_nic, uint32_t remote_ipv4,
		      uint32_t job, int64_t now_ns, struct fq_path_rate *out)
{
	const struct layout *p = r->page;

	for (int tries = 0; tries < 1000; tries++) {
		uint64_t s1 = __atomic_load_n(&p->seq, __ATOMIC_ACQUIRE);
		uint32_t n;
		int found = 0;

		if (s1 & 1)
			continue;
		n = __atomic_load_n(&p->nrates, __ATOMIC_RELAXED);
		if (n > FQ_PATH_PAGE_RATES)
			n = FQ_PATH_PAGE_RATES;
		for (uint32_t i = 0; i < n && !found; i++) {
			struct fq_path_rate x;

			copy_words(&x, &p->rates[i], sizeof(x));
			x.local_nic[sizeof(x.local_nic) - 1] = '\0';
			if (x.job == job && x.remote_ipv4 == remote_ipv4 && !strcmp(x.local_nic, local_nic) &&
			    x.until_ns > now_ns && x.rate) {
				*out = x;
				found = 1;
			}
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&p->seq, __ATOMIC_RELAXED) != s1)
			continue;
		if (__atomic_load_n(&p->magic, __ATOMIC_RELAXED) != FQ_PATH_PAGE_MAGIC)
			return -EPROTO;
		return found ? 0 : -ENOENT;
	}
	return -EAGAIN;
}

struct node_count {
	const char *node;
	int up;
};

static void node_start(void *arg)
{
	((struct node_count *)arg)->up = 0;
}

static int node_visit(const struct fq_path_entry *x, void *arg)
{
	struct node_count *q = arg;

	q->up += x->state == FQ_PATH_STATE_UP && strcmp(x->remote_node, q->node) == 0;
	return 0;
}

int fq_path_page_node_up(struct fq_path_page_reader *r, const char *remote_node)
{
	struct node_count q = {remote_node, 0};
	int rc = scan(r, node_start, node_visit, &q);

	return rc < 0 ? rc : q.up;
}

int64_t fq_path_page_updated_ns(struct fq_path_page_reader *r)
{
	return __atomic_load_n(&r->page->updated_ns, __ATOMIC_RELAXED);
}

void fq_path_page_reader_close(struct fq_path_page_reader *r)
{
	if (!r)
		return;
	munmap((void *)r->page, FQ_PATH_PAGE_SIZE);
	free(r);
}
