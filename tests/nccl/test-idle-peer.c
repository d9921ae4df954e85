/*
 * test-idle-peer: a receiver that calls nothing of the plugin still acks.
 * Two processes over loopback in control mode: the child receives one
 * chunk, sees its receive complete, and then calls nothing for 4 s (its
 * last collective done, it waits in its launcher's barrier). The parent's
 * lane that carried the chunk dies with the ack unread: the chunk is resent
 * on the other lane and the lane is re-dialed, and only the child can ack
 * the copy and take the re-dial. Its plugin's progress thread does it: the
 * parent's send completes in well under the child's 4 s of silence. (Seen
 * on the emulated cluster: an alltoall rank whose lanes failed over at the
 * end of its last iteration waited 300 s for a peer sitting in the
 * launcher's barrier.)
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nccl-plugin/core/comm.h"
#include "nccl-plugin/core/net.h"
#include "nccl-plugin/plog.h"
#include "tests/nccl/nccl-cut.h"
#include "tests/nccl/nccl-test.h"
#include "tests/unit/tap.h"

#define SIZE (64 << 10) /* one chunk: one lane holds it */

static int warns;

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
	(void)flags, (void)file, (void)line, (void)fmt;
	__atomic_add_fetch(&warns, level == NCCL_LOG_WARN, __ATOMIC_RELAXED);
}

/* The receiver: listen, hand the handle over, take one chunk, say so,
 * then call nothing for 4 s. */
static int child(int to_parent, int from_parent)
{
	char handle[NCCL_NET_HANDLE_MAXSIZE], *buf = malloc(SIZE), go;
	struct fqn_listen *l = NULL;
	struct fqn_recv *r = NULL;
	struct fqn_req *q = NULL;
	size_t size = SIZE;
	int tag = 7, done = 0;
	void *data = buf;
	double end;

	if (!buf || fqn_init(logger) < 0 || fqn_listen(0, handle, &l) < 0 ||
	    write(to_parent, handle, sizeof(handle)) != (ssize_t)sizeof(handle))
		return 1;
	for (end = now_s() + 5; !r && now_s() < end;)
		if (fqn_accept(l, &r) < 0)
			return 2;
	if (!r || fqn_irecv(r, 1, &data, &size, &tag, &q) < 0)
		return 3;
	for (end = now_s() + 5; !done && now_s() < end;)
		if (fqn_test(q, &done, NULL, NULL) < 0)
			return 4;
	for (size_t i = 0; done && i < SIZE; i++)
		if (buf[i] != ('x' ^ 1))
			return 5;
	if (!done || write(to_parent, "r", 1) != 1)
		return 6;
	sleep(4); /* the launcher's barrier: nothing of the plugin is called */
	(void)!read(from_parent, &go, 1);
	/* meanwhile the parent closed its lanes (its job ended first): no
	 * failover to say */
	if (__atomic_load_n(&warns, __ATOMIC_RELAXED))
		return 7;
	fqn_close_recv(r);
	fqn_close_listen(l);
	fqn_fini();
	free(buf);
	return 0;
}

int main(void)
{
	char handle[NCCL_NET_HANDLE_MAXSIZE], *buf = malloc(SIZE), c;
	int up[2], down[2], done = 0, rc = 0, st;
	struct fqn_send *s = NULL;
	struct fqn_req *q = NULL;
	double end, t0;
	pid_t pid;

	setenv("FABRICIQ_MODE", "control", 1);
	setenv("FABRICIQ_IFACES", "lo", 1);
	setenv("FABRICIQ_LANES", "2", 1);
	setenv("FABRICIQ_CHUNK_SIZE", "64K", 1);
	setenv("FABRICIQ_TELEMETRY", "0", 1);
	setenv("FABRICIQ_STEER", "off", 1);
	setenv("FABRICIQ_PATH_PAGE", "/nonexistent/paths", 1);
	if (!buf || pipe(up) < 0 || pipe(down) < 0)
		skip_all("no memory or pipes");
	signal(SIGPIPE, SIG_IGN);
	pid = fork();
	if (pid < 0)
		skip_all("cannot fork");
	if (pid == 0) {
		close(up[0]);
		close(down[1]);
		_exit(child(up[1], down[0]));
	}
	close(up[1]);
	close(down[0]);
	fqn_log_set_logger(logger);
	ok(fqn_init(logger) == 0 && read(up[0], handle, sizeof(handle)) == (ssize_t)sizeof(handle),
	   "plugin init in control mode; the child listens");
	for (end = now_s() + 5; !s && now_s() < end;)
		if (fqn_connect(0, handle, &s) < 0)
			break;
	if (!ok(s != NULL, "a 2-lane control-mode connection to the child")) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return done_testing();
	}
	cut_install(s);
	memset(buf, 'x' ^ 1, SIZE);
	/* the chunk leaves in isend; its ack is not read until the child says
	 * it has the chunk */
	ok(fqn_isend(s, buf, SIZE, 7, &q) == 0 && q, "one chunk sent");
	ok(read(up[0], &c, 1) == 1 && c == 'r' && last_lane >= 0,
	   "the child received it on lane %d, its receive complete; it now calls nothing", last_lane);
	cut[last_lane < 0 ? 0 : last_lane] = 1; /* that lane dies with the ack */
	t0 = now_s();
	for (end = t0 + 3; !done && !rc && now_s() < end;)
		rc = fqn_test(q, &done, NULL, NULL);
	fqn_close_send(s); /* the parent's job ends first: the child sees its lanes close */
	ok(done && rc == 0,
	   "the resend is acked and the re-dial taken by the silent child: the send completes in %.0f ms "
	   "(rc %d; the child is silent for 4 s)",
	   (now_s() - t0) * 1e3, rc);
	(void)!write(down[1], "e", 1);
	waitpid(pid, &st, 0);
	fqn_fini();
	is_int(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0,
	       "the child received the chunk intact, said no failover when the parent closed its lanes while "
	       "it was idle, and exited 0");
	free(buf);
	return done_testing();
}
