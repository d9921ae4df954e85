/*
 * failover: the decisions of a control-mode connection when its lanes
 * fail and come back, as pure functions: each takes its configuration
 * (struct fqn_failover_cfg) and the clock readings as arguments, reads
 * nothing else and does no I/O, so tests/nccl/test-failover-decide checks
 * them on recorded numbers. core/failover.c, core/send.c and core/recv.c
 * do the reading (path page, the transport's info) and the acting
 * (resends, events, failing the comm).
 */
#ifndef FQN_CONTROL_FAILOVER_H
#define FQN_CONTROL_FAILOVER_H

#include <stdint.h>

#include "nccl-plugin/control/lane_fsm.h"
#include "nccl-plugin/lanes/lane.h"

struct fqn_failover_cfg {
	int lane_timeout_ms;      /* FABRICIQ_LANE_TIMEOUT_MS: no progress / no data for this long */
	int grace_ms;             /* FABRICIQ_FAILOVER_GRACE_MS: all lanes down for longer fails the comm */
	int path_page_max_age_ms; /* FABRICIQ_PATH_PAGE_MAX_AGE_MS: an older path page is not believed */
};

/* 1 if a page published at updated_ns (CLOCK_MONOTONIC_RAW) may be
 * trusted at now_ns: published, and no more than cfg's max age old (nor
 * that far in the future: a page of another time namespace). An agent
 * that died leaves its last page behind, DOWN entries included. */
int fqn_path_page_fresh(int64_t updated_ns, int64_t now_ns, const struct fqn_failover_cfg *cfg);

/* A lane's two ends come UP a round trip and a verification apart; a DOWN
 * seen in between must count at both. */
#define FQN_PAGE_LAG_MARGIN_NS 500000000LL

/* 1 if the path page's DOWN for a lane lags the lane: the lane is UP and
 * came UP (lane_since_ns, on now_mono's clock) more than
 * FQN_PAGE_LAG_MARGIN_NS after the DOWN was seen (changed_ns, on
 * now_raw's clock; 0: unknown, never lags). Ages are compared, not times:
 * the page is on the raw clock, the lane on the monotonic one. */
int fqn_failover_page_lags(enum fqn_lane_state state, int64_t lane_since_ns, int64_t now_mono,
			   int64_t changed_ns, int64_t now_raw);

/* What one lane tells the grace check. */
struct fqn_grace_lane {
	enum fqn_lane_state state;
	int last_err; /* its last failure's errno (negative), 0 if none */
};

enum fqn_grace_verdict {
	FQN_GRACE_OK = 0,    /* some lane is UP, or the lanes are down within the grace */
	FQN_GRACE_PEER_GONE, /* the peer closed (receiver) or refused (sender) every lane: -ECONNRESET */
	FQN_GRACE_EXPIRED    /* all lanes down for longer than cfg->grace_ms: -ENETUNREACH */
};

/* The comm's grace check at now over lanes[0..nlanes-1]. *all_down_ns is
 * the comm's: when the last lane went down (set here on the first call
 * that sees none UP), 0 while some lane is UP (reset here). A peer whose
 * process is gone looks like every lane refused or reset, which a failed
 * link never does: that ends the comm at once. */
enum fqn_grace_verdict fqn_failover_grace(const struct fqn_grace_lane *lanes, int nlanes, int is_send,
					  int64_t *all_down_ns, int64_t now,
					  const struct fqn_failover_cfg *cfg);

/* Sender: 1 if a lane with data outstanding (outstanding != 0) has had no
 * ack since progress_ns for the lane timeout: the transport must be asked
 * (fqn_failover_send_dead). */
int fqn_failover_send_stalled(int outstanding, int64_t progress_ns, int64_t now,
			      const struct fqn_failover_cfg *cfg);
/* Sender, a stalled lane: 1 if it is dead: its transport could not say
 * (info NULL), or has bytes unacknowledged and has heard nothing for the
 * lane timeout. 0 if alive (the receiver is just not consuming): then
 * *progress_ns moves so that the lane is looked at again in half a
 * timeout. */
int fqn_failover_send_dead(const struct fqn_lane_info *info, int64_t now, int64_t *progress_ns,
			   const struct fqn_failover_cfg *cfg);
/* Sender: how long the failure of a lane took to notice: 0 for a socket
 * error (cause "socket-error": news at once), else now - progress_ns
 * (the last ack that advanced). */
int64_t fqn_failover_detect_ns(const char *cause, int64_t now, int64_t progress_ns);

/* Receiver: 1 if an UP lane has been quiet for the lane timeout while a
 * receive is posted (waiting_ns: since when, 0: none): the transport must
 * be asked (fqn_failover_recv_silent). quiet: the later of the lane's
 * last data (progress_ns) and waiting_ns. */
int fqn_failover_recv_quiet(int64_t progress_ns, int64_t waiting_ns, int64_t now,
			    const struct fqn_failover_cfg *cfg);
/* Receiver: 1 if the lane's transport has heard nothing from the peer for
 * longer than a live peer allows (TCP keepalive, set to the lane timeout
 * in whole seconds by lane_tcp.c, at least 1 s, plus a lane timeout for a
 * late probe), or could not say (info NULL). */
int fqn_failover_recv_silent(const struct fqn_lane_info *info, const struct fqn_failover_cfg *cfg);

#endif /* FQN_CONTROL_FAILOVER_H */
