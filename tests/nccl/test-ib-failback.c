/*
 * test-ib-failback: the plugin end to end with FABRICIQ_TRANSPORT=ib on a
 * fake verbs device (fqib_set_io_factory), in control mode, one process,
 * side channels over loopback:
 *  - one-way delay per chunk comes from the NIC's completion stamp when
 *    the device gives one (recv.c asks the lane's rx_stamp), else from
 *    the host's own stamp;
 *  - a lane's QP fails (IBV_WC_RETRY_EXC_ERR): its chunks are resent on
 *    the other lane, the message arrives intact, and the lane comes back
 *    through the rejoin listener as an IB lane (a new QP, handles
 *    exchanged after the hello) that carries traffic again;
 *  - the agent's path page has the path DOWN: both IB lanes fail over
 *    (path-down), the message waits, and completes intact when it is UP.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/clock_page.h"
#include "common/path_page.h"
#include "nccl-plugin/core/comm.h"
#include "nccl-plugin/core/ctx.h"
#include "nccl-plugin/core/net.h"
#include "nccl-plugin/core/progress.h"
#include "nccl-plugin/core/wire.h"
#include "nccl-plugin/hello.h"
#include "nccl-plugin/ib_sysfs.h"
#include "nccl-plugin/lanes/ib/ib_dev.h"
#include "nccl-plugin/lanes/ib/ib_lane.h"
#include "nccl-plugin/lanes/lane_drv.h"
#include "nccl-plugin/plog.h"
#include "tests/nccl/nccl-test.h"
#include "tests/unit/tap.h"

#define MAXF         64
#define SLOTS        64
#define NIC_DELAY_NS (1000LL * 1000000) /* the fake NIC's stamps: this much after the post */

static int warns_failback, warns_path_down;

/* 1 if the current init's lanes are IB (the driver fqn_init picked). */
static int transport_is_ib(void)
{
	const struct fqn_ctx *g = fqn_context();

	return g && strcmp(g->drv->name, "ib") == 0;
}

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	(void)flags, (void)file, (void)line;
	if (level != NCCL_LOG_WARN)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (getenv("TEST_VERBOSE"))
		diag("WARN %s", msg);
	warns_failback += strstr(msg, "failback") != NULL;
	warns_path_down += strstr(msg, "path-down") != NULL;
}

struct pend {
	uint64_t wr_id;
	uint8_t *copy;
	uint32_t len, imm;
	int64_t posted;
};

/* One end of a fake RC connection; peers find each other by QPN. */
struct fake {
	struct fake *peer;
	struct {
		uint64_t wr_id;
		void *buf;
		uint32_t len;
	} rq[SLOTS];
	int rq_n;
	struct fqib_wc cq[1024];
	int cq_h, cq_n;
	struct pend pend[SLOTS];
	int pend_n;
	int fail_status; /* the next send completes with it; then the QP is in error */
	int qp_error;
	uint32_t qpn;
	uint64_t sent; /* bytes of successful sends */
	int dead;      /* destroyed (kept for the counters) */
};

static struct fake *fakes[MAXF];
static int nfakes;
static int nic_stamps; /* receive completions carry a completion time */

static void cq_push(struct fake *f, struct fqib_wc wc)
{
	if (f->cq_n < 1024)
		f->cq[(f->cq_h + f->cq_n++) % 1024] = wc;
}

static void deliver(struct fake *f)
{
	struct fake *p = f->peer;

	while (p && f->pend_n && p->rq_n) {
		struct pend s = f->pend[0];

		memmove(f->pend, f->pend + 1, sizeof(f->pend[0]) * (size_t)--f->pend_n);
		memcpy(p->rq[0].buf, s.copy, s.len);
		cq_push(p, (struct fqib_wc){.wr_id = p->rq[0].wr_id,
					    .op = FQIB_OP_RECV,
					    .byte_len = s.len,
					    .imm = s.imm,
					    .ts_ns = nic_stamps ? s.posted + NIC_DELAY_NS : 0});
		cq_push(f, (struct fqib_wc){.wr_id = s.wr_id, .op = FQIB_OP_SEND});
		f->sent += s.len;
		memmove(p->rq, p->rq + 1, sizeof(p->rq[0]) * (size_t)--p->rq_n);
		free(s.copy);
	}
}

static int f_reg(void *io, void *buf, size_t len, uint32_t *rkey)
{
	(void)io, (void)buf, (void)len;
	*rkey = 0x77;
	return 0;
}

static void f_local(void *io, struct fqib_handle *h)
{
	struct fake *f = io;

	memset(h, 0, sizeof(*h));
	h->link = FQIB_LINK_ETH;
	h->gid_type = FQIB_GID_ROCE_V2;
	h->mtu = 5;
	h->port = 1;
	h->qpn = f->qpn;
	h->psn = 0x100 + f->qpn;
}

static int f_connect(void *io, const struct fqib_handle *remote, char *why, size_t len)
{
	struct fake *f = io;

	for (int i = 0; i < nfakes; i++)
		if (!fakes[i]->dead && fakes[i]->qpn == remote->qpn) {
			f->peer = fakes[i];
			deliver(f);
			return 0;
		}
	snprintf(why, len, "fake: no QPN %u", remote->qpn);
	return -EINVAL;
}

static int f_post_recv(void *io, uint64_t wr_id, void *buf, uint32_t len)
{
	struct fake *f = io;

	if (f->qp_error) {
		cq_push(f,
			(struct fqib_wc){.wr_id = wr_id, .status = FQIB_WC_WR_FLUSH_ERR, .op = FQIB_OP_RECV});
		return 0;
	}
	if (f->rq_n == SLOTS)
		return -ENOMEM;
	f->rq[f->rq_n].wr_id = wr_id;
	f->rq[f->rq_n].buf = buf;
	f->rq[f->rq_n++].len = len;
	for (int i = 0; i < nfakes; i++) /* a peer's sends waiting for a receive */
		if (!fakes[i]->dead && fakes[i]->peer == f)
			deliver(fakes[i]);
	return 0;
}

static int f_post_send(void *io, uint64_t wr_id, const void *buf, uint32_t len, uint32_t imm)
{
	struct fake *f = io;

	if (f->fail_status || f->qp_error) {
		cq_push(f, (struct fqib_wc){.wr_id = wr_id,
					    .status = f->qp_error ? FQIB_WC_WR_FLUSH_ERR : f->fail_status,
					    .op = FQIB_OP_SEND});
		for (int i = 0; !f->qp_error && i < f->rq_n; i++)
			cq_push(f, (struct fqib_wc){.wr_id = f->rq[i].wr_id,
						    .status = FQIB_WC_WR_FLUSH_ERR,
						    .op = FQIB_OP_RECV});
		f->rq_n = 0;
		f->qp_error = 1;
		f->fail_status = 0;
		return 0;
	}
	if (f->pend_n == SLOTS)
		return -ENOMEM;
	f->pend[f->pend_n].copy = malloc(len ? len : 1);
	memcpy(f->pend[f->pend_n].copy, buf, len);
	f->pend[f->pend_n].wr_id = wr_id;
	f->pend[f->pend_n].len = len;
	f->pend[f->pend_n].posted = fq_now_ns();
	f->pend[f->pend_n++].imm = imm;
	deliver(f);
	return 0;
}

static int f_poll(void *io, struct fqib_wc *wc, int max)
{
	struct fake *f = io;
	int n = 0;

	while (n < max && f->cq_n) {
		wc[n++] = f->cq[f->cq_h];
		f->cq_h = (f->cq_h + 1) % 1024;
		f->cq_n--;
	}
	return n;
}

static void f_destroy(void *io)
{
	struct fake *f = io;

	for (int i = 0; i < nfakes; i++)
		if (fakes[i]->peer == f)
			fakes[i]->peer = NULL;
	for (int i = 0; i < f->pend_n; i++)
		free(f->pend[i].copy);
	f->pend_n = 0;
	f->peer = NULL;
	f->dead = 1;
}

static const struct fqib_io_ops fake_ops = {f_reg,       f_local, f_connect, f_post_recv,
					    f_post_send, f_poll,  f_destroy, NULL};

static int fake_factory(int nic, const struct fqib_io_ops **ops, void **io)
{
	struct fake *f;

	(void)nic;
	if (nfakes == MAXF)
		return -ENOMEM;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->qpn = 0x100 + (uint32_t)nfakes;
	fakes[nfakes++] = f;
	*ops = &fake_ops;
	*io = f;
	return 0;
}

struct xfer {
	struct fqn_req *sq, *rq;
	int sd, rd, src, rrc;
	char *sb, *rb;
	size_t size;
};

static void xfer_start(struct fqn_send *s, struct fqn_recv *r, struct xfer *x, char fill)
{
	void *data = x->rb;
	int tag = 7;

	for (size_t i = 0; i < x->size; i++)
		x->sb[i] = (char)(fill + (char)(i / 65536));
	memset(x->rb, 0, x->size);
	x->sd = x->rd = x->src = x->rrc = 0;
	x->sq = x->rq = NULL;
	fqn_irecv(r, 1, &data, &x->size, &tag, &x->rq);
	fqn_isend(s, x->sb, x->size, tag, &x->sq);
}

static void xfer_spin(struct xfer *x, double secs)
{
	double end = now_s() + secs;

	while ((!x->sd || !x->rd) && !x->src && !x->rrc && now_s() < end) {
		if (!x->sd && x->sq)
			x->src = fqn_test(x->sq, &x->sd, NULL, NULL);
		if (!x->rd && x->rq)
			x->rrc = fqn_test(x->rq, &x->rd, NULL, NULL);
	}
}

static int xfer_ok(const struct xfer *x)
{
	if (!x->sd || !x->rd || x->src || x->rrc) {
		diag("send done %d rc %d, receive done %d rc %d", x->sd, x->src, x->rd, x->rrc);
		for (int i = 0; i < nfakes; i++)
			diag("qp %x: peer %x rq %d pend %d cq %d sent %llu dead %d err %d", fakes[i]->qpn,
			     fakes[i]->peer ? fakes[i]->peer->qpn : 0, fakes[i]->rq_n, fakes[i]->pend_n,
			     fakes[i]->cq_n, (unsigned long long)fakes[i]->sent, fakes[i]->dead,
			     fakes[i]->qp_error);
	}
	return x->sd && x->rd && !x->src && !x->rrc && memcmp(x->sb, x->rb, x->size) == 0;
}

/* Progress both ends (no request) for secs, or until lane i is UP again. */
static void spin_until_up(struct fqn_send *s, struct fqn_recv *r, int i, double secs)
{
	double end = now_s() + secs;
	struct fqn_comm *c = (struct fqn_comm *)s;

	while (now_s() < end && (c->lc[i].fsm.state != FQN_LANE_UP || !c->lanes[i])) {
		fqn_send_progress(s);
		fqn_recv_progress(r, NULL);
	}
}

static struct fq_path_page_writer *page;

static void path_state(uint32_t state)
{
	/* published now: the plugin ignores a stale page */
	loopback_paths_publish(page, state, FQ_PATH_STATE_UP, fq_now_ns());
}

static void test_stamps(struct fqn_send *s, struct fqn_recv *r, struct xfer *x)
{
	struct fqn_comm *rc = (struct fqn_comm *)r;
	int64_t mn = INT64_MAX, mx = INT64_MIN;
	uint64_t n = 0;

	for (int i = 0; i < rc->nlanes; i++)
		fqn_hist_reset(&rc->stats[i].owd);
	nic_stamps = 1;
	xfer_start(s, r, x, 'a');
	xfer_spin(x, 5);
	nic_stamps = 0;
	ok(xfer_ok(x), "1 MiB over two IB lanes, intact");
	for (int i = 0; i < rc->nlanes; i++) {
		const struct fqn_hist *h = &rc->stats[i].owd;

		n += h->count;
		mn = h->count && h->min < mn ? h->min : mn;
		mx = h->count && h->max > mx ? h->max : mx;
	}
	ok(n >= 16 && mn >= NIC_DELAY_NS && mx < NIC_DELAY_NS + 2000000000LL,
	   "one-way delay from the NIC's completion stamps: %llu chunks, %.1f..%.1f ms (the fake "
	   "stamps %lld ms after the post)",
	   (unsigned long long)n, mn / 1e6, mx / 1e6, NIC_DELAY_NS / 1000000);

	for (int i = 0; i < rc->nlanes; i++)
		fqn_hist_reset(&rc->stats[i].owd);
	mn = INT64_MAX;
	mx = INT64_MIN;
	n = 0;
	xfer_start(s, r, x, 'b');
	xfer_spin(x, 5);
	for (int i = 0; i < rc->nlanes; i++) {
		const struct fqn_hist *h = &rc->stats[i].owd;

		n += h->count;
		mn = h->count && h->min < mn ? h->min : mn;
		mx = h->count && h->max > mx ? h->max : mx;
	}
	ok(xfer_ok(x) && n >= 16 && mn >= 0 && mx < NIC_DELAY_NS,
	   "no completion stamps: the host's own stamp (%.3f..%.3f ms)", mn / 1e6, mx / 1e6);
}

static void test_retry_exc(struct fqn_send *s, struct fqn_recv *r, struct xfer *x)
{
	struct fqn_comm *sc = (struct fqn_comm *)s;
	struct fake *old = NULL, *fresh_s = NULL, *fresh_r = NULL;
	int before = nfakes, w = warns_failback;
	uint64_t sent0, recvd0;

	/* a sending QP (receivers send only credits and acks) */
	for (int i = 0; i < nfakes && !old; i++)
		if (!fakes[i]->dead && fakes[i]->sent > 65536 && fakes[i]->peer)
			old = fakes[i];
	if (!ok(old, "found a sending QP"))
		return;
	old->fail_status = FQIB_WC_RETRY_EXC_ERR;
	xfer_start(s, r, x, 'c');
	xfer_spin(x, 5);
	ok(old->qp_error, "the QP went to error (IBV_WC_RETRY_EXC_ERR)");
	ok(xfer_ok(x), "the message completed intact on the surviving lane");
	ok(sc->failovers >= 1, "a failover was counted (%llu)", (unsigned long long)sc->failovers);

	for (int i = 0; i < sc->nlanes; i++)
		spin_until_up(s, r, i, 5);
	ok(sc->lanes[0] && sc->lanes[1] && sc->lc[0].fsm.state == FQN_LANE_UP &&
	       sc->lc[1].fsm.state == FQN_LANE_UP,
	   "both lanes are UP again (failbacks %llu, %d WARNs)", (unsigned long long)sc->failbacks,
	   warns_failback - w);
	ok(nfakes == before + 2, "the rejoin made one new QP on each end (%d)", nfakes - before);
	if (nfakes >= before + 2) {
		fresh_s = fakes[before];
		fresh_r = fakes[before + 1];
	}
	for (int i = 0; i < sc->nlanes; i++)
		ok(sc->lanes[i] && strcmp(sc->lanes[i]->ops->kind, "ib") == 0, "lane %d is kind %s", i,
		   sc->lanes[i] ? sc->lanes[i]->ops->kind : "(none)");
	if (!fresh_s || !fresh_r)
		return;
	ok(fresh_s->peer == fresh_r && fresh_r->peer == fresh_s,
	   "the new QPs are connected to each other (handles exchanged after the hello)");
	sent0 = fresh_s->sent;
	recvd0 = fresh_r->sent;
	for (int k = 0; k < 3; k++) {
		xfer_start(s, r, x, (char)('d' + k));
		xfer_spin(x, 5);
		if (!xfer_ok(x))
			break;
	}
	ok(xfer_ok(x), "three more messages intact");
	ok(fresh_s->sent - sent0 >= 4 * 65536,
	   "the re-created IB lane carries data again (%llu bytes sent on the new QP)",
	   (unsigned long long)(fresh_s->sent - sent0));
	ok(fresh_r->sent > recvd0, "and its receiver returns credits/acks on it");
}

static void test_path_down(struct fqn_send *s, struct fqn_recv *r, struct xfer *x)
{
	struct fqn_comm *sc = (struct fqn_comm *)s;
	int w = warns_path_down, before = nfakes;
	double t0;

	path_state(FQ_PATH_STATE_DOWN);
	usleep(20000); /* the page is read every 5 ms at most */
	xfer_start(s, r, x, 'p');
	xfer_spin(x, 0.5);
	ok(!x->sd && !x->src && !x->rrc, "path DOWN: the send waits, no error (within the grace)");
	ok(warns_path_down - w >= 2 && sc->lc[0].fsm.state != FQN_LANE_UP &&
	       sc->lc[1].fsm.state != FQN_LANE_UP,
	   "both IB lanes failed over, cause path-down (%d WARNs)", warns_path_down - w);
	path_state(FQ_PATH_STATE_UP);
	t0 = now_s();
	xfer_spin(x, 5);
	ok(xfer_ok(x), "path UP: the message completes intact in %.0f ms", (now_s() - t0) * 1e3);
	for (int i = 0; i < sc->nlanes; i++)
		spin_until_up(s, r, i, 5);
	ok(nfakes >= before + 4 && sc->lanes[0] && sc->lanes[1] &&
	       strcmp(sc->lanes[0]->ops->kind, "ib") == 0 && strcmp(sc->lanes[1]->ops->kind, "ib") == 0,
	   "both lanes came back as IB lanes on new QPs (%d new)", nfakes - before);
}

/* A clock page valid for the whole test (global = raw): a delay is measured
 * only between stamps on the global timeline. */
static struct fq_clock_page_writer *clock_page(const char *path)
{
	struct fq_clock_page_writer *w;
	struct fq_clock_model m = {.clock_id = CLOCK_MONOTONIC_RAW, .error_bound_ns = 1000};

	if (fq_clock_page_writer_open(path, &w) < 0)
		return NULL;
	m.ref_local_ns = fq_now_ns();
	m.valid_until_ns = m.ref_local_ns + 3600000000000LL;
	fq_clock_page_publish(w, &m);
	return w;
}

int main(void)
{
	char dir[] = "/tmp/nccl-ib-failback-XXXXXX", paths[256], clock[256], handle[NCCL_NET_HANDLE_MAXSIZE];
	struct fq_clock_page_writer *cw;
	struct fqn_listen *l = NULL;
	struct fqn_send *s = NULL;
	struct fqn_recv *r = NULL;
	struct xfer x = {.size = 1 << 20};
	double end;

	if (!mkdtemp(dir))
		skip_all("no temp dir");
	snprintf(paths, sizeof(paths), "%s/paths", dir);
	if (fq_path_page_writer_open(paths, &page) < 0)
		skip_all("cannot write a path page");
	path_state(FQ_PATH_STATE_UP);
	snprintf(clock, sizeof(clock), "%s/clock", dir);
	if (!(cw = clock_page(clock)))
		skip_all("cannot write a clock page");
	fqn_log_set_logger(logger);
	fqib_set_io_factory(fake_factory);
	setenv("FABRICIQ_TRANSPORT", "ib", 1);
	setenv("FABRICIQ_MODE", "control", 1);
	setenv("FABRICIQ_IFACES", "lo", 1);
	setenv("FABRICIQ_LANES", "2", 1);
	setenv("FABRICIQ_CHUNK_SIZE", "64K", 1);
	setenv("FABRICIQ_PATH_PAGE", paths, 1);
	setenv("FABRICIQ_CLOCK_PAGE", clock, 1);
	setenv("FABRICIQ_TELEMETRY", "0", 1);
	setenv("FABRICIQ_LANE_TIMEOUT_MS", "200", 1);
	setenv("FABRICIQ_FAILOVER_GRACE_MS", "5000", 1);
	if (!ok(fqn_init(logger) == 0 && transport_is_ib(), "plugin init, transport ib (fake device)"))
		return done_testing();
	x.sb = malloc(x.size);
	x.rb = malloc(x.size);

	ok(fqn_listen(0, handle, &l) == 0, "listen");
	end = now_s() + 5;
	while ((!s || !r) && now_s() < end) {
		if (!s && fqn_connect(0, handle, &s) < 0)
			break;
		if (!r && fqn_accept(l, &r) < 0)
			break;
	}
	if (!ok(s && r, "a 2-lane control-mode connection over IB lanes"))
		return done_testing();
	fqn_close_listen(l); /* as NCCL does: re-dials must not need it */
	ok(strcmp(((struct fqn_comm *)s)->lanes[0]->ops->kind, "ib") == 0 && nfakes == 4,
	   "lanes are IB, one QP per lane per end (%d)", nfakes);

	test_stamps(s, r, &x);
	test_retry_exc(s, r, &x);
	test_path_down(s, r, &x);

	fqn_close_send(s);
	fqn_close_recv(r);
	fqn_fini();
	fq_path_page_writer_close(page);
	fq_clock_page_writer_close(cw);
	for (int i = 0; i < nfakes; i++)
		free(fakes[i]);
	free(x.sb);
	free(x.rb);
	snprintf(paths, sizeof(paths), "rm -rf %s", dir);
	if (system(paths) != 0)
		diag("could not remove %s", dir);
	return done_testing();
}
