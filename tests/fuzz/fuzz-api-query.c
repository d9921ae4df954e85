/*
 * libFuzzer target: the JSON API's request parsing (controller/api.c) on
 * hostile paths and query strings, as the HTTP server hands them over.
 * The input is PATH, a NUL, then the raw query. Without a database every
 * request that parses is answered 503, so whatever comes in must get 400
 * (a query refused), 404 (an unknown path) or 503, with a JSON body; and
 * fq_api_access must name an access for any path.
 */
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "controller/api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in = malloc(size + 2), *path, *query, *body = NULL;
	struct json_object *o;
	size_t plen;
	int status;

	if (!in)
		return 0;
	memcpy(in, data, size);
	in[size] = in[size + 1] = '\0';
	path = in;
	plen = strlen(path);
	query = plen < size ? in + plen + 1 : in + size;
	if (fq_api_access(path) != FQ_API_OPEN && fq_api_access(path) != FQ_API_ADMIN)
		abort();
	status = fq_api_get(NULL, path, query, &body);
	if (status != 400 && status != 404 && status != 503)
		abort();
	o = body ? json_tokener_parse(body) : NULL;
	if (!o || !json_object_object_get(o, "error"))
		abort();
	json_object_put(o);
	free(body);
	free(in);
	return 0;
}
