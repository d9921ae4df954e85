/*
 * probe_udp: the probe transport (probe_transport.h) for NICs with an IPv4
 * address: one UDP socket bound to the address and the device, kernel
 * SO_TIMESTAMPING software stamps (CLOCK_REALTIME) for RX and TX (the TX
 * ones from the error queue, with the packet looped back: matched to its
 * send by its bytes), mapped onto CLOCK_MONOTONIC_RAW with a
 * cross-timestamp taken at each wake-up.
 */
#ifndef FQ_AGENT_PROBE_UDP_H
#define FQ_AGENT_PROBE_UDP_H

#include <stdint.h>

#include "slurmd-agent/probe_transport.h"

/* Open it on ifname (its first IPv4 address), UDP port `port`. 0,
 * -EADDRNOTAVAIL (no IPv4 address), or the socket call's errno (logged). */
int fq_probe_udp_open(const char *ifname, uint16_t port, struct fq_probe_transport **out);

/* ifname's first IPv4 address (network order) into *out: 0 or -EADDRNOTAVAIL. */
int fq_probe_udp_nic_ipv4(const char *ifname, uint32_t *out);

#endif /* FQ_AGENT_PROBE_UDP_H */
