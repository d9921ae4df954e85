/*
 * cli_fmt: values and aligned tables for people (see cli.h): local times,
 * delays and sizes with units, control characters of stored strings
 * neutralised.
 */
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller/cli/cli.h"

/* ---- small formatting helpers -------------------------------------------- */

/* A ring of scratch buffers: each formatter's result lives until 32 more
 * have been made, long enough to build one table row. */
char *scratch(void)
{
	static char ring[32][SCRATCH_LEN];
	static unsigned next;

	return ring[next++ % 32];
}

struct json_object *jget(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

/* A string member, or "-" when null or absent. */
const char *jstr(struct json_object *o, const char *key)
{
	struct json_object *v = jget(o, key);

	return v ? json_object_get_string(v) : "-";
}

int64_t jint(struct json_object *o, const char *key)
{
	return json_object_get_int64(jget(o, key));
}

bool jnull(struct json_object *o, const char *key)
{
	return jget(o, key) == NULL;
}

double jdbl(struct json_object *o, const char *key)
{
	struct json_object *v = jget(o, key);

	return v ? json_object_get_double(v) : NAN;
}

size_t jlen(struct json_object *o, const char *key)
{
	struct json_object *v = jget(o, key);

	return v && json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 0;
}

struct json_object *jidx(struct json_object *o, const char *key, size_t i)
{
	return json_object_array_get_idx(jget(o, key), i);
}

/* A *_ns time member as local time, "-" when null. */
const char *ftime(struct json_object *o, const char *key_ns)
{
	char *b = scratch();
	struct tm tm;
	time_t t;

	if (jnull(o, key_ns))
		return "-";
	t = (time_t)(jint(o, key_ns) / 1000000000);
	localtime_r(&t, &tm);
	strftime(b, SCRATCH_LEN, "%Y-%m-%d %H:%M:%S", &tm);
	return b;
}

/* A duration in ns as "45s", "3m10s", "2h05m", "3d04h". */
const char *fage(int64_t ns)
{
	char *b = scratch();
	int64_t s = ns / 1000000000;

	if (s < 0)
		s = 0;
	if (s < 60)
		snprintf(b, SCRATCH_LEN, "%" PRId64 "s", s);
	else if (s < 3600)
		snprintf(b, SCRATCH_LEN, "%" PRId64 "m%02" PRId64 "s", s / 60, s % 60);
	else if (s < 86400)
		snprintf(b, SCRATCH_LEN, "%" PRId64 "h%02" PRId64 "m", s / 3600, s / 60 % 60);
	else
		snprintf(b, SCRATCH_LEN, "%" PRId64 "d%02" PRId64 "h", s / 86400, s / 3600 % 24);
	return b;
}

/* A delay in ns with its unit: "850 ns", "49.0 us", "2.5 ms", "1.20 s". */
const char *fdelay(double ns)
{
	char *b = scratch();
	double a = fabs(ns);

	if (isnan(ns))
		return "-";
	if (a < 1e3)
		snprintf(b, SCRATCH_LEN, "%.0f ns", ns);
	else if (a < 1e6)
		snprintf(b, SCRATCH_LEN, "%.1f us", ns / 1e3);
	else if (a < 1e9)
		snprintf(b, SCRATCH_LEN, "%.1f ms", ns / 1e6);
	else
		snprintf(b, SCRATCH_LEN, "%.2f s", ns / 1e9);
	return b;
}

const char *fdelay_at(struct json_object *o, const char *key)
{
	return jnull(o, key) ? "-" : fdelay(jdbl(o, key));
}

/* A microsecond figure of a view ("49.0 us"), "-" when null. */
const char *fus(struct json_object *o, const char *key)
{
	return jnull(o, key) ? "-" : fdelay(jdbl(o, key) * 1e3);
}

/* Bytes in decimal units: "11.60 GB". */
const char *fbytes(double v)
{
	static const char *unit[] = {"B", "kB", "MB", "GB", "TB", "PB"};
	char *b = scratch();
	int u = 0;

	if (isnan(v))
		return "-";
	while (fabs(v) >= 1000 && u < 5) {
		v /= 1000;
		u++;
	}
	snprintf(b, SCRATCH_LEN, u ? "%.2f %s" : "%.0f %s", v, unit[u]);
	return b;
}

const char *fbytes_at(struct json_object *o, const char *key)
{
	return jnull(o, key) ? "-" : fbytes(jdbl(o, key));
}

const char *fgbps(struct json_object *o, const char *key)
{
	char *b = scratch();

	if (jnull(o, key))
		return "-";
	snprintf(b, SCRATCH_LEN, "%.1f Gbit/s", jdbl(o, key));
	return b;
}

/* A share (0..1) as a percentage. */
const char *fpct(struct json_object *o, const char *key)
{
	char *b = scratch();

	if (jnull(o, key))
		return "-";
	snprintf(b, SCRATCH_LEN, "%.1f %%", jdbl(o, key) * 100);
	return b;
}

const char *fint(struct json_object *o, const char *key)
{
	char *b = scratch();

	if (jnull(o, key))
		return "-";
	snprintf(b, SCRATCH_LEN, "%" PRId64, jint(o, key));
	return b;
}

const char *fmt(const char *f, ...)
{
	char *b = scratch();
	va_list ap;

	va_start(ap, f);
	vsnprintf(b, SCRATCH_LEN, f, ap);
	va_end(ap);
	return b;
}

/* "node/nic", with "-" parts for nulls. */
const char *fplace(struct json_object *o, const char *node, const char *nic)
{
	if (jnull(o, node))
		return "-";
	return jnull(o, nic) ? jstr(o, node) : fmt("%s/%s", jstr(o, node), jstr(o, nic));
}

/* ---- tables ------------------------------------------------------------------- */

/* Columns as "NAME,NAME>,..." ('>': right-aligned, for numbers). */
void table_init(struct table *t, const char *spec)
{
	char *s = strdup(spec), *save = NULL;

	memset(t, 0, sizeof(*t));
	for (char *c = strtok_r(s, ",", &save); c && t->ncols < TABLE_MAX_COLS;
	     c = strtok_r(NULL, ",", &save)) {
		size_t n = strlen(c);

		t->right[t->ncols] = n && c[n - 1] == '>';
		if (t->right[t->ncols])
			c[n - 1] = '\0';
		t->head[t->ncols++] = strdup(c);
	}
	free(s);
}

/* Stored strings come from agents: control characters (terminal escapes)
 * are shown as '?'. */
char *cell_copy(const char *s)
{
	char *c = strdup(s ? s : "-");

	for (char *p = c; p && *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return c;
}

void table_row(struct table *t, ...)
{
	va_list ap;

	if (t->rows == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 16;
		t->cells = realloc(t->cells, t->cap * (size_t)t->ncols * sizeof(char *));
		if (!t->cells)
			abort();
	}
	va_start(ap, t);
	for (int i = 0; i < t->ncols; i++)
		t->cells[t->rows * (size_t)t->ncols + (size_t)i] = cell_copy(va_arg(ap, const char *));
	va_end(ap);
	t->rows++;
}

/* Display width: UTF-8 code points (continuation bytes do not count). */
static int width(const char *s)
{
	int w = 0;

	for (; *s; s++)
		w += ((unsigned char)*s & 0xc0) != 0x80;
	return w;
}

static void print_cell(const char *s, int w, bool right, bool last)
{
	int pad = w - width(s);

	if (right)
		printf("%*s%s", pad, "", s);
	else if (last)
		fputs(s, stdout);
	else
		printf("%s%*s", s, pad, "");
}

void table_print(struct table *t)
{
	int w[TABLE_MAX_COLS];

	for (int c = 0; c < t->ncols; c++) {
		w[c] = width(t->head[c]);
		for (size_t r = 0; r < t->rows; r++) {
			int cw = width(t->cells[r * (size_t)t->ncols + (size_t)c]);

			if (cw > w[c])
				w[c] = cw;
		}
	}
	for (int c = 0; c < t->ncols; c++) {
		print_cell(t->head[c], w[c], t->right[c], c == t->ncols - 1);
		fputs(c == t->ncols - 1 ? "\n" : "  ", stdout);
	}
	for (size_t r = 0; r < t->rows; r++) {
		char **row = &t->cells[r * (size_t)t->ncols];
		int last = t->ncols - 1;

		/* No trailing blanks: empty cells at the end of a row are not padded. */
		while (last > 0 && !*row[last] && !t->right[last])
			last--;
		for (int c = 0; c <= last; c++) {
			print_cell(row[c], w[c], t->right[c], c == last);
			fputs(c == last ? "\n" : "  ", stdout);
		}
	}
	for (size_t i = 0; i < t->rows * (size_t)t->ncols; i++)
		free(t->cells[i]);
	for (int c = 0; c < t->ncols; c++)
		free(t->head[c]);
	free(t->cells);
}
