/* common/clock: timespec conversions and the realtime -> raw cross-stamp. */
#include "common/clock.h"

#include <errno.h>

#include "tests/unit/tap.h"

int main(void)
{
	struct timespec ts = fq_ns_to_timespec(-1);
	struct fq_xstamp x;

	ok(ts.tv_sec == -1 && ts.tv_nsec == 999999999, "-1 ns normalises to {-1 s, 999999999 ns}");
	is_int(fq_timespec_to_ns(&ts), -1, "... and back");
	ts = fq_ns_to_timespec(3 * FQ_NSEC_PER_SEC + 5);
	ok(ts.tv_sec == 3 && ts.tv_nsec == 5, "3 s + 5 ns");

	/* Pure estimator: the tightest bracket wins; its midpoint is the instant. */
	struct fq_xstamp_sample s[] = {
	    {1000, 5000500, 2000}, /* width 1000 */
	    {3000, 5003100, 3200}, /* width 200: best; mid 3100, real-mid = 5000000 */
	    {4000, 9999999, 3000}, /* inverted: ignored */
	};
	is_int(fq_xstamp_from_samples(s, 3, &x), 0, "estimate from 3 samples");
	is_int(x.offset_ns, 5000000, "offset from the tightest bracket");
	is_int(x.error_ns, 100, "error = half its width");
	is_int(x.taken_raw_ns, 3100, "taken at its midpoint");
	is_int(fq_realtime_to_raw(&x, 5003100), 3100, "a realtime stamp maps onto raw");
	is_int(fq_xstamp_from_samples(s + 2, 1, &x), -EINVAL, "only inverted brackets: -EINVAL");
	is_int(fq_xstamp_from_samples(s, 0, &x), -EINVAL, "no samples: -EINVAL");
	is_int(fq_xstamp_measure(0, &x), -EINVAL, "measure 0: -EINVAL");

	/* Live: the measured offset predicts REALTIME from RAW within its bound
	 * (plus what a second measurement's own bracket adds). */
	is_int(fq_xstamp_measure(16, &x), 0, "live cross-stamp");
	ok(x.error_ns >= 0 && x.error_ns < 1000000, "live error bound %" PRId64 " ns < 1 ms", x.error_ns);
	{
		int64_t a = fq_now_ns(), r = fq_realtime_ns(), b = fq_now_ns();
		int64_t predicted = r - x.offset_ns;
		ok(predicted >= a - x.error_ns - 1000000 && predicted <= b + x.error_ns + 1000000,
		   "realtime maps into the raw bracket it was read in");
	}
	{
		struct fq_xstamp r = {0};
		int64_t t0;
		is_int(fq_xstamp_refresh(&r, fq_now_ns(), FQ_NSEC_PER_SEC, 8), 1, "never taken: measured");
		t0 = r.taken_raw_ns;
		is_int(fq_xstamp_refresh(&r, t0 + FQ_NSEC_PER_SEC / 2, FQ_NSEC_PER_SEC, 8), 0,
		       "half a second old: still fresh");
		is_int(fq_xstamp_refresh(&r, t0 + 2 * FQ_NSEC_PER_SEC, FQ_NSEC_PER_SEC, 8), 1,
		       "two seconds old: re-measured");
		ok(r.taken_raw_ns > t0, "... with a newer instant");
		r.taken_raw_ns = 0;
		is_int(fq_xstamp_refresh(&r, fq_now_ns(), FQ_NSEC_PER_SEC, 65), -EINVAL,
		       "65 brackets: -EINVAL");
	}
	ok(fq_now_ns() > 0, "MONOTONIC_RAW is positive");
	return done_testing();
}
