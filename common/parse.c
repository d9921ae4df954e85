/* parse: the shared value parsers (see parse.h). */
#include "common/parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int fq_parse_int(const char *text, int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(text, &end, 0);
	if (errno || end == text || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

int fq_parse_uint(const char *text, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (*text == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(text, &end, 0);
	if (errno || end == text || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

int fq_parse_decimal(const char *text, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!isdigit((unsigned char)*text) || strspn(text, "0123456789") != strlen(text))
		return -EINVAL;
	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

int fq_parse_double(const char *text, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(text, &end);
	if (errno || end == text || *end || !isfinite(v))
		return -EINVAL;
	*out = v;
	return 0;
}

int fq_parse_bool(const char *text, bool *out)
{
	static const char *const yes[] = {"yes", "true", "on", "1"}, *const no[] = {"no", "false", "off",
										    "0"};

	for (unsigned i = 0; i < 4; i++) {
		if (strcasecmp(text, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(text, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

int fq_parse_enum(const char *text, const char *const *choices, int *out)
{
	for (int k = 0; choices[k]; k++) {
		if (strcmp(text, choices[k]) == 0) {
			*out = k;
			return 0;
		}
	}
	return -EINVAL;
}

void fq_enum_list(const char *const *choices, const char *last_sep, char *out, size_t outlen)
{
	size_t n = 0;

	if (!outlen)
		return;
	out[0] = '\0';
	for (int k = 0; choices[k] && n < outlen; k++) {
		const char *sep = k == 0 ? "" : choices[k + 1] ? ", " : last_sep;
		int w = snprintf(out + n, outlen - n, "%s%s", sep, choices[k]);

		if (w < 0)
			return;
		n += (size_t)w;
	}
}

/* A non-negative decimal number followed by a unit from `units`. */
struct unit {
	const char *suffix;
	double scale;
};

static int parse_scaled(const char *text, const struct unit *units, uint64_t *out)
{
	char *end;
	double v;

	if (!isdigit((unsigned char)*text) && *text != '.')
		return -EINVAL;
	errno = 0;
	v = strtod(text, &end);
	if (errno || end == text)
		return -EINVAL;
	while (*end == ' ')
		end++;
	for (const struct unit *u = units; u->suffix; u++) {
		if (strcmp(end, u->suffix) == 0) {
			double r = v * u->scale;
			/* NaN fails the first test; 1.8e19 is just under 2^64. */
			if (!(r >= 0) || r >= 1.8e19)
				return -EINVAL;
			*out = (uint64_t)(r + 0.5);
			return 0;
		}
	}
	return -EINVAL;
}

int fq_parse_duration(const char *text, uint64_t *ns)
{
	static const struct unit units[] = {
	    {"", 1e9}, {"s", 1e9}, {"ms", 1e6}, {"us", 1e3}, {"ns", 1}, {"m", 60e9}, {"h", 3600e9}, {NULL, 0},
	};
	return parse_scaled(text, units, ns);
}

int fq_parse_size(const char *text, uint64_t *bytes)
{
	static const struct unit units[] = {
	    {"", 1},
	    {"B", 1},
	    {"K", 1024.0},
	    {"k", 1024.0},
	    {"KiB", 1024.0},
	    {"kiB", 1024.0},
	    {"M", 1048576.0},
	    {"m", 1048576.0},
	    {"MiB", 1048576.0},
	    {"miB", 1048576.0},
	    {"G", 1073741824.0},
	    {"g", 1073741824.0},
	    {"GiB", 1073741824.0},
	    {"giB", 1073741824.0},
	    {"T", 1099511627776.0},
	    {"TiB", 1099511627776.0},
	    {NULL, 0},
	};
	return parse_scaled(text, units, bytes);
}
