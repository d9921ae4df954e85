/*
 * test-ctl-spool: the controller's on-disk spool (controller/spool.c):
 * order, durability across reopen, replay commit/rewind, the size bound,
 * and a torn record at the end cut off.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/spool.h"
#include "tests/unit/tap.h"

static int read_all(struct fq_spool *s, int *first, int *count)
{
	const uint8_t *b;
	size_t len;
	int rc, v;

	*count = 0;
	while ((rc = fq_spool_next(s, &b, &len)) == 1) {
		if (len != sizeof(v))
			return -1;
		memcpy(&v, b, sizeof(v));
		if (*count == 0)
			*first = v;
		else if (v != *first + *count)
			return -2; /* out of order */
		(*count)++;
	}
	return rc;
}

int main(void)
{
	char dir[] = "/tmp/fq-spool-test.XXXXXX", path[256], err[256];
	struct fq_spool *s;
	int first = -1, count = 0, fd, rc;

	plan(13);
	if (!mkdtemp(dir))
		return 1;
	ok(fq_spool_open(dir, 1 << 20, &s, err, sizeof(err)) == 0, "open a new spool");
	for (int i = 0; i < 100; i++)
		fq_spool_append(s, &i, sizeof(i));
	ok(fq_spool_sync(s) == 0, "sync 100 records");
	fq_spool_close(s);

	ok(fq_spool_open(dir, 1 << 20, &s, err, sizeof(err)) == 0, "reopen");
	rc = read_all(s, &first, &count);
	ok(rc == 0 && first == 0 && count == 100, "100 records back, in order (%d from %d)", count, first);
	fq_spool_rewind(s);
	{
		const uint8_t *b;
		size_t len;
		for (int i = 0; i < 40; i++)
			fq_spool_next(s, &b, &len);
	}
	ok(fq_spool_commit(s) == 0, "commit 40 replayed");
	fq_spool_close(s);

	ok(fq_spool_open(dir, 1 << 20, &s, err, sizeof(err)) == 0 && read_all(s, &first, &count) == 0 &&
	       first == 40 && count == 60,
	   "after reopen the replay resumes at 40 (%d records from %d)", count, first);
	ok(fq_spool_commit(s) == 0 && fq_spool_pending_bytes(s) == 0 && fq_spool_file_bytes(s) == 0,
	   "fully replayed: the file is emptied");

	/* size bound */
	{
		int v = 7, n = 0;
		while (fq_spool_append(s, &v, sizeof(v)) == 0)
			n++;
		ok(n == (1 << 20) / 16, "spool_max bounds the spool (%d records of 16 bytes)", n);
		ok(fq_spool_append(s, &v, sizeof(v)) == -ENOSPC, "a full spool answers -ENOSPC");
		fq_spool_discard(s);
		ok(fq_spool_file_bytes(s) == 0, "discard forgets unsynced records");
	}
	for (int i = 0; i < 10; i++)
		fq_spool_append(s, &i, sizeof(i));
	fq_spool_sync(s);
	fq_spool_close(s);
	/* a torn record at the end: half a header */
	snprintf(path, sizeof(path), "%s/spool.dat", dir);
	fd = open(path, O_WRONLY | O_APPEND);
	ok(fd >= 0 && write(fd, "FQSPxx", 6) == 6, "append a torn record");
	close(fd);
	ok(fq_spool_open(dir, 1 << 20, &s, err, sizeof(err)) == 0 && read_all(s, &first, &count) == 0 &&
	       count == 10,
	   "the torn record is cut off, the 10 good ones stay");
	ok(fq_spool_file_bytes(s) == 160, "file truncated to the good records (%llu)",
	   (unsigned long long)fq_spool_file_bytes(s));
	fq_spool_close(s);
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	if (system(path) != 0)
		diag("could not remove %s", dir);
	return done_testing();
}
