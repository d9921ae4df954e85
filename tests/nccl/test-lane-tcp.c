/*
 * test-lane-tcp: the TCP lane's data path and control records.
 *
 * Data: chunks of every size class (empty, small ones staged by peeking,
 * ones across the stage, large ones read in place), in a mixed order,
 * arrive whole and in order; a small chunk stays in the kernel's queue
 * (not yet ACKed) until the lane's next read, which takes it out.
 *
 * Control records: when the way back is full.
 * A receiving end whose socket cannot take an ack must say so (tx_ctrl 1:
 * queued), finish it on the next call, and never interleave or lose a
 * record: an ack left queued with nothing newer to push it out stalled
 * both ranks of a job for good once a congested path had filled the
 * socket (the sender was waiting for exactly that ack).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nccl-plugin/control/relia.h"
#include "nccl-plugin/lanes/lane.h"
#include "tests/unit/tap.h"

/* A connected loopback pair: *a the connecting end, *b the accepted one. */
static int tcp_pair(int *a, int *b)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(l, 1) < 0 ||
	    getsockname(l, (struct sockaddr *)&sa, &len) < 0)
		return -1;
	*a = socket(AF_INET, SOCK_STREAM, 0);
	if (*a < 0 || connect(*a, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -1;
	*b = accept(l, NULL, NULL);
	close(l);
	return *b < 0 ? -1 : 0;
}

static void bail(const char *what)
{
	printf("Bail out! %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Bytes in the kernel's receive queue of fd. */
static int queued(int fd)
{
	int n = -1;

	return ioctl(fd, SIOCINQ, &n) < 0 ? -1 : n;
}

#define CHUNK (1 << 20)

/* Send one chunk of len bytes (pattern seeded by seq) and receive it:
 * 0 when it arrived whole and right. */
static int one_chunk(struct fqn_lane *snd, struct fqn_lane *rcv, uint8_t *src, uint8_t *dst, uint32_t len,
		     uint64_t seq)
{
	struct fqn_chunk_hdr h = {.seq = seq, .msg_size = len, .len = len}, got;
	const char *why = NULL;
	int sent = 0, have = 0, rc = 0;
	void *cookie;

	for (uint32_t i = 0; i < len; i++)
		src[i] = (uint8_t)(seq * 131 + i * 7);
	if (snd->ops->tx_chunk(snd, &h, src, src) < 0)
		return -1;
	for (long spins = 0; spins < 50000000 && (!sent || !have); spins++) {
		if (!sent && (rc = snd->ops->tx_progress(snd, &cookie)) < 0)
			return -1;
		sent |= rc == 1;
		if (!have && (rc = rcv->ops->rx_header(rcv, &got, &why)) == 1) {
			if (got.seq != seq || got.len != len)
				return -1;
			while ((rc = rcv->ops->rx_payload(rcv, dst)) == 0)
				;
			if (rc < 0)
				return -1;
			have = 1;
		} else if (rc < 0)
			return -1;
	}
	return sent && have && !memcmp(src, dst, len) ? 0 : -1;
}

static void data_path(void)
{
	static const uint32_t sizes[] = {8, 0,     4096, 4097, 16384,     16300, CHUNK,
					 1, 40000, 8,    3000, CHUNK - 1, 2};
	struct fqn_lane *snd = NULL, *rcv = NULL;
	struct fqn_chunk_hdr h;
	uint8_t *src = malloc(CHUNK), *dst = malloc(CHUNK);
	const char *why = NULL;
	int a, b, bad = 0, n;

	if (!src || !dst || tcp_pair(&a, &b) < 0)
		bail("no loopback TCP pair");
	if (fqn_lane_tcp_adopt(a, 1 << 20, 0, &snd) < 0 || fqn_lane_tcp_adopt(b, 1 << 20, 0, &rcv) < 0)
		bail("fqn_lane_tcp_adopt");
	snd->chunk_size = rcv->chunk_size = CHUNK;
	for (int round = 0; round < 20; round++)
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
			bad += one_chunk(snd, rcv, src, dst, sizes[k], round * 100 + k) < 0;
	is_int(bad, 0, "%zu chunks of 0 B to 1 MiB, small and large mixed: whole and in order",
	       20 * sizeof(sizes) / sizeof(sizes[0]));

	/* a small chunk: delivered, yet still in the kernel's queue */
	bad = one_chunk(snd, rcv, src, dst, 8, 9999);
	n = queued(b);
	ok(!bad && n == FQN_CHUNK_HDR_SIZE + 8,
	   "an 8-byte chunk delivered stays queued in the kernel (%d bytes)", n);
	ok(rcv->ops->rx_header(rcv, &h, &why) == 0 && queued(b) == 0, "the next read takes it out");
	snd->ops->destroy(snd);
	rcv->ops->destroy(rcv);
	free(src);
	free(dst);
}

int main(void)
{
	struct fqn_lane *snd = NULL, *rcv = NULL;
	uint8_t rec[FQN_CTRL_SIZE];
	uint64_t sent = 0, got = 0, bad = 0, count;
	uint16_t lane;
	int a, b, rc = 0;

	plan(10);
	data_path();
	if (tcp_pair(&a, &b) < 0)
		bail("no loopback TCP pair");
	/* the sending end connected, the receiving end accepted (as in setup.c) */
	if (fqn_lane_tcp_adopt(a, 4096, 0, &snd) < 0 || fqn_lane_tcp_adopt(b, 4096, 0, &rcv) < 0)
		bail("fqn_lane_tcp_adopt");

	/* the sender does not read: acks pile up until the way back is full */
	for (int k = 0; k < 1000000; k++) {
		fqn_ack_encode(1, sent + 1, rec);
		rc = rcv->ops->tx_ctrl(rcv, rec);
		if (rc != 0)
			break;
		sent++;
	}
	ok(rc == 1, "a full socket: the record is taken and queued (tx_ctrl 1), after %llu sent",
	   (unsigned long long)sent);
	sent++; /* the queued one will go out */
	fqn_ack_encode(1, sent + 1, rec);
	ok(rcv->ops->tx_ctrl(rcv, rec) == -EAGAIN, "still full: the next record is refused, not interleaved");

	/* the sender reads everything there is */
	while ((rc = snd->ops->rx_ctrl(snd, rec)) == 1) {
		bad += fqn_ack_decode(rec, &lane, &count) < 0 || lane != 1 || count != got + 1;
		got++;
	}
	ok(rc == 0 && got < sent, "the sender drained %llu records; the queued one has not left",
	   (unsigned long long)got);

	/* the receiving end's next call finishes the queued record first */
	fqn_ack_encode(1, sent + 1, rec);
	ok(rcv->ops->tx_ctrl(rcv, rec) == 0, "room again: the queued record and a new one go (tx_ctrl 0)");
	sent++;
	for (int tries = 0; tries < 1000 && got < sent; tries++) {
		rc = snd->ops->rx_ctrl(snd, rec);
		if (rc < 0)
			break;
		if (rc == 0) {
			usleep(1000);
			continue;
		}
		bad += fqn_ack_decode(rec, &lane, &count) < 0 || lane != 1 || count != got + 1;
		got++;
	}
	is_int((int)(sent - got), 0, "every record arrived (%llu)", (unsigned long long)got);
	is_int((int)bad, 0, "whole, in order, none interleaved");
	ok(snd->ops->rx_ctrl(snd, rec) == 0, "nothing more");
	snd->ops->destroy(snd);
	rcv->ops->destroy(rcv);
	return done_testing();
}
