/*
 * libFuzzer target: the JSON API's request parsing (controller/api.c,
 * controller/api_param.c) on hostile paths and query strings, both ways
 * they come in: the raw query (fq_api_get, the CLI's --db mode) and its
 * arguments one by one as the HTTP server hands them over from
 * libmicrohttpd (fq_api_params_add, here split at '&' and the first '='
 * without decoding). The input is PATH, a NUL, then the query. Without a
 * database every request that parses is answered 503, so whatever comes in
 * must get 400 (a query refused), 404 (an unknown path) or 503, with a JSON
 * body; and fq_api_access must name an access for any path.
 */
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "controller/api.h"
#include "controller/api_param.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A 400, 404 or 503 with {"error": ...}, or abort(); frees body. */
static void check_answer(int status, char *body)
{
	struct json_object *o;

	if (status != 400 && status != 404 && status != 503)
		abort();
	o = body ? json_tokener_parse(body) : NULL;
	if (!o || !json_object_object_get(o, "error"))
		abort();
	json_object_put(o);
	free(body);
}

/* The query's arguments as libmicrohttpd would hand them over (query is
 * modified). */
static void add_args(struct fq_api_params *params, char *query)
{
	for (char *arg = strtok(query, "&"); arg; arg = strtok(NULL, "&")) {
		char *eq = strchr(arg, '=');

		if (eq)
			*eq = '\0';
		if (fq_api_params_add(params, arg, eq ? eq + 1 : NULL))
			return;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in = malloc(size + 2), *path, *query, *body = NULL;
	struct fq_api_params params = {0};
	size_t plen;

	if (!in)
		return 0;
	memcpy(in, data, size);
	in[size] = in[size + 1] = '\0';
	path = in;
	plen = strlen(path);
	query = plen < size ? in + plen + 1 : in + size;
	if (fq_api_access(path) != FQ_API_OPEN && fq_api_access(path) != FQ_API_ADMIN &&
	    fq_api_access(path) != FQ_API_OWNER)
		abort();
	check_answer(fq_api_get(NULL, path, query, &body), body);
	add_args(&params, query);
	body = NULL;
	check_answer(fq_api_get_params(NULL, path, &params, &body), body);
	fq_api_params_free(&params);
	free(in);
	return 0;
}
