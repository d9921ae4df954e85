/*
 * hello: the first bytes on every lane, connector to listener, and the
 * listening side's wait for them.
 *
 * Hello, FQN_HELLO_SIZE bytes, little-endian:
 *   0 u32 magic "FQHL"  4 u16 version (3)  6 u16 lane  8 u16 nlanes
 *  10 u16 flags        12 u32 chunk_size  16 u64 token (the listener's)
 *  24 u64 conn_id      32 u32 rank1 (the connector's global rank + 1)
 *  36 u16 present (bit i: lane i connected and sends a hello)  38 u16 0
 * An IB lane sends its QP handle (FQIB_HANDLE_SIZE bytes) right after it.
 *
 * The connector sends its lanes' hellos once every lane has connected or
 * failed to, and each carries the set that connected (present): the
 * listener returns the receive comm when those have arrived, and the
 * others come later through the rejoin port (control mode) or never
 * (monitor mode). A re-dial's hello has its own lane only.
 *
 * A listener (setup.c's listen sockets, rejoin.c's rejoin listeners)
 * parks each accepted socket in a struct fqn_hello_wait until its hello
 * has arrived whole. The slots are few (FQN_HELLO_SLOTS): a socket whose
 * hello has not arrived FABRICIQ_HELLO_TIMEOUT_MS after it was accepted
 * is closed and its slot freed, so a peer that connects and never speaks
 * holds a slot for that long at most, and 64 of them cannot shut the
 * listener to every later connection.
 */
#ifndef FQN_HELLO_H
#define FQN_HELLO_H

#include <stddef.h>
#include <stdint.h>

#define FQN_HELLO_MAGIC     0x4c485146u /* "FQHL" */
#define FQN_HELLO_VERSION   3
#define FQN_HELLO_SIZE      40
#define FQN_HELLO_EXTRA_MAX 64 /* a lane driver's bytes behind the hello (lane_drv.h): an IB QP handle */
#define FQN_HELLO_MAX       (FQN_HELLO_SIZE + FQN_HELLO_EXTRA_MAX)

#define FQN_HELLO_F_CONTROL 0x01u /* receiver acks, sender fails over */
#define FQN_HELLO_F_REJOIN  0x02u /* a failed lane of an existing connection */

struct fqn_hello {
	uint16_t lane, nlanes;
	uint16_t flags;
	uint32_t chunk_size;
	uint64_t token;
	uint64_t conn_id;
	uint32_t rank1;   /* the connector's global rank + 1 (0: unknown) */
	uint16_t present; /* bit i: lane i connected and sends a hello (includes lane) */
};

void fqn_hello_encode(const struct fqn_hello *h, uint8_t out[FQN_HELLO_SIZE]);
/* 0, or -EPROTO: bad magic or version, lane not below nlanes, nlanes not
 * 1..FQN_MAX_LANES, present without the lane or with lanes past nlanes,
 * unknown flags, chunk size outside 4 KiB..64 MiB, reserved bytes not 0. */
int fqn_hello_decode(const uint8_t in[FQN_HELLO_SIZE], struct fqn_hello *h);

/* May a re-dialed lane with hello h join the connection conn (the hello
 * its lanes were accepted with: connection id, token, lane count, chunk
 * size)? Pure. 0, or -EPROTO with *why (static) naming the first
 * difference: the lane's chunks are decoded and its copies drained with
 * the connection's chunk size, so a lane with another one is refused
 * (its larger chunks would overrun the receiver's buffers). */
int fqn_hello_rejoin_check(const struct fqn_hello *h, const struct fqn_hello *conn, const char **why);

#define FQN_HELLO_SLOTS 64

struct fqn_hello_slot {
	int fd;
	int tag; /* the caller's: which listener accepted it */
	size_t got;
	int64_t since_ns; /* accepted at */
	uint8_t buf[FQN_HELLO_MAX];
};

struct fqn_hello_wait {
	char who[64]; /* the listener, for messages */
	int n;
	struct fqn_hello_slot slot[FQN_HELLO_SLOTS];
	uint64_t timed_out, refused; /* sockets closed for want of a hello, or of a slot */
};

void fqn_hello_wait_init(struct fqn_hello_wait *w, const char *who);

/* Park accepted socket fd (owned from now on), accepted by listener tag
 * at now_ns. With every slot taken, the sockets past timeout_ns are
 * closed first. 0, or -ENOSPC (all slots still within their timeout: fd
 * is closed, a WARN says so). */
int fqn_hello_wait_add(struct fqn_hello_wait *w, int fd, int tag, int64_t now_ns, int64_t timeout_ns);

/* Read what has arrived on every parked socket, up to want bytes each
 * (want <= FQN_HELLO_MAX). Closes the sockets whose peer closed or
 * failed, and those without a whole hello timeout_ns after they were
 * accepted. 1 and *out (the slot: fd, tag, bytes; the caller owns fd
 * now) for the first socket whose want bytes are all in, or 0. */
int fqn_hello_wait_next(struct fqn_hello_wait *w, size_t want, int64_t now_ns, int64_t timeout_ns,
			struct fqn_hello_slot *out);

/* Close every parked socket. */
void fqn_hello_wait_close(struct fqn_hello_wait *w);

#endif /* FQN_HELLO_H */
