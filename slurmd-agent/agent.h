/*
 * agent: the fabriciq-agent daemon's top-level state, shared by its parts
 * (agent.c: configuration, main loop and status; agent_jobs.c: the step and
 * telemetry sockets; agent_report.c: reports to the controller, the
 * global timeline, link events, corrections and peer assignments).
 */
#ifndef FQ_AGENT_AGENT_H
#define FQ_AGENT_AGENT_H

#include <event2/event.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/clock.h"
#include "common/clock_page.h"
#include "common/path_page.h"
#include "common/signkey.h"
#include "proto/fabriciq.pb-c.h"
#include "slurmd-agent/advice.h"
#include "slurmd-agent/agent_config.h"
#include "slurmd-agent/lanetrace.h"
#include "slurmd-agent/local.h"
#include "slurmd-agent/probe_transport.h"
#include "slurmd-agent/prober.h"
#include "slurmd-agent/qpcheck.h"
#include "slurmd-agent/sockcheck.h"
#include "slurmd-agent/spool.h"
#include "slurmd-agent/steps.h"
#include "slurmd-agent/timeline.h"
#include "slurmd-agent/tracer.h"
#include "slurmd-agent/uplink.h"

#define AGENT_MAX_NICS     16
#define AGENT_MAX_ASSIGNED FQ_PROBER_MAX_PATHS

struct agent_nic {
	char name[16];
	char address[FQ_PEER_ADDR_STRLEN]; /* IPv4, or "ud:..." for a UD NIC */
	uint32_t rail;
	uint64_t speed_mbps; /* 0: unknown */
	bool all_down;       /* every probed path of this NIC is DOWN */
};

/* A path the controller assigned (removed again when a later assignment
 * leaves it out; static peers from the configuration stay). */
struct agent_assigned {
	char nic[16], addr[FQ_PEER_ADDR_STRLEN];
};

struct agent {
	struct agent_config cfg;
	struct fq_signkey node_key;                  /* agent.node_key, when set */
	uint8_t controller_key[FQ_SIGN_PUBLIC_SIZE]; /* agent.controller_key, when set */
	char step_socket[256], telemetry_socket[256], clock_page_path[4096], path_page_path[4096];
	char steps_path[4096]; /* the persisted step registry, RUN_DIR/steps.json */
	char boot_id[64];
	struct event_base *base;
	struct fq_prober *prober;
	struct fq_tracer *tracer;       /* NULL: agent.trace_interval 0 */
	struct fq_lanetrace *lanetrace; /* NULL: no tracer, or not root */
	struct fq_steps *steps;
	struct fq_local *local;
	struct fq_spool *spool;
	struct fq_uplink *uplink;
	struct fq_clock_page_writer *clock_page;
	struct fq_path_page_writer *path_page;
	struct event *report_ev, *publish_ev, *sigterm_ev, *sigint_ev;
	struct event *paths_ev;     /* the path page's publication once a transition settled */
	struct json_object *events; /* the last link events */
	int64_t started_raw;
	struct fq_xstamp xs; /* REALTIME - RAW, refreshed each report */
	int64_t epoch_ns;    /* REALTIME - RAW at start: this host's global timeline as reference */
	struct agent_nic nics[AGENT_MAX_NICS];
	struct fq_advice_table advice; /* the controller's collision advice (path page) */
	unsigned n_nics;
	struct agent_assigned assigned[AGENT_MAX_ASSIGNED];
	unsigned n_assigned;
	uint64_t peers_epoch;
	/* the last window's path reports */
	struct fq_path_report *paths;
	size_t n_paths;
	/* global timeline */
	struct fq_timeline timeline;
	const char *time_source; /* "reference", "controller", "peer", "none" */
	char sched[24];          /* the loop's scheduling: "fifo:N" or "other" (agent.rt_priority) */
	char reference[64];
	bool have_correction;
	Fabriciq__ClockCorrection corr; /* strings not kept */
	int64_t corr_local_ns;          /* when it arrived (local raw) */
	uint64_t frames_spooled, frames_unspooled;
	uint64_t lanes_forwarded;
	uint64_t lane_delays_dropped;  /* lane reports whose delays were implausible */
	uint64_t profiler_forwarded;   /* profiler reports (NCCL profiler plugin) spooled */
	uint64_t profiler_removed;     /* their windows and ops removed as implausible (proftag.h) */
	uint64_t lanes_remote_unknown; /* lane reports whose far end no probed path names */
	/* lane reports whose connection (and, on IB, queue pair) the sender was
	 * not seen to hold, by what the kernel said (FQ_LANE_CLOSED, _OTHERS,
	 * _UNCHECKED) */
	uint64_t lanes_unverified_as[FQ_LANE_UNCHECKED + 1];
	struct fq_sockcheck sockcheck;    /* which TCP connections and RC QPs are whose */
	struct fq_qpcheck_counts qpcheck; /* the RDMA netlink asked */
	/* what one step's processes may send on this node (agent.telemetry_*_rate) */
	struct fq_rate_limit lane_limit, event_limit;
	uint64_t steps_reclaimed; /* removed with no live task and no StepEnd */
};

/* agent_jobs.c */
extern const struct fq_local_ops agent_local_ops;
/* Reclaim registered steps whose tasks are all gone and whose StepEnd never
 * came (each report window; logged and counted). */
void agent_reap_steps(struct agent *a);
/* Persist the step registry after a change (a failure is logged). */
void agent_save_steps(struct agent *a);
/* The steps, their senders' and lane reports' counters into the status
 * object st. */
void agent_jobs_status(const struct agent *a, json_object *st);

/* agent_status.c */
/* Write the status file (atomically: a temporary renamed over it). */
void agent_write_status(struct agent *a);
/* --status: print the running agent's status file (raw with json): 0,
 * or 1 when there is none. */
int agent_print_status(const char *path, int json);

/* agent_report.c */
/* A local CLOCK_MONOTONIC_RAW time on the global timeline, or as real time
 * (CLOCK_REALTIME) before the timeline is published. */
int64_t agent_global(const struct agent *a, int64_t local_ns);
/* Spool one frame for the controller: its seq, or 0 (no controller, or
 * not spooled: counted). An event (step, link, failover) is flushed to
 * disk at once, bulk telemetry at the report window's end. */
uint64_t agent_send(struct agent *a, Fabriciq__Envelope *env);
void agent_report_window(struct agent *a);
void agent_publish(struct agent *a);
void agent_link_event(void *arg, const char *local_nic, const char *peer_node, const char *peer_nic, int up,
		      int64_t since_ns, int64_t detected_ns);
/* The prober's stall hook: the loop's stall for the controller (AgentStall). */
void agent_stall(void *arg, int64_t start_ns, int64_t end_ns);
/* The tracer's callback: a path's route for the controller. */
void agent_route(void *arg, const struct fq_route *r, bool changed);
/* lanetrace's callback: a lane's own route for the controller (LaneRoute). */
void agent_lane_route(void *arg, const struct fq_lane_route *r);
/* paths_ev's callback: publish the path page with the transitions since
 * the last publication (AGENT_PATHS_SETTLE_MS after the first of them). */
void agent_paths_settled(evutil_socket_t fd, short what, void *arg);
#define AGENT_PATHS_SETTLE_MS 100
extern const struct fq_uplink_ops agent_uplink_ops;
/* Remote NIC of a path by address ("" if unknown). */
void agent_lookup_remote(const struct agent *a, const char *ipv4, const char **node, const char **nic);

#endif /* FQ_AGENT_AGENT_H */
