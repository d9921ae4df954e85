#!/usr/bin/env bash
# The emulated cluster with its real services: Slurm runs jobs on the
# emulated hosts, each host has the clock offset `truth` reports, PostgreSQL
# and munge work across hosts, an unclean exit is recovered, and `down`
# leaves nothing behind.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/lib/testlib.sh"
tb_require
tb_setup tc
plan 16

t0=$(date +%s%N)
check "up: 4 hosts x 2 rails with munge, Slurm and PostgreSQL" tb up --prefix "$TB_PFX" --clock-offsets random --max-offset 100ms
up_ms=$((($(date +%s%N) - t0) / 1000000))
diag "up took $up_ms ms"
[ "$up_ms" -lt 60000 ]; ok $? "up takes under 60 s ($up_ms ms)"

# srun -N4 -n8: every task runs on its own emulated host and sees its name.
out=$(timeout 60 "$TB" slurm srun -N4 -n8 --ntasks-per-node=2 sh -c 'echo "$SLURM_PROCID $SLURMD_NODENAME $(hostname)"' 2>&1)
ok $? "srun -N4 -n8 runs" || diag "$out"
is "$(wc -l <<<"$out")" 8 "8 tasks reported"
is "$(awk '$2 != $3' <<<"$out" | wc -l)" 0 "each task's hostname is its Slurm node"
is "$(awk '{print $3}' <<<"$out" | sort | uniq -c | awk '{print $2":"$1}' | tr '\n' ' ')" "n1:2 n2:2 n3:2 n4:2 " "two tasks on each of n1..n4"

# Each host's CLOCK_MONOTONIC_RAW is the machine's plus the offset truth reports.
tb_offsets_match 1000000
ok $? "every host's MONOTONIC_RAW offset matches truth within 1 ms"
# and a process started with `exec` lives in that clock
off=$(tb truth | awk '$1 == "n3" { print $2 }')
read -r diff _ <<<"$(tb exec n3 "$FQTB_HELPERS/tb-hostns" clockdiff "$(cat "$FQTB_STATE/nodes/ctl.pid")")"
err=$((diff + off)) # ctl (offset 0) minus n3 = -offset
[ "${err#-}" -le 1000000 ]; ok $? "exec n3 runs in n3's time namespace (offset $off ns)"

check "PostgreSQL answers from a host namespace" tb exec n4 psql -tAc 'select 42'
cred=$(tb exec n1 sh -c 'munge -S "$FQTB_MUNGE_SOCKET" -s hello-from-n1')
out=$(printf '%s' "$cred" | tb exec n2 sh -c 'unmunge -S "$FQTB_MUNGE_SOCKET"' 2>&1)
grep -q 'STATUS:.*Success' <<<"$out" && grep -q hello-from-n1 <<<"$out"
ok $? "a munge credential minted in n1 decodes in n2"

# Unclean exit: kill every process of the testbed by recorded pid, keep
# the state and namespaces; the next `up` must recover.
for f in "$FQTB_STATE"/nodes/*.pid; do kill -KILL "$(cat "$f")"; done
kill -KILL "$(cat "$FQTB_STATE/slurm/slurmctld.pid")" "$(cat "$FQTB_STATE/munge/munged.pid")" 2>/dev/null
check "up after an unclean exit recovers" tb up --prefix "$TB_PFX" --clock-offsets zero
out=$(timeout 60 "$TB" slurm srun -N4 hostname 2>&1 | sort | tr '\n' ' ')
is "$out" "n1 n2 n3 n4 " "srun -N4 hostname works after recovery"

# down: nothing left.
pids=$(cat "$FQTB_STATE"/nodes/*.pid "$FQTB_STATE"/slurm/*.pid "$FQTB_STATE"/munge/munged.pid 2>/dev/null;
	head -1 "$FQTB_STATE/pg/data/postmaster.pid" 2>/dev/null)
check "down" tb down
is "$(ip netns list | grep -c "^$TB_PFX-")" 0 "no namespace left"
left=0
for p in $pids; do
	st=$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)
	[ -z "$st" ] || [ "$st" = Z ] || { left=1; diag "process $p still running"; }
done
ok $left "no process left ($(wc -w <<<"$pids") recorded)"
! grep -q "/run/netns/$TB_PFX-" /proc/mounts && [ ! -e "$FQTB_STATE" ]
ok $? "no mount and no state file left"
