/*
 * tb-hostns: the two things the testbed cannot do from a shell.
 *
 *   tb-hostns hold HOSTNAME OFFSET_NS
 *     Makes an emulated host's UTS and time namespaces and leaves a holder
 *     process in them. Run it inside the host's network namespace (via
 *     `ip netns exec`, which also gives it a mount namespace with that
 *     netns's /sys). The time namespace gets OFFSET_NS (signed nanoseconds)
 *     on CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW and CLOCK_BOOTTIME; util-linux
 *     unshare only takes whole seconds, and the testbed needs sub-ms
 *     offsets. Prints the holder's pid on stdout and returns once the
 *     holder is ready; the holder lives until SIGTERM/SIGKILL.
 *
 *   tb-hostns clockdiff PID
 *     Prints (CLOCK_MONOTONIC_RAW in PID's time namespace) minus (ours) in
 *     nanoseconds, and the bracketing uncertainty. It reads our clock,
 *     enters PID's time namespace, reads, goes back and reads again, so
 *     the uncertainty is a few microseconds, not a process start-up.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

static int die(const char *what)
{
	fprintf(stderr, "tb-hostns: %s: %s\n", what, strerror(errno));
	return 1;
}

static int parse_i64(const char *s, int64_t *out)
{
	char *end;

	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

/* /proc/self/timens_offsets takes "<clock> <secs> <nsecs>" with
 * 0 <= nsecs < 1e9, so a negative offset borrows one second. */
static int write_offsets(int64_t off)
{
	int64_t sec = off / 1000000000, nsec = off % 1000000000;
	char buf[128];
	int fd, n;

	if (nsec < 0) {
		nsec += 1000000000;
		sec -= 1;
	}
	n = snprintf(buf, sizeof(buf),
		     "monotonic %" PRId64 " %" PRId64 "\nboottime %" PRId64 " %" PRId64 "\n", sec, nsec, sec,
		     nsec);
	fd = open("/proc/self/timens_offsets", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, buf, n) != n) {
		int e = -errno;
		close(fd);
		return e;
	}
	close(fd);
	return 0;
}

static int cmd_hold(const char *host, const char *offset)
{
	int64_t off;
	int pfd[2];
	pid_t pid;
	char c;

	if (parse_i64(offset, &off) < 0) {
		fprintf(stderr, "tb-hostns: bad offset '%s' (signed nanoseconds)\n", offset);
		return 2;
	}
	if (unshare(CLONE_NEWUTS | CLONE_NEWTIME) < 0)
		return die("unshare(UTS|TIME)");
	if ((errno = -write_offsets(off)) != 0)
		return die("writing /proc/self/timens_offsets");
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return die("pipe");
	pid = fork(); /* the child is the first member of the time namespace */
	if (pid < 0)
		return die("fork");
	if (pid == 0) {
		close(pfd[0]);
		if (sethostname(host, strlen(host)) < 0)
			_exit(die("sethostname"));
		setsid();
		int nul = open("/dev/null", O_RDWR);
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
			dup2(nul, 2);
			if (nul > 2)
				close(nul);
		}
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		prctl(PR_SET_NAME, "tb-host-hold");
		if (write(pfd[1], "r", 1) != 1)
			_exit(1);
		/* it outlives the command that made it: hold nothing else it
		 * was handed (a caller's `flock` lock would be held until the
		 * cluster is torn down) */
		close_range(3, ~0U, 0);
		for (;;)
			pause();
	}
	close(pfd[1]);
	if (read(pfd[0], &c, 1) != 1) {
		waitpid(pid, NULL, 0);
		fprintf(stderr, "tb-hostns: holder for %s failed to start\n", host);
		return 1;
	}
	printf("%d\n", (int)pid);
	return 0;
}

static int cmd_clockdiff(const char *pidstr)
{
	char path[64];
	int self, other;
	int64_t a, b, c, best_d = 0, best_u = INT64_MAX;

	snprintf(path, sizeof(path), "/proc/%s/ns/time", pidstr);
	other = open(path, O_RDONLY | O_CLOEXEC);
	if (other < 0)
		return die(path);
	self = open("/proc/self/ns/time", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return die("/proc/self/ns/time");
	/* Keep the tightest of a few brackets: a preemption between the
	 * reads widens one bracket, not all of them. */
	for (int i = 0; i < 16; i++) {
		a = fq_now_ns();
		if (setns(other, CLONE_NEWTIME) < 0)
			return die("setns(time)");
		b = fq_now_ns();
		if (setns(self, CLONE_NEWTIME) < 0)
			return die("setns(time) back");
		c = fq_now_ns();
		if (c - a < best_u) {
			best_u = c - a;
			best_d = b - (a + (c - a) / 2);
		}
	}
	printf("%" PRId64 " %" PRId64 "\n", best_d, (best_u + 1) / 2);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "hold") == 0)
		return cmd_hold(argv[2], argv[3]);
	if (argc == 3 && strcmp(argv[1], "clockdiff") == 0)
		return cmd_clockdiff(argv[2]);
	fprintf(stderr, "usage: tb-hostns hold HOSTNAME OFFSET_NS\n"
			"       tb-hostns clockdiff PID\n");
	return 2;
}
