/*
 * lane_fsm: a control-mode lane's life, as a pure state machine.
 */
#ifndef FQN_LANE_FSM_H
#define FQN_LANE_FSM_H

/* Control mode: a lane's life. The sender declares a lane failed, resends
 * its unacked chunks on the others, re-dials it with backoff (DIALING),
 * waits for the receiver's first ack on the new socket (VERIFY: a round
 * trip on the new path) and gives it traffic again (UP). The receiver only
 * knows UP and DOWN. */
enum fqn_lane_state {
	FQN_LANE_UP = 0,
	FQN_LANE_DOWN,
	FQN_LANE_DIALING,
	FQN_LANE_VERIFY
};

#endif /* FQN_LANE_FSM_H */
