/*
 * fabriciq: the administrator's CLI. A client of the controller's JSON API
 * (controller/api.h) over HTTP, or, with --db, of the same API computed
 * in-process from the database (for the database host, or a controller
 * that is down). Prints the API's JSON (--json) or aligned tables for
 * people: local times, numbers with units. Every request over HTTP carries
 * a munge credential for its path (controller/api.h), which the job,
 * anomaly and hint paths need. `hints --apply` runs scontrol (fork/exec,
 * no shell) and records what it applied in the database.
 *
 * Exit codes (doc/fabriciq.1): 0 ok; 1 error talking to the controller,
 * the database or Slurm; 2 usage (also a parameter the API refused); 3 not
 * found (unknown job or step).
 */
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/config.h"
#include "common/http_client.h"
#include "common/munge_cred.h"
#include "controller/api.h"
#include "controller/cli/cli.h"
#include "db/db.h"

#define DEFAULT_CONTROLLER "http://127.0.0.1:7180"
#define MAX_RESPONSE       (64u << 20)

/* ---- talking to the API ----------------------------------------------------- */

/* Percent-encodes s (RFC 3986 unreserved and the characters of `keep` kept). */
static void url_encode(const char *s, char *out, size_t len, const char *keep)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (; *s && o + 4 < len; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    strchr("-._~", c) || strchr(keep, c)) {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
}

/* Appends "&name=value" (value encoded) to q. */
void qadd(char *q, size_t len, const char *name, const char *value)
{
	char enc[800];
	size_t n = strlen(q);

	url_encode(value, enc, sizeof(enc), "");
	snprintf(q + n, len - n, "%s%s=%s", n ? "&" : "", name, enc);
}

/*
 * GETs path?query from the controller (or the API in-process with --db).
 * 0 and *out (put it) on 200, printing the JSON first with --json;
 * otherwise the error is printed and the exit code returned.
 */
int fetch(struct cli *c, const char *path, const char *query, struct json_object **out)
{
	struct fq_http_response resp = {0};
	struct json_object *o, *e;
	char err[512], target[1200];
	int status;

	*out = NULL;
	if (c->db) {
		status = fq_api_get(c->db, path, query, &resp.body);
	} else {
		char epath[600], *auth = NULL, *cred = NULL, munge_err[256] = "";
		int rc;

		url_encode(path, epath, sizeof(epath), "/");
		snprintf(target, sizeof(target), "%s%s%s", epath, query && *query ? "?" : "",
			 query ? query : "");
		/* Without munge the open paths still answer: say why only if refused. */
		if (!fq_munge_encode(c->munge_socket, path, strlen(path), FQ_API_AUTH_TTL_S, &cred, munge_err,
				     sizeof(munge_err)) &&
		    asprintf(&auth, "%s%s", FQ_API_AUTH_SCHEME, cred) < 0)
			auth = NULL;
		free(cred);
		rc = fq_http_get(c->controller, target, auth, c->timeout_ms, MAX_RESPONSE, &resp, err,
				 sizeof(err));
		free(auth);
		if (rc) {
			fprintf(
			    stderr,
			    "fabriciq: controller %s: %s\n"
			    "fabriciq: is fabriciq-controller running there (systemctl status "
			    "fabriciq-controller)? "
			    "Else name it with --controller URL or $FABRICIQ_CONTROLLER, or ask the database "
			    "directly with --db CONNINFO\n",
			    c->controller, err);
			return EXIT_FAIL;
		}
		status = resp.status;
		if (status == 401 && *munge_err)
			fprintf(stderr,
				"fabriciq: no credential sent: %s\n"
				"fabriciq: is munged running here (systemctl status munge)? Its socket: "
				"--munge-socket "
				"PATH or $FABRICIQ_MUNGE_SOCKET\n",
				munge_err);
		else if (status == 401 || status == 403)
			fprintf(
			    stderr,
			    "fabriciq: the controller refused this user's credential: these paths are for "
			    "the uids in the controller's controller.api_admin_uids\n");
	}
	o = resp.body ? json_tokener_parse(resp.body) : NULL;
	if (!o) {
		fprintf(stderr, "fabriciq: %s: the answer to %s (HTTP %d) is not JSON\n",
			c->db ? "api" : c->controller, path, status);
		free(resp.body);
		return EXIT_FAIL;
	}
	if (status != 200) {
		e = jget(o, "error");
		fprintf(stderr, "fabriciq: %s (HTTP %d)\n", e ? json_object_get_string(e) : "request failed",
			status);
		json_object_put(o);
		free(resp.body);
		return status == 404 ? EXIT_NOT_FOUND : status == 400 ? EXIT_USAGE : EXIT_FAIL;
	}
	if (c->json)
		printf("%s\n", resp.body);
	free(resp.body);
	*out = o;
	return EXIT_OK;
}

/* ---- commands ------------------------------------------------------------------ */

const struct command *current;

void command_usage(FILE *f, const struct command *cmd)
{
	fprintf(f, "Usage: fabriciq [OPTIONS] %s%s%s\n%s", cmd->name, *cmd->synopsis ? " " : "",
		cmd->synopsis, cmd->help);
}

/* A command's own options (getopt_long; '?' after printing the error). */
int next_opt(int argc, char **argv, const char *shortopts, const struct option *longopts)
{
	return getopt_long(argc, argv, shortopts, longopts, NULL);
}

int usage_error(const char *fmt_, ...)
{
	va_list ap;

	fputs("fabriciq: ", stderr);
	va_start(ap, fmt_);
	vfprintf(stderr, fmt_, ap);
	va_end(ap);
	fprintf(stderr, " (fabriciq %s --help)\n", current->name);
	return EXIT_USAGE;
}

/* Options of commands that take none but --help. */
int no_options(int argc, char **argv)
{
	static const struct option lo[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
	int o;

	while ((o = next_opt(argc, argv, "h", lo)) != -1) {
		if (o == 'h') {
			command_usage(stdout, current);
			return -1;
		}
		return EXIT_USAGE;
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	return 0;
}

static int cmd_status(struct cli *c, int argc, char **argv)
{
	struct json_object *o, *clk;
	int rc;

	NO_OPTIONS(argc, argv);
	rc = fetch(c, "/api/v1/status", NULL, &o);
	if (rc || c->json)
		goto out;
	printf("controller     %s (fabriciq %s)\n",
	       c->db ? "none: direct database access (--db)" : c->controller,
	       jstr(jget(o, "controller"), "version"));
	printf("database       schema version %s (this fabriciq: %s), time %s\n",
	       fint(jget(o, "database"), "schema_version"), fint(jget(o, "database"), "code_version"),
	       ftime(o, "database_time_ns"));
	printf("nodes          %s, %s reporting\n", fint(o, "nodes"), fint(o, "nodes_reporting"));
	printf("links          %s, %s down\n", fint(o, "links"), fint(o, "links_down"));
	printf("running steps  %s\n", fint(o, "steps_running"));
	printf("anomalies      %s open, %s critical\n", fint(o, "anomalies_open"),
	       fint(o, "anomalies_open_critical"));
	printf("drain hints    %s pending, %s fabric hints (what to check)\n", fint(o, "hints_pending"),
	       fint(o, "fabric_hints_pending"));
	printf("clocks        ");
	clk = jget(o, "clock");
	if (!clk || !json_object_object_length(clk))
		printf(" no nodes");
	else {
		const char *sep = " ";

		json_object_object_foreach(clk, k, v)
		{
			printf("%s%s %" PRId64, sep, k, json_object_get_int64(v));
			sep = ", ";
		}
	}
	printf("\n");
out:
	json_object_put(o);
	return rc;
}

static int cmd_nodes(struct cli *c, int argc, char **argv)
{
	struct json_object *o;
	struct table t;
	int rc;

	NO_OPTIONS(argc, argv);
	rc = fetch(c, "/api/v1/nodes", NULL, &o);
	if (rc || c->json)
		goto out;
	table_init(&t, "NODE,AGENT,LAST SEEN,AGE>,CLOCK,NICS (NAME RAIL SPEED; * FRONT END)");
	for (size_t i = 0; i < jlen(o, "nodes"); i++) {
		struct json_object *n = jidx(o, "nodes", i);
		char nics[1024] = "";

		for (size_t k = 0; k < jlen(n, "nics"); k++) {
			struct json_object *x = jidx(n, "nics", k);
			size_t l = strlen(nics);

			snprintf(nics + l, sizeof(nics) - l, "%s%s%s r%s %s", l ? ", " : "", jstr(x, "name"),
				 json_object_get_boolean(jget(x, "front_end")) ? "*" : "", fint(x, "rail"),
				 jint(x, "speed_mbps") ? fmt("%gG", (double)jint(x, "speed_mbps") / 1000)
						       : "?");
		}
		table_row(&t, jstr(n, "name"), jstr(n, "agent_version"), ftime(n, "last_seen_ns"),
			  fage((int64_t)(jdbl(n, "last_seen_age_s") * 1e9)), jstr(n, "clock_status"), nics);
	}
	table_print(&t);
out:
	json_object_put(o);
	return rc;
}

/* --limit N as a query parameter (checked by the API). */
static const struct option list_opts[] = {
    {"limit", required_argument, NULL, 'n'}, {"node", required_argument, NULL, 'N'},
    {"state", required_argument, NULL, 's'}, {"running", no_argument, NULL, 'r'},
    {"since", required_argument, NULL, 'S'}, {"open", no_argument, NULL, 'o'},
    {"lanes", required_argument, NULL, 'l'}, {"bucket", required_argument, NULL, 'b'},
    {"apply", no_argument, NULL, 'a'},       {"dry-run", no_argument, NULL, 'd'},
    {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0},
};

/* --since: RFC 3339 as is, or "30m", "2h", "7d", "90s" ago (UTC). */
static int since_param(const char *s, char *out, size_t len)
{
	static const struct {
		char unit;
		long secs;
	} units[] = {{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}};
	char *end;
	long v = strtol(s, &end, 10);

	if (end != s && *s >= '0' && *s <= '9' && end[0] && !end[1]) {
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (*end == units[i].unit && v <= 3650L * 86400 / units[i].secs) {
				time_t t = time(NULL) - v * units[i].secs;
				struct tm tm;

				gmtime_r(&t, &tm);
				strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
				return 0;
			}
	}
	snprintf(out, len, "%s", s); /* the API checks RFC 3339 */
	return 0;
}

int list_options(int argc, char **argv, const char *allowed, struct list_args *a)
{
	char shortopts[32], since[64];
	int o;

	snprintf(shortopts, sizeof(shortopts), "h");
	memset(a, 0, sizeof(*a));
	while ((o = next_opt(argc, argv, shortopts, list_opts)) != -1) {
		if (o == 'h') {
			command_usage(stdout, current);
			return -1;
		}
		if (o == '?' || !strchr(allowed, o)) {
			if (o != '?')
				usage_error("option %s does not apply here", argv[optind - 1]);
			return EXIT_USAGE;
		}
		switch (o) {
		case 'n':
			qadd(a->query, sizeof(a->query), "limit", optarg);
			break;
		case 'N':
			qadd(a->query, sizeof(a->query), "node", optarg);
			break;
		case 's':
			qadd(a->query, sizeof(a->query), "state", optarg);
			break;
		case 'r':
			qadd(a->query, sizeof(a->query), "running", "1");
			break;
		case 'o':
			qadd(a->query, sizeof(a->query), "open", "1");
			break;
		case 'S':
			since_param(optarg, since, sizeof(since));
			qadd(a->query, sizeof(a->query), "since", since);
			break;
		case 'l':
			qadd(a->query, sizeof(a->query), "lanes", optarg);
			break;
		case 'b':
			qadd(a->query, sizeof(a->query), "bucket", optarg);
			break;
		case 'a':
			a->apply = true;
			break;
		case 'd':
			a->dry_run = true;
			break;
		}
	}
	return 0;
}

void truncated_note(struct json_object *o, const char *what)
{
	if (json_object_get_boolean(jget(o, "truncated")))
		printf("(the first %" PRId64 " %s; --limit N for more)\n", jint(o, "limit"), what);
}

static int cmd_links(struct cli *c, int argc, char **argv)
{
	struct list_args a;
	struct json_object *o;
	struct table t;
	int rc;

	LIST_OPTIONS(argc, argv, "nNs", &a);
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	rc = fetch(c, "/api/v1/links", a.query, &o);
	if (rc || c->json)
		goto out;
	table_init(&t,
		   "SOURCE,DESTINATION,STATE,SINCE,FLAPS/1H>,FLAPS/24H>,LOSS/1H>,OWD P50>,OWD P99>,RTT P50>");
	for (size_t i = 0; i < jlen(o, "links"); i++) {
		struct json_object *l = jidx(o, "links", i);

		table_row(&t, fplace(l, "src_node", "src_nic"), fplace(l, "dst_node", "dst_nic"),
			  jstr(l, "state"), ftime(l, "state_since_ns"), fint(l, "flaps_1h"),
			  fint(l, "flaps_24h"), fpct(l, "loss_1h"), fus(l, "owd_fwd_p50_us"),
			  fus(l, "owd_fwd_p99_us"), fus(l, "rtt_p50_us"));
	}
	table_print(&t);
	truncated_note(o, "links");
out:
	json_object_put(o);
	return rc;
}

/* "4242.0", with Slurm's names for its special steps. */
static int cmd_events(struct cli *c, int argc, char **argv)
{
	struct list_args a;
	struct json_object *o;
	struct table t;
	int rc;

	LIST_OPTIONS(argc, argv, "nNS", &a);
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	rc = fetch(c, "/api/v1/events", a.query, &o);
	if (rc || c->json)
		goto out;
	table_init(&t, "TIME,NODE/NIC,REMOTE,STATE,LEVEL,DETECTOR,DETECTED AFTER>");
	for (size_t i = 0; i < jlen(o, "events"); i++) {
		struct json_object *e = jidx(o, "events", i);

		table_row(&t, ftime(e, "time_ns"), fplace(e, "node", "nic"),
			  fplace(e, "remote_node", "remote_nic"), jstr(e, "state"),
			  json_object_get_boolean(jget(e, "nic_level")) ? "nic" : "path", jstr(e, "detector"),
			  fdelay((double)(jint(e, "detected_ns") - jint(e, "time_ns"))));
	}
	table_print(&t);
	truncated_note(o, "events");
out:
	json_object_put(o);
	return rc;
}

static int cmd_clock(struct cli *c, int argc, char **argv)
{
	struct json_object *o;
	struct table t;
	int rc;

	NO_OPTIONS(argc, argv);
	rc = fetch(c, "/api/v1/clock", NULL, &o);
	if (rc || c->json)
		goto out;
	table_init(&t, "NODE,STATUS,LAST REPORT,AGE>,OFFSET>,ERROR BOUND>,EPOCH>,PEERS>,WORST PEER>");
	for (size_t i = 0; i < jlen(o, "clock"); i++) {
		struct json_object *k = jidx(o, "clock", i);

		table_row(&t, jstr(k, "node"), jstr(k, "status"), ftime(k, "last_report_ns"),
			  jnull(k, "report_age_ns") ? "-" : fage(jint(k, "report_age_ns")),
			  fdelay_at(k, "applied_offset_ns"), fdelay_at(k, "applied_error_ns"),
			  fint(k, "correction_epoch"), fint(k, "peers"), fdelay_at(k, "worst_peer_error_ns"));
	}
	table_print(&t);
	printf("(error budget %s: above it a node is unsynchronised)\n", fdelay_at(o, "error_budget_ns"));
out:
	json_object_put(o);
	return rc;
}

/* ---- db ------------------------------------------------------------------------- */

static int cmd_db(struct cli *c, int argc, char **argv)
{
	struct fq_db *db = c->db;
	int rc, applied = 0, version = 0;
	char err[1024];

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			command_usage(stdout, current);
			return EXIT_OK;
		}
	if (argc < 2)
		return usage_error("db what? (migrate)");
	if (argc > 2 || strcmp(argv[1], "migrate"))
		return usage_error("unknown db command '%s' (migrate)", argv[argc - 1]);
	if (!db && fq_db_create(c->conninfo ? c->conninfo : "", &db, err, sizeof(err))) {
		fprintf(stderr, "fabriciq: %s\n", err);
		return EXIT_FAIL;
	}
	rc = fq_db_migrate(db, &applied);
	if (!rc)
		rc = fq_db_schema_version(db, &version);
	if (rc) {
		fprintf(stderr, "fabriciq: db migrate: %s\n", fq_db_error(db));
		rc = EXIT_FAIL;
	} else if (c->json) {
		printf("{\"schema_version\":%d,\"applied\":%d}\n", version, applied);
	} else if (applied) {
		printf("schema migrated to version %d (%d migration%s applied)\n", version, applied,
		       applied == 1 ? "" : "s");
	} else {
		printf("schema at version %d: up to date, nothing applied\n", version);
	}
	if (db != c->db)
		fq_db_destroy(db);
	return rc;
}

/* ---- main ------------------------------------------------------------------------ */

static const struct command commands[] = {
    {"status", "controller, database, agents, anomalies and hints at a glance", "",
     "Controller, database, agents, open anomalies and pending hints at a glance.\n", cmd_status},
    {"nodes", "nodes with their agent, last report, clock status and NICs", "",
     "Nodes with their agent, last report, clock status and NICs.\n", cmd_nodes},
    {"links", "probed paths: state, flaps, loss, one-way delays",
     "[--node NODE] [--state up|down|unknown] [--limit N]",
     "Probed paths (view link_health): state, flaps in the last hour and day, probe loss and\n"
     "one-way delays over the last hour. Down paths first, then the most flapping.\n"
     "  --node NODE   paths from or to NODE\n"
     "  --state S     only paths in state S\n"
     "  --limit N     at most N paths (default 1000)\n",
     cmd_links},
    {"jobs", "recent job steps with their fabric efficiency", "[--running] [--limit N]",
     "Recent job steps, newest first, with their fabric efficiency (view job_efficiency):\n"
     "bytes moved, achieved and best throughput, share of degraded intervals, median lane\n"
     "p99 one-way delay, anomalies and failovers.\n"
     "  --running     only steps still running\n"
     "  --limit N     at most N steps (default 20, at most 1000)\n",
     cmd_jobs},
    {"job", "the report of one job or step", "JOBID[.STEP] [--lanes N] [--bucket SECONDS]",
     "The report of one job (every step) or one step: ranks (node, NIC, pid), the slowest\n"
     "lanes, every lane (NICs, bytes, p50/p99 one-way delay), throughput over time,\n"
     "anomalies with the ranks they hit, and failovers. STEP may be batch, extern or\n"
     "interactive.\n"
     "  --lanes N       list at most N lanes (default 1000; the slowest five always)\n"
     "  --bucket S      throughput in buckets of S seconds (default: the reporting interval,\n"
     "                  coarser for long steps so there are at most 360 buckets)\n",
     cmd_job},
    {"events", "link up/down events", "[--since TIME] [--node NODE] [--limit N]",
     "Link up/down events, newest first.\n"
     "  --since TIME  RFC 3339 (2026-11-22T13:00:00Z) or a time ago: 90s, 30m, 2h, 7d\n"
     "                (default: the last day)\n"
     "  --node NODE   events of NODE (either end)\n"
     "  --limit N     at most N events (default 100, at most 10000)\n",
     cmd_events},
    {"anomalies", "anomalies with the steps and ranks they hit", "[--open] [--limit N]",
     "Anomalies, newest first, with the job steps and ranks they hit.\n"
     "  --open        only those still open\n"
     "  --limit N     at most N (default 100, at most 10000)\n",
     cmd_anomalies},
    {"incidents", "incidents: what is blamed, when, and the steps and ranks they hit", "[--open] [--limit N]",
     "Incidents, newest first: anomalies that are part of no other (a NIC's or path's link\n"
     "episode, a fabric component blamed for a delay, an anomaly alone), with what is blamed,\n"
     "when and for how long, how many anomalies are part of it and the steps and ranks hit.\n"
     "  --open        only those still open\n"
     "  --limit N     at most N (default 100, at most 10000)\n",
     cmd_incidents},
    {"incident", "one incident: its evidence, the jobs hit and a timeline", "ID",
     "One incident: what is blamed and why (its evidence: for a fabric component, the delayed\n"
     "paths through it and the healthy ones), the steps and ranks hit, and a timeline of it\n"
     "and of the anomalies that are part of it.\n",
     cmd_incident},
    {"hints", "drain/resume hints for Slurm (and --apply them)", "[--apply [--dry-run]]",
     "Pending drain/resume hints for Slurm nodes, with the exact scontrol command of each.\n"
     "  --apply       run them: `scontrol update NodeName=N State=DRAIN Reason=\"fabriciq: ...\"`\n"
     "                or `State=RESUME` (no shell), built from the hint's action, node and\n"
     "                reason; a hint is refused, nothing run, unless the action is drain or\n"
     "                resume, the node one Slurm node name that `scontrol show node` knows,\n"
     "                and the reason fabriciq's (\"fabriciq: ...\"). A drain is skipped when\n"
     "                Slurm already has a reason for the node that is not fabriciq's; a resume\n"
     "                runs only when the node's reason starts with \"fabriciq:\", so an\n"
     "                administrator's drain is never undone. Each hint applied (or moot:\n"
     "                superseded, or nothing to resume) is recorded in the database, which\n"
     "                needs --db CONNINFO or the PG* environment.\n"
     "  --dry-run     with --apply: read Slurm's state, say what would be done, change nothing\n",
     cmd_hints},
    {"clock", "each node's clock status", "",
     "Per node: its latest clock report and status (view clock_status).\n", cmd_clock},
    {"topology", "the fabric as the probes' routes show it, checked against the expected one", "",
     "The fabric inferred from every probed path's route (each agent traces its paths hop by\n"
     "hop with the probes' own 5-tuple): switches with their role and addresses, the links\n"
     "between them, which switch each NIC plugs into, and the differences from the site's\n"
     "expected topology (controller.topology_file, fabriciq-topology(5)): a NIC on another\n"
     "switch, a link not declared or not crossed, an undeclared switch. The cross-check by\n"
     "delay: the NICs nearest each other by their probes' delay floors (a leaf's, where the\n"
     "routes agree), and each NIC whose nearest peers by delay are not its nearest by route.\n"
     "Then the last day's route changes. --json adds every path's route (its switches and\n"
     "links in order).\n",
     cmd_topology},
    {"db", "create or upgrade the schema (db migrate)", "migrate",
     "  migrate       create or upgrade the fabriciq schema in the database (--db CONNINFO or\n"
     "                the PG* environment); idempotent\n",
     cmd_db},
    {"doctor", "check this node's fabriciq (for operators and NHC)",
     "[--config FILE] [--set KEY=VALUE]... [--clock-budget DURATION] [--plugstack FILE]\n"
     "                [--plugin-dir DIR] [--nccl-plugin PATH]",
     "Checks this node: the agent runs and publishes its status, clock page and path page; the\n"
     "clock is synchronised within the budget; munge round-trips; the agent's uplink to the\n"
     "controller is connected and authenticated; its NICs are the configured ones; the SPANK\n"
     "plugin is in plugstack.conf and loads; the NCCL net plugin loads and exports its ABIs.\n"
     "One PASS, FAIL or SKIP line per check (--json: one document). Exit status 0 when every\n"
     "check passed (or was skipped), 1 when one failed, 2 usage. Run as root (or the agent's\n"
     "group): the agent's status file is not world-readable.\n"
     "  -c, --config FILE         the agent's settings (default " FQ_CONFIG_PATH ")\n"
     "  -s, --set KEY=VALUE       override one agent setting, as fabriciq-agent -s\n"
     "  -b, --clock-budget D      largest acceptable clock error bound (default 1ms)\n"
     "  -p, --plugstack FILE      Slurm's plugstack.conf (default /etc/slurm/plugstack.conf)\n"
     "  -P, --plugin-dir DIR      where a relative plugstack path lives (default the install's)\n"
     "  -n, --nccl-plugin PATH    the NCCL net plugin (default the installed one)\n"
     "The munge socket is the global --munge-socket, else agent.munge_socket.\n",
     cmd_doctor},
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: fabriciq [OPTIONS] COMMAND [ARGS]\n"
		   "Fabric visibility for Slurm GPU clusters: ask the fabriciq controller.\n\nCommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\nOptions:\n"
		   "  -c, --controller URL  the controller's HTTP address (default $FABRICIQ_CONTROLLER,\n"
		   "                        else " DEFAULT_CONTROLLER ")\n"
		   "  -d, --db CONNINFO     no controller: compute the answers from the database directly\n"
		   "                        (libpq conninfo or URI; \"\" for the PG* environment)\n"
		   "  -j, --json            print the API's JSON instead of tables (also after COMMAND)\n"
		   "  -m, --munge-socket PATH\n"
		   "                        munged's socket, for the credential sent with each request\n"
		   "                        (default $FABRICIQ_MUNGE_SOCKET, else munge's own)\n"
		   "  -t, --timeout SECONDS for the controller's answer (default 10)\n"
		   "  -h, --help            this help; `fabriciq COMMAND --help` for a command's options\n"
		   "  -V, --version\n"
		   "\nExit status: 0 ok; 1 error talking to the controller, the database or Slurm;\n"
		   "2 usage (or a parameter the API refused); 3 not found (unknown job or step).\n");
}

/* `fabriciq status --json` as `fabriciq --json status`: every command
 * prints JSON, so --json is taken out of a command's arguments (up to a
 * "--"). Returns the new argc. */
static int take_json(int argc, char **argv, bool *json)
{
	int n = 0;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			for (; i < argc; i++)
				argv[n++] = argv[i];
		else if (!strcmp(argv[i], "--json"))
			*json = true;
		else
			argv[n++] = argv[i];
	}
	argv[n] = NULL;
	return n;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"controller", required_argument, NULL, 'c'},
	    {"db", required_argument, NULL, 'd'},
	    {"json", no_argument, NULL, 'j'},
	    {"munge-socket", required_argument, NULL, 'm'},
	    {"timeout", required_argument, NULL, 't'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	struct cli c = {.timeout_ms = 10000};
	const struct command *cmd = NULL;
	char err[1024], *end;
	int o, rc;
	double t;

	c.munge_socket = getenv("FABRICIQ_MUNGE_SOCKET");
	if (c.munge_socket && !*c.munge_socket)
		c.munge_socket = NULL;
	c.controller = getenv("FABRICIQ_CONTROLLER");
	if (!c.controller || !*c.controller)
		c.controller = DEFAULT_CONTROLLER;
	/* '+': options after the command are the command's own. */
	while ((o = getopt_long(argc, argv, "+c:d:jm:t:hV", lo, NULL)) != -1) {
		switch (o) {
		case 'c':
			c.controller = optarg;
			break;
		case 'd':
			c.conninfo = optarg;
			break;
		case 'j':
			c.json = true;
			break;
		case 'm':
			c.munge_socket = optarg;
			break;
		case 't':
			t = strtod(optarg, &end);
			if (*end || end == optarg || !(t > 0 && t <= 3600)) {
				fprintf(stderr, "fabriciq: --timeout wants seconds in (0, 3600], not '%s'\n",
					optarg);
				return EXIT_USAGE;
			}
			c.timeout_ms = (int)(t * 1000);
			break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		case 'V':
			printf("fabriciq %s (schema version %d)\n", PACKAGE_VERSION, fq_db_code_version());
			return EXIT_OK;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind == argc) {
		fprintf(stderr, "fabriciq: which command?\n");
		usage(stderr);
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[optind], commands[i].name))
			cmd = &commands[i];
	if (!cmd) {
		fprintf(stderr, "fabriciq: unknown command '%s' (fabriciq --help)\n", argv[optind]);
		return EXIT_USAGE;
	}
	current = cmd;
	argc -= optind;
	argv += optind;
	argc = take_json(argc, argv, &c.json);
	optind = 0; /* glibc: restart getopt for the command's options */
	if (c.conninfo && cmd->run != cmd_db) {
		bool help = false;

		for (int i = 1; i < argc; i++)
			help |= !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h");
		if (!help && fq_db_create(c.conninfo, &c.db, err, sizeof(err))) {
			fprintf(stderr, "fabriciq: %s\n", err);
			return EXIT_FAIL;
		}
	}
	rc = cmd->run(&c, argc, argv);
	fq_db_destroy(c.db);
	return rc;
}
