/*
 * test-agent-ud-device: the UD probe transport on a real RDMA device: a
 * probe sent to the port's own QP comes back through the HCA with its
 * source (QPN, LID/GID), an RX and a TX stamp on the raw clock. Skips when
 * ibv_get_device_list returns none (the usual case on this project's CI).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_VERBS
#include <infiniband/verbs.h>
#endif

#include "common/clock.h"
#include "common/log.h"
#include "slurmd-agent/probe_transport.h"
#include "slurmd-agent/probe_ud.h"
#include "slurmd-agent/probe_wire.h"
#include "tests/unit/tap.h"

#ifndef HAVE_VERBS
int main(void)
{
	skip_all("built without verbs (configure --without-verbs)");
}
#else

/* The first device and its first ACTIVE port (else port 1). */
static int pick(struct fq_ib_port *ib)
{
	int n = 0;
	struct ibv_device **l = ibv_get_device_list(&n);
	struct ibv_context *ctx;
	struct ibv_device_attr da;

	memset(ib, 0, sizeof(*ib));
	if (!l || n == 0) {
		if (l)
			ibv_free_device_list(l);
		return -ENODEV;
	}
	snprintf(ib->dev, sizeof(ib->dev), "%s", ibv_get_device_name(l[0]));
	ib->port = 1;
	ctx = ibv_open_device(l[0]);
	if (ctx && ibv_query_device(ctx, &da) == 0)
		for (unsigned p = 1; p <= da.phys_port_cnt; p++) {
			struct ibv_port_attr pa;
			if (ibv_query_port(ctx, (uint8_t)p, &pa) == 0 && pa.state == IBV_PORT_ACTIVE) {
				ib->port = p;
				break;
			}
		}
	if (ctx)
		ibv_close_device(ctx);
	ibv_free_device_list(l);
	return 0;
}

int main(void)
{
	struct fq_ib_port ib;
	struct fq_probe_transport *t;
	struct fq_peer_addr me;
	struct fq_probe pr = {.type = FQ_PROBE_REQ, .session = 1, .pair = 42}, got;
	uint8_t buf[FQ_PROBE_SIZE], in[FQ_PROBE_SIZE + 1];
	struct fq_probe_rx rx;
	uint32_t key = 0, tkey = ~0u;
	int64_t t0, t1, tx = 0;
	long len = -EAGAIN;
	int got_tx = 0;
	char s[FQ_PEER_ADDR_STRLEN];

	fq_log_init("test-agent-ud-device", FQ_LOG_INFO, FQ_LOG_STDERR);
	if (pick(&ib) < 0)
		skip_all("no RDMA device (ibv_get_device_list returned none)");
	plan(7);
	diag("device %s port %u", ib.dev, ib.port);
	if (!ok(fq_probe_ud_open(ib.dev, &ib, &t) == 0, "UD transport opened on %s port %u", ib.dev,
		ib.port)) {
		skip(6, "no transport");
		return done_testing();
	}
	t->ops->local_addr(t, &me);
	diag("own address %s, %s stamps", fq_peer_addr_format(&me, s, sizeof(s)),
	     fq_stamp_kind_name(t->rx_stamps));
	fq_probe_encode(&pr, buf);
	t0 = fq_now_ns();
	ok(t->ops->send(t, &me, buf, sizeof(buf), &key) == 0, "probe sent to its own QP");
	for (int i = 0; i < 200 && (len < 0 || got_tx != 1); i++) {
		struct pollfd pfd = {.fd = t->ops->fd(t), .events = POLLIN};
		poll(&pfd, 1, 10);
		t->ops->ready(t);
		if (got_tx != 1)
			got_tx = t->ops->tx_stamp(t, &tkey, &tx);
		if (len < 0)
			len = t->ops->recv(t, in, sizeof(in), &rx);
	}
	t1 = fq_now_ns();
	ok(len == FQ_PROBE_SIZE && fq_probe_decode(in, (size_t)len, &got) == 0 && got.pair == 42,
	   "received it back (%ld bytes), GRH room stripped", len);
	ok(rx.from.kind == FQ_PEER_UD && fq_peer_addr_matches(&me, &rx.from), "from its own QPN/LID/GID (%s)",
	   fq_peer_addr_format(&rx.from, s, sizeof(s)));
	ok(got_tx == 1 && tkey == key, "TX completion for key %u", key);
	ok(rx.rx_ns >= t0 - 1000000 && rx.rx_ns <= t1 + 1000000,
	   "RX stamp (%s) on the raw clock: %lld ns after send", fq_stamp_kind_name(rx.stamp),
	   (long long)(rx.rx_ns - t0));
	ok(got_tx == 1 && tx <= rx.rx_ns && rx.rx_ns - tx < 1000000, "TX stamp before RX, loopback %lld ns",
	   (long long)(rx.rx_ns - tx));
	t->ops->destroy(t);
	return done_testing();
}
#endif
