/* spool: write-ahead, bounded on-disk queue of outgoing frames (see spool.h). */
#include "slurmd-agent/spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/frame.h"
#include "common/log.h"
#include "common/mkdirs.h"
#include "slurmd-agent/worker.h"

#define REC_HDR   13 /* u32 length, u8 kind, u64 seq */
#define LEASE     100000
#define FRAME_MAX FQ_FRAME_MAX_DEFAULT
#define SEG_MIN   (64u << 10)
#define SEG_MAX   (4u << 20)
#define SEQ_MAX   (UINT64_C(1) << 62) /* no spool gives so many: a seq beyond is garbage */

struct segment {
	uint64_t first, last; /* seqs; last < first: empty */
	uint64_t bytes, frames;
	uint64_t bulk; /* of its frames, bulk telemetry (fq_spool_is_bulk) */
};

struct waiter {
	uint64_t seq;
	fq_spool_durable_fn fn;
	void *arg;
};

struct flush_job;

struct fq_spool {
	char dir[4096];
	uint64_t max_bytes, seg_limit;
	struct segment *seg;
	size_t nseg, capseg;
	int fd; /* the last segment, open for appending; -1 if none */
	uint64_t next_seq, lease_end, acked, skip_upto;
	size_t cur_seg; /* send cursor */
	uint64_t cur_off;
	uint64_t total_bytes, total_frames, dropped_bulk, dropped_events, io_errors;
	/* durability (spool.h): what the next flush makes durable */
	struct fq_worker *worker; /* NULL: flushes run inline */
	uint64_t durable;         /* every seq up to here is on stable storage */
	int *retired;             /* written segments rolled over: synced and closed by the next flush */
	size_t nretired, capretired;
	bool dir_dirty;      /* a segment was created or renamed since the last flush began */
	uint64_t lease_want; /* a lease the next flush writes (0: none) */
	struct flush_job *flushing;
	bool flush_again;
	struct waiter *waiters; /* by seq */
	size_t nwaiters, capwaiters;
	/* the acknowledged seq, kept in DIR/acked: an agent that restarts
	 * tells the controller where it stands, not the first seq on disk */
	int ack_fd;
	bool ack_dirty;         /* written since the last flush began */
	uint64_t acked_durable; /* what DIR/acked holds on stable storage */
};

/* A flush, run on the worker: its inputs are its own, never the spool's. */
struct flush_job {
	struct fq_job job;
	struct fq_spool *s;
	const char *dir; /* s->dir: fixed once open */
	int *fds;        /* fdatasync'd, then closed */
	size_t nfds;
	bool dir_sync;
	uint64_t lease, upto;
	uint64_t acked; /* durable once done, when ack_fd is one of fds */
	int rc;
};

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 3; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static void seg_path(const struct fq_spool *s, uint64_t first, char *out, size_t len)
{
	snprintf(out, len, "%s/%020" PRIu64 ".seg", s->dir, first);
}

/* fsync the directory: a created, renamed or replaced entry survives a
 * crash only once its directory is synced. */
static int sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;

	if (fd < 0 || fsync(fd) < 0)
		rc = -errno;
	if (fd >= 0)
		close(fd);
	return rc;
}

/* The lease file, durably: written, synced, renamed over, directory synced.
 * Runs on the loop at open and on the worker in a flush. */
static int store_lease(const char *dir, uint64_t end)
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
		rc = sync_dir(dir);
	return rc;
}

static int write_lease(struct fq_spool *s, uint64_t end)
{
	int rc = store_lease(s->dir, end);

	if (rc == 0)
		s->lease_end = end;
	else
		fq_error("spool: cannot write %s/next_seq: %s", s->dir, strerror(-rc));
	return rc;
}

static int cmp_seg(const void *a, const void *b)
{
	const struct segment *x = a, *y = b;

	return x->first < y->first ? -1 : x->first > y->first;
}

static int add_seg(struct fq_spool *s, uint64_t first)
{
	if (s->nseg == s->capseg) {
		size_t cap = s->capseg ? 2 * s->capseg : 16;
		struct segment *v = realloc(s->seg, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->seg = v;
		s->capseg = cap;
	}
	s->seg[s->nseg++] = (struct segment){.first = first, .last = first - 1};
	return 0;
}

/* Scan one segment file: its frames, last seq; a torn tail is cut off. A
 * record whose seq is not above the one before it (the first: not below
 * the file's name), or is beyond SEQ_MAX, is no record of this spool's:
 * it ends the segment too. */
static int scan_seg(struct fq_spool *s, struct segment *g)
{
	char path[4200];
	uint8_t h[REC_HDR];
	uint64_t off = 0;
	struct stat st;
	int fd;

	seg_path(s, g->first, path, sizeof(path));
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while (pread(fd, h, REC_HDR, (off_t)off) == REC_HDR) {
		uint32_t len = get32(h);
		uint64_t seq = get64(h + 5);
		/* seqs rise from the segment's name: one that does not is no
		 * record this spool wrote */
		if (len < FQ_FRAME_HEADER_SIZE || len > FRAME_MAX + FQ_FRAME_HEADER_SIZE ||
		    off + REC_HDR + len > (uint64_t)st.st_size || seq < g->first ||
		    (g->frames && seq <= g->last) || seq >= SEQ_MAX)
			break;
		g->last = seq;
		g->frames++;
		g->bulk += fq_spool_is_bulk(h[4]);
		off += REC_HDR + len;
	}
	if (off < (uint64_t)st.st_size) {
		fq_warn("spool: %s: cutting a torn or foreign record at offset %" PRIu64, path, off);
		if (ftruncate(fd, (off_t)off) < 0)
			fq_warn("spool: %s: %s", path, strerror(errno));
	}
	/* an agent that crashed may have left it in the page cache only */
	if (fdatasync(fd) < 0)
		fq_warn("spool: %s: %s", path, strerror(errno));
	close(fd);
	g->bytes = off;
	return 0;
}

/* Open DIR/acked (seq as 20 digits and a newline) and take the seq it
 * holds, when it is one this spool gave. */
static int open_acked(struct fq_spool *s)
{
	char path[4200], text[32] = "";
	unsigned long long v;

	snprintf(path, sizeof(path), "%s/acked", s->dir);
	s->ack_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (s->ack_fd < 0)
		return -errno;
	if (pread(s->ack_fd, text, sizeof(text) - 1, 0) > 0 && sscanf(text, "%llu", &v) == 1 &&
	    v > s->acked && v < s->next_seq)
		s->acked = v;
	fdatasync(s->ack_fd); /* an agent that crashed may have left it in the page cache */
	s->acked_durable = s->acked;
	return 0;
}

static void write_acked(struct fq_spool *s)
{
	char text[32];
	int n = snprintf(text, sizeof(text), "%020" PRIu64 "\n", s->acked);

	if (pwrite(s->ack_fd, text, (size_t)n, 0) != n)
		fq_log_rl(FQ_LOG_ERROR, "spool: cannot write %s/acked: %s", s->dir, strerror(errno));
	s->ack_dirty = true;
}

static int load(struct fq_spool *s)
{
	DIR *d = opendir(s->dir);
	struct dirent *e;
	char path[4200];
	FILE *f;
	uint64_t lease = 0;
	int rc;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		uint64_t first;
		char tail[8];
		if (sscanf(e->d_name, "%20" SCNu64 "%7s", &first, tail) == 2 && strcmp(tail, ".seg") == 0 &&
		    first > 0 && first < SEQ_MAX && add_seg(s, first) < 0) {
			closedir(d);
			return -ENOMEM;
		}
	}
	closedir(d);
	if (s->nseg)
		qsort(s->seg, s->nseg, sizeof(*s->seg), cmp_seg);
	for (size_t i = 0; i < s->nseg;) {
		if (scan_seg(s, &s->seg[i]) < 0)
			s->seg[i].last = s->seg[i].first - 1;
		/* a segment created but never written (a crash in between): the
		 * next append would create it again, two entries for one file */
		if (!s->seg[i].frames) {
			seg_path(s, s->seg[i].first, path, sizeof(path));
			unlink(path);
			memmove(&s->seg[i], &s->seg[i + 1], (s->nseg - i - 1) * sizeof(*s->seg));
			s->nseg--;
			continue;
		}
		s->total_bytes += s->seg[i].bytes;
		s->total_frames += s->seg[i].frames;
		if (s->seg[i].last + 1 > s->next_seq)
			s->next_seq = s->seg[i].last + 1;
		i++;
	}
	snprintf(path, sizeof(path), "%s/next_seq", s->dir);
	f = fopen(path, "re");
	if (f) {
		if (fscanf(f, "%" SCNu64, &lease) != 1)
			lease = 0;
		fclose(f);
	}
	if (lease > s->next_seq && lease < SEQ_MAX)
		s->next_seq = lease;
	if (s->next_seq == 0)
		s->next_seq = 1;
	s->acked = s->nseg ? s->seg[0].first - 1 : s->next_seq - 1;
	if ((rc = open_acked(s)) < 0)
		return rc;
	s->skip_upto = s->acked;
	s->durable = s->next_seq - 1; /* every segment synced above, the lease below */
	if (s->total_frames)
		fq_info("spool: %" PRIu64 " frame(s), %" PRIu64
			" bytes from an earlier run will be sent first",
			s->total_frames, s->total_bytes);
	return write_lease(s, s->next_seq + LEASE);
}

int fq_spool_open(const char *dir, uint64_t max_bytes, struct fq_spool **out)
{
	struct fq_spool *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return -ENOMEM;
	if (strlen(dir) >= sizeof(s->dir) - 64) {
		free(s);
		return -ENAMETOOLONG;
	}
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	s->fd = s->ack_fd = -1;
	s->max_bytes = max_bytes;
	s->seg_limit = max_bytes / 16;
	if (s->seg_limit < SEG_MIN)
		s->seg_limit = SEG_MIN;
	if (s->seg_limit > SEG_MAX)
		s->seg_limit = SEG_MAX;
	rc = fq_mkdirs(dir, 0700);
	if (rc < 0) {
		fq_error("spool: cannot create %s: %s", dir, strerror(-rc));
		goto fail;
	}
	rc = load(s);
	if (rc < 0) {
		fq_error("spool: cannot load %s: %s", dir, strerror(-rc));
		goto fail;
	}
	*out = s;
	return 0;
fail:
	if (s->ack_fd >= 0)
		close(s->ack_fd);
	free(s->seg);
	free(s);
	return rc;
}

void fq_spool_close(struct fq_spool *s)
{
	struct fq_worker *w;

	if (!s)
		return;
	/* the flush in flight ends (its done may start the last one, inline) */
	w = s->worker;
	s->worker = NULL;
	fq_worker_destroy(w);
	fq_spool_flush(s);
	if (s->fd >= 0)
		close(s->fd);
	close(s->ack_fd);
	free(s->retired);
	free(s->waiters);
	free(s->seg);
	free(s);
}

static void remove_seg(struct fq_spool *s, size_t i)
{
	char path[4200];

	seg_path(s, s->seg[i].first, path, sizeof(path));
	unlink(path);
	if (i == s->nseg - 1 && s->fd >= 0) {
		close(s->fd);
		s->fd = -1;
	}
	s->total_bytes -= s->seg[i].bytes;
	s->total_frames -= s->seg[i].frames;
	memmove(&s->seg[i], &s->seg[i + 1], (s->nseg - i - 1) * sizeof(*s->seg));
	s->nseg--;
	if (s->cur_seg > i)
		s->cur_seg--;
	else if (s->cur_seg == i)
		s->cur_off = 0;
}

bool fq_spool_is_bulk(int payload_case)
{
	return payload_case == FABRICIQ__ENVELOPE__PAYLOAD_PROBE ||
	       payload_case == FABRICIQ__ENVELOPE__PAYLOAD_CLOCK ||
	       payload_case == FABRICIQ__ENVELOPE__PAYLOAD_LANE;
}

/* Rewrite a closed segment without its bulk telemetry. 0 or -errno. */
static int compact(struct fq_spool *s, struct segment *g)
{
	char path[4200], tmp[4210];
	uint8_t h[REC_HDR], *buf = malloc(FRAME_MAX + FQ_FRAME_HEADER_SIZE);
	uint64_t off = 0, kept_bytes = 0, kept = 0;
	int in = -1, outfd = -1, rc = 0;

	seg_path(s, g->first, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (!buf)
		return -ENOMEM;
	in = open(path, O_RDONLY | O_CLOEXEC);
	outfd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (in < 0 || outfd < 0) {
		rc = -errno;
		goto out;
	}
	while (off < g->bytes && pread(in, h, REC_HDR, (off_t)off) == REC_HDR) {
		uint32_t len = get32(h);
		if (pread(in, buf, len, (off_t)(off + REC_HDR)) != (ssize_t)len) {
			rc = -EIO;
			goto out;
		}
		off += REC_HDR + len;
		if (fq_spool_is_bulk(h[4])) {
			s->dropped_bulk++;
			continue;
		}
		if (write(outfd, h, REC_HDR) != REC_HDR || write(outfd, buf, len) != (ssize_t)len) {
			rc = -EIO;
			goto out;
		}
		kept++;
		kept_bytes += REC_HDR + len;
	}
	/* the rewritten file replaces one whose records may be durable: it
	 * must be on disk before the rename is (rare: only over the bound) */
	if (fdatasync(outfd) < 0 || rename(tmp, path) < 0) {
		rc = -errno;
		goto out;
	}
	s->dir_dirty = true;
	s->total_bytes -= g->bytes - kept_bytes;
	s->total_frames -= g->frames - kept;
	g->bytes = kept_bytes;
	g->frames = kept;
	g->bulk = 0;
out:
	if (in >= 0)
		close(in);
	if (outfd >= 0)
		close(outfd);
	if (rc < 0)
		unlink(tmp);
	free(buf);
	return rc;
}

/* The oldest closed segment (never the one being written) still holding
 * bulk telemetry, or NULL. */
static struct segment *oldest_with_bulk(struct fq_spool *s)
{
	for (size_t i = 0; i + 1 < s->nseg; i++)
		if (s->seg[i].bulk)
			return &s->seg[i];
	return NULL;
}

/* Keep the spool within its bound: bulk telemetry goes first, from the
 * oldest closed segment on, out of every closed segment; only then whole
 * segments of events, oldest first (never the one being written). */
static void enforce_bound(struct fq_spool *s)
{
	int warned = 0;

	while (s->total_bytes > s->max_bytes && s->nseg > 1) {
		struct segment *g = oldest_with_bulk(s);

		if (!warned++)
			fq_log_rl(FQ_LOG_WARN,
				  "spool over its bound (%" PRIu64 " > %" PRIu64
				  " bytes): dropping the oldest bulk telemetry, then the oldest events",
				  s->total_bytes, s->max_bytes);
		if (g && compact(s, g) == 0) {
			if (&s->seg[s->cur_seg] == g)
				s->cur_off = 0;
			continue;
		}
		s->dropped_bulk += s->seg[0].bulk;
		s->dropped_events += s->seg[0].frames - s->seg[0].bulk;
		remove_seg(s, 0);
	}
}

/* A rolled-over segment's descriptor: synced and closed by the next flush
 * (synced here, on the loop, only when it cannot be kept). */
static void retire(struct fq_spool *s, int fd)
{
	if (s->nretired == s->capretired) {
		size_t cap = s->capretired ? 2 * s->capretired : 8;
		int *v = realloc(s->retired, cap * sizeof(*v));

		if (!v) {
			fdatasync(fd);
			close(fd);
			return;
		}
		s->retired = v;
		s->capretired = cap;
	}
	s->retired[s->nretired++] = fd;
}

/* The lease is renewed by a flush half a lease ahead; only if the seqs run
 * out first (half a lease of frames in one flush) is it written here. */
static void renew_lease(struct fq_spool *s)
{
	if (s->next_seq >= s->lease_end) {
		write_lease(s, s->next_seq + LEASE);
		return;
	}
	if (!s->lease_want && s->lease_end - s->next_seq <= LEASE / 2) {
		s->lease_want = s->next_seq + LEASE;
		fq_spool_flush(s);
	}
}

int fq_spool_append(struct fq_spool *s, Fabriciq__Envelope *env)
{
	uint8_t h[REC_HDR], *frame;
	size_t len;
	struct segment *g;
	int rc;

	env->seq = s->next_seq;
	rc = fq_frame_encode(env, FRAME_MAX, &frame, &len);
	if (rc < 0)
		return rc;
	if (s->fd < 0 || s->seg[s->nseg - 1].bytes + REC_HDR + len > s->seg_limit) {
		char path[4200];
		if (s->fd >= 0)
			retire(s, s->fd);
		s->fd = -1;
		if ((rc = add_seg(s, s->next_seq)) < 0)
			goto out;
		seg_path(s, s->next_seq, path, sizeof(path));
		s->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (s->fd < 0) {
			rc = -errno;
			s->nseg--;
			s->io_errors++;
			fq_log_rl(FQ_LOG_ERROR, "spool: cannot create %s: %s", path, strerror(errno));
			goto out;
		}
		s->dir_dirty = true;
	}
	put32(h, (uint32_t)len);
	h[4] = (uint8_t)env->payload_case;
	put64(h + 5, env->seq);
	g = &s->seg[s->nseg - 1];
	if (write(s->fd, h, REC_HDR) != REC_HDR || write(s->fd, frame, len) != (ssize_t)len) {
		rc = -EIO;
		s->io_errors++;
		fq_log_rl(FQ_LOG_ERROR, "spool: write failed: %s", strerror(errno));
		/* the segment may now hold a torn record: start a new one (the
		 * records before it are synced by the next flush) */
		retire(s, s->fd);
		s->fd = -1;
		goto out;
	}
	g->last = env->seq;
	g->bytes += REC_HDR + len;
	g->frames++;
	g->bulk += fq_spool_is_bulk(env->payload_case);
	s->total_bytes += REC_HDR + len;
	s->total_frames++;
	s->next_seq++;
	renew_lease(s);
	enforce_bound(s);
out:
	free(frame);
	return rc;
}

void fq_spool_ack(struct fq_spool *s, uint64_t seq)
{
	if (seq <= s->acked)
		return;
	s->acked = seq;
	write_acked(s);
	if (s->skip_upto < seq)
		s->skip_upto = seq;
	/* every segment entirely acknowledged, except the one being written */
	while (s->nseg > 1 && s->seg[0].last <= seq)
		remove_seg(s, 0);
	if (s->nseg == 1 && s->seg[0].last <= seq && s->seg[0].frames && s->fd < 0)
		remove_seg(s, 0);
}

void fq_spool_rewind(struct fq_spool *s)
{
	s->cur_seg = 0;
	s->cur_off = 0;
	s->skip_upto = s->acked;
}

int64_t fq_spool_next(struct fq_spool *s, uint8_t *buf, size_t cap, uint64_t *seq)
{
	while (s->cur_seg < s->nseg) {
		struct segment *g = &s->seg[s->cur_seg];
		char path[4200];
		uint8_t h[REC_HDR];
		uint32_t len;
		int fd;

		if (s->cur_off + REC_HDR > g->bytes) {
			if (s->cur_seg + 1 == s->nseg)
				return 0; /* caught up with the writer */
			s->cur_seg++;
			s->cur_off = 0;
			continue;
		}
		seg_path(s, g->first, path, sizeof(path));
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		if (pread(fd, h, REC_HDR, (off_t)s->cur_off) != REC_HDR) {
			close(fd);
			return -EIO;
		}
		len = get32(h);
		*seq = get64(h + 5);
		if (*seq <= s->skip_upto) {
			close(fd);
			s->cur_off += REC_HDR + len;
			continue;
		}
		if (len > cap) {
			close(fd);
			return -EMSGSIZE;
		}
		if (pread(fd, buf, len, (off_t)(s->cur_off + REC_HDR)) != (ssize_t)len) {
			close(fd);
			return -EIO;
		}
		close(fd);
		s->cur_off += REC_HDR + len;
		s->skip_upto = *seq;
		return len;
	}
	return 0;
}

uint64_t fq_spool_next_seq(const struct fq_spool *s)
{
	return s->next_seq;
}

uint64_t fq_spool_first_unacked(const struct fq_spool *s)
{
	return s->acked + 1;
}

uint64_t fq_spool_first_unconfirmed(const struct fq_spool *s)
{
	return s->acked_durable + 1;
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
	if (f->lease && (rc = store_lease(f->dir, f->lease)) < 0 && !f->rc)
		f->rc = rc;
	if (f->dir_sync && (rc = sync_dir(f->dir)) < 0 && !f->rc)
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
	bool current = upto > s->durable && s->fd >= 0;

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
	if (current && (f->fds[f->nfds] = dup(s->fd)) >= 0)
		f->nfds++;
	else if (current)
		f->rc = -errno;
	if (s->ack_dirty && (f->fds[f->nfds] = dup(s->ack_fd)) >= 0) {
		f->nfds++;
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

struct json_object *fq_spool_counters(const struct fq_spool *s)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "bytes", json_object_new_uint64(s->total_bytes));
	json_object_object_add(o, "frames", json_object_new_uint64(s->total_frames));
	json_object_object_add(o, "unacked", json_object_new_uint64(s->next_seq - 1 - s->acked));
	json_object_object_add(o, "max_bytes", json_object_new_uint64(s->max_bytes));
	json_object_object_add(o, "dropped_frames",
			       json_object_new_uint64(s->dropped_bulk + s->dropped_events));
	json_object_object_add(o, "dropped_bulk_frames", json_object_new_uint64(s->dropped_bulk));
	json_object_object_add(o, "dropped_event_frames", json_object_new_uint64(s->dropped_events));
	json_object_object_add(o, "io_errors", json_object_new_uint64(s->io_errors));
	json_object_object_add(o, "acked_seq", json_object_new_uint64(s->acked));
	json_object_object_add(o, "next_seq", json_object_new_uint64(s->next_seq));
	return o;
}
