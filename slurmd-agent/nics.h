/*
 * nics: find this node's back-end NICs when agent.nics is not set.
 *
 * RDMA netdevs first (a NIC under /sys/class/infiniband: RoCE or IPoIB),
 * else every interface that is up, has an IPv4 address and is neither the
 * loopback nor the front-end one (the interface that reaches the controller,
 * or without one the interface of the default route). Sorted by name; the
 * order is the rail index.
 */
#ifndef FQ_AGENT_NICS_H
#define FQ_AGENT_NICS_H

#include <stddef.h>

#define FQ_NIC_NAME_MAX 16

/* The interface a packet to ipv4 would leave by ("" when unroutable), from
 * a connected UDP socket (nothing is sent). 0 or a negative errno. */
int fq_nics_route_iface(const char *ipv4, char out[FQ_NIC_NAME_MAX]);

/* The interface of the default IPv4 route ("" when there is none). */
void fq_nics_default_iface(char out[FQ_NIC_NAME_MAX]);

/* Up to max back-end NIC names into names (sysfs: "/sys" or a test tree),
 * never `frontend` (may be ""). Returns how many, or a negative errno. */
int fq_nics_discover(const char *sysfs, const char *frontend, char names[][FQ_NIC_NAME_MAX], int max);

#endif /* FQ_AGENT_NICS_H */
