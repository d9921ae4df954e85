/*
 * test-peer: the receiving side of the plugin against a hostile or broken
 * peer (hardening finding 10), in one process over loopback. The peer is
 * this test: raw TCP sockets that send hellos and chunks byte for byte as
 * a sender would, or not quite. Control mode: a duplicate chunk is dropped
 * and the message completes only when its last hole is filled; a re-dialed
 * lane whose hello has another chunk size or lane count is closed (before
 * the fix it was installed, and its 1 MiB copy of a chunk overran the
 * 64 KiB sink); a matching one is taken and acked. Monitor mode: a
 * duplicate fails the receive instead of completing it with a hole. 64
 * connections that never send a hello hold the listener's (and the rejoin
 * listener's) slots for FABRICIQ_HELLO_TIMEOUT_MS only: then they are
 * closed and the next connection gets through.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "nccl-plugin/control/relia.h"
#include "nccl-plugin/core/comm.h"
#include "nccl-plugin/core/progress.h"
#include "nccl-plugin/core/wire.h"
#include "nccl-plugin/hello.h"
#include "nccl-plugin/plog.h"
#include "tests/nccl/nccl-test.h"
#include "tests/unit/tap.h"

#define C     (64 << 10)
#define IDLE  FQN_HELLO_SLOTS
#define TOKEN (((struct fqn_handle *)handle)->token)

static char handle[NCCL_NET_HANDLE_MAXSIZE];
static int warns_chunk_size, warns_lanes, warns_twice, timed_out;

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	(void)flags, (void)file, (void)line;
	if (level != NCCL_LOG_WARN)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	warns_chunk_size += strstr(msg, "chunk size differs from the connection's") != NULL;
	warns_lanes += strstr(msg, "lane count differs from the connection's") != NULL;
	warns_twice += strstr(msg, "chunk received twice") != NULL;
	if (strstr(msg, "sent no hello within 500 ms"))
		timed_out += atoi(strstr(msg, "closed ") + 7);
}

/* A blocking TCP connection to the listener's first address, at port
 * (network order; 0: the listener's own). */
static int dial(uint16_t port)
{
	const struct fqn_handle *h = (const struct fqn_handle *)handle;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = port ? port : h->addr[0].port};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	memcpy(&sa.sin_addr, h->addr[0].addr, 4);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int send_all(int fd, const void *p, size_t n)
{
	const char *b = p;

	while (n) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);

		if (w < 0)
			return -errno;
		b += w, n -= (size_t)w;
	}
	return 0;
}

static int hello(int fd, int lane, int nlanes, uint16_t flags, uint32_t chunk, uint64_t conn_id)
{
	/* a re-dial names its own lane; a new connection's lanes all of them */
	uint16_t present = flags & FQN_HELLO_F_REJOIN ? 1u << lane : (1u << nlanes) - 1;
	struct fqn_hello h = {(uint16_t)lane, (uint16_t)nlanes, flags, chunk, TOKEN, conn_id, 0, present};
	uint8_t buf[FQN_HELLO_SIZE];

	fqn_hello_encode(&h, buf);
	return send_all(fd, buf, sizeof(buf));
}

/* Chunk `offset` of message seq (size bytes, tag 7) on lane fd (number
 * lane), cut with chunk size `chunk`, its payload all `fill`. */
static int send_chunk(int fd, int lane, uint64_t seq, uint64_t size, uint64_t offset, size_t chunk, char fill)
{
	struct fqn_chunk_hdr h = {
	    .seq = seq, .msg_size = size, .offset = offset, .tag = 7, .lane = (uint16_t)lane};
	uint8_t raw[FQN_CHUNK_HDR_SIZE];
	char *payload;
	int rc;

	h.len = fqn_chunk_len(size, chunk, offset);
	fqn_chunk_hdr_encode(&h, raw);
	payload = malloc(h.len + 1);
	memset(payload, fill, h.len);
	rc = send_all(fd, raw, sizeof(raw));
	if (rc == 0)
		rc = send_all(fd, payload, h.len);
	free(payload);
	return rc;
}

/* A connection of 2 raw lanes, accepted by l. */
static struct fqn_recv *raw_connection(struct fqn_listen *l, uint64_t conn_id, uint16_t flags, int fds[2])
{
	struct fqn_recv *r = NULL;
	double end = now_s() + 2;

	for (int i = 0; i < 2; i++) {
		fds[i] = dial(0);
		if (fds[i] < 0 || hello(fds[i], i, 2, flags, C, conn_id) < 0)
			return NULL;
	}
	while (!r && now_s() < end)
		if (fqn_accept(l, &r) < 0)
			break;
	return r;
}

/* Test q until it completes or fails, for secs at most: its rc, *done. */
static int spin(struct fqn_req *q, double secs, int *done)
{
	double end = now_s() + secs;
	int rc = 0;

	*done = 0;
	while (!*done && rc == 0 && now_s() < end)
		rc = fqn_test(q, done, NULL, NULL);
	return rc;
}

static struct fqn_req *post(struct fqn_recv *r, char *buf, size_t size)
{
	struct fqn_req *q = NULL;
	void *data = buf;
	int tag = 7;

	memset(buf, 0, size);
	fqn_irecv(r, 1, &data, &size, &tag, &q);
	return q;
}

static int all(const char *b, size_t n, char c)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != c)
			return 0;
	return 1;
}

/* What the plugin did with raw socket fd within secs, progressing r (or
 * accepting on l): 1 it closed it, 2 an ack record arrived, 0 neither. */
static int outcome(int fd, struct fqn_recv *r, struct fqn_listen *l, double secs)
{
	double end = now_s() + secs;

	while (now_s() < end) {
		struct pollfd p = {fd, POLLIN, 0};
		uint8_t rec[FQN_CTRL_SIZE];
		struct fqn_recv *nr = NULL;

		if (r)
			fqn_recv_progress(r, NULL);
		if (l && fqn_accept(l, &nr) == 0 && nr)
			fqn_close_recv(nr);
		if (poll(&p, 1, 1) == 1) {
			ssize_t n = recv(fd, rec, sizeof(rec), MSG_WAITALL);
			uint16_t lane;
			uint64_t count;

			if (n <= 0)
				return 1;
			if (n == (ssize_t)sizeof(rec) && fqn_ack_decode(rec, &lane, &count) == 0)
				return 2;
		}
	}
	return 0;
}

/* Dial `n` connections that never send a hello; then let the plugin see
 * them (progressing r or accepting on l) for 100 ms. */
static void idle_dial(int *fds, int n, uint16_t port, struct fqn_recv *r, struct fqn_listen *l)
{
	for (int k = 0; k < n; k++)
		fds[k] = dial(port);
	outcome(-1, r, l, 0.1);
}

/* Progress r or l until the plugin has closed all n of fds, 3 s at
 * most: how many it closed, and when the first and the last went. */
static int idle_closed(int *fds, int n, struct fqn_recv *r, struct fqn_listen *l, double *first, double *last)
{
	double end = now_s() + 3;
	int closed = 0;

	*first = *last = 0;
	while (closed < n && now_s() < end) {
		outcome(-1, r, l, 0.005);
		for (int k = 0; k < n; k++) {
			struct pollfd p = {fds[k], POLLIN, 0};
			char b;

			if (fds[k] < 0 || poll(&p, 1, 0) != 1 || recv(fds[k], &b, 1, MSG_DONTWAIT) > 0)
				continue;
			close(fds[k]);
			fds[k] = -1;
			*last = now_s();
			*first = closed++ ? *first : *last;
		}
	}
	for (int k = 0; k < n; k++)
		if (fds[k] >= 0)
			close(fds[k]);
	return closed;
}

static void test_control(struct fqn_listen *l, struct fqn_recv **rp, int fds[2])
{
	const uint16_t ctl = FQN_HELLO_F_CONTROL, rejoin = FQN_HELLO_F_CONTROL | FQN_HELLO_F_REJOIN;
	const uint64_t id = 0xc0de0001;
	uint16_t rport = ((struct fqn_handle *)handle)->rejoin_port[0];
	char *buf = malloc(2 * C);
	struct fqn_recv *r = raw_connection(l, id, ctl, fds);
	struct fqn_req *q;
	int done, rc, fd, before;

	*rp = r;
	if (!ok(r, "a 2-lane control-mode connection from raw sockets"))
		return;
	q = post(r, buf, 2 * C);
	send_chunk(fds[0], 0, 0, 2 * C, 0, C, 'a');
	rc = spin(q, 0.2, &done);
	send_chunk(fds[1], 1, 0, 2 * C, 0, C, 'x');
	rc = rc ? rc : spin(q, 0.3, &done);
	ok(!done && rc == 0, "chunk 0 of 2, then a copy of it on the other lane: not complete (rc %d)", rc);
	send_chunk(fds[1], 1, 0, 2 * C, C, C, 'a');
	rc = spin(q, 2, &done);
	ok(done && rc == 0 && all(buf, 2 * C, 'a'),
	   "chunk 1 completes it; the copy was dropped, 128 KiB intact");

	send_chunk(fds[0], 0, 0, 2 * C, 0, C, 'y'); /* a completed message's chunk again */
	q = post(r, buf, 2 * C);
	send_chunk(fds[0], 0, 1, 2 * C, 0, C, 'b');
	send_chunk(fds[1], 1, 1, 2 * C, C, C, 'b');
	rc = spin(q, 2, &done);
	ok(done && rc == 0 && all(buf, 2 * C, 'b'),
	   "a copy of a completed message's chunk is drained; the next message intact");

	/* The overrun: a re-dialed lane 0 announcing 1 MiB chunks, then a
	 * 1 MiB copy of message 0's first chunk (message 0 is complete: the
	 * copy goes to the 64 KiB sink). */
	before = warns_chunk_size;
	fd = dial(rport);
	hello(fd, 0, 2, rejoin, 1 << 20, id);
	fcntl(fd, F_SETFL, O_NONBLOCK); /* as much as the socket takes: nobody reads it yet */
	send_chunk(fd, 0, 0, 1 << 20, 0, 1 << 20, 'z');
	fcntl(fd, F_SETFL, 0);
	is_int(outcome(fd, r, NULL, 1), 1,
	       "a re-dial with 1 MiB chunks (the connection's: 64 KiB) is closed");
	is_int(warns_chunk_size - before, 1, "... with 1 WARN: chunk size differs from the connection's");
	close(fd);
	before = warns_lanes;
	fd = dial(rport);
	hello(fd, 0, 3, rejoin, C, id);
	is_int(outcome(fd, r, NULL, 1), 1, "a re-dial announcing 3 lanes (the connection has 2) is closed");
	is_int(warns_lanes - before, 1, "... with 1 WARN: lane count differs");
	close(fd);
	q = post(r, buf, 2 * C);
	send_chunk(fds[0], 0, 2, 2 * C, 0, C, 'c');
	send_chunk(fds[1], 1, 2, 2 * C, C, C, 'c');
	rc = spin(q, 2, &done);
	ok(done && rc == 0 && all(buf, 2 * C, 'c'),
	   "the refused lanes changed nothing: the next message intact");

	fd = dial(rport);
	hello(fd, 0, 2, rejoin, C, id);
	is_int(outcome(fd, r, NULL, 1), 2,
	       "a re-dial that matches (2 lanes, 64 KiB, token, id) is taken and acked");
	close(fds[0]); /* the receiver dropped it for the new one */
	fds[0] = fd;
	q = post(r, buf, 2 * C);
	send_chunk(fds[0], 0, 3, 2 * C, 0, C, 'd');
	send_chunk(fds[1], 1, 3, 2 * C, C, C, 'd');
	rc = spin(q, 2, &done);
	ok(done && rc == 0 && all(buf, 2 * C, 'd'), "and carries the next message");
	free(buf);
}

static void test_monitor(struct fqn_listen *l)
{
	char *buf = malloc(2 * C);
	int fds[2] = {-1, -1}, done, rc, before = warns_twice;
	struct fqn_recv *r = raw_connection(l, 0xc0de0002, 0, fds);
	struct fqn_req *q;

	if (ok(r, "a 2-lane monitor-mode connection from raw sockets")) {
		q = post(r, buf, 2 * C);
		send_chunk(fds[0], 0, 0, 2 * C, 0, C, 'a');
		send_chunk(fds[1], 1, 0, 2 * C, 0, C, 'a');
		rc = spin(q, 1, &done);
		ok(!done && rc == -EBADMSG,
		   "chunk 0 of 2 twice: the receive fails with EBADMSG (rc %d), never completes with a hole "
		   "(done %d)",
		   rc, done);
		is_int(warns_twice - before, 1, "... with 1 WARN: chunk received twice");
		fqn_close_recv(r);
	}
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(buf);
}

/* 64 connections that never send a hello on port (0: the listener l's;
 * else the rejoin listener, served by progressing r). */
static void idle_slots(struct fqn_listen *l, struct fqn_recv *r, uint16_t port, const char *what)
{
	int idle[IDLE], fd, closed, before = timed_out;
	double t0 = now_s(), first, last;

	idle_dial(idle, IDLE, port, r, l);
	fd = dial(port);
	if (port)
		hello(fd, 1, 2, FQN_HELLO_F_CONTROL | FQN_HELLO_F_REJOIN, C, 0xc0de0001);
	else
		hello(fd, 0, 2, 0, C, 0xc0de0003);
	is_int(outcome(fd, r, l, 0.2), 1, "%s: %d connections owe their hello, the next one is refused", what,
	       IDLE);
	close(fd);
	closed = idle_closed(idle, IDLE, r, l, &first, &last);
	is_int(closed, IDLE, "%s: all %d idle connections closed", what, IDLE);
	ok(closed == IDLE && first - t0 >= 0.5,
	   "... after FABRICIQ_HELLO_TIMEOUT_MS=500: %.0f..%.0f ms after they connected", (first - t0) * 1e3,
	   (last - t0) * 1e3);
	is_int(timed_out - before, IDLE, "... and the WARNs count %d", IDLE);
}

static void test_hello_timeout(struct fqn_listen *l, struct fqn_recv *cr, int cfds[2])
{
	int fds[2] = {-1, -1}, fd;
	struct fqn_recv *r;

	idle_slots(l, NULL, 0, "listener");
	r = raw_connection(l, 0xc0de0004, 0, fds);
	ok(r, "listener: the next connection gets through");
	if (r)
		fqn_close_recv(r);
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (!cr)
		return;
	idle_slots(NULL, cr, ((struct fqn_handle *)handle)->rejoin_port[0], "rejoin listener");
	fd = dial(((struct fqn_handle *)handle)->rejoin_port[0]);
	hello(fd, 1, 2, FQN_HELLO_F_CONTROL | FQN_HELLO_F_REJOIN, C, 0xc0de0001);
	is_int(outcome(fd, cr, NULL, 1), 2, "rejoin listener: then a re-dialed lane is taken and acked");
	close(cfds[1]);
	cfds[1] = fd;
}

int main(void)
{
	struct fqn_listen *l = NULL;
	struct fqn_recv *r = NULL;
	int fds[2] = {-1, -1};

	setenv("FABRICIQ_MODE", "control", 1);
	setenv("FABRICIQ_IFACES", "lo", 1);
	setenv("FABRICIQ_LANES", "2", 1);
	setenv("FABRICIQ_CHUNK_SIZE", "64K", 1);
	setenv("FABRICIQ_TELEMETRY", "0", 1);
	setenv("FABRICIQ_PATH_PAGE", "/nonexistent/fabriciq-test-peer", 1);
	setenv("FABRICIQ_LANE_TIMEOUT_MS", "10000", 1);
	setenv("FABRICIQ_FAILOVER_GRACE_MS", "600000", 1);
	setenv("FABRICIQ_HELLO_TIMEOUT_MS", "500", 1);
	if (!ok(fqn_init(logger) == 0, "plugin init in control mode") ||
	    !ok(fqn_listen(0, handle, &l) == 0, "listen"))
		return done_testing();
	test_control(l, &r, fds);
	test_monitor(l);
	test_hello_timeout(l, r, fds);
	fqn_close_listen(l);
	if (r)
		fqn_close_recv(r);
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	fqn_fini();
	return done_testing();
}
