/* topology_path: each directed NIC pair's routes, one per probe flow (topology.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/topology_int.h"

/* A trace's route: what it certainly crosses, in order (topology.h). */
static int make_route(struct fq_topo *t, const struct ttrace *tr, struct fq_topo_path *p)
{
	const struct tnic *src = &t->nics[tr->src], *dst = &t->nics[tr->dst];
	struct fq_topo_comp *r = topo_alloc(t, (2 * tr->n_hops + 4) * sizeof(*r));
	size_t n = 0, k = 1, s;

	if (!r)
		return -ENOMEM;
	*p = (struct fq_topo_path){.node = src->node,
				   .nic = src->nic,
				   .remote_node = dst->node,
				   .remote_nic = dst->nic,
				   .flow = tr->flow,
				   .route = r};
	r[n++] = (struct fq_topo_comp){FQ_TOPO_NIC, 0, src->name};
	if (tr->n_hops && tr->hops[0] != NONE && src->hl != NONE) {
		s = t->addrs[tr->hops[0]].sw;
		r[n++] = (struct fq_topo_comp){FQ_TOPO_HOST_LINK, src->hl, t->hls[src->hl].pub.name};
		r[n++] = (struct fq_topo_comp){FQ_TOPO_SWITCH, s, t->sw[s].pub.name};
		for (; k < tr->n_hops && tr->hops[k] != NONE; k++) {
			size_t s2 = t->addrs[tr->hops[k]].sw, l = topo_link_of(t, s, s2);

			if (s2 == s || l == NONE)
				continue;
			r[n++] = (struct fq_topo_comp){FQ_TOPO_LINK, l, t->links[l].pub.name};
			t->links[l].pub.probe_paths++;
			r[n++] = (struct fq_topo_comp){FQ_TOPO_SWITCH, s2, t->sw[s2].pub.name};
			s = s2;
		}
		if (k == tr->n_hops && tr->reached && dst->hl != NONE && t->hls[dst->hl].pub.sw == s) {
			r[n++] = (struct fq_topo_comp){FQ_TOPO_HOST_LINK, dst->hl, t->hls[dst->hl].pub.name};
			r[n++] = (struct fq_topo_comp){FQ_TOPO_NIC, 0, dst->name};
			p->complete = true;
		}
	}
	p->n_route = n;
	return 0;
}

static int path_cmp(const void *a, const void *b, void *arg)
{
	(void)arg;
	const struct fq_topo_path *x = a, *y = b;
	int c = strcmp(x->node, y->node);

	c = c ? c : strcmp(x->nic, y->nic);
	c = c ? c : strcmp(x->remote_node, y->remote_node);
	c = c ? c : strcmp(x->remote_nic, y->remote_nic);
	return c ? c : (x->flow > y->flow) - (x->flow < y->flow);
}

static char *path_key(const char *node, const char *nic, const char *rnode, const char *rnic, unsigned flow)
{
	char *k = NULL;

	return asprintf(&k, "%s\x1f%s\x1f%s\x1f%s\x1f%u", node, nic, rnode, rnic, flow) < 0 ? NULL : k;
}

/* One path per directed NIC pair and flow, from its last trace; sorted,
 * and the map from pair and flow to path. */
int topo_make_paths(struct fq_topo *t)
{
	size_t n = 0;

	for (size_t i = 0; i < t->n_traces; i++) {
		const struct ttrace *tr = &t->traces[i];
		char *k = path_key(t->nics[tr->src].node, t->nics[tr->src].nic, t->nics[tr->dst].node,
				   t->nics[tr->dst].nic, tr->flow);
		int rc = k ? topo_map_put(&t->path_map, k, i) : -ENOMEM;

		free(k);
		if (rc < 0)
			return rc;
	}
	if (!(t->paths = topo_alloc(t, t->path_map.count * sizeof(*t->paths))))
		return -ENOMEM;
	for (size_t i = 0; i < t->n_traces; i++) {
		const struct ttrace *tr = &t->traces[i];
		char *k = path_key(t->nics[tr->src].node, t->nics[tr->src].nic, t->nics[tr->dst].node,
				   t->nics[tr->dst].nic, tr->flow);
		size_t last = k ? topo_map_get(&t->path_map, k) : NONE;

		free(k);
		if (last == NONE)
			return -ENOMEM;
		if (last == i && make_route(t, tr, &t->paths[n++]) < 0)
			return -ENOMEM;
	}
	t->n_paths = n;
	topo_sort(t->paths, n, sizeof(*t->paths), path_cmp, NULL);
	for (size_t i = 0; i < n; i++) {
		const struct fq_topo_path *p = &t->paths[i];
		char *k = path_key(p->node, p->nic, p->remote_node, p->remote_nic, p->flow);
		int rc = k ? topo_map_put(&t->path_map, k, i) : -ENOMEM;

		free(k);
		if (rc < 0)
			return rc;
	}
	return 0;
}

const struct fq_topo_path *fq_topo_path_find(const struct fq_topo *t, const char *node, const char *nic,
					     const char *remote_node, const char *remote_nic)
{
	return fq_topo_flow_path_find(t, node, nic, remote_node, remote_nic, 0);
}

const struct fq_topo_path *fq_topo_flow_path_find(const struct fq_topo *t, const char *node, const char *nic,
						  const char *remote_node, const char *remote_nic,
						  unsigned flow)
{
	char *k = path_key(node, nic, remote_node, remote_nic, flow);
	size_t i = k ? topo_map_get(&t->path_map, k) : NONE;

	free(k);
	return i == NONE ? NULL : &t->paths[i];
}
