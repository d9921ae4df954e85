/*
 * test-api-param: the JSON API's request parsing (controller/api_param.h)
 * without a database: a raw query string and the same parameters handed
 * over decoded one by one (as the HTTP server does from libmicrohttpd) give
 * the same parameters and the same refusals; the values' parsers; and the
 * API's answer to parsed parameters (fq_api_get_params, no database: 400,
 * 404 or 503).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "controller/api.h"
#include "controller/api_param.h"
#include "tests/unit/tap.h"

static void test_parse_and_add(void)
{
	struct fq_api_params raw = {0}, dec = {0};

	is_int(fq_api_params_parse(&raw, "a=1&&b=%20x+y%2B&c"), 0, "a raw query parses");
	is_int(raw.n, 3, "... three parameters (the empty segment skipped)");
	is_str(fq_api_param(&raw, "b"), " x y+", "... percent-escapes and '+' decoded");
	is_str(fq_api_param(&raw, "c"), "", "... a name without '=' has the value \"\"");
	ok(!fq_api_param(&raw, "d"), "... an absent one is NULL");
	is_int(fq_api_params_add(&dec, "a", "1"), 0, "decoded parameters are added");
	fq_api_params_add(&dec, "", NULL);
	fq_api_params_add(&dec, "b", " x y+");
	fq_api_params_add(&dec, "c", NULL);
	is_int(dec.n, 3, "... the same three (an empty name without a value skipped)");
	is_str(fq_api_param(&dec, "b"), fq_api_param(&raw, "b"), "... with the same values");
	is_str(fq_api_param(&dec, "c"), "", "... a name without a value has the value \"\"");
	is_str(dec.err, "", "... and no error");
	fq_api_params_free(&raw);
	fq_api_params_free(&dec);
}

static void test_refusals(void)
{
	char big[FQ_API_MAX_VALUE_LEN + 2];
	struct fq_api_params r = {0};

	is_int(fq_api_params_parse(&r, "limit=1&limit=2"), -EINVAL, "raw: a parameter twice is refused");
	ok(strstr(r.err, "query parameter 'limit' given twice") != NULL, "... saying so");
	fq_api_params_free(&r);
	r = (struct fq_api_params){0};
	fq_api_params_add(&r, "limit", "1");
	is_int(fq_api_params_add(&r, "limit", "2"), -EINVAL, "decoded: a parameter twice is refused");
	ok(strstr(r.err, "given twice") != NULL, "... saying so");
	fq_api_params_free(&r);

	r = (struct fq_api_params){0};
	is_int(fq_api_params_parse(&r, "node=a%00b"), -EINVAL, "raw: an encoded NUL is refused");
	fq_api_params_free(&r);
	r = (struct fq_api_params){0};
	is_int(fq_api_params_parse(&r, "since=%zz"), -EINVAL, "raw: a bad escape is refused");
	ok(strstr(r.err, "malformed query parameter") != NULL, "... as malformed");
	fq_api_params_free(&r);

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	r = (struct fq_api_params){0};
	is_int(fq_api_params_add(&r, "node", big), -EINVAL, "decoded: a value over 256 bytes is refused");
	ok(strstr(r.err, "longer than 256 bytes") != NULL, "... saying so");
	fq_api_params_free(&r);
	big[FQ_API_MAX_VALUE_LEN] = '\0';
	r = (struct fq_api_params){0};
	is_int(fq_api_params_add(&r, "node", big), 0, "... one of 256 bytes is not");
	fq_api_params_free(&r);

	r = (struct fq_api_params){0};
	for (int i = 0; i < FQ_API_MAX_PARAMS; i++) {
		char name[8];

		snprintf(name, sizeof(name), "p%d", i);
		fq_api_params_add(&r, name, "1");
	}
	is_int(fq_api_params_add(&r, "one_more", "1"), -EINVAL, "decoded: a ninth parameter is refused");
	ok(strstr(r.err, "too many query parameters (at most 8)") != NULL, "... saying so");
	fq_api_params_free(&r);
	r = (struct fq_api_params){0};
	is_int(fq_api_params_parse(&r, "a=1&b=2&c=3&d=4&e=5&f=6&g=7&h=8&i=9"), -EINVAL,
	       "raw: a ninth parameter is refused");
	fq_api_params_free(&r);
}

static void test_values(void)
{
	struct fq_api_params r = {0};
	uint64_t v, job, step;
	bool b, has_step;
	int64_t ns;

	fq_api_params_parse(&r, "limit=50&open=yes&lanes=x");
	is_int(fq_api_params_only(&r, "limit, open, lanes"), 0, "known parameters pass");
	is_int(fq_api_params_only(&r, "limit, open"), -EINVAL, "an unknown one is refused");
	ok(strstr(r.err, "unknown query parameter 'lanes' (known: limit, open)") != NULL, "... naming it");
	is_int(fq_api_param_uint(&r, "limit", 20, 1, 100, &v), 0, "an integer in range");
	is_int((int)v, 50, "... its value");
	is_int(fq_api_param_uint(&r, "limit", 20, 1, 10, &v), -EINVAL, "out of range: refused");
	is_int(fq_api_param_uint(&r, "missing", 20, 1, 10, &v), 0, "absent: the default");
	is_int((int)v, 20, "... 20");
	is_int(fq_api_param_bool(&r, "open", &b), 0, "a boolean");
	ok(b, "... yes is true");
	is_int(fq_api_param_bool(&r, "lanes", &b), -EINVAL, "x is no boolean");
	fq_api_params_free(&r);

	ok(fq_api_parse_rfc3339("2020-01-01T00:00:00Z", &ns) && ns == 1577836800000000000LL,
	   "RFC 3339 in UTC");
	ok(fq_api_parse_rfc3339("2020-01-01t02:00:00.5+02:00", &ns) && ns == 1577836800500000000LL,
	   "... with a fraction and an offset");
	ok(!fq_api_parse_rfc3339("2021-02-29T00:00:00Z", &ns), "Feb 29 of a common year is refused");
	ok(!fq_api_parse_rfc3339("2020-01-01T00:00:00", &ns), "no zone: refused");
	ok(fq_api_parse_job_step("42", &job, &has_step, &step) && job == 42 && !has_step, "JOB");
	ok(fq_api_parse_job_step("42.batch", &job, &has_step, &step) && has_step && step == 0xfffffffbu,
	   "JOB.batch");
	ok(!fq_api_parse_job_step("4294967296", &job, &has_step, &step), "a job id past 32 bits is refused");
	ok(fq_api_parse_uint("18446744073709551615", UINT64_MAX, &v) && v == UINT64_MAX,
	   "the largest uint64");
	ok(!fq_api_parse_uint("18446744073709551616", UINT64_MAX, &v), "... one more overflows");
}

static void test_answers(void)
{
	struct fq_api_params r = {0};
	char *body = NULL;

	fq_api_params_add(&r, "limit", "1");
	fq_api_params_add(&r, "limit", "2");
	is_int(fq_api_get_params(NULL, "/api/v1/events", &r, &body), 400, "parameters refused: 400");
	ok(body && strstr(body, "given twice"), "... with the reason");
	free(body);
	fq_api_params_free(&r);
	r = (struct fq_api_params){0};
	fq_api_params_add(&r, "limit", "1");
	is_int(fq_api_get_params(NULL, "/api/v1/events", &r, &body), 503, "parsed, no database: 503");
	free(body);
	is_int(fq_api_get_params(NULL, "/api/v1/nope", &r, &body), 404, "an unknown path: 404");
	free(body);
	fq_api_params_free(&r);
}

int main(void)
{
	test_parse_and_add();
	test_refusals();
	test_values();
	test_answers();
	return done_testing();
}
