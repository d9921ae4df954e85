/*
 * tracer: the route each probed path takes through the fabric, found as
 * traceroute does, for the controller's topology (controller/topology.h).
 *
 * A trace of one path sends TRACE probes (probe_wire.h) with TTL 1, 2, ...
 * max_ttl at once from the path's own probe socket (prober.h), so they
 * carry the probes' 5-tuple and take the probes' ECMP route. Each router
 * whose TTL ends answers ICMP time-exceeded (its address: the interface
 * the probe came in on, on switches that answer so; Linux:
 * net.ipv4.icmp_errors_use_inbound_ifaddr=1), and the far agent echoes the
 * first that reaches it. The route is the routers at TTL 1 .. k-1, k the
 * lowest TTL echoed ("reached"). Routers' answers are read on a raw ICMP
 * socket (CAP_NET_RAW: the agent runs as root), which sees only
 * time-exceeded; each is matched to its trace by the probe it quotes.
 *
 * Each flow of a path (prober.h: its own UDP ports, so its own ECMP route)
 * is traced apart, once established (the peer answers it), as a path of
 * its own here; fq_tracer_route gives flow 0's.
 *
 * Traces are light: a path is traced when it is first probed, when its
 * path comes back UP (its route may be new), when it lost probes (at most
 * once per SUSPECT_NS: a link went down and the routes re-converged, or
 * one drops packets), when another of the agent's paths changed route, or
 * the controller says one of any agent's did (fq_tracer_retrace: a fabric
 * that changed re-hashes many flows), and every interval_ns, at
 * most per_tick traces started per 100 ms tick, so a router answers a
 * handful of time-exceeded per second per source (switches rate-limit
 * them). A path that is DOWN is not traced.
 *
 * A route is reported (the callback) when it is first known, when it
 * changes, and again every resend_ns. A trace with hops missing (a
 * router's answer lost or rate-limited) or not reached is retried after
 * retry_ns, and counts as the route only when three in a row say so.
 * Runs on the caller's event base; never blocks.
 */
#ifndef FQ_AGENT_TRACER_H
#define FQ_AGENT_TRACER_H

#include <event2/event.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "slurmd-agent/prober.h"

#define FQ_TRACE_MAX_HOPS 16

struct fq_tracer_config {
	unsigned max_ttl;    /* highest TTL tried (8; at most FQ_TRACE_MAX_HOPS) */
	int64_t interval_ns; /* each path traced again this often (60 s) */
	int64_t timeout_ns;  /* a trace's answers awaited this long (1 s) */
	int64_t retry_ns;    /* a trace that was not whole is retried after this (10 s) */
	int64_t resend_ns;   /* an unchanged route is reported again this often (1 h) */
	unsigned per_tick;   /* traces started per 100 ms tick (2) */
};

void fq_tracer_config_defaults(struct fq_tracer_config *c);

/* One path's route: one of its probe flows' (prober.h), each traced
 * apart with that flow's 5-tuple. */
struct fq_route {
	char local_nic[16], peer_node[64], peer_nic[32];
	unsigned flow;
	uint32_t hops[FQ_TRACE_MAX_HOPS]; /* network order; 0: that router did not answer */
	unsigned n_hops;
	bool reached;      /* the far agent echoed at TTL n_hops + 1 */
	int64_t traced_ns; /* local raw: when the trace ended */
};

/* A route to report: changed is false for a periodic resend. */
typedef void (*fq_tracer_route_fn)(void *arg, const struct fq_route *r, bool changed);

/* Traces p's paths; installs itself as p's trace hook. NULL with errno:
 * EINVAL (config), EPERM (no raw socket: not root), ENOMEM. */
struct fq_tracer *fq_tracer_create(struct event_base *base, struct fq_prober *p,
				   const struct fq_tracer_config *c, fq_tracer_route_fn fn, void *arg);
void fq_tracer_destroy(struct fq_tracer *t);

/* Report every known route again (changed false): a new controller
 * session. NULL: nothing. */
void fq_tracer_resend(struct fq_tracer *t);

/* Trace this path's flows soon: it came back UP (soon: now), or it lost
 * probes (suspect: no sooner than SUSPECT_NS after each one's last trace
 * began). */
void fq_tracer_poke(struct fq_tracer *t, const char *local_nic, const char *peer_node, const char *peer_nic);
void fq_tracer_suspect(struct fq_tracer *t, const char *local_nic, const char *peer_node,
		       const char *peer_nic);

/* Trace every path again soon (the fabric's routes changed). NULL: nothing. */
void fq_tracer_retrace(struct fq_tracer *t);

/* The last route reported for the path (local_nic, peer_node, peer_nic),
 * its flow 0, into *out: 0, or -ENOENT when there is none that is whole and reached
 * (every router answered and the far agent echoed): a lane trace
 * (lanetrace.h) sends no further than that route's routers. */
int fq_tracer_route(const struct fq_tracer *t, const char *local_nic, const char *peer_node,
		    const char *peer_nic, struct fq_route *out);

/* Time-exceeded packets read on the tracer's raw ICMP socket that are not
 * answers to its own TRACE probes (fq_trace_icmp_parse refuses them) go to
 * fn (lane traces' answers: lanetrace.h), with their length and receive
 * time (local raw). One hook; fn NULL: none (such packets are counted as
 * icmp_unmatched). */
typedef void (*fq_tracer_icmp_fn)(void *arg, const uint8_t *pkt, size_t len, int64_t rx_ns);
void fq_tracer_set_icmp_hook(struct fq_tracer *t, fq_tracer_icmp_fn fn, void *arg);

/* {"traces": N, "whole": N, "partial": N, "changes": N, "routes": [...]}: the
 * agent's status. */
struct json_object *fq_tracer_status(const struct fq_tracer *t);

#endif /* FQ_AGENT_TRACER_H */
