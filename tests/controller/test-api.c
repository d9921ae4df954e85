/*
 * test-api: every endpoint of controller/api.c against the fixture of
 * tests/controller/test-api-fixture.sh in a private PostgreSQL (run by
 * test-api.sh), number by number; bad input refused with 400/404; stored
 * strings returned byte for byte; fabric hints shown with no command; a
 * lost database answered with 503.
 */
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller/api.h"
#include "db/db.h"
#include "tests/unit/tap.h"

/* GETs path?query, checks the status, returns the parsed body (never NULL). */
static struct json_object *get(struct fq_db *db, const char *path, const char *query, int want)
{
	struct json_object *o;
	char *body = NULL;
	int status = fq_api_get(db, path, query, &body);

	if (!ok(status == want && body, "GET %s%s%s -> %d", path, query ? "?" : "", query ? query : "", want))
		diag("got %d: %.300s", status, body ? body : "(null)");
	o = body ? json_tokener_parse(body) : NULL;
	ok(o != NULL, "... the body is JSON");
	free(body);
	return o ? o : json_object_new_object();
}

/* The value at "a.0.b" (object keys and array indexes), or NULL. */
static struct json_object *at(struct json_object *o, const char *path)
{
	char buf[256], *save = NULL, *tok;

	snprintf(buf, sizeof(buf), "%s", path);
	for (tok = strtok_r(buf, ".", &save); tok && o; tok = strtok_r(NULL, ".", &save)) {
		if (json_object_is_type(o, json_type_array))
			o = json_object_array_get_idx(o, (size_t)atoi(tok));
		else if (!json_object_object_get_ex(o, tok, &o))
			o = NULL;
	}
	return o;
}

static const char *str_at(struct json_object *o, const char *path)
{
	struct json_object *v = at(o, path);

	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static long long int_at(struct json_object *o, const char *path)
{
	struct json_object *v = at(o, path);

	return v ? (long long)json_object_get_int64(v) : -999999;
}

static double dbl_at(struct json_object *o, const char *path)
{
	struct json_object *v = at(o, path);

	return v ? json_object_get_double(v) : -999999;
}

/* Whether the value at path is JSON null (present, but null). */
static bool null_at(struct json_object *o, const char *path)
{
	char parent[256];
	const char *dot = strrchr(path, '.');
	struct json_object *v = NULL;

	snprintf(parent, sizeof(parent), "%.*s", dot ? (int)(dot - path) : 0, path);
	o = dot ? at(o, parent) : o;
	return o && json_object_is_type(o, json_type_object) &&
	       json_object_object_get_ex(o, dot ? dot + 1 : path, &v) && v == NULL;
}

static size_t len_at(struct json_object *o, const char *path)
{
	struct json_object *v = at(o, path);

	return v && json_object_is_type(v, json_type_array) ? json_object_array_length(v) : (size_t)-1;
}

#define is_dbl(got, want, ...)                                                                               \
	do {                                                                                                 \
		double g_ = (got), w_ = (want);                                                              \
		if (!ok(g_ > w_ - 1e-6 && g_ < w_ + 1e-6, __VA_ARGS__))                                      \
			diag("got %.6f, want %.6f", g_, w_);                                                 \
	} while (0)

static void test_status(struct fq_db *db)
{
	struct json_object *o = get(db, "/api/v1/status", NULL, 200);

	is_int(int_at(o, "database.schema_version"), fq_db_code_version(), "status: schema version");
	is_int(int_at(o, "nodes"), 4, "status: 4 nodes");
	is_int(int_at(o, "nodes_reporting"), 3, "status: 3 reporting (gpu04 silent for 3 hours)");
	is_int(int_at(o, "links_down"), 1, "status: 1 link down");
	is_int(int_at(o, "steps_running"), 1, "status: 1 step running");
	is_int(int_at(o, "anomalies_open"), 2, "status: 2 open anomalies");
	is_int(int_at(o, "anomalies_open_critical"), 1, "status: 1 of them critical");
	is_int(int_at(o, "hints_pending"), 4, "status: 4 pending hints");
	is_int(int_at(o, "clock.ok"), 1, "status: clock ok on 1 node");
	is_int(int_at(o, "clock.stale"), 1, "status: clock stale on 1 node");
	ok(int_at(o, "database_time_ns") > 1700000000000000000LL, "status: database time in ns");
	json_object_put(o);
}

static void test_nodes_links(struct fq_db *db)
{
	struct json_object *o = get(db, "/api/v1/nodes", NULL, 200);

	is_int(len_at(o, "nodes"), 4, "nodes: 4");
	is_str(str_at(o, "nodes.0.name"), "gpu01", "nodes: by name");
	is_int(len_at(o, "nodes.0.nics"), 3, "nodes: gpu01 has 3 NICs");
	is_str(str_at(o, "nodes.0.nics.0.name"), "eth0", "nodes: NICs by rail then name");
	is_str(str_at(o, "nodes.0.nics.2.kind"), "roce", "nodes: NIC kind");
	is_int(int_at(o, "nodes.0.nics.1.speed_mbps"), 100000, "nodes: NIC speed");
	is_str(str_at(o, "nodes.0.clock_status"), "ok", "nodes: clock status");
	is_str(str_at(o, "nodes.3.clock_status"), "no reports", "nodes: gpu04 no clock reports");
	ok(dbl_at(o, "nodes.3.last_seen_age_s") >= 10800, "nodes: gpu04 last seen 3 hours ago");
	json_object_put(o);

	o = get(db, "/api/v1/links", NULL, 200);
	is_int(len_at(o, "links"), 3, "links: 3");
	is_str(str_at(o, "links.0.state"), "down", "links: the down one first");
	is_int(int_at(o, "links.0.flaps_1h"), 1, "links: a NIC-level down counts against the path");
	is_str(str_at(o, "links.1.src_node"), "gpu01", "links: then the flapping one");
	is_int(int_at(o, "links.1.flaps_1h"), 3, "links: 3 flaps in the last hour");
	is_dbl(dbl_at(o, "links.1.loss_1h"), 0.05, "links: 5%% loss");
	is_dbl(dbl_at(o, "links.1.owd_fwd_p50_us"), 5.5, "links: forward p50");
	is_dbl(dbl_at(o, "links.1.rtt_p50_us"), 10.0, "links: rtt p50");
	ok(at(o, "truncated") && !json_object_get_boolean(at(o, "truncated")), "links: not truncated");
	json_object_put(o);

	o = get(db, "/api/v1/links", "state=down&node=gpu04", 200);
	is_int(len_at(o, "links"), 1, "links?state=down&node=gpu04: the one down path");
	json_object_put(o);
	o = get(db, "/api/v1/links", "limit=2", 200);
	is_int(len_at(o, "links"), 2, "links?limit=2: two");
	ok(json_object_get_boolean(at(o, "truncated")), "links?limit=2: truncated");
	json_object_put(o);
}

static void test_jobs(struct fq_db *db)
{
	struct json_object *o = get(db, "/api/v1/jobs", NULL, 200);

	is_int(len_at(o, "jobs"), 2, "jobs: two steps");
	is_int(int_at(o, "jobs.0.step_id"), 0, "jobs: the newest first (step 0 started later)");
	is_int(int_at(o, "jobs.0.uid"), 1000, "jobs: uid");
	ok(json_object_get_boolean(at(o, "jobs.0.running")), "jobs: step 0 running");
	is_int(int_at(o, "jobs.1.exit_status"), 1, "jobs: step 1 exit status");
	is_int(int_at(o, "jobs.0.efficiency.bytes"), 11600000000LL, "jobs: bytes");
	is_dbl(dbl_at(o, "jobs.0.efficiency.achieved_gbps"), 30.933, "jobs: achieved Gbit/s");
	is_dbl(dbl_at(o, "jobs.0.efficiency.best_gbps"), 32.0, "jobs: best Gbit/s");
	is_dbl(dbl_at(o, "jobs.0.efficiency.degraded_share"), 0.667, "jobs: degraded share");
	is_str(str_at(o, "jobs.0.efficiency.slowest_lanes.0"), "0->1/1 49.0 us", "jobs: slowest lane");
	ok(!json_object_get_boolean(at(o, "jobs.1.running")) && null_at(o, "jobs.1.efficiency.achieved_gbps"),
	   "jobs: a step without lanes has null figures");
	json_object_put(o);
	o = get(db, "/api/v1/jobs", "limit=1&running=1", 200);
	is_int(len_at(o, "jobs"), 1, "jobs?running=1&limit=1: one");
	json_object_put(o);
}

static void test_job_report(struct fq_db *db)
{
	struct json_object *o = get(db, "/api/v1/jobs/4242", NULL, 200), *s;

	is_int(int_at(o, "job_id"), 4242, "job: id");
	is_int(len_at(o, "steps"), 2, "job: both steps");
	json_object_put(o);

	o = get(db, "/api/v1/jobs/4242.0", NULL, 200);
	is_int(len_at(o, "steps"), 1, "job.step: one step");
	s = at(o, "steps.0");
	is_str(str_at(s, "mode"), "control", "step: mode");
	is_int(int_at(s, "node_count"), 4, "step: node count");
	is_int(int_at(s, "task_count"), 4, "step: task count");
	ok(null_at(s, "end") && null_at(s, "end_ns"), "step: running, no end");
	ok(int_at(s, "start_ns") > 0 && str_at(s, "start") && strchr(str_at(s, "start"), 'T'),
	   "step: start as RFC 3339 and ns");
	is_int(len_at(s, "ranks"), 4, "ranks: 4");
	is_str(str_at(s, "ranks.3.node"), "gpu04", "ranks: rank 3 on gpu04");
	is_str(str_at(s, "ranks.3.nic"), "mlx5_0", "ranks: NIC");
	is_int(int_at(s, "ranks.3.pid"), 1003, "ranks: pid");
	is_str(str_at(s, "qos.class"), "latency", "qos: the step's network class");
	is_int(int_at(s, "qos.paced_lanes"), 2, "qos: rank 0's 2 lanes paced");
	is_int(int_at(s, "qos.rate_min_bytes_per_s"), 1250000, "qos: the lowest cap given");
	is_int(int_at(s, "qos.rate_median_bytes_per_s"), 1875000, "qos: the median cap of its windows");
	is_dbl(dbl_at(s, "qos.throttled_lane_s"), 2.0, "qos: 4 windows x 0.5 s throttled");
	is_dbl(dbl_at(s, "qos.throttled_max_s"), 1.0, "qos: the most of one lane");
	is_int(int_at(s, "qos.given_lanes"), 1, "qos: one lane given a rate by the controller");
	is_int(int_at(s, "qos.given_rate_min_bytes_per_s"), 1250000, "qos: the lowest rate given");
	is_int(int_at(s, "qos.given_rate_median_bytes_per_s"), 1250000, "qos: the median rate given");
	is_dbl(dbl_at(s, "qos.given_lane_s"), 0.5, "qos: half a second with it");
	is_dbl(dbl_at(s, "qos.given_max_s"), 0.5, "qos: the most of one lane with it");
	is_int(int_at(s, "lanes_total"), 8, "lanes: 8");
	is_int(len_at(s, "lanes"), 8, "lanes: all listed");
	is_int(int_at(s, "lanes.1.lane"), 1, "lanes: in rank order");
	is_str(str_at(s, "lanes.1.src_nic"), "mlx5_1", "lanes: source NIC");
	is_str(str_at(s, "lanes.1.dst_node"), "gpu02", "lanes: destination node");
	is_int(int_at(s, "lanes.1.bytes"), 1100000000, "lanes: bytes of the slow lane");
	is_int(int_at(s, "lanes.1.owd_p99_ns"), 49000, "lanes: p99 = median of the windows' p99");
	is_int(int_at(s, "lanes.1.owd_p50_ns"), 30000, "lanes: p50");
	is_int(int_at(s, "lanes.1.degraded_windows"), 2, "lanes: 2 degraded windows");
	is_int(int_at(s, "lanes.1.tcp_retrans"), 21, "lanes: retransmits");
	is_int(int_at(s, "lanes.0.owd_p99_ns"), 4000, "lanes: a healthy lane");
	is_int(len_at(s, "slowest_lanes"), 5, "slowest lanes: five");
	is_int(int_at(s, "slowest_lanes.0.src_rank") * 100 + int_at(s, "slowest_lanes.0.dst_rank") * 10 +
		   int_at(s, "slowest_lanes.0.lane"),
	       11, "slowest lanes: 0->1/1 first");
	is_int(len_at(s, "throughput.buckets"), 3, "throughput: 3 intervals");
	ok(null_at(s, "throughput.bucket_s"), "throughput: one bucket per interval (bucket_s null)");
	is_int(int_at(s, "throughput.buckets.0.bytes_per_s"), 4000000000LL, "throughput: interval 1 4 GB/s");
	is_int(int_at(s, "throughput.buckets.1.bytes_per_s"), 3600000000LL,
	       "throughput: interval 2 3.6 GB/s");
	is_dbl(dbl_at(s, "throughput.buckets.1.gbps"), 28.8, "throughput: interval 2 28.8 Gbit/s");
	is_int(int_at(s, "throughput.buckets.2.windows"), 8, "throughput: 8 windows per interval");
	is_int(int_at(s, "throughput.buckets.1.owd_p99_max_ns"), 94000,
	       "throughput: worst p99 of interval 2");
	is_int(len_at(s, "anomalies"), 2, "anomalies: 2 hit the step");
	is_str(str_at(s, "anomalies.1.kind"), "lane_outlier", "anomalies: in time order");
	is_int(len_at(s, "anomalies.1.ranks"), 2, "anomalies: ranks 0 and 1");
	is_str(str_at(s, "anomalies.1.rank_places.1.node"), "gpu02", "anomalies: rank 1 is on gpu02");
	is_int(int_at(s, "anomalies.1.evidence.p99_us"), 94, "anomalies: evidence as JSON");
	ok(json_object_get_boolean(at(s, "anomalies.1.open")), "anomalies: the outlier is open");
	is_str(str_at(s, "anomalies.0.summary"),
	       "3 flaps/h: it's \"bad\" \\ ; drop table x; -- <b>&amp; é 日本",
	       "anomalies: a stored string comes back verbatim");
	is_int(int_at(s, "anomalies.0.duration_ns"), 20LL * 60 * 1000000000,
	       "anomalies: duration of a closed one");
	is_int(len_at(s, "incidents"), 2, "incidents: 2 hit the step (each anomaly one: no member)");
	is_str(str_at(s, "incidents.1.kind"), "lane_outlier", "incidents: in time order");
	is_int(int_at(s, "incidents.1.events"), 1, "incidents: its events");
	is_int(len_at(s, "incidents.1.ranks"), 2, "incidents: ranks 0 and 1");
	is_dbl(dbl_at(s, "incidents.1.gbps_before"), 32.0, "incidents: 32 Gbit/s before it (interval 1)");
	is_dbl(dbl_at(s, "incidents.1.gbps_during"), 30.4,
	       "incidents: 30.4 Gbit/s during it (intervals 2, 3)");
	is_int(int_at(s, "incidents.1.lanes_failed_over") * 10 + int_at(s, "incidents.1.outages"), 11,
	       "incidents: lane 0->1/1 failed over once on its path");
	is_int(len_at(s, "incidents.1.members"), 0, "incidents: no members");
	is_int(len_at(s, "failovers"), 1, "failovers: 1");
	is_str(str_at(s, "failovers.0.cause"), "no-progress", "failovers: cause");
	is_int(int_at(s, "failovers.0.bytes_resent"), 4194304, "failovers: bytes resent");
	is_dbl(dbl_at(s, "efficiency.efficiency"), 0.967, "efficiency: 30.933 / 32");
	json_object_put(o);

	o = get(db, "/api/v1/jobs/4242.0", "lanes=2&bucket=3", 200);
	is_int(len_at(o, "steps.0.lanes"), 2, "lanes=2: two listed");
	is_int(int_at(o, "steps.0.lanes_total"), 8, "lanes=2: of 8");
	is_int(len_at(o, "steps.0.throughput.buckets"), 1, "bucket=3: one bucket");
	is_dbl(dbl_at(o, "steps.0.throughput.bucket_s"), 3.0, "bucket=3: bucket_s");
	is_dbl(dbl_at(o, "steps.0.throughput.buckets.0.gbps"), 30.933, "bucket=3: the step's achieved rate");
	json_object_put(o);

	o = get(db, "/api/v1/jobs/4242.1", NULL, 200);
	is_int(len_at(o, "steps.0.ranks"), 2, "step 1: 2 ranks");
	is_int(len_at(o, "steps.0.lanes"), 0, "step 1: no lanes");
	ok(null_at(o, "steps.0.qos.class") && int_at(o, "steps.0.qos.paced_lanes") == 0 &&
	       dbl_at(o, "steps.0.qos.throttled_lane_s") == 0,
	   "step 1: no class, nothing paced");
	is_int(len_at(o, "steps.0.throughput.buckets"), 0, "step 1: no throughput");
	json_object_put(o);
}

static void test_lists(struct fq_db *db)
{
	struct json_object *o = get(db, "/api/v1/events", NULL, 200);

	is_int(len_at(o, "events"), 7, "events: 7 in the last day");
	is_str(str_at(o, "events.0.state"), "up", "events: newest first");
	json_object_put(o);
	o = get(db, "/api/v1/events", "since=2099-01-01T00:00:00Z", 200);
	is_int(len_at(o, "events"), 0, "events?since=future: none");
	json_object_put(o);
	o = get(db, "/api/v1/events", "since=2020-01-01T00:00:00.5%2B02:00&node=gpu03&limit=5", 200);
	is_int(len_at(o, "events"), 1, "events?node=gpu03: the NIC-level one");
	ok(json_object_get_boolean(at(o, "events.0.nic_level")), "events: nic_level");
	is_int(int_at(o, "since_ns"), 1577829600500000000LL, "events: since with offset and fraction");
	json_object_put(o);

	o = get(db, "/api/v1/anomalies", NULL, 200);
	is_int(len_at(o, "anomalies"), 3, "anomalies: 3");
	json_object_put(o);
	o = get(db, "/api/v1/anomalies", "open=1", 200);
	is_int(len_at(o, "anomalies"), 2, "anomalies?open=1: 2");
	is_str(str_at(o, "anomalies.0.kind"), "lane_outlier", "anomalies: newest first");
	is_int(int_at(o, "anomalies.0.jobs.0.job_id"), 4242, "anomalies: the jobs they hit");
	is_int(len_at(o, "anomalies.1.jobs"), 0, "anomalies: link_down hit no job");
	is_int(int_at(o, "anomalies.0.jobs.0.ranks.1"), 1, "anomalies: with ranks");
	json_object_put(o);

	o = get(db, "/api/v1/clock", NULL, 200);
	is_int(len_at(o, "clock"), 4, "clock: 4 nodes");
	is_str(str_at(o, "clock.0.status"), "ok", "clock: gpu01 ok");
	is_int(int_at(o, "clock.0.peers"), 2, "clock: gpu01 measured 2 peers");
	is_int(int_at(o, "clock.0.worst_peer_error_ns"), 400, "clock: worst peer error");
	is_str(str_at(o, "clock.2.status"), "unsynchronised", "clock: gpu03 unsynchronised");
	is_str(str_at(o, "clock.3.status"), "no reports", "clock: gpu04 no reports");
	is_int(int_at(o, "error_budget_ns"), 10000, "clock: the error budget");
	json_object_put(o);
}

static void test_hints(struct fq_db *db)
{
	struct json_object *o = get(db, "/api/v1/hints", NULL, 200);

	is_int(len_at(o, "hints"), 4, "hints: 4 pending (the applied one left out)");
	is_str(str_at(o, "hints.0.command"),
	       "scontrol update NodeName=gpu03 State=DRAIN Reason=\"fabriciq: link_down on mlx5_1\"",
	       "hints: the drain command");
	is_str(str_at(o, "hints.0.slurm_reason"), "fabriciq: link_down on mlx5_1", "hints: the Slurm reason");
	ok(!at(o, "hints.0.argv"), "hints: no argv (hints --apply builds its own command from the fields)");
	is_str(str_at(o, "hints.0.anomaly_kind"), "link_down", "hints: the anomaly behind it");
	ok(json_object_get_boolean(at(o, "hints.1.superseded")),
	   "hints: gpu01's drain superseded by its resume");
	is_int(int_at(o, "hints.1.running_jobs.0"), 4242, "hints: jobs running on the node");
	is_str(str_at(o, "hints.2.command"), "scontrol update NodeName=gpu01 State=RESUME", "hints: resume");
	is_str(str_at(o, "hints.3.node"), "gpu0$(reboot)", "hints: a hostile node name is shown verbatim");
	ok(str_at(o, "hints.3.refused") && null_at(o, "hints.3.command"), "... but gets no command");
	is_str(str_at(o, "hints.3.refused"),
	       "bad node name 'gpu0$(reboot)' (Slurm node names: letters, digits, - _ .)", "... saying why");
	json_object_put(o);
}

static void bad(struct fq_db *db, const char *path, const char *query, int want, const char *words);

/* A fabric component blamed, with a member stored first and made its
 * member after (as the controller does: fq_db_set_incident), through
 * /api/v1/incidents and /api/v1/incidents/ID. Last: it adds anomalies. */
static void test_incidents(struct fq_db *db)
{
	struct timespec now;
	int64_t t, fid = 0, mid = 0;
	uint32_t ranks[] = {2, 3};
	struct fq_db_anomaly_job hit = {4242, 0, ranks, 2};
	struct fq_db_anomaly fab = {.kind = "fabric_delay",
				    .severity = FQ_DB_SEV_WARNING,
				    .summary = "spine3 congested: 3 delayed paths cross it",
				    .evidence_json = "{\"component\": \"spine3\", \"confidence\": 0.9}",
				    .component = "spine3"};
	struct fq_db_anomaly mem = {.kind = "path_delay",
				    .severity = FQ_DB_SEV_WARNING,
				    .node = "gpu01",
				    .nic = "mlx5_0",
				    .remote_node = "gpu03",
				    .remote_nic = "mlx5_0",
				    .summary = "path gpu01/mlx5_0 -> gpu03/mlx5_0: owd p90 900 us"};
	struct json_object *o, *n = NULL;
	char path[64];

	clock_gettime(CLOCK_REALTIME, &now);
	t = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
	mem.start_ns = t - 20000000000LL;
	fab.start_ns = t - 19000000000LL;
	ok(fq_db_insert_anomaly(db, &mem, &hit, 1, &mid) == 0 &&
	       fq_db_insert_anomaly(db, &fab, NULL, 0, &fid) == 0 && fq_db_set_incident(db, mid, fid) == 0,
	   "a path delay, then spine3's incident it becomes a member of");
	o = get(db, "/api/v1/incidents", NULL, 200);
	is_int(len_at(o, "incidents"), 4, "incidents: the 3 anomalies alone and spine3's, not its member");
	for (size_t i = 0; i < (size_t)len_at(o, "incidents"); i++) {
		char key[32];

		snprintf(key, sizeof(key), "incidents.%zu", i);
		if (at(o, key) && !null_at(at(o, key), "component"))
			n = at(o, key);
	}
	ok(n && !strcmp(str_at(n, "component"), "spine3"), "incidents: spine3's names its component");
	if (n) {
		is_int(int_at(n, "members"), 1, "incidents: one member");
		is_int(int_at(n, "jobs.0.job_id"), 4242, "incidents: its member's job, copied to it");
		is_int(int_at(n, "jobs.0.ranks.1"), 3, "incidents: with the member's ranks");
	}
	json_object_put(o);
	o = get(db, "/api/v1/incidents", "open=1&limit=1", 200);
	is_int(len_at(o, "incidents"), 1, "incidents?limit=1: one");
	json_object_put(o);

	snprintf(path, sizeof(path), "/api/v1/incidents/%lld", (long long)fid);
	o = get(db, path, NULL, 200);
	is_str(str_at(o, "component"), "spine3", "incident: spine3");
	is_int(len_at(o, "member_list"), 1, "incident: its member");
	is_str(str_at(o, "member_list.0.kind"), "path_delay", "incident: the member's kind");
	is_int(len_at(o, "timeline"), 2, "incident: a timeline of 2 (the member began, then it)");
	is_str(str_at(o, "timeline.0.what"), "member began", "incident: in time order");
	ok(at(o, "evidence.confidence") != NULL, "incident: its evidence");
	json_object_put(o);
	snprintf(path, sizeof(path), "/api/v1/incidents/%lld", (long long)mid);
	bad(db, path, NULL, 404, "is part of an incident is not one");
	bad(db, "/api/v1/incidents/x1", NULL, 400, "incident id must be a positive integer");
	bad(db, "/api/v1/incidents/0", NULL, 400, "incident id must be");
	bad(db, "/api/v1/incidents", "open=2", 400, "open must be 1 or 0");
}

/* Job, uid and hint data for administrators only; the fabric's state open. */
static void test_access(void)
{
	static const char *const admin[] = {"/api/v1/jobs",       "/api/v1/jobs/42", "/api/v1/jobs/42.0",
					    "/api/v1/anomalies",  "/api/v1/hints",   "/api/v1/incidents",
					    "/api/v1/incidents/7"};
	static const char *const open[] = {"/api/v1/status", "/api/v1/nodes", "/api/v1/links",
					   "/api/v1/events", "/api/v1/clock", "/api/v1/topology",
					   "/api/v1/nope"};

	for (size_t i = 0; i < sizeof(admin) / sizeof(admin[0]); i++)
		is_int(fq_api_access(admin[i]), FQ_API_ADMIN, "%s: administrators only", admin[i]);
	for (size_t i = 0; i < sizeof(open) / sizeof(open[0]); i++)
		is_int(fq_api_access(open[i]), FQ_API_OPEN, "%s: open", open[i]);
}

static void bad(struct fq_db *db, const char *path, const char *query, int want, const char *words)
{
	struct json_object *o = get(db, path, query, want);

	like(str_at(o, "error"), words, "... says '%s'", words);
	json_object_put(o);
}

static void test_bad_input(struct fq_db *db)
{
	bad(db, "/api/v1/nope", NULL, 404, "unknown path");
	bad(db, "/api/v1/jobs/", NULL, 404, "unknown path");
	bad(db, "/api/v1/status/", NULL, 404, "unknown path");
	bad(db, "/api/v1/jobs/99", NULL, 404, "job 99 is not known");
	bad(db, "/api/v1/jobs/4242.7", NULL, 404, "has no step 7");
	bad(db, "/api/v1/jobs/4242'; drop table fabriciq.jobs; --", NULL, 400, "job must be JOB or JOB.STEP");
	bad(db, "/api/v1/jobs/4242 or 1=1", NULL, 400, "job must be");
	bad(db, "/api/v1/jobs/-1", NULL, 400, "job must be");
	bad(db, "/api/v1/jobs/4294967296", NULL, 400, "job must be");
	bad(db, "/api/v1/jobs/4242.", NULL, 400, "job must be");
	bad(db, "/api/v1/jobs/4242.0.1", NULL, 400, "job must be");
	bad(db, "/api/v1/jobs/99999999999999999999999", NULL, 400, "job must be");
	bad(db, "/api/v1/jobs/4242.batch", NULL, 404, "has no step 4294967291");
	bad(db, "/api/v1/jobs", "limit=0", 400, "limit must be an integer from 1 to 1000");
	bad(db, "/api/v1/jobs", "limit=1001", 400, "limit must be");
	bad(db, "/api/v1/jobs", "limit=1;select%201", 400, "limit must be");
	bad(db, "/api/v1/jobs", "limit=1&limit=2", 400, "given twice");
	bad(db, "/api/v1/jobs", "frob=1", 400, "unknown query parameter 'frob'");
	bad(db, "/api/v1/jobs", "running=maybe", 400, "running must be 1 or 0");
	bad(db, "/api/v1/events", "since=yesterday", 400, "since must be an RFC 3339 time");
	bad(db, "/api/v1/events", "since=2026-02-30T00:00:00Z", 400, "since must be");
	bad(db, "/api/v1/events", "since=2026-01-01T00:00:00", 400, "since must be");
	bad(db, "/api/v1/events", "since=2026-01-01T00:00:00Z'%20or%20'1", 400, "since must be");
	bad(db, "/api/v1/events", "since=%zz", 400, "malformed query parameter");
	bad(db, "/api/v1/events", "node=a%00b", 400, "malformed");
	bad(db, "/api/v1/status", "x=1", 400, "this endpoint takes none");
	bad(db, "/api/v1/links", "state=sideways", 400, "state must be up, down or unknown");

	/* A hostile value where a free string is allowed is only ever a bound value. */
	{
		struct json_object *o = get(db, "/api/v1/links", "node=x'%20or%20'1'%3D'1", 200);

		is_int(len_at(o, "links"), 0, "node=x' or '1'='1 matches no link");
		json_object_put(o);
	}
}

/* Fabric hints: a link's incident and its hint, then its switch's, which
 * takes the link's in (fq_db_set_incident): both pending, the link's
 * superseded; no command, nothing refused; the switch's running jobs are
 * its incident's. Last: it adds hints. */
static void test_fabric_hints(struct fq_db *db)
{
	struct timespec now;
	int64_t t, lid = 0, sid = 0, hid = 0;
	int rc;
	uint32_t ranks[] = {0, 1};
	struct fq_db_anomaly_job hit = {4242, 0, ranks, 2};
	struct fq_db_anomaly link = {.kind = "fabric_loss",
				     .severity = FQ_DB_SEV_WARNING,
				     .summary = "leaf1~spine3 dropping packets",
				     .component = "leaf1~spine3"};
	struct fq_db_anomaly sw = {.kind = "fabric_delay",
				   .severity = FQ_DB_SEV_WARNING,
				   .summary = "spine3 congested: 12 delayed paths cross it",
				   .component = "spine3"};
	struct fq_db_drain_hint lh = {.reason = "check the cable leaf1~spine3: both ends' optics",
				      .component = "leaf1~spine3"};
	struct fq_db_drain_hint sh = {.reason = "check spine3: its buffer and queue occupancy",
				      .component = "spine3"};
	struct json_object *o;

	clock_gettime(CLOCK_REALTIME, &now);
	t = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
	link.start_ns = lh.created_ns = t - 10000000000LL;
	sw.start_ns = sh.created_ns = t - 5000000000LL;
	rc = fq_db_insert_anomaly(db, &link, NULL, 0, &lid);
	lh.anomaly_id = lid;
	rc |= fq_db_insert_drain_hint(db, &lh, &hid);
	rc |= fq_db_insert_anomaly(db, &sw, &hit, 1, &sid);
	sh.anomaly_id = sid;
	rc |= fq_db_insert_drain_hint(db, &sh, &hid);
	rc |= fq_db_set_incident(db, lid, sid);
	is_int(rc, 0, "a cable's incident and its fabric hint, then its switch's taking it in, with its own");
	o = get(db, "/api/v1/hints", NULL, 200);
	is_int(len_at(o, "hints"), 6, "hints: both fabric hints pending besides the nodes'");
	is_str(str_at(o, "hints.4.action"), "check", "hints: a fabric hint's action: check");
	is_str(str_at(o, "hints.4.component"), "leaf1~spine3", "... its component");
	ok(null_at(o, "hints.4.node") && null_at(o, "hints.4.nic"), "... no node, no NIC");
	ok(json_object_get_boolean(at(o, "hints.4.superseded")),
	   "... the cable's superseded: its incident is part of spine3's");
	is_str(str_at(o, "hints.5.component"), "spine3", "hints: spine3's");
	is_str(str_at(o, "hints.5.reason"), "check spine3: its buffer and queue occupancy",
	       "... what to check");
	ok(!json_object_get_boolean(at(o, "hints.5.superseded")), "... the one that counts");
	ok(null_at(o, "hints.5.command") && null_at(o, "hints.5.slurm_reason") &&
	       null_at(o, "hints.5.refused"),
	   "... no command and no Slurm reason, and not refused: nothing to run");
	is_str(str_at(o, "hints.5.anomaly_kind"), "fabric_delay", "... its incident");
	is_int(int_at(o, "hints.5.running_jobs.0"), 4242, "... the running jobs its incident hit");
	ok(!json_object_get_boolean(at(o, "hints.0.superseded")) && str_at(o, "hints.0.command") &&
	       null_at(o, "hints.0.component"),
	   "hints: the nodes' hints unchanged, no component");
	json_object_put(o);
	o = get(db, "/api/v1/status", NULL, 200);
	is_int(int_at(o, "hints_pending"), 4, "status: the nodes' 4 hints pending");
	is_int(int_at(o, "fabric_hints_pending"), 2, "status: the 2 fabric hints counted apart");
	json_object_put(o);
}

int main(void)
{
	struct fq_db *db;
	char err[512];
	char *body = NULL;

	if (!getenv("FQ_TEST_PG")) {
		printf("1..0 # SKIP run through tests/controller/test-api.sh (needs a private PostgreSQL)\n");
		return 0;
	}
	if (fq_db_create("", &db, err, sizeof(err))) {
		printf("Bail out! %s\n", err);
		return 1;
	}
	test_status(db);
	test_nodes_links(db);
	test_jobs(db);
	test_job_report(db);
	test_lists(db);
	test_hints(db);
	test_access();
	test_bad_input(db);
	test_incidents(db);
	test_fabric_hints(db);

	is_int(fq_api_get(NULL, "/api/v1/status", NULL, &body), 503, "no database connection: 503");
	like(body, "database unavailable", "... saying so");
	free(body);
	is_int(fq_api_get(NULL, "/nope", NULL, &body), 404, "... but an unknown path is still 404");
	free(body);

	/* The database goes away under a connection: 503 with PostgreSQL's words. */
	if (getenv("FQ_TEST_PG_STOP") && system(getenv("FQ_TEST_PG_STOP")) == 0) {
		is_int(fq_api_get(db, "/api/v1/jobs/4242", NULL, &body), 503, "database stopped: 503");
		like(body, "database unavailable", "... saying so");
		free(body);
	}
	fq_db_destroy(db);
	return done_testing();
}
