/*
 * fq-netlat: small-message ping-pong through any ncclNet plugin, timed per
 * iteration, the plugin's side of bench-nccl-p2p.sh's latency figure.
 *
 * Two ranks, forked from one command, each with its own plugin instance
 * (its own dlopen in its own process), connected over the plugin's device
 * (FABRICIQ_IFACES=lo for loopback): rank 0 isends SIZE bytes on its send
 * comm and waits for them back on its receive comm; rank 1 echoes. Both
 * busy-poll test(), as NCCL's proxy thread does. Handles travel over a
 * socketpair. Prints, from rank 0:
 *
 *   SIZE MEAN_US MEDIAN_US P10_US      (half round trip)
 *
 * The median is per iteration: on a shared machine a descheduled rank
 * costs the mean a whole time slice, the median nothing. fq-rawtcp prints
 * the same columns for raw TCP.
 *
 *   fq-netlat PLUGIN.so SIZE ITERS WARMUP
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tools/collbench/netdrv.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int full_io(int fd, void *buf, size_t len, int wr)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n =
		    wr ? write(fd, (char *)buf + done, len - done) : read(fd, (char *)buf + done, len - done);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return -1;
		}
		done += (size_t)n;
	}
	return 0;
}

/* Post, then test until done; 0 or -1. The request may be refused (NULL):
 * post again, as NCCL does. */
static int one(struct netdrv *d, void *comm, int is_send, char *buf, size_t size, double deadline)
{
	void *req = NULL;
	int tag = 0, done = 0, got = -1;
	unsigned polls = 0;
	ncclResult_t rc;

	/* the clock is read every 4096 calls only: fq-rawtcp's loop reads none */
	while (!req) {
		void *data = buf;
		size_t sz = size;

		rc = is_send ? netdrv_isend(d, comm, buf, size, tag, NULL, &req)
			     : netdrv_irecv(d, comm, 1, &data, &sz, &tag, NULL, &req);
		if (rc != ncclSuccess || (++polls % 4096 == 0 && now_s() > deadline))
			return -1;
	}
	while (!done) {
		if (netdrv_test(d, req, &done, &got) != ncclSuccess ||
		    (++polls % 4096 == 0 && now_s() > deadline))
			return -1;
	}
	return got == (int)size ? 0 : -1;
}

static int rank_main(const char *plugin, int rank, int sp, size_t size, int iters, int warmup)
{
	char err[256], mine[NCCL_NET_HANDLE_MAXSIZE], theirs[NCCL_NET_HANDLE_MAXSIZE];
	void *lcomm = NULL, *scomm = NULL, *rcomm = NULL;
	struct netdrv *d = NULL;
	double *lat = NULL, t0 = 0, deadline = now_s() + 60;
	char *buf = NULL;
	int rc = 1;

	if (netdrv_open(plugin, 0, &d, err, sizeof(err)) < 0) {
		fprintf(stderr, "fq-netlat: %s\n", err);
		return 1;
	}
	buf = calloc(1, size ? size : 1);
	lat = calloc((size_t)(iters + warmup), sizeof(double));
	if (!buf || !lat || netdrv_init(d, NULL) != ncclSuccess ||
	    netdrv_listen(d, 0, mine, &lcomm) != ncclSuccess)
		goto out;
	if (full_io(sp, mine, sizeof(mine), 1) < 0 || full_io(sp, theirs, sizeof(theirs), 0) < 0)
		goto out;
	while (!scomm || !rcomm) {
		if ((!scomm && netdrv_connect(d, 0, theirs, &scomm) != ncclSuccess) ||
		    (!rcomm && netdrv_accept(d, lcomm, &rcomm) != ncclSuccess) || now_s() > deadline)
			goto out;
	}
	for (int i = 0; i < warmup + iters; i++) {
		double t = now_s();

		if (i == warmup)
			t0 = t;
		if (rank == 0 ? one(d, scomm, 1, buf, size, deadline) < 0 ||
				    one(d, rcomm, 0, buf, size, deadline) < 0
			      : one(d, rcomm, 0, buf, size, deadline) < 0 ||
				    one(d, scomm, 1, buf, size, deadline) < 0)
			goto out;
		lat[i] = now_s() - t;
	}
	if (rank == 0) {
		double mean = (now_s() - t0) / iters / 2 * 1e6;

		qsort(lat + warmup, (size_t)iters, sizeof(double), cmp_double);
		printf("%zu %.2f %.2f %.2f\n", size, mean, lat[warmup + iters / 2] / 2 * 1e6,
		       lat[warmup + iters / 10] / 2 * 1e6);
	}
	/* both ranks done before either closes: a close mid-test is an error there */
	if (full_io(sp, mine, 1, 1) < 0 || full_io(sp, theirs, 1, 0) < 0)
		goto out;
	rc = 0;
out:
	if (rc)
		fprintf(stderr, "fq-netlat: rank %d failed\n", rank);
	if (scomm)
		netdrv_close_send(d, scomm);
	if (rcomm)
		netdrv_close_recv(d, rcomm);
	if (lcomm)
		netdrv_close_listen(d, lcomm);
	netdrv_close(d);
	free(buf);
	free(lat);
	return rc;
}

int main(int argc, char **argv)
{
	int sv[2], status = 0, rc;
	size_t size;
	int iters, warmup;
	pid_t pid;

	if (argc != 5 || (iters = atoi(argv[3])) < 1 || (warmup = atoi(argv[4])) < 0) {
		fprintf(stderr, "usage: fq-netlat PLUGIN.so SIZE ITERS WARMUP\n");
		return 2;
	}
	size = strtoull(argv[2], NULL, 10);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) {
		perror("fq-netlat: socketpair");
		return 1;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("fq-netlat: fork");
		return 1;
	}
	if (pid == 0) {
		close(sv[0]);
		_exit(rank_main(argv[1], 1, sv[1], size, iters, warmup));
	}
	close(sv[1]);
	rc = rank_main(argv[1], 0, sv[0], size, iters, warmup);
	if (rc)
		kill(pid, SIGTERM);
	close(sv[0]);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		rc = 1;
	return rc;
}
