/* nics: back-end NIC discovery (see nics.h). */
#include "slurmd-agent/nics.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int fq_nics_route_iface(const char *ipv4, char out[FQ_NIC_NAME_MAX])
{
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(9)}, me;
	socklen_t len = sizeof(me);
	struct ifaddrs *ifa = NULL;
	int fd, rc = 0;

	out[0] = '\0';
	if (inet_pton(AF_INET, ipv4, &to.sin_addr) != 1)
		return -EINVAL;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&to, sizeof(to)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&me, &len) < 0)
		rc = -errno;
	close(fd);
	if (rc < 0)
		return rc == -ENETUNREACH ? 0 : rc;
	if (getifaddrs(&ifa) < 0)
		return -errno;
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == me.sin_addr.s_addr) {
			snprintf(out, FQ_NIC_NAME_MAX, "%.15s", i->ifa_name);
			break;
		}
	freeifaddrs(ifa);
	return 0;
}

void fq_nics_default_iface(char out[FQ_NIC_NAME_MAX])
{
	FILE *f = fopen("/proc/net/route", "re");
	char line[256], name[64];
	unsigned long dst;

	out[0] = '\0';
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %lx", name, &dst) == 2 && dst == 0) {
			snprintf(out, FQ_NIC_NAME_MAX, "%.15s", name);
			break;
		}
	fclose(f);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

static int add(char names[][FQ_NIC_NAME_MAX], int n, int max, const char *name, const char *frontend)
{
	if (n >= max || strlen(name) >= FQ_NIC_NAME_MAX || strcmp(name, frontend) == 0)
		return n;
	for (int i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return n;
	snprintf(names[n], FQ_NIC_NAME_MAX, "%s", name);
	return n + 1;
}

/* /sys/class/infiniband/DEV/device/net/NETDEV */
static int rdma_netdevs(const char *sysfs, const char *frontend, char names[][FQ_NIC_NAME_MAX], int max)
{
	char path[512];
	DIR *d, *nd;
	struct dirent *e, *ne;
	int n = 0;

	snprintf(path, sizeof(path), "%s/class/infiniband", sysfs);
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/class/infiniband/%.64s/device/net", sysfs, e->d_name);
		nd = opendir(path);
		if (!nd)
			continue;
		while ((ne = readdir(nd)))
			if (ne->d_name[0] != '.')
				n = add(names, n, max, ne->d_name, frontend);
		closedir(nd);
	}
	closedir(d);
	return n;
}

int fq_nics_discover(const char *sysfs, const char *frontend, char names[][FQ_NIC_NAME_MAX], int max)
{
	struct ifaddrs *ifa = NULL;
	int n = rdma_netdevs(sysfs, frontend ? frontend : "", names, max);

	if (n == 0) {
		if (getifaddrs(&ifa) < 0)
			return -errno;
		for (struct ifaddrs *i = ifa; i; i = i->ifa_next)
			if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & IFF_UP) &&
			    !(i->ifa_flags & IFF_LOOPBACK))
				n = add(names, n, max, i->ifa_name, frontend ? frontend : "");
		freeifaddrs(ifa);
	}
	qsort(names, (size_t)n, FQ_NIC_NAME_MAX, cmp_name);
	return n;
}
