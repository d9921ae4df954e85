/*
 * lane_fsm: a control-mode lane's life as a pure state machine, in the
 * way of linuxptp's ptp_fsm(): (state, event, now, cfg) -> next state and
 * the action the caller owes. No I/O, no clock, no global: the sender
 * (send.c) and the receiver (recv.c) change a lane's state only through
 * fqn_lane_fsm_step and do what its action says; tests/nccl/test-lane-fsm
 * checks every transition.
 *
 * The sender declares a lane failed, resends its unacked chunks on the
 * others, re-dials it with backoff (DIALING), waits for the receiver's
 * first ack on the new socket (VERIFY: a round trip on the new path) and
 * gives it traffic again (UP). The receiver only knows UP and DOWN.
 */
#ifndef FQN_LANE_FSM_H
#define FQN_LANE_FSM_H

#include <stdint.h>

enum fqn_lane_state {
	FQN_LANE_UP = 0,
	FQN_LANE_DOWN,
	FQN_LANE_DIALING,
	FQN_LANE_VERIFY
};
#define FQN_LANE_NSTATES 4

enum fqn_lane_event {
	FQN_LEV_FAIL =
	    0,        /* sender: the lane failed (socket error, no progress, path DOWN), or its re-dial did */
	FQN_LEV_DOWN, /* the lane is down whatever it was doing: absent since setup; receiver: lost or silent */
	FQN_LEV_MOVE,      /* sender, steering: re-open an UP lane on a new source port, at once */
	FQN_LEV_PATH_DOWN, /* sender: a due re-dial found the path DOWN on the agent's page: look again later */
	FQN_LEV_TICK,      /* sender: a progress call (the timers) */
	FQN_LEV_DIALED,    /* sender: a re-dial started */
	FQN_LEV_HELLO_OUT, /* sender: the re-dialed lane connected and its hello is out */
	FQN_LEV_BACK /* the lane works again (sender: the first ack on it; receiver: re-dialed, heard, path UP) */
};
#define FQN_LANE_NEVENTS 8

enum fqn_lane_action {
	FQN_LACT_NONE = 0,
	FQN_LACT_FAILOVER, /* an UP lane failed: resend its chunks elsewhere, report it */
	FQN_LACT_BACKOFF,  /* a re-dial did not work out: drop its socket, wait longer */
	FQN_LACT_REDIAL,   /* DOWN and its backoff passed: dial it (then DIALED or FAIL) */
	FQN_LACT_GIVE_UP,  /* DIALING or VERIFY for too long: fail it (FAIL) */
	FQN_LACT_FAILBACK  /* a lane not UP is back: give it traffic, report it */
};

struct fqn_lane_fsm_cfg {
	int backoff_min_ms, backoff_max_ms; /* re-dial backoff: doubles from min up to max */
	int dial_timeout_ms;                /* DIALING: connect and hello */
	int verify_timeout_ms;              /* DIALING + VERIFY: until the first ack */
	int path_recheck_ms;                /* a DOWN path on the page: look again after */
};

struct fqn_lane_fsm {
	enum fqn_lane_state state;
	int64_t since_ns;    /* the re-dial began (DIALING, VERIFY), or the state was entered */
	int64_t next_try_ns; /* DOWN: the next re-dial */
	int backoff_ms;
};

/* Apply event e at now (any monotonic ns) to f; returns the caller's action. */
enum fqn_lane_action fqn_lane_fsm_step(struct fqn_lane_fsm *f, enum fqn_lane_event e, int64_t now,
				       const struct fqn_lane_fsm_cfg *cfg);

#endif /* FQN_LANE_FSM_H */
