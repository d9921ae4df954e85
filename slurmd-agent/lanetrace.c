/* lanetrace: each TCP lane's own route, traced hop by hop (lanetrace.h). */
#include "slurmd-agent/lanetrace.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/rand.h"
#include "slurmd-agent/probe_wire.h"

#define TICK_NS       (100 * 1000000LL)
#define NEVER         INT64_MAX
#define WAIT_ROUTE_NS (1000000000LL) /* a lane whose NIC pair has no whole route yet: looked at again */

struct lane {
	bool used, reported, waiting;
	struct fq_lane_id id;
	uint32_t src, dst; /* network order */
	uint16_t sport, dport;
	int64_t seen_ns, due_ns;
	unsigned tries;             /* traces since the last report */
	struct fq_lane_route route; /* the last reported */
	/* the trace in flight (started_ns 0: none) */
	int64_t started_ns;
	uint32_t seq;
	unsigned n;
	uint32_t ans[FQ_TRACE_MAX_HOPS];
};

struct fq_lanetrace {
	struct fq_lanetrace_ops ops;
	fq_lanetrace_fn fn;
	void *arg;
	struct fq_tracer *tracer; /* NULL: made with ops */
	struct event *tick;
	int fd;
	uint64_t rnd;  /* xorshift state: each trace's seq */
	unsigned next; /* where the next tick's starts are looked for first */
	struct lane l[FQ_LANETRACE_MAX_LANES];
	struct fq_lane_route last[FQ_LANETRACE_LAST]; /* a ring of the last reported */
	unsigned n_last, last_at;
	uint64_t traces, whole, partial, reported, segments, send_errors, answers, unmatched, full;
};

/* "a.b.c.d:port" into *ip (network order) and *port: 0 or -EINVAL. */
static int parse_address(const char *s, uint32_t *ip, uint16_t *port)
{
	char host[INET_ADDRSTRLEN];
	const char *colon = strrchr(s, ':');
	struct in_addr in;
	char *end;
	unsigned long p;

	if (!colon || (size_t)(colon - s) >= sizeof(host) || colon[1] < '0' || colon[1] > '9')
		return -EINVAL;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	errno = 0;
	p = strtoul(colon + 1, &end, 10);
	if (*end || errno || p == 0 || p > 65535 || inet_pton(AF_INET, host, &in) != 1)
		return -EINVAL;
	*ip = in.s_addr;
	*port = (uint16_t)p;
	return 0;
}

static uint32_t next_seq(struct fq_lanetrace *lt)
{
	return (uint32_t)(fq_xorshift64(&lt->rnd) >> 16);
}

static void remember(struct fq_lanetrace *lt, const struct fq_lane_route *r)
{
	lt->last[lt->last_at] = *r;
	lt->last_at = (lt->last_at + 1) % FQ_LANETRACE_LAST;
	if (lt->n_last < FQ_LANETRACE_LAST)
		lt->n_last++;
}

/* The trace in flight is over: its route, reported when done and news. */
static void finish(struct fq_lanetrace *lt, struct lane *l, int64_t now)
{
	struct fq_lane_route r = {0};
	bool whole = true, changed;

	for (unsigned k = 0; k < l->n; k++)
		whole = whole && l->ans[k];
	l->started_ns = 0;
	l->tries++;
	lt->traces++;
	if (whole)
		lt->whole++;
	else {
		/* an answer lost or rate-limited is not a route: only traces
		 * that keep coming back with gaps are */
		lt->partial++;
		if (l->tries < FQ_LANETRACE_TRIES) {
			l->due_ns = now + FQ_LANETRACE_RETRY_NS;
			return;
		}
	}
	r.id = l->id;
	r.n_hops = l->n;
	memcpy(r.hops, l->ans, l->n * sizeof(r.hops[0]));
	r.tries = l->tries;
	r.traced_ns = now;
	l->tries = 0;
	l->due_ns = NEVER;
	changed = !l->reported || l->route.n_hops != r.n_hops ||
		  memcmp(l->route.hops, r.hops, r.n_hops * sizeof(r.hops[0]));
	if (!changed)
		return;
	l->route = r;
	l->reported = true;
	lt->reported++;
	remember(lt, &r);
	lt->fn(lt->arg, &r);
}

/* Start l's trace: whether segments went out (a lane still waiting for
 * its NIC pair's route, or one with no router, sends none). */
static bool start(struct fq_lanetrace *lt, struct lane *l, int64_t now)
{
	int n = lt->ops.routers(lt->ops.arg, l->id.local_nic, l->id.remote_node, l->id.remote_nic);
	struct fq_lane_segment s = {.src = l->src, .dst = l->dst, .sport = l->sport, .dport = l->dport};
	uint8_t pkt[FQ_LANE_SEGMENT_SIZE];

	l->waiting = n < 0;
	if (n < 0) {
		l->due_ns = now + WAIT_ROUTE_NS;
		return false;
	}
	if (n > FQ_TRACE_MAX_HOPS) /* never from the tracer */
		n = FQ_TRACE_MAX_HOPS;
	memset(l->ans, 0, sizeof(l->ans));
	l->n = (unsigned)n;
	l->seq = s.seq = next_seq(lt);
	if (n == 0) { /* no router between: the route is known, nothing sent */
		l->tries = 0;
		finish(lt, l, now);
		return false;
	}
	/* TTL 1 .. n only: the last router is the farthest any segment goes */
	for (s.ttl = 1; s.ttl <= (unsigned)n; s.ttl++) {
		int rc;

		fq_lane_segment_encode(&s, pkt);
		rc = lt->ops.send(lt->ops.arg, pkt, sizeof(pkt), l->src, l->dst);
		if (rc < 0) {
			lt->send_errors++;
			fq_log_rl(FQ_LOG_INFO, "lane trace %s -> %s: %s", l->id.local_address,
				  l->id.remote_address, strerror(-rc));
			l->due_ns = now + FQ_LANETRACE_RETRY_NS;
			return true;
		}
		lt->segments++;
	}
	l->started_ns = now;
	return true;
}

void fq_lanetrace_tick(struct fq_lanetrace *lt, int64_t now)
{
	unsigned started = 0;

	for (unsigned i = 0; i < FQ_LANETRACE_MAX_LANES; i++) {
		struct lane *l = &lt->l[i];

		if (!l->used)
			continue;
		if (now - l->seen_ns > FQ_LANETRACE_FORGET_NS)
			l->used = false; /* a trace in flight goes with it */
		else if (l->started_ns && now - l->started_ns >= FQ_LANETRACE_TIMEOUT_NS)
			finish(lt, l, now);
	}
	/* from a rotating start, so no lane waits behind the others */
	for (unsigned k = 0; k < FQ_LANETRACE_MAX_LANES && started < FQ_LANETRACE_PER_TICK; k++) {
		struct lane *l = &lt->l[(lt->next + k) % FQ_LANETRACE_MAX_LANES];

		if (l->used && !l->started_ns && l->due_ns <= now && start(lt, l, now))
			started++;
	}
	lt->next = (lt->next + 1) % FQ_LANETRACE_MAX_LANES;
}

static bool same_lane(const struct lane *l, const struct fq_lane_id *id, uint32_t src, uint32_t dst,
		      uint16_t sport, uint16_t dport)
{
	return l->used && l->id.job_id == id->job_id && l->id.step_id == id->step_id &&
	       l->id.src_rank == id->src_rank && l->id.dst_rank == id->dst_rank && l->id.lane == id->lane &&
	       l->src == src && l->dst == dst && l->sport == sport && l->dport == dport;
}

int fq_lanetrace_lane(struct fq_lanetrace *lt, const struct fq_lane_id *id, int64_t now)
{
	uint32_t src, dst;
	uint16_t sport, dport;
	struct lane *free_slot = NULL;

	if (!lt)
		return 0;
	if (parse_address(id->local_address, &src, &sport) < 0 ||
	    parse_address(id->remote_address, &dst, &dport) < 0 || !id->local_nic[0] || !id->remote_node[0])
		return -EINVAL;
	for (unsigned i = 0; i < FQ_LANETRACE_MAX_LANES; i++) {
		struct lane *l = &lt->l[i];

		if (same_lane(l, id, src, dst, sport, dport)) {
			l->seen_ns = now;
			return 0;
		}
		if (!l->used && !free_slot)
			free_slot = l;
	}
	if (!free_slot) {
		lt->full++;
		return -ENOSPC;
	}
	memset(free_slot, 0, sizeof(*free_slot));
	free_slot->used = true;
	free_slot->id = *id;
	free_slot->src = src;
	free_slot->dst = dst;
	free_slot->sport = sport;
	free_slot->dport = dport;
	free_slot->seen_ns = now;
	free_slot->due_ns = now;
	return 0;
}

void fq_lanetrace_route_changed(struct fq_lanetrace *lt, const char *local_nic, const char *peer_node,
				const char *peer_nic)
{
	for (unsigned i = 0; lt && i < FQ_LANETRACE_MAX_LANES; i++) {
		struct lane *l = &lt->l[i];

		if (l->used && !l->started_ns && !strcmp(l->id.local_nic, local_nic) &&
		    !strcmp(l->id.remote_node, peer_node) && !strcmp(l->id.remote_nic, peer_nic)) {
			l->tries = 0;
			l->due_ns = 0;
		}
	}
}

void fq_lanetrace_icmp(struct fq_lanetrace *lt, const uint8_t *pkt, size_t len, int64_t now)
{
	struct fq_lane_icmp m;

	if (fq_lane_icmp_parse(pkt, len, &m) == 0)
		for (unsigned i = 0; i < FQ_LANETRACE_MAX_LANES; i++) {
			struct lane *l = &lt->l[i];
			bool whole = true;

			if (!l->used || !l->started_ns || l->seq != m.seq || l->src != m.src ||
			    l->dst != m.dst || l->sport != m.sport || l->dport != m.dport)
				continue;
			if (m.ttl > l->n) /* never sent so far */
				break;
			lt->answers++;
			l->ans[m.ttl - 1] = m.router;
			for (unsigned k = 0; k < l->n; k++)
				whole = whole && l->ans[k];
			if (whole)
				finish(lt, l, now);
			return;
		}
	lt->unmatched++; /* another's, malformed, or late */
}

static void on_icmp(void *arg, const uint8_t *pkt, size_t len, int64_t rx_ns)
{
	fq_lanetrace_icmp(arg, pkt, len, rx_ns);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	fq_lanetrace_tick(arg, fq_now_ns());
}

static int tracer_routers(void *arg, const char *local_nic, const char *peer_node, const char *peer_nic)
{
	struct fq_lanetrace *lt = arg;
	struct fq_route r;

	return fq_tracer_route(lt->tracer, local_nic, peer_node, peer_nic, &r) < 0 ? -ENOENT : (int)r.n_hops;
}

/* One segment on the raw socket, its source address the route lookup's
 * source (IP_PKTINFO), as the lane's own socket's is. */
static int raw_send(void *arg, const uint8_t *pkt, size_t len, uint32_t src, uint32_t dst)
{
	struct fq_lanetrace *lt = arg;
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_addr.s_addr = dst};
	struct in_pktinfo pi = {.ipi_spec_dst.s_addr = src};
	union {
		char buf[CMSG_SPACE(sizeof(struct in_pktinfo))];
		struct cmsghdr align;
	} c;
	struct iovec iov = {.iov_base = (void *)(uintptr_t)pkt, .iov_len = len};
	struct msghdr m = {.msg_name = &to,
			   .msg_namelen = sizeof(to),
			   .msg_iov = &iov,
			   .msg_iovlen = 1,
			   .msg_control = c.buf,
			   .msg_controllen = sizeof(c.buf)};
	struct cmsghdr *cm;

	memset(&c, 0, sizeof(c));
	cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = IPPROTO_IP;
	cm->cmsg_type = IP_PKTINFO;
	cm->cmsg_len = CMSG_LEN(sizeof(pi));
	memcpy(CMSG_DATA(cm), &pi, sizeof(pi));
	return sendmsg(lt->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 ? -errno : 0;
}

struct fq_lanetrace *fq_lanetrace_create_with(const struct fq_lanetrace_ops *ops, fq_lanetrace_fn fn,
					      void *arg)
{
	struct fq_lanetrace *lt;

	if (!ops || !ops->routers || !ops->send || !fn) {
		errno = EINVAL;
		return NULL;
	}
	lt = calloc(1, sizeof(*lt));
	if (!lt) {
		errno = ENOMEM;
		return NULL;
	}
	lt->ops = *ops;
	lt->fn = fn;
	lt->arg = arg;
	lt->fd = -1;
	if (getrandom(&lt->rnd, sizeof(lt->rnd), GRND_NONBLOCK) != sizeof(lt->rnd))
		lt->rnd = (uint64_t)fq_now_ns();
	lt->rnd |= 1; /* xorshift never leaves 0 */
	return lt;
}

struct fq_lanetrace *fq_lanetrace_create(struct event_base *base, struct fq_tracer *t, fq_lanetrace_fn fn,
					 void *arg)
{
	struct timeval tick = {0, TICK_NS / 1000};
	struct fq_lanetrace_ops ops = {.routers = tracer_routers, .send = raw_send};
	struct fq_lanetrace *lt;
	int fd;

	if (!t || !base) {
		errno = EINVAL;
		return NULL;
	}
	/* send-only: an IPPROTO_RAW socket receives nothing */
	fd = socket(AF_INET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_RAW);
	if (fd < 0) {
		int err = errno;

		errno = err == EACCES ? EPERM : err;
		return NULL;
	}
	lt = fq_lanetrace_create_with(&ops, fn, arg);
	if (!lt) {
		close(fd);
		return NULL;
	}
	lt->ops.arg = lt;
	lt->fd = fd;
	lt->tracer = t;
	lt->tick = event_new(base, -1, EV_PERSIST, on_tick, lt);
	if (!lt->tick || event_add(lt->tick, &tick) < 0) {
		fq_lanetrace_destroy(lt);
		errno = ENOMEM;
		return NULL;
	}
	fq_tracer_set_icmp_hook(t, on_icmp, lt);
	return lt;
}

void fq_lanetrace_destroy(struct fq_lanetrace *lt)
{
	if (!lt)
		return;
	if (lt->tracer)
		fq_tracer_set_icmp_hook(lt->tracer, NULL, NULL);
	if (lt->tick)
		event_free(lt->tick);
	if (lt->fd >= 0)
		close(lt->fd);
	free(lt);
}

static struct json_object *route_json(const struct fq_lane_route *r)
{
	struct json_object *o = json_object_new_object(), *hops = json_object_new_array();

	json_object_object_add(o, "job_id", json_object_new_uint64(r->id.job_id));
	json_object_object_add(o, "step_id", json_object_new_uint64(r->id.step_id));
	json_object_object_add(o, "src_rank", json_object_new_uint64(r->id.src_rank));
	json_object_object_add(o, "dst_rank", json_object_new_uint64(r->id.dst_rank));
	json_object_object_add(o, "lane", json_object_new_uint64(r->id.lane));
	json_object_object_add(o, "local_nic", json_object_new_string(r->id.local_nic));
	json_object_object_add(o, "remote_node", json_object_new_string(r->id.remote_node));
	json_object_object_add(o, "remote_nic", json_object_new_string(r->id.remote_nic));
	json_object_object_add(o, "local_address", json_object_new_string(r->id.local_address));
	json_object_object_add(o, "remote_address", json_object_new_string(r->id.remote_address));
	for (unsigned k = 0; k < r->n_hops; k++) {
		char a[INET_ADDRSTRLEN] = "";
		struct in_addr in = {r->hops[k]};

		if (r->hops[k])
			inet_ntop(AF_INET, &in, a, sizeof(a));
		json_object_array_add(hops, json_object_new_string(a));
	}
	json_object_object_add(o, "hops", hops);
	json_object_object_add(o, "tries", json_object_new_uint64(r->tries));
	return o;
}

struct json_object *fq_lanetrace_status(const struct fq_lanetrace *lt)
{
	struct json_object *o = json_object_new_object(), *routes = json_object_new_array();
	uint64_t lanes = 0, waiting = 0;

	for (unsigned i = 0; i < FQ_LANETRACE_MAX_LANES; i++) {
		lanes += lt->l[i].used;
		waiting += lt->l[i].used && lt->l[i].waiting;
	}
	json_object_object_add(o, "lanes", json_object_new_uint64(lanes));
	json_object_object_add(o, "waiting", json_object_new_uint64(waiting));
	json_object_object_add(o, "traces", json_object_new_uint64(lt->traces));
	json_object_object_add(o, "whole", json_object_new_uint64(lt->whole));
	json_object_object_add(o, "partial", json_object_new_uint64(lt->partial));
	json_object_object_add(o, "reported", json_object_new_uint64(lt->reported));
	json_object_object_add(o, "segments", json_object_new_uint64(lt->segments));
	json_object_object_add(o, "send_errors", json_object_new_uint64(lt->send_errors));
	json_object_object_add(o, "answers", json_object_new_uint64(lt->answers));
	json_object_object_add(o, "unmatched", json_object_new_uint64(lt->unmatched));
	json_object_object_add(o, "full", json_object_new_uint64(lt->full));
	/* oldest first */
	for (unsigned k = 0; k < lt->n_last; k++)
		json_object_array_add(
		    routes,
		    route_json(
			&lt->last[(lt->last_at + FQ_LANETRACE_LAST - lt->n_last + k) % FQ_LANETRACE_LAST]));
	json_object_object_add(o, "routes", routes);
	return o;
}
