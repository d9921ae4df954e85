/* test-ib-sysfs: device/port/GID scan of the fixture tree, rate and speed
 * decoding, GID choice (RoCE v2 by default, address match, override). */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "nccl-plugin/ib_sysfs.h"
#include "tests/unit/tap.h"

/* the build tree's copy of tests/nccl/fixtures/sysfs-ib, device links made */
#define ROOT FQ_FIXTURE "/class/infiniband"

static void test_decoding(void)
{
	int m = -1;
	uint64_t g;

	ok(fqib_rate_parse("100 Gb/sec (4X EDR)", &m) == 0 && m == 100000, "rate 100 Gb/sec -> %d", m);
	ok(fqib_rate_parse("2.5 Gb/sec (1X SDR)", &m) == 0 && m == 2500, "rate 2.5 Gb/sec -> %d", m);
	ok(fqib_rate_parse("53.125 Gb/sec (1X HDR)", &m) == 0 && m == 53125, "rate 53.125 -> %d", m);
	ok(fqib_rate_parse("fast", &m) == -EINVAL, "rate without number rejected");
	ok(fqib_rate_parse("100 Mb/sec", &m) == -EINVAL, "rate in other unit rejected");
	ok(fqib_speed_mbps(2, 32, &m) == 0 && m == 100000, "4X EDR = 100000 Mbps (%d)", m);
	ok(fqib_speed_mbps(2, 128, &m) == 0 && m == 400000, "4X NDR = 400000 Mbps (%d)", m);
	ok(fqib_speed_mbps(1, 1, &m) == 0 && m == 2500, "1X SDR = 2500 Mbps (%d)", m);
	ok(fqib_speed_mbps(16, 64, &m) == 0 && m == 100000, "2X HDR = 100000 Mbps (%d)", m);
	ok(fqib_speed_mbps(8, 16, &m) == 0 && m == 168000, "12X FDR = 168000 Mbps (%d)", m);
	ok(fqib_speed_mbps(3, 32, &m) == -EINVAL, "unknown width rejected");
	ok(fqib_speed_mbps(2, 3, &m) == -EINVAL, "unknown speed rejected");
	ok(fqib_guid_parse("0c42:a103:0065:1234", &g) == 0 && g == 0x0c42a10300651234ULL, "guid parsed");
	ok(fqib_guid_parse("0c42:a103:0065", &g) == -EINVAL && g == 0, "short guid rejected");
	ok(fqib_guid_parse("0c42:a103:0065:1234x", &g) == -EINVAL, "guid with junk rejected");
	is_int(fqib_gid_type_parse("RoCE v2\n"), FQIB_GID_ROCE_V2, "type RoCE v2");
	is_int(fqib_gid_type_parse("IB/RoCE v1"), FQIB_GID_IB_ROCE_V1, "type IB/RoCE v1");
	is_int(fqib_gid_type_parse("RoCE v22"), FQIB_GID_UNKNOWN, "type with junk unknown");
}

static void test_scan(struct fqib_dev *d, int n)
{
	const struct fqib_port *p;

	is_int(n, 2, "two devices in the fixture");
	if (n != 2)
		return;
	is_str(d[0].name, "mlx5_0", "sorted by name");
	ok(d[0].node_guid == 0x0c42a10300651234ULL, "node_guid of mlx5_0");
	ok(d[0].pci_path && strstr(d[0].pci_path, "/devices/pci0000:00/0000:3b:00.0") &&
	       !strstr(d[0].pci_path, "class"),
	   "pciPath is the resolved device symlink (%s)", d[0].pci_path ? d[0].pci_path : "NULL");
	is_int(d[0].nports, 1, "mlx5_0 has one port");
	p = &d[0].ports[0];
	ok(p->num == 1 && p->link == FQIB_LINK_ETH && p->state == 4, "mlx5_0/1 is an active Ethernet port");
	is_int(p->rate_mbps, 100000, "mlx5_0/1 rate");
	is_int(p->ngids, 5, "five non-zero GIDs (the zero one skipped)");
	ok(p->gids[0].index == 0 && p->gids[4].index == 4, "GIDs sorted by index");
	ok(p->gids[1].type == FQIB_GID_ROCE_V2 && p->gids[2].type == FQIB_GID_IB_ROCE_V1, "GID types read");
	is_str(p->gids[4].ndev, "eth2.100", "netdev of GID 4");
	ok(p->gids[3].raw[10] == 0xff && p->gids[3].raw[12] == 198 && p->gids[3].raw[15] == 10, "GID bytes");

	p = &d[1].ports[0];
	ok(p->link == FQIB_LINK_IB && p->lid == 0x1a && p->rate_mbps == 200000,
	   "mlx5_1/1: IB, LID 0x1a, 200G");
	ok(p->ngids == 1 && p->gids[0].type == FQIB_GID_IB_ROCE_V1 && p->gids[0].ndev[0] == '\0',
	   "IB port: one GID, no netdev");
	ok(d[1].pci_path && strstr(d[1].pci_path, "0000:5e:00.0"), "pciPath of mlx5_1");
}

static void test_select(const struct fqib_dev *d)
{
	const struct fqib_port *roce = &d[0].ports[0], *ib = &d[1].ports[0];
	struct sockaddr_in a = {.sin_family = AF_INET};
	const char *why = NULL;
	int i;

	inet_pton(AF_INET, "198.18.9.9", &a.sin_addr);
	i = fqib_gid_select(roce, (struct sockaddr *)&a, NULL, -1, &why);
	ok(i >= 0 && roce->gids[i].index == 4, "v2 GID matching the NIC address 198.18.9.9 (%s)", why);
	inet_pton(AF_INET, "198.18.1.10", &a.sin_addr);
	i = fqib_gid_select(roce, (struct sockaddr *)&a, NULL, -1, &why);
	ok(i >= 0 && roce->gids[i].index == 3, "v2 (not the v1 at index 2) for 198.18.1.10 (%s)", why);
	i = fqib_gid_select(roce, NULL, NULL, -1, &why);
	ok(i >= 0 && roce->gids[i].index == 3, "no address: first IPv4-mapped v2 GID (%s)", why);
	inet_pton(AF_INET, "203.0.113.1", &a.sin_addr);
	i = fqib_gid_select(roce, (struct sockaddr *)&a, NULL, -1, &why);
	ok(i >= 0 && roce->gids[i].index == 3, "unmatched address: first IPv4-mapped v2 GID");
	i = fqib_gid_select(roce, NULL, NULL, 2, &why);
	ok(i >= 0 && roce->gids[i].index == 2 && roce->gids[i].type == FQIB_GID_IB_ROCE_V1,
	   "override picks index 2 even though it is RoCE v1");
	ok(fqib_gid_select(roce, NULL, NULL, 5, &why) == -ENOENT, "override on an empty entry: -ENOENT (%s)",
	   why);
	i = fqib_gid_select(roce, NULL, "eth2.100", -1, &why);
	ok(i >= 0 && roce->gids[i].index == 4, "netdev eth2.100, no address: its own v2 GID (4), not eth2's");
	i = fqib_gid_select(roce, NULL, "eth2", -1, &why);
	ok(i >= 0 && roce->gids[i].index == 3, "netdev eth2: its IPv4-mapped v2 GID (3)");
	inet_pton(AF_INET, "198.18.9.9", &a.sin_addr);
	i = fqib_gid_select(roce, (struct sockaddr *)&a, "eth2", -1, &why);
	ok(i >= 0 && roce->gids[i].index == 3,
	   "netdev eth2 with another netdev's address: stays on eth2 (3)");
	i = fqib_gid_select(roce, NULL, "eth9", -1, &why);
	ok(i >= 0 && roce->gids[i].index == 3, "a netdev with no GID here: no netdev filter (3)");
	i = fqib_gid_select(ib, NULL, NULL, -1, &why);
	ok(i == 0 && ib->gids[0].index == 0, "IB: port GID at index 0");

	{ /* a RoCE port with only v1 GIDs: no default choice */
		struct fqib_port v1 = *roce;

		for (int k = 0; k < v1.ngids; k++)
			v1.gids[k].type = FQIB_GID_IB_ROCE_V1;
		ok(fqib_gid_select(&v1, NULL, NULL, -1, &why) == -ENOENT && strstr(why, "v2"),
		   "v1-only RoCE port: -ENOENT, says why (%s)", why);
		/* a v2 GID that is not IPv4-mapped is still taken */
		v1.gids[1].type = FQIB_GID_ROCE_V2;
		i = fqib_gid_select(&v1, NULL, NULL, -1, &why);
		ok(i == 1, "only an IPv6 v2 GID: taken (%s)", why);
	}
}

int main(void)
{
	struct fqib_dev d[FQIB_MAX_DEVS];
	int n;

	test_decoding();
	n = fqib_sysfs_scan(ROOT, d, FQIB_MAX_DEVS);
	test_scan(d, n);
	if (n == 2)
		test_select(d);
	fqib_sysfs_release(d, n > 0 ? n : 0);
	is_int(fqib_sysfs_scan(FQ_FIXTURE "/no/such/dir", d, FQIB_MAX_DEVS), 0, "missing root: no devices");
	return done_testing();
}
