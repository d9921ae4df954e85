/*
 * detector: the stateful engine behind detector.h. The rules themselves
 * are pure functions in rules.c; the detector keeps what they read
 * (detector_int.h) and turns their verdicts into actions. This file:
 * the configuration, the action queue (the detector's output), nodes and
 * drain/resume hints, the tick, create/destroy.
 */
#include "controller/detector_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SWEEP_NS 60000000000LL

void fq_detector_config_defaults(struct fq_detector_config *c)
{
	*c = (struct fq_detector_config){
	    .flap_threshold = 8,
	    .flap_window_ns = 3600000000000LL,
	    .delay_threshold_ns = 1000000,
	    .delay_baseline_factor = 4.0,
	    .delay_floor_ns = 50000,
	    .delay_min_excess_ns = 300000,
	    .lane_outlier_factor = 5.0,
	    .lane_outlier_persist = 3,
	    .inband_factor = 5.0,
	    .inband_floor_ns = 300000,
	    .slow_nic_share = 1.0,
	    .slow_nic_min_paths = 3,
	    .resume_after_ns = 600000000000LL,
	    .quiet_close_ns = 30000000000LL,
	    .incident_gap_ns = 30000000000LL,
	    .incident_settle_ns = 2000000000LL,
	    .stall_wait_ns = 30000000000LL,
	    .stall_margin_ns = 250000000LL,
	    .nic_down_min_paths = 2,
	    .locate_min_paths = 3,
	    .nic_dead_after_ns = 60000000000LL,
	    .delay_baseline_windows = 5,
	    .delay_persist_windows = 3,
	    .attach_slack_ns = 5000000000LL,
	    .state_expire_ns = 7200000000000LL,
	    .step_expire_ns = 600000000000LL,
	    .collision_factor = 3.0,
	    .advice_lifetime_ns = 30000000000LL,
	    .peer_slow_factor = 4.0,
	    .peer_slow_persist = 3,
	    .peer_slow_min_ref = 2,
	    .peer_slow_min_bytes = 1u << 20,
	    .peer_slow_min_transfer = 64u << 10,
	    .max_paths = 262144,
	    .max_nics = 65536,
	    .max_nodes = 65536,
	    .max_steps = 16384,
	    .max_lanes = 262144,
	    .max_lanes_per_step = 4096,
	    .max_open = 4096,
	    .max_steps_per_anomaly = 1024,
	    .max_pending = 262144,
	};
}

/* ---- tick ----------------------------------------------------------------- */

/* Is p's delay the fabric's: does each of its flows (p alone, without
 * flows) cross a switch link the probes find queueing? Such a link's
 * delayed flows have no node common to them all (det_link_congested); a
 * slow NIC's own paths all share it, so none of their links qualifies on
 * their account. */
static bool delay_in_fabric(struct fq_detector *d, const struct path_ent *p, int64_t now)
{
	unsigned n = p->flows && p->nflows ? p->nflows : 1;

	for (unsigned k = 0; k < n; k++)
		if (!(k ? det_route_queueing(d, p->flows[k].route, p->flows[k].nroute, now)
			: det_route_queueing(d, p->route, p->route ? p->nroute : 0, now)))
			return false;
	return true;
}

/* Has any of p's flows (p alone, without flows) no route yet? */
static bool route_unknown(const struct path_ent *p)
{
	unsigned n = p->flows && p->nflows ? p->nflows : 1;

	for (unsigned k = 0; k < n; k++)
		if (!(k ? p->flows[k].nroute : p->route ? p->nroute : 0))
			return true;
	return false;
}

/* Does any path have a route (are routes traced on this fabric)? */
static bool any_route(struct fq_detector *d)
{
	FQ_CAPTAB_FOREACH(&d->paths, struct path_ent, p, nx)
	{
		if (p->nroute)
			return true;
	}
	return false;
}

/* slow_sender / slow_receiver: a NIC most of whose paths (slow_nic_share)
 * from it / to it are elevated, on every flow. A path whose every flow
 * crosses a queueing switch link is the fabric's, not the NIC's: it is
 * left out of its NICs' counts (with every spine congested, each NIC's
 * paths but those within its leaf were elevated, and NICs were named slow
 * that were not). Where routes are traced, an elevated path with a flow
 * whose route is not known yet is left out for ROUTE_WAIT_NS after it
 * was first heard of (8 NICs named slow receivers at once on congested
 * spines, test-busy-hosts on CI: the routes that would have blamed the
 * spines came seconds after the first anomalies). Of the NICs that are
 * then slow one way, at most half of those judged that way (or one) are
 * named: a slow NIC is an outlier. */
static void check_slow_nics(struct fq_detector *d, int64_t now)
{
	char summary[256], evidence[256];
	size_t judged[2] = {0, 0}, slow[2] = {0, 0};
	int traced = -1; /* any_route(), asked only for a path that waits on a route; -1: not yet */

	FQ_CAPTAB_FOREACH(&d->nics, struct nic_ent, n, nx)
	{
		n->tx_paths = n->tx_elev = n->rx_paths = n->rx_elev = 0;
	}
	FQ_CAPTAB_FOREACH(&d->paths, struct path_ent, p, nx)
	{
		struct nic_ent *s, *t;
		bool elevated;

		if (p->tail_ns <= 0 || older_than(now, p->last_end_ns, d->c.quiet_close_ns))
			continue;
		/* a path probed over flows counts elevated when all its flows
		 * are: a spine delays only the flows it carries */
		elevated = p->elevated && det_path_delayed_everywhere(p, now);
		if (elevated && (delay_in_fabric(d, p, now) ||
				 (route_unknown(p) && !older_than(now, p->first_ns, ROUTE_WAIT_NS) &&
				  (traced < 0 ? (traced = any_route(d)) : traced))))
			continue;
		if ((s = (struct nic_ent *)fq_captab_find(&d->nics, &p->k.src)))
			s->tx_paths++, s->tx_elev += elevated;
		if ((t = (struct nic_ent *)fq_captab_find(&d->nics, &p->k.dst)))
			t->rx_paths++, t->rx_elev += elevated;
	}
	/* per direction: the NICs judged, and those the share makes slow */
	FQ_CAPTAB_FOREACH(&d->nics, struct nic_ent, n, nx)
	{
		for (int dir = 0; dir < 2; dir++) {
			unsigned paths = dir ? n->rx_paths : n->tx_paths,
				 elev = dir ? n->rx_elev : n->tx_elev;

			judged[dir] += paths && paths >= d->c.slow_nic_min_paths;
			n->slow[dir] = fq_rule_slow_nic(&d->c, paths, elev);
			slow[dir] += n->slow[dir];
		}
	}
	FQ_CAPTAB_FOREACH(&d->nics, struct nic_ent, n, nx)
	{
		for (int dir = 0; dir < 2; dir++) {
			unsigned paths = dir ? n->rx_paths : n->tx_paths,
				 elev = dir ? n->rx_elev : n->tx_elev;

			if (!n->slow[dir] || !fq_rule_slow_nics_few(slow[dir], judged[dir]))
				continue;
			snprintf(summary, sizeof(summary), "%s of %s slow %s: %u of %u paths %s it elevated",
				 n->k.nic, n->k.node, dir ? "receiver" : "sender", elev, paths,
				 dir ? "to" : "from");
			snprintf(evidence, sizeof(evidence),
				 "{\"paths\":%u,\"elevated\":%u,\"share\":%.2f,\"min_paths\":%u}", paths,
				 elev, d->c.slow_nic_share, d->c.slow_nic_min_paths);
			det_anom_evidence(d, dir ? K_SLOW_RECEIVER : K_SLOW_SENDER, SEV_WARNING, &n->k, NULL,
					  now, now, summary, evidence, NULL);
		}
	}
}

static void check_dead_nics(struct fq_detector *d, int64_t now)
{
	char reason[160];

	FQ_CAPTAB_FOREACH(&d->nics, struct nic_ent, n, nx)
	{
		struct anom_ent *a;
		unsigned count;

		if (!n->down || n->dead_hinted ||
		    fq_rule_sat_sub(now, n->down_since) < d->c.nic_dead_after_ns)
			continue;
		n->dead_hinted = true;
		n->h.seen_ns = max64(n->h.seen_ns, now); /* still down: keep it */
		count = fq_rule_flap_count(n->downs, n->ndowns, now, d->c.flap_window_ns);
		a = det_anom_find(d, K_LINK_DOWN, &n->k, NULL);
		det_hint_drain(d, &n->k,
			       fq_rule_drain_reason(n->k.nic, "down", count ? count : 1, d->c.flap_window_ns,
						    reason, sizeof(reason)),
			       a ? a->handle : 0, now);
	}
}

static void close_quiet(struct fq_detector *d, int64_t now)
{
	FQ_CAPTAB_FOREACH(&d->anoms, struct anom_ent, a, nx)
	{
		struct nic_ent *n;
		int64_t end;

		switch ((enum kind)a->k.kind) {
		case K_LINK_DOWN: /* an episode: until UP for incident_gap_ns; or its place's state was dropped */
			if (det_episode_over(d, a, now, &end))
				det_anom_close(d, a, end);
			break;
		case K_TOPOLOGY: /* until the topology no longer shows it (fq_detector_topology) */
			break;
		case K_FLAPPING: /* until the window holds no more than the threshold */
			n = (struct nic_ent *)fq_captab_find(&d->nics, &a->k.a);
			if (!n || !fq_rule_flapping(&d->c, n->downs, n->ndowns, now, NULL))
				det_anom_close(d, a, now > a->last_ns ? now : a->last_ns);
			break;
		default:
			if (older_than(now, a->last_ns, d->c.quiet_close_ns))
				det_anom_close(d, a, a->last_ns);
			break;
		}
	}
}

static void mark_unhealthy(struct fq_detector *d, const char *node, int64_t now)
{
	struct node_ent *n;

	if (node[0] && (n = det_node_find(d, node)))
		n->unhealthy_ns = max64(n->unhealthy_ns, now);
}

static void check_resume(struct fq_detector *d, int64_t now)
{
	char reason[96], win[32];

	FQ_CAPTAB_FOREACH(&d->anoms, struct anom_ent, a, nx)
	{
		mark_unhealthy(d, a->k.a.node, now);
		mark_unhealthy(d, a->k.b.node, now);
	}
	fq_rule_format_duration(d->c.resume_after_ns, win, sizeof(win));
	snprintf(reason, sizeof(reason), FQ_RULE_REASON_PREFIX " no anomaly for %s", win);
	FQ_CAPTAB_FOREACH(&d->nodes, struct node_ent, n, nx)
	{
		int64_t healthy_from = max64(n->drained_ns, n->unhealthy_ns);

		if (!n->drained || !n->own_reason || n->resume_hinted)
			continue;
		n->h.seen_ns = max64(n->h.seen_ns, now); /* waiting to resume: keep it */
		if (fq_rule_sat_sub(now, healthy_from) < d->c.resume_after_ns)
			continue;
		n->resume_hinted = true;
		det_push(d, &(struct fq_det_action){.kind = FQ_DET_HINT,
						    .resume = true,
						    .start_ns = now,
						    .node = n->name,
						    .reason = reason});
	}
}

static void sweep(struct fq_detector *d, int64_t now)
{
	int64_t state_cut = fq_rule_sat_sub(now, d->c.state_expire_ns) - 1;

	fq_captab_drop_upto(&d->paths, state_cut, NULL);
	fq_captab_drop_upto(&d->nics, state_cut, NULL);
	fq_captab_drop_upto(&d->nodes, state_cut, NULL);
	fq_captab_drop_upto(&d->steps, fq_rule_sat_sub(now, d->c.step_expire_ns) - 1, NULL);
	fq_captab_drop_upto(&d->psteps, fq_rule_sat_sub(now, d->c.step_expire_ns) - 1, NULL);
	if (d->dropped_anomalies || d->dropped_actions || d->rejected_inputs)
		fq_log_ratelimited(&d->rl, FQ_LOG_WARN,
				   "detector: %" PRIu64 " anomalies not opened (max_open), %" PRIu64
				   " actions dropped, %" PRIu64 " inputs rejected",
				   d->dropped_anomalies, d->dropped_actions, d->rejected_inputs);
}

void fq_detector_tick(struct fq_detector *d, int64_t now_ns)
{
	if (!d || now_ns <= 0)
		return;
	det_qlinks_reset(d); /* the queueing links judged anew, once, at the first question */
	check_slow_nics(d, now_ns);
	FQ_CAPTAB_FOREACH(&d->steps, struct step_ent, s, nx)
	{
		if (s->newest_end_ns > s->evaluated_ns) {
			det_check_step_outliers(d, s);
			s->evaluated_ns = s->newest_end_ns;
		}
	}
	FQ_CAPTAB_FOREACH(&d->psteps, struct pstep_ent, s, nx)
	{
		if (s->newest_end_ns > s->evaluated_ns) {
			det_check_prof_step(d, s);
			s->evaluated_ns = s->newest_end_ns;
		}
	}
	if (d->c.collision_advice)
		det_check_collisions(d, now_ns);
	check_dead_nics(d, now_ns);
	close_quiet(d, now_ns); /* first: an episode over is not extended by held DOWNs */
	det_promote_paths(d, now_ns);
	det_topo_settle(d, now_ns);
	det_locate(d, now_ns);
	check_resume(d, now_ns);
	if (older_than(now_ns, d->last_sweep_ns, SWEEP_NS) || now_ns < d->last_sweep_ns) {
		sweep(d, now_ns);
		d->last_sweep_ns = now_ns;
	}
}

/* ---- create / destroy ----------------------------------------------------- */

struct fq_detector *fq_detector_create(const struct fq_detector_config *c)
{
	struct fq_detector *d = calloc(1, sizeof(*d));
	int64_t expire;

	if (!d)
		return NULL;
	d->rl = (struct fq_ratelimit){.interval_ns = 60000000000ULL, .burst = 2};
	if (c)
		d->c = *c;
	else
		fq_detector_config_defaults(&d->c);
	if (d->c.flap_threshold >= MAX_DOWNS)
		d->c.flap_threshold = MAX_DOWNS - 1;
	if (d->c.incident_gap_ns <= d->c.incident_settle_ns) /* an explaining NIC episode outlives the wait */
		d->c.incident_gap_ns = d->c.incident_settle_ns + 1;
	expire = max64(d->c.state_expire_ns, d->c.flap_window_ns); /* flap times must outlive their window */
	d->c.state_expire_ns = expire;
	fq_captab_init(&d->paths, d, offsetof(struct path_ent, k), sizeof(struct path_key),
		       sizeof(struct path_ent), d->c.max_paths, expire, det_path_drop);
	fq_captab_init(&d->nics, d, offsetof(struct nic_ent, k), sizeof(struct nic_key),
		       sizeof(struct nic_ent), d->c.max_nics, expire, det_nic_drop);
	fq_captab_init(&d->nodes, d, offsetof(struct node_ent, name), NODE_LEN, sizeof(struct node_ent),
		       d->c.max_nodes, expire, NULL);
	fq_captab_init(&d->steps, d, offsetof(struct step_ent, k), sizeof(struct step_key),
		       sizeof(struct step_ent), d->c.max_steps, d->c.step_expire_ns, det_step_drop);
	fq_captab_init(&d->anoms, d, offsetof(struct anom_ent, k), sizeof(struct anom_key),
		       sizeof(struct anom_ent), d->c.max_open, 0, det_anom_drop);
	fq_captab_init(&d->lroutes, d, offsetof(struct lroute_ent, k), sizeof(struct lroute_key),
		       sizeof(struct lroute_ent), d->c.max_lanes ? d->c.max_lanes : 1, d->c.step_expire_ns,
		       det_lroute_drop);
	fq_captab_init(&d->psteps, d, offsetof(struct pstep_ent, k), sizeof(struct step_key),
		       sizeof(struct pstep_ent), d->c.max_steps, d->c.step_expire_ns, det_pstep_drop);
	if (!d->c.max_lanes)
		d->c.max_lanes = 1;
	if (!d->c.max_lanes_per_step)
		d->c.max_lanes_per_step = 1;
	return d;
}

void fq_detector_destroy(struct fq_detector *d)
{
	if (!d)
		return;
	fq_captab_free(&d->anoms);
	fq_captab_free(&d->steps);
	fq_captab_free(&d->psteps);
	fq_captab_free(&d->lroutes);
	fq_captab_free(&d->paths);
	fq_captab_free(&d->nics);
	fq_captab_free(&d->nodes);
	det_qlinks_reset(d);
	det_actions_free(d);
	free(d->scratch_p99);
	free(d->scratch_idx);
	free(d->scratch_out);
	free(d->locate_scratch);
	free(d->tdiffs);
	free(d);
}
