/*
 * clock_page: the node agent's clock model, published in a small shared
 * file that job processes map read-only.
 *
 * The agent (writer) fits the global timeline against its local clock,
 * CLOCK_MONOTONIC_RAW, and publishes the model; the NCCL plugin (reader)
 * turns its own raw clock reads into global time without a syscall or a
 * message. Both sit on one host, so the layout is native-endian.
 *
 * Layout (one 4096-byte file, all fields 8-byte aligned):
 *   off  0  u32 magic          FQ_CLOCK_PAGE_MAGIC ("FQCK")
 *   off  4  u32 version        FQ_CLOCK_PAGE_VERSION (1)
 *   off  8  u64 seq            seqlock: odd while the writer updates
 *   off 16  i32 clock_id       CLOCK_MONOTONIC_RAW
 *   off 20  u32 flags          reserved, 0
 *   off 24  i64 ref_local_ns   reference point on the local clock
 *   off 32  i64 offset_ns      global - local at ref_local_ns
 *   off 40  i64 drift_ppb      d(global - local)/d(local), parts per 10^9
 *   off 48  i64 error_bound_ns bound on |global estimate - truth|
 *   off 56  i64 valid_until_ns local clock time after which the model is stale
 *   off 64  u64 updates        publications so far
 * global(t) = t + offset_ns + drift_ppb * (t - ref_local_ns) / 10^9.
 *
 * Seqlock: the writer makes seq odd, stores the fields, makes seq even
 * (release); a reader reads seq, the fields, seq again, and retries if seq
 * was odd or changed. The single writer never waits for readers.
 */
#ifndef FQ_COMMON_CLOCK_PAGE_H
#define FQ_COMMON_CLOCK_PAGE_H

#include <stdint.h>

#define FQ_CLOCK_PAGE_MAGIC   0x4b435146u /* "FQCK" */
#define FQ_CLOCK_PAGE_VERSION 1u
#define FQ_CLOCK_PAGE_SIZE    4096

/* The published model (plain data). */
struct fq_clock_model {
	int32_t clock_id;
	int64_t ref_local_ns;
	int64_t offset_ns;
	int64_t drift_ppb;
	int64_t error_bound_ns;
	int64_t valid_until_ns;
	uint64_t updates;
};

/* Pure: the global time of local time t under model m. */
int64_t fq_clock_model_global(const struct fq_clock_model *m, int64_t local_ns);

struct fq_clock_page_writer;
struct fq_clock_page_reader;

/* Create (or truncate) the page at path, mode 0644, and map it read-write.
 * Returns 0 and *out, or a negative errno. */
int fq_clock_page_writer_open(const char *path, struct fq_clock_page_writer **out);
/* Publish a model (single writer). */
void fq_clock_page_publish(struct fq_clock_page_writer *w, const struct fq_clock_model *m);
void fq_clock_page_writer_close(struct fq_clock_page_writer *w);

/* Map an existing page read-only. Returns 0, -ENOENT (no agent), -EPROTO
 * (wrong size, magic or version), or another negative errno. */
int fq_clock_page_reader_open(const char *path, struct fq_clock_page_reader **out);
/* A consistent snapshot. Returns 0; -EAGAIN if the writer was busy for
 * every one of a bounded number of tries; -ESTALE if the snapshot's
 * valid_until_ns is before now_local_ns; -EPROTO if the magic, version or
 * clock id changed under us. *m is filled in all but -EAGAIN/-EPROTO. */
int fq_clock_page_read(struct fq_clock_page_reader *r, int64_t now_local_ns, struct fq_clock_model *m);
void fq_clock_page_reader_close(struct fq_clock_page_reader *r);

#endif /* FQ_COMMON_CLOCK_PAGE_H */
