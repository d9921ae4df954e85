/*
 * setup: listen, connect and accept, none of which blocks.
 *
 * listen() opens one listening socket per local NIC (the requested device
 * first, up to FQN_HANDLE_ADDRS) and writes their addresses and a random
 * token into the handle. connect() opens FABRICIQ_LANES lanes: lane i goes
 * to the listener's address i % naddr from the local NIC on the same subnet
 * (same rail), each from its own ephemeral source port. Once every lane
 * has connected, failed, or not connected within FABRICIQ_LANE_TIMEOUT_MS,
 * each connected lane sends a hello {lane, nlanes, chunk size, token,
 * connection id, rank, present: the set that connected}, and the send comm
 * starts on them: a lane down at setup costs the connection that lane
 * (re-dialed in control mode, see send.c), not its start. With none
 * connected, all are dialed again until FABRICIQ_FAILOVER_GRACE_MS, then
 * connect() fails with a WARN naming each lane's ends and error. accept()
 * takes incoming sockets, reads their hellos, groups them by connection id
 * and returns a receive comm once the present lanes of one connection have
 * arrived (the absent ones NULL). A socket whose hello has not arrived
 * FABRICIQ_HELLO_TIMEOUT_MS after it was accepted is closed (hello.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "nccl-plugin/core/comm.h"
#include "nccl-plugin/core/ctx.h"
#include "nccl-plugin/core/recv.h"
#include "nccl-plugin/core/rejoin.h"
#include "nccl-plugin/core/send.h"
#include "nccl-plugin/core/setup.h"
#include "nccl-plugin/core/wire.h"
#include "nccl-plugin/hello.h"
#include "nccl-plugin/lanes/lane_drv.h"
#include "nccl-plugin/plog.h"
#include "nccl-plugin/telemetry/event.h"

#define FQN_GROUPS_MAX 8

struct fqn_group {
	uint64_t conn_id;
	int nlanes, have;
	uint16_t present; /* the lanes the connector sends (its hellos say) */
	int control;
	size_t chunk_size;
	uint32_t rank1; /* the connector's rank + 1 */
	struct fqn_lane *lanes[FQN_MAX_LANES];
};

struct fqn_listen {
	struct fqn_ctx *ctx;
	int dev;
	int nfds;
	int fds[FQN_HANDLE_ADDRS];
	uint64_t token;
	struct fqn_hello_wait hello; /* accepted sockets until their hello is in */
	struct fqn_group groups[FQN_GROUPS_MAX];
};

/* A connect in progress. Every lane is dialed (DIALING) until it has
 * connected (CONNECTED), failed, or not connected within
 * FABRICIQ_LANE_TIMEOUT_MS (FAILED); once none is dialing, the connected
 * ones send their hellos naming that set (present). No lane connected: all
 * are dialed again every SETUP_RETRY_MS until FABRICIQ_FAILOVER_GRACE_MS
 * after the start, then the connect fails. */
enum setup_lane_state {
	SL_DIALING = 0,
	SL_CONNECTED,
	SL_FAILED,
	SL_READY /* hello out */
};

struct fqn_connecting {
	struct fqn_ctx *ctx;
	int nlanes;
	int control; /* both ends in control mode */
	uint64_t conn_id;
	uint16_t present; /* 0 until the hellos start */
	int64_t start_ns, retry_ns;
	struct sockaddr_storage remote[FQN_MAX_LANES], bind[FQN_MAX_LANES], rejoin[FQN_MAX_LANES];
	int nic[FQN_MAX_LANES];
	int can_rejoin[FQN_MAX_LANES];
	struct fqn_lane *lanes[FQN_MAX_LANES];
	enum setup_lane_state state[FQN_MAX_LANES];
	int err[FQN_MAX_LANES];         /* why it failed */
	int64_t dial_ns[FQN_MAX_LANES]; /* its current dial began */
	int64_t fail_ns[FQN_MAX_LANES]; /* its first failure */
};

#define SETUP_RETRY_MS 250

static uint64_t random64(const struct fqn_ctx *ctx)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
		v = (uint64_t)fqn_clock_now(ctx, &(int){0}) * 0x9e3779b97f4a7c15ULL ^ (uint64_t)getpid();
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

int fqn_setup_listen(struct fqn_ctx *ctx, int dev, void *handle, struct fqn_listen **out)
{
	struct fqn_handle *h = handle;
	struct fqn_listen *l;
	char abuf[64];
	int n = ctx->nnics;

	*out = NULL;
	if (dev < 0 || dev >= n || !handle)
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	memset(h, 0, NCCL_NET_HANDLE_MAXSIZE);
	l->ctx = ctx;
	l->dev = dev;
	l->token = random64(ctx);
	snprintf(abuf, sizeof(abuf), "listener on device %d", dev);
	fqn_hello_wait_init(&l->hello, abuf);
	for (int k = 0; k < n && l->nfds < FQN_HANDLE_ADDRS; k++) {
		const struct fqn_nic *nic = &ctx->nics[(dev + k) % n];
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
		if (ctx->cfg.control &&
		    fqn_rejoin_port(ctx->rejoin, (dev + k) % n, &h->rejoin_port[l->nfds]) < 0)
			h->rejoin_port[l->nfds] = 0; /* that rail's lanes fail over but cannot come back */
		l->fds[l->nfds++] = fd;
	}
	h->flags = ctx->cfg.control ? FQN_HANDLE_F_CONTROL : 0;
	h->flags |= ctx->drv->handle_flags;
	h->magic = FQN_HANDLE_MAGIC;
	h->naddr = (uint8_t)l->nfds;
	h->token = l->token;
	h->rank1 = ctx->rank1;
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
static int pick_nic(const struct fqn_ctx *ctx, int dev, int i, const struct sockaddr *remote)
{
	int n = ctx->nnics;

	for (int k = 0; k < n; k++) {
		int cand = (dev + i + k) % n;
		if (fqn_nic_same_subnet(&ctx->nics[cand], remote))
			return cand;
	}
	return -1;
}

/* Lane i's dial failed (err) or timed out: drop it; it stays FAILED
 * until all lanes are dialed again (none connected) or the connection
 * starts without it. */
static void lane_failed(struct fqn_connecting *st, int i, int err, int64_t now)
{
	if (st->lanes[i])
		st->lanes[i]->ops->destroy(st->lanes[i]);
	st->lanes[i] = NULL;
	st->state[i] = SL_FAILED;
	st->err[i] = err;
	if (!st->fail_ns[i])
		st->fail_ns[i] = now;
}

/* Dial lane i (again). */
static void dial_lane(struct fqn_connecting *st, int dev, int i, int64_t now)
{
	const struct fqn_ctx *ctx = st->ctx;
	int nic = st->nic[i];
	int rc;

	if (st->lanes[i])
		st->lanes[i]->ops->destroy(st->lanes[i]);
	st->lanes[i] = NULL;
	st->state[i] = SL_DIALING;
	st->dial_ns[i] = now;
	rc = fqn_lane_dial(ctx, nic >= 0 ? nic : dev, nic >= 0 ? (struct sockaddr *)&st->bind[i] : NULL,
			   (struct sockaddr *)&st->remote[i], st->control ? ctx->cfg.lane_timeout_ms : 0,
			   &st->lanes[i]);
	if (rc < 0) { /* no route: the local rail is down */
		st->lanes[i] = NULL;
		lane_failed(st, i, rc, now);
		return;
	}
	st->lanes[i]->index = i;
	st->lanes[i]->nic = nic;
	st->lanes[i]->chunk_size = ctx->cfg.chunk_size;
}

static int connect_start(struct fqn_ctx *ctx, int dev, const struct fqn_handle *h,
			 struct fqn_connecting **out)
{
	struct fqn_connecting *st;
	int rc;

	if (h->magic != FQN_HANDLE_MAGIC || h->naddr < 1 || h->naddr > FQN_HANDLE_ADDRS)
		return -EINVAL;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	if (fqn_lane_driver_of(h->flags) != ctx->drv) {
		FQN_WARN(
		    "connect: the listener uses %s lanes, this process %s; set the same FABRICIQ_TRANSPORT "
		    "on every rank",
		    fqn_lane_driver_of(h->flags)->name, ctx->drv->name);
		free(st);
		return -EPROTO;
	}
	st->ctx = ctx;
	st->nlanes = ctx->cfg.lanes;
	st->conn_id = random64(ctx);
	st->control = ctx->cfg.control && (h->flags & FQN_HANDLE_F_CONTROL);
	st->start_ns = fq_clock_ns(CLOCK_MONOTONIC);
	if (ctx->cfg.control && !st->control)
		FQN_WARN("connection %llx: the listener is not in control mode; this connection runs "
			 "without failover",
			 (unsigned long long)st->conn_id);
	for (int i = 0; i < st->nlanes; i++) {
		struct sockaddr_storage *remote = &st->remote[i];

		rc = handle_to_addr(&h->addr[i % h->naddr], remote);
		if (rc < 0) {
			connecting_free(st);
			return rc;
		}
		st->nic[i] = pick_nic(ctx, dev, i, (struct sockaddr *)remote);
		if (st->nic[i] >= 0)
			memcpy(&st->bind[i], &ctx->nics[st->nic[i]].addr, sizeof(st->bind[i])); /* port 0 */
		if (st->control) {
			/* the same address, the rejoin listener's port */
			memcpy(&st->rejoin[i], remote, sizeof(*remote));
			if (remote->ss_family == AF_INET)
				((struct sockaddr_in *)&st->rejoin[i])->sin_port =
				    h->rejoin_port[i % h->naddr];
			else
				((struct sockaddr_in6 *)&st->rejoin[i])->sin6_port =
				    h->rejoin_port[i % h->naddr];
			st->can_rejoin[i] = h->rejoin_port[i % h->naddr] != 0;
		}
		dial_lane(st, dev, i, st->start_ns);
	}
	*out = st;
	return 0;
}

/* A lane whose two ends cannot form it (its send_hello's -EPROTO, lane.h:
 * an IB lane's IB vs RoCE, RoCE v1 vs v2, ring sizes): a lane failure with
 * cause "config" for the agent, beside the lane's WARN naming both ends. */
static void config_event(const struct fqn_connecting *st, int i, const struct fqn_lane *l)
{
	const struct fqn_ctx *ctx = st->ctx;

	fqn_ctx_event(
	    ctx, &(struct fqn_event){.cause = "config",
				     .conn_id = st->conn_id,
				     .lane = i,
				     .to_lane = -1,
				     .is_send = 1,
				     .kind = l->ops->kind,
				     .nic = l->nic >= 0 && l->nic < ctx->nnics ? ctx->nics[l->nic].name : "",
				     .local = l->local,
				     .peer = l->peer,
				     .at_ns = fq_clock_ns(CLOCK_MONOTONIC)});
}

/* Lane i's two ends before it connected: its local NIC (-1: none known)
 * and "ADDR" (the bound NIC's, or for a routed lane the source address
 * the kernel's route to the peer picks; "?" with no route), and
 * "ADDR:PORT". */
static int lane_ends(const struct fqn_connecting *st, int i, char *local, char *peer, size_t len)
{
	struct sockaddr_storage src = st->bind[i];
	socklen_t sl = sizeof(src);
	int nic = st->nic[i], fd;
	char host[64] = "?";

	if (nic < 0) { /* a UDP connect looks the route up and sends nothing */
		fd = socket(st->remote[i].ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 &&
		    connect(fd, (const struct sockaddr *)&st->remote[i], sizeof(st->remote[i])) == 0 &&
		    getsockname(fd, (struct sockaddr *)&src, &sl) == 0)
			nic = fqn_nic_of_addr(st->ctx->nics, st->ctx->nnics, &src, -1);
		if (fd >= 0)
			close(fd);
	}
	if (src.ss_family == AF_INET || src.ss_family == AF_INET6)
		inet_ntop(src.ss_family,
			  src.ss_family == AF_INET
			      ? (const void *)&((const struct sockaddr_in *)&src)->sin_addr
			      : (const void *)&((const struct sockaddr_in6 *)&src)->sin6_addr,
			  host, sizeof(host));
	snprintf(local, len, "%s", host);
	fqn_sockaddr_str((const struct sockaddr *)&st->remote[i], peer, len);
	return nic;
}

/* No lane connected: all are dialed again every SETUP_RETRY_MS; past the
 * grace time the connect fails, naming each lane's ends and error. */
static int connect_retry(struct fqn_connecting *st, int dev, int64_t now)
{
	const struct fqn_ctx *ctx = st->ctx;
	char why[768], local[64], peer[64];
	size_t off = 0;

	if (now - st->start_ns < (int64_t)ctx->cfg.failover_grace_ms * 1000000) {
		if (!st->retry_ns)
			FQN_INFO("connection %llx: no lane connected (lane 0: %s); dialing again for up to "
				 "FABRICIQ_FAILOVER_GRACE_MS=%d",
				 (unsigned long long)st->conn_id, strerror(-st->err[0]),
				 ctx->cfg.failover_grace_ms);
		if (now >= st->retry_ns) {
			st->retry_ns = now + (int64_t)SETUP_RETRY_MS * 1000000;
			for (int i = 0; i < st->nlanes; i++)
				dial_lane(st, dev, i, now);
		}
		return 1;
	}
	why[0] = '\0';
	for (int i = 0; i < st->nlanes && off < sizeof(why); i++) {
		lane_ends(st, i, local, peer, sizeof(local));
		off += (size_t)snprintf(why + off, sizeof(why) - off, "%slane %d %s -> %s: %s", i ? "; " : "",
					i, local, peer, strerror(-st->err[i]));
	}
	FQN_WARN("connection %llx: no lane connected within %lld ms (FABRICIQ_FAILOVER_GRACE_MS=%d): %s",
		 (unsigned long long)st->conn_id, (long long)((now - st->start_ns) / 1000000),
		 ctx->cfg.failover_grace_ms, why);
	return -ENETUNREACH;
}

/* Wait until no lane is dialing, then send the connected lanes' hellos
 * naming that set. Returns > 0 while in progress, 0 when every hello is
 * out, or a negative errno. */
static int connect_poll(struct fqn_connecting *st, int dev, uint64_t token)
{
	const struct fqn_ctx *ctx = st->ctx;
	int64_t now = fq_clock_ns(CLOCK_MONOTONIC), timeout = (int64_t)ctx->cfg.lane_timeout_ms * 1000000;
	int pending = 0;

	for (int i = 0; !st->present && i < st->nlanes; i++) {
		int rc;

		if (st->state[i] != SL_DIALING)
			continue;
		rc = st->lanes[i]->ops->poll_connected(st->lanes[i]);
		if (rc == 0)
			st->state[i] = SL_CONNECTED;
		else if (rc != -EINPROGRESS && rc != -EAGAIN)
			lane_failed(st, i, rc, now);
		else if (now - st->dial_ns[i] >= timeout) /* SYNs lost on a dead path */
			lane_failed(st, i, -ETIMEDOUT, now);
		else
			pending++;
	}
	if (pending)
		return pending;
	if (!st->present) {
		for (int i = 0; i < st->nlanes; i++)
			if (st->state[i] == SL_CONNECTED)
				st->present |= (uint16_t)(1u << i);
		if (!st->present)
			return connect_retry(st, dev, now);
	}
	for (int i = 0; i < st->nlanes; i++) {
		struct fqn_lane *l = st->lanes[i];
		struct fqn_hello hello = {(uint16_t)i,
					  (uint16_t)st->nlanes,
					  (uint16_t)(st->control ? FQN_HELLO_F_CONTROL : 0),
					  (uint32_t)ctx->cfg.chunk_size,
					  token,
					  st->conn_id,
					  ctx->rank1,
					  st->present};
		uint8_t buf[FQN_HELLO_SIZE];
		int rc;

		if (st->state[i] != SL_CONNECTED)
			continue; /* hello out already, or absent */
		fqn_hello_encode(&hello, buf);
		rc = l->ops->send_hello(l, buf, sizeof(buf));
		if (rc == -EINPROGRESS || rc == -EAGAIN) {
			pending++;
			continue;
		}
		if (rc < 0) {
			FQN_WARN("connect lane %d (%s -> %s): %s", i, l->local, l->peer, strerror(-rc));
			if (rc == -EPROTO)
				config_event(st, i, l);
			return rc;
		}
		st->state[i] = SL_READY;
	}
	return pending;
}

/* Every hello is out: the send comm, on the lanes that connected; the
 * others are reported and (control mode) re-dialed by the comm. */
static int connect_finish(int dev, const struct fqn_handle *h, struct fqn_send **out)
{
	struct fqn_connecting *st = h->stage;
	char local[64], peer[64];
	int rc;

	rc = fqn_send_from_lanes(st->ctx, dev, st->lanes, st->nlanes, st->ctx->cfg.chunk_size, st->conn_id,
				 out);
	if (rc < 0)
		return rc;
	memset(st->lanes, 0, sizeof(st->lanes)); /* the comm's now */
	if (st->control)
		rc = fqn_send_enable_control(*out, h->token, st->bind, st->rejoin, st->can_rejoin);
	if (rc < 0) {
		fqn_close_send(*out); /* closes the lanes */
		*out = NULL;
		return rc;
	}
	fqn_send_set_peer_rank(*out, h->rank1);
	for (int i = 0; i < st->nlanes; i++) {
		if (st->present & (1u << i))
			continue;
		fqn_send_lane_absent(*out, i, lane_ends(st, i, local, peer, sizeof(local)), local, peer,
				     st->err[i], st->start_ns, st->fail_ns[i] - st->start_ns);
	}
	return 0;
}

int fqn_setup_connect(struct fqn_ctx *ctx, int dev, void *handle, struct fqn_send **out)
{
	struct fqn_handle *h = handle;
	int rc;

	*out = NULL;
	if (dev < 0 || dev >= ctx->nnics || !handle)
		return -EINVAL;
	if (!h->stage) {
		rc = connect_start(ctx, dev, h, &h->stage);
		if (rc < 0)
			return rc;
	}
	rc = connect_poll(h->stage, dev, h->token);
	if (rc > 0)
		return 0;
	if (rc == 0)
		rc = connect_finish(dev, h, out);
	connecting_free(h->stage);
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
			fqn_hello_wait_add(&l->hello, fd, i, fq_clock_ns(CLOCK_MONOTONIC),
					   (int64_t)l->ctx->cfg.hello_timeout_ms * 1000000);
		}
	}
}

/* Adopt a socket whose hello arrived into its connection's group. Returns
 * the group's index if now complete (every lane its hellos name as
 * present has arrived), -1 otherwise. A connection's group opens with its
 * first lane admitted, not before: a hello that is dropped (here, or by
 * fqn_lane_accepted) leaves no group behind, or a few such hellos would
 * hold every group and shut the listener to all later connections. */
static int group_add(struct fqn_listen *l, int fd, const struct fqn_hello *h, const uint8_t *ib_handle)
{
	const struct fqn_ctx *ctx = l->ctx;
	int control = !!(h->flags & FQN_HELLO_F_CONTROL);
	struct fqn_group *g = NULL, *fresh = NULL;
	struct fqn_lane *lane;
	int gi;

	for (gi = 0; gi < FQN_GROUPS_MAX && !g; gi++)
		if (l->groups[gi].nlanes && l->groups[gi].conn_id == h->conn_id)
			g = &l->groups[gi];
	for (gi = 0; gi < FQN_GROUPS_MAX && !g && !fresh; gi++)
		if (!l->groups[gi].nlanes)
			fresh = &l->groups[gi];
	if ((!g && !fresh) || (h->flags & FQN_HELLO_F_REJOIN) || (control && !ctx->cfg.control) ||
	    (g && (g->nlanes != h->nlanes || g->present != h->present || g->chunk_size != h->chunk_size ||
		   g->lanes[h->lane] || g->control != control))) {
		FQN_WARN(
		    "listener on device %d: inconsistent or excess lane hello (connection %llx lane %u); "
		    "dropping it",
		    l->dev, (unsigned long long)h->conn_id, h->lane);
		close(fd);
		return -1;
	}
	if (fqn_lane_accepted(ctx, l->dev, fd, h->chunk_size, control ? ctx->cfg.lane_timeout_ms : 0,
			      ib_handle, &lane) < 0)
		return -1;
	if (!g) {
		g = fresh;
		*g = (struct fqn_group){.conn_id = h->conn_id,
					.nlanes = h->nlanes,
					.present = h->present,
					.chunk_size = h->chunk_size,
					.control = control,
					.rank1 = h->rank1};
	}
	lane->index = h->lane;
	if (!ctx->drv->nic_from_address) /* an IB lane knows its NIC (its QP's port) */
		lane->nic = l->dev;
	lane->chunk_size = h->chunk_size;
	g->lanes[h->lane] = lane;
	g->have++;
	return g->have == __builtin_popcount(g->present) ? (int)(g - l->groups) : -1;
}

static int listen_read_hellos(struct fqn_listen *l)
{
	struct fqn_hello_slot p;

	while (fqn_hello_wait_next(&l->hello, fqn_lane_hello_size(l->ctx), fq_clock_ns(CLOCK_MONOTONIC),
				   (int64_t)l->ctx->cfg.hello_timeout_ms * 1000000, &p) == 1) {
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
	if (g->have < g->nlanes)
		FQN_WARN("connection %llx from rank %d: %d of %d lanes did not connect (lane mask 0x%x "
			 "present); %s",
			 (unsigned long long)g->conn_id, (int)g->rank1 - 1, g->nlanes - g->have, g->nlanes,
			 g->present,
			 g->control ? "starting on the others; the sender re-dials them"
				    : "running on the others (monitor mode: no re-dial)");
	rc = fqn_recv_from_lanes(l->ctx, l->dev, g->lanes, g->nlanes, g->chunk_size, g->conn_id, out);
	if (rc < 0)
		for (int i = 0; i < g->nlanes; i++)
			if (g->lanes[i])
				g->lanes[i]->ops->destroy(g->lanes[i]);
	if (rc == 0)
		fqn_recv_set_peer_rank(*out, g->rank1);
	if (rc == 0 && g->control) {
		rc = fqn_recv_enable_control(*out, l->token);
		if (rc == -EEXIST) /* a peer that reused a live connection's id: not this comm's fault */
			FQN_WARN(
			    "connection %llx from rank %d: a connection with this id is open here already; "
			    "dropping the new one",
			    (unsigned long long)g->conn_id, (int)g->rank1 - 1);
		if (rc < 0) {
			fqn_close_recv(*out);
			*out = NULL;
			rc = rc == -EEXIST ? 0 : rc;
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
