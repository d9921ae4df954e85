/*
 * ctl_rates: the controller's side of the rates between network classes
 * (controller/rates.h): fed the steps' classes, the sending ends' lane
 * intervals and the routes (named as the topology names the routers, so
 * a lane's own route and its NIC pair's probe route agree), evaluated
 * each report window; its advice goes to the sending nodes' agents as
 * Advice kind "rate", which they put on their path pages for the jobs'
 * plugins to pace by.
 */
#include "controller/ctl.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/frame.h"
#include "common/log.h"

int ctl_rates_create(struct ctl *c)
{
	struct fq_rates_config rc;

	if (!c->cfg.rates)
		return 0;
	fq_rates_config_defaults(&rc);
	rc.util = c->cfg.rates_util;
	rc.min_share = c->cfg.rates_min_share;
	rc.congest_delay_ns = (int64_t)c->cfg.rates_congest_delay;
	rc.hold_ns = (int64_t)c->cfg.rates_hold;
	rc.lifetime_ns = (int64_t)c->cfg.rates_lifetime;
	if (rc.renew_ns > rc.lifetime_ns / 2)
		rc.renew_ns = rc.lifetime_ns / 2; /* renewed before it lapses, even if one frame is late */
	if (rc.stale_ns < (int64_t)c->cfg.report_interval * 3)
		rc.stale_ns = (int64_t)c->cfg.report_interval * 3;
	return (c->rates = fq_rates_create(&rc)) ? 0 : -ENOMEM;
}

void ctl_feed_rates(struct ctl *c, const char *node, const Fabriciq__Envelope *env)
{
	if (!c->rates)
		return;
	if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_STEP_START) {
		const Fabriciq__StepStart *s = env->step_start;

		if (fq_rates_step(c->rates, s->job_id, s->step_id, s->net_class, s->net_class_prio,
				  s->net_class_weight) < 0)
			fq_log_rl(FQ_LOG_WARN, "rates: step %" PRIu64 ".%" PRIu32 " not kept: out of memory",
				  s->job_id, s->step_id);
	} else if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_LANE && env->lane->is_send &&
		   !env->lane->unverified) {
		const Fabriciq__LaneReport *l = env->lane;
		struct fq_rates_lane d = {.job = l->job_id,
					  .step = l->step_id,
					  .src_rank = l->src_rank,
					  .dst_rank = l->dst_rank,
					  .lane = l->lane,
					  .node = node,
					  .nic = l->local_nic,
					  .remote_node = l->remote_node,
					  .remote_nic = l->remote_nic,
					  .start_ns = l->interval_start_ns,
					  .end_ns = l->interval_end_ns,
					  .bytes = l->bytes,
					  .rtt_us = l->tcp_rtt_us,
					  .min_rtt_us = l->tcp_min_rtt_us,
					  .acked_bytes = l->tcp_bytes_acked,
					  .now_ns = fq_realtime_ns()};

		if (fq_rates_lane(c->rates, &d) == -ENOSPC)
			fq_log_rl(FQ_LOG_WARN, "rates: too many lanes kept; job %" PRIu64 "'s left out",
				  l->job_id);
	} else if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_LANE && !env->lane->unverified) {
		const Fabriciq__LaneReport *l = env->lane;

		fq_rates_lane_delivered(c->rates, l->job_id, l->step_id, l->src_rank, l->dst_rank, l->lane,
					l->interval_start_ns, l->interval_end_ns, l->bytes);
	}
}

void ctl_rates_lane_route(struct ctl *c, const Fabriciq__LaneRoute *r, const char *const *hops, size_t n)
{
	if (c->rates)
		fq_rates_lane_route(c->rates, r->job_id, r->step_id, r->src_rank, r->dst_rank, r->lane, hops,
				    n);
}

void ctl_rates_path_route(struct ctl *c, const char *node, const char *nic, const char *remote_node,
			  const char *remote_nic, const char *const *hops, size_t n)
{
	if (c->rates)
		fq_rates_path_route(c->rates, node, nic, remote_node, remote_nic, hops, n);
}

static int send_rate(struct fq_session *s, const struct fq_rates_advice *a, int64_t now)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__Advice m = FABRICIQ__ADVICE__INIT;

	m.job_id = a->job;
	m.kind = "rate";
	m.local_nic = (char *)a->nic;
	m.remote_node = (char *)a->remote_node;
	m.remote_nic = (char *)a->remote_nic;
	m.lifetime_ns = a->lifetime_ns;
	m.collides_with_job = a->for_job;
	m.rate_bytes_per_s = a->rate;
	m.shared_link = (char *)a->link;
	m.link_capacity = a->capacity;
	env.version = FQ_PROTOCOL_VERSION;
	env.sent_ns = now;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_ADVICE;
	env.advice = &m;
	return fq_session_send(s, &env);
}

void ctl_rates_round(struct ctl *c, int64_t now)
{
	struct fq_rates_advice a;

	if (!c->rates)
		return;
	fq_rates_tick(c->rates, now);
	while (fq_rates_next(c->rates, &a) == 1) {
		struct agent *ag = fq_strmap_get(&c->agents, a.node);

		if (!a.renew) {
			if (a.rate)
				fq_info("rates: job %" PRIu64
					" on %s/%s -> %s/%s: %.1f Mbit/s a lane, leaving room on "
					"%s (%.1f Mbit/s) for job %" PRIu64,
					a.job, a.node, a.nic, a.remote_node, a.remote_nic,
					(double)a.rate * 8 / 1e6, a.link, (double)a.capacity * 8 / 1e6,
					a.for_job);
			else
				fq_info("rates: job %" PRIu64
					" on %s/%s -> %s/%s: lifted (the sharing ended)",
					a.job, a.node, a.nic, a.remote_node, a.remote_nic);
		}
		if (!ag || !ag->sess || send_rate(ag->sess, &a, now) < 0)
			fq_log_rl(FQ_LOG_WARN,
				  "rates: job %" PRIu64 "'s rate for %s not sent: its agent is away", a.job,
				  a.node);
	}
}
