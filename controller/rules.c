/*
 * rules: the pure anomaly rules (see rules.h).
 */
#include "controller/rules.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int64_t fq_rule_sat_sub(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_sub_overflow(a, b, &r))
		return b < 0 ? INT64_MAX : INT64_MIN;
	return r;
}

unsigned fq_rule_flap_count(const int64_t *down_ns, size_t n, int64_t now_ns, int64_t window_ns)
{
	int64_t from = fq_rule_sat_sub(now_ns, window_ns > 0 ? window_ns : 0);
	unsigned count = 0;

	if (!down_ns)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (down_ns[i] > from && down_ns[i] <= now_ns && count < UINT32_MAX)
			count++;
	return count;
}

bool fq_rule_flapping(const struct fq_detector_config *c, const int64_t *down_ns, size_t n, int64_t now_ns,
		      unsigned *count)
{
	unsigned k = fq_rule_flap_count(down_ns, n, now_ns, c->flap_window_ns);

	if (count)
		*count = k;
	return k > c->flap_threshold;
}

bool fq_rule_nic_down(const struct fq_detector_config *c, size_t paths_known, size_t paths_down)
{
	size_t min = c->nic_down_min_paths ? c->nic_down_min_paths : 1;

	return paths_known >= min && paths_down >= paths_known;
}

/* x * f for a delay, saturated (factors and delays may be hostile). */
static double scaled(int64_t x, double f)
{
	double r = (double)x * f;

	return r == r ? r : 0.0; /* NaN factor: as if 0 */
}

enum fq_rule_delay fq_rule_path_delay(const struct fq_detector_config *c, int64_t p99_ns, int64_t baseline_ns)
{
	if (p99_ns <= 0 || p99_ns <= c->delay_floor_ns)
		return FQ_RULE_DELAY_OK;
	if (c->delay_threshold_ns > 0 && p99_ns > c->delay_threshold_ns)
		return FQ_RULE_DELAY_ABSOLUTE;
	if (baseline_ns > 0 && c->delay_baseline_factor > 0 &&
	    (double)p99_ns > scaled(baseline_ns, c->delay_baseline_factor) &&
	    p99_ns - baseline_ns > c->delay_min_excess_ns)
		return FQ_RULE_DELAY_BASELINE;
	return FQ_RULE_DELAY_OK;
}

int64_t fq_rule_baseline_update(int64_t baseline_ns, int64_t p99_ns)
{
	if (p99_ns <= 0)
		return baseline_ns;
	if (baseline_ns <= 0)
		return p99_ns;
	if (p99_ns / 2 > baseline_ns)
		p99_ns = 2 * baseline_ns;
	/* b + (x - b) / 8 without overflow: both are positive. */
	return baseline_ns - baseline_ns / 8 + p99_ns / 8;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

int64_t fq_rule_median(const int64_t *v, size_t n)
{
	int64_t small[64], *s = small, m = 0;
	size_t k = 0;

	if (!v || n == 0)
		return 0;
	if (n > sizeof(small) / sizeof(small[0])) {
		s = malloc(n * sizeof(*s));
		if (!s)
			return 0;
	}
	for (size_t i = 0; i < n; i++)
		if (v[i] > 0)
			s[k++] = v[i];
	if (k) {
		qsort(s, k, sizeof(*s), cmp_i64);
		m = k % 2 ? s[k / 2]
			  : s[k / 2 - 1] / 2 + s[k / 2] / 2 + (s[k / 2 - 1] % 2 + s[k / 2] % 2) / 2;
	}
	if (s != small)
		free(s);
	return m;
}

size_t fq_rule_lane_outliers(const struct fq_detector_config *c, const int64_t *p99_ns, size_t n,
			     bool *outlier, int64_t *median_ns)
{
	size_t with_sample = 0, found = 0;
	int64_t median;

	if (outlier)
		for (size_t i = 0; i < n; i++)
			outlier[i] = false;
	if (median_ns)
		*median_ns = 0;
	if (!p99_ns)
		return 0;
	for (size_t i = 0; i < n; i++)
		with_sample += p99_ns[i] > 0;
	median = fq_rule_median(p99_ns, n);
	if (median_ns)
		*median_ns = median;
	if (with_sample < 3 || median <= 0 || !(c->lane_outlier_factor > 0))
		return 0;
	for (size_t i = 0; i < n; i++) {
		bool out = p99_ns[i] > c->delay_floor_ns &&
			   (double)p99_ns[i] > scaled(median, c->lane_outlier_factor);

		if (outlier)
			outlier[i] = out;
		found += out;
	}
	return found;
}

/* A channel's rate over its busy time, bytes/s (0: none). */
static int64_t xfer_rate(const struct fq_rule_xfer *x)
{
	double r;

	if (x->busy_ns <= 0 || x->bytes == 0)
		return 0;
	r = (double)x->bytes * 1e9 / (double)x->busy_ns;
	return r >= 9e18 ? INT64_MAX : (int64_t)r;
}

static int cmp_rate(const void *a, const void *b, void *out)
{
	const struct fq_peer_judgement *o = out;
	int64_t x = o[*(const size_t *)a].rate_bps, y = o[*(const size_t *)b].rate_bps;

	return (x > y) - (x < y);
}

/* Channel i's reference (fq_rule_peer_slow): the median rate of the
 * judged channels (ord, slowest first) that share neither its rank nor
 * its peer, and how many there are. */
static void reference(const struct fq_rule_xfer *x, struct fq_peer_judgement *out, const size_t *ord,
		      size_t m, size_t i)
{
	size_t k = 0, want, seen = 0;
	int64_t lo = 0;

#define IS_REF(j) (x[j].rank != x[i].rank && x[j].peer != x[i].peer)
	for (size_t o = 0; o < m; o++)
		k += IS_REF(ord[o]);
	out[i].nref = k;
	want = k / 2; /* the middle; with an even count, the mean of it and the one below */
	for (size_t o = 0; o < m && k; o++) {
		int64_t r = out[ord[o]].rate_bps;

		if (!IS_REF(ord[o]))
			continue;
		if (seen + 1 == want && !(k % 2))
			lo = r;
		if (seen++ == want) {
			out[i].ref_bps = k % 2 ? r : lo / 2 + r / 2 + (lo % 2 + r % 2) / 2;
			break;
		}
	}
#undef IS_REF
}

size_t fq_rule_peer_slow(const struct fq_detector_config *c, const struct fq_rule_xfer *x, size_t n,
			 struct fq_peer_judgement *out)
{
	size_t *ord = NULL, m = 0, found = 0, min_ref = c->peer_slow_min_ref > 2 ? c->peer_slow_min_ref : 2;
	int64_t *b = NULL, mbytes;
	double f = c->peer_slow_factor;

	if (!x || !n || !out)
		return 0;
	for (size_t i = 0; i < n; i++)
		out[i] = (struct fq_peer_judgement){FQ_PEER_UNJUDGED, 0, 0, 0};
	if (!(f > 1) || !(b = malloc(n * sizeof(*b))) || !(ord = malloc(n * sizeof(*ord))))
		goto done;
	/* the channels big enough to say something, and their median bytes */
	for (size_t i = 0; i < n; i++) {
		bool big = x[i].count && x[i].bytes >= c->peer_slow_min_bytes &&
			   x[i].bytes / x[i].count >= c->peer_slow_min_transfer;

		out[i].rate_bps = big ? xfer_rate(&x[i]) : 0;
		b[i] = out[i].rate_bps > 0 ? (int64_t)(x[i].bytes > INT64_MAX ? INT64_MAX : x[i].bytes) : 0;
	}
	mbytes = fq_rule_median(b, n);
	for (size_t i = 0; i < n; i++) {
		if (out[i].rate_bps > 0 && b[i] < mbytes / 4)
			out[i].rate_bps = 0; /* not comparable: a side channel */
		if (out[i].rate_bps > 0)
			ord[m++] = i;
	}
	qsort_r(ord, m, sizeof(*ord), cmp_rate, out);
	for (size_t o = 0; o < m; o++) {
		struct fq_peer_judgement *j = &out[ord[o]];
		double r = (double)j->rate_bps, ref;

		reference(x, out, ord, m, ord[o]);
		if (j->nref < min_ref || j->ref_bps <= 0) {
			j->ref_bps = 0; /* too few to compare with: no verdict yet */
			continue;
		}
		ref = (double)j->ref_bps;
		j->verdict = r * f < ref             ? FQ_PEER_SLOW
			     : r * r * f < ref * ref ? FQ_PEER_BETWEEN
						     : FQ_PEER_NORMAL;
		found += j->verdict == FQ_PEER_SLOW;
	}
done:
	free(b);
	free(ord);
	return found;
}

bool fq_rule_inband_mismatch(const struct fq_detector_config *c, int64_t lane_min_ns, int64_t probe_p50_ns)
{
	if (lane_min_ns <= 0 || probe_p50_ns <= 0 || !(c->inband_factor > 0))
		return false;
	return (double)lane_min_ns > scaled(probe_p50_ns, c->inband_factor) &&
	       fq_rule_sat_sub(lane_min_ns, probe_p50_ns) > c->inband_floor_ns;
}

bool fq_rule_slow_nic(const struct fq_detector_config *c, size_t paths, size_t elevated)
{
	size_t min = c->slow_nic_min_paths ? c->slow_nic_min_paths : 1;

	if (paths < min || elevated > paths)
		return false;
	/* The small epsilon keeps 0.8 x 5 = 4 paths at exactly the share. */
	return (double)elevated >= c->slow_nic_share * (double)paths - 1e-9;
}

bool fq_rule_slow_nics_few(size_t slow, size_t judged)
{
	return slow <= 1 || slow <= judged / 2;
}

char *fq_rule_format_duration(int64_t ns, char *buf, size_t len)
{
	static const struct {
		int64_t ns;
		const char *unit;
	} units[] = {
	    {3600000000000LL, "h"}, {60000000000LL, "m"}, {1000000000LL, "s"},
	    {1000000LL, "ms"},      {1000LL, "us"},
	};

	if (!buf || len == 0)
		return buf;
	if (ns <= 0) {
		snprintf(buf, len, "0s");
		return buf;
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (ns % units[i].ns == 0) {
			snprintf(buf, len, "%" PRId64 "%s", (int64_t)(ns / units[i].ns), units[i].unit);
			return buf;
		}
	}
	if (ns >= 1000000000LL)
		snprintf(buf, len, "%" PRId64 "s", (int64_t)(ns / 1000000000LL));
	else
		snprintf(buf, len, "%" PRId64 "ns", ns);
	return buf;
}

char *fq_rule_drain_reason(const char *nic, const char *what, unsigned count, int64_t window_ns, char *buf,
			   size_t len)
{
	char win[32];

	if (!buf || len == 0)
		return buf;
	fq_rule_format_duration(window_ns, win, sizeof(win));
	snprintf(buf, len, FQ_RULE_REASON_PREFIX " %s %s %u in %s", nic && *nic ? nic : "?",
		 what && *what ? what : "?", count, win);
	return buf;
}

bool fq_rule_is_own_reason(const char *reason)
{
	return reason && strncmp(reason, FQ_RULE_REASON_PREFIX, strlen(FQ_RULE_REASON_PREFIX)) == 0;
}

/* ---- collision ---------------------------------------------------------- */

static bool clane_outlier(const struct fq_detector_config *c, const struct fq_rule_clane *l)
{
	if (!l->src_nic || !l->dst_nic || !*l->src_nic || !*l->dst_nic || l->owd_p99_ns <= 0 ||
	    l->probe_ns <= 0 || l->owd_p99_ns <= c->delay_floor_ns)
		return false;
	return (double)l->owd_p99_ns > scaled(l->probe_ns, c->collision_factor);
}

bool fq_rule_clane_at(const struct fq_rule_clane *l, const char *place)
{
	if (strcmp(l->src_nic, place) == 0 || strcmp(l->dst_nic, place) == 0)
		return true;
	for (size_t i = 0; i < l->nlinks; i++)
		if (l->links[i] && strcmp(l->links[i], place) == 0)
			return true;
	return false;
}

/* One place of one outlier lane; sorted by place, job, lane. order: the
 * place's position in the input (lanes in order, a lane's NICs before its
 * links), which breaks ties between places. */
struct cpair {
	const char *place;
	uint64_t job;
	size_t lane, order;
};

static int cpair_cmp(const void *a, const void *b)
{
	const struct cpair *x = a, *y = b;
	int c = strcmp(x->place, y->place);

	if (c)
		return c;
	if (x->job != y->job)
		return x->job < y->job ? -1 : 1;
	return x->lane < y->lane ? -1 : x->lane > y->lane;
}

/* The place of pairs [g, e) (one place, sorted by job and lane): its
 * outlier lanes (each once), its jobs, the one to move and the other as
 * the rule says, and its first position in the input (*first). */
static size_t collide_at(const struct cpair *p, size_t g, size_t e, struct fq_rule_collision *r,
			 size_t *first)
{
	size_t total = 0, b;

	memset(r, 0, sizeof(*r));
	r->place = p[g].place;
	*first = p[g].order;
	for (size_t a = g; a < e; a = b) {
		size_t k = 0;

		/* a lane whose both ends are one NIC is there once */
		for (b = a; b < e && p[b].job == p[a].job; b++) {
			k += b == a || p[b].lane != p[b - 1].lane;
			if (p[b].order < *first)
				*first = p[b].order;
		}
		total += k;
		r->jobs++;
		if (r->jobs == 1 || k < r->move_lanes || (k == r->move_lanes && p[a].job > r->move_job)) {
			r->move_job = p[a].job;
			r->move_lanes = k;
		}
		if (r->jobs == 1 || k > r->other_lanes || (k == r->other_lanes && p[a].job < r->other_job)) {
			r->other_job = p[a].job;
			r->other_lanes = k;
		}
	}
	return r->jobs >= 2 ? total : 0; /* all counts equal: move the highest id, the other is the lowest */
}

bool fq_rule_collision_keep(const struct fq_rule_clane *l, size_t n, const bool *outlier, uint64_t job,
			    struct fq_rule_collision *r)
{
	size_t k = 0;

	if (!job || !outlier || !r->place)
		return false;
	for (size_t i = 0; i < n; i++)
		k += outlier[i] && l[i].job_id == job && fq_rule_clane_at(&l[i], r->place);
	if (!k)
		return false; /* not there: the rule's choice stands */
	if (job == r->move_job)
		return true;
	if (r->other_job == job) {
		r->other_job = r->move_job;
		r->other_lanes = r->move_lanes;
	}
	r->move_job = job;
	r->move_lanes = k;
	return true;
}

bool fq_rule_collision(const struct fq_detector_config *c, const struct fq_rule_clane *l, size_t n,
		       bool *outlier, struct fq_rule_collision *out)
{
	bool *o = outlier;
	size_t best = 0, best_first = 0, m = 0, np = 0, e;
	struct cpair *p = NULL;

	if (!l || !n)
		return false;
	if (!o && !(o = calloc(n, sizeof(*o))))
		return false;
	for (size_t i = 0; i < n; i++)
		if ((o[i] = clane_outlier(c, &l[i])))
			np += 2 + l[i].nlinks;
	/* every (place, lane) of the outliers, grouped by place: a place's
	 * lanes are counted in one pass, not against every other lane */
	if (np && !(p = calloc(np, sizeof(*p))))
		goto done;
	for (size_t i = 0, order = 0; i < n; i++) {
		for (size_t s = 0; o[i] && s < 2 + l[i].nlinks; s++, order++) {
			const char *place = s == 0 ? l[i].src_nic : s == 1 ? l[i].dst_nic : l[i].links[s - 2];

			if (place)
				p[m++] = (struct cpair){place, l[i].job_id, i, order};
		}
	}
	if (m)
		qsort(p, m, sizeof(*p), cpair_cmp);
	for (size_t g = 0; g < m; g = e) {
		struct fq_rule_collision r;
		size_t first, t;

		for (e = g + 1; e < m && !strcmp(p[e].place, p[g].place); e++)
			;
		t = collide_at(p, g, e, &r, &first);
		if (t && (t > best || (t == best && first < best_first))) {
			best = t;
			best_first = first;
			if (out)
				*out = r;
		}
	}
done:
	free(p);
	if (o != outlier)
		free(o);
	return best > 0;
}
