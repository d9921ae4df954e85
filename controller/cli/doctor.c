/* The node self-check (doctor.h). */
#include <dlfcn.h>
#include <errno.h>
#include <glob.h>
#include <json-c/json.h>
#include <libgen.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/clock_page.h"
#include "common/munge_cred.h"
#include "common/path_page.h"
#include "controller/cli/doctor.h"

/* What the SPANK plugin must export for slurmd to load and call it
 * (spank/spank_fabriciq.sym), and the ncclNet ABIs NCCL looks up
 * (nccl-plugin/abi/libnccl-net-fabriciq.sym): tests/controller/test-doctor.sh
 * holds these lists against the .sym files. */
static const char *const spank_symbols[] = {
    "plugin_name",      "plugin_type",           "plugin_version",   "spank_plugin_version",
    "slurm_spank_init", "slurm_spank_task_init", "slurm_spank_exit", NULL};
static const char *const nccl_symbols[] = {"ncclNetPlugin_v8",  "ncclNetPlugin_v9",  "ncclNetPlugin_v10",
					   "ncclNetPlugin_v11", "ncclNetPlugin_v12", NULL};

#define PLUGSTACK_MAX_DEPTH 8
#define SPANK_PLUGIN_FILE   "spank_fabriciq.so"

__attribute__((format(printf, 3, 4))) static void say(struct doctor_check *c, enum doctor_result r,
						      const char *fmt, ...)
{
	va_list ap;

	c->result = r;
	va_start(ap, fmt);
	vsnprintf(c->msg, sizeof(c->msg), fmt, ap);
	va_end(ap);
}

static struct json_object *jmember(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static const char *jtext(struct json_object *o, const char *key)
{
	struct json_object *v = jmember(o, key);

	return v ? json_object_get_string(v) : "?";
}

/* ---- agent -------------------------------------------------------------------- */

/* A status older than this is an agent that stopped writing it. */
static int64_t status_max_age_ns(const struct agent_config *a)
{
	return 3 * (int64_t)a->report_interval + 2000000000;
}

/* The path page's last publication, seconds ago; < 0 when unreadable. */
static double path_page_age_s(const char *path)
{
	struct fq_path_page_reader *r;
	int64_t updated;

	if (fq_path_page_reader_open(path, &r) < 0)
		return -1;
	updated = fq_path_page_updated_ns(r);
	fq_path_page_reader_close(r);
	return updated ? (double)(fq_now_ns() - updated) / 1e9 : -1;
}

/* Passes with *st (put it) when the status is fresh, its pid alive and the
 * path page recently published. */
static void check_agent(const struct doctor_env *e, struct doctor_check *c, struct json_object **st)
{
	const char *file = e->agent.status_file;
	double age, page_age, page_max = 10 * (double)e->agent.publish_interval / 1e9 + 2;
	struct json_object *s;
	struct stat sb;
	int pid;

	*st = NULL;
	if (stat(file, &sb) < 0) {
		say(c, DOCTOR_FAIL, "fabriciq-agent is not running here: no status file %s (%s)", file,
		    strerror(errno));
		return;
	}
	s = json_object_from_file(file);
	if (!s) {
		say(c, DOCTOR_FAIL, "cannot read the agent's status file %s: %s", file, strerror(errno));
		return;
	}
	pid = json_object_get_int(jmember(s, "pid"));
	age = (double)(fq_realtime_ns() - json_object_get_int64(jmember(s, "realtime_ns"))) / 1e9;
	page_age = path_page_age_s(e->path_page);
	if (pid <= 0 || (kill(pid, 0) < 0 && errno == ESRCH))
		say(c, DOCTOR_FAIL,
		    "fabriciq-agent is not running: pid %d (status file %s) has exited; its status "
		    "was last written %.1f s ago",
		    pid, file, age);
	else if (age * 1e9 > (double)status_max_age_ns(&e->agent))
		say(c, DOCTOR_FAIL,
		    "fabriciq-agent pid %d is stuck: its status %s was last written %.1f s ago", pid, file,
		    age);
	else if (page_age < 0 || page_age > page_max)
		say(c, DOCTOR_FAIL, "fabriciq-agent pid %d does not publish its path page %s (%s)", pid,
		    e->path_page, page_age < 0 ? "missing or never published" : "stale");
	else
		say(c, DOCTOR_PASS, "fabriciq-agent %s pid %d on %s: status %.1f s old, path page %.2f s old",
		    jtext(s, "agent_version"), pid, jtext(s, "node"), age, page_age);
	if (c->result == DOCTOR_PASS)
		*st = s;
	else
		json_object_put(s);
}

/* ---- clock -------------------------------------------------------------------- */

static void check_clock(const struct doctor_env *e, struct json_object *st, struct doctor_check *c)
{
	struct json_object *gt = jmember(st, "global_time");
	struct fq_clock_page_reader *r;
	struct fq_clock_model m;
	int rc;

	if (!st) {
		say(c, DOCTOR_FAIL, "no running agent to keep the clock (see the agent check)");
		return;
	}
	if (!json_object_get_boolean(jmember(gt, "published"))) {
		say(c, DOCTOR_FAIL, "the agent has not published its global timeline yet (time source %s)",
		    jtext(gt, "source"));
		return;
	}
	rc = fq_clock_page_reader_open(e->clock_page, &r);
	if (rc < 0) {
		say(c, DOCTOR_FAIL, "cannot map the clock page %s: %s", e->clock_page, strerror(-rc));
		return;
	}
	rc = fq_clock_page_read(r, fq_now_ns(), &m);
	fq_clock_page_reader_close(r);
	if (rc == -ESTALE)
		say(c, DOCTOR_FAIL, "the clock page %s is stale: its model expired %.1f s ago", e->clock_page,
		    (double)(fq_now_ns() - m.valid_until_ns) / 1e9);
	else if (rc < 0)
		say(c, DOCTOR_FAIL, "cannot read the clock page %s: %s", e->clock_page, strerror(-rc));
	else if (m.error_bound_ns > e->clock_budget_ns)
		say(c, DOCTOR_FAIL,
		    "not synchronised: error bound %.1f us exceeds the budget %.1f us (source %s)",
		    (double)m.error_bound_ns / 1e3, (double)e->clock_budget_ns / 1e3, jtext(gt, "source"));
	else
		say(c, DOCTOR_PASS,
		    "synchronised: error bound %.1f us within %.1f us (source %s, reference %s)",
		    (double)m.error_bound_ns / 1e3, (double)e->clock_budget_ns / 1e3, jtext(gt, "source"),
		    jtext(gt, "reference"));
}

/* ---- munge -------------------------------------------------------------------- */

static void check_munge(const struct doctor_env *e, struct doctor_check *c)
{
	static const char payload[] = "fabriciq doctor";
	const char *sock = e->munge_socket          ? e->munge_socket
			   : *e->agent.munge_socket ? e->agent.munge_socket
						    : NULL;
	char err[256] = "", *cred = NULL;
	uid_t uid;
	int rc;

	rc = fq_munge_encode(sock, payload, sizeof(payload), 60, &cred, err, sizeof(err));
	if (!rc)
		rc = fq_munge_decode(sock, cred, payload, sizeof(payload), FQ_MUNGE_ANY_UID, &uid, NULL, err,
				     sizeof(err));
	free(cred);
	if (rc)
		say(c, DOCTOR_FAIL, "munge round trip through %s failed: %s",
		    sock ? sock : "munged's default socket", err);
	else
		say(c, DOCTOR_PASS, "credential encoded and decoded through %s (uid %u)",
		    sock ? sock : "munged's default socket", (unsigned)uid);
}

/* ---- controller ----------------------------------------------------------------- */

static void check_controller(const struct doctor_env *e, struct json_object *st, struct doctor_check *c)
{
	struct json_object *u = jmember(st, "uplink");

	if (!*e->agent.controller) {
		say(c, DOCTOR_SKIP, "no controller configured (agent.controller)");
		return;
	}
	if (!st) {
		say(c, DOCTOR_FAIL, "no running agent to reach the controller %s (see the agent check)",
		    e->agent.controller);
		return;
	}
	if (!u || strcmp(jtext(u, "state"), "connected") != 0)
		say(c, DOCTOR_FAIL, "the agent's uplink to %s is %s: %s (authentication refusals: %s)",
		    e->agent.controller, u ? jtext(u, "state") : "absent", u ? jtext(u, "last_error") : "-",
		    u ? jtext(u, "auth_refusals") : "-");
	else
		say(c, DOCTOR_PASS, "connected and authenticated to %s:%s, %s frames acknowledged",
		    jtext(u, "controller"), jtext(u, "port"), jtext(u, "acked_seq"));
}

/* ---- NICs ---------------------------------------------------------------------- */

/* The NIC of that name in the status, or NULL. */
static struct json_object *status_nic(struct json_object *nics, const char *name, size_t len)
{
	for (size_t i = 0; i < json_object_array_length(nics); i++) {
		struct json_object *n = json_object_array_get_idx(nics, i);
		const char *s = jtext(n, "name");

		if (strlen(s) == len && !strncmp(s, name, len))
			return n;
	}
	return NULL;
}

/* Appends the configured NICs the agent does not have to missing. */
static void missing_nics(const char *list, struct json_object *nics, char *missing, size_t len)
{
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ",");
		size_t used = strlen(missing);

		if (n && !status_nic(nics, p, n))
			snprintf(missing + used, len - used, "%s%.*s", used ? "," : "", (int)n, p);
		p += n + (p[n] == ',');
	}
}

/* A NIC whose every probed path is DOWN is named but passes: with one peer
 * node, that is also what the peer's agent stopping looks like
 * (common/path_page.h), which is no fault of this node. */
static void check_nics(const struct doctor_env *e, struct json_object *st, struct doctor_check *c)
{
	struct json_object *nics = jmember(st, "nics");
	const char *want = e->agent.nics ? e->agent.nics : "";
	char missing[256] = "", have[512] = "";
	size_t n = nics ? json_object_array_length(nics) : 0;

	if (!st) {
		say(c, DOCTOR_FAIL, "no running agent to discover the NICs (see the agent check)");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct json_object *nic = json_object_array_get_idx(nics, i);
		size_t used = strlen(have);

		snprintf(have + used, sizeof(have) - used, "%s%s %s", used ? ", " : "", jtext(nic, "name"),
			 jtext(nic, "state"));
	}
	missing_nics(want, nics, missing, sizeof(missing));
	if (!n)
		say(c, DOCTOR_FAIL, "the agent found no back-end NIC (agent.nics %s)",
		    *want ? want : "not set");
	else if (*missing)
		say(c, DOCTOR_FAIL, "configured NICs the agent does not probe from: %s (it has %s)", missing,
		    have);
	else
		say(c, DOCTOR_PASS, "%s%s", have,
		    *want ? ": as configured" : " (discovered; agent.nics not set)");
}

/* ---- SPANK and NCCL plugins ---------------------------------------------------------- */

static int plugstack_file(const char *conf, const char *base, const char *plugin_dir, int depth, char *out,
			  size_t len, char *err, size_t errlen);

/* Each file the include pattern names (relative to dir of the including file). */
static int plugstack_include(const char *conf, const char *pattern, const char *base, const char *plugin_dir,
			     int depth, char *out, size_t len, char *err, size_t errlen)
{
	char full[4096], *dir = strdup(conf);
	glob_t g;
	int rc = 0;

	if (!dir)
		return -ENOMEM;
	snprintf(full, sizeof(full), "%s%s%s", *pattern == '/' ? "" : dirname(dir),
		 *pattern == '/' ? "" : "/", pattern);
	free(dir);
	if (glob(full, 0, NULL, &g) != 0)
		return 0; /* Slurm too: an include matching nothing is no error */
	for (size_t i = 0; i < g.gl_pathc && rc == 0; i++)
		rc = plugstack_file(g.gl_pathv[i], base, plugin_dir, depth + 1, out, len, err, errlen);
	globfree(&g);
	return rc;
}

/* One plugstack line: 1 and out filled when it names base. */
static int plugstack_line(const char *conf, char *line, const char *base, const char *plugin_dir, int depth,
			  char *out, size_t len, char *err, size_t errlen)
{
	char *save = NULL, *kind = strtok_r(line, " \t\r\n", &save), *path = strtok_r(NULL, " \t\r\n", &save);
	const char *slash;

	if (!kind || *kind == '#' || !path)
		return 0;
	if (!strcmp(kind, "include"))
		return plugstack_include(conf, path, base, plugin_dir, depth, out, len, err, errlen);
	if (strcmp(kind, "required") && strcmp(kind, "optional"))
		return 0;
	slash = strrchr(path, '/');
	if (strcmp(slash ? slash + 1 : path, base))
		return 0;
	snprintf(out, len, "%s%s%s", *path == '/' ? "" : plugin_dir, *path == '/' ? "" : "/", path);
	return 1;
}

static int plugstack_file(const char *conf, const char *base, const char *plugin_dir, int depth, char *out,
			  size_t len, char *err, size_t errlen)
{
	char line[4096];
	FILE *f;
	int rc = 0;

	if (depth > PLUGSTACK_MAX_DEPTH) {
		snprintf(err, errlen, "%s: includes nested deeper than %d", conf, PLUGSTACK_MAX_DEPTH);
		return -ELOOP;
	}
	f = fopen(conf, "re");
	if (!f) {
		rc = -errno;
		snprintf(err, errlen, "cannot read %s: %s", conf, strerror(errno));
		return rc;
	}
	while (rc == 0 && fgets(line, sizeof(line), f))
		rc = plugstack_line(conf, line, base, plugin_dir, depth, out, len, err, errlen);
	fclose(f);
	return rc;
}

int doctor_plugstack_find(const char *conf, const char *base, const char *plugin_dir, char *out, size_t len,
			  char *err, size_t errlen)
{
	return plugstack_file(conf, base, plugin_dir, 0, out, len, err, errlen);
}

int doctor_symbols(const char *so, const char *const *symbols, char *msg, size_t len)
{
	void *h = dlopen(so, RTLD_LAZY | RTLD_LOCAL);
	size_t used = 0;

	if (!h) {
		snprintf(msg, len, "cannot load: %s", dlerror());
		return -ENOENT;
	}
	*msg = '\0';
	for (; *symbols; symbols++)
		if (!dlsym(h, *symbols) && used < len)
			used += (size_t)snprintf(msg + used, len - used, "%s%s",
						 used ? ", " : "missing: ", *symbols);
	/* no dlclose: the NCCL plugin is linked -z nodelete, and a plugin's
	 * threads may outlive an unload */
	return used ? -ENOENT : 0;
}

static void check_spank(const struct doctor_env *e, struct doctor_check *c)
{
	char path[4096], err[512] = "", msg[512];
	int rc = doctor_plugstack_find(e->plugstack, SPANK_PLUGIN_FILE, e->plugin_dir, path, sizeof(path),
				       err, sizeof(err));

	if (rc < 0)
		say(c, DOCTOR_FAIL, "%s", err);
	else if (rc == 0)
		say(c, DOCTOR_FAIL,
		    "%s is not in %s (nor a file it includes): srun --fabriciq will not exist",
		    SPANK_PLUGIN_FILE, e->plugstack);
	else if (doctor_symbols(path, spank_symbols, msg, sizeof(msg)) < 0)
		say(c, DOCTOR_FAIL, "%s (in %s): %s", path, e->plugstack, msg);
	else
		say(c, DOCTOR_PASS, "%s in %s loads and exports the SPANK entry points", path, e->plugstack);
}

static void check_nccl(const struct doctor_env *e, struct doctor_check *c)
{
	char msg[512];

	if (doctor_symbols(e->nccl_plugin, nccl_symbols, msg, sizeof(msg)) < 0)
		say(c, DOCTOR_FAIL, "%s: %s", e->nccl_plugin, msg);
	else
		say(c, DOCTOR_PASS, "%s loads and exports ncclNetPlugin_v8..v12", e->nccl_plugin);
}

int doctor_run(const struct doctor_env *e, struct doctor_check out[DOCTOR_CHECKS])
{
	static const char *const names[DOCTOR_CHECKS] = {"agent", "clock", "munge", "controller",
							 "nics",  "spank", "nccl"};
	struct json_object *st;
	int failed = 0;

	for (int i = 0; i < DOCTOR_CHECKS; i++)
		out[i].name = names[i];
	check_agent(e, &out[0], &st);
	check_clock(e, st, &out[1]);
	check_munge(e, &out[2]);
	check_controller(e, st, &out[3]);
	check_nics(e, st, &out[4]);
	check_spank(e, &out[5]);
	check_nccl(e, &out[6]);
	json_object_put(st);
	for (int i = 0; i < DOCTOR_CHECKS; i++)
		failed += out[i].result == DOCTOR_FAIL;
	return failed;
}
