#include "slurmd-agent/prober.h"

#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "slurmd-agent/path.h"
#include "slurmd-agent/probe_open.h"
#include "slurmd-agent/probe_transport.h"
#include "slurmd-agent/probe_wire.h"

#define MAX_NICS       16
#define MAX_PATHS      FQ_PROBER_MAX_PATHS
#define PENDING        64   /* pairs in flight per path */
#define TX_RING        4096 /* sends awaiting their TX stamp, per NIC */
#define RESPONDERS     256  /* requests being answered, per NIC */
#define WINDOW_SAMPLES 1024
#define CHECK_NS       (5 * 1000000LL)
#define LOST_AFTER_NS  (1000 * 1000000LL)
/* How fast a held estimate's bound grows with age: what an oscillator can
 * wander beyond the fitted drift (0.1 ppm). */
#define HOLD_AGING_PPB 100
/* A window's drift (4 s of microsecond noise) is too noisy to extrapolate
 * minutes ahead; two accepted estimates this far apart give a drift with
 * noise below 0.02 ppm. */
#define ANCHOR_NS (30 * FQ_NSEC_PER_SEC)

enum tx_role {
	TX_NONE,
	TX_REQ,
	TX_RESP
};

struct tx_meta {
	enum tx_role role;
	uint32_t key; /* the transport's key of this send (probe_transport.h) */
	unsigned ref; /* path index (REQ) or responder slot (RESP) */
	uint64_t pair;
	uint8_t index;
};

/* A pair we asked for: stamps on our clock (s: TX of REQ, a: RX of RESP)
 * and on the peer's (r: its RX of REQ, b: its TX of RESP). */
struct pending {
	uint64_t pair;
	int64_t sent_ns;
	int64_t s[2], r[2], a[2], b[2];
	uint8_t have; /* bits: s0 s1 resp0 resp1 followup */
	uint8_t used;
};

#define HAVE_S0  0x01
#define HAVE_S1  0x02
#define HAVE_A0  0x04
#define HAVE_A1  0x08
#define HAVE_B   0x10
#define HAVE_ALL 0x1f

/* A request we answer: its RX stamps, then our RESP TX stamps for the FOLLOWUP. */
struct responder {
	struct fq_peer_addr from;
	uint32_t session;
	uint64_t pair;
	int64_t rx[2], tx[2];
	uint8_t have; /* bits: rx0 rx1 tx0 tx1 */
	uint8_t used;
};

struct samples {
	int64_t v[WINDOW_SAMPLES];
	unsigned n;
};

struct path {
	struct nic *nic;
	struct fq_clock_estimate held;   /* the best recent estimate (held.at_ns == 0: none) */
	struct fq_clock_estimate anchor; /* an accepted estimate >= ANCHOR_NS older than `held` */
	int64_t long_baseline_ns;        /* that baseline (0: none yet) */
	char peer_node[64], peer_nic[32];
	struct fq_peer_addr addr;
	struct fq_path live;
	int64_t window_start_ns;
	bool peer_epoch_valid;
	int64_t peer_epoch_ns; /* the peer's global - local, from its last FOLLOWUP */
	struct fq_clock_fit *fit;
	struct pending pend[PENDING];
	/* this report window */
	uint64_t sent, answered, lost, pure_fwd, pure_rev;
	struct samples fwd, rev, rtt; /* raw fwd/rev differences; rtt */
};

struct nic {
	char name[IF_NAMESIZE];
	struct fq_probe_transport *tp; /* UDP or UD (probe_transport.h) */
	struct event *ev;
	struct tx_meta tx[TX_RING];
	struct responder resp[RESPONDERS];
	unsigned resp_next;
};

struct fq_prober {
	struct event_base *base;
	struct fq_prober_config cfg;
	fq_prober_event_fn on_event;
	void *arg;
	uint32_t session;
	uint64_t next_pair;
	struct nic nics[MAX_NICS];
	unsigned n_nics;
	struct path paths[MAX_PATHS];
	unsigned n_paths, next_probe;
	struct event *probe_ev, *check_ev;
	uint64_t bad_packets, unknown_sender, stale_session, no_tx_stamp, tx_key_mismatch;
	bool epoch_valid;
	int64_t epoch_ns;
};

void fq_prober_set_epoch(struct fq_prober *p, bool valid, int64_t global_minus_local_ns)
{
	p->epoch_valid = valid;
	p->epoch_ns = global_minus_local_ns;
}

static void on_readable(evutil_socket_t fd, short what, void *arg);
static void on_probe_timer(evutil_socket_t fd, short what, void *arg);
static void on_check_timer(evutil_socket_t fd, short what, void *arg);

struct fq_prober *fq_prober_create(struct event_base *base, const struct fq_prober_config *cfg,
				   fq_prober_event_fn on_event, void *arg)
{
	struct fq_prober *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->base = base;
	p->cfg = *cfg;
	p->on_event = on_event;
	p->arg = arg;
	if (getrandom(&p->session, sizeof(p->session), 0) != sizeof(p->session))
		p->session = (uint32_t)fq_now_ns() ^ (uint32_t)getpid();
	p->next_pair = 1;
	return p;
}

void fq_prober_destroy(struct fq_prober *p)
{
	if (!p)
		return;
	if (p->probe_ev)
		event_free(p->probe_ev);
	if (p->check_ev)
		event_free(p->check_ev);
	for (unsigned i = 0; i < p->n_paths; i++)
		if (p->paths[i].nic)
			fq_clock_fit_destroy(p->paths[i].fit);
	for (unsigned i = 0; i < p->n_nics; i++) {
		if (p->nics[i].ev)
			event_free(p->nics[i].ev);
		p->nics[i].tp->ops->destroy(p->nics[i].tp);
	}
	free(p);
}

static struct nic *nic_named(struct fq_prober *p, const char *name)
{
	for (unsigned i = 0; i < p->n_nics; i++)
		if (strcmp(p->nics[i].name, name) == 0)
			return &p->nics[i];
	return NULL;
}

int fq_prober_add_transport(struct fq_prober *p, struct fq_probe_transport *tp)
{
	struct nic *n;

	if (p->n_nics == MAX_NICS || nic_named(p, tp->nic)) {
		tp->ops->destroy(tp);
		return p->n_nics == MAX_NICS ? -EINVAL : -EEXIST;
	}
	n = &p->nics[p->n_nics];
	memset(n, 0, sizeof(*n));
	snprintf(n->name, sizeof(n->name), "%s", tp->nic);
	n->tp = tp;
	n->ev = event_new(p->base, tp->ops->fd(tp), EV_READ | EV_PERSIST, on_readable, p);
	if (!n->ev) {
		tp->ops->destroy(tp);
		return -ENOMEM;
	}
	p->n_nics++;
	return 0;
}

int fq_prober_add_nic(struct fq_prober *p, const char *ifname)
{
	struct fq_probe_transport *tp;
	int rc;

	if (p->n_nics == MAX_NICS || strlen(ifname) >= IF_NAMESIZE)
		return -EINVAL;
	rc = fq_probe_transport_open(p->cfg.sysfs, ifname, p->cfg.port, &tp);
	if (rc < 0)
		return rc;
	return fq_prober_add_transport(p, tp);
}

int fq_prober_nic_address(const struct fq_prober *p, const char *nic, char *buf, size_t len)
{
	struct fq_peer_addr a;

	for (unsigned i = 0; i < p->n_nics; i++)
		if (strcmp(p->nics[i].name, nic) == 0) {
			int rc = p->nics[i].tp->ops->local_addr(p->nics[i].tp, &a);
			if (rc < 0)
				return rc;
			fq_peer_addr_format(&a, buf, len);
			return 0;
		}
	return -ENODEV;
}

/* Recompute the probe tick: one pair per path per probe_interval, spread. */
static void retime(struct fq_prober *p)
{
	unsigned live = 0;
	int64_t per;
	struct timeval tick;

	for (unsigned i = 0; i < p->n_paths; i++)
		live += p->paths[i].nic != NULL;
	per = live ? p->cfg.probe_interval_ns / live : p->cfg.probe_interval_ns;
	if (per < 1000)
		per = 1000;
	tick.tv_sec = per / 1000000000;
	tick.tv_usec = (per % 1000000000) / 1000;
	if (p->probe_ev)
		event_add(p->probe_ev, &tick);
}

int fq_prober_add_peer(struct fq_prober *p, const char *local_nic, const char *peer_node,
		       const char *peer_nic, const char *addr)
{
	struct path *t = NULL;
	struct nic *n = nic_named(p, local_nic ? local_nic : peer_nic);
	struct fq_peer_addr in;

	if (!n)
		return -ENODEV;
	if (fq_peer_addr_parse(addr, p->cfg.port, &in) < 0)
		return -EINVAL;
	if (in.kind != n->tp->peer_kind)
		return -EAFNOSUPPORT; /* a UD peer on a UDP NIC, or the reverse */
	for (unsigned i = 0; i < p->n_paths; i++) {
		struct path *u = &p->paths[i];
		if (u->nic == n && fq_peer_addr_matches(&u->addr, &in))
			return -EEXIST;
		if (!u->nic && !t)
			t = u;
	}
	if (!t) {
		if (p->n_paths == MAX_PATHS)
			return -ENOSPC;
		t = &p->paths[p->n_paths++];
	}
	memset(t, 0, sizeof(*t));
	t->addr = in;
	snprintf(t->peer_node, sizeof(t->peer_node), "%s", peer_node);
	snprintf(t->peer_nic, sizeof(t->peer_nic), "%s", peer_nic);
	/* enough for window/probe_interval pairs, with room for bursts */
	t->fit = fq_clock_fit_create(p->cfg.window_ns, p->cfg.bucket_ns,
				     (unsigned)(2 * p->cfg.window_ns / p->cfg.probe_interval_ns + 64));
	if (!t->fit)
		return -ENOMEM;
	fq_path_init(&t->live, fq_now_ns());
	t->window_start_ns = fq_now_ns();
	t->nic = n; /* last: the slot is live from here */
	retime(p);
	return 0;
}

int fq_prober_remove_peer(struct fq_prober *p, const char *local_nic, const char *addr)
{
	struct nic *n = nic_named(p, local_nic);
	struct fq_peer_addr in;

	if (!n)
		return -ENODEV;
	if (fq_peer_addr_parse(addr, p->cfg.port, &in) < 0)
		return -EINVAL;
	for (unsigned i = 0; i < p->n_paths; i++) {
		struct path *t = &p->paths[i];
		if (t->nic == n && fq_peer_addr_matches(&t->addr, &in)) {
			fq_clock_fit_destroy(t->fit);
			memset(t, 0, sizeof(*t)); /* nic = NULL: a free slot */
			retime(p);
			return 0;
		}
	}
	return -ENOENT;
}

/* Send one probe, remembering what its TX stamp will belong to. */
static int send_probe(struct fq_prober *p, struct nic *n, const struct fq_peer_addr *to,
		      const struct fq_probe *pr, enum tx_role role, unsigned ref)
{
	uint8_t buf[FQ_PROBE_SIZE];
	struct tx_meta *m;
	uint32_t key;
	int rc;

	(void)p;
	fq_probe_encode(pr, buf);
	rc = n->tp->ops->send(n->tp, to, buf, sizeof(buf), &key);
	if (rc < 0) {
		errno = -rc;
		return rc;
	}
	m = &n->tx[key % TX_RING];
	m->role = role;
	m->key = key;
	m->ref = ref;
	m->pair = pr->pair;
	m->index = pr->index;
	return 0;
}

static struct path *path_of(struct fq_prober *p, struct nic *n, const struct fq_peer_addr *from)
{
	for (unsigned i = 0; i < p->n_paths; i++) {
		struct path *t = &p->paths[i];
		if (t->nic && t->nic == n && fq_peer_addr_matches(&t->addr, from))
			return t;
	}
	return NULL;
}

static void push(struct samples *s, int64_t v)
{
	if (s->n < WINDOW_SAMPLES)
		s->v[s->n++] = v;
}

/* A pair is complete: feed the fit and the window statistics. */
static void pair_complete(struct fq_prober *p, struct path *t, struct pending *q)
{
	if (fq_pair_is_pure(q->s[0], q->s[1], q->r[0], q->r[1], p->cfg.guard_ns)) {
		fq_clock_fit_add_fwd(t->fit, q->s[0], q->r[0] - q->s[0]);
		t->pure_fwd++;
	}
	if (fq_pair_is_pure(q->b[0], q->b[1], q->a[0], q->a[1], p->cfg.guard_ns)) {
		fq_clock_fit_add_rev(t->fit, q->a[0], q->a[0] - q->b[0]);
		t->pure_rev++;
	}
	push(&t->fwd, q->r[0] - q->s[0]);
	push(&t->rev, q->a[0] - q->b[0]);
	push(&t->rtt, (q->a[0] - q->s[0]) - (q->b[0] - q->r[0]));
	q->used = 0;
}

static void send_pair(struct fq_prober *p, struct path *t)
{
	struct pending *q = &t->pend[p->next_pair % PENDING];
	struct fq_probe pr = {.type = FQ_PROBE_REQ, .session = p->session, .pair = p->next_pair};
	unsigned idx = (unsigned)(t - p->paths);
	int64_t now = fq_now_ns();

	if (q->used) /* unanswered for PENDING rounds: lost */
		t->lost++;
	memset(q, 0, sizeof(*q));
	q->pair = p->next_pair++;
	q->sent_ns = now;
	q->used = 1;
	for (uint8_t i = 0; i < 2; i++) {
		pr.index = i;
		if (send_probe(p, t->nic, &t->addr, &pr, TX_REQ, idx) < 0) {
			/* ENETUNREACH etc. while the link is down: the silence is the signal */
			fq_debug("probe to %s:%s: %s", t->peer_node, t->peer_nic, strerror(errno));
			break;
		}
	}
	t->sent++;
	fq_path_on_probe(&t->live, now);
}

static void on_probe_timer(evutil_socket_t fd, short what, void *arg)
{
	struct fq_prober *p = arg;

	(void)fd;
	(void)what;
	/* Each tick probes one path: paths are spread over the interval
	 * rather than bursting all at once. */
	for (unsigned tries = 0; tries < p->n_paths; tries++) {
		struct path *t;

		if (p->next_probe >= p->n_paths)
			p->next_probe = 0;
		t = &p->paths[p->next_probe++];
		if (t->nic) {
			send_pair(p, t);
			return;
		}
	}
}

static void on_check_timer(evutil_socket_t fd, short what, void *arg)
{
	struct fq_prober *p = arg;
	int64_t now = fq_now_ns(), since;

	(void)fd;
	(void)what;
	for (unsigned i = 0; i < p->n_paths; i++) {
		struct path *t = &p->paths[i];
		if (!t->nic)
			continue;
		if (fq_path_check(&t->live, now, p->cfg.down_after_ns, &since) == FQ_PATH_WENT_DOWN &&
		    p->on_event)
			p->on_event(p->arg, t->nic->name, t->peer_node, t->peer_nic, 0, since, now);
		for (unsigned k = 0; k < PENDING; k++) {
			struct pending *q = &t->pend[k];
			if (q->used && now - q->sent_ns > LOST_AFTER_NS) {
				t->lost++;
				q->used = 0;
			}
		}
	}
}

static void handle_request(struct fq_prober *p, struct nic *n, const struct fq_probe *pr,
			   const struct fq_peer_addr *from, int64_t rx)
{
	struct responder *r = NULL;

	for (unsigned i = 0; i < RESPONDERS; i++) {
		struct responder *c = &n->resp[i];
		if (c->used && c->pair == pr->pair && c->session == pr->session &&
		    fq_peer_addr_equal(&c->from, from)) {
			r = c;
			break;
		}
	}
	if (!r) {
		r = &n->resp[n->resp_next];
		n->resp_next = (n->resp_next + 1) % RESPONDERS;
		memset(r, 0, sizeof(*r));
		r->used = 1;
		r->from = *from;
		r->session = pr->session;
		r->pair = pr->pair;
	}
	r->rx[pr->index] = rx;
	r->have |= (uint8_t)(1u << pr->index);
	if ((r->have & 3) == 3 && !(r->have & 0x10)) {
		struct fq_probe resp = {.type = FQ_PROBE_RESP,
					.session = r->session,
					.pair = r->pair,
					.t0 = r->rx[0],
					.t1 = r->rx[1]};
		r->have |= 0x10; /* answered */
		for (uint8_t i = 0; i < 2; i++) {
			resp.index = i;
			if (send_probe(p, n, &r->from, &resp, TX_RESP, (unsigned)(r - n->resp)) < 0)
				break;
		}
	}
}

static void handle_answer(struct fq_prober *p, struct nic *n, const struct fq_probe *pr,
			  const struct fq_peer_addr *from, int64_t rx)
{
	struct path *t = path_of(p, n, from);
	struct pending *q;

	if (!t) {
		p->unknown_sender++;
		return;
	}
	if (pr->session != p->session) {
		p->stale_session++;
		return;
	}
	q = &t->pend[pr->pair % PENDING];
	if (!q->used || q->pair != pr->pair)
		return; /* late: already counted lost */
	if (pr->type == FQ_PROBE_RESP) {
		q->r[0] = pr->t0;
		q->r[1] = pr->t1;
		q->a[pr->index] = rx;
		q->have |= pr->index ? HAVE_A1 : HAVE_A0;
		if (fq_path_on_answer(&t->live, rx) == FQ_PATH_WENT_UP && p->on_event)
			p->on_event(p->arg, n->name, t->peer_node, t->peer_nic, 1, rx, fq_now_ns());
		if (pr->index == 0)
			t->answered++;
	} else {
		q->b[0] = pr->t0;
		q->b[1] = pr->t1;
		q->have |= HAVE_B;
		t->peer_epoch_valid = pr->epoch_valid;
		t->peer_epoch_ns = pr->epoch_ns;
	}
	if ((q->have & HAVE_ALL) == HAVE_ALL)
		pair_complete(p, t, q);
}

/* A kernel TX stamp came back on the error queue. */
static void handle_tx_stamp(struct fq_prober *p, struct nic *n, uint32_t key, int64_t tx)
{
	struct tx_meta *m = &n->tx[key % TX_RING];

	if (m->role != TX_NONE && m->key != key) {
		/* our count of sends and the kernel's disagree: a stamp must
		 * not be given to the wrong packet */
		p->tx_key_mismatch++;
		return;
	}

	if (m->role == TX_REQ && m->ref < p->n_paths && p->paths[m->ref].nic) {
		struct path *t = &p->paths[m->ref];
		struct pending *q = &t->pend[m->pair % PENDING];
		if (q->used && q->pair == m->pair) {
			q->s[m->index] = tx;
			q->have |= m->index ? HAVE_S1 : HAVE_S0;
			if ((q->have & HAVE_ALL) == HAVE_ALL)
				pair_complete(p, t, q);
		}
	} else if (m->role == TX_RESP && m->ref < RESPONDERS) {
		struct responder *r = &n->resp[m->ref];
		if (r->used && r->pair == m->pair) {
			r->tx[m->index] = tx;
			r->have |= (uint8_t)(4u << m->index);
			if ((r->have & 0x0c) == 0x0c) {
				struct fq_probe f = {.type = FQ_PROBE_FOLLOWUP,
						     .session = r->session,
						     .pair = r->pair,
						     .t0 = r->tx[0],
						     .t1 = r->tx[1],
						     .epoch_valid = p->epoch_valid,
						     .epoch_ns = p->epoch_ns};
				send_probe(p, n, &r->from, &f, TX_NONE, 0);
				r->used = 0;
			}
		}
	}
	m->role = TX_NONE;
}

static void drain_tx_stamps(struct fq_prober *p, struct nic *n)
{
	for (int i = 0; i < 256; i++) {
		uint32_t key;
		int64_t tx;
		int rc = n->tp->ops->tx_stamp(n->tp, &key, &tx);

		if (rc == 0)
			break;
		if (rc > 0)
			handle_tx_stamp(p, n, key, tx);
		else
			p->no_tx_stamp++;
	}
}

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
	struct fq_prober *p = arg;
	struct nic *n = NULL;

	(void)what;
	for (unsigned i = 0; i < p->n_nics; i++)
		if (p->nics[i].tp->ops->fd(p->nics[i].tp) == fd)
			n = &p->nics[i];
	if (!n)
		return;
	n->tp->ops->ready(n->tp);
	drain_tx_stamps(p, n);
	for (int i = 0; i < 256; i++) {
		uint8_t buf[FQ_PROBE_SIZE + 1];
		char from_s[FQ_PEER_ADDR_STRLEN];
		struct fq_probe_rx rx;
		struct fq_probe pr;
		long len = n->tp->ops->recv(n->tp, buf, sizeof(buf), &rx);

		if (len < 0)
			break;
		if (fq_probe_decode(buf, (size_t)len, &pr) < 0 || rx.from.kind == FQ_PEER_NONE) {
			p->bad_packets++;
			fq_log_rl(FQ_LOG_WARN, "%s: malformed probe (%ld bytes) from %s dropped", n->name,
				  len, fq_peer_addr_format(&rx.from, from_s, sizeof(from_s)));
			continue;
		}
		if (pr.type == FQ_PROBE_REQ && !path_of(p, n, &rx.from)) {
			/* only peers we probe ourselves are answered: the mesh is
			 * symmetric, and a stranger gets no reflector */
			p->unknown_sender++;
			fq_log_rl(FQ_LOG_WARN, "%s: probe from unknown host %s dropped", n->name,
				  fq_peer_addr_format(&rx.from, from_s, sizeof(from_s)));
		} else if (pr.type == FQ_PROBE_REQ)
			handle_request(p, n, &pr, &rx.from, rx.rx_ns);
		else
			handle_answer(p, n, &pr, &rx.from, rx.rx_ns);
	}
	drain_tx_stamps(p, n);
}

int fq_prober_start(struct fq_prober *p)
{
	struct timeval check = {0, CHECK_NS / 1000};

	for (unsigned i = 0; i < p->n_nics; i++)
		if (event_add(p->nics[i].ev, NULL) < 0)
			return -EIO;
	p->probe_ev = event_new(p->base, -1, EV_PERSIST, on_probe_timer, p);
	p->check_ev = event_new(p->base, -1, EV_PERSIST, on_check_timer, p);
	if (!p->probe_ev || !p->check_ev || event_add(p->check_ev, &check) < 0)
		return -ENOMEM;
	retime(p);
	return 0;
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* {min,p50,p90,p99,max} of s, each shifted by `shift`; n = 0 without samples. */
static struct fq_owd_stats percentiles(struct samples *s, int64_t shift)
{
	struct fq_owd_stats o = {0};

	if (!s->n)
		return o;
	qsort(s->v, s->n, sizeof(s->v[0]), cmp64);
	o.n = s->n;
	o.min = s->v[0] + shift;
	o.p50 = s->v[s->n / 2] + shift;
	o.p90 = s->v[(s->n * 9) / 10] + shift;
	o.p99 = s->v[(s->n * 99) / 100] + shift;
	o.max = s->v[s->n - 1] + shift;
	return o;
}

/*
 * The estimate to publish: a fresh fit, unless its hard bound is worse than
 * the held estimate's bound aged to now. A standing queue in one direction
 * (a saturated link for longer than the window) inflates that direction's
 * lower envelope and so the fresh bound; the held estimate, extrapolated
 * with its drift, is then the better one.
 */
static int choose_estimate(const struct fq_prober *p, struct path *t, int64_t now,
			   struct fq_clock_estimate *out, int *held)
{
	struct fq_clock_estimate fresh;
	int have = fq_clock_fit_estimate(t->fit, now, &fresh) == 0;
	int64_t age = now - t->held.at_ns, aged = 0;
	double drift, drift_unc_ppb;

	/* The drift used to extrapolate is itself uncertain: about two bounds
	 * over its baseline (the long one once there is one, else the fit's
	 * window). A held estimate's bound grows at that rate (plus the
	 * oscillator's wander), so a fresh estimate soon wins again unless
	 * a standing queue keeps its bound large. */
	/* The fit's own drift: it comes from up to 2048 clean buckets (a
	 * baseline of minutes), better than two points of our own. */
	drift = t->held.drift_ppb;
	drift_unc_ppb = 2e9 * (double)t->held.bound_ns /
			(double)(t->long_baseline_ns ? t->long_baseline_ns : p->cfg.window_ns);
	if (t->held.at_ns)
		aged = t->held.bound_ns + (int64_t)((HOLD_AGING_PPB + drift_unc_ppb) * (double)age / 1e9);
	*held = 0;
	if (have && (!t->held.at_ns || fresh.bound_ns <= aged)) {
		t->held = fresh;
		if (!t->anchor.at_ns)
			t->anchor = fresh;
		if (fresh.at_ns - t->anchor.at_ns >= ANCHOR_NS) {
			t->long_baseline_ns = fresh.at_ns - t->anchor.at_ns;
			/* slide the baseline: keep it between 1x and 2x ANCHOR_NS */
			if (t->long_baseline_ns >= 2 * ANCHOR_NS)
				t->anchor = fresh;
		}
		*out = fresh;
		return 1;
	}
	if (!t->held.at_ns)
		return 0;
	*out = t->held;
	out->offset_ns = t->held.offset_ns + (int64_t)(drift * (double)age / 1e9);
	out->drift_ppb = drift;
	out->bound_ns = aged;
	out->at_ns = now;
	*held = 1;
	return 1;
}

size_t fq_prober_states(const struct fq_prober *p, struct fq_path_report *out, size_t cap)
{
	size_t n = 0;

	for (unsigned i = 0; i < p->n_paths && n < cap; i++) {
		const struct fq_path *live = &p->paths[i].live;
		struct fq_path_report *r;

		if (!p->paths[i].nic)
			continue;
		r = &out[n++];
		memset(r, 0, sizeof(*r));
		snprintf(r->local_nic, sizeof(r->local_nic), "%s", p->paths[i].nic->name);
		snprintf(r->peer_node, sizeof(r->peer_node), "%s", p->paths[i].peer_node);
		snprintf(r->peer_nic, sizeof(r->peer_nic), "%s", p->paths[i].peer_nic);
		r->up = live->up;
		r->changed_ns = live->changed_ns;
	}
	return n;
}

size_t fq_prober_report(struct fq_prober *p, struct fq_path_report *out, size_t cap)
{
	int64_t now = fq_now_ns();
	size_t n = 0;

	for (unsigned i = 0; i < p->n_paths && n < cap; i++) {
		struct path *t = &p->paths[i];
		struct fq_path_report *r = &out[n++];
		int held, have;

		if (!t->nic) {
			n--;
			continue;
		}
		memset(r, 0, sizeof(*r));
		have = choose_estimate(p, t, now, &r->est, &held);
		snprintf(r->local_nic, sizeof(r->local_nic), "%s", t->nic->name);
		snprintf(r->peer_node, sizeof(r->peer_node), "%s", t->peer_node);
		snprintf(r->peer_nic, sizeof(r->peer_nic), "%s", t->peer_nic);
		fq_peer_addr_format(&t->addr, r->peer_addr, sizeof(r->peer_addr));
		r->peer_ipv4 = t->addr.kind == FQ_PEER_IPV4 ? t->addr.ipv4 : 0;
		r->up = t->live.up;
		r->changed_ns = t->live.changed_ns;
		r->flaps_last_hour = fq_path_flaps_since(&t->live, now, 3600 * FQ_NSEC_PER_SEC);
		r->flaps_total = t->live.flaps;
		r->sent = t->sent;
		r->answered = t->answered;
		r->lost = t->lost;
		r->pure_fwd = t->pure_fwd;
		r->pure_rev = t->pure_rev;
		/* one-way delays: the raw differences corrected by the offset
		 * estimate (fwd = owd + theta, rev = owd - theta) */
		r->fwd = percentiles(&t->fwd, have ? -r->est.offset_ns : 0);
		r->rev = percentiles(&t->rev, have ? r->est.offset_ns : 0);
		r->rtt = percentiles(&t->rtt, 0);
		r->synchronised = have;
		r->held = have && held;
		r->peer_epoch_valid = t->peer_epoch_valid;
		r->peer_epoch_ns = t->peer_epoch_ns;
		r->window_start_ns = t->window_start_ns;
		r->window_end_ns = now;
		t->window_start_ns = now;
		t->sent = t->answered = t->lost = t->pure_fwd = t->pure_rev = 0;
		t->fwd.n = t->rev.n = t->rtt.n = 0;
	}
	return n;
}

struct json_object *fq_prober_counters(const struct fq_prober *p)
{
	struct json_object *o = json_object_new_object(), *nics = NULL;

	json_object_object_add(o, "malformed_packets", json_object_new_uint64(p->bad_packets));
	json_object_object_add(o, "unknown_senders", json_object_new_uint64(p->unknown_sender));
	json_object_object_add(o, "stale_sessions", json_object_new_uint64(p->stale_session));
	json_object_object_add(o, "tx_without_stamp", json_object_new_uint64(p->no_tx_stamp));
	json_object_object_add(o, "tx_key_mismatch", json_object_new_uint64(p->tx_key_mismatch));
	for (unsigned i = 0; i < p->n_nics; i++) {
		const struct fq_probe_transport *tp = p->nics[i].tp;
		struct json_object *t = json_object_new_object();
		char addr[FQ_PEER_ADDR_STRLEN];

		if (!nics) {
			nics = json_object_new_object();
			json_object_object_add(o, "transports", nics);
		}
		json_object_object_add(t, "kind", json_object_new_string(tp->kind));
		json_object_object_add(t, "rx_stamps",
				       json_object_new_string(fq_stamp_kind_name(tp->rx_stamps)));
		json_object_object_add(t, "tx_stamps",
				       json_object_new_string(fq_stamp_kind_name(tp->tx_stamps)));
		if (fq_prober_nic_address(p, p->nics[i].name, addr, sizeof(addr)) == 0)
			json_object_object_add(t, "address", json_object_new_string(addr));
		json_object_object_add(nics, p->nics[i].name, t);
	}
	return o;
}
