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
 * whose lanes' NIC pairs are routed through it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/detector_int.h"

#define MAX_ROUTE         32
#define MAX_CAND          256
#define RECENT_NS         (5 * 1000000000LL)
#define LOCATE_MIN_SHARE  0.6
#define LOCATE_MIN_COVER  0.8
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

void fq_detector_route(struct fq_detector *d, const char *node, const char *nic, const char *remote_node,
		       const char *remote_nic, const char *const *comps, size_t n, int64_t now_ns)
{
	struct path_key k;
	struct path_ent *p;
	char **route = NULL;
	size_t m = 0;

	if (!d)
		return;
	if (!has(node) || !has(nic) || !has(remote_node) || !has(remote_nic) || (n && !comps)) {
		d->rejected_inputs++;
		return;
	}
	nic_key_set(&k.src, node, nic);
	nic_key_set(&k.dst, remote_node, remote_nic);
	if (!(p = (struct path_ent *)fq_captab_get(&d->paths, &k, now_ns, true, NULL)))
		return;
	if (n > MAX_ROUTE)
		n = MAX_ROUTE;
	if (n && !(route = calloc(n, sizeof(*route))))
		return;
	for (; m < n; m++) {
		char dir[200];
		const char *c = comps[m];

		if (!c)
			break;
		/* a switch link as the path crosses it: "A>B", a queue of A's */
		if (!strchr(c, '/') && strchr(c, '~') && m > 0 && m + 1 < n && comps[m - 1] && comps[m + 1] &&
		    (size_t)snprintf(dir, sizeof(dir), "%s>%s", comps[m - 1], comps[m + 1]) < sizeof(dir))
			c = dir;
		if (!(route[m] = name_dup(c)))
			break;
	}
	for (size_t i = 0; i < p->nroute; i++)
		free(p->route[i]);
	free(p->route);
	p->route = route;
	p->nroute = m;
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

bool det_route_crosses(const struct path_ent *p, const char *comp)
{
	const char *tilde = strchr(comp, '/') ? NULL : strchr(comp, '~');

	for (size_t i = 0; i < p->nroute; i++)
		if (strcmp(p->route[i], comp) == 0 || (tilde && crosses_link(p->route[i], comp, tilde)))
			return true;
	return false;
}

struct anom_ent *det_fabric_incident(struct fq_detector *d, const struct path_ent *p)
{
	if (!p->elevated)
		return NULL; /* its probes saw no delay: not the component's doing */
	FQ_CAPTAB_FOREACH(&d->anoms, struct anom_ent, a, nx)
	{
		if (a->k.kind == K_FABRIC_DELAY && !a->incident && det_route_crosses(p, a->k.a.node))
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

/* A switch ("spine3") or a switch-to-switch link as crossed ("leaf1>spine3"):
 * not a NIC ("n1/rail0") nor a host link ("n1/rail0~leaf1"). */
static bool fabric_component(const char *c)
{
	return !strchr(c, '/');
}

static bool is_link(const char *c)
{
	return strchr(c, '>') != NULL;
}

/* The ends of a crossed link "A>B" into a, b (false: too long). */
static bool link_ends(const char *c, char *a, char *b, size_t len)
{
	const char *gt = strchr(c, '>');

	if (!gt || (size_t)(gt - c) >= len || strlen(gt + 1) >= len)
		return false;
	snprintf(a, len, "%.*s", (int)(gt - c), c);
	snprintf(b, len, "%s", gt + 1);
	return true;
}

struct cand {
	const char *name;
	unsigned bad, good;
	int64_t start_ns; /* the earliest delay streak among its bad paths */
};

static double share(const struct cand *c)
{
	return c->bad + c->good ? (double)c->bad / (double)(c->bad + c->good) : 0;
}

static bool usable(const struct path_ent *p, int64_t now)
{
	return p->nroute && p->tail_ns > 0 && !older_than(now, p->last_end_ns, RECENT_NS);
}

/* The candidates (fabric components on delayed paths' routes) into c;
 * how many delayed paths there are. *one_end: they all share one end NIC. */
static unsigned gather(struct fq_detector *d, int64_t now, struct cand *c, size_t *nc, bool *one_end)
{
	const struct path_ent *first = NULL;
	bool same_src = true, same_dst = true;
	unsigned bad = 0;

	*nc = 0;
	FQ_CAPTAB_FOREACH(&d->paths, struct path_ent, p, nx)
	{
		if (!usable(p, now) || !p->elevated)
			continue;
		bad++;
		if (!first)
			first = p;
		same_src = same_src && nic_eq(&p->k.src, &first->k.src);
		same_dst = same_dst && nic_eq(&p->k.dst, &first->k.dst);
		for (size_t i = 0; i < p->nroute; i++) {
			size_t j = 0;

			if (!fabric_component(p->route[i]))
				continue;
			while (j < *nc && strcmp(c[j].name, p->route[i]))
				j++;
			if (j == *nc && *nc < MAX_CAND)
				c[(*nc)++] = (struct cand){.name = p->route[i], .start_ns = INT64_MAX};
		}
	}
	*one_end = bad > 1 && (same_src || same_dst);
	return bad;
}

static void count(struct fq_detector *d, int64_t now, struct cand *c, size_t nc)
{
	FQ_CAPTAB_FOREACH(&d->paths, struct path_ent, p, nx)
	{
		if (!usable(p, now))
			continue;
		for (size_t j = 0; j < nc; j++) {
			if (!det_route_crosses(p, c[j].name))
				continue;
			if (p->elevated) {
				c[j].bad++;
				if (p->streak_start && p->streak_start < c[j].start_ns)
					c[j].start_ns = p->streak_start;
			} else {
				c[j].good++;
			}
		}
	}
}

/* The switches a component names: a switch itself, a link's two ends. */
static size_t ends_of(const char *c, char e[2][96])
{
	const char *sep = strchr(c, '>') ? strchr(c, '>') : strchr(c, '~');

	if (!sep) {
		snprintf(e[0], 96, "%s", c);
		return 1;
	}
	snprintf(e[0], 96, "%.*s", (int)(sep - c), c);
	snprintf(e[1], 96, "%s", sep + 1);
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

/* Opens or extends the component's anomaly; makes the delayed paths' open
 * path_delay anomalies through it its members. */
static void blame(struct fq_detector *d, const struct cand *b, unsigned total, const char *ambiguous,
		  int64_t now)
{
	char summary[512], evidence[768], paths[400] = "";
	double cover = (double)b->bad / total, conf = cover * share(b);
	struct nic_key place;
	struct anom_ent *a, *narrower = NULL;
	size_t n = 0, listed = 0;

	FQ_CAPTAB_FOREACH(&d->paths, struct path_ent, p, nx)
	{
		if (listed < 6 && usable(p, now) && p->elevated && det_route_crosses(p, b->name) &&
		    n + 140 < sizeof(paths)) {
			n += (size_t)snprintf(paths + n, sizeof(paths) - n, "%s\"%s/%s->%s/%s\"",
					      listed ? "," : "", p->k.src.node, p->k.src.nic, p->k.dst.node,
					      p->k.dst.nic);
			listed++;
		}
	}
	snprintf(summary, sizeof(summary),
		 "%s congested: %u delayed paths cross it, %u through it are not delayed, %u delayed "
		 "elsewhere (confidence %.2f%s%s)",
		 b->name, b->bad, b->good, total - b->bad, conf, *ambiguous ? "; ambiguous with " : "",
		 ambiguous);
	snprintf(evidence, sizeof(evidence),
		 "{\"component\":\"%s\",\"confidence\":%.3f,\"delayed_through\":%u,\"normal_through\":%u,"
		 "\"delayed_elsewhere\":%u,\"coverage\":%.3f,\"share\":%.3f,\"ambiguous_with\":\"%s\","
		 "\"delayed_paths\":[%s]}",
		 b->name, conf, b->bad, b->good, total - b->bad, cover, share(b), ambiguous, paths);
	memset(&place, 0, sizeof(place));
	copy_name(place.node, sizeof(place.node), b->name);
	/* one fault, one incident: an open blame of the same switch, or of a
	 * link of it, is extended rather than a second opened; a link blamed
	 * first (few paths delayed yet) becomes part of its switch's incident
	 * once the switch is blamed */
	FQ_CAPTAB_FOREACH(&d->anoms, struct anom_ent, o, nx0)
	{
		char e[2][96];

		if (o->k.kind == K_FABRIC_DELAY && !o->incident && related(o->k.a.node, place.node)) {
			if (ends_of(place.node, e) == 1 && ends_of(o->k.a.node, e) == 2)
				narrower = o;
			else
				place = o->k.a;
			break;
		}
	}
	a = det_anom_evidence(d, K_FABRIC_DELAY, SEV_WARNING, &place, NULL,
			      b->start_ns != INT64_MAX ? b->start_ns : now, now, summary, evidence, NULL);
	if (!a)
		return;
	if (narrower && narrower != a) {
		FQ_CAPTAB_FOREACH(&d->anoms, struct anom_ent, m, nx1)
		{
			if (m->incident == narrower->handle || m == narrower) {
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

		if ((m->k.kind != K_PATH_DELAY && m->k.kind != K_LANE_OUTLIER) || m->incident ||
		    !(p = (const struct path_ent *)fq_captab_find(&d->paths, &pk)) || !p->elevated ||
		    !det_route_crosses(p, b->name))
			continue;
		m->incident = a->handle;
		det_push(d, &(struct fq_det_action){
				.kind = FQ_DET_MEMBER, .handle = m->handle, .incident = a->handle});
	}
}

/* Several crossed links delayed (L, n of them): one cable both ways ->
 * that link ("A~B"); links all off one switch -> that switch. Into *b (its
 * name in name). False: they share no one component. */
static bool common(struct cand *c, size_t nc, const size_t *l, size_t n, char *name, size_t len,
		   struct cand *b)
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
	if (pair)
		snprintf(name, len, "%s~%s", strcmp(a0, b0) < 0 ? a0 : b0, strcmp(a0, b0) < 0 ? b0 : a0);
	else if (on_a != on_b)
		snprintf(name, len, "%s", on_a ? a0 : b0);
	else
		return false;
	*b = (struct cand){.name = name, .start_ns = INT64_MAX};
	for (size_t i = 0; i < n; i++) {
		b->bad += c[l[i]].bad;
		b->good += c[l[i]].good;
		if (c[l[i]].start_ns < b->start_ns)
			b->start_ns = c[l[i]].start_ns;
	}
	if (!pair) /* the switch's own figures: every path through it */
		for (size_t j = 0; j < nc; j++)
			if (!strcmp(c[j].name, name))
				b->good = c[j].good, b->bad = c[j].bad;
	return true;
}

/* Delayed paths through any of the links l (each counted once). */
static unsigned through_any(struct fq_detector *d, int64_t now, const struct cand *c, const size_t *l,
			    size_t n)
{
	unsigned bad = 0;

	FQ_CAPTAB_FOREACH(&d->paths, struct path_ent, p, nx)
	{
		bool hit = false;

		for (size_t i = 0; i < n && !hit && usable(p, now) && p->elevated; i++)
			hit = det_route_crosses(p, c[l[i]].name);
		bad += hit;
	}
	return bad;
}

void det_locate(struct fq_detector *d, int64_t now)
{
	struct cand *c = d->locate_scratch, *best = NULL, merged;
	char ambiguous[256] = "", name[200];
	size_t nc, n = 0, links[MAX_CAND], nl = 0;
	bool one_end;
	unsigned total;

	if (!c && !(c = d->locate_scratch = malloc(MAX_CAND * sizeof(*c))))
		return;
	total = gather(d, now, c, &nc, &one_end);
	if (total < d->c.locate_min_paths || one_end || !nc)
		return;
	count(d, now, c, nc);
	/* A queue is one direction of one link: the crossed links delayed for
	 * most paths through them. Several of them: the cable (both ways) or
	 * the switch they all hang off, if they explain the delays. */
	for (size_t j = 0; j < nc; j++)
		if (is_link(c[j].name) && c[j].bad && share(&c[j]) >= LOCATE_MIN_SHARE)
			links[nl++] = j;
	if (nl > 1 && common(c, nc, links, nl, name, sizeof(name), &merged)) {
		unsigned through = through_any(d, now, c, links, nl); /* one scan of the paths */

		if ((double)through >= LOCATE_MIN_COVER * total) {
			if (through > merged.bad)
				merged.bad = through;
			blame(d, &merged, total, "", now);
			return;
		}
	}
	for (size_t j = 0; j < nc; j++)
		if (share(&c[j]) >= LOCATE_MIN_SHARE &&
		    (!best || c[j].bad > best->bad || (c[j].bad == best->bad && share(&c[j]) > share(best))))
			best = &c[j];
	if (!best || (double)best->bad < LOCATE_MIN_COVER * total)
		return; /* no one component explains them: several faults, or none in the fabric */
	for (size_t j = 0; j < nc; j++)
		if (&c[j] != best && c[j].bad == best->bad &&
		    share(best) - share(&c[j]) < AMBIGUOUS_EPSILON && n + 70 < sizeof(ambiguous))
			n += (size_t)snprintf(ambiguous + n, sizeof(ambiguous) - n, "%s%s", n ? ", " : "",
					      c[j].name);
	blame(d, best, total, ambiguous, now);
}
