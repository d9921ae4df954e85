/* topology_delay: the cross-check by delay (topology.h, struct
 * fq_topo_floor): each NIC's peers grouped by their delay floors, held
 * against the peers its routes put nearest. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/topology_int.h"

struct peer {
	size_t nic;
	int64_t ns;
};

/* One source NIC's floors, sorted by floor; its nearest by delay are
 * p[0..near-1] (near 0: too few floors, or no gap), also by NIC index in
 * near_idx for lookups. */
struct view {
	struct peer *p;
	size_t n, cap, near;
	size_t *near_idx;
};

static int peer_ns_cmp(const void *a, const void *b, void *arg)
{
	(void)arg;
	const struct peer *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns < y->ns ? -1 : 1;
	return x->nic < y->nic ? -1 : x->nic > y->nic;
}

static int idx_key_cmp(const void *a, const void *b);

static int idx_cmp(const void *a, const void *b, void *arg)
{
	(void)arg;
	return idx_key_cmp(a, b);
}

static int name_cmp(const void *a, const void *b, void *arg)
{
	(void)arg;
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Where the first gap stands out (topology.h): the count below it, or 0. */
static size_t split(const struct peer *p, size_t n)
{
	if (n < FQ_TOPO_DELAY_MIN_PEERS)
		return 0;
	for (size_t i = 0; i + 1 < n; i++) {
		int64_t gap = p[i + 1].ns - p[i].ns;

		if (gap * 100 >= (int64_t)FQ_TOPO_DELAY_GAP_PCT * p[i].ns &&
		    gap >= FQ_TOPO_DELAY_GAP_MIN_NS && gap >= 2 * (p[i].ns - p[0].ns))
			return i + 1;
	}
	return 0;
}

static int idx_key_cmp(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

static bool is_near(const struct view *v, size_t nic)
{
	return v->near && bsearch(&nic, v->near_idx, v->near, sizeof(size_t), idx_key_cmp);
}

/* The switches a path's complete route crosses, or -1 (no route, or not
 * complete: its hops are not all known). */
static int switches_crossed(const struct fq_topo *t, const struct tnic *a, const struct tnic *b)
{
	const struct fq_topo_path *p = fq_topo_path_find(t, a->node, a->nic, b->node, b->nic);
	int n = 0;

	if (!p || !p->complete)
		return -1;
	for (size_t i = 0; i < p->n_route; i++)
		n += p->route[i].kind == FQ_TOPO_SWITCH;
	return n;
}

/* "n1/rail1, n2/rail1" (sorted, at most 4 names, then "and N more"), of
 * the peers with mark[i] set. */
static char *names_of(struct fq_topo *t, const struct view *v, const bool *mark)
{
	const char *names[5];
	char buf[512];
	size_t len = 0, n = 0, more = 0;

	buf[0] = 0;
	for (size_t i = 0; i < v->n; i++) {
		const char *s = t->nics[v->p[i].nic].name;
		size_t j;

		if (!mark[i])
			continue;
		/* insert in order; of 5, the last is dropped */
		for (j = n++; j > 0 && strcmp(names[j - 1], s) > 0; j--)
			names[j] = names[j - 1];
		names[j] = s;
		if (n == 5) {
			n = 4;
			more++;
		}
	}
	for (size_t i = 0; i < n; i++) {
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", i ? ", " : "", names[i]);
		if (len >= sizeof(buf))
			len = sizeof(buf) - 1;
	}
	if (more)
		snprintf(buf + len, sizeof(buf) - len, " and %zu more", more);
	return topo_strdup(t, buf);
}

/* The one difference of NIC x, if its delays and its routes disagree. */
static int check_nic(struct fq_topo *t, const struct view *views, size_t x)
{
	const struct view *v = &views[x];
	int *hops = calloc(v->n ? v->n : 1, sizeof(*hops)), least = -1, most = -1;
	bool *by_delay = calloc(v->n ? v->n : 1, 2 * sizeof(bool)), *by_route = by_delay + v->n, odd = false;
	int rc = 0;

	if (!hops || !by_delay) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < v->n; i++) {
		hops[i] = switches_crossed(t, &t->nics[x], &t->nics[v->p[i].nic]);
		if (hops[i] >= 0 && (least < 0 || hops[i] < least))
			least = hops[i];
		if (hops[i] > most)
			most = hops[i];
	}
	for (size_t i = 0; i < v->n; i++) {
		bool route_near = hops[i] >= 0 && hops[i] == least && least < most;

		by_delay[i] = i < v->near;
		by_route[i] = route_near;
		/* nearest each other both ways by delay, but not by route.
		 * Queueing only adds delay: it can push a near peer beyond the
		 * gap, never pull a far one under it both ways, so a peer that
		 * is near by route but not by delay is no difference. */
		if (by_delay[i] && hops[i] >= 0 && !route_near && is_near(&views[v->p[i].nic], x))
			odd = true;
	}
	if (odd) {
		char *d = names_of(t, v, by_delay), *r = names_of(t, v, by_route);

		/* no figures in the text: it names the difference while it lasts */
		rc = !d || !r
			 ? -ENOMEM
			 : topo_diff(t, FQ_TOPO_DELAY_DISAGREES,
				     topo_printf(t, "%s: nearest by delay %s; by route %s", t->nics[x].name,
						 d, *r ? r : "none (every peer behind as many switches)"));
	}
out:
	free(hops);
	free(by_delay);
	return rc;
}

/* Delay groups: NICs nearest each other both ways, joined (union-find). */
static size_t root(size_t *up, size_t i)
{
	while (up[i] != i)
		i = up[i] = up[up[i]];
	return i;
}

static int group_cmp(const void *a, const void *b, void *arg)
{
	(void)arg;
	const struct fq_topo_delay_group *x = a, *y = b;

	return strcmp(x->nics[0], y->nics[0]);
}

static int make_groups(struct fq_topo *t, const struct view *views)
{
	size_t *up = malloc((t->n_nics ? t->n_nics : 1) * sizeof(*up)),
	       *size = calloc(t->n_nics + 1, sizeof(*size));
	int64_t *floor = calloc(t->n_nics + 1, sizeof(*floor));
	int rc = -ENOMEM;

	if (!up || !size || !floor)
		goto out;
	for (size_t i = 0; i < t->n_nics; i++)
		up[i] = i;
	for (size_t x = 0; x < t->n_nics; x++)
		for (size_t i = 0; i < views[x].near; i++)
			if (is_near(&views[views[x].p[i].nic], x))
				up[root(up, x)] = root(up, views[x].p[i].nic);
	for (size_t x = 0; x < t->n_nics; x++)
		size[root(up, x)]++;
	for (size_t x = 0; x < t->n_nics; x++)
		for (size_t i = 0; i < views[x].near; i++) {
			size_t r = root(up, x);

			if (root(up, views[x].p[i].nic) == r && views[x].p[i].ns > floor[r])
				floor[r] = views[x].p[i].ns;
		}
	for (size_t r = 0; r < t->n_nics; r++)
		t->n_groups += root(up, r) == r && size[r] > 1;
	if (!(t->groups = topo_alloc(t, (t->n_groups ? t->n_groups : 1) * sizeof(*t->groups))))
		goto out;
	t->n_groups = 0;
	for (size_t r = 0; r < t->n_nics; r++) {
		struct fq_topo_delay_group *g;
		const char **nics, **sws;

		if (root(up, r) != r || size[r] < 2)
			continue;
		g = &t->groups[t->n_groups++];
		nics = topo_alloc(t, size[r] * sizeof(*nics));
		sws = topo_alloc(t, size[r] * sizeof(*sws));
		if (!nics || !sws)
			goto out;
		for (size_t x = 0; x < t->n_nics; x++) {
			const char *sw =
			    t->nics[x].hl == NONE ? NULL : t->sw[t->hls[t->nics[x].hl].pub.sw].pub.name;
			size_t j;

			if (root(up, x) != r)
				continue;
			nics[g->n_nics++] = t->nics[x].name;
			for (j = 0; sw && j < g->n_switches && strcmp(sws[j], sw); j++)
				;
			if (sw && j == g->n_switches)
				sws[g->n_switches++] = sw;
		}
		topo_sort(nics, g->n_nics, sizeof(*nics), name_cmp, NULL);
		topo_sort(sws, g->n_switches, sizeof(*sws), name_cmp, NULL);
		g->nics = nics;
		g->switches = sws;
		g->floor_ns = floor[r];
	}
	topo_sort(t->groups, t->n_groups, sizeof(*t->groups), group_cmp, NULL);
	rc = 0;
out:
	free(up);
	free(size);
	free(floor);
	return rc;
}

int topo_delay_check(struct fq_topo *t, const struct fq_topo_floor *f, size_t n)
{
	struct view *views = calloc(t->n_nics ? t->n_nics : 1, sizeof(*views));
	int rc = -ENOMEM;

	if (!views)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		char *a = NULL, *b = NULL;
		size_t x = NONE, y = NONE;

		if (!f[i].node || !f[i].nic || !f[i].remote_node || !f[i].remote_nic || f[i].ns <= 0 ||
		    f[i].ns > FQ_TOPO_DELAY_MAX_NS)
			continue;
		if (asprintf(&a, "%s/%s", f[i].node, f[i].nic) < 0 ||
		    asprintf(&b, "%s/%s", f[i].remote_node, f[i].remote_nic) < 0) {
			free(a);
			goto out;
		}
		x = topo_map_get(&t->nic_map, a);
		y = topo_map_get(&t->nic_map, b);
		free(a);
		free(b);
		if (x == NONE || y == NONE || x == y) /* a NIC no trace names */
			continue;
		if (topo_grow((void **)&views[x].p, &views[x].cap, views[x].n, sizeof(struct peer)) < 0)
			goto out;
		views[x].p[views[x].n++] = (struct peer){y, f[i].ns};
	}
	for (size_t x = 0; x < t->n_nics; x++) {
		struct view *v = &views[x];

		topo_sort(v->p, v->n, sizeof(*v->p), peer_ns_cmp, NULL);
		v->near = split(v->p, v->n);
		t->delay_unresolved += v->n >= FQ_TOPO_DELAY_MIN_PEERS && !v->near;
		if (!v->near)
			continue;
		if (!(v->near_idx = malloc(v->near * sizeof(size_t))))
			goto out;
		for (size_t i = 0; i < v->near; i++)
			v->near_idx[i] = v->p[i].nic;
		topo_sort(v->near_idx, v->near, sizeof(size_t), idx_cmp, NULL);
	}
	for (size_t x = 0; x < t->n_nics; x++)
		if (views[x].near && (rc = check_nic(t, views, x)) < 0)
			goto out;
	rc = make_groups(t, views);
out:
	for (size_t x = 0; x < t->n_nics; x++) {
		free(views[x].p);
		free(views[x].near_idx);
	}
	free(views);
	return rc;
}

size_t fq_topo_delay_group_count(const struct fq_topo *t)
{
	return t->n_groups;
}

const struct fq_topo_delay_group *fq_topo_delay_group_at(const struct fq_topo *t, size_t i)
{
	return i < t->n_groups ? &t->groups[i] : NULL;
}

size_t fq_topo_delay_unresolved(const struct fq_topo *t)
{
	return t->delay_unresolved;
}
