#!/usr/bin/env bash
# The fabriciq demo on the emulated cluster (README command 1): 4 hosts x 2
# rails behind 2 leaves and 2 spines, with their own clocks and real munge,
# Slurm and PostgreSQL; the controller and an agent per host; the clocks
# converging; an `srun --fabriciq` allreduce while one rail flaps, and a
# second job colliding with it; then the job report, the flapping link, the
# drain hint, the topology, a spine dropping packets (a fabric incident, no
# drain hint) and the clock accuracy against the testbed's truth. Everything
# is torn down at the end (also on Ctrl-C).
set -u
cd "$(dirname "$0")/.."
scripts/deps.sh || exit 1
scripts/build.sh || exit 1

B=$PWD/build
TB=tests/testbed/fabriciq-testbed
export FQTB_HELPERS=$B/tests/testbed
export FQTB_STATE=${FQTB_STATE:-/run/fabriciq-demo}
S=$FQTB_STATE
CB=$B/tools/collbench/fabriciq-collbench
fq() { "$TB" exec ctl "$B/controller/fabriciq" --controller http://198.18.0.1:7180 --munge-socket "$S/munge/munge.socket" "$@"; }
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
cleanup() { step "tearing down"; "$TB" down; }
trap cleanup EXIT
trap 'exit 130' INT TERM
top_srcdir=$PWD top_builddir=$B source tests/testbed/lib/testlib.sh

step "bringing up the emulated cluster (Slurm with the fabriciq SPANK plugin)"
SPANK="optional $B/spank/.libs/spank_fabriciq.so libdir=$B/nccl-plugin/.libs ifaces=rail0,rail1 monitor_via=net"
SPANK+=" step_socket=$S/run/%n/agent-step.sock" # the agent tells its other paths
SPANK+=" controller=http://198.18.0.1:7180 munge_socket=$S/munge/munge.socket" # srun's job-end line
"$TB" up --prefix fqdemo --hosts 4 --rails 2 --leaves 2 --spines 2 --clock-offsets random \
	--plugstack "$SPANK" || exit 1
"$TB" status

step "the controller on ctl (munge-authenticated agents, PostgreSQL, HTTP API)"
mkdir -p "$S/spool"
"$TB" expected >"$S/topology.conf" # the site's expected topology: the switches' names
"$TB" daemon start ctl controller -- "$B/controller/fabriciq-controller" -c /dev/null \
	-s listen=198.18.0.1:7100 -s http_listen=198.18.0.1:7180 \
	-s "db=host=198.18.0.1 port=5432 user=postgres dbname=fabriciq" \
	-s "munge_socket=$S/munge/munge.socket" -s "spool_dir=$S/spool/ctl" \
	-s "topology_file=$S/topology.conf" >/dev/null || exit 1
sleep 1

step "an agent on every host (probe mesh, clock sync, uplink)"
tb_agents_start "$B/slurmd-agent/fabriciq-agent" -s controller=198.18.0.1:7100 \
	-s "munge_socket=$S/munge/munge.socket" || exit 1

# |error| of every host's global time against the testbed's truth: a
# host's global - local is E - (its clock - the reference's clock).
clock_errors() {
	local h gml truth
	declare -A G T
	while read -r h truth; do T[$h]=$truth; done < <("$TB" truth)
	for h in "${!T[@]}"; do
		G[$h]=$("$B/slurmd-agent/fabriciq-agent" -c /dev/null -s "status_file=$S/agent-$h.json" --status --json |
			tr -d ' \n' | grep -o '"global_minus_local_ns":-*[0-9]*' | grep -o -- '-*[0-9]*$')
	done
	for h in $(printf '%s\n' "${!T[@]}" | sort); do
		[ -n "${G[$h]:-}" ] && [ -n "${G[n1]:-}" ] || { printf '  %s: not synchronised yet\n' "$h"; continue; }
		printf '  %s: true offset %+12d ns   |error| %6d ns\n' "$h" "${T[$h]}" \
			"$(( ${G[$h]} - ${G[n1]} + ${T[$h]} - ${T[n1]} < 0 ? -(${G[$h]} - ${G[n1]} + ${T[$h]} - ${T[n1]}) : ${G[$h]} - ${G[n1]} + ${T[$h]} - ${T[n1]} ))"
	done
}

step "the clocks converging (offsets up to +-100 ms; reference n1)"
for t in 2 4 8; do
	sleep $((t / 2))
	echo " after ~$t s:"
	clock_errors
done

step "srun -N4 -n4 --fabriciq=control: allreduce, while rail1 of n3 flaps 9 times"
run_job() { # NAME COLL PORT BYTES: every iteration verified, one line a second from rank 0
	"$TB" slurm srun -N4 -n4 -J "$1" --fabriciq=control sh -c \
		'[ "$SLURM_PROCID" = 0 ] && echo "job $SLURM_JOB_ID"; exec "$@"' sh \
		"$CB" --bootstrap "198.19.0.3:$3" --coll "$2" -b "$4" -e "$4" -n 400 -w 5 --timeout 120 --timeline 1000
}
run_job demo-allreduce allreduce 17001 4M >"$S/job1.out" 2>&1 &
job1=$!
for ((i = 0; i < 600; i++)); do # the flapping starts once the allreduce runs
	grep -q '# timeline ' "$S/job1.out" && break
	sleep 0.1
done
sleep 1
"$TB" flap n3 1 --count 9 --period 800 &
flap=$!
step "a second job, alltoall on the same hosts, colliding with the first"
run_job demo-alltoall alltoall 17002 1M >"$S/job2.out" 2>&1
rc2=$?
wait "$job1"
rc1=$?
wait "$flap"
id1=$(awk '/^job / { print $2; exit }' "$S/job1.out")
id2=$(awk '/^job / { print $2; exit }' "$S/job2.out")
sleep 3 # the last reports reach the controller

# What the demo promises, each checked; the demo exits 1 if one is broken.
kept=0 broken=0
promise() { # STATUS WHAT
	if [ "$1" -eq 0 ]; then
		kept=$((kept + 1)); printf '  \033[32mkept\033[0m    %s\n' "$2"
	else
		broken=$((broken + 1)); printf '  \033[31mBROKEN\033[0m  %s\n' "$2"
	fi
}
# outcome NAME RC ID FILE: how the job ended, and why when it failed
outcome() {
	local name=$1 rc=$2 id=$3 f=$4 n wrong
	n=$(grep -c '# timeline ' "$f")
	wrong=$(awk '/# timeline / { w += $(NF - 1) } END { print w + 0 }' "$f")
	if [ "$rc" -eq 0 ] && [ "$n" -gt 0 ] && [ "$wrong" = 0 ]; then
		echo "  job ${id:-?} ($name): completed, every iteration verified ($n one-second intervals)"
		grep '^fabriciq: step ' "$f" | sed 's/^/    srun said: /'
		return 0
	fi
	echo "  job ${id:-?} ($name): FAILED (exit status $rc, $wrong wrong iterations); the ranks said:"
	grep -E 'WARN|error|rror:' "$f" | tail -5 | sed 's/^/    /'
	return 1
}
step "how the jobs ended"
outcome demo-allreduce "$rc1" "$id1" "$S/job1.out"
promise $? "the allreduce survives the flapping rail, verified"
outcome demo-alltoall "$rc2" "$id2" "$S/job2.out"
promise $? "the alltoall beside it completes, verified"
step "fabriciq job $id1: the report"
fq job "$id1" --bucket 5 --lanes 8
step "fabriciq job $id2"
fq job "$id2" --bucket 5 --lanes 4 | head -24
step "fabriciq links: the flapping link"
fq links
step "fabriciq anomalies (the flapping NIC, NIC-level downs and the lane outliers; all: fabriciq anomalies)"
fq anomalies --limit 500 | grep -E '^ *ID |flapping|link_down +critical|lane_outlier' | head -20
step "fabriciq hints: what to drain"
fq hints
drains_before=$(fq --json hints | python3 -c 'import json, sys
print(sum(x["action"] == "drain" for x in json.load(sys.stdin)["hints"]))')

step "fabriciq topology: the fabric as the agents' path traces show it"
fq topology | head -16

step "a spine fault: spine2 drops 5 % of packets on every link, for up to 20 s"
"$TB" loss leaf1-spine2 5 && "$TB" loss leaf2-spine2 5
spine_id=
for ((i = 0; i < 80 && !spine_id; i++)); do
	sleep 0.25
	spine_id=$(fq --json incidents --open | python3 -c 'import json, sys
print(next((str(x["id"]) for x in json.load(sys.stdin)["incidents"] if x["component"] == "spine2"), ""))')
done
echo "  spine2 blamed ${spine_id:+after $((i / 4)).$((i % 4 * 25)) s (incident $spine_id)}${spine_id:-: not within 20 s}"
sleep 3 # its evidence grows a little
"$TB" loss leaf1-spine2 off && "$TB" loss leaf2-spine2 off

step "fabriciq incidents: each blamed on one component"
fq incidents | head -12
[ -n "$spine_id" ] && { step "fabriciq incident $spine_id: the spine's"; fq incident "$spine_id" | head -30; }
step "fabriciq hints: a drain for the flapping host, what to check for the spine"
fq hints

step "clock accuracy now, against the testbed's truth"
clock_errors

step "what the demo promised"
logged=$(grep -cE 'bytes to resend|waiting for the sender|\): connect-failed: ' "$S/job1.out")
reported=$(fq --json job "$id1" | python3 -c 'import json, sys
print(sum(len(s["failovers"]) for s in json.load(sys.stdin)["steps"]))' 2>/dev/null)
echo "  job $id1: the ranks logged $logged lane failures; its report has ${reported:-no} failovers (both ends' reports of one outage are one)"
[ "${logged:-0}" -gt 0 ] && [ "${reported:-0}" -gt 0 ] && [ "$reported" -le "$logged" ]
promise $? "every lane failure of the allreduce is in its report (${reported:-0} outages from $logged logged failures)"
want=$(fq --json job "$id1" | python3 -c 'import json, sys; j = json.load(sys.stdin)
i = sum(len(s["incidents"]) for s in j["steps"]); f = sum(len(s["failovers"]) for s in j["steps"])
print("%d incident%s, %d lane failover%s" % (i, "" if i == 1 else "s", f, "" if f == 1 else "s"))')
line=$(grep "^fabriciq: step $id1\.0: " "$S/job1.out")
echo "  srun's job-end line: ${line:-none}"
[ "${line#*: *: }" = "$want — fabriciq job $id1" ]
promise $? "srun's job-end line for the allreduce gives its report's counts ($want)"
fq --json anomalies --limit 500 | python3 -c 'import json, sys
a = json.load(sys.stdin)["anomalies"]
sys.exit(0 if any(x["kind"] == "flapping" and x["node"] == "n3" and x["nic"] == "rail1" for x in a) else 1)'
promise $? "the flapping NIC is named: n3/rail1"
fq --json hints | python3 -c 'import json, sys
h = json.load(sys.stdin)["hints"]
sys.exit(0 if any(x["node"] == "n3" and x["action"] == "drain" for x in h) else 1)'
promise $? "a drain hint for n3"
fq --json incidents | python3 -c 'import json, sys, re
i = json.load(sys.stdin)["incidents"]
sys.exit(0 if any(x["kind"] in ("flapping", "link_down") and x["node"] == "n3" and x["nic"] == "rail1"
                  and re.fullmatch(r"n3/rail1~leaf\d+", x["component"] or "") for x in i) else 1)'
promise $? "the flapping rail is blamed on n3/rail1's cable to its leaf (its host link)"
[ -n "$spine_id" ]
promise $? "the spine fault is one fabric incident, blamed on spine2"
fq --json hints | python3 -c 'import json, sys
h = [x for x in json.load(sys.stdin)["hints"] if x["action"] == "check" and not x.get("superseded")]
sys.exit(0 if [x["component"] for x in h] == ["spine2"] and "spine2" in h[0]["reason"] else 1)'
promise $? "the spine fault's hint is a fabric hint: spine2, and what to check there"
drains_after=$(fq --json hints | python3 -c 'import json, sys
print(sum(x["action"] == "drain" for x in json.load(sys.stdin)["hints"]))')
[ "$drains_after" = "$drains_before" ]
promise $? "no drain hint for the spine fault ($drains_before drain hints before it, $drains_after after)"
worst=$(clock_errors | awk '/error/ { e = $NF == "ns" ? $(NF - 1) : $NF; if (e > w) w = e } END { print w + 0 }')
[ "$(clock_errors | grep -c 'not synchronised')" = 0 ] && [ "$worst" -lt 1000000 ]
promise $? "every host's clock within 1 ms of the truth (worst $worst ns)"
echo
if [ "$broken" -gt 0 ]; then
	echo "demo: $broken of $((kept + broken)) promises broken"
	exit 1
fi
echo "demo: all $kept promises kept"
