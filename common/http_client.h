/*
 * http_client: a small HTTP/1.1 GET client for the `fabriciq` CLI and the
 * SPANK plugin's job-end line (libcurl's -dev package is not part of the
 * build's dependencies). Plain http://
 * only, one request per connection ("Connection: close"), Content-Length,
 * read-to-close and chunked bodies. Every step is bounded: one deadline for
 * connect + send + receive, and a size limit on the whole response.
 */
#ifndef FQ_COMMON_HTTP_CLIENT_H
#define FQ_COMMON_HTTP_CLIENT_H

#include <stddef.h>

struct fq_http_response {
	int status; /* e.g. 200 */
	char *body; /* NUL-terminated (the body may hold NULs: see len); free() it */
	size_t len;
};

/*
 * GETs base_url + target, where base_url is "http://HOST[:PORT][/PREFIX]"
 * (HOST a name, an IPv4 address or [IPv6]; PORT 80 by default) and target
 * starts with '/' (path and query, already percent-encoded), sending
 * authorization (NULL: none; no CR or LF) as the Authorization header.
 * Returns 0 and
 * fills *resp whatever the HTTP status, or a negative errno with err[errlen]
 * saying what failed: -EINVAL bad URL or header, -ETIMEDOUT past timeout_ms, -EFBIG
 * response over max_bytes, -EPROTO not HTTP, or the socket's errno.
 */
int fq_http_get(const char *base_url, const char *target, const char *authorization, int timeout_ms,
		size_t max_bytes, struct fq_http_response *resp, char *err, size_t errlen);

#endif /* FQ_COMMON_HTTP_CLIENT_H */
