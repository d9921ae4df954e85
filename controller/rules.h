/*
 * rules: the detector's anomaly rules, each a pure function over plain
 * numbers (no state, no clock, no allocation), with its thresholds from
 * struct fq_detector_config. detector.c keeps the state they read (the
 * baselines, the DOWN times, the lanes of a step) and decides what to do
 * with a verdict; the unit tests feed them recorded numbers directly.
 *
 * Every function accepts any input: NULL arrays with n == 0, zero or
 * negative delays ("no sample"), INT64 extremes. Delays and times are ns.
 */
#ifndef FQ_CONTROLLER_RULES_H
#define FQ_CONTROLLER_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/detector.h"

/* a - b, saturated at the int64 range (times may be hostile). */
int64_t fq_rule_sat_sub(int64_t a, int64_t b);

/* ---- flapping --------------------------------------------------------- */

/* The number of DOWN transition times in (now - window, now] (any order). */
unsigned fq_rule_flap_count(const int64_t *down_ns, size_t n, int64_t now_ns, int64_t window_ns);
/* Flapping: more than flap_threshold DOWNs within flap_window_ns before
 * now; *count (may be NULL) gets the number counted. */
bool fq_rule_flapping(const struct fq_detector_config *c, const int64_t *down_ns, size_t n, int64_t now_ns,
		      unsigned *count);

/* ---- link_down -------------------------------------------------------- */

/* NIC-level down inferred from its own paths: every path of the NIC whose
 * state is known is down, and there are at least nic_down_min_paths of
 * them (with fewer, one dead peer cannot be told from a dead NIC). */
bool fq_rule_nic_down(const struct fq_detector_config *c, size_t paths_known, size_t paths_down);

/* ---- path_delay ------------------------------------------------------- */

enum fq_rule_delay {
	FQ_RULE_DELAY_OK = 0,
	FQ_RULE_DELAY_ABSOLUTE = 1, /* p99 above delay_threshold_ns */
	FQ_RULE_DELAY_BASELINE = 2, /* p99 above delay_baseline_factor x baseline */
};

/* A window's owd p99 against the absolute threshold and the path's own
 * baseline (0: none yet, only the absolute threshold applies). Nothing at
 * or below delay_floor_ns is ever flagged, nor a rise over the baseline of
 * delay_min_excess_ns or less (a job's own traffic queues the probes a
 * little on a healthy fabric); p99 <= 0 means no sample. */
enum fq_rule_delay fq_rule_path_delay(const struct fq_detector_config *c, int64_t p99_ns,
				      int64_t baseline_ns);

/* The baseline after a quiet window (one the rule did not flag): an EWMA
 * with weight 1/8 of the new p99, the sample clamped to 2 x the baseline
 * so one noisy quiet window cannot drag it up; the first sample seeds it.
 * Samples <= 0 leave it unchanged. */
int64_t fq_rule_baseline_update(int64_t baseline_ns, int64_t p99_ns);

/* ---- lane_outlier ----------------------------------------------------- */

/* The median of the values > 0 (mean of the middle two for an even
 * count); 0 when there are none. */
int64_t fq_rule_median(const int64_t *v, size_t n);

/*
 * One job step's lanes in one interval: lane i is an outlier when its p99
 * is above lane_outlier_factor x the median lane p99 and above
 * delay_floor_ns. Needs at least 3 lanes with a sample (with two, the
 * median is their mean and says nothing). outlier[i] (may be NULL) is set
 * for every lane; *median (may be NULL) gets the median. Returns the
 * number of outliers.
 */
size_t fq_rule_lane_outliers(const struct fq_detector_config *c, const int64_t *p99_ns, size_t n,
			     bool *outlier, int64_t *median_ns);

/* ---- peer_slow (the NCCL profiler's transfers) ------------------------- */

/* One rank's network transfers to one peer over one report interval (a
 * step_send window of the profiler plugin): bytes, transfers, and the
 * summed time from each transfer's post to its completion; rank and peer
 * name the channel. */
struct fq_rule_xfer {
	uint64_t bytes, count;
	int64_t busy_ns;
	uint32_t rank, peer;
};

/* What one interval says of a channel. */
enum fq_peer_verdict {
	FQ_PEER_UNJUDGED, /* too small, a side channel, or too few channels to compare with */
	FQ_PEER_NORMAL,   /* at least its reference / sqrt(peer_slow_factor): ends a streak */
	FQ_PEER_BETWEEN,  /* below that, not slow: neither ends nor extends a streak */
	FQ_PEER_SLOW,     /* below its reference / peer_slow_factor */
};

struct fq_peer_judgement {
	enum fq_peer_verdict verdict;
	int64_t rate_bps; /* bytes / busy time, bytes per second (0: not judged) */
	int64_t ref_bps;  /* its reference's median rate (0: no verdict) */
	size_t nref;      /* the channels in its reference */
};

/*
 * One job step's transfer channels (rank -> peer) in one interval: a
 * channel is judged when it moved at least peer_slow_min_bytes, its mean
 * transfer is at least peer_slow_min_transfer bytes (smaller ones are
 * latency, not bandwidth) and its bytes are at least a quarter of the
 * median judged channel's (an idle or side channel is no comparison). A
 * judged channel is compared with its reference, the median rate of the
 * judged channels of other ranks to other peers: a rank whose NIC is slow
 * slows all its channels, and a slow receiver all those to it, so neither
 * may set the yardstick it is measured by. Fewer than peer_slow_min_ref
 * (never fewer than 2) such channels: no verdict. The band between slow
 * and normal is there because the other channels' rates scatter (a
 * transfer to a receiver still busy elsewhere waits for it): a streak is
 * broken by an interval that is clearly normal, not by one whose
 * yardstick sagged. out[i] gets channel i's judgement (out may be NULL
 * only when n is 0). Returns the number of slow channels.
 */
size_t fq_rule_peer_slow(const struct fq_detector_config *c, const struct fq_rule_xfer *x, size_t n,
			 struct fq_peer_judgement *out);

/* ---- inband_mismatch -------------------------------------------------- */

/* The same NIC pair's smallest lane delay in an interval (in-band, the
 * job's own traffic) far above its probe delay p50 (out-of-band): above
 * inband_factor x and more than inband_floor_ns above it. The minimum, not
 * the median: queueing behind the job's own bulk traffic raises a lane's
 * p50 but not its minimum, while traffic on a wrong class, GID or RoCE
 * version takes another path or queue for every chunk. Either <= 0 (no
 * sample): false. */
bool fq_rule_inband_mismatch(const struct fq_detector_config *c, int64_t lane_min_ns, int64_t probe_p50_ns);

/* ---- slow_sender / slow_receiver -------------------------------------- */

/* At least slow_nic_share of a NIC's (fresh) paths elevated, out of at
 * least slow_nic_min_paths. */
bool fq_rule_slow_nic(const struct fq_detector_config *c, size_t paths, size_t elevated);

/* A slow NIC is one among many: with `slow` of the `judged` NICs (those
 * with slow_nic_min_paths paths in that direction) passing
 * fq_rule_slow_nic, they are blamed only while they are at most half of
 * them, or one. When most NICs' paths are elevated the queue is the
 * fabric's (every spine congested: each path delayed on every flow, as a
 * slow NIC's are), which the localisation judges, not each NIC. */
bool fq_rule_slow_nics_few(size_t slow, size_t judged);

/* ---- collision -------------------------------------------------------- */

/* One lane of one job in one detector window, with the probe delay of its
 * NIC pair (the out-of-band baseline: what the path gives without the
 * jobs' traffic). NIC keys are "node/nic" strings; equal keys are one NIC.
 * links: the switch-to-switch links the lane's own traced route crosses,
 * each as the route names it, directed ("leaf1>spine3": a queue of
 * leaf1's); none where the lane has no traced route (an IB lane, one not
 * traced yet), which then meets others only on its NICs. */
struct fq_rule_clane {
	uint64_t job_id;
	const char *src_nic, *dst_nic;
	int64_t owd_p99_ns; /* the lane's p99 one-way delay; <= 0: no sample */
	int64_t probe_ns;   /* the NIC pair's probe owd (p50 baseline); <= 0: unknown */
	const char *const *links;
	size_t nlinks;
};

struct fq_rule_collision {
	uint64_t move_job;  /* the job advised to move */
	uint64_t other_job; /* the job it collides with (the one with the most lanes affected) */
	const char *place;  /* where: a NIC key, or a link as the lanes name it (points into the input) */
	size_t move_lanes;  /* outlier lanes of move_job there */
	size_t other_lanes; /* ... of other_job */
	size_t jobs;        /* jobs with outlier lanes there (>= 2) */
};

/*
 * Collision: in one window, lanes of two or more jobs are delay outliers
 * (p99 above collision_factor x their NIC pair's probe delay and above
 * delay_floor_ns) on paths that share a place: a NIC (as source or
 * destination), or a switch link their own routes cross the same way (two
 * lanes that ECMP hashed onto one spine). Where several places qualify,
 * the one with the most outlier lanes wins (ties: the first in input
 * order, a lane's NICs before its links). The job to move is the one with
 * the fewest outlier lanes there (the cheaper one to disturb; ties: the
 * higher job id, the younger job). outlier[i] (may be NULL) is set per
 * lane. Returns true and *out on a collision; lanes without both NIC keys
 * or a probe delay never count.
 */
bool fq_rule_collision(const struct fq_detector_config *c, const struct fq_rule_clane *l, size_t n,
		       bool *outlier, struct fq_rule_collision *out);

/* Does lane l cross place (a NIC key or a link, as the rule's)? */
bool fq_rule_clane_at(const struct fq_rule_clane *l, const char *place);

/*
 * The same collision, when `job` was advised to move before and its advice
 * still holds: if it has outlier lanes at r->place (outlier as
 * fq_rule_collision set it), it stays the job to move, and the rule's
 * choice becomes the other job if `job` was that; returns true. Without it
 * the choice flips as the moving job's lanes settle (fewest outlier lanes),
 * or as the two ends of the same paths take turns as the busiest place, and
 * both jobs end up moving. False, nothing changed, when job is 0 or has no
 * outlier lane there.
 */
bool fq_rule_collision_keep(const struct fq_rule_clane *l, size_t n, const bool *outlier, uint64_t job,
			    struct fq_rule_collision *r);

/* ---- text ------------------------------------------------------------- */

/* A duration as the hint reasons write it: "1h", "40m", "90s", "250ms"
 * (the largest unit that divides it exactly; "0s" for <= 0). Returns buf. */
char *fq_rule_format_duration(int64_t ns, char *buf, size_t len);

/* The drain reason: "fabriciq: <nic> <what> <count> in <window>", e.g.
 * "fabriciq: rail1 flapped 9 in 1h". Returns buf. */
char *fq_rule_drain_reason(const char *nic, const char *what, unsigned count, int64_t window_ns, char *buf,
			   size_t len);

/* Reasons starting with this are fabriciq's own (resume hints only for them). */
#define FQ_RULE_REASON_PREFIX "fabriciq:"
bool fq_rule_is_own_reason(const char *reason);

#endif /* FQ_CONTROLLER_RULES_H */
