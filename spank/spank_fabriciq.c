/*
 * spank_fabriciq: the SPANK plugin (spank_fabriciq.so). See
 * doc/spank_fabriciq.8 for the user's view.
 *
 * Local/allocator context (srun, sbatch, salloc): adds --fabriciq[=MODE],
 * rejects an unknown MODE at submission (the option callback's -1 makes
 * the client exit), and puts the chosen mode in SLURM_FABRICIQ_MODE of the
 * client's own environment. Slurm forwards the option itself to srun's
 * steps; the variable is what carries it from sbatch/salloc to every later
 * step, also under --export=NONE, which keeps only SLURM_* variables.
 *
 * Remote context (slurmstepd, one per step and node): picks the step's
 * mode (option, else SLURM_FABRICIQ_MODE, else the site default), connects
 * to the node agent's step socket as root, exports the variables to the
 * tasks, registers the step once every local task has forked, and
 * unregisters it at exit. With mode off (the default) nothing is touched.
 *
 * The agent's paths (telemetry socket, clock and path pages) come in its
 * answer to StepStart, which slurmstepd gets after the tasks forked and
 * before it lets them exec (spank(8): post_fork runs for every task before
 * any task execs). They reach the tasks through a shared anonymous
 * mapping made before the fork: slurmstepd writes the answer there, each
 * task reads it in task_init and exports it.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "common/clock.h"
#include "common/clock_page.h"
#include "common/log.h"
#include "common/step_socket.h"
#include "spank/end_report.h"
#include "spank/spank_conf.h"
#include "spank/spank_env.h"
#include "spank/step_client.h"

SPANK_PLUGIN(fabriciq, 1);

#define ENV_PROPAGATE "SLURM_FABRICIQ_MODE"
#define ENV_CLASS     "SLURM_FABRICIQ_CLASS"         /* the class the job named, carried as the mode is */
#define NET_LIB       "libnccl-net-fabriciq.so"      /* in conf.libdir */
#define PROF_LIB      "libnccl-profiler-fabriciq.so" /* in conf.libdir */

static struct {
	bool conf_ok;
	struct fq_spank_conf conf;
	char net_plugin[FQ_SPANK_PATH_MAX + sizeof(NET_LIB) + 1]; /* LIBDIR/NET_LIB, NCCL_NET_PLUGIN */
	char
	    prof_plugin[FQ_SPANK_PATH_MAX + sizeof(PROF_LIB) + 1]; /* LIBDIR/PROF_LIB, NCCL_PROFILER_PLUGIN */
	enum fq_spank_mode opt_mode;                               /* from --fabriciq; the last one wins */
	char opt_class[FQ_SPANK_NAME_MAX];                         /* its class=NAME, "" none */

	/* local context (srun): the step whose end gets the job-end line */
	bool end_report;
	uint32_t local_job, local_step;

	/* remote context */
	enum fq_spank_mode mode;
	const struct fq_spank_class *cls; /* the step's network class, NULL: none */
	bool active;                      /* variables exported, agent reached */
	bool agent_down;                  /* asked for, but the agent is unreachable */
	char agent_err[FQ_SPANK_PATH_MAX + 512];
	char node[128];
	char step_socket[FQ_SPANK_PATH_MAX];
	uint32_t job, step, nnodes, ntasks, nlocal, uid;
	struct fq_step_client *client;
	/* What the agent's answer to StepStart told ("" until then, or from
	 * an older agent); MAP_SHARED, so the forked tasks see it. */
	struct fq_step_paths *told;
	Fabriciq__Rank *ranks; /* nlocal, by local task id */
	bool *forked;
	uint32_t nforked;
	bool registered, ended;
	int exit_status;
} g;

static int opt_cb(int val, const char *optarg, int remote);

static struct spank_option fq_option = {
    .name = "fabriciq",
    .arginfo = "MODE[,class=NAME]",
    .usage = "Fabric telemetry for this job: MODE monitor (default), control (telemetry, failover, "
	     "steering) or off; class=NAME: the site's network class for its traffic.",
    .has_arg = 2,
    .val = 0,
    .cb = opt_cb,
};

static int opt_cb(int val, const char *optarg, int remote)
{
	enum fq_spank_mode m;
	char cls[FQ_SPANK_NAME_MAX], err[128];

	(void)val;
	(void)remote;
	/* Slurm 22.05's salloc/sbatch pass a bare option on to the job's
	 * steps as the text "(null)" (SLURM_SPANK__SLURM_SPANK_OPTION_...). */
	if (optarg && !strcmp(optarg, "(null)"))
		optarg = NULL;
	if (fq_spank_option_parse(optarg, g.conf.bare_mode, &m, cls, sizeof(cls), err, sizeof(err)) < 0) {
		fq_error("--fabriciq=%s: %s", optarg, err);
		return -1;
	}
	/* refused at submission, where the user reads it */
	if (*cls && !fq_spank_class_find(&g.conf, cls)) {
		fq_error(
		    "--fabriciq=%s: no network class '%s' on this cluster (%d defined in plugstack.conf)",
		    optarg, cls, g.conf.nclasses);
		return -1;
	}
	g.opt_mode = m;
	snprintf(g.opt_class, sizeof(g.opt_class), "%s", cls);
	return 0;
}

/* Parse the plugstack.conf arguments (every context). */
static int load_conf(int ac, char **argv)
{
	char err[256];

	fq_spank_conf_defaults(&g.conf, FQ_SPANK_LIBDIR);
	if (fq_spank_conf_parse(&g.conf, ac, argv, err, sizeof(err)) < 0) {
		fq_error("plugstack.conf: %s; the plugin is disabled", err);
		g.conf_ok = false;
		return -1;
	}
	snprintf(g.net_plugin, sizeof(g.net_plugin), "%s/%s", g.conf.libdir, NET_LIB);
	snprintf(g.prof_plugin, sizeof(g.prof_plugin), "%s/%s",
		 *g.conf.profiler_libdir ? g.conf.profiler_libdir : g.conf.libdir, PROF_LIB);
	g.conf_ok = true;
	return 0;
}

/* The plugin's lines go through common/log to Slurm's log (slurmd's, and
 * srun's stderr in the local context), "fabriciq: " first as every
 * fabriciq line. */
static void slurm_sink(enum fq_log_level level, const char *line, void *arg)
{
	(void)arg;
	if (level <= FQ_LOG_WARN)
		slurm_error("fabriciq: %s", line);
	else if (level == FQ_LOG_INFO)
		slurm_info("fabriciq: %s", line);
	else
		slurm_debug("fabriciq: %s", line);
}

int slurm_spank_init(spank_t sp, int ac, char **argv)
{
	fq_log_set_sink(slurm_sink, NULL);
	if (load_conf(ac, argv) < 0)
		return -1;
	if (spank_context() == S_CTX_LOCAL || spank_context() == S_CTX_ALLOCATOR ||
	    spank_context() == S_CTX_REMOTE) {
		if (spank_option_register(sp, &fq_option) != ESPANK_SUCCESS) {
			fq_error("cannot register --fabriciq");
			return -1;
		}
	}
	return 0;
}

/* A step id as Slurm writes it. */
static void step_text(uint32_t step, char *buf, size_t len)
{
	if (step == SLURM_BATCH_SCRIPT)
		snprintf(buf, len, "batch");
	else if (step == SLURM_INTERACTIVE_STEP)
		snprintf(buf, len, "interactive");
	else
		snprintf(buf, len, "%u", step);
}

/* ---- local and allocator context ---------------------------------------- */

static int client_post_opt(void)
{
	const char *env = getenv(ENV_PROPAGATE);

	if (g.opt_mode == FQ_MODE_UNSET) {
		if (env && fq_spank_mode_parse(env, FQ_MODE_UNSET) == FQ_MODE_UNSET)
			fq_error("%s=%s is not a mode (monitor, control, off); ignored", ENV_PROPAGATE, env);
		return 0;
	}
	/* Every step of this job (or allocation) started from here inherits
	 * the mode and class, --export=NONE included. */
	if (setenv(ENV_PROPAGATE, fq_spank_mode_name(g.opt_mode), 1) < 0 ||
	    (*g.opt_class && setenv(ENV_CLASS, g.opt_class, 1) < 0)) {
		fq_error("setenv %s: %s", *g.opt_class ? ENV_CLASS : ENV_PROPAGATE, strerror(errno));
		return -1;
	}
	return 0;
}

/* srun, once the step exists: remember it for the job-end line when it
 * runs with fabriciq (option, inherited mode, or the site default) and a
 * controller is configured. */
int slurm_spank_local_user_init(spank_t sp, int ac, char **argv)
{
	(void)ac;
	(void)argv;
	if (!g.conf_ok || spank_context() != S_CTX_LOCAL || !g.conf.controller[0] || !g.conf.end_wait_ms)
		return 0;
	if (fq_spank_step_mode(g.opt_mode, getenv(ENV_PROPAGATE), g.conf.site_default) == FQ_MODE_OFF)
		return 0;
	if (spank_get_item(sp, S_JOB_ID, &g.local_job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &g.local_step) != ESPANK_SUCCESS) {
		fq_debug("job-end line: the step's ids are not known here");
		return 0;
	}
	g.end_report = true;
	return 0;
}

/* srun, after the step: the job-end line (spank/end_report.h) on srun's
 * stderr, which is the job's; nothing when the step was clean, and never
 * a failure of the step. */
static void end_report(void)
{
	struct fq_end_summary sum;
	char step[16], err[512], line[256];
	int rc;

	step_text(g.local_step, step, sizeof(step));
	rc = fq_end_summary_fetch(g.conf.controller, g.conf.munge_socket, g.local_job, step,
				  g.conf.end_wait_ms, &sum, err, sizeof(err));
	if (rc) {
		fq_debug("job-end line for step %u.%s: %s", g.local_job, step, err);
		return;
	}
	fq_end_line(&sum, g.local_job, step, line, sizeof(line));
	if (line[0])
		fprintf(stderr, "%s\n", line);
}

/* ---- remote context ------------------------------------------------------ */

/* spank_getenv in fq_spank_getenv's terms. */
static int spank_get(void *sp, const char *name, char *buf, int len)
{
	spank_err_t e = spank_getenv(sp, name, buf, len);

	if (e == ESPANK_SUCCESS)
		return 0;
	if (e == ESPANK_ENV_NOEXIST)
		return -ENOENT;
	return e == ESPANK_NOSPACE ? -ENOSPC : -EINVAL;
}

/* name's value in the job's environment, whatever its length: 0 and *val
 * (the caller frees it), -ENOENT when unset, or another negative errno,
 * logged. */
static int get_env(spank_t sp, const char *name, char **val)
{
	int rc = fq_spank_getenv(spank_get, sp, name, val);

	if (rc < 0 && rc != -ENOENT)
		fq_error("job %u: cannot read %s: %s", g.job, name, strerror(-rc));
	return rc;
}

static enum fq_spank_mode step_mode(spank_t sp)
{
	enum fq_spank_mode m;
	char *val = NULL;

	if (g.opt_mode == FQ_MODE_UNSET && get_env(sp, ENV_PROPAGATE, &val) == 0 &&
	    fq_spank_mode_parse(val, FQ_MODE_UNSET) == FQ_MODE_UNSET)
		fq_error("%s=%s is not a mode (monitor, control, off); ignored", ENV_PROPAGATE, val);
	m = fq_spank_step_mode(g.opt_mode, val, g.conf.site_default);
	free(val);
	return m;
}

/* The step's network class: the one the job named (option, else
 * propagated), else its Slurm QOS's (SLURM_JOB_QOS, which Slurm puts in
 * every step's environment), else the site's default_class. */
static const struct fq_spank_class *step_class(spank_t sp)
{
	const struct fq_spank_class *c;
	char *named = NULL, *qos = NULL;
	bool bad;

	if (!*g.opt_class)
		get_env(sp, ENV_CLASS, &named);
	get_env(sp, "SLURM_JOB_QOS", &qos);
	c = fq_spank_step_class(&g.conf, *g.opt_class ? g.opt_class : named, qos, &bad);
	if (bad)
		fq_error("%s=%s is not a network class here; ignored", ENV_CLASS, named);
	free(named);
	free(qos);
	return c;
}

static void step_id_text(char *buf, size_t len)
{
	step_text(g.step, buf, len);
}

static int set_env(spank_t sp, const char *name, const char *val)
{
	spank_err_t e = spank_setenv(sp, name, val, 1);

	if (e != ESPANK_SUCCESS) {
		fq_error("job %u: cannot set %s: %s", g.job, name, spank_strerror(e));
		return -1;
	}
	return 0;
}

/* A step with --fabriciq=off inside an allocation whose batch step got
 * our variables: take back what we exported there. */
static void unset_inherited(spank_t sp)
{
	static const char *const ours[] = {
	    "FABRICIQ_MODE",         "FABRICIQ_JOB_ID",     "FABRICIQ_STEP_ID",  "FABRICIQ_NNODES",
	    "FABRICIQ_RANK",         "FABRICIQ_LOCAL_RANK", "FABRICIQ_CLASS",    "FABRICIQ_DSCP",
	    "FABRICIQ_AGENT_SOCKET", "FABRICIQ_CLOCK_PAGE", "FABRICIQ_PATH_PAGE"};
	char *val;

	if (get_env(sp, "FABRICIQ_JOB_ID", &val) < 0)
		return;
	free(val);
	for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
		spank_unsetenv(sp, ours[i]);
	if (get_env(sp, "NCCL_NET_PLUGIN", &val) == 0) {
		if (!strcmp(val, g.net_plugin))
			spank_unsetenv(sp, "NCCL_NET_PLUGIN");
		free(val);
	}
	if (get_env(sp, "NCCL_PROFILER_PLUGIN", &val) == 0) {
		if (!strcmp(val, g.prof_plugin))
			spank_unsetenv(sp, "NCCL_PROFILER_PLUGIN");
		free(val);
	}
}

/* NCCL_PROFILER_PLUGIN, the profiler's absolute path, unless the job
 * chose its own profiler (NCCL loads one): kept, and the step's log says
 * so. A step that inherited ours but should not have it (monitor_via=net,
 * control without control_profiler) loses it. */
static int export_profiler(spank_t sp, bool want)
{
	char *val;
	int rc = get_env(sp, "NCCL_PROFILER_PLUGIN", &val);

	if (rc == 0 && strcmp(val, g.prof_plugin)) {
		if (want)
			fq_info("job %u step %u: the job sets NCCL_PROFILER_PLUGIN=%s; kept, so fabriciq "
				"sees no collective of this step (the agent's probe mesh still covers it)",
				g.job, g.step, val);
		free(val);
		return 0;
	}
	if (rc == 0)
		free(val);
	else if (rc != -ENOENT)
		return -1;
	if (!want) {
		if (rc == 0) /* ours, inherited from a step of another mode */
			spank_unsetenv(sp, "NCCL_PROFILER_PLUGIN");
		return 0;
	}
	return set_env(sp, "NCCL_PROFILER_PLUGIN", g.prof_plugin);
}

/* The step's NCCL plugins (fq_spank_nccl_plugins): monitor names the
 * profiler plugin and leaves NCCL's transports alone (monitor_via=net: the
 * net plugin, as control); control names the net plugin (and the profiler
 * with control_profiler=yes). NCCL_NET_PLUGIN is the plugin's absolute
 * path (NCCL dlopens it as given; the job's LD_LIBRARY_PATH is left
 * alone), unless the job chose its own net plugin: then it is kept and
 * the step's log says so. */
static int export_nccl(spank_t sp)
{
	bool net, prof;
	char *val;
	int rc;

	fq_spank_nccl_plugins(&g.conf, g.mode, &net, &prof);
	if (export_profiler(sp, prof) < 0)
		return -1;
	if (!net) {
		/* ours inherited from a batch step of another mode: taken back */
		if (get_env(sp, "NCCL_NET_PLUGIN", &val) == 0) {
			if (!strcmp(val, g.net_plugin))
				spank_unsetenv(sp, "NCCL_NET_PLUGIN");
			free(val);
		}
		return 0;
	}
	rc = get_env(sp, "NCCL_NET_PLUGIN", &val);
	if (rc == 0 && strcmp(val, g.net_plugin)) {
		fq_info("job %u step %u: the job sets NCCL_NET_PLUGIN=%s; kept, so NCCL will not "
			"use fabriciq lanes (the agent's probe mesh still covers the job)",
			g.job, g.step, val);
		free(val);
		return 0;
	}
	if (rc == 0)
		free(val);
	else if (rc != -ENOENT)
		return -1;
	if (get_env(sp, "NCCL_NET", &val) == 0) {
		if (strcasecmp(val, "fabriciq"))
			fq_info("job %u step %u: the job sets NCCL_NET=%s; kept, so NCCL may pick "
				"that network instead of fabriciq",
				g.job, g.step, val);
		free(val);
	}
	return set_env(sp, "NCCL_NET_PLUGIN", g.net_plugin);
}

/* The step's network class for the tasks: the net plugin marks every
 * lane with FABRICIQ_DSCP (its IB lanes' GRH traffic class too) and gives
 * IB lanes FABRICIQ_IB_SL; a step whose NCCL keeps its own transports
 * (monitor via the profiler) gets NCCL_IB_TC and NCCL_IB_SL, which NCCL's
 * IB/RoCE transport applies (its socket transport marks nothing). The
 * site's class wins over the job's own values. No class: a step after a
 * classed one in the same allocation loses what that one exported. */
static int export_class(spank_t sp)
{
	char buf[16];
	bool net, prof;

	fq_spank_nccl_plugins(&g.conf, g.mode, &net, &prof);
	if (!g.cls) {
		spank_unsetenv(sp, "FABRICIQ_CLASS");
		spank_unsetenv(sp, "FABRICIQ_DSCP");
		return 0;
	}
	if (set_env(sp, "FABRICIQ_CLASS", g.cls->name) < 0)
		return -1;
	snprintf(buf, sizeof(buf), "%d", g.cls->dscp);
	if (set_env(sp, "FABRICIQ_DSCP", buf) < 0)
		return -1;
	snprintf(buf, sizeof(buf), "%d", g.cls->sl);
	if (g.cls->sl >= 0 && set_env(sp, net ? "FABRICIQ_IB_SL" : "NCCL_IB_SL", buf) < 0)
		return -1;
	snprintf(buf, sizeof(buf), "%d", g.cls->dscp << 2);
	return net ? 0 : set_env(sp, "NCCL_IB_TC", buf);
}

static int export_step(spank_t sp)
{
	char buf[FQ_SPANK_PATH_MAX + 64];

	if (export_nccl(sp) < 0)
		return -1;
	if (set_env(sp, "FABRICIQ_MODE", fq_spank_mode_name(g.mode)) < 0 || export_class(sp) < 0)
		return -1;
	snprintf(buf, sizeof(buf), "%u", g.job);
	if (set_env(sp, "FABRICIQ_JOB_ID", buf) < 0)
		return -1;
	step_id_text(buf, sizeof(buf));
	if (set_env(sp, "FABRICIQ_STEP_ID", buf) < 0)
		return -1;
	snprintf(buf, sizeof(buf), "%u", g.nnodes);
	if (set_env(sp, "FABRICIQ_NNODES", buf) < 0)
		return -1;
	/* the site's back-end NICs, unless the job chose its own */
	if (*g.conf.ifaces) {
		char *val;
		int rc = get_env(sp, "FABRICIQ_IFACES", &val);

		if (rc == 0)
			free(val);
		else if (rc != -ENOENT || set_env(sp, "FABRICIQ_IFACES", g.conf.ifaces) < 0)
			return -1;
	}
	return 0;
}

/* The agent's paths for the tasks (see fq_spank_agent_path). */
static int export_agent_paths(spank_t sp)
{
	char path[FQ_STEP_PATH_MAX];

	if (fq_spank_agent_path(g.conf.telemetry_socket, g.node, g.told->telemetry_socket,
				FQ_TELEMETRY_SOCKET_DEFAULT, path, sizeof(path)) < 0 ||
	    set_env(sp, "FABRICIQ_AGENT_SOCKET", path) < 0)
		return -1;
	if (fq_spank_agent_path(g.conf.clock_page, g.node, g.told->clock_page, FQ_CLOCK_PAGE_DEFAULT, path,
				sizeof(path)) < 0 ||
	    set_env(sp, "FABRICIQ_CLOCK_PAGE", path) < 0)
		return -1;
	if (fq_spank_agent_path(g.conf.path_page, g.node, g.told->path_page, FQ_PATH_PAGE_DEFAULT, path,
				sizeof(path)) < 0 ||
	    set_env(sp, "FABRICIQ_PATH_PAGE", path) < 0)
		return -1;
	return 0;
}

static int step_identity(spank_t sp)
{
	uid_t uid;

	if (spank_get_item(sp, S_JOB_ID, &g.job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &g.step) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_NNODES, &g.nnodes) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &g.ntasks) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &g.nlocal) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS) {
		fq_error("cannot read the step's identity from Slurm");
		return -1;
	}
	g.uid = (uint32_t)uid;
	/* The batch step reports no node or task count of its own. */
	if (g.step == SLURM_BATCH_SCRIPT) {
		g.nnodes = 1;
		g.ntasks = g.nlocal;
	}
	/* Not SLURMD_NODENAME from the job's environment: a step inside a
	 * batch job inherits the batch host's. Slurm names nodes by their
	 * short host name unless told otherwise (see the man page). */
	if (gethostname(g.node, sizeof(g.node) - 1) < 0)
		snprintf(g.node, sizeof(g.node), "unknown");
	g.node[strcspn(g.node, ".")] = 0;
	return 0;
}

static int remote_post_opt(spank_t sp)
{
	char id[32];
	int rc;

	if (g.active || g.agent_down)
		return 0; /* already done for this step */
	g.mode = step_mode(sp);
	if (g.mode == FQ_MODE_MONITOR || g.mode == FQ_MODE_CONTROL)
		g.cls = step_class(sp);
	if (g.mode != FQ_MODE_MONITOR && g.mode != FQ_MODE_CONTROL) {
		if (g.mode == FQ_MODE_OFF)
			unset_inherited(sp);
		return 0;
	}
	if (step_identity(sp) < 0)
		return -1;
	if (g.step == SLURM_EXTERN_CONT)
		return 0; /* no tasks of the user's run there */
	step_id_text(id, sizeof(id));
	rc = fq_spank_path_expand(g.conf.step_socket, g.node, g.step_socket, sizeof(g.step_socket));
	if (rc == 0)
		rc = fq_step_client_connect(g.step_socket, g.conf.timeout_ms, &g.client);
	if (rc < 0) {
		g.agent_down = true;
		snprintf(g.agent_err, sizeof(g.agent_err), "%s: no agent at %s (%s); job %u step %s %s",
			 g.node, g.step_socket, strerror(-rc), g.job, id,
			 g.conf.required ? "fails (required=yes)" : "runs without fabriciq");
		return g.conf.required ? -1 : 0;
	}
	g.ranks = calloc(g.nlocal ? g.nlocal : 1, sizeof(*g.ranks));
	g.forked = calloc(g.nlocal ? g.nlocal : 1, sizeof(*g.forked));
	g.told = mmap(NULL, sizeof(*g.told), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (g.told == MAP_FAILED)
		g.told = NULL;
	if (!g.ranks || !g.forked || !g.told) {
		fq_error("out of memory");
		return -1;
	}
	if (export_step(sp) < 0)
		return -1;
	g.active = true;
	fq_info("job %u step %s on %s: mode %s, class %s, agent %s", g.job, id, g.node,
		fq_spank_mode_name(g.mode), g.cls ? g.cls->name : "none", g.step_socket);
	return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **argv)
{
	(void)ac;
	(void)argv;
	if (!g.conf_ok)
		return -1;
	switch (spank_context()) {
	case S_CTX_LOCAL:
	case S_CTX_ALLOCATOR:
		return client_post_opt();
	case S_CTX_REMOTE:
		return remote_post_opt(sp);
	default:
		return 0;
	}
}

/* Before the tasks fork, after slurmstepd has connected its own stderr to
 * the step's: the one place where a line reaches the user's stderr (and
 * the slurmd log) once per node. */
int slurm_spank_user_init(spank_t sp, int ac, char **argv)
{
	(void)sp;
	(void)ac;
	(void)argv;
	if (g.agent_down)
		fq_error("%s", g.agent_err);
	return 0;
}

/* In each task, before exec: its ranks and the agent's paths; or, with required=yes and no
 * agent, the end of the task with the reason on its stderr. */
int slurm_spank_task_init(spank_t sp, int ac, char **argv)
{
	uint32_t global;
	int local;
	char buf[32];

	(void)ac;
	(void)argv;
	/* required=yes and no agent: end the task before it execs (an
	 * optional plugin's -1 is ignored by Slurm); user_init said why. */
	if (g.agent_down && g.conf.required)
		_exit(1);
	if (!g.active)
		return 0;
	if (spank_get_item(sp, S_TASK_ID, &local) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_TASK_GLOBAL_ID, &global) != ESPANK_SUCCESS)
		return -1;
	snprintf(buf, sizeof(buf), "%u", global);
	if (set_env(sp, "FABRICIQ_RANK", buf) < 0)
		return -1;
	snprintf(buf, sizeof(buf), "%d", local);
	if (set_env(sp, "FABRICIQ_LOCAL_RANK", buf) < 0)
		return -1;
	/* slurmstepd registered the step before releasing this task */
	return export_agent_paths(sp);
}

static int64_t global_now_ns(void)
{
	struct fq_clock_page_reader *r;
	struct fq_clock_model m;
	char path[FQ_STEP_PATH_MAX];
	int64_t local = fq_now_ns(), global = 0;

	/* before the first answer (StepStart's own time), the agent's page is
	 * known only from an override or the default */
	if (fq_spank_agent_path(g.conf.clock_page, g.node, g.told->clock_page, FQ_CLOCK_PAGE_DEFAULT, path,
				sizeof(path)) < 0 ||
	    fq_clock_page_reader_open(path, &r) < 0)
		return 0; /* unknown: the agent stamps it on arrival */
	if (fq_clock_page_read(r, local, &m) == 0)
		global = fq_clock_model_global(&m, local);
	fq_clock_page_reader_close(r);
	return global;
}

/* One request; on a broken connection, one reconnect and retry (the agent
 * may have restarted since the step began). paths: as
 * fq_step_client_call. */
static int agent_call(Fabriciq__Envelope *env, const char *what, struct fq_step_paths *paths)
{
	char msg[256] = "";
	int rc;

	rc = g.client ? fq_step_client_call(g.client, env, msg, sizeof(msg), paths) : -ENOTCONN;
	if (rc == -EPIPE || rc == -ECONNRESET || rc == -ENOTCONN || rc == -EPROTO) {
		fq_step_client_close(g.client);
		g.client = NULL;
		rc = fq_step_client_connect(g.step_socket, g.conf.timeout_ms, &g.client);
		if (rc == 0)
			rc = fq_step_client_call(g.client, env, msg, sizeof(msg), paths);
	}
	if (rc < 0)
		fq_error("%s: %s job %u step %u with the agent at %s failed: %s%s%s", g.node, what, g.job,
			 g.step, g.step_socket, strerror(-rc), msg[0] ? ": " : "", msg);
	return rc;
}

static int register_step(void)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__StepStart ss = FABRICIQ__STEP_START__INIT;
	Fabriciq__Rank **rp;
	int rc;

	rp = calloc(g.nlocal ? g.nlocal : 1, sizeof(*rp));
	if (!rp)
		return -ENOMEM;
	for (uint32_t i = 0; i < g.nlocal; i++)
		rp[i] = &g.ranks[i];
	ss.job_id = g.job;
	ss.step_id = g.step;
	ss.uid = g.uid;
	ss.node = g.node;
	ss.n_ranks = g.nlocal;
	ss.ranks = rp;
	ss.time_ns = global_now_ns();
	ss.mode = (char *)fq_spank_mode_name(g.mode);
	ss.node_count = g.nnodes;
	ss.task_count = g.ntasks;
	ss.net_class = g.cls ? (char *)g.cls->name : "";
	/* what the controller's rates between classes order by (weight 0: a prio class) */
	ss.net_class_prio = g.cls && g.cls->prio > 0 ? (uint32_t)g.cls->prio : 0;
	ss.net_class_weight = g.cls && g.cls->weight > 0 ? (uint32_t)g.cls->weight : 0;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_STEP_START;
	env.step_start = &ss;
	rc = agent_call(&env, "registering", g.told);
	free(rp);
	return rc;
}

/* In slurmstepd after each task's fork, before any task execs: collect
 * the pids; register when the last local task is there. */
int slurm_spank_task_post_fork(spank_t sp, int ac, char **argv)
{
	uint32_t global;
	pid_t pid;
	int local;

	(void)ac;
	(void)argv;
	if (!g.active || g.registered)
		return 0;
	if (spank_get_item(sp, S_TASK_ID, &local) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_TASK_GLOBAL_ID, &global) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS) {
		fq_error("cannot read a task's identity from Slurm");
		return -1;
	}
	if (local < 0 || (uint32_t)local >= g.nlocal)
		return -1;
	if (!g.forked[local]) {
		g.forked[local] = true;
		g.nforked++;
	}
	fabriciq__rank__init(&g.ranks[local]);
	g.ranks[local].global_rank = global;
	g.ranks[local].local_rank = (uint32_t)local;
	g.ranks[local].pid = pid;
	if (g.nforked < g.nlocal)
		return 0;
	if (register_step() == 0) {
		g.registered = true;
		return 0;
	}
	if (g.conf.required) {
		fq_error("%s: required=yes: stopping job %u step %u", g.node, g.job, g.step);
		for (uint32_t i = 0; i < g.nlocal; i++)
			kill(g.ranks[i].pid, SIGKILL);
	}
	return -1;
}

/* The step's status as Slurm reports it: a signal over an exit code, else
 * the highest exit code. */
int slurm_spank_task_exit(spank_t sp, int ac, char **argv)
{
	int status;

	(void)ac;
	(void)argv;
	if (!g.active || spank_get_item(sp, S_TASK_EXIT_STATUS, &status) != ESPANK_SUCCESS)
		return 0;
	if (WIFSIGNALED(g.exit_status))
		return 0;
	if (WIFSIGNALED(status) || WEXITSTATUS(status) > WEXITSTATUS(g.exit_status))
		g.exit_status = status;
	return 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **argv)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__StepEnd se = FABRICIQ__STEP_END__INIT;

	(void)sp;
	(void)ac;
	(void)argv;
	if (spank_context() == S_CTX_LOCAL && g.end_report) {
		g.end_report = false;
		end_report();
	}
	if (spank_context() != S_CTX_REMOTE || !g.active)
		return 0;
	if (g.registered && !g.ended) {
		se.job_id = g.job;
		se.step_id = g.step;
		se.node = g.node;
		se.time_ns = global_now_ns();
		se.exit_status = g.exit_status;
		env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_STEP_END;
		env.step_end = &se;
		agent_call(&env, "unregistering", NULL);
		g.ended = true;
	}
	fq_step_client_close(g.client);
	g.client = NULL;
	free(g.ranks);
	free(g.forked);
	munmap(g.told, sizeof(*g.told));
	g.ranks = NULL;
	g.forked = NULL;
	g.told = NULL;
	g.active = false;
	return 0;
}
