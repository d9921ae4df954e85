/* ib-devices: how many verbs devices have an ACTIVE port, for the device
 * tests' skip decision. Prints "N" and, when 0, "# reason". Also lists
 * the RDMA netdevs (for FABRICIQ_IFACES) one per line as "netdev NAME". */
#include <stdio.h>
#include <string.h>

#include "nccl-plugin/ib_sysfs.h"
#include "nccl-plugin/lanes/ib/ib_dev.h"

int main(void)
{
	static struct fqib_dev d[FQIB_MAX_DEVS];
	const char *why = "";
	int n = fqib_devs_count(&why), nd;

	printf("%d\n", n);
	if (n == 0) {
		printf("# %s\n", why);
		return 0;
	}
	nd = fqib_sysfs_scan(FQIB_SYSFS_ROOT, d, FQIB_MAX_DEVS);
	for (int i = 0; i < nd; i++)
		for (int p = 0; p < d[i].nports; p++)
			for (int g = 0; g < d[i].ports[p].ngids; g++)
				if (d[i].ports[p].gids[g].ndev[0] && d[i].ports[p].state == 4) {
					printf("netdev %s\n", d[i].ports[p].gids[g].ndev);
					break;
				}
	fqib_sysfs_release(d, nd > 0 ? nd : 0);
	return 0;
}
