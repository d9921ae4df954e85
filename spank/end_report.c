/* end_report: see end_report.h. */
#include "spank/end_report.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/http_client.h"
#include "common/munge_cred.h"

#define END_POLL_MS    250
#define END_MIN_TRY_MS 200
#define END_MAX_ANSWER 4096
#define END_CRED_TTL_S 60

static int get_int(struct json_object *o, const char *key, int *out)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		return -EPROTO;
	*out = json_object_get_int(v);
	return *out < 0 ? -EPROTO : 0;
}

int fq_end_summary_parse(const char *json, struct fq_end_summary *s)
{
	struct json_object *o = json ? json_tokener_parse(json) : NULL, *c;
	int rc = -EPROTO;

	memset(s, 0, sizeof(*s));
	if (o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, "complete", &c) &&
	    json_object_is_type(c, json_type_boolean) && !get_int(o, "node_count", &s->node_count) &&
	    !get_int(o, "nodes_ended", &s->nodes_ended) && !get_int(o, "incidents", &s->incidents) &&
	    !get_int(o, "anomalies", &s->anomalies) && !get_int(o, "failovers", &s->failovers)) {
		s->complete = json_object_get_boolean(c);
		rc = 0;
	}
	json_object_put(o);
	if (rc)
		memset(s, 0, sizeof(*s));
	return rc;
}

void fq_end_line(const struct fq_end_summary *s, uint32_t job, const char *step, char *buf, size_t len)
{
	char missing[64] = "";

	if (!len)
		return;
	buf[0] = 0;
	if (!s->incidents && !s->failovers)
		return;
	if (!s->complete && s->node_count > s->nodes_ended)
		snprintf(missing, sizeof(missing), " (%d of %d nodes had not reported yet)",
			 s->node_count - s->nodes_ended, s->node_count);
	snprintf(buf, len, "fabriciq: step %u.%s: %d incident%s, %d lane failover%s \u2014 fabriciq job %u%s",
		 job, step, s->incidents, s->incidents == 1 ? "" : "s", s->failovers,
		 s->failovers == 1 ? "" : "s", job, missing);
}

/* One request: 0 and *s, or a negative errno with err. */
static int ask(const char *controller, const char *munge_socket, const char *path, int timeout_ms,
	       struct fq_end_summary *s, char *err, size_t errlen)
{
	struct fq_http_response resp = {0};
	char *cred = NULL, *auth = NULL;
	int rc;

	rc = fq_munge_encode(munge_socket && *munge_socket ? munge_socket : NULL, path, strlen(path),
			     END_CRED_TTL_S, &cred, err, errlen);
	if (rc)
		return rc;
	if (asprintf(&auth, "%s%s", FQ_MUNGE_AUTH_SCHEME, cred) < 0) {
		free(cred);
		return -ENOMEM;
	}
	free(cred);
	rc = fq_http_get(controller, path, auth, timeout_ms, END_MAX_ANSWER, &resp, err, errlen);
	free(auth);
	if (rc)
		return rc;
	if (resp.status == 200)
		rc = fq_end_summary_parse(resp.body, s);
	else
		rc = resp.status == 401 || resp.status == 403 ? -EACCES
		     : resp.status == 404                     ? -ENOENT
							      : -EPROTO;
	if (rc)
		snprintf(err, errlen, "%s%s: HTTP %d: %.200s", controller, path, resp.status,
			 resp.body ? resp.body : "");
	free(resp.body);
	return rc;
}

int fq_end_summary_fetch(const char *controller, const char *munge_socket, uint32_t job, const char *step,
			 int wait_ms, struct fq_end_summary *s, char *err, size_t errlen)
{
	int64_t deadline = fq_clock_ns(CLOCK_MONOTONIC) + (int64_t)wait_ms * 1000000;
	char path[96];
	int rc;

	snprintf(path, sizeof(path), "/api/v1/jobs/%u.%s/summary", job, step);
	for (;;) {
		int64_t left_ms = (deadline - fq_clock_ns(CLOCK_MONOTONIC)) / 1000000;

		rc = ask(controller, munge_socket, path,
			 left_ms > END_MIN_TRY_MS ? (int)left_ms : END_MIN_TRY_MS, s, err, errlen);
		/* A step the controller has not heard of yet (its StepStart is
		 * on its way) is asked for again like an incomplete one. */
		if ((rc && rc != -ENOENT) || (!rc && s->complete))
			return rc;
		if (fq_clock_ns(CLOCK_MONOTONIC) + (int64_t)END_POLL_MS * 1000000 > deadline)
			return rc;
		nanosleep(&(struct timespec){.tv_nsec = END_POLL_MS * 1000000L}, NULL);
	}
}
