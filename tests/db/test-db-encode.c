/*
 * db/encode without a server: COPY text escaping, timestamptz literals,
 * UTF-8 checks.
 */
#include "db/encode.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/unit/tap.h"

/* The buffer as a C string (tests only append text). */
static const char *str(struct fq_buf *b)
{
	fq_buf_reserve(b, 1);
	b->p[b->len] = '\0';
	return b->p;
}

static void test_copy_fields(void)
{
	struct fq_buf b = {0};

	fq_copy_str(&b, true, "plain");
	fq_copy_str(&b, false, "tab\there");
	fq_copy_str(&b, false, "line\nbreak\r");
	fq_copy_str(&b, false, "back\\slash \\N \\.");
	fq_copy_str(&b, false, "'); drop table x; --");
	fq_copy_str(&b, false, NULL);
	fq_copy_eol(&b);
	is_str(str(&b),
	       "plain\ttab\\there\tline\\nbreak\\r\tback\\\\slash \\\\N \\\\.\t'); drop table x; --\t\\N\n",
	       "strings escaped for COPY text format, NULL as \\N");

	b.len = 0;
	fq_copy_i64(&b, true, INT64_MIN);
	fq_copy_u64(&b, false, UINT64_MAX);
	fq_copy_i64_or_null(&b, false, 0);
	fq_copy_i64_or_null(&b, false, -5);
	fq_copy_bool(&b, false, true);
	fq_copy_bool(&b, false, false);
	fq_copy_f64(&b, false, NAN);
	fq_copy_f64(&b, false, -INFINITY);
	fq_copy_f64(&b, false, 0.1);
	is_str(
	    str(&b),
	    "-9223372036854775808\t18446744073709551615\t\\N\t-5\tt\tf\tNaN\t-Infinity\t0.10000000000000001",
	    "numbers, booleans, NULL for a zero delay, non-finite floats");
	fq_buf_free(&b);
}

static void test_timestamps(void)
{
	char ts[FQ_TS_LEN];

	is_str(fq_ts_format(0, ts), "1970-01-01 00:00:00.000000+00", "epoch");
	is_str(fq_ts_format(1795784400123456789LL, ts), "2026-11-27 13:00:00.123456+00",
	       "ns truncated to microseconds, UTC");
	is_str(fq_ts_format(-1, ts), "1969-12-31 23:59:59.999999+00",
	       "before the epoch: floor, not towards zero");
	is_str(fq_ts_format(-1000000001LL, ts), "1969-12-31 23:59:58.999999+00", "a second and a ns before");
	is_str(fq_ts_format(INT64_MIN, ts), "1677-09-21 00:12:43.145224+00", "the earliest int64 ns");
	is_str(fq_ts_format(INT64_MAX, ts), "2262-04-11 23:47:16.854775+00", "the latest int64 ns");
	is_str(fq_ts_format(951782400000000000LL, ts), "2000-02-29 00:00:00.000000+00", "leap day 2000");

	/* The hand-written calendar against libc's over the whole int64 range. */
	{
		uint64_t x = 88172645463325252ull;
		int bad = 0;
		for (int i = 0; i < 200000; i++) {
			char want[64];
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			int64_t ns = (int64_t)x;
			int64_t us = ns / 1000 - (ns % 1000 < 0);
			int64_t secs = us / 1000000 - (us % 1000000 < 0);
			time_t t = (time_t)secs;
			struct tm tm;
			gmtime_r(&t, &tm);
			snprintf(want, sizeof(want), "%04d-%02d-%02d %02d:%02d:%02d.%06d+00",
				 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
				 tm.tm_sec, (int)(us - secs * 1000000));
			if (strcmp(fq_ts_format(ns, ts), want) && bad++ < 3)
				diag("%" PRId64 ": %s, libc says %s", ns, ts, want);
		}
		ok(bad == 0, "200000 random instants formatted as gmtime_r does (%d differ)", bad);
	}
}

static void test_utf8(void)
{
	ok(fq_utf8_valid("ascii"), "ASCII");
	ok(fq_utf8_valid("r\xc3\xa9seau \xe2\x86\x92 \xf0\x9f\x98\x80"), "2-, 3- and 4-byte sequences");
	ok(!fq_utf8_valid("\xff"), "0xff");
	ok(!fq_utf8_valid("\xc3"), "truncated sequence");
	ok(!fq_utf8_valid("\xc0\xaf"), "overlong '/'");
	ok(!fq_utf8_valid("\xed\xa0\x80"), "UTF-16 surrogate");
	ok(!fq_utf8_valid("\xf4\x90\x80\x80"), "above U+10FFFF");
}

int main(void)
{
	test_copy_fields();
	test_timestamps();
	test_utf8();
	return done_testing();
}
