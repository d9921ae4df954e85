/*
 * http: see http.h.
 */
#include "controller/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/config.h"
#include "common/log.h"
#include "common/munge_cred.h"
#include "controller/api.h"
#include "controller/api_param.h"
#include "db/db.h"

struct fq_http {
	struct MHD_Daemon *mhd;
	pthread_mutex_t lock;
	char *metrics;
	size_t metrics_len;
	char *conninfo;
	char *topology_file; /* NULL: none */
	struct fq_db *db;    /* the API's connection, used only on the HTTP thread */
	char *munge_socket;
	uid_t admins[FQ_HTTP_MAX_ADMINS]; /* besides root */
	size_t nadmins;
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
	if (status == 401)
		MHD_add_response_header(r, "WWW-Authenticate", "MUNGE");
	rc = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return rc;
}

/* {"error": msg} as the API writes its errors. */
static enum MHD_Result reply_error(struct MHD_Connection *c, unsigned status, const char *msg)
{
	struct json_object *o = json_object_new_object();
	char *body = NULL;

	if (o) {
		json_object_object_add(o, "error", json_object_new_string(msg));
		body = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
								    JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	}
	if (!body)
		return MHD_NO;
	return reply(c, status, "application/json", body, strlen(body));
}

/*
 * May this request have its path (access: FQ_API_ADMIN or FQ_API_OWNER)?
 * 0 if so, else the HTTP status with why[]: 401 no credential or one munge
 * refuses (forged, expired, replayed, minted for another path), 403 a
 * valid credential of a uid that is not an administrator (an
 * FQ_API_OWNER path is then answered for that uid's own: params'
 * owner_only), 503 munged unreachable. munged answers on a local socket in
 * well under a millisecond; the decode runs on this HTTP thread (which
 * also runs the API's SQL), never on the daemon's event loop.
 */
static unsigned authorize(struct fq_http *h, struct MHD_Connection *c, const char *url,
			  enum fq_api_access access, struct fq_api_params *params, char *why, size_t len)
{
	const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	size_t sl = strlen(FQ_API_AUTH_SCHEME);
	uid_t uid;
	int rc;

	if (!a || strncasecmp(a, FQ_API_AUTH_SCHEME, sl)) {
		snprintf(
		    why, len,
		    "%s needs a munge credential (Authorization: MUNGE CRED; the fabriciq CLI sends one)",
		    url);
		return 401;
	}
	rc = fq_munge_decode(h->munge_socket, a + sl, url, strlen(url), FQ_MUNGE_ANY_UID, &uid, NULL, why,
			     len);
	if (rc == -EBADMSG)
		snprintf(why, len, "the munge credential was minted for another path than %s", url);
	if (rc == -ECONNREFUSED || rc == -ENOMEM)
		return 503;
	if (rc)
		return 401;
	if (uid == 0)
		return 0;
	for (size_t i = 0; i < h->nadmins; i++)
		if (h->admins[i] == uid)
			return 0;
	if (access == FQ_API_OWNER) {
		params->owner_only = true;
		params->owner_uid = (uint32_t)uid;
		return 0;
	}
	snprintf(why, len, "uid %u is not an administrator of the API (root or controller.api_admin_uids)",
		 (unsigned)uid);
	return 403;
}

/* libmicrohttpd hands the GET arguments over decoded: each goes to the
 * API's parameters as it is (the first refused stops the walk; the API
 * answers 400 with its reason). */
static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	(void)kind;
	return fq_api_params_add(cls, key, value) == 0 ? MHD_YES : MHD_NO;
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
		struct fq_api_params params = {0};
		int status;

		enum fq_api_access access = fq_api_access(url);

		if (access != FQ_API_OPEN) {
			char why[320];
			unsigned refused = authorize(h, c, url, access, &params, why, sizeof(why));

			if (refused) {
				fq_log_rl(FQ_LOG_WARN, "http: GET %s refused (%u): %s", url, refused, why);
				return reply_error(c, refused, why);
			}
		}
		MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_arg, &params);
		params.topology_file = h->topology_file;
		if (!h->db) {
			char err[256];
			if (fq_db_create(h->conninfo, &h->db, err, sizeof(err)) < 0)
				fq_log_rl(FQ_LOG_WARN, "http: database: %s", err);
		}
		body = NULL;
		status = fq_api_get_params(h->db, url, &params, &body);
		fq_api_params_free(&params);
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

/* "UID[, UID...]" (commas or blanks) into h->admins; 0 or -EINVAL. */
static int parse_admins(struct fq_http *h, const char *list, char *err, unsigned errlen)
{
	const char *p = list ? list : "";

	while (*(p += strspn(p, ", \t"))) {
		size_t n = strcspn(p, ", \t");
		char tok[24];
		uint64_t uid;

		snprintf(tok, sizeof(tok), "%.*s", (int)(n < sizeof(tok) ? n : sizeof(tok) - 1), p);
		if (n >= sizeof(tok) || fq_parse_uint(tok, &uid) || uid >= (uid_t)-1) {
			snprintf(err, errlen, "controller.api_admin_uids: '%.*s' is not a uid",
				 (int)(n > 32 ? 32 : n), p);
			return -EINVAL;
		}
		if (h->nadmins == FQ_HTTP_MAX_ADMINS) {
			snprintf(err, errlen, "controller.api_admin_uids: more than %d uids",
				 FQ_HTTP_MAX_ADMINS);
			return -EINVAL;
		}
		h->admins[h->nadmins++] = (uid_t)uid;
		p += n;
	}
	return 0;
}

int fq_http_start(const struct fq_http_config *cfg, struct fq_http **out, char *err, unsigned errlen)
{
	struct fq_http *h = calloc(1, sizeof(*h));
	struct sockaddr_in sa = {.sin_family = AF_INET};
	const char *listen = cfg->listen;
	char host[64];
	const char *colon = strrchr(listen, ':');
	unsigned long port;
	int rc = -EADDRNOTAVAIL;

	*out = NULL;
	if (!h)
		return -ENOMEM;
	pthread_mutex_init(&h->lock, NULL);
	if (parse_admins(h, cfg->admin_uids, err, errlen)) {
		rc = -EINVAL;
		goto fail;
	}
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
	h->conninfo = strdup(cfg->conninfo ? cfg->conninfo : "");
	h->topology_file = cfg->topology_file && *cfg->topology_file ? strdup(cfg->topology_file) : NULL;
	h->munge_socket = cfg->munge_socket ? strdup(cfg->munge_socket) : NULL;
	h->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
				  on_request, h, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_CONNECTION_TIMEOUT,
				  10u, MHD_OPTION_CONNECTION_LIMIT, 64u, MHD_OPTION_END);
	if (!h->mhd || !h->conninfo || (cfg->munge_socket && !h->munge_socket)) {
		snprintf(err, errlen, "controller.http_listen %s: cannot listen (address in use?)", listen);
		goto fail;
	}
	*out = h;
	return 0;

fail:
	fq_http_stop(h);
	return rc;
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
	free(h->topology_file);
	free(h->munge_socket);
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
