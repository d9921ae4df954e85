/*
 * lane_tcp: the TCP lane kind (see lane.h).
 *
 * One non-blocking socket. A chunk goes out as one sendmsg of header and
 * payload (no copy). The receiver reads into a small staging buffer, so a
 * header and a small payload (and the next headers) arrive in one recv();
 * the rest of a large payload lands straight in the posted buffer. Each lane is its own TCP flow with
 * its own ephemeral source port, which is what spreads lanes over ECMP paths.
 *
 * Small messages are staged with MSG_PEEK and taken out of the kernel's
 * queue (MSG_TRUNC, no copy) only at the next read. The kernel ACKs a
 * small segment when a read empties the queue; NCCL's receive comm is a
 * one-way connection, so that ACK is a segment of its own, sent inside
 * the recv() that a reply waits on (about 1.8 us of an 8 us half round
 * trip on loopback). Peeked, the data is ACKed by the next read, after
 * the reply has gone, or by the delayed-ACK timer. A lane whose last chunk
 * was larger than FQN_TCP_PEEK_MAX reads plainly: there the extra call
 * costs more than it saves.
 *
 * A chunk's arrival is the kernel's receive stamp of its header
 * (SO_TIMESTAMPING, software): a rank that was off the CPU when the header
 * came, or busy elsewhere, reads it late, and that wait is not the lane's
 * delay. After a chunk larger than the staging buffer the next header is
 * read alone, so that the stamp (the read's last segment's) is the
 * header's, not that of the payload streaming in behind it.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/errqueue.h> /* struct scm_timestamping */
#include <linux/net_tstamp.h>
#include <linux/tcp.h> /* struct tcp_info with tcpi_delivered_ce; glibc's lags */
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/clock.h"
#include "nccl-plugin/lanes/lane.h"
#include "nccl-plugin/lanes/lane_drv.h"
#include "nccl-plugin/nic.h"

struct fqn_lane_tcp {
	struct fqn_lane base;
	int fd;
	/* tx: the chunk in flight */
	int tx_busy;
	uint8_t tx_hdr[FQN_CHUNK_HDR_SIZE];
	const uint8_t *tx_payload;
	size_t tx_len, tx_sent; /* tx_len counts header + payload */
	void *tx_cookie;
	/* rx: staged bytes [rx_off, rx_len) and the current chunk */
	uint8_t *rx_stage;
	size_t rx_off, rx_len;
	size_t rx_peeked; /* staged by MSG_PEEK: still in the kernel's queue */
	int rx_small;     /* the last chunk was small: stage by peeking */
	int rx_big;       /* ... larger than the stage: read the next header alone */
	int rx_have_hdr;
	struct fqn_chunk_hdr rx_hdr;
	int64_t
	    rx_read_rt; /* the kernel's stamp of the last read's last segment (CLOCK_REALTIME ns; 0: none) */
	int64_t rx_hdr_rt;      /* ... of the read that completed the current header */
	struct fq_xstamp rx_xs; /* REALTIME - MONOTONIC_RAW for those stamps, taken each second */
	size_t rx_got;
	/* control records the receiving end sends back: a record's unsent tail */
	uint8_t ctl_tx[FQN_CTRL_SIZE];
	size_t ctl_tx_off, ctl_tx_len;
};

#define TCP(l) ((struct fqn_lane_tcp *)(l))

/* Big enough for a header and a small message in one recv(), small enough
 * that a large payload is mostly received in place, not copied. */
#define FQN_TCP_STAGE 16384
/* Chunks up to this size keep a lane in peek mode (measured: it wins for
 * ping-pong at every size to 8 KiB, for alltoall to 2 KiB). */
#define FQN_TCP_PEEK_MAX 4096

static int tcp_poll_connected(struct fqn_lane *l)
{
	int err = 0;
	socklen_t len = sizeof(err);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (getsockopt(TCP(l)->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		return -errno;
	if (err)
		return -err;
	if (getpeername(TCP(l)->fd, (struct sockaddr *)&ss, &sl) < 0)
		return errno == ENOTCONN ? -EINPROGRESS : -errno;
	sl = sizeof(ss);
	if (getsockname(TCP(l)->fd, (struct sockaddr *)&ss, &sl) == 0)
		fqn_sockaddr_str((struct sockaddr *)&ss, l->local, sizeof(l->local));
	return 0;
}

static int tcp_send_hello(struct fqn_lane *l, const void *buf, size_t len)
{
	struct fqn_lane_tcp *t = TCP(l);
	ssize_t n;

	/* The hello is tiny and goes first on a fresh socket: it fits the send buffer. */
	n = send(t->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n == (ssize_t)len)
		return 0;
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return -EAGAIN;
	return n < 0 ? -errno : -EIO;
}

static int tcp_push(struct fqn_lane_tcp *t)
{
	while (t->tx_sent < t->tx_len) {
		struct iovec iov[2];
		struct msghdr msg = {.msg_iov = iov};
		ssize_t n;

		if (t->tx_sent < FQN_CHUNK_HDR_SIZE) {
			iov[0].iov_base = t->tx_hdr + t->tx_sent;
			iov[0].iov_len = FQN_CHUNK_HDR_SIZE - t->tx_sent;
			iov[1].iov_base = (void *)t->tx_payload;
			iov[1].iov_len = t->tx_len - FQN_CHUNK_HDR_SIZE;
			msg.msg_iovlen = iov[1].iov_len ? 2 : 1;
		} else {
			iov[0].iov_base = (void *)(t->tx_payload + (t->tx_sent - FQN_CHUNK_HDR_SIZE));
			iov[0].iov_len = t->tx_len - t->tx_sent;
			msg.msg_iovlen = 1;
		}
		n = sendmsg(t->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			if (errno == EINTR)
				continue;
			return errno == EPIPE ? -ECONNRESET : -errno;
		}
		t->tx_sent += (size_t)n;
	}
	return 0;
}

static int tcp_tx_chunk(struct fqn_lane *l, const struct fqn_chunk_hdr *h, const void *payload, void *cookie)
{
	struct fqn_lane_tcp *t = TCP(l);

	if (t->tx_busy)
		return -EAGAIN;
	fqn_chunk_hdr_encode(h, t->tx_hdr);
	t->tx_payload = payload;
	t->tx_len = FQN_CHUNK_HDR_SIZE + h->len;
	t->tx_sent = 0;
	t->tx_cookie = cookie;
	t->tx_busy = 1;
	return tcp_push(t);
}

static int tcp_tx_progress(struct fqn_lane *l, void **cookie)
{
	struct fqn_lane_tcp *t = TCP(l);
	int rc;

	if (!t->tx_busy)
		return 0;
	rc = tcp_push(t);
	if (rc < 0)
		return rc;
	if (t->tx_sent < t->tx_len)
		return 0;
	t->tx_busy = 0;
	*cookie = t->tx_cookie;
	return 1;
}

/* The lane's one way to read: first the bytes a previous peek left in the
 * kernel's queue are taken out (MSG_TRUNC, no copy; this is when the
 * kernel ACKs them), then recv() into buf, peeking if asked. Bytes read,
 * 0 for "nothing now", -ECONNRESET on EOF, or a negative errno. */
static ssize_t tcp_recv(struct fqn_lane_tcp *t, void *buf, size_t len, int peek)
{
	while (t->rx_peeked) {
		ssize_t n = recv(t->fd, NULL, t->rx_peeked, MSG_DONTWAIT | MSG_TRUNC);

		if (n > 0)
			t->rx_peeked -= (size_t)n;
		else if (n == 0)
			return -ECONNRESET;
		else if (errno != EINTR)
			return -errno;
	}
	for (;;) {
		union {
			char buf[CMSG_SPACE(sizeof(struct scm_timestamping))];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = {.iov_base = buf, .iov_len = len};
		struct msghdr msg = {.msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = ctl.buf,
				     .msg_controllen = sizeof(ctl.buf)};
		ssize_t n = recvmsg(t->fd, &msg, MSG_DONTWAIT | (peek ? MSG_PEEK : 0));

		if (n > 0) {
			if (peek)
				t->rx_peeked = (size_t)n;
			t->rx_read_rt = 0;
			for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
				if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPING) {
					struct scm_timestamping ts;

					memcpy(&ts, CMSG_DATA(c), sizeof(ts));
					t->rx_read_rt = fq_timespec_to_ns(&ts.ts[0]);
				}
			}
			return n;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		if (errno != EINTR)
			return -errno;
	}
}

static int tcp_rx_header(struct fqn_lane *l, struct fqn_chunk_hdr *h, const char **why)
{
	struct fqn_lane_tcp *t = TCP(l);

	while (!t->rx_have_hdr) {
		ssize_t n;

		if (t->rx_len - t->rx_off >= FQN_CHUNK_HDR_SIZE) {
			if (fqn_chunk_hdr_decode(t->rx_stage + t->rx_off, l->chunk_size, &t->rx_hdr, why) < 0)
				return -EBADMSG;
			t->rx_off += FQN_CHUNK_HDR_SIZE;
			t->rx_have_hdr = 1;
			t->rx_small = t->rx_hdr.len <= FQN_TCP_PEEK_MAX;
			t->rx_big = t->rx_hdr.len > FQN_TCP_STAGE;
			t->rx_got = 0;
			break;
		}
		if (t->rx_off > 0) { /* keep the partial header at the front */
			memmove(t->rx_stage, t->rx_stage + t->rx_off, t->rx_len - t->rx_off);
			t->rx_len -= t->rx_off;
			t->rx_off = 0;
		}
		/* after a large chunk, the header alone: its stamp is then its own */
		n = tcp_recv(t, t->rx_stage + t->rx_len,
			     (t->rx_big ? FQN_CHUNK_HDR_SIZE : FQN_TCP_STAGE) - t->rx_len, t->rx_small);
		if (n <= 0)
			return (int)n;
		t->rx_len += (size_t)n;
		t->rx_hdr_rt = t->rx_read_rt;
	}
	*h = t->rx_hdr;
	return 1;
}

/* The current header's arrival (lane.h): the kernel's stamp of the read
 * that completed it, mapped from CLOCK_REALTIME onto CLOCK_MONOTONIC_RAW
 * by the lane's cross-stamp (common/clock.h, measured again each second:
 * NTP slews the two apart); 0 when there is none, or when it is not a time
 * in the last minute (no stamp the kernel should give). */
static int64_t tcp_rx_stamp(struct fqn_lane *l)
{
	struct fqn_lane_tcp *t = TCP(l);
	int64_t at, now;

	if (!t->rx_have_hdr || !t->rx_hdr_rt)
		return 0;
	now = fq_now_ns();
	if (fq_xstamp_refresh(&t->rx_xs, now, FQ_NSEC_PER_SEC, 4) < 0)
		return 0;
	at = fq_realtime_to_raw(&t->rx_xs, t->rx_hdr_rt);
	return at <= now && at > now - 60 * FQ_NSEC_PER_SEC ? at : 0;
}

static int tcp_rx_payload(struct fqn_lane *l, void *dst)
{
	struct fqn_lane_tcp *t = TCP(l);
	size_t staged = t->rx_len - t->rx_off;

	if (!t->rx_have_hdr)
		return -EPROTO;
	if (staged && t->rx_got < t->rx_hdr.len) {
		size_t take = t->rx_hdr.len - t->rx_got < staged ? t->rx_hdr.len - t->rx_got : staged;

		memcpy((uint8_t *)dst + t->rx_got, t->rx_stage + t->rx_off, take);
		t->rx_off += take;
		t->rx_got += take;
	}
	while (t->rx_got < t->rx_hdr.len) {
		ssize_t n = tcp_recv(t, (uint8_t *)dst + t->rx_got, t->rx_hdr.len - t->rx_got, 0);

		if (n <= 0)
			return (int)n;
		t->rx_got += (size_t)n;
	}
	if (t->rx_off == t->rx_len)
		t->rx_off = t->rx_len = 0;
	t->rx_have_hdr = 0;
	return 1;
}

/* Push the unsent tail of the last control record: 1 when none is left. */
static int tcp_ctl_flush(struct fqn_lane_tcp *t)
{
	while (t->ctl_tx_off < t->ctl_tx_len) {
		ssize_t n = send(t->fd, t->ctl_tx + t->ctl_tx_off, t->ctl_tx_len - t->ctl_tx_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			if (errno == EINTR)
				continue;
			return errno == EPIPE ? -ECONNRESET : -errno;
		}
		t->ctl_tx_off += (size_t)n;
	}
	return 1;
}

/* The receiving end's socket direction towards the sender is otherwise
 * idle: a record goes out whole or stays queued here, never interleaved. */
static int tcp_tx_ctrl(struct fqn_lane *l, const uint8_t rec[FQN_CTRL_SIZE])
{
	struct fqn_lane_tcp *t = TCP(l);
	int rc = tcp_ctl_flush(t);

	if (rc <= 0)
		return rc < 0 ? rc : -EAGAIN;
	memcpy(t->ctl_tx, rec, FQN_CTRL_SIZE);
	t->ctl_tx_off = 0;
	t->ctl_tx_len = FQN_CTRL_SIZE;
	rc = tcp_ctl_flush(t);
	/* queued behind a full socket: nothing else would push it out */
	return rc < 0 ? rc : rc == 0 ? 1 : 0;
}

/* The sending end reads records through its (otherwise unused) staging buffer. */
static int tcp_rx_ctrl(struct fqn_lane *l, uint8_t rec[FQN_CTRL_SIZE])
{
	struct fqn_lane_tcp *t = TCP(l);
	int rc = tcp_ctl_flush(t);

	if (rc < 0)
		return rc;
	if (t->rx_len - t->rx_off < FQN_CTRL_SIZE) {
		ssize_t n;

		memmove(t->rx_stage, t->rx_stage + t->rx_off, t->rx_len - t->rx_off);
		t->rx_len -= t->rx_off;
		t->rx_off = 0;
		n = tcp_recv(t, t->rx_stage + t->rx_len, FQN_TCP_STAGE - t->rx_len, 0);
		if (n < 0)
			return (int)n;
		t->rx_len += (size_t)n;
		if (t->rx_len < FQN_CTRL_SIZE)
			return 0;
	}
	memcpy(rec, t->rx_stage + t->rx_off, FQN_CTRL_SIZE);
	t->rx_off += FQN_CTRL_SIZE;
	return 1;
}

static int tcp_info(struct fqn_lane *l, struct fqn_lane_info *out)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	memset(out, 0, sizeof(*out));
	memset(&ti, 0, sizeof(ti));
	if (getsockopt(TCP(l)->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0)
		return -errno;
	out->rtt_us = ti.tcpi_rtt;
	out->min_rtt_us = ti.tcpi_min_rtt == ~0U ? 0 : ti.tcpi_min_rtt;
	out->retrans = ti.tcpi_total_retrans;
	/* Kernels before 5.x return a shorter struct: no CE count then. */
	out->have_delivered_ce =
	    len >= offsetof(struct tcp_info, tcpi_delivered_ce) + sizeof(ti.tcpi_delivered_ce);
	out->delivered_ce = out->have_delivered_ce ? ti.tcpi_delivered_ce : 0;
	out->idle_rx_ms =
	    ti.tcpi_last_ack_recv < ti.tcpi_last_data_recv ? ti.tcpi_last_ack_recv : ti.tcpi_last_data_recv;
	out->unacked = ti.tcpi_unacked;
	out->bytes_acked = ti.tcpi_bytes_acked;
	out->pacing_rate = ti.tcpi_max_pacing_rate == ~0ULL ? 0 : ti.tcpi_max_pacing_rate;
	return 0;
}

/* The kernel paces a TCP socket itself (since 4.13; no fq qdisc needed):
 * SO_MAX_PACING_RATE caps sk_pacing_rate; ~0 is no cap. 64 bits: a cap
 * above 4 GB/s fits. */
static int tcp_set_rate(struct fqn_lane *l, uint64_t bytes_per_s)
{
	uint64_t v = bytes_per_s ? bytes_per_s : ~0ULL;

	return setsockopt(TCP(l)->fd, SOL_SOCKET, SO_MAX_PACING_RATE, &v, sizeof(v)) < 0 ? -errno : 0;
}

static int tcp_set_tclass(struct fqn_lane *l, int tclass)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd = TCP(l)->fd;

	if (tclass < 0 || tclass > 255)
		return -EINVAL;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
		return -errno;
	if (ss.ss_family == AF_INET6)
		return setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &tclass, sizeof(tclass)) < 0 ? -errno : 0;
	return setsockopt(fd, IPPROTO_IP, IP_TOS, &tclass, sizeof(tclass)) < 0 ? -errno : 0;
}

static void tcp_destroy(struct fqn_lane *l)
{
	if (!l)
		return;
	close(TCP(l)->fd);
	free(TCP(l)->rx_stage);
	free(l);
}

static const struct fqn_lane_ops fqn_lane_tcp_ops = {
    .kind = "tcp",
    .poll_connected = tcp_poll_connected,
    .send_hello = tcp_send_hello,
    .tx_chunk = tcp_tx_chunk,
    .tx_progress = tcp_tx_progress,
    .rx_header = tcp_rx_header,
    .rx_payload = tcp_rx_payload,
    .rx_stamp = tcp_rx_stamp,
    .tx_ctrl = tcp_tx_ctrl,
    .rx_ctrl = tcp_rx_ctrl,
    .info = tcp_info,
    .set_tclass = tcp_set_tclass,
    .set_rate = tcp_set_rate,
    .destroy = tcp_destroy,
};

static int tcp_tune(int fd, int sock_buf, int keepalive_ms)
{
	int one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		return -errno;
	if (keepalive_ms > 0) {
		int s = keepalive_ms < 1000 ? 1 : keepalive_ms / 1000, cnt = 3;

		if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) < 0 ||
		    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &s, sizeof(s)) < 0 ||
		    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &s, sizeof(s)) < 0 ||
		    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt)) < 0)
			return -errno;
	}
	/* Best effort: the kernel caps these at net.core.[rw]mem_max. */
	if (sock_buf > 0) {
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sock_buf, sizeof(sock_buf));
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sock_buf, sizeof(sock_buf));
	}
	return 0;
}

static struct fqn_lane_tcp *tcp_new(int fd)
{
	struct fqn_lane_tcp *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->rx_stage = malloc(FQN_TCP_STAGE);
	if (!t->rx_stage) {
		free(t);
		return NULL;
	}
	t->fd = fd;
	t->rx_small = 1;
	/* Best effort: without stamps the receiver stamps headers as it reads them. */
	setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING,
		   &(int){SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE}, sizeof(int));
	t->base.ops = &fqn_lane_tcp_ops;
	t->base.nic = -1;
	strcpy(t->base.local, "?");
	strcpy(t->base.peer, "?");
	return t;
}

int fqn_lane_tcp_connect(const struct sockaddr *local, const struct sockaddr *remote, int sock_buf,
			 int keepalive_ms, struct fqn_lane **out)
{
	socklen_t alen =
	    remote->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	struct fqn_lane_tcp *t;
	int fd, rc;

	fd = socket(remote->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	rc = tcp_tune(fd, sock_buf, keepalive_ms);
	if (rc < 0)
		goto err_close;
	/* Bind the source address (port 0: a fresh ephemeral port per lane) to pin the rail. */
	if (local && bind(fd, local, alen) < 0) {
		rc = -errno;
		goto err_close;
	}
	if (connect(fd, remote, alen) < 0 && errno != EINPROGRESS) {
		rc = -errno;
		goto err_close;
	}
	t = tcp_new(fd);
	if (!t) {
		rc = -ENOMEM;
		goto err_close;
	}
	fqn_sockaddr_str(remote, t->base.peer, sizeof(t->base.peer));
	*out = &t->base;
	return 0;

err_close:
	close(fd);
	return rc;
}

int fqn_lane_tcp_adopt(int fd, int sock_buf, int keepalive_ms, struct fqn_lane **out)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct fqn_lane_tcp *t;
	int rc;

	rc = tcp_tune(fd, sock_buf, keepalive_ms);
	if (rc < 0)
		goto err_close;
	t = tcp_new(fd);
	if (!t) {
		rc = -ENOMEM;
		goto err_close;
	}
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
		fqn_sockaddr_str((struct sockaddr *)&ss, t->base.peer, sizeof(t->base.peer));
	sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		fqn_sockaddr_str((struct sockaddr *)&ss, t->base.local, sizeof(t->base.local));
	*out = &t->base;
	return 0;

err_close:
	close(fd);
	return rc;
}

static int tcp_dial(const struct fqn_config *cfg, const struct fqn_nic *nics, int nnics, int nic,
		    const struct sockaddr *local, const struct sockaddr *remote, int keepalive_ms,
		    struct fqn_lane **out)
{
	(void)nics, (void)nnics, (void)nic;
	return fqn_lane_tcp_connect(local, remote, cfg->sock_buf_bytes, keepalive_ms, out);
}

static int tcp_accept(const struct fqn_config *cfg, const struct fqn_nic *nics, int nnics, int nic, int fd,
		      size_t chunk_size, int keepalive_ms, const uint8_t *after_hello, struct fqn_lane **out)
{
	(void)nics, (void)nnics, (void)nic, (void)chunk_size, (void)after_hello;
	return fqn_lane_tcp_adopt(fd, cfg->sock_buf_bytes, keepalive_ms, out);
}

/* TCP lanes run on the NICs as found: opening them is finding them. */
static int tcp_open(const struct fqn_config *cfg, struct fqn_nic *nics, int *n, char *err, size_t errlen)
{
	return fqn_nics_discover(cfg->ifaces, nics, n, err, errlen);
}

const struct fqn_lane_driver fqn_lane_driver_tcp = {
    .name = "tcp",
    .label = "TCP",
    .handle_flags = 0,
    .hello_extra = 0,
    .nic_from_address = 0,
    .dial = tcp_dial,
    .accept = tcp_accept,
    .open = tcp_open,
    .close = fqn_nics_release,
};
