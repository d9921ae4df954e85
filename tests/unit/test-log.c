/* common/log: levels, sink, the rate limiter. */
#include "common/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/unit/tap.h"

static char last[1100];
static int lines;
static enum fq_log_level last_level;
static int suppressed_line;

static void sink(enum fq_log_level level, const char *line, void *arg)
{
	(void)arg;
	if (strstr(line, "similar messages suppressed"))
		suppressed_line = strstr(line, "(2 similar") == line;
	snprintf(last, sizeof(last), "%s", line);
	last_level = level;
	lines++;
}

int main(void)
{
	enum fq_log_level l;
	struct fq_ratelimit rl = {.interval_ns = 1000, .burst = 3};
	unsigned supp = 0;
	int allowed = 0;

	fq_log_init("test", FQ_LOG_INFO, FQ_LOG_STDERR);
	fq_log_set_sink(sink, NULL);
	fq_info("peer %s lane %d: %s\n", "n2", 1, "up");
	is_str(last, "peer n2 lane 1: up", "formatted; trailing newline stripped");
	is_int(last_level, FQ_LOG_INFO, "level passed to the sink");
	lines = 0;
	fq_debug("not shown %d", 1);
	is_int(lines, 0, "debug dropped at info level");
	fq_log_set_level(FQ_LOG_DEBUG);
	fq_debug("shown");
	is_int(lines, 1, "debug shown at debug level");

	ok(fq_log_level_parse("WARN", &l) == 0 && l == FQ_LOG_WARN, "level names parse");
	is_int(fq_log_level_parse("loud", &l), -EINVAL, "unknown level refused");

	for (int i = 0; i < 10; i++)
		allowed += fq_ratelimit_allow(&rl, 100 + i, &supp);
	is_int(allowed, 3, "burst of 3 in one interval");
	ok(fq_ratelimit_allow(&rl, 1200, &supp) == 1 && supp == 7,
	   "next interval: allowed, 7 reported suppressed");
	ok(fq_ratelimit_allow(&rl, 1201, &supp) == 1 && supp == 0, "... and the count resets");

	lines = 0;
	for (int i = 0; i < 100; i++)
		fq_log_rl(FQ_LOG_WARN, "packet %d dropped", i);
	is_int(lines, 10, "fq_log_rl: 10 lines of 100 within a second");

	/* The first line after a suppressed stretch says how many were dropped. */
	{
		struct fq_ratelimit slow = {.interval_ns = 200000000ull, .burst = 1};
		struct timespec pause = {0, 250000000};
		lines = 0;
		for (int i = 0; i < 3; i++)
			fq_log_ratelimited(&slow, FQ_LOG_WARN, "retry %d", i);
		is_int(lines, 1, "burst 1: one line of 3");
		nanosleep(&pause, NULL);
		fq_log_ratelimited(&slow, FQ_LOG_WARN, "retry %d", 3);
		is_int(lines, 3, "next interval: the suppressed count, then the line");
		ok(suppressed_line, "'(2 similar messages suppressed)' came first");
		is_str(last, "retry 3", "... the line last");
	}

	/* Without a sink: "component: level: message" on stderr. */
	{
		char buf[256] = "";
		int p[2], saved = dup(STDERR_FILENO);
		ssize_t n;
		if (pipe(p) < 0 || saved < 0)
			abort();
		fq_log_set_sink(NULL, NULL);
		dup2(p[1], STDERR_FILENO);
		fq_error("bind %s: %s", "eth0", strerror(EADDRINUSE));
		dup2(saved, STDERR_FILENO);
		close(saved);
		close(p[1]);
		n = read(p[0], buf, sizeof(buf) - 1);
		buf[n > 0 ? n : 0] = '\0';
		close(p[0]);
		is_str(buf, "test: error: bind eth0: Address already in use\n", "stderr line format");
		fq_log_set_sink(sink, NULL);
	}

	/* Under systemd: "<N>" priorities when JOURNAL_STREAM names stderr's
	 * stream, none when it names another. */
	for (int journal = 0; journal < 2; journal++) {
		char buf[256] = "", js[64];
		int p[2], saved = dup(STDERR_FILENO);
		struct stat st;
		ssize_t n;

		if (pipe(p) < 0 || saved < 0 || fstat(p[1], &st) < 0)
			abort();
		snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st.st_dev,
			 (unsigned long long)st.st_ino + (journal ? 0 : 1));
		setenv("JOURNAL_STREAM", js, 1);
		fq_log_set_sink(NULL, NULL);
		dup2(p[1], STDERR_FILENO);
		fq_log_init("test", FQ_LOG_INFO, FQ_LOG_STDERR);
		fq_warn("rail1 down");
		fq_error("gone");
		dup2(saved, STDERR_FILENO);
		close(saved);
		close(p[1]);
		n = read(p[0], buf, sizeof(buf) - 1);
		buf[n > 0 ? n : 0] = '\0';
		close(p[0]);
		is_str(buf,
		       journal ? "<4>test: warn: rail1 down\n<3>test: error: gone\n"
			       : "test: warn: rail1 down\ntest: error: gone\n",
		       journal ? "JOURNAL_STREAM is stderr: sd-daemon priorities"
			       : "JOURNAL_STREAM is another stream: none");
		unsetenv("JOURNAL_STREAM");
		fq_log_init("test", FQ_LOG_INFO, FQ_LOG_STDERR);
		fq_log_set_sink(sink, NULL);
	}

	{
		char big[3000];
		memset(big, 'a', sizeof(big) - 1);
		big[sizeof(big) - 1] = 0;
		fq_warn("%s", big);
		is_int(strlen(last), 1023, "long lines are truncated, not overflowed");
	}
	return done_testing();
}
