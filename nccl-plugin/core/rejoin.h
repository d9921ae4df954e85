/*
 * rejoin: how a failed lane comes back (control mode).
 *
 * NCCL closes a listen comm once its connections are accepted, so a lane
 * cannot re-dial the address it first connected to. Instead the process
 * keeps one "rejoin" listener per NIC (opened with the first control-mode
 * listen, closed by the last fqn_fini), and every listen handle carries its
 * ports. The sender re-dials the same rail's rejoin port and sends a hello
 * with FQN_HELLO_F_REJOIN, its connection id, the lane number and the
 * original listener's token; the receiver side, polling every few ms from
 * its progress calls, matches (connection id, token) against the receive
 * comms registered here and hands the new lane to that comm, which drops
 * the old socket of that lane (if it still had one) and acks on the new.
 * A socket that has not sent its whole hello FABRICIQ_HELLO_TIMEOUT_MS
 * after it was accepted is closed (hello.h). Whose a re-dialed lane is,
 * and the sender's re-dial policy, are control/rejoin.h's pure decisions;
 * here are the listeners and sockets.
 *
 * Thread-safe (one mutex, taken only on these slow paths).
 */
#ifndef FQN_REJOIN_H
#define FQN_REJOIN_H

#include <stdint.h>

struct fqn_ctx;
struct fqn_rejoin;
struct fqn_lane;

/* Rejoin listeners on ctx's NICs, lanes made by ctx's lane driver. */
int fqn_rejoin_create(const struct fqn_ctx *ctx, struct fqn_rejoin **out);
void fqn_rejoin_destroy(struct fqn_rejoin *j);

/* The rejoin port (network order) of NIC nic, its listener opened on first
 * use. 0 and *port, or a negative errno. */
int fqn_rejoin_port(struct fqn_rejoin *j, int nic, uint16_t *port);

/* A receive comm (opaque key) of connection conn_id, accepted by the
 * listener with token, with nlanes lanes of chunk_size chunks. A
 * re-dialed lane whose hello differs in any of these (fqn_hello_rejoin_check)
 * is refused: closed, with a WARN; the sender's re-dial then fails and
 * backs off. 0, -EEXIST (a comm of that connection id and token is
 * registered: a re-dial could not tell the two apart, and one would be
 * refused its own lanes) or -ENOMEM. */
int fqn_rejoin_register(struct fqn_rejoin *j, const void *key, uint64_t conn_id, uint64_t token, int nlanes,
			size_t chunk_size);
void fqn_rejoin_unregister(struct fqn_rejoin *j, const void *key);

/* Accept and read hellos on the rejoin listeners, then: 1 and *lane (its
 * index set) if a re-dialed lane for key's connection is waiting, else 0. */
int fqn_rejoin_take(struct fqn_rejoin *j, const void *key, struct fqn_lane **lane);

#endif /* FQN_REJOIN_H */
