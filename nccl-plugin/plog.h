/*
 * plog: the plugin's logging, through the logger NCCL hands to init().
 *
 * Every line is formatted here ("fabriciq: ...") and passed to NCCL as "%s",
 * so NCCL never sees a format string built from data. Before init, or when
 * a host passes no logger, warnings go to stderr. Thread-safe.
 */
#ifndef FQN_PLOG_H
#define FQN_PLOG_H

#include "nccl-plugin/nccl_net.h"

void fqn_log_set_logger(ncclDebugLogger_t logger);

void fqn_log(int level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define FQN_WARN(...) fqn_log(NCCL_LOG_WARN, __FILE__, __LINE__, __VA_ARGS__)
#define FQN_INFO(...) fqn_log(NCCL_LOG_INFO, __FILE__, __LINE__, __VA_ARGS__)

#endif /* FQN_PLOG_H */
