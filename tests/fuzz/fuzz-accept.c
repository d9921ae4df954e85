/*
 * fuzz-accept: the NCCL plugin's accept paths, the real code over real
 * loopback TCP: setup.c's listeners (fqn_listen, fqn_accept) grouping the
 * hellos of several connectors into connections, and rejoin.c's listener
 * handing re-dialed lanes to the live receive comms (control mode, taken
 * by recv.c on a progress call). Connectors dial either listener or the
 * rejoin port and send hellos with any lane, lane count, present set,
 * chunk size, flags, token (either listener's or a stranger's) and one of
 * 16 connection ids, whole or in pieces; they close at any point; time
 * passes (the hello timeout: CLOCK_MONOTONIC is the harness's, through
 * the linker's --wrap of fq_clock_ns); comms are accepted, progressed and
 * closed in any order.
 *
 * Checks: a returned receive comm has a lane exactly where its present
 * set has one; every lane of a comm (after accept, after each progress)
 * is a socket whose hello named that comm's connection id, its
 * listener's token, that lane, the comm's lane count and chunk size (a
 * rejoin flag only through the rejoin port); a lane's chunk size is its
 * comm's; at the end, with every connector gone, each listener still
 * accepts a well-formed connection when fewer than its 8 groups can
 * legitimately be open, and a live control-mode comm still takes a
 * well-formed re-dial; nothing leaks (sockets: the lowest free
 * descriptor; memory: ASan).
 *
 * Input: byte 0: bit 0 control mode, bit 1 a second listener; then
 * operations, 1 byte (op % 8) and their arguments.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "nccl-plugin/core/comm.h"
#include "nccl-plugin/core/ctx.h"
#include "nccl-plugin/core/net.h"
#include "nccl-plugin/core/progress.h"
#include "nccl-plugin/core/recv.h"
#include "nccl-plugin/core/rejoin.h"
#include "nccl-plugin/core/wire.h"
#include "nccl-plugin/hello.h"
#include "nccl-plugin/nic.h"
#include "nccl-plugin/plog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int64_t __real_fq_clock_ns(clockid_t clock);
int64_t __wrap_fq_clock_ns(clockid_t clock);

#define PEERS     (FQN_HELLO_SLOTS + 12) /* more than a listener parks */
#define RECORDS   256                    /* every connector of one input */
#define COMMS     6
#define LISTENERS 2
#define GROUPS    8 /* setup.c's FQN_GROUPS_MAX */
#define CONN_BASE 0x5eed000000000000ULL
#define MS        1000000LL

static int64_t skew; /* added to CLOCK_MONOTONIC: the harness's time passing */
static uint16_t rejoin_port;

int64_t __wrap_fq_clock_ns(clockid_t clock)
{
	int64_t t = __real_fq_clock_ns(clock);

	return clock == CLOCK_MONOTONIC ? t + skew : t;
}

static void quiet(int level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
	(void)level, (void)flags, (void)file, (void)line, (void)fmt;
}

/* A connector's socket and what it sent. Records outlive their sockets:
 * a lane the plugin adopted is matched to its record by the peer address
 * it names. Each connector binds its own source address (127.1.x.y): a
 * port alone could be the same for two of them, the first closed. */
struct record {
	char addr[32]; /* the connector's "ADDR:PORT", its address its own */
	int target;    /* 0..LISTENERS-1: that listener; -1: the rejoin port */
	uint8_t hello[FQN_HELLO_SIZE];
	size_t sent; /* bytes of hello sent */
	int has_hello;
};

struct listener {
	struct fqn_listen *l;
	uint64_t token;
	uint16_t port;
};

static struct {
	struct record rec[RECORDS];
	int nrec;
	int fd[PEERS], peer_rec[PEERS], npeers;
	struct listener lis[LISTENERS];
	int nlis;
	struct fqn_recv *comm[COMMS];
	int comm_lis[COMMS];
	int control;
} s;

static void setup_once(void)
{
	static int done;

	if (done)
		return;
	done = 1;
	setenv("FABRICIQ_MODE", "control", 1);
	setenv("FABRICIQ_IFACES", "lo", 1);
	setenv("FABRICIQ_TRANSPORT", "tcp", 1);
	setenv("FABRICIQ_TELEMETRY", "0", 1);
	setenv("FABRICIQ_PATH_PAGE", "/nonexistent/fabriciq-fuzz-accept", 1);
	setenv("FABRICIQ_CLOCK_PAGE", "/nonexistent/fabriciq-fuzz-accept", 1);
	setenv("FABRICIQ_LANE_TIMEOUT_MS", "600000", 1);
	setenv("FABRICIQ_FAILOVER_GRACE_MS", "3600000", 1);
	setenv("FABRICIQ_HELLO_TIMEOUT_MS", "5000", 1);
	fqn_log_set_logger(quiet);
	if (fqn_init(quiet) < 0)
		abort();
	/* opened once for the process: before the first input's descriptor count */
	if (fqn_rejoin_port(fqn_context()->rejoin, 0, &rejoin_port) < 0)
		abort();
}

static uint32_t take(const uint8_t **data, size_t *size)
{
	uint32_t v = *size ? **data : 0;

	if (*size)
		(*data)++, (*size)--;
	return v;
}

static struct record *record_of(const struct fqn_lane *l)
{
	for (int k = 0; k < s.nrec; k++)
		if (!strcmp(s.rec[k].addr, l->peer))
			return &s.rec[k];
	return NULL;
}

/* A new connector to target (a listener, or -1: the rejoin port). */
static int peer_connect(int target)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct sockaddr_in src = {.sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(0x7f010000u | (uint32_t)(s.nrec + 1))};
	socklen_t len = sizeof(src);
	int fd;

	if (s.npeers == PEERS || s.nrec == RECORDS)
		abort(); /* the callers leave room */
	a.sin_port = target < 0 ? rejoin_port : s.lis[target].port;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&src, sizeof(src)) < 0 ||
	    (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 && errno != EINPROGRESS) ||
	    getsockname(fd, (struct sockaddr *)&src, &len) < 0) {
		close(fd);
		return -1;
	}
	s.rec[s.nrec] = (struct record){.target = target};
	fqn_sockaddr_str((struct sockaddr *)&src, s.rec[s.nrec].addr, sizeof(s.rec[s.nrec].addr));
	s.fd[s.npeers] = fd;
	s.peer_rec[s.npeers] = s.nrec++;
	return s.npeers++;
}

static void peer_close(int k)
{
	close(s.fd[k]);
	s.npeers--;
	s.fd[k] = s.fd[s.npeers];
	s.peer_rec[k] = s.peer_rec[s.npeers];
}

static void peer_send(int k, size_t n)
{
	struct record *r = &s.rec[s.peer_rec[k]];
	ssize_t w;

	if (n > FQN_HELLO_SIZE - r->sent)
		n = FQN_HELLO_SIZE - r->sent;
	if (!n)
		return;
	w = send(s.fd[k], r->hello + r->sent, n, MSG_NOSIGNAL);
	if (w > 0)
		r->sent += (size_t)w;
}

static const uint32_t chunks[4] = {4096, 8192, 65536, 12288};

/* A hello from operation arguments a (lane, lane count, present), b
 * (connection, chunk size, how present is made), c (flags, token). */
static void make_hello(struct fqn_hello *h, int target, uint8_t a, uint8_t b, uint8_t c)
{
	static const uint64_t stranger = 0x0123456789abcdefULL;
	int t = c >> 2 & 3;

	*h = (struct fqn_hello){.lane = a & 3, .nlanes = 1 + (a >> 2 & 3), .chunk_size = chunks[b >> 4 & 3]};
	h->present = a >> 4;
	if (!(b & 0x80)) /* a well-formed set: the lane's own bit in, none past nlanes */
		h->present = (uint16_t)((h->present | 1u << h->lane) & ((1u << h->nlanes) - 1));
	h->conn_id = CONN_BASE + (b & 15);
	h->flags = (uint16_t)(c & 3);
	if (t == 3)
		t = target;
	h->token = t >= 0 && t < s.nlis ? s.lis[t].token : stranger;
	h->rank1 = 7;
}

/* Every lane of comm k is a socket whose hello named that comm (its
 * connection, its listener's token, the lane, the lane count, the chunk
 * size); after accept (fresh), exactly the present set is there. */
static void check_comm(int k, int fresh)
{
	const struct fqn_comm *c = fqn_recv_comm(s.comm[k]);
	const struct listener *L = &s.lis[s.comm_lis[k]];
	uint16_t present = 0;

	if (c->nlanes < 1 || c->nlanes > 4)
		abort();
	for (int i = 0; i < FQN_MAX_LANES; i++) {
		const struct fqn_lane *l = c->lanes[i];
		struct record *r;
		struct fqn_hello h;

		if (!l)
			continue;
		if (i >= c->nlanes || l->index != i || l->chunk_size != c->chunk_size)
			abort();
		r = record_of(l);
		if (!r || r->sent != FQN_HELLO_SIZE || fqn_hello_decode(r->hello, &h) < 0)
			abort(); /* a lane from no connector, or before its whole hello */
		if (h.conn_id != c->conn_id || h.token != L->token || h.lane != i || h.nlanes != c->nlanes ||
		    h.chunk_size != c->chunk_size)
			abort(); /* admitted into a connection it does not belong to */
		if (r->target < 0 ? !c->control || !(h.flags & FQN_HELLO_F_REJOIN)
				  : r->target != s.comm_lis[k] || (h.flags & FQN_HELLO_F_REJOIN))
			abort();
		if (fresh && r->target >= 0)
			present = h.present;
	}
	if (fresh)
		for (int i = 0; i < c->nlanes; i++)
			if (!!c->lanes[i] != !!(present & 1u << i))
				abort(); /* returned before its present set was in, or with a stranger */
}

/* Keep comm r of listener li (or close it: no room) and check it. */
static int adopt(struct fqn_recv *r, int li)
{
	int k;

	for (k = 0; k < COMMS && s.comm[k]; k++)
		;
	if (k == COMMS) {
		fqn_close_recv(r);
		return -1;
	}
	s.comm[k] = r;
	s.comm_lis[k] = li;
	check_comm(k, 1);
	return k;
}

/* 1 if an accept on listener li returned a comm, 0 if not. */
static int accept_on(int li)
{
	struct fqn_recv *r = NULL;

	if (fqn_accept(s.lis[li].l, &r) < 0 || !r)
		return 0;
	adopt(r, li);
	return 1;
}

static void progress_all(void)
{
	skew += 3 * MS; /* past recv.c's rejoin poll period */
	for (int k = 0; k < COMMS; k++)
		if (s.comm[k]) {
			fqn_recv_progress(s.comm[k], NULL);
			check_comm(k, 0);
		}
}

/* Listener li's groups that can be open: the connection ids it was sent a
 * whole hello for that it must take (decodes, its token, no rejoin flag,
 * control only in control mode). */
static int groups_possible(int li)
{
	uint32_t ids = 0;

	for (int k = 0; k < s.nrec; k++) {
		const struct record *r = &s.rec[k];
		struct fqn_hello h;

		if (r->target != li || r->sent != FQN_HELLO_SIZE || fqn_hello_decode(r->hello, &h) < 0 ||
		    h.token != s.lis[li].token || (h.flags & FQN_HELLO_F_REJOIN) ||
		    ((h.flags & FQN_HELLO_F_CONTROL) && !s.control))
			continue;
		ids |= 1u << (h.conn_id - CONN_BASE);
	}
	return __builtin_popcount(ids);
}

/* A well-formed connection of nlanes lanes to listener li must be accepted. */
static void clean_connect(int li, int nlanes)
{
	int peers[4];
	struct fqn_hello h = {.nlanes = (uint16_t)nlanes,
			      .flags = s.control ? FQN_HELLO_F_CONTROL : 0,
			      .chunk_size = 8192,
			      .token = s.lis[li].token,
			      .conn_id = 0xc1ea000000000000ULL + (uint64_t)li,
			      .present = (uint16_t)((1u << nlanes) - 1)};
	int k, got = 0;

	for (int i = 0; i < nlanes; i++) {
		peers[i] = peer_connect(li);
		if (peers[i] < 0)
			abort();
		h.lane = (uint16_t)i;
		fqn_hello_encode(&h, s.rec[s.peer_rec[peers[i]]].hello);
		peer_send(peers[i], FQN_HELLO_SIZE);
	}
	for (int n = 0; n < 8 && !got; n++) {
		struct fqn_recv *r = NULL;

		if (fqn_accept(s.lis[li].l, &r) < 0)
			abort();
		if (!r)
			continue;
		got = fqn_recv_comm(r)->conn_id == h.conn_id;
		if (got && s.comm[COMMS - 1]) { /* another connection took the room */
			fqn_close_recv(s.comm[COMMS - 1]);
			s.comm[COMMS - 1] = NULL;
		}
		k = adopt(r, li);
		if (got && k < 0)
			abort();
	}
	if (!got)
		abort(); /* the listener shut to a well-formed connection */
}

/* A well-formed re-dial of lane 0 of comm k must replace its lane 0. */
static void clean_rejoin(int k)
{
	const struct fqn_comm *c = fqn_recv_comm(s.comm[k]);
	struct fqn_hello h = {.nlanes = (uint16_t)c->nlanes,
			      .flags = FQN_HELLO_F_CONTROL | FQN_HELLO_F_REJOIN,
			      .chunk_size = (uint32_t)c->chunk_size,
			      .token = s.lis[s.comm_lis[k]].token,
			      .conn_id = c->conn_id,
			      .present = 1};
	int p = peer_connect(-1), got = 0;

	if (p < 0)
		abort();
	fqn_hello_encode(&h, s.rec[s.peer_rec[p]].hello);
	peer_send(p, FQN_HELLO_SIZE);
	for (int n = 0; n < 8 && !got; n++) {
		progress_all();
		got = c->lanes[0] && record_of(c->lanes[0]) == &s.rec[s.peer_rec[p]];
	}
	if (!got && !c->err)
		abort(); /* a live comm refused its own lane */
}

static void finish(void)
{
	struct fqn_lane *l;
	int live = -1;

	/* every connector gone; the listeners read their ends closed */
	while (s.npeers)
		peer_close(0);
	for (int li = 0; li < s.nlis; li++) {
		for (int n = 0; n < 2 * GROUPS && accept_on(li); n++)
			;
		if (s.comm[COMMS - 1]) { /* room for the clean one */
			fqn_close_recv(s.comm[COMMS - 1]);
			s.comm[COMMS - 1] = NULL;
		}
		if (groups_possible(li) < GROUPS)
			clean_connect(li, 1 + li);
	}
	progress_all(); /* the rejoin listener reads its ends closed */
	for (int k = 0; k < COMMS && s.control; k++)
		if (s.comm[k] && !fqn_recv_comm(s.comm[k])->err)
			live = k;
	if (live >= 0)
		clean_rejoin(live);
	for (int k = 0; k < COMMS; k++)
		if (s.comm[k])
			fqn_close_recv(s.comm[k]);
	for (int li = 0; li < s.nlis; li++)
		fqn_close_listen(s.lis[li].l);
	while (s.npeers)
		peer_close(0);
	/* the rejoin listener (the process's) drops what is parked: a poll
	 * reads what a socket has, the next its end */
	for (int n = 0; n < 2; n++)
		fqn_rejoin_take(fqn_context()->rejoin, &s, &l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fqn_ctx *ctx;
	int probe;

	if (size < 1)
		return 0;
	setup_once();
	ctx = fqn_context();
	memset(&s, 0, sizeof(s));
	s.control = data[0] & 1;
	s.nlis = 1 + (data[0] >> 1 & 1);
	ctx->cfg.control = s.control;
	data++, size--;
	probe = dup(0);
	close(probe);
	for (int li = 0; li < s.nlis; li++) {
		uint8_t handle[NCCL_NET_HANDLE_MAXSIZE];
		const struct fqn_handle *h = (const struct fqn_handle *)handle;

		if (fqn_listen(0, handle, &s.lis[li].l) < 0)
			abort();
		s.lis[li].token = h->token;
		s.lis[li].port = h->addr[0].port;
	}
	while (size) {
		uint8_t op = (uint8_t)take(&data, &size);
		uint8_t a = (uint8_t)take(&data, &size);

		switch (op % 8) {
		case 0: /* a connector dials a listener or the rejoin port */
			if (s.npeers < PEERS && s.nrec < RECORDS - 8) /* room for the clean ones */
				peer_connect((a & 3) < 2 ? (a & 1) % s.nlis : -1);
			break;
		case 1: /* a connector's hello: whole, or its first bytes */
			if (s.npeers) {
				int k = a % s.npeers;
				struct record *r = &s.rec[s.peer_rec[k]];
				uint8_t b = (uint8_t)take(&data, &size), c = (uint8_t)take(&data, &size);
				uint8_t d = (uint8_t)take(&data, &size);
				struct fqn_hello h;

				if (r->has_hello)
					break;
				make_hello(&h, r->target, b, c, d);
				fqn_hello_encode(&h, r->hello);
				r->has_hello = 1;
				peer_send(k, d >> 4 ? (size_t)(d >> 4) * 3 : FQN_HELLO_SIZE);
			}
			break;
		case 2: /* more of a connector's hello */
			if (s.npeers && s.rec[s.peer_rec[a % s.npeers]].has_hello)
				peer_send(a % s.npeers, 1 + take(&data, &size) % FQN_HELLO_SIZE);
			break;
		case 3: /* a connector closes */
			if (s.npeers)
				peer_close(a % s.npeers);
			break;
		case 4: /* time passes: up to 12.75 s, past the hello timeout */
			skew += (int64_t)a * 50 * MS;
			break;
		case 5:
			accept_on((a & 1) % s.nlis);
			break;
		case 6:
			progress_all();
			break;
		case 7: /* the owner closes a receive comm */
			if (s.comm[a % COMMS]) {
				fqn_close_recv(s.comm[a % COMMS]);
				s.comm[a % COMMS] = NULL;
			}
			break;
		}
	}
	finish();
	ctx->cfg.control = 1;
	if (probe >= 0 && dup(0) != probe)
		abort(); /* a socket leaked */
	if (probe >= 0)
		close(probe);
	return 0;
}
