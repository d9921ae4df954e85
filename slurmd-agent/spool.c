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
#include "common/reclog.h"
#include "slurmd-agent/spool_int.h"
#include "slurmd-agent/worker.h"

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static void seg_name(uint64_t first, char *out, size_t len)
{
	snprintf(out, len, "%020" PRIu64 ".seg", first);
}

static void seg_path(const struct fq_spool *s, uint64_t first, char *out, size_t len)
{
	char name[32];

	seg_name(first, name, sizeof(name));
	snprintf(out, len, "%s/%s", s->dir, name);
}

/* A segment's record log (FQ_RECLOG_CREATE | FQ_RECLOG_TRUNC: a new one). */
static int seg_open(const struct fq_spool *s, uint64_t first, unsigned flags, struct fq_reclog **out)
{
	char name[32];

	seg_name(first, name, sizeof(name));
	return fq_reclog_open(s->dir, name, flags, 0, out, NULL, 0);
}

static int write_lease(struct fq_spool *s, uint64_t end)
{
	int rc = spool_store_lease(s->dir, end);

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

/* A record's frame: its body after the kind and seq, if it can hold one. */
static bool rec_frame_ok(uint32_t len)
{
	return len >= REC_PFX + FQ_FRAME_HEADER_SIZE && len <= REC_PFX + FQ_FRAME_HEADER_SIZE + FRAME_MAX;
}

/* fq_reclog_visit_fn of scan_seg. A record whose seq is not above the one
 * before it (the first: not below the file's name), or is beyond SEQ_MAX,
 * is no record of this spool's: it ends the segment. */
static int scan_visit(void *arg, uint64_t off, const uint8_t *body, uint32_t len)
{
	struct segment *g = arg;
	uint64_t seq;

	(void)off;
	if (!rec_frame_ok(len))
		return 1;
	seq = get64(body + 1);
	if (seq < g->first || (g->frames && seq <= g->last) || seq >= SEQ_MAX)
		return 1;
	g->last = seq;
	g->frames++;
	g->bulk += fq_spool_is_bulk(body[0]);
	g->bytes += FQ_RECLOG_HDR + len;
	return 0;
}

/* Scan one segment file: its frames, last seq; a torn or foreign tail is
 * cut off (and what stays synced: an agent that crashed may have left it
 * in the page cache only). */
static int scan_seg(struct fq_spool *s, struct segment *g)
{
	struct fq_reclog *l;
	int64_t cut;
	int rc = seg_open(s, g->first, 0, &l);

	if (rc < 0)
		return rc;
	cut = fq_reclog_scan(l, 0, scan_visit, g);
	if (cut > 0)
		fq_warn("spool: %s/%020" PRIu64 ".seg: cutting a torn or foreign record at offset %" PRIu64,
			s->dir, g->first, g->bytes);
	else if (cut < 0)
		fq_warn("spool: %s/%020" PRIu64 ".seg: %s", s->dir, g->first, strerror((int)-cut));
	fq_reclog_close(l);
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
	s->fresh_seq = s->next_seq;
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
	s->ack_fd = -1;
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
	fq_reclog_close(s->cur);
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
	if (i == s->nseg - 1 && s->cur) {
		fq_reclog_close(s->cur);
		s->cur = NULL;
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
	       payload_case == FABRICIQ__ENVELOPE__PAYLOAD_LANE ||
	       payload_case == FABRICIQ__ENVELOPE__PAYLOAD_PROFILER;
}

/* Rewrite a closed segment without its bulk telemetry. 0 or -errno. */
static int compact(struct fq_spool *s, struct segment *g)
{
	char name[32], tmp[40], path[4200], tpath[4210];
	struct fq_reclog *in = NULL, *out = NULL;
	uint64_t off = 0, kept_bytes = 0, kept = 0;
	int rc;

	seg_name(g->first, name, sizeof(name));
	snprintf(tmp, sizeof(tmp), "%s.tmp", name);
	snprintf(path, sizeof(path), "%s/%s", s->dir, name);
	snprintf(tpath, sizeof(tpath), "%s/%s", s->dir, tmp);
	if ((rc = seg_open(s, g->first, 0, &in)) < 0 ||
	    (rc = fq_reclog_open(s->dir, tmp, FQ_RECLOG_CREATE | FQ_RECLOG_TRUNC, 0, &out, NULL, 0)) < 0)
		goto out;
	while (off < g->bytes) {
		const uint8_t *body;
		uint32_t len;
		int64_t n = fq_reclog_read(in, off, &body, &len);
		struct iovec iov = {.iov_base = (void *)body, .iov_len = len};

		if (n <= 0) {
			rc = n < 0 ? (int)n : -EIO;
			goto out;
		}
		off += (uint64_t)n;
		if (fq_spool_is_bulk(body[0])) {
			s->dropped_bulk++;
			continue;
		}
		if ((rc = fq_reclog_append(out, &iov, 1)) < 0 || (rc = fq_reclog_write(out)) < 0)
			goto out;
		kept++;
		kept_bytes += (uint64_t)n;
	}
	/* the rewritten file replaces one whose records may be durable: it
	 * must be on disk before the rename is (rare: only over the bound) */
	if ((rc = fq_reclog_sync(out)) < 0)
		goto out;
	if (rename(tpath, path) < 0) {
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
	fq_reclog_close(in);
	fq_reclog_close(out);
	if (rc < 0)
		unlink(tpath);
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

/* Roll over the segment being written: a dup of its descriptor is synced
 * and closed by the next flush (synced here, on the loop, only when it
 * cannot be kept). */
static void retire(struct fq_spool *s)
{
	int fd = -1;

	if (s->nretired == s->capretired) {
		size_t cap = s->capretired ? 2 * s->capretired : 8;
		int *v = realloc(s->retired, cap * sizeof(*v));

		if (v) {
			s->retired = v;
			s->capretired = cap;
		}
	}
	if (s->nretired < s->capretired && (fd = dup(fq_reclog_fd(s->cur))) >= 0)
		s->retired[s->nretired++] = fd;
	else
		fdatasync(fq_reclog_fd(s->cur));
	fq_reclog_close(s->cur);
	s->cur = NULL;
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

/* The segment to append a record of len body bytes to: the current one, or
 * a new one when there is none or it is full. 0 or -errno. */
static int seg_for(struct fq_spool *s, size_t len)
{
	int rc;

	if (s->cur && s->seg[s->nseg - 1].bytes + FQ_RECLOG_HDR + len <= s->seg_limit)
		return 0;
	if (s->cur) {
		/* full: what it holds is written first, waiting for a flush
		 * that syncs it (a segment's worth held: the loop waits) */
		spool_write_held(s);
		retire(s);
	}
	if ((rc = add_seg(s, s->next_seq)) < 0)
		return rc;
	rc = seg_open(s, s->next_seq, FQ_RECLOG_CREATE | FQ_RECLOG_TRUNC, &s->cur);
	if (rc < 0) {
		s->nseg--;
		s->io_errors++;
		fq_log_rl(FQ_LOG_ERROR, "spool: cannot create %s/%020" PRIu64 ".seg: %s", s->dir, s->next_seq,
			  strerror(-rc));
		return rc;
	}
	s->dir_dirty = true;
	return 0;
}

/* The record just appended to the current segment's log (rec bytes): held
 * there while a flush syncs the segment, up to seg_limit, else written
 * with those held before it. 0 or -errno (nothing of the buffer kept). */
static int append_write(struct fq_spool *s, uint64_t rec)
{
	if (spool_syncing_cur(s) && s->held + rec <= s->seg_limit) {
		s->held += rec;
		return 0;
	}
	return spool_write_held(s);
}

int fq_spool_append(struct fq_spool *s, Fabriciq__Envelope *env)
{
	uint8_t pfx[REC_PFX], *frame;
	struct iovec iov[2];
	size_t len;
	struct segment *g;
	int rc;

	env->seq = s->next_seq;
	rc = fq_frame_encode(env, FRAME_MAX, &frame, &len);
	if (rc < 0)
		return rc;
	if ((rc = seg_for(s, REC_PFX + len)) < 0)
		goto out;
	pfx[0] = (uint8_t)env->payload_case;
	put64(pfx + 1, env->seq);
	iov[0] = (struct iovec){.iov_base = pfx, .iov_len = REC_PFX};
	iov[1] = (struct iovec){.iov_base = frame, .iov_len = len};
	g = &s->seg[s->nseg - 1];
	/* written at once: in the page cache, an agent crash keeps it; held
	 * while a flush syncs the segment (spool_int.h) */
	if ((rc = fq_reclog_append(s->cur, iov, 2)) < 0) {
		s->io_errors++;
		fq_log_rl(FQ_LOG_ERROR, "spool: write failed: %s", strerror(-rc));
	} else {
		rc = append_write(s, REC_HDR + len); /* a failed write is counted there */
	}
	if (rc < 0) { /* start a new segment (the records before are synced by the next flush) */
		retire(s);
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
	if (s->flushing && s->flushing->ack)
		s->ack_held = true; /* its file is being synced: written once that is done */
	else
		spool_write_acked(s);
	if (s->skip_upto < seq)
		s->skip_upto = seq;
	/* every segment entirely acknowledged, except the one being written */
	while (s->nseg > 1 && s->seg[0].last <= seq)
		remove_seg(s, 0);
	if (s->nseg == 1 && s->seg[0].last <= seq && s->seg[0].frames && !s->cur)
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
		const uint8_t *body;
		struct fq_reclog *l;
		uint32_t len;
		int64_t n;
		int rc;

		/* (the segment being written: not its held records) */
		if (s->cur_off >= g->bytes - (s->cur_seg + 1 == s->nseg && s->cur ? s->held : 0)) {
			if (s->cur_seg + 1 == s->nseg)
				return 0; /* caught up with the writer */
			s->cur_seg++;
			s->cur_off = 0;
			continue;
		}
		if ((rc = seg_open(s, g->first, 0, &l)) < 0)
			return rc;
		n = fq_reclog_read(l, s->cur_off, &body, &len);
		if (n <= 0 || !rec_frame_ok(len)) {
			fq_reclog_close(l);
			return n < 0 && n != -EBADMSG ? n : -EIO;
		}
		*seq = get64(body + 1);
		if (*seq > s->skip_upto && *seq > s->durable && !fq_spool_is_bulk(body[0])) {
			/* an event goes out once durable (spool.h): not yet */
			fq_reclog_close(l);
			return 0;
		}
		s->cur_off += (uint64_t)n;
		if (*seq <= s->skip_upto) {
			fq_reclog_close(l);
			continue;
		}
		len -= REC_PFX;
		if (len > cap) {
			fq_reclog_close(l);
			s->cur_off -= (uint64_t)n;
			return -EMSGSIZE;
		}
		memcpy(buf, body + REC_PFX, len);
		fq_reclog_close(l);
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

uint64_t fq_spool_fresh_seq(const struct fq_spool *s)
{
	return s->fresh_seq;
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
