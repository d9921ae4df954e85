/* spank_env: see spank_env.h. */
#include "spank/spank_env.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>

/* Most values fit at once; a long one costs a doubling per retry. */
#define FIRST_LEN 4096

int fq_spank_getenv(fq_spank_getenv_fn get, void *arg, const char *name, char **out)
{
	size_t len = FIRST_LEN;
	char *buf = NULL, *bigger;
	int rc;

	for (;;) {
		bigger = realloc(buf, len);
		if (!bigger) {
			free(buf);
			return -ENOMEM;
		}
		buf = bigger;
		rc = get(arg, name, buf, (int)len);
		if (rc != -ENOSPC)
			break;
		if (len == INT_MAX) {
			rc = -E2BIG;
			break;
		}
		len = len > INT_MAX / 2 ? INT_MAX : len * 2;
	}
	if (rc < 0) {
		free(buf);
		return rc;
	}
	*out = buf;
	return 0;
}
