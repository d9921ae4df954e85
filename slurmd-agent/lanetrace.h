/*
 * lanetrace: the route each TCP lane of a job step takes through the
 * fabric, traced with the lane's own 5-tuple (proto LaneRoute), so the
 * controller can attach a fabric incident to the steps whose lanes cross
 * its component (controller/detector_locate.c). ECMP hashes each TCP lane
 * by its own 5-tuple: the lane may cross a spine its NIC pair's probes
 * (tracer.h) never cross.
 *
 * Lanes come from the job's own lane reports (fq_lanetrace_lane): the
 * caller passes only those of the sending end, TCP, verified against the
 * kernel's socket table (sockcheck.h), with IPv4 "a.b.c.d:port" addresses
 * and a known NIC pair. A lane is keyed by job, step, ranks, lane number
 * and its 5-tuple (a reconnected lane is a new one). It is traced once when
 * first seen, again when its NIC pair's probe route changes
 * (fq_lanetrace_route_changed), and forgotten when not reported for
 * FQ_LANETRACE_FORGET_NS. The table holds FQ_LANETRACE_MAX_LANES lanes; a
 * lane that finds it full is not traced (-ENOSPC, counted as "full") until
 * forgotten ones make room.
 *
 * A trace sends bare TCP segments (probe_wire.h: the lane's addresses and
 * ports, flags ACK only, window 0, one random seq per trace, IP id = TTL)
 * on one send-only raw socket (AF_INET, SOCK_RAW, IPPROTO_RAW: the agent
 * writes the IPv4 header; it never receives, so the host's TCP traffic
 * pays nothing), with TTL 1 .. N, N the routers on the lane's NIC pair's
 * last whole route (fq_tracer_route; until there is one the lane waits).
 * TTL never exceeds N, so no segment reaches the far host: a stray ACK
 * there would make its TCP send duplicate ACKs into the live connection
 * and could trigger a retransmit. (This holds as ECMP's paths between two
 * NICs are equal in length, as equal cost means in a Clos fabric: a lane's
 * route has as many routers as its NIC pair's probes' route.) A lane whose NIC pair has no router
 * (N = 0) is reported with no hops and nothing sent. Segments leave with
 * the lane's source address as the kernel's route lookup source
 * (IP_PKTINFO), so source routing picks the lane's NIC.
 *
 * Routers answer ICMP time-exceeded quoting the segment; the tracer's raw
 * ICMP socket hands them over (fq_tracer_set_icmp_hook: no second ICMP
 * socket) and each is matched to its trace by (src, dst, sport, dport,
 * seq), its hop by the quoted IP id. A trace ends when all N hops answered
 * or after FQ_LANETRACE_TIMEOUT_NS; one with hops missing is retried after
 * FQ_LANETRACE_RETRY_NS, and after FQ_LANETRACE_TRIES in a row reported as
 * it is (0 where no router answered). At most FQ_LANETRACE_PER_TICK traces
 * start per 100 ms tick. A route is reported (the callback) when the lane's
 * trace is done, again only if a later trace finds it changed.
 *
 * Needs root (a raw socket; without, fq_lanetrace_create fails with EPERM)
 * and switches that answer time-exceeded. Runs on the caller's event base;
 * never blocks.
 */
#ifndef FQ_AGENT_LANETRACE_H
#define FQ_AGENT_LANETRACE_H

#include <event2/event.h>
#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "slurmd-agent/tracer.h"

#define FQ_LANETRACE_MAX_LANES  1024
#define FQ_LANETRACE_FORGET_NS  (60 * 1000000000LL) /* a lane not reported this long */
#define FQ_LANETRACE_TIMEOUT_NS (1000000000LL)      /* a trace's answers awaited */
#define FQ_LANETRACE_RETRY_NS   (10 * 1000000000LL) /* a trace with hops missing retried after */
#define FQ_LANETRACE_TRIES      3                   /* ... until this many in a row said so */
#define FQ_LANETRACE_PER_TICK   4
#define FQ_LANETRACE_LAST       64 /* last lane routes in the status */

/* A lane as its sending end reports it. */
struct fq_lane_id {
	uint64_t job_id;
	uint32_t step_id, src_rank, dst_rank, lane;
	char local_nic[16], remote_node[64], remote_nic[32];
	char local_address[64], remote_address[64]; /* "a.b.c.d:port" */
};

/* One lane's route. */
struct fq_lane_route {
	struct fq_lane_id id;
	uint32_t hops[FQ_TRACE_MAX_HOPS]; /* network order; 0: that router did not answer */
	unsigned n_hops;                  /* N: its NIC pair's routers */
	unsigned tries;                   /* traces it took (1 .. FQ_LANETRACE_TRIES) */
	int64_t traced_ns;                /* local raw: when the trace ended */
};

typedef void (*fq_lanetrace_fn)(void *arg, const struct fq_lane_route *r);

/* What a lane trace uses outside itself (injectable for tests). */
struct fq_lanetrace_ops {
	/* the routers on a NIC pair's whole route (N >= 0), or -ENOENT */
	int (*routers)(void *arg, const char *local_nic, const char *peer_node, const char *peer_nic);
	/* send one segment (pkt: FQ_LANE_SEGMENT_SIZE bytes, IPv4 header
	 * first) from src to dst (network order): 0 or a negative errno */
	int (*send)(void *arg, const uint8_t *pkt, size_t len, uint32_t src, uint32_t dst);
	void *arg;
};

/* Traces lanes with t's routes and ICMP socket (installs itself as t's ICMP
 * hook), sending on its own raw socket, ticking on base. NULL with errno:
 * EINVAL (no t or fn), EPERM (no raw socket: not root), ENOMEM. */
struct fq_lanetrace *fq_lanetrace_create(struct event_base *base, struct fq_tracer *t, fq_lanetrace_fn fn,
					 void *arg);
/* The same with ops and no event base nor socket: the caller drives
 * fq_lanetrace_tick and fq_lanetrace_icmp (tests). */
struct fq_lanetrace *fq_lanetrace_create_with(const struct fq_lanetrace_ops *ops, fq_lanetrace_fn fn,
					      void *arg);
void fq_lanetrace_destroy(struct fq_lanetrace *lt);

/* A lane report (see above for which) at now (local raw). 0, -EINVAL (an
 * address not IPv4:port, no NIC pair), -ENOSPC (table full: not traced).
 * lt NULL: 0, nothing. */
int fq_lanetrace_lane(struct fq_lanetrace *lt, const struct fq_lane_id *id, int64_t now);

/* Trace the lanes of this NIC pair again (its probe route changed). */
void fq_lanetrace_route_changed(struct fq_lanetrace *lt, const char *local_nic, const char *peer_node,
				const char *peer_nic);

/* Expire, time out and start traces (every 100 ms on the event base). */
void fq_lanetrace_tick(struct fq_lanetrace *lt, int64_t now);

/* One raw ICMP packet (IPv4 header first) received at now. */
void fq_lanetrace_icmp(struct fq_lanetrace *lt, const uint8_t *pkt, size_t len, int64_t now);

/* {"lanes": N, "traces": N, "whole": N, "partial": N, "reported": N,
 * "segments": N, "send_errors": N, "answers": N, "unmatched": N,
 * "waiting": N, "full": N, "routes": [the last FQ_LANETRACE_LAST]}. */
struct json_object *fq_lanetrace_status(const struct fq_lanetrace *lt);

#endif /* FQ_AGENT_LANETRACE_H */
