#!/usr/bin/env bash
# test-ctl-slowdb: PostgreSQL alive but not answering: another session holds
# the telemetry tables in access exclusive mode for FQ_LOCK_S seconds
# (default 20) while agents report. The controller's statement timeout
# cancels the blocked COPY, frames go to the spool and the agents keep
# being acknowledged from it; when the lock is gone the spool is replayed
# and every frame is stored exactly once (counted by seq).
[ -n "${FQ_TEST_PG:-}" ] || exec "$(dirname "$0")/../db/with-postgres.sh" "$0" "$@"
. "$(dirname "$0")/ctl-lib.sh"

lock_s=${FQ_LOCK_S:-20}
munge_up || skip_all "private munged did not start"
plan 9
ctl_up; ok $? "controller starts"
metric() { curl -s "http://127.0.0.1:$HTTP_PORT/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }

agents=10 dur=$((lock_s + 12))
sim --agents $agents --prefix sl --duration $dur --tick 0.2 --probes 3 --lanes 1 --drain 30 >"$T/sim.out" 2>&1 &
sim_pid=$!
sleep 4
psql -X -q -v ON_ERROR_STOP=1 >"$T/lock.out" 2>&1 <<SQL &
begin;
lock table fabriciq.probe_windows, fabriciq.lane_windows, fabriciq.clock_estimates in access exclusive mode;
select pg_sleep($lock_s);
commit;
SQL
lock_pid=$!
sleep 4
s0=$(metric fabriciq_spool_frames_total)
[ "${s0%.*}" -gt 0 ] 2>/dev/null; ok $? "under the lock, frames go to the spool ($s0 so far)"
sleep $((lock_s - 8))
s1=$(metric fabriciq_spool_frames_total)
kill -0 $lock_pid 2>/dev/null; ok $? "the lock is still held"
# 10 agents x 5 frames / 0.2 s = 250 frames/s offered; a stalled event loop
# would neither take nor spool them.
rate=$(awk -v a="${s0:-0}" -v b="${s1:-0}" -v t=$((lock_s - 8)) 'BEGIN { printf "%d", (b - a) / t }')
[ "$rate" -gt 150 ]; ok $? "frames kept being taken and spooled under the lock: $rate frames/s (of 250 offered)"
wait $lock_pid; ok $? "the lock's holder committed after ${lock_s} s"
wait $sim_pid; rc=$?
out=$(cat "$T/sim.out")
ok $rc "every frame acknowledged ($out)"
sleep 2
sent=$(echo "$out" | sed -n 's/.* sent=\([0-9]*\).*/\1/p')
per=$((sent / agents))
want=$(python3 -c "print($agents * sum(1 for s in range(1, $per + 1) if s % 5 < 3))")
got=$(q "select count(distinct (src_node, agent_seq)) from fabriciq.probe_windows where src_node like 'sl%'")
is "$got" "$want" "every probe window stored ($got of $want, by seq)"
is "$(q "select count(*) - count(distinct (src_node, agent_seq)) from fabriciq.probe_windows where src_node like 'sl%'")" 0 \
	"none stored twice"
is "$(metric fabriciq_spool_bytes)" 0 "spool replayed and empty ($(grep -c 'database is back' "$CTL_LOG") recoveries logged)"
done_testing
