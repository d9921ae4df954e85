/* send_steer: the send comm's periodic update: steering (FABRICIQ_STEER),
 * pacing (FABRICIQ_PACE) and the controller's rates (the path page's);
 * see send_priv.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/path_page.h"
#include "nccl-plugin/control/pace.h"
#include "nccl-plugin/control/steer.h"
#include "nccl-plugin/core/ctx.h"
#include "nccl-plugin/core/failover.h"
#include "nccl-plugin/core/send_priv.h"
#include "nccl-plugin/plog.h"

void send_steer_lane_state(struct fqn_send *s, int i, int up, int64_t now)
{
	struct steer_state *st = s->st;
	double vmin = -1;

	if (!st)
		return;
	/* steering splits the chunks until the next update has every up lane's rate */
	st->given = 0;
	if (up) { /* a new socket: unpaced (the next update gives it pacing's rate), its own byte count */
		struct fqn_lane *l = s->c.lanes[i];

		if (st->pace)
			fqn_pace_reset(st->pace, i);
		st->rate_set[i] = st->tx_acked[i] = 0;
		/* ... but the controller's rate at once: its lane windows say
		 * it is in force (test-rates on 4 rails: a re-dialed lane's
		 * window ended unpaced under a rate given) */
		if (st->assigned[i] && l && l->ops->set_rate && l->ops->set_rate(l, st->assigned[i]) == 0)
			st->rate_set[i] = st->assigned[i];
	}
	if (!st->ctl)
		return;
	fqn_steer_set_up(st->ctl, i, up, now);
	for (int k = 0; k < s->c.nlanes; k++)
		if (k != i && s->c.lc[k].fsm.state == FQN_LANE_UP && (vmin < 0 || st->vt[k] < vmin))
			vmin = st->vt[k];
	st->vt[i] = vmin < 0 ? 0 : vmin; /* back: no burst to catch up */
	fqn_hist_reset(&st->lat[i]);
}

/* Lane i's share of the connection's chunks. While the controller gives
 * every up lane a rate, the rates: each lane drains no faster than its
 * rate, and their ratio is the split that uses all of them. Steering's
 * weights follow the lanes' delays, not their caps, and split them
 * unevenly: one lane held at its rate while its sibling used part of its
 * own. Otherwise, and from a lane's change of state to the next update,
 * steering's weight. */
static double lane_share(const struct steer_state *st, int i)
{
	return st->given && st->assigned[i] ? (double)st->assigned[i] / (double)st->given
					    : fqn_steer_weight(st->ctl, i);
}

/* May UP lane i take a new chunk? (Its virtual clock is within one chunk
 * of the lowest up lane's; a lane being moved takes none.) */
int send_steer_allows(struct fqn_send *s, int i)
{
	struct steer_state *st = s->st;
	double vmin = st->vt[i];

	if (!st->ctl)
		return 1;
	if (i == st->move)
		return 0;
	for (int k = 0; k < s->c.nlanes; k++)
		if (k != i && k != st->move && s->c.lc[k].fsm.state == FQN_LANE_UP && st->vt[k] < vmin)
			vmin = st->vt[k];
	return st->vt[i] - vmin <= (double)s->c.chunk_size / lane_share(st, i) + 1;
}

void send_steer_took(struct fqn_send *s, int i, const struct fqn_cref *c, int resent, int64_t now)
{
	struct steer_state *st = s->st;
	uint32_t len = c->len;
	double w;

	(void)resent;
	if (!st->ctl)
		return;
	w = lane_share(st, i);
	st->push_ns[i][s->txq[i]->pushed % FQN_TXQ_MAX] = now;
	st->vt[i] += len / (w > 0 ? w : 1e-3);
	st->sent_bytes[i] += len;
}

/* The port of an "addr:port" lane name; 0 if none. */
static uint32_t lane_port(const char *name)
{
	const char *colon = strrchr(name, ':');

	return colon ? (uint32_t)strtoul(colon + 1, NULL, 10) : 0;
}

/* Path page advice: MOVE for our job on lane i's path (for lane i itself
 * where it names a lane by its source port), a generation not acted on yet
 * (*gen: it, to be marked once the move is under way: an advice that
 * meets a trial or the cooldown stays pending). */
static int steer_advised(struct fqn_send *s, int i, uint32_t *gen)
{
	struct fq_path_page_reader *r = __atomic_load_n(&s->c.ctx->paths, __ATOMIC_ACQUIRE);
	struct fq_path_entry e;

	if (!r || !s->c.ctx->cfg.advice || !s->c.lc[i].remote_ipv4 ||
	    fq_path_page_lookup(r, s->c.lc[i].nic, s->c.lc[i].remote_ipv4, &e) < 0)
		return 0;
	if (e.advice != FQ_PATH_ADVICE_MOVE || e.advice_gen == s->st->advice_gen[i] ||
	    (e.advice_job && e.advice_job != s->st->job) || e.advice_until_ns < fq_now_ns() ||
	    (e.advice_port && e.advice_port != lane_port(s->c.lc[i].local)))
		return 0;
	*gen = e.advice_gen;
	return 1;
}

static void steer_trace(struct fqn_send *s, const char *what)
{
	struct steer_state *st = s->st;
	struct timespec ts;

	if (!st->trace)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	fprintf(st->trace, "%lld.%09ld %llx %s", (long long)ts.tv_sec, ts.tv_nsec,
		(unsigned long long)s->c.conn_id, what);
	for (int i = 0; i < s->c.nlanes; i++) { /* path=: the lane's socket now (a move changes it) */
		fprintf(st->trace, " lane%d %s w=%.3f sent=%llu delay_us=%lld path=%s>%s%s", i,
			s->c.lc[i].nic, fqn_steer_weight(st->ctl, i), (unsigned long long)st->sent_bytes[i],
			(long long)(fqn_steer_delay(st->ctl, i) / 1000),
			s->c.lanes[i] ? s->c.lanes[i]->local : "-", s->c.lanes[i] ? s->c.lanes[i]->peer : "-",
			fqn_steer_congested(st->ctl, i) ? " congested" : "");
		if (st->pace || st->assigned[i]) /* rate=0: unpaced; given: the controller's */
			fprintf(st->trace, " rate_mbps=%.1f given_mbps=%.1f",
				(double)st->rate_set[i] * 8 / 1e6, (double)st->assigned[i] * 8 / 1e6);
	}
	fputc('\n', st->trace);
	fflush(st->trace);
}

/* Lane i has nothing unacked: park it and re-dial on a new source port. */
static void steer_move_out(struct fqn_send *s, int i, int64_t now)
{
	struct fqn_lane_ctl *lc = &s->c.lc[i];

	FQN_INFO("connection %llx lane %d (%s %s -> %s): every lane congested or advised to move; "
		 "re-opening it on a new source port",
		 (unsigned long long)s->c.conn_id, i, lc->nic, lc->local, lc->peer);
	fqn_ctl_event(&s->c, i, i, "steer", now, 0, 0, 0);
	fqn_steer_trial_begin(s->st->ctl, i, now);
	send_steer_lane_state(s, i, 0, now);
	if (s->parked[i])
		s->parked[i]->ops->destroy(s->parked[i]);
	s->parked[i] = s->c.lanes[i];
	s->c.lanes[i] = NULL;
	s->busy[i] = 0;
	s->st->move = -1;
	s->st->moved[i] = 1;
	fqn_lane_fsm_step(&lc->fsm, FQN_LEV_MOVE, now, &s->fsm); /* re-dialed at once */
	lc->cause = "steer";
	lc->down_ns = now;
}

/* 1 if a lane other than i is UP. */
static int steer_others_up(const struct fqn_send *s, int i)
{
	for (int k = 0; k < s->c.nlanes; k++)
		if (k != i && s->c.lc[k].fsm.state == FQN_LANE_UP)
			return 1;
	return 0;
}

/* Lane i's steering sample for this update (its ack latencies, and the
 * TCP_INFO the tick read: info NULL when it could not); 1 if it carried
 * traffic. */
static int steer_observe(struct fqn_send *s, int i, const struct fqn_lane_info *info, int64_t now)
{
	struct steer_state *st = s->st;
	struct fqn_steer_sample smp = {0};

	smp.samples = st->lat[i].count;
	smp.p50_ns = fqn_hist_quantile(&st->lat[i], 0.5);
	smp.p99_ns = fqn_hist_quantile(&st->lat[i], 0.99);
	smp.bytes = st->acked_bytes[i];
	if (s->txq[i]->count) {
		/* a lane whose acks stopped must look slow at once, not
		 * unfed: its oldest unacked chunk's lag so far is a floor */
		const struct fqn_txq *q = s->txq[i];
		int64_t age = now - st->push_ns[i][(q->pushed - q->count) % FQN_TXQ_MAX];

		if (!smp.samples || age > smp.p99_ns) {
			smp.p99_ns = age;
			smp.p50_ns = smp.samples ? smp.p50_ns : age;
			smp.samples += !smp.samples;
		}
	}
	if (info) {
		smp.rtt_us = info->rtt_us;
		smp.retrans_delta = info->retrans - st->retrans[i];
		smp.ce_delta = info->delivered_ce - st->ce[i];
		st->retrans[i] = info->retrans;
		st->ce[i] = info->delivered_ce;
	}
	fqn_steer_observe(st->ctl, i, &smp);
	fqn_hist_reset(&st->lat[i]);
	st->acked_bytes[i] = 0;
	return smp.samples != 0;
}

/* Lane i's pacing sample: its RTTs and the bytes its transport got acked
 * since the last update. */
static void pace_observe(struct fqn_send *s, int i, const struct fqn_lane_info *info)
{
	struct steer_state *st = s->st;
	struct fqn_pace_sample smp = {.rtt_us = info->rtt_us, .min_rtt_us = info->min_rtt_us};

	smp.bytes = info->bytes_acked >= st->tx_acked[i] ? info->bytes_acked - st->tx_acked[i] : 0;
	st->tx_acked[i] = info->bytes_acked;
	if (st->trace) { /* the controller's input, for lining it up with the fabric's queue */
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		fprintf(st->trace,
			"%lld.%09ld %llx pace lane%d srtt_us=%u min_rtt_us=%u acked=%llu rate_mbps=%.1f\n",
			(long long)ts.tv_sec, ts.tv_nsec, (unsigned long long)s->c.conn_id, i, info->rtt_us,
			info->min_rtt_us, (unsigned long long)smp.bytes, (double)st->rate_set[i] * 8 / 1e6);
		fflush(st->trace);
	}
	fqn_pace_observe(st->pace, i, &smp);
}

/* A change of a lane's rate worth a log line: paced or unpaced, or by
 * half or more; at most one a second per lane. */
#define PACE_LOG_RATIO 1.5
#define PACE_LOG_NS    1000000000LL

/* The controller's rate for each up lane's path (the path page's rates,
 * issue 20: its path shares a congested link with a higher network
 * class), for this job; a change is logged. The page's times are
 * CLOCK_MONOTONIC_RAW (fq_now_ns), as the agent writes them. */
static void rates_read(struct fqn_send *s)
{
	struct steer_state *st = s->st;
	struct fq_path_page_reader *r = __atomic_load_n(&s->c.ctx->paths, __ATOMIC_ACQUIRE);
	int64_t raw = fq_now_ns();
	int unrated = 0;

	st->given = 0;
	for (int i = 0; i < s->c.nlanes; i++) {
		struct fq_path_rate x;
		uint64_t a = 0, was = st->assigned[i];

		if (r && st->job && s->c.lc[i].remote_ipv4 && s->c.lc[i].fsm.state == FQN_LANE_UP &&
		    fq_path_page_rate(r, s->c.lc[i].nic, s->c.lc[i].remote_ipv4, st->job, raw, &x) == 0)
			a = x.rate;
		st->assigned[i] = a;
		s->c.stats[i].assigned_rate = a;
		if (s->c.lc[i].fsm.state == FQN_LANE_UP) {
			st->given += a;
			unrated |= !a;
		}
		if (a == was)
			continue;
		if (a)
			FQN_INFO(
			    "connection %llx lane %d (%s %s -> %s): the controller gives it %.2f Mbit/s (its "
			    "path shares a congested link with a higher network class)",
			    (unsigned long long)s->c.conn_id, i, s->c.lc[i].nic, s->c.lc[i].local,
			    s->c.lc[i].peer, (double)a * 8 / 1e6);
		else
			FQN_INFO("connection %llx lane %d (%s %s -> %s): the controller's rate lifted",
				 (unsigned long long)s->c.conn_id, i, s->c.lc[i].nic, s->c.lc[i].local,
				 s->c.lc[i].peer);
	}
	if (unrated)
		st->given = 0;
}

/* Lane i's rate: the lower of pacing's and the controller's (0: none). */
static uint64_t lane_rate(const struct steer_state *st, int i)
{
	uint64_t p = st->pace ? (uint64_t)fqn_pace_rate(st->pace, i) : 0, a = st->assigned[i];

	return p && a ? (p < a ? p : a) : p ? p : a;
}

/* Apply the lanes' rates (pacing's, the controller's) to the up lanes'
 * transports (only those that changed: a setsockopt per lane per change,
 * off the chunk path) and log pacing's material changes. */
static void rates_apply(struct fqn_send *s, int64_t now)
{
	struct steer_state *st = s->st;

	for (int i = 0; i < s->c.nlanes; i++) {
		struct fqn_lane *l = s->c.lanes[i];
		uint64_t r = lane_rate(st, i), was = st->rate_logged[i];
		int rc;

		if (s->c.lc[i].fsm.state != FQN_LANE_UP || !l || r == st->rate_set[i] || !l->ops->set_rate)
			continue;
		rc = l->ops->set_rate(l, r);
		if (rc < 0) {
			if (!st->rate_err)
				FQN_WARN("connection %llx lane %d (%s): cannot pace it: %s; it runs unpaced",
					 (unsigned long long)s->c.conn_id, i, s->c.lc[i].nic, strerror(-rc));
			st->rate_err = 1;
			continue;
		}
		st->rate_set[i] = r;
		if (!st->pace || (r && r == st->assigned[i])) /* the controller's: logged as read */
			continue;
		if (now - st->logged_ns[i] < PACE_LOG_NS ||
		    (!r == !was && (r ? (double)r / (double)was : 1) < PACE_LOG_RATIO &&
		     (r ? (double)was / (double)r : 1) < PACE_LOG_RATIO))
			continue;
		st->rate_logged[i] = r;
		st->logged_ns[i] = now;
		if (r)
			FQN_INFO(
			    "connection %llx lane %d (%s %s -> %s): paced at %.1f Mbit/s (queueing delay "
			    "%.2f ms, target %.2f ms)",
			    (unsigned long long)s->c.conn_id, i, s->c.lc[i].nic, s->c.lc[i].local,
			    s->c.lc[i].peer, (double)r * 8 / 1e6, (double)fqn_pace_delay(st->pace, i) / 1e6,
			    s->c.ctx->cfg.pace_target_us / 1e3);
		else
			FQN_INFO("connection %llx lane %d (%s %s -> %s): unpaced (the queue stayed low)",
				 (unsigned long long)s->c.conn_id, i, s->c.lc[i].nic, s->c.lc[i].local,
				 s->c.lc[i].peer);
	}
}

/* The job report's time throttled: each up lane whose rate was capped
 * since the last update counts the time since (telemetry reports it per
 * interval, LaneReport.throttled_ns), and the time it had a rate from
 * the controller (assigned_ns). */
void send_steer_account(struct fqn_send *s, int64_t now)
{
	struct steer_state *st = s->st;

	for (int i = 0; st->tick_ns && i < s->c.nlanes; i++) {
		if (s->c.lc[i].fsm.state != FQN_LANE_UP)
			continue;
		if (st->rate_set[i])
			s->c.stats[i].throttled_ns += now - st->tick_ns;
		if (st->assigned[i])
			s->c.stats[i].assigned_ns += now - st->tick_ns;
	}
	st->tick_ns = now;
}

/* Every FQN_STEER_UPDATE_MS: read each up lane's TCP_INFO once, feed the
 * controllers, pace, move a lane if due. Never the last UP lane: a lane
 * being moved takes no new chunks, and a moved-out last lane would leave
 * the connection with none (a lone lane carrying a failed lane's share
 * looks congested, which is no reason). */
void send_steer_tick(struct fqn_send *s, int64_t now)
{
	struct steer_state *st = s->st;
	int changed, advised = -1, pick, trial, traffic = 0;
	uint32_t gen = 0;

	if (st->move >= 0 && !steer_others_up(s, st->move))
		st->move = -1; /* the other lanes failed while it drained: keep it */
	if (st->move >= 0 && s->c.lc[st->move].fsm.state == FQN_LANE_UP && !s->txq[st->move]->count &&
	    !s->busy[st->move]) {
		char what[112];

		snprintf(what, sizeof(what), "move by=%s lane=%d from=%s", st->move_why, st->move,
			 s->c.lc[st->move].local);
		steer_move_out(s, st->move, now);
		steer_trace(s, what);
	}
	if (now < st->next_ns)
		return;
	st->next_ns = now + (int64_t)FQN_STEER_UPDATE_MS * 1000000;
	send_steer_account(s, now);
	rates_read(s);
	if (st->vt[0] > 1e15) /* keep the virtual clocks small: only their differences count */
		for (int i = s->c.nlanes - 1; i >= 0; i--)
			st->vt[i] -= st->vt[0];
	for (int i = 0; i < s->c.nlanes; i++) {
		struct fqn_lane_info info;
		int have;

		if (s->c.lc[i].fsm.state != FQN_LANE_UP)
			continue;
		have = s->c.lanes[i]->ops->info(s->c.lanes[i], &info) == 0;
		if (st->pace && have)
			pace_observe(s, i, &info);
		if (!st->ctl)
			continue;
		traffic |= steer_observe(s, i, have ? &info : NULL, now);
		if (advised < 0 && steer_advised(s, i, &gen))
			advised = i;
	}
	if (st->pace)
		fqn_pace_update(st->pace, now);
	rates_apply(s, now); /* setsockopt only where a lane's rate changed */
	if (!st->ctl)
		return;
	trial = fqn_steer_trial_lane(st->ctl);
	changed = fqn_steer_update(st->ctl, now);
	if (traffic)
		steer_trace(s, changed ? "change" : "tick");
	if (st->move >= 0)
		return;
	switch (fqn_steer_trial_verdict(st->ctl, now)) {
	case 1:
		FQN_INFO("connection %llx lane %d: keeping its new path", (unsigned long long)s->c.conn_id,
			 trial);
		steer_trace(s, "keep");
		return;
	case 0:
		if (steer_others_up(s, trial)) {
			st->move = trial;
			st->move_why = "trial";
		}
		return;
	}
	/* advice picks its lane, but waits out a trial and the cooldown too */
	pick = fqn_steer_rehash_pick(st->ctl, advised >= 0, now);
	if (pick >= 0 && advised >= 0)
		pick = advised;
	if (pick >= 0 && s->c.lc[pick].can_rejoin && steer_others_up(s, pick)) {
		st->move = pick;
		st->move_why = advised >= 0 ? "advice" : "congested";
		if (advised >= 0)
			st->advice_gen[pick] = gen;
	}
}

int send_steer_enable(struct fqn_send *s, int steer, int pace, int64_t now)
{
	struct fqn_steer_params p;
	struct fqn_pace_params pp;
	struct steer_state *st = calloc(1, sizeof(*st));
	const struct fqn_config *cfg = &s->c.ctx->cfg;
	const char *job = *cfg->job_id ? cfg->job_id : getenv("SLURM_JOB_ID");
	int rc = 0;

	if (!st)
		return -ENOMEM;
	st->move = -1;
	s->st = st;
	if (pace) {
		fqn_pace_params_default(&pp);
		pp.target_ns = (int64_t)cfg->pace_target_us * 1000;
		if ((rc = fqn_pace_create(s->c.nlanes, &pp, now, &st->pace)) < 0)
			goto fail;
	}
	st->job = job ? (uint32_t)strtoul(job, NULL, 10) : 0; /* whose advice and rates are ours */
	if (*cfg->steer_trace && !(st->trace = fopen(cfg->steer_trace, "ae")))
		FQN_WARN("FABRICIQ_STEER_TRACE=%s: %s; no trace", cfg->steer_trace, strerror(errno));
	if (!steer)
		return 0;
	fqn_steer_params_default(&p);
	if ((rc = fqn_steer_create(s->c.nlanes, &p, now, &st->ctl)) < 0)
		goto fail;
	for (int i = 0; i < s->c.nlanes; i++)
		fqn_hist_reset(&st->lat[i]);
	return 0;
fail:
	send_steer_free(s);
	s->st = NULL;
	return rc;
}

void send_steer_free(struct fqn_send *s)
{
	if (!s->st)
		return;
	if (s->st->trace)
		fclose(s->st->trace);
	if (s->st->ctl)
		fqn_steer_destroy(s->st->ctl);
	if (s->st->pace)
		fqn_pace_destroy(s->st->pace);
	free(s->st);
}
