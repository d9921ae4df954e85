/*
 * query: what the CLI reads back (the views of sql/003_views.sql).
 */
#include "db/internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double num_or_nan(const PGresult *res, int row, int col)
{
	return PQgetisnull(res, row, col) ? NAN : strtod(PQgetvalue(res, row, col), NULL);
}

static int64_t i64_or_zero(const PGresult *res, int row, int col)
{
	return PQgetisnull(res, row, col) ? 0 : strtoll(PQgetvalue(res, row, col), NULL, 10);
}

/* Fills row i of `out` from result row i (columns as selected below). */
static void read_efficiency(const PGresult *res, int i, struct fq_db_job_efficiency *e)
{
	e->job_id = strtoull(PQgetvalue(res, i, 0), NULL, 10);
	e->step_id = (uint32_t)strtoul(PQgetvalue(res, i, 1), NULL, 10);
	e->first_interval_ns = i64_or_zero(res, i, 2) * 1000;
	e->last_interval_ns = i64_or_zero(res, i, 3) * 1000;
	e->lanes = (uint32_t)i64_or_zero(res, i, 4);
	e->bytes = (uint64_t)i64_or_zero(res, i, 5);
	e->achieved_gbps = num_or_nan(res, i, 6);
	e->best_gbps = num_or_nan(res, i, 7);
	e->efficiency = num_or_nan(res, i, 8);
	e->degraded_share = num_or_nan(res, i, 9);
	e->median_lane_p99_us = num_or_nan(res, i, 10);
	e->slowest_lane_p99_us = num_or_nan(res, i, 11);
	for (int k = 0; k < 3; k++)
		snprintf(e->slowest_lanes[k], sizeof(e->slowest_lanes[k]), "%s", PQgetvalue(res, i, 12 + k));
	e->anomalies = (uint32_t)i64_or_zero(res, i, 15);
	e->failovers = (uint32_t)i64_or_zero(res, i, 16);
}

int fq_db_job_efficiency(struct fq_db *db, uint64_t job_id, struct fq_db_job_efficiency **rows, size_t *n)
{
	struct fq_db_params p = {0};
	struct fq_db_job_efficiency *out;
	PGresult *res;
	int rc, count;

	*rows = NULL;
	*n = 0;
	fq_db_param_u64(&p, job_id);
	/* Arrays are read element by element: no parsing of array literals. */
	res = fq_db_run(db, "reading job_efficiency",
			"select job_id, step_id, (extract(epoch from first_interval) * 1000000)::int8, "
			"(extract(epoch from last_interval) * 1000000)::int8, lanes, bytes, achieved_gbps, "
			"best_gbps, efficiency, degraded_share, median_lane_p99_us, slowest_lane_p99_us, "
			"coalesce(slowest_lanes[1], ''), coalesce(slowest_lanes[2], ''), "
			"coalesce(slowest_lanes[3], ''), anomalies, failovers "
			"from fabriciq.job_efficiency where job_id = $1 order by step_id",
			&p, &rc);
	if (!res)
		return rc;
	count = PQntuples(res);
	out = calloc(count ? (size_t)count : 1, sizeof(*out));
	if (!out) {
		PQclear(res);
		fq_db_set_error(db, "reading job_efficiency: out of memory");
		return -ENOMEM;
	}
	for (int i = 0; i < count; i++)
		read_efficiency(res, i, &out[i]);
	PQclear(res);
	*rows = out;
	*n = (size_t)count;
	return 0;
}
