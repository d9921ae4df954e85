/*
 * test-topology: controller/topology.h. A small model of a routed Clos
 * fabric (point-to-point /31 links, each router answering from its inbound
 * interface, ECMP by a hash of the pair's 5-tuple at each switch) makes the
 * traces an agent would; the topology inferred from them must be the
 * model's exactly: every switch and its addresses seen, every link crossed
 * with the addresses seen on each side, every host attachment, the tiers,
 * every route. Then silent routers, far ends that do not echo, a moved
 * cable and an edited declared file, and the file parser's errors.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/topology.h"
#include "tests/controller/topo-model.h"
#include "tests/unit/tap.h"

static int mismatch(int *bad, const char *what, const char *want)
{
	if ((*bad)++ < 5)
		diag("mismatch: %s (want %s)", what, want);
	return 0;
}

static int same_list(const char *const *got, size_t n, const char **want, int nw)
{
	if ((int)n != nw)
		return 0;
	for (int i = 0; i < nw; i++)
		if (strcmp(got[i], want[i]))
			return 0;
	return 1;
}

/* Switches, tiers and addresses: the model's, exactly. */
static int check_switches(const struct fq_topo *t, bool declared, int *want_count)
{
	int bad = 0, n = 0;
	char name[80];
	const char *a[MAXSW * MAXN];

	for (int s = 0; s < M.n_sw; s++) {
		const struct fq_topo_switch *got;
		int na = seen_addrs(s, a);

		if (!na)
			continue;
		n++;
		want_name(s, declared, name, sizeof(name));
		got = fq_topo_switch_find(t, a[0]);
		if (!got || strcmp(got->name, name))
			mismatch(&bad, got ? got->name : "no switch", name);
		else if (got->tier != M.tier[s] || !same_list(got->addresses, got->n_addresses, a, na))
			mismatch(&bad, got->name, "its tier and addresses");
	}
	if ((int)fq_topo_switch_count(t) != n)
		mismatch(&bad, "switch count", "the model's");
	*want_count = n;
	return bad;
}

/* Links crossed between two answering hops, with each side's addresses. */
static int check_links(const struct fq_topo *t, bool declared, int *want_count)
{
	int bad = 0, n = 0;

	for (int l = 0; l < M.n_links; l++) {
		char na[80], nb[80], want[170];
		const char *sa[1] = {M.link[l].addr[0]}, *sb[1] = {M.link[l].addr[1]};
		bool crossed = false, seen_a = false, seen_b = false, found = false;

		for (size_t i = 0; i < T.n; i++)
			for (size_t k = 1; k < T.tr[i].n_hops && k < MAXHOP; k++) {
				if (!*T.hops[i][k] || !*T.hops[i][k - 1] || T.via[i][k] != l)
					continue;
				crossed = true;
			}
		for (size_t i = 0; i < T.n; i++)
			for (size_t k = 0; k < T.tr[i].n_hops && k < MAXHOP; k++) {
				seen_a |= !strcmp(T.hops[i][k], M.link[l].addr[0]);
				seen_b |= !strcmp(T.hops[i][k], M.link[l].addr[1]);
			}
		if (!crossed)
			continue;
		n++;
		want_name(M.link[l].a, declared, na, sizeof(na));
		want_name(M.link[l].b, declared, nb, sizeof(nb));
		snprintf(want, sizeof(want), "%s~%s", strcmp(na, nb) < 0 ? na : nb,
			 strcmp(na, nb) < 0 ? nb : na);
		for (size_t i = 0; i < fq_topo_link_count(t); i++) {
			const struct fq_topo_link *k = fq_topo_link_at(t, i);
			bool flip = strcmp(na, nb) > 0;

			if (strcmp(k->name, want))
				continue;
			found = true;
			if (!same_list(flip ? k->b_addresses : k->a_addresses, flip ? k->n_b : k->n_a, sa,
				       seen_a) ||
			    !same_list(flip ? k->a_addresses : k->b_addresses, flip ? k->n_a : k->n_b, sb,
				       seen_b))
				mismatch(&bad, k->name, "the addresses seen on each side");
		}
		if (!found)
			mismatch(&bad, "no link", want);
	}
	if ((int)fq_topo_link_count(t) != n)
		mismatch(&bad, "link count", "the model's");
	*want_count = n;
	return bad;
}

/* Every route: the model's, cut at the first silent hop. */
static int check_paths(const struct fq_topo *t, bool declared, int *incomplete)
{
	int bad = 0;

	*incomplete = 0;
	for (size_t i = 0; i < T.n; i++) {
		const struct fq_topo_trace *tr = &T.tr[i];
		const struct fq_topo_path *p =
		    fq_topo_flow_path_find(t, tr->node, tr->nic, tr->remote_node, tr->remote_nic, tr->flow);
		char want[MAXHOP * 2 + 4][200], src[40], dst[40], a[80], b[80];
		size_t n = 0, k;
		bool ok_route;

		snprintf(src, sizeof(src), "%s/%s", tr->node, tr->nic);
		snprintf(dst, sizeof(dst), "%s/%s", tr->remote_node, tr->remote_nic);
		snprintf(want[n++], 200, "%s", src);
		for (k = 0; k < tr->n_hops && *T.hops[i][k]; k++) {
			want_name(T.sw[i][k], declared, a, sizeof(a));
			if (k == 0) {
				snprintf(want[n++], 200, "%s~%s", src, a);
			} else {
				want_name(T.sw[i][k - 1], declared, b, sizeof(b));
				snprintf(want[n++], 200, "%s~%s", strcmp(a, b) < 0 ? a : b,
					 strcmp(a, b) < 0 ? b : a);
			}
			snprintf(want[n++], 200, "%s", a);
		}
		if (k == tr->n_hops && tr->reached) {
			snprintf(want[n++], 200, "%s~%s", dst, a);
			snprintf(want[n++], 200, "%s", dst);
		}
		*incomplete += !(k == tr->n_hops && tr->reached);
		ok_route = p && p->n_route == n && p->complete == (k == tr->n_hops && tr->reached);
		for (size_t j = 0; ok_route && j < n; j++)
			ok_route = !strcmp(p->route[j].name, want[j]);
		if (!ok_route)
			mismatch(&bad, p && p->n_route ? p->route[p->n_route - 1].name : "no path",
				 want[n - 1]);
	}
	if (fq_topo_path_count(t) != T.n)
		mismatch(&bad, "path count", "one per trace");
	return bad;
}

/* Host attachments: every NIC that sent a trace, on its leaf, by the
 * leaf's address on its cable. */
static int check_hosts(const struct fq_topo *t, bool declared)
{
	int bad = 0;
	char want[80];

	for (int j = 0; j < M.n_nics; j++) {
		const struct fq_topo_host_link *h = NULL;

		for (size_t i = 0; i < fq_topo_host_link_count(t); i++) {
			const struct fq_topo_host_link *x = fq_topo_host_link_at(t, i);
			char name[40];

			snprintf(name, sizeof(name), "%s/%s", x->node, x->nic);
			if (!strcmp(name, M.nic[j].name))
				h = x;
		}
		want_name(M.nic[j].leaf, declared, want, sizeof(want));
		if (M.silent[M.nic[j].leaf])
			continue;
		if (!h || strcmp(fq_topo_switch_at(t, h->sw)->name, want) || !h->switch_address ||
		    strcmp(h->switch_address, M.nic[j].leaf_addr))
			mismatch(&bad, M.nic[j].name, want);
	}
	if ((int)fq_topo_host_link_count(t) != M.n_nics)
		mismatch(&bad, "host link count", "one per NIC");
	return bad;
}

/* Builds from T and checks everything against the model. */
static struct fq_topo *recover(const char *what, const struct fq_topo_decl *decl, int *switches, int *links)
{
	struct fq_topo *t = NULL;
	int incomplete;

	is_int(fq_topo_build(T.tr, T.n, decl, NULL, &t), 0, "%s: %zu traces, built", what, T.n);
	if (!t)
		return NULL;
	is_int(check_switches(t, decl != NULL, switches), 0, "%s: the %d switches, their tiers and addresses",
	       what, *switches);
	is_int(check_links(t, decl != NULL, links), 0, "%s: the %d links, each side's addresses", what,
	       *links);
	is_int(check_hosts(t, decl != NULL), 0, "%s: the %d host attachments", what, M.n_nics);
	is_int(check_paths(t, decl != NULL, &incomplete), 0, "%s: all %zu routes (%d incomplete)", what, T.n,
	       incomplete);
	return t;
}

static struct fq_topo_decl *parse(const char *text)
{
	struct fq_topo_decl *d = NULL;
	char err[256] = "";

	if (fq_topo_decl_parse(text, strlen(text), &d, err, sizeof(err)) < 0)
		diag("parse: %s", err);
	return d;
}

/* Differences of one kind; the first one's text into *text. */
static int count_diffs(const struct fq_topo *t, enum fq_topo_diff_kind kind, const char **text)
{
	int n = 0;

	for (size_t i = 0; i < fq_topo_diff_count(t); i++)
		if (fq_topo_diff_at(t, i)->kind == kind && n++ == 0 && text)
			*text = fq_topo_diff_at(t, i)->text;
	return n;
}

static void clean_fabrics(void)
{
	static const struct {
		const char *what;
		int hosts, leaves, spines, rails, pods, cores, want_sw;
	} f[] = {
	    {"4 hosts, 2 leaves, 2 spines, 1 rail", 4, 2, 2, 1, 1, 0, 4},
	    {"8 hosts, 4 leaves, 4 spines, 2 rails", 8, 4, 4, 2, 1, 0, 8},
	    {"16 hosts, 4 leaves, 2 spines, 4 rails", 16, 4, 2, 4, 1, 0, 6},
	    {"3 tiers: 8 hosts, 2 pods of 2 leaves and 2 spines, 2 cores", 8, 4, 4, 1, 2, 2, 10},
	};

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		struct fq_topo *t;
		struct fq_topo_decl *d;
		int sw, links;

		fabric(f[i].hosts, f[i].leaves, f[i].spines, f[i].rails, f[i].pods, f[i].cores);
		all_traces();
		t = recover(f[i].what, NULL, &sw, &links);
		is_int(sw, f[i].want_sw, "%s: every switch of the model carries traffic", f[i].what);
		is_int(links + uncrossed(), M.n_links, "%s: %d links crossed, %d by no trace", f[i].what,
		       links, uncrossed());
		is_int((int)fq_topo_diff_count(t), 0, "%s: no declared file, no differences", f[i].what);
		is_int((int)fq_topo_unresolved_hops(t), 0, "%s: every hop answered", f[i].what);
		fq_topo_destroy(t);

		d = parse(decl_text(-1, -1, ""));
		t = recover(f[i].what, d, &sw, &links);
		is_int((int)fq_topo_diff_count(t), uncrossed(),
		       "%s, declared: the names applied; differences: %d", f[i].what, uncrossed());
		is_int(count_diffs(t, FQ_TOPO_LINK_NOT_SEEN, NULL), uncrossed(),
		       "... each a declared link no trace crossed");
		fq_topo_destroy(t);
		fq_topo_decl_free(d);
	}
}

/* A spine that does not answer: it is not seen, the leaves still are, and
 * every route through it stops at the leaf before it. */
static void silent_router(void)
{
	struct fq_topo *t;
	int sw, links, through = 0;

	fabric(8, 4, 4, 2, 1, 0);
	M.silent[4] = true; /* spine1 */
	all_traces();
	for (size_t i = 0; i < T.n; i++)
		for (size_t k = 0; k < T.tr[i].n_hops; k++)
			through += T.sw[i][k] == 4;
	t = recover("spine1 silent", NULL, &sw, &links);
	is_int(sw, 7, "spine1 silent: the other 7 switches");
	ok(through > 0, "... %d traces crossed it", through);
	is_int((int)fq_topo_unresolved_hops(t), through, "... each an unresolved hop");
	fq_topo_destroy(t);
}

/* A far end that does not echo: routes to it are incomplete, its own
 * traces still place it. */
static void not_reached(void)
{
	struct fq_topo *t;
	const struct fq_topo_path *p;
	char leaf[80];
	int sw, links;

	fabric(4, 2, 2, 1, 1, 0);
	M.nic[0].mute = true;
	all_traces();
	t = recover("n1/rail0 does not echo", NULL, &sw, &links);
	is_int(sw, 4, "... still 4 switches");
	is_int((int)fq_topo_unresolved_hops(t), 3, "... the 3 traces to it end in an unanswered hop");
	p = fq_topo_path_find(t, "n4", "rail0", "n1", "rail0");
	want_name(0, false, leaf, sizeof(leaf));
	ok(p && !p->complete && p->n_route == 7 && !strcmp(p->route[6].name, leaf),
	   "... n4 -> n1 ends at n1's leaf, incomplete");
	p = fq_topo_path_find(t, "n1", "rail0", "n2", "rail0");
	ok(p && p->complete && p->n_route == 5, "... n1 -> n2 (same leaf): complete, 5 components");
	fq_topo_destroy(t);
}

/* A cable moved to the other leaf of its rail, against the file written
 * before. */
static void host_moved(void)
{
	struct fq_topo_decl *d;
	struct fq_topo *t;
	const char *text = NULL;
	char want[128];
	int sw, links, was;

	fabric(8, 4, 4, 2, 1, 0);
	d = parse(decl_text(-1, -1, ""));
	was = M.nic[4].leaf; /* n3/rail0 */
	M.nic[4].leaf = was ^ 1;
	snprintf(M.nic[4].leaf_addr, 32, "198.19.200.8"); /* the other leaf's port */
	all_traces();
	t = recover("n3/rail0 moved", d, &sw, &links);
	is_int(count_diffs(t, FQ_TOPO_HOST_MOVED, &text), 1, "one host_moved");
	snprintf(want, sizeof(want), "n3/rail0 plugs into %s, declared %s", M.name[was ^ 1], M.name[was]);
	is_str(text, want, "... saying where it is and where it was declared");
	is_int((int)fq_topo_diff_count(t), 1 + uncrossed(), "... and no other difference but %d links unseen",
	       uncrossed());
	fq_topo_destroy(t);
	fq_topo_decl_free(d);
}

/* The file edited: a link left out, a spine left out, a host and a link
 * that do not exist, a switch's addresses split between two names. */
static void declared_edits(void)
{
	struct fq_topo_decl *d;
	struct fq_topo *t;
	const char *text = NULL;
	static char extra[1 << 16];

	fabric(8, 4, 4, 2, 1, 0);
	all_traces();
	ok(M.link[0].a == 0 && M.link[0].b == 4, "link 0 is leaf1~spine1");

	d = parse(decl_text(-1, 0, ""));
	is_int(fq_topo_build(T.tr, T.n, d, NULL, &t), 0, "leaf1~spine1 left out of the file");
	is_int(count_diffs(t, FQ_TOPO_LINK_UNEXPECTED, &text), 1, "... one link_unexpected");
	is_str(text, "leaf1~spine1: traces cross a link that is not declared", "... naming it");
	is_int((int)fq_topo_diff_count(t), 1 + uncrossed(), "... nothing else");
	fq_topo_destroy(t);
	fq_topo_decl_free(d);

	d = parse(decl_text(7, -1, "host n99 rail0 leaf1\nlink leaf1 leaf2\n"));
	is_int(fq_topo_build(T.tr, T.n, d, NULL, &t), 0, "spine4 left out; n99 and leaf1~leaf2 added");
	is_int(count_diffs(t, FQ_TOPO_SWITCH_UNDECLARED, &text), 1, "... one switch_undeclared");
	like(text, "spine@198.18.0.7: a switch seen (tier 2, ", "... naming it by role and address (%s)",
	     text ? text : "");
	is_int(count_diffs(t, FQ_TOPO_HOST_NOT_SEEN, &text), 1, "... one host_not_seen");
	is_str(text, "n99/rail0: declared on leaf1, no trace from or to it (agent down or NIC not probed)",
	       "... naming it");
	is_int(count_diffs(t, FQ_TOPO_LINK_NOT_SEEN, &text), 1 + uncrossed(),
	       "... link_not_seen: leaf1~leaf2");
	like(text, "leaf1~leaf2: declared, crossed by no trace (lower severity: ECMP", "... %s",
	     text ? text : "");
	is_int(count_diffs(t, FQ_TOPO_LINK_UNEXPECTED, NULL), 0, "... spine4's links: not also unexpected");
	is_int((int)fq_topo_diff_count(t), 3 + uncrossed(), "... nothing else");
	fq_topo_destroy(t);
	fq_topo_decl_free(d);

	/* spine1's addresses: 198.18.0.1 (from leaf1) and .9 (leaf2) stay,
	 * .17 and .25 declared as another switch. */
	snprintf(extra, sizeof(extra), "%s", decl_text(-1, -1, ""));
	{
		char *line = strstr(extra, "switch spine1 "), *eol = strchr(line, '\n');
		static char rest[1 << 16];

		snprintf(rest, sizeof(rest), "%s", eol + 1);
		snprintf(line, (size_t)(extra + sizeof(extra) - line),
			 "switch spine1 198.18.0.1 198.18.0.9\nswitch spine1b 198.18.0.17 198.18.0.25\n%s",
			 rest);
	}
	d = parse(extra);
	is_int(fq_topo_build(T.tr, T.n, d, NULL, &t), 0,
	       "spine1's addresses split between spine1 and spine1b");
	is_int(count_diffs(t, FQ_TOPO_ADDRESS_CONFLICT, &text), 1, "... one address_conflict");
	is_str(
	    text,
	    "spine1 and spine1b are declared as two switches, but traces show spine1's 198.18.0.1 and "
	    "spine1b's 198.18.0.17 on one switch: an address on the wrong switch in the file, or a cabling "
	    "error",
	    "... naming both and an address of each");
	ok(fq_topo_switch_find(t, "spine1") && !fq_topo_switch_find(t, "spine1b"),
	   "... the switch is spine1");
	fq_topo_destroy(t);
	fq_topo_decl_free(d);
}

/* Rule (c) off: a spine between two leaves only is seen as two switches,
 * one per direction (no trace enters it by one link and leaves by the
 * other); on (the default), one. */
static void mate_rule(void)
{
	struct fq_topo_opts off = {.p2p_prefix = -1}, p30 = {.p2p_prefix = 30};
	struct fq_topo *t;
	int sw, links;

	fabric(8, 2, 2, 1, 1, 0);
	all_traces();
	fq_topo_destroy(recover("8 hosts, 2 leaves, 2 spines", NULL, &sw, &links));
	is_int(sw, 4, "... 4 switches, %d links", links);
	is_int(fq_topo_build(T.tr, T.n, NULL, &off, &t), 0, "rule (c) off: built");
	is_int((int)fq_topo_switch_count(t), 6, "... 2 leaves and each spine twice");
	is_int((int)fq_topo_link_count(t), 8, "... each half-spine linked to both leaves");
	fq_topo_destroy(t);
	fabric(4, 2, 2, 1, 1, 0);
	all_traces();
	is_int(fq_topo_build(T.tr, T.n, NULL, &p30, &t), 0, "/30 read on /31 numbering (4 hosts): built");
	ok(fq_topo_switch_count(t) < 4,
	   "... joins two cables' ends: %zu switches (why /30 is not the default)", fq_topo_switch_count(t));
	fq_topo_destroy(t);
	fabric(8, 4, 4, 2, 1, 0);
	all_traces();
	is_int(fq_topo_build(T.tr, T.n, NULL, &off, &t), 0, "rule (c) off, 4 leaves");
	is_int((int)fq_topo_switch_count(t), 8, "... (b) alone resolves every spine: 8 switches");
	fq_topo_destroy(t);
}

/* The JSON: its counts, and the same bytes whatever the traces' order. */
static void json(void)
{
	struct fq_topo *t, *t2;
	struct json_object *o, *o2, *v;
	struct fq_topo_trace rev[64];

	fabric(4, 2, 2, 1, 1, 0);
	all_traces();
	for (size_t i = 0; i < T.n; i++)
		rev[i] = T.tr[T.n - 1 - i];
	is_int(fq_topo_build(T.tr, T.n, NULL, NULL, &t), 0, "json: built");
	is_int(fq_topo_build(rev, T.n, NULL, NULL, &t2), 0, "json: built from the traces reversed");
	o = fq_topo_json(t);
	o2 = fq_topo_json(t2);
	ok(o && o2, "json: made");
	is_str(json_object_to_json_string(o), json_object_to_json_string(o2),
	       "json: the same, byte for byte");
	is_int(json_object_array_length(json_object_object_get(o, "switches")), 4, "json: 4 switches");
	is_int(json_object_array_length(json_object_object_get(o, "host_links")), 4, "json: 4 host links");
	is_int(json_object_array_length(json_object_object_get(o, "paths")), 12, "json: 12 paths");
	is_int(json_object_get_int(json_object_object_get(o, "traces")), 12, "json: 12 traces");
	is_int(json_object_get_int(json_object_object_get(o, "unresolved_hops")), 0,
	       "json: no unresolved hop");
	v = json_object_array_get_idx(json_object_object_get(o, "switches"), 0);
	is_str(json_object_to_json_string(v),
	       "{ \"name\": \"leaf@198.18.0.2\", \"role\": \"leaf\", \"tier\": 1, \"addresses\": [ "
	       "\"198.18.0.2\", \"198.19.0.0\", \"198.19.0.2\" ] }",
	       "json: the first switch, its addresses in numeric order");
	v = json_object_array_get_idx(json_object_object_get(o, "host_links"), 0);
	is_str(json_object_to_json_string(v),
	       "{ \"node\": \"n1\", \"nic\": \"rail0\", \"switch\": \"leaf@198.18.0.2\", \"switch_address\": "
	       "\"198.19.0.0\" }",
	       "json: the first host link");
	json_object_put(o);
	json_object_put(o2);
	fq_topo_destroy(t);
	fq_topo_destroy(t2);
}

/* Bad traces are left out and counted; bad arguments refused. */
static void bad_traces(void)
{
	const char *hops[FQ_TOPO_MAX_HOPS + 1] = {"198.18.0.1"};
	struct fq_topo_trace tr[4] = {
	    {.node = "n1", .nic = "r0", .remote_node = "n2", .remote_nic = "r0", .hops = hops, .n_hops = 1},
	    {.node = NULL, .nic = "r0", .remote_node = "n2", .remote_nic = "r0", .hops = hops, .n_hops = 1},
	    {.node = "n1", .nic = "", .remote_node = "n2", .remote_nic = "r0", .hops = hops, .n_hops = 1},
	    {.node = "n1",
	     .nic = "r0",
	     .remote_node = "n2",
	     .remote_nic = "r0",
	     .hops = hops,
	     .n_hops = FQ_TOPO_MAX_HOPS + 1},
	};
	struct fq_topo *t;

	is_int(fq_topo_build(tr, 4, NULL, NULL, &t), 0, "bad traces: built");
	is_int((int)fq_topo_traces(t), 1, "... from the one good trace");
	is_int((int)fq_topo_rejected(t), 3, "... 3 left out: no node, empty NIC, too many hops");
	fq_topo_destroy(t);
	is_int(fq_topo_build(tr, FQ_TOPO_MAX_TRACES + 1, NULL, NULL, &t), -EINVAL,
	       "too many traces: -EINVAL");
	/* The same pair twice: the later trace's route. A router between two
	 * silent ones: a switch of no known tier. */
	{
		const char *h1[] = {"198.19.0.0", "198.18.0.1", "198.19.0.2"},
			   *h2[] = {"198.19.0.0", "", "198.18.0.9", ""};
		struct fq_topo_trace twice[2] = {
		    {.node = "n1",
		     .nic = "r0",
		     .remote_node = "n2",
		     .remote_nic = "r0",
		     .hops = h1,
		     .n_hops = 3,
		     .reached = true},
		    {.node = "n1",
		     .nic = "r0",
		     .remote_node = "n2",
		     .remote_nic = "r0",
		     .hops = h2,
		     .n_hops = 4},
		};
		const struct fq_topo_path *p;
		const struct fq_topo_switch *s;
		struct json_object *o;

		is_int(fq_topo_build(twice, 2, NULL, NULL, &t), 0, "one pair traced twice");
		is_int((int)fq_topo_traces(t), 2, "... 2 traces");
		is_int((int)fq_topo_path_count(t), 1, "... 1 path");
		p = fq_topo_path_find(t, "n1", "r0", "n2", "r0");
		ok(p && !p->complete && p->n_route == 3,
		   "... the later one's: NIC, host link, switch; incomplete");
		is_int((int)fq_topo_unresolved_hops(t), 2, "... 2 hops unanswered");
		s = fq_topo_switch_find(t, "198.18.0.9");
		ok(s && s->tier == 0 && !strcmp(s->role, "switch") && !strcmp(s->name, "switch@198.18.0.9"),
		   "... 198.18.0.9 between two silent hops: a switch of unknown tier (%s)",
		   s ? s->name : "none");
		o = fq_topo_json(t);
		like(json_object_to_json_string(o),
		     "{ \"name\": \"switch@198.18.0.9\", \"role\": \"switch\", \"tier\": null",
		     "... its tier null in JSON");
		json_object_put(o);
		is_int((int)fq_topo_switch_count(t), 4,
		       "... 4 switches: two leaves, spine@198.18.0.1, and it");
		fq_topo_destroy(t);
	}
	is_int(fq_topo_build(NULL, 0, NULL, NULL, &t), 0, "no traces: an empty topology");
	is_int((int)fq_topo_switch_count(t), 0, "... no switch");
	fq_topo_destroy(t);
}

/* The declared file's parser: what it takes, and each error's line. */
static void parser(void)
{
	static const struct {
		const char *text, *err;
		int rc;
	} bad[] = {
	    {"switch leaf1\n", "line 1: switch needs a name and at least one address", -EINVAL},
	    {"\n# c\nswitch leaf1 10.0.0.256\n", "line 3: '10.0.0.256' is not an IPv4 address", -EINVAL},
	    {"switch leaf1 10.0.0.01\n", "line 1: '10.0.0.01' is not an IPv4 address", -EINVAL},
	    {"switch leaf1 10.0.0\n", "line 1: '10.0.0' is not an IPv4 address", -EINVAL},
	    {"switch leaf1 10.0.0.1.2\n", "line 1: '10.0.0.1.2' is not an IPv4 address", -EINVAL},
	    {"switch le@f 10.0.0.1\n", "line 1: 'le@f' is not a switch name", -EINVAL},
	    {"switch leaf1 10.0.0.1\nswitch leaf1 10.0.0.3\n", "line 2: switch 'leaf1' declared twice",
	     -EINVAL},
	    {"switch leaf1 10.0.0.1\nswitch leaf2 10.0.0.1\n",
	     "line 2: address 10.0.0.1 declared twice (also on switch 'leaf1')", -EINVAL},
	    {"switch leaf1 10.0.0.1 10.0.0.1\n",
	     "line 1: address 10.0.0.1 declared twice (also on switch 'leaf1')", -EINVAL},
	    {"switch leaf1 10.0.0.1\nswitch spine1 10.0.1.1\nhost n1 rail0 leaf1\nlink leaf1 spine9\n",
	     "line 4: unknown switch 'spine9'", -EINVAL},
	    {"host n1 rail0 leaf1\nswitch leaf1 10.0.0.1\n", "line 1: unknown switch 'leaf1'", -EINVAL},
	    {"switch leaf1 10.0.0.1\nhost n1 rail0 leaf1\nhost n1 rail0 leaf1\n",
	     "line 3: host n1/rail0 declared twice", -EINVAL},
	    {"switch leaf1 10.0.0.1\nhost n1 rail0\n", "line 2: host takes NODE NIC SWITCH", -EINVAL},
	    {"switch leaf1 10.0.0.1\nhost n1 ra/il0 leaf1\n", "line 2: 'ra/il0' is not a name", -EINVAL},
	    {"switch a 10.0.0.1\nswitch b 10.0.0.3\nlink a b\nlink b a\n", "line 4: link a~b declared twice",
	     -EINVAL},
	    {"switch a 10.0.0.1\nlink a a\n", "line 2: link from switch 'a' to itself", -EINVAL},
	    {"switch a 10.0.0.1\nlink a\n", "line 2: link takes SWITCH SWITCH", -EINVAL},
	    {"router a 10.0.0.1\n", "line 1: unknown statement 'router' (switch, host or link)", -EINVAL},
	    {"switch a 10.0.0.1\n\0\n", "line 2: a NUL byte", -EINVAL},
	};
	const char *good = "# site\r\n\nswitch leaf1 10.0.0.1 10.0.0.3 # two ports\r\n"
			   "switch spine.1 10.0.1.1\n  host n1 rail_0 leaf1\nlink spine.1 leaf1";
	char err[256], big[FQ_TOPO_DECL_MAX_LINE + 64];
	struct fq_topo_decl *d;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t len = strlen(bad[i].text);

		if (strstr(bad[i].err, "NUL"))
			len = 20;
		err[0] = '\0';
		is_int(fq_topo_decl_parse(bad[i].text, len, &d, err, sizeof(err)), bad[i].rc, "refused: %s",
		       bad[i].err);
		like(err, bad[i].err, "... %s", err);
		ok(d == NULL, "... nothing returned");
	}
	memset(big, 'x', sizeof(big));
	is_int(fq_topo_decl_parse(big, sizeof(big), &d, err, sizeof(err)), -E2BIG, "a line too long: -E2BIG");
	like(err, "line 1: longer than 4096 bytes", "... %s", err);

	is_int(fq_topo_decl_parse(good, strlen(good), &d, err, sizeof(err)), 0,
	       "a good file: comments, blank lines, CRLF, no final newline (%s)", err);
	ok(d && d->n_switches == 2 && d->n_hosts == 1 && d->n_links == 1, "... 2 switches, 1 host, 1 link");
	ok(d && d->switches[0].n_addresses == 2 && !strcmp(d->switches[0].addresses[1], "10.0.0.3") &&
	       d->hosts[0].sw == 0 && !strcmp(d->hosts[0].nic, "rail_0") && d->links[0].a == 1 &&
	       d->links[0].b == 0 && d->links[0].line == 6,
	   "... each as written, with its line");
	fq_topo_decl_free(d);
}

/* fq_topo_decl_load: the file read whole, or why not with its path. */
static void load(void)
{
	char path[] = "/tmp/fq-topo-XXXXXX", err[512] = "";
	struct fq_topo_decl *d = NULL;
	const char *text = "switch leaf1 10.0.0.1\nhost n1 rail0 leaf1\nlink leaf1 spine9\n";
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

	ok(f && fputs(text, f) >= 0 && fclose(f) == 0, "a file written");
	is_int(fq_topo_decl_load(path, &d, err, sizeof(err)), -EINVAL, "an unknown switch: -EINVAL");
	ok(!d && strstr(err, path) && strstr(err, "line 3") && strstr(err, "spine9"),
	   "the error names the file, the line and the switch");
	f = fopen(path, "w");
	ok(f && fputs("switch leaf1 10.0.0.1\nhost n1 rail0 leaf1\n", f) >= 0 && fclose(f) == 0, "mended");
	is_int(fq_topo_decl_load(path, &d, err, sizeof(err)), 0, "loads");
	ok(d && d->n_switches == 1 && d->n_hosts == 1, "one switch, one host");
	fq_topo_decl_free(d);
	unlink(path);
	is_int(fq_topo_decl_load(path, &d, err, sizeof(err)), -ENOENT, "gone: -ENOENT");
	ok(strstr(err, path) != NULL, "... saying which file");
}

/* ---- the cross-check by delay ------------------------------------------- */

static struct fq_topo_floor F[MAXT];

/* Each trace's floor as the model's fabric would give it: both hosts' own
 * time (up to 200 ns apart), 500 ns a switch each way, up to 100 ns of
 * noise. */
static size_t model_floors(void)
{
	for (size_t i = 0; i < T.n; i++) {
		const struct fq_topo_trace *tr = &T.tr[i];
		int a = atoi(tr->node + 1), b = atoi(tr->remote_node + 1);

		F[i] =
		    (struct fq_topo_floor){tr->node, tr->nic, tr->remote_node, tr->remote_nic,
					   1500 + (a * 37) % 200 + (b * 53) % 200 +
					       2 * 500 * (int64_t)tr->n_hops + (int64_t)((i * 7919) % 100)};
	}
	return T.n;
}

static struct fq_topo *with_floors(const struct fq_topo_decl *d, size_t n)
{
	struct fq_topo_opts o = {.floors = F, .n_floors = n};
	struct fq_topo *t = NULL;

	return fq_topo_build(T.tr, T.n, d, &o, &t) < 0 ? NULL : t;
}

/* The model's NICs on each leaf (of those that have a peer there), against
 * the delay groups: each group one leaf's NICs, and every such leaf one
 * group. */
static int by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int groups_are_leaves(const struct fq_topo *t)
{
	int bad = 0, want = 0;

	for (int l = 0; l < M.n_sw; l++) {
		const char *on[MAXN];
		int n = 0;
		char name[80];

		for (int j = 0; j < M.n_nics; j++)
			if (M.nic[j].leaf == l)
				on[n++] = M.nic[j].name;
		if (n < 2)
			continue;
		want++;
		qsort(on, (size_t)n, sizeof(*on), by_name);
		want_name(l, false, name, sizeof(name));
		for (size_t g = 0; g < fq_topo_delay_group_count(t); g++) {
			const struct fq_topo_delay_group *x = fq_topo_delay_group_at(t, g);

			if (!strcmp(x->nics[0], on[0]) &&
			    (!same_list(x->nics, x->n_nics, on, n) || x->n_switches != 1 ||
			     strcmp(x->switches[0], name)))
				mismatch(&bad, x->nics[0], name);
		}
	}
	if ((int)fq_topo_delay_group_count(t) != want)
		mismatch(&bad, "group count", "one per leaf");
	return bad;
}

static void delay_check(void)
{
	static const struct {
		const char *what;
		int hosts, leaves, spines, rails, pods, cores, alone;
	} f[] = {
	    {"8 hosts, 4 leaves, 4 spines, 2 rails", 8, 4, 4, 2, 1, 0, 0},
	    {"16 hosts, 4 leaves, 2 spines, 4 rails", 16, 4, 2, 4, 1, 0, 0},
	    {"3 tiers: 8 hosts, 2 pods of 2 leaves and 2 spines, 2 cores", 8, 4, 4, 1, 2, 2, 0},
	    {"5 hosts, 3 leaves, 2 spines, 1 rail (one host alone on its leaf)", 5, 3, 2, 1, 1, 0, 1},
	};
	struct fq_topo_decl *d;
	struct fq_topo *t;
	const char *text = NULL;
	size_t n;
	int was;

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		fabric(f[i].hosts, f[i].leaves, f[i].spines, f[i].rails, f[i].pods, f[i].cores);
		all_traces();
		t = with_floors(NULL, model_floors());
		ok(t != NULL, "%s, with delay floors: built", f[i].what);
		if (!t)
			continue;
		is_int(count_diffs(t, FQ_TOPO_DELAY_DISAGREES, &text), 0,
		       "... the delays agree with the routes%s%s", text ? ": " : "", text ? text : "");
		is_int(groups_are_leaves(t), 0, "... %zu delay groups, each one leaf's NICs",
		       fq_topo_delay_group_count(t));
		is_int((int)fq_topo_delay_unresolved(t), f[i].alone,
		       "... %d NICs whose peers are all as far (alone on their leaf)", f[i].alone);
		fq_topo_destroy(t);
	}

	/* Floors of paths with no trace, of unknown NICs, or none: ignored. */
	fabric(8, 4, 4, 2, 1, 0);
	all_traces();
	n = model_floors();
	F[n++] = (struct fq_topo_floor){"n99", "rail0", "n1", "rail0", 10};
	F[n++] = (struct fq_topo_floor){"n1", "rail0", "n1", "rail0", 10};
	F[n++] = (struct fq_topo_floor){"n1", "rail0", "n2", "rail0", 0};
	t = with_floors(NULL, n);
	ok(t && count_diffs(t, FQ_TOPO_DELAY_DISAGREES, NULL) == 0 && groups_are_leaves(t) == 0,
	   "floors of unknown NICs, a NIC to itself, or of 0 change nothing");
	fq_topo_destroy(t);

	/* A spine that does not answer: its routes are incomplete and not
	 * held against the delays. */
	M.silent[4] = true;
	all_traces();
	t = with_floors(NULL, model_floors());
	ok(t && count_diffs(t, FQ_TOPO_DELAY_DISAGREES, NULL) == 0 && groups_are_leaves(t) == 0,
	   "spine1 silent: no difference, the same groups");
	fq_topo_destroy(t);

	/* The routes and the delays disagree: n3/rail0's traces place it on the
	 * other leaf of its rail, its delays on the first (a tracer fooled, or
	 * routers answering for another). */
	fabric(8, 4, 4, 2, 1, 0);
	d = parse(decl_text(-1, -1, ""));
	all_traces();
	n = model_floors();
	was = M.nic[4].leaf;
	M.nic[4].leaf = was ^ 1;
	snprintf(M.nic[4].leaf_addr, 32, "198.19.200.8");
	all_traces(); /* the same pairs, in the same order: the floors still match */
	t = with_floors(d, n);
	text = NULL;
	ok(t && count_diffs(t, FQ_TOPO_DELAY_DISAGREES, NULL) == 4,
	   "n3/rail0's routes moved, its delays not: %d differences (it, and its 3 peers by delay)",
	   t ? count_diffs(t, FQ_TOPO_DELAY_DISAGREES, NULL) : -1);
	for (size_t i = 0; t && i < fq_topo_diff_count(t); i++)
		if (fq_topo_diff_at(t, i)->kind == FQ_TOPO_DELAY_DISAGREES &&
		    !strncmp(fq_topo_diff_at(t, i)->text, "n3/rail0:", 9))
			text = fq_topo_diff_at(t, i)->text;
	ok(text && !strcmp(text, "n3/rail0: nearest by delay n1/rail0, n2/rail0, n4/rail0; "
				 "by route n5/rail0, n6/rail0, n7/rail0, n8/rail0"),
	   "... n3/rail0's names its peers by delay and by route: %s", text ? text : "(none)");
	ok(t && count_diffs(t, FQ_TOPO_HOST_MOVED, NULL) == 1, "... beside the declared file's host_moved");
	fq_topo_destroy(t);
	fq_topo_decl_free(d);
}

/* Leaf-spine links' probe_paths: min and median over the links into *min, *med. */
static void coverage(const struct fq_topo *t, size_t *min, size_t *med)
{
	size_t v[MAXL], n = 0;

	for (size_t i = 0; i < fq_topo_link_count(t) && n < MAXL; i++) {
		size_t x = fq_topo_link_at(t, i)->probe_paths, j = n++;

		for (; j > 0 && v[j - 1] > x; j--) /* insertion: sorted */
			v[j] = v[j - 1];
		v[j] = x;
	}
	*min = n ? v[0] : 0;
	*med = n ? v[n / 2] : 0;
}

/* Each NIC pair traced over 4 flows (its ports + 0..3): the same fabric,
 * exactly, each flow its own path, and every leaf-spine link crossed by
 * more of them (the campaign's cable faults are judged by those). */
static void flows(void)
{
	struct fq_topo *t;
	struct json_object *j, *o;
	size_t min1, med1, min4, med4, pairs;
	int sw, links;
	const struct fq_topo_path *p0, *p3;

	fabric(8, 4, 4, 2, 1, 0);
	all_traces();
	pairs = T.n;
	t = recover("8x2x4x4, one flow", NULL, &sw, &links);
	coverage(t, &min1, &med1);
	fq_topo_destroy(t);
	model_flows = 4;
	all_traces();
	t = recover("8x2x4x4, 4 flows a pair", NULL, &sw, &links);
	is_int(sw, 8, "4 flows: still the 8 switches (%d links)", links);
	is_int((int)fq_topo_path_count(t), (int)(4 * pairs), "4 flows: a path per pair and flow");
	coverage(t, &min4, &med4);
	diag("directed probe paths per leaf-spine link (model ECMP): 1 flow min %zu median %zu; 4 flows min "
	     "%zu "
	     "median %zu",
	     min1, med1, min4, med4);
	ok(min4 > min1 && med4 >= 3 * med1, "4 flows: every link crossed by more paths (min %zu -> %zu)",
	   min1, min4);
	p0 = fq_topo_path_find(t, "n1", "rail0", "n8", "rail0");
	p3 = fq_topo_flow_path_find(t, "n1", "rail0", "n8", "rail0", 3);
	ok(p0 && p0->flow == 0 && p3 && p3->flow == 3 && p3->complete,
	   "a pair's flow 0 and flow 3 found apart");
	j = fq_topo_json(t);
	ok(j && json_object_object_get_ex(j, "paths", &o) && json_object_array_length(o) == pairs,
	   "json: \"paths\" is each pair's flow 0 (%zu)", pairs);
	ok(j && json_object_object_get_ex(j, "flow_paths", &o) &&
	       (size_t)json_object_get_int64(o) == 3 * pairs,
	   "json: \"flow_paths\" counts the others");
	ok(j && json_object_object_get_ex(j, "links", &o) &&
	       json_object_object_get_ex(json_object_array_get_idx(o, 0), "probe_paths", &o) &&
	       json_object_get_int64(o) > 0,
	   "json: each link's probe_paths");
	json_object_put(j);
	fq_topo_destroy(t);
	model_flows = 1;
}

int main(void)
{
	clean_fabrics();
	flows();
	silent_router();
	not_reached();
	host_moved();
	declared_edits();
	mate_rule();
	json();
	bad_traces();
	parser();
	load();
	delay_check();
	return done_testing();
}
