/*
 * fuzz-hello: what a listener of the NCCL plugin reads before a lane is
 * admitted: connections parked in a struct fqn_hello_wait (real sockets:
 * socketpairs), bytes arriving on them in any split, peers closing, time
 * passing (the hello timeout), and the hellos that complete decoded and
 * checked as a rejoin of one fixed connection. Input: a list of
 * operations, 1 byte each plus their arguments. Checks: never more than
 * FQN_HELLO_SLOTS parked, none past the timeout after a poll, a whole
 * hello (want bytes) handed out exactly once, a decoded hello encodes to
 * the same bytes, a rejoin admitted only with the connection's id, token,
 * lane count and chunk size, and no socket leaked.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nccl-plugin/hello.h"
#include "nccl-plugin/plog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PEERS   (FQN_HELLO_SLOTS + 8)
#define TIMEOUT (500LL * 1000000)

static void quiet(int level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
	(void)level, (void)flags, (void)file, (void)line, (void)fmt;
}

static const struct fqn_hello conn = {.nlanes = 4,
				      .flags = FQN_HELLO_F_CONTROL | FQN_HELLO_F_REJOIN,
				      .chunk_size = 512 << 10,
				      .token = 0x1122334455667788ULL,
				      .conn_id = 0x99aabbccddeeff00ULL};

static void check_hello(const uint8_t *buf)
{
	struct fqn_hello h;
	uint8_t again[FQN_HELLO_SIZE];
	const char *why;

	if (fqn_hello_decode(buf, &h) < 0)
		return;
	fqn_hello_encode(&h, again);
	if (memcmp(again + 4, buf + 4, FQN_HELLO_SIZE - 4) != 0 || h.lane >= h.nlanes)
		abort();
	if (fqn_hello_rejoin_check(&h, &conn, &why) == 0 &&
	    (h.chunk_size != conn.chunk_size || h.nlanes != conn.nlanes || h.lane >= conn.nlanes ||
	     h.token != conn.token || h.conn_id != conn.conn_id || !(h.flags & FQN_HELLO_F_REJOIN)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fqn_hello_wait w;
	int peer[PEERS], npeers = 0, probe;
	int64_t now = 1000000000;
	size_t want;

	fqn_log_set_logger(quiet);
	if (size < 1)
		return 0;
	want = data[0] & 1 ? FQN_HELLO_MAX : FQN_HELLO_SIZE; /* an IB lane's hello carries its QP handle */
	data++, size--;
	fqn_hello_wait_init(&w, "fuzz");
	probe = dup(0);
	close(probe);
	while (size >= 2) {
		uint8_t op = data[0], arg = data[1];
		struct fqn_hello_slot out;
		int sv[2];

		data += 2, size -= 2;
		switch (op % 5) {
		case 0: /* a connection arrives */
			if (npeers == PEERS ||
			    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
				break;
			peer[npeers++] = sv[1];
			fqn_hello_wait_add(&w, sv[0], arg, now, TIMEOUT);
			break;
		case 1: { /* bytes from a peer */
			size_t n = arg % 64 < size ? arg % 64 : size;

			if (npeers && size)
				if (send(peer[data[0] % npeers], data + 1, n ? n - 1 : 0, MSG_NOSIGNAL) < 0)
					break; /* the listener closed it */
			data += n, size -= n;
			break;
		}
		case 2: /* a peer closes */
			if (npeers) {
				int k = arg % npeers;

				close(peer[k]);
				peer[k] = peer[--npeers];
			}
			break;
		case 3: /* time passes */
			now += (int64_t)arg * 10 * 1000000;
			break;
		case 4: /* the listener polls */
			while (fqn_hello_wait_next(&w, want, now, TIMEOUT, &out) == 1) {
				if (out.got != want || out.fd < 0)
					abort();
				check_hello(out.buf);
				close(out.fd);
			}
			for (int k = 0; k < w.n; k++)
				if (now - w.slot[k].since_ns > TIMEOUT || w.slot[k].got >= want)
					abort();
			break;
		}
		if (w.n < 0 || w.n > FQN_HELLO_SLOTS)
			abort();
	}
	fqn_hello_wait_close(&w);
	while (npeers)
		close(peer[--npeers]);
	if (w.n != 0 || (probe >= 0 && dup(0) != probe))
		abort(); /* a socket leaked */
	if (probe >= 0)
		close(probe);
	return 0;
}
