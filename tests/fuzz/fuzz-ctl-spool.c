/*
 * fuzz-ctl-spool: the controller's spool reopening what a crash left
 * (controller/spool.c). Input: 8 bytes of spool.pos (the replayed offset),
 * then spool.dat. Open cuts a torn or corrupt tail, so the replay from the
 * committed offset must end cleanly (never -EBADMSG), each record within
 * the file; a record appended and synced next is replayed as it was, and
 * once committed nothing is pending. The same bytes also go, from every
 * offset, through the one record parser both spools read with
 * (fq_reclog_parse): a record it takes lies within what it was given.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/reclog.h"
#include "controller/spool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void put(const char *dir, const char *name, const uint8_t *p, size_t n)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, p, n) != (ssize_t)n)
		abort();
	close(fd);
}

static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[256];

	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			unlink(path);
		}
	if (d)
		closedir(d);
	rmdir(dir);
}

/* fq_reclog_parse at every offset: a record is its header and body, inside
 * the bytes at hand; anything else is "more needed" (0) or -EBADMSG. */
static void parse_all(const uint8_t *data, size_t size)
{
	for (size_t off = 0; off < size; off++) {
		const uint8_t *body = NULL;
		uint32_t len = 0;
		int64_t n = fq_reclog_parse(data + off, size - off, &body, &len);

		if (n > 0 && ((uint64_t)n > size - off || (uint64_t)n != FQ_RECLOG_HDR + (uint64_t)len ||
			      body != data + off + FQ_RECLOG_HDR))
			abort();
		if (n < 0 && n != -EBADMSG)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char dir[] = "/dev/shm/fq-fuzz-ctlspool.XXXXXX", err[256]; /* tmpfs: syncs cost nothing */
	static const char rec[] = "one more record";
	const uint8_t *body;
	struct fq_spool *s;
	size_t len, seen = 0;
	int rc;

	parse_all(data, size);
	if (size < 8 || !mkdtemp(dir))
		return 0;
	put(dir, "spool.pos", data, 8);
	put(dir, "spool.dat", data + 8, size - 8);
	if (fq_spool_open(dir, 1 << 20, &s, err, sizeof(err)) == 0) {
		while ((rc = fq_spool_next(s, &body, &len)) == 1)
			seen += 12 + len;
		if (rc != 0 || seen > size - 8)
			abort();
		if (fq_spool_append(s, rec, sizeof(rec)) != 0 || fq_spool_sync(s) != 0 ||
		    fq_spool_next(s, &body, &len) != 1 || len != sizeof(rec) || memcmp(body, rec, len) != 0 ||
		    fq_spool_next(s, &body, &len) != 0)
			abort();
		if (fq_spool_commit(s) != 0 || fq_spool_pending_bytes(s) != 0)
			abort();
		fq_spool_close(s);
	}
	remove_dir(dir);
	return 0;
}
