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
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
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

/* The first line of a small sysfs file, without its newline: 0 or -errno. */
static int read_line(const char *path, char *out, size_t len)
{
	FILE *f = fopen(path, "re");

	out[0] = '\0';
	if (!f)
		return -errno;
	if (!fgets(out, (int)len, f))
		out[0] = '\0';
	fclose(f);
	out[strcspn(out, "\n")] = '\0';
	return 0;
}

/* The 1-based port of netdev `net` of device `dev` (its dev_port + 1). */
static unsigned netdev_port(const char *sysfs, const char *dev, const char *net)
{
	char path[512], line[32];
	unsigned long v;

	snprintf(path, sizeof(path), "%s/class/infiniband/%s/device/net/%s/dev_port", sysfs, dev, net);
	if (read_line(path, line, sizeof(line)) < 0 || sscanf(line, "%lu", &v) != 1 || v > 254)
		return 1;
	return (unsigned)v + 1;
}

/* Name of netdev of dev's port `port` into out ("" when none). */
static void port_netdev(const char *sysfs, const char *dev, unsigned port, char out[FQ_NIC_NAME_MAX])
{
	char path[512];
	DIR *d;
	struct dirent *e;

	out[0] = '\0';
	snprintf(path, sizeof(path), "%s/class/infiniband/%s/device/net", sysfs, dev);
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && strlen(e->d_name) < FQ_NIC_NAME_MAX &&
		    netdev_port(sysfs, dev, e->d_name) == port) {
			snprintf(out, FQ_NIC_NAME_MAX, "%s", e->d_name);
			break;
		}
	closedir(d);
}

static void fill_port(const char *sysfs, const char *dev, unsigned port, struct fq_ib_port *out)
{
	char path[512];

	snprintf(out->dev, sizeof(out->dev), "%s", dev);
	out->port = port;
	snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/%u/link_layer", sysfs, dev, port);
	read_line(path, out->link_layer, sizeof(out->link_layer));
	port_netdev(sysfs, dev, port, out->netdev);
}

int fq_nics_ib_port(const char *sysfs, const char *name, struct fq_ib_port *out)
{
	char dev[64], path[512];
	const char *dot = strrchr(name, '.');
	unsigned long port = 1;
	struct stat st;
	DIR *d;
	struct dirent *e;
	int rc = -ENOENT;

	memset(out, 0, sizeof(*out));
	/* a device name, maybe with ".PORT" */
	snprintf(dev, sizeof(dev), "%.*s", dot ? (int)(dot - name) : (int)strlen(name), name);
	if (dot && (sscanf(dot + 1, "%lu", &port) != 1 || port < 1 || port > 254))
		dev[0] = '\0';
	snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/%lu", sysfs, dev, port);
	if (dev[0] && strchr(dev, '/') == NULL && stat(path, &st) == 0) {
		fill_port(sysfs, dev, (unsigned)port, out);
		return 0;
	}
	/* a netdev of a device */
	snprintf(path, sizeof(path), "%s/class/infiniband", sysfs);
	d = opendir(path);
	if (!d)
		return -ENOENT;
	while (rc < 0 && (e = readdir(d))) {
		if (e->d_name[0] == '.' || strchr(name, '/'))
			continue;
		snprintf(path, sizeof(path), "%s/class/infiniband/%.64s/device/net/%s", sysfs, e->d_name,
			 name);
		if (stat(path, &st) == 0) {
			fill_port(sysfs, e->d_name, netdev_port(sysfs, e->d_name, name), out);
			rc = 0;
		}
	}
	closedir(d);
	return rc;
}

/* DEV's InfiniBand ports that have no netdev, as "DEV" (port 1) or
 * "DEV.PORT". An Ethernet (RoCE) port always has its netdev. */
static int ib_ports(const char *sysfs, const char *dev, const char *frontend, char names[][FQ_NIC_NAME_MAX],
		    int n, int max)
{
	char path[512], name[FQ_NIC_NAME_MAX + 8];
	DIR *d;
	struct dirent *e;
	unsigned long port;

	snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports", sysfs, dev);
	d = opendir(path);
	if (!d)
		return n;
	while ((e = readdir(d))) {
		struct fq_ib_port ib;

		if (sscanf(e->d_name, "%lu", &port) != 1 || port < 1 || port > 254)
			continue;
		memset(&ib, 0, sizeof(ib));
		fill_port(sysfs, dev, (unsigned)port, &ib);
		if (ib.netdev[0] || strcmp(ib.link_layer, "InfiniBand") != 0)
			continue;
		if (port == 1)
			snprintf(name, sizeof(name), "%.20s", dev);
		else
			snprintf(name, sizeof(name), "%.16s.%lu", dev, port);
		n = add(names, n, max, name, frontend);
	}
	closedir(d);
	return n;
}

/* /sys/class/infiniband/DEV/device/net/NETDEV, and DEV[.PORT] for each
 * InfiniBand port without a netdev */
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
		if (nd) {
			while ((ne = readdir(nd)))
				if (ne->d_name[0] != '.')
					n = add(names, n, max, ne->d_name, frontend);
			closedir(nd);
		}
		n = ib_ports(sysfs, e->d_name, frontend, names, n, max);
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

const char *fq_nics_link_state(const char *name)
{
	struct ifreq ifr;
	int fd, rc, err;

	if (!name || !*name || strlen(name) >= sizeof(ifr.ifr_name))
		return "";
	if ((fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
		return "";
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, name, strlen(name));
	rc = ioctl(fd, SIOCGIFFLAGS, &ifr);
	err = errno;
	close(fd);
	if (rc < 0)
		return err == ENODEV ? "absent" : "";
	if (!(ifr.ifr_flags & IFF_UP))
		return "admin-down";
	return ifr.ifr_flags & IFF_RUNNING ? "carrier" : "no-carrier";
}
