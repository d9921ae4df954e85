/* test-ib-lane: the IB lane's state machine on a fake device: handshake
 * (direct and over a side channel), chunks through the ring with credits,
 * control records the other way, completion stamps, and injected work
 * completions (success, IBV_WC_RETRY_EXC_ERR, IBV_WC_WR_FLUSH_ERR). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "nccl-plugin/chunk.h"
#include "nccl-plugin/ib_sysfs.h"
#include "nccl-plugin/lanes/ib/ib_lane.h"
#include "tests/unit/tap.h"

#define CHUNK 4096

struct pend {
	uint64_t wr_id;
	uint8_t *copy;
	uint32_t len, imm;
};

/* One end of a fake RC connection: a receive queue, a completion queue,
 * and sends waiting for a receive buffer (what RNR retry does). */
struct fake {
	struct fake *peer;
	uint32_t kbps; /* the last rate cap asked (rate) */
	int rates;
	struct {
		uint64_t wr_id;
		void *buf;
		uint32_t len;
	} rq[64];
	int rq_n;
	struct fqib_wc cq[512];
	int cq_h, cq_n;
	struct pend pend[64];
	int pend_n;
	int fail_status; /* next send completes with it, then the QP is in error */
	int qp_error;
	uint32_t qpn;
	int gid_type;
	int64_t ts;
	int connected;
};

static void cq_push(struct fake *f, struct fqib_wc wc)
{
	if (f->cq_n < 512)
		f->cq[(f->cq_h + f->cq_n++) % 512] = wc;
}

/* Deliver waiting sends into f->peer's receive buffers, in order. */
static void deliver(struct fake *f)
{
	struct fake *p = f->peer;

	while (p && f->pend_n && p->rq_n) {
		struct pend s = f->pend[0];

		memmove(f->pend, f->pend + 1, sizeof(f->pend[0]) * (size_t)--f->pend_n);
		if (s.len > p->rq[0].len) { /* local length error on the receiver */
			cq_push(p,
				(struct fqib_wc){.wr_id = p->rq[0].wr_id, .status = 1, .op = FQIB_OP_RECV});
		} else {
			memcpy(p->rq[0].buf, s.copy, s.len);
			cq_push(p, (struct fqib_wc){.wr_id = p->rq[0].wr_id,
						    .op = FQIB_OP_RECV,
						    .byte_len = s.len,
						    .imm = s.imm,
						    .ts_ns = p->ts ? p->ts++ : 0});
			cq_push(f, (struct fqib_wc){.wr_id = s.wr_id, .op = FQIB_OP_SEND});
		}
		memmove(p->rq, p->rq + 1, sizeof(p->rq[0]) * (size_t)--p->rq_n);
		free(s.copy);
	}
}

static int f_reg(void *io, void *buf, size_t len, uint32_t *rkey)
{
	(void)io;
	(void)buf;
	(void)len;
	*rkey = 0x77;
	return 0;
}

static void f_local(void *io, struct fqib_handle *h)
{
	struct fake *f = io;

	memset(h, 0, sizeof(*h));
	h->link = FQIB_LINK_ETH;
	h->gid_type = (uint8_t)f->gid_type;
	h->mtu = 5;
	h->port = 1;
	h->qpn = f->qpn;
	h->psn = 0x100 + f->qpn;
}

static int f_connect(void *io, const struct fqib_handle *remote, char *why, size_t len)
{
	struct fake *f = io;

	if (!f->peer || remote->qpn != f->peer->qpn) {
		snprintf(why, len, "fake: wrong QPN");
		return -EINVAL;
	}
	f->connected = 1;
	return 0;
}

static int f_post_recv(void *io, uint64_t wr_id, void *buf, uint32_t len)
{
	struct fake *f = io;

	if (f->rq_n == 64)
		return -ENOMEM;
	if (f->qp_error) {
		cq_push(f,
			(struct fqib_wc){.wr_id = wr_id, .status = FQIB_WC_WR_FLUSH_ERR, .op = FQIB_OP_RECV});
		return 0;
	}
	f->rq[f->rq_n].wr_id = wr_id;
	f->rq[f->rq_n].buf = buf;
	f->rq[f->rq_n++].len = len;
	if (f->peer)
		deliver(f->peer);
	return 0;
}

static int f_post_send(void *io, uint64_t wr_id, const void *buf, uint32_t len, uint32_t imm)
{
	struct fake *f = io;

	if (f->fail_status || f->qp_error) {
		/* this WR fails; the QP enters error; posted receives flush */
		cq_push(f, (struct fqib_wc){.wr_id = wr_id,
					    .status = f->qp_error ? FQIB_WC_WR_FLUSH_ERR : f->fail_status,
					    .op = FQIB_OP_SEND});
		if (!f->qp_error)
			for (int i = 0; i < f->rq_n; i++)
				cq_push(f, (struct fqib_wc){.wr_id = f->rq[i].wr_id,
							    .status = FQIB_WC_WR_FLUSH_ERR,
							    .op = FQIB_OP_RECV});
		f->rq_n = 0;
		f->qp_error = 1;
		f->fail_status = 0;
		return 0;
	}
	if (f->pend_n == 64)
		return -ENOMEM;
	f->pend[f->pend_n].copy = malloc(len ? len : 1);
	memcpy(f->pend[f->pend_n].copy, buf, len);
	f->pend[f->pend_n].wr_id = wr_id;
	f->pend[f->pend_n].len = len;
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
		f->cq_h = (f->cq_h + 1) % 512;
		f->cq_n--;
	}
	return n;
}

static void f_destroy(void *io)
{
	struct fake *f = io;

	if (f->peer)
		f->peer->peer = NULL;
	for (int i = 0; i < f->pend_n; i++)
		free(f->pend[i].copy);
	free(f);
}

static int f_rate(void *io, uint32_t kbps)
{
	struct fake *f = io;

	f->kbps = kbps;
	f->rates++;
	return 0;
}

static const struct fqib_io_ops fake_ops = {f_reg,       f_local, f_connect, f_post_recv,
					    f_post_send, f_poll,  f_destroy, f_rate};

static void pair(struct fake **a, struct fake **b, int gid_b)
{
	*a = calloc(1, sizeof(**a));
	*b = calloc(1, sizeof(**b));
	(*a)->peer = *b;
	(*b)->peer = *a;
	(*a)->qpn = 0x11;
	(*b)->qpn = 0x22;
	(*a)->gid_type = FQIB_GID_ROCE_V2;
	(*b)->gid_type = gid_b;
}

/* Sender and receiver lanes connected directly (no side channel). */
static int lanes(struct fqn_lane **s, struct fqn_lane **r, struct fake **fs, struct fake **fr, int gid_r)
{
	struct fqib_handle hs, hr;
	int rc;

	pair(fs, fr, gid_r);
	if (fqn_lane_ib_create(&fake_ops, *fs, 1, CHUNK, -1, s) < 0 ||
	    fqn_lane_ib_create(&fake_ops, *fr, 0, CHUNK, -1, r) < 0)
		return -1;
	fqn_lane_ib_handle(*s, &hs);
	fqn_lane_ib_handle(*r, &hr);
	rc = fqn_lane_ib_start(*s, &hr);
	if (rc == 0)
		rc = fqn_lane_ib_start(*r, &hs);
	return rc;
}

static struct fqn_chunk_hdr hdr(uint64_t seq, uint32_t len)
{
	struct fqn_chunk_hdr h = {
	    .seq = seq, .msg_size = len, .offset = 0, .len = len, .tag = 7, .send_ns = 1};

	return h;
}

/* Receive one chunk: 1 and its bytes in dst, 0 if none, or the error. */
static int recv_one(struct fqn_lane *r, struct fqn_chunk_hdr *h, uint8_t *dst)
{
	const char *why = "";
	int rc = r->ops->rx_header(r, h, &why);

	if (rc <= 0)
		return rc;
	return r->ops->rx_payload(r, dst);
}

static void test_data(void)
{
	struct fqn_lane *s, *r;
	struct fake *fs, *fr;
	struct fqib_handle hs, hr;
	struct fqn_chunk_hdr h;
	static uint8_t src[CHUNK], dst[CHUNK];
	void *cookie = NULL;
	int sent = 0, rc, got = 0, bad = 0;

	ok(lanes(&s, &r, &fs, &fr, FQIB_GID_ROCE_V2) == 0, "two lanes connected through their handles");
	fqn_lane_ib_handle(s, &hs);
	fqn_lane_ib_handle(r, &hr);
	ok(hr.slots == FQIB_DATA_SLOTS && hr.slot_size == FQN_CHUNK_HDR_SIZE + CHUNK && hr.rkey == 0x77 &&
	       hr.addr != 0,
	   "receiver's handle announces its ring (%u slots of %u bytes)", hr.slots, hr.slot_size);
	ok(hs.slots == FQIB_SMALL_SLOTS && hs.qpn == 0x11, "sender's handle: small slots, its QPN");
	ok(fs->connected && fr->connected, "both QPs connected");
	{
		struct fqn_lane_info si, ri;
		int rs = s->ops->info(s, &si), rr = r->ops->info(r, &ri);

		ok(rs == 0 && rr == 0 && si.local_qpn == 0x11 && si.remote_qpn == 0x22 &&
		       ri.local_qpn == 0x22 && ri.remote_qpn == 0x11,
		   "info: each end's QPN and its peer's (sender %#x -> %#x, receiver %#x -> %#x)",
		   si.local_qpn, si.remote_qpn, ri.local_qpn, ri.remote_qpn);
	}
	ok(strcmp(s->ops->kind, "ib") == 0, "kind is ib");

	/* Fill the ring without the receiver consuming: credits stop the sender. */
	for (int i = 0; i < 20; i++) {
		h = hdr((uint64_t)i, (uint32_t)(i * 100 + 1));
		/* a taken chunk's payload must stay as it was until reported complete */
		memset(src, i < FQIB_DATA_SLOTS ? i : FQIB_DATA_SLOTS, sizeof(src));
		rc = s->ops->tx_progress(s, &cookie);
		if (rc < 0)
			break;
		rc = s->ops->tx_chunk(s, &h, src, (void *)(uintptr_t)(i + 1));
		if (rc == -EAGAIN)
			break;
		sent++;
	}
	is_int(sent, FQIB_DATA_SLOTS + 1,
	       "sender posts %d chunks (one credit per receive slot) and takes one more, which waits",
	       FQIB_DATA_SLOTS);
	ok(cookie == (void *)(uintptr_t)FQIB_DATA_SLOTS,
	   "the last posted chunk's cookie was reported (copied into the ring)");
	ok(s->ops->tx_progress(s, &cookie) == 0, "the waiting chunk is not reported complete");
	h = hdr(99, 10);
	ok(s->ops->tx_chunk(s, &h, src, NULL) == -EAGAIN,
	   "and the next is refused: -EAGAIN while a completion is outstanding");

	for (int i = 0; i < FQIB_DATA_SLOTS; i++) {
		memset(dst, 0xee, sizeof(dst));
		rc = recv_one(r, &h, dst);
		got += rc == 1;
		for (uint32_t k = 0; k < h.len; k++)
			bad += dst[k] != (uint8_t)i;
		bad += h.seq != (uint64_t)i || h.len != (uint32_t)(i * 100 + 1) || dst[h.len] != 0xee;
	}
	is_int(got, FQIB_DATA_SLOTS, "receiver gets all %d chunks", FQIB_DATA_SLOTS);
	is_int(bad, 0, "in order, right lengths, right bytes, nothing past the chunk");
	ok(recv_one(r, &h, dst) == 0, "then nothing");
	cookie = NULL;
	ok(s->ops->tx_progress(s, &cookie) == 1 && cookie == (void *)(uintptr_t)(FQIB_DATA_SLOTS + 1),
	   "credits came back: the waiting chunk is posted and reported complete");
	memset(dst, 0xee, sizeof(dst));
	rc = recv_one(r, &h, dst);
	ok(rc == 1 && h.seq == FQIB_DATA_SLOTS && dst[0] == FQIB_DATA_SLOTS,
	   "the receiver gets it, intact (its payload was copied when posted)");

	/* credits came back: the sender continues; 200 chunks round trip */
	got = bad = 0;
	sent = 0;
	for (int round = 0; round < 1000 && got < 200; round++) {
		if (sent < 200) {
			h = hdr((uint64_t)sent, (uint32_t)(sent % CHUNK));
			memset(src, sent + 3, sizeof(src));
			rc = s->ops->tx_progress(s, &cookie);
			if (rc >= 0)
				rc = s->ops->tx_chunk(s, &h, src, NULL);
			sent += rc == 0;
		}
		rc = recv_one(r, &h, dst);
		if (rc == 1) {
			bad += h.seq != (uint64_t)got || (h.len && dst[h.len - 1] != (uint8_t)(got + 3));
			got++;
		}
	}
	ok(got == 200 && bad == 0, "200 more chunks through credits returned by the receiver (%d, %d bad)",
	   got, bad);

	{ /* control records go the other way */
		uint8_t rec[FQN_CTRL_SIZE], back[FQN_CTRL_SIZE];
		int n = 0;

		for (int i = 0; i < FQN_CTRL_SIZE; i++)
			rec[i] = (uint8_t)(0xa0 + i);
		ok(r->ops->tx_ctrl(r, rec) == 0, "receiver sends a control record");
		rec[0] = 0x55;
		ok(r->ops->tx_ctrl(r, rec) == 0, "and another");
		while (s->ops->rx_ctrl(s, back) == 1)
			n += (n == 0 && back[0] == 0xa0 && back[15] == 0xaf) || (n == 1 && back[0] == 0x55);
		is_int(n, 2, "sender reads both, in order, intact");
		for (int i = 0; i < 100; i++) { /* small buffers are reposted */
			r->ops->tx_ctrl(r, rec);
			n += s->ops->rx_ctrl(s, back) == 1;
		}
		is_int(n, 102, "100 more records: buffers recycled on both ends");
	}

	{ /* completion stamps */
		fr->ts = 123456789;
		h = hdr(200, 5);
		s->ops->tx_progress(s, &cookie);
		ok(s->ops->tx_chunk(s, &h, src, NULL) == 0, "one more chunk");
		ok(r->ops->rx_header(r, &h, &(const char *){""}) == 1 && fqn_lane_ib_rx_stamp(r) == 123456789,
		   "its receive completion stamp is the lane's rx stamp");
		r->ops->rx_payload(r, dst);
		ok(fqn_lane_ib_rx_stamp(r) == 0, "no current chunk: stamp 0");
	}

	{ /* injected success completion of an unexpected kind: protocol error */
		struct fqn_lane_info info;

		ok(s->ops->info(s, &info) == 0 && info.idle_rx_ms < 1000,
		   "info: recently heard from the peer");
		cq_push(fr,
			(struct fqib_wc){
			    .wr_id = (2ull << 32) | 3, .op = FQIB_OP_RECV, .byte_len = 60, .imm = 3u << 24});
		ok(r->ops->rx_header(r, &h, &(const char *){""}) == -EPROTO,
		   "a receive carrying a control imm on the data ring: -EPROTO");
		ok(r->ops->rx_header(r, &h, &(const char *){""}) == -EPROTO, "the lane stays dead");
	}
	s->ops->destroy(s);
	r->ops->destroy(r);
}

static void test_errors(void)
{
	struct fqn_lane *s, *r;
	struct fake *fs, *fr;
	struct fqn_chunk_hdr h = hdr(0, 100);
	static uint8_t src[CHUNK], dst[CHUNK];
	void *cookie;
	int rc;

	/* RETRY_EXC_ERR on a send: the path is dead */
	ok(lanes(&s, &r, &fs, &fr, FQIB_GID_ROCE_V2) == 0, "fresh lanes");
	ok(s->ops->tx_chunk(s, &h, src, NULL) == 0 && recv_one(r, &h, dst) == 1, "one chunk goes through");
	fs->fail_status = FQIB_WC_RETRY_EXC_ERR;
	s->ops->tx_progress(s, &cookie);
	h = hdr(1, 100);
	ok(s->ops->tx_chunk(s, &h, src, NULL) == 0, "the next is posted");
	rc = s->ops->tx_progress(s, &cookie);
	is_int(rc, -EIO, "its RETRY_EXC_ERR completion: the lane fails with -EIO (failover's cue)");
	ok(s->ops->tx_chunk(s, &h, src, NULL) == -EIO && s->ops->rx_ctrl(s, dst) == -EIO,
	   "every later call says the same");

	/* WR_FLUSH_ERR on the receiving end: the QP went to error */
	cq_push(fr, (struct fqib_wc){
			.wr_id = (2ull << 32) | 1, .status = FQIB_WC_WR_FLUSH_ERR, .op = FQIB_OP_RECV});
	ok(recv_one(r, &h, dst) == -ECONNRESET, "receiver: WR_FLUSH_ERR -> -ECONNRESET");
	ok(r->ops->tx_ctrl(r, dst) == -ECONNRESET, "its tx_ctrl too");
	s->ops->destroy(s);
	r->ops->destroy(r);

	/* an injected success completion for a send is accounted, not an error */
	ok(lanes(&s, &r, &fs, &fr, FQIB_GID_ROCE_V2) == 0, "fresh lanes");
	h = hdr(0, 10);
	ok(s->ops->tx_chunk(s, &h, src, NULL) == 0, "a chunk");
	cq_push(fs, (struct fqib_wc){.wr_id = (1ull << 32) | 5, .op = FQIB_OP_SEND});
	ok(s->ops->tx_progress(s, &cookie) == 1, "an extra injected send success: no error");
	s->ops->destroy(s);
	r->ops->destroy(r);

	/* RoCE v2 to v1: refused at connect, with both ends named */
	ok(lanes(&s, &r, &fs, &fr, FQIB_GID_IB_ROCE_V1) == -EPROTO, "RoCE v2 sender, v1 receiver: -EPROTO");
	ok(s->ops->tx_chunk(s, &h, src, NULL) == -EPROTO, "the lane is dead");
	s->ops->destroy(s);
	r->ops->destroy(r);
}

static void test_side_channel(void)
{
	uint8_t hello[36], buf[36 + FQIB_HANDLE_SIZE], src[64] = {1, 2, 3}, dst[64];
	struct fqn_lane *s, *r;
	struct fake *fs, *fr;
	struct fqn_chunk_hdr h = hdr(0, 3);
	void *cookie;
	int sp[2], rc = -1, rrc = 0;
	size_t got = 0;

	memset(hello, 0x42, sizeof(hello));
	ok(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sp) == 0, "socketpair as the side channel");
	pair(&fs, &fr, FQIB_GID_ROCE_V2);
	ok(fqn_lane_ib_create(&fake_ops, fs, 1, CHUNK, sp[0], &s) == 0, "connector lane");
	ok(s->ops->poll_connected(s) == 0, "connected");
	ok(s->ops->send_hello(s, hello, sizeof(hello)) == -EAGAIN,
	   "hello sent; waiting for the peer's handle");
	while (got < sizeof(buf)) { /* what setup.c does before adopting the socket */
		ssize_t n = recv(sp[1], buf + got, sizeof(buf) - got, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	ok(got == sizeof(buf) && memcmp(buf, hello, 36) == 0, "acceptor reads the hello and the QP handle");
	ok(fqn_lane_ib_create(&fake_ops, fr, 0, CHUNK, sp[1], &r) == 0, "acceptor lane adopts the socket");
	ok(recv_one(r, &h, dst) == 0 && !fr->connected, "not started yet: no data, no error");
	ok(fqn_lane_ib_accept(r, buf + 36) == 0 && fr->connected, "acceptor connects its QP first (RTR)");
	ok(fs->connected == 0, "the connector is not yet connected: it has not read the acceptor's handle");
	for (int i = 0; i < 100 && (rc != 0 || !fs->connected); i++) {
		rrc = recv_one(r, &h, dst);
		rc = s->ops->send_hello(s, hello, sizeof(hello));
	}
	ok(rc == 0 && rrc == 0 && fs->connected && fr->connected,
	   "handles crossed the side channel; both ready");
	h = hdr(0, 3);
	ok(s->ops->tx_chunk(s, &h, src, NULL) == 0 && recv_one(r, &h, dst) == 1 && dst[2] == 3,
	   "data flows after the handshake");
	r->ops->destroy(r); /* the peer process goes away: its socket closes */
	{
		struct timespec ts = {0, 30000000};
		nanosleep(&ts, NULL);
	}
	is_int(s->ops->tx_progress(s, &cookie), -ECONNRESET,
	       "side channel EOF: -ECONNRESET, no QP timeout wait");
	s->ops->destroy(s);

	{ /* an acceptor given a garbage handle */
		uint8_t junk[FQIB_HANDLE_SIZE];

		ok(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sp) == 0, "socketpair");
		pair(&fs, &fr, FQIB_GID_ROCE_V2);
		free(fs);
		fr->peer = NULL;
		memset(junk, 0x5a, sizeof(junk));
		ok(fqn_lane_ib_create(&fake_ops, fr, 0, CHUNK, sp[1], &r) == 0, "acceptor lane");
		is_int(fqn_lane_ib_accept(r, junk), -EPROTO, "acceptor: bad handle: -EPROTO");
		ok(recv_one(r, &h, dst) == -EPROTO, "the lane is dead");
		r->ops->destroy(r);
		close(sp[0]);
	}

	/* a peer that sends garbage for a handle */
	ok(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sp) == 0, "another socketpair");
	pair(&fs, &fr, FQIB_GID_ROCE_V2);
	free(fr);
	fs->peer = NULL;
	ok(fqn_lane_ib_create(&fake_ops, fs, 1, CHUNK, sp[0], &s) == 0, "connector lane");
	memset(buf, 0x99, sizeof(buf));
	ok(send(sp[1], buf, 36, 0) == 36 && send(sp[1], buf, 28, 0) == 28, "64 bytes of garbage");
	rc = s->ops->send_hello(s, hello, sizeof(hello));
	is_int(rc, -EPROTO, "bad handle: -EPROTO");
	s->ops->destroy(s);
	close(sp[1]);
}

/* Pacing: the lane's set_rate reaches the QP's rate limit, in kbps. */
static void test_rate(void)
{
	struct fqn_lane *s, *r;
	struct fake *fs, *fr;

	if (!ok(lanes(&s, &r, &fs, &fr, FQIB_GID_ROCE_V2) == 0, "rate: lanes connected"))
		return;
	ok(s->ops->set_rate && s->ops->set_rate(s, 25000000) == 0 && fs->kbps == 200000,
	   "25 MB/s is a 200000 kbps QP rate limit");
	ok(s->ops->set_rate(s, 0) == 0 && fs->kbps == 0 && fs->rates == 2, "0: the limit lifted");
	s->ops->destroy(s);
	r->ops->destroy(r);
}

int main(void)
{
	struct fqib_clock_ref ref = {.cycles = 1000, .raw_ns = 5000000000LL, .khz = 156250};

	ok(fqib_cycles_to_ns(&ref, 1000 + 156250) == 5000000000LL + 1000000,
	   "156250 cycles at 156.25 MHz = 1 ms");
	ok(fqib_cycles_to_ns(&ref, 1000 + 156250ULL * 3600 * 1000) == 5000000000LL + 3600000000000LL,
	   "an hour of cycles, exactly");
	ok(fqib_cycles_to_ns(&ref, 1000 - 15625) == 5000000000LL - 100000, "a stamp before the reference");
	ref.khz = 0;
	ok(fqib_cycles_to_ns(&ref, 5) == 0, "no clock rate: 0 (no stamp)");
	test_data();
	test_errors();
	test_side_channel();
	test_rate();
	return done_testing();
}
