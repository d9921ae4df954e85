/*
 * encode: COPY text fields, timestamptz literals and UTF-8 checks.
 * The COPY text format is PostgreSQL's "COPY ... FROM STDIN" default:
 * tab-separated, \N for NULL, backslash escapes (doc: sql-copy.html, "Text
 * Format"). Escaping backslash itself is what makes a hostile "\." or
 * "\N" inside a string land verbatim.
 */
#include "db/encode.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
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

char *fq_ts_format(int64_t ns, char out[FQ_TS_LEN])
{
	/* Floor division: -1 ns is 1969-12-31 23:59:59.999999. */
	int64_t us = ns / 1000 - (ns % 1000 < 0);
	int64_t secs = us / 1000000 - (us % 1000000 < 0);
	int64_t frac = us - secs * 1000000;
	time_t t = (time_t)secs;
	struct tm tm;

	int n = -1;

	/* int64 ns spans years 1677-2262: four-digit years, never truncated;
	 * the check is for the compiler, which cannot know that. */
	if (gmtime_r(&t, &tm))
		n = snprintf(out, FQ_TS_LEN, "%04d-%02d-%02d %02d:%02d:%02d.%06d+00", tm.tm_year + 1900,
			     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)frac);
	if (n < 0 || n >= FQ_TS_LEN)
		snprintf(out, FQ_TS_LEN, "epoch");
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

static int put_num(struct fq_buf *b, bool first, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int put_num(struct fq_buf *b, bool first, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;
	int n, rc;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	rc = fq_buf_reserve(b, (size_t)n + 1);
	if (rc)
		return rc;
	sep(b, first);
	return buf_put(b, tmp, (size_t)n);
}

int fq_copy_i64(struct fq_buf *b, bool first, int64_t v)
{
	return put_num(b, first, "%" PRId64, v);
}

int fq_copy_i64_or_null(struct fq_buf *b, bool first, int64_t v)
{
	return v ? fq_copy_i64(b, first, v) : put_num(b, first, "\\N");
}

int fq_copy_u64(struct fq_buf *b, bool first, uint64_t v)
{
	return put_num(b, first, "%" PRIu64, v);
}

int fq_copy_f64(struct fq_buf *b, bool first, double v)
{
	if (isnan(v))
		return put_num(b, first, "NaN");
	if (isinf(v))
		return put_num(b, first, "%sInfinity", v < 0 ? "-" : "");
	return put_num(b, first, "%.17g", v);
}

int fq_copy_bool(struct fq_buf *b, bool first, bool v)
{
	return put_num(b, first, "%c", v ? 't' : 'f');
}

int fq_copy_ts(struct fq_buf *b, bool first, int64_t ns)
{
	char ts[FQ_TS_LEN];

	return put_num(b, first, "%s", fq_ts_format(ns, ts));
}

int fq_copy_eol(struct fq_buf *b)
{
	return buf_put(b, "\n", 1);
}
