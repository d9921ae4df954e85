/* rejoin: listeners and routing for re-dialed lanes (see rejoin.h); whose
 * a re-dialed lane is, control/rejoin.h decides. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "nccl-plugin/control/rejoin.h"
#include "nccl-plugin/core/ctx.h"
#include "nccl-plugin/core/rejoin.h"
#include "nccl-plugin/hello.h"
#include "nccl-plugin/lanes/lane.h"
#include "nccl-plugin/lanes/lane_drv.h"
#include "nccl-plugin/plog.h"

struct rejoin_entry {
	struct rejoin_entry *next;
	const void *key;
	struct fqn_hello conn; /* what a re-dialed lane's hello must match */
	struct fqn_lane *incoming[FQN_MAX_LANES];
};

struct fqn_rejoin {
	const struct fqn_ctx *ctx;
	pthread_mutex_t lock;
	int fd[FQN_MAX_NICS]; /* -1: not opened */
	uint16_t port[FQN_MAX_NICS];
	struct fqn_hello_wait hello; /* accepted sockets (tag: the NIC) until their hello is in */
	struct rejoin_entry *entries;
};

int fqn_rejoin_create(const struct fqn_ctx *ctx, struct fqn_rejoin **out)
{
	struct fqn_rejoin *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->ctx = ctx;
	pthread_mutex_init(&j->lock, NULL);
	fqn_hello_wait_init(&j->hello, "rejoin listener");
	for (int i = 0; i < FQN_MAX_NICS; i++)
		j->fd[i] = -1;
	*out = j;
	return 0;
}

void fqn_rejoin_destroy(struct fqn_rejoin *j)
{
	if (!j)
		return;
	for (int i = 0; i < FQN_MAX_NICS; i++)
		if (j->fd[i] >= 0)
			close(j->fd[i]);
	fqn_hello_wait_close(&j->hello);
	while (j->entries) {
		struct rejoin_entry *e = j->entries;

		j->entries = e->next;
		for (int i = 0; i < FQN_MAX_LANES; i++)
			if (e->incoming[i])
				e->incoming[i]->ops->destroy(e->incoming[i]);
		free(e);
	}
	pthread_mutex_destroy(&j->lock);
	free(j);
}

int fqn_rejoin_port(struct fqn_rejoin *j, int nic, uint16_t *port)
{
	int rc = 0;

	if (nic < 0 || nic >= j->ctx->nnics)
		return -EINVAL;
	pthread_mutex_lock(&j->lock);
	if (j->fd[nic] < 0) {
		struct sockaddr_storage bound;
		int fd = fqn_listen_on(&j->ctx->nics[nic], &bound);

		if (fd < 0) {
			rc = fd;
		} else {
			j->fd[nic] = fd;
			j->port[nic] = bound.ss_family == AF_INET
					   ? ((struct sockaddr_in *)&bound)->sin_port
					   : ((struct sockaddr_in6 *)&bound)->sin6_port;
		}
	}
	if (rc == 0)
		*port = j->port[nic];
	pthread_mutex_unlock(&j->lock);
	return rc;
}

int fqn_rejoin_register(struct fqn_rejoin *j, const void *key, uint64_t conn_id, uint64_t token, int nlanes,
			size_t chunk_size)
{
	struct rejoin_entry *e = calloc(1, sizeof(*e));

	if (!e)
		return -ENOMEM;
	e->key = key;
	e->conn = (struct fqn_hello){.nlanes = (uint16_t)nlanes,
				     .flags = FQN_HELLO_F_CONTROL | FQN_HELLO_F_REJOIN,
				     .chunk_size = (uint32_t)chunk_size,
				     .token = token,
				     .conn_id = conn_id};
	pthread_mutex_lock(&j->lock);
	for (const struct rejoin_entry *o = j->entries; o; o = o->next)
		if (o->conn.conn_id == conn_id && o->conn.token == token) {
			pthread_mutex_unlock(&j->lock);
			free(e);
			return -EEXIST;
		}
	e->next = j->entries;
	j->entries = e;
	pthread_mutex_unlock(&j->lock);
	return 0;
}

void fqn_rejoin_unregister(struct fqn_rejoin *j, const void *key)
{
	struct rejoin_entry **pp, *e = NULL;

	pthread_mutex_lock(&j->lock);
	for (pp = &j->entries; *pp; pp = &(*pp)->next)
		if ((*pp)->key == key) {
			e = *pp;
			*pp = e->next;
			break;
		}
	pthread_mutex_unlock(&j->lock);
	if (!e)
		return;
	for (int i = 0; i < FQN_MAX_LANES; i++)
		if (e->incoming[i])
			e->incoming[i]->ops->destroy(e->incoming[i]);
	free(e);
}

/* A whole hello arrived on socket p: route it to its comm, or close it. */
static void route(struct fqn_rejoin *j, const struct fqn_hello_slot *p)
{
	struct rejoin_entry *e;
	struct fqn_hello h;
	struct fqn_lane *lane;
	enum fqn_rejoin_verdict verdict = FQN_REJOIN_OTHER;
	const char *why = NULL;

	if (fqn_hello_decode(p->buf, &h) < 0 || !(h.flags & FQN_HELLO_F_REJOIN)) {
		FQN_WARN("rejoin listener on %s: dropping a connection with a bad hello",
			 j->ctx->nics[p->tag].name);
		close(p->fd);
		return;
	}
	for (e = j->entries; e; e = e->next) {
		verdict = fqn_rejoin_judge(&h, &e->conn, &why);
		if (verdict != FQN_REJOIN_OTHER)
			break;
	}
	if (!e) {
		/* the comm was closed meanwhile, or a stranger: the dialer backs off and tries again */
		FQN_INFO("rejoin listener on %s: no connection %llx lane %u here; dropping it",
			 j->ctx->nics[p->tag].name, (unsigned long long)h.conn_id, h.lane);
		close(p->fd);
		return;
	}
	if (verdict == FQN_REJOIN_REFUSE) {
		FQN_WARN("rejoin listener on %s: refusing re-dialed lane %u/%u of connection %llx: %s "
			 "(chunk size %u, the connection's %u)",
			 j->ctx->nics[p->tag].name, h.lane, h.nlanes, (unsigned long long)h.conn_id, why,
			 h.chunk_size, e->conn.chunk_size);
		close(p->fd);
		return;
	}
	if (fqn_lane_accepted(j->ctx, p->tag, p->fd, h.chunk_size, j->ctx->cfg.lane_timeout_ms,
			      p->buf + FQN_HELLO_SIZE, &lane) < 0)
		return; /* adopt closed it */
	lane->index = h.lane;
	lane->nic = p->tag;
	lane->chunk_size = h.chunk_size;
	if (e->incoming[h.lane]) /* an older re-dial nobody took: the newest wins */
		e->incoming[h.lane]->ops->destroy(e->incoming[h.lane]);
	e->incoming[h.lane] = lane;
}

static void poll_listeners(struct fqn_rejoin *j)
{
	int64_t timeout = (int64_t)j->ctx->cfg.hello_timeout_ms * 1000000;
	struct fqn_hello_slot p;

	for (int i = 0; i < FQN_MAX_NICS; i++) {
		while (j->fd[i] >= 0) {
			int fd = accept4(j->fd[i], NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

			if (fd < 0)
				break;
			fqn_hello_wait_add(&j->hello, fd, i, fq_clock_ns(CLOCK_MONOTONIC), timeout);
		}
	}
	while (fqn_hello_wait_next(&j->hello, fqn_lane_hello_size(j->ctx), fq_clock_ns(CLOCK_MONOTONIC),
				   timeout, &p) == 1)
		route(j, &p);
}

int fqn_rejoin_take(struct fqn_rejoin *j, const void *key, struct fqn_lane **lane)
{
	struct rejoin_entry *e;
	int found = 0;

	pthread_mutex_lock(&j->lock);
	poll_listeners(j);
	for (e = j->entries; e && e->key != key; e = e->next)
		;
	for (int i = 0; e && i < e->conn.nlanes && !found; i++)
		if (e->incoming[i]) {
			*lane = e->incoming[i];
			e->incoming[i] = NULL;
			found = 1;
		}
	pthread_mutex_unlock(&j->lock);
	return found;
}
