/* spool: write-ahead, bounded on-disk queue of outgoing frames (see spool.h). */
#include "slurmd-agent/spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/frame.h"
#include "common/log.h"

#define REC_HDR   13 /* u32 length, u8 kind, u64 seq */
#define LEASE     100000
#define FRAME_MAX FQ_FRAME_MAX_DEFAULT
#define SEG_MIN   (64u << 10)
#define SEG_MAX   (4u << 20)

struct segment {
	uint64_t first, last; /* seqs; last < first: empty */
	uint64_t bytes, frames;
	int compacted;
};

struct fq_spool {
	char dir[4096];
	uint64_t max_bytes, seg_limit;
	struct segment *seg;
	size_t nseg, capseg;
	int fd; /* the last segment, open for appending; -1 if none */
	uint64_t next_seq, lease_end, acked, skip_upto;
	uint64_t acked_written; /* the acked seq in dir/acked */
	size_t cur_seg;         /* send cursor */
	uint64_t cur_off;
	uint64_t total_bytes, total_frames, dropped, dropped_probe, io_errors;
	int dirty;
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

/* The number in dir/name, written whole (a fresh file renamed over it). */
static int write_number(const struct fq_spool *s, const char *name, uint64_t v)
{
	char path[4200], tmp[4210], text[32];
	int fd, n = snprintf(text, sizeof(text), "%" PRIu64 "\n", v), rc = 0;

	snprintf(path, sizeof(path), "%s/%s", s->dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, text, (size_t)n) != n || fsync(fd) < 0 || rename(tmp, path) < 0)
		rc = -errno;
	if (fd >= 0)
		close(fd);
	if (rc)
		fq_error("spool: cannot write %s: %s", path, strerror(-rc));
	return rc;
}

/* The number in dir/name; 0 when there is none. */
static uint64_t read_number(const struct fq_spool *s, const char *name)
{
	char path[4200];
	uint64_t v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", s->dir, name);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fscanf(f, "%" SCNu64, &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

static int write_lease(struct fq_spool *s, uint64_t end)
{
	int rc = write_number(s, "next_seq", end);

	if (rc == 0)
		s->lease_end = end;
	return rc;
}

/* The acknowledged seq, kept for a restart: the segment being written is
 * kept whole until it is closed, and without it a restarted agent would
 * send its acknowledged frames again from the segment's first (from seq
 * 1, which the controller takes for a count started afresh: stored twice). */
static void write_acked(struct fq_spool *s)
{
	if (s->acked != s->acked_written && write_number(s, "acked", s->acked) == 0)
		s->acked_written = s->acked;
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

/* Scan one segment file: its frames, last seq; a torn tail is cut off. */
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
		if (len > FRAME_MAX + FQ_FRAME_HEADER_SIZE || off + REC_HDR + len > (uint64_t)st.st_size)
			break;
		g->last = get64(h + 5);
		g->frames++;
		off += REC_HDR + len;
	}
	if (off < (uint64_t)st.st_size) {
		fq_warn("spool: %s: cutting a torn record at offset %" PRIu64, path, off);
		if (ftruncate(fd, (off_t)off) < 0)
			fq_warn("spool: %s: %s", path, strerror(errno));
	}
	close(fd);
	g->bytes = off;
	return 0;
}

static int load(struct fq_spool *s)
{
	DIR *d = opendir(s->dir);
	struct dirent *e;
	uint64_t lease, acked;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		uint64_t first;
		char tail[8];
		if (sscanf(e->d_name, "%20" SCNu64 "%7s", &first, tail) == 2 && strcmp(tail, ".seg") == 0 &&
		    first > 0 && add_seg(s, first) < 0) {
			closedir(d);
			return -ENOMEM;
		}
	}
	closedir(d);
	if (s->nseg)
		qsort(s->seg, s->nseg, sizeof(*s->seg), cmp_seg);
	for (size_t i = 0; i < s->nseg; i++) {
		if (scan_seg(s, &s->seg[i]) < 0)
			s->seg[i].last = s->seg[i].first - 1;
		s->total_bytes += s->seg[i].bytes;
		s->total_frames += s->seg[i].frames;
		if (s->seg[i].frames && s->seg[i].last + 1 > s->next_seq)
			s->next_seq = s->seg[i].last + 1;
	}
	lease = read_number(s, "next_seq");
	if (lease > s->next_seq)
		s->next_seq = lease;
	if (s->next_seq == 0)
		s->next_seq = 1;
	s->acked = s->nseg ? s->seg[0].first - 1 : s->next_seq - 1;
	acked = read_number(s, "acked");
	if (acked > s->acked && acked < s->next_seq)
		s->acked = acked;
	s->acked_written = acked;
	s->skip_upto = s->acked;
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
	s->fd = -1;
	s->max_bytes = max_bytes;
	s->seg_limit = max_bytes / 16;
	if (s->seg_limit < SEG_MIN)
		s->seg_limit = SEG_MIN;
	if (s->seg_limit > SEG_MAX)
		s->seg_limit = SEG_MAX;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		rc = -errno;
		fq_error("spool: cannot create %s: %s", dir, strerror(errno));
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
	free(s->seg);
	free(s);
	return rc;
}

void fq_spool_close(struct fq_spool *s)
{
	if (!s)
		return;
	write_acked(s);
	if (s->fd >= 0) {
		fdatasync(s->fd);
		close(s->fd);
	}
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

/* Rewrite the oldest segment without its probe reports. 0 or -errno. */
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
		if (h[4] == FABRICIQ__ENVELOPE__PAYLOAD_PROBE) {
			s->dropped++;
			s->dropped_probe++;
			continue;
		}
		if (write(outfd, h, REC_HDR) != REC_HDR || write(outfd, buf, len) != (ssize_t)len) {
			rc = -EIO;
			goto out;
		}
		kept++;
		kept_bytes += REC_HDR + len;
	}
	if (rename(tmp, path) < 0) {
		rc = -errno;
		goto out;
	}
	s->total_bytes -= g->bytes - kept_bytes;
	s->total_frames -= g->frames - kept;
	g->bytes = kept_bytes;
	g->frames = kept;
	g->compacted = 1;
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

/* Keep the spool within its bound: probe reports of the oldest segments go
 * first, then whole segments (never the one being written). */
static void enforce_bound(struct fq_spool *s)
{
	int warned = 0;

	while (s->total_bytes > s->max_bytes && s->nseg > 1) {
		struct segment *g = &s->seg[0];
		if (!warned++)
			fq_log_rl(FQ_LOG_WARN,
				  "spool over its bound (%" PRIu64 " > %" PRIu64
				  " bytes): dropping the oldest probe reports, then the oldest frames",
				  s->total_bytes, s->max_bytes);
		if (!g->compacted && compact(s, g) == 0) {
			if (s->cur_seg == 0)
				s->cur_off = 0;
			continue;
		}
		s->dropped += g->frames;
		remove_seg(s, 0);
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
		if (s->fd >= 0) {
			fdatasync(s->fd);
			close(s->fd);
		}
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
	}
	put32(h, (uint32_t)len);
	h[4] = (uint8_t)env->payload_case;
	put64(h + 5, env->seq);
	g = &s->seg[s->nseg - 1];
	if (write(s->fd, h, REC_HDR) != REC_HDR || write(s->fd, frame, len) != (ssize_t)len) {
		rc = -EIO;
		s->io_errors++;
		fq_log_rl(FQ_LOG_ERROR, "spool: write failed: %s", strerror(errno));
		/* the segment may now hold a torn record: start a new one */
		close(s->fd);
		s->fd = -1;
		goto out;
	}
	g->last = env->seq;
	g->bytes += REC_HDR + len;
	g->frames++;
	s->total_bytes += REC_HDR + len;
	s->total_frames++;
	s->next_seq++;
	s->dirty = 1;
	if (s->next_seq >= s->lease_end)
		write_lease(s, s->next_seq + LEASE);
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

void fq_spool_sync(struct fq_spool *s)
{
	if (s->dirty && s->fd >= 0)
		fdatasync(s->fd);
	s->dirty = 0;
	write_acked(s);
}

struct json_object *fq_spool_counters(const struct fq_spool *s)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "bytes", json_object_new_uint64(s->total_bytes));
	json_object_object_add(o, "frames", json_object_new_uint64(s->total_frames));
	json_object_object_add(o, "unacked", json_object_new_uint64(s->next_seq - 1 - s->acked));
	json_object_object_add(o, "max_bytes", json_object_new_uint64(s->max_bytes));
	json_object_object_add(o, "dropped_frames", json_object_new_uint64(s->dropped));
	json_object_object_add(o, "dropped_probe_frames", json_object_new_uint64(s->dropped_probe));
	json_object_object_add(o, "io_errors", json_object_new_uint64(s->io_errors));
	json_object_object_add(o, "acked_seq", json_object_new_uint64(s->acked));
	json_object_object_add(o, "next_seq", json_object_new_uint64(s->next_seq));
	return o;
}
