/*
 * mesh: the network-effect clock solve (see mesh.h for the contract).
 *
 * Steps, each O(edges) or O(edges log hosts):
 *  1. the valid edges as a weighted graph in CSR form, one entry per
 *     neighbour: parallel edges and both directions of a pair become one
 *     entry with their summed weight (the Laplacian only sees the sum);
 *  2. Dijkstra from the reference with cost = variance (1/w): finds the
 *     hosts connected to the reference, the error bound of each (the
 *     root-sum-square error of its best path) and, by summing offsets along
 *     the tree, a starting point already within the path error of the answer;
 *  3. Jacobi-preconditioned conjugate gradient on the Laplacian with the
 *     reference row and column removed, offsets and drift side by side (one
 *     pass over the matrix serves both). The starting residual is computed
 *     edge by edge from the tree solution's edge residuals, never as b - Lx
 *     from x itself, so offsets of days (1e14 ns) lose no precision to
 *     cancellation.
 * Memory: 16 bytes per edge end plus about 90 bytes per host.
 */
#include "controller/mesh.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MESH_TOLERANCE_NS   0.01
#define MESH_MAX_ITERATIONS 2000
#define MESH_NONE           UINT32_MAX

/* One neighbour j of host i: the summed weight of every edge between them
 * and one of those edges (for the starting point along the tree). Kept
 * together so that building the graph writes one cache line per edge end. */
struct mesh_ent {
	uint32_t col;
	uint32_t edge;
	double w;
};

struct mesh_graph {
	uint32_t n;
	size_t *row;          /* [n + 1] */
	struct mesh_ent *ent; /* [row[n]] */
	double *diag;         /* [n] sum of row i's weights */
};

static int edge_weight(const struct fq_mesh_edge *e, uint32_t n, double *w)
{
	if (e->a >= n || e->b >= n || e->a == e->b)
		return 0;
	if (!isfinite(e->offset_ns) || !isfinite(e->drift_ppb) || !isfinite(e->error_ns) || e->error_ns <= 0)
		return 0;
	*w = 1.0 / (e->error_ns * e->error_ns);
	/* An error so small or large that its weight over- or underflows
	 * cannot be weighed against the others. */
	return isfinite(*w) && *w > 0;
}

static void graph_free(struct mesh_graph *g)
{
	free(g->row);
	free(g->ent);
	free(g->diag);
	memset(g, 0, sizeof(*g));
}

/* Merge duplicate neighbours in place, rows in order: slot[j] remembers
 * where j was last written; if that is inside the row being written, j is
 * already in it. */
static int graph_merge(struct mesh_graph *g)
{
	size_t *slot = malloc((size_t)g->n * sizeof(*slot));
	size_t out = 0, begin = 0;

	if (!slot)
		return -ENOMEM;
	for (uint32_t i = 0; i < g->n; i++)
		slot[i] = SIZE_MAX;
	for (uint32_t i = 0; i < g->n; i++) {
		size_t end = g->row[i + 1], start = out;
		double d = 0;

		for (size_t k = begin; k < end; k++) {
			uint32_t j = g->ent[k].col;

			d += g->ent[k].w;
			if (slot[j] != SIZE_MAX && slot[j] >= start) {
				g->ent[slot[j]].w += g->ent[k].w;
				continue;
			}
			g->ent[out] = g->ent[k];
			slot[j] = out++;
		}
		g->row[i] = start;
		g->diag[i] = d;
		begin = end;
	}
	g->row[g->n] = out;
	free(slot);
	return 0;
}

static int graph_build(struct mesh_graph *g, uint32_t n, const struct fq_mesh_edge *edges, size_t n_edges,
		       size_t *skipped)
{
	size_t bad = 0, *cur = NULL;
	double w;
	int rc = -ENOMEM;

	memset(g, 0, sizeof(*g));
	g->n = n;
	g->row = calloc((size_t)n + 1, sizeof(*g->row));
	g->diag = calloc(n, sizeof(*g->diag));
	if (!g->row || !g->diag)
		goto fail;
	for (size_t e = 0; e < n_edges; e++) {
		if (!edge_weight(&edges[e], n, &w)) {
			bad++;
			continue;
		}
		g->row[edges[e].a + 1]++;
		g->row[edges[e].b + 1]++;
	}
	for (uint32_t i = 0; i < n; i++)
		g->row[i + 1] += g->row[i];
	cur = malloc((size_t)n * sizeof(*cur));
	g->ent = malloc(g->row[n] * sizeof(*g->ent) + 1);
	if (!cur || !g->ent)
		goto fail;
	memcpy(cur, g->row, (size_t)n * sizeof(*cur));
	for (size_t e = 0; e < n_edges; e++) {
		const struct fq_mesh_edge *ed = &edges[e];

		if (!edge_weight(ed, n, &w))
			continue;
		/* the edge index fits: the caller's contract caps hosts at
		 * 2^32 and we never need more edges than entries */
		g->ent[cur[ed->a]++] = (struct mesh_ent){ed->b, (uint32_t)e, w};
		g->ent[cur[ed->b]++] = (struct mesh_ent){ed->a, (uint32_t)e, w};
	}
	rc = graph_merge(g);
	if (rc < 0)
		goto fail;
	free(cur);
	if (skipped)
		*skipped = bad;
	return 0;
fail:
	free(cur);
	graph_free(g);
	return rc;
}

/* An indexed binary min-heap of hosts. Keys are copied into the heap so
 * that sifting compares neighbouring memory, not key[] scattered over all
 * hosts. */
struct mesh_hent {
	double key;
	uint32_t v;
};

struct mesh_heap {
	struct mesh_hent *h;
	uint32_t *pos, len;
};

static void heap_place(struct mesh_heap *hp, uint32_t i, struct mesh_hent x)
{
	hp->h[i] = x;
	hp->pos[x.v] = i;
}

static void heap_up(struct mesh_heap *hp, uint32_t i, struct mesh_hent x)
{
	while (i > 0 && hp->h[(i - 1) / 2].key > x.key) {
		heap_place(hp, i, hp->h[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	heap_place(hp, i, x);
}

static void heap_down(struct mesh_heap *hp, uint32_t i, struct mesh_hent x)
{
	for (;;) {
		uint32_t l = 2 * i + 1, m = l;

		if (l >= hp->len)
			break;
		if (l + 1 < hp->len && hp->h[l + 1].key < hp->h[l].key)
			m = l + 1;
		if (!(hp->h[m].key < x.key))
			break;
		heap_place(hp, i, hp->h[m]);
		i = m;
	}
	heap_place(hp, i, x);
}

/* Give v the smaller key: insert it, or move it up. */
static void heap_decrease(struct mesh_heap *hp, uint32_t v, double key)
{
	uint32_t i = hp->pos[v];

	if (i == MESH_NONE)
		i = hp->len++;
	heap_up(hp, i, (struct mesh_hent){key, v});
}

static uint32_t heap_pop(struct mesh_heap *hp)
{
	uint32_t v = hp->h[0].v;

	hp->pos[v] = MESH_NONE;
	if (--hp->len > 0)
		heap_down(hp, 0, hp->h[hp->len]);
	return v;
}

/* Dijkstra with cost 1/w (the variance of the merged estimates of a pair):
 * var[i] is the variance of host i's best single-path estimate, x2[2i] and
 * x2[2i+1] its offset and drift summed along that path (one edge per hop).
 * Marks the hosts it reaches as solved. */
static int tree_solve(const struct mesh_graph *g, const struct fq_mesh_edge *edges, uint32_t ref, double *var,
		      double *x2, uint8_t *solved, uint32_t *n_solved)
{
	struct mesh_heap hp = {0};

	hp.h = malloc((size_t)g->n * sizeof(*hp.h));
	hp.pos = malloc((size_t)g->n * sizeof(*hp.pos));
	if (!hp.h || !hp.pos) {
		free(hp.h);
		free(hp.pos);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < g->n; i++) {
		var[i] = INFINITY;
		hp.pos[i] = MESH_NONE;
		solved[i] = 0;
	}
	*n_solved = 0;
	var[ref] = 0;
	heap_decrease(&hp, ref, 0);
	while (hp.len > 0) {
		uint32_t i = heap_pop(&hp);

		solved[i] = 1;
		(*n_solved)++;
		for (size_t k = g->row[i]; k < g->row[i + 1]; k++) {
			const struct mesh_ent *en = &g->ent[k];
			const struct fq_mesh_edge *ed = &edges[en->edge];
			double v = var[i] + 1.0 / en->w, sign = ed->a == i ? 1 : -1;
			uint32_t j = en->col;

			if (solved[j] || v >= var[j])
				continue;
			var[j] = v;
			x2[2 * j] = x2[2 * i] + sign * ed->offset_ns;
			x2[2 * j + 1] = x2[2 * i + 1] + sign * ed->drift_ppb;
			heap_decrease(&hp, j, v);
		}
	}
	free(hp.h);
	free(hp.pos);
	return 0;
}

/* r = b - L x for offset and drift (interleaved), edge by edge:
 * r_i = sum over edges at i of w (x_j - x_i - estimate of x_j - x_i),
 * each term the edge's residual at x, a small number. */
static void start_residual(const struct fq_mesh_edge *edges, size_t n_edges, uint32_t n,
			   const uint8_t *active, const double *x2, double *r2)
{
	double w;

	memset(r2, 0, 2 * (size_t)n * sizeof(*r2));
	for (size_t e = 0; e < n_edges; e++) {
		const struct fq_mesh_edge *ed = &edges[e];
		double ro, rd;

		if (!edge_weight(ed, n, &w))
			continue;
		ro = w * (x2[2 * ed->b] - x2[2 * ed->a] - ed->offset_ns);
		rd = w * (x2[2 * ed->b + 1] - x2[2 * ed->a + 1] - ed->drift_ppb);
		r2[2 * ed->a] += ro;
		r2[2 * ed->a + 1] += rd;
		r2[2 * ed->b] -= ro;
		r2[2 * ed->b + 1] -= rd;
	}
	for (uint32_t i = 0; i < n; i++)
		if (!active[i])
			r2[2 * i] = r2[2 * i + 1] = 0;
}

/* Preconditioned CG on L x = b over the active hosts (solved, not the
 * reference) for two right-hand sides at once (c = 0 offset, 1 drift,
 * interleaved: v[2i + c]), from x2 with residual r2. A side stops when every
 * host's Jacobi correction |r_i / L_ii| is <= tol (in ns, or ppb): the step
 * one more sweep would make. work: 6n doubles. Returns the iterations of
 * the slower side. */
static unsigned cg_solve(const struct mesh_graph *g, const uint8_t *active, double *x2, double *r2,
			 double tol, unsigned max_it, double *work)
{
	size_t n2 = 2 * (size_t)g->n;
	double *z = work, *p = work + n2, *q = work + 2 * n2;
	double rz[2] = {0, 0}, zmax[2] = {0, 0};
	int live[2];
	unsigned it;

	for (size_t v = 0; v < n2; v++) {
		z[v] = active[v / 2] ? r2[v] / g->diag[v / 2] : 0;
		p[v] = z[v];
		rz[v & 1] += r2[v] * z[v];
		zmax[v & 1] = fmax(zmax[v & 1], fabs(z[v]));
	}
	live[0] = zmax[0] > tol;
	live[1] = zmax[1] > tol;
	for (it = 0; it < max_it && (live[0] || live[1]); it++) {
		double pq[2] = {0, 0}, alpha[2], beta[2], rz_new[2] = {0, 0};

		for (uint32_t i = 0; i < g->n; i++) {
			double s0 = 0, s1 = 0;

			if (active[i]) {
				s0 = g->diag[i] * p[2 * i];
				s1 = g->diag[i] * p[2 * i + 1];
				for (size_t k = g->row[i]; k < g->row[i + 1]; k++) {
					const struct mesh_ent *en = &g->ent[k];

					s0 -= en->w * p[2 * en->col];
					s1 -= en->w * p[2 * en->col + 1];
				}
			}
			q[2 * i] = s0;
			q[2 * i + 1] = s1;
			pq[0] += p[2 * i] * s0;
			pq[1] += p[2 * i + 1] * s1;
		}
		for (int c = 0; c < 2; c++) {
			/* pq <= 0: p is numerically zero, nothing left to reduce */
			live[c] = live[c] && pq[c] > 0;
			alpha[c] = live[c] ? rz[c] / pq[c] : 0;
			zmax[c] = 0;
		}
		for (size_t v = 0; v < n2; v++) {
			if (!live[v & 1])
				continue;
			x2[v] += alpha[v & 1] * p[v];
			r2[v] -= alpha[v & 1] * q[v];
			z[v] = active[v / 2] ? r2[v] / g->diag[v / 2] : 0;
			rz_new[v & 1] += r2[v] * z[v];
			zmax[v & 1] = fmax(zmax[v & 1], fabs(z[v]));
		}
		for (int c = 0; c < 2; c++) {
			beta[c] = live[c] ? rz_new[c] / rz[c] : 0;
			rz[c] = rz_new[c];
		}
		for (size_t v = 0; v < n2; v++)
			if (live[v & 1])
				p[v] = z[v] + beta[v & 1] * p[v];
		live[0] = live[0] && zmax[0] > tol;
		live[1] = live[1] && zmax[1] > tol;
	}
	return it;
}

static void residuals(const struct fq_mesh_edge *edges, size_t n_edges, uint32_t n,
		      struct fq_mesh_solution *s)
{
	double sw = 0, swr2 = 0, rmax = 0, w;

	for (size_t e = 0; e < n_edges; e++) {
		const struct fq_mesh_edge *ed = &edges[e];
		double res;

		if (!edge_weight(ed, n, &w) || !s->solved[ed->a])
			continue;
		res = s->offset_ns[ed->b] - s->offset_ns[ed->a] - ed->offset_ns;
		sw += w;
		swr2 += w * res * res;
		rmax = fmax(rmax, fabs(res));
	}
	s->rms_residual_ns = sw > 0 ? sqrt(swr2 / sw) : 0;
	s->max_residual_ns = rmax;
}

void fq_mesh_solution_free(struct fq_mesh_solution *s)
{
	if (!s)
		return;
	free(s->offset_ns);
	free(s->drift_ppb);
	free(s->error_ns);
	free(s->solved);
	memset(s, 0, sizeof(*s));
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int plain_solve(uint32_t n_hosts, const struct fq_mesh_edge *edges, size_t n_edges, uint32_t reference,
		       const struct fq_mesh_options *opts, struct fq_mesh_solution *out, size_t *skipped);

/* Huber re-weighting (see mesh.h): each pass solves again with every
 * edge's error scaled by sqrt(ratio / (k x scale)) where its ratio
 * |residual| / error is beyond k x scale. */
int fq_mesh_solve(uint32_t n_hosts, const struct fq_mesh_edge *edges, size_t n_edges, uint32_t reference,
		  const struct fq_mesh_options *opts, struct fq_mesh_solution *out, size_t *skipped)
{
	struct fq_mesh_edge *re = NULL;
	double *z = NULL, k = opts && opts->robust_k > 0 ? opts->robust_k : 1.5;
	unsigned passes = opts ? opts->robust_passes : 0;
	int rc = plain_solve(n_hosts, edges, n_edges, reference, opts, out, skipped);

	if (rc < 0 || !passes || n_edges == 0)
		return rc;
	re = malloc(n_edges * sizeof(*re));
	z = malloc(n_edges * sizeof(*z));
	if (!re || !z) {
		fq_mesh_solution_free(out);
		rc = -ENOMEM;
		goto done;
	}
	memcpy(re, edges, n_edges * sizeof(*re));
	for (unsigned p = 0; p < passes; p++) {
		size_t nz = 0;
		double scale, w;

		for (size_t e = 0; e < n_edges; e++)
			if (edge_weight(&edges[e], n_hosts, &w) && out->solved[edges[e].a])
				z[nz++] = fabs(out->offset_ns[edges[e].b] - out->offset_ns[edges[e].a] -
					       edges[e].offset_ns) /
					  edges[e].error_ns;
		if (nz < 3)
			break;
		qsort(z, nz, sizeof(*z), cmp_double);
		scale = 1.4826 * (nz % 2 ? z[nz / 2] : (z[nz / 2 - 1] + z[nz / 2]) / 2);
		if (!(scale > 0))
			break; /* the loops close exactly: nothing to re-weigh */
		for (size_t e = 0; e < n_edges; e++) {
			double r;

			re[e].error_ns = edges[e].error_ns;
			if (!edge_weight(&edges[e], n_hosts, &w) || !out->solved[edges[e].a])
				continue;
			r = fabs(out->offset_ns[edges[e].b] - out->offset_ns[edges[e].a] -
				 edges[e].offset_ns) /
			    edges[e].error_ns;
			if (r > k * scale)
				re[e].error_ns = edges[e].error_ns * sqrt(r / (k * scale));
		}
		fq_mesh_solution_free(out);
		rc = plain_solve(n_hosts, re, n_edges, reference, opts, out, NULL);
		if (rc < 0)
			break;
	}
done:
	free(re);
	free(z);
	return rc;
}

static int plain_solve(uint32_t n_hosts, const struct fq_mesh_edge *edges, size_t n_edges, uint32_t reference,
		       const struct fq_mesh_options *opts, struct fq_mesh_solution *out, size_t *skipped)
{
	double tol = MESH_TOLERANCE_NS, *x2 = NULL, *work = NULL;
	unsigned max_it = MESH_MAX_ITERATIONS;
	struct mesh_graph g;
	uint8_t *active = NULL;
	int rc;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (reference >= n_hosts || (!edges && n_edges > 0) || n_edges > UINT32_MAX)
		return -EINVAL;
	if (opts && opts->tolerance_ns > 0)
		tol = opts->tolerance_ns;
	if (opts && opts->max_iterations > 0)
		max_it = opts->max_iterations;

	rc = graph_build(&g, n_hosts, edges, n_edges, skipped);
	if (rc < 0)
		return rc;
	rc = -ENOMEM;
	out->n_hosts = n_hosts;
	out->offset_ns = malloc(n_hosts * sizeof(*out->offset_ns));
	out->drift_ppb = malloc(n_hosts * sizeof(*out->drift_ppb));
	out->error_ns = malloc(n_hosts * sizeof(*out->error_ns));
	out->solved = malloc(n_hosts);
	active = malloc(n_hosts);
	x2 = calloc(2 * (size_t)n_hosts, sizeof(*x2)); /* unsolved hosts stay at 0 */
	work = malloc(8 * (size_t)n_hosts * sizeof(*work));
	if (!out->offset_ns || !out->drift_ppb || !out->error_ns || !out->solved || !active || !x2 || !work)
		goto fail;

	/* error_ns holds the path variance until the square root below */
	rc = tree_solve(&g, edges, reference, out->error_ns, x2, out->solved, &out->n_solved);
	if (rc < 0)
		goto fail;
	for (uint32_t i = 0; i < n_hosts; i++) {
		active[i] = out->solved[i] && i != reference;
		out->error_ns[i] = out->solved[i] ? sqrt(out->error_ns[i]) : NAN;
	}
	start_residual(edges, n_edges, n_hosts, active, x2, work);
	out->iterations = cg_solve(&g, active, x2, work, tol, max_it, work + 2 * (size_t)n_hosts);
	for (uint32_t i = 0; i < n_hosts; i++) {
		out->offset_ns[i] = x2[2 * i];
		out->drift_ppb[i] = x2[2 * i + 1];
	}
	residuals(edges, n_edges, n_hosts, out);
	rc = 0;
	goto done;
fail:
	fq_mesh_solution_free(out);
done:
	free(work);
	free(x2);
	free(active);
	graph_free(&g);
	return rc;
}
