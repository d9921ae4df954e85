/*
 * progress: the one progress engine. Every request and every comm of the
 * net API is driven from here (fqn_isend, fqn_irecv and fqn_test of
 * net.h are defined in progress.c), so the send and receive sides never
 * call each other.
 *
 * After every control-mode progress call (send or receive) the engine
 * serves its context's control-mode receive comms that have no receive
 * posted (idle.h, fqn_recv_serve): take re-dialed lanes and ack them
 * (failback), drain and ack resent copies of chunks already held. A
 * sender waits for those acks, and NCCL (like collbench) calls nothing on
 * a receive comm until it posts the next receive, which a ring step posts
 * only once its own sends have completed: with both ends of a pair in
 * that state, each would wait for the other's acks for ever. At most once
 * per ms per process. A process may also call nothing at all for a long
 * time (its last collective done, it waits in its launcher's barrier while
 * a peer's send waits for its acks): fqn_progress_start runs a thread that
 * does the same sweep every IDLE_WAKE_NS whether the process calls or not.
 */
#ifndef FQN_PROGRESS_H
#define FQN_PROGRESS_H

struct fqn_send;
struct fqn_recv;
struct fqn_req;

struct fqn_ctx;

/* Control mode: the thread that serves ctx's idle receive comms (above).
 * 0 or a negative errno (then only the calls serve them). */
int fqn_progress_start(struct fqn_ctx *ctx);
void fqn_progress_stop(struct fqn_ctx *ctx);

int fqn_send_progress(struct fqn_send *s);
/* Progress every lane; with until set, stop as soon as that request completes. */
int fqn_recv_progress(struct fqn_recv *r, const struct fqn_req *until);

#endif /* FQN_PROGRESS_H */
