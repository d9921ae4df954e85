#include "slurmd-agent/prober.h"

#include <errno.h>
#include <inttypes.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/rand.h"
#include "slurmd-agent/path.h"
#include "slurmd-agent/probe_open.h"
#include "slurmd-agent/probe_transport.h"
#include "slurmd-agent/probe_wire.h"

#include "slurmd-agent/prober_int.h"

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
	p->rnd = ((uint64_t)p->session << 32 | (uint64_t)getpid()) | 1; /* xorshift never leaves 0 */
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
	for (unsigned i = 0; i < p->n_nics; i++)
		for (unsigned k = p->nics[i].n_flows; k-- > 0;) {
			struct nic *s = p->nics[i].flow_sock[k];

			if (s->ev)
				event_free(s->ev);
			s->tp->ops->destroy(s->tp);
			if (k)
				free(s);
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
	n->p = p;
	n->base = n;
	n->tp = tp;
	n->ev = event_new(p->base, tp->ops->fd(tp), EV_READ | EV_PERSIST, on_readable, n);
	if (!n->ev) {
		tp->ops->destroy(tp);
		return -ENOMEM;
	}
	n->flow_sock[0] = n;
	n->n_flows = 1;
	p->n_nics++;
	return 0;
}

static bool nic_probed(const struct fq_prober *p, const struct nic *n)
{
	for (unsigned i = 0; i < p->n_paths; i++)
		if (p->paths[i].nic == n)
			return true;
	return false;
}

int fq_prober_add_flow_transport(struct fq_prober *p, struct fq_probe_transport *tp)
{
	struct nic *n = nic_named(p, tp->nic), *s;

	/* a path's flows are fixed while it is probed */
	if (!n || n->n_flows == MAX_FLOWS || nic_probed(p, n)) {
		tp->ops->destroy(tp);
		return !n ? -ENODEV : -EINVAL;
	}
	if (!(s = calloc(1, sizeof(*s)))) {
		tp->ops->destroy(tp);
		return -ENOMEM;
	}
	snprintf(s->name, sizeof(s->name), "%s", tp->nic);
	s->p = p;
	s->base = n;
	s->flow = n->n_flows;
	s->tp = tp;
	s->ev = event_new(p->base, tp->ops->fd(tp), EV_READ | EV_PERSIST, on_readable, s);
	if (!s->ev) {
		tp->ops->destroy(tp);
		free(s);
		return -ENOMEM;
	}
	n->flow_sock[n->n_flows++] = s;
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
	if (tp->peer_kind != FQ_PEER_IPV4 || p->cfg.flows <= 1)
		return fq_prober_add_transport(p, tp); /* UD: one flow (no ECMP hash of ports) */
	if ((rc = fq_prober_add_transport(p, tp)) < 0)
		return rc;
	for (unsigned k = 1; k < p->cfg.flows && k < MAX_FLOWS; k++) {
		if (p->cfg.port + k > 65535) {
			fq_warn("%s: probe flow %u: port %u is past 65535: %u flows", ifname, k,
				p->cfg.port + k, k);
			break;
		}
		rc = fq_probe_transport_open(p->cfg.sysfs, ifname, (uint16_t)(p->cfg.port + k), &tp);
		if (rc == 0)
			rc = fq_prober_add_flow_transport(p, tp);
		if (rc < 0) {
			/* the NIC is probed over the flows it has */
			fq_warn("%s: probe flow %u (UDP port %u): %s: probing over %u flows", ifname, k,
				p->cfg.port + k, strerror(-rc), k);
			break;
		}
	}
	return 0;
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

/* Arm the next probe tick, uniform in [tick/2, 3 tick/2): one pair per path
 * per probe_interval on average. Strictly periodic ticks locked into one
 * phase with the peers' on the emulated cluster, whose hosts share a clock:
 * a pair whose two probes were always split by the peer's own traffic
 * never passed the purity guard, and that path had no one-way delays for
 * minutes. Random ticks leave no phase to lock into (real hosts' clocks
 * drift apart, but a host's other periodic work does not). */
static void arm_tick(struct fq_prober *p)
{
	int64_t per;
	struct timeval tick;

	per = p->tick_ns / 2 + (int64_t)(fq_xorshift64(&p->rnd) % (uint64_t)p->tick_ns);
	tick.tv_sec = per / 1000000000;
	tick.tv_usec = (per % 1000000000) / 1000;
	if (p->probe_ev)
		event_add(p->probe_ev, &tick);
}

/* Recompute the probe tick's mean: probe_interval spread over the live paths. */
static void retime(struct fq_prober *p)
{
	unsigned live = 0;

	for (unsigned i = 0; i < p->n_paths; i++)
		live += p->paths[i].nic != NULL;
	p->tick_ns = live ? p->cfg.probe_interval_ns / live : p->cfg.probe_interval_ns;
	if (p->tick_ns < 2000)
		p->tick_ns = 2000;
	arm_tick(p);
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
	t->flows[0].established = true; /* the one every agent answers: counted from the start */
	t->nic = n;                     /* last: the slot is live from here */
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

/* The path of a packet from `from` on socket n (any flow of its NIC). */
static struct path *path_of(struct fq_prober *p, struct nic *n, const struct fq_peer_addr *from)
{
	for (unsigned i = 0; i < p->n_paths; i++) {
		struct path *t = &p->paths[i];
		if (t->nic && t->nic == n->base && fq_peer_addr_matches(&t->addr, from))
			return t;
	}
	return NULL;
}

static void push(struct samples *s, int64_t v)
{
	if (s->n < WINDOW_SAMPLES)
		s->v[s->n++] = v;
}

static void fpush(struct fsamples *s, int64_t v)
{
	if (s->n < FLOW_SAMPLES)
		s->v[s->n++] = v;
}

/* Pair q went unanswered: lost, if its flow counted when it was sent. */
static void pair_lost(struct path *t, struct pending *q)
{
	if (q->counted) {
		t->lost++;
		t->flows[q->flow].lost++;
	}
	q->used = 0;
}

/* The flow of the next pair: round-robin, a flow not established only one
 * turn in FLOW_TRY_EVERY (flow 0 takes its other turns). */
static unsigned next_flow(struct path *t)
{
	unsigned nf = t->nic->n_flows, k = t->next_flow++ % nf;
	struct flow *f = &t->flows[k];

	if (k == 0 || f->established || f->tries++ % FLOW_TRY_EVERY == 0)
		return k;
	return 0;
}

/* A flow's destination: the peer's port + flow (UDP). */
static struct fq_peer_addr flow_addr(const struct path *t, unsigned flow)
{
	struct fq_peer_addr a = t->addr;

	if (a.kind == FQ_PEER_IPV4)
		a.port = (uint16_t)(a.port + flow);
	return a;
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
	fpush(&t->flows[q->flow].fwd, q->r[0] - q->s[0]);
	fpush(&t->flows[q->flow].rev, q->a[0] - q->b[0]);
	q->used = 0;
}

static void send_pair(struct fq_prober *p, struct path *t)
{
	struct pending *q = &t->pend[p->next_pair % PENDING];
	struct fq_probe pr = {.type = FQ_PROBE_REQ, .session = p->session, .pair = p->next_pair};
	unsigned idx = (unsigned)(t - p->paths), flow = next_flow(t);
	struct fq_peer_addr to = flow_addr(t, flow);
	int64_t now = fq_now_ns();

	if (q->used) /* unanswered for PENDING rounds: lost */
		pair_lost(t, q);
	memset(q, 0, sizeof(*q));
	q->pair = p->next_pair++;
	q->sent_ns = now;
	q->used = 1;
	q->flow = (uint8_t)flow;
	q->counted = t->flows[flow].established;
	for (uint8_t i = 0; i < 2; i++) {
		pr.index = i;
		if (send_probe(p, t->nic->flow_sock[flow], &to, &pr, TX_REQ, idx) < 0) {
			/* ENETUNREACH etc. while the link is down: the silence is the signal */
			fq_debug("probe to %s:%s: %s", t->peer_node, t->peer_nic, strerror(errno));
			break;
		}
	}
	if (q->counted) {
		t->sent++;
		t->flows[flow].sent++;
	}
	fq_path_on_probe(&t->live, now);
}

static void on_probe_timer(evutil_socket_t fd, short what, void *arg)
{
	struct fq_prober *p = arg;

	(void)fd;
	(void)what;
	arm_tick(p);
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

/* The silence that makes path t DOWN. A stalled peer agent (a host whose
 * CPUs a job takes can starve it for a few hundred ms, after which it
 * answers everything at once; its own stall guard cannot help: the probes
 * it misses are ours) silences every path to its node from the same
 * moment, within a probe round; a link fault leaves the node's other
 * paths answering. So t gets down_after as before when another path to
 * the same node answered well after t fell silent (half down_after
 * later: the peer was alive meanwhile), and twice that otherwise: its
 * sibling paths then go DOWN together with it, within the path page's
 * settle time, which the ranks read as a gone agent rather than a gone
 * link. A whole host gone is seen down_after later. */
static int64_t down_after_of(const struct fq_prober *p, const struct path *t, int64_t now)
{
	int64_t since = t->live.ever_answered ? t->live.last_answer_ns : t->live.first_unanswered_ns;

	if (now - since < p->cfg.down_after_ns)
		return p->cfg.down_after_ns; /* not silent long enough anyway: no need to look */
	for (unsigned i = 0; i < p->n_paths; i++) {
		const struct path *o = &p->paths[i];

		if (o != t && o->nic && o->live.up && o->live.ever_answered &&
		    o->live.last_answer_ns > since + p->cfg.down_after_ns / 2 &&
		    strcmp(o->peer_node, t->peer_node) == 0)
			return p->cfg.down_after_ns;
	}
	return 2 * p->cfg.down_after_ns;
}

static void on_check_timer(evutil_socket_t fd, short what, void *arg)
{
	struct fq_prober *p = arg;
	int64_t now = fq_now_ns(), since;

	(void)fd;
	(void)what;
	/* a tick a quarter of the detection time late (ticks are 5 ms apart) */
	if (p->last_check_ns && now - p->last_check_ns > CHECK_NS + p->cfg.down_after_ns / 4) {
		/* the loop stood still: answers may wait unread and no probe
		 * went out, so judge no path until the probes had time again */
		p->loop_stalls++;
		p->hold_ns = now + p->cfg.down_after_ns / 2;
		fq_log_rl(FQ_LOG_WARN,
			  "prober: the agent's loop stood still for %" PRId64
			  " ms; no path judged for the next %" PRId64 " ms",
			  (now - p->last_check_ns) / 1000000, p->cfg.down_after_ns / 2 / 1000000);
		if (p->on_stall) /* its peers judged our silence meanwhile */
			p->on_stall(p->stall_arg, p->last_check_ns, now);
	}
	p->last_check_ns = now;
	for (unsigned i = 0; i < p->n_paths; i++) {
		struct path *t = &p->paths[i];
		if (!t->nic)
			continue;
		if (now >= p->hold_ns && t->live.up &&
		    fq_path_check(&t->live, now, down_after_of(p, t, now), &since) == FQ_PATH_WENT_DOWN &&
		    p->on_event)
			p->on_event(p->arg, t->nic->name, t->peer_node, t->peer_nic, 0, since, now);
		if (!t->live.up && now - t->live.changed_ns > FLOW_RESET_NS)
			for (unsigned k = 1; k < t->nic->n_flows; k++)
				t->flows[k].established = false;
		for (unsigned k = 0; k < PENDING; k++) {
			struct pending *q = &t->pend[k];
			if (q->used && now - q->sent_ns > LOST_AFTER_NS)
				pair_lost(t, q);
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
	if (!q->used || q->pair != pr->pair || q->flow != n->flow)
		return; /* late: already counted lost (or not on the flow it went on) */
	if (pr->type == FQ_PROBE_RESP) {
		struct flow *f = &t->flows[q->flow];

		q->r[0] = pr->t0;
		q->r[1] = pr->t1;
		q->a[pr->index] = rx;
		q->have |= pr->index ? HAVE_A1 : HAVE_A0;
		if (fq_path_on_answer(&t->live, rx) == FQ_PATH_WENT_UP && p->on_event)
			p->on_event(p->arg, n->name, t->peer_node, t->peer_nic, 1, rx, fq_now_ns());
		if (!f->established)
			fq_debug("%s -> %s:%s: flow %u established", n->name, t->peer_node, t->peer_nic,
				 q->flow);
		f->established = true;
		if (pr->index == 0 && q->counted) {
			t->answered++;
			f->answered++;
		}
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

void fq_prober_set_stall_hook(struct fq_prober *p, fq_prober_stall_fn fn, void *arg)
{
	p->on_stall = fn;
	p->stall_arg = arg;
}

/* ---- path traces ---------------------------------------------------------- */

void fq_prober_set_trace_hook(struct fq_prober *p, fq_prober_trace_fn fn, void *arg)
{
	p->on_trace = fn;
	p->trace_arg = arg;
}

int fq_prober_send_trace(struct fq_prober *p, const char *local_nic, const char *peer_node,
			 const char *peer_nic, unsigned flow, uint64_t id, unsigned ttl)
{
	struct fq_probe pr = {.type = FQ_PROBE_TRACE, .session = p->session, .pair = id};
	uint8_t buf[FQ_PROBE_SIZE];
	uint32_t key;

	if (ttl < 1 || ttl > FQ_PROBE_TRACE_TTL_MAX)
		return -EINVAL;
	for (unsigned i = 0; i < p->n_paths; i++) {
		struct path *t = &p->paths[i];

		if (!t->nic || strcmp(t->nic->name, local_nic) || strcmp(t->peer_node, peer_node) ||
		    strcmp(t->peer_nic, peer_nic))
			continue;
		struct nic *s;
		struct fq_peer_addr to;

		if (!t->nic->tp->ops->send_ttl)
			return -EOPNOTSUPP;
		if (flow >= t->nic->n_flows)
			return -ENOENT;
		s = t->nic->flow_sock[flow];
		to = flow_addr(t, flow);
		pr.index = (uint8_t)ttl;
		pr.t0 = fq_now_ns();
		fq_probe_encode(&pr, buf);
		/* its TX stamp comes back keyed to no role: ignored */
		return s->tp->ops->send_ttl(s->tp, &to, buf, sizeof(buf), ttl, &key);
	}
	return -ENOENT;
}

/* A TRACE from a known peer is echoed; an echo of ours goes to the hook. */
static void handle_trace(struct fq_prober *p, struct nic *n, const struct fq_probe *pr,
			 const struct fq_peer_addr *from, int64_t rx)
{
	struct path *t = path_of(p, n, from);

	if (pr->type == FQ_PROBE_TRACE) {
		struct fq_probe echo = *pr;

		echo.type = FQ_PROBE_TRACE_ECHO;
		send_probe(p, n, from, &echo, TX_NONE, 0);
	} else if (t && pr->session == p->session && p->on_trace)
		p->on_trace(p->trace_arg, n->name, t->peer_node, t->peer_nic, n->flow, pr->pair, pr->index,
			    rx);
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
	struct nic *n = arg;
	struct fq_prober *p = n->p;

	(void)fd;
	(void)what;
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
		if ((pr.type == FQ_PROBE_REQ || pr.type == FQ_PROBE_TRACE) && !path_of(p, n, &rx.from)) {
			/* only peers we probe ourselves are answered: the mesh is
			 * symmetric, and a stranger gets no reflector */
			p->unknown_sender++;
			fq_log_rl(FQ_LOG_WARN, "%s: probe from unknown host %s dropped", n->name,
				  fq_peer_addr_format(&rx.from, from_s, sizeof(from_s)));
		} else if (pr.type == FQ_PROBE_REQ)
			handle_request(p, n, &pr, &rx.from, rx.rx_ns);
		else if (pr.type == FQ_PROBE_TRACE || pr.type == FQ_PROBE_TRACE_ECHO)
			handle_trace(p, n, &pr, &rx.from, rx.rx_ns);
		else
			handle_answer(p, n, &pr, &rx.from, rx.rx_ns);
	}
	drain_tx_stamps(p, n);
}

int fq_prober_start(struct fq_prober *p)
{
	struct timeval check = {0, CHECK_NS / 1000};

	for (unsigned i = 0; i < p->n_nics; i++)
		for (unsigned k = 0; k < p->nics[i].n_flows; k++)
			if (event_add(p->nics[i].flow_sock[k]->ev, NULL) < 0)
				return -EIO;
	p->probe_ev = evtimer_new(p->base, on_probe_timer, p);
	p->check_ev = event_new(p->base, -1, EV_PERSIST, on_check_timer, p);
	if (!p->probe_ev || !p->check_ev || event_add(p->check_ev, &check) < 0)
		return -ENOMEM;
	retime(p);
	return 0;
}
