/*
 * nic: the back-end NICs the plugin reports to NCCL as devices.
 *
 * FABRICIQ_IFACES names them (comma list, order kept); otherwise every UP
 * non-loopback interface with an address, RDMA-capable netdevs first
 * (/sys/class/net/X/device/infiniband exists). Each NIC carries one address
 * (the first IPv4, else the first IPv6), its netmask (used to pair a lane's
 * local NIC with a remote address on the same rail), its speed from sysfs,
 * its PCI path (NULL for virtual devices) and a guid derived from its MAC.
 */
#ifndef FQN_NIC_H
#define FQN_NIC_H

#include <net/if.h>
#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>

#define FQN_MAX_NICS           16
#define FQN_DEFAULT_SPEED_MBPS 10000

struct fqn_nic {
	char name[IF_NAMESIZE];
	struct sockaddr_storage addr; /* port 0 */
	struct sockaddr_storage mask;
	int speed_mbps;
	int speed_from_sysfs; /* 0: FQN_DEFAULT_SPEED_MBPS assumed */
	char *pci_path;       /* malloc'd realpath, or NULL (virtual) */
	uint64_t guid;
	int rdma; /* has an RDMA (IB/RoCE) device */
};

/* Discover NICs. ifaces: comma list or "" for autodetection. Fills nics[]
 * (up to FQN_MAX_NICS) and *n. Returns 0, -ENODEV (a named interface does
 * not exist, is down or has no address; or none found) with a reason in err. */
int fqn_nics_discover(const char *ifaces, struct fqn_nic *nics, int *n, char *err, size_t errlen);

void fqn_nics_release(struct fqn_nic *nics, int n);

/* 1 if a is inside nic's subnet. */
int fqn_nic_same_subnet(const struct fqn_nic *nic, const struct sockaddr *a);

/* The index of the NIC of nics[0..n-1] whose address a is; dflt if none. */
int fqn_nic_of_addr(const struct fqn_nic *nics, int n, const struct sockaddr_storage *a, int dflt);

/* "1.2.3.4:5" or "[::1]:5" into buf. Returns buf. */
const char *fqn_sockaddr_str(const struct sockaddr *a, char *buf, size_t len);

#endif /* FQN_NIC_H */
