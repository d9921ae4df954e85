/*
 * test-rejoin: control mode's rejoin decisions (control/rejoin.h), pure:
 * the sender's re-dial policy for several lane timeouts, driven through
 * the lane state machine on recorded times, whose connection a re-dialed
 * hello is, and when the receiver reports a failback.
 */
#include <stdint.h>

#include "nccl-plugin/control/lane_fsm.h"
#include "nccl-plugin/control/rejoin.h"
#include "tests/unit/tap.h"

#define MS 1000000LL

static void policy(void)
{
	struct fqn_lane_fsm_cfg p = fqn_rejoin_policy(1000), fast = fqn_rejoin_policy(200),
				slow = fqn_rejoin_policy(2500);
	struct fqn_lane_fsm f = {0};
	int64_t t = 100 * MS;

	ok(p.backoff_min_ms == 50 && p.backoff_max_ms == 250 && p.dial_timeout_ms == 250 &&
	       p.path_recheck_ms == 50,
	   "backoff 50..250 ms, dial 250 ms, path recheck 50 ms");
	ok(p.verify_timeout_ms == 2000 && fast.verify_timeout_ms == 2000 && slow.verify_timeout_ms == 5000,
	   "verify: twice the lane timeout, at least 2 s (1000 -> 2000, 200 -> 2000, 2500 -> 5000)");

	/* A lane fails at 100 ms on a path that stays dead: its dials at
	 * +50, then each given up 250 ms on and backed off 100, 200, 250,
	 * 250 ms: a SYN about every half second. */
	fqn_lane_fsm_step(&f, FQN_LEV_FAIL, t, &p);
	ok(fqn_lane_fsm_step(&f, FQN_LEV_TICK, t + 49 * MS, &p) == FQN_LACT_NONE &&
	       fqn_lane_fsm_step(&f, FQN_LEV_TICK, t + 50 * MS, &p) == FQN_LACT_REDIAL,
	   "first re-dial 50 ms after the failure");
	{
		int64_t at = t + 50 * MS, want[] = {100, 200, 250, 250};
		int good = 1;

		for (int k = 0; k < 4; k++) {
			fqn_lane_fsm_step(&f, FQN_LEV_DIALED, at, &p);
			good &= fqn_lane_fsm_step(&f, FQN_LEV_TICK, at + 250 * MS, &p) == FQN_LACT_NONE;
			good &=
			    fqn_lane_fsm_step(&f, FQN_LEV_TICK, at + 250 * MS + 1, &p) == FQN_LACT_GIVE_UP;
			fqn_lane_fsm_step(&f, FQN_LEV_FAIL, at + 250 * MS + 1, &p);
			good &= f.backoff_ms == want[k];
			at = f.next_try_ns;
		}
		ok(good && at == t + 50 * MS + 4 * (250 * MS + 1) + 800 * MS,
		   "dead path: dials given up after 250 ms, backoff 100, 200, 250, 250 ms");
	}
	/* connected, hello out at +10 ms: the receiver's first ack may take
	 * up to 2 s from the dial */
	f = (struct fqn_lane_fsm){.state = FQN_LANE_DOWN, .next_try_ns = t};
	fqn_lane_fsm_step(&f, FQN_LEV_DIALED, t, &p);
	fqn_lane_fsm_step(&f, FQN_LEV_HELLO_OUT, t + 10 * MS, &p);
	ok(fqn_lane_fsm_step(&f, FQN_LEV_TICK, t + 2000 * MS, &p) == FQN_LACT_NONE &&
	       fqn_lane_fsm_step(&f, FQN_LEV_TICK, t + 2000 * MS + 1, &p) == FQN_LACT_GIVE_UP,
	   "verify: given up 2 s after the dial, not before");
}

static void judge(void)
{
	const struct fqn_hello conn = {.nlanes = 4,
				       .flags = FQN_HELLO_F_CONTROL | FQN_HELLO_F_REJOIN,
				       .chunk_size = 524288,
				       .token = 0x5eed1234abcdULL,
				       .conn_id = 0x1f00d2ULL};
	struct fqn_hello h = conn;
	const char *why = NULL;

	h.lane = 2;
	ok(fqn_rejoin_judge(&h, &conn, &why) == FQN_REJOIN_TAKE, "lane 2 of the connection: taken");
	h.token++;
	ok(fqn_rejoin_judge(&h, &conn, &why) == FQN_REJOIN_OTHER, "another token: another connection's");
	h.token--;
	h.conn_id++;
	ok(fqn_rejoin_judge(&h, &conn, &why) == FQN_REJOIN_OTHER, "another connection id: not this one");
	h.conn_id--;
	h.chunk_size = 1048576;
	why = NULL;
	ok(fqn_rejoin_judge(&h, &conn, &why) == FQN_REJOIN_REFUSE && why,
	   "another chunk size: refused, with a why");
	h.chunk_size = conn.chunk_size;
	h.nlanes = 2;
	ok(fqn_rejoin_judge(&h, &conn, &why) == FQN_REJOIN_REFUSE, "another lane count: refused");
	h.nlanes = 4;
	h.flags = FQN_HELLO_F_CONTROL;
	ok(fqn_rejoin_judge(&h, &conn, &why) == FQN_REJOIN_REFUSE, "not a rejoin hello: refused");
}

static void failback(void)
{
	ok(fqn_rejoin_failback_due(FQN_LANE_DOWN, 1), "down and reported here: a failback");
	ok(!fqn_rejoin_failback_due(FQN_LANE_DOWN, 0), "absent since setup (the sender reports it): none");
	ok(!fqn_rejoin_failback_due(FQN_LANE_UP, 1), "UP (only the sender saw it fail): none");
}

int main(void)
{
	policy();
	judge();
	failback();
	return done_testing();
}
