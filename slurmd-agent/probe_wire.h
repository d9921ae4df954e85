/*
 * probe_wire: the agent's UDP probe packets (outside input: parsed with
 * every field checked, fuzzed in tests/fuzz/fuzz-probe.c).
 *
 * A probe exchange between agent A and agent B ("coded probe pair",
 * Huygens, NSDI 2018):
 *   A -> B  REQ[0], REQ[1]    back to back; A reads their kernel TX stamps
 *   B -> A  RESP[0], RESP[1]  back to back, carrying B's RX stamps of REQ[0..1]
 *   B -> A  FOLLOWUP          B's TX stamps of RESP[0..1] (known only after
 *                             sending, as in PTP's two-step mode)
 * A then holds both directions of one pair: (its TX, B's RX) forward and
 * (B's TX, its RX) backward. A pair is used for clock estimation only when
 * its receive gap matches its send gap (neither packet was queued behind
 * something else). Stamps on the wire are the sender's MONOTONIC_RAW ns.
 *
 * Layout, 64 bytes, big-endian:
 *   0 magic "FQPB" | 4 version | 5 type | 6 index | 7 flags
 *   8 session u32  | 12 reserved u32 (0) | 16 pair u64
 *   24 t0 i64 | 32 t1 i64 | 40 sender gap ns i64 | 48 epoch i64 | 56 reserved (8 bytes of 0)
 * Path traces (tracer.h) use the same socket, so the same 5-tuple and the
 * same ECMP path as the probes:
 *   A -> B  TRACE       sent with IP TTL = index (1..FQ_PROBE_TRACE_TTL_MAX);
 *                       a router where the TTL ends answers ICMP
 *                       time-exceeded quoting it (index says which hop)
 *   B -> A  TRACE_ECHO  the TRACE that reached B, its fields copied back
 * t0 of a TRACE is the requester's send time; pair is its trace id.
 * flags: FQ_PROBE_FLAG_EPOCH on a FOLLOWUP whose epoch field holds the
 * responder's global - local clock offset (what its clock page publishes),
 * so a host probing the reference host learns the global timeline without
 * a controller; every other flag, and epoch on other types, must be 0.
 */
#ifndef FQ_AGENT_PROBE_WIRE_H
#define FQ_AGENT_PROBE_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define FQ_PROBE_MAGIC         0x46515042u /* "FQPB" */
#define FQ_PROBE_VERSION       1
#define FQ_PROBE_SIZE          64
#define FQ_PROBE_FLAG_EPOCH    0x01
#define FQ_PROBE_TRACE_TTL_MAX 32

enum fq_probe_type {
	FQ_PROBE_REQ = 1,
	FQ_PROBE_RESP = 2,
	FQ_PROBE_FOLLOWUP = 3,
	FQ_PROBE_TRACE = 4,
	FQ_PROBE_TRACE_ECHO = 5,
};

struct fq_probe {
	uint8_t type;  /* enum fq_probe_type */
	uint8_t index; /* 0 or 1 within the pair (0 for FOLLOWUP); a TRACE's TTL (1..32) */
	uint32_t
	    session;   /* the requester's random session id: a restarted agent's stale answers are ignored */
	uint64_t pair; /* the requester's pair sequence number */
	int64_t t0,
	    t1; /* RESP: responder's RX stamps of REQ[0], REQ[1]; FOLLOWUP: its TX stamps of RESP[0..1] */
	int64_t gap_ns;      /* REQ: the gap the requester meant between REQ[0] and REQ[1] */
	uint8_t epoch_valid; /* FOLLOWUP: epoch_ns is set */
	int64_t epoch_ns;    /* FOLLOWUP: the responder's global - local offset */
};

/* Serialise p into buf (FQ_PROBE_SIZE bytes). */
void fq_probe_encode(const struct fq_probe *p, uint8_t buf[FQ_PROBE_SIZE]);

/* Parse len bytes. Returns 0, or -EBADMSG (wrong size, magic, type, index,
 * or non-zero reserved bytes) or -EPROTONOSUPPORT (other version). A
 * packet shorter than FQ_PROBE_SIZE is refused too: a router that quoted
 * less of a TRACE than all of it leaves that hop unknown. */
int fq_probe_decode(const uint8_t *buf, size_t len, struct fq_probe *p);

/* A router's ICMP time-exceeded about a TRACE, as read on a raw socket
 * (outside input: every length and field checked; fuzzed in fuzz-probe). */
struct fq_trace_icmp {
	uint32_t router;       /* who answered: the outer source, network order */
	uint32_t src, dst;     /* the quoted probe's addresses (ours, the peer's) */
	uint16_t sport, dport; /* and ports, host order */
	uint64_t id;           /* the TRACE's trace id ... */
	unsigned ttl;          /* ... and the TTL it was sent with */
};

/* Parse one raw ICMP packet (IPv4 header first). 0, or -EBADMSG: not a
 * time-exceeded quoting a whole UDP TRACE probe. */
int fq_trace_icmp_parse(const uint8_t *pkt, size_t len, struct fq_trace_icmp *out);

/*
 * Lane traces (lanetrace.h): a bare TCP segment carrying one lane's own
 * 5-tuple, written whole (IPv4 header first) for a raw IPPROTO_RAW socket:
 *   IPv4: version 4, IHL 5, TOS 0, total 40, id = the TTL (1..FQ_LANE_
 *         SEGMENT_TTL_MAX, never 0 so the kernel keeps it: which hop a
 *         router's quote answers), DF, TTL, protocol 6, header checksum
 *   TCP:  the lane's ports, seq = the trace's random seq, ack 0, offset 5,
 *         flags ACK only, window 0, checksum over the pseudo-header, urg 0
 * Addresses in network order, ports and seq in host order.
 */
#define FQ_LANE_SEGMENT_SIZE    40
#define FQ_LANE_SEGMENT_TTL_MAX 32

struct fq_lane_segment {
	uint32_t src, dst;     /* network order */
	uint16_t sport, dport; /* host order */
	uint32_t seq;
	unsigned ttl; /* 1..FQ_LANE_SEGMENT_TTL_MAX */
};

/* Write s into buf. 0, or -EINVAL (ttl out of range). */
int fq_lane_segment_encode(const struct fq_lane_segment *s, uint8_t buf[FQ_LANE_SEGMENT_SIZE]);

/* The Internet checksum of len bytes folded onto sum (a partial sum of
 * earlier data; 0 to start), complemented: 0 over data that holds its own
 * correct checksum. */
uint16_t fq_inet_checksum(const void *data, size_t len, uint32_t sum);

/* A router's ICMP time-exceeded about a lane trace's segment, as read on a
 * raw ICMP socket (outside input: every length and field checked; fuzzed
 * in fuzz-probe). The quote must hold the segment's IPv4 header (any IHL)
 * and at least the first 8 bytes of its TCP header (ports, seq), which
 * every router quotes (RFC 792). */
struct fq_lane_icmp {
	uint32_t router;       /* who answered: the outer source, network order */
	uint32_t src, dst;     /* the quoted segment's addresses, network order */
	uint16_t sport, dport; /* host order */
	uint32_t seq;
	unsigned ttl; /* the quoted IP id: the TTL the segment was sent with */
};

/* Parse one raw ICMP packet (IPv4 header first). 0, or -EBADMSG: not a
 * time-exceeded (code 0) quoting an IPv4 TCP segment with an id in
 * 1..FQ_LANE_SEGMENT_TTL_MAX, not a first fragment, or too short. */
int fq_lane_icmp_parse(const uint8_t *pkt, size_t len, struct fq_lane_icmp *out);

#endif /* FQ_AGENT_PROBE_WIRE_H */
