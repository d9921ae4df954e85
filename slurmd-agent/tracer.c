/* tracer: the routes of the probed paths, traced hop by hop (tracer.h). */
#include "slurmd-agent/tracer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/icmp.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "slurmd-agent/probe_wire.h"

#define TICK_NS          (100 * 1000000LL)
#define PARTIAL_ACCEPTED 3 /* traces with hops missing in a row: then the route is what they say */
#define NEVER            INT64_MAX
#define FIRST_TRACE_NS   (2 * FQ_NSEC_PER_SEC)
#define SUSPECT_NS       (5 * FQ_NSEC_PER_SEC) /* a path that lost probes: traced again at most this often */
#define MAX_ENTRIES      (FQ_PROBER_MAX_PATHS * FQ_PROBER_MAX_FLOWS) /* one per path and flow */

struct entry {
	bool used, seen, up, unsupported;
	char local_nic[16], peer_node[64], peer_nic[32];
	unsigned flow;                  /* the path's probe flow it traces (prober.h) */
	uint32_t local_ipv4, peer_ipv4; /* network order: what routers quote */
	struct fq_route route;          /* the last reported */
	bool have_route;
	unsigned partial_streak;
	int64_t due_ns, reported_ns;
	int64_t last_start_ns; /* the last trace's start (0: never) */
	/* the trace in flight (started_ns 0: none) */
	uint64_t id;
	int64_t started_ns;
	uint32_t ans[FQ_TRACE_MAX_HOPS];
	unsigned echo_ttl; /* lowest TTL echoed (0: none yet) */
};

struct fq_tracer {
	struct event_base *base;
	struct fq_prober *prober;
	struct fq_tracer_config cfg;
	fq_tracer_route_fn fn;
	void *arg;
	struct event *tick, *icmp_ev;
	int icmp_fd;
	uint64_t next_id;
	struct entry e[MAX_ENTRIES];
	struct fq_path_report states[FQ_PROBER_MAX_PATHS];
	fq_tracer_icmp_fn icmp_hook; /* time-exceeded that are not TRACE answers */
	void *icmp_hook_arg;
	uint64_t traces, whole, partial, changes, icmp_read, icmp_unmatched, icmp_handed;
};

void fq_tracer_config_defaults(struct fq_tracer_config *c)
{
	*c = (struct fq_tracer_config){
	    .max_ttl = 8,
	    .interval_ns = 60 * FQ_NSEC_PER_SEC,
	    .timeout_ns = FQ_NSEC_PER_SEC,
	    .retry_ns = 10 * FQ_NSEC_PER_SEC,
	    .resend_ns = 3600 * FQ_NSEC_PER_SEC,
	    .per_tick = 2,
	};
}

static bool is_path(const struct entry *e, const char *nic, const char *node, const char *peer_nic)
{
	return e->used && !strcmp(e->local_nic, nic) && !strcmp(e->peer_node, node) &&
	       !strcmp(e->peer_nic, peer_nic);
}

static struct entry *find(struct fq_tracer *t, const char *nic, const char *node, const char *peer_nic,
			  unsigned flow)
{
	for (unsigned i = 0; i < MAX_ENTRIES; i++) {
		struct entry *e = &t->e[i];

		if (is_path(e, nic, node, peer_nic) && e->flow == flow)
			return e;
	}
	return NULL;
}

static bool same_route(const struct fq_route *a, const struct fq_route *b)
{
	return a->n_hops == b->n_hops && a->reached == b->reached &&
	       !memcmp(a->hops, b->hops, a->n_hops * sizeof(a->hops[0]));
}

/* The trace in flight is over: its route, reported if it is news. */
static void finish(struct fq_tracer *t, struct entry *e, int64_t now)
{
	struct fq_route r = {0};
	bool whole, changed;

	snprintf(r.local_nic, sizeof(r.local_nic), "%s", e->local_nic);
	snprintf(r.peer_node, sizeof(r.peer_node), "%s", e->peer_node);
	snprintf(r.peer_nic, sizeof(r.peer_nic), "%s", e->peer_nic);
	r.flow = e->flow;
	r.reached = e->echo_ttl != 0;
	r.n_hops = r.reached ? e->echo_ttl - 1 : 0;
	if (!r.reached)
		for (unsigned k = 0; k < t->cfg.max_ttl; k++)
			if (e->ans[k])
				r.n_hops = k + 1;
	memcpy(r.hops, e->ans, r.n_hops * sizeof(r.hops[0]));
	r.traced_ns = now;
	whole = r.reached;
	for (unsigned k = 0; k < r.n_hops; k++)
		whole = whole && r.hops[k];
	e->started_ns = 0;
	t->traces++;
	if (whole) {
		t->whole++;
		e->partial_streak = 0;
		e->due_ns = now + t->cfg.interval_ns;
	} else {
		/* an answer lost or rate-limited is not a route: only traces
		 * that keep coming back with the same gaps are */
		t->partial++;
		e->due_ns = now + t->cfg.retry_ns;
		if (++e->partial_streak < PARTIAL_ACCEPTED)
			return;
	}
	changed = !e->have_route || !same_route(&e->route, &r);
	if (changed && e->have_route) {
		t->changes++;
		/* the fabric changed: the other paths' flows may be re-hashed too */
		for (unsigned i = 0; i < MAX_ENTRIES; i++)
			if (t->e[i].used && &t->e[i] != e && !t->e[i].unsupported && !t->e[i].started_ns &&
			    t->e[i].due_ns > now)
				t->e[i].due_ns = now;
	}
	if (changed || now - e->reported_ns >= t->cfg.resend_ns) {
		e->route = r;
		e->have_route = true;
		e->reported_ns = now;
		t->fn(t->arg, &r, changed);
	}
}

static void start(struct fq_tracer *t, struct entry *e, int64_t now)
{
	int rc = 0;

	e->id = ++t->next_id;
	memset(e->ans, 0, sizeof(e->ans));
	e->echo_ttl = 0;
	for (unsigned ttl = 1; ttl <= t->cfg.max_ttl && rc == 0; ttl++)
		rc = fq_prober_send_trace(t->prober, e->local_nic, e->peer_node, e->peer_nic, e->flow, e->id,
					  ttl);
	if (rc == -EOPNOTSUPP) {
		e->unsupported = true; /* a UD path: no TTL to set */
		e->due_ns = NEVER;
		return;
	}
	if (rc < 0) {
		fq_debug("trace %s -> %s:%s flow %u: %s", e->local_nic, e->peer_node, e->peer_nic, e->flow,
			 strerror(-rc));
		e->due_ns = now + t->cfg.retry_ns;
		return;
	}
	e->started_ns = e->last_start_ns = now;
}

/* The local NIC's IPv4 address (0: a UD NIC, never traced). */
static void local_ipv4(struct fq_tracer *t, struct entry *e)
{
	char a[80];
	struct in_addr in;

	e->unsupported = !e->peer_ipv4;
	if (fq_prober_nic_address(t->prober, e->local_nic, a, sizeof(a)) == 0 &&
	    inet_pton(AF_INET, a, &in) == 1)
		e->local_ipv4 = in.s_addr;
	else
		e->unsupported = true;
	if (e->unsupported)
		e->due_ns = NEVER;
}

/* The entry of one flow of path s, made if it is new (NULL: the table is full). */
static struct entry *entry_of(struct fq_tracer *t, const struct fq_path_report *s, unsigned flow, int64_t now)
{
	struct entry *e = find(t, s->local_nic, s->peer_node, s->peer_nic, flow);

	for (unsigned k = 0; !e && k < MAX_ENTRIES; k++)
		if (!t->e[k].used) {
			e = &t->e[k];
			memset(e, 0, sizeof(*e));
			e->used = true;
			snprintf(e->local_nic, sizeof(e->local_nic), "%s", s->local_nic);
			snprintf(e->peer_node, sizeof(e->peer_node), "%s", s->peer_node);
			snprintf(e->peer_nic, sizeof(e->peer_nic), "%s", s->peer_nic);
			e->flow = flow;
			e->peer_ipv4 = s->peer_ipv4;
			/* first traced a moment after it is probed: the peer
			 * echoes only once it probes us too */
			e->due_ns = now + FIRST_TRACE_NS;
			local_ipv4(t, e);
		}
	return e;
}

/* The prober's paths' flows: new ones are traced soon, gone ones
 * forgotten. A flow is traced once established (answered: the peer has
 * it), flow 0 always. */
static void refresh(struct fq_tracer *t, int64_t now)
{
	size_t n = fq_prober_states(t->prober, t->states, FQ_PROBER_MAX_PATHS);

	for (unsigned i = 0; i < MAX_ENTRIES; i++)
		t->e[i].seen = false;
	for (size_t i = 0; i < n; i++) {
		const struct fq_path_report *s = &t->states[i];

		for (unsigned k = 0; k < (s->n_flows ? s->n_flows : 1); k++) {
			struct entry *e;

			if (k && !s->flows[k].established)
				continue;
			if (!(e = entry_of(t, s, k, now)))
				break;
			e->seen = true;
			e->up = s->up;
		}
	}
	for (unsigned i = 0; i < MAX_ENTRIES; i++)
		if (t->e[i].used && !t->e[i].seen)
			t->e[i].used = false;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct fq_tracer *t = arg;
	int64_t now = fq_now_ns();
	unsigned started = 0;

	(void)fd;
	(void)what;
	refresh(t, now);
	for (unsigned i = 0; i < MAX_ENTRIES; i++) {
		struct entry *e = &t->e[i];

		if (e->used && e->started_ns && now - e->started_ns >= t->cfg.timeout_ns)
			finish(t, e, now);
	}
	/* oldest due first would need a sort; slots are visited from a
	 * rotating start instead, so no path waits behind the others */
	for (unsigned k = 0; k < MAX_ENTRIES && started < t->cfg.per_tick; k++) {
		struct entry *e = &t->e[(t->next_id + k) % MAX_ENTRIES];

		if (e->used && e->up && !e->started_ns && !e->unsupported && e->due_ns <= now) {
			start(t, e, now);
			started++;
		}
	}
}

/* One answer to e's trace in flight: a router's at ttl, or (router 0)
 * the far agent's echo. The trace ends once it is reached and every hop
 * before it answered. */
static void answer(struct fq_tracer *t, struct entry *e, unsigned ttl, uint32_t router, int64_t now)
{
	bool whole = true;

	if (ttl < 1 || ttl > t->cfg.max_ttl)
		return;
	if (!router) {
		if (!e->echo_ttl || ttl < e->echo_ttl)
			e->echo_ttl = ttl;
	} else
		e->ans[ttl - 1] = router;
	if (!e->echo_ttl)
		return;
	for (unsigned k = 0; k + 1 < e->echo_ttl; k++)
		whole = whole && e->ans[k];
	if (whole)
		finish(t, e, now);
}

static void on_echo(void *arg, const char *local_nic, const char *peer_node, const char *peer_nic,
		    unsigned flow, uint64_t id, unsigned ttl, int64_t rx_ns)
{
	struct fq_tracer *t = arg;
	struct entry *e = find(t, local_nic, peer_node, peer_nic, flow);

	if (e && e->started_ns && e->id == id) /* else a late answer to a trace already over */
		answer(t, e, ttl, 0, rx_ns);
}

static void on_icmp(evutil_socket_t fd, short what, void *arg)
{
	struct fq_tracer *t = arg;
	uint8_t pkt[1500];

	(void)what;
	for (int i = 0; i < 256; i++) {
		struct fq_trace_icmp m;
		struct entry *e = NULL;
		ssize_t len = recv(fd, pkt, sizeof(pkt), MSG_DONTWAIT);

		if (len < 0)
			break;
		t->icmp_read++;
		if (fq_trace_icmp_parse(pkt, (size_t)len, &m) < 0) {
			if (t->icmp_hook) {
				t->icmp_handed++;
				t->icmp_hook(t->icmp_hook_arg, pkt, (size_t)len, fq_now_ns());
			} else
				t->icmp_unmatched++;
			continue;
		}
		for (unsigned k = 0; k < MAX_ENTRIES && !e; k++)
			if (t->e[k].used && t->e[k].started_ns && t->e[k].id == m.id &&
			    t->e[k].local_ipv4 == m.src && t->e[k].peer_ipv4 == m.dst)
				e = &t->e[k];
		if (e)
			answer(t, e, m.ttl, m.router, fq_now_ns());
		else
			t->icmp_unmatched++; /* another's, or late */
	}
}

struct fq_tracer *fq_tracer_create(struct event_base *base, struct fq_prober *p,
				   const struct fq_tracer_config *c, fq_tracer_route_fn fn, void *arg)
{
	struct timeval tick = {0, TICK_NS / 1000};
	struct fq_tracer *t;

	if (!c->max_ttl || c->max_ttl > FQ_TRACE_MAX_HOPS || c->max_ttl > FQ_PROBE_TRACE_TTL_MAX ||
	    c->interval_ns <= 0 || c->timeout_ns <= 0 || c->retry_ns <= 0 || !c->per_tick || !fn) {
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	t->icmp_fd = socket(AF_INET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_ICMP);
	if (t->icmp_fd < 0) {
		int err = errno;

		free(t);
		errno = err == EACCES ? EPERM : err;
		return NULL;
	}
	{
		struct icmp_filter f = {.data = ~(1u << ICMP_TIME_EXCEEDED)}; /* bits set: not wanted */

		setsockopt(t->icmp_fd, SOL_RAW, ICMP_FILTER, &f, sizeof(f));
	}
	if (getrandom(&t->next_id, sizeof(t->next_id), 0) != sizeof(t->next_id))
		t->next_id = (uint64_t)fq_now_ns();
	t->base = base;
	t->prober = p;
	t->cfg = *c;
	t->fn = fn;
	t->arg = arg;
	t->tick = event_new(base, -1, EV_PERSIST, on_tick, t);
	t->icmp_ev = event_new(base, t->icmp_fd, EV_READ | EV_PERSIST, on_icmp, t);
	if (!t->tick || !t->icmp_ev || event_add(t->tick, &tick) < 0 || event_add(t->icmp_ev, NULL) < 0) {
		fq_tracer_destroy(t);
		errno = ENOMEM;
		return NULL;
	}
	fq_prober_set_trace_hook(p, on_echo, t);
	return t;
}

void fq_tracer_destroy(struct fq_tracer *t)
{
	if (!t)
		return;
	fq_prober_set_trace_hook(t->prober, NULL, NULL);
	if (t->tick)
		event_free(t->tick);
	if (t->icmp_ev)
		event_free(t->icmp_ev);
	close(t->icmp_fd);
	free(t);
}

void fq_tracer_resend(struct fq_tracer *t)
{
	int64_t now = fq_now_ns();

	for (unsigned i = 0; t && i < MAX_ENTRIES; i++) {
		struct entry *e = &t->e[i];

		if (e->used && e->have_route) {
			e->reported_ns = now;
			t->fn(t->arg, &e->route, false);
		}
	}
}

void fq_tracer_poke(struct fq_tracer *t, const char *local_nic, const char *peer_node, const char *peer_nic)
{
	for (unsigned i = 0; t && i < MAX_ENTRIES; i++) {
		struct entry *e = &t->e[i];

		if (is_path(e, local_nic, peer_node, peer_nic) && !e->unsupported)
			e->due_ns = 0;
	}
}

void fq_tracer_retrace(struct fq_tracer *t)
{
	int64_t now = fq_now_ns();

	for (unsigned i = 0; t && i < MAX_ENTRIES; i++)
		if (t->e[i].used && !t->e[i].unsupported && !t->e[i].started_ns && t->e[i].due_ns > now)
			t->e[i].due_ns = now;
}

void fq_tracer_suspect(struct fq_tracer *t, const char *local_nic, const char *peer_node,
		       const char *peer_nic)
{
	for (unsigned i = 0; t && i < MAX_ENTRIES; i++) {
		struct entry *e = &t->e[i];
		int64_t at;

		if (!is_path(e, local_nic, peer_node, peer_nic) || e->unsupported || e->started_ns)
			continue;
		at = e->last_start_ns ? e->last_start_ns + SUSPECT_NS : 0;
		if (at < e->due_ns)
			e->due_ns = at;
	}
}

int fq_tracer_route(const struct fq_tracer *t, const char *local_nic, const char *peer_node,
		    const char *peer_nic, struct fq_route *out)
{
	for (unsigned i = 0; t && i < MAX_ENTRIES; i++) {
		const struct entry *e = &t->e[i];
		bool whole = e->used && e->have_route && e->route.reached && e->flow == 0;

		if (!whole || strcmp(e->local_nic, local_nic) || strcmp(e->peer_node, peer_node) ||
		    strcmp(e->peer_nic, peer_nic))
			continue;
		for (unsigned k = 0; k < e->route.n_hops; k++)
			whole = whole && e->route.hops[k];
		if (!whole)
			return -ENOENT;
		*out = e->route;
		return 0;
	}
	return -ENOENT;
}

void fq_tracer_set_icmp_hook(struct fq_tracer *t, fq_tracer_icmp_fn fn, void *arg)
{
	if (!t)
		return;
	t->icmp_hook = fn;
	t->icmp_hook_arg = arg;
}

struct json_object *fq_tracer_status(const struct fq_tracer *t)
{
	struct json_object *o = json_object_new_object(), *routes = json_object_new_array();

	json_object_object_add(o, "traces", json_object_new_uint64(t->traces));
	json_object_object_add(o, "whole", json_object_new_uint64(t->whole));
	json_object_object_add(o, "partial", json_object_new_uint64(t->partial));
	json_object_object_add(o, "changes", json_object_new_uint64(t->changes));
	json_object_object_add(o, "icmp_read", json_object_new_uint64(t->icmp_read));
	json_object_object_add(o, "icmp_unmatched", json_object_new_uint64(t->icmp_unmatched));
	json_object_object_add(o, "icmp_handed", json_object_new_uint64(t->icmp_handed));
	for (unsigned i = 0; i < MAX_ENTRIES; i++) {
		const struct entry *e = &t->e[i];
		struct json_object *r, *hops;

		if (!e->used || !e->have_route)
			continue;
		r = json_object_new_object();
		hops = json_object_new_array();
		json_object_object_add(r, "local_nic", json_object_new_string(e->local_nic));
		json_object_object_add(r, "peer_node", json_object_new_string(e->peer_node));
		json_object_object_add(r, "peer_nic", json_object_new_string(e->peer_nic));
		json_object_object_add(r, "flow", json_object_new_uint64(e->flow));
		for (unsigned k = 0; k < e->route.n_hops; k++) {
			char a[INET_ADDRSTRLEN] = "";
			struct in_addr in = {e->route.hops[k]};

			if (e->route.hops[k])
				inet_ntop(AF_INET, &in, a, sizeof(a));
			json_object_array_add(hops, json_object_new_string(a));
		}
		json_object_object_add(r, "hops", hops);
		json_object_object_add(r, "reached", json_object_new_boolean(e->route.reached));
		json_object_array_add(routes, r);
	}
	json_object_object_add(o, "routes", routes);
	return o;
}
