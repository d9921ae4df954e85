/* plog: formats once, hands the line to NCCL's logger (see plog.h). */
#include <stdarg.h>
#include <stdio.h>

#include "nccl-plugin/plog.h"

static ncclDebugLogger_t fqn_logger;

void fqn_log_set_logger(ncclDebugLogger_t logger)
{
	__atomic_store_n(&fqn_logger, logger, __ATOMIC_RELEASE);
}

void fqn_log(int level, const char *file, int line, const char *fmt, ...)
{
	ncclDebugLogger_t logger = __atomic_load_n(&fqn_logger, __ATOMIC_ACQUIRE);
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (logger)
		logger(level, NCCL_NET | NCCL_INIT, file, line, "fabriciq: %s", buf);
	else if (level == NCCL_LOG_WARN)
		fprintf(stderr, "fabriciq: WARN: %s\n", buf);
}
