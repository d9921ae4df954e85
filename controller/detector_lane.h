/*
 * detector_lane: the detector's lane inputs (detector.h): lane windows,
 * lane events and step ends, which feed the job steps' rules (inband
 * mismatch, lane outliers, rdma_config, collisions). Strings are copied by
 * the detector when it keeps them.
 */
#ifndef FQ_CONTROLLER_DETECTOR_LANE_H
#define FQ_CONTROLLER_DETECTOR_LANE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fq_detector;

struct fq_det_lane {
	uint64_t job_id;
	uint32_t step_id, src_rank, dst_rank, lane;
	const char *src_node, *src_nic, *dst_node, *dst_nic; /* dst_*: "" if unknown */
	int64_t start_ns, end_ns;
	uint64_t bytes;
	int64_t owd_p50_ns, owd_p99_ns; /* receiver-side reports only; 0: none */
	/* the interval's smallest one-way delay (receiver side; 0: none): the
	 * path's base delay as the lane sees it, which queueing does not raise */
	int64_t owd_min_ns;
	/* the lane's TCP RTT floor, from either end (0: none, or not TCP):
	 * half of it is the path's one-way base delay without the sender's
	 * own socket queue, which owd_min_ns includes under load */
	int64_t tcp_min_rtt_ns;
	bool synchronised;
	/* the agent found no such connection of the sender's (proto
	 * LaneReport.unverified): counted there, never taken by a rule */
	bool unverified;
};

void fq_detector_lane(struct fq_detector *d, const struct fq_det_lane *l);

/* A lane's own route (proto LaneRoute, traced by its sending agent with the
 * lane's TCP 5-tuple): the components it crosses in order, as
 * fq_detector_route's ("n1/rail0", "n1/rail0~leaf1", "leaf1",
 * "leaf1~spine3", "spine3", ...). A fabric incident is attached to the
 * steps whose lanes cross its component by their own routes where they
 * have one (the open ones at once), else by their NIC pairs' probe
 * routes. Replaces the lane's route before; kept as long as its step. */
struct fq_det_lane_route {
	uint64_t job_id;
	uint32_t step_id, src_rank, dst_rank, lane;
	uint16_t local_port; /* its source port (0: unknown): collision advice names the lane by it */
	const char *const *comps;
	size_t n;
	int64_t now_ns;
};
void fq_detector_lane_route(struct fq_detector *d, const struct fq_det_lane_route *r);
/* A job step is gone (controller/steplive.h): its lanes are forgotten (an
 * ended job is no party to a collision; anomalies already attached to it
 * stay). */
void fq_detector_step_end(struct fq_detector *d, uint64_t job, uint32_t step);

/* A lane event of a job's NCCL plugin (proto FailoverEvent), reported by
 * the agent on node. Cause "config": an RDMA lane the two ends could not
 * form (InfiniBand against RoCE, RoCE v1 against v2: the classic
 * misconfiguration) -> anomaly rdma_config on node/nic, attached to the
 * step and its two ranks, closed quiet_close_ns after the last such event.
 * Other causes are failovers and moves: failover_events holds them. */
struct fq_det_lane_event {
	const char *node, *nic, *remote_nic, *cause;
	uint64_t job_id;
	uint32_t step_id, src_rank, dst_rank;
	int64_t time_ns;
};
void fq_detector_lane_event(struct fq_detector *d, const struct fq_det_lane_event *e);

#endif /* FQ_CONTROLLER_DETECTOR_LANE_H */
