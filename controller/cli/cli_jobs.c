/*
 * cli_jobs: the CLI's commands about jobs (controller/cli/cli.h): `jobs`
 * (recent job steps), `job JOB[.STEP]` (the job report: steps, ranks,
 * lanes, throughput, the NCCL profiler's collectives, QPs and peers, the
 * anomalies and incidents that hit it) and
 * `anomalies`.
 */
#include <inttypes.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/cli/cli.h"

static const char *fstep(struct json_object *s)
{
	int64_t step = jint(s, "step_id");
	const char *name = step == 0xfffffffa   ? "interactive"
			   : step == 0xfffffffb ? "batch"
			   : step == 0xfffffffc ? "extern"
						: NULL;

	return name ? fmt("%" PRId64 ".%s", jint(s, "job_id"), name)
		    : fmt("%" PRId64 ".%" PRId64, jint(s, "job_id"), step);
}

int cmd_jobs(struct cli *c, int argc, char **argv)
{
	struct list_args a;
	struct json_object *o;
	struct table t;
	int rc;

	LIST_OPTIONS(argc, argv, "nr", &a);
	if (optind < argc)
		return usage_error("unexpected argument '%s' (for one job: fabriciq job JOBID)",
				   argv[optind]);
	rc = fetch(c, "/api/v1/jobs", a.query, &o);
	if (rc || c->json)
		goto out;
	table_init(&t,
		   "STEP,MODE,START,END,EXIT>,NODES>,TASKS>,MOVED>,ACHIEVED>,BEST>,EFF>,DEGRADED>,P99 MED>,"
		   "ANOMALIES>,FAILOVERS>");
	for (size_t i = 0; i < jlen(o, "jobs"); i++) {
		struct json_object *s = jidx(o, "jobs", i), *e = jget(s, "efficiency");

		table_row(&t, fstep(s), jstr(s, "mode"), ftime(s, "start_ns"),
			  jnull(s, "end_ns") ? "running" : ftime(s, "end_ns"), fint(s, "exit_status"),
			  fint(s, "node_count"), fint(s, "task_count"), fbytes_at(e, "bytes"),
			  fgbps(e, "achieved_gbps"), fgbps(e, "best_gbps"), fpct(e, "efficiency"),
			  fpct(e, "degraded_share"), fus(e, "median_lane_p99_us"), fint(e, "anomalies"),
			  fint(e, "failovers"));
	}
	table_print(&t);
	truncated_note(o, "steps");
out:
	json_object_put(o);
	return rc;
}

/* The ranks an anomaly hit: "0,1". */
static const char *franks(struct json_object *a)
{
	char *b = scratch();
	size_t n = jlen(a, "ranks"), l = 0;

	b[0] = '\0';
	for (size_t i = 0; i < n && l + 12 < SCRATCH_LEN; i++)
		l += (size_t)snprintf(b + l, SCRATCH_LEN - l, "%s%" PRId64, i ? "," : "",
				      json_object_get_int64(jidx(a, "ranks", i)));
	return n ? b : "-";
}

/* "n3/rail1" or "n1/rail1 -> n3/rail1": where an anomaly or incident is;
 * a fabric anomaly's blamed component ("spine3"). */
static const char *fwhere(struct json_object *a)
{
	if (!jnull(a, "component"))
		return jstr(a, "component");
	return fmt("%s%s%s", fplace(a, "node", "nic"), jnull(a, "remote_node") ? "" : " -> ",
		   jnull(a, "remote_node") ? "" : fplace(a, "remote_node", "remote_nic"));
}

/* The step's incidents, first in its report. */
static void print_incidents(struct json_object *s)
{
	struct table t;

	if (!jlen(s, "incidents"))
		return;
	printf("\nIncidents\n");
	table_init(&t, "ID>,KIND,WHERE,EVENTS>,FIRST,LAST,DURATION>,STATE,RANKS,GBIT/S BEFORE>,DURING>,"
		       "LANES FAILED OVER>,ALSO,SUMMARY");
	for (size_t i = 0; i < jlen(s, "incidents"); i++) {
		struct json_object *a = jidx(s, "incidents", i);
		char also[160] = "";

		for (size_t k = 0; k < jlen(a, "members"); k++) {
			size_t l = strlen(also);

			snprintf(also + l, sizeof(also) - l, "%s%s", k ? "," : "",
				 jstr(jidx(a, "members", k), "kind"));
		}
		table_row(&t, fint(a, "id"), jstr(a, "kind"), fwhere(a), fint(a, "events"),
			  ftime(a, "first_ns"), ftime(a, "last_ns"), fage(jint(a, "duration_ns")),
			  json_object_get_boolean(jget(a, "open")) ? "open" : "closed", franks(a),
			  fgbps(a, "gbps_before"), fgbps(a, "gbps_during"), fint(a, "lanes_failed_over"),
			  *also ? also : "-", jstr(a, "summary"));
	}
	table_print(&t);
}

/* The NCCL profiler's section (monitor mode): per collective its
 * bandwidth (GB/s, as nccl-tests prints it), the slowest QPs and peers. */
static void print_profiler(struct json_object *p)
{
	struct table t;

	if (!p || jnull(p, "ops"))
		return;
	printf("\nCollectives (NCCL profiler: %s ops, %s windows, %s rank(s)%s)\n", fint(p, "ops"),
	       fint(p, "windows"), fint(p, "ranks"),
	       json_object_get_boolean(jget(p, "synchronised")) ? "" : "; times not on the global clock");
	table_init(&t, "FUNC,ALGO,PROTO,OPS>,BYTES>,ALGBW GB/S>,BUSBW GB/S>,MIN>,MAX>");
	for (size_t i = 0; i < jlen(p, "collectives"); i++) {
		struct json_object *c = jidx(p, "collectives", i);

		table_row(&t, jstr(c, "func"), jstr(c, "algo"), jstr(c, "proto"), fint(c, "ops"),
			  fbytes_at(c, "bytes"), fmt("%.3f", jdbl(c, "algbw_gbs")),
			  jnull(c, "busbw_gbs") ? "-" : fmt("%.3f", jdbl(c, "busbw_gbs")),
			  jnull(c, "busbw_min_gbs") ? "-" : fmt("%.3f", jdbl(c, "busbw_min_gbs")),
			  jnull(c, "busbw_max_gbs") ? "-" : fmt("%.3f", jdbl(c, "busbw_max_gbs")));
	}
	table_print(&t);
	if (jlen(p, "slowest_qps")) {
		printf("\nSlowest QPs (NCCL's IB transport, by mean completion time)\n");
		table_init(&t, "NODE,RANK>,DEVICE>,QP,EVENTS>,BYTES>,MEAN>,MAX>");
		for (size_t i = 0; i < jlen(p, "slowest_qps"); i++) {
			struct json_object *q = jidx(p, "slowest_qps", i);

			table_row(&t, jstr(q, "node"), fint(q, "rank"), fint(q, "device"),
				  fmt("0x%" PRIx64, jint(q, "qpn")), fint(q, "events"), fbytes_at(q, "bytes"),
				  fdelay_at(q, "mean_ns"), fdelay_at(q, "max_ns"));
		}
		table_print(&t);
	}
	if (jlen(p, "slowest_peers")) {
		printf("\nSlowest peers (network transfers, by mean duration)\n");
		table_init(&t, "NODE,RANK>,PEER>,TRANSFERS>,BYTES>,MEAN>,MAX>,GB/S>");
		for (size_t i = 0; i < jlen(p, "slowest_peers"); i++) {
			struct json_object *q = jidx(p, "slowest_peers", i);

			table_row(&t, jstr(q, "node"), fint(q, "rank"), fint(q, "peer"), fint(q, "transfers"),
				  fbytes_at(q, "bytes"), fdelay_at(q, "mean_ns"), fdelay_at(q, "max_ns"),
				  jnull(q, "gbs") ? "-" : fmt("%.3f", jdbl(q, "gbs")));
		}
		table_print(&t);
	}
}

/* QoS between jobs: the step's network class and its lanes' pacing, when
 * it had either, and the rate the controller gave them. */
static void print_qos(struct json_object *s)
{
	struct json_object *q = jget(s, "qos");

	if (!q || (jnull(q, "class") && !jdbl(q, "paced_lanes")))
		return;
	printf("  network class: %s", jnull(q, "class") ? "none" : jstr(q, "class"));
	if (jdbl(q, "paced_lanes"))
		printf("; paced lanes: %s (cap lowest %.1f Mbit/s, median %.1f), throttled %.1f lane-s (most "
		       "%.1f s)",
		       fint(q, "paced_lanes"), jdbl(q, "rate_min_bytes_per_s") * 8 / 1e6,
		       jdbl(q, "rate_median_bytes_per_s") * 8 / 1e6, jdbl(q, "throttled_lane_s"),
		       jdbl(q, "throttled_max_s"));
	if (jdbl(q, "given_lanes")) /* the controller's rates between classes */
		printf(
		    "; rate given by the controller to %s lane(s) (lowest %.1f Mbit/s, median %.1f) for %.1f "
		    "lane-s (most %.1f s)",
		    fint(q, "given_lanes"), jdbl(q, "given_rate_min_bytes_per_s") * 8 / 1e6,
		    jdbl(q, "given_rate_median_bytes_per_s") * 8 / 1e6, jdbl(q, "given_lane_s"),
		    jdbl(q, "given_max_s"));
	printf("\n");
}

static void print_step(struct json_object *job, struct json_object *s)
{
	struct json_object *e = jget(s, "efficiency"), *tp = jget(s, "throughput");
	struct table t;

	printf("Step %s (uid %s): %s mode, %s nodes, %s tasks, started %s, ", fstep(s), fint(job, "uid"),
	       jstr(s, "mode"), fint(s, "node_count"), fint(s, "task_count"), ftime(s, "start_ns"));
	if (jnull(s, "end_ns"))
		printf("running\n");
	else
		printf("ended %s, exit status %s\n", ftime(s, "end_ns"), fint(s, "exit_status"));
	if (jnull(e, "bytes")) {
		printf("  no lane telemetry (%s)\n",
		       jnull(s, "profiler") ? "not run with --fabriciq, or no inter-node traffic"
					    : "monitored through the NCCL profiler: see Collectives");
	} else {
		printf("  moved %s at %s; best interval %s (efficiency %s)\n", fbytes_at(e, "bytes"),
		       fgbps(e, "achieved_gbps"), fgbps(e, "best_gbps"), fpct(e, "efficiency"));
		printf("  intervals with a degraded lane: %s; lane p99: median %s, slowest %s\n",
		       fpct(e, "degraded_share"), fus(e, "median_lane_p99_us"),
		       fus(e, "slowest_lane_p99_us"));
	}
	print_qos(s);
	printf("  incidents: %zu, anomalies: %s, failovers: %s\n", jlen(s, "incidents"), fint(e, "anomalies"),
	       fint(e, "failovers"));
	print_incidents(s);

	printf("\nRanks\n");
	table_init(&t, "RANK>,LOCAL>,NODE,NIC,PID>");
	for (size_t i = 0; i < jlen(s, "ranks"); i++) {
		struct json_object *r = jidx(s, "ranks", i);

		table_row(&t, fint(r, "rank"), fint(r, "local_rank"), jstr(r, "node"), jstr(r, "nic"),
			  fint(r, "pid"));
	}
	table_print(&t);

	if (jlen(s, "lanes")) {
		const char *cols =
		    "LANE,KIND,FROM,TO,BYTES>,WINDOWS>,OWD P50>,OWD P99>,WORST P99>,DEGRADED>,RETRANS>";

		printf("\nSlowest lanes (by median window p99)\n");
		table_init(&t, cols);
		for (int pass = 0; pass < 2; pass++) {
			const char *key = pass ? "lanes" : "slowest_lanes";

			if (pass) {
				table_print(&t);
				printf("\nLanes (%zu of %s)\n", jlen(s, "lanes"), fint(s, "lanes_total"));
				table_init(&t, cols);
			}
			for (size_t i = 0; i < jlen(s, key); i++) {
				struct json_object *l = jidx(s, key, i);

				table_row(&t,
					  fmt("%" PRId64 "->%" PRId64 "/%" PRId64, jint(l, "src_rank"),
					      jint(l, "dst_rank"), jint(l, "lane")),
					  jstr(l, "lane_kind"), fplace(l, "src_node", "src_nic"),
					  fplace(l, "dst_node", "dst_nic"), fbytes_at(l, "bytes"),
					  fint(l, "windows"), fdelay_at(l, "owd_p50_ns"),
					  fdelay_at(l, "owd_p99_ns"), fdelay_at(l, "owd_p99_max_ns"),
					  fint(l, "degraded_windows"), fint(l, "tcp_retrans"));
			}
		}
		table_print(&t);
	}

	if (jlen(tp, "buckets")) {
		printf("\nThroughput over time (%s)\n", jnull(tp, "bucket_s")
							    ? "per reporting interval"
							    : fmt("%g s buckets", jdbl(tp, "bucket_s")));
		table_init(&t, "FROM,TO,BYTES>,RATE>,GBIT/S>,WINDOWS>,WORST P99>");
		for (size_t i = 0; i < jlen(tp, "buckets"); i++) {
			struct json_object *b = jidx(tp, "buckets", i);

			table_row(&t, ftime(b, "start_ns"), ftime(b, "end_ns"), fbytes_at(b, "bytes"),
				  jnull(b, "bytes_per_s") ? "-" : fmt("%s/s", fbytes(jdbl(b, "bytes_per_s"))),
				  fgbps(b, "gbps"), fint(b, "windows"), fdelay_at(b, "owd_p99_max_ns"));
		}
		table_print(&t);
	}

	print_profiler(jget(s, "profiler"));

	if (jlen(s, "anomalies")) {
		printf("\nAnomalies\n");
		table_init(&t, "ID>,KIND,SEVERITY,START,DURATION>,STATE,WHERE,RANKS (NODES),SUMMARY");
		for (size_t i = 0; i < jlen(s, "anomalies"); i++) {
			struct json_object *a = jidx(s, "anomalies", i);
			char ranks[160] = "";

			for (size_t k = 0; k < jlen(a, "rank_places"); k++) {
				struct json_object *r = jidx(a, "rank_places", k);
				size_t l = strlen(ranks);

				snprintf(ranks + l, sizeof(ranks) - l, "%s%" PRId64 " (%s)", k ? ", " : "",
					 jint(r, "rank"), jstr(r, "node"));
			}
			table_row(&t, fint(a, "id"), jstr(a, "kind"), jstr(a, "severity"),
				  ftime(a, "start_ns"), fage(jint(a, "duration_ns")),
				  json_object_get_boolean(jget(a, "open")) ? "open" : "closed", fwhere(a),
				  *ranks ? ranks : franks(a), jstr(a, "summary"));
		}
		table_print(&t);
	}

	if (jlen(s, "failovers")) {
		printf("\nFailovers\n");
		table_init(&t, "TIME,RANKS,LANE>,PATH,CAUSE,SEEN BY,DETECTED IN>,RESENT>,OUT FOR>");
		for (size_t i = 0; i < jlen(s, "failovers"); i++) {
			struct json_object *f = jidx(s, "failovers", i);

			table_row(&t, ftime(f, "time_ns"),
				  fmt("%" PRId64 "->%" PRId64, jint(f, "src_rank"), jint(f, "dst_rank")),
				  fint(f, "lane"),
				  fmt("%s/%s -> %s/%s", jstr(f, "src_node"), jstr(f, "src_nic"),
				      jstr(f, "dst_node"), jstr(f, "dst_nic")),
				  jstr(f, "cause"), jstr(f, "seen_by"), fdelay_at(f, "detect_ns"),
				  fbytes_at(f, "bytes_resent"),
				  jnull(f, "out_ns") ? "not back" : fdelay_at(f, "out_ns"));
		}
		table_print(&t);
	}
}

int cmd_job(struct cli *c, int argc, char **argv)
{
	char path[128];
	struct list_args a;
	struct json_object *o;
	int rc;

	LIST_OPTIONS(argc, argv, "lb", &a);
	if (optind == argc)
		return usage_error("which job? JOBID or JOBID.STEP");
	if (optind != argc - 1)
		return usage_error("one job at a time");
	if (strlen(argv[optind]) > 64)
		return usage_error("job id too long");
	snprintf(path, sizeof(path), "/api/v1/jobs/%s", argv[optind]);
	rc = fetch(c, path, a.query, &o);
	if (rc || c->json)
		goto out;
	if (!jlen(o, "steps"))
		printf("Job %s (uid %s): no steps recorded\n", fint(o, "job_id"), fint(o, "uid"));
	for (size_t i = 0; i < jlen(o, "steps"); i++) {
		if (i)
			printf("\n");
		print_step(o, jidx(o, "steps", i));
	}
out:
	json_object_put(o);
	return rc;
}

int cmd_anomalies(struct cli *c, int argc, char **argv)
{
	struct list_args a;
	struct json_object *o;
	struct table t;
	int rc;

	LIST_OPTIONS(argc, argv, "no", &a);
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	rc = fetch(c, "/api/v1/anomalies", a.query, &o);
	if (rc || c->json)
		goto out;
	table_init(&t, "ID>,KIND,SEVERITY,START,DURATION>,STATE,WHERE,JOBS (RANKS),SUMMARY");
	for (size_t i = 0; i < jlen(o, "anomalies"); i++) {
		struct json_object *an = jidx(o, "anomalies", i);
		char where[160], jobs[160] = "";

		snprintf(where, sizeof(where), "%s", fwhere(an));
		for (size_t k = 0; k < jlen(an, "jobs"); k++) {
			struct json_object *j = jidx(an, "jobs", k);
			size_t l = strlen(jobs);

			snprintf(jobs + l, sizeof(jobs) - l, "%s%s (%s)", k ? ", " : "", fstep(j), franks(j));
		}
		table_row(&t, fint(an, "id"), jstr(an, "kind"), jstr(an, "severity"), ftime(an, "start_ns"),
			  fage(jint(an, "duration_ns")),
			  json_object_get_boolean(jget(an, "open")) ? "open" : "closed", where,
			  *jobs ? jobs : "-", jstr(an, "summary"));
	}
	table_print(&t);
	truncated_note(o, "anomalies");
out:
	json_object_put(o);
	return rc;
}

/* "4242.0 (0-3), 4243.0 (1)": the steps an incident or anomaly hit. */
static const char *fjobs(struct json_object *a)
{
	char *s = scratch();

	*s = 0;
	for (size_t k = 0; k < jlen(a, "jobs"); k++) {
		struct json_object *j = jidx(a, "jobs", k);
		size_t l = strlen(s);

		snprintf(s + l, SCRATCH_LEN - l, "%s%s (%s)", k ? ", " : "", fstep(j), franks(j));
	}
	return *s ? s : "-";
}

int cmd_incidents(struct cli *c, int argc, char **argv)
{
	struct list_args a;
	struct json_object *o;
	struct table t;
	int rc;

	LIST_OPTIONS(argc, argv, "no", &a);
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	rc = fetch(c, "/api/v1/incidents", a.query, &o);
	if (rc || c->json)
		goto out;
	table_init(&t, "ID>,KIND,SEVERITY,FIRST,DURATION>,STATE,WHERE,MEMBERS>,JOBS (RANKS),SUMMARY");
	for (size_t i = 0; i < jlen(o, "incidents"); i++) {
		struct json_object *n = jidx(o, "incidents", i);

		table_row(&t, fint(n, "id"), jstr(n, "kind"), jstr(n, "severity"), ftime(n, "first_ns"),
			  fage(jint(n, "duration_ns")),
			  json_object_get_boolean(jget(n, "open")) ? "open" : "closed", fwhere(n),
			  fint(n, "members"), fjobs(n), jstr(n, "summary"));
	}
	table_print(&t);
	truncated_note(o, "incidents");
out:
	json_object_put(o);
	return rc;
}

int cmd_incident(struct cli *c, int argc, char **argv)
{
	struct list_args a;
	struct json_object *o;
	struct table t;
	char path[96];
	int rc;

	LIST_OPTIONS(argc, argv, "", &a);
	if (optind != argc - 1)
		return usage_error("one incident ID, as `fabriciq incidents` lists them");
	if (!argv[optind][0] || strspn(argv[optind], "0123456789") != strlen(argv[optind]) ||
	    strlen(argv[optind]) > 18)
		return usage_error("'%s' is not an incident ID", argv[optind]);
	snprintf(path, sizeof(path), "/api/v1/incidents/%s", argv[optind]);
	rc = fetch(c, path, NULL, &o);
	if (rc || c->json)
		goto out;
	printf("incident %s: %s (%s), %s\n", fint(o, "id"), jstr(o, "kind"), jstr(o, "severity"), fwhere(o));
	printf("  %s\n", jstr(o, "summary"));
	printf("  from %s, %s, %s\n", ftime(o, "first_ns"), fage(jint(o, "duration_ns")),
	       json_object_get_boolean(jget(o, "open")) ? "still open" : fmt("ended %s", ftime(o, "end_ns")));
	printf("  jobs hit: %s\n", fjobs(o));
	printf("  evidence: %s\n\n",
	       json_object_to_json_string_ext(jget(o, "evidence"), JSON_C_TO_STRING_PLAIN));
	table_init(&t, "TIME,EVENT,ANOMALY>,KIND,SUMMARY");
	for (size_t i = 0; i < jlen(o, "timeline"); i++) {
		struct json_object *e = jidx(o, "timeline", i);

		table_row(&t, ftime(e, "time_ns"), jstr(e, "what"), fint(e, "anomaly_id"), jstr(e, "kind"),
			  jstr(e, "summary"));
	}
	table_print(&t);
out:
	json_object_put(o);
	return rc;
}
