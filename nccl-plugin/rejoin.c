/* rejoin: listeners and routing for re-dialed lanes (see rejoin.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nccl-plugin/conn.h"
#include "nccl-plugin/ib_lane.h"
#include "nccl-plugin/plog.h"
#include "nccl-plugin/rejoin.h"

#define REJOIN_PENDING_MAX 64

struct rejoin_pending {
	int fd;
	int nic;
	size_t got;
	uint8_t buf[FQN_HELLO_SIZE + FQIB_HANDLE_SIZE]; /* IB lanes: the hello, then the QP handle */
};

struct rejoin_entry {
	struct rejoin_entry *next;
	const void *key;
	uint64_t conn_id, token;
	int nlanes;
	struct fqn_lane *incoming[FQN_MAX_LANES];
};

struct fqn_rejoin {
	pthread_mutex_t lock;
	int fd[FQN_MAX_NICS]; /* -1: not opened */
	uint16_t port[FQN_MAX_NICS];
	struct rejoin_pending pending[REJOIN_PENDING_MAX];
	int npending;
	struct rejoin_entry *entries;
};

int fqn_rejoin_create(struct fqn_rejoin **out)
{
	struct fqn_rejoin *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	pthread_mutex_init(&j->lock, NULL);
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
	for (int k = 0; k < j->npending; k++)
		close(j->pending[k].fd);
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

	if (nic < 0 || nic >= fqn_g->nnics)
		return -EINVAL;
	pthread_mutex_lock(&j->lock);
	if (j->fd[nic] < 0) {
		struct sockaddr_storage bound;
		int fd = fqn_listen_on(&fqn_g->nics[nic], &bound);

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

int fqn_rejoin_register(struct fqn_rejoin *j, const void *key, uint64_t conn_id, uint64_t token, int nlanes)
{
	struct rejoin_entry *e = calloc(1, sizeof(*e));

	if (!e)
		return -ENOMEM;
	e->key = key;
	e->conn_id = conn_id;
	e->token = token;
	e->nlanes = nlanes;
	pthread_mutex_lock(&j->lock);
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

static void pending_drop(struct fqn_rejoin *j, int k, int close_fd)
{
	if (close_fd)
		close(j->pending[k].fd);
	j->pending[k] = j->pending[--j->npending];
}

/* A whole hello arrived on pending k: route the socket to its comm. */
static void route(struct fqn_rejoin *j, int k)
{
	struct rejoin_pending *p = &j->pending[k];
	struct rejoin_entry *e;
	struct fqn_hello h;
	struct fqn_lane *lane;

	if (fqn_hello_decode(p->buf, &h) < 0 || !(h.flags & FQN_HELLO_F_REJOIN)) {
		FQN_WARN("rejoin listener on %s: dropping a connection with a bad hello",
			 fqn_g->nics[p->nic].name);
		pending_drop(j, k, 1);
		return;
	}
	for (e = j->entries; e; e = e->next)
		if (e->conn_id == h.conn_id && e->token == h.token)
			break;
	if (!e || h.lane >= e->nlanes || h.nlanes != e->nlanes) {
		/* the comm was closed meanwhile, or a stranger: the dialer backs off and tries again */
		FQN_INFO("rejoin listener on %s: no connection %llx lane %u here; dropping it",
			 fqn_g->nics[p->nic].name, (unsigned long long)h.conn_id, h.lane);
		pending_drop(j, k, 1);
		return;
	}
	if (fqn_lane_accepted(p->nic, p->fd, h.chunk_size, fqn_g->cfg.lane_timeout_ms,
			      p->buf + FQN_HELLO_SIZE, &lane) < 0) {
		pending_drop(j, k, 0); /* adopt closed it */
		return;
	}
	pending_drop(j, k, 0);
	lane->index = h.lane;
	lane->nic = p->nic;
	lane->chunk_size = h.chunk_size;
	if (e->incoming[h.lane]) /* an older re-dial nobody took: the newest wins */
		e->incoming[h.lane]->ops->destroy(e->incoming[h.lane]);
	e->incoming[h.lane] = lane;
}

static void poll_listeners(struct fqn_rejoin *j)
{
	for (int i = 0; i < FQN_MAX_NICS; i++) {
		while (j->fd[i] >= 0) {
			int fd = accept4(j->fd[i], NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

			if (fd < 0)
				break;
			if (j->npending == REJOIN_PENDING_MAX) {
				close(fd);
				continue;
			}
			j->pending[j->npending++] = (struct rejoin_pending){.fd = fd, .nic = i};
		}
	}
	for (int k = 0; k < j->npending;) {
		struct rejoin_pending *p = &j->pending[k];
		size_t want = fqn_lane_hello_size();
		ssize_t n = recv(p->fd, p->buf + p->got, want - p->got, MSG_DONTWAIT);

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
			pending_drop(j, k, 1);
			continue;
		}
		if (n > 0)
			p->got += (size_t)n;
		if (p->got < want) {
			k++;
			continue;
		}
		route(j, k); /* removes pending k */
	}
}

int fqn_rejoin_take(struct fqn_rejoin *j, const void *key, struct fqn_lane **lane)
{
	struct rejoin_entry *e;
	int found = 0;

	pthread_mutex_lock(&j->lock);
	poll_listeners(j);
	for (e = j->entries; e && e->key != key; e = e->next)
		;
	for (int i = 0; e && i < e->nlanes && !found; i++)
		if (e->incoming[i]) {
			*lane = e->incoming[i];
			e->incoming[i] = NULL;
			found = 1;
		}
	pthread_mutex_unlock(&j->lock);
	return found;
}
