/* ib_sysfs: RDMA devices from a /sys/class/infiniband tree (see ib_sysfs.h). */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl-plugin/ib_sysfs.h"

int fqib_read_line(const char *dir, const char *rel, char *buf, size_t len)
{
	char path[PATH_MAX];
	FILE *f;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, rel) >= sizeof(path))
		return -ENAMETOOLONG;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

int fqib_rate_parse(const char *s, int *mbps)
{
	char *end;
	double g;

	if (!s || (*s < '0' || *s > '9'))
		return -EINVAL;
	g = strtod(s, &end);
	while (*end == ' ')
		end++;
	if (strncmp(end, "Gb/sec", 6) != 0 || g <= 0 || g > 1e6)
		return -EINVAL;
	*mbps = (int)(g * 1000 + 0.5);
	return 0;
}

int fqib_speed_mbps(int active_width, int active_speed, int *mbps)
{
	static const int widths[][2] = {{1, 1}, {2, 4}, {4, 8}, {8, 12}, {16, 2}};
	static const int speeds[][2] = {{1, 2500},   {2, 5000},   {4, 10000},    {8, 10000},   {16, 14000},
					{32, 25000}, {64, 50000}, {128, 100000}, {256, 200000}};
	int w = 0, sp = 0;

	for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); i++)
		if (widths[i][0] == active_width)
			w = widths[i][1];
	for (size_t i = 0; i < sizeof(speeds) / sizeof(speeds[0]); i++)
		if (speeds[i][0] == active_speed)
			sp = speeds[i][1];
	if (!w || !sp)
		return -EINVAL;
	*mbps = w * sp;
	return 0;
}

int fqib_guid_parse(const char *s, uint64_t *out)
{
	unsigned int p[4];
	char tail;

	*out = 0;
	if (sscanf(s, "%4x:%4x:%4x:%4x%c", &p[0], &p[1], &p[2], &p[3], &tail) != 4)
		return -EINVAL;
	*out = ((uint64_t)p[0] << 48) | ((uint64_t)p[1] << 32) | ((uint64_t)p[2] << 16) | p[3];
	return 0;
}

enum fqib_gid_type fqib_gid_type_parse(const char *s)
{
	size_t n = strcspn(s, "\n");

	if (n == 7 && strncmp(s, "RoCE v2", 7) == 0)
		return FQIB_GID_ROCE_V2;
	if (n == 10 && strncmp(s, "IB/RoCE v1", 10) == 0)
		return FQIB_GID_IB_ROCE_V1;
	return FQIB_GID_UNKNOWN;
}

const char *fqib_gid_type_name(enum fqib_gid_type t)
{
	return t == FQIB_GID_ROCE_V2 ? "RoCE v2" : t == FQIB_GID_IB_ROCE_V1 ? "IB/RoCE v1" : "unknown";
}

const char *fqib_link_name(enum fqib_link l)
{
	return l == FQIB_LINK_IB ? "InfiniBand" : l == FQIB_LINK_ETH ? "Ethernet" : "unknown";
}

/* "fe80:0000:0000:0000:0c42:a1ff:fe65:1234": eight groups of 4 hex digits. */
static int gid_parse(const char *s, uint8_t raw[16])
{
	unsigned int g[8];
	char tail;

	if (sscanf(s, "%4x:%4x:%4x:%4x:%4x:%4x:%4x:%4x%c", &g[0], &g[1], &g[2], &g[3], &g[4], &g[5], &g[6],
		   &g[7], &tail) != 8)
		return -EINVAL;
	for (int i = 0; i < 8; i++) {
		raw[2 * i] = (uint8_t)(g[i] >> 8);
		raw[2 * i + 1] = (uint8_t)g[i];
	}
	return 0;
}

static int gid_cmp(const void *a, const void *b)
{
	return ((const struct fqib_gid *)a)->index - ((const struct fqib_gid *)b)->index;
}

static void scan_gids(const char *pdir, struct fqib_port *p)
{
	char dir[PATH_MAX], buf[128], rel[64];
	static const uint8_t zero[16];
	struct dirent *de;
	DIR *d;

	if ((size_t)snprintf(dir, sizeof(dir), "%s/gids", pdir) >= sizeof(dir))
		return;
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d)) && p->ngids < FQIB_MAX_GIDS) {
		struct fqib_gid *g = &p->gids[p->ngids];
		char *end;
		long idx = strtol(de->d_name, &end, 10);

		if (*end || end == de->d_name || idx < 0 || idx > 65535)
			continue;
		memset(g, 0, sizeof(*g));
		g->index = (int)idx;
		if (fqib_read_line(dir, de->d_name, buf, sizeof(buf)) < 0 || gid_parse(buf, g->raw) < 0 ||
		    memcmp(g->raw, zero, 16) == 0)
			continue;
		snprintf(rel, sizeof(rel), "gid_attrs/types/%d", g->index);
		/* On IB there is only one type; the kernel still says "IB/RoCE v1". */
		g->type = fqib_read_line(pdir, rel, buf, sizeof(buf)) == 0 ? fqib_gid_type_parse(buf)
									   : FQIB_GID_UNKNOWN;
		if (g->type == FQIB_GID_UNKNOWN && p->link == FQIB_LINK_IB)
			g->type = FQIB_GID_IB_ROCE_V1;
		snprintf(rel, sizeof(rel), "gid_attrs/ndevs/%d", g->index);
		if (fqib_read_line(pdir, rel, buf, sizeof(buf)) == 0 && strlen(buf) < sizeof(g->ndev))
			strcpy(g->ndev, buf);
		p->ngids++;
	}
	closedir(d);
	qsort(p->gids, (size_t)p->ngids, sizeof(p->gids[0]), gid_cmp);
}

static int scan_port(const char *ddir, const char *name, struct fqib_port *p)
{
	char pdir[PATH_MAX], buf[128];
	char *end;
	long num = strtol(name, &end, 10);

	if (*end || end == name || num < 1 || num > 255)
		return -EINVAL;
	memset(p, 0, sizeof(*p));
	p->num = (int)num;
	if ((size_t)snprintf(pdir, sizeof(pdir), "%s/ports/%s", ddir, name) >= sizeof(pdir))
		return -ENAMETOOLONG;
	if (fqib_read_line(pdir, "link_layer", buf, sizeof(buf)) < 0)
		return -ENOENT;
	if (strcmp(buf, "InfiniBand") == 0)
		p->link = FQIB_LINK_IB;
	else if (strcmp(buf, "Ethernet") == 0)
		p->link = FQIB_LINK_ETH;
	else
		return -EINVAL;
	if (fqib_read_line(pdir, "state", buf, sizeof(buf)) == 0)
		p->state = atoi(buf);
	if (fqib_read_line(pdir, "rate", buf, sizeof(buf)) == 0 && fqib_rate_parse(buf, &p->rate_mbps) < 0)
		p->rate_mbps = 0;
	if (fqib_read_line(pdir, "lid", buf, sizeof(buf)) == 0)
		p->lid = (int)(strtol(buf, NULL, 0) & 0xffff);
	scan_gids(pdir, p);
	return 0;
}

static int port_cmp(const void *a, const void *b)
{
	return ((const struct fqib_port *)a)->num - ((const struct fqib_port *)b)->num;
}

static int scan_dev(const char *root, const char *name, struct fqib_dev *dv)
{
	char ddir[PATH_MAX], path[PATH_MAX + 8], real[PATH_MAX], buf[64];
	struct dirent *de;
	DIR *d;

	memset(dv, 0, sizeof(*dv));
	if (strlen(name) >= sizeof(dv->name))
		return -ENAMETOOLONG;
	strcpy(dv->name, name);
	if ((size_t)snprintf(ddir, sizeof(ddir), "%s/%s", root, name) >= sizeof(ddir))
		return -ENAMETOOLONG;
	if (fqib_read_line(ddir, "node_guid", buf, sizeof(buf)) == 0)
		fqib_guid_parse(buf, &dv->node_guid);
	snprintf(path, sizeof(path), "%s/device", ddir);
	if (realpath(path, real)) {
		dv->pci_path = strdup(real);
		if (!dv->pci_path)
			return -ENOMEM;
	}
	snprintf(path, sizeof(path), "%s/ports", ddir);
	d = opendir(path);
	if (!d)
		return 0; /* no ports: listed, unusable */
	while ((de = readdir(d)) && dv->nports < FQIB_MAX_PORTS)
		if (de->d_name[0] != '.' && scan_port(ddir, de->d_name, &dv->ports[dv->nports]) == 0)
			dv->nports++;
	closedir(d);
	qsort(dv->ports, (size_t)dv->nports, sizeof(dv->ports[0]), port_cmp);
	return 0;
}

static int dev_cmp(const void *a, const void *b)
{
	return strcmp(((const struct fqib_dev *)a)->name, ((const struct fqib_dev *)b)->name);
}

int fqib_sysfs_scan(const char *root, struct fqib_dev *devs, int max)
{
	struct dirent *de;
	int n = 0, rc = 0;
	DIR *d = opendir(root);

	if (!d)
		return 0;
	while ((de = readdir(d)) && n < max) {
		if (de->d_name[0] == '.')
			continue;
		rc = scan_dev(root, de->d_name, &devs[n]);
		if (rc == -ENOMEM)
			break;
		if (rc == 0)
			n++;
	}
	closedir(d);
	if (rc == -ENOMEM) {
		fqib_sysfs_release(devs, n);
		return rc;
	}
	qsort(devs, (size_t)n, sizeof(devs[0]), dev_cmp);
	return n;
}

void fqib_sysfs_release(struct fqib_dev *devs, int n)
{
	for (int i = 0; i < n; i++) {
		free(devs[i].pci_path);
		devs[i].pci_path = NULL;
	}
}

static int gid_is_v4mapped(const uint8_t raw[16])
{
	static const uint8_t pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return memcmp(raw, pfx, 12) == 0;
}

/* addr's address as the 16 bytes a GID would carry; 0 or -EINVAL. */
static int addr_as_gid(const struct sockaddr *a, uint8_t out[16])
{
	if (a->sa_family == AF_INET) {
		memset(out, 0, 10);
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &((const struct sockaddr_in *)a)->sin_addr, 4);
		return 0;
	}
	if (a->sa_family == AF_INET6) {
		memcpy(out, &((const struct sockaddr_in6 *)a)->sin6_addr, 16);
		return 0;
	}
	return -EINVAL;
}

int fqib_gid_select(const struct fqib_port *p, const struct sockaddr *addr, const char *ndev, int override,
		    const char **why)
{
	uint8_t want[16];
	int have_want = addr && addr_as_gid(addr, want) == 0;
	int first_v2 = -1, first_v4 = -1, by_ndev = 0;

	if (override >= 0) {
		for (int i = 0; i < p->ngids; i++)
			if (p->gids[i].index == override) {
				*why = "FABRICIQ_IB_GID_INDEX";
				return i;
			}
		*why = "FABRICIQ_IB_GID_INDEX names an empty or absent GID table entry";
		return -ENOENT;
	}
	if (p->link == FQIB_LINK_IB) {
		for (int i = 0; i < p->ngids; i++)
			if (p->gids[i].index == 0) {
				*why = "InfiniBand port GID (index 0)";
				return i;
			}
		*why = "InfiniBand port has no GID at index 0";
		return -ENOENT;
	}
	for (int i = 0; ndev && *ndev && i < p->ngids; i++)
		by_ndev |= p->gids[i].type == FQIB_GID_ROCE_V2 && strcmp(p->gids[i].ndev, ndev) == 0;
	for (int i = 0; i < p->ngids; i++) {
		const struct fqib_gid *g = &p->gids[i];

		if (g->type != FQIB_GID_ROCE_V2 || (by_ndev && strcmp(g->ndev, ndev) != 0))
			continue;
		if (have_want && memcmp(g->raw, want, 16) == 0) {
			*why = "RoCE v2 GID of the NIC's address";
			return i;
		}
		if (first_v2 < 0)
			first_v2 = i;
		if (first_v4 < 0 && gid_is_v4mapped(g->raw))
			first_v4 = i;
	}
	if (first_v4 >= 0) {
		*why = "first IPv4-mapped RoCE v2 GID";
		return first_v4;
	}
	if (first_v2 >= 0) {
		*why = "first RoCE v2 GID";
		return first_v2;
	}
	*why = "no RoCE v2 GID on this port (RoCE v1 only by FABRICIQ_IB_GID_INDEX)";
	return -ENOENT;
}
