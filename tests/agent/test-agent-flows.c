/*
 * test-agent-flows: a path probed over several flows (prober.h,
 * fq_prober_config.flows). Three probers on an in-memory UDP fabric: n1
 * and n2 each with 3 flows (ports 7101..7103, one socket each), n3 with
 * one (an agent before flows). Checked:
 *   - pairs go round-robin over n1 -> n2's flows, each answered from the
 *     port it came to, each flow's figures apart and their sum the path's;
 *   - n1 -> n3: the flows n3 does not have are never established, never
 *     counted as sent or lost, tried only now and then; the path is UP
 *     and loses nothing;
 *   - one flow's route dropping everything (its 5-tuple only): the path
 *     stays UP (no DOWN event: the other flows answer), that flow alone
 *     loses, the path's lost is its lost;
 *   - a trace of flow 1 leaves from n1's port 7102 to n2's 7102 and its
 *     echo comes back to the hook as flow 1;
 *   - every route cut: each path DOWN once; DOWN over 5 s (the peer's agent
 *     away), its flows above 0 are established anew when it answers;
 *   - flows can be added only before a peer is probed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "slurmd-agent/probe_transport.h"
#include "slurmd-agent/probe_wire.h"
#include "slurmd-agent/prober.h"
#include "tests/unit/tap.h"

#define QLEN    2048
#define WIRE_NS 5000
#define PORT    7101
#define MAXSOCK 8

struct pkt {
	uint8_t data[FQ_PROBE_SIZE + 8];
	size_t len;
	struct fq_peer_addr from;
	int64_t rx_ns;
};

/* One UDP socket: an address and port. */
struct fake {
	struct fq_probe_transport base;
	int pipe[2];
	struct fq_peer_addr me;
	struct pkt q[QLEN];
	unsigned qh, qt;
	uint32_t txkey[QLEN];
	int64_t txts[QLEN];
	unsigned th, tt;
	uint32_t next_key;
};

static struct fake *fabric[MAXSOCK];
static uint16_t drop_port; /* packets from or to this port are lost (one flow's route down) */
static bool cut;           /* every packet lost */
static uint16_t last_ttl_sport, last_ttl_dport;

static void wake(struct fake *f)
{
	if (write(f->pipe[1], "x", 1) < 0)
		diag("wake: %s", strerror(errno));
}

static int f_fd(struct fq_probe_transport *t)
{
	return ((struct fake *)t)->pipe[0];
}

static void f_ready(struct fq_probe_transport *t)
{
	char b[256];

	while (read(((struct fake *)t)->pipe[0], b, sizeof(b)) > 0)
		;
}

static int f_send(struct fq_probe_transport *t, const struct fq_peer_addr *to, const uint8_t *buf, size_t len,
		  uint32_t *key)
{
	struct fake *f = (struct fake *)t, *d = NULL;
	int64_t now = fq_now_ns();

	if (to->kind != FQ_PEER_IPV4)
		return -EAFNOSUPPORT;
	for (int i = 0; i < MAXSOCK; i++)
		if (fabric[i] && fabric[i]->me.ipv4 == to->ipv4 && fabric[i]->me.port == to->port)
			d = fabric[i];
	/* no socket there (a peer without that flow): the datagram is lost */
	if (d && !cut && f->me.port != drop_port && to->port != drop_port && d->qt - d->qh < QLEN) {
		struct pkt *p = &d->q[d->qt++ % QLEN];

		memcpy(p->data, buf, len);
		p->len = len;
		p->from = f->me;
		p->rx_ns = now + WIRE_NS;
		wake(d);
	}
	f->txkey[f->tt % QLEN] = f->next_key;
	f->txts[f->tt++ % QLEN] = now;
	wake(f);
	*key = f->next_key++;
	return 0;
}

static int f_send_ttl(struct fq_probe_transport *t, const struct fq_peer_addr *to, const uint8_t *buf,
		      size_t len, unsigned ttl, uint32_t *key)
{
	(void)ttl;
	last_ttl_sport = ((struct fake *)t)->me.port;
	last_ttl_dport = to->port;
	return f_send(t, to, buf, len, key);
}

static long f_recv(struct fq_probe_transport *t, uint8_t *buf, size_t cap, struct fq_probe_rx *rx)
{
	struct fake *f = (struct fake *)t;
	struct pkt *p;

	if (f->qh == f->qt)
		return -EAGAIN;
	p = &f->q[f->qh++ % QLEN];
	memcpy(buf, p->data, p->len < cap ? p->len : cap);
	rx->from = p->from;
	rx->rx_ns = p->rx_ns;
	rx->stamp = FQ_STAMP_KERNEL;
	return (long)p->len;
}

static int f_tx_stamp(struct fq_probe_transport *t, uint32_t *key, int64_t *tx_ns)
{
	struct fake *f = (struct fake *)t;

	if (f->th == f->tt)
		return 0;
	*key = f->txkey[f->th % QLEN];
	*tx_ns = f->txts[f->th++ % QLEN];
	return 1;
}

static int f_local_addr(struct fq_probe_transport *t, struct fq_peer_addr *out)
{
	*out = ((struct fake *)t)->me;
	return 0;
}

static void f_destroy(struct fq_probe_transport *t)
{
	struct fake *f = (struct fake *)t;

	for (int i = 0; i < MAXSOCK; i++)
		if (fabric[i] == f)
			fabric[i] = NULL;
	close(f->pipe[0]);
	close(f->pipe[1]);
	free(f);
}

static const struct fq_probe_transport_ops fake_ops = {
    .fd = f_fd,
    .ready = f_ready,
    .send = f_send,
    .recv = f_recv,
    .send_ttl = f_send_ttl,
    .tx_stamp = f_tx_stamp,
    .local_addr = f_local_addr,
    .destroy = f_destroy,
};

/* A socket of host h (address 198.19.0.h) on port. */
static struct fq_probe_transport *sock(int h, uint16_t port)
{
	struct fake *f = calloc(1, sizeof(*f));
	int slot = 0;

	if (!f || pipe2(f->pipe, O_NONBLOCK | O_CLOEXEC) < 0)
		abort();
	while (slot < MAXSOCK && fabric[slot])
		slot++;
	if (slot == MAXSOCK)
		abort();
	f->base = (struct fq_probe_transport){&fake_ops,       "fake-udp",      FQ_PEER_IPV4,
					      FQ_STAMP_KERNEL, FQ_STAMP_KERNEL, "rail0"};
	f->me = (struct fq_peer_addr){
	    .kind = FQ_PEER_IPV4, .ipv4 = htonl(0xc6130000u | (uint32_t)h), .port = port};
	fabric[slot] = f;
	return &f->base;
}

static int downs;

static void on_event(void *arg, const char *local_nic, const char *peer_node, const char *peer_nic, int up,
		     int64_t since_ns, int64_t detected_ns)
{
	(void)arg;
	(void)since_ns;
	(void)detected_ns;
	diag("event: %s -> %s:%s %s", local_nic, peer_node, peer_nic, up ? "UP" : "DOWN");
	downs += !up;
}

static unsigned echo_flow = 99;
static uint64_t echo_id;

static void on_trace(void *arg, const char *local_nic, const char *peer_node, const char *peer_nic,
		     unsigned flow, uint64_t id, unsigned ttl, int64_t rx_ns)
{
	(void)arg;
	(void)local_nic;
	(void)peer_node;
	(void)peer_nic;
	(void)ttl;
	(void)rx_ns;
	echo_flow = flow;
	echo_id = id;
}

static void run_for(struct event_base *base, int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
}

/* host h's prober with `flows` sockets */
static struct fq_prober *host(struct event_base *base, const char *node, int h, unsigned flows)
{
	struct fq_prober_config cfg = {.node = node,
				       .port = PORT,
				       .probe_interval_ns = 4000000,
				       .guard_ns = 4000,
				       .window_ns = 1000000000,
				       .bucket_ns = 100000000,
				       .down_after_ns = 100000000,
				       .flows = flows};
	struct fq_prober *p = fq_prober_create(base, &cfg, h == 1 ? on_event : NULL, NULL);
	int rc = fq_prober_add_transport(p, sock(h, PORT));

	for (unsigned k = 1; k < flows && rc == 0; k++)
		rc = fq_prober_add_flow_transport(p, sock(h, (uint16_t)(PORT + k)));
	if (rc < 0) {
		printf("Bail out! host %d: %s\n", h, strerror(-rc));
		exit(1);
	}
	return p;
}

/* The report of the path to peer (NULL: none) among r[0..n). */
static const struct fq_path_report *to(const struct fq_path_report *r, size_t n, const char *peer)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(r[i].peer_node, peer))
			return &r[i];
	return NULL;
}

int main(void)
{
	struct event_base *base = event_base_new();
	struct fq_prober *a, *b, *c;
	static struct fq_path_report r[4];
	const struct fq_path_report *ab, *ac;
	uint64_t sum_sent = 0, sum_lost = 0, min_sent = UINT64_MAX, max_sent = 0;
	size_t n;

	fq_log_init("test-agent-flows", FQ_LOG_ERROR, FQ_LOG_STDERR);
	plan(18);
	a = host(base, "n1", 1, 3);
	b = host(base, "n2", 2, 3);
	c = host(base, "n3", 3, 1);
	fq_prober_set_trace_hook(a, on_trace, NULL);
	ok(fq_prober_add_peer(a, NULL, "n2", "rail0", "198.19.0.2") == 0 &&
	       fq_prober_add_peer(a, NULL, "n3", "rail0", "198.19.0.3") == 0 &&
	       fq_prober_add_peer(b, NULL, "n1", "rail0", "198.19.0.1") == 0 &&
	       fq_prober_add_peer(c, NULL, "n1", "rail0", "198.19.0.1") == 0,
	   "n1 probes n2 (3 flows) and n3 (one), they probe n1");
	is_int(fq_prober_add_flow_transport(a, sock(1, PORT + 3)), -EINVAL,
	       "no flow added once a peer is probed");
	ok(fq_prober_start(a) == 0 && fq_prober_start(b) == 0 && fq_prober_start(c) == 0, "started");
	run_for(base, 300);
	fq_prober_report(a, r, 4); /* the start: flows establishing */
	run_for(base, 1500);

	n = fq_prober_report(a, r, 4);
	ab = to(r, n, "n2"), ac = to(r, n, "n3");
	ok(ab && ac && ab->n_flows == 3 && ac->n_flows == 3, "n1's two paths, 3 flows each");
	for (unsigned k = 0; ab && k < ab->n_flows; k++) {
		const struct fq_flow_report *f = &ab->flows[k];

		sum_sent += f->sent, sum_lost += f->lost;
		min_sent = f->sent < min_sent ? f->sent : min_sent;
		max_sent = f->sent > max_sent ? f->sent : max_sent;
	}
	ok(ab && ab->flows[0].established && ab->flows[1].established && ab->flows[2].established &&
	       ab->flows[1].port == PORT + 1 && ab->flows[2].port == PORT + 2,
	   "n1 -> n2: every flow established, on ports 7101..7103");
	ok(ab && sum_sent == ab->sent && max_sent - min_sent <= 1 && ab->lost == 0 && sum_lost == 0,
	   "round-robin: %llu..%llu pairs a flow, their sum the path's %llu, none lost",
	   (unsigned long long)min_sent, (unsigned long long)max_sent,
	   (unsigned long long)(ab ? ab->sent : 0));
	ok(ab && ab->flows[2].fwd.n > 0 && llabs(ab->flows[2].fwd.p50 - WIRE_NS) < 3000,
	   "a flow's own one-way delay: %lld ns (wire 5 us)", (long long)(ab ? ab->flows[2].fwd.p50 : 0));
	ok(ac && ac->flows[0].established && !ac->flows[1].established && !ac->flows[2].established,
	   "n1 -> n3 (no flows there): only flow 0 established");
	ok(ac && ab && ac->up && ac->lost == 0 && ac->flows[1].sent == 0 && ac->flows[1].lost == 0 &&
	       ac->sent * 10 >= ab->sent * 9,
	   "... UP, nothing lost, the others not counted; flow 0 takes their turns (%llu pairs)",
	   (unsigned long long)(ac ? ac->sent : 0));

	drop_port = PORT + 1; /* flow 1's route drops everything */
	run_for(base, 1000);
	n = fq_prober_report(a, r, 4);
	ab = to(r, n, "n2");
	is_int(downs, 0, "flow 1's route down: no DOWN, the other flows answer");
	ok(ab && ab->up && ab->flows[1].lost > 0 && ab->flows[0].lost == 0 && ab->flows[2].lost == 0 &&
	       ab->lost == ab->flows[1].lost,
	   "flow 1 alone loses (%llu), the path's lost is its",
	   (unsigned long long)(ab ? ab->flows[1].lost : 0));
	drop_port = 0;
	run_for(base, 1200);
	fq_prober_report(a, r, 4);

	last_ttl_sport = last_ttl_dport = 0;
	is_int(fq_prober_send_trace(a, "rail0", "n2", "rail0", 1, 77, 4), 0, "trace of flow 1 sent");
	ok(last_ttl_sport == PORT + 1 && last_ttl_dport == PORT + 1, "... from port %u to port %u",
	   last_ttl_sport, last_ttl_dport);
	run_for(base, 20);
	ok(echo_flow == 1 && echo_id == 77, "... its echo comes back as flow 1");
	is_int(fq_prober_send_trace(a, "rail0", "n3", "rail0", 3, 78, 4), -ENOENT, "no flow 3: -ENOENT");

	cut = true;
	run_for(base, 400);
	is_int(downs, 2, "every route cut: each path DOWN once");
	run_for(base, 5300);
	n = fq_prober_states(a, r, 4);
	ab = to(r, n, "n2");
	ok(ab && !ab->up && ab->flows[0].established && !ab->flows[1].established &&
	       !ab->flows[2].established,
	   "DOWN over 5 s (its agent away, maybe back with fewer flows): flows above 0 to establish anew");
	cut = false;
	run_for(base, 1500);
	n = fq_prober_states(a, r, 4);
	ab = to(r, n, "n2");
	ok(ab && ab->up && ab->flows[1].established && ab->flows[2].established,
	   "... answered again: established");

	fq_prober_destroy(a);
	fq_prober_destroy(b);
	fq_prober_destroy(c);
	event_base_free(base);
	return done_testing();
}
