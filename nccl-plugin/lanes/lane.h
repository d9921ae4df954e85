/*
 * lane: one transport path of a connection, carrying whole chunks.
 *
 * A connection stripes its chunks over several lanes. A lane kind (TCP:
 * lane_tcp.c; IB verbs, one RC QP per lane: lane_ib.c, ib_lane.h) embeds
 * struct fqn_lane first and fills the ops table; the connection code sees
 * only this interface for the data path, and lane_drv.h's driver table
 * for making lanes (dial, accept). All calls are non-blocking and made by
 * the one thread that owns the connection.
 *
 * Sending: tx_chunk() hands the lane a header and its payload (which stays
 * valid until completion); it returns -EAGAIN while the previous chunk is
 * still being transmitted. tx_progress() pushes bytes and reports the
 * completion of the chunk (cookie), i.e. the moment its payload buffer may
 * be reused.
 *
 * Receiving: rx_header() makes the next chunk's header available (it stays
 * the current header until its payload is consumed); rx_payload() lands the
 * current chunk's payload at dst, possibly over several calls.
 *
 * Control records (control mode): small fixed-size records (FQN_CTRL_SIZE
 * bytes, opaque to the lane; acks today) travel in the reverse direction,
 * from the receiving end to the sending end of the same lane. tx_ctrl()
 * returns 0 (the record is on its way), 1 (taken, but queued in the lane
 * behind a full transport: the caller must call tx_ctrl again, with the
 * same or a newer record, until it returns 0; that call first finishes the
 * queued one) or -EAGAIN (nothing taken: the caller sends a newer one
 * later, acks being cumulative); rx_ctrl() returns 1 and the
 * next whole record, or 0. A TCP lane uses its socket's idle direction; an
 * IB lane posts a small SEND the other way on the same QP.
 *
 * Errors are negative errnos; -ECONNRESET means the peer closed or reset
 * the lane. After an error the lane is dead and only destroy() is valid.
 *
 * IB lanes: setup keeps one TCP connection per lane as the control
 * channel (hello, then QP numbers and GIDs: ib_lane.h); tx_chunk posts a
 * SEND of header + payload copied into a registered ring, tx_progress
 * polls the CQ, rx_header/rx_payload read from pre-posted receive
 * buffers, tx_ctrl/rx_ctrl use small buffers pre-posted on each end, and
 * info's idle_rx_ms/unacked come from the QP. Zero-copy RDMA WRITE into
 * the posted buffer would need the receiver to announce its buffers first
 * (a clear-to-send), which is a recv.c change.
 */
#ifndef FQN_LANE_H
#define FQN_LANE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "nccl-plugin/chunk.h"

struct fqn_lane;

/* What the transport knows about the path (0 where it does not). */
struct fqn_lane_info {
	uint32_t rtt_us;
	/* the transport's smallest RTT on the connection (TCP: tcpi_min_rtt,
	 * which times segments from when TCP sends them, so the sender's own
	 * socket queue is not in it); 0: none */
	uint32_t min_rtt_us;
	uint32_t retrans;      /* total retransmitted segments */
	uint32_t delivered_ce; /* segments delivered with ECN CE marks */
	int have_delivered_ce;
	uint32_t idle_rx_ms; /* since the transport last heard anything from the peer */
	uint32_t unacked;    /* transport-level segments in flight (not yet acknowledged) */
	uint64_t
	    bytes_acked; /* payload bytes the peer acknowledged, total (TCP: tcpi_bytes_acked); 0: unknown */
	uint64_t pacing_rate; /* the transport's rate cap now, bytes/s (TCP: tcpi_max_pacing_rate); 0: none */
	/* an IB lane's RC QP numbers, once connected: this end's and the
	 * peer's (the agent checks them against the kernel's RDMA resource
	 * table); 0 on a TCP lane */
	uint32_t local_qpn, remote_qpn;
};

#define FQN_CTRL_SIZE 16

struct fqn_lane_ops {
	const char *kind; /* "tcp", "ib" */
	/* 0: ready; -EINPROGRESS: still connecting; other: failed. */
	int (*poll_connected)(struct fqn_lane *l);
	/* Send the connection hello (opaque bytes) ahead of any chunk: 0 when
	 * fully sent, -EAGAIN to call again, or an error; -EPROTO: the two
	 * ends' settings cannot form this lane (setup reports a "config"
	 * failure: an IB lane's handles that do not match). */
	int (*send_hello)(struct fqn_lane *l, const void *buf, size_t len);
	int (*tx_chunk)(struct fqn_lane *l, const struct fqn_chunk_hdr *h, const void *payload, void *cookie);
	/* 1 and *cookie: the current chunk completed; 0: nothing completed. */
	int (*tx_progress)(struct fqn_lane *l, void **cookie);
	/* 1: *h holds the current header (decoded, checked against chunk_size);
	 * 0: no complete header yet; -EBADMSG: a malformed header (*why says). */
	int (*rx_header)(struct fqn_lane *l, struct fqn_chunk_hdr *h, const char **why);
	/* 1: the current chunk's payload is complete at dst; 0: partial. */
	int (*rx_payload)(struct fqn_lane *l, void *dst);
	int (*tx_ctrl)(struct fqn_lane *l, const uint8_t rec[FQN_CTRL_SIZE]);
	int (*rx_ctrl)(struct fqn_lane *l, uint8_t rec[FQN_CTRL_SIZE]);
	int (*info)(struct fqn_lane *l, struct fqn_lane_info *out);
	/* Optional (NULL: none). When the current chunk (the one rx_header
	 * returned) arrived, as the NIC (IB: its completion) or the kernel
	 * (TCP: its receive stamp of the header) saw it, not when the rank
	 * read it: CLOCK_MONOTONIC_RAW ns, or 0 when unknown (the receiver
	 * then stamps it itself). */
	int64_t (*rx_stamp)(struct fqn_lane *l);
	/* The traffic class (0..255: DSCP << 2, the byte NCCL's trafficClass
	 * carries) of the lane's packets from now on: IP_TOS or IPV6_TCLASS
	 * on a TCP lane, the GRH traffic class on an IB lane. 0 or an errno. */
	int (*set_tclass)(struct fqn_lane *l, int tclass);
	/* Optional (NULL: the lane cannot be paced). Cap the lane's sending
	 * rate at bytes_per_s from now on (0: no cap): SO_MAX_PACING_RATE on
	 * a TCP lane (the kernel's own TCP pacing, no fq qdisc needed). 0 or
	 * an errno. Called from the periodic update, not per chunk. */
	int (*set_rate)(struct fqn_lane *l, uint64_t bytes_per_s);
	void (*destroy)(struct fqn_lane *l);
};

struct fqn_lane {
	const struct fqn_lane_ops *ops;
	int index;         /* lane number inside its connection */
	int nic;           /* local NIC (device index), -1 if routed */
	size_t chunk_size; /* the sender's chunk size */
	char local[64];    /* "addr:port" for messages */
	char peer[64];
};

/* TCP lane: a non-blocking connect from local (may be NULL: routed) to
 * remote. TCP_NODELAY, socket buffers of sock_buf bytes (0: kernel).
 * Both constructors: with keepalive_ms > 0, TCP keepalive probes an idle
 * lane every keepalive_ms and gives up after 3 unanswered (the receiving
 * end of a silently dead path then sees an error instead of silence). */
int fqn_lane_tcp_connect(const struct sockaddr *local, const struct sockaddr *remote, int sock_buf,
			 int keepalive_ms, struct fqn_lane **out);

/* TCP lane over an accepted, connected socket (takes ownership of fd). */
int fqn_lane_tcp_adopt(int fd, int sock_buf, int keepalive_ms, struct fqn_lane **out);

#endif /* FQN_LANE_H */
