/*
 * test-rate-apply: the controller's rate (issue 20), from the path page to
 * the lanes' sockets, end to end in one process over loopback (a path
 * page and an agent socket stand in for the node agent), with pacing and
 * steering off. Another job's rate changes nothing; this job's
 * (FABRICIQ_JOB_ID) caps every lane's socket (SO_MAX_PACING_RATE) and
 * its throughput while messages stay intact; lifted, the cap goes; the
 * agent's lane reports carry the rate given and the time it held.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
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
#include "nccl-plugin/core/send_priv.h"
#include "nccl-plugin/plog.h"
#include "tests/nccl/nccl-test.h"
#include "tests/nccl/nccl-traffic.h"
#include "tests/unit/tap.h"

#define RATE 2000000ull /* bytes/s a lane: 2 MB/s */

static int warns;

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
	(void)flags, (void)file, (void)line, (void)fmt;
	warns += level == NCCL_LOG_WARN;
}

static struct fq_path_page_writer *page;

/* The loopback path, with a rate for job (0: none). */
static void publish(uint32_t job, uint64_t rate)
{
	struct fq_path_entry e;
	struct fq_path_rate r;
	int64_t now = fq_now_ns();

	memset(&e, 0, sizeof(e));
	strcpy(e.local_nic, "lo");
	strcpy(e.remote_node, "self");
	strcpy(e.remote_nic, "lo");
	e.remote_ipv4 = htonl(INADDR_LOOPBACK);
	e.state = FQ_PATH_STATE_UP;
	memset(&r, 0, sizeof(r));
	strcpy(r.local_nic, "lo");
	r.remote_ipv4 = e.remote_ipv4;
	r.job = job;
	r.rate = rate;
	r.until_ns = now + 30LL * 1000000000;
	r.gen = 1;
	fq_path_page_publish(page, &e, 1, &r, job ? 1 : 0, now);
}

/* How many of the send comm's lanes' sockets are capped at rate (0: none). */
static int capped_at(struct fqn_send *s, uint64_t rate)
{
	int k = 0;

	for (int i = 0; i < s->c.nlanes; i++) {
		struct fqn_lane_info info;

		if (s->c.lanes[i] && s->c.lanes[i]->ops->info(s->c.lanes[i], &info) == 0 &&
		    info.pacing_rate == rate)
			k++;
	}
	return k;
}

int main(void)
{
	char dir[] = "/tmp/nccl-plugin-rate-XXXXXX", sock[256], paths[256], handle[NCCL_NET_HANDLE_MAXSIZE],
	     buf[65536];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct fq_frame_decoder *dec = fq_frame_decoder_create(0);
	struct fqn_listen *l = NULL;
	struct fqn_send *s = NULL;
	struct fqn_recv *r = NULL;
	int lfd, afd = -1, n = 0, n0, rc, given = 0, other = 0, sends = 0, acked_n = 0;
	int64_t given_ns = 0;
	uint64_t acked = 0, acked_sent = 0;
	double end, t0, mbs;
	Fabriciq__Envelope *env;
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
	publish(99, RATE); /* another job's rate */
	setenv("FABRICIQ_MODE", "control", 1);
	setenv("FABRICIQ_IFACES", "lo", 1);
	setenv("FABRICIQ_LANES", "2", 1);
	setenv("FABRICIQ_STEER", "off", 1);
	setenv("FABRICIQ_PACE", "off", 1);
	setenv("FABRICIQ_CHUNK_SIZE", "32K", 1);
	setenv("FABRICIQ_PATH_PAGE", paths, 1);
	setenv("FABRICIQ_AGENT_SOCKET", sock, 1);
	setenv("FABRICIQ_JOB_ID", "4242", 1);
	ok(fqn_init(logger) == 0, "plugin init in control mode, steering and pacing off");

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
	fqn_close_listen(l);

	rc = loopback_traffic(s, r, 0.5, &n);
	ok(rc && n > 0, "messages flow intact (%d)", n);
	is_int(capped_at(s, 0), 2, "another job's rate: no lane capped");

	publish(4242, RATE);
	loopback_traffic(s, r, 0.2, &n); /* the next update (50 ms) reads it */
	n0 = n;
	t0 = now_s();
	rc = loopback_traffic(s, r, 2.0, &n);
	mbs = (double)(n - n0) * (1 << 18) / (now_s() - t0) / 1e6;
	ok(rc && n > n0, "this job's rate: messages keep flowing intact (%d)", n - n0);
	is_int(capped_at(s, RATE), 2, "both lanes' sockets capped at 2 MB/s (SO_MAX_PACING_RATE)");
	ok(mbs < 2.5 * RATE * 2 / 1e6,
	   "the connection moves %.1f MB/s, within the two lanes' 4 MB/s and a burst", mbs);

	publish(0, 0); /* lifted */
	loopback_traffic(s, r, 0.3, &n);
	is_int(capped_at(s, 0), 2, "lifted: no lane capped");
	is_int(warns, 0, "no WARN");
	fqn_close_send(s);
	fqn_close_recv(r);
	fqn_fini(); /* flushes the telemetry ring */

	struct pollfd pfd = {lfd, POLLIN, 0};
	if (poll(&pfd, 1, 2000) == 1)
		afd = accept(lfd, NULL, NULL);
	while (afd >= 0 && (got = recv(afd, buf, sizeof(buf), 0)) > 0)
		fq_frame_decoder_feed(dec, buf, (size_t)got);
	while (fq_frame_decoder_next(dec, &env) == 1) {
		if (env->payload_case == FABRICIQ__ENVELOPE__PAYLOAD_LANE && env->lane->is_send) {
			given += env->lane->assigned_rate == RATE;
			other += env->lane->assigned_rate && env->lane->assigned_rate != RATE;
			given_ns += env->lane->assigned_ns;
			if (env->lane->tcp_bytes_acked) { /* not the first interval of a lane */
				acked += env->lane->tcp_bytes_acked;
				acked_sent += env->lane->bytes;
				acked_n++;
			}
			sends++;
		}
		fq_frame_free(env);
	}
	ok(given > 0 && !other, "lane reports carry the rate given (%d intervals at 2 MB/s, %d other)", given,
	   other);
	ok(given_ns > 1500000000LL && given_ns < 2 * 3000000000LL,
	   "... and the time it held: %.2f lane-s (2 lanes, about 2.5 s)", (double)given_ns / 1e9);
	ok(acked_n >= sends - 2 && acked_sent > 0 && acked >= 0.9 * (double)acked_sent &&
	       acked <= 1.1 * (double)acked_sent,
	   "the sending intervals but each lane's first say what the peer acknowledged (%d of %d): %.0f kB "
	   "of %.0f kB sent in them",
	   acked_n, sends, (double)acked / 1e3, (double)acked_sent / 1e3);
	close(afd);
	close(lfd);
	fq_frame_decoder_destroy(dec);
	fq_path_page_writer_close(page);
	snprintf(buf, sizeof(buf), "rm -rf %s", dir);
	if (system(buf) != 0)
		diag("could not remove %s", dir);
	return done_testing();
}
