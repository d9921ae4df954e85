/*
 * db: the connection, error text and statement helpers every module of the
 * library uses (db/internal.h).
 */
#include "db/internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/migrations.h"

/* libpq's messages span lines (ERROR, DETAIL, CONTEXT) and end with a
 * newline; ours are single lines, for logs. */
static void one_line(char *s)
{
	size_t n = strlen(s);

	while (n && (s[n - 1] == '\n' || s[n - 1] == ' '))
		s[--n] = '\0';
	for (; *s; s++)
		if (*s == '\n')
			*s = ' ';
}

int fq_db_code_version(void)
{
	return (int)fq_db_nmigrations;
}

/* libpq prints notices (e.g. "relation exists, skipping") to stderr by
 * default; a library must not write to its host's stderr. */
static void ignore_notice(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

/* Pins what the library relies on, for this session: times are written as
 * UTC literals and strings checked as UTF-8, so neither may depend on the
 * server's or the user's defaults; and the statement timeout. Run again
 * after every reconnect (a reset session has lost its settings). */
static int session_setup(struct fq_db *db)
{
	char sql[160];
	PGresult *res;
	int rc;

	snprintf(sql, sizeof(sql), "set client_encoding = 'UTF8'; set timezone = 'UTC'");
	if (db->statement_timeout_ms > 0)
		snprintf(sql + strlen(sql), sizeof(sql) - strlen(sql), "; set statement_timeout = %d",
			 db->statement_timeout_ms);
	res = fq_db_run(db, "session setup", sql, NULL, &rc);
	PQclear(res);
	return rc;
}

int fq_db_connect(const struct fq_db_options *o, struct fq_db **out, char *err, size_t errlen)
{
	/* Ours first: a setting in the conninfo (expanded from "dbname")
	 * overrides it. */
	const char *keys[] = {"connect_timeout", "dbname", NULL};
	const char *vals[] = {NULL, o->conninfo ? o->conninfo : "", NULL};
	char timeout[16];
	struct fq_db *db;
	int rc;

	*out = NULL;
	db = calloc(1, sizeof(*db));
	if (!db) {
		if (err)
			snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	db->statement_timeout_ms = o->statement_timeout_ms > 0 ? o->statement_timeout_ms : 0;
	if (o->connect_timeout_s > 0) {
		snprintf(timeout, sizeof(timeout), "%d", o->connect_timeout_s);
		vals[0] = timeout;
	} else {
		keys[0] = "dbname";
		vals[0] = vals[1];
		keys[1] = vals[1] = NULL;
	}
	db->conn = PQconnectdbParams(keys, vals, 1);
	if (!db->conn || PQstatus(db->conn) != CONNECTION_OK) {
		if (err)
			snprintf(err, errlen, "cannot connect to PostgreSQL: %s",
				 db->conn ? PQerrorMessage(db->conn) : "out of memory");
		if (err)
			one_line(err);
		rc = db->conn ? -ECONNREFUSED : -ENOMEM;
		goto close_conn;
	}
	PQsetNoticeProcessor(db->conn, ignore_notice, NULL);
	if ((rc = session_setup(db)) < 0) {
		if (err)
			snprintf(err, errlen, "%s", db->err);
		goto close_conn;
	}
	*out = db;
	return 0;

close_conn:
	PQfinish(db->conn);
	free(db);
	return rc;
}

bool fq_db_broken(const struct fq_db *db)
{
	return PQstatus(db->conn) == CONNECTION_BAD;
}

int fq_db_set_statement_timeout(struct fq_db *db, int ms)
{
	char sql[64];

	db->statement_timeout_ms = ms > 0 ? ms : 0;
	snprintf(sql, sizeof(sql), "set statement_timeout = %d", db->statement_timeout_ms);
	return fq_db_exec(db, "setting the statement timeout", sql, NULL);
}

int fq_db_create(const char *conninfo, struct fq_db **out, char *err, size_t errlen)
{
	struct fq_db_options o = {.conninfo = conninfo};

	return fq_db_connect(&o, out, err, errlen);
}

void fq_db_destroy(struct fq_db *db)
{
	if (!db)
		return;
	for (int t = 0; t < FQ_DB_T_COUNT; t++)
		fq_buf_free(&db->copy[t].buf);
	fq_buf_free(&db->seq_nodes);
	fq_buf_free(&db->seq_values);
	for (int i = 0; i < 5; i++)
		fq_buf_free(&db->rn[i]);
	PQfinish(db->conn);
	free(db);
}

const char *fq_db_error(const struct fq_db *db)
{
	return db->err;
}

void fq_db_set_error(struct fq_db *db, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(db->err, sizeof(db->err), fmt, ap);
	va_end(ap);
	one_line(db->err);
}

void fq_db_set_result_error(struct fq_db *db, const char *what, const PGresult *res)
{
	const char *primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	const char *detail = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL) : NULL;
	const char *context = res ? PQresultErrorField(res, PG_DIAG_CONTEXT) : NULL;

	/* Without a server message (connection lost), libpq's own says why. */
	if (!primary) {
		fq_db_set_error(db, "%s: %s", what, PQerrorMessage(db->conn));
		return;
	}
	fq_db_set_error(db, "%s: %s%s%s%s", what, primary, detail ? " (" : "", detail ? detail : "",
			detail ? ")" : "");
	/* CONTEXT names the COPY line or the function: where it failed. */
	if (context) {
		size_t n = strlen(db->err);

		snprintf(db->err + n, sizeof(db->err) - n, " [%s]", context);
		one_line(db->err);
	}
}

int fq_db_errno_of(const PGresult *res, PGconn *conn)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

	if (PQstatus(conn) == CONNECTION_BAD)
		return -ECONNRESET;
	if (!state)
		return -EIO;
	if (!strcmp(state, "23503")) /* foreign_key_violation: the row it refers to is missing */
		return -ENOENT;
	if (!strcmp(state, "23505")) /* unique_violation */
		return -EEXIST;
	if (!strncmp(state, "22", 2) || !strncmp(state, "23", 2)) /* data exception, other constraints */
		return -EINVAL;
	if (!strcmp(state, "40001") || !strcmp(state, "40P01")) /* serialization failure, deadlock */
		return -EAGAIN;
	if (!strncmp(state, "53", 2)) /* insufficient resources (disk full, out of memory) */
		return -ENOSPC;
	if (!strcmp(state, "57014")) /* query_canceled (statement_timeout) */
		return -ETIMEDOUT;
	if (!strncmp(state, "08", 2) || !strncmp(state, "57P", 3)) /* connection exception, shutdown */
		return -ECONNRESET;
	if (!strcmp(state, "42501")) /* insufficient_privilege */
		return -EACCES;
	return -EIO;
}

PGresult *fq_db_run(struct fq_db *db, const char *what, const char *sql, const struct fq_db_params *p,
		    int *rc)
{
	PGresult *res;
	ExecStatusType st;

	/* A server restart leaves the connection bad; one reset brings it
	 * back when the server is up again, and costs nothing otherwise. */
	if (PQstatus(db->conn) == CONNECTION_BAD) {
		PQreset(db->conn);
		if (PQstatus(db->conn) == CONNECTION_OK)
			session_setup(db); /* a failure shows in the statement below */
	}
	if (p)
		res = PQexecParams(db->conn, sql, p->n, NULL, p->v, NULL, NULL, 0);
	else
		res = PQexec(db->conn, sql);
	st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
		*rc = 0;
		return res;
	}
	*rc = fq_db_errno_of(res, db->conn);
	fq_db_set_result_error(db, what, res);
	PQclear(res);
	return NULL;
}

int fq_db_exec(struct fq_db *db, const char *what, const char *sql, const struct fq_db_params *p)
{
	int rc;
	PGresult *res = fq_db_run(db, what, sql, p, &rc);

	PQclear(res);
	return rc;
}

static char *param_slot(struct fq_db_params *p)
{
	/* Callers use a fixed number of parameters per statement; running
	 * past the table is a programming error caught by every test. */
	if (p->n >= FQ_DB_MAX_PARAMS)
		abort();
	return p->num[p->n];
}

void fq_db_param_str(struct fq_db_params *p, const char *s)
{
	param_slot(p);
	p->v[p->n++] = s;
}

void fq_db_param_i64(struct fq_db_params *p, int64_t v)
{
	char *slot = param_slot(p);

	snprintf(slot, FQ_TS_LEN, "%" PRId64, v);
	p->v[p->n++] = slot;
}

void fq_db_param_u64(struct fq_db_params *p, uint64_t v)
{
	char *slot = param_slot(p);

	snprintf(slot, FQ_TS_LEN, "%" PRIu64, v);
	p->v[p->n++] = slot;
}

void fq_db_param_bool(struct fq_db_params *p, bool v)
{
	param_slot(p);
	p->v[p->n++] = v ? "t" : "f";
}

void fq_db_param_ts(struct fq_db_params *p, int64_t ns)
{
	char *slot = param_slot(p);

	fq_ts_format(ns, slot);
	p->v[p->n++] = slot;
}

void fq_db_param_ts_or_null(struct fq_db_params *p, int64_t ns)
{
	if (ns)
		fq_db_param_ts(p, ns);
	else
		fq_db_param_str(p, NULL);
}
