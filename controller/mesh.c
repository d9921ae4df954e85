/*
 * mesh: the network-effect clock solve (see mesh.h for the contract).
 *
 * Steps, each O(edges) or O(edges log hosts):
 *  1. merge the valid edges into a weighted graph in CSR form, one entry per
 *     neighbour (parallel edges and both directions of a pair combined into
 *     their weighted mean, which is what least squares makes of them);
 *  2. Dijkstra from the reference with cost = variance (1/w): finds the
 *     hosts connected to the reference, the error bound of each (the
 *     root-sum-square error of its best path) and, by summing offsets along
 *     the tree, a starting point already within the path error of the answer;
 *  3. Jacobi-preconditioned conjugate gradient on the Laplacian with the
 *     reference row and column removed, once for offsets and once for drift,
 *     started from the tree solution. The residual is computed from the tree
 *     residuals of the edges, never from x itself, so offsets of days
 *     (1e14 ns) lose no precision to cancellation.
 */
#include "controller/mesh.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MESH_TOLERANCE_NS   0.01
#define MESH_MAX_ITERATIONS 2000
#define MESH_NONE           UINT32_MAX

/* Row i lists each neighbour j once: the summed weight of every edge between
 * i and j, and their weighted mean estimates of x[j] - x[i]. */
struct mesh_graph {
	uint32_t n;
	size_t *row;   /* [n + 1] */
	uint32_t *col; /* [nnz] */
	double *w;     /* [nnz] */
	double *off;   /* [nnz] ns */
	double *drift; /* [nnz] ppb */
	double *diag;  /* [n] sum of row i's weights */
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
	free(g->col);
	free(g->w);
	free(g->off);
	free(g->drift);
	free(g->diag);
	memset(g, 0, sizeof(*g));
}

/* Merge duplicates of row entries in place, rows in order: slot[j] remembers
 * where j was last written; if that is inside the row being written, j is
 * already in it. Then turn the weighted sums into means. */
static int graph_merge(struct mesh_graph *g)
{
	size_t *slot = malloc(g->n * sizeof(*slot));
	size_t out = 0, begin = 0;

	if (!slot)
		return -ENOMEM;
	for (uint32_t i = 0; i < g->n; i++)
		slot[i] = SIZE_MAX;
	for (uint32_t i = 0; i < g->n; i++) {
		size_t end = g->row[i + 1], start = out;

		for (size_t k = begin; k < end; k++) {
			uint32_t j = g->col[k];

			if (slot[j] != SIZE_MAX && slot[j] >= start) {
				g->w[slot[j]] += g->w[k];
				g->off[slot[j]] += g->off[k];
				g->drift[slot[j]] += g->drift[k];
				continue;
			}
			g->col[out] = j;
			g->w[out] = g->w[k];
			g->off[out] = g->off[k];
			g->drift[out] = g->drift[k];
			slot[j] = out++;
		}
		g->row[i] = start;
		g->diag[i] = 0;
		for (size_t k = start; k < out; k++) {
			g->off[k] /= g->w[k];
			g->drift[k] /= g->w[k];
			g->diag[i] += g->w[k];
		}
		begin = end;
	}
	g->row[g->n] = out;
	free(slot);
	return 0;
}

static int graph_build(struct mesh_graph *g, uint32_t n, const struct fq_mesh_edge *edges, size_t n_edges,
		       size_t *skipped)
{
	size_t bad = 0, nnz;
	size_t *cur = NULL;
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
	nnz = g->row[n];
	cur = malloc((size_t)n * sizeof(*cur) + 1);
	g->col = malloc(nnz * sizeof(*g->col) + 1);
	g->w = malloc(nnz * sizeof(*g->w) + 1);
	g->off = malloc(nnz * sizeof(*g->off) + 1);
	g->drift = malloc(nnz * sizeof(*g->drift) + 1);
	if (!cur || !g->col || !g->w || !g->off || !g->drift)
		goto fail;
	memcpy(cur, g->row, (size_t)n * sizeof(*cur));
	for (size_t e = 0; e < n_edges; e++) {
		const struct fq_mesh_edge *ed = &edges[e];
		size_t ka, kb;

		if (!edge_weight(ed, n, &w))
			continue;
		ka = cur[ed->a]++;
		kb = cur[ed->b]++;
		g->col[ka] = ed->b;
		g->w[ka] = w;
		g->off[ka] = w * ed->offset_ns;
		g->drift[ka] = w * ed->drift_ppb;
		g->col[kb] = ed->a;
		g->w[kb] = w;
		g->off[kb] = -w * ed->offset_ns;
		g->drift[kb] = -w * ed->drift_ppb;
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

/* An indexed binary min-heap of hosts keyed by dist[]. */
struct mesh_heap {
	uint32_t *h, *pos, len;
	const double *key;
};

static void heap_swap(struct mesh_heap *hp, uint32_t a, uint32_t b)
{
	uint32_t t = hp->h[a];

	hp->h[a] = hp->h[b];
	hp->h[b] = t;
	hp->pos[hp->h[a]] = a;
	hp->pos[hp->h[b]] = b;
}

static void heap_up(struct mesh_heap *hp, uint32_t i)
{
	while (i > 0 && hp->key[hp->h[(i - 1) / 2]] > hp->key[hp->h[i]]) {
		heap_swap(hp, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void heap_down(struct mesh_heap *hp, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < hp->len && hp->key[hp->h[l]] < hp->key[hp->h[m]])
			m = l;
		if (r < hp->len && hp->key[hp->h[r]] < hp->key[hp->h[m]])
			m = r;
		if (m == i)
			return;
		heap_swap(hp, i, m);
		i = m;
	}
}

/* Set key[v] (smaller than before) and put v in the heap or move it up. */
static void heap_decrease(struct mesh_heap *hp, uint32_t v)
{
	if (hp->pos[v] == MESH_NONE) {
		hp->h[hp->len] = v;
		hp->pos[v] = hp->len++;
	}
	heap_up(hp, hp->pos[v]);
}

static uint32_t heap_pop(struct mesh_heap *hp)
{
	uint32_t v = hp->h[0];

	hp->len--;
	if (hp->len > 0) {
		hp->h[0] = hp->h[hp->len];
		hp->pos[hp->h[0]] = 0;
		heap_down(hp, 0);
	}
	hp->pos[v] = MESH_NONE;
	return v;
}

/* Dijkstra with cost 1/w (the variance of a merged edge estimate): var[i] is
 * the variance of host i's best single-path estimate, x and d its offset and
 * drift summed along that path. Marks the hosts it reaches as solved. */
static int tree_solve(const struct mesh_graph *g, uint32_t ref, double *var, double *x, double *d,
		      uint8_t *solved, uint32_t *n_solved)
{
	struct mesh_heap hp = {.key = var};
	uint8_t *done = solved;

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
		done[i] = 0;
	}
	*n_solved = 0;
	var[ref] = 0;
	x[ref] = 0;
	d[ref] = 0;
	heap_decrease(&hp, ref);
	while (hp.len > 0) {
		uint32_t i = heap_pop(&hp);

		done[i] = 1;
		(*n_solved)++;
		for (size_t k = g->row[i]; k < g->row[i + 1]; k++) {
			uint32_t j = g->col[k];
			double v = var[i] + 1.0 / g->w[k];

			if (done[j] || v >= var[j])
				continue;
			var[j] = v;
			x[j] = x[i] + g->off[k];
			d[j] = d[i] + g->drift[k];
			heap_decrease(&hp, j);
		}
	}
	free(hp.h);
	free(hp.pos);
	return 0;
}

/* Preconditioned CG on L x = b over the active hosts (solved, not the
 * reference), from the starting point in x. est[] is the per-entry estimate
 * (offset or drift). r = b - L x is formed edge by edge as
 * sum_j w_ij (x_j - x_i - est_ij): the tree residuals, small numbers.
 * Stops when every host's Jacobi correction |r_i / L_ii| is <= tol.
 * work: 4 * n doubles. Returns the iterations done. */
static unsigned cg_solve(const struct mesh_graph *g, const double *est, const uint8_t *active, double *x,
			 double tol, unsigned max_it, double *work)
{
	uint32_t n = g->n;
	double *r = work, *z = work + n, *p = work + 2 * (size_t)n, *q = work + 3 * (size_t)n;
	double rz = 0, zmax = 0;
	unsigned it;

	for (uint32_t i = 0; i < n; i++) {
		double s = 0;

		if (active[i])
			for (size_t k = g->row[i]; k < g->row[i + 1]; k++)
				s += g->w[k] * (x[g->col[k]] - x[i] - est[k]);
		r[i] = s;
		z[i] = active[i] ? s / g->diag[i] : 0;
		p[i] = z[i];
		rz += r[i] * z[i];
		zmax = fmax(zmax, fabs(z[i]));
	}
	for (it = 0; it < max_it && zmax > tol; it++) {
		double pq = 0, alpha, beta, rz_new = 0;

		for (uint32_t i = 0; i < n; i++) {
			double s = 0;

			if (active[i]) {
				s = g->diag[i] * p[i];
				for (size_t k = g->row[i]; k < g->row[i + 1]; k++)
					s -= g->w[k] * p[g->col[k]];
			}
			q[i] = s;
			pq += p[i] * s;
		}
		if (!(pq > 0))
			break; /* p is numerically zero: nothing left to reduce */
		alpha = rz / pq;
		zmax = 0;
		for (uint32_t i = 0; i < n; i++) {
			x[i] += alpha * p[i];
			r[i] -= alpha * q[i];
			z[i] = active[i] ? r[i] / g->diag[i] : 0;
			rz_new += r[i] * z[i];
			zmax = fmax(zmax, fabs(z[i]));
		}
		beta = rz_new / rz;
		rz = rz_new;
		for (uint32_t i = 0; i < n; i++)
			p[i] = z[i] + beta * p[i];
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

int fq_mesh_solve(uint32_t n_hosts, const struct fq_mesh_edge *edges, size_t n_edges, uint32_t reference,
		  const struct fq_mesh_options *opts, struct fq_mesh_solution *out, size_t *skipped)
{
	double tol = MESH_TOLERANCE_NS, *work = NULL;
	unsigned max_it = MESH_MAX_ITERATIONS, it_off, it_drift;
	struct mesh_graph g;
	uint8_t *active = NULL;
	int rc;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (reference >= n_hosts || (!edges && n_edges > 0))
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
	out->offset_ns = calloc(n_hosts, sizeof(*out->offset_ns));
	out->drift_ppb = calloc(n_hosts, sizeof(*out->drift_ppb));
	out->error_ns = calloc(n_hosts, sizeof(*out->error_ns));
	out->solved = calloc(n_hosts, sizeof(*out->solved));
	active = malloc(n_hosts);
	work = malloc(4 * (size_t)n_hosts * sizeof(*work));
	if (!out->offset_ns || !out->drift_ppb || !out->error_ns || !out->solved || !active || !work)
		goto fail;

	rc = tree_solve(&g, reference, out->error_ns, out->offset_ns, out->drift_ppb, out->solved,
			&out->n_solved);
	if (rc < 0)
		goto fail;
	for (uint32_t i = 0; i < n_hosts; i++) {
		active[i] = out->solved[i] && i != reference;
		/* error_ns held the path variance */
		out->error_ns[i] = out->solved[i] ? sqrt(out->error_ns[i]) : NAN;
	}
	it_off = cg_solve(&g, g.off, active, out->offset_ns, tol, max_it, work);
	it_drift = cg_solve(&g, g.drift, active, out->drift_ppb, tol, max_it, work);
	out->iterations = it_off > it_drift ? it_off : it_drift;
	residuals(edges, n_edges, n_hosts, out);
	rc = 0;
	goto done;
fail:
	fq_mesh_solution_free(out);
done:
	free(work);
	free(active);
	graph_free(&g);
	return rc;
}
