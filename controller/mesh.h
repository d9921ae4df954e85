/*
 * mesh: the network-effect clock solve (pure computation, no I/O).
 *
 * Every agent reports, per peer, an estimate of (peer clock - own clock)
 * with an error bound. Each estimate is an edge of the host graph. The
 * solve finds per-host offsets x[i] = clock(i) - clock(reference) that
 * minimise the weighted squared residuals
 *     sum_e w_e * (x[b_e] - x[a_e] - offset_e)^2,   w_e = 1 / error_e^2,
 * with x[reference] = 0: around every loop the corrected offsets sum to
 * zero, and a host's offset is pinned by all its paths to the reference,
 * not only its direct one. Drift is solved the same way on drift_ppb.
 *
 * The normal equations are a weighted graph Laplacian (sparse, symmetric
 * positive definite once the reference row is removed), solved by
 * Jacobi-preconditioned conjugate gradient in O(edges) memory and time per
 * iteration, started from the offsets summed along the best-weighted path
 * tree: 100k hosts x 10 peers in about 0.5 s on one core (bench-mesh).
 *
 * The network effect, quantified: by Foster's theorem the solved pair
 * offsets have sum_e w_e Var(x[b]-x[a]) = n_hosts - 1 against n_edges for
 * the raw estimates, so with k peers per host the error of a pair shrinks
 * by about sqrt(1/k) (10 peers: 0.32x).
 */
#ifndef FQ_CONTROLLER_MESH_H
#define FQ_CONTROLLER_MESH_H

#include <stddef.h>
#include <stdint.h>

/* One pairwise estimate: clock(b) - clock(a), as host a measured it.
 * Both directions of a pair may appear (a->b and b->a): both are used. */
struct fq_mesh_edge {
	uint32_t a, b;    /* host indices, < n_hosts, a != b */
	double offset_ns; /* clock(b) - clock(a) */
	double drift_ppb; /* d(clock(b) - clock(a)) / dt, parts per 10^9 */
	double error_ns;  /* > 0: the estimate's error bound (weights 1/error^2) */
};

struct fq_mesh_options {
	/* <= 0: 0.01 ns. CG stops when, for every host, the Jacobi correction
	 * |r_i| / L_ii (the move one more sweep would make, in ns) is below
	 * it; drift uses the same number in ppb. */
	double tolerance_ns;
	unsigned max_iterations; /* 0: 2000 */
	/* Loop-closure weighting. 0: plain weighted least squares. N > 0: N
	 * more solves, each re-weighting every edge by its residual from the
	 * previous one (Huber): an edge whose residual over its error is
	 * beyond robust_k times the robust scale of those ratios (1.4826 x
	 * their median) keeps only robust_k x scale / ratio of its weight. A
	 * path biased by a one-sided queue disagrees with the loops around it,
	 * so it is down-weighted even while its own bound does not show it.
	 * Each pass costs one more solve. */
	unsigned robust_passes;
	double robust_k; /* <= 0: 1.5 */
};

struct fq_mesh_solution {
	uint32_t n_hosts;
	double *offset_ns; /* [n_hosts] clock(i) - clock(reference) */
	double *drift_ppb; /* [n_hosts] */
	/* [n_hosts] error bound of offset_ns[i]: the root-sum-square error of
	 * the best-weighted path to the reference (Dijkstra on variance), NAN
	 * where unsolved. Sound: treating error_ns as independent standard
	 * deviations, that path's sum is one unbiased linear estimate of x[i],
	 * and least squares is the minimum-variance one (Gauss-Markov), so the
	 * solution's standard deviation is at most this. Cheap: a by-product of
	 * the path tree that also starts CG. (1/sqrt(L_ii) would be a lower
	 * bound: the error if every neighbour were known exactly.) The price: it
	 * ignores the other paths, so on random 10-peer meshes it is 3-5x the
	 * actual RMS error (bench-mesh). */
	double *error_ns;
	uint8_t *solved; /* [n_hosts] 1: connected to the reference by edges */
	uint32_t n_solved;
	unsigned iterations;    /* CG iterations of the slower of offset and drift (0: none needed) */
	double rms_residual_ns; /* sqrt(sum w r^2 / sum w) over the solved edges: the loop closure error */
	double max_residual_ns; /* largest |x[b]-x[a]-offset_e| over the solved edges */
};

/* Solve. Edges with an endpoint out of range, a == b, a non-finite value
 * or error_ns <= 0 (or so extreme that 1/error^2 is not a finite positive
 * number) are skipped and counted in *skipped (may be NULL). Duplicate
 * edges and both directions of a pair all count, each with its weight.
 * Hosts not connected to the reference are left unsolved (solved[i] = 0,
 * offsets 0). Does not keep edges. Returns 0, -EINVAL (reference >=
 * n_hosts, out NULL, edges NULL with n_edges > 0, n_edges > UINT32_MAX),
 * -ENOMEM; on error *out is left empty. Free with fq_mesh_solution_free
 * (safe on an empty solution). */
int fq_mesh_solve(uint32_t n_hosts, const struct fq_mesh_edge *edges, size_t n_edges, uint32_t reference,
		  const struct fq_mesh_options *opts, struct fq_mesh_solution *out, size_t *skipped);

void fq_mesh_solution_free(struct fq_mesh_solution *s);

#endif /* FQ_CONTROLLER_MESH_H */
