/*
 * shm_page: map a fixed-size shared file, the mechanism behind the clock
 * page and the path page (the agent writes, job processes read).
 */
#ifndef FQ_COMMON_SHM_PAGE_H
#define FQ_COMMON_SHM_PAGE_H

#include <stddef.h>

/* Writer: create the file (mode 0644) or reuse it, size it, map it
 * read-write. 0 and *out, or a negative errno. */
int fq_shm_page_create(const char *path, size_t size, void **out);

/* Reader: map an existing file read-only. 0 and *out; -ENOENT (no such
 * file), -EPROTO (not size bytes), or another negative errno. */
int fq_shm_page_open(const char *path, size_t size, const void **out);

#endif /* FQ_COMMON_SHM_PAGE_H */
