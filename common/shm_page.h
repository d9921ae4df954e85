/*
 * shm_page: map a fixed-size shared file, the mechanism behind the clock
 * page and the path page (the agent writes, job processes read).
 *
 * The writer (root, in a directory others may read) never follows what a
 * local user may have planted at the page's path: an existing file is
 * reused (so running readers keep their mapping across an agent restart)
 * only if it is a regular file owned by the writer's euid, mode 0644, with
 * one link; anything else (a symbolic link, a file of another user, a
 * writable mode, a hard link to some other file, a FIFO) is replaced by a
 * fresh file, renamed over it, and never opened through.
 */
#ifndef FQ_COMMON_SHM_PAGE_H
#define FQ_COMMON_SHM_PAGE_H

#include <stddef.h>

/* Writer: reuse the file at path if trusted (see above), else create it
 * (mode 0644) or replace it; size it, map it read-write. 0 and *out, or a
 * negative errno. */
int fq_shm_page_create(const char *path, size_t size, void **out);

/* What fq_shm_page_create would replace at path: 1 and why filled ("a
 * symbolic link", "owned by uid 65534", "mode 0666", "2 links"), 0 if
 * nothing is there or it would be reused, or a negative errno. For the
 * writer's log; the decision itself is made again on the opened file. */
int fq_shm_page_untrusted(const char *path, char *why, size_t whylen);

/* Reader: map an existing regular file read-only (a symbolic link is not
 * followed). 0 and *out; -ENOENT (no such file), -ELOOP (a symbolic link),
 * -EPROTO (not a regular file of size bytes), or another negative errno. */
int fq_shm_page_open(const char *path, size_t size, const void **out);

#endif /* FQ_COMMON_SHM_PAGE_H */
