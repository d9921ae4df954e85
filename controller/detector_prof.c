/*
 * detector_prof: the NCCL profiler plugin's view of each job step (its
 * ranks' transfers to their peers, their IB queue pairs, the node each
 * rank reports from) and the rule over it, peer_slow (detector_prof.h).
 */
#include "controller/detector_prof.h"

#include "controller/detector_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_EVIDENCE_QPS 4

void det_pstep_drop(void *ctx, struct fq_captab_ent *e)
{
	struct fq_detector *d = ctx;
	struct pstep_ent *s = (struct pstep_ent *)e;
	size_t n = s->n + s->nqp;

	d->nprof -= n <= d->nprof ? n : d->nprof;
	free(s->ch);
	free(s->qp);
	free(s->ranks);
}

/* Room for one more record of size sz in *arr (n used, cap): grown, or
 * (at a bound) -1 for the caller to reuse its oldest. 0: room. */
static int grow(struct fq_detector *d, void **arr, size_t n, size_t *cap, size_t sz)
{
	void *p;
	size_t nc;

	if (n && (n >= d->c.max_lanes_per_step || d->nprof >= d->c.max_lanes))
		return -1;
	if (n < *cap)
		return 0;
	nc = *cap ? *cap * 2 : 8;
	if (!(p = realloc(*arr, nc * sz)))
		return -1;
	*arr = p;
	*cap = nc;
	return 0;
}

static void note_rank(struct fq_detector *d, struct pstep_ent *s, uint32_t rank, const char *node)
{
	for (size_t i = 0; i < s->nranks; i++)
		if (s->ranks[i].rank == rank) {
			copy_name(s->ranks[i].node, NODE_LEN, node);
			return;
		}
	if (grow(d, (void **)&s->ranks, s->nranks, &s->rcap, sizeof(*s->ranks)) < 0)
		return; /* past the bound a peer's node stays unknown: the anomaly names the rank's */
	s->ranks[s->nranks].rank = rank;
	copy_name(s->ranks[s->nranks].node, NODE_LEN, node);
	s->nranks++;
}

static const char *rank_node(const struct pstep_ent *s, uint32_t rank)
{
	for (size_t i = 0; i < s->nranks; i++)
		if (s->ranks[i].rank == rank)
			return s->ranks[i].node;
	return NULL;
}

/* Adds a window's figures to a record's interval: the same interval adds
 * up (a report split over frames), a newer one replaces it, an older one
 * is dropped. False: dropped. */
static bool add_interval(int64_t *start, int64_t *end, struct fq_rule_xfer *x, const struct fq_det_prof *r,
			 const struct fq_det_prof_window *w)
{
	int64_t n = w->count > INT32_MAX ? INT32_MAX : (int64_t)w->count, busy = 0;

	if (w->mean_ns > 0 && n) /* saturated: the figures are a job's word */
		busy = w->mean_ns > INT64_MAX / n ? INT64_MAX : w->mean_ns * n;

	if (r->end_ns < *end)
		return false;
	if (r->end_ns != *end) {
		*start = r->start_ns;
		*end = r->end_ns;
		*x = (struct fq_rule_xfer){0};
	}
	x->bytes += w->bytes;
	x->count += w->count;
	x->busy_ns = fq_rule_sat_sub(x->busy_ns, -busy);
	return true;
}

static void add_chan(struct fq_detector *d, struct pstep_ent *s, const struct fq_det_prof *r,
		     const struct fq_det_prof_window *w, bool recv)
{
	struct pchan *c = NULL;
	size_t oldest = 0;
	int64_t len = fq_rule_sat_sub(r->end_ns, r->start_ns);

	if (w->id < 0 || w->id > UINT32_MAX || !w->count)
		return;
	for (size_t i = 0; i < s->n && !c; i++) {
		if (s->ch[i].comm == r->comm_hash && s->ch[i].rank == r->rank &&
		    s->ch[i].peer == (uint32_t)w->id && s->ch[i].recv == recv)
			c = &s->ch[i];
		else if (s->ch[i].end_ns < s->ch[oldest].end_ns)
			oldest = i;
	}
	if (!c) {
		if (grow(d, (void **)&s->ch, s->n, &s->cap, sizeof(*s->ch)) < 0) {
			if (!s->n)
				return;
			c = &s->ch[oldest];
		} else {
			c = &s->ch[s->n++];
			d->nprof++;
		}
		*c = (struct pchan){
		    .comm = r->comm_hash, .rank = r->rank, .peer = (uint32_t)w->id, .recv = recv};
	}
	/* an interval that does not follow the last one (the channel was
	 * idle, or reports were lost) starts the streak again: "in a row" */
	if (c->end_ns && r->end_ns != c->end_ns && older_than(r->start_ns, c->end_ns, len / 2))
		c->runs = 0;
	copy_name(c->node, NODE_LEN, r->node);
	if (r->end_ns > c->end_ns && c->end_ns) {
		c->prev_end_ns = c->end_ns;
		c->prev_x = c->x;
	}
	add_interval(&c->start_ns, &c->end_ns, &c->x, r, w);
}

static void add_qp(struct fq_detector *d, struct pstep_ent *s, const struct fq_det_prof *r,
		   const struct fq_det_prof_window *w)
{
	struct pqp *q = NULL;
	size_t oldest = 0;
	int64_t start = 0;

	if (!w->bytes || !w->count)
		return; /* a receive's QP events carry no length: only sends say a rate */
	for (size_t i = 0; i < s->nqp && !q; i++) {
		if (s->qp[i].comm == r->comm_hash && s->qp[i].rank == r->rank && s->qp[i].dev == w->device &&
		    s->qp[i].qpn == w->id)
			q = &s->qp[i];
		else if (s->qp[i].end_ns < s->qp[oldest].end_ns)
			oldest = i;
	}
	if (!q) {
		if (grow(d, (void **)&s->qp, s->nqp, &s->qcap, sizeof(*s->qp)) < 0) {
			if (!s->nqp)
				return;
			q = &s->qp[oldest];
		} else {
			q = &s->qp[s->nqp++];
			d->nprof++;
		}
		*q = (struct pqp){.comm = r->comm_hash, .rank = r->rank, .dev = w->device, .qpn = w->id};
	}
	add_interval(&start, &q->end_ns, &q->x, r, w);
}

void fq_detector_profiler(struct fq_detector *d, const struct fq_det_prof *r)
{
	struct step_key sk = {0};
	struct pstep_ent *s;
	bool created;

	if (!d)
		return;
	if (!r || !has(r->node) || r->end_ns <= 0 || r->start_ns <= 0 || r->start_ns > r->end_ns) {
		d->rejected_inputs++;
		return;
	}
	if (!r->synchronised) /* raw clocks of their own hosts: no step-wide interval */
		return;
	sk.job = r->job_id;
	sk.step = r->step_id;
	if (d->nprof >= d->c.max_lanes && !fq_captab_find(&d->psteps, &sk))
		fq_captab_make_room(&d->psteps, r->end_ns, NULL);
	s = (struct pstep_ent *)fq_captab_get(&d->psteps, &sk, r->end_ns, true, &created);
	if (!s)
		return;
	note_rank(d, s, r->rank, r->node);
	for (size_t i = 0; i < r->nwindows; i++) {
		const struct fq_det_prof_window *w = &r->windows[i];

		if (!w->kind)
			continue;
		if (!strcmp(w->kind, "step_send") || !strcmp(w->kind, "step_recv"))
			add_chan(d, s, r, w, w->kind[5] == 'r');
		else if (!strcmp(w->kind, "net_ib"))
			add_qp(d, s, r, w);
	}
	if (r->end_ns > s->newest_end_ns) {
		s->newest_end_ns = r->end_ns;
		s->newest_len_ns = fq_rule_sat_sub(r->end_ns, r->start_ns);
	}
}

/* ---- peer_slow ------------------------------------------------------------ */

static int64_t rate_of(const struct fq_rule_xfer *x)
{
	double r = x->busy_ns > 0 ? (double)x->bytes * 1e9 / (double)x->busy_ns : 0;

	return r >= 9e18 ? INT64_MAX : (int64_t)r;
}

static double gbs(int64_t bps)
{
	return (double)bps / 1e9;
}

/* The rank's queue pairs that carried bytes in the interval ending at end,
 * slowest first, as a JSON array ("[]": none, not IB). */
static void qps_json(const struct pstep_ent *s, const struct pchan *c, char *buf, size_t len)
{
	const struct pqp *pick[MAX_EVIDENCE_QPS];
	size_t k = 0, off;

	for (size_t i = 0; i < s->nqp; i++) {
		const struct pqp *q = &s->qp[i];
		size_t j;

		if (q->comm != c->comm || q->rank != c->rank || q->end_ns != c->end_ns)
			continue;
		if (k == MAX_EVIDENCE_QPS && rate_of(&q->x) >= rate_of(&pick[k - 1]->x))
			continue;
		j = k < MAX_EVIDENCE_QPS ? k++ : k - 1;
		for (; j > 0 && rate_of(&pick[j - 1]->x) > rate_of(&q->x); j--)
			pick[j] = pick[j - 1];
		pick[j] = q;
	}
	off = (size_t)snprintf(buf, len, "[");
	for (size_t i = 0; i < k && off < len; i++)
		off += (size_t)snprintf(
		    buf + off, len - off,
		    "%s{\"device\":%d,\"qp\":%" PRId64 ",\"bytes\":%" PRIu64 ",\"gbs\":%.4f}", i ? "," : "",
		    pick[i]->dev, pick[i]->qpn, pick[i]->x.bytes, gbs(rate_of(&pick[i]->x)));
	if (off < len)
		snprintf(buf + off, len - off, "]");
}

static void raise_peer_slow(struct fq_detector *d, struct pstep_ent *s, const struct pchan *c,
			    const struct fq_peer_judgement *j)
{
	char summary[384], evidence[1024], qps[512];
	const char *peer_node = rank_node(s, c->peer);
	uint32_t ranks[2] = {c->rank, c->peer};
	struct nic_key a, b;
	struct anom_ent *e;

	nic_key_set(&a, c->node, "");
	if (peer_node)
		nic_key_set(&b, peer_node, "");
	qps_json(s, c, qps, sizeof(qps));
	snprintf(summary, sizeof(summary),
		 "rank %u (%s) -> rank %u (%s) of job %" PRIu64 ".%" PRIu64
		 ": transfers at %.3f GB/s vs the step's median %.3f GB/s (other ranks' to other peers), "
		 "%u intervals in a row: a slow peer or a slow path to it",
		 c->rank, a.node, c->peer, peer_node ? peer_node : "?", s->k.job, s->k.step, gbs(j->rate_bps),
		 gbs(j->ref_bps), c->runs);
	snprintf(evidence, sizeof(evidence),
		 "{\"job_id\":%" PRIu64 ",\"step_id\":%" PRIu64
		 ",\"rank\":%u,\"peer\":%u,\"comm\":\"%016" PRIx64 "\",\"bytes\":%" PRIu64
		 ",\"transfers\":%" PRIu64 ",\"mean_transfer_ns\":%" PRId64
		 ",\"gbs\":%.4f,\"step_median_gbs\":%.4f,\"channels\":%zu,\"intervals\":%u,\"factor\":%.2f,"
		 "\"qps\":%s}",
		 s->k.job, s->k.step, c->rank, c->peer, c->comm, c->x.bytes, c->x.count,
		 c->x.count && c->x.count <= INT64_MAX ? c->x.busy_ns / (int64_t)c->x.count : 0,
		 gbs(j->rate_bps), gbs(j->ref_bps), j->nref, c->runs, d->c.peer_slow_factor, qps);
	e = det_anom_evidence(d, K_PEER_SLOW, SEV_WARNING, &a, peer_node ? &b : NULL, c->start_ns, c->end_ns,
			      summary, evidence, NULL);
	if (e)
		det_anom_attach(d, e, s->k.job, (uint32_t)s->k.step, ranks, c->rank == c->peer ? 1 : 2);
}

/* Did the peer's receives of c's interval run at more than
 * RECV_PACED_FACTOR x c's rate? Then the transfers waited for the peer to
 * post them (a rank behind its peers, not the network): once it asked,
 * the bytes came fast. Its interval nearest c's, within half an interval;
 * none there: not known, false. */
#define RECV_PACED_FACTOR 2

static bool receiver_paced(const struct pstep_ent *s, const struct pchan *c, int64_t len)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct pchan *r = &s->ch[i];
		const struct fq_rule_xfer *x = NULL;

		if (!r->recv || r->comm != c->comm || r->rank != c->peer || r->peer != c->rank)
			continue;
		if (!older_than(r->end_ns, c->end_ns, len / 2) && !older_than(c->end_ns, r->end_ns, len / 2))
			x = &r->x;
		else if (r->prev_end_ns && !older_than(r->prev_end_ns, c->end_ns, len / 2) &&
			 !older_than(c->end_ns, r->prev_end_ns, len / 2))
			x = &r->prev_x;
		return x && (double)rate_of(x) > RECV_PACED_FACTOR * (double)rate_of(&c->x);
	}
	return false;
}

/* peer_slow among the channels of the step's newest interval: those whose
 * interval ended within one interval of the newest (the ranks report on
 * their own phases). A channel's interval is judged once, at the first
 * tick that can give it a verdict: a streak grows with a slow interval,
 * ends with a normal one, and holds through one between. */
void det_check_prof_step(struct fq_detector *d, struct pstep_ent *s)
{
	int64_t len = s->newest_len_ns > 0 ? s->newest_len_ns : 1;
	int64_t from = fq_rule_sat_sub(s->newest_end_ns, len);
	struct fq_peer_judgement *out;
	struct fq_rule_xfer *x;
	size_t *idx, k = 0;

	if (!s->n)
		return;
	x = malloc(s->n * sizeof(*x));
	out = malloc(s->n * sizeof(*out));
	idx = malloc(s->n * sizeof(*idx));
	if (!x || !out || !idx)
		goto done;
	for (size_t i = 0; i < s->n; i++) {
		if (!s->ch[i].recv && s->ch[i].end_ns >= from) {
			x[k] = s->ch[i].x;
			x[k].rank = s->ch[i].rank;
			x[k].peer = s->ch[i].peer;
			idx[k++] = i;
		}
	}
	fq_rule_peer_slow(&d->c, x, k, out);
	for (size_t j = 0; j < k; j++) {
		struct pchan *c = &s->ch[idx[j]];
		enum fq_peer_verdict v = out[j].verdict;

		if (v == FQ_PEER_UNJUDGED || c->end_ns == c->judged_end_ns)
			continue; /* no verdict yet, or this interval already judged */
		c->judged_end_ns = c->end_ns;
		if (v == FQ_PEER_SLOW && receiver_paced(s, c, len))
			v = FQ_PEER_NORMAL; /* the wire was quick once the peer took them */
		if (v == FQ_PEER_NORMAL)
			c->runs = 0;
		if (v == FQ_PEER_SLOW && ++c->runs >= d->c.peer_slow_persist)
			raise_peer_slow(d, s, c, &out[j]);
	}
done:
	free(x);
	free(out);
	free(idx);
}
