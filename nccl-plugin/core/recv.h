/*
 * recv: the receiving side of a connection (recv.c; its control mode in
 * recv_ctl.c). The net API's fqn_iflush and fqn_close_recv are here;
 * fqn_irecv and progress go through the progress engine (progress.h),
 * which calls fqn_recv_post, fqn_recv_drive and, for idle comms,
 * fqn_recv_serve.
 */
#ifndef FQN_RECV_H
#define FQN_RECV_H

#include <stddef.h>
#include <stdint.h>

struct fqn_ctx;
struct fqn_comm;
struct fqn_idle_link;
struct fqn_lane;
struct fqn_req;
struct fqn_recv;

/* A comm of ctx over lanes[0..nlanes-1]; a NULL lane did not connect at setup. */
int fqn_recv_from_lanes(struct fqn_ctx *ctx, int dev, struct fqn_lane **lanes, int nlanes, size_t chunk_size,
			uint64_t conn_id, struct fqn_recv **out);
/* The other end's global rank (+1; 0: unknown), for telemetry. */
void fqn_recv_set_peer_rank(struct fqn_recv *r, uint32_t rank1);
/* Its comm base. */
struct fqn_comm *fqn_recv_comm(struct fqn_recv *r);

/* Receiver: switch a new comm to control mode; re-dialed lanes carrying
 * token come back through the rejoin listeners, lanes absent at setup
 * (NULL) among them. The comm joins its context's idle set (idle.h). */
int fqn_recv_enable_control(struct fqn_recv *r, uint64_t token);

/* fqn_irecv's posting (net.h) with a first progress. */
int fqn_recv_post(struct fqn_recv *r, int n, void **data, const size_t *sizes, const int *tags,
		  struct fqn_req **out);
/* Progress every lane; with until set, stop as soon as that request completes. */
int fqn_recv_drive(struct fqn_recv *r, const struct fqn_req *until);
/* The idle set's serve (idle.h) for a member comm: unless its owner is in
 * it (another thread) or a receive is pending, take re-dialed lanes, ack,
 * drain and ack resent copies. */
void fqn_recv_serve(struct fqn_idle_link *m);

#endif /* FQN_RECV_H */
