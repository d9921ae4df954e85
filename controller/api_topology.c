/*
 * api_topology: /api/v1/topology (controller/api.h). The paths' current
 * routes, each probe flow's (fabriciq.path_flow_routes_current, one
 * statement) go through the
 * topology inference (controller/topology.h) with the site's expected
 * topology when the controller has one (controller.topology_file, read at
 * each request: an edit needs no restart) and each path's delay floor over
 * the last minute (for the cross-check by delay, as the controller's); the
 * reply is the inferred fabric, its differences from the expected one and
 * from the delays, and the last day's route changes.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/api_int.h"
#include "controller/api_param.h"
#include "controller/topology.h"
#include "db/internal.h"

/* Routes still traced: an agent resends each one hourly. */
static const char routes_sql[] =
    "select coalesce(json_agg(json_build_object('node', r.node, 'nic', r.nic, 'remote_node', r.remote_node,"
    "  'remote_nic', r.remote_nic, 'flow', r.flow, 'reached', r.reached, 'hops',"
    "  (select coalesce(json_agg(coalesce(host(h), '') order by o), '[]'::json)"
    "   from unnest(r.hops) with ordinality u(h, o)))"
    "  order by r.node, r.nic, r.remote_node, r.remote_nic, r.flow), '[]')"
    " from fabriciq.path_flow_routes_current r where r.last_seen > now() - interval '2 hours'";

/* Each path's delay floor: the 10th percentile of the last minute's
 * windows' forward + reverse minimum (0: none measured), 5 windows or more
 * (ctl_topo.c keeps the same from the windows as they come). */
static const char floors_sql[] =
    "select coalesce(json_agg(json_build_object('node', f.src_node, 'nic', f.src_nic,"
    "  'remote_node', f.dst_node, 'remote_nic', f.dst_nic, 'ns', f.ns)), '[]') from ("
    " select src_node, src_nic, dst_node, dst_nic,"
    "  percentile_disc(0.1) within group (order by owd_fwd_min_ns + owd_rev_min_ns) as ns"
    " from fabriciq.probe_windows where window_start > now() - interval '1 minute' and path_up"
    "  and answered > 0 and owd_fwd_min_ns <> 0 and owd_rev_min_ns <> 0"
    "  and owd_fwd_min_ns + owd_rev_min_ns > 0"
    " group by 1, 2, 3, 4 having count(*) >= 5) f";

static const char changes_sql[] =
    "select coalesce(json_agg(x order by x.time_ns desc), '[]') from ("
    " select " TS("c.time",
		  "time") ", c.node, c.nic, c.remote_node, c.remote_nic,"
			  "  array(select coalesce(host(h), '') from unnest(c.hops_before) h) as hops_before,"
			  "  array(select coalesce(host(h), '') from unnest(c.hops_after) h) as hops_after"
			  " from fabriciq.route_changes c where c.time > now() - interval '1 day'"
			  " order by c.time desc limit 100) x";

static const char *jstr_or_empty(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
		   ? json_object_get_string(v)
		   : "";
}

/* The floors (the statement's array), pointing into it. */
static struct fq_topo_floor *floors_of(struct json_object *rows)
{
	size_t n = json_object_array_length(rows);
	struct fq_topo_floor *f = calloc(n ? n : 1, sizeof(*f));

	for (size_t i = 0; f && i < n; i++) {
		struct json_object *r = json_object_array_get_idx(rows, i), *ns = NULL;

		f[i] = (struct fq_topo_floor){
		    jstr_or_empty(r, "node"), jstr_or_empty(r, "nic"), jstr_or_empty(r, "remote_node"),
		    jstr_or_empty(r, "remote_nic"),
		    json_object_object_get_ex(r, "ns", &ns) ? json_object_get_int64(ns) : 0};
	}
	return f;
}

/* The traces of routes (the statement's array), pointing into it. */
static int traces_of(struct json_object *routes, struct fq_topo_trace **out, const char ***hops_out)
{
	size_t n = json_object_array_length(routes), nh = 0, k = 0;
	struct fq_topo_trace *t;
	const char **hops;

	for (size_t i = 0; i < n; i++) {
		struct json_object *h;

		if (json_object_object_get_ex(json_object_array_get_idx(routes, i), "hops", &h))
			nh += json_object_array_length(h);
	}
	t = calloc(n ? n : 1, sizeof(*t));
	hops = calloc(nh ? nh : 1, sizeof(*hops));
	if (!t || !hops) {
		free(t);
		free(hops);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		struct json_object *r = json_object_array_get_idx(routes, i), *h = NULL, *reached = NULL;

		t[i].node = jstr_or_empty(r, "node");
		t[i].nic = jstr_or_empty(r, "nic");
		t[i].remote_node = jstr_or_empty(r, "remote_node");
		t[i].remote_nic = jstr_or_empty(r, "remote_nic");
		t[i].flow = json_object_object_get_ex(r, "flow", &h) ? (unsigned)json_object_get_int(h) : 0;
		h = NULL;
		t[i].reached =
		    json_object_object_get_ex(r, "reached", &reached) && json_object_get_boolean(reached);
		t[i].hops = hops + k;
		if (json_object_object_get_ex(r, "hops", &h))
			for (size_t j = 0; j < json_object_array_length(h); j++)
				hops[k++] = json_object_get_string(json_object_array_get_idx(h, j));
		t[i].n_hops = (size_t)(hops + k - t[i].hops);
	}
	*out = t;
	*hops_out = hops;
	return 0;
}

int api_get_topology(struct reply *rp, struct fq_db *db, struct fq_api_params *r)
{
	struct json_object *routes = NULL, *floors = NULL, *body;
	struct fq_topo_opts opts = {0};
	struct fq_topo_floor *fl = NULL;
	struct fq_topo_trace *traces = NULL;
	struct fq_topo_decl *decl = NULL;
	struct fq_topo *topo = NULL;
	const char **hops = NULL;
	char why[512] = "";
	int rc;

	if (fq_api_params_only(r, ""))
		return api_fail(rp, 400, "%s", r->err);
	rc = api_query_json(db, "reading path routes", routes_sql, NULL, &routes);
	if (rc < 0)
		return api_db_fail(rp, db);
	if (!routes)
		routes = json_object_new_array();
	if (api_query_json(db, "reading delay floors", floors_sql, NULL, &floors) < 0) {
		rc = api_db_fail(rp, db);
		goto out;
	}
	if (floors && (fl = floors_of(floors))) {
		opts.floors = fl;
		opts.n_floors = json_object_array_length(floors);
	}
	if (r->topology_file && fq_topo_decl_load(r->topology_file, &decl, why, sizeof(why)) < 0)
		decl = NULL; /* the fabric as seen, with the file's error */
	if (traces_of(routes, &traces, &hops) < 0 ||
	    fq_topo_build(traces, json_object_array_length(routes), decl, &opts, &topo) < 0 ||
	    !(body = fq_topo_json(topo))) {
		rc = api_fail(rp, 500, "out of memory building the topology");
		goto out;
	}
	json_object_put(rp->body);
	rp->body = body;
	json_object_object_add(body, "expected_file",
			       r->topology_file ? json_object_new_string(r->topology_file) : NULL);
	json_object_object_add(body, "expected_error", *why ? json_object_new_string(why) : NULL);
	if (api_add_section(rp, db, body, "route_changes", "reading route changes", changes_sql, NULL)) {
		rc = rp->status;
		goto out;
	}
	rc = 200;
out:
	fq_topo_destroy(topo);
	fq_topo_decl_free(decl);
	free(traces);
	free(hops);
	free(fl);
	json_object_put(routes);
	json_object_put(floors);
	return rc;
}
