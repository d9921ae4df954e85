/*
 * ib_lane: the IB verbs lane kind (lane_ib.c), one RC QP per lane.
 *
 * Data path, and why SEND: the sender copies header + payload of a chunk
 * into a slot of a registered ring and posts a SEND_WITH_IMM; the receiver
 * has one receive buffer (slot) pre-posted per credit, takes the header
 * from the slot, and rx_payload() copies the payload to the posted buffer
 * and re-posts the slot. lane.h delivers a chunk's payload to a
 * destination the receiver learns only after the header (rx_payload(dst)),
 * so an RDMA WRITE straight into it would need the receiver to announce
 * its buffers first (a clear-to-send: a recv.c change); a WRITE into a
 * remote ring plus WRITE_WITH_IMM would copy exactly as much as SEND does
 * and also need remote slot bookkeeping. SEND keeps the same copies with
 * no remote addresses. Flow control is by credits: the sender starts with
 * one per receive slot and the receiver returns them (half a ring at a
 * time) as small SENDs the other way, so the data direction never hits
 * RNR. The copy into the ring also makes tx completion immediate: a
 * chunk is "complete" (its payload reusable) once copied, and up to a ring
 * of chunks is in flight per lane. A chunk offered with no credit left is
 * taken all the same and waits, uncopied, for the next credit return; its
 * completion is reported when it is posted (lane.h: -EAGAIN only while
 * the previous chunk's completion is outstanding).
 *
 * Reverse direction: credit returns and control records (FQN_CTRL_SIZE,
 * acks in control mode) go as small SEND_WITH_IMM into small buffers the
 * sending end keeps posted; the imm's top byte says which.
 *
 * Setup: the lane's TCP connection is the side channel. The connector
 * sends its hello (setup.c) followed by its 64-byte IB handle; the
 * listener reads both (setup.c, without blocking), creates the lane, moves
 * its QP to RTR/RTS and only then sends its own handle, so the connector,
 * which goes to RTS on reading it, never sends into a QP not yet ready
 * (that would cost an RC retry timeout). The connector's side runs in its
 * non-blocking send_hello calls; the acceptor is ready when accepted,
 * which NCCL needs: it may not receive on a connection until all are up. A mismatch (IB vs Ethernet, RoCE v1
 * vs v2, receive slots too small for the chunk size) fails the lane with
 * -EPROTO and a WARN naming both ends. The TCP socket stays open: its EOF
 * tells the lane the peer process is gone long before an RC retry budget
 * would (about 34 s with NCCL's timeout 20, retry 7).
 *
 * Errors: a work completion with an error status kills the lane:
 * IBV_WC_WR_FLUSH_ERR (the QP went to error: the peer reset it, or an
 * earlier error) and the side channel's EOF give -ECONNRESET; every other
 * status (RETRY_EXC_ERR: the path is dead; RNR_RETRY_EXC_ERR; remote
 * access/operation errors) gives -EIO. send.c/recv.c's failover then
 * treats it as any lane error. Failback re-dials through rejoin.c with a
 * new QP on each end (lane_drv.h: the IB driver), handles
 * exchanged after the hello as at setup.
 *
 * The device is behind struct fqib_io_ops (post, poll, connect), so the
 * whole state machine runs in tests on a fake device that can inject any
 * completion; ib_dev.c provides the verbs implementation.
 */
#ifndef FQIB_LANE_H
#define FQIB_LANE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "nccl-plugin/lanes/ib/ib_handle.h"
#include "nccl-plugin/lanes/lane.h"

/* ibv_wc_status values the lane tells apart (same numbers as verbs.h). */
#define FQIB_WC_SUCCESS           0
#define FQIB_WC_WR_FLUSH_ERR      5
#define FQIB_WC_RETRY_EXC_ERR     12
#define FQIB_WC_RNR_RETRY_EXC_ERR 13

enum fqib_wc_op {
	FQIB_OP_SEND = 1,
	FQIB_OP_RECV = 2
};

/* One work completion, device-neutral. */
struct fqib_wc {
	uint64_t wr_id;
	int status; /* FQIB_WC_* (any ibv_wc_status value) */
	enum fqib_wc_op op;
	uint32_t byte_len; /* receives */
	uint32_t imm;      /* receives */
	int64_t ts_ns;     /* completion time, CLOCK_MONOTONIC_RAW ns; 0: the device has none */
};

/* What a lane needs from a device; io is the implementation's state. */
struct fqib_io_ops {
	/* Register the lane's buffer arena (once, before any post): 0 and *rkey. */
	int (*reg)(void *io, void *buf, size_t len, uint32_t *rkey);
	/* This end's QP description (link, gid, gid type, mtu, port, lid, qpn, psn). */
	void (*local)(void *io, struct fqib_handle *h);
	/* INIT -> RTR -> RTS toward remote. 0, or a negative errno with why. */
	int (*connect)(void *io, const struct fqib_handle *remote, char *why, size_t whylen);
	int (*post_recv)(void *io, uint64_t wr_id, void *buf, uint32_t len);
	int (*post_send)(void *io, uint64_t wr_id, const void *buf, uint32_t len, uint32_t imm);
	/* Up to max completions: their number, or a negative errno. */
	int (*poll)(void *io, struct fqib_wc *wc, int max);
	void (*destroy)(void *io);
	/* Optional (NULL: none). Cap the connected QP's sending rate at kbps
	 * (0: no cap): the NIC's own pacing, for a fabric whose NIC runs no
	 * congestion control of its own. 0, or a negative errno (a device
	 * without packet pacing refuses). */
	int (*rate)(void *io, uint32_t kbps);
};

/* Receive slots per lane (each FQN_CHUNK_HDR_SIZE + chunk size bytes). */
#define FQIB_DATA_SLOTS  8
#define FQIB_SMALL_SLOTS 32
#define FQIB_SMALL_SIZE  64

/* A lane over io (the lane owns it and destroys it). sender: this end
 * sends chunks (the connector). fd: the TCP side channel, connected or
 * connecting (owned), or -1 for none: then the caller exchanges handles
 * with fqn_lane_ib_handle() / fqn_lane_ib_start(). 0 or a negative errno
 * (io destroyed, fd closed in every case of failure). */
int fqn_lane_ib_create(const struct fqib_io_ops *ops, void *io, int sender, size_t chunk_size, int fd,
		       struct fqn_lane **out);

/* The accepting end, created over the side channel after the hello and
 * the connector's handle were read: connect to that handle (RTR, so the
 * connector's first SEND finds the QP ready), then send ours. 0 (ready)
 * or a negative errno (the lane is dead). */
int fqn_lane_ib_accept(struct fqn_lane *l, const uint8_t peer[FQIB_HANDLE_SIZE]);

/* This end's handle, valid after create. */
void fqn_lane_ib_handle(struct fqn_lane *l, struct fqib_handle *h);

/* Connect to the other end's handle (no side channel). 0 or -EPROTO etc. */
int fqn_lane_ib_start(struct fqn_lane *l, const struct fqib_handle *remote);

/* Completion time of the current received chunk (CLOCK_MONOTONIC_RAW ns,
 * from the device's completion timestamp), 0 if the device has none. */
int64_t fqn_lane_ib_rx_stamp(struct fqn_lane *l);

/* The device's completion clock onto CLOCK_MONOTONIC_RAW: a reference pair
 * (device cycles, raw ns) sampled together, and the device clock in kHz. */
struct fqib_clock_ref {
	uint64_t cycles;
	int64_t raw_ns;
	uint64_t khz;
};
int64_t fqib_cycles_to_ns(const struct fqib_clock_ref *ref, uint64_t cycles);

/* Verbs lanes (ib_dev.c; -ENOTSUP when built without verbs). nic: the
 * plugin's device index, whose verbs device, port and GID (fqib_devs_open)
 * the QP uses. The connector's lane connects TCP from local (may be NULL)
 * to remote; the acceptor's lane adopts an accepted socket whose hello was
 * read. */
int fqn_lane_ib_connect(int nic, const struct sockaddr *local, const struct sockaddr *remote,
			size_t chunk_size, struct fqn_lane **out);
int fqn_lane_ib_adopt(int nic, int fd, size_t chunk_size, const uint8_t peer[FQIB_HANDLE_SIZE],
		      struct fqn_lane **out);

/* Tests: lanes get their io from f (a fake device) instead of the verbs
 * devices, and FABRICIQ_TRANSPORT=ib then finds one device and keeps the
 * plugin's NICs as they are. NULL: verbs again. Set before fqn_init. */
typedef int (*fqib_io_factory)(int nic, const struct fqib_io_ops **ops, void **io);
void fqib_set_io_factory(fqib_io_factory f);

#endif /* FQIB_LANE_H */
