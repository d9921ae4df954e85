/* shm_page: fixed-size shared file mappings (see shm_page.h). */
#include "common/shm_page.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define PAGE_MODE 0644

/* 1 and why if st is not a page the writer may reuse. */
static int untrusted(const struct stat *st, char *why, size_t whylen)
{
	if (S_ISLNK(st->st_mode))
		snprintf(why, whylen, "a symbolic link");
	else if (!S_ISREG(st->st_mode))
		snprintf(why, whylen, "not a regular file");
	else if (st->st_uid != geteuid())
		snprintf(why, whylen, "owned by uid %u", (unsigned)st->st_uid);
	else if ((st->st_mode & 07777) != PAGE_MODE)
		snprintf(why, whylen, "mode %04o", (unsigned)(st->st_mode & 07777));
	else if (st->st_nlink != 1)
		snprintf(why, whylen, "%lu links", (unsigned long)st->st_nlink);
	else
		return 0;
	return 1;
}

int fq_shm_page_untrusted(const char *path, char *why, size_t whylen)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	return untrusted(&st, why, whylen);
}

/* A fresh page file renamed over path (whatever is there): its fd. */
static int replace(const char *path)
{
	char tmp[PATH_MAX];
	int fd, rc;

	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC); /* O_EXCL, mode 0600: nothing planted is opened */
	if (fd < 0)
		return -errno;
	if (fchmod(fd, PAGE_MODE) < 0 || rename(tmp, path) < 0) {
		rc = -errno;
		unlink(tmp);
		close(fd);
		return rc;
	}
	return fd;
}

int fq_shm_page_create(const char *path, size_t size, void **out)
{
	int fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), rc = 0;
	struct stat st;
	char why[64];
	void *p;

	if (fd >= 0 && (fstat(fd, &st) < 0 || untrusted(&st, why, sizeof(why)))) {
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		fd = replace(path);
		if (fd < 0)
			return fd;
	}
	if (ftruncate(fd, (off_t)size) < 0)
		rc = -errno;
	else if ((p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED)
		rc = -errno;
	else
		*out = p;
	close(fd);
	return rc;
}

int fq_shm_page_open(const char *path, size_t size, const void **out)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), rc = 0;
	struct stat st;
	void *p;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		rc = -errno;
	else if (!S_ISREG(st.st_mode) || (size_t)st.st_size != size)
		rc = -EPROTO;
	else if ((p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0)) == MAP_FAILED)
		rc = -errno;
	else
		*out = p;
	close(fd);
	return rc;
}
