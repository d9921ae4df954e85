/*
 * rates: sending rates assigned by the controller between network classes
 * (issue 20, QoS between jobs), from its view of who shares which link.
 * Pure: no I/O, no clock (times are parameters), so tests feed it lanes,
 * routes and steps and read the advice it gives.
 *
 * Inputs. Each job step's class (StepStart: net_class, net_class_prio,
 * net_class_weight) ranks it: a priority class by its prio (0 first), a
 * weight class and a step without a class below every priority class
 * (FQ_RATES_RANK_SHARED, where the fabric's own scheduling puts them), a
 * step without a class weighing 1. The sending end's lane reports give
 * each lane's throughput (bytes over the interval) and its path's queueing
 * delay (the TCP socket's srtt over its min_rtt, as pacing reads it). A
 * lane's links: its sending NIC's own ("node/nic>"), its receiving NIC's
 * (">node/nic"), and between them each pair of consecutive routers of its
 * route ("a>b", the addresses the routers answered from): the lane's own
 * traced route (LaneRoute) where there is one, else its NIC pair's probe
 * route (PathTrace), else only the two NICs' links. Directed: the two
 * directions of a cable are two links.
 *
 * The rule, each tick (the controller's report interval), per link:
 *   - a class is active on it if one of its lanes moved at least
 *     active_rate (over its reports since the last tick; a lane whose
 *     report this tick missed keeps its last rate for that one tick: the
 *     reports come on the lanes' own clocks); the top rank is the best
 *     active one; the link is shared when a lane of a lower rank is
 *     active beside it;
 *   - congested when a lane on it had a queueing delay above
 *     congest_delay_ns; its capacity estimate C is the largest but one of
 *     its last 9 congested ticks' sums of what its lanes delivered (what
 *     the far end's transport acknowledged, as the sending end reports
 *     it; else the receiving end's report; a lane with neither counts
 *     what it sent). A tick that counts a lane's figure of an earlier
 *     tick (its report late) or what a lane sent where its delivered
 *     figure is late is no sample: two intervals' peaks on top of each
 *     other read above the link;
 *   - a shared link that is congested becomes managed, and stays so while
 *     it is shared (hold_ns past the last shared tick: a latency job
 *     between two bursts is still there): the lower ranks' lanes get, all
 *     together, B = max(min_share x C, util x C - T), T the top rank's
 *     throughput on it; B is split between the lower classes by weight
 *     (a priority class below the top weighs 1) and within a class evenly
 *     between its lanes on the link that were active within hold_ns (a
 *     lane idle a tick keeps its share). Once capped the link is no longer
 *     congested, which is the point: it stays managed by being shared.
 * A lane's rate is the least of its managed links'; a lane that no
 * managed link gives one keeps its last for hold_ns, then none. The
 * advice is per path, as the agent's path page holds it: the job's lanes
 * from one sending NIC to one remote NIC get the least of their rates.
 *
 * Output: advice for the sending node's agent (proto Advice kind "rate"):
 * given when new, when it changed by more than change, and renewed every
 * renew_ns (lifetime_ns from receipt); a lift (rate 0) once a path's lanes
 * have none.
 */
#ifndef FQ_CONTROLLER_RATES_H
#define FQ_CONTROLLER_RATES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FQ_RATES_RANK_SHARED 7 /* weight classes and steps without a class */
#define FQ_RATES_MAX_HOPS    16

struct fq_rates_config {
	double util;              /* the link's share the classes fill together (0.95) */
	double min_share;         /* the lower classes keep at least this share of it (0.1) */
	int64_t congest_delay_ns; /* a lane's queueing delay above this: congested (2 ms) */
	uint64_t active_rate;     /* bytes/s: a lane moving less in a tick is idle there (100 kB/s) */
	int64_t hold_ns;          /* a link stays managed this long after its last shared tick (5 s) */
	int64_t lifetime_ns;      /* an advice lapses this long after receipt unless renewed (10 s) */
	int64_t renew_ns;         /* an unchanged advice is sent again this often (3 s) */
	double change;            /* ... a changed one at once, past this fraction (0.1) */
	int64_t stale_ns;         /* a lane unreported this long is gone (5 s) */
	int64_t link_forget_ns;   /* a link no lane crossed this long is forgotten (10 min) */
	size_t max_lanes;         /* lanes kept (65536); past it new ones are left out */
};

void fq_rates_config_defaults(struct fq_rates_config *c);

struct fq_rates;

/* NULL on -ENOMEM or a config out of range (util, min_share outside
 * (0, 1], times not positive). */
struct fq_rates *fq_rates_create(const struct fq_rates_config *c);
void fq_rates_destroy(struct fq_rates *r);

/* A step's class (StepStart): cls NULL or "": none (rank
 * FQ_RATES_RANK_SHARED, weight 1); weight > 0: a weight class; else a
 * priority class of prio. Again for the same step: replaced. 0 or -ENOMEM. */
int fq_rates_step(struct fq_rates *r, uint64_t job, uint32_t step, const char *cls, uint32_t prio,
		  uint32_t weight);
/* The step is gone: its lanes with it (their advice lifted at the next tick). */
void fq_rates_step_end(struct fq_rates *r, uint64_t job, uint32_t step);

/* One interval of a lane, from its sending end's report. */
struct fq_rates_lane {
	uint64_t job;
	uint32_t step, src_rank, dst_rank, lane;
	const char *node, *nic, *remote_node, *remote_nic; /* sending node and NIC, receiving ones */
	int64_t start_ns, end_ns;                          /* the interval (its length is what counts) */
	uint64_t bytes;
	uint32_t rtt_us, min_rtt_us; /* the socket's srtt and min_rtt; 0: unknown */
	/* the bytes the far end's transport acknowledged in the interval
	 * (TCP: tcpi_bytes_acked's growth; 0: not known): what the lane
	 * delivered, which the capacity estimate reads before the receiving
	 * end's report */
	uint64_t acked_bytes;
	int64_t now_ns; /* when it arrived */
};
/* 0, -EINVAL (no job, names missing or too long), -ENOSPC (max_lanes), -ENOMEM. */
int fq_rates_lane(struct fq_rates *r, const struct fq_rates_lane *l);

/* One interval of a lane from its receiving end's report: the bytes it
 * delivered, which only the capacity estimate reads, and only for a lane
 * whose sending end does not report them acknowledged (an IB lane: what
 * the receiving process got, when it got to it). 0 (taken or, the sender
 * counting them, not needed), -EINVAL, or -ENOENT: the lane's sending
 * end has not reported (its links are not known), the bytes are not
 * kept. */
int fq_rates_lane_delivered(struct fq_rates *r, uint64_t job, uint32_t step, uint32_t src_rank,
			    uint32_t dst_rank, uint32_t lane, int64_t start_ns, int64_t end_ns,
			    uint64_t bytes);

/* A lane's own route (LaneRoute): the routers' addresses, "" where none
 * answered. Kept with the lane (one reported later: kept for it). */
int fq_rates_lane_route(struct fq_rates *r, uint64_t job, uint32_t step, uint32_t src_rank, uint32_t dst_rank,
			uint32_t lane, const char *const *hops, size_t n);
/* A NIC pair's probe route (PathTrace), the route of its lanes that have
 * none of their own. */
int fq_rates_path_route(struct fq_rates *r, const char *node, const char *nic, const char *remote_node,
			const char *remote_nic, const char *const *hops, size_t n);

/* Evaluate the rule (once per report window); the advice it gives is
 * then taken with fq_rates_next. */
void fq_rates_tick(struct fq_rates *r, int64_t now_ns);

struct fq_rates_advice {
	uint64_t job;
	const char *node, *nic, *remote_node, *remote_nic; /* to node's agent: its lanes nic -> remote */
	uint64_t rate;                                     /* bytes/s per lane; 0: lifted */
	int64_t lifetime_ns;
	uint64_t for_job;  /* the top rank's job on the link that set it (0: a lift) */
	const char *link;  /* that link ("" for a lift) */
	uint64_t capacity; /* its capacity estimate, bytes/s */
	bool renew;        /* the same rate as last sent, again before it lapses */
};
/* The next advice of the last tick: 1 and *a (valid until the next tick),
 * or 0. */
int fq_rates_next(struct fq_rates *r, struct fq_rates_advice *a);

/* After the last tick: the links managed, the lanes capped (tests and
 * diagnostics; not in /metrics yet). */
size_t fq_rates_managed_links(const struct fq_rates *r);
size_t fq_rates_capped_lanes(const struct fq_rates *r);

#endif /* FQ_CONTROLLER_RATES_H */
