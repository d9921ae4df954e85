/*
 * detector_lane: the lanes each job step has used (its ranks, NIC pair,
 * latest interval), and the rules over them: inband_mismatch,
 * lane_outlier, rdma_config (lane events) and collision.
 */
#include "controller/detector_lane.h"

#include "controller/detector_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* collision: a step whose newest lane interval ended this long before the
 * tick no longer counts (its job ended or stopped reporting): two report
 * windows. */
#define COLL_STALE_NS 2000000000LL

/* ---- lanes ---------------------------------------------------------------- */

void det_step_drop(void *ctx, struct fq_captab_ent *e)
{
	struct fq_detector *d = ctx;

	struct step_ent *s = (struct step_ent *)e;

	d->nlanes -= s->n <= d->nlanes ? s->n : d->nlanes;
	free(s->lanes);
}

/* A lane record with a delay sample (the receiving side's report). */
static bool timed(const struct lane_rec *r)
{
	return r->p99_ns > 0 || r->p50_ns > 0 || r->min_ns > 0;
}

/* The step's record for this lane: found, appended, or (at a bound) the
 * record with the oldest interval reused. */
static struct lane_rec *lane_slot(struct fq_detector *d, struct step_ent *s, const struct lane_rec *key)
{
	size_t oldest = 0;

	for (size_t i = 0; i < s->n; i++) {
		struct lane_rec *r = &s->lanes[i];

		if (r->src_rank == key->src_rank && r->dst_rank == key->dst_rank && r->lane == key->lane &&
		    memcmp(&r->p, &key->p, sizeof(r->p)) == 0)
			return r;
		if (r->end_ns < s->lanes[oldest].end_ns)
			oldest = i;
	}
	if (s->n && (s->n >= d->c.max_lanes_per_step || d->nlanes >= d->c.max_lanes)) {
		s->lanes[oldest] = *key;
		return &s->lanes[oldest];
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 8;
		struct lane_rec *n = realloc(s->lanes, cap * sizeof(*n));

		if (!n)
			return NULL;
		s->lanes = n;
		s->cap = cap;
	}
	s->lanes[s->n] = *key;
	s->n++;
	d->nlanes++;
	return &s->lanes[s->n - 1];
}

/* The lane's one-way base delay, like with like against the probes': half
 * its TCP RTT floor where it has one (segments timed from when TCP sends
 * them), else its chunks' smallest one-way delay (an IB lane: no socket
 * queue of its own). A TCP lane's chunk delays include the sender's
 * socket queue, milliseconds under load on a healthy fabric. */
static int64_t lane_base_delay(const struct lane_rec *l)
{
	return l->rtt_floor_ns ? l->rtt_floor_ns / 2 : l->min_ns;
}

/* inband_mismatch: the lane's base delay far above its NIC pair's probes.
 * Not where the lane's own route (as its agent traced it) crosses a switch
 * link the probes find queueing: its 5-tuple hashed onto a congested
 * spine that the probes' flows miss, which is the fabric's delay (a
 * fabric_delay or a collision says so), not in-band traffic misconfigured. */
void det_lane_judge_inband(struct fq_detector *d, const struct step_ent *s, struct lane_rec *l, bool final)
{
	struct path_key k = l->p;
	struct path_ent *p = (struct path_ent *)fq_captab_find(&d->paths, &k);
	const struct lroute_ent *r;
	int64_t base = lane_base_delay(l);
	const char *what = l->rtt_floor_ns ? "TCP RTT floor / 2" : "lane min";
	char summary[384], evidence[256];
	bool over;

	l->inband_held = false;
	over = p && !nic_empty(&l->p.dst) && !older_than(l->end_ns, p->last_end_ns, d->c.quiet_close_ns) &&
	       fq_rule_inband_mismatch(&d->c, base, p->p50_ns);
	if (l->end_ns != l->inband_end_ns) { /* each interval counted once */
		l->inband_end_ns = l->end_ns;
		l->inband_runs = over ? l->inband_runs + 1 : 0;
	}
	if (!over)
		return;
	/* the probes find the pair delayed, either way (an RTT floor counts
	 * the way back): the fabric's congestion, which path_delay reports,
	 * not the lane's class against the probes' (test-busy-hosts, spines
	 * congested: a connection's lanes with RTT floors of 8-17 ms against
	 * a probe p50 of 10-13 us, its path_delay open on the probes' p90).
	 * Congestion that came with the job is over a lane's RTT floor at
	 * once, and over the probes' only after their persistence: the lane
	 * waits as long. */
	if (det_anom_find(d, K_PATH_DELAY, &k.src, &k.dst) || det_anom_find(d, K_PATH_DELAY, &k.dst, &k.src))
		return;
	if (!final && l->inband_runs < d->c.delay_persist_windows) {
		l->inband_held = true;
		return;
	}
	/* its route not traced yet: a lane judged without its route was
	 * named "in-band misconfigured" where its 5-tuple had hashed onto a
	 * congested spine (test-busy-hosts: routes came up to 6 s after) */
	r = det_lane_route(d, &s->k, l);
	if (!r && !final && l->rtt_floor_ns && p->nroute &&
	    !older_than(l->end_ns, l->first_ns, ROUTE_WAIT_NS)) {
		l->inband_held = true;
		return;
	}
	if (r && det_route_queueing(d, r->route, r->nroute, l->end_ns))
		return;
	snprintf(summary, sizeof(summary),
		 "%s/%s -> %s/%s: %s %.1f us vs probe p50 %.1f us (job %" PRIu64 ".%" PRIu64
		 " lane %u): in-band traffic misconfigured?",
		 k.src.node, k.src.nic, k.dst.node, k.dst.nic, what, us(base), us(p->p50_ns), s->k.job,
		 s->k.step, l->lane);
	snprintf(evidence, sizeof(evidence),
		 "{\"lane_base_ns\":%" PRId64 ",\"lane_min_ns\":%" PRId64 ",\"tcp_min_rtt_ns\":%" PRId64
		 ",\"probe_p50_ns\":%" PRId64 ",\"factor\":%.2f,\"floor_ns\":%" PRId64 ",\"job_id\":%" PRIu64
		 ",\"step_id\":%" PRIu64 ",\"lane\":%u}",
		 base, l->min_ns, l->rtt_floor_ns, p->p50_ns, d->c.inband_factor, d->c.inband_floor_ns,
		 s->k.job, s->k.step, l->lane);
	det_anom_evidence(d, K_INBAND, SEV_WARNING, &k.src, &k.dst, l->start_ns, l->end_ns, summary, evidence,
			  NULL);
}

void fq_detector_lane_event(struct fq_detector *d, const struct fq_det_lane_event *e)
{
	char summary[384], evidence[256];
	struct anom_ent *a;
	struct nic_key k;
	uint32_t ranks[2];

	if (!d || !e || !has(e->node) || !has(e->nic) || !e->cause || strcmp(e->cause, "config") != 0)
		return;
	ranks[0] = e->src_rank;
	ranks[1] = e->dst_rank;
	nic_key_set(&k, e->node, e->nic);
	snprintf(summary, sizeof(summary),
		 "%s/%s: an RDMA lane to %s could not be formed (job %" PRIu64 ".%" PRIu32 " ranks %" PRIu32
		 "->%" PRIu32 "): the two ends disagree on link layer or RoCE version "
		 "(see the job's NCCL log)",
		 k.node, k.nic, has(e->remote_nic) ? e->remote_nic : "?", e->job_id, e->step_id, e->src_rank,
		 e->dst_rank);
	snprintf(evidence, sizeof(evidence),
		 "{\"cause\":\"config\",\"job_id\":%" PRIu64 ",\"step_id\":%" PRIu32 ",\"src_rank\":%" PRIu32
		 ",\"dst_rank\":%" PRIu32 "}",
		 e->job_id, e->step_id, e->src_rank, e->dst_rank);
	a = det_anom_evidence(d, K_RDMA_CONFIG, SEV_WARNING, &k, NULL, e->time_ns, e->time_ns, summary,
			      evidence, NULL);
	if (a)
		det_anom_attach(d, a, e->job_id, e->step_id, ranks, e->src_rank == e->dst_rank ? 1 : 2);
}

void fq_detector_step_end(struct fq_detector *d, uint64_t job, uint32_t step)
{
	struct step_key k = {.job = job, .step = step};
	struct fq_captab_ent *e;

	if (d && (e = fq_captab_find(&d->steps, &k))) {
		struct step_ent *s = (struct step_ent *)e;

		for (size_t i = 0; i < s->n; i++) /* lanes still waiting: judged on what is known */
			if (s->lanes[i].inband_held)
				det_lane_judge_inband(d, s, &s->lanes[i], true);
		fq_captab_unlink(&d->steps, e);
	}
	if (d && (e = fq_captab_find(&d->psteps, &k))) /* its profiler channels too */
		fq_captab_unlink(&d->psteps, e);
}

void fq_detector_lane(struct fq_detector *d, const struct fq_det_lane *l)
{
	struct step_key sk = {0};
	struct lane_rec key = {0}, *r;
	struct step_ent *s;
	bool created;

	if (!d)
		return;
	if (!l || !has(l->src_node) || !has(l->src_nic) || l->end_ns <= 0) {
		d->rejected_inputs++;
		return;
	}
	if (l->unverified) /* well formed, but the job's word only (the agent counted it) */
		return;
	sk.job = l->job_id;
	sk.step = l->step_id;
	key.src_rank = l->src_rank;
	key.dst_rank = l->dst_rank;
	key.lane = l->lane;
	nic_key_set(&key.p.src, l->src_node, l->src_nic);
	if (has(l->dst_node) && has(l->dst_nic))
		nic_key_set(&key.p.dst, l->dst_node, l->dst_nic);
	key.start_ns = l->start_ns > 0 && l->start_ns <= l->end_ns ? l->start_ns : l->end_ns;
	key.end_ns = l->end_ns;
	key.first_ns = key.start_ns;
	key.p50_ns = l->owd_p50_ns > 0 ? l->owd_p50_ns : 0;
	key.p99_ns = l->owd_p99_ns > 0 ? l->owd_p99_ns : 0;
	key.min_ns = l->owd_min_ns > 0 ? l->owd_min_ns : 0;
	key.rtt_floor_ns = l->tcp_min_rtt_ns > 0 ? l->tcp_min_rtt_ns : 0;

	/* All lane records in use: drop the least recently seen steps first. */
	if (d->nlanes >= d->c.max_lanes && !fq_captab_find(&d->steps, &sk))
		fq_captab_make_room(&d->steps, l->end_ns, NULL);
	s = (struct step_ent *)fq_captab_get(&d->steps, &sk, l->end_ns, true, &created);
	if (!s || !(r = lane_slot(d, s, &key)))
		return;
	if (r->rtt_floor_ns && (!key.rtt_floor_ns || r->rtt_floor_ns < key.rtt_floor_ns))
		key.rtt_floor_ns = r->rtt_floor_ns; /* a floor only ever goes down */
	r->rtt_floor_ns = key.rtt_floor_ns;
	/* Both ends report a lane; only the receiving side measures its delay,
	 * and the two sides' intervals end at different times. Within two
	 * intervals of each other the delay-less side never displaces the
	 * receiver's record, and the receiver's replaces a delay-less one even
	 * when it ends earlier; the step's newest interval is its newest with
	 * a delay (what the delay rules look at). */
	if (r->first_ns != key.first_ns || r->end_ns != key.end_ns) { /* an existing record: update it */
		int64_t first = r->first_ns < key.first_ns ? r->first_ns : key.first_ns;
		int64_t span = 2 * fq_rule_sat_sub(key.end_ns, key.start_ns);

		if (timed(r) && !timed(&key) && !older_than(key.end_ns, r->end_ns, span))
			goto attach; /* the sender's side of a lane the receiver reports */
		if (key.end_ns < r->end_ns &&
		    !(timed(&key) && !timed(r) && !older_than(r->end_ns, key.end_ns, span)))
			return; /* an older interval than the one kept */
		key.outlier_end_ns = r->outlier_end_ns;
		key.outlier_runs = r->outlier_runs;
		key.inband_end_ns = r->inband_end_ns;
		key.inband_runs = r->inband_runs;
		*r = key;
		r->first_ns = first;
	}
	if (timed(r) && r->end_ns >= s->newest_end_ns) {
		s->newest_end_ns = r->end_ns;
		s->newest_len_ns = fq_rule_sat_sub(r->end_ns, r->start_ns);
	}
	det_lane_judge_inband(d, s, r, false);
attach:
	FQ_CAPTAB_FOREACH(&d->anoms, struct anom_ent, a, nx)
	{
		det_attach_lane(d, a, &s->k, r);
	}
}

/* Lane outliers among the step's newest interval (lanes whose interval
 * ends within half an interval of the newest one). */
void det_check_step_outliers(struct fq_detector *d, struct step_ent *s)
{
	int64_t half = s->newest_len_ns / 2 > 0 ? s->newest_len_ns / 2 : 1, median;
	int64_t from = fq_rule_sat_sub(s->newest_end_ns, half);
	char summary[384], evidence[384];
	size_t k = 0;

	if (s->n > d->scratch_cap) {
		int64_t *p = realloc(d->scratch_p99, s->n * sizeof(*p));
		size_t *x = p ? realloc(d->scratch_idx, s->n * sizeof(*x)) : NULL;
		bool *o = x ? realloc(d->scratch_out, s->n * sizeof(*o)) : NULL;

		if (p)
			d->scratch_p99 = p;
		if (x)
			d->scratch_idx = x;
		if (!o)
			return;
		d->scratch_out = o;
		d->scratch_cap = s->n;
	}
	for (size_t i = 0; i < s->n; i++) {
		if (s->lanes[i].end_ns >= from && s->lanes[i].p99_ns > 0) {
			d->scratch_p99[k] = s->lanes[i].p99_ns;
			d->scratch_idx[k++] = i;
		}
	}
	/* judged every time, outliers or none: a streak ends with a normal interval */
	fq_rule_lane_outliers(&d->c, d->scratch_p99, k, d->scratch_out, &median);
	for (size_t j = 0; j < k; j++) {
		struct lane_rec *l = &s->lanes[d->scratch_idx[j]];
		uint32_t ranks[2] = {l->src_rank, l->dst_rank};
		const struct path_ent *pe;
		struct anom_ent *a;
		bool fabric;

		if (l->end_ns != l->outlier_end_ns) { /* each interval judged once */
			l->outlier_end_ns = l->end_ns;
			l->outlier_runs = d->scratch_out[j] ? l->outlier_runs + 1 : 0;
		}
		if (!d->scratch_out[j] || l->outlier_runs < d->c.lane_outlier_persist)
			continue;
		/* A warning when the fabric agrees: the probes on the lane's path
		 * have it elevated or DOWN. Otherwise the slowness is the lane's
		 * own (its ECMP route, a busy sender or receiver): worth seeing
		 * beside the job, no sign of a fault. */
		pe = (const struct path_ent *)fq_captab_find(&d->paths, &l->p);
		fabric = pe && (pe->elevated || pe->state == ST_DOWN);
		snprintf(summary, sizeof(summary),
			 "lane %u of job %" PRIu64 ".%" PRIu64
			 " rank %u->%u: p99 %.1f us vs step median %.1f us "
			 "(%s/%s -> %s/%s)%s",
			 l->lane, s->k.job, s->k.step, l->src_rank, l->dst_rank, us(l->p99_ns), us(median),
			 l->p.src.node, l->p.src.nic, l->p.dst.node[0] ? l->p.dst.node : "?",
			 l->p.dst.nic[0] ? l->p.dst.nic : "?",
			 fabric ? "" : "; its path's probes saw no rise (its own route, or a busy host)");
		snprintf(evidence, sizeof(evidence),
			 "{\"job_id\":%" PRIu64 ",\"step_id\":%" PRIu64
			 ",\"src_rank\":%u,\"dst_rank\":%u,\"lane\":%u,"
			 "\"owd_p99_ns\":%" PRId64 ",\"step_median_p99_ns\":%" PRId64
			 ",\"lanes\":%zu,\"factor\":%.2f}",
			 s->k.job, s->k.step, l->src_rank, l->dst_rank, l->lane, l->p99_ns, median, k,
			 d->c.lane_outlier_factor);
		a = det_anom_evidence(d, K_LANE_OUTLIER, fabric ? SEV_WARNING : SEV_INFO, &l->p.src,
				      nic_empty(&l->p.dst) ? NULL : &l->p.dst, l->start_ns, l->end_ns,
				      summary, evidence, NULL);
		if (a)
			det_anom_attach(d, a, s->k.job, (uint32_t)s->k.step, ranks,
					l->src_rank == l->dst_rank ? 1 : 2);
	}
}

/* ---- collision ------------------------------------------------------------- */

#define COLL_LINKS 8 /* a lane's switch links kept for the rule (a 3-tier Clos crosses 4) */

struct coll_lane {
	const struct lane_rec *l;
	char src[NODE_LEN + NIC_LEN + 1], dst[NODE_LEN + NIC_LEN + 1];
	const char *links[COLL_LINKS]; /* into its lroute_ent: valid for the tick */
	uint16_t port;                 /* its source port as traced (0: unknown) */
};

/* The switch links ("A>B") of the lane's own route that the probes find
 * queueing (a lane's own delay includes its sender's socket queue: two
 * busy jobs over one idle link are no collision) into c; c->port. */
static size_t coll_links(struct fq_detector *d, const struct step_key *sk, struct coll_lane *c, int64_t now)
{
	const struct lroute_ent *r = det_lane_route(d, sk, c->l);
	size_t n = 0;

	c->port = r ? r->local_port : 0;
	for (size_t i = 0; r && i < r->nroute && n < COLL_LINKS; i++)
		if (strchr(r->route[i], '>') && det_link_congested(d, r->route[i], now))
			c->links[n++] = r->route[i];
	return n;
}

/* Gather the newest interval's lanes of every step seen in the last
 * COLL_STALE_NS that have a delay sample and a known far end, with their
 * NIC pair's probe delay (the path's probe p50, else its baseline) and
 * the switch links of their own traced routes that the probes find
 * queueing. Each
 * record holds its lane's newest interval, and the receiving ranks' timers
 * have their own phases: a lane counts when it ended within an interval
 * and a half of the step's newest. 0, or -ENOMEM. */
static int coll_gather(struct fq_detector *d, int64_t now, struct coll_lane **clp, struct fq_rule_clane **inp,
		       size_t *np)
{
	struct coll_lane *cl = NULL;
	struct fq_rule_clane *in = NULL;
	size_t n = 0, cap = 0;

	FQ_CAPTAB_FOREACH(&d->steps, struct step_ent, s, nx)
	{
		int64_t span =
		    s->newest_len_ns + s->newest_len_ns / 2 > 0 ? s->newest_len_ns + s->newest_len_ns / 2 : 1;
		int64_t from = fq_rule_sat_sub(s->newest_end_ns, span);

		if (older_than(now, s->newest_end_ns, COLL_STALE_NS))
			continue;
		for (size_t i = 0; i < s->n; i++) {
			const struct lane_rec *l = &s->lanes[i];
			const struct path_ent *p;

			if (l->end_ns < from || l->p99_ns <= 0 || nic_empty(&l->p.dst))
				continue;
			if (n == cap) {
				size_t nc = cap ? cap * 2 : 64;
				struct coll_lane *c2 = realloc(cl, nc * sizeof(*c2));
				struct fq_rule_clane *i2 = c2 ? realloc(in, nc * sizeof(*i2)) : NULL;

				if (c2)
					cl = c2;
				if (!i2)
					goto fail;
				in = i2;
				cap = nc;
			}
			p = (const struct path_ent *)fq_captab_find(&d->paths, &l->p);
			cl[n].l = l;
			snprintf(cl[n].src, sizeof(cl[n].src), "%s/%s", l->p.src.node, l->p.src.nic);
			snprintf(cl[n].dst, sizeof(cl[n].dst), "%s/%s", l->p.dst.node, l->p.dst.nic);
			in[n] = (struct fq_rule_clane){
			    .job_id = s->k.job,
			    .owd_p99_ns = l->p99_ns,
			    .probe_ns = p ? (p->p50_ns > 0 ? p->p50_ns : p->baseline_ns) : 0,
			    .nlinks = coll_links(d, &s->k, &cl[n], now)};
			n++;
		}
	}
	for (size_t i = 0; i < n; i++)
		in[i].src_nic = cl[i].src, in[i].dst_nic = cl[i].dst, in[i].links = cl[i].links;
	*clp = cl, *inp = in, *np = n;
	return 0;
fail:
	free(cl);
	free(in);
	return -ENOMEM;
}

/* Remember (or renew) job as advised off place until until_ns: its entry,
 * an expired one, else the one that lapses first. */
static void note_advised(struct fq_detector *d, const char *place, uint64_t job, int64_t until_ns)
{
	size_t k = 0, n = sizeof(d->advised) / sizeof(d->advised[0]);

	for (size_t i = 0; i < n; i++) {
		if (!strcmp(d->advised[i].place, place)) {
			k = i;
			break;
		}
		if (d->advised[i].until_ns < d->advised[k].until_ns)
			k = i;
	}
	snprintf(d->advised[k].place, sizeof(d->advised[k].place), "%s", place);
	d->advised[k].job = job;
	d->advised[k].until_ns = until_ns;
}

/* The open collision incident of jobs[0] and jobs[1] (an anomaly that is
 * no other's member): NULL if none. Two jobs that collide at several places
 * at once collide as one incident, the first place's, the others its
 * members. */
static struct anom_ent *collision_incident(struct fq_detector *d, const uint64_t jobs[2])
{
	FQ_CAPTAB_FOREACH(&d->anoms, struct anom_ent, a, nx)
	{
		if (a->k.kind == K_COLLISION && !a->incident && a->jobs[0] == jobs[0] &&
		    a->jobs[1] == jobs[1])
			return a;
	}
	return NULL;
}

/* The collision rule over all steps' newest lanes: on a collision, the
 * anomaly at the shared place (a NIC, or a switch link the lanes' own
 * routes cross; attached to every step whose lanes cross it) and one
 * advice per lane of the moved job's outliers there (by its source port;
 * one per path for lanes whose port is not known). */
void det_check_collisions(struct fq_detector *d, int64_t now)
{
	struct coll_lane *cl = NULL;
	struct fq_rule_clane *in = NULL;
	struct fq_rule_collision r;
	struct nic_key place;
	char summary[384], evidence[384], where[NODE_LEN + NIC_LEN + 2];
	struct anom_ent *a, *root;
	uint64_t pair[2];
	bool *out = NULL, opened, link;
	size_t n = 0;

	if (coll_gather(d, now, &cl, &in, &n) < 0 || !n || !(out = calloc(n, sizeof(*out))) ||
	    !fq_rule_collision(&d->c, in, n, out, &r))
		goto done;
	for (size_t i = 0; i < sizeof(d->advised) / sizeof(d->advised[0]); i++)
		if (d->advised[i].until_ns > now && fq_rule_collision_keep(in, n, out, d->advised[i].job, &r))
			break;
	note_advised(d, r.place, r.move_job, now + d->c.advice_lifetime_ns);
	/* the anomaly's place: the NIC, or the link as a component (its name, no NIC) */
	link = true;
	memset(&place, 0, sizeof(place));
	for (size_t i = 0; i < n && link; i++) {
		const struct nic_key *k = !strcmp(cl[i].src, r.place)   ? &cl[i].l->p.src
					  : !strcmp(cl[i].dst, r.place) ? &cl[i].l->p.dst
									: NULL;
		if (k)
			place = *k, link = false;
	}
	if (link)
		snprintf(place.node, sizeof(place.node), "%s", r.place);
	snprintf(summary, sizeof(summary),
		 "jobs %" PRIu64 " and %" PRIu64 " collide on %s: %zu and %zu lanes above %.1fx their probe "
		 "delay; job %" PRIu64 " advised to move",
		 r.move_job, r.other_job, r.place, r.move_lanes, r.other_lanes, d->c.collision_factor,
		 r.move_job);
	snprintf(evidence, sizeof(evidence),
		 "{\"%s\":\"%s\",\"move_job\":%" PRIu64 ",\"other_job\":%" PRIu64
		 ",\"move_lanes\":%zu,\"other_lanes\":%zu,\"jobs\":%zu,\"factor\":%.2f,"
		 "\"rule\":\"fewest affected lanes, ties the higher job id\"}",
		 link ? "link" : "nic", r.place, r.move_job, r.other_job, r.move_lanes, r.other_lanes, r.jobs,
		 d->c.collision_factor);
	pair[0] = r.move_job < r.other_job ? r.move_job : r.other_job;
	pair[1] = r.move_job < r.other_job ? r.other_job : r.move_job;
	root = collision_incident(d, pair);
	a = det_anom_member(d, K_COLLISION, SEV_WARNING, &place, NULL, now, now, summary, evidence, &opened,
			    root);
	if (a && opened)
		memcpy(a->jobs, pair, sizeof(pair));
	if (a && opened && root) { /* the incident counts its places */
		root->events++;
		root->last_ns = max64(root->last_ns, now);
		if (root->k.a.nic[0])
			snprintf(where, sizeof(where), "%s/%s", root->k.a.node, root->k.a.nic);
		else
			snprintf(where, sizeof(where), "%s", root->k.a.node);
		snprintf(summary, sizeof(summary),
			 "jobs %" PRIu64 " and %" PRIu64 " collide on %s and %u more place%s; job %" PRIu64
			 " advised to move",
			 r.move_job, r.other_job, where, root->events - 1, root->events == 2 ? "" : "s",
			 r.move_job);
		det_push(d, &(struct fq_det_action){.kind = FQ_DET_UPDATE,
						    .handle = root->handle,
						    .events = root->events,
						    .end_ns = now,
						    .summary = summary});
	}
	for (size_t i = 0; i < n; i++) {
		const struct lane_rec *l = cl[i].l;
		bool dup = false;

		if (!out[i] || in[i].job_id != r.move_job || !fq_rule_clane_at(&in[i], r.place))
			continue;
		for (size_t j = 0; j < i && !dup; j++) /* one advice per lane (per path where no port) */
			dup = out[j] && in[j].job_id == r.move_job && fq_rule_clane_at(&in[j], r.place) &&
			      cl[j].port == cl[i].port && !strcmp(cl[j].src, cl[i].src) &&
			      !strcmp(cl[j].dst, cl[i].dst);
		if (dup)
			continue;
		/* the sender steers its chunks: the advice goes to the lane's source node */
		det_push(d, &(struct fq_det_action){.kind = FQ_DET_ADVICE,
						    .handle = a ? a->handle : 0,
						    .job_id = r.move_job,
						    .other_job = r.other_job,
						    .port = cl[i].port,
						    .start_ns = now,
						    .end_ns = now + d->c.advice_lifetime_ns,
						    .node = l->p.src.node,
						    .nic = l->p.src.nic,
						    .remote_node = l->p.dst.node,
						    .remote_nic = l->p.dst.nic,
						    .reason = r.place,
						    .summary = summary});
	}
done:
	free(out);
	free(cl);
	free(in);
}
