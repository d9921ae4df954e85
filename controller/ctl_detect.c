/*
 * ctl_detect: the controller's side of the detector (controller/detector.h).
 * Feeds it what the agents' frames carry, stores its actions (anomalies,
 * their jobs, hints, collision advice to the agents), feeds back the hints
 * `fabriciq hints --apply` applied, and ends job steps.
 */
#include "controller/ctl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "db/api_query.h"
#include "db/db.h"

/* A path DOWN toward node at t is its agent being away, not the link, if
 * the agent was not connected then: it stopped answering probes, which
 * is all the reporter saw. The event stays in link_events; the detector
 * does not see it. AWAY_MARGIN_NS covers the clocks of the session's end
 * (the controller's) and of the DOWN (the reporter's global timeline).
 * Its sibling, an agent that stayed connected but stood still (AgentStall),
 * is the detector's (fq_detector_agent_stall): the stall is told only once
 * over, so the DOWN is held for it there. */
#define AWAY_MARGIN_NS 2000000000ll
static bool agent_away_at(struct ctl *c, const char *node, int64_t t)
{
	const struct agent *a = node && *node ? fq_strmap_get(&c->agents, node) : NULL;

	return a && a->away_ns && t >= a->away_ns - AWAY_MARGIN_NS &&
	       (!a->back_ns || t <= a->back_ns + AWAY_MARGIN_NS);
}

/* A profiler report: its windows go in chunks of a stack array (a frame
 * holds 32 of them; a report's frames of one interval add up). */
static void ctl_feed_profiler(struct ctl *c, const char *node, const Fabriciq__ProfilerReport *p)
{
	struct fq_det_prof_window w[32];
	struct fq_det_prof d = {.node = node,
				.job_id = p->job_id,
				.step_id = p->step_id,
				.rank = p->rank,
				.comm_hash = p->comm_hash,
				.start_ns = p->interval_start_ns,
				.end_ns = p->interval_end_ns,
				.synchronised = p->synchronised,
				.windows = w};
	size_t i = 0;

	do {
		d.nwindows = 0;
		for (; i < p->n_windows && d.nwindows < sizeof(w) / sizeof(w[0]); i++) {
			const Fabriciq__ProfilerWindow *x = p->windows[i];

			w[d.nwindows++] = (struct fq_det_prof_window){x->kind,  x->device, x->sub,    x->id,
								      x->count, x->bytes,  x->mean_ns};
		}
		fq_detector_profiler(c->det, &d);
	} while (i < p->n_windows);
}

void ctl_feed_detector(struct ctl *c, const char *node, const Fabriciq__Envelope *env, int64_t now)
{
	fq_detector_agent_heard(c->det, node, now); /* it is not standing still */
	if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_STALL) {
		const Fabriciq__AgentStall *s = env->stall;

		fq_info("agent %s: its loop stood still for %" PRId64 " ms (%.3f to %.3f)", node,
			(s->end_ns - s->start_ns) / 1000000, (double)s->start_ns / 1e9,
			(double)s->end_ns / 1e9);
		fq_detector_agent_stall(c->det, node, s->start_ns, s->end_ns);
	} else if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_PROBE) {
		const Fabriciq__ProbeReport *p = env->probe;
		struct fq_det_flow fl[FQ_DET_MAX_FLOWS];
		size_t nf = 0;

		for (size_t i = 0; i < p->n_flows && nf < FQ_DET_MAX_FLOWS; i++) {
			const Fabriciq__ProbeFlow *f = p->flows[i];

			if (f->flow < FQ_DET_MAX_FLOWS)
				fl[nf++] = (struct fq_det_flow){.flow = f->flow,
								.sent = f->sent,
								.answered = f->answered,
								.lost = f->lost,
								.owd_fwd_p50_ns = f->owd_fwd_p50_ns,
								.owd_fwd_p90_ns = f->owd_fwd_p90_ns,
								.owd_rev_p50_ns = f->owd_rev_p50_ns,
								.owd_rev_p90_ns = f->owd_rev_p90_ns};
		}
		struct fq_det_probe d = {
		    .node = node,
		    .nic = p->local_nic,
		    .remote_node = p->remote_node,
		    .remote_nic = p->remote_nic,
		    .start_ns = p->window_start_ns,
		    .end_ns = p->window_end_ns,
		    .sent = p->sent,
		    .answered = p->answered,
		    .lost = p->lost,
		    .owd_fwd_p50_ns = p->owd_fwd_p50_ns,
		    .owd_fwd_p90_ns = p->owd_fwd_p90_ns,
		    .owd_fwd_p99_ns = p->owd_fwd_p99_ns,
		    .owd_rev_p50_ns = p->owd_rev_p50_ns,
		    .owd_rev_p90_ns = p->owd_rev_p90_ns,
		    .owd_rev_p99_ns = p->owd_rev_p99_ns,
		    .rtt_p50_ns = p->rtt_p50_ns,
		    .up = p->path_up,
		    .flows = fl,
		    .n_flows = nf,
		};

		if (!p->path_up && agent_away_at(c, p->remote_node, p->window_end_ns))
			return; /* no answers from an agent that was away: no sample either */
		fq_detector_probe(c->det, &d);
		ctl_floor(c, node, p);
	} else if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_TRACE) {
		ctl_route(c, node, env->trace);
	} else if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_LANE_ROUTE) {
		ctl_lane_route(c, node, env->lane_route);
	} else if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_LANE) {
		const Fabriciq__LaneReport *l = env->lane;
		struct fq_det_lane d = {
		    .job_id = l->job_id,
		    .step_id = l->step_id,
		    .src_rank = l->src_rank,
		    .dst_rank = l->dst_rank,
		    .lane = l->lane,
		    .src_node = l->is_send ? node : l->remote_node,
		    .src_nic = l->is_send ? l->local_nic : l->remote_nic,
		    .dst_node = l->is_send ? l->remote_node : node,
		    .dst_nic = l->is_send ? l->remote_nic : l->local_nic,
		    .start_ns = l->interval_start_ns,
		    .end_ns = l->interval_end_ns,
		    .bytes = l->bytes,
		    .owd_p50_ns = l->is_send ? 0 : l->owd_p50_ns,
		    .owd_p99_ns = l->is_send ? 0 : l->owd_p99_ns,
		    .owd_min_ns = l->is_send ? 0 : l->owd_min_ns,
		    .tcp_min_rtt_ns = (int64_t)l->tcp_min_rtt_us * 1000,
		    .synchronised = l->synchronised,
		    .unverified = l->unverified,
		};
		fq_detector_lane(c->det, &d);
	} else if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_LINK) {
		const Fabriciq__LinkEvent *l = env->link;
		struct fq_det_link d = {.node = node,
					.nic = l->local_nic,
					.remote_node = l->remote_node,
					.remote_nic = l->remote_nic,
					.up = l->state == FABRICIQ__LINK_EVENT__STATE__UP,
					.nic_level = l->nic_level,
					.time_ns = l->time_ns,
					.nic_state = l->nic_state};
		if (!d.up && agent_away_at(c, l->remote_node, l->time_ns)) {
			fq_log_rl(FQ_LOG_INFO, "%s/%s -> %s/%s DOWN: %s's agent was away, not an anomaly",
				  node, l->local_nic, l->remote_node, l->remote_nic, l->remote_node);
			return;
		}
		fq_detector_link(c->det, &d);
	} else if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_PROFILER) {
		ctl_feed_profiler(c, node, env->profiler);
	} else if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_FAILOVER) {
		const Fabriciq__FailoverEvent *f = env->failover;
		struct fq_det_lane_event d = {node,       f->local_nic, f->remote_nic, f->cause,  f->job_id,
					      f->step_id, f->src_rank,  f->dst_rank,   f->time_ns};
		fq_detector_lane_event(c->det, &d);
	}
}

/* A job step is gone (steplive.h): what the controller held of it goes. */
void ctl_drop_step(struct ctl *c, const struct fq_step_id *id, bool idle)
{
	fq_metrics_drop_step(c->metrics, id->job, id->step, idle);
	fq_detector_step_end(c->det, id->job, id->step);
	ctl_lane_routes_drop(c, id->job, id->step);
	if (c->rates)
		fq_rates_step_end(c->rates, id->job, id->step);
}

/* Steps nothing came of for controller.step_idle (each report window). */
void ctl_expire_steps(struct ctl *c, int64_t now)
{
	struct fq_step_id gone[256];
	size_t n;

	do {
		n = fq_steplive_expire(c->live, now, (int64_t)c->cfg.step_idle, gone, 256);
		for (size_t i = 0; i < n; i++)
			ctl_drop_step(c, &gone[i], true);
	} while (n == 256);
}

/* ---- detector actions --------------------------------------------------- */

/* The row id of the anomaly with this detector handle while it is open;
 * 0: none (or not stored). */
static int64_t anomaly_row(struct ctl *c, uint64_t handle)
{
	char key[32];
	const char *idstr;

	snprintf(key, sizeof(key), "%llu", (unsigned long long)handle);
	idstr = handle ? fq_strmap_get(&c->anomaly, key) : NULL;
	return idstr ? strtoll(idstr, NULL, 10) : 0;
}

/* Stores (or sends) one action. False if storing it failed for a reason
 * that passes (the database went away): it is to be tried again. */
static bool apply_action(struct ctl *c, struct fq_db *db, const struct fq_det_action *a, int64_t now)
{
	char key[32];
	int64_t id = anomaly_row(c, a->handle);
	int rc = 0;

	snprintf(key, sizeof(key), "%llu", (unsigned long long)a->handle);
	switch (a->kind) {
	case FQ_DET_OPEN: {
		struct fq_db_anomaly an = {.kind = a->anomaly_kind,
					   .severity = (enum fq_db_severity)a->severity,
					   .start_ns = a->start_ns,
					   .end_ns = a->end_ns,
					   .node = a->node,
					   .nic = a->nic,
					   .remote_node = a->remote_node,
					   .remote_nic = a->remote_nic,
					   .summary = a->summary,
					   .evidence_json = a->evidence_json,
					   .incident_id = anomaly_row(c, a->incident),
					   .component = a->component};
		struct fq_strmap_entry *e;
		if (!db || (rc = fq_db_insert_anomaly(db, &an, NULL, 0, &id)) < 0)
			break;
		fq_warn("anomaly %s: %s", a->anomaly_kind, a->summary ? a->summary : "");
		c->anomalies_opened++;
		snprintf(key, sizeof(key), "%llu", (unsigned long long)a->handle);
		if ((e = fq_strmap_upsert(&c->anomaly, key))) {
			char *v = malloc(24);
			if (v) {
				snprintf(v, 24, "%lld", (long long)id);
				free(e->value);
				e->value = v;
			}
		}
		break;
	}
	case FQ_DET_ATTACH: {
		struct fq_db_anomaly_job j = {a->job_id, a->step_id, a->ranks, a->nranks};
		if (db && id)
			rc = fq_db_attach_anomaly(db, id, &j, 1);
		break;
	}
	case FQ_DET_MEMBER:
		if (db && id && anomaly_row(c, a->incident))
			rc = fq_db_set_incident(db, id, anomaly_row(c, a->incident));
		break;
	case FQ_DET_UPDATE:
		if (db && id)
			rc = fq_db_update_anomaly(db, id, a->events, a->end_ns, a->summary, a->component);
		break;
	case FQ_DET_CLOSE:
		/* a fabric fault over (a link back, a spine unloaded): switches
		 * re-hash their flows when a next hop returns, and no probe is
		 * lost to say so: every path is traced again */
		if (a->anomaly_kind && !strncmp(a->anomaly_kind, "fabric_", 7))
			c->retrace_wanted = true;
		if (db && id)
			rc = fq_db_close_anomaly(db, id, a->end_ns ? a->end_ns : now);
		free(fq_strmap_remove(&c->anomaly, key));
		break;
	case FQ_DET_ADVICE: { /* collision advice to the agent on the moved job's node */
		struct agent *ag = a->node ? fq_strmap_get(&c->agents, a->node) : NULL;
		/* what is left of it: it waited with the rest while the database was away */
		int64_t left = a->end_ns - (now > a->start_ns ? now : a->start_ns);

		if (ag && ag->sess && left > 0)
			fq_session_send_advice(ag->sess, a->job_id, a->nic, a->remote_node, a->remote_nic,
					       a->port, left, a->other_job, a->reason, now);
		return true; /* nothing to store: the anomaly carries it */
	}
	case FQ_DET_HINT: { /* a node's drain or resume, or a fabric hint (component: what to check) */
		struct fq_db_drain_hint h = {a->node, a->nic, a->resume, a->reason, id, now, a->component};
		if (db && (rc = fq_db_insert_drain_hint(db, &h, &id)) == 0) {
			c->hints++;
			if (a->component) /* its text says what to check where: "check spine3: ..." */
				fq_warn("hint: %s", a->reason ? a->reason : a->component);
			else
				fq_warn("hint: %s %s: %s", a->resume ? "resume" : "drain", a->node,
					a->reason ? a->reason : "");
		}
		break;
	}
	}
	if (db && rc < 0 && fq_ingest_transient(rc)) {
		fq_ingest_db_failed(c->ingest, rc, now); /* the database is down: retried after it */
		return false;
	}
	if (!db || rc < 0) {
		c->det_write_failures++;
		fq_log_rl(FQ_LOG_WARN, "detector action %d (handle %llu) not stored: %s", (int)a->kind,
			  (unsigned long long)a->handle, db ? fq_db_error(db) : "database unavailable");
	}
	return true;
}

/* What `fabriciq hints --apply` did, fed back to the detector: a node
 * drained by fabriciq gets a resume hint once healthy. Only changes are
 * passed on (the detector's healthy timer starts at the drain). */
struct hint_seen {
	struct ctl *c;
	int64_t now;
};

static void on_applied_hint(void *arg, const char *node, int resume, const char *reason)
{
	struct hint_seen *h = arg;
	char *state = fq_strmap_get(&h->c->drained, node), *want;

	if (state && strcmp(state, resume ? "" : reason) == 0)
		return;
	want = strdup(resume ? "" : reason);
	if (!want)
		return;
	{
		struct fq_strmap_entry *e = fq_strmap_upsert(&h->c->drained, node);
		if (!e) {
			free(want);
			return;
		}
		free(e->value);
		e->value = want;
	}
	fq_info("node %s %s (an applied hint)%s%s", node, resume ? "resumed" : "drained", resume ? "" : ": ",
		resume ? "" : reason);
	fq_detector_node_drained(h->c->det, node, resume ? NULL : reason, h->now);
}

void ctl_detector_round(struct ctl *c, int64_t now)
{
	struct fq_det_action a;
	struct fq_db *db = fq_ingest_db(c->ingest);

	if (db && now - c->hints_polled_ns >= 5 * (int64_t)1000000000) {
		struct hint_seen h = {c, now};
		c->hints_polled_ns = now;
		if (fq_db_applied_hints(db, on_applied_hint, &h) < 0)
			fq_log_rl(FQ_LOG_WARN, "cannot read applied hints: %s", fq_db_error(db));
	}
	ctl_topology_round(c, now);
	fq_detector_tick(c->det, now);
	/* Without the database (being opened, or down) the actions wait in the
	 * detector's queue (max_pending), in order, to be stored once it is
	 * there: an anomaly is not lost to an outage. */
	while (db && (db = fq_ingest_db(c->ingest)) && fq_detector_next(c->det, &a) == 1)
		if (!apply_action(c, db, &a, now)) {
			fq_detector_unget(c->det);
			break;
		}
}
