/* controller/mesh: the network-effect clock solve, against hand-worked
 * cases, a dense direct solve, and seeded random graphs with known truth. */
#include "controller/mesh.h"

#include <errno.h>
#include <math.h>

#include "tests/unit/tap.h"

static uint64_t rng_state;

static uint64_t rng_next(void)
{
	/* splitmix64: the same sequence on every platform */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double rng_uniform(void) /* [0, 1) */
{
	return (double)(rng_next() >> 11) * 0x1.0p-53;
}

static double rng_gauss(void)
{
	double u = 1.0 - rng_uniform(), v = rng_uniform();
	return sqrt(-2.0 * log(u)) * cos(2 * M_PI * v);
}

static int near(double got, double want, double tol)
{
	return fabs(got - want) <= tol;
}

/* A noisy estimate of truth[b] - truth[a] with standard deviation err. */
static struct fq_mesh_edge noisy_edge(uint32_t a, uint32_t b, const double *truth, const double *tdrift,
				      double err)
{
	return (struct fq_mesh_edge){a, b, truth[b] - truth[a] + err * rng_gauss(),
				     tdrift[b] - tdrift[a] + err / 100 * rng_gauss(), err};
}

/* Dense Cholesky solve of the normal equations with the reference row and
 * column removed: the exact least-squares answer to compare CG with. */
static int dense_solve(uint32_t n, const struct fq_mesh_edge *e, size_t m, uint32_t ref, double *x)
{
	uint32_t d = n - 1;
	double *A = calloc((size_t)d * d, sizeof(*A)), *b = calloc(d, sizeof(*b));
#define IDX(i) ((i) < ref ? (i) : (i)-1)
	if (!A || !b)
		return -ENOMEM;
	for (size_t k = 0; k < m; k++) {
		double w = 1 / (e[k].error_ns * e[k].error_ns);
		uint32_t a = e[k].a, c = e[k].b;

		if (a != ref) {
			A[IDX(a) * d + IDX(a)] += w;
			b[IDX(a)] -= w * e[k].offset_ns;
		}
		if (c != ref) {
			A[IDX(c) * d + IDX(c)] += w;
			b[IDX(c)] += w * e[k].offset_ns;
		}
		if (a != ref && c != ref) {
			A[IDX(a) * d + IDX(c)] -= w;
			A[IDX(c) * d + IDX(a)] -= w;
		}
	}
	for (uint32_t j = 0; j < d; j++) { /* A = L L^T in place (lower) */
		for (uint32_t k = 0; k < j; k++)
			A[j * d + j] -= A[j * d + k] * A[j * d + k];
		A[j * d + j] = sqrt(A[j * d + j]);
		for (uint32_t i = j + 1; i < d; i++) {
			for (uint32_t k = 0; k < j; k++)
				A[i * d + j] -= A[i * d + k] * A[j * d + k];
			A[i * d + j] /= A[j * d + j];
		}
	}
	for (uint32_t i = 0; i < d; i++) { /* L y = b */
		for (uint32_t k = 0; k < i; k++)
			b[i] -= A[i * d + k] * b[k];
		b[i] /= A[i * d + i];
	}
	for (uint32_t i = d; i-- > 0;) { /* L^T x = y */
		for (uint32_t k = i + 1; k < d; k++)
			b[i] -= A[k * d + i] * b[k];
		b[i] /= A[i * d + i];
	}
	for (uint32_t i = 0; i < n; i++)
		x[i] = i == ref ? 0 : b[IDX(i)];
#undef IDX
	free(A);
	free(b);
	return 0;
}

/* Each host probes `peers` distinct random others; errors uniform in
 * [emin, emax]. Returns the edge count written to e. */
static size_t random_graph(uint32_t n, unsigned peers, const double *truth, const double *tdrift, double emin,
			   double emax, struct fq_mesh_edge *e)
{
	size_t m = 0;

	for (uint32_t a = 0; a < n; a++) {
		size_t first = m;

		while (m - first < peers) {
			uint32_t b = (uint32_t)(rng_next() % n);
			int dup = b == a;

			for (size_t k = first; k < m && !dup; k++)
				dup = e[k].b == b;
			if (!dup)
				e[m++] =
				    noisy_edge(a, b, truth, tdrift, emin + (emax - emin) * rng_uniform());
		}
	}
	return m;
}

static void test_args(void)
{
	struct fq_mesh_edge e = {0, 1, 5, 0, 1};
	struct fq_mesh_solution s;

	is_int(fq_mesh_solve(2, &e, 1, 2, NULL, &s, NULL), -EINVAL, "reference out of range: -EINVAL");
	ok(s.offset_ns == NULL && s.n_hosts == 0, "... and the solution is left empty");
	is_int(fq_mesh_solve(0, NULL, 0, 0, NULL, &s, NULL), -EINVAL, "no hosts: -EINVAL");
	is_int(fq_mesh_solve(2, &e, 1, 0, NULL, NULL, NULL), -EINVAL, "no solution pointer: -EINVAL");
	fq_mesh_solution_free(&s); /* safe on an empty one */

	is_int(fq_mesh_solve(1, NULL, 0, 0, NULL, &s, NULL), 0, "a single host solves");
	ok(s.n_solved == 1 && s.solved[0] && s.offset_ns[0] == 0 && s.error_ns[0] == 0 && s.iterations == 0,
	   "... as the reference: offset 0, error 0, no iterations");
	ok(s.rms_residual_ns == 0 && s.max_residual_ns == 0, "... no residuals");
	fq_mesh_solution_free(&s);
}

static void test_triangle(void)
{
	/* clock(1)-clock(0) = 10, clock(2)-clock(1) = 20, clock(2)-clock(0) =
	 * 33: the loop misses closure by 3 ns. Least squares spreads the 3 ns
	 * in proportion to the variances 1 : 4 : 1 -> 0.5, 2, 0.5. */
	struct fq_mesh_edge e[] = {{0, 1, 10, 1.0, 1}, {1, 2, 20, 2.0, 2}, {0, 2, 33, 6.0, 1}};
	struct fq_mesh_solution s;
	size_t skipped = 99;
	double r[3];

	is_int(fq_mesh_solve(3, e, 3, 0, NULL, &s, &skipped), 0, "triangle solves");
	is_int(skipped, 0, "... nothing skipped");
	for (int i = 0; i < 3; i++)
		r[i] = s.offset_ns[e[i].b] - s.offset_ns[e[i].a] - e[i].offset_ns;
	ok(near(s.offset_ns[1], 10.5, 1e-9) && near(s.offset_ns[2], 32.5, 1e-9),
	   "x1 = 10.5, x2 = 32.5 (got %.9f %.9f)", s.offset_ns[1], s.offset_ns[2]);
	ok(near(r[0], 0.5, 1e-9) && near(r[1], 2.0, 1e-9) && near(r[2], -0.5, 1e-9),
	   "residuals 0.5, 2, -0.5: distributed by variance (got %.9f %.9f %.9f)", r[0], r[1], r[2]);
	ok(near(e[0].offset_ns + r[0] + e[1].offset_ns + r[1] - (e[2].offset_ns + r[2]), 0, 1e-9),
	   "the corrected loop closes exactly");
	ok(near(s.max_residual_ns, 2.0, 1e-9), "max residual 2 ns (got %.9f)", s.max_residual_ns);
	ok(near(s.rms_residual_ns, sqrt(1.5 / 2.25), 1e-9), "weighted RMS residual sqrt(1.5/2.25) (got %.9f)",
	   s.rms_residual_ns);
	/* drift: 1 + 2 - 6 = -3 ppb of misclosure, spread the same way */
	ok(near(s.drift_ppb[1], 1.5, 1e-9) && near(s.drift_ppb[2], 5.5, 1e-9), "drift solved the same way");
	ok(near(s.error_ns[1], 1, 1e-12) && near(s.error_ns[2], 1, 1e-12) && s.error_ns[0] == 0,
	   "error: the best path's (direct edges here)");
	ok(s.iterations <= 2, "two unknowns: CG done in <= 2 iterations (%u)", s.iterations);
	fq_mesh_solution_free(&s);
}

static void test_chain_and_duplicates(void)
{
	struct fq_mesh_edge chain[] = {
	    {0, 1, 100, 1, 3}, {1, 2, -50, 2, 4}, {2, 3, 7, 3, 12}, {4, 3, 1e6, 4, 1}};
	struct fq_mesh_edge dup[] = {{0, 1, 10, 0, 1}, {1, 0, -12, 0, 1}, {0, 1, 13, 0, 2}};
	struct fq_mesh_solution s;

	is_int(fq_mesh_solve(5, chain, 4, 0, NULL, &s, NULL), 0, "chain of 5 solves");
	ok(near(s.offset_ns[1], 100, 1e-9) && near(s.offset_ns[2], 50, 1e-9) &&
	       near(s.offset_ns[3], 57, 1e-9) && near(s.offset_ns[4], 57 - 1e6, 1e-6),
	   "a tree is solved exactly: offsets add up along it");
	ok(near(s.drift_ppb[3], 6, 1e-9) && near(s.drift_ppb[4], 2, 1e-9), "drift adds up too");
	ok(s.max_residual_ns < 1e-6, "no loops, no residual (%.3g)", s.max_residual_ns);
	ok(near(s.error_ns[3], 13, 1e-9) && near(s.error_ns[4], sqrt(170), 1e-9),
	   "error: root-sum-square along the path (13, sqrt(170))");
	fq_mesh_solution_free(&s);

	is_int(fq_mesh_solve(2, dup, 3, 0, NULL, &s, NULL), 0, "duplicate edges, both directions");
	ok(near(s.offset_ns[1], (10 + 12 + 13 * 0.25) / 2.25, 1e-9),
	   "weighted mean of 10, 12 (reversed), 13 (%.6f)", s.offset_ns[1]);
	ok(near(s.error_ns[1], sqrt(1 / 2.25), 1e-12), "error of the merged estimate: 1/sqrt(sum w)");
	fq_mesh_solution_free(&s);

	is_int(fq_mesh_solve(5, chain, 4, 3, NULL, &s, NULL), 0, "reference in the middle");
	ok(near(s.offset_ns[0], -57, 1e-9) && s.offset_ns[3] == 0 && near(s.offset_ns[4], -1e6, 1e-6),
	   "offsets relative to host 3");
	fq_mesh_solution_free(&s);
}

static void test_disconnected_and_bad(void)
{
	struct fq_mesh_edge e[] = {
	    {0, 1, 10, 0, 1},       {1, 2, 10, 0, 1}, {2, 0, -20, 0, 1}, {3, 4, 5, 0, 1}, /* host 5 alone */
	    {0, 9, 1, 0, 1},        {9, 0, 1, 0, 1},  {2, 2, 1, 0, 1},   {0, 1, NAN, 0, 1},
	    {0, 1, 1, INFINITY, 1}, {0, 1, 1, 0, 0},  {0, 1, 1, 0, -1},  {0, 1, 1, 0, NAN},
	    {0, 1, 1, 0, 1e-200},
	};
	struct fq_mesh_solution s;
	size_t skipped = 0;

	is_int(fq_mesh_solve(6, e, sizeof(e) / sizeof(e[0]), 0, NULL, &s, &skipped), 0,
	       "components and bad edges");
	is_int(skipped, 9,
	       "9 bad edges skipped: out of range x2, a == b, NaN, inf, error 0, < 0, NaN, underflow");
	is_int(s.n_solved, 3, "3 hosts share the reference's component");
	ok(s.solved[0] && s.solved[1] && s.solved[2] && !s.solved[3] && !s.solved[4] && !s.solved[5],
	   "hosts 3, 4 (other component) and 5 (isolated) unsolved");
	ok(s.offset_ns[3] == 0 && s.offset_ns[4] == 0 && isnan(s.error_ns[4]) && isnan(s.error_ns[5]),
	   "unsolved: offset 0, error NaN");
	ok(near(s.offset_ns[1], 10, 1e-9) && near(s.offset_ns[2], 20, 1e-9),
	   "bad edges did not move the solution");
	ok(s.max_residual_ns < 1e-9, "residuals over the solved component only");
	fq_mesh_solution_free(&s);

	is_int(fq_mesh_solve(6, e, 4, 4, NULL, &s, NULL), 0, "reference in the small component");
	ok(s.n_solved == 2 && s.solved[3] && near(s.offset_ns[3], -5, 1e-9), "host 3 at -5 from host 4");
	fq_mesh_solution_free(&s);
}

/* Ring of 100 hosts, each probing its 3 successors (the ring part of a peer
 * plan): m = 300 edges, n = 100 hosts. By Foster's theorem the sum over
 * edges of w_e * R_eff(e) is n - 1, so E[sum w_e (solved - true)^2] = 99
 * against E[sum w_e (direct - true)^2] = m = 300 for the raw estimates: the
 * expected RMS ratio is sqrt(99/300) = 0.574, whatever the weights. */
static void test_ring_network_effect(void)
{
	enum {
		N = 100,
		S = 3,
		TRIALS = 20
	};
	static struct fq_mesh_edge e[N * S];
	double truth[N], tdrift[N], num = 0, den = 0, want = sqrt((N - 1.0) / (N * S));
	unsigned outside = 0, worst_it = 0;
	int fail = 0;

	rng_state = 42;
	for (int t = 0; t < TRIALS; t++) {
		struct fq_mesh_solution s;

		for (int i = 0; i < N; i++) {
			truth[i] = 1e8 * (2 * rng_uniform() - 1); /* +-100 ms */
			tdrift[i] = 1e5 * (2 * rng_uniform() - 1);
		}
		for (int i = 0; i < N; i++)
			for (int j = 1; j <= S; j++)
				e[i * S + j - 1] =
				    noisy_edge(i, (i + j) % N, truth, tdrift, 10 + 90 * rng_uniform());
		if (fq_mesh_solve(N, e, N * S, 0, NULL, &s, NULL) < 0 || s.n_solved != N) {
			fail = 1;
			break;
		}
		for (int k = 0; k < N * S; k++) {
			double w = 1 / (e[k].error_ns * e[k].error_ns), td = truth[e[k].b] - truth[e[k].a];
			double sd = s.offset_ns[e[k].b] - s.offset_ns[e[k].a];

			num += w * (sd - td) * (sd - td);
			den += w * (e[k].offset_ns - td) * (e[k].offset_ns - td);
		}
		for (int i = 0; i < N; i++)
			outside += fabs(s.offset_ns[i] - (truth[i] - truth[0])) > 3 * s.error_ns[i];
		worst_it = s.iterations > worst_it ? s.iterations : worst_it;
		fq_mesh_solution_free(&s);
	}
	ok(!fail, "ring of 100 x 3 successors: %d seeded trials solve every host", TRIALS);
	ok(sqrt(num / den) < 1, "network effect: solved pairs closer to truth than their direct estimates");
	ok(fabs(sqrt(num / den) - want) < 0.05,
	   "weighted RMS error ratio solved/direct %.3f, expected %.3f (Foster)", sqrt(num / den), want);
	ok(outside <= N * TRIALS / 100, "error bound sound: %u of %d hosts beyond 3 x error_ns (<= 1%%)",
	   outside, N * TRIALS);
	ok(worst_it < 2000, "CG converged (worst %u iterations)", worst_it);
}

static void test_random_vs_dense(void)
{
	enum {
		N = 200,
		P = 4
	};
	static struct fq_mesh_edge e[N * P];
	double truth[N], tdrift[N], x[N], dmax = 0, dmax_tight = 0;
	struct fq_mesh_options tight = {.tolerance_ns = 1e-7};
	struct fq_mesh_solution s;
	size_t m;

	rng_state = 7;
	for (int i = 0; i < N; i++) {
		truth[i] = 1e6 * rng_gauss();
		tdrift[i] = 0;
	}
	m = random_graph(N, P, truth, tdrift, 20, 2000, e);
	if (dense_solve(N, e, m, 17, x) < 0)
		skip_all("out of memory");
	is_int(fq_mesh_solve(N, e, m, 17, NULL, &s, NULL), 0, "random 200 hosts x 4 peers, reference 17");
	for (int i = 0; i < N; i++)
		dmax = fmax(dmax, fabs(s.offset_ns[i] - x[i]));
	fq_mesh_solution_free(&s);
	fq_mesh_solve(N, e, m, 17, &tight, &s, NULL);
	for (int i = 0; i < N; i++)
		dmax_tight = fmax(dmax_tight, fabs(s.offset_ns[i] - x[i]));
	ok(dmax < 0.1, "CG matches the dense Cholesky solve within 0.1 ns at the default tolerance (%.2g ns)",
	   dmax);
	ok(dmax_tight < 1e-5, "... and within 1e-5 ns at tolerance 1e-7 (%.2g ns, %u iterations)", dmax_tight,
	   s.iterations);
	fq_mesh_solution_free(&s);
}

/* 1000 hosts x 10 random peers, errors 20..200 ns. Expected edge RMS ratio
 * by Foster's theorem sqrt(999/10000) = 0.316. Offsets spread +-100 ms, then
 * +-1 day (MONOTONIC_RAW clocks of hosts booted on different days). */
static void test_random_1000(void)
{
	enum {
		N = 1000,
		P = 10
	};
	static struct fq_mesh_edge e[N * P];
	static double truth[N], tdrift[N];
	const double spread[] = {1e8, 8.64e13};

	for (int t = 0; t < 4; t++) {
		struct fq_mesh_solution s;
		double num = 0, den = 0, hmax = 0, dmax = 0, want = sqrt((N - 1.0) / (N * P));
		unsigned outside = 0;
		size_t m;

		rng_state = 1000 + t;
		for (int i = 0; i < N; i++) {
			truth[i] = spread[t % 2] * (2 * rng_uniform() - 1);
			tdrift[i] = 2e4 * rng_gauss();
		}
		m = random_graph(N, P, truth, tdrift, 20, 200, e);
		if (!ok(fq_mesh_solve(N, e, m, 0, NULL, &s, NULL) == 0 && s.n_solved == N,
			"seed %d, spread +-%.3g ns: 1000 hosts solved", 1000 + t, spread[t % 2]))
			continue;
		for (size_t k = 0; k < m; k++) {
			double w = 1 / (e[k].error_ns * e[k].error_ns), td = truth[e[k].b] - truth[e[k].a];
			double sd = s.offset_ns[e[k].b] - s.offset_ns[e[k].a];

			num += w * (sd - td) * (sd - td);
			den += w * (e[k].offset_ns - td) * (e[k].offset_ns - td);
		}
		for (int i = 0; i < N; i++) {
			double err = fabs(s.offset_ns[i] - (truth[i] - truth[0]));

			hmax = fmax(hmax, err);
			outside += err > 3 * s.error_ns[i];
			dmax = fmax(dmax, fabs(s.drift_ppb[i] - (tdrift[i] - tdrift[0])));
		}
		ok(fabs(sqrt(num / den) - want) < 0.03,
		   "... edge RMS error ratio solved/direct %.3f, expected %.3f", sqrt(num / den), want);
		ok(hmax < 200, "... every host within 200 ns of truth (worst %.1f ns)", hmax);
		ok(outside <= N / 100, "... %u hosts beyond 3 x error_ns (<= 1%%)", outside);
		ok(dmax < 2, "... drift within 2 ppb of truth (worst %.3f)", dmax);
		ok(s.iterations < 200 && s.rms_residual_ns > 0,
		   "... %u iterations, residual RMS %.1f max %.1f ns", s.iterations, s.rms_residual_ns,
		   s.max_residual_ns);
		fq_mesh_solution_free(&s);
	}
}

int main(void)
{
	test_args();
	test_triangle();
	test_chain_and_duplicates();
	test_disconnected_and_bad();
	test_ring_network_effect();
	test_random_vs_dense();
	test_random_1000();
	return done_testing();
}
