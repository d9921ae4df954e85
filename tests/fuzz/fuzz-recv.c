/*
 * fuzz-recv: the NCCL plugin's receiving side (recv.c, the real code)
 * fed by a peer that sends anything: 1 to 4 TCP lanes over loopback,
 * monitor or control mode, receives posted, then chunks on any lane
 * (duplicates, chunks of messages not posted or complete, lanes cut with
 * another chunk size than the connection's), raw bytes, lanes closed,
 * progress calls. ASan catches a write past a receive buffer or the
 * control-mode sink; the harness checks that a receive that completes
 * has every byte of its reported size written by some chunk (buffers
 * start as 0xAA, payloads are 0x11: no completion with a hole), a size
 * no larger than the buffer, and that no socket leaks.
 *
 * Input: byte 0: bit 0 control mode, bits 1-2 lanes - 1, bit 3 chunk
 * size 8 KiB (else 4 KiB), bits 4-7 lanes that cut with twice that;
 * byte 1: receives to post (1..3), then 2 bytes each (buffer size); then
 * operations: 1 byte (bits 0-1 lane, bits 2-3 kind) and their arguments.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nccl-plugin/core/comm.h"
#include "nccl-plugin/core/progress.h"
#include "nccl-plugin/core/recv.h"
#include "nccl-plugin/plog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define LANES 4
#define RECVS 3

static int lfd = -1;
static struct sockaddr_in laddr;

static void quiet(int level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
	(void)level, (void)flags, (void)file, (void)line, (void)fmt;
}

static int setup_once(void)
{
	socklen_t len = sizeof(laddr);

	if (lfd >= 0)
		return 0;
	setenv("FABRICIQ_MODE", "control", 1);
	setenv("FABRICIQ_IFACES", "lo", 1);
	setenv("FABRICIQ_TELEMETRY", "0", 1);
	setenv("FABRICIQ_PATH_PAGE", "/nonexistent/fabriciq-fuzz-recv", 1);
	setenv("FABRICIQ_CLOCK_PAGE", "/nonexistent/fabriciq-fuzz-recv", 1);
	setenv("FABRICIQ_LANE_TIMEOUT_MS", "600000", 1);
	setenv("FABRICIQ_FAILOVER_GRACE_MS", "3600000", 1);
	fqn_log_set_logger(quiet);
	if (fqn_init(quiet) < 0)
		abort();
	laddr = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&laddr, sizeof(laddr)) < 0 || listen(lfd, 16) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&laddr, &len) < 0)
		abort();
	return 0;
}

/* A TCP lane (receiving end adopted by the plugin) and its peer's socket. */
static int lane_pair(size_t chunk, struct fqn_lane **lane, int *peer)
{
	int fd;

	*peer = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (*peer < 0)
		return -1;
	if (connect(*peer, (struct sockaddr *)&laddr, sizeof(laddr)) < 0 && errno != EINPROGRESS)
		goto fail;
	fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0 || fqn_lane_tcp_adopt(fd, 0, 0, lane) < 0)
		goto fail;
	(*lane)->chunk_size = chunk;
	return 0;
fail:
	close(*peer);
	return -1;
}

static uint32_t take(const uint8_t **data, size_t *size, int n)
{
	uint32_t v = 0;

	for (int i = 0; i < n; i++) {
		v = v << 8 | (*size ? **data : 0);
		if (*size)
			(*data)++, (*size)--;
	}
	return v;
}

/* A chunk as a sender with chunk size `chunk` cuts it (offset idx x chunk). */
static void send_chunk(int fd, int lane, size_t chunk, const uint8_t **data, size_t *size)
{
	static uint8_t payload[16 << 10];
	struct fqn_chunk_hdr h = {.lane = (uint16_t)lane};
	uint8_t raw[FQN_CHUNK_HDR_SIZE];

	h.seq = take(data, size, 1) % 4;
	h.msg_size = take(data, size, 2) % (4 * chunk + 1);
	h.offset = (uint64_t)(take(data, size, 1) % 6) * chunk;
	h.tag = take(data, size, 1) % 8 == 0 ? 8 : 7;
	h.len = h.offset < h.msg_size ? fqn_chunk_len(h.msg_size, chunk, h.offset) : 0;
	fqn_chunk_hdr_encode(&h, raw);
	memset(payload, 0x11, h.len);
	if (send(fd, raw, sizeof(raw), MSG_NOSIGNAL) == (ssize_t)sizeof(raw) && h.len)
		(void)!send(fd, payload, h.len, MSG_NOSIGNAL);
}

struct posted {
	struct fqn_req *q;
	uint8_t *buf;
	size_t cap;
	int done;
};

/* Test every posted receive; a completed one must be whole. */
static void test_all(struct posted *p, int n)
{
	for (int k = 0; k < n; k++) {
		size_t got;
		int nsizes;

		if (!p[k].q || p[k].done)
			continue;
		if (fqn_test(p[k].q, &p[k].done, &got, &nsizes) < 0) {
			p[k].q = NULL; /* the comm failed: its error is sticky */
			continue;
		}
		if (!p[k].done)
			continue;
		if (nsizes != 1 || got > p[k].cap)
			abort();
		for (size_t i = 0; i < got; i++)
			if (p[k].buf[i] != 0x11)
				abort(); /* completed with a hole */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fqn_lane *lanes[LANES];
	struct posted p[RECVS] = {{0}};
	int peer[LANES], nlanes, nrecv, control, probe;
	size_t chunk, lchunk[LANES];
	struct fqn_recv *r = NULL;

	if (size < 2 || setup_once() < 0)
		return 0;
	control = data[0] & 1;
	nlanes = 1 + (data[0] >> 1 & 3);
	chunk = data[0] & 8 ? 8192 : 4096;
	for (int i = 0; i < nlanes; i++)
		lchunk[i] = data[0] >> (4 + i) & 1 ? 2 * chunk : chunk;
	nrecv = 1 + data[1] % RECVS;
	data += 2, size -= 2;
	probe = dup(0);
	close(probe);
	for (int i = 0; i < nlanes; i++)
		if (lane_pair(lchunk[i], &lanes[i], &peer[i]) < 0) {
			while (i--) {
				lanes[i]->ops->destroy(lanes[i]);
				close(peer[i]);
			}
			return 0;
		}
	if (fqn_recv_from_lanes(fqn_context(), 0, lanes, nlanes, chunk, 0xf00d, &r) < 0)
		abort();
	if (control && fqn_recv_enable_control(r, 0xbeef) < 0)
		abort();
	for (int k = 0; k < nrecv; k++) {
		void *buf;
		int tag = 7;

		p[k].cap = take(&data, &size, 2) % (4 * chunk + 1);
		p[k].buf = malloc(p[k].cap ? p[k].cap : 1);
		memset(p[k].buf, 0xAA, p[k].cap);
		buf = p[k].buf;
		if (fqn_irecv(r, 1, &buf, &p[k].cap, &tag, &p[k].q) < 0)
			p[k].q = NULL;
	}
	while (size) {
		uint8_t op = (uint8_t)take(&data, &size, 1);
		int i = (op & 3) % nlanes;

		switch (op >> 2 & 3) {
		case 0:
			send_chunk(peer[i], i, lchunk[i], &data, &size);
			break;
		case 1: { /* raw bytes; never the sentinel, which would pass for a hole */
			size_t n = take(&data, &size, 1) % 64;
			uint8_t raw[64];

			n = n < size ? n : size;
			for (size_t k = 0; k < n; k++)
				raw[k] = data[k] == 0xAA ? 0xAB : data[k];
			(void)!send(peer[i], raw, n, MSG_NOSIGNAL);
			data += n, size -= n;
			break;
		}
		case 2:
			fqn_recv_progress(r, NULL);
			test_all(p, nrecv);
			break;
		case 3:
			shutdown(peer[i], SHUT_WR);
			break;
		}
	}
	for (int k = 0; k < 4; k++) {
		fqn_recv_progress(r, NULL);
		test_all(p, nrecv);
	}
	fqn_close_recv(r);
	for (int i = 0; i < nlanes; i++)
		close(peer[i]);
	for (int k = 0; k < nrecv; k++)
		free(p[k].buf);
	if (probe >= 0 && dup(0) != probe)
		abort(); /* a socket leaked */
	if (probe >= 0)
		close(probe);
	return 0;
}
