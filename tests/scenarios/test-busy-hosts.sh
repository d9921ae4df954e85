#!/usr/bin/env bash
# Scenario: hosts whose cores the jobs fill, on a healthy fabric. 8 hosts x
# 2 rails on 4 leaves and 4 spines (FQ_BUSY="HOSTS RAILS LEAVES SPINES"
# sets others), every leaf-spine link shaped to 40 Mbit/s (FQ_BUSY_RATE)
# as in bench-ecmp, no fault; a control-mode job per rail on every
# host (rail 0 an alltoall, rail 1 an allreduce; a rank a host, 4 lanes a
# connection), so every host runs a rank per rail, each busy-polling with
# its plugin's threads: more runnable threads than this machine has cores,
# as on a GPU node whose ranks spin on their proxies. The spines are
# congested for real (path_delay and collision anomalies are true here).
#
# An agent of ordinary priority beside them went unscheduled for 100-300
# ms at a time: its peers' probes went unanswered, they took its paths
# DOWN, the plugin failed lanes over and the controller stored link_down
# anomalies where no link had failed. The agent's loop runs SCHED_FIFO
# (agent.rt_priority, default 1; FQ_BUSY_RT sets another, 0 the ordinary
# scheduling, to see the failure): here no agent may stall, no path go
# DOWN, no lane fail over on a path DOWN and no link_down be reported
# (a lane that the congested spines leave a second without an ACK is
# failed over, truly: counted beside), and no anomaly blame a NIC, a host
# or a rank (the spines' delay is not theirs). Checked through
# the agents' status files and logs, `fabriciq --json job` and the
# anomalies.
. "$(dirname "$0")/scenario.sh"
read -r HOSTS RAILS LEAVES SPINES <<<"${FQ_BUSY:-8 2 4 4}"
sc_require scbz
plan $((5 + RAILS)) # a job per rail
sc_agent_args+=(-s "rt_priority=${FQ_BUSY_RT:-1}")
SC_TB_EXTRA="--spine-rate ${FQ_BUSY_RATE:-40mbit}" sc_up "$HOSTS" "$RAILS" "$LEAVES" "$SPINES"
ok $? "up: $HOSTS hosts x $RAILS rails, $LEAVES leaves, $SPINES spines; controller and $HOSTS agents reporting"

sched=$(for ((i = 1; i <= HOSTS; i++)); do
	python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("scheduling"))' "$S/agent-n$i.json"
done | sort | uniq -c | awk '{ printf "%s%d %s", (NR > 1 ? ", " : ""), $1, $2 }')
diag "the agents' scheduling: $sched"

coll_of() { [ $(($1 % 2)) -eq 0 ] && echo alltoall || echo allreduce; }
t0=$(date +%s)
for ((r = 0; r < RAILS; r++)); do
	port=$(free_port)
	timeout 300 "$TB" slurm srun -w "n[1-$HOSTS]" -N"$HOSTS" -n"$HOSTS" -J "busy$r" --fabriciq=control sh -c '
		[ "$SLURM_PROCID" = 0 ] && echo "job $SLURM_JOB_ID"
		exec "$@" 2>&1 | sed -u "s/^/[r$SLURM_PROCID] /"' sh \
		env FABRICIQ_IFACES="rail$r" FABRICIQ_LANES=4 FABRICIQ_CHUNK_SIZE=64K \
		"$CB" --bootstrap "198.19.$r.3:$port" --coll "$(coll_of $r)" -b 4M -e 4M -n "${FQ_BUSY_ITERS:-8}" -w 2 \
		--timeout 120 --timeline 1000 >"$S/busy$r.out" 2>&1 &
	echo $! >"$S/busy$r.pid"
done
rcs= jobs=()
for ((r = 0; r < RAILS; r++)); do
	sc_job_wait "busy$r"
	rcs+="$? "
	jobs+=("$SC_JOB")
	sc_verified "busy$r" || rcs+="unverified "
done
secs=$(($(date +%s) - t0))
[ "$rcs" = "$(printf '0 %.0s' $(seq "$RAILS"))" ]
ok $? "jobs ${jobs[*]} complete and verify, $RAILS ranks a host busy for $secs s" ||
	diag "$(for ((r = 0; r < RAILS; r++)); do tail -3 "$S/busy$r.out"; done)"
sleep 4 # the last reports reach the controller

# the agents' own view: loop stalls (status files) and paths DOWN (logs)
stalls=0
for ((i = 1; i <= HOSTS; i++)); do
	n=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["counters"]["loop_stalls"])' "$S/agent-n$i.json")
	stalls=$((stalls + n))
done
downs=$(cat "$S"/log/n*.agent.log | grep -c ' is DOWN (')
is "$stalls $downs" "0 0" "no agent's loop stood still, no path went DOWN at any agent ($stalls stalls, $downs DOWNs)" ||
	diag "$(grep -h ' is DOWN (\|stood still' "$S"/log/n*.agent.log | head -6)"

is "$(sc_anomalies "kind in ('link_down', 'flapping')")" "" "no link_down or flapping anomaly: no link failed"
# every NIC, host and rank is healthy: an anomaly that blames one is false
# (slow_sender and inband_mismatch were, before their routes were waited for)
is "$(sc_anomalies "kind in ('slow_sender', 'slow_receiver', 'inband_mismatch', 'peer_slow', 'rdma_config',
	'topology_mismatch', 'link_not_seen')")" "" "no anomaly blames a NIC, a host or a rank: none is at fault"
# A lane that goes a second without an ACK on these spines (TCP's
# retransmission timeouts after tail drops) is failed over by control
# mode as designed (cause no-progress; its re-dial may time out too,
# connect-failed): true, and printed. What must not be is a failover on a
# path the agents took DOWN (path-down), as the stalled agents caused.
for job in "${jobs[@]}"; do
	fo=$(fq --json job "$job" | json '"\n".join("%s %s/%s->%s/%s %s" % (f["cause"], f["src_node"], f["src_nic"], f["dst_node"],
		f["dst_nic"], f["time"]) for s in j["steps"] for f in s["failovers"])')
	[ -z "$fo" ] || diag "job $job's lane failovers: $(awk '{ print $1 }' <<<"$fo" | sort | uniq -c | xargs)"
	is "$(grep -c '^path-down ' <<<"$fo") $(psql_ctl "select count(*) from fabriciq.anomaly_jobs aj join fabriciq.anomalies a on
		a.id = aj.anomaly_id where aj.job_id = $job and a.kind in ('link_down', 'flapping')")" "0 0" \
		"job $job: no lane failed over on a path DOWN, no link_down or flapping attached to it" || diag "$fo"
done
diag "anomalies (the spines are congested): $(psql_ctl "select coalesce(string_agg(k, ', '), 'none') from (select
	kind || ' ' || severity || ' x' || count(*) k from fabriciq.anomalies group by kind, severity order by count(*) desc) a")"
diag "of which not path_delay or collision: $(psql_ctl "select coalesce(string_agg(kind || ': ' || summary, E'\n' order by id), 'none')
	from fabriciq.anomalies where kind not in ('path_delay', 'collision')" | head -8)"
