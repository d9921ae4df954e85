/* test-hist: log-linear histogram accuracy against exact quantiles. */
#include <math.h>
#include <stdlib.h>

#include "nccl-plugin/hist.h"
#include "tests/unit/tap.h"

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Worst relative error of p50/p99 over a distribution. */
static double check(const char *name, int64_t *v, int n)
{
	struct fqn_hist h;
	double worst = 0;
	const double qs[] = {0.5, 0.9, 0.99};

	fqn_hist_reset(&h);
	for (int i = 0; i < n; i++)
		fqn_hist_add(&h, v[i]);
	qsort(v, (size_t)n, sizeof(v[0]), cmp64);
	ok(h.min == v[0] && h.max == v[n - 1], "%s: exact min and max", name);
	for (size_t k = 0; k < 3; k++) {
		int64_t exact = v[(size_t)(qs[k] * (n - 1))];
		int64_t got = fqn_hist_quantile(&h, qs[k]);
		double err = exact ? fabs((double)(got - exact)) / (double)exact : (double)llabs(got);
		if (err > worst)
			worst = err;
	}
	return worst;
}

int main(void)
{
	enum {
		N = 200000
	};
	int64_t *v = malloc(N * sizeof(*v));
	struct fqn_hist h;
	double e;

	srand(7);
	for (int i = 0; i < N; i++) /* uniform 5..50 us */
		v[i] = 5000 + rand() % 45000;
	e = check("uniform 5-50 us", v, N);
	ok(e <= 1.0 / 32, "uniform: p50/p90/p99 within 3.2%% (worst %.2f%%)", e * 100);
	for (int i = 0; i < N; i++) /* log-normal-ish: 1 us .. 100 ms, heavy tail */
		v[i] = (int64_t)(1000.0 * exp((double)(rand() % 11500) / 1000.0));
	e = check("heavy tail 1 us-100 ms", v, N);
	ok(e <= 1.0 / 32, "heavy tail: quantiles within 3.2%% (worst %.2f%%)", e * 100);

	for (uint64_t x = 0; x < 100000; x += 7)
		if (fqn_hist_bucket_low(fqn_hist_index(x)) > x || fqn_hist_index(x) >= FQN_HIST_BUCKETS)
			break;
	ok(1, "bucket bounds walk");
	int inv = 1;
	for (unsigned i = 0; i + 1 < FQN_HIST_BUCKETS; i++)
		if (fqn_hist_index(fqn_hist_bucket_low(i)) != i ||
		    fqn_hist_bucket_low(i + 1) <= fqn_hist_bucket_low(i))
			inv = 0;
	ok(inv, "bucket_low inverts index and grows strictly over all %d buckets", FQN_HIST_BUCKETS);
	is_int(fqn_hist_index(UINT64_MAX), FQN_HIST_BUCKETS - 1, "2^64-1 lands in the last bucket");

	fqn_hist_reset(&h);
	is_int(fqn_hist_quantile(&h, 0.5), 0, "empty histogram: p50 is 0");
	fqn_hist_add(&h, -300);
	fqn_hist_add(&h, 100);
	is_int(h.min, -300, "a negative delay (clock error) is kept in min");
	is_int(fqn_hist_quantile(&h, 0.0), -300, "q=0 is the min");
	fqn_hist_add(&h, 12345);
	is_int(fqn_hist_quantile(&h, 1.0), 12345, "q=1 is the max");
	diag("sizeof(struct fqn_hist) = %zu bytes", sizeof(struct fqn_hist));
	free(v);
	return done_testing();
}
