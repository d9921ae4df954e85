/*
 * internal: what the db library's modules share (not installed, not the
 * contract: that is db.h). The connection, the COPY buffers, and helpers
 * that run a statement and turn libpq's failure into errno + words.
 */
#ifndef FQ_DB_INTERNAL_H
#define FQ_DB_INTERNAL_H

#include <libpq-fe.h>

#include "db/db.h"
#include "db/encode.h"

/* The COPY targets, in the order a flush writes them. */
enum fq_db_table {
	FQ_DB_T_PROBE_WINDOWS,
	FQ_DB_T_LANE_WINDOWS,
	FQ_DB_T_CLOCK_ESTIMATES,
	FQ_DB_T_LINK_EVENTS,
	FQ_DB_T_FAILOVER_EVENTS,
	FQ_DB_T_PROFILER_WINDOWS,
	FQ_DB_T_PROFILER_OPS,
	FQ_DB_T_COUNT
};

struct fq_db_copy_buf {
	struct fq_buf buf;
	size_t rows;
};

struct fq_db {
	PGconn *conn;
	char err[1024];
	struct fq_db_copy_buf copy[FQ_DB_T_COUNT];
	/* fq_db_add_agent_seq: array literals' elements ("node",... / n,...) */
	struct fq_buf seq_nodes, seq_values;
	size_t nseqs;
	/* fq_db_add_rank_nic: array literals of job, step, rank, node, nic */
	struct fq_buf rn[5];
	size_t nrank_nics;
	int statement_timeout_ms; /* 0: none */
};

/* Up to this many parameters per statement. */
#define FQ_DB_MAX_PARAMS 16

/* Text parameters for PQexecParams; numbers are formatted into num[]. */
struct fq_db_params {
	int n;
	const char *v[FQ_DB_MAX_PARAMS];
	char num[FQ_DB_MAX_PARAMS][FQ_TS_LEN];
};

void fq_db_param_str(struct fq_db_params *p, const char *s); /* NULL -> SQL NULL */
void fq_db_param_i64(struct fq_db_params *p, int64_t v);
void fq_db_param_u64(struct fq_db_params *p, uint64_t v);
void fq_db_param_bool(struct fq_db_params *p, bool v);
void fq_db_param_ts(struct fq_db_params *p, int64_t ns);
void fq_db_param_ts_or_null(struct fq_db_params *p, int64_t ns); /* 0 -> NULL */

void fq_db_set_error(struct fq_db *db, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "WHAT: primary message (detail) [context]" from a failed result (NULL:
 * the connection's message). */
void fq_db_set_result_error(struct fq_db *db, const char *what, const PGresult *res);

/*
 * Runs sql (with params, or none if p is NULL) and checks the result
 * status: PGRES_COMMAND_OK or PGRES_TUPLES_OK. On success returns the
 * result (the caller PQclear()s it) and *rc = 0; on failure NULL, *rc a
 * negative errno derived from the SQLSTATE, and the error set to
 * "WHAT: <PostgreSQL's message>". Reconnects once first if the connection
 * was lost.
 */
PGresult *fq_db_run(struct fq_db *db, const char *what, const char *sql, const struct fq_db_params *p,
		    int *rc);
/* fq_db_run for statements whose result is not needed. */
int fq_db_exec(struct fq_db *db, const char *what, const char *sql, const struct fq_db_params *p);

/* Errno for a failed result (SQLSTATE class), or for a lost connection. */
int fq_db_errno_of(const PGresult *res, PGconn *conn);

/* copy.c's batched writer, for the writers of other files (copy_prof.c):
 * check then encode each of n rows of size bytes into table t's buffer.
 * 0, or the first checker's or encoder's error (nothing of the call kept). */
typedef int (*fq_db_check_fn)(struct fq_db *db, const void *row, size_t i);
typedef int (*fq_db_encode_fn)(struct fq_buf *b, const void *row);
int fq_db_add_rows(struct fq_db *db, enum fq_db_table t, const void *rows, size_t size, size_t n,
		   fq_db_check_fn check, fq_db_encode_fn encode);

#endif /* FQ_DB_INTERNAL_H */
