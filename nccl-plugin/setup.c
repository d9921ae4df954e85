/*
 * setup: listen, connect and accept, none of which blocks.
 *
 * listen() opens one listening socket per local NIC (the requested device
 * first, up to FQN_HANDLE_ADDRS) and writes their addresses and a random
 * token into the handle. connect() opens FABRICIQ_LANES lanes: lane i goes
 * to the listener's address i % naddr from the local NIC on the same subnet
 * (same rail), each from its own ephemeral source port, and sends a hello
 * {lane, nlanes, chunk size, token, connection id}. accept() takes incoming
 * sockets, reads their hellos, groups them by connection id and returns a
 * receive comm once every lane of one connection has arrived. A socket
 * whose hello has not arrived FABRICIQ_HELLO_TIMEOUT_MS after it was
 * accepted is closed (hello.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nccl-plugin/conn.h"
#include "nccl-plugin/ib_dev.h"
#include "nccl-plugin/ib_lane.h"
#include "nccl-plugin/plog.h"
#include "nccl-plugin/rejoin.h"
#include "nccl-plugin/telemetry.h"

#define FQN_GROUPS_MAX 8

struct fqn_group {
	uint64_t conn_id;
	int nlanes, have;
	int control;
	size_t chunk_size;
	uint32_t rank1; /* the connector's rank + 1 */
	struct fqn_lane *lanes[FQN_MAX_LANES];
};

struct fqn_listen {
	int dev;
	int nfds;
	int fds[FQN_HANDLE_ADDRS];
	uint64_t token;
	struct fqn_hello_wait hello; /* accepted sockets until their hello is in */
	struct fqn_group groups[FQN_GROUPS_MAX];
};

struct fqn_connecting {
	int nlanes;
	int control; /* both ends in control mode */
	uint64_t conn_id;
	struct sockaddr_storage bind[FQN_MAX_LANES], rejoin[FQN_MAX_LANES];
	int can_rejoin[FQN_MAX_LANES];
	struct fqn_lane *lanes[FQN_MAX_LANES];
	int ready[FQN_MAX_LANES];
};

static uint64_t random64(void)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
		v = (uint64_t)fqn_clock_now(&(int){0}) * 0x9e3779b97f4a7c15ULL ^ (uint64_t)getpid();
	return v;
}

static void addr_to_handle(const struct sockaddr_storage *ss, struct fqn_handle_addr *a)
{
	memset(a, 0, sizeof(*a));
	a->family = (uint8_t)ss->ss_family;
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)ss;
		a->port = s->sin_port;
		memcpy(a->addr, &s->sin_addr, 4);
	} else {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)ss;
		a->port = s->sin6_port;
		memcpy(a->addr, &s->sin6_addr, 16);
	}
}

static int handle_to_addr(const struct fqn_handle_addr *a, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (a->family == AF_INET) {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;
		s->sin_family = AF_INET;
		s->sin_port = a->port;
		memcpy(&s->sin_addr, a->addr, 4);
		return 0;
	}
	if (a->family == AF_INET6) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;
		s->sin6_family = AF_INET6;
		s->sin6_port = a->port;
		memcpy(&s->sin6_addr, a->addr, 16);
		return 0;
	}
	return -EPROTO;
}

int fqn_listen_on(const struct fqn_nic *nic, struct sockaddr_storage *bound)
{
	socklen_t len = sizeof(*bound);
	int fd, rc, one = 1;

	fd = socket(nic->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memcpy(bound, &nic->addr, sizeof(*bound));
	if (bind(fd, (struct sockaddr *)bound,
		 nic->addr.ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6)) <
		0 ||
	    listen(fd, 128) < 0 || getsockname(fd, (struct sockaddr *)bound, &len) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

int fqn_listen(int dev, void *handle, struct fqn_listen **out)
{
	struct fqn_handle *h = handle;
	struct fqn_listen *l;
	char abuf[64];
	int n = fqn_g->nnics;

	*out = NULL;
	if (dev < 0 || dev >= n || !handle)
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	memset(h, 0, NCCL_NET_HANDLE_MAXSIZE);
	l->dev = dev;
	l->token = random64();
	snprintf(abuf, sizeof(abuf), "listener on device %d", dev);
	fqn_hello_wait_init(&l->hello, abuf);
	for (int k = 0; k < n && l->nfds < FQN_HANDLE_ADDRS; k++) {
		const struct fqn_nic *nic = &fqn_g->nics[(dev + k) % n];
		struct sockaddr_storage bound;
		int fd = fqn_listen_on(nic, &bound);

		if (fd < 0) {
			/* The requested device must work; other rails are a bonus. */
			FQN_WARN("listen on %s (%s): %s", nic->name,
				 fqn_sockaddr_str((struct sockaddr *)&nic->addr, abuf, sizeof(abuf)),
				 strerror(-fd));
			if (k == 0) {
				free(l);
				return fd;
			}
			continue;
		}
		addr_to_handle(&bound, &h->addr[l->nfds]);
		if (fqn_g->cfg.control &&
		    fqn_rejoin_port(fqn_g->rejoin, (dev + k) % n, &h->rejoin_port[l->nfds]) < 0)
			h->rejoin_port[l->nfds] = 0; /* that rail's lanes fail over but cannot come back */
		l->fds[l->nfds++] = fd;
	}
	h->flags = fqn_g->cfg.control ? FQN_HANDLE_F_CONTROL : 0;
	if (fqn_transport_is_ib())
		h->flags |= FQIB_HANDLE_F_IB;
	h->magic = FQN_HANDLE_MAGIC;
	h->naddr = (uint8_t)l->nfds;
	h->token = l->token;
	h->rank1 = fqn_g->rank1;
	h->stage = NULL;
	*out = l;
	return 0;
}

static void connecting_free(struct fqn_connecting *st)
{
	for (int i = 0; i < st->nlanes; i++)
		if (st->lanes[i])
			st->lanes[i]->ops->destroy(st->lanes[i]);
	free(st);
}

/* The local NIC on remote's subnet, preferring rail (dev + i); -1 if none. */
static int pick_nic(int dev, int i, const struct sockaddr *remote)
{
	int n = fqn_g->nnics;

	for (int k = 0; k < n; k++) {
		int cand = (dev + i + k) % n;
		if (fqn_nic_same_subnet(&fqn_g->nics[cand], remote))
			return cand;
	}
	return -1;
}

static int connect_start(int dev, const struct fqn_handle *h, struct fqn_connecting **out)
{
	struct fqn_connecting *st;
	int rc;

	if (h->magic != FQN_HANDLE_MAGIC || h->naddr < 1 || h->naddr > FQN_HANDLE_ADDRS)
		return -EINVAL;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	if (!!(h->flags & FQIB_HANDLE_F_IB) != fqn_transport_is_ib()) {
		FQN_WARN(
		    "connect: the listener uses %s lanes, this process %s; set the same FABRICIQ_TRANSPORT "
		    "on every rank",
		    h->flags & FQIB_HANDLE_F_IB ? "ib" : "tcp", fqn_transport_is_ib() ? "ib" : "tcp");
		free(st);
		return -EPROTO;
	}
	st->nlanes = fqn_g->cfg.lanes;
	st->conn_id = random64();
	st->control = fqn_g->cfg.control && (h->flags & FQN_HANDLE_F_CONTROL);
	if (fqn_g->cfg.control && !st->control)
		FQN_WARN("connection %llx: the listener is not in control mode; this connection runs "
			 "without failover",
			 (unsigned long long)st->conn_id);
	for (int i = 0; i < st->nlanes; i++) {
		struct sockaddr_storage remote, local;
		int nic;

		rc = handle_to_addr(&h->addr[i % h->naddr], &remote);
		if (rc < 0)
			goto err;
		nic = pick_nic(dev, i, (struct sockaddr *)&remote);
		if (nic >= 0)
			memcpy(&local, &fqn_g->nics[nic].addr, sizeof(local)); /* port 0 */
		if (st->control) {
			if (nic >= 0)
				memcpy(&st->bind[i], &local, sizeof(local));
			memcpy(&st->rejoin[i], &remote, sizeof(remote));
			/* the same address, the rejoin listener's port */
			if (remote.ss_family == AF_INET)
				((struct sockaddr_in *)&st->rejoin[i])->sin_port =
				    h->rejoin_port[i % h->naddr];
			else
				((struct sockaddr_in6 *)&st->rejoin[i])->sin6_port =
				    h->rejoin_port[i % h->naddr];
			st->can_rejoin[i] = h->rejoin_port[i % h->naddr] != 0;
		}
		rc = fqn_lane_dial(nic >= 0 ? nic : dev, nic >= 0 ? (struct sockaddr *)&local : NULL,
				   (struct sockaddr *)&remote, st->control ? fqn_g->cfg.lane_timeout_ms : 0,
				   &st->lanes[i]);
		if (rc < 0) {
			char abuf[64];
			FQN_WARN("connect lane %d to %s: %s", i,
				 fqn_sockaddr_str((struct sockaddr *)&remote, abuf, sizeof(abuf)),
				 strerror(-rc));
			goto err;
		}
		st->lanes[i]->index = i;
		st->lanes[i]->nic = nic;
		st->lanes[i]->chunk_size = fqn_g->cfg.chunk_size;
	}
	*out = st;
	return 0;

err:
	connecting_free(st);
	return rc;
}

/* An IB lane whose two ends cannot form a QP (IB vs RoCE, RoCE v1 vs v2,
 * ring sizes): a lane failure with cause "config" for the agent, beside
 * the lane's WARN naming both ends. */
static void ib_config_event(const struct fqn_connecting *st, int i, const struct fqn_lane *l)
{
	struct fqn_lane_sample *s;
	int sync;

	if (!fqn_g->telemetry)
		return;
	s = calloc(1, sizeof(*s)); /* large (its histogram); once per failed connect */
	if (!s)
		return;
	s->event = 1;
	snprintf(s->cause, sizeof(s->cause), "config");
	s->conn_id = st->conn_id;
	s->lane = i;
	s->to_lane = -1;
	s->is_send = 1;
	s->rank1 = fqn_g->rank1;
	snprintf(s->kind, sizeof(s->kind), "ib");
	if (l->nic >= 0 && l->nic < fqn_g->nnics)
		snprintf(s->nic, sizeof(s->nic), "%s", fqn_g->nics[l->nic].name);
	memcpy(s->local, l->local, sizeof(s->local));
	memcpy(s->peer, l->peer, sizeof(s->peer));
	s->start_ns = fqn_clock_now(&sync);
	s->synchronised = sync;
	fqn_telemetry_push(fqn_g->telemetry, s);
	free(s);
}

static int connect_poll(struct fqn_connecting *st, uint64_t token)
{
	int pending = 0;

	for (int i = 0; i < st->nlanes; i++) {
		struct fqn_lane *l = st->lanes[i];
		struct fqn_hello hello = {(uint16_t)i,
					  (uint16_t)st->nlanes,
					  (uint16_t)(st->control ? FQN_HELLO_F_CONTROL : 0),
					  (uint32_t)l->chunk_size,
					  token,
					  st->conn_id,
					  fqn_g->rank1};
		uint8_t buf[FQN_HELLO_SIZE];
		int rc;

		if (st->ready[i])
			continue;
		rc = l->ops->poll_connected(l);
		if (rc == 0) {
			fqn_hello_encode(&hello, buf);
			rc = l->ops->send_hello(l, buf, sizeof(buf));
		}
		if (rc == -EINPROGRESS || rc == -EAGAIN) {
			pending++;
			continue;
		}
		if (rc < 0) {
			FQN_WARN("connect lane %d (%s -> %s): %s", i, l->local, l->peer, strerror(-rc));
			if (rc == -EPROTO && strcmp(l->ops->kind, "ib") == 0)
				ib_config_event(st, i, l);
			return rc;
		}
		st->ready[i] = 1;
	}
	return pending;
}

int fqn_connect(int dev, void *handle, struct fqn_send **out)
{
	struct fqn_handle *h = handle;
	int rc;

	*out = NULL;
	if (dev < 0 || dev >= fqn_g->nnics || !handle)
		return -EINVAL;
	if (!h->stage) {
		rc = connect_start(dev, h, &h->stage);
		if (rc < 0)
			return rc;
	}
	rc = connect_poll(h->stage, h->token);
	if (rc > 0)
		return 0;
	if (rc == 0)
		rc = fqn_send_from_lanes(dev, h->stage->lanes, h->stage->nlanes, fqn_g->cfg.chunk_size,
					 h->stage->conn_id, out);
	if (rc == 0 && h->stage->control) {
		rc = fqn_send_enable_control(*out, h->token, h->stage->bind, h->stage->rejoin,
					     h->stage->can_rejoin);
		if (rc < 0) {
			fqn_close_send(*out); /* closes the lanes */
			*out = NULL;
			free(h->stage);
			h->stage = NULL;
			return rc;
		}
	}
	if (rc == 0) {
		fqn_send_set_peer_rank(*out, h->rank1);
		free(h->stage); /* the lanes now belong to the comm */
	} else {
		connecting_free(h->stage);
	}
	h->stage = NULL;
	return rc;
}

static void listen_take_new(struct fqn_listen *l)
{
	for (int i = 0; i < l->nfds; i++) {
		for (;;) {
			int fd = accept4(l->fds[i], NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

			if (fd < 0)
				break;
			fqn_hello_wait_add(&l->hello, fd, i, fqn_mono_ns(),
					   (int64_t)fqn_g->cfg.hello_timeout_ms * 1000000);
		}
	}
}

/* The NIC whose address a is (an IB lane's QP goes on that NIC's verbs
 * port); dflt if none matches. */
static int nic_of_addr(const struct sockaddr_storage *a0, int dflt)
{
	for (int i = 0; i < fqn_g->nnics; i++) {
		const struct sockaddr_storage *a = &fqn_g->nics[i].addr;

		if (a->ss_family == AF_INET && a0->ss_family == AF_INET &&
		    ((struct sockaddr_in *)a)->sin_addr.s_addr ==
			((const struct sockaddr_in *)a0)->sin_addr.s_addr)
			return i;
		if (a->ss_family == AF_INET6 && a0->ss_family == AF_INET6 &&
		    memcmp(&((struct sockaddr_in6 *)a)->sin6_addr,
			   &((const struct sockaddr_in6 *)a0)->sin6_addr, 16) == 0)
			return i;
	}
	return dflt;
}

size_t fqn_lane_hello_size(void)
{
	return FQN_HELLO_SIZE + (fqn_transport_is_ib() ? FQIB_HANDLE_SIZE : 0);
}

int fqn_lane_dial(int nic, const struct sockaddr *local, const struct sockaddr *remote, int keepalive_ms,
		  struct fqn_lane **out)
{
	if (!fqn_transport_is_ib())
		return fqn_lane_tcp_connect(local, remote, fqn_g->cfg.sock_buf_bytes, keepalive_ms, out);
	if (local)
		nic = nic_of_addr((const struct sockaddr_storage *)local, nic);
	/* the TCP connection becomes the QP's side channel */
	return fqn_lane_ib_connect(nic, local, remote, fqn_g->cfg.chunk_size, out);
}

int fqn_lane_accepted(int nic, int fd, size_t chunk_size, int keepalive_ms, const uint8_t *after_hello,
		      struct fqn_lane **out)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (!fqn_transport_is_ib())
		return fqn_lane_tcp_adopt(fd, fqn_g->cfg.sock_buf_bytes, keepalive_ms, out);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		nic = nic_of_addr(&ss, nic);
	return fqn_lane_ib_adopt(nic, fd, chunk_size, after_hello, out);
}

/* Adopt a socket whose hello arrived into its connection's group. Returns
 * the group's index if now complete, -1 otherwise. */
static int group_add(struct fqn_listen *l, int fd, const struct fqn_hello *h, const uint8_t *ib_handle)
{
	struct fqn_group *g = NULL;
	struct fqn_lane *lane;

	int gi;

	for (gi = 0; gi < FQN_GROUPS_MAX && !g; gi++)
		if (l->groups[gi].nlanes && l->groups[gi].conn_id == h->conn_id)
			g = &l->groups[gi];
	for (gi = 0; gi < FQN_GROUPS_MAX && !g; gi++)
		if (!l->groups[gi].nlanes) {
			g = &l->groups[gi];
			*g = (struct fqn_group){.conn_id = h->conn_id,
						.nlanes = h->nlanes,
						.chunk_size = h->chunk_size,
						.control = !!(h->flags & FQN_HELLO_F_CONTROL),
						.rank1 = h->rank1};
		}
	if (!g || g->nlanes != h->nlanes || g->chunk_size != h->chunk_size || g->lanes[h->lane] ||
	    g->control != !!(h->flags & FQN_HELLO_F_CONTROL) || (h->flags & FQN_HELLO_F_REJOIN) ||
	    (g->control && !fqn_g->cfg.control)) {
		FQN_WARN(
		    "listener on device %d: inconsistent or excess lane hello (connection %llx lane %u); "
		    "dropping it",
		    l->dev, (unsigned long long)h->conn_id, h->lane);
		close(fd);
		return -1;
	}
	if (fqn_lane_accepted(l->dev, fd, h->chunk_size, g->control ? fqn_g->cfg.lane_timeout_ms : 0,
			      ib_handle, &lane) < 0)
		return -1;
	lane->index = h->lane;
	if (!fqn_transport_is_ib()) /* an IB lane knows its NIC (its QP's port) */
		lane->nic = l->dev;
	lane->chunk_size = h->chunk_size;
	g->lanes[h->lane] = lane;
	g->have++;
	return g->have == g->nlanes ? (int)(g - l->groups) : -1;
}

static int listen_read_hellos(struct fqn_listen *l)
{
	struct fqn_hello_slot p;

	while (fqn_hello_wait_next(&l->hello, fqn_lane_hello_size(), fqn_mono_ns(),
				   (int64_t)fqn_g->cfg.hello_timeout_ms * 1000000, &p) == 1) {
		struct fqn_hello h;
		int done;

		if (fqn_hello_decode(p.buf, &h) < 0 || h.token != l->token) {
			FQN_WARN("listener on device %d: dropping a connection with a bad hello", l->dev);
			close(p.fd);
			continue;
		}
		done = group_add(l, p.fd, &h, p.buf + FQN_HELLO_SIZE);
		if (done >= 0)
			return done;
	}
	return -1;
}

int fqn_accept(struct fqn_listen *l, struct fqn_recv **out)
{
	struct fqn_group *g;
	int gi, rc;

	*out = NULL;
	listen_take_new(l);
	gi = listen_read_hellos(l);
	if (gi < 0)
		return 0;
	g = &l->groups[gi];
	rc = fqn_recv_from_lanes(l->dev, g->lanes, g->nlanes, g->chunk_size, g->conn_id, out);
	if (rc < 0)
		for (int i = 0; i < g->nlanes; i++)
			g->lanes[i]->ops->destroy(g->lanes[i]);
	if (rc == 0)
		fqn_recv_set_peer_rank(*out, g->rank1);
	if (rc == 0 && g->control) {
		rc = fqn_recv_enable_control(*out, l->token);
		if (rc < 0) {
			fqn_close_recv(*out);
			*out = NULL;
		}
	}
	memset(g, 0, sizeof(*g));
	return rc;
}

int fqn_close_listen(struct fqn_listen *l)
{
	if (!l)
		return 0;
	for (int i = 0; i < l->nfds; i++)
		close(l->fds[i]);
	fqn_hello_wait_close(&l->hello);
	for (int gi = 0; gi < FQN_GROUPS_MAX; gi++)
		for (int i = 0; i < FQN_MAX_LANES; i++)
			if (l->groups[gi].lanes[i])
				l->groups[gi].lanes[i]->ops->destroy(l->groups[gi].lanes[i]);
	free(l);
	return 0;
}
