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
 * preconditioned conjugate gradient in O(edges) memory and time per
 * iteration: 100k hosts x 10 peers in well under a second.
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
	double tolerance_ns;  /* stop when the residual norm falls below (default 0.01 ns) */
	unsigned max_iterations; /* 0: 2000 */
};

struct fq_mesh_solution {
	uint32_t n_hosts;
	double *offset_ns; /* [n_hosts] clock(i) - clock(reference) */
	double *drift_ppb; /* [n_hosts] */
	/* [n_hosts] error bound of offset_ns[i]: the propagated error of the
	 * best-weighted path to the reference; NAN where unsolved. */
	double *error_ns;
	uint8_t *solved; /* [n_hosts] 1: connected to the reference by edges */
	uint32_t n_solved;
	unsigned iterations;
	double rms_residual_ns; /* weighted RMS of the edge residuals: the loop closure error */
	double max_residual_ns; /* largest |x[b]-x[a]-offset_e| over edges */
};

/* Solve. Edges with an endpoint out of range, a == b, a non-finite value
 * or error_ns <= 0 are skipped and counted in *skipped (may be NULL).
 * Hosts not connected to the reference are left unsolved (solved[i] = 0,
 * offsets 0). Returns 0, -EINVAL (reference >= n_hosts), -ENOMEM.
 * Free with fq_mesh_solution_free. */
int fq_mesh_solve(uint32_t n_hosts, const struct fq_mesh_edge *edges, size_t n_edges, uint32_t reference,
		  const struct fq_mesh_options *opts, struct fq_mesh_solution *out, size_t *skipped);

void fq_mesh_solution_free(struct fq_mesh_solution *s);

#endif /* FQ_CONTROLLER_MESH_H */
