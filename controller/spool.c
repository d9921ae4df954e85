/*
 * spool: see spool.h.
 */
#include "controller/spool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/mkdirs.h"

#define SPOOL_MAGIC      0x46515350u /* "FQSP" */
#define SPOOL_HDR        12
#define SPOOL_MAX_RECORD (64u << 20)

struct fq_spool {
	int fd, pos_fd;
	uint64_t max_bytes;
	uint64_t size;      /* bytes in spool.dat, synced or buffered */
	uint64_t committed; /* replayed and committed up to here */
	uint64_t cursor;    /* replay cursor */
	uint8_t *wbuf;      /* appended, not yet written */
	size_t wlen, wcap;
	uint8_t *rbuf;
	size_t rcap;
};

static uint32_t fnv1a(const uint8_t *p, size_t n)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static int read_exact(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = pread(fd, (uint8_t *)buf + done, len - done, (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ENODATA;
		done += (size_t)r;
	}
	return 0;
}

static int write_pos(struct fq_spool *s, uint64_t pos)
{
	if (pwrite(s->pos_fd, &pos, sizeof(pos), 0) != (ssize_t)sizeof(pos))
		return -errno ? -errno : -EIO;
	return fdatasync(s->pos_fd) < 0 ? -errno : 0;
}

/* Reads the record at off: 1 and body in s->rbuf, 0 at a clean end, or
 * -EBADMSG for a torn or corrupt record. */
static int read_record(struct fq_spool *s, uint64_t off, size_t *len)
{
	uint32_t h[3];
	int rc;

	if (off >= s->size - s->wlen)
		return 0;
	if ((rc = read_exact(s->fd, h, SPOOL_HDR, off)) < 0)
		return rc == -ENODATA ? -EBADMSG : rc;
	if (h[0] != SPOOL_MAGIC || h[1] > SPOOL_MAX_RECORD)
		return -EBADMSG;
	if (h[1] > s->rcap) {
		uint8_t *n = realloc(s->rbuf, h[1]);
		if (!n)
			return -ENOMEM;
		s->rbuf = n;
		s->rcap = h[1];
	}
	if ((rc = read_exact(s->fd, s->rbuf, h[1], off + SPOOL_HDR)) < 0)
		return rc == -ENODATA ? -EBADMSG : rc;
	if (fnv1a(s->rbuf, h[1]) != h[2])
		return -EBADMSG;
	*len = h[1];
	return 1;
}

/* Walks from the committed offset to the end; cuts off a torn tail. */
static int check_tail(struct fq_spool *s)
{
	uint64_t off = s->committed;
	size_t len;
	int rc;

	while ((rc = read_record(s, off, &len)) == 1)
		off += SPOOL_HDR + len;
	if (rc == -EBADMSG) {
		if (ftruncate(s->fd, (off_t)off) < 0)
			return -errno;
		s->size = off;
		return 0;
	}
	return rc;
}

int fq_spool_open(const char *dir, uint64_t max_bytes, struct fq_spool **out, char *err, size_t errlen)
{
	struct fq_spool *s = calloc(1, sizeof(*s));
	char path[4096];
	struct stat st;
	uint64_t pos = 0;
	int rc;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->fd = s->pos_fd = -1;
	s->max_bytes = max_bytes;
	rc = fq_mkdirs(dir, 0700);
	if (rc < 0) {
		snprintf(err, errlen, "spool %s: mkdir: %s", dir, strerror(-rc));
		goto fail;
	}
	snprintf(path, sizeof(path), "%s/spool.dat", dir);
	s->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (s->fd < 0 || fstat(s->fd, &st) < 0) {
		rc = -errno;
		snprintf(err, errlen, "spool %s: %s", path, strerror(errno));
		goto fail;
	}
	s->size = (uint64_t)st.st_size;
	snprintf(path, sizeof(path), "%s/spool.pos", dir);
	s->pos_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (s->pos_fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "spool %s: %s", path, strerror(errno));
		goto fail;
	}
	if (pread(s->pos_fd, &pos, sizeof(pos), 0) != (ssize_t)sizeof(pos) || pos > s->size)
		pos = 0;
	s->committed = s->cursor = pos;
	if ((rc = check_tail(s)) < 0) {
		snprintf(err, errlen, "spool %s/spool.dat: %s", dir, strerror(-rc));
		goto fail;
	}
	*out = s;
	return 0;

fail:
	fq_spool_close(s);
	return rc;
}

void fq_spool_close(struct fq_spool *s)
{
	if (!s)
		return;
	if (s->wlen)
		fq_spool_sync(s);
	if (s->fd >= 0)
		close(s->fd);
	if (s->pos_fd >= 0)
		close(s->pos_fd);
	free(s->wbuf);
	free(s->rbuf);
	free(s);
}

int fq_spool_append(struct fq_spool *s, const void *body, size_t len)
{
	uint32_t h[3] = {SPOOL_MAGIC, (uint32_t)len, fnv1a(body, len)};

	if (len > SPOOL_MAX_RECORD)
		return -EMSGSIZE;
	if (s->size + SPOOL_HDR + len > s->max_bytes)
		return -ENOSPC;
	if (s->wlen + SPOOL_HDR + len > s->wcap) {
		size_t cap = s->wcap ? s->wcap : 65536;
		while (cap < s->wlen + SPOOL_HDR + len)
			cap *= 2;
		uint8_t *n = realloc(s->wbuf, cap);
		if (!n)
			return -ENOMEM;
		s->wbuf = n;
		s->wcap = cap;
	}
	memcpy(s->wbuf + s->wlen, h, SPOOL_HDR);
	memcpy(s->wbuf + s->wlen + SPOOL_HDR, body, len);
	s->wlen += SPOOL_HDR + len;
	s->size += SPOOL_HDR + len;
	return 0;
}

int fq_spool_sync(struct fq_spool *s)
{
	uint64_t off = s->size - s->wlen;
	size_t done = 0;

	while (done < s->wlen) {
		ssize_t w = pwrite(s->fd, s->wbuf + done, s->wlen - done, (off_t)(off + done));
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			int rc = -errno;
			/* Nothing of this buffer counts: cut what may have landed. */
			if (ftruncate(s->fd, (off_t)off) == 0) {
				s->size = off;
				s->wlen = 0;
			}
			return rc;
		}
		done += (size_t)w;
	}
	s->wlen = 0;
	return fdatasync(s->fd) < 0 ? -errno : 0;
}

void fq_spool_discard(struct fq_spool *s)
{
	s->size -= s->wlen;
	s->wlen = 0;
}

int fq_spool_next(struct fq_spool *s, const uint8_t **body, size_t *len)
{
	int rc = read_record(s, s->cursor, len);

	if (rc == 1) {
		*body = s->rbuf;
		s->cursor += SPOOL_HDR + *len;
	}
	return rc;
}

int fq_spool_commit(struct fq_spool *s)
{
	int rc;

	if (s->cursor == s->size && !s->wlen) {
		/* Everything replayed: start over from an empty file. */
		if (ftruncate(s->fd, 0) < 0)
			return -errno;
		s->size = s->committed = s->cursor = 0;
		return write_pos(s, 0);
	}
	if ((rc = write_pos(s, s->cursor)) < 0)
		return rc;
	s->committed = s->cursor;
	return 0;
}

void fq_spool_rewind(struct fq_spool *s)
{
	s->cursor = s->committed;
}

uint64_t fq_spool_pending_bytes(const struct fq_spool *s)
{
	return s->size - s->committed;
}

uint64_t fq_spool_file_bytes(const struct fq_spool *s)
{
	return s->size;
}
