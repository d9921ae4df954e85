/* mesh loop-closure weighting: a pair biased well within its own error
 * bound (a one-sided standing queue) is down-weighted by the loops around
 * it (pure: synthetic estimates). */
#include <math.h>
#include <stdlib.h>

#include "controller/mesh.h"
#include "tests/unit/tap.h"

#define H 6

static size_t edges(struct fq_mesh_edge *e, const double *truth, unsigned *seed, double bias)
{
	size_t m = 0;

	for (uint32_t a = 0; a < H; a++)
		for (uint32_t b = 0; b < H; b++) {
			double noise = (double)(rand_r(seed) % 201 - 100); /* +-100 ns */

			if (a == b)
				continue;
			e[m].a = a;
			e[m].b = b;
			e[m].offset_ns = truth[b] - truth[a] + noise;
			/* the pair 0 <-> 2 crosses a queue one way: biased by
			 * half of it, both directions alike */
			if (a == 0 && b == 2)
				e[m].offset_ns += bias;
			if (a == 2 && b == 0)
				e[m].offset_ns -= bias;
			e[m].drift_ppb = 0;
			e[m].error_ns = 15000; /* the round-trip bound: it does not see the bias */
			m++;
		}
	return m;
}

int main(void)
{
	double truth[H] = {0, 12345678, -9876543, 55555, -100000, 31415926};
	struct fq_mesh_edge e[H * H];
	struct fq_mesh_solution plain, robust, none;
	struct fq_mesh_options ro = {.robust_passes = 5}, zero = {0};
	unsigned seed = 9;
	size_t m = edges(e, truth, &seed, 5000);
	double ep, er, worst = 0;

	is_int(fq_mesh_solve(H, e, m, 0, NULL, &plain, NULL), 0, "plain solve");
	is_int(fq_mesh_solve(H, e, m, 0, &ro, &robust, NULL), 0, "robust solve (5 passes)");
	ep = fabs(plain.offset_ns[2] - truth[2]);
	er = fabs(robust.offset_ns[2] - truth[2]);
	ok(ep > 1000, "plain: the biased pair pulls host 2 by %.0f ns", ep);
	ok(er < 150, "robust: host 2 within %.0f ns (< 150)", er);
	for (unsigned i = 0; i < H; i++)
		worst = fmax(worst, fabs(robust.offset_ns[i] - truth[i]));
	ok(worst < 150, "robust: every host within %.0f ns", worst);
	is_int(fq_mesh_solve(H, e, m, 0, &zero, &none, NULL), 0, "robust_passes 0 solves");
	ok(none.offset_ns[2] == plain.offset_ns[2] && none.offset_ns[5] == plain.offset_ns[5],
	   "robust_passes 0 is the plain solve");
	fq_mesh_solution_free(&plain);
	fq_mesh_solution_free(&robust);
	fq_mesh_solution_free(&none);

	/* consistent estimates: nothing to re-weigh, the same answer */
	seed = 1;
	m = edges(e, truth, &seed, 0);
	for (size_t i = 0; i < m; i++)
		e[i].offset_ns = truth[e[i].b] - truth[e[i].a];
	is_int(fq_mesh_solve(H, e, m, 0, &ro, &robust, NULL), 0, "exact estimates, robust solve");
	ok(fabs(robust.offset_ns[5] - truth[5]) < 1, "exact estimates: exact answer (%.3f ns off)",
	   robust.offset_ns[5] - truth[5]);
	fq_mesh_solution_free(&robust);
	return done_testing();
}
