/*
 * prober_int: the prober's state, shared by its files: prober.c (the
 * probe exchange, liveness, traces sent and answered) and prober_report.c
 * (each report window's figures and the counters). Not a contract outside
 * the prober.
 */
#ifndef FQ_AGENT_PROBER_INT_H
#define FQ_AGENT_PROBER_INT_H

#include <event2/event.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/clock.h"
#include "slurmd-agent/clock_fit.h"
#include "slurmd-agent/path.h"
#include "slurmd-agent/probe_transport.h"
#include "slurmd-agent/prober.h"

#define MAX_NICS       16
#define MAX_PATHS      FQ_PROBER_MAX_PATHS
#define PENDING        64   /* pairs in flight per path */
#define TX_RING        4096 /* sends awaiting their TX stamp, per NIC */
#define RESPONDERS     256  /* requests being answered, per NIC */
#define WINDOW_SAMPLES 1024
#define FLOW_SAMPLES   256 /* a flow's share of a window */
#define MAX_FLOWS      FQ_PROBER_MAX_FLOWS
/* A flow not established (never answered: a peer without it) is tried one
 * turn in this many; its other turns go to flow 0. */
#define FLOW_TRY_EVERY 16
/* A path DOWN this long (its peer's agent away: it may come back with
 * fewer flows) has its flows above 0 established anew. Not a flow silent
 * alone: that is a fault on its route, to be reported as long as it lasts. */
#define FLOW_RESET_NS (5 * FQ_NSEC_PER_SEC)
#define CHECK_NS      (5 * 1000000LL)
#define LOST_AFTER_NS (1000 * 1000000LL)
/* How fast a held estimate's bound grows with age: what an oscillator can
 * wander beyond the fitted drift (0.1 ppm). */
#define HOLD_AGING_PPB 100
/* A window's drift (4 s of microsecond noise) is too noisy to extrapolate
 * minutes ahead; two accepted estimates this far apart give a drift with
 * noise below 0.02 ppm. */
#define ANCHOR_NS (30 * FQ_NSEC_PER_SEC)

enum tx_role {
	TX_NONE,
	TX_REQ,
	TX_RESP
};

struct tx_meta {
	enum tx_role role;
	uint32_t key; /* the transport's key of this send (probe_transport.h) */
	unsigned ref; /* path index (REQ) or responder slot (RESP) */
	uint64_t pair;
	uint8_t index;
};

/* A pair we asked for: stamps on our clock (s: TX of REQ, a: RX of RESP)
 * and on the peer's (r: its RX of REQ, b: its TX of RESP). */
struct pending {
	uint64_t pair;
	int64_t sent_ns;
	int64_t s[2], r[2], a[2], b[2];
	uint8_t have; /* bits: s0 s1 resp0 resp1 followup */
	uint8_t used;
	uint8_t flow; /* the flow it went on */
	bool counted; /* its flow was established when sent: counts as sent, lost */
};

#define HAVE_S0  0x01
#define HAVE_S1  0x02
#define HAVE_A0  0x04
#define HAVE_A1  0x08
#define HAVE_B   0x10
#define HAVE_ALL 0x1f

/* A request we answer: its RX stamps, then our RESP TX stamps for the FOLLOWUP. */
struct responder {
	struct fq_peer_addr from;
	uint32_t session;
	uint64_t pair;
	int64_t rx[2], tx[2];
	uint8_t have; /* bits: rx0 rx1 tx0 tx1 */
	uint8_t used;
};

struct samples {
	int64_t v[WINDOW_SAMPLES];
	unsigned n;
};

struct fsamples {
	int64_t v[FLOW_SAMPLES];
	unsigned n;
};

/* One flow of a path: this report window's figures (fwd/rev raw, as the
 * path's). */
struct flow {
	bool established;
	unsigned tries; /* turns while not established */
	uint64_t sent, answered, lost;
	struct fsamples fwd, rev;
};

struct path {
	struct nic *nic;                 /* the NIC (its flow 0 socket) */
	struct fq_clock_estimate held;   /* the best recent estimate (held.at_ns == 0: none) */
	struct fq_clock_estimate anchor; /* an accepted estimate >= ANCHOR_NS older than `held` */
	int64_t long_baseline_ns;        /* that baseline (0: none yet) */
	char peer_node[64], peer_nic[32];
	struct fq_peer_addr addr;
	struct fq_path live;
	int64_t window_start_ns;
	bool peer_epoch_valid;
	int64_t peer_epoch_ns; /* the peer's global - local, from its last FOLLOWUP */
	struct fq_clock_fit *fit;
	struct pending pend[PENDING];
	/* this report window */
	uint64_t sent, answered, lost, pure_fwd, pure_rev;
	struct samples fwd, rev, rtt; /* raw fwd/rev differences; rtt */
	struct flow flows[MAX_FLOWS]; /* nic->n_flows of them */
	unsigned next_flow;
};

/* One probe socket: a NIC's flow 0 (in fq_prober.nics) or a further flow
 * (allocated, in its NIC's flow[]). */
struct nic {
	struct fq_prober *p;
	struct nic *base; /* the NIC's flow 0 socket (itself there) */
	unsigned flow;
	struct nic *flow_sock[MAX_FLOWS]; /* base only: flow k's socket ([0]: itself) */
	unsigned n_flows;                 /* base only */
	char name[IF_NAMESIZE];
	struct fq_probe_transport *tp; /* UDP or UD (probe_transport.h) */
	struct event *ev;
	struct tx_meta tx[TX_RING];
	struct responder resp[RESPONDERS];
	unsigned resp_next;
};

struct fq_prober {
	struct event_base *base;
	struct fq_prober_config cfg;
	fq_prober_event_fn on_event;
	void *arg;
	uint32_t session;
	uint64_t next_pair;
	struct nic nics[MAX_NICS];
	unsigned n_nics;
	struct path paths[MAX_PATHS];
	unsigned n_paths, next_probe;
	struct event *probe_ev, *check_ev;
	/* The probe tick's mean (probe_interval over the live paths); each
	 * tick is drawn uniformly from half to one and a half of it (rnd: its
	 * xorshift state), so that agents sharing one clock do not lock their
	 * pairs into a fixed phase with each other's. */
	int64_t tick_ns;
	uint64_t rnd;
	uint64_t bad_packets, unknown_sender, stale_session, no_tx_stamp, tx_key_mismatch;
	/* The check tick's own lateness: a loop that did not run (the host
	 * starved the agent) neither probed nor read answers, so its silence
	 * is no path's. After a late tick no path is judged until hold_ns. */
	int64_t last_check_ns, hold_ns;
	fq_prober_stall_fn on_stall; /* told of each such stall */
	void *stall_arg;
	uint64_t loop_stalls;
	bool epoch_valid;
	int64_t epoch_ns;
	fq_prober_trace_fn on_trace; /* path traces' answers (tracer.h) */
	void *trace_arg;
};

#endif /* FQ_AGENT_PROBER_INT_H */
