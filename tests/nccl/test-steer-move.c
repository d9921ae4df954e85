/*
 * test-steer-move: a new ECMP hash on the path page's advice, end to end in
 * one process over loopback (a path page and an agent socket stand in for
 * the node agent). Advice to MOVE for another job changes nothing; advice
 * for this job (FABRICIQ_JOB_ID) naming a source port none of its lanes
 * has changes nothing either, nor advice naming its lane with
 * FABRICIQ_ADVICE=off; advice for this job naming lane 1's port
 * re-opens lane 1 on a new source port through the rejoin listener while
 * messages keep flowing intact, without a failover; the agent gets a
 * FailoverEvent with cause "steer".
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
#include "nccl-plugin/core/ctx.h"
#include "nccl-plugin/core/progress.h"
#include "nccl-plugin/core/send_priv.h"
#include "nccl-plugin/core/wire.h"
#include "nccl-plugin/hello.h"
#include "nccl-plugin/plog.h"
#include "tests/nccl/nccl-test.h"
#include "tests/nccl/nccl-traffic.h"
#include "tests/unit/tap.h"

static int warns;

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
	(void)flags, (void)file, (void)line, (void)fmt;
	warns += level == NCCL_LOG_WARN;
}

static struct fq_path_page_writer *page;

static void advise(uint32_t job, uint32_t gen, uint32_t port)
{
	struct fq_path_entry e;
	int64_t now = fq_now_ns();

	memset(&e, 0, sizeof(e));
	strcpy(e.local_nic, "lo");
	strcpy(e.remote_node, "self");
	strcpy(e.remote_nic, "lo");
	e.remote_ipv4 = htonl(INADDR_LOOPBACK);
	e.state = FQ_PATH_STATE_UP;
	e.advice = FQ_PATH_ADVICE_MOVE;
	e.advice_job = job;
	e.advice_gen = gen;
	e.advice_port = port;
	e.advice_until_ns = now + 30LL * 1000000000;
	/* published now: the plugin ignores a stale page */
	fq_path_page_publish(page, &e, 1, NULL, 0, now);
}

static int count_lines(const char *path, const char *word)
{
	char line[1024];
	int n = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, word) != NULL;
	fclose(f);
	return n;
}

int main(void)
{
	char dir[] = "/tmp/nccl-plugin-steer-XXXXXX", sock[256], paths[256], trace[256],
	     handle[NCCL_NET_HANDLE_MAXSIZE], buf[65536], want[160];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct fq_frame_decoder *dec = fq_frame_decoder_create(0);
	struct fqn_listen *l = NULL;
	struct fqn_send *s = NULL;
	struct fqn_recv *r = NULL;
	int lfd, afd = -1, n = 0, n0, rc, ev_steer = 0, ev_other = 0;
	double end;
	Fabriciq__Envelope *env;
	ssize_t got;

	fqn_log_set_logger(logger);
	if (!mkdtemp(dir))
		skip_all("no temp dir");
	snprintf(sock, sizeof(sock), "%s/agent.sock", dir);
	snprintf(paths, sizeof(paths), "%s/paths", dir);
	snprintf(trace, sizeof(trace), "%s/trace", dir);
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	ok(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(lfd, 4) == 0, "agent socket listens");
	ok(fq_path_page_writer_open(paths, &page) == 0, "a path page exists");
	advise(99, 1, 0); /* another job's advice */
	setenv("FABRICIQ_MODE", "control", 1);
	setenv("FABRICIQ_IFACES", "lo", 1);
	setenv("FABRICIQ_LANES", "2", 1);
	setenv("FABRICIQ_CHUNK_SIZE", "32K", 1);
	setenv("FABRICIQ_PATH_PAGE", paths, 1);
	setenv("FABRICIQ_AGENT_SOCKET", sock, 1);
	setenv("FABRICIQ_STEER_TRACE", trace, 1);
	setenv("FABRICIQ_JOB_ID", "4242", 1);
	ok(fqn_init(logger) == 0, "plugin init in control mode, steering on by default");

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
	fqn_close_listen(l); /* as NCCL does: the move must not need it */

	rc = loopback_traffic(s, r, 0.6, &n);
	ok(rc && n > 0, "messages flow intact (%d)", n);
	is_int(count_lines(trace, " move "), 0, "advice for another job: no move");
	/* a port that is neither lane's: the listener's, which no lane dials from */
	advise(4242, 2, strchr(s->c.lc[0].peer, ':') ? (uint32_t)atoi(strrchr(s->c.lc[0].peer, ':') + 1) : 1);
	rc = loopback_traffic(s, r, 0.6, &n);
	is_int(count_lines(trace, " move "), 0,
	       "advice for this job naming a port no lane of it has: no move");
	/* FABRICIQ_ADVICE=off, as fqn_config_load sets it: the advice is not taken */
	s->c.ctx->cfg.advice = 0;
	advise(4242, 3, (uint32_t)atoi(strrchr(s->c.lc[1].local, ':') + 1));
	rc = loopback_traffic(s, r, 0.6, &n);
	is_int(count_lines(trace, " move "), 0, "advice for this job with FABRICIQ_ADVICE=off: no move");
	s->c.ctx->cfg.advice = 1;
	snprintf(want, sizeof(want), " move by=advice lane=1 from=%s ", s->c.lc[1].local);
	advise(4242, 3, (uint32_t)atoi(strrchr(s->c.lc[1].local, ':') + 1));
	n0 = n;
	rc = loopback_traffic(s, r, 1.5, &n);
	ok(rc && n > n0, "advice for this job: messages keep flowing intact (%d)", n - n0);
	ok(count_lines(trace, " move ") >= 1, "a lane was re-opened on a new source port (%d move(s))",
	   count_lines(trace, " move "));
	is_int(count_lines(trace, " move by=advice "), 1, "the first move says why: by=advice");
	is_int(count_lines(trace, want), 1, "the lane moved is the one the advice named by its port:%s",
	       want);
	advise(4242, 4, 0); /* a new advice while the episode (trials, then the cooldown) runs */
	n0 = n;
	rc = loopback_traffic(s, r, 1.0, &n);
	ok(rc && count_lines(trace, " move by=advice ") == 1,
	   "a new advice during the episode and its cooldown: held, no second advice move");
	is_int(warns, 0, "no WARN: a move is not a failover");
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
			ev_steer += strcmp(env->failover->cause, "steer") == 0;
			ev_other += strcmp(env->failover->cause, "steer") != 0;
		}
		fq_frame_free(env);
	}
	ok(ev_steer >= 1 && ev_other == 0,
	   "the agent got FailoverEvents with cause steer (%d), no other (%d)", ev_steer, ev_other);
	close(afd);
	close(lfd);
	fq_frame_decoder_destroy(dec);
	fq_path_page_writer_close(page);
	snprintf(buf, sizeof(buf), "rm -rf %s", dir);
	if (system(buf) != 0)
		diag("could not remove %s", dir);
	return done_testing();
}
