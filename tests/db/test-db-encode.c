/*
 * db/encode without a server: COPY text escaping, timestamptz literals,
 * UTF-8 checks.
 */
#include "db/encode.h"

#include <math.h>

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
