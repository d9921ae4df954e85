/*
 * detector_locate: the paths' routes and the fabric component that many
 * delayed paths share (detector_int.h).
 *
 * Network tomography over the probe mesh: each directed NIC pair's probes
 * take one route (controller/topology.h gives its components in order),
 * and each report window says whether that direction was delayed. A
 * component that the delayed paths cross and the healthy ones do not is
 * where the queue is. Each tick, over the paths with a route and a window
 * in the last RECENT_NS:
 *   - candidates are the switches and the switch-to-switch links, each
 *     link as crossed ("leaf1>spine3": a queue is one direction of one
 *     cable), on the routes of the delayed paths (a NIC and its cable are
 *     the NIC rules' to judge: slow_sender, slow_receiver, link_down;
 *     delayed paths that all share one end NIC are left to them);
 *   - each candidate's delayed paths through it (bad) and healthy ones
 *     through it (good), share = bad / (bad + good);
 *   - several crossed links delayed for at least LOCATE_MIN_SHARE of their
 *     paths: if they are one cable's two directions, the cable is blamed
 *     ("leaf1~spine3"); if they all hang off one switch, the switch
 *     ("spine3": a spine whose links are loaded in some directions only
 *     delays those); if together they explain at least 80 % of the delayed
 *     paths;
 *   - else, among the candidates with that share, the one with the most
 *     delayed paths, if it explains at least 80 % of them; candidates that
 *     explain as much as well are named as the ambiguity;
 *   - at least locate_min_paths delayed paths; confidence = coverage x
 *     share.
 * The blamed component opens (or extends) a fabric_delay anomaly; the
 * path_delay anomalies of delayed paths through it, and the lane outliers
 * of lanes on them, are its members, and it is attached to the steps
 * whose lanes are routed through it (detector_lroute.c: by a lane's own
 * route where its agent traced it, else by its NIC pair's probes').
 *
 * Loss is judged the same way, with three differences. A probe is a round
 * trip, so a lost one was lost on the path's route or on its reverse's:
 * the candidates are the switches and the cables ("leaf1~spine3", either
 * way) of both. A path is lossy when it lost a probe in a window of the
 * last RECENT_NS, or was DOWN. And a fault that drops packets changes the
 * routes (a link down, then re-converged around): a loss is judged on the
 * route the path had when the loss began. A lossy component opens a
 * fabric_loss anomaly; its path link_down anomalies are members, and one
 * fault seen both ways (a congested spine drops and delays) is one
 * incident: the later blame a member of the first, or, when the later is
 * a switch and the first a link of it, the other way round.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/detector_int.h"

#define MAX_ROUTE         32
#define MAX_CAND          256
#define RECENT_NS         LOCATE_RECENT_NS
#define LOCATE_MIN_SHARE  0.6
#define LOCATE_MIN_COVER  0.8
#define LOCATE_LINK_SHARE 0.9 /* a link bad for this share of its paths, explaining the rest: that link */
#define AMBIGUOUS_EPSILON 0.02

/* A copy of s with what copy_name would replace replaced (names go into
 * summaries and JSON evidence unescaped). */
static char *name_dup(const char *s)
{
	size_t n = strnlen(s, 127);
	char *d = malloc(n + 1);

	if (d)
		copy_name(d, n + 1, s);
	return d;
}

void det_routes_free(char **r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(r[i]);
	free(r);
}

void det_path_routes_free(struct path_ent *p)
{
	det_routes_free(p->route, p->nroute);
	det_routes_free(p->old_route, p->old_nroute);
	p->route = p->old_route = NULL;
	p->nroute = p->old_nroute = 0;
	for (unsigned k = 0; p->flows && k < FQ_DET_MAX_FLOWS; k++) {
		det_routes_free(p->flows[k].route, p->flows[k].nroute);
		det_routes_free(p->flows[k].old_route, p->flows[k].old_nroute);
	}
	free(p->flows);
	p->flows = NULL;
	p->nflows = 0;
}

struct path_flow *det_path_flows(struct path_ent *p)
{
	if (!p->flows)
		p->flows = calloc(FQ_DET_MAX_FLOWS, sizeof(*p->flows));
	return p->flows;
}

void fq_detector_routes_renamed(struct fq_detector *d)
{
	if (!d)
		return;
	FQ_CAPTAB_FOREACH(&d->paths, struct path_ent, p, nx)
	{
		det_routes_free(p->old_route, p->old_nroute);
		p->old_route = NULL;
		p->old_nroute = 0;
		for (unsigned k = 0; p->flows && k < FQ_DET_MAX_FLOWS; k++) {
			det_routes_free(p->flows[k].old_route, p->flows[k].old_nroute);
			p->flows[k].old_route = NULL;
			p->flows[k].old_nroute = 0;
		}
	}
}

/* A window's losses into a path's or a flow's loss fields. */
struct loss_fields {
	int64_t *seen_ns, *first_ns, *last_ns;
	uint32_t *lost, *sent;
	unsigned *clean;
};

static void loss_add(struct loss_fields f, uint32_t sent, uint32_t lost, int64_t start_ns, int64_t end_ns)
{
	*f.seen_ns = end_ns;
	if (!lost) {
		*f.clean += *f.clean < UINT32_MAX;
		return;
	}
	if (*f.clean < LOSS_CLEAN)
		return; /* never answered cleanly yet: coming up, not losing */
	if (!*f.last_ns || older_than(start_ns, *f.last_ns, RECENT_NS)) {
		*f.first_ns = start_ns;
		*f.lost = *f.sent = 0;
	}
	*f.last_ns = end_ns;
	*f.lost += lost;
	*f.sent += sent > lost ? sent : lost;
}

void det_path_loss(struct path_ent *p, uint32_t sent, uint32_t lost, int64_t start_ns, int64_t end_ns)
{
	loss_add((struct loss_fields){&p->seen_ns, &p->loss_first_ns, &p->loss_last_ns, &p->loss_lost,
				      &p->loss_sent, &p->clean},
		 sent, lost, start_ns, end_ns);
}

void det_flow_loss(struct path_flow *f, uint32_t sent, uint32_t lost, int64_t start_ns, int64_t end_ns)
{
	loss_add((struct loss_fields){&f->seen_ns, &f->loss_first_ns, &f->loss_last_ns, &f->loss_lost,
				      &f->loss_sent, &f->clean},
		 sent, lost, start_ns, end_ns);
}

int det_route_names(const char *const *comps, size_t n, char ***out, size_t *m)
{
	char **route = NULL;

	*out = NULL;
	*m = 0;
	if (n > MAX_ROUTE)
		n = MAX_ROUTE;
	if (n && !(route = calloc(n, sizeof(*route))))
		return -ENOMEM;
	for (; *m < n; (*m)++) {
		char dir[200];
		const char *c = comps[*m];
		size_t i = *m;

		if (!c)
			break;
		/* a switch link as the path crosses it: "A>B", a queue of A's */
		if (!strchr(c, '/') && strchr(c, '~') && i > 0 && i + 1 < n && comps[i - 1] && comps[i + 1] &&
		    (size_t)snprintf(dir, sizeof(dir), "%s>%s", comps[i - 1], comps[i + 1]) < sizeof(dir))
			c = dir;
		if (!(route[i] = name_dup(c)))
			break;
	}
	*out = route;
	return 0;
}

/* A route into *cur, the one before kept in *old (a loss that began on it
 * is judged on it), unless it is the same. */
static void route_set(char **route, size_t m, char ***cur, size_t *ncur, char ***old, size_t *nold,
		      int64_t *since, int64_t now_ns)
{
	if (m == *ncur) { /* the same route again (the topology is rebuilt whole): nothing changed */
		size_t i = 0;

		while (i < m && !strcmp(route[i], (*cur)[i]))
			i++;
		if (i == m) {
			det_routes_free(route, m);
			return;
		}
	}
	det_routes_free(*old, *nold);
	*old = *cur, *nold = *ncur;
	*cur = route;
	*ncur = m;
	*since = now_ns;
}

void fq_detector_route(struct fq_detector *d, const char *node, const char *nic, const char *remote_node,
		       const char *remote_nic, const char *const *comps, size_t n, int64_t now_ns)
{
	fq_detector_flow_route(d, node, nic, remote_node, remote_nic, 0, comps, n, now_ns);
}

void fq_detector_flow_route(struct fq_detector *d, const char *node, const char *nic, const char *remote_node,
			    const char *remote_nic, unsigned flow, const char *const *comps, size_t n,
			    int64_t now_ns)
{
	struct path_key k;
	struct path_ent *p;
	struct path_flow *f;
	char **route = NULL;
	size_t m = 0;

	if (!d)
		return;
	if (!has(node) || !has(nic) || !has(remote_node) || !has(remote_nic) || (n && !comps) ||
	    flow >= FQ_DET_MAX_FLOWS) {
		d->rejected_inputs++;
		return;
	}
	nic_key_set(&k.src, node, nic);
	nic_key_set(&k.dst, remote_node, remote_nic);
	if (!(p = det_path_get(d, &k.src, &k.dst, now_ns)))
		return;
	if (flow && !det_path_flows(p))
		return;
	if (det_route_names(comps, n, &route, &m) < 0)
		return;
	if (!flow) {
		route_set(route, m, &p->route, &p->nroute, &p->old_route, &p->old_nroute, &p->route_since_ns,
			  now_ns);
		return;
	}
	f = &p->flows[flow];
	route_set(route, m, &f->route, &f->nroute, &f->old_route, &f->old_nroute, &f->route_since_ns, now_ns);
}

/* Is r the link "A~B" crossed either way ("A>B" or "B>A")? */
static bool crosses_link(const char *r, const char *comp, const char *tilde)
{
	size_t la = (size_t)(tilde - comp), lb = strlen(tilde + 1), lr = strlen(r);

	if (lr != la + lb + 1)
		return false;
	return (!memcmp(r, comp, la) && r[la] == '>' && !memcmp(r + la + 1, tilde + 1, lb)) ||
	       (!memcmp(r, tilde + 1, lb) && r[lb] == '>' && !memcmp(r + lb + 1, comp, la));
}

bool det_in_route(char *const *route, size_t n, const char *comp)
{
	const char *tilde = strchr(comp, '/') ? NULL : strchr(comp, '~');

	for (size_t i = 0; i < n; i++)
		if (strcmp(route[i], comp) == 0 || (tilde && crosses_link(route[i], comp, tilde)))
			return true;
	return false;
}

bool det_route_crosses(const struct path_ent *p, const char *comp)
{
	return det_in_route(p->route, p->nroute, comp);
}

/* Does p's route at time t (the one before, if it changed since) cross comp? */
static bool route_at_crosses(const struct path_ent *p, int64_t t, const char *comp)
{
	if (p->old_nroute && t < p->route_since_ns)
		return det_in_route(p->old_route, p->old_nroute, comp);
	return det_in_route(p->route, p->nroute, comp);
}

const struct path_ent *det_reverse_of(struct fq_detector *d, const struct path_ent *p)
{
	struct path_key rk = {p->k.dst, p->k.src};

	return (const struct path_ent *)fq_captab_find(&d->paths, &rk);
}

bool det_loss_crosses(struct fq_detector *d, const struct path_ent *p, const char *comp)
{
	const struct path_ent *r;

	return route_at_crosses(p, p->loss_first_ns, comp) ||
	       ((r = det_reverse_of(d, p)) && route_at_crosses(r, p->loss_first_ns, comp));
}

/* Does p's route, or where it is probed over flows one of its flows'
 * routes, cross comp? */
static bool any_route_crosses(const struct path_ent *p, const char *comp)
{
	if (det_route_crosses(p, comp))
		return true;
	for (unsigned k = 1; p->flows && k < p->nflows; k++)
		if (det_in_route(p->flows[k].route, p->flows[k].nroute, comp))
			return true;
	return false;
}

struct anom_ent *det_fabric_incident(struct fq_detector *d, const struct path_ent *p)
{
	if (!p->elevated)
		return NULL; /* its probes saw no delay: not the component's doing */
	FQ_CAPTAB_FOREACH(&d->anoms, struct anom_ent, a, nx)
	{
		if (det_is_fabric(a->k.kind) && !a->incident && any_route_crosses(p, a->k.a.node))
			return a;
	}
	return NULL;
}

const char *det_host_link(struct fq_detector *d, const struct nic_key *nic)
{
	FQ_CAPTAB_FOREACH(&d->paths, struct path_ent, p, nx)
	{
		if (p->nroute >= 2 && nic_eq(&p->k.src, nic) && strchr(p->route[1], '~'))
			return p->route[1];
		if (p->nroute >= 2 && nic_eq(&p->k.dst, nic) && strchr(p->route[p->nroute - 2], '~'))
			return p->route[p->nroute - 2];
	}
	return NULL;
}

const char *det_nic_component(struct fq_detector *d, const struct nic_key *nic, char *buf, size_t len)
{
	const struct nic_ent *n = (const struct nic_ent *)fq_captab_find(&d->nics, nic);

	if (n && (!strcmp(n->said, "admin-down") || !strcmp(n->said, "absent"))) {
		snprintf(buf, len, "%s/%s", nic->node, nic->nic);
		return buf;
	}
	return det_host_link(d, nic);
}

const char *det_nic_said(struct fq_detector *d, const struct nic_key *nic)
{
	const struct nic_ent *n = (const struct nic_ent *)fq_captab_find(&d->nics, nic);
	const char *s = n ? n->said : "";

	if (!strcmp(s, "admin-down"))
		return "; the NIC is administratively down on its host";
	if (!strcmp(s, "absent"))
		return "; the NIC is gone from its host (driver)";
	if (!strcmp(s, "no-carrier"))
		return "; the NIC sees no link: its cable, the switch port or the NIC";
	if (!strcmp(s, "carrier"))
		return "; the NIC's link is up: the fault is past its switch port";
	return "";
}

struct cand {
	char name[200]; /* a switch, a crossed link "A>B" (delay) or a cable "A~B" (loss) */
	unsigned bad, good;
	int64_t start_ns; /* the earliest streak among its bad paths */
};

/* One symptom's view of the paths: delay (K_FABRIC_DELAY: a path's own
 * route, each link as crossed) or loss (K_FABRIC_LOSS: its round trip,
 * links as cables). */
struct sym {
	struct fq_detector *d;
	enum kind kind;
	int64_t now;
};

static bool is_loss(const struct sym *y)
{
	return y->kind == K_FABRIC_LOSS;
}

static double share(const struct cand *c)
{
	return c->bad + c->good ? (double)c->bad / (double)(c->bad + c->good) : 0;
}

/* Flow k's route of p (and the one before, and since when) into u. */
static void flow_route(const struct path_ent *p, unsigned k, struct det_unit *u)
{
	const struct path_flow *f = k && p->flows ? &p->flows[k] : NULL;

	if (!k) {
		u->route = p->route, u->nroute = p->nroute;
		u->old_route = p->old_route, u->old_nroute = p->old_nroute;
		u->route_since_ns = p->route_since_ns;
	} else if (f) {
		u->route = f->route, u->nroute = f->nroute;
		u->old_route = f->old_route, u->old_nroute = f->old_nroute;
		u->route_since_ns = f->route_since_ns;
	}
}

void det_unit_of(const struct path_ent *p, unsigned k, struct det_unit *u)
{
	const struct path_flow *f;

	*u = (struct det_unit){.p = p, .flow = k};
	flow_route(p, k, u);
	if (!p->flows || !p->nflows) {
		u->seen_ns = p->seen_ns, u->loss_first_ns = p->loss_first_ns,
		u->loss_last_ns = p->loss_last_ns;
		u->loss_lost = p->loss_lost, u->loss_sent = p->loss_sent;
		u->tail_ns = p->tail_ns, u->last_end_ns = p->last_end_ns, u->streak_start = p->streak_start;
		u->slow = p->slow;
		return;
	}
	f = &p->flows[k];
	u->seen_ns = f->seen_ns, u->loss_first_ns = f->loss_first_ns, u->loss_last_ns = f->loss_last_ns;
	u->loss_lost = f->loss_lost, u->loss_sent = f->loss_sent;
	u->tail_ns = f->tail_ns, u->last_end_ns = f->last_end_ns, u->streak_start = f->streak_start;
	u->slow = f->slow;
}

/* Does a unit's route at time t (the one before, if it changed since) cross comp? */
static bool unit_route_at_crosses(const struct det_unit *u, int64_t t, const char *comp)
{
	if (u->old_nroute && t < u->route_since_ns)
		return det_in_route(u->old_route, u->old_nroute, comp);
	return det_in_route(u->route, u->nroute, comp);
}

/* The same flow of the reverse path (its probes' way back: the far end
 * answers from the port the flow came to), NULL route where none. */
static bool reverse_unit(struct fq_detector *d, const struct det_unit *u, struct det_unit *r)
{
	const struct path_ent *rp = det_reverse_of(d, u->p);

	if (!rp)
		return false;
	*r = (struct det_unit){.p = rp, .flow = u->flow};
	flow_route(rp, u->flow, r);
	return true;
}

static bool usable(const struct sym *y, const struct det_unit *u)
{
	if (is_loss(y))
		return (u->nroute || u->old_nroute) && u->seen_ns > 0 &&
		       !older_than(y->now, u->seen_ns, RECENT_NS);
	return u->nroute && u->tail_ns > 0 && !older_than(y->now, u->last_end_ns, RECENT_NS);
}

static bool bad(const struct sym *y, const struct det_unit *u)
{
	if (is_loss(y))
		return u->loss_last_ns > 0 && !older_than(y->now, u->loss_last_ns, RECENT_NS);
	return u->slow;
}

static int64_t bad_since(const struct sym *y, const struct det_unit *u)
{
	return is_loss(y) ? u->loss_first_ns : u->streak_start;
}

static bool crosses(const struct sym *y, const struct det_unit *u, const char *comp)
{
	struct det_unit r;

	if (!is_loss(y))
		return det_in_route(u->route, u->nroute, comp);
	/* a round trip: lost on its route or on its reverse's, as they were
	 * when the loss began */
	return unit_route_at_crosses(u, u->loss_first_ns, comp) ||
	       (reverse_unit(y->d, u, &r) && unit_route_at_crosses(&r, u->loss_first_ns, comp));
}

/* Has path p a unit bad and through comp (its anomalies are the blame's
 * members)? */
static bool path_bad_through(const struct sym *y, const struct path_ent *p, const char *comp)
{
	for (unsigned k = 0, n = det_n_units(p); k < n; k++) {
		struct det_unit u;

		det_unit_of(p, k, &u);
		if (usable(y, &u) && bad(y, &u) && crosses(y, &u, comp))
			return true;
	}
	return false;
}

/* A switch ("spine3") or a switch-to-switch link as crossed ("leaf1>spine3")
 * or as a cable ("leaf1~spine3"): not a NIC ("n1/rail0") nor a host link
 * ("n1/rail0~leaf1"). */
static bool fabric_component(const char *c)
{
	return !strchr(c, '/');
}

/* The ends of a link "A>B" or "A~B" into a, b (false: not a link, or too long). */
static bool link_ends(const char *c, char *a, char *b, size_t len)
{
	const char *sep = strchr(c, '>') ? strchr(c, '>') : strchr(c, '~');

	if (!sep || (size_t)(sep - c) >= len || strlen(sep + 1) >= len)
		return false;
	snprintf(a, len, "%.*s", (int)(sep - c), c);
	snprintf(b, len, "%s", sep + 1);
	return true;
}

/* Adds the fabric components of a route to the candidates (loss: each link
 * as its cable, "A~B" with A < B). */
static void add_route(const struct sym *y, char *const *route, size_t n, struct cand *c, size_t *nc)
{
	for (size_t i = 0; i < n; i++) {
		char name[sizeof(c->name)], a[96], b[96];
		size_t j = 0;

		if (!fabric_component(route[i]))
			continue;
		if (is_loss(y) && strchr(route[i], '>') && link_ends(route[i], a, b, sizeof(a)))
			snprintf(name, sizeof(name), "%s~%s", strcmp(a, b) < 0 ? a : b,
				 strcmp(a, b) < 0 ? b : a);
		else
			snprintf(name, sizeof(name), "%s", route[i]);
		while (j < *nc && strcmp(c[j].name, name))
			j++;
		if (j == *nc && *nc < MAX_CAND) {
			c[*nc] = (struct cand){.start_ns = INT64_MAX};
			memcpy(c[(*nc)++].name, name, sizeof(name));
		}
	}
}

/* u's route at time t into the candidates. */
static void add_route_at(const struct sym *y, const struct det_unit *u, int64_t t, struct cand *c, size_t *nc)
{
	if (u->old_nroute && t < u->route_since_ns)
		add_route(y, u->old_route, u->old_nroute, c, nc);
	else
		add_route(y, u->route, u->nroute, c, nc);
}

static bool touches(const struct path_ent *p, const struct nic_key *n)
{
	return nic_eq(&p->k.src, n) || nic_eq(&p->k.dst, n);
}

/* The candidates (fabric components on bad paths' routes) into c; how many
 * bad paths there are. *one_end: they all share one end NIC (delay: as
 * their sender, or as their receiver; loss: either way), the NIC rules'. */
static unsigned gather(const struct sym *y, struct cand *c, size_t *nc, bool *one_end)
{
	const struct path_ent *first = NULL;
	bool same_src = true, same_dst = true;
	unsigned nbad = 0;
	struct det_unit r;

	*nc = 0;
	DET_FOR_UNITS(y->d, u)
	{
		const struct path_ent *p = u->p;

		if (!usable(y, u) || !bad(y, u))
			continue;
		nbad++;
		if (!first)
			first = p;
		if (is_loss(y)) {
			same_src = same_src && touches(p, &first->k.src);
			same_dst = same_dst && touches(p, &first->k.dst);
			add_route_at(y, u, u->loss_first_ns, c, nc);
			if (reverse_unit(y->d, u, &r))
				add_route_at(y, &r, u->loss_first_ns, c, nc);
		} else {
			same_src = same_src && nic_eq(&p->k.src, &first->k.src);
			same_dst = same_dst && nic_eq(&p->k.dst, &first->k.dst);
			add_route(y, u->route, u->nroute, c, nc);
		}
	}
	*one_end = nbad > 1 && (same_src || same_dst);
	return nbad;
}

static void count(const struct sym *y, struct cand *c, size_t nc)
{
	DET_FOR_UNITS(y->d, u)
	{
		bool b;
		int64_t since;

		if (!usable(y, u))
			continue;
		b = bad(y, u), since = bad_since(y, u);
		for (size_t j = 0; j < nc; j++) {
			if (!crosses(y, u, c[j].name))
				continue;
			if (b) {
				c[j].bad++;
				if (since && since < c[j].start_ns)
					c[j].start_ns = since;
			} else {
				c[j].good++;
			}
		}
	}
}

/* The switches a component names: a switch itself, a link's two ends. */
static size_t ends_of(const char *c, char e[2][96])
{
	if (!link_ends(c, e[0], e[1], 96)) {
		snprintf(e[0], 96, "%s", c);
		return 1;
	}
	return 2;
}

/* Do two blamed components share a switch (one fault seen as the switch at
 * one moment, as one of its links at another)? */
static bool related(const char *x, const char *y)
{
	char a[2][96], b[2][96];
	size_t na = ends_of(x, a), nb = ends_of(y, b);

	for (size_t i = 0; i < na; i++)
		for (size_t j = 0; j < nb; j++)
			if (!strcmp(a[i], b[j]))
				return true;
	return false;
}

static const struct anom_ent *by_handle(struct fq_detector *d, uint64_t h)
{
	FQ_CAPTAB_FOREACH(&d->anoms, struct anom_ent, a, nx)
	{
		if (a->handle == h)
			return a;
	}
	return NULL;
}

/* The open blame of this symptom a new one extends (the same switch, or a
 * link of it), not a member of another of the same symptom (a narrower one
 * merged), or NULL; and *other: an open incident of the other symptom, on
 * the same switch or a link of it, that a new one joins (one fault,
 * delaying and dropping), or NULL. */
static struct anom_ent *open_related(const struct sym *y, const char *place, const struct anom_ent **other)
{
	struct anom_ent *same = NULL;

	*other = NULL;
	FQ_CAPTAB_FOREACH(&y->d->anoms, struct anom_ent, o, nx)
	{
		const struct anom_ent *inc;

		if (!det_is_fabric(o->k.kind) || !related(o->k.a.node, place))
			continue;
		if (o->k.kind == y->kind && !same &&
		    (!o->incident || ((inc = by_handle(y->d, o->incident)) && inc->k.kind != y->kind)))
			same = o;
		else if (o->k.kind != y->kind && !o->incident && !*other)
			*other = o;
	}
	return same;
}

/* Do hosts hang off switch s (a leaf): is it next to a host link on a route? */
static bool serves_hosts(struct fq_detector *d, const char *s)
{
	FQ_CAPTAB_FOREACH(&d->paths, struct path_ent, p, nx)
	{
		for (size_t i = 0; i < p->nroute; i++)
			if (!strcmp(p->route[i], s) &&
			    ((i > 0 && !fabric_component(p->route[i - 1])) ||
			     (i + 1 < p->nroute && !fabric_component(p->route[i + 1]))))
				return true;
	}
	return false;
}

/* Opens or extends the component's anomaly; makes the bad paths' open
 * anomalies through it its members (delay: path_delay and lane_outlier;
 * loss: a path's link_down). An incident it opens gets a fabric hint
 * (what to check there), never a drain: one per incident, so none for a
 * blame that extends one or joins the other symptom's. */
static void blame(const struct sym *y, const struct cand *b, unsigned total, const char *ambiguous)
{
	struct fq_detector *d = y->d;
	char summary[512], evidence[900], paths[400] = "", e[2][96];
	double cover = (double)b->bad / total, conf = cover * share(b);
	struct nic_key place;
	struct anom_ent *a, *same;
	const struct anom_ent *other;
	size_t n = 0, listed = 0;
	uint64_t lost = 0, sent = 0;
	unsigned down = 0;
	bool opened;

	DET_FOR_UNITS(d, u)
	{
		const struct path_ent *p = u->p;

		if (!usable(y, u) || !bad(y, u) || !crosses(y, u, b->name))
			continue;
		/* a path DOWN is counted once, by its first flow through it */
		lost += u->loss_lost, sent += u->loss_sent, down += p->state == ST_DOWN && !u->flow;
		if (listed < 6 && n + 140 < sizeof(paths)) {
			char fl[16] = "";

			if (det_n_units(p) > 1)
				snprintf(fl, sizeof(fl), "#%u", u->flow);
			n += (size_t)snprintf(paths + n, sizeof(paths) - n, "%s\"%s/%s->%s/%s%s\"",
					      listed ? "," : "", p->k.src.node, p->k.src.nic, p->k.dst.node,
					      p->k.dst.nic, fl);
			listed++;
		}
	}
	if (is_loss(y))
		snprintf(summary, sizeof(summary),
			 "%s dropping packets: %u paths through it lost probes (%" PRIu64 " of %" PRIu64
			 " sent; %u DOWN), %u through it did not, %u lost elsewhere (confidence %.2f%s%s)",
			 b->name, b->bad, lost, sent, down, b->good, total - b->bad, conf,
			 *ambiguous ? "; ambiguous with " : "", ambiguous);
	else
		snprintf(summary, sizeof(summary),
			 "%s congested: %u delayed paths cross it, %u through it are not delayed, %u delayed "
			 "elsewhere (confidence %.2f%s%s)",
			 b->name, b->bad, b->good, total - b->bad, conf,
			 *ambiguous ? "; ambiguous with " : "", ambiguous);
	snprintf(evidence, sizeof(evidence),
		 "{\"component\":\"%s\",\"symptom\":\"%s\",\"confidence\":%.3f,\"bad_through\":%u,"
		 "\"normal_through\":%u,\"bad_elsewhere\":%u,\"coverage\":%.3f,\"share\":%.3f,"
		 "\"ambiguous_with\":\"%s\",\"probes_lost\":%" PRIu64 ",\"probes_sent\":%" PRIu64
		 ",\"paths_down\":%u,\"paths\":[%s]}",
		 b->name, is_loss(y) ? "loss" : "delay", conf, b->bad, b->good, total - b->bad, cover,
		 share(b), ambiguous, is_loss(y) ? lost : 0, is_loss(y) ? sent : 0, is_loss(y) ? down : 0,
		 paths);
	memset(&place, 0, sizeof(place));
	copy_name(place.node, sizeof(place.node), b->name);
	/* one fault, one incident: an open blame of the same switch, or of a
	 * link of it, is extended rather than a second opened; a link blamed
	 * first (few paths bad yet) becomes part of its switch's incident once
	 * the switch is blamed; the other symptom's open blame of it is the
	 * incident of this one */
	if ((same = open_related(y, place.node, &other)) &&
	    !(ends_of(place.node, e) == 1 && ends_of(same->k.a.node, e) == 2))
		place = same->k.a;
	if (other && ends_of(place.node, e) == 1 && ends_of(other->k.a.node, e) == 2)
		other = NULL; /* a link of this switch: taken in below, not joined */
	a = det_anom_member(d, y->kind, SEV_WARNING, &place, NULL,
			    b->start_ns != INT64_MAX ? b->start_ns : y->now, y->now, summary, evidence,
			    &opened, other);
	if (!a)
		return;
	if (opened && !a->incident)
		det_hint_fabric(d, a->handle, a->k.a.node, is_loss(y),
				!det_is_switch_link(a->k.a.node) && serves_hosts(d, a->k.a.node), y->now);
	/* a switch takes in the open blames of its links, either symptom (a
	 * loaded spine drops and queues on its busiest link first), with their
	 * members */
	if (!a->incident && ends_of(a->k.a.node, e) == 1)
		FQ_CAPTAB_FOREACH(&d->anoms, struct anom_ent, o, nx0)
		{
			if (o == a || o->incident || !det_is_fabric(o->k.kind) ||
			    ends_of(o->k.a.node, e) != 2 || !related(o->k.a.node, a->k.a.node))
				continue;
			FQ_CAPTAB_FOREACH(&d->anoms, struct anom_ent, m, nx1)
			{
				if (m->incident == o->handle || m == o) {
					m->incident = a->handle;
					det_push(d, &(struct fq_det_action){.kind = FQ_DET_MEMBER,
									    .handle = m->handle,
									    .incident = a->handle});
				}
			}
		}
	FQ_CAPTAB_FOREACH(&d->anoms, struct anom_ent, m, nx2)
	{
		struct path_key pk = {m->k.a, m->k.b};
		const struct path_ent *p;
		bool member = is_loss(y) ? m->k.kind == K_LINK_DOWN && !nic_empty(&m->k.b)
					 : m->k.kind == K_PATH_DELAY || m->k.kind == K_LANE_OUTLIER;

		if (!member || m->incident || m == a ||
		    !(p = (const struct path_ent *)fq_captab_find(&d->paths, &pk)) ||
		    !path_bad_through(y, p, b->name))
			continue;
		m->incident = a->handle;
		det_push(d, &(struct fq_det_action){
				.kind = FQ_DET_MEMBER, .handle = m->handle, .incident = a->handle});
	}
}

/* Several links bad (L, n of them): one cable both ways -> that link
 * ("A~B"); links all off one switch -> that switch. Into *b (its name
 * there). False: they share no one component. */
static bool common(struct cand *c, size_t nc, const size_t *l, size_t n, struct cand *b)
{
	char a0[96], b0[96], x[96], y[96];
	bool pair = true, on_a = true, on_b = true;

	if (!link_ends(c[l[0]].name, a0, b0, sizeof(a0)))
		return false;
	for (size_t i = 1; i < n; i++) {
		if (!link_ends(c[l[i]].name, x, y, sizeof(x)))
			return false;
		pair = pair && ((!strcmp(x, a0) && !strcmp(y, b0)) || (!strcmp(x, b0) && !strcmp(y, a0)));
		on_a = on_a && (!strcmp(x, a0) || !strcmp(y, a0));
		on_b = on_b && (!strcmp(x, b0) || !strcmp(y, b0));
	}
	*b = (struct cand){.start_ns = INT64_MAX};
	if (pair)
		snprintf(b->name, sizeof(b->name), "%s~%s", strcmp(a0, b0) < 0 ? a0 : b0,
			 strcmp(a0, b0) < 0 ? b0 : a0);
	else if (on_a != on_b)
		snprintf(b->name, sizeof(b->name), "%s", on_a ? a0 : b0);
	else
		return false;
	for (size_t i = 0; i < n; i++) {
		b->bad += c[l[i]].bad;
		b->good += c[l[i]].good;
		if (c[l[i]].start_ns < b->start_ns)
			b->start_ns = c[l[i]].start_ns;
	}
	if (!pair) /* the switch's own figures: every path through it */
		for (size_t j = 0; j < nc; j++)
			if (!strcmp(c[j].name, b->name))
				b->good = c[j].good, b->bad = c[j].bad;
	return true;
}

/* Bad paths through any of the links l (each counted once). */
static unsigned through_any(const struct sym *y, const struct cand *c, const size_t *l, size_t n)
{
	unsigned nbad = 0;

	DET_FOR_UNITS(y->d, u)
	{
		bool hit = false;

		for (size_t i = 0; i < n && !hit && usable(y, u) && bad(y, u); i++)
			hit = crosses(y, u, c[l[i]].name);
		nbad += hit;
	}
	return nbad;
}

static void locate(const struct sym *y, struct cand *c)
{
	struct cand *best = NULL, merged;
	char ambiguous[256] = "";
	size_t nc, n = 0, links[MAX_CAND], nl = 0;
	bool one_end;
	unsigned total;

	total = gather(y, c, &nc, &one_end);
	if (total < y->d->c.locate_min_paths || one_end || !nc)
		return;
	count(y, c, nc);
	/* A queue is one direction of one link, a drop one cable: the links bad
	 * for most paths through them. A lossy cable that explains the bad
	 * paths is the answer (the narrowest); else several of them: the cable
	 * (both ways) or the switch they all hang off, if together they
	 * explain them. */
	for (size_t j = 0; j < nc; j++)
		if (det_is_switch_link(c[j].name) && c[j].bad && share(&c[j]) >= LOCATE_MIN_SHARE) {
			links[nl++] = j;
			if ((double)c[j].bad >= LOCATE_MIN_COVER * total &&
			    (!best || c[j].bad > best->bad ||
			     (c[j].bad == best->bad && share(&c[j]) > share(best))))
				best = &c[j];
		}
	/* Loss: one cable, clearly (bad for nearly all its paths), or one whose
	 * bad paths are all the other bad cables' too (every lossy round trip
	 * crosses a cable at each end of the spine, and routes move): not
	 * merged. (A queue is one direction of a link: a link delayed alone
	 * does not make the links before it look delayed for most of their
	 * paths, so delayed links are merged first.) */
	if (is_loss(y) && best &&
	    (share(best) >= LOCATE_LINK_SHARE || through_any(y, c, links, nl) <= best->bad)) {
		nl = 0;
		/* ... unless a switch at its end is crossed by exactly the same
		 * paths (two leaves: every path over a spine crosses both its
		 * cables): then the switch, its links the ambiguity */
		for (size_t j = 0; j < nc; j++)
			if (!det_is_switch_link(c[j].name) && c[j].bad == best->bad &&
			    c[j].good == best->good && related(c[j].name, best->name)) {
				best = &c[j];
				break;
			}
	} else {
		best = NULL;
	}
	if (nl > 1 && common(c, nc, links, nl, &merged)) {
		unsigned through = through_any(y, c, links, nl); /* one scan of the paths */

		if ((double)through >= LOCATE_MIN_COVER * total) {
			if (through > merged.bad)
				merged.bad = through;
			/* a link that alone crosses every bad path explains them as
			 * well (two leaves: every path over a spine crosses both
			 * its cables) */
			for (size_t i = 0; i < nl; i++)
				if (c[links[i]].bad >= through && strcmp(c[links[i]].name, merged.name) &&
				    n + 70 < sizeof(ambiguous))
					n += (size_t)snprintf(ambiguous + n, sizeof(ambiguous) - n, "%s%s",
							      n ? ", " : "", c[links[i]].name);
			blame(y, &merged, total, ambiguous);
			return;
		}
	}
	if (!best)
		for (size_t j = 0; j < nc; j++)
			if (share(&c[j]) >= LOCATE_MIN_SHARE &&
			    (!best || c[j].bad > best->bad ||
			     (c[j].bad == best->bad && share(&c[j]) > share(best))))
				best = &c[j];
	if (!best || (double)best->bad < LOCATE_MIN_COVER * total)
		return; /* no one component explains them: several faults, or none in the fabric */
	for (size_t j = 0; j < nc; j++)
		if (&c[j] != best && c[j].bad == best->bad &&
		    share(best) - share(&c[j]) < AMBIGUOUS_EPSILON && n + 70 < sizeof(ambiguous))
			n += (size_t)snprintf(ambiguous + n, sizeof(ambiguous) - n, "%s%s", n ? ", " : "",
					      c[j].name);
	blame(y, best, total, ambiguous);
}

void det_locate(struct fq_detector *d, int64_t now)
{
	struct cand *c = d->locate_scratch;

	if (!c && !(c = d->locate_scratch = malloc(MAX_CAND * sizeof(*c))))
		return;
	locate(&(struct sym){d, K_FABRIC_DELAY, now}, c);
	locate(&(struct sym){d, K_FABRIC_LOSS, now}, c);
}
