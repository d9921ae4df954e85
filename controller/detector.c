/*
 * detector: the stateful engine behind detector.h. The rules themselves
 * are pure functions in rules.c; this file keeps what they read and turns
 * their verdicts into actions.
 *
 * State, each in a hash table with a size cap (config max_*) and expiry:
 *   paths     directed NIC pair -> delay baseline, last window, link state
 *   nics      (node, nic) -> DOWN times (flapping), NIC-level state, the
 *             counts of its own paths known/down (NIC-level inference)
 *   nodes     drained state and hint bookkeeping (drain/resume dedup)
 *   steps     (job, step) -> its lanes: ranks, NIC pair, latest interval
 *   anomalies (kind, place) -> the open anomaly and the steps attached;
 *             a link_down is an episode (its DOWNs counted), and a NIC's
 *             open episode is the incident of the anomalies on that NIC
 * Entries not seen for state_expire_ns (steps: step_expire_ns) are dropped
 * by a sweep once a minute; when a table is full, the least recently seen
 * eighth of it is dropped first. Anomalies are never evicted: past
 * max_open new ones are counted and not opened. Places are kept by value
 * (names copied), so dropping an entry never leaves a dangling pointer.
 *
 * Names are copied truncated (node 63, NIC 31 bytes) with every byte that
 * is not printable ASCII, a space, '"' or '\\' replaced by '?': summaries
 * and evidence are then valid UTF-8 and JSON without escaping.
 */
#include "controller/detector.h"
#include "controller/captab.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controller/rules.h"

#define NODE_LEN  64
#define NIC_LEN   32
#define MAX_DOWNS 256 /* DOWN times kept per NIC (flap_threshold is clamped below) */
#define SWEEP_NS  60000000000LL
/* collision: a step whose newest lane interval ended this long before the
 * tick no longer counts (its job ended or stopped reporting): two report
 * windows. */
#define COLL_STALE_NS 2000000000LL

enum kind {
	K_LINK_DOWN,
	K_FLAPPING,
	K_PATH_DELAY,
	K_LANE_OUTLIER,
	K_INBAND,
	K_SLOW_SENDER,
	K_SLOW_RECEIVER,
	K_COLLISION,
	K_RDMA_CONFIG,
};

static const char *const kind_names[] = {
    [K_LINK_DOWN] = "link_down",         [K_FLAPPING] = "flapping",      [K_PATH_DELAY] = "path_delay",
    [K_LANE_OUTLIER] = "lane_outlier",   [K_INBAND] = "inband_mismatch", [K_SLOW_SENDER] = "slow_sender",
    [K_SLOW_RECEIVER] = "slow_receiver", [K_COLLISION] = "collision",    [K_RDMA_CONFIG] = "rdma_config",
};

enum {
	SEV_INFO = 0,
	SEV_WARNING = 1,
	SEV_CRITICAL = 2
}; /* enum fq_db_severity */
enum {
	ST_UNKNOWN = 0,
	ST_UP = 1,
	ST_DOWN = 2
};

struct nic_key {
	char node[NODE_LEN];
	char nic[NIC_LEN];
};

struct path_key {
	struct nic_key src, dst;
};

struct step_key {
	uint64_t job;
	uint64_t step;
};

struct anom_key {
	uint64_t kind;
	struct nic_key a, b; /* b empty: a NIC place */
};

struct path_ent {
	struct fq_captab_ent h;
	struct path_key k;
	int64_t baseline_ns, p50_ns, p99_ns, last_end_ns, state_ns;
	unsigned quiet, streak;        /* quiet windows; elevated windows in a row */
	int64_t streak_start;          /* start of the first of them */
	int64_t pend_ns, pend_last_ns; /* DOWNs held for a NIC cause: first, last (0: none) */
	unsigned pend_downs;
	int state;
	bool elevated;
};

struct nic_ent {
	struct fq_captab_ent h;
	struct nic_key k;
	int64_t *downs;
	size_t ndowns, cap;
	unsigned paths_known, paths_down;
	bool down, dead_hinted;
	int64_t down_since;
	unsigned tx_paths, tx_elev, rx_paths, rx_elev; /* tick scratch */
};

struct node_ent {
	struct fq_captab_ent h;
	char name[NODE_LEN];
	bool drained, own_reason, drain_hinted, resume_hinted;
	int64_t drained_ns, unhealthy_ns;
};

struct lane_rec {
	uint32_t src_rank, dst_rank, lane;
	struct path_key p;
	int64_t first_ns, start_ns, end_ns, p50_ns, p99_ns, min_ns;
	int64_t rtt_floor_ns;   /* the smallest TCP RTT floor either end reported; 0: none */
	int64_t outlier_end_ns; /* the last interval judged for lane_outlier, */
	unsigned outlier_runs;  /* and how many in a row were outliers */
};

struct step_ent {
	struct fq_captab_ent h;
	struct step_key k;
	struct lane_rec *lanes;
	size_t n, cap;
	int64_t newest_end_ns, newest_len_ns, evaluated_ns;
};

struct att {
	uint64_t job;
	uint32_t step;
	uint32_t *ranks;
	size_t nranks, cap;
};

struct anom_ent {
	struct fq_captab_ent h;
	struct anom_key k;
	uint64_t handle;
	int64_t start_ns, last_ns;
	unsigned events;   /* a link episode's DOWNs (others: 1) */
	int64_t up_ns;     /* a link episode: its place back UP at (0: down) */
	uint64_t incident; /* the incident it is a member of (0: none) */
	struct att *atts;
	size_t natts, cap;
};

struct qact {
	struct qact *next;
	struct fq_det_action a;
	char *str[8];
	uint32_t *ranks;
};

struct fq_detector {
	struct fq_detector_config c;
	struct fq_captab paths, nics, nodes, steps, anoms;
	size_t nlanes;
	uint64_t next_handle;
	struct qact *head, *tail, *cur;
	size_t pending;
	int64_t last_sweep_ns;
	int64_t *scratch_p99;
	size_t *scratch_idx;
	bool *scratch_out;
	size_t scratch_cap;
	/* the job advised per shared NIC while its advice holds: in any
	 * collision it is part of, it stays the one to move
	 * (fq_rule_collision_keep) */
	struct {
		char nic[NODE_LEN + NIC_LEN + 1];
		uint64_t job;
		int64_t until_ns;
	} advised[16];
	/* dropped for a bound: shown in a rate-limited warning */
	uint64_t dropped_actions, dropped_anomalies, rejected_inputs;
	struct fq_ratelimit rl;
};

void fq_detector_config_defaults(struct fq_detector_config *c)
{
	*c = (struct fq_detector_config){
	    .flap_threshold = 8,
	    .flap_window_ns = 3600000000000LL,
	    .delay_threshold_ns = 1000000,
	    .delay_baseline_factor = 4.0,
	    .delay_floor_ns = 50000,
	    .delay_min_excess_ns = 300000,
	    .lane_outlier_factor = 5.0,
	    .lane_outlier_persist = 3,
	    .inband_factor = 5.0,
	    .inband_floor_ns = 300000,
	    .slow_nic_share = 0.8,
	    .slow_nic_min_paths = 3,
	    .resume_after_ns = 600000000000LL,
	    .quiet_close_ns = 30000000000LL,
	    .incident_gap_ns = 30000000000LL,
	    .incident_settle_ns = 2000000000LL,
	    .nic_down_min_paths = 2,
	    .nic_dead_after_ns = 60000000000LL,
	    .delay_baseline_windows = 5,
	    .delay_persist_windows = 3,
	    .attach_slack_ns = 5000000000LL,
	    .state_expire_ns = 7200000000000LL,
	    .step_expire_ns = 600000000000LL,
	    .collision_factor = 3.0,
	    .advice_lifetime_ns = 30000000000LL,
	    .max_paths = 262144,
	    .max_nics = 65536,
	    .max_nodes = 65536,
	    .max_steps = 16384,
	    .max_lanes = 262144,
	    .max_lanes_per_step = 4096,
	    .max_open = 4096,
	    .max_steps_per_anomaly = 1024,
	    .max_pending = 262144,
	};
}

/* ---- helpers ------------------------------------------------------------ */

static bool has(const char *s)
{
	return s && *s;
}

static void copy_name(char *dst, size_t len, const char *src)
{
	size_t i = 0;

	for (; src && src[i] && i + 1 < len; i++) {
		unsigned char ch = (unsigned char)src[i];

		dst[i] = (ch > 0x20 && ch < 0x7f && ch != '"' && ch != '\\') ? (char)ch : '?';
	}
	memset(dst + i, 0, len - i);
}

static void nic_key_set(struct nic_key *k, const char *node, const char *nic)
{
	copy_name(k->node, sizeof(k->node), node);
	copy_name(k->nic, sizeof(k->nic), nic);
}

static bool nic_eq(const struct nic_key *a, const struct nic_key *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}

static bool nic_empty(const struct nic_key *k)
{
	return k->node[0] == 0;
}

static int64_t max64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

/* now - then > span, safe for any values. */
static bool older_than(int64_t now, int64_t then, int64_t span)
{
	return fq_rule_sat_sub(now, then) > span;
}

static double us(int64_t ns)
{
	return (double)ns / 1000.0;
}

/* ---- action queue ------------------------------------------------------- */

static char *dup_opt(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void qact_free(struct qact *q)
{
	if (!q)
		return;
	for (size_t i = 0; i < sizeof(q->str) / sizeof(q->str[0]); i++)
		free(q->str[i]);
	free(q->ranks);
	free(q);
}

/* Queues a copy of a (its strings and ranks are copied). */
static void push(struct fq_detector *d, const struct fq_det_action *a)
{
	const char *src[8] = {a->anomaly_kind, a->node,    a->nic,           a->remote_node,
			      a->remote_nic,   a->summary, a->evidence_json, a->reason};
	const char **dst[8];
	struct qact *q;

	if (d->pending >= d->c.max_pending) {
		d->dropped_actions++;
		fq_log_ratelimited(&d->rl, FQ_LOG_WARN,
				   "detector: %zu actions not taken; %" PRIu64 " dropped", d->pending,
				   d->dropped_actions);
		return;
	}
	q = calloc(1, sizeof(*q));
	if (!q)
		goto fail;
	q->a = *a;
	dst[0] = &q->a.anomaly_kind, dst[1] = &q->a.node, dst[2] = &q->a.nic, dst[3] = &q->a.remote_node;
	dst[4] = &q->a.remote_nic, dst[5] = &q->a.summary, dst[6] = &q->a.evidence_json,
	dst[7] = &q->a.reason;
	for (size_t i = 0; i < 8; i++) {
		q->str[i] = dup_opt(src[i]);
		if (src[i] && !q->str[i])
			goto fail;
		*dst[i] = q->str[i];
	}
	if (a->nranks) {
		q->ranks = malloc(a->nranks * sizeof(*q->ranks));
		if (!q->ranks)
			goto fail;
		memcpy(q->ranks, a->ranks, a->nranks * sizeof(*q->ranks));
	}
	q->a.ranks = q->ranks;
	if (d->tail)
		d->tail->next = q;
	else
		d->head = q;
	d->tail = q;
	d->pending++;
	return;
fail:
	qact_free(q);
	d->dropped_actions++;
}

int fq_detector_next(struct fq_detector *d, struct fq_det_action *a)
{
	if (!d || !a)
		return 0;
	qact_free(d->cur);
	d->cur = d->head;
	if (!d->cur)
		return 0;
	d->head = d->cur->next;
	if (!d->head)
		d->tail = NULL;
	d->pending--;
	*a = d->cur->a;
	return 1;
}

/* ---- nodes and hints ------------------------------------------------------ */

static struct node_ent *node_get(struct fq_detector *d, const char *name, int64_t now)
{
	char key[NODE_LEN];

	copy_name(key, sizeof(key), name);
	return (struct node_ent *)fq_captab_get(&d->nodes, key, now, true, NULL);
}

static struct node_ent *node_find(struct fq_detector *d, const char *name)
{
	return (struct node_ent *)fq_captab_find(&d->nodes, name); /* name: a NODE_LEN key */
}

/* A drain hint for the node, unless it is drained already or one is pending. */
static void hint_drain(struct fq_detector *d, const struct nic_key *k, const char *reason, uint64_t handle,
		       int64_t now)
{
	struct node_ent *n = node_get(d, k->node, now);

	if (!n || n->drained || n->drain_hinted)
		return;
	n->drain_hinted = true;
	push(d, &(struct fq_det_action){.kind = FQ_DET_HINT,
					.handle = handle,
					.start_ns = now,
					.node = k->node,
					.nic = k->nic,
					.reason = reason});
}

void fq_detector_node_drained(struct fq_detector *d, const char *node, const char *reason, int64_t now_ns)
{
	struct node_ent *n;

	if (!d || !has(node)) {
		if (d)
			d->rejected_inputs++;
		return;
	}
	n = node_get(d, node, now_ns);
	if (!n)
		return;
	n->drain_hinted = false;
	n->resume_hinted = false;
	n->drained = has(reason);
	n->own_reason = fq_rule_is_own_reason(reason);
	n->drained_ns = now_ns;
}

/* ---- anomalies ------------------------------------------------------------ */

static void anom_drop(void *ctx, struct fq_captab_ent *e)
{
	struct fq_detector *d = ctx;

	struct anom_ent *a = (struct anom_ent *)e;

	(void)d;
	for (size_t i = 0; i < a->natts; i++)
		free(a->atts[i].ranks);
	free(a->atts);
}

static struct anom_ent *anom_find(struct fq_detector *d, enum kind kind, const struct nic_key *a,
				  const struct nic_key *b)
{
	struct anom_key key;

	memset(&key, 0, sizeof(key));
	key.kind = kind;
	key.a = *a;
	if (b)
		key.b = *b;
	return (struct anom_ent *)fq_captab_find(&d->anoms, &key);
}

/* The open link episode (link_down) of NIC a or path a -> b at t: NULL
 * when there is none or it is over by then (its place UP for
 * incident_gap_ns; a tick closes it). */
static struct anom_ent *episode_at(struct fq_detector *d, const struct nic_key *a, const struct nic_key *b,
				   int64_t t)
{
	struct anom_ent *e = anom_find(d, K_LINK_DOWN, a, b);

	return e && !(e->up_ns && fq_rule_sat_sub(t, e->up_ns) >= d->c.incident_gap_ns) ? e : NULL;
}

/* The incident a new anomaly of kind on (a, b) at t is a member of: the
 * open episode of NIC a, else of NIC b; NULL: none, or the new anomaly
 * is that NIC's episode itself. */
static struct anom_ent *nic_incident(struct fq_detector *d, enum kind kind, const struct nic_key *a,
				     const struct nic_key *b, int64_t t)
{
	struct anom_ent *r;
	bool b_nic = b && !nic_empty(b);

	if (kind == K_LINK_DOWN && !b_nic)
		return NULL;
	r = episode_at(d, a, NULL, t);
	if (!r && b_nic)
		r = episode_at(d, b, NULL, t);
	return r;
}

static bool att_add_rank(struct att *t, uint32_t r)
{
	uint32_t *n;

	for (size_t i = 0; i < t->nranks; i++)
		if (t->ranks[i] == r)
			return false;
	if (t->nranks == t->cap) {
		n = realloc(t->ranks, (t->cap ? t->cap * 2 : 4) * sizeof(*n));
		if (!n)
			return false;
		t->ranks = n;
		t->cap = t->cap ? t->cap * 2 : 4;
	}
	t->ranks[t->nranks++] = r;
	return true;
}

/* Attaches (job, step, ranks) to the anomaly; queues an ATTACH with the
 * ranks new to it (none new: nothing queued). */
static void anom_attach(struct fq_detector *d, struct anom_ent *a, uint64_t job, uint32_t step,
			const uint32_t *ranks, size_t nranks)
{
	struct att *t = NULL;
	uint32_t fresh[2];
	size_t nfresh = 0;
	bool is_new = false;

	for (size_t i = 0; i < a->natts && !t; i++)
		if (a->atts[i].job == job && a->atts[i].step == step)
			t = &a->atts[i];
	if (!t) {
		if (a->natts >= d->c.max_steps_per_anomaly)
			return;
		if (a->natts == a->cap) {
			size_t cap = a->cap ? a->cap * 2 : 4;
			struct att *n = realloc(a->atts, cap * sizeof(*n));

			if (!n)
				return;
			a->atts = n;
			a->cap = cap;
		}
		t = &a->atts[a->natts++];
		*t = (struct att){.job = job, .step = step};
		is_new = true;
	}
	for (size_t i = 0; i < nranks && i < 2; i++)
		if (att_add_rank(t, ranks[i]))
			fresh[nfresh++] = ranks[i];
	if (!nfresh && !is_new)
		return;
	push(d, &(struct fq_det_action){.kind = FQ_DET_ATTACH,
					.handle = a->handle,
					.job_id = job,
					.step_id = step,
					.ranks = fresh,
					.nranks = nfresh});
}

static bool is_path_place(const struct anom_ent *a)
{
	return !nic_empty(&a->k.b);
}

/* Did this lane cross the anomaly's place (kind-specific)? */
static bool lane_matches(const struct anom_ent *a, const struct lane_rec *l)
{
	const struct nic_key *s = &l->p.src, *t = &l->p.dst, *x = &a->k.a, *y = &a->k.b;

	switch ((enum kind)a->k.kind) {
	case K_LANE_OUTLIER:
	case K_RDMA_CONFIG:
		return false; /* attached explicitly to the step it was seen in */
	case K_SLOW_SENDER:
		return nic_eq(s, x);
	case K_SLOW_RECEIVER:
		return nic_eq(t, x);
	case K_PATH_DELAY:
	case K_INBAND:
		return nic_eq(s, x) && nic_eq(t, y);
	case K_COLLISION:
	case K_LINK_DOWN:
	case K_FLAPPING:
		if (!is_path_place(a))
			return nic_eq(s, x) || nic_eq(t, x);
		return (nic_eq(s, x) && nic_eq(t, y)) || (nic_eq(s, y) && nic_eq(t, x));
	}
	return false;
}

static void attach_lane(struct fq_detector *d, struct anom_ent *a, const struct step_key *sk,
			const struct lane_rec *l)
{
	uint32_t ranks[2] = {l->src_rank, l->dst_rank};

	if (l->end_ns < fq_rule_sat_sub(a->start_ns, d->c.attach_slack_ns) || !lane_matches(a, l))
		return;
	anom_attach(d, a, sk->job, (uint32_t)sk->step, ranks, l->dst_rank == l->src_rank ? 1 : 2);
}

/* Evidence for (kind, place): extends the open anomaly or opens one (and
 * attaches the steps whose lanes crossed the place). *opened (may be
 * NULL) says which. NULL: none could be opened (max_open). */
static struct anom_ent *anom_evidence(struct fq_detector *d, enum kind kind, int severity,
				      const struct nic_key *a, const struct nic_key *b, int64_t start_ns,
				      int64_t ev_ns, const char *summary, const char *evidence, bool *opened)
{
	struct anom_key key;
	struct anom_ent *e, *inc;
	bool created;

	memset(&key, 0, sizeof(key));
	key.kind = kind;
	key.a = *a;
	if (b)
		key.b = *b;
	if (opened)
		*opened = false;
	e = (struct anom_ent *)fq_captab_get(&d->anoms, &key, ev_ns, false, &created);
	if (!e) {
		d->dropped_anomalies++;
		return NULL;
	}
	if (!created) {
		e->last_ns = max64(e->last_ns, ev_ns);
		return e;
	}
	e->handle = ++d->next_handle;
	e->start_ns = start_ns < ev_ns ? start_ns : ev_ns;
	e->last_ns = ev_ns;
	e->events = 1;
	if ((inc = nic_incident(d, kind, a, b, ev_ns)))
		e->incident = inc->handle;
	if (opened)
		*opened = true;
	push(d, &(struct fq_det_action){.kind = FQ_DET_OPEN,
					.handle = e->handle,
					.incident = e->incident,
					.events = 1,
					.anomaly_kind = kind_names[kind],
					.severity = severity,
					.start_ns = e->start_ns,
					.node = a->node,
					.nic = a->nic,
					.remote_node = b ? b->node : NULL,
					.remote_nic = b ? b->nic : NULL,
					.summary = summary,
					.evidence_json = evidence});
	FQ_CAPTAB_FOREACH(&d->steps, struct step_ent, s, nx)
	{
		for (size_t i = 0; i < s->n; i++)
			attach_lane(d, e, &s->k, &s->lanes[i]);
	}
	return e;
}

static void anom_close(struct fq_detector *d, struct anom_ent *a, int64_t end_ns)
{
	push(d, &(struct fq_det_action){.kind = FQ_DET_CLOSE,
					.handle = a->handle,
					.start_ns = a->start_ns,
					.end_ns = max64(end_ns, a->start_ns)});
	fq_captab_unlink(&d->anoms, &a->h);
}

/* ---- link episodes ---------------------------------------------------------- */

/* The episode's DOWNs so far (a->events), the last at t: an UPDATE. */
static void episode_update(struct fq_detector *d, struct anom_ent *a, int64_t t)
{
	char text[320];

	a->last_ns = max64(a->last_ns, t);
	if (is_path_place(a))
		snprintf(text, sizeof(text), "path %s/%s -> %s/%s down %u times", a->k.a.node, a->k.a.nic,
			 a->k.b.node, a->k.b.nic, a->events);
	else
		snprintf(text, sizeof(text), "%s of %s down %u times", a->k.a.nic, a->k.a.node, a->events);
	push(d, &(struct fq_det_action){.kind = FQ_DET_UPDATE,
					.handle = a->handle,
					.events = a->events,
					.end_ns = t,
					.summary = text});
}

/* A DOWN at t of NIC x (y NULL) or path x -> y: counted into its open
 * episode (an UPDATE), or the first of a new one (an episode over by t
 * is closed at its UP first, whether or not a tick saw it). */
static void episode_down(struct fq_detector *d, int severity, const struct nic_key *x,
			 const struct nic_key *y, int64_t t, const char *summary, const char *evidence)
{
	struct anom_ent *a = anom_find(d, K_LINK_DOWN, x, y);

	if (a && !episode_at(d, x, y, t)) {
		anom_close(d, a, a->up_ns);
		a = NULL;
	}
	if (!a) {
		anom_evidence(d, K_LINK_DOWN, severity, x, y, t, t, summary, evidence, NULL);
		return;
	}
	a->events++;
	a->up_ns = 0;
	episode_update(d, a, t);
}

/* Is the episode over (its place UP for incident_gap_ns, or its state
 * dropped)? *end: when it came back (else its last evidence). */
static bool episode_over(struct fq_detector *d, const struct anom_ent *a, int64_t now, int64_t *end)
{
	struct path_key pk = {a->k.a, a->k.b};
	const struct path_ent *p = NULL;
	const struct nic_ent *n = NULL;
	bool down;

	*end = a->up_ns ? a->up_ns : a->last_ns;
	if (is_path_place(a)) {
		if (!(p = (const struct path_ent *)fq_captab_find(&d->paths, &pk)))
			return true;
		down = p->state == ST_DOWN;
	} else {
		if (!(n = (const struct nic_ent *)fq_captab_find(&d->nics, &a->k.a)))
			return true;
		down = n->down;
	}
	return !down && a->up_ns && fq_rule_sat_sub(now, a->up_ns) >= d->c.incident_gap_ns;
}

/* ---- NICs: flapping and NIC-level down ------------------------------------ */

static void nic_drop(void *ctx, struct fq_captab_ent *e)
{
	struct fq_detector *d = ctx;

	(void)d;
	free(((struct nic_ent *)e)->downs);
}

static struct nic_ent *nic_get(struct fq_detector *d, const struct nic_key *k, int64_t now)
{
	return (struct nic_ent *)fq_captab_get(&d->nics, k, now, true, NULL);
}

static void nic_record_down(struct fq_detector *d, struct nic_ent *n, int64_t t)
{
	int64_t from = fq_rule_sat_sub(t, d->c.flap_window_ns);
	size_t k = 0;

	for (size_t i = 0; i < n->ndowns; i++) /* keep the window only */
		if (n->downs[i] > from)
			n->downs[k++] = n->downs[i];
	n->ndowns = k;
	if (n->ndowns == MAX_DOWNS) {
		memmove(n->downs, n->downs + 1, (MAX_DOWNS - 1) * sizeof(*n->downs));
		n->ndowns--;
	}
	if (n->ndowns == n->cap) {
		size_t cap = n->cap ? n->cap * 2 : 4;
		int64_t *p = realloc(n->downs, cap * sizeof(*p));

		if (!p)
			return;
		n->downs = p;
		n->cap = cap;
	}
	n->downs[n->ndowns++] = t;
}

static void check_flapping(struct fq_detector *d, struct nic_ent *n, int64_t t)
{
	char summary[256], evidence[256], reason[160], win[32];
	struct anom_ent *a;
	unsigned count;
	bool opened;

	if (!fq_rule_flapping(&d->c, n->downs, n->ndowns, t, &count))
		return;
	fq_rule_format_duration(d->c.flap_window_ns, win, sizeof(win));
	snprintf(summary, sizeof(summary), "%s of %s went down %u times in %s (more than %u)", n->k.nic,
		 n->k.node, count, win, d->c.flap_threshold);
	snprintf(evidence, sizeof(evidence), "{\"downs\":%u,\"window_ns\":%" PRId64 ",\"threshold\":%u}",
		 count, d->c.flap_window_ns, d->c.flap_threshold);
	a = anom_evidence(d, K_FLAPPING, SEV_CRITICAL, &n->k, NULL, n->downs[0], t, summary, evidence,
			  &opened);
	if (a && opened)
		hint_drain(d, &n->k,
			   fq_rule_drain_reason(n->k.nic, "flapped", count, d->c.flap_window_ns, reason,
						sizeof(reason)),
			   a->handle, t);
}

static void nic_transition(struct fq_detector *d, struct nic_ent *n, bool down, int64_t t, const char *why)
{
	char summary[256], evidence[160];
	struct anom_ent *a = anom_find(d, K_LINK_DOWN, &n->k, NULL);

	if (down == n->down) {
		if (down && a)
			a->last_ns = max64(a->last_ns, t);
		return;
	}
	n->down = down;
	if (!down) {
		n->dead_hinted = false;
		if (a)
			a->up_ns = t; /* the episode goes on until UP for incident_gap_ns */
		return;
	}
	n->down_since = t;
	nic_record_down(d, n, t);
	snprintf(summary, sizeof(summary), "%s of %s down (%s)", n->k.nic, n->k.node, why);
	snprintf(evidence, sizeof(evidence), "{\"nic_level\":true,\"paths_known\":%u,\"paths_down\":%u}",
		 n->paths_known, n->paths_down);
	episode_down(d, SEV_CRITICAL, &n->k, NULL, t, summary, evidence);
	check_flapping(d, n, t);
}

/* ---- paths: link state and delay ----------------------------------------- */

static void path_drop(void *ctx, struct fq_captab_ent *e)
{
	struct fq_detector *d = ctx;

	struct path_ent *p = (struct path_ent *)e;
	struct nic_ent *n;

	if (p->state == ST_UNKNOWN || !(n = (struct nic_ent *)fq_captab_find(&d->nics, &p->k.src)))
		return;
	if (n->paths_known)
		n->paths_known--;
	if (p->state == ST_DOWN && n->paths_down)
		n->paths_down--;
}

static struct path_ent *path_get(struct fq_detector *d, const struct nic_key *src, const struct nic_key *dst,
				 int64_t now)
{
	struct path_key k = {*src, *dst};

	return (struct path_ent *)fq_captab_get(&d->paths, &k, now, true, NULL);
}

/* A path's DOWN at t: nothing more when a NIC episode at either end
 * explains it (the daemon stores the raw event), counted into the path's
 * open episode, or held for incident_settle_ns (promote_paths). */
static void path_down(struct fq_detector *d, struct path_ent *p, int64_t t)
{
	if (nic_incident(d, K_LINK_DOWN, &p->k.src, &p->k.dst, t))
		return;
	if (episode_at(d, &p->k.src, &p->k.dst, t)) {
		episode_down(d, SEV_WARNING, &p->k.src, &p->k.dst, t, NULL, NULL);
		return;
	}
	if (!p->pend_ns)
		p->pend_ns = t;
	p->pend_last_ns = max64(p->pend_last_ns, t);
	p->pend_downs++;
}

/* Paths whose held DOWNs are incident_settle_ns old: an episode of the
 * path (its DOWNs counted, UP since: back at its UP), unless a NIC
 * episode at either end explains them by now. */
static void promote_paths(struct fq_detector *d, int64_t now)
{
	char summary[320];

	FQ_CAPTAB_FOREACH(&d->paths, struct path_ent, p, nx)
	{
		struct anom_ent *a;
		unsigned downs = p->pend_downs;

		if (!p->pend_ns || fq_rule_sat_sub(now, p->pend_ns) < d->c.incident_settle_ns)
			continue;
		p->pend_downs = 0;
		if (!nic_incident(d, K_LINK_DOWN, &p->k.src, &p->k.dst, p->pend_last_ns)) {
			snprintf(summary, sizeof(summary), "path %s/%s -> %s/%s down", p->k.src.node,
				 p->k.src.nic, p->k.dst.node, p->k.dst.nic);
			a = anom_evidence(d, K_LINK_DOWN, SEV_WARNING, &p->k.src, &p->k.dst, p->pend_ns,
					  p->pend_ns, summary, "{\"nic_level\":false}", NULL);
			if (a && downs > 1) {
				a->events = downs;
				episode_update(d, a, p->pend_last_ns);
			}
			if (a && p->state != ST_DOWN)
				a->up_ns = p->state_ns;
		}
		p->pend_ns = p->pend_last_ns = 0;
	}
}

static void path_set_state(struct fq_detector *d, struct path_ent *p, int state, int64_t t)
{
	struct nic_ent *n = nic_get(d, &p->k.src, t);
	char summary[32];
	struct anom_ent *a;
	int old = p->state;

	if (state == old || t < p->state_ns) {
		if (state == ST_DOWN && old == ST_DOWN &&
		    (a = anom_find(d, K_LINK_DOWN, &p->k.src, &p->k.dst)))
			a->last_ns = max64(a->last_ns, t);
		return;
	}
	p->state = state;
	p->state_ns = t;
	if (n) {
		n->paths_known += old == ST_UNKNOWN;
		if (old == ST_DOWN && n->paths_down)
			n->paths_down--;
		n->paths_down += state == ST_DOWN;
	}
	if (state == ST_DOWN)
		path_down(d, p, t);
	else if ((a = anom_find(d, K_LINK_DOWN, &p->k.src, &p->k.dst)))
		a->up_ns = t; /* the episode goes on until UP for incident_gap_ns */
	if (!n)
		return;
	if (state == ST_DOWN && fq_rule_nic_down(&d->c, n->paths_known, n->paths_down)) {
		snprintf(summary, sizeof(summary), "all %u paths down", n->paths_known);
		nic_transition(d, n, true, t, summary);
	} else if (state == ST_UP && n->down) {
		nic_transition(d, n, false, t, "a path up");
	}
}

static void path_delay_sample(struct fq_detector *d, struct path_ent *p, int64_t p50, int64_t p99,
			      int64_t start, int64_t end)
{
	char summary[384], evidence[320];
	int64_t base = p->quiet >= d->c.delay_baseline_windows ? p->baseline_ns : 0;
	enum fq_rule_delay v;

	if (p99 <= 0 && p50 <= 0)
		return;
	if (p50 > 0)
		p->p50_ns = p50;
	p->p99_ns = p99;
	p->last_end_ns = max64(p->last_end_ns, end);
	v = fq_rule_path_delay(&d->c, p99, base);
	if (v == FQ_RULE_DELAY_OK)
		p->streak = 0;
	else if (p->streak < UINT32_MAX && p->streak++ == 0)
		p->streak_start = start;
	p->elevated = v != FQ_RULE_DELAY_OK && p->streak >= d->c.delay_persist_windows;
	if (v == FQ_RULE_DELAY_OK) {
		/* Once established, the baseline learns only from windows within
		 * 2x of it: a path creeping up just under the factor would
		 * otherwise drag its own baseline along and never be flagged. */
		if (!base || p99 / 2 <= base)
			p->baseline_ns = fq_rule_baseline_update(p->baseline_ns, p99);
		if (p99 > 0 && p->quiet < UINT32_MAX)
			p->quiet++;
		return;
	}
	if (!p->elevated)
		return; /* not yet persistent */
	if (v == FQ_RULE_DELAY_ABSOLUTE)
		snprintf(summary, sizeof(summary),
			 "path %s/%s -> %s/%s: owd p99 %.1f us above the %.1f us threshold", p->k.src.node,
			 p->k.src.nic, p->k.dst.node, p->k.dst.nic, us(p99), us(d->c.delay_threshold_ns));
	else
		snprintf(summary, sizeof(summary),
			 "path %s/%s -> %s/%s: owd p99 %.1f us vs baseline %.1f us (x%.1f)", p->k.src.node,
			 p->k.src.nic, p->k.dst.node, p->k.dst.nic, us(p99), us(base),
			 (double)p99 / (double)base);
	snprintf(evidence, sizeof(evidence),
		 "{\"owd_p99_ns\":%" PRId64 ",\"owd_p50_ns\":%" PRId64 ",\"baseline_ns\":%" PRId64
		 ",\"threshold_ns\":%" PRId64 ",\"factor\":%.2f,\"rule\":\"%s\"}",
		 p99, p50, base, d->c.delay_threshold_ns, d->c.delay_baseline_factor,
		 v == FQ_RULE_DELAY_ABSOLUTE ? "threshold" : "baseline");
	/* the anomaly starts with the first window of the streak */
	anom_evidence(d, K_PATH_DELAY, v == FQ_RULE_DELAY_ABSOLUTE ? SEV_CRITICAL : SEV_WARNING, &p->k.src,
		      &p->k.dst, (p->streak_start < start ? p->streak_start : start), end, summary, evidence,
		      NULL);
}

void fq_detector_probe(struct fq_detector *d, const struct fq_det_probe *p)
{
	struct nic_key a, b;
	struct path_ent *fwd, *rev;
	int64_t start;

	if (!d)
		return;
	if (!p || !has(p->node) || !has(p->nic) || !has(p->remote_node) || !has(p->remote_nic) ||
	    p->end_ns <= 0) {
		d->rejected_inputs++;
		return;
	}
	start = p->start_ns > 0 && p->start_ns <= p->end_ns ? p->start_ns : p->end_ns;
	nic_key_set(&a, p->node, p->nic);
	nic_key_set(&b, p->remote_node, p->remote_nic);
	nic_get(d, &a, p->end_ns);
	nic_get(d, &b, p->end_ns);
	fwd = path_get(d, &a, &b, p->end_ns);
	if (!fwd)
		return;
	path_set_state(d, fwd, p->up ? ST_UP : ST_DOWN, p->up ? start : p->end_ns);
	if (!p->up)
		return;
	path_delay_sample(d, fwd, p->owd_fwd_p50_ns, p->owd_fwd_p99_ns, start, p->end_ns);
	if (p->owd_rev_p50_ns > 0 || p->owd_rev_p99_ns > 0) {
		rev = path_get(d, &b, &a, p->end_ns);
		if (rev)
			path_delay_sample(d, rev, p->owd_rev_p50_ns, p->owd_rev_p99_ns, start, p->end_ns);
	}
}

void fq_detector_link(struct fq_detector *d, const struct fq_det_link *e)
{
	struct nic_key a, b;
	struct nic_ent *n;
	struct path_ent *p;

	if (!d)
		return;
	if (!e || !has(e->node) || !has(e->nic) || e->time_ns <= 0) {
		d->rejected_inputs++;
		return;
	}
	nic_key_set(&a, e->node, e->nic);
	if (e->nic_level || !has(e->remote_node) || !has(e->remote_nic)) {
		n = nic_get(d, &a, e->time_ns);
		if (n)
			nic_transition(d, n, !e->up, e->time_ns, "nic-level event");
		return;
	}
	nic_key_set(&b, e->remote_node, e->remote_nic);
	nic_get(d, &b, e->time_ns);
	p = path_get(d, &a, &b, e->time_ns);
	if (p)
		path_set_state(d, p, e->up ? ST_UP : ST_DOWN, e->time_ns);
}

/* ---- lanes ---------------------------------------------------------------- */

static void step_drop(void *ctx, struct fq_captab_ent *e)
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

static void check_inband(struct fq_detector *d, const struct step_ent *s, const struct lane_rec *l)
{
	struct path_key k = l->p;
	struct path_ent *p = (struct path_ent *)fq_captab_find(&d->paths, &k);
	int64_t base = lane_base_delay(l);
	const char *what = l->rtt_floor_ns ? "TCP RTT floor / 2" : "lane min";
	char summary[384], evidence[256];

	if (!p || nic_empty(&l->p.dst) || older_than(l->end_ns, p->last_end_ns, d->c.quiet_close_ns) ||
	    !fq_rule_inband_mismatch(&d->c, base, p->p50_ns))
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
	anom_evidence(d, K_INBAND, SEV_WARNING, &k.src, &k.dst, l->start_ns, l->end_ns, summary, evidence,
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
	a = anom_evidence(d, K_RDMA_CONFIG, SEV_WARNING, &k, NULL, e->time_ns, e->time_ns, summary, evidence,
			  NULL);
	if (a)
		anom_attach(d, a, e->job_id, e->step_id, ranks, e->src_rank == e->dst_rank ? 1 : 2);
}

void fq_detector_step_end(struct fq_detector *d, uint64_t job, uint32_t step)
{
	struct step_key k = {.job = job, .step = step};
	struct fq_captab_ent *e;

	if (d && (e = fq_captab_find(&d->steps, &k)))
		fq_captab_unlink(&d->steps, e);
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
		*r = key;
		r->first_ns = first;
	}
	if (timed(r) && r->end_ns >= s->newest_end_ns) {
		s->newest_end_ns = r->end_ns;
		s->newest_len_ns = fq_rule_sat_sub(r->end_ns, r->start_ns);
	}
	check_inband(d, s, r);
attach:
	FQ_CAPTAB_FOREACH(&d->anoms, struct anom_ent, a, nx)
	{
		attach_lane(d, a, &s->k, r);
	}
}

/* Lane outliers among the step's newest interval (lanes whose interval
 * ends within half an interval of the newest one). */
static void check_step_outliers(struct fq_detector *d, struct step_ent *s)
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
		struct anom_ent *a;

		if (l->end_ns != l->outlier_end_ns) { /* each interval judged once */
			l->outlier_end_ns = l->end_ns;
			l->outlier_runs = d->scratch_out[j] ? l->outlier_runs + 1 : 0;
		}
		if (!d->scratch_out[j] || l->outlier_runs < d->c.lane_outlier_persist)
			continue;
		snprintf(summary, sizeof(summary),
			 "lane %u of job %" PRIu64 ".%" PRIu64
			 " rank %u->%u: p99 %.1f us vs step median %.1f us "
			 "(%s/%s -> %s/%s)",
			 l->lane, s->k.job, s->k.step, l->src_rank, l->dst_rank, us(l->p99_ns), us(median),
			 l->p.src.node, l->p.src.nic, l->p.dst.node[0] ? l->p.dst.node : "?",
			 l->p.dst.nic[0] ? l->p.dst.nic : "?");
		snprintf(evidence, sizeof(evidence),
			 "{\"job_id\":%" PRIu64 ",\"step_id\":%" PRIu64
			 ",\"src_rank\":%u,\"dst_rank\":%u,\"lane\":%u,"
			 "\"owd_p99_ns\":%" PRId64 ",\"step_median_p99_ns\":%" PRId64
			 ",\"lanes\":%zu,\"factor\":%.2f}",
			 s->k.job, s->k.step, l->src_rank, l->dst_rank, l->lane, l->p99_ns, median, k,
			 d->c.lane_outlier_factor);
		a = anom_evidence(d, K_LANE_OUTLIER, SEV_WARNING, &l->p.src,
				  nic_empty(&l->p.dst) ? NULL : &l->p.dst, l->start_ns, l->end_ns, summary,
				  evidence, NULL);
		if (a)
			anom_attach(d, a, s->k.job, (uint32_t)s->k.step, ranks,
				    l->src_rank == l->dst_rank ? 1 : 2);
	}
}

/* ---- collision ------------------------------------------------------------- */

struct coll_lane {
	const struct lane_rec *l;
	char src[NODE_LEN + NIC_LEN + 1], dst[NODE_LEN + NIC_LEN + 1];
};

/* Gather the newest interval's lanes of every step seen in the last
 * COLL_STALE_NS that have a delay sample and a known far end, with their
 * NIC pair's probe delay (the path's probe p50, else its baseline). Each
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
			in[n] = (struct fq_rule_clane){s->k.job, NULL, NULL, l->p99_ns,
						       p ? (p->p50_ns > 0 ? p->p50_ns : p->baseline_ns) : 0};
			n++;
		}
	}
	for (size_t i = 0; i < n; i++)
		in[i].src_nic = cl[i].src, in[i].dst_nic = cl[i].dst;
	*clp = cl, *inp = in, *np = n;
	return 0;
fail:
	free(cl);
	free(in);
	return -ENOMEM;
}

/* Remember (or renew) job as advised off nic until until_ns: its entry, an
 * expired one, else the one that lapses first. */
static void note_advised(struct fq_detector *d, const char *nic, uint64_t job, int64_t until_ns)
{
	size_t k = 0, n = sizeof(d->advised) / sizeof(d->advised[0]);

	for (size_t i = 0; i < n; i++) {
		if (!strcmp(d->advised[i].nic, nic)) {
			k = i;
			break;
		}
		if (d->advised[i].until_ns < d->advised[k].until_ns)
			k = i;
	}
	snprintf(d->advised[k].nic, sizeof(d->advised[k].nic), "%s", nic);
	d->advised[k].job = job;
	d->advised[k].until_ns = until_ns;
}

/* The collision rule over all steps' newest lanes: on a collision, the
 * anomaly on the shared NIC (attached to every step whose lanes cross it)
 * and one advice per path of the moved job's outlier lanes through it. */
static void check_collisions(struct fq_detector *d, int64_t now)
{
	struct coll_lane *cl = NULL;
	struct fq_rule_clane *in = NULL;
	struct fq_rule_collision r;
	const struct nic_key *shared = NULL;
	char summary[384], evidence[384];
	struct anom_ent *a;
	bool *out = NULL;
	size_t n = 0;

	if (coll_gather(d, now, &cl, &in, &n) < 0 || !n || !(out = calloc(n, sizeof(*out))) ||
	    !fq_rule_collision(&d->c, in, n, out, &r))
		goto done;
	for (size_t i = 0; i < sizeof(d->advised) / sizeof(d->advised[0]); i++)
		if (d->advised[i].until_ns > now && fq_rule_collision_keep(in, n, out, d->advised[i].job, &r))
			break;
	note_advised(d, r.nic, r.move_job, now + d->c.advice_lifetime_ns);
	for (size_t i = 0; i < n && !shared; i++)
		shared = !strcmp(cl[i].src, r.nic)   ? &cl[i].l->p.src
			 : !strcmp(cl[i].dst, r.nic) ? &cl[i].l->p.dst
						     : NULL;
	snprintf(summary, sizeof(summary),
		 "jobs %" PRIu64 " and %" PRIu64 " collide on %s: %zu and %zu lanes above %.1fx their probe "
		 "delay; job %" PRIu64 " advised to move",
		 r.move_job, r.other_job, r.nic, r.move_lanes, r.other_lanes, d->c.collision_factor,
		 r.move_job);
	snprintf(evidence, sizeof(evidence),
		 "{\"nic\":\"%s\",\"move_job\":%" PRIu64 ",\"other_job\":%" PRIu64
		 ",\"move_lanes\":%zu,\"other_lanes\":%zu,\"jobs\":%zu,\"factor\":%.2f,"
		 "\"rule\":\"fewest affected lanes, ties the higher job id\"}",
		 r.nic, r.move_job, r.other_job, r.move_lanes, r.other_lanes, r.jobs, d->c.collision_factor);
	a = anom_evidence(d, K_COLLISION, SEV_WARNING, shared, NULL, now, now, summary, evidence, NULL);
	for (size_t i = 0; i < n; i++) {
		const struct lane_rec *l = cl[i].l;
		bool dup = false;

		if (!out[i] || in[i].job_id != r.move_job ||
		    (strcmp(cl[i].src, r.nic) != 0 && strcmp(cl[i].dst, r.nic) != 0))
			continue;
		for (size_t j = 0; j < i && !dup; j++) /* one advice per path */
			dup = out[j] && in[j].job_id == r.move_job && !strcmp(cl[j].src, cl[i].src) &&
			      !strcmp(cl[j].dst, cl[i].dst);
		if (dup)
			continue;
		/* the sender steers its chunks: the advice goes to the lane's source node */
		push(d, &(struct fq_det_action){.kind = FQ_DET_ADVICE,
						.handle = a ? a->handle : 0,
						.job_id = r.move_job,
						.other_job = r.other_job,
						.start_ns = now,
						.end_ns = now + d->c.advice_lifetime_ns,
						.node = l->p.src.node,
						.nic = l->p.src.nic,
						.remote_node = l->p.dst.node,
						.remote_nic = l->p.dst.nic,
						.reason = r.nic,
						.summary = summary});
	}
done:
	free(out);
	free(cl);
	free(in);
}

/* ---- tick ----------------------------------------------------------------- */

static void check_slow_nics(struct fq_detector *d, int64_t now)
{
	char summary[256], evidence[256];

	FQ_CAPTAB_FOREACH(&d->nics, struct nic_ent, n, nx)
	{
		n->tx_paths = n->tx_elev = n->rx_paths = n->rx_elev = 0;
	}
	FQ_CAPTAB_FOREACH(&d->paths, struct path_ent, p, nx)
	{
		struct nic_ent *s, *t;

		if (p->p99_ns <= 0 || older_than(now, p->last_end_ns, d->c.quiet_close_ns))
			continue;
		if ((s = (struct nic_ent *)fq_captab_find(&d->nics, &p->k.src)))
			s->tx_paths++, s->tx_elev += p->elevated;
		if ((t = (struct nic_ent *)fq_captab_find(&d->nics, &p->k.dst)))
			t->rx_paths++, t->rx_elev += p->elevated;
	}
	FQ_CAPTAB_FOREACH(&d->nics, struct nic_ent, n, nx)
	{
		for (int dir = 0; dir < 2; dir++) {
			unsigned paths = dir ? n->rx_paths : n->tx_paths,
				 elev = dir ? n->rx_elev : n->tx_elev;

			if (!fq_rule_slow_nic(&d->c, paths, elev))
				continue;
			snprintf(summary, sizeof(summary), "%s of %s slow %s: %u of %u paths %s it elevated",
				 n->k.nic, n->k.node, dir ? "receiver" : "sender", elev, paths,
				 dir ? "to" : "from");
			snprintf(evidence, sizeof(evidence),
				 "{\"paths\":%u,\"elevated\":%u,\"share\":%.2f,\"min_paths\":%u}", paths,
				 elev, d->c.slow_nic_share, d->c.slow_nic_min_paths);
			anom_evidence(d, dir ? K_SLOW_RECEIVER : K_SLOW_SENDER, SEV_WARNING, &n->k, NULL, now,
				      now, summary, evidence, NULL);
		}
	}
}

static void check_dead_nics(struct fq_detector *d, int64_t now)
{
	char reason[160];

	FQ_CAPTAB_FOREACH(&d->nics, struct nic_ent, n, nx)
	{
		struct anom_ent *a;
		unsigned count;

		if (!n->down || n->dead_hinted ||
		    fq_rule_sat_sub(now, n->down_since) < d->c.nic_dead_after_ns)
			continue;
		n->dead_hinted = true;
		n->h.seen_ns = max64(n->h.seen_ns, now); /* still down: keep it */
		count = fq_rule_flap_count(n->downs, n->ndowns, now, d->c.flap_window_ns);
		a = anom_find(d, K_LINK_DOWN, &n->k, NULL);
		hint_drain(d, &n->k,
			   fq_rule_drain_reason(n->k.nic, "down", count ? count : 1, d->c.flap_window_ns,
						reason, sizeof(reason)),
			   a ? a->handle : 0, now);
	}
}

static void close_quiet(struct fq_detector *d, int64_t now)
{
	FQ_CAPTAB_FOREACH(&d->anoms, struct anom_ent, a, nx)
	{
		struct nic_ent *n;
		int64_t end;

		switch ((enum kind)a->k.kind) {
		case K_LINK_DOWN: /* an episode: until UP for incident_gap_ns; or its place's state was dropped */
			if (episode_over(d, a, now, &end))
				anom_close(d, a, end);
			break;
		case K_FLAPPING: /* until the window holds no more than the threshold */
			n = (struct nic_ent *)fq_captab_find(&d->nics, &a->k.a);
			if (!n || !fq_rule_flapping(&d->c, n->downs, n->ndowns, now, NULL))
				anom_close(d, a, now > a->last_ns ? now : a->last_ns);
			break;
		default:
			if (older_than(now, a->last_ns, d->c.quiet_close_ns))
				anom_close(d, a, a->last_ns);
			break;
		}
	}
}

static void mark_unhealthy(struct fq_detector *d, const char *node, int64_t now)
{
	struct node_ent *n;

	if (node[0] && (n = node_find(d, node)))
		n->unhealthy_ns = max64(n->unhealthy_ns, now);
}

static void check_resume(struct fq_detector *d, int64_t now)
{
	char reason[96], win[32];

	FQ_CAPTAB_FOREACH(&d->anoms, struct anom_ent, a, nx)
	{
		mark_unhealthy(d, a->k.a.node, now);
		mark_unhealthy(d, a->k.b.node, now);
	}
	fq_rule_format_duration(d->c.resume_after_ns, win, sizeof(win));
	snprintf(reason, sizeof(reason), FQ_RULE_REASON_PREFIX " no anomaly for %s", win);
	FQ_CAPTAB_FOREACH(&d->nodes, struct node_ent, n, nx)
	{
		int64_t healthy_from = max64(n->drained_ns, n->unhealthy_ns);

		if (!n->drained || !n->own_reason || n->resume_hinted)
			continue;
		n->h.seen_ns = max64(n->h.seen_ns, now); /* waiting to resume: keep it */
		if (fq_rule_sat_sub(now, healthy_from) < d->c.resume_after_ns)
			continue;
		n->resume_hinted = true;
		push(d, &(struct fq_det_action){.kind = FQ_DET_HINT,
						.resume = true,
						.start_ns = now,
						.node = n->name,
						.reason = reason});
	}
}

static void sweep(struct fq_detector *d, int64_t now)
{
	int64_t state_cut = fq_rule_sat_sub(now, d->c.state_expire_ns) - 1;

	fq_captab_drop_upto(&d->paths, state_cut, NULL);
	fq_captab_drop_upto(&d->nics, state_cut, NULL);
	fq_captab_drop_upto(&d->nodes, state_cut, NULL);
	fq_captab_drop_upto(&d->steps, fq_rule_sat_sub(now, d->c.step_expire_ns) - 1, NULL);
	if (d->dropped_anomalies || d->dropped_actions || d->rejected_inputs)
		fq_log_ratelimited(&d->rl, FQ_LOG_WARN,
				   "detector: %" PRIu64 " anomalies not opened (max_open), %" PRIu64
				   " actions dropped, %" PRIu64 " inputs rejected",
				   d->dropped_anomalies, d->dropped_actions, d->rejected_inputs);
}

void fq_detector_tick(struct fq_detector *d, int64_t now_ns)
{
	if (!d || now_ns <= 0)
		return;
	check_slow_nics(d, now_ns);
	FQ_CAPTAB_FOREACH(&d->steps, struct step_ent, s, nx)
	{
		if (s->newest_end_ns > s->evaluated_ns) {
			check_step_outliers(d, s);
			s->evaluated_ns = s->newest_end_ns;
		}
	}
	if (d->c.collision_advice)
		check_collisions(d, now_ns);
	check_dead_nics(d, now_ns);
	close_quiet(d, now_ns); /* first: an episode over is not extended by held DOWNs */
	promote_paths(d, now_ns);
	check_resume(d, now_ns);
	if (older_than(now_ns, d->last_sweep_ns, SWEEP_NS) || now_ns < d->last_sweep_ns) {
		sweep(d, now_ns);
		d->last_sweep_ns = now_ns;
	}
}

/* ---- create / destroy ----------------------------------------------------- */

struct fq_detector *fq_detector_create(const struct fq_detector_config *c)
{
	struct fq_detector *d = calloc(1, sizeof(*d));
	int64_t expire;

	if (!d)
		return NULL;
	d->rl = (struct fq_ratelimit){.interval_ns = 60000000000ULL, .burst = 2};
	if (c)
		d->c = *c;
	else
		fq_detector_config_defaults(&d->c);
	if (d->c.flap_threshold >= MAX_DOWNS)
		d->c.flap_threshold = MAX_DOWNS - 1;
	if (d->c.incident_gap_ns <= d->c.incident_settle_ns) /* an explaining NIC episode outlives the wait */
		d->c.incident_gap_ns = d->c.incident_settle_ns + 1;
	expire = max64(d->c.state_expire_ns, d->c.flap_window_ns); /* flap times must outlive their window */
	d->c.state_expire_ns = expire;
	fq_captab_init(&d->paths, d, offsetof(struct path_ent, k), sizeof(struct path_key),
		       sizeof(struct path_ent), d->c.max_paths, expire, path_drop);
	fq_captab_init(&d->nics, d, offsetof(struct nic_ent, k), sizeof(struct nic_key),
		       sizeof(struct nic_ent), d->c.max_nics, expire, nic_drop);
	fq_captab_init(&d->nodes, d, offsetof(struct node_ent, name), NODE_LEN, sizeof(struct node_ent),
		       d->c.max_nodes, expire, NULL);
	fq_captab_init(&d->steps, d, offsetof(struct step_ent, k), sizeof(struct step_key),
		       sizeof(struct step_ent), d->c.max_steps, d->c.step_expire_ns, step_drop);
	fq_captab_init(&d->anoms, d, offsetof(struct anom_ent, k), sizeof(struct anom_key),
		       sizeof(struct anom_ent), d->c.max_open, 0, anom_drop);
	if (!d->c.max_lanes)
		d->c.max_lanes = 1;
	if (!d->c.max_lanes_per_step)
		d->c.max_lanes_per_step = 1;
	return d;
}

void fq_detector_destroy(struct fq_detector *d)
{
	struct qact *q, *next;

	if (!d)
		return;
	fq_captab_free(&d->anoms);
	fq_captab_free(&d->steps);
	fq_captab_free(&d->paths);
	fq_captab_free(&d->nics);
	fq_captab_free(&d->nodes);
	for (q = d->head; q; q = next) {
		next = q->next;
		qact_free(q);
	}
	qact_free(d->cur);
	free(d->scratch_p99);
	free(d->scratch_idx);
	free(d->scratch_out);
	free(d);
}
