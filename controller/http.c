/*
 * http: see http.h.
 */
#include "controller/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controller/api.h"
#include "db/db.h"

struct fq_http {
	struct MHD_Daemon *mhd;
	pthread_mutex_t lock;
	char *metrics;
	size_t metrics_len;
	char *conninfo;
	struct fq_db *db; /* the API's connection, used only on the HTTP thread */
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type, char *body,
			     size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result rc;

	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", type);
	rc = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return rc;
}

struct query {
	char buf[2048];
	size_t off;
};

/* Append s percent-encoded (RFC 3986 unreserved characters as they are). */
static void put_encoded(struct query *q, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s && q->off + 4 < sizeof(q->buf); s++) {
		unsigned char ch = (unsigned char)*s;
		if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
		    ch == '-' || ch == '.' || ch == '_' || ch == '~') {
			q->buf[q->off++] = (char)ch;
		} else {
			q->buf[q->off++] = '%';
			q->buf[q->off++] = hex[ch >> 4];
			q->buf[q->off++] = hex[ch & 15];
		}
	}
	q->buf[q->off] = '\0';
}

/* libmicrohttpd hands the arguments over decoded; the API takes the raw
 * query string, so each key and value is encoded again ('&', '+', '%' and
 * '=' inside a value stay part of it). */
static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct query *q = cls;

	(void)kind;
	if (q->off + 4 >= sizeof(q->buf))
		return MHD_NO;
	if (q->off)
		q->buf[q->off++] = '&';
	put_encoded(q, key);
	if (value && q->off + 4 < sizeof(q->buf)) {
		q->buf[q->off++] = '=';
		put_encoded(q, value);
	}
	return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_size,
				  void **con_cls)
{
	struct fq_http *h = cls;
	char *body;

	(void)version;
	(void)upload_data;
	(void)upload_size;
	(void)con_cls;
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return reply(c, 405, "application/json", strdup("{\"error\": \"only GET\"}\n"), 21);
	if (!strcmp(url, "/metrics")) {
		size_t len;
		pthread_mutex_lock(&h->lock);
		len = h->metrics_len;
		body = malloc(len + 1);
		if (body)
			memcpy(body, h->metrics ? h->metrics : "", len);
		pthread_mutex_unlock(&h->lock);
		if (!body)
			return MHD_NO;
		return reply(c, 200, "text/plain; version=0.0.4", body, len);
	}
	if (!strncmp(url, "/api/v1/", 8) || !strcmp(url, "/api/v1")) {
		struct query q = {.off = 0};
		int status;

		q.buf[0] = '\0';
		/* libmicrohttpd splits the query off the URL; the API wants it whole. */
		MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_arg, &q);
		if (!h->db) {
			char err[256];
			if (fq_db_create(h->conninfo, &h->db, err, sizeof(err)) < 0)
				fq_log_rl(FQ_LOG_WARN, "http: database: %s", err);
		}
		body = NULL;
		status = fq_api_get(h->db, url, q.buf, &body);
		if (status == 503 && h->db) {
			/* A lost connection: start afresh next time. */
			fq_db_destroy(h->db);
			h->db = NULL;
		}
		if (!body)
			return MHD_NO;
		return reply(c, (unsigned)status, "application/json", body, strlen(body));
	}
	return reply(c, 404, "application/json", strdup("{\"error\": \"not found\"}\n"), 23);
}

int fq_http_start(const char *listen, const char *conninfo, struct fq_http **out, char *err, unsigned errlen)
{
	struct fq_http *h = calloc(1, sizeof(*h));
	struct sockaddr_in sa = {.sin_family = AF_INET};
	char host[64];
	const char *colon = strrchr(listen, ':');
	unsigned long port;

	*out = NULL;
	if (!h)
		return -ENOMEM;
	pthread_mutex_init(&h->lock, NULL);
	if (!colon || (size_t)(colon - listen) >= sizeof(host) ||
	    (port = strtoul(colon + 1, NULL, 10)) == 0 || port > 65535) {
		snprintf(err, errlen, "controller.http_listen '%s': expected IPV4:PORT", listen);
		goto fail;
	}
	memcpy(host, listen, (size_t)(colon - listen));
	host[colon - listen] = '\0';
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		snprintf(err, errlen, "controller.http_listen '%s': '%s' is not an IPv4 address", listen,
			 host);
		goto fail;
	}
	sa.sin_port = htons((uint16_t)port);
	h->conninfo = strdup(conninfo ? conninfo : "");
	h->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
				  on_request, h, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_CONNECTION_TIMEOUT,
				  10u, MHD_OPTION_CONNECTION_LIMIT, 64u, MHD_OPTION_END);
	if (!h->mhd || !h->conninfo) {
		snprintf(err, errlen, "controller.http_listen %s: cannot listen (address in use?)", listen);
		goto fail;
	}
	*out = h;
	return 0;

fail:
	fq_http_stop(h);
	return -EADDRNOTAVAIL;
}

void fq_http_stop(struct fq_http *h)
{
	if (!h)
		return;
	if (h->mhd)
		MHD_stop_daemon(h->mhd);
	fq_db_destroy(h->db);
	pthread_mutex_destroy(&h->lock);
	free(h->metrics);
	free(h->conninfo);
	free(h);
}

void fq_http_publish_metrics(struct fq_http *h, const char *text, unsigned long len)
{
	char *copy = malloc(len + 1);

	if (!copy)
		return;
	memcpy(copy, text, len);
	copy[len] = '\0';
	pthread_mutex_lock(&h->lock);
	free(h->metrics);
	h->metrics = copy;
	h->metrics_len = len;
	pthread_mutex_unlock(&h->lock);
}
