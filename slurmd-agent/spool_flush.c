/* spool_flush: the agent spool's durability (spool_flush.h): flushes run
 * on the worker thread, the callers waiting for a seq to be on disk, and
 * the seq lease's file. Below spool.c: it calls nothing there. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "slurmd-agent/spool_int.h"

/* The lease file, durably: written, synced, renamed over, directory synced.
 * Runs on the loop at open and on the worker in a flush. */
int spool_store_lease(const char *dir, uint64_t end)
{
	char path[4200], tmp[4210], text[32];
	int fd, n = snprintf(text, sizeof(text), "%" PRIu64 "\n", end), rc = 0;

	snprintf(path, sizeof(path), "%s/next_seq", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, text, (size_t)n) != n || fsync(fd) < 0 || rename(tmp, path) < 0)
		rc = -errno;
	if (fd >= 0)
		close(fd);
	if (rc == 0)
		rc = fq_sync_dir(dir);
	return rc;
}

void spool_write_acked(struct fq_spool *s)
{
	char text[32];
	int n = snprintf(text, sizeof(text), "%020" PRIu64 "\n", s->acked);

	if (pwrite(s->ack_fd, text, (size_t)n, 0) != n)
		fq_log_rl(FQ_LOG_ERROR, "spool: cannot write %s/acked: %s", s->dir, strerror(errno));
	s->ack_dirty = true;
}

int spool_write_held(struct fq_spool *s)
{
	int rc = s->cur ? fq_reclog_write(s->cur) : 0;

	if (rc < 0) { /* the segment ends where its file does */
		s->seg[s->nseg - 1].bytes -= s->held;
		s->total_bytes -= s->held;
		s->io_errors++;
		fq_log_rl(FQ_LOG_ERROR, "spool: write failed: %s", strerror(-rc));
	}
	s->held = 0;
	return rc;
}

static void flush_run(struct fq_job *j)
{
	struct flush_job *f = (struct flush_job *)j;
	int rc;

	for (size_t i = 0; i < f->nfds; i++) {
		if (fdatasync(f->fds[i]) < 0 && !f->rc)
			f->rc = -errno;
		close(f->fds[i]);
	}
	if (f->lease && (rc = spool_store_lease(f->dir, f->lease)) < 0 && !f->rc)
		f->rc = rc;
	if (f->dir_sync && (rc = fq_sync_dir(f->dir)) < 0 && !f->rc)
		f->rc = rc;
}

/* Waiters up to seq learn rc, in seq order. */
static void wake(struct fq_spool *s, uint64_t seq, int rc)
{
	size_t n = 0;

	while (n < s->nwaiters && s->waiters[n].seq <= seq)
		n++;
	for (size_t i = 0; i < n; i++) {
		struct waiter wt = s->waiters[0];

		memmove(&s->waiters[0], &s->waiters[1], (s->nwaiters - 1) * sizeof(*s->waiters));
		s->nwaiters--;
		wt.fn(wt.arg, rc);
	}
}

static void flush_done(struct fq_job *j, bool ran)
{
	struct flush_job *f = (struct flush_job *)j;
	struct fq_spool *s = f->s;

	if (!ran) /* the worker went away first: inline, now */
		flush_run(j);
	s->flushing = NULL;
	if (s->held) /* what the loop appended while it ran */
		spool_write_held(s);
	if (s->ack_held) {
		s->ack_held = false;
		spool_write_acked(s);
	}
	if (f->rc == 0) {
		if (f->upto > s->durable)
			s->durable = f->upto;
		if (f->acked > s->acked_durable)
			s->acked_durable = f->acked;
		if (f->lease)
			s->lease_end = f->lease;
	} else {
		s->io_errors++;
		fq_log_rl(FQ_LOG_ERROR, "spool: %s: cannot make frames up to seq %" PRIu64 " durable: %s",
			  s->dir, f->upto, strerror(-f->rc));
	}
	if (f->lease && s->lease_want == f->lease)
		s->lease_want = 0;
	wake(s, f->rc == 0 ? s->durable : f->upto, f->rc);
	free(f->fds);
	free(f);
	if (s->flush_again) {
		s->flush_again = false;
		fq_spool_flush(s);
	}
}

/* A flush of everything the spool holds now, or NULL when nothing waits. */
static struct flush_job *flush_job_new(struct fq_spool *s)
{
	struct flush_job *f;
	uint64_t upto = s->next_seq - 1;
	bool current = upto > s->durable && s->cur;

	if (upto <= s->durable && !s->nretired && !s->dir_dirty && !s->lease_want && !s->ack_dirty)
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f || !(f->fds = malloc((s->nretired + 2) * sizeof(int)))) {
		free(f);
		return NULL;
	}
	if (s->nretired)
		memcpy(f->fds, s->retired, s->nretired * sizeof(int));
	f->nfds = s->nretired;
	if (current && (f->fds[f->nfds] = dup(fq_reclog_fd(s->cur))) >= 0) {
		f->nfds++;
		f->cur = true;
	} else if (current)
		f->rc = -errno;
	if (s->ack_dirty && (f->fds[f->nfds] = dup(s->ack_fd)) >= 0) {
		f->nfds++;
		f->ack = true;
		f->acked = s->acked;
		s->ack_dirty = false;
	}
	s->nretired = 0;
	f->job = (struct fq_job){.run = flush_run, .done = flush_done};
	f->s = s;
	f->dir = s->dir;
	f->dir_sync = s->dir_dirty;
	s->dir_dirty = false;
	f->lease = s->lease_want;
	f->upto = upto;
	return f;
}

void fq_spool_flush(struct fq_spool *s)
{
	struct flush_job *f;

	if (s->flushing) {
		s->flush_again = true;
		return;
	}
	f = flush_job_new(s);
	if (!f)
		return;
	s->flushing = f;
	if (s->worker) {
		fq_worker_submit(s->worker, &f->job);
		return;
	}
	flush_run(&f->job);
	flush_done(&f->job, true);
}

int fq_spool_attach(struct fq_spool *s, struct event_base *base)
{
	s->worker = fq_worker_create(base);
	return s->worker ? 0 : -errno;
}

uint64_t fq_spool_durable_seq(const struct fq_spool *s)
{
	return s->durable;
}

int fq_spool_when_durable(struct fq_spool *s, uint64_t seq, fq_spool_durable_fn fn, void *arg)
{
	if (seq <= s->durable)
		return 1;
	if (s->nwaiters == s->capwaiters) {
		size_t cap = s->capwaiters ? 2 * s->capwaiters : 16;
		struct waiter *v = realloc(s->waiters, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->waiters = v;
		s->capwaiters = cap;
	}
	s->waiters[s->nwaiters++] = (struct waiter){.seq = seq, .fn = fn, .arg = arg};
	fq_spool_flush(s);
	return 0;
}
