/*
 * write: upserts for topology and Slurm jobs, anomalies and drain hints.
 * These are low-rate (per agent hello, per step, per anomaly), so each is
 * one parameterised statement: values never become SQL text.
 */
#include "db/internal.h"

#include <arpa/inet.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static const char *const nic_kinds[] = {"unknown", "ethernet", "roce", "infiniband"};
static const char *const link_states[] = {"unknown", "up", "down"};
static const char *const severities[] = {"info", "warning", "critical"};

/* A string argument of one call: checked before anything is sent. */
struct str_field {
	const char *name, *value;
	bool required;
};

static int check_fields(struct fq_db *db, const char *what, const struct str_field *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!f[i].value && f[i].required) {
			fq_db_set_error(db, "%s: %s is missing", what, f[i].name);
			return -EINVAL;
		}
		if (f[i].value && !fq_utf8_valid(f[i].value)) {
			fq_db_set_error(db, "%s: %s is not valid UTF-8", what, f[i].name);
			return -EILSEQ;
		}
	}
	return 0;
}

/* CHECK_FIELDS(db, what, {"name", value, required}, ...) */
#define CHECK_FIELDS(db, what, ...)                                                                          \
	check_fields(db, what, (const struct str_field[]){__VA_ARGS__},                                      \
		     sizeof((const struct str_field[]){__VA_ARGS__}) / sizeof(struct str_field))

int fq_db_upsert_node(struct fq_db *db, const struct fq_db_node *n)
{
	struct fq_db_params p = {0};
	int rc = CHECK_FIELDS(db, "node", {"name", n->name, true}, {"agent_version", n->agent_version, false},
			      {"boot_id", n->boot_id, false});

	if (rc)
		return rc;
	fq_db_param_str(&p, n->name);
	fq_db_param_str(&p, n->agent_version);
	fq_db_param_str(&p, n->boot_id);
	fq_db_param_ts(&p, n->seen_ns);
	return fq_db_exec(db, "upserting a node",
			  "insert into fabriciq.nodes (name, agent_version, boot_id, first_seen, last_seen) "
			  "values ($1, $2, $3, $4, $4) on conflict (name) do update set "
			  "agent_version = coalesce(excluded.agent_version, nodes.agent_version), "
			  "boot_id = coalesce(excluded.boot_id, nodes.boot_id), "
			  "last_seen = greatest(nodes.last_seen, excluded.last_seen)",
			  &p);
}

int fq_db_upsert_nic(struct fq_db *db, const struct fq_db_nic *n)
{
	struct fq_db_params p = {0};
	int rc = CHECK_FIELDS(db, "nic", {"node", n->node, true}, {"name", n->name, true},
			      {"address", n->address, false}, {"guid", n->guid, false});

	if (rc)
		return rc;
	if ((unsigned)n->kind > FQ_DB_NIC_INFINIBAND) {
		fq_db_set_error(db, "nic %s:%s: kind %d is out of range", n->node, n->name, (int)n->kind);
		return -EINVAL;
	}
	fq_db_param_str(&p, n->node);
	fq_db_param_str(&p, n->name);
	fq_db_param_str(&p, n->address);
	fq_db_param_u64(&p, n->rail);
	fq_db_param_u64(&p, n->speed_mbps);
	fq_db_param_str(&p, nic_kinds[n->kind]);
	fq_db_param_bool(&p, n->front_end);
	fq_db_param_str(&p, n->guid);
	fq_db_param_ts(&p, n->seen_ns);
	return fq_db_exec(
	    db, "upserting a NIC",
	    "insert into fabriciq.nics (node, name, address, rail, speed_mbps, kind, front_end, guid, "
	    "first_seen, last_seen) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) "
	    "on conflict (node, name) do update set address = excluded.address, rail = excluded.rail, "
	    "speed_mbps = excluded.speed_mbps, kind = excluded.kind, front_end = excluded.front_end, "
	    "guid = excluded.guid, last_seen = greatest(nics.last_seen, excluded.last_seen)",
	    &p);
}

int fq_db_upsert_link(struct fq_db *db, const struct fq_db_link *l)
{
	struct fq_db_params p = {0};
	int rc = CHECK_FIELDS(db, "link", {"src_node", l->src_node, true}, {"src_nic", l->src_nic, true},
			      {"dst_node", l->dst_node, true}, {"dst_nic", l->dst_nic, true});

	if (rc)
		return rc;
	if ((unsigned)l->state > FQ_DB_LINK_DOWN) {
		fq_db_set_error(db, "link: state %d is out of range", (int)l->state);
		return -EINVAL;
	}
	fq_db_param_str(&p, l->src_node);
	fq_db_param_str(&p, l->src_nic);
	fq_db_param_str(&p, l->dst_node);
	fq_db_param_str(&p, l->dst_nic);
	fq_db_param_str(&p, link_states[l->state]);
	fq_db_param_ts(&p, l->state_since_ns);
	fq_db_param_ts(&p, l->seen_ns);
	return fq_db_exec(
	    db, "upserting a link",
	    "insert into fabriciq.links (src_node, src_nic, dst_node, dst_nic, state, state_since, "
	    "first_seen, last_seen) values ($1, $2, $3, $4, $5, $6, $7, $7) "
	    "on conflict (src_node, src_nic, dst_node, dst_nic) do update set "
	    "state_since = case when links.state = excluded.state then links.state_since "
	    "else excluded.state_since end, state = excluded.state, "
	    "last_seen = greatest(links.last_seen, excluded.last_seen)",
	    &p);
}

int fq_db_upsert_step(struct fq_db *db, const struct fq_db_step *s)
{
	struct fq_db_params p = {0};
	int rc = CHECK_FIELDS(db, "step", {"mode", s->mode, false}, {"net_class", s->net_class, false});

	if (rc)
		return rc;
	fq_db_param_u64(&p, s->job_id);
	fq_db_param_u64(&p, s->step_id);
	fq_db_param_u64(&p, s->uid);
	fq_db_param_str(&p, s->mode); /* NULL: a StepEnd without its StepStart keeps the mode */
	fq_db_param_u64(&p, s->node_count);
	fq_db_param_u64(&p, s->task_count);
	fq_db_param_ts(&p, s->start_ns);
	fq_db_param_ts_or_null(&p, s->end_ns);
	if (s->has_exit_status)
		fq_db_param_i64(&p, s->exit_status);
	else
		fq_db_param_str(&p, NULL);
	fq_db_param_str(&p, s->net_class && *s->net_class ? s->net_class : NULL);
	/* One statement, so the job and its step appear together. */
	return fq_db_exec(
	    db, "upserting a step",
	    "with job as (insert into fabriciq.jobs (job_id, uid, first_seen, last_seen) "
	    "values ($1::int8, $3::int8, $7::timestamptz, coalesce($8::timestamptz, $7::timestamptz)) "
	    "on conflict (job_id) do update set "
	    "last_seen = greatest(jobs.last_seen, excluded.last_seen) returning job_id) "
	    "insert into fabriciq.steps (job_id, step_id, mode, node_count, task_count, start_time, "
	    "end_time, exit_status, net_class) select job_id, $2::int8, coalesce($4::text, 'monitor'), "
	    "$5::int, "
	    "$6::int, "
	    "$7::timestamptz, $8::timestamptz, $9::int, $10::text from job "
	    "on conflict (job_id, step_id) do update set mode = coalesce($4::text, steps.mode), "
	    "net_class = coalesce($10::text, steps.net_class), "
	    "node_count = greatest(steps.node_count, excluded.node_count), "
	    "task_count = greatest(steps.task_count, excluded.task_count), "
	    "start_time = least(steps.start_time, excluded.start_time), "
	    "end_time = coalesce(excluded.end_time, steps.end_time), "
	    "exit_status = coalesce(excluded.exit_status, steps.exit_status)",
	    &p);
}

int fq_db_step_node_end(struct fq_db *db, uint64_t job_id, uint32_t step_id, const char *node, int64_t end_ns)
{
	struct fq_db_params p = {0};
	int rc = CHECK_FIELDS(db, "step end", {"node", node, true});
	PGresult *res;

	if (rc)
		return rc;
	fq_db_param_u64(&p, job_id);
	fq_db_param_u64(&p, step_id);
	fq_db_param_str(&p, node);
	fq_db_param_ts(&p, end_ns);
	res = fq_db_run(db, "recording a node's step end",
			"insert into fabriciq.step_node_ends (job_id, step_id, node, end_time) "
			"values ($1::int8, $2::int8, $3::text, $4::timestamptz) "
			"on conflict (job_id, step_id, node) do nothing",
			&p, &rc);
	if (!res)
		return rc;
	rc = atoi(PQcmdTuples(res)) == 1;
	PQclear(res);
	return rc;
}

int fq_db_upsert_rank(struct fq_db *db, const struct fq_db_rank *r)
{
	struct fq_db_params p = {0};
	int rc = CHECK_FIELDS(db, "rank", {"node", r->node, true}, {"nic", r->nic, false});

	if (rc)
		return rc;
	fq_db_param_u64(&p, r->job_id);
	fq_db_param_u64(&p, r->step_id);
	fq_db_param_u64(&p, r->rank);
	fq_db_param_u64(&p, r->local_rank);
	fq_db_param_str(&p, r->node);
	fq_db_param_str(&p, r->nic);
	fq_db_param_i64(&p, r->pid);
	/* Without a nic: the NICs its lanes already stored used on its node
	 * (its peers' agents may report lanes before its own agent registers
	 * the step); lane_windows_job_idx finds the step's lanes. */
	return fq_db_exec(
	    db, "upserting a rank",
	    "insert into fabriciq.ranks (job_id, step_id, rank, local_rank, node, nic, pid) "
	    "values ($1, $2, $3, $4, $5, coalesce($6, (select string_agg(distinct x, ',' order by x) from ("
	    "  select src_nic from fabriciq.lane_windows"
	    "   where job_id = $1 and step_id = $2 and src_rank = $3 and src_node = $5"
	    "  union select dst_nic from fabriciq.lane_windows"
	    "   where job_id = $1 and step_id = $2 and dst_rank = $3 and dst_node = $5) as t(x))), $7) "
	    "on conflict (job_id, step_id, rank) do update set "
	    "local_rank = excluded.local_rank, node = excluded.node, "
	    "nic = coalesce(excluded.nic, ranks.nic), pid = excluded.pid",
	    &p);
}

/* "{1,2,3}": an int[] literal. Returns a malloc'd string or NULL. */
static char *int_array(const uint32_t *v, size_t n)
{
	size_t cap = 3 + n * 11, len = 0;
	char *s = malloc(cap);

	if (!s)
		return NULL;
	s[len++] = '{';
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(s + len, cap - len, "%s%" PRIu32, i ? "," : "", v[i]);
	snprintf(s + len, cap - len, "}");
	return s;
}

int fq_db_attach_anomaly(struct fq_db *db, int64_t id, const struct fq_db_anomaly_job *jobs, size_t njobs)
{
	int rc = 0;

	for (size_t i = 0; i < njobs && !rc; i++) {
		struct fq_db_params p = {0};
		char *ranks = int_array(jobs[i].ranks, jobs[i].nranks);

		if (!ranks) {
			fq_db_set_error(db, "attaching anomaly %" PRId64 ": out of memory", id);
			return -ENOMEM;
		}
		fq_db_param_i64(&p, id);
		fq_db_param_u64(&p, jobs[i].job_id);
		fq_db_param_u64(&p, jobs[i].step_id);
		fq_db_param_str(&p, ranks);
		/* Merged, sorted, without duplicates; a member's on its incident. */
		rc = fq_db_exec(db, "attaching an anomaly to a job",
				"insert into fabriciq.anomaly_jobs (anomaly_id, job_id, step_id, ranks) "
				"select coalesce(a.incident_id, a.id), $2, $3, "
				"array(select distinct unnest($4::int[]) order by 1) "
				"from fabriciq.anomalies a where a.id = $1 "
				"on conflict (job_id, step_id, anomaly_id) do update set ranks = array("
				"select distinct unnest(anomaly_jobs.ranks || excluded.ranks) order by 1)",
				&p);
		free(ranks);
	}
	return rc;
}

int fq_db_insert_anomaly(struct fq_db *db, const struct fq_db_anomaly *a,
			 const struct fq_db_anomaly_job *jobs, size_t njobs, int64_t *id)
{
	struct fq_db_params p = {0};
	PGresult *res;
	int rc = CHECK_FIELDS(db, "anomaly", {"kind", a->kind, true}, {"summary", a->summary, true},
			      {"node", a->node, false}, {"nic", a->nic, false},
			      {"remote_node", a->remote_node, false}, {"remote_nic", a->remote_nic, false},
			      {"evidence_json", a->evidence_json, false}, {"component", a->component, false});

	if (rc)
		return rc;
	if ((unsigned)a->severity > FQ_DB_SEV_CRITICAL) {
		fq_db_set_error(db, "anomaly: severity %d is out of range", (int)a->severity);
		return -EINVAL;
	}
	fq_db_param_str(&p, a->kind);
	fq_db_param_str(&p, severities[a->severity]);
	fq_db_param_ts(&p, a->start_ns);
	fq_db_param_ts_or_null(&p, a->end_ns);
	fq_db_param_str(&p, a->node);
	fq_db_param_str(&p, a->nic);
	fq_db_param_str(&p, a->remote_node);
	fq_db_param_str(&p, a->remote_nic);
	fq_db_param_str(&p, a->summary);
	fq_db_param_str(&p, a->evidence_json ? a->evidence_json : "{}");
	if (a->incident_id)
		fq_db_param_i64(&p, a->incident_id);
	else
		fq_db_param_str(&p, NULL);
	fq_db_param_str(&p, a->component);
	rc = fq_db_exec(db, "inserting an anomaly", "begin", NULL);
	if (rc)
		return rc;
	res = fq_db_run(db, "inserting an anomaly",
			"insert into fabriciq.anomalies (kind, severity, start_time, end_time, node, nic, "
			"remote_node, remote_nic, summary, evidence, incident_id, component) "
			"values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) returning id",
			&p, &rc);
	if (!res)
		goto rollback;
	*id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	rc = fq_db_attach_anomaly(db, *id, jobs, njobs);
	if (rc)
		goto rollback;
	return fq_db_exec(db, "inserting an anomaly: commit", "commit", NULL);

rollback:
	PQclear(PQexec(db->conn, "rollback"));
	return rc;
}

int fq_db_set_incident(struct fq_db *db, int64_t id, int64_t incident)
{
	struct fq_db_params p = {0};

	fq_db_param_i64(&p, id);
	fq_db_param_i64(&p, incident);
	return fq_db_exec(
	    db, "making an anomaly an incident's member",
	    "with m as (update fabriciq.anomalies set incident_id = $2 where id = $1 and id <> $2"
	    "  returning id)"
	    " insert into fabriciq.anomaly_jobs (anomaly_id, job_id, step_id, ranks)"
	    " select $2, j.job_id, j.step_id, j.ranks from fabriciq.anomaly_jobs j join m on m.id = "
	    "j.anomaly_id"
	    " on conflict (job_id, step_id, anomaly_id) do update set ranks = array(select distinct r"
	    "  from unnest(anomaly_jobs.ranks || excluded.ranks) r order by r)",
	    &p);
}

int fq_db_update_anomaly(struct fq_db *db, int64_t id, unsigned events, int64_t last_ns, const char *summary,
			 const char *component)
{
	struct fq_db_params p = {0};
	PGresult *res;
	int rc = CHECK_FIELDS(db, "anomaly update", {"summary", summary, true});

	if (rc)
		return rc;
	fq_db_param_i64(&p, id);
	fq_db_param_i64(&p, events);
	fq_db_param_ts(&p, last_ns);
	fq_db_param_str(&p, summary);
	fq_db_param_str(&p, component && *component ? component : NULL);
	res =
	    fq_db_run(db, "updating an anomaly",
		      "update fabriciq.anomalies set events = $2, last_event = greatest(last_event, $3), "
		      "summary = $4, component = coalesce($5, component) where id = $1 and end_time is null",
		      &p, &rc);
	if (!res)
		return rc;
	if (atoi(PQcmdTuples(res)) != 1) {
		fq_db_set_error(db, "updating anomaly %" PRId64 ": no such open anomaly", id);
		rc = -ENOENT;
	}
	PQclear(res);
	return rc;
}

int fq_db_close_anomaly(struct fq_db *db, int64_t id, int64_t end_ns)
{
	struct fq_db_params p = {0};
	PGresult *res;
	int rc;

	fq_db_param_i64(&p, id);
	fq_db_param_ts(&p, end_ns);
	res = fq_db_run(db, "closing an anomaly",
			"update fabriciq.anomalies set end_time = $2 where id = $1 and end_time is null", &p,
			&rc);
	if (!res)
		return rc;
	if (atoi(PQcmdTuples(res)) != 1) {
		fq_db_set_error(db, "closing anomaly %" PRId64 ": no such open anomaly", id);
		rc = -ENOENT;
	}
	PQclear(res);
	return rc;
}

int fq_db_insert_drain_hint(struct fq_db *db, const struct fq_db_drain_hint *h, int64_t *id)
{
	struct fq_db_params p = {0};
	PGresult *res;
	bool fabric = h->component != NULL;
	int rc = CHECK_FIELDS(db, fabric ? "fabric hint" : "drain hint", {"node", h->node, !fabric},
			      {"reason", h->reason, true}, {"nic", h->nic, false},
			      {"component", h->component, false});

	if (rc)
		return rc;
	/* a fault of the fabric is no node's: nothing to drain or resume */
	if (fabric && (h->node || h->nic || h->resume)) {
		fq_db_set_error(db, "fabric hint on %s: no node, NIC or resume goes with it", h->component);
		return -EINVAL;
	}
	fq_db_param_str(&p, h->node);
	fq_db_param_str(&p, h->nic);
	fq_db_param_str(&p, fabric ? "check" : h->resume ? "resume" : "drain");
	fq_db_param_str(&p, h->reason);
	if (h->anomaly_id)
		fq_db_param_i64(&p, h->anomaly_id);
	else
		fq_db_param_str(&p, NULL);
	fq_db_param_ts(&p, h->created_ns);
	fq_db_param_str(&p, h->component);
	res =
	    fq_db_run(db, fabric ? "inserting a fabric hint" : "inserting a drain hint",
		      "insert into fabriciq.drain_hints (node, nic, action, reason, anomaly_id, created_at, "
		      "component) values ($1, $2, $3, $4, $5, $6, $7) returning id",
		      &p, &rc);
	if (!res)
		return rc;
	if (id)
		*id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	return 0;
}

int fq_db_put_route(struct fq_db *db, const struct fq_db_route *r)
{
	struct fq_db_params p = {0};
	char arr[FQ_DB_ROUTE_MAX_HOPS * 17 + 3], *w = arr;
	int rc = CHECK_FIELDS(db, "route", {"node", r->node, true}, {"nic", r->nic, true},
			      {"remote_node", r->remote_node, true}, {"remote_nic", r->remote_nic, true});

	if (rc)
		return rc;
	if (r->flow > FQ_DB_ROUTE_MAX_FLOW) {
		fq_db_set_error(db, "route %s:%s -> %s:%s: flow %u (at most %d)", r->node, r->nic,
				r->remote_node, r->remote_nic, r->flow, FQ_DB_ROUTE_MAX_FLOW);
		return -EINVAL;
	}
	if (r->n_hops > FQ_DB_ROUTE_MAX_HOPS) {
		fq_db_set_error(db, "route %s:%s -> %s:%s: %zu hops (at most %d)", r->node, r->nic,
				r->remote_node, r->remote_nic, r->n_hops, FQ_DB_ROUTE_MAX_HOPS);
		return -EINVAL;
	}
	/* an inet[] literal of checked addresses only: nothing else reaches it */
	*w++ = '{';
	for (size_t i = 0; i < r->n_hops; i++) {
		const char *h = r->hops[i] ? r->hops[i] : "";
		struct in_addr a;

		if (*h && inet_pton(AF_INET, h, &a) != 1) {
			fq_db_set_error(db, "route %s:%s -> %s:%s: hop %zu is not an IPv4 address", r->node,
					r->nic, r->remote_node, r->remote_nic, i + 1);
			return -EINVAL;
		}
		w += sprintf(w, "%s%s", i ? "," : "", *h ? inet_ntoa(a) : "NULL");
	}
	*w++ = '}';
	*w = 0;
	fq_db_param_str(&p, r->node);
	fq_db_param_str(&p, r->nic);
	fq_db_param_str(&p, r->remote_node);
	fq_db_param_str(&p, r->remote_nic);
	fq_db_param_str(&p, arr);
	fq_db_param_bool(&p, r->reached);
	fq_db_param_ts(&p, r->time_ns);
	fq_db_param_i64(&p, (int64_t)r->flow);
	return fq_db_exec(
	    db, "storing a path's route",
	    "with last as (select id, hops, reached from fabriciq.path_routes"
	    "  where node = $1 and nic = $2 and remote_node = $3 and remote_nic = $4 and flow = $8"
	    "  order by first_seen desc, id desc limit 1),"
	    " same as (update fabriciq.path_routes r set last_seen = greatest(r.last_seen, $7::timestamptz)"
	    "  from last where r.id = last.id and last.hops = $5::inet[] and last.reached = $6"
	    "  returning r.id)"
	    " insert into fabriciq.path_routes (node, nic, remote_node, remote_nic, hops, reached, "
	    "first_seen, last_seen, flow)"
	    " select $1, $2, $3, $4, $5::inet[], $6, $7, $7, $8 where not exists (select 1 from same)",
	    &p);
}
