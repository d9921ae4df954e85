/*
 * http: the controller's HTTP endpoint (libmicrohttpd, its own thread).
 *   GET /metrics     the Prometheus text the daemon last published
 *   GET /api/v1/...  handed to fq_api_get (controller/api.h) on the HTTP
 *                    thread's own database connection
 * Anything else is 404; methods other than GET/HEAD are 405.
 */
#ifndef FQ_CONTROLLER_HTTP_H
#define FQ_CONTROLLER_HTTP_H

struct fq_http;

/* listen: "ADDR:PORT" (IPv4). conninfo: for the API's connection. 0 and
 * *out, or a negative errno with err filled. */
int fq_http_start(const char *listen, const char *conninfo, struct fq_http **out, char *err, unsigned errlen);
void fq_http_stop(struct fq_http *h);

/* Replaces the /metrics text (copied). Thread-safe. */
void fq_http_publish_metrics(struct fq_http *h, const char *text, unsigned long len);

#endif /* FQ_CONTROLLER_HTTP_H */
