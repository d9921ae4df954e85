/*
 * detector_episode: anomalies, one open per kind and place, with the job
 * steps attached to them, and link episodes (a link_down counts its DOWNs;
 * a NIC's open episode is the incident of the anomalies on that NIC).
 */
#include "controller/detector_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {
    [K_LINK_DOWN] = "link_down",         [K_FLAPPING] = "flapping",       [K_PATH_DELAY] = "path_delay",
    [K_LANE_OUTLIER] = "lane_outlier",   [K_INBAND] = "inband_mismatch",  [K_SLOW_SENDER] = "slow_sender",
    [K_SLOW_RECEIVER] = "slow_receiver", [K_COLLISION] = "collision",     [K_RDMA_CONFIG] = "rdma_config",
    [K_FABRIC_DELAY] = "fabric_delay",   [K_FABRIC_LOSS] = "fabric_loss", [K_TOPOLOGY] = "topology_mismatch",
    [K_PEER_SLOW] = "peer_slow",
};

/* ---- anomalies ------------------------------------------------------------ */

void det_anom_drop(void *ctx, struct fq_captab_ent *e)
{
	struct fq_detector *d = ctx;

	struct anom_ent *a = (struct anom_ent *)e;

	(void)d;
	for (size_t i = 0; i < a->natts; i++)
		free(a->atts[i].ranks);
	free(a->atts);
}

struct anom_ent *det_anom_find(struct fq_detector *d, enum kind kind, const struct nic_key *a,
			       const struct nic_key *b)
{
	struct anom_key key;

	memset(&key, 0, sizeof(key));
	key.kind = kind;
	key.a = *a;
	if (b)
		key.b = *b;
	return (struct anom_ent *)fq_captab_find(&d->anoms, &key);
}

/* The open link episode (link_down) of NIC a or path a -> b at t: NULL
 * when there is none or it is over by then (its place UP for
 * incident_gap_ns; a tick closes it). */
struct anom_ent *det_episode_at(struct fq_detector *d, const struct nic_key *a, const struct nic_key *b,
				int64_t t)
{
	struct anom_ent *e = det_anom_find(d, K_LINK_DOWN, a, b);

	return e && !(e->up_ns && fq_rule_sat_sub(t, e->up_ns) >= d->c.incident_gap_ns) ? e : NULL;
}

/* The incident a new anomaly of kind on (a, b) at t is a member of: the
 * open episode of NIC a, else of NIC b; NULL: none, or the new anomaly
 * is that NIC's episode itself. */
struct anom_ent *det_nic_incident(struct fq_detector *d, enum kind kind, const struct nic_key *a,
				  const struct nic_key *b, int64_t t)
{
	struct anom_ent *r;
	bool b_nic = b && !nic_empty(b);

	if (kind == K_LINK_DOWN && !b_nic)
		return NULL;
	r = det_episode_at(d, a, NULL, t);
	if (!r && b_nic)
		r = det_episode_at(d, b, NULL, t);
	if (!r && (kind == K_PATH_DELAY || kind == K_LANE_OUTLIER) && b_nic) {
		struct path_key pk = {*a, *b};
		const struct path_ent *p = (const struct path_ent *)fq_captab_find(&d->paths, &pk);

		r = p ? det_fabric_incident(d, p) : NULL;
	}
	return r;
}

static bool att_add_rank(struct att *t, uint32_t r)
{
	uint32_t *n;

	for (size_t i = 0; i < t->nranks; i++)
		if (t->ranks[i] == r)
			return false;
	if (t->nranks == t->cap) {
		n = realloc(t->ranks, (t->cap ? t->cap * 2 : 4) * sizeof(*n));
		if (!n)
			return false;
		t->ranks = n;
		t->cap = t->cap ? t->cap * 2 : 4;
	}
	t->ranks[t->nranks++] = r;
	return true;
}

/* Attaches (job, step, ranks) to the anomaly; queues an ATTACH with the
 * ranks new to it (none new: nothing queued). */
void det_anom_attach(struct fq_detector *d, struct anom_ent *a, uint64_t job, uint32_t step,
		     const uint32_t *ranks, size_t nranks)
{
	struct att *t = NULL;
	uint32_t fresh[2];
	size_t nfresh = 0;
	bool is_new = false;

	for (size_t i = 0; i < a->natts && !t; i++)
		if (a->atts[i].job == job && a->atts[i].step == step)
			t = &a->atts[i];
	if (!t) {
		if (a->natts >= d->c.max_steps_per_anomaly)
			return;
		if (a->natts == a->cap) {
			size_t cap = a->cap ? a->cap * 2 : 4;
			struct att *n = realloc(a->atts, cap * sizeof(*n));

			if (!n)
				return;
			a->atts = n;
			a->cap = cap;
		}
		t = &a->atts[a->natts++];
		*t = (struct att){.job = job, .step = step};
		is_new = true;
	}
	for (size_t i = 0; i < nranks && i < 2; i++)
		if (att_add_rank(t, ranks[i]))
			fresh[nfresh++] = ranks[i];
	if (!nfresh && !is_new)
		return;
	det_push(d, &(struct fq_det_action){.kind = FQ_DET_ATTACH,
					    .handle = a->handle,
					    .job_id = job,
					    .step_id = step,
					    .ranks = fresh,
					    .nranks = nfresh});
}

static bool is_path_place(const struct anom_ent *a)
{
	return !nic_empty(&a->k.b);
}

/* A collision on a switch link: its place is the link's name, no NIC. */
static bool is_link_collision(uint64_t kind, const struct nic_key *a)
{
	return kind == K_COLLISION && !a->nic[0];
}

/* Did this lane cross the anomaly's place (kind-specific)? */
static bool lane_matches(struct fq_detector *d, const struct anom_ent *a, const struct step_key *sk,
			 const struct lane_rec *l)
{
	const struct nic_key *s = &l->p.src, *t = &l->p.dst, *x = &a->k.a, *y = &a->k.b;

	switch ((enum kind)a->k.kind) {
	case K_FABRIC_DELAY: /* the lane is routed through the component (detector_lroute.c) */
		return det_lane_crosses(d, sk, l, x->node, false);
	case K_FABRIC_LOSS: /* ... or its acks are */
		return det_lane_crosses(d, sk, l, x->node, true);
	case K_LANE_OUTLIER:
	case K_RDMA_CONFIG:
	case K_PEER_SLOW:     /* the profiler's: its step has no lanes */
		return false; /* attached explicitly to the step it was seen in */
	case K_TOPOLOGY:
		return false; /* the fabric's wiring: no job's */
	case K_SLOW_SENDER:
		return nic_eq(s, x);
	case K_SLOW_RECEIVER:
		return nic_eq(t, x);
	case K_PATH_DELAY:
	case K_INBAND:
		return nic_eq(s, x) && nic_eq(t, y);
	case K_COLLISION:
		if (is_link_collision(a->k.kind, x)) /* the lane's own route crosses it that way */
			return det_lane_crosses(d, sk, l, x->node, false);
		/* fall through */
	case K_LINK_DOWN:
	case K_FLAPPING:
		if (!is_path_place(a))
			return nic_eq(s, x) || nic_eq(t, x);
		return (nic_eq(s, x) && nic_eq(t, y)) || (nic_eq(s, y) && nic_eq(t, x));
	}
	return false;
}

void det_attach_lane(struct fq_detector *d, struct anom_ent *a, const struct step_key *sk,
		     const struct lane_rec *l)
{
	uint32_t ranks[2] = {l->src_rank, l->dst_rank};

	if (l->end_ns < fq_rule_sat_sub(a->start_ns, d->c.attach_slack_ns) || !lane_matches(d, a, sk, l))
		return;
	det_anom_attach(d, a, sk->job, (uint32_t)sk->step, ranks, l->dst_rank == l->src_rank ? 1 : 2);
}

/* Evidence for (kind, place): extends the open anomaly or opens one (and
 * attaches the steps whose lanes crossed the place). *opened (may be
 * NULL) says which. NULL: none could be opened (max_open). */
struct anom_ent *det_anom_evidence(struct fq_detector *d, enum kind kind, int severity,
				   const struct nic_key *a, const struct nic_key *b, int64_t start_ns,
				   int64_t ev_ns, const char *summary, const char *evidence, bool *opened)
{
	return det_anom_member(d, kind, severity, a, b, start_ns, ev_ns, summary, evidence, opened, NULL);
}

struct anom_ent *det_anom_member(struct fq_detector *d, enum kind kind, int severity, const struct nic_key *a,
				 const struct nic_key *b, int64_t start_ns, int64_t ev_ns,
				 const char *summary, const char *evidence, bool *opened,
				 const struct anom_ent *of)
{
	struct anom_key key;
	struct anom_ent *e, *inc;
	const char *component = NULL;
	char nicname[NODE_LEN + NIC_LEN + 2];
	bool created, no_node = det_no_node(kind) || is_link_collision(kind, a);

	memset(&key, 0, sizeof(key));
	key.kind = kind;
	key.a = *a;
	if (b)
		key.b = *b;
	if (opened)
		*opened = false;
	e = (struct anom_ent *)fq_captab_get(&d->anoms, &key, ev_ns, false, &created);
	if (!e) {
		d->dropped_anomalies++;
		return NULL;
	}
	if (!created) {
		e->last_ns = max64(e->last_ns, ev_ns);
		return e;
	}
	e->handle = ++d->next_handle;
	e->start_ns = start_ns < ev_ns ? start_ns : ev_ns;
	e->last_ns = ev_ns;
	e->events = 1;
	if ((inc = of ? (struct anom_ent *)of : det_nic_incident(d, kind, a, b, ev_ns)))
		e->incident = inc->handle;
	if (opened)
		*opened = true;
	/* a NIC down or flapping: its cable, or the NIC itself, or the port it
	 * plugs into; named by the cable (the host link), as the routes show it,
	 * unless the NIC said it was disabled or is gone */
	if ((kind == K_LINK_DOWN || kind == K_FLAPPING) && !(b && !nic_empty(b)))
		component = det_nic_component(d, a, nicname, sizeof(nicname));
	else if (det_is_fabric(kind) || is_link_collision(kind, a))
		component = a->node;
	det_push(d, &(struct fq_det_action){.kind = FQ_DET_OPEN,
					    .handle = e->handle,
					    .incident = e->incident,
					    .events = 1,
					    .anomaly_kind = kind_names[kind],
					    .severity = severity,
					    .start_ns = e->start_ns,
					    .node = no_node ? NULL : a->node,
					    .nic = no_node || !a->nic[0] ? NULL : a->nic,
					    .remote_node = b && b->node[0] ? b->node : NULL,
					    .remote_nic = b && b->nic[0] ? b->nic : NULL,
					    .component = component,
					    .summary = summary,
					    .evidence_json = evidence});
	FQ_CAPTAB_FOREACH(&d->steps, struct step_ent, s, nx)
	{
		for (size_t i = 0; i < s->n; i++)
			det_attach_lane(d, e, &s->k, &s->lanes[i]);
	}
	return e;
}

void det_anom_close(struct fq_detector *d, struct anom_ent *a, int64_t end_ns)
{
	det_push(d, &(struct fq_det_action){.kind = FQ_DET_CLOSE,
					    .handle = a->handle,
					    .anomaly_kind = kind_names[a->k.kind],
					    .start_ns = a->start_ns,
					    .end_ns = max64(end_ns, a->start_ns)});
	fq_captab_unlink(&d->anoms, &a->h);
}

/* ---- link episodes ---------------------------------------------------------- */

/* The episode's DOWNs so far (a->events), the last at t: an UPDATE. */
void det_episode_update(struct fq_detector *d, struct anom_ent *a, int64_t t)
{
	char text[400], nicname[NODE_LEN + NIC_LEN + 2];
	const char *component = NULL;

	a->last_ns = max64(a->last_ns, t);
	if (is_path_place(a)) {
		snprintf(text, sizeof(text), "path %s/%s -> %s/%s down %u times", a->k.a.node, a->k.a.nic,
			 a->k.b.node, a->k.b.nic, a->events);
	} else {
		snprintf(text, sizeof(text), "%s of %s down %u times%s", a->k.a.nic, a->k.a.node, a->events,
			 det_nic_said(d, &a->k.a));
		component = det_nic_component(d, &a->k.a, nicname, sizeof(nicname));
	}
	det_push(d, &(struct fq_det_action){.kind = FQ_DET_UPDATE,
					    .handle = a->handle,
					    .events = a->events,
					    .end_ns = t,
					    .component = component,
					    .summary = text});
}

/* A DOWN at t of NIC x (y NULL) or path x -> y: counted into its open
 * episode (an UPDATE), or the first of a new one (an episode over by t
 * is closed at its UP first, whether or not a tick saw it). */
void det_episode_down(struct fq_detector *d, int severity, const struct nic_key *x, const struct nic_key *y,
		      int64_t t, const char *summary, const char *evidence)
{
	struct anom_ent *a = det_anom_find(d, K_LINK_DOWN, x, y);

	if (a && !det_episode_at(d, x, y, t)) {
		det_anom_close(d, a, a->up_ns);
		a = NULL;
	}
	if (!a) {
		det_anom_evidence(d, K_LINK_DOWN, severity, x, y, t, t, summary, evidence, NULL);
		return;
	}
	a->events++;
	a->up_ns = 0;
	det_episode_update(d, a, t);
}

/* Is the episode over (its place UP for incident_gap_ns, or its state
 * dropped)? *end: when it came back (else its last evidence). */
bool det_episode_over(struct fq_detector *d, const struct anom_ent *a, int64_t now, int64_t *end)
{
	struct path_key pk = {a->k.a, a->k.b};
	const struct path_ent *p = NULL;
	const struct nic_ent *n = NULL;
	bool down;

	*end = a->up_ns ? a->up_ns : a->last_ns;
	if (is_path_place(a)) {
		if (!(p = (const struct path_ent *)fq_captab_find(&d->paths, &pk)))
			return true;
		down = p->state == ST_DOWN;
	} else {
		if (!(n = (const struct nic_ent *)fq_captab_find(&d->nics, &a->k.a)))
			return true;
		down = n->down;
	}
	return !down && a->up_ns && fq_rule_sat_sub(now, a->up_ns) >= d->c.incident_gap_ns;
}
