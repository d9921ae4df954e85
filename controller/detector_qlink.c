/*
 * detector_qlink: the switch links queueing by the probes (detector_int.h),
 * judged once a tick for the rules that ask (localisation's slow NICs,
 * the collision rule): one pass over the recent slow units' routes counts
 * each switch link's slow units and the nodes common to them all.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/detector_int.h"

/* A switch link's slow units: how many, and the nodes common to them all
 * (the first's two ends, dropped as units without them come). */
struct link_stat {
	unsigned slow;
	const char *common[2];
};

static bool switch_link(const char *c)
{
	return !strchr(c, '/') && (strchr(c, '>') || strchr(c, '~'));
}

/* Folds the slow units of from (their count, the nodes common to them)
 * into into's; from may be NULL (no slow unit). */
static void common_merge(struct link_stat *into, const struct link_stat *from)
{
	if (!from || !from->slow)
		return;
	if (!into->slow)
		into->common[0] = from->common[0], into->common[1] = from->common[1];
	else
		for (int k = 0; k < 2; k++)
			if (into->common[k] &&
			    !(from->common[0] && !strcmp(into->common[k], from->common[0])) &&
			    !(from->common[1] && !strcmp(into->common[k], from->common[1])))
				into->common[k] = NULL;
	into->slow += from->slow;
}

/* Every switch link of the recent slow units' routes, in one pass. */
static int links_build(struct fq_detector *d, struct det_link_memo *t, int64_t now)
{
	DET_FOR_UNITS(d, u)
	{
		const char *ends[2] = {u->p->k.src.node, u->p->k.dst.node};

		if (!u->slow || !u->nroute || older_than(now, u->last_end_ns, LOCATE_RECENT_NS))
			continue;
		for (size_t i = 0; i < u->nroute; i++) {
			struct link_stat one = {.slow = 1, .common = {ends[0], ends[1]}};
			struct fq_strmap_entry *e;
			bool again = false;

			if (!switch_link(u->route[i]))
				continue;
			for (size_t j = 0; j < i && !again; j++) /* a route crossing it twice: once */
				again = !strcmp(u->route[j], u->route[i]);
			if (again)
				continue;
			e = fq_strmap_upsert(&t->links, u->route[i]);
			if (!e || (!e->value && !(e->value = calloc(1, sizeof(struct link_stat)))))
				return -1;
			common_merge(e->value, &one);
		}
	}
	return 0;
}

bool det_link_congested(struct fq_detector *d, struct det_link_memo *t, const char *link, int64_t now)
{
	struct link_stat pool = {0};
	const char *tilde = strchr(link, '~');
	char way[2][2 * NODE_LEN + 2];
	size_t la;

	if (!switch_link(link))
		return false;
	if (!t->built) {
		t->built = true;
		t->failed = links_build(d, t, now) < 0;
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
	return pool.slow >= 2 && !pool.common[0] && !pool.common[1];
}

void det_link_memo_free(struct det_link_memo *t)
{
	fq_strmap_clear(&t->links, free);
	*t = (struct det_link_memo){0};
}
