/*
 * test-agent-ud-mesh: two probers exchange coded probe pairs over an
 * in-memory transport that behaves as UD does (peers addressed by LID and
 * QPN, NIC stamps, one host's clock 1 ms ahead): the prober's pair logic,
 * answers, FOLLOWUPs, clock fit, path reports and liveness work on UD
 * addresses exactly as over UDP, with no RDMA device.
 */
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

#define QLEN     4096
#define WIRE_NS  5000    /* one-way delay of the fake fabric */
#define OFFSET_B 1000000 /* host B's clock is 1 ms ahead */

struct pkt {
	uint8_t data[FQ_PROBE_SIZE + 8];
	size_t len;
	struct fq_peer_addr from;
	int64_t rx_ns;
};

struct fake {
	struct fq_probe_transport base;
	int pipe[2];
	struct fq_peer_addr me;
	int64_t offset; /* this host's clock - the real raw clock */
	bool cut;       /* its link is down: nothing in or out */
	bool deaf;      /* its agent stands still: packets wait unread */
	struct pkt q[QLEN];
	unsigned qh, qt;
	uint32_t txkey[QLEN];
	int64_t txts[QLEN];
	unsigned th, tt;
	uint32_t next_key;
};

#define FABRIC 7
static struct fake *fabric[FABRIC];

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

	if (to->kind != FQ_PEER_UD)
		return -EAFNOSUPPORT;
	for (int i = 0; i < FABRIC; i++)
		if (fabric[i] && fabric[i]->me.lid == to->lid && fabric[i]->me.qpn == to->qpn)
			d = fabric[i];
	if (d && !f->cut && !d->cut && d->qt - d->qh < QLEN) {
		struct pkt *p = &d->q[d->qt++ % QLEN];
		memcpy(p->data, buf, len);
		p->len = len;
		p->from = f->me;
		p->rx_ns = now + WIRE_NS + d->offset;
		wake(d);
	}
	/* the send completes (UD does not know whether anyone received it) */
	f->txkey[f->tt % QLEN] = f->next_key;
	f->txts[f->tt++ % QLEN] = now + f->offset;
	wake(f);
	*key = f->next_key++;
	return 0;
}

static long f_recv(struct fq_probe_transport *t, uint8_t *buf, size_t cap, struct fq_probe_rx *rx)
{
	struct fake *f = (struct fake *)t;
	struct pkt *p;

	if (f->qh == f->qt || f->deaf)
		return -EAGAIN;
	p = &f->q[f->qh++ % QLEN];
	memcpy(buf, p->data, p->len < cap ? p->len : cap);
	rx->from = p->from;
	rx->rx_ns = p->rx_ns;
	rx->stamp = FQ_STAMP_NIC;
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

	for (int i = 0; i < FABRIC; i++)
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
    .tx_stamp = f_tx_stamp,
    .local_addr = f_local_addr,
    .destroy = f_destroy,
};

static struct fake *fake_named(int slot, const char *name, uint16_t lid, uint32_t qpn, int64_t offset)
{
	struct fake *f = calloc(1, sizeof(*f));

	if (!f || pipe2(f->pipe, O_NONBLOCK | O_CLOEXEC) < 0)
		abort();
	f->base =
	    (struct fq_probe_transport){&fake_ops, "fake-ud", FQ_PEER_UD, FQ_STAMP_NIC, FQ_STAMP_NIC, ""};
	snprintf(f->base.nic, sizeof(f->base.nic), "%s", name);
	f->me = (struct fq_peer_addr){.kind = FQ_PEER_UD, .lid = lid, .qpn = qpn};
	f->offset = offset;
	fabric[slot] = f;
	return f;
}

static struct fake *fake_new(int slot, uint16_t lid, uint32_t qpn, int64_t offset)
{
	return fake_named(slot, "mlx5_0", lid, qpn, offset);
}

static int downs, ups;
static int64_t down_ns[8]; /* when each DOWN was detected, in order (the first 8) */

static int64_t stall_start, stall_end; /* the last stall told (local raw) */
static int stalls;

static void on_stall(void *arg, int64_t start_ns, int64_t end_ns)
{
	(void)arg;
	stalls++;
	stall_start = start_ns;
	stall_end = end_ns;
}

static void on_event(void *arg, const char *local_nic, const char *peer_node, const char *peer_nic, int up,
		     int64_t since_ns, int64_t detected_ns)
{
	(void)arg;
	(void)since_ns;
	diag("event: %s -> %s:%s %s", local_nic, peer_node, peer_nic, up ? "UP" : "DOWN");
	if (up)
		ups++;
	else if (downs++ < 8)
		down_ns[downs - 1] = detected_ns;
}

static void run_for(struct event_base *base, int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
}

int main(void)
{
	struct event_base *base = event_base_new();
	struct fq_prober_config cfg = {.node = "n1",
				       .port = 0,
				       .probe_interval_ns = 5000000,
				       .guard_ns = 4000,
				       .window_ns = 1000000000,
				       .bucket_ns = 100000000,
				       .down_after_ns = 100000000};
	struct fq_prober *a, *b;
	struct fake *fa, *fb, *fc;
	struct fq_path_report ra, rb;
	struct json_object *cnt, *o;
	uint8_t req[FQ_PROBE_SIZE];
	struct fq_probe pr = {.type = FQ_PROBE_REQ, .session = 9, .pair = 1};
	uint32_t key;
	int downs_before;
	int64_t t0, t1;
	size_t n;

	fq_log_init("test-agent-ud-mesh", FQ_LOG_ERROR, FQ_LOG_STDERR);
	plan(25);
	a = fq_prober_create(base, &cfg, on_event, NULL);
	fq_prober_set_stall_hook(a, on_stall, NULL);
	cfg.node = "n2";
	b = fq_prober_create(base, &cfg, NULL, NULL);
	fa = fake_new(0, 0x1, 0x100, 0);
	fb = fake_new(1, 0x2, 0x200, OFFSET_B);
	fc = fake_new(2, 0x3, 0x300, 0); /* a host neither prober knows */
	ok(fq_prober_add_transport(a, &fa->base) == 0 && fq_prober_add_transport(b, &fb->base) == 0,
	   "each prober gets a UD-like transport on mlx5_0");
	is_int(fq_prober_add_peer(a, NULL, "n2", "mlx5_0", "198.19.0.5"), -EAFNOSUPPORT,
	       "an IPv4 peer on a UD NIC: -EAFNOSUPPORT");
	ok(fq_prober_add_peer(a, NULL, "n2", "mlx5_0", "ud:lid=0x2/qpn=0x200") == 0 &&
	       fq_prober_add_peer(b, NULL, "n1", "mlx5_0", "ud:lid=0x1/qpn=0x100") == 0,
	   "peers by LID and QPN");
	ok(fq_prober_start(a) == 0 && fq_prober_start(b) == 0, "started");
	run_for(base, 2500);
	fq_probe_encode(&pr, req);
	fc->base.ops->send(&fc->base, &fa->me, req, sizeof(req), &key); /* stranger's probe */
	run_for(base, 20);

	ok(fq_prober_report(a, &ra, 1) == 1, "one path on n1");
	ok(ra.sent > 200 && ra.answered >= ra.sent - 2 && ra.lost == 0,
	   "2.5 s: %llu pairs sent, %llu answered", (unsigned long long)ra.sent,
	   (unsigned long long)ra.answered);
	ok(ra.pure_fwd > 100 && ra.pure_rev > 100, "both directions of the pairs are pure (%llu, %llu)",
	   (unsigned long long)ra.pure_fwd, (unsigned long long)ra.pure_rev);
	ok(ra.synchronised && llabs(ra.est.offset_ns - OFFSET_B) < 2000,
	   "n1's estimate of n2's clock: +%lld ns (truth +1 ms)", (long long)ra.est.offset_ns);
	ok(ra.fwd.n > 0 && llabs(ra.fwd.p50 - WIRE_NS) < 2000 && llabs(ra.rev.p50 - WIRE_NS) < 2000,
	   "one-way delays after the offset: %lld / %lld ns (wire 5 us)", (long long)ra.fwd.p50,
	   (long long)ra.rev.p50);
	is_str(ra.peer_addr, "ud:lid=0x2/qpn=0x200", "the path report names the UD peer address");
	ok(ra.peer_ipv4 == 0 && ra.up && !strcmp(ra.local_nic, "mlx5_0"), "no IPv4, path up");
	n = fq_prober_report(b, &rb, 1);
	ok(n == 1 && rb.synchronised && llabs(rb.est.offset_ns + OFFSET_B) < 2000,
	   "n2's estimate of n1's clock: %lld ns (truth -1 ms)", (long long)rb.est.offset_ns);
	cnt = fq_prober_counters(a);
	ok(json_object_object_get_ex(cnt, "unknown_senders", &o) && json_object_get_uint64(o) == 1,
	   "a probe from an unknown QPN is dropped and counted");
	ok(json_object_object_get_ex(cnt, "transports", &o) && json_object_object_get_ex(o, "mlx5_0", &o) &&
	       json_object_object_get_ex(o, "rx_stamps", &o) && !strcmp(json_object_get_string(o), "nic"),
	   "status: mlx5_0 uses NIC stamps");
	json_object_put(cnt);

	downs_before = downs;
	fb->cut = true;
	run_for(base, 400);
	ok(downs == downs_before + 1, "n2's link cut: n1 sees its path DOWN (%d event)",
	   downs - downs_before);
	fb->cut = false;
	run_for(base, 200);
	ok(ups >= 1 && fq_prober_states(a, &ra, 1) == 1 && ra.up, "link back: UP again");

	/* the loop stands still 350 ms (the host starved the agent): nothing
	 * was probed, answers could not be read, so no path is judged on it */
	run_for(base, 300);
	downs_before = downs;
	t0 = fq_now_ns();
	usleep(350000);
	t1 = fq_now_ns();
	run_for(base, 300);
	ok(downs == downs_before, "a 350 ms stall of the agent's loop: no path DOWN (%d events)",
	   downs - downs_before);
	cnt = fq_prober_counters(a);
	ok(json_object_object_get_ex(cnt, "loop_stalls", &o) && json_object_get_uint64(o) == 1,
	   "... counted as one loop stall (status: loop_stalls)");
	json_object_put(cnt);
	ok(stalls == 1 && stall_start <= t0 && stall_start > t0 - 50000000 && stall_end >= t1 &&
	       stall_end < t1 + 50000000,
	   "... and told to the stall hook once, from its start to its end (%d: %lld ms)", stalls,
	   (long long)((stall_end - stall_start) / 1000000));

	/* the peer's agent stands still 150 ms (its host starved it): the
	 * probes wait unread there, then are answered at once. Every path
	 * to n2 is silent, so n1 waits down_after twice before DOWN */
	run_for(base, 300);
	downs_before = downs;
	fb->deaf = true;
	run_for(base, 150);
	fb->deaf = false;
	wake(fb);
	run_for(base, 300);
	ok(downs == downs_before, "n2's agent deaf for 150 ms (down_after 100 ms): no path DOWN (%d events)",
	   downs - downs_before);
	fb->deaf = true;
	run_for(base, 400);
	fb->deaf = false;
	wake(fb);
	run_for(base, 300);
	ok(downs == downs_before + 1, "... deaf for 400 ms: DOWN, once (%d event)", downs - downs_before);

	fq_prober_destroy(a);
	fq_prober_destroy(b);
	f_destroy(&fc->base);

	/* two paths to one node (two NICs each side): a stalled peer silences
	 * both from the same moment; a cable cut leaves the other answering */
	cfg.node = "n1";
	a = fq_prober_create(base, &cfg, on_event, NULL);
	cfg.node = "n2";
	b = fq_prober_create(base, &cfg, NULL, NULL);
	fa = fake_named(0, "mlx5_0", 0x1, 0x100, 0);
	fb = fake_named(1, "mlx5_0", 0x2, 0x200, OFFSET_B);
	struct fake *fa1 = fake_named(3, "mlx5_1", 0x11, 0x110, 0);
	struct fake *fb1 = fake_named(4, "mlx5_1", 0x12, 0x210, OFFSET_B);
	ok(fq_prober_add_transport(a, &fa->base) == 0 && fq_prober_add_transport(a, &fa1->base) == 0 &&
	       fq_prober_add_transport(b, &fb->base) == 0 && fq_prober_add_transport(b, &fb1->base) == 0 &&
	       fq_prober_add_peer(a, NULL, "n2", "mlx5_0", "ud:lid=0x2/qpn=0x200") == 0 &&
	       fq_prober_add_peer(a, NULL, "n2", "mlx5_1", "ud:lid=0x12/qpn=0x210") == 0 &&
	       fq_prober_add_peer(b, NULL, "n1", "mlx5_0", "ud:lid=0x1/qpn=0x100") == 0 &&
	       fq_prober_add_peer(b, NULL, "n1", "mlx5_1", "ud:lid=0x11/qpn=0x110") == 0 &&
	       fq_prober_start(a) == 0 && fq_prober_start(b) == 0,
	   "two NICs a side, n1 probes n2 on both");
	run_for(base, 1000);
	downs = 0;
	fb->deaf = fb1->deaf = true; /* n2's agent stands still */
	run_for(base, 150);
	fb->deaf = fb1->deaf = false;
	wake(fb);
	wake(fb1);
	run_for(base, 300);
	ok(downs == 0, "n2's agent deaf for 150 ms on both NICs: no path DOWN (%d events)", downs);
	fb1->cut = true; /* mlx5_1's cable; mlx5_0 still answers */
	int64_t cut = fq_now_ns();
	run_for(base, 400);
	fb1->cut = false;
	ok(downs == 1 && down_ns[0] - cut < 150 * 1000000ll,
	   "n2's mlx5_1 cut, mlx5_0 answering: its path DOWN in %lld ms (down_after 100 ms)",
	   downs ? (long long)(down_ns[0] - cut) / 1000000 : -1ll);
	run_for(base, 300);
	downs = 0;
	fb->deaf = fb1->deaf = true;
	run_for(base, 400);
	fb->deaf = fb1->deaf = false;
	wake(fb);
	wake(fb1);
	run_for(base, 300);
	ok(downs == 2 && llabs(down_ns[1] - down_ns[0]) < 50 * 1000000ll,
	   "deaf for 400 ms: both paths DOWN, %lld ms apart (the path page's settle time is 100 ms)",
	   downs == 2 ? (long long)llabs(down_ns[1] - down_ns[0]) / 1000000 : -1ll);
	fq_prober_destroy(a);
	fq_prober_destroy(b);
	event_base_free(base);
	return done_testing();
}
