/*
 * probe_transport: how the prober (prober.h) moves probe packets on one
 * local NIC, without knowing whether they travel in UDP datagrams
 * (probe_udp.h: NICs with an IPv4 address) or in InfiniBand UD messages
 * (probe_ud.h: back-end IB ports with no IP). The coded-pair exchange,
 * liveness and clock fits stay in the prober.
 *
 * A transport is an embedded base struct plus a table of operations, as
 * linuxptp's transports; the transports build on this file, and
 * probe_open.h picks and opens one for a NIC. Every stamp it hands out is on this host's
 * CLOCK_MONOTONIC_RAW, whatever clock the kernel or the NIC stamped with.
 */
#ifndef FQ_AGENT_PROBE_TRANSPORT_H
#define FQ_AGENT_PROBE_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where a stamp was taken: the further from the wire, the noisier. */
enum fq_stamp_kind {
	FQ_STAMP_NONE = 0,
	FQ_STAMP_USER,   /* read by the agent itself (post time, poll time): scheduling noise included */
	FQ_STAMP_KERNEL, /* SO_TIMESTAMPING software stamps */
	FQ_STAMP_NIC,    /* the NIC's clock (UD completion timestamps) */
};

const char *fq_stamp_kind_name(enum fq_stamp_kind k);

enum fq_peer_kind {
	FQ_PEER_NONE = 0,
	FQ_PEER_IPV4,
	FQ_PEER_UD,
};

/* The UD queue key every agent uses (bit 31 clear: not a privileged qkey). */
#define FQ_PROBE_UD_QKEY 0x46515055u /* "FQPU" */

/*
 * A peer's probe address on one NIC. IPv4: address and UDP port. UD: the
 * remote QP number and, to build the address handle, either its LID (IB
 * within a subnet, no GRH) or its GID (RoCE, or IB across subnets: GRH).
 */
struct fq_peer_addr {
	uint8_t kind;  /* enum fq_peer_kind */
	uint32_t ipv4; /* network order */
	uint16_t port; /* host order */
	uint16_t lid;
	uint32_t qpn; /* 24 bits */
	bool has_gid;
	uint8_t gid[16];
};

/* Longest text form: "ud:lid=0xbfff/gid=<39 chars>/qpn=0xffffff". */
#define FQ_PEER_ADDR_STRLEN 80

/*
 * Parse a peer address as written in agent.peers and in the controller's
 * peer assignment: "198.19.0.5" (UDP, port default_port) or
 * "ud:lid=0x12/qpn=0x48" or "ud:gid=fe80::2/qpn=0x48", or both lid and
 * gid (InfiniBand with a GRH: routed by LID, the GRH names the GID). Keys
 * in any order; numbers decimal, 0x hex or 0 octal. No ',' or blank
 * inside: agent.peers is a comma/blank-separated list. 0 or -EINVAL.
 */
int fq_peer_addr_parse(const char *s, uint16_t default_port, struct fq_peer_addr *out);

/* The text form (parseable again) into buf; returns buf. */
const char *fq_peer_addr_format(const struct fq_peer_addr *a, char *buf, size_t len);

/* Same sender host and NIC: IPv4 address (any port); UD: QPN and GID
 * when `configured` has one, else LID. `seen` is a packet's source. */
bool fq_peer_addr_matches(const struct fq_peer_addr *configured, const struct fq_peer_addr *seen);

/* Exactly the same address (port included). */
bool fq_peer_addr_equal(const struct fq_peer_addr *a, const struct fq_peer_addr *b);

/* A received probe packet. */
struct fq_probe_rx {
	struct fq_peer_addr from; /* kind FQ_PEER_NONE: the source could not be read */
	int64_t rx_ns;            /* local raw */
	enum fq_stamp_kind stamp;
};

struct fq_probe_transport;

struct fq_probe_transport_ops {
	/* The fd that becomes readable when packets or TX stamps wait. */
	int (*fd)(struct fq_probe_transport *t);
	/* Called once per wake-up of fd, before reading (refresh clock
	 * cross-stamps, acknowledge and re-arm completion events). */
	void (*ready)(struct fq_probe_transport *t);
	/* Send len bytes to `to`; *key identifies this send's TX stamp.
	 * 0 or a negative errno. */
	int (*send)(struct fq_probe_transport *t, const struct fq_peer_addr *to, const uint8_t *buf,
		    size_t len, uint32_t *key);
	/* One received packet into buf (at most cap bytes): its length, or
	 * -EAGAIN when none waits, or another negative errno. */
	long (*recv)(struct fq_probe_transport *t, uint8_t *buf, size_t cap, struct fq_probe_rx *rx);
	/* Send as `send` does, with the IP TTL set to ttl for this packet
	 * (path traces, tracer.h). NULL: the transport cannot (UD). */
	int (*send_ttl)(struct fq_probe_transport *t, const struct fq_peer_addr *to, const uint8_t *buf,
			size_t len, unsigned ttl, uint32_t *key);
	/* One TX stamp: 1 (key, stamp set), 0 none waiting, -ENODATA a send
	 * completed without a usable stamp. */
	int (*tx_stamp)(struct fq_probe_transport *t, uint32_t *key, int64_t *tx_ns);
	/* This NIC's own probe address, as peers must write it. */
	int (*local_addr)(struct fq_probe_transport *t, struct fq_peer_addr *out);
	void (*destroy)(struct fq_probe_transport *t);
};

struct fq_probe_transport {
	const struct fq_probe_transport_ops *ops;
	const char *kind;             /* "udp", "ud" */
	enum fq_peer_kind peer_kind;  /* the addresses it sends to */
	enum fq_stamp_kind rx_stamps; /* what its stamps are, for the status */
	enum fq_stamp_kind tx_stamps;
	char nic[16];
};

#endif /* FQ_AGENT_PROBE_TRANSPORT_H */
