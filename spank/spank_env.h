/*
 * spank_env: read a variable of the job's environment whatever its length
 * (pure: the reader is passed in, spank_getenv in the plugin, so unit
 * tests feed values of any size).
 *
 * spank_getenv copies into a buffer the caller sizes and answers
 * ESPANK_NOSPACE when the value does not fit; a fixed buffer then loses a
 * long LD_LIBRARY_PATH (module and conda trees pass 4096 bytes) as if the
 * job had none.
 */
#ifndef FQ_SPANK_ENV_H
#define FQ_SPANK_ENV_H

/* spank_getenv's shape: copy name's value into buf[0..len); 0, -ENOENT
 * (unset), -ENOSPC (does not fit in len), or another negative errno. */
typedef int (*fq_spank_getenv_fn)(void *arg, const char *name, char *buf, int len);

/* Read name through get, doubling the buffer on -ENOSPC until the value
 * fits (the bound is get's int length). Returns 0 and *out (malloc'd; the
 * caller frees), -ENOENT when unset, -ENOMEM, -E2BIG past INT_MAX bytes,
 * or get's other error. */
int fq_spank_getenv(fq_spank_getenv_fn get, void *arg, const char *name, char **out);

#endif /* FQ_SPANK_ENV_H */
