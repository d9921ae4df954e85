/*
 * detector_act: what the detector (detector.h) hands out, the actions, in
 * one queue in the order they arose, and the nodes' drain state that
 * decides its hints. Below the rest of the detector: its stages push
 * actions here, nothing here calls them.
 */
#ifndef FQ_CONTROLLER_DETECTOR_ACT_H
#define FQ_CONTROLLER_DETECTOR_ACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fq_detector;

enum fq_det_action_kind {
	FQ_DET_OPEN = 1,   /* a new anomaly: handle, kind, severity, start, place, summary, evidence,
			    * incident (0: it is an incident), events (1) */
	FQ_DET_ATTACH = 2, /* handle, job_id, step_id, ranks (only those new to it; the db merges) */
	FQ_DET_CLOSE = 3,  /* handle, end_ns */
	FQ_DET_HINT = 4,   /* node, nic, resume, reason, handle (0: none), start_ns: created; a fabric
			    * hint: component (node, nic NULL), reason: what to check, handle: its incident */
	/* collision advice: job_id is the job to move; send an Advice to the
	 * agent on node: move off nic -> remote_node/remote_nic, for
	 * end_ns - start_ns (advice_lifetime_ns); handle: the collision
	 * anomaly; reason: where they collide (a NIC "node/nic" or a switch
	 * link "leaf1>spine2"); port: the lane to move, by its source port (0:
	 * the path's, any); other_job: the job it collides with; summary: why.
	 * Repeated each tick while the collision lasts (the agent renews it in
	 * place). */
	FQ_DET_ADVICE = 5,
	FQ_DET_UPDATE = 6, /* a link episode's DOWNs: handle, events, end_ns (its last DOWN), summary */
	FQ_DET_MEMBER = 7, /* anomaly handle is now a member of incident (its jobs are the incident's) */
};

struct fq_det_action {
	enum fq_det_action_kind kind;
	uint64_t handle;   /* the detector's id for an anomaly; the daemon maps it to the row id */
	uint64_t incident; /* OPEN: the incident (handle) it is a member of; 0: none */
	unsigned events;   /* OPEN, UPDATE: the DOWNs of a link episode so far (others: 1) */
	const char *anomaly_kind;
	int severity; /* enum fq_db_severity */
	int64_t start_ns, end_ns;
	const char *node, *nic, *remote_node, *remote_nic; /* NULL where not applicable */
	const char *component; /* OPEN of a fabric anomaly, HINT of the fabric: the component ("spine3") */
	const char *summary;
	const char *evidence_json;
	uint64_t job_id;
	uint64_t other_job; /* FQ_DET_ADVICE: the job collided with */
	uint16_t port;      /* FQ_DET_ADVICE: the lane's source port (0: any lane of the path) */
	uint32_t step_id;
	const uint32_t *ranks;
	size_t nranks;
	bool resume;
	/* drain: "fabriciq: <nic> <what> <count> in <window>": "flapped" (the
	 * DOWNs in flap_window_ns) or "down" (dead NIC; its DOWNs in the same
	 * window), e.g. "fabriciq: rail1 flapped 9 in 1h"; resume:
	 * "fabriciq: no anomaly for 10m"; a fabric hint: what to check, for
	 * people ("check the cable leaf1~spine3: both ends' optics ..."). */
	const char *reason;
};

/* Take the next action, in the order they arose: 1 and *a (valid until the
 * next call), or 0 when there is none. */
int fq_detector_next(struct fq_detector *d, struct fq_det_action *a);
/* Puts the action fq_detector_next gave last back at the head of the queue
 * (storing it failed for a reason that passes: the database went away):
 * the next call gives it again. Nothing to put back is fine. */
void fq_detector_unget(struct fq_detector *d);

/* A node drained (by anyone) / resumed, as the daemon learns it from Slurm
 * or from applying a hint: reason is the drain reason, NULL or "" when the
 * node is no longer drained (resumed). Resume hints are given only for
 * nodes drained with a "fabriciq:" reason, once no open anomaly has had the
 * node as its node or remote node for resume_after_ns. Drain hints are not
 * given for a node already drained (any reason), nor twice for one node
 * until it is reported drained or resumed here. */
void fq_detector_node_drained(struct fq_detector *d, const char *node, const char *reason, int64_t now_ns);

#endif /* FQ_CONTROLLER_DETECTOR_ACT_H */
