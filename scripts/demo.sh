#!/usr/bin/env bash
# The fabriciq demo on the emulated cluster (README command 1): 4 hosts x 2
# rails behind 2 leaves and 2 spines, with their own clocks and real munge,
# Slurm and PostgreSQL; the controller and an agent per host; the clocks
# converging; an `srun --fabriciq` allreduce while one rail flaps, and a
# second job colliding with it; then the job report, the flapping link, the
# drain hint and the clock accuracy against the testbed's truth. Everything
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
CB=$B/nccl-plugin/collbench/fabriciq-collbench
fq() { "$TB" exec ctl "$B/controller/fabriciq" --controller http://198.18.0.1:7180 --munge-socket "$S/munge/munge.socket" "$@"; }
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
cleanup() { step "tearing down"; "$TB" down; }
trap cleanup EXIT
trap 'exit 130' INT TERM
top_srcdir=$PWD top_builddir=$B source tests/testbed/lib/testlib.sh

step "bringing up the emulated cluster (Slurm with the fabriciq SPANK plugin)"
SPANK="optional $B/spank/.libs/spank_fabriciq.so libdir=$B/nccl-plugin/.libs ifaces=rail0,rail1"
SPANK+=" step_socket=$S/run/%n/agent-step.sock" # the agent tells its other paths
"$TB" up --prefix fqdemo --hosts 4 --rails 2 --leaves 2 --spines 2 --clock-offsets random \
	--plugstack "$SPANK" || exit 1
"$TB" status

step "the controller on ctl (munge-authenticated agents, PostgreSQL, HTTP API)"
mkdir -p "$S/spool"
"$TB" daemon start ctl controller -- "$B/controller/fabriciq-controller" -c /dev/null \
	-s listen=198.18.0.1:7100 -s http_listen=198.18.0.1:7180 \
	-s "db=host=198.18.0.1 port=5432 user=postgres dbname=fabriciq" \
	-s "munge_socket=$S/munge/munge.socket" -s "spool_dir=$S/spool/ctl" >/dev/null || exit 1
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
run_job() { # NAME COLL PORT BYTES
	"$TB" slurm srun -N4 -n4 -J "$1" --fabriciq=control sh -c \
		'[ "$SLURM_PROCID" = 0 ] && echo "job $SLURM_JOB_ID"; exec "$@"' sh \
		"$CB" --bootstrap "198.19.0.3:$3" -c "$2" -b "$4" -e "$4" -n 400 -w 5 --timeout 120
}
run_job demo-allreduce allreduce 17001 4M >"$S/job1.out" 2>&1 &
job1=$!
sleep 3
"$TB" flap n3 1 --count 9 --period 800 &
flap=$!
step "a second job, alltoall on the same hosts, colliding with the first"
run_job demo-alltoall alltoall 17002 1M >"$S/job2.out" 2>&1
wait "$flap" "$job1"
sed 's/^/  /' "$S/job1.out" | tail -8
id1=$(awk '/^job / { print $2; exit }' "$S/job1.out")
id2=$(awk '/^job / { print $2; exit }' "$S/job2.out")
sleep 3 # the last reports reach the controller

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
step "clock accuracy now, against the testbed's truth"
clock_errors
