/*
 * ctl_topo: the controller's side of the topology (controller/topology.h):
 * the paths' routes as the agents send them (PathTrace, one per directed
 * NIC pair and probe flow, the latest kept), the fabric inferred from them once they
 * changed (at most every TOPO_EVERY_NS, on the loop: linear in the routes,
 * about 8 us a route), and each path's route as components handed to the
 * detector, which blames delayed paths on the component they share
 * (controller/detector_locate.c). Switch names come from the site's
 * expected topology (controller.topology_file) when there is one. A route
 * that changed means the fabric did: every agent is asked to trace all its
 * paths again (Retrace, at most every RETRACE_EVERY_NS), so the routes the
 * detector judges by are not a minute old. Each path's delay floor (the
 * 10th percentile of its last FLOOR_WINDOWS probe windows' forward +
 * reverse minimum, once it has FLOOR_MIN of them) goes into the build for
 * the cross-check by delay (topology.h); the floors alone rebuild it at
 * most every FLOORS_EVERY_NS.
 */
#include "controller/ctl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/frame.h"
#include "common/log.h"
#include "controller/session.h"
#include "controller/topology.h"

#define TOPO_EVERY_NS    (2 * 1000000000LL)
#define RETRACE_EVERY_NS (5 * 1000000000LL)
#define MAX_ROUTES       (1u << 18)
#define FLOOR_WINDOWS    32
#define FLOOR_MIN        5
#define FLOORS_EVERY_NS  (30 * 1000000000LL)
#define SEP              '\x1f' /* between the names of a route's key */
#define CTL_MAX_FLOWS    FQ_DET_MAX_FLOWS

/* A path's key in routes and floors: its four names, SEP between them. */
static bool path_key(char *key, size_t len, const char *node, const char *nic, const char *remote_node,
		     const char *remote_nic)
{
	return (size_t)snprintf(key, len, "%s%c%s%c%s%c%s", node, SEP, nic, SEP, remote_node, SEP,
				remote_nic) < len;
}

/* A route's key: its path's, then SEP and the flow (each flow of a path
 * has its own route). */
static bool route_key(char *key, size_t len, const char *node, const char *nic, const char *remote_node,
		      const char *remote_nic, unsigned flow)
{
	return (size_t)snprintf(key, len, "%s%c%s%c%s%c%s%c%u", node, SEP, nic, SEP, remote_node, SEP,
				remote_nic, SEP, flow) < len;
}

/* A copy of key split into its four names (NULL: out of memory, or not
 * four names); the caller frees it. A route's key: *flow its flow (else
 * 0; flow may be NULL). */
static char *key_names(const char *key, char *names[4], unsigned *flow)
{
	char *k = strdup(key), *s = k;
	size_t i = 0;

	for (; s && i < 4; s++) {
		names[i++] = s;
		if (!(s = strchr(s, SEP)))
			break;
		*s = 0;
	}
	if (k && i < 4) {
		free(k);
		return NULL;
	}
	if (flow)
		*flow = s ? (unsigned)strtoul(s, NULL, 10) : 0;
	return k;
}

/* The route's value: "R" (reached) or "-", then each hop after a ','. */
void ctl_route(struct ctl *c, const char *node, const Fabriciq__PathTrace *t)
{
	char key[512], *v;
	size_t len = 2, n = 0;
	struct fq_strmap_entry *e;

	if (!*t->local_nic || !*t->remote_node || !*t->remote_nic || t->n_hops > FQ_TOPO_MAX_HOPS ||
	    t->flow >= CTL_MAX_FLOWS)
		return;
	if (!route_key(key, sizeof(key), node, t->local_nic, t->remote_node, t->remote_nic, t->flow))
		return;
	for (size_t i = 0; i < t->n_hops; i++)
		len += strlen(t->hops[i]) + 1;
	if (!(v = malloc(len)))
		return;
	v[n++] = t->reached ? 'R' : '-';
	for (size_t i = 0; i < t->n_hops; i++)
		n += (size_t)sprintf(v + n, ",%s", t->hops[i]);
	v[n] = 0;
	if (c->routes.count >= MAX_ROUTES && !fq_strmap_get(&c->routes, key)) {
		free(v);
		return;
	}
	if (!(e = fq_strmap_upsert(&c->routes, key))) {
		free(v);
		return;
	}
	if (e->value && strcmp(e->value, v) == 0) {
		free(v);
		return; /* a resend: nothing new */
	}
	if (e->value)
		c->retrace_wanted = true; /* a route changed: the others may have too */
	free(e->value);
	e->value = v;
	c->routes_dirty = true;
}

struct floors {
	int64_t ns[FLOOR_WINDOWS]; /* a ring */
	unsigned n, next;
};

void ctl_floor(struct ctl *c, const char *node, const Fabriciq__ProbeReport *p)
{
	char key[512], rkey[520];
	struct fq_strmap_entry *e;
	struct floors *f;

	/* a window with answers both ways (0: none measured); the sum holds
	 * no clock offset */
	if (!p->path_up || !p->answered || p->owd_fwd_min_ns == 0 || p->owd_rev_min_ns == 0 ||
	    p->owd_fwd_min_ns + p->owd_rev_min_ns <= 0)
		return;
	if (!path_key(key, sizeof(key), node, p->local_nic, p->remote_node, p->remote_nic) ||
	    !route_key(rkey, sizeof(rkey), node, p->local_nic, p->remote_node, p->remote_nic, 0) ||
	    !fq_strmap_get(&c->routes, rkey) || !(e = fq_strmap_upsert(&c->floors, key)))
		return; /* floors of traced paths only: as many as the routes */
	if (!e->value && !(e->value = calloc(1, sizeof(struct floors)))) {
		free(fq_strmap_remove(&c->floors, key));
		return;
	}
	f = e->value;
	f->ns[f->next] = p->owd_fwd_min_ns + p->owd_rev_min_ns;
	f->next = (f->next + 1) % FLOOR_WINDOWS;
	f->n += f->n < FLOOR_WINDOWS;
	c->floors_dirty = true;
}

static int ns_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

struct floor_list {
	struct fq_topo_floor *f;
	char **keys; /* each floor's key, split in place: owned */
	size_t n;
};

/* One path's floor into fl, if it has windows enough. */
static void add_floor(struct fq_strmap_entry *e, void *arg)
{
	struct floor_list *fl = arg;
	const struct floors *f = e->value;
	int64_t sorted[FLOOR_WINDOWS];
	char *k, *names[4];

	if (f->n < FLOOR_MIN || !(k = key_names(e->key, names, NULL)))
		return;
	memcpy(sorted, f->ns, f->n * sizeof(*sorted));
	qsort(sorted, f->n, sizeof(*sorted), ns_cmp);
	fl->keys[fl->n] = k;
	fl->f[fl->n++] = (struct fq_topo_floor){names[0], names[1], names[2], names[3], sorted[f->n / 10]};
}

/* Every connected agent: trace all your paths again (at most every RETRACE_EVERY_NS). */
static void retrace_round(struct ctl *c, int64_t now)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__Retrace rt = FABRICIQ__RETRACE__INIT;

	if (!c->retrace_wanted || now - c->retrace_sent_ns < RETRACE_EVERY_NS)
		return;
	c->retrace_wanted = false;
	c->retrace_sent_ns = now;
	rt.changed_ns = now;
	env.version = FQ_PROTOCOL_VERSION;
	env.sent_ns = now;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_RETRACE;
	env.retrace = &rt;
	for (size_t b = 0; b < c->agents.nbuckets; b++)
		for (struct fq_strmap_entry *e = c->agents.buckets[b]; e; e = e->next) {
			struct agent *a = e->value;

			if (a->sess)
				fq_session_send(a->sess, &env);
		}
	fq_debug("routes changed: every agent asked to trace its paths again");
}

struct traces {
	struct fq_topo_trace *t;
	char **keys; /* each route's key and value, split in place: owned */
	const char **hops;
	size_t n, nhops;
};

/* One route into tr: its key's names and its value's hops, split in copies. */
static void add_trace(struct fq_strmap_entry *e, void *arg)
{
	struct traces *tr = arg;
	struct fq_topo_trace *t = &tr->t[tr->n];
	char *names[4], *v = strdup(e->value), *s;
	unsigned flow;
	char *k = key_names(e->key, names, &flow);

	if (!k || !v) {
		free(k);
		free(v);
		return;
	}
	tr->keys[2 * tr->n] = k;
	tr->keys[2 * tr->n + 1] = v;
	*t = (struct fq_topo_trace){.node = names[0],
				    .nic = names[1],
				    .remote_node = names[2],
				    .remote_nic = names[3],
				    .reached = v[0] == 'R',
				    .hops = tr->hops + tr->nhops,
				    .flow = flow};
	for (s = strchr(v, ','); s; s = strchr(s, ',')) {
		*s++ = 0;
		tr->hops[tr->nhops++] = s;
	}
	t->n_hops = (size_t)(tr->hops + tr->nhops - t->hops);
	tr->n++;
}

/* The expected topology's names (a failure to read it is logged, rate-limited). */
static struct fq_topo_decl *expected(struct ctl *c)
{
	struct fq_topo_decl *decl = NULL;
	char err[512];

	if (*c->cfg.topology_file && fq_topo_decl_load(c->cfg.topology_file, &decl, err, sizeof(err)) < 0)
		fq_log_rl(FQ_LOG_WARN, "controller.topology_file %s", err);
	return decl;
}

/* Has the expected topology file changed (or come, or gone) since it was read? */
static bool expected_changed(struct ctl *c)
{
	struct stat st;
	int64_t stamp = 0;

	if (*c->cfg.topology_file && stat(c->cfg.topology_file, &st) == 0)
		stamp = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec + st.st_size;
	if (stamp == c->topo_file_stamp)
		return false;
	c->topo_file_stamp = stamp;
	return true;
}

void ctl_topology_round(struct ctl *c, int64_t now)
{
	struct traces tr = {0};
	struct floor_list fl = {0};
	struct fq_topo_opts opts = {0};
	struct fq_topo_decl *decl;
	struct fq_topo *topo = NULL;
	size_t nh = 0;

	retrace_round(c, now);
	if (expected_changed(c))
		c->routes_dirty = c->topo_renamed = true; /* its names are the switches' */
	if (c->floors_dirty && now - c->topo_built_ns >= FLOORS_EVERY_NS)
		c->routes_dirty = true;
	if (!c->routes_dirty || !c->routes.count || now - c->topo_built_ns < TOPO_EVERY_NS)
		return;
	c->routes_dirty = c->floors_dirty = false;
	c->topo_built_ns = now;
	fl.f = calloc(c->floors.count + 1, sizeof(*fl.f));
	fl.keys = calloc(c->floors.count + 1, sizeof(*fl.keys));
	if (fl.f && fl.keys) {
		fq_strmap_each(&c->floors, add_floor, &fl);
		opts.floors = fl.f;
		opts.n_floors = fl.n;
	}
	nh = c->routes.count * (FQ_TOPO_MAX_HOPS + 1);
	tr.t = calloc(c->routes.count + 1, sizeof(*tr.t));
	tr.keys = calloc(2 * c->routes.count + 2, sizeof(*tr.keys));
	tr.hops = calloc(nh + 1, sizeof(*tr.hops));
	if (tr.t && tr.keys && tr.hops) {
		fq_strmap_each(&c->routes, add_trace, &tr);
		decl = expected(c);
		if (fq_topo_build(tr.t, tr.n, decl, &opts, &topo) < 0)
			fq_log_rl(FQ_LOG_WARN, "topology: cannot build it from %zu routes: out of memory",
				  tr.n);
		fq_topo_decl_free(decl);
	}
	for (size_t i = 0; topo && i < fq_topo_path_count(topo); i++) {
		const struct fq_topo_path *p = fq_topo_path_at(topo, i);
		const char *names[FQ_TOPO_MAX_HOPS * 2 + 4];
		size_t n = 0;

		for (size_t j = 0; j < p->n_route && n < sizeof(names) / sizeof(names[0]); j++)
			names[n++] = p->route[j].name;
		fq_detector_flow_route(c->det, p->node, p->nic, p->remote_node, p->remote_nic, p->flow, names,
				       n, now);
		if (p->flow == 0) { /* the rates' route of the pair's lanes without their own: its switches */
			size_t ns = 0;

			for (size_t j = 0; j < p->n_route; j++)
				if (p->route[j].kind == FQ_TOPO_SWITCH)
					names[ns++] = p->route[j].name;
			ctl_rates_path_route(c, p->node, p->nic, p->remote_node, p->remote_nic, names, ns);
		}
	}
	if (topo && c->topo_renamed) {
		fq_detector_routes_renamed(c->det);
		c->topo_renamed = false;
	}
	if (topo) {
		size_t nd = fq_topo_diff_count(topo);
		const char **kinds = calloc(nd + 1, sizeof(*kinds)), **texts = calloc(nd + 1, sizeof(*texts));

		for (size_t i = 0; kinds && texts && i < nd; i++) {
			kinds[i] = fq_topo_diff_kind_name(fq_topo_diff_at(topo, i)->kind);
			texts[i] = fq_topo_diff_at(topo, i)->text;
		}
		if (kinds && texts) /* the differences from the expected topology: anomalies */
			fq_detector_topology(c->det, kinds, texts, nd, now);
		free(kinds);
		free(texts);
		char said[sizeof(c->topo_said)];

		snprintf(said, sizeof(said),
			 "%zu switches, %zu links, %zu routes, %zu differences, %zu delay groups",
			 fq_topo_switch_count(topo), fq_topo_link_count(topo), tr.n, nd,
			 fq_topo_delay_group_count(topo));
		if (strcmp(said, c->topo_said)) {
			fq_info("topology: %s", said);
			memcpy(c->topo_said, said, sizeof(said));
		}
	}
	if (topo) { /* kept: the lanes' routes are named by it */
		fq_topo_destroy(c->topo);
		c->topo = topo;
		ctl_lane_routes_refeed(c, now);
	}
	for (size_t i = 0; tr.keys && i < 2 * tr.n; i++)
		free(tr.keys[i]);
	free(tr.t);
	free(tr.keys);
	free(tr.hops);
	for (size_t i = 0; fl.keys && i < fl.n; i++)
		free(fl.keys[i]);
	free(fl.f);
	free(fl.keys);
}
