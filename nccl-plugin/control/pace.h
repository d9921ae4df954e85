/*
 * pace: per-lane sending rates from the fabric's queueing delay (control
 * mode, FABRICIQ_PACE=delay), pure, no I/O, so tests feed it numbers and a
 * clock. Delay-based in the spirit of Swift and TIMELY: a lane slows down
 * when the queue on its path grows past a target and speeds up while it is
 * below, so a shared bottleneck's queue stays near the target instead of
 * full, and the lanes sharing it converge to equal rates.
 *
 * Signal. The queueing delay q = srtt - min_rtt of the lane's TCP socket
 * (TCP_INFO tcpi_rtt and tcpi_min_rtt, read by the steering tick that
 * already samples TCP_INFO). TCP times a segment from when it leaves the
 * socket, so neither the sender's own socket backlog nor the pacing's own
 * hold-back is in it: only the fabric's queues (and the receiver's ack
 * turnaround). min_rtt is the kernel's windowed minimum (net.ipv4.
 * tcp_min_rtt_wlen, 300 s by default): the base, forgotten slowly, with no
 * second filter here. Not the one-way delay: the receiver's OWD is timed
 * from when the sender wrote the chunk into its socket, so it includes the
 * sender's socket backlog (which pacing itself lengthens: a controller fed
 * it would slow down because it slowed down), it is measured at the wrong
 * end (the rate is set at the sender; the figure would need the ack path
 * to come back) and it needs synchronised clocks. The RTT also carries the
 * reverse path's queue; a lane's acks are small, so it is its data path's.
 * Filtering it was measured and not kept: the lowest srtt of samples every
 * 5 ms within the update sat no closer to a ping through the queue (its
 * error against the ping's lowest in the update: p50 1.4 ms, p90 5.5-6.5
 * ms; srtt's against the ping's mean: 0.8 and 4.5-5.5 ms) and lags a
 * rising queue by up to an update.
 *
 * Control law (every update, FQN_PACE_UPDATE_MS: the steering tick; only a
 * lane that carried traffic in the interval and whose RTT is known; sent:
 * the bytes the transport got acked in the interval over its length; q:
 * the queueing delay, and while it rises, extrapolated `lead` updates
 * ahead along its rise since the update before, q_now + lead x (q_now -
 * q_prev) (q_now alone when the lane had no sample then): the signal is
 * an update or so late, so a rising queue is cut before it stands above
 * the target. A falling queue is taken as it stands: crediting the fall
 * stops the cuts while a queue far above the target still stands (the
 * fluid model below drained a full queue in 700 ms instead of 340)):
 *   q > target:   rate = max(floor, max(sent, rate x (1 - max_cut)) x (1 - cut) + ai),
 *                 cut  = min(max_cut, gain x (q - target) / update).
 *                 While a queue stands, the link is busy and the lanes'
 *                 sent rates sum to its capacity, so this is the rate that
 *                 drains a gain share of the excess queue within one update
 *                 (a decrease in proportion to the excess, bounded per
 *                 update), from what the lane sends, not from its previous
 *                 rate: a cut already draining the queue is not cut again.
 *                 But from no less than rate x (1 - max_cut): a lane that
 *                 sent little in one update (between messages) is not
 *                 thrown to the floor. An unpaced lane starts here.
 *   q <= target:  rate += ai; after MI_AFTER (3) updates in a row with
 *                 q <= target/2, rate = rate x (1 + mi) + ai instead (a
 *                 queue that stays low is a path with room: a lane cut on
 *                 a healthy fabric by a passing burst is back to line rate
 *                 in seconds, not minutes).
 *   rate >= ceiling: unpaced (rate 0: the kernel's own, unlimited).
 * The additive ai in both branches is the fairness: at the fixed point
 * every lane's cut equals ai, i.e. cut x rate_i = ai with the same cut
 * for every lane on the bottleneck (they see one queue), so equal rates;
 * a lane above its share loses more than it gains each update (a gap
 * shrinks by the cut, n x ai / C per update). The price is where the
 * queue settles: above the target by n x ai x update / (gain x C) for n
 * lanes on a link of capacity C (2 ms for 4 lanes on 200 Mbit/s; 16 us
 * on 25 Gbit/s). A lane that comes back up (a failback, a move to a new
 * path) forgets its history: unpaced, or, while its siblings are paced,
 * at their mean (the idle lanes' rule below) until it carries traffic.
 * The lanes of a connection: the chunk scheduler moves the connection's
 * data between them (steering's weights), so a lane can go idle while its
 * siblings carry its part, and come back. Their rates follow the data,
 * after the law above, so the connection's total is kept:
 *   a lane gone idle in the update gives its rate to the siblings busy in
 *     both updates, in equal parts (paced at their own rates, they would
 *     leave its part of the link unused until additive steps refilled it:
 *     bench-incast's queue ran empty 100-300 ms at each, 113 of 367
 *     50 ms bins);
 *   an idle lane keeps no rate above the mean of the busy lanes' (their
 *     rates by the law, before the transfer): at an old, higher rate it
 *     would come back on top of them, a burst the next update sees only
 *     after it (bench-incast's 10-18 ms spikes came each with a lane
 *     coming back);
 *   a lane back from idle takes its rate from those siblings.
 * This assumes the busy lanes are held by their rates, which is when
 * pacing matters (a connection that has less to send leaves them all
 * idle: nothing moves). A lane with no rate (unpaced) takes no part.
 * A connection not driven for more than two updates (the transport calls
 * the update while it has requests: a collective's connection is idle
 * between iterations) starts its next burst with every lane unpaced: the
 * rates cut at one iteration's end, its queue full, are no guide to the
 * next one's start. In a 4 MiB alltoall on 5 hosts with one host's link
 * shaped, the lanes on unshaped paths were paced in 87 % of their updates
 * without this rule (the RTT noise of a busy host read as a queue, the
 * rate then kept through the idle time), 10 % with it.
 * Where pacing does not pay: a finite transfer. A lane capped at its share
 * cannot take the part a sibling flow leaves when it ends first, until
 * additive steps find it (hundreds of ms); a collective whose iteration
 * moves a few MB through the bottleneck loses that at every iteration.
 * The same alltoall took 0.57-0.66 s an iteration paced against
 * 0.35-0.37 s unpaced (bench-incast's flows are long-lived: there it pays).
 *
 * Default constants (struct fqn_pace_params) and why:
 *   update 50 ms: the steering tick (no second timer). Coarse against a
 *     fabric RTT, so the cut is sized to the whole period, not per RTT.
 *   target 2 ms (FABRICIQ_PACE_TARGET_US): above the RTT noise of a busy
 *     host (a descheduled receiver adds hundreds of us to srtt) and far
 *     below a deep switch buffer (tens of ms at these rates).
 *   gain 0.5: drain half the excess per update. The signal is about one
 *     update late: on the emulated cluster a lane's srtt - min_rtt follows
 *     a ping through the same queue best 30-50 ms behind it (correlation
 *     0.86-0.89, mean error 1.5-2 ms), TCP timing each segment from its
 *     send and averaging 1/8 per ack. A linear loop cutting by g x excess
 *     on a sample one update old is critically damped at g = 1/4, but
 *     0.25 (ai halved with it) measured no better in bench-incast (queue
 *     p99 0.28-0.36x unpaced at 0.88-0.93x the throughput, against 0.28x
 *     at 0.93x at 0.5) and halves the reaction below: the troughs there
 *     were mostly whole connections stalling (a lane paced low, its
 *     sibling lane acking nothing), not the loop's swing.
 *   lead 1.5 updates, on a rising queue only: bench-incast (4 senders x
 *     2 lanes into 200 Mbit/s, against the unpaced queue's p99 and
 *     throughput in the same run, 3 rounds of 20 s, the lanes following
 *     their data as above): 0.171x, 0.179x and 0.192x the queue's p99 at
 *     0.979x the throughput (three runs, the last two with the idle rule
 *     above). No lead: 0.238x at 0.979x. Lead 1.5 both ways: 0.203x
 *     at 0.989x, 0.203x at 0.969x, 0.192x at 0.980x, and the slower
 *     drain above. Before the lanes followed their data, lead (both
 *     ways) moved little: 0 0.257x at 0.975x, 1 0.251x at 1.00x, 1.5
 *     0.253x at 0.959x, 2 0.227x at 0.925x. More lead answers noise in
 *     the RTT as if it were a trend.
 *   max_cut 0.5: no update more than halves a rate (a wild RTT sample
 *     costs at most that).
 *   ai 0.125 MB/s (1 Mbit/s) per update: the fairness step, sized for
 *     the smallest bottlenecks (the queue's offset above: 2 ms for 4 lanes
 *     on 200 Mbit/s, 4 ms for 8; on fast links it is negligible, and
 *     fairness converges more slowly there: the gap shrinks by n x ai / C
 *     per update).
 *   mi 0.1 per update: x2 in ~7 updates, 350 ms (only on a low queue);
 *     from the floor to unpaced in ~5 s. All lanes grow together, so the
 *     queue overshoots by up to mi x update when they find the link full
 *     again.
 *   floor 1.25 MB/s (10 Mbit/s): a lane keeps sending, so its RTT keeps
 *     being sampled and acks keep coming (the failover's no-progress
 *     timer must not mistake a paced lane for a dead one).
 *   ceiling 50 GB/s (400 Gbit/s): at or above it a lane is unpaced.
 * Reaction (test-pace's fluid model, 4 lanes, 200 Mbit/s; it settles at
 * 4 ms): a full 100 ms queue is under 8 ms in ~350 ms (cuts of max_cut);
 * the capacity halved under a paced load: back under 8 ms in ~250 ms.
 */
#ifndef FQN_PACE_H
#define FQN_PACE_H

#include <stdint.h>

#include "nccl-plugin/env.h"

#define FQN_PACE_UPDATE_MS 50
#define FQN_PACE_TARGET_US 2000

struct fqn_pace_params {
	int64_t update_ns;
	int64_t target_ns;
	double gain;
	double max_cut;
	double ai;      /* bytes/s per update */
	double mi;      /* fraction per update */
	double floor;   /* bytes/s */
	double ceiling; /* bytes/s */
	double lead;    /* updates a rising queue is extrapolated ahead (0..4) */
};

/* One lane's interval, as the transport saw it. */
struct fqn_pace_sample {
	uint32_t rtt_us, min_rtt_us; /* smoothed and windowed minimum RTT; 0: unknown */
	uint64_t bytes;              /* bytes the transport got acked in the interval */
};

struct fqn_pace;

void fqn_pace_params_default(struct fqn_pace_params *p);

/* Every lane unpaced. 0, -EINVAL (nlanes out of 1..16, bad params:
 * update, target, ai or floor not positive, gain or max_cut outside
 * (0, 1], mi negative, ceiling not above the floor) or -ENOMEM. */
int fqn_pace_create(int nlanes, const struct fqn_pace_params *p, int64_t now, struct fqn_pace **out);
void fqn_pace_destroy(struct fqn_pace *p);

/* Lane i's interval (at most once per lane per update, before fqn_pace_update). */
void fqn_pace_observe(struct fqn_pace *p, int lane, const struct fqn_pace_sample *smp);
/* Lane i came back up (a failback or a new path): unpaced, history forgotten. */
void fqn_pace_reset(struct fqn_pace *p, int lane);

/* Recompute the rates from the observations, at most once per update;
 * 1 if some lane's rate changed. */
int fqn_pace_update(struct fqn_pace *p, int64_t now);

/* Lane i's rate, bytes/s; 0: unpaced. */
double fqn_pace_rate(const struct fqn_pace *p, int lane);
/* Lane i's last queueing delay, ns (0: none seen). */
int64_t fqn_pace_delay(const struct fqn_pace *p, int lane);

#endif /* FQN_PACE_H */
