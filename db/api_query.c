/*
 * api_query: see db/api_query.h.
 */
#include "db/api_query.h"

#include <errno.h>
#include <stdlib.h>

#include "db/internal.h"

int fq_db_hint_applied(struct fq_db *db, int64_t id)
{
	struct fq_db_params p = {0};
	PGresult *res;
	int rc;

	fq_db_param_i64(&p, id);
	/* "applied_at is null": two admins applying at once record it once. */
	res = fq_db_run(
	    db, "recording the applied hint",
	    "update fabriciq.drain_hints set applied_at = now() where id = $1 and applied_at is null", &p,
	    &rc);
	if (!res)
		return rc;
	rc = atoi(PQcmdTuples(res)) == 1 ? 0 : -ENOENT;
	if (rc)
		fq_db_set_error(db, "drain hint %lld is not pending (unknown or already applied)",
				(long long)id);
	PQclear(res);
	return rc;
}

int fq_db_applied_hints(struct fq_db *db,
			void (*fn)(void *arg, const char *node, int resume, const char *reason), void *arg)
{
	PGresult *res;
	int rc;

	res = fq_db_run(db, "reading the applied hints",
			"select distinct on (node) node, action = 'resume', reason from fabriciq.drain_hints"
			" where applied_at is not null and action in ('drain', 'resume')"
			" order by node, applied_at desc, id desc",
			NULL, &rc);
	if (!res)
		return rc;
	for (int i = 0; i < PQntuples(res); i++)
		fn(arg, PQgetvalue(res, i, 0), PQgetvalue(res, i, 1)[0] == 't', PQgetvalue(res, i, 2));
	PQclear(res);
	return 0;
}
