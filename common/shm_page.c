/* shm_page: fixed-size shared file mappings (see shm_page.h). */
#include "common/shm_page.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int fq_shm_page_create(const char *path, size_t size, void **out)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644), rc = 0;
	void *p;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0) {
		rc = -errno;
	} else if ((p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		rc = -errno;
	} else {
		*out = p;
	}
	close(fd);
	return rc;
}

int fq_shm_page_open(const char *path, size_t size, const void **out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;
	struct stat st;
	void *p;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		rc = -errno;
	else if ((size_t)st.st_size != size)
		rc = -EPROTO;
	else if ((p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0)) == MAP_FAILED)
		rc = -errno;
	else
		*out = p;
	close(fd);
	return rc;
}
