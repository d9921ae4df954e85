/*
 * http: the controller's HTTP endpoint (libmicrohttpd, its own thread).
 *   GET /metrics     the Prometheus text the daemon last published
 *   GET /api/v1/...  handed to fq_api_get (controller/api.h) on the HTTP
 *                    thread's own database connection
 * Anything else is 404; methods other than GET/HEAD are 405.
 *
 * Paths fq_api_access calls FQ_API_ADMIN are served only to a request with
 * a munge credential (FQ_API_AUTH_SCHEME, api.h) that munged decodes,
 * minted for that path, by root or one of the configured admin uids:
 * otherwise 401 (no or bad credential), 403 (another uid) or 503 (munged
 * unreachable), {"error": "..."} saying why. /metrics and the open API
 * paths need nothing.
 */
#ifndef FQ_CONTROLLER_HTTP_H
#define FQ_CONTROLLER_HTTP_H

struct fq_http;

#define FQ_HTTP_MAX_ADMINS 64

struct fq_http_config {
	const char *listen;        /* "ADDR:PORT" (IPv4) */
	const char *conninfo;      /* for the API's connection */
	const char *munge_socket;  /* munged's socket (NULL: munge's default) */
	const char *admin_uids;    /* administrators besides root: "UID[, UID...]" ("" or NULL: none) */
	const char *topology_file; /* the site's expected topology ("" or NULL: none) */
};

/* 0 and *out, or with err filled: -EINVAL a bad admin_uids (more than
 * FQ_HTTP_MAX_ADMINS, or not uids), -EADDRNOTAVAIL cannot listen. */
int fq_http_start(const struct fq_http_config *cfg, struct fq_http **out, char *err, unsigned errlen);
void fq_http_stop(struct fq_http *h);

/* Replaces the /metrics text (copied). Thread-safe. */
void fq_http_publish_metrics(struct fq_http *h, const char *text, unsigned long len);

#endif /* FQ_CONTROLLER_HTTP_H */
