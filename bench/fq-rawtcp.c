/*
 * fq-rawtcp: the raw-TCP baseline for the plugin benchmarks. One TCP
 * connection, TCP_NODELAY, the plugin's default socket buffers, and the
 * same traffic pattern as `fabriciq-collbench --coll pingpong`: SIZE bytes one
 * way, SIZE bytes back, busy-polling non-blocking sockets as NCCL's proxy
 * polls test(). Prints
 *   SIZE MEAN_US GBPS MEDIAN_US P10_US
 * the half round trip (mean over the run), the one-way bandwidth, and the
 * per-iteration median and 10th percentile half round trip (fq-netlat's
 * columns: on a shared machine a descheduled process costs the mean a
 * whole time slice, the median nothing).
 * With FQ_RAWTCP_SPLIT=1 in the environment, each direction has its own
 * connection, the shape of every ncclNet plugin (NCCL's send and receive
 * comms are separate connections), so no ACK rides on the reply.
 * With FQ_RAWTCP_ZEROCOPY=1, sends use MSG_ZEROCOPY (SO_ZEROCOPY), and a
 * send counts as done when the kernel has released the buffer (its error
 * queue's completion notices); the client then prints, after the usual
 * columns, how many completions said the kernel copied after all
 * (SO_EE_CODE_ZEROCOPY_COPIED: what local delivery, loopback or veth, does).
 *
 *   fq-rawtcp server PORT SIZE ITERS WARMUP
 *   fq-rawtcp client HOST PORT SIZE ITERS WARMUP
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int zerocopy;
static unsigned long zc_sent, zc_done, zc_copied; /* sends, completions (ids), copied ones */

static int tune(int fd)
{
	int one = 1, buf = 4 << 20;

	if (zerocopy && setsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one)) < 0)
		perror("fq-rawtcp: SO_ZEROCOPY");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	return fd;
}

/* Read MSG_ZEROCOPY completion notices: 0, or -1 on an error. */
static int zc_reap(int fd)
{
	char ctl[128];

	for (;;) {
		struct msghdr msg = {.msg_control = ctl, .msg_controllen = sizeof(ctl)};
		struct cmsghdr *cm;

		if (recvmsg(fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
			struct sock_extended_err *ee = (struct sock_extended_err *)CMSG_DATA(cm);

			if (ee->ee_errno != 0 || ee->ee_origin != SO_EE_ORIGIN_ZEROCOPY)
				continue;
			zc_done += ee->ee_data - ee->ee_info + 1; /* ids ee_info..ee_data */
			if (ee->ee_code & SO_EE_CODE_ZEROCOPY_COPIED)
				zc_copied += ee->ee_data - ee->ee_info + 1;
		}
	}
}

static int xfer(int fd, char *buf, size_t len, int is_send)
{
	int flags = MSG_DONTWAIT | MSG_NOSIGNAL | (zerocopy ? MSG_ZEROCOPY : 0);
	size_t done = 0;

	while (done < len) {
		ssize_t n = is_send ? send(fd, buf + done, len - done, flags)
				    : recv(fd, buf + done, len - done, MSG_DONTWAIT);
		if (n > 0) {
			done += (size_t)n;
			zc_sent += is_send && zerocopy;
		} else if (n == 0 || (errno != EAGAIN && errno != EINTR && errno != ENOBUFS)) {
			return -1;
		} else if (is_send && zerocopy && zc_reap(fd) < 0) {
			return -1;
		}
	}
	/* the buffer is the kernel's until every send's completion is in */
	while (is_send && zerocopy && zc_done < zc_sent)
		if (zc_reap(fd) < 0)
			return -1;
	return 0;
}

static int dial(const struct sockaddr_in *sa)
{
	for (int tries = 0; tries < 100; tries++) {
		int fd = tune(socket(AF_INET, SOCK_STREAM, 0));

		if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0)
			return fd;
		close(fd);
		usleep(50000);
	}
	return -1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int server = argc == 6 && strcmp(argv[1], "server") == 0, fd, fd2, a = server ? 2 : 3;
	int split = getenv("FQ_RAWTCP_SPLIT") && strcmp(getenv("FQ_RAWTCP_SPLIT"), "1") == 0;
	zerocopy = getenv("FQ_RAWTCP_ZEROCOPY") && strcmp(getenv("FQ_RAWTCP_ZEROCOPY"), "1") == 0;
	struct sockaddr_in sa = {.sin_family = AF_INET};
	size_t size;
	int iters, warmup;
	char *buf;
	double t0 = 0, *lat;

	if (!server && !(argc == 7 && strcmp(argv[1], "client") == 0)) {
		fprintf(
		    stderr,
		    "usage: fq-rawtcp server PORT SIZE ITERS WARMUP | client HOST PORT SIZE ITERS WARMUP\n");
		return 2;
	}
	sa.sin_port = htons((uint16_t)atoi(argv[a]));
	size = strtoull(argv[a + 1], NULL, 10);
	iters = atoi(argv[a + 2]);
	warmup = atoi(argv[a + 3]);
	buf = calloc(1, size ? size : 1);
	lat = calloc((size_t)(iters + warmup), sizeof(double));
	if (!buf || !lat || iters < 1 || warmup < 0) {
		fprintf(stderr, "fq-rawtcp: bad arguments or out of memory\n");
		return 1;
	}
	if (server) {
		int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;

		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		tune(l);
		if (bind(l, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(l, 1) < 0) {
			perror("fq-rawtcp: bind/listen");
			return 1;
		}
		fd = accept(l, NULL, NULL);
		fd2 = split ? accept(l, NULL, NULL) : fd;
		close(l);
	} else {
		inet_pton(AF_INET, argv[2], &sa.sin_addr);
		fd = dial(&sa);
		fd2 = split ? dial(&sa) : fd;
		if (fd < 0 || fd2 < 0) {
			perror("fq-rawtcp: connect");
			return 1;
		}
	}
	for (int i = 0; i < warmup + iters; i++) {
		double t = now_s();

		if (i == warmup)
			t0 = t;
		/* there on fd, back on fd2 (the same socket unless split) */
		if (xfer(fd, buf, size, !server) < 0 || xfer(fd2, buf, size, server) < 0) {
			fprintf(stderr, "fq-rawtcp: connection lost\n");
			return 1;
		}
		lat[i] = now_s() - t;
	}
	if (!server) {
		double half_us = (now_s() - t0) / iters / 2 * 1e6;

		qsort(lat + warmup, (size_t)iters, sizeof(double), cmp_double);
		printf("%zu %.2f %.3f %.2f %.2f", size, half_us,
		       half_us > 0 ? (double)size / half_us / 1e3 : 0, lat[warmup + iters / 2] / 2 * 1e6,
		       lat[warmup + iters / 10] / 2 * 1e6);
		if (zerocopy)
			printf(" zerocopy %lu sends, %lu copied", zc_sent, zc_copied);
		putchar('\n');
	}
	close(fd);
	if (fd2 != fd)
		close(fd2);
	free(buf);
	free(lat);
	return 0;
}
