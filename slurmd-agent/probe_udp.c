/* probe_udp: UDP probe transport with kernel timestamps (see probe_udp.h). */
#include "slurmd-agent/probe_udp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"

/* Sends awaiting their TX stamp. The kernel loops each sent packet back
 * with its stamp, and the stamp is matched to its send by the packet's
 * bytes: a count of sends (SOF_TIMESTAMPING_OPT_ID) drifts from the
 * kernel's for good after one send that failed having taken a number, as
 * happens when a queue in front of the NIC is full. */
#define UDP_TX_RING  4096
#define UDP_LOOP_MAX 512 /* a looped-back packet: link, IP and UDP headers, then the payload */

struct udp_sent {
	uint64_t hash; /* of the payload */
	uint32_t key;
	uint16_t len;
	uint8_t used;
};

struct udp {
	struct fq_probe_transport base;
	int fd;
	struct in_addr addr;
	uint16_t port;
	uint32_t next_key; /* the key of the next send */
	uint32_t oldest;   /* the oldest send that may still get its stamp */
	struct fq_xstamp xs;
	struct udp_sent sent[UDP_TX_RING];
};

/* FNV-1a */
static uint64_t payload_hash(const uint8_t *b, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

/* The send a looped-back packet (got bytes, the payload last) belongs to:
 * its key, or -1. Stamps come back in the order of the sends, so the
 * search starts at the oldest send still waiting, and the sends it passes
 * over were dropped before the NIC and will have no stamp. */
static int64_t match_sent(struct udp *u, const uint8_t *pkt, size_t got)
{
	if (u->next_key - u->oldest > UDP_TX_RING)
		u->oldest = u->next_key - UDP_TX_RING; /* overwritten */
	for (uint32_t k = u->oldest; k != u->next_key; k++) {
		struct udp_sent *s = &u->sent[k % UDP_TX_RING];

		if (!s->used || s->key != k || got < s->len ||
		    payload_hash(pkt + got - s->len, s->len) != s->hash)
			continue;
		s->used = 0;
		u->oldest = k + 1;
		return k;
	}
	return -1;
}

int fq_probe_udp_nic_ipv4(const char *ifname, uint32_t *out)
{
	struct ifaddrs *ifa, *i;
	int rc = -EADDRNOTAVAIL;

	if (getifaddrs(&ifa) < 0)
		return -errno;
	for (i = ifa; i; i = i->ifa_next) {
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && strcmp(i->ifa_name, ifname) == 0) {
			*out = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
			rc = 0;
			break;
		}
	}
	freeifaddrs(ifa);
	return rc;
}

static int udp_fd(struct fq_probe_transport *t)
{
	return ((struct udp *)t)->fd;
}

static void udp_ready(struct fq_probe_transport *t)
{
	/* Kernel stamps are REALTIME, which NTP slews against RAW by up to
	 * 500 ppm: map them with a cross-stamp taken now, not one from the
	 * last report (a few ppm over a second is microseconds). */
	fq_xstamp_measure(4, &((struct udp *)t)->xs);
}

/* One datagram to `to`; ttl 0: the socket's default TTL. */
static int udp_sendmsg(struct udp *u, const struct fq_peer_addr *to, const uint8_t *buf, size_t len,
		       unsigned ttl, uint32_t *key)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(to->port)};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctrl;
	struct iovec iov = {(void *)buf, len};
	struct msghdr msg = {.msg_name = &sa, .msg_namelen = sizeof(sa), .msg_iov = &iov, .msg_iovlen = 1};

	if (to->kind != FQ_PEER_IPV4)
		return -EAFNOSUPPORT;
	sa.sin_addr.s_addr = to->ipv4;
	if (len > UINT16_MAX)
		return -EMSGSIZE;
	if (ttl) {
		struct cmsghdr *c;
		int v = (int)ttl;

		if (ttl > 255)
			return -EINVAL;
		memset(&ctrl, 0, sizeof(ctrl));
		msg.msg_control = ctrl.buf;
		msg.msg_controllen = sizeof(ctrl.buf);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_IP;
		c->cmsg_type = IP_TTL;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &v, sizeof(v));
	}
	if (sendmsg(u->fd, &msg, 0) < 0)
		return -errno;
	u->sent[u->next_key % UDP_TX_RING] = (struct udp_sent){
	    .hash = payload_hash(buf, len), .key = u->next_key, .len = (uint16_t)len, .used = 1};
	*key = u->next_key++;
	return 0;
}

static int udp_send(struct fq_probe_transport *t, const struct fq_peer_addr *to, const uint8_t *buf,
		    size_t len, uint32_t *key)
{
	return udp_sendmsg((struct udp *)t, to, buf, len, 0, key);
}

static int udp_send_ttl(struct fq_probe_transport *t, const struct fq_peer_addr *to, const uint8_t *buf,
			size_t len, unsigned ttl, uint32_t *key)
{
	return ttl ? udp_sendmsg((struct udp *)t, to, buf, len, ttl, key) : -EINVAL;
}

/* The message's software stamp, or NULL. On the error queue, only one
 * that says it is a timestamp (not an ICMP error). */
static struct timespec *find_stamp(struct msghdr *msg, int errqueue)
{
	struct timespec *ts = NULL;
	int is_stamp = !errqueue;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPING)
			ts = &((struct scm_timestamping *)CMSG_DATA(c))->ts[0];
		else if (c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR)
			is_stamp = ((struct sock_extended_err *)CMSG_DATA(c))->ee_origin ==
				   SO_EE_ORIGIN_TIMESTAMPING;
	}
	return is_stamp ? ts : NULL;
}

static long udp_recv(struct fq_probe_transport *t, uint8_t *buf, size_t cap, struct fq_probe_rx *rx)
{
	struct udp *u = (struct udp *)t;
	char ctrl[512];
	struct sockaddr_in from;
	struct iovec iov = {buf, cap};
	struct msghdr msg = {.msg_name = &from,
			     .msg_namelen = sizeof(from),
			     .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctrl,
			     .msg_controllen = sizeof(ctrl)};
	struct timespec *ts;
	ssize_t len = recvmsg(u->fd, &msg, MSG_DONTWAIT);

	if (len < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	ts = find_stamp(&msg, 0);
	rx->rx_ns = ts ? fq_realtime_to_raw(&u->xs, fq_timespec_to_ns(ts)) : fq_now_ns();
	rx->stamp = ts ? FQ_STAMP_KERNEL : FQ_STAMP_USER;
	memset(&rx->from, 0, sizeof(rx->from));
	if (msg.msg_namelen == sizeof(from) && from.sin_family == AF_INET) {
		rx->from.kind = FQ_PEER_IPV4;
		rx->from.ipv4 = from.sin_addr.s_addr;
		rx->from.port = ntohs(from.sin_port);
	}
	return (long)len;
}

static int udp_tx_stamp(struct fq_probe_transport *t, uint32_t *key, int64_t *tx_ns)
{
	struct udp *u = (struct udp *)t;
	char ctrl[512];
	uint8_t pkt[UDP_LOOP_MAX];
	struct iovec iov = {pkt, sizeof(pkt)};
	struct msghdr msg = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctrl, .msg_controllen = sizeof(ctrl)};
	struct timespec *ts;
	ssize_t got = recvmsg(u->fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT);
	int64_t k;

	if (got < 0)
		return 0;
	ts = find_stamp(&msg, 1);
	if (!ts || (msg.msg_flags & MSG_TRUNC) || (k = match_sent(u, pkt, (size_t)got)) < 0)
		return -ENODATA;
	*key = (uint32_t)k;
	*tx_ns = fq_realtime_to_raw(&u->xs, fq_timespec_to_ns(ts));
	return 1;
}

static int udp_local_addr(struct fq_probe_transport *t, struct fq_peer_addr *out)
{
	struct udp *u = (struct udp *)t;

	memset(out, 0, sizeof(*out));
	out->kind = FQ_PEER_IPV4;
	out->ipv4 = u->addr.s_addr;
	out->port = u->port;
	return 0;
}

static void udp_destroy(struct fq_probe_transport *t)
{
	struct udp *u = (struct udp *)t;

	if (!u)
		return;
	close(u->fd);
	free(u);
}

static const struct fq_probe_transport_ops udp_ops = {
    .fd = udp_fd,
    .ready = udp_ready,
    .send = udp_send,
    .send_ttl = udp_send_ttl,
    .recv = udp_recv,
    .tx_stamp = udp_tx_stamp,
    .local_addr = udp_local_addr,
    .destroy = udp_destroy,
};

int fq_probe_udp_open(const char *ifname, uint16_t port, struct fq_probe_transport **out)
{
	struct udp *u;
	struct sockaddr_in sa = {.sin_family = AF_INET};
	int rc;
	unsigned flags =
	    SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;

	if (strlen(ifname) >= IF_NAMESIZE)
		return -EINVAL;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	rc = fq_probe_udp_nic_ipv4(ifname, &u->addr.s_addr);
	if (rc < 0) {
		fq_error("NIC %s: no IPv4 address: %s", ifname, strerror(-rc));
		goto free_u;
	}
	u->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (u->fd < 0) {
		rc = -errno;
		goto free_u;
	}
	sa.sin_addr = u->addr;
	sa.sin_port = htons(port);
	/* No IP_RECVERR: with it, every ICMP error about a send (a router
	 * answering a path trace's TTL, a host with no agent answering
	 * port-unreachable) is also left pending on the socket until its
	 * error queue is read, and fails a send made before then: a trace's
	 * packets, sent back to back, failed after the first answer. Path
	 * traces read routers' answers on a raw socket of their own
	 * (tracer.h). */
	if (setsockopt(u->fd, SOL_SOCKET, SO_BINDTODEVICE, ifname, (socklen_t)strlen(ifname)) < 0 ||
	    setsockopt(u->fd, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof(flags)) < 0 ||
	    bind(u->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
		fq_error("NIC %s: probe socket on %s:%u: %s", ifname, inet_ntoa(u->addr), port,
			 strerror(errno));
		goto close_fd;
	}
	u->port = port;
	fq_xstamp_measure(16, &u->xs);
	u->base.ops = &udp_ops;
	u->base.kind = "udp";
	u->base.peer_kind = FQ_PEER_IPV4;
	u->base.rx_stamps = FQ_STAMP_KERNEL;
	u->base.tx_stamps = FQ_STAMP_KERNEL;
	snprintf(u->base.nic, sizeof(u->base.nic), "%s", ifname);
	*out = &u->base;
	return 0;

close_fd:
	close(u->fd);
free_u:
	free(u);
	return rc;
}
