/*
 * test-lane-fsm: control mode's lane state machine (lane_fsm.h), pure:
 * every (state, event) pair from one starting point against a table
 * written out by hand, then the timers on both sides of their limits and
 * the backoff's doubling up to its cap.
 */
#include <stdint.h>

#include "nccl-plugin/control/lane_fsm.h"
#include "tests/unit/tap.h"

#define MS  1000000LL
#define T0  (10000 * MS)    /* the state was entered (since_ns) */
#define NOW (T0 + 200 * MS) /* the event: past the backoff, inside the dial timeout */

static const struct fqn_lane_fsm_cfg cfg = {.backoff_min_ms = 50,
					    .backoff_max_ms = 250,
					    .dial_timeout_ms = 250,
					    .verify_timeout_ms = 2000,
					    .path_recheck_ms = 50};

static const char *const state_name[] = {"UP", "DOWN", "DIALING", "VERIFY"};
static const char *const event_name[] = {"FAIL", "DOWN",   "MOVE",      "PATH_DOWN",
					 "TICK", "DIALED", "HELLO_OUT", "BACK"};

/* Where every pair leads from {state, since T0, next try T0 + 100 ms, backoff 100 ms} at NOW. */
struct row {
	enum fqn_lane_state state;
	enum fqn_lane_event event;
	struct fqn_lane_fsm want;
	enum fqn_lane_action act;
};

#define START(s)                                                                                             \
	{                                                                                                    \
		(s), T0, T0 + 100 * MS, 100                                                                  \
	}
#define D FQN_LANE_DOWN

static const struct row table[] = {
    /* a failure: an UP lane fails over; a re-dial (or a DOWN lane's dial) backs off, twice as long */
    {FQN_LANE_UP, FQN_LEV_FAIL, {D, NOW, NOW + 50 * MS, 50}, FQN_LACT_FAILOVER},
    {FQN_LANE_DOWN, FQN_LEV_FAIL, {D, T0, NOW + 200 * MS, 200}, FQN_LACT_BACKOFF},
    {FQN_LANE_DIALING, FQN_LEV_FAIL, {D, T0, NOW + 200 * MS, 200}, FQN_LACT_BACKOFF},
    {FQN_LANE_VERIFY, FQN_LEV_FAIL, {D, T0, NOW + 200 * MS, 200}, FQN_LACT_BACKOFF},
    /* down whatever it did: from now, first try after the smallest backoff */
    {FQN_LANE_UP, FQN_LEV_DOWN, {D, NOW, NOW + 50 * MS, 50}, FQN_LACT_NONE},
    {FQN_LANE_DOWN, FQN_LEV_DOWN, {D, NOW, NOW + 50 * MS, 50}, FQN_LACT_NONE},
    {FQN_LANE_DIALING, FQN_LEV_DOWN, {D, NOW, NOW + 50 * MS, 50}, FQN_LACT_NONE},
    {FQN_LANE_VERIFY, FQN_LEV_DOWN, {D, NOW, NOW + 50 * MS, 50}, FQN_LACT_NONE},
    /* a steering move takes an UP lane down for a re-dial at once; nothing else moves */
    {FQN_LANE_UP, FQN_LEV_MOVE, {D, NOW, NOW, 50}, FQN_LACT_NONE},
    {FQN_LANE_DOWN, FQN_LEV_MOVE, START(FQN_LANE_DOWN), FQN_LACT_NONE},
    {FQN_LANE_DIALING, FQN_LEV_MOVE, START(FQN_LANE_DIALING), FQN_LACT_NONE},
    {FQN_LANE_VERIFY, FQN_LEV_MOVE, START(FQN_LANE_VERIFY), FQN_LACT_NONE},
    /* a DOWN path on the page: a DOWN lane looks again after the recheck, backoff reset */
    {FQN_LANE_UP, FQN_LEV_PATH_DOWN, START(FQN_LANE_UP), FQN_LACT_NONE},
    {FQN_LANE_DOWN, FQN_LEV_PATH_DOWN, {D, T0, NOW + 50 * MS, 50}, FQN_LACT_NONE},
    {FQN_LANE_DIALING, FQN_LEV_PATH_DOWN, START(FQN_LANE_DIALING), FQN_LACT_NONE},
    {FQN_LANE_VERIFY, FQN_LEV_PATH_DOWN, START(FQN_LANE_VERIFY), FQN_LACT_NONE},
    /* the timers, at NOW: a DOWN lane is due; a re-dial is still within its limits */
    {FQN_LANE_UP, FQN_LEV_TICK, START(FQN_LANE_UP), FQN_LACT_NONE},
    {FQN_LANE_DOWN, FQN_LEV_TICK, START(FQN_LANE_DOWN), FQN_LACT_REDIAL},
    {FQN_LANE_DIALING, FQN_LEV_TICK, START(FQN_LANE_DIALING), FQN_LACT_NONE},
    {FQN_LANE_VERIFY, FQN_LEV_TICK, START(FQN_LANE_VERIFY), FQN_LACT_NONE},
    /* a re-dial starts only from DOWN */
    {FQN_LANE_UP, FQN_LEV_DIALED, START(FQN_LANE_UP), FQN_LACT_NONE},
    {FQN_LANE_DOWN, FQN_LEV_DIALED, {FQN_LANE_DIALING, NOW, T0 + 100 * MS, 100}, FQN_LACT_NONE},
    {FQN_LANE_DIALING, FQN_LEV_DIALED, START(FQN_LANE_DIALING), FQN_LACT_NONE},
    {FQN_LANE_VERIFY, FQN_LEV_DIALED, START(FQN_LANE_VERIFY), FQN_LACT_NONE},
    /* the hello out: DIALING waits for the first ack, its clock still the dial's */
    {FQN_LANE_UP, FQN_LEV_HELLO_OUT, START(FQN_LANE_UP), FQN_LACT_NONE},
    {FQN_LANE_DOWN, FQN_LEV_HELLO_OUT, START(FQN_LANE_DOWN), FQN_LACT_NONE},
    {FQN_LANE_DIALING, FQN_LEV_HELLO_OUT, {FQN_LANE_VERIFY, T0, T0 + 100 * MS, 100}, FQN_LACT_NONE},
    {FQN_LANE_VERIFY, FQN_LEV_HELLO_OUT, START(FQN_LANE_VERIFY), FQN_LACT_NONE},
    /* back: UP from now; a failback unless it was UP already */
    {FQN_LANE_UP, FQN_LEV_BACK, {FQN_LANE_UP, NOW, T0 + 100 * MS, 100}, FQN_LACT_NONE},
    {FQN_LANE_DOWN, FQN_LEV_BACK, {FQN_LANE_UP, NOW, T0 + 100 * MS, 100}, FQN_LACT_FAILBACK},
    {FQN_LANE_DIALING, FQN_LEV_BACK, {FQN_LANE_UP, NOW, T0 + 100 * MS, 100}, FQN_LACT_FAILBACK},
    {FQN_LANE_VERIFY, FQN_LEV_BACK, {FQN_LANE_UP, NOW, T0 + 100 * MS, 100}, FQN_LACT_FAILBACK},
};

static int same(const struct fqn_lane_fsm *a, const struct fqn_lane_fsm *b)
{
	return a->state == b->state && a->since_ns == b->since_ns && a->next_try_ns == b->next_try_ns &&
	       a->backoff_ms == b->backoff_ms;
}

static void t_every_transition(void)
{
	int seen[FQN_LANE_NSTATES][FQN_LANE_NEVENTS] = {{0}};
	int n = (int)(sizeof(table) / sizeof(table[0])), all = 1;

	for (int k = 0; k < n; k++) {
		const struct row *r = &table[k];
		struct fqn_lane_fsm f = START(r->state);
		enum fqn_lane_action act = fqn_lane_fsm_step(&f, r->event, NOW, &cfg);

		seen[r->state][r->event] = 1;
		ok(same(&f, &r->want) && act == r->act,
		   "%s --%s--> %s (since %+lld ms, next try %+lld ms, backoff %d), action %d",
		   state_name[r->state], event_name[r->event], state_name[f.state],
		   (long long)((f.since_ns - T0) / MS), (long long)((f.next_try_ns - T0) / MS), f.backoff_ms,
		   act);
	}
	for (int s = 0; s < FQN_LANE_NSTATES; s++)
		for (int e = 0; e < FQN_LANE_NEVENTS; e++)
			all &= seen[s][e];
	ok(all && n == FQN_LANE_NSTATES * FQN_LANE_NEVENTS, "the table has every (state, event) pair once");
}

static enum fqn_lane_action tick_at(enum fqn_lane_state s, int64_t at)
{
	struct fqn_lane_fsm f = START(s);

	return fqn_lane_fsm_step(&f, FQN_LEV_TICK, at, &cfg);
}

static void t_timers(void)
{
	ok(tick_at(FQN_LANE_DOWN, T0 + 99 * MS) == FQN_LACT_NONE, "DOWN before its next try: wait");
	ok(tick_at(FQN_LANE_DOWN, T0 + 100 * MS) == FQN_LACT_REDIAL, "DOWN at its next try: re-dial");
	ok(tick_at(FQN_LANE_DIALING, T0 + 250 * MS) == FQN_LACT_NONE,
	   "DIALING at the dial timeout: still waiting");
	ok(tick_at(FQN_LANE_DIALING, T0 + 251 * MS) == FQN_LACT_GIVE_UP,
	   "DIALING past the dial timeout: give up");
	ok(tick_at(FQN_LANE_VERIFY, T0 + 251 * MS) == FQN_LACT_NONE,
	   "VERIFY past the dial timeout: the ack may come");
	ok(tick_at(FQN_LANE_VERIFY, T0 + 2000 * MS) == FQN_LACT_NONE,
	   "VERIFY at the verify timeout: still waiting");
	ok(tick_at(FQN_LANE_VERIFY, T0 + 2001 * MS) == FQN_LACT_GIVE_UP,
	   "VERIFY past the verify timeout: give up");
	ok(tick_at(FQN_LANE_UP, T0 + 100000 * MS) == FQN_LACT_NONE, "UP has no timer");
}

static void t_backoff(void)
{
	struct fqn_lane_fsm f = START(FQN_LANE_UP);
	int want[] = {50, 100, 200, 250, 250};
	int64_t now = T0;
	int good = 1;

	fqn_lane_fsm_step(&f, FQN_LEV_FAIL, now, &cfg);
	good &= f.backoff_ms == want[0];
	for (int k = 1; k < 5; k++) {
		now = f.next_try_ns;
		good &= fqn_lane_fsm_step(&f, FQN_LEV_TICK, now, &cfg) == FQN_LACT_REDIAL;
		fqn_lane_fsm_step(&f, FQN_LEV_DIALED, now, &cfg);
		good &= fqn_lane_fsm_step(&f, FQN_LEV_FAIL, now + MS, &cfg) == FQN_LACT_BACKOFF;
		good &= f.backoff_ms == want[k] && f.next_try_ns == now + MS + want[k] * MS;
	}
	ok(good, "failed re-dials back off 50, 100, 200, 250, 250 ms (doubling up to the cap)");
	fqn_lane_fsm_step(&f, FQN_LEV_DIALED, f.next_try_ns, &cfg);
	fqn_lane_fsm_step(&f, FQN_LEV_HELLO_OUT, f.next_try_ns, &cfg);
	ok(fqn_lane_fsm_step(&f, FQN_LEV_BACK, f.next_try_ns, &cfg) == FQN_LACT_FAILBACK &&
	       f.state == FQN_LANE_UP,
	   "the re-dial verified: failback, UP");
	ok(fqn_lane_fsm_step(&f, FQN_LEV_FAIL, now, &cfg) == FQN_LACT_FAILOVER && f.backoff_ms == 50,
	   "the next failure starts from the smallest backoff again");
}

int main(void)
{
	t_every_transition();
	t_timers();
	t_backoff();
	return done_testing();
}
