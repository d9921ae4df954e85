/*
 * send: the sending side of a connection (send.c; its steering in
 * send_steer.c). The net API's fqn_close_send is here; fqn_isend and
 * progress go through the progress engine (progress.h), which calls
 * fqn_send_post and fqn_send_drive.
 */
#ifndef FQN_SEND_H
#define FQN_SEND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct fqn_ctx;
struct fqn_comm;
struct fqn_lane;
struct fqn_req;
struct fqn_send;

/* A comm of ctx over lanes[0..nlanes-1]; a NULL lane did not connect at setup. */
int fqn_send_from_lanes(struct fqn_ctx *ctx, int dev, struct fqn_lane **lanes, int nlanes, size_t chunk_size,
			uint64_t conn_id, struct fqn_send **out);
/* The other end's global rank (+1; 0: unknown), for telemetry. */
void fqn_send_set_peer_rank(struct fqn_send *s, uint32_t rank1);
/* Its comm base. */
struct fqn_comm *fqn_send_comm(struct fqn_send *s);

/* Sender: switch a new comm to control mode; lane i re-dials rejoin[i]
 * from bind[i] (can_rejoin[i] = 0: it cannot come back) with the
 * listener's token. */
int fqn_send_enable_control(struct fqn_send *s, uint64_t token, const struct sockaddr_storage *bind,
			    const struct sockaddr_storage *rejoin, const int *can_rejoin);
/* Sender, either mode: lane i did not connect at setup (its slot NULL):
 * nic (-1: routed), local and peer name it; it failed with err, the
 * setup began at since_ns (CLOCK_MONOTONIC) and detect_ns later it was given
 * up. A WARN and a FailoverEvent (cause "connect-failed"). Control mode
 * (after fqn_send_enable_control): the lane is DOWN and re-dialed like
 * any failed lane, and its failback is reported when it is verified.
 * Monitor mode (no failover, so no re-dial either): the connection runs
 * without it. */
void fqn_send_lane_absent(struct fqn_send *s, int i, int nic, const char *local, const char *peer, int err,
			  int64_t since_ns, int64_t detect_ns);

/* fqn_isend's posting (net.h), without progress: *out NULL when no slot is free. */
int fqn_send_post(struct fqn_send *s, void *data, size_t size, int tag, struct fqn_req **out);
/* Progress every lane (c->err set: that error). */
int fqn_send_drive(struct fqn_send *s);

#endif /* FQN_SEND_H */
