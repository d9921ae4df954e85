/*
 * ctl_clock: the controller's clock round. Each report window it solves
 * the mesh (controller/mesh.h) over the agents' latest clock estimates and
 * sends every connected agent its correction onto the global timeline.
 */
#include "controller/ctl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/frame.h"
#include "common/log.h"
#include "controller/mesh.h"

/* ---- the clock solve --------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct name_list {
	char **v;
	size_t n, cap;
};

static void collect_names(struct fq_strmap_entry *e, void *arg)
{
	struct name_list *l = arg;

	if (l->n < l->cap)
		l->v[l->n++] = e->key;
}

static long find_name(char **v, size_t n, const char *name)
{
	char **p = bsearch(&name, v, n, sizeof(*v), cmp_str);
	return p ? p - v : -1;
}

static void send_correction(struct ctl *c, struct agent *a, const struct fq_mesh_solution *sol, uint32_t i,
			    const char *ref, int64_t now)
{
	Fabriciq__Envelope env = FABRICIQ__ENVELOPE__INIT;
	Fabriciq__ClockCorrection cc = FABRICIQ__CLOCK_CORRECTION__INIT;

	const struct agent *ra = fq_strmap_get(&c->agents, ref);

	cc.reference_node = (char *)ref;
	cc.reference_epoch_ns = ra ? ra->applied_offset_ns : 0;
	cc.epoch = c->clock_epoch;
	cc.offset_ns = (int64_t)llround(sol->offset_ns[i]);
	cc.drift_ppb = sol->drift_ppb[i];
	cc.error_bound_ns = isfinite(sol->error_ns[i]) ? (int64_t)ceil(sol->error_ns[i]) : 0;
	cc.valid_until_ns = now + (int64_t)c->cfg.correction_valid;
	env.version = FQ_PROTOCOL_VERSION;
	env.sent_ns = now;
	env.payload_case = FABRICIQ__ENVELOPE__PAYLOAD_CORRECTION;
	env.correction = &cc;
	fq_session_send(a->sess, &env);
	fq_metrics_clock(c->metrics, a->node, sol->offset_ns[i], sol->error_ns[i]);
}

/* Every agent's latest estimates are edges; the solve's offsets go back to
 * every connected agent as its correction. Nodes are indexed in byte order
 * of their names (also the default reference: the first one). */
void ctl_clock_round(struct ctl *c, int64_t now)
{
	struct name_list names = {0};
	struct fq_mesh_edge *edges = NULL;
	struct fq_mesh_solution sol = {0};
	size_t nedges = 0, cap = 0, skipped = 0;
	long ref;
	const char *refname;

	/* Hosts: every agent, and every peer an estimate names. */
	names.cap = c->agents.count;
	for (size_t b = 0; b < c->agents.nbuckets; b++)
		for (struct fq_strmap_entry *e = c->agents.buckets[b]; e; e = e->next)
			names.cap += ((struct agent *)e->value)->nest;
	if (!names.cap || !(names.v = malloc(names.cap * sizeof(char *))))
		return;
	fq_strmap_each(&c->agents, collect_names, &names);
	for (size_t b = 0; b < c->agents.nbuckets; b++)
		for (struct fq_strmap_entry *e = c->agents.buckets[b]; e; e = e->next) {
			struct agent *a = e->value;
			for (size_t i = 0; i < a->nest; i++)
				names.v[names.n++] = a->est[i].peer_node;
		}
	qsort(names.v, names.n, sizeof(char *), cmp_str);
	{
		size_t u = 0;
		for (size_t i = 0; i < names.n; i++)
			if (!u || strcmp(names.v[u - 1], names.v[i]))
				names.v[u++] = names.v[i];
		names.n = u;
	}
	refname = c->cfg.reference_node && *c->cfg.reference_node ? c->cfg.reference_node : names.v[0];
	ref = find_name(names.v, names.n, refname);
	for (size_t b = 0; b < c->agents.nbuckets; b++)
		for (struct fq_strmap_entry *e = c->agents.buckets[b]; e; e = e->next) {
			struct agent *a = e->value;
			long ai = find_name(names.v, names.n, a->node);
			/* Estimates older than a correction's validity are stale. */
			if (now - a->clock_ns > (int64_t)c->cfg.correction_valid)
				continue;
			for (size_t i = 0; i < a->nest; i++) {
				long bi = find_name(names.v, names.n, a->est[i].peer_node);
				if (ai < 0 || bi < 0 || ai == bi)
					continue;
				if (nedges == cap) {
					cap = cap ? cap * 2 : 1024;
					struct fq_mesh_edge *n = realloc(edges, cap * sizeof(*n));
					if (!n)
						goto out;
					edges = n;
				}
				edges[nedges++] = (struct fq_mesh_edge){
				    (uint32_t)ai, (uint32_t)bi, (double)a->est[i].offset_ns,
				    a->est[i].drift_ppb,
				    (double)(a->est[i].error_bound_ns > 0 ? a->est[i].error_bound_ns : 1)};
			}
		}
	if (ref < 0 || !nedges)
		goto out;
	if (fq_mesh_solve((uint32_t)names.n, edges, nedges, (uint32_t)ref, NULL, &sol, &skipped) < 0) {
		fq_log_rl(FQ_LOG_ERROR, "clock solve over %zu nodes, %zu edges failed", names.n, nedges);
		goto out;
	}
	c->clock_epoch++;
	c->last_rms_ns = sol.rms_residual_ns;
	fq_metrics_clock_solve(c->metrics, sol.n_solved, sol.rms_residual_ns, sol.max_residual_ns);
	for (size_t b = 0; b < c->agents.nbuckets; b++)
		for (struct fq_strmap_entry *e = c->agents.buckets[b]; e; e = e->next) {
			struct agent *a = e->value;
			long i = find_name(names.v, names.n, a->node);
			if (a->sess && i >= 0 && sol.solved[i])
				send_correction(c, a, &sol, (uint32_t)i, names.v[ref], now);
		}
	fq_mesh_solution_free(&sol);
out:
	free(edges);
	free(names.v);
}
