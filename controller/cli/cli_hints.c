/*
 * cli_hints: `fabriciq hints` and `hints --apply`: the drain/resume hints
 * as a table with their scontrol commands, and running them (fork/exec,
 * no shell). Each command is built here from the hint's checked fields
 * (controller/hint.h), never taken from the answer, for a node Slurm
 * knows; a resume touches only nodes whose Slurm reason is fabriciq's;
 * each outcome is recorded in the database. Fabric hints (a switch or
 * cable to check, no node) are shown with what to check; nothing runs
 * for them.
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

#include "controller/cli/cli.h"
#include "controller/hint.h"
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

/*
 * What Slurm says of the node (`scontrol show node NODE`): 0 with its reason
 * (the Reason= line without the " [user@time]" Slurm appends; "" for
 * none), or -1 if scontrol failed or its answer is not that node's
 * record, said on stderr. Slurm knowing the node is what lets a hint touch it.
 */
static int slurm_node(const char *node, char *reason, size_t len)
{
	char out[16384];
	char *argv[] = {"scontrol", "show", "node", (char *)node, NULL};
	size_t nl = strlen(node);
	char *line, *end;
	int rc;

	rc = run_command(argv, out, sizeof(out));
	*reason = '\0';
	/* a known node's record starts "NodeName=NODE " */
	if (rc != 0 || strncmp(out, "NodeName=", 9) || strncmp(out + 9, node, nl) ||
	    !strchr(" \n", out[9 + nl])) {
		fprintf(stderr, "fabriciq: Slurm does not know node %s (scontrol show node: exit %d)\n", node,
			rc);
		return -1;
	}
	for (line = out; line && *line; line = end ? end + 1 : NULL) {
		end = strchr(line, '\n');
		if (end)
			*end = '\0';
		line += strspn(line, " \t");
		if (strncmp(line, "Reason=", 7))
			continue;
		snprintf(reason, len, "%s", line + 7);
		end = strrchr(reason, '[');
		if (end && end > reason && end[-1] == ' ' && reason[strlen(reason) - 1] == ']')
			end[-1] = '\0';
		break;
	}
	return 0;
}

/* The command of hint h, built from its fields (hint.h): 0, or -EINVAL
 * with err saying which field is not one fabriciq writes. */
static int hint_command(struct json_object *h, struct fq_hint_cmd *cmd, char *err, size_t errlen)
{
	const char *field[3] = {"action", "node", "slurm_reason"}, *v[3];

	for (int i = 0; i < 3; i++) {
		struct json_object *f = jget(h, field[i]);

		v[i] = json_object_is_type(f, json_type_string) ? json_object_get_string(f) : NULL;
	}
	return fq_hint_command(v[0], v[1], v[2], cmd, err, errlen);
}

struct apply_stats {
	int applied, skipped, failed;
	struct json_object *report; /* --json: one entry per hint */
};

/* A hint's place: its node, or a fabric hint's component. */
static const char *hint_place(struct json_object *h)
{
	return fq_hint_is_check(jstr(h, "action")) ? jstr(h, "component") : jstr(h, "node");
}

static void apply_note(struct apply_stats *st, struct json_object *h, const char *outcome, const char *why)
{
	if (st->report) {
		struct json_object *e = json_object_new_object();

		json_object_object_add(e, "id", json_object_new_int64(jint(h, "id")));
		json_object_object_add(e, "node",
				       jnull(h, "node") ? NULL : json_object_new_string(jstr(h, "node")));
		json_object_object_add(e, "component",
				       jnull(h, "component") ? NULL
							     : json_object_new_string(jstr(h, "component")));
		json_object_object_add(e, "action", json_object_new_string(jstr(h, "action")));
		json_object_object_add(e, "outcome", json_object_new_string(outcome));
		json_object_object_add(e, "why", json_object_new_string(why));
		json_object_array_add(st->report, e);
	} else {
		/* the answer's strings may hold terminal escapes */
		char *action = cell_copy(jstr(h, "action")), *node = cell_copy(hint_place(h)),
		     *w = cell_copy(why);

		printf("hint %" PRId64 " (%s %s): %s: %s\n", jint(h, "id"), action, node, outcome, w);
		free(action);
		free(node);
		free(w);
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
 * One pending hint. Its command is built here from its fields (hint.h),
 * never taken from the answer: a hint whose action, node name or reason
 * is not one fabriciq writes is refused (failed) and nothing runs, nor
 * does anything run for a node Slurm does not know. A drain is applied
 * unless Slurm already has a reason for the node that is not fabriciq's
 * (an administrator's drain is left alone); a resume only if the node's
 * reason is fabriciq's (never undo an administrator's drain); a resume of
 * a node with no reason has nothing to do and is recorded. Superseded
 * hints (a later hint for the node) are recorded without running anything.
 * A fabric hint runs nothing either: a switch or cable for people to
 * check. It is printed with what to check and recorded (handed over).
 */
static void apply_hint(struct fq_db *db, bool dry_run, struct json_object *h, struct apply_stats *st)
{
	bool drain = !strcmp(jstr(h, "action"), "drain"), check = fq_hint_is_check(jstr(h, "action"));
	char reason[512], why[800], err[400], out[256];
	struct fq_hint_cmd cmd;
	int rc;

	if (json_object_get_boolean(jget(h, "superseded"))) {
		if (!dry_run && !record(db, st, h))
			return;
		st->skipped++;
		apply_note(st, h, dry_run ? "would record" : "recorded",
			   check ? "superseded by a later hint for the component, or its incident's"
				 : "superseded by a later hint for the node");
		return;
	}
	if (check) {
		snprintf(why, sizeof(why), "a fabric hint, nothing to run: %s", jstr(h, "reason"));
		if (!dry_run && !record(db, st, h))
			return;
		st->skipped++;
		apply_note(st, h, dry_run ? "would record" : "recorded", why);
		return;
	}
	if (hint_command(h, &cmd, err, sizeof(err))) {
		snprintf(why, sizeof(why), "refused, nothing run: %s", err);
		st->failed++;
		apply_note(st, h, "failed", why);
		return;
	}
	if (slurm_node(cmd.argv[2] + strlen("NodeName="), reason, sizeof(reason))) {
		st->failed++;
		apply_note(st, h, "failed", "refused, nothing run: Slurm does not know the node");
		return;
	}
	if (drain && *reason && !fq_hint_own_reason(reason)) {
		snprintf(why, sizeof(why), "Slurm already has a reason not from fabriciq ('%s'): left alone",
			 reason);
		st->skipped++;
		apply_note(st, h, "skipped", why);
		return;
	}
	if (!drain && *reason && !fq_hint_own_reason(reason)) {
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
		apply_note(st, h, "would run", cmd.text);
		return;
	}
	rc = run_command(cmd.argv, out, sizeof(out));
	if (rc != 0) {
		snprintf(why, sizeof(why), "%s exited with %d", cmd.text, rc);
		st->failed++;
		apply_note(st, h, "failed", why);
		return;
	}
	if (!record(db, st, h))
		return;
	st->applied++;
	apply_note(st, h, "applied", cmd.text);
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

/* The fabric hints not superseded, each with what to check (a cell's
 * length would stretch the table). */
static void print_checks(struct json_object *o)
{
	for (size_t i = 0, first = 1; i < jlen(o, "hints"); i++) {
		struct json_object *h = jidx(o, "hints", i);
		char *comp, *what;

		if (!fq_hint_is_check(jstr(h, "action")) || json_object_get_boolean(jget(h, "superseded")))
			continue;
		if (first)
			printf("\nFabric checks (a switch or cable at fault, no node: nothing to run):\n");
		first = 0;
		/* the answer's strings may hold terminal escapes */
		comp = cell_copy(jstr(h, "component"));
		what = cell_copy(jstr(h, "reason"));
		printf("  %s (hint %" PRId64 ", anomaly %s): %s\n", comp, jint(h, "id"),
		       jnull(h, "anomaly_id") ? "-"
					      : fmt("%s %s", fint(h, "anomaly_id"), jstr(h, "anomaly_kind")),
		       what);
		free(comp);
		free(what);
	}
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
	table_init(&t, "ID>,CREATED,NODE,ACTION,NIC,COMPONENT,REASON,ANOMALY,RUNNING JOBS,NOTE");
	for (size_t i = 0; i < jlen(o, "hints"); i++) {
		struct json_object *h = jidx(o, "hints", i);
		char jobs[160] = "", err[400];
		struct fq_hint_cmd cmd;
		bool check;

		for (size_t k = 0; k < jlen(h, "running_jobs"); k++) {
			size_t l = strlen(jobs);

			snprintf(jobs + l, sizeof(jobs) - l, "%s%" PRId64, k ? "," : "",
				 json_object_get_int64(jidx(h, "running_jobs", k)));
		}

		check = fq_hint_is_check(jstr(h, "action"));
		table_row(
		    &t, fint(h, "id"), ftime(h, "created_ns"), jstr(h, "node"), jstr(h, "action"),
		    jstr(h, "nic"), jstr(h, "component"), check ? "what to check: below" : jstr(h, "reason"),
		    jnull(h, "anomaly_id") ? "-"
					   : fmt("%s %s", fint(h, "anomaly_id"), jstr(h, "anomaly_kind")),
		    *jobs ? jobs : "-",
		    json_object_get_boolean(jget(h, "superseded")) ? "superseded"
		    : check                                        ? "fabric: nothing to run"
		    : hint_command(h, &cmd, err, sizeof(err))      ? fmt("refused: %s", err)
								   : "");
	}
	table_print(&t);
	print_checks(o);
	for (size_t i = 0, first = 1; i < jlen(o, "hints"); i++) {
		struct json_object *h = jidx(o, "hints", i);
		struct fq_hint_cmd cmd;
		char err[400];

		if (json_object_get_boolean(jget(h, "superseded")) || hint_command(h, &cmd, err, sizeof(err)))
			continue;
		if (first)
			printf("\nCommands (`fabriciq hints --apply` runs them, resuming only nodes fabriciq "
			       "drained):\n");
		first = 0;
		printf("  %s\n", cmd.text);
	}
out:
	json_object_put(o);
	return rc;
}
