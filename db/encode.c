/*
 * encode: COPY text fields, timestamptz literals and UTF-8 checks.
 * The COPY text format is PostgreSQL's "COPY ... FROM STDIN" default:
 * tab-separated, \N for NULL, backslash escapes (doc: sql-copy.html, "Text
 * Format"). Escaping backslash itself is what makes a hostile "\." or
 * "\N" inside a string land verbatim.
 */
#include "db/encode.h"

#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void fq_buf_free(struct fq_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

int fq_buf_reserve(struct fq_buf *b, size_t more)
{
	size_t cap;
	char *p;

	if (b->cap - b->len >= more)
		return 0;
	if (more > SIZE_MAX / 2 - b->len)
		return -ENOMEM;
	cap = b->cap ? b->cap : 4096;
	while (cap - b->len < more)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

static int buf_put(struct fq_buf *b, const char *s, size_t n)
{
	int rc = fq_buf_reserve(b, n);

	if (rc)
		return rc;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	return 0;
}

/* Two digits of v (0..99) at p. */
static char *put2(char *p, unsigned v)
{
	p[0] = (char)('0' + v / 10);
	p[1] = (char)('0' + v % 10);
	return p + 2;
}

/* Proleptic Gregorian date of a day count since 1970-01-01 (Howard
 * Hinnant's days_from_civil inverse, exact for negative days too): the
 * per-row gmtime_r + snprintf it replaces was a fifth of the ingest CPU. */
static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	unsigned doe = (unsigned)(z - era * 146097);
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	unsigned mp = (5 * doy + 2) / 153;

	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int64_t)yoe + era * 400 + (*m <= 2);
}

char *fq_ts_format(int64_t ns, char out[FQ_TS_LEN])
{
	/* Floor division: -1 ns is 1969-12-31 23:59:59.999999. */
	int64_t us = ns / 1000 - (ns % 1000 < 0);
	int64_t secs = us / 1000000 - (us % 1000000 < 0);
	unsigned frac = (unsigned)(us - secs * 1000000);
	int64_t days = secs / 86400 - (secs % 86400 < 0);
	unsigned sod = (unsigned)(secs - days * 86400);
	int64_t y;
	unsigned m, d;
	char *p = out;

	civil_from_days(days, &y, &m, &d);
	/* int64 ns spans years 1677-2262: always four digits. */
	if (y < 0 || y > 9999) {
		snprintf(out, FQ_TS_LEN, "epoch");
		return out;
	}
	p = put2(p, (unsigned)(y / 100));
	p = put2(p, (unsigned)(y % 100));
	*p++ = '-';
	p = put2(p, m);
	*p++ = '-';
	p = put2(p, d);
	*p++ = ' ';
	p = put2(p, sod / 3600);
	*p++ = ':';
	p = put2(p, sod / 60 % 60);
	*p++ = ':';
	p = put2(p, sod % 60);
	*p++ = '.';
	p = put2(p, frac / 10000);
	p = put2(p, frac / 100 % 100);
	p = put2(p, frac % 100);
	memcpy(p, "+00", 4);
	return out;
}

bool fq_utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		uint32_t cp;
		int n;

		if (p[0] < 0x80) {
			p++;
			continue;
		} else if ((p[0] & 0xe0) == 0xc0) {
			n = 1;
			cp = p[0] & 0x1f;
		} else if ((p[0] & 0xf0) == 0xe0) {
			n = 2;
			cp = p[0] & 0x0f;
		} else if ((p[0] & 0xf8) == 0xf0) {
			n = 3;
			cp = p[0] & 0x07;
		} else {
			return false;
		}
		for (int i = 1; i <= n; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return false; /* also stops at the NUL */
			cp = cp << 6 | (p[i] & 0x3f);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000))
			return false; /* overlong */
		if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
			return false;
		p += n + 1;
	}
	return true;
}

static int sep(struct fq_buf *b, bool first)
{
	return first ? 0 : buf_put(b, "\t", 1);
}

int fq_copy_str(struct fq_buf *b, bool first, const char *s)
{
	size_t n;

	if (!s)
		return fq_copy_i64_or_null(b, first, 0);
	n = strlen(s);
	/* Worst case: a separator and every byte escaped. */
	if (n > SIZE_MAX / 2 - 1 || fq_buf_reserve(b, 2 * n + 1))
		return -ENOMEM;
	sep(b, first);
	for (const char *p = s; *p; p++) {
		char esc = 0;

		switch (*p) {
		case '\\':
			esc = '\\';
			break;
		case '\t':
			esc = 't';
			break;
		case '\n':
			esc = 'n';
			break;
		case '\r':
			esc = 'r';
			break;
		}
		if (esc) {
			b->p[b->len++] = '\\';
			b->p[b->len++] = esc;
		} else {
			b->p[b->len++] = *p;
		}
	}
	return 0;
}

/* Appends the separator and n bytes of s (one reserve for both). */
static int put_field(struct fq_buf *b, bool first, const char *s, size_t n)
{
	int rc = fq_buf_reserve(b, n + 1);

	if (rc)
		return rc;
	if (!first)
		b->p[b->len++] = '\t';
	memcpy(b->p + b->len, s, n);
	b->len += n;
	return 0;
}

/* Decimal digits of v, written backwards ending at end; returns the start.
 * (vsnprintf per field was the largest single cost of a COPY row.) */
static char *u64_digits(char *end, uint64_t v)
{
	do {
		*--end = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return end;
}

int fq_copy_i64(struct fq_buf *b, bool first, int64_t v)
{
	char tmp[24], *end = tmp + sizeof(tmp), *p;

	/* -(v + 1) + 1 avoids overflowing on INT64_MIN. */
	p = u64_digits(end, v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v);
	if (v < 0)
		*--p = '-';
	return put_field(b, first, p, (size_t)(end - p));
}

int fq_copy_i64_or_null(struct fq_buf *b, bool first, int64_t v)
{
	return v ? fq_copy_i64(b, first, v) : put_field(b, first, "\\N", 2);
}

int fq_copy_u64(struct fq_buf *b, bool first, uint64_t v)
{
	char tmp[24], *end = tmp + sizeof(tmp), *p = u64_digits(end, v);

	return put_field(b, first, p, (size_t)(end - p));
}

int fq_copy_f64(struct fq_buf *b, bool first, double v)
{
	char tmp[64];
	int n;

	if (isnan(v))
		return put_field(b, first, "NaN", 3);
	if (isinf(v))
		return v < 0 ? put_field(b, first, "-Infinity", 9) : put_field(b, first, "Infinity", 8);
	n = snprintf(tmp, sizeof(tmp), "%.17g", v);
	return put_field(b, first, tmp, (size_t)n);
}

int fq_copy_bool(struct fq_buf *b, bool first, bool v)
{
	return put_field(b, first, v ? "t" : "f", 1);
}

int fq_copy_ts(struct fq_buf *b, bool first, int64_t ns)
{
	char ts[FQ_TS_LEN];

	fq_ts_format(ns, ts);
	return put_field(b, first, ts, strlen(ts));
}

int fq_copy_eol(struct fq_buf *b)
{
	return buf_put(b, "\n", 1);
}

/* ---- COPY binary ------------------------------------------------------- */

const char fq_bin_trailer[FQ_BIN_TRAILER_LEN] = {'\xff', '\xff'};

int fq_bin_header(struct fq_buf *b)
{
	/* signature, flags (no OIDs), header extension length */
	static const char h[19] = "PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";

	return buf_put(b, h, sizeof(h));
}

int fq_bin_row(struct fq_buf *b, uint16_t nfields)
{
	uint16_t v = htobe16(nfields);

	return buf_put(b, (const char *)&v, 2);
}

/* A field: its length, then len bytes of p. */
static int bin_field(struct fq_buf *b, const void *p, int32_t len)
{
	uint32_t l = htobe32((uint32_t)len);
	int rc = fq_buf_reserve(b, 4 + (size_t)(len > 0 ? len : 0));

	if (rc)
		return rc;
	memcpy(b->p + b->len, &l, 4);
	if (len > 0)
		memcpy(b->p + b->len + 4, p, (size_t)len);
	b->len += 4 + (size_t)(len > 0 ? len : 0);
	return 0;
}

int fq_bin_i64(struct fq_buf *b, int64_t v)
{
	uint64_t be = htobe64((uint64_t)v);

	return bin_field(b, &be, 8);
}

int fq_bin_f64(struct fq_buf *b, double v)
{
	uint64_t u;

	memcpy(&u, &v, 8);
	u = htobe64(u);
	return bin_field(b, &u, 8);
}

int fq_bin_i64_or_null(struct fq_buf *b, int64_t v)
{
	return v ? fq_bin_i64(b, v) : bin_field(b, NULL, -1);
}

int fq_bin_i32(struct fq_buf *b, int32_t v)
{
	uint32_t be = htobe32((uint32_t)v);

	return bin_field(b, &be, 4);
}

int fq_bin_bool(struct fq_buf *b, bool v)
{
	char c = v ? 1 : 0;

	return bin_field(b, &c, 1);
}

int fq_bin_str(struct fq_buf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n > INT32_MAX)
		return -ENOMEM;
	return s ? bin_field(b, s, (int32_t)n) : bin_field(b, NULL, -1);
}

/* 2000-01-01 00:00:00 UTC, PostgreSQL's epoch, in us since 1970. */
#define PG_EPOCH_US 946684800000000LL

int fq_bin_ts(struct fq_buf *b, int64_t ns)
{
	int64_t us = ns / 1000 - (ns % 1000 < 0);

	return fq_bin_i64(b, us - PG_EPOCH_US);
}
