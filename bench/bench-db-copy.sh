#!/usr/bin/env bash
# bench-db-copy: lane windows/s written through the db library's COPY
# writer (tests/db/bench-db-writer, batches of BATCH rows, as the
# controller flushes) vs psql's \copy of the very same rows from a file
# (the baseline: PostgreSQL's own COPY client, no encoding work), on the
# same private server in the same run. Each side runs twice, alternating;
# the best of each is compared. Prints both rates and the ratio.
# ROWS / BATCH override the defaults (300000 / 5000).
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
if [ -z "${FQ_TEST_PG:-}" ]; then
	exec "$top_srcdir/tests/db/with-postgres.sh" "$0" "$@"
fi
rows=${ROWS:-300000}
batch=${BATCH:-5000}
tool=$top_builddir/db/fabriciq-db
writer=$top_builddir/tests/db/bench-db-writer
for b in "$tool" "$writer"; do
	[ -x "$b" ] || { echo "bench-db-copy: $b not built (make check)"; exit 1; }
done
q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
cols="interval_start, interval_end, job_id, step_id, src_rank, dst_rank, lane, lane_kind, src_node, src_nic,
      dst_node, dst_nic, bytes, chunks, messages, owd_min_ns, owd_p50_ns, owd_p99_ns, owd_max_ns, tcp_rtt_us,
      tcp_retrans, tcp_ce, synchronised"
cols=$(echo $cols)
data=$PGHOST/lane_windows.copy

"$tool" migrate >/dev/null || { echo "bench-db-copy: migrate failed"; exit 1; }
reset() { q -c "truncate fabriciq.lane_windows" && q -c "checkpoint"; }

lib_best=0
psql_best=0
for round in 1 2; do
	reset
	out=$("$writer" "$rows" "$batch") || { echo "bench-db-copy: writer failed: $out"; exit 1; }
	rate=${out##* }
	echo "round $round: library COPY writer: $out (rows seconds rows/s)"
	[ "$rate" -gt "$lib_best" ] && lib_best=$rate
	# The baseline loads exactly the rows the library wrote.
	[ -f "$data" ] || q -c "\\copy (select $cols from fabriciq.lane_windows) to '$data'"
	n=$(q -c "select count(*) from fabriciq.lane_windows")
	[ "$n" -eq "$rows" ] || { echo "bench-db-copy: $n rows stored, $rows written"; exit 1; }

	reset
	t0=$(date +%s%N)
	q -c "\\copy fabriciq.lane_windows ($cols) from '$data'" || { echo "bench-db-copy: psql \\copy failed"; exit 1; }
	t1=$(date +%s%N)
	rate=$(( rows * 1000000000 / (t1 - t0) ))
	printf 'round %d: psql \\copy baseline: %d %d.%03d %d (rows seconds rows/s)\n' "$round" "$rows" \
		$(( (t1 - t0) / 1000000000 )) $(( (t1 - t0) / 1000000 % 1000 )) "$rate"
	[ "$rate" -gt "$psql_best" ] && psql_best=$rate
done
echo "lane_windows via db library: $lib_best rows/s (batches of $batch)"
echo "lane_windows via psql \\copy: $psql_best rows/s (baseline)"
awk -v a="$lib_best" -v b="$psql_best" 'BEGIN { printf "ratio library / psql \\copy: %.2f\n", a / b }'
