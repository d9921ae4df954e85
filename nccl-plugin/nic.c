/* nic: NIC discovery from getifaddrs and sysfs (see nic.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl-plugin/ib_sysfs.h"
#include "nccl-plugin/nic.h"

static int sysfs_read(const char *ifname, const char *leaf, char *buf, size_t len)
{
	char dir[128];

	snprintf(dir, sizeof(dir), "/sys/class/net/%s", ifname);
	return fqib_read_line(dir, leaf, buf, len);
}

static void nic_fill_sysfs(struct fqn_nic *nic)
{
	char buf[64], path[128], real[PATH_MAX];
	unsigned int mac[6];
	long speed;

	nic->speed_mbps = FQN_DEFAULT_SPEED_MBPS;
	if (sysfs_read(nic->name, "speed", buf, sizeof(buf)) == 0) {
		speed = strtol(buf, NULL, 10);
		if (speed > 0 && speed < INT32_MAX) {
			nic->speed_mbps = (int)speed;
			nic->speed_from_sysfs = 1;
		}
	}
	snprintf(path, sizeof(path), "/sys/class/net/%s/device", nic->name);
	if (realpath(path, real))
		nic->pci_path = strdup(real);
	snprintf(path, sizeof(path), "/sys/class/net/%s/device/infiniband", nic->name);
	nic->rdma = access(path, F_OK) == 0;
	nic->guid = 0;
	if (sysfs_read(nic->name, "address", buf, sizeof(buf)) == 0 &&
	    sscanf(buf, "%x:%x:%x:%x:%x:%x", &mac[0], &mac[1], &mac[2], &mac[3], &mac[4], &mac[5]) == 6) {
		/* EUI-64 from the MAC, as IB does for RoCE ports. */
		nic->guid = ((uint64_t)(mac[0] ^ 2) << 56) | ((uint64_t)mac[1] << 48) |
			    ((uint64_t)mac[2] << 40) | (0xfffeULL << 24) | ((uint64_t)mac[3] << 16) |
			    ((uint64_t)mac[4] << 8) | mac[5];
	}
	if (nic->guid == 0) { /* loopback, tunnels: FNV-1a of the name */
		uint64_t h = 0xcbf29ce484222325ULL;
		for (const char *p = nic->name; *p; p++)
			h = (h ^ (uint8_t)*p) * 0x100000001b3ULL;
		nic->guid = h;
	}
}

/* The NIC's address: the first IPv4 one, else the first IPv6. */
static int nic_find_addr(struct ifaddrs *ifa_list, const char *name, struct fqn_nic *nic)
{
	struct ifaddrs *v6 = NULL;

	for (struct ifaddrs *ifa = ifa_list; ifa; ifa = ifa->ifa_next) {
		if (!ifa->ifa_addr || strcmp(ifa->ifa_name, name) != 0 || !(ifa->ifa_flags & IFF_UP))
			continue;
		if (ifa->ifa_addr->sa_family == AF_INET) {
			memcpy(&nic->addr, ifa->ifa_addr, sizeof(struct sockaddr_in));
			memcpy(&nic->mask, ifa->ifa_netmask, sizeof(struct sockaddr_in));
			return 0;
		}
		if (ifa->ifa_addr->sa_family == AF_INET6 && !v6 &&
		    !IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *)ifa->ifa_addr)->sin6_addr))
			v6 = ifa;
	}
	if (!v6)
		return -ENODEV;
	memcpy(&nic->addr, v6->ifa_addr, sizeof(struct sockaddr_in6));
	memcpy(&nic->mask, v6->ifa_netmask, sizeof(struct sockaddr_in6));
	return 0;
}

static int nic_add(struct ifaddrs *ifa_list, const char *name, struct fqn_nic *nics, int *n)
{
	struct fqn_nic *nic = &nics[*n];

	if (*n >= FQN_MAX_NICS)
		return -E2BIG;
	for (int i = 0; i < *n; i++)
		if (strcmp(nics[i].name, name) == 0)
			return 0;
	memset(nic, 0, sizeof(*nic));
	if (strlen(name) >= sizeof(nic->name))
		return -ENODEV;
	strcpy(nic->name, name);
	if (nic_find_addr(ifa_list, name, nic) < 0)
		return -ENODEV;
	nic_fill_sysfs(nic);
	(*n)++;
	return 0;
}

static int nics_named(struct ifaddrs *ifa_list, const char *ifaces, struct fqn_nic *nics, int *n, char *err,
		      size_t errlen)
{
	char list[256], *save = NULL;

	snprintf(list, sizeof(list), "%s", ifaces);
	for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int rc = nic_add(ifa_list, tok, nics, n);

		if (rc < 0) {
			snprintf(err, errlen, "FABRICIQ_IFACES: interface '%s' %s", tok,
				 rc == -E2BIG ? "is one too many (at most 16)"
					      : "does not exist, is down or has no address");
			return -ENODEV;
		}
	}
	return 0;
}

/* Autodetection: RDMA netdevs first, then the rest, each group in getifaddrs order. */
static void nics_auto(struct ifaddrs *ifa_list, struct fqn_nic *nics, int *n)
{
	for (int pass = 0; pass < 2; pass++) {
		for (struct ifaddrs *ifa = ifa_list; ifa; ifa = ifa->ifa_next) {
			char path[128];
			int rdma;

			if (!ifa->ifa_addr || (ifa->ifa_flags & IFF_LOOPBACK) || !(ifa->ifa_flags & IFF_UP))
				continue;
			if (ifa->ifa_addr->sa_family != AF_INET && ifa->ifa_addr->sa_family != AF_INET6)
				continue;
			snprintf(path, sizeof(path), "/sys/class/net/%s/device/infiniband", ifa->ifa_name);
			rdma = access(path, F_OK) == 0;
			if (rdma == (pass == 0))
				nic_add(ifa_list, ifa->ifa_name, nics, n);
		}
	}
}

int fqn_nics_discover(const char *ifaces, struct fqn_nic *nics, int *n, char *err, size_t errlen)
{
	struct ifaddrs *ifa_list;
	int rc = 0;

	*n = 0;
	if (getifaddrs(&ifa_list) < 0) {
		snprintf(err, errlen, "getifaddrs: %s", strerror(errno));
		return -errno;
	}
	if (ifaces && *ifaces)
		rc = nics_named(ifa_list, ifaces, nics, n, err, errlen);
	else
		nics_auto(ifa_list, nics, n);
	freeifaddrs(ifa_list);
	if (rc == 0 && *n == 0) {
		snprintf(err, errlen,
			 "no usable network interface (UP, not loopback, with an address); "
			 "set FABRICIQ_IFACES");
		rc = -ENODEV;
	}
	if (rc < 0)
		fqn_nics_release(nics, *n);
	return rc;
}

void fqn_nics_release(struct fqn_nic *nics, int n)
{
	for (int i = 0; i < n; i++) {
		free(nics[i].pci_path);
		nics[i].pci_path = NULL;
	}
}

int fqn_nic_same_subnet(const struct fqn_nic *nic, const struct sockaddr *a)
{
	if (a->sa_family != nic->addr.ss_family)
		return 0;
	if (a->sa_family == AF_INET) {
		uint32_t m = ((const struct sockaddr_in *)&nic->mask)->sin_addr.s_addr;
		uint32_t x = ((const struct sockaddr_in *)&nic->addr)->sin_addr.s_addr;
		uint32_t y = ((const struct sockaddr_in *)a)->sin_addr.s_addr;
		return (x & m) == (y & m);
	}
	for (int i = 0; i < 16; i++) {
		uint8_t m = ((const struct sockaddr_in6 *)&nic->mask)->sin6_addr.s6_addr[i];
		if ((((const struct sockaddr_in6 *)&nic->addr)->sin6_addr.s6_addr[i] & m) !=
		    (((const struct sockaddr_in6 *)a)->sin6_addr.s6_addr[i] & m))
			return 0;
	}
	return 1;
}

const char *fqn_sockaddr_str(const struct sockaddr *a, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (a->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)a;
		inet_ntop(AF_INET, &s->sin_addr, host, sizeof(host));
		snprintf(buf, len, "%s:%u", host, ntohs(s->sin_port));
	} else if (a->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)a;
		inet_ntop(AF_INET6, &s->sin6_addr, host, sizeof(host));
		snprintf(buf, len, "[%s]:%u", host, ntohs(s->sin6_port));
	} else {
		snprintf(buf, len, "(family %d)", a->sa_family);
	}
	return buf;
}

int fqn_nic_of_addr(const struct fqn_nic *nics, int n, const struct sockaddr_storage *a0, int dflt)
{
	for (int i = 0; i < n; i++) {
		const struct sockaddr_storage *a = &nics[i].addr;

		if (a->ss_family == AF_INET && a0->ss_family == AF_INET &&
		    ((struct sockaddr_in *)a)->sin_addr.s_addr ==
			((const struct sockaddr_in *)a0)->sin_addr.s_addr)
			return i;
		if (a->ss_family == AF_INET6 && a0->ss_family == AF_INET6 &&
		    memcmp(&((struct sockaddr_in6 *)a)->sin6_addr,
			   &((const struct sockaddr_in6 *)a0)->sin6_addr, 16) == 0)
			return i;
	}
	return dflt;
}
