/* plog: common/log's sink into NCCL's logger (see plog.h). */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#include "common/log.h"
#include "nccl-plugin/plog.h"

static ncclDebugLogger_t fqn_logger;
/* The caller's place, for NCCL, while fqn_log formats its line. */
static __thread const char *fqn_file;
static __thread int fqn_line;

static void nccl_sink(enum fq_log_level level, const char *line, void *arg)
{
	ncclDebugLogger_t logger = __atomic_load_n(&fqn_logger, __ATOMIC_ACQUIRE);

	(void)arg;
	if (logger)
		logger(level <= FQ_LOG_WARN ? NCCL_LOG_WARN : NCCL_LOG_INFO, NCCL_NET | NCCL_INIT,
		       fqn_file ? fqn_file : __FILE__, fqn_file ? fqn_line : __LINE__, "fabriciq: %s", line);
	else if (level <= FQ_LOG_WARN)
		fprintf(stderr, "fabriciq: WARN: %s\n", line);
}

static void install_sink(void)
{
	fq_log_init("fabriciq", FQ_LOG_INFO, FQ_LOG_STDERR);
	fq_log_set_sink(nccl_sink, NULL);
}

static pthread_once_t sink_once = PTHREAD_ONCE_INIT;

void fqn_log_set_logger(ncclDebugLogger_t logger)
{
	__atomic_store_n(&fqn_logger, logger, __ATOMIC_RELEASE);
	pthread_once(&sink_once, install_sink);
}

void fqn_log(int level, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	pthread_once(&sink_once, install_sink);
	fqn_file = file;
	fqn_line = line;
	va_start(ap, fmt);
	fq_vlog(level == NCCL_LOG_WARN ? FQ_LOG_WARN : FQ_LOG_INFO, fmt, ap);
	va_end(ap);
	fqn_file = NULL;
}
