/*
 * spool: see spool.h.
 */
#include "controller/spool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/reclog.h"

struct fq_spool {
	struct fq_reclog *log; /* DIR/spool.dat */
	int pos_fd;            /* DIR/spool.pos */
	uint64_t committed;    /* replayed and committed up to here */
	uint64_t cursor;       /* replay cursor */
};

static int write_pos(struct fq_spool *s, uint64_t pos)
{
	if (pwrite(s->pos_fd, &pos, sizeof(pos), 0) != (ssize_t)sizeof(pos))
		return -errno ? -errno : -EIO;
	return fdatasync(s->pos_fd) < 0 ? -errno : 0;
}

int fq_spool_open(const char *dir, uint64_t max_bytes, struct fq_spool **out, char *err, size_t errlen)
{
	struct fq_spool *s = calloc(1, sizeof(*s));
	char path[4096], why[4200];
	uint64_t pos = 0;
	int64_t cut;
	int rc;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->pos_fd = -1;
	rc = fq_reclog_open(dir, "spool.dat", FQ_RECLOG_CREATE, max_bytes, &s->log, why, sizeof(why));
	if (rc < 0) {
		snprintf(err, errlen, "spool %s", why);
		goto fail;
	}
	snprintf(path, sizeof(path), "%s/spool.pos", dir);
	s->pos_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (s->pos_fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "spool %s: %s", path, strerror(errno));
		goto fail;
	}
	if (pread(s->pos_fd, &pos, sizeof(pos), 0) != (ssize_t)sizeof(pos) || pos > fq_reclog_size(s->log))
		pos = 0;
	s->committed = s->cursor = pos;
	/* A torn record at the end (never synced, never acked) is cut off. */
	cut = fq_reclog_scan(s->log, pos, NULL, NULL);
	if (cut < 0) {
		rc = (int)cut;
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
	if (s->log && fq_reclog_buffered(s->log))
		fq_reclog_sync(s->log);
	fq_reclog_close(s->log);
	if (s->pos_fd >= 0)
		close(s->pos_fd);
	free(s);
}

int fq_spool_append(struct fq_spool *s, const void *body, size_t len)
{
	struct iovec iov = {.iov_base = (void *)body, .iov_len = len};

	return fq_reclog_append(s->log, &iov, 1);
}

int fq_spool_sync(struct fq_spool *s)
{
	return fq_reclog_sync(s->log);
}

void fq_spool_discard(struct fq_spool *s)
{
	fq_reclog_discard(s->log);
}

int fq_spool_next(struct fq_spool *s, const uint8_t **body, size_t *len)
{
	uint32_t n;
	int64_t rc = fq_reclog_read(s->log, s->cursor, body, &n);

	if (rc <= 0)
		return (int)rc;
	*len = n;
	s->cursor += (uint64_t)rc;
	return 1;
}

int fq_spool_commit(struct fq_spool *s)
{
	int rc;

	if (s->cursor == fq_reclog_size(s->log) && !fq_reclog_buffered(s->log)) {
		/* Everything replayed: start over from an empty file. */
		if ((rc = fq_reclog_truncate(s->log, 0)) < 0)
			return rc;
		s->committed = s->cursor = 0;
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
	return fq_reclog_size(s->log) - s->committed;
}

uint64_t fq_spool_file_bytes(const struct fq_spool *s)
{
	return fq_reclog_size(s->log);
}
