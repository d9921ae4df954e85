/*
 * fabriciq-controller: the controller daemon. Authenticates agents (munge),
 * ingests their frames into PostgreSQL (controller/ingest.c, spooling to
 * disk while the database is away), solves the mesh clock each report
 * window and sends every agent its correction, assigns probe peers, runs
 * the anomaly detector and serves /metrics and the JSON API.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/config.h"
#include "common/frame.h"
#include "common/log.h"
#include "common/notify.h"
#include "controller/authq.h"
#include "controller/detector.h"
#include "controller/http.h"
#include "controller/ingest.h"
#include "controller/mesh.h"
#include "controller/metrics.h"
#include "controller/nodebind.h"
#include "controller/peers.h"
#include "controller/session.h"
#include "controller/steplive.h"
#include "controller/strmap.h"
#include "db/api_query.h"
#include "db/db.h"

struct ctl_config {
	char *listen, *http_listen, *api_admin_uids, *db, *munge_socket, *spool_dir, *reference_node,
	    *node_bindings;
	uint64_t max_connections, max_unauthenticated_per_source, auth_queue;
	uint64_t agent_uid, max_frame, auth_timeout, flush_interval, flush_frames, spool_max, db_backoff_max;
	uint64_t db_connect_timeout, db_statement_timeout;
	uint64_t report_interval, correction_valid, peers_per_nic, probe_port, peer_seed;
	bool db_migrate, bind_nodes;
	/* detector thresholds (controller/detector.h) */
	uint64_t flap_threshold, flap_window, delay_threshold, delay_floor, delay_min_excess, inband_floor,
	    slow_nic_min_paths;
	uint64_t delay_persist, lane_outlier_persist;
	uint64_t resume_after, quiet_close, incident_gap, incident_settle, step_idle;
	double delay_baseline_factor, lane_outlier_factor, inband_factor, slow_nic_share;
	bool collision_advice;
	double collision_factor;
	uint64_t advice_lifetime;
	int log_level;
};

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
	"path_delay: owd p99 above this ..."),
    OPT("delay_baseline_factor", FQ_CFG_DOUBLE, delay_baseline_factor, "4", 1, 1e6,
	"... or above the path's own baseline by this factor"),
    OPT("delay_floor", FQ_CFG_DURATION, delay_floor, "50us", 0, 60e9, "never flag a delay below this"),
    OPT("delay_min_excess", FQ_CFG_DURATION, delay_min_excess, "300us", 0, 60e9,
	"... nor a rise over the path's baseline of this or less"),
    OPT("delay_persist", FQ_CFG_UINT, delay_persist, "3", 1, 1000,
	"... for this many report windows in a row (one window's p99 is a few dozen probes)"),
    OPT("lane_outlier_factor", FQ_CFG_DOUBLE, lane_outlier_factor, "5", 1, 1e6,
	"lane_outlier: lane p99 above this factor times the step's median lane p99 ..."),
    OPT("lane_outlier_persist", FQ_CFG_UINT, lane_outlier_persist, "3", 1, 1000,
	"... in this many of the lane's report intervals in a row (one interval's p99 is a CPU hiccup away)"),
    OPT("inband_factor", FQ_CFG_DOUBLE, inband_factor, "5", 1, 1e6,
	"inband_mismatch: a lane's minimum delay above this factor times the probes' p50 ..."),
    OPT("inband_floor", FQ_CFG_DURATION, inband_floor, "300us", 0, 60e9, "... and more than this above it"),
    OPT("slow_nic_share", FQ_CFG_DOUBLE, slow_nic_share, "0.8", 0.01, 1,
	"slow_sender/receiver: this share of a NIC's paths elevated ..."),
    OPT("slow_nic_min_paths", FQ_CFG_UINT, slow_nic_min_paths, "3", 1, 1e6, "... out of at least this many"),
    OPT("collision_advice", FQ_CFG_BOOL, collision_advice, "yes", 0, 0,
	"collision: when lanes of two or more jobs are delayed on a shared NIC, advise one job to move "
	"(through its nodes' agents and path pages)"),
    OPT("collision_factor", FQ_CFG_DOUBLE, collision_factor, "3", 1, 1e6,
	"... a lane counts when its p99 is above this factor times its NIC pair's probe delay"),
    OPT("advice_lifetime", FQ_CFG_DURATION, advice_lifetime, "30s", 1e9, 3600e9,
	"a MOVE advice holds this long unless the collision renews it"),
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
    {"log_level", FQ_CFG_ENUM, offsetof(struct ctl_config, log_level), "info", 0, 0, log_levels,
     "error, warn, info or debug"},
    {NULL, 0, 0, NULL, 0, 0, NULL, NULL},
};
#undef OPT

static const struct fq_cfg_schema ctl_schema = {"controller", ctl_options};

/* What the controller remembers of one agent (kept across reconnects). */
struct agent {
	char *node;
	struct fq_session *sess; /* NULL while disconnected */
	Fabriciq__Envelope *hello;
	Fabriciq__ClockEstimate *est; /* the latest ClockReport's estimates */
	size_t nest;
	int64_t clock_ns; /* when they arrived */
	/* the agent's global - local: for the reference, its epoch, which
	 * every correction carries so agents map onto the same timeline */
	int64_t applied_offset_ns;
};

struct ctl {
	struct ctl_config cfg;
	struct event_base *base;
	struct evconnlistener *listener;
	struct event *flush_ev, *flush_now_ev, *ingest_ev, *report_ev, *sigterm_ev, *sigint_ev, *sighup_ev;
	struct fq_nodebind *bindings; /* NULL: controller.bind_nodes off */
	struct fq_ingest *ingest;
	struct fq_http *http;
	struct fq_detector *det;
	struct fq_metrics *metrics;
	struct fq_steplive *live; /* the job steps metrics and detector hold state for */
	struct fq_session_config scfg;
	struct fq_session_stats sstats;
	struct fq_strmap unauth;  /* source address -> sessions not yet past AgentHello (as uintptr_t) */
	struct fq_strmap agents;  /* node -> struct agent */
	struct fq_strmap anomaly; /* detector handle -> row id (as strings: small) */
	struct fq_strmap drained; /* node -> reason of the last applied drain ("" resumed) */
	int64_t hints_polled_ns;
	bool peers_dirty;
	uint64_t clock_epoch, peers_epoch;
	uint64_t anomalies_opened, hints, det_write_failures;
	double last_rms_ns;
	int exit_code;
};

static int64_t now_real(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static struct timeval tv_of(uint64_t ns)
{
	struct timeval tv = {(time_t)(ns / 1000000000), (suseconds_t)(ns % 1000000000 / 1000)};
	return tv;
}

/* ---- agents ---------------------------------------------------------- */

static struct agent *agent_get(struct ctl *c, const char *node)
{
	struct fq_strmap_entry *e = fq_strmap_upsert(&c->agents, node);
	struct agent *a;

	if (!e)
		return NULL;
	if (e->value)
		return e->value;
	if (!(a = calloc(1, sizeof(*a))) || !(a->node = strdup(node))) {
		free(a);
		fq_strmap_remove(&c->agents, node);
		return NULL;
	}
	e->value = a;
	return a;
}

static void agent_free(void *v)
{
	struct agent *a = v;

	if (!a)
		return;
	if (a->hello)
		fq_frame_free(a->hello);
	for (size_t i = 0; i < a->nest; i++)
		free(a->est[i].peer_node);
	free(a->est);
	free(a->node);
	free(a);
}

/* The NIC sets differ (order included: agents list them stably). */
static bool nics_changed(const Fabriciq__Envelope *old, const Fabriciq__Envelope *new)
{
	if (!old || old->hello->n_nics != new->hello->n_nics)
		return true;
	for (size_t i = 0; i < new->hello->n_nics; i++) {
		const Fabriciq__Nic *a = old->hello->nics[i], *b = new->hello->nics[i];
		if (strcmp(a->name, b->name) || strcmp(a->address, b->address) || a->rail != b->rail ||
		    a->front_end != b->front_end)
			return true;
	}
	return false;
}

static void keep_clock(struct agent *a, const Fabriciq__ClockReport *r, int64_t now)
{
	Fabriciq__ClockEstimate *est = calloc(r->n_estimates ? r->n_estimates : 1, sizeof(*est));
	size_t n = 0;

	if (!est)
		return;
	for (size_t i = 0; i < r->n_estimates; i++) {
		fabriciq__clock_estimate__init(&est[n]);
		est[n] = *r->estimates[i];
		est[n].base.unknown_fields = NULL;
		est[n].base.n_unknown_fields = 0;
		if (!(est[n].peer_node = strdup(r->estimates[i]->peer_node)))
			continue;
		n++;
	}
	for (size_t i = 0; i < a->nest; i++)
		free(a->est[i].peer_node);
	free(a->est);
	a->est = est;
	a->nest = n;
	a->clock_ns = now;
	a->applied_offset_ns = r->applied_offset_ns;
}

/* ---- ingest callbacks ------------------------------------------------ */

static void on_durable(void *arg, const char *node, uint64_t seq)
{
	struct ctl *c = arg;
	struct agent *a = fq_strmap_get(&c->agents, node);

	if (a && a->sess)
		fq_session_ack(a->sess, seq);
}

static void on_dropped(void *arg, const char *node)
{
	struct ctl *c = arg;
	struct agent *a = fq_strmap_get(&c->agents, node);

	if (a && a->sess)
		fq_session_close(a->sess, "its frames could not be stored or spooled; it will resend them");
}

/* ---- session callbacks ----------------------------------------------- */

static bool is_out_peer(const struct fq_peer_plan *plan, size_t i, uint32_t j)
{
	for (size_t k = plan->first[i]; k < plan->first[i + 1]; k++)
		if (plan->peers[k] == j)
			return true;
	return false;
}

static void send_peers(struct ctl *c);

static void unauth_release(struct ctl *c, const struct fq_session *s);

/* true (why set) if node is bound to another address than the session's. */
static bool refuse_unbound(struct ctl *c, struct fq_session *s, const char *node, char *why, size_t whylen)
{
	char addr[96];
	const char *peer = fq_session_peer(s), *colon = strrchr(peer, ':'), *bound = NULL;
	int rc;

	snprintf(addr, sizeof(addr), "%.*s", colon ? (int)(colon - peer) : (int)strlen(peer), peer);
	rc = fq_nodebind_check(c->bindings, node, addr, &bound);
	if (rc == 1)
		fq_info("node %s is bound to %s (controller.node_bindings)", node, addr);
	if (rc != -EPERM && rc != -ENOMEM)
		return false;
	c->sstats.node_refused++;
	snprintf(why, whylen, "node %s belongs to %s, not %s (controller.node_bindings)", node,
		 rc == -EPERM ? bound : "?", addr);
	fq_log_rl(FQ_LOG_WARN, "agent %s: AgentHello for %s refused: %s", peer, node, why);
	return true;
}

static int on_hello(void *arg, struct fq_session *s, Fabriciq__Envelope *env, char *why, size_t whylen)
{
	struct ctl *c = arg;
	const char *node = env->hello->node;
	struct agent *a = agent_get(c, node);
	Fabriciq__Envelope *copy;
	int rc;

	unauth_release(c, s);
	if (!a) {
		fq_frame_free(env);
		return -ENOMEM;
	}
	/* One live session per node: a second claim of a connected node is
	 * refused, not a replacement (any root credential may name any
	 * node). A dead session goes away by itself (EOF, or TCP keepalive
	 * on a vanished host), after which the agent's retry gets in. */
	if (a->sess && a->sess != s) {
		snprintf(why, whylen, "node %s is already connected from %s", node, fq_session_peer(a->sess));
		fq_warn("agent %s: AgentHello for %s refused: already connected from %s", fq_session_peer(s),
			node, fq_session_peer(a->sess));
		fq_frame_free(env);
		return -EBUSY;
	}
	if (c->bindings && refuse_unbound(c, s, node, why, whylen)) {
		fq_frame_free(env);
		return -EPERM;
	}
	a->sess = s;
	fq_session_set_user(s, a);
	fq_info("agent %s: node %s (%s, %zu NICs, next seq %llu) connected", fq_session_peer(s), node,
		env->hello->agent_version, env->hello->n_nics, (unsigned long long)env->hello->next_seq);
	/* Keep our own copy of the hello (ingest owns env from here). */
	{
		size_t len = fabriciq__envelope__get_packed_size(env);
		uint8_t *buf = malloc(len ? len : 1);
		copy = NULL;
		if (buf) {
			fabriciq__envelope__pack(env, buf);
			fq_frame_unpack(buf, len, &copy);
			free(buf);
		}
	}
	if (copy) {
		if (nics_changed(a->hello, copy))
			c->peers_dirty = true;
		if (a->hello)
			fq_frame_free(a->hello);
		a->hello = copy;
	}
	if ((rc = fq_ingest_hello(c->ingest, env, now_real())) < 0)
		return rc;
	if (!c->peers_dirty && c->peers_epoch)
		c->peers_dirty = true; /* a reconnecting agent gets its peers again */
	return 0;
}

static void feed_detector(struct ctl *c, const char *node, const Fabriciq__Envelope *env)
{
	if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_PROBE) {
		const Fabriciq__ProbeReport *p = env->probe;
		struct fq_det_probe d = {node,
					 p->local_nic,
					 p->remote_node,
					 p->remote_nic,
					 p->window_start_ns,
					 p->window_end_ns,
					 p->sent,
					 p->answered,
					 p->lost,
					 p->owd_fwd_p50_ns,
					 p->owd_fwd_p99_ns,
					 p->owd_rev_p50_ns,
					 p->owd_rev_p99_ns,
					 p->rtt_p50_ns,
					 p->path_up};
		fq_detector_probe(c->det, &d);
	} else if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_LANE) {
		const Fabriciq__LaneReport *l = env->lane;
		struct fq_det_lane d = {
		    .job_id = l->job_id,
		    .step_id = l->step_id,
		    .src_rank = l->src_rank,
		    .dst_rank = l->dst_rank,
		    .lane = l->lane,
		    .src_node = l->is_send ? node : l->remote_node,
		    .src_nic = l->is_send ? l->local_nic : l->remote_nic,
		    .dst_node = l->is_send ? l->remote_node : node,
		    .dst_nic = l->is_send ? l->remote_nic : l->local_nic,
		    .start_ns = l->interval_start_ns,
		    .end_ns = l->interval_end_ns,
		    .bytes = l->bytes,
		    .owd_p50_ns = l->is_send ? 0 : l->owd_p50_ns,
		    .owd_p99_ns = l->is_send ? 0 : l->owd_p99_ns,
		    .owd_min_ns = l->is_send ? 0 : l->owd_min_ns,
		    .tcp_min_rtt_ns = (int64_t)l->tcp_min_rtt_us * 1000,
		    .synchronised = l->synchronised,
		};
		fq_detector_lane(c->det, &d);
	} else if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_LINK) {
		const Fabriciq__LinkEvent *l = env->link;
		struct fq_det_link d = {node,
					l->local_nic,
					l->remote_node,
					l->remote_nic,
					l->state == FABRICIQ__LINK_EVENT__STATE__UP,
					l->nic_level,
					l->time_ns};
		fq_detector_link(c->det, &d);
	} else if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_FAILOVER) {
		const Fabriciq__FailoverEvent *f = env->failover;
		struct fq_det_lane_event d = {node,       f->local_nic, f->remote_nic, f->cause,  f->job_id,
					      f->step_id, f->src_rank,  f->dst_rank,   f->time_ns};
		fq_detector_lane_event(c->det, &d);
	}
}

/* A job step is gone (steplive.h): what the controller held of it goes. */
static void drop_step(struct ctl *c, const struct fq_step_id *id, bool idle)
{
	fq_metrics_drop_step(c->metrics, id->job, id->step, idle);
	fq_detector_step_end(c->det, id->job, id->step);
}

/* Steps nothing came of for controller.step_idle (each report window). */
static void expire_steps(struct ctl *c, int64_t now)
{
	struct fq_step_id gone[256];
	size_t n;

	do {
		n = fq_steplive_expire(c->live, now, (int64_t)c->cfg.step_idle, gone, 256);
		for (size_t i = 0; i < n; i++)
			drop_step(c, &gone[i], true);
	} while (n == 256);
}

static void on_frame(void *arg, struct fq_session *s, Fabriciq__Envelope *env)
{
	struct ctl *c = arg;
	struct agent *a = fq_session_user(s);
	struct fq_step_id gone;
	uint64_t ack = 0;
	int64_t now = now_real();
	int rc;

	if (!a) {
		fq_frame_free(env);
		return;
	}
	rc = fq_ingest_frame(c->ingest, a->node, env, now, &ack);
	if (rc == 1) {
		/* Accepted (not a replay): env stays valid until the next flush. */
		feed_detector(c, a->node, env);
		fq_metrics_frame(c->metrics, a->node, env);
		if (fq_steplive_frame(c->live, a->node, env, now, &gone))
			drop_step(c, &gone, false);
		if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_CLOCK)
			keep_clock(a, env->clock, now);
		/* Not the periodic flush_ev itself: libevent re-arms an
		 * activated EV_PERSIST timer one interval after its pending
		 * deadline, so each activation pushed the next timed flush
		 * (the batch's tail) another flush_interval away. */
		if (fq_ingest_should_flush(c->ingest))
			event_active(c->flush_now_ev, EV_TIMEOUT, 0);
	} else if (rc == 0 && ack) {
		fq_session_ack(s, ack);
	} else if (rc < 0) {
		c->sstats.frames_unexpected++;
		fq_log_rl(FQ_LOG_WARN, "agent %s: frame refused: %s", a->node,
			  rc == -EINVAL ? "no payload the controller stores, or seq 0" : strerror(-rc));
	}
}

static void on_closed(void *arg, struct fq_session *s)
{
	struct ctl *c = arg;
	struct agent *a = fq_session_user(s);

	if (!fq_session_node(s))
		unauth_release(c, s);
	if (a && a->sess == s)
		a->sess = NULL;
}

/* The source address of a session's peer ("IP:PORT"). */
static void source_of(const char *peer, char *out, size_t len)
{
	const char *colon = strrchr(peer, ':');
	size_t n = colon ? (size_t)(colon - peer) : strlen(peer);

	snprintf(out, len, "%.*s", (int)n, peer);
}

static void unauth_release_addr(struct ctl *c, const char *src)
{
	struct fq_strmap_entry *e = fq_strmap_upsert(&c->unauth, src);

	if (!e)
		return;
	if ((uintptr_t)e->value <= 1)
		fq_strmap_remove(&c->unauth, src);
	else
		e->value = (void *)((uintptr_t)e->value - 1);
}

/* One session of this source got past AgentHello, or closed before. */
static void unauth_release(struct ctl *c, const struct fq_session *s)
{
	char src[96];

	source_of(fq_session_peer(s), src, sizeof(src));
	unauth_release_addr(c, src);
}

/* Keepalive on agent connections: a session whose host vanished (no FIN)
 * closes within about 10 + 3 * 5 s, so its node can connect again. */
static void set_keepalive(int fd)
{
	int one = 1, idle = 10, intvl = 5, cnt = 3;

	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen, void *arg)
{
	struct ctl *c = arg;
	static const struct fq_session_ops ops = {on_hello, on_frame, on_closed};
	char addr[64] = "?", peer[96];
	struct fq_strmap_entry *e;

	(void)l;
	(void)salen;
	if (sa->sa_family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &in->sin_addr, addr, sizeof(addr));
		snprintf(peer, sizeof(peer), "%s:%u", addr, ntohs(in->sin_port));
	} else {
		snprintf(peer, sizeof(peer), "family-%d", sa->sa_family);
	}
	/* The caps, before anything is allocated or sent for the connection. */
	e = fq_strmap_upsert(&c->unauth, addr);
	if (c->sstats.open >= c->cfg.max_connections || !e ||
	    (uintptr_t)e->value >= c->cfg.max_unauthenticated_per_source) {
		c->sstats.refused++;
		fq_log_rl(FQ_LOG_WARN, "agent %s: connection refused: %s", peer,
			  c->sstats.open >= c->cfg.max_connections ? "controller.max_connections reached"
			  : e ? "controller.max_unauthenticated_per_source reached from this address"
			      : "out of memory");
		if (e && !e->value)
			fq_strmap_remove(&c->unauth, addr);
		evutil_closesocket(fd);
		return;
	}
	set_keepalive(fd);
	e->value = (void *)((uintptr_t)e->value + 1);
	if (!fq_session_create(c->base, fd, peer, &c->scfg, &ops, c, &c->sstats))
		unauth_release_addr(c, addr);
}

/* ---- the clock solve --------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct name_list {
	char **v;
	size_t n, cap;
};

static void collect_names(struct fq_strmap_entry *e, void *arg)
{
	struct name_list *l = arg;

	if (l->n < l->cap)
		l->v[l->n++] = e->key;
}

static long find_name(char **v, size_t n, const char *name)
{
	char **p = bsearch(&name, v, n, sizeof(*v), cmp_str);
	return p ? p - v : -1;
}

static void send_correction(struct ctl *c, struct agent *a, const struct fq_mesh_solution *sol, uint32_t i,
			    const char *ref, int64_t now)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__ClockCorrection cc = FABRICIQ__CLOCK_CORRECTION__INIT;

	const struct agent *ra = fq_strmap_get(&c->agents, ref);

	cc.reference_node = (char *)ref;
	cc.reference_epoch_ns = ra ? ra->applied_offset_ns : 0;
	cc.epoch = c->clock_epoch;
	cc.offset_ns = (int64_t)llround(sol->offset_ns[i]);
	cc.drift_ppb = sol->drift_ppb[i];
	cc.error_bound_ns = isfinite(sol->error_ns[i]) ? (int64_t)ceil(sol->error_ns[i]) : 0;
	cc.valid_until_ns = now + (int64_t)c->cfg.correction_valid;
	env.version = FQ_PROTOCOL_VERSION;
	env.sent_ns = now;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_CORRECTION;
	env.correction = &cc;
	fq_session_send(a->sess, &env);
	fq_metrics_clock(c->metrics, a->node, sol->offset_ns[i], sol->error_ns[i]);
}

/* Every agent's latest estimates are edges; the solve's offsets go back to
 * every connected agent as its correction. Nodes are indexed in byte order
 * of their names (also the default reference: the first one). */
static void clock_round(struct ctl *c, int64_t now)
{
	struct name_list names = {0};
	struct fq_mesh_edge *edges = NULL;
	struct fq_mesh_solution sol = {0};
	size_t nedges = 0, cap = 0, skipped = 0;
	long ref;
	const char *refname;

	/* Hosts: every agent, and every peer an estimate names. */
	names.cap = c->agents.count;
	for (size_t b = 0; b < c->agents.nbuckets; b++)
		for (struct fq_strmap_entry *e = c->agents.buckets[b]; e; e = e->next)
			names.cap += ((struct agent *)e->value)->nest;
	if (!names.cap || !(names.v = malloc(names.cap * sizeof(char *))))
		return;
	fq_strmap_each(&c->agents, collect_names, &names);
	for (size_t b = 0; b < c->agents.nbuckets; b++)
		for (struct fq_strmap_entry *e = c->agents.buckets[b]; e; e = e->next) {
			struct agent *a = e->value;
			for (size_t i = 0; i < a->nest; i++)
				names.v[names.n++] = a->est[i].peer_node;
		}
	qsort(names.v, names.n, sizeof(char *), cmp_str);
	{
		size_t u = 0;
		for (size_t i = 0; i < names.n; i++)
			if (!u || strcmp(names.v[u - 1], names.v[i]))
				names.v[u++] = names.v[i];
		names.n = u;
	}
	refname = c->cfg.reference_node && *c->cfg.reference_node ? c->cfg.reference_node : names.v[0];
	ref = find_name(names.v, names.n, refname);
	for (size_t b = 0; b < c->agents.nbuckets; b++)
		for (struct fq_strmap_entry *e = c->agents.buckets[b]; e; e = e->next) {
			struct agent *a = e->value;
			long ai = find_name(names.v, names.n, a->node);
			/* Estimates older than a correction's validity are stale. */
			if (now - a->clock_ns > (int64_t)c->cfg.correction_valid)
				continue;
			for (size_t i = 0; i < a->nest; i++) {
				long bi = find_name(names.v, names.n, a->est[i].peer_node);
				if (ai < 0 || bi < 0 || ai == bi)
					continue;
				if (nedges == cap) {
					cap = cap ? cap * 2 : 1024;
					struct fq_mesh_edge *n = realloc(edges, cap * sizeof(*n));
					if (!n)
						goto out;
					edges = n;
				}
				edges[nedges++] = (struct fq_mesh_edge){
				    (uint32_t)ai, (uint32_t)bi, (double)a->est[i].offset_ns,
				    a->est[i].drift_ppb,
				    (double)(a->est[i].error_bound_ns > 0 ? a->est[i].error_bound_ns : 1)};
			}
		}
	if (ref < 0 || !nedges)
		goto out;
	if (fq_mesh_solve((uint32_t)names.n, edges, nedges, (uint32_t)ref, NULL, &sol, &skipped) < 0) {
		fq_log_rl(FQ_LOG_ERROR, "clock solve over %zu nodes, %zu edges failed", names.n, nedges);
		goto out;
	}
	c->clock_epoch++;
	c->last_rms_ns = sol.rms_residual_ns;
	fq_metrics_clock_solve(c->metrics, sol.n_solved, sol.rms_residual_ns, sol.max_residual_ns);
	for (size_t b = 0; b < c->agents.nbuckets; b++)
		for (struct fq_strmap_entry *e = c->agents.buckets[b]; e; e = e->next) {
			struct agent *a = e->value;
			long i = find_name(names.v, names.n, a->node);
			if (a->sess && i >= 0 && sol.solved[i])
				send_correction(c, a, &sol, (uint32_t)i, names.v[ref], now);
		}
	fq_mesh_solution_free(&sol);
out:
	free(edges);
	free(names.v);
}

/* ---- probe peers ------------------------------------------------------- */

struct nic_ref {
	struct agent *agent;
	const Fabriciq__Nic *nic;
};

static void send_peers(struct ctl *c)
{
	struct fq_peer_nic *nics = NULL;
	struct nic_ref *refs = NULL;
	struct fq_peer_plan plan = {0};
	size_t n = 0, cap = 0, *in_first = NULL;
	uint32_t *in_peers = NULL;

	for (size_t b = 0; b < c->agents.nbuckets; b++)
		for (struct fq_strmap_entry *e = c->agents.buckets[b]; e; e = e->next) {
			struct agent *a = e->value;
			if (a->hello)
				cap += a->hello->hello->n_nics;
		}
	if (!cap || !(nics = calloc(cap, sizeof(*nics))) || !(refs = calloc(cap, sizeof(*refs))))
		goto out;
	for (size_t b = 0; b < c->agents.nbuckets; b++)
		for (struct fq_strmap_entry *e = c->agents.buckets[b]; e; e = e->next) {
			struct agent *a = e->value;
			for (size_t i = 0; a->hello && i < a->hello->hello->n_nics; i++) {
				const Fabriciq__Nic *x = a->hello->hello->nics[i];
				if (x->front_end || !*x->address)
					continue;
				nics[n] = (struct fq_peer_nic){a->node, x->name, x->address, x->rail};
				refs[n++] = (struct nic_ref){a, x};
			}
		}
	if (!n || fq_peers_assign(nics, n, (unsigned)c->cfg.peers_per_nic, c->cfg.peer_seed, &plan) < 0)
		goto out;
	/* the reverse lists: who probes NIC i */
	in_first = calloc(n + 1, sizeof(*in_first));
	in_peers = calloc(plan.n_peers ? plan.n_peers : 1, sizeof(*in_peers));
	if (!in_first || !in_peers)
		goto out_plan;
	for (size_t j = 0; j < plan.n_peers; j++)
		in_first[plan.peers[j] + 1]++;
	for (size_t i = 0; i < n; i++)
		in_first[i + 1] += in_first[i];
	{
		size_t *fill = calloc(n ? n : 1, sizeof(*fill));
		if (!fill)
			goto out_plan;
		for (size_t i = 0; i < n; i++)
			for (size_t j = plan.first[i]; j < plan.first[i + 1]; j++) {
				uint32_t t = plan.peers[j];
				in_peers[in_first[t] + fill[t]++] = (uint32_t)i;
			}
		free(fill);
	}
	c->peers_epoch++;
	/* One PeerAssignment per agent, with the peers of each of its NICs. */
	for (size_t b = 0; b < c->agents.nbuckets; b++)
		for (struct fq_strmap_entry *e = c->agents.buckets[b]; e; e = e->next) {
			struct agent *a = e->value;
			Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
			Fabriciq__PeerAssignment pa = FABRICIQ__PEER_ASSIGNMENT__INIT;
			Fabriciq__PeerAssignment__NicPeers *np = NULL, **npp = NULL;
			Fabriciq__Peer *peers = NULL, **pp = NULL;
			size_t nn = 0, total = 0, k = 0;

			if (!a->sess)
				continue;
			for (size_t i = 0; i < n; i++)
				if (refs[i].agent == a) {
					nn++;
					total +=
					    plan.first[i + 1] - plan.first[i] + in_first[i + 1] - in_first[i];
				}
			np = calloc(nn ? nn : 1, sizeof(*np));
			npp = calloc(nn ? nn : 1, sizeof(*npp));
			peers = calloc(total ? total : 1, sizeof(*peers));
			pp = calloc(total ? total : 1, sizeof(*pp));
			if (!np || !npp || !peers || !pp)
				goto next;
			nn = 0;
			for (size_t i = 0; i < n; i++) {
				if (refs[i].agent != a)
					continue;
				fabriciq__peer_assignment__nic_peers__init(&np[nn]);
				np[nn].local_nic = (char *)refs[i].nic->name;
				np[nn].peers = &pp[k];
				for (size_t j = plan.first[i];
				     j < plan.first[i + 1] + in_first[i + 1] - in_first[i]; j++) {
					/* out-peers, then the NICs that probe this one (not
					 * already out-peers): probing both ways lets each
					 * side know the other as a peer and answer it */
					size_t out = plan.first[i + 1] - plan.first[i];
					uint32_t pj = j < plan.first[i + 1]
							  ? plan.peers[j]
							  : in_peers[in_first[i] + (j - plan.first[i]) - out];
					const struct fq_peer_nic *t = &nics[pj];

					if (j >= plan.first[i + 1] && is_out_peer(&plan, i, pj))
						continue;
					fabriciq__peer__init(&peers[k]);
					peers[k].node = (char *)t->node;
					peers[k].nic = (char *)t->nic;
					peers[k].address = (char *)t->address;
					peers[k].rail = t->rail;
					peers[k].port = (uint32_t)c->cfg.probe_port;
					pp[k] = &peers[k];
					k++;
					np[nn].n_peers++;
				}
				npp[nn] = &np[nn];
				nn++;
			}
			pa.epoch = c->peers_epoch;
			pa.nics = npp;
			pa.n_nics = nn;
			env.version = FQ_PROTOCOL_VERSION;
			env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_PEERS;
			env.peers = &pa;
			fq_session_send(a->sess, &env);
		next:
			free(np);
			free(npp);
			free(peers);
			free(pp);
		}
out_plan:
	free(in_first);
	free(in_peers);
	fq_peer_plan_free(&plan);
out:
	free(nics);
	free(refs);
}

/* ---- detector actions --------------------------------------------------- */

/* The row id of the anomaly with this detector handle while it is open;
 * 0: none (or not stored). */
static int64_t anomaly_row(struct ctl *c, uint64_t handle)
{
	char key[32];
	const char *idstr;

	snprintf(key, sizeof(key), "%llu", (unsigned long long)handle);
	idstr = handle ? fq_strmap_get(&c->anomaly, key) : NULL;
	return idstr ? strtoll(idstr, NULL, 10) : 0;
}

static void apply_action(struct ctl *c, struct fq_db *db, const struct fq_det_action *a, int64_t now)
{
	char key[32];
	int64_t id = anomaly_row(c, a->handle);
	int rc = 0;

	snprintf(key, sizeof(key), "%llu", (unsigned long long)a->handle);
	switch (a->kind) {
	case FQ_DET_OPEN: {
		struct fq_db_anomaly an = {a->anomaly_kind,
					   (enum fq_db_severity)a->severity,
					   a->start_ns,
					   a->end_ns,
					   a->node,
					   a->nic,
					   a->remote_node,
					   a->remote_nic,
					   a->summary,
					   a->evidence_json,
					   anomaly_row(c, a->incident)};
		struct fq_strmap_entry *e;
		fq_warn("anomaly %s: %s", a->anomaly_kind, a->summary ? a->summary : "");
		c->anomalies_opened++;
		if (!db || (rc = fq_db_insert_anomaly(db, &an, NULL, 0, &id)) < 0)
			break;
		snprintf(key, sizeof(key), "%llu", (unsigned long long)a->handle);
		if ((e = fq_strmap_upsert(&c->anomaly, key))) {
			char *v = malloc(24);
			if (v) {
				snprintf(v, 24, "%lld", (long long)id);
				free(e->value);
				e->value = v;
			}
		}
		break;
	}
	case FQ_DET_ATTACH: {
		struct fq_db_anomaly_job j = {a->job_id, a->step_id, a->ranks, a->nranks};
		if (db && id)
			rc = fq_db_attach_anomaly(db, id, &j, 1);
		break;
	}
	case FQ_DET_UPDATE:
		if (db && id)
			rc = fq_db_update_anomaly(db, id, a->events, a->end_ns, a->summary);
		break;
	case FQ_DET_CLOSE:
		if (db && id)
			rc = fq_db_close_anomaly(db, id, a->end_ns ? a->end_ns : now);
		free(fq_strmap_remove(&c->anomaly, key));
		break;
	case FQ_DET_ADVICE: { /* collision advice to the agent on the moved job's node */
		struct agent *ag = a->node ? fq_strmap_get(&c->agents, a->node) : NULL;

		if (ag && ag->sess)
			fq_session_send_advice(ag->sess, a->job_id, a->nic, a->remote_node, a->remote_nic,
					       a->end_ns - a->start_ns, a->other_job, a->reason, now);
		return; /* nothing to store: the anomaly carries it */
	}
	case FQ_DET_HINT: {
		struct fq_db_drain_hint h = {a->node, a->nic, a->resume, a->reason, id, now};
		c->hints++;
		fq_warn("hint: %s %s: %s", a->resume ? "resume" : "drain", a->node,
			a->reason ? a->reason : "");
		if (db)
			rc = fq_db_insert_drain_hint(db, &h, &id);
		break;
	}
	}
	if (!db || rc < 0) {
		c->det_write_failures++;
		if (db)
			fq_ingest_db_failed(c->ingest, rc, now);
		fq_log_rl(FQ_LOG_WARN, "detector action %d (handle %llu) not stored: %s", (int)a->kind,
			  (unsigned long long)a->handle, db ? fq_db_error(db) : "database unavailable");
	}
}

/* What `fabriciq hints --apply` did, fed back to the detector: a node
 * drained by fabriciq gets a resume hint once healthy. Only changes are
 * passed on (the detector's healthy timer starts at the drain). */
struct hint_seen {
	struct ctl *c;
	int64_t now;
};

static void on_applied_hint(void *arg, const char *node, int resume, const char *reason)
{
	struct hint_seen *h = arg;
	char *state = fq_strmap_get(&h->c->drained, node), *want;

	if (state && strcmp(state, resume ? "" : reason) == 0)
		return;
	want = strdup(resume ? "" : reason);
	if (!want)
		return;
	{
		struct fq_strmap_entry *e = fq_strmap_upsert(&h->c->drained, node);
		if (!e) {
			free(want);
			return;
		}
		free(e->value);
		e->value = want;
	}
	fq_info("node %s %s (an applied hint)%s%s", node, resume ? "resumed" : "drained", resume ? "" : ": ",
		resume ? "" : reason);
	fq_detector_node_drained(h->c->det, node, resume ? NULL : reason, h->now);
}

static void detector_round(struct ctl *c, int64_t now)
{
	struct fq_det_action a;
	struct fq_db *db = fq_ingest_db(c->ingest);

	if (db && now - c->hints_polled_ns >= 5 * (int64_t)1000000000) {
		struct hint_seen h = {c, now};
		c->hints_polled_ns = now;
		if (fq_db_applied_hints(db, on_applied_hint, &h) < 0)
			fq_log_rl(FQ_LOG_WARN, "cannot read applied hints: %s", fq_db_error(db));
	}
	fq_detector_tick(c->det, now);
	while (fq_detector_next(c->det, &a) == 1)
		apply_action(c, fq_ingest_db(c->ingest), &a, now);
}

/* ---- timers and signals -------------------------------------------------- */

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
	struct ctl *c = arg;

	(void)fd;
	(void)what;
	fq_ingest_flush(c->ingest, now_real(), (int64_t)c->cfg.flush_interval / 2);
}

static void on_ingest_done(evutil_socket_t fd, short what, void *arg)
{
	struct ctl *c = arg;

	(void)fd;
	(void)what;
	fq_ingest_poll(c->ingest, now_real());
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
	int64_t now = now_real();

	(void)fd;
	(void)what;
	clock_round(c, now);
	if (c->peers_dirty) {
		c->peers_dirty = false;
		send_peers(c);
	}
	detector_round(c, now);
	expire_steps(c, now);
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
		"       fabriciq-controller --dump-config [-c FILE] [-s KEY=VALUE]...\n\n"
		"The fabriciq controller: authenticates node agents with munge, stores their reports in\n"
		"PostgreSQL (spooling to disk while it is unreachable), sends mesh-solved clock corrections\n"
		"and probe peer assignments, detects anomalies, serves /metrics and the JSON API.\n\n"
		"  -c, --config FILE   configuration file (default " FQ_CONFIG_PATH ")\n"
		"  -s, --set KEY=VAL   override one setting (controller.KEY or KEY)\n"
		"      --dump-config   print the effective configuration and exit\n"
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
	static const struct fq_ingest_ops iops = {on_durable, on_dropped};
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
	dc.collision_advice = c->cfg.collision_advice;
	dc.collision_factor = c->cfg.collision_factor;
	dc.advice_lifetime_ns = (int64_t)c->cfg.advice_lifetime;
	if (!(c->det = fq_detector_create(&dc)) || !(c->metrics = fq_metrics_create()) ||
	    !(c->live = fq_steplive_create())) {
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
	    evconnlistener_new_bind(c->base, on_accept, c, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 1024,
				    (struct sockaddr *)&sa, sizeof(sa));
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

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"config", required_argument, NULL, 'c'}, {"set", required_argument, NULL, 's'},
	    {"dump-config", no_argument, NULL, 'd'},  {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},      {NULL, 0, NULL, 0},
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
	fq_ingest_finish(c.ingest, now_real(), 5000000000ll);
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
	if (c.det)
		fq_detector_destroy(c.det);
	fq_authq_destroy(c.scfg.authq);
	fq_strmap_clear(&c.unauth, NULL);
	fq_strmap_clear(&c.agents, agent_free);
	fq_strmap_clear(&c.anomaly, free);
	fq_strmap_clear(&c.drained, free);
	if (c.base)
		event_base_free(c.base);
	fq_cfg_free(&ctl_schema, &c.cfg);
	return rc;
}
