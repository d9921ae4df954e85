/*
 * encode: the text forms the db library sends to PostgreSQL: COPY text
 * fields, timestamptz literals, UTF-8 checks. Pure functions on a growable
 * buffer, no I/O, so tests feed them hostile strings directly.
 */
#ifndef FQ_DB_ENCODE_H
#define FQ_DB_ENCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A growable byte buffer; zero-initialise, release with fq_buf_free(). */
struct fq_buf {
	char *p;
	size_t len, cap;
};

void fq_buf_free(struct fq_buf *b);
/* Makes room for `more` bytes; 0 or -ENOMEM. */
int fq_buf_reserve(struct fq_buf *b, size_t more);

/* Length of a timestamptz literal "YYYY-MM-DD HH:MM:SS.uuuuuu+00" plus NUL,
 * with room for a 5-digit year. */
#define FQ_TS_LEN 40

/* ns since the epoch -> "2026-11-22 13:10:00.123456+00" (UTC; the sub-
 * microsecond part is truncated towards the past). Returns out. */
char *fq_ts_format(int64_t ns, char out[FQ_TS_LEN]);

/* Whether s is well-formed UTF-8 (no overlong forms, surrogates or code
 * points above U+10FFFF), which PostgreSQL requires of every text value. */
bool fq_utf8_valid(const char *s);

/*
 * COPY text format (one row per line, fields separated by tabs). Each
 * function appends one field preceded by a tab unless `first`. Strings are
 * escaped (backslash, tab, newline, carriage return), so they are stored
 * byte for byte; NULL is written as \N. 0 or -ENOMEM; on failure the buffer
 * keeps its previous length.
 */
int fq_copy_str(struct fq_buf *b, bool first, const char *s);
int fq_copy_i64(struct fq_buf *b, bool first, int64_t v);
/* v == 0 -> \N: for delays where 0 means "no sample". */
int fq_copy_i64_or_null(struct fq_buf *b, bool first, int64_t v);
int fq_copy_u64(struct fq_buf *b, bool first, uint64_t v);
int fq_copy_f64(struct fq_buf *b, bool first, double v);
int fq_copy_bool(struct fq_buf *b, bool first, bool v);
int fq_copy_ts(struct fq_buf *b, bool first, int64_t ns);
/* Ends the row. */
int fq_copy_eol(struct fq_buf *b);

/*
 * COPY binary format (doc: sql-copy.html, "Binary Format"): a signature
 * header, then per row a field count and per field its length and value in
 * network byte order (-1: NULL), then a -1 trailer. PostgreSQL then skips
 * parsing text: the lane windows, the bulk of the telemetry, go this way.
 * The caller matches each value to its column's type exactly (int8 vs
 * int4), which PostgreSQL checks by length. 0 or -ENOMEM.
 */
#define FQ_BIN_TRAILER_LEN 2
int fq_bin_header(struct fq_buf *b);
int fq_bin_row(struct fq_buf *b, uint16_t nfields);
int fq_bin_i64(struct fq_buf *b, int64_t v);
int fq_bin_i64_or_null(struct fq_buf *b, int64_t v); /* 0 -> NULL */
int fq_bin_i32(struct fq_buf *b, int32_t v);
int fq_bin_f64(struct fq_buf *b, double v); /* float8 */
int fq_bin_bool(struct fq_buf *b, bool v);
int fq_bin_str(struct fq_buf *b, const char *s); /* NULL -> NULL */
/* timestamptz: microseconds since 2000-01-01 UTC, truncated towards the
 * past like fq_ts_format. */
int fq_bin_ts(struct fq_buf *b, int64_t ns);
/* The trailer's bytes (sent after the rows, not buffered). */
extern const char fq_bin_trailer[FQ_BIN_TRAILER_LEN];

#endif /* FQ_DB_ENCODE_H */
