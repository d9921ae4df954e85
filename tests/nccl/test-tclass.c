/*
 * Conformance: NCCL's per-comm trafficClass (v10: connect's config; v11
 * and v12: init's config, per communicator context) lands on every lane
 * socket of the send comm as IP_TOS, through the real exported tables of
 * the built .so (dlopen, as NCCL does). An undefined class (NCCL passes
 * INT_MIN), a class out of 0..255 or no config leave the kernel's default;
 * data still flows intact after the class is set.
 */
#include <dlfcn.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "nccl-plugin/nccl_net.h"
#include "tests/nccl/nccl-test.h"
#include "tests/unit/tap.h"

#define NLANES 3

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	char buf[512];

	(void)flags;
	if (level != NCCL_LOG_WARN)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	printf("#   [plugin WARN %s:%d] %s\n", file, line, buf);
}

/* TCP sockets of this process whose IP_TOS is tos (tos 0: any non-zero). */
static int count_tos(int tos)
{
	int n = 0;

	for (int fd = 0; fd < 1024; fd++) {
		int type = 0, v = 0;
		socklen_t len = sizeof(type);
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);

		if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_STREAM)
			continue;
		if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0 || ss.ss_family != AF_INET)
			continue;
		len = sizeof(v);
		if (getsockopt(fd, IPPROTO_IP, IP_TOS, &v, &len) < 0)
			continue;
		n += tos ? v == tos : v != 0;
	}
	return n;
}

struct conn {
	void *lc, *sc, *rc;
};

/* One message of 1 MiB through the pair, checked byte for byte. */
static int flows(ncclResult_t (*isend)(void *, void *, size_t, int, void *, void *, void **),
		 ncclResult_t (*irecv)(void *, int, void **, size_t *, int *, void **, void **, void **),
		 ncclResult_t (*test)(void *, int *, int *), struct conn *c)
{
	size_t size = 1 << 20, rsize = size;
	uint8_t *a = malloc(size), *b = calloc(1, size);
	void *sreq = NULL, *rreq = NULL, *data = b;
	int tag = 7, sdone = 0, rdone = 0, got = 0, rc = -1;
	double end = now_s() + 20;

	if (!a || !b)
		goto out;
	for (size_t i = 0; i < size; i++)
		a[i] = (uint8_t)(i * 31 + 7);
	while ((!sreq || !rreq) && now_s() < end) {
		if (!rreq && irecv(c->rc, 1, &data, &rsize, &tag, NULL, NULL, &rreq) != ncclSuccess)
			goto out;
		if (!sreq && isend(c->sc, a, size, tag, NULL, NULL, &sreq) != ncclSuccess)
			goto out;
	}
	while ((!sdone || !rdone) && now_s() < end) {
		if (!sdone && test(sreq, &sdone, NULL) != ncclSuccess)
			goto out;
		if (!rdone && test(rreq, &rdone, &got) != ncclSuccess)
			goto out;
	}
	rc = sdone && rdone && got == (int)size && memcmp(a, b, size) == 0 ? 0 : -1;
out:
	free(a);
	free(b);
	return rc;
}

static void t_v10(void *so)
{
	const ncclNet_v10_t *n = dlsym(so, "ncclNetPlugin_v10");
	const int classes[] = {0x68, INT_MIN, 300};

	if (!ok(n != NULL, "v10: ncclNetPlugin_v10 is exported")) {
		skip(8, "no v10 table");
		return;
	}
	ok(n->init(logger, NULL) == ncclSuccess, "v10: init");
	for (int k = 0; k < 3; k++) {
		ncclNetCommConfig_t cfg = {.trafficClass = classes[k]};
		char handle[NCCL_NET_HANDLE_MAXSIZE];
		struct conn c = {0};
		double end = now_s() + 20;
		int set = classes[k] >= 0 && classes[k] <= 255;

		if (n->listen(0, handle, &c.lc) != ncclSuccess) {
			ok(0, "v10: listen");
			continue;
		}
		while ((!c.sc || !c.rc) && now_s() < end) {
			if (!c.sc && n->connect(0, &cfg, handle, &c.sc, NULL) != ncclSuccess)
				break;
			if (!c.rc && n->accept(c.lc, &c.rc, NULL) != ncclSuccess)
				break;
		}
		if (set) {
			is_int(count_tos(classes[k]), NLANES,
			       "v10: trafficClass 0x%x: every lane of the send comm has it", classes[k]);
			is_int(count_tos(0), NLANES,
			       "v10: ... and no other socket (the receiving end keeps the default)");
			ok(c.sc && c.rc && flows(n->isend, n->irecv, n->test, &c) == 0,
			   "v10: 1 MiB through the classed lanes, intact");
		} else {
			ok(c.sc && c.rc, "v10: trafficClass %d: connected", classes[k]);
			is_int(count_tos(0), 0, "v10: trafficClass %d (%s): no socket gets a class",
			       classes[k], classes[k] == INT_MIN ? "NCCL's undefined" : "out of range");
		}
		if (c.sc)
			n->closeSend(c.sc);
		if (c.rc)
			n->closeRecv(c.rc);
		n->closeListen(c.lc);
	}
}

/* v11 and v12 share the layout apart from the properties. */
static void t_v11(void *so, const char *sym)
{
	const ncclNet_v11_t *n = dlsym(so, sym);
	const int classes[] = {0xb8, -2};

	if (!ok(n != NULL, "%s is exported", sym)) {
		skip(5, "no table");
		return;
	}
	for (int k = 0; k < 3; k++) {
		ncclNetCommConfig_t cfg = {.trafficClass = k < 2 ? classes[k] : 0};
		char handle[NCCL_NET_HANDLE_MAXSIZE];
		struct conn c = {0};
		void *ctx = NULL;
		double end = now_s() + 20;
		int set = k == 0;

		/* k == 2: no config at all */
		if (n->init(&ctx, 1000 + (uint64_t)k, k < 2 ? &cfg : NULL, logger, NULL) != ncclSuccess ||
		    n->listen(ctx, 0, handle, &c.lc) != ncclSuccess) {
			ok(0, "%s: init and listen", sym);
			continue;
		}
		while ((!c.sc || !c.rc) && now_s() < end) {
			if (!c.sc && n->connect(ctx, 0, handle, &c.sc, NULL) != ncclSuccess)
				break;
			if (!c.rc && n->accept(c.lc, &c.rc, NULL) != ncclSuccess)
				break;
		}
		if (set) {
			is_int(count_tos(classes[k]), NLANES, "%s: init's trafficClass 0x%x is on every lane",
			       sym, classes[k]);
			ok(c.sc && c.rc && flows(n->isend, n->irecv, n->test, &c) == 0,
			   "%s: 1 MiB through, intact", sym);
		} else {
			is_int(count_tos(0), 0, "%s: %s: no socket gets a class", sym,
			       k == 1 ? "trafficClass -2" : "no config");
		}
		if (c.sc)
			n->closeSend(c.sc);
		if (c.rc)
			n->closeRecv(c.rc);
		n->closeListen(c.lc);
		n->finalize(ctx);
	}
}

int main(void)
{
	const char *path = getenv("FQ_NCCL_PLUGIN");
	void *so;

	if (!path)
		path = FQ_PLUGIN_PATH;
	setenv("FABRICIQ_IFACES", "lo", 1);
	setenv("FABRICIQ_CLOCK_PAGE", "/nonexistent/fabriciq-clock", 1);
	setenv("FABRICIQ_TELEMETRY", "0", 1);
	setenv("FABRICIQ_LANES", "3", 1);
	signal(SIGPIPE, SIG_IGN);
	so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!so) {
		printf("1..0 # SKIP cannot load %s: %s\n", path, dlerror());
		return 0;
	}
	t_v10(so);
	t_v11(so, "ncclNetPlugin_v11");
	t_v11(so, "ncclNetPlugin_v12");
	dlclose(so);
	return done_testing();
}
