/*
 * prober: the probe mesh of one agent — UDP sockets per local NIC with
 * kernel timestamps, the coded-pair exchange (probe_wire.h) as requester
 * and responder, per-path liveness (path.h) and clock fits (clock_fit.h).
 *
 * Runs on the caller's libevent base; never blocks. All times are this
 * host's CLOCK_MONOTONIC_RAW; kernel stamps (CLOCK_REALTIME) are mapped
 * onto it with a cross-timestamp refreshed every report.
 */
#ifndef FQ_AGENT_PROBER_H
#define FQ_AGENT_PROBER_H

#include <event2/event.h>
#include <json-c/json.h>
#include <stdint.h>

#include "slurmd-agent/clock_fit.h"

struct fq_prober;

struct fq_prober_config {
	const char *node;
	uint16_t port;
	int64_t probe_interval_ns; /* per path */
	int64_t guard_ns;          /* coded-pair purity band */
	int64_t window_ns, bucket_ns;
	int64_t down_after_ns;
};

/* A path event, for the caller to log and report. */
typedef void (*fq_prober_event_fn)(void *arg, const char *local_nic, const char *peer_node,
				   const char *peer_nic, int up, int64_t silent_since_real_ns,
				   int64_t detected_real_ns);

struct fq_prober *fq_prober_create(struct event_base *base, const struct fq_prober_config *cfg,
				   fq_prober_event_fn on_event, void *arg);
void fq_prober_destroy(struct fq_prober *p);

/* Open the probe socket on a local NIC (bound to its first IPv4 address
 * and to the device). 0 or a negative errno (logged with the NIC name). */
int fq_prober_add_nic(struct fq_prober *p, const char *ifname);

/* Probe peer_node's peer_nic at addr (IPv4) from the local NIC of the same
 * name, or from local_nic when given. 0, -ENODEV (no such local NIC), -EINVAL. */
int fq_prober_add_peer(struct fq_prober *p, const char *local_nic, const char *peer_node,
		       const char *peer_nic, const char *addr);

/* Start probing and checking. */
int fq_prober_start(struct fq_prober *p);

/* Close the current report window: a JSON array of paths (stats of the
 * window, state, flaps, clock estimate); the window's counters reset. The
 * caller owns the returned object. */
struct json_object *fq_prober_report(struct fq_prober *p);

/* Counters of input refused since start (malformed, unknown sender, ...). */
struct json_object *fq_prober_counters(const struct fq_prober *p);

#endif /* FQ_AGENT_PROBER_H */
