/*
 * test-setup-lanes: connection setup with a lane that cannot connect, in
 * one process over loopback. The listen handle gets a second address whose
 * port refuses (a rail down at setup, as the connector sees it). Control
 * mode: the connection starts on lane 0, the accept side returns once
 * lane 0 has arrived, a message goes through, and lane 1 comes up later
 * through the rejoin port (failback) and carries traffic; the agent gets a
 * FailoverEvent "connect-failed" and one "failback". No lane at all: the
 * connect fails after FABRICIQ_FAILOVER_GRACE_MS with a WARN naming both
 * ends and the cause. Monitor mode: the connection starts on lane 0 and
 * runs without lane 1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/frame.h"
#include "nccl-plugin/core/comm.h"
#include "nccl-plugin/core/progress.h"
#include "nccl-plugin/core/wire.h"
#include "nccl-plugin/hello.h"
#include "nccl-plugin/plog.h"
#include "tests/nccl/nccl-test.h"
#include "tests/unit/tap.h"

static int warns_absent, warns_accept, warns_failback;
static char last_warn[1024], absent_warn[1024], accept_warn[1024];

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	(void)flags, (void)file, (void)line;
	if (level != NCCL_LOG_WARN)
		return;
	va_start(ap, fmt);
	vsnprintf(last_warn, sizeof(last_warn), fmt, ap);
	va_end(ap);
	if (strstr(last_warn, "connect-failed")) {
		warns_absent++;
		memcpy(absent_warn, last_warn, sizeof(absent_warn));
	}
	if (strstr(last_warn, "did not connect")) {
		warns_accept++;
		memcpy(accept_warn, last_warn, sizeof(accept_warn));
	}
	warns_failback += strstr(last_warn, "failback") != NULL;
}

/* A loopback port nothing listens on (bound, then closed): connects to it are refused. */
static uint16_t refused_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	bind(fd, (struct sockaddr *)&a, sizeof(a));
	getsockname(fd, (struct sockaddr *)&a, &len);
	close(fd);
	return a.sin_port;
}

/* Connect and accept until both return a comm, one fails, or 5 s pass;
 * the connect's return code in *crc. */
static void establish(struct fqn_listen *l, void *handle, struct fqn_send **s, struct fqn_recv **r, int *crc)
{
	double end = now_s() + 5;

	*s = NULL;
	*r = NULL;
	*crc = 0;
	while ((!*s || !*r) && now_s() < end) {
		if (!*s && (*crc = fqn_connect(0, handle, s)) < 0)
			return;
		if (!*r && fqn_accept(l, r) < 0)
			return;
	}
}

/* One message of size bytes filled with fill, both ends progressed until
 * both complete or secs pass; 1 if it arrived intact. */
static int xfer(struct fqn_send *s, struct fqn_recv *r, char *sb, char *rb, size_t size, char fill,
		double secs)
{
	struct fqn_req *sq = NULL, *rq = NULL;
	int sd = 0, rd = 0, tag = 7, rc = 0;
	void *data = rb;
	double end = now_s() + secs;

	memset(sb, fill, size);
	memset(rb, 0, size);
	if (fqn_irecv(r, 1, &data, &size, &tag, &rq) < 0 || fqn_isend(s, sb, size, tag, &sq) < 0 || !sq ||
	    !rq)
		return 0;
	while ((!sd || !rd) && rc == 0 && now_s() < end) {
		if (!sd)
			rc = fqn_test(sq, &sd, NULL, NULL);
		if (!rd && rc == 0)
			rc = fqn_test(rq, &rd, NULL, NULL);
	}
	for (size_t i = 0; sd && rd && i < size; i++)
		if (rb[i] != fill)
			return 0;
	return sd && rd;
}

/* The agent's end: the FailoverEvents the plugin sent (its telemetry
 * connection is accepted after fqn_fini flushed it). */
static void read_events(int lfd, int *absent, int *back, int *named)
{
	struct fq_frame_decoder *dec = fq_frame_decoder_create(0);
	struct pollfd pfd = {lfd, POLLIN, 0};
	Fabriciq__Envelope *env;
	char buf[65536];
	ssize_t got;
	int afd = -1;

	*absent = *back = 0;
	*named = 1;
	if (poll(&pfd, 1, 2000) == 1)
		afd = accept(lfd, NULL, NULL);
	while (afd >= 0 && (got = recv(afd, buf, sizeof(buf), 0)) > 0)
		fq_frame_decoder_feed(dec, buf, (size_t)got);
	while (fq_frame_decoder_next(dec, &env) == 1) {
		if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_FAILOVER) {
			Fabriciq__FailoverEvent *f = env->failover;

			if (strcmp(f->cause, "connect-failed") == 0) {
				(*absent)++;
				*named &= f->from_lane == 1 && strcmp(f->local_nic, "lo") == 0 &&
					  strncmp(f->remote_nic, "127.0.0.1:", 10) == 0;
			}
			*back += strcmp(f->cause, "failback") == 0 && f->failback;
		}
		fq_frame_free(env);
	}
	if (afd >= 0)
		close(afd);
	fq_frame_decoder_destroy(dec);
}

/* A listen handle whose lane 1 goes to a refusing port on the same host
 * (its rejoin port the real one); nrefused 2: every lane refused. */
static void handle_with_refused_lanes(char *handle, int nrefused)
{
	struct fqn_handle *h = (struct fqn_handle *)handle;

	h->addr[1] = h->addr[0];
	h->rejoin_port[1] = h->rejoin_port[0];
	h->addr[1].port = refused_port();
	h->naddr = 2;
	if (nrefused == 2)
		h->addr[0].port = h->addr[1].port;
}

/* The hello's present set: round trip; a set without the hello's own
 * lane, or naming lanes past nlanes, is refused. */
static void hello_present(void)
{
	struct fqn_hello h = {1, 3, FQN_HELLO_F_CONTROL, 65536, 42, 7, 5, 0x3}, back;
	uint8_t buf[FQN_HELLO_SIZE];

	fqn_hello_encode(&h, buf);
	ok(fqn_hello_decode(buf, &back) == 0 && back.present == 0x3 && back.lane == 1 && back.rank1 == 5,
	   "hello: present set 0x3 round trips");
	h.present = 0x5;
	fqn_hello_encode(&h, buf);
	ok(fqn_hello_decode(buf, &back) == -EPROTO, "hello: a set without the lane's own bit is refused");
	h.present = 0xa;
	fqn_hello_encode(&h, buf);
	ok(fqn_hello_decode(buf, &back) == -EPROTO, "hello: a set naming lane 3 of 3 is refused");
	h.present = 0x3;
	fqn_hello_encode(&h, buf);
	buf[39] = 1;
	ok(fqn_hello_decode(buf, &back) == -EPROTO, "hello: a reserved byte not 0 is refused");
}

int main(void)
{
	char dir[] = "/tmp/nccl-plugin-setup-XXXXXX", sock[256], handle[NCCL_NET_HANDLE_MAXSIZE];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct fqn_listen *l = NULL;
	struct fqn_send *s;
	struct fqn_recv *r;
	struct fqn_comm *sc, *rc_;
	size_t size = 1 << 20;
	char *sb = malloc(size), *rb = malloc(size);
	int lfd, crc, absent, back, named, fb;
	double t0, took;

	fqn_log_set_logger(logger);
	hello_present();
	if (!mkdtemp(dir))
		skip_all("no temp dir");
	snprintf(sock, sizeof(sock), "%s/agent.sock", dir);
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	ok(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(lfd, 4) == 0, "agent socket listens");
	setenv("FABRICIQ_MODE", "control", 1);
	setenv("FABRICIQ_IFACES", "lo", 1);
	setenv("FABRICIQ_LANES", "2", 1);
	setenv("FABRICIQ_CHUNK_SIZE", "64K", 1);
	setenv("FABRICIQ_PATH_PAGE", "/nonexistent", 1);
	setenv("FABRICIQ_AGENT_SOCKET", sock, 1);
	setenv("FABRICIQ_TELEMETRY_INTERVAL_MS", "60000", 1); /* lane stats: no interval ends mid-test */
	setenv("FABRICIQ_LANE_TIMEOUT_MS", "200", 1);
	setenv("FABRICIQ_FAILOVER_GRACE_MS", "1500", 1);
	ok(fqn_init(logger) == 0, "plugin init in control mode");

	/* 1. control mode, lane 1 refused at setup */
	ok(fqn_listen(0, handle, &l) == 0, "listen");
	handle_with_refused_lanes(handle, 1);
	fb = warns_failback;
	establish(l, handle, &s, &r, &crc);
	if (!ok(s && r, "control: lane 1 refused at setup: the connection starts anyway (connect rc %d)",
		crc))
		return done_testing();
	fqn_close_listen(l); /* as NCCL does: the late lane must not need it */
	ok(warns_absent == 1 && strstr(absent_warn, "lane 1/2") &&
	       strstr(absent_warn, "Connection refused") && strstr(absent_warn, "re-dialing it"),
	   "control: one WARN names lane 1, the cause and the re-dial (%d)", warns_absent);
	ok(matches(absent_warn, "\\(lo 127\\.0\\.0\\.1 -> 127\\.0\\.0\\.1:[0-9]+\\)"),
	   "... and both ends: %s", absent_warn);
	ok(warns_accept == 1 && strstr(accept_warn, "1 of 2 lanes"),
	   "control: the accept side returned its comm with 1 of 2 lanes (%d WARN)", warns_accept);
	sc = (struct fqn_comm *)s;
	rc_ = (struct fqn_comm *)r;
	ok(xfer(s, r, sb, rb, size, 'a', 5), "control: 1 MiB through, intact");
	t0 = now_s();
	while ((sc->lc[1].fsm.state != FQN_LANE_UP || warns_failback == fb) && now_s() < t0 + 3)
		xfer(s, r, sb, rb, 64 << 10, 'b', 1);
	ok(sc->lc[1].fsm.state == FQN_LANE_UP && rc_->lanes[1] && warns_failback - fb == 1,
	   "control: lane 1 came up through the rejoin port: 1 failback for 1 missing lane (%d)",
	   warns_failback - fb);
	{
		uint64_t before = sc->stats[1].bytes;
		int intact = xfer(s, r, sb, rb, size, 'c', 5);
		uint64_t lane1 = sc->stats[1].bytes - before;

		ok(intact && lane1 > 0, "control: 1 MiB intact, lane 1 carrying %llu bytes of it",
		   (unsigned long long)lane1);
	}
	fqn_close_send(s);
	fqn_close_recv(r);

	/* 2. control mode, no lane can connect: fails after the grace time */
	ok(fqn_listen(0, handle, &l) == 0, "listen again");
	handle_with_refused_lanes(handle, 2);
	t0 = now_s();
	crc = 0;
	s = NULL;
	while (!s && crc == 0 && now_s() < t0 + 5)
		crc = fqn_connect(0, handle, &s);
	took = now_s() - t0;
	ok(crc == -ENETUNREACH && !s, "control: every lane refused: connect fails with ENETUNREACH (rc %d)",
	   crc);
	ok(took >= 1.4 && took < 3, "... after the grace time (1.5 s), not before: %.2f s", took);
	ok(strstr(last_warn, "no lane connected within") &&
	       strstr(last_warn, "FABRICIQ_FAILOVER_GRACE_MS=1500"),
	   "the WARN says why: %s", last_warn);
	ok(matches(last_warn, "lane 0 127\\.0\\.0\\.1 -> 127\\.0\\.0\\.1:[0-9]+: Connection refused; "
			      "lane 1 127\\.0\\.0\\.1 -> 127\\.0\\.0\\.1:[0-9]+: Connection refused"),
	   "... and names both ends and the cause of each lane");
	fqn_close_listen(l);
	fqn_fini(); /* flushes the telemetry ring */
	read_events(lfd, &absent, &back, &named);
	ok(absent == 1 && back == 1, "the agent got 1 connect-failed and 1 failback FailoverEvent (%d, %d)",
	   absent, back);
	ok(named, "the connect-failed event names lane 1, the local NIC and the peer");

	/* 3. monitor mode: starts on lane 0 and runs without lane 1 */
	setenv("FABRICIQ_MODE", "monitor", 1);
	ok(fqn_init(logger) == 0, "plugin init in monitor mode");
	warns_absent = warns_accept = 0;
	ok(fqn_listen(0, handle, &l) == 0, "listen");
	handle_with_refused_lanes(handle, 1);
	establish(l, handle, &s, &r, &crc);
	if (!ok(s && r, "monitor: lane 1 refused at setup: the connection starts anyway (connect rc %d)",
		crc))
		return done_testing();
	fqn_close_listen(l);
	ok(warns_absent == 1 && strstr(absent_warn, "monitor mode: no re-dial") && warns_accept == 1,
	   "monitor: the WARNs say it runs without lane 1: %s", absent_warn);
	sc = (struct fqn_comm *)s;
	rc_ = (struct fqn_comm *)r;
	{
		int good = 1;

		for (int k = 0; k < 8; k++)
			good &= xfer(s, r, sb, rb, size, (char)('m' + k), 5);
		ok(good && !sc->lanes[1] && !rc_->lanes[1] && sc->stats[0].bytes >= 8 * size,
		   "monitor: 8 x 1 MiB intact, all on lane 0");
	}
	fqn_close_send(s);
	fqn_close_recv(r);
	fqn_fini();
	read_events(lfd, &absent, &back, &named);
	ok(absent == 1 && back == 0 && named,
	   "monitor: the agent got 1 connect-failed event, no failback (%d, %d)", absent, back);

	close(lfd);
	free(sb);
	free(rb);
	unlink(sock);
	rmdir(dir);
	return done_testing();
}
