/*
 * send_priv: the send comm's inside, shared by send.c (the data path,
 * control mode's acks, failover and re-dials) and send_steer.c (steering).
 * Nothing else includes it.
 */
#ifndef FQN_SEND_PRIV_H
#define FQN_SEND_PRIV_H

#include <stdint.h>
#include <stdio.h>

#include "nccl-plugin/control/lane_fsm.h"
#include "nccl-plugin/control/relia.h"
#include "nccl-plugin/core/comm.h"
#include "nccl-plugin/hist.h"

/* The control mode's periodic update (every FQN_STEER_UPDATE_MS, from
 * progress): steering and pacing.
 *
 * Steering (control mode, FABRICIQ_STEER): per lane, each chunk's ack
 * latency (from the moment the lane took it to the receiver's cumulative
 * ack: the lane's socket backlog, the fabric's queues, the way back), and
 * while acks are outstanding the age of the oldest unacked chunk as a floor
 * (a lane whose acks stopped looks slow at once), feed steer.h's
 * controller every FQN_STEER_UPDATE_MS. Per chunk, not per message:
 * the weighted gate below holds a fast lane back to the slow lane's pace
 * within a message, so lags from the message's start would be equal on
 * every lane; a chunk's own wait is not. New chunks go
 * to lanes in proportion to its weights by virtual time (a lane taking a
 * chunk of len bytes advances its clock by len / weight; a lane may take a
 * new chunk only while its clock is at most one chunk ahead of the lowest
 * clock of the up lanes), so a slow lane's socket no longer soaks up its
 * equal share of a message. Resends ignore weights. A lane to move to a
 * new ECMP hash stops taking chunks, is parked once all its chunks are
 * acked, and re-dials through the failback path on a new source port. */
struct steer_state {
	struct fqn_steer *ctl; /* NULL: steering off (pacing alone uses the tick) */
	/* Pacing (FABRICIQ_PACE=delay, pace.h): the same tick samples each up
	 * lane's TCP_INFO once for both controllers; the rates go to the
	 * lanes' set_rate (SO_MAX_PACING_RATE) when they change. */
	struct fqn_pace *pace;            /* NULL: pacing off */
	uint64_t tx_acked[FQN_MAX_LANES]; /* the transport's bytes_acked at the last tick */
	uint64_t rate_set[FQN_MAX_LANES]; /* the rate applied, bytes/s; 0: unpaced */
	/* The controller's rate for each lane's path (path page rates, issue
	 * 20), read each update; the lane's rate is the lower of it and
	 * pacing's (FABRICIQ_PACE), so it applies with pacing off too. */
	uint64_t assigned[FQN_MAX_LANES]; /* bytes/s; 0: none */
	/* Their sum while every up lane has one, else 0: then the rates, not
	 * steering's weights, split the chunks (send_steer.c, lane_share). */
	uint64_t given;
	uint64_t rate_logged[FQN_MAX_LANES];
	int64_t logged_ns[FQN_MAX_LANES];
	int rate_err; /* a set_rate failed: warned once */
	double vt[FQN_MAX_LANES];
	int64_t push_ns[FQN_MAX_LANES][FQN_TXQ_MAX]; /* when the lane took its k-th chunk */
	struct fqn_hist lat[FQN_MAX_LANES];          /* ack latencies of this update period */
	uint64_t acked_bytes[FQN_MAX_LANES], sent_bytes[FQN_MAX_LANES];
	uint32_t retrans[FQN_MAX_LANES], ce[FQN_MAX_LANES];
	int64_t next_ns;
	int64_t tick_ns;          /* the last update's time: a capped lane's throttled time counts from it */
	int move;                 /* lane being drained for a move, -1: none */
	const char *move_why;     /* its reason, for the trace: congested, advice, trial */
	int moved[FQN_MAX_LANES]; /* re-dialing for a move, not a failure */
	uint32_t advice_gen[FQN_MAX_LANES];
	uint32_t job; /* FABRICIQ_JOB_ID / SLURM_JOB_ID, 0: unknown */
	FILE *trace;  /* FABRICIQ_STEER_TRACE */
};

struct fqn_send {
	struct fqn_comm c;
	uint64_t next_seq; /* next message posted */
	uint64_t tx_seq;   /* message the cursor is in */
	uint64_t tx_off;   /* next chunk's offset in it */
	unsigned rr;       /* first lane to offer a chunk to */
	int multi;         /* this pass handed out a chunk of a multi-chunk message */
	struct fqn_req reqs[FQN_SEND_SLOTS];
	/* control mode */
	struct fqn_txq *txq[FQN_MAX_LANES];
	int busy[FQN_MAX_LANES]; /* a chunk is being written to lane i */
	struct fqn_resendq resend;
	/* failed lanes' sockets, kept open (unused) until the lane is back: a
	 * closed socket would tell the receiver this process is gone */
	struct fqn_lane *parked[FQN_MAX_LANES];
	struct {
		int active, lane, to_lane;
		const char *cause;
		int64_t start_ns, detect_ns;
		uint64_t bytes;
	} ev;                        /* the failover whose chunks are being resent */
	struct fqn_lane_fsm_cfg fsm; /* the lanes' state machine (lane_fsm.h) */
	struct steer_state *st;      /* the periodic update's state (control mode) */
	uint64_t acking;             /* bytes popped by the current ack */
	int acking_lane;             /* and its lane, time */
	int64_t acking_ns;
};

/* send_steer.c: lane i went down (up = 0) or came back (up = 1). */
void send_steer_lane_state(struct fqn_send *s, int i, int up, int64_t now);
/* 1 if lane i may take a new chunk (its virtual clock is not ahead). */
int send_steer_allows(struct fqn_send *s, int i);
/* Lane i took chunk c (resent: a resend, which ignores weights). */
void send_steer_took(struct fqn_send *s, int i, const struct fqn_cref *c, int resent, int64_t now);
/* Count each up lane's time capped (pacing's rate, the controller's) since
 * the last update into its stats (the tick does; the close, for the time
 * after the last tick, before the final interval is reported). */
void send_steer_account(struct fqn_send *s, int64_t now);
/* Every progress call: feed the controllers, move a lane if due, pace. */
void send_steer_tick(struct fqn_send *s, int64_t now);
/* The periodic update for control-mode comm s: steering if steer (and
 * more than one lane), pacing if pace, the controller's rates always; 0
 * or a negative errno. */
int send_steer_enable(struct fqn_send *s, int steer, int pace, int64_t now);
void send_steer_free(struct fqn_send *s);

#endif /* FQN_SEND_PRIV_H */
