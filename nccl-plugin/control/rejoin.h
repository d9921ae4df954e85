/*
 * rejoin: the decisions of bringing a failed lane back, as pure
 * functions taking their configuration as arguments (no I/O, no clock):
 * the sender's re-dial policy (the lane state machine's timers) and which
 * connection a re-dialed lane's hello belongs to. core/rejoin.c keeps the
 * listeners and sockets, core/send.c the dialing; tests/nccl/test-rejoin
 * checks these on recorded numbers.
 */
#ifndef FQN_CONTROL_REJOIN_H
#define FQN_CONTROL_REJOIN_H

#include "nccl-plugin/control/lane_fsm.h"
#include "nccl-plugin/hello.h"

/* The sender's re-dial policy for lanes with lane timeout lane_timeout_ms
 * (FABRICIQ_LANE_TIMEOUT_MS): a dial whose SYN is lost on a dead path is
 * dropped after 250 ms and tried again after the backoff (50 ms doubling
 * to 250 ms): the kernel would resend the SYN only after a second and
 * then after three, so a path that heals is found within about half a
 * second of coming up, for two SYNs a second while it is down (a fabric's
 * round trip is micro- to milliseconds: 250 ms is no SYN's normal wait).
 * While the agent's page has the path DOWN nothing is dialed; the page is
 * looked at every 50 ms. A connected lane whose hello is out waits for
 * the receiver's first ack for twice the lane timeout (at least 2 s): the
 * receiver takes it on its next progress call, which a busy rank may make
 * late. */
struct fqn_lane_fsm_cfg fqn_rejoin_policy(int lane_timeout_ms);

enum fqn_rejoin_verdict {
	FQN_REJOIN_TAKE = 0, /* the lane is conn's: hand it to its comm */
	FQN_REJOIN_OTHER,    /* not conn's (another connection, or a stranger) */
	FQN_REJOIN_REFUSE    /* conn's, but its hello disagrees with the connection: close it */
};

/* Which way re-dialed hello h goes against a registered connection conn:
 * its conn_id and token say whose it is, fqn_hello_rejoin_check the rest
 * (the flags, lane count, chunk size); *why says what disagrees for
 * FQN_REJOIN_REFUSE. */
enum fqn_rejoin_verdict fqn_rejoin_judge(const struct fqn_hello *h, const struct fqn_hello *conn,
					 const char **why);

/* Receiver: 1 if a lane coming back (re-dialed, or its peer or path back)
 * reports a failback: this end reported it down (reported), and it is not
 * UP; a lane absent since setup (the sender reports it) or only the
 * sender saw fail has nothing to report here. */
int fqn_rejoin_failback_due(enum fqn_lane_state state, int reported);

#endif /* FQN_CONTROL_REJOIN_H */
