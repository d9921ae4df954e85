/*
 * test-lane-tcp: the TCP lane's control records when the way back is full.
 * A receiving end whose socket cannot take an ack must say so (tx_ctrl 1:
 * queued), finish it on the next call, and never interleave or lose a
 * record: an ack left queued with nothing newer to push it out stalled
 * both ranks of a job for good once a congested path had filled the
 * socket (the sender was waiting for exactly that ack).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nccl-plugin/lane.h"
#include "nccl-plugin/relia.h"
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

int main(void)
{
	struct fqn_lane *snd = NULL, *rcv = NULL;
	uint8_t rec[FQN_CTRL_SIZE];
	uint64_t sent = 0, got = 0, bad = 0, count;
	uint16_t lane;
	int a, b, rc = 0;

	plan(7);
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
