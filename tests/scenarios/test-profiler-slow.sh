#!/usr/bin/env bash
# Scenario: a slow peer seen through the profiler (issue 18). 4 hosts x 1
# rail on 2 leaves; `srun --fabriciq=monitor` with the site's default
# (monitor_via=profiler): NCCL keeps its transport (here fabriciq-collbench
# over the net plugin with FABRICIQ_TELEMETRY=0, sending fabriciq nothing)
# and only the profiler's reports reach the controller. First a healthy
# 4-rank alltoall on n1-n4: no anomaly on it. Then the same while n3 sends
# at most SLOW_RATE (100 Mbit/s) for 12 s (its own NIC's queue shaped: a
# host that cannot push its bytes out): n3's rank's transfers to every
# peer are far slower than the others'. The detector must raise exactly
# three peer_slow, n3 -> n1, n2 and n4, each attached to that job with
# n3's rank and the peer's, and nothing else but peer_slow to n3 (its
# acks wait behind its data: transfers to it are slowed too, truly).
#
# Why alltoall, and small socket buffers (FABRICIQ_SOCKET_BUFFER=256K):
# the rule times a transfer from its post to its completion, which over
# NCCL's IB transport is the wire's time (posted once the receiver gave
# credit, complete once the peer's NIC acknowledged it). The emulated
# transport's send completes once the kernel took the bytes: with large
# socket buffers a transfer to a slow peer completes at once, and with
# small ones a ring's senders upstream of the slow link wait as long as
# the one sending over it (the driver, unlike NCCL's proxy, posts a
# receive only when its rank reaches that step). In an alltoall every
# rank posts every receive at once, so only the transfers through the slow
# port wait on the wire. n3's egress rather than its leaf's port: the
# ranks then wait on one queue, n3's, and start their next alltoall
# together; behind a shaped leaf port three senders' flows share a
# tail-drop queue, finish far apart, and the early ones' next transfers
# wait for the late receivers to post (what the driver cannot hide). For
# the same reason n3's queue is served round robin per peer, as a NIC
# serves its queue pairs (slow_nic): in one FIFO n3's three TCP flows
# share by RTT, the one to n4 (its own leaf) ends first, n4 starts its
# next alltoall and its sends wait for n1 and n2 to post, so n4's
# transfers look slow too (seen once in 5 runs: a peer_slow n4 -> n2).
# The ranks' loops still fall out of step once n3 is fast again: a rank
# ahead waits for its peers to post (n2 -> n1 at 0.02-0.03 GB/s, while
# n1 received the same transfers at 0.09-0.10). The rule knows that from
# the receivers' own windows (detector_prof.h), so no peer_slow of it.
. "$(dirname "$0")/scenario.sh"
sc_require scps
NET=$B/nccl-plugin/.libs/libnccl-net-fabriciq.so
[ -f "$B/nccl-profiler/.libs/libnccl-profiler-fabriciq.so" ] || skip_all "the profiler plugin is not built"
SC_SPANK_MONITOR="profiler_libdir=$B/nccl-profiler/.libs" # monitor_via: the default, profiler
SLOW_RATE=${SLOW_RATE:-100mbit}
SLOW_QUEUE=${SLOW_QUEUE:-250000} # bytes per peer: 20 ms at 100 Mbit/s
plan 12
sc_up 4 1 2 1
ok $? "up: 4 hosts x 1 rail, 2 leaves; controller and 4 agents reporting"

# pjob NAME NODES ITERS PORT: a monitor job through the profiler, a rank
# per node, 16 MiB alltoalls (4 MiB per pair), in the background (as
# sc_job, with the transport named: NCCL_NET_PLUGIN is not set in
# profiler mode)
pjob() {
	local n
	n=$("$TB" slurm scontrol show hostnames "$2" | wc -l)
	FABRICIQ_TELEMETRY=0 FABRICIQ_SOCKET_BUFFER=256K timeout 300 "$TB" slurm srun -w "$2" -N"$n" -n"$n" -J "$1" --fabriciq=monitor sh -c \
		'[ "$SLURM_PROCID" = 0 ] && echo "job $SLURM_JOB_ID"; exec "$@" 2>&1 | sed -u "s/^/[r$SLURM_PROCID] /"' sh \
		"$CB" -p "$NET" --bootstrap "198.19.0.3:$4" --coll alltoall -b 16M -e 16M -n "$3" -w 5 --timeout 120 \
		--timeline 1000 >"$S/$1.out" 2>&1 &
	echo $! >"$S/$1.pid"
}
# windows JOB: per rank, the step_send windows stored and their median
# rate (GB/s over busy time): what the rule judged
windows() {
	psql_ctl "select rank || '->' || id || ':' || count(*) || ':' ||
		round((percentile_cont(0.5) within group (order by bytes::float8 / nullif(mean_ns * count, 0)))::numeric, 3)
		from fabriciq.profiler_windows where job_id = $1 and kind = 'step_send' and bytes > 0
		group by rank, id order by rank, id" | tr '\n' ' '
}

# timeline JOB: per channel (rank>peer), the rate of each of its
# step_send windows in MB/s over busy time, in time order ("-": not
# judged, under 1 MiB), after the second of its first window: what the
# rule saw interval by interval
timeline() {
	psql_ctl "with w as (select rank, id, interval_end, extract(epoch from interval_end - min(interval_end) over ()) t,
			case when bytes >= 1048576 then round(bytes::numeric * 1000 / nullif(mean_ns * count, 0))::text
			else '-' end r
			from fabriciq.profiler_windows where job_id = $1 and kind = 'step_send')
		select rank || '>' || id || ' from ' || round(min(t)::numeric, 1) || ' s: ' ||
			string_agg(r, ' ' order by interval_end) from w group by rank, id order by rank, id"
}

# ran NAME: rank 0 printed its result row (every iteration done; the
# driver's exit status also says whether the data was right: verified())
ran() { grep -q '^\[r0\] *16777216 ' "$S/$1.out"; }
# verified NAME DESC: every interval's data right (the driver poisons
# each receive buffer first, so a stale buffer cannot pass)
verified() {
	sc_verified "$1"
	ok $? "$2" || diag "wrong bytes: $(awk '/# timeline / { w += $(NF - 1) } END { print w + 0 }' "$S/$1.out")"
}

pjob calm 'n[1-4]' 150 17371
sc_job_wait calm; calm=$SC_JOB
ran calm
ok $? "the healthy job on n1-n4 (job $calm) ran its 150 alltoalls" || diag "$(tail -5 "$S/calm.out")"

# slow_nic NS DEV RATE PEER_IP...: DEV sends at most RATE, served round
# robin per peer: the link as qos_set makes it (net.sh), a class of equal
# weight and a FIFO of SLOW_QUEUE bytes per peer address; other packets
# in a class of their own. Its burst 16 KB, not link_burst's: the TBF
# splits larger (TSO) packets, so the round robin goes packet by packet,
# as a NIC serves its queue pairs.
slow_nic() {
	local ns=$1 dev=$2 bps k ip
	bps=$(rate_bps "$3") || return 1
	shift 3
	ip netns exec "$ns" tc qdisc del dev "$dev" root 2>/dev/null
	{
		qos_head "$dev" "$bps" 20 16384
		for k in 99 $(seq 10 $((9 + $#))); do
			qos_class "$dev" "$k" 7 1 "$SLOW_QUEUE"
		done
		k=10
		for ip in "$@"; do
			echo "filter add dev $dev parent 2: protocol ip prio 1 u32 match ip dst $ip/32 flowid 2:$k"
			k=$((k + 1))
		done
	} | ip netns exec "$ns" tc -batch -
}
# rail0 NODE: the node's rail0 address
rail0() {
	local ns dev
	read -r ns dev _ <<<"$(awk -v l="$1-rail0" '$1 == l { print $2, $3 }' "$S/links")"
	ip -n "$ns" -4 -o addr show dev "$dev" | awk '{ sub(/\/.*/, "", $4); print $4; exit }'
}

pjob hit 'n[1-4]' 200 17372
sc_job_running hit
sleep 3
read -r ns3 if3 _ <<<"$(awk '$1 == "n3-rail0" { print $2, $3 }' "$S/links")"
slow_nic "$ns3" "$if3" "$SLOW_RATE" "$(rail0 n1)" "$(rail0 n2)" "$(rail0 n4)"
ok $? "n3's NIC slowed to $SLOW_RATE, served round robin per peer" ||
	diag "$(ip netns exec "$ns3" tc qdisc show dev "$if3" | tr '\n' ' ')"
sleep 12
ip netns exec "$ns3" tc qdisc del dev "$if3" root
sc_job_wait hit; hit=$SC_JOB
ran hit
ok $? "the job on n1-n4 (job $hit) ran its 200 alltoalls through 12 s of a slow n3" ||
	diag "$(tail -5 "$S/hit.out")"
verified calm "job $calm's data verified in every interval"
verified hit "job $hit's data verified in every interval"
sleep 4 # the last reports reach the controller, a tick judges them
diag "calm job $calm step_send windows (rank->peer:windows:median GB/s): $(windows "$calm")"
diag "hit job $hit step_send windows: $(windows "$hit")"
diag "anomalies: $(sc_anomalies | awk '{ print $1 }' | uniq -c | xargs)"

is "$(psql_ctl "select count(distinct rank) from fabriciq.profiler_windows where job_id = $calm and kind = 'step_send'")" 4 \
	"the healthy job's 4 ranks reported their transfers through the profiler"
is "$(psql_ctl "select count(*) from fabriciq.lane_windows where job_id in ($calm, $hit)")" 0 \
	"no lane window: the profiler carried the telemetry"
sc_quiet "$calm"
# Transfers to n3 may be judged slow as well, and were: n3's acks for them
# wait in its NIC's queues behind its own data (20-60 ms), so its peers'
# windows to it crawl (a 256 KB socket buffer an ack's wait). Such a
# peer_slow x -> n3 is true, and allowed; no other is.
slow=$(psql_ctl "select node || ' -> ' || coalesce(remote_node, '?') || ' ' || coalesce(nic, '-')
	from fabriciq.anomalies where kind = 'peer_slow' order by 1")
into=$(grep -c -- '-> n3 ' <<<"$slow")
is "$(grep -v -- '-> n3 ' <<<"$slow" | tr '\n' ' ')" "n3 -> n1 - n3 -> n2 - n3 -> n4 - " \
	"three peer_slow from n3: n3 -> n1, n2 and n4, no NIC; none but those and $into to n3" ||
	diag "$(psql_ctl "select summary, evidence from fabriciq.anomalies where kind = 'peer_slow'")
hit job $hit's step_send windows: $(timeline "$hit")
the agents' CPU (s) and loop stalls: $(for i in 1 2 3 4; do p=$(sc_agent_pid "n$i")
	printf 'n%d %s %s, ' "$i" "$(awk -v t="$(getconf CLK_TCK)" '{ printf "%.1f", ($14 + $15) / t }' "/proc/$p/stat" 2>&1)" \
		"$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["counters"]["loop_stalls"])' "$S/agent-n$i.json" 2>&1)"
done)"
attached="from fabriciq.anomaly_jobs aj join fabriciq.anomalies a on a.id = aj.anomaly_id where aj.job_id = $hit"
is "$(psql_ctl "select a.kind || ' ' || (select array_agg(x order by x) from unnest(aj.ranks) x)::text
	$attached and a.remote_node is distinct from 'n3' order by 1" | tr '\n' ' ')/$(psql_ctl "select count(*)
	$attached and not (a.kind = 'peer_slow' and a.remote_node = 'n3' and aj.ranks @> array[2])")" \
	"peer_slow {0,2} peer_slow {1,2} peer_slow {2,3} /3" \
	"job $hit: those three, each on rank 2 (n3) and its peer's, and nothing else but peer_slow to n3 on n3's rank" ||
	diag "$(psql_ctl "select a.kind, a.summary, aj.ranks $attached")"
rep=$(fq --json job "$hit" | json '" ".join(sorted("%s:%s>%s:%s" % (a["kind"], a["node"], a["remote_node"],
	sorted(a["ranks"])) for s in j["steps"] for a in s["anomalies"] if a["remote_node"] != "n3"))' 2>&1)
is "$rep" "peer_slow:n3>n1:[0, 2] peer_slow:n3>n2:[1, 2] peer_slow:n3>n4:[2, 3]" \
	"fabriciq --json job $hit: the three, with their ranks (and no other but to n3)"
fq job "$hit" | grep -i "peer_slow" | head -6 | sed "s/^/# /"
