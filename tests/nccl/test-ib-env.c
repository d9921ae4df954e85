/* test-ib-env: the IB lane's FABRICIQ_* variables, good and bad values. */
#include <errno.h>
#include <string.h>

#include "nccl-plugin/env.h"
#include "tests/unit/tap.h"

static const char *const *vars;

static const char *lookup(const char *name)
{
	for (int i = 0; vars && vars[i]; i += 2)
		if (strcmp(vars[i], name) == 0)
			return vars[i + 1];
	return NULL;
}

static int load(struct fqn_config *c, char *err, const char *const *v)
{
	vars = v;
	err[0] = '\0';
	return fqn_config_load(c, lookup, err, 256);
}

int main(void)
{
	struct fqn_config c;
	char err[256];

	ok(load(&c, err, NULL) == 0, "defaults load");
	is_str(c.transport, "tcp", "transport tcp by default");
	ok(c.ib_gid_index == -1 && c.ib_tc == 0 && c.ib_sl == 0, "GID chosen, TC 0, SL 0 by default");
	ok(c.ib_timeout == 20 && c.ib_retry_cnt == 7, "timeout 20, retry count 7 (NCCL's) by default");
	ok(load(&c, err,
		(const char *const[]){"FABRICIQ_TRANSPORT", "ib", "FABRICIQ_IB_GID_INDEX", "3",
				      "FABRICIQ_IB_TC", "106", "FABRICIQ_IB_SL", "5", "FABRICIQ_IB_TIMEOUT",
				      "14", "FABRICIQ_IB_RETRY_CNT", "3", NULL}) == 0,
	   "all set");
	ok(strcmp(c.transport, "ib") == 0 && c.ib_gid_index == 3 && c.ib_tc == 106 && c.ib_sl == 5 &&
	       c.ib_timeout == 14 && c.ib_retry_cnt == 3,
	   "values read");
	ok(load(&c, err, (const char *const[]){"FABRICIQ_TRANSPORT", "auto", NULL}) == 0, "auto accepted");
	ok(load(&c, err, (const char *const[]){"FABRICIQ_TRANSPORT", "IB", NULL}) == -EINVAL &&
	       strstr(err, "FABRICIQ_TRANSPORT='IB': must be tcp, ib or auto"),
	   "transport IB refused: %s", err);
	ok(load(&c, err, (const char *const[]){"FABRICIQ_IB_GID_INDEX", "-1", NULL}) == -EINVAL &&
	       strstr(err, "FABRICIQ_IB_GID_INDEX"),
	   "GID index -1 refused: %s", err);
	ok(load(&c, err, (const char *const[]){"FABRICIQ_IB_GID_INDEX", "256", NULL}) == -EINVAL,
	   "GID index 256 refused");
	ok(load(&c, err, (const char *const[]){"FABRICIQ_IB_GID_INDEX", "0", NULL}) == 0 &&
	       c.ib_gid_index == 0,
	   "GID index 0 accepted");
	ok(load(&c, err, (const char *const[]){"FABRICIQ_IB_TC", "256", NULL}) == -EINVAL, "TC 256 refused");
	ok(load(&c, err, (const char *const[]){"FABRICIQ_IB_SL", "16", NULL}) == -EINVAL, "SL 16 refused");
	ok(load(&c, err, (const char *const[]){"FABRICIQ_IB_TIMEOUT", "0", NULL}) == -EINVAL,
	   "timeout 0 refused");
	ok(load(&c, err, (const char *const[]){"FABRICIQ_IB_RETRY_CNT", "8", NULL}) == -EINVAL,
	   "retry count 8 refused: %s", err);
	return done_testing();
}
