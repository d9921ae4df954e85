/*
 * probe_ud: the probe transport (probe_transport.h) for RDMA ports with no
 * IPv4 address (InfiniBand back ends): one UD queue pair per port, queue
 * key FQ_PROBE_UD_QKEY, the same 64-byte probe packets (probe_wire.h) in
 * UD SENDs.
 *
 *   device -> PD -> completion channel (the fd the event loop waits on)
 *          -> send CQ + receive CQ: ibv_create_cq_ex with completion
 *             timestamps when the device has them (stamps of kind "nic"),
 *             else plain CQs and stamps taken by the agent (kind "user":
 *             TX when the send is posted, RX when its completion is polled)
 *          -> UD QP (INIT/RTR/RTS), one registered buffer ring: receive
 *             slots with the 40-byte GRH room in front, send slots
 *          -> address handles per peer, made on first use (LID for IB,
 *             GID with GRH for RoCE or when the peer address gives one)
 *
 * The NIC's clock is mapped onto CLOCK_MONOTONIC_RAW by cross-timestamps
 * (ibv_query_rt_values_ex bracketed by two clock_gettime calls), refreshed
 * at most every 100 ms. The conversion and the packet and address-handle
 * arithmetic are pure functions below, unit-tested without a device.
 */
#ifndef FQ_AGENT_PROBE_UD_H
#define FQ_AGENT_PROBE_UD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "slurmd-agent/nics.h"
#include "slurmd-agent/probe_transport.h"

#ifdef HAVE_VERBS
#define FQ_PROBE_UD_BUILT 1
#else
#define FQ_PROBE_UD_BUILT 0
#endif

/* Every UD receive buffer starts with room for the Global Route Header,
 * present or not (IB spec 11.4.1.2: the payload always lands 40 bytes in). */
#define FQ_UD_GRH_BYTES 40

/*
 * Where the payload of a received UD message is: buf holds byte_len bytes
 * (the completion's byte_len, GRH room included). grh: the completion had
 * IBV_WC_GRH; then the sender's GID is read from it: bytes 8..23 of an IB
 * or RoCEv1 GRH, or, for RoCEv2 over IPv4 (first 20 bytes zero, an IPv4
 * header in bytes 20..39), its source address as ::ffff:a.b.c.d.
 * 0 or -EBADMSG (shorter than the GRH room).
 */
int fq_ud_rx_payload(const uint8_t *buf, uint32_t byte_len, bool grh, const uint8_t **payload, size_t *len,
		     bool *has_gid, uint8_t gid[16]);

/* The fields of an ibv_ah_attr the prober sets, kept verbs-free for tests. */
struct fq_ud_ah {
	uint16_t dlid;
	bool is_global;
	uint8_t dgid[16];
	uint8_t sgid_index, hop_limit, port_num;
};

/* The address handle for `to` from local port `port`: IB needs the LID
 * (a GID adds a GRH); RoCE (roce true) needs the GID. 0 or -EINVAL. */
int fq_ud_ah_for(const struct fq_peer_addr *to, uint8_t port, bool roce, uint8_t sgid_index,
		 struct fq_ud_ah *out);

/*
 * NIC clock -> CLOCK_MONOTONIC_RAW. Two cross points (NIC cycles, raw ns):
 * the latest and one about 1-10 s older; the rate is their slope once they
 * are >= 1 s apart (the NIC's crystal is not its nominal frequency to
 * better than ~50 ppm), else the rate of the previous baseline, else the
 * nominal hca_core_clock (kHz).
 */
struct fq_ud_clock {
	uint64_t khz;    /* nominal, from ibv_query_device_ex */
	unsigned n;      /* cross points held: 0, 1, 2 */
	uint64_t hca[2]; /* [0] older, [1] latest */
	int64_t raw[2];
	int64_t rate_raw, rate_hca; /* the previous baseline (0: none yet) */
};

/* The best of n samples taken as (raw before, NIC clock, raw after): the
 * narrowest bracket, its midpoint. 0 or -EINVAL (n == 0, a bracket < 0). */
int fq_ud_cross_pick(const int64_t *before, const uint64_t *hca, const int64_t *after, unsigned n,
		     uint64_t *hca_out, int64_t *raw_out);

/* Add a cross point: the older point slides forward once 10 s old. */
void fq_ud_clock_add(struct fq_ud_clock *c, uint64_t hca, int64_t raw);

/* The raw time of NIC clock value hca (before or after the points).
 * Needs n >= 1 and khz > 0 (else returns 0). */
int64_t fq_ud_clock_to_raw(const struct fq_ud_clock *c, uint64_t hca);

/* Open the UD transport on NIC `nic`, the RDMA port `ib`. 0, -ENODEV (no
 * such verbs device: the reason logged), -EPROTONOSUPPORT (built without
 * verbs), or the failing verbs call's errno (logged with the device). */
int fq_probe_ud_open(const char *nic, const struct fq_ib_port *ib, struct fq_probe_transport **out);

#endif /* FQ_AGENT_PROBE_UD_H */
