/*
 * test-telemetry: per-lane reports reach a unix-socket listener (standing
 * in for the node agent: the real frame decoder reads them), byte counts
 * add up, delays are ordered, the clock page marks them synchronised; a
 * receiver that posts late adds nothing to the delays;
 * without an agent the data path goes on, one WARN says so; a full ring
 * drops without blocking; a batch an agent that went away never took is
 * counted dropped, not sent, and so is every frame an agent that stops
 * refuses.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <linux/errqueue.h> /* struct scm_timestamping, after time.h */
#include <linux/net_tstamp.h>

#include "common/clock_page.h"
#include "common/frame.h"
#include "nccl-plugin/core/comm.h"
#include "nccl-plugin/core/progress.h"
#include "nccl-plugin/core/wire.h"
#include "nccl-plugin/hello.h"
#include "nccl-plugin/plog.h"
#include "nccl-plugin/telemetry/telemetry.h"
#include "tests/nccl/nccl-test.h"
#include "tests/unit/tap.h"

static int warns;
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
}

static void test_ring_full(void)
{
	struct fqn_telemetry *t;
	struct fqn_telemetry_counts c;
	struct fqn_lane_sample *s = calloc(1, sizeof(*s));
	int full = 0;
	double t0;

	warns = 0;
	ok(fqn_telemetry_start("/nonexistent/agent.sock", 60000, &t) == 0,
	   "telemetry starts without an agent");
	t0 = now_s();
	for (int i = 0; i < 1000; i++)
		full += fqn_telemetry_push(t, s) == -ENOBUFS;
	ok(now_s() - t0 < 0.5, "1000 pushes into a ring nobody drains never block (%.1f ms)",
	   (now_s() - t0) * 1e3);
	fqn_telemetry_counts(t, &c);
	ok(full > 0 && c.pushed + c.dropped_full == 1000,
	   "a full ring drops and counts (%llu kept, %d dropped)", (unsigned long long)c.pushed, full);
	fqn_telemetry_stop(t);
	is_int(warns, 1, "one WARN about the missing agent: %s", last_warn);
	like(last_warn, "/nonexistent/agent.sock", "the WARN names the socket");
	free(s);
}

/* How traffic() receives: posts first and reads at once, posts each
 * receive late_ms after its send (a rank held up downstream: the chunks
 * wait for it), posts first and reads late_ms late (a rank off the CPU
 * when they arrive), or as the last while the clock page steps back
 * late_ms between each send and its read (clock_w, clock_m: the two
 * ends' clock models disagreeing by more than the delay). */
enum rx_mode {
	RX_ON_TIME,
	RX_POST_LATE,
	RX_READ_LATE,
	RX_CLOCK_STEP
};
static struct fq_clock_page_writer *clock_w;
static struct fq_clock_model clock_m;

/* Run traffic through one 2-lane connection: n messages of size bytes. */
static int traffic(int n, size_t size, double spread_s, enum rx_mode mode, int late_ms)
{
	char handle[NCCL_NET_HANDLE_MAXSIZE];
	struct fqn_listen *l;
	struct fqn_send *s = NULL;
	struct fqn_recv *r = NULL;
	char *sb = calloc(1, size), *rb = malloc(size);
	double end = now_s() + 5;
	int rc = -1;

	if (fqn_listen(0, handle, &l) < 0)
		return -1;
	while ((!s || !r) && now_s() < end) {
		if (!s && fqn_connect(0, handle, &s) < 0)
			goto out;
		if (!r && fqn_accept(l, &r) < 0)
			goto out;
	}
	for (int i = 0; i < n && s && r; i++) {
		struct fqn_req *sq = NULL, *rq = NULL;
		int tag = 0, sd = 0, rd = 0;
		void *data = rb;

		if (mode != RX_POST_LATE)
			fqn_irecv(r, 1, &data, &size, &tag, &rq);
		if (mode == RX_CLOCK_STEP) {
			struct fq_clock_model m = clock_m;

			fq_clock_page_publish(clock_w, &m);
		}
		fqn_isend(s, sb, size, tag, &sq);
		if (mode != RX_ON_TIME) /* the sender goes on alone meanwhile */
			for (double at = now_s() + late_ms / 1e3; now_s() < at;)
				if (!sd && fqn_test(sq, &sd, NULL, NULL) < 0)
					goto out;
		if (mode == RX_CLOCK_STEP) { /* its chunks were sent on the model before */
			struct fq_clock_model m = clock_m;

			m.offset_ns -= late_ms * 1000000LL;
			fq_clock_page_publish(clock_w, &m);
		}
		if (mode == RX_POST_LATE)
			fqn_irecv(r, 1, &data, &size, &tag, &rq);
		while ((!sd || !rd) && now_s() < end) {
			if ((!sd && fqn_test(sq, &sd, NULL, NULL) < 0) ||
			    (!rd && fqn_test(rq, &rd, NULL, NULL) < 0))
				goto out;
		}
		usleep((useconds_t)(spread_s / n * 1e6));
	}
	rc = 0;
out:
	fqn_close_send(s);
	fqn_close_recv(r);
	fqn_close_listen(l);
	free(sb);
	free(rb);
	return rc;
}

/* What an agent's socket took from one run of traffic(). */
struct taken {
	uint64_t bytes, reports, recv_reports, ordered, tcp, sync;
	int64_t owd_max_ns;    /* over every receiver's report */
	uint64_t owd_negative; /* reports with a delay below zero */
};

/* Publish a clock page 5 s off the raw clock, listen as an agent at
 * dir/name.sock, run traffic(n, size, 0.3 s, mode, late_ms) and decode
 * what the plugin sent there. */
static void traffic_to_agent(const char *dir, const char *name, int n, size_t size, enum rx_mode mode,
			     int late_ms, struct taken *t)
{
	char sock[256], page[256];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct fq_clock_page_writer *w;
	struct fq_clock_model m = {.clock_id = CLOCK_MONOTONIC_RAW,
				   .offset_ns = 5000000000,
				   .error_bound_ns = 1000,
				   .valid_until_ns = INT64_MAX};
	struct fq_frame_decoder *dec = fq_frame_decoder_create(0);
	Fabriciq__Envelope *env;
	int lfd, afd = -1;
	char buf[65536];
	ssize_t got;

	memset(t, 0, sizeof(*t));
	t->ordered = t->tcp = t->sync = 1;
	snprintf(sock, sizeof(sock), "%s/%s.sock", dir, name);
	snprintf(page, sizeof(page), "%s/%s.clock", dir, name);
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	ok(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(lfd, 4) == 0, "agent socket listens");
	ok(fq_clock_page_writer_open(page, &w) == 0, "a clock page exists");
	fq_clock_page_publish(w, &m);
	clock_w = w;
	clock_m = m;
	setenv("FABRICIQ_AGENT_SOCKET", sock, 1);
	setenv("FABRICIQ_CLOCK_PAGE", page, 1);
	setenv("FABRICIQ_TELEMETRY_INTERVAL_MS", "20", 1);
	ok(fqn_init(logger) == 0, "plugin init with telemetry on");
	ok(traffic(n, size, 0.3, mode, late_ms) == 0, "%d messages of %zu bytes over 0.3 s, receives %s", n,
	   size,
	   mode == RX_POST_LATE    ? "posted late"
	   : mode == RX_READ_LATE  ? "read late"
	   : mode == RX_CLOCK_STEP ? "read after the clock stepped back"
				   : "on time");
	fqn_fini(); /* flushes the ring */
	struct pollfd pfd = {lfd, POLLIN, 0};
	if (poll(&pfd, 1, 2000) == 1)
		afd = accept(lfd, NULL, NULL);
	ok(afd >= 0, "the plugin connected to the agent socket");
	while (afd >= 0 && (got = recv(afd, buf, sizeof(buf), 0)) > 0)
		fq_frame_decoder_feed(dec, buf, (size_t)got);
	while (fq_frame_decoder_next(dec, &env) == 1) {
		Fabriciq__LaneReport *r = env->lane;

		if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_LANE) {
			t->reports++;
			t->bytes += r->bytes;
			t->tcp &= strcmp(r->lane_kind, "tcp") == 0 && strcmp(r->local_nic, "lo") == 0;
			t->sync &= r->synchronised;
			t->ordered &= r->interval_end_ns >= r->interval_start_ns;
			t->owd_negative += r->owd_min_ns < 0 || r->owd_p50_ns < 0 || r->owd_max_ns < 0;
			if (r->owd_max_ns > 0) {
				t->recv_reports++;
				t->ordered &= r->owd_min_ns <= r->owd_p50_ns &&
					      r->owd_p50_ns <= r->owd_p99_ns &&
					      r->owd_p99_ns <= r->owd_max_ns && r->owd_max_ns < 1000000000;
				if (r->owd_max_ns > t->owd_max_ns)
					t->owd_max_ns = r->owd_max_ns;
			}
		}
		fq_frame_free(env);
	}
	close(afd);
	close(lfd);
	fq_frame_decoder_destroy(dec);
	fq_clock_page_writer_close(w);
}

static void test_agent(const char *dir)
{
	size_t size = 256 * 1024;
	struct taken t;
	int n = 40;

	traffic_to_agent(dir, "agent", n, size, RX_ON_TIME, 0, &t);
	diag("%llu reports, %llu with delays", (unsigned long long)t.reports,
	     (unsigned long long)t.recv_reports);
	ok(t.reports >= 4 && t.recv_reports >= 2, "lane reports from both sides, several intervals");
	is_int(t.bytes, 2ull * (uint64_t)n * size, "bytes over all reports = sent + received");
	ok(t.ordered,
	   "intervals forward, min <= p50 <= p99 <= max, delays under 1 s despite a 5 s clock offset");
	ok(t.tcp, "lane kind tcp, local NIC lo");
	ok(t.sync, "stamps marked synchronised (clock page valid)");
}

/* Two receivers late for their chunks, neither by the lanes' fault; the
 * delays must stay the loopback's, far under the wait (counted from the
 * send to the read, 30 ms and more):
 * - one posts each receive 30 ms after the send (its rank held up
 *   downstream). With socket buffers and chunks of 64 KiB, the sender's
 *   later chunks cannot leave its socket before the receiver takes the
 *   earlier ones: they arrive after the post, which is where their delay
 *   starts (owd_from).
 * - one posts first but reads 30 ms late (its rank off the CPU). The
 *   chunks arrived long before (default buffers hold them): the kernel's
 *   receive stamp says when. */
/* The kernel stamps received packets only while some socket asks, and
 * starts a little after the first does (a deferred switch); on a node the
 * agent's probe sockets ask. Here a UDP socket of the test's asks: -1, or
 * its fd once a packet it sent itself came back stamped (2 s at most). */
static int stamping_on(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	int flags = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof(flags)) < 0 ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || getsockname(fd, (struct sockaddr *)&a, &al) < 0)
		goto fail;
	for (int i = 0; i < 200; i++) {
		union {
			char buf[CMSG_SPACE(sizeof(struct scm_timestamping))];
			struct cmsghdr align;
		} ctl;
		char b = 0;
		struct iovec iov = {&b, 1};
		struct msghdr msg = {.msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = ctl.buf,
				     .msg_controllen = sizeof(ctl.buf)};

		sendto(fd, &b, 1, 0, (struct sockaddr *)&a, sizeof(a));
		usleep(10000);
		while (recvmsg(fd, &msg, 0) == 1) {
			for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
				struct scm_timestamping ts;

				if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPING)
					continue;
				memcpy(&ts, CMSG_DATA(c), sizeof(ts));
				if (ts.ts[0].tv_sec)
					return fd;
			}
			msg.msg_controllen = sizeof(ctl.buf);
		}
	}
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

static void test_late_receiver(const char *dir)
{
	int stamps = stamping_on();

	static const struct {
		enum rx_mode mode;
		const char *name, *buf, *what;
	} cases[] = {{RX_POST_LATE, "post-late", "64K", "the receiver took to post"},
		     {RX_READ_LATE, "read-late", NULL, "the receiver took to read"}};
	struct taken t;
	int n = 10;

	ok(stamps >= 0,
	   "the kernel stamps received packets (a socket of the test's asks, as the agent's do)");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t size = 256 * 1024;

		if (cases[i].buf) {
			setenv("FABRICIQ_SOCKET_BUFFER", cases[i].buf, 1);
			setenv("FABRICIQ_CHUNK_SIZE", cases[i].buf, 1);
		}
		traffic_to_agent(dir, cases[i].name, n, size, cases[i].mode, 30, &t);
		unsetenv("FABRICIQ_SOCKET_BUFFER");
		unsetenv("FABRICIQ_CHUNK_SIZE");
		is_int(t.bytes, 2ull * (uint64_t)n * size, "every byte reported, sent and received");
		ok(t.ordered && t.sync, "reports in order, synchronised");
		ok(t.recv_reports >= 1 && t.owd_max_ns < 10000000,
		   "delays measured (%llu reports), none counts the 30 ms %s (max %.2f ms)",
		   (unsigned long long)t.recv_reports, cases[i].what, t.owd_max_ns / 1e6);
	}
	if (stamps >= 0)
		close(stamps);
}

/* The two ends' clock models disagree by more than a chunk's delay (the
 * page steps back 20 ms between each send and its read, as an agent's
 * estimate off for a moment would): each chunk is seen before it was
 * sent by the clocks. No report may carry a delay below zero; such
 * chunks are left out and the rank's log says so at close. */
static void test_clock_disagrees(const char *dir)
{
	size_t size = 64 * 1024;
	struct taken t;
	int n = 10;

	warns = 0;
	last_warn[0] = '\0';
	traffic_to_agent(dir, "clock-step", n, size, RX_CLOCK_STEP, 20, &t);
	is_int(t.bytes, 2ull * (uint64_t)n * size, "every byte reported, sent and received");
	is_int(t.owd_negative, 0, "no report has a delay below zero (%llu reports)",
	       (unsigned long long)t.reports);
	is_int(t.recv_reports, 0, "nor any delay: every chunk was seen before it was sent");
	like(last_warn, "chunk(s) seen before they were sent by the two hosts' clocks",
	     "the rank's log says so at close: %s", last_warn);
}

/* An agent that accepts and goes away without reading: the batch written
 * to it is lost, and counted so (the rank's log is what a scenario checks
 * the stored reports against). */
static void test_agent_gone(const char *dir)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct fqn_lane_sample *s = calloc(1, sizeof(*s));
	struct fqn_telemetry_counts c;
	struct fqn_telemetry *t;
	struct pollfd pfd;
	int lfd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/gone.sock", dir);
	ok(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(lfd, 4) == 0, "an agent listens");
	ok(fqn_telemetry_start(sa.sun_path, 10, &t) == 0, "telemetry starts");
	pfd = (struct pollfd){lfd, POLLIN, 0};
	ok(poll(&pfd, 1, 2000) == 1, "it connects");
	close(accept(lfd, NULL, NULL)); /* the agent stops */
	for (int i = 0; i < 5; i++)
		fqn_telemetry_push(t, s);
	fqn_telemetry_flush(t, 1000);
	fqn_telemetry_counts(t, &c);
	ok(c.sent == 0 && c.dropped_no_agent == 5,
	   "5 samples to an agent gone: 0 sent, 5 dropped (%llu, %llu)", (unsigned long long)c.sent,
	   (unsigned long long)c.dropped_no_agent);
	fqn_telemetry_stop(t);
	close(lfd);
	free(s);
}

/* An agent that stops while a batch waits for room in its socket: it
 * refuses what comes next and reads what its socket holds (the agent's
 * stop, fq_local_drain). The frames it reads whole are exactly those the
 * plugin counts sent; every other one it counts dropped. (A batch is one
 * write, smaller than half a socket's default buffer: the kernel takes it
 * whole or not at all; were it cut short, its whole frames would count.) */
static void test_agent_stops(const char *dir)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct fqn_lane_sample *s = calloc(1, sizeof(*s));
	struct fq_frame_decoder *dec = fq_frame_decoder_create(0);
	struct fqn_telemetry_counts c = {0};
	struct fqn_telemetry *t;
	Fabriciq__Envelope *env;
	struct pollfd pfd;
	int lfd = socket(AF_UNIX, SOCK_STREAM, 0), afd = -1, rounds = 0;
	uint64_t whole = 0;
	char buf[65536];
	ssize_t got;

	snprintf(s->kind, sizeof(s->kind), "tcp");
	snprintf(s->local, sizeof(s->local), "198.19.0.3:40000");
	snprintf(s->peer, sizeof(s->peer), "198.19.0.5:40001");
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/stops.sock", dir);
	ok(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(lfd, 4) == 0 &&
	       fqn_telemetry_start(sa.sun_path, 10, &t) == 0,
	   "an agent listens, telemetry starts");
	pfd = (struct pollfd){lfd, POLLIN, 0};
	if (poll(&pfd, 1, 2000) == 1)
		afd = accept(lfd, NULL, NULL);
	/* the agent reads nothing until a batch waits */
	do {
		for (int i = 0; i < 200; i++)
			fqn_telemetry_push(t, s);
		fqn_telemetry_flush(t, 1000);
		fqn_telemetry_counts(t, &c);
	} while (afd >= 0 && ++rounds < 500 && c.sent + c.dropped_no_agent + c.dropped_full == c.pushed);
	ok(c.sent + c.dropped_no_agent + c.dropped_full < c.pushed,
	   "the socket full, a batch waits (round %d)", rounds);
	shutdown(afd, SHUT_RD); /* the agent stops: refuses the rest, reads what is there */
	while (afd >= 0 && (got = recv(afd, buf, sizeof(buf), 0)) > 0) {
		fq_frame_decoder_feed(dec, buf, (size_t)got);
		while (fq_frame_decoder_next(dec, &env) == 1) {
			whole++;
			fq_frame_free(env);
		}
	}
	fqn_telemetry_push(t, s);
	fqn_telemetry_flush(t, 1000); /* its next write is refused */
	fqn_telemetry_counts(t, &c);
	ok(c.sent == whole && c.sent + c.dropped_no_agent + c.dropped_full == c.pushed,
	   "the agent read %llu frames whole, the plugin counts %llu sent, %llu dropped of %llu",
	   (unsigned long long)whole, (unsigned long long)c.sent, (unsigned long long)c.dropped_no_agent,
	   (unsigned long long)c.pushed);
	fqn_telemetry_stop(t);
	close(afd);
	close(lfd);
	fq_frame_decoder_destroy(dec);
	free(s);
}

/* A sample's QP numbers reach its LaneReport: an IB lane's both, a TCP
 * lane's none (fqn_lane_report_fill is pure). */
static void test_report_qpn(void)
{
	struct fqn_lane_sample s = {.lane = 2, .is_send = 1};
	Fabriciq__LaneReport r;

	snprintf(s.kind, sizeof(s.kind), "ib");
	s.info.local_qpn = 0x1a2b3c;
	s.info.remote_qpn = 0x000d0e;
	fqn_lane_report_fill(&r, &s);
	ok(strcmp(r.lane_kind, "ib") == 0 && r.local_qpn == 0x1a2b3c && r.remote_qpn == 0x000d0e,
	   "an IB lane's report carries its QPN and its peer's (%#x -> %#x)", r.local_qpn, r.remote_qpn);
	memset(&s.info, 0, sizeof(s.info));
	snprintf(s.kind, sizeof(s.kind), "tcp");
	fqn_lane_report_fill(&r, &s);
	ok(r.local_qpn == 0 && r.remote_qpn == 0, "a TCP lane's none");
}

/* The job report's pacing: a sending end's cap and time throttled reach
 * its LaneReport; a receiving socket's cap (which does not pace the
 * lane) does not. */
static void test_report_pacing(void)
{
	struct fqn_lane_sample s = {.lane = 0, .is_send = 1, .throttled_ns = 40000000};
	Fabriciq__LaneReport r;

	s.info.pacing_rate = 1250000;
	fqn_lane_report_fill(&r, &s);
	ok(r.pacing_rate == 1250000 && r.throttled_ns == 40000000,
	   "a sender's report: cap %llu B/s, throttled %lld ns", (unsigned long long)r.pacing_rate,
	   (long long)r.throttled_ns);
	s.is_send = 0;
	fqn_lane_report_fill(&r, &s);
	ok(r.pacing_rate == 0 && r.throttled_ns == 0, "a receiver's: none");
}

int main(void)
{
	char dir[] = "/tmp/nccl-plugin-telemetry-XXXXXX";

	fqn_log_set_logger(logger);
	setenv("FABRICIQ_IFACES", "lo", 1);
	if (!mkdtemp(dir))
		skip_all("no temp dir");
	test_ring_full();
	test_report_qpn();
	test_report_pacing();
	test_agent(dir);
	test_late_receiver(dir);
	test_clock_disagrees(dir);
	test_agent_gone(dir);
	test_agent_stops(dir);
	{
		char cmd[300];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd) != 0)
			diag("could not remove %s", dir);
	}
	return done_testing();
}
