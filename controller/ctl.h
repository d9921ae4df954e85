/*
 * ctl.h: the controller daemon's state (struct ctl), shared by its files
 * and by no one else:
 *   controller.c  main: settings, start-up, the timers and signals
 *   ctl_agents.c  agents: accepting connections, the session and ingest
 *                 callbacks, what the controller keeps of each agent
 *   ctl_clock.c   the clock round: the mesh solve and the corrections
 *   ctl_peers.c   the probe peer plan sent to the agents
 *   ctl_detect.c  the detector: fed from frames, its actions stored,
 *                 applied hints fed back; job steps' end
 * Everything runs on the event loop's thread.
 */
#ifndef FQ_CONTROLLER_CTL_H
#define FQ_CONTROLLER_CTL_H

#include <event2/event.h>
#include <event2/listener.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "controller/detector.h"
#include "controller/http.h"
#include "controller/ingest.h"
#include "controller/metrics.h"
#include "controller/nodebind.h"
#include "controller/rates.h"

struct fq_topo;
#include "controller/session.h"
#include "controller/steplive.h"
#include "controller/strmap.h"

struct ctl_config {
	char *listen, *http_listen, *api_admin_uids, *topology_file, *db, *munge_socket, *spool_dir,
	    *reference_node, *node_bindings, *key;
	uint64_t max_connections, max_unauthenticated_per_source, auth_queue;
	uint64_t agent_uid, max_frame, auth_timeout, flush_interval, flush_frames, spool_max, db_backoff_max;
	uint64_t db_connect_timeout, db_statement_timeout;
	uint64_t report_interval, correction_valid, peers_per_nic, probe_port, peer_seed;
	bool db_migrate, bind_nodes, node_keys_required;
	/* detector thresholds (controller/detector.h) */
	uint64_t flap_threshold, flap_window, delay_threshold, delay_floor, delay_min_excess, inband_floor,
	    slow_nic_min_paths;
	uint64_t delay_persist, lane_outlier_persist;
	uint64_t resume_after, quiet_close, incident_gap, incident_settle, stall_wait, step_idle;
	double delay_baseline_factor, lane_outlier_factor, inband_factor, slow_nic_share;
	bool collision_advice;
	double collision_factor, peer_slow_factor;
	uint64_t peer_slow_persist, peer_slow_min_bytes;
	uint64_t advice_lifetime;
	bool rates; /* rates between network classes (controller/rates.h) */
	double rates_util, rates_min_share;
	uint64_t rates_congest_delay, rates_hold, rates_lifetime;
	int log_level;
};

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
	/* its last absence (real ns): from its session's end to its next
	 * AgentHello (0: none, or still away) */
	int64_t away_ns, back_ns;
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
	struct fq_rates *rates;   /* NULL: controller.rates off */
	struct fq_session_config scfg;
	struct fq_signkey key; /* controller.key, when set: scfg.key points here */
	struct fq_session_stats sstats;
	struct fq_strmap unauth;      /* source address -> sessions not yet past AgentHello (as uintptr_t) */
	struct fq_strmap agents;      /* node -> struct agent */
	struct fq_strmap anomaly;     /* detector handle -> row id (as strings: small) */
	struct fq_strmap drained;     /* node -> reason of the last applied drain ("" resumed) */
	struct fq_strmap routes;      /* "node^nic^remote^remote_nic" -> its route (ctl_topo.c) */
	struct fq_strmap floors;      /* the same key -> its last windows' delay floors (ctl_topo.c) */
	struct fq_strmap lane_routes; /* "JOB.STEP.SRC.DST.LANE" -> a lane's own route (ctl_topo.c) */
	struct fq_topo *topo;         /* the last topology built (ctl_topo.c) */
	bool routes_dirty, floors_dirty;
	bool retrace_wanted;     /* a route changed: every agent to trace again (ctl_topo.c) */
	bool topo_renamed;       /* the expected topology changed: the switches' names may have */
	int64_t retrace_sent_ns; /* ... last asked at */
	int64_t topo_built_ns, topo_file_stamp;
	char topo_said[160]; /* the last rebuild's figures, logged when they change */
	int64_t hints_polled_ns;
	bool peers_dirty;
	uint64_t clock_epoch, peers_epoch;
	uint64_t anomalies_opened, hints, det_write_failures;
	double last_rms_ns;
	int exit_code;
};

/* ctl_agents.c */
/* The evconnlistener callback of controller.listen: a new agent session. */
void ctl_on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen, void *arg);
/* The ingest callbacks (struct fq_ingest_ops): frames durable up to seq
 * (acknowledged), or dropped (the session closed: the agent resends). */
void ctl_on_durable(void *arg, const char *node, uint64_t seq);
void ctl_on_dropped(void *arg, const char *node);
/* Frees a struct agent (the agents map's values). */
void ctl_agent_free(void *v);

/* ctl_clock.c: solves the mesh clock from the agents' latest estimates and
 * sends every connected agent its correction (each report window). */
void ctl_clock_round(struct ctl *c, int64_t now);

/* ctl_peers.c: assigns probe peers to every NIC and sends each connected
 * agent its assignment (when the NICs known changed). */
void ctl_send_peers(struct ctl *c);

/* ctl_detect.c */
/* Feeds the detector what the frame from node carries. */
void ctl_feed_detector(struct ctl *c, const char *node, const Fabriciq__Envelope *env, int64_t now);
/* A job step ended (idle: it timed out): its metrics and lanes are dropped. */
void ctl_drop_step(struct ctl *c, const struct fq_step_id *id, bool idle);
/* Steps nothing came of for controller.step_idle (each report window). */
void ctl_expire_steps(struct ctl *c, int64_t now);
/* The detector's tick; its actions stored; applied hints fed back. */
void ctl_detector_round(struct ctl *c, int64_t now);

/* ctl_rates.c: rates between network classes (controller/rates.h) */
/* c->rates from the settings (NULL when controller.rates is off); 0 or -ENOMEM. */
int ctl_rates_create(struct ctl *c);
/* What the frame from node tells the rates: a step's class, a sending
 * lane's interval. */
void ctl_feed_rates(struct ctl *c, const char *node, const Fabriciq__Envelope *env);
/* A route for the rates, its hops named as the topology names them (else
 * their addresses): a lane's own (node: its sending node) or a NIC pair's. */
void ctl_rates_lane_route(struct ctl *c, const Fabriciq__LaneRoute *r, const char *const *hops, size_t n);
void ctl_rates_path_route(struct ctl *c, const char *node, const char *nic, const char *remote_node,
			  const char *remote_nic, const char *const *hops, size_t n);
/* The rule's tick; its advice sent to the sending nodes' agents. */
void ctl_rates_round(struct ctl *c, int64_t now);

/* ctl_topo.c */
/* A path's route from node's agent (kept; the topology rebuilt once it changed). */
void ctl_route(struct ctl *c, const char *node, const Fabriciq__PathTrace *t);
/* A probe window's delay floor for the cross-check by delay (a path with a
 * route only). */
void ctl_floor(struct ctl *c, const char *node, const Fabriciq__ProbeReport *p);
/* A lane's own route from its sending agent: to the detector as the
 * topology's components (again after each rebuild: names may change). */
void ctl_lane_route(struct ctl *c, const char *node, const Fabriciq__LaneRoute *r);
/* A step is gone: its lanes' routes are forgotten. */
void ctl_lane_routes_drop(struct ctl *c, uint64_t job, uint32_t step);
/* The topology was rebuilt: every lane's route to the detector again. */
void ctl_lane_routes_refeed(struct ctl *c, int64_t now);
/* At exit: the lanes' routes and the last topology freed. */
void ctl_lane_routes_free(struct ctl *c);
/* The topology rebuilt from changed routes, each path's route to the detector. */
void ctl_topology_round(struct ctl *c, int64_t now);

#endif /* FQ_CONTROLLER_CTL_H */
