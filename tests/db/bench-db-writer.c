/*
 * bench-db-writer ROWS BATCH: writes ROWS synthetic lane windows through
 * the db library's COPY writer (fq_db_add_lane_windows + fq_db_flush every
 * BATCH rows), as the controller does, and prints "rows seconds rows/s".
 * Connects with the PG* environment. Used by bench/bench-db-copy.sh.
 */
#include "common/clock.h"
#include "db/db.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	static const char *const nodes[] = {"gpu-node-001", "gpu-node-002", "gpu-node-003", "gpu-node-004"};
	static const char *const nics[] = {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"};
	struct fq_db_lane_window *rows;
	struct timespec now;
	struct fq_db *db;
	char err[512];
	long total, batch;
	int64_t t0, start;

	if (argc != 3 || (total = atol(argv[1])) <= 0 || (batch = atol(argv[2])) <= 0) {
		fprintf(stderr, "usage: bench-db-writer ROWS BATCH\n");
		return 2;
	}
	rows = calloc((size_t)batch, sizeof(*rows));
	if (!rows || fq_db_create(NULL, &db, err, sizeof(err))) {
		fprintf(stderr, "bench-db-writer: %s\n", rows ? err : "out of memory");
		return 1;
	}
	/* Rows in the last hour: today's partition, as in production. */
	clock_gettime(CLOCK_REALTIME, &now);
	t0 = ((int64_t)now.tv_sec - 3600) * 1000000000;
	start = fq_clock_ns(CLOCK_MONOTONIC);
	for (long done = 0; done < total;) {
		long n = total - done < batch ? total - done : batch;

		for (long i = 0; i < n; i++) {
			long k = done + i;

			rows[i] = (struct fq_db_lane_window){
			    .interval_start_ns = t0 + (k / 64) * 100000000, /* 64 lanes per 100 ms interval */
			    .interval_end_ns = t0 + (k / 64 + 1) * 100000000,
			    .job_id = 4242,
			    .step_id = 0,
			    .src_rank = (uint32_t)(k % 8),
			    .dst_rank = (uint32_t)((k / 8) % 8),
			    .lane = (uint32_t)(k % 4),
			    .lane_kind = "tcp",
			    .src_node = nodes[k % 4],
			    .src_nic = nics[(k / 4) % 4],
			    .dst_node = nodes[(k + 1) % 4],
			    .dst_nic = nics[(k / 16) % 4],
			    .bytes = 123456789 + (uint64_t)k,
			    .chunks = 1024,
			    .messages = 64,
			    .owd_min_ns = 2100,
			    .owd_p50_ns = 3500 + k % 100,
			    .owd_p99_ns = 4000 + k % 1000,
			    .owd_max_ns = 9000,
			    .tcp_rtt_us = 40,
			    .tcp_retrans = (uint32_t)(k % 3),
			    .tcp_ce = 0,
			    .synchronised = true,
			};
		}
		if (fq_db_add_lane_windows(db, rows, (size_t)n) || fq_db_flush(db) != n) {
			fprintf(stderr, "bench-db-writer: %s\n", fq_db_error(db));
			return 1;
		}
		done += n;
	}
	double secs = (double)(fq_clock_ns(CLOCK_MONOTONIC) - start) / 1e9;
	printf("%ld %.3f %.0f\n", total, secs, (double)total / secs);
	fq_db_destroy(db);
	free(rows);
	return 0;
}
