/* rejoin: pure decisions on bringing lanes back (see rejoin.h). */
#include "nccl-plugin/control/rejoin.h"

#define BACKOFF_MIN_MS  50
#define BACKOFF_MAX_MS  250
#define DIAL_TIMEOUT_MS 250
#define PATH_RECHECK_MS 50

struct fqn_lane_fsm_cfg fqn_rejoin_policy(int lane_timeout_ms)
{
	return (struct fqn_lane_fsm_cfg){.backoff_min_ms = BACKOFF_MIN_MS,
					 .backoff_max_ms = BACKOFF_MAX_MS,
					 .dial_timeout_ms = DIAL_TIMEOUT_MS,
					 .verify_timeout_ms =
					     2 * (lane_timeout_ms < 1000 ? 1000 : lane_timeout_ms),
					 .path_recheck_ms = PATH_RECHECK_MS};
}

enum fqn_rejoin_verdict fqn_rejoin_judge(const struct fqn_hello *h, const struct fqn_hello *conn,
					 const char **why)
{
	if (h->conn_id != conn->conn_id || h->token != conn->token)
		return FQN_REJOIN_OTHER;
	return fqn_hello_rejoin_check(h, conn, why) < 0 ? FQN_REJOIN_REFUSE : FQN_REJOIN_TAKE;
}

int fqn_rejoin_failback_due(enum fqn_lane_state state, int reported)
{
	return state != FQN_LANE_UP && reported;
}
