#include "common/config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FQ_CFG_MAX_LINE 4096

static const char *const known_namespaces[] = FQ_CFG_NAMESPACES;

static void seterr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static const char *type_name(enum fq_cfg_type t)
{
	static const char *const names[] = {"integer", "unsigned", "number", "boolean",
					    "string",  "duration", "size",   "choice"};
	return names[t];
}

static bool bounded(const struct fq_cfg_option *o)
{
	return o->min != o->max;
}

/* Parse `text` for option `o` of namespace `ns` and store it into cfg. */
static int set_value(const char *ns, const struct fq_cfg_option *o, void *cfg, const char *text, char *err,
		     size_t errlen)
{
	char *field = (char *)cfg + o->offset;
	double num = 0, dbl = 0;
	int64_t i64 = 0;
	uint64_t u64 = 0;
	bool b = false;
	int rc = 0;

	switch (o->type) {
	case FQ_CFG_INT:
		rc = fq_parse_int(text, &i64);
		num = (double)i64;
		break;
	case FQ_CFG_UINT:
		rc = fq_parse_uint(text, &u64);
		num = (double)u64;
		break;
	case FQ_CFG_DURATION:
		rc = fq_parse_duration(text, &u64);
		num = (double)u64;
		break;
	case FQ_CFG_SIZE:
		rc = fq_parse_size(text, &u64);
		num = (double)u64;
		break;
	case FQ_CFG_DOUBLE:
		rc = fq_parse_double(text, &dbl);
		num = dbl;
		break;
	case FQ_CFG_BOOL:
		rc = fq_parse_bool(text, &b);
		break;
	case FQ_CFG_STRING:
		break;
	case FQ_CFG_ENUM:
		if (fq_parse_enum(text, o->choices, (int *)field) == 0)
			return 0;
		{
			char list[256];

			fq_enum_list(o->choices, ", ", list, sizeof(list));
			seterr(err, errlen, "%s.%s: '%s' is not one of: %s", ns, o->name, text, list);
		}
		return -EINVAL;
	}
	if (rc < 0) {
		seterr(err, errlen, "%s.%s: '%s' is not a valid %s", ns, o->name, text, type_name(o->type));
		return -EINVAL;
	}
	if (bounded(o) && (num < o->min || num > o->max)) {
		seterr(err, errlen, "%s.%s: %s is out of range [%.15g, %.15g]%s", ns, o->name, text, o->min,
		       o->max,
		       o->type == FQ_CFG_DURATION ? " ns"
		       : o->type == FQ_CFG_SIZE   ? " bytes"
						  : "");
		return -EINVAL;
	}
	switch (o->type) {
	case FQ_CFG_INT:
		*(int64_t *)field = i64;
		break;
	case FQ_CFG_UINT:
	case FQ_CFG_DURATION:
	case FQ_CFG_SIZE:
		*(uint64_t *)field = u64;
		break;
	case FQ_CFG_DOUBLE:
		*(double *)field = dbl;
		break;
	case FQ_CFG_BOOL:
		*(bool *)field = b;
		break;
	case FQ_CFG_STRING: {
		char *copy = strdup(text);
		if (!copy) {
			seterr(err, errlen, "%s.%s: out of memory", ns, o->name);
			return -ENOMEM;
		}
		free(*(char **)field);
		*(char **)field = copy;
		break;
	}
	case FQ_CFG_ENUM:
		break;
	}
	return 0;
}

int fq_cfg_defaults(const struct fq_cfg_schema *s, void *cfg, char *err, size_t errlen)
{
	for (const struct fq_cfg_option *o = s->options; o->name; o++) {
		char *field = (char *)cfg + o->offset;
		int rc;

		if (!o->def) {
			if (o->type == FQ_CFG_STRING) {
				free(*(char **)field);
				*(char **)field = NULL;
			}
			continue;
		}
		rc = set_value(s->ns, o, cfg, o->def, err, errlen);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static const struct fq_cfg_option *find_option(const struct fq_cfg_schema *s, const char *name)
{
	for (const struct fq_cfg_option *o = s->options; o->name; o++)
		if (strcmp(o->name, name) == 0)
			return o;
	return NULL;
}

static bool known_namespace(const char *ns, size_t len)
{
	for (const char *const *k = known_namespaces; *k; k++)
		if (strlen(*k) == len && strncmp(*k, ns, len) == 0)
			return true;
	return false;
}

/* Resolve "ns.name" against the schema. Returns the option, or NULL with
 * *ignored set when the key belongs to another known namespace, or NULL with
 * err filled when the key is wrong. */
static const struct fq_cfg_option *resolve_key(const struct fq_cfg_schema *s, const char *key, bool *ignored,
					       char *err, size_t errlen)
{
	const char *dot = strchr(key, '.');
	const struct fq_cfg_option *o;

	*ignored = false;
	if (!dot) {
		seterr(err, errlen, "'%s' has no namespace (write %s.%s)", key, s->ns, key);
		return NULL;
	}
	if (!known_namespace(key, (size_t)(dot - key))) {
		seterr(err, errlen, "unknown namespace in '%s'", key);
		return NULL;
	}
	if (strlen(s->ns) != (size_t)(dot - key) || strncmp(s->ns, key, (size_t)(dot - key)) != 0) {
		*ignored = true;
		return NULL;
	}
	o = find_option(s, dot + 1);
	if (!o)
		seterr(err, errlen, "unknown key '%s'", key);
	return o;
}

int fq_cfg_set(const struct fq_cfg_schema *s, void *cfg, const char *key, const char *value, char *err,
	       size_t errlen)
{
	const struct fq_cfg_option *o;
	char full[256];
	bool ignored;

	if (!strchr(key, '.')) {
		snprintf(full, sizeof(full), "%s.%s", s->ns, key);
		key = full;
	}
	o = resolve_key(s, key, &ignored, err, errlen);
	if (!o) {
		if (ignored)
			seterr(err, errlen, "'%s' is not a %s setting", key, s->ns);
		return -EINVAL;
	}
	return set_value(s->ns, o, cfg, value, err, errlen);
}

static char *trim(char *p)
{
	char *e;

	while (isspace((unsigned char)*p))
		p++;
	e = p + strlen(p);
	while (e > p && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return p;
}

/*
 * The value proper: a double-quoted string (kept verbatim, '#' included), or
 * bare text up to a '#' that starts the value or follows a blank. Either may
 * be followed by a comment. NULL if a quote is unbalanced or stray, so that
 * a dumped config always reads back the same.
 */
static char *unquote(char *v)
{
	char *end;

	if (*v == '"') {
		end = strchr(v + 1, '"');
		if (!end)
			return NULL;
		*end++ = '\0';
		while (isspace((unsigned char)*end))
			end++;
		return *end == '\0' || *end == '#' ? v + 1 : NULL;
	}
	for (end = v; *end; end++) {
		if (*end == '#' && (end == v || isspace((unsigned char)end[-1]))) {
			*end = '\0';
			break;
		}
	}
	if (strchr(v, '"'))
		return NULL;
	return trim(v);
}

/* One "key = value" line; 0 or -EINVAL with err (without file:line). */
static int parse_line(const struct fq_cfg_schema *s, void *cfg, char *line, unsigned char *seen, char *err,
		      size_t errlen)
{
	const struct fq_cfg_option *o;
	char *eq, *key, *value;
	bool ignored;

	line = trim(line);
	if (*line == '\0' || *line == '#')
		return 0;
	eq = strchr(line, '=');
	if (!eq) {
		seterr(err, errlen, "expected 'key = value'");
		return -EINVAL;
	}
	*eq = '\0';
	key = trim(line);
	value = unquote(trim(eq + 1));
	if (!value) {
		seterr(err, errlen, "%s: unbalanced quote or text after the closing quote", key);
		return -EINVAL;
	}
	if (*key == '\0') {
		seterr(err, errlen, "missing key before '='");
		return -EINVAL;
	}
	o = resolve_key(s, key, &ignored, err, errlen);
	if (!o)
		return ignored ? 0 : -EINVAL;
	if (seen[o - s->options]) {
		seterr(err, errlen, "'%s' is set twice", key);
		return -EINVAL;
	}
	seen[o - s->options] = 1;
	return set_value(s->ns, o, cfg, value, err, errlen);
}

int fq_cfg_load_string(const struct fq_cfg_schema *s, void *cfg, const char *name, const char *text,
		       char *err, size_t errlen)
{
	size_t nopt = 0;
	unsigned lineno = 0;
	unsigned char *seen;
	char line[FQ_CFG_MAX_LINE], msg[512];
	int rc = 0;

	while (s->options[nopt].name)
		nopt++;
	seen = calloc(nopt + 1, 1);
	if (!seen)
		return -ENOMEM;
	while (*text) {
		const char *nl = strchr(text, '\n');
		size_t len = nl ? (size_t)(nl - text) : strlen(text);

		lineno++;
		if (len >= sizeof(line)) {
			seterr(err, errlen, "%s:%u: line longer than %d bytes", name, lineno,
			       FQ_CFG_MAX_LINE - 1);
			rc = -EINVAL;
			break;
		}
		memcpy(line, text, len);
		line[len] = '\0';
		if (memchr(line, '\0', len) != NULL && strlen(line) != len) {
			seterr(err, errlen, "%s:%u: NUL byte in line", name, lineno);
			rc = -EINVAL;
			break;
		}
		rc = parse_line(s, cfg, line, seen, msg, sizeof(msg));
		if (rc < 0) {
			seterr(err, errlen, "%s:%u: %s", name, lineno, msg);
			break;
		}
		text += len + (nl ? 1 : 0);
	}
	free(seen);
	return rc;
}

int fq_cfg_load(const struct fq_cfg_schema *s, void *cfg, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int rc;

	if (!f) {
		rc = -errno;
		seterr(err, errlen, "%s: %s", path, strerror(errno));
		return rc;
	}
	for (;;) {
		if (cap - len < 4096) {
			char *nb;
			if (cap > (16u << 20)) {
				seterr(err, errlen, "%s: larger than 16 MiB", path);
				rc = -EFBIG;
				goto out;
			}
			cap = cap ? cap * 2 : 8192;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				rc = -ENOMEM;
				goto out;
			}
			buf = nb;
		}
		size_t n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		rc = -EIO;
		seterr(err, errlen, "%s: read error", path);
		goto out;
	}
	buf[len] = '\0';
	if (strlen(buf) != len) {
		rc = -EINVAL;
		seterr(err, errlen, "%s: contains a NUL byte", path);
		goto out;
	}
	rc = fq_cfg_load_string(s, cfg, path, buf, err, errlen);
out:
	free(buf);
	fclose(f);
	return rc;
}

static void print_value(const struct fq_cfg_option *o, const void *cfg, FILE *out)
{
	const char *field = (const char *)cfg + o->offset;

	switch (o->type) {
	case FQ_CFG_INT:
		fprintf(out, "%" PRId64, *(const int64_t *)field);
		break;
	case FQ_CFG_UINT:
	case FQ_CFG_SIZE:
		fprintf(out, "%" PRIu64, *(const uint64_t *)field);
		break;
	case FQ_CFG_DURATION:
		fprintf(out, "%" PRIu64 "ns", *(const uint64_t *)field);
		break;
	case FQ_CFG_DOUBLE:
		fprintf(out, "%.17g", *(const double *)field);
		break;
	case FQ_CFG_BOOL:
		fputs(*(const bool *)field ? "yes" : "no", out);
		break;
	case FQ_CFG_STRING: {
		const char *v = *(char *const *)field;
		fprintf(out, "\"%s\"", v ? v : "");
		break;
	}
	case FQ_CFG_ENUM:
		fputs(o->choices[*(const int *)field], out);
		break;
	}
}

void fq_cfg_print_help(const struct fq_cfg_schema *s, FILE *out)
{
	for (const struct fq_cfg_option *o = s->options; o->name; o++) {
		fprintf(out, "  %s.%s (%s", s->ns, o->name, type_name(o->type));
		if (o->def)
			fprintf(out, ", default %s", o->def);
		if (bounded(o))
			fprintf(out, ", %.15g..%.15g%s", o->min, o->max,
				o->type == FQ_CFG_DURATION ? " ns"
				: o->type == FQ_CFG_SIZE   ? " bytes"
							   : "");
		if (o->type == FQ_CFG_ENUM) {
			fputs(", one of:", out);
			for (int k = 0; o->choices[k]; k++)
				fprintf(out, " %s", o->choices[k]);
		}
		fprintf(out, ")\n      %s\n", o->help ? o->help : "");
	}
}

void fq_cfg_dump(const struct fq_cfg_schema *s, const void *cfg, FILE *out)
{
	for (const struct fq_cfg_option *o = s->options; o->name; o++) {
		fprintf(out, "%s.%s = ", s->ns, o->name);
		print_value(o, cfg, out);
		fputc('\n', out);
	}
}

void fq_cfg_free(const struct fq_cfg_schema *s, void *cfg)
{
	for (const struct fq_cfg_option *o = s->options; o->name; o++) {
		if (o->type == FQ_CFG_STRING) {
			char **field = (char **)((char *)cfg + o->offset);
			free(*field);
			*field = NULL;
		}
	}
}

int fq_cfg_load_all(const struct fq_cfg_schema *s, void *cfg, const char *path, char **sets, int nsets,
		    char *err, size_t errlen)
{
	int rc = fq_cfg_defaults(s, cfg, err, errlen);

	if (rc == 0 && (access(path, F_OK) == 0 || strcmp(path, FQ_CONFIG_PATH) != 0))
		rc = fq_cfg_load(s, cfg, path, err, errlen);
	if (rc < 0)
		return -EINVAL;
	for (int i = 0; i < nsets; i++) {
		char *eq = strchr(sets[i], '=');
		char why[400];

		if (!eq) {
			snprintf(err, errlen, "--set %s: expected KEY=VALUE", sets[i]);
			return -EINVAL;
		}
		*eq = '\0';
		if (fq_cfg_set(s, cfg, sets[i], eq + 1, why, sizeof(why)) < 0) {
			snprintf(err, errlen, "--set: %s", why);
			return -EINVAL;
		}
	}
	return 0;
}
