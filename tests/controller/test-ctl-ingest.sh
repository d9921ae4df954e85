#!/usr/bin/env bash
# test-ctl-ingest: every frame kind reaches its table; SQL metacharacters
# in every string field are stored verbatim; an at-least-once replay is
# stored exactly once, across a controller restart too; an agent that
# restarts its count (proto AgentHello.next_seq) is stored anew; /metrics.
[ -n "${FQ_TEST_PG:-}" ] || exec "$(dirname "$0")/../db/with-postgres.sh" "$0" "$@"
. "$(dirname "$0")/ctl-lib.sh"

munge_up || skip_all "private munged did not start"
plan 38
ctl_up; ok $? "controller starts"

out=$(sim --agents 3 --all-kinds --evil --prefix ev --duration 3 --probes 2 --lanes 2 2>&1)
ok $? "3 agents, every frame kind, SQL metacharacters in every string: all acked ($out)"
sleep 0.5
for t in nodes:3 nics:9 jobs:3 steps:3 ranks:6 link_events:6 failover_events:3 agent_seq:3; do
	tab=${t%%:*} want=${t##*:}
	is "$(q "select count(*) from fabriciq.$tab")" "$want" "fabriciq.$tab has $want rows"
done
for tab in probe_windows lane_windows clock_estimates links; do
	n=$(q "select count(*) from fabriciq.$tab")
	[ "$n" -gt 0 ] 2>/dev/null; ok $? "fabriciq.$tab has rows ($n)"
done
evil=$'o\'q"b\\s;--%_\t\n$1{,}é'
v() { q "select count(*) from $1 where $2 = \$q\$$3\$q\$"; }
n1=$(v fabriciq.nodes name "ev${evil}00001")$(v fabriciq.nodes agent_version "$evil")$(v fabriciq.nics name "${evil}rail0")
n2=$(v fabriciq.lane_windows lane_kind "$evil" | sed 's/[1-9][0-9]*/+/')$(v fabriciq.link_events detector "$evil")$(v fabriciq.failover_events cause "$evil")
is "$n1$n2" "133+63" "strings stored verbatim (node name, agent version, NIC, lane kind, detector, cause)"
is "$(q "select count(*) from fabriciq.steps where end_time is not null and mode = 'control' and exit_status = 0")" 3 \
	"StepEnd kept the step's mode and recorded its end"
is "$(v fabriciq.steps net_class "$evil")" 3 "StepStart's network class stored verbatim, kept by StepEnd"
is "$(q "select count(*) filter (where pacing_rate = 1250000 and throttled_ns = 40000000) = count(*) / 2 and count(*) > 0
	from fabriciq.lane_windows")" t "the senders' lane windows carry their pacing cap and time throttled (half the windows)"
is "$(q "select count(*) filter (where assigned_rate = 1250000 and assigned_ns = 40000000) = count(*) / 2 and count(*) > 0
	from fabriciq.lane_windows")" t "... and the rate the controller gave them, and for how long"
# The job report's rank NICs: each rank's local NIC from its lanes (the
# simulator's rank 0 sends on rail1, rank 1 receives on rail0).
is "$(q "select count(*) from fabriciq.ranks where (rank = 0 and nic = \$q\$${evil}rail1\$q\$) or (rank = 1 and nic = \$q\$${evil}rail0\$q\$)")" 6 \
	"every rank's NIC learned from its lanes, stored verbatim"
nic=$("$top_builddir/controller/fabriciq" --controller "http://127.0.0.1:$HTTP_PORT" --json job 1000 |
	python3 -c 'import json, sys; print(",".join(r["nic"] for s in json.load(sys.stdin)["steps"] for r in s["ranks"]))' 2>&1)
is "$nic" "${evil}rail1,${evil}rail0" "... shown by fabriciq --json job"
# The NCCL profiler's reports (proto ProfilerReport): each agent's one
# report, 3 windows and 2 ops, stored with the agent's node; the job
# report's profiler section computes bus bandwidth (AllReduce of 4 ranks:
# 2 x 3/4 of 1.048576 GB/s) and names the slowest QP and peer.
is "$(q "select count(*) from fabriciq.profiler_windows")/$(q "select count(*) from fabriciq.profiler_ops")" 9/6 \
	"profiler reports: 9 windows and 6 ops stored"
is "$(v fabriciq.profiler_ops func "$evil")" 3 "... an op's func stored verbatim"
prof=$("$top_builddir/controller/fabriciq" --controller "http://127.0.0.1:$HTTP_PORT" --json job 1000 |
	python3 -c '
import json, sys
p = json.load(sys.stdin)["steps"][0]["profiler"]
c = [x for x in p["collectives"] if x["func"] == "AllReduce"][0]
print(p["ops"], p["windows"], c["ops"], c["bytes"], c["algbw_gbs"], c["busbw_gbs"],
      p["slowest_qps"][0]["qpn"], p["slowest_qps"][0]["mean_ns"], p["slowest_peers"][0]["peer"],
      len(p["busbw_over_time"]) > 0)' 2>&1)
is "$prof" "2 3 1 1048576 1.049 1.573 257 2000 2 True" \
	"fabriciq --json job: per-collective bus bandwidth, slowest QP 0x101, slowest peer 2"
is "$(q "select fabriciq.step_profiler(999999, 0) is null")" t "a step without profiler data: section null"
is "$(q "select profiler_ops || ' ' || profiler_busbw_gbs || ' ' || profiler_slowest_peer from fabriciq.job_efficiency
	where job_id = 1000")" "2 1.311 1->2 3.0 us" "job_efficiency: the profiler's ops, mean bus bandwidth (1.049 and 1.573), slowest peer"
txt=$("$top_builddir/controller/fabriciq" --controller "http://127.0.0.1:$HTTP_PORT" job 1000 2>&1)
grep -q '^Collectives (NCCL profiler: 2 ops, 3 windows, 1 rank(s))' <<<"$txt" && grep -q '^Slowest QPs' <<<"$txt" &&
	grep -q ' 0x101 ' <<<"$txt" && grep -q '^Slowest peers' <<<"$txt"
ok $? "fabriciq job (text): the Collectives, Slowest QPs (0x101 first) and Slowest peers tables" || diag "$txt"

# replay after a broken connection: stored once
out=$(sim --agents 2 --prefix dd --duration 3 --probes 3 --lanes 1 --replay 2>&1)
ok $? "replay of every frame after reconnect: all acked ($out)"
sleep 0.3
is "$(q "select count(*) - count(distinct (src_node, agent_seq)) from fabriciq.probe_windows where src_node like 'dd%'")" 0 \
	"no probe window stored twice"
before=$(q "select count(*) from fabriciq.lane_windows where src_node like 'dd%' or dst_node like 'dd%'")

# across a restart: frames 2.. again are all duplicates
ctl_down; ctl_up; ok $? "controller restarted"
out=$(sim --agents 2 --prefix dd --start-seq 2 --duration 2 --probes 3 --lanes 1 2>&1)
after=$(q "select count(*) from fabriciq.lane_windows where src_node like 'dd%' or dst_node like 'dd%'")
dups=$(q "select count(*) - count(distinct (src_node, agent_seq)) from fabriciq.probe_windows where src_node like 'dd%'")
is "$dups" 0 "after a restart, replayed seqs are still dropped (lanes $before -> $after)"

# The restart rule. rs: seqs 1..N, then a hello with next_seq 1 (a lost spool).
pw() { q "select count(*) from fabriciq.probe_windows where src_node = '$1'"; }
sim --agents 1 --prefix rs --duration 2 --probes 3 --lanes 1 >/dev/null 2>&1
n1=$(pw rs00000)
out=$(sim --agents 1 --prefix rs --duration 2 --probes 3 --lanes 1 2>&1)
ok $? "an agent counting afresh from 1 is acknowledged ($out)"
sleep 0.3
is "$(pw rs00000)" $((2 * n1)) "... and its new frames stored, not dropped as duplicates"
grep -q "agent rs00000 restarted its frame count" "$CTL_LOG"; ok $? "... the restart logged"
# rt: seqs 1..N, a reconnect showing acks up to N (next_seq N+1, frames
# N+1..M), then next_seq 3: below a seq it showed acknowledged, a restart.
out=$(sim --agents 1 --prefix rt --duration 2 --probes 3 --lanes 1 2>&1)
sent=$(echo "$out" | sed -n 's/.* sent=\([0-9]*\).*/\1/p')
sim --agents 1 --prefix rt --start-seq $((sent + 1)) --duration 2 --probes 3 --lanes 1 >/dev/null 2>&1
n1=$(pw rt00000)
out=$(sim --agents 1 --prefix rt --start-seq 3 --duration 2 --probes 3 --lanes 1 2>&1)
sent3=$(echo "$out" | sed -n 's/.* sent=\([0-9]*\).*/\1/p')
sleep 0.3
n2=$(pw rt00000)
[ "$n2" -gt "$n1" ]; ok $? "next_seq 3 below acks the agent showed: a restart, frames stored ($n1 -> $n2 probe windows)"
grep -q "agent rt00000 restarted its frame count (next seq 3" "$CTL_LOG"; ok $? "... logged"
is "$(q "select last_seq from fabriciq.agent_seq where node = 'rt00000'")" $((2 + sent3)) \
	"... agent_seq follows the new count (it went down)"
sleep 1.2
curl -s "http://127.0.0.1:$HTTP_PORT/metrics" | grep -q '^fabriciq_ingest_duplicates_total [1-9]'
ok $? "/metrics counts the duplicates"
done_testing
