/*
 * failover: the I/O half of what the sending and receiving sides of a
 * control-mode connection share: lane names and path keys, reading the
 * path page, failing the comm past the grace limit, failover/failback
 * events. Each takes the comm, whose context (c->ctx) holds the path page
 * and whose c->fo the failover configuration; the decisions are
 * control/failover.h's pure functions.
 */
#ifndef FQN_FAILOVER_H
#define FQN_FAILOVER_H

#include <stdint.h>

#include "nccl-plugin/core/comm.h"

struct fqn_config;

/* The failover configuration (control/failover.h) of cfg's settings. */
struct fqn_failover_cfg fqn_ctl_failover_cfg(const struct fqn_config *cfg);
/* Fill lane i's names and path key from
 * its lane object (NIC index, addresses). */
void fqn_ctl_lane_init(struct fqn_comm *c, int i);
/* The same from a NIC index (-1: unknown) and "addr[:port]" strings, for a
 * lane without a lane object (absent since setup). */
void fqn_ctl_lane_name(struct fqn_comm *c, int i, int nic, const char *local, const char *peer);
/* 1 if the path page has lane i's path DOWN while another path to the
 * same peer node is UP; 0 if up or unknown (no page, no entry, a stale
 * page: see fqn_path_page_fresh), or when every path to the node is DOWN:
 * its agent stopping looks just like that, so the lanes then go by their
 * transport's own signals; and 0 when the page lags the lane
 * (fqn_failover_page_lags). */
int fqn_ctl_path_down(struct fqn_comm *c, int i);
/* 1 when the comm's next path page check is due (every few ms, never per chunk). */
int fqn_ctl_path_due(struct fqn_comm *c, int64_t now);

/* Telemetry: one FailoverEvent of this end of the connection (cause
 * "socket-error", "no-progress", "no-data", "path-down", "failback" or
 * "steer"), stamped with at_ns (CLOCK_MONOTONIC: when the lane failed or came
 * back) on the global clock, and the connection's id, so that the
 * controller merges what the two ends report of one outage. Each end
 * reports each outage of a lane it noticed once: the failure when it
 * notices, the failback (duration_ns: how long the lane was out) when the
 * lane is back. Its remote NIC is the peer NIC's name from the agent's
 * path page, the peer's address where the page has no entry. A no-op
 * without telemetry (event.h builds and pushes it). */
void fqn_ctl_event(struct fqn_comm *c, int from_lane, int to_lane, const char *cause, int64_t at_ns,
		   int64_t detect_ns, uint64_t bytes_resent, int64_t duration_ns);
/* fqn_failover_grace on the comm's lanes at now with c->fo: all lanes down
 * for longer than the grace fails the comm with -ENETUNREACH, all closed
 * or refused by the peer with -ECONNRESET, each with a message naming
 * both ends. 0 otherwise. */
int fqn_ctl_check_grace(struct fqn_comm *c, int64_t now);

#endif /* FQN_FAILOVER_H */
