/*
 * lane_ib: the IB verbs RC QP lane kind (see ib_lane.h for the design).
 * Device-neutral: every verbs call goes through struct fqib_io_ops.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "nccl-plugin/ib_sysfs.h"
#include "nccl-plugin/lanes/ib/ib_lane.h"
#include "nccl-plugin/nic.h"
#include "nccl-plugin/plog.h"

/* wr_id: kind in the top 32 bits, slot below. */
enum {
	WR_DATA_TX = 1,
	WR_DATA_RX,
	WR_SMALL_TX,
	WR_SMALL_RX
};
#define WR(kind, slot) (((uint64_t)(kind) << 32) | (uint32_t)(slot))

/* imm: type in the top byte, value below. */
enum {
	IMM_DATA = 1,
	IMM_CREDIT,
	IMM_CTRL
};
#define IMM(type, v) (((uint32_t)(type) << 24) | ((uint32_t)(v)&0xffffff))

enum ib_state {
	ST_HANDSHAKE = 0,
	ST_READY,
	ST_DEAD
};

#define SIDE_CHECK_NS  20000000 /* side channel EOF check period */
#define FQIB_HELLO_MAX 64       /* >= FQN_HELLO_SIZE */

struct fqn_lane_ib {
	struct fqn_lane base;
	const struct fqib_io_ops *ops;
	void *io;
	int sender;
	enum ib_state state;
	int err;
	uint8_t *arena; /* data slots, then small tx slots, then small rx slots */
	size_t arena_len, slot_size;
	struct fqib_handle local;
	uint32_t remote_qpn; /* the peer's QP, once connected */
	/* side channel */
	int fd;
	uint8_t hs_out[FQIB_HELLO_MAX + FQIB_HANDLE_SIZE];
	size_t hs_out_len, hs_out_off;
	uint8_t hs_in[FQIB_HANDLE_SIZE];
	size_t hs_in_got;
	int hello_queued;
	int64_t side_next_ns;
	/* sender */
	int credits, tx_head, tx_inflight;
	void *tx_cookie;
	int tx_pending; /* a chunk taken whose completion is not yet reported */
	int tx_staged;  /* ... and not yet posted: it waits for a credit or a ring slot */
	struct fqn_chunk_hdr tx_hdr;
	const void *tx_payload;
	int ctl_q[FQIB_SMALL_SLOTS]; /* arrived control records (small rx slots) */
	int ctl_h, ctl_n;
	/* receiver */
	int rx_q[FQIB_DATA_SLOTS];
	uint32_t rx_len[FQIB_DATA_SLOTS];
	int64_t rx_ts[FQIB_DATA_SLOTS];
	int rx_h, rx_n;
	int rx_have_hdr;
	struct fqn_chunk_hdr rx_hdr;
	int credits_owed;
	int small_free;
	int small_next;
	/* path */
	int64_t last_heard_ns;
};

#define IB(l) ((struct fqn_lane_ib *)(l))

int64_t fqib_cycles_to_ns(const struct fqib_clock_ref *ref, uint64_t cycles)
{
	int64_t d = (int64_t)(cycles - ref->cycles); /* wraps correctly across a counter wrap */

	if (!ref->khz)
		return 0;
	/* ns = cycles * 1e6 / kHz, split to keep 64 bits for days of cycles */
	return ref->raw_ns + (d / (int64_t)ref->khz) * 1000000 +
	       (d % (int64_t)ref->khz) * 1000000 / (int64_t)ref->khz;
}

static uint8_t *data_slot(struct fqn_lane_ib *b, int i)
{
	return b->arena + (size_t)i * b->slot_size;
}

static uint8_t *small_tx(struct fqn_lane_ib *b, int i)
{
	return b->arena + FQIB_DATA_SLOTS * b->slot_size + (size_t)i * FQIB_SMALL_SIZE;
}

static uint8_t *small_rx(struct fqn_lane_ib *b, int i)
{
	return small_tx(b, FQIB_SMALL_SLOTS + i);
}

static const char *wc_status_name(int s)
{
	switch (s) {
	case FQIB_WC_WR_FLUSH_ERR:
		return "WR_FLUSH_ERR (the QP is in the error state)";
	case FQIB_WC_RETRY_EXC_ERR:
		return "RETRY_EXC_ERR (transport retries exhausted: the path or the peer is gone)";
	case FQIB_WC_RNR_RETRY_EXC_ERR:
		return "RNR_RETRY_EXC_ERR (the peer posted no receive buffer)";
	default:
		return "error";
	}
}

static int lane_die(struct fqn_lane_ib *b, int err)
{
	if (b->state != ST_DEAD) {
		b->state = ST_DEAD;
		b->err = err;
	}
	return b->err;
}

static int wc_fail(struct fqn_lane_ib *b, const struct fqib_wc *wc)
{
	int err = wc->status == FQIB_WC_WR_FLUSH_ERR ? -ECONNRESET : -EIO;

	if (b->state != ST_DEAD)
		FQN_WARN("IB lane %d (%s -> %s): work completion status %d %s", b->base.index, b->base.local,
			 b->base.peer, wc->status, wc_status_name(wc->status));
	return lane_die(b, err);
}

static void on_wc(struct fqn_lane_ib *b, const struct fqib_wc *wc)
{
	uint32_t kind = (uint32_t)(wc->wr_id >> 32), slot = (uint32_t)wc->wr_id;

	if (wc->status != FQIB_WC_SUCCESS) {
		wc_fail(b, wc);
		return;
	}
	b->last_heard_ns = fq_now_ns();
	switch (kind) {
	case WR_DATA_TX:
		b->tx_inflight--;
		break;
	case WR_SMALL_TX:
		b->small_free++;
		break;
	case WR_DATA_RX:
		if (slot >= FQIB_DATA_SLOTS || b->rx_n == FQIB_DATA_SLOTS || (wc->imm >> 24) != IMM_DATA) {
			FQN_WARN("IB lane %d (%s -> %s): unexpected receive (slot %u, imm %#x)",
				 b->base.index, b->base.local, b->base.peer, slot, wc->imm);
			lane_die(b, -EPROTO);
			return;
		}
		b->rx_q[(b->rx_h + b->rx_n) % FQIB_DATA_SLOTS] = (int)slot;
		b->rx_len[slot] = wc->byte_len;
		b->rx_ts[slot] = wc->ts_ns;
		b->rx_n++;
		break;
	case WR_SMALL_RX:
		if (slot >= FQIB_SMALL_SLOTS) {
			lane_die(b, -EPROTO);
			return;
		}
		if ((wc->imm >> 24) == IMM_CREDIT) {
			b->credits += (int)(wc->imm & 0xffffff);
			if (b->credits > FQIB_DATA_SLOTS) {
				FQN_WARN("IB lane %d (%s -> %s): peer returned more credits than slots",
					 b->base.index, b->base.local, b->base.peer);
				lane_die(b, -EPROTO);
				return;
			}
			if (b->ops->post_recv(b->io, wc->wr_id, small_rx(b, (int)slot), FQIB_SMALL_SIZE) < 0)
				lane_die(b, -EIO);
		} else if ((wc->imm >> 24) == IMM_CTRL && wc->byte_len == FQN_CTRL_SIZE &&
			   b->ctl_n < FQIB_SMALL_SLOTS) {
			b->ctl_q[(b->ctl_h + b->ctl_n++) % FQIB_SMALL_SLOTS] = (int)slot;
		} else {
			lane_die(b, -EPROTO);
		}
		break;
	default:
		lane_die(b, -EPROTO);
	}
}

/* Read side-channel bytes: the peer's handle during the handshake, then
 * only to notice its EOF. 0, or -ECONNRESET. */
static int side_poll(struct fqn_lane_ib *b)
{
	uint8_t junk[64];
	ssize_t n;

	if (b->fd < 0)
		return 0;
	for (;;) {
		if (b->state == ST_HANDSHAKE && b->hs_in_got < FQIB_HANDLE_SIZE)
			n = recv(b->fd, b->hs_in + b->hs_in_got, FQIB_HANDLE_SIZE - b->hs_in_got,
				 MSG_DONTWAIT);
		else
			n = recv(b->fd, junk, sizeof(junk), MSG_DONTWAIT);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -ECONNRESET;
		if (b->state == ST_HANDSHAKE && b->hs_in_got < FQIB_HANDLE_SIZE)
			b->hs_in_got += (size_t)n;
		else if (b->state == ST_HANDSHAKE)
			return -EPROTO; /* bytes after the handle: not a fabriciq IB peer */
	}
}

/* Push the unsent part of hs_out: 0 (all sent, or the socket is full) or -errno. */
static int side_push(struct fqn_lane_ib *b)
{
	while (b->hs_out_off < b->hs_out_len) {
		ssize_t n = send(b->fd, b->hs_out + b->hs_out_off, b->hs_out_len - b->hs_out_off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -errno;
		b->hs_out_off += (size_t)n;
	}
	return 0;
}

/* Progress: poll completions; every SIDE_CHECK_NS, the side channel. */
static int progress(struct fqn_lane_ib *b)
{
	struct fqib_wc wc[16];
	int n;

	if (b->state == ST_DEAD)
		return b->err;
	do {
		n = b->ops->poll(b->io, wc, 16);
		if (n < 0)
			return lane_die(b, n);
		for (int i = 0; i < n; i++)
			on_wc(b, &wc[i]);
	} while (n == 16 && b->state != ST_DEAD);
	if (b->state == ST_DEAD)
		return b->err;
	if (b->fd >= 0 && b->hs_out_off < b->hs_out_len && side_push(b) < 0)
		return lane_die(b, -ECONNRESET);
	if (b->fd >= 0) {
		int64_t now = fq_now_ns();

		if (now >= b->side_next_ns) {
			b->side_next_ns = now + SIDE_CHECK_NS;
			if (side_poll(b) < 0) {
				FQN_WARN("IB lane %d (%s -> %s): the peer closed the side channel",
					 b->base.index, b->base.local, b->base.peer);
				return lane_die(b, -ECONNRESET);
			}
		}
	}
	return 0;
}

int fqn_lane_ib_start(struct fqn_lane *l, const struct fqib_handle *remote)
{
	struct fqn_lane_ib *b = IB(l);
	char why[256];
	int mtu, rc;

	rc = fqib_handle_check(&b->local, remote, b->sender ? l->chunk_size : 0, &mtu, why, sizeof(why));
	if (rc == 0)
		rc = b->ops->connect(b->io, remote, why, sizeof(why));
	if (rc < 0) {
		FQN_WARN("IB lane %d: cannot connect %s (%s, %s, QPN %#x) with %s (%s, %s, QPN %#x): %s",
			 l->index, l->local, fqib_link_name(b->local.link),
			 fqib_gid_type_name(b->local.gid_type), b->local.qpn, l->peer,
			 fqib_link_name(remote->link), fqib_gid_type_name(remote->gid_type), remote->qpn,
			 why);
		return lane_die(b, rc);
	}
	if (b->sender)
		b->credits = (int)(remote->slots < FQIB_DATA_SLOTS ? remote->slots : FQIB_DATA_SLOTS);
	b->remote_qpn = remote->qpn;
	b->state = ST_READY;
	b->last_heard_ns = fq_now_ns();
	return 0;
}

/* Side-channel handshake: push our bytes, read the peer's handle, connect.
 * 0 when ready, -EAGAIN while in progress, or an error. */
static int handshake(struct fqn_lane_ib *b)
{
	struct fqib_handle remote;
	const char *why;
	int rc;

	if (b->state == ST_READY)
		return 0;
	if (b->state == ST_DEAD)
		return b->err;
	if (side_push(b) < 0)
		return lane_die(b, -ECONNRESET);
	if (b->hs_out_off < b->hs_out_len)
		return -EAGAIN;
	rc = side_poll(b);
	if (rc < 0)
		return lane_die(b, rc);
	if (b->hs_in_got < FQIB_HANDLE_SIZE)
		return -EAGAIN;
	if (fqib_handle_decode(b->hs_in, &remote, &why) < 0) {
		FQN_WARN("IB lane %d (%s -> %s): bad IB handle from the peer: %s", b->base.index,
			 b->base.local, b->base.peer, why);
		return lane_die(b, -EPROTO);
	}
	return fqn_lane_ib_start(&b->base, &remote);
}

static int ib_poll_connected(struct fqn_lane *l)
{
	struct fqn_lane_ib *b = IB(l);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int err = 0;
	socklen_t len = sizeof(err);

	if (b->state == ST_DEAD)
		return b->err;
	if (b->fd < 0 || b->state == ST_READY || b->hello_queued)
		return 0;
	if (getsockopt(b->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		return -errno;
	if (err)
		return -err;
	if (getpeername(b->fd, (struct sockaddr *)&ss, &sl) < 0)
		return errno == ENOTCONN ? -EINPROGRESS : -errno;
	sl = sizeof(ss);
	if (getsockname(b->fd, (struct sockaddr *)&ss, &sl) == 0)
		fqn_sockaddr_str((struct sockaddr *)&ss, l->local, sizeof(l->local));
	return 0;
}

/* The connector: the hello, then our handle, then wait for theirs. */
static int ib_send_hello(struct fqn_lane *l, const void *buf, size_t len)
{
	struct fqn_lane_ib *b = IB(l);

	if (b->fd < 0 || len > FQIB_HELLO_MAX)
		return -EINVAL;
	if (!b->hello_queued) {
		memcpy(b->hs_out, buf, len);
		fqib_handle_encode(&b->local, b->hs_out + len);
		b->hs_out_len = len + FQIB_HANDLE_SIZE;
		b->hs_out_off = 0;
		b->hello_queued = 1;
	}
	return handshake(b);
}

/* Post the staged chunk once a credit and a ring slot are free (copying
 * it into the ring frees the caller's buffer). 0 or the lane's error. */
static int tx_post(struct fqn_lane_ib *b)
{
	uint8_t *slot;
	int rc;

	if (!b->tx_staged || b->credits == 0 || b->tx_inflight == FQIB_DATA_SLOTS)
		return 0;
	slot = data_slot(b, b->tx_head);
	fqn_chunk_hdr_encode(&b->tx_hdr, slot);
	memcpy(slot + FQN_CHUNK_HDR_SIZE, b->tx_payload, b->tx_hdr.len);
	rc = b->ops->post_send(b->io, WR(WR_DATA_TX, b->tx_head), slot, FQN_CHUNK_HDR_SIZE + b->tx_hdr.len,
			       IMM(IMM_DATA, 0));
	if (rc < 0)
		return lane_die(b, rc);
	b->credits--;
	b->tx_inflight++;
	b->tx_head = (b->tx_head + 1) % FQIB_DATA_SLOTS;
	b->tx_staged = 0;
	return 0;
}

/* lane.h's contract: -EAGAIN only while the previous chunk is not yet
 * reported complete. Without a credit the chunk is taken anyway and
 * waits (its payload stays valid until reported), so the caller's wait
 * for its completion always ends when a credit returns. */
static int ib_tx_chunk(struct fqn_lane *l, const struct fqn_chunk_hdr *h, const void *payload, void *cookie)
{
	struct fqn_lane_ib *b = IB(l);
	int rc;

	if (b->state != ST_READY)
		return b->state == ST_DEAD ? b->err : -EAGAIN;
	rc = progress(b);
	if (rc < 0)
		return rc;
	if (b->tx_pending)
		return -EAGAIN;
	if (FQN_CHUNK_HDR_SIZE + (size_t)h->len > b->slot_size)
		return -EMSGSIZE;
	b->tx_hdr = *h;
	b->tx_payload = payload;
	b->tx_cookie = cookie;
	b->tx_pending = b->tx_staged = 1;
	return tx_post(b);
}

static int ib_tx_progress(struct fqn_lane *l, void **cookie)
{
	struct fqn_lane_ib *b = IB(l);
	int rc = progress(b);

	if (rc == 0)
		rc = tx_post(b);
	if (rc < 0)
		return rc;
	if (!b->tx_pending || b->tx_staged)
		return 0;
	b->tx_pending = 0;
	*cookie = b->tx_cookie; /* copied into the ring: the caller's buffer is free */
	return 1;
}

/* A small SEND to the sending end (credits, control records). */
static int small_send(struct fqn_lane_ib *b, const void *data, uint32_t len, uint32_t imm)
{
	int i, rc;

	if (b->small_free == 0)
		return -EAGAIN;
	i = b->small_next;
	b->small_next = (b->small_next + 1) % FQIB_SMALL_SLOTS;
	memcpy(small_tx(b, i), data, len);
	rc = b->ops->post_send(b->io, WR(WR_SMALL_TX, i), small_tx(b, i), len, imm);
	if (rc < 0)
		return lane_die(b, rc);
	b->small_free--;
	return 0;
}

/* Return credits half a ring at a time, or all once nothing more is queued. */
static void credits_return(struct fqn_lane_ib *b)
{
	uint8_t z[4] = {0};

	if (b->credits_owed >= FQIB_DATA_SLOTS / 2 || (b->credits_owed && !b->rx_n))
		if (small_send(b, z, sizeof(z), IMM(IMM_CREDIT, b->credits_owed)) == 0)
			b->credits_owed = 0;
}

static int rx_ready(struct fqn_lane_ib *b)
{
	int rc;

	if (b->state == ST_HANDSHAKE)
		return 0; /* fqn_lane_ib_start() not called yet */
	rc = progress(b);
	if (rc < 0)
		return rc;
	credits_return(b);
	return b->state == ST_DEAD ? b->err : 1;
}

static int ib_rx_header(struct fqn_lane *l, struct fqn_chunk_hdr *h, const char **why)
{
	struct fqn_lane_ib *b = IB(l);
	int rc, slot;

	if (!b->rx_have_hdr) {
		rc = rx_ready(b);
		if (rc <= 0)
			return rc;
		if (!b->rx_n)
			return 0;
		slot = b->rx_q[b->rx_h];
		if (b->rx_len[slot] < FQN_CHUNK_HDR_SIZE ||
		    fqn_chunk_hdr_decode(data_slot(b, slot), l->chunk_size, &b->rx_hdr, why) < 0) {
			if (b->rx_len[slot] < FQN_CHUNK_HDR_SIZE)
				*why = "IB SEND shorter than a chunk header";
			return -EBADMSG;
		}
		if (b->rx_len[slot] != FQN_CHUNK_HDR_SIZE + b->rx_hdr.len) {
			*why = "IB SEND length differs from the chunk header's";
			return -EBADMSG;
		}
		b->rx_have_hdr = 1;
	}
	*h = b->rx_hdr;
	return 1;
}

static int ib_rx_payload(struct fqn_lane *l, void *dst)
{
	struct fqn_lane_ib *b = IB(l);
	int slot, rc;

	if (!b->rx_have_hdr)
		return -EPROTO;
	slot = b->rx_q[b->rx_h];
	memcpy(dst, data_slot(b, slot) + FQN_CHUNK_HDR_SIZE, b->rx_hdr.len);
	rc = b->ops->post_recv(b->io, WR(WR_DATA_RX, slot), data_slot(b, slot), (uint32_t)b->slot_size);
	if (rc < 0)
		return lane_die(b, rc);
	b->rx_h = (b->rx_h + 1) % FQIB_DATA_SLOTS;
	b->rx_n--;
	b->rx_have_hdr = 0;
	b->credits_owed++;
	credits_return(b);
	return 1;
}

static int ib_tx_ctrl(struct fqn_lane *l, const uint8_t rec[FQN_CTRL_SIZE])
{
	struct fqn_lane_ib *b = IB(l);
	int rc = rx_ready(b);

	if (rc <= 0)
		return rc == 0 ? -EAGAIN : rc;
	return small_send(b, rec, FQN_CTRL_SIZE, IMM(IMM_CTRL, 0));
}

static int ib_rx_ctrl(struct fqn_lane *l, uint8_t rec[FQN_CTRL_SIZE])
{
	struct fqn_lane_ib *b = IB(l);
	int rc, slot;

	if (b->state != ST_READY)
		return b->state == ST_DEAD ? b->err : 0;
	rc = progress(b);
	if (rc < 0)
		return rc;
	if (!b->ctl_n)
		return 0;
	slot = b->ctl_q[b->ctl_h];
	b->ctl_h = (b->ctl_h + 1) % FQIB_SMALL_SLOTS;
	b->ctl_n--;
	memcpy(rec, small_rx(b, slot), FQN_CTRL_SIZE);
	if (b->ops->post_recv(b->io, WR(WR_SMALL_RX, slot), small_rx(b, slot), FQIB_SMALL_SIZE) < 0)
		return lane_die(b, -EIO);
	return 1;
}

static int ib_info(struct fqn_lane *l, struct fqn_lane_info *out)
{
	struct fqn_lane_ib *b = IB(l);
	int64_t idle = b->last_heard_ns ? (fq_now_ns() - b->last_heard_ns) / 1000000 : 0;

	memset(out, 0, sizeof(*out));
	out->idle_rx_ms = idle > UINT32_MAX ? UINT32_MAX : (uint32_t)idle;
	out->unacked = (uint32_t)b->tx_inflight;
	if (b->state == ST_READY) {
		out->local_qpn = b->local.qpn;
		out->remote_qpn = b->remote_qpn;
	}
	return 0;
}

/* The QP's rate cap, if the device paces (kbps, the verbs unit). */
static int ib_set_rate(struct fqn_lane *l, uint64_t bytes_per_s)
{
	struct fqn_lane_ib *b = IB(l);
	uint64_t kbps = bytes_per_s ? (bytes_per_s * 8 + 999) / 1000 : 0;

	if (!b->ops->rate)
		return -EOPNOTSUPP;
	return b->ops->rate(b->io, kbps > UINT32_MAX ? UINT32_MAX : (uint32_t)kbps);
}

static void ib_destroy(struct fqn_lane *l)
{
	struct fqn_lane_ib *b = IB(l);

	if (!l)
		return;
	b->ops->destroy(b->io); /* QP, CQ and MR go before the memory they point at */
	if (b->fd >= 0)
		close(b->fd);
	free(b->arena);
	free(b);
}

static const struct fqn_lane_ops fqn_lane_ib_ops = {
    .kind = "ib",
    .poll_connected = ib_poll_connected,
    .send_hello = ib_send_hello,
    .tx_chunk = ib_tx_chunk,
    .tx_progress = ib_tx_progress,
    .rx_header = ib_rx_header,
    .rx_payload = ib_rx_payload,
    .tx_ctrl = ib_tx_ctrl,
    .rx_ctrl = ib_rx_ctrl,
    .info = ib_info,
    .rx_stamp = fqn_lane_ib_rx_stamp,
    .set_rate = ib_set_rate,
    .destroy = ib_destroy,
};

static int post_initial(struct fqn_lane_ib *b)
{
	int rc = 0;

	if (!b->sender)
		for (int i = 0; i < FQIB_DATA_SLOTS && rc == 0; i++)
			rc = b->ops->post_recv(b->io, WR(WR_DATA_RX, i), data_slot(b, i),
					       (uint32_t)b->slot_size);
	else
		for (int i = 0; i < FQIB_SMALL_SLOTS && rc == 0; i++)
			rc = b->ops->post_recv(b->io, WR(WR_SMALL_RX, i), small_rx(b, i), FQIB_SMALL_SIZE);
	return rc;
}

int fqn_lane_ib_create(const struct fqib_io_ops *ops, void *io, int sender, size_t chunk_size, int fd,
		       struct fqn_lane **out)
{
	struct fqn_lane_ib *b;
	uint32_t rkey = 0;
	int rc = -ENOMEM;

	*out = NULL;
	b = calloc(1, sizeof(*b));
	if (!b)
		goto err_io;
	b->slot_size = FQN_CHUNK_HDR_SIZE + chunk_size;
	b->arena_len = FQIB_DATA_SLOTS * b->slot_size + 2 * FQIB_SMALL_SLOTS * FQIB_SMALL_SIZE;
	b->arena = aligned_alloc(4096, (b->arena_len + 4095) & ~(size_t)4095);
	if (!b->arena)
		goto err_lane;
	b->base.ops = &fqn_lane_ib_ops;
	b->base.chunk_size = chunk_size;
	b->base.nic = -1;
	b->ops = ops;
	b->io = io;
	b->sender = sender;
	b->fd = fd;
	b->small_free = FQIB_SMALL_SLOTS;
	rc = ops->reg(io, b->arena, b->arena_len, &rkey);
	if (rc == 0)
		rc = post_initial(b);
	if (rc < 0)
		goto err_arena;
	ops->local(io, &b->local);
	b->local.rkey = rkey;
	b->local.addr = (uint64_t)(uintptr_t)b->arena;
	b->local.slots = sender ? FQIB_SMALL_SLOTS : FQIB_DATA_SLOTS;
	b->local.slot_size = sender ? FQIB_SMALL_SIZE : (uint32_t)b->slot_size;
	b->local.size =
	    (uint32_t)(sender ? FQIB_SMALL_SLOTS * FQIB_SMALL_SIZE : FQIB_DATA_SLOTS * b->slot_size);
	*out = &b->base;
	return 0;

err_arena:
	free(b->arena);
err_lane:
	free(b);
err_io:
	ops->destroy(io);
	if (fd >= 0)
		close(fd);
	return rc;
}

void fqn_lane_ib_handle(struct fqn_lane *l, struct fqib_handle *h)
{
	*h = IB(l)->local;
}

int64_t fqn_lane_ib_rx_stamp(struct fqn_lane *l)
{
	struct fqn_lane_ib *b = IB(l);

	return b->rx_have_hdr ? b->rx_ts[b->rx_q[b->rx_h]] : 0;
}

int fqn_lane_ib_accept(struct fqn_lane *l, const uint8_t peer[FQIB_HANDLE_SIZE])
{
	struct fqn_lane_ib *b = IB(l);
	struct fqib_handle remote;
	const char *why;
	int rc;

	if (b->sender || b->fd < 0 || b->state != ST_HANDSHAKE)
		return -EINVAL;
	if (fqib_handle_decode(peer, &remote, &why) < 0) {
		FQN_WARN("IB lane %d (%s <- %s): bad IB handle from the peer: %s", l->index, l->local,
			 l->peer, why);
		return lane_die(b, -EPROTO);
	}
	rc = fqn_lane_ib_start(l, &remote); /* RTR before the peer may send */
	if (rc < 0)
		return rc;
	fqib_handle_encode(&b->local, b->hs_out);
	b->hs_out_len = FQIB_HANDLE_SIZE;
	b->hs_out_off = 0;
	if (side_push(b) < 0) /* 64 bytes on a fresh socket: sent at once */
		return lane_die(b, -ECONNRESET);
	return 0;
}
