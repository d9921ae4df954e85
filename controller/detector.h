/*
 * detector: the controller's anomaly detection and drain/undrain hints.
 *
 * The daemon feeds it what it ingests (probe windows, lane windows, link
 * events, step starts/ends), with times on the global timeline, and takes
 * out actions to store (open an anomaly, attach it to job steps, close it,
 * emit a drain/resume hint). It does no I/O and reads no clock: the same
 * inputs give the same actions, so every rule is tested on recorded
 * numbers. Each rule is a pure function (rules.h) over the state kept
 * here (per-path delay baselines, per-NIC flap times, the lanes each job
 * step has used, the anomalies still open).
 *
 * Anomaly kinds (the sql/ check constraint): link_down, flapping,
 * path_delay, fabric_delay (delayed paths blamed on the switch or link
 * they share: detector_locate.c), lane_outlier, inband_mismatch,
 * slow_sender, slow_receiver, peer_slow,
 * and collision (with collision_advice: lanes of two or more jobs delay
 * outliers on paths sharing a NIC, rules.h; attached to every step whose
 * lanes crossed the NIC, and advice to move one job: FQ_DET_ADVICE).
 * peer_slow comes from the NCCL profiler plugin's reports, not from lanes
 * (detector_prof.h): one rank's transfers to one peer far slower than the
 * step's other ranks' to theirs, interval after interval; its place is the
 * rank's node -> the peer's node (no NIC: NCCL names none), attached to the
 * step and the two ranks.
 * Every anomaly is attached to the job steps (and their ranks) whose lanes
 * crossed the affected NIC or path while it lasted, including lanes that
 * arrive after it opened; a lane_outlier only to the step (and the two
 * ranks) whose lane it is. One anomaly is open per kind and place (node,
 * NIC, remote node, remote NIC): more evidence extends it.
 *
 * Incidents: a link_down is an episode of its NIC or path, not one DOWN:
 * it opens at the first DOWN, counts every DOWN after it (FQ_DET_UPDATE),
 * and closes incident_gap_ns after the place came back UP with no DOWN
 * since (end: that UP). While a NIC's episode is open it is the incident
 * of everything on that NIC: an anomaly opened on a place touching it
 * (flapping, a path's delay, a lane outlier...) is a member (OPEN's
 * incident; the daemon stores a member's job attachments on its
 * incident, fq_db_attach_anomaly, for as long as the member lasts); a
 * path DOWN through it opens nothing (the raw link event is
 * stored by the daemon). A path's DOWN opens its own episode only if,
 * incident_settle_ns later, no NIC episode at either end explains it (the
 * NIC is inferred from its paths, which arrive one by one), nor a stall of
 * the far node's agent (fq_detector_agent_stall; waited for up to
 * stall_wait_ns while that agent has sent nothing since the silence).
 *
 * Memory is bounded by the max_* fields of the config (see detector_int.h
 * for what each table holds, and which file does what); a detector is not
 * thread-safe (one per thread).
 */
#ifndef FQ_CONTROLLER_DETECTOR_H
#define FQ_CONTROLLER_DETECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/detector_act.h"
#include "controller/detector_lane.h"
#include "controller/detector_link.h"
#include "controller/detector_prof.h"

struct fq_detector;

/* Thresholds (controller.* config keys of the same names). */
struct fq_detector_config {
	unsigned flap_threshold;       /* flapping: more than this many DOWNs of one NIC ... (8) */
	int64_t flap_window_ns;        /* ... within this window (1 h) */
	int64_t delay_threshold_ns;    /* path_delay: owd p99 above this (1 ms) ... */
	double delay_baseline_factor;  /* ... or above its own baseline by this factor (4) */
	int64_t delay_floor_ns;        /* never flag a delay below this (50 us) */
	int64_t delay_min_excess_ns;   /* ... nor one less than this above its baseline (300 us) */
	double lane_outlier_factor;    /* lane_outlier: p99 > factor x the step's median lane p99 (5) */
	unsigned lane_outlier_persist; /* ... in this many of the lane's intervals in a row (3) */
	double inband_factor;          /* inband_mismatch: lane min > factor x probe p50 (5) ... */
	int64_t inband_floor_ns;       /* ... and more than this above it (50 us) */
	double slow_nic_share;         /* slow_*: this share of a NIC's paths elevated (0.8) ... */
	unsigned slow_nic_min_paths;   /* ... out of at least this many (3) */
	int64_t resume_after_ns;       /* resume hint: healthy for this long after a drain (10 min) */
	int64_t quiet_close_ns;        /* an anomaly closes after this long without evidence (30 s) */
	int64_t incident_gap_ns;       /* a link episode closes after this long UP (30 s; > settle) */
	int64_t incident_settle_ns;    /* a path's DOWN waits this long for a NIC cause (2 s) */
	int64_t stall_wait_ns;         /* ... and up to this long for its far agent's stall report (30 s) */
	int64_t stall_margin_ns;       /* a stall explains a silence it covers within this (250 ms) */

	/* Added with the implementation (defaults in parentheses). */
	unsigned nic_down_min_paths;     /* NIC down when all its >= this many paths are (2) */
	unsigned locate_min_paths;       /* fabric_delay: blamed on a component when at least this many
					  * paths are delayed (3; detector_locate.c) */
	int64_t nic_dead_after_ns;       /* a NIC down this long is dead: drain hint (60 s) */
	unsigned delay_baseline_windows; /* quiet windows before a path's baseline is used (5) */
	unsigned delay_persist_windows;  /* path_delay: this many elevated windows in a row (3); one
					  * window's p99 is a few dozen probes, so a single spike is noise */
	int64_t attach_slack_ns;         /* attach lanes that crossed up to this before the start (5 s) */
	int64_t state_expire_ns;         /* drop path/NIC/node state unseen this long (2 h, >= flap window) */
	int64_t step_expire_ns;          /* drop a step's lane history unseen this long (10 min) */
	double collision_factor;         /* collision: lane p99 > factor x its NIC pair's probe owd (3) */
	int64_t advice_lifetime_ns;      /* a MOVE advice holds this long unless renewed (30 s) */
	bool collision_advice;           /* evaluate the collision rule each tick (false; the daemon:
					  * controller.collision_advice, default yes) */
	/* peer_slow, from the NCCL profiler's transfers (detector_prof.h) */
	double peer_slow_factor;         /* a rank's transfers to a peer below the median rate of
					  * other ranks' to other peers / this (4) ... */
	unsigned peer_slow_persist;      /* ... in this many of its intervals in a row, none
					  * between them above that median / sqrt(factor) (3) */
	unsigned peer_slow_min_ref;      /* ... among at least this many such channels (2; >= 2) */
	uint64_t peer_slow_min_bytes;    /* a channel moving less in an interval is not judged (1 MiB) */
	uint64_t peer_slow_min_transfer; /* ... nor one whose mean transfer is smaller (64 KiB) */
	/* Memory bounds: past them the least recently seen eighth is dropped. */
	size_t max_paths;             /* directed NIC pairs (262144; ~300 B each with its NICs) */
	size_t max_nics;              /* (65536) */
	size_t max_nodes;             /* (65536) */
	size_t max_steps;             /* job steps with lane history (16384) */
	size_t max_lanes;             /* lane records over all steps (262144; ~250 B each) */
	size_t max_lanes_per_step;    /* (4096; past it the oldest interval's record is reused) */
	size_t max_open;              /* open anomalies (4096); past it new ones are not opened */
	size_t max_steps_per_anomaly; /* job steps attached to one anomaly (1024) */
	size_t max_pending;           /* actions not taken yet (262144); newer ones are dropped */
};

void fq_detector_config_defaults(struct fq_detector_config *c);

/* Inputs (strings are copied by the detector when it keeps them): probe
 * windows and link events (detector_link.h), lane windows, lane events
 * and step ends (detector_lane.h), profiler reports (detector_prof.h), drained nodes (detector_act.h). Output:
 * the actions (detector_act.h). */

/* Periodic (once per report window): closes quiet anomalies, evaluates the
 * window-level rules (lane outliers, slow NICs), emits dead-NIC drain hints
 * and resume hints. Closing: link_down on UP (path or NIC), flapping once
 * the window holds no more than flap_threshold DOWNs, the others
 * quiet_close_ns after their last evidence (end = that evidence's time). */
void fq_detector_tick(struct fq_detector *d, int64_t now_ns);

struct fq_detector *fq_detector_create(const struct fq_detector_config *c);
void fq_detector_destroy(struct fq_detector *d);

#endif /* FQ_CONTROLLER_DETECTOR_H */
