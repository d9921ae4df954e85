/*
 * spool_int: the agent spool's state, shared by spool.c (segments, append,
 * send cursor, acks, bounds) and spool_flush.c (durability: the flushes
 * on the worker thread and the waiters for a seq, the lease file). Not an
 * interface: everyone else goes through spool.h.
 */
#ifndef FQ_AGENT_SPOOL_INT_H
#define FQ_AGENT_SPOOL_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/frame.h"
#include "common/reclog.h"
#include "slurmd-agent/spool_flush.h"
#include "slurmd-agent/worker.h"

#define REC_PFX   9                         /* a record's body: u8 kind, u64 seq, then the frame */
#define REC_HDR   (FQ_RECLOG_HDR + REC_PFX) /* a record's bytes on disk besides the frame */
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
	struct fq_reclog *cur; /* the last segment, open for appending; NULL if none */
	uint64_t next_seq, lease_end, acked, skip_upto;
	uint64_t fresh_seq; /* next_seq when opened: this run's first seq */
	size_t cur_seg;     /* send cursor */
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
	/* While a flush syncs the segment being written (or DIR/acked), the
	 * loop does not write to it: on some filesystems a write waits for a
	 * pending fsync of its file (FUSE and btrfs hold the inode's lock
	 * through it), and a disk that does not answer would stop the loop,
	 * the step registrations with it. The records wait in the segment's
	 * record log (held bytes, at most seg_limit, and not past the
	 * segment's end: beyond, the loop writes and waits), the ack in
	 * acked, until the flush is done. */
	uint64_t held;
	bool ack_held;
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
	bool cur, ack;  /* it syncs the segment being written, DIR/acked */
	int rc;
};

/* Does the flush in flight sync the segment being written (so that a write
 * to it now could wait for the disk)? */
static inline bool spool_syncing_cur(const struct fq_spool *s)
{
	return s->flushing && s->flushing->cur;
}

/* Write the current segment's record log's buffer: the held records and
 * any appended after them. On failure none of it is kept, the held
 * records leave the segment's byte count (its frame counts keep them), and
 * the failure is counted (io_errors) and logged. Held is 0 after. 0 or
 * -errno. */
int spool_write_held(struct fq_spool *s);

/* Write the acknowledged seq to DIR/acked (made durable by the next
 * flush); spool_flush.c, which writes a held one when its flush is done. */
void spool_write_acked(struct fq_spool *s);

/* Write DIR/lease (the first seq a restarted agent may use), synced
 * (spool_flush.c: a flush writes it too). 0 or a negative errno. */
int spool_store_lease(const char *dir, uint64_t end);

#endif /* FQ_AGENT_SPOOL_INT_H */
