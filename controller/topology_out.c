/* topology_out: declared names, the topology check, accessors and JSON
 * (topology.h). */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/topology_int.h"

/* The discovered switch holding one of declared switch i's addresses (by
 * rule (d) all those seen are one), or NONE. */
static size_t decl_switch(struct fq_topo *t, size_t i, const char **addr)
{
	const struct fq_topo_decl_switch *d = &t->decl->switches[i];

	for (size_t j = 0; j < d->n_addresses; j++) {
		size_t a = topo_map_get(&t->addr_map, d->addresses[j]);

		if (a != NONE) {
			if (addr)
				*addr = d->addresses[j];
			return t->addrs[a].sw;
		}
	}
	return NONE;
}

int topo_declared_names(struct fq_topo *t)
{
	for (size_t i = 0; t->decl && i < t->decl->n_switches; i++) {
		size_t s = decl_switch(t, i, NULL);

		if (s == NONE || t->sw[s].decl != NONE)
			continue;
		t->sw[s].decl = i;
		if (!(t->sw[s].pub.name = topo_strdup(t, t->decl->switches[i].name)))
			return -ENOMEM;
	}
	return 0;
}

int topo_diff(struct fq_topo *t, enum fq_topo_diff_kind kind, char *text)
{
	if (!text || topo_grow((void **)&t->diffs, &t->cap_diffs, t->n_diffs, sizeof(*t->diffs)) < 0)
		return -ENOMEM;
	t->diffs[t->n_diffs++] = (struct fq_topo_diff){kind, text};
	return 0;
}

static int diff_cmp(const void *a, const void *b, void *arg)
{
	(void)arg;
	const struct fq_topo_diff *x = a, *y = b;

	return x->kind != y->kind ? (int)x->kind - (int)y->kind : strcmp(x->text, y->text);
}

static const char *lesser(const char *a, const char *b)
{
	return strcmp(a, b) < 0 ? a : b;
}

static const char *greater(const char *a, const char *b)
{
	return strcmp(a, b) < 0 ? b : a;
}

static int check_switches(struct fq_topo *t, const size_t *dsw)
{
	const struct fq_topo_decl *d = t->decl;
	int rc = 0;

	for (size_t i = 0; !rc && i < d->n_switches; i++) {
		const char *mine = NULL, *theirs = NULL;
		size_t s = dsw[i], o;

		if (s == NONE || (o = t->sw[s].decl) == i)
			continue;
		decl_switch(t, i, &mine);
		decl_switch(t, o, &theirs);
		rc = topo_diff(
		    t, FQ_TOPO_ADDRESS_CONFLICT,
		    topo_printf(
			t,
			"%s and %s are declared as two switches, but traces show %s's %s and %s's %s "
			"on one switch: an address on the wrong switch in the file, or a cabling error",
			d->switches[o].name, d->switches[i].name, d->switches[o].name, theirs,
			d->switches[i].name, mine));
	}
	for (size_t s = 0; !rc && s < t->n_sw; s++) {
		const struct fq_topo_switch *p = &t->sw[s].pub;

		if (t->sw[s].decl != NONE)
			continue;
		rc = topo_diff(
		    t, FQ_TOPO_SWITCH_UNDECLARED,
		    topo_printf(t,
				"%s: a switch seen (tier %d, %zu address%s) that no declared address names",
				p->name, p->tier, p->n_addresses, p->n_addresses == 1 ? "" : "es"));
	}
	return rc;
}

static int check_hosts(struct fq_topo *t, const size_t *dsw)
{
	const struct fq_topo_decl *d = t->decl;
	int rc = 0;

	for (size_t i = 0; !rc && i < d->n_hosts; i++) {
		const struct fq_topo_decl_host *h = &d->hosts[i];
		const char *want = d->switches[h->sw].name;
		char *key = topo_printf(t, "%s/%s", h->node, h->nic);
		size_t n = key ? topo_map_get(&t->nic_map, key) : NONE;

		if (!key)
			return -ENOMEM;
		if (n == NONE)
			rc = topo_diff(
			    t, FQ_TOPO_HOST_NOT_SEEN,
			    topo_printf(
				t,
				"%s: declared on %s, no trace from or to it (agent down or NIC not probed)",
				key, want));
		else if (t->nics[n].sw != NONE && t->nics[n].sw != dsw[h->sw])
			rc = topo_diff(t, FQ_TOPO_HOST_MOVED,
				       topo_printf(t, "%s plugs into %s, declared %s", key,
						   t->sw[t->nics[n].sw].pub.name, want));
	}
	return rc;
}

static int check_links(struct fq_topo *t, const size_t *dsw)
{
	const struct fq_topo_decl *d = t->decl;
	struct fq_strmap declared = {0};
	int rc = 0;

	for (size_t i = 0; !rc && i < d->n_links; i++) {
		size_t a = dsw[d->links[i].a], b = dsw[d->links[i].b];
		const char *na = d->switches[d->links[i].a].name, *nb = d->switches[d->links[i].b].name;
		char key[48];

		if (a == NONE || b == NONE || a == b)
			continue;
		snprintf(key, sizeof(key), "%zu-%zu", a < b ? a : b, a < b ? b : a);
		if ((rc = topo_map_put(&declared, key, i)) < 0)
			break;
		if (topo_link_of(t, a, b) == NONE)
			rc = topo_diff(
			    t, FQ_TOPO_LINK_NOT_SEEN,
			    topo_printf(
				t,
				"%s~%s: declared, crossed by no trace (lower severity: ECMP may simply "
				"not have hashed any probe onto it; a cable down if it stays unseen)",
				lesser(na, nb), greater(na, nb)));
	}
	for (size_t l = 0; !rc && l < t->n_links; l++) {
		const struct fq_topo_link *k = &t->links[l].pub;
		char key[48];

		if (t->sw[k->a].decl == NONE || t->sw[k->b].decl == NONE)
			continue; /* switch_undeclared says it */
		snprintf(key, sizeof(key), "%zu-%zu", k->a, k->b);
		if (topo_map_get(&declared, key) == NONE)
			rc = topo_diff(
			    t, FQ_TOPO_LINK_UNEXPECTED,
			    topo_printf(t, "%s: traces cross a link that is not declared", k->name));
	}
	fq_strmap_clear(&declared, NULL);
	return rc;
}

/* The differences between what traces show and the declared topology. */
int topo_check(struct fq_topo *t)
{
	size_t *dsw = malloc((t->decl->n_switches ? t->decl->n_switches : 1) * sizeof(size_t));
	int rc;

	if (!dsw)
		return -ENOMEM;
	for (size_t i = 0; i < t->decl->n_switches; i++)
		dsw[i] = decl_switch(t, i, NULL);
	if ((rc = check_switches(t, dsw)) == 0 && (rc = check_hosts(t, dsw)) == 0)
		rc = check_links(t, dsw);
	free(dsw);
	return rc;
}

void topo_sort_diffs(struct fq_topo *t)
{
	topo_sort(t->diffs, t->n_diffs, sizeof(*t->diffs), diff_cmp, NULL);
}

const char *fq_topo_diff_kind_name(enum fq_topo_diff_kind k)
{
	static const char *const names[] = {"host_moved",        "link_unexpected", "link_not_seen",
					    "switch_undeclared", "host_not_seen",   "address_conflict",
					    "delay_disagrees"};

	return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

size_t fq_topo_switch_count(const struct fq_topo *t)
{
	return t->n_sw;
}

const struct fq_topo_switch *fq_topo_switch_at(const struct fq_topo *t, size_t i)
{
	return i < t->n_sw ? &t->sw[i].pub : NULL;
}

size_t fq_topo_link_count(const struct fq_topo *t)
{
	return t->n_links;
}

const struct fq_topo_link *fq_topo_link_at(const struct fq_topo *t, size_t i)
{
	return i < t->n_links ? &t->links[i].pub : NULL;
}

size_t fq_topo_host_link_count(const struct fq_topo *t)
{
	return t->n_hls;
}

const struct fq_topo_host_link *fq_topo_host_link_at(const struct fq_topo *t, size_t i)
{
	return i < t->n_hls ? &t->hls[i].pub : NULL;
}

size_t fq_topo_path_count(const struct fq_topo *t)
{
	return t->n_paths;
}

const struct fq_topo_path *fq_topo_path_at(const struct fq_topo *t, size_t i)
{
	return i < t->n_paths ? &t->paths[i] : NULL;
}

size_t fq_topo_diff_count(const struct fq_topo *t)
{
	return t->n_diffs;
}

const struct fq_topo_diff *fq_topo_diff_at(const struct fq_topo *t, size_t i)
{
	return i < t->n_diffs ? &t->diffs[i] : NULL;
}

const struct fq_topo_switch *fq_topo_switch_find(const struct fq_topo *t, const char *name_or_address)
{
	size_t a = topo_map_get(&t->addr_map, name_or_address);

	if (a != NONE)
		return &t->sw[t->addrs[a].sw].pub;
	for (size_t i = 0; i < t->n_sw; i++)
		if (!strcmp(t->sw[i].pub.name, name_or_address))
			return &t->sw[i].pub;
	return NULL;
}

size_t fq_topo_traces(const struct fq_topo *t)
{
	return t->n_traces;
}

size_t fq_topo_rejected(const struct fq_topo *t)
{
	return t->rejected;
}

size_t fq_topo_unresolved_hops(const struct fq_topo *t)
{
	return t->unresolved;
}

/* json-c's adders fail only on allocation; a NULL anywhere makes the
 * whole answer NULL (checked once, at the end, by counting). */
static bool add(struct json_object *o, const char *key, struct json_object *v, bool *oom)
{
	if (!v || json_object_object_add(o, key, v) < 0) {
		json_object_put(v);
		*oom = true;
	}
	return !*oom;
}

static struct json_object *strings(const char *const *s, size_t n, bool *oom)
{
	struct json_object *a = json_object_new_array();

	for (size_t i = 0; a && i < n; i++) {
		struct json_object *v = json_object_new_string(s[i]);

		if (!v || json_object_array_add(a, v) < 0) {
			json_object_put(v);
			*oom = true;
		}
	}
	if (!a)
		*oom = true;
	return a;
}

static struct json_object *item(struct json_object *arr, bool *oom)
{
	struct json_object *o = json_object_new_object();

	if (!o || json_object_array_add(arr, o) < 0) {
		json_object_put(o);
		*oom = true;
		return NULL;
	}
	return o;
}

static void json_parts(const struct fq_topo *t, struct json_object *sw, struct json_object *hl,
		       struct json_object *ln, bool *oom)
{
	struct json_object *o;

	for (size_t i = 0; !*oom && i < t->n_sw && (o = item(sw, oom)); i++) {
		const struct fq_topo_switch *s = &t->sw[i].pub;

		add(o, "name", json_object_new_string(s->name), oom);
		add(o, "role", json_object_new_string(s->role), oom);
		if (s->tier)
			add(o, "tier", json_object_new_int(s->tier), oom);
		else if (json_object_object_add(o, "tier", NULL) < 0) /* null: unknown */
			*oom = true;
		add(o, "addresses", strings(s->addresses, s->n_addresses, oom), oom);
	}
	for (size_t i = 0; !*oom && i < t->n_hls && (o = item(hl, oom)); i++) {
		const struct fq_topo_host_link *h = &t->hls[i].pub;

		add(o, "node", json_object_new_string(h->node), oom);
		add(o, "nic", json_object_new_string(h->nic), oom);
		add(o, "switch", json_object_new_string(t->sw[h->sw].pub.name), oom);
		if (h->switch_address)
			add(o, "switch_address", json_object_new_string(h->switch_address), oom);
		else if (json_object_object_add(o, "switch_address", NULL) < 0) /* null: unknown */
			*oom = true;
	}
	for (size_t i = 0; !*oom && i < t->n_links && (o = item(ln, oom)); i++) {
		const struct fq_topo_link *k = &t->links[i].pub;

		add(o, "a", json_object_new_string(t->sw[k->a].pub.name), oom);
		add(o, "b", json_object_new_string(t->sw[k->b].pub.name), oom);
		add(o, "a_addresses", strings(k->a_addresses, k->n_a, oom), oom);
		add(o, "b_addresses", strings(k->b_addresses, k->n_b, oom), oom);
		add(o, "probe_paths", json_object_new_int64((int64_t)k->probe_paths), oom);
	}
}

static void json_paths(const struct fq_topo *t, struct json_object *pa, struct json_object *df, bool *oom)
{
	struct json_object *o;

	/* each NIC pair's flow 0 (the route an agent before flows traced);
	 * the other flows' are counted in "flow_paths" and the links'
	 * "probe_paths" */
	for (size_t i = 0; !*oom && i < t->n_paths; i++) {
		const struct fq_topo_path *p = &t->paths[i];
		struct json_object *route;

		if (p->flow || !(o = item(pa, oom)))
			continue;
		route = json_object_new_array();

		add(o, "node", json_object_new_string(p->node), oom);
		add(o, "nic", json_object_new_string(p->nic), oom);
		add(o, "remote_node", json_object_new_string(p->remote_node), oom);
		add(o, "remote_nic", json_object_new_string(p->remote_nic), oom);
		for (size_t j = 0; route && j < p->n_route; j++)
			if (json_object_array_add(route, json_object_new_string(p->route[j].name)) < 0)
				*oom = true;
		add(o, "route", route, oom);
		add(o, "complete", json_object_new_boolean(p->complete), oom);
	}
	for (size_t i = 0; !*oom && i < t->n_diffs && (o = item(df, oom)); i++) {
		add(o, "kind", json_object_new_string(fq_topo_diff_kind_name(t->diffs[i].kind)), oom);
		add(o, "text", json_object_new_string(t->diffs[i].text), oom);
	}
}

static void json_delay(const struct fq_topo *t, struct json_object *dg, bool *oom)
{
	struct json_object *o;

	for (size_t i = 0; !*oom && i < t->n_groups && (o = item(dg, oom)); i++) {
		const struct fq_topo_delay_group *g = &t->groups[i];

		add(o, "nics", strings(g->nics, g->n_nics, oom), oom);
		add(o, "switches", strings(g->switches, g->n_switches, oom), oom);
		add(o, "floor_ns", json_object_new_int64(g->floor_ns), oom);
	}
}

/* Paths of flows other than 0. */
static size_t flow_paths(const struct fq_topo *t)
{
	size_t n = 0;

	for (size_t i = 0; i < t->n_paths; i++)
		n += t->paths[i].flow != 0;
	return n;
}

struct json_object *fq_topo_json(const struct fq_topo *t)
{
	struct json_object *o = json_object_new_object(), *sw = json_object_new_array(),
			   *hl = json_object_new_array(), *ln = json_object_new_array(),
			   *pa = json_object_new_array(), *df = json_object_new_array(),
			   *dg = json_object_new_array();
	bool oom = !o;

	if (!o) {
		json_object_put(sw), json_object_put(hl), json_object_put(ln);
		json_object_put(pa), json_object_put(df), json_object_put(dg);
	} else {
		add(o, "switches", sw, &oom);
		add(o, "host_links", hl, &oom);
		add(o, "links", ln, &oom);
		add(o, "paths", pa, &oom);
		add(o, "differences", df, &oom);
		add(o, "traces", json_object_new_int64((int64_t)t->n_traces), &oom);
		add(o, "traces_rejected", json_object_new_int64((int64_t)t->rejected), &oom);
		add(o, "unresolved_hops", json_object_new_int64((int64_t)t->unresolved), &oom);
		add(o, "delay_groups", dg, &oom);
		add(o, "delay_unresolved", json_object_new_int64((int64_t)t->delay_unresolved), &oom);
		add(o, "flow_paths", json_object_new_int64((int64_t)flow_paths(t)), &oom);
	}
	if (!oom) {
		json_parts(t, sw, hl, ln, &oom);
		json_paths(t, pa, df, &oom);
		json_delay(t, dg, &oom);
	}
	if (oom) {
		json_object_put(o);
		return NULL;
	}
	return o;
}
