/* reclog: one file of checksummed records (see reclog.h). */
#include "common/reclog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/mkdirs.h"

#define RECLOG_MAGIC 0x46515350u /* "FQSP" */

struct fq_reclog {
	int fd;
	char *dir;
	uint64_t max_bytes;
	uint64_t written;  /* bytes in the file */
	bool dir_unsynced; /* this open created the file: its name is not durable yet */
	uint8_t *wbuf;     /* appended, not yet written */
	size_t wlen, wcap;
	uint8_t *rbuf;
	size_t rcap;
};

/* Little-endian: the controller's spool.dat of earlier releases reads as is. */
static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static uint32_t fnv1a(uint32_t h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

#define FNV_SEED 2166136261u

int64_t fq_reclog_parse(const uint8_t *p, size_t n, const uint8_t **body, uint32_t *len)
{
	uint32_t blen;

	if (n < 4)
		return 0;
	if (get32(p) != RECLOG_MAGIC)
		return -EBADMSG;
	if (n < FQ_RECLOG_HDR)
		return 0;
	blen = get32(p + 4);
	if (blen > FQ_RECLOG_MAX_BODY)
		return -EBADMSG;
	if (n - FQ_RECLOG_HDR < blen)
		return 0;
	if (fnv1a(FNV_SEED, p + FQ_RECLOG_HDR, blen) != get32(p + 8))
		return -EBADMSG;
	*body = p + FQ_RECLOG_HDR;
	*len = blen;
	return (int64_t)FQ_RECLOG_HDR + blen;
}

int fq_sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;

	if (fd < 0 || fsync(fd) < 0)
		rc = -errno;
	if (fd >= 0)
		close(fd);
	return rc;
}

static void seterr(char *err, size_t errlen, const char *what, const char *dir, const char *name, int rc)
{
	if (err && errlen)
		snprintf(err, errlen, "%s%s%s%s: %s", dir, name ? "/" : "", name ? name : "", what,
			 strerror(-rc));
}

/* Open dir/name; *created says whether this call created it. */
static int open_file(const char *dir, const char *name, unsigned flags, bool *created)
{
	char path[4200];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	*created = false;
	fd = open(path, O_RDWR | O_CLOEXEC | (flags & FQ_RECLOG_TRUNC ? O_TRUNC : 0));
	if (fd >= 0 || errno != ENOENT || !(flags & FQ_RECLOG_CREATE))
		return fd < 0 ? -errno : fd;
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST) /* raced with another creator */
		fd = open(path, O_RDWR | O_CLOEXEC);
	else if (fd >= 0)
		*created = true;
	return fd < 0 ? -errno : fd;
}

int fq_reclog_open(const char *dir, const char *name, unsigned flags, uint64_t max_bytes,
		   struct fq_reclog **out, char *err, size_t errlen)
{
	struct fq_reclog *l;
	struct stat st;
	bool created;
	int rc;

	*out = NULL;
	if (strlen(dir) + strlen(name) + 2 > 4200)
		return -ENAMETOOLONG;
	if (flags & FQ_RECLOG_CREATE) {
		rc = fq_mkdirs(dir, 0700);
		if (rc < 0) {
			seterr(err, errlen, ": mkdir", dir, NULL, rc);
			return rc;
		}
	}
	rc = open_file(dir, name, flags, &created);
	if (rc < 0) {
		seterr(err, errlen, "", dir, name, rc);
		return rc;
	}
	l = calloc(1, sizeof(*l));
	if (!l || !(l->dir = strdup(dir)) || fstat(rc, &st) < 0) {
		int e = l && l->dir ? -errno : -ENOMEM;

		close(rc);
		if (l)
			free(l->dir);
		free(l);
		seterr(err, errlen, "", dir, name, e);
		return e;
	}
	l->fd = rc;
	l->max_bytes = max_bytes;
	l->written = (uint64_t)st.st_size;
	l->dir_unsynced = created;
	*out = l;
	return 0;
}

void fq_reclog_close(struct fq_reclog *l)
{
	if (!l)
		return;
	close(l->fd);
	free(l->dir);
	free(l->wbuf);
	free(l->rbuf);
	free(l);
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

static int grow(uint8_t **buf, size_t *cap, size_t need)
{
	size_t c = *cap ? *cap : 4096;
	uint8_t *n;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	n = realloc(*buf, c);
	if (!n)
		return -ENOMEM;
	*buf = n;
	*cap = c;
	return 0;
}

int64_t fq_reclog_read(struct fq_reclog *l, uint64_t off, const uint8_t **body, uint32_t *len)
{
	uint8_t h[FQ_RECLOG_HDR];
	uint64_t left;
	uint32_t blen;
	int rc;

	if (off >= l->written)
		return 0;
	left = l->written - off;
	if (left < FQ_RECLOG_HDR)
		return -EBADMSG;
	if ((rc = read_exact(l->fd, h, FQ_RECLOG_HDR, off)) < 0)
		return rc == -ENODATA ? -EBADMSG : rc;
	blen = get32(h + 4);
	if (get32(h) != RECLOG_MAGIC || blen > FQ_RECLOG_MAX_BODY || left - FQ_RECLOG_HDR < blen)
		return -EBADMSG;
	if ((rc = grow(&l->rbuf, &l->rcap, FQ_RECLOG_HDR + (size_t)blen)) < 0)
		return rc;
	memcpy(l->rbuf, h, FQ_RECLOG_HDR);
	if ((rc = read_exact(l->fd, l->rbuf + FQ_RECLOG_HDR, blen, off + FQ_RECLOG_HDR)) < 0)
		return rc == -ENODATA ? -EBADMSG : rc;
	return fq_reclog_parse(l->rbuf, FQ_RECLOG_HDR + (size_t)blen, body, len) ?: -EBADMSG;
}

int64_t fq_reclog_scan(struct fq_reclog *l, uint64_t from, fq_reclog_visit_fn visit, void *arg)
{
	uint64_t off = from < l->written ? from : l->written, cut;
	const uint8_t *body;
	uint32_t len;
	int64_t n;

	while ((n = fq_reclog_read(l, off, &body, &len)) > 0 && (!visit || visit(arg, off, body, len) == 0))
		off += (uint64_t)n;
	if (n < 0 && n != -EBADMSG)
		return n;
	cut = l->written - off;
	if (cut && ftruncate(l->fd, (off_t)off) < 0)
		return -errno;
	l->written = off;
	if (fdatasync(l->fd) < 0)
		return -errno;
	return (int64_t)cut;
}

int fq_reclog_append(struct fq_reclog *l, const struct iovec *iov, int iovcnt)
{
	size_t len = 0, at;
	uint32_t h = FNV_SEED;
	int rc;

	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (len > FQ_RECLOG_MAX_BODY)
		return -EMSGSIZE;
	if (l->max_bytes && fq_reclog_size(l) + FQ_RECLOG_HDR + len > l->max_bytes)
		return -ENOSPC;
	if ((rc = grow(&l->wbuf, &l->wcap, l->wlen + FQ_RECLOG_HDR + len)) < 0)
		return rc;
	at = l->wlen + FQ_RECLOG_HDR;
	for (int i = 0; i < iovcnt; i++) {
		memcpy(l->wbuf + at, iov[i].iov_base, iov[i].iov_len);
		h = fnv1a(h, iov[i].iov_base, iov[i].iov_len);
		at += iov[i].iov_len;
	}
	put32(l->wbuf + l->wlen, RECLOG_MAGIC);
	put32(l->wbuf + l->wlen + 4, (uint32_t)len);
	put32(l->wbuf + l->wlen + 8, h);
	l->wlen = at;
	return 0;
}

void fq_reclog_discard(struct fq_reclog *l)
{
	l->wlen = 0;
}

int fq_reclog_write(struct fq_reclog *l)
{
	size_t done = 0;

	while (done < l->wlen) {
		ssize_t w = pwrite(l->fd, l->wbuf + done, l->wlen - done, (off_t)(l->written + done));
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int rc = w < 0 ? -errno : -EIO;

			/* Nothing of this buffer counts: cut what may have landed. */
			if (ftruncate(l->fd, (off_t)l->written) < 0)
				rc = -errno;
			l->wlen = 0;
			return rc;
		}
		done += (size_t)w;
	}
	l->written += l->wlen;
	l->wlen = 0;
	return 0;
}

int fq_reclog_sync(struct fq_reclog *l)
{
	int rc = fq_reclog_write(l);

	if (rc < 0)
		return rc;
	if (fdatasync(l->fd) < 0)
		return -errno;
	if (l->dir_unsynced) {
		if ((rc = fq_sync_dir(l->dir)) < 0)
			return rc;
		l->dir_unsynced = false;
	}
	return 0;
}

int fq_reclog_truncate(struct fq_reclog *l, uint64_t size)
{
	l->wlen = 0;
	if (size > l->written)
		return -EINVAL;
	if (ftruncate(l->fd, (off_t)size) < 0)
		return -errno;
	l->written = size;
	return 0;
}

uint64_t fq_reclog_size(const struct fq_reclog *l)
{
	return l->written + l->wlen;
}

uint64_t fq_reclog_buffered(const struct fq_reclog *l)
{
	return l->wlen;
}

int fq_reclog_fd(const struct fq_reclog *l)
{
	return l->fd;
}
