/*
 * test-failover-decide: control mode's failover decisions
 * (control/failover.h), pure: the path page's age, a page lagging a lane,
 * the grace check, the sender's no-progress and the receiver's no-data
 * rules, on clock readings written out by hand around their limits.
 */
#include <errno.h>
#include <stdint.h>

#include "nccl-plugin/control/failover.h"
#include "tests/unit/tap.h"

#define MS 1000000LL
#define S  (1000 * MS)

/* test-failover's settings: FABRICIQ_LANE_TIMEOUT_MS=200,
 * FABRICIQ_FAILOVER_GRACE_MS=1500, FABRICIQ_PATH_PAGE_MAX_AGE_MS=2000 */
static const struct fqn_failover_cfg cfg = {
    .lane_timeout_ms = 200, .grace_ms = 1500, .path_page_max_age_ms = 2000};
/* the defaults: 1 s lane timeout, 30 s grace, 5 s page age */
static const struct fqn_failover_cfg dflt = {
    .lane_timeout_ms = 1000, .grace_ms = 30000, .path_page_max_age_ms = 5000};

static void page_age(void)
{
	/* An agent that died with the path DOWN leaves that page behind. */
	ok(fqn_path_page_fresh(1000, 1000 + 2 * S, &cfg), "page 2000 ms old: fresh at the limit");
	ok(!fqn_path_page_fresh(1000, 1000 + 2 * S + 1, &cfg), "page 1 ns past 2000 ms: stale");
	ok(!fqn_path_page_fresh(0, 5, &cfg), "a page never published: stale");
	ok(!fqn_path_page_fresh(3 * S, 100, &cfg), "a page 3 s in the future (another clock): stale");
	ok(fqn_path_page_fresh(3 * S, 3 * S - 2 * S, &cfg), "a page 2 s ahead: fresh (within the limit)");
	ok(fqn_path_page_fresh(1000, 1000 + 4 * S, &dflt), "4 s old under the 5 s default: fresh");
}

static void page_lag(void)
{
	/* From the run that set the margin: the path went DOWN at raw
	 * 7.000 s; the receiver's lane came UP (re-dialed) at monotonic
	 * 20.100 s, the sender's at 20.400 s, both reading the page at raw
	 * 7.450 s / monotonic 20.450 s. */
	int64_t down = 7000 * MS, raw = 7450 * MS, mono = 20450 * MS;

	ok(!fqn_failover_page_lags(FQN_LANE_UP, 20100 * MS, mono, down, raw),
	   "a lane UP 350 ms ago, DOWN 450 ms old: inside the margin, the DOWN counts");
	ok(!fqn_failover_page_lags(FQN_LANE_UP, 20400 * MS, mono, down, raw),
	   "a lane UP 50 ms ago, DOWN 450 ms old: the DOWN counts at both ends");
	/* the page has not caught up 2 s later: the lane UP for 300 ms has
	 * crossed the path since the DOWN (2.45 s old) by more than 500 ms */
	ok(fqn_failover_page_lags(FQN_LANE_UP, 22150 * MS, 22450 * MS, down, 9450 * MS),
	   "DOWN 2450 ms old, lane UP 300 ms: the page lags");
	ok(!fqn_failover_page_lags(FQN_LANE_UP, 22150 * MS, 22450 * MS, down, 7800 * MS),
	   "DOWN 800 ms old, lane UP 300 ms: exactly the margin, not a lag");
	ok(fqn_failover_page_lags(FQN_LANE_UP, 22150 * MS, 22450 * MS, down, 7800 * MS + 1),
	   "1 ns past the margin: a lag");
	ok(!fqn_failover_page_lags(FQN_LANE_DOWN, 22150 * MS, 22450 * MS, down, 9450 * MS),
	   "a lane not UP: the DOWN counts");
	ok(!fqn_failover_page_lags(FQN_LANE_VERIFY, 22150 * MS, 22450 * MS, down, 9450 * MS),
	   "a lane in VERIFY: the DOWN counts");
	ok(!fqn_failover_page_lags(FQN_LANE_UP, 22150 * MS, 22450 * MS, 0, 9450 * MS),
	   "no change time on the page: the DOWN counts");
}

static void grace(void)
{
	struct fqn_grace_lane up_down[2] = {{FQN_LANE_UP, 0}, {FQN_LANE_DOWN, -ETIMEDOUT}};
	struct fqn_grace_lane down[2] = {{FQN_LANE_DOWN, 0}, {FQN_LANE_DIALING, -ETIMEDOUT}};
	struct fqn_grace_lane refused[2] = {{FQN_LANE_DOWN, -ECONNREFUSED}, {FQN_LANE_DOWN, -ECONNREFUSED}};
	struct fqn_grace_lane reset[2] = {{FQN_LANE_DOWN, -ECONNRESET}, {FQN_LANE_DOWN, -ECONNRESET}};
	struct fqn_grace_lane mixed[2] = {{FQN_LANE_DOWN, -ECONNREFUSED}, {FQN_LANE_DOWN, -ETIMEDOUT}};
	int64_t since = 4 * S;

	ok(fqn_failover_grace(up_down, 2, 1, &since, 5 * S, &cfg) == FQN_GRACE_OK && since == 0,
	   "a lane UP: fine, and the all-down clock resets");
	ok(fqn_failover_grace(down, 2, 1, &since, 10 * S, &cfg) == FQN_GRACE_OK && since == 10 * S,
	   "all down: the clock starts at 10 s");
	ok(fqn_failover_grace(down, 2, 1, &since, 10 * S + 1500 * MS, &cfg) == FQN_GRACE_OK &&
	       since == 10 * S,
	   "down 1500 ms, the grace: still fine");
	ok(fqn_failover_grace(down, 2, 0, &since, 10 * S + 1500 * MS + 1, &cfg) == FQN_GRACE_EXPIRED,
	   "down 1 ns past the grace: expired");
	ok(fqn_failover_grace(down, 2, 0, &since, 10 * S + 29 * S, &dflt) == FQN_GRACE_OK,
	   "29 s under the 30 s default: fine");
	since = 0;
	ok(fqn_failover_grace(refused, 2, 1, &since, 3 * S, &cfg) == FQN_GRACE_PEER_GONE && since == 3 * S,
	   "sender, every re-dial refused: the peer is gone at once");
	since = 0;
	ok(fqn_failover_grace(refused, 2, 0, &since, 3 * S, &cfg) == FQN_GRACE_OK,
	   "receiver, refused (not its sign): wait for the grace");
	since = 0;
	ok(fqn_failover_grace(reset, 2, 0, &since, 3 * S, &cfg) == FQN_GRACE_PEER_GONE,
	   "receiver, every lane reset: the peer is gone at once");
	since = 0;
	ok(fqn_failover_grace(reset, 2, 1, &since, 3 * S, &cfg) == FQN_GRACE_OK,
	   "sender, reset (not its sign): wait for the grace");
	since = 0;
	ok(fqn_failover_grace(mixed, 2, 1, &since, 3 * S, &cfg) == FQN_GRACE_OK,
	   "sender, one refused and one timed out: a link may be down, wait");
}

static void no_progress(void)
{
	struct fqn_lane_info dead = {.idle_rx_ms = 200, .unacked = 3};
	struct fqn_lane_info consuming = {.idle_rx_ms = 5, .unacked = 0};
	struct fqn_lane_info quiet = {.idle_rx_ms = 199, .unacked = 3};
	int64_t progress = 50 * S;

	ok(!fqn_failover_send_stalled(0, progress, progress + 5 * S, &cfg),
	   "nothing outstanding: never stalled");
	ok(!fqn_failover_send_stalled(4, progress, progress + 200 * MS - 1, &cfg),
	   "outstanding, no ack for 200 ms - 1 ns: not yet");
	ok(fqn_failover_send_stalled(4, progress, progress + 200 * MS, &cfg),
	   "no ack for the lane timeout: ask");
	ok(fqn_failover_send_dead(NULL, progress + 200 * MS, &progress, &cfg) && progress == 50 * S,
	   "the transport cannot say: dead");
	ok(fqn_failover_send_dead(&dead, progress + 200 * MS, &progress, &cfg) && progress == 50 * S,
	   "3 segments unacked, nothing heard for 200 ms: dead");
	ok(!fqn_failover_send_dead(&quiet, progress + 200 * MS, &progress, &cfg) &&
	       progress == 50 * S + 100 * MS,
	   "heard 199 ms ago: alive, looked at again in half a timeout");
	progress = 50 * S;
	ok(!fqn_failover_send_dead(&consuming, progress + 300 * MS, &progress, &cfg) &&
	       progress == 50 * S + 200 * MS,
	   "nothing unacked (the receiver is not consuming): alive");
	ok(!fqn_failover_send_stalled(4, progress, 50 * S + 399 * MS, &cfg) &&
	       fqn_failover_send_stalled(4, progress, 50 * S + 400 * MS, &cfg),
	   "the next look: half a timeout later");
	ok(fqn_failover_detect_ns("socket-error", 9 * S, 8 * S) == 0, "a socket error: detected at once");
	ok(fqn_failover_detect_ns("no-progress", 9 * S, 8 * S) == S,
	   "no progress: the time since the last ack");
	ok(fqn_failover_detect_ns("path-down", 9 * S, 8700 * MS) == 300 * MS, "path down: likewise");
}

static void no_data(void)
{
	/* 200 ms lane timeout: keepalive at least 1 s, silent after 1.2 s */
	struct fqn_lane_info heard = {.idle_rx_ms = 1199};
	struct fqn_lane_info gone = {.idle_rx_ms = 1200};
	/* 2500 ms: keepalive 2 s (whole seconds), silent after 4.5 s */
	const struct fqn_failover_cfg slow = {
	    .lane_timeout_ms = 2500, .grace_ms = 30000, .path_page_max_age_ms = 5000};
	struct fqn_lane_info ka_heard = {.idle_rx_ms = 4499}, ka_gone = {.idle_rx_ms = 4500};

	ok(!fqn_failover_recv_quiet(10 * S, 0, 20 * S, &cfg), "no receive posted: never quiet");
	ok(!fqn_failover_recv_quiet(10 * S, 10 * S + 100 * MS, 10 * S + 299 * MS, &cfg),
	   "posted at 10.1 s, data at 10 s: quiet 199 ms, not yet");
	ok(fqn_failover_recv_quiet(10 * S, 10 * S + 100 * MS, 10 * S + 300 * MS, &cfg),
	   "quiet 200 ms since the receive was posted: ask");
	ok(!fqn_failover_recv_quiet(10 * S + 250 * MS, 10 * S, 10 * S + 300 * MS, &cfg),
	   "data 50 ms ago on a receive posted 300 ms ago: not quiet");
	ok(fqn_failover_recv_silent(NULL, &cfg), "the transport cannot say: silent");
	ok(!fqn_failover_recv_silent(&heard, &cfg), "heard 1199 ms ago (1 s keepalive + 200 ms): alive");
	ok(fqn_failover_recv_silent(&gone, &cfg), "1200 ms: silent");
	ok(!fqn_failover_recv_silent(&ka_heard, &slow) && fqn_failover_recv_silent(&ka_gone, &slow),
	   "2500 ms timeout: the keepalive in whole seconds (2 s) + 2.5 s");
}

int main(void)
{
	page_age();
	page_lag();
	grace();
	no_progress();
	no_data();
	return done_testing();
}
