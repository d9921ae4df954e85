/*
 * probe_open: which probe transport (probe_transport.h) a local NIC gets,
 * and opening it: UDP (probe_udp.h) on a NIC with an IPv4 address, UD
 * (probe_ud.h) on an InfiniBand port without one. Above the transports:
 * they never call here.
 */
#ifndef FQ_AGENT_PROBE_OPEN_H
#define FQ_AGENT_PROBE_OPEN_H

#include <stdbool.h>
#include <stdint.h>

#include "slurmd-agent/probe_transport.h"

/* Which transport a NIC gets: UDP when it has an IPv4 address; else UD
 * when it is an InfiniBand port and verbs are built in. */
enum fq_probe_choice {
	FQ_PROBE_USE_UDP,
	FQ_PROBE_USE_UD,
	FQ_PROBE_NO_VERBS,   /* an IB port with no IPv4, but built --without-verbs */
	FQ_PROBE_NO_ADDRESS, /* neither an IPv4 address nor an IB port */
};
enum fq_probe_choice fq_probe_choose(bool has_ipv4, bool is_ib_port, bool have_verbs);

/*
 * Open the transport for local NIC `nic` (a netdev, or an IB device name
 * "mlx5_0" / "mlx5_0.2" for port 2 when it has no netdev): UDP bound to
 * its IPv4 address and `port`, else UD on its IB port. sysfs: "/sys" or a
 * test tree. 0 or a negative errno, the reason logged with the NIC name:
 * -EADDRNOTAVAIL (no IPv4, not IB), -EPROTONOSUPPORT (IB, no verbs built),
 * -ENODEV (IB port in sysfs but no such verbs device), others from the
 * socket or verbs calls.
 */
int fq_probe_transport_open(const char *sysfs, const char *nic, uint16_t port,
			    struct fq_probe_transport **out);

#endif /* FQ_AGENT_PROBE_OPEN_H */
