/*
 * api_query: the few writes the `fabriciq` CLI makes besides migrations
 * (the controller's API is read-only), and how the controller learns of
 * them. Part of libfqapiquery; uses libfqdb's connection and error
 * conventions (db/db.h).
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

/* For every node with an applied hint, the last one applied: fn(arg, node,
 * resume, reason). The controller learns from it which nodes fabriciq
 * drained (and with which reason), so it can later hint to resume them.
 * 0 or a negative errno with fq_db_error(). */
int fq_db_applied_hints(struct fq_db *db,
			void (*fn)(void *arg, const char *node, int resume, const char *reason), void *arg);

#endif /* FQ_DB_API_QUERY_H */
