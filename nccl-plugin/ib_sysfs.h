/*
 * ib_sysfs: RDMA devices as /sys/class/infiniband shows them, and GID choice.
 *
 * Pure file reading, no verbs call: the root directory is a parameter, so
 * tests read a fixture tree (tests/nccl/fixtures/sysfs-ib/, its device
 * links made in the build tree by tests/nccl/Makefile.inc) shaped like
 *   ROOT/<dev>/node_guid             "0c42:a103:0065:1234"
 *   ROOT/<dev>/device -> PCI dir     (symlink; its realpath is the pciPath)
 *   ROOT/<dev>/ports/<n>/link_layer  "InfiniBand" | "Ethernet"
 *   ROOT/<dev>/ports/<n>/state       "4: ACTIVE"
 *   ROOT/<dev>/ports/<n>/rate        "100 Gb/sec (4X EDR)"
 *   ROOT/<dev>/ports/<n>/lid         "0x5"
 *   ROOT/<dev>/ports/<n>/gids/<i>    "fe80:0000:...:1234"
 *   ROOT/<dev>/ports/<n>/gid_attrs/types/<i>  "RoCE v2" | "IB/RoCE v1"
 *   ROOT/<dev>/ports/<n>/gid_attrs/ndevs/<i>  "eth2" (RoCE only)
 * All-zero GIDs (empty table slots) are skipped. Missing optional files
 * leave zeros; a missing ports/ directory or link_layer makes the port
 * unusable (skipped), never an error for the whole scan.
 */
#ifndef FQIB_SYSFS_H
#define FQIB_SYSFS_H

#include <net/if.h>
#include <stdint.h>
#include <sys/socket.h>

#define FQIB_SYSFS_ROOT "/sys/class/infiniband"
#define FQIB_MAX_DEVS   16
#define FQIB_MAX_PORTS  4
#define FQIB_MAX_GIDS   128 /* non-zero GIDs kept per port */

enum fqib_link {
	FQIB_LINK_UNKNOWN = 0,
	FQIB_LINK_IB = 1,
	FQIB_LINK_ETH = 2, /* RoCE */
};

enum fqib_gid_type {
	FQIB_GID_UNKNOWN = 0,
	FQIB_GID_IB_ROCE_V1 = 1, /* "IB/RoCE v1": the only type on IB, v1 on Ethernet */
	FQIB_GID_ROCE_V2 = 2,    /* "RoCE v2": UDP/IP encapsulated, routable */
};

struct fqib_gid {
	int index;
	uint8_t raw[16];
	enum fqib_gid_type type;
	char ndev[IF_NAMESIZE]; /* "" when none (IB) */
};

struct fqib_port {
	int num; /* 1-based, as verbs counts */
	enum fqib_link link;
	int state;     /* 4 = ACTIVE */
	int rate_mbps; /* from "rate"; 0 if unknown */
	int lid;
	int ngids;
	struct fqib_gid gids[FQIB_MAX_GIDS]; /* ascending index */
};

struct fqib_dev {
	char name[64];
	uint64_t node_guid;
	char *pci_path; /* malloc'd realpath of ROOT/<dev>/device, or NULL */
	int nports;
	struct fqib_port ports[FQIB_MAX_PORTS];
};

/* Scan root (FQIB_SYSFS_ROOT on a real host) into devs[max], sorted by
 * name. Returns the number of devices (0: none, or no such directory), or
 * a negative errno for an allocation failure. fqib_sysfs_release() frees. */
int fqib_sysfs_scan(const char *root, struct fqib_dev *devs, int max);
void fqib_sysfs_release(struct fqib_dev *devs, int n);

/* "100 Gb/sec (4X EDR)", "2.5 Gb/sec (1X SDR)", "53.125 Gb/sec (1X HDR)"
 * into Mbps. Returns 0 or -EINVAL (no leading number, no "Gb/sec"). */
int fqib_rate_parse(const char *s, int *mbps);

/* Verbs port attributes into Mbps, as NCCL computes a device's speed:
 * active_width (1: 1X, 2: 4X, 4: 8X, 8: 12X, 16: 2X) times the lane rate
 * of active_speed (1 SDR 2.5, 2 DDR 5, 4 QDR 10, 8 FDR10 10, 16 FDR 14,
 * 32 EDR 25, 64 HDR 50, 128 NDR 100, 256 XDR 200 Gbps). Unknown values:
 * -EINVAL. */
int fqib_speed_mbps(int active_width, int active_speed, int *mbps);

/* "0c42:a103:0065:1234" into a number; 0 on -EINVAL. */
int fqib_guid_parse(const char *s, uint64_t *out);

/* "IB/RoCE v1" / "RoCE v2" (trailing newline allowed). */
enum fqib_gid_type fqib_gid_type_parse(const char *s);
const char *fqib_gid_type_name(enum fqib_gid_type t);
const char *fqib_link_name(enum fqib_link l);

/* Choose the GID a QP uses on port p.
 *  override >= 0 (FABRICIQ_IB_GID_INDEX): that index, which must hold a
 *    non-zero GID, else -ENOENT.
 *  InfiniBand: index 0 (the port GID).
 *  Ethernet (RoCE): RoCE v2 only, and only those of netdev ndev if
 *    ndev is given and some v2 GID belongs to it (a port's table also
 *    holds its VLAN and macvlan netdevs' GIDs); among them the GID equal
 *    to addr's address (IPv4-mapped ::ffff:a.b.c.d, or IPv6) if addr is
 *    given, else the first IPv4-mapped v2 GID, else the first v2 GID. No
 *    v2 GID: -ENOENT (RoCE v1 is chosen only by override).
 * Returns the position in p->gids[] (>= 0) or a negative errno; *why
 * (static) says what was chosen or missing. */
int fqib_gid_select(const struct fqib_port *p, const struct sockaddr *addr, const char *ndev, int override,
		    const char **why);

/* The first line of dir/rel into buf, newline stripped (sysfs attributes;
 * nic.c reads /sys/class/net through it too). 0 or a negative errno. */
int fqib_read_line(const char *dir, const char *rel, char *buf, size_t len);

#endif /* FQIB_SYSFS_H */
