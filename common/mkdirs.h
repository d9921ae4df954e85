/*
 * mkdirs: create a directory and every missing parent (mkdir -p).
 *
 * A daemon's state directory (the agent's and the controller's spools,
 * /var/spool/fabriciq/agent by default) may be configured anywhere; the
 * daemon creates what is missing rather than fail at its first start.
 */
#ifndef FQ_COMMON_MKDIRS_H
#define FQ_COMMON_MKDIRS_H

#include <sys/types.h>

/* Create dir with mode (before the umask) and each missing parent with 0755.
 * An existing directory at any level is fine; an existing non-directory is
 * -ENOTDIR. Returns 0 or -errno of the level that failed. */
int fq_mkdirs(const char *dir, mode_t mode);

#endif
