/* test-ib-mr: the registration cache against a fake registration call:
 * page alignment, covering lookup, references, LRU eviction, the bound. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "nccl-plugin/lanes/ib/ib_mr.h"
#include "tests/unit/tap.h"

static int nreg, ndereg, fail_next;
static uintptr_t last_addr;
static size_t last_len;
static void *live[64];

static int fake_reg(void *ctx, void *addr, size_t len, void **mr, uint32_t *lkey, uint32_t *rkey)
{
	(void)ctx;
	if (fail_next) {
		fail_next = 0;
		return -EFAULT;
	}
	last_addr = (uintptr_t)addr;
	last_len = len;
	*mr = malloc(1); /* so a leak or double free shows under valgrind/ASan */
	live[nreg % 64] = *mr;
	*lkey = 0x100u + (uint32_t)nreg;
	*rkey = 0x200u + (uint32_t)nreg;
	nreg++;
	return 0;
}

static void fake_dereg(void *ctx, void *mr)
{
	(void)ctx;
	free(mr);
	ndereg++;
}

int main(void)
{
	struct fqib_mr_cache *c;
	struct fqib_mr *a, *b, *d, *e, *f;
	uintptr_t base = 0x10000000;

	ok(fqib_mr_cache_create(fake_reg, fake_dereg, NULL, 3, 3000, &c) == -EINVAL, "page not a power of 2");
	ok(fqib_mr_cache_create(fake_reg, fake_dereg, NULL, 0, 4096, &c) == -EINVAL, "max 0 rejected");
	ok(fqib_mr_cache_create(fake_reg, fake_dereg, NULL, 3, 4096, &c) == 0, "cache of 3 entries");

	ok(fqib_mr_get(c, (void *)(base + 100), 5000, &a) == 0, "get [base+100, +5000)");
	ok(last_addr == base && last_len == 8192, "registered page-aligned: 0x%lx +%zu",
	   (unsigned long)last_addr, last_len);
	ok(a->lkey == 0x100 && a->rkey == 0x200 && a->refs == 1, "keys and one reference");
	ok(fqib_mr_get(c, (void *)(base + 4096), 4096, &b) == 0 && b == a && nreg == 1,
	   "covered sub-range: same entry, no new registration");
	is_int(a->refs, 2, "two references");
	ok(fqib_mr_get(c, (void *)(base + 4096), 8192, &d) == 0 && d != a && nreg == 2,
	   "range beyond the entry: a new registration");
	ok(fqib_mr_get(c, (void *)(base + 65536), 1, &e) == 0 && nreg == 3, "third entry");
	ok(fqib_mr_get(c, (void *)(base + 1 * 1048576), 10, &f) == -ENOSPC, "all 3 referenced: -ENOSPC");
	is_int(fqib_mr_count(c), 3, "still 3 entries");

	ok(fqib_mr_put(c, a) == 0 && fqib_mr_put(c, a) == 0, "put a twice");
	ok(fqib_mr_put(c, a) == -EINVAL, "a third put: -EINVAL");
	ok(fqib_mr_put(c, e) == 0, "put e (used after a)");
	ok(fqib_mr_get(c, (void *)(base + 65536), 1, &f) == 0 && f == e && nreg == 3,
	   "idle entry reused free");
	ok(fqib_mr_put(c, e) == 0, "put e again (now e more recent than a)");
	ok(fqib_mr_get(c, (void *)(base + 1048576), 10, &f) == 0 && nreg == 4 && ndereg == 1,
	   "full: least recently used idle entry deregistered for a new one");
	ok(fqib_mr_get(c, (void *)(base + 65536), 1, &b) == 0 && b == e, "e survived (it was more recent)");
	ok(fqib_mr_get(c, (void *)(base + 200), 10, &b) == -ENOSPC, "a was the one evicted; now full again");
	fail_next = 1;
	ok(fqib_mr_put(c, b = e) == 0 && fqib_mr_put(c, f) == 0, "two puts");
	ok(fqib_mr_get(c, (void *)(base + 8 * 1048576), 10, &b) == -EFAULT && fqib_mr_count(c) == 2,
	   "a failing registration returns its error (the evicted entry is gone, nothing added)");
	ok(fqib_mr_get(c, NULL, 0, &b) == -EINVAL, "len 0 rejected");
	ok(fqib_mr_get(c, (void *)(UINTPTR_MAX - 10), 100, &b) == -EINVAL, "wrapping range rejected");
	fqib_mr_cache_destroy(c);
	is_int(ndereg, nreg, "destroy deregisters everything (%d/%d)", ndereg, nreg);
	return done_testing();
}
