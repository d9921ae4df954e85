/*
 * log: leveled, component-prefixed logging shared by every fabriciq part.
 *
 * A process sets its component once (fq_log_init("agent", ...)); every line
 * is "component: LEVEL: message". Under systemd (JOURNAL_STREAM names the
 * stream stderr still is, sd-daemon(3)) a stderr line starts with its
 * syslog priority, "<3>" for errors to "<7>" for debug, which journald
 * keeps as the entry's priority. Lines go to stderr, to syslog, or to a
 * host's logger through a sink (the NCCL plugin hands them to NCCL's logger,
 * the SPANK plugin to slurm_error/slurm_info). Messages are formatted with
 * printf checking. Not async-signal-safe; thread-safe (each line is one
 * write or one sink call).
 */
#ifndef FQ_COMMON_LOG_H
#define FQ_COMMON_LOG_H

#include <stdarg.h>
#include <stdint.h>

enum fq_log_level {
	FQ_LOG_ERROR = 0,
	FQ_LOG_WARN = 1,
	FQ_LOG_INFO = 2,
	FQ_LOG_DEBUG = 3,
};

enum fq_log_target {
	FQ_LOG_STDERR = 0,
	FQ_LOG_SYSLOG = 1,
};

/* A host's logger: receives the level and the formatted line (without the
 * component prefix or a trailing newline). */
typedef void (*fq_log_sink_fn)(enum fq_log_level level, const char *line, void *arg);

/* Set the component name (copied, truncated to 31 bytes), the most verbose
 * level written, and the target. May be called again. */
void fq_log_init(const char *component, enum fq_log_level max_level, enum fq_log_target target);

/* Route every line to sink instead of stderr/syslog; NULL restores the target. */
void fq_log_set_sink(fq_log_sink_fn sink, void *arg);

void fq_log_set_level(enum fq_log_level max_level);
enum fq_log_level fq_log_get_level(void);

/* "error", "warn", "info", "debug" -> level; returns 0 or -EINVAL. */
int fq_log_level_parse(const char *name, enum fq_log_level *out);
const char *fq_log_level_name(enum fq_log_level level);

void fq_log(enum fq_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fq_vlog(enum fq_log_level level, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/*
 * Rate limiting for per-packet paths: at most `burst` lines per
 * `interval_ns`; the first line after a suppressed stretch says how many
 * were dropped. One state per call site (the macros below make it static).
 */
struct fq_ratelimit {
	uint64_t interval_ns;
	unsigned burst;
	uint64_t window_start_ns;
	unsigned printed;
	unsigned suppressed;
};

/* Returns 1 if a line may be printed now (and sets *suppressed to the
 * number dropped since the last printed one), 0 if it must be dropped. */
int fq_ratelimit_allow(struct fq_ratelimit *rl, uint64_t now_ns, unsigned *suppressed);

void fq_log_ratelimited(struct fq_ratelimit *rl, enum fq_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define fq_error(...) fq_log(FQ_LOG_ERROR, __VA_ARGS__)
#define fq_warn(...)  fq_log(FQ_LOG_WARN, __VA_ARGS__)
#define fq_info(...)  fq_log(FQ_LOG_INFO, __VA_ARGS__)
#define fq_debug(...)                                                                                        \
	do {                                                                                                 \
		if (fq_log_get_level() >= FQ_LOG_DEBUG)                                                      \
			fq_log(FQ_LOG_DEBUG, __VA_ARGS__);                                                   \
	} while (0)

/* At most 10 lines per second from this call site. */
#define fq_log_rl(level, ...)                                                                                \
	do {                                                                                                 \
		static struct fq_ratelimit fq_rl_ = {.interval_ns = 1000000000ull, .burst = 10};             \
		fq_log_ratelimited(&fq_rl_, (level), __VA_ARGS__);                                           \
	} while (0)

#endif /* FQ_COMMON_LOG_H */
