/*
 * api_param: the JSON API's request parsing (controller/api.h), apart from
 * its endpoints: the query's parameters, checked in C before anything
 * reaches the database, and the values in a request (integers in range,
 * booleans, strict RFC 3339 times, JOB[.STEP] ids). No database, no I/O.
 *
 * The parameters come either as a raw query string ("a=1&b=%20x", the
 * `fabriciq --db` CLI and the tests), percent-decoded here, or already
 * split and decoded one by one (the HTTP server: libmicrohttpd's GET
 * arguments). Either way at most FQ_API_MAX_PARAMS, names and values of at
 * most FQ_API_MAX_VALUE_LEN bytes, no name twice; a refusal leaves its
 * reason in err (the API answers 400 with it).
 */
#ifndef FQ_CONTROLLER_API_PARAM_H
#define FQ_CONTROLLER_API_PARAM_H

#include <stdbool.h>
#include <stdint.h>

#define FQ_API_MAX_PARAMS    8
#define FQ_API_MAX_VALUE_LEN 256

/* A request's parameters (zero-initialise; fq_api_params_free). */
struct fq_api_params {
	int n;
	char *name[FQ_API_MAX_PARAMS];
	char *value[FQ_API_MAX_PARAMS];
	char err[320]; /* "" unless a parse or check failed */
	/* Who asks (set by the HTTP server, not by the query): for an
	 * FQ_API_OWNER path asked by a user who is no administrator, only
	 * what owner_uid owns is answered. */
	bool owner_only;
	uint32_t owner_uid;
	/* The site's expected topology file (controller.topology_file), set
	 * by the HTTP server; NULL: none. Not owned. */
	const char *topology_file;
};

/* Splits and percent-decodes a raw query string ("a=1&b=2", '+' a space;
 * NULL or "": none; empty segments skipped; "a" is a = ""): 0, or -EINVAL
 * with err on a bad or truncated %-escape, an encoded NUL, a name or value
 * too long, too many parameters or one given twice. */
int fq_api_params_parse(struct fq_api_params *r, const char *query);
/* Adds one decoded parameter (value NULL: "name" without '='; an empty name
 * without a value is skipped): 0, or -EINVAL with err as above. */
int fq_api_params_add(struct fq_api_params *r, const char *name, const char *value);
void fq_api_params_free(struct fq_api_params *r);

/* -EINVAL (and err) if r holds a parameter not in `known` ("a, b"; "": none). */
int fq_api_params_only(struct fq_api_params *r, const char *known);
/* The value of parameter name; NULL: absent. */
const char *fq_api_param(const struct fq_api_params *r, const char *name);
/* The parameter `name` as an integer in [min, max], def if absent: 0, or
 * -EINVAL and err. */
int fq_api_param_uint(struct fq_api_params *r, const char *name, uint64_t def, uint64_t min, uint64_t max,
		      uint64_t *out);
/* The parameter `name` as 1/true/yes or 0/false/no, false if absent: 0, or
 * -EINVAL and err. */
int fq_api_param_bool(struct fq_api_params *r, const char *name, bool *out);

/* A decimal integer in [0, max], digits only (no sign, no spaces). */
bool fq_api_parse_uint(const char *s, uint64_t max, uint64_t *out);
/* Strict RFC 3339: YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM), 't'/'z'
 * or a space for 'T' accepted as the RFC allows; years 1970-9999. Every
 * field is range-checked (Feb 30 is refused, not normalised). */
bool fq_api_parse_rfc3339(const char *s, int64_t *ns);
/* "JOB" or "JOB.STEP" (integer ids up to UINT32_MAX; STEP also batch,
 * extern or interactive, Slurm's special step ids). */
bool fq_api_parse_job_step(const char *s, uint64_t *job, bool *has_step, uint64_t *step);

#endif /* FQ_CONTROLLER_API_PARAM_H */
