/* bootstrap: star exchange through rank 0 (see bootstrap.h). */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tools/collbench/bootstrap.h"

struct bootstrap {
	int rank, nranks;
	int timeout_ms;
	int root_fd;  /* rank > 0: to rank 0 */
	int *peer_fd; /* rank 0: from each rank, [0] unused */
};

static int io_full(int fd, void *buf, size_t len, int is_write, int timeout_ms)
{
	uint8_t *p = buf;

	while (len) {
		struct pollfd pfd = {fd, is_write ? POLLOUT : POLLIN, 0};
		ssize_t n;

		if (poll(&pfd, 1, timeout_ms) <= 0)
			return -ETIMEDOUT;
		n = is_write ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int split_host_port(const char *hp, char *host, size_t hlen, char *port, size_t plen)
{
	const char *colon = strrchr(hp, ':');

	if (!colon || colon == hp || !colon[1] || (size_t)(colon - hp) >= hlen || strlen(colon + 1) >= plen)
		return -EINVAL;
	memcpy(host, hp, (size_t)(colon - hp));
	host[colon - hp] = '\0';
	strcpy(port, colon + 1);
	return 0;
}

static int root_accept(struct bootstrap *b, int lfd, char *err, size_t errlen)
{
	for (int got = 1; got < b->nranks; got++) {
		struct pollfd pfd = {lfd, POLLIN, 0};
		uint32_t r;
		int fd;

		if (poll(&pfd, 1, b->timeout_ms) <= 0) {
			snprintf(err, errlen, "bootstrap: only %d of %d ranks arrived in time", got,
				 b->nranks);
			return -ETIMEDOUT;
		}
		fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			return -errno;
		if (io_full(fd, &r, sizeof(r), 0, b->timeout_ms) < 0 || r == 0 || r >= (uint32_t)b->nranks ||
		    b->peer_fd[r] >= 0) {
			snprintf(err, errlen, "bootstrap: a peer announced a bad or duplicate rank");
			close(fd);
			return -EPROTO;
		}
		b->peer_fd[r] = fd;
	}
	return 0;
}

static int open_root(struct bootstrap *b, struct addrinfo *ai, char *err, size_t errlen)
{
	int lfd, one = 1, rc;

	lfd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		return -errno;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(lfd, 1024) < 0) {
		rc = -errno;
		snprintf(err, errlen, "bootstrap: cannot listen: %s", strerror(errno));
		close(lfd);
		return rc;
	}
	rc = root_accept(b, lfd, err, errlen);
	close(lfd);
	return rc;
}

/* Connecting in a loop to a local port nobody listens on yet can, once
 * the kernel picks that very port as the source, connect the socket to
 * itself (TCP simultaneous open): it would then "reach rank 0" and keep
 * rank 0 from binding. Such a connection is dropped and retried. */
static int self_connected(int fd)
{
	struct sockaddr_storage a, b;
	socklen_t la = sizeof(a), lb = sizeof(b);

	if (getsockname(fd, (struct sockaddr *)&a, &la) < 0 ||
	    getpeername(fd, (struct sockaddr *)&b, &lb) < 0)
		return 0;
	return la == lb && memcmp(&a, &b, la) == 0;
}

static int open_peer(struct bootstrap *b, struct addrinfo *ai, char *err, size_t errlen)
{
	struct timespec t0, t;
	uint32_t r = (uint32_t)b->rank;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) { /* rank 0 may start later: retry until the deadline */
		int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0)
			return -errno;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 && !self_connected(fd)) {
			b->root_fd = fd;
			return io_full(fd, &r, sizeof(r), 1, b->timeout_ms);
		}
		close(fd);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 > b->timeout_ms) {
			snprintf(err, errlen, "bootstrap: cannot reach rank 0: %s", strerror(errno));
			return -ETIMEDOUT;
		}
		usleep(50000);
	}
}

int bootstrap_open(const char *host_port, int rank, int nranks, int timeout_s, struct bootstrap **out,
		   char *err, size_t errlen)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
	char host[256], port[32];
	struct bootstrap *b;
	int rc;

	if (split_host_port(host_port, host, sizeof(host), port, sizeof(port)) < 0) {
		snprintf(err, errlen, "bootstrap address '%s' is not HOST:PORT", host_port);
		return -EINVAL;
	}
	rc = getaddrinfo(host, port, &hints, &ai);
	if (rc) {
		snprintf(err, errlen, "bootstrap address '%s': %s", host_port, gai_strerror(rc));
		return -EINVAL;
	}
	b = calloc(1, sizeof(*b));
	if (!b) {
		freeaddrinfo(ai);
		return -ENOMEM;
	}
	b->rank = rank;
	b->nranks = nranks;
	b->timeout_ms = timeout_s * 1000;
	b->root_fd = -1;
	b->peer_fd = malloc(sizeof(int) * (size_t)nranks);
	for (int i = 0; b->peer_fd && i < nranks; i++)
		b->peer_fd[i] = -1;
	rc = !b->peer_fd ? -ENOMEM
	     : rank == 0 ? open_root(b, ai, err, errlen)
			 : open_peer(b, ai, err, errlen);
	freeaddrinfo(ai);
	if (rc < 0) {
		bootstrap_close(b);
		return rc;
	}
	*out = b;
	return 0;
}

void bootstrap_close(struct bootstrap *b)
{
	if (!b)
		return;
	if (b->root_fd >= 0)
		close(b->root_fd);
	for (int i = 0; b->peer_fd && i < b->nranks; i++)
		if (b->peer_fd[i] >= 0)
			close(b->peer_fd[i]);
	free(b->peer_fd);
	free(b);
}

int bootstrap_rank(const struct bootstrap *b, int *rank, int *nranks)
{
	*rank = b->rank;
	*nranks = b->nranks;
	return 0;
}

int bootstrap_allgather(struct bootstrap *b, const void *mine, void *all, size_t len)
{
	uint8_t *a = all;
	int rc;

	memcpy(a + (size_t)b->rank * len, mine, len);
	if (b->rank != 0) {
		rc = io_full(b->root_fd, (void *)mine, len, 1, b->timeout_ms);
		return rc < 0 ? rc : io_full(b->root_fd, a, len * (size_t)b->nranks, 0, b->timeout_ms);
	}
	for (int r = 1; r < b->nranks; r++) {
		rc = io_full(b->peer_fd[r], a + (size_t)r * len, len, 0, b->timeout_ms);
		if (rc < 0)
			return rc;
	}
	for (int r = 1; r < b->nranks; r++) {
		rc = io_full(b->peer_fd[r], a, len * (size_t)b->nranks, 1, b->timeout_ms);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int bootstrap_barrier(struct bootstrap *b)
{
	uint8_t one = 1, *all = malloc((size_t)b->nranks);
	int rc;

	if (!all)
		return -ENOMEM;
	rc = bootstrap_allgather(b, &one, all, 1);
	free(all);
	return rc;
}
