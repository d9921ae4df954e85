/*
 * detector_link: the detector's NICs (flapping, NIC-level down inferred
 * from their paths) and paths (link state, delay against a baseline), fed
 * by probe windows and link events.
 */
#include "controller/detector_link.h"

#include "controller/detector_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- NICs: flapping and NIC-level down ------------------------------------ */

void det_nic_drop(void *ctx, struct fq_captab_ent *e)
{
	struct fq_detector *d = ctx;

	(void)d;
	free(((struct nic_ent *)e)->downs);
}

static struct nic_ent *nic_get(struct fq_detector *d, const struct nic_key *k, int64_t now)
{
	return (struct nic_ent *)fq_captab_get(&d->nics, k, now, true, NULL);
}

static void nic_record_down(struct fq_detector *d, struct nic_ent *n, int64_t t)
{
	int64_t from = fq_rule_sat_sub(t, d->c.flap_window_ns);
	size_t k = 0;

	for (size_t i = 0; i < n->ndowns; i++) /* keep the window only */
		if (n->downs[i] > from)
			n->downs[k++] = n->downs[i];
	n->ndowns = k;
	if (n->ndowns == MAX_DOWNS) {
		memmove(n->downs, n->downs + 1, (MAX_DOWNS - 1) * sizeof(*n->downs));
		n->ndowns--;
	}
	if (n->ndowns == n->cap) {
		size_t cap = n->cap ? n->cap * 2 : 4;
		int64_t *p = realloc(n->downs, cap * sizeof(*p));

		if (!p)
			return;
		n->downs = p;
		n->cap = cap;
	}
	n->downs[n->ndowns++] = t;
}

static void check_flapping(struct fq_detector *d, struct nic_ent *n, int64_t t)
{
	char summary[256], evidence[256], reason[160], win[32];
	struct anom_ent *a;
	unsigned count;
	bool opened;

	if (!fq_rule_flapping(&d->c, n->downs, n->ndowns, t, &count))
		return;
	fq_rule_format_duration(d->c.flap_window_ns, win, sizeof(win));
	snprintf(summary, sizeof(summary), "%s of %s went down %u times in %s (more than %u)", n->k.nic,
		 n->k.node, count, win, d->c.flap_threshold);
	snprintf(evidence, sizeof(evidence), "{\"downs\":%u,\"window_ns\":%" PRId64 ",\"threshold\":%u}",
		 count, d->c.flap_window_ns, d->c.flap_threshold);
	a = det_anom_evidence(d, K_FLAPPING, SEV_CRITICAL, &n->k, NULL, n->downs[0], t, summary, evidence,
			      &opened);
	if (a && opened)
		det_hint_drain(d, &n->k,
			       fq_rule_drain_reason(n->k.nic, "flapped", count, d->c.flap_window_ns, reason,
						    sizeof(reason)),
			       a->handle, t);
}

static void nic_transition(struct fq_detector *d, struct nic_ent *n, bool down, int64_t t, const char *why)
{
	char summary[256], evidence[160];
	struct anom_ent *a = det_anom_find(d, K_LINK_DOWN, &n->k, NULL);

	if (down == n->down) {
		if (down && a)
			a->last_ns = max64(a->last_ns, t);
		return;
	}
	n->down = down;
	if (!down) {
		n->dead_hinted = false;
		if (a)
			a->up_ns = t; /* the episode goes on until UP for incident_gap_ns */
		return;
	}
	n->down_since = t;
	nic_record_down(d, n, t);
	snprintf(summary, sizeof(summary), "%s of %s down (%s)%s", n->k.nic, n->k.node, why,
		 det_nic_said(d, &n->k));
	snprintf(evidence, sizeof(evidence), "{\"nic_level\":true,\"paths_known\":%u,\"paths_down\":%u}",
		 n->paths_known, n->paths_down);
	det_episode_down(d, SEV_CRITICAL, &n->k, NULL, t, summary, evidence);
	check_flapping(d, n, t);
}

/* ---- paths: link state and delay ----------------------------------------- */

void det_path_drop(void *ctx, struct fq_captab_ent *e)
{
	struct fq_detector *d = ctx;

	struct path_ent *p = (struct path_ent *)e;
	struct nic_ent *n;

	det_path_routes_free(p);
	if (p->state == ST_UNKNOWN || !(n = (struct nic_ent *)fq_captab_find(&d->nics, &p->k.src)))
		return;
	if (n->paths_known)
		n->paths_known--;
	if (p->state == ST_DOWN && n->paths_down)
		n->paths_down--;
}

struct path_ent *det_path_get(struct fq_detector *d, const struct nic_key *src, const struct nic_key *dst,
			      int64_t now)
{
	struct path_key k = {*src, *dst};
	struct path_ent *p;
	bool created;

	p = (struct path_ent *)fq_captab_get(&d->paths, &k, now, true, &created);
	if (p && created)
		p->first_ns = now;
	return p;
}

/* A path's DOWN at t: nothing more when a NIC episode at either end
 * explains it (the daemon stores the raw event), counted into the path's
 * open episode, or held for incident_settle_ns (det_promote_paths). */
static void path_down(struct fq_detector *d, struct path_ent *p, int64_t t)
{
	if (det_nic_incident(d, K_LINK_DOWN, &p->k.src, &p->k.dst, t))
		return;
	if (det_episode_at(d, &p->k.src, &p->k.dst, t)) {
		det_episode_down(d, SEV_WARNING, &p->k.src, &p->k.dst, t, NULL, NULL);
		return;
	}
	if (!p->pend_ns)
		p->pend_ns = t;
	p->pend_last_ns = max64(p->pend_last_ns, t);
	p->pend_downs++;
}

/* ---- paths: a far agent that stood still ----------------------------------- */

/* The sibling of the daemon's "agent was away" rule (ctl_detect.c) for an
 * agent that stayed connected but stood still: its peers' probes went
 * unanswered, so their paths to it went DOWN, and the link was fine. */

void fq_detector_agent_heard(struct fq_detector *d, const char *node, int64_t now)
{
	struct node_ent *n;

	if (!d || !has(node) || now <= 0)
		return;
	if ((n = det_node_get(d, node, now)))
		n->heard_ns = max64(n->heard_ns, now);
}

void fq_detector_agent_stall(struct fq_detector *d, const char *node, int64_t start, int64_t end)
{
	struct node_ent *n;

	if (!d)
		return;
	if (!has(node) || start <= 0 || end < start) {
		d->rejected_inputs++;
		return;
	}
	if (!(n = det_node_get(d, node, end)))
		return;
	n->stall_start[n->stall_next] = start;
	n->stall_end[n->stall_next] = end;
	n->stall_next = (n->stall_next + 1) % NODE_STALLS;
}

enum stall_verdict {
	STALL_NONE,
	STALL_EXPLAINS,
	STALL_WAIT
};

/* What the far agent's stalls say of p's held DOWNs (*i: the stall that
 * explains them). The silence began at the last answer, at most a probe
 * round before the stall (margin: that and the two clocks), and before
 * its end; the path is UP again once the agent answers its queued probes,
 * at the stall's end. Still DOWN then: the link as well, or instead. */
static enum stall_verdict stall_verdict(struct fq_detector *d, struct path_ent *p, int64_t now, int *i)
{
	struct node_ent *b = det_node_find(d, p->k.dst.node);
	int64_t m = d->c.stall_margin_ns;

	if (!b)
		return STALL_NONE;
	for (*i = 0; *i < NODE_STALLS; (*i)++) {
		int64_t s = b->stall_start[*i], e = b->stall_end[*i];

		if (!e || fq_rule_sat_sub(s, m) > p->pend_ns || p->pend_last_ns > e)
			continue;
		if (p->state == ST_UP && p->state_ns <= e + m)
			return STALL_EXPLAINS;
		/* the UP, if it came, is on its way as a DOWN was */
		if (p->state == ST_DOWN && now < e + m + d->c.incident_settle_ns)
			return STALL_WAIT;
	}
	/* Its report comes after the stall: while its agent, heard before,
	 * has sent nothing since the silence began, it may be standing still
	 * yet; once heard again, one more tick for the report sent with its
	 * first frames. */
	if (b->heard_ns && b->heard_ns < p->pend_ns + m) {
		p->pend_back_ns = -1;
		return STALL_WAIT;
	}
	if (p->pend_back_ns == -1 || (p->pend_back_ns > 0 && now <= p->pend_back_ns)) {
		if (p->pend_back_ns == -1)
			p->pend_back_ns = now;
		return STALL_WAIT;
	}
	return STALL_NONE;
}

/* Paths whose held DOWNs are incident_settle_ns old: an episode of the
 * path (its DOWNs counted, UP since: back at its UP), unless a NIC
 * episode at either end explains them by now, or a stall of the far
 * agent (waited for up to stall_wait_ns: stall_verdict). */
void det_promote_paths(struct fq_detector *d, int64_t now)
{
	char summary[320];

	FQ_CAPTAB_FOREACH(&d->paths, struct path_ent, p, nx)
	{
		struct anom_ent *a;
		unsigned downs = p->pend_downs;
		enum stall_verdict v;
		int i = 0;

		if (!p->pend_ns || fq_rule_sat_sub(now, p->pend_ns) < d->c.incident_settle_ns)
			continue;
		v = stall_verdict(d, p, now, &i);
		if (v == STALL_WAIT && fq_rule_sat_sub(now, p->pend_ns) < d->c.stall_wait_ns)
			continue;
		if (v == STALL_EXPLAINS) {
			const struct node_ent *b = det_node_find(d, p->k.dst.node);

			fq_info("path %s/%s -> %s/%s DOWN: %s's agent stood still from %.3f to %.3f (%" PRId64
				" ms), not the link",
				p->k.src.node, p->k.src.nic, p->k.dst.node, p->k.dst.nic, p->k.dst.node,
				(double)b->stall_start[i] / 1e9, (double)b->stall_end[i] / 1e9,
				(b->stall_end[i] - b->stall_start[i]) / 1000000);
			p->pend_ns = p->pend_last_ns = p->pend_back_ns = 0;
			p->pend_downs = 0;
			continue;
		}
		p->pend_downs = 0;
		p->pend_back_ns = 0;
		if (!det_nic_incident(d, K_LINK_DOWN, &p->k.src, &p->k.dst, p->pend_last_ns)) {
			snprintf(summary, sizeof(summary), "path %s/%s -> %s/%s down", p->k.src.node,
				 p->k.src.nic, p->k.dst.node, p->k.dst.nic);
			a = det_anom_evidence(d, K_LINK_DOWN, SEV_WARNING, &p->k.src, &p->k.dst, p->pend_ns,
					      p->pend_ns, summary, "{\"nic_level\":false}", NULL);
			if (a && downs > 1) {
				a->events = downs;
				det_episode_update(d, a, p->pend_last_ns);
			}
			if (a && p->state != ST_DOWN)
				a->up_ns = p->state_ns;
		}
		p->pend_ns = p->pend_last_ns = 0;
	}
}

static void path_set_state(struct fq_detector *d, struct path_ent *p, int state, int64_t t)
{
	struct nic_ent *n = nic_get(d, &p->k.src, t);
	char summary[32];
	struct anom_ent *a;
	int old = p->state;

	if (state == old || t < p->state_ns) {
		if (state == ST_DOWN && old == ST_DOWN &&
		    (a = det_anom_find(d, K_LINK_DOWN, &p->k.src, &p->k.dst)))
			a->last_ns = max64(a->last_ns, t);
		return;
	}
	p->state = state;
	p->state_ns = t;
	if (n) {
		n->paths_known += old == ST_UNKNOWN;
		if (old == ST_DOWN && n->paths_down)
			n->paths_down--;
		n->paths_down += state == ST_DOWN;
	}
	if (state == ST_DOWN)
		path_down(d, p, t);
	else if ((a = det_anom_find(d, K_LINK_DOWN, &p->k.src, &p->k.dst)))
		a->up_ns = t; /* the episode goes on until UP for incident_gap_ns */
	if (!n)
		return;
	if (state == ST_DOWN && fq_rule_nic_down(&d->c, n->paths_known, n->paths_down)) {
		snprintf(summary, sizeof(summary), "all %u paths down", n->paths_known);
		nic_transition(d, n, true, t, summary);
	} else if (state == ST_UP && n->down) {
		nic_transition(d, n, false, t, "a path up");
	}
}

/* One report's delay figures for a path (0: none). */
struct owd_sample {
	int64_t p50, p90, p99;
};

/* Counts the report towards the path's streak of elevated periods: each
 * direction of a path is reported by both its ends, over windows that
 * overlap, so a report counts as a new period only once it starts past
 * the middle of the streak's last one (not twice a second). */
static void streak_add(struct path_ent *p, int64_t start, int64_t end)
{
	if (p->streak == 0 || start >= p->streak_end - (end - start) / 2) {
		if (p->streak < UINT32_MAX && p->streak++ == 0)
			p->streak_start = start;
		p->streak_end = end;
	} else {
		p->streak_end = max64(p->streak_end, end);
	}
}

/* The rule judges the window's p90: a window is a few dozen probes, and its
 * p99 is its slowest one or two (one probe the host was slow to send is
 * not a delayed path); p99 only from an agent that sends no p90. */
static void path_delay_sample(struct fq_detector *d, struct path_ent *p, struct owd_sample o, int64_t start,
			      int64_t end)
{
	char summary[384], evidence[320];
	int64_t base = p->quiet >= d->c.delay_baseline_windows ? p->baseline_ns : 0;
	int64_t tail = o.p90 > 0 ? o.p90 : o.p99;
	const char *q = o.p90 > 0 ? "p90" : "p99";
	enum fq_rule_delay v;

	if (tail <= 0 && o.p50 <= 0)
		return;
	if (o.p50 > 0)
		p->p50_ns = o.p50;
	p->tail_ns = tail;
	p->last_end_ns = max64(p->last_end_ns, end);
	v = fq_rule_path_delay(&d->c, tail, base);
	if (v == FQ_RULE_DELAY_OK)
		p->streak = 0;
	else
		streak_add(p, start, end);
	p->elevated = v != FQ_RULE_DELAY_OK && p->streak >= d->c.delay_persist_windows;
	p->slow = v != FQ_RULE_DELAY_OK &&
		  p->streak >= (d->c.delay_persist_windows < LOCATE_STREAK ? d->c.delay_persist_windows
									   : LOCATE_STREAK);
	if (v == FQ_RULE_DELAY_OK) {
		/* Once established, the baseline learns only from windows within
		 * 2x of it: a path creeping up just under the factor would
		 * otherwise drag its own baseline along and never be flagged. */
		if (!base || tail / 2 <= base)
			p->baseline_ns = fq_rule_baseline_update(p->baseline_ns, tail);
		if (tail > 0 && p->quiet < UINT32_MAX)
			p->quiet++;
		return;
	}
	if (!p->elevated)
		return; /* not yet persistent */
	if (v == FQ_RULE_DELAY_ABSOLUTE)
		snprintf(summary, sizeof(summary),
			 "path %s/%s -> %s/%s: owd %s %.1f us above the %.1f us threshold", p->k.src.node,
			 p->k.src.nic, p->k.dst.node, p->k.dst.nic, q, us(tail), us(d->c.delay_threshold_ns));
	else
		snprintf(summary, sizeof(summary),
			 "path %s/%s -> %s/%s: owd %s %.1f us vs baseline %.1f us (x%.1f)", p->k.src.node,
			 p->k.src.nic, p->k.dst.node, p->k.dst.nic, q, us(tail), us(base),
			 (double)tail / (double)base);
	snprintf(evidence, sizeof(evidence),
		 "{\"owd_p50_ns\":%" PRId64 ",\"owd_p90_ns\":%" PRId64 ",\"owd_p99_ns\":%" PRId64
		 ",\"baseline_ns\":%" PRId64 ",\"threshold_ns\":%" PRId64 ",\"factor\":%.2f,\"rule\":\"%s\"}",
		 o.p50, o.p90, o.p99, base, d->c.delay_threshold_ns, d->c.delay_baseline_factor,
		 v == FQ_RULE_DELAY_ABSOLUTE ? "threshold" : "baseline");
	/* the anomaly starts with the first window of the streak */
	det_anom_evidence(d, K_PATH_DELAY, v == FQ_RULE_DELAY_ABSOLUTE ? SEV_CRITICAL : SEV_WARNING,
			  &p->k.src, &p->k.dst, (p->streak_start < start ? p->streak_start : start), end,
			  summary, evidence, NULL);
}

/* One flow's delay in one direction (its p90, p50 where there is none),
 * judged against the path's own baseline as the path's rule judges its
 * p90: the localisation's unit. Its tail, not its median: a congested
 * queue fills and drains (a job's bursts), so it delays a part of the
 * flow's few probes a window (measured: a spine shaped under a job's load
 * left most flows' p50 under the threshold, their p90 far over it); two
 * windows in a row, so one slow probe is not a delayed flow. */
static void flow_delay_sample(struct fq_detector *d, const struct path_ent *p, struct path_flow *f,
			      int64_t p50, int64_t p90, int64_t start, int64_t end)
{
	int64_t base = p->quiet >= d->c.delay_baseline_windows ? p->baseline_ns : 0;
	int64_t v = p90 > 0 ? p90 : p50;
	bool delayed;

	if (v <= 0)
		return;
	f->tail_ns = v;
	f->last_end_ns = max64(f->last_end_ns, end);
	delayed = fq_rule_path_delay(&d->c, v, base) != FQ_RULE_DELAY_OK;
	if (!delayed) {
		f->streak = 0;
	} else if (f->streak == 0 || start >= f->streak_end - (end - start) / 2) {
		/* both ends report each direction: a new period only past the
		 * middle of the last (as streak_add) */
		if (f->streak < UINT32_MAX && f->streak++ == 0)
			f->streak_start = start;
		f->streak_end = end;
	} else {
		f->streak_end = max64(f->streak_end, end);
	}
	f->slow =
	    delayed && f->streak >= (d->c.delay_persist_windows < LOCATE_STREAK ? d->c.delay_persist_windows
										: LOCATE_STREAK);
}

/* A window's flows: each one's loss on the forward path's flow, its
 * delays on the forward and reverse paths' (rev may be NULL). A window
 * without flows leaves the path one flow again. */
static void path_flows(struct fq_detector *d, const struct fq_det_probe *p, struct path_ent *fwd,
		       struct path_ent *rev, int64_t start)
{
	struct path_flow *ff, *rf = NULL;
	unsigned n = 0;

	if (!p->n_flows || !p->flows) {
		fwd->nflows = 0;
		return;
	}
	if (!(ff = det_path_flows(fwd)) || (rev && !(rf = det_path_flows(rev))))
		return;
	for (size_t i = 0; i < p->n_flows; i++) {
		const struct fq_det_flow *w = &p->flows[i];
		struct path_flow *f;

		if (w->flow >= FQ_DET_MAX_FLOWS)
			continue;
		f = &ff[w->flow];
		n = w->flow + 1 > n ? w->flow + 1 : n;
		det_flow_loss(f, w->sent,
			      p->up ? w->lost
				    : (w->sent > w->lost ? w->sent
				       : w->lost         ? w->lost
							 : 1),
			      start, p->end_ns);
		if (!p->up)
			continue;
		flow_delay_sample(d, fwd, f, w->owd_fwd_p50_ns, w->owd_fwd_p90_ns, start, p->end_ns);
		if (rf)
			flow_delay_sample(d, rev, &rf[w->flow], w->owd_rev_p50_ns, w->owd_rev_p90_ns, start,
					  p->end_ns);
	}
	fwd->nflows = n;
	if (rev && rev->nflows < n)
		rev->nflows = n; /* its flows' delays: usable before its own agent's window */
}

bool det_path_delayed_everywhere(const struct path_ent *p, int64_t now)
{
	for (unsigned k = 0; p->flows && k < p->nflows; k++) {
		const struct path_flow *f = &p->flows[k];

		if (f->tail_ns > 0 && !older_than(now, f->last_end_ns, LOCATE_RECENT_NS) && !f->streak)
			return false; /* a flow of it is not delayed: not its end NIC's doing */
	}
	return true;
}

void fq_detector_probe(struct fq_detector *d, const struct fq_det_probe *p)
{
	struct nic_key a, b;
	struct path_ent *fwd, *rev;
	int64_t start;

	if (!d)
		return;
	if (!p || !has(p->node) || !has(p->nic) || !has(p->remote_node) || !has(p->remote_nic) ||
	    p->end_ns <= 0) {
		d->rejected_inputs++;
		return;
	}
	start = p->start_ns > 0 && p->start_ns <= p->end_ns ? p->start_ns : p->end_ns;
	nic_key_set(&a, p->node, p->nic);
	nic_key_set(&b, p->remote_node, p->remote_nic);
	nic_get(d, &a, p->end_ns);
	nic_get(d, &b, p->end_ns);
	fwd = det_path_get(d, &a, &b, p->end_ns);
	if (!fwd)
		return;
	path_set_state(d, fwd, p->up ? ST_UP : ST_DOWN, p->up ? start : p->end_ns);
	det_path_loss(fwd, p->sent,
		      p->up ? p->lost
			    : (p->sent > p->lost ? p->sent
			       : p->lost         ? p->lost
						 : 1),
		      start, p->end_ns);
	rev = p->up && (p->owd_rev_p50_ns > 0 || p->owd_rev_p90_ns > 0 || p->owd_rev_p99_ns > 0 || p->n_flows)
		  ? det_path_get(d, &b, &a, p->end_ns)
		  : NULL;
	path_flows(d, p, fwd, rev, start);
	if (!p->up)
		return;
	path_delay_sample(d, fwd,
			  (struct owd_sample){p->owd_fwd_p50_ns, p->owd_fwd_p90_ns, p->owd_fwd_p99_ns}, start,
			  p->end_ns);
	if (p->owd_rev_p50_ns > 0 || p->owd_rev_p90_ns > 0 || p->owd_rev_p99_ns > 0) {
		if (rev)
			path_delay_sample(
			    d, rev,
			    (struct owd_sample){p->owd_rev_p50_ns, p->owd_rev_p90_ns, p->owd_rev_p99_ns},
			    start, p->end_ns);
	}
}

void fq_detector_link(struct fq_detector *d, const struct fq_det_link *e)
{
	struct nic_key a, b;
	struct nic_ent *n;
	struct path_ent *p;

	if (!d)
		return;
	if (!e || !has(e->node) || !has(e->nic) || e->time_ns <= 0) {
		d->rejected_inputs++;
		return;
	}
	nic_key_set(&a, e->node, e->nic);
	if (e->nic_level || !has(e->remote_node) || !has(e->remote_nic)) {
		n = nic_get(d, &a, e->time_ns);
		if (!n)
			return;
		if (e->up)
			n->said[0] = 0; /* answering again: what it said is over */
		else if (e->nic_state && *e->nic_state &&
			 strncmp(n->said, e->nic_state, sizeof(n->said) - 1) != 0) {
			struct anom_ent *ep = det_anom_find(d, K_LINK_DOWN, &n->k, NULL);

			copy_name(n->said, sizeof(n->said), e->nic_state);
			if (n->down && ep) /* opened from its paths before it said: blame anew */
				det_episode_update(d, ep, e->time_ns);
		}
		nic_transition(d, n, !e->up, e->time_ns, "nic-level event");
		return;
	}
	nic_key_set(&b, e->remote_node, e->remote_nic);
	nic_get(d, &b, e->time_ns);
	p = det_path_get(d, &a, &b, e->time_ns);
	if (p)
		path_set_state(d, p, e->up ? ST_UP : ST_DOWN, e->time_ns);
}
