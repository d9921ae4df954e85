/*
 * spool: the controller's on-disk queue of accepted frames, used while
 * PostgreSQL is unreachable. A record written and synced here is durable:
 * the agent that sent it may be acknowledged. Records are replayed in the
 * order they were written once the database is back.
 *
 * One append-only file (DIR/spool.dat), a record log (common/reclog.h: a
 * record is a frame's bytes, checksummed), and DIR/spool.pos, the offset
 * up to which records were replayed and committed. When everything is
 * replayed both are truncated to zero. A torn record at the end (a crash
 * while appending, never synced, never acked) is cut off when the spool is
 * opened. The file's size is bounded by max_bytes. A sync after the open
 * created spool.dat also syncs DIR, so the file's name survives a crash.
 */
#ifndef FQ_CONTROLLER_SPOOL_H
#define FQ_CONTROLLER_SPOOL_H

#include <stddef.h>
#include <stdint.h>

struct fq_spool;

/* Opens (creating DIR with mode 0700 if missing) and checks the spool.
 * Returns 0 and *out, or a negative errno (err names the file). */
int fq_spool_open(const char *dir, uint64_t max_bytes, struct fq_spool **out, char *err, size_t errlen);
void fq_spool_close(struct fq_spool *s);

/* Appends a record to the write buffer (no I/O). -ENOSPC if the spool
 * would exceed max_bytes (nothing appended), -ENOMEM. */
int fq_spool_append(struct fq_spool *s, const void *body, size_t len);
/* Forgets the records appended since the last sync. */
void fq_spool_discard(struct fq_spool *s);
/* Writes the buffer and fdatasync()s: every appended record is durable on 0. */
int fq_spool_sync(struct fq_spool *s);

/* Replay cursor: fq_spool_next gives the record after the cursor (1, with
 * *body valid until the next call), 0 at the end, or a negative errno.
 * fq_spool_commit records the cursor as replayed (durably); fq_spool_rewind
 * moves the cursor back to the last commit. */
int fq_spool_next(struct fq_spool *s, const uint8_t **body, size_t *len);
int fq_spool_commit(struct fq_spool *s);
void fq_spool_rewind(struct fq_spool *s);

/* Bytes written but not yet committed as replayed (0: empty), and the
 * file's size. */
uint64_t fq_spool_pending_bytes(const struct fq_spool *s);
uint64_t fq_spool_file_bytes(const struct fq_spool *s);

#endif /* FQ_CONTROLLER_SPOOL_H */
