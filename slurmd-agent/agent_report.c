/*
 * agent_report: what the agent tells the controller each report window
 * (probe windows, clock estimates, link events), the global timeline it
 * publishes on the clock page, and what it takes from the controller
 * (clock corrections, peer assignments).
 *
 * Global time, in order of preference:
 *  1. this node is the reference: its own REALTIME - RAW at start, fixed
 *     (a timeline, not UTC: NTP slewing REALTIME later does not move it);
 *  2. a fresh ClockCorrection from the controller's mesh solve:
 *     global = local - (this clock - reference clock) + reference epoch;
 *  3. a direct estimate to the reference host (a path to it with a clock
 *     estimate, and the reference's epoch from its probe answers);
 *  otherwise nothing is published (readers see "unsynchronised").
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "slurmd-agent/agent.h"
#include "slurmd-agent/nics.h"

/* A correction older than this many report windows is no longer used. */
#define CORRECTION_WINDOWS 10

int64_t agent_global(const struct agent *a, int64_t local_ns)
{
	if (!a->timeline.published) /* not yet on the global timeline: real time, still a time */
		return local_ns + (fq_realtime_ns() - fq_now_ns());
	return fq_timeline_global(&a->timeline, local_ns);
}

/* fq_spool_when_durable's callback: an event is on disk, send it. */
static void send_durable(void *arg, int rc)
{
	struct agent *a = arg;

	(void)rc; /* a failed flush is logged by the spool; what is on disk goes at the next */
	fq_uplink_kick(a->uplink);
}

uint64_t agent_send(struct agent *a, Fabriciq__Envelope *env)
{
	if (!a->spool)
		return 0;
	env->version = 1;
	env->sent_ns = agent_global(a, fq_now_ns());
	if (fq_spool_append(a->spool, env) < 0) {
		a->frames_unspooled++;
		return 0;
	}
	a->frames_spooled++;
	/* an event (what the job report is made of) goes to disk at once, and
	 * out once there (spool.h); bulk telemetry at the window's end */
	if (!fq_spool_is_bulk(env->payload_case) &&
	    fq_spool_when_durable(a->spool, env->seq, send_durable, a) == 0)
		return env->seq;
	fq_uplink_kick(a->uplink);
	return env->seq;
}

void agent_lookup_remote(const struct agent *a, const char *ipv4, const char **node, const char **nic)
{
	*node = *nic = "";
	for (size_t i = 0; i < a->n_paths; i++)
		if (strcmp(a->paths[i].peer_addr, ipv4) == 0) {
			*node = a->paths[i].peer_node;
			*nic = a->paths[i].peer_nic;
			return;
		}
}

/* ---- link events -------------------------------------------------------- */

static void nic_level_check(struct agent *a, const char *local_nic, int64_t now);
static void publish_paths(struct agent *a, int64_t now);

/* A path's transition goes to the path page within AGENT_PATHS_SETTLE_MS,
 * not at the next report window: the ranks fail a lane over when its path
 * is DOWN there, and a DOWN shorter than the window (a flap) would
 * otherwise be seen by chance or not at all. The wait lets the paths that
 * fail together be published together: when a peer's agent stops, every
 * path to its node goes DOWN within a probe interval, and the ranks take
 * "every path to a node DOWN at once" for a gone agent, not a gone link;
 * one DOWN published alone while its siblings were still UP would be
 * believed. The page's other figures stay the last window's. */
static void path_page_transition(struct agent *a, const char *local_nic, const char *peer_node,
				 const char *peer_nic, int up, int64_t changed_ns)
{
	struct timeval settle = {0, AGENT_PATHS_SETTLE_MS * 1000};

	for (size_t i = 0; i < a->n_paths; i++) {
		struct fq_path_report *r = &a->paths[i];

		if (!strcmp(r->local_nic, local_nic) && !strcmp(r->peer_node, peer_node) &&
		    !strcmp(r->peer_nic, peer_nic)) {
			r->up = up;
			r->changed_ns = changed_ns;
		}
	}
	if (a->paths_ev && (evtimer_pending(a->paths_ev, NULL) || evtimer_add(a->paths_ev, &settle) == 0))
		return; /* published as it settles, with every transition meanwhile */
	publish_paths(a, fq_now_ns());
}

void agent_paths_settled(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	publish_paths(arg, fq_now_ns());
}

void agent_link_event(void *arg, const char *local_nic, const char *peer_node, const char *peer_nic, int up,
		      int64_t since_ns, int64_t detected_ns)
{
	struct agent *a = arg;
	struct json_object *e = json_object_new_object();
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__LinkEvent ev = FABRICIQ__LINK_EVENT__INIT;

	json_object_object_add(e, "local_nic", json_object_new_string(local_nic));
	json_object_object_add(e, "peer_node", json_object_new_string(peer_node));
	json_object_object_add(e, "peer_nic", json_object_new_string(peer_nic));
	json_object_object_add(e, "state", json_object_new_string(up ? "up" : "down"));
	json_object_object_add(e, "since_realtime_ns", json_object_new_int64(since_ns + a->xs.offset_ns));
	json_object_object_add(e, "detected_realtime_ns",
			       json_object_new_int64(detected_ns + a->xs.offset_ns));
	json_object_array_add(a->events, e);
	if (json_object_array_length(a->events) > 256)
		json_object_array_del_idx(a->events, 0, 1);

	ev.local_nic = (char *)local_nic;
	ev.remote_node = (char *)peer_node;
	ev.remote_nic = (char *)peer_nic;
	ev.state = up ? FABRICIQ__LINK_EVENT__STATE__UP : FABRICIQ__LINK_EVENT__STATE__DOWN;
	ev.time_ns = agent_global(a, since_ns);
	ev.detected_ns = agent_global(a, detected_ns);
	ev.detector = "probe";
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_LINK;
	env.link = &ev;
	agent_send(a, &env);
	/* logged once in the spool: a line in the log is an event the agent
	 * sends again after a crash, never one it lost */
	if (up)
		fq_warn("path %s -> %s:%s is UP", local_nic, peer_node, peer_nic);
	else
		fq_warn("path %s -> %s:%s is DOWN (silent for %.1f ms)", local_nic, peer_node, peer_nic,
			(double)(detected_ns - since_ns) / 1e6);
	path_page_transition(a, local_nic, peer_node, peer_nic, up, up ? since_ns : detected_ns);
	if (up)
		fq_tracer_poke(a->tracer, local_nic, peer_node, peer_nic);
	nic_level_check(a, local_nic, detected_ns);
}

/* Its peers' paths to this node fell silent while the loop stood still:
 * the controller tells their DOWNs from a link's by this. */
void agent_stall(void *arg, int64_t start_ns, int64_t end_ns)
{
	struct agent *a = arg;
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__AgentStall st = FABRICIQ__AGENT_STALL__INIT;

	st.start_ns = agent_global(a, start_ns);
	st.end_ns = agent_global(a, end_ns);
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_STALL;
	env.stall = &st;
	agent_send(a, &env);
}

/* ---- routes ------------------------------------------------------------------ */

void agent_route(void *arg, const struct fq_route *r, bool changed)
{
	struct agent *a = arg;
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__PathTrace tr = FABRICIQ__PATH_TRACE__INIT;
	char text[FQ_TRACE_MAX_HOPS][INET_ADDRSTRLEN];
	char *hops[FQ_TRACE_MAX_HOPS];

	for (unsigned k = 0; k < r->n_hops; k++) {
		struct in_addr in = {r->hops[k]};

		text[k][0] = 0;
		if (r->hops[k])
			inet_ntop(AF_INET, &in, text[k], sizeof(text[k]));
		hops[k] = text[k];
	}
	if (changed)
		fq_info("route %s -> %s:%s flow %u: %u hop%s%s", r->local_nic, r->peer_node, r->peer_nic,
			r->flow, r->n_hops, r->n_hops == 1 ? "" : "s", r->reached ? "" : ", not reached");
	tr.local_nic = (char *)r->local_nic;
	tr.remote_node = (char *)r->peer_node;
	tr.remote_nic = (char *)r->peer_nic;
	tr.time_ns = agent_global(a, r->traced_ns);
	tr.n_hops = r->n_hops;
	tr.hops = hops;
	tr.reached = r->reached;
	tr.changed = changed;
	tr.flow = r->flow;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_TRACE;
	env.trace = &tr;
	agent_send(a, &env);
	if (changed && r->flow == 0) /* the lanes of this NIC pair may be hashed apart anew */
		fq_lanetrace_route_changed(a->lanetrace, r->local_nic, r->peer_node, r->peer_nic);
}

void agent_lane_route(void *arg, const struct fq_lane_route *r)
{
	struct agent *a = arg;
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__LaneRoute lr = FABRICIQ__LANE_ROUTE__INIT;
	char text[FQ_TRACE_MAX_HOPS][INET_ADDRSTRLEN];
	char *hops[FQ_TRACE_MAX_HOPS];
	unsigned missing = 0;

	for (unsigned k = 0; k < r->n_hops; k++) {
		struct in_addr in = {r->hops[k]};

		text[k][0] = 0;
		if (r->hops[k])
			inet_ntop(AF_INET, &in, text[k], sizeof(text[k]));
		else
			missing++;
		hops[k] = text[k];
	}
	fq_debug("lane route job %llu.%u %u -> %u lane %u (%s -> %s): %u hop%s, %u unanswered",
		 (unsigned long long)r->id.job_id, r->id.step_id, r->id.src_rank, r->id.dst_rank, r->id.lane,
		 r->id.local_address, r->id.remote_address, r->n_hops, r->n_hops == 1 ? "" : "s", missing);
	lr.job_id = r->id.job_id;
	lr.step_id = r->id.step_id;
	lr.src_rank = r->id.src_rank;
	lr.dst_rank = r->id.dst_rank;
	lr.lane = r->id.lane;
	lr.local_nic = (char *)r->id.local_nic;
	lr.remote_node = (char *)r->id.remote_node;
	lr.remote_nic = (char *)r->id.remote_nic;
	lr.local_address = (char *)r->id.local_address;
	lr.remote_address = (char *)r->id.remote_address;
	lr.time_ns = agent_global(a, r->traced_ns);
	lr.n_hops = r->n_hops;
	lr.hops = hops;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_LANE_ROUTE;
	env.lane_route = &lr;
	agent_send(a, &env);
}

/*
 * NIC-level state: when every probed path of one local NIC is DOWN while
 * the same peers still answer on the node's other NICs, the fault is this
 * NIC, its cable or its switch port (NIC-down); paths down to one remote
 * node on every local NIC point at that node; some paths of a NIC down and
 * others up point at the fabric between them.
 */
static void nic_level_check(struct agent *a, const char *local_nic, int64_t now)
{
	struct fq_path_report *r = malloc(FQ_PROBER_MAX_PATHS * sizeof(*r));
	struct agent_nic *n = NULL;
	size_t cnt;
	unsigned total = 0, down = 0;

	for (unsigned i = 0; i < a->n_nics; i++)
		if (strcmp(a->nics[i].name, local_nic) == 0)
			n = &a->nics[i];
	if (!r || !n) {
		free(r);
		return;
	}
	/* state only (the window counters are not touched by a state peek) */
	cnt = fq_prober_states(a->prober, r, FQ_PROBER_MAX_PATHS);
	for (size_t i = 0; i < cnt; i++)
		if (strcmp(r[i].local_nic, local_nic) == 0) {
			total++;
			down += !r[i].up;
		}
	free(r);
	if (total && (down == total) != n->all_down) {
		Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
		Fabriciq__LinkEvent ev = FABRICIQ__LINK_EVENT__INIT;

		n->all_down = down == total;
		ev.nic_state = n->all_down ? (char *)fq_nics_link_state(local_nic) : "";
		ev.local_nic = (char *)local_nic;
		ev.remote_node = "";
		ev.remote_nic = "";
		ev.state = n->all_down ? FABRICIQ__LINK_EVENT__STATE__DOWN : FABRICIQ__LINK_EVENT__STATE__UP;
		ev.time_ns = ev.detected_ns = agent_global(a, now);
		ev.detector = "probe";
		ev.nic_level = true;
		env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_LINK;
		env.link = &ev;
		agent_send(a, &env); /* spooled, then logged (agent_link_event) */
		fq_warn("NIC %s: %s%s%s%s", local_nic,
			n->all_down ? "every path is DOWN: NIC-down" : "answering again: NIC up",
			*ev.nic_state ? " (the NIC says: " : "", ev.nic_state, *ev.nic_state ? ")" : "");
	}
}

/* ---- the global timeline ----------------------------------------------- */

static void choose_reference(struct agent *a)
{
	if (a->have_correction && a->corr.reference_node && *a->corr.reference_node)
		return; /* set from the correction */
	if (*a->cfg.reference) {
		snprintf(a->reference, sizeof(a->reference), "%s", a->cfg.reference);
		return;
	}
	snprintf(a->reference, sizeof(a->reference), "%s", a->cfg.node);
	for (size_t i = 0; i < a->n_paths; i++)
		if (strcmp(a->paths[i].peer_node, a->reference) < 0)
			snprintf(a->reference, sizeof(a->reference), "%s", a->paths[i].peer_node);
}

/* Set the timeline's target from the best source there is now. */
static void update_target(struct agent *a, int64_t now)
{
	const struct fq_path_report *best = NULL;

	choose_reference(a);
	if (strcmp(a->reference, a->cfg.node) == 0) {
		fq_timeline_set_target(&a->timeline, now, a->epoch_ns, 0, a->xs.error_ns);
		a->time_source = "reference";
		return;
	}
	if (a->have_correction &&
	    now - a->corr_local_ns < CORRECTION_WINDOWS * (int64_t)a->cfg.report_interval) {
		/* global = local - x + E_ref, x = this clock - reference clock */
		int64_t x =
		    a->corr.offset_ns + (int64_t)(a->corr.drift_ppb * (double)(now - a->corr_local_ns) / 1e9);
		fq_timeline_set_target(&a->timeline, now, a->corr.reference_epoch_ns - x, -a->corr.drift_ppb,
				       a->corr.error_bound_ns);
		a->time_source = "controller";
		return;
	}
	for (size_t i = 0; i < a->n_paths; i++) {
		const struct fq_path_report *r = &a->paths[i];
		if (strcmp(r->peer_node, a->reference) == 0 && r->synchronised && r->peer_epoch_valid &&
		    (!best || r->est.bound_ns < best->est.bound_ns))
			best = r;
	}
	if (best) {
		/* theta = reference clock - ours: global = local + theta + E_ref */
		int64_t theta = best->est.offset_ns +
				(int64_t)(best->est.drift_ppb * (double)(now - best->est.at_ns) / 1e9);
		fq_timeline_set_target(&a->timeline, now, theta + best->peer_epoch_ns, best->est.drift_ppb,
				       best->est.bound_ns);
		a->time_source = "peer";
		return;
	}
	a->time_source = "none";
}

void agent_publish(struct agent *a)
{
	struct fq_clock_model m;
	int64_t now = fq_now_ns();

	if (!fq_timeline_publish(&a->timeline, now, &m)) {
		fq_prober_set_epoch(a->prober, false, 0);
		return;
	}
	if (a->clock_page)
		fq_clock_page_publish(a->clock_page, &m);
	fq_prober_set_epoch(a->prober, true, fq_clock_model_global(&m, now) - now);
}

/* ---- per-window reports -------------------------------------------------- */

static void publish_paths(struct agent *a, int64_t now)
{
	struct fq_path_entry *e;

	if (!a->path_page)
		return;
	if (a->paths_ev && evtimer_pending(a->paths_ev, NULL))
		return; /* a transition settles: the page waits for it (path_page_transition) */
	e = calloc(a->n_paths ? a->n_paths : 1, sizeof(*e));
	if (!e)
		return;
	for (size_t i = 0; i < a->n_paths; i++) {
		const struct fq_path_report *r = &a->paths[i];
		snprintf(e[i].local_nic, sizeof(e[i].local_nic), "%s", r->local_nic);
		snprintf(e[i].remote_node, sizeof(e[i].remote_node), "%.39s", r->peer_node);
		snprintf(e[i].remote_nic, sizeof(e[i].remote_nic), "%.15s", r->peer_nic);
		e[i].remote_ipv4 = r->peer_ipv4;
		e[i].state = r->up ? FQ_PATH_STATE_UP : FQ_PATH_STATE_DOWN;
		e[i].changed_ns = r->changed_ns;
		e[i].owd_p50_ns = r->fwd.p50;
		e[i].rtt_p50_ns = r->rtt.p50;
	}
	fq_advice_fill(&a->advice, e, a->n_paths, now);
	{
		struct fq_path_rate rates[FQ_PATH_PAGE_RATES];
		size_t nr = fq_advice_rates(&a->advice, e, a->n_paths, rates, FQ_PATH_PAGE_RATES, now);

		fq_path_page_publish(a->path_page, e, a->n_paths, rates, nr, now);
	}
	free(e);
}

/* A path's established flows into fl/ptr (its ProbeReport.flows), when it
 * has more than one; how many. */
static size_t probe_flows(const struct fq_path_report *r, Fabriciq__ProbeFlow *fl, Fabriciq__ProbeFlow **ptr)
{
	size_t n = 0;

	if (r->n_flows < 2)
		return 0;
	for (unsigned k = 0; k < r->n_flows; k++) {
		const struct fq_flow_report *f = &r->flows[k];
		Fabriciq__ProbeFlow *o = &fl[n];

		if (!f->established)
			continue;
		fabriciq__probe_flow__init(o);
		o->flow = k;
		o->sent = (uint32_t)f->sent;
		o->answered = (uint32_t)f->answered;
		o->lost = (uint32_t)f->lost;
		if (r->synchronised && f->fwd.n) {
			o->owd_fwd_min_ns = f->fwd.min;
			o->owd_fwd_p50_ns = f->fwd.p50;
			o->owd_fwd_p90_ns = f->fwd.p90;
		}
		if (r->synchronised && f->rev.n) {
			o->owd_rev_min_ns = f->rev.min;
			o->owd_rev_p50_ns = f->rev.p50;
			o->owd_rev_p90_ns = f->rev.p90;
		}
		ptr[n++] = o;
	}
	return n;
}

static void send_probe_reports(struct agent *a)
{
	for (size_t i = 0; i < a->n_paths; i++) {
		const struct fq_path_report *r = &a->paths[i];
		Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
		Fabriciq__ProbeReport p = FABRICIQ__PROBE_REPORT__INIT;
		Fabriciq__ProbeFlow fl[FQ_PROBER_MAX_FLOWS], *flp[FQ_PROBER_MAX_FLOWS];

		p.local_nic = (char *)r->local_nic;
		p.remote_node = (char *)r->peer_node;
		p.remote_nic = (char *)r->peer_nic;
		p.window_start_ns = agent_global(a, r->window_start_ns);
		p.window_end_ns = agent_global(a, r->window_end_ns);
		p.sent = (uint32_t)r->sent;
		p.answered = (uint32_t)r->answered;
		p.lost = (uint32_t)r->lost;
		if (r->up && r->lost)
			fq_tracer_suspect(a->tracer, r->local_nic, r->peer_node, r->peer_nic);
		if (r->synchronised && r->fwd.n) {
			p.owd_fwd_min_ns = r->fwd.min;
			p.owd_fwd_p50_ns = r->fwd.p50;
			p.owd_fwd_p90_ns = r->fwd.p90;
			p.owd_fwd_p99_ns = r->fwd.p99;
			p.owd_fwd_max_ns = r->fwd.max;
		}
		if (r->synchronised && r->rev.n) {
			p.owd_rev_min_ns = r->rev.min;
			p.owd_rev_p50_ns = r->rev.p50;
			p.owd_rev_p90_ns = r->rev.p90;
			p.owd_rev_p99_ns = r->rev.p99;
			p.owd_rev_max_ns = r->rev.max;
		}
		p.rtt_min_ns = r->rtt.min;
		p.rtt_p50_ns = r->rtt.p50;
		p.rtt_p99_ns = r->rtt.p99;
		p.timestamp_kind = FABRICIQ__TIMESTAMP_KIND__TIMESTAMP_SOFTWARE;
		p.path_up = r->up;
		p.n_flows = probe_flows(r, fl, flp);
		p.flows = flp;
		env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_PROBE;
		env.probe = &p;
		agent_send(a, &env);
	}
}

/* One estimate per peer node: the path with the tightest bound. */
static void send_clock_report(struct agent *a)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__ClockReport c = FABRICIQ__CLOCK_REPORT__INIT;
	Fabriciq__ClockEstimate *est = calloc(a->n_paths ? a->n_paths : 1, sizeof(*est));
	Fabriciq__ClockEstimate **ptr = calloc(a->n_paths ? a->n_paths : 1, sizeof(*ptr));
	int64_t now = fq_now_ns();

	if (!est || !ptr)
		goto out;
	for (size_t i = 0; i < a->n_paths; i++) {
		const struct fq_path_report *r = &a->paths[i];
		size_t j;

		if (!r->synchronised)
			continue;
		for (j = 0; j < c.n_estimates && strcmp(ptr[j]->peer_node, r->peer_node) != 0; j++)
			;
		if (j == c.n_estimates) {
			fabriciq__clock_estimate__init(&est[j]);
			ptr[j] = &est[j];
			c.n_estimates++;
		} else if (ptr[j]->error_bound_ns <= r->est.bound_ns) {
			continue;
		}
		ptr[j]->peer_node = (char *)r->peer_node;
		ptr[j]->offset_ns =
		    r->est.offset_ns + (int64_t)(r->est.drift_ppb * (double)(now - r->est.at_ns) / 1e9);
		ptr[j]->drift_ppb = r->est.drift_ppb;
		ptr[j]->error_bound_ns = r->est.bound_ns;
		ptr[j]->samples = r->est.samples;
		ptr[j]->window_start_ns = now - (int64_t)a->cfg.window;
		ptr[j]->window_end_ns = now;
	}
	c.estimates = ptr;
	c.applied_offset_ns = agent_global(a, now) - now;
	c.applied_error_ns = a->timeline.published ? a->timeline.pub.error_bound_ns : 0;
	c.correction_epoch = a->have_correction ? a->corr.epoch : 0;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_CLOCK;
	env.clock = &c;
	agent_send(a, &env);
out:
	free(est);
	free(ptr);
}

void agent_report_window(struct agent *a)
{
	int64_t now = fq_now_ns();

	fq_xstamp_refresh(&a->xs, now, 10 * FQ_NSEC_PER_SEC, 16);
	a->n_paths = fq_prober_report(a->prober, a->paths, FQ_PROBER_MAX_PATHS);
	update_target(a, now);
	agent_publish(a);
	publish_paths(a, now);
	send_probe_reports(a);
	send_clock_report(a);
	if (a->spool)
		fq_spool_flush(a->spool);
}

/* ---- from the controller ----------------------------------------------- */

/* A new session's controller may be a restarted one, which knows only the
 * routes sent since: every known route again, after the hello is out. */
static void resend_routes(evutil_socket_t fd, short what, void *arg)
{
	struct agent *a = arg;

	(void)fd;
	(void)what;
	fq_tracer_resend(a->tracer);
}

static void on_hello(void *arg, Fabriciq__AgentHello *h)
{
	struct agent *a = arg;
	static Fabriciq__Nic nics[AGENT_MAX_NICS];
	static Fabriciq__Nic *ptr[AGENT_MAX_NICS];
	const struct timeval now = {0, 0};

	if (a->tracer)
		event_base_once(a->base, -1, EV_TIMEOUT, resend_routes, a, &now);

	h->node = a->cfg.node;
	h->agent_version = PACKAGE_VERSION;
	h->boot_id = a->boot_id;
	for (unsigned i = 0; i < a->n_nics; i++) {
		fabriciq__nic__init(&nics[i]);
		nics[i].name = a->nics[i].name;
		nics[i].address = a->nics[i].address;
		nics[i].rail = a->nics[i].rail;
		nics[i].speed_mbps = a->nics[i].speed_mbps;
		nics[i].kind = FABRICIQ__NIC_KIND__NIC_ETHERNET;
		ptr[i] = &nics[i];
	}
	h->n_nics = a->n_nics;
	h->nics = ptr;
}

static void on_correction(void *arg, const Fabriciq__ClockCorrection *c)
{
	struct agent *a = arg;

	/* without the reference's epoch the correction cannot be placed on
	 * the global timeline (the reference has not reported yet) */
	if (!c->reference_node || !*c->reference_node || !c->reference_epoch_ns)
		return;
	if (!a->have_correction || strcmp(a->reference, c->reference_node) != 0)
		fq_info("clock: controller correction epoch %llu, reference %s, offset %lld ns +- %lld ns",
			(unsigned long long)c->epoch, c->reference_node, (long long)c->offset_ns,
			(long long)c->error_bound_ns);
	a->corr = *c;
	a->corr.reference_node = NULL;
	snprintf(a->reference, sizeof(a->reference), "%s", c->reference_node);
	a->corr.reference_node = a->reference;
	a->corr_local_ns = fq_now_ns();
	a->have_correction = true;
}

static bool assigned_has(const Fabriciq__PeerAssignment *p, const char *nic, const char *addr)
{
	for (size_t i = 0; i < p->n_nics; i++)
		if (p->nics[i]->local_nic && strcmp(p->nics[i]->local_nic, nic) == 0)
			for (size_t j = 0; j < p->nics[i]->n_peers; j++)
				if (p->nics[i]->peers[j]->address &&
				    strcmp(p->nics[i]->peers[j]->address, addr) == 0)
					return true;
	return false;
}

static void on_peers(void *arg, const Fabriciq__PeerAssignment *p)
{
	struct agent *a = arg;
	unsigned added = 0, removed = 0, kept = 0;

	/* drop what the new assignment leaves out */
	for (unsigned i = 0; i < a->n_assigned;) {
		if (!assigned_has(p, a->assigned[i].nic, a->assigned[i].addr)) {
			fq_prober_remove_peer(a->prober, a->assigned[i].nic, a->assigned[i].addr);
			a->assigned[i] = a->assigned[--a->n_assigned];
			removed++;
		} else {
			i++;
		}
	}
	for (size_t i = 0; i < p->n_nics; i++) {
		const Fabriciq__PeerAssignment__NicPeers *np = p->nics[i];
		for (size_t j = 0; np->local_nic && j < np->n_peers; j++) {
			const Fabriciq__Peer *peer = np->peers[j];
			int rc;

			if (!peer->address || !peer->node || !peer->nic ||
			    strcmp(peer->node, a->cfg.node) == 0)
				continue;
			rc = fq_prober_add_peer(a->prober, np->local_nic, peer->node, peer->nic,
						peer->address);
			if (rc == -EEXIST) {
				kept++;
				continue;
			}
			if (rc < 0) {
				fq_log_rl(FQ_LOG_WARN, "peer assignment: %s -> %s:%s@%s: %s", np->local_nic,
					  peer->node, peer->nic, peer->address, strerror(-rc));
				continue;
			}
			if (a->n_assigned < AGENT_MAX_ASSIGNED) {
				snprintf(a->assigned[a->n_assigned].nic, sizeof(a->assigned[0].nic), "%s",
					 np->local_nic);
				snprintf(a->assigned[a->n_assigned].addr, sizeof(a->assigned[0].addr), "%s",
					 peer->address);
				a->n_assigned++;
			}
			added++;
		}
	}
	a->peers_epoch = p->epoch;
	fq_info("peer assignment %llu: %u path(s) added, %u removed, %u kept", (unsigned long long)p->epoch,
		added, removed, kept);
}

/* Collision advice: onto the path page at once (not at the next window:
 * the job should move while the collision lasts). */
static void on_advice(void *arg, const Fabriciq__Advice *adv)
{
	struct agent *a = arg;
	int64_t now = fq_now_ns();
	int rc = fq_advice_take(&a->advice, adv, now);

	if (rc == -ENOENT)
		return; /* a lift of a rate not held (lapsed, or the agent restarted) */
	if (rc < 0) {
		fq_log_rl(FQ_LOG_WARN,
			  "controller advice for job %llu on %s refused: not a valid move or rate advice",
			  (unsigned long long)adv->job_id, adv->local_nic ? adv->local_nic : "?");
		return;
	}
	if (!strcmp(adv->kind, "rate")) {
		if (rc == FQ_ADVICE_LIFTED)
			fq_info("controller rate: job %llu on %s -> %s:%s lifted",
				(unsigned long long)adv->job_id, adv->local_nic,
				*adv->remote_node ? adv->remote_node : "*",
				*adv->remote_nic ? adv->remote_nic : "*");
		else if (rc == 1)
			fq_info(
			    "controller rate: job %llu on %s -> %s:%s at most %.2f Mbit/s a lane for %lld ms "
			    "(room for job %llu on %s, %.1f Mbit/s)",
			    (unsigned long long)adv->job_id, adv->local_nic,
			    *adv->remote_node ? adv->remote_node : "*",
			    *adv->remote_nic ? adv->remote_nic : "*", (double)adv->rate_bytes_per_s * 8 / 1e6,
			    (long long)(adv->lifetime_ns / 1000000),
			    (unsigned long long)adv->collides_with_job,
			    adv->shared_link ? adv->shared_link : "?", (double)adv->link_capacity * 8 / 1e6);
	} else if (rc == 1) {
		const char *at = adv->shared_link && *adv->shared_link ? adv->shared_link
				 : adv->shared_nic && *adv->shared_nic ? adv->shared_nic
								       : "?";
		char lane[32] = "";

		if (adv->local_port)
			snprintf(lane, sizeof(lane), "the lane from port %u, ", adv->local_port);
		fq_info(
		    "controller advice: job %llu move off %s -> %s:%s for %lld ms (%scollides with job %llu "
		    "on %s)",
		    (unsigned long long)adv->job_id, adv->local_nic,
		    *adv->remote_node ? adv->remote_node : "*", *adv->remote_nic ? adv->remote_nic : "*",
		    (long long)(adv->lifetime_ns / 1000000), lane, (unsigned long long)adv->collides_with_job,
		    at);
	}
	publish_paths(a, now);
}

/* The controller saw a route change: every path may have moved. */
static void on_retrace(void *arg)
{
	struct agent *a = arg;

	fq_tracer_retrace(a->tracer);
}

const struct fq_uplink_ops agent_uplink_ops = {
    .hello = on_hello,
    .correction = on_correction,
    .peers = on_peers,
    .advice = on_advice,
    .retrace = on_retrace,
};
