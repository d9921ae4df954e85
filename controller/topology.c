/* topology: the fabric inferred from path traces (topology.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/topology_int.h"

void *topo_alloc(struct fq_topo *t, size_t size)
{
	void *p;

	if (topo_grow((void **)&t->blocks, &t->cap_blocks, t->n_blocks, sizeof(void *)) < 0 ||
	    !(p = calloc(1, size ? size : 1)))
		return NULL;
	t->blocks[t->n_blocks++] = p;
	return p;
}

char *topo_strdup(struct fq_topo *t, const char *s)
{
	char *p = topo_alloc(t, strlen(s) + 1);

	return p ? strcpy(p, s) : NULL;
}

char *topo_printf(struct fq_topo *t, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL, *p;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	p = topo_strdup(t, s);
	free(s);
	return p;
}

int topo_grow(void **arr, size_t *cap, size_t n, size_t size)
{
	size_t c = *cap ? *cap * 2 : 8;
	void *a;

	if (n < *cap)
		return 0;
	if (!(a = realloc(*arr, c * size)))
		return -ENOMEM;
	*arr = a;
	*cap = c;
	return 0;
}

void topo_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *, void *), void *arg)
{
	if (n > 1) /* qsort's base may not be NULL, even for none */
		qsort_r(base, n, size, cmp, arg);
}

int topo_map_put(struct fq_strmap *m, const char *key, size_t i)
{
	struct fq_strmap_entry *e = fq_strmap_upsert(m, key);

	if (!e)
		return -ENOMEM;
	e->value = (void *)(i + 1);
	return 0;
}

size_t topo_map_get(const struct fq_strmap *m, const char *key)
{
	void *v = fq_strmap_get(m, key);

	return v ? (size_t)v - 1 : NONE;
}

size_t topo_find(struct fq_topo *t, size_t a)
{
	while (t->addrs[a].parent != a) {
		t->addrs[a].parent = t->addrs[t->addrs[a].parent].parent; /* path halving */
		a = t->addrs[a].parent;
	}
	return a;
}

/* Joins two sets; the lower index becomes the root, so the result does
 * not depend on the order of the unions. */
static void unite(struct fq_topo *t, size_t a, size_t b)
{
	if (a == NONE || b == NONE)
		return;
	a = topo_find(t, a);
	b = topo_find(t, b);
	if (a < b)
		t->addrs[b].parent = a;
	else if (b < a)
		t->addrs[a].parent = b;
}

static size_t intern_addr(struct fq_topo *t, const char *s)
{
	size_t i = topo_map_get(&t->addr_map, s);
	struct taddr *a;

	if (i != NONE)
		return i;
	if (topo_grow((void **)&t->addrs, &t->cap_addrs, t->n_addrs, sizeof(*a)) < 0)
		return NONE;
	a = &t->addrs[t->n_addrs];
	*a = (struct taddr){.parent = t->n_addrs, .pred = NONE, .sw = NONE, .s = topo_strdup(t, s)};
	if (!a->s || topo_map_put(&t->addr_map, s, t->n_addrs) < 0)
		return NONE;
	if (inet_pton(AF_INET, s, a->key + 13) == 1)
		a->key[0] = 0;
	else if (inet_pton(AF_INET6, s, a->key + 1) == 1)
		a->key[0] = 1;
	else
		a->key[0] = 2;
	return t->n_addrs++;
}

static size_t intern_nic(struct fq_topo *t, const char *node, const char *nic)
{
	char *name = NULL;
	size_t i;
	struct tnic *n;

	if (asprintf(&name, "%s/%s", node, nic) < 0)
		return NONE;
	if ((i = topo_map_get(&t->nic_map, name)) == NONE &&
	    !topo_grow((void **)&t->nics, &t->cap_nics, t->n_nics, sizeof(*n))) {
		n = &t->nics[t->n_nics];
		*n = (struct tnic){.anchor = NONE, .first_hop = NONE, .sw = NONE, .hl = NONE};
		n->node = topo_strdup(t, node);
		n->nic = topo_strdup(t, nic);
		n->name = topo_strdup(t, name);
		if (n->node && n->nic && n->name && !topo_map_put(&t->nic_map, name, t->n_nics))
			i = t->n_nics++;
	}
	free(name);
	return i;
}

static bool name_ok(const char *s)
{
	return s && *s && strlen(s) <= FQ_TOPO_MAX_NAME;
}

static bool trace_ok(const struct fq_topo_trace *tr)
{
	if (!name_ok(tr->node) || !name_ok(tr->nic) || !name_ok(tr->remote_node) ||
	    !name_ok(tr->remote_nic) || tr->n_hops > FQ_TOPO_MAX_HOPS || (tr->n_hops && !tr->hops))
		return false;
	for (size_t k = 0; k < tr->n_hops; k++)
		if (tr->hops[k] && strlen(tr->hops[k]) > FQ_TOPO_MAX_ADDR)
			return false;
	return true;
}

/* Each trace into t->traces, its NICs and addresses interned. */
static int take_traces(struct fq_topo *t, const struct fq_topo_trace *in, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct fq_topo_trace *tr = &in[i];
		struct ttrace *o = &t->traces[t->n_traces];

		if (!trace_ok(tr)) {
			t->rejected++;
			continue;
		}
		o->src = intern_nic(t, tr->node, tr->nic);
		o->dst = intern_nic(t, tr->remote_node, tr->remote_nic);
		o->n_hops = tr->n_hops;
		o->reached = tr->reached;
		o->flow = tr->flow;
		if (o->src == NONE || o->dst == NONE ||
		    !(o->hops = topo_alloc(t, tr->n_hops * sizeof(size_t))))
			return -ENOMEM;
		for (size_t k = 0; k < tr->n_hops; k++) {
			o->hops[k] = NONE;
			if (!tr->hops[k] || !*tr->hops[k])
				t->unresolved++;
			else if ((o->hops[k] = intern_addr(t, tr->hops[k])) == NONE)
				return -ENOMEM;
		}
		t->n_traces++;
	}
	return 0;
}

/* The other end of addr's point-to-point subnet if it was seen, or NONE. */
static size_t mate(struct fq_topo *t, size_t a)
{
	const unsigned char *k = t->addrs[a].key;
	unsigned char b[4];
	char s[INET_ADDRSTRLEN];
	unsigned low = k[16] & 3;

	if (k[0] != 0 || t->p2p < 0)
		return NONE;
	memcpy(b, k + 13, 4);
	if (t->p2p == 30 && (low == 1 || low == 2))
		b[3] ^= 3;
	else if (t->p2p == 30)
		return NONE;
	else
		b[3] ^= 1;
	if (!inet_ntop(AF_INET, b, s, sizeof(s)))
		return NONE;
	return topo_map_get(&t->addr_map, s);
}

static void set_anchor(struct fq_topo *t, size_t nic, size_t a)
{
	if (a == NONE)
		return;
	if (t->nics[nic].anchor == NONE)
		t->nics[nic].anchor = a;
	unite(t, t->nics[nic].anchor, a);
}

/* Rules (a) to (d) of topology.h. */
static void resolve_aliases(struct fq_topo *t)
{
	for (size_t i = 0; i < t->n_traces; i++) {
		struct ttrace *tr = &t->traces[i];

		if (!tr->n_hops)
			continue;
		set_anchor(t, tr->src, tr->hops[0]);
		if (tr->reached)
			set_anchor(t, tr->dst, tr->hops[tr->n_hops - 1]);
		for (size_t k = 1; k < tr->n_hops; k++) {
			size_t z = tr->hops[k], p = tr->hops[k - 1];

			if (z == NONE || p == NONE || z == p)
				continue;
			if (t->addrs[z].pred == NONE)
				t->addrs[z].pred = p;
			unite(t, t->addrs[z].pred, p);
			unite(t, mate(t, z), p);
		}
	}
	for (size_t i = 0; t->decl && i < t->decl->n_switches; i++) {
		const struct fq_topo_decl_switch *d = &t->decl->switches[i];
		size_t first = NONE;

		for (size_t j = 0; j < d->n_addresses; j++) {
			size_t a = topo_map_get(&t->addr_map, d->addresses[j]);

			if (first == NONE)
				first = a;
			unite(t, first, a);
		}
	}
}

static int addr_cmp_key(const struct taddr *x, const struct taddr *y)
{
	int c = memcmp(x->key, y->key, sizeof(x->key));

	return c ? c : strcmp(x->s, y->s);
}

static int addr_idx_cmp(const void *a, const void *b, void *arg)
{
	const struct fq_topo *t = arg;

	return addr_cmp_key(&t->addrs[*(const size_t *)a], &t->addrs[*(const size_t *)b]);
}

static int push(size_t **arr, size_t *n, size_t *cap, size_t v)
{
	for (size_t i = 0; i < *n; i++)
		if ((*arr)[i] == v)
			return 0;
	if (topo_grow((void **)arr, cap, *n, sizeof(size_t)) < 0)
		return -ENOMEM;
	(*arr)[(*n)++] = v;
	return 0;
}

/* One switch per union-find root, addresses numerically sorted. */
static int make_switches(struct fq_topo *t)
{
	size_t *root_sw = malloc((t->n_addrs ? t->n_addrs : 1) * sizeof(size_t));

	if (!root_sw || !(t->sw = calloc(t->n_addrs ? t->n_addrs : 1, sizeof(*t->sw)))) {
		free(root_sw);
		return -ENOMEM;
	}
	for (size_t a = 0; a < t->n_addrs; a++)
		root_sw[a] = NONE;
	for (size_t a = 0; a < t->n_addrs; a++) {
		size_t r = topo_find(t, a);
		struct tswitch *s;

		if (root_sw[r] == NONE) {
			root_sw[r] = t->n_sw;
			t->sw[t->n_sw++].decl = NONE;
		}
		s = &t->sw[t->addrs[a].sw = root_sw[r]];
		if (push(&s->addrs, &s->n_addrs, &s->cap_addrs, a) < 0) {
			free(root_sw);
			return -ENOMEM;
		}
	}
	free(root_sw);
	for (size_t i = 0; i < t->n_sw; i++) {
		topo_sort(t->sw[i].addrs, t->sw[i].n_addrs, sizeof(size_t), addr_idx_cmp, t);
	}
	for (size_t i = 0; i < t->n_nics; i++) {
		struct tnic *n = &t->nics[i];

		if (n->anchor != NONE) {
			n->sw = t->addrs[n->anchor].sw;
			t->sw[n->sw].leaf = true;
		}
	}
	for (size_t i = 0; i < t->n_traces; i++) {
		struct ttrace *tr = &t->traces[i];
		size_t *fh = &t->nics[tr->src].first_hop;

		if (tr->n_hops && tr->hops[0] != NONE &&
		    (*fh == NONE || addr_cmp_key(&t->addrs[tr->hops[0]], &t->addrs[*fh]) < 0))
			*fh = tr->hops[0];
	}
	return 0;
}

size_t topo_link_of(struct fq_topo *t, size_t a, size_t b)
{
	char key[48];

	snprintf(key, sizeof(key), "%zu-%zu", a < b ? a : b, a < b ? b : a);
	return topo_map_get(&t->link_map, key);
}

/* The link between switches a and b, made if new; NONE on -ENOMEM. */
static size_t link_upsert(struct fq_topo *t, size_t a, size_t b)
{
	size_t i = topo_link_of(t, a, b);
	char key[48];

	if (i != NONE)
		return i;
	snprintf(key, sizeof(key), "%zu-%zu", a < b ? a : b, a < b ? b : a);
	if (topo_grow((void **)&t->links, &t->cap_links, t->n_links, sizeof(*t->links)) < 0 ||
	    topo_map_put(&t->link_map, key, t->n_links) < 0)
		return NONE;
	t->links[t->n_links] = (struct tlink){.pub = {.a = a < b ? a : b, .b = a < b ? b : a}};
	return t->n_links++;
}

static int link_side(struct fq_topo *t, size_t l, size_t addr)
{
	struct tlink *k = &t->links[l];
	int s = t->addrs[addr].sw == k->pub.a ? 0 : 1;

	return push(&k->side[s], &k->n_side[s], &k->cap_side[s], addr);
}

/* A link for each pair of answering hops on different switches, with the
 * later hop's address on its side and, by rule (c), its mate on the other. */
static int make_links(struct fq_topo *t)
{
	for (size_t i = 0; i < t->n_traces; i++) {
		struct ttrace *tr = &t->traces[i];

		for (size_t k = 1; k < tr->n_hops; k++) {
			size_t z = tr->hops[k], p = tr->hops[k - 1], l, m;

			if (z == NONE || p == NONE || t->addrs[z].sw == t->addrs[p].sw)
				continue;
			if ((l = link_upsert(t, t->addrs[p].sw, t->addrs[z].sw)) == NONE ||
			    link_side(t, l, z) < 0)
				return -ENOMEM;
			m = mate(t, z);
			if (m != NONE && t->addrs[m].sw == t->addrs[p].sw && link_side(t, l, m) < 0)
				return -ENOMEM;
		}
	}
	return 0;
}

/* Tiers by breadth-first search from the leaves over the links. */
static int make_tiers(struct fq_topo *t)
{
	size_t *queue = malloc((t->n_sw ? t->n_sw : 1) * sizeof(size_t)), head = 0, tail = 0;
	static const char *const roles[] = {"switch", "leaf", "spine", "core"};

	if (!queue)
		return -ENOMEM;
	for (size_t i = 0; i < t->n_sw; i++)
		if (t->sw[i].leaf) {
			t->sw[i].pub.tier = 1;
			queue[tail++] = i;
		}
	while (head < tail) {
		size_t s = queue[head++];

		for (size_t l = 0; l < t->n_links; l++) {
			size_t a = t->links[l].pub.a, b = t->links[l].pub.b,
			       o = a == s   ? b
				   : b == s ? a
					    : NONE;

			if (o != NONE && !t->sw[o].pub.tier) {
				t->sw[o].pub.tier = t->sw[s].pub.tier + 1;
				queue[tail++] = o;
			}
		}
	}
	free(queue);
	for (size_t i = 0; i < t->n_sw; i++)
		t->sw[i].pub.role = roles[t->sw[i].pub.tier < 3 ? t->sw[i].pub.tier : 3];
	return 0;
}

static int sw_cmp(const void *a, const void *b, void *arg)
{
	(void)arg;
	return strcmp(((const struct tswitch *)a)->pub.name, ((const struct tswitch *)b)->pub.name);
}

static int link_cmp(const void *a, const void *b, void *arg)
{
	(void)arg;
	return strcmp(((const struct tlink *)a)->pub.name, ((const struct tlink *)b)->pub.name);
}

static int hl_cmp(const void *a, const void *b, void *arg)
{
	(void)arg;
	const struct fq_topo_host_link *x = &((const struct thl *)a)->pub, *y = &((const struct thl *)b)->pub;
	int c = strcmp(x->node, y->node);

	return c ? c : strcmp(x->nic, y->nic);
}

/* Names every switch, sorts the switches, links and host links by name,
 * and points everything at the new indexes. */
static int name_and_sort(struct fq_topo *t)
{
	size_t *old_to_new = malloc((t->n_sw ? t->n_sw : 1) * sizeof(size_t));
	int rc = -ENOMEM;

	if (!old_to_new || (rc = topo_declared_names(t)) < 0)
		goto out;
	rc = -ENOMEM;
	for (size_t i = 0; i < t->n_sw; i++) {
		struct tswitch *s = &t->sw[i];

		s->pub.n_addresses = s->n_addrs;
		if (!(s->pub.addresses = topo_alloc(t, s->n_addrs * sizeof(char *))))
			goto out;
		for (size_t j = 0; j < s->n_addrs; j++)
			((const char **)s->pub.addresses)[j] = t->addrs[s->addrs[j]].s;
		if (!s->pub.name &&
		    !(s->pub.name = topo_printf(t, "%s@%s", s->pub.role, t->addrs[s->addrs[0]].s)))
			goto out;
		s->old = i;
	}
	topo_sort(t->sw, t->n_sw, sizeof(*t->sw), sw_cmp, NULL);
	for (size_t i = 0; i < t->n_sw; i++)
		old_to_new[t->sw[i].old] = i;
	for (size_t a = 0; a < t->n_addrs; a++)
		t->addrs[a].sw = old_to_new[t->addrs[a].sw];
	for (size_t i = 0; i < t->n_nics; i++)
		if (t->nics[i].sw != NONE)
			t->nics[i].sw = old_to_new[t->nics[i].sw];
	fq_strmap_clear(&t->link_map, NULL);
	for (size_t l = 0; l < t->n_links; l++) {
		struct tlink *k = &t->links[l];
		size_t a = old_to_new[k->pub.a], b = old_to_new[k->pub.b];

		if (a > b) { /* a's name first: swap the sides too */
			size_t *sv = k->side[0], n = k->n_side[0];

			k->side[0] = k->side[1], k->n_side[0] = k->n_side[1];
			k->side[1] = sv, k->n_side[1] = n;
		}
		k->pub.a = a < b ? a : b;
		k->pub.b = a < b ? b : a;
		if (!(k->pub.name =
			  topo_printf(t, "%s~%s", t->sw[k->pub.a].pub.name, t->sw[k->pub.b].pub.name)))
			goto out;
		for (int s = 0; s < 2; s++) {
			const char **names = topo_alloc(t, k->n_side[s] * sizeof(char *));

			if (!names)
				goto out;
			topo_sort(k->side[s], k->n_side[s], sizeof(size_t), addr_idx_cmp, t);
			for (size_t j = 0; j < k->n_side[s]; j++)
				names[j] = t->addrs[k->side[s][j]].s;
			*(s ? &k->pub.b_addresses : &k->pub.a_addresses) = names;
			*(s ? &k->pub.n_b : &k->pub.n_a) = k->n_side[s];
		}
	}
	topo_sort(t->links, t->n_links, sizeof(*t->links), link_cmp, NULL);
	for (size_t l = 0; l < t->n_links; l++) {
		char key[48];

		snprintf(key, sizeof(key), "%zu-%zu", t->links[l].pub.a, t->links[l].pub.b);
		if (topo_map_put(&t->link_map, key, l) < 0)
			goto out;
	}
	if (!(t->hls = topo_alloc(t, t->n_nics * sizeof(*t->hls))))
		goto out;
	for (size_t i = 0; i < t->n_nics; i++) {
		struct tnic *n = &t->nics[i];
		struct thl *h = &t->hls[t->n_hls];

		if (n->sw == NONE)
			continue;
		*h = (struct thl){.nic = i, .pub = {.node = n->node, .nic = n->nic, .sw = n->sw}};
		h->pub.switch_address = n->first_hop == NONE ? NULL : t->addrs[n->first_hop].s;
		if (!(h->pub.name = topo_printf(t, "%s~%s", n->name, t->sw[n->sw].pub.name)))
			goto out;
		t->n_hls++;
	}
	topo_sort(t->hls, t->n_hls, sizeof(*t->hls), hl_cmp, NULL);
	for (size_t i = 0; i < t->n_hls; i++)
		t->nics[t->hls[i].nic].hl = i;
	rc = 0;
out:
	free(old_to_new);
	return rc;
}

int fq_topo_build(const struct fq_topo_trace *traces, size_t n, const struct fq_topo_decl *decl,
		  const struct fq_topo_opts *opts, struct fq_topo **out)
{
	struct fq_topo *t;
	int rc = -ENOMEM;

	*out = NULL;
	if (n > FQ_TOPO_MAX_TRACES)
		return -EINVAL;
	if (!(t = calloc(1, sizeof(*t))))
		return -ENOMEM;
	t->decl = decl;
	t->p2p = opts && opts->p2p_prefix ? opts->p2p_prefix : 31;
	if (t->p2p != 31 && t->p2p != 30)
		t->p2p = -1;
	if (!(t->traces = topo_alloc(t, n * sizeof(*t->traces))) || (rc = take_traces(t, traces, n)) < 0)
		goto fail;
	resolve_aliases(t);
	if ((rc = make_switches(t)) < 0 || (rc = make_links(t)) < 0 || (rc = make_tiers(t)) < 0 ||
	    (rc = name_and_sort(t)) < 0 || (rc = topo_make_paths(t)) < 0 ||
	    (decl && (rc = topo_check(t)) < 0) ||
	    (opts && opts->floors && (rc = topo_delay_check(t, opts->floors, opts->n_floors)) < 0))
		goto fail;
	topo_sort_diffs(t);
	t->decl = NULL;
	*out = t;
	return 0;
fail:
	fq_topo_destroy(t);
	return rc;
}

void fq_topo_destroy(struct fq_topo *t)
{
	if (!t)
		return;
	for (size_t i = 0; t->sw && i < t->n_sw; i++)
		free(t->sw[i].addrs);
	for (size_t i = 0; i < t->n_links; i++) {
		free(t->links[i].side[0]);
		free(t->links[i].side[1]);
	}
	for (size_t i = 0; i < t->n_blocks; i++)
		free(t->blocks[i]);
	fq_strmap_clear(&t->addr_map, NULL);
	fq_strmap_clear(&t->nic_map, NULL);
	fq_strmap_clear(&t->path_map, NULL);
	fq_strmap_clear(&t->link_map, NULL);
	free(t->blocks);
	free(t->addrs);
	free(t->nics);
	free(t->sw);
	free(t->links);
	free(t->diffs);
	free(t);
}
