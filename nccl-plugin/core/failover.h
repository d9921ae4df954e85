/*
 * failover: what the sending and receiving sides of a control-mode
 * connection share: lane names and path keys, the path page check, the
 * grace limit, failover/failback events. Each takes the comm, whose
 * context (c->ctx) holds the configuration and the path page.
 */
#ifndef FQN_FAILOVER_H
#define FQN_FAILOVER_H

#include <stdint.h>

#include "nccl-plugin/core/comm.h"

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
 * transport's own signals; and 0 for an UP lane that came up more than
 * 500 ms after the DOWN was seen (it crossed the path since: the page
 * lags). */
int fqn_ctl_path_down(struct fqn_comm *c, int i);
/* 1 if a page published at updated_ns (CLOCK_MONOTONIC_RAW) may be
 * trusted at now_ns: published, and no more than max_age_ms
 * (FABRICIQ_PATH_PAGE_MAX_AGE_MS) old. An agent that died leaves its last
 * page behind, DOWN entries included. Pure. */
int fqn_path_page_fresh(int64_t updated_ns, int64_t now_ns, int max_age_ms);
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
/* All lanes down for longer than grace_ms (FABRICIQ_FAILOVER_GRACE_MS): fail the comm
 * with -ENETUNREACH and a message naming both ends. All lanes down because
 * the peer closed or refused every one (its process is gone, which a
 * failed link never looks like): fail at once with -ECONNRESET. 0 otherwise. */
int fqn_ctl_check_grace(struct fqn_comm *c, int64_t now, int grace_ms);

#endif /* FQN_FAILOVER_H */
