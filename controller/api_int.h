/*
 * api_int: what the JSON API's endpoint files (api.c: the fabric, hints
 * and dispatch; api_jobs.c: the job endpoints) share: the reply being
 * built, its errors, and the one-statement-one-JSON-value helpers.
 */
#ifndef FQ_CONTROLLER_API_INT_H
#define FQ_CONTROLLER_API_INT_H

#include <stdint.h>

struct fq_api_params;
struct fq_db;
struct fq_db_params;
struct json_object;

/* A time column as two JSON keys: NAME (RFC 3339) and NAME_ns. */
#define TS(expr, name)                                                                                       \
	expr " as \"" name "\", (extract(epoch from " expr ") * 1000000)::int8 * 1000 as \"" name "_ns\""
/* The same as json_build_object arguments. */
#define TSJ(expr, name)                                                                                      \
	"'" name "', " expr ", '" name "_ns', (extract(epoch from " expr ") * 1000000)::int8 * 1000"

/* The reply being built: its status and body. */
struct reply {
	int status;
	struct json_object *body;
};

/* rp becomes {"error": message} with status; returns status. */
int api_fail(struct reply *rp, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A failed statement: the database is down or failing (503), with its words. */
int api_db_fail(struct reply *rp, struct fq_db *db);
/* Runs sql, whose result is one row of one JSON value, into *out. 1: no
 * row or a NULL value (*out NULL); 0: parsed; < 0: database error. */
int api_query_json(struct fq_db *db, const char *what, const char *sql, const struct fq_db_params *p,
		   struct json_object **out);
/* /api/v1/incidents and /api/v1/incidents/ID (api_incidents.c). */
int api_get_incidents(struct reply *rp, struct fq_db *db, struct fq_api_params *r);
int api_get_incident(struct reply *rp, struct fq_db *db, struct fq_api_params *r, const char *id);
/* /api/v1/topology (api_topology.c). */
int api_get_topology(struct reply *rp, struct fq_db *db, struct fq_api_params *r);
/* api_query_json into reply section `key` of obj; a NULL value becomes JSON
 * null. Returns 0 or fills rp with a 503. */
int api_add_section(struct reply *rp, struct fq_db *db, struct json_object *obj, const char *key,
		    const char *what, const char *sql, const struct fq_db_params *p);
/* A list endpoint fetched limit + 1 rows: keep `limit`, say if more exist. */
void api_trim_to_limit(struct json_object *obj, const char *key, uint64_t limit);

/* api_jobs.c: /api/v1/jobs, /api/v1/jobs/JOB[.STEP] (id: the part after
 * jobs/) and /api/v1/jobs/JOB.STEP/summary (id: JOB.STEP). */
int api_get_jobs(struct reply *rp, struct fq_db *db, struct fq_api_params *r);
int api_get_job(struct reply *rp, struct fq_db *db, struct fq_api_params *r, const char *id);
int api_get_step_summary(struct reply *rp, struct fq_db *db, struct fq_api_params *r, const char *id);

#endif /* FQ_CONTROLLER_API_INT_H */
