#!/usr/bin/env bash
# test-ctl-crash: the controller killed with SIGKILL while agents report
# (FQ_CRASH_KILLS times, default 10), restarted each time on the same port:
# at random times, and (every other restart) by itself right after the
# Nth committed flush, before that flush's acks go out
# (FQ_INGEST_TEST_KILL_AFTER_FLUSHES), the point where a seq stored apart
# from its rows would let the agents' resends be stored twice. Each simulated agent reconnects as the real one does: its
# hello says the first seq it holds unacknowledged and it resends from
# there (fq-agentsim's frames are a function of (agent, seq), so a resent
# frame is the same frame). In the end every seq of every agent is stored
# exactly once: agent_seq is committed in the transaction of the rows.
[ -n "${FQ_TEST_PG:-}" ] || exec "$(dirname "$0")/../db/with-postgres.sh" "$0" "$@"
. "$(dirname "$0")/ctl-lib.sh"

kills=${FQ_CRASH_KILLS:-10}
nagents=4
munge_up || skip_all "private munged did not start"
plan $((kills + 8))
ctl_up; ok $? "controller starts"
# Restarts reuse the ports.
CTL_KEEP_PORTS=1

# One agent: runs of fq-agentsim, each starting at the first unacked seq.
agent_loop() {
	local name=$1 s=1 out acked rc
	while [ ! -e "$T/stop" ]; do
		out=$(sim --agents 1 --prefix "$name" --start-seq $s --duration 3 --tick 0.02 --probes 3 --lanes 1 --drain 1 2>&1)
		acked=$(echo "$out" | sed -n 's/.* acked=\([0-9]*\).*/\1/p')
		s=$((s + ${acked:-0}))
		[ "${acked:-0}" -gt 0 ] || sleep 0.2
	done
	for _ in $(seq 30); do
		out=$(sim --agents 1 --prefix "$name" --start-seq $s --duration 1 --tick 0.02 --probes 3 --lanes 1 --drain 10 2>&1)
		rc=$?
		acked=$(echo "$out" | sed -n 's/.* acked=\([0-9]*\).*/\1/p')
		s=$((s + ${acked:-0}))
		[ $rc -eq 0 ] && break
		sleep 0.3
	done
	echo "$rc $((s - 1))" >"$T/last.$name"
}
pids=
for a in $(seq $nagents); do
	agent_loop "cr$a-" &
	pids="$pids $!"
done
sleep 1.5 # every agent past its first acknowledged batch (see count_restarted)
self_kills=0
for k in $(seq "$kills"); do
	if [ $((k % 2)) -eq 0 ]; then
		# armed at the last restart: wait for it to kill itself
		for _ in $(seq 50); do kill -0 "$CTL_PID" 2>/dev/null || break; sleep 0.1; done
	else
		sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", 0.3 + r / 32768 * 2 }')"
	fi
	kill -0 "$CTL_PID" 2>/dev/null || self_kills=$((self_kills + 1))
	kill -9 "$CTL_PID" 2>/dev/null; wait "$CTL_PID" 2>/dev/null; CTL_PID=
	sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", r / 32768 * 0.5 }')"
	if [ $((k % 2)) -eq 1 ] && [ "$k" -lt "$kills" ]; then
		FQ_INGEST_TEST_KILL_AFTER_FLUSHES=$((RANDOM % 5 + 1)) ctl_up
	else
		ctl_up
	fi
	ok $? "kill -9 number $k under ingest, restarted"
done
sleep 2
touch "$T/stop"
# shellcheck disable=SC2086
wait $pids
all_ok=0 want_probes=0 detail=
for a in $(seq $nagents); do
	read -r rc last <"$T/last.cr$a-"
	[ "$rc" = 0 ] || all_ok=1
	detail="$detail cr$a:$last"
	want_probes=$((want_probes + $(python3 -c "print(sum(1 for s in range(1, $last + 1) if s % 5 < 3))")))
	seq_ok=$(q "select count(*) from fabriciq.agent_seq where node = 'cr$a-00000' and last_seq = $last")
	[ "$seq_ok" = 1 ] || { all_ok=1; detail="$detail (agent_seq: $(q "select last_seq from fabriciq.agent_seq where node = 'cr$a-00000'"))"; }
done
ok $all_ok "every agent's frames acknowledged in the end, agent_seq at its last seq (last seqs:$detail)"
got=$(q "select count(distinct (src_node, agent_seq)) from fabriciq.probe_windows where src_node like 'cr%'")
is "$got" "$want_probes" "every probe window stored (by seq)"
is "$(q "select count(*) - count(distinct (src_node, agent_seq)) from fabriciq.probe_windows where src_node like 'cr%'")" 0 \
	"no probe window stored twice"
# lane windows carry no seq, but fq-agentsim's bytes are 1000000 + seq
is "$(q "select count(*) - count(distinct (src_node, dst_node, bytes)) from fabriciq.lane_windows where src_node like 'cr%' or dst_node like 'cr%'")" 0 \
	"no lane window stored twice"
is "$(q "select count(*) - count(distinct (node, reported_at, peer_node)) from fabriciq.clock_estimates where node like 'cr%'")" 0 \
	"no clock estimate stored twice"
[ "$self_kills" -gt 0 ]; ok $? "$self_kills of the kills right after a commit, before its acks"
n=$(grep -c "restarted its frame count" "$T"/controller.*.log | awk -F: '{ s += $NF } END { print s }')
is "$n" 0 "no reconnect was taken for a restarted count"
done_testing
