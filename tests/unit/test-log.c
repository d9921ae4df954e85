/* common/log: levels, sink, the rate limiter. */
#include "common/log.h"

#include <errno.h>

#include "tests/unit/tap.h"

static char last[1100];
static int lines;
static enum fq_log_level last_level;

static void sink(enum fq_log_level level, const char *line, void *arg)
{
	(void)arg;
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

	{
		char big[3000];
		memset(big, 'a', sizeof(big) - 1);
		big[sizeof(big) - 1] = 0;
		fq_warn("%s", big);
		is_int(strlen(last), 1023, "long lines are truncated, not overflowed");
	}
	return done_testing();
}
