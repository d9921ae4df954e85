/* slurmd-agent pure logic: probe wire format, clock fit, path liveness. */
#include <errno.h>

#include "slurmd-agent/clock_fit.h"
#include "slurmd-agent/path.h"
#include "slurmd-agent/probe_wire.h"
#include "tests/unit/tap.h"

#define MS 1000000LL

static void test_wire(void)
{
	struct fq_probe in = {.type = FQ_PROBE_RESP,
			      .index = 1,
			      .session = 0xdeadbeef,
			      .pair = 1ull << 40,
			      .t0 = -5,
			      .t1 = INT64_MAX,
			      .gap_ns = 0};
	struct fq_probe out;
	uint8_t buf[FQ_PROBE_SIZE];

	fq_probe_encode(&in, buf);
	ok(fq_probe_decode(buf, sizeof(buf), &out) == 0 && out.type == in.type && out.index == 1 &&
	       out.session == in.session && out.pair == in.pair && out.t0 == -5 && out.t1 == INT64_MAX,
	   "probe round trip");
	is_int(fq_probe_decode(buf, sizeof(buf) - 1, &out), -EBADMSG, "short packet refused");
	buf[0] ^= 1;
	is_int(fq_probe_decode(buf, sizeof(buf), &out), -EBADMSG, "bad magic refused");
	buf[0] ^= 1;
	buf[4] = 2;
	is_int(fq_probe_decode(buf, sizeof(buf), &out), -EPROTONOSUPPORT, "unknown version refused");
	buf[4] = 1;
	buf[5] = 9;
	is_int(fq_probe_decode(buf, sizeof(buf), &out), -EBADMSG, "unknown type refused");
	buf[5] = FQ_PROBE_RESP;
	buf[60] = 1;
	is_int(fq_probe_decode(buf, sizeof(buf), &out), -EBADMSG, "non-zero reserved bytes refused");
	buf[60] = 0;
	buf[6] = 2;
	is_int(fq_probe_decode(buf, sizeof(buf), &out), -EBADMSG, "index 2 refused");
	in.type = FQ_PROBE_REQ;
	in.gap_ns = -1;
	fq_probe_encode(&in, buf);
	is_int(fq_probe_decode(buf, sizeof(buf), &out), -EBADMSG, "negative gap refused");
}

/* Synthetic exchange: peer clock = ours + theta + drift * t; one-way delays
 * = base + queueing noise (exponential-ish, only ever positive). */
static void test_fit(void)
{
	struct fq_clock_fit *f = fq_clock_fit_create(4000 * MS, 250 * MS, 4096);
	struct fq_clock_estimate e;
	const int64_t theta = 42500000, base = 8000;
	const double drift = 20e-6; /* 20 ppm */
	unsigned seed = 1;

	ok(f != NULL, "fit created");
	is_int(fq_clock_fit_estimate(f, 0, &e), -EAGAIN, "no samples: -EAGAIN");
	for (int64_t t = 1 * MS; t <= 4000 * MS; t += 20 * MS) {
		int64_t th = theta + (int64_t)(drift * (double)t);
		int64_t qf = (rand_r(&seed) % 4 == 0) ? 0 : rand_r(&seed) % 200000;
		int64_t qr = (rand_r(&seed) % 4 == 0) ? 0 : rand_r(&seed) % 200000;
		fq_clock_fit_add_fwd(f, t, base + qf + th);
		fq_clock_fit_add_rev(f, t + 30000, base + qr - th);
	}
	is_int(fq_clock_fit_estimate(f, 4000 * MS, &e), 0, "estimate after 4 s");
	{
		int64_t want = theta + (int64_t)(drift * 4000e6), err = e.offset_ns - want;
		ok(err > -2000 && err < 2000,
		   "offset within 2 us under 0-200 us queueing noise (error %" PRId64 " ns)", err);
		ok(e.drift_ppb > 19000 && e.drift_ppb < 21000, "drift 20 ppm recovered (%.0f ppb)",
		   e.drift_ppb);
		ok(e.bound_ns >= base && e.bound_ns <= base + 15000,
		   "hard bound between the min one-way delay and the bucket slack (%" PRId64 " ns)",
		   e.bound_ns);
		ok(e.buckets >= 14, "%u buckets used", e.buckets);
	}
	/* Old samples leave the window. */
	is_int(fq_clock_fit_estimate(f, 20000 * MS, &e), -EAGAIN, "16 s later the window is empty");
	fq_clock_fit_destroy(f);
	ok(fq_clock_fit_create(10000 * MS, 10 * MS, 100) == NULL, "more than 256 buckets refused");

	ok(fq_pair_is_pure(0, 1000, 5000, 6000, 100), "equal gaps: pure");
	ok(!fq_pair_is_pure(0, 1000, 5000, 9000, 100), "second packet queued: impure");
	ok(!fq_pair_is_pure(0, 1000, 6000, 5000, 100), "reordered: impure");
}

static void test_path(void)
{
	struct fq_path p;
	int64_t since;

	fq_path_init(&p, 0);
	fq_path_on_probe(&p, 10 * MS);
	is_int(fq_path_check(&p, 100 * MS, 250 * MS, &since), FQ_PATH_NONE, "100 ms of silence: still up");
	is_int(fq_path_on_answer(&p, 11 * MS), FQ_PATH_NONE, "answer while up: no event");
	fq_path_on_probe(&p, 30 * MS);
	is_int(fq_path_check(&p, 200 * MS, 250 * MS, &since), FQ_PATH_NONE,
	       "189 ms after the last answer: up");
	is_int(fq_path_check(&p, 262 * MS, 250 * MS, &since), FQ_PATH_WENT_DOWN, "251 ms: DOWN");
	is_int(since, 11 * MS, "silence counted from the last answer");
	is_int(fq_path_check(&p, 300 * MS, 250 * MS, &since), FQ_PATH_NONE,
	       "one DOWN event, not one per check");
	is_int(fq_path_on_answer(&p, 400 * MS), FQ_PATH_WENT_UP, "first answer: UP");
	for (int i = 1; i <= 8; i++) {
		int64_t t = 400 * MS + i * 1000 * MS;
		fq_path_on_probe(&p, t);
		fq_path_check(&p, t + 300 * MS, 250 * MS, &since);
		fq_path_on_answer(&p, t + 500 * MS);
	}
	is_int(p.flaps, 9, "9 flaps in all");
	is_int(fq_path_flaps_since(&p, 10000 * MS, 3600000 * MS), 9, "9 in the last hour");
	is_int(fq_path_flaps_since(&p, 3600000 * MS + 5000 * MS, 3600000 * MS), 4,
	       "an hour later only the last 4");
	/* a path never probed is never declared down */
	fq_path_init(&p, 0);
	is_int(fq_path_check(&p, 10000 * MS, 250 * MS, &since), FQ_PATH_NONE, "unprobed path stays up");
}

int main(void)
{
	test_wire();
	test_fit();
	test_path();
	return done_testing();
}
