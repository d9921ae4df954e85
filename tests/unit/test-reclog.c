/* test-reclog: the record log under both spools: records read back as
 * written, a torn or corrupt tail and a record the caller refuses are cut,
 * the byte bound refuses without buffering, the directory is created, the
 * parser refuses what is no record. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/reclog.h"
#include "tests/unit/tap.h"

static int append(struct fq_reclog *l, const char *text)
{
	struct iovec iov[2] = {{(void *)text, 1}, {(void *)(text + 1), strlen(text) - 1}};

	return fq_reclog_append(l, iov, 2);
}

/* Refuses a record whose body starts with 'x'. */
static int visit(void *arg, uint64_t off, const uint8_t *body, uint32_t len)
{
	(void)off;
	++*(int *)arg;
	return len && body[0] == 'x';
}

static int count(struct fq_reclog *l, char *last, size_t cap)
{
	const uint8_t *body;
	uint32_t len;
	uint64_t off = 0;
	int64_t n;
	int c = 0;

	while ((n = fq_reclog_read(l, off, &body, &len)) > 0) {
		snprintf(last, cap, "%.*s", (int)len, (const char *)body);
		off += (uint64_t)n;
		c++;
	}
	return n < 0 ? (int)n : c;
}

int main(void)
{
	char base[] = "/tmp/fq-reclog-XXXXXX", dir[128], path[160], last[64] = "", err[256];
	struct fq_reclog *l;
	const uint8_t *body;
	uint8_t raw[64];
	uint32_t len;
	struct stat st;
	int fd, visited = 0;

	if (!mkdtemp(base))
		return 1;
	snprintf(dir, sizeof(dir), "%s/a/b", base);
	snprintf(path, sizeof(path), "%s/log", dir);
	ok(fq_reclog_open(dir, "log", 0, 0, &l, err, sizeof(err)) == -ENOENT && strstr(err, "/a/b/log"),
	   "without CREATE a missing log is an error naming it: %s", err);
	is_int(fq_reclog_open(dir, "log", FQ_RECLOG_CREATE, 100, &l, err, sizeof(err)), 0,
	       "CREATE makes the directories and the file");
	ok(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700, "the directory is 0700");
	ok(append(l, "first") == 0 && append(l, "second") == 0 && fq_reclog_size(l) == 2 * 12 + 11 &&
	       fq_reclog_buffered(l) == 35,
	   "two records buffered (%llu bytes)", (unsigned long long)fq_reclog_size(l));
	is_int(count(l, last, sizeof(last)), 0, "nothing written yet");
	is_int(append(l, "this one is far too long to fit the bound of 100 bytes, header and all"), -ENOSPC,
	       "over the byte bound: -ENOSPC");
	fq_reclog_discard(l);
	is_int((int)fq_reclog_size(l), 0, "discard forgets the buffer");
	ok(append(l, "first") == 0 && append(l, "second") == 0 && fq_reclog_sync(l) == 0 &&
	       count(l, last, sizeof(last)) == 2 && strcmp(last, "second") == 0,
	   "synced, read back in order (last: %s)", last);
	fq_reclog_close(l);

	/* a torn tail: half of a third record */
	fd = open(path, O_WRONLY | O_APPEND);
	memset(raw, 0, sizeof(raw));
	ok(fd >= 0 && write(fd, "PSQF\x20\0\0\0\0\0\0\0abc", 15) == 15, "a torn record appended");
	close(fd);
	fq_reclog_open(dir, "log", 0, 0, &l, NULL, 0);
	is_int((int)fq_reclog_scan(l, 0, NULL, NULL), 15, "the scan cuts the 15 torn bytes");
	is_int(count(l, last, sizeof(last)), 2, "the two whole records stay");
	ok(append(l, "xray") == 0 && append(l, "after") == 0 && fq_reclog_write(l) == 0, "two more written");
	fq_reclog_close(l);
	fq_reclog_open(dir, "log", 0, 0, &l, NULL, 0);
	is_int((int)fq_reclog_scan(l, 0, visit, &visited), 12 + 4 + 12 + 5,
	       "a record the caller refuses is cut, and what follows it");
	is_int(visited, 3, "visited up to the refused one");
	fq_reclog_close(l);

	/* a flipped byte in a body */
	fd = open(path, O_RDWR);
	ok(fd >= 0 && pwrite(fd, "F", 1, 12) == 1, "a byte of the first body flipped");
	close(fd);
	fq_reclog_open(dir, "log", 0, 0, &l, NULL, 0);
	is_int((int)fq_reclog_read(l, 0, &body, &len), -EBADMSG, "its checksum refuses it");
	is_int((int)fq_reclog_scan(l, 0, NULL, NULL), 12 + 5 + 12 + 6, "the scan cuts from there");
	is_int((int)fq_reclog_size(l), 0, "empty");
	fq_reclog_close(l);

	/* the parser alone */
	memcpy(raw, "PSQF\x02\0\0\0", 8);
	ok(fq_reclog_parse(raw, 4, &body, &len) == 0, "4 bytes of a header: more needed");
	ok(fq_reclog_parse(raw, 13, &body, &len) == 0, "a body short of its length: more needed");
	ok(fq_reclog_parse((const uint8_t *)"QSPF\x02\0\0\0", 8, &body, &len) == -EBADMSG,
	   "a bad magic is no record");
	memcpy(raw, "PSQF\xff\xff\xff\xff", 8);
	ok(fq_reclog_parse(raw, 64, &body, &len) == -EBADMSG, "a length over the limit is no record");
	snprintf(path, sizeof(path), "rm -rf %s", base);
	if (system(path) != 0)
		diag("cleanup failed");
	return done_testing();
}
