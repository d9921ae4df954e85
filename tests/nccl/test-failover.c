/*
 * test-failover: control mode end to end in one process over loopback,
 * with a path page and an agent socket standing in for the node agent.
 * The agent marks the path DOWN: both lanes fail over (path-down) and a
 * message waits; the path comes back: the lanes are re-dialed through the
 * rejoin listener, verified and given traffic again (failback), and the
 * message completes intact. DOWN again for longer than the grace time: the
 * connection fails with -ENETUNREACH and a WARN naming both ends. The
 * agent socket receives FailoverEvents for all of it.
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

#include "common/clock.h"
#include "common/frame.h"
#include "common/path_page.h"
#include "nccl-plugin/core/comm.h"
#include "nccl-plugin/core/progress.h"
#include "nccl-plugin/core/wire.h"
#include "nccl-plugin/hello.h"
#include "nccl-plugin/plog.h"
#include "tests/nccl/nccl-cut.h"
#include "tests/nccl/nccl-test.h"
#include "tests/unit/tap.h"

static int warns, warns_path_down, warns_failback;
static char last_warn[512];

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	(void)flags, (void)file, (void)line;
	if (level != NCCL_LOG_WARN)
		return;
	va_start(ap, fmt);
	vsnprintf(last_warn, sizeof(last_warn), fmt, ap);
	va_end(ap);
	warns++;
	warns_path_down += strstr(last_warn, "path-down") != NULL;
	warns_failback += strstr(last_warn, "failback") != NULL;
}

static struct fq_path_page_writer *page;

static void path_state_at(uint32_t state, int64_t at)
{
	loopback_paths_publish(page, state, FQ_PATH_STATE_UP, at);
}

static void path_state(uint32_t state)
{
	path_state_at(state, fq_now_ns());
}

struct xfer {
	struct fqn_req *sq, *rq;
	int sd, rd, src, rrc;
	char *sb, *rb;
	size_t size;
};

static void xfer_start(struct fqn_send *s, struct fqn_recv *r, struct xfer *x, char fill)
{
	void *data = x->rb;
	int tag = 7;

	memset(x->sb, fill, x->size);
	memset(x->rb, 0, x->size);
	x->sd = x->rd = x->src = x->rrc = 0;
	x->sq = x->rq = NULL;
	fqn_irecv(r, 1, &data, &x->size, &tag, &x->rq);
	fqn_isend(s, x->sb, x->size, tag, &x->sq);
}

/* Progress both ends until both complete, one fails, or `secs` pass. */
static void xfer_spin(struct xfer *x, double secs)
{
	double end = now_s() + secs;

	while ((!x->sd || !x->rd) && !x->src && !x->rrc && now_s() < end) {
		if (!x->sd && x->sq)
			x->src = fqn_test(x->sq, &x->sd, NULL, NULL);
		if (!x->rd && x->rq)
			x->rrc = fqn_test(x->rq, &x->rd, NULL, NULL);
	}
}

static int intact(const struct xfer *x, char fill)
{
	for (size_t i = 0; i < x->size; i++)
		if (x->rb[i] != fill)
			return 0;
	return 1;
}

/* Progress the receive until it completes, the send only while it has
 * not: the receiver's last acks stay unread, as when a lane dies with
 * them. */
static void xfer_spin_recv_first(struct xfer *x, double secs)
{
	double end = now_s() + secs;

	while (!x->rd && !x->src && !x->rrc && now_s() < end) {
		x->rrc = fqn_test(x->rq, &x->rd, NULL, NULL);
		if (!x->rd && !x->sd)
			x->src = fqn_test(x->sq, &x->sd, NULL, NULL);
	}
}

/* Test only the send (NCCL with no receive posted on the other comm), up
 * to secs. */
static void xfer_spin_send(struct xfer *x, double secs)
{
	double end = now_s() + secs;

	while (!x->sd && !x->src && now_s() < end)
		x->src = fqn_test(x->sq, &x->sd, NULL, NULL);
}

int main(void)
{
	char dir[] = "/tmp/nccl-plugin-failover-XXXXXX", sock[256], paths[256],
	     handle[NCCL_NET_HANDLE_MAXSIZE];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct fq_frame_decoder *dec = fq_frame_decoder_create(0);
	struct fqn_listen *l = NULL;
	struct fqn_send *s = NULL;
	struct fqn_recv *r = NULL;
	struct xfer x = {.size = 1 << 20};
	int lfd, afd = -1, ev_down = 0, ev_back = 0, ev_ok = 1;
	double t0, end;
	Fabriciq__Envelope *env;
	char buf[65536];
	ssize_t got;

	fqn_log_set_logger(logger);
	if (!mkdtemp(dir))
		skip_all("no temp dir");
	snprintf(sock, sizeof(sock), "%s/agent.sock", dir);
	snprintf(paths, sizeof(paths), "%s/paths", dir);
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	ok(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(lfd, 4) == 0, "agent socket listens");
	ok(fq_path_page_writer_open(paths, &page) == 0, "a path page exists");
	path_state(FQ_PATH_STATE_UP);
	setenv("FABRICIQ_MODE", "control", 1);
	setenv("FABRICIQ_IFACES", "lo", 1);
	setenv("FABRICIQ_LANES", "2", 1);
	setenv("FABRICIQ_CHUNK_SIZE", "64K", 1);
	setenv("FABRICIQ_PATH_PAGE", paths, 1);
	setenv("FABRICIQ_AGENT_SOCKET", sock, 1);
	setenv("FABRICIQ_TELEMETRY_INTERVAL_MS", "1000", 1);
	setenv("FABRICIQ_LANE_TIMEOUT_MS", "200", 1);
	setenv("FABRICIQ_FAILOVER_GRACE_MS", "1500", 1);
	setenv("FABRICIQ_PATH_PAGE_MAX_AGE_MS", "2000", 1);
	ok(fqn_init(logger) == 0, "plugin init in control mode");
	x.sb = malloc(x.size);
	x.rb = malloc(x.size);

	ok(fqn_listen(0, handle, &l) == 0, "listen");
	end = now_s() + 5;
	while ((!s || !r) && now_s() < end) {
		if (!s && fqn_connect(0, handle, &s) < 0)
			break;
		if (!r && fqn_accept(l, &r) < 0)
			break;
	}
	if (!ok(s && r, "a 2-lane control-mode connection"))
		return done_testing();
	fqn_close_listen(l); /* as NCCL does: re-dials must not need it */

	xfer_start(s, r, &x, 'a');
	xfer_spin(&x, 5);
	ok(x.sd && x.rd && intact(&x, 'a'), "1 MiB through, acked, intact");

	/* An agent that died with the path DOWN leaves that page behind: a
	 * page older than FABRICIQ_PATH_PAGE_MAX_AGE_MS is not acted on
	 * (the rule alone: test-failover-decide). */
	{
		/* counted from before the page goes stale: the progress thread
		 * may read it first, while this end calls nothing */
		int before = warns_path_down, stale_warns = warns;

		path_state_at(FQ_PATH_STATE_DOWN, fq_now_ns() - 3000000000LL);
		usleep(20000);

		xfer_start(s, r, &x, 's');
		xfer_spin(&x, 5);
		ok(x.sd && x.rd && intact(&x, 's') && warns_path_down == before,
		   "a stale page (3 s old, limit 2 s) with the path DOWN: no failover, the message "
		   "completes");
		ok(warns > stale_warns && strstr(last_warn, "stale") && strstr(last_warn, "MAX_AGE_MS=2000"),
		   "... and a WARN says the page is stale");
	}
	path_state(FQ_PATH_STATE_DOWN);
	usleep(20000); /* the page is read every 5 ms at most: the next call sees it */
	xfer_start(s, r, &x, 'b');
	xfer_spin(&x, 0.5);
	ok(!x.sd && !x.src && !x.rrc,
	   "the agent has the path DOWN: the send waits, no error (within the grace)");
	ok(warns_path_down >= 2, "both lanes failed over, cause path-down (%d WARNs)", warns_path_down);
	path_state(FQ_PATH_STATE_UP);
	t0 = now_s();
	xfer_spin(&x, 5);
	ok(x.sd && x.rd && intact(&x, 'b'), "the path is back: the message completes intact in %.0f ms",
	   (now_s() - t0) * 1e3);
	ok(warns_failback >= 1, "lanes came back: failback (%d WARNs)", warns_failback);
	xfer_start(s, r, &x, 'c');
	xfer_spin(&x, 5);
	ok(x.sd && x.rd && intact(&x, 'c'), "and traffic flows on");

	/* Every path to the peer node DOWN at once: what its agent stopping
	 * looks like. Not believed: no lane fails over, data flows. */
	{
		int before = warns_path_down;

		loopback_paths_publish(page, FQ_PATH_STATE_DOWN, FQ_PATH_STATE_DOWN, fq_now_ns());
		usleep(20000);
		xfer_start(s, r, &x, 'd');
		xfer_spin(&x, 5);
		ok(x.sd && x.rd && intact(&x, 'd') && warns_path_down == before,
		   "every path to the peer DOWN (its agent gone): no failover, the message completes (%d "
		   "WARNs)",
		   warns_path_down - before);
		path_state(FQ_PATH_STATE_UP);
	}

	/* A DOWN seen before the lanes came up (here: failback in 'b') is a
	 * page that lags: a re-dial's handshake crossed the path since, and
	 * the receiver's agent has not probed it UP yet. Not believed. */
	{
		int before = warns_path_down;

		/* the path DOWN since 30 s, published now */
		loopback_paths_publish_changed(page, FQ_PATH_STATE_DOWN, FQ_PATH_STATE_UP,
					       fq_now_ns() - 30000000000LL, fq_now_ns());
		usleep(20000);
		xfer_start(s, r, &x, 'f');
		xfer_spin(&x, 5);
		ok(x.sd && x.rd && intact(&x, 'f') && warns_path_down == before,
		   "the path DOWN since before the lanes came up: no failover, the message completes (%d "
		   "WARNs)",
		   warns_path_down - before);
		path_state(FQ_PATH_STATE_UP);
	}

	/* Issue 7: the receive completed and no further receive is posted (a
	 * ring step posts it only once its own send is done), when the lane
	 * that carried the last chunk dies with its ack. The chunk is resent
	 * on the other lane; the receiver must take the copy and ack it, and
	 * take the re-dialed lane and ack it (failback), although nothing is
	 * called on it: before the fix the send waited for ever. */
	{
		size_t full = x.size;
		int fb, dead;

		cut_install(s);
		x.size = 64 << 10; /* one chunk: one lane holds it, deterministically */
		xfer_start(s, r, &x, 'e');
		xfer_spin_recv_first(&x, 5);
		dead = last_lane;
		ok(x.rd && !x.sd && !x.src && intact(&x, 'e') && dead >= 0,
		   "one chunk received on lane %d; its ack not yet read by the sender", dead);
		cut[dead < 0 ? 0 : dead] = 1;
		fb = warns_failback;
		t0 = now_s();
		xfer_spin_send(&x, 3);
		ok(x.sd && !x.src,
		   "lane %d dies with the ack: the resend is acked by the idle receiver, the send completes "
		   "in "
		   "%.0f ms (rc %d)",
		   dead, (now_s() - t0) * 1e3, x.src);
		end = now_s() + 3;
		while (warns_failback == fb && now_s() < end && fqn_send_progress(s) == 0)
			;
		ok(warns_failback > fb,
		   "... and lane %d comes back (failback) with no receive posted, in %.0f ms", dead,
		   (now_s() - t0) * 1e3);

		/* Both lanes at once, 16 chunks: every resend waits for a re-dial
		 * that only the idle receiver can verify. */
		x.size = full;
		cut_install(s);
		xfer_start(s, r, &x, 'f');
		xfer_spin_recv_first(&x, 5);
		ok(x.rd && !x.sd && !x.src && intact(&x, 'f'), "1 MiB received; the last acks not yet read");
		cut[0] = cut[1] = 1;
		t0 = now_s();
		xfer_spin_send(&x, 3);
		ok(x.sd && !x.src,
		   "both lanes die with acks: re-dialed, verified and resent with no receive posted, the "
		   "send "
		   "completes in %.0f ms (rc %d)",
		   (now_s() - t0) * 1e3, x.src);
		xfer_start(s, r, &x, 'g');
		xfer_spin(&x, 5);
		ok(x.sd && x.rd && intact(&x, 'g'), "and traffic flows on");
	}

	path_state(FQ_PATH_STATE_DOWN);
	usleep(20000);
	xfer_start(s, r, &x, 'd');
	t0 = now_s();
	xfer_spin(&x, 6);
	{
		double took = now_s() - t0;
		int first = x.src ? x.src : x.rrc;

		ok(first == -ENETUNREACH,
		   "down past the grace: the connection fails with ENETUNREACH after %.1f s (rc %d)", took,
		   first);
		ok(took >= 1.4 && took < 4, "... after the grace time, not before, no hang");
		like(last_warn, "FABRICIQ_FAILOVER_GRACE_MS=1500", "the WARN says why");
		ok(matches(last_warn, "127\\.0\\.0\\.1:[0-9]+ (->|<-) 127\\.0\\.0\\.1:[0-9]+"),
		   "... and names both ends");
		/* the other end follows within its own grace (the receiver's
		 * clock may have started first: the progress thread saw the
		 * path DOWN while it was idle) */
		for (end = now_s() + 1; (!x.src || !x.rrc) && now_s() < end;) {
			x.src = x.src || x.sd ? x.src : fqn_test(x.sq, &x.sd, NULL, NULL);
			x.rrc = x.rrc || x.rd ? x.rrc : fqn_test(x.rq, &x.rd, NULL, NULL);
		}
		ok(x.src == -ENETUNREACH && x.rrc == -ENETUNREACH &&
		       fqn_test(x.sq, &x.sd, NULL, NULL) == x.src &&
		       fqn_test(x.rq, &x.rd, NULL, NULL) == x.rrc,
		   "both ends fail, and the error is sticky (%d, %d)", x.src, x.rrc);
	}
	fqn_close_send(s);
	fqn_close_recv(r);
	fqn_fini(); /* flushes the telemetry ring */

	struct pollfd pfd = {lfd, POLLIN, 0};
	if (poll(&pfd, 1, 2000) == 1)
		afd = accept(lfd, NULL, NULL);
	while (afd >= 0 && (got = recv(afd, buf, sizeof(buf), 0)) > 0)
		fq_frame_decoder_feed(dec, buf, (size_t)got);
	while (fq_frame_decoder_next(dec, &env) == 1) {
		if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_FAILOVER) {
			Fabriciq__FailoverEvent *f = env->failover;

			ev_down += strcmp(f->cause, "path-down") == 0;
			ev_back += strcmp(f->cause, "failback") == 0 && f->failback;
			ev_ok &= strcmp(f->local_nic, "lo") == 0 && strcmp(f->remote_nic, "lo") == 0 &&
				 f->time_ns > 0 && f->duration_ns >= 0;
		}
		fq_frame_free(env);
	}
	ok(ev_down >= 2 && ev_back >= 1, "the agent got FailoverEvents: %d path-down, %d failback", ev_down,
	   ev_back);
	ok(ev_ok, "events name the local NIC and the remote NIC (from the path page), with times");
	close(afd);
	close(lfd);
	fq_frame_decoder_destroy(dec);
	fq_path_page_writer_close(page);
	free(x.sb);
	free(x.rb);
	snprintf(buf, sizeof(buf), "rm -rf %s", dir);
	if (system(buf) != 0)
		diag("could not remove %s", dir);
	return done_testing();
}
