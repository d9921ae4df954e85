/*
 * ctl_lroute: lanes' own routes (proto LaneRoute): each lane of a job step
 * traced by its sending agent with the lane's TCP 5-tuple, since ECMP
 * hashes it apart from its NIC pair's probes. The hops are named by the
 * last topology built (ctl_topo.c) as the probes' routes are (its NIC, its
 * host link, each switch and the link into the next, up to the first hop
 * the topology does not know) and handed to the detector, which attaches
 * fabric incidents to the steps whose lanes cross the blamed component
 * (controller/detector_lane.h). Kept while the step runs, fed again after
 * each rebuild; none is stored in the database.
 */
#include "controller/ctl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "controller/topology.h"

#define MAX_LANE_ROUTES (1u << 16)
#define MAX_COMPS       (2 * FQ_TOPO_MAX_HOPS + 4)

struct lane_route {
	uint64_t job;
	uint32_t step, src_rank, dst_rank, lane;
	uint16_t local_port; /* the lane's source port (0: unknown) */
	char node[64], nic[32];
	char hops[FQ_TOPO_MAX_HOPS][48]; /* "" where no router answered */
	size_t n_hops;
};

/* The link between switches a and b (by name), or NULL. */
static const char *link_between(const struct fq_topo *t, const char *a, const char *b)
{
	for (size_t i = 0; i < fq_topo_link_count(t); i++) {
		const struct fq_topo_link *l = fq_topo_link_at(t, i);
		const char *x = fq_topo_switch_at(t, l->a)->name, *y = fq_topo_switch_at(t, l->b)->name;

		if ((!strcmp(x, a) && !strcmp(y, b)) || (!strcmp(x, b) && !strcmp(y, a)))
			return l->name;
	}
	return NULL;
}

/* The lane's components as the topology names them; how many. */
static size_t name_route(const struct fq_topo *t, const struct lane_route *r, char *nic_name, size_t len,
			 const char **out)
{
	const char *prev = NULL;
	size_t n = 0;

	snprintf(nic_name, len, "%s/%s", r->node, r->nic);
	out[n++] = nic_name;
	for (size_t i = 0; i < fq_topo_host_link_count(t); i++) {
		const struct fq_topo_host_link *h = fq_topo_host_link_at(t, i);

		if (!strcmp(h->node, r->node) && !strcmp(h->nic, r->nic)) {
			out[n++] = h->name;
			break;
		}
	}
	for (size_t k = 0; k < r->n_hops && n + 2 <= MAX_COMPS; k++) {
		const struct fq_topo_switch *s = *r->hops[k] ? fq_topo_switch_find(t, r->hops[k]) : NULL;
		const char *link;

		if (!s)
			break; /* what follows is not certain (topology.h's rule for routes) */
		if (prev && !strcmp(prev, s->name))
			continue;
		if (prev) {
			if (!(link = link_between(t, prev, s->name)))
				break;
			out[n++] = link;
		}
		out[n++] = prev = s->name;
	}
	return n;
}

/* The rates' view of the route: each hop by its switch's name where the
 * topology knows it, else its address ("" where no router answered). */
static void feed_rates(struct ctl *c, const struct lane_route *r)
{
	Fabriciq__LaneRoute m = FABRICIQ__LANE_ROUTE__INIT;
	const char *hops[FQ_TOPO_MAX_HOPS];

	for (size_t k = 0; k < r->n_hops; k++) {
		const struct fq_topo_switch *s =
		    c->topo && *r->hops[k] ? fq_topo_switch_find(c->topo, r->hops[k]) : NULL;

		hops[k] = s ? s->name : r->hops[k];
	}
	m.job_id = r->job;
	m.step_id = r->step;
	m.src_rank = r->src_rank;
	m.dst_rank = r->dst_rank;
	m.lane = r->lane;
	ctl_rates_lane_route(c, &m, hops, r->n_hops);
}

/* The port of an "a.b.c.d:port" address; 0 if it has none. */
static uint16_t lane_port(const char *address)
{
	const char *colon = address ? strrchr(address, ':') : NULL;
	char *end;
	unsigned long port;

	if (!colon || !colon[1])
		return 0;
	port = strtoul(colon + 1, &end, 10);
	return *end || port > 65535 ? 0 : (uint16_t)port;
}

static void feed(struct ctl *c, const struct lane_route *r, int64_t now)
{
	const char *comps[MAX_COMPS];
	char nic_name[128];
	struct fq_det_lane_route d = {.job_id = r->job,
				      .step_id = r->step,
				      .src_rank = r->src_rank,
				      .dst_rank = r->dst_rank,
				      .lane = r->lane,
				      .local_port = r->local_port,
				      .comps = comps,
				      .now_ns = now};

	feed_rates(c, r);
	if (!c->topo)
		return; /* named at the first rebuild */
	d.n = name_route(c->topo, r, nic_name, sizeof(nic_name), comps);
	fq_detector_lane_route(c->det, &d);
}

void ctl_lane_route(struct ctl *c, const char *node, const Fabriciq__LaneRoute *m)
{
	char key[96];
	struct fq_strmap_entry *e;
	struct lane_route *r;

	if (!*m->local_nic || m->n_hops > FQ_TOPO_MAX_HOPS || strlen(node) >= sizeof(r->node) ||
	    strlen(m->local_nic) >= sizeof(r->nic))
		return;
	snprintf(key, sizeof(key), "%" PRIu64 ".%" PRIu32 ".%" PRIu32 ".%" PRIu32 ".%" PRIu32, m->job_id,
		 m->step_id, m->src_rank, m->dst_rank, m->lane);
	if (c->lane_routes.count >= MAX_LANE_ROUTES && !fq_strmap_get(&c->lane_routes, key)) {
		fq_log_rl(FQ_LOG_WARN, "lane routes: %u kept already; job %" PRIu64 "'s left out",
			  MAX_LANE_ROUTES, m->job_id);
		return;
	}
	if (!(e = fq_strmap_upsert(&c->lane_routes, key)))
		return;
	if (!e->value && !(e->value = calloc(1, sizeof(*r)))) {
		free(fq_strmap_remove(&c->lane_routes, key));
		return;
	}
	r = e->value;
	*r = (struct lane_route){.job = m->job_id,
				 .step = m->step_id,
				 .src_rank = m->src_rank,
				 .dst_rank = m->dst_rank,
				 .lane = m->lane};
	r->local_port = lane_port(m->local_address);
	snprintf(r->node, sizeof(r->node), "%s", node); /* the sending end's agent: the route's source */
	snprintf(r->nic, sizeof(r->nic), "%s", m->local_nic);
	for (size_t k = 0; k < m->n_hops; k++)
		snprintf(r->hops[r->n_hops++], sizeof(r->hops[0]), "%s", m->hops[k]);
	feed(c, r, fq_realtime_ns());
}

static void refeed_one(struct fq_strmap_entry *e, void *arg)
{
	struct ctl *c = ((void **)arg)[0];
	int64_t now = *(int64_t *)((void **)arg)[1];

	feed(c, e->value, now);
}

void ctl_lane_routes_refeed(struct ctl *c, int64_t now)
{
	void *arg[2] = {c, &now};

	fq_strmap_each(&c->lane_routes, refeed_one, arg);
}

void ctl_lane_routes_drop(struct ctl *c, uint64_t job, uint32_t step)
{
	char prefix[FQ_STEP_KEY_LEN + 1];

	snprintf(prefix, sizeof(prefix), "%" PRIu64 ".%" PRIu32 ".", job, step);
	fq_strmap_remove_prefix(&c->lane_routes, prefix, free);
}

void ctl_lane_routes_free(struct ctl *c)
{
	fq_strmap_clear(&c->lane_routes, free);
	fq_topo_destroy(c->topo);
	c->topo = NULL;
}
