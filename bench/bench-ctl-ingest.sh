#!/usr/bin/env bash
# bench-ctl-ingest: lane samples/s through the controller (fq-agentsim's
# agents authenticate with munge and send LaneReport frames as fast as the
# acks come back; the time is from the first frame to the last ack, so every
# row is committed) vs psql's \copy of the very same rows (dumped from the
# table afterwards) on the same private PostgreSQL in the same run. Prints
# both rates and the ratio (goal >= 0.7). AGENTS / LANES override the
# defaults (20 agents x 10000 lane frames).
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
if [ -z "${FQ_TEST_PG:-}" ]; then
	exec "$top_srcdir/tests/db/with-postgres.sh" "$0" "$@"
fi
. "$top_srcdir/tests/controller/ctl-lib.sh"
agents=${AGENTS:-20}
lanes=${LANES:-10000}
munge_up || { echo "bench-ctl-ingest: munged did not start"; exit 1; }
ctl_up || { echo "bench-ctl-ingest: controller did not start"; exit 1; }
cols="interval_start, interval_end, job_id, step_id, src_rank, dst_rank, lane, lane_kind, src_node, src_nic,
      dst_node, dst_nic, bytes, chunks, messages, owd_min_ns, owd_p50_ns, owd_p99_ns, owd_max_ns, tcp_rtt_us,
      tcp_retrans, tcp_ce, synchronised"
cols=$(echo $cols)
data=$T/lanes.copy

out=$(sim --agents "$agents" --burst "$lanes" --drain 120) || { echo "bench-ctl-ingest: not all acked: $out"; exit 1; }
secs=$(echo "$out" | sed -n 's/^burst: \([0-9.]*\) s/\1/p')
rows=$(q "select count(*) from fabriciq.lane_windows")
want=$((agents * lanes))
[ "$rows" -eq "$want" ] || { echo "bench-ctl-ingest: $rows rows stored, $want sent"; exit 1; }
ctl_rate=$(awk -v r="$rows" -v s="$secs" 'BEGIN { printf "%d", r / s }')
echo "controller: $rows lane samples from $agents agents in $secs s: $ctl_rate rows/s"
ctl_down

q "\\copy (select $cols from fabriciq.lane_windows) to '$data'" >/dev/null
chown postgres: "$data" 2>/dev/null
q "truncate fabriciq.lane_windows" >/dev/null
q "checkpoint" >/dev/null
t0=$(date +%s%N)
q "\\copy fabriciq.lane_windows ($cols) from '$data'" >/dev/null || { echo "bench-ctl-ingest: psql \\copy failed"; exit 1; }
t1=$(date +%s%N)
psql_rate=$(( rows * 1000000000 / (t1 - t0) ))
echo "psql \\copy of the same rows: $psql_rate rows/s (baseline)"
awk -v a="$ctl_rate" -v b="$psql_rate" 'BEGIN { printf "ratio controller / psql \\copy: %.2f (goal >= 0.7)\n", a / b }'
