/*
 * fabriciq-agent: the node agent (probe mesh, clock estimates, path
 * liveness). Reads /etc/fabriciq/fabriciq.conf (agent.* keys), probes its
 * peers on every back-end NIC, and writes its state each report interval to
 * a JSON status file (atomically), which `fabriciq-agent --status` prints.
 */
#include <errno.h>
#include <event2/event.h>
#include <getopt.h>
#include <json-c/json.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/config.h"
#include "common/log.h"
#include "slurmd-agent/prober.h"

#define AGENT_VERSION PACKAGE_VERSION

struct agent_config {
	char *node;
	char *nics;
	char *peers;
	uint64_t port;
	uint64_t probe_interval, guard, window, bucket, down_after, report_interval;
	char *status_file;
	int log_level;
};

static const char *const log_levels[] = {"error", "warn", "info", "debug", NULL};

static const struct fq_cfg_option agent_options[] = {
    {"node", FQ_CFG_STRING, offsetof(struct agent_config, node), NULL, 0, 0, NULL,
     "this node's name (default: the host name)"},
    {"nics", FQ_CFG_STRING, offsetof(struct agent_config, nics), NULL, 0, 0, NULL,
     "back-end NICs to probe from, comma-separated (e.g. rail0,rail1)"},
    {"peers", FQ_CFG_STRING, offsetof(struct agent_config, peers), "", 0, 0, NULL,
     "static peers, comma-separated NODE:NIC@IPV4 (probed from the local NIC of the same name)"},
    {"port", FQ_CFG_UINT, offsetof(struct agent_config, port), "7101", 1, 65535, NULL, "UDP probe port"},
    {"probe_interval", FQ_CFG_DURATION, offsetof(struct agent_config, probe_interval), "20ms", 1e6, 10e9,
     NULL, "time between probe pairs on one path"},
    {"guard", FQ_CFG_DURATION, offsetof(struct agent_config, guard), "4us", 0, 1e9, NULL,
     "a probe pair counts for clock estimation only if its receive gap is within this of its send gap"},
    {"window", FQ_CFG_DURATION, offsetof(struct agent_config, window), "4s", 0.5e9, 600e9, NULL,
     "sliding window of the clock fit"},
    {"bucket", FQ_CFG_DURATION, offsetof(struct agent_config, bucket), "250ms", 10e6, 60e9, NULL,
     "lower-envelope resolution of the clock fit (window/bucket <= 256)"},
    {"down_after", FQ_CFG_DURATION, offsetof(struct agent_config, down_after), "250ms", 10e6, 60e9, NULL,
     "a path with no answer for this long is DOWN"},
    {"report_interval", FQ_CFG_DURATION, offsetof(struct agent_config, report_interval), "1s", 100e6, 3600e9,
     NULL, "report window (status file, controller reports)"},
    {"status_file", FQ_CFG_STRING, offsetof(struct agent_config, status_file),
     "/run/fabriciq/agent-status.json", 0, 0, NULL, "where the agent writes its state each report window"},
    {"log_level", FQ_CFG_ENUM, offsetof(struct agent_config, log_level), "info", 0, 0, log_levels,
     "error, warn, info or debug"},
    {NULL, 0, 0, NULL, 0, 0, NULL, NULL},
};

static const struct fq_cfg_schema agent_schema = {"agent", agent_options};

struct agent {
	struct agent_config cfg;
	struct event_base *base;
	struct fq_prober *prober;
	struct event *report_ev, *sigterm_ev, *sigint_ev;
	struct json_object *events; /* the last link events */
	int64_t started_raw;
};

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "Usage: fabriciq-agent [-c FILE] [-s KEY=VALUE]... [--foreground]\n"
	    "       fabriciq-agent --status [-c FILE] [--json]\n"
	    "       fabriciq-agent --dump-config [-c FILE] [-s KEY=VALUE]...\n\n"
	    "The fabriciq node agent: probes its peers on every back-end NIC (coded UDP probe pairs with\n"
	    "kernel timestamps), estimates each peer's clock offset and drift, detects dead paths, and\n"
	    "writes its state to a status file each report window.\n\n"
	    "  -c, --config FILE   configuration file (default " FQ_CONFIG_PATH ")\n"
	    "  -s, --set KEY=VAL   override one setting (agent.KEY or KEY)\n"
	    "      --status        print the running agent's state (from its status file)\n"
	    "      --json          with --status: the raw JSON\n"
	    "      --dump-config   print the effective configuration and exit\n"
	    "  -h, --help          this text\n\n"
	    "Settings:\n");
	fq_cfg_print_help(&agent_schema, out);
}

static void on_link_event(void *arg, const char *local_nic, const char *peer_node, const char *peer_nic,
			  int up, int64_t since_real, int64_t detected_real)
{
	struct agent *a = arg;
	struct json_object *e = json_object_new_object();

	if (up)
		fq_warn("path %s -> %s:%s is UP", local_nic, peer_node, peer_nic);
	else
		fq_warn("path %s -> %s:%s is DOWN (silent for %.1f ms)", local_nic, peer_node, peer_nic,
			(double)(detected_real - since_real) / 1e6);
	json_object_object_add(e, "local_nic", json_object_new_string(local_nic));
	json_object_object_add(e, "peer_node", json_object_new_string(peer_node));
	json_object_object_add(e, "peer_nic", json_object_new_string(peer_nic));
	json_object_object_add(e, "state", json_object_new_string(up ? "up" : "down"));
	json_object_object_add(e, "since_realtime_ns", json_object_new_int64(since_real));
	json_object_object_add(e, "detected_realtime_ns", json_object_new_int64(detected_real));
	json_object_array_add(a->events, e);
	if (json_object_array_length(a->events) > 256)
		json_object_array_del_idx(a->events, 0, 1);
}

/* Write the status file atomically: readers never see half a file. */
static void write_status(struct agent *a)
{
	struct json_object *st = json_object_new_object();
	char tmp[4096];
	const char *text;
	FILE *f;

	json_object_object_add(st, "node", json_object_new_string(a->cfg.node));
	json_object_object_add(st, "agent_version", json_object_new_string(AGENT_VERSION));
	json_object_object_add(st, "pid", json_object_new_int(getpid()));
	json_object_object_add(st, "realtime_ns", json_object_new_int64(fq_realtime_ns()));
	json_object_object_add(st, "uptime_s",
			       json_object_new_double((double)(fq_now_ns() - a->started_raw) / 1e9));
	json_object_object_add(st, "probe_interval_ns",
			       json_object_new_int64((int64_t)a->cfg.probe_interval));
	json_object_object_add(st, "paths", fq_prober_report(a->prober));
	json_object_object_add(st, "counters", fq_prober_counters(a->prober));
	json_object_object_add(st, "events", json_object_get(a->events));
	text = json_object_to_json_string_ext(st, JSON_C_TO_STRING_PRETTY);
	snprintf(tmp, sizeof(tmp), "%s.tmp", a->cfg.status_file);
	f = fopen(tmp, "we");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, a->cfg.status_file) < 0)
		fq_log_rl(FQ_LOG_ERROR, "cannot write status file %s: %s", a->cfg.status_file,
			  strerror(errno));
	json_object_put(st);
}

static void on_report(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	write_status(arg);
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
			fq_error("agent.peers: '%s' is not NODE:NIC@IPV4", tok);
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

static int add_nics(struct agent *a)
{
	char *list = strdup(a->cfg.nics), *save = NULL;
	int rc = 0;

	if (!list)
		return -ENOMEM;
	for (char *tok = strtok_r(list, ", \t", &save); tok && rc == 0; tok = strtok_r(NULL, ", \t", &save))
		rc = fq_prober_add_nic(a->prober, tok);
	free(list);
	return rc;
}

static int print_status(const char *path, int json)
{
	struct json_object *st = json_object_from_file(path), *paths, *node;

	if (!st) {
		fprintf(stderr, "fabriciq-agent: cannot read status file %s: %s (is the agent running?)\n",
			path, json_util_get_last_err());
		return 1;
	}
	if (json) {
		puts(json_object_to_json_string_ext(st, JSON_C_TO_STRING_PRETTY));
		json_object_put(st);
		return 0;
	}
	json_object_object_get_ex(st, "node", &node);
	json_object_object_get_ex(st, "paths", &paths);
	printf("node %s\n", json_object_get_string(node));
	printf("%-8s %-14s %-5s %6s %5s %5s %12s %10s %10s %10s\n", "NIC", "PEER", "STATE", "FLAPS", "SENT",
	       "LOST", "OFFSET_NS", "BOUND_NS", "OWD_P50", "OWD_P99");
	for (size_t i = 0; paths && i < json_object_array_length(paths); i++) {
		struct json_object *p = json_object_array_get_idx(paths, i), *v, *c, *owd;
		char peer[128];
		long long off = 0, bound = 0, p50 = -1, p99 = -1;

		snprintf(peer, sizeof(peer), "%s:%s",
			 json_object_get_string(json_object_object_get(p, "peer_node")),
			 json_object_get_string(json_object_object_get(p, "peer_nic")));
		if (json_object_object_get_ex(p, "clock", &c)) {
			off = json_object_get_int64(json_object_object_get(c, "offset_ns"));
			bound = json_object_get_int64(json_object_object_get(c, "bound_ns"));
		}
		if (json_object_object_get_ex(p, "owd_fwd_ns", &owd) && owd) {
			p50 = json_object_get_int64(json_object_object_get(owd, "p50"));
			p99 = json_object_get_int64(json_object_object_get(owd, "p99"));
		}
		json_object_object_get_ex(p, "state", &v);
		printf("%-8s %-14s %-5s %6d %5d %5d %12lld %10lld %10lld %10lld\n",
		       json_object_get_string(json_object_object_get(p, "local_nic")), peer,
		       json_object_get_string(v),
		       json_object_get_int(json_object_object_get(p, "flaps_last_hour")),
		       json_object_get_int(json_object_object_get(p, "sent")),
		       json_object_get_int(json_object_object_get(p, "lost")), off, bound, p50, p99);
	}
	json_object_put(st);
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
	    {NULL, 0, NULL, 0},
	};
	struct agent a = {0};
	const char *config = FQ_CONFIG_PATH;
	char *sets[64];
	int nsets = 0, status = 0, json = 0, dump = 0, opt, rc = 1;
	char err[512], host[256];

	while ((opt = getopt_long(argc, argv, "c:s:h", longopts, NULL)) != -1) {
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
		case 'h':
			usage(stdout);
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
	if (fq_cfg_defaults(&agent_schema, &a.cfg, err, sizeof(err)) < 0 ||
	    (access(config, F_OK) == 0 || strcmp(config, FQ_CONFIG_PATH) != 0
		 ? fq_cfg_load(&agent_schema, &a.cfg, config, err, sizeof(err))
		 : 0) < 0) {
		fprintf(stderr, "fabriciq-agent: %s\n", err);
		goto out;
	}
	for (int i = 0; i < nsets; i++) {
		char *eq = strchr(sets[i], '=');
		if (!eq) {
			fprintf(stderr, "fabriciq-agent: --set %s: expected KEY=VALUE\n", sets[i]);
			goto out;
		}
		*eq = '\0';
		if (fq_cfg_set(&agent_schema, &a.cfg, sets[i], eq + 1, err, sizeof(err)) < 0) {
			fprintf(stderr, "fabriciq-agent: --set: %s\n", err);
			goto out;
		}
	}
	if (status) {
		rc = print_status(a.cfg.status_file, json);
		goto out;
	}
	if (!a.cfg.node) {
		gethostname(host, sizeof(host) - 1);
		host[sizeof(host) - 1] = '\0';
		a.cfg.node = strdup(host);
	}
	if (dump) {
		fq_cfg_dump(&agent_schema, &a.cfg, stdout);
		rc = 0;
		goto out;
	}
	if (!a.cfg.nics || !*a.cfg.nics) {
		fprintf(stderr, "fabriciq-agent: agent.nics is not set (the back-end NICs to probe from)\n");
		goto out;
	}
	if (a.cfg.window / a.cfg.bucket > 256) {
		fprintf(stderr, "fabriciq-agent: agent.window / agent.bucket must be at most 256\n");
		goto out;
	}
	fq_log_set_level((enum fq_log_level)a.cfg.log_level);

	/* modules, in order */
	a.started_raw = fq_now_ns();
	a.events = json_object_new_array();
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
		};
		a.prober = fq_prober_create(a.base, &pc, on_link_event, &a);
	}
	if (!a.prober || add_nics(&a) < 0 || add_peers(&a) < 0 || fq_prober_start(a.prober) < 0)
		goto out;
	{
		struct timeval tv = {(time_t)(a.cfg.report_interval / 1000000000),
				     (suseconds_t)(a.cfg.report_interval % 1000000000 / 1000)};
		a.report_ev = event_new(a.base, -1, EV_PERSIST, on_report, &a);
		a.sigterm_ev = evsignal_new(a.base, SIGTERM, on_signal, &a);
		a.sigint_ev = evsignal_new(a.base, SIGINT, on_signal, &a);
		if (!a.report_ev || !a.sigterm_ev || !a.sigint_ev || event_add(a.report_ev, &tv) < 0 ||
		    event_add(a.sigterm_ev, NULL) < 0 || event_add(a.sigint_ev, NULL) < 0) {
			fq_error("cannot set up timers and signals");
			goto out;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	fq_info("node %s, version %s: running", a.cfg.node, AGENT_VERSION);

	event_base_dispatch(a.base);
	write_status(&a);
	rc = 0;

out: /* finalise in reverse */
	if (a.sigint_ev)
		event_free(a.sigint_ev);
	if (a.sigterm_ev)
		event_free(a.sigterm_ev);
	if (a.report_ev)
		event_free(a.report_ev);
	fq_prober_destroy(a.prober);
	if (a.base)
		event_base_free(a.base);
	if (a.events)
		json_object_put(a.events);
	fq_cfg_free(&agent_schema, &a.cfg);
	return rc;
}
