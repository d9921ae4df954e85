/*
 * libFuzzer target: the configuration parser on hostile text, with a table
 * of every option type. Whatever loads must dump and load back.
 */
#include "common/config.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct cfg {
	int64_t i;
	uint64_t u;
	double d;
	bool b;
	char *s;
	uint64_t dur;
	uint64_t sz;
	int e;
};

static const char *const choices[] = {"monitor", "control", NULL};
static const struct fq_cfg_option opts[] = {
    {"i", FQ_CFG_INT, offsetof(struct cfg, i), "0", -100, 100, NULL, ""},
    {"u", FQ_CFG_UINT, offsetof(struct cfg, u), "1", 0, 0, NULL, ""},
    {"d", FQ_CFG_DOUBLE, offsetof(struct cfg, d), "0.5", 0, 1, NULL, ""},
    {"b", FQ_CFG_BOOL, offsetof(struct cfg, b), "no", 0, 0, NULL, ""},
    {"s", FQ_CFG_STRING, offsetof(struct cfg, s), "x", 0, 0, NULL, ""},
    {"dur", FQ_CFG_DURATION, offsetof(struct cfg, dur), "1s", 0, 0, NULL, ""},
    {"sz", FQ_CFG_SIZE, offsetof(struct cfg, sz), "1K", 0, 0, NULL, ""},
    {"e", FQ_CFG_ENUM, offsetof(struct cfg, e), "monitor", 0, 0, choices, ""},
    {NULL, 0, 0, NULL, 0, 0, NULL, NULL},
};
static const struct fq_cfg_schema schema = {"agent", opts};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cfg c = {0}, c2 = {0};
	char err[256], *text = malloc(size + 1), *dump = NULL;
	size_t dlen = 0;
	FILE *f;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	fq_cfg_defaults(&schema, &c, err, sizeof(err));
	if (fq_cfg_load_string(&schema, &c, "fuzz", text, err, sizeof(err)) == 0 && !strchr(c.s, '"') &&
	    !strchr(c.s, '\n')) {
		f = open_memstream(&dump, &dlen);
		fq_cfg_dump(&schema, &c, f);
		fclose(f);
		fq_cfg_defaults(&schema, &c2, err, sizeof(err));
		if (fq_cfg_load_string(&schema, &c2, "dump", dump, err, sizeof(err)) != 0)
			abort();
		if (c2.i != c.i || c2.u != c.u || c2.b != c.b || c2.dur != c.dur || c2.sz != c.sz ||
		    c2.e != c.e)
			abort();
		free(dump);
		fq_cfg_free(&schema, &c2);
	}
	fq_cfg_free(&schema, &c);
	free(text);
	return 0;
}
