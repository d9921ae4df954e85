/*
 * copy_prof: the COPY writers of the NCCL profiler plugin's tables
 * (sql/015_profiler.sql), binary like lane_windows: they are bulk.
 */
#include "db/internal.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>

static int need_str(struct fq_db *db, const char *table, size_t i, const char *field, const char *s)
{
	if (!s) {
		fq_db_set_error(db, "%s row %zu: %s is missing", table, i, field);
		return -EINVAL;
	}
	if (!fq_utf8_valid(s)) {
		fq_db_set_error(db, "%s row %zu: %s is not valid UTF-8", table, i, field);
		return -EILSEQ;
	}
	return 0;
}

static int check_window(struct fq_db *db, const void *row, size_t i)
{
	const struct fq_db_profiler_window *r = row;
	const char *t = "profiler_windows";
	int rc;

	if ((rc = need_str(db, t, i, "node", r->node)) || (rc = need_str(db, t, i, "kind", r->kind)))
		return rc;
	if (r->count > INT64_MAX || r->bytes > INT64_MAX || r->rank > INT32_MAX || r->job_id > INT64_MAX) {
		fq_db_set_error(db, "%s row %zu: a value is out of range", t, i);
		return -EINVAL;
	}
	return 0;
}

/* In the column order of copy.c's tables[FQ_DB_T_PROFILER_WINDOWS]. */
static int encode_window(struct fq_buf *b, const void *row)
{
	const struct fq_db_profiler_window *r = row;
	int rc = 0;

	rc |= fq_bin_row(b, 16);
	rc |= fq_bin_ts(b, r->interval_start_ns);
	rc |= fq_bin_ts(b, r->interval_end_ns);
	rc |= fq_bin_i64(b, (int64_t)r->job_id);
	rc |= fq_bin_i64(b, r->step_id);
	rc |= fq_bin_i32(b, (int32_t)r->rank);
	rc |= fq_bin_str(b, r->node);
	rc |= fq_bin_i64(b, (int64_t)r->comm_hash);
	rc |= fq_bin_str(b, r->kind);
	rc |= fq_bin_i32(b, r->device);
	rc |= fq_bin_i32(b, r->sub);
	rc |= fq_bin_i64(b, r->id);
	rc |= fq_bin_i64(b, (int64_t)r->count);
	rc |= fq_bin_i64(b, (int64_t)r->bytes);
	rc |= fq_bin_i64(b, r->mean_ns);
	rc |= fq_bin_i64(b, r->max_ns);
	rc |= fq_bin_bool(b, r->synchronised);
	return rc ? -ENOMEM : 0;
}

static int check_op(struct fq_db *db, const void *row, size_t i)
{
	const struct fq_db_profiler_op *r = row;
	const char *t = "profiler_ops";
	int rc;

	if ((rc = need_str(db, t, i, "node", r->node)) || (rc = need_str(db, t, i, "func", r->func)) ||
	    (rc = need_str(db, t, i, "algo", r->algo)) || (rc = need_str(db, t, i, "proto", r->proto)))
		return rc;
	if (r->bytes > INT64_MAX || r->rank > INT32_MAX || r->nranks > INT32_MAX || r->job_id > INT64_MAX ||
	    !isfinite(r->algbw_gbs) || r->algbw_gbs < 0) {
		fq_db_set_error(db, "%s row %zu: a value is out of range", t, i);
		return -EINVAL;
	}
	return 0;
}

static int encode_op(struct fq_buf *b, const void *row)
{
	const struct fq_db_profiler_op *r = row;
	int rc = 0;

	rc |= fq_bin_row(b, 17);
	rc |= fq_bin_ts(b, r->start_ns);
	rc |= fq_bin_ts(b, r->end_ns);
	rc |= fq_bin_i64(b, (int64_t)r->job_id);
	rc |= fq_bin_i64(b, r->step_id);
	rc |= fq_bin_i32(b, (int32_t)r->rank);
	rc |= fq_bin_str(b, r->node);
	rc |= fq_bin_i64(b, (int64_t)r->comm_hash);
	rc |= fq_bin_i32(b, (int32_t)r->nranks);
	rc |= fq_bin_i64(b, (int64_t)r->seq);
	rc |= fq_bin_str(b, r->func);
	rc |= fq_bin_str(b, r->algo);
	rc |= fq_bin_str(b, r->proto);
	rc |= fq_bin_bool(b, r->p2p);
	rc |= fq_bin_i32(b, r->peer);
	rc |= fq_bin_i64(b, (int64_t)r->bytes);
	rc |= fq_bin_f64(b, r->algbw_gbs);
	rc |= fq_bin_bool(b, r->synchronised);
	return rc ? -ENOMEM : 0;
}

int fq_db_add_profiler_windows(struct fq_db *db, const struct fq_db_profiler_window *rows, size_t n)
{
	return fq_db_add_rows(db, FQ_DB_T_PROFILER_WINDOWS, rows, sizeof(*rows), n, check_window,
			      encode_window);
}

int fq_db_add_profiler_ops(struct fq_db *db, const struct fq_db_profiler_op *rows, size_t n)
{
	return fq_db_add_rows(db, FQ_DB_T_PROFILER_OPS, rows, sizeof(*rows), n, check_op, encode_op);
}
