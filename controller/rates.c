/*
 * rates: sending rates between network classes on shared links (see
 * rates.h for the rule).
 */
#include "controller/rates.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/strmap.h"

#define NAME_LEN   64
#define NIC_LEN    32
#define HOP_LEN    48
#define LINK_LEN   (2 * HOP_LEN + 2)
#define MAX_LINKS  (FQ_RATES_MAX_HOPS + 2)
#define MAX_RANKS  (FQ_RATES_RANK_SHARED + 1)
#define LINK_CLASS 8 /* distinct classes judged on one link; more share the last's */
#define CAP_TICKS  9 /* congested ticks the capacity is read from */

struct step {
	int rank;
	uint32_t weight;
	char cls[32];
};

struct route {
	char hops[FQ_RATES_MAX_HOPS][HOP_LEN];
	size_t n;
};

struct lane {
	uint64_t job;
	uint32_t step, src, dst, lane;
	char node[NAME_LEN], nic[NIC_LEN], rnode[NAME_LEN], rnic[NIC_LEN];
	struct route route; /* its own (LaneRoute); n 0: none */
	bool routed;
	bool acked;                       /* its sending end reports what the far end acknowledged */
	bool rx_known;                    /* a delivered figure came once */
	uint64_t acc_bytes, acc_rx_bytes; /* since the last tick: sent, delivered */
	int64_t acc_ns, acc_rx_ns, qdelay_ns, seen_ns;
	/* the last tick's */
	double rate, rx_rate; /* rx_rate < 0: the receiving end reported nothing */
	bool active;
	int64_t active_ns;     /* the last tick it was active (0: never) */
	unsigned missed;       /* ticks in a row without its report */
	const struct step *st; /* NULL: its step's class unknown: no part in the rule */
	uint64_t cap;          /* bytes/s; 0: none */
	int64_t cap_ns;        /* when a managed link last gave it */
	uint64_t cap_for, cap_capacity;
	char cap_link[LINK_LEN];
};

struct link_class {
	const struct step *st;
	unsigned nlanes; /* its lanes active within hold_ns: each gets a share */
	bool active;     /* one of them active this tick */
};

struct link {
	double capacity;        /* bytes/s, from the last congested ticks' delivered sums; 0: unknown */
	double sums[CAP_TICKS]; /* ... those sums, a ring */
	unsigned nsums, next_sum;
	bool managed;
	int64_t shared_ns, seen_ns;
	/* this tick's */
	double sum, rx_sum, rank_sum[MAX_RANKS]; /* sent; delivered (capacity_sample) */
	bool congested;
	bool partial; /* rx_sum counts a figure of another tick's, or one sent: no sample */
	int top;
	uint64_t top_job;
	struct link_class cls[LINK_CLASS];
	size_t ncls;
	double budget, wsum;
};

struct want { /* one path's advice this tick, or the last sent */
	uint64_t job;
	char node[NAME_LEN], nic[NIC_LEN], rnode[NAME_LEN], rnic[NIC_LEN];
	uint64_t rate, for_job, capacity;
	char link[LINK_LEN];
	int64_t sent_ns;
	bool seen, renew;
};

struct fq_rates {
	struct fq_rates_config cfg;
	struct fq_strmap steps, lanes, paths, links, sent;
	struct want *out;
	size_t nout, capout, next;
	size_t managed, capped;
};

void fq_rates_config_defaults(struct fq_rates_config *c)
{
	*c = (struct fq_rates_config){.util = 0.95,
				      .min_share = 0.1,
				      .congest_delay_ns = 2000000,
				      .active_rate = 100000,
				      .hold_ns = 5000000000,
				      .lifetime_ns = 10000000000,
				      .renew_ns = 3000000000,
				      .change = 0.1,
				      .stale_ns = 5000000000,
				      .link_forget_ns = 600000000000,
				      .max_lanes = 65536};
}

struct fq_rates *fq_rates_create(const struct fq_rates_config *c)
{
	struct fq_rates *r;

	if (!(c->util > 0 && c->util <= 1) || !(c->min_share > 0 && c->min_share <= 1) ||
	    c->congest_delay_ns <= 0 || c->hold_ns <= 0 || c->lifetime_ns <= 0 || c->renew_ns <= 0 ||
	    c->stale_ns <= 0 || c->link_forget_ns <= 0 || c->change < 0 || !c->max_lanes)
		return NULL;
	if (!(r = calloc(1, sizeof(*r))))
		return NULL;
	r->cfg = *c;
	return r;
}

void fq_rates_destroy(struct fq_rates *r)
{
	if (!r)
		return;
	fq_strmap_clear(&r->steps, free);
	fq_strmap_clear(&r->lanes, free);
	fq_strmap_clear(&r->paths, free);
	fq_strmap_clear(&r->links, free);
	fq_strmap_clear(&r->sent, free);
	free(r->out);
	free(r);
}

/* Upsert key with a zeroed value of size n; NULL on -ENOMEM. */
static void *upsert(struct fq_strmap *m, const char *key, size_t n)
{
	struct fq_strmap_entry *e = fq_strmap_upsert(m, key);

	if (!e)
		return NULL;
	if (!e->value && !(e->value = calloc(1, n))) {
		fq_strmap_remove(m, key);
		return NULL;
	}
	return e->value;
}

int fq_rates_step(struct fq_rates *r, uint64_t job, uint32_t step, const char *cls, uint32_t prio,
		  uint32_t weight)
{
	char key[FQ_STEP_KEY_LEN];
	struct step *s = upsert(&r->steps, fq_strmap_step_key(key, job, step), sizeof(*s));

	if (!s)
		return -ENOMEM;
	snprintf(s->cls, sizeof(s->cls), "%s", cls ? cls : "");
	if (!*s->cls || weight) {
		s->rank = FQ_RATES_RANK_SHARED;
		s->weight = weight ? weight : 1;
	} else {
		s->rank = prio < FQ_RATES_RANK_SHARED ? (int)prio : FQ_RATES_RANK_SHARED - 1;
		s->weight = 1; /* below another priority class: a share of one */
	}
	return 0;
}

void fq_rates_step_end(struct fq_rates *r, uint64_t job, uint32_t step)
{
	char key[FQ_STEP_KEY_LEN], prefix[FQ_STEP_KEY_LEN + 1];

	free(fq_strmap_remove(&r->steps, fq_strmap_step_key(key, job, step)));
	snprintf(prefix, sizeof(prefix), "%s.", key);
	fq_strmap_remove_prefix(&r->lanes, prefix, free);
}

static const char *lane_key(char *key, size_t len, uint64_t job, uint32_t step, uint32_t src, uint32_t dst,
			    uint32_t lane)
{
	snprintf(key, len, "%" PRIu64 ".%" PRIu32 ".%" PRIu32 ".%" PRIu32 ".%" PRIu32, job, step, src, dst,
		 lane);
	return key;
}

static bool fits(const char *s, size_t len)
{
	return s && *s && strlen(s) < len;
}

/* The lane under key, created if missing and room is left; NULL: none. */
static struct lane *lane_get(struct fq_rates *r, const char *key, int *rc)
{
	struct lane *l = fq_strmap_get(&r->lanes, key);

	*rc = 0;
	if (l)
		return l;
	if (r->lanes.count >= r->cfg.max_lanes) {
		*rc = -ENOSPC;
		return NULL;
	}
	if (!(l = upsert(&r->lanes, key, sizeof(*l))))
		*rc = -ENOMEM;
	return l;
}

int fq_rates_lane(struct fq_rates *r, const struct fq_rates_lane *m)
{
	char key[96];
	struct lane *l;
	int64_t span = m->end_ns - m->start_ns;
	int rc;

	if (!m->job || !fits(m->node, NAME_LEN) || !fits(m->nic, NIC_LEN) ||
	    !fits(m->remote_node, NAME_LEN) || !fits(m->remote_nic, NIC_LEN) || span <= 0)
		return -EINVAL;
	if (!(l = lane_get(r, lane_key(key, sizeof(key), m->job, m->step, m->src_rank, m->dst_rank, m->lane),
			   &rc)))
		return rc;
	l->job = m->job;
	l->step = m->step;
	l->src = m->src_rank;
	l->dst = m->dst_rank;
	l->lane = m->lane;
	strcpy(l->node, m->node);
	strcpy(l->nic, m->nic);
	strcpy(l->rnode, m->remote_node);
	strcpy(l->rnic, m->remote_nic);
	l->acc_bytes += m->bytes;
	l->acc_ns += span;
	if (m->acked_bytes) {
		l->acc_rx_bytes += m->acked_bytes;
		l->acc_rx_ns += span;
		l->acked = true;
	}
	if (m->rtt_us && m->min_rtt_us && m->rtt_us > m->min_rtt_us) {
		int64_t q = (int64_t)(m->rtt_us - m->min_rtt_us) * 1000;

		if (q > l->qdelay_ns)
			l->qdelay_ns = q;
	}
	l->seen_ns = m->now_ns;
	return 0;
}

int fq_rates_lane_delivered(struct fq_rates *r, uint64_t job, uint32_t step, uint32_t src_rank,
			    uint32_t dst_rank, uint32_t lane, int64_t start_ns, int64_t end_ns,
			    uint64_t bytes)
{
	char key[96];
	struct lane *l;

	if (!job || end_ns <= start_ns)
		return -EINVAL;
	l = fq_strmap_get(&r->lanes, lane_key(key, sizeof(key), job, step, src_rank, dst_rank, lane));
	if (!l || !l->seen_ns)
		return -ENOENT; /* its links are named by the sending end's report */
	if (l->acked)
		return 0; /* counted as its sender's transport saw it acknowledged */
	l->acc_rx_bytes += bytes;
	l->acc_rx_ns += end_ns - start_ns;
	return 0;
}

static void route_set(struct route *rt, const char *const *hops, size_t n)
{
	rt->n = 0;
	for (size_t k = 0; k < n && k < FQ_RATES_MAX_HOPS; k++)
		snprintf(rt->hops[rt->n++], HOP_LEN, "%s", hops[k] ? hops[k] : "");
}

int fq_rates_lane_route(struct fq_rates *r, uint64_t job, uint32_t step, uint32_t src_rank, uint32_t dst_rank,
			uint32_t lane, const char *const *hops, size_t n)
{
	char key[96];
	struct lane *l;
	int rc;

	if (!job)
		return -EINVAL;
	if (!(l = lane_get(r, lane_key(key, sizeof(key), job, step, src_rank, dst_rank, lane), &rc)))
		return rc;
	route_set(&l->route, hops, n);
	l->routed = true;
	return 0;
}

static const char *path_key(char *key, size_t len, const char *node, const char *nic, const char *rnode,
			    const char *rnic)
{
	snprintf(key, len, "%s^%s^%s^%s", node, nic, rnode, rnic);
	return key;
}

int fq_rates_path_route(struct fq_rates *r, const char *node, const char *nic, const char *remote_node,
			const char *remote_nic, const char *const *hops, size_t n)
{
	char key[2 * NAME_LEN + 2 * NIC_LEN + 4];
	struct route *rt;

	if (!fits(node, NAME_LEN) || !fits(nic, NIC_LEN) || !fits(remote_node, NAME_LEN) ||
	    !fits(remote_nic, NIC_LEN))
		return -EINVAL;
	if (!(rt = upsert(&r->paths, path_key(key, sizeof(key), node, nic, remote_node, remote_nic),
			  sizeof(*rt))))
		return -ENOMEM;
	route_set(rt, hops, n);
	return 0;
}

/* The lane's links (rates.h): its NIC's, each pair of consecutive routers
 * that answered, the far NIC's; how many. */
static size_t lane_links(const struct fq_rates *r, const struct lane *l, char out[][LINK_LEN])
{
	char key[2 * NAME_LEN + 2 * NIC_LEN + 4];
	const struct route *rt = l->routed ? &l->route : NULL;
	size_t n = 0;

	if (!rt)
		rt = fq_strmap_get(&r->paths, path_key(key, sizeof(key), l->node, l->nic, l->rnode, l->rnic));
	snprintf(out[n++], LINK_LEN, "%s/%s>", l->node, l->nic);
	for (size_t k = 1; rt && k < rt->n && n < MAX_LINKS - 1; k++)
		if (*rt->hops[k - 1] && *rt->hops[k] && strcmp(rt->hops[k - 1], rt->hops[k]))
			snprintf(out[n++], LINK_LEN, "%s>%s", rt->hops[k - 1], rt->hops[k]);
	snprintf(out[n++], LINK_LEN, ">%s/%s", l->rnode, l->rnic);
	return n;
}

/* ---- the tick ------------------------------------------------------------ */

struct tick {
	struct fq_rates *r;
	int64_t now;
	char **gone;
	size_t ngone, capgone;
	struct fq_strmap want;
};

static void keep_key(struct tick *t, const char *key)
{
	char **k;

	if (t->ngone == t->capgone) {
		if (!(k = realloc(t->gone, (t->capgone ? 2 * t->capgone : 16) * sizeof(*k))))
			return;
		t->gone = k;
		t->capgone = t->capgone ? 2 * t->capgone : 16;
	}
	if ((t->gone[t->ngone] = strdup(key)))
		t->ngone++;
}

static void drop_keys(struct tick *t, struct fq_strmap *m)
{
	for (size_t i = 0; i < t->ngone; i++) {
		free(fq_strmap_remove(m, t->gone[i]));
		free(t->gone[i]);
	}
	t->ngone = 0;
}

/* Lanes: the interval's rate and class; stale ones marked for removal. */
static void lane_sample(struct fq_strmap_entry *e, void *arg)
{
	struct tick *t = arg;
	struct lane *l = e->value;
	char key[FQ_STEP_KEY_LEN];

	if (!l->seen_ns) { /* a route, its lane not reported yet: kept until its step ends */
		l->st = NULL;
		return;
	}
	if (t->now - l->seen_ns > t->r->cfg.stale_ns) {
		keep_key(t, e->key);
		return;
	}
	/* A lane's report comes once a report interval, as the ticks do, and
	 * on its own clock: a tick may find none (and the next two). Such a
	 * lane keeps its last rate for that one tick; read as idle, it left
	 * its class's count on the link, and the lanes that were counted got
	 * its part on top of theirs (a path's two lanes each given the whole
	 * budget, seen in test-rates.sh). Two ticks without one: idle. */
	if (l->acc_ns > 0) {
		l->missed = 0;
		l->rate = (double)l->acc_bytes * 1e9 / (double)l->acc_ns;
		l->rx_rate = l->acc_rx_ns > 0 ? (double)l->acc_rx_bytes * 1e9 / (double)l->acc_rx_ns : -1;
		l->rx_known |= l->rx_rate >= 0;
		l->acc_bytes = l->acc_rx_bytes = 0;
		l->acc_ns = l->acc_rx_ns = 0;
	} else if (++l->missed > 1) { /* a delivered report that came is kept for the next */
		l->rate = 0;
		l->rx_rate = -1;
	}
	l->active = l->rate >= (double)t->r->cfg.active_rate;
	if (l->active)
		l->active_ns = t->now;
	l->st = fq_strmap_get(&t->r->steps, fq_strmap_step_key(key, l->job, l->step));
}

static void link_reset(struct fq_strmap_entry *e, void *arg)
{
	struct link *k = e->value;

	(void)arg;
	memset(&k->sum, 0, sizeof(*k) - offsetof(struct link, sum));
	k->top = MAX_RANKS;
}

/* Every link of each lane with a known class gets its figures. */
static void lane_to_links(struct fq_strmap_entry *e, void *arg)
{
	struct tick *t = arg;
	struct lane *l = e->value;
	char names[MAX_LINKS][LINK_LEN];
	size_t n;

	if (!l->seen_ns)
		return;
	n = lane_links(t->r, l, names);
	for (size_t i = 0; i < n; i++) {
		struct link *k = fq_strmap_get(&t->r->links, names[i]);
		size_t c;

		if (!k) {
			if (!(k = upsert(&t->r->links, names[i], sizeof(*k))))
				continue;
			k->top = MAX_RANKS;
		}
		k->seen_ns = t->now;
		k->sum += l->rate;
		k->rx_sum += l->rx_rate >= 0 ? l->rx_rate : l->rate; /* not reported delivered: sent */
		if (l->rate > 0 && (l->missed || (l->rx_rate < 0 && l->rx_known)))
			k->partial = true;
		if (l->qdelay_ns > t->r->cfg.congest_delay_ns)
			k->congested = true;
		/* A lane idle this tick but active within hold_ns keeps its
		 * share: an alltoall's lanes pause between iterations, and one
		 * counted idle left its class's count, so the lanes active
		 * that tick were each given more (test-rates on 4 rails: one
		 * lane given the whole budget, then the next, 159 Mbit/s of
		 * rates together on a 100 Mbit/s link). */
		if (!l->st || !l->active_ns || t->now - l->active_ns > t->r->cfg.hold_ns)
			continue;
		if (l->active) {
			k->rank_sum[l->st->rank] += l->rate;
			if (l->st->rank < k->top) {
				k->top = l->st->rank;
				k->top_job = l->job;
			}
		}
		for (c = 0; c < k->ncls && strcmp(k->cls[c].st->cls, l->st->cls); c++)
			;
		if (c == k->ncls && k->ncls < LINK_CLASS)
			k->cls[k->ncls++].st = l->st;
		c = c < k->ncls ? c : k->ncls - 1;
		k->cls[c].nlanes++;
		k->cls[c].active |= l->active;
	}
	l->qdelay_ns = 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* A congested tick's delivered sum (what the receiving ends got: what
 * the senders wrote counts socket buffers filling on top of the link's
 * rate, a 100 Mbit/s link's tick read 135 Mbit/s on the emulated
 * cluster). The capacity is the largest but one of the last CAP_TICKS:
 * not their median, which counts the ticks the lanes spent partly idle
 * (a tick is congested if a lane queued at its end; an alltoall pauses
 * between iterations), so it ratcheted down to 0.4 of the link under
 * bench-qos; not the largest alone, as each lane's interval is its own
 * and one tick's may line up above the link. A link that changes speed
 * is read anew within CAP_TICKS congested ticks. */
static void capacity_sample(struct link *k, double sum)
{
	double v[CAP_TICKS];

	k->sums[k->next_sum] = sum;
	k->next_sum = (k->next_sum + 1) % CAP_TICKS;
	if (k->nsums < CAP_TICKS)
		k->nsums++;
	memcpy(v, k->sums, k->nsums * sizeof(v[0]));
	qsort(v, k->nsums, sizeof(v[0]), cmp_double);
	k->capacity = v[k->nsums > 1 ? k->nsums - 2 : 0];
}

/* Each link: congested, shared, managed; its budget for the lower ranks. */
static void link_judge(struct fq_strmap_entry *e, void *arg)
{
	struct tick *t = arg;
	struct link *k = e->value;
	const struct fq_rates_config *cfg = &t->r->cfg;
	bool shared = false;

	if (t->now - k->seen_ns > cfg->link_forget_ns) {
		keep_key(t, e->key);
		return;
	}
	for (size_t c = 0; c < k->ncls; c++)
		if (k->cls[c].st->rank > k->top) { /* below the best active class */
			shared |= k->cls[c].active;
			k->wsum += k->cls[c].st->weight;
		}
	if (k->congested && k->rx_sum > 0 && !k->partial)
		capacity_sample(k, k->rx_sum);
	if (shared) {
		k->shared_ns = t->now;
		k->managed |= k->congested && k->capacity > 0;
	}
	if (k->managed && t->now - k->shared_ns > cfg->hold_ns)
		k->managed = false;
	if (!k->managed || !shared)
		return;
	t->r->managed++;
	k->budget = cfg->util * k->capacity - k->rank_sum[k->top];
	if (k->budget < cfg->min_share * k->capacity)
		k->budget = cfg->min_share * k->capacity;
}

/* A lane's rate: the least its managed links give its class. */
static void lane_cap(struct fq_strmap_entry *e, void *arg)
{
	struct tick *t = arg;
	struct lane *l = e->value;
	char names[MAX_LINKS][LINK_LEN];
	size_t n;
	double best = 0;
	const struct link *by = NULL;
	size_t byi = 0;

	if (!l->st)
		goto keep;
	n = lane_links(t->r, l, names);
	for (size_t i = 0; i < n; i++) {
		const struct link *k = fq_strmap_get(&t->r->links, names[i]);
		double v;

		if (!k || !k->managed || k->budget <= 0 || l->st->rank <= k->top || k->wsum <= 0)
			continue;
		for (size_t c = 0; c < k->ncls; c++)
			if (!strcmp(k->cls[c].st->cls, l->st->cls)) {
				v = k->budget * l->st->weight / k->wsum /
				    (k->cls[c].nlanes ? k->cls[c].nlanes : 1);
				if (!by || v < best) {
					best = v;
					by = k;
					byi = i;
				}
			}
	}
	if (by) {
		l->cap = best >= 1 ? (uint64_t)best : 1;
		l->cap_ns = t->now;
		l->cap_for = by->top_job;
		l->cap_capacity = (uint64_t)by->capacity;
		memcpy(l->cap_link, names[byi], sizeof(l->cap_link)); /* both LINK_LEN, NUL-terminated */
	}
keep:
	if (l->cap && t->now - l->cap_ns > t->r->cfg.hold_ns)
		l->cap = 0;
	if (!l->cap || !l->seen_ns)
		return;
	t->r->capped++;
	{
		char pk[2 * NAME_LEN + 2 * NIC_LEN + 4], key[sizeof(pk) + 24];
		struct want *w;

		snprintf(key, sizeof(key), "%" PRIu64 "^%s", l->job,
			 path_key(pk, sizeof(pk), l->node, l->nic, l->rnode, l->rnic));
		if (!(w = fq_strmap_get(&t->want, key))) {
			if (!(w = upsert(&t->want, key, sizeof(*w))))
				return;
			w->job = l->job;
			strcpy(w->node, l->node);
			strcpy(w->nic, l->nic);
			strcpy(w->rnode, l->rnode);
			strcpy(w->rnic, l->rnic);
		}
		if (!w->rate || l->cap < w->rate) {
			w->rate = l->cap;
			w->for_job = l->cap_for;
			w->capacity = l->cap_capacity;
			snprintf(w->link, sizeof(w->link), "%s", l->cap_link);
		}
	}
}

static void emit(struct tick *t, const struct want *w, uint64_t rate, bool renew)
{
	struct fq_rates *r = t->r;
	struct want *o;

	if (r->nout == r->capout) {
		size_t cap = r->capout ? 2 * r->capout : 16;

		if (!(o = realloc(r->out, cap * sizeof(*o))))
			return;
		r->out = o;
		r->capout = cap;
	}
	r->out[r->nout] = *w;
	r->out[r->nout].renew = renew;
	r->out[r->nout++].rate = rate;
}

/* The paths' advice against what was sent: new, changed, due, lifted. */
static void path_advise(struct fq_strmap_entry *e, void *arg)
{
	struct tick *t = arg;
	const struct want *w = e->value;
	struct want *s = fq_strmap_get(&t->r->sent, e->key);
	double ratio;

	if (!s) {
		if (!(s = upsert(&t->r->sent, e->key, sizeof(*s))))
			return;
		*s = *w;
		s->sent_ns = t->now;
		s->seen = true;
		emit(t, w, w->rate, false);
		return;
	}
	s->seen = true;
	ratio = (double)w->rate / (double)s->rate;
	if (ratio > 1 + t->r->cfg.change || ratio < 1 - t->r->cfg.change) {
		*s = *w;
		s->sent_ns = t->now;
		s->seen = true;
		emit(t, w, w->rate, false);
	} else if (t->now - s->sent_ns >= t->r->cfg.renew_ns) {
		s->sent_ns = t->now;
		emit(t, s, s->rate, true); /* the rate as sent: a drift under change is no news */
	}
}

static void path_lift(struct fq_strmap_entry *e, void *arg)
{
	struct tick *t = arg;
	struct want *s = e->value;

	if (s->seen) {
		s->seen = false;
		return;
	}
	s->for_job = s->capacity = 0;
	s->link[0] = '\0';
	emit(t, s, 0, false);
	keep_key(t, e->key);
}

void fq_rates_tick(struct fq_rates *r, int64_t now_ns)
{
	struct tick t = {.r = r, .now = now_ns};

	r->nout = r->next = r->managed = r->capped = 0;
	fq_strmap_each(&r->lanes, lane_sample, &t);
	drop_keys(&t, &r->lanes);
	fq_strmap_each(&r->links, link_reset, &t);
	fq_strmap_each(&r->lanes, lane_to_links, &t);
	fq_strmap_each(&r->links, link_judge, &t);
	drop_keys(&t, &r->links);
	fq_strmap_each(&r->lanes, lane_cap, &t);
	fq_strmap_each(&t.want, path_advise, &t);
	fq_strmap_each(&r->sent, path_lift, &t);
	drop_keys(&t, &r->sent);
	fq_strmap_clear(&t.want, free);
	free(t.gone);
}

int fq_rates_next(struct fq_rates *r, struct fq_rates_advice *a)
{
	const struct want *w;

	if (r->next >= r->nout)
		return 0;
	w = &r->out[r->next++];
	*a = (struct fq_rates_advice){.job = w->job,
				      .node = w->node,
				      .nic = w->nic,
				      .remote_node = w->rnode,
				      .remote_nic = w->rnic,
				      .rate = w->rate,
				      .lifetime_ns = r->cfg.lifetime_ns,
				      .for_job = w->for_job,
				      .link = w->link,
				      .capacity = w->capacity,
				      .renew = w->renew};
	return 1;
}

size_t fq_rates_managed_links(const struct fq_rates *r)
{
	return r->managed;
}

size_t fq_rates_capped_lanes(const struct fq_rates *r)
{
	return r->capped;
}
