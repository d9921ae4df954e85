/*
 * steer: per-connection lane weights from lane delays (control mode), pure,
 * no I/O, so tests feed it numbers and a clock.
 *
 * Signal. The sender measures each chunk's ack latency on its lane: from
 * the moment the lane takes the chunk (tx_chunk) to the receiver's
 * cumulative ack of it: the lane's own socket backlog, the fabric's queues
 * (a loaded, shaped spine) and the way back; while a lane has chunks
 * unacked, the age of its oldest one is a floor for the interval's p99, so
 * a lane whose acks stopped looks slow at once instead of unfed. It needs
 * no change to the ack record (the receiver's one-way delay would miss the
 * sender's socket backlog, where a slow lane's chunks wait), and the ack
 * batching it includes is the same on every lane. Per update the caller
 * hands in the interval's p50 and p99, the bytes acked, and the kernel's
 * congestion signs (TCP_INFO retransmits and delivered_ce, as deltas, and
 * the smoothed RTT).
 *
 * Control loop (every FQN_STEER_UPDATE_MS at most):
 *   d_i     = the p99 of the interval, x1.5 if the lane retransmitted
 *             or saw CE marks; EWMA over intervals with gain alpha
 *   dref    = the weight-averaged d over the up lanes
 *   t_i     = w_i * clamp(dref / d_i, 1/max_step, max_step)  (slower lanes shed)
 *   t       = normalised, then every up lane gets at least the floor
 *   apply t only if some |t_i - w_i| >= dead_band x max(t_i, w_i) (relative,
 *   so a lane near the floor still moves) and the last change is at
 *   least dwell ago (hysteresis: no flapping between two near-equal lanes)
 * A lane with no acks in an interval (starved at the floor) has its d moved
 * a quarter of the way to dref, so a lane whose congestion cleared is
 * probed again instead of staying at the floor forever: the floor's chunks
 * bring fresh samples, and a lower d raises its weight by up to max_step per
 * change. The fixed point is equal delays on all lanes, i.e. chunks split
 * in proportion to what each lane drains.
 *
 * Default time constants (struct fqn_steer_params):
 *   update 50 ms, EWMA gain 0.5 (a step shows half in one update, 90 % in
 *   ~3-4), dwell 150 ms, dead band 0.1 (relative), floor 0.02 of the traffic,
 *   max step 2x per change: a lane going from 1/2 to 0.1 takes about
 *   3 changes, i.e. 300-450 ms after the queue builds.
 *
 * Congestion and a new ECMP hash. A lane is congested when the kernel's
 * smoothed RTT of its socket (TCP_INFO: the fabric's queues, not the
 * sender's own socket backlog, so a job that merely saturates its lanes is
 * not "congested") exceeds congest_ratio x its base (the lowest RTT seen on
 * the lane, forgotten slowly, and not while the lane is congested) and the base by congest_abs (defaults 3x
 * and 10 ms: a lane's own load on a shaped link already adds a queue); it
 * stays congested until its RTT falls below half those margins (2x and
 * 5 ms over the base): a loaded queue's RTT swings, and one low sample must
 * not restart the clock below. When every up lane has been congested
 * for rehash_after (default 2 s), or the caller is advised to move (the path
 * page's FQ_PATH_ADVICE_MOVE), fqn_steer_rehash_pick() names the lane to
 * move (the most delayed); the caller re-opens it on a new source port and
 * calls fqn_steer_trial_begin(); after trial (default 500 ms) of traffic on
 * it, fqn_steer_trial_verdict() keeps it (its highest RTT over the trial
 * is below keep_ratio x the RTT before the move, default 0.8, and not
 * congested by the entry rule against the lane's base before the move) or
 * asks to move again; at most
 * max_moves (default 3) moves per episode, then a cooldown (default 10 s).
 * An episode that found no better path (its last path kept by rule) doubles
 * the wait before the next episode the lanes' congestion starts, up to 2^8
 * cooldowns; one that found one resets it. Such an episode is most often a
 * job's own load on a bottleneck every path shares (a saturated host link
 * queues like a congested spine: the RTT cannot tell them apart), where
 * moving again would only cost. Advice is held only by the plain cooldown.
 */
#ifndef FQN_STEER_H
#define FQN_STEER_H

#include <stdint.h>

#include "nccl-plugin/env.h"

#define FQN_STEER_UPDATE_MS 50

struct fqn_steer_params {
	int64_t update_ns;
	double alpha;
	int64_t dwell_ns;
	double dead_band;
	double floor;
	double max_step;
	double congest_ratio;
	int64_t congest_abs_ns;
	int64_t rehash_after_ns;
	int64_t trial_ns;
	double keep_ratio;
	int max_moves;
	int64_t cooldown_ns;
};

/* One lane's interval, as the sender measured it. */
struct fqn_steer_sample {
	int64_t p50_ns, p99_ns; /* ack lag quantiles (see above); ignored when samples == 0 */
	uint64_t samples;       /* chunks acked in the interval */
	uint64_t bytes;         /* bytes acked in the interval */
	uint32_t retrans_delta, ce_delta;
	uint32_t rtt_us; /* TCP_INFO smoothed RTT now (0: unknown) */
};

struct fqn_steer;

void fqn_steer_params_default(struct fqn_steer_params *p);

/* Every lane up with weight 1/nlanes. 0, -EINVAL (nlanes out of 1..16,
 * bad params) or -ENOMEM. */
int fqn_steer_create(int nlanes, const struct fqn_steer_params *p, int64_t now, struct fqn_steer **out);
void fqn_steer_destroy(struct fqn_steer *s);

/* Lane i's interval (call once per lane per update, before fqn_steer_update). */
void fqn_steer_observe(struct fqn_steer *s, int lane, const struct fqn_steer_sample *smp);

/* Lane i failed (weight 0, its share to the others at once) or is back
 * (it rejoins with the average share of the up lanes, its path having
 * been verified; its delay history is forgotten: it may be on a new path). */
void fqn_steer_set_up(struct fqn_steer *s, int lane, int up, int64_t now);

/* Recompute the weights from the observations; 1 if they changed. */
int fqn_steer_update(struct fqn_steer *s, int64_t now);

/* Lane i's weight, 0..1; the up lanes' weights sum to 1. */
double fqn_steer_weight(const struct fqn_steer *s, int lane);
/* Lane i's smoothed signal d (ns; 0 before its first sample). */
int64_t fqn_steer_delay(const struct fqn_steer *s, int lane);
/* 1 if lane i is congested (see above). */
int fqn_steer_congested(const struct fqn_steer *s, int lane);

/* The lane to move to a new ECMP hash now, or -1: every up lane congested
 * for rehash_after, or advised (advise = 1, the caller's path page MOVE
 * advice), not in a trial, not in the cooldown, more than one lane or a
 * lone lane that is congested. */
int fqn_steer_rehash_pick(struct fqn_steer *s, int advise, int64_t now);
/* The caller is moving lane i: its delay before the move is remembered. */
void fqn_steer_trial_begin(struct fqn_steer *s, int lane, int64_t now);
/* During a trial, once lane i is up again and trial has passed: 1 keep
 * the new path (the episode ends), 0 move it again (another trial
 * follows), -1 not decided yet (or no trial). After max_moves the last
 * path is kept and the cooldown starts. */
int fqn_steer_trial_verdict(struct fqn_steer *s, int64_t now);
/* The lane under trial, or -1. */
int fqn_steer_trial_lane(const struct fqn_steer *s);

#endif /* FQN_STEER_H */
