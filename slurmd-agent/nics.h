/*
 * nics: find this node's back-end NICs when agent.nics is not set.
 *
 * RDMA NICs first: the netdevs of /sys/class/infiniband devices (RoCE or
 * IPoIB), plus every InfiniBand port that has no netdev, named after its
 * device ("mlx5_0" for port 1, "mlx5_0.2" for port 2): the prober reaches
 * those over UD (probe_ud.h). Else every interface that is up, has an IPv4 address and is neither the
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

/* What the NIC itself says of its link, for a NIC whose every path is
 * DOWN: "admin-down" (disabled on this host), "no-carrier" (up, but it sees
 * no link: its cable, the switch port or its own PHY), "carrier" (its link
 * is up: what is wrong is past the port), "absent" (no such interface: the
 * driver lost it), or "" (not a netdev: an InfiniBand port over UD). */
const char *fq_nics_link_state(const char *name);

/* The interface of the default IPv4 route ("" when there is none). */
void fq_nics_default_iface(char out[FQ_NIC_NAME_MAX]);

/* Up to max back-end NIC names into names (sysfs: "/sys" or a test tree),
 * never `frontend` (may be ""). Returns how many, or a negative errno. */
int fq_nics_discover(const char *sysfs, const char *frontend, char names[][FQ_NIC_NAME_MAX], int max);

/* The RDMA port behind a NIC name. */
struct fq_ib_port {
	char dev[64];                 /* verbs device name */
	unsigned port;                /* 1-based */
	char link_layer[16];          /* "InfiniBand", "Ethernet", or "" when sysfs does not say */
	char netdev[FQ_NIC_NAME_MAX]; /* "" when the port has none */
};

/* The RDMA port of NIC `name`: a device name ("mlx5_0": port 1,
 * "mlx5_0.2": port 2) or one of its netdevs (class/infiniband/DEV/device/
 * net/NAME; port = its dev_port + 1). 0 or -ENOENT. */
int fq_nics_ib_port(const char *sysfs, const char *name, struct fq_ib_port *out);

#endif /* FQ_AGENT_NICS_H */
