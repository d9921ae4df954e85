#!/usr/bin/env bash
# test-ctl-pgdown: PostgreSQL stopped for 30 s (FQ_PGDOWN_S) while agents
# report: frames go to the spool and are acknowledged, the spool is
# replayed when PostgreSQL is back, and every frame is stored exactly once
# (counted by seq).
[ -n "${FQ_TEST_PG:-}" ] || exec "$(dirname "$0")/../db/with-postgres.sh" "$0" "$@"
. "$(dirname "$0")/ctl-lib.sh"

down_s=${FQ_PGDOWN_S:-30}
# shellcheck disable=SC2086 # FQ_TEST_PG_CTL (with-postgres.sh) is a command and its words
pg() { $FQ_TEST_PG_CTL "$@" >/dev/null 2>&1; }
munge_up || skip_all "private munged did not start"
plan 8
ctl_up; ok $? "controller starts"

agents=20 dur=$((down_s + 15))
sim --agents $agents --prefix pd --duration $dur --probes 3 --lanes 1 --drain 30 >"$T/sim.out" 2>&1 &
sim_pid=$!
sleep 5
pg -m fast -w stop; ok $? "PostgreSQL stopped under ingest"
sleep 3
m=$(curl -s "http://127.0.0.1:$HTTP_PORT/metrics")
spooled=$(echo "$m" | awk '/^fabriciq_spool_bytes /{print $2}')
sleep $((down_s - 3))
pg -l "$PGHOST/server.restart.log" -w -t 60 start \
	-o "-c listen_addresses='' -c unix_socket_directories='$PGHOST' -c port=5432 -c fsync=off -c synchronous_commit=off"
ok $? "PostgreSQL back after ${down_s} s"
[ "${spooled%.*}" -gt 0 ] 2>/dev/null; ok $? "frames went to the spool meanwhile ($spooled bytes)"
wait $sim_pid; rc=$?
out=$(cat "$T/sim.out")
ok $rc "every frame acknowledged ($out)"
sleep 2
# Each agent sent seqs 1..N; seq % 5 < 3 are probe windows (fq-agentsim's cycle).
sent=$(echo "$out" | sed -n 's/.* sent=\([0-9]*\).*/\1/p')
per=$((sent / agents))
want=$(python3 -c "print($agents * sum(1 for s in range(1, $per + 1) if s % 5 < 3))")
got=$(q "select count(distinct (src_node, agent_seq)) from fabriciq.probe_windows where src_node like 'pd%'")
is "$got" "$want" "every probe window stored ($got of $want, by seq)"
is "$(q "select count(*) - count(distinct (src_node, agent_seq)) from fabriciq.probe_windows where src_node like 'pd%'")" 0 \
	"none stored twice"
sleep 1
curl -s "http://127.0.0.1:$HTTP_PORT/metrics" | grep -q '^fabriciq_spool_bytes 0$'
ok $? "spool replayed and empty; $(grep -c 'database is back\|spool replayed' "$CTL_LOG") recovery lines logged"
done_testing
