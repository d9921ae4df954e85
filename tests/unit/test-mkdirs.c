/* test-mkdirs: fq_mkdirs makes every missing level (the agent's spool in
 * /var/spool/fabriciq/agent failed when /var/spool/fabriciq was missing),
 * gives the last one its mode, accepts what exists and refuses a file. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/mkdirs.h"
#include "tests/unit/tap.h"

static mode_t mode_of(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? st.st_mode & 07777 : 0;
}

int main(void)
{
	char base[] = "/tmp/fq-mkdirs-XXXXXX", path[PATH_MAX], file[PATH_MAX];
	FILE *f;

	plan(9);
	umask(022);
	if (!mkdtemp(base))
		return 1;
	snprintf(path, sizeof(path), "%s/var/spool/fabriciq/agent", base);
	is_int(fq_mkdirs(path, 0700), 0, "three missing levels and the last one: made");
	is_int(mode_of(path), 0700, "the last level has the mode asked for");
	snprintf(file, sizeof(file), "%s/var/spool", base);
	is_int(mode_of(file), 0755, "a parent has 0755");
	is_int(fq_mkdirs(path, 0700), 0, "all of it existing: fine");
	snprintf(path, sizeof(path), "%s/a//b/", base);
	is_int(fq_mkdirs(path, 0700), 0, "doubled and trailing slashes");
	snprintf(path, sizeof(path), "%s/a/b", base);
	is_int(mode_of(path), 0700, "... made a/b");
	snprintf(file, sizeof(file), "%s/file", base);
	f = fopen(file, "w");
	if (f)
		fclose(f);
	snprintf(path, sizeof(path), "%s/file/spool", base);
	is_int(fq_mkdirs(path, 0700), -ENOTDIR, "a file on the way: -ENOTDIR");
	is_int(fq_mkdirs(file, 0700), -ENOTDIR, "a file at the last level: -ENOTDIR");
	is_int(fq_mkdirs("", 0700), -EINVAL, "an empty path: -EINVAL");
	snprintf(path, sizeof(path), "rm -rf '%s'", base);
	if (system(path) != 0)
		diag("could not remove %s", base);
	return done_testing();
}
