/*
 * comm: what the send and receive sides of a connection share (send.c,
 * recv.c, failover.c, setup.c): the comm base (its context, lanes,
 * per-lane statistics, control-mode lane state, sticky error) and the
 * request object.
 */
#ifndef FQN_COMM_H
#define FQN_COMM_H

#include <stdint.h>
#include <sys/socket.h>

#include "nccl-plugin/control/failover.h"
#include "nccl-plugin/control/lane_fsm.h"
#include "nccl-plugin/core/net.h"
#include "nccl-plugin/env.h"
#include "nccl-plugin/hist.h"
#include "nccl-plugin/lanes/lane.h"

struct fqn_ctx;

/* Per-lane statistics of the current telemetry interval. */
struct fqn_lane_stats {
	uint64_t bytes, chunks, msgs;
	int unsync;             /* some stamp of the interval was local */
	int64_t interval_start; /* fqn_clock_now() */
	int64_t throttled_ns;   /* sender: time in the interval its rate was capped (pacing) */
	uint64_t assigned_rate; /* sender: the controller's rate for it now, bytes/s (0: none) */
	int64_t assigned_ns;    /* sender: time in the interval it had one */
	/* sender: the lane's bytes_acked (fqn_lane_info) at the interval's
	 * start, and which lane read it (one replaced starts anew) */
	uint64_t acked_base;
	const struct fqn_lane *acked_lane;
	struct fqn_hist owd; /* receiver only */
};

enum fqn_req_kind {
	FQN_REQ_SEND = 1,
	FQN_REQ_RECV,
	FQN_REQ_FLUSH
};
enum fqn_req_state {
	FQN_REQ_FREE = 0,
	FQN_REQ_ACTIVE,
	FQN_REQ_DONE
};

/* Control mode: a lane's state (lane_fsm.h, changed only by its steps) and what goes with it. */
struct fqn_lane_ctl {
	struct fqn_lane_fsm fsm; /* times: CLOCK_MONOTONIC */
	int64_t down_ns;         /* failed at; 0 while up */
	int64_t progress_ns;     /* sender: last ack that advanced, or when data became outstanding */
	const char *cause;       /* why it last failed */
	int last_err;            /* and the errno, 0 if none (path down, no progress) */
	char nic[16];            /* local NIC name: the path page's key, events */
	uint32_t remote_ipv4;    /* network order, 0: not IPv4 (no path lookups) */
	char local[64], peer[64];
	struct sockaddr_storage bind_addr, rejoin_addr; /* sender: where it re-dials from and to */
	int can_rejoin;
	uint64_t rx_count, ack_sent; /* receiver: chunks taken off this socket, last count acked */
	int ack_owed;                /* receiver: a fresh socket's first ack is due */
	int reported;                /* receiver: this end reported the lane's failure; its failback is due */
};

struct fqn_comm {
	struct fqn_ctx *ctx; /* the context it was made under (ctx.h) */
	int is_send;
	int dev;
	int nlanes;
	size_t chunk_size;
	struct fqn_lane *lanes[FQN_MAX_LANES];
	struct fqn_lane_stats stats[FQN_MAX_LANES];
	int64_t interval_ns; /* telemetry interval, 0: off */
	int err;             /* sticky negative errno */
	int err_lane;        /* lane that failed */
	uint64_t conn_id;
	/* control mode (FABRICIQ_MODE=control on both ends) */
	int control;
	uint64_t token; /* the listener's: proves a re-dialed lane belongs here */
	struct fqn_lane_ctl lc[FQN_MAX_LANES];
	struct fqn_failover_cfg fo; /* the failover decisions' settings (control/failover.h) */
	int64_t all_down_ns;        /* when the last lane went down; 0: some lane is up */
	int64_t next_path_ns;       /* next path page check */
	uint64_t failovers, failbacks;
	uint32_t peer_rank1; /* the other end's global rank + 1 (0: unknown) */
	/* the lanes' traffic class, -1: the kernel's default. The job's
	 * network class (FABRICIQ_DSCP) on both comms, so the receiving end's
	 * TCP ACKs and control-mode acks travel in the class too (a queue
	 * that delays them delays the sender's completions); else NCCL's
	 * trafficClass on a send comm. */
	int tclass;
};

/* Lane i's traffic class from c->tclass (nothing when -1); a lane that
 * refuses is a WARN (a QoS hint, not an error). */
void fqn_comm_apply_tclass(struct fqn_comm *c, int i);

struct fqn_req {
	enum fqn_req_kind kind;
	enum fqn_req_state state;
	struct fqn_comm *comm;
	uint64_t seq; /* send: the message; recv: the first of n */
	int n;
	int matched; /* recv: bitmask of buffers taken by a message */
	int msgs_left;
	void *data[FQN_MAX_RECVS];
	size_t cap[FQN_MAX_RECVS];  /* send: the size */
	size_t size[FQN_MAX_RECVS]; /* received sizes */
	int tags[FQN_MAX_RECVS];
	uint64_t chunks_left; /* send */
};

/* Record the comm's first error and log it once: what failed, the peer,
 * the lane, the errno text. Returns err. */
int fqn_comm_fail(struct fqn_comm *c, int lane, int err, const char *what);

/* Telemetry: close lane i's interval if `now` (a chunk's stamp) is past
 * its end, or if force and it carried anything; hands the sample to the
 * telemetry thread without blocking. A no-op when telemetry is off. */
void fqn_comm_tick(struct fqn_comm *c, int i, int64_t now, int force);

/* Set up the per-lane statistics of a new comm. */
void fqn_comm_stats_init(struct fqn_comm *c);

/* Report the last intervals and close the lanes; the caller frees the comm. */
void fqn_comm_release(struct fqn_comm *c);

#endif /* FQN_COMM_H */
