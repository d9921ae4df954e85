/*
 * reclog: a durable log of records in one file, the one on-disk format
 * under both spools (the agent's segments, slurmd-agent/spool.h, and the
 * controller's spool.dat, controller/spool.h); each keeps its own
 * semantics (seqs, acks, replay, priorities) in what it puts in a body.
 *
 * A record is
 *     u32 magic | u32 length | u32 checksum (FNV-1a of the body) | body
 * (little-endian; the magic reads "PSQF" on disk: the format of the
 * controller's spool before the agent's spool moved onto it). A log is opened creating its directory (mode 0700, with
 * its parents) and file (0600) when asked; a scan walks its records and
 * cuts the file at the first record that is torn (a crash while
 * appending), corrupt, or refused by the caller. Appends are buffered in
 * memory (bounded by the log's byte bound) until written: a write puts
 * them in the page cache (a process crash keeps them), a sync makes them
 * durable (fdatasync, and an fsync of the directory after this open
 * created the file, so the name survives too).
 *
 * One thread at a time uses a log. Records are at most FQ_RECLOG_MAX_BODY
 * bytes.
 */
#ifndef FQ_COMMON_RECLOG_H
#define FQ_COMMON_RECLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define FQ_RECLOG_HDR      12
#define FQ_RECLOG_MAX_BODY (64u << 20)

/* The one record parser (pure): the record at the start of p, of which n
 * bytes are at hand. Returns its whole size (header and body) with *body
 * and *len set; 0 if p holds less than the whole record (a torn tail at
 * the end of a file); -EBADMSG if it is no record (magic, a length over
 * FQ_RECLOG_MAX_BODY, checksum). */
int64_t fq_reclog_parse(const uint8_t *p, size_t n, const uint8_t **body, uint32_t *len);

struct fq_reclog;

enum {
	FQ_RECLOG_CREATE = 1, /* create the directory and the file if missing */
	FQ_RECLOG_TRUNC = 2,  /* start from an empty file */
};

/* Open dir/name. max_bytes bounds the file (0: unbounded). Returns 0 and
 * *out, or a negative errno (err, when not NULL, names the path). */
int fq_reclog_open(const char *dir, const char *name, unsigned flags, uint64_t max_bytes,
		   struct fq_reclog **out, char *err, size_t errlen);
/* Closes without writing what is still buffered. NULL is fine. */
void fq_reclog_close(struct fq_reclog *l);

/* Called by a scan for each whole record at off: 0 to go on, anything else
 * to refuse it (the file is cut there, as for a torn record). */
typedef int (*fq_reclog_visit_fn)(void *arg, uint64_t off, const uint8_t *body, uint32_t len);

/* Walk the records from offset from (at most the file's size) to the end,
 * calling visit (may be NULL) for each; cut the file after the last one
 * accepted, and fdatasync it (a process that crashed may have left it in
 * the page cache only). Returns the bytes cut (0: the file was whole) or a
 * negative errno. */
int64_t fq_reclog_scan(struct fq_reclog *l, uint64_t from, fq_reclog_visit_fn visit, void *arg);

/* The record at off: its whole size with *body (valid until the next read)
 * and *len, 0 at the end of what was written, -EBADMSG, or -errno. */
int64_t fq_reclog_read(struct fq_reclog *l, uint64_t off, const uint8_t **body, uint32_t *len);

/* Buffer one record made of the iov pieces (no I/O). 0, -EMSGSIZE (over
 * FQ_RECLOG_MAX_BODY), -ENOSPC (the file would pass its bound: nothing is
 * buffered), -ENOMEM. */
int fq_reclog_append(struct fq_reclog *l, const struct iovec *iov, int iovcnt);
/* Forget the records buffered and not yet written. */
void fq_reclog_discard(struct fq_reclog *l);
/* Write the buffered records to the file (the page cache). On an error
 * nothing of them counts: what may have landed is cut, the buffer dropped;
 * returns -errno. */
int fq_reclog_write(struct fq_reclog *l);
/* Write, then make every record durable (see above). 0 or -errno. */
int fq_reclog_sync(struct fq_reclog *l);

/* Cut the file to size bytes (no more than written); drops the buffer. */
int fq_reclog_truncate(struct fq_reclog *l, uint64_t size);

/* Bytes in the file, buffered ones included; buffered ones alone. */
uint64_t fq_reclog_size(const struct fq_reclog *l);
uint64_t fq_reclog_buffered(const struct fq_reclog *l);
/* The file's descriptor (to fdatasync a dup of it on another thread). */
int fq_reclog_fd(const struct fq_reclog *l);

/* fsync a directory: an entry created, renamed or removed in it survives a
 * crash only once it is synced. 0 or -errno. */
int fq_sync_dir(const char *dir);

#endif /* FQ_COMMON_RECLOG_H */
