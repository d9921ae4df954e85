/*
 * api_jobs: the JSON API's job endpoints (controller/api.h): the recent job
 * steps with their efficiency, the job report (steps, ranks, lanes,
 * throughput over time, incidents, anomalies, failovers, the NCCL profiler's
 * collectives, QPs and peers) and a step's
 * summary for its owner. The rules of controller/api.c hold: every value
 * checked in C and bound, each section one statement building its JSON.
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/api_int.h"
#include "controller/api_param.h"
#include "db/internal.h"

#define EFFICIENCY_SQL                                                                                       \
	"json_build_object(" TSJ("e.first_interval", "first_interval") ", " TSJ(                             \
	    "e.last_interval",                                                                               \
	    "last_interval") ","                                                                             \
			     "  'lanes', e.lanes, 'bytes', e.bytes, 'achieved_gbps', e.achieved_gbps, "      \
			     "'best_gbps', e.best_gbps,"                                                     \
			     "  'efficiency', e.efficiency, 'degraded_share', e.degraded_share,"             \
			     "  'median_lane_p99_us', e.median_lane_p99_us, 'slowest_lane_p99_us', "         \
			     "e.slowest_lane_p99_us,"                                                        \
			     "  'slowest_lanes', e.slowest_lanes, 'anomalies', e.anomalies, 'failovers', "   \
			     "e.failovers)"

#define STEP_COLUMNS                                                                                         \
	"s.job_id, s.step_id, j.uid, s.mode, s.node_count, s.task_count, " TS(                               \
	    "s.start_time",                                                                                  \
	    "start") ", " TS("s.end_time",                                                                   \
			     "end") ", s.exit_status, s.end_time is null as running, " EFFICIENCY_SQL        \
				    " as efficiency"

/* $1 running only (bool), $2 limit + 1. */
static const char jobs_sql[] =
    "select coalesce(json_agg(x order by x.start_ns desc, x.job_id desc, x.step_id desc), '[]') from ("
    " select " STEP_COLUMNS " from (select * from fabriciq.steps st where not $1::bool or st.end_time is null"
    "       order by st.start_time desc, st.job_id desc, st.step_id desc limit $2) s"
    " join fabriciq.jobs j on j.job_id = s.job_id"
    " cross join lateral fabriciq.step_efficiency(s.job_id, s.step_id) e) x";

int api_get_jobs(struct reply *rp, struct fq_db *db, struct fq_api_params *r)
{
	struct fq_db_params p = {0};
	uint64_t limit;
	bool running;

	if (fq_api_params_only(r, "limit, running") || fq_api_param_uint(r, "limit", 20, 1, 1000, &limit) ||
	    fq_api_param_bool(r, "running", &running))
		return api_fail(rp, 400, "%s", r->err);
	fq_db_param_bool(&p, running);
	fq_db_param_u64(&p, limit + 1);
	rp->body = json_object_new_object();
	if (api_add_section(rp, db, rp->body, "jobs", "reading job steps", jobs_sql, &p))
		return rp->status;
	api_trim_to_limit(rp->body, "jobs", limit);
	return 200;
}

/* ---- the job report ------------------------------------------------------ */

/* Every section below takes $1 job, $2 step. */
static const char job_sql[] =
    "select json_build_object('job_id', j.job_id, 'uid', j.uid, " TSJ("j.first_seen", "first_seen") ", " TSJ(
	"j.last_seen", "last_seen") ")"
				    " from fabriciq.jobs j where j.job_id = $1";

/* $1 job, $2 step or NULL: the step ids to report. */
static const char step_ids_sql[] = "select json_agg(s.step_id order by s.step_id) from fabriciq.steps s"
				   " where s.job_id = $1 and ($2::int8 is null or s.step_id = $2)";

static const char step_sql[] = "select row_to_json(x) from (select " STEP_COLUMNS
			       " from fabriciq.steps s join fabriciq.jobs j on j.job_id = s.job_id"
			       " cross join lateral fabriciq.step_efficiency(s.job_id, s.step_id) e"
			       " where s.job_id = $1 and s.step_id = $2) x";

static const char ranks_sql[] = "select coalesce(json_agg(x order by x.rank), '[]') from ("
				" select r.rank, r.local_rank, r.node, r.nic, r.pid from fabriciq.ranks r"
				" where r.job_id = $1 and r.step_id = $2) x";

/*
 * Per lane (src rank, dst rank, lane): its NICs, bytes, and delays as the
 * view defines them: a lane's p50/p99 are the medians of its synchronised
 * windows' p50/p99; degraded windows exceed degraded_owd_factor x the
 * step's median window p99. $3 is the number of lanes listed (in rank
 * order); the five slowest are listed apart.
 */
static const char lanes_sql[] =
    "with w as (select * from fabriciq.lane_windows lw where lw.job_id = $1 and lw.step_id = $2),"
    " med as (select percentile_cont(0.5) within group (order by w.owd_p99_ns) as p99"
    "  from w where w.synchronised and w.owd_p99_ns is not null),"
    " f as (select value::float8 as factor from fabriciq.settings where name = 'degraded_owd_factor'),"
    " l as (select w.src_rank, w.dst_rank, w.lane, min(w.lane_kind) as lane_kind,"
    "  min(w.src_node) as src_node, min(w.src_nic) as src_nic, min(w.dst_node) as dst_node,"
    "  min(w.dst_nic) as dst_nic, sum(w.bytes)::int8 as bytes, sum(w.chunks)::int8 as chunks,"
    "  sum(w.messages)::int8 as messages, count(*)::int as windows,"
    "  round(percentile_cont(0.5) within group (order by w.owd_p50_ns) filter (where w.synchronised))::int8"
    "   as owd_p50_ns,"
    "  round(percentile_cont(0.5) within group (order by w.owd_p99_ns) filter (where w.synchronised))::int8"
    "   as owd_p99_ns,"
    "  max(w.owd_p99_ns) filter (where w.synchronised) as owd_p99_max_ns,"
    "  (count(*) filter (where w.synchronised and w.owd_p99_ns > med.p99 * f.factor))::int"
    "   as degraded_windows,"
    "  sum(w.tcp_retrans)::int8 as tcp_retrans, sum(w.tcp_ce)::int8 as tcp_ce"
    "  from w, med, f group by w.src_rank, w.dst_rank, w.lane)"
    " select json_build_object('lanes_total', (select count(*) from l),"
    "  'lanes', (select coalesce(json_agg(x order by x.src_rank, x.dst_rank, x.lane), '[]') from"
    "    (select * from l order by l.src_rank, l.dst_rank, l.lane limit $3) x),"
    "  'slowest_lanes', (select coalesce(json_agg(y order by y.owd_p99_ns desc, y.src_rank, y.dst_rank,"
    "    y.lane), '[]') from (select * from l where l.owd_p99_ns is not null"
    "    order by l.owd_p99_ns desc, l.src_rank, l.dst_rank, l.lane limit 5) y))";

/*
 * Throughput over time: the step's reporting intervals (lane windows with
 * the same start), each its own bucket, or merged into buckets of $3
 * seconds; a step of more than 360 intervals gets 360 buckets over its span
 * (bucket_s then says their width; null: one bucket per interval), so a
 * long step stays a short answer. bytes_per_s is a bucket's bytes over its intervals' time, as
 * job_efficiency computes achieved_gbps.
 */
static const char throughput_sql[] =
    "with iv as (select lw.interval_start as s, max(lw.interval_end) as e, sum(lw.bytes)::int8 as b,"
    "  count(*)::int as n, max(lw.owd_p99_ns) filter (where lw.synchronised) as p99"
    "  from fabriciq.lane_windows lw where lw.job_id = $1 and lw.step_id = $2 group by lw.interval_start),"
    " sp as (select min(iv.s) as t0, case when $3::float8 is not null then $3::float8"
    "  when count(*) > 360 then extract(epoch from max(iv.e) - min(iv.s))::float8 / 360 end as w"
    "  from iv),"
    " bk as (select case when sp.w > 0 then floor(extract(epoch from iv.s - sp.t0)::float8 / sp.w)"
    "  else extract(epoch from iv.s) end as k, iv.* from iv, sp)"
    " select json_build_object('bucket_s', (select round(sp.w::numeric, 3) from sp),"
    "  'buckets', (select coalesce(json_agg(x order by x.start_ns), '[]') from ("
    "   select " TS("min(bk.s)", "start") ", " TS(
	"max(bk.e)",
	"end") ","
	       "    round(sum(extract(epoch from bk.e - bk.s))::numeric, 6) as seconds, sum(bk.b)::int8 as "
	       "bytes,"
	       "    round(sum(bk.b) / nullif(sum(extract(epoch from bk.e - bk.s)), 0)) as bytes_per_s,"
	       "    round(sum(bk.b) * 8 / nullif(sum(extract(epoch from bk.e - bk.s)), 0) / 1e9, 3) as gbps,"
	       "    sum(bk.n)::int as windows, max(bk.p99) as owd_p99_max_ns"
	       "   from bk group by bk.k) x))";

/* The step's incidents (sql/007: job_incidents), the first section of its
 * report: each with its DOWNs, first and last, duration, the ranks it
 * touched, its impact (Gbit/s before and during it, lanes failed over)
 * and the anomalies that are part of it. */
static const char step_incidents_sql[] =
    "select coalesce(json_agg(x order by x.first_ns, x.id), '[]') from ("
    " select ji.incident_id as id, ji.kind, ji.severity, ji.node, ji.nic, ji.remote_node, ji.remote_nic,"
    "  (select i.component from fabriciq.anomalies i where i.id = ji.incident_id) as component,"
    "  ji.events, " TS("ji.first_at", "first") ", " TS("ji.last_at", "last") ", " TS(
	"ji.end_time", "end") ", ji.end_time is null as open,"
			      "  (extract(epoch from ji.duration) * 1000000)::int8 * 1000 as duration_ns,"
			      "  ji.ranks, ji.summary, ji.gbps_before, ji.gbps_during, ji.lanes_failed_over,"
			      "  ji.outages,"
			      "  (select coalesce(json_agg(json_build_object('id', m.id, 'kind', m.kind, "
			      "'summary', m.summary) order by m.start_time, m.id), '[]')"
			      "   from fabriciq.anomalies m where m.incident_id = ji.incident_id) as members"
			      " from fabriciq.job_incidents ji where ji.job_id = $1 and ji.step_id = $2) x";

static const char step_anomalies_sql[] =
    "select coalesce(json_agg(x order by x.start_ns, x.id), '[]') from ("
    " select ja.anomaly_id as id, ja.kind, ja.severity, " TS("ja.start_time", "start") ", " TS(
	"ja.end_time",
	"end") ", ja.end_time is null as open,"
	       "  (extract(epoch from ja.duration) * 1000000)::int8 * 1000 as duration_ns,"
	       "  ja.node, ja.nic, ja.remote_node, ja.remote_nic, ja.summary, ja.evidence, ja.ranks,"
	       "  (select i.component from fabriciq.anomalies i where i.id = ja.anomaly_id) as component,"
	       "  (select coalesce(json_agg(json_build_object('rank', r.rank, 'node', r.node, 'nic', r.nic)"
	       "    order by r.rank), '[]') from fabriciq.ranks r"
	       "   where r.job_id = ja.job_id and r.step_id = ja.step_id and r.rank = any (ja.ranks)) as "
	       "rank_places"
	       " from fabriciq.job_anomalies ja where ja.job_id = $1 and ja.step_id = $2) x";

/* One entry per lane outage (sql/006: both ends' reports merged). */
static const char failovers_sql[] =
    "select coalesce(json_agg(x order by x.time_ns, x.src_rank, x.dst_rank, x.lane), '[]') from ("
    " select " TS("o.down_at", "time") ", " TS(
	"o.back_at",
	"back") ", o.out_ns, o.src_rank, o.dst_rank, o.lane,"
		"  (select r.node from fabriciq.ranks r where r.job_id = o.job_id and r.step_id = o.step_id"
		"    and r.rank = o.src_rank) as src_node,"
		"  (select r.node from fabriciq.ranks r where r.job_id = o.job_id and r.step_id = o.step_id"
		"    and r.rank = o.dst_rank) as dst_node,"
		"  o.src_nic, o.dst_nic, o.cause, o.seen_by, o.detect_ns, o.bytes_resent"
		" from fabriciq.lane_outages o where o.job_id = $1 and o.step_id = $2) x";

/* The NCCL profiler plugin's section (sql/015: step_profiler): per
 * collective its ops and bus bandwidth, bus bandwidth over time, the
 * slowest QPs and peers; null for a step without profiler data. */
static const char profiler_sql[] = "select fabriciq.step_profiler($1, $2)";

/*
 * QoS between jobs: the step's network class (null: none, its lanes
 * unmarked) and what pacing gave its lanes (sending ends' windows): how
 * many lanes were ever capped, the lowest and the median cap a window
 * ended with (bytes/s; null: never paced), the time capped summed over
 * the lanes (lane-seconds) and the most of any one lane. Of those, what
 * the controller gave (rates between classes, schema 19): how many lanes
 * ever had a rate from it, the lowest and the median a window ended
 * with, the time they had one (lane-seconds) and the most of any lane.
 */
static const char qos_sql[] =
    "with w as (select lw.src_rank, lw.dst_rank, lw.lane, lw.pacing_rate, lw.throttled_ns,"
    "  lw.assigned_rate, lw.assigned_ns"
    "  from fabriciq.lane_windows lw where lw.job_id = $1 and lw.step_id = $2"
    "  and (lw.pacing_rate is not null or lw.throttled_ns is not null"
    "   or lw.assigned_rate is not null or lw.assigned_ns is not null)),"
    " l as (select sum(w.throttled_ns) as t from w group by w.src_rank, w.dst_rank, w.lane),"
    " a as (select sum(w.assigned_ns) as t from w where w.assigned_ns is not null"
    "  group by w.src_rank, w.dst_rank, w.lane)"
    " select json_build_object('class', (select s.net_class from fabriciq.steps s"
    "  where s.job_id = $1 and s.step_id = $2),"
    "  'paced_lanes', (select count(*) from l where l.t is not null)::int,"
    "  'rate_min_bytes_per_s', (select min(w.pacing_rate) from w),"
    "  'rate_median_bytes_per_s', (select round(percentile_cont(0.5) within group (order by "
    "w.pacing_rate))::int8"
    "   from w where w.pacing_rate is not null),"
    "  'throttled_lane_s', (select coalesce(sum(l.t), 0) / 1e9 from l),"
    "  'throttled_max_s', (select coalesce(max(l.t), 0) / 1e9 from l),"
    "  'given_lanes', (select count(*) from a)::int,"
    "  'given_rate_min_bytes_per_s', (select min(w.assigned_rate) from w),"
    "  'given_rate_median_bytes_per_s', (select round(percentile_cont(0.5) within group (order by "
    "w.assigned_rate))::int8"
    "   from w where w.assigned_rate is not null),"
    "  'given_lane_s', (select coalesce(sum(a.t), 0) / 1e9 from a),"
    "  'given_max_s', (select coalesce(max(a.t), 0) / 1e9 from a))";

/* The report of one step: its row and its sections. */
static int step_report(struct reply *rp, struct fq_db *db, uint64_t job, uint64_t step, uint64_t lanes,
		       const char *bucket, struct json_object **out)
{
	struct fq_db_params p = {0};
	struct json_object *s, *l;
	int rc;

	*out = NULL;
	fq_db_param_u64(&p, job);
	fq_db_param_u64(&p, step);
	rc = api_query_json(db, "reading the step", step_sql, &p, &s);
	if (rc < 0)
		return api_db_fail(rp, db);
	if (rc > 0) /* ended between the two statements: just not there */
		return 0;
	if (api_add_section(rp, db, s, "incidents", "reading job_incidents", step_incidents_sql, &p) ||
	    api_add_section(rp, db, s, "ranks", "reading ranks", ranks_sql, &p))
		goto fail;
	if (api_add_section(rp, db, s, "anomalies", "reading job_anomalies", step_anomalies_sql, &p) ||
	    api_add_section(rp, db, s, "failovers", "reading failover_events", failovers_sql, &p) ||
	    api_add_section(rp, db, s, "profiler", "reading profiler telemetry", profiler_sql, &p) ||
	    api_add_section(rp, db, s, "qos", "reading the step's class and pacing", qos_sql, &p))
		goto fail;
	fq_db_param_u64(&p, lanes);
	if (api_query_json(db, "reading lanes", lanes_sql, &p, &l) < 0) {
		api_db_fail(rp, db);
		goto fail;
	}
	json_object_object_foreach(l, key, val) json_object_object_add(s, key, json_object_get(val));
	json_object_put(l);
	p.n = 2;
	fq_db_param_str(&p, bucket);
	if (api_add_section(rp, db, s, "throughput", "reading throughput", throughput_sql, &p))
		goto fail;
	*out = s;
	return 0;
fail:
	json_object_put(s);
	return rp->status;
}

int api_get_job(struct reply *rp, struct fq_db *db, struct fq_api_params *r, const char *id)
{
	struct fq_db_params p = {0};
	struct json_object *job, *ids, *steps;
	uint64_t job_id, step_id = 0, lanes, bucket;
	bool has_step;
	int rc;

	if (!fq_api_parse_job_step(id, &job_id, &has_step, &step_id))
		return api_fail(
		    rp, 400,
		    "job must be JOB or JOB.STEP with integer ids up to 4294967295 (or STEP batch, "
		    "extern, interactive), not '%.64s'",
		    id);
	if (fq_api_params_only(r, "lanes, bucket") ||
	    fq_api_param_uint(r, "lanes", 1000, 0, 100000, &lanes) ||
	    fq_api_param_uint(r, "bucket", 0, 1, 86400, &bucket))
		return api_fail(rp, 400, "%s", r->err);
	fq_db_param_u64(&p, job_id);
	rc = api_query_json(db, "reading the job", job_sql, &p, &job);
	if (rc < 0)
		return api_db_fail(rp, db);
	if (rc > 0)
		return api_fail(rp, 404, "job %" PRIu64 " is not known to fabriciq", job_id);
	if (has_step)
		fq_db_param_u64(&p, step_id);
	else
		fq_db_param_str(&p, NULL);
	rc = api_query_json(db, "reading the job's steps", step_ids_sql, &p, &ids);
	if (rc < 0) {
		json_object_put(job);
		return api_db_fail(rp, db);
	}
	if (rc > 0 && has_step) {
		json_object_put(job);
		return api_fail(rp, 404, "job %" PRIu64 " has no step %" PRIu64 " known to fabriciq", job_id,
				step_id);
	}
	steps = json_object_new_array();
	json_object_object_add(job, "steps", steps);
	rp->body = job;
	for (size_t i = 0; ids && i < json_object_array_length(ids); i++) {
		struct json_object *s;

		if (step_report(rp, db, job_id,
				(uint64_t)json_object_get_int64(json_object_array_get_idx(ids, i)), lanes,
				fq_api_param(r, "bucket"), &s))
			break;
		if (s)
			json_object_array_add(steps, s);
	}
	json_object_put(ids);
	return rp->status == 503 ? 503 : 200;
}

/* ---- a step's summary (its owner's job-end line) ------------------------- */

/* $1 job, $2 step, $3 the only uid whose step may be read (NULL: any). */
static const char summary_sql[] =
    "select json_build_object('job_id', s.job_id, 'step_id', s.step_id, 'mode', s.mode,"
    " 'node_count', s.node_count, 'nodes_ended', s.nodes_ended,"
    " 'complete', s.node_count > 0 and s.nodes_ended >= s.node_count, " TSJ(
	"s.end_time",
	"end_time") ","
		    " 'exit_status', s.exit_status, 'incidents', s.incidents, 'anomalies', s.anomalies,"
		    " 'failovers', s.failovers)"
		    " from fabriciq.step_summary($1, $2) s where $3::int8 is null or s.uid = $3";

/*
 * /api/v1/jobs/JOB.STEP/summary: the counts the job-end line prints
 * (spank_fabriciq(8)). Served to the step's owner as well as to
 * administrators (FQ_API_OWNER): another user's step is answered as an
 * unknown one, so the answer tells nothing about whose jobs exist.
 */
int api_get_step_summary(struct reply *rp, struct fq_db *db, struct fq_api_params *r, const char *id)
{
	struct fq_db_params p = {0};
	uint64_t job_id, step_id = 0;
	bool has_step;
	int rc;

	if (!fq_api_parse_job_step(id, &job_id, &has_step, &step_id) || !has_step)
		return api_fail(
		    rp, 400,
		    "a summary is of one step: JOB.STEP with integer ids up to 4294967295 (or STEP "
		    "batch, extern, interactive), not '%.64s'",
		    id);
	if (fq_api_params_only(r, ""))
		return api_fail(rp, 400, "%s", r->err);
	fq_db_param_u64(&p, job_id);
	fq_db_param_u64(&p, step_id);
	if (r->owner_only)
		fq_db_param_u64(&p, r->owner_uid);
	else
		fq_db_param_str(&p, NULL);
	rc = api_query_json(db, "reading the step's summary", summary_sql, &p, &rp->body);
	if (rc < 0)
		return api_db_fail(rp, db);
	if (rc > 0)
		return api_fail(rp, 404, "job %" PRIu64 " has no step %" PRIu64 " known to fabriciq", job_id,
				step_id);
	return 200;
}
