/*
 * fabriciq-controller: the controller daemon. Authenticates agents (munge),
 * ingests their frames into PostgreSQL (controller/ingest.c, spooling to
 * disk while the database is away), solves the mesh clock each report
 * window and sends every agent its correction, assigns probe peers, runs
 * the anomaly detector and serves /metrics and the JSON API.
 *
 * This file is main: the settings, start-up, the timers and signals; the
 * rest of the daemon is in ctl_*.c (controller/ctl.h says which does what).
 */
#include "controller/ctl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/config.h"
#include "common/frame.h"
#include "common/log.h"
#include "common/notify.h"
#include "controller/authq.h"

static const char *const log_levels[] = {"error", "warn", "info", "debug", NULL};

#define OPT(n, t, f, d, lo, hi, h)                                                                           \
	{                                                                                                    \
		n, t, offsetof(struct ctl_config, f), d, lo, hi, NULL, h                                     \
	}
static const struct fq_cfg_option ctl_options[] = {
    OPT("listen", FQ_CFG_STRING, listen, "0.0.0.0:7100", 0, 0, "agents connect here (IPV4:PORT)"),
    OPT("http_listen", FQ_CFG_STRING, http_listen, "127.0.0.1:7180", 0, 0,
	"Prometheus /metrics and the JSON API /api/v1 (IPV4:PORT; empty: no HTTP)"),
    OPT("api_admin_uids", FQ_CFG_STRING, api_admin_uids, "", 0, 0,
	"uids besides root whose munge credential opens the API's job, anomaly and hint endpoints "
	"(\"1001, 1002\")"),
    OPT("topology_file", FQ_CFG_STRING, topology_file, "", 0, 0,
	"the site's expected topology (fabriciq-topology(5)): names the switches and is checked against "
	"the discovered one (empty: no check, automatic names)"),
    OPT("db", FQ_CFG_STRING, db, "", 0, 0,
	"PostgreSQL conninfo or URI (empty: the PG* environment variables)"),
    OPT("db_migrate", FQ_CFG_BOOL, db_migrate, "yes", 0, 0, "bring the schema up to date on connect"),
    OPT("db_backoff_max", FQ_CFG_DURATION, db_backoff_max, "10s", 0.1e9, 600e9,
	"longest wait between reconnection attempts to PostgreSQL"),
    OPT("db_connect_timeout", FQ_CFG_DURATION, db_connect_timeout, "3s", 1e9, 600e9,
	"give up connecting to PostgreSQL after this (a connect_timeout in controller.db wins)"),
    OPT("db_statement_timeout", FQ_CFG_DURATION, db_statement_timeout, "2s", 1e6, 600e9,
	"a flush slower than this goes to the spool instead (a slow database must not stall ingest)"),
    OPT("munge_socket", FQ_CFG_STRING, munge_socket, "", 0, 0, "munged's socket (empty: munge's default)"),
    OPT("agent_uid", FQ_CFG_UINT, agent_uid, "0", 0, 4294967294.0,
	"uid the agents' munge credentials must carry"),
    OPT("max_frame", FQ_CFG_SIZE, max_frame, "4MiB", 1024, 64 << 20, "largest frame accepted from an agent"),
    OPT("auth_timeout", FQ_CFG_DURATION, auth_timeout, "10s", 0.1e9, 600e9,
	"an agent must authenticate within this after connecting, then send AgentHello within this"),
    OPT("max_connections", FQ_CFG_UINT, max_connections, "4096", 1, 1e6,
	"agent connections open at once, in any state; more are closed on accept (keep below the fd limit)"),
    OPT("max_unauthenticated_per_source", FQ_CFG_UINT, max_unauthenticated_per_source, "4", 1, 1e6,
	"connections from one source address that have not yet sent their AgentHello; more are closed on "
	"accept"),
    OPT("auth_queue", FQ_CFG_UINT, auth_queue, "64", 1, 65536,
	"credentials waiting for munged at once (decoded off the event loop); an Auth beyond is answered "
	"EAGAIN"),
    OPT("flush_interval", FQ_CFG_DURATION, flush_interval, "200ms", 1e6, 60e9,
	"accepted frames are written (then acknowledged) at least this often"),
    OPT("flush_frames", FQ_CFG_UINT, flush_frames, "20000", 1, 1e7,
	"... or as soon as this many are pending"),
    OPT("spool_dir", FQ_CFG_STRING, spool_dir, "/var/spool/fabriciq/controller", 0, 0,
	"where frames wait while PostgreSQL is unreachable"),
    OPT("bind_nodes", FQ_CFG_BOOL, bind_nodes, "yes", 0, 0,
	"a node name belongs to the address its agent first connected from: an AgentHello naming it from "
	"another address is refused (trust on first use; controller.node_bindings)"),
    OPT("node_bindings", FQ_CFG_STRING, node_bindings, "", 0, 0,
	"the file of node names and their addresses (empty: node-addresses in controller.spool_dir); to move "
	"a "
	"node, delete its line and reload (SIGHUP)"),
    OPT("node_keys_required", FQ_CFG_BOOL, node_keys_required, "no", 0, 0,
	"every node must be bound to its own key in controller.node_bindings (a line \"NODE ed25519:...\", "
	"which fabriciq-agent --new-key prints), and sign its hello with it: a node bound to an address, or "
	"to nothing, is refused (needs controller.bind_nodes)"),
    OPT("key", FQ_CFG_STRING, key, "", 0, 0,
	"the controller's secret key file (fabriciq-controller --new-key FILE makes one and prints its "
	"public "
	"key): its answer to each agent is signed, so agents given the public key (agent.controller_key) "
	"tell "
	"it from root on another host; empty: not signed"),
    OPT("spool_max", FQ_CFG_SIZE, spool_max, "1GiB", 1 << 20, 1e15, "size limit of the spool file"),
    OPT("report_interval", FQ_CFG_DURATION, report_interval, "1s", 0.1e9, 60e9,
	"report window: clock solve and corrections, detector tick, metrics"),
    OPT("reference_node", FQ_CFG_STRING, reference_node, "", 0, 0,
	"the clock reference (empty: the first node name in byte order)"),
    OPT("correction_valid", FQ_CFG_DURATION, correction_valid, "10s", 1e9, 3600e9,
	"a clock correction is valid this long after it is sent"),
    OPT("peers_per_nic", FQ_CFG_UINT, peers_per_nic, "10", 1, 1000,
	"probe peers assigned to each back-end NIC"),
    OPT("probe_port", FQ_CFG_UINT, probe_port, "7101", 1, 65535, "the agents' UDP probe port (agent.port)"),
    OPT("peer_seed", FQ_CFG_UINT, peer_seed, "0", 0, 0, "seed of the peer assignment's rendezvous hashing"),
    OPT("flap_threshold", FQ_CFG_UINT, flap_threshold, "8", 1, 1e6,
	"flapping: more DOWNs of one NIC than this ..."),
    OPT("flap_window", FQ_CFG_DURATION, flap_window, "1h", 1e9, 7 * 86400e9, "... within this window"),
    OPT("delay_threshold", FQ_CFG_DURATION, delay_threshold, "1ms", 1e3, 60e9,
	"path_delay: a path's owd p90 above this ..."),
    OPT("delay_baseline_factor", FQ_CFG_DOUBLE, delay_baseline_factor, "4", 1, 1e6,
	"... or above the path's own baseline by this factor"),
    OPT("delay_floor", FQ_CFG_DURATION, delay_floor, "50us", 0, 60e9, "never flag a delay below this"),
    OPT("delay_min_excess", FQ_CFG_DURATION, delay_min_excess, "300us", 0, 60e9,
	"... nor a rise over the path's baseline of this or less"),
    OPT("delay_persist", FQ_CFG_UINT, delay_persist, "3", 1, 1000,
	"... for this many report windows in a row (a second of both ends' reports counts once)"),
    OPT("lane_outlier_factor", FQ_CFG_DOUBLE, lane_outlier_factor, "5", 1, 1e6,
	"lane_outlier: lane p99 above this factor times the step's median lane p99 ..."),
    OPT("lane_outlier_persist", FQ_CFG_UINT, lane_outlier_persist, "3", 1, 1000,
	"... in this many of the lane's report intervals in a row (one interval's p99 is a CPU hiccup away)"),
    OPT("inband_factor", FQ_CFG_DOUBLE, inband_factor, "5", 1, 1e6,
	"inband_mismatch: a lane's minimum delay above this factor times the probes' p50 ..."),
    OPT("inband_floor", FQ_CFG_DURATION, inband_floor, "300us", 0, 60e9, "... and more than this above it"),
    OPT("slow_nic_share", FQ_CFG_DOUBLE, slow_nic_share, "1", 0.01, 1,
	"slow_sender/receiver: this share of a NIC's paths elevated (by default every one: a slow NIC slows "
	"every path through it, and one that is not elevated clears it) ..."),
    OPT("slow_nic_min_paths", FQ_CFG_UINT, slow_nic_min_paths, "3", 1, 1e6,
	"... out of at least this many, while at most half the NICs so judged (or one) are slow: more is the "
	"fabric's queue"),
    OPT("peer_slow_factor", FQ_CFG_DOUBLE, peer_slow_factor, "4", 1.5, 1e6,
	"peer_slow (NCCL profiler): a rank's transfers to a peer below other ranks' median rate / this ..."),
    OPT("peer_slow_persist", FQ_CFG_UINT, peer_slow_persist, "3", 1, 1000,
	"... in this many of its report intervals in a row"),
    OPT("peer_slow_min_bytes", FQ_CFG_SIZE, peer_slow_min_bytes, "1MiB", 1, 1e15,
	"... judged only in an interval it moved this much (and its mean transfer 64 KiB or more)"),
    OPT("collision_advice", FQ_CFG_BOOL, collision_advice, "yes", 0, 0,
	"collision: when lanes of two or more jobs are delayed on a shared NIC, advise one job to move "
	"(through its nodes' agents and path pages)"),
    OPT("collision_factor", FQ_CFG_DOUBLE, collision_factor, "3", 1, 1e6,
	"... a lane counts when its p99 is above this factor times its NIC pair's probe delay"),
    OPT("advice_lifetime", FQ_CFG_DURATION, advice_lifetime, "30s", 1e9, 3600e9,
	"a MOVE advice holds this long unless the collision renews it"),
    OPT("rates", FQ_CFG_BOOL, rates, "yes", 0, 0,
	"rates between network classes: when lanes of a lower class share a congested link with a higher "
	"class's, cap the lower class's lanes there (through their nodes' agents and path pages) so that "
	"the link keeps room for the higher class"),
    OPT("rates_util", FQ_CFG_DOUBLE, rates_util, "0.95", 0.1, 1,
	"... the share of the link's capacity (the largest but one of what its lanes delivered in its last 9 "
	"congested windows) the classes fill together"),
    OPT("rates_min_share", FQ_CFG_DOUBLE, rates_min_share, "0.1", 0.001, 1,
	"... the lower classes keep at least this share of it"),
    OPT("rates_congest_delay", FQ_CFG_DURATION, rates_congest_delay, "2ms", 10e3, 10e9,
	"... a link is congested when a lane across it has a queueing delay above this (TCP srtt over its "
	"minimum)"),
    OPT("rates_hold", FQ_CFG_DURATION, rates_hold, "5s", 1e9, 3600e9,
	"... the rates hold this long after the higher class was last seen on the link"),
    OPT("rates_lifetime", FQ_CFG_DURATION, rates_lifetime, "10s", 2e9, 3600e9,
	"... a rate lapses this long after the agent got it unless renewed (the controller renews every "
	"3 s)"),
    OPT("resume_after", FQ_CFG_DURATION, resume_after, "10m", 1e9, 7 * 86400e9,
	"resume hint after a node has been healthy this long since its drain"),
    OPT("quiet_close", FQ_CFG_DURATION, quiet_close, "30s", 1e9, 86400e9,
	"an anomaly closes after this long without evidence"),
    OPT("step_idle", FQ_CFG_DURATION, step_idle, "10m", 1e9, 7 * 86400e9,
	"a job step's live state (its /metrics series, the detector's lanes) is dropped at its end on every "
	"node, or after this long without a frame of it"),
    OPT("incident_gap", FQ_CFG_DURATION, incident_gap, "30s", 1e9, 86400e9,
	"a link_down episode (NIC or path) ends once its place has been UP this long; DOWNs before count "
	"into it"),
    OPT("incident_settle", FQ_CFG_DURATION, incident_settle, "2s", 1e8, 60e9,
	"a path's DOWN waits this long for a NIC-level cause before it is an incident of its own "
	"(less than incident_gap)"),
    OPT("stall_wait", FQ_CFG_DURATION, stall_wait, "30s", 0, 600e9,
	"a path's DOWN toward a node whose agent has sent nothing since the path fell silent waits up to "
	"this long for that agent's report of a stall (its host gave it no CPU: its peers' DOWNs were the "
	"agent, not the link; 0: not waited for)"),
    {"log_level", FQ_CFG_ENUM, offsetof(struct ctl_config, log_level), "info", 0, 0, log_levels,
     "error, warn, info or debug"},
    {NULL, 0, 0, NULL, 0, 0, NULL, NULL},
};
#undef OPT

static const struct fq_cfg_schema ctl_schema = {"controller", ctl_options};

static struct timeval tv_of(uint64_t ns)
{
	struct timeval tv = {(time_t)(ns / 1000000000), (suseconds_t)(ns % 1000000000 / 1000)};
	return tv;
}

/* ---- timers and signals -------------------------------------------------- */

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
	struct ctl *c = arg;

	(void)fd;
	(void)what;
	fq_ingest_flush(c->ingest, fq_realtime_ns(), (int64_t)c->cfg.flush_interval / 2);
}

static void on_ingest_done(evutil_socket_t fd, short what, void *arg)
{
	struct ctl *c = arg;

	(void)fd;
	(void)what;
	fq_ingest_poll(c->ingest, fq_realtime_ns());
}

static void publish_metrics(struct ctl *c)
{
	struct fq_ingest_stats st;
	char *text;
	size_t len;

	if (!c->http)
		return;
	fq_ingest_get_stats(c->ingest, &st);
	if (fq_metrics_render(c->metrics, &st, &c->sstats, c->anomalies_opened, c->hints, &text, &len) == 0) {
		fq_http_publish_metrics(c->http, text, len);
		free(text);
	}
}

static void on_report(evutil_socket_t fd, short what, void *arg)
{
	struct ctl *c = arg;
	int64_t now = fq_realtime_ns();

	(void)fd;
	(void)what;
	ctl_clock_round(c, now);
	if (c->peers_dirty) {
		c->peers_dirty = false;
		ctl_send_peers(c);
	}
	ctl_detector_round(c, now);
	ctl_rates_round(c, now);
	ctl_expire_steps(c, now);
	publish_metrics(c);
}

/* SIGHUP: read controller.node_bindings again (an operator moved a node). */
static void on_sighup(evutil_socket_t sig, short what, void *arg)
{
	struct ctl *c = arg;
	char err[512];

	(void)sig;
	(void)what;
	if (!c->bindings)
		return;
	if (fq_nodebind_reload(c->bindings, err, sizeof(err)) < 0)
		fq_error("SIGHUP: node bindings not reloaded (the old ones stay): %s", err);
	else
		fq_info("SIGHUP: %zu node bindings reloaded", fq_nodebind_count(c->bindings));
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct ctl *c = arg;

	(void)what;
	fq_info("signal %d: flushing, then exiting", (int)sig);
	event_base_loopbreak(c->base);
}

/* ---- main ------------------------------------------------------------------ */

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: fabriciq-controller [-c FILE] [-s KEY=VALUE]...\n"
		"       fabriciq-controller --dump-config [-c FILE] [-s KEY=VALUE]...\n"
		"       fabriciq-controller --new-key FILE\n\n"
		"The fabriciq controller: authenticates node agents with munge, stores their reports in\n"
		"PostgreSQL (spooling to disk while it is unreachable), sends mesh-solved clock corrections\n"
		"and probe peer assignments, detects anomalies, serves /metrics and the JSON API.\n\n"
		"  -c, --config FILE   configuration file (default " FQ_CONFIG_PATH ")\n"
		"  -s, --set KEY=VAL   override one setting (controller.KEY or KEY)\n"
		"      --dump-config   print the effective configuration and exit\n"
		"      --new-key FILE  make a secret key for controller.key in FILE (0600, new) and print\n"
		"                      its public key for the agents' agent.controller_key\n"
		"  -h, --help          this text\n"
		"  -V, --version       the version\n\n"
		"Exit status: 0 stopped by SIGTERM/SIGINT after a final flush; 1 runtime failure;\n"
		"2 usage or configuration error.\n\n"
		"Settings:\n");
	fq_cfg_print_help(&ctl_schema, out);
}

static int parse_listen(const char *text, struct sockaddr_in *sa)
{
	char host[64];
	const char *colon = strrchr(text, ':');
	unsigned long port;

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	if (!colon || (size_t)(colon - text) >= sizeof(host))
		return -EINVAL;
	memcpy(host, text, (size_t)(colon - text));
	host[colon - text] = '\0';
	port = strtoul(colon + 1, NULL, 10);
	if (!port || port > 65535 || inet_pton(AF_INET, host, &sa->sin_addr) != 1)
		return -EINVAL;
	sa->sin_port = htons((uint16_t)port);
	return 0;
}

static int load_config(struct ctl *c, const char *path, char **sets, int nsets)
{
	char err[512];

	if (fq_cfg_load_all(&ctl_schema, &c->cfg, path, sets, nsets, err, sizeof(err)) < 0) {
		fprintf(stderr, "fabriciq-controller: %s\n", err);
		return -EINVAL;
	}
	if (c->cfg.node_keys_required && !c->cfg.bind_nodes) {
		fprintf(stderr,
			"fabriciq-controller: controller.node_keys_required needs controller.bind_nodes: "
			"the keys are node bindings\n");
		return -EINVAL;
	}
	return 0;
}

static int start_modules(struct ctl *c)
{
	struct fq_ingest_config ic = {
	    .conninfo = c->cfg.db,
	    .spool_dir = c->cfg.spool_dir,
	    .spool_max = c->cfg.spool_max,
	    .max_batch_frames = (size_t)c->cfg.flush_frames,
	    .backoff_min_ns = 100000000,
	    .backoff_max_ns = (int64_t)c->cfg.db_backoff_max,
	    .migrate = c->cfg.db_migrate,
	    .connect_timeout_s = (int)(c->cfg.db_connect_timeout / 1000000000),
	    .statement_timeout_ms = (int)(c->cfg.db_statement_timeout / 1000000),
	};
	static const struct fq_ingest_ops iops = {ctl_on_durable, ctl_on_dropped};
	struct fq_detector_config dc;
	struct sockaddr_in sa;
	struct timeval ftv = tv_of(c->cfg.flush_interval), rtv = tv_of(c->cfg.report_interval);
	char err[512];

	fq_detector_config_defaults(&dc);
	dc.flap_threshold = (unsigned)c->cfg.flap_threshold;
	dc.flap_window_ns = (int64_t)c->cfg.flap_window;
	dc.delay_threshold_ns = (int64_t)c->cfg.delay_threshold;
	dc.delay_baseline_factor = c->cfg.delay_baseline_factor;
	dc.delay_floor_ns = (int64_t)c->cfg.delay_floor;
	dc.delay_min_excess_ns = (int64_t)c->cfg.delay_min_excess;
	dc.delay_persist_windows = (unsigned)c->cfg.delay_persist;
	dc.lane_outlier_factor = c->cfg.lane_outlier_factor;
	dc.lane_outlier_persist = (unsigned)c->cfg.lane_outlier_persist;
	dc.inband_factor = c->cfg.inband_factor;
	dc.inband_floor_ns = (int64_t)c->cfg.inband_floor;
	dc.slow_nic_share = c->cfg.slow_nic_share;
	dc.slow_nic_min_paths = (unsigned)c->cfg.slow_nic_min_paths;
	dc.resume_after_ns = (int64_t)c->cfg.resume_after;
	dc.quiet_close_ns = (int64_t)c->cfg.quiet_close;
	dc.incident_gap_ns = (int64_t)c->cfg.incident_gap;
	dc.incident_settle_ns = (int64_t)c->cfg.incident_settle;
	dc.stall_wait_ns = (int64_t)c->cfg.stall_wait;
	dc.peer_slow_factor = c->cfg.peer_slow_factor;
	dc.peer_slow_persist = (unsigned)c->cfg.peer_slow_persist;
	dc.peer_slow_min_bytes = c->cfg.peer_slow_min_bytes;
	dc.collision_advice = c->cfg.collision_advice;
	dc.collision_factor = c->cfg.collision_factor;
	dc.advice_lifetime_ns = (int64_t)c->cfg.advice_lifetime;
	if (!(c->det = fq_detector_create(&dc)) || !(c->metrics = fq_metrics_create()) ||
	    !(c->live = fq_steplive_create()) || ctl_rates_create(c) < 0) {
		fq_error("cannot create the detector");
		return -ENOMEM;
	}
	if (c->cfg.bind_nodes) {
		char path[4096];

		if (*c->cfg.node_bindings)
			snprintf(path, sizeof(path), "%s", c->cfg.node_bindings);
		else
			snprintf(path, sizeof(path), "%s/node-addresses", c->cfg.spool_dir);
		if (fq_nodebind_open(path, &c->bindings, err, sizeof(err)) < 0) {
			fq_error("controller.node_bindings: %s", err);
			return -EIO;
		}
		fq_info("node bindings %s: %zu nodes", path, fq_nodebind_count(c->bindings));
	}
	if (fq_ingest_create(&ic, &iops, c, &c->ingest, err, sizeof(err)) < 0) {
		fq_error("%s", err);
		return -EIO;
	}
	if (*c->cfg.http_listen) {
		struct fq_http_config hc = {
		    .listen = c->cfg.http_listen,
		    .conninfo = c->cfg.db,
		    .munge_socket = *c->cfg.munge_socket ? c->cfg.munge_socket : NULL,
		    .admin_uids = c->cfg.api_admin_uids,
		    .topology_file = c->cfg.topology_file,
		};
		int rc = fq_http_start(&hc, &c->http, err, sizeof(err));

		if (rc < 0) {
			fq_error("%s", err);
			return rc;
		}
	}
	if (parse_listen(c->cfg.listen, &sa) < 0) {
		fq_error("controller.listen '%s': expected IPV4:PORT", c->cfg.listen);
		return -EINVAL;
	}
	c->listener =
	    evconnlistener_new_bind(c->base, ctl_on_accept, c, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE,
				    1024, (struct sockaddr *)&sa, sizeof(sa));
	if (!c->listener) {
		fq_error("controller.listen %s: %s", c->cfg.listen, strerror(errno));
		return -EADDRINUSE;
	}
	c->flush_ev = event_new(c->base, -1, EV_PERSIST, on_flush, c);
	c->flush_now_ev = event_new(c->base, -1, 0, on_flush, c);
	c->ingest_ev = event_new(c->base, fq_ingest_fd(c->ingest), EV_READ | EV_PERSIST, on_ingest_done, c);
	c->report_ev = event_new(c->base, -1, EV_PERSIST, on_report, c);
	c->sigterm_ev = evsignal_new(c->base, SIGTERM, on_signal, c);
	c->sigint_ev = evsignal_new(c->base, SIGINT, on_signal, c);
	c->sighup_ev = evsignal_new(c->base, SIGHUP, on_sighup, c);
	if (!c->flush_ev || !c->flush_now_ev || !c->ingest_ev || !c->report_ev || !c->sigterm_ev ||
	    !c->sigint_ev || !c->sighup_ev || event_add(c->flush_ev, &ftv) < 0 ||
	    event_add(c->ingest_ev, NULL) < 0 || event_add(c->report_ev, &rtv) < 0 ||
	    event_add(c->sigterm_ev, NULL) < 0 || event_add(c->sigint_ev, NULL) < 0 ||
	    event_add(c->sighup_ev, NULL) < 0) {
		fq_error("cannot set up timers and signals");
		return -ENOMEM;
	}
	return 0;
}

static void close_sessions(struct fq_strmap_entry *e, void *arg)
{
	struct agent *a = e->value;

	(void)arg;
	if (a->sess)
		fq_session_close(a->sess, NULL);
}

/* --new-key FILE: a new secret key in FILE, its public key on stdout. */
static int new_key(const char *path)
{
	char err[512], text[FQ_SIGN_PUBLIC_TEXT];

	if (fq_signkey_new(path, text, sizeof(text), err, sizeof(err)) < 0) {
		fprintf(stderr, "fabriciq-controller: %s\n", err);
		return 1;
	}
	printf("%s\n", text);
	fprintf(stderr,
		"fabriciq-controller: new key in %s (controller.key = %s); give the agents its public key:\n"
		"  agent.controller_key = %s\n",
		path, path, text);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"set", required_argument, NULL, 's'},
	    {"dump-config", no_argument, NULL, 'd'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {"new-key", required_argument, NULL, 'k'},
	    {NULL, 0, NULL, 0},
	};
	struct ctl c = {0};
	const char *config = FQ_CONFIG_PATH;
	char *sets[64];
	int nsets = 0, dump = 0, opt, rc = 2;

	while ((opt = getopt_long(argc, argv, "c:s:hV", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			config = optarg;
			break;
		case 's':
			if (nsets == 64) {
				fprintf(stderr, "fabriciq-controller: too many --set\n");
				return 2;
			}
			sets[nsets++] = optarg;
			break;
		case 'd':
			dump = 1;
			break;
		case 'k':
			return new_key(optarg);
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("fabriciq-controller %s (protocol %d)\n", PACKAGE_VERSION,
			       FQ_PROTOCOL_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "fabriciq-controller: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	fq_log_init("fabriciq-controller", FQ_LOG_INFO, FQ_LOG_STDERR);
	if (load_config(&c, config, sets, nsets) < 0)
		goto out;
	if (dump) {
		fq_cfg_dump(&ctl_schema, &c.cfg, stdout);
		rc = 0;
		goto out;
	}
	fq_log_set_level((enum fq_log_level)c.cfg.log_level);
	signal(SIGPIPE, SIG_IGN);

	/* modules, in order */
	rc = 1;
	c.scfg = (struct fq_session_config){
	    .agent_uid = (uid_t)c.cfg.agent_uid,
	    .max_frame = (size_t)c.cfg.max_frame,
	    .auth_timeout_ns = (int64_t)c.cfg.auth_timeout,
	    .max_output = 64u << 20,
	};
	if (*c.cfg.key) {
		char err[512], text[FQ_SIGN_PUBLIC_TEXT];

		if (fq_signkey_load(c.cfg.key, &c.key, err, sizeof(err)) < 0) {
			fq_error("controller.key: %s", err);
			goto out;
		}
		c.scfg.key = &c.key;
		fq_signkey_public_text(c.key.public, text, sizeof(text));
		fq_info("controller.key: answers to agents are signed by %s", text);
	}
	if (!(c.base = event_base_new())) {
		fq_error("cannot create the event loop");
		goto out;
	}
	if (!(c.scfg.authq = fq_authq_create(c.base, *c.cfg.munge_socket ? c.cfg.munge_socket : NULL,
					     (size_t)c.cfg.auth_queue))) {
		fq_error("cannot start the credential checker: %s", strerror(errno));
		goto out;
	}
	if (start_modules(&c) < 0)
		goto out;
	fq_info("listening on %s for agents%s%s, version %s", c.cfg.listen, c.http ? ", HTTP on " : "",
		c.http ? c.cfg.http_listen : "", PACKAGE_VERSION);
	if (fq_notify_ready(c.base, "serving agents") < 0)
		goto out;

	event_base_dispatch(c.base);
	fq_notify_stopping();

	/* SIGTERM: stop taking frames, make what was accepted durable, ack it. */
	evconnlistener_disable(c.listener);
	fq_ingest_finish(c.ingest, fq_realtime_ns(), 5000000000ll);
	event_base_loop(c.base, EVLOOP_NONBLOCK); /* push the last acks out */
	rc = 0;

out: /* finalise in reverse */
	fq_strmap_each(&c.agents, close_sessions, NULL);
	if (c.base)
		event_base_loop(c.base, EVLOOP_NONBLOCK);
	if (c.sigint_ev)
		event_free(c.sigint_ev);
	if (c.sighup_ev)
		event_free(c.sighup_ev);
	fq_nodebind_close(c.bindings);
	if (c.sigterm_ev)
		event_free(c.sigterm_ev);
	if (c.report_ev)
		event_free(c.report_ev);
	if (c.flush_ev)
		event_free(c.flush_ev);
	if (c.ingest_ev)
		event_free(c.ingest_ev);
	if (c.flush_now_ev)
		event_free(c.flush_now_ev);
	if (c.listener)
		evconnlistener_free(c.listener);
	fq_http_stop(c.http);
	fq_ingest_destroy(c.ingest);
	fq_metrics_destroy(c.metrics);
	fq_steplive_destroy(c.live);
	fq_rates_destroy(c.rates);
	if (c.det)
		fq_detector_destroy(c.det);
	fq_authq_destroy(c.scfg.authq);
	fq_strmap_clear(&c.unauth, NULL);
	fq_strmap_clear(&c.agents, ctl_agent_free);
	fq_strmap_clear(&c.anomaly, free);
	fq_strmap_clear(&c.drained, free);
	fq_strmap_clear(&c.routes, free);
	fq_strmap_clear(&c.floors, free);
	ctl_lane_routes_free(&c);
	if (c.base)
		event_base_free(c.base);
	fq_cfg_free(&ctl_schema, &c.cfg);
	return rc;
}
