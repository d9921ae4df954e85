/*
 * fq-incast: many senders to one receiver through any ncclNet plugin, for
 * bench-incast.sh and test-pace-testbed.sh.
 *
 * Rank 0 receives; ranks 1..N-1 each connect to it (one send comm each,
 * over the plugin's device 0) and isend SIZE-byte messages back to back,
 * two in flight, for SECONDS. Every message carries its sender, its
 * sequence number and a last-message flag in its first 16 bytes, and a
 * pattern of both in the rest: the receiver checks every byte of every
 * message, and that each sender's sequence has no gap. The handles travel
 * over the collbench bootstrap (TCP to rank 0). Rank 0 prints one line:
 *
 *   incast senders=N-1 window_s=W bytes=B mbps=M per_sender_mbps=a,b,.. messages=K bad=X
 *
 * where the window is from WARMUP seconds after the start to SECONDS
 * (the receiver's clock), M the aggregate payload rate in it (Mbit/s).
 * Exit 0 only when every message arrived whole and right. The plugin's
 * WARN and INFO lines go to stderr.
 *
 *   fq-incast PLUGIN.so RANK NRANKS HOST:PORT SECONDS WARMUP SIZE
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/collbench/bootstrap.h"
#include "tools/collbench/netdrv.h"

#define INFLIGHT 2
/* A pass that completed nothing sleeps this long: on the emulated cluster
 * every rank shares a few cores, and ranks spinning on test() as NCCL's
 * proxy does (on a core of its own) starve the receiver, whose late reads
 * then delay its TCP acks: a queue in no fabric. */
#define IDLE_NS  50000
#define MAXRANKS 64
#define MAGIC    0x66716963ULL /* "fqic" */

static void idle(void)
{
	struct timespec ts = {0, IDLE_NS};

	nanosleep(&ts, NULL);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void plugin_log(int level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
	char buf[640];
	va_list ap;

	(void)flags, (void)file, (void)line;
	if (level != NCCL_LOG_WARN && level != NCCL_LOG_INFO)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s\n", level == NCCL_LOG_WARN ? "WARN" : "INFO", buf);
}

/* The pattern word k of message seq from rank r (k >= 2). */
static uint64_t word(int r, uint64_t seq, size_t k)
{
	uint64_t x = ((uint64_t)r << 56) ^ (seq << 20) ^ k;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	return x ^ (x >> 29);
}

static void fill(uint64_t *w, size_t words, int r, uint64_t seq, int last)
{
	w[0] = MAGIC << 32 | (uint64_t)r << 1 | (uint64_t)last;
	w[1] = seq;
	for (size_t k = 2; k < words; k++)
		w[k] = word(r, seq, k);
}

/* 0 if message w is right; its sender and last flag out. */
static int check(const uint64_t *w, size_t words, int nranks, uint64_t *next_seq, int *rank, int *last)
{
	int r = (int)((w[0] & 0xffffffffULL) >> 1);

	if (w[0] >> 32 != MAGIC || r < 1 || r >= nranks || w[1] != next_seq[r])
		return -1;
	for (size_t k = 2; k < words; k++)
		if (w[k] != word(r, w[1], k))
			return -1;
	next_seq[r]++;
	*rank = r;
	*last = (int)(w[0] & 1);
	return 0;
}

static int sender(struct netdrv *d, void *scomm, int rank, size_t size, double end, double deadline)
{
	uint64_t *buf[INFLIGHT], seq = 0;
	void *req[INFLIGHT] = {0};
	int last_posted = 0, pending = 0, done, got;

	for (int k = 0; k < INFLIGHT; k++)
		if (!(buf[k] = malloc(size)))
			return -1;
	for (;;) {
		int moved = 0;

		for (int k = 0; k < INFLIGHT; k++) {
			if (req[k]) {
				if (netdrv_test(d, req[k], &done, &got) != ncclSuccess)
					return -1;
				if (!done)
					continue;
				req[k] = NULL;
				pending--;
				moved = 1;
			}
			if (last_posted)
				continue;
			last_posted = now_s() >= end;
			fill(buf[k], size / 8, rank, seq, last_posted);
			if (netdrv_isend(d, scomm, buf[k], size, 0, NULL, &req[k]) != ncclSuccess)
				return -1;
			if (req[k]) {
				seq++;
				pending++;
			} else {
				last_posted = 0; /* refused: post again */
			}
		}
		if (last_posted && !pending)
			break;
		if (now_s() > deadline)
			return -1;
		if (!moved)
			idle();
	}
	for (int k = 0; k < INFLIGHT; k++)
		free(buf[k]);
	return 0;
}

struct rslot {
	void *req;
	uint64_t *buf;
};

static int receiver(struct netdrv *d, void **rcomm, int nranks, size_t size, double t0, double warm,
		    double end, double deadline)
{
	struct rslot sl[MAXRANKS][INFLIGHT];
	uint64_t next_seq[MAXRANKS] = {0}, bytes[MAXRANKS] = {0}, msgs = 0, bad = 0, total = 0;
	int open = nranks - 1, finished[MAXRANKS] = {0}, head[MAXRANKS] = {0};
	double w0 = t0 + warm, span = end - w0;

	memset(sl, 0, sizeof(sl));
	for (int c = 0; c < nranks - 1; c++)
		for (int k = 0; k < INFLIGHT; k++)
			if (!(sl[c][k].buf = malloc(size)))
				return -1;
	while (open > 0) {
		int moved = 0;

		for (int c = 0; c < nranks - 1; c++) {
			struct rslot *s;
			int done = 0, got = 0, r, last;
			double t;

			if (finished[c])
				continue;
			/* keep INFLIGHT receives posted; they complete in posting order */
			for (int k = 0; k < INFLIGHT; k++) {
				s = &sl[c][(head[c] + k) % INFLIGHT];
				if (!s->req) {
					void *data = s->buf;
					size_t sz = size;
					int tag = 0;

					if (netdrv_irecv(d, rcomm[c], 1, &data, &sz, &tag, NULL, &s->req) !=
					    ncclSuccess)
						return -1;
				}
			}
			s = &sl[c][head[c]];
			if (!s->req)
				continue; /* refused: post again */
			if (netdrv_test(d, s->req, &done, &got) != ncclSuccess)
				return -1;
			if (!done)
				continue;
			s->req = NULL;
			moved = 1;
			head[c] = (head[c] + 1) % INFLIGHT;
			t = now_s();
			msgs++;
			if ((size_t)got != size || check(s->buf, size / 8, nranks, next_seq, &r, &last) < 0) {
				bad++;
				continue;
			}
			if (t >= w0 && t <= end) {
				bytes[r] += size;
				total += size;
			}
			if (last) {
				finished[c] = 1;
				open--;
			}
		}
		if (now_s() > deadline) {
			fprintf(stderr, "fq-incast: receiver: %d sender(s) not finished by the deadline\n",
				open);
			return -1;
		}
		if (!moved)
			idle();
	}
	printf("incast senders=%d window_s=%.2f bytes=%llu mbps=%.1f per_sender_mbps=", nranks - 1, span,
	       (unsigned long long)total, (double)total * 8 / span / 1e6);
	for (int r = 1; r < nranks; r++)
		printf("%s%.1f", r > 1 ? "," : "", (double)bytes[r] * 8 / span / 1e6);
	printf(" messages=%llu bad=%llu\n", (unsigned long long)msgs, (unsigned long long)bad);
	fflush(stdout);
	return bad ? -1 : 0;
}

int main(int argc, char **argv)
{
	char err[256], mine[NCCL_NET_HANDLE_MAXSIZE], all[MAXRANKS][NCCL_NET_HANDLE_MAXSIZE];
	void *lcomm = NULL, *scomm = NULL, *rcomm[MAXRANKS] = {0};
	struct bootstrap *b = NULL;
	struct netdrv *d = NULL;
	int rank, nranks, naccepted = 0, rc = 1;
	double secs, warm, t0, deadline;
	size_t size;

	if (argc != 8 || (rank = atoi(argv[2])) < 0 || (nranks = atoi(argv[3])) < 2 || nranks > MAXRANKS ||
	    rank >= nranks || (secs = atof(argv[5])) <= 0 || (warm = atof(argv[6])) < 0 || warm >= secs ||
	    (size = strtoull(argv[7], NULL, 10)) < 64 || size % 8) {
		fprintf(stderr,
			"usage: fq-incast PLUGIN.so RANK NRANKS HOST:PORT SECONDS WARMUP SIZE\n"
			"  (2..64 ranks, rank 0 receives; WARMUP < SECONDS; SIZE >= 64, a multiple of 8)\n");
		return 2;
	}
	if (netdrv_open(argv[1], 0, &d, err, sizeof(err)) < 0) {
		fprintf(stderr, "fq-incast: %s\n", err);
		return 1;
	}
	if (bootstrap_open(argv[4], rank, nranks, 60, &b, err, sizeof(err)) < 0) {
		fprintf(stderr, "fq-incast: bootstrap: %s\n", err);
		goto out;
	}
	memset(mine, 0, sizeof(mine));
	if (netdrv_init(d, plugin_log) != ncclSuccess ||
	    (rank == 0 && netdrv_listen(d, 0, mine, &lcomm) != ncclSuccess) ||
	    bootstrap_allgather(b, mine, all, sizeof(mine)) < 0) {
		fprintf(stderr, "fq-incast: rank %d: init, listen or the handle exchange failed\n", rank);
		goto out;
	}
	deadline = now_s() + 60;
	while (rank ? !scomm : naccepted < nranks - 1) {
		if (rank ? netdrv_connect(d, 0, all[0], &scomm) != ncclSuccess
			 : netdrv_accept(d, lcomm, &rcomm[naccepted]) != ncclSuccess) {
			fprintf(stderr, "fq-incast: rank %d: connect or accept failed\n", rank);
			goto out;
		}
		naccepted += rank == 0 && rcomm[naccepted];
		if (now_s() > deadline) {
			fprintf(stderr, "fq-incast: rank %d: no connection in 60 s\n", rank);
			goto out;
		}
	}
	if (bootstrap_barrier(b) < 0)
		goto out;
	t0 = now_s();
	rc = rank ? sender(d, scomm, rank, size, t0 + secs, t0 + secs + 60)
		  : receiver(d, rcomm, nranks, size, t0, warm, t0 + secs, t0 + secs + 60);
	if (rc < 0)
		fprintf(stderr, "fq-incast: rank %d failed\n", rank);
	rc = rc < 0 ? 1 : 0;
	/* everyone done before anyone closes: a close mid-transfer is an error there */
	if (bootstrap_barrier(b) < 0)
		rc = 1;
out:
	if (scomm)
		netdrv_close_send(d, scomm);
	for (int c = 0; c < naccepted; c++)
		netdrv_close_recv(d, rcomm[c]);
	if (lcomm)
		netdrv_close_listen(d, lcomm);
	netdrv_close(d);
	if (b)
		bootstrap_close(b);
	return rc;
}
