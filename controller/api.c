/*
 * api: the controller's read-only JSON API (controller/api.h).
 *
 * Every request value is checked here, in C, before anything reaches the
 * database (ids are integers in range, limits bounded, times strict RFC
 * 3339), and is then bound as a statement parameter: nothing from the
 * request is ever part of SQL text. Each section of a reply is one
 * statement whose single value is a JSON document built by PostgreSQL
 * (json_agg over the views of sql/003_views.sql), so strings come back
 * byte for byte and the column names are the JSON keys; json-c assembles
 * the sections and adds what the database does not know (hint commands).
 *
 * Times are given twice: as timestamptz (RFC 3339 in UTC: the library pins
 * the session to UTC) and as integer ns since the epoch (`*_ns`).
 */
#include "controller/api.h"

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "controller/api_int.h"
#include "controller/api_param.h"
#include "controller/hint.h"
#include "db/internal.h"

int api_fail(struct reply *rp, int status, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_object_put(rp->body);
	rp->body = json_object_new_object();
	if (rp->body)
		json_object_object_add(rp->body, "error", json_object_new_string(msg));
	rp->status = status;
	return status;
}

/* A failed statement: the database is down or failing (503), with its words. */
int api_db_fail(struct reply *rp, struct fq_db *db)
{
	return api_fail(rp, 503, "database unavailable: %s", fq_db_error(db));
}

/* ---- statements -------------------------------------------------------- */

/* Runs sql, whose result is one row of one JSON value, into *out. 1: no
 * row or a NULL value (*out NULL); 0: parsed; < 0: database error. */
int api_query_json(struct fq_db *db, const char *what, const char *sql, const struct fq_db_params *p,
		   struct json_object **out)
{
	enum json_tokener_error jerr;
	PGresult *res;
	int rc;

	*out = NULL;
	res = fq_db_run(db, what, sql, p, &rc);
	if (!res)
		return rc;
	if (PQntuples(res) < 1 || PQgetisnull(res, 0, 0)) {
		PQclear(res);
		return 1;
	}
	*out = json_tokener_parse_verbose(PQgetvalue(res, 0, 0), &jerr);
	PQclear(res);
	if (!*out) {
		fq_db_set_error(db, "%s: the database's JSON did not parse: %s", what,
				json_tokener_error_desc(jerr));
		return -EPROTO;
	}
	return 0;
}

/* query_json into reply section `key` of obj; a NULL value becomes JSON
 * null. Returns 0 or fills rp with a 503. */
int api_add_section(struct reply *rp, struct fq_db *db, struct json_object *obj, const char *key,
		    const char *what, const char *sql, const struct fq_db_params *p)
{
	struct json_object *v;
	int rc = api_query_json(db, what, sql, p, &v);

	if (rc < 0)
		return api_db_fail(rp, db);
	json_object_object_add(obj, key, v);
	return 0;
}

/* A list endpoint fetched limit + 1 rows: keep `limit`, say if more exist. */
void api_trim_to_limit(struct json_object *obj, const char *key, uint64_t limit)
{
	struct json_object *arr = json_object_object_get(obj, key);
	size_t n = arr ? json_object_array_length(arr) : 0;

	if (n > limit)
		json_object_array_del_idx(arr, limit, n - limit);
	json_object_object_add(obj, "limit", json_object_new_int64((int64_t)limit));
	json_object_object_add(obj, "truncated", json_object_new_boolean(n > limit));
}

/* ---- endpoints ----------------------------------------------------------- */

static int get_status(struct reply *rp, struct fq_db *db, struct fq_api_params *r)
{
	struct json_object *ctl, *dbo, *rest;
	int version = 0, rc;

	if (fq_api_params_only(r, ""))
		return api_fail(rp, 400, "%s", r->err);
	if (fq_db_schema_version(db, &version))
		return api_db_fail(rp, db);
	if (version < fq_db_code_version())
		return api_fail(
		    rp, 503,
		    "database schema is at version %d, this fabriciq needs %d: run `fabriciq db migrate`",
		    version, fq_db_code_version());
	rc = api_query_json(
	    db, "reading the status",
	    "select json_build_object("
	    "'nodes', (select count(*) from fabriciq.nodes), "
	    "'nodes_reporting', (select count(*) from fabriciq.nodes where last_seen >= now() - "
	    "  (select value::interval from fabriciq.settings where name = 'clock_stale_after')), "
	    "'links', (select count(*) from fabriciq.links), "
	    "'links_down', (select count(*) from fabriciq.links where state = 'down'), "
	    "'steps_running', (select count(*) from fabriciq.steps where end_time is null), "
	    "'anomalies_open', (select count(*) from fabriciq.anomalies where end_time is null), "
	    "'anomalies_open_critical', (select count(*) from fabriciq.anomalies "
	    "  where end_time is null and severity = 'critical'), "
	    "'hints_pending', (select count(*) from fabriciq.drain_hints where applied_at is null"
	    "  and action <> 'check'), "
	    "'fabric_hints_pending', (select count(*) from fabriciq.drain_hints where applied_at is null"
	    "  and action = 'check'), "
	    "'clock', (select coalesce(json_object_agg(status, n), '{}') from "
	    "  (select status, count(*) as n from fabriciq.clock_status group by status) c), " TSJ(
		"now()", "database_time") ")",
	    NULL, &rest);
	if (rc < 0)
		return api_db_fail(rp, db);
	ctl = json_object_new_object();
	json_object_object_add(ctl, "version", json_object_new_string(PACKAGE_VERSION));
	json_object_object_add(ctl, "time_ns", json_object_new_int64(fq_realtime_ns()));
	dbo = json_object_new_object();
	json_object_object_add(dbo, "ok", json_object_new_boolean(true));
	json_object_object_add(dbo, "schema_version", json_object_new_int(version));
	json_object_object_add(dbo, "code_version", json_object_new_int(fq_db_code_version()));
	rp->body = json_object_new_object();
	json_object_object_add(rp->body, "controller", ctl);
	json_object_object_add(rp->body, "database", dbo);
	json_object_object_foreach(rest, key, val)
	    json_object_object_add(rp->body, key, json_object_get(val));
	json_object_put(rest);
	return 200;
}

static const char nodes_sql[] =
    "select coalesce(json_agg(x order by x.name), '[]') from ("
    " select n.name, n.agent_version, n.boot_id, " TS("n.first_seen", "first_seen") ", " TS(
	"n.last_seen",
	"last_seen") ","
		     "  round(extract(epoch from now() - n.last_seen)::numeric, 1) as last_seen_age_s,"
		     "  c.status as clock_status,"
		     "  (select coalesce(json_agg(json_build_object('name', i.name, 'address', i.address, "
		     "'rail', i.rail,"
		     "     'speed_mbps', i.speed_mbps, 'kind', i.kind, 'front_end', i.front_end, 'guid', "
		     "i.guid, " TSJ("i.last_seen",
				    "last_seen") ") order by i.rail, i.name), '[]')"
						 "   from fabriciq.nics i where i.node = n.name) as nics"
						 " from fabriciq.nodes n left join fabriciq.clock_status c "
						 "on c.node = n.name) x";

static int get_nodes(struct reply *rp, struct fq_db *db, struct fq_api_params *r)
{
	if (fq_api_params_only(r, ""))
		return api_fail(rp, 400, "%s", r->err);
	rp->body = json_object_new_object();
	if (api_add_section(rp, db, rp->body, "nodes", "reading nodes", nodes_sql, NULL))
		return rp->status;
	return 200;
}

/* $1 node (either end) or NULL, $2 state or NULL, $3 limit + 1. */
static const char links_sql[] =
    "select coalesce(json_agg(x), '[]') from ("
    " select h.src_node, h.src_nic, h.dst_node, h.dst_nic, h.state, " TS(
	"h.state_since", "state_since") ","
					"  h.flaps_1h, h.flaps_24h, h.windows_1h, h.sent_1h, h.lost_1h, "
					"h.loss_1h, h.owd_fwd_p50_us,"
					"  h.owd_fwd_p99_us, h.owd_rev_p50_us, h.owd_rev_p99_us, h.rtt_p50_us"
					" from fabriciq.link_health h"
					" where ($1::text is null or h.src_node = $1 or h.dst_node = $1) and "
					"($2::text is null or h.state = $2)"
					" order by h.state = 'down' desc, h.flaps_1h desc, h.flaps_24h desc, "
					"h.loss_1h desc nulls last,"
					"  h.src_node, h.src_nic, h.dst_node, h.dst_nic"
					" limit $3) x";

static int get_links(struct reply *rp, struct fq_db *db, struct fq_api_params *r)
{
	struct fq_db_params p = {0};
	const char *state = fq_api_param(r, "state");
	uint64_t limit;

	if (fq_api_params_only(r, "node, state, limit") ||
	    fq_api_param_uint(r, "limit", 1000, 1, 100000, &limit))
		return api_fail(rp, 400, "%s", r->err);
	if (state && strcmp(state, "up") && strcmp(state, "down") && strcmp(state, "unknown"))
		return api_fail(rp, 400, "state must be up, down or unknown, not '%.64s'", state);
	fq_db_param_str(&p, fq_api_param(r, "node"));
	fq_db_param_str(&p, state);
	fq_db_param_u64(&p, limit + 1);
	rp->body = json_object_new_object();
	if (api_add_section(rp, db, rp->body, "links", "reading link_health", links_sql, &p))
		return rp->status;
	api_trim_to_limit(rp->body, "links", limit);
	return 200;
}

/* The efficiency figures of step s (job_efficiency's columns). */
/* ---- events, anomalies, hints, clock -------------------------------------- */

/* $1 since, $2 node or NULL, $3 limit + 1. */
static const char events_sql[] =
    "select coalesce(json_agg(x order by x.time_ns desc), '[]') from ("
    " select " TS("e.time", "time") ", " TS(
	"e.detected_at", "detected") ", e.node, e.nic, e.remote_node,"
				     "  e.remote_nic, e.state, e.detector, e.nic_level"
				     " from fabriciq.link_events e where e.time >= $1::timestamptz"
				     "  and ($2::text is null or e.node = $2 or e.remote_node = $2)"
				     " order by e.time desc limit $3) x";

static int get_events(struct reply *rp, struct fq_db *db, struct fq_api_params *r)
{
	struct fq_db_params p = {0};
	const char *since = fq_api_param(r, "since");
	uint64_t limit;
	int64_t since_ns;

	if (fq_api_params_only(r, "since, node, limit") ||
	    fq_api_param_uint(r, "limit", 100, 1, 10000, &limit))
		return api_fail(rp, 400, "%s", r->err);
	since_ns = fq_realtime_ns() - 86400 * FQ_NSEC_PER_SEC; /* default: the last day */
	if (since && !fq_api_parse_rfc3339(since, &since_ns))
		return api_fail(rp, 400,
				"since must be an RFC 3339 time such as 2026-11-22T13:00:00Z, not '%.64s'",
				since);
	fq_db_param_ts(&p, since_ns);
	fq_db_param_str(&p, fq_api_param(r, "node"));
	fq_db_param_u64(&p, limit + 1);
	rp->body = json_object_new_object();
	json_object_object_add(rp->body, "since_ns", json_object_new_int64(since_ns));
	if (api_add_section(rp, db, rp->body, "events", "reading link_events", events_sql, &p))
		return rp->status;
	api_trim_to_limit(rp->body, "events", limit);
	return 200;
}

/* $1 open only, $2 limit + 1. */
static const char anomalies_sql[] =
    "select coalesce(json_agg(x order by x.start_ns desc, x.id desc), '[]') from ("
    " select a.id, a.kind, a.severity, " TS("a.start_time", "start") ", " TS(
	"a.end_time",
	"end") ","
	       "  a.end_time is null as open,"
	       "  (extract(epoch from coalesce(a.end_time, now()) - a.start_time) * 1000000)::int8 * 1000 as "
	       "duration_ns,"
	       "  a.node, a.nic, a.remote_node, a.remote_nic, a.component, a.summary, a.evidence,"
	       "  (select coalesce(json_agg(json_build_object('job_id', aj.job_id, 'step_id', aj.step_id,"
	       "    'ranks', aj.ranks) order by aj.job_id, aj.step_id), '[]')"
	       "   from fabriciq.anomaly_jobs aj where aj.anomaly_id = a.id) as jobs"
	       " from fabriciq.anomalies a where not $1::bool or a.end_time is null"
	       " order by a.start_time desc, a.id desc limit $2) x";

static int get_anomalies(struct reply *rp, struct fq_db *db, struct fq_api_params *r)
{
	struct fq_db_params p = {0};
	uint64_t limit;
	bool open;

	if (fq_api_params_only(r, "open, limit") || fq_api_param_uint(r, "limit", 100, 1, 10000, &limit) ||
	    fq_api_param_bool(r, "open", &open))
		return api_fail(rp, 400, "%s", r->err);
	fq_db_param_bool(&p, open);
	fq_db_param_u64(&p, limit + 1);
	rp->body = json_object_new_object();
	if (api_add_section(rp, db, rp->body, "anomalies", "reading anomalies", anomalies_sql, &p))
		return rp->status;
	api_trim_to_limit(rp->body, "anomalies", limit);
	return 200;
}

/* Pending hints, oldest first: a node's drain or resume, or a fabric hint
 * (action 'check': no node, the component and what to check in reason).
 * `superseded`: only the last pending hint of a node matters, and of a
 * component; a fabric hint whose incident was taken into another
 * incident (a link's into its switch's) yields to that incident's.
 * `running_jobs`: of a node's hint, the jobs running on the node; of a
 * fabric hint, those of its incident still running. */
static const char hints_sql[] =
    "select coalesce(json_agg(x order by x.id), '[]') from ("
    " select h.id, h.node, h.nic, h.component, h.action, h.reason, h.anomaly_id, " TS(
	"h.created_at",
	"created") ","
		   "  exists (select 1 from fabriciq.drain_hints l where l.applied_at is null and l.id > h.id"
		   "   and (l.node = h.node or l.component = h.component))"
		   "  or exists (select 1 from fabriciq.drain_hints l where h.component is not null"
		   "   and l.component is not null and l.anomaly_id = a.incident_id) as superseded,"
		   "  a.kind as anomaly_kind, a.severity as anomaly_severity, a.summary as anomaly_summary,"
		   "  case when h.node is null then"
		   "   (select coalesce(json_agg(distinct aj.job_id), '[]') from fabriciq.anomaly_jobs aj"
		   "    join fabriciq.steps s on s.job_id = aj.job_id and s.step_id = aj.step_id"
		   "    where aj.anomaly_id = h.anomaly_id and s.end_time is null)"
		   "  else (select coalesce(json_agg(distinct r.job_id), '[]') from fabriciq.ranks r"
		   "   join fabriciq.steps s on s.job_id = r.job_id and s.step_id = r.step_id"
		   "   where r.node = h.node and s.end_time is null) end as running_jobs"
		   " from fabriciq.drain_hints h left join fabriciq.anomalies a on a.id = h.anomaly_id"
		   " where h.applied_at is null) x";

/* Adds the hint's Slurm reason and its command (controller/hint.h: for
 * people, never executed; `hints --apply` builds its own from the fields),
 * or why there is none ("refused"). A fabric hint has neither a Slurm
 * reason nor a command, and is not refused: it is for people to act on. */
static void add_hint_command(struct json_object *h)
{
	const char *action = json_object_get_string(json_object_object_get(h, "action"));
	char *reason;
	struct fq_hint_cmd cmd;
	char err[256];

	if (fq_hint_is_check(action)) {
		json_object_object_add(h, "slurm_reason", NULL);
		json_object_object_add(h, "command", NULL);
		json_object_object_add(h, "refused", NULL);
		return;
	}
	reason = fq_hint_slurm_reason(json_object_get_string(json_object_object_get(h, "reason")));
	if (!reason) {
		snprintf(err, sizeof(err), "out of memory");
	} else if (!fq_hint_command(action, json_object_get_string(json_object_object_get(h, "node")), reason,
				    &cmd, err, sizeof(err))) {
		json_object_object_add(h, "slurm_reason", json_object_new_string(reason));
		json_object_object_add(h, "command", json_object_new_string(cmd.text));
		json_object_object_add(h, "refused", NULL);
		free(reason);
		return;
	}
	json_object_object_add(h, "slurm_reason", reason ? json_object_new_string(reason) : NULL);
	json_object_object_add(h, "command", NULL);
	json_object_object_add(h, "refused", json_object_new_string(err));
	free(reason);
}

static int get_hints(struct reply *rp, struct fq_db *db, struct fq_api_params *r)
{
	struct json_object *arr;

	if (fq_api_params_only(r, ""))
		return api_fail(rp, 400, "%s", r->err);
	rp->body = json_object_new_object();
	if (api_add_section(rp, db, rp->body, "hints", "reading drain_hints", hints_sql, NULL))
		return rp->status;
	arr = json_object_object_get(rp->body, "hints");
	for (size_t i = 0; i < json_object_array_length(arr); i++)
		add_hint_command(json_object_array_get_idx(arr, i));
	return 200;
}

static const char clock_sql[] =
    "select coalesce(json_agg(x order by x.node), '[]') from ("
    " select c.node, c.status, " TS(
	"c.last_report",
	"last_report") ","
		       "  (extract(epoch from c.report_age) * 1000000)::int8 * 1000 as report_age_ns,"
		       "  c.applied_offset_ns, c.applied_error_ns, c.correction_epoch, c.peers, "
		       "c.worst_peer_error_ns"
		       " from fabriciq.clock_status c) x";

static int get_clock(struct reply *rp, struct fq_db *db, struct fq_api_params *r)
{
	if (fq_api_params_only(r, ""))
		return api_fail(rp, 400, "%s", r->err);
	rp->body = json_object_new_object();
	if (api_add_section(rp, db, rp->body, "clock", "reading clock_status", clock_sql, NULL) ||
	    api_add_section(
		rp, db, rp->body, "error_budget_ns", "reading settings",
		"select to_json(value::int8) from fabriciq.settings where name = 'clock_error_budget_ns'",
		NULL))
		return rp->status;
	return 200;
}

/* ---- dispatch ----------------------------------------------------------- */

/* Job, uid and hint data is for administrators (api.h); the fabric's
 * state is open. */
static const struct endpoint {
	const char *path;
	int (*get)(struct reply *rp, struct fq_db *db, struct fq_api_params *r);
	enum fq_api_access access;
} endpoints[] = {
    {"/api/v1/status", get_status, FQ_API_OPEN},
    {"/api/v1/nodes", get_nodes, FQ_API_OPEN},
    {"/api/v1/links", get_links, FQ_API_OPEN},
    {"/api/v1/jobs", api_get_jobs, FQ_API_ADMIN},
    {"/api/v1/events", get_events, FQ_API_OPEN},
    {"/api/v1/anomalies", get_anomalies, FQ_API_ADMIN},
    {"/api/v1/hints", get_hints, FQ_API_ADMIN},
    {"/api/v1/clock", get_clock, FQ_API_OPEN},
    {"/api/v1/topology", api_get_topology, FQ_API_OPEN},
    {"/api/v1/incidents", api_get_incidents, FQ_API_ADMIN},
};

#define JOB_PREFIX      "/api/v1/jobs/"
#define INCIDENT_PREFIX "/api/v1/incidents/"
#define SUMMARY_SUFFIX  "/summary"

/* JOB_PREFIX ID SUMMARY_SUFFIX: the length of ID; else 0. */
static size_t summary_id_len(const char *path)
{
	size_t pl = strlen(JOB_PREFIX), sl = strlen(SUMMARY_SUFFIX), n = strlen(path);

	if (n <= pl + sl || strncmp(path, JOB_PREFIX, pl) || strcmp(path + n - sl, SUMMARY_SUFFIX))
		return 0;
	return n - pl - sl;
}

static int dispatch(struct reply *rp, struct fq_db *db, const char *path, struct fq_api_params *r)
{
	int status = 0;

	if (!path)
		return api_fail(rp, 404, "no path");
	if (r->err[0])
		return api_fail(rp, 400, "%s", r->err);
	for (size_t i = 0; i < sizeof(endpoints) / sizeof(endpoints[0]) && !status; i++)
		if (!strcmp(path, endpoints[i].path))
			status = db ? endpoints[i].get(rp, db, r) : -1;
	if (!status && summary_id_len(path)) {
		char id[64];

		snprintf(id, sizeof(id), "%.*s", (int)summary_id_len(path), path + strlen(JOB_PREFIX));
		status = db ? api_get_step_summary(rp, db, r, id) : -1;
	}
	if (!status && r->owner_only)
		status = api_fail(rp, 403, "only a step's summary is served to its owner");
	if (!status && !strncmp(path, JOB_PREFIX, strlen(JOB_PREFIX)) && path[strlen(JOB_PREFIX)])
		status = db ? api_get_job(rp, db, r, path + strlen(JOB_PREFIX)) : -1;
	if (!status && !strncmp(path, INCIDENT_PREFIX, strlen(INCIDENT_PREFIX)) &&
	    path[strlen(INCIDENT_PREFIX)])
		status = db ? api_get_incident(rp, db, r, path + strlen(INCIDENT_PREFIX)) : -1;
	if (!status)
		status = api_fail(
		    rp, 404,
		    "unknown path '%.100s' (known: /api/v1/status, nodes, links, jobs, jobs/JOB[.STEP], "
		    "jobs/JOB.STEP/summary, events, anomalies, incidents, incidents/ID, hints, clock, "
		    "topology)",
		    path);
	if (status < 0)
		status = api_fail(rp, 503, "database unavailable: the controller has no database connection");
	return status;
}

enum fq_api_access fq_api_access(const char *path)
{
	if (!path)
		return FQ_API_OPEN;
	for (size_t i = 0; i < sizeof(endpoints) / sizeof(endpoints[0]); i++)
		if (!strcmp(path, endpoints[i].path))
			return endpoints[i].access;
	if (summary_id_len(path))
		return FQ_API_OWNER;
	if (!strncmp(path, JOB_PREFIX, strlen(JOB_PREFIX)) ||
	    !strncmp(path, INCIDENT_PREFIX, strlen(INCIDENT_PREFIX)))
		return FQ_API_ADMIN;
	return FQ_API_OPEN; /* unknown: a 404 tells nothing */
}

int fq_api_get_params(struct fq_db *db, const char *path, struct fq_api_params *params, char **body)
{
	struct reply rp = {.status = 500};
	const char *text;

	rp.status = dispatch(&rp, db, path, params);
	text = rp.body ? json_object_to_json_string_ext(rp.body, JSON_C_TO_STRING_PLAIN |
								     JSON_C_TO_STRING_NOSLASHESCAPE)
		       : NULL;
	*body = text ? strdup(text) : NULL;
	json_object_put(rp.body);
	if (!*body) {
		*body = strdup("{\"error\":\"out of memory\"}");
		return 503;
	}
	return rp.status;
}

int fq_api_get(struct fq_db *db, const char *path, const char *query, char **body)
{
	struct fq_api_params params = {0};
	int status;

	fq_api_params_parse(&params, query); /* a refusal: params.err, answered 400 */
	status = fq_api_get_params(db, path, &params, body);
	fq_api_params_free(&params);
	return status;
}
