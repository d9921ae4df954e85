/*
 * clock_fit: the offset and drift of a peer's clock relative to ours, from
 * one-way probe samples (pure: no I/O, no clock reads).
 *
 * Each accepted probe pair gives a forward sample fwd = B_rx - A_tx =
 * owd_fwd + theta and a backward sample rev = A_rx - B_tx = owd_rev - theta,
 * where theta is B's clock minus A's. Queueing only ever adds delay, so the
 * lower envelope of each direction is where owd is smallest and most stable
 * (Huygens, NSDI 2018, fits it with an SVM; here: per-bucket minima). Per
 * bucket, theta_b = (min fwd - min rev) / 2 assumes equal minimum delays in
 * both directions. Only buckets whose round trip (min fwd + min rev) is
 * near the window's best are used: in the others one direction stayed
 * queued, and a one-sided queue biases theta by half its delay. A Theil-Sen line through the theta_b (median of pairwise
 * slopes: robust to a few bad buckets) gives the drift and the offset now.
 *
 * Two error figures: `bound_ns` holds as long as every stamp is causal and
 * exactly mapped onto our clock (owd >= 0 means theta lies within
 * [-min rev, min fwd], so each bucket's midpoint is within half its round
 * trip, whatever the asymmetry; the bound is the largest half round trip
 * plus fit residual over the buckets used, plus what the drift moves theta
 * within one bucket);
 * `residual_ns` is the fit's largest
 * residual, the estimate's noise if the paths are symmetric.
 *
 * Standing queues. The coded-pair filter cannot see a queue that stays
 * (both packets of a pair wait equally long), and a link saturated for
 * longer than the window raises that direction's lower envelope in every
 * bucket: the short fit above is then biased by half the queue. So the fit
 * also keeps a long history (FQ_CLOCK_HIST_NS) of per-bucket minima and
 * remembers the lowest round trip the path ever showed in it. A bucket is
 * clean when its round trip (corrected for the drift between its two
 * minima) is within max(best / FQ_CLOCK_FIT_SLACK_DIV, FQ_CLOCK_FIT_SLACK_NS)
 * of that best: a standing queue in either direction adds at least one
 * packet's serialisation time to it. The drift is the slope of a
 * least-squares line (one pass of 3-MAD trimming) through the theta of the
 * most recent FQ_CLOCK_FIT_MAX_CLEAN clean buckets (minutes: a precise
 * drift), the offset the mean of the newest FQ_CLOCK_FIT_RECENT of them
 * under that slope, evaluated now: on a quiet path less noise than the
 * short window; on a path whose round trip rose, the last clean minutes
 * extrapolated with their drift, instead of a queue-biased estimate. Its
 * bound grows with the time since the last clean bucket (the slope's
 * uncertainty plus FQ_CLOCK_FIT_WANDER_PPB). With fewer than
 * FQ_CLOCK_FIT_MIN_CLEAN clean buckets (just started) the short fit is
 * used. A lasting rise of the base delay (a longer route) looks like a
 * standing queue until the history forgets the old best, FQ_CLOCK_HIST_NS
 * later.
 */
#ifndef FQ_AGENT_CLOCK_FIT_H
#define FQ_AGENT_CLOCK_FIT_H

#include <stdint.h>

struct fq_clock_fit;

#define FQ_CLOCK_HIST_NS        (600 * 1000000000LL) /* long history kept */
#define FQ_CLOCK_FIT_MAX_CLEAN  2048                 /* clean buckets for the drift, newest first */
#define FQ_CLOCK_FIT_RECENT     256                  /* the newest clean buckets for the offset */
#define FQ_CLOCK_FIT_MIN_CLEAN  16
#define FQ_CLOCK_FIT_SLACK_DIV  10
#define FQ_CLOCK_FIT_SLACK_NS   3000
#define FQ_CLOCK_FIT_WANDER_PPB 20.0 /* oscillator wander assumed by the bound while extrapolating */

struct fq_clock_estimate {
	int64_t offset_ns;   /* theta at `at_ns`: peer clock - our clock */
	double drift_ppb;    /* d(theta)/dt in parts per billion */
	int64_t bound_ns;    /* error bound from the round trips (see above) */
	int64_t residual_ns; /* largest residual of the fit */
	int64_t min_fwd_ns;  /* lower envelope values (owd + theta, owd - theta) */
	int64_t min_rev_ns;
	int64_t at_ns; /* our clock */
	unsigned buckets, samples;
};

/* window_ns: how far back samples count; bucket_ns: envelope resolution;
 * capacity: samples kept per direction (oldest dropped first). */
struct fq_clock_fit *fq_clock_fit_create(int64_t window_ns, int64_t bucket_ns, unsigned capacity);
void fq_clock_fit_destroy(struct fq_clock_fit *f);

/* t_ns: our clock when the sample was taken. */
void fq_clock_fit_add_fwd(struct fq_clock_fit *f, int64_t t_ns, int64_t fwd_ns);
void fq_clock_fit_add_rev(struct fq_clock_fit *f, int64_t t_ns, int64_t rev_ns);

/* Estimate at now_ns: the long fit when it has enough clean buckets, else
 * the short fit of the samples in (now - window, now]. Returns 0, or
 * -EAGAIN when no bucket of the window holds samples of both directions
 * (nothing got through lately: the caller holds its last estimate), or
 * when neither fit has enough buckets. */
int fq_clock_fit_estimate(const struct fq_clock_fit *f, int64_t now_ns, struct fq_clock_estimate *out);

/* Coded-pair purity: the receive gap matches the send gap within guard_ns. */
static inline int fq_pair_is_pure(int64_t tx0, int64_t tx1, int64_t rx0, int64_t rx1, int64_t guard_ns)
{
	int64_t d = (rx1 - rx0) - (tx1 - tx0);

	return tx1 >= tx0 && rx1 >= rx0 && d <= guard_ns && d >= -guard_ns;
}

#endif /* FQ_AGENT_CLOCK_FIT_H */
