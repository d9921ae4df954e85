/* cli_topology: `fabriciq topology` (controller/cli/cli.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/cli/cli.h"

/* "a, b, c" of the strings in o[key] (at most a scratch buffer). */
static const char *flist(struct json_object *o, const char *key)
{
	char *s = scratch();
	size_t n = 0;

	*s = 0;
	for (size_t i = 0; i < jlen(o, key) && n + 1 < SCRATCH_LEN; i++)
		n += (size_t)snprintf(s + n, SCRATCH_LEN - n, "%s%s", i ? ", " : "",
				      json_object_get_string(jidx(o, key, i)));
	return *s ? s : "-";
}

int cmd_topology(struct cli *c, int argc, char **argv)
{
	struct json_object *o;
	struct table t;
	int rc;

	NO_OPTIONS(argc, argv);
	rc = fetch(c, "/api/v1/topology", NULL, &o);
	if (rc || c->json)
		goto out;
	table_init(&t, "SWITCH,ROLE,TIER>,ADDRESSES");
	for (size_t i = 0; i < jlen(o, "switches"); i++) {
		struct json_object *s = jidx(o, "switches", i);

		table_row(&t, jstr(s, "name"), jstr(s, "role"), fint(s, "tier"), flist(s, "addresses"));
	}
	table_print(&t);
	printf("\n");
	/* PROBE PATHS: the flows of directed NIC pairs routed over it, what
	 * the localisation judges a fault on it by */
	table_init(&t, "LINK,A SIDE,B SIDE,PROBE PATHS>");
	for (size_t i = 0; i < jlen(o, "links"); i++) {
		struct json_object *l = jidx(o, "links", i);

		table_row(&t, fmt("%s~%s", jstr(l, "a"), jstr(l, "b")), flist(l, "a_addresses"),
			  flist(l, "b_addresses"), fint(l, "probe_paths"));
	}
	table_print(&t);
	printf("\n");
	table_init(&t, "NIC,SWITCH,SWITCH PORT");
	for (size_t i = 0; i < jlen(o, "host_links"); i++) {
		struct json_object *h = jidx(o, "host_links", i);

		table_row(&t, fplace(h, "node", "nic"), jstr(h, "switch"), jstr(h, "switch_address"));
	}
	table_print(&t);
	if (jlen(o, "delay_groups")) {
		printf("\n");
		table_init(&t, "NEAREST EACH OTHER BY DELAY,SWITCH,FLOOR>");
		for (size_t i = 0; i < jlen(o, "delay_groups"); i++) {
			struct json_object *g = jidx(o, "delay_groups", i);

			table_row(&t, flist(g, "nics"), flist(g, "switches"), fdelay_at(g, "floor_ns"));
		}
		table_print(&t);
	}
	printf(
	    "\n%s routes (%s of probe flows beyond each pair's first), %s hops unanswered, %s NICs with no "
	    "peer nearer by delay",
	    fint(o, "traces"), fint(o, "flow_paths"), fint(o, "unresolved_hops"),
	    fint(o, "delay_unresolved"));
	if (!jnull(o, "expected_file"))
		printf("; expected topology %s", jstr(o, "expected_file"));
	printf("\n");
	if (!jnull(o, "expected_error"))
		printf("expected topology not read: %s\n", jstr(o, "expected_error"));
	if (jlen(o, "differences"))
		printf("\ndifferences from the expected topology, and between routes and delays:\n");
	for (size_t i = 0; i < jlen(o, "differences"); i++) {
		struct json_object *d = jidx(o, "differences", i);

		printf("  %s: %s\n", jstr(d, "kind"), jstr(d, "text"));
	}
	if (!jlen(o, "route_changes")) {
		printf("no route change in the last day\n");
		goto out;
	}
	printf("\n");
	table_init(&t, "ROUTE CHANGED,PATH,BEFORE,AFTER");
	for (size_t i = 0; i < jlen(o, "route_changes"); i++) {
		struct json_object *r = jidx(o, "route_changes", i);

		table_row(&t, ftime(r, "time_ns"),
			  fmt("%s -> %s", fplace(r, "node", "nic"), fplace(r, "remote_node", "remote_nic")),
			  flist(r, "hops_before"), flist(r, "hops_after"));
	}
	table_print(&t);
out:
	json_object_put(o);
	return rc;
}
