/*
 * tb-flow: bounded test traffic for the testbed (no iperf dependency).
 *
 *   tb-flow sink --port P [--udp] [--seconds T]
 *     TCP: accepts connections and discards what they send; UDP: counts
 *     datagrams. Exits after T seconds (default 10) and prints
 *     "bytes B packets N".
 *   tb-flow send --dst IP --port P [--udp] [--sport S] [--bind IP]
 *                [--seconds T] [--count N] [--size B]
 *     TCP: one connection sending for T seconds (default 2) or N writes;
 *     UDP: N datagrams (default 100) of B bytes (default 512) from source
 *     port S, so a test chooses the ECMP hash input. Prints "bytes B".
 *
 * Every loop is bounded by a count or a deadline.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct opts {
	const char *dst, *bind;
	int port, sport, udp, count, size;
	double seconds;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int fail(const char *what)
{
	fprintf(stderr, "tb-flow: %s: %s\n", what, strerror(errno));
	return 1;
}

static int addr_of(const char *ip, int port, struct sockaddr_in *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons(port);
	if (!ip)
		return 0;
	return inet_pton(AF_INET, ip, &sa->sin_addr) == 1 ? 0 : -1;
}

static int do_sink(const struct opts *o)
{
	struct sockaddr_in sa;
	static char buf[1 << 16];
	struct pollfd pfd[64];
	int nfd = 1, one = 1;
	long long bytes = 0, packets = 0;
	double end = now_s() + o->seconds;

	addr_of(NULL, o->port, &sa);
	pfd[0].fd = socket(AF_INET, o->udp ? SOCK_DGRAM : SOCK_STREAM, 0);
	if (pfd[0].fd < 0)
		return fail("socket");
	setsockopt(pfd[0].fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(pfd[0].fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return fail("bind");
	if (!o->udp && listen(pfd[0].fd, 16) < 0)
		return fail("listen");
	pfd[0].events = POLLIN;
	while (now_s() < end) {
		int n = poll(pfd, nfd, 100);
		if (n < 0 && errno != EINTR)
			return fail("poll");
		for (int i = 0; n > 0 && i < nfd; i++) {
			if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (i == 0 && !o->udp) {
				int c = accept(pfd[0].fd, NULL, NULL);
				if (c >= 0 && nfd < 64) {
					pfd[nfd].fd = c;
					pfd[nfd++].events = POLLIN;
				} else if (c >= 0) {
					close(c);
				}
				continue;
			}
			ssize_t r = recv(pfd[i].fd, buf, sizeof(buf), 0);
			if (r > 0) {
				bytes += r;
				packets++;
			} else if (i > 0 && r <= 0 && errno != EAGAIN) {
				close(pfd[i].fd);
				pfd[i] = pfd[--nfd];
			}
		}
	}
	printf("bytes %lld packets %lld\n", bytes, packets);
	return 0;
}

static int do_send(const struct opts *o)
{
	struct sockaddr_in dst, src;
	static char buf[1 << 16];
	long long bytes = 0;
	int fd, one = 1;
	double end = now_s() + o->seconds;

	if (!o->dst || addr_of(o->dst, o->port, &dst) < 0) {
		fprintf(stderr, "tb-flow: send needs --dst IPv4 and --port\n");
		return 2;
	}
	fd = socket(AF_INET, o->udp ? SOCK_DGRAM : SOCK_STREAM, 0);
	if (fd < 0)
		return fail("socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (o->sport || o->bind) {
		if (addr_of(o->bind ? o->bind : "0.0.0.0", o->sport, &src) < 0)
			return fail("--bind");
		if (bind(fd, (struct sockaddr *)&src, sizeof(src)) < 0)
			return fail("bind");
	}
	if (connect(fd, (struct sockaddr *)&dst, sizeof(dst)) < 0)
		return fail("connect");
	memset(buf, 0xa5, sizeof(buf));
	for (int i = 0; o->udp ? i < o->count : (o->count ? i < o->count : now_s() < end); i++) {
		ssize_t w = send(fd, buf, o->udp ? o->size : (int)sizeof(buf), MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == ECONNREFUSED && o->udp)
				continue;
			return fail("send");
		}
		bytes += w;
		if (o->udp && now_s() > end + 10)
			break;
	}
	close(fd);
	printf("bytes %lld\n", bytes);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {.count = 0, .size = 512, .seconds = -1};
	const char *cmd = argc > 1 ? argv[1] : "";

	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--udp")) {
			o.udp = 1;
			continue;
		}
		if (!v) {
			fprintf(stderr, "tb-flow: %s needs a value\n", a);
			return 2;
		}
		i++;
		if (!strcmp(a, "--dst"))
			o.dst = v;
		else if (!strcmp(a, "--bind"))
			o.bind = v;
		else if (!strcmp(a, "--port"))
			o.port = atoi(v);
		else if (!strcmp(a, "--sport"))
			o.sport = atoi(v);
		else if (!strcmp(a, "--count"))
			o.count = atoi(v);
		else if (!strcmp(a, "--size"))
			o.size = atoi(v);
		else if (!strcmp(a, "--seconds"))
			o.seconds = atof(v);
		else {
			fprintf(stderr, "tb-flow: unknown option %s\n", a);
			return 2;
		}
	}
	if (o.port <= 0 || o.port > 65535 || o.size < 1 || o.size > 65000 || o.count < 0 || o.seconds > 600) {
		fprintf(stderr, "tb-flow: bad --port, --size, --count or --seconds\n");
		return 2;
	}
	if (!strcmp(cmd, "sink")) {
		if (o.seconds < 0)
			o.seconds = 10;
		return do_sink(&o);
	}
	if (!strcmp(cmd, "send")) {
		if (o.seconds < 0)
			o.seconds = 2;
		if (o.udp && !o.count)
			o.count = 100;
		return do_send(&o);
	}
	fprintf(stderr, "usage: tb-flow sink --port P [--udp] [--seconds T]\n"
			"       tb-flow send --dst IP --port P [--udp] [--sport S] [--bind IP] [--seconds T] "
			"[--count N] [--size B]\n");
	return 2;
}
