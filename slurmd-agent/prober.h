/*
 * prober: the probe mesh of one agent — one probe transport per local NIC
 * (probe_transport.h: UDP with kernel timestamps where the NIC has an IPv4
 * address, InfiniBand UD with NIC completion timestamps where it has none),
 * the coded-pair exchange (probe_wire.h) as requester and responder,
 * per-path liveness (path.h) and clock fits (clock_fit.h). The pair logic
 * is the same over both transports.
 *
 * Runs on the caller's libevent base; never blocks. All times are this
 * host's CLOCK_MONOTONIC_RAW; the transports map kernel stamps
 * (CLOCK_REALTIME) and NIC clocks onto it with cross-timestamps.
 */
#ifndef FQ_AGENT_PROBER_H
#define FQ_AGENT_PROBER_H

#include <event2/event.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
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
	const char *sysfs; /* where RDMA ports are looked up; NULL: "/sys" */
	/* Probe flows per UDP NIC (0 or 1: one): flow k's probes go from
	 * local port port+k to the peer's port+k, so ECMP hashes each flow on
	 * its own route; pairs go round-robin over a path's flows (the path's
	 * rate stays probe_interval). A UD NIC has one. */
	unsigned flows;
};

#define FQ_PROBER_MAX_FLOWS 8

/* A path event, for the caller to log and report. Times on the local raw
 * clock: since = the last answer before the silence (DOWN) or the first
 * answer after it (UP); detected = when the prober decided. */
typedef void (*fq_prober_event_fn)(void *arg, const char *local_nic, const char *peer_node,
				   const char *peer_nic, int up, int64_t since_ns, int64_t detected_ns);

struct fq_owd_stats {
	unsigned n; /* samples; 0: the rest is 0 */
	int64_t min, p50, p90, p99, max;
};

/*
 * One flow of a path over one report window. A flow other than 0 counts
 * once established (its first answer): a peer before flows, or one with
 * fewer, never answers it, and such a flow is then tried only now and then
 * and counted nowhere (not sent, not lost). Delays corrected as the
 * path's.
 */
struct fq_flow_report {
	bool established;
	uint16_t port; /* local = remote UDP port */
	uint64_t sent, answered, lost;
	struct fq_owd_stats fwd, rev;
};

/* One path over one report window. */
struct fq_path_report {
	char local_nic[16], peer_node[64], peer_nic[32];
	char peer_addr[80]; /* IPv4, or "ud:lid=../qpn=.." (FQ_PEER_ADDR_STRLEN) */
	uint32_t peer_ipv4; /* network order; 0 for a UD peer */
	bool up;
	int64_t changed_ns; /* last UP/DOWN transition (local raw) */
	unsigned flaps_last_hour;
	uint64_t flaps_total;
	uint64_t sent, answered, lost, pure_fwd, pure_rev;
	/* one-way delays corrected by the pairwise offset estimate (so they
	 * need only this pair's sync), and the round trip */
	struct fq_owd_stats fwd, rev, rtt;
	bool synchronised; /* est is valid */
	bool held;         /* est is a held (extrapolated) estimate */
	struct fq_clock_estimate est;
	int64_t window_start_ns, window_end_ns; /* local raw */
	bool peer_epoch_valid;                  /* the peer publishes a global timeline ... */
	int64_t peer_epoch_ns;                  /* ... at this global - local offset */
	/* its flows (1 .. FQ_PROBER_MAX_FLOWS; fq_prober_states fills only
	 * n_flows and each one's established and port); sent, answered, lost
	 * and the delays above are all established flows together */
	unsigned n_flows;
	struct fq_flow_report flows[FQ_PROBER_MAX_FLOWS];
};

struct fq_prober *fq_prober_create(struct event_base *base, const struct fq_prober_config *cfg,
				   fq_prober_event_fn on_event, void *arg);
void fq_prober_destroy(struct fq_prober *p);

/* Open the probe transport on a local NIC: UDP bound to its first IPv4
 * address and to the device; with no IPv4 address, UD on its RDMA port
 * (a netdev of an RDMA device, or a device name "mlx5_0" / "mlx5_0.2").
 * 0 or a negative errno (logged with the NIC name): see
 * fq_probe_transport_open() (probe_open.h). A UDP NIC also gets its
 * further flows' sockets (cfg.flows), on port+1 ...; one that cannot be
 * opened (the port in use) leaves the NIC with the flows before it
 * (logged). */
int fq_prober_add_nic(struct fq_prober *p, const char *ifname);

/* Add a NIC with a transport the caller opened (named tp->nic; tests use
 * an in-memory one). The prober owns tp from here, also on failure. 0,
 * -EEXIST (a NIC of that name), -EINVAL (too many), -ENOMEM. */
struct fq_probe_transport;
int fq_prober_add_transport(struct fq_prober *p, struct fq_probe_transport *tp);

/* Add tp as the next flow of the NIC it names (added before; tests use an
 * in-memory one). The prober owns tp from here, also on failure. 0,
 * -ENODEV, -EINVAL (FQ_PROBER_MAX_FLOWS reached, or a peer is probed
 * already), -ENOMEM. */
int fq_prober_add_flow_transport(struct fq_prober *p, struct fq_probe_transport *tp);

/* The address peers must give to probe this host's NIC (IPv4, or
 * "ud:lid=0x12/qpn=0x48" / "ud:gid=.../qpn=..." for UD: the QPN is new at
 * each start). 0 or -ENODEV. */
int fq_prober_nic_address(const struct fq_prober *p, const char *nic, char *buf, size_t len);

/* Probe peer_node's peer_nic at addr from the local NIC of the same name,
 * or from local_nic when given. addr: IPv4 for a UDP NIC, "ud:..." (see
 * fq_peer_addr_parse) for a UD one. 0, -ENODEV (no such local NIC),
 * -EINVAL, -EAFNOSUPPORT (address of the other transport's kind), -EEXIST
 * (already probed from that NIC), -ENOSPC. Only known peers' probes are
 * answered. */
int fq_prober_add_peer(struct fq_prober *p, const char *local_nic, const char *peer_node,
		       const char *peer_nic, const char *addr);

/* Stop probing addr (same forms) from local_nic (its state is forgotten). 0, -ENODEV,
 * -EINVAL, -ENOENT. */
int fq_prober_remove_peer(struct fq_prober *p, const char *local_nic, const char *addr);

/* Start probing and checking. */
int fq_prober_start(struct fq_prober *p);

/* Close the current report window of every path: up to cap reports into
 * out (returns how many); the window's counters reset. */
size_t fq_prober_report(struct fq_prober *p, struct fq_path_report *out, size_t cap);

/* The paths' names and UP/DOWN state only (the window is not touched). */
size_t fq_prober_states(const struct fq_prober *p, struct fq_path_report *out, size_t cap);

#define FQ_PROBER_MAX_PATHS 256

/*
 * Path traces (tracer.h drives them): a TRACE probe (probe_wire.h) goes
 * from the path's own socket, so its 5-tuple and ECMP route are the
 * probes', with the IP TTL set to ttl. The far agent's echo comes to the
 * hook (the routers' time-exceeded the tracer reads itself). Only known
 * peers' TRACEs are echoed, as only their requests are answered.
 */
typedef void (*fq_prober_trace_fn)(void *arg, const char *local_nic, const char *peer_node,
				   const char *peer_nic, unsigned flow, uint64_t id, unsigned ttl,
				   int64_t rx_ns);
void fq_prober_set_trace_hook(struct fq_prober *p, fq_prober_trace_fn fn, void *arg);

/* Send trace probe `id` with TTL ttl (1..FQ_PROBE_TRACE_TTL_MAX) on the
 * path local_nic -> peer_node:peer_nic, from its flow's socket to the
 * flow's port (so it takes that flow's route). 0, -ENOENT (no such path
 * or flow), -EOPNOTSUPP (its transport cannot set a TTL: UD), -EINVAL, or
 * the send's error. */
int fq_prober_send_trace(struct fq_prober *p, const char *local_nic, const char *peer_node,
			 const char *peer_nic, unsigned flow, uint64_t id, unsigned ttl);

/* The agent's own loop stood still (a check tick late: its host gave it
 * no CPU) from start_ns to end_ns (local raw), told once it runs again:
 * its peers saw no answer meanwhile, and the controller is to know why. */
typedef void (*fq_prober_stall_fn)(void *arg, int64_t start_ns, int64_t end_ns);
void fq_prober_set_stall_hook(struct fq_prober *p, fq_prober_stall_fn fn, void *arg);

/* What this host's answers tell its peers of its global timeline (the
 * clock page's global - local offset now; valid false: unsynchronised). */
void fq_prober_set_epoch(struct fq_prober *p, bool valid, int64_t global_minus_local_ns);

/* Counters of input refused since start (malformed, unknown sender, ...). */
struct json_object *fq_prober_counters(const struct fq_prober *p);

#endif /* FQ_AGENT_PROBER_H */
