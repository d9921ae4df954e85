/*
 * fabriciq-agent: the node agent (probe mesh, clock estimates, path
 * liveness). Reads /etc/fabriciq/fabriciq.conf (agent.* keys), probes its
 * peers on every back-end NIC, and writes its state each report interval to
 * a JSON status file (atomically), which `fabriciq-agent --status` prints.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <getopt.h>
#include <ifaddrs.h>
#include <json-c/json.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/config.h"
#include "common/log.h"
#include "common/notify.h"
#include "common/shm_page.h"
#include "slurmd-agent/agent.h"
#include "slurmd-agent/agent_config.h"
#include "slurmd-agent/nics.h"

#define AGENT_VERSION PACKAGE_VERSION

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "Usage: fabriciq-agent [-c FILE] [-s KEY=VALUE]...\n"
	    "       fabriciq-agent --status [-c FILE] [--json]\n"
	    "       fabriciq-agent --dump-config [-c FILE] [-s KEY=VALUE]...\n"
	    "       fabriciq-agent --new-key FILE [-c FILE] [-s node=NAME]\n\n"
	    "The fabriciq node agent: probes its peers on every back-end NIC (coded UDP probe pairs with\n"
	    "kernel timestamps), estimates each peer's clock offset and drift, detects dead paths, and\n"
	    "writes its state to a status file each report window.\n\n"
	    "  -c, --config FILE   configuration file (default " FQ_CONFIG_PATH ")\n"
	    "  -s, --set KEY=VAL   override one setting (agent.KEY or KEY)\n"
	    "      --status        print the running agent's state (from its status file)\n"
	    "      --json          with --status: the raw JSON\n"
	    "      --dump-config   print the effective configuration and exit\n"
	    "      --new-key FILE  make this node's secret key for agent.node_key in FILE (0600, new)\n"
	    "                      and print the \"NODE ed25519:...\" line for the controller's bindings\n"
	    "  -h, --help          this text\n"
	    "  -V, --version       the version\n\n"
	    "It runs in the foreground (systemd or the testbed supervise it). Exit status: 0 stopped by\n"
	    "SIGTERM/SIGINT (or a query answered); 1 runtime failure (a socket, page or NIC it cannot set\n"
	    "up; no status file for --status); 2 usage or configuration error.\n\n"
	    "Settings:\n");
	fq_cfg_print_help(&agent_config_schema, out);
}

static void on_report(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	agent_report_window(arg);
	agent_reap_steps(arg);
	agent_write_status(arg);
}

static void on_publish(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	agent_publish(arg);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct agent *a = arg;

	(void)what;
	fq_info("signal %d: stopping", (int)sig);
	event_base_loopbreak(a->base);
}

/* "n2:rail0@198.19.0.5, n3:rail0@198.19.0.7" */
static int add_peers(struct agent *a)
{
	char *list = strdup(a->cfg.peers), *save = NULL;
	int rc = 0, n = 0;

	if (!list)
		return -ENOMEM;
	for (char *tok = strtok_r(list, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
		char *colon = strchr(tok, ':'), *at = strchr(tok, '@');
		if (!colon || !at || at < colon || colon == tok || at == colon + 1 || !at[1]) {
			fq_error("agent.peers: '%s' is not NODE:NIC@ADDRESS (IPv4 or ud:...)", tok);
			rc = -EINVAL;
			break;
		}
		*colon = *at = '\0';
		rc = fq_prober_add_peer(a->prober, NULL, tok, colon + 1, at + 1);
		if (rc == -ENODEV) {
			fq_warn("agent.peers: %s:%s skipped: no local NIC %s", tok, colon + 1, colon + 1);
			rc = 0;
			continue;
		}
		if (rc < 0) {
			fq_error("agent.peers: %s:%s@%s: %s", tok, colon + 1, at + 1, strerror(-rc));
			break;
		}
		n++;
	}
	free(list);
	if (rc == 0)
		fq_info("probing %d path(s)", n);
	return rc;
}

/* The NIC's first IPv4 address and its speed (sysfs; 0 when unknown). */
static void nic_info(struct agent_nic *n)
{
	struct ifaddrs *ifa = NULL;
	char path[128];
	FILE *f;
	long speed = 0;

	if (getifaddrs(&ifa) == 0) {
		for (struct ifaddrs *i = ifa; i; i = i->ifa_next)
			if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
			    strcmp(i->ifa_name, n->name) == 0) {
				inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, n->address,
					  sizeof(n->address));
				break;
			}
		freeifaddrs(ifa);
	}
	snprintf(path, sizeof(path), "/sys/class/net/%s/speed", n->name);
	f = fopen(path, "re");
	if (f) {
		if (fscanf(f, "%ld", &speed) != 1 || speed < 0)
			speed = 0;
		fclose(f);
	}
	n->speed_mbps = (uint64_t)speed;
}

/* The NICs of agent.nics. A configured NIC the prober refuses (e.g. an
 * InfiniBand port in a build without verbs) stops the agent; a discovered
 * one is skipped with a warning. */
static int add_nics(struct agent *a, bool discovered)
{
	char *list = strdup(a->cfg.nics), *save = NULL;
	int rc = 0;

	if (!list)
		return -ENOMEM;
	for (char *tok = strtok_r(list, ", \t", &save); tok && rc == 0; tok = strtok_r(NULL, ", \t", &save)) {
		struct agent_nic *n;

		if (a->n_nics == AGENT_MAX_NICS || strlen(tok) >= sizeof(n->name)) {
			fq_error("agent.nics: '%s': at most %d NICs of at most %zu characters", tok,
				 AGENT_MAX_NICS, sizeof(n->name) - 1);
			rc = -EINVAL;
			break;
		}
		rc = fq_prober_add_nic(a->prober, tok);
		if (rc < 0 && discovered) {
			fq_warn("discovered NIC %s not probed: %s", tok, strerror(-rc));
			rc = 0;
			continue;
		}
		if (rc < 0)
			break;
		n = &a->nics[a->n_nics];
		snprintf(n->name, sizeof(n->name), "%s", tok);
		n->rail = a->n_nics++;
		nic_info(n);
		/* No IPv4 address: a UD NIC, whose address peers need is its
		 * LID/GID and QP number. */
		if (!*n->address)
			fq_prober_nic_address(a->prober, n->name, n->address, sizeof(n->address));
	}
	if (rc == 0 && a->n_nics == 0) {
		fq_error("agent.nics: no NIC could be probed");
		rc = -ENODEV;
	}
	free(list);
	return rc;
}

static void read_boot_id(struct agent *a)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");

	if (!f || !fgets(a->boot_id, sizeof(a->boot_id), f))
		a->boot_id[0] = '\0';
	if (f)
		fclose(f);
	a->boot_id[strcspn(a->boot_id, "\n")] = '\0';
}

/*
 * agent.nics unset: the back-end NICs are discovered. The front-end NIC
 * (excluded) is the one that reaches the controller, or without a
 * controller the one of the default route.
 */
static int discover_nics(struct agent *a)
{
	char names[AGENT_MAX_NICS][FQ_NIC_NAME_MAX], frontend[FQ_NIC_NAME_MAX] = "", host[256],
						     list[512] = "";
	int n;

	if (*a->cfg.controller) {
		snprintf(host, sizeof(host), "%s", a->cfg.controller);
		host[strcspn(host, ":")] = '\0';
		fq_nics_route_iface(host, frontend);
	} else {
		fq_nics_default_iface(frontend);
	}
	n = fq_nics_discover("/sys", frontend, names, AGENT_MAX_NICS);
	if (n <= 0) {
		fprintf(stderr, "fabriciq-agent: agent.nics is not set and no back-end NIC was found%s%s\n",
			*frontend ? " besides the front-end " : "", frontend);
		return -ENODEV;
	}
	for (int i = 0; i < n; i++) {
		strncat(list, names[i], sizeof(list) - strlen(list) - 2);
		if (i + 1 < n)
			strcat(list, ",");
	}
	free(a->cfg.nics);
	a->cfg.nics = strdup(list);
	if (!a->cfg.nics)
		return -ENOMEM;
	fq_info("back-end NICs discovered: %s; front-end (not probed): %s", list,
		*frontend ? frontend : "none");
	return 0;
}

/* RUN_DIR/NAME unless the setting gives the path. */
/* The run directory holds the sockets and pages job processes trust: it
 * must be a directory of root or of the agent's user that no one else may
 * write (who can write it can swap a page or a socket). Created 0755 if
 * missing. */
static int check_run_dir(const char *dir)
{
	struct stat st;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		int rc = -errno;

		fq_error("cannot create agent.run_dir %s: %s", dir, strerror(-rc));
		return rc;
	}
	if (stat(dir, &st) < 0) {
		int rc = -errno;

		fq_error("agent.run_dir %s: %s", dir, strerror(-rc));
		return rc;
	}
	if (!S_ISDIR(st.st_mode) || (st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & 022)) {
		fq_error("agent.run_dir %s (uid %u, mode %04o): refusing to start: it must be a directory of "
			 "root or uid %u that no one else may write",
			 dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), (unsigned)geteuid());
		return -EPERM;
	}
	return 0;
}

/* Say what the page writer is about to replace (fq_shm_page_create does). */
static void vet_page(const char *path)
{
	char why[64];

	if (fq_shm_page_untrusted(path, why, sizeof(why)) > 0)
		fq_warn("%s is %s: not trusted, replaced by a fresh page", path, why);
}

/* Descriptors the agent needs besides its local connections: probe
 * transports, the uplink, spool files, the event loop, listeners. */
#define AGENT_OWN_FDS 256

/* Every connection the local sockets admit must find a descriptor, or the
 * telemetry socket's users could exhaust them for the step socket too: the
 * soft RLIMIT_NOFILE is raised to fit (the unit's LimitNOFILE= sets the
 * hard one); a hard limit below the need is a start-up error. */
static int fit_nofile(const struct agent_config *cfg)
{
	rlim_t need = (rlim_t)(cfg->step_max_connections + cfg->telemetry_max_connections + AGENT_OWN_FDS);
	struct rlimit rl;

	getrlimit(RLIMIT_NOFILE, &rl); /* cannot fail for a valid resource */
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
		if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
			fq_error(
			    "agent.step_max_connections + agent.telemetry_max_connections + %d need %llu "
			    "file descriptors; RLIMIT_NOFILE allows %llu (raise LimitNOFILE=)",
			    AGENT_OWN_FDS, (unsigned long long)need, (unsigned long long)rl.rlim_max);
			return -EMFILE;
		}
		rl.rlim_cur = need;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
			int rc = -errno;

			fq_error("cannot raise RLIMIT_NOFILE to %llu: %s", (unsigned long long)need,
				 strerror(-rc));
			return rc;
		}
	}
	return 0;
}

/* The loop's thread to SCHED_FIFO at agent.rt_priority (the workers,
 * started before, keep what they have: their blocking calls need no
 * haste). On a host whose cores a job's threads fill (NCCL's proxy threads
 * spin), an agent of ordinary priority went unscheduled for 100-300 ms at
 * a time: its peers' probes went unanswered and they took its paths DOWN,
 * and the job report listed link failures that never happened. Real-time
 * throttling (sched_rt_runtime_us) still leaves the rest of the host 5 %
 * of every second should the loop ever spin. Refused (no CAP_SYS_NICE, an
 * RT budget of 0 in the agent's cgroup): said once, and the agent runs on. */
static void set_scheduling(struct agent *a)
{
	struct sched_param sp = {.sched_priority = (int)a->cfg.rt_priority};

	snprintf(a->sched, sizeof(a->sched), "other");
	if (!a->cfg.rt_priority)
		return;
	if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0) {
		fq_warn("cannot run SCHED_FIFO at priority %d (agent.rt_priority): %s; a job that fills the "
			"cores can hold the probe answers back",
			sp.sched_priority, strerror(errno));
		return;
	}
	snprintf(a->sched, sizeof(a->sched), "fifo:%d", sp.sched_priority);
}

/* The spool, the uplink and the pages: what a running agent shares. */
static int start_sharing(struct agent *a)
{
	struct fq_local_limits lim = {
	    .step_max = (unsigned)a->cfg.step_max_connections,
	    .telemetry_max = (unsigned)a->cfg.telemetry_max_connections,
	    .max_per_uid = (unsigned)a->cfg.telemetry_max_per_uid,
	    .idle_timeout_ns = (int64_t)a->cfg.telemetry_idle_timeout,
	    .frame_timeout_ns = (int64_t)a->cfg.frame_timeout,
	};
	int rc;

	a->lane_limit =
	    (struct fq_rate_limit){(double)a->cfg.telemetry_lane_rate, (double)a->cfg.telemetry_lane_burst};
	a->event_limit =
	    (struct fq_rate_limit){(double)a->cfg.telemetry_event_rate, (double)a->cfg.telemetry_event_burst};

	rc = check_run_dir(a->cfg.run_dir);
	if (rc < 0)
		return rc;
	{
		size_t n;
		char err[512];

		rc = fq_steps_load(a->steps, a->steps_path, fq_now_ns(), &n, err, sizeof(err));
		if (rc < 0)
			fq_warn("step registry not restored: %s", err);
		else if (n)
			fq_info("%zu step(s) restored from %s", n, a->steps_path);
	}
	vet_page(a->clock_page_path);
	vet_page(a->path_page_path);
	rc = fq_clock_page_writer_open(a->clock_page_path, &a->clock_page);
	if (rc < 0) {
		fq_error("cannot create the clock page %s: %s", a->clock_page_path, strerror(-rc));
		return rc;
	}
	rc = fq_path_page_writer_open(a->path_page_path, &a->path_page);
	if (rc < 0) {
		fq_error("cannot create the path page %s: %s", a->path_page_path, strerror(-rc));
		return rc;
	}
	rc = fit_nofile(&a->cfg);
	if (rc < 0)
		return rc;
	a->local = fq_local_create(a->base, a->step_socket, a->telemetry_socket, a->clock_page_path,
				   a->path_page_path, &lim, &agent_local_ops, a);
	if (!a->local)
		return -EIO;
	if (*a->cfg.controller) {
		struct fq_uplink_config uc = {.munge_socket = a->cfg.munge_socket,
					      .port = 7100,
					      .controller_uid = (uid_t)a->cfg.controller_uid};
		char err[512], text[FQ_SIGN_PUBLIC_TEXT];
		char host[256], *colon;

		snprintf(host, sizeof(host), "%s", a->cfg.controller);
		colon = strrchr(host, ':');
		if (colon) {
			char *end;
			unsigned long port = strtoul(colon + 1, &end, 10);
			if (*end || port == 0 || port > 65535) {
				fq_error("agent.controller: '%s' is not HOST[:PORT]", a->cfg.controller);
				return -EINVAL;
			}
			*colon = '\0';
			uc.port = (uint16_t)port;
		}
		uc.host = host;
		if (*a->cfg.node_key) {
			if ((rc = fq_signkey_load(a->cfg.node_key, &a->node_key, err, sizeof(err))) < 0) {
				fq_error("agent.node_key: %s", err);
				return rc;
			}
			uc.node_key = &a->node_key;
			fq_signkey_public_text(a->node_key.public, text, sizeof(text));
			fq_info("agent.node_key: hellos for %s are signed by %s", a->cfg.node, text);
		}
		if (*a->cfg.controller_key) {
			if (fq_signkey_public_parse(a->cfg.controller_key, a->controller_key) < 0) {
				fq_error("agent.controller_key: '%s' is not a public key (ed25519:BASE64)",
					 a->cfg.controller_key);
				return -EINVAL;
			}
			uc.controller_key = a->controller_key;
		}
		rc = fq_spool_open(a->cfg.spool_dir, a->cfg.spool_max, &a->spool);
		if (rc == 0 && (rc = fq_spool_attach(a->spool, a->base)) < 0)
			fq_error("spool: cannot start its worker thread: %s", strerror(-rc));
		if (rc < 0)
			return rc;
		a->uplink = fq_uplink_create(a->base, &uc, a->spool, &agent_uplink_ops, a);
		if (!a->uplink)
			return -ENOMEM;
	} else {
		fq_info("no controller configured (agent.controller): reports stay local");
	}
	return 0;
}

/* --new-key FILE: a new secret key in FILE, and on stdout the line that
 * binds this node to it in the controller's node bindings. */
static int make_node_key(const char *path, const char *node)
{
	char err[512], text[FQ_SIGN_PUBLIC_TEXT];

	if (fq_signkey_new(path, text, sizeof(text), err, sizeof(err)) < 0) {
		fprintf(stderr, "fabriciq-agent: %s\n", err);
		return 1;
	}
	printf("%s %s\n", node, text);
	fprintf(stderr,
		"fabriciq-agent: new key in %s (agent.node_key = %s); bind %s to it: add the line above to\n"
		"the controller's controller.node_bindings (replacing %s's line) and reload it (SIGHUP)\n",
		path, path, node, node);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"set", required_argument, NULL, 's'},
	    {"status", no_argument, NULL, 'S'},
	    {"json", no_argument, NULL, 'j'},
	    {"dump-config", no_argument, NULL, 'd'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {"new-key", required_argument, NULL, 'k'},
	    {NULL, 0, NULL, 0},
	};
	static struct agent a; /* its tables are large for a stack */
	const char *config = FQ_CONFIG_PATH;
	char *sets[64];
	int nsets = 0, status = 0, json = 0, dump = 0, opt, rc = 1; /* 1 runtime, 2 configuration */
	char err[512], host[256];
	const char *new_key = NULL;
	bool discovered;

	while ((opt = getopt_long(argc, argv, "c:s:hV", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			config = optarg;
			break;
		case 's':
			if (nsets == 64) {
				fprintf(stderr, "fabriciq-agent: too many --set\n");
				return 2;
			}
			sets[nsets++] = optarg;
			break;
		case 'S':
			status = 1;
			break;
		case 'j':
			json = 1;
			break;
		case 'd':
			dump = 1;
			break;
		case 'k':
			new_key = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("fabriciq-agent %s\n", AGENT_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "fabriciq-agent: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	fq_log_init("fabriciq-agent", FQ_LOG_INFO, FQ_LOG_STDERR);

	/* configuration: defaults, file, overrides */
	if (fq_cfg_load_all(&agent_config_schema, &a.cfg, config, sets, nsets, err, sizeof(err)) < 0) {
		fprintf(stderr, "fabriciq-agent: %s\n", err);
		rc = 2;
		goto out;
	}
	if (status) {
		rc = agent_print_status(a.cfg.status_file, json);
		goto out;
	}
	if (!a.cfg.node) {
		gethostname(host, sizeof(host) - 1);
		host[sizeof(host) - 1] = '\0';
		a.cfg.node = strdup(host);
	}
	if (new_key) {
		rc = make_node_key(new_key, a.cfg.node);
		goto out;
	}
	if (dump) {
		fq_cfg_dump(&agent_config_schema, &a.cfg, stdout);
		rc = 0;
		goto out;
	}
	discovered = !a.cfg.nics || !*a.cfg.nics;
	if (discovered && discover_nics(&a) < 0)
		goto out;
	if (a.cfg.window / a.cfg.bucket > 256) {
		fprintf(stderr, "fabriciq-agent: agent.window / agent.bucket must be at most 256\n");
		rc = 2;
		goto out;
	}
	fq_log_set_level((enum fq_log_level)a.cfg.log_level);

	if (agent_config_path(a.step_socket, sizeof(a.step_socket), a.cfg.step_socket, a.cfg.run_dir,
			      "agent-step.sock") < 0 ||
	    agent_config_path(a.telemetry_socket, sizeof(a.telemetry_socket), a.cfg.telemetry_socket,
			      a.cfg.run_dir, "agent-telemetry.sock") < 0 ||
	    agent_config_path(a.clock_page_path, sizeof(a.clock_page_path), a.cfg.clock_page, a.cfg.run_dir,
			      "clock") < 0 ||
	    agent_config_path(a.path_page_path, sizeof(a.path_page_path), a.cfg.path_page, a.cfg.run_dir,
			      "paths") < 0 ||
	    agent_config_path(a.steps_path, sizeof(a.steps_path), "", a.cfg.run_dir, "steps.json") < 0) {
		rc = 2;
		goto out;
	}

	/* modules, in order */
	a.started_raw = fq_now_ns();
	a.events = json_object_new_array();
	a.time_source = "none";
	read_boot_id(&a);
	fq_xstamp_measure(16, &a.xs);
	a.epoch_ns = a.xs.offset_ns;
	{
		struct fq_timeline_config tc = {.max_slew_ppb = (int64_t)a.cfg.max_slew,
						.publish_ns = (int64_t)a.cfg.publish_interval};
		fq_timeline_init(&a.timeline, &tc);
	}
	a.paths = calloc(FQ_PROBER_MAX_PATHS, sizeof(*a.paths));
	a.steps = fq_steps_create(1024);
	if (!a.paths || !a.steps) {
		fq_error("out of memory");
		goto out;
	}
	a.base = event_base_new();
	if (!a.base) {
		fq_error("cannot create the event loop");
		goto out;
	}
	{
		struct fq_prober_config pc = {
		    .node = a.cfg.node,
		    .port = (uint16_t)a.cfg.port,
		    .probe_interval_ns = (int64_t)a.cfg.probe_interval,
		    .guard_ns = (int64_t)a.cfg.guard,
		    .window_ns = (int64_t)a.cfg.window,
		    .bucket_ns = (int64_t)a.cfg.bucket,
		    .down_after_ns = (int64_t)a.cfg.down_after,
		    .flows = (unsigned)a.cfg.probe_flows,
		};
		a.prober = fq_prober_create(a.base, &pc, agent_link_event, &a);
		if (a.prober)
			fq_prober_set_stall_hook(a.prober, agent_stall, &a);
	}
	if (!a.prober || add_nics(&a, discovered) < 0 || add_peers(&a) < 0 || fq_prober_start(a.prober) < 0 ||
	    start_sharing(&a) < 0)
		goto out;
	if (a.cfg.trace_interval) {
		struct fq_tracer_config tc;

		fq_tracer_config_defaults(&tc);
		tc.interval_ns = (int64_t)a.cfg.trace_interval;
		tc.max_ttl = (unsigned)a.cfg.trace_max_ttl;
		a.tracer = fq_tracer_create(a.base, a.prober, &tc, agent_route, &a);
		if (!a.tracer) { /* probing goes on: the controller lacks this node's routes */
			int why = errno;

			fq_warn("path traces off (the topology will not know this node's routes): %s%s",
				strerror(why), why == EPERM ? " (a raw ICMP socket needs CAP_NET_RAW)" : "");
		}
	}
	if (a.tracer) {
		a.lanetrace = fq_lanetrace_create(a.base, a.tracer, agent_lane_route, &a);
		if (!a.lanetrace) { /* the controller attaches incidents by probe routes only */
			int why = errno;

			fq_warn("lane traces off (jobs' lanes' own routes unknown): %s%s", strerror(why),
				why == EPERM ? " (a raw IP socket needs CAP_NET_RAW)" : "");
		}
	}
	{
		struct timeval tv = {(time_t)(a.cfg.report_interval / 1000000000),
				     (suseconds_t)(a.cfg.report_interval % 1000000000 / 1000)};
		struct timeval pv = {(time_t)(a.cfg.publish_interval / 1000000000),
				     (suseconds_t)(a.cfg.publish_interval % 1000000000 / 1000)};
		a.report_ev = event_new(a.base, -1, EV_PERSIST, on_report, &a);
		a.publish_ev = event_new(a.base, -1, EV_PERSIST, on_publish, &a);
		a.paths_ev = evtimer_new(a.base, agent_paths_settled, &a);
		a.sigterm_ev = evsignal_new(a.base, SIGTERM, on_signal, &a);
		a.sigint_ev = evsignal_new(a.base, SIGINT, on_signal, &a);
		if (!a.report_ev || !a.publish_ev || !a.paths_ev || !a.sigterm_ev || !a.sigint_ev ||
		    event_add(a.report_ev, &tv) < 0 || event_add(a.publish_ev, &pv) < 0 ||
		    event_add(a.sigterm_ev, NULL) < 0 || event_add(a.sigint_ev, NULL) < 0) {
			fq_error("cannot set up timers and signals");
			goto out;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	set_scheduling(&a);
	fq_info("node %s, version %s: running (%s)", a.cfg.node, AGENT_VERSION, a.sched);
	if (fq_notify_ready(a.base, "probing") < 0)
		goto out;

	event_base_dispatch(a.base);
	fq_notify_stopping();
	fq_local_drain(a.local); /* into the spool, which is flushed as it closes */
	agent_write_status(&a);
	rc = 0;

out: /* finalise in reverse */
	if (a.sigint_ev)
		event_free(a.sigint_ev);
	if (a.sigterm_ev)
		event_free(a.sigterm_ev);
	if (a.publish_ev)
		event_free(a.publish_ev);
	if (a.paths_ev)
		event_free(a.paths_ev);
	if (a.report_ev)
		event_free(a.report_ev);
	fq_uplink_destroy(a.uplink);
	fq_spool_close(a.spool);
	fq_local_destroy(a.local);
	if (a.path_page)
		fq_path_page_writer_close(a.path_page);
	if (a.clock_page)
		fq_clock_page_writer_close(a.clock_page);
	fq_lanetrace_destroy(a.lanetrace);
	fq_tracer_destroy(a.tracer);
	fq_prober_destroy(a.prober);
	fq_steps_destroy(a.steps);
	free(a.paths);
	if (a.base)
		event_base_free(a.base);
	if (a.events)
		json_object_put(a.events);
	fq_cfg_free(&agent_config_schema, &a.cfg);
	return rc;
}
