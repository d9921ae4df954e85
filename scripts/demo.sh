#!/usr/bin/env bash
# The fabriciq demo on the emulated cluster: brings up 4 hosts x 2 rails
# behind 2 leaves and 2 spines, with their own clocks and real munge, Slurm
# and PostgreSQL; runs a job through Slurm; shows the fabric, the clocks,
# ECMP and a cut rail; tears everything down (also on Ctrl-C).
set -u
cd "$(dirname "$0")/.."
scripts/deps.sh || exit 1
scripts/build.sh || exit 1

TB=tests/testbed/fabriciq-testbed
export FQTB_HELPERS=$PWD/build/tests/testbed
FLOW=$FQTB_HELPERS/tb-flow
export FQTB_STATE=${FQTB_STATE:-/run/fabriciq-demo}
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
cleanup() { step "tearing down"; "$TB" down; }
trap cleanup EXIT
trap 'exit 130' INT TERM

step "bringing up the emulated cluster"
"$TB" up --prefix fqdemo --hosts 4 --rails 2 --leaves 2 --spines 2 --clock-offsets random || exit 1

step "the fabric"
"$TB" status

step "each host's clock offset (ground truth, ns)"
"$TB" truth

step "srun -N4 -n8 through Slurm"
"$TB" slurm sinfo
"$TB" slurm srun -N4 -n8 --ntasks-per-node=2 -l sh -c 'echo "$(hostname) rails: $(ip -br -4 addr show | awk "/^rail/ { sub(/@.*/, \"\", \$1); printf \"%s=%s \", \$1, \$3 }")"' | sort -n

step "PostgreSQL from a host"
"$TB" exec n2 psql -tAc "select 'postgres ' || version()" | cut -c1-60

step "ECMP: 8 flows n1 -> n3 by source port, counted per spine"
"$TB" exec n3 "$FLOW" sink --udp --port 9000 --seconds 15 >/dev/null &
sink=$!
disown "$sink" # killed below; no job-status noise
sleep 0.3
for k in 1 2 3 4 5 6 7 8; do
	a=$("$TB" exec leaf1 cat /sys/class/net/s1/statistics/tx_packets)
	b=$("$TB" exec leaf1 cat /sys/class/net/s2/statistics/tx_packets)
	"$TB" exec n1 "$FLOW" send --udp --dst 198.19.0.7 --port 9000 --sport $((40000 + k)) --count 100 >/dev/null
	a=$(($("$TB" exec leaf1 cat /sys/class/net/s1/statistics/tx_packets) - a))
	b=$(($("$TB" exec leaf1 cat /sys/class/net/s2/statistics/tx_packets) - b))
	printf '  source port %d: spine1 %3d packets, spine2 %3d packets\n' $((40000 + k)) "$a" "$b"
done
kill "$sink" 2>/dev/null

step "cutting rail 1 of n3"
"$TB" link down n3 1
for src in "n1 198.19.0.3 198.19.0.7" "n1 198.19.1.3 198.19.1.7"; do
	set -- $src
	if "$TB" exec "$1" ping -c1 -W1 -I "$2" "$3" >/dev/null 2>&1; then r=reachable; else r=UNREACHABLE; fi
	printf '  %s %s -> %s: %s\n' "$1" "$2" "$3" "$r"
done
"$TB" link up n3 1
"$TB" events
