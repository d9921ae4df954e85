/*
 * api_incidents: /api/v1/incidents and /api/v1/incidents/ID (controller/
 * api.h). An incident is an anomaly that is part of no other (sql/007 and
 * 011: fabriciq.incidents): a NIC's or path's link episode, a fabric
 * component blamed for a delay, or an anomaly standing alone. The list
 * gives each with what it blames, when, how long, its members and the job
 * steps (and ranks) it hit; one incident adds its evidence, its members
 * and a timeline of them.
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/api_int.h"
#include "controller/api_param.h"
#include "db/internal.h"

#define JOBS_OF(id)                                                                                          \
	"(select coalesce(json_agg(json_build_object('job_id', aj.job_id, 'step_id', aj.step_id, 'ranks', "  \
	"aj.ranks) order by aj.job_id, aj.step_id), '[]') from fabriciq.anomaly_jobs aj where "              \
	"aj.anomaly_id = " id ")"

#define INCIDENT_FIELDS                                                                                      \
	"i.id, i.kind, i.severity, i.component, i.node, i.nic, i.remote_node, i.remote_nic, i.events, " TS(  \
	    "i.first_at",                                                                                    \
	    "first") ", " TS("i.last_at",                                                                    \
			     "last") ", " TS("i.end_time",                                                   \
					     "end") ", i.end_time is null as open, (extract(epoch from "     \
						    "i.duration) * 1000000)::int8 * 1000 as "                \
						    "duration_ns, cardinality(i.member_kinds) as members, "  \
						    "i.member_kinds, i.summary, " JOBS_OF("i.id") " as jobs"

/* $1 open only, $2 limit + 1. */
static const char incidents_sql[] =
    "select coalesce(json_agg(x order by x.first_ns desc, x.id desc), '[]') from ("
    " select " INCIDENT_FIELDS " from fabriciq.incidents i"
    " where not $1::bool or i.end_time is null"
    " order by i.first_at desc, i.id desc limit $2) x";

int api_get_incidents(struct reply *rp, struct fq_db *db, struct fq_api_params *r)
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
	if (api_add_section(rp, db, rp->body, "incidents", "reading incidents", incidents_sql, &p))
		return rp->status;
	api_trim_to_limit(rp->body, "incidents", limit);
	return 200;
}

/* $1 the id: the incident, its evidence, members and timeline (its start
 * and end, each member's start and end, in time order). */
static const char incident_sql[] =
    "select to_json(x) from ("
    " select " INCIDENT_FIELDS ", a.evidence,"
    "  (select coalesce(json_agg(json_build_object('id', m.id, 'kind', m.kind, 'severity', "
    "m.severity,"
    "    'node', m.node, 'nic', m.nic, 'remote_node', m.remote_node, 'remote_nic', "
    "m.remote_nic, " TSJ("m.start_time", "start") ", " TSJ(
	"m.end_time",
	"end") ", 'summary', m.summary, 'evidence', m.evidence)"
	       "    order by m.start_time, m.id), '[]')"
	       "   from fabriciq.anomalies m where m.incident_id = a.id) as member_list,"
	       "  (select coalesce(json_agg(t order by t.time_ns, t.seq, t.anomaly_id), '[]') from ("
	       "    select (extract(epoch from a.start_time) * 1000000)::int8 * 1000 as time_ns, 0 "
	       "as "
	       "seq,"
	       "     'began' as what, a.id as anomaly_id, a.kind, a.summary"
	       "    union all select (extract(epoch from a.end_time) * 1000000)::int8 * 1000, 3, "
	       "'ended',"
	       "     a.id, a.kind, a.summary where a.end_time is not null"
	       "    union all select (extract(epoch from m.start_time) * 1000000)::int8 * 1000, 1,"
	       "     'member began', m.id, m.kind, m.summary from fabriciq.anomalies m where "
	       "m.incident_id "
	       "= a.id"
	       "    union all select (extract(epoch from m.end_time) * 1000000)::int8 * 1000, 2,"
	       "     'member ended', m.id, m.kind, m.summary from fabriciq.anomalies m"
	       "     where m.incident_id = a.id and m.end_time is not null) t) as timeline"
	       " from fabriciq.incidents i join fabriciq.anomalies a on a.id = i.id where i.id = "
	       "$1) x";

int api_get_incident(struct reply *rp, struct fq_db *db, struct fq_api_params *r, const char *id)
{
	struct fq_db_params p = {0};
	char *end;
	long long v;
	int rc;

	if (fq_api_params_only(r, ""))
		return api_fail(rp, 400, "%s", r->err);
	errno = 0;
	v = strtoll(id, &end, 10);
	if (!*id || *end || errno || v <= 0)
		return api_fail(rp, 400, "incident id must be a positive integer, not '%.40s'", id);
	fq_db_param_i64(&p, v);
	rc = api_query_json(db, "reading an incident", incident_sql, &p, &rp->body);
	if (rc < 0)
		return api_db_fail(rp, db);
	if (rc == 1)
		return api_fail(rp, 404,
				"no incident %lld (an anomaly that is part of an incident is not one)", v);
	return 200;
}
