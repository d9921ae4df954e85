/*
 * cli_hints: `fabriciq hints` and `hints --apply`: the drain/resume hints
 * as a table with their scontrol commands, and running them (fork/exec,
 * no shell), touching only nodes whose Slurm reason is fabriciq's, each
 * outcome recorded in the database.
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "controller/cli.h"
#include "db/api_query.h"
#include "db/db.h"

/* ---- hints and --apply -------------------------------------------------------- */

/* Runs argv (PATH lookup, no shell) with stdout captured into out[len]
 * (NUL-terminated, truncated) and stderr passed through; at most 30 s.
 * Returns its exit status, or -1 if it could not run or was killed. */
static int run_command(char *const argv[], char *out, size_t len)
{
	int pfd[2], status = -1;
	size_t n = 0;
	pid_t pid;
	time_t deadline = time(NULL) + 30;

	if (pipe(pfd))
		return -1;
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (pid == 0) {
		dup2(pfd[1], STDOUT_FILENO);
		close(pfd[0]);
		close(pfd[1]);
		execvp(argv[0], argv);
		fprintf(stderr, "fabriciq: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	for (;;) {
		struct pollfd p = {.fd = pfd[0], .events = POLLIN};
		char sink[512];
		ssize_t r;

		if (time(NULL) >= deadline) {
			fprintf(stderr, "fabriciq: %s did not finish in 30 s: killed\n", argv[0]);
			kill(pid, SIGKILL);
			break;
		}
		if (poll(&p, 1, 1000) <= 0)
			continue;
		if (n + 1 < len)
			r = read(pfd[0], out + n, len - n - 1);
		else
			r = read(pfd[0], sink, sizeof(sink));
		if (r <= 0)
			break;
		if (n + 1 < len)
			n += (size_t)r;
	}
	out[n] = '\0';
	close(pfd[0]);
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The node's current Slurm reason (first line of `sinfo -h -N -n NODE -o
 * %E`; "" for none). 0, or -1 if sinfo failed or does not know the node. */
static int slurm_reason(const char *node, char *reason, size_t len)
{
	char nodearg[128];
	char *argv[] = {"sinfo", "-h", "-N", "-n", nodearg, "-o", "%E", NULL};
	int rc;

	snprintf(nodearg, sizeof(nodearg), "%s", node);
	rc = run_command(argv, reason, len);
	reason[strcspn(reason, "\n")] = '\0';
	if (rc != 0) {
		fprintf(stderr, "fabriciq: sinfo -n %s failed (exit %d)\n", node, rc);
		return -1;
	}
	if (!*reason && rc == 0) {
		/* sinfo prints nothing for a node it does not know */
		fprintf(stderr, "fabriciq: Slurm does not know node %s\n", node);
		return -1;
	}
	if (!strcmp(reason, "none"))
		reason[0] = '\0';
	return 0;
}

static bool fabriciq_reason(const char *reason)
{
	return !strncmp(reason, "fabriciq:", 9);
}

struct apply_stats {
	int applied, skipped, failed;
	struct json_object *report; /* --json: one entry per hint */
};

static void apply_note(struct apply_stats *st, struct json_object *h, const char *outcome, const char *why)
{
	if (st->report) {
		struct json_object *e = json_object_new_object();

		json_object_object_add(e, "id", json_object_new_int64(jint(h, "id")));
		json_object_object_add(e, "node", json_object_new_string(jstr(h, "node")));
		json_object_object_add(e, "action", json_object_new_string(jstr(h, "action")));
		json_object_object_add(e, "outcome", json_object_new_string(outcome));
		json_object_object_add(e, "why", json_object_new_string(why));
		json_object_array_add(st->report, e);
	} else {
		char *node = cell_copy(jstr(h, "node"));

		printf("hint %" PRId64 " (%s %s): %s: %s\n", jint(h, "id"), jstr(h, "action"), node, outcome,
		       why);
		free(node);
	}
}

/* Records hint h as applied; a failure counts as failed. */
static bool record(struct fq_db *db, struct apply_stats *st, struct json_object *h)
{
	if (fq_db_hint_applied(db, jint(h, "id")) == 0)
		return true;
	fprintf(stderr, "fabriciq: %s\n", fq_db_error(db));
	st->failed++;
	return false;
}

/*
 * One pending hint. A drain is applied unless Slurm already has a reason
 * for the node that is not fabriciq's (an administrator's drain is left
 * alone); a resume only if the node's reason is fabriciq's (never undo an
 * administrator's drain); a resume of a node with no reason has nothing to
 * do and is recorded. Superseded hints (a later hint for the node) are
 * recorded without running anything.
 */
static void apply_hint(struct fq_db *db, bool dry_run, struct json_object *h, struct apply_stats *st)
{
	bool drain = !strcmp(jstr(h, "action"), "drain");
	char reason[512], why[700], out[256];
	struct json_object *jargv = jget(h, "argv");
	char *argv[8] = {NULL};
	size_t n;
	int rc;

	if (json_object_get_boolean(jget(h, "superseded"))) {
		if (!dry_run && !record(db, st, h))
			return;
		st->skipped++;
		apply_note(st, h, dry_run ? "would record" : "recorded",
			   "superseded by a later hint for the node");
		return;
	}
	n = jargv ? json_object_array_length(jargv) : 0;
	if (!n || n >= sizeof(argv) / sizeof(argv[0])) {
		st->skipped++;
		apply_note(st, h, "skipped", jstr(h, "refused"));
		return;
	}
	if (slurm_reason(jstr(h, "node"), reason, sizeof(reason))) {
		st->failed++;
		apply_note(st, h, "failed", "cannot read the node's state from Slurm");
		return;
	}
	if (drain && *reason && !fabriciq_reason(reason)) {
		snprintf(why, sizeof(why), "Slurm already has a reason not from fabriciq ('%s'): left alone",
			 reason);
		st->skipped++;
		apply_note(st, h, "skipped", why);
		return;
	}
	if (!drain && *reason && !fabriciq_reason(reason)) {
		snprintf(why, sizeof(why), "the node's reason is not fabriciq's ('%s'): not resumed", reason);
		st->skipped++;
		apply_note(st, h, "skipped", why);
		return;
	}
	if (!drain && !*reason) {
		if (!dry_run && !record(db, st, h))
			return;
		st->skipped++;
		apply_note(st, h, dry_run ? "would record" : "recorded",
			   "the node is not drained: nothing to resume");
		return;
	}
	if (dry_run) {
		st->applied++;
		apply_note(st, h, "would run", jstr(h, "command"));
		return;
	}
	for (size_t i = 0; i < n; i++)
		argv[i] = (char *)json_object_get_string(json_object_array_get_idx(jargv, i));
	rc = run_command(argv, out, sizeof(out));
	if (rc != 0) {
		snprintf(why, sizeof(why), "%s exited with %d", jstr(h, "command"), rc);
		st->failed++;
		apply_note(st, h, "failed", why);
		return;
	}
	if (!record(db, st, h))
		return;
	st->applied++;
	apply_note(st, h, "applied", jstr(h, "command"));
}

static int apply_hints(struct cli *c, struct json_object *o, bool dry_run)
{
	struct apply_stats st = {0};
	struct fq_db *db = c->db;
	char err[512];

	if (!db && !dry_run && fq_db_create(c->conninfo ? c->conninfo : "", &db, err, sizeof(err))) {
		fprintf(stderr,
			"fabriciq: hints --apply records what it applied in the database: %s "
			"(--db CONNINFO or the PG* environment)\n",
			err);
		return EXIT_FAIL;
	}
	if (c->json)
		st.report = json_object_new_array();
	for (size_t i = 0; i < jlen(o, "hints"); i++)
		apply_hint(db, dry_run, jidx(o, "hints", i), &st);
	if (st.report) {
		struct json_object *r = json_object_new_object();

		json_object_object_add(r, "results", st.report);
		json_object_object_add(r, "applied", json_object_new_int(st.applied));
		json_object_object_add(r, "skipped", json_object_new_int(st.skipped));
		json_object_object_add(r, "failed", json_object_new_int(st.failed));
		json_object_object_add(r, "dry_run", json_object_new_boolean(dry_run));
		printf("%s\n", json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN |
								     JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(r);
	} else {
		printf("%s%d applied, %d skipped, %d failed\n", dry_run ? "dry run: " : "", st.applied,
		       st.skipped, st.failed);
	}
	if (db != c->db)
		fq_db_destroy(db);
	return st.failed ? EXIT_FAIL : EXIT_OK;
}

int cmd_hints(struct cli *c, int argc, char **argv)
{
	struct list_args a;
	struct json_object *o;
	struct table t;
	bool json = c->json;
	int rc;

	LIST_OPTIONS(argc, argv, "ad", &a);
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (a.dry_run && !a.apply)
		return usage_error("--dry-run goes with --apply");
	c->json = json && !a.apply; /* with --apply, --json prints the outcome instead */
	rc = fetch(c, "/api/v1/hints", NULL, &o);
	c->json = json;
	if (rc)
		goto out;
	if (a.apply) {
		rc = apply_hints(c, o, a.dry_run);
		goto out;
	}
	if (c->json)
		goto out;
	table_init(&t, "ID>,CREATED,NODE,ACTION,NIC,REASON,ANOMALY,RUNNING JOBS,NOTE");
	for (size_t i = 0; i < jlen(o, "hints"); i++) {
		struct json_object *h = jidx(o, "hints", i);
		char jobs[160] = "";

		for (size_t k = 0; k < jlen(h, "running_jobs"); k++) {
			size_t l = strlen(jobs);

			snprintf(jobs + l, sizeof(jobs) - l, "%s%" PRId64, k ? "," : "",
				 json_object_get_int64(jidx(h, "running_jobs", k)));
		}

		table_row(&t, fint(h, "id"), ftime(h, "created_ns"), jstr(h, "node"), jstr(h, "action"),
			  jstr(h, "nic"), jstr(h, "reason"),
			  jnull(h, "anomaly_id")
			      ? "-"
			      : fmt("%s %s", fint(h, "anomaly_id"), jstr(h, "anomaly_kind")),
			  *jobs ? jobs : "-",
			  json_object_get_boolean(jget(h, "superseded")) ? "superseded"
			  : jnull(h, "refused")                          ? ""
									 : "refused: bad node name");
	}
	table_print(&t);
	for (size_t i = 0, first = 1; i < jlen(o, "hints"); i++) {
		struct json_object *h = jidx(o, "hints", i);

		if (jnull(h, "command") || json_object_get_boolean(jget(h, "superseded")))
			continue;
		if (first)
			printf("\nCommands (`fabriciq hints --apply` runs them, resuming only nodes fabriciq "
			       "drained):\n");
		first = 0;
		printf("  %s\n", jstr(h, "command"));
	}
out:
	json_object_put(o);
	return rc;
}
