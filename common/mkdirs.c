/* mkdirs: mkdir -p (see mkdirs.h). */
#include "common/mkdirs.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

/* One level: created, or already a directory. */
static int mkdir_one(const char *path, mode_t mode)
{
	struct stat st;

	if (mkdir(path, mode) == 0)
		return 0;
	if (errno != EEXIST)
		return -errno;
	if (stat(path, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

int fq_mkdirs(const char *dir, mode_t mode)
{
	char path[PATH_MAX];
	size_t n = strlen(dir);
	int rc;

	if (n == 0)
		return -EINVAL;
	if (n >= sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, dir, n + 1);
	while (n > 1 && path[n - 1] == '/')
		path[--n] = '\0';
	for (char *p = path + 1; *p; p++) {
		if (*p != '/' || p[-1] == '/')
			continue;
		*p = '\0';
		rc = mkdir_one(path, 0755);
		*p = '/';
		if (rc < 0)
			return rc;
	}
	return mkdir_one(path, mode);
}
