/*
 * detector_qlink: the switch links queueing by the probes (detector_int.h),
 * judged once a tick for the rules that ask (slow NICs, collisions,
 * in-band mismatch): one pass over the recent slow units' routes counts
 * each switch link's slow units and the nodes common to them all.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/detector_int.h"

/* A switch link's slow units: how many, and the nodes common to them all
 * (the first's two ends, dropped as units without them come; "" for
 * none). Copies: the table outlives the tick's inputs, which may drop
 * the paths it was built from. */
struct link_stat {
	unsigned slow;
	char common[2][NODE_LEN];
};

static bool is_common(const struct link_stat *s, const char *node)
{
	return *node && (!strcmp(s->common[0], node) || !strcmp(s->common[1], node));
}

/* Folds the slow units of from (their count, the nodes common to them)
 * into into's; from may be NULL (no slow unit). */
static void common_merge(struct link_stat *into, const struct link_stat *from)
{
	if (!from || !from->slow)
		return;
	if (!into->slow)
		memcpy(into->common, from->common, sizeof(into->common));
	else
		for (int k = 0; k < 2; k++)
			if (!is_common(from, into->common[k]))
				into->common[k][0] = '\0';
	into->slow += from->slow;
}

/* Every switch link of the recent slow units' routes, in one pass. */
static int links_build(struct fq_detector *d, int64_t now)
{
	DET_FOR_UNITS(d, u)
	{
		struct link_stat one = {.slow = 1};

		if (!u->slow || !u->nroute || older_than(now, u->last_end_ns, LOCATE_RECENT_NS))
			continue;
		snprintf(one.common[0], NODE_LEN, "%s", u->p->k.src.node);
		snprintf(one.common[1], NODE_LEN, "%s", u->p->k.dst.node);
		for (size_t i = 0; i < u->nroute; i++) {
			struct fq_strmap_entry *e;
			bool again = false;

			if (!det_is_switch_link(u->route[i]))
				continue;
			for (size_t j = 0; j < i && !again; j++) /* a route crossing it twice: once */
				again = !strcmp(u->route[j], u->route[i]);
			if (again)
				continue;
			e = fq_strmap_upsert(&d->qlinks.links, u->route[i]);
			if (!e || (!e->value && !(e->value = calloc(1, sizeof(struct link_stat)))))
				return -1;
			common_merge(e->value, &one);
		}
	}
	return 0;
}

bool det_link_congested(struct fq_detector *d, const char *link, int64_t now)
{
	struct det_qlinks *t = &d->qlinks;
	struct link_stat pool = {0};
	const char *tilde = strchr(link, '~');
	char way[2][2 * NODE_LEN + 2];
	size_t la;

	if (!det_is_switch_link(link))
		return false;
	if (!t->built) {
		t->built = true;
		t->failed = links_build(d, now) < 0;
	}
	if (t->failed)
		return false;
	common_merge(&pool, fq_strmap_get(&t->links, link));
	/* "A~B" is the link either way: its entries as "A>B" and "B>A" too */
	la = tilde ? (size_t)(tilde - link) : 0;
	if (tilde && la < NODE_LEN && strlen(tilde + 1) < NODE_LEN) {
		snprintf(way[0], sizeof(way[0]), "%.*s>%s", (int)la, link, tilde + 1);
		snprintf(way[1], sizeof(way[1]), "%s>%.*s", tilde + 1, (int)la, link);
		common_merge(&pool, fq_strmap_get(&t->links, way[0]));
		common_merge(&pool, fq_strmap_get(&t->links, way[1]));
	}
	/* slow paths over it with no node in common: the link queues */
	return pool.slow >= 2 && !pool.common[0][0] && !pool.common[1][0];
}

bool det_route_queueing(struct fq_detector *d, char *const *route, size_t n, int64_t now)
{
	for (size_t i = 0; i < n; i++)
		if (det_link_congested(d, route[i], now))
			return true;
	return false;
}

void det_qlinks_reset(struct fq_detector *d)
{
	fq_strmap_clear(&d->qlinks.links, free);
	d->qlinks = (struct det_qlinks){0};
}
