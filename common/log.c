#include "common/log.h"

#include "common/clock.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

static struct {
	char component[32];
	enum fq_log_level max_level;
	enum fq_log_target target;
	fq_log_sink_fn sink;
	void *sink_arg;
	bool journal; /* stderr is systemd's journal stream: "<N>" priorities */
} logger = {
    .component = "fabriciq",
    .max_level = FQ_LOG_INFO,
    .target = FQ_LOG_STDERR,
};

static pthread_mutex_t rl_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

/* sd-daemon(3): systemd sets JOURNAL_STREAM to "DEV:INODE" of the stream
 * it connected stdout/stderr to; stderr is the journal only if it is still
 * that stream (not redirected since, nor inherited by a child whose stderr
 * goes elsewhere). */
static bool stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	return js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && fstat(STDERR_FILENO, &st) == 0 &&
	       (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void fq_log_init(const char *component, enum fq_log_level max_level, enum fq_log_target target)
{
	logger.journal = target == FQ_LOG_STDERR && stderr_is_journal();
	snprintf(logger.component, sizeof(logger.component), "%s", component ? component : "fabriciq");
	logger.max_level = max_level;
	logger.target = target;
	if (target == FQ_LOG_SYSLOG)
		openlog(logger.component, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void fq_log_set_sink(fq_log_sink_fn sink, void *arg)
{
	logger.sink_arg = arg;
	logger.sink = sink;
}

void fq_log_set_level(enum fq_log_level max_level)
{
	logger.max_level = max_level;
}

enum fq_log_level fq_log_get_level(void)
{
	return logger.max_level;
}

const char *fq_log_level_name(enum fq_log_level level)
{
	return (unsigned)level < sizeof(level_names) / sizeof(level_names[0]) ? level_names[level] : "?";
}

int fq_log_level_parse(const char *name, enum fq_log_level *out)
{
	for (unsigned i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (name && strcasecmp(name, level_names[i]) == 0) {
			*out = (enum fq_log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

void fq_vlog(enum fq_log_level level, const char *fmt, va_list ap)
{
	static const int syslog_prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
	char line[1024];
	int n;

	/* An out-of-range level from a caller's cast must not index past
	 * syslog_prio: treat it as the most verbose. */
	if ((unsigned)level > FQ_LOG_DEBUG)
		level = FQ_LOG_DEBUG;
	if (level > logger.max_level)
		return;
	n = vsnprintf(line, sizeof(line), fmt, ap);
	if (n < 0)
		return;
	/* Strip one trailing newline so callers may or may not add one. */
	n = (size_t)n >= sizeof(line) ? (int)sizeof(line) - 1 : n;
	if (n > 0 && line[n - 1] == '\n')
		line[--n] = '\0';

	if (logger.sink) {
		logger.sink(level, line, logger.sink_arg);
	} else if (logger.target == FQ_LOG_SYSLOG) {
		syslog(syslog_prio[level], "%s", line);
	} else {
		char out[1200];
		char prio[8] = "";
		int m;

		if (logger.journal)
			snprintf(prio, sizeof(prio), "<%d>", syslog_prio[level]);
		m = snprintf(out, sizeof(out), "%s%s: %s: %s\n", prio, logger.component,
			     fq_log_level_name(level), line);
		if (m > 0) {
			ssize_t w =
			    write(STDERR_FILENO, out, (size_t)m < sizeof(out) ? (size_t)m : sizeof(out) - 1);
			(void)w;
		}
	}
}

void fq_log(enum fq_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fq_vlog(level, fmt, ap);
	va_end(ap);
}

int fq_ratelimit_allow(struct fq_ratelimit *rl, uint64_t now_ns, unsigned *suppressed)
{
	if (rl->window_start_ns == 0 || now_ns - rl->window_start_ns >= rl->interval_ns) {
		rl->window_start_ns = now_ns;
		rl->printed = 0;
	}
	if (rl->printed >= rl->burst) {
		rl->suppressed++;
		return 0;
	}
	rl->printed++;
	*suppressed = rl->suppressed;
	rl->suppressed = 0;
	return 1;
}

void fq_log_ratelimited(struct fq_ratelimit *rl, enum fq_log_level level, const char *fmt, ...)
{
	unsigned suppressed = 0;
	int allow;
	va_list ap;

	if (level > logger.max_level)
		return;
	pthread_mutex_lock(&rl_lock);
	allow = fq_ratelimit_allow(rl, (uint64_t)fq_now_ns(), &suppressed);
	pthread_mutex_unlock(&rl_lock);
	if (!allow)
		return;
	if (suppressed)
		fq_log(level, "(%u similar messages suppressed)", suppressed);
	va_start(ap, fmt);
	fq_vlog(level, fmt, ap);
	va_end(ap);
}
