/*
 * test-abi: ncclNet conformance through the real exported symbols.
 *
 * dlopens the built libnccl-net-fabriciq.so and, for each ABI version
 * (argument: 8..12), checks one semantic NCCL relies on per test, over
 * loopback (FABRICIQ_IFACES=lo, FABRICIQ_TRANSPORT=tcp unless already set:
 * tests/nccl/test-ib-device.sh runs it over an RDMA NIC with
 * FABRICIQ_TRANSPORT=ib), sender and receiver in this one thread
 * (nothing blocks, so one thread can play both sides, as a proxy does).
 * Every wait is bounded.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/nccl/nccl-test.h"
#include "tests/unit/tap.h"
#include "tools/collbench/netdrv.h"

#define FQN_TEST_SEND_SLOTS (NCCL_NET_MAX_REQUESTS * 8) /* 32 x maxRecvs */

static struct netdrv *d;
static const char *iface; /* the first interface FABRICIQ_IFACES names */
static char last_warn[512];

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	(void)flags;
	if (level != NCCL_LOG_WARN)
		return;
	va_start(ap, fmt);
	vsnprintf(last_warn, sizeof(last_warn), fmt, ap);
	va_end(ap);
	printf("#   [plugin WARN %s:%d] %s\n", file, line, last_warn);
}

struct pair {
	void *l, *s, *r;
};

/* listen, then connect and accept until both return a comm. Returns the
 * number of calls that returned NULL first (0 means "did not wait"). */
static int pair_open(struct pair *p, int *nulls)
{
	char handle[NCCL_NET_HANDLE_MAXSIZE];
	double end = now_s() + 5;

	memset(p, 0, sizeof(*p));
	*nulls = 0;
	if (netdrv_listen(d, 0, handle, &p->l) != ncclSuccess || !p->l)
		return -1;
	if (netdrv_accept(d, p->l, &p->r) != ncclSuccess)
		return -1;
	*nulls += p->r == NULL; /* nobody connected yet: must not block */
	while ((!p->s || !p->r) && now_s() < end) {
		if (!p->s && netdrv_connect(d, 0, handle, &p->s) != ncclSuccess)
			return -1;
		*nulls += !p->s;
		if (!p->r && netdrv_accept(d, p->l, &p->r) != ncclSuccess)
			return -1;
	}
	return p->s && p->r ? 0 : -1;
}

static int pair_close(struct pair *p)
{
	int rc = 0;

	rc |= p->s && netdrv_close_send(d, p->s) != ncclSuccess;
	rc |= p->r && netdrv_close_recv(d, p->r) != ncclSuccess;
	rc |= p->l && netdrv_close_listen(d, p->l) != ncclSuccess;
	return rc ? -1 : 0;
}

/* Test requests until all are done; one failing test ends with its code. */
static ncclResult_t drive(void **reqs, int n, int sizes[][8], double secs)
{
	double end = now_s() + secs;
	int left = n;

	while (left && now_s() < end) {
		for (int i = 0; i < n; i++) {
			int done = 0;
			ncclResult_t rc;

			if (!reqs[i])
				continue;
			rc = netdrv_test(d, reqs[i], &done, sizes ? sizes[i] : NULL);
			if (rc != ncclSuccess)
				return rc;
			if (done) {
				reqs[i] = NULL;
				left--;
			}
		}
	}
	return left ? ncclInProgress : ncclSuccess;
}

static void fill(uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 12));
}

static int check(const uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != (uint8_t)(seed * 131 + i * 7 + (i >> 12)))
			return 0;
	return 1;
}

static void t_props(void)
{
	struct netdrv_props p = {0};
	ncclResult_t rc;
	int n = 0;

	rc = netdrv_devices(d, &n);
	ok(rc == ncclSuccess && n >= 1, "devices: %d", n);
	rc = netdrv_props(d, 0, &p);
	ok(rc == ncclSuccess && p.name && strcmp(p.name, iface) == 0,
	   "device 0 is the interface FABRICIQ_IFACES names (%s)", p.name ? p.name : "(null)");
	ok(p.speed > 0 && p.ptr_support == NCCL_PTR_HOST && p.max_recvs == 8 && p.max_comms > 0,
	   "props: speed %d Mbps, host pointers, maxRecvs %d", p.speed, p.max_recvs);
	if (strcmp(iface, "lo") == 0)
		ok(p.pci_path == NULL, "loopback is virtual: pciPath NULL");
	else
		ok(p.pci_path && p.pci_path[0] == '/', "a real NIC: pciPath %s",
		   p.pci_path ? p.pci_path : "(null)");
	if (netdrv_version(d) == 12)
		is_int(p.rail_id, 0, "v12 railId is the device's rail");
	ok(netdrv_props(d, n, &p) != ncclSuccess, "props of a device that does not exist: error");
}

static void t_connect(void)
{
	struct pair p;
	int nulls = 0;

	ok(pair_open(&p, &nulls) == 0 && nulls > 0,
	   "listen/connect/accept never block: %d NULL returns first", nulls);
	ok(pair_close(&p) == 0, "close while idle");
}

static void t_ordered(void)
{
	enum {
		N = 20
	};
	static uint8_t sb[N][3000], rb[N][4000];
	void *reqs[2 * N];
	int sizes[2 * N][8], tag = 1, good = 1;
	struct pair p;
	int nulls = 0;

	if (pair_open(&p, &nulls) < 0) {
		ok(0, "ordered: connection");
		return;
	}
	for (int i = 0; i < N; i++) {
		void *data = rb[i];
		size_t sz = sizeof(rb[i]);

		fill(sb[i], 100 + 100 * (size_t)i, (unsigned)i);
		netdrv_isend(d, p.s, sb[i], 100 + 100 * (size_t)i, tag, NULL, &reqs[i]);
		netdrv_irecv(d, p.r, 1, &data, &sz, &tag, NULL, &reqs[N + i]);
	}
	ok(drive(reqs, 2 * N, sizes, 5) == ncclSuccess, "20 sends and 20 receives complete");
	for (int i = 0; i < N; i++)
		good &=
		    sizes[N + i][0] == 100 + 100 * i && check(rb[i], (size_t)sizes[N + i][0], (unsigned)i);
	ok(good, "messages match receives in posting order, sizes from test()");
	ok(sizes[0][0] == 100, "a send's test() reports its size");
	ok(pair_close(&p) == 0, "close");
}

static void t_multirecv(void)
{
	static uint8_t sb[3][5000], rb[3][6000];
	void *data[3] = {rb[0], rb[1], rb[2]}, *reqs[4];
	size_t rs[3] = {6000, 6000, 6000};
	int tags[3] = {10, 11, 12}, stags[3] = {12, 10, 11}, sizes[4][8];
	struct pair p;
	int nulls = 0;

	if (pair_open(&p, &nulls) < 0) {
		ok(0, "multi-recv: connection");
		return;
	}
	ok(netdrv_irecv(d, p.r, 3, data, rs, tags, NULL, &reqs[3]) == ncclSuccess && reqs[3],
	   "one receive of 3 buffers with tags 10, 11, 12");
	for (int i = 0; i < 3; i++) {
		fill(sb[i], 1000 * (size_t)(i + 1), (unsigned)stags[i]);
		netdrv_isend(d, p.s, sb[i], 1000 * (size_t)(i + 1), stags[i], NULL, &reqs[i]);
	}
	ok(drive(reqs, 4, sizes, 5) == ncclSuccess, "3 sends (tags 12, 10, 11) complete the grouped receive");
	ok(sizes[3][0] == 2000 && sizes[3][1] == 3000 && sizes[3][2] == 1000,
	   "each tag landed in its buffer, sizes per buffer: %d %d %d", sizes[3][0], sizes[3][1],
	   sizes[3][2]);
	ok(check(rb[0], 2000, 10) && check(rb[1], 3000, 11) && check(rb[2], 1000, 12), "contents by tag");
	pair_close(&p);
}

static void t_sizes(void)
{
	const size_t sizes_[] = {0, 1, 512 * 1024 - 1, 512 * 1024, 512 * 1024 + 1, 8 << 20};
	uint8_t *sb = malloc(9 << 20), *rb = malloc(9 << 20);
	struct pair p;
	int nulls = 0, tag = 3;

	if (pair_open(&p, &nulls) < 0) {
		ok(0, "sizes: connection");
		return;
	}
	for (size_t k = 0; k < sizeof(sizes_) / sizeof(sizes_[0]); k++) {
		size_t rsz = sizes_[k] + 4096; /* receive buffer larger than the send */
		void *data = rb, *reqs[2];
		int sz[2][8];

		fill(sb, sizes_[k], (unsigned)k);
		memset(rb, 0xee, rsz);
		netdrv_irecv(d, p.r, 1, &data, &rsz, &tag, NULL, &reqs[1]);
		netdrv_isend(d, p.s, sb, sizes_[k], tag, NULL, &reqs[0]);
		ok(drive(reqs, 2, sz, 10) == ncclSuccess && sz[1][0] == (int)sizes_[k] &&
		       check(rb, sizes_[k], (unsigned)k) && rb[sizes_[k]] == 0xee,
		   "%zu bytes into a %zu-byte buffer: size %d reported, data intact, nothing past it written",
		   sizes_[k], rsz, sz[1][0]);
	}
	pair_close(&p);
	free(sb);
	free(rb);
}

static void t_limits(void)
{
	void *reqs[FQN_TEST_SEND_SLOTS + 1], *rreqs[NCCL_NET_MAX_REQUESTS + 1], *extra = (void *)1;
	static uint8_t buf[NCCL_NET_MAX_REQUESTS][8];
	struct pair p;
	int nulls = 0, tag = 0, all = 1;

	if (pair_open(&p, &nulls) < 0) {
		ok(0, "limits: connection");
		return;
	}
	for (int i = 0; i < NCCL_NET_MAX_REQUESTS; i++) {
		void *data = buf[i];
		size_t sz = 8;
		all &= netdrv_irecv(d, p.r, 1, &data, &sz, &tag, NULL, &rreqs[i]) == ncclSuccess && rreqs[i];
	}
	ok(all, "%d receives in flight are accepted", NCCL_NET_MAX_REQUESTS);
	{
		void *data = buf[0];
		size_t sz = 8;
		ok(netdrv_irecv(d, p.r, 1, &data, &sz, &tag, NULL, &extra) == ncclSuccess && extra == NULL,
		   "receive #33: success with *request = NULL (call again)");
	}
	all = 1;
	for (int i = 0; i < FQN_TEST_SEND_SLOTS; i++)
		all &= netdrv_isend(d, p.s, buf[0], 0, tag, NULL, &reqs[i]) == ncclSuccess && reqs[i];
	ok(all, "%d sends in flight (32 x maxRecvs) are accepted", FQN_TEST_SEND_SLOTS);
	extra = (void *)1;
	ok(netdrv_isend(d, p.s, buf[0], 0, tag, NULL, &extra) == ncclSuccess && extra == NULL,
	   "send #%d: *request = NULL", FQN_TEST_SEND_SLOTS + 1);
	ok(drive(rreqs, NCCL_NET_MAX_REQUESTS, NULL, 5) == ncclSuccess, "the 32 receives complete");
	for (int i = 0; i < FQN_TEST_SEND_SLOTS - NCCL_NET_MAX_REQUESTS; i++) { /* drain the rest */
		void *data = buf[0], *r = NULL;
		size_t sz = 8;
		netdrv_irecv(d, p.r, 1, &data, &sz, &tag, NULL, &r);
		if (!r || drive(&r, 1, NULL, 5) != ncclSuccess)
			all = 0;
	}
	ok(drive(reqs, FQN_TEST_SEND_SLOTS, NULL, 5) == ncclSuccess && all,
	   "zero-byte messages all delivered");
	extra = NULL;
	ok(netdrv_isend(d, p.s, buf[0], 0, tag, NULL, &extra) == ncclSuccess && extra, "slots are reusable");
	drive(&extra, 1, NULL, 1);
	pair_close(&p);
}

static void t_flush_mr(void)
{
	struct pair p;
	void *mh = NULL, *req = NULL, *data;
	uint8_t b[16];
	int nulls = 0, done = 0, sz = 16;

	if (pair_open(&p, &nulls) < 0) {
		ok(0, "flush: connection");
		return;
	}
	ok(netdrv_regmr(d, p.r, b, sizeof(b), NCCL_PTR_HOST, &mh) == ncclSuccess && mh, "regMr host memory");
	ok(netdrv_regmr(d, p.r, b, sizeof(b), NCCL_PTR_CUDA, &mh) == ncclInvalidUsage,
	   "regMr CUDA memory: ncclInvalidUsage (ptrSupport says host only)");
	data = b;
	ok(netdrv_iflush(d, p.r, 1, &data, &sz, &mh, &req) == ncclSuccess &&
	       (req == NULL || (netdrv_test(d, req, &done, NULL) == ncclSuccess && done)),
	   "iflush of host memory completes at once");
	ok(netdrv_deregmr(d, p.r, mh) == ncclSuccess, "deregMr");
	pair_close(&p);
}

static void t_too_small(void)
{
	static uint8_t sb[10000], rb[10000];
	void *data = rb, *reqs[2];
	size_t rsz = 5000;
	struct pair p;
	int nulls = 0, tag = 1;
	ncclResult_t rc;

	if (pair_open(&p, &nulls) < 0) {
		ok(0, "too small: connection");
		return;
	}
	last_warn[0] = '\0';
	netdrv_irecv(d, p.r, 1, &data, &rsz, &tag, NULL, &reqs[1]);
	netdrv_isend(d, p.s, sb, sizeof(sb), tag, NULL, &reqs[0]);
	rc = drive(reqs, 2, NULL, 5);
	ok(rc == ncclInvalidUsage, "10000 bytes into a 5000-byte buffer: ncclInvalidUsage (got %d)", rc);
	like(last_warn, "larger than its receive buffer", "the WARN says what and names the lane");
	like(last_warn, "lane", "... and the lane");
	ok(pair_close(&p) == 0, "close after an error");
}

static void t_peer_vanishes(void)
{
	const size_t big = 64 << 20;
	char handle[NCCL_NET_HANDLE_MAXSIZE];
	void *l = NULL, *r = NULL, *req = NULL, *data;
	uint8_t *rb = malloc(big);
	int tag = 1, done = 0, status;
	size_t rsz = big;
	ncclResult_t rc = ncclSuccess;
	double end;
	pid_t pid;

	netdrv_listen(d, 0, handle, &l);
	pid = fork();
	if (pid == 0) { /* the peer: send half a message, then die */
		void *s = NULL, *sreq = NULL;
		uint8_t *sb = calloc(1, big);
		double t_end = now_s() + 5;

		alarm(10);
		while (!s && now_s() < t_end)
			netdrv_connect(d, 0, handle, &s);
		netdrv_isend(d, s, sb, big, tag, NULL, &sreq);
		for (int i = 0; i < 100 && now_s() < t_end; i++) {
			netdrv_test(d, sreq, &done, NULL);
			usleep(1000);
		}
		free(sb);
		free(rb);
		_exit(done ? 1 : 0); /* no close: the peer vanishes mid-message */
	}
	end = now_s() + 10;
	while (!r && now_s() < end)
		netdrv_accept(d, l, &r);
	/* Receive only once the peer is gone: socket buffers hold far less than 64 MiB. */
	waitpid(pid, &status, 0);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "the peer sent part of a 64 MiB message and exited");
	data = rb;
	netdrv_irecv(d, r, 1, &data, &rsz, &tag, NULL, &req);
	while (rc == ncclSuccess && !done && now_s() < end)
		rc = netdrv_test(d, req, &done, NULL);
	ok(rc == ncclRemoteError && !done, "peer dies mid-message: ncclRemoteError, no hang (got %d)", rc);
	like(last_warn, "peer closed", "the WARN names the cause");
	ok(netdrv_test(d, req, &done, NULL) == ncclRemoteError, "the error is sticky");
	ok(netdrv_close_recv(d, r) == ncclSuccess && netdrv_close_listen(d, l) == ncclSuccess,
	   "close after the peer died");
	free(rb);
}

static void t_bad_handle(void)
{
	char handle[NCCL_NET_HANDLE_MAXSIZE];
	void *s = NULL;

	memset(handle, 0x5a, sizeof(handle));
	memset(handle + 96, 0, 8); /* no connection in progress */
	ok(netdrv_connect(d, 0, handle, &s) != ncclSuccess && !s,
	   "connect to a garbage handle: error, no crash");
}

static void run_version(const char *path, int version)
{
	char err[512];

	diag("ncclNetPlugin_v%d", version);
	if (netdrv_open(path, version, &d, err, sizeof(err)) < 0) {
		ok(0, "%s", err);
		return;
	}
	is_int(netdrv_version(d), version, "ncclNetPlugin_v%d is exported", version);
	is_str(netdrv_name(d), "fabriciq", "its name is fabriciq");
	if (!ok(netdrv_init(d, logger) == ncclSuccess, "v%d init", version)) {
		netdrv_close(d);
		return;
	}
	t_props();
	t_connect();
	t_ordered();
	t_multirecv();
	t_sizes();
	t_limits();
	t_flush_mr();
	t_too_small();
	t_peer_vanishes();
	t_bad_handle();
	netdrv_close(d);
}

/* Argument: one version; none: every version 8..12. */
int main(int argc, char **argv)
{
	const char *path = getenv("FQ_NCCL_PLUGIN");
	int only = argc > 1 ? atoi(argv[1]) : 0;

	if (!path)
		path = FQ_PLUGIN_PATH;
	static char first[64];

	setenv("FABRICIQ_IFACES", "lo", 0); /* the caller's, if set (a device run) */
	setenv("FABRICIQ_TRANSPORT", "tcp", 0);
	snprintf(first, sizeof(first), "%s", getenv("FABRICIQ_IFACES"));
	first[strcspn(first, ",")] = '\0';
	iface = first;
	diag("over %s, FABRICIQ_TRANSPORT=%s", iface, getenv("FABRICIQ_TRANSPORT"));
	setenv("FABRICIQ_CLOCK_PAGE", "/nonexistent/fabriciq-clock", 1);
	setenv("FABRICIQ_TELEMETRY", "0", 1);
	signal(SIGPIPE, SIG_IGN);
	for (int v = NETDRV_MIN_VERSION; v <= NETDRV_MAX_VERSION; v++)
		if (!only || v == only)
			run_version(path, v);
	return done_testing();
}
