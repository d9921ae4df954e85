/*
 * wire: the listen handle, the one wire format setup shares with NCCL
 * (NCCL copies it from the listener to the connector); the lanes' hello
 * is hello.h's.
 */
#ifndef FQN_WIRE_H
#define FQN_WIRE_H

#include <stdint.h>

#include "nccl-plugin/nccl_net.h"

/* The listen handle: the listener's addresses, one per local NIC (its
 * rail), the listener's token, and room for the connector's state. */
#define FQN_HANDLE_MAGIC 0x31485146u /* "FQH1" */
#define FQN_HANDLE_ADDRS 4

struct fqn_handle_addr {
	uint8_t family; /* AF_INET or AF_INET6 */
	uint8_t pad;
	uint16_t port; /* network order */
	uint8_t addr[16];
};

struct fqn_connecting;

#define FQN_HANDLE_F_CONTROL 0x01u /* the listener runs in control mode */
/* 0x80: the listener's lane driver's flag (lane_drv.h, FQN_LANE_DRV_F_IB) */

struct fqn_handle {
	uint32_t magic;
	uint8_t naddr;
	uint8_t flags;
	uint8_t pad[2];
	uint64_t token;
	struct fqn_handle_addr addr[FQN_HANDLE_ADDRS];
	struct fqn_connecting *stage; /* connector side only; NULL on the wire */
	/* control mode: where a failed lane to addr[k] re-dials (network
	 * order, same address; 0: none); after stage, which stays at byte 96 */
	uint16_t rejoin_port[FQN_HANDLE_ADDRS];
	uint32_t rank1; /* the listener's global rank + 1 (0: unknown), so lanes name both ranks */
};

_Static_assert(sizeof(struct fqn_handle) <= NCCL_NET_HANDLE_MAXSIZE, "handle must fit NCCL's");

#endif /* FQN_WIRE_H */
