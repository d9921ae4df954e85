/*
 * api_param: the JSON API's request parsing (controller/api_param.h).
 */
#include "controller/api_param.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Slurm's special step ids (slurm.h, 22.05). */
static const struct {
	const char *name;
	uint32_t id;
} special_steps[] = {
    {"interactive", 0xfffffffau},
    {"batch", 0xfffffffbu},
    {"extern", 0xfffffffcu},
};

/* ---- the query string -------------------------------------------------- */

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Percent-decodes [s, s+len) into a new string ('+' is a space). NULL on a
 * bad or truncated escape, an encoded NUL, or more than FQ_API_MAX_VALUE_LEN bytes. */
static char *url_decode(const char *s, size_t len)
{
	char *out, *o;

	if (len > 3 * FQ_API_MAX_VALUE_LEN)
		return NULL;
	out = o = malloc(len + 1);
	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		int hi, lo;

		if (s[i] != '%') {
			*o++ = s[i] == '+' ? ' ' : s[i];
			continue;
		}
		if (len - i < 3)
			goto bad;
		hi = hexval((unsigned char)s[i + 1]);
		lo = hexval((unsigned char)s[i + 2]);
		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
			goto bad;
		*o++ = (char)(hi * 16 + lo);
		i += 2;
	}
	*o = '\0';
	if ((size_t)(o - out) <= FQ_API_MAX_VALUE_LEN)
		return out;
bad:
	free(out);
	return NULL;
}

void fq_api_params_free(struct fq_api_params *r)
{
	for (int i = 0; i < r->n; i++) {
		free(r->name[i]);
		free(r->value[i]);
	}
	r->n = 0;
}

/* Adds (name, value), both taken over; NULL: one that could not be
 * decoded. 0, or -EINVAL with r->err. */
static int add_decoded(struct fq_api_params *r, char *name, char *value)
{
	if (r->n == FQ_API_MAX_PARAMS) {
		free(name);
		free(value);
		snprintf(r->err, sizeof(r->err), "too many query parameters (at most %d)", FQ_API_MAX_PARAMS);
		return -EINVAL;
	}
	r->name[r->n] = name;
	r->value[r->n] = value;
	r->n++;
	if (!name || !value) {
		snprintf(r->err, sizeof(r->err),
			 "malformed query parameter (bad %%-escape, encoded NUL, or longer than %d bytes)",
			 FQ_API_MAX_VALUE_LEN);
		return -EINVAL;
	}
	for (int i = 0; i < r->n - 1; i++)
		if (!strcmp(r->name[i], name)) {
			snprintf(r->err, sizeof(r->err), "query parameter '%.64s' given twice", r->name[i]);
			return -EINVAL;
		}
	return 0;
}

int fq_api_params_parse(struct fq_api_params *r, const char *query)
{
	const char *p = query ? query : "";

	while (*p) {
		const char *amp = strchr(p, '&'), *end = amp ? amp : p + strlen(p), *eq;

		if (end == p) { /* "a=1&&b=2" */
			p++;
			continue;
		}
		eq = memchr(p, '=', (size_t)(end - p));
		if (add_decoded(r, url_decode(p, (size_t)((eq ? eq : end) - p)),
				url_decode(eq ? eq + 1 : end, eq ? (size_t)(end - eq - 1) : 0)))
			return -EINVAL;
		p = amp ? amp + 1 : end;
	}
	return 0;
}

static char *copy_value(const char *s)
{
	return strlen(s) <= FQ_API_MAX_VALUE_LEN ? strdup(s) : NULL;
}

int fq_api_params_add(struct fq_api_params *r, const char *name, const char *value)
{
	if (!*name && !value)
		return 0;
	return add_decoded(r, copy_value(name), copy_value(value ? value : ""));
}

/* -EINVAL (and r->err) if r holds a parameter not in `known` ("a, b"). */
int fq_api_params_only(struct fq_api_params *r, const char *known)
{
	for (int i = 0; i < r->n; i++) {
		const char *k = known;
		size_t len = strlen(r->name[i]);
		bool found = false;

		while (*k && !found) {
			size_t kl = strcspn(k, ",");

			found = kl == len && !strncmp(k, r->name[i], len);
			k += kl;
			k += strspn(k, ", ");
		}
		if (!found) {
			snprintf(r->err, sizeof(r->err), "unknown query parameter '%.64s' (%s%s)", r->name[i],
				 *known ? "known: " : "this endpoint takes none", known);
			return -EINVAL;
		}
	}
	return 0;
}

const char *fq_api_param(const struct fq_api_params *r, const char *name)
{
	for (int i = 0; i < r->n; i++)
		if (!strcmp(r->name[i], name))
			return r->value[i];
	return NULL;
}

/* A decimal integer in [0, max], digits only (no sign, no spaces). */
bool fq_api_parse_uint(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s || strlen(s) > 20)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (v > max)
		return false;
	*out = v;
	return true;
}

/* The parameter `name` as an integer in [min, max], def if absent. */
int fq_api_param_uint(struct fq_api_params *r, const char *name, uint64_t def, uint64_t min, uint64_t max,
		      uint64_t *out)
{
	const char *v = fq_api_param(r, name);

	*out = def;
	if (!v)
		return 0;
	if (!fq_api_parse_uint(v, max, out) || *out < min) {
		snprintf(r->err, sizeof(r->err),
			 "%s must be an integer from %" PRIu64 " to %" PRIu64 ", not '%.64s'", name, min, max,
			 v);
		return -EINVAL;
	}
	return 0;
}

int fq_api_param_bool(struct fq_api_params *r, const char *name, bool *out)
{
	const char *v = fq_api_param(r, name);

	*out = false;
	if (!v)
		return 0;
	if (!strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "yes")) {
		*out = true;
	} else if (strcmp(v, "0") && strcmp(v, "false") && strcmp(v, "no")) {
		snprintf(r->err, sizeof(r->err), "%s must be 1 or 0 (true/false), not '%.64s'", name, v);
		return -EINVAL;
	}
	return 0;
}

/* n digits at s -> *v; false if any is not a digit. */
static bool digits(const char *s, int n, int *v)
{
	*v = 0;
	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		*v = *v * 10 + (s[i] - '0');
	}
	return true;
}

/*
 * Strict RFC 3339: YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM), 't'/'z'
 * or a space for 'T' accepted as the RFC allows; years 1970-9999. Every
 * field is range-checked (Feb 30 is refused, not normalised).
 */
bool fq_api_parse_rfc3339(const char *s, int64_t *ns)
{
	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
	int64_t frac = 0, scale = 100000000, days;
	const char *p;
	struct tm tm = {0};

	if (strlen(s) < 20 || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) || s[7] != '-' ||
	    !digits(s + 8, 2, &d) || !strchr("Tt ", s[10]) || !digits(s + 11, 2, &h) || s[13] != ':' ||
	    !digits(s + 14, 2, &mi) || s[16] != ':' || !digits(s + 17, 2, &sec))
		return false;
	p = s + 19;
	if (*p == '.') {
		if (p[1] < '0' || p[1] > '9')
			return false;
		for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
			if (scale)
				frac += (*p - '0') * scale;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		sign = *p == '+' ? 1 : -1;
		if (!digits(p + 1, 2, &oh) || p[3] != ':' || !digits(p + 4, 2, &om))
			return false;
		p += 6;
	} else {
		return false;
	}
	if (*p || y < 1970 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 ||
	    sec > 60 || oh > 23 || om > 59)
		return false;
	if (mo == 2 && d == 29 && !((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
		return false;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	days = (int64_t)timegm(&tm) / 86400;
	*ns =
	    ((days * 86400 + h * 3600 + mi * 60 + sec) - (int64_t)sign * (oh * 3600 + om * 60)) * 1000000000 +
	    frac;
	return true;
}

/* "JOB" or "JOB.STEP" (STEP a number or batch/extern/interactive). */
bool fq_api_parse_job_step(const char *s, uint64_t *job, bool *has_step, uint64_t *step)
{
	const char *dot = strchr(s, '.');
	char jobpart[24];

	*has_step = dot != NULL;
	if ((dot ? (size_t)(dot - s) : strlen(s)) >= sizeof(jobpart))
		return false;
	snprintf(jobpart, sizeof(jobpart), "%.*s", (int)(dot ? dot - s : (ptrdiff_t)strlen(s)), s);
	if (!fq_api_parse_uint(jobpart, UINT32_MAX, job))
		return false;
	if (!dot)
		return true;
	for (size_t i = 0; i < sizeof(special_steps) / sizeof(special_steps[0]); i++)
		if (!strcmp(dot + 1, special_steps[i].name)) {
			*step = special_steps[i].id;
			return true;
		}
	return fq_api_parse_uint(dot + 1, UINT32_MAX, step);
}
