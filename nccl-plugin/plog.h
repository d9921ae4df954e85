/*
 * plog: the plugin's logging, a sink of common/log into the logger NCCL
 * hands to init().
 *
 * The plugin logs through common/log: the macros below (they also give NCCL
 * the caller's file and line) install the sink at their first line, as
 * fqn_log_set_logger does; every line then goes to NCCL, formatted once
 * ("fabriciq: ...") and passed as "%s", so NCCL never sees a format string
 * built from data. Without a logger (before init, or a host that passes
 * none) warnings and errors go to stderr, nothing else. Thread-safe.
 */
#ifndef FQN_PLOG_H
#define FQN_PLOG_H

#include "nccl-plugin/nccl_net.h"

/* Install the sink (logger may be NULL: stderr, warnings only). */
void fqn_log_set_logger(ncclDebugLogger_t logger);

/* One line at an NCCL level (NCCL_LOG_WARN, NCCL_LOG_INFO) from file:line. */
void fqn_log(int level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define FQN_WARN(...) fqn_log(NCCL_LOG_WARN, __FILE__, __LINE__, __VA_ARGS__)
#define FQN_INFO(...) fqn_log(NCCL_LOG_INFO, __FILE__, __LINE__, __VA_ARGS__)

#endif /* FQN_PLOG_H */
