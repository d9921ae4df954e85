/* probe_open: a NIC's probe transport, chosen and opened (see probe_open.h). */
#include "slurmd-agent/probe_open.h"

#include <errno.h>

#include "common/log.h"
#include "slurmd-agent/nics.h"
#include "slurmd-agent/probe_ud.h"
#include "slurmd-agent/probe_udp.h"

enum fq_probe_choice fq_probe_choose(bool has_ipv4, bool is_ib_port, bool have_verbs)
{
	if (has_ipv4)
		return FQ_PROBE_USE_UDP;
	if (!is_ib_port)
		return FQ_PROBE_NO_ADDRESS;
	return have_verbs ? FQ_PROBE_USE_UD : FQ_PROBE_NO_VERBS;
}

int fq_probe_transport_open(const char *sysfs, const char *nic, uint16_t port,
			    struct fq_probe_transport **out)
{
	uint32_t ipv4;
	struct fq_ib_port ib;
	bool has_ipv4 = fq_probe_udp_nic_ipv4(nic, &ipv4) == 0;
	bool is_ib = !has_ipv4 && fq_nics_ib_port(sysfs ? sysfs : "/sys", nic, &ib) == 0;

	switch (fq_probe_choose(has_ipv4, is_ib, FQ_PROBE_UD_BUILT)) {
	case FQ_PROBE_USE_UDP:
		return fq_probe_udp_open(nic, port, out);
	case FQ_PROBE_USE_UD:
		return fq_probe_ud_open(nic, &ib, out);
	case FQ_PROBE_NO_VERBS:
		fq_error(
		    "NIC %s: no IPv4 address, and probing its RDMA port (%s port %u) over UD needs verbs: "
		    "this agent was built without verbs (configure --with-verbs)",
		    nic, ib.dev, ib.port);
		return -EPROTONOSUPPORT;
	default:
		fq_error("NIC %s: no IPv4 address and no RDMA port of that name (in %s/class/infiniband): "
			 "nothing to probe with",
			 nic, sysfs ? sysfs : "/sys");
		return -EADDRNOTAVAIL;
	}
}
