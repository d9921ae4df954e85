#include "nccl-plugin/control/lane_fsm.h"

#define MS 1000000LL

static void go_down(struct fqn_lane_fsm *f, int64_t now, int64_t first_try_ns,
		    const struct fqn_lane_fsm_cfg *cfg)
{
	f->state = FQN_LANE_DOWN;
	f->since_ns = now;
	f->backoff_ms = cfg->backoff_min_ms;
	f->next_try_ns = first_try_ns;
}

/* A re-dial that did not work out: DOWN, twice the backoff (since: the
 * outage's, unchanged). */
static void back_off(struct fqn_lane_fsm *f, int64_t now, const struct fqn_lane_fsm_cfg *cfg)
{
	f->state = FQN_LANE_DOWN;
	f->backoff_ms = f->backoff_ms * 2 > cfg->backoff_max_ms ? cfg->backoff_max_ms : f->backoff_ms * 2;
	f->next_try_ns = now + (int64_t)f->backoff_ms * MS;
}

static enum fqn_lane_action tick(const struct fqn_lane_fsm *f, int64_t now,
				 const struct fqn_lane_fsm_cfg *cfg)
{
	switch (f->state) {
	case FQN_LANE_DOWN:
		return now >= f->next_try_ns ? FQN_LACT_REDIAL : FQN_LACT_NONE;
	case FQN_LANE_DIALING:
		return now - f->since_ns > (int64_t)cfg->dial_timeout_ms * MS ? FQN_LACT_GIVE_UP
									      : FQN_LACT_NONE;
	case FQN_LANE_VERIFY:
		return now - f->since_ns > (int64_t)cfg->verify_timeout_ms * MS ? FQN_LACT_GIVE_UP
										: FQN_LACT_NONE;
	default:
		return FQN_LACT_NONE;
	}
}

enum fqn_lane_action fqn_lane_fsm_step(struct fqn_lane_fsm *f, enum fqn_lane_event e, int64_t now,
				       const struct fqn_lane_fsm_cfg *cfg)
{
	enum fqn_lane_state s = f->state;

	switch (e) {
	case FQN_LEV_FAIL:
		if (s == FQN_LANE_UP) {
			go_down(f, now, now + (int64_t)cfg->backoff_min_ms * MS, cfg);
			return FQN_LACT_FAILOVER;
		}
		back_off(f, now, cfg);
		return FQN_LACT_BACKOFF;
	case FQN_LEV_DOWN:
		go_down(f, now, now + (int64_t)cfg->backoff_min_ms * MS, cfg);
		return FQN_LACT_NONE;
	case FQN_LEV_MOVE:
		if (s == FQN_LANE_UP)
			go_down(f, now, now, cfg); /* at once */
		return FQN_LACT_NONE;
	case FQN_LEV_PATH_DOWN:
		if (s == FQN_LANE_DOWN) {
			f->next_try_ns = now + (int64_t)cfg->path_recheck_ms * MS;
			f->backoff_ms = cfg->backoff_min_ms;
		}
		return FQN_LACT_NONE;
	case FQN_LEV_TICK:
		return tick(f, now, cfg);
	case FQN_LEV_DIALED:
		if (s == FQN_LANE_DOWN) {
			f->state = FQN_LANE_DIALING;
			f->since_ns = now;
		}
		return FQN_LACT_NONE;
	case FQN_LEV_HELLO_OUT:
		if (s == FQN_LANE_DIALING)
			f->state = FQN_LANE_VERIFY; /* since: the dial's, the limit covers both */
		return FQN_LACT_NONE;
	case FQN_LEV_BACK:
		f->state = FQN_LANE_UP;
		f->since_ns = now;
		return s == FQN_LANE_UP ? FQN_LACT_NONE : FQN_LACT_FAILBACK;
	}
	return FQN_LACT_NONE;
}
