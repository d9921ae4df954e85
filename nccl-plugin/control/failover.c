/* failover: pure decisions on failing and returning lanes (see failover.h). */
#include <errno.h>

#include "nccl-plugin/control/failover.h"

#define MS 1000000LL

int fqn_path_page_fresh(int64_t updated_ns, int64_t now_ns, const struct fqn_failover_cfg *cfg)
{
	int64_t age = now_ns - updated_ns, max = (int64_t)cfg->path_page_max_age_ms * MS;

	/* never published, or from another clock (a page written in another
	 * time namespace is years off): as stale as a dead agent's */
	return updated_ns > 0 && age <= max && age >= -max;
}

int fqn_failover_page_lags(enum fqn_lane_state state, int64_t lane_since_ns, int64_t now_mono,
			   int64_t changed_ns, int64_t now_raw)
{
	/* A lane that came UP after the DOWN was seen has crossed the path
	 * since (a re-dial's handshake, the peer heard again): the agent has
	 * not probed the path UP yet, the lane knows better. */
	return state == FQN_LANE_UP && changed_ns > 0 &&
	       now_raw - changed_ns > now_mono - lane_since_ns + FQN_PAGE_LAG_MARGIN_NS;
}

enum fqn_grace_verdict fqn_failover_grace(const struct fqn_grace_lane *lanes, int nlanes, int is_send,
					  int64_t *all_down_ns, int64_t now,
					  const struct fqn_failover_cfg *cfg)
{
	int gone = 1;

	for (int i = 0; i < nlanes; i++) {
		if (lanes[i].state == FQN_LANE_UP) {
			*all_down_ns = 0;
			return FQN_GRACE_OK;
		}
		/* the receiver: the sender closed every lane (it parks failed
		 * lanes, never closes them); the sender: every re-dial refused
		 * (the peer's rejoin listener is gone with its process) */
		gone &= is_send ? lanes[i].last_err == -ECONNREFUSED : lanes[i].last_err == -ECONNRESET;
	}
	if (!*all_down_ns)
		*all_down_ns = now;
	if (gone)
		return FQN_GRACE_PEER_GONE;
	return now - *all_down_ns > (int64_t)cfg->grace_ms * MS ? FQN_GRACE_EXPIRED : FQN_GRACE_OK;
}

int fqn_failover_send_stalled(int outstanding, int64_t progress_ns, int64_t now,
			      const struct fqn_failover_cfg *cfg)
{
	return outstanding && now - progress_ns >= (int64_t)cfg->lane_timeout_ms * MS;
}

int fqn_failover_send_dead(const struct fqn_lane_info *info, int64_t now, int64_t *progress_ns,
			   const struct fqn_failover_cfg *cfg)
{
	int64_t timeout = (int64_t)cfg->lane_timeout_ms * MS;

	if (!info || (info->unacked && (int64_t)info->idle_rx_ms * MS >= timeout))
		return 1;
	*progress_ns = now - timeout / 2; /* alive: look again in half a timeout */
	return 0;
}

int64_t fqn_failover_detect_ns(const char *cause, int64_t now, int64_t progress_ns)
{
	return cause[0] == 's' ? 0 : now - progress_ns; /* a socket error is news at once */
}

int fqn_failover_recv_quiet(int64_t progress_ns, int64_t waiting_ns, int64_t now,
			    const struct fqn_failover_cfg *cfg)
{
	int64_t quiet_since = progress_ns > waiting_ns ? progress_ns : waiting_ns;

	return waiting_ns && now - quiet_since >= (int64_t)cfg->lane_timeout_ms * MS;
}

int fqn_failover_recv_silent(const struct fqn_lane_info *info, const struct fqn_failover_cfg *cfg)
{
	int64_t t = (int64_t)cfg->lane_timeout_ms * MS;
	int64_t keepalive = cfg->lane_timeout_ms < 1000 ? 1000 * MS : (t / (1000 * MS)) * 1000 * MS;

	return !info || (int64_t)info->idle_rx_ms * MS >= keepalive + t;
}
