/*
 * api_query: the few writes the `fabriciq` CLI makes besides migrations
 * (the controller's API is read-only). Part of libfqapiquery, linked by the
 * CLI only; uses libfqdb's connection and error conventions (db/db.h).
 */
#ifndef FQ_DB_API_QUERY_H
#define FQ_DB_API_QUERY_H

#include <stdint.h>

struct fq_db;

/* Records that drain hint `id` was applied now (`fabriciq hints --apply`).
 * 0; -ENOENT if there is no such hint or it was already applied (by
 * someone else in the meantime); another negative errno on failure, with
 * fq_db_error(). */
int fq_db_hint_applied(struct fq_db *db, int64_t id);

#endif /* FQ_DB_API_QUERY_H */
